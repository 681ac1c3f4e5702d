// The client of the etcd adapter built in module clients/ (adapter.go names it only through these aliases):
// go.etcd.io/etcd/client/v3 v3.5, pinned in clients/go.mod.
package main

import (
	"context"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

const clientVersion = "3.5"

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

	errLocked                     = concurrency.ErrLocked
	errSessionExpired             = concurrency.ErrSessionExpired
	errLeaseNotFound              = rpctypes.ErrLeaseNotFound
	errTimeout                    = rpctypes.ErrTimeout
	errTimeoutDueToLeaderFail     = rpctypes.ErrTimeoutDueToLeaderFail
	errTimeoutDueToConnectionLost = rpctypes.ErrTimeoutDueToConnectionLost
	errLeaderChanged              = rpctypes.ErrLeaderChanged
)

var tryLock = func(m *mutex, ctx context.Context) error { return m.TryLock(ctx) }

// No Lock RPC stub in this module (v3lockpb lives in the 3.5 server module): --lock-rpc is refused.
var lockRPC func(ctx context.Context, c *etcdClient, name string, lease leaseID) (string, error)

// newQuietClient: a client of endpoints that logs nothing.
func newQuietClient(endpoints []string, dial time.Duration) (*etcdClient, error) {
	return clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: dial, Logger: zap.NewNop()})
}
