// The EDN and Porcupine readers (checkers/import.h), round trips with the exporters, and `check --format`.
#include "checkers/import.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "bench/history_gen.h"
#include "checkers/export.h"
#include "checkers/mutex.h"
#include "harness/cli.h"
#include "tests/support/history_builder.h"

namespace lockcheck {
namespace {

using testing::HistoryBuilder;

History sample() {
  HistoryBuilder b;
  b.invoke(0, "acquire");
  b.invoke(1, "acquire");
  b.ok(0, "acquire");
  b.token(41).validity_ms(5000);
  b.fail(1, "acquire");
  b.add(kNemesis, OpType::kInvoke, "partition", "", nlohmann::json{{"fault", "partition"}, {"nodes", {"n1", "n2"}}});
  b.add(kNemesis, OpType::kInfo, "partition", "", nlohmann::json{{"fault", "partition"}, {"phase", "start"}});
  b.invoke(0, "release");
  b.info(0, "release");
  b.invoke(2, "add", "set-0", 7);
  b.ok(2, "add", "set-0", 7);
  b.invoke(2, "read", "set-0");
  b.ok(2, "read", "set-0", nlohmann::json::array({1, 7, -3}));
  b.invoke(3, "acquire");  // crashed: never completes
  return b.history();
}

void expect_same(const History& a, const History& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(nlohmann::json(a[i]), nlohmann::json(b[i])) << "op " << i;
  }
}

TEST(ImportEdn, RoundTripsWhatExportWrites) {
  const History h = sample();
  expect_same(import_edn(export_edn(h), "h.edn"), h);
}

TEST(ImportEdn, ReadsAJepsenStyleVectorWithoutTimesOrIndices) {
  const std::string text =
      "[{:type :invoke, :f :acquire, :process 0, :value nil}\n"
      " {:type :ok, :f :acquire, :process 0, :value nil, :token 3} ; a comment\n"
      " {:type :invoke :f :read :process 1 :value nil}\n"
      " {:type :ok :f :read :process 1 :value #{1 2 3}}]\n";
  History h = import_edn(text, "x.edn");
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[1].token, 3);
  EXPECT_EQ(h[3].index, 3);
  EXPECT_EQ(h[3].value, nlohmann::json::array({1, 2, 3}));
}

TEST(ImportEdn, ReadsEveryValueFormTheOpReaderMeets) {
  // Fields read in place (keywords, strings, integers, nil) and those that go through the general reader: a
  // list of ops, strings with escapes, a key that is a number, a bigint suffix, negative numbers, a nested map.
  const std::string text =
      "({\"type\" \"invoke\", :f \"acquire\", :process 2, :time 10N, :index 0, :key 7, :value {:a [1 -2]}}\n"
      " {:type :info, :f :acquire, :process 2, :time 12, :index 1, :key 7, :value nil, :error \"t\\\"o\\nut\"}\n"
      " {:type :invoke, :f :release, :process :nemesis, :time 13, :key nil, :token -5, :validity-ms nil}"
      " {:type :ok, :f :release, :process :nemesis, :time 14, :key \"k\", :token 41, :validity-ms 900})\n";
  const History h = import_edn(text, "v.edn");
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[0].type, OpType::kInvoke);
  EXPECT_EQ(h[0].f, "acquire");
  EXPECT_EQ(h[0].time_ns, 10);
  EXPECT_EQ(h[0].key, "7");
  EXPECT_EQ(h[0].value, nlohmann::json({{"a", {1, -2}}}));
  EXPECT_EQ(h[1].error, "t\"o\nut");
  EXPECT_TRUE(h[1].value.is_null());
  EXPECT_EQ(h[2].process, kNemesis);
  EXPECT_EQ(h[2].index, 2);  // the position when :index is absent
  EXPECT_TRUE(h[2].key.empty());
  EXPECT_EQ(h[2].token, -5);
  EXPECT_FALSE(h[2].validity_ms.has_value());
  EXPECT_EQ(h[3].key, "k");
  EXPECT_EQ(h[3].token, 41);
  EXPECT_EQ(h[3].validity_ms, 900);
}

TEST(ImportEdn, MalformedInputNamesTheLine) {
  auto error_of = [](const std::string& text) -> std::string {
    try {
      import_edn(text, "x.edn");
    } catch (const HistoryError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_NE(error_of("{:type :invoke, :f :acquire, :process 0}\n{:type :maybe, :f :acquire, :process 0}\n")
                .find("x.edn:2: :type"),
            std::string::npos);
  EXPECT_NE(error_of("{:type :invoke, :f :acquire, :process 0}\n{:type :ok, :f :acquire").find("x.edn:2: missing '}'"),
            std::string::npos);
  EXPECT_NE(error_of("{:type :invoke, :f :acquire, :process -1}\n").find(":process must be"), std::string::npos);
  EXPECT_NE(error_of("{:type :invoke, :f :acquire, :process 0, :time \"x\"}\n").find(":time must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of("{:type :invoke, :process 0}\n").find(":f must be"), std::string::npos);
  EXPECT_NE(error_of("[{:type :invoke, :f :acquire, :process 0}\n 5]\n").find("x.edn:2: an op must be a map"),
            std::string::npos);
  EXPECT_NE(error_of("{:type :invoke, :f :acquire, :process 0, :token -9223372036854775808}\n").find("out of range"),
            std::string::npos);
  // The op rules hold for imported histories too.
  EXPECT_NE(error_of("{:type :ok, :f :acquire, :process 0}\n").find("no open invoke"), std::string::npos);
}

TEST(ImportPorcupine, RoundTripKeepsTheClientOps) {
  const History h = sample();
  const History back = import_porcupine(export_porcupine(h).dump(), "h.json");
  // Nemesis ops are not exported; the crashed invoke comes back completed as info.
  int64_t client = 0;
  for (const Op& op : h) client += op.is_client();
  ASSERT_EQ(back.size(), static_cast<size_t>(client + 1));
  EXPECT_EQ(back[2].token, 41);
  EXPECT_EQ(back[2].validity_ms, 5000);
  EXPECT_EQ(back.back().type, OpType::kInfo);
  EXPECT_EQ(back.back().process, 3);
  for (const Op& op : back) {
    if (op.f == "read" && op.is_ok()) EXPECT_EQ(op.value, nlohmann::json::array({1, 7, -3}));
  }
}

TEST(ImportPorcupine, RejectsMalformedOperations) {
  EXPECT_THROW(import_porcupine("{}", "p.json"), HistoryError);
  EXPECT_THROW(import_porcupine("[{\"client_id\":1,\"input\":{\"f\":\"acquire\"},\"call\":5,\"return\":3}]", "p.json"),
               HistoryError);
  EXPECT_THROW(import_porcupine("[{\"client_id\":1,\"input\":{\"f\":\"grab\"},\"call\":5,\"return\":6}]", "p.json"),
               HistoryError);
  // A time above INT64_MAX is unsigned to nlohmann: read with get<int64_t>() it wrapped to a negative time.
  try {
    import_porcupine("[{\"client_id\":1,\"input\":{\"f\":\"acquire\"},\"call\":18446744073709551615,"
                     "\"return\":6}]",
                     "p.json");
    ADD_FAILURE() << "imported";
  } catch (const HistoryError& e) {
    EXPECT_NE(std::string(e.what()).find("call must be an integer in int64 range"), std::string::npos) << e.what();
  }
}

// Fuzzing (fuzz/import_edn.cc) found an EDN history whose keyword held a byte that is not UTF-8: it was imported,
// and writing it out as JSON threw nlohmann's type_error (exit 3). Refused, naming the line.
TEST(ImportEdn, FuzzInvalidUtf8IsAHistoryErrorNamingTheLine) {
  const std::string edn = "[{:type :invoke, :f :acquire, :process 0, :time 1}\n {:type :ok, :f :acq\xa1, :process 0, :time 2}]";
  try {
    import_edn(edn, "h.edn");
    ADD_FAILURE() << "imported";
  } catch (const HistoryError& e) {
    EXPECT_STREQ(e.what(), "h.edn:2: not valid UTF-8");
  }
}

// Fuzzing (fuzz/import_porcupine.cc) found a number beyond a double's range (1e400): nlohmann threw out_of_range,
// which the importer did not catch (it caught parse_error only), so `check --format porcupine` ended in exit 3.
TEST(ImportPorcupine, FuzzNumberOverflowIsAHistoryError) {
  EXPECT_THROW(import_porcupine("[{\"client_id\":1,\"call\":1e400}]", "p.json"), HistoryError);
}

// Fuzzing (fuzz/import_porcupine.cc) found an operation whose output.type was a number: out.value("type", "ok")
// threw nlohmann's type_error (exit 3 from `check --format porcupine`). A HistoryError naming the operation.
TEST(ImportPorcupine, FuzzAnOutputTypeThatIsNotAStringIsAHistoryError) {
  try {
    import_porcupine(R"([{"client_id":0,"input":{"f":"acquire","key":"k"},"call":1,"return":2,"output":{"type":887}}])",
                     "p.json");
    ADD_FAILURE() << "imported";
  } catch (const HistoryError& e) {
    EXPECT_STREQ(e.what(), "p.json: operation 0: output.type must be ok, fail or info");
  }
}

// The mutex verdict survives both round trips, on generated histories with info ops, crashed clients and
// injected double grants, with and without retirement after info.
TEST(ImportRoundTrip, MutexVerdictIsUnchanged) {
  MutexChecker checker;
  int invalid = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    LockHistoryOptions o;
    o.ops = 600;
    o.processes = 4;
    o.info_fraction = 0.1;
    o.violation_fraction = seed % 2 ? 0.05 : 0.0;
    o.retire_after_info = seed % 3 != 0;
    o.seed = seed;
    const History h = generate_lock_history(o);
    const Validity want = run_checker(checker, h, {}).valid;
    invalid += want == Validity::kInvalid;
    EXPECT_EQ(run_checker(checker, import_edn(export_edn(h), "h.edn"), {}).valid, want) << "seed " << seed;
    EXPECT_EQ(run_checker(checker, import_porcupine(export_porcupine(h).dump(), "h.json"), {}).valid, want)
        << "seed " << seed;
  }
  EXPECT_GT(invalid, 0);
}

TEST(CheckFormat, ChecksAFileAndGivesTheVerdictsExitCode) {
  const std::string path = ::testing::TempDir() + "/import-" + std::to_string(::getpid()) + ".edn";
  HistoryBuilder b;
  b.invoke(0, "acquire");
  b.ok(0, "acquire");
  b.validity_ms(5000);
  b.invoke(1, "acquire");
  b.ok(1, "acquire");  // while 0 holds it
  b.validity_ms(5000);
  {
    std::ofstream f(path);
    f << export_edn(b.history());
  }
  std::ostringstream out, err;
  EXPECT_EQ(cli_main({"check", "--format", "edn", path}, out, err), 1) << out.str() << err.str();
  EXPECT_NE(out.str().find("verdict: invalid"), std::string::npos) << out.str();
  std::ostringstream out2, err2;
  EXPECT_EQ(cli_main({"check", "--format", "porcupine", path}, out2, err2), 2);  // EDN is not JSON
  EXPECT_NE(err2.str().find("malformed history"), std::string::npos) << err2.str();
  std::remove(path.c_str());
}

// A six-line history as a Jepsen/Knossos mutex history writes it: no :key (one lock), no times. Every
// checker judges the one unnamed lock (liveness used to skip keyless ops and say "nothing checked: no acquires",
// so the overall verdict was unknown, exit 4).
TEST(CheckFormat, AKeylessEdnHistoryIsCheckedAsOneLock) {
  const std::string path = ::testing::TempDir() + "/keyless-" + std::to_string(::getpid()) + ".edn";
  {
    std::ofstream f(path);
    f << "{:process 2, :type :invoke, :f :acquire, :value nil}\n"
         "{:process 2, :type :ok, :f :acquire, :value nil}\n"
         "{:process 2, :type :invoke, :f :release, :value nil}\n"
         "{:process 2, :type :fail, :f :release, :value nil}\n"
         "{:process 2, :type :invoke, :f :release, :value nil}\n"
         "{:process 2, :type :ok, :f :release, :value nil}\n";
  }
  std::ostringstream out, err;
  EXPECT_EQ(cli_main({"check", "--format", "edn", path}, out, err), 0) << out.str() << err.str();
  EXPECT_NE(out.str().find("verdict: valid"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("nothing checked"), std::string::npos) << out.str();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace lockcheck
