// Nemesis `pause`: SIGSTOP of one or more data nodes for the fault period, SIGCONT at its end
// (Cluster::pause / resume). A paused node holds its connections open and answers nothing: clients time out
// (info), and its keys expire on its wall clock while it sleeps, which it notices when it wakes. Modes: one,
// minority, majority, all (see nemesis/node_fault.h); holder targeting pauses nodes that hold the current key.
#include "nemesis/node_fault.h"

namespace lockcheck {

namespace {

class Pause : public NodeFault {
 public:
  std::string name() const override { return "pause"; }
  // Lock-state timing: at a grant, or, once the workload renews (an extend seen), at an extend's invoke: the
  // paused nodes then sit on the renewal in flight while the lock's TTL runs out (the extend/renewal race).
  TimingRule timing_rule(const FaultPlan&) const override {
    return {TimingTrigger::kAtGrant, true, "node pause at a grant, or at an extend's invoke where the workload renews"};
  }

 protected:
  std::string start_f() const override { return "pause"; }
  Ability fault_ability() const override { return Ability::kPause; }
  std::string stop_f() const override { return "resume"; }
  void apply(NemesisEnv& env, size_t n) override { env.cluster.pause(n); }
  void undo(NemesisEnv& env, size_t n) override { env.cluster.resume(n); }
};

}  // namespace

std::unique_ptr<Nemesis> make_pause_nemesis() { return std::make_unique<Pause>(); }

// This nemesis's line in the registry (nemesis/registry.cc): its name, what `lockcheck list` says of it, its factory.
NemesisInfo pause_nemesis() {
  return {"pause",
          "SIGSTOP then SIGCONT of nodes (modes one, minority, majority, all, leader, leader-or-all; NAME:MODE picks one, e.g. pause:all)",
          make_pause_nemesis};
}

}  // namespace lockcheck
