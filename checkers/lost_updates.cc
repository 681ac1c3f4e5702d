// The `lost-updates` checker, for the set workloads (lock-set, fenced-set) and the counter workload. Each
// resource key is judged on its own, by the f's present on it.
//
// Set (f "add", value = a unique integer element; f "read", ok value = array of integers): the final read is
// the last ok read of the key.
//  - lost: an ok add that completed before the final read was invoked and is missing from it;
//  - recovered: an info (or never-completed) add present in the final read (fine);
//  - unexpected: a failed add present in the final read, or an element no add ever wrote;
//  - stale read: an ok read, not the final, that misses an element whose add completed ok before the read was
//    invoked. Every read after a lost element is stale for that element; an anomaly is listed only for reads
//    that miss an element the final read has (a real reordering, not explained by the loss), all are counted.
// Counter (f "increment"; f "read" ok value = integer): with the last ok read as final, lost = ok increments
// that completed before it was invoked minus its value, when positive; a value above every increment that may
// have happened (ok, info or never completed, invoked before the read completed) is unexpected.
// No final read: unknown (unless the key has no adds / increments: nothing to check).
#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "checkers/checker.h"
#include "checkers/format.h"

namespace lockcheck {

namespace {

constexpr size_t kMaxListed = 100;  // elements / ops listed in one anomaly
constexpr size_t kMaxStaleReadAnomalies = 100;

struct UpdateKeyOps {
  std::vector<size_t> adds, increments, reads;  // invoke indices
};

int64_t element_of(const Op& op) {
  if (!op.value.is_number_integer()) {
    throw std::invalid_argument("op " + std::to_string(op.index) + ": an add's value must be an integer element, got " +
                                op.value.dump());
  }
  return op.value.get<int64_t>();
}

std::vector<int64_t> set_of(const Op& read) {
  if (!read.value.is_array()) {
    throw std::invalid_argument("op " + std::to_string(read.index) + ": a read of a set must return an array, got " +
                                read.value.dump().substr(0, 80));
  }
  std::vector<int64_t> out;
  out.reserve(read.value.size());
  for (const auto& e : read.value) {
    if (!e.is_number_integer()) {
      throw std::invalid_argument("op " + std::to_string(read.index) + ": a read returned a non-integer element " +
                                  e.dump());
    }
    out.push_back(e.get<int64_t>());
  }
  return out;
}

template <class T>
nlohmann::json first(const std::vector<T>& v) {
  return std::vector<T>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(v.size(), kMaxListed)));
}

class LostUpdatesChecker : public Checker {
 public:
  std::string name() const override { return "lost-updates"; }

  CheckResult check(const History& h, const CheckOptions&) const override {
    CheckResult r;
    const std::vector<int64_t> pairs = pair_index(h);
    std::map<std::string, UpdateKeyOps> keys;
    for (size_t i = 0; i < h.size(); ++i) {
      const Op& op = h[i];
      if (!op.is_invoke() || !op.is_client()) continue;
      if (op.f == "add")
        keys[op.key].adds.push_back(i);
      else if (op.f == "increment")
        keys[op.key].increments.push_back(i);
      else if (op.f == "read")
        keys[op.key].reads.push_back(i);
    }

    Validity verdict = Validity::kValid;
    std::vector<std::string> notes;
    nlohmann::json per_key = nlohmann::json::object();
    for (const auto& [key, ko] : keys) {
      if (ko.adds.empty() && ko.increments.empty()) continue;  // reads only (e.g. of a lock key): nothing to judge
      // The final read: the last ok read, by completion.
      int64_t final_invoke = -1, final_done = -1;
      for (size_t inv : ko.reads) {
        const int64_t c = pairs[inv];
        if (c >= 0 && h[static_cast<size_t>(c)].is_ok() && c > final_done) {
          final_invoke = static_cast<int64_t>(inv);
          final_done = c;
        }
      }
      nlohmann::json ks;
      Validity v = Validity::kValid;
      if (!ko.adds.empty()) v = merge(v, check_set(h, pairs, key, ko, final_invoke, final_done, &r, &ks, &notes));
      if (!ko.increments.empty())
        v = merge(v, check_counter(h, pairs, key, ko, final_invoke, final_done, &r, &ks, &notes));
      ks["verdict"] = to_string(v);
      per_key[key] = ks;
      verdict = merge(verdict, v);
    }

    r.valid = verdict;
    r.stats = {{"per_key", per_key}};
    int64_t acknowledged = 0;
    for (const auto& [key, ko] : keys) {
      for (const auto* list : {&ko.adds, &ko.increments}) {
        for (size_t inv : *list) {
          const int64_t c = pairs[inv];
          if (c >= 0 && h[static_cast<size_t>(c)].is_ok()) ++acknowledged;
        }
      }
    }
    if (per_key.empty()) {
      r.valid = Validity::kUnknown;
      r.summary = "nothing checked: no adds or increments in the history";
    } else if (acknowledged == 0 && verdict == Validity::kValid) {
      r.valid = Validity::kUnknown;
      r.summary = "nothing checked: not one add or increment was acknowledged, so none could be lost";
    } else {
      r.summary.clear();
      for (size_t j = 0; j < notes.size(); ++j) r.summary += (j ? "; " : "") + notes[j];
    }
    return r;
  }

 private:
  static Validity check_set(const History& h, const std::vector<int64_t>& pairs, const std::string& key,
                            const UpdateKeyOps& ko, int64_t final_invoke, int64_t final_done, CheckResult* r,
                            nlohmann::json* ks, std::vector<std::string>* notes) {
    int64_t ok = 0, fail = 0, info = 0;
    for (size_t inv : ko.adds) {
      const int64_t c = pairs[inv];
      if (c >= 0 && h[static_cast<size_t>(c)].is_ok())
        ++ok;
      else if (c >= 0 && h[static_cast<size_t>(c)].is_fail())
        ++fail;
      else
        ++info;
    }
    (*ks)["ok_adds"] = ok;
    (*ks)["failed_adds"] = fail;
    (*ks)["info_adds"] = info;
    if (final_done < 0) {
      notes->push_back(key + ": no successful read, so " + std::to_string(ok) + " acknowledged adds cannot be checked");
      (*ks)["final_read"] = nullptr;
      return Validity::kUnknown;
    }
    const Op& final_read = h[static_cast<size_t>(final_done)];
    const std::vector<int64_t> final_elems = set_of(final_read);
    const std::unordered_set<int64_t> final_set(final_elems.begin(), final_elems.end());
    (*ks)["final_read"] = final_done;
    (*ks)["final_size"] = final_set.size();

    std::vector<int64_t> lost, lost_ops, recovered, unexpected, unexpected_ops;
    int64_t unconfirmed = 0;
    std::unordered_map<int64_t, int64_t> ok_done_at;  // element -> completion index of its ok add
    std::unordered_set<int64_t> attempted;
    for (size_t inv : ko.adds) {
      const Op& add = h[inv];
      const int64_t e = element_of(add);
      attempted.insert(e);
      const int64_t c = pairs[inv];
      const bool present = final_set.count(e) > 0;
      if (c >= 0 && h[static_cast<size_t>(c)].is_ok()) {
        ok_done_at.emplace(e, c);
        if (present) continue;
        if (c < final_invoke) {
          lost.push_back(e);
          lost_ops.push_back(c);
        } else {
          ++unconfirmed;  // completed while the final read was running: it may legitimately miss it
        }
      } else if (c >= 0 && h[static_cast<size_t>(c)].is_fail()) {
        if (present) {
          unexpected.push_back(e);
          unexpected_ops.push_back(c);
        }
      } else if (present) {
        recovered.push_back(e);
      }
    }
    std::vector<int64_t> never_added;
    for (int64_t e : final_elems)
      if (!attempted.count(e)) never_added.push_back(e);

    // Stale reads.
    int64_t stale_reads = 0, stale_unexplained = 0;
    std::vector<std::pair<int64_t, int64_t>> ok_adds_by_done;  // (completion, element)
    for (const auto& [e, c] : ok_done_at) ok_adds_by_done.emplace_back(c, e);
    std::sort(ok_adds_by_done.begin(), ok_adds_by_done.end());
    size_t stale_listed = 0;
    for (size_t inv : ko.reads) {
      const int64_t c = pairs[inv];
      if (c < 0 || c == final_done || !h[static_cast<size_t>(c)].is_ok()) continue;
      const std::vector<int64_t> elems = set_of(h[static_cast<size_t>(c)]);
      // Elements acknowledged before the read was invoked: a prefix of ok_adds_by_done.
      const size_t due = static_cast<size_t>(std::lower_bound(ok_adds_by_done.begin(), ok_adds_by_done.end(),
                                                              std::make_pair(static_cast<int64_t>(inv), INT64_MIN)) -
                                             ok_adds_by_done.begin());
      if (due == 0) continue;
      std::unordered_set<int64_t> seen;
      for (int64_t e : elems) {
        auto it = ok_done_at.find(e);
        if (it != ok_done_at.end() && it->second < static_cast<int64_t>(inv)) seen.insert(e);
      }
      if (seen.size() == due) continue;
      ++stale_reads;
      std::vector<int64_t> missing_back;  // missing, yet in the final read
      std::vector<int64_t> ops = {static_cast<int64_t>(inv), c};
      for (size_t j = 0; j < due; ++j) {
        const int64_t e = ok_adds_by_done[j].second;
        if (seen.count(e) || !final_set.count(e)) continue;
        missing_back.push_back(e);
        if (ops.size() < kMaxListed) ops.push_back(ok_adds_by_done[j].first);
      }
      if (missing_back.empty()) continue;
      ++stale_unexplained;
      if (stale_listed++ >= kMaxStaleReadAnomalies) continue;
      std::sort(ops.begin(), ops.end());
      r->anomalies.push_back(
          {{"kind", "stale-read"},
           {"description", process_name(h[inv].process) + "'s read of " + key + " (op " +
                               std::to_string(c) + ") misses " + std::to_string(missing_back.size()) +
                               " element(s) acknowledged before it was invoked that the final read has, e.g. " +
                               std::to_string(missing_back[0])},
           {"ops", ops},
           {"key", key},
           {"processes", {h[inv].process}},
           {"elements", first(missing_back)},
           {"from_ns", h[inv].time_ns},
           {"to_ns", h[static_cast<size_t>(c)].time_ns}});
    }

    (*ks)["lost"] = lost.size();
    (*ks)["lost_pct"] = ok == 0 ? 0.0 : 100.0 * static_cast<double>(lost.size()) / static_cast<double>(ok);
    (*ks)["recovered"] = recovered.size();
    (*ks)["recovered_pct"] =
        info == 0 ? 0.0 : 100.0 * static_cast<double>(recovered.size()) / static_cast<double>(info);
    (*ks)["unexpected"] = unexpected.size() + never_added.size();
    (*ks)["unconfirmed"] = unconfirmed;
    (*ks)["stale_reads"] = stale_reads;
    (*ks)["stale_reads_not_explained_by_loss"] = stale_unexplained;
    (*ks)["lost_elements"] = first(lost);
    (*ks)["recovered_elements"] = first(recovered);

    Validity v = Validity::kValid;
    if (!lost.empty()) {
      v = Validity::kInvalid;
      std::vector<int64_t> ops = first(lost_ops);
      ops.push_back(final_invoke);
      ops.push_back(final_done);
      int64_t from = INT64_MAX;
      for (int64_t c : lost_ops) from = std::min(from, h[static_cast<size_t>(c)].time_ns);
      r->anomalies.push_back(
          {{"kind", "lost-update"},
           {"description", std::to_string(lost.size()) + " of " + std::to_string(ok) + " acknowledged adds to " + key +
                               " (" + format_percent(static_cast<int64_t>(lost.size()), ok) +
                               ") are missing from the final read (op " + std::to_string(final_done) + "), e.g. " +
                               std::to_string(lost[0])},
           {"ops", ops},
           {"key", key},
           {"count", lost.size()},
           {"elements", first(lost)},
           {"from_ns", from},
           {"to_ns", final_read.time_ns}});
    }
    if (!unexpected.empty() || !never_added.empty()) {
      v = Validity::kInvalid;
      std::vector<int64_t> ops = first(unexpected_ops);
      ops.push_back(final_done);
      std::string d = key + "'s final read (op " + std::to_string(final_done) + ") has ";
      if (!unexpected.empty())
        d += std::to_string(unexpected.size()) + " element(s) whose add failed (e.g. " + std::to_string(unexpected[0]) +
             ")";
      if (!unexpected.empty() && !never_added.empty()) d += " and ";
      if (!never_added.empty())
        d += std::to_string(never_added.size()) + " element(s) never added (e.g. " + std::to_string(never_added[0]) +
             ")";
      std::vector<int64_t> elems = unexpected;
      elems.insert(elems.end(), never_added.begin(), never_added.end());
      r->anomalies.push_back({{"kind", "unexpected-element"},
                              {"description", d},
                              {"ops", ops},
                              {"key", key},
                              {"count", elems.size()},
                              {"elements", first(elems)}});
    }
    if (stale_unexplained > 0) v = Validity::kInvalid;

    std::string note = key + ": " + std::to_string(lost.size()) + " of " + std::to_string(ok) +
                       " acknowledged adds lost (" + format_percent(static_cast<int64_t>(lost.size()), ok) + "), " +
                       std::to_string(recovered.size()) + " of " + std::to_string(info) +
                       " indeterminate adds recovered";
    if (!unexpected.empty() || !never_added.empty())
      note += ", " + std::to_string(unexpected.size() + never_added.size()) + " unexpected elements";
    if (stale_reads > 0) note += ", " + std::to_string(stale_reads) + " stale reads";
    notes->push_back(note);
    return v;
  }

  static Validity check_counter(const History& h, const std::vector<int64_t>& pairs, const std::string& key,
                                const UpdateKeyOps& ko, int64_t final_invoke, int64_t final_done, CheckResult* r,
                                nlohmann::json* ks, std::vector<std::string>* notes) {
    int64_t ok = 0, fail = 0, info = 0, must = 0, may = 0;
    for (size_t inv : ko.increments) {
      const int64_t c = pairs[inv];
      const bool is_ok = c >= 0 && h[static_cast<size_t>(c)].is_ok();
      const bool is_fail = c >= 0 && h[static_cast<size_t>(c)].is_fail();
      ok += is_ok;
      fail += is_fail;
      info += !is_ok && !is_fail;
      if (final_done >= 0) {
        if (is_ok && c < final_invoke) ++must;
        if (!is_fail && static_cast<int64_t>(inv) < final_done) ++may;
      }
    }
    (*ks)["ok_increments"] = ok;
    (*ks)["failed_increments"] = fail;
    (*ks)["info_increments"] = info;
    if (final_done < 0) {
      notes->push_back(key + ": no successful read, so " + std::to_string(ok) +
                       " acknowledged increments cannot be checked");
      (*ks)["final_read"] = nullptr;
      return Validity::kUnknown;
    }
    const Op& fr = h[static_cast<size_t>(final_done)];
    if (!fr.value.is_number_integer()) {
      throw std::invalid_argument("op " + std::to_string(final_done) +
                                  ": a read of a counter must return an integer, got " + fr.value.dump().substr(0, 80));
    }
    const int64_t value = fr.value.get<int64_t>();
    const int64_t lost = std::max<int64_t>(0, must - value);
    (*ks)["final_read"] = final_done;
    (*ks)["final_value"] = value;
    (*ks)["lost"] = lost;
    (*ks)["lost_pct"] = ok == 0 ? 0.0 : 100.0 * static_cast<double>(lost) / static_cast<double>(ok);
    Validity v = Validity::kValid;
    if (lost > 0) {
      v = Validity::kInvalid;
      r->anomalies.push_back({{"kind", "lost-update"},
                              {"description", key + "'s final read (op " + std::to_string(final_done) + ") is " +
                                                  std::to_string(value) + ", but " + std::to_string(must) +
                                                  " increments were acknowledged before it: " + std::to_string(lost) +
                                                  " lost (" + format_percent(lost, ok) + " of acknowledged)"},
                              {"ops", {final_invoke, final_done}},
                              {"key", key},
                              {"count", lost}});
    }
    if (value > may) {
      v = Validity::kInvalid;
      r->anomalies.push_back(
          {{"kind", "unexpected-value"},
           {"description", key + "'s final read (op " + std::to_string(final_done) + ") is " + std::to_string(value) +
                               ", more than the " + std::to_string(may) + " increments that may have happened"},
           {"ops", {final_invoke, final_done}},
           {"key", key},
           {"count", value - may}});
    }
    notes->push_back(key + ": counter " + std::to_string(value) + " after " + std::to_string(ok) +
                     " acknowledged and " + std::to_string(info) + " indeterminate increments, " +
                     std::to_string(lost) + " lost (" + format_percent(lost, ok) + ")");
    return v;
  }
};

}  // namespace

std::unique_ptr<Checker> make_lost_updates_checker() { return std::make_unique<LostUpdatesChecker>(); }

// This checker's line in the registry (checkers/registry.cc): its name, what `lockcheck list` says of it, its factory.
CheckerInfo lost_updates_checker() {
  return {"lost-updates", "acknowledged adds / increments are in the final read; stale reads; unexpected elements",
          make_lost_updates_checker};
}

}  // namespace lockcheck
