#include "cluster/ssh_hosts.h"

#include <pwd.h>
#include <unistd.h>

#include <cctype>
#include <fstream>
#include <set>

#include "core/config.h"
#include "core/json_int.h"

namespace lockcheck {

namespace {

std::string local_user() {
  if (const passwd* pw = ::getpwuid(::geteuid())) return pw->pw_name;
  return "";
}

bool name_ok(const std::string& s) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  }
  return true;
}

bool printable_no_space(const std::string& s) {
  for (char c : s) {
    if (!std::isgraph(static_cast<unsigned char>(c))) return false;
  }
  return !s.empty();
}

}  // namespace

SshHosts parse_ssh_hosts(const nlohmann::json& j, const std::string& path) {
  const std::string where = "--hosts " + path + ": ";
  if (!j.is_object()) throw ConfigError(where + "must be a JSON object with a \"hosts\" array");
  static const std::set<std::string> top = {"hosts", "known_hosts"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!top.count(it.key())) throw ConfigError(where + "unknown field \"" + it.key() + "\"");
  }
  SshHosts out;
  out.path = path;
  if (j.contains("known_hosts")) {
    if (!j["known_hosts"].is_string() || j["known_hosts"].get<std::string>().empty()) {
      throw ConfigError(where + "known_hosts: must be a non-empty string (a known_hosts file)");
    }
    out.known_hosts = j["known_hosts"].get<std::string>();
  }
  auto hosts = j.find("hosts");
  if (hosts == j.end() || !hosts->is_array() || hosts->empty()) {
    throw ConfigError(where + "hosts: must be a non-empty array of hosts");
  }
  static const std::set<std::string> known = {"name",     "address",   "port", "user", "key", "redis_server",
                                              "redis_sentinel", "etcd", "java", "work_dir", "base_port", "etcd_base_port",
                                              "zookeeper_base_port", "sudo"};
  std::set<std::string> names;
  for (size_t i = 0; i < hosts->size(); ++i) {
    const nlohmann::json& h = (*hosts)[i];
    const std::string at = where + "hosts[" + std::to_string(i) + "]";
    if (!h.is_object()) throw ConfigError(at + ": must be an object");
    for (auto it = h.begin(); it != h.end(); ++it) {
      if (!known.count(it.key())) throw ConfigError(at + ": unknown field \"" + it.key() + "\"");
    }
    auto str = [&](const char* field, std::string& dst, bool required) {
      auto f = h.find(field);
      if (f == h.end()) {
        if (required) throw ConfigError(at + "." + field + ": required");
        return;
      }
      if (!f->is_string() || !printable_no_space(f->get<std::string>())) {
        throw ConfigError(at + "." + field + ": must be a non-empty string without blanks");
      }
      dst = f->get<std::string>();
    };
    auto integer = [&](const char* field, int& dst, int lo, int hi) {
      auto f = h.find(field);
      if (f == h.end()) return;
      const std::optional<int> v = json_integer<int>(*f);
      if (!v || *v < lo || *v > hi) {
        throw ConfigError(at + "." + field + ": must be an integer from " + std::to_string(lo) + " to " +
                          std::to_string(hi));
      }
      dst = *v;
    };
    SshHost host;
    host.name = "h" + std::to_string(i + 1);
    host.user = local_user();
    str("name", host.name, false);
    if (!name_ok(host.name))
      throw ConfigError(at + ".name: '" + host.name + "' may hold only letters, digits, '-', '_'");
    if (!names.insert(host.name).second) throw ConfigError(at + ".name: '" + host.name + "' given twice");
    str("address", host.address, true);
    if (host.address[0] == '-') throw ConfigError(at + ".address: must not start with '-'");
    str("user", host.user, false);
    if (host.user.empty() || host.user[0] == '-') throw ConfigError(at + ".user: must be a user name");
    str("key", host.key, true);
    str("redis_server", host.redis_server, false);
    str("redis_sentinel", host.redis_sentinel, false);
    str("etcd", host.etcd, false);
    str("java", host.java, false);
    str("work_dir", host.work_dir, true);
    if (host.work_dir[0] != '/') throw ConfigError(at + ".work_dir: must be an absolute path");
    if (host.work_dir == "/") throw ConfigError(at + ".work_dir: must not be /");
    integer("port", host.port, 1, 65535);
    integer("base_port", host.base_port, 1, 65000);
    integer("etcd_base_port", host.etcd_base_port, 1, 65000);
    // The election port is zookeeper_election_port(client) = client + 1707, one up for each further member.
    integer("zookeeper_base_port", host.zookeeper_base_port, 1, 63000);
    if (h.contains("sudo")) {
      if (!h["sudo"].is_boolean()) throw ConfigError(at + ".sudo: must be true or false");
      host.sudo = h["sudo"].get<bool>();
    }
    out.hosts.push_back(host);
  }
  return out;
}

SshHosts load_ssh_hosts(const std::string& path) {
  if (path.empty()) throw ConfigError("--hosts: required with --cluster ssh (a hosts file; see scripts/ssh-testbed)");
  std::ifstream in(path);
  if (!in) throw ConfigError("--hosts " + path + ": cannot open");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError("--hosts " + path + ": not valid JSON (" + e.what() + ")");
  }
  return parse_ssh_hosts(j, path);
}

std::string shell_quote(const std::string& arg) {
  if (!arg.empty()) {
    bool plain = true;
    for (char c : arg) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || std::string("_@%+=:,./-").find(c) != std::string::npos)) {
        plain = false;
        break;
      }
    }
    if (plain) return arg;
  }
  std::string q = "'";
  for (char c : arg) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

std::string remote_command(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    s += shell_quote(a);
  }
  return s;
}

SshCommands::SshCommands(SshHost host, std::string known_hosts, std::string control_path,
                         std::chrono::seconds connect_timeout)
    : host_(std::move(host)),
      known_hosts_(std::move(known_hosts)),
      control_path_(std::move(control_path)),
      connect_timeout_(connect_timeout) {}

std::vector<std::string> SshCommands::common(bool scp) const {
  std::vector<std::string> o = {scp ? "-P" : "-p",
                                std::to_string(host_.port),
                                "-i",
                                host_.key,
                                "-o",
                                "IdentitiesOnly=yes",
                                "-o",
                                "BatchMode=yes",
                                "-o",
                                "PasswordAuthentication=no",
                                "-o",
                                "ConnectTimeout=" + std::to_string(connect_timeout_.count()),
                                "-o",
                                "ServerAliveInterval=5",
                                "-o",
                                "ServerAliveCountMax=3",
                                "-o",
                                "LogLevel=ERROR",
                                "-o",
                                "ControlPath=" + control_path_};
  if (known_hosts_.empty()) {
    o.insert(o.end(), {"-o", "StrictHostKeyChecking=accept-new"});
  } else {
    o.insert(o.end(), {"-o", "UserKnownHostsFile=" + known_hosts_, "-o", "StrictHostKeyChecking=yes"});
  }
  return o;
}

std::vector<std::string> SshCommands::options(bool master) const {
  std::vector<std::string> o = common(false);
  o.insert(o.end(), {"-o", master ? "ControlMaster=yes" : "ControlMaster=auto", "-o", "ControlPersist=no"});
  return o;
}

std::vector<std::string> SshCommands::master() const {
  std::vector<std::string> a = {"ssh"};
  for (auto& o : options(true)) a.push_back(o);
  a.insert(a.end(), {"-N", destination()});
  return a;
}

std::vector<std::string> SshCommands::master_exit() const {
  std::vector<std::string> a = {"ssh"};
  for (auto& o : common(false)) a.push_back(o);
  a.insert(a.end(), {"-O", "exit", destination()});
  return a;
}

std::vector<std::string> SshCommands::run(const std::vector<std::string>& argv, bool privileged) const {
  std::vector<std::string> a = {"ssh"};
  for (auto& o : options(false)) a.push_back(o);
  a.insert(a.end(), {"-T", destination(), "--"});
  std::vector<std::string> remote;
  if (privileged && host_.sudo) remote = {"sudo", "-n", "--"};
  remote.insert(remote.end(), argv.begin(), argv.end());
  a.push_back(remote_command(remote));
  return a;
}

std::vector<std::string> SshCommands::upload(const std::string& local, const std::string& remote) const {
  std::vector<std::string> a = {"scp", "-q", "-B"};
  for (auto& o : common(true)) a.push_back(o);
  a.insert(a.end(), {"-o", "ControlMaster=auto", "--", local, destination() + ":" + remote});
  return a;
}

std::vector<std::string> SshCommands::download(const std::string& remote, const std::string& local) const {
  std::vector<std::string> a = {"scp", "-q", "-B"};
  for (auto& o : common(true)) a.push_back(o);
  a.insert(a.end(), {"-o", "ControlMaster=auto", "--", destination() + ":" + remote, local});
  return a;
}

}  // namespace lockcheck
