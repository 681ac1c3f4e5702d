// The SSH test bed (scripts/ssh-testbed: five hosts h1..h5 in network namespaces, each with its own sshd) for one
// test: brought up by the constructor, torn down by the destructor, which checks that nothing of it is left
// (no namespace, no link, no FORWARD rule, no sshd). Needs root.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "sys/process.h"

namespace lockcheck {
namespace testing_util {

class SshTestbed {
 public:
  // state: a folder of the test's own (the bed's keys and sshd configs live there).
  explicit SshTestbed(const std::string& state) : state_(state) {
    ::setenv("LOCKCHECK_TESTBED_DIR", state.c_str(), 1);
    const auto r = run_command({script(), "up", "5"}, std::chrono::seconds(120));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    hosts_ = r.out;
    while (!hosts_.empty() && (hosts_.back() == '\n' || hosts_.back() == ' ')) hosts_.pop_back();
  }
  ~SshTestbed() {
    const auto r = run_command({script(), "down"}, std::chrono::seconds(60));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(sh({"ip", "netns", "list"}).find("lcssh-h"), std::string::npos);
    EXPECT_EQ(sh({"ip", "link", "show"}).find("lcssh"), std::string::npos);
    EXPECT_EQ(sh({"iptables", "-S", "FORWARD"}).find("lockcheck-ssh-testbed"), std::string::npos);
    EXPECT_EQ(sh({"pgrep", "-af", "sshd_config"}).find(state_), std::string::npos);
  }
  SshTestbed(const SshTestbed&) = delete;
  SshTestbed& operator=(const SshTestbed&) = delete;

  // The hosts file the bed wrote.
  const std::string& hosts_file() const { return hosts_; }

  // What any of the bed's namespaces still has of lockcheck: iptables chains, processes besides sshd, run folders
  // in a host's work dir (/var/tmp/lockcheck-testbed/...).
  std::string leftovers() const {
    std::string found;
    for (int k = 1; k <= 5; ++k) {
      const std::string ns = "lcssh-h" + std::to_string(k);
      const std::string rules = sh({"ip", "netns", "exec", ns, "iptables", "-S"});
      if (rules.find("LC-") != std::string::npos) found += ns + " iptables: " + rules;
      std::istringstream pids(sh({"ip", "netns", "pids", ns}));
      std::string pid;
      while (pids >> pid) {
        std::string comm = sh({"ps", "-o", "comm=", "-p", pid});
        while (!comm.empty() && (comm.back() == '\n' || comm.back() == ' ')) comm.pop_back();
        if (comm.find("sshd") == std::string::npos && !comm.empty()) found += ns + " process " + pid + " " + comm;
      }
    }
    const std::string runs = sh({"sh", "-c", "ls -d " + state_ + "/*/work/lockcheck-* 2>/dev/null"});
    if (!runs.empty()) found += "run folders: " + runs;
    return found;
  }

 private:
  static std::string script() { return LOCKCHECK_SOURCE_DIR "/scripts/ssh-testbed"; }
  static std::string sh(const std::vector<std::string>& argv) {
    const auto r = run_command(argv, std::chrono::seconds(60));
    return r.out + r.err;
  }
  std::string state_;
  std::string hosts_;
};

}  // namespace testing_util
}  // namespace lockcheck
