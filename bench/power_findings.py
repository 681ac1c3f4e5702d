#!/usr/bin/env python3
"""Issue 30's figures from a test-all results folder of harness/matrix/findings-power.json: per entry, the
verdicts of the checkers the entry expects, the median time from the start of the run to the first anomaly of
those checkers, and over every power-loss fault of its runs how many node power losses dropped anything and the
bytes dropped per node among those (median, max).

  build/lockcheck test-all --matrix findings-power --parallel 2 --results R
  bench/power_findings.py R [--matrix harness/matrix/findings-power.json]
"""
import argparse
import json
import os
import statistics
import sys


def load_matrix(path):
    with open(path) as f:
        m = json.load(f)
    return [e["name"] for e in m["entries"]], {e["name"]: e for e in m["entries"]}


def entry_of(run_dir_name, names):
    # <timestamp>-<entry>-s<seed>
    base = run_dir_name.split("-", 1)[1] if "-" in run_dir_name else run_dir_name
    stem, _, seed = base.rpartition("-s")
    return (stem, seed) if stem in names and seed.isdigit() else (None, None)


def drops(history_path):
    out = []  # bytes dropped per node per power loss
    with open(history_path) as f:
        for line in f:
            if '"dropped"' not in line:
                continue
            op = json.loads(line)
            v = op.get("value") or {}
            d = (v.get("detail") or {}).get("dropped") or {}
            if op.get("type") != "ok":
                continue
            for node in d.values():
                out.append(int(node.get("bytes", 0)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--matrix", default=os.path.join(os.path.dirname(__file__), "..", "harness", "matrix",
                                                    "findings-power.json"))
    a = ap.parse_args()
    order, entries = load_matrix(a.matrix)
    rows = {n: {"runs": 0, "met": 0, "first": [], "drops": [], "verdicts": {}} for n in order}
    for d in sorted(os.listdir(a.results)):
        name, _ = entry_of(d, set(order))
        path = os.path.join(a.results, d)
        if not name or not os.path.exists(os.path.join(path, "results.json")):
            continue
        with open(os.path.join(path, "results.json")) as f:
            res = json.load(f)
        e = entries[name]
        expect = e["expect"] if isinstance(e["expect"], dict) else {"run": e["expect"]}
        row = rows[name]
        row["runs"] += 1
        by = {c["checker"]: c for c in res["checkers"]}
        ok = True
        first = None
        for checker, want in expect.items():
            got = res["valid"] if checker == "run" else by.get(checker, {}).get("valid", "missing")
            row["verdicts"].setdefault(checker, {}).setdefault(got, 0)
            row["verdicts"][checker][got] += 1
            ok = ok and got == want
            cs = res["checkers"] if checker == "run" else [by.get(checker, {})]
            for c in cs:
                for an in c.get("anomalies", []) or []:
                    if "from_ns" in an and (first is None or an["from_ns"] < first):
                        first = an["from_ns"]
        row["met"] += ok
        if first is not None and any(w == "invalid" for w in expect.values()):
            row["first"].append(first / 1e9)
        if os.path.exists(os.path.join(path, "history.jsonl")):
            row["drops"] += drops(os.path.join(path, "history.jsonl"))
    print("| entry | expect | met | verdicts | median first | node power losses dropping | bytes dropped per node that dropped (median, max) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for n in order:
        r = rows[n]
        if r["runs"] == 0:
            print(f"| `{n}` | {entries[n]['expect']} | not run | | | | |")
            continue
        verdicts = "; ".join(f"{c}: " + ", ".join(f"{k} {v}" for k, v in sorted(vs.items()))
                             for c, vs in r["verdicts"].items())
        first = f"{statistics.median(r['first']):.1f} s ({len(r['first'])})" if r["first"] else "-"
        dr = r["drops"]
        dropping = f"{sum(1 for b in dr if b > 0)} of {len(dr)}" if dr else "-"
        nz = [b for b in dr if b > 0]
        bytes_ = f"{statistics.median(nz):.0f}, {max(nz)}" if nz else "-"
        exp = json.dumps(entries[n]["expect"]).replace('"', "")
        print(f"| `{n}` | {exp} | {r['met']}/{r['runs']} | {verdicts} | {first} | {dropping} | {bytes_} |")


if __name__ == "__main__":
    sys.exit(main())
