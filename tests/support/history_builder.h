// Test helper: builds hand-written histories op by op. Each op gets the next index and, unless at_ms() moved
// the clock, a time 1 ms after the previous one.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/op.h"

namespace lockcheck {
namespace testing {

class HistoryBuilder {
 public:
  // Sets the time of the next op (ms since the start).
  HistoryBuilder& at_ms(int64_t ms) {
    next_ns_ = ms * 1000000;
    return *this;
  }

  int64_t add(Process p, OpType type, const std::string& f, const std::string& key = "lock-0",
              nlohmann::json value = nullptr) {
    Op op;
    op.index = static_cast<int64_t>(h_.size());
    op.time_ns = next_ns_;
    next_ns_ += 1000000;
    op.process = p;
    op.type = type;
    op.f = f;
    op.key = key;
    op.value = std::move(value);
    if (type == OpType::kInfo) op.error = "timeout";
    h_.push_back(std::move(op));
    return h_.back().index;
  }
  int64_t invoke(Process p, const std::string& f, const std::string& key = "lock-0", nlohmann::json v = nullptr) {
    return add(p, OpType::kInvoke, f, key, std::move(v));
  }
  int64_t ok(Process p, const std::string& f, const std::string& key = "lock-0", nlohmann::json v = nullptr) {
    return add(p, OpType::kOk, f, key, std::move(v));
  }
  int64_t fail(Process p, const std::string& f, const std::string& key = "lock-0", nlohmann::json v = nullptr) {
    return add(p, OpType::kFail, f, key, std::move(v));
  }
  int64_t info(Process p, const std::string& f, const std::string& key = "lock-0", nlohmann::json v = nullptr) {
    return add(p, OpType::kInfo, f, key, std::move(v));
  }
  // Sets fields on the last op.
  HistoryBuilder& token(int64_t t) {
    h_.back().token = t;
    return *this;
  }
  HistoryBuilder& validity_ms(int64_t v) {
    h_.back().validity_ms = v;
    return *this;
  }
  HistoryBuilder& error(const std::string& e) {
    h_.back().error = e;
    return *this;
  }

  const History& history() const { return h_; }

 private:
  History h_;
  int64_t next_ns_ = 0;
};

}  // namespace testing
}  // namespace lockcheck
