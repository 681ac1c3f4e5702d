#include "cluster/local_members.h"

#include <signal.h>

#include "core/cluster.h"

namespace lockcheck {

void LocalMembers::resize(size_t n) {
  kill_all();
  slots_.clear();
  slots_.resize(n);
}

ChildProcess& LocalMembers::start(size_t n, const ProcessSpec& spec, const std::string& what) {
  Slot& s = slots_.at(n);
  s.process.reset();
  try {
    s.process = std::make_unique<ChildProcess>(spec);
  } catch (const SpawnError& e) {
    throw ClusterError("cannot start " + what + ": " + e.what());
  }
  s.paused = false;
  return *s.process;
}

void LocalMembers::kill(size_t n) noexcept {
  if (n >= slots_.size()) return;
  Slot& s = slots_[n];
  if (s.process) s.process->kill_and_reap();
  s.process.reset();
  s.paused = false;
}

void LocalMembers::kill_all() noexcept {
  for (size_t n = 0; n < slots_.size(); ++n) kill(n);
}

bool LocalMembers::running(size_t n) const {
  ChildProcess* p = process(n);
  return p != nullptr && p->running();
}

pid_t LocalMembers::pid(size_t n) const {
  ChildProcess* p = process(n);
  return p ? p->pid() : -1;
}

void LocalMembers::pause(size_t n, const std::string& name) {
  Slot& s = slots_.at(n);
  if (!s.process) throw ClusterError("cannot pause " + name + ": it is down");
  s.process->signal(SIGSTOP);
  s.paused = true;
}

void LocalMembers::resume(size_t n) {
  Slot& s = slots_.at(n);
  if (!s.process) return;
  s.process->signal(SIGCONT);
  s.paused = false;
}

bool LocalMembers::continue_if_running(size_t n) {
  Slot& s = slots_.at(n);
  if (s.process && s.process->running()) {
    if (s.paused) s.process->signal(SIGCONT);
    s.paused = false;
    return true;
  }
  kill(n);
  return false;
}

}  // namespace lockcheck
