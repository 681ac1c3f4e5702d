#include "locks/adapters.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace lockcheck {

namespace {

using K = AdapterOptionKind;

// Options every go-redis based adapter takes (clients/internal/proto).
std::vector<AdapterOption> with_go_redis(std::vector<AdapterOption> own) {
  own.push_back(
      {"max_retries", "--max-retries", K::kInt, "go-redis MaxRetries per command (library default 3; -1: none)"});
  own.push_back({"redis_timeout_ms", "--redis-timeout-ms", K::kInt,
                 "go-redis dial/read/write timeout (default: --op-timeout-ms)"});
  own.push_back({"pool_size", "--pool-size", K::kInt, "go-redis PoolSize (0: library default)"});
  own.push_back({"dialer_retries", "--dialer-retries", K::kInt,
                 "go-redis DialerRetries, 100 ms apart (0: library default 5; a dead node then times out)"});
  return own;
}

// Options both ZooKeeper adapters take (clients/kazoo, clients/curator): one session per adapter, its lock's
// blocking wait, and which of the client's states counts as the loss of the lock.
std::vector<AdapterOption> with_zookeeper_session(std::vector<AdapterOption> own) {
  own.insert(own.begin(),
             {{"wait_ms", "--wait-ms", K::kInt,
               "0 (default): a try (the lock node is deleted if another is first); N: wait up to N ms for the holder"},
              {"lost_only", "--lost-only", K::kBool,
               "true: write `lost` only on LOST (the session expired), not already on SUSPENDED (connection lost)"},
              {"session_timeout_ms", "--session-timeout-ms", K::kInt,
               "the session timeout asked for (default: --ttl-ms; the server clamps it to its min/maxSessionTimeout)"},
              {"connect_timeout_ms", "--connect-timeout-ms", K::kInt,
               "how long the first request waits for a session (default: --op-timeout-ms x the number of nodes)"}});
  return own;
}

std::string kind_name(K k) {
  return k == K::kInt ? "an integer" : k == K::kFloat ? "a number" : k == K::kBool ? "true or false" : "a choice";
}

std::string known_keys(const LockAdapter& a) {
  std::string s;
  for (const auto& o : a.options) s += std::string(s.empty() ? "" : ", ") + o.key;
  return s;
}

// A --lock-opt value arrives as a string ("3", "true"); config.json and matrix entries give JSON values.
nlohmann::json as_json(const nlohmann::json& v) {
  if (!v.is_string()) return v;
  try {
    return nlohmann::json::parse(v.get<std::string>());
  } catch (const nlohmann::json::exception&) {
    return v;
  }
}

}  // namespace

const Registry<LockAdapter>& lock_adapters() {
  static const Registry<LockAdapter> registry = {
      {"redsync", "github.com/go-redsync/redsync/v4 (go-redis v9 pools)", "v4.18.1 (go-redis v9.23.0)", "redsync", "",
       "go",
       with_go_redis({
           {"tries", "--tries", K::kInt, "WithTries: attempts per acquire (adapter default 1; library default 32)"},
           {"retry_delay_ms", "--retry-delay-ms", K::kInt, "WithRetryDelay (0: the library's random 50-250 ms)"},
           {"drift_factor", "--drift-factor", K::kFloat, "WithDriftFactor (library default 0.01)"},
           {"timeout_factor", "--timeout-factor", K::kFloat, "WithTimeoutFactor: per-try context (default 0.05 x TTL)"},
           {"setnx_on_extend", "--setnx-on-extend", K::kBool, "WithSetNXOnExtend: extend re-creates an expired lock"},
           {"fail_fast", "--fail-fast", K::kBool, "WithFailFast: answer as soon as a quorum agrees"},
           {"shuffle_pools", "--shuffle-pools", K::kBool, "WithShufflePools"},
       }),
       "library: go-redsync/redsync v4 (Go, Redlock over go-redis v9), adapter clients/redsync",
       "Redlock's: amnesia on a fast restart, clock jumps, pauses past the validity; WithSetNXOnExtend re-creates "
       "an expired lock on extend"},
      {"redislock", "github.com/bsm/redislock (go-redis v9, one node)", "v0.9.4 (go-redis v9.23.0)", "redislock", "",
       "go",
       with_go_redis({
           {"retry_count", "--retry-count", K::kInt, "LimitRetry(LinearBackoff) retries (library default: NoRetry)"},
           {"retry_backoff_ms", "--retry-backoff-ms", K::kInt, "LinearBackoff between retries (default 100)"},
           {"obtain_timeout_ms", "--obtain-timeout-ms", K::kInt,
            "Obtain's context deadline (0: the TTL, as the library)"},
       }),
       "library: bsm/redislock (Go, one node over go-redis v9), adapter clients/redislock",
       "one node is a single point of failure; no validity of its own: a paused holder outlives its lease"},
      {"redis-py",
       "redis.lock.Lock of redis-py (Debian python3-redis, one node)",
       "4.3.4 (Debian bookworm)",
       "redis-py.py",
       "/usr/bin/python3",
       "python3-redis",
       {
           {"blocking_timeout_s", "--blocking-timeout-s", K::kFloat,
            "Lock(blocking_timeout): retry this long (default: one try)"},
           {"sleep_s", "--sleep-s", K::kFloat, "Lock(sleep) between blocking tries (default 0.1)"},
           {"socket_timeout_ms", "--socket-timeout-ms", K::kInt, "Redis(socket_timeout) (default: --op-timeout-ms)"},
           {"retry_on_timeout", "--retry-on-timeout", K::kBool, "Redis(retry_on_timeout=True)"},
       },
       "library: redis.lock.Lock of redis-py (Python, one node, Debian python3-redis), adapter "
       "clients/redis-py",
       "one node is a single point of failure; no validity of its own: a paused holder outlives its lease"},
      // rueidislock (Go) and the PHP libraries (Debian packages, clients/php/).
      {"rueidislock", "github.com/redis/rueidis/rueidislock (rueidis client, one node)", "v1.0.80", "rueidislock", "",
       "go",
       {
           {"key_majority", "--key-majority", K::kInt,
            "KeyMajority: keys of KeyMajority*2-1 to hold, all on the node (library default 2)"},
           {"key_validity_ms", "--key-validity-ms", K::kInt,
            "KeyValidity, extended in the background (default: --ttl-ms; library default 5000)"},
           {"extend_interval_ms", "--extend-interval-ms", K::kInt, "ExtendInterval (library default KeyValidity/2)"},
           {"try_next_after_ms", "--try-next-after-ms", K::kInt,
            "TryNextAfter: each key's acquire timeout (library default 20)"},
           {"no_loop_tracking", "--no-loop-tracking", K::kBool, "NoLoopTracking (CLIENT TRACKING NOLOOP)"},
           {"fallback_setpx", "--fallback-setpx", K::kBool, "FallbackSETPX: SET NX PX instead of PXAT"},
           {"disable_cache", "--disable-cache", K::kBool,
            "ClientOption.DisableCache: no client-side caching, so no invalidation notices"},
           {"dial_timeout_ms", "--dial-timeout-ms", K::kInt, "ClientOption.Dialer.Timeout (default: --op-timeout-ms)"},
           {"conn_write_timeout_ms", "--conn-write-timeout-ms", K::kInt,
            "ClientOption.ConnWriteTimeout (library default 10000)"},
       },
       "library: rueidislock of redis/rueidis (Go, KeyMajority of 2*KeyMajority-1 keys on one node, background "
       "extension, context cancelled on loss), adapter clients/rueidislock",
       "one node is a single point of failure; SET PXAT takes the client's clock, so a jump of the node's clock "
       "expires the keys early"},
      {"symfony-lock", "Symfony Lock RedisStore (Debian php-symfony-lock, phpredis, one node)",
       "5.4.53 (Debian bookworm; php-redis 5.3.7)", "php/symfony-lock.php", "/usr/bin/php", "php-symfony-lock",
       {
           {"initial_ttl_s", "--initial-ttl-s", K::kFloat,
            "RedisStore initialTtl: the TTL save() writes before refresh(ttl) (library default 300)"},
           {"timeout_ms", "--timeout-ms", K::kInt, "phpredis connect timeout (default: --op-timeout-ms)"},
           {"read_timeout_ms", "--read-timeout-ms", K::kInt, "phpredis read timeout (default: --op-timeout-ms)"},
       },
       "library: Symfony Lock 5.4 RedisStore (PHP, one node, Debian php-symfony-lock), adapter "
       "clients/php/symfony-lock.php",
       "one node is a single point of failure; release() cannot tell a lapsed lock (Lock::isExpired() can)"},
      {"symfony-combined",
       "Symfony Lock CombinedStore + ConsensusStrategy over RedisStores (Debian php-symfony-lock, phpredis, all nodes)",
       "5.4.53 (Debian bookworm; php-redis 5.3.7)", "php/symfony-combined.php", "/usr/bin/php", "php-symfony-lock",
       {
           {"initial_ttl_s", "--initial-ttl-s", K::kFloat,
            "RedisStore initialTtl: the TTL save() writes before refresh(ttl) (library default 300)"},
           {"timeout_ms", "--timeout-ms", K::kInt, "phpredis connect timeout per node (default: --op-timeout-ms)"},
           {"read_timeout_ms", "--read-timeout-ms", K::kInt,
            "phpredis read timeout per node (default: --op-timeout-ms)"},
       },
       "library: Symfony Lock 5.4 CombinedStore with ConsensusStrategy (PHP's Redlock, Debian php-symfony-lock), "
       "adapter clients/php/symfony-combined.php",
       "Redlock's: amnesia on a fast restart, clock jumps; the stores are written one after the other"},
      {"laravel",
       "Illuminate\\Cache\\RedisLock (Debian php-illuminate-cache + php-illuminate-redis, phpredis, one node)",
       "8.83.26 (Debian bookworm; php-redis 5.3.7)", "php/laravel.php", "/usr/bin/php", "php-illuminate-cache",
       {
           {"seconds", "--seconds", K::kInt,
            "the lock's seconds (default: ceil(--ttl-ms / 1000); Laravel takes whole seconds)"},
           {"timeout_ms", "--timeout-ms", K::kInt, "phpredis connect timeout (default: --op-timeout-ms)"},
           {"read_timeout_ms", "--read-timeout-ms", K::kInt, "phpredis read timeout (default: --op-timeout-ms)"},
       },
       "library: Laravel 8 cache lock, Illuminate\\Cache\\RedisLock (PHP, one node, Debian php-illuminate-cache), "
       "adapter clients/php/laravel.php",
       "one node is a single point of failure; whole seconds only, no extend, no validity: a paused holder outlives "
       "its lease"},
      {"etcd",
       "go.etcd.io/etcd/client/v3 concurrency.Mutex over a Session (etcd's own lock; needs --server etcd)",
       "v3.5.36 (against Debian's etcd-server 3.4.23)",
       "etcd",
       "",
       "go",
       {
           {"wait_ms", "--wait-ms", K::kInt,
            "0 (default): Mutex.TryLock; N: Mutex.Lock waiting up to N ms for the holder (the blocking clients of Jepsen's etcd 3.4.3 analysis)"},
           {"dial_timeout_ms", "--dial-timeout-ms", K::kInt, "clientv3 DialTimeout (default: --op-timeout-ms)"},
           {"client", "", K::kProgram,
            "3.5 (default): client v3.5.36; 3.4: clientv3 of etcd 3.4.3, the era of Jepsen's etcd analysis (no TryLock: needs wait_ms; "
            "its Lock does not re-read its key after the wait), adapter etcd-3.4 from clients/etcd343",
            {{"3.5", "etcd"}, {"3.4", "etcd-3.4"}}},
           {"lock_rpc", "--lock-rpc", K::kBool,
            "true: acquire with the server's Lock RPC (v3lock, what Jepsen's jetcd client called: the server runs "
            "the Mutex); client=3.4 only, needs wait_ms"},
           {"trust_wait", "--trust-wait", K::kBool,
            "true: after a blocking acquire answer ok as the library did, without renewing the lease or reading the "
            "key once more, and without a validity (the clients of Jepsen's etcd analysis; default: renew once, and a lease gone during the wait is not_held); "
            "needs wait_ms"},
       },
       "library: etcd's concurrency.Mutex (Go, client v3.5 against an etcd 3.4 cluster), adapter clients/etcd; "
       "lease TTL = --ttl-ms rounded up to whole seconds (etcd's unit; the server raises it to its 2 s minimum); "
       "token = the lock key's create revision",
       "a lease, not a fence: a holder paused past its TTL (2 s at least) loses the lock without knowing; only the "
       "revision as a fencing token (or a transaction comparing the lock key) protects the resource",
       "etcd-v3",
       [](const nlohmann::json& o) -> std::string {
         const bool v34 = o.contains("client") && (o["client"] == "3.4" || o["client"] == 3.4);
         const bool waits = o.contains("wait_ms") && o["wait_ms"].is_number_integer() && o["wait_ms"].get<int64_t>() > 0;
         const bool rpc = o.contains("lock_rpc") && o["lock_rpc"] == true;
         if (rpc && !v34) return "lock_rpc needs client=3.4 (the 3.5 client module has no Lock RPC stub)";
         if (rpc && !waits) return "lock_rpc needs wait_ms > 0 (the Lock RPC blocks until the lock is held)";
         if (v34 && !waits) return "client=3.4 needs wait_ms > 0 (its Mutex has no TryLock; that came with 3.5)";
         if (o.contains("trust_wait") && o["trust_wait"] == true && !waits) return "trust_wait needs wait_ms > 0";
         return "";
       }},
      // ZooKeeper's two most used lock recipes (Debian packages; --server zookeeper).
      {"kazoo", "kazoo.recipe.lock.Lock (Debian python3-kazoo; needs --server zookeeper)", "2.8.0 (Debian bookworm)",
       "kazoo-lock.py", "/usr/bin/python3", "python3-kazoo", with_zookeeper_session({}),
       "library: kazoo's Lock (Python, an ephemeral sequential node per contender, one session per adapter), adapter "
       "clients/kazoo; validity = the negotiated session timeout from the op's last answered request; token = the "
       "lock node's czxid; lost on SUSPENDED (lost_only: on LOST, which kazoo says only after reconnecting)",
       "a session, not a fence: a holder paused past its session timeout loses the lock without knowing; acquire() "
       "answers False (as if taken) when its retries run out on a dropped connection; release() answers True for a "
       "node its expired session already lost",
       "zk"},
      {"curator",
       "org.apache.curator.framework.recipes.locks.InterProcessMutex (Debian libcurator-recipes-java, JDK; needs "
       "--server zookeeper)",
       "5.4.0 (Debian bookworm; ZooKeeper client 3.8.0, OpenJDK 17)", "curator", "",
       "default-jdk-headless, libcurator-recipes-java",
       with_zookeeper_session({
           {"retries", "--retries", K::kInt,
            "RetryNTimes(N, 100 ms) for each ZooKeeper call (adapter default 0: the op's bound is the harness's)"},
           {"expiration_percent", "--expiration-percent", K::kInt,
            "simulatedSessionExpirationPercent, 1-100: LOST is simulated this share of the session timeout after "
            "SUSPENDED (library default 100)"},
       }),
       "library: Apache Curator's InterProcessMutex (Java, a protected ephemeral sequential node, one session per "
       "adapter JVM), adapter clients/curator; validity, token and lost as kazoo's, LOST also simulated by Curator "
       "a session timeout after SUSPENDED",
       "a session, not a fence: a holder paused past its session timeout loses the lock without knowing; release() "
       "swallows the NoNode of a node its expired session already lost",
       "zk",
       [](const nlohmann::json& o) -> std::string {
         if (o.contains("expiration_percent") && o["expiration_percent"].is_number_integer()) {
           const int64_t p = o["expiration_percent"].get<int64_t>();
           if (p < 1 || p > 100) return "expiration_percent must be 1 to 100 (Curator's own range)";
         }
         return "";
       }},
  };
  return registry;
}

const LockAdapter* find_lock_adapter(const std::string& name) { return lock_adapters().find(name); }

std::string adapters_dir() {
  if (const char* env = std::getenv("LOCKCHECK_CLIENTS_DIR"); env && *env) return env;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "build/clients";
  return (exe.parent_path() / "clients").string();
}

std::string adapter_program(const LockAdapter& a) { return adapters_dir() + "/" + a.program; }

std::string adapter_program(const LockAdapter& a, const nlohmann::json& opts) {
  std::string program = a.program;
  if (opts.is_object()) {
    for (const auto& o : a.options) {
      if (o.kind != K::kProgram || !opts.contains(o.key)) continue;
      const nlohmann::json& v = opts.at(o.key);
      const std::string choice = v.is_string() ? v.get<std::string>() : v.dump();  // 3.4 may come as a number
      std::string known;
      bool found = false;
      for (const auto& [value, file] : o.programs) {
        known += (known.empty() ? "" : ", ") + value;
        if (value == choice) program = file, found = true;
      }
      if (!found) {
        throw std::invalid_argument("lock option '" + std::string(o.key) + "' of " + a.name + ": '" + choice +
                                    "' is not one of " + known);
      }
    }
  }
  return adapters_dir() + "/" + program;
}

std::vector<std::string> adapter_argv(const LockAdapter& a, const nlohmann::json& opts) {
  std::vector<std::string> argv;
  if (*a.interpreter) argv.push_back(a.interpreter);
  argv.push_back(adapter_program(a, opts.is_object() ? opts : nlohmann::json()));
  if (opts.is_null()) return argv;
  if (!opts.is_object()) throw std::invalid_argument("lock options must be a JSON object of KEY: VALUE");
  if (a.check) {
    nlohmann::json values = nlohmann::json::object();
    for (auto it = opts.begin(); it != opts.end(); ++it) values[it.key()] = as_json(it.value());
    if (const std::string why = a.check(values); !why.empty()) throw std::invalid_argument(why);
  }
  for (auto it = opts.begin(); it != opts.end(); ++it) {
    const AdapterOption* opt = nullptr;
    for (const auto& o : a.options) {
      if (it.key() == o.key) opt = &o;
    }
    if (!opt) {
      throw std::invalid_argument("lock option '" + it.key() + "' is not known to " + a.name +
                                  " (known: " + known_keys(a) + ")");
    }
    const nlohmann::json v = as_json(it.value());
    const std::string bad =
        "lock option '" + it.key() + "' of " + a.name + ": " + it.value().dump() + " is not " + kind_name(opt->kind);
    switch (opt->kind) {
      case K::kProgram:
        break;  // chose the program above
      case K::kBool:
        if (!v.is_boolean()) throw std::invalid_argument(bad);
        if (v.get<bool>()) argv.push_back(opt->flag);
        break;
      case K::kInt:
        if (!v.is_number_integer()) throw std::invalid_argument(bad);
        argv.push_back(opt->flag);
        argv.push_back(std::to_string(v.get<int64_t>()));
        break;
      case K::kFloat:
        if (!v.is_number() || !std::isfinite(v.get<double>())) throw std::invalid_argument(bad);
        argv.push_back(opt->flag);
        argv.push_back(v.dump());
        break;
    }
  }
  return argv;
}

std::string join_command_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& arg : argv) {
    if (!line.empty()) line += ' ';
    line += '\'';
    for (char c : arg) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

}  // namespace lockcheck
