#include "checkers/wgl.h"

#include <algorithm>

#include "core/flat_table.h"

namespace lockcheck {
namespace wgl {

size_t set_sequential_flags(std::vector<LinOp>* ops) {
  std::vector<int32_t> order(ops->size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  auto by_call = [&](int32_t a, int32_t b) { return (*ops)[a].call < (*ops)[b].call; };
  if (!std::is_sorted(order.begin(), order.end(), by_call)) std::sort(order.begin(), order.end(), by_call);
  struct Seen {
    int64_t last_ret = 0;
    bool sequential = false;
  };
  FlatTable<Seen> seen;  // by process
  auto key = [](Process p) { return static_cast<uint64_t>(static_cast<uint32_t>(p)); };
  for (int32_t i : order) {
    const LinOp& o = (*ops)[i];
    Seen* s = seen.find(key(o.process));
    if (s == nullptr) {
      seen[key(o.process)] = Seen{o.ret, true};
      continue;
    }
    if (s->last_ret >= o.call) s->sequential = false;
    s->last_ret = o.ret;
  }
  size_t not_sequential = 0;
  seen.for_each([&](uint64_t, const Seen& s) { not_sequential += s.sequential ? 0 : 1; });
  for (LinOp& o : *ops) o.sequential = seen.find(key(o.process))->sequential;
  return not_sequential;
}

}  // namespace wgl
}  // namespace lockcheck
