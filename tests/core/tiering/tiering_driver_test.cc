// Covers TieringDriver, the Executor-paced loop a single-threaded world (the
// simulator) runs: exchanges follow one another at once, a scan without an
// inversion waits no_inversion_wait_ms (the ADR's second), decay runs once per
// decay interval (the ADR's minute) and, with modelled costs, waits for an
// exchange in progress and delays promotion by its own modelled time.
#include <vector>

#include "core/tiering/tiering_driver.h"
#include "tests/core/tiering/tiering_test_util.h"

namespace heatsink {
namespace {

using tiering_test::SmallKnobs;
using tiering_test::TieringHarness;

class FixedCosts final : public TieringCostModel {
 public:
  DurationNs ScanNs(const RegionSummary&) const override { return MsToNs(1); }
  DurationNs ExchangeNs(uint64_t) const override { return MsToNs(10); }
  DurationNs DecayNs(int64_t) const override { return MsToNs(2); }
};

TEST(TieringDriver, ExchangesBackToBackThenWaitsOneSecond) {
  TieringHarness h(SmallKnobs(2, {2}));
  h.FillRegion("p", 16, 0);
  const auto foreign = h.FillRegion("f", 16, 100);
  for (const auto& k : foreign) h.Read(k, 1);
  TieringDriver driver(h.env().env(), &h.tm());
  driver.Start();
  h.env().RunUntilIdle();
  // Two inversions, both resolved at t=0, then a scan without one.
  EXPECT_EQ(h.tm().stats().exchanges, 2);
  EXPECT_EQ(driver.rounds(), 3);
  h.env().AdvanceBy(MsToNs(999));
  EXPECT_EQ(driver.rounds(), 3);
  h.env().AdvanceBy(MsToNs(1));
  EXPECT_EQ(driver.rounds(), 4);  // the next scan, one second later
  for (const auto& k : foreign) EXPECT_EQ(h.Info(k).region, 0);
  driver.Stop();
  EXPECT_EQ(h.env().executor().pending(), 0u);
}

TEST(TieringDriver, DecaysOncePerInterval) {
  TieringHarness h(SmallKnobs(1, {1}));
  const auto local = h.FillRegion("p", 8, 0);
  h.Read(local[0], 8);
  TieringDriver driver(h.env().env(), &h.tm());
  driver.Start();
  h.env().AdvanceBy(MsToNs(59'999));
  EXPECT_EQ(driver.decays(), 0);
  EXPECT_EQ(h.Score(local[0]), 8.0);
  h.env().AdvanceBy(MsToNs(1));
  EXPECT_EQ(driver.decays(), 1);
  EXPECT_EQ(h.Score(local[0]), 4.0);
  h.env().AdvanceBy(SecToNs(120));
  EXPECT_EQ(driver.decays(), 3);
  EXPECT_EQ(h.Score(local[0]), 1.0);
  // No inversion all along: one scan per second.
  EXPECT_EQ(driver.rounds(), 181);
}

TEST(TieringDriver, DecayWaitsForTheExchangeInProgressWithModelledCosts) {
  TieringKnobs k = SmallKnobs(1, {1});
  k.decay_interval_ms = 5;  // falls inside the first round's exchange
  TieringHarness h(k);
  h.FillRegion("p", 8, 0);
  const auto foreign = h.FillRegion("f", 8, 100);
  for (const auto& key : foreign) h.Read(key, 4);
  FixedCosts costs;
  TieringDriver driver(h.env().env(), &h.tm(), &costs);
  driver.Start();
  // t=0 scan (1 ms), t=1 ms exchange (holds the gate 10 ms), decay due at 5 ms.
  h.env().AdvanceBy(MsToNs(5));
  EXPECT_EQ(h.tm().stats().exchanges, 1);
  EXPECT_TRUE(h.tm().decay_pending());
  EXPECT_EQ(driver.decays(), 0);
  EXPECT_EQ(h.tm().gate_holder(), PriorityGate::Holder::kPromotion);
  h.env().AdvanceBy(MsToNs(6));  // t=11 ms: the exchange ends, decay runs
  EXPECT_EQ(driver.decays(), 1);
  EXPECT_FALSE(h.tm().decay_pending());
  EXPECT_EQ(h.Score(foreign[0]), 2.0);
  // Promotion resumes after the decay's modelled 2 ms.
  EXPECT_EQ(driver.rounds(), 1);
  h.env().AdvanceBy(MsToNs(1));
  EXPECT_EQ(driver.rounds(), 1);
  h.env().AdvanceBy(MsToNs(1));
  EXPECT_EQ(driver.rounds(), 2);
  driver.Stop();
  EXPECT_EQ(h.tm().gate_holder(), PriorityGate::Holder::kNone);
}

TEST(TieringDriver, DisabledPromotionStillDecays) {
  TieringHarness h(SmallKnobs(1, {}));
  const auto local = h.FillRegion("p", 8, 0);
  h.Read(local[0], 2);
  TieringDriver driver(h.env().env(), &h.tm());
  driver.Start();
  h.env().AdvanceBy(SecToNs(60));
  EXPECT_TRUE(driver.promotion_disabled());
  EXPECT_EQ(driver.rounds(), 0);
  EXPECT_EQ(h.Score(local[0]), 1.0);
}

}  // namespace
}  // namespace heatsink
