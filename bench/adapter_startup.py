#!/usr/bin/python3
"""Start-up time of each shipped lock-library adapter (Go, Python and PHP) (build/clients/, scripts/build-clients): the time from
spawning the adapter to its first answer (process start + connect + one acquire against a local redis-server),
and a later acquire for comparison; 10 spawns each, median/min/max in ms.

    bench/adapter_startup.py [build/clients]
"""
import json, os, socket, statistics, subprocess, sys, time

clients = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "build", "clients")
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
redis = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.1).close(); break
        except OSError:
            time.sleep(0.05)
    cmds = {"redsync": [os.path.join(clients, "redsync")], "redislock": [os.path.join(clients, "redislock")],
            "redis-py": ["/usr/bin/python3", os.path.join(clients, "redis-py.py")],
            "rueidislock": [os.path.join(clients, "rueidislock")],
            "symfony-lock": ["/usr/bin/php", os.path.join(clients, "php", "symfony-lock.php")],
            "symfony-combined": ["/usr/bin/php", os.path.join(clients, "php", "symfony-combined.php")],
            "laravel": ["/usr/bin/php", os.path.join(clients, "php", "laravel.php")]}
    node = ["127.0.0.1:%d" % port]
    # Protocol 2, as lockcheck sends it: event lines (hello, lost) may come before an answer and are skipped.
    acq = json.dumps({"op": "acquire", "key": "k", "ttl_ms": 1000, "nodes": node, "op_timeout_ms": 500,
                      "protocol": 2}) + "\n"
    rel = json.dumps({"op": "release", "key": "k", "nodes": node, "op_timeout_ms": 500, "protocol": 2}) + "\n"
    for name, cmd in cmds.items():
        if not os.path.exists(cmd[-1]):
            print("%-17s not built" % name); continue
        first, later = [], []
        for _ in range(10):
            p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            def ask(line):
                p.stdin.write(line); p.stdin.flush()
                for _ in range(10):
                    ans = json.loads(p.stdout.readline())
                    if "event" not in ans:
                        return ans
                raise RuntimeError("no answer, only events")
            t0 = time.monotonic(); assert ask(acq)["ok"]; first.append((time.monotonic() - t0) * 1000)
            ask(rel)
            t0 = time.monotonic(); assert ask(acq)["ok"]; later.append((time.monotonic() - t0) * 1000)
            ask(rel); p.stdin.close(); p.wait()
        print("%-17s first answer median %.1f ms (min %.1f, max %.1f); a later acquire median %.2f ms"
              % (name, statistics.median(first), min(first), max(first), statistics.median(later)))
finally:
    redis.kill(); redis.wait()
