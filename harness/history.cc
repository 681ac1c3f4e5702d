#include "harness/history.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace lockcheck {

HistoryWriter::HistoryWriter(const std::string& path, const MonotonicClock* clock) : clock_(clock) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
}

HistoryWriter::~HistoryWriter() {
  if (fd_ >= 0) ::close(fd_);
}

Op HistoryWriter::record(Op op) {
  std::lock_guard<std::mutex> lock(mu_);
  op.index = static_cast<int64_t>(ops_.size());
  if (clock_) op.time_ns = clock_->now_ns();
  std::string line = to_jsonl(op);
  line.push_back('\n');
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("cannot write history: ") + std::strerror(errno));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  switch (op.type) {
    case OpType::kInvoke: ++counts_.invoke; break;
    case OpType::kOk: ++counts_.ok; break;
    case OpType::kFail: ++counts_.fail; break;
    case OpType::kInfo: ++counts_.info; break;
  }
  ops_.push_back(op);
  for (auto& fn : observers_) fn(ops_.back());
  return op;
}

History HistoryWriter::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ops_;
}

OpCounts HistoryWriter::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

void HistoryWriter::observe(std::function<void(const Op&)> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  observers_.push_back(std::move(fn));
}

namespace {

History parse_stream(std::istream& in, const std::string& name) {
  History h;
  std::string line;
  int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Op op;
    try {
      op = nlohmann::json::parse(line).get<Op>();
    } catch (const nlohmann::json::parse_error& e) {
      throw HistoryError(name + ":" + std::to_string(lineno) + ": not valid JSON (" + e.what() + ")");
    } catch (const std::exception& e) {
      throw HistoryError(name + ":" + std::to_string(lineno) + ": " + e.what());
    }
    if (op.index != static_cast<int64_t>(h.size())) {
      throw HistoryError(name + ":" + std::to_string(lineno) + ": index " + std::to_string(op.index) +
                         " out of order (expected " + std::to_string(h.size()) + ")");
    }
    h.push_back(std::move(op));
  }
  return h;
}

}  // namespace

History read_history(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw HistoryError(path + ": cannot open");
  return parse_stream(in, path);
}

History parse_history(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  return parse_stream(in, name);
}

}  // namespace lockcheck
