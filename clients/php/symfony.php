<?php
// lockcheck adapter for Symfony Lock (Debian php-symfony-lock 5.4, phpredis from php-redis), shared by
//   symfony-lock.php      RedisStore on the first node of the request;
//   symfony-combined.php  CombinedStore(one RedisStore per node, ConsensusStrategy): Symfony's Redlock.
// Locks are made as Symfony's documentation shows, LockFactory::createLock($resource, $ttl, autoRelease: false):
// acquire(false), refresh($ttl), release(), with the Key named after the request's key (the Redis key, a sorted
// set, is the resource name itself).
//
// Outcomes, from Lock.php, Store/RedisStore.php, Store/CombinedStore.php (5.4):
//   - acquire: the store's save() writes with RedisStore's initialTtl (300 s unless --initial-ttl-s), then
//     refresh($ttl) sets the lock's TTL. `false` (LockConflictedException): held. A LockAcquiringException whose
//     cause is the refresh (save had succeeded: the key stays for initialTtl) or a phpredis read/write error is
//     indeterminate; a refused connect or a Redis error reply (LockStorageException) is definite.
//     CombinedStore swallows each store's exception and answers LockConflictedException when the quorum is not
//     met, after deleting on every store: a definite fail.
//   - validity_ms: Lock::getRemainingLifetime() at the end of the op (the Key's expiry, set before the request:
//     TTL minus the time the op took); LockExpiredException when it ran out during the op (fail).
//   - extend: refresh($ttl); LockConflictedException: not_held.
//   - release: release() deletes without looking at the script's answer and then checks exists(); it cannot say
//     "not held". Lock::isExpired() before the release is the library's word that the lock had lapsed: not_held
//     (the release still runs). LockReleasingException: indeterminate unless the connect was refused.
//   - lost: between requests, a held lock whose Lock::isExpired() turns true (its lifetime ran out without a
//     refresh) is reported once as a lost event (protocol 2): Symfony's documented way to learn it.
// phpredis connects once per node and keeps the connection (as a long-lived worker does); a node whose connect
// failed is connected again before the next request.

require_once 'Symfony/Component/Lock/autoload.php';
require_once __DIR__ . '/proto.php';

use Symfony\Component\Lock\Exception\LockAcquiringException;
use Symfony\Component\Lock\Exception\LockConflictedException;
use Symfony\Component\Lock\Exception\LockExpiredException;
use Symfony\Component\Lock\Exception\LockReleasingException;
use Symfony\Component\Lock\Exception\LockStorageException;
use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\CombinedStore;
use Symfony\Component\Lock\Store\RedisStore;
use Symfony\Component\Lock\Strategy\ConsensusStrategy;

final class LcSymfony
{
    /** @var \Redis[] */
    private array $redis = [];
    /** @var array<int, array{string,int}> */
    private array $addr = [];
    private ?LockFactory $factory = null;
    /** @var array<string, \Symfony\Component\Lock\LockInterface> */
    private array $locks = [];
    /** @var array<string, bool> keys whose expiry was reported */
    private array $reported = [];
    /** @var array<string, bool> keys whose refresh the library refused (conflict, expired) */
    private array $refused = [];

    public function __construct(private bool $combined, private array $opt, private string $who)
    {
    }

    private function timeouts(array $req): array
    {
        $t = ($this->opt['timeout-ms'] ?: ($req['op_timeout_ms'] ?? 500)) / 1000.0;
        $rt = ($this->opt['read-timeout-ms'] ?: ($req['op_timeout_ms'] ?? 500)) / 1000.0;
        return [$t, $rt];
    }

    // Connects each node's \Redis that phpredis reports unconnected; a refused connect leaves it unconnected (its
    // commands then fail with "Redis server went away", which the stores count as a failure).
    private function connect(array $req): void
    {
        [$t, $rt] = $this->timeouts($req);
        foreach ($this->redis as $i => $r) {
            if ($r->isConnected()) {
                continue;
            }
            try {
                $r->connect($this->addr[$i][0], $this->addr[$i][1], $t, null, 0, $rt);
            } catch (\RedisException $e) {
            }
        }
    }

    private function open(array $req): void
    {
        $nodes = $this->combined ? $req['nodes'] : [$req['nodes'][0]];
        $stores = [];
        foreach ($nodes as $i => $n) {
            $this->addr[$i] = lc_host_port($n);
            $this->redis[$i] = new \Redis();
            $stores[] = new RedisStore($this->redis[$i], (float) $this->opt['initial-ttl-s']);
        }
        $store = $this->combined ? new CombinedStore($stores, new ConsensusStrategy()) : $stores[0];
        $this->factory = new LockFactory($store);
        [$t, $rt] = $this->timeouts($req);
        // save + refresh (+ the cleanup deletes) per node, each bounded by phpredis' connect and read timeouts.
        lc_hello((int) (count($nodes) * 3 * ($t + $rt) * 1000) + 1000);
    }

    private function validity(\Symfony\Component\Lock\LockInterface $lock, string $key): array
    {
        $ans = lc_ok(['keys' => [$key]]);
        $left = $lock->getRemainingLifetime();
        if ($left !== null) {
            $ans['validity_ms'] = (int) floor($left * 1000);
            // CLOCK_MONOTONIC in ns (hrtime on Linux): the harness takes off the time the answer took to reach it.
            $ans['mono_ns'] = hrtime(true);
        }
        return $ans;
    }

    // An exception other than a conflict: definite when nothing reached Redis (a refused connect) or Redis
    // answered with an error; otherwise indeterminate. $after_write: the op had already written (acquire's refresh).
    private function failure(\Throwable $e, bool $afterWrite = false): array
    {
        $why = lc_describe($e);
        $root = lc_root($e);
        if ($root instanceof LockExpiredException) {
            return lc_fail(LC_NOT_HELD, $why);
        }
        if (!$afterWrite && $root instanceof LockStorageException) {
            return lc_fail(LC_ERROR, $why);
        }
        if (!$afterWrite && $root instanceof \RedisException && lc_not_sent($root)) {
            return lc_fail(LC_UNREACHABLE, $why);
        }
        return lc_indeterminate(LC_TIMEOUT, $why);
    }

    public function handle(array $req): array
    {
        if ($this->factory === null) {
            $this->open($req);
        }
        $this->connect($req);
        if (!$this->combined && !$this->redis[0]->isConnected()) { // nothing can have been sent
            return lc_fail(LC_UNREACHABLE, 'phpredis: cannot connect to ' . $req['nodes'][0]);
        }
        $key = (string) $req['key'];
        $ttl = ($req['ttl_ms'] ?? 0) / 1000.0;
        switch ($req['op']) {
            case 'acquire':
                $lock = $this->factory->createLock($key, $ttl, false);
                try {
                    if (!$lock->acquire(false)) {
                        return lc_fail(LC_HELD, 'Lock::acquire() returned false (LockConflictedException)');
                    }
                } catch (LockAcquiringException $e) {
                    // A LockAcquiringException inside it comes from refresh(): save() had written already.
                    return $this->failure($e, $e->getPrevious() instanceof LockAcquiringException);
                }
                $this->locks[$key] = $lock;
                unset($this->reported[$key], $this->refused[$key]);
                return $this->validity($lock, $key);
            case 'extend':
                $lock = $this->locks[$key] ?? null;
                if ($lock === null) {
                    return lc_fail(LC_NOT_HELD, 'not held by this client');
                }
                try {
                    $lock->refresh($ttl);
                } catch (LockConflictedException $e) {
                    $this->refused[$key] = true;
                    return lc_fail(LC_NOT_HELD, 'Lock::refresh(): LockConflictedException (someone else has it)');
                } catch (LockExpiredException $e) {
                    $this->refused[$key] = true;
                    return lc_fail(LC_NOT_HELD, lc_describe($e));
                } catch (LockAcquiringException $e) {
                    return $this->failure($e);
                }
                unset($this->reported[$key]);
                return $this->validity($lock, $key);
            case 'release':
                $lock = $this->locks[$key] ?? null;
                if ($lock === null) {
                    return lc_fail(LC_NOT_HELD, 'not held by this client');
                }
                $expired = $lock->isExpired() || isset($this->refused[$key]);
                unset($this->locks[$key], $this->reported[$key], $this->refused[$key]);
                try {
                    $lock->release();
                } catch (LockReleasingException $e) {
                    return $expired ? lc_fail(LC_NOT_HELD, 'expired or refused before release; ' . lc_describe($e))
                                    : $this->failure($e);
                }
                return $expired ? lc_fail(LC_NOT_HELD, 'the library had said so before the release (Lock::isExpired(), or a refused refresh)') : lc_ok();
        }
        return lc_fail(LC_ERROR, 'unknown op ' . $req['op']);
    }

    // Between requests: the first moment a held lock's Lock::isExpired() turns true is its lost event.
    public function idle(): ?float
    {
        $next = null;
        foreach ($this->locks as $key => $lock) {
            if (isset($this->reported[$key])) {
                continue;
            }
            $left = $lock->getRemainingLifetime();
            if ($left === null) {
                continue;
            }
            if ($left <= 0) {
                $this->reported[$key] = true;
                lc_lost($key, 'Symfony Lock::isExpired(): the lock\'s lifetime ran out');
                continue;
            }
            $next = $next === null ? $left : min($next, $left);
        }
        return $next;
    }
}

function lc_symfony_main(bool $combined, array $argv): void
{
    $who = $combined ? 'symfony-combined adapter' : 'symfony-lock adapter';
    $opt = lc_flags($argv, ['initial-ttl-s' => 300.0, 'timeout-ms' => 0, 'read-timeout-ms' => 0], $who);
    if ($opt['initial-ttl-s'] <= 0) {
        fwrite(STDERR, "$who: --initial-ttl-s must be positive\n");
        exit(2);
    }
    $a = new LcSymfony($combined, $opt, $who);
    lc_serve([$a, 'handle'], [$a, 'idle']);
}
