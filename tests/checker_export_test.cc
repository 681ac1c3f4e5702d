// The EDN and Porcupine exporters.
#include "checkers/export.h"

#include <gtest/gtest.h>

#include "tests/support/history_builder.h"

namespace lockcheck {
namespace {

using nlohmann::json;

Op make_op(int64_t index, int64_t time, Process p, OpType type, const std::string& f, const std::string& key,
           json value = nullptr) {
  Op op;
  op.index = index;
  op.time_ns = time;
  op.process = p;
  op.type = type;
  op.f = f;
  op.key = key;
  op.value = std::move(value);
  return op;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n') {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  EXPECT_EQ(start, s.size()) << "the last line must end with a newline";
  return out;
}

TEST(ExportEdn, OpMaps) {
  History h;
  h.push_back(make_op(0, 1834000123, 3, OpType::kInvoke, "acquire", "lock-0"));
  Op ok = make_op(1, 1835100456, 3, OpType::kOk, "acquire", "lock-0");
  ok.token = 41;
  ok.validity_ms = 9800;
  h.push_back(ok);
  Op nem = make_op(2, 1835200000, kNemesis, OpType::kInfo, "partition", "",
                   json{{"fault", "partition"}, {"phase", "start"}, {"targets", {"n1", "n2"}}});
  h.push_back(nem);
  Op info = make_op(3, 1835300000, 4, OpType::kInfo, "release", "lock-0");
  info.error = "timeout \"after\" 5 s";
  h.push_back(info);
  h.push_back(make_op(4, 1835400000, 5, OpType::kOk, "read", "set", json::array({1, 2, 3})));
  h.push_back(make_op(5, 1835500000, 5, OpType::kOk, "clock bump", "k",
                      json{{"offset ms", 1.5}, {"ok", true}, {"s", "a\nb\\"}, {"n", nullptr}}));
  std::vector<std::string> l = lines(export_edn(h));
  ASSERT_EQ(l.size(), 6u);
  EXPECT_EQ(l[0], "{:type :invoke, :f :acquire, :process 3, :time 1834000123, :index 0, :key \"lock-0\", :value nil}");
  EXPECT_EQ(l[1],
            "{:type :ok, :f :acquire, :process 3, :time 1835100456, :index 1, :key \"lock-0\", :value nil, :token 41, "
            ":validity-ms 9800}");
  EXPECT_EQ(l[2],
            "{:type :info, :f :partition, :process :nemesis, :time 1835200000, :index 2, :key nil, "
            ":value {:fault \"partition\", :phase \"start\", :targets [\"n1\" \"n2\"]}}");
  EXPECT_EQ(l[3],
            "{:type :info, :f :release, :process 4, :time 1835300000, :index 3, :key \"lock-0\", :value nil, "
            ":error \"timeout \\\"after\\\" 5 s\"}");
  EXPECT_EQ(l[4], "{:type :ok, :f :read, :process 5, :time 1835400000, :index 4, :key \"set\", :value [1 2 3]}");
  EXPECT_EQ(l[5],
            "{:type :ok, :f \"clock bump\", :process 5, :time 1835500000, :index 5, :key \"k\", "
            ":value {:n nil, \"offset ms\" 1.5, :ok true, :s \"a\\nb\\\\\"}}");
}

TEST(ExportEdn, EmptyHistory) { EXPECT_EQ(export_edn({}), ""); }

TEST(ExportPorcupine, Operations) {
  History h;
  h.push_back(make_op(0, 100, 3, OpType::kInvoke, "acquire", "lock-0"));
  h.push_back(make_op(1, 110, kNemesis, OpType::kInvoke, "partition", ""));
  h.push_back(make_op(2, 120, 4, OpType::kInvoke, "acquire", "lock-0"));
  Op ok = make_op(3, 150, 3, OpType::kOk, "acquire", "lock-0");
  ok.token = 41;
  ok.validity_ms = 9000;
  h.push_back(ok);
  Op fail = make_op(4, 160, 4, OpType::kFail, "acquire", "lock-0");
  fail.error = "not enough votes";
  h.push_back(fail);
  Op add = make_op(5, 170, 3, OpType::kInvoke, "add", "set", 7);
  add.token = 41;
  h.push_back(add);
  Op info = make_op(6, 180, 3, OpType::kInfo, "add", "set", 7);
  info.error = "timeout";
  h.push_back(info);
  h.push_back(make_op(7, 190, 5, OpType::kInvoke, "release", "lock-0"));  // never completes
  h.push_back(make_op(8, 200, kNemesis, OpType::kInfo, "partition", ""));

  json p = export_porcupine(h);
  ASSERT_TRUE(p.is_array());
  ASSERT_EQ(p.size(), 4u);  // nemesis left out
  EXPECT_EQ(p[0], json::parse(R"({"client_id":3,"input":{"f":"acquire","key":"lock-0"},"call":100,
                                  "output":{"type":"ok","token":41,"validity_ms":9000},"return":150})"));
  EXPECT_EQ(p[1], json::parse(R"({"client_id":4,"input":{"f":"acquire","key":"lock-0"},"call":120,
                                  "output":{"type":"fail","error":"not enough votes"},"return":160})"));
  EXPECT_EQ(p[2], json::parse(R"({"client_id":3,"input":{"f":"add","key":"set","value":7,"token":41},"call":170,
                                  "output":{"type":"info","error":"timeout"},"return":201})"));
  EXPECT_EQ(p[3], json::parse(R"({"client_id":5,"input":{"f":"release","key":"lock-0"},"call":190,
                                  "output":{"type":"info"},"return":201})"));
}

TEST(ExportPorcupine, EmptyHistory) { EXPECT_EQ(export_porcupine({}), json::array()); }

}  // namespace
}  // namespace lockcheck
