#include "cluster/remote.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <thread>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/cluster.h"

namespace lockcheck {

using std::chrono::milliseconds;

// ---------------------------------------------------------------------------------------------------------
// The seam's helpers

std::string remote_trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::vector<std::string> remote_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) {
    line = remote_trim(line);
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

std::string remote_failure(const Remote& r, const std::vector<std::string>& argv, const RemoteCall& call,
                           const CommandResult& result) {
  const std::string err = remote_trim(result.err);
  return r.where() + ": `" + describe_argv(argv) + "` " +
         (result.timed_out ? "did not finish within " + std::to_string(call.timeout.count()) + " ms"
                           : "failed (exit " + std::to_string(result.exit_code) + ")") +
         (err.empty() ? "" : ": " + err);
}

std::string remote_check(const Remote& r, const std::vector<std::string>& argv, const RemoteCall& call,
                         const std::string& prefix) {
  CommandResult result = r.exec(argv, call);
  if (!result.ok()) throw ClusterError(prefix + ": " + remote_failure(r, argv, call, result));
  return result.out;
}

bool remote_try(const Remote& r, const std::vector<std::string>& argv, const RemoteCall& call, std::string* err) {
  CommandResult result = r.exec(argv, call);
  if (result.ok()) return true;
  if (err) *err = remote_failure(r, argv, call, result);
  return false;
}

// ---------------------------------------------------------------------------------------------------------
// Processes through exec: constant scripts run as `sh -c SCRIPT sh ARGS...`; everything variable is a quoted
// positional argument, never spliced into the script.

namespace {

// Start: $1 the pid file (empty: none), $2 the log, $3 the program (checked first: a program the host cannot run fails at
// once, rather than a readiness wait timing out on a server that never ran), $4 how many paths to remove, those
// paths, then the command. setsid puts the server in a session of its own (no hangup when the ssh or docker exec
// session ends; setsid and env exec in place, so $! is the server's pid); its output is appended to the log (a
// restart continues it); the pid is written to the pid file and printed.
constexpr const char* kStartScript =
    "p=$1; l=$2; prog=$3; n=$4; shift 4; while [ \"$n\" -gt 0 ]; do rm -rf -- \"$1\"; shift; n=$((n-1)); done; "
    "command -v \"$prog\" >/dev/null || { echo \"$prog: not found on this host\" >&2; exit 127; }; "
    "[ -z \"$p\" ] || rm -f -- \"$p\"; setsid \"$@\" >>\"$l\" 2>&1 </dev/null & pid=$!; "
    "[ -z \"$p\" ] || echo $pid >\"$p\"; echo $pid";
// Kill: each argument a pid. SIGKILL to every one first, in the order given (a stopped process gets SIGCONT too),
// then waits (at most 10 s) until each is gone or a zombie, so that their ports are free: the processes die side
// by side, not one after another. Fails when one is still there. Alive = its status could be read and is not Z: a
// process reaped between two looks is gone, not alive (one read, never `-e` then a read).
constexpr const char* kKillScript =
    "for p in \"$@\"; do kill -s CONT \"$p\" 2>/dev/null; kill -s KILL \"$p\" 2>/dev/null; done; "
    "alive() { st=$(grep '^State:' /proc/$1/status 2>/dev/null); [ -n \"$st\" ] && case \"$st\" in *Z*) return 1;; "
    "esac; }; i=0; while [ $i -lt 200 ]; do any=; for p in \"$@\"; do alive \"$p\" && any=1; done; "
    "[ -z \"$any\" ] && exit 0; sleep 0.05; i=$((i+1)); done; exit 1";
// Alive: $1 pid; exit 0 when it runs (not a zombie).
constexpr const char* kAliveScript =
    "st=$(grep '^State:' /proc/$1/status 2>/dev/null); [ -n \"$st\" ] || exit 1; case \"$st\" in *Z*) exit 1;; "
    "esac";
// Signal: $1 the signal, $2 the pid (the shell's kill: hosts need no /bin/kill).
constexpr const char* kSignalScript = "kill -s \"$1\" \"$2\"";
// Write: $1 the file, $2 the offset, $3 the byte count; the bytes on stdin, written with one write(2).
constexpr const char* kWriteAtScript =
    "dd of=\"$1\" bs=\"$3\" count=1 iflag=fullblock oflag=seek_bytes seek=\"$2\" conv=notrunc status=none";

}  // namespace

int Remote::start_process(const ProcessStart& p, milliseconds timeout) const {
  if (p.argv.empty()) throw ClusterError(where() + ": nothing to start");
  std::vector<std::string> argv = {"sh", "-c", kStartScript, "sh", p.pid_file,
                                   p.log, p.argv[0], std::to_string(p.remove_first.size())};
  argv.insert(argv.end(), p.remove_first.begin(), p.remove_first.end());
  if (!p.env.empty()) {
    argv.push_back("env");
    for (const auto& [k, v] : p.env) argv.push_back(k + "=" + v);
  }
  argv.insert(argv.end(), p.argv.begin(), p.argv.end());
  const RemoteCall call{false, "", timeout};
  const CommandResult r = exec(argv, call);
  const std::string out = remote_trim(r.out);
  if (!r.ok() || out.empty() || !std::all_of(out.begin(), out.end(), ::isdigit)) {
    throw ClusterError(where() + ": cannot start " + p.argv[0] + " (" +
                       (r.timed_out ? std::string("timed out") : "exit " + std::to_string(r.exit_code)) +
                       (remote_trim(r.err).empty() ? std::string() : ": " + remote_trim(r.err)) + ")");
  }
  return std::atoi(out.c_str());
}

void Remote::signal_process(int pid, const std::string& sig, milliseconds timeout) const {
  remote_check(*this, {"sh", "-c", kSignalScript, "sh", sig, std::to_string(pid)}, RemoteCall{false, "", timeout},
               "signal " + sig);
}

// The shared script, never an override: a transport's kill_process is its kill_processes of one, and a test calls
// Remote::kill_process to run the script on any transport.
void Remote::kill_process(int pid, milliseconds timeout) const { Remote::kill_processes({pid}, timeout); }

void Remote::kill_processes(const std::vector<int>& pids, milliseconds timeout) const {
  if (pids.empty()) return;
  std::vector<std::string> argv = {"sh", "-c", kKillScript, "sh"};
  std::string names;
  for (int pid : pids) {
    argv.push_back(std::to_string(pid));
    names += " " + argv.back();
  }
  remote_check(*this, argv, RemoteCall{false, "", timeout}, "kill" + names);
}

bool Remote::process_running(int pid, milliseconds timeout) const {
  try {
    return exec({"sh", "-c", kAliveScript, "sh", std::to_string(pid)}, RemoteCall{false, "", timeout}).ok();
  } catch (const std::exception&) {
    return false;
  }
}

void Remote::write_at(const std::string& path, uint64_t offset, const std::string& bytes, milliseconds timeout) const {
  remote_check(*this,
               {"sh", "-c", kWriteAtScript, "sh", path, std::to_string(offset), std::to_string(bytes.size())},
               RemoteCall{false, bytes, timeout}, "write " + path);
}

// ---------------------------------------------------------------------------------------------------------
// LocalRemote

// One thread that spawns (and reaps) every server of a LocalRemote, so that their PR_SET_PDEATHSIG follows it.
struct LocalRemote::Spawner {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> tasks;
  bool done = false;
  std::thread thread;

  Spawner() {
    thread = std::thread([this] {
      std::unique_lock<std::mutex> lock(mu);
      while (true) {
        cv.wait(lock, [this] { return done || !tasks.empty(); });
        if (tasks.empty()) return;
        auto task = std::move(tasks.front());
        tasks.pop_front();
        lock.unlock();
        task();
        lock.lock();
      }
    });
  }
  ~Spawner() {
    {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
    }
    cv.notify_all();
    thread.join();
  }
};

LocalRemote::LocalRemote(std::string name) : name_(std::move(name)) {}

LocalRemote::~LocalRemote() {
  std::map<int, std::unique_ptr<ChildProcess>> children;
  std::unique_ptr<Spawner> spawner;
  {
    std::lock_guard<std::mutex> lock(mu_);
    children.swap(children_);
    spawner.swap(spawner_);
  }
  for (auto& [pid, child] : children) child->kill_and_reap();
  children.clear();
  spawner.reset();  // joins the thread: nothing it spawned is left
}

void LocalRemote::on_spawner(const std::function<void()>& f) const {
  Spawner* s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!spawner_) spawner_ = std::make_unique<Spawner>();
    s = spawner_.get();
  }
  std::packaged_task<void()> task(f);
  auto done = task.get_future();
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->tasks.push_back([&task] { task(); });
  }
  s->cv.notify_all();
  done.get();  // rethrows what f threw; a spawn is bounded (fork and exec)
}

CommandResult LocalRemote::exec(const std::vector<std::string>& argv, const RemoteCall& call) const {
  CommandOptions o;
  o.timeout = call.timeout;
  o.stdin_data = call.input;
  o.own_process_group = true;  // as the other transports: a teardown outlives a terminal's Ctrl-C
  try {
    return run_command(argv, o);
  } catch (const std::exception& e) {
    throw ClusterError(where() + ": cannot run " + (argv.empty() ? std::string("nothing") : argv[0]) + ": " +
                       e.what());
  }
}

void LocalRemote::upload(const std::string& local, const std::string& remote, milliseconds) const {
  std::error_code ec;
  if (std::filesystem::exists(remote, ec)) throw ClusterError(where() + ": cannot upload to " + remote + ": it exists");
  std::filesystem::copy(local, remote, std::filesystem::copy_options::recursive, ec);
  if (ec) throw ClusterError(where() + ": cannot copy " + local + " to " + remote + ": " + ec.message());
}

void LocalRemote::download(const std::string& remote, const std::string& local, milliseconds) const {
  std::error_code ec;
  std::filesystem::copy_file(remote, local, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) throw ClusterError(where() + ": cannot copy " + remote + " to " + local + ": " + ec.message());
}

int LocalRemote::start_process(const ProcessStart& p, milliseconds) const {
  if (p.argv.empty()) throw ClusterError(where() + ": nothing to start");
  for (const auto& path : p.remove_first) {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) throw ClusterError(where() + ": cannot remove " + path + ": " + ec.message());
  }
  ProcessSpec spec;
  spec.argv = p.argv;
  spec.env = p.env;
  spec.stdout_path = p.log;
  spec.stderr_path = "=stdout";
  std::unique_ptr<ChildProcess> child;
  on_spawner([&] {
    try {
      child = std::make_unique<ChildProcess>(spec);
    } catch (const SpawnError& e) {
      throw ClusterError(where() + ": cannot start " + p.argv[0] + ": " + e.what());
    }
  });
  const int pid = child->pid();
  if (!p.pid_file.empty()) {
    const int fd = ::open(p.pid_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      const std::string text = std::to_string(pid) + "\n";
      (void)!::write(fd, text.data(), text.size());
      ::close(fd);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  children_[pid] = std::move(child);
  return pid;
}

void LocalRemote::signal_process(int pid, const std::string& sig, milliseconds) const {
  const int signo = sig == "STOP" ? SIGSTOP : sig == "CONT" ? SIGCONT : sig == "KILL" ? SIGKILL : sig == "TERM" ? SIGTERM : 0;
  if (signo == 0) throw ClusterError(where() + ": unknown signal " + sig);
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = children_.find(pid);
  if (it != children_.end()) {
    it->second->signal(signo);
    return;
  }
  if (::kill(pid, signo) != 0 && errno != ESRCH) {
    throw ClusterError(where() + ": kill -s " + sig + " " + std::to_string(pid) + ": " + std::strerror(errno));
  }
}

void LocalRemote::kill_processes(const std::vector<int>& pids, milliseconds) const {
  std::vector<std::unique_ptr<ChildProcess>> children;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int pid : pids) {
      const auto it = children_.find(pid);
      if (it == children_.end()) continue;
      children.push_back(std::move(it->second));
      children_.erase(it);
    }
  }
  // Every one signalled first, in the order given, then each reaped: they die side by side.
  for (int pid : pids) {
    ::kill(pid, SIGCONT);
    ::kill(pid, SIGKILL);
  }
  for (auto& child : children) child->kill_and_reap();
}

void LocalRemote::kill_process(int pid, milliseconds timeout) const { kill_processes({pid}, timeout); }

bool LocalRemote::process_running(int pid, milliseconds) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = children_.find(pid);
  if (it != children_.end()) return it->second->running();
  return ::kill(pid, 0) == 0;
}

void LocalRemote::write_at(const std::string& path, uint64_t offset, const std::string& bytes, milliseconds) const {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw ClusterError(where() + ": cannot open " + path + ": " + std::strerror(errno));
  const ssize_t n = ::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset));
  const int saved = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(bytes.size())) {
    throw ClusterError(where() + ": cannot write " + path + ": " + (n < 0 ? std::strerror(saved) : "short write"));
  }
}

}  // namespace lockcheck
