#include "report/report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <unordered_set>

#include <boost/filesystem.hpp>

#include "checkers/checker.h"
#include "core/config.h"
#include "core/history.h"
#include "core/run_files.h"
#include "report/anomalies.h"
#include "report/assets.h"
#include "report/coverage.h"
#include "report/html.h"
#include "report/plots_svg.h"
#include "report/results_json.h"
#include "report/run_model.h"
#include "report/summary.h"
#include "report/svg_common.h"
#include "report/timeline_svg.h"

namespace lockcheck {

namespace {

using nlohmann::json;
using report::escape;

constexpr size_t kMaxListedAnomalies = 200;
constexpr size_t kMaxDetailedAnomalies = 20;
constexpr size_t kMaxContextRows = 80;

using report::find;
using report::kDash;
using report::plain;
using report::text;
using report::verdict_of;

std::string checker_verdict(const json& c) {
  const json* v = find(c, "valid");
  if (v && v->is_string()) {
    if (auto parsed = validity_from_string(v->get<std::string>())) return to_string(*parsed);
  }
  return "unknown";
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string op_value_short(const Op& op) {
  if (op.value.is_null()) return "";
  std::string s = op.value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

// "3 violations, 5 notes", "1 violation", "2 notes": a note is listed for the reader, not counted as a violation.
std::string count_words(size_t violations, size_t notes) {
  std::string s;
  if (violations || !notes) s = std::to_string(violations) + (violations == 1 ? " violation" : " violations");
  if (notes) s += (s.empty() ? "" : ", ") + std::to_string(notes) + (notes == 1 ? " note" : " notes");
  return s;
}

// A nemesis op in words, from the fields every nemesis writes (fault, phase, targets) and the aim it recorded:
// "kill n1 n2 n3, aimed at the holder of lock-0 (p4)", "restart n1 n2 n3 (heals kill)". Empty when the
// value is not an object (then the raw value is shown alone).
std::string nemesis_words(const Op& op) {
  const json& v = op.value;
  if (!v.is_object()) return "";
  const std::string fault = v.contains("fault") ? plain(v["fault"]) : "";
  std::string s = op.f.empty() ? fault : std::string(op.f);
  if (const json* t = find(v, "targets"); t && t->is_array()) {
    for (const auto& x : *t) s += " " + plain(x);
  }
  const bool heal = v.value("phase", json()) == json("stop");
  if (!fault.empty() && fault != s.substr(0, s.find(' ')))
    s += heal ? " (heals " + fault + ")" : " (" + fault + ")";
  else if (heal)
    s += " (heal)";
  if (const json* d = find(v, "detail"); d && d->is_object()) {
    if (const json* at = find(*d, "aimed_at"); at && at->is_object() && find(*at, "key")) {
      s += ", aimed at the holder of " + plain((*at)["key"]);
      if (const json* p = find(*at, "process")) {
        s += " (" + (p->is_number_integer() ? process_name(p->get<Process>()) : plain(*p)) + ")";
      }
    } else if (const json* aimed = find(*d, "aimed"); aimed && aimed->is_boolean()) {
      s += aimed->get<bool>() ? ", aimed" : ", not aimed (no holder to aim at)";
      if (const json* f = find(*d, "fires"); f && f->is_string()) s += ": fires on the " + f->get<std::string>();
    }
  }
  return s;
}

struct Page {
  const json& config;
  const History& h;
  const json& results;
  const std::vector<int64_t>& pairs;  // pair_index(h)
  std::vector<report::Anomaly> anomalies;
  std::vector<report::Hold> holds;
  std::optional<report::HoldIndex> hold_index;  // over holds, once they are final
  std::vector<report::FaultBand> bands;
  int64_t end_ns = 0;
  int64_t span_ns = 0;
  std::ostringstream out;
};

// Client processes that exited by themselves (results.json "client_exits", else the history's exits without
// their stderr): named, with their status and the last lines of their stderr, linked.
void render_client_exits(Page& pg, const report::ClientTally& tally) {
  json results = pg.results.is_object() ? pg.results : json::object();
  if (!find(results, "client_exits")) {
    const auto exits = report::client_exits(pg.h);
    if (exits.empty()) return;
    results["client_exits"] = report::client_exits_json(exits);
    results["client_exit_count"] = exits.size();
  }
  const std::vector<std::string> lines = report::client_exit_lines(results, tally);
  if (lines.empty()) return;
  auto& s = pg.out;
  s << "<div id=\"client-exits\" class=\"run-error\"><p><strong>" << escape(lines[0]) << ".</strong></p>\n";
  const json& exits = results["client_exits"];
  s << "<table class=\"config\"><tr><th>process</th><th>at</th><th>how it ended</th><th>stderr</th></tr>\n";
  for (size_t i = 0; i < exits.size() && i < 10; ++i) {
    const json& x = exits[i];
    std::string file = find(x, "stderr_file") ? plain(x["stderr_file"]) : std::string();
    std::string cell = kDash;
    if (!file.empty() && report::is_safe_relative_link(file)) {
      cell = "<a href=\"" + escape(report::url_path_encode(file)) + "\">" + escape(file) + "</a>";
    }
    if (const json* tl = find(x, "stderr_tail"); tl && tl->is_array() && !tl->empty()) {
      std::string tail;
      for (const auto& l : *tl) tail += plain(l) + "\n";
      cell += "<pre class=\"cmd\">" + escape(tail) + "</pre>";
    } else if (find(x, "stderr_tail")) {
      cell += " (empty)";
    }
    const json* ts = find(x, "time_s");
    s << "<tr data-process=\"" << text(x, "process") << "\"><td>" << text(x, "process") << "</td><td>"
      << (ts && ts->is_number() ? escape(report::fixed(ts->get<double>(), 3)) + " s" : std::string(kDash))
      << "</td><td>" << text(x, "why") << "</td><td>" << cell << "</td></tr>\n";
  }
  s << "</table>\n";
  if (exits.size() > 10) s << "<p class=\"note\">" << (exits.size() - 10) << " more in results.json.</p>\n";
  s << "</div>\n";
}

void render_verdict(Page& pg) {
  auto& s = pg.out;
  const std::string verdict = verdict_of(pg.results);
  s << "<section id=\"verdict\">\n";
  s << "<h1>lockcheck run <code>" << text(pg.results, "run_id") << "</code></h1>\n";
  s << "<div id=\"verdict-text\" class=\"verdict verdict-" << verdict << "\">" << upper(verdict) << "</div>\n";
  // What was tested, in one sentence, then the facts (report/summary.h).
  s << "<p id=\"tested\" class=\"tested\"><strong>Tested:</strong> "
    << escape(report::run_sentence(pg.config, pg.results, pg.h)) << ".</p>\n";
  s << "<p class=\"meta\">started " << text(pg.results, "started_at") << " &middot; duration ";
  if (const json* d = find(pg.results, "duration_s"); d && d->is_number()) {
    s << escape(report::fixed(d->get<double>(), 1)) << " s";
  } else {
    s << kDash;
  }
  s << " &middot; " << pg.h.size() << " history entries</p>\n";
  // The client ops as the stats checker counts them (nemesis ops apart), each count with what it means.
  const report::ClientTally tally = report::client_tally(pg.h);
  s << "<p id=\"op-counts\">Client ops: ";
  if (!pg.h.empty()) {
    s << escape(report::ops_words(tally)) << "; " << tally.nemesis << " nemesis ops";
  } else if (const json* ops = find(pg.results, "ops"); ops && ops->is_object()) {
    s << text(*ops, "ok") << " ok, " << text(*ops, "fail") << " fail, " << text(*ops, "info") << " info";
  } else {
    s << kDash;
  }
  s << "</p>\n";
  if (!pg.h.empty()) s << "<p id=\"workload-line\">" << escape(report::workload_words(pg.config, pg.h)) << ".</p>\n";
  render_client_exits(pg, tally);
  if (const json* err = find(pg.results, "error"); err && err->is_string() && !err->get<std::string>().empty()) {
    s << "<p class=\"run-error\"><strong>The run did not complete:</strong> " << escape(err->get<std::string>())
      << "</p>\n";
  }
  if (pg.results.is_null() || (pg.results.is_object() && pg.results.empty())) {
    s << "<p class=\"note\">No results.json: the checkers have not judged this run.</p>\n";
  }

  const json* checkers = find(pg.results, "checkers");
  if (checkers && checkers->is_array() && !checkers->empty()) {
    s << "<table class=\"checkers\"><tr><th>checker</th><th>verdict</th><th>violations</th><th>notes</th>"
         "<th>summary</th></tr>\n";
    for (const auto& c : *checkers) {
      const std::string v = checker_verdict(c);
      size_t violations = 0, notes = 0;
      const json* name = find(c, "checker");
      for (const auto& a : pg.anomalies) {
        if (!name || a.checker != plain(*name)) continue;
        (a.note ? notes : violations) += 1;
      }
      s << "<tr><td>" << text(c, "checker") << "</td><td><span class=\"pill " << v << "\">" << v << "</span></td><td>"
        << violations << "</td><td>" << notes << "</td><td>" << text(c, "summary") << "</td></tr>\n";
    }
    s << "</table>\n";
  }

  if (!pg.anomalies.empty()) {
    const size_t notes = static_cast<size_t>(
        std::count_if(pg.anomalies.begin(), pg.anomalies.end(), [](const report::Anomaly& a) { return a.note; }));
    s << "<h3 id=\"anomaly-count\">" << count_words(pg.anomalies.size() - notes, notes) << "</h3>\n";
    s << report::first_anomaly_html(pg.results, pg.h, pg.pairs);
    s << "<ol class=\"anomalies\">\n";
    for (size_t i = 0; i < pg.anomalies.size() && i < kMaxListedAnomalies; ++i) {
      const auto& a = pg.anomalies[i];
      s << "<li id=\"a-" << i << "\" class=\"anomaly-sentence\">";
      if (!a.kind.empty()) s << "<span class=\"kind" << (a.note ? " note" : "") << "\">" << escape(a.kind) << "</span> ";
      s << escape(report::sentence_of(a));
      if (i < kMaxDetailedAnomalies) s << " <a href=\"#anomaly-" << i << "\">operations</a>";
      if (a.from_ns) {
        const auto w = pg.hold_index->view(a, pg.end_ns);
        s << " <button class=\"zoom-to\" data-scroll=\"1\" data-view-a=\"" << report::ms_coord(w.from_ns)
          << "\" data-view-b=\"" << report::ms_coord(w.to_ns) << "\">show on timeline</button>";
      }
      s << "</li>\n";
    }
    s << "</ol>\n";
    if (pg.anomalies.size() > kMaxListedAnomalies) {
      s << "<p class=\"note\">... and " << (pg.anomalies.size() - kMaxListedAnomalies)
        << " more anomalies (all of them are in results.json).</p>\n";
    }
  } else if (verdict == "valid") {
    s << "<p>No anomalies found.</p>\n";
  }
  s << "</section>\n";
}

// results/<run id>, as the config's results_dir and results.json's run_id give it ("RUN_DIR" without them).
std::string run_dir_of(const Page& pg) {
  std::string results_dir = "results";
  if (const json* r = find(pg.config, "results_dir"); r && r->is_string() && !r->get<std::string>().empty()) {
    results_dir = r->get<std::string>();
  }
  const json* run_id = find(pg.results, "run_id");
  return run_id && run_id->is_string() ? results_dir + "/" + run_id->get<std::string>() : "RUN_DIR";
}

// "Minimal reproduction": what `lockcheck reproduce` (harness/reproduce.h) found, from results.json's
// "reproduction"; for an invalid run without it, the command that finds it.
void render_reproduction(Page& pg, const std::string& run_dir) {
  auto& s = pg.out;
  const json* r = find(pg.results, "reproduction");
  if (!r || !r->is_object()) {
    if (verdict_of(pg.results) != "invalid") return;
    s << "<section id=\"reproduction\">\n<h2>Minimal reproduction</h2>\n<p class=\"note\">Not searched yet: "
         "how often this anomaly comes back and the smallest case that shows it:</p>\n<pre class=\"cmd\">"
         "lockcheck reproduce "
      << escape(report::shell_quote(run_dir)) << "</pre>\n</section>\n";
    return;
  }
  auto num = [](const json& j, const char* k) -> std::string {
    const json* v = find(j, k);
    if (!v || !v->is_number()) return kDash;
    return escape(v->is_number_integer() ? std::to_string(v->get<int64_t>()) : report::fixed(v->get<double>(), 1));
  };
  auto seconds = [&](const json& j, const char* k) {
    const std::string v = num(j, k);
    return v == kDash ? v : v + " s";
  };
  const json* anomaly = find(*r, "anomaly");
  const std::string kind =
      anomaly ? text(*anomaly, "checker") + ":" + text(*anomaly, "kind") : std::string(kDash);
  s << "<section id=\"reproduction\">\n<h2>Minimal reproduction</h2>\n";
  s << "<p>Anomaly kind <code>" << kind << "</code>; each case ran up to " << num(*r, "tries")
    << " times and was kept when the anomaly came back in at least " << num(*r, "rate") << " of them. Search: "
    << text(*r, "stopped") << ", " << num(*r, "candidates") << " cases in " << seconds(*r, "elapsed_s") << ".</p>\n";
  s << "<table class=\"config\" id=\"repro-table\"><tr><th></th><th>time limit</th><th>faults</th><th>processes</th>"
       "<th>keys</th><th>reproduced</th><th>median first anomaly</th></tr>\n";
  for (const char* which : {"original", "minimal"}) {
    const json* c = find(*r, which);
    if (!c || !c->is_object()) continue;
    s << "<tr><th>" << which << "</th><td>" << seconds(*c, "time_limit_s") << "</td><td>" << num(*c, "faults")
      << "</td><td>" << num(*c, "concurrency") << "</td><td>" << num(*c, "keys") << "</td><td>" << num(*c, "reproduced")
      << " of " << num(*c, "tries") << "</td><td>" << seconds(*c, "median_first_anomaly_s") << "</td></tr>\n";
  }
  s << "</table>\n";
  if (const json* confirmed = find(*r, "confirmed"); confirmed && confirmed->is_boolean() && confirmed->get<bool>()) {
    s << "<p class=\"note\">The minimal case's rate is its confirmation: it ran again after the search, so it does "
         "not rest on the runs that chose it.</p>\n";
  }
  const json* reproducible = find(*r, "reproducible");
  if (reproducible && reproducible->is_boolean() && reproducible->get<bool>()) {
    s << "<p>Run the minimal case:</p>\n<pre class=\"cmd\" id=\"repro-command\">" << text(*r, "command")
      << "</pre>\n";
  } else {
    s << "<p class=\"note\">The stored run did not come back often enough to shrink it.</p>\n";
  }
  s << "<p class=\"note\">Every case tried: <a href=\"repro/tried.md\">repro/tried.md</a> (and tried.json).</p>\n";
  s << "</section>\n";
}

void config_row(std::ostringstream& s, const char* label, const std::string& value_html) {
  s << "<tr><th>" << label << "</th><td>" << value_html << "</td></tr>\n";
}

void render_config(Page& pg) {
  auto& s = pg.out;
  const json& c = pg.config;
  s << "<section id=\"config\">\n<h2>Configuration</h2>\n<table class=\"config\">\n";
  // One row per group of the config field table (core/config.h), each field as "name value unit": the table
  // is the one config.json, the flags and validation use, so a new field shows up here by itself.
  std::vector<std::string> groups;
  std::map<std::string, std::string> rows;
  // The run's configuration as the run read it, for the values of unset fields (-1: a default derived from other
  // fields); absent when config.json does not parse (an older or hand-edited file: then just "default").
  std::optional<RunConfig> run_config;
  try {
    run_config = c.get<RunConfig>();
  } catch (const std::exception&) {
  }
  // The settings that have no effect in this run (a fault's setting without that fault), as the run recorded them.
  std::set<std::string> not_applying;
  if (const json* na = find(pg.results, "settings_not_applying"); na && na->is_array()) {
    for (const auto& k : *na) {
      if (k.is_string()) not_applying.insert(k.get<std::string>());
    }
  }
  // The server kind's options as the run resolved them (defaults filled in, only those that apply).
  const json* server = find(pg.results, "server");
  const json* server_options = server ? find(*server, "options") : nullptr;
  for (const auto& f : config_fields()) {
    if (!*f.group) continue;
    if (not_applying.count(f.key)) continue;
    const json* v = find(c, f.key);
    if (std::string(f.key) == "label" && (!v || !v->is_string() || v->get<std::string>().empty())) continue;
    if (std::string(f.key) == "client_cmd" || std::string(f.key) == "hosts") {
      if (!v || !v->is_string() || v->get<std::string>().empty()) continue;  // shown only when set
    }
    if (std::string(f.key) == "lock_opts" && (!v || !v->is_object() || v->empty())) continue;
    std::string value = text(c, f.key);
    if (std::string(f.key) == "server_opts") {
      const json* o = server_options && server_options->is_object() ? server_options : v;
      if (!o || !o->is_object() || o->empty()) continue;
      value.clear();
      for (auto it = o->begin(); it != o->end(); ++it) {
        value += (value.empty() ? "" : ", ") + escape(it.key()) + " " + escape(plain(it.value()));
      }
    }
    if (std::string(f.key) == "nemesis" && v && v->is_array() && v->empty()) value = "none";
    if (v && v->is_number_integer() && v->get<int64_t>() == -1) {  // -1: a default the run derived
      std::optional<int64_t> effective;
      if (f.effective && run_config) effective = f.effective(*run_config);
      value = escape(report::default_words(effective, f.unit, f.default_words));
    } else if (*f.unit && value != kDash) {
      value += " " + std::string(f.unit);
    }
    if (!rows.count(f.group)) groups.push_back(f.group);
    std::string& row = rows[f.group];
    row += (row.empty() ? "" : " &middot; ") + std::string("<span class=\"mono\">") + f.key + "</span> " + value;
  }
  for (const auto& g : groups) config_row(s, g.c_str(), rows[g]);
  std::string versions;
  if (const json* v = find(pg.results, "versions"); v && v->is_object() && !v->empty()) {
    for (auto it = v->begin(); it != v->end(); ++it) {
      if (!versions.empty()) versions += " &middot; ";
      versions += escape(it.key()) + " " + escape(plain(it.value()));
    }
  } else {
    versions = kDash;
  }
  config_row(s, "versions", versions);
  s << "</table>\n";

  // The command that reruns it.
  std::string results_dir = "results";
  if (const json* r = find(c, "results_dir"); r && r->is_string() && !r->get<std::string>().empty()) {
    results_dir = r->get<std::string>();
  }
  const json* run_id = find(pg.results, "run_id");
  std::string run_dir = run_id && run_id->is_string() ? results_dir + "/" + run_id->get<std::string>() : "RUN_DIR";
  s << "<h3>Rerun (same configuration and seed)</h3>\n<pre class=\"cmd\" id=\"rerun\">lockcheck rerun "
    << escape(report::shell_quote(run_dir)) << "</pre>\n";
  if (const json* argv = find(c, "argv"); argv && argv->is_array() && !argv->empty()) {
    std::string cmd;
    for (const auto& a : *argv) {
      if (!cmd.empty()) cmd += " ";
      cmd += report::shell_quote(plain(a));
    }
    s << "<p class=\"note\">Original command line:</p><pre class=\"cmd\" id=\"argv\">" << escape(cmd) << "</pre>\n";
  }
  s << "</section>\n";
}

void render_timeline_section(Page& pg) {
  auto& s = pg.out;
  s << "<section id=\"timeline-section\">\n<h2>Lock timeline</h2>\n";
  s << "<div class=\"toolbar\"><button data-zoom=\"all\">whole run</button>";
  const report::Anomaly* first = nullptr;
  for (const auto& a : pg.anomalies) {
    if (a.from_ns) {
      first = &a;
      break;
    }
  }
  if (first) {
    const auto w = pg.hold_index->view(*first, pg.end_ns);
    s << "<button id=\"zoom-first\" data-view-a=\"" << report::ms_coord(w.from_ns) << "\" data-view-b=\""
      << report::ms_coord(w.to_ns) << "\">first anomaly</button>";
  }
  s << "<button data-zoom=\"in\">zoom in</button><button data-zoom=\"out\">zoom out</button>"
       "<button data-zoom=\"left\">&#9664;</button><button data-zoom=\"right\">&#9654;</button>"
       "<span class=\"range\" id=\"tl-range\"></span></div>\n";
  // Legend.
  std::unordered_set<Atom> keys;
  for (const auto& h : pg.holds) keys.insert(h.key);
  std::vector<std::string> sorted_keys(keys.begin(), keys.end());
  std::sort(sorted_keys.begin(), sorted_keys.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  s << "<div class=\"legend-row\">";
  for (size_t i = 0; i < sorted_keys.size() && i < 12; ++i) {
    s << "<span class=\"sw\" style=\"background:" << report::key_color(i) << "\"></span>" << escape(sorted_keys[i]);
  }
  if (sorted_keys.size() > 12) s << " ...";
  s << "<span class=\"sw\" style=\"background:#3b6fb6;opacity:.3\"></span>lease window"
       "<span class=\"sw\" style=\"background:#6b1414\"></span>held past its lease"
       "<span class=\"sw\" style=\"background:#fff;border:1px dashed #333\"></span>acquire indeterminate"
       "<span class=\"sw\" style=\"background:#fff;border:2px solid #d11f1f\"></span>anomaly";
  if (std::any_of(pg.holds.begin(), pg.holds.end(), [](const report::Hold& h) { return h.loss_notice_ns.has_value(); })) {
    s << "<span class=\"sw\" style=\"background:#d01fd6\"></span>the lock library said the lock was lost";
  }
  s << "</div>\n";
  s << report::render_timeline(pg.holds, *pg.hold_index, pg.bands, pg.anomalies, pg.end_ns);
  s << "<p class=\"note\">A lane is a client process (p0, p1, ...: the name the console, the run log and the "
       "fault periods use). A process runs in a client slot (c0, c1, ...: the network party a fault cuts or pauses); "
       "after an info op it is retired and a new process takes its slot. "
       "A bar runs from an acquire's ok to the process's next release invoke on that key (or the "
       "end of the history); the lighter box behind it is the lease the client was told (acquire ok + "
       "validity, moved by ok extends); a magenta tick is where the client's lock library told it the lock was "
       "lost (a loss notice). Shaded bands are fault periods. Drag across the lanes to zoom; click the top strip to move; "
       "hover for details.</p>\n";
  s << "</section>\n";
}

void render_op_rows(std::ostringstream& s, const History& h, const std::vector<int64_t>& rows,
                    const std::set<int64_t>& highlight, const std::string& key) {
  int64_t prev = -2;
  for (int64_t i : rows) {
    if (prev >= 0 && i != prev + 1) s << "<tr class=\"gap\"><td colspan=\"10\">&#8943;</td></tr>\n";
    prev = i;
    const Op& op = h[static_cast<size_t>(i)];
    std::string cls;
    if (highlight.count(i)) {
      cls = "hl";
    } else if (!key.empty() && op.is_client() && op.key != key) {
      cls = "other";
    }
    s << "<tr" << (cls.empty() ? "" : " class=\"" + cls + "\"") << " data-index=\"" << i << "\"><td>" << i
      << "</td><td>" << escape(report::fixed(static_cast<double>(op.time_ns) / 1e9, 6)) << "</td><td>"
      << escape(process_name(op.process)) << "</td><td class=\"t-" << to_string(op.type) << "\">" << to_string(op.type)
      << "</td><td>" << escape(op.f) << "</td><td>" << escape(op.key) << "</td><td>"
      << (op.token ? std::to_string(*op.token) : "") << "</td><td>"
      << (op.validity_ms ? std::to_string(*op.validity_ms) : "") << "</td><td class=\"value\">";
    const std::string words = op.process == kNemesis ? nemesis_words(op) : "";
    if (words.empty()) {
      s << escape(op_value_short(op));
    } else {  // the fault in words, the raw fields one click away
      s << escape(words) << "<details><summary>raw</summary><code>"
        << escape(op.value.dump(-1, ' ', false, json::error_handler_t::replace)) << "</code></details>";
    }
    s << "</td><td class=\"error\">" << escape(op.error) << "</td></tr>\n";
  }
}

void render_anomaly_details(Page& pg) {
  if (pg.anomalies.empty()) return;
  auto& s = pg.out;
  const std::vector<int64_t>& pairs = pg.pairs;
  const int64_t n = static_cast<int64_t>(pg.h.size());
  s << "<section id=\"anomalies\">\n<h2>Anomalies in detail</h2>\n";
  s << "<p class=\"note\">The operations of each anomaly (highlighted), their invokes or completions, and the "
       "operations around them; operations on other keys are greyed.</p>\n";
  for (size_t ai = 0; ai < pg.anomalies.size() && ai < kMaxDetailedAnomalies; ++ai) {
    const auto& a = pg.anomalies[ai];
    s << "<div class=\"anomaly-detail\" id=\"anomaly-" << ai << "\" data-anomaly=\"" << ai << "\">\n<h3>" << (ai + 1)
      << ". " << escape(a.kind.empty() ? "anomaly" : a.kind);
    if (!a.checker.empty()) s << " <span class=\"meta\">(" << escape(a.checker) << ")</span>";
    s << "</h3>\n<p>" << escape(report::sentence_of(a));
    if (a.from_ns) {
      const auto w = pg.hold_index->view(a, pg.end_ns);
      s << " <button class=\"zoom-to\" data-scroll=\"1\" data-view-a=\"" << report::ms_coord(w.from_ns)
        << "\" data-view-b=\"" << report::ms_coord(w.to_ns) << "\">show on timeline</button>";
    }
    s << "</p>\n";
    std::set<int64_t> highlight, core;
    size_t out_of_range = 0;
    for (int64_t i : a.ops) {
      if (i < 0 || i >= n) {
        ++out_of_range;
        continue;
      }
      highlight.insert(i);
      core.insert(i);
      if (pairs[static_cast<size_t>(i)] >= 0) core.insert(pairs[static_cast<size_t>(i)]);
    }
    if (core.empty()) {
      s << "<p class=\"note\">This anomaly names no operations of the history.</p>\n</div>\n";
      continue;
    }
    // Context: three entries either side of each, or just the ops and their pairs when that is too much.
    std::set<int64_t> rows;
    for (int64_t i : core) {
      for (int64_t j = std::max<int64_t>(0, i - 3); j <= std::min(n - 1, i + 3); ++j) rows.insert(j);
    }
    if (rows.size() > kMaxContextRows) rows = core;
    std::vector<int64_t> row_list(rows.begin(), rows.end());
    if (row_list.size() > kMaxContextRows) row_list.resize(kMaxContextRows);
    s << "<table class=\"ops\"><tr><th>index</th><th>time (s)</th><th>process</th><th>type</th><th>f</th>"
         "<th>key</th><th>token</th><th>validity ms</th><th>value</th><th>error</th></tr>\n";
    render_op_rows(s, pg.h, row_list, highlight, a.key);
    s << "</table>\n";
    if (rows.size() > row_list.size()) {
      s << "<p class=\"note\">" << (rows.size() - row_list.size()) << " more operations not shown.</p>\n";
    }
    if (out_of_range) {
      s << "<p class=\"note\">" << out_of_range << " operation indices are outside the history.</p>\n";
    }
    s << "</div>\n";
  }
  if (pg.anomalies.size() > kMaxDetailedAnomalies) {
    s << "<p class=\"note\">Only the first " << kMaxDetailedAnomalies << " anomalies are shown in detail.</p>\n";
  }
  s << "</section>\n";
}

void render_plots(Page& pg) {
  auto& s = pg.out;
  s << "<section id=\"plots\">\n<h2>Plots</h2>\n";
  s << "<h3>Acquire latency</h3>\n";
  s << report::render_latency_plot(report::acquire_latencies(pg.h, pg.pairs), pg.bands, pg.span_ns);
  s << "<h3>Throughput</h3>\n";
  s << report::render_throughput_plot(pg.h, pg.bands, pg.span_ns);
  if (report::has_set_ops(pg.h)) {
    const report::LostUpdates lost = report::lost_updates(pg.h, pg.pairs);
    s << "<h3>Lost updates</h3>\n";
    if (!lost.has_final_read) {
      s << "<p class=\"note\">No final read (an ok read of a set of integers): lost updates cannot be counted.</p>\n";
    } else {
      const double pct = lost.acknowledged ? 100.0 * static_cast<double>(lost.lost_completion_ns.size()) /
                                                 static_cast<double>(lost.acknowledged)
                                           : 0.0;
      std::string reads;
      for (size_t i = 0; i < lost.final_read_indices.size() && i < 10; ++i) {
        reads += (i ? ", " : "") + std::to_string(lost.final_read_indices[i]);
      }
      if (lost.final_read_indices.size() > 10) reads += ", ...";
      s << "<p id=\"lost-summary\">" << lost.lost_completion_ns.size() << " of " << lost.acknowledged
        << " acknowledged adds are missing from the final read" << (lost.final_read_indices.size() == 1 ? "" : "s")
        << " (op " << reads << "): " << report::fixed(pct, 1) << "%.</p>\n";
      s << report::render_lost_updates_plot(lost, pg.bands, pg.span_ns);
      s << "<p class=\"note\">Each add is judged against the final read of its key; " << lost.unjudged
        << " acknowledged adds completed after that read was invoked, or have no final read, and are not "
           "counted.</p>\n";
    }
  }
  s << "</section>\n";
}

void render_nodes(Page& pg) {
  auto& s = pg.out;
  s << "<section id=\"nodes\">\n<h2>Nodes</h2>\n";
  // The nodes: from results.json, else n1..nN from the config.
  json nodes = json::array();
  if (const json* n = find(pg.results, "nodes"); n && n->is_array()) {
    nodes = *n;
  } else if (const json* count = find(pg.config, "nodes"); count && count->is_number_integer()) {
    const int64_t k = std::min<int64_t>(count->get<int64_t>(), 100);
    for (int64_t i = 1; i <= k; ++i) {
      nodes.push_back({{"name", "n" + std::to_string(i)}, {"log", "nodes/n" + std::to_string(i) + ".log"}});
    }
  }
  if (nodes.empty()) {
    s << "<p class=\"note\">No nodes recorded.</p>\n";
  } else {
    s << "<table class=\"nodes\"><tr><th>node</th><th>role</th><th>endpoint</th><th>faults</th><th>log</th></tr>\n";
    for (const auto& node : nodes) {
      const json* name = find(node, "name");
      const std::string nm = name ? plain(*name) : "";
      std::string faults;
      size_t nf = 0;
      for (const auto& b : pg.bands) {
        if (std::find(b.targets.begin(), b.targets.end(), nm) == b.targets.end()) continue;
        if (++nf > 30) continue;
        if (!faults.empty()) faults += "<br/>";
        faults += escape(b.fault) + " " + escape(report::seconds_label(b.from_ns)) + " &ndash; " +
                  (b.healed ? escape(report::seconds_label(b.to_ns)) : std::string("end"));
      }
      if (nf > 30) faults += "<br/>... " + std::to_string(nf - 30) + " more";
      std::string log_cell = kDash;
      if (const json* log = find(node, "log"); log && log->is_string()) {
        const std::string path = log->get<std::string>();
        if (report::is_safe_relative_link(path)) {
          log_cell =
              "<a class=\"node-log\" href=\"" + escape(report::url_path_encode(path)) + "\">" + escape(path) + "</a>";
        } else {
          log_cell = "<span class=\"mono\">" + escape(path) + "</span>";
        }
      }
      s << "<tr data-node=\"" << escape(nm) << "\"><td>" << (nm.empty() ? std::string(kDash) : escape(nm))
        << "</td><td>" << text(node, "role") << "</td><td class=\"mono\">" << text(node, "endpoint") << "</td><td>"
        << (faults.empty() ? std::string("none") : faults) << "</td><td>" << log_cell << "</td></tr>\n";
    }
    s << "</table>\n";
  }
  if (!pg.bands.empty()) {
    s << "<h3>Fault periods</h3>\n<table class=\"faults\"><tr><th>fault</th><th>targets</th><th>from</th><th>to</th>"
         "<th>duration</th><th>detail</th></tr>\n";
    size_t shown = 0;
    for (const auto& b : pg.bands) {
      if (++shown > 200) break;
      std::string targets;
      for (const auto& t : b.targets) targets += (targets.empty() ? "" : ", ") + t;
      s << "<tr><td>" << escape(b.fault) << "</td><td>" << escape(targets) << "</td><td>"
        << escape(report::seconds_label(b.from_ns)) << "</td><td>"
        << (b.healed ? escape(report::seconds_label(b.to_ns)) : std::string("end (not healed)")) << "</td><td>"
        << escape(report::duration_label(b.to_ns - b.from_ns)) << "</td><td>"
        << (b.words.empty() ? std::string() : "<strong>" + escape(b.words) + "</strong> ")
        << "<span class=\"mono\">" << escape(b.detail) << "</span></td></tr>\n";
    }
    s << "</table>\n";
    if (pg.bands.size() > 200) s << "<p class=\"note\">" << (pg.bands.size() - 200) << " more fault periods.</p>\n";
  }
  s << "</section>\n";
}

using report::parse_json_file;
using report::write_atomically;

}  // namespace

std::string render_report(const nlohmann::json& config, const History& h, const nlohmann::json& results,
                          const std::vector<int64_t>* pairs) {
  std::vector<int64_t> own_pairs;
  if (pairs == nullptr || pairs->size() != h.size()) {
    own_pairs = pair_index(h);
    pairs = &own_pairs;
  }
  Page pg{config, h, results, *pairs, {}, {}, {}, {}, 0, 0, {}};
  pg.anomalies = report::anomalies_of(results);
  report::HoldOptions hold_opts;
  if (const json* ttl = find(config, "ttl_ms"); ttl && ttl->is_number_integer() && ttl->get<int64_t>() > 0) {
    hold_opts.ttl_ms = ttl->get<int64_t>();
  }
  pg.end_ns = report::history_end_ns(h);
  pg.holds = report::lock_holds(h, hold_opts, *pairs, pg.end_ns);
  pg.hold_index.emplace(pg.holds);
  pg.bands = report::fault_bands(h, *pairs, pg.end_ns);
  pg.span_ns = std::max<int64_t>(pg.end_ns, 1000000);
  for (const auto& a : pg.anomalies) {
    if (a.to_ns) pg.span_ns = std::max(pg.span_ns, *a.to_ns);
  }

  const json* run_id = find(results, "run_id");
  const std::string verdict = verdict_of(results);
  auto& s = pg.out;
  s << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n<title>"
    << upper(verdict) << " &middot; lockcheck " << (run_id ? escape(plain(*run_id)) : std::string("run"))
    << "</title>\n<style>" << report::kPageCss << "</style>\n</head>\n";
  s << "<body data-verdict=\"" << verdict << "\" data-anomalies=\"" << pg.anomalies.size() << "\">\n<main>\n";
  render_verdict(pg);
  render_reproduction(pg, run_dir_of(pg));
  render_config(pg);
  render_timeline_section(pg);
  render_anomaly_details(pg);
  render_plots(pg);
  render_nodes(pg);
  s << report::fault_timing_section_html(results, h, *pairs);
  s << "<footer>lockcheck report &middot; self-contained: no script, style or font is loaded from the network."
       "</footer>\n</main>\n<div id=\"tip\"></div>\n<script>"
    << report::kReportJs << "</script>\n</body>\n</html>\n";
  return s.str();
}

void write_report(const std::string& run_dir) {
  const std::string history_path = run_dir + "/history.jsonl";
  History h;
  bool has_history = false;
  {
    std::ifstream probe(history_path);
    has_history = static_cast<bool>(probe);
  }
  if (has_history) {
    try {
      h = read_history(history_path);
    } catch (const HistoryError& e) {
      throw ReportError(e.what());
    }
  }
  bool has_config = false, has_results = false;
  json config = parse_json_file(run_dir + "/config.json", &has_config);
  json results = parse_json_file(run_dir + "/results.json", &has_results);
  if (!has_config && !has_history && !has_results) {
    throw ReportError(run_dir + ": not a run folder (no config.json, history.jsonl or results.json)");
  }
  write_atomically(run_dir + "/report.html", render_report(config, h, results));
}

void write_report(const std::string& run_dir, const History& h, const std::vector<int64_t>* pairs) {
  bool has_config = false, has_results = false;
  json config = parse_json_file(run_dir + "/config.json", &has_config);
  json results = parse_json_file(run_dir + "/results.json", &has_results);
  write_atomically(run_dir + "/report.html", render_report(config, h, results, pairs));
}

}  // namespace lockcheck
