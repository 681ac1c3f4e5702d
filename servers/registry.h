// The server kinds (--server), one line each in servers/registry.cc: a kind is one file in servers/ that defines
// its spec (cluster/server_spec.h) and its entry, plus its line there. Nothing else in the product names a kind.
#pragma once

#include <string>

#include "cluster/server_spec.h"
#include "core/registry.h"

namespace lockcheck {

struct ServerKindEntry {
  const char* name;
  const ServerSpec* spec;  // lives as long as the program
};

const Registry<ServerKindEntry>& server_registry();
// The spec named name; nullptr when there is none.
const ServerSpec* find_server_spec(const std::string& name);
// The spec named name; ConfigError naming --server and the kinds there are when there is none.
const ServerSpec& server_spec(const std::string& name);
// The first kind that serves protocol with its default options (a store the harness needs itself: the resource
// of the set workloads speaks "resp"); nullptr when none does.
const ServerSpec* server_serving(const std::string& protocol);
// The kind whose option has this key (any kind's, "" when none): to read options given at the top level of a
// config (how earlier versions wrote them).
std::string server_kind_with_option(const std::string& key);

}  // namespace lockcheck
