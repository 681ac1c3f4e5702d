// lockcheck adapter for github.com/bsm/redislock (single-node lock over go-redis v9): Obtain / Release / Refresh,
// answered in lockcheck's JSON-lines protocol. Uses the first node of the request.
//
// Outcomes, from redislock.go: Obtain runs one Lua script (SET NX PX, or re-SET when the value's token prefix is
// ours); ErrNotObtained (held by another, retries exhausted) and ErrLockNotHeld are definite fails. Any other
// error comes from go-redis or the context and is indeterminate unless it certainly never reached Redis (an
// error reply, a refused dial): a context that ends between retries cannot be told from one that ends in flight.
// redislock computes no validity of its own (it offers Lock.TTL, one more round trip), so none is reported.
//
// Protocol 2: an ok Obtain or Refresh reports keys [Lock.Key()]; failures carry their reason: held
// (ErrNotObtained on Obtain), not_held (ErrLockNotHeld, ErrNotObtained on Refresh), timeout (indeterminate),
// unreachable (a refused or failed dial), error (an error reply and the rest). redislock has no loss callback.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"lockcheck/clients/internal/proto"
)

var (
	retryCount     = flag.Int("retry-count", 0, "LimitRetry(LinearBackoff) attempts after the first (library default: NoRetry)")
	retryBackoffMs = flag.Int("retry-backoff-ms", 100, "LinearBackoff between retries")
	obtainTimeout  = flag.Int("obtain-timeout-ms", 0, "context deadline of Obtain (0: the library's default, the TTL)")
	rf             proto.RedisFlags
)

// fromError is proto.FromError with the protocol-2 reason.
func fromError(err error) proto.Answer {
	a := proto.FromError(err)
	var dial *net.OpError
	switch {
	case a.Indeterminate:
		a.Reason = proto.ReasonTimeout
	case errors.As(err, &dial) && dial.Op == "dial", errors.Is(err, syscall.ECONNREFUSED):
		a.Reason = proto.ReasonUnreachable
	default:
		a.Reason = proto.ReasonError
	}
	return a
}

func okWith(l *redislock.Lock) proto.Answer {
	a := proto.OK()
	a.Keys = []string{l.Key()}
	return a
}

type adapter struct {
	client *redis.Client
	locker *redislock.Client
	locks  map[string]*redislock.Lock
}

func (a *adapter) handle(req proto.Request) proto.Answer {
	if len(req.Nodes) == 0 {
		return proto.Fail("no nodes in the request")
	}
	if a.locker == nil {
		a.client = rf.NewClient(req.Nodes[0], req.OpTimeoutMs)
		a.locker = redislock.New(a.client)
	}
	ttl := time.Duration(req.TTLms) * time.Millisecond
	ctx := context.Background()
	switch req.Op {
	case "acquire":
		opt := &redislock.Options{}
		if *retryCount > 0 {
			opt.RetryStrategy = redislock.LimitRetry(redislock.LinearBackoff(time.Duration(*retryBackoffMs)*time.Millisecond), *retryCount)
		}
		if *obtainTimeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(*obtainTimeout)*time.Millisecond)
			defer cancel()
		}
		l, err := a.locker.Obtain(ctx, req.Key, ttl, opt)
		if err != nil {
			if errors.Is(err, redislock.ErrNotObtained) {
				return proto.FailBecause(proto.ReasonHeld, err.Error())
			}
			return fromError(err)
		}
		a.locks[req.Key] = l
		return okWith(l)
	case "release":
		l := a.locks[req.Key]
		if l == nil {
			return proto.Fail("not held by this client")
		}
		delete(a.locks, req.Key)
		if err := l.Release(ctx); err != nil {
			if errors.Is(err, redislock.ErrLockNotHeld) {
				return proto.FailBecause(proto.ReasonNotHeld, err.Error())
			}
			return fromError(err)
		}
		return proto.OK()
	case "extend":
		l := a.locks[req.Key]
		if l == nil {
			return proto.Fail("not held by this client")
		}
		if err := l.Refresh(ctx, ttl, nil); err != nil {
			if errors.Is(err, redislock.ErrNotObtained) || errors.Is(err, redislock.ErrLockNotHeld) {
				return proto.FailBecause(proto.ReasonNotHeld, err.Error())
			}
			return fromError(err)
		}
		return okWith(l)
	}
	return proto.Fail("unknown op " + req.Op)
}

func main() {
	rf.Register()
	flag.Parse()
	if flag.NArg() > 0 || *retryCount < 0 || *retryBackoffMs < 0 || *obtainTimeout < 0 {
		fmt.Fprintln(os.Stderr, "redislock adapter: bad arguments (see -h)")
		os.Exit(2)
	}
	proto.Serve((&adapter{locks: map[string]*redislock.Lock{}}).handle)
}
