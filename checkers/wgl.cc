#include "checkers/wgl.h"

#include <unordered_map>

namespace lockcheck {
namespace wgl {

size_t set_sequential_flags(std::vector<LinOp>* ops) {
  std::vector<int32_t> order(ops->size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  auto by_call = [&](int32_t a, int32_t b) { return (*ops)[a].call < (*ops)[b].call; };
  if (!std::is_sorted(order.begin(), order.end(), by_call)) std::sort(order.begin(), order.end(), by_call);
  struct Seen {
    int64_t last_ret;
    bool sequential;
  };
  std::unordered_map<Process, Seen> seen;
  for (int32_t i : order) {
    const LinOp& o = (*ops)[i];
    auto it = seen.find(o.process);
    if (it == seen.end()) {
      seen.emplace(o.process, Seen{o.ret, true});
      continue;
    }
    if (it->second.last_ret >= o.call) it->second.sequential = false;
    it->second.last_ret = o.ret;
  }
  size_t not_sequential = 0;
  for (const auto& kv : seen) not_sequential += kv.second.sequential ? 0 : 1;
  for (LinOp& o : *ops) o.sequential = seen[o.process].sequential;
  return not_sequential;
}

}  // namespace wgl
}  // namespace lockcheck
