"""A single-node Redis lock, written the way an application writes one with redis-py.

    lock = RedisLock(redis.Redis(host="127.0.0.1", port=6379, socket_timeout=0.5), "orders:42")
    if lock.acquire(ttl_ms=1000):
        try:
            ...  # use the resource, and stop before lock.remaining_ms() runs out
        finally:
            lock.release()

- acquire: SET key token NX PX ttl, with a fresh random token per acquire (a value no other holder has).
- release: a Lua compare-and-delete: the key is deleted only while it still holds this holder's token, so a
  holder whose lock expired cannot delete the next holder's lock.
- extend: a Lua compare-and-PEXPIRE, likewise only while the key holds this holder's token.
- The lock knows its own validity: it reads CLOCK_MONOTONIC before it sends the SET (or the PEXPIRE), so the
  lock ends, at the latest, TTL after that moment on Redis' side; the holder must be done by then.

What it does not do (lockcheck shows each of these under a fault, see README.md):
- It is one Redis node: a node that restarts without persistence has forgotten the lock.
- A holder that stops (a GC pause, SIGSTOP, a slow disk) past its validity carries on believing it holds the
  lock while the next holder has it. Only a check at the resource (a fencing token) stops that.
- A request that timed out may have reached Redis: redis-py raises redis.exceptions.TimeoutError or
  ConnectionError and the caller cannot know whether it holds the lock. This module lets those errors through;
  it never retries a SET NX (a retry after a lost answer would find its own key and report "held").
"""
import os
import time

# KEYS[1] the lock's key, ARGV[1] the holder's token.
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""
# KEYS[1] the lock's key, ARGV[1] the holder's token, ARGV[2] the new TTL in ms.
_EXTEND = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""


class NotHeld(Exception):
    """release() or extend() found the key gone or holding another token: this holder had lost the lock."""


class RedisLock:
    """One lock on one key of one Redis node. Not thread-safe: one holder (one thread) per object."""

    def __init__(self, client, key, drift_ms=2):
        # client: a redis.Redis whose socket_timeout bounds every call. drift_ms: taken off the validity for the
        # clock rate difference between this machine and the Redis node (Redlock's 0.01 x TTL is the usual rule
        # across machines; on one machine a few ms do).
        self._client = client
        self._key = key
        self._drift_ms = drift_ms
        self._token = None
        self._valid_until_ns = 0  # CLOCK_MONOTONIC (time.monotonic_ns) when the lock ends at the latest
        self._release = client.register_script(_RELEASE)
        self._extend = client.register_script(_EXTEND)

    @property
    def key(self):
        return self._key

    def acquire(self, ttl_ms):
        """True: held until valid_until_ns(). False: another holder has it. Raises redis errors (see above)."""
        token = os.urandom(20).hex()
        sent_ns = time.monotonic_ns()
        if not self._client.set(self._key, token, nx=True, px=ttl_ms):
            return False
        self._token = token
        self._valid_until_ns = sent_ns + (ttl_ms - self._drift_ms) * 1_000_000
        return True

    def extend(self, ttl_ms):
        """Sets the TTL to ttl_ms again, if this holder still holds the lock. Raises NotHeld otherwise."""
        if self._token is None:
            raise NotHeld("not acquired")
        sent_ns = time.monotonic_ns()
        if self._extend(keys=[self._key], args=[self._token, ttl_ms]) != 1:
            self._token = None
            raise NotHeld("the key is gone or holds another token")
        self._valid_until_ns = sent_ns + (ttl_ms - self._drift_ms) * 1_000_000
        return True

    def release(self):
        """Deletes the key if it still holds this holder's token. Raises NotHeld otherwise."""
        token, self._token = self._token, None
        if token is None:
            raise NotHeld("not acquired")
        if self._release(keys=[self._key], args=[token]) != 1:
            raise NotHeld("the key is gone or holds another token")

    def valid_until_ns(self):
        """CLOCK_MONOTONIC (ns, time.monotonic_ns) at which this holder must stop using the lock."""
        return self._valid_until_ns

    def remaining_ms(self, now_ns=None):
        """How long the holder may still use the lock; 0 or less: not any more."""
        now_ns = time.monotonic_ns() if now_ns is None else now_ns
        return (self._valid_until_ns - now_ns) // 1_000_000
