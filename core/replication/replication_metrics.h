// File: core/replication/replication_metrics.h
//
// The aggregated metrics of dynamic replication (RFC "Observability", both
// stages), registered once in a MetricsRegistry under stable names. Labels
// are reasons and domains only, never keys, so cardinality stays
// bounded (the registry folds excess domains into "_overflow").
//
//   dynamic_replication_hot_read_observations_total     reads recorded in the heat window
//   dynamic_replication_triggers_enqueued_total         admission triggers queued
//   dynamic_replication_trigger_queue_overflows_total   triggers rejected at the queue limit
//   dynamic_replication_heat_reads_dropped_total        reads dropped by a full read buffer
//   dynamic_replication_would_propose_total             observe-mode complete decisions
//   dynamic_replication_admissions_accepted_total       accepted admissions (leases granted)
//   dynamic_replication_admissions_rejected_total{reason}
//   dynamic_replication_copy_tasks_created_total / _completed_total / _failed_total /
//     _revoked_total
//   dynamic_replication_replicas                        readable dynamic replicas now (gauge)
//   dynamic_replication_recreate_cooldown_hits_total    admissions stopped by recreate cooldown
//   dynamic_replication_rechecks_requeued_total         still-hot keys queued again (DESIGN 1)
//   dynamic_replication_rechecks_cooled_total           keys found cooled when looked at again
//   dynamic_replication_rechecks_at_cap_total           keys found at their cap when looked at again
//   dynamic_replication_recheck_overflows_total         re-evaluations lost to a full table
//   dynamic_replication_replicas_evicted_total          dynamic replicas dropped by eviction
//   dynamic_replication_replicas_released_total         dynamic replicas dropped by cold release
//   stage 2:
//   dynamic_replication_proposals_total{requester_domain,target_domain}
//   dynamic_replication_same_domain_copies_total / _cross_domain_copies_total
//   dynamic_replication_same_domain_copy_bytes_total / _cross_domain_copy_bytes_total
//   dynamic_replication_target_domain_suppressions_total{target_domain}
//   dynamic_replication_cross_domain_copies_in_flight   (gauge)
//   dynamic_replication_warmup_copies_total{target_domain}
//
// Unlabelled and reason series are registered up front, so counting
// them is one relaxed atomic add. Domain-labelled series are looked up in
// the registry (one mutex) per call: for background paths only.
//
// Thread safety: as MetricsRegistry (all methods thread-safe).
#ifndef HEATSINK_CORE_REPLICATION_REPLICATION_METRICS_H_
#define HEATSINK_CORE_REPLICATION_REPLICATION_METRICS_H_

#include <array>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "core/metrics/metrics.h"
#include "core/replication/decision.h"

namespace heatsink {

inline constexpr size_t kRejectReasonCount = static_cast<size_t>(RejectReason::kWarmupLimit) + 1;

class ReplicationMetrics {
 public:
  // `registry` must outlive this object.
  explicit ReplicationMetrics(MetricsRegistry& registry);
  ReplicationMetrics(const ReplicationMetrics&) = delete;
  ReplicationMetrics& operator=(const ReplicationMetrics&) = delete;

  Counter& hot_read_observations;
  Counter& triggers_enqueued;
  Counter& trigger_queue_overflows;
  Counter& heat_reads_dropped;
  Counter& would_propose;
  Counter& admissions_accepted;
  Counter& copy_tasks_created;
  Counter& copy_tasks_completed;
  Counter& copy_tasks_failed;
  Counter& copy_tasks_revoked;
  Gauge& dynamic_replicas;
  Counter& recreate_cooldown_hits;
  Gauge& cross_domain_copies_in_flight;
  Counter& rechecks_requeued;
  Counter& rechecks_cooled;
  Counter& rechecks_at_cap;
  Counter& recheck_overflows;
  Counter& dynamic_replicas_evicted;
  Counter& dynamic_replicas_released;

  Counter& Rejected(RejectReason reason) { return *rejected_[static_cast<size_t>(reason)]; }
  Counter& Copies(bool cross_domain) { return *copies_[cross_domain ? 1 : 0]; }
  Counter& CopyBytes(bool cross_domain) { return *copy_bytes_[cross_domain ? 1 : 0]; }
  // Domains are normalised ("" -> "default").
  Counter& Proposals(absl::string_view requester_domain, absl::string_view target_domain);
  Counter& Suppressions(absl::string_view target_domain);
  Counter& WarmupCopies(absl::string_view target_domain);

  // Counts one admission or warmup decision: would_propose, accepted or
  // rejected{reason} (a dropped record counts as evicted or released); a recreate_cooldown rejection also counts a recreate
  // cooldown hit, a target_domain_has_replica rejection a suppression; a
  // record that carries a requester or target domain (domain-aware
  // placement) also counts in proposals{requester_domain,target_domain},
  // with "none" for the absent one.
  void CountDecision(const DecisionRecord& record);

 private:
  MetricsRegistry& registry_;
  std::array<Counter*, kRejectReasonCount> rejected_{};
  std::array<Counter*, 2> copies_{};
  std::array<Counter*, 2> copy_bytes_{};
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_REPLICATION_REPLICATION_METRICS_H_
