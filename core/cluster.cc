#include "core/cluster.h"

namespace lockcheck {

namespace {

unsigned bit(Ability a) { return 1u << static_cast<unsigned>(a); }

}  // namespace

const char* to_string(Ability a) {
  switch (a) {
    case Ability::kKill: return "kill";
    case Ability::kPause: return "pause";
    case Ability::kClockStep: return "clock-step";
    case Ability::kClockRate: return "clock-rate";
    case Ability::kPowerLoss: return "power-loss";
    case Ability::kCutPeers: return "cut-peers";
    case Ability::kDelayPeers: return "delay-peers";
    case Ability::kLeader: return "leader";
    case Ability::kPrimary: return "primary";
    case Ability::kKeyHolders: return "key-holders";
  }
  return "?";
}

const char* describe(Ability a) {
  switch (a) {
    case Ability::kKill: return "kill and restart a node";
    case Ability::kPause: return "pause and resume a node";
    case Ability::kClockStep: return "step a node's clock";
    case Ability::kClockRate: return "make a node's clock run fast or slow";
    case Ability::kPowerLoss: return "drop what a node had not fsynced (power loss)";
    case Ability::kCutPeers: return "cut the links between servers";
    case Ability::kDelayPeers: return "delay the links between servers";
    case Ability::kLeader: return "find the leader the servers elected";
    case Ability::kPrimary: return "find the primary of a key and its replicas (a failover)";
    case Ability::kKeyHolders: return "find the nodes that hold a key";
  }
  return "?";
}

Abilities& Abilities::grant(Ability a) {
  granted_ |= bit(a);
  for (auto it = refused_.begin(); it != refused_.end(); ++it) {
    if (it->first == a) {
      refused_.erase(it);
      break;
    }
  }
  return *this;
}

Abilities& Abilities::refuse(Ability a, const std::string& why) {
  granted_ &= ~bit(a);
  for (auto& r : refused_) {
    if (r.first == a) {
      r.second = why;
      return *this;
    }
  }
  refused_.emplace_back(a, why);
  return *this;
}

bool Abilities::has(Ability a) const { return (granted_ & bit(a)) != 0; }

std::string Abilities::why_not(Ability a) const {
  if (has(a)) return "";
  for (const auto& r : refused_) {
    if (r.first == a) return r.second;
  }
  return std::string("it cannot ") + describe(a);
}

Abilities Abilities::both(const Abilities& other) const {
  Abilities out;
  for (Ability a : kAllAbilities) {
    if (has(a) && other.has(a)) {
      out.grant(a);
    } else {
      out.refuse(a, has(a) ? other.why_not(a) : why_not(a));
    }
  }
  return out;
}

Abilities Abilities::basic() {
  Abilities out;
  for (Ability a : kAllAbilities) out.grant(a);
  out.refuse(Ability::kLeader, "it elects no leader");
  out.refuse(Ability::kPrimary, "it has no primary that fails over");
  out.refuse(Ability::kKeyHolders, "it cannot tell which nodes hold a key");
  return out;
}

}  // namespace lockcheck
