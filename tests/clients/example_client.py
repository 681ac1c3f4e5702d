#!/usr/bin/env python3
"""A complete lockcheck external lock client (docs/your-own-lock.md shows it as it is): the V3.1 single-node lock
(SET NX PX with a random token, compare-and-delete release) on the first node, speaking lockcheck's JSON lines on
stdin/stdout and RESP to Redis over a raw socket; each validity is stamped with mono_ns. Standard library only."""
import json, os, socket, sys, time

CAD = "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end"
CAP = "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('pexpire',KEYS[1],ARGV[2]) else return 0 end"

def call(conn, *args):
    """Sends one command; returns its reply (str, int or None); raises RuntimeError on an error reply."""
    sock, rf = conn
    parts = [str(a).encode() for a in args]
    sock.sendall(b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts))
    line = rf.readline()
    if not line.endswith(b"\r\n"):
        raise ConnectionError("connection closed")
    kind, rest = line[:1], line[1:-2]
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        return None if int(rest) < 0 else rf.read(int(rest) + 2)[:-2].decode()
    return rest.decode()  # +status

def done(n):
    return {"ok": True} if n == 1 else {"ok": False, "error": "not held (expired or taken)"}

conn, tokens = None, {}
for line in sys.stdin:
    req = json.loads(line)
    key, start = req["key"], time.monotonic_ns()
    if conn is None:  # connect errors are definite: the command was never sent
        try:
            host, port = req["nodes"][0].rsplit(":", 1)
            sock = socket.create_connection((host, int(port)), timeout=req["op_timeout_ms"] / 1000)
            conn = (sock, sock.makefile("rb"))
        except OSError as e:
            print(json.dumps({"ok": False, "error": "connect: %s" % e}), flush=True)
            continue
    try:
        if req["op"] == "acquire":
            token = os.urandom(20).hex()
            if call(conn, "SET", key, token, "NX", "PX", req["ttl_ms"]) != "OK":
                ans = {"ok": False, "error": "held"}
            else:
                tokens[key] = token
                ans = {"ok": True}
                if req.get("fencing"):
                    ans["token"] = call(conn, "INCR", key + ":fence")
                now = time.monotonic_ns()  # when the validity is measured: lockcheck takes the pipe's lag off
                ans["validity_ms"] = req["ttl_ms"] - (now - start) // 1000000
                ans["mono_ns"] = now
        elif req["op"] == "release":
            ans = done(call(conn, "EVAL", CAD, 1, key, tokens.pop(key, "")))
        else:  # extend
            ans = done(call(conn, "EVAL", CAP, 1, key, tokens.get(key, ""), req["ttl_ms"]))
    except RuntimeError as e:  # an error reply: the command did not run
        ans = {"ok": False, "error": str(e)}
    except OSError as e:  # timeout or broken connection after sending: the outcome is unknown
        conn, ans = None, {"ok": False, "indeterminate": True, "error": str(e) or "timeout"}
    print(json.dumps(ans), flush=True)
