#include "harness/history.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <thread>

namespace lockcheck {
namespace {

std::string temp_path(const char* name) {
  return ::testing::TempDir() + "/" + name + "-" + std::to_string(::getpid()) + ".jsonl";
}

TEST(HistoryTest, WriterStreamsEachOpAndReaderReadsItBack) {
  MonotonicClock clock;
  const std::string path = temp_path("stream");
  {
    HistoryWriter w(path, &clock);
    Op op;
    op.process = 3;
    op.f = "acquire";
    op.key = "lock-0";
    w.record(op);
    op.type = OpType::kOk;
    op.token = 41;
    op.validity_ms = 990;
    w.record(op);
    // Already on disk before the writer is closed.
    History on_disk = read_history(path);
    ASSERT_EQ(on_disk.size(), 2u);
    EXPECT_EQ(on_disk[1].token, 41);
    EXPECT_EQ(on_disk[1].validity_ms, 990);
    EXPECT_EQ(on_disk[1].type, OpType::kOk);
    EXPECT_LE(on_disk[0].time_ns, on_disk[1].time_ns);
    Op nem;
    nem.process = kNemesis;
    nem.f = "partition";
    nem.value = {{"nodes", {"n1"}}};
    w.record(nem);
  }
  History h = read_history(path);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[2].process, kNemesis);
  EXPECT_EQ(h[2].value["nodes"][0], "n1");
  std::remove(path.c_str());
}

TEST(HistoryTest, ConcurrentWritersGetDenseIndices) {
  MonotonicClock clock;
  const std::string path = temp_path("concurrent");
  HistoryWriter w(path, &clock);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&w, t] {
      for (int i = 0; i < 500; ++i) {
        Op op;
        op.process = t;
        op.f = "acquire";
        w.record(op);
      }
    });
  }
  for (auto& t : threads) t.join();
  History h = read_history(path);
  ASSERT_EQ(h.size(), 2000u);
  for (size_t i = 0; i < h.size(); ++i) EXPECT_EQ(h[i].index, static_cast<int64_t>(i));
  EXPECT_EQ(w.counts().invoke, 2000);
  std::remove(path.c_str());
}

TEST(HistoryTest, ReaderRejectsMalformedLinesWithTheLineNumber) {
  const std::string good = R"({"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"k","value":null})";
  auto expect_error = [](const std::string& text, const std::string& needle) {
    try {
      parse_history(text, "h");
      FAIL() << "accepted: " << text;
    } catch (const HistoryError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(good + "\n{not json\n", "h:2:");
  expect_error(good + "\n\n" + R"({"index":1,"time":1,"process":0,"type":"maybe","f":"acquire"})", "h:3: field \"type\"");
  expect_error(R"({"index":0,"time":1,"type":"ok","f":"acquire"})", "missing field \"process\"");
  expect_error(R"({"index":0,"time":1,"process":-4,"type":"ok","f":"acquire"})", "\"process\"");
  expect_error(R"({"index":5,"time":1,"process":1,"type":"ok","f":"acquire"})", "index 5 out of order");
  expect_error("[1,2]", "h:1:");
  EXPECT_EQ(parse_history("").size(), 0u);
}

TEST(HistoryTest, PairIndexMatchesInvokesWithCompletionsPerProcess) {
  History h(5);
  h[0].process = 1; h[0].type = OpType::kInvoke;
  h[1].process = 2; h[1].type = OpType::kInvoke;
  h[2].process = 1; h[2].type = OpType::kOk;
  h[3].process = 1; h[3].type = OpType::kInvoke;  // crashed: never completes
  h[4].process = 2; h[4].type = OpType::kInfo;
  auto p = pair_index(h);
  EXPECT_EQ(p, (std::vector<int64_t>{2, 4, 0, -1, 1}));
}

}  // namespace
}  // namespace lockcheck
