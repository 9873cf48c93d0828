#include "core/replication/replication_metrics.h"

#include <string>

#include "core/model/ids.h"

namespace heatsink {
namespace {

// Separate families rather than a locality label: labels stay domains and
// reasons only.
constexpr absl::string_view kCopiesNames[2] = {"dynamic_replication_same_domain_copies_total",
                                               "dynamic_replication_cross_domain_copies_total"};
constexpr absl::string_view kCopyBytesNames[2] = {
    "dynamic_replication_same_domain_copy_bytes_total",
    "dynamic_replication_cross_domain_copy_bytes_total"};

}  // namespace

ReplicationMetrics::ReplicationMetrics(MetricsRegistry& registry)
    : hot_read_observations(registry.GetCounter(
          "dynamic_replication_hot_read_observations_total",
          "Reads recorded in the heat window (one per key read, never per replica)")),
      triggers_enqueued(registry.GetCounter("dynamic_replication_triggers_enqueued_total",
                                            "Admission triggers queued by the read path")),
      trigger_queue_overflows(
          registry.GetCounter("dynamic_replication_trigger_queue_overflows_total",
                              "Admission triggers rejected because the trigger queue was full")),
      heat_reads_dropped(registry.GetCounter(
          "dynamic_replication_heat_reads_dropped_total",
          "Reads not counted in the heat window because their read buffer was full")),
      would_propose(registry.GetCounter("dynamic_replication_would_propose_total",
                                        "Observe-mode admissions that would have proposed")),
      admissions_accepted(registry.GetCounter("dynamic_replication_admissions_accepted_total",
                                              "Accepted dynamic replication admissions")),
      copy_tasks_created(registry.GetCounter("dynamic_replication_copy_tasks_created_total",
                                             "Dynamic REPLICA_COPY tasks created")),
      copy_tasks_completed(registry.GetCounter("dynamic_replication_copy_tasks_completed_total",
                                               "Dynamic copies ended successfully")),
      copy_tasks_failed(registry.GetCounter("dynamic_replication_copy_tasks_failed_total",
                                            "Dynamic copies that failed")),
      copy_tasks_revoked(registry.GetCounter("dynamic_replication_copy_tasks_revoked_total",
                                             "Dynamic copies revoked")),
      dynamic_replicas(
          registry.GetGauge("dynamic_replication_replicas", "Readable dynamic replicas")),
      recreate_cooldown_hits(registry.GetCounter(
          "dynamic_replication_recreate_cooldown_hits_total",
          "Admissions rejected by the recreate cooldown after a dynamic replica was removed")),
      cross_domain_copies_in_flight(registry.GetGauge(
          "dynamic_replication_cross_domain_copies_in_flight",
          "Dynamic copies in flight whose source and target are in different domains")),
      rechecks_requeued(registry.GetCounter(
          "dynamic_replication_rechecks_requeued_total",
          "Keys still hot when evaluated again (cooldown end, copy end, retry): trigger queued")),
      rechecks_cooled(registry.GetCounter(
          "dynamic_replication_rechecks_cooled_total",
          "Keys evaluated again that had cooled below the hit count (nothing queued)")),
      rechecks_at_cap(registry.GetCounter(
          "dynamic_replication_rechecks_at_cap_total",
          "Keys evaluated again that held their replica cap by then (nothing queued)")),
      recheck_overflows(registry.GetCounter(
          "dynamic_replication_recheck_overflows_total",
          "Re-evaluations not scheduled because the recheck table was full")),
      dynamic_replicas_evicted(registry.GetCounter(
          "dynamic_replication_replicas_evicted_total",
          "Readable dynamic replicas dropped by eviction (before any object)")),
      dynamic_replicas_released(registry.GetCounter(
          "dynamic_replication_replicas_released_total",
          "Readable dynamic replicas dropped by the cold release")),
      registry_(registry) {
  for (size_t i = 0; i < kRejectReasonCount; ++i) {
    rejected_[i] = &registry.GetCounter(
        "dynamic_replication_admissions_rejected_total",
        "Rejected dynamic replication admissions by reason",
        {{"reason", std::string(RejectReasonName(static_cast<RejectReason>(i)))}});
  }
  for (size_t i = 0; i < 2; ++i) {
    copies_[i] =
        &registry.GetCounter(kCopiesNames[i], i == 0 ? "Completed same-domain dynamic copies"
                                                     : "Completed cross-domain dynamic copies");
    copy_bytes_[i] = &registry.GetCounter(
        kCopyBytesNames[i], i == 0 ? "Bytes of completed same-domain dynamic copies"
                                   : "Bytes of completed cross-domain dynamic copies");
  }
}

Counter& ReplicationMetrics::Proposals(absl::string_view requester_domain,
                                       absl::string_view target_domain) {
  return registry_.GetCounter("dynamic_replication_proposals_total",
                              "Admission decisions by requester and target domain",
                              {{"requester_domain", NormalizeDomain(requester_domain)},
                               {"target_domain", NormalizeDomain(target_domain)}});
}

Counter& ReplicationMetrics::Suppressions(absl::string_view target_domain) {
  return registry_.GetCounter(
      "dynamic_replication_target_domain_suppressions_total",
      "Cross-domain copies suppressed because the target domain already had a replica",
      {{"target_domain", NormalizeDomain(target_domain)}});
}

Counter& ReplicationMetrics::WarmupCopies(absl::string_view target_domain) {
  return registry_.GetCounter("dynamic_replication_warmup_copies_total",
                              "Warmup copies created, by target domain",
                              {{"target_domain", NormalizeDomain(target_domain)}});
}

void ReplicationMetrics::CountDecision(const DecisionRecord& record) {
  switch (record.outcome) {
    case DecisionOutcome::kAccepted:
      admissions_accepted.Add();
      break;
    case DecisionOutcome::kWouldPropose:
      would_propose.Add();
      break;
    case DecisionOutcome::kRejected:
      if (record.reason.has_value()) {
        Rejected(*record.reason).Add();
        if (*record.reason == RejectReason::kRecreateCooldown) recreate_cooldown_hits.Add();
        if (*record.reason == RejectReason::kTargetDomainHasReplica) {
          Suppressions(record.target_domain.value_or("")).Add();
        }
      }
      break;
    case DecisionOutcome::kDropped:
      (record.kind == DecisionKind::kRelease ? dynamic_replicas_released : dynamic_replicas_evicted)
          .Add();
      return;  // a drop is not an admission: no proposals series
  }
  if (record.requester_domain.has_value() || record.target_domain.has_value()) {
    Proposals(record.requester_domain.value_or("none"), record.target_domain.value_or("none"))
        .Add();
  }
}

}  // namespace heatsink
