// Covers decision-log parsing and the regression diff: identical logs,
// reordered equal-time records, a changed reason, a missing record,
// malformed lines reported with their line number, and times outside the
// int64 range rejected.
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/decision_log.h"

namespace heatsink::sim {
namespace {

std::string Rec(int64_t t, const std::string& key, const std::string& outcome,
                const std::string& reason = "null") {
  return absl::StrCat("{\"t_ns\":", t, ",\"kind\":\"heat\",\"tenant\":\"default\",\"key\":\"", key,
                      "\",\"requester_domain\":null,\"target_domain\":null,\"outcome\":\"",
                      outcome, "\",\"reason\":", reason,
                      ",\"source_segment\":null,\"target_segment\":null,\"lease_id\":null,"
                      "\"version\":1}\n");
}

std::vector<LoggedDecision> Parse(const std::string& text) {
  auto r = ParseDecisionLog(text, "x.jsonl");
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : std::vector<LoggedDecision>{};
}

TEST(DecisionDiff, IdenticalLogsAreEqual) {
  const std::string text = Rec(1, "a", "accepted") + Rec(2, "b", "rejected", "\"pending\"");
  const auto a = Parse(text);
  const auto b = Parse(text);
  const DecisionDiff d = DiffDecisionLogs(a, b);
  EXPECT_TRUE(d.equal());
  EXPECT_NE(FormatDecisionDiff(d, a, b, "A", "B").find("equal: 2 records"), std::string::npos);
}

TEST(DecisionDiff, ReorderedEqualTimeRecordsAreEqual) {
  const auto a = Parse(Rec(5, "a", "accepted") + Rec(5, "b", "accepted"));
  const auto b = Parse(Rec(5, "b", "accepted") + Rec(5, "a", "accepted"));
  EXPECT_TRUE(DiffDecisionLogs(a, b).equal());
}

TEST(DecisionDiff, ChangedReasonIsReportedWithContext) {
  const auto a = Parse(Rec(1, "x", "accepted") + Rec(7, "k", "rejected", "\"cooldown\""));
  const auto b = Parse(Rec(1, "x", "accepted") + Rec(7, "k", "rejected", "\"replica_limit\""));
  const DecisionDiff d = DiffDecisionLogs(a, b);
  ASSERT_EQ(d.changed.size(), 1u);
  EXPECT_TRUE(d.added.empty());
  EXPECT_TRUE(d.removed.empty());
  const std::string report = FormatDecisionDiff(d, a, b, "golden", "actual");
  EXPECT_NE(report.find("first divergence (changed) at t_ns=7 key default/k"), std::string::npos)
      << report;
  EXPECT_NE(report.find("rejected/cooldown"), std::string::npos);
  EXPECT_NE(report.find("rejected/replica_limit"), std::string::npos);
  EXPECT_NE(report.find("golden:2 > "), std::string::npos) << report;
  EXPECT_NE(report.find("actual:2 > "), std::string::npos) << report;
}

TEST(DecisionDiff, MissingRecordIsRemovedAndExtraIsAdded) {
  const auto a = Parse(Rec(1, "a", "accepted") + Rec(2, "b", "accepted"));
  const auto b = Parse(Rec(1, "a", "accepted") + Rec(3, "c", "would_propose"));
  const DecisionDiff d = DiffDecisionLogs(a, b);
  ASSERT_EQ(d.removed.size(), 1u);
  ASSERT_EQ(d.added.size(), 1u);
  EXPECT_EQ(d.removed[0].a->record.key, "b");
  EXPECT_EQ(d.added[0].b->record.key, "c");
  const std::string report = FormatDecisionDiff(d, a, b, "A", "B");
  EXPECT_NE(report.find("first divergence (removed) at t_ns=2"), std::string::npos) << report;
}

// A record with its lease and version set, as a real master writes them.
std::string Leased(int64_t t, const std::string& key, int64_t lease, int64_t version) {
  return absl::StrCat("{\"t_ns\":", t, ",\"kind\":\"heat\",\"tenant\":\"default\",\"key\":\"", key,
                      "\",\"requester_domain\":null,\"target_domain\":\"b\",\"outcome\":"
                      "\"accepted\",\"reason\":null,\"source_segment\":1,\"target_segment\":2,"
                      "\"lease_id\":",
                      lease, ",\"version\":", version, "}\n");
}

TEST(DecisionDiff, ATimeToleranceMatchesRecordsThatCloseAndNoCloser) {
  const auto a = Parse(Rec(1'000, "k", "accepted") + Rec(5'000, "k", "accepted") +
                       Rec(9'000, "x", "accepted"));
  const auto b = Parse(Rec(1'400, "k", "accepted") + Rec(5'600, "k", "accepted") +
                       Rec(8'500, "x", "accepted"));
  EXPECT_EQ(DiffDecisionLogs(a, b).removed.size(), 3u);  // equal times only
  DecisionDiffOptions options;
  options.time_tolerance_ns = 500;
  const DecisionDiff d = DiffDecisionLogs(a, b, options);
  // k at 1,000 and 1,400 match, x at 9,000 and 8,500 match (at the
  // tolerance); k at 5,000 and 5,600 are 600 apart.
  ASSERT_EQ(d.removed.size(), 1u);
  ASSERT_EQ(d.added.size(), 1u);
  EXPECT_TRUE(d.changed.empty());
  EXPECT_EQ(d.removed[0].a->record.t_ns, 5'000);
  EXPECT_EQ(d.added[0].b->record.t_ns, 5'600);
  options.time_tolerance_ns = 600;
  EXPECT_TRUE(DiffDecisionLogs(a, b, options).equal());
}

TEST(DecisionDiff, RecordsPairUpInTimeOrderWhateverTheFileOrder) {
  // A real master's workers may write two decisions out of time order.
  const auto a = Parse(Rec(100, "k", "accepted") + Rec(300, "k", "rejected", "\"cooldown\""));
  const auto b = Parse(Rec(320, "k", "rejected", "\"cooldown\"") + Rec(90, "k", "accepted"));
  DecisionDiffOptions options;
  options.time_tolerance_ns = 50;
  EXPECT_TRUE(DiffDecisionLogs(a, b, options).equal());
  // Matched by time, a different outcome is a change, not a removal.
  const auto c = Parse(Rec(95, "k", "accepted") + Rec(310, "k", "rejected", "\"pending\""));
  const DecisionDiff d = DiffDecisionLogs(a, c, options);
  ASSERT_EQ(d.changed.size(), 1u);
  EXPECT_EQ(d.changed[0].a->record.t_ns, 300);
  EXPECT_EQ(d.changed[0].b->record.t_ns, 310);
}

TEST(DecisionDiff, IgnoredFieldsDoNotMakeAPairChanged) {
  const auto a = Parse(Leased(10, "k", 1, 7));
  const auto b = Parse(Leased(10, "k", 4'242, 3));
  EXPECT_EQ(DiffDecisionLogs(a, b).changed.size(), 1u);
  DecisionDiffOptions options;
  absl::StatusOr<std::vector<std::string>> fields = ParseIgnoredDecisionFields("lease_id");
  ASSERT_TRUE(fields.ok()) << fields.status();
  options.ignored_fields = *fields;
  EXPECT_EQ(DiffDecisionLogs(a, b, options).changed.size(), 1u);  // the versions differ
  fields = ParseIgnoredDecisionFields(" lease_id, version ");
  ASSERT_TRUE(fields.ok()) << fields.status();
  options.ignored_fields = *fields;
  EXPECT_TRUE(DiffDecisionLogs(a, b, options).equal());
  // The decision itself is never ignored, nor are times.
  for (const char* bad : {"outcome", "reason", "t_ns", "key", "lease"}) {
    const absl::StatusOr<std::vector<std::string>> r = ParseIgnoredDecisionFields(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(absl::StrCat("'", bad, "'")), std::string::npos)
        << r.status();
  }
  ASSERT_TRUE(ParseIgnoredDecisionFields("").ok());
  EXPECT_TRUE(ParseIgnoredDecisionFields("")->empty());
}

TEST(DecisionDiff, AReplayLogIsPlacedOnTheScenarioTimeLine) {
  // Steady-clock times from a run started at t0 = 5e12 at time scale 4.
  auto log = Parse(Rec(5'000'000'000'000 + 4'000, "k", "accepted") +
                   Rec(5'000'000'000'000 + 10, "j", "accepted"));
  PlaceOnScenarioTime(&log, 5'000'000'000'000, 4.0);
  EXPECT_EQ(log[0].record.t_ns, 1'000);
  EXPECT_EQ(log[1].record.t_ns, 3);  // 2.5 rounded away from zero
  EXPECT_TRUE(
      DiffDecisionLogs(Parse(Rec(1'000, "k", "accepted") + Rec(3, "j", "accepted")), log).equal());
}

TEST(DecisionLog, MalformedLineNamesItsLine) {
  const std::string text = Rec(1, "a", "accepted") + "{not json\n";
  const auto r = ParseDecisionLog(text, "bad.jsonl");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("bad.jsonl:2: not valid JSON"), absl::string_view::npos)
      << r.status();
}

TEST(DecisionLog, FieldErrorsNamed) {
  auto r = ParseDecisionLog("{\"t_ns\":1}\n", "f");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("f:1: missing field 'kind'"), absl::string_view::npos)
      << r.status();
  r = ParseDecisionLog(Rec(1, "a", "rejected", "\"no_such_reason\""), "f");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown reason 'no_such_reason'"), absl::string_view::npos);
  r = ParseDecisionLog(Rec(1, "a", "accepted", "\"pending\""), "f");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exactly when outcome is rejected"), absl::string_view::npos);
}

// Found by fuzz/decision_log.cc: a t_ns above INT64_MAX used to wrap to a
// negative time instead of being rejected.
TEST(DecisionLog, TimeAboveInt64IsRejected) {
  const std::string max = Rec(1, "a", "accepted");
  auto r = ParseDecisionLog(
      absl::StrCat("{\"t_ns\":9223372036854775807", max.substr(max.find(','))), "f");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].record.t_ns, std::numeric_limits<int64_t>::max());
  for (const char* t : {"9223372036854775808", "18446744073709551615"}) {
    r = ParseDecisionLog(absl::StrCat("{\"t_ns\":", t, max.substr(max.find(','))), "f");
    ASSERT_FALSE(r.ok()) << t;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("f:1: field 't_ns' must be an integer in the int64 range"),
              absl::string_view::npos)
        << r.status();
  }
}

TEST(DecisionLog, RoundTripsTheCoreEncoding) {
  DecisionRecord rec;
  rec.t_ns = 42;
  rec.kind = DecisionKind::kProposal;
  rec.tenant = "t";
  rec.key = "k\"q";
  rec.requester_domain = "b";
  rec.outcome = DecisionOutcome::kRejected;
  rec.reason = RejectReason::kTargetDomainHasReplica;
  rec.version = 3;
  const auto parsed = Parse(FormatDecisionJson(rec) + "\n");
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(FormatDecisionJson(parsed[0].record), FormatDecisionJson(rec));
}

TEST(DecisionLog, ReadsFilesAndReportsMissingOnes) {
  const std::string path = testing::TempDir() + "/decisions_test.jsonl";
  std::ofstream(path) << Rec(1, "a", "accepted");
  auto r = ReadDecisionLogFile(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->size(), 1u);
  EXPECT_EQ(ReadDecisionLogFile(path + ".missing").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace heatsink::sim
