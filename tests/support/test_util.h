// Helpers shared by the integration tests.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include "sys/process.h"
#include "tests/support/temp_dir.h"

#include <boost/filesystem.hpp>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace lockcheck {
namespace testing_util {

// A fresh temporary folder, removed when the object goes away.
// The pids redis-server wrote into the node logs of a run ("... pid=1234, just started").
inline std::vector<pid_t> node_pids(const std::string& run_dir) {
  std::vector<pid_t> pids;
  const std::regex re("pid=([0-9]+)");
  for (auto& e : boost::filesystem::directory_iterator(run_dir + "/nodes")) {
    if (e.path().extension() != ".log") continue;
    std::ifstream in(e.path().string());
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      if (std::regex_search(line, m, re)) pids.push_back(static_cast<pid_t>(std::stol(m[1])));
    }
  }
  return pids;
}

// True while pid exists and is not a zombie.
inline bool process_alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  std::string s;
  std::getline(stat, s);
  auto close = s.rfind(')');
  return close != std::string::npos && close + 2 < s.size() && s[close + 2] != 'Z';
}

// The single run folder under results (the one `latest` points at).
inline std::string latest_run(const std::string& results) {
  return boost::filesystem::canonical(results + "/latest").string();
}

// redis-server runs here (the tests that start real nodes skip without it, except under CI=true).
inline bool have_redis_server() {
  try {
    return run_command({"redis-server", "--version"}, std::chrono::seconds(5)).exit_code == 0;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace testing_util
}  // namespace lockcheck
