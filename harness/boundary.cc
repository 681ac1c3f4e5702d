#include "harness/boundary.h"

#include <signal.h>

#include <algorithm>
#include <boost/algorithm/string/join.hpp>
#include <boost/filesystem.hpp>
#include <cmath>
#include <ctime>
#include <iomanip>
#include <map>
#include <sstream>

#include "core/exit_codes.h"
#include "core/run_files.h"
#include "harness/child_runs.h"
#include "harness/flags.h"
#include "harness/plan.h"
#include "report/html.h"
#include "report/svg_common.h"
#include "sys/signals.h"

namespace fs = boost::filesystem;

namespace lockcheck {

const char* to_string(ProbeClass c) {
  switch (c) {
    case ProbeClass::kSafe: return "safe";
    case ProbeClass::kUnsafe: return "unsafe";
    case ProbeClass::kMixed: return "mixed";
    case ProbeClass::kUndecided: return "undecided";
  }
  return "undecided";
}

namespace {

std::optional<double> median_of(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// "12", "0.05", "1e+06": the shortest text that reads back as v (for lock options and names).
std::string number_text(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  std::ostringstream o;
  o << std::setprecision(10) << v;
  return o.str();
}

}  // namespace

nlohmann::json to_json(const ProbeRecord& p) {
  nlohmann::json j = {{"index", p.index},   {"value", p.value},  {"tries", p.tries},
                      {"invalid", p.invalid}, {"failed", p.failed}, {"class", to_string(p.cls)},
                      {"first_anomaly_s", p.first_anomaly_s}};
  const auto m = median_of(p.first_anomaly_s);
  j["median_first_anomaly_s"] = m ? nlohmann::json(*m) : nlohmann::json();
  if (!p.note.empty()) j["note"] = p.note;
  return j;
}

nlohmann::json to_json(const BoundaryResult& r) {
  nlohmann::json probes = nlohmann::json::array();
  for (const auto& p : r.probes) probes.push_back(to_json(p));
  return {{"probes", probes},
          {"unsafe_above", r.unsafe_above},
          {"last_safe", r.last_safe ? nlohmann::json(*r.last_safe) : nlohmann::json()},
          {"first_unsafe", r.first_unsafe ? nlohmann::json(*r.first_unsafe) : nlohmann::json()},
          {"resolved", r.resolved},
          {"budget_exhausted", r.budget_exhausted},
          {"interrupted", r.interrupted},
          {"runs_failing", r.runs_failing},
          {"elapsed_s", r.elapsed_s},
          {"stopped", r.stopped},
          {"notes", r.notes}};
}

double set_run_param(RunConfig& c, const std::string& param, double value) {
  if (!std::isfinite(value)) throw ConfigError("--param " + param + ": the value must be a finite number");
  const std::string lock_opt = "lock-opt:";
  if (param.rfind(lock_opt, 0) == 0) {
    const std::string key = param.substr(lock_opt.size());
    if (key.empty() || key.find('=') != std::string::npos) {
      throw ConfigError("--param: '" + param + "' must name one lock option, as lock-opt:KEY");
    }
    find_config_field("lock_opts")->parse_flag(c, key + "=" + number_text(value), "--lock-opt");
    return value;
  }
  const ConfigField* f = find_run_setting(param);  // a config key, a flag, or a flag's earlier spelling
  if (!f) throw ConfigError("--param: '" + param + "' is not a run setting (a config key or flag, or lock-opt:KEY)");
  const bool integer = f->kind == ConfigField::Kind::kInt || f->kind == ConfigField::Kind::kUint;
  if (!integer && f->kind != ConfigField::Kind::kDouble) {
    throw ConfigError("--param: '" + param + "' is not a numeric setting");
  }
  const double set = integer ? std::round(value) : value;
  f->parse_flag(c, number_text(set), std::string("--") + f->flag);
  if (f->check) f->check(c);
  return set;
}

namespace {

class Search {
 public:
  Search(const RunConfig& base, const BoundaryOptions& o, ReproRunner& runner, std::ostream& log)
      : base_(base), o_(o), r_(o.effective_unsafe_at()), runner_(runner), log_(log), t0_(runner.now_s()) {}

  bool stopped() const { return res_.budget_exhausted || res_.interrupted || res_.runs_failing; }

  // Runs one probe at value v (unless that value was probed already); returns its record.
  const ProbeRecord& probe(double v) {
    ReproCase c{"", base_, {}};
    const double set = set_run_param(c.config, o_.param, v);
    for (const auto& p : res_.probes) {
      if (p.value == set) return p;
    }
    c.change = o_.param + " = " + number_text(set);
    ProbeRecord p;
    p.index = res_.probes.size();
    p.value = set;
    const TryTally t = run_tries(
        runner_, c, p.index, o_.seeds, startup_s_,
        [&](const TryTally& so_far) -> std::string {
          if (runner_.now_s() - t0_ + c.config.time_limit_s + startup_s_ <= o_.budget_min * 60.0) return "";
          res_.budget_exhausted = true;
          return "budget ran out after " + std::to_string(so_far.tries) + " runs";
        },
        [&](const TryTally& so_far) -> std::string {
          if (so_far.hits >= r_) return "unsafe already certain";                                    // R reached
          if (so_far.hits > 0 && so_far.hits + (o_.seeds - so_far.tries) < r_) return "mixed already certain";
          return "";
        });
    p.tries = t.tries;
    p.invalid = t.hits;
    p.failed = t.failed;
    p.first_anomaly_s = t.first_anomaly_s;
    p.note = t.note;
    res_.interrupted = res_.interrupted || t.interrupted;
    res_.runs_failing = res_.runs_failing || t.runs_failing;
    if (p.tries == o_.seeds && p.invalid == 0) {
      p.cls = ProbeClass::kSafe;
    } else if (p.invalid >= r_) {
      p.cls = ProbeClass::kUnsafe;
    } else if (p.invalid > 0 && p.invalid + (o_.seeds - p.tries) < r_) {
      p.cls = ProbeClass::kMixed;
    }
    if (p.cls != ProbeClass::kUndecided && p.tries < o_.seeds && p.note.find("certain") != std::string::npos) {
      p.note = "stopped after " + std::to_string(p.tries) + " runs: " + p.note;
    }
    log_ << "  [" << p.index << "] " << std::left << std::setw(32) << c.change << " invalid " << p.invalid << " of "
         << p.tries << "  " << to_string(p.cls) << (p.note.empty() ? "" : "  (" + p.note + ")") << "\n"
         << std::flush;
    res_.probes.push_back(p);
    return res_.probes.back();
  }

  BoundaryResult run() {
    probe(o_.from);
    if (!stopped()) probe(o_.to);
    if (stopped()) return finish(false);
    const ProbeClass at_from = res_.probes[0].cls;
    res_.unsafe_above = !(at_from == ProbeClass::kUnsafe && res_.probes[1].cls != ProbeClass::kUnsafe);
    if (o_.from > o_.to) res_.unsafe_above = !res_.unsafe_above;  // probes[0] is the larger value then
    const double resolution = effective_resolution();
    // Edges whose bracket cannot be split any more (integer rounding): no more probes there.
    bool safe_done = false, unsafe_done = false;
    for (int step = 0; step < 64 && !stopped(); ++step) {
      const Edges e = edges();
      std::optional<std::pair<double, double>> bracket;
      bool* done = nullptr;
      if (!safe_done && e.safe && e.past_safe && std::fabs(*e.past_safe - *e.safe) > resolution) {
        bracket = std::make_pair(*e.safe, *e.past_safe);
        done = &safe_done;
      } else if (!unsafe_done && e.unsafe && e.before_unsafe && std::fabs(*e.unsafe - *e.before_unsafe) > resolution) {
        bracket = std::make_pair(*e.before_unsafe, *e.unsafe);
        done = &unsafe_done;
      }
      if (!bracket) break;
      const double mid = midpoint(bracket->first, bracket->second);
      const size_t before = res_.probes.size();
      const ProbeRecord& p = probe(mid);
      if (res_.probes.size() == before || p.value == bracket->first || p.value == bracket->second) *done = true;
    }
    return finish(true);
  }

 private:
  // In "key" order the unsafe end is the larger key.
  double key(double v) const { return res_.unsafe_above ? v : -v; }

  struct Edges {
    std::optional<double> safe, past_safe;        // the safe value nearest the flip, the next probe past it
    std::optional<double> unsafe, before_unsafe;  // the unsafe value nearest the flip, the probe before it
  };
  Edges edges() const {
    std::vector<const ProbeRecord*> v;
    for (const auto& p : res_.probes) {
      if (p.cls != ProbeClass::kUndecided) v.push_back(&p);
    }
    std::sort(v.begin(), v.end(), [&](const ProbeRecord* a, const ProbeRecord* b) { return key(a->value) < key(b->value); });
    Edges e;
    // first unsafe in key order
    size_t u = v.size();
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i]->cls == ProbeClass::kUnsafe) {
        u = i;
        break;
      }
    }
    // last safe before it
    size_t s = v.size();
    for (size_t i = 0; i < u; ++i) {
      if (v[i]->cls == ProbeClass::kSafe) s = i;
    }
    if (s < v.size()) {
      e.safe = v[s]->value;
      if (s + 1 < v.size()) e.past_safe = v[s + 1]->value;
    }
    if (u < v.size()) {
      e.unsafe = v[u]->value;
      if (u > 0) e.before_unsafe = v[u - 1]->value;
    }
    return e;
  }

  double midpoint(double a, double b) const {
    if (o_.log_scale && a > 0 && b > 0) return std::sqrt(a * b);
    return (a + b) / 2;
  }

  double effective_resolution() const {
    double r = o_.resolution > 0 ? o_.resolution : std::fabs(o_.to - o_.from) / 32;
    ReproCase probe_case{"", base_, {}};
    // an integer field cannot be split below 1
    const double one = set_run_param(probe_case.config, o_.param, 1.4);
    if (one == 1.0) r = std::max(r, 1.0);
    return r;
  }

  BoundaryResult finish(bool searched) {
    const Edges e = edges();
    res_.last_safe = e.safe;
    res_.first_unsafe = e.unsafe;
    // Against monotonicity: a safe probe past the first unsafe one, or an unsafe one before the last safe one.
    for (const auto& p : res_.probes) {
      if (p.cls == ProbeClass::kSafe && e.unsafe && key(p.value) > key(*e.unsafe)) {
        res_.notes.push_back("the probe at " + number_text(p.value) + " was safe past the unsafe " +
                             number_text(*e.unsafe) + ": the verdict is not monotone in " + o_.param +
                             " at these seeds");
      }
    }
    if (searched) {
      if (!e.safe) {
        res_.notes.push_back("no probe was safe (0 of " + std::to_string(o_.seeds) +
                             " invalid): the safe edge lies outside the range");
      }
      if (!e.unsafe) {
        res_.notes.push_back("no probe was unsafe (at least " + std::to_string(r_) + " of " +
                             std::to_string(o_.seeds) + " invalid): the unsafe edge lies outside the range");
      }
    }
    res_.resolved = searched && !stopped();
    res_.stopped = res_.runs_failing       ? "runs failed (harness or cluster errors)"
                   : res_.interrupted      ? "interrupted"
                   : res_.budget_exhausted ? "budget ran out"
                                           : "every edge bracketed to the resolution";
    res_.elapsed_s = runner_.now_s() - t0_;
    return res_;
  }

  const RunConfig& base_;
  const BoundaryOptions& o_;
  const int r_;
  ReproRunner& runner_;
  std::ostream& log_;
  double t0_;
  double startup_s_ = 0;
  BoundaryResult res_;
};

}  // namespace

BoundaryResult boundary_search(const RunConfig& base, const BoundaryOptions& o, ReproRunner& runner,
                               std::ostream& log) {
  return Search(base, o, runner, log).run();
}

namespace {

std::string utc_now(const char* fmt) {
  std::time_t t = std::time(nullptr);  // names the folder and dates the page only
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::ostringstream s;
  s << std::put_time(&tm, fmt);
  return s.str();
}

std::string share_text(const ProbeRecord& p) { return std::to_string(p.invalid) + " of " + std::to_string(p.tries); }

std::string median_text(const ProbeRecord& p) {
  const auto m = median_of(p.first_anomaly_s);
  return m ? report::fixed(*m, 1) + " s" : "-";
}

std::string edge_text(const std::optional<double>& v) { return v ? number_text(*v) : "not found in the range"; }

std::string boundary_markdown(const BoundaryResult& r, const BoundaryOptions& o, const std::string& command) {
  std::ostringstream md;
  md << "# Boundary of " << o.param << "\n\n"
     << "`" << command << "`\n\n"
     << "Each probe ran up to " << o.seeds << " seeds; safe at 0 of " << o.seeds << " invalid, unsafe at "
     << o.effective_unsafe_at() << " of " << o.seeds << " or more. Search: " << r.stopped << ", "
     << report::fixed(r.elapsed_s, 0) << " s.\n\n"
     << "- last safe: **" << edge_text(r.last_safe) << "**\n- first unsafe: **" << edge_text(r.first_unsafe)
     << "**\n";
  for (const auto& n : r.notes) md << "- note: " << n << "\n";
  md << "\n| # | " << o.param << " | invalid | class | median first anomaly | note |\n|---|---|---|---|---|---|\n";
  std::vector<ProbeRecord> sorted = r.probes;
  std::sort(sorted.begin(), sorted.end(), [](const ProbeRecord& a, const ProbeRecord& b) { return a.value < b.value; });
  for (const auto& p : sorted) {
    md << "| " << p.index << " | " << number_text(p.value) << " | " << share_text(p) << " | " << to_string(p.cls)
       << " | " << median_text(p) << " | " << p.note << " |\n";
  }
  return md.str();
}

const char* class_color(ProbeClass c) {
  switch (c) {
    case ProbeClass::kSafe: return "#2e8540";
    case ProbeClass::kUnsafe: return "#c62828";
    case ProbeClass::kMixed: return "#e08a00";
    case ProbeClass::kUndecided: return "#888";
  }
  return "#888";
}

// The invalid share of each probe against the parameter, the edges as dashed lines.
std::string boundary_plot(const BoundaryResult& r, const BoundaryOptions& o) {
  const double w = 720, h = 300, left = 60, right = 20, top = 20, bottom = 50;
  double lo = std::min(o.from, o.to), hi = std::max(o.from, o.to);
  for (const auto& p : r.probes) {
    lo = std::min(lo, p.value);
    hi = std::max(hi, p.value);
  }
  const bool log = o.log_scale && lo > 0;
  auto tx = [&](double v) {
    const double a = log ? std::log(lo) : lo, b = log ? std::log(hi) : hi, x = log ? std::log(v) : v;
    return left + (b > a ? (x - a) / (b - a) : 0.5) * (w - left - right);
  };
  auto ty = [&](double share) { return top + (1 - share) * (h - top - bottom); };
  std::ostringstream s;
  s << "<svg class=\"plot\" viewBox=\"0 0 " << w << " " << h << "\" width=\"" << w << "\" height=\"" << h
    << "\" role=\"img\" aria-label=\"invalid share against " << report::escape(o.param) << "\">\n"
    << "<line x1=\"" << left << "\" y1=\"" << ty(0) << "\" x2=\"" << w - right << "\" y2=\"" << ty(0)
    << "\" stroke=\"#444\"/>\n<line x1=\"" << left << "\" y1=\"" << ty(0) << "\" x2=\"" << left << "\" y2=\"" << ty(1)
    << "\" stroke=\"#444\"/>\n";
  for (double share : {0.0, 0.5, 1.0}) {
    s << "<text x=\"" << left - 6 << "\" y=\"" << ty(share) + 4 << "\" text-anchor=\"end\" font-size=\"11\">"
      << static_cast<int>(share * 100) << "%</text>\n";
  }
  std::vector<double> ticks;
  if (log) {
    for (double d = std::pow(10, std::floor(std::log10(lo))); d <= hi * 1.0001; d *= 10) {
      if (d >= lo * 0.9999) ticks.push_back(d);
    }
  } else if (hi > lo) {
    ticks = report::nice_ticks(lo, hi, 6);
  }
  for (double t : ticks) {
    s << "<text x=\"" << tx(t) << "\" y=\"" << h - bottom + 16 << "\" text-anchor=\"middle\" font-size=\"11\">"
      << report::escape(number_text(t)) << "</text>\n";
  }
  s << "<text x=\"" << (left + w - right) / 2 << "\" y=\"" << h - 8 << "\" text-anchor=\"middle\" font-size=\"12\">"
    << report::escape(o.param) << (log ? " (log scale)" : "") << "</text>\n"
    << "<text x=\"14\" y=\"" << (top + h - bottom) / 2 << "\" font-size=\"12\" transform=\"rotate(-90 14 "
    << (top + h - bottom) / 2 << ")\" text-anchor=\"middle\">runs invalid</text>\n";
  auto edge = [&](const std::optional<double>& v, const char* color, const char* label) {
    if (!v) return;
    s << "<line x1=\"" << tx(*v) << "\" y1=\"" << ty(0) << "\" x2=\"" << tx(*v) << "\" y2=\"" << ty(1)
      << "\" stroke=\"" << color << "\" stroke-dasharray=\"4 3\"/>\n<text x=\"" << tx(*v) + 3 << "\" y=\""
      << ty(1) + 10 << "\" font-size=\"11\" fill=\"" << color << "\">" << label << "</text>\n";
  };
  edge(r.last_safe, class_color(ProbeClass::kSafe), "last safe");
  edge(r.first_unsafe, class_color(ProbeClass::kUnsafe), "first unsafe");
  for (const auto& p : r.probes) {
    if (p.tries == 0) continue;
    const double share = static_cast<double>(p.invalid) / p.tries;
    s << "<circle cx=\"" << tx(p.value) << "\" cy=\"" << ty(share) << "\" r=\"5\" fill=\"" << class_color(p.cls)
      << "\"><title>" << report::escape(o.param + " = " + number_text(p.value) + ": " + share_text(p) + " invalid, " +
                                        to_string(p.cls))
      << "</title></circle>\n";
  }
  s << "</svg>\n";
  return s.str();
}

std::string boundary_html(const BoundaryResult& r, const BoundaryOptions& o, const std::string& command,
                          const std::string& started) {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Boundary of "
    << report::escape(o.param) << "</title>\n<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:1.5rem "
       "auto;padding:0 1rem;color:#222}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25rem "
       ".5rem;text-align:left}code{overflow-wrap:anywhere}.safe{color:#2e8540}.unsafe{color:#c62828}.mixed{color:#"
       "e08a00}svg{max-width:100%;height:auto}</style></head><body>\n"
    << "<h1>Boundary of <code>" << report::escape(o.param) << "</code></h1>\n<p>Started " << report::escape(started)
    << ", " << report::fixed(r.elapsed_s / 60, 1) << " min; " << report::escape(r.stopped) << ".</p>\n"
    << "<p><code>" << report::escape(command) << "</code></p>\n"
    << "<p>Each probe: up to " << o.seeds << " seeds (the same at every probe); <span class=\"safe\">safe</span> at 0 of "
    << o.seeds << " invalid, <span class=\"unsafe\">unsafe</span> at " << o.effective_unsafe_at() << " of " << o.seeds
    << " or more" << (o.target ? " (anomaly " + report::escape(o.target->str()) + ")" : std::string()) << ", "
    << "<span class=\"mixed\">mixed</span> in between.</p>\n<ul><li>last safe: <b>" << report::escape(edge_text(r.last_safe))
    << "</b></li><li>first unsafe: <b>" << report::escape(edge_text(r.first_unsafe)) << "</b></li>";
  for (const auto& n : r.notes) h << "<li>" << report::escape(n) << "</li>";
  h << "</ul>\n" << boundary_plot(r, o) << "<table><tr><th>#</th><th>" << report::escape(o.param)
    << "</th><th>invalid</th><th>class</th><th>median first anomaly</th><th>runs</th><th>note</th></tr>\n";
  std::vector<ProbeRecord> sorted = r.probes;
  std::sort(sorted.begin(), sorted.end(), [](const ProbeRecord& a, const ProbeRecord& b) { return a.value < b.value; });
  for (const auto& p : sorted) {
    std::ostringstream folder;
    folder << "candidates/" << std::setw(2) << std::setfill('0') << p.index;
    h << "<tr><td>" << p.index << "</td><td>" << report::escape(number_text(p.value)) << "</td><td>" << share_text(p)
      << "</td><td class=\"" << to_string(p.cls) << "\">" << to_string(p.cls) << "</td><td>" << median_text(p)
      << "</td><td><a href=\"" << folder.str() << "/\">" << folder.str() << "</a></td><td>"
      << report::escape(p.note) << "</td></tr>\n";
  }
  h << "</table>\n<p>Every run is kept under <a href=\"runs/\">runs/</a> (its report.html), each probe's config and "
       "logs under candidates/NN/.</p>\n</body></html>\n";
  return h.str();
}

}  // namespace

int boundary(const RunConfig& base_given, const BoundaryOptions& o, std::ostream& out, const std::string& binary) {
  if (o.param.empty()) throw ConfigError("--param: required (a numeric run setting, e.g. drift_ppm, or lock-opt:KEY)");
  if (!std::isfinite(o.from) || !std::isfinite(o.to) || o.from == o.to) {
    throw ConfigError("--from/--to: must be two different finite numbers");
  }
  if (o.seeds < 1 || o.seeds > 100) throw ConfigError("--seeds: must be between 1 and 100");
  if (o.unsafe_at < 0 || o.unsafe_at > o.seeds) {
    throw ConfigError("--unsafe-at: must be between 1 and --seeds (" + std::to_string(o.seeds) + "), or 0 for 9 of 10");
  }
  if (o.resolution < 0) throw ConfigError("--resolution: must be > 0 (or 0 for a 32nd of the range)");
  if (!(o.budget_min > 0) || o.budget_min > 7 * 24 * 60) {
    throw ConfigError("--budget-min: must be > 0 and <= 10080 minutes");
  }
  if (o.log_scale && (o.from <= 0 || o.to <= 0)) throw ConfigError("--scale log: --from and --to must be > 0");
  RunConfig base = base_given;
  if (base.seed == 0) base.seed = 1;
  {
    // Both ends must be values the setting takes (ConfigError naming the flag otherwise), and the parameter must
    // matter to the run: a nemesis option without its nemesis would search nothing.
    RunConfig a = base, b = base;
    set_run_param(a, o.param, o.from);
    set_run_param(b, o.param, o.to);
    validate(a);  // as `lockcheck run` resolves it: an unknown lock or nemesis exits 2 before any probe
    validate(b);
  }
  const std::string stamp = utc_now("%Y%m%dT%H%M%SZ");
  std::string safe_param;
  for (char ch : o.param) safe_param += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '-';
  safe_param.erase(0, safe_param.find_first_not_of('-'));  // --pause-ms: boundary-pause-ms-..., not boundary---
  // One folder per search: the lock in its name, and a number when two searches start in the same second.
  std::string work = base.results_dir + "/boundary-" + safe_param + "-" + base.lock + "-" + stamp;
  for (int k = 2; fs::exists(work) && k < 1000; ++k) {
    work = base.results_dir + "/boundary-" + safe_param + "-" + base.lock + "-" + stamp + "-" + std::to_string(k);
  }
  if (o.dry_run) {
    out << "boundary --dry-run: nothing run, nothing written\n"
        << "search:  " << o.param << " in [" << number_text(std::min(o.from, o.to)) << ", "
        << number_text(std::max(o.from, o.to)) << "], " << (o.log_scale ? "log" : "linear") << " scale, resolution "
        << (o.resolution > 0 ? number_text(o.resolution) : std::string("a 32nd of the range")) << "\n"
        << "probes:  " << o.seeds << " seeds each (from seed " << base.seed << "), unsafe at "
        << o.effective_unsafe_at() << " of " << o.seeds
        << (o.target ? " runs with " + o.target->str() : std::string(" invalid runs"))
        << ", budget " << o.budget_min << " min\n"
        << "runs:    lockcheck run --lock " << base.lock << " --workload " << base.workload << " --nemesis "
        << (base.nemesis.empty() ? std::string("none") : boost::algorithm::join(base.nemesis, ",")) << ", "
        << number_text(base.time_limit_s) << " s each\n"
        << "would write: " << work << "/ (boundary.json, boundary.md, boundary.html; every run under runs/)\n";
    return kExitValid;
  }
  fs::create_directories(work);
  // The command as given (the CLI records it), else the search's own options.
  std::string command = "lockcheck boundary";
  if (base.argv.size() > 2) {
    for (size_t i = 2; i < base.argv.size(); ++i) command += " " + report::shell_quote(base.argv[i]);
  } else {
    command += " --param " + report::shell_quote(o.param) + " --from " + number_text(o.from) + " --to " +
               number_text(o.to) + " --seeds " + std::to_string(o.seeds) + " ...";
  }
  out << "boundary of " << o.param << " in [" << number_text(std::min(o.from, o.to)) << ", "
      << number_text(std::max(o.from, o.to)) << "]: " << o.seeds << " seeds a probe, unsafe at "
      << o.effective_unsafe_at() << " of " << o.seeds << ", budget " << o.budget_min << " min\n"
      << "folder: " << work << "\n"
      << std::flush;

  InterruptGuard interrupt;
  ChildRunOptions ro;
  ro.binary = binary.empty() ? self_exe() : binary;
  ro.work = work;
  ro.target = o.target;
  ro.budget_s = o.budget_min * 60.0;
  ro.replay_schedule = false;
  ro.seed_per_try = true;
  ChildRunRunner runner(ro, interrupt);
  RunConfig probe_base = base;
  probe_base.argv.clear();
  const BoundaryResult r = boundary_search(probe_base, o, runner, out);

  nlohmann::json j = to_json(r);
  j["param"] = o.param;
  j["from"] = o.from;
  j["to"] = o.to;
  j["seeds"] = o.seeds;
  j["unsafe_at"] = o.effective_unsafe_at();
  j["budget_min"] = o.budget_min;
  j["command"] = command;
  j["first_seed"] = base.seed;
  if (o.target) j["anomaly"] = o.target->str();
  write_json_file(work + "/boundary.json", j);
  write_file_atomically(work + "/boundary.md", boundary_markdown(r, o, command));
  write_file_atomically(work + "/boundary.html", boundary_html(r, o, command, utc_now("%Y-%m-%d %H:%M:%SZ")));

  out << "\nlast safe:    " << edge_text(r.last_safe) << "\nfirst unsafe: " << edge_text(r.first_unsafe) << "\n";
  for (const auto& n : r.notes) out << "note: " << n << "\n";
  out << "search: " << r.probes.size() << " probes, " << report::fixed(r.elapsed_s, 0) << " s (" << r.stopped << ")\n"
      << "report: " << work << "/boundary.html\n";
  if (r.interrupted) return 128 + (interrupt.signal_number() ? interrupt.signal_number() : SIGINT);
  if (r.runs_failing) return kExitHarness;
  return r.resolved ? kExitValid : kExitUnknown;
}

AnomalyKind parse_anomaly_flag(const std::string& anomaly) {
  const auto colon = anomaly.find(':');
  AnomalyKind k{anomaly.substr(0, colon), colon == std::string::npos ? "" : anomaly.substr(colon + 1)};
  if (k.checker.empty() || (colon != std::string::npos && k.kind.empty())) {
    throw ConfigError("--anomaly: '" + anomaly + "' must be CHECKER or CHECKER:KIND");
  }
  return k;
}

}  // namespace lockcheck
