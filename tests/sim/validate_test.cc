// Tests of `heatsink-sim validate`'s metrics (sim/validate.h) on small
// hand-written inputs: the Jaccard index of accepted decisions, the
// admission lag matched per decision key, relative errors, the runtime
// summary parser's errors (file and line, JSON path), and that a replay of
// another scenario or a malformed decision log is refused with the file and
// line named.
#include "sim/validate.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/runner.h"

namespace heatsink::sim {
namespace {

namespace fs = std::filesystem;

DecisionRecord Accepted(TimeNs t, const std::string& key, const std::string& requester,
                        const std::string& target) {
  DecisionRecord r;
  r.t_ns = t;
  r.tenant = "default";
  r.key = key;
  r.requester_domain = requester;
  r.target_domain = target;
  r.outcome = DecisionOutcome::kAccepted;
  return r;
}

DecisionRecord Rejected(TimeNs t, const std::string& key) {
  DecisionRecord r = Accepted(t, key, "b", "b");
  r.outcome = DecisionOutcome::kRejected;
  r.reason = RejectReason::kCooldown;
  return r;
}

TEST(ValidateMetrics, JaccardCountsIdentitiesOfAcceptedDecisionsOnly) {
  const std::vector<AcceptedDecision> sim = AcceptedDecisions(
      {Accepted(1, "k1", "b", "b"), Accepted(2, "k2", "b", "b"), Rejected(3, "k3"),
       Accepted(4, "k1", "b", "b")},
      0, 1.0);
  // The same key admitted into another domain is another identity.
  const std::vector<AcceptedDecision> runtime = AcceptedDecisions(
      {Accepted(10, "k1", "b", "b"), Accepted(11, "k2", "b", "a"), Accepted(12, "k3", "b", "b")},
      0, 1.0);
  // sim {k1/b, k2/b}; runtime {k1/b, k2/a, k3/b}: 1 common of 4.
  EXPECT_DOUBLE_EQ(DecisionJaccard(sim, runtime), 0.25);
  EXPECT_DOUBLE_EQ(DecisionJaccard(sim, sim), 1.0);
  EXPECT_DOUBLE_EQ(DecisionJaccard({}, {}), 1.0);
  EXPECT_DOUBLE_EQ(DecisionJaccard(sim, {}), 0.0);
}

TEST(ValidateMetrics, RuntimeTimesAreMappedOntoTheScenarioTimeLine) {
  // t0 = 1000 ns of steady clock; time scale 2: wall 1000 + 2 x 500.
  const std::vector<AcceptedDecision> d =
      AcceptedDecisions({Accepted(2000, "k", "b", "b")}, 1000, 2.0);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].t_ns, 500);
}

TEST(ValidateMetrics, LagMatchesTheIthAcceptanceOfAKeyWithTheIthAndIsSigned) {
  const std::vector<AcceptedDecision> sim = AcceptedDecisions(
      {Accepted(100, "k1", "b", "b"), Accepted(300, "k1", "b", "b"), Accepted(500, "k2", "b", "b"),
       Accepted(900, "only-sim", "b", "b")},
      0, 1.0);
  const std::vector<AcceptedDecision> runtime = AcceptedDecisions(
      {Accepted(110, "k1", "b", "b"), Accepted(330, "k1", "b", "b"), Accepted(480, "k2", "b", "b"),
       Accepted(50, "only-runtime", "b", "b")},
      0, 1.0);
  const LagStats lag = AdmissionLag(sim, runtime);
  EXPECT_EQ(lag.matched, 3);
  // Lags -20, 10, 30: the median (rank 2) is 10, p90 (rank 3) is 30.
  EXPECT_EQ(lag.median_ns, 10);
  EXPECT_EQ(lag.p90_ns, 30);
  EXPECT_EQ(AdmissionLag({}, runtime).matched, 0);
  EXPECT_EQ(AdmissionLag({}, runtime).median_ns, 0);
}

TEST(ValidateMetrics, RelativeErrorIsUndefinedOnlyWhenTheSimulationSaysZero) {
  EXPECT_DOUBLE_EQ(*RelativeError(100, 110), 0.1);
  EXPECT_DOUBLE_EQ(*RelativeError(100, 90), 0.1);
  EXPECT_DOUBLE_EQ(*RelativeError(0, 0), 0.0);
  EXPECT_FALSE(RelativeError(0, 5).has_value());
}

constexpr char kSummary[] = R"({
  "format_version": 1,
  "scenario": {"name": "s", "path": "s.json", "label": "runtime"},
  "seed": 7,
  "time_scale": 1.0,
  "duration_ns": 1000,
  "t0_steady_ns": 5000,
  "reads": {"count": 3, "misses": 0, "failed": 0,
            "latency_ns": {"samples": 3, "min": 1, "p50": 2, "p90": 3, "p99": 3, "p999": 3, "max": 3, "mean": 2}},
  "bytes_read": {"same_host": 1, "same_domain": 2, "cross_domain": 3, "total": 6},
  "host_load": {"total_bytes": 6, "hosts": [{"host": "h0", "domain": "a", "bytes_served": 6}]},
  "copies": {"completed": 2},
  "extra_memory_bytes": {"peak": 10, "final": 5}
})";

TEST(ValidateInput, ParsesTheReplaySummary) {
  absl::StatusOr<RuntimeSummary> s = ParseRuntimeSummary(kSummary, "dir/summary.json");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->scenario_name, "s");
  EXPECT_EQ(s->seed, 7u);
  EXPECT_EQ(s->t0_steady_ns, 5000);
  EXPECT_EQ(s->bytes_read.cross_domain, 3u);
  ASSERT_EQ(s->host_bytes_served.size(), 1u);
  EXPECT_EQ(s->host_bytes_served[0].first, "h0");
  EXPECT_EQ(*s->copies_completed, 2);
  EXPECT_EQ(s->extra_memory_peak_bytes, 10);
  EXPECT_EQ(s->latency_p50_ns, 2);
}

TEST(ValidateInput, BadJsonNamesTheFileAndLine) {
  const absl::StatusOr<RuntimeSummary> s =
      ParseRuntimeSummary("{\n  \"seed\": 7,\n  oops\n}\n", "dir/summary.json");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("dir/summary.json:3:"), std::string::npos) << s.status();
}

TEST(ValidateInput, AMissingOrMistypedFieldIsNamedByItsPath) {
  std::string text = kSummary;
  text.replace(text.find("\"cross_domain\": 3"), 17, "\"cross_domain\": \"3\"");
  absl::StatusOr<RuntimeSummary> s = ParseRuntimeSummary(text, "x.json");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("x.json: $.bytes_read.cross_domain: expected an integer"),
            std::string::npos)
      << s.status();
  std::string no_t0 = kSummary;
  no_t0.replace(no_t0.find("\"t0_steady_ns\": 5000,"), 21, "");
  s = ParseRuntimeSummary(no_t0, "x.json");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("x.json: $.t0_steady_ns: missing"), std::string::npos)
      << s.status();
}

class ValidateDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / absl::StrCat("heatsink_validate_", getpid());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  Scenario OneHost() {
    absl::StatusOr<Scenario> s = ParseScenario(
        R"({"name": "s", "duration_s": 1, "topology": {"domains": [{"name": "a", "hosts": [
             {"name": "h0", "segments": [{"name": "m", "capacity_bytes": "1MiB"}],
              "clients": [{"name": "c"}]}]}]}})",
        "s.json", "", SimulatorLoadOptions());
    EXPECT_TRUE(s.ok()) << s.status();
    return *s;
  }
  fs::path dir_;
};

TEST_F(ValidateDirTest, AMalformedDecisionLogIsNamedWithItsLine) {
  Write("summary.json", kSummary);
  Write("decisions.jsonl", "{\"t_ns\": 1}\nnot json\n");
  const absl::StatusOr<ValidationReport> r = ValidateAgainstRuntime(OneHost(), dir_.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find((dir_ / "decisions.jsonl").string() + ":1"),
            std::string::npos)
      << r.status();
}

TEST_F(ValidateDirTest, AReplayOfAnotherScenarioIsRefused) {
  std::string text = kSummary;
  text.replace(text.find("\"name\": \"s\""), 11, "\"name\": \"t\"");
  Write("summary.json", text);
  Write("decisions.jsonl", "");
  const absl::StatusOr<ValidationReport> r = ValidateAgainstRuntime(OneHost(), dir_.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("$.scenario.name: the replay ran \"t\""), std::string::npos)
      << r.status();
}

TEST_F(ValidateDirTest, AMissingSummaryIsNotFound) {
  const absl::StatusOr<ValidationReport> r = ValidateAgainstRuntime(OneHost(), dir_.string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("summary.json"), std::string::npos);
}

TEST_F(ValidateDirTest, ComparesAgainstTheSimulationOfTheScenario) {
  // A scenario without workloads: the simulation reads nothing and admits
  // nothing. The replay's summary says 6 bytes were read, all from h0.
  Write("summary.json", kSummary);
  Write("decisions.jsonl", "");
  const absl::StatusOr<ValidationReport> r = ValidateAgainstRuntime(OneHost(), dir_.string());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->seed, 7u);
  EXPECT_DOUBLE_EQ(r->jaccard, 1.0);
  bool saw_total = false;
  for (const ValidationRow& row : r->rows) {
    if (row.metric != "bytes_read.total") continue;
    saw_total = true;
    EXPECT_EQ(row.sim, 0);
    EXPECT_EQ(row.runtime, 6);
    EXPECT_FALSE(row.relative_error.has_value());
  }
  EXPECT_TRUE(saw_total);
  EXPECT_NE(FormatValidationTable(*r).find("Jaccard 1.0000"), std::string::npos);
  EXPECT_FALSE(r->calibrated);
  EXPECT_NE(ValidationJson(*r).find("reads.latency_ns.p50 (uncalibrated)"), std::string::npos);
}

TEST_F(ValidateDirTest, ACalibrationIsAppliedAndNamedInTheLatencyRows) {
  Write("summary.json", kSummary);
  Write("decisions.jsonl", "");
  const absl::StatusOr<Calibration> c =
      DeriveCalibration(10, 4096, 1 << 20, 200'000, 300'000, 700'000);
  ASSERT_TRUE(c.ok());
  const absl::StatusOr<ValidationReport> r = ValidateAgainstRuntime(OneHost(), dir_.string(), &*c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->calibrated);
  const std::string json = ValidationJson(*r);
  EXPECT_NE(json.find("\"calibrated\": true"), std::string::npos);
  EXPECT_NE(json.find("reads.latency_ns.p50 (calibrated)"), std::string::npos);
  EXPECT_EQ(json.find("(uncalibrated)"), std::string::npos);
}

// The page: the admission figures, four charts with both worlds side by side,
// every metric in the table, names escaped, the same bytes for the same report.
TEST(ValidateHtml, ChartsBothWorldsSideBySide) {
  ValidationReport r;
  r.scenario = "s<x>";
  r.seed = 7;
  r.sim_accepted = 2;
  r.runtime_accepted = 2;
  r.common_accepted = 1;
  r.jaccard = 1.0 / 3;
  r.lag = LagStats{1, 2'500'000, 2'500'000};
  r.sim_accepted_ns = {1'000'000'000, 2'000'000'000};
  r.runtime_accepted_ns = {1'002'500'000, 3'000'000'000};
  r.rows = {
      {"bytes_read.cross_domain", 8 << 20, 9 << 20, RelativeError(8 << 20, 9 << 20)},
      {"host_load.share.h0", 0.25, 0.5, 1.0},
      {"host_load.share.h1", 0.75, 0.5, 1.0 / 3},
      {"copies.completed", 0, 3, RelativeError(0, 3)},
      {"reads.latency_ns.p50 (uncalibrated)", 100'000, 150'000, 0.5},
  };
  const std::string page = ValidationHtml(r);
  EXPECT_EQ(page, ValidationHtml(r)) << "same report, same bytes";
  EXPECT_NE(page.find("Validation: s&lt;x&gt;"), std::string::npos);
  EXPECT_EQ(page.find("s<x>"), std::string::npos);
  EXPECT_NE(page.find("Jaccard 0.3333"), std::string::npos);
  EXPECT_NE(page.find("median 2.5 ms"), std::string::npos);
  size_t charts = 0;
  for (size_t at = page.find("<svg"); at != std::string::npos; at = page.find("<svg", at + 1)) {
    ++charts;
  }
  EXPECT_EQ(charts, 4u);
  for (const char* label : {"Accepted admissions over time", "Bytes read by distance",
                            "Share of the bytes served, by host", "Read latency", ">h0<", ">h1<",
                            ">cross_domain<", ">p50<", ">runtime<", ">sim<"}) {
    EXPECT_NE(page.find(label), std::string::npos) << label;
  }
  EXPECT_NE(page.find("12.50%"), std::string::npos);  // 9 MiB against 8 MiB
  EXPECT_NE(page.find("n/a"), std::string::npos);     // copies: sim made none
  // Each world's admissions are its own line.
  ValidationReport later = r;
  later.runtime_accepted_ns = {1'002'500'000, 4'000'000'000};
  EXPECT_NE(ValidationHtml(later), page);
}

}  // namespace
}  // namespace heatsink::sim
