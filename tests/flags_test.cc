// The flag tables (harness/flags.h): one table parses a command's flags and makes its help, the reference and the
// completion; a ConfigField table becomes flags that set a RunConfig.
#include "harness/flags.h"

#include <gtest/gtest.h>

#include <boost/program_options/errors.hpp>
#include <sstream>

namespace lockcheck {
namespace {

// A small command: --count N (was --number), --verbose, --tag X (repeatable), one positional.
struct Toy {
  int count = 3;
  bool verbose = false;
  std::vector<std::string> tags;
  CommandSpec spec() {
    FlagSpec count_flag;
    count_flag.name = "count";
    count_flag.old_name = "number";
    count_flag.value = "N";
    count_flag.unit = "ms";
    count_flag.default_text = "3 ms";
    count_flag.config_key = "count_ms";
    count_flag.group = "workload";
    count_flag.help = "how many";
    count_flag.set = [this](const std::string& t) { count = std::stoi(t); };
    FlagSpec verbose_flag;
    verbose_flag.name = "verbose";
    verbose_flag.arity = FlagArity::kSwitch;
    verbose_flag.help = "say more";
    verbose_flag.set = [this](const std::string&) { verbose = true; };
    FlagSpec tag;
    tag.name = "tag";
    tag.arity = FlagArity::kRepeated;
    tag.value = "red|green";
    tag.help = "a tag";
    tag.set = [this](const std::string& t) { tags.push_back(t); };
    CommandSpec s;
    s.name = "toy";
    s.synopsis = "lockcheck toy [FLAGS] DIR";
    s.about = "A toy.";
    s.positional = Positional::kOne;
    s.positional_name = "DIR";
    s.tables.push_back({"toy", {count_flag, verbose_flag, tag}, ""});
    return s;
  }
};

ParsedCommand parse(Toy& t, const std::vector<std::string>& args, std::string* err = nullptr) {
  std::ostringstream e;
  ParsedCommand p = parse_command(t.spec(), args, e);
  if (err) *err = e.str();
  return p;
}

TEST(FlagsTest, ValuesAreAppliedAndTheGivenFlagsNamed) {
  Toy t;
  const ParsedCommand p = parse(t, {"--count", "7", "--verbose", "--tag", "red", "--tag=green", "dir"});
  EXPECT_EQ(t.count, 7);
  EXPECT_TRUE(t.verbose);
  EXPECT_EQ(t.tags, (std::vector<std::string>{"red", "green"}));
  EXPECT_TRUE(p.has("count"));
  EXPECT_FALSE(p.has("number"));
  EXPECT_EQ(p.positionals, std::vector<std::string>{"dir"});
}

TEST(FlagsTest, AnOldSpellingStillWorksWithANoteNamingTheNewOne) {
  Toy t;
  std::string err;
  const ParsedCommand p = parse(t, {"--number", "9"}, &err);
  EXPECT_EQ(t.count, 9);
  EXPECT_TRUE(p.has("count"));
  EXPECT_EQ(err, "lockcheck toy: note: --number is now --count (the old spelling still works)\n");
  Toy both;
  try {
    parse(both, {"--number", "9", "--count", "2"});
    ADD_FAILURE() << "both spellings were taken";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--count: given twice (also as --number)"), std::string::npos) << e.what();
  }
}

TEST(FlagsTest, BadInputNamesTheFlagOrArgument) {
  Toy t;
  EXPECT_THROW(parse(t, {"--count"}), boost::program_options::error);        // no value
  EXPECT_THROW(parse(t, {"--cou", "3"}), boost::program_options::error);     // no abbreviations
  EXPECT_THROW(parse(t, {"--count", "1", "--count", "2"}), boost::program_options::error);
  try {
    parse(t, {"a", "b"});
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "unexpected argument 'b'");
  }
  try {
    parse(t, {"--tag", "\xff"});
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "argument 2 (the value of --tag) is not valid UTF-8");
  }
}

TEST(FlagsTest, HelpGroupsFlagsAndSaysUnitDefaultAndConfigKey) {
  Toy t;
  std::ostringstream out;
  print_command_help(t.spec(), out);
  const std::string h = out.str();
  EXPECT_EQ(h.rfind("usage: lockcheck toy [FLAGS] DIR\n", 0), 0u) << h;
  EXPECT_NE(h.find("\nworkload:\n  --count N"), std::string::npos) << h;   // a grouped flag under its group
  EXPECT_NE(h.find("\ntoy:\n  --verbose"), std::string::npos) << h;        // the others under the table's title
  EXPECT_NE(h.find("unit ms · default 3 ms · config key count_ms · was --number"), std::string::npos) << h;
  EXPECT_LT(h.find("workload:"), h.find("toy:")) << h;
}

TEST(FlagsTest, ReferenceAndCompletionListEveryFlag) {
  Toy t;
  std::ostringstream ref, comp;
  write_reference({t.spec()}, "| 0 | fine |\n", ref);
  for (const char* f : {"`--count N`", "`--verbose`", "`--tag red\\|green`", "`count_ms`", "## lockcheck toy"}) {
    EXPECT_NE(ref.str().find(f), std::string::npos) << f << "\n" << ref.str();
  }
  write_bash_completion({t.spec()}, comp);
  EXPECT_NE(comp.str().find("flags=\"--count --verbose --tag\""), std::string::npos) << comp.str();
  EXPECT_NE(comp.str().find("--tag) COMPREPLY=($(compgen -W \"red green\""), std::string::npos) << comp.str();
  EXPECT_NE(comp.str().find("complete -o filenames -F _lockcheck lockcheck"), std::string::npos);
}

TEST(FlagsTest, RunSettingsBecomeFlagsWithTheirKeyGroupAndDefault) {
  RunConfig c;
  const FlagTable t = setting_flags(config_fields(), c, "run settings");
  size_t with_flag = 0;
  for (const auto& f : config_fields()) with_flag += *f.flag ? 1 : 0;
  ASSERT_EQ(t.flags.size(), with_flag);
  for (const auto& f : t.flags) {
    EXPECT_FALSE(f.config_key.empty()) << f.name;
    EXPECT_FALSE(f.default_text.empty()) << f.name;
    EXPECT_NE(std::find(flag_groups().begin(), flag_groups().end(), f.group), flag_groups().end())
        << "--" << f.name << " is in no help group: " << f.group;
    EXPECT_EQ(f.default_text.find("-1"), std::string::npos) << "--" << f.name << " shows a raw -1 default";
    if (f.name == "hold-ms-max") EXPECT_EQ(f.default_text, "80% of the TTL");
    if (f.name == "ttl-ms") EXPECT_EQ(f.default_text, "1000 ms");
    if (f.name == "time-limit") EXPECT_EQ(f.default_text, "10 s");
  }
  for (const auto& f : t.flags) {
    if (f.name == "restart-delay-ms") f.set("250");
    if (f.name == "fencing") f.set("true");
    if (f.name == "lock-opt") f.set("tries=3");
  }
  EXPECT_EQ(c.restart_delay_ms, 250);
  EXPECT_TRUE(c.fencing);
  EXPECT_EQ(c.lock_opts, nlohmann::json({{"tries", 3}}));
}

TEST(FlagsTest, FindRunSettingByKeyFlagOrOldSpelling) {
  for (const char* name : {"restart_delay_ms", "restart-delay-ms", "--restart-delay-ms", "restart-delay"}) {
    const ConfigField* f = find_run_setting(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_STREQ(f->key, "restart_delay_ms");
  }
  EXPECT_EQ(find_run_setting("nosuch"), nullptr);
}

TEST(FlagsTest, SettingTextAndWrapping) {
  EXPECT_EQ(setting_text(nlohmann::json(10.0)), "10");
  EXPECT_EQ(setting_text(nlohmann::json(0.05)), "0.05");
  EXPECT_EQ(setting_text(nlohmann::json::array({"kill", "pause"})), "kill,pause");
  EXPECT_EQ(setting_text(nlohmann::json::array()), "none");
  EXPECT_EQ(setting_text(nlohmann::json(false)), "off");
  EXPECT_EQ(setting_text(nlohmann::json("")), "none");
  EXPECT_EQ(wrap_text("aa bb cc", 2, 0, 5), "aa bb\n  cc");
}

}  // namespace
}  // namespace lockcheck
