// The config field table (core/config.h): one table drives config.json, the `run` flags, the range checks and
// the report's configuration table, so none of them can drift from the others.
#include "core/config.h"
#include "harness/plan.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "core/json_int.h"
#include "harness/cli.h"
#include "harness/matrix.h"

namespace lockcheck {
namespace {

// The message of the ConfigError that f throws, or "" when it throws none (an EXPECT on it then fails).
template <typename F>
std::string config_error(F f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigFieldsTest, EveryFieldRoundTripsThroughConfigJson) {
  RunConfig c;
  c.cluster = "docker";
  c.server_opts["topology"] = "replicated";
  c.server_opts["persistence"] = "aof-always";
  c.nodes = 3;
  c.nemesis = {"partition", "clock:bump"};
  c.ttl_ms = 777;
  c.fencing = true;
  c.lock_opts = {{"quorum", 2}};
  c.seed = 123456789012345ULL;
  c.argv = {"lockcheck", "run"};
  const nlohmann::json j = c;
  std::set<std::string> keys;
  for (const auto& f : config_fields()) {
    keys.insert(f.key);
    EXPECT_TRUE(j.contains(f.key)) << f.key;
  }
  EXPECT_EQ(keys.size(), j.size()) << "config.json holds exactly the table's fields";
  RunConfig back;
  from_json(j, back);
  EXPECT_EQ(nlohmann::json(back), j);
}

// A key that is no field of the table is read as a server kind's option (earlier versions wrote Redis' options at
// the top level); the plan refuses it, naming it, unless the run's kind has such an option.
TEST(ConfigFieldsTest, UnknownFieldsAndWrongTypesNameTheField) {
  RunConfig c;
  from_json({{"ttl", 5}}, c);
  EXPECT_EQ(c.server_opts, (nlohmann::json{{"ttl", 5}}));
  std::string error = config_error([&] { resolve_plan(c); });
  EXPECT_NE(error.find("'ttl': neither a config field nor an option of --server redis"), std::string::npos) << error;
  error = config_error([&] { from_json({{"nodes", "five"}}, c); });
  EXPECT_NE(error.find("config field \"nodes\": wrong type"), std::string::npos) << error;
  EXPECT_THROW(from_json({{"lock_opts", 3}}, c), ConfigError);
  RunConfig ring;
  from_json({{"topology", "ring"}}, ring);
  EXPECT_EQ(config_error([&] { resolve_plan(ring); }), "--topology: 'ring' is not one of independent, replicated, cluster");
}

// Fuzzing (fuzz/config_json.cc) found "work_ms": -118446744073709551616 in a config.json: nlohmann reads it as a
// double and converted it to int64 with undefined behaviour (UBSan). An integer field takes integers in its
// range only: not a float (1.5 was truncated in silence), not a wider integer narrowed.
TEST(ConfigFieldsTest, FuzzAnIntegerFieldOutOfItsRangeOrAFloatIsRefused) {
  RunConfig c;
  std::string error = config_error([&] { from_json(nlohmann::json::parse(R"({"work_ms": -118446744073709551616})"), c); });
  EXPECT_NE(error.find("config field \"work_ms\": wrong type"), std::string::npos) << error;
  error = config_error([&] { from_json({{"ttl_ms", 1.5}}, c); });
  EXPECT_NE(error.find("config field \"ttl_ms\": wrong type (1.5)"), std::string::npos) << error;
  error = config_error([&] { from_json({{"nodes", int64_t{1} << 40}}, c); });
  EXPECT_NE(error.find("config field \"nodes\": 1099511627776 is out of range"), std::string::npos) << error;
  error = config_error([&] { from_json({{"seed", -1}}, c); });
  EXPECT_NE(error.find("config field \"seed\": -1 is out of range"), std::string::npos) << error;
  EXPECT_NO_THROW(from_json({{"ttl_ms", 2000}, {"seed", uint64_t{18446744073709551615u}}}, c));
  EXPECT_EQ(c.ttl_ms, 2000);
  EXPECT_EQ(c.seed, 18446744073709551615u);
}

// The one reader of integers from untrusted JSON (core/json_int.h): an integer that fits T, nothing else.
TEST(JsonIntegerTest, TakesOnlyAnIntegerThatFitsTheType) {
  using nlohmann::json;
  EXPECT_EQ(json_integer<int>(json(42)), 42);
  EXPECT_EQ(json_integer<int>(json(-7)), -7);
  EXPECT_EQ(json_integer<int>(json(2147483647)), 2147483647);
  EXPECT_FALSE(json_integer<int>(json(int64_t{2147483648})));
  EXPECT_FALSE(json_integer<int>(json(int64_t{-2147483649})));
  EXPECT_FALSE(json_integer<int>(json(1.5)));
  EXPECT_FALSE(json_integer<int>(json(2.0)));  // a float, even a whole one: the writer meant something else
  EXPECT_FALSE(json_integer<int>(json("3")));
  EXPECT_FALSE(json_integer<int>(json(true)));
  EXPECT_FALSE(json_integer<int>(json(nullptr)));
  EXPECT_FALSE(json_integer<int64_t>(json::parse("9223372036854775808")));  // kept as unsigned by nlohmann
  EXPECT_EQ(json_integer<int64_t>(json::parse("9223372036854775807")), INT64_MAX);
  EXPECT_EQ(json_integer<int64_t>(json::parse("-9223372036854775808")), INT64_MIN);
  EXPECT_FALSE(json_integer<int64_t>(json::parse("3.9e19")));
  EXPECT_FALSE(json_integer<uint64_t>(json(-1)));
  EXPECT_EQ(json_integer<uint64_t>(json::parse("18446744073709551615")), UINT64_MAX);
  EXPECT_FALSE(json_integer<size_t>(json::parse("-118446744073709551616")));  // a double to nlohmann
  EXPECT_FALSE(json_integer<uint16_t>(json(65536)));
  EXPECT_EQ(json_integer<uint16_t>(json(65535)), 65535);
}

TEST(ConfigFieldsTest, EveryFlagIsInRunHelpAndParsesFromText) {
  std::ostringstream out, err;
  ASSERT_EQ(cli_main({"run", "--help"}, out, err), 0);
  for (const auto& f : config_fields()) {
    if (*f.flag) EXPECT_NE(out.str().find(std::string("--") + f.flag), std::string::npos) << f.flag;
  }
  RunConfig c;
  find_config_field("ttl_ms")->parse_flag(c, "250", "--ttl-ms");
  EXPECT_EQ(c.ttl_ms, 250);
  find_config_field("nemesis")->parse_flag(c, "kill,pause", "--nemesis");
  EXPECT_EQ(c.nemesis, (std::vector<std::string>{"kill", "pause"}));
  find_config_field("nemesis")->parse_flag(c, "none", "--nemesis");
  EXPECT_TRUE(c.nemesis.empty());
  find_config_field("lock_opts")->parse_flag(c, "quorum=2", "--lock-opt");
  find_config_field("lock_opts")->parse_flag(c, "mode=fast", "--lock-opt");
  EXPECT_EQ(c.lock_opts, (nlohmann::json{{"quorum", 2}, {"mode", "fast"}}));
  EXPECT_THROW(find_config_field("lock_opts")->parse_flag(c, "quorum=3", "--lock-opt"), ConfigError);  // twice
  EXPECT_THROW(find_config_field("nodes")->parse_flag(c, "5x", "--nodes"), ConfigError);
  EXPECT_THROW(find_config_field("seed")->parse_flag(c, "-1", "--seed"), ConfigError);
  EXPECT_THROW(find_config_field("nemesis")->parse_flag(c, "a,,b", "--nemesis"), ConfigError);
}

// --topology cluster without nodes: 6 (the default 5 is too few for 3 masters + 3 replicas), from a config file
// or a matrix entry alike; nodes that are given are kept (and checked).
TEST(ConfigFieldsTest, ClusterTopologyWithoutNodesGetsSix) {
  RunConfig c;
  from_json({{"lock", "cluster"}, {"topology", "cluster"}}, c);
  const Plan p = resolve_plan(c);
  EXPECT_EQ(p.config.nodes, 6);
  EXPECT_TRUE(p.config.nodes_from_server);
  EXPECT_EQ(nlohmann::json(p.config).at("nodes"), 6);  // written into config.json: a rerun replays it

  RunConfig seven;
  from_json({{"lock", "cluster"}, {"topology", "cluster"}, {"nodes", 7}}, seven);
  EXPECT_EQ(resolve_plan(seven).config.nodes, 7);
  EXPECT_FALSE(resolve_plan(seven).config.nodes_from_server);

  RunConfig five;
  from_json({{"lock", "cluster"}, {"topology", "cluster"}, {"nodes", 5}}, five);
  EXPECT_EQ(five.nodes, 5);
  EXPECT_NE(config_error([&] { resolve_plan(five); }).find("--nodes 5 with --topology cluster"), std::string::npos);

  RunConfig independent;
  from_json({{"topology", "independent"}}, independent);
  EXPECT_EQ(resolve_plan(independent).config.nodes, 5);
  EXPECT_FALSE(resolve_plan(independent).config.nodes_from_server);

  Matrix m = parse_matrix(nlohmann::json::parse(R"({
    "name": "t", "defaults": {"time_limit_s": 7},
    "entries": [
      {"name": "a", "lock": "cluster", "topology": "cluster", "expect": "valid"},
      {"name": "b", "lock": "cluster", "topology": "cluster", "nodes": 8, "expect": "valid"}]})"),
                          "res");
  ASSERT_EQ(m.entries.size(), 2u);
  EXPECT_EQ(m.entries[0].config.nodes, 6);
  EXPECT_EQ(m.entries[1].config.nodes, 8);
  try {
    parse_matrix(nlohmann::json::parse(R"({"name": "t", "entries": [
        {"name": "c", "lock": "cluster", "topology": "cluster", "nodes": 5, "expect": "valid"}]})"),
                 "res");
    ADD_FAILURE() << "5 nodes accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--nodes 5 with --topology cluster"), std::string::npos) << e.what();
  }
}

TEST(ConfigFieldsTest, RangeRulesNameTheFlag) {
  RunConfig c;
  EXPECT_NO_THROW(validate_fields(c));
  c.concurrency = 0;
  const std::string error = config_error([&] { validate_fields(c); });
  EXPECT_NE(error.find("--concurrency"), std::string::npos) << error;
  c = RunConfig{};
  c.lock = "cluster";
  c.server_opts["topology"] = "cluster";  // 5 nodes given: a Redis Cluster needs 6, and both flags are named
  c.nodes_given = true;
  EXPECT_EQ(config_error([&] { resolve_plan(c); }),
            "--nodes 5 with --topology cluster: Redis Cluster needs at least 6 nodes (3 masters, each with a "
            "replica); leave --nodes out to get 6");
  // The shortest hold may not pass the longest (here 80% of the 1 s TTL).
  c = RunConfig{};
  c.hold_ms_min = 800;
  EXPECT_NO_THROW(validate_fields(c));
  c.hold_ms_min = 801;
  EXPECT_EQ(config_error([&] { validate_fields(c); }),
            "--hold-ms-min: 801 must be between 0 and the longest hold (800 ms)");
  // A fault's own setting without that fault is refused, naming the flag.
  c = RunConfig{};
  c.delay_ms = 200;
  EXPECT_EQ(config_error([&] { validate_fields(c); }), "--delay-ms: only with --nemesis delay (or one of its modes)");
  c.nemesis = {"delay:client"};
  EXPECT_NO_THROW(validate_fields(c));
  c = RunConfig{};
  c.server_opts["sentinel_parallel_syncs"] = 0;
  EXPECT_EQ(config_error([&] { resolve_plan(c); }), "--sentinel-parallel-syncs: 0 must be between 1 and 14");
  c.server_opts["sentinel_parallel_syncs"] = 2;  // the independent topology has no Sentinel
  EXPECT_THROW(resolve_plan(c), ConfigError);
  c.server_opts["topology"] = "replicated";
  c.lock = "single-failover";
  EXPECT_NO_THROW(resolve_plan(c));
}

}  // namespace
}  // namespace lockcheck
