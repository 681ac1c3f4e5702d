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

SshHosts parse_ssh_hosts(const nlohmann::json& j, const std::string& path, const SshHostsSchema& schema) {
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
  std::set<std::string> known = {"name", "address", "port", "user", "key", "work_dir", "sudo", "servers"};
  std::set<std::string> kinds;
  for (const auto& k : schema.kinds) {
    kinds.insert(k.name);
    for (const auto& f : k.legacy_programs) known.insert(f.first);
    for (const auto& f : k.legacy_ports) known.insert(f.first);
  }
  std::set<std::string> names, noted;
  for (size_t i = 0; i < hosts->size(); ++i) {
    const nlohmann::json& h = (*hosts)[i];
    const std::string at = where + "hosts[" + std::to_string(i) + "]";
    if (!h.is_object()) throw ConfigError(at + ": must be an object");
    for (auto it = h.begin(); it != h.end(); ++it) {
      if (!known.count(it.key())) throw ConfigError(at + ": unknown field \"" + it.key() + "\"");
    }
    auto str_value = [&](const nlohmann::json& v, const std::string& field) {
      if (!v.is_string() || !printable_no_space(v.get<std::string>())) {
        throw ConfigError(at + "." + field + ": must be a non-empty string without blanks");
      }
      return v.get<std::string>();
    };
    auto str = [&](const char* field, std::string& dst, bool required) {
      auto f = h.find(field);
      if (f == h.end()) {
        if (required) throw ConfigError(at + "." + field + ": required");
        return;
      }
      dst = str_value(*f, field);
    };
    auto int_value = [&](const nlohmann::json& v, const std::string& field, int lo, int hi) {
      const std::optional<int> x = json_integer<int>(v);
      if (!x || *x < lo || *x > hi) {
        throw ConfigError(at + "." + field + ": must be an integer from " + std::to_string(lo) + " to " +
                          std::to_string(hi));
      }
      return *x;
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
    str("work_dir", host.work_dir, true);
    if (host.work_dir[0] != '/') throw ConfigError(at + ".work_dir: must be an absolute path");
    if (host.work_dir == "/") throw ConfigError(at + ".work_dir: must not be /");
    if (h.contains("port")) host.port = int_value(h["port"], "port", 1, 65535);
    if (h.contains("sudo")) {
      if (!h["sudo"].is_boolean()) throw ConfigError(at + ".sudo: must be true or false");
      host.sudo = h["sudo"].get<bool>();
    }
    // The older fields first, so that "servers" (the newer form) wins where both name the same thing.
    for (const auto& k : schema.kinds) {
      for (const auto& [field, program] : k.legacy_programs) {
        if (!h.contains(field)) continue;
        host.servers[k.name].programs[program] = str_value(h[field], field);
        if (noted.insert(field).second) {
          out.notes.push_back(at + "." + field + ": an older field; write \"servers\": {\"" + k.name +
                              "\": {\"programs\": {\"" + program + "\": ...}}}");
        }
      }
      for (const auto& [field, label_offset] : k.legacy_ports) {
        if (!h.contains(field)) continue;
        // Room for the offset and a few rounds above the field's port.
        const int base = int_value(h[field], field, 1, 63000);
        host.servers[k.name].ports[label_offset.first] = base + label_offset.second;
        if (noted.insert(field).second) {
          out.notes.push_back(at + "." + field + ": an older field; write \"servers\": {\"" + k.name +
                              "\": {\"ports\": {\"" + label_offset.first + "\": ...}}}");
        }
      }
    }
    if (h.contains("servers")) {
      const nlohmann::json& sv = h["servers"];
      if (!sv.is_object()) throw ConfigError(at + ".servers: must be an object of server kind -> settings");
      for (auto it = sv.begin(); it != sv.end(); ++it) {
        const std::string sat = "servers." + it.key();
        if (!kinds.count(it.key())) throw ConfigError(at + "." + sat + ": not a server kind (see lockcheck list)");
        if (!it->is_object()) throw ConfigError(at + "." + sat + ": must be an object with programs and ports");
        SshHostServer& dst = host.servers[it.key()];
        for (auto f = it->begin(); f != it->end(); ++f) {
          if (f.key() != "programs" && f.key() != "ports") {
            throw ConfigError(at + "." + sat + ": unknown field \"" + f.key() + "\" (programs, ports)");
          }
          if (!f->is_object()) throw ConfigError(at + "." + sat + "." + f.key() + ": must be an object");
          for (auto e = f->begin(); e != f->end(); ++e) {
            const std::string field = sat + "." + f.key() + "." + e.key();
            if (f.key() == "programs") dst.programs[e.key()] = str_value(*e, field);
            else dst.ports[e.key()] = int_value(*e, field, 1, 65000);
          }
        }
      }
    }
    out.hosts.push_back(host);
  }
  return out;
}

SshHosts load_ssh_hosts(const std::string& path, const SshHostsSchema& schema) {
  if (path.empty()) throw ConfigError("--hosts: required with --cluster ssh (a hosts file; see scripts/ssh-testbed)");
  std::ifstream in(path);
  if (!in) throw ConfigError("--hosts " + path + ": cannot open");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError("--hosts " + path + ": not valid JSON (" + e.what() + ")");
  }
  return parse_ssh_hosts(j, path, schema);
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
