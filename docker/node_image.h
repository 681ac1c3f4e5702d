// The node image of the docker backend, built offline: no registry is needed (or reachable) because the image
// starts FROM scratch and holds only files copied from this host: redis-server (which Debian installs as
// redis-check-rdb, redis-server and redis-sentinel being symlinks to it), iptables (the xtables multi-binary,
// invoked as iptables and iptables-restore) with the xtables extensions its rules use, the clock shim, every shared
// library they load (found with ldd) and the dynamic loader; and the few tools the Remote seam's commands use
// inside a container (cluster/remote_cluster.h): a POSIX shell (dash, as /bin/sh), sleep, cat, rm, mkdir, dd,
// tail, grep, env and setsid; and etcd and etcdctl when the host has them (--server etcd). No package manager.
// With NodeImageInputs::require_zookeeper (--server zookeeper) it also holds this host's JRE (the JAVA_HOME that
// `java` resolves to: bin/java, lib/ and conf/, symlinks resolved, plus what ldd names for the libraries a
// member's JVM maps) and Debian's ZooKeeper jars at their own paths (zookeeper_classpath_jars: the classpath
// and the jars its manifests' Class-Path names); without it neither, so the Redis and etcd image does not grow.
//
// The image is tagged by a SHA-1 of everything that goes into it (each file's path, mode and bytes, and the
// Dockerfile): `lockcheck-redis:<12 hex>`. ensure_node_image() builds it only when the engine does not
// already have that tag, so the build is idempotent and cached; it also tags the result
// `lockcheck-redis:latest`, which the compose files in docker/ use. docker/README.md has the details.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "cluster/zookeeper_common.h"
#include "docker/docker_cli.h"

namespace lockcheck {
namespace docker {

// Where things are inside the image.
constexpr const char* kImageRedisServer = "/usr/bin/redis-server";
constexpr const char* kImageRedisSentinel = "/usr/bin/redis-sentinel";  // symlink to redis-server
constexpr const char* kImageIptables = "/usr/sbin/iptables";
constexpr const char* kImageIptablesRestore = "/usr/sbin/iptables-restore";
constexpr const char* kImageClockShim = "/usr/lib/lockcheck/libclockshim.so";
constexpr const char* kImagePowerShim = "/usr/lib/lockcheck/libpowershim.so";  // when NodeImageInputs::power_shim
// etcd (--server etcd) and etcdctl, from Debian's etcd-server and etcd-client on this host: in the image whenever
// the host has both (so that one image serves Redis and etcd runs), required when NodeImageInputs::require_etcd.
constexpr const char* kImageEtcd = "/usr/bin/etcd";
constexpr const char* kImageEtcdctl = "/usr/bin/etcdctl";
// java (--server zookeeper): a symlink to bin/java of the JRE copied at its host path (the launcher finds its
// JAVA_HOME from /proc/self/exe).
constexpr const char* kImageJava = "/usr/bin/java";
constexpr const char* kImageSleep = "/usr/bin/sleep";  // a container's first process: `sleep infinity`
// The tools copied from this host into /usr/bin (and dash as /bin/sh): what the remote scripts run.
// setsid: etcd does not daemonize; its start command puts it in a session of its own (cluster/etcd_remote.cc).
// stat and truncate: the power-loss nemesis (cluster/remote_cluster.cc, power_loss).
inline constexpr const char* kImageTools[] = {"sleep", "cat", "rm",  "mkdir", "dd",      "tail",
                                              "grep",  "env", "setsid", "stat", "truncate"};
// A minimal Sentinel config (port 26379, bind 0.0.0.0, protected-mode no, dir /tmp) that each container can
// rewrite in its own writable layer; the monitor line comes on the command line. For the compose files: the
// backend bind-mounts a config of its own instead, so that Sentinel's state lands in the run folder.
constexpr const char* kImageSentinelConf = "/etc/lockcheck/sentinel.conf";
constexpr const char* kImageLabel = "lockcheck.image";  // label on the image; value "node"

struct NodeImageInputs {
  std::string redis_server = "redis-server";   // a name looked up on PATH, or a path; its real file is copied
  std::string iptables = "iptables";           // likewise: an xtables-nft-multi or xtables-legacy-multi
  std::string clock_shim;                      // path of the clock shim shared library (REQUIRED, non-empty)
  std::string power_shim;                      // path of the power shim (cluster/powershim.c); empty: not in it
  std::string etcd = "etcd";                   // a name on PATH or a path; copied when found (with etcdctl)
  std::string etcdctl = "etcdctl";
  bool require_etcd = false;  // true: etcd or etcdctl missing is a ClusterError naming the Debian packages
  // true: the JRE of `java` and the jars of zookeeper_classpath go in (ClusterError naming the Debian packages
  // when either is missing); false: neither.
  bool require_zookeeper = false;
  std::string java = "java";                                        // a name on PATH or a path
  std::string zookeeper_classpath = zookeeper_default_classpath();
  std::string repository = "lockcheck-redis";  // the image name; the tag is the inputs' hash
};

struct ImageEntry {
  enum class Kind { kFile, kSymlink, kDir, kText };
  Kind kind = Kind::kFile;
  std::string dest;    // absolute path inside the image
  std::string source;  // kFile: the host file copied (symlinks resolved); kSymlink: the link's target;
                       // kText: the file's content
  unsigned mode = 0;   // permission bits (kFile, kDir, kText)
};

struct ImagePlan {
  std::vector<ImageEntry> entries;  // sorted by dest
  std::string dockerfile;           // the Dockerfile text
  std::string hash;                 // hex SHA-1 of the entries (with file contents) and the Dockerfile
  std::string tag;                  // repository + ":" + the first 12 hex digits of hash
  uint64_t total_bytes = 0;         // bytes of the files
};

// Resolves the inputs on this host, runs ldd over every binary and module, reads every file to hash it.
// Does not talk to the engine. Throws ClusterError naming what is missing (a binary, a library ldd cannot
// find, the clock shim).
ImagePlan plan_node_image(const NodeImageInputs& inputs);

// Writes the build context (rootfs/ and Dockerfile) of plan into dir, which must exist and be empty.
void write_build_context(const ImagePlan& plan, const std::string& dir);

struct NodeImage {
  std::string tag;                       // lockcheck-redis:<hash12>
  bool built = false;                    // false: the engine had it already (cache hit)
  std::chrono::milliseconds elapsed{0};  // time spent in ensure_node_image
};

// Returns the image for inputs, building it (in a temporary context directory that is removed afterwards)
// only when the engine lacks the tag. After a build it removes (without force) the images of older inputs,
// so that one image is kept, not one per Redis upgrade. Throws ClusterError when the engine or the build
// fails. Safe to call from concurrent runs: both may build; the tag names the same content either way.
NodeImage ensure_node_image(const DockerCli& cli, const NodeImageInputs& inputs,
                            std::chrono::seconds build_timeout = std::chrono::seconds(300));

}  // namespace docker
}  // namespace lockcheck
