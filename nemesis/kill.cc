// Nemesis `kill`: SIGKILL of one or more data nodes, then a restart after --restart-delay-ms (0: at once, the
// "crash and fast restart" of Kleppmann's second scenario). The restarted node runs with the run's persistence
// mode: with none it comes back empty and has forgotten every lock it granted; with AOF it replays its log, all
// of it: SIGKILL ends the process, not the machine, so every byte Redis passed to write() is still in the page
// cache and aof-everysec keeps as much as aof-always. What a machine's power loss would drop is the power-loss
// nemesis (nemesis/power_loss.cc). A restart delay longer than the TTL is the fix the Redlock article
// proposes: the node returns only after every lock it knew has expired anyway. Modes: one, minority, majority,
// all (nemesis/node_fault.h); holder targeting kills nodes that hold the current key.
// The fault period is the time the nodes are down: its stop op is the restart, restart_delay_ms after the
// kill (nemesis/node_fault.h, RestartFault, shared with power-loss).
#include "nemesis/node_fault.h"

namespace lockcheck {

namespace {

class Kill : public RestartFault {
 public:
  std::string name() const override { return "kill"; }
  // Lock-state timing: while a holder's lock is live, early in its lease (Kleppmann's crash-and-fast-restart:
  // the node comes back, empty without persistence, while that lease still runs, and grants the lock again). The
  // restart delay stays --restart-delay-ms: a longer delay is the fix under test, not a timing.
  TimingRule timing_rule(const FaultPlan&) const override {
    return {TimingTrigger::kHeldEarly, false, "kill while a holder's lock is live, early in its lease"};
  }

 protected:
  std::string start_f() const override { return "kill"; }
  Ability fault_ability() const override { return Ability::kKill; }
  void apply(NemesisEnv& env, size_t n) override { env.cluster.kill(n); }
};

}  // namespace

std::unique_ptr<Nemesis> make_kill_nemesis() { return std::make_unique<Kill>(); }

// This nemesis's line in the registry (nemesis/registry.cc): its name, what `lockcheck list` says of it, its factory.
NemesisInfo kill_nemesis() {
  return {"kill", "SIGKILL of nodes, restart after --restart-delay-ms with the run's persistence (modes as pause)",
          make_kill_nemesis};
}

}  // namespace lockcheck
