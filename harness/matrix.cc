#include "harness/matrix.h"

#include "harness/child_runs.h"
#include "harness/scorecard.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/filesystem.hpp>
#include <cctype>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "checkers/checker.h"
#include "checkers/coverage.h"
#include "core/exit_codes.h"
#include "core/history.h"
#include "harness/flags.h"
#include "harness/install_layout.h"
#include "harness/matrix_shard.h"
#include "harness/night.h"
#include "harness/plan.h"
#include "harness/runner.h"
#include "harness/seed_search.h"
#include "harness/trend.h"
#include "locks/adapters.h"
#include "nemesis/nemesis.h"
#include "report/assets.h"
#include "report/coverage.h"
#include "report/html.h"
#include "report/report.h"
#include "report/results_json.h"
#include "sys/process.h"
#include "sys/signals.h"

namespace fs = boost::filesystem;

namespace lockcheck {

namespace {

Validity parse_expect(const nlohmann::json& v, const std::string& where) {
  if (v.is_string()) {
    auto e = validity_from_string(v.get<std::string>());
    if (e && *e != Validity::kUnknown) return *e;
  }
  throw ConfigError(where + ": expect must be \"valid\" or \"invalid\"");
}

std::string utc_stamp() {
  std::time_t t = std::time(nullptr);  // names the summary folder only
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::ostringstream s;
  s << std::put_time(&tm, "%Y%m%dT%H%M%SZ");
  return s.str();
}

// One run of one entry with one seed.
struct Job {
  size_t entry = 0;
  uint64_t seed = 0;
  int exit_code = -1;
  std::string run_dir;
  nlohmann::json results;  // results.json of the run (null when it has none)
  double seconds = 0;
};

// The verdict of checker `name` in results, or nullopt.
std::optional<Validity> checker_verdict(const nlohmann::json& results, const std::string& name) {
  if (!results.is_object()) return std::nullopt;
  for (const auto& c : results.value("checkers", nlohmann::json::array())) {
    if (c.value("checker", "") == name) return validity_from_string(c.value("valid", ""));
  }
  return std::nullopt;
}

// The checkers an entry is about: those it expects invalid (none named: every checker).
std::vector<std::string> about_checkers(const MatrixEntry& e) {
  std::vector<std::string> about;
  for (const auto& [checker, want] : e.expect_checkers) {
    if (want == Validity::kInvalid) about.push_back(checker);
  }
  return about;
}

// "checker: description" of the run's earliest anomaly (by anomaly_time_ns; notes never) in the checkers the
// entry is about, else in any invalid checker; a checker without anomalies gives its summary.
std::string first_anomaly_sentence(const nlohmann::json& results, const std::vector<std::string>& about) {
  if (!results.is_object()) return "";
  for (const bool only_about : {true, false}) {
    if (only_about && about.empty()) continue;
    auto counts = [&](const nlohmann::json& c) {
      return !only_about || std::find(about.begin(), about.end(), c.value("checker", "?")) != about.end();
    };
    std::string best;
    std::optional<int64_t> best_t;
    for_each_violation(results, [&](const nlohmann::json& c, const nlohmann::json& a) {
      if (!counts(c) || !a.contains("description")) return;
      const std::optional<int64_t> t = anomaly_time_ns(a, nullptr);
      if (best.empty() || (t && (!best_t || *t < *best_t))) {
        best = c.value("checker", "?") + ": " + a["description"].get<std::string>();
        best_t = t;
      }
    });
    if (!best.empty()) return best;
    // An invalid checker without such anomalies: its summary.
    for (const auto& c : results.value("checkers", nlohmann::json::array())) {
      if (c.is_object() && c.value("valid", "") == "invalid" && counts(c)) {
        return c.value("checker", "?") + ": " + c.value("summary", "");
      }
    }
  }
  return "";
}

using EntryOutcome = EntryJudgement;

std::string median_text(std::vector<double> firsts) {
  if (firsts.empty()) return "";
  std::sort(firsts.begin(), firsts.end());
  const double median =
      firsts.size() % 2 ? firsts[firsts.size() / 2] : (firsts[firsts.size() / 2 - 1] + firsts[firsts.size() / 2]) / 2;
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << "median first anomaly " << median << " s";
  return o.str();
}

// "invalid" or "invalid in >= 9 of 10"
std::string wanted_text(Validity want, const MatrixEntry& e, size_t n) {
  if (want == Validity::kValid && e.max_found > 0) {
    return "valid in >= " + std::to_string(n - std::min(n, e.max_found)) + " of " + std::to_string(n);
  }
  if (want != Validity::kInvalid || e.min_found <= 1) return to_string(want);
  return "invalid in >= " + std::to_string(e.min_found) + " of " + std::to_string(n);
}

EntryOutcome judge(const MatrixEntry& e, const std::vector<const Job*>& jobs) {
  // The time to the first anomaly of what the entry is about: its checkers expected invalid, if it names any.
  const std::vector<std::string> about = about_checkers(e);
  std::vector<SeedRun> runs;
  for (const Job* j : jobs) {
    SeedRun r{j->seed, j->exit_code, j->results, std::nullopt};
    if (j->exit_code == kExitInvalid && !j->run_dir.empty()) {
      try {
        if (auto t = first_anomaly_ns(j->run_dir, about)) r.first_anomaly_s = static_cast<double>(*t) / 1e9;
      } catch (const std::exception&) {
        // a merged shard's run folder may be elsewhere: no time, the verdict stands
      }
    }
    runs.push_back(std::move(r));
  }
  return judge_entry(e, runs);
}

}  // namespace

EntryJudgement judge_entry(const MatrixEntry& e, const std::vector<SeedRun>& runs) {
  EntryJudgement o;
  size_t invalid = 0, valid = 0, unknown = 0;
  std::string errors, anomaly;
  std::vector<double> firsts;
  const std::vector<std::string> about = about_checkers(e);
  for (const SeedRun& j : runs) {
    bool found_here = j.exit_code == kExitInvalid;
    if (!about.empty()) {
      found_here = std::any_of(about.begin(), about.end(), [&](const std::string& c) {
        return checker_verdict(j.results, c) == Validity::kInvalid;
      });
    }
    if (found_here) {
      ++o.found;
      if (j.first_anomaly_s) o.first_anomaly_s.push_back(*j.first_anomaly_s);
    }
    if (j.exit_code == kExitValid)
      ++valid;
    else if (j.exit_code == kExitInvalid) {
      ++invalid;
      if (j.first_anomaly_s) firsts.push_back(*j.first_anomaly_s);
      if (anomaly.empty()) anomaly = "seed " + std::to_string(j.seed) + ": " + first_anomaly_sentence(j.results, about);
    } else if (j.exit_code == kExitUnknown)
      ++unknown;
    else {
      if (!errors.empty()) errors += "; ";
      std::string why = j.results.is_object() ? j.results.value("error", "") : "";
      errors += "seed " + std::to_string(j.seed) + " exited " + std::to_string(j.exit_code) +
                (why.empty() ? "" : " (" + why + ")");
    }
  }
  const size_t n = runs.size();
  std::ostringstream counts;
  counts << invalid << "/" << n << " invalid, " << valid << "/" << n << " valid";
  if (unknown) counts << ", " << unknown << "/" << n << " unknown";
  const std::string median = median_text(firsts);
  if (!median.empty()) counts << ", " << median;
  if (!errors.empty()) {
    o.error = true;
    o.finding = "run failed: " + errors;
    return o;
  }
  const auto tail = [&] { return anomaly.empty() ? std::string() : " — " + anomaly; };
  if (e.expect) {
    o.met = *e.expect == Validity::kValid ? valid + e.max_found >= n : invalid >= e.min_found;
    o.finding = "expected " + wanted_text(*e.expect, e, n) + ", found " + counts.str() + tail();
    return o;
  }
  o.met = true;
  std::ostringstream f;
  for (const auto& [checker, want] : e.expect_checkers) {
    size_t c_invalid = 0, c_valid = 0;
    for (const SeedRun& j : runs) {
      auto v = checker_verdict(j.results, checker);
      c_invalid += v == Validity::kInvalid;
      c_valid += v == Validity::kValid;
    }
    const bool met = want == Validity::kValid ? c_valid + e.max_found >= n : c_invalid >= e.min_found;
    o.met = o.met && met;
    f << (f.tellp() > 0 ? "; " : "") << checker << ": expected " << wanted_text(want, e, n) << ", found " << c_invalid
      << "/" << n << " invalid";
  }
  if (!median.empty()) f << "; " << median;
  o.finding = f.str() + tail();
  return o;
}

namespace {

std::string xml_escape(const std::string& s) { return report::escape(s); }

void write_junit(const std::string& path, const Matrix& m, const std::vector<EntryOutcome>& outcomes,
                 const std::vector<double>& seconds) {
  size_t failures = 0, errors = 0;
  double total = 0;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    failures += !outcomes[i].met && !outcomes[i].error;
    errors += outcomes[i].error;
    total += seconds[i];
  }
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"lockcheck\" tests=\"" << outcomes.size() << "\" failures=\"" << failures << "\" errors=\""
      << errors << "\" time=\"" << total << "\">\n";
  out << "  <testsuite name=\"lockcheck." << xml_escape(m.name) << "\" tests=\"" << outcomes.size() << "\" failures=\""
      << failures << "\" errors=\"" << errors << "\" time=\"" << total << "\">\n";
  for (size_t i = 0; i < outcomes.size(); ++i) {
    out << "    <testcase classname=\"lockcheck." << xml_escape(m.name) << "\" name=\"" << xml_escape(m.entries[i].name)
        << "\" time=\"" << seconds[i] << "\">\n";
    if (outcomes[i].error) {
      out << "      <error message=\"" << xml_escape(outcomes[i].finding) << "\"/>\n";
    } else if (!outcomes[i].met) {
      out << "      <failure message=\"" << xml_escape(outcomes[i].finding) << "\"/>\n";
    } else {
      out << "      <system-out>" << xml_escape(outcomes[i].finding) << "</system-out>\n";
    }
    out << "    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
}

// The summary's "Reproduce" section: for every INVALID run, the `lockcheck reproduce` command that measures
// how often its anomaly comes back and shrinks it to the smallest case (harness/reproduce.h).
void write_reproduce_commands(std::ostream& out, const Matrix& m, const std::vector<Job>& jobs) {
  std::vector<const Job*> invalid;
  for (const auto& j : jobs) {
    if (j.exit_code == kExitInvalid && !j.run_dir.empty()) invalid.push_back(&j);
  }
  if (invalid.empty()) return;
  out << "<h2 id=\"reproduce\">Reproduce</h2>\n<p>Each INVALID run's reproduction rate and its smallest reliable "
         "reproduction (written to the run's <code>repro/</code> folder and report):</p>\n<table>"
         "<tr><th>entry</th><th>seed</th><th>command</th></tr>\n";
  for (const Job* j : invalid) {
    out << "<tr><td>" << report::escape(m.entries[j->entry].name) << "</td><td>" << j->seed
        << "</td><td><code>lockcheck reproduce " << report::escape(report::shell_quote(j->run_dir))
        << "</code></td></tr>\n";
  }
  out << "</table>\n";
}

// "client-pause, kill" in words: each nemesis's name and what it does (the registry's line), how it is aimed,
// "none".
std::string faults_in_words(const std::vector<std::string>& nemesis, const std::string& targeting) {
  if (nemesis.empty()) return "none";
  std::string out;
  for (const auto& n : nemesis) {
    const std::string base = n.substr(0, n.find(':'));
    std::string what;
    for (const auto& info : nemesis_registry()) {
      if (base == info.name) what = info.description;
    }
    out += (out.empty() ? "" : "<br>") + std::string("<b>") + report::escape(n) + "</b>";
    if (!what.empty()) out += " <span class=\"meta\">" + report::escape(what) + "</span>";
  }
  return out + "<br>aimed: " + (targeting == "holder" ? std::string("at the lock holder") : report::escape(targeting));
}

// "4 min 12 s"
std::string duration_words(double s) {
  const long total = std::lround(s);
  std::ostringstream o;
  if (total >= 3600)
    o << total / 3600 << " h " << (total % 3600) / 60 << " min";
  else if (total >= 60)
    o << total / 60 << " min " << total % 60 << " s";
  else
    o << total << " s";
  return o.str();
}

// "fault timing: 12 faults (12 random; 0 fell back); client-pause never met acquiring, renewing"
std::string coverage_line(const FaultCoverage& c) {
  std::string timing;
  for (const auto& [t, n] : c.timing) timing += (timing.empty() ? "" : ", ") + std::to_string(n) + " " + t;
  const std::string never = report::never_met_words(to_json(c));
  return "fault timing: " + std::to_string(c.faults) + " faults (" + timing + "; " + std::to_string(c.fallbacks) +
         " fell back); " +
         (c.never_met().empty() ? std::string("lock states not recorded")
                                : never.empty() ? std::string("every fault met every lock state") : never);
}

void write_summary(const std::string& path, const Matrix& m, const std::vector<EntryOutcome>& outcomes,
                   const std::vector<Job>& jobs, const nlohmann::json& night, const std::string& since) {
  size_t met = 0;
  for (const auto& o : outcomes) met += o.met;
  const fs::path base = fs::absolute(fs::path(path).parent_path());
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>lockcheck test-all: "
      << report::escape(m.name) << "</title><style>" << report::kPageCss << "</style></head><body>\n<main>\n";
  out << "<section><h1>lockcheck test-all</h1><h2>" << report::escape(m.name) << " — <span class=\""
      << (met == outcomes.size() ? "met\">all " : "missed\">") << met << " of " << outcomes.size()
      << " expectations met</span></h2>\n<p class=\"meta\">ran " << report::escape(night.value("started_at", "?"))
      << " for " << duration_words(night.value("duration_s", 0.0)) << " on "
      << report::escape(report::plain(night.value("cores", nlohmann::json("?"))))
      << " cores</p>\n<table class=\"config\" id=\"versions\">";
  const nlohmann::json versions = night.value("versions", nlohmann::json::object());
  for (const auto& [name, v] : versions.items()) {
    out << "<tr><th>" << report::escape(name) << "</th><td>"
        << report::escape(v.is_string() ? v.get<std::string>() : v.dump()) << "</td></tr>";
  }
  out << "</table></section>\n" << since;
  out << "<section><table class=\"entries\"><tr><th>entry</th><th>lock</th><th>workload</th><th>faults</th>"
         "<th>expected</th><th>found</th><th>runs</th></tr>\n";
  for (size_t i = 0; i < m.entries.size(); ++i) {
    const auto& e = m.entries[i];
    std::string expect = e.expect ? to_string(*e.expect) : "";
    for (const auto& [c, v] : e.expect_checkers) expect += (expect.empty() ? "" : ", ") + c + ": " + to_string(v);
    out << "<tr class=\"" << (outcomes[i].met ? "met" : "missed") << "\"><td>" << report::escape(e.name)
        << "</td><td class=\"name\">" << report::escape(e.config.lock) << "</td><td class=\"name\">"
        << report::escape(e.config.workload) << "</td><td>" << faults_in_words(e.config.nemesis, e.config.nemesis_targeting) << "</td><td>"
        << report::escape(expect) << "</td><td>" << report::escape(outcomes[i].finding) << "</td><td>";
    for (const auto& j : jobs) {
      if (j.entry != i) continue;
      std::string verdict = j.results.is_object() ? j.results.value("valid", "?") : "error";
      if (j.run_dir.empty()) {
        out << "seed " << j.seed << ": " << report::escape(verdict) << "<br>";
      } else {
        const std::string rel = fs::relative(fs::absolute(j.run_dir) / "report.html", base).string();
        out << "<a href=\"" << report::escape(rel) << "\">seed " << j.seed << ": " << report::escape(verdict)
            << "</a><br>";
      }
    }
    out << "</td></tr>\n";
  }
  out << "</table></section>\n";
  std::ostringstream repro;
  write_reproduce_commands(repro, m, jobs);
  if (repro.tellp() > 0) out << "<section>" << repro.str() << "</section>\n";
  std::vector<ScorecardRun> runs;
  for (const auto& j : jobs) {
    if (j.exit_code != -1) runs.push_back({j.entry, j.seed, j.exit_code, j.run_dir});
  }
  out << report::matrix_fault_timing_html(night);
  const Scorecard card = build_scorecard(m, runs);
  const std::string card_html = scorecard_html(card, base.string());
  if (!card_html.empty()) out << "<section>" << card_html << "</section>\n";
  out << "</main></body></html>\n";
  report::write_atomically(path, out.str());
  if (!card.empty()) std::ofstream(base / "scorecard.md") << scorecard_markdown(card);
}

// The run folder a child `lockcheck run` made: it writes the path into the file named by kRunDirFileEnv
// (harness/runner.h) as soon as the folder exists. Empty when it never got one.
std::string run_dir_written_to(const std::string& file) {
  std::ifstream in(file);
  std::string dir;
  std::getline(in, dir);
  return dir;
}

}  // namespace

namespace {

// `test-all --dry-run`: the matrix, its entries with their expectations, settings and seeds (the runs), and what
// it would write.
void print_test_all_plan(std::ostream& out, const TestAllOptions& opts, const Matrix& m, const std::vector<Job>& jobs,
                         size_t all_runs, const ShardSpec& shard, size_t history_nights, const std::string& dir) {
  out << (opts.replay ? "merge" : "test-all") << " --dry-run: nothing run, nothing written\n"
      << "matrix: " << m.name << " ("
      << (opts.replay ? std::string("the shards' matrix.json") : matrix_path(opts.matrix)) << "): " << m.entries.size() << " entries, " << all_runs << " runs";
  if (shard.sharded()) out << "; shard " << shard.k << "/" << shard.n << " takes " << jobs.size() << " of them";
  if (!opts.replay) out << ", " << opts.parallel << " at a time";
  out << "\n";
  if (!opts.history.empty()) {
    out << "history: " << opts.history << " (" << history_nights << " earlier nights)"
        << (opts.fail_on_trend ? "; exit 1 when something got worse" : "") << "\n";
  }
  const nlohmann::json defaults = RunConfig{};
  for (size_t i = 0; i < m.entries.size(); ++i) {
    const MatrixEntry& e = m.entries[i];
    const nlohmann::json settings = entry_settings(e);
    std::string expect = settings.at("expect").is_string() ? settings.at("expect").get<std::string>()
                                                             : settings.at("expect").dump();
    const bool any_invalid = e.expect == Validity::kInvalid ||
                             std::any_of(e.expect_checkers.begin(), e.expect_checkers.end(),
                                         [](const auto& c) { return c.second == Validity::kInvalid; });
    if (any_invalid) {
      expect += " (found in at least " + std::to_string(e.min_found) + " of " + std::to_string(e.seeds.size()) + ")";
    }
    std::string differs;
    for (auto it = settings.begin(); it != settings.end(); ++it) {
      if (!defaults.contains(it.key()) || defaults.at(it.key()) == it.value()) continue;
      differs += " " + it.key() + "=" + setting_text(it.value());
    }
    std::string seeds;
    for (const auto& j : jobs) {
      if (j.entry == i) seeds += (seeds.empty() ? "" : ", ") + std::to_string(j.seed);
    }
    out << "  " << e.name << ": expect " << expect
        << "; runs (seeds): " << (seeds.empty() ? "none in this shard" : seeds) << "\n    " << (differs.empty() ? std::string(" the defaults") : differs) << "\n";
  }
  out << "would write: " << dir << "/ (junit.xml" << (opts.junit_path.empty() ? "" : " at " + opts.junit_path)
      << ", summary.html, summary.json, logs/), each run's folder under " << opts.results_dir << "/\n";
}

}  // namespace

nlohmann::json entry_settings(const MatrixEntry& e) {
  nlohmann::json s = e.config;
  for (const char* k : {"results_dir", "label", "seed", "argv", "progress"}) s.erase(k);
  if (find_lock_adapter(e.config.lock))
    s.erase("client_cmd");  // made from lock and lock_opts, with this machine's path
  s["seeds"] = e.seeds;
  s["min_found"] = e.min_found;
  if (e.max_found > 0) s["max_found"] = e.max_found;  // only when set: older nights' settings compare unchanged
  if (e.expect) {
    s["expect"] = to_string(*e.expect);
  } else {
    nlohmann::json x = nlohmann::json::object();
    for (const auto& [c, v] : e.expect_checkers) x[c] = to_string(v);
    s["expect"] = x;
  }
  return s;
}

Matrix parse_matrix(const nlohmann::json& j, const std::string& results_dir) {
  if (!j.is_object()) throw ConfigError("matrix: must be a JSON object");
  Matrix m;
  m.name = j.value("name", "matrix");
  nlohmann::json defaults = j.value("defaults", nlohmann::json::object());
  if (!defaults.is_object()) throw ConfigError("matrix: \"defaults\" must be an object");
  // min_found is the matrix's, not a run's: a default for the entries, not a config field.
  nlohmann::json default_min_found = nullptr;
  if (defaults.contains("min_found")) {
    default_min_found = defaults["min_found"];
    defaults.erase("min_found");
  }
  auto it = j.find("entries");
  if (it == j.end() || !it->is_array() || it->empty())
    throw ConfigError("matrix: \"entries\" must be a non-empty array");
  std::set<std::string> names;
  for (const auto& e : *it) {
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string()) {
      throw ConfigError("matrix: every entry needs a \"name\" string");
    }
    MatrixEntry me;
    me.name = e["name"].get<std::string>();
    const std::string where = "matrix entry '" + me.name + "'";
    if (!names.insert(me.name).second) throw ConfigError(where + ": name given twice");
    nlohmann::json cfg = defaults;
    for (auto f = e.begin(); f != e.end(); ++f) {
      // "note": for people (why the expectation is what it is, the library's documentation line); not a config field.
      if (f.key() == "name" || f.key() == "expect" || f.key() == "seeds" || f.key() == "min_found" || f.key() == "max_found" || f.key() == "note")
        continue;
      if (f.key() == "library" || f.key() == "scenario") {  // the scorecard's row and column
        if (!f.value().is_string()) throw ConfigError(where + ": \"" + f.key() + "\" must be a string");
        (f.key() == "library" ? me.library : me.scenario) = f.value().get<std::string>();
        continue;
      }
      cfg[f.key() == "time" ? "time_limit_s" : f.key()] = f.value();
    }
    try {
      from_json(cfg, me.config);
      me.config.label = me.name;
      me.config.results_dir = results_dir;
      me.config.progress = false;
      me.config = resolve_plan(me.config).config;  // checked against the registries; an adapter's client_cmd made
    } catch (const ConfigError& err) {
      throw ConfigError(where + ": " + err.what());
    }
    auto seeds = e.find("seeds");
    if (seeds == e.end()) {
      me.seeds = {me.config.seed ? me.config.seed : 1};
    } else if (seeds->is_number_unsigned() && seeds->get<uint64_t>() >= 1 && seeds->get<uint64_t>() <= 1000) {
      const uint64_t base = me.config.seed ? me.config.seed : 1;
      for (uint64_t s = 0; s < seeds->get<uint64_t>(); ++s) me.seeds.push_back(base + s);
    } else if (seeds->is_array() && !seeds->empty()) {
      for (const auto& s : *seeds) {
        if (!s.is_number_unsigned() || s.get<uint64_t>() == 0)
          throw ConfigError(where + ": seeds must be positive integers");
        me.seeds.push_back(s.get<uint64_t>());
      }
    } else {
      throw ConfigError(where + ": seeds must be a count from 1 to 1000 or a list of seeds");
    }
    const nlohmann::json min_found = e.contains("min_found") ? e["min_found"] : default_min_found;
    if (!min_found.is_null()) {
      if (!min_found.is_number_unsigned() || min_found.get<uint64_t>() < 1 ||
          min_found.get<uint64_t>() > me.seeds.size()) {
        throw ConfigError(where + ": min_found must be an integer from 1 to the number of seeds (" +
                          std::to_string(me.seeds.size()) + ")");
      }
      me.min_found = min_found.get<size_t>();
    }
    if (e.contains("max_found")) {
      const nlohmann::json& mf = e["max_found"];
      if (!mf.is_number_unsigned() || mf.get<uint64_t>() >= me.seeds.size()) {
        throw ConfigError(where + ": max_found must be an integer from 0 to the number of seeds - 1 (" +
                          std::to_string(me.seeds.size() - 1) + ")");
      }
      me.max_found = mf.get<size_t>();
    }
    auto expect = e.find("expect");
    if (expect == e.end()) throw ConfigError(where + ": expect is required");
    if (expect->is_object()) {
      for (auto c = expect->begin(); c != expect->end(); ++c) {
        if (!make_checker(c.key())) throw ConfigError(where + ": expect names unknown checker '" + c.key() + "'");
        me.expect_checkers.emplace_back(c.key(), parse_expect(c.value(), where));
      }
      if (me.expect_checkers.empty()) throw ConfigError(where + ": expect must name at least one checker");
    } else {
      me.expect = parse_expect(*expect, where);
    }
    const bool expects_valid = (me.expect && *me.expect == Validity::kValid) ||
                               std::any_of(me.expect_checkers.begin(), me.expect_checkers.end(),
                                           [](const auto& c) { return c.second == Validity::kValid; });
    if (me.max_found > 0 && !expects_valid) {
      throw ConfigError(where + ": max_found applies to a \"valid\" expectation, and this entry expects none");
    }
    m.entries.push_back(std::move(me));
  }
  return m;
}

std::string matrix_path(const std::string& file_or_name) {
  if (file_or_name.find('/') != std::string::npos || file_or_name.find('.') != std::string::npos) return file_or_name;
  return matrix_dir() + "/" + file_or_name + ".json";
}

Matrix load_matrix(const std::string& file_or_name, const std::string& results_dir) {
  return parse_matrix(read_json_file(matrix_path(file_or_name)), results_dir);
}

int test_all(const TestAllOptions& opts, std::ostream& out) {
  if (opts.parallel < 1 || opts.parallel > 16) throw ConfigError("--parallel: must be between 1 and 16");
  Matrix m = load_matrix(opts.matrix, opts.results_dir);
  // The earlier nights, read before anything runs: a bad history is bad input (exit 2), found at once.
  std::vector<Night> history;
  if (!opts.history.empty()) history = read_history_nights(opts.history, m.name, kHistoryNights - 1);
  const ShardSpec shard = parse_shard(opts.shard);
  std::vector<Job> jobs;
  size_t run_number = 0;
  for (size_t i = 0; i < m.entries.size(); ++i) {
    for (uint64_t s : m.entries[i].seeds) {
      if (!in_shard(run_number++, shard)) continue;
      Job j;
      j.entry = i;
      j.seed = s;
      jobs.push_back(j);
    }
  }
  const std::time_t started = std::time(nullptr);
  const auto started_steady = std::chrono::steady_clock::now();
  const std::string dir = opts.results_dir + "/test-all-" + m.name + "-" + utc_stamp();
  if (opts.dry_run) {
    print_test_all_plan(out, opts, m, jobs, run_number, shard, history.size(), dir);
    return kExitValid;
  }
  fs::create_directories(dir + "/logs");
  const std::string binary = opts.lockcheck_binary.empty() ? self_exe() : opts.lockcheck_binary;
  write_shard_files(dir, opts.matrix, m.name, shard, jobs.size());
  if (shard.sharded()) out << "test-all: shard " << shard.k << "/" << shard.n << " of " << run_number << " runs\n";
  out << "test-all: " << m.name << ": " << m.entries.size() << " entries, " << jobs.size() << " runs, " << opts.parallel
      << " at a time\n"
      << std::flush;

  InterruptGuard interrupt;
  std::atomic<size_t> next{0};
  std::mutex mu;
  auto worker = [&] {
    while (!interrupt.interrupted()) {
      const size_t k = next.fetch_add(1);
      if (k >= jobs.size()) return;
      Job& job = jobs[k];
      const MatrixEntry& e = m.entries[job.entry];
      RunConfig cfg = e.config;
      cfg.seed = job.seed;
      const std::string stem = dir + "/logs/" + e.name + "-s" + std::to_string(job.seed);
      {
        std::ofstream cf(stem + ".config.json");
        cf << nlohmann::json(cfg).dump(2) << "\n";
      }
      const auto t0 = std::chrono::steady_clock::now();
      if (opts.replay) {  // `lockcheck merge`: the run was made by a shard
        if (const JobRecord* r = opts.replay->find(e.name, job.seed)) {
          job.exit_code = r->exit_code;
          job.seconds = r->seconds;
          job.run_dir = r->run_dir;
          job.results = r->results;
          std::lock_guard<std::mutex> lock(mu);
          append_job_record(dir, {e.name, job.seed, job.exit_code, job.seconds, job.run_dir, job.results});
          out << "  " << std::left << std::setw(32) << (e.name + " s" + std::to_string(job.seed)) << " exit "
              << job.exit_code << " (recorded)\n";
        }
        continue;
      }
      try {
        ProcessSpec spec;
        spec.argv = {binary, "run", "--config", stem + ".config.json", "--no-progress"};
        spec.stdout_path = stem + ".log";
        spec.stderr_path = "=stdout";
        spec.env[kRunDirFileEnv] = stem + ".run_dir";
        ChildProcess child(spec);
        std::optional<int> st;
        bool forwarded = false;
        // A run that hangs (a client stuck past every timeout) must not hang the whole matrix: past its time
        // limit plus a generous margin it gets SIGTERM, and SIGKILL 30 s later.
        const auto overdue = t0 + std::chrono::seconds(static_cast<int64_t>(cfg.time_limit_s * 2) + 180);
        while (!(st = child.wait_for(std::chrono::milliseconds(200)))) {
          const auto now = std::chrono::steady_clock::now();
          if ((interrupt.interrupted() || now > overdue) && !forwarded) {
            child.signal(SIGTERM);  // the run stops the orderly way and undoes its faults
            forwarded = true;
          }
          if (now > overdue + std::chrono::seconds(30)) child.kill_and_reap();
        }
        job.exit_code = *st;
      } catch (const std::exception& ex) {
        job.exit_code = kExitHarness;
        std::ofstream(stem + ".log", std::ios::app) << "lockcheck test-all: " << ex.what() << "\n";
      }
      job.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      job.run_dir = run_dir_written_to(stem + ".run_dir");
      if (!job.run_dir.empty() && fs::exists(job.run_dir + "/results.json")) {
        try {
          job.results = read_json_file(job.run_dir + "/results.json");
        } catch (const ConfigError&) {
          job.results = nullptr;
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      append_job_record(dir, {e.name, job.seed, job.exit_code, job.seconds, job.run_dir, job.results});
      out << "  " << std::left << std::setw(32) << (e.name + " s" + std::to_string(job.seed)) << " exit "
          << job.exit_code << " (" << (job.results.is_object() ? job.results.value("valid", "?") : "no results") << ", "
          << std::fixed << std::setprecision(1) << job.seconds << " s)\n"
          << std::flush;
    }
  };
  std::vector<std::thread> pool;
  for (int i = 0; i < opts.parallel; ++i) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  // The night's head (harness/night.h): when, how long, what it ran with. merge takes the shards'.
  nlohmann::json night = opts.replay_night.is_object() ? opts.replay_night : nlohmann::json::object();
  std::vector<std::string> locks;
  for (const auto& e : m.entries) locks.push_back(e.config.lock);
  std::vector<nlohmann::json> results;
  for (const auto& j : jobs) results.push_back(j.results);
  if (!opts.replay) {
    night = {{"started_at", iso_utc(started)},
             {"finished_at", iso_utc(std::time(nullptr))},
             {"duration_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - started_steady).count()},
             {"cores", std::thread::hardware_concurrency()},
             {"versions", night_versions(locks, results)}};
  } else if (!night.contains("started_at")) {  // shards written before summary.json existed: say so
    night["started_at"] = iso_utc(started);
    night["started_at_note"] = "when merge ran: the shards recorded no start";
    if (night.value("versions", nlohmann::json::object()).empty()) {
      night["versions"] = night_versions(locks, results);
      night["versions_note"] = "lockcheck: the merging binary's; the rest from the runs' results";
    }
  }
  night["matrix"] = m.name;
  if (shard.sharded()) {  // judged by `lockcheck merge` over all shards
    night["shard"] = std::to_string(shard.k) + "/" + std::to_string(shard.n);
    report::write_atomically(dir + "/summary.json", night.dump(2) + "\n");
    bool failed = false;
    for (const auto& j : jobs)
      failed = failed || (j.exit_code != kExitValid && j.exit_code != kExitInvalid && j.exit_code != kExitUnknown);
    out << "\nshard " << shard.k << "/" << shard.n << ": " << jobs.size() << " runs in " << dir
        << " (lockcheck merge joins the shards' folders)\n";
    if (interrupt.interrupted()) return 128 + interrupt.signal_number();
    return failed ? kExitHarness : kExitValid;
  }

  std::vector<EntryOutcome> outcomes;
  std::vector<FaultCoverage> entry_coverage;
  FaultCoverage matrix_coverage;
  std::vector<double> seconds(m.entries.size(), 0);
  size_t met = 0;
  out << "\n";
  for (size_t i = 0; i < m.entries.size(); ++i) {
    std::vector<const Job*> mine;
    for (const auto& j : jobs) {
      if (j.entry == i && j.exit_code != -1) {
        mine.push_back(&j);
        seconds[i] += j.seconds;
      }
    }
    EntryOutcome o;
    if (mine.size() != m.entries[i].seeds.size()) {
      o.error = true;
      o.finding = "not run (interrupted)";
    } else {
      o = judge(m.entries[i], mine);
    }
    met += o.met;
    out << (o.met ? "  met     " : "  MISSED  ") << std::left << std::setw(28) << m.entries[i].name << " " << o.finding
        << "\n";
    outcomes.push_back(o);
    // Which lock state the entry's faults met, over its seeds' runs (checkers/coverage.h).
    FaultCoverage c;
    for (const Job* j : mine) {
      if (j->results.is_object() && j->results.contains("coverage")) c.add(coverage_from_json(j->results["coverage"]));
    }
    if (c.faults > 0) out << "          " << std::setw(28) << "" << " " << coverage_line(c) << "\n";
    entry_coverage.push_back(c);
    matrix_coverage.add(c);
  }
  if (matrix_coverage.faults > 0) out << "  over the matrix: " << coverage_line(matrix_coverage) << "\n";
  const std::string junit = opts.junit_path.empty() ? dir + "/junit.xml" : opts.junit_path;
  write_junit(junit, m, outcomes, seconds);
  night["met"] = met;
  night["entries"] = nlohmann::json::array();
  for (size_t i = 0; i < m.entries.size(); ++i) {
    night["entries"].push_back({{"name", m.entries[i].name},
                                {"settings", entry_settings(m.entries[i])},
                                {"n", m.entries[i].seeds.size()},
                                {"found", outcomes[i].found},
                                {"met", outcomes[i].met},
                                {"error", outcomes[i].error},
                                {"first_anomaly_s", outcomes[i].first_anomaly_s},
                                {"finding", outcomes[i].finding},
                                {"coverage", to_json(entry_coverage[i])}});
  }
  night["coverage"] = to_json(matrix_coverage);
  report::write_atomically(dir + "/summary.json", night.dump(2) + "\n");
  // Since the last nights: tonight (as trend reads it back) against the history.
  std::string since;
  bool trend_worse = false;
  if (!opts.history.empty()) {
    Night tonight = read_night(dir);
    // Earlier nights only: a night merged again (the same shards) is tonight, and a night that started after
    // tonight (an old night merged late) is not an earlier one.
    const std::time_t tonight_start = *parse_iso_utc(tonight.started_at);
    history.erase(std::remove_if(history.begin(), history.end(),
                                 [&](const Night& n) { return *parse_iso_utc(n.started_at) >= tonight_start; }),
                  history.end());
    history.push_back(std::move(tonight));
    auto t = compute_trend(std::move(history), 0.05);
    report::write_atomically(dir + "/trend.json", trend_json(*t).dump(2) + "\n");
    report::write_atomically(dir + "/trend.html", trend_html(*t));
    since = trend_summary_section(*t, "trend.html");
    trend_worse = t->worse();
    out << "\nsince the last nights (" << t->nights.size() - 1 << " earlier):\n";
    print_trend(*t, out);
  }
  write_summary(dir + "/summary.html", m, outcomes, jobs, night, since);
  try {
    write_index(opts.results_dir);  // the summary (and trend) beside the runs
  } catch (const std::exception& e) {
    out << "test-all: could not rewrite " << opts.results_dir << "/index.html: " << e.what() << "\n";
  }
  out << "\n"
      << met << " of " << m.entries.size() << " expectations met\n"
      << "junit: " << junit << "\nsummary: " << dir << "/summary.html\n";
  if (!opts.history.empty())
    out << "trend: " << dir << "/trend.html" << (trend_worse ? " (something got worse)" : "") << "\n";
  const auto invalid_runs = std::count_if(jobs.begin(), jobs.end(), [](const Job& j) {
    return j.exit_code == kExitInvalid && !j.run_dir.empty();
  });
  if (invalid_runs > 0) {
    out << "reproduce: the summary gives `lockcheck reproduce RUN_DIR` for each of the " << invalid_runs
        << " INVALID runs (rate, then the smallest reliable case)\n";
  }
  if (interrupt.interrupted()) return 128 + interrupt.signal_number();
  if (opts.fail_on_trend && trend_worse) return kExitInvalid;
  return met == m.entries.size() ? kExitValid : kExitInvalid;
}

}  // namespace lockcheck
