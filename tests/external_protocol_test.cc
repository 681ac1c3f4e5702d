// The external client's lines without a subprocess (locks/external_protocol.h): events and answers, what each
// makes of a well-formed line, and the words for a malformed one. The regression tests of the fuzz target
// fuzz/external_line.cc are named after what it found.
#include "locks/external_protocol.h"

#include <gtest/gtest.h>

namespace lockcheck {
namespace {

using Kind = ExternalLine::Kind;

std::string why_of(const std::string& line) {
  std::string why;
  EXPECT_FALSE(parse_external_answer(line, &why).has_value()) << line;
  return why;
}

TEST(ExternalProtocol, ReadsAnOkAnswerWithEveryField) {
  std::string why;
  const auto r = parse_external_answer(R"({"ok":true,"token":12,"validity_ms":987,"keys":["a","b"]})", &why);
  ASSERT_TRUE(r.has_value()) << why;
  EXPECT_EQ(r->outcome, OpType::kOk);
  EXPECT_EQ(r->token, 12);
  EXPECT_EQ(r->validity_ms, 987);
  EXPECT_EQ(r->keys, (std::vector<std::string>{"a", "b"}));
}

TEST(ExternalProtocol, FailAndIndeterminateAnswers) {
  std::string why;
  auto f = parse_external_answer(R"({"ok":false,"reason":"held"})", &why);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->outcome, OpType::kFail);
  EXPECT_EQ(f->error, "held");
  auto i = parse_external_answer(R"({"ok":false,"indeterminate":true})", &why);
  ASSERT_TRUE(i.has_value());
  EXPECT_EQ(i->outcome, OpType::kInfo);
  EXPECT_EQ(i->error, "indeterminate");
}

TEST(ExternalProtocol, MalformedAnswersAreNamed) {
  EXPECT_EQ(why_of("{\"ok\":tru"), "not JSON");
  EXPECT_EQ(why_of("[1]"), "not an object");
  EXPECT_EQ(why_of(R"({"token":1})"), "\"ok\" must be true or false");
  EXPECT_EQ(why_of(R"({"ok":true,"token":1.5})"), "\"token\" must be an integer");
  EXPECT_EQ(why_of(R"({"ok":true,"keys":[""]})"), "\"keys\" must be an array of non-empty strings");
  EXPECT_NE(why_of(R"({"ok":false,"reason":"nope"})").find("\"reason\" must be one of"), std::string::npos);
}

// Found while writing fuzz/external_line.cc (reading what the parser accepts): nlohmann keeps an integer above
// INT64_MAX as unsigned, and get<int64_t>() wrapped it, so a token of 2^64 - 1 was read as -1 (a silent wrong
// value). Now it is a malformed answer.
TEST(ExternalProtocol, TokenAboveInt64MaxIsMalformedNotWrapped) {
  EXPECT_EQ(why_of(R"({"ok":true,"token":18446744073709551615})"), "\"token\" must be an integer");
  EXPECT_EQ(why_of(R"({"ok":true,"validity_ms":9223372036854775808})"), "\"validity_ms\" must be an integer");
  std::string why;
  const auto r = parse_external_answer(R"({"ok":true,"token":9223372036854775807})", &why);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->token, INT64_MAX);
}

// Found by fuzz/history_reader.cc (its nlohmann reading of 51e400 threw out_of_range, not parse_error): every
// place that parsed JSON caught only parse_error, so a number too big for a double escaped as another exception
// (exit 3 from a config file; on the external client's reader thread, std::terminate). Now it is "not JSON".
TEST(ExternalProtocol, FuzzNumberOverflowIsMalformedNotAThrow) {
  EXPECT_EQ(why_of(R"({"ok":true,"token":1e400})"), "not JSON");
  EXPECT_EQ(classify_external_line(R"({"event":"hello","max_call_ms":51e400})").kind, Kind::kAnswer);
}

TEST(ExternalProtocol, Events) {
  const ExternalLine hello = classify_external_line(R"({"event":"hello","max_call_ms":1500})");
  EXPECT_EQ(hello.kind, Kind::kHello);
  EXPECT_EQ(hello.max_call_ms, 1500);
  EXPECT_FALSE(classify_external_line(R"({"event":"hello"})").max_call_ms.has_value());
  const ExternalLine lost = classify_external_line(R"({"event":"lost","key":"k","detail":"gone"})");
  EXPECT_EQ(lost.kind, Kind::kLost);
  EXPECT_EQ(lost.key, "k");
  EXPECT_EQ(lost.detail, "gone");
  EXPECT_EQ(classify_external_line(R"({"event":"later"})").kind, Kind::kOtherEvent);
  EXPECT_EQ(classify_external_line(R"({"ok":true})").kind, Kind::kAnswer);
  EXPECT_EQ(classify_external_line("not json").kind, Kind::kAnswer);  // the answer's parser words it
}

TEST(ExternalProtocol, MalformedEventsAreNamed) {
  auto err = [](const std::string& line) {
    const ExternalLine l = classify_external_line(line);
    EXPECT_EQ(l.kind, Kind::kMalformedEvent) << line;
    return l.error;
  };
  EXPECT_EQ(err(R"({"event":1})"), "\"event\" must be a string");
  EXPECT_EQ(err(R"({"event":"hello","max_call_ms":-1})"), "\"max_call_ms\" must be between 0 and 3600000");
  EXPECT_EQ(err(R"({"event":"hello","max_call_ms":"5"})"), "\"max_call_ms\" must be an integer");
  // Above INT64_MAX: an integer out of range, not a wrapped negative one.
  EXPECT_EQ(err(R"({"event":"hello","max_call_ms":18446744073709551615})"), "\"max_call_ms\" must be an integer");
  EXPECT_EQ(err(R"({"event":"lost","key":""})"), "\"key\" must be a non-empty string");
  EXPECT_EQ(err(R"({"event":"lost","key":"k","detail":3})"), "\"detail\" must be a string");
}

}  // namespace
}  // namespace lockcheck
