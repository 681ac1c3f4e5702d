#include "cluster/server_spec.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "core/config.h"
#include "core/json_int.h"
#include "core/party.h"

namespace lockcheck {

std::string servers_dir() {
  if (const char* env = std::getenv("LOCKCHECK_SERVERS_DIR"); env && *env) return env;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "build/servers";
  return (exe.parent_path() / "servers").string();
}

const Endpoint& MemberAddress::at(const std::string& label) const {
  const auto it = advertised.find(label);
  if (it == advertised.end()) throw ClusterError(name + " has no " + label + " port");
  return it->second;
}

std::string MemberContext::program(const std::string& name) const {
  const auto it = programs.find(name);
  return it == programs.end() || it->second.empty() ? name : it->second;
}

size_t MemberContext::index() const {
  const auto p = Party::parse(self.name);
  return p ? p->index : 0;
}

namespace {

std::string choices_of(const ServerOption& o) {
  std::string s;
  for (const auto& c : o.choices) s += (s.empty() ? "" : ", ") + c;
  return s;
}

}  // namespace

void check_server_option(const ServerOption& o, const nlohmann::json& value, const std::string& name) {
  const nlohmann::json& d = o.default_value;
  const bool same_type = (d.is_string() && value.is_string()) || (d.is_boolean() && value.is_boolean()) ||
                         (d.is_number_integer() && value.is_number_integer() && json_integer<int64_t>(value)) ||
                         (d.is_number_float() && value.is_number());
  if (!same_type) {
    throw ConfigError(name + ": wrong type (" + value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                      ")");
  }
  if (!o.choices.empty()) {
    bool known = false;
    for (const auto& c : o.choices) known = known || value == c;
    if (!known) {
      throw ConfigError(name + ": '" + value.get<std::string>() + "' is not one of " + choices_of(o));
    }
  }
  if (o.check) {
    const std::string why = o.check(value);
    if (!why.empty()) throw ConfigError(name + ": " + value.dump() + " " + why);
  }
}

nlohmann::json parse_server_option(const ServerOption& o, const std::string& text, const std::string& name) {
  const nlohmann::json& d = o.default_value;
  nlohmann::json v;
  if (d.is_string()) {
    v = text;
  } else if (d.is_boolean()) {
    if (text != "true" && text != "false") throw ConfigError(name + ": '" + text + "' is not true or false");
    v = text == "true";
  } else if (d.is_number_integer()) {
    errno = 0;
    char* end = nullptr;
    const long long x = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || errno != 0 || *end != '\0') throw ConfigError(name + ": '" + text + "' is not an integer");
    v = x;
  } else {
    errno = 0;
    char* end = nullptr;
    const double x = std::strtod(text.c_str(), &end);
    if (text.empty() || errno != 0 || *end != '\0') throw ConfigError(name + ": '" + text + "' is not a number");
    v = x;
  }
  check_server_option(o, v, name);
  return v;
}

nlohmann::json resolve_server_options(const ServerSpec& spec, const nlohmann::json& given) {
  if (!given.is_object()) throw ConfigError("server_opts: must be an object of KEY: VALUE");
  nlohmann::json out = nlohmann::json::object();
  for (auto it = given.begin(); it != given.end(); ++it) {
    const ServerOption* o = nullptr;
    for (const auto& opt : spec.options()) {
      if (it.key() == opt.key) o = &opt;
    }
    if (!o) {
      std::string known;
      for (const auto& opt : spec.options()) known += (known.empty() ? "" : ", ") + std::string(opt.key);
      throw ConfigError("--server-opt: '" + it.key() + "' is not an option of --server " + spec.name() + " (known: " +
                        (known.empty() ? std::string("none") : known) + ")");
    }
    check_server_option(*o, it.value(), std::string("--") + o->flag);
  }
  for (const auto& opt : spec.options()) out[opt.key] = given.contains(opt.key) ? given[opt.key] : opt.default_value;
  return out;
}

nlohmann::json ServerSpec::options_serving(const std::string& protocol) const {
  for (const auto& p : protocols(resolve_server_options(*this, nlohmann::json::object()))) {
    if (p == protocol) return nlohmann::json::object();
  }
  return nullptr;
}

ServerRun make_server_run(const ServerSpec& spec, const ServerSetup& setup) {
  ServerRun run;
  run.server = spec.make(setup);
  run.name = spec.name();
  run.abilities = spec.abilities(setup.options);
  run.binds_source_address = spec.binds_source_address();
  run.build = setup.build;
  run.nodes = setup.nodes;
  return run;
}

}  // namespace lockcheck
