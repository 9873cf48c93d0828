// Covers the replication metrics helper: every RFC series is registered
// under its stable name, decisions are counted per outcome and per reason,
// recreate-cooldown hits and target-domain suppressions are derived from
// reasons, stage-2 series carry domain labels (never keys), and the
// Prometheus rendering shows them.
#include "core/replication/replication_metrics.h"

#include <string>

#include "gtest/gtest.h"

namespace heatsink {
namespace {

DecisionRecord Decision(DecisionOutcome outcome,
                        std::optional<RejectReason> reason = std::nullopt) {
  DecisionRecord r;
  r.tenant = "t";
  r.key = "secret-key-name";
  r.outcome = outcome;
  r.reason = reason;
  return r;
}

TEST(ReplicationMetrics, CountsDecisionsPerOutcomeAndReason) {
  MetricsRegistry registry;
  ReplicationMetrics m(registry);
  m.CountDecision(Decision(DecisionOutcome::kAccepted));
  m.CountDecision(Decision(DecisionOutcome::kWouldPropose));
  m.CountDecision(Decision(DecisionOutcome::kWouldPropose));
  m.CountDecision(Decision(DecisionOutcome::kRejected, RejectReason::kCooldown));
  m.CountDecision(Decision(DecisionOutcome::kRejected, RejectReason::kRecreateCooldown));
  m.CountDecision(Decision(DecisionOutcome::kRejected, RejectReason::kRecreateCooldown));
  EXPECT_EQ(registry.Value("dynamic_replication_admissions_accepted_total"), 1);
  EXPECT_EQ(registry.Value("dynamic_replication_would_propose_total"), 2);
  EXPECT_EQ(
      registry.Value("dynamic_replication_admissions_rejected_total", {{"reason", "cooldown"}}), 1);
  EXPECT_EQ(registry.Value("dynamic_replication_admissions_rejected_total",
                           {{"reason", "recreate_cooldown"}}),
            2);
  EXPECT_EQ(
      registry.Value("dynamic_replication_admissions_rejected_total", {{"reason", "no_target"}}),
      0);
  EXPECT_EQ(registry.Value("dynamic_replication_recreate_cooldown_hits_total"), 2);
  // Stage-1 records carry no domains: no proposals-by-domain series.
  EXPECT_EQ(registry.Value("dynamic_replication_proposals_total",
                           {{"requester_domain", "none"}, {"target_domain", "none"}}),
            0);
}

TEST(ReplicationMetrics, EveryReasonHasItsOwnSeries) {
  MetricsRegistry registry;
  ReplicationMetrics m(registry);
  for (size_t i = 0; i < kRejectReasonCount; ++i) {
    m.Rejected(static_cast<RejectReason>(i)).Add(static_cast<int64_t>(i) + 1);
  }
  for (size_t i = 0; i < kRejectReasonCount; ++i) {
    const std::string word(RejectReasonName(static_cast<RejectReason>(i)));
    EXPECT_EQ(registry.Value("dynamic_replication_admissions_rejected_total", {{"reason", word}}),
              static_cast<int64_t>(i) + 1)
        << word;
  }
}

TEST(ReplicationMetrics, StageTwoSeriesCarryDomainLabels) {
  MetricsRegistry registry;
  ReplicationMetrics m(registry);
  DecisionRecord accepted = Decision(DecisionOutcome::kAccepted);
  accepted.requester_domain = "b";
  accepted.target_domain = "b";
  m.CountDecision(accepted);
  DecisionRecord suppressed =
      Decision(DecisionOutcome::kRejected, RejectReason::kTargetDomainHasReplica);
  suppressed.requester_domain = "b";
  suppressed.target_domain = "b";
  m.CountDecision(suppressed);
  m.Copies(/*cross_domain=*/true).Add();
  m.CopyBytes(/*cross_domain=*/true).Add(4096);
  m.Copies(/*cross_domain=*/false).Add(2);
  m.WarmupCopies("").Add();
  m.cross_domain_copies_in_flight.Add(1);
  EXPECT_EQ(registry.Value("dynamic_replication_proposals_total",
                           {{"requester_domain", "b"}, {"target_domain", "b"}}),
            2);
  EXPECT_EQ(registry.Value("dynamic_replication_target_domain_suppressions_total",
                           {{"target_domain", "b"}}),
            1);
  EXPECT_EQ(registry.Value("dynamic_replication_cross_domain_copies_total"), 1);
  EXPECT_EQ(registry.Value("dynamic_replication_same_domain_copies_total"), 2);
  EXPECT_EQ(registry.Value("dynamic_replication_cross_domain_copy_bytes_total"), 4096);
  EXPECT_EQ(registry.Value("dynamic_replication_same_domain_copy_bytes_total"), 0);
  EXPECT_EQ(
      registry.Value("dynamic_replication_warmup_copies_total", {{"target_domain", "default"}}), 1);
  EXPECT_EQ(registry.Value("dynamic_replication_cross_domain_copies_in_flight"), 1);
}

TEST(ReplicationMetrics, LabelsAreReasonsAndDomainsOnly) {
  MetricsRegistry registry;
  ReplicationMetrics m(registry);
  DecisionRecord r = Decision(DecisionOutcome::kRejected, RejectReason::kTargetDomainHasReplica);
  r.requester_domain = "a";
  r.target_domain = "b";
  m.CountDecision(r);
  m.WarmupCopies("c").Add();
  for (const MetricFamily& f : registry.Snapshot()) {
    for (const MetricSample& s : f.samples) {
      for (const auto& [label, value] : s.labels) {
        EXPECT_TRUE(label == "reason" || label == "requester_domain" || label == "target_domain")
            << f.name << " has label " << label;
      }
    }
  }
}

TEST(ReplicationMetrics, RendersEveryRfcSeriesAndNoKeys) {
  MetricsRegistry registry;
  ReplicationMetrics m(registry);
  m.hot_read_observations.Add(3);
  m.copy_tasks_created.Add();
  m.copy_tasks_completed.Add();
  m.copy_tasks_failed.Add();
  m.copy_tasks_revoked.Add();
  m.dynamic_replicas.Set(5);
  m.CountDecision(Decision(DecisionOutcome::kAccepted));
  const std::string text = RenderPrometheusText(registry.Snapshot());
  for (const char* name : {"heatsink_dynamic_replication_hot_read_observations_total 3",
                           "heatsink_dynamic_replication_would_propose_total",
                           "heatsink_dynamic_replication_admissions_accepted_total 1",
                           "heatsink_dynamic_replication_admissions_rejected_total{reason=",
                           "heatsink_dynamic_replication_copy_tasks_created_total 1",
                           "heatsink_dynamic_replication_copy_tasks_completed_total 1",
                           "heatsink_dynamic_replication_copy_tasks_failed_total 1",
                           "heatsink_dynamic_replication_copy_tasks_revoked_total 1",
                           "heatsink_dynamic_replication_replicas 5",
                           "heatsink_dynamic_replication_recreate_cooldown_hits_total"}) {
    EXPECT_NE(text.find(name), std::string::npos) << name;
  }
  EXPECT_EQ(text.find("secret-key-name"), std::string::npos);
}

TEST(ReplicationMetrics, TwoHelpersOnOneRegistryShareSeries) {
  MetricsRegistry registry;
  ReplicationMetrics a(registry);
  ReplicationMetrics b(registry);
  a.hot_read_observations.Add();
  b.hot_read_observations.Add();
  EXPECT_EQ(&a.hot_read_observations, &b.hot_read_observations);
  EXPECT_EQ(registry.Value("dynamic_replication_hot_read_observations_total"), 2);
}

}  // namespace
}  // namespace heatsink
