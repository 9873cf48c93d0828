// File: sim/decision_log.h
//
// Reading decision logs (decisions.jsonl, format version 1, see
// docs/decision-log.md) and comparing two of them for CI regression.
//
// Records are matched by identity (t_ns, kind, tenant, key, requester_domain,
// target_domain); several records with one identity pair up in file order.
// Records with equal t_ns may therefore appear in either order in the two
// logs without counting as a difference. With a time tolerance
// (DecisionDiffOptions), records of the same kind, tenant, key and domains
// match when their times are that close. A matched pair whose other fields
// differ is "changed"; an unmatched record is "removed" (only in A) or
// "added" (only in B).
#ifndef HEATSINK_SIM_DECISION_LOG_H_
#define HEATSINK_SIM_DECISION_LOG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/replication/decision.h"

namespace heatsink::sim {

struct LoggedDecision {
  DecisionRecord record;
  int64_t line = 0;     // 1-based line in its file
  std::string text;     // the line as written
};

// Limits that keep a malformed or hostile file from exhausting memory.
struct DecisionLogLimits {
  int64_t line_bytes_max = 64 * 1024;
  int64_t records_max = 50'000'000;
};

// Parses JSONL text. Errors are INVALID_ARGUMENT naming `source_name`, the
// line and what is wrong (not JSON, missing field, wrong type, unknown
// outcome or reason word, reason present with a non-rejected outcome).
absl::StatusOr<std::vector<LoggedDecision>> ParseDecisionLog(
    const std::string& text, const std::string& source_name,
    const DecisionLogLimits& limits = {});
absl::StatusOr<std::vector<LoggedDecision>> ReadDecisionLogFile(
    const std::string& path, const DecisionLogLimits& limits = {});

struct DecisionChange {
  const LoggedDecision* a = nullptr;  // null for added
  const LoggedDecision* b = nullptr;  // null for removed
};

struct DecisionDiff {
  std::vector<DecisionChange> added;
  std::vector<DecisionChange> removed;
  std::vector<DecisionChange> changed;
  bool equal() const { return added.empty() && removed.empty() && changed.empty(); }
};

// How DiffDecisionLogs matches and compares records. The defaults are the
// regression setting: equal times, every field compared.
struct DecisionDiffOptions {
  // Records of one identity match when their times differ by at most this
  // much; among candidates they pair up in time order (a log from real
  // processes decides the same thing a little earlier or later).
  // REQUIRES: >= 0.
  int64_t time_tolerance_ns = 0;
  // Fields a matched pair may differ in without counting as changed: any of
  // version, lease_id, source_segment, target_segment (ids and versions the
  // runtime numbers its own way). See ParseIgnoredDecisionFields.
  std::vector<std::string> ignored_fields;
};

// A comma-separated list of fields to ignore; INVALID_ARGUMENT naming a
// field that cannot be ignored.
absl::StatusOr<std::vector<std::string>> ParseIgnoredDecisionFields(absl::string_view list);

// Moves the records of a heatsink-replay decision log, which carry the
// master's steady-clock times, onto the scenario's time line:
// t -> round((t - t0_steady_ns) / time_scale), with t0_steady_ns and
// time_scale from the replay's summary.json. REQUIRES: time_scale > 0.
void PlaceOnScenarioTime(std::vector<LoggedDecision>* log, int64_t t0_steady_ns, double time_scale);

DecisionDiff DiffDecisionLogs(const std::vector<LoggedDecision>& a,
                              const std::vector<LoggedDecision>& b,
                              const DecisionDiffOptions& options = {});

// Human report: totals, counts grouped by outcome/reason and by key (largest
// first, at most `keys_max` keys), and the first divergence in time order with
// the records around it from both logs.
std::string FormatDecisionDiff(const DecisionDiff& diff, const std::vector<LoggedDecision>& a,
                               const std::vector<LoggedDecision>& b, const std::string& name_a,
                               const std::string& name_b, int keys_max = 20);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_DECISION_LOG_H_
