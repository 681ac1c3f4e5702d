// Command lockcheck-adapter is lockcheck's external-client adapter for package fencedlock (locks/README-external.md
// in lockcheck). lockcheck starts one per client process and writes one JSON request per line on stdin:
//
//	{"op":"acquire","key":"lock-0","ttl_ms":1000,"nodes":["127.0.0.1:40211"],"op_timeout_ms":500,...}
//
// and reads one JSON answer per line on stdout. The lock is called as an application calls it; this file only
// turns its outcomes into answers:
//
//	Acquire ok                   {"ok":true,"token":T,"validity_ms":V,"mono_ns":M,"keys":[key]}
//	ErrNotObtained               {"ok":false,"reason":"held"}       certainly not ours
//	ErrNotHeld (release, extend) {"ok":false,"reason":"not_held"}   the lock had expired or was taken
//	an error reply               {"ok":false,"reason":"error"}      the script did not run
//	a refused or failed dial     {"ok":false,"reason":"unreachable"} nothing was sent
//	anything else (a timeout, a connection lost after the request was written)
//	                             {"ok":false,"indeterminate":true,"reason":"timeout"}
//	                             it may have run: lockcheck records the op as info (unknown), never as a failure.
//
// token is the lock's fencing token, handed out with every grant (with or without lockcheck's --fencing): the
// fenced-set workload sends it with every read and write of its resource, which refuses stale ones.
// validity_ms is time.Until(ValidUntil()) when the answer is written, with mono_ns the CLOCK_MONOTONIC reading
// taken at that moment, so that lockcheck can take off the time the answer spent in the pipe on a loaded machine.
// Only stdout carries answers. Uses the first node of the request (a one-node lock).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"

	"example.com/go-redis-lock/fencedlock"
)

type request struct {
	Op          string   `json:"op"`
	Key         string   `json:"key"`
	TTLms       int64    `json:"ttl_ms"`
	Nodes       []string `json:"nodes"`
	OpTimeoutMs int64    `json:"op_timeout_ms"`
}

type answer struct {
	OK            bool     `json:"ok"`
	Error         string   `json:"error,omitempty"`
	Reason        string   `json:"reason,omitempty"`
	Indeterminate bool     `json:"indeterminate,omitempty"`
	ValidityMs    *int64   `json:"validity_ms,omitempty"`
	MonoNs        *int64   `json:"mono_ns,omitempty"`
	Token         *int64   `json:"token,omitempty"`
	Keys          []string `json:"keys,omitempty"`
}

// monoNs reads CLOCK_MONOTONIC, the clock lockcheck reads (Go's time.Now does not expose its monotonic reading).
func monoNs() int64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

func held(l *fencedlock.Lock) answer {
	now := monoNs()
	v := time.Until(l.ValidUntil()).Milliseconds()
	if v <= 0 { // the call took the whole TTL: an expired lock is not a grant
		return answer{Reason: "error", Error: fmt.Sprintf("no validity left (%d ms)", v)}
	}
	t := l.Token()
	return answer{OK: true, ValidityMs: &v, MonoNs: &now, Token: &t, Keys: []string{l.Key()}}
}

// fromError maps a go-redis error: certain failures (nothing ran) versus unknown outcomes.
func fromError(err error) answer {
	var reply redis.Error
	var op *net.OpError
	switch {
	case errors.Is(err, fencedlock.ErrNotObtained):
		return answer{Reason: "held", Error: err.Error()}
	case errors.Is(err, fencedlock.ErrNotHeld):
		return answer{Reason: "not_held", Error: err.Error()}
	case errors.As(err, &op) && op.Op == "dial", errors.Is(err, syscall.ECONNREFUSED):
		return answer{Reason: "unreachable", Error: err.Error()}
	case errors.As(err, &reply) && !errors.Is(err, context.DeadlineExceeded):
		return answer{Reason: "error", Error: err.Error()}
	}
	return answer{Indeterminate: true, Reason: "timeout", Error: err.Error()}
}

type adapter struct {
	locker *fencedlock.Locker
	locks  map[string]*fencedlock.Lock
}

func (a *adapter) handle(req request) answer {
	if len(req.Nodes) == 0 {
		return answer{Reason: "error", Error: "no nodes in the request"}
	}
	timeout := time.Duration(req.OpTimeoutMs) * time.Millisecond
	if a.locker == nil {
		a.locker = fencedlock.New(fencedlock.NewClient(req.Nodes[0], timeout))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ttl := time.Duration(req.TTLms) * time.Millisecond
	if req.Op == "acquire" {
		l, err := a.locker.Acquire(ctx, req.Key, ttl)
		if err != nil {
			return fromError(err)
		}
		a.locks[req.Key] = l
		return held(l)
	}
	l := a.locks[req.Key]
	if l == nil {
		return answer{Reason: "error", Error: "not held by this client"}
	}
	switch req.Op {
	case "extend":
		if err := l.Extend(ctx, ttl); err != nil {
			return fromError(err)
		}
		return held(l)
	case "release":
		delete(a.locks, req.Key)
		if err := l.Release(ctx); err != nil {
			return fromError(err)
		}
		return answer{OK: true}
	}
	return answer{Reason: "error", Error: "unknown op " + req.Op}
}

func main() {
	a := &adapter{locks: map[string]*fencedlock.Lock{}}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		var req request
		var ans answer
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			ans = answer{Reason: "error", Error: "bad request: " + err.Error()}
		} else {
			ans = a.handle(req)
		}
		b, _ := json.Marshal(ans)
		out.Write(append(b, '\n'))
		out.Flush() // one answer per line, flushed: lockcheck waits for it
	}
}
