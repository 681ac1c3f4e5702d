// lockcheck adapter for github.com/go-redsync/redsync/v4 (Redlock over go-redis v9 pools): one redsync.Mutex per
// key, Lock (TryLock with --tries 1) / Unlock / Extend, answered in lockcheck's JSON-lines protocol.
//
// Outcomes, from redsync's mutex.go: acquire ok when a quorum said SET NX yes within the validity; validity_ms
// is what redsync's Until() leaves at the end of the acquire (expiry - elapsed - drift x expiry). A quorum of
// "taken" (ErrTaken, ErrNodeTaken) or ErrFailed (tries exhausted with no error) is a definite fail: redsync has
// released what it got. A node error that may have reached Redis (a timeout, the per-try context of
// timeout-factor x expiry ending while in flight) makes the op indeterminate, since the SET (or the release
// redsync sends after a failed try) may have landed unanswered.
//
// Protocol 2: an ok acquire or extend reports keys [KEY] (redsync writes the mutex's name as the key on every
// node); a failure carries its reason: held (acquire: taken on a quorum, or tries exhausted), not_held (release,
// extend: taken, expired, not on a quorum), timeout (indeterminate), unreachable (every node error a refused or
// failed dial), error (anything else, e.g. an error reply). redsync has no loss callback: no "lost" events.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"lockcheck/clients/internal/proto"
)

var (
	tries         = flag.Int("tries", 1, "redsync WithTries: attempts per acquire (library default 32; each waits 50-250 ms)")
	retryDelayMs  = flag.Int("retry-delay-ms", 0, "redsync WithRetryDelay between tries (0: the library's random 50-250 ms)")
	driftFactor   = flag.Float64("drift-factor", 0.01, "redsync WithDriftFactor: validity = expiry - elapsed - drift x expiry")
	timeoutFactor = flag.Float64("timeout-factor", 0.05, "redsync WithTimeoutFactor: per-try context = factor x expiry")
	setNXOnExtend = flag.Bool("setnx-on-extend", false, "redsync WithSetNXOnExtend: extend re-creates an expired lock with SET NX")
	failFast      = flag.Bool("fail-fast", false, "redsync WithFailFast: answer as soon as a quorum agrees")
	shufflePools  = flag.Bool("shuffle-pools", false, "redsync WithShufflePools")
	rf            proto.RedisFlags
)

type adapter struct {
	rs      *redsync.Redsync
	mutexes map[string]*redsync.Mutex
}

func (a *adapter) connect(req proto.Request) {
	if a.rs != nil {
		return
	}
	pools := make([]redis.Pool, 0, len(req.Nodes))
	for _, n := range req.Nodes {
		pools = append(pools, goredis.NewPool(rf.NewClient(n, req.OpTimeoutMs)))
	}
	a.rs = redsync.New(pools...)
}

func (a *adapter) newMutex(key string, ttl time.Duration, value string) *redsync.Mutex {
	opts := []redsync.Option{
		redsync.WithExpiry(ttl), redsync.WithTries(*tries), redsync.WithDriftFactor(*driftFactor),
		redsync.WithTimeoutFactor(*timeoutFactor), redsync.WithFailFast(*failFast), redsync.WithShufflePools(*shufflePools),
	}
	if *retryDelayMs > 0 {
		opts = append(opts, redsync.WithRetryDelay(time.Duration(*retryDelayMs)*time.Millisecond))
	}
	if *setNXOnExtend {
		opts = append(opts, redsync.WithSetNXOnExtend())
	}
	if value != "" {
		opts = append(opts, redsync.WithValue(value))
	}
	return a.rs.NewMutex(key, opts...)
}

// classify maps a redsync error of op (acquire, release, extend) to an answer with its protocol-2 reason.
func classify(op string, err error) proto.Answer {
	a := outcome(err)
	a.Reason = reasonOf(op, err, a)
	return a
}

// reasonOf: timeout when the outcome is unknown; held / not_held when a node said the lock is someone else's or
// gone (or redsync gave up: ErrFailed, ErrExtendFailed); unreachable when every node error is a failed dial;
// error otherwise.
func reasonOf(op string, err error, a proto.Answer) string {
	if a.Indeterminate {
		return proto.ReasonTimeout
	}
	lost := proto.ReasonNotHeld
	if op == "acquire" {
		lost = proto.ReasonHeld
	}
	if errors.Is(err, redsync.ErrFailed) || errors.Is(err, redsync.ErrExtendFailed) {
		return lost
	}
	dials, others := 0, 0
	for _, e := range proto.Joined(err) {
		var taken *redsync.ErrTaken
		var nodeTaken *redsync.ErrNodeTaken
		var dial *net.OpError
		switch {
		case errors.As(e, &taken), errors.As(e, &nodeTaken), errors.Is(e, redsync.ErrLockAlreadyExpired):
			return lost
		case errors.As(e, &dial) && dial.Op == "dial", errors.Is(e, syscall.ECONNREFUSED):
			dials++
		default:
			others++
		}
	}
	if dials > 0 && others == 0 {
		return proto.ReasonUnreachable
	}
	return proto.ReasonError
}

// outcome maps a redsync error: definite when every part of it is a "taken" answer or an error that never
// reached Redis; indeterminate as soon as one node's request may have landed unanswered.
func outcome(err error) proto.Answer {
	if errors.Is(err, redsync.ErrFailed) || errors.Is(err, redsync.ErrExtendFailed) {
		return proto.Fail(err.Error())
	}
	for _, e := range proto.Joined(err) {
		var taken *redsync.ErrTaken
		var nodeTaken *redsync.ErrNodeTaken
		var rerr *redsync.RedisError
		switch {
		case errors.As(e, &taken), errors.As(e, &nodeTaken), errors.Is(e, redsync.ErrLockAlreadyExpired):
		case errors.As(e, &rerr):
			if !proto.Definite(rerr.Err) {
				return proto.Answer{OK: false, Indeterminate: true, Error: oneLine(err)}
			}
		default:
			if !proto.Definite(e) {
				return proto.Answer{OK: false, Indeterminate: true, Error: oneLine(err)}
			}
		}
	}
	return proto.Fail(oneLine(err))
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

func (a *adapter) handle(req proto.Request) proto.Answer {
	if len(req.Nodes) == 0 {
		return proto.Fail("no nodes in the request")
	}
	a.connect(req)
	ttl := time.Duration(req.TTLms) * time.Millisecond
	switch req.Op {
	case "acquire":
		m := a.newMutex(req.Key, ttl, "")
		if err := m.LockContext(context.Background()); err != nil {
			return classify(req.Op, err)
		}
		a.mutexes[req.Key] = m
		ans := proto.OKUntil(m.Until())
		ans.Keys = []string{m.Name()}
		return ans
	case "release":
		m := a.mutexes[req.Key]
		if m == nil {
			return proto.Fail("not held by this client")
		}
		delete(a.mutexes, req.Key)
		if ok, err := m.UnlockContext(context.Background()); !ok {
			if err == nil {
				return proto.FailBecause(proto.ReasonNotHeld, "not released on a quorum")
			}
			return classify(req.Op, err)
		}
		return proto.OK()
	case "extend":
		m := a.mutexes[req.Key]
		if m == nil {
			return proto.Fail("not held by this client")
		}
		if req.TTLms > 0 && ttl != time.Duration(0) {
			m = a.newMutex(req.Key, ttl, m.Value()) // redsync extends by the mutex's own expiry
			a.mutexes[req.Key] = m
		}
		if ok, err := m.ExtendContext(context.Background()); !ok {
			if err == nil {
				return proto.FailBecause(proto.ReasonNotHeld, "not extended on a quorum")
			}
			return classify(req.Op, err)
		}
		ans := proto.OKUntil(m.Until())
		ans.Keys = []string{m.Name()}
		return ans
	}
	return proto.Fail("unknown op " + req.Op)
}

func main() {
	rf.Register()
	flag.Parse()
	if flag.NArg() > 0 || *tries < 1 || *driftFactor < 0 || *timeoutFactor <= 0 {
		fmt.Fprintln(os.Stderr, "redsync adapter: bad arguments (see -h)")
		os.Exit(2)
	}
	a := &adapter{mutexes: map[string]*redsync.Mutex{}}
	proto.Serve(a.handle)
}
