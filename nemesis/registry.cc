#include "nemesis/nemesis.h"

// A new nemesis is one file in nemesis/ that defines its factory and its entry, plus its line here.

namespace lockcheck {

const Registry<NemesisInfo>& nemesis_registry() {
  static const Registry<NemesisInfo> registry = {
      LOCKCHECK_ENTRY(NemesisInfo, partition_nemesis),    LOCKCHECK_ENTRY(NemesisInfo, delay_nemesis),
      LOCKCHECK_ENTRY(NemesisInfo, pause_nemesis),        LOCKCHECK_ENTRY(NemesisInfo, kill_nemesis),
      LOCKCHECK_ENTRY(NemesisInfo, clock_nemesis),        LOCKCHECK_ENTRY(NemesisInfo, client_pause_nemesis),
      LOCKCHECK_ENTRY(NemesisInfo, client_crash_nemesis), LOCKCHECK_ENTRY(NemesisInfo, failover_nemesis),
      LOCKCHECK_ENTRY(NemesisInfo, leader_partition_nemesis), LOCKCHECK_ENTRY(NemesisInfo, power_loss_nemesis),
  };
  return registry;
}

std::unique_ptr<Nemesis> make_nemesis(const std::string& name) {
  const auto colon = name.find(':');
  const std::string base = name.substr(0, colon);
  const NemesisInfo* n = nemesis_registry().find(base);
  if (!n) return nullptr;
  auto nemesis = n->make();
  if (colon != std::string::npos && !nemesis->select_mode(name.substr(colon + 1))) return nullptr;
  return nemesis;
}

}  // namespace lockcheck
