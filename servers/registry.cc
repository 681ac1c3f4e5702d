#include "servers/registry.h"

#include <algorithm>

#include "core/config.h"

// A new server kind is one file in servers/ that defines its spec and its entry, plus its line here.

namespace lockcheck {

const Registry<ServerKindEntry>& server_registry() {
  static const Registry<ServerKindEntry> registry = {
      LOCKCHECK_ENTRY(ServerKindEntry, redis_server_kind),
      LOCKCHECK_ENTRY(ServerKindEntry, etcd_server_kind),
      LOCKCHECK_ENTRY(ServerKindEntry, zookeeper_server_kind),
  };
  return registry;
}

const ServerSpec* find_server_spec(const std::string& name) {
  const ServerKindEntry* e = server_registry().find(name);
  return e ? e->spec : nullptr;
}

const ServerSpec& server_spec(const std::string& name) {
  const ServerSpec* s = find_server_spec(name);
  if (!s) throw ConfigError("--server: '" + name + "' is not one of " + server_registry().names());
  return *s;
}

const ServerSpec* server_serving(const std::string& protocol) {
  for (const auto& e : server_registry()) {
    const auto served = e.spec->protocols(resolve_server_options(*e.spec, nlohmann::json::object()));
    if (std::find(served.begin(), served.end(), protocol) != served.end()) return e.spec;
  }
  return nullptr;
}

std::string server_kind_with_option(const std::string& key) {
  for (const auto& e : server_registry()) {
    for (const auto& o : e.spec->options()) {
      if (key == o.key) return e.name;
    }
  }
  return "";
}

}  // namespace lockcheck
