#include "harness/runner.h"

#include <unistd.h>

#include <boost/filesystem.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "cluster/server_cluster.h"
#include "core/client_pauses.h"
#include "core/exit_codes.h"
#include "core/history.h"
#include "core/party.h"
#include "core/random.h"
#include "core/run_files.h"
#include "core/run_log.h"
#include "core/version.h"
#include "harness/cluster_factory.h"
#include "harness/plan.h"
#include "harness/terminal.h"
#include "locks/lock_client.h"
#include "nemesis/driver.h"
#include "report/html.h"
#include "report/report.h"
#include "report/results_json.h"
#include "report/summary.h"
#include "sys/process.h"
#include "sys/redis_conn.h"
#include "sys/signals.h"
#include "workloads/workload.h"

namespace fs = boost::filesystem;

namespace lockcheck {

int exit_code_for(Validity v) {
  switch (v) {
    case Validity::kValid: return kExitValid;
    case Validity::kInvalid: return kExitInvalid;
    case Validity::kUnknown: return kExitUnknown;
  }
  return kExitUnknown;
}

void print_checker_lines(std::ostream& out, const nlohmann::json& verdict) {
  out << "verdict: " << coloured_verdict(verdict.value("valid", "unknown")) << "\n";
  for (const auto& c : verdict.value("checkers", nlohmann::json::array())) {
    out << "  " << std::left << std::setw(14) << c.value("checker", "?") << std::setw(8) << c.value("valid", "?")
        << c.value("summary", "") << "\n";
  }
}

namespace {

std::string utc_stamp(const char* fmt) {
  std::time_t t = std::time(nullptr);  // wall clock: only to name the run, never to time it
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::ostringstream s;
  s << std::put_time(&tm, fmt);
  return s.str();
}

// Creates results/<run-id>/ and points results/latest at it.
std::string make_run_dir(const RunConfig& cfg) {
  fs::create_directories(cfg.results_dir);
  const std::string base = utc_stamp("%Y%m%dT%H%M%SZ") + "-" +
                           (cfg.label.empty() ? cfg.lock + "-" + cfg.workload : cfg.label) + "-s" +
                           std::to_string(cfg.seed);
  std::string dir = cfg.results_dir + "/" + base;
  for (int i = 2; fs::exists(dir); ++i) dir = cfg.results_dir + "/" + base + "-" + std::to_string(i);
  fs::create_directories(dir + "/nodes");
  const std::string latest = cfg.results_dir + "/latest";
  boost::system::error_code ec;
  fs::remove(latest, ec);
  fs::create_directory_symlink(fs::path(dir).filename(), latest, ec);
  return dir;
}

// One line, rewritten in place on a terminal; a line every 5 s elsewhere (CI logs).
class Progress {
 public:
  Progress(std::ostream& out, bool enabled, double limit_s) : out_(out), enabled_(enabled), limit_s_(limit_s) {
    tty_ = ::isatty(2) == 1;
  }
  // c: the client processes' counts (nemesis ops are not counted: as results.json's "ops" and the stats checker).
  void tick(double elapsed_s, const ClientOpCounts& c, bool force = false) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    auto every = tty_ ? std::chrono::milliseconds(250) : std::chrono::milliseconds(5000);
    if (!force && now - last_ < every) return;
    last_ = now;
    std::ostringstream s;
    s << std::fixed << std::setprecision(1) << "[" << std::min(elapsed_s, limit_s_) << "/" << limit_s_ << " s] client ops ok "
      << c.ok.load() << " fail " << c.fail.load() << " info " << c.info.load();
    if (tty_) {
      out_ << "\r" << s.str() << "   " << std::flush;
    } else {
      out_ << s.str() << "\n" << std::flush;
    }
  }
  void done() {
    if (enabled_ && tty_) out_ << "\n";
  }

 private:
  std::ostream& out_;
  bool enabled_;
  bool tty_ = false;
  double limit_s_;
  std::chrono::steady_clock::time_point last_{};
};

// The client processes: `concurrency` slots, each a thread running the workload's process loop; a process
// retired after an info op is replaced in its slot by a fresh process id (slot + k * concurrency).
class Workers {
 public:
  Workers(const Plan& plan, Cluster& cluster, HistoryWriter& history, Workload& workload, const std::atomic<bool>& stop,
          RunLog& log, ClientPauses& pauses, std::string run_dir, ClientOpCounts& counts)
      : plan_(plan),
        cfg_(plan.config),
        cluster_(cluster),
        history_(history),
        workload_(workload),
        stop_(stop),
        log_(log),
        pauses_(pauses),
        run_dir_(std::move(run_dir)),
        counts_(counts) {}
  ~Workers() { join(); }

  void start() {
    for (int slot = 0; slot < cfg_.concurrency; ++slot) {
      threads_.emplace_back([this, slot] { slot_loop(slot); });
    }
  }
  void join() {
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  // Waits until every slot's thread has returned, at most `bound`. True when they all did (then joins them).
  bool join_within(std::chrono::milliseconds bound) {
    std::unique_lock<std::mutex> lock(mu_);
    const bool all = done_cv_.wait_for(lock, bound, [&] { return finished_ == static_cast<int>(threads_.size()); });
    lock.unlock();
    if (all) join();
    return all;
  }
  // The processes whose threads have not returned (what was stuck), for the error message.
  std::vector<Process> live_processes() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Process> out;
    for (const auto& [slot, p] : current_) out.push_back(p);
    return out;
  }
  std::string first_error() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

 private:
  void slot_loop(int slot) {
    struct Done {  // marks the slot finished on every way out
      Workers* w;
      int slot;
      ~Done() {
        std::lock_guard<std::mutex> lock(w->mu_);
        w->current_.erase(slot);
        ++w->finished_;
        w->done_cv_.notify_all();
      }
    } done{this, slot};
    const LockAlgorithm* algo = plan_.lock;
    const std::string party = Party::client(static_cast<size_t>(slot)).name();
    int quick_retirements = 0;
    auto started = std::chrono::steady_clock::now();
    for (Process p = slot; !stop_.load(); p += cfg_.concurrency) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        current_[slot] = p;
      }
      if (p != slot) {
        const bool quick = std::chrono::steady_clock::now() - started < std::chrono::seconds(1);
        quick_retirements = quick ? quick_retirements + 1 : 0;
        if (!sleep_unless_stopped(stop_, retire_backoff(p, quick_retirements))) return;
      }
      started = std::chrono::steady_clock::now();
      if (slot == 0 && std::getenv("LOCKCHECK_TEST_STUCK_WORKER") != nullptr) {
        // Test hook (tests/run_test.cc): a worker that ignores the stop flag, as a client stuck in a call
        // would. The run must still end, within the stop bound, as a harness error.
        for (int i = 0; i < 6000; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      try {
        LockOptions lo =
            run_lock_options(plan_, cluster_, party, p, run_dir_ + "/clients/" + process_name(p) + ".stderr");
        // A loss notice is stamped when the client's line is read (HistoryWriter::record stamps the time).
        lo.on_lost = [this, p](const std::string& key, const std::string& detail) {
          Op notice;
          notice.process = p;
          notice.type = OpType::kInfo;
          notice.f = lost_f();
          notice.key = key;
          notice.value = {{"detail", detail}};
          ClientOpCounts::record(&counts_, history_, notice);
        };
        auto client = algo->make(lo);
        ProcessEnv env{p,        *client,
                       history_, std::mt19937_64(derive_seed(cfg_.seed, static_cast<uint64_t>(p))),
                       stop_,    WorkloadOptions::from(cfg_),
                       &pauses_, &counts_};
        if (workload_.run_process(env) == ProcessExit::kStopped) return;
        log_.log("process " + process_name(p) + " retired after an info op; slot c" + std::to_string(slot) +
                 " continues as process " + process_name(p + cfg_.concurrency));
      } catch (const std::exception& e) {
        // A harness bug or a client that cannot even be made: record it and stop this slot, not the run.
        std::lock_guard<std::mutex> lock(mu_);
        if (error_.empty()) error_ = "process " + process_name(p) + ": " + e.what();
        log_.log("process " + process_name(p) + " failed: " + e.what());
        return;
      }
    }
  }

  const Plan& plan_;
  const RunConfig& cfg_;
  Cluster& cluster_;
  HistoryWriter& history_;
  Workload& workload_;
  const std::atomic<bool>& stop_;
  RunLog& log_;
  ClientPauses& pauses_;
  std::string run_dir_;
  ClientOpCounts& counts_;
  // After an info op the slot's next process waits before its first op: a short randomised backoff that grows
  // with the retirements in a row, so an outage cannot turn into thousands of retirements a second.
  // streak: how many processes of this slot in a row were retired within a second of starting.
  std::chrono::milliseconds retire_backoff(Process p, int streak) {
    std::mt19937_64 rng(derive_seed(cfg_.seed, 2000 + static_cast<uint64_t>(p)));
    const int64_t cap = std::min<int64_t>(1000, 20LL << std::min(streak, 6));
    return std::chrono::milliseconds(uniform(rng, cap / 2, cap));
  }

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable done_cv_;
  int finished_ = 0;
  std::map<int, Process> current_;  // slot -> its live process
  std::string error_;
};

// report.html for the run and results/index.html; a report that cannot be written is said, not fatal.
// h: the run's history when it has been read already (parsed once per run or check), else null.
void write_reports(const std::string& run_dir, std::ostream& out, const History* h = nullptr,
                   const std::vector<int64_t>* pairs = nullptr) {
  try {
    if (h != nullptr) {
      write_report(run_dir, *h, pairs);
    } else {
      write_report(run_dir);
    }
    write_index(fs::path(run_dir).parent_path().string());
  } catch (const std::exception& e) {
    out << "lockcheck: cannot write the report: " << e.what() << "\n";
  }
}
// Runs a function when the scope ends, also by an exception (the run's orderly stop on every path).
class OnScopeExit {
 public:
  explicit OnScopeExit(std::function<void()> fn) : fn_(std::move(fn)) {}
  ~OnScopeExit() { fn_(); }
  OnScopeExit(const OnScopeExit&) = delete;
  OnScopeExit& operator=(const OnScopeExit&) = delete;

 private:
  std::function<void()> fn_;
};

// The last lines of the file at path (its last 64 KB read), [] when it cannot be read.
std::vector<std::string> file_tail(const std::string& path, size_t lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - 65536);
  in.seekg(from);
  std::string text(static_cast<size_t>(size - from), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
  if (from > 0) text = text.substr(std::min(text.size(), text.find('\n') + 1));  // a cut first line is dropped
  return report::last_lines(text, lines);
}

// Where process p's external client writes its stderr: the lock option client_stderr_path when given, else the
// run folder's clients/pN.stderr (run_lock_options). Relative to dir when under it.
std::string client_stderr_of(const RunConfig& cfg, Process p) {
  if (cfg.lock_opts.is_object()) {
    auto it = cfg.lock_opts.find("client_stderr_path");
    if (it != cfg.lock_opts.end() && it->is_string() && !it->get<std::string>().empty()) return it->get<std::string>();
  }
  return "clients/" + process_name(p) + ".stderr";
}

// results.json's "client_exits": the client processes that exited by themselves (report/summary.h), each with the
// file that holds its stderr and its last 10 lines.
nlohmann::json client_exits_json(const RunConfig& cfg, const std::string& dir, const History& h) {
  const std::vector<report::ClientExit> exits = report::client_exits(h);
  nlohmann::json out = report::client_exits_json(exits);
  for (size_t i = 0; i < out.size(); ++i) {
    const std::string file = client_stderr_of(cfg, exits[i].process);
    out[i]["stderr_file"] = file;
    out[i]["stderr_tail"] = file_tail(file.front() == '/' ? file : dir + "/" + file, 10);
  }
  return out;
}

// Said on out (once per process, the first few) when a client process exits by itself during the run; all of
// them are listed at its end. Called by the history writer's observer (under its lock: short).
class ExitAnnouncer {
 public:
  ExitAnnouncer(std::ostream& out, RunLog& log, const RunConfig& cfg, std::string dir)
      : out_(out), log_(log), cfg_(cfg), dir_(std::move(dir)), nl_(cfg.progress && ::isatty(2) == 1 ? "\n" : "") {}
  void observe(const Op& op) {
    const auto x = report::client_exit_of(op);
    if (!x) return;
    ++count_;
    const std::string file = client_stderr_of(cfg_, x->process);
    const std::string line = "client " + process_name(x->process) + " " + x->why + " at " +
                             report::fixed(static_cast<double>(x->time_ns) / 1e9, 3) +
                             " s; its stderr: " + (file.front() == '/' ? file : dir_ + "/" + file);
    log_.log(line);
    if (count_ <= kSaid) out_ << nl_ << "lockcheck: " << line << "\n" << std::flush;
    if (count_ == kSaid + 1) out_ << nl_ << "lockcheck: more client processes exit; the end of the run lists them\n";
  }

 private:
  static constexpr int kSaid = 3;
  std::ostream& out_;
  RunLog& log_;
  const RunConfig& cfg_;
  std::string dir_;
  const char* nl_;  // ends the progress line first when it is one rewritten in place (a terminal)
  int count_ = 0;
};

// What was tested and what the clients did, before the verdict: the one sentence of the run, the client op counts
// with what they mean, and every client process that exited by itself (report/summary.h: the report's top says
// the same).
void print_run_summary(std::ostream& out, const nlohmann::json& config, const nlohmann::json& results,
                       const History& h, const std::string& run_dir) {
  out << "tested: " << report::run_sentence(config, results, h) << "\n";
  const report::ClientTally t = report::client_tally(h);
  out << "client ops: " << report::ops_words(t) << "; " << t.nemesis << " nemesis ops\n";
  for (const auto& line : report::client_exit_lines(results, t, run_dir + "/")) out << line << "\n";
}

void print_verdict(std::ostream& out, const nlohmann::json& results, const std::string& run_dir) {
  print_checker_lines(out, results);
  out << "results: " << run_dir << "\n";
  out << "report:  " << run_dir << "/report.html\n";
}

// What results.json says of every run, whatever its end: id, start, duration, op counts, versions, the server. The
// server's version is the one its nodes answered (server_versions: {"line", "nodes"}, read once they ran); when
// they never answered, the results say what was asked for and that it was not read. extra_versions: what the
// workload ran beside the nodes (its resource store).
nlohmann::json results_head(const Plan& plan, const std::string& dir, const std::string& started_at,
                            double duration_s, const OpCounts& c, const nlohmann::json& server_versions,
                            const ClientOpCounts* client_counts, const nlohmann::json& extra_versions,
                            const nlohmann::json& server_settings) {
  const RunConfig& cfg = plan.config;
  std::string server;
  if (server_versions.is_object()) {
    server = server_versions.value("line", "not read");
  } else {
    server = (cfg.server_version.empty() ? std::string("the hosts' own") : cfg.server_version) +
             " (asked for; not read from the nodes)";
  }
  nlohmann::json head = {{"run_id", fs::path(dir).filename().string()},
                         {"started_at", started_at},
                         {"duration_s", duration_s},
                         {"ops", {{"ok", c.ok}, {"fail", c.fail}, {"info", c.info}}},  // client ops
                         {"versions", {{"lockcheck", kLockcheckVersion}, {cfg.server, server}}}};
  for (const auto& [k, v] : extra_versions.items()) head["versions"][k] = v;
  // What the clients counted themselves (every op they handed to the history, nemesis ops not included): a
  // history read back from history.jsonl must hold exactly these (bench/soak.sh checks it).
  if (client_counts != nullptr) {
    // "ops": the client ops, as the report's headline and the stats checker count them (nemesis ops apart; the
    // run's end replaces these with the history's own count, loss notices left out).
    head["ops"] = {{"ok", client_counts->ok.load()}, {"fail", client_counts->fail.load()},
                   {"info", client_counts->info.load()}};
    head["client_ops"] = {{"invoke", client_counts->invoke.load()},
                          {"ok", client_counts->ok.load()},
                          {"fail", client_counts->fail.load()},
                          {"info", client_counts->info.load()}};
  }
  if (server_versions.is_object()) head["node_versions"] = server_versions.value("nodes", nlohmann::json::object());
  // The server kind as it ran: its options (defaults filled in) and what it derived from the run (a ZooKeeper
  // ensemble's session timing follows --ttl-ms), for the report.
  // Only the options that have an effect with the others (no Sentinel settings without Sentinels), and the run
  // settings that have none in this run: the report leaves both out.
  head["server"] = {{"name", cfg.server}, {"options", applying_server_options(plan)}, {"settings", server_settings}};
  head["settings_not_applying"] = settings_not_applying(plan);
  return head;
}

// The server version each node answers once the cluster runs ({"line", "nodes": {name: version}}), logged, and
// said on out when it is not the one asked for (a hosts file naming another build, say).
nlohmann::json record_node_versions(const RunConfig& cfg, const ServerCluster& cluster, RunLog& log,
                                    std::ostream& out) {
  const std::vector<std::string> versions = cluster.node_versions();
  nlohmann::json nodes = nlohmann::json::object();
  std::map<std::string, std::string> nodes_of;  // version -> its nodes
  for (size_t i = 0; i < versions.size(); ++i) {
    nodes[cluster.nodes()[i].name] = versions[i];
    auto& list = nodes_of[versions[i].empty() ? "not read" : versions[i]];
    list += (list.empty() ? "" : ", ") + cluster.nodes()[i].name;
  }
  // "3.4.3" when every node said the same, else each version with its nodes ("3.4.3 (n1, n2), not read (n3)").
  std::string line;
  if (nodes_of.size() == 1 && nodes_of.begin()->first != "not read") {
    line = nodes_of.begin()->first;
  } else {
    for (const auto& [v, list] : nodes_of) line += (line.empty() ? "" : ", ") + v + " (" + list + ")";
    if (line.empty()) line = "not read";
  }
  log.log(cfg.server + " version read from the nodes: " + line);
  if (!cfg.server_version.empty() && line != cfg.server_version) {
    out << "lockcheck: --server-version " << cfg.server_version << " was asked for; the nodes answered " << line
        << "\n";
    log.log("the nodes' version is not the one asked for (" + cfg.server_version + ")");
  }
  return {{"line", line}, {"nodes", nodes}};
}

// The results of a run that ended in a harness error or an interrupt: verdict unknown, the error said.
nlohmann::json unfinished_results(nlohmann::json results, const std::string& error) {
  results["valid"] = "unknown";
  results["error"] = error;
  results["checkers"] = nlohmann::json::array();
  return results;
}

// The end of a run whose workers are stuck: nodes stopped, results.json and the report written, the history
// kept, exit status 3, without unwinding (see run_test).
[[noreturn]] void abandon_stuck_run(const Plan& plan, const std::string& dir, Cluster& cluster,
                                    HistoryWriter& history, RunLog& log, const std::string& started_at,
                                    const nlohmann::json& server_versions, const ClientOpCounts& client_counts,
                                    const nlohmann::json& extra_versions, const nlohmann::json& server_settings,
                                    const std::string& why, std::ostream& out) {
  log.log(why);
  cluster.stop();
  const OpCounts c = history.counts();
  const nlohmann::json results = results_head(plan, dir, started_at, plan.config.time_limit_s, c, server_versions,
                                              &client_counts, extra_versions, server_settings);
  try {
    write_json_file(dir + "/results.json", unfinished_results(results, why));
  } catch (const std::exception&) {
  }
  write_reports(dir, out);
  out << "lockcheck: " << why << "\n"
      << "the history so far is kept; check it with: lockcheck check " << dir << "\n"
      << "results: " << dir << "\n"
      << std::flush;
  std::cout.flush();
  std::cerr.flush();
  std::_Exit(kExitHarness);
}

}  // namespace

std::chrono::milliseconds stop_bound(const RunConfig& cfg) {
  // Long enough for every call in flight to end by its own timeouts (a sequential Redlock round over every
  // node, connect + op timeout each, twice for a retry), plus the external client's own timeout.
  const int64_t per_call =
      static_cast<int64_t>(cfg.nodes) * 2 * (std::min<int64_t>(cfg.op_timeout_ms, 1000) + cfg.op_timeout_ms);
  return std::chrono::milliseconds(5000 + per_call);
}

nlohmann::json check_history(const RunConfig& cfg, const History& h, const std::vector<int64_t>* pairs) {
  const std::vector<std::string> names = checkers_for(cfg);
  CheckOptions opts;
  opts.timeout = std::chrono::milliseconds(static_cast<int64_t>(cfg.checker_timeout_s * 1000));
  opts.ttl_ms = cfg.ttl_ms;
  opts.op_timeout_ms = cfg.op_timeout_ms;
  // One pairing of invokes and completions for every checker.
  std::vector<int64_t> own_pairs;
  if (pairs == nullptr || pairs->size() != h.size()) {
    own_pairs = pair_index(h);
    pairs = &own_pairs;
  }
  opts.pairs = pairs;
  Validity overall = Validity::kValid;
  nlohmann::json checkers = nlohmann::json::array();
  for (const auto& name : names) {
    auto c = make_checker(name);
    CheckResult r;
    if (!c) {
      r.checker = name;
      r.valid = Validity::kUnknown;
      r.summary = "checker not available in this build";
    } else {
      auto t0 = std::chrono::steady_clock::now();
      r = run_checker(*c, h, opts);
      r.stats["elapsed_ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    overall = merge(overall, r.valid);
    checkers.push_back(r);
  }
  return {{"valid", to_string(overall)}, {"checkers", checkers}};
}

RunConfig read_run_config(const std::string& run_dir) {
  RunConfig cfg;
  from_json(read_json_file(run_dir + "/config.json"), cfg);
  return cfg;
}

RunOutcome run_test(RunConfig given, std::ostream& out, const Schedule* replay) {
  RunOutcome outcome;
  if (given.seed == 0) given.seed = os_random_u64() >> 1;  // fits a JSON integer on every reader
  const Plan plan = resolve_plan(std::move(given));
  const RunConfig& cfg = plan.config;
  InterruptGuard interrupt;
  try {
    outcome.run_dir = make_run_dir(cfg);
  } catch (const std::exception& e) {
    out << "lockcheck: cannot create the results folder under " << cfg.results_dir << ": " << e.what() << "\n";
    outcome.exit_code = kExitHarness;
    return outcome;
  }
  const std::string dir = outcome.run_dir;
  if (const char* file = std::getenv(kRunDirFileEnv); file != nullptr && *file != '\0') {
    std::ofstream(file, std::ios::trunc) << dir << "\n";
  }
  RunLog log(dir + "/lockcheck.log");
  write_json_file(dir + "/config.json", cfg);
  if (replay) log.log("fault schedule replayed from a stored one: " + std::to_string(replay->plan.size()) + " steps");
  const std::string started_at = utc_stamp("%Y-%m-%dT%H:%M:%SZ");
  out << "lockcheck: run " << fs::path(dir).filename().string() << " (lock " << cfg.lock << ", workload "
      << cfg.workload << ", nemesis " << (cfg.nemesis.empty() ? "none" : nlohmann::json(cfg.nemesis).dump())
      << ", seed " << cfg.seed << ")\n";
  if (cfg.nodes_from_server) {
    out << "lockcheck: --server " << cfg.server << " as configured needs " << cfg.nodes << " nodes (not the default "
        << RunConfig{}.nodes << "; --nodes sets it)\n";
  }

  MonotonicClock clock;
  ExitAnnouncer announcer(out, log, cfg, dir);
  std::unique_ptr<ServerCluster> cluster;
  nlohmann::json extra_versions = nlohmann::json::object();   // the workload's resource store
  nlohmann::json server_settings = nlohmann::json::object();  // what the server kind derived from the run
  std::string failure;
  double duration_s = 0;
  OpCounts counts;
  nlohmann::json server_versions;  // read from the nodes once they run
  ClientOpCounts client_counts;    // what the client processes counted themselves
  try {
    cluster = make_cluster(plan, dir);
    log.log("starting " + std::to_string(cfg.nodes) + " nodes (" + cluster->describe() + ")");
    server_settings = cluster->server().settings();
    if (const std::string line = cluster->server().describe_settings(); !line.empty()) log.log(line);
    cluster->start();
    for (const auto& n : cluster->nodes()) log.log("node " + n.name + " at " + n.endpoint.str());
    server_versions = record_node_versions(cfg, *cluster, log, out);
    HistoryWriter history(dir + "/history.jsonl", &clock);
    history.observe([&announcer](const Op& op) { announcer.observe(op); });
    auto workload = plan.workload->make();
    WorkloadEnv wenv{WorkloadOptions::from(cfg), *cluster, history, dir, &client_counts};
    workload->setup(wenv);
    extra_versions = workload->versions();
    {
      // Scoped in this order so that, whatever ends the run (time limit, signal, exception), the stop flag is
      // set, then every fault is undone (the nemesis driver heals, resumes, resets clocks, ends client
      // pauses), then the workers are joined, then the driver's thread ends; the cluster stops after that.
      std::atomic<bool> stop{false};
      ClientPauses pauses(cfg.concurrency);
      NemesisDriver nemesis(cfg, *cluster, history, pauses, &log, replay);
      Workers workers(plan, *cluster, history, *workload, stop, log, pauses, dir, client_counts);
      OnScopeExit stop_on_exit([&] {
        stop.store(true);
        nemesis.finish();
      });
      Progress progress(out, cfg.progress, cfg.time_limit_s);
      nemesis.start(dir + "/schedule.json");
      workers.start();
      const auto limit = std::chrono::duration<double>(cfg.time_limit_s);
      const auto t0 = std::chrono::steady_clock::now();
      while (std::chrono::steady_clock::now() - t0 < limit && !interrupt.interrupted()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        progress.tick(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), client_counts);
      }
      stop.store(true);
      log.log(interrupt.interrupted() ? "interrupted by signal " + std::to_string(interrupt.signal_number())
                                      : "time limit reached");
      nemesis.finish();
      const auto bound = stop_bound(cfg);
      if (!workers.join_within(bound)) {
        // A worker is stuck in a call that ignores its timeouts: a harness bug. Every fault is already undone;
        // stop the nodes, keep the history, say which processes were stuck, and end the process here (the
        // stuck threads still use this scope's objects, so it cannot unwind).
        std::string stuck;
        for (Process p : workers.live_processes()) stuck += (stuck.empty() ? "" : ", ") + process_name(p);
        const std::string why = "client process" + std::string(stuck.find(',') == std::string::npos ? " " : "es ") +
                                stuck + " did not stop within " + std::to_string(bound.count()) +
                                " ms after the run ended (a call that ignores its timeouts): harness error";
        progress.done();
        abandon_stuck_run(plan, dir, *cluster, history, log, started_at, server_versions, client_counts,
                          extra_versions, server_settings, why, out);
      }
      progress.tick(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), client_counts,
                    true);
      progress.done();
      duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      failure = workers.first_error();
      if (failure.empty()) failure = nemesis.error();
    }
    workload->finish(wenv);
    counts = history.counts();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (cluster) {
    log.log("stopping the cluster");
    cluster->stop();
    log.log("cluster stopped");
  }

  nlohmann::json results = results_head(plan, dir, started_at, duration_s, counts, server_versions, &client_counts,
                                        extra_versions, server_settings);

  nlohmann::json nodes = nlohmann::json::array();
  if (cluster) {
    for (const auto& n : cluster->nodes()) {
      nodes.push_back({{"name", n.name},
                       {"role", n.role == NodeRole::kReplica ? "replica" : "master"},
                       {"endpoint", n.endpoint.str()},
                       {"log", "nodes/" + fs::path(n.log_path).filename().string()}});
    }
  }
  results["nodes"] = nodes;

  if (!failure.empty() || interrupt.interrupted()) {
    const bool interrupted = failure.empty();
    results = unfinished_results(
        results, interrupted ? "interrupted by signal " + std::to_string(interrupt.signal_number()) : failure);
    write_json_file(dir + "/results.json", results);
    write_reports(dir, out);
    log.log(results["error"].get<std::string>());
    out << "lockcheck: " << results["error"].get<std::string>() << "\n";
    if (interrupted) out << "the history so far is kept; check it with: lockcheck check " << dir << "\n";
    out << "results: " << dir << "\n";
    outcome.valid = Validity::kUnknown;
    outcome.exit_code = interrupted ? 128 + interrupt.signal_number() : kExitHarness;
    return outcome;
  }

  History h = read_history(dir + "/history.jsonl");
  out << "checking " << h.size() << " ops ...\n";
  const std::vector<int64_t> pairs = pair_index(h);
  nlohmann::json verdict = check_history(cfg, h, &pairs);
  results["valid"] = verdict["valid"];
  results["checkers"] = verdict["checkers"];
  // The client ops as the stats checker counts them (loss notices left out), and the clients that exited.
  const report::ClientTally tally = report::client_tally(h);
  results["ops"] = {{"ok", tally.ok}, {"fail", tally.fail}, {"info", tally.info}};
  const nlohmann::json exits = client_exits_json(cfg, dir, h);
  if (!exits.empty()) {
    results["client_exits"] = exits;
    results["client_exit_count"] = report::client_exits(h).size();
  }
  report::add_first_anomaly_and_coverage(results, h, &pairs);
  write_json_file(dir + "/results.json", results);
  write_reports(dir, out, &h, &pairs);
  print_run_summary(out, nlohmann::json(cfg), results, h, dir);
  print_verdict(out, results, dir);
  outcome.valid = *validity_from_string(results["valid"].get<std::string>());
  outcome.exit_code = exit_code_for(outcome.valid);
  return outcome;
}

RunOutcome check_run(const std::string& run_dir_arg, std::ostream& out, std::optional<double> checker_timeout_s,
                     bool write_files) {
  std::string run_dir = run_dir_arg;  // as given; "RUN/" (a shell's completion) reads RUN in what is printed
  while (run_dir.size() > 1 && run_dir.back() == '/') run_dir.pop_back();
  RunConfig cfg = read_run_config(run_dir);
  if (checker_timeout_s) cfg.checker_timeout_s = *checker_timeout_s;
  std::vector<std::string> warnings;
  History h = read_history(run_dir + "/history.jsonl", &warnings);
  for (const auto& w : warnings) out << "lockcheck check: warning: " << w << "\n";
  RunOutcome o;
  o.run_dir = run_dir;
  if (!write_files) {
    const nlohmann::json verdict = check_history(cfg, h);
    print_checker_lines(out, verdict);
    out << "wrote nothing (--verdict-only): " << run_dir << " is as it was\n";
    o.valid = *validity_from_string(verdict["valid"].get<std::string>());
    o.exit_code = exit_code_for(o.valid);
    return o;
  }
  nlohmann::json results = nlohmann::json::object();
  if (fs::exists(run_dir + "/results.json")) {
    try {
      results = read_json_file(run_dir + "/results.json");
    } catch (const ConfigError&) {
      results = nlohmann::json::object();  // rewritten below
    }
  }
  const std::vector<int64_t> pairs = pair_index(h);
  nlohmann::json verdict = check_history(cfg, h, &pairs);
  results["valid"] = verdict["valid"];
  results["checkers"] = verdict["checkers"];
  report::add_first_anomaly_and_coverage(results, h, &pairs);
  results.erase("error");
  write_json_file(run_dir + "/results.json", results);
  write_reports(run_dir, out, &h, &pairs);
  print_run_summary(out, read_json_file(run_dir + "/config.json"), results, h, run_dir);
  print_verdict(out, results, run_dir);
  out << "rewrote " << run_dir << "/results.json (the verdict) and report.html; --verdict-only writes nothing\n";
  o.valid = *validity_from_string(results["valid"].get<std::string>());
  o.exit_code = exit_code_for(o.valid);
  return o;
}

}  // namespace lockcheck
