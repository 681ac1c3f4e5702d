// The one registry shape (core/registry.h) and LOCKCHECK_ASSERT (core/assert.h), and the four registries built
// on it: every entry named once, found by its name, described.
#include "core/registry.h"

#include <gtest/gtest.h>

#include "checkers/checker.h"
#include "locks/adapters.h"
#include "locks/lock_client.h"
#include "nemesis/nemesis.h"
#include "workloads/workload.h"

namespace lockcheck {
namespace {

struct Part {
  const char* name;
  int value;
};

TEST(RegistryTest, FindsByNameKeepsTheOrderAndListsTheNames) {
  const Registry<Part> r = {{"b", 2}, {"a", 1}};
  ASSERT_NE(r.find("a"), nullptr);
  EXPECT_EQ(r.find("a")->value, 1);
  EXPECT_EQ(r.find("c"), nullptr);
  EXPECT_EQ(r.names(), "b, a");
  EXPECT_EQ(r.size(), 2u);
}

TEST(RegistryTest, TwoEntriesOfOneNameAreAProgrammingError) {
  EXPECT_THROW((Registry<Part>{{"a", 1}, {"a", 2}}), AssertionError);
  Registry<Part> r = {{"a", 1}};
  EXPECT_THROW(r.add({"a", 3}), AssertionError);
  EXPECT_THROW((Registry<Part>{{"", 1}}), AssertionError);
}

TEST(AssertTest, AFailedAssertionNamesTheConditionTheFileAndTheMessage) {
  try {
    LOCKCHECK_ASSERT(1 + 1 == 3, "arithmetic");
    FAIL() << "no throw";
  } catch (const AssertionError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("1 + 1 == 3"), std::string::npos) << m;
    EXPECT_NE(m.find("registry_test.cc:"), std::string::npos) << m;
    EXPECT_NE(m.find("arithmetic"), std::string::npos) << m;
  }
  EXPECT_NO_THROW(LOCKCHECK_ASSERT(true, ""));
}

// Each registry: every entry described and made by its factory under its own name.
TEST(RegistriesTest, EveryEntryIsDescribedAndItsFactoryMakesIt) {
  for (const auto& c : checker_registry()) {
    EXPECT_GT(std::string(c.description).size(), 10u) << c.name;
    auto made = c.make();
    ASSERT_TRUE(made) << c.name;
    EXPECT_EQ(made->name(), c.name);
  }
  for (const auto& n : nemesis_registry()) {
    auto made = n.make();
    ASSERT_TRUE(made) << n.name;
    EXPECT_EQ(made->name(), n.name);
  }
  for (const auto& w : workload_registry()) {
    EXPECT_GT(std::string(w.description).size(), 10u) << w.name;
    ASSERT_TRUE(w.make()) << w.name;
    EXPECT_FALSE(w.make()->checkers().empty()) << w.name;
  }
  for (const auto& a : lock_adapters()) {
    const LockAlgorithm* lock = find_lock_algorithm(a.name);
    ASSERT_NE(lock, nullptr) << a.name << ": every shipped adapter is a lock of its own";
    EXPECT_TRUE(lock->external) << a.name;
    EXPECT_STREQ(lock->description, a.description);
  }
}

}  // namespace
}  // namespace lockcheck
