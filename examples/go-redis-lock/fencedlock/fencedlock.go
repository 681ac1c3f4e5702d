// Package fencedlock is a single-node Redis lock that hands out a fencing token with every grant, written the
// way an application writes one with go-redis v9.
//
//	locker := fencedlock.New(rdb) // rdb: a *redis.Client, see NewClient for the options that matter
//	l, err := locker.Acquire(ctx, "orders:42", time.Second)
//	if errors.Is(err, fencedlock.ErrNotObtained) { ... another holder has it ... }
//	defer l.Release(ctx)
//	// pass l.Token() to the resource with every write; stop before l.ValidUntil()
//
// Acquire runs one Lua script: SET key token NX PX ttl and, only if that set the key, INCR key:fence, so every
// grant gets a token greater than every earlier grant's (as long as the counter survives: see below). Release is
// a compare-and-delete and Extend a compare-and-PEXPIRE, each only while the key still holds this holder's random
// token.
//
// What the token is for: a lease lock cannot stop a holder that was paused (GC, SIGSTOP, swap) past its TTL
// from carrying on after the next holder acquired. A resource that remembers the highest token it has seen and
// refuses older ones can (Kleppmann, "How to do distributed locking", 2016).
//
// What it does not do: the lock and the counter live on one Redis node. A node that restarts without
// persistence forgets both: the lock is granted again while its holder still works, and the counter starts from
// 1 again, below the tokens the resource has seen (the resource then refuses every new holder until it is reset).
// With appendonly yes and appendfsync always both survive a restart.
package fencedlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// KEYS[1] the lock, KEYS[2] its token counter; ARGV[1] the holder's random value, ARGV[2] the TTL in ms.
// Returns the fencing token, or 0 when another holder has the lock.
var acquireScript = redis.NewScript(`
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('incr', KEYS[2])
end
return 0`)

// KEYS[1] the lock; ARGV[1] the holder's random value.
var releaseScript = redis.NewScript(`
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0`)

// KEYS[1] the lock; ARGV[1] the holder's random value, ARGV[2] the new TTL in ms.
var extendScript = redis.NewScript(`
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0`)

var (
	// ErrNotObtained: another holder has the lock (certain: the script ran and found the key set).
	ErrNotObtained = errors.New("fencedlock: held by another holder")
	// ErrNotHeld: Release or Extend found the key gone or holding another holder's value: the lock had expired.
	ErrNotHeld = errors.New("fencedlock: not held (expired or taken)")
)

// Any other error comes from go-redis: an error reply (the script did not run), a refused dial (nothing was
// sent), or a timeout or broken connection after the request was written, after which the caller cannot know
// whether the script ran (it may hold the lock, or have released it).

// NewClient makes the go-redis client the lock wants: one address, timeouts for every call, and no retries.
// go-redis retries a command after a read timeout by default (MaxRetries 3): a retried SET NX whose first try
// did take the lock finds the key set (by itself) and answers "held", and a retried release finds it gone and
// answers "not held". A lock's commands are not idempotent: let the caller see the timeout instead.
func NewClient(addr string, timeout time.Duration) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:         addr,
		DialTimeout:  timeout,
		ReadTimeout:  timeout,
		WriteTimeout: timeout,
		MaxRetries:   -1, // no retries (0 would mean the default, 3)
		// One dial attempt: a dead node fails the call at once with a dial error (nothing sent) instead of
		// go-redis dialling in the background until the caller's context ends.
		DialerRetries: 1,
	})
}

// Locker hands out locks on the keys of one Redis node.
type Locker struct {
	rdb   redis.Scripter
	drift time.Duration
}

// New returns a Locker over rdb. The validity of each grant is its TTL less the time the request took to be
// sent and less a 2 ms allowance for the clock rate difference between this machine and the node.
func New(rdb redis.Scripter) *Locker { return &Locker{rdb: rdb, drift: 2 * time.Millisecond} }

// Lock is one grant. Not safe for concurrent use.
type Lock struct {
	locker     *Locker
	key, value string
	token      int64
	validUntil time.Time
}

// Acquire takes the lock on key for ttl, or returns ErrNotObtained, or a go-redis error (see above).
func (lk *Locker) Acquire(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	value := hex.EncodeToString(b[:])
	sent := time.Now() // Go's time.Now carries a monotonic reading: ValidUntil is immune to wall-clock steps
	token, err := acquireScript.Run(ctx, lk.rdb, []string{key, key + ":fence"}, value, ttl.Milliseconds()).Int64()
	if err != nil {
		return nil, err
	}
	if token == 0 {
		return nil, ErrNotObtained
	}
	return &Lock{locker: lk, key: key, value: value, token: token, validUntil: sent.Add(ttl - lk.drift)}, nil
}

// Key is the Redis key of the lock.
func (l *Lock) Key() string { return l.key }

// Token is the fencing token of this grant: greater than every earlier grant's on this key (while the node keeps
// its counter). Send it with every write to the resource, which must refuse a token below the highest it saw.
func (l *Lock) Token() int64 { return l.token }

// ValidUntil is the moment the holder must be done with the resource (or have extended the lock) by.
func (l *Lock) ValidUntil() time.Time { return l.validUntil }

// Extend sets the lock's TTL to ttl again, if this holder still holds it; ErrNotHeld otherwise.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	sent := time.Now()
	n, err := extendScript.Run(ctx, l.locker.rdb, []string{l.key}, l.value, ttl.Milliseconds()).Int64()
	if err != nil {
		return err
	}
	if n != 1 {
		return ErrNotHeld
	}
	l.validUntil = sent.Add(ttl - l.locker.drift)
	return nil
}

// Release deletes the lock if this holder still holds it; ErrNotHeld otherwise.
func (l *Lock) Release(ctx context.Context) error {
	n, err := releaseScript.Run(ctx, l.locker.rdb, []string{l.key}, l.value).Int64()
	if err != nil {
		return err
	}
	if n != 1 {
		return ErrNotHeld
	}
	return nil
}
