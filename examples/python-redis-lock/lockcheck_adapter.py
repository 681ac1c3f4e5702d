#!/usr/bin/python3
"""lockcheck's external-client adapter for redis_lock.RedisLock (locks/README-external.md in lockcheck).

lockcheck starts one of these per client process and writes one JSON request per line on stdin:
    {"op":"acquire","key":"lock-0","ttl_ms":1000,"nodes":["127.0.0.1:40211"],"op_timeout_ms":500,...}
and reads one JSON answer per line on stdout. The lock is the application's own module, redis_lock.py, called
as the application calls it; this file only turns its outcomes into answers:

    acquire True                  {"ok":true,"validity_ms":V,"mono_ns":M,"keys":[key]}
    acquire False                 {"ok":false,"reason":"held"}            another holder has it: certainly not ours
    NotHeld (release, extend)     {"ok":false,"reason":"not_held"}        the lock had expired or was taken
    an error reply from Redis     {"ok":false,"reason":"error"}           the command did not run
    "Error .. connecting to"      {"ok":false,"reason":"unreachable"}     nothing was sent
    any other ConnectionError or TimeoutError
                                  {"ok":false,"indeterminate":true,"reason":"timeout"}
                                  the command may have reached Redis: lockcheck records the op as info (unknown),
                                  never as a failure; reporting a plain failure here would hide double grants.

validity_ms is what the lock knows of its lease: RedisLock.remaining_ms(), counted from the moment this answer
is written, with mono_ns the CLOCK_MONOTONIC reading it was computed at (time.monotonic_ns(), the clock lockcheck
reads too), so that lockcheck can take off the time the answer spent in the pipe on a loaded machine.

Only stdout carries answers: debug output goes to stderr. Uses the first node of the request (a one-node lock).
"""
import json
import sys
import time

import redis
from redis.exceptions import ConnectionError, RedisError, TimeoutError

from redis_lock import NotHeld, RedisLock


def held_answer(lock, key):
    now = time.monotonic_ns()
    validity = lock.remaining_ms(now)
    if validity <= 0:  # the acquire (or extend) took the whole TTL: an expired lock is not a grant
        return {"ok": False, "reason": "error", "error": "no validity left (took %d ms too long)" % -validity}
    return {"ok": True, "validity_ms": validity, "mono_ns": now, "keys": [key]}


def answer(client, locks, req):
    op, key = req["op"], req["key"]
    try:
        if op == "acquire":
            lock = locks.get(key) or RedisLock(client, key)
            if not lock.acquire(req["ttl_ms"]):
                return {"ok": False, "reason": "held", "error": "held by another client"}
            locks[key] = lock
            return held_answer(lock, key)
        if key not in locks:
            return {"ok": False, "reason": "error", "error": "not held by this client"}
        if op == "extend":
            locks[key].extend(req["ttl_ms"])
            return held_answer(locks[key], key)
        if op == "release":
            locks.pop(key).release()
            return {"ok": True}
        return {"ok": False, "reason": "error", "error": "unknown op " + op}
    except NotHeld as e:
        locks.pop(key, None)
        return {"ok": False, "reason": "not_held", "error": "not held: %s" % e}
    except (ConnectionError, TimeoutError) as e:
        # redis-py says "Error 111 connecting to ..." / "Timeout connecting to server" before anything is sent.
        if "connecting to" in str(e):
            return {"ok": False, "reason": "unreachable", "error": "%s: %s" % (type(e).__name__, e)}
        return {"ok": False, "indeterminate": True, "reason": "timeout", "error": "%s: %s" % (type(e).__name__, e)}
    except RedisError as e:  # an error reply (e.g. LOADING, OOM): the command did not run
        return {"ok": False, "reason": "error", "error": "%s: %s" % (type(e).__name__, e)}


def main():
    client, locks = None, {}
    for line in sys.stdin:
        req = json.loads(line)
        if client is None:
            host, port = req["nodes"][0].rsplit(":", 1)
            timeout_s = req.get("op_timeout_ms", 500) / 1000.0
            client = redis.Redis(host=host, port=int(port), socket_timeout=timeout_s,
                                 socket_connect_timeout=timeout_s)
        print(json.dumps(answer(client, locks, req)), flush=True)


if __name__ == "__main__":
    main()
