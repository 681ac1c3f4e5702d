// The grid of the server contract (tests/server_contract_test.cc): every server kind of the registry on every
// backend, and the ctest labels and resource locks of each (tests/ctest_labels.cc writes them): the kind's label
// (ServerSpec::test_label), and the backend's label and lock.
#pragma once

#include <cctype>
#include <ostream>
#include <string>
#include <vector>

#include "locks/lock_client.h"
#include "servers/registry.h"

namespace lockcheck {
namespace testing_util {

struct ContractParam {
  std::string kind;
  std::string backend;  // local, docker, ssh
};

inline const std::vector<std::string>& contract_backends() {
  static const std::vector<std::string> b = {"local", "docker", "ssh"};
  return b;
}

inline std::vector<ContractParam> contract_params() {
  std::vector<ContractParam> out;
  for (const auto& e : server_registry()) {
    for (const auto& b : contract_backends()) out.push_back({e.name, b});
  }
  return out;
}

// The lock contract's grid (tests/lock_contract_test.cc): every lock of the registry that names the protocol it
// speaks (not `external`, which speaks what its client does), on every server kind that serves that protocol,
// with the kind's options that make it serve it (Redis' topology for Sentinel and Cluster locks).
struct LockContractParam {
  std::string kind;
  std::string lock;
  nlohmann::json server_opts;
};

inline std::vector<LockContractParam> lock_contract_params() {
  std::vector<LockContractParam> out;
  for (const auto& a : lock_registry()) {
    if (std::string(a.protocol) == "*") continue;
    for (const auto& e : server_registry()) {
      nlohmann::json opts = e.spec->options_serving(a.protocol);
      if (!opts.is_null()) out.push_back({e.name, a.name, std::move(opts)});
    }
  }
  return out;
}

// How gtest prints a parameter (ctest -N, a failure): "redis: single-failover {"topology":"replicated"}".
inline void PrintTo(const LockContractParam& p, std::ostream* os) {
  *os << p.kind << ": " << p.lock << " " << p.server_opts.dump();
}

// The gtest parameter name: "redis_single_failover" (gtest takes letters, digits and _ only).
inline std::string lock_contract_param_name(const LockContractParam& p) {
  std::string name = p.kind + "_" + p.lock;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

// The gtest parameter name: "redis_local".
inline std::string contract_param_name(const ContractParam& p) { return p.kind + "_" + p.backend; }

// ctest's LABELS and RESOURCE_LOCK for kind on backend: the kind's label, "docker" or "ssh" for those backends;
// a Docker test holds the engine, an SSH test the test bed (one bridge, one address range), a heavy kind's test the
// "ensemble" lock (ServerSpec::heavy_tests).
struct CtestProperties {
  std::vector<std::string> labels, locks;
};
inline CtestProperties contract_properties(const std::string& kind, const std::string& backend) {
  CtestProperties p;
  const ServerSpec* spec = find_server_spec(kind);
  if (spec) p.labels.push_back(spec->test_label());
  if (backend == "docker") {
    p.labels.push_back("docker");
    p.locks.push_back("docker_engine");
  }
  if (backend == "ssh") {
    p.labels.push_back("ssh");
    p.locks.push_back("ssh_testbed");
  }
  if (spec && spec->heavy_tests()) p.locks.push_back("ensemble");
  return p;
}

}  // namespace testing_util
}  // namespace lockcheck
