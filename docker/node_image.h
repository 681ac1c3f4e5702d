// The node image of the docker backend, built offline: no registry is needed (or reachable) because the image
// starts FROM scratch and holds only files copied from this host: the server kind's programs and files (its
// ImageNeeds: cluster/server_spec.h; redis-server, etcd, a Java runtime and ZooKeeper's jars), iptables (the xtables
// multi-binary, invoked as iptables and iptables-restore) with the xtables extensions its rules use, the clock and
// power shims, every shared library they load (found with ldd) and the dynamic loader; and the few tools the Remote
// seam's commands use inside a container (cluster/remote.cc): a POSIX shell (dash, as /bin/sh), sleep, cat, rm,
// mkdir, dd, tail, grep, env and setsid. No package manager. A Java runtime (ImageNeeds::java) is this host's JRE
// (the JAVA_HOME that `java` resolves to: bin/java, lib/ and conf/, symlinks resolved, plus what ldd names for
// the libraries a JVM maps), linked as /usr/bin/java.
//
// Each server kind has an image of its own (ImageNeeds::repository: lockcheck-redis, lockcheck-etcd,
// lockcheck-zookeeper), so that one kind's image neither grows by another's programs nor is rebuilt when runs of
// both alternate. The image is tagged by a SHA-1 of everything that goes into it (each file's path, mode and
// bytes, and the Dockerfile): `<repository>:<12 hex>`. ensure_node_image() builds it only when the engine does
// not already have that tag, so the build is idempotent and cached; it also tags the result `<repository>:latest`
// (the compose files in docker/ use lockcheck-redis:latest). docker/README.md has the details.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "cluster/server_spec.h"
#include "docker/docker_cli.h"

namespace lockcheck {
namespace docker {

// Where things are inside the image.
constexpr const char* kImageIptables = "/usr/sbin/iptables";
constexpr const char* kImageIptablesRestore = "/usr/sbin/iptables-restore";
constexpr const char* kImageClockShim = "/usr/lib/lockcheck/libclockshim.so";
constexpr const char* kImagePowerShim = "/usr/lib/lockcheck/libpowershim.so";  // when NodeImageInputs::power_shim
// java (a server that runs on a Java runtime): a symlink to bin/java of the JRE copied at its host path (the
// launcher finds its JAVA_HOME from /proc/self/exe).
constexpr const char* kImageJava = "/usr/bin/java";
constexpr const char* kImageSleep = "/usr/bin/sleep";  // a container's first process: `sleep infinity`
// The tools copied from this host into /usr/bin (and dash as /bin/sh): what the remote scripts run.
// setsid: a server runs in a session of its own (cluster/remote.cc, start_process). stat and truncate: a power
// loss (cluster/server_cluster.cc, power_loss).
inline constexpr const char* kImageTools[] = {"sleep", "cat", "rm",  "mkdir", "dd",      "tail",
                                              "grep",  "env", "setsid", "stat", "truncate"};
constexpr const char* kImageLabel = "lockcheck.image";  // label on the image; value "node"

struct NodeImageInputs {
  std::string iptables = "iptables";  // a name looked up on PATH, or a path: an xtables-nft-multi or -legacy-multi
  std::string clock_shim;             // path of the clock shim shared library (REQUIRED, non-empty)
  std::string power_shim;             // path of the power shim (cluster/powershim.c); empty: not in it
  ImageNeeds server;                  // the server kind's programs, files and runtime, and the image's name
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
  std::string tag;                       // <repository>:<hash12>
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
