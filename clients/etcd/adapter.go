// lockcheck adapter for etcd's own lock: clientv3's concurrency package (Mutex over a Session), the recipe
// Jepsen's etcd 3.4.3 analysis tested, answered in lockcheck's JSON-lines protocol (protocol 2).
//
// One source, two clients: this file names the client only through the aliases of a client file, etcd35.go
// here (go.etcd.io/etcd/client/v3 v3.5, module clients/) and clients/etcd343/etcd-3.4/etcd34.go (clientv3 of
// the etcd 3.4.3 module, module clients/etcd343/, whose grpc cannot live beside the 3.5 client's), which links
// this file. --lock-rpc (3.4 client only: the 3.5 client module has no v3lock stub) acquires with the server's
// Lock RPC instead, as Jepsen's jetcd client did: the server runs the Mutex itself.
//
// Per acquire: a lease is granted with TTL = --ttl-ms rounded UP to whole seconds (etcd leases have a TTL in
// seconds; the server may raise it further to its minimum, 1.5 x election timeout rounded up: 2 s with the
// default 1 s election timeout, and the granted TTL is what the answer's validity uses); a Session keeps that
// lease alive in the background (KeepAlive every TTL/3); a Mutex on key prefix "<key>" puts its key
// "<key>/<lease hex>" under the lease and holds the lock while that key has the lowest create revision.
// With --wait-ms 0 (default) the acquire is Mutex.TryLock: taken means a definite fail (reason held). With
// --wait-ms N it is Mutex.Lock, which waits up to N ms for the earlier keys to go (the seed's setting:
// Jepsen's clients blocked on the lock).
//
// What the answers say:
//   - validity_ms: the lease's granted TTL minus the time since the grant was sent, at the end of the acquire: a
//     lower bound of what the leader has left on it (the leader starts the TTL when it applies the grant); after
//     a blocking wait, the lease is renewed once more (KeepAliveOnce) and the TTL counts from that request
//     (--trust-wait: not renewed, the answer is the library's alone, without a validity). The
//     session's background keep-alive renews it without asking the harness; lockcheck's extend is the same
//     renewal sent once (KeepAliveOnce), and answers the validity it gives.
//   - keys: the lock key the acquire created ("<key>/<lease hex>").
//   - token (--fencing): the lock key's create revision, etcd's documented fencing token (a revision only grows).
//   - a `lost` event when the session's Done() channel closes while the lock is held: the lease expired or its
//     keep-alive gave up (what a library user is told).
//   - release: a transaction that deletes the lock key only if it still has our create revision (Mutex.IsOwner);
//     otherwise a definite fail, reason not_held. The lease is then revoked (best effort, not waited for).
//
// Errors: an answer from etcd that refuses the request is a definite fail; a deadline, a cancelled context or
// an unavailable server may have let the request through unanswered: indeterminate (reasons timeout and
// unreachable). Every op runs under one context bounded by op_timeout_ms (+ --wait-ms for a blocking acquire);
// clean-up after a failed acquire (revoking its lease, which deletes its key) runs in the background.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"lockcheck/clients/internal/proto"
)

var (
	waitMs        = flag.Int("wait-ms", 0, "0: Mutex.TryLock; N: Mutex.Lock, waiting up to N ms for the holder (the seed's blocking clients)")
	dialTimeoutMs = flag.Int("dial-timeout-ms", 0, "clientv3 DialTimeout (0: the request's op_timeout_ms)")
	lockRPCFlag   = flag.Bool("lock-rpc", false, "acquire with the server's Lock RPC (v3lock, what Jepsen's jetcd client called) instead of the client's Mutex; needs --wait-ms")
	trustWait     = flag.Bool("trust-wait", false, "after a blocking acquire, answer ok as the library did: no renewal once more, no read of the key, no validity (the seed's clients)")
)

type holding struct {
	session  *session
	key      string        // the lock key this acquire created
	owner    cmp           // true while that key still has the create revision it was made with
	released chan struct{} // closed before this client ends the session itself
}

type adapter struct {
	client *etcdClient
	held   map[string]*holding
	mu     sync.Mutex
}

func (a *adapter) connect(req proto.Request) error {
	if a.client != nil {
		return nil
	}
	dial := time.Duration(req.OpTimeoutMs) * time.Millisecond
	if *dialTimeoutMs > 0 {
		dial = time.Duration(*dialTimeoutMs) * time.Millisecond
	}
	// No AutoSyncInterval: the client keeps to the proxied endpoints the harness gave it.
	c, err := newQuietClient(req.Nodes, dial)
	if err != nil {
		return err
	}
	a.client = c
	return nil
}

// answerFor maps an etcd client error to a fail (etcd refused it, so it did not happen) or an indeterminate
// answer (it may have been applied without an answer reaching us).
func answerFor(err error) proto.Answer {
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	switch {
	case errors.Is(err, errLocked):
		return proto.FailBecause(proto.ReasonHeld, msg)
	case errors.Is(err, errSessionExpired), errors.Is(err, errLeaseNotFound):
		return proto.FailBecause(proto.ReasonNotHeld, msg)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return proto.Answer{OK: false, Indeterminate: true, Error: msg, Reason: proto.ReasonTimeout}
	}
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.DeadlineExceeded, codes.Canceled:
			return proto.Answer{OK: false, Indeterminate: true, Error: msg, Reason: proto.ReasonTimeout}
		case codes.Unavailable, codes.Unknown, codes.Internal, codes.Aborted, codes.DataLoss:
			return proto.Answer{OK: false, Indeterminate: true, Error: msg, Reason: proto.ReasonUnreachable}
		}
		return proto.FailBecause(proto.ReasonError, msg)
	}
	var etcdErr etcdError
	if errors.As(err, &etcdErr) {
		// "etcdserver: request timed out" and leader changes may still commit the proposal.
		if etcdErr == errTimeout || etcdErr == errTimeoutDueToLeaderFail ||
			etcdErr == errTimeoutDueToConnectionLost || etcdErr == errLeaderChanged {
			return proto.Answer{OK: false, Indeterminate: true, Error: msg, Reason: proto.ReasonTimeout}
		}
		return proto.FailBecause(proto.ReasonError, msg)
	}
	return proto.Answer{OK: false, Indeterminate: true, Error: msg, Reason: proto.ReasonError}
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// ttlSeconds rounds the harness's TTL up to whole seconds (etcd's unit), at least 1.
func ttlSeconds(ttlMs int64) int64 {
	s := (ttlMs + 999) / 1000
	if s < 1 {
		s = 1
	}
	return s
}

// revokeLater ends a lease this client no longer wants (its key goes with it) without holding up the answer.
func (a *adapter) revokeLater(id leaseID, within time.Duration) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		a.client.Revoke(ctx, id)
	}()
}

func (a *adapter) acquire(req proto.Request) proto.Answer {
	a.mu.Lock()
	_, already := a.held[req.Key]
	a.mu.Unlock()
	if already {
		return proto.FailBecause(proto.ReasonHeld, "already held by this client")
	}
	opTimeout := time.Duration(req.OpTimeoutMs) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout+time.Duration(*waitMs)*time.Millisecond)
	defer cancel()
	sent := time.Now()
	grant, err := a.client.Grant(ctx, ttlSeconds(req.TTLms))
	if err != nil {
		return answerFor(err)
	}
	session, err := newSession(a.client, withLease(grant.ID), withTTL(int(grant.TTL)))
	if err != nil {
		a.revokeLater(grant.ID, opTimeout)
		return answerFor(err)
	}
	var (
		key   string // the lock key
		owner cmp
		rev   int64 // its create revision, when known without a read
	)
	m := newMutex(session, req.Key) // its keys: "<key>/<lease hex>"
	if *lockRPCFlag {
		// The server's Lock RPC: the server itself runs a Mutex on our lease and answers once it holds the lock.
		done := make(chan error, 1)
		go func() {
			k, lerr := lockRPC(ctx, a.client, req.Key, grant.ID)
			key = k
			done <- lerr
		}()
		select {
		case err = <-done:
		case <-time.After(time.Until(deadlineOf(ctx)) + 200*time.Millisecond):
			err = context.DeadlineExceeded
		}
	} else if *waitMs > 0 {
		// Mutex.Lock cleans up after a failed wait with the client's own context, which has no deadline: bound
		// the call here (the clean-up goes on in the background; the lease is revoked below anyway).
		done := make(chan error, 1)
		go func() { done <- m.Lock(ctx) }()
		select {
		case err = <-done:
		case <-time.After(time.Until(deadlineOf(ctx)) + 200*time.Millisecond):
			err = context.DeadlineExceeded
		}
	} else {
		err = tryLock(m, ctx)
	}
	if err != nil {
		session.Orphan() // stop its keep-alive; the revoke below (or the TTL) removes the key
		a.revokeLater(grant.ID, opTimeout)
		return answerFor(err)
	}
	if !*lockRPCFlag {
		key, owner = m.Key(), m.IsOwner()
		if *waitMs == 0 {
			rev = m.Header().Revision // TryLock's header: the put of our key
		}
	}
	if rev == 0 && (req.Fencing || (*lockRPCFlag && !*trustWait)) {
		// After a wait the header is a later read's, and the Lock RPC answers only the key: ask for the key itself.
		{
			resp, gerr := a.client.Get(ctx, key)
			if gerr != nil || len(resp.Kvs) == 0 {
				session.Orphan()
				a.revokeLater(grant.ID, opTimeout)
				if gerr == nil {
					return proto.FailBecause(proto.ReasonNotHeld, "the lock key vanished before its revision was read")
				}
				ans := answerFor(gerr)
				ans.Indeterminate, ans.OK = true, false // it was held, at least for a moment
				return ans
			}
			rev = resp.Kvs[0].CreateRevision
		}
	}
	if *lockRPCFlag {
		if rev > 0 {
			owner = compare(createRevision(key), "=", rev)
		} else {
			owner = compare(createRevision(key), ">", 0) // the key names our lease: only we create it
		}
	}
	var token *int64
	if req.Fencing {
		token = &rev // the lock key's create revision
	}
	validity := time.Duration(grant.TTL)*time.Second - time.Since(sent)
	if *waitMs > 0 && !*trustWait {
		// While Lock waited, the session's keep-alive renewed the lease, so the grant says little: renew it once
		// more (the request the keep-alive sends) and take its TTL from when that renewal was sent.
		renewed := time.Now()
		ka, kerr := a.client.KeepAliveOnce(ctx, grant.ID)
		if kerr != nil || ka.TTL <= 0 {
			session.Orphan()
			a.revokeLater(grant.ID, opTimeout)
			if kerr == nil || errors.Is(kerr, errLeaseNotFound) {
				return proto.FailBecause(proto.ReasonNotHeld, "the lease expired before the acquire ended")
			}
			ans := answerFor(kerr)
			ans.Indeterminate, ans.OK = true, false // it was held, at least for a moment
			return ans
		}
		validity = time.Duration(ka.TTL)*time.Second - time.Since(renewed)
	}
	h := &holding{session: session, key: key, owner: owner, released: make(chan struct{})}
	a.mu.Lock()
	a.held[req.Key] = h
	a.mu.Unlock()
	select {
	case <-session.Done():
		// The session had already ended when the lock was granted (with --trust-wait: its lease expired while the
		// acquire waited, and the Mutex answered anyway): the library knew before the grant is answered.
		proto.Lost(req.Key, "etcd session had already ended when the lock was granted (its lease expired while the acquire waited)")
	default:
		go func(key string) {
			select {
			case <-h.session.Done():
				select {
				case <-h.released:
				default:
					proto.Lost(key, "etcd session ended (its lease expired or the keep-alive gave up)")
				}
			case <-h.released:
			}
		}(req.Key)
	}
	v := validity.Milliseconds()
	answer := proto.Answer{OK: true, ValidityMs: &v, Token: token, Keys: []string{key}}
	if *waitMs > 0 && *trustWait {
		// The library said "held" and nothing about the lease: no validity (the harness then assumes none).
		answer.ValidityMs = nil
	}
	return answer
}

func (a *adapter) release(req proto.Request) proto.Answer {
	a.mu.Lock()
	h := a.held[req.Key]
	delete(a.held, req.Key)
	a.mu.Unlock()
	if h == nil {
		return proto.FailBecause(proto.ReasonNotHeld, "not held by this client")
	}
	close(h.released)
	opTimeout := time.Duration(req.OpTimeoutMs) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	key := h.key
	resp, err := a.client.Txn(ctx).If(h.owner).Then(opDelete(key)).Commit()
	h.session.Orphan()
	a.revokeLater(h.session.Lease(), opTimeout)
	if err != nil {
		return answerFor(err)
	}
	if !resp.Succeeded {
		return proto.FailBecause(proto.ReasonNotHeld, "the lock key "+key+" is gone (lease expired)")
	}
	return proto.Answer{OK: true, Keys: []string{key}}
}

func (a *adapter) extend(req proto.Request) proto.Answer {
	a.mu.Lock()
	h := a.held[req.Key]
	a.mu.Unlock()
	if h == nil {
		return proto.FailBecause(proto.ReasonNotHeld, "not held by this client")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(req.OpTimeoutMs)*time.Millisecond)
	defer cancel()
	sent := time.Now()
	// The session's keep-alive, once (etcd renews a lease to its granted TTL; the TTL cannot be changed).
	resp, err := a.client.KeepAliveOnce(ctx, h.session.Lease())
	if err != nil {
		return answerFor(err)
	}
	if resp.TTL <= 0 {
		return proto.FailBecause(proto.ReasonNotHeld, "the lease has expired")
	}
	v := (time.Duration(resp.TTL)*time.Second - time.Since(sent)).Milliseconds()
	return proto.Answer{OK: true, ValidityMs: &v, Keys: []string{h.key}}
}

func (a *adapter) handle(req proto.Request) proto.Answer {
	if len(req.Nodes) == 0 {
		return proto.FailBecause(proto.ReasonError, "no nodes in the request")
	}
	if req.OpTimeoutMs <= 0 {
		return proto.FailBecause(proto.ReasonError, "op_timeout_ms must be > 0")
	}
	if err := a.connect(req); err != nil {
		return proto.Answer{OK: false, Error: "etcd client: " + err.Error(), Reason: proto.ReasonUnreachable}
	}
	switch req.Op {
	case "acquire":
		return a.acquire(req)
	case "release":
		return a.release(req)
	case "extend":
		return a.extend(req)
	}
	return proto.FailBecause(proto.ReasonError, "unknown op "+req.Op)
}

func main() {
	flag.Parse()
	if flag.NArg() > 0 || *waitMs < 0 || *dialTimeoutMs < 0 {
		fmt.Fprintln(os.Stderr, "etcd adapter: bad arguments (see -h)")
		os.Exit(2)
	}
	if why := refusal(*waitMs, *lockRPCFlag); why != "" {
		fmt.Fprintln(os.Stderr, "etcd adapter (client "+clientVersion+"): "+why)
		os.Exit(2)
	}
	if *waitMs > 0 {
		// A blocking acquire may take the wait plus an op timeout (assumed at most 5 s).
		proto.SetMaxCall(time.Duration(*waitMs)*time.Millisecond + 5*time.Second)
	}
	a := &adapter{held: map[string]*holding{}}
	proto.Serve(a.handle)
}

// refusal says why these flags cannot run with this client ("" when they can).
func refusal(waitMs int, rpc bool) string {
	switch {
	case *trustWait && waitMs == 0:
		return "--trust-wait needs --wait-ms N (it is about what a blocking acquire answers)"
	case rpc && waitMs == 0:
		return "--lock-rpc needs --wait-ms N: the Lock RPC blocks until the lock is held"
	case rpc && lockRPC == nil:
		return "--lock-rpc: this client module has no Lock RPC stub (v3lockpb); use the 3.4 client"
	case !rpc && waitMs == 0 && tryLock == nil:
		return "Mutex.TryLock does not exist in this client (added in 3.5): give --wait-ms N (a blocking Mutex.Lock)"
	}
	return ""
}
