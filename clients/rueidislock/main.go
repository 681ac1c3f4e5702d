// lockcheck adapter for rueidislock (package of github.com/redis/rueidis): TryWithContext / the returned cancel /
// the context's liveness, answered in lockcheck's JSON-lines protocol (locks/README-external.md, protocol 2).
// Uses the first node of the request: rueidislock writes KeyMajority*2-1 keys `rueidislock:N:NAME` (N = 0, 1, ...)
// through one rueidis client, so with a standalone Redis all of them live on that node.
//
// Outcomes, from rueidislock/lock.go (v1.0.80):
//   - acquire: TryWithContext takes the keys one by one (Lua: SET NX PXAT now+KeyValidity, each under a context of
//     TryNextAfter) and succeeds once KeyMajority of them are set. When it fails it first waits (`<-done`) until
//     every key it tried was deleted again by a compare-and-delete bounded by the key's own deadline, so a failed
//     acquire is definite: ErrNotLocked ("held by others", "failed to acquire the majority") is reason held, any
//     other error (a timeout, a dead connection) reason timeout or unreachable, all without "indeterminate".
//     Building the rueidis client dials at once: a refused dial is a definite fail (unreachable), retried at the
//     next request.
//   - extend: the library extends in the background (every ExtendInterval) and has no extend call; an extend is
//     ok while the lock's context is live, else not_held. It writes nothing itself.
//   - release: the cancel func (cancels the context, deletes the keys, waits until done; it returns no error). A
//     context that had already ended is reported not_held: the library had said the lock was gone.
//   - the context is cancelled as soon as the majority is lost (an extend that failed, an invalidation of a key,
//     a dropped connection): the adapter passes that on as a `lost` event (protocol 2).
//
// rueidislock computes no validity for its caller (the context has no deadline), so none is reported. A call can
// block until the key validity (the compare-and-delete after a failed acquire, the release's deletes against a
// paused node), which the `hello` event announces.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"lockcheck/clients/internal/proto"
)

var (
	keyMajority      = flag.Int("key-majority", 0, "LockerOption.KeyMajority: keys of KeyMajority*2-1 to hold (0: library default 2)")
	keyValidityMs    = flag.Int("key-validity-ms", 0, "LockerOption.KeyValidity (0: the first request's ttl_ms; library default 5 s)")
	extendIntervalMs = flag.Int("extend-interval-ms", 0, "LockerOption.ExtendInterval (0: library default KeyValidity/2)")
	tryNextAfterMs   = flag.Int("try-next-after-ms", 0, "LockerOption.TryNextAfter: per-key acquire timeout (0: library default 20 ms)")
	noLoopTracking   = flag.Bool("no-loop-tracking", false, "LockerOption.NoLoopTracking (Redis >= 7.0.5)")
	fallbackSetPX    = flag.Bool("fallback-setpx", false, "LockerOption.FallbackSETPX: SET NX PX instead of PXAT")
	disableCache     = flag.Bool("disable-cache", false, "ClientOption.DisableCache: no client-side caching (no invalidation notices)")
	dialTimeoutMs    = flag.Int("dial-timeout-ms", 0, "ClientOption.Dialer.Timeout (0: the request's op_timeout_ms)")
	connWriteMs      = flag.Int("conn-write-timeout-ms", 0, "ClientOption.ConnWriteTimeout (0: library default 10 s)")
)

// held is one lock this client holds: the library's context and its cancel func.
type held struct {
	ctx      context.Context
	cancel   context.CancelFunc
	mu       sync.Mutex
	released bool // set before our own cancel: the context's end is then no loss
}

type adapter struct {
	locker   rueidislock.Locker
	majority int32
	locks    map[string]*held
}

func (a *adapter) validity(req proto.Request) time.Duration {
	if *keyValidityMs > 0 {
		return time.Duration(*keyValidityMs) * time.Millisecond
	}
	return time.Duration(req.TTLms) * time.Millisecond
}

func (a *adapter) open(req proto.Request) error {
	opt := rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{
			InitAddress:      []string{req.Nodes[0]},
			DisableCache:     *disableCache,
			ConnWriteTimeout: time.Duration(*connWriteMs) * time.Millisecond,
			Dialer:           net.Dialer{Timeout: time.Duration(req.OpTimeoutMs) * time.Millisecond},
		},
		KeyValidity:    a.validity(req),
		ExtendInterval: time.Duration(*extendIntervalMs) * time.Millisecond,
		TryNextAfter:   time.Duration(*tryNextAfterMs) * time.Millisecond,
		KeyMajority:    int32(*keyMajority),
		NoLoopTracking: *noLoopTracking,
		FallbackSETPX:  *fallbackSetPX,
	}
	if *dialTimeoutMs > 0 {
		opt.ClientOption.Dialer.Timeout = time.Duration(*dialTimeoutMs) * time.Millisecond
	}
	l, err := rueidislock.NewLocker(opt)
	if err != nil {
		return err
	}
	a.locker = l
	return nil
}

// keys are the Redis keys rueidislock uses for name (keyname() in lock.go: prefix:N:name).
func (a *adapter) keys(name string) []string {
	m := a.majority
	if m <= 0 {
		m = 2
	}
	ks := make([]string, 0, 2*m-1)
	for i := int32(0); i < 2*m-1; i++ {
		ks = append(ks, "rueidislock:"+strconv.Itoa(int(i))+":"+name)
	}
	return ks
}

// failure maps a failed TryWithContext (definite: the library cleaned up before returning) to its reason.
func failure(err error) proto.Answer {
	switch {
	case errors.Is(err, rueidislock.ErrNotLocked):
		return proto.FailBecause(proto.ReasonHeld, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return proto.FailBecause(proto.ReasonTimeout, err.Error())
	default:
		var op *net.OpError
		if errors.As(err, &op) || errors.Is(err, rueidislock.ErrLockerClosed) {
			return proto.FailBecause(proto.ReasonUnreachable, err.Error())
		}
		return proto.FailBecause(proto.ReasonError, err.Error())
	}
}

func (a *adapter) handle(req proto.Request) proto.Answer {
	if len(req.Nodes) == 0 {
		return proto.FailBecause(proto.ReasonError, "no nodes in the request")
	}
	if a.locker == nil {
		if err := a.open(req); err != nil { // NewLocker dials at once: nothing was sent
			return proto.FailBecause(proto.ReasonUnreachable, "rueidis client: "+err.Error())
		}
		proto.Hello(a.maxCall(req))
	}
	switch req.Op {
	case "acquire":
		if h := a.locks[req.Key]; h != nil { // a previous holding that was never released: end it first
			a.end(req.Key, h)
		}
		ctx, cancel, err := a.locker.TryWithContext(context.Background(), req.Key)
		if err != nil {
			return failure(err)
		}
		h := &held{ctx: ctx, cancel: cancel}
		a.locks[req.Key] = h
		go watch(req.Key, h)
		ans := proto.OK()
		ans.Keys = a.keys(req.Key)
		return ans
	case "extend":
		h := a.locks[req.Key]
		if h == nil {
			return proto.FailBecause(proto.ReasonNotHeld, "not held by this client")
		}
		if err := h.ctx.Err(); err != nil {
			return proto.FailBecause(proto.ReasonNotHeld, "rueidislock context ended: "+err.Error())
		}
		ans := proto.OK() // the library extends in the background; its context is live
		ans.Keys = a.keys(req.Key)
		return ans
	case "release":
		h := a.locks[req.Key]
		if h == nil {
			return proto.FailBecause(proto.ReasonNotHeld, "not held by this client")
		}
		if lost := a.end(req.Key, h); lost != nil {
			return proto.FailBecause(proto.ReasonNotHeld, "lost before release: rueidislock context ended: "+lost.Error())
		}
		return proto.OK()
	}
	return proto.FailBecause(proto.ReasonError, "unknown op "+req.Op)
}

// end releases h through the library's cancel func; returns the context's error if it had ended before.
func (a *adapter) end(key string, h *held) error {
	delete(a.locks, key)
	h.mu.Lock()
	lost := h.ctx.Err()
	h.released = true
	h.mu.Unlock()
	h.cancel() // cancels, deletes the keys, waits until done
	return lost
}

// watch passes on the library's notice that the lock is gone: its context ended without our release.
func watch(key string, h *held) {
	<-h.ctx.Done()
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.released {
		proto.Lost(key, "rueidislock context ended: "+h.ctx.Err().Error()+" (majority of keys lost)")
	}
}

// maxCall bounds one call: TryNextAfter per key, then the compare-and-delete of a failed acquire (or a release's
// deletes), which waits at most until the key's deadline, plus the dial.
func (a *adapter) maxCall(req proto.Request) time.Duration {
	keys := len(a.keys(req.Key))
	next := 20 * time.Millisecond
	if *tryNextAfterMs > 0 {
		next = time.Duration(*tryNextAfterMs) * time.Millisecond
	}
	dial := time.Duration(req.OpTimeoutMs) * time.Millisecond
	if *dialTimeoutMs > 0 {
		dial = time.Duration(*dialTimeoutMs) * time.Millisecond
	}
	return a.validity(req) + time.Duration(keys)*next + dial
}

func main() {
	flag.Parse()
	if flag.NArg() > 0 || *keyMajority < 0 || *keyValidityMs < 0 || *extendIntervalMs < 0 || *tryNextAfterMs < 0 ||
		*dialTimeoutMs < 0 || *connWriteMs < 0 {
		fmt.Fprintln(os.Stderr, "rueidislock adapter: bad arguments (see -h)")
		os.Exit(2)
	}
	a := &adapter{majority: int32(*keyMajority), locks: map[string]*held{}}
	proto.Serve(a.handle)
}
