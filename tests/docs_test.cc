// The docs are tested (ctest label docs): README.md and every docs/**/*.md.
//
// 1. Commands. Every `lockcheck ...` command line goes through the real argument parser (cli_main) with --dry-run
//    appended, and must exit 0 without a note of an old flag spelling. What counts as a command line:
//      - in a code block (fenced with ``` or ~~~, or indented by 4 spaces): a line that starts, after an optional
//        "$ " prompt, with "lockcheck " or "build/lockcheck "; a trailing backslash joins the next line, and a
//        " # comment" is dropped;
//      - in inline code: a span that starts with "lockcheck " or "build/lockcheck ". A span of just
//        `lockcheck COMMAND` names the command (it must exist) rather than running it.
//    A line written as a synopsis (it holds [ ] | ... or an unknown <placeholder>) is not run: every --flag in it
//    must be a flag of its command, by its current name.
//    Placeholders (capitals, as the help writes them) become fixtures of a sandbox the commands run in:
//      RUN_DIR, RUN, results/<run-id>   an INVALID run's folder (config.json, history.jsonl, results.json,
//                                       schedule.json), with repro/ (a minimal reproduction) in it
//      TEST_ALL_DIR, SHARD_DIR, DIR     a test-all folder: for merge a shard's, for trend a judged night's; after
//                                       --history a folder of nights; after --results or --out an empty folder
//      FILE                             by the flag before it: --config a config.json, --schedule a schedule.json,
//                                       --hosts a hosts file, --matrix a matrix, --junit/--output a new file;
//                                       check --format edn|porcupine FILE a history in that format
//      COMMAND                          each command in turn
//    The sandbox also holds hosts.json, matrix.json, config.json and schedule.json, so a page may name those files
//    as a user would. The lock adapters are stand-ins (empty files named as each adapter's program): the docs need
//    not wait for scripts/build-clients; servers (etcd, ZooKeeper) are the machine's.
// 2. Links. Every relative link ([text](path), ![alt](path), href= / src=) names a file or folder that exists.
// 3. The CLI reference. docs/cli.md is what `lockcheck help --reference` prints now.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/exit_codes.h"
#include "harness/cli.h"
#include "locks/adapters.h"
#include "tests/support/temp_dir.h"

namespace lockcheck {
namespace {

namespace fs = std::filesystem;

const std::string kSource = LOCKCHECK_SOURCE_DIR;
const char* kRunId = "20260101T000000Z-single-lock-s7";

struct DocLine {
  std::string file;  // relative to the source tree
  int line = 0;
  std::string text;  // the command line, "lockcheck ..." or "build/lockcheck ..."
  bool inline_code = false;
};

std::vector<std::string> doc_files() {
  std::vector<std::string> files = {"README.md"};
  std::error_code ec;
  if (fs::is_directory(kSource + "/docs", ec)) {
    for (const auto& e : fs::recursive_directory_iterator(kSource + "/docs")) {
      if (e.path().extension() == ".md") files.push_back(fs::relative(e.path(), kSource).string());
    }
  }
  std::sort(files.begin() + 1, files.end());
  return files;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(kSource + "/" + path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

bool is_command(const std::string& s) { return starts_with(s, "lockcheck ") || starts_with(s, "build/lockcheck "); }

// " # comment" dropped, outside quotes.
std::string drop_comment(const std::string& s) {
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (quote) {
      if (s[i] == quote) quote = 0;
    } else if (s[i] == '\'' || s[i] == '"') {
      quote = s[i];
    } else if (s[i] == '#' && i > 0 && (s[i - 1] == ' ' || s[i - 1] == '\t')) {
      return trim(s.substr(0, i));
    }
  }
  return trim(s);
}

// The command lines of one page, by the rules in the header.
std::vector<DocLine> command_lines(const std::string& file) {
  const std::vector<std::string> lines = read_lines(file);
  std::vector<DocLine> found;
  bool fenced = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string t = trim(lines[i]);
    if (starts_with(t, "```") || starts_with(t, "~~~")) {
      fenced = !fenced;
      continue;
    }
    const bool indented = starts_with(lines[i], "    ") || starts_with(lines[i], "\t");
    if (fenced || indented) {
      std::string cmd = starts_with(t, "$ ") ? t.substr(2) : t;
      if (!is_command(cmd)) continue;
      DocLine d{file, static_cast<int>(i + 1), "", false};
      while (!cmd.empty() && cmd.back() == '\\' && i + 1 < lines.size()) {
        cmd.pop_back();
        cmd += " " + trim(lines[++i]);
      }
      d.text = drop_comment(cmd);
      found.push_back(d);
      continue;
    }
    // Inline code spans.
    static const std::regex span("`([^`]+)`");
    for (std::sregex_iterator it(lines[i].begin(), lines[i].end(), span), end; it != end; ++it) {
      const std::string code = trim((*it)[1].str());
      if (is_command(code)) found.push_back({file, static_cast<int>(i + 1), code, true});
    }
  }
  return found;
}

// Shell words: spaces split, quotes group, a backslash escapes.
std::vector<std::string> shell_words(const std::string& s) {
  std::vector<std::string> words;
  std::string w;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else {
        w += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < s.size()) {
      w += s[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(w);
      w.clear();
      in_word = false;
    } else {
      w += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(w);
  return words;
}

bool is_synopsis(const std::string& s) {
  for (const char* mark : {"[", "]", "|", "...", "\xe2\x80\xa6", "<", ">", "{", "$"}) {
    if (s.find(mark) != std::string::npos) return true;
  }
  return false;
}

struct CliResult {
  int code;
  std::string out, err;
};

CliResult cli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = cli_main(args, out, err);
  return {code, out.str(), err.str()};
}

// The sandbox the commands run in, and its fixtures.
class Sandbox {
 public:
  Sandbox() {
    root_ = dir_.str();
    run_ = "results/" + std::string(kRunId);
    fs::create_directories(root_ + "/" + run_ + "/repro");
    fs::create_directories(root_ + "/out");
    fs::create_directories(root_ + "/clients");
    const nlohmann::json config = {{"lock", "single"},         {"nemesis", {"kill"}}, {"time_limit_s", 5},
                                   {"nemesis_interval_s", 1}, {"seed", 7},           {"nodes", 3}};
    const nlohmann::json schedule = {{"nemesis", {"kill"}}, {"targeting", "random"}, {"plan", nlohmann::json::array()}};
    write(run_ + "/config.json", config.dump(2));
    write(run_ + "/schedule.json", schedule.dump(2));
    write(run_ + "/history.jsonl",
          R"({"index":0,"time":1000,"process":0,"type":"invoke","f":"acquire","key":"lock-0","value":null})" "\n"
          R"({"index":1,"time":2000,"process":0,"type":"ok","f":"acquire","key":"lock-0","value":null})" "\n");
    write(run_ + "/results.json",
          nlohmann::json{{"run_id", kRunId},
                         {"valid", "invalid"},
                         {"checkers",
                          {{{"checker", "mutex"},
                            {"valid", "invalid"},
                            {"anomalies", {{{"kind", "double-grant"}, {"from_ns", 1500}}}}}}}}
              .dump(2));
    write(run_ + "/repro/config.json", config.dump(2));
    write(run_ + "/repro/schedule.json", schedule.dump(2));
    write(run_ + "/repro/command.txt", "lockcheck run --config " + run_ + "/repro/config.json --schedule " + run_ +
                                           "/repro/schedule.json\n");
    write(run_ + "/repro/tried.json",
          nlohmann::json{{"summary", {{"anomaly", {{"checker", "mutex"}, {"kind", "double-grant"}}}}},
                         {"candidates", nlohmann::json::array()}}
              .dump());
    write("config.json", config.dump(2));
    write("schedule.json", schedule.dump(2));
    write("hosts.json", R"({"hosts": [{"address": "127.0.0.1", "key": "/dev/null", "work_dir": "/tmp/lockcheck"}]})");
    write("matrix.json",
          R"({"name": "docs", "entries": [{"name": "single-healthy", "lock": "single", "expect": "valid"}]})");
    write("history.edn", "{:type :invoke, :f :acquire, :process 0, :time 1000}\n"
                         "{:type :ok, :f :acquire, :process 0, :time 2000}\n");
    write("history.porcupine.json", "[]\n");
    // A shard of test-all whose runs are recorded: merge judges them without running anything.
    write("results/test-all-docs-shard/shard.json", R"({"matrix":"docs","shard":1,"shards":1,"runs":1})");
    write("results/test-all-docs-shard/matrix.json",
          R"({"name":"docs","entries":[{"name":"e","lock":"single","expect":"valid"}]})");
    write("results/test-all-docs-shard/summary.json",
          R"({"matrix":"docs","shard":"1/1","started_at":"2026-01-01T03:00:00Z",)"
          R"("finished_at":"2026-01-01T03:00:00Z"})");
    write("results/test-all-docs-shard/jobs.jsonl",
          R"({"entry":"e","seed":1,"exit_code":0,"seconds":1.0,"run_dir":"","results":{"valid":"valid"}})" "\n");
    // The adapters' stand-ins.
    for (const auto& a : lock_adapters()) {
      write("clients/" + std::string(a.program), "");
      for (const auto& o : a.options) {
        for (const auto& [value, program] : o.programs) write("clients/" + program, "");
      }
    }
    ::setenv("LOCKCHECK_CLIENTS_DIR", (root_ + "/clients").c_str(), 1);
    chdir_to(root_);
    // A judged night: the shard merged (into nights/, the folder --history names).
    const CliResult merged = cli({"merge", "results/test-all-docs-shard", "--results", "nights"});
    EXPECT_EQ(merged.code, kExitValid) << merged.out << merged.err;
    for (const auto& e : fs::directory_iterator(root_ + "/nights")) {
      if (fs::exists(e.path() / "summary.json")) night_ = "nights/" + e.path().filename().string();
    }
    EXPECT_FALSE(night_.empty());
  }
  ~Sandbox() {
    chdir_to(old_);
    ::unsetenv("LOCKCHECK_CLIENTS_DIR");
  }

  // The words of a concrete command with its placeholders made fixtures; "" for an unknown placeholder.
  std::vector<std::string> substitute(std::vector<std::string> words, const std::string& command) const {
    for (size_t i = 0; i < words.size(); ++i) {
      std::string& w = words[i];
      const std::string before = i > 0 ? words[i - 1] : "";
      const auto p = w.find("<run-id>");
      if (p != std::string::npos) w.replace(p, 8, kRunId);
      if (w == "RUN_DIR" || w == "RUN") w = run_;
      if (starts_with(w, "RUN_DIR/") || starts_with(w, "RUN/")) w = run_ + w.substr(w.find('/'));
      if (w == "TEST_ALL_DIR" || w == "SHARD_DIR" || w == "DIR") {
        if (before == "--history") {
          w = "nights";
        } else if (before == "--results" || before == "--out") {
          w = "out";
        } else {
          w = command == "merge" ? "results/test-all-docs-shard" : night_;
        }
      }
      if (w == "FILE") {
        if (before == "--config") w = run_ + "/config.json";
        else if (before == "--schedule") w = run_ + "/schedule.json";
        else if (before == "--hosts") w = "hosts.json";
        else if (before == "--matrix") w = "matrix.json";
        else if (before == "--junit" || before == "--output" || before == "-o") w = "out/file";
        else if (before == "edn") w = "history.edn";
        else if (before == "porcupine") w = "history.porcupine.json";
      }
    }
    return words;
  }

 private:
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories(fs::path(root_ + "/" + rel).parent_path());
    std::ofstream(root_ + "/" + rel) << text;
  }
  static void chdir_to(const std::string& d) {
    if (::chdir(d.c_str()) != 0) ADD_FAILURE() << "cannot chdir to " << d;
  }
  TempDir dir_;
  std::string root_, run_, night_;
  std::string old_ = fs::current_path().string();
};

std::string where(const DocLine& d) { return d.file + ":" + std::to_string(d.line) + ": " + d.text; }

const char* kConvention =
    "\n(the rules and placeholder words: tests/docs_test.cc's header; RUN_DIR, DIR, FILE, COMMAND, results/<run-id>)";

// A synopsis: the command must exist and name only its flags, by their current names.
void check_synopsis(const DocLine& d, const std::string& command, const std::vector<std::string>& words) {
  const std::optional<CommandFlags> flags = command_flags(command);
  if (!flags) {
    ADD_FAILURE() << where(d) << "\n  '" << command << "' is not a lockcheck command" << kConvention;
    return;
  }
  static const std::regex flag_re("^-{1,2}([A-Za-z][A-Za-z0-9-]*)");
  for (const auto& raw : words) {
    std::string w = raw;
    w.erase(0, w.find_first_not_of("[("));
    std::smatch m;
    if (!std::regex_search(w, m, flag_re)) continue;
    const std::string name = m[1].str();
    const bool known = std::find(flags->flags.begin(), flags->flags.end(), name) != flags->flags.end();
    const bool old = std::find(flags->old_names.begin(), flags->old_names.end(), name) != flags->old_names.end();
    if (old) {
      ADD_FAILURE() << where(d) << "\n  --" << name << " is an old spelling (lockcheck help " << command
                    << " names the flag now)";
    } else if (!known) {
      ADD_FAILURE() << where(d) << "\n  lockcheck " << command << " has no flag --" << name;
    }
  }
}

TEST(DocsTest, EveryCommandLineParsesWithDryRun) {
  Sandbox sandbox;
  size_t run = 0, synopses = 0, mentions = 0;
  for (const auto& file : doc_files()) {
    for (const DocLine& d : command_lines(file)) {
      std::vector<std::string> words = shell_words(d.text);
      words.erase(words.begin());  // lockcheck
      if (words.empty()) continue;
      const std::string command = words.front();
      if (d.inline_code && words.size() == 1) {  // `lockcheck CMD` names a command
        ++mentions;
        if (!command_flags(command)) ADD_FAILURE() << where(d) << "\n  '" << command << "' is not a command";
        continue;
      }
      std::string text = d.text;
      const auto p = text.find("<run-id>");
      if (p != std::string::npos) text.replace(p, 8, kRunId);
      while (text.find("<run-id>") != std::string::npos) text.replace(text.find("<run-id>"), 8, kRunId);
      if (is_synopsis(text)) {
        ++synopses;
        check_synopsis(d, command, words);
        continue;
      }
      std::vector<std::vector<std::string>> variants;
      if (std::find(words.begin(), words.end(), "COMMAND") != words.end()) {
        for (const auto& name : command_names()) {
          std::vector<std::string> v = words;
          std::replace(v.begin(), v.end(), std::string("COMMAND"), name);
          variants.push_back(v);
        }
      } else {
        variants.push_back(words);
      }
      for (auto v : variants) {
        v = sandbox.substitute(v, v.front());
        if (std::find(v.begin(), v.end(), "--dry-run") == v.end()) v.push_back("--dry-run");
        ++run;
        const CliResult r = cli(v);
        std::string args;
        for (const auto& w : v) args += " " + w;
        EXPECT_EQ(r.code, kExitValid) << where(d) << "\n  ran: lockcheck" << args << "\n  " << r.err << kConvention;
        EXPECT_EQ(r.err.find("is now --"), std::string::npos)
            << where(d) << "\n  names a flag by an old spelling: " << r.err;
      }
    }
  }
  std::cout << "docs: " << run << " command lines run with --dry-run, " << synopses << " synopses checked, "
            << mentions << " command names\n";
  EXPECT_GT(run, 0u);
}

TEST(DocsTest, EveryRelativeLinkResolves) {
  static const std::regex link(R"((!?\[[^\]]*\]\(([^)\s]+)[^)]*\))|((href|src)=\"([^\"]+)\")|(^\[[^\]]+\]:\s*(\S+)))");
  size_t checked = 0;
  for (const auto& file : doc_files()) {
    const std::vector<std::string> lines = read_lines(file);
    bool fenced = false;
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string t = trim(lines[i]);
      if (starts_with(t, "```") || starts_with(t, "~~~")) fenced = !fenced;
      if (fenced || starts_with(lines[i], "    ")) continue;
      // Inline code is not a link.
      const std::string text = std::regex_replace(lines[i], std::regex("`[^`]*`"), "");
      for (std::sregex_iterator it(text.begin(), text.end(), link), end; it != end; ++it) {
        std::string target = (*it)[2].matched ? (*it)[2].str() : (*it)[5].matched ? (*it)[5].str() : (*it)[7].str();
        if (target.empty() || target[0] == '#' || target.find("://") != std::string::npos ||
            starts_with(target, "mailto:")) {
          continue;
        }
        target = target.substr(0, target.find_first_of("#?"));
        ++checked;
        const fs::path resolved = fs::path(kSource) / fs::path(file).parent_path() / target;
        EXPECT_TRUE(fs::exists(resolved)) << file << ":" << i + 1 << ": the link to " << target
                                          << " names no file (" << resolved.lexically_normal().string() << ")";
      }
    }
  }
  std::cout << "docs: " << checked << " relative links\n";
}

TEST(DocsTest, TheCliReferenceIsWhatTheBinaryGeneratesNow) {
  const CliResult r = cli({"help", "--reference"});
  ASSERT_EQ(r.code, kExitValid) << r.err;
  std::ifstream in(kSource + "/docs/cli.md");
  ASSERT_TRUE(in) << "docs/cli.md is missing; make it with: build/lockcheck help --reference > docs/cli.md";
  std::stringstream committed;
  committed << in.rdbuf();
  EXPECT_TRUE(committed.str() == r.out)
      << "docs/cli.md is stale (the flags changed since it was made); remake it with:\n"
         "  build/lockcheck help --reference > docs/cli.md";
}

}  // namespace
}  // namespace lockcheck
