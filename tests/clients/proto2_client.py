#!/usr/bin/env python3
"""A protocol-2 external lock client for the tests (locks/README-external.md, "Protocol 2").

The single-node lock of example_client.py, but its Redis key is named as a library would name it
(PREFIX + key, default "myprefix:{lock-0}"), and it speaks protocol 2 once a request carries "protocol":2:
  --prefix P        the Redis key is P + "{" + key + "}" (default "myprefix:")
  --no-keys         do not report "keys" (holder targeting must then say it found nothing)
  --hello MS        write {"event":"hello","max_call_ms":MS} on the first protocol-2 request
  --slow-ms MS      sleep MS before each answer (a library blocking in its own retries)
  --lost-after-ms N N ms after each ok acquire, unless released or extended by then, write a "lost" event
                    for the key (from a timer thread, usually while no request is outstanding)
  --lost-now        write a "lost" event before each answer to an extend (during a request)
  --record FILE     append every request line to FILE (the tests read what lockcheck sent)
  --bad-event       write a malformed "lost" event (no key) on the first request
  --bad-reason      give every failure the reason "busy" (not one of the protocol's)
  --old             ignore "protocol": answer as a protocol-1 client would
  --mono            stamp each answer that has a validity with "mono_ns" (CLOCK_MONOTONIC when it was measured)
  --late-ms MS      sleep MS after measuring an acquire's validity, before answering (an answer delayed in transit)
  --bad-mono        stamp "mono_ns" from the wall clock instead (not CLOCK_MONOTONIC: malformed)
Reasons: held, not_held, unreachable (connect refused), timeout (after sending).
"""
import json, os, socket, sys, threading, time

args = sys.argv[1:]


def opt(name, default=None):
    return args[args.index(name) + 1] if name in args else default


PREFIX, NO_KEYS, OLD = opt("--prefix", "myprefix:"), "--no-keys" in args, "--old" in args
HELLO, SLOW = opt("--hello"), int(opt("--slow-ms", "0"))
LOST_AFTER, LOST_NOW, RECORD = opt("--lost-after-ms"), "--lost-now" in args, opt("--record")
BAD_EVENT, BAD_REASON = "--bad-event" in args, "--bad-reason" in args
MONO, LATE, BAD_MONO = "--mono" in args, int(opt("--late-ms", "0")), "--bad-mono" in args

CAD = "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end"
CAP = "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('pexpire',KEYS[1],ARGV[2]) else return 0 end"
out_lock = threading.Lock()


def write(obj):
    with out_lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def call(conn, *a):
    sock, rf = conn
    parts = [str(x).encode() for x in a]
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
    return rest.decode()


conn, tokens, timers, greeted = None, {}, {}, False
for line in sys.stdin:
    if RECORD:
        with open(RECORD, "a") as f:
            f.write(line)
    req = json.loads(line)
    v2 = req.get("protocol") == 2 and not OLD
    key, start = req["key"], time.monotonic()
    rkey = PREFIX + "{" + key + "}"
    if v2 and not greeted:
        greeted = True
        if HELLO is not None:
            write({"event": "hello", "max_call_ms": int(HELLO)})
        if BAD_EVENT:
            write({"event": "lost", "detail": "no key"})
    if SLOW:
        time.sleep(SLOW / 1000)
    t = timers.pop(key, None)
    if t:
        t.cancel()
    ans = None
    if conn is None:
        try:
            host, port = req["nodes"][0].rsplit(":", 1)
            sock = socket.create_connection((host, int(port)), timeout=req["op_timeout_ms"] / 1000)
            conn = (sock, sock.makefile("rb"))
        except OSError as e:
            ans = {"ok": False, "error": "connect: %s" % e, "reason": "unreachable"}
    if ans is None:
        try:
            if req["op"] == "acquire":
                token = os.urandom(20).hex()
                if call(conn, "SET", rkey, token, "NX", "PX", req["ttl_ms"]) != "OK":
                    ans = {"ok": False, "error": "lock taken", "reason": "held"}
                else:
                    tokens[key] = token
                    ans = {"ok": True, "validity_ms": req["ttl_ms"] - int((time.monotonic() - start) * 1000)}
                    if MONO:
                        ans["mono_ns"] = time.monotonic_ns()
                    if BAD_MONO:
                        ans["mono_ns"] = time.time_ns()
                    if LATE:
                        time.sleep(LATE / 1000)
                    if not NO_KEYS:
                        ans["keys"] = [rkey]
            elif req["op"] == "release":
                n = call(conn, "EVAL", CAD, 1, rkey, tokens.pop(key, ""))
                ans = {"ok": True} if n == 1 else {"ok": False, "error": "lock not held", "reason": "not_held"}
            else:
                if LOST_NOW and v2:
                    write({"event": "lost", "key": key, "detail": "watchdog: extend found the lock gone"})
                n = call(conn, "EVAL", CAP, 1, rkey, tokens.get(key, ""), req["ttl_ms"])
                ans = {"ok": True} if n == 1 else {"ok": False, "error": "lock not held", "reason": "not_held"}
                if n == 1 and not NO_KEYS:
                    ans["keys"] = [rkey]
        except RuntimeError as e:
            ans = {"ok": False, "error": str(e), "reason": "error"}
        except OSError as e:
            conn, ans = None, {"ok": False, "indeterminate": True, "error": str(e) or "timeout", "reason": "timeout"}
    if BAD_REASON and not ans.get("ok"):
        ans["reason"] = "busy"
    if not v2:
        ans.pop("reason", None)
        ans.pop("keys", None)
    if v2 and LOST_AFTER is not None and ans.get("ok") and req["op"] in ("acquire", "extend"):
        t = threading.Timer(int(LOST_AFTER) / 1000, write,
                            [{"event": "lost", "key": key, "detail": "context canceled: lock expired"}])
        t.daemon = True
        t.start()
        timers[key] = t
    write(ans)
