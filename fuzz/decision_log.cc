// Fuzz target: decision-log parsing and the regression diff
// (sim/decision_log.h, the `heatsink-sim diff` tool).
//
// The input holds two logs A and B separated by a line "~~~" (without the
// separator, B is A with its lines in reverse order). Checked:
// - parsing either fails with INVALID_ARGUMENT naming the source, or every
//   record round-trips: FormatDecisionJson of the parsed record carries the
//   same value in every documented field as the line it came from, and parses
//   back to the same text;
// - DiffDecisionLogs(A, A) is equal; for A and B, every record of A is
//   matched or removed, every record of B is matched or added, changed
//   records are matched ones, and swapping the logs swaps added and removed;
// - FormatDecisionDiff renders without failing and states the totals.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/base/check.h"
#include "core/replication/decision.h"
#include "nlohmann/json.hpp"
#include "sim/decision_log.h"

namespace heatsink::sim {
namespace {

constexpr const char* kFields[] = {"t_ns",    "kind",           "tenant",         "key",
                                   "requester_domain", "target_domain", "outcome", "reason",
                                   "source_segment", "target_segment", "lease_id", "version"};

DecisionLogLimits Limits() {
  DecisionLogLimits limits;
  limits.line_bytes_max = 1024;
  limits.records_max = 64;
  return limits;
}

absl::StatusOr<std::vector<LoggedDecision>> Parse(const std::string& text,
                                                  const std::string& source) {
  absl::StatusOr<std::vector<LoggedDecision>> log = ParseDecisionLog(text, source, Limits());
  if (!log.ok()) {
    HS_CHECK_MSG(log.status().code() == absl::StatusCode::kInvalidArgument,
                 log.status().ToString());
    HS_CHECK_MSG(absl::StartsWith(log.status().message(), source + ":"),
                 log.status().ToString());
    return log;
  }
  for (const LoggedDecision& d : *log) {
    const std::string formatted = FormatDecisionJson(d.record);
    const nlohmann::json original = nlohmann::json::parse(d.text, nullptr, false);
    const nlohmann::json again = nlohmann::json::parse(formatted, nullptr, false);
    HS_CHECK(!original.is_discarded() && !again.is_discarded());
    for (const char* field : kFields) {
      // Compared as text: nlohmann's == equates unsigned 2^64-1 with -1.
      HS_CHECK_MSG(original.at(field).dump() == again.at(field).dump(),
                   absl::StrCat("field ", field, " changed: ", d.text, " -> ", formatted));
    }
    const absl::StatusOr<std::vector<LoggedDecision>> reparsed =
        ParseDecisionLog(formatted, "formatted", Limits());
    HS_CHECK_MSG(reparsed.ok() && reparsed->size() == 1, formatted);
    HS_CHECK(FormatDecisionJson((*reparsed)[0].record) == formatted);
  }
  return log;
}

void CheckDiff(const std::vector<LoggedDecision>& a, const std::vector<LoggedDecision>& b) {
  const DecisionDiff ab = DiffDecisionLogs(a, b);
  const DecisionDiff ba = DiffDecisionLogs(b, a);
  const size_t matched = a.size() - ab.removed.size();
  HS_CHECK(ab.removed.size() <= a.size());
  HS_CHECK(ab.added.size() + matched == b.size());
  HS_CHECK(ab.changed.size() <= matched);
  HS_CHECK(ba.added.size() == ab.removed.size() && ba.removed.size() == ab.added.size());
  HS_CHECK(ba.changed.size() == ab.changed.size());
  for (const DecisionChange& c : ab.removed) HS_CHECK(c.a != nullptr && c.b == nullptr);
  for (const DecisionChange& c : ab.added) HS_CHECK(c.a == nullptr && c.b != nullptr);
  for (const DecisionChange& c : ab.changed) {
    HS_CHECK(c.a != nullptr && c.b != nullptr);
    HS_CHECK(FormatDecisionJson(c.a->record) != FormatDecisionJson(c.b->record));
  }
  const std::string report = FormatDecisionDiff(ab, a, b, "a.jsonl", "b.jsonl", /*keys_max=*/2);
  if (ab.equal()) {
    HS_CHECK(absl::StartsWith(report, absl::StrCat("decision logs equal: ", a.size())));
  } else {
    HS_CHECK(absl::StartsWith(report, absl::StrCat("decision logs differ: ", ab.added.size(),
                                                   " added, ", ab.removed.size(), " removed, ",
                                                   ab.changed.size(), " changed")));
    HS_CHECK(absl::StrContains(report, "first divergence"));
  }
}

void Run(absl::string_view input) {
  std::string text_a;
  std::string text_b;
  if (const size_t sep = input.find("\n~~~\n"); sep != absl::string_view::npos) {
    text_a = std::string(input.substr(0, sep + 1));
    text_b = std::string(input.substr(sep + 5));
  } else {
    text_a = std::string(input);
    std::vector<absl::string_view> lines = absl::StrSplit(input, '\n');
    std::reverse(lines.begin(), lines.end());
    text_b = absl::StrJoin(lines, "\n");
  }
  const absl::StatusOr<std::vector<LoggedDecision>> a = Parse(text_a, "a.jsonl");
  if (!a.ok()) return;
  const DecisionDiff self = DiffDecisionLogs(*a, *a);
  HS_CHECK_MSG(self.equal(), "a log differs from itself");
  const absl::StatusOr<std::vector<LoggedDecision>> b = Parse(text_b, "b.jsonl");
  if (!b.ok()) return;
  CheckDiff(*a, *b);
}

}  // namespace
}  // namespace heatsink::sim

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  heatsink::sim::Run(absl::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
