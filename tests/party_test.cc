// Party names (core/party.h): one parser for the nemeses and every backend.
#include "core/party.h"

#include <gtest/gtest.h>

namespace lockcheck {
namespace {

TEST(PartyTest, ParsesNodesSentinelsAndClientSlots) {
  EXPECT_EQ(Party::parse("n1"), Party::node(0));
  EXPECT_EQ(Party::parse("n12"), Party::node(11));
  EXPECT_EQ(Party::parse("s3"), Party::sentinel(2));
  EXPECT_EQ(Party::parse("c0"), Party::client(0));
  EXPECT_EQ(Party::parse("c17")->name(), "c17");
  for (const char* bad : {"", "n", "n0", "s0", "c", "x1", "n1a", "c-1", "nn1", "c1234567"}) {
    EXPECT_FALSE(Party::parse(bad).has_value()) << bad;
  }
}

TEST(PartyTest, NamesRoundTripAndAProcessRunsInItsSlot) {
  for (const Party& p : {Party::node(0), Party::node(4), Party::sentinel(1), Party::client(9)}) {
    EXPECT_EQ(Party::parse(p.name()), p) << p.name();
  }
  EXPECT_EQ(client_party(7, 5).name(), "c2");
  EXPECT_EQ(client_party(3, 5).name(), "c3");
}

}  // namespace
}  // namespace lockcheck
