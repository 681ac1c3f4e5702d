// The `docker` cluster backend: every node (and Sentinel) of any server kind runs in a container with its own
// address on a private bridge network of its run, as in Jepsen's docker environment. Selected with
// `--cluster docker`. Each member listens on its server kind's usual ports (ServerPort::default_port) in its own
// container; the image (docker/node_image.h) holds the kind's programs (ImageNeeds), iptables and the shims.
//
// The backend is the Remote seam's docker side (cluster/remote.h: a command is `docker exec CONTAINER ARGV`, a
// file goes with `docker cp`) under the one implementation of starting, faulting and tearing down
// (cluster/server_cluster.h, which describes the members' folders and the faults; the peer network is
// cluster/host_firewall.h): each container is a host, as an ssh host is, whose first process only waits (`sleep
// infinity` under the engine's init); the server runs in it, started by the same command as on an ssh host.
//
// What a run creates, all labelled lockcheck.run=<run id> (plus lockcheck.owner-pid / lockcheck.owner-host,
// so that `lockcheck clean` can tell a dead run's leftovers from a live run's):
//   network    lockcheck-<run id>           a bridge with a subnet the engine picked, pinned so that each
//                                           container keeps its address (n1 at .11, n2 at .12, ..., s1 at .101)
//   containers lockcheck-<run id>-n1 ...    data nodes (image docker/node_image.h, built offline), with
//                                           CAP_NET_ADMIN for the iptables chain of cuts in their namespace
//              lockcheck-<run id>-s1 ..s3   Sentinels (replicated topology only; no CAP_NET_ADMIN: a node <->
//                                           Sentinel cut is the node's rules, Sentinel <-> Sentinel cuts are not
//                                           supported)
// Inside each container, /lockcheck/lockcheck-<run id>/<node>/ holds its config, clock file, data and log (the
// container's own layer: a restarted process finds what it kept). The logs are fetched into <run_dir>/nodes/ at
// stop, before the containers are removed.
// Delays between nodes are not supported (they need tc netem, which the image does not have): set_delay throws
// ClusterError for them. Client <-> node links go through the harness's TCP fault proxy, as on every backend.
//
// Engine calls are the docker CLI (argv vectors through docker/docker_cli.h), each with a bounded timeout.
// The host reaches the containers' addresses directly over the bridge (Linux; not Docker Desktop's VM).
// Thread-safety: RemoteCluster's (one internal mutex). Not for use from inside a signal handler.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "cluster/server_cluster.h"
#include "core/cluster.h"
#include "docker/docker_cli.h"

namespace lockcheck {

// Label keys on everything a run creates.
constexpr const char* kDockerRunLabel = "lockcheck.run";
constexpr const char* kDockerOwnerPidLabel = "lockcheck.owner-pid";
constexpr const char* kDockerOwnerHostLabel = "lockcheck.owner-host";

struct DockerClusterOptions {
  std::string docker_path;  // the docker client; empty: `docker` on PATH
  // Use this image instead of building one (e.g. from docker/Dockerfile.redis7). It must provide the paths
  // of docker/node_image.h and the server kind's programs at their ImageNeeds paths (/usr/sbin/iptables-restore,
  // /usr/sbin/iptables, /usr/lib/lockcheck/libclockshim.so, and sh, sleep, cat, rm, mkdir, dd, tail, grep, env,
  // setsid on PATH). Empty: build (or reuse) the offline image.
  std::string image;
  std::string iptables = "iptables";                // copied into the image (resolved on PATH)
  std::chrono::milliseconds engine_timeout{60000};  // bound on any one docker call (run, exec, cp, rm, ...)
  std::chrono::seconds build_timeout{300};          // bound on building the image
};

class DockerCluster final : public ServerCluster {
 public:
  // Nothing is started yet. setup.run_dir is the run's results folder (it and its nodes/ are created if missing);
  // the run id is its last path component (sanitised) plus a random suffix. setup.call_timeout is replaced by
  // options.engine_timeout.
  DockerCluster(ServerRun server, ClusterSetup setup, DockerClusterOptions options = {});
  ~DockerCluster() override;  // stop()

  // start() checks the engine (ClusterError "no Docker engine answered: ..." when it does not), ensures the image,
  // creates the network and the containers, then starts the servers as RemoteCluster does. stop() fetches the
  // logs, then removes every container, the network and any volume of the run.

  const std::string& network_name() const { return network_; }
  std::string container_name(const std::string& node_name) const;  // "n1" -> lockcheck-<run id>-n1
  const std::string& image_tag() const { return image_tag_; }      // set by start()

 private:
  DockerCluster(ServerRun server, ClusterSetup setup, DockerClusterOptions options, std::string run_id);
  void provision() override;             // engine, image, network, containers
  void unprovision() noexcept override;  // removes what is labelled with the run id
  void create_network();
  void run_container(size_t h);
  std::vector<std::string> labels() const;

  const DockerClusterOptions docker_options_;
  const docker::DockerCli cli_;
  std::string network_;
  std::string image_tag_;
  bool engine_answered_ = false;  // start() got past the engine check: there may be something to remove
};

// True when a Docker engine answers `docker version` within a few seconds. Never throws.
bool docker_engine_available();

// `lockcheck clean`: removes the containers, networks and volumes labelled lockcheck.run whose owning process
// is gone (a run killed with SIGKILL); leaves those of a run still alive on this host, and those without an
// owner label (brought up by hand from docker/compose-*.yml). Writes one line per removed or kept object. Returns an
// exit status: 0 when nothing is left behind that it should have removed (also when there was nothing), 3 when the
// engine did not answer or a removal failed.
int docker_clean(std::ostream& out);

}  // namespace lockcheck
