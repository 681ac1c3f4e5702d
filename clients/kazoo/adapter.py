#!/usr/bin/python3
"""lockcheck adapter for kazoo's ZooKeeper lock (kazoo.recipe.lock.Lock, Debian python3-kazoo 2.8.0).

Speaks lockcheck's JSON-lines protocol 2 (locks/README-external.md); run with Debian's /usr/bin/python3.
One KazooClient (one ZooKeeper session) per adapter, connected on the first request to every node of the
request (the members' client ports as the harness gives them, through its fault proxy), with the session
timeout = the request's ttl_ms (the server clamps it to its [minSessionTimeout, maxSessionTimeout]; the adapter
uses the timeout the server negotiated). One Lock per key on the znode path /lockcheck/<key>.

What kazoo's Lock does (kazoo/recipe/lock.py, 2.8.0): acquire creates an EPHEMERAL_SEQUENTIAL node
"<path>/<uuid hex>__lock__<seq>" and holds the lock when no contender has a lower sequence; otherwise it watches
its predecessor (blocking) or deletes its node and returns False (blocking=False). Connection errors are retried
(KazooRetry, max_tries=None, up to the acquire's timeout); when the retries run out acquire() returns False as
if the lock were taken, after a best-effort delete of its node that swallows errors. The Lock never watches its
own session: `is_acquired` stays True after the session expired and the ephemeral node is gone, and release()
then deletes nothing (NoNodeError is swallowed) and returns True. A caller learns of trouble only from the
client's state listener: SUSPENDED (the connection dropped: kazoo's pings, sent when nothing was read for a
third of the negotiated timeout, went unanswered, or the socket failed; the session may still live) and LOST
(the session expired or was closed; kazoo says so only once it reconnects and the server refuses the session).

What the answers say:
  - validity_ms (acquire, extend): the negotiated session timeout minus the time since the send of the latest
    request of this op that the ensemble answered (the acquire's first request, or the exists() read after it).
    Every request touches the session on the server, as kazoo's ping does; kazoo does not expose when its own
    pings were answered, so the adapter counts only its own requests: a lower bound of what the session has left.
  - keys: the lock node's path; token (fencing): the lock node's czxid (a zxid: global and monotonic), read with
    exists() after the acquire.
  - a `lost` event for each held key on SUSPENDED (default: kazoo's docs, basic_usage "Understanding Kazoo
    States", tell a Lock user to pause what it is doing on SUSPENDED) or only on LOST (--lost-only).
  - release: the library's release(); when the session that created the node is no longer the client's (it
    expired: kazoo made a new one) the answer is not_held, though kazoo's release() returned True.
  - extend: kazoo's Lock has none (the session is kept alive by kazoo's pings in the background); the adapter
    reads the lock node (exists()) and answers ok with a fresh validity while the node is there and owned by the
    client's session, not_held otherwise.
Outcomes: False from acquire with no connection trouble during the call: held (definite). A ZooKeeper error, or
False after the connection dropped during the call (kazoo's retries ran out), or no answer within the op's bound:
indeterminate (the node may have been created and left behind). Each op runs in a worker thread bounded by the
request's op_timeout_ms (+ --wait-ms for a blocking acquire); a late one leaves the adapter stuck, and every later
request is answered indeterminate (the harness retires the process after an indeterminate answer anyway).
"""
import argparse
import concurrent.futures
import json
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, LockTimeout, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState

ROOT = "/lockcheck"
out_lock = threading.Lock()


def write(obj):
    with out_lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--wait-ms", type=int, default=0,
                   help="0: acquire(blocking=False); N: acquire(blocking=True, timeout=N ms)")
    p.add_argument("--lost-only", action="store_true",
                   help="write `lost` only on LOST (session expired), not already on SUSPENDED (connection lost)")
    p.add_argument("--session-timeout-ms", type=int, default=0,
                   help="KazooClient(timeout) (0: the request's ttl_ms)")
    p.add_argument("--connect-timeout-ms", type=int, default=0,
                   help="KazooClient.start(timeout) (0: op_timeout_ms x the number of nodes)")
    a = p.parse_args()
    if a.wait_ms < 0 or a.session_timeout_ms < 0 or a.connect_timeout_ms < 0:
        p.error("values must be >= 0")
    return a


def fail(reason, error, indeterminate=False):
    ans = {"ok": False, "reason": reason, "error": error}
    if indeterminate:
        ans["indeterminate"] = True
    return ans


class Holding:
    def __init__(self, lock, path, session_id):
        self.lock, self.path, self.session_id, self.notified = lock, path, session_id, False


class Adapter:
    def __init__(self, args):
        self.args = args
        self.client = None
        self.negotiated_ms = None  # the session timeout the server granted (kazoo keeps it in a local)
        self.held = {}             # key -> Holding
        self.mu = threading.Lock()
        self.drops = 0             # SUSPENDED/LOST transitions so far: did the connection drop during an op?
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self.stuck = False
        self.v2 = False            # the harness speaks protocol 2 (events allowed)

    # --- the session -------------------------------------------------------------------------------------
    def on_state(self, state):
        if state == KazooState.CONNECTED:
            return
        with self.mu:
            self.drops += 1
            if not self.v2 or (state == KazooState.SUSPENDED and self.args.lost_only):
                return
            for key, h in self.held.items():
                if not h.notified:
                    h.notified = True
                    detail = ("kazoo state SUSPENDED: the connection to the ensemble dropped (the session may live on)"
                              if state == KazooState.SUSPENDED else
                              "kazoo state LOST: the session expired (or was closed)")
                    write({"event": "lost", "key": key, "detail": detail})

    def connect(self, req):
        if self.client is not None:
            return None
        ttl = self.args.session_timeout_ms or int(req["ttl_ms"])
        client = KazooClient(hosts=",".join(req["nodes"]), timeout=ttl / 1000.0)
        conn = client._connection
        connect_once = conn._connect

        def connect_and_note(*a, **kw):
            read_timeout, connect_timeout = connect_once(*a, **kw)
            self.negotiated_ms = read_timeout * 3.0 / 2.0  # kazoo: read_timeout = negotiated x 2/3
            return read_timeout, connect_timeout
        conn._connect = connect_and_note
        client.add_listener(self.on_state)
        bound = self.args.connect_timeout_ms or int(req["op_timeout_ms"]) * len(req["nodes"])
        try:
            client.start(timeout=bound / 1000.0)
        except KazooTimeoutError as e:
            client.stop()
            client.close()
            return fail("unreachable", "kazoo start: %s" % e)
        self.client = client
        return None

    def session_id(self):
        cid = self.client.client_id
        return cid[0] if cid else None

    def validity(self, sent):
        return int(self.negotiated_ms - (time.monotonic() - sent) * 1000)

    # --- the ops (run in the worker thread) --------------------------------------------------------------
    def acquire(self, req):
        key = req["key"]
        if key in self.held:
            return fail("held", "already held by this client")
        lock = self.client.Lock(ROOT + "/" + key, identifier="lockcheck")
        drops, sent = self.drops, time.monotonic()
        wait = self.args.wait_ms
        try:
            if wait > 0:
                got = lock.acquire(blocking=True, timeout=wait / 1000.0)
            else:
                got = lock.acquire(blocking=False, timeout=int(req["op_timeout_ms"]) / 1000.0)
        except LockTimeout as e:  # the wait ran out; kazoo deleted its node (best effort)
            if self.drops != drops:
                return fail("timeout", "LockTimeout after the connection dropped: %s" % e, indeterminate=True)
            return fail("held", "LockTimeout: %s" % e)
        except KazooException as e:
            return fail("timeout", "%s: %s" % (type(e).__name__, e), indeterminate=True)
        if not got:
            if self.drops != drops or self.client.state != KazooState.CONNECTED:
                # kazoo's retries ran out on a dropped connection: its node may have been created and left.
                return fail("timeout", "acquire returned False after the connection dropped", indeterminate=True)
            return fail("held", "kazoo Lock.acquire returned False")
        path = lock.path + "/" + lock.node
        sid = self.session_id()
        ans = {"ok": True, "keys": [path]}
        if req.get("fencing") or wait > 0:
            # The czxid, and after a wait (while kazoo's pings kept the session) a fresh answered request.
            sent = time.monotonic()
            try:
                stat = self.client.exists(path)
            except KazooException as e:
                with self.mu:
                    self.held[key] = Holding(lock, path, sid)  # it was held, at least for a moment
                return fail("timeout", "exists(%s) after the acquire: %s: %s" % (path, type(e).__name__, e),
                            indeterminate=True)
            if stat is None or stat.ephemeralOwner != sid:
                return fail("not_held", "the lock node %s vanished before its czxid was read" % path)
            if req.get("fencing"):
                ans["token"] = stat.czxid
        v = self.validity(sent)
        if v <= 0:
            self.release_quietly(lock)
            return fail("not_held", "the session timeout had passed when the acquire ended")
        ans["validity_ms"] = v
        ans["mono_ns"] = time.monotonic_ns()  # CLOCK_MONOTONIC: lockcheck takes the answer's lag off the validity
        with self.mu:
            self.held[key] = Holding(lock, path, sid)
        return ans

    def release_quietly(self, lock):
        try:
            lock.release()
        except KazooException:
            pass

    def release(self, req):
        with self.mu:
            h = self.held.pop(req["key"], None)
        if h is None:
            return fail("not_held", "not held by this client")
        try:
            h.lock.release()
        except KazooException as e:
            return fail("timeout", "%s: %s" % (type(e).__name__, e), indeterminate=True)
        if self.session_id() != h.session_id:
            return fail("not_held", "the session that held %s expired (kazoo's release returned True, deleting "
                                    "nothing)" % h.path)
        return {"ok": True, "keys": [h.path]}

    def extend(self, req):
        h = self.held.get(req["key"])
        if h is None:
            return fail("not_held", "not held by this client")
        sent = time.monotonic()
        try:
            stat = self.client.exists(h.path)
        except NoNodeError:
            stat = None
        except KazooException as e:
            return fail("timeout", "%s: %s" % (type(e).__name__, e), indeterminate=True)
        if stat is None or stat.ephemeralOwner != h.session_id or self.session_id() != h.session_id:
            return fail("not_held", "the lock node %s is gone (its session expired)" % h.path)
        return {"ok": True, "validity_ms": self.validity(sent), "mono_ns": time.monotonic_ns(), "keys": [h.path]}

    # --- the request loop --------------------------------------------------------------------------------
    def handle(self, req):
        if self.stuck:
            return fail("timeout", "an earlier op of this adapter never ended", indeterminate=True)
        if not req.get("nodes") or int(req.get("op_timeout_ms", 0)) <= 0:
            return fail("error", "the request needs nodes and op_timeout_ms > 0")
        refused = self.connect(req)
        if refused:
            return refused
        op = req.get("op")
        fn = {"acquire": self.acquire, "release": self.release, "extend": self.extend}.get(op)
        if fn is None:
            return fail("error", "unknown op %s" % op)
        bound = int(req["op_timeout_ms"]) + (self.args.wait_ms if op == "acquire" else 0)
        future = self.pool.submit(fn, req)
        try:
            return future.result(timeout=bound / 1000.0 + 0.2)
        except concurrent.futures.TimeoutError:
            self.stuck = True
            return fail("timeout", "no answer from the ensemble within %d ms" % bound, indeterminate=True)


def main():
    args = parse_args()
    adapter = Adapter(args)
    for line in sys.stdin:
        try:
            req = json.loads(line)
        except ValueError as e:
            write(fail("error", "bad request: %s" % e))
            continue
        if req.get("protocol") == 2 and not adapter.v2:
            adapter.v2 = True  # events only to a harness that speaks protocol 2
            if args.wait_ms > 0:  # a blocking acquire may take the wait and an op's bound
                write({"event": "hello", "max_call_ms": args.wait_ms + int(req.get("op_timeout_ms", 500)) + 1000})
        ans = adapter.handle(req)
        if req.get("protocol") != 2:
            ans.pop("keys", None)
            ans.pop("reason", None)
        write(ans)


if __name__ == "__main__":
    main()
