// File: sim/decision_log.h
//
// Reading decision logs (decisions.jsonl, format version 1, see
// docs/decision-log.md) and comparing two of them for CI regression.
//
// Records are matched by identity (t_ns, kind, tenant, key, requester_domain,
// target_domain); several records with one identity pair up in file order.
// Records with equal t_ns may therefore appear in either order in the two
// logs without counting as a difference. A matched pair whose other fields
// differ is "changed"; an unmatched record is "removed" (only in A) or
// "added" (only in B).
#ifndef HEATSINK_SIM_DECISION_LOG_H_
#define HEATSINK_SIM_DECISION_LOG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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

DecisionDiff DiffDecisionLogs(const std::vector<LoggedDecision>& a,
                              const std::vector<LoggedDecision>& b);

// Human report: totals, counts grouped by outcome/reason and by key (largest
// first, at most `keys_max` keys), and the first divergence in time order with
// the records around it from both logs.
std::string FormatDecisionDiff(const DecisionDiff& diff, const std::vector<LoggedDecision>& a,
                               const std::vector<LoggedDecision>& b, const std::string& name_a,
                               const std::string& name_b, int keys_max = 20);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_DECISION_LOG_H_
