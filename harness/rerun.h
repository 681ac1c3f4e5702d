// `lockcheck rerun RUN_DIR`: a stored run's configuration and seed again, to reproduce an anomaly by hand.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <utility>

#include "core/history.h"

namespace lockcheck {

// The stored config and seed again, in the same results folder, with the stored fault schedule replayed
// (schedule.json's plan, when the folder has one); says how far the new run's fault timeline matched the old one
// (and records it in the new results.json under "rerun").
//
// run_dir may also be a minimal reproduction's folder (RUN/repro/, written by `lockcheck reproduce`: config.json,
// schedule.json, command.txt, tried.json; no history): its case is run once beside RUN (in RUN's results folder)
// and compared with what reproduce found: whether the anomaly kind came back (it came back in R of N tries there,
// so one run may miss it) and how many of the schedule's faults started. Recorded under "rerun" as well.
// dry_run: read and resolve as the run would, print the plan, run and write nothing.
// Returns the new run's exit status (core/exit_codes.h; 1 when the anomaly is there).
// no_progress: no progress line, whatever the stored run had.
int rerun(const std::string& run_dir, std::ostream& out, bool dry_run = false, bool no_progress = false);

// What a fault was aimed at, as a role rather than the names the aim happened to pick: "holder" (the client
// slots of a holder-targeted client fault), "holder's nodes" (a node fault aimed at the nodes holding the
// holder's key), "every client", "random client" / "random nodes" (not aimed: the seed's plan), "none".
// op: a nemesis start op (its value's targets and detail.aimed).
std::string fault_role(const Op& op);

// A fault start as rerun and reproduce compare it: {"f", "fault", "mode", "role"}; mode is detail.mode when the
// nemesis has modes, else null.
nlohmann::json fault_signature(const Op& op);

// How many of the old run's faults (nemesis start ops) the new run repeated in the same order (the longest
// common subsequence of their signatures), out of how many: holder targeting picks another client or node
// when another process holds the lock at that moment, and that is still the same fault.
std::pair<size_t, size_t> fault_timeline_match(const History& old_run, const History& new_run);

}  // namespace lockcheck
