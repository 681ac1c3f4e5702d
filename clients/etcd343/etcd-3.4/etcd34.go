// The client of the etcd adapter built in module clients/etcd343/ (adapter.go, linked from clients/etcd/, names
// it only through these aliases): clientv3 of the etcd 3.4.3 module (go.etcd.io/etcd at
// v0.5.0-alpha.5.0.20191023171146-3cf2f69b5738, the analysed version), pinned in clients/etcd343/go.mod.
// Its Mutex has no TryLock (added in 3.5), and its Lock returns after the wait without reading its own key
// again (the waiter the seed found); the Lock RPC stub (v3lockpb) is in the same module.
package main

import (
	"context"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
	"go.etcd.io/etcd/etcdserver/api/v3lock/v3lockpb"
	"go.etcd.io/etcd/etcdserver/api/v3rpc/rpctypes"
	"go.etcd.io/etcd/pkg/logutil"
	"go.uber.org/zap"
)

const clientVersion = "3.4.3"

type (
	etcdClient = clientv3.Client
	leaseID    = clientv3.LeaseID
	cmp        = clientv3.Cmp
	session    = concurrency.Session
	mutex      = concurrency.Mutex
	etcdError  = rpctypes.EtcdError
)

var (
	opDelete       = clientv3.OpDelete
	compare        = clientv3.Compare
	createRevision = clientv3.CreateRevision
	newSession     = concurrency.NewSession
	withLease      = concurrency.WithLease
	withTTL        = concurrency.WithTTL
	newMutex       = concurrency.NewMutex

	errLocked                     error // no TryLock, so never returned
	errSessionExpired             error // added with the waiter fix (3.4.4): never returned here
	errLeaseNotFound              = rpctypes.ErrLeaseNotFound
	errTimeout                    = rpctypes.ErrTimeout
	errTimeoutDueToLeaderFail     = rpctypes.ErrTimeoutDueToLeaderFail
	errTimeoutDueToConnectionLost = rpctypes.ErrTimeoutDueToConnectionLost
	errLeaderChanged              = rpctypes.ErrLeaderChanged
)

var tryLock func(m *mutex, ctx context.Context) error // refused: see refusal()

// lockRPC asks the server's Lock service (v3lock) for the lock on the lease; it answers the lock key once held.
var lockRPC = func(ctx context.Context, c *etcdClient, name string, lease leaseID) (string, error) {
	resp, err := v3lockpb.NewLockClient(c.ActiveConnection()).Lock(ctx,
		&v3lockpb.LockRequest{Name: []byte(name), Lease: int64(lease)})
	if err != nil {
		return "", err
	}
	return string(resp.Key), nil
}

// newQuietClient: a client of endpoints that logs nothing but a fatal error (3.4's Config takes a zap config).
func newQuietClient(endpoints []string, dial time.Duration) (*etcdClient, error) {
	lc := logutil.DefaultZapLoggerConfig
	lc.Level = zap.NewAtomicLevelAt(zap.FatalLevel)
	return clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: dial, LogConfig: &lc})
}
