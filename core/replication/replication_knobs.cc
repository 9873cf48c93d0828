#include "core/replication/replication_knobs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/replication/heat_read_buffer.h"

namespace heatsink {

absl::string_view DynamicReplicationModeName(DynamicReplicationMode m) {
  switch (m) {
    case DynamicReplicationMode::kOff:
      return "off";
    case DynamicReplicationMode::kObserve:
      return "observe";
    case DynamicReplicationMode::kEnforce:
      return "enforce";
  }
  HS_CHECK_MSG(false, "bad DynamicReplicationMode");
  return {};  // not reached; some sanitizer builds cannot prove it
}

std::optional<DynamicReplicationMode> ParseDynamicReplicationMode(absl::string_view word) {
  if (word == "off") return DynamicReplicationMode::kOff;
  if (word == "observe") return DynamicReplicationMode::kObserve;
  if (word == "enforce") return DynamicReplicationMode::kEnforce;
  return std::nullopt;
}

absl::string_view ReplicaSelectionPolicyName(ReplicaSelectionPolicy p) {
  switch (p) {
    case ReplicaSelectionPolicy::kFirst:
      return "first";
    case ReplicaSelectionPolicy::kSpread:
      return "spread";
  }
  HS_CHECK_MSG(false, "bad ReplicaSelectionPolicy");
  return {};  // not reached; some sanitizer builds cannot prove it
}

std::optional<ReplicaSelectionPolicy> ParseReplicaSelectionPolicy(absl::string_view word) {
  if (word == "first") return ReplicaSelectionPolicy::kFirst;
  if (word == "spread") return ReplicaSelectionPolicy::kSpread;
  return std::nullopt;
}

int64_t AdmissionHitCountFor(double qps_threshold, int64_t window_seconds) {
  HS_CHECK(std::isfinite(qps_threshold) && qps_threshold > 0.0);
  HS_CHECK(window_seconds >= 1);
  double product = qps_threshold * static_cast<double>(window_seconds);
  // A decimal threshold such as 1.1 is not exact in binary, so the product
  // may land a few ulps above the integer the operator meant; ceil would then
  // demand one read more. Snap products within a relative 1e-9 of an integer
  // to it: far above the rounding error of one multiplication (2^-52), far
  // below any threshold precision anyone configures.
  const double nearest = std::nearbyint(product);
  if (std::fabs(product - nearest) <= 1e-9 * std::fmax(1.0, std::fabs(product))) {
    product = nearest;
  }
  const double hits = std::ceil(product);
  if (hits >= 9.2e18) return std::numeric_limits<int64_t>::max();
  // RFC: at least one, so a tiny threshold or window never yields zero.
  return std::max<int64_t>(1, static_cast<int64_t>(hits));
}

int64_t ReplicationKnobs::AdmissionHitCount() const {
  return AdmissionHitCountFor(dynamic_replication_admission_qps_threshold,
                              dynamic_replication_heat_window_seconds);
}

int64_t ReplicationKnobs::target_utilization_cap_ppm() const {
  return std::llround(dynamic_replication_target_utilization_cap * 1e6);
}

namespace {

constexpr int64_t kSecondsPerDay = 86'400;
constexpr int64_t kMsPerWeek = 7 * kSecondsPerDay * 1'000;
// Bound for table and queue limits: large enough for any deployment, small
// enough that a typo (an extra digit or two) is caught.
constexpr int64_t kTableMaxLimit = int64_t{1} << 30;

absl::Status CheckRange(absl::string_view name, int64_t v, int64_t lo, int64_t hi) {
  if (v >= lo && v <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("knob ", name, " must be in [", lo, ", ", hi, "], got ", v));
}

}  // namespace

int32_t ReplicationKnobs::release_span_sub_buckets() const {
  const int64_t n = dynamic_replication_heat_window_sub_buckets;
  const int64_t window_ms = dynamic_replication_heat_window_seconds * 1'000;
  if (dynamic_replication_release_span_ms <= 0 || window_ms <= 0) return static_cast<int32_t>(n);
  // ceil(span / (window / n)): whole sub-buckets covering the span.
  const int64_t k = (dynamic_replication_release_span_ms * n + window_ms - 1) / window_ms;
  return static_cast<int32_t>(std::clamp<int64_t>(k, 1, n));
}

absl::Status ReplicationKnobs::Validate() const {
  struct Ranged {
    absl::string_view name;
    int64_t value;
    int64_t lo;
    int64_t hi;
  };
  const Ranged ranged[] = {
      {"dynamic_replication_heat_window_seconds", dynamic_replication_heat_window_seconds, 1,
       kSecondsPerDay},
      {"dynamic_replication_max_memory_replicas", dynamic_replication_max_memory_replicas, 1,
       1'024},
      {"dynamic_replication_heat_window_entries_max", dynamic_replication_heat_window_entries_max,
       1, kHeatWindowEntriesMaxLimit},
      {"dynamic_replication_heat_window_sub_buckets", dynamic_replication_heat_window_sub_buckets,
       1, kHeatWindowSubBucketsMax},
      {"dynamic_replication_heat_drain_interval_ms", dynamic_replication_heat_drain_interval_ms, 1,
       60'000},
      {"dynamic_replication_heat_read_buffer_records",
       dynamic_replication_heat_read_buffer_records, HeatReadBuffer::kRecordsPerStripeMin,
       HeatReadBuffer::kRecordsPerStripeMax},
      {"dynamic_replication_admission_cooldown_ms", dynamic_replication_admission_cooldown_ms, 0,
       kMsPerWeek},
      {"dynamic_replication_recreate_cooldown_ms", dynamic_replication_recreate_cooldown_ms, 0,
       kMsPerWeek},
      {"dynamic_replication_admission_retry_ms", dynamic_replication_admission_retry_ms, 1,
       kMsPerWeek},
      {"dynamic_replication_release_below_count", dynamic_replication_release_below_count, 1,
       kAdmissionHitCountMax},
      {"dynamic_replication_lease_ttl_ms", dynamic_replication_lease_ttl_ms, 1,
       kSecondsPerDay * 1'000},
      {"dynamic_replication_trigger_queue_max", dynamic_replication_trigger_queue_max, 1,
       kTableMaxLimit},
      {"dynamic_replication_pending_actions_max", dynamic_replication_pending_actions_max, 1,
       kTableMaxLimit},
      {"dynamic_replication_proposals_max", dynamic_replication_proposals_max, 1, kTableMaxLimit},
      {"dynamic_replication_cooldown_entries_max", dynamic_replication_cooldown_entries_max, 1,
       kTableMaxLimit},
      {"dynamic_replication_warmup_copies_in_flight_max",
       dynamic_replication_warmup_copies_in_flight_max, 1, kTableMaxLimit},
      {"dynamic_replication_warmup_bytes_per_second_max",
       dynamic_replication_warmup_bytes_per_second_max, 1, std::numeric_limits<int64_t>::max()},
      {"dynamic_replication_warmup_objects_max", dynamic_replication_warmup_objects_max, 1,
       kTableMaxLimit},
      {"dynamic_replication_warmup_domain_poll_ms", dynamic_replication_warmup_domain_poll_ms, 1,
       kSecondsPerDay * 1'000},
  };
  for (const Ranged& r : ranged) {
    if (absl::Status s = CheckRange(r.name, r.value, r.lo, r.hi); !s.ok()) return s;
  }
  if ((dynamic_replication_heat_read_buffer_records &
       (dynamic_replication_heat_read_buffer_records - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("knob dynamic_replication_heat_read_buffer_records (",
                     dynamic_replication_heat_read_buffer_records, ") must be a power of two"));
  }
  // Each sub-bucket must be a whole number of nanoseconds, or the window
  // would drift from its configured length.
  if (heat_window_ns() % dynamic_replication_heat_window_sub_buckets != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("knob dynamic_replication_heat_window_sub_buckets (",
                     dynamic_replication_heat_window_sub_buckets,
                     ") must divide the heat window in nanoseconds (",
                     dynamic_replication_heat_window_seconds, " s)"));
  }
  const double qps = dynamic_replication_admission_qps_threshold;
  if (!std::isfinite(qps) || qps <= 0.0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "knob dynamic_replication_admission_qps_threshold must be a finite number > 0, got ", qps));
  }
  const int64_t hits = AdmissionHitCount();
  if (hits > kAdmissionHitCountMax) {
    return absl::InvalidArgumentError(absl::StrCat(
        "admission hit count ceil(dynamic_replication_admission_qps_threshold x "
        "dynamic_replication_heat_window_seconds) = ",
        hits, " exceeds ", kAdmissionHitCountMax, " (the heat window's counter limit)"));
  }
  const double cap = dynamic_replication_target_utilization_cap;
  if (!std::isfinite(cap) || cap <= 0.0 || cap > 1.0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "knob dynamic_replication_target_utilization_cap must be in (0, 1], got ", cap));
  }
  if (absl::Status s = CheckRange("dynamic_replication_release_span_ms",
                                  dynamic_replication_release_span_ms, 0,
                                  dynamic_replication_heat_window_seconds * 1'000);
      !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(s.message(), " (at most dynamic_replication_heat_window_seconds)"));
  }
  if (dynamic_replication_release_enabled) {
    if (absl::Status s = CheckRange("dynamic_replication_release_after_ms",
                                    dynamic_replication_release_after_ms, 1, kMsPerWeek);
        !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(s.message(), " (dynamic_replication_release_enabled is on)"));
    }
  }
  // Warmup places copies per domain and skips domains that already hold a
  // replica; the replica limit it respects is the per-domain one. Without
  // domain-aware placement there is no such limit, so the pair is refused
  // (the RFC rolls warmup out after domain-aware placement).
  if (dynamic_replication_warmup_enabled && !dynamic_replication_domain_aware) {
    return absl::InvalidArgumentError(
        "knob dynamic_replication_warmup_enabled needs dynamic_replication_domain_aware: warmup "
        "copies into domains and is bounded by the per-domain replica limit");
  }
  return absl::OkStatus();
}

namespace {

KnobRegistry<ReplicationKnobs> MakeRegistry() {
  using K = ReplicationKnobs;
  KnobRegistry<K> r;
  r.Custom(
      "dynamic_replication_mode", "off | observe | enforce", KnobType::kString,
      [](K& k, absl::string_view v) -> absl::Status {
        const auto m = ParseDynamicReplicationMode(v);
        if (!m.has_value()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "knob dynamic_replication_mode: expected off, observe or enforce, got '", v, "'"));
        }
        k.dynamic_replication_mode = *m;
        return absl::OkStatus();
      },
      [](const K& k) {
        return std::string(DynamicReplicationModeName(k.dynamic_replication_mode));
      });
  r.Field("dynamic_replication_heat_window_seconds", "sliding heat window length, seconds",
          [](K& k) -> int64_t& { return k.dynamic_replication_heat_window_seconds; })
      .Field("dynamic_replication_admission_qps_threshold",
             "reads per second over the window that make a key hot",
             [](K& k) -> double& { return k.dynamic_replication_admission_qps_threshold; })
      .Field("dynamic_replication_max_memory_replicas",
             "cap on readable MEMORY replicas per object (per target domain when domain-aware)",
             [](K& k) -> int64_t& { return k.dynamic_replication_max_memory_replicas; })
      .Field("dynamic_replication_heat_window_entries_max", "keys tracked by the heat window",
             [](K& k) -> int64_t& { return k.dynamic_replication_heat_window_entries_max; })
      .Field("dynamic_replication_heat_window_sub_buckets",
             "steps the heat window slides in per window length",
             [](K& k) -> int64_t& { return k.dynamic_replication_heat_window_sub_buckets; })
      .Field("dynamic_replication_heat_drain_interval_ms",
             "longest delay from a read to its count in the heat window, ms",
             [](K& k) -> int64_t& { return k.dynamic_replication_heat_drain_interval_ms; })
      .Field("dynamic_replication_heat_read_buffer_records",
             "records per read-buffer stripe (power of two; full: the read is dropped and counted)",
             [](K& k) -> int64_t& { return k.dynamic_replication_heat_read_buffer_records; })
      .Field("dynamic_replication_admission_cooldown_ms",
             "per-key cooldown after an accepted admission, ms (0 disables)",
             [](K& k) -> int64_t& { return k.dynamic_replication_admission_cooldown_ms; })
      .Field("dynamic_replication_recreate_cooldown_ms",
             "per-object (per-domain) cooldown after a dynamic replica is removed, ms",
             [](K& k) -> int64_t& { return k.dynamic_replication_recreate_cooldown_ms; })
      .Field("dynamic_replication_admission_retry_ms",
             "delay before a still-hot key is evaluated again after a transient rejection, ms",
             [](K& k) -> int64_t& { return k.dynamic_replication_admission_retry_ms; })
      .Field("dynamic_replication_release_enabled",
             "drop dynamic replicas whose key stayed cold (beyond the RFC; off by default)",
             [](K& k) -> bool& { return k.dynamic_replication_release_enabled; })
      .Field("dynamic_replication_release_after_ms",
             "how long a dynamic replica's key must stay cold before it is released, ms",
             [](K& k) -> int64_t& { return k.dynamic_replication_release_after_ms; })
      .Field("dynamic_replication_release_below_count",
             "a dynamic replica is cold while its key has fewer reads than this in the window",
             [](K& k) -> int64_t& { return k.dynamic_replication_release_below_count; })
      .Field("dynamic_replication_release_span_ms",
             "how far back the release check counts reads, ms; 0: the whole heat window",
             [](K& k) -> int64_t& { return k.dynamic_replication_release_span_ms; })
      .Field("dynamic_replication_target_utilization_cap",
             "maximum target segment utilisation after the copy, in (0, 1]",
             [](K& k) -> double& { return k.dynamic_replication_target_utilization_cap; })
      .Field("dynamic_replication_target_heat_aware",
             "prefer targets hosting less admitted heat before less utilised ones (beyond the RFC)",
             [](K& k) -> bool& { return k.dynamic_replication_target_heat_aware; })
      .Field("dynamic_replication_domain_aware", "domain-aware admission and placement (stage 2)",
             [](K& k) -> bool& { return k.dynamic_replication_domain_aware; })
      .Field("dynamic_replication_lease_ttl_ms", "upper bound of a replica action lease, ms",
             [](K& k) -> int64_t& { return k.dynamic_replication_lease_ttl_ms; })
      .Field("dynamic_replication_trigger_queue_max", "admission triggers queued at most",
             [](K& k) -> int64_t& { return k.dynamic_replication_trigger_queue_max; })
      .Field("dynamic_replication_pending_actions_max", "pending dynamic actions at most",
             [](K& k) -> int64_t& { return k.dynamic_replication_pending_actions_max; })
      .Field("dynamic_replication_proposals_max", "remembered proposals at most",
             [](K& k) -> int64_t& { return k.dynamic_replication_proposals_max; })
      .Field("dynamic_replication_cooldown_entries_max", "entries per cooldown table at most",
             [](K& k) -> int64_t& { return k.dynamic_replication_cooldown_entries_max; });
  r.Custom(
      "replica_selection_policy", "reader-side replica choice: first | spread", KnobType::kString,
      [](K& k, absl::string_view v) -> absl::Status {
        const auto p = ParseReplicaSelectionPolicy(v);
        if (!p.has_value()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "knob replica_selection_policy: expected first or spread, got '", v, "'"));
        }
        k.replica_selection_policy = *p;
        return absl::OkStatus();
      },
      [](const K& k) {
        return std::string(ReplicaSelectionPolicyName(k.replica_selection_policy));
      });
  r.Field("dynamic_replication_warmup_enabled",
          "cross-domain warmup of hot objects (needs dynamic_replication_domain_aware)",
          [](K& k) -> bool& { return k.dynamic_replication_warmup_enabled; })
      .Field("dynamic_replication_warmup_copies_in_flight_max", "warmup copies in flight at most",
             [](K& k) -> int64_t& { return k.dynamic_replication_warmup_copies_in_flight_max; })
      .Field("dynamic_replication_warmup_bytes_per_second_max", "warmup copy bytes per second",
             [](K& k) -> int64_t& { return k.dynamic_replication_warmup_bytes_per_second_max; })
      .Field("dynamic_replication_warmup_objects_max", "objects one warmup considers at most",
             [](K& k) -> int64_t& { return k.dynamic_replication_warmup_objects_max; })
      .Field("dynamic_replication_warmup_domain_poll_ms",
             "period of the check for newly appeared domains to warm up, ms",
             [](K& k) -> int64_t& { return k.dynamic_replication_warmup_domain_poll_ms; });
  return r;
}

}  // namespace

const KnobRegistry<ReplicationKnobs>& ReplicationKnobs::Registry() {
  static const KnobRegistry<ReplicationKnobs>* const registry =
      new KnobRegistry<ReplicationKnobs>(MakeRegistry());
  return *registry;
}

ReplicationKnobs ReplicationKnobs::Production() { return ReplicationKnobs(); }

ReplicationKnobs ReplicationKnobs::TestMin() {
  ReplicationKnobs k;
  k.dynamic_replication_mode = DynamicReplicationMode::kEnforce;
  k.dynamic_replication_heat_window_seconds = 1;
  k.dynamic_replication_admission_qps_threshold = 2.0;
  k.dynamic_replication_heat_window_entries_max = 16;
  k.dynamic_replication_heat_window_sub_buckets = 4;
  k.dynamic_replication_admission_cooldown_ms = 1'000;
  k.dynamic_replication_recreate_cooldown_ms = 2'000;
  k.dynamic_replication_lease_ttl_ms = 500;
  k.dynamic_replication_admission_retry_ms = 250;
  k.dynamic_replication_trigger_queue_max = 4;
  k.dynamic_replication_pending_actions_max = 4;
  k.dynamic_replication_proposals_max = 4;
  k.dynamic_replication_cooldown_entries_max = 8;
  k.dynamic_replication_warmup_copies_in_flight_max = 1;
  k.dynamic_replication_warmup_bytes_per_second_max = 1024 * 1024;
  k.dynamic_replication_warmup_objects_max = 4;
  return k;
}

}  // namespace heatsink
