// Covers TieringKnobs: defaults are the ADR's and valid; Validate rejects NaN,
// infinity and out-of-range values of increment and decay (and bad geometry
// or regions) with a message naming the knob and value; the registry uses the
// ADR flag names, accepts size suffixes and dumps values that reload exactly;
// PlanRegions lays regions out in index order.
#include <cmath>
#include <limits>
#include <string>

#include "core/tiering/tiering_knobs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heatsink {
namespace {

using ::testing::HasSubstr;

TEST(TieringKnobs, DefaultsAreTheAdrsAndValid) {
  TieringKnobs k;
  EXPECT_TRUE(k.Validate().ok());
  EXPECT_EQ(k.block_bytes, 2 * kMiB);
  EXPECT_EQ(k.ram_head_bytes, 256 * kKiB);
  EXPECT_EQ(k.heads_per_block(), 8u);
  EXPECT_EQ(k.increment, 1.0);
  EXPECT_EQ(k.decay, 0.5);
  EXPECT_EQ(k.decay_interval_ms, 60'000);
  EXPECT_EQ(k.no_inversion_wait_ms, 1'000);
  // Beyond the ADR, off by default.
  EXPECT_EQ(k.promotion_hysteresis_factor, 1.0);
  EXPECT_EQ(k.exchanges_per_second_max, 0);
  EXPECT_TRUE(TieringKnobs::TestMin().Validate().ok());
}

struct BadDouble {
  const char* knob;
  double value;
  const char* shown;
};

class TieringKnobsBadDouble : public ::testing::TestWithParam<BadDouble> {};

TEST_P(TieringKnobsBadDouble, RejectedByValidateWithKnobAndValue) {
  const BadDouble& p = GetParam();
  TieringKnobs k;
  if (std::string(p.knob) == "increment") {
    k.increment = p.value;
  } else {
    k.decay = p.value;
  }
  const absl::Status s = k.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr(std::string("knob ") + p.knob));
  EXPECT_THAT(std::string(s.message()), HasSubstr(p.shown));
}

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

INSTANTIATE_TEST_SUITE_P(
    IncrementAndDecay, TieringKnobsBadDouble,
    ::testing::Values(BadDouble{"increment", kNan, "nan"}, BadDouble{"increment", kInf, "inf"},
                      BadDouble{"increment", -kInf, "-inf"}, BadDouble{"increment", 0.0, "0"},
                      BadDouble{"increment", -1.0, "-1"}, BadDouble{"decay", kNan, "nan"},
                      BadDouble{"decay", kInf, "inf"}, BadDouble{"decay", 0.0, "0"},
                      BadDouble{"decay", 1.0, "1"}, BadDouble{"decay", 1.5, "1.5"},
                      BadDouble{"decay", -0.5, "-0.5"}));

TEST(TieringKnobs, RegistryRejectsNonFiniteText) {
  const auto& r = TieringKnobs::Registry();
  TieringKnobs k;
  for (const char* text : {"nan", "NaN", "inf", "-inf", "infinity"}) {
    EXPECT_EQ(r.Set(k, "increment", text).code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(r.Set(k, "decay", text).code(), absl::StatusCode::kInvalidArgument) << text;
  }
  EXPECT_EQ(k.increment, 1.0);
  EXPECT_EQ(k.decay, 0.5);
  // Finite but out of range passes the registry and fails Validate.
  ASSERT_TRUE(r.Set(k, "decay", "1").ok());
  EXPECT_THAT(std::string(k.Validate().message()), HasSubstr("strictly inside (0, 1)"));
}

TEST(TieringKnobs, GeometryAndRegionsValidated) {
  TieringKnobs k;
  k.block_bytes = 3 * kMiB;
  EXPECT_THAT(std::string(k.Validate().message()), HasSubstr("knob block"));
  k = TieringKnobs();
  k.ram_head_bytes = 4 * kMiB;  // larger than a block
  EXPECT_THAT(std::string(k.Validate().message()), HasSubstr("knob ram_head"));
  k = TieringKnobs();
  k.memory_bytes = 3 * kMiB;  // not a whole number of blocks
  EXPECT_THAT(std::string(k.Validate().message()), HasSubstr("knob memory"));
  k = TieringKnobs();
  k.sub_memory_bytes = {4 * kMiB, 0};
  EXPECT_THAT(std::string(k.Validate().message()), HasSubstr("knob sub_memory[1]"));
  k = TieringKnobs();
  k.small_sub_memory_bytes = {4 * kMiB};
  EXPECT_THAT(std::string(k.Validate().message()), HasSubstr("needs small_memory"));
  k = TieringKnobs();
  k.promotion_hysteresis_factor = 0.9;
  EXPECT_THAT(std::string(k.Validate().message()), HasSubstr("promotion_hysteresis_factor"));
  k = TieringKnobs();
  k.exchanges_per_second_max = -1;
  EXPECT_THAT(std::string(k.Validate().message()), HasSubstr("exchanges_per_second_max"));
  for (const double bad : {-0.1, 1.5, std::nan("")}) {
    k = TieringKnobs();
    k.copy_score_inheritance = bad;
    EXPECT_THAT(std::string(k.Validate().message()), HasSubstr("copy_score_inheritance"));
  }
  k = TieringKnobs();
  k.copy_score_inheritance = 0.0;
  EXPECT_TRUE(k.Validate().ok());
}

TEST(TieringKnobs, RegistryUsesAdrFlagNames) {
  const auto& r = TieringKnobs::Registry();
  for (const char* name : {"block", "ram_head", "increment", "decay", "memory", "sub_memory",
                           "small_memory", "small_sub_memory", "no_numa_promotion",
                           "decay_interval_ms", "no_inversion_wait_ms",
                           "promotion_hysteresis_factor", "exchanges_per_second_max", "copy_score_inheritance",
                           "index_keys_max", "index_shards", "stores_in_flight_max"}) {
    EXPECT_NE(r.Find(name), nullptr) << name;
  }
  EXPECT_EQ(r.Find("block")->type, KnobType::kInt);
  EXPECT_EQ(r.Find("sub_memory")->type, KnobType::kString);
}

TEST(TieringKnobs, SizesAcceptSuffixesAndDumpReloads) {
  const auto& r = TieringKnobs::Registry();
  TieringKnobs k;
  ASSERT_TRUE(r.Set(k, "block", "4M").ok());
  ASSERT_TRUE(r.Set(k, "ram_head", "512KiB").ok());
  ASSERT_TRUE(r.Set(k, "memory", "1g").ok());
  ASSERT_TRUE(r.Set(k, "sub_memory", "64M, 128M").ok());
  ASSERT_TRUE(r.Set(k, "increment", "0.25").ok());
  EXPECT_EQ(k.block_bytes, 4 * kMiB);
  EXPECT_EQ(k.ram_head_bytes, 512 * kKiB);
  EXPECT_EQ(k.memory_bytes, kGiB);
  EXPECT_EQ(k.sub_memory_bytes, (std::vector<uint64_t>{64 * kMiB, 128 * kMiB}));
  EXPECT_TRUE(k.Validate().ok());
  TieringKnobs reloaded;
  for (const auto& [name, value] : r.Dump(k)) ASSERT_TRUE(r.Set(reloaded, name, value).ok()) << name;
  EXPECT_EQ(reloaded.block_bytes, k.block_bytes);
  EXPECT_EQ(reloaded.sub_memory_bytes, k.sub_memory_bytes);
  EXPECT_EQ(reloaded.increment, k.increment);

  EXPECT_EQ(r.Set(k, "block", "2X").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.Set(k, "block", "M").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.Set(k, "memory", "99999999999T").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.Set(k, "sub_memory", "1M,x").message()), HasSubstr("sub_memory"));
  ASSERT_TRUE(r.Set(k, "sub_memory", "").ok());
  EXPECT_TRUE(k.sub_memory_bytes.empty());
}

TEST(TieringKnobs, PlanRegionsOrdersHeadPoolThenSmallPool) {
  TieringKnobs k;
  k.memory_bytes = 8 * kMiB;
  k.sub_memory_bytes = {4 * kMiB, 6 * kMiB};
  k.small_memory_bytes = 2 * kMiB;
  k.small_sub_memory_bytes = {2 * kMiB};
  ASSERT_TRUE(k.Validate().ok());
  const std::vector<RegionSpec> plan = PlanRegions(k);
  ASSERT_EQ(plan.size(), 5u);
  EXPECT_TRUE(plan[0].preferred);
  EXPECT_EQ(plan[0].pool, PoolKind::kHead);
  EXPECT_FALSE(plan[1].preferred);
  EXPECT_EQ(plan[2].bytes, 6 * kMiB);
  EXPECT_TRUE(plan[3].preferred);
  EXPECT_EQ(plan[3].pool, PoolKind::kSmall);
  EXPECT_EQ(plan[4].pool, PoolKind::kSmall);
  EXPECT_FALSE(plan[4].preferred);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(plan[i].region, i);
  EXPECT_EQ(RegionSizes(plan), (std::vector<uint64_t>{8 * kMiB, 4 * kMiB, 6 * kMiB, 2 * kMiB,
                                                      2 * kMiB}));
}

}  // namespace
}  // namespace heatsink
