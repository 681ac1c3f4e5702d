#include "report/summary.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "report/html.h"
#include "report/results_json.h"

namespace lockcheck {
namespace report {

namespace {

using nlohmann::json;

// Names carry a summary_ prefix: the report floor is compiled as one unit (CMake's unity build).
std::string summary_plural(int64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string summary_string(const json& obj, const char* key) {
  const json* v = find(obj, key);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

std::optional<int64_t> summary_int(const json& obj, const char* key) {
  const json* v = find(obj, key);
  if (v && v->is_number_integer()) return v->get<int64_t>();
  if (v && v->is_number()) return static_cast<int64_t>(std::llround(v->get<double>()));
  return std::nullopt;
}

std::optional<double> summary_number(const json& obj, const char* key) {
  const json* v = find(obj, key);
  if (v && v->is_number()) return v->get<double>();
  return std::nullopt;
}

// "3 s", "2.5 s", "800 ms".
std::string summary_seconds(double s) {
  if (s < 1 && s > 0) return std::to_string(static_cast<int64_t>(std::llround(s * 1000))) + " ms";
  const double r = std::round(s * 10) / 10;
  return (r == std::floor(r) ? std::to_string(static_cast<int64_t>(r)) : fixed(r, 1)) + " s";
}

// The program of a command line, without its folder ("python3 /x/my_lock.py" -> "python3 my_lock.py").
std::string summary_command_words(const std::string& cmd) {
  std::istringstream in(cmd);
  std::string word, out;
  for (int i = 0; i < 2 && in >> word; ++i) {
    const size_t slash = word.find_last_of('/');
    if (slash != std::string::npos && slash + 1 < word.size()) word = word.substr(slash + 1);
    out += (out.empty() ? "" : " ") + word;
  }
  return out;
}

// One nemesis of the run as it showed in the history.
struct SummaryFault {
  std::vector<std::string> start_fs, stop_fs, modes;
  int64_t starts = 0;
  std::optional<int64_t> pause_ms;
};

void summary_add_unique(std::vector<std::string>& v, const std::string& s) {
  if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

std::string summary_join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace

ClientTally client_tally(const History& h) {
  ClientTally t;
  static const Atom kAcquire("acquire");
  for (const Op& op : h) {
    if (op.is_invoke()) continue;
    if (!op.is_client()) {
      ++t.nemesis;
      continue;
    }
    if (op.is_notice()) continue;
    if (op.is_ok()) ++t.ok;
    if (op.is_info()) ++t.info;
    if (op.is_fail()) {
      ++t.fail;
      if (op.f == kAcquire) ++t.fail_acquire;
    }
  }
  return t;
}

std::string ops_words(const ClientTally& t) {
  std::string s = std::to_string(t.ok) + " ok, " + std::to_string(t.fail) + " fail";
  if (t.fail > 0) {
    const int64_t other = t.fail - t.fail_acquire;
    if (other == 0) {
      s += " (acquires that found the lock held: contention, not errors)";
    } else if (t.fail_acquire > 0) {
      s += " (" + std::to_string(t.fail_acquire) + " acquires that found the lock held: contention, not errors; " +
           summary_plural(other, "other op", "other ops") + " that did not happen)";
    } else {
      s += " (ops that certainly did not happen)";
    }
  }
  s += ", " + std::to_string(t.info) + " info";
  if (t.info > 0) s += " (outcome unknown: a timeout or a lost client)";
  return s;
}

std::string run_sentence(const json& config, const json& results, const History& h) {
  std::string s;
  // The lock.
  const std::string lock = summary_string(config, "lock");
  const std::string cmd = summary_string(config, "client_cmd");
  if (lock == "external") {
    s = "external lock" + (cmd.empty() ? std::string() : " (" + summary_command_words(cmd) + ")");
  } else {
    s = lock.empty() ? std::string("a lock") : lock;
  }
  // The nodes: count, backend, server kind and the version they answered.
  const std::optional<int64_t> nodes = summary_int(config, "nodes");
  std::string server = summary_string(config, "server");
  if (server.empty()) {
    if (const json* sv = find(results, "server")) server = summary_string(*sv, "name");
  }
  if (server.empty()) server = "redis";
  std::string version;
  if (const json* v = find(results, "versions"); v && v->is_object()) version = summary_string(*v, server.c_str());
  std::string version_note;
  if (version.find('(') != std::string::npos || version == "not read") {
    version_note = " (version: " + version + ")";  // mixed, or not read from the nodes: said as recorded
    version.clear();
  }
  if (version.empty() && version_note.empty()) version = summary_string(config, "server_version");
  const std::string backend = summary_string(config, "cluster");
  s += " on ";
  s += nodes ? std::to_string(*nodes) + " " : std::string();
  if (!backend.empty()) s += backend + " ";
  s += server + (version.empty() ? "" : " " + version) + (nodes && *nodes == 1 ? " node" : " nodes") + version_note;
  // Clients and workload.
  if (const auto c = summary_int(config, "concurrency")) s += ", " + summary_plural(*c, "client", "clients");
  const std::string workload = summary_string(config, "workload");
  if (!workload.empty() && workload != "lock") s += " (" + workload + " workload)";
  // Faults, as the history shows them (modes, how many), else as configured.
  std::vector<std::string> names;
  if (const json* n = find(config, "nemesis"); n && n->is_array()) {
    for (const auto& x : *n) {
      if (x.is_string()) names.push_back(x.get<std::string>());
    }
  }
  if (names.empty()) {
    s += ", no faults";
  } else {
    std::map<std::string, SummaryFault> by_fault;
    for (const Op& op : h) {
      if (op.process != kNemesis || !op.is_invoke() || !op.value.is_object()) continue;
      const std::string fault = summary_string(op.value, "fault"), phase = summary_string(op.value, "phase");
      SummaryFault& f = by_fault[fault];
      if (phase == "start") {
        ++f.starts;
        summary_add_unique(f.start_fs, op.f);
        if (const json* d = find(op.value, "detail"); d && d->is_object()) {
          summary_add_unique(f.modes, summary_string(*d, "mode"));
          if (auto p = summary_int(*d, "pause_ms")) f.pause_ms = *p;
        }
      } else if (phase == "stop") {
        summary_add_unique(f.stop_fs, op.f);
      }
    }
    std::vector<std::string> parts;
    int64_t total = 0;
    for (const auto& name : names) {
      const std::string base = name.substr(0, name.find(':'));
      const std::string mode = name.find(':') == std::string::npos ? "" : name.substr(name.find(':') + 1);
      auto it = by_fault.find(base);
      std::string part;
      if (it == by_fault.end() || it->second.starts == 0) {
        part = name + " (no fault fired)";
      } else {
        const SummaryFault& f = it->second;
        total += f.starts;
        part = summary_join(f.start_fs, "/");
        if (!f.stop_fs.empty()) part += " + " + summary_join(f.stop_fs, "/");
        std::vector<std::string> notes;
        if (!f.modes.empty()) {
          notes.push_back(summary_join(f.modes, "/"));
        } else if (!mode.empty()) {
          notes.push_back(mode);
        }
        if (f.pause_ms) notes.push_back(summary_seconds(static_cast<double>(*f.pause_ms) / 1000) + " each");
        notes.push_back(summary_plural(f.starts, "fault", "faults"));
        part += " (" + summary_join(notes, ", ") + ")";
      }
      parts.push_back(part);
    }
    s += ", " + summary_join(parts, " and ");
    if (summary_string(config, "nemesis_targeting") == "holder") s += " aimed at the holder";
    if (const auto iv = summary_number(config, "nemesis_interval_s"); iv && total != 1) {
      s += ", " + summary_seconds(*iv) + " between faults";
    }
  }
  // How long.
  std::optional<double> d = summary_number(results, "duration_s");
  if (!d || *d <= 0) d = summary_number(config, "time_limit_s");
  if (d) s += ", " + summary_seconds(*d);
  return s;
}

std::string workload_words(const json& config, const History& h) {
  std::string workload = summary_string(config, "workload");
  if (workload.empty()) workload = "lock";
  std::vector<std::string> fs;
  int64_t extends = 0, ok_acquires = 0, with_validity = 0;
  static const Atom kAcquire("acquire"), kExtend("extend");
  for (const Op& op : h) {
    if (!op.is_client() || op.is_notice()) continue;
    if (op.is_invoke()) {
      summary_add_unique(fs, op.f);
      if (op.f == kExtend) ++extends;
    } else if (op.is_ok() && op.f == kAcquire) {
      ++ok_acquires;
      if (op.validity_ms) ++with_validity;
    }
  }
  const bool lock_only = std::all_of(fs.begin(), fs.end(), [](const std::string& f) {
    return f == "acquire" || f == "release" || f == "extend";
  });
  std::string s = workload + " workload: ";
  if (fs.empty()) {
    s += "no client op was sent";
  } else if (lock_only && extends == 0) {
    s += "acquire";
    const auto ttl = summary_int(config, "ttl_ms");
    auto hold_max = summary_int(config, "hold_ms_max");
    if (hold_max && *hold_max < 0 && ttl) hold_max = *ttl * 8 / 10;
    const auto hold_min = summary_int(config, "hold_ms_min");
    if (hold_max && *hold_max >= 0) {
      s += ", hold " + std::to_string(std::min(hold_min.value_or(0), *hold_max)) + "-" + std::to_string(*hold_max) +
           " ms";
    }
    if (std::find(fs.begin(), fs.end(), "release") != fs.end()) s += ", release";
  } else {
    std::vector<std::string> order = fs;
    // acquire first and release last, as a holder does them.
    std::stable_partition(order.begin(), order.end(), [](const std::string& f) { return f == "acquire"; });
    std::stable_partition(order.begin(), order.end(), [](const std::string& f) { return f != "release"; });
    s += summary_join(order, ", ");
  }
  if (!fs.empty()) s += extends == 0 ? "; no extend" : "; " + summary_plural(extends, "extend", "extends") + " sent";
  if (ok_acquires > 0) {
    if (with_validity == 0) {
      s += "; no validity_ms reported (the lease checker has no lease to judge)";
    } else {
      s += "; validity_ms reported on " + std::to_string(with_validity) + " of " +
           summary_plural(ok_acquires, "ok acquire", "ok acquires");
    }
  }
  return s;
}

std::optional<ClientExit> client_exit_of(const Op& op) {
  static const std::string kPrefix = "external client: ", kExited = "exited with status ",
                           kClosed = "closed its stdout";
  if (!op.is_client() || !op.is_info() || op.is_notice() || op.error.empty()) return std::nullopt;
  const std::string& e = op.error.str();
  if (e.compare(0, kPrefix.size(), kPrefix) != 0) return std::nullopt;
  const std::string rest = e.substr(kPrefix.size());
  ClientExit x;
  x.process = op.process;
  x.time_ns = op.time_ns;
  x.index = op.index;
  if (rest.compare(0, kExited.size(), kExited) == 0) {
    try {
      x.status = std::stoi(rest.substr(kExited.size()));
    } catch (const std::exception&) {
    }
    x.why = rest;
    if (x.status && *x.status > 128) {
      x.why = "killed by signal " + std::to_string(*x.status - 128) + " (status " + std::to_string(*x.status) + ")";
    }
  } else if (rest.compare(0, kClosed.size(), kClosed) == 0) {
    x.why = rest;
  } else {
    return std::nullopt;
  }
  return x;
}

std::vector<ClientExit> client_exits(const History& h) {
  std::vector<ClientExit> out;
  std::set<Process> seen;
  for (const Op& op : h) {
    auto x = client_exit_of(op);
    if (x && seen.insert(op.process).second) out.push_back(std::move(*x));
  }
  return out;
}

json client_exits_json(const std::vector<ClientExit>& exits, size_t max) {
  json out = json::array();
  for (size_t i = 0; i < exits.size() && i < max; ++i) {
    const ClientExit& x = exits[i];
    json j = {{"process", process_name(x.process)},
              {"time_s", static_cast<double>(x.time_ns) / 1e9},
              {"index", x.index},
              {"why", x.why},
              {"stderr_file", "clients/" + process_name(x.process) + ".stderr"}};
    if (x.status) j["status"] = *x.status;
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<std::string> client_exit_lines(const json& results, const ClientTally& t, const std::string& prefix) {
  std::vector<std::string> lines;
  const json* exits = find(results, "client_exits");
  if (!exits || !exits->is_array() || exits->empty()) return lines;
  std::vector<std::string> names;
  for (const auto& x : *exits) names.push_back(summary_string(x, "process"));
  const int64_t total = summary_int(results, "client_exit_count").value_or(static_cast<int64_t>(exits->size()));
  std::string list;
  for (size_t i = 0; i < names.size() && i < 8; ++i) list += (i ? ", " : "") + names[i];
  if (total > static_cast<int64_t>(std::min<size_t>(names.size(), 8))) {
    list += " and " + std::to_string(total - static_cast<int64_t>(std::min<size_t>(names.size(), 8))) + " more";
  }
  if (t.ok + t.fail == 0) {
    lines.push_back("every client process exited before any lock op completed (" +
                    summary_plural(total, "exit", "exits") + ": " + list + "): nothing was tested");
  } else {
    lines.push_back(summary_plural(total, "client process", "client processes") + " exited by themselves: " + list);
  }
  // The first exit in full, and the next whose words differ (another status, another stderr).
  std::set<std::string> shown;
  for (const auto& x : *exits) {
    std::string tail;
    if (const json* tl = find(x, "stderr_tail"); tl && tl->is_array()) {
      for (const auto& l : *tl) tail += plain(l) + "\n";
    }
    const std::string why = summary_string(x, "why");
    if (!shown.insert(why).second) continue;  // another status: worth a line; the same one with another pid is not
    if (shown.size() > 2) break;
    std::string line = summary_string(x, "process") + " " + why;
    if (const auto ts = summary_number(x, "time_s")) line += " at " + fixed(*ts, 3) + " s";
    const std::string file = summary_string(x, "stderr_file");
    const json* tl = find(x, "stderr_tail");
    if (!tl || !tl->is_array() || tl->empty()) {
      line += "; its stderr (" + prefix + file + ") is empty";
      lines.push_back(line);
      continue;
    }
    line += "; the last " + summary_plural(static_cast<int64_t>(tl->size()), "line", "lines") + " of its stderr (" +
            prefix + file + "):";
    lines.push_back(line);
    for (const auto& l : *tl) lines.push_back("  | " + plain(l));
  }
  return lines;
}

std::vector<std::string> last_lines(const std::string& text, size_t max_lines) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > 300) line = line.substr(0, 297) + "...";
    lines.push_back(line);
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.size() > max_lines) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(max_lines));
  return lines;
}

std::string default_words(std::optional<int64_t> effective, const std::string& unit, const std::string& words) {
  if (effective) return std::to_string(*effective) + (unit.empty() ? "" : " " + unit) + " (default)";
  return words.empty() ? std::string("default") : words + " (default)";
}

}  // namespace report
}  // namespace lockcheck
