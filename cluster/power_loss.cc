#include "cluster/power_loss.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#ifndef LOCKCHECK_POWER_SHIM_PATH
#error "LOCKCHECK_POWER_SHIM_PATH must name the built lockcheck_powershim library (set by CMakeLists.txt)"
#endif

namespace lockcheck {

std::string power_shim_library() {
  const char* env = std::getenv("LOCKCHECK_POWER_SHIM");
  if (env != nullptr && env[0] != '\0') return env;
  return LOCKCHECK_POWER_SHIM_PATH;
}

bool needs_power_shim(const RunConfig& c) {
  for (const auto& n : c.nemesis) {
    if (n.substr(0, n.find(':')) == "power-loss") return true;
  }
  return false;
}

std::string preload_list(const std::vector<std::string>& libraries) {
  std::string s;
  for (const auto& l : libraries) {
    if (l.empty()) continue;
    if (!s.empty()) s += ':';
    s += l;
  }
  return s;
}

void add_power_shim_env(std::map<std::string, std::string>& env, const std::string& journal_path) {
  env["LD_PRELOAD"] = preload_list({env["LD_PRELOAD"], power_shim_library()});
  env[kPowerJournalEnv] = journal_path;
}

namespace {

std::string journal_dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

PowerJournal PowerJournal::parse(const std::string& text) {
  PowerJournal j;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // <T> <dev> <ino> <n> <path>; the path is the rest of the line (it may hold spaces).
    std::istringstream fields(line);
    char type = 0;
    uint64_t dev = 0, ino = 0, n = 0;
    if (in.eof() || !(fields >> type >> dev >> ino >> n) || fields.get() != ' ') {
      ++j.malformed_;  // a line without its newline (torn) or garbage
      continue;
    }
    std::string path;
    std::getline(fields, path);
    if (path.empty() || path[0] != '/') {
      ++j.malformed_;
      continue;
    }
    ++j.records_;
    const auto key = std::make_pair(dev, ino);
    auto it = j.files_.find(key);
    switch (type) {
      case 'B':  // opened for writing, existed: durable as it is, unless already known
        if (it == j.files_.end()) j.files_[key] = Entry{path, dev, ino, static_cast<int64_t>(n)};
        else it->second.path = path;
        break;
      case 'C': {  // created: nothing durable yet, not even its name
        Entry e{path, dev, ino, 0};
        e.name_pending = e.created = true;
        j.files_[key] = e;
        break;
      }
      case 'D': {
        Entry e = it == j.files_.end() ? Entry{path, dev, ino, static_cast<int64_t>(n)} : it->second;
        e.path = path;
        e.always = true;
        j.files_[key] = e;
        break;
      }
      case 'S':
        if (it == j.files_.end()) {
          j.files_[key] = Entry{path, dev, ino, static_cast<int64_t>(n)};
        } else {
          it->second.durable = static_cast<int64_t>(n);
          it->second.path = path;
        }
        break;
      case 'Y': {  // a directory's fsync: the names in it are durable
        for (auto& f : j.files_) {
          if (f.second.name_pending && journal_dir_of(f.second.path) == path) {
            f.second.name_pending = f.second.renamed = f.second.replaced = false;
          }
        }
        std::vector<std::string> still;
        for (const auto& u : j.unlinked_pending_) {
          if (journal_dir_of(u) != path) still.push_back(u);
        }
        j.unlinked_pending_ = still;
        break;
      }
      case 'R': {
        // A file the rename replaced is gone (its inode has no name left): no longer tracked.
        for (auto f = j.files_.begin(); f != j.files_.end();) {
          f = f->first != key && f->second.path == path ? j.files_.erase(f) : std::next(f);
        }
        it = j.files_.find(key);
        if (it == j.files_.end()) {
          // A file this incarnation never wrote: its data is durable; only its new name is not.
          Entry e{path, dev, ino, 0};
          e.durable = -1;  // unknown: not truncated
          it = j.files_.emplace(key, e).first;
        }
        it->second.path = path;
        it->second.name_pending = true;
        it->second.renamed = true;
        it->second.replaced = it->second.replaced || n != 0;
        break;
      }
      case 'U': {
        // A file whose name never became durable leaves nothing a power loss could bring back.
        const bool never_durable = it != j.files_.end() && it->second.created && it->second.name_pending;
        if (it != j.files_.end()) j.files_.erase(it);
        if (!never_durable) j.unlinked_pending_.push_back(path);
        break;
      }
      default:
        --j.records_;
        ++j.malformed_;
    }
  }
  return j;
}

namespace {

bool path_under(const std::string& path, const std::string& scope) {
  return scope.empty() || (path.size() > scope.size() + 1 && path.compare(0, scope.size(), scope) == 0 &&
                           path[scope.size()] == '/');
}

}  // namespace

std::vector<std::string> PowerJournal::paths(const std::string& scope) const {
  std::set<std::string> p;
  for (const auto& f : files_) {
    if (path_under(f.second.path, scope)) p.insert(f.second.path);
  }
  return {p.begin(), p.end()};
}

std::vector<PowerLossAction> PowerJournal::plan(const std::map<std::string, std::optional<FileStat>>& now,
                                                const std::string& scope, std::vector<std::string>* not_undone) const {
  std::vector<PowerLossAction> actions;
  for (const auto& kv : files_) {
    const Entry& e = kv.second;
    if (!path_under(e.path, scope)) continue;
    const auto found = now.find(e.path);
    if (found == now.end() || !found->second || found->second->dev != e.dev || found->second->ino != e.ino) {
      // Renamed or removed by a call the shim does not see (or by the harness): nothing to act on, but said.
      not_undone->push_back(e.path + ": not where the journal last saw it; left as it is");
      continue;
    }
    const FileStat& st = *found->second;
    if (e.name_pending && e.created && !e.replaced) {
      // Its name never reached a synced directory: after a power loss the file is not there.
      actions.push_back({PowerLossAction::Kind::kRemove, e.path, st.size, 0});
      continue;
    }
    if (e.name_pending) {
      not_undone->push_back(e.path + ": renamed " + std::string(e.replaced ? "over another file " : "") +
                            "since its directory's last fsync; the rename is not undone");
    }
    if (!e.always && e.durable >= 0 && st.size > e.durable) {
      actions.push_back({PowerLossAction::Kind::kTruncate, e.path, st.size, e.durable});
    }
  }
  for (const auto& u : unlinked_pending_) {
    if (path_under(u, scope)) {
      not_undone->push_back(u + ": unlinked since its directory's last fsync; the unlink is not undone");
    }
  }
  return actions;
}

namespace {

std::string read_journal_text(const std::string& path, bool* exists) {
  std::ifstream in(path, std::ios::binary);
  *exists = static_cast<bool>(in);
  if (!in) return "";
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string path_relative_to(const std::string& path, const std::string& base) {
  return !base.empty() && path_under(path, base) ? path.substr(base.size() + 1) : path;
}

}  // namespace

PowerLossReport power_loss_report(const std::vector<PowerLossAction>& done, std::vector<std::string> not_undone,
                                  int64_t records, const std::string& relative_to) {
  PowerLossReport r;
  r.records = records;
  for (const auto& a : done) {
    PowerLossFile f;
    f.path = path_relative_to(a.path, relative_to);
    f.size = a.size;
    f.kept = a.keep;
    f.removed = a.kind == PowerLossAction::Kind::kRemove;
    r.bytes += f.size - f.kept;
    r.files.push_back(f);
  }
  for (auto& n : not_undone) r.not_undone.push_back(path_relative_to(n, relative_to));
  return r;
}

PowerLossReport apply_power_loss_here(const std::string& journal_path, const std::string& scope) {
  bool exists = false;
  const PowerJournal j = PowerJournal::parse(read_journal_text(journal_path, &exists));
  // The node opens its log for writing as it starts, so a node that ran with the shim has a journal: none means
  // the shim never ran there, and nothing dropped would be a claim without a measurement.
  if (!exists) throw ClusterError("power loss: no journal at " + journal_path + " (the power shim did not run)");
  std::map<std::string, std::optional<FileStat>> now;
  for (const auto& p : j.paths(scope)) {
    struct stat st;
    if (::lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      now[p] = FileStat{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                        static_cast<int64_t>(st.st_size)};
    } else {
      now[p] = std::nullopt;
    }
  }
  std::vector<std::string> not_undone;
  const auto actions = j.plan(now, scope, &not_undone);
  for (const auto& a : actions) {
    const int rc = a.kind == PowerLossAction::Kind::kRemove ? ::unlink(a.path.c_str())
                                                            : ::truncate(a.path.c_str(), static_cast<off_t>(a.keep));
    if (rc != 0) {
      throw ClusterError("power loss: cannot " +
                         std::string(a.kind == PowerLossAction::Kind::kRemove ? "remove " : "truncate ") + a.path +
                         ": " + std::strerror(errno));
    }
  }
  // The next incarnation starts from what is durable now: an empty journal.
  if (::truncate(journal_path.c_str(), 0) != 0) {
    throw ClusterError("power loss: cannot empty the journal " + journal_path + ": " + std::strerror(errno));
  }
  if (j.malformed() > 0) {
    not_undone.push_back(std::to_string(j.malformed()) + " journal line(s) could not be read (torn or garbled)");
  }
  return power_loss_report(actions, std::move(not_undone), j.records(), scope);
}

nlohmann::json to_json(const PowerLossReport& r) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : r.files) {
    files.push_back({{"path", f.path}, {"size", f.size}, {"kept", f.kept}, {"removed", f.removed}});
  }
  nlohmann::json j = {{"bytes", r.bytes}, {"files", files}, {"journal_records", r.records}};
  if (!r.not_undone.empty()) j["not_undone"] = r.not_undone;
  return j;
}

}  // namespace lockcheck
