#include "harness/trend.h"

#include <algorithm>
#include <boost/math/distributions/hypergeometric.hpp>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "checkers/coverage.h"
#include "core/config.h"
#include "core/json_int.h"
#include "harness/night.h"
#include "report/assets.h"
#include "report/coverage.h"
#include "report/html.h"
#include "report/report.h"
#include "report/results_json.h"

namespace trend_fs = std::filesystem;

namespace lockcheck {

using report::escape;

double fisher_exact_two_sided(size_t found_a, size_t n_a, size_t found_b, size_t n_b) {
  if (n_a == 0 || n_b == 0) return 1.0;
  // Margins fixed: the k = found_a + found_b seeds that found it, of n = n_a + n_b; the found count x of night a
  // is hypergeometric (Boost.Math): a sample of n_a from n with k "found". The p value sums P(x) over every x no
  // more likely than the observed one (a relative tolerance for rounding).
  const unsigned k = static_cast<unsigned>(found_a + found_b), n = static_cast<unsigned>(n_a + n_b);
  const boost::math::hypergeometric_distribution<double> h(k, static_cast<unsigned>(n_a), n);
  const double observed = boost::math::pdf(h, static_cast<unsigned>(found_a));
  const unsigned lo = k > n_b ? k - static_cast<unsigned>(n_b) : 0, hi = std::min(static_cast<unsigned>(n_a), k);
  double p = 0;
  for (unsigned x = lo; x <= hi; ++x) {
    const double px = boost::math::pdf(h, x);
    if (px <= observed * (1 + 1e-7)) p += px;
  }
  return std::min(1.0, p);
}

namespace {

std::optional<double> median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double spread(const std::vector<double>& v) {
  if (v.empty()) return 0;
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return *hi - *lo;
}

std::string num(double v, int decimals) { return report::fixed(v, decimals); }

// A coverage's never-met states ({fault: [states]}), or null when the night or entry did not record coverage.
nlohmann::json never_met_json(const nlohmann::json& coverage) {
  if (!coverage.is_object()) return nullptr;
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [fault, states] : coverage_from_json(coverage).never_met()) out[fault] = states;
  return out;
}

// A coverage's never-met states in words for one night: "client-pause: acquiring, renewing; ...", "none",
// or "not recorded".
std::string never_met_text(const nlohmann::json& coverage) {
  if (!coverage.is_object()) return "not recorded";
  const FaultCoverage c = coverage_from_json(coverage);
  if (c.faults == 0) return "no fault";
  if (c.never_met().empty()) return "lock states not recorded";
  const std::string words = report::never_met_words(coverage);
  return words.empty() ? "none" : words;
}

std::string p_text(double p) {
  std::ostringstream o;
  o << std::setprecision(2) << p;
  return o.str();
}

std::string rate_text(size_t k, size_t n) { return std::to_string(k) + "/" + std::to_string(n); }

// Why a folder cannot be a night: a ConfigError naming it.
[[noreturn]] void not_a_night(const std::string& dir, const std::string& why) {
  throw ConfigError(dir + ": not a judged test-all folder (" + why + ")");
}

// Short JSON text of a setting for "changed config" (long values cut).
std::string short_value(const nlohmann::json& v) {
  if (v.is_null()) return "(none)";
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

// Rank of a change kind for "worst first".
int rank(const std::string& kind) {
  static const char* order[] = {
      "expectation newly unmet", "weaker", "changed config", "slower", "gone", "new", "stronger",
      "expectation newly met",   "faster"};
  for (int i = 0; i < 9; ++i) {
    if (kind == order[i]) return i;
  }
  return 9;
}

int entry_rank(const EntryTrend& e) {
  int r = 10;
  for (const auto& c : e.changes) r = std::min(r, rank(c.kind));
  return r;
}

// slower / faster needs this many first-anomaly times on each side: two samples of one normal distribution trip
// the rule (medians further apart than the larger range) 22% of the time with 2 times a side, 6% with 3, 1.3%
// with 4, 0.06% with 6 (10^5 simulated pairs each).
constexpr size_t kMinTimes = 4;

// The found-rate and time changes of tonight against one side (the previous night, or the earlier nights
// pooled).
void compare(const NightEntry& now, size_t k, size_t n, const std::vector<double>& times, const std::string& against,
             double alpha, std::vector<TrendChange>& out) {
  if (n > 0 && now.n > 0) {
    const double p = fisher_exact_two_sided(now.found, now.n, k, n);
    const double rate_now = static_cast<double>(now.found) / now.n, rate_then = static_cast<double>(k) / n;
    if (p < alpha && rate_now != rate_then) {
      TrendChange c;
      c.kind = rate_now < rate_then ? "weaker" : "stronger";
      c.against = against;
      c.p = p;
      c.detail = "found " + rate_text(now.found, now.n) + " tonight, " + rate_text(k, n) + " " +
                 (against == "previous night" ? "the previous night" : "the earlier nights") +
                 " (Fisher exact p = " + p_text(p) + ")";
      out.push_back(c);
    }
  }
  if (now.first_anomaly_s.size() >= kMinTimes && times.size() >= kMinTimes) {
    const double m_now = *median(now.first_anomaly_s), m_then = *median(times);
    const double s = std::max(spread(now.first_anomaly_s), spread(times));
    if (std::abs(m_now - m_then) > s) {
      TrendChange c;
      c.kind = m_now > m_then ? "slower" : "faster";
      c.against = against;
      c.detail = "median first anomaly " + num(m_now, 1) + " s tonight, " + num(m_then, 1) + " s " +
                 (against == "previous night" ? "the previous night" : "the earlier nights") + " (spread " + num(s, 1) +
                 " s)";
      out.push_back(c);
    }
  }
}

}  // namespace

bool EntryTrend::worse() const {
  return std::any_of(changes.begin(), changes.end(), [](const TrendChange& c) { return c.worse(); });
}

bool Trend::worse() const {
  return std::any_of(entries.begin(), entries.end(), [](const EntryTrend& e) { return e.worse(); });
}

Night read_night(const std::string& dir) {
  std::error_code ec;
  if (!trend_fs::is_directory(dir, ec)) throw ConfigError(dir + ": not a folder");
  const std::string path = dir + "/summary.json";
  if (!trend_fs::exists(path, ec)) {
    not_a_night(dir, trend_fs::exists(dir + "/shard.json", ec)
                         ? "no summary.json: written by test-all before trends existed; `lockcheck merge " + dir +
                               "` judges it again into a new folder"
                         : "no summary.json");
  }
  nlohmann::json j;
  try {
    j = read_json_file(path);
  } catch (const ConfigError& e) {
    not_a_night(dir, std::string("summary.json unreadable: ") + e.what());
  }
  return night_from_json(j, dir);
}

namespace {
// A count in summary.json: a non-negative integer (nlohmann's get<size_t> of a float such as 3.9e19 is undefined
// behaviour, found by fuzzing the trend reader).
size_t count_field(const nlohmann::json& e, const char* name) {
  const nlohmann::json& v = e.at(name);
  const std::optional<size_t> n = json_integer<size_t>(v);
  if (!n) {
    throw std::runtime_error(std::string("\"") + name + "\" must be a non-negative integer, not " +
                             v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return *n;
}
}  // namespace

Night night_from_json(const nlohmann::json& j, const std::string& dir) {
  if (!j.is_object()) not_a_night(dir, "summary.json is not an object");
  if (j.contains("shard") && !j.contains("entries")) {
    not_a_night(dir,
                "it is shard " + j.value("shard", "?") + " of a sharded run: give the folder `lockcheck merge` wrote");
  }
  Night night;
  night.dir = dir;
  night.label = trend_fs::path(dir).lexically_normal().filename().string();
  if (night.label == "." || night.label.empty())
    night.label = trend_fs::absolute(dir).lexically_normal().filename().string();
  try {
    night.matrix = j.at("matrix").get<std::string>();
    night.started_at = j.at("started_at").get<std::string>();
    night.duration_s = j.value("duration_s", 0.0);
    if (j.contains("versions") && j["versions"].is_object()) night.versions = j["versions"];
    if (j.contains("coverage") && j["coverage"].is_object()) night.coverage = j["coverage"];
    const auto& entries = j.at("entries");
    if (!entries.is_array()) throw std::runtime_error("\"entries\" is not an array");
    std::set<std::string> names;
    for (const auto& e : entries) {
      NightEntry ne;
      ne.name = e.at("name").get<std::string>();
      ne.settings = e.value("settings", nlohmann::json::object());
      ne.n = count_field(e, "n");
      ne.found = count_field(e, "found");
      ne.met = e.at("met").get<bool>();
      ne.error = e.value("error", false);
      ne.first_anomaly_s = e.value("first_anomaly_s", std::vector<double>{});
      if (auto c = e.find("coverage"); c != e.end() && c->is_object()) ne.coverage = *c;
      if (ne.found > ne.n)
        throw std::runtime_error("entry '" + ne.name + "': found " + std::to_string(ne.found) + " of " +
                                 std::to_string(ne.n) + " seeds");
      if (!names.insert(ne.name).second) throw std::runtime_error("entry '" + ne.name + "' given twice");
      night.entries.push_back(std::move(ne));
    }
  } catch (const std::exception& e) {
    not_a_night(dir, std::string("summary.json: ") + e.what());
  }
  if (!parse_iso_utc(night.started_at))
    not_a_night(dir, "summary.json: started_at '" + night.started_at + "' is not UTC ISO 8601");
  return night;
}

std::unique_ptr<Trend> compute_trend(std::vector<Night> nights, double alpha) {
  if (nights.empty()) throw ConfigError("trend: give at least one test-all folder");
  if (!(alpha > 0 && alpha < 1)) throw ConfigError("--alpha: must be between 0 and 1 (exclusive)");
  for (const auto& n : nights) {
    if (!parse_iso_utc(n.started_at))
      throw ConfigError(n.dir + ": started_at '" + n.started_at + "' is not UTC ISO 8601 (2026-12-06T03:00:00Z)");
  }
  // One night given twice: the same folder, or the same matrix started at the same second.
  for (size_t a = 0; a < nights.size(); ++a) {
    for (size_t b = a + 1; b < nights.size(); ++b) {
      std::error_code ec;
      const bool same_dir = trend_fs::exists(nights[a].dir, ec) && trend_fs::exists(nights[b].dir, ec) &&
                            trend_fs::equivalent(nights[a].dir, nights[b].dir, ec);
      if (same_dir || (nights[a].matrix == nights[b].matrix && nights[a].started_at == nights[b].started_at)) {
        throw ConfigError("trend: one night given twice: " + nights[a].dir + " and " + nights[b].dir +
                          (same_dir ? " are the same folder"
                                    : " are matrix " + nights[a].matrix + " started at " + nights[a].started_at));
      }
    }
  }
  std::stable_sort(nights.begin(), nights.end(), [](const Night& a, const Night& b) {
    return *parse_iso_utc(a.started_at) < *parse_iso_utc(b.started_at);
  });
  auto t = std::make_unique<Trend>();
  t->nights = std::move(nights);
  t->alpha = alpha;
  const size_t last = t->nights.size() - 1;
  const Night& tonight = t->nights[last];
  const Night* previous = last > 0 ? &t->nights[last - 1] : nullptr;

  // Entries: tonight's in order, then those of earlier nights (latest first) that tonight lacks.
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (size_t i = t->nights.size(); i-- > 0;) {
    for (const auto& e : t->nights[i].entries) {
      if (seen.insert(e.name).second) names.push_back(e.name);
    }
  }
  auto find = [](const Night& n, const std::string& name) -> const NightEntry* {
    for (const auto& e : n.entries) {
      if (e.name == name) return &e;
    }
    return nullptr;
  };
  // Versions that changed from the previous night to tonight.
  if (previous) {
    std::set<std::string> keys;
    for (const auto& [k, v] : previous->versions.items()) keys.insert(k);
    for (const auto& [k, v] : tonight.versions.items()) keys.insert(k);
    for (const auto& k : keys) {
      const std::string a = short_value(previous->versions.value(k, nlohmann::json())),
                        b = short_value(tonight.versions.value(k, nlohmann::json()));
      if (a != b) t->version_changes.push_back(k + " " + a + " -> " + b);
    }
  }
  for (const auto& name : names) {
    EntryTrend et;
    et.name = name;
    for (const auto& n : t->nights) et.nights.push_back(find(n, name));
    const NightEntry* now = et.nights[last];
    const NightEntry* prev = previous ? et.nights[last - 1] : nullptr;
    if (previous && now && !prev)
      et.changes.push_back({"new", "previous night", std::nullopt, "not in the previous night"});
    if (previous && !now && prev)
      et.changes.push_back({"gone", "previous night", std::nullopt, "not in tonight's matrix"});
    if (now && prev) {
      if (prev->met && !now->met)
        et.changes.push_back({"expectation newly unmet", "previous night", std::nullopt,
                              "met the previous night (found " + rate_text(prev->found, prev->n) + "), not tonight (" +
                                  rate_text(now->found, now->n) + (now->error ? ", a run failed" : "") + ")"});
      if (!prev->met && now->met)
        et.changes.push_back({"expectation newly met", "previous night", std::nullopt,
                              "unmet the previous night (found " + rate_text(prev->found, prev->n) +
                                  "), met tonight (" + rate_text(now->found, now->n) + ")"});
      if (prev->settings != now->settings) {
        std::string fields;
        std::set<std::string> keys;
        for (const auto& [k, v] : prev->settings.items()) keys.insert(k);
        for (const auto& [k, v] : now->settings.items()) keys.insert(k);
        for (const auto& k : keys) {
          const nlohmann::json a = prev->settings.value(k, nlohmann::json()),
                               b = now->settings.value(k, nlohmann::json());
          if (a != b) fields += (fields.empty() ? "" : "; ") + k + " " + short_value(a) + " -> " + short_value(b);
        }
        et.changes.push_back({"changed config", "previous night", std::nullopt, fields});
      }
      compare(*now, prev->found, prev->n, prev->first_anomaly_s, "previous night", alpha, et.changes);
    }
    if (now && last >= 2) {  // pooled: only when it is more than the previous night alone
      size_t k = 0, n = 0, nights_with = 0;
      std::vector<double> times;
      for (size_t i = 0; i < last; ++i) {
        if (const NightEntry* e = et.nights[i]) {
          k += e->found;
          n += e->n;
          ++nights_with;
          times.insert(times.end(), e->first_anomaly_s.begin(), e->first_anomaly_s.end());
        }
      }
      if (nights_with >= 2) compare(*now, k, n, times, "earlier nights", alpha, et.changes);
    }
    t->entries.push_back(std::move(et));
  }
  return t;
}

nlohmann::json trend_json(const Trend& t) {
  nlohmann::json j;
  j["alpha"] = t.alpha;
  j["order"] = "by each night's started_at (summary.json), oldest first; the last is tonight";
  j["rules"] = {
      {"weaker_stronger", "two-sided Fisher exact test on found / not found, p < alpha"},
      {"slower_faster",
       "the median time to the first anomaly moved by more than the larger of the two sides' ranges (max - min of "
       "the seeds' times), each side with at least 4 times"},
      {"earlier_nights",
       "every night before tonight with the entry, seeds added up; compared only when there are "
       "at least 2 such nights"},
      {"worse", "expectation newly unmet, or weaker against either side: exit status 1"}};
  j["nights"] = nlohmann::json::array();
  for (const auto& n : t.nights) {
    j["nights"].push_back({{"dir", n.dir},
                           {"label", n.label},
                           {"matrix", n.matrix},
                           {"started_at", n.started_at},
                           {"duration_s", n.duration_s},
                           {"versions", n.versions},
                           {"coverage", n.coverage},
                           {"never_met", never_met_json(n.coverage)}});
  }
  j["version_changes"] = t.version_changes;
  j["worse"] = t.worse();
  j["entries"] = nlohmann::json::array();
  for (const auto& e : t.entries) {
    nlohmann::json je{{"name", e.name}, {"worse", e.worse()}};
    je["nights"] = nlohmann::json::array();
    for (const NightEntry* ne : e.nights) {
      if (!ne) {
        je["nights"].push_back(nullptr);
        continue;
      }
      nlohmann::json cell{{"found", ne->found}, {"n", ne->n}, {"met", ne->met}, {"error", ne->error}};
      if (auto m = median(ne->first_anomaly_s)) cell["median_first_anomaly_s"] = *m;
      if (!ne->coverage.is_null()) cell["never_met"] = never_met_json(ne->coverage);
      je["nights"].push_back(cell);
    }
    je["changes"] = nlohmann::json::array();
    for (const auto& c : e.changes) {
      nlohmann::json jc{{"kind", c.kind}, {"against", c.against}, {"detail", c.detail}};
      if (c.p) jc["p"] = *c.p;
      je["changes"].push_back(jc);
    }
    j["entries"].push_back(je);
  }
  return j;
}

namespace {

// The entries that changed, worst first (stable: tonight's order within a rank).
std::vector<const EntryTrend*> changed_worst_first(const Trend& t) {
  std::vector<const EntryTrend*> out;
  for (const auto& e : t.entries) {
    if (!e.changes.empty()) out.push_back(&e);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const EntryTrend* a, const EntryTrend* b) { return entry_rank(*a) < entry_rank(*b); });
  return out;
}

// The changes table: entry, change, against, detail; the version changes beside every entry that moved.
std::string changes_table(const Trend& t) {
  const auto changed = changed_worst_first(t);
  std::ostringstream s;
  if (changed.empty()) {
    s << "<p id=\"no-changes\">Nothing changed beyond noise: no entry new, gone, newly met or unmet, weaker or "
         "stronger (Fisher exact p &lt; "
      << escape(p_text(t.alpha)) << "), slower or faster, or configured differently.</p>\n";
    return s.str();
  }
  std::string versions;
  for (const auto& v : t.version_changes) versions += (versions.empty() ? "" : "<br>") + escape(v);
  s << "<table class=\"changes\" id=\"changes\"><tr><th>entry</th><th>change</th><th>against</th><th>what</th>"
       "<th>versions changed</th></tr>\n";
  for (const EntryTrend* e : changed) {
    bool first = true;
    for (const auto& c : e->changes) {
      s << "<tr class=\"" << (c.worse() ? "worse" : "change") << "\" data-entry=\"" << escape(e->name)
        << "\" data-kind=\"" << escape(c.kind) << "\"><td>" << (first ? escape(e->name) : "") << "</td><td><b>"
        << escape(c.kind) << "</b></td><td>" << escape(c.against) << "</td><td>" << escape(c.detail) << "</td><td>"
        << (first && c.kind != "gone" ? (versions.empty() ? std::string("none") : versions) : "") << "</td></tr>\n";
      first = false;
    }
  }
  s << "</table>\n";
  return s.str();
}

// Background of a grid cell: the found rate from pale grey (0) to deep blue (1).
std::string cell_colour(double rate) {
  const int r = static_cast<int>(std::lround(238 + (40 - 238) * rate)),
            g = static_cast<int>(std::lround(240 + (86 - 240) * rate)),
            b = static_cast<int>(std::lround(244 + (200 - 244) * rate));
  std::ostringstream o;
  o << "rgb(" << r << "," << g << "," << b << ")";
  return o.str();
}

std::string night_heading(const Night& n) {
  // "12-06 03:00" from "2026-12-06T03:00:00Z"
  const std::string& s = n.started_at;
  return s.size() >= 16 ? s.substr(5, 5) + " " + s.substr(11, 5) : s;
}

}  // namespace

std::string trend_html(const Trend& t) {
  std::ostringstream s;
  const Night& tonight = t.nights.back();
  s << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>lockcheck trend: "
    << escape(tonight.matrix) << "</title><style>" << report::kPageCss << "</style></head><body>\n<main>\n";
  s << "<section><h1>lockcheck trend</h1><h2>" << escape(tonight.matrix) << ": " << t.nights.size()
    << (t.nights.size() == 1 ? " night" : " nights") << ", tonight " << escape(tonight.started_at)
    << " — <span class=\"" << (t.worse() ? "missed\">something got worse" : "met\">nothing got worse")
    << "</span></h2>\n";
  s << "<p class=\"meta\">Nights ordered by their own start time. Tonight is compared with the previous night and "
       "with the earlier nights pooled. weaker / stronger: two-sided Fisher exact test on found / not found, p &lt; "
    << escape(p_text(t.alpha))
    << "; slower / faster: the median time to the first anomaly moved by more than the larger of the two sides' "
       "ranges.</p>\n";
  s << changes_table(t) << "</section>\n";
  // An entry x night table's opening: its heading row, one column per night.
  const auto grid_head = [&](const char* title, const char* id) {
    s << "<section><h2>" << title << "</h2>\n<div class=\"grid-wrap\"><table class=\"grid\" id=\"" << id
      << "\"><tr><th>entry</th>";
    for (const auto& n : t.nights) {
      s << "<th class=\"night\" title=\"" << escape(n.label + " (" + n.started_at + ")") << "\">"
        << escape(night_heading(n)) << "</th>";
    }
    s << "</tr>\n";
  };
  // The grid: entry x night, each cell coloured by its found rate.
  grid_head("Found rate per night", "grid");
  for (const auto& e : t.entries) {
    s << "<tr data-entry=\"" << escape(e.name) << "\"><th class=\"entry\">" << escape(e.name) << "</th>";
    for (size_t i = 0; i < e.nights.size(); ++i) {
      const NightEntry* c = e.nights[i];
      if (!c) {
        s << "<td class=\"cell absent\">&nbsp;</td>";
        continue;
      }
      const double rate = c->n ? static_cast<double>(c->found) / c->n : 0;
      std::string tip = t.nights[i].started_at + ": found " + rate_text(c->found, c->n) +
                        (c->met ? ", expectation met" : ", expectation unmet") + (c->error ? ", a run failed" : "");
      if (auto m = median(c->first_anomaly_s)) tip += ", median first anomaly " + num(*m, 1) + " s";
      s << "<td class=\"cell" << (c->met ? "" : " unmet") << (rate > 0.55 ? " dark" : "")
        << "\" style=\"background:" << cell_colour(rate) << "\" title=\"" << escape(tip) << "\" data-found=\""
        << c->found << "\" data-n=\"" << c->n << "\">" << c->found << "</td>";
    }
    s << "</tr>\n";
  }
  s << "</table></div>\n<p class=\"note\">A cell: how many seeds found an anomaly (of how many: hover), darker the "
       "larger the share; a red frame: the expectation was not met that night; empty: the entry was not in that "
       "night's matrix.</p></section>\n";
  // The median time to the first anomaly: entry x night, the number itself in each cell.
  grid_head("Median time to the first anomaly per night", "medians");
  for (const auto& e : t.entries) {
    s << "<tr data-entry=\"" << escape(e.name) << "\"><th class=\"entry\">" << escape(e.name) << "</th>";
    for (const NightEntry* c : e.nights) {
      const auto m = c ? median(c->first_anomaly_s) : std::nullopt;
      s << "<td class=\"median\"" << (m ? " data-median-s=\"" + num(*m, 3) + "\"" : std::string()) << ">"
        << (m ? num(*m, 1) + " s" : std::string(c ? report::kDash : "&nbsp;")) << "</td>";
    }
    s << "</tr>\n";
  }
  s << "</table></div>\n<p class=\"note\">A cell: the median, over the seeds that found an anomaly that night, of "
       "the time from the run's start to its first anomaly; &mdash;: no seed found one.</p></section>\n";
  // Which lock states the faults never met, over the whole matrix, per night.
  s << "<section><h2>Lock states the faults never met</h2>\n<table class=\"nights\" id=\"never-met\"><tr>"
       "<th>night</th><th>faults</th><th>never met (over the matrix)</th></tr>\n";
  for (size_t i = t.nights.size(); i-- > 0;) {
    const auto& n = t.nights[i];
    const int64_t faults = n.coverage.is_object() ? coverage_from_json(n.coverage).faults : 0;
    s << "<tr><td class=\"mono\">" << escape(n.label) << "</td><td>"
      << (n.coverage.is_object() ? std::to_string(faults) : std::string(report::kDash)) << "</td><td>"
      << escape(never_met_text(n.coverage)) << "</td></tr>\n";
  }
  s << "</table></section>\n";
  // The nights and what they ran with.
  s << "<section><h2>Nights</h2>\n<table class=\"nights\"><tr><th>night</th><th>started</th><th>took</th>"
       "<th>versions</th></tr>\n";
  for (size_t i = t.nights.size(); i-- > 0;) {
    const auto& n = t.nights[i];
    std::string versions;
    for (const auto& [k, v] : n.versions.items())
      versions += (versions.empty() ? "" : "<br>") + escape(k + " " + short_value(v));
    s << "<tr><td class=\"mono\">" << escape(n.label) << "</td><td>" << escape(n.started_at) << "</td><td>"
      << num(n.duration_s, 0) << " s</td><td>" << versions << "</td></tr>\n";
  }
  s << "</table></section>\n</main></body></html>\n";
  return s.str();
}

std::string trend_summary_section(const Trend& t, const std::string& trend_href) {
  if (t.nights.size() < 2) {
    return "<section id=\"since\"><h2>Since the last nights</h2>\n<p class=\"meta\">No earlier night of this matrix "
           "in the history: tonight is the first of the <a href=\"" +
           escape(trend_href) + "\">trend</a>.</p></section>\n";
  }
  std::ostringstream s;
  s << "<section id=\"since\"><h2>Since the last nights — <span class=\""
    << (t.worse() ? "missed\">something got worse" : "met\">nothing got worse") << "</span></h2>\n<p class=\"meta\">"
    << t.nights.size() - 1 << " earlier " << (t.nights.size() == 2 ? "night" : "nights") << " (since "
    << escape(t.nights.front().started_at) << "); the grid of every entry and night: <a href=\"" << escape(trend_href)
    << "\">trend</a>.</p>\n"
    << changes_table(t) << "</section>\n";
  return s.str();
}

void print_trend(const Trend& t, std::ostream& out) {
  const auto changed = changed_worst_first(t);
  if (changed.empty()) out << "  nothing changed beyond noise\n";
  for (const EntryTrend* e : changed) {
    for (const auto& c : e->changes) {
      out << (c.worse() ? "  WORSE   " : "  change  ") << std::left << std::setw(28) << e->name << " " << c.kind
          << " (against the " << c.against << "): " << c.detail << "\n";
    }
  }
  for (const auto& v : t.version_changes) out << "  version " << v << "\n";
}

void print_trend_nights(const Trend& t, std::ostream& out) {
  out << "median time to the first anomaly per night, oldest first (s; -: none found):\n";
  size_t width = 28;
  for (const auto& e : t.entries) width = std::max(width, e.name.size());
  for (const auto& e : t.entries) {
    out << "  " << std::left << std::setw(static_cast<int>(width)) << e.name;
    for (const NightEntry* c : e.nights) {
      const auto m = c ? median(c->first_anomaly_s) : std::nullopt;
      out << " " << std::right << std::setw(6) << (m ? num(*m, 1) : c ? "-" : "absent");
    }
    out << "\n";
  }
  out << "lock states never met over the matrix, per night:\n";
  for (const auto& n : t.nights) out << "  " << n.label << ": " << never_met_text(n.coverage) << "\n";
}

std::vector<Night> read_history_nights(const std::string& history, const std::string& matrix, size_t keep) {
  std::error_code ec;
  if (!trend_fs::is_directory(history, ec)) throw ConfigError("--history: " + history + " is not a folder");
  std::vector<std::string> dirs;
  for (trend_fs::directory_iterator it(history, ec), end; !ec && it != end; it.increment(ec)) {
    if (trend_fs::is_directory(it->path(), ec) && !trend_fs::is_symlink(it->path(), ec))
      dirs.push_back(it->path().string());
  }
  if (ec) throw ConfigError("--history: cannot list " + history + " (" + ec.message() + ")");
  std::sort(dirs.begin(), dirs.end());
  std::vector<Night> nights;
  for (const auto& d : dirs) {
    if (!trend_fs::exists(d + "/summary.json", ec)) continue;  // a run folder, a trend folder, an older test-all folder
    nlohmann::json head;
    try {
      head = read_json_file(d + "/summary.json");
    } catch (const ConfigError& e) {
      throw ConfigError(std::string("--history: ") + e.what());
    }
    if (!head.is_object() || !head.contains("entries")) continue;  // a shard: its merge folder is the night
    if (!matrix.empty() && head.value("matrix", "") != matrix) continue;
    try {
      nights.push_back(read_night(d));
    } catch (const ConfigError& e) {
      throw ConfigError(std::string("--history: ") + e.what());
    }
  }
  std::stable_sort(nights.begin(), nights.end(), [](const Night& a, const Night& b) {
    return *parse_iso_utc(a.started_at) < *parse_iso_utc(b.started_at);
  });
  if (nights.size() > keep) nights.erase(nights.begin(), nights.end() - static_cast<std::ptrdiff_t>(keep));
  return nights;
}

int trend_command(const TrendOptions& o, std::ostream& out) {
  if (o.dirs.empty()) throw ConfigError("trend: give the test-all folders of the nights (DIR...)");
  std::vector<Night> nights;
  for (const auto& d : o.dirs) nights.push_back(read_night(d));
  auto t = compute_trend(std::move(nights), o.alpha);
  // Everything is rendered before the first byte is written: bad input leaves nothing behind.
  const std::string json = trend_json(*t).dump(2) + "\n", html = trend_html(*t);
  std::string dir = o.out_dir;
  if (dir.empty()) {
    std::time_t now = std::time(nullptr);  // names the folder only
    std::string stamp = iso_utc(now);
    stamp.erase(std::remove(stamp.begin(), stamp.end(), '-'), stamp.end());
    stamp.erase(std::remove(stamp.begin(), stamp.end(), ':'), stamp.end());
    dir = o.results_dir + "/trend-" + t->nights.back().matrix + "-" + stamp;
  }
  if (o.dry_run) {
    out << "trend --dry-run: nothing written\n"
        << "nights: " << t->nights.size() << " of " << t->nights.back().matrix << " (oldest "
        << t->nights.front().started_at << ", tonight " << t->nights.back().started_at << "), alpha " << o.alpha
        << "\nwould write: " << dir << "/trend.json, trend.html\n";
    return 0;
  }
  std::error_code ec;
  trend_fs::create_directories(dir, ec);
  if (ec) {
    throw ConfigError(std::string(o.out_dir.empty() ? "--results" : "--out") + ": cannot create " + dir + " (" +
                      ec.message() + ")");
  }
  report::write_atomically(dir + "/trend.json", json);
  report::write_atomically(dir + "/trend.html", html);
  if (o.out_dir.empty()) {  // in the results folder: listed in its index.html
    try {
      write_index(o.results_dir);
    } catch (const std::exception& e) {
      out << "trend: could not rewrite " << o.results_dir << "/index.html: " << e.what() << "\n";
    }
  }
  out << "trend: " << t->nights.size() << " nights of " << t->nights.back().matrix << " (oldest "
      << t->nights.front().started_at << ", tonight " << t->nights.back().started_at << ")\n";
  print_trend(*t, out);
  print_trend_nights(*t, out);
  out << (t->worse() ? "something got worse" : "nothing got worse") << "\ntrend: " << dir << "/trend.html\n";
  return t->worse() ? 1 : 0;
}

}  // namespace lockcheck
