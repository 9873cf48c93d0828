// Covers ReplicationKnobs: the RFC's names and defaults, the admission hit
// count arithmetic (decimal thresholds that are inexact in binary, the
// minimum of one), Validate() messages for every range, and the name
// registry (enum knobs, dump and reload).
#include "core/replication/replication_knobs.h"

#include <cstdint>
#include <limits>
#include <string>

#include "gtest/gtest.h"

namespace heatsink {
namespace {

TEST(ReplicationKnobs, DefaultsFollowTheRfc) {
  const ReplicationKnobs k;
  EXPECT_EQ(k.dynamic_replication_mode, DynamicReplicationMode::kOff);
  EXPECT_EQ(k.dynamic_replication_heat_window_seconds, 10);
  EXPECT_DOUBLE_EQ(k.dynamic_replication_admission_qps_threshold, 0.8);
  EXPECT_EQ(k.dynamic_replication_max_memory_replicas, 2);
  EXPECT_EQ(k.dynamic_replication_heat_window_entries_max, 50'000);
  EXPECT_EQ(k.dynamic_replication_admission_cooldown_ms, 30'000);
  EXPECT_EQ(k.dynamic_replication_recreate_cooldown_ms, 60'000);
  EXPECT_DOUBLE_EQ(k.dynamic_replication_target_utilization_cap, 0.85);
  EXPECT_EQ(k.dynamic_replication_lease_ttl_ms, 30'000);
  EXPECT_FALSE(k.dynamic_replication_domain_aware);
  EXPECT_FALSE(k.dynamic_replication_warmup_enabled);
  EXPECT_EQ(k.replica_selection_policy, ReplicaSelectionPolicy::kFirst);
  EXPECT_EQ(k.AdmissionHitCount(), 8);
  EXPECT_EQ(k.target_utilization_cap_ppm(), 850'000);
  EXPECT_TRUE(ReplicationKnobs::Production().Validate().ok());
  EXPECT_TRUE(ReplicationKnobs::TestMin().Validate().ok());
  EXPECT_EQ(ReplicationKnobs::TestMin().AdmissionHitCount(), 2);
}

TEST(AdmissionHitCount, DecimalThresholdsGiveTheIntendedInteger) {
  EXPECT_EQ(AdmissionHitCountFor(0.8, 10), 8);
  EXPECT_EQ(AdmissionHitCountFor(0.3, 10), 3);
  EXPECT_EQ(AdmissionHitCountFor(2.0, 1), 2);
  // In IEEE doubles 0.07 * 100 == 7.000000000000001, 1.1 * 100 ==
  // 110.00000000000001 and 8.3 * 30 == 249.00000000000003; a bare ceil
  // would demand one read more than the operator configured.
  volatile double q = 0.07;  // keep the products out of constant folding
  ASSERT_GT(q * 100, 7.0);
  q = 1.1;
  ASSERT_GT(q * 100, 110.0);
  q = 8.3;
  ASSERT_GT(q * 30, 249.0);
  EXPECT_EQ(AdmissionHitCountFor(0.07, 100), 7);
  EXPECT_EQ(AdmissionHitCountFor(1.1, 100), 110);
  EXPECT_EQ(AdmissionHitCountFor(8.3, 30), 249);
  EXPECT_EQ(AdmissionHitCountFor(0.55, 100), 55);
}

TEST(AdmissionHitCount, RoundsUpGenuineFractions) {
  EXPECT_EQ(AdmissionHitCountFor(0.85, 10), 9);     // 8.5
  EXPECT_EQ(AdmissionHitCountFor(0.81, 10), 9);     // 8.1
  EXPECT_EQ(AdmissionHitCountFor(1.0001, 10), 11);  // 10.001 is not within 1e-9 of 10
}

TEST(AdmissionHitCount, TinyValuesGiveOne) {
  EXPECT_EQ(AdmissionHitCountFor(0.01, 10), 1);
  EXPECT_EQ(AdmissionHitCountFor(1e-9, 1), 1);
  EXPECT_EQ(AdmissionHitCountFor(1e-300, 1), 1);
}

TEST(AdmissionHitCount, SaturatesInsteadOfOverflowing) {
  EXPECT_EQ(AdmissionHitCountFor(1e300, 10), INT64_MAX);
}

ReplicationKnobs Valid() { return ReplicationKnobs::Production(); }

void ExpectInvalid(const ReplicationKnobs& k, const std::string& knob_name) {
  const absl::Status s = k.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << knob_name;
  EXPECT_NE(std::string(s.message()).find(knob_name), std::string::npos) << s.message();
}

TEST(ReplicationKnobs, ValidateRejectsOutOfRangeValues) {
  {
    auto k = Valid();
    k.dynamic_replication_heat_drain_interval_ms = 0;
    ExpectInvalid(k, "dynamic_replication_heat_drain_interval_ms");
  }
  {
    auto k = Valid();
    k.dynamic_replication_heat_read_buffer_records = 8;
    ExpectInvalid(k, "dynamic_replication_heat_read_buffer_records");
  }
  {
    auto k = Valid();
    k.dynamic_replication_heat_read_buffer_records = 1'000;
    ExpectInvalid(k, "power of two");
  }
  {
    auto k = Valid();
    k.dynamic_replication_heat_window_seconds = 0;
    ExpectInvalid(k, "dynamic_replication_heat_window_seconds");
  }
  {
    auto k = Valid();
    k.dynamic_replication_admission_qps_threshold = 0;
    ExpectInvalid(k, "dynamic_replication_admission_qps_threshold");
  }
  {
    auto k = Valid();
    k.dynamic_replication_admission_qps_threshold = -1;
    ExpectInvalid(k, "dynamic_replication_admission_qps_threshold");
  }
  {
    auto k = Valid();
    k.dynamic_replication_admission_qps_threshold = std::numeric_limits<double>::quiet_NaN();
    ExpectInvalid(k, "dynamic_replication_admission_qps_threshold");
  }
  {
    auto k = Valid();
    k.dynamic_replication_admission_qps_threshold = 10'000;  // 100'000 hits > 65'535
    ExpectInvalid(k, "admission hit count");
  }
  {
    auto k = Valid();
    k.dynamic_replication_max_memory_replicas = 0;
    ExpectInvalid(k, "dynamic_replication_max_memory_replicas");
  }
  {
    auto k = Valid();
    k.dynamic_replication_heat_window_entries_max = 0;
    ExpectInvalid(k, "dynamic_replication_heat_window_entries_max");
  }
  {
    auto k = Valid();
    k.dynamic_replication_heat_window_entries_max = kHeatWindowEntriesMaxLimit + 1;
    ExpectInvalid(k, "dynamic_replication_heat_window_entries_max");
  }
  {
    auto k = Valid();
    k.dynamic_replication_heat_window_sub_buckets = kHeatWindowSubBucketsMax + 1;
    ExpectInvalid(k, "dynamic_replication_heat_window_sub_buckets");
  }
  {
    auto k = Valid();
    k.dynamic_replication_heat_window_seconds = 1;
    k.dynamic_replication_heat_window_sub_buckets = 3;  // 1e9 ns is not divisible by 3
    ExpectInvalid(k, "dynamic_replication_heat_window_sub_buckets");
  }
  {
    auto k = Valid();
    k.dynamic_replication_recreate_cooldown_ms = -1;
    ExpectInvalid(k, "dynamic_replication_recreate_cooldown_ms");
  }
  {
    auto k = Valid();
    k.dynamic_replication_target_utilization_cap = 0;
    ExpectInvalid(k, "dynamic_replication_target_utilization_cap");
  }
  {
    auto k = Valid();
    k.dynamic_replication_target_utilization_cap = 1.5;
    ExpectInvalid(k, "dynamic_replication_target_utilization_cap");
  }
  {
    auto k = Valid();
    k.dynamic_replication_trigger_queue_max = 0;
    ExpectInvalid(k, "dynamic_replication_trigger_queue_max");
  }
  {
    auto k = Valid();
    k.dynamic_replication_warmup_copies_in_flight_max = 0;
    ExpectInvalid(k, "dynamic_replication_warmup_copies_in_flight_max");
  }
}

TEST(ReplicationKnobs, ValidateAcceptsBoundaryValues) {
  auto k = Valid();
  k.dynamic_replication_heat_window_seconds = 3;
  k.dynamic_replication_heat_window_sub_buckets = 3;  // 3e9 ns / 3
  k.dynamic_replication_admission_cooldown_ms = 0;    // disabled
  k.dynamic_replication_target_utilization_cap = 1.0;
  EXPECT_TRUE(k.Validate().ok()) << k.Validate();
}

// Found by the swarm: warmup in stage 1 copied past the global replica
// limit. Warmup needs domain-aware placement.
TEST(ReplicationKnobs, WarmupNeedsDomainAwarePlacement) {
  auto k = Valid();
  k.dynamic_replication_warmup_enabled = true;
  k.dynamic_replication_domain_aware = false;
  const absl::Status s = k.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("dynamic_replication_domain_aware"), std::string::npos)
      << s;
  k.dynamic_replication_domain_aware = true;
  EXPECT_TRUE(k.Validate().ok()) << k.Validate();
}

TEST(ReplicationKnobs, RegistrySetsEnumKnobsByWord) {
  const auto& r = ReplicationKnobs::Registry();
  ReplicationKnobs k;
  ASSERT_TRUE(r.Set(k, "dynamic_replication_mode", "enforce").ok());
  EXPECT_EQ(k.dynamic_replication_mode, DynamicReplicationMode::kEnforce);
  ASSERT_TRUE(r.Set(k, "replica_selection_policy", "spread").ok());
  EXPECT_EQ(k.replica_selection_policy, ReplicaSelectionPolicy::kSpread);
  const absl::Status bad = r.Set(k, "dynamic_replication_mode", "on");
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(bad.message()).find("off, observe or enforce"), std::string::npos);
  EXPECT_EQ(r.Set(k, "replica_selection_policy", "random").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(k.dynamic_replication_mode, DynamicReplicationMode::kEnforce);
}

TEST(ReplicationKnobs, RegistryDumpReloadsExactly) {
  const auto& r = ReplicationKnobs::Registry();
  ReplicationKnobs a = ReplicationKnobs::TestMin();
  a.dynamic_replication_admission_qps_threshold = 0.1 + 0.2;
  a.dynamic_replication_domain_aware = true;
  a.replica_selection_policy = ReplicaSelectionPolicy::kSpread;
  ReplicationKnobs b;
  for (const auto& [name, value] : r.Dump(a)) ASSERT_TRUE(r.Set(b, name, value).ok()) << name;
  EXPECT_EQ(r.Dump(a), r.Dump(b));
  EXPECT_EQ(b.dynamic_replication_admission_qps_threshold,
            a.dynamic_replication_admission_qps_threshold);
}

TEST(ReplicationKnobs, EveryKnobIsRegisteredUnderItsFieldName) {
  const auto& r = ReplicationKnobs::Registry();
  for (const char* name : {"dynamic_replication_mode",
                           "dynamic_replication_heat_window_seconds",
                           "dynamic_replication_admission_qps_threshold",
                           "dynamic_replication_max_memory_replicas",
                           "dynamic_replication_heat_window_entries_max",
                           "dynamic_replication_heat_window_sub_buckets",
                           "dynamic_replication_heat_drain_interval_ms",
                           "dynamic_replication_heat_read_buffer_records",
                           "dynamic_replication_admission_cooldown_ms",
                           "dynamic_replication_recreate_cooldown_ms",
                           "dynamic_replication_admission_retry_ms",
                           "dynamic_replication_release_enabled",
                           "dynamic_replication_release_after_ms",
                           "dynamic_replication_release_below_count",
                           "dynamic_replication_release_span_ms",
                           "dynamic_replication_target_utilization_cap",
                           "dynamic_replication_target_heat_aware",
                           "dynamic_replication_domain_aware",
                           "dynamic_replication_lease_ttl_ms",
                           "dynamic_replication_trigger_queue_max",
                           "dynamic_replication_pending_actions_max",
                           "dynamic_replication_proposals_max",
                           "dynamic_replication_cooldown_entries_max",
                           "replica_selection_policy",
                           "dynamic_replication_warmup_enabled",
                           "dynamic_replication_warmup_copies_in_flight_max",
                           "dynamic_replication_warmup_bytes_per_second_max",
                           "dynamic_replication_warmup_objects_max",
                           "dynamic_replication_warmup_domain_poll_ms"}) {
    EXPECT_NE(r.Find(name), nullptr) << name;
  }
  EXPECT_EQ(r.entries().size(), 29u);
}

TEST(ReplicationKnobs, SustainedHeatAndReleaseKnobsAreValidated) {
  ReplicationKnobs k;
  k.dynamic_replication_admission_retry_ms = 0;
  absl::Status s = k.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("dynamic_replication_admission_retry_ms"), std::string::npos) << s;

  k = ReplicationKnobs();
  k.dynamic_replication_release_after_ms = 0;  // ignored while release is off
  EXPECT_TRUE(k.Validate().ok());
  k.dynamic_replication_release_enabled = true;
  s = k.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("dynamic_replication_release_after_ms"), std::string::npos) << s;
  EXPECT_NE(s.message().find("dynamic_replication_release_enabled"), std::string::npos) << s;
  k.dynamic_replication_release_after_ms = 1;
  EXPECT_TRUE(k.Validate().ok());

  k.dynamic_replication_release_below_count = 0;
  s = k.Validate();
  EXPECT_NE(s.message().find("dynamic_replication_release_below_count"), std::string::npos) << s;

  // The release span: 0 (the window) up to the window, whole sub-buckets.
  k = ReplicationKnobs();  // window 10 s in 10 sub-buckets
  EXPECT_EQ(k.release_span_sub_buckets(), 10);
  k.dynamic_replication_release_span_ms = 1;
  EXPECT_EQ(k.release_span_sub_buckets(), 1);
  k.dynamic_replication_release_span_ms = 2'500;  // rounded up to 3 s
  EXPECT_EQ(k.release_span_sub_buckets(), 3);
  k.dynamic_replication_release_span_ms = 10'000;
  EXPECT_TRUE(k.Validate().ok());
  EXPECT_EQ(k.release_span_sub_buckets(), 10);
  for (int64_t bad : {int64_t{-1}, int64_t{10'001}}) {
    k.dynamic_replication_release_span_ms = bad;
    s = k.Validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("dynamic_replication_release_span_ms"), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace heatsink
