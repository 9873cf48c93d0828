// Covers the cooldown tables: active while now < deadline (DESIGN decision
// 10), never shortened, disabled by a zero duration, scoped by domain (a
// recreate cooldown in domain B leaves domain C free; stage 1 uses the empty
// domain for the whole object), bounded with RESOURCE_EXHAUSTED at the limit,
// and reclaiming expired entries incrementally.
#include "core/replication/cooldown.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace heatsink {
namespace {

constexpr TimeNs kSec = kNsPerSec;

TEST(CooldownTable, ActiveUntilTheDeadlineExclusive) {
  CooldownTable t("admission", 8);
  const HeatKeyView k{"t", "k", ""};
  ASSERT_TRUE(t.Start(100, k, 30 * kSec).ok());
  EXPECT_TRUE(t.Active(100, k));
  EXPECT_TRUE(t.Active(100 + 30 * kSec - 1, k));
  EXPECT_EQ(t.Deadline(100, k), 100 + 30 * kSec);
  EXPECT_FALSE(t.Active(100 + 30 * kSec, k));
  EXPECT_FALSE(t.Active(0, HeatKeyView{"t", "other", ""}));
  EXPECT_EQ(t.stats().hits, 2);
}

TEST(CooldownTable, IsNeverShortened) {
  CooldownTable t("admission", 8);
  const HeatKeyView k{"t", "k", ""};
  ASSERT_TRUE(t.Start(0, k, 60 * kSec).ok());
  ASSERT_TRUE(t.Start(10 * kSec, k, 5 * kSec).ok());  // would end at 15 s
  EXPECT_EQ(t.Deadline(20 * kSec, k), 60 * kSec);
  ASSERT_TRUE(t.Start(50 * kSec, k, 30 * kSec).ok());  // extends to 80 s
  EXPECT_EQ(t.Deadline(50 * kSec, k), 80 * kSec);
  EXPECT_EQ(t.stats().extended, 1);
  EXPECT_EQ(t.size(), 1u);
}

TEST(CooldownTable, ZeroDurationDisables) {
  CooldownTable t("admission", 8);
  const HeatKeyView k{"t", "k", ""};
  ASSERT_TRUE(t.Start(0, k, 0).ok());
  EXPECT_FALSE(t.Active(0, k));
  EXPECT_EQ(t.size(), 0u);
}

TEST(CooldownTable, RecreateCooldownIsScopedToTheEvictedDomain) {
  CooldownTable recreate("recreate", 8);
  // Evicting the dynamic replica in domain B blocks B only.
  ASSERT_TRUE(recreate.Start(0, HeatKeyView{"t", "obj", "domain-b"}, 60 * kSec).ok());
  EXPECT_TRUE(recreate.Active(kSec, HeatKeyView{"t", "obj", "domain-b"}));
  EXPECT_FALSE(recreate.Active(kSec, HeatKeyView{"t", "obj", "domain-c"}));
  EXPECT_FALSE(recreate.Active(kSec, HeatKeyView{"t", "obj", ""}));
  // Stage 1 stamps and checks the empty domain: the whole object.
  ASSERT_TRUE(recreate.Start(0, HeatKeyView{"t", "obj2", ""}, 60 * kSec).ok());
  EXPECT_TRUE(recreate.Active(kSec, HeatKeyView{"t", "obj2", ""}));
  // Tenants are separate objects.
  EXPECT_FALSE(recreate.Active(kSec, HeatKeyView{"u", "obj2", ""}));
}

TEST(CooldownTable, RejectsAtTheLimitWhileEntriesAreLive) {
  CooldownTable t("recreate", 2);
  ASSERT_TRUE(t.Start(0, HeatKeyView{"t", "a", ""}, 10 * kSec).ok());
  ASSERT_TRUE(t.Start(0, HeatKeyView{"t", "b", ""}, 20 * kSec).ok());
  const absl::Status full = t.Start(kSec, HeatKeyView{"t", "c", ""}, 10 * kSec);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(full.message()).find("recreate"), std::string::npos);
  EXPECT_EQ(t.stats().rejected, 1);
  // Refreshing a key already present is not growth.
  EXPECT_TRUE(t.Start(kSec, HeatKeyView{"t", "a", ""}, 15 * kSec).ok());
  // Once "a" (now until 16 s) expires, its slot is reclaimed for "c".
  EXPECT_TRUE(t.Start(16 * kSec, HeatKeyView{"t", "c", ""}, 10 * kSec).ok());
  EXPECT_EQ(t.size(), 2u);
  EXPECT_FALSE(t.Active(16 * kSec, HeatKeyView{"t", "a", ""}));
}

TEST(CooldownTable, ReclaimsExpiredEntriesAFewPerCall) {
  CooldownTable t("admission", 100, /*reclaim_per_call=*/4);
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(t.Start(0, HeatKeyView{"t", absl::StrCat("k", i), ""}, kSec + i).ok());
  }
  ASSERT_EQ(t.size(), 40u);
  // Every call after expiry reclaims at most four: bounded work.
  const HeatKeyView probe{"t", "absent", ""};
  EXPECT_FALSE(t.Active(10 * kSec, probe));
  EXPECT_EQ(t.size(), 36u);
  EXPECT_FALSE(t.Active(10 * kSec, probe));
  EXPECT_EQ(t.size(), 32u);
  EXPECT_EQ(t.ReclaimExpired(10 * kSec, 1'000), 32u);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.stats().reclaimed, 40);
}

TEST(CooldownTable, ReclaimsOnlyExpiredEntries) {
  CooldownTable t("admission", 100);
  ASSERT_TRUE(t.Start(0, HeatKeyView{"t", "short", ""}, kSec).ok());
  ASSERT_TRUE(t.Start(0, HeatKeyView{"t", "long", ""}, 100 * kSec).ok());
  EXPECT_EQ(t.ReclaimExpired(2 * kSec, 10), 1u);
  EXPECT_TRUE(t.Active(2 * kSec, HeatKeyView{"t", "long", ""}));
}

TEST(CooldownTable, EraseEndsACooldownEarly) {
  CooldownTable t("admission", 4);
  const HeatKeyView k{"t", "k", "d"};
  ASSERT_TRUE(t.Start(0, k, 60 * kSec).ok());
  t.Erase(k);
  EXPECT_FALSE(t.Active(kSec, k));
  EXPECT_EQ(t.size(), 0u);
}

}  // namespace
}  // namespace heatsink
