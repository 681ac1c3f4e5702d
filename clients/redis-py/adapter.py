#!/usr/bin/python3
"""lockcheck adapter for redis.lock.Lock of redis-py (Debian's python3-redis; run with /usr/bin/python3).

One Lock per key on the first node of the request: acquire (blocking=False unless --blocking-timeout-s),
release, extend(ttl, replace_ttl=True), answered in lockcheck's JSON-lines protocol (locks/README-external.md).

Outcomes, from redis/lock.py and redis/connection.py: acquire is one SET NX PX (False: held, a definite fail);
release and extend are Lua scripts that raise LockNotOwnedError (definite fail). redis-py raises ConnectionError
"Error N connecting to ..." and TimeoutError "Timeout connecting to server" before anything is sent (definite
fail); every other ConnectionError or TimeoutError (reading, writing, closed by server) may follow a command that
reached Redis: indeterminate. redis-py computes no validity, so none is reported.

Protocol 2 (to a harness whose requests say "protocol": 2): an ok acquire or extend reports keys [name] (the Lock
writes its name as the Redis key); failures carry their reason: held (acquire returned False), not_held
(LockNotOwnedError), unreachable (not sent: "connecting to"), timeout (indeterminate), error (the rest). redis-py
has no loss callback, so no "lost" events.
"""
import argparse
import json
import sys

import redis
from redis.exceptions import BusyLoadingError, ConnectionError, LockError, LockNotOwnedError, ResponseError, TimeoutError


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blocking-timeout-s", type=float, default=None,
                   help="Lock(blocking=True, blocking_timeout=...): retry for this long (default: one try)")
    p.add_argument("--sleep-s", type=float, default=0.1, help="Lock(sleep=...) between blocking tries")
    p.add_argument("--socket-timeout-ms", type=int, default=0,
                   help="Redis(socket_timeout, socket_connect_timeout) (0: the request's op_timeout_ms)")
    p.add_argument("--retry-on-timeout", action="store_true", help="Redis(retry_on_timeout=True)")
    return p.parse_args()


def not_sent(e):
    return "connecting to" in str(e)


def main():
    args = parse_args()
    client, locks = None, {}
    for line in sys.stdin:
        try:
            req = json.loads(line)
        except ValueError as e:
            print(json.dumps({"ok": False, "error": "bad request: %s" % e}), flush=True)
            continue
        if client is None:
            host, port = req["nodes"][0].rsplit(":", 1)
            t = (args.socket_timeout_ms or req.get("op_timeout_ms", 500)) / 1000.0
            client = redis.Redis(host=host, port=int(port), socket_timeout=t, socket_connect_timeout=t,
                                 retry_on_timeout=args.retry_on_timeout)
        op, key = req["op"], req["key"]
        v2 = req.get("protocol") == 2
        try:
            if op == "acquire":
                lock = client.lock(key, timeout=req["ttl_ms"] / 1000.0, sleep=args.sleep_s,
                                   blocking=args.blocking_timeout_s is not None,
                                   blocking_timeout=args.blocking_timeout_s)
                if lock.acquire():
                    locks[key] = lock
                    ans = {"ok": True, "keys": [key]}
                else:
                    ans = {"ok": False, "error": "held", "reason": "held"}
            elif key not in locks:
                ans = {"ok": False, "error": "not held by this client", "reason": "error"}
            elif op == "release":
                locks.pop(key).release()
                ans = {"ok": True}
            elif op == "extend":
                locks[key].extend(req["ttl_ms"] / 1000.0, replace_ttl=True)
                ans = {"ok": True, "keys": [key]}
            else:
                ans = {"ok": False, "error": "unknown op " + op, "reason": "error"}
        except (LockNotOwnedError, LockError, ResponseError, BusyLoadingError) as e:  # an answer, or never ran
            ans = {"ok": False, "error": "%s: %s" % (type(e).__name__, e),
                   "reason": "not_held" if isinstance(e, LockNotOwnedError) else "error"}
        except (ConnectionError, TimeoutError) as e:
            ans = {"ok": False, "error": "%s: %s" % (type(e).__name__, e), "reason": "unreachable"}
            if not not_sent(e):
                ans["indeterminate"], ans["reason"] = True, "timeout"
        if not v2:  # a protocol-1 harness gets the protocol-1 answer
            ans.pop("keys", None)
            ans.pop("reason", None)
        print(json.dumps(ans), flush=True)


if __name__ == "__main__":
    main()
