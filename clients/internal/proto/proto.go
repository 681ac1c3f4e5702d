// Package proto speaks lockcheck's external-client protocol (locks/README-external.md): one JSON request per
// line on stdin, one JSON answer per line on stdout, flushed after each answer. Shared by the Go adapters.
package proto

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"
)

// Request is one harness -> client line.
type Request struct {
	Op          string   `json:"op"` // acquire, release, extend
	Key         string   `json:"key"`
	TTLms       int64    `json:"ttl_ms"`
	Nodes       []string `json:"nodes"`
	OpTimeoutMs int64    `json:"op_timeout_ms"`
	Fencing     bool     `json:"fencing"`
	// Protocol is 2 from a harness that reads protocol-2 fields and event lines; 0 or 1 from an older one.
	Protocol int `json:"protocol"`
}

// Answer is one client -> harness line.
type Answer struct {
	OK            bool   `json:"ok"`
	Error         string `json:"error,omitempty"`
	Indeterminate bool   `json:"indeterminate,omitempty"`
	ValidityMs    *int64 `json:"validity_ms,omitempty"`
	Token         *int64 `json:"token,omitempty"`
	// Protocol 2: the Redis keys the op wrote (holder targeting finds the holder's nodes by them) and the typed
	// failure reason (held, not_held, timeout, unreachable, error) next to the free-text Error.
	Keys   []string `json:"keys,omitempty"`
	Reason string   `json:"reason,omitempty"`
	// Protocol 2: CLOCK_MONOTONIC (ns) when ValidityMs was measured, so that the harness can take off the time
	// the answer spent reaching it. Serve stamps every answer with a validity that has none.
	MonoNs *int64 `json:"mono_ns,omitempty"`
}

// Mono reads CLOCK_MONOTONIC, the clock the harness reads too (Go's time.Now hides its monotonic reading).
func Mono() int64 {
	var ts syscall.Timespec
	// CLOCK_MONOTONIC is 1 on Linux; a failure leaves ts zero, which the harness refuses as out of range.
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// Failure reasons of protocol 2 (locks/README-external.md).
const (
	ReasonHeld        = "held"        // another holder has the lock
	ReasonNotHeld     = "not_held"    // release/extend: this client no longer holds it (expired or taken)
	ReasonTimeout     = "timeout"     // no answer in time: the op may have happened
	ReasonUnreachable = "unreachable" // the nodes (or a quorum of them) could not be reached
	ReasonError       = "error"       // anything else
)

// OK is a plain success.
func OK() Answer { return Answer{OK: true} }

// OKUntil is a success that the library says holds until `until` (validity measured now, at the end of the op).
func OKUntil(until time.Time) Answer {
	m := Mono()
	v := time.Until(until).Milliseconds()
	return Answer{OK: true, ValidityMs: &v, MonoNs: &m}
}

// Fail is a definite failure: it certainly did not happen.
func Fail(why string) Answer { return Answer{OK: false, Error: why} }

// FailBecause is a definite failure with its protocol-2 reason.
func FailBecause(reason, why string) Answer { return Answer{OK: false, Error: why, Reason: reason} }

// FromError maps a library error to fail (the request never reached Redis, or Redis answered) or indeterminate
// (it may have reached Redis without an answer: a timeout, a connection lost after sending).
func FromError(err error) Answer {
	if Definite(err) {
		return Answer{OK: false, Error: err.Error()}
	}
	return Answer{OK: false, Indeterminate: true, Error: err.Error()}
}

// Definite reports whether err certainly means that nothing took effect on the node: an error reply from
// Redis, a refused or failed dial, a pool that had no connection to give. Everything else (timeouts, a context
// that ended while the command was in flight, EOF, reset) may have reached Redis.
func Definite(err error) bool {
	var reply redis.Error
	if errors.As(err, &reply) && !errors.Is(err, context.DeadlineExceeded) {
		return true // an error reply: the command did not run
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed) {
		return true
	}
	return false
}

// Joined returns the errors err is made of (errors.Join), or err itself.
func Joined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

var (
	outMu     sync.Mutex
	out       = bufio.NewWriter(os.Stdout)
	v2        bool  // a protocol-2 request was seen: event lines may be written
	maxCallMs int64 // SetMaxCall: announced in the hello event
	helloSent bool
)

// SetMaxCall declares the longest one call of this client may block (protocol 2's hello event): the harness
// then waits that long, plus its margin, before it gives up on an answer. Call before Serve.
func SetMaxCall(d time.Duration) { maxCallMs = d.Milliseconds() }

// Hello announces max_call_ms from inside a handler, for a bound known only from the first request (its ttl_ms,
// say); once, to a protocol-2 harness, and only if SetMaxCall did not announce one already.
func Hello(d time.Duration) {
	outMu.Lock()
	defer outMu.Unlock()
	if v2 && !helloSent && d > 0 {
		writeLine(map[string]any{"event": "hello", "max_call_ms": d.Milliseconds()})
		helloSent = true
	}
}

func writeLine(v any) {
	b, _ := json.Marshal(v)
	out.Write(append(b, '\n'))
	out.Flush()
}

// Lost reports, from any goroutine, that the library told its caller the lock on key is gone (a cancelled
// context, a callback). Written only to a protocol-2 harness, which stamps it on receipt.
func Lost(key, detail string) {
	outMu.Lock()
	defer outMu.Unlock()
	if v2 {
		writeLine(map[string]string{"event": "lost", "key": key, "detail": detail})
	}
}

// Serve answers requests until stdin ends. handle must return within the harness's deadline.
func Serve(handle func(Request) Answer) {
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var req Request
			var ans Answer
			jerr := json.Unmarshal(line, &req)
			if jerr == nil && req.Protocol >= 2 {
				outMu.Lock()
				v2 = true
				if !helloSent && maxCallMs > 0 {
					writeLine(map[string]any{"event": "hello", "max_call_ms": maxCallMs})
					helloSent = true
				}
				outMu.Unlock()
			}
			if jerr != nil {
				ans = FailBecause(ReasonError, "bad request: "+jerr.Error())
			} else {
				ans = handle(req)
			}
			if ans.ValidityMs != nil && ans.MonoNs == nil {
				m := Mono()
				ans.MonoNs = &m
			}
			outMu.Lock()
			writeLine(ans)
			outMu.Unlock()
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "stdin:", err)
			return
		}
	}
}

// RedisFlags are the go-redis client options every Go adapter takes.
type RedisFlags struct {
	MaxRetries int // go-redis MaxRetries (library default 3; -1 disables retries)
	TimeoutMs  int // dial/read/write timeout; 0: the request's op_timeout_ms
	PoolSize   int // 0: library default
	// DialerRetries: go-redis dial attempts, 100 ms apart, made in the background while the command waits on
	// its context (0: library default 5). With them, a dead node shows up as "context deadline exceeded".
	DialerRetries int
}

// Register adds the go-redis flags to the command line.
func (f *RedisFlags) Register() {
	flag.IntVar(&f.MaxRetries, "max-retries", 3, "go-redis MaxRetries per command (library default 3; -1: none)")
	flag.IntVar(&f.TimeoutMs, "redis-timeout-ms", 0, "go-redis dial/read/write timeout (0: the request's op_timeout_ms)")
	flag.IntVar(&f.PoolSize, "pool-size", 0, "go-redis PoolSize (0: library default)")
	flag.IntVar(&f.DialerRetries, "dialer-retries", 0, "go-redis DialerRetries (0: library default 5)")
}

// NewClient makes a go-redis client for addr with the flags (timeouts from the request unless set).
func (f RedisFlags) NewClient(addr string, opTimeoutMs int64) *redis.Client {
	t := time.Duration(opTimeoutMs) * time.Millisecond
	if f.TimeoutMs > 0 {
		t = time.Duration(f.TimeoutMs) * time.Millisecond
	}
	return redis.NewClient(&redis.Options{
		Addr:          addr,
		DialTimeout:   t,
		ReadTimeout:   t,
		WriteTimeout:  t,
		MaxRetries:    f.MaxRetries,
		PoolSize:      f.PoolSize,
		DialerRetries: f.DialerRetries,
	})
}
