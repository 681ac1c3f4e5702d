#include "nemesis/nemesis.h"

// A new nemesis is one file in nemesis/ defining its factory, plus its declaration and its line here.

namespace lockcheck {

std::unique_ptr<Nemesis> make_partition_nemesis();
std::unique_ptr<Nemesis> make_delay_nemesis();
std::unique_ptr<Nemesis> make_pause_nemesis();
std::unique_ptr<Nemesis> make_kill_nemesis();
std::unique_ptr<Nemesis> make_clock_nemesis();
std::unique_ptr<Nemesis> make_client_pause_nemesis();
std::unique_ptr<Nemesis> make_failover_nemesis();
std::unique_ptr<Nemesis> make_client_crash_nemesis();

const std::vector<NemesisInfo>& nemesis_registry() {
  static const std::vector<NemesisInfo> registry = {
      {"partition", "cut links (modes isolate, halves, majority-ring, bridge, client-cut, client-split), then heal",
       make_partition_nemesis},
      {"delay", "latency + jitter on the links of a node, a client slot or all clients (modes node, client, all)",
       make_delay_nemesis},
      {"pause",
       "SIGSTOP then SIGCONT of nodes (modes one, minority, majority, all; NAME:MODE picks one, e.g. pause:all)",
       make_pause_nemesis},
      {"kill", "SIGKILL of nodes, restart after --restart-delay ms with the run's persistence (modes as pause)",
       make_kill_nemesis},
      {"clock", "jump node wall clocks by +-delta or flip them back and forth, then reset (modes bump, strobe)",
       make_clock_nemesis},
      {"client-pause", "the lock holder stops right after its acquire for 2x the TTL, then carries on (GC pause)",
       make_client_pause_nemesis},
      {"client-crash",
       "a client process dies without releasing (modes mid-acquire: between SETNX and EXPIRE, after-acquire, "
       "mid-release); its op ends info",
       make_client_crash_nemesis},
      {"failover",
       "replicated topology: take the master away so Sentinel promotes a replica (modes kill, pause, partition)",
       make_failover_nemesis},
  };
  return registry;
}

std::unique_ptr<Nemesis> make_nemesis(const std::string& name) {
  const auto colon = name.find(':');
  const std::string base = name.substr(0, colon);
  for (const auto& n : nemesis_registry()) {
    if (base != n.name) continue;
    auto nemesis = n.make();
    if (colon != std::string::npos && !nemesis->select_mode(name.substr(colon + 1))) return nullptr;
    return nemesis;
  }
  return nullptr;
}

}  // namespace lockcheck
