// Covers MasterKnobs: Mooncake defaults, the name registry (including the
// Mooncake alias names), Validate() messages for out-of-range values, and the
// Production/TestMin presets; also the per-segment range allocator.
#include "core/master/master_knobs.h"

#include "core/master/internal/range_allocator.h"
#include "gtest/gtest.h"

namespace heatsink {
namespace {

TEST(MasterKnobs, DefaultsAreMooncakes) {
  const MasterKnobs k = MasterKnobs::Production();
  EXPECT_EQ(k.client_live_ttl_sec, 10);
  EXPECT_EQ(k.put_start_discard_timeout_sec, 30);
  EXPECT_EQ(k.put_start_release_timeout_sec, 600);
  EXPECT_EQ(k.default_kv_lease_ttl_ms, 10'000);
  EXPECT_DOUBLE_EQ(k.eviction_high_watermark_ratio, 0.90);
  EXPECT_DOUBLE_EQ(k.eviction_ratio, 0.05);
  EXPECT_EQ(k.allocation_strategy, AllocationStrategy::kRandom);
  EXPECT_EQ(k.pending_task_timeout_sec, 300);
  EXPECT_EQ(k.processing_task_timeout_sec, 300);
  EXPECT_TRUE(k.Validate().ok());
  EXPECT_TRUE(MasterKnobs::TestMin().Validate().ok());
}

TEST(MasterKnobs, RegistrySetsFieldsAndAliases) {
  const auto& r = MasterKnobs::Registry();
  MasterKnobs k;
  ASSERT_TRUE(r.Set(k, "default_kv_lease_ttl", "2500").ok());
  EXPECT_EQ(k.default_kv_lease_ttl_ms, 2500);
  ASSERT_TRUE(r.Set(k, "default_kv_lease_ttl_ms", "3000").ok());
  EXPECT_EQ(k.default_kv_lease_ttl_ms, 3000);
  ASSERT_TRUE(r.Set(k, "copy_task_timeout_sec", "42").ok());
  EXPECT_EQ(k.processing_task_timeout_sec, 42);
  ASSERT_TRUE(r.Set(k, "allocation_strategy", "free_ratio_first").ok());
  EXPECT_EQ(k.allocation_strategy, AllocationStrategy::kFreeRatioFirst);
  EXPECT_EQ(r.Set(k, "allocation_strategy", "round_robin").code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(r.Set(k, "objects_max", "7").ok());
  EXPECT_EQ(k.objects_max, 7);
  EXPECT_EQ(k.copy_budget_per_source_bytes, int64_t{1} << 40);  // unpaced by default
  EXPECT_EQ(k.copy_budget_per_trunk_bytes, int64_t{1} << 40);
  ASSERT_TRUE(r.Set(k, "copy_budget_per_source_bytes", "1048576").ok());
  EXPECT_EQ(k.copy_budget_per_source_bytes, 1 << 20);
  ASSERT_TRUE(r.Set(k, "copy_budget_per_trunk_bytes", "2097152").ok());
  EXPECT_EQ(k.copy_budget_per_trunk_bytes, 2 << 20);
  EXPECT_EQ(r.Set(k, "no_such_knob", "1").code(), absl::StatusCode::kNotFound);
}

TEST(MasterKnobs, EveryTableHasAMaxKnob) {
  const auto& r = MasterKnobs::Registry();
  for (const char* name :
       {"objects_max", "segments_max", "segments_per_client_max", "clients_max", "key_bytes_max",
        "batch_keys_max", "replicas_per_object_max", "tasks_max", "pending_tasks_per_client_max",
        "processing_tasks_per_client_max", "fetch_tasks_batch_max", "discarded_puts_max",
        "preferred_segments_max"}) {
    EXPECT_NE(r.Find(name), nullptr) << name;
  }
}

TEST(MasterKnobs, DumpReloadsExactly) {
  const auto& r = MasterKnobs::Registry();
  MasterKnobs a = MasterKnobs::TestMin();
  a.eviction_ratio = 0.1 + 0.2;
  a.allocation_strategy = AllocationStrategy::kFreeRatioFirst;
  MasterKnobs b;
  for (const auto& [name, value] : r.Dump(a)) ASSERT_TRUE(r.Set(b, name, value).ok()) << name;
  EXPECT_EQ(b.eviction_ratio, a.eviction_ratio);
  EXPECT_EQ(b.objects_max, a.objects_max);
  EXPECT_EQ(b.default_kv_lease_ttl_ms, a.default_kv_lease_ttl_ms);
  EXPECT_EQ(b.allocation_strategy, a.allocation_strategy);
}

TEST(MasterKnobs, ValidateRejectsWithTheKnobsName) {
  auto expect_bad = [](auto mutate, const std::string& name) {
    MasterKnobs k;
    mutate(k);
    const absl::Status s = k.Validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_NE(s.message().find(name), absl::string_view::npos) << s;
  };
  expect_bad([](MasterKnobs& k) { k.eviction_ratio = 0; }, "eviction_ratio");
  expect_bad([](MasterKnobs& k) { k.eviction_high_watermark_ratio = 1.5; },
             "eviction_high_watermark_ratio");
  expect_bad([](MasterKnobs& k) { k.objects_max = 0; }, "objects_max");
  expect_bad([](MasterKnobs& k) { k.copy_budget_per_source_bytes = 0; },
             "copy_budget_per_source_bytes");
  expect_bad([](MasterKnobs& k) { k.copy_budget_per_source_bytes = -1; },
             "copy_budget_per_source_bytes");
  expect_bad([](MasterKnobs& k) { k.copy_budget_per_trunk_bytes = 0; },
             "copy_budget_per_trunk_bytes");
  expect_bad([](MasterKnobs& k) { k.copy_budget_per_trunk_bytes = -4096; },
             "copy_budget_per_trunk_bytes");
  expect_bad([](MasterKnobs& k) { k.client_live_ttl_sec = -1; }, "client_live_ttl_sec");
  expect_bad([](MasterKnobs& k) { k.put_start_release_timeout_sec = 10; },
             "put_start_release_timeout_sec");
  expect_bad([](MasterKnobs& k) { k.metadata_shards = 100'000; }, "metadata_shards");
  expect_bad([](MasterKnobs& k) { k.fetch_tasks_batch_max = 5'000; }, "fetch_tasks_batch_max");
}

using master_internal::RangeAllocator;

TEST(RangeAllocator, FirstFitAndCoalescing) {
  RangeAllocator a(100);
  EXPECT_EQ(a.Allocate(30), 0u);
  EXPECT_EQ(a.Allocate(30), 30u);
  EXPECT_EQ(a.Allocate(30), 60u);
  EXPECT_FALSE(a.Allocate(11).has_value());
  EXPECT_EQ(a.free_bytes(), 10u);
  a.Free(30, 30);
  // First fit: the hole at 30 comes before the tail at 90.
  EXPECT_EQ(a.Allocate(5), 30u);
  a.Free(0, 30);
  a.Free(30, 5);
  // 0..60 coalesced into one range.
  EXPECT_EQ(a.LargestFreeRange(), 60u);
  EXPECT_EQ(a.Allocate(60), 0u);
  a.Free(60, 30);
  a.Free(0, 60);
  EXPECT_EQ(a.free_range_count(), 1u);
  EXPECT_EQ(a.allocated_bytes(), 0u);
}

TEST(RangeAllocatorDeathTest, DoubleFreeIsAProgrammerError) {
  RangeAllocator a(100);
  ASSERT_EQ(a.Allocate(10), 0u);
  a.Free(0, 10);
  EXPECT_DEATH(a.Free(0, 10), "double free");
}

}  // namespace
}  // namespace heatsink
