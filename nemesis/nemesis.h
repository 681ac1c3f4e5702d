// Fault injection, as in Jepsen's nemesis protocol: setup, invoke (apply a fault or heal), teardown (undo
// every fault still in force; must run at the end of every run, also on error, SIGINT and SIGTERM).
// Every fault and heal is recorded in the history as an op of process kNemesis (invoke, then ok or info)
// whose value says what was done to which node, in this shape (the report and the checkers rely on it):
//   {"fault": "partition", "phase": "start", "targets": ["n1","n2"], "detail": {...}}
//   {"fault": "partition", "phase": "stop",  "targets": ["n1","n2"]}
// fault: partition, delay, pause, kill, clock, client-pause, failover, ...; phase "start" applies a fault,
// "stop" heals it (a fault period for the report runs from a start's completion to the next stop of the same
// fault); targets: node names ("n1") or client processes ("p3"). The op's f names the action itself
// ("partition", "heal", "pause", "resume", "kill", "restart", "clock-bump", "clock-reset", ...).
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "harness/cluster.h"
#include "harness/config.h"
#include "harness/history.h"

namespace lockcheck {

struct NemesisEnv {
  const RunConfig& config;
  Cluster& cluster;
  HistoryWriter& history;
};

class Nemesis {
 public:
  virtual ~Nemesis() = default;
  virtual std::string name() const = 0;
  virtual void setup(NemesisEnv& env) { (void)env; }
  // Applies op (an invoke of process kNemesis whose f this nemesis handles); returns its completion.
  virtual Op invoke(NemesisEnv& env, const Op& op) = 0;
  // Undoes every fault still in force. Never throws.
  virtual void teardown(NemesisEnv& env) noexcept = 0;
};

struct NemesisInfo {
  const char* name;
  const char* description;
  std::unique_ptr<Nemesis> (*make)();
};
// The registry (nemesis/registry.cc): one line per nemesis. "none" is not in it: it means an empty list.
const std::vector<NemesisInfo>& nemesis_registry();
std::unique_ptr<Nemesis> make_nemesis(const std::string& name);  // nullptr when unknown

}  // namespace lockcheck
