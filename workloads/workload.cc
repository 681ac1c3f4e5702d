#include "workloads/workload.h"

#include <algorithm>
#include <thread>

namespace lockcheck {

LockResult record_lock_op(ProcessEnv& env, const std::string& f, const std::string& key,
                          const std::function<LockResult()>& call) {
  Op op;
  op.process = env.process;
  op.type = OpType::kInvoke;
  op.f = f;
  op.key = key;
  env.history.record(op);
  LockResult r = call();
  op.type = r.outcome;
  op.token = r.token;
  op.validity_ms = r.validity_ms;
  op.error = r.error;
  env.history.record(op);
  return r;
}

bool sleep_unless_stopped(const std::atomic<bool>& stop, std::chrono::milliseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (!stop.load()) {
    auto now = std::chrono::steady_clock::now();
    if (now >= until) return true;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(until - now, std::chrono::milliseconds(20)));
  }
  return false;
}

std::unique_ptr<Workload> make_workload(const std::string& name) {
  for (const auto& w : workload_registry()) {
    if (name == w.name) return w.make();
  }
  return nullptr;
}

}  // namespace lockcheck
