// Nemesis `power-loss`: a node loses its power. Its server process is SIGKILLed and, before it restarts, every write
// it had not made durable with fsync/fdatasync is dropped from its files (truncated to the length the last sync
// covered; files created since their directory's last fsync removed), as the power shim's journal says
// (cluster/power_loss.h). Under `kill` those bytes survive in the page cache; here they do not, so aof-everysec
// loses what it wrote since its last background fdatasync (up to about two seconds) and aof-always loses nothing
// it acknowledged. Restart after --restart-delay-ms; modes one, minority, majority, all and holder targeting as
// kill (nemesis/node_fault.h). The start op's detail says per node what was dropped ("dropped": bytes, files),
// measured from the journal and the files, never assumed.
#include "nemesis/node_fault.h"

#include "cluster/power_loss.h"

namespace lockcheck {

namespace {

class PowerLoss : public RestartFault {
 public:
  std::string name() const override { return "power-loss"; }
  // Lock-state timing: as kill, while a holder's lock is live, early in its lease: what the node had not synced
  // of that grant is lost, and the node is back (after --restart-delay-ms, unchanged) while the lease runs.
  TimingRule timing_rule(const FaultPlan&) const override {
    return {TimingTrigger::kHeldEarly, false, "power loss while a holder's lock is live, early in its lease"};
  }

 protected:
  std::string start_f() const override { return "power-loss"; }
  Ability fault_ability() const override { return Ability::kPowerLoss; }
  void apply(NemesisEnv& env, size_t n) override { (void)apply_and_say(env, n); }
  nlohmann::json apply_and_say(NemesisEnv& env, size_t n) override { return to_json(env.cluster.power_loss(n)); }
  std::string said_key() const override { return "dropped"; }
};

}  // namespace

// This nemesis's line in the registry (nemesis/registry.cc).
NemesisInfo power_loss_nemesis() {
  return {"power-loss",
          "SIGKILL of nodes dropping every write not fsynced (power shim), restart after --restart-delay-ms "
          "(modes as kill)",
          [] { return std::unique_ptr<Nemesis>(std::make_unique<PowerLoss>()); }};
}

}  // namespace lockcheck
