<?php
// lockcheck adapter for Laravel's cache lock (Debian php-illuminate-cache 8.83 with php-illuminate-redis and
// phpredis): Illuminate\Cache\RedisStore::lock($name, $seconds) on the first node, through Laravel's own
// PhpRedisConnector and PhpRedisConnection, with a default Laravel 8 application's prefixes (the connection's
// OPT_PREFIX "laravel_database_", the cache store's "laravel_cache:"): the Redis key of lock-0 is
// laravel_database_laravel_cache:lock-0. For a PhpRedisConnection the store hands out a PhpRedisLock (a RedisLock).
//
// Outcomes, from Cache/RedisLock.php, Cache/PhpRedisLock.php, Cache/Lock.php and Redis/Connections (8.83):
//   - acquire(): SET key owner EX seconds NX; true: ok, false: held. Laravel takes whole seconds: the adapter
//     asks for ceil(ttl_ms / 1000) (--seconds to choose), never 0, which Laravel would turn into a SETNX
//     without expiry.
//   - release(): the compare-and-delete script; false: not_held.
//   - extend: Laravel 8's lock has no refresh: not supported (fail, reason error).
//   - a RedisException: definite when the connect was refused, else indeterminate (a read timeout after the
//     command was sent). PhpRedisConnection reconnects itself after "went away"; a connect that failed is tried
//     again at the next request. No validity and no loss notice: the library computes and gives neither.

require_once 'Illuminate/Cache/autoload.php';
require_once 'Illuminate/Redis/autoload.php';
require_once __DIR__ . '/proto.php';

use Illuminate\Cache\RedisStore;
use Illuminate\Redis\Connectors\PhpRedisConnector;

// The one connection a RedisStore asks its Redis factory for (Laravel's RedisManager without the application).
final class LcOneConnection implements \Illuminate\Contracts\Redis\Factory
{
    public function __construct(private $connection)
    {
    }

    public function connection($name = null)
    {
        return $this->connection;
    }
}

final class LcLaravel
{
    private ?RedisStore $store = null;
    /** @var array<string, \Illuminate\Contracts\Cache\Lock> */
    private array $locks = [];

    public function __construct(private array $opt)
    {
    }

    private function open(array $req): ?array
    {
        [$host, $port] = lc_host_port($req['nodes'][0]);
        $t = ($this->opt['timeout-ms'] ?: ($req['op_timeout_ms'] ?? 500)) / 1000.0;
        $rt = ($this->opt['read-timeout-ms'] ?: ($req['op_timeout_ms'] ?? 500)) / 1000.0;
        $config = ['host' => $host, 'port' => $port, 'timeout' => $t, 'read_timeout' => $rt,
                   'prefix' => 'laravel_database_'];
        try {
            $conn = (new PhpRedisConnector())->connect($config, []);
        } catch (\RedisException $e) { // the connect failed: nothing was sent
            return lc_fail(LC_UNREACHABLE, lc_describe($e));
        }
        // One command per op (plus Laravel's reconnect after "went away"): within the harness's own deadline of
        // op_timeout x nodes + 1 s, so no hello.
        $this->store = new RedisStore(new LcOneConnection($conn), 'laravel_cache');
        return null;
    }

    private function keys(string $key): array
    {
        return ['laravel_database_laravel_cache:' . $key];
    }

    private function failure(\RedisException $e): array
    {
        return lc_not_sent($e) ? lc_fail(LC_UNREACHABLE, lc_describe($e)) : lc_indeterminate(LC_TIMEOUT, lc_describe($e));
    }

    public function handle(array $req): array
    {
        if ($this->store === null && ($err = $this->open($req)) !== null) {
            return $err;
        }
        $key = (string) $req['key'];
        try {
            switch ($req['op']) {
                case 'acquire':
                    $seconds = $this->opt['seconds'] ?: (int) max(1, ceil(($req['ttl_ms'] ?? 1000) / 1000.0));
                    $lock = $this->store->lock($key, (int) $seconds);
                    if (!$lock->acquire()) {
                        return lc_fail(LC_HELD, 'RedisLock::acquire() returned false');
                    }
                    $this->locks[$key] = $lock;
                    return lc_ok(['keys' => $this->keys($key)]);
                case 'release':
                    $lock = $this->locks[$key] ?? null;
                    if ($lock === null) {
                        return lc_fail(LC_NOT_HELD, 'not held by this client');
                    }
                    unset($this->locks[$key]);
                    return $lock->release() ? lc_ok() : lc_fail(LC_NOT_HELD, 'RedisLock::release() returned false');
                case 'extend':
                    return lc_fail(LC_ERROR, 'Laravel 8 cache locks have no extend (refresh)');
            }
        } catch (\RedisException $e) {
            return $this->failure($e);
        }
        return lc_fail(LC_ERROR, 'unknown op ' . $req['op']);
    }
}

$opt = lc_flags($argv, ['seconds' => 0, 'timeout-ms' => 0, 'read-timeout-ms' => 0], 'laravel adapter');
$a = new LcLaravel($opt);
lc_serve([$a, 'handle']);
