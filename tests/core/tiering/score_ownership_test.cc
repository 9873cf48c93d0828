// Covers the single-owner score: a new key starts at 0; replacement keeps the
// score across every owner pair (dense slot <-> index entry); eviction moves
// it into the index and readmission back into a dense slot; delete + recreate
// restarts at 0; exact binary increment/decay values across both owners; and
// the read token, which makes a streamed or retried read count exactly once.
// Also: pinned heads survive deletion (orphaned, then reclaimed), stores that
// are aborted release their space, limits reject with RESOURCE_EXHAUSTED, and
// local-hit accounting counts reads by placement.
#include <cmath>
#include <vector>

#include "tests/core/tiering/tiering_test_util.h"

namespace heatsink {
namespace {

using tiering_test::Key;
using tiering_test::Pattern;
using tiering_test::SmallKnobs;
using tiering_test::TieringHarness;

class ScoreOwnershipTest : public ::testing::Test {
 protected:
  ScoreOwnershipTest() : h_(SmallKnobs(1, {1})) {}
  uint64_t head() const { return h_.head_bytes(); }
  TieringHarness h_;
};

TEST_F(ScoreOwnershipTest, NewKeyStartsAtZeroAndReplacementKeepsScore) {
  const TierKey k = Key("k");
  h_.PutHead(k, 1);
  EXPECT_EQ(h_.Score(k), 0.0);
  EXPECT_EQ(h_.Info(k).residence, Residence::kFixedHead);
  h_.Read(k, 3);
  EXPECT_EQ(h_.Score(k), 3.0);
  const uint64_t incarnation = h_.Info(k).incarnation;
  // Fixed head -> fixed head (a new slot; the old one is freed).
  h_.PutHead(k, 2);
  EXPECT_EQ(h_.Score(k), 3.0);
  EXPECT_EQ(h_.Info(k).incarnation, incarnation);
  EXPECT_EQ(h_.ReadAll(k), Pattern(head(), 2));
  // Fixed head -> arena.
  ASSERT_TRUE(h_.tm().Put(k, std::vector<uint8_t>(10, 7)).ok());
  EXPECT_EQ(h_.Info(k).residence, Residence::kArena);
  EXPECT_EQ(h_.Score(k), 3.0);
  h_.Read(k, 1);
  EXPECT_EQ(h_.Score(k), 4.0);
  // Arena -> fixed head.
  h_.PutHead(k, 3);
  EXPECT_EQ(h_.Info(k).residence, Residence::kFixedHead);
  EXPECT_EQ(h_.Score(k), 4.0);
  EXPECT_EQ(h_.tm().key_count(), 1);
  EXPECT_TRUE(h_.tm().CheckInvariants().ok());
}

TEST_F(ScoreOwnershipTest, EvictionAndReadmissionMoveTheScore) {
  const TierKey k = Key("k");
  h_.PutHead(k, 1);
  h_.Read(k, 5);
  ASSERT_TRUE(h_.tm().EvictHead(k).ok());
  KeyInfo info = h_.Info(k);
  EXPECT_EQ(info.residence, Residence::kEvicted);
  EXPECT_EQ(info.score, 5.0);
  // Reads of a disk-backed key still count (once) and find the index owner.
  absl::StatusOr<ReadToken> t = h_.tm().OpenRead(k);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->placement(), ReadPlacement::kEvicted);
  std::vector<uint8_t> buf(16);
  EXPECT_EQ(h_.tm().ReadBytes(*t, 0, absl::MakeSpan(buf)).code(),
            absl::StatusCode::kFailedPrecondition);
  h_.tm().CompleteRead(*std::move(t));
  EXPECT_EQ(h_.Score(k), 6.0);
  // Decay reaches index-owned scores too.
  ASSERT_TRUE(h_.tm().RunDecayPass().ok());
  EXPECT_EQ(h_.Score(k), 3.0);
  // Readmission (a store of the same key) moves it back into a dense slot.
  h_.PutHead(k, 9);
  info = h_.Info(k);
  EXPECT_EQ(info.residence, Residence::kFixedHead);
  EXPECT_EQ(info.score, 3.0);
  EXPECT_EQ(h_.tm().stats().evictions, 1);
  EXPECT_EQ(h_.tm().EvictHead(Key("absent")).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(h_.tm().Put(Key("small"), std::vector<uint8_t>(10, 1)).ok());
  EXPECT_EQ(h_.tm().EvictHead(Key("small")).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(h_.tm().CheckInvariants().ok());
}

TEST_F(ScoreOwnershipTest, DeleteAndRecreateRestartsAtZero) {
  const TierKey k = Key("k");
  h_.PutHead(k, 1);
  h_.Read(k, 7);
  const uint64_t incarnation = h_.Info(k).incarnation;
  ASSERT_TRUE(h_.tm().Delete(k).ok());
  EXPECT_FALSE(h_.tm().Lookup(k).has_value());
  EXPECT_EQ(h_.tm().Delete(k).code(), absl::StatusCode::kNotFound);
  h_.PutHead(k, 1);
  EXPECT_EQ(h_.Score(k), 0.0);
  EXPECT_NE(h_.Info(k).incarnation, incarnation);
  // Same for an arena key and an evicted key.
  const TierKey s = Key("s");
  ASSERT_TRUE(h_.tm().Put(s, std::vector<uint8_t>(10, 1)).ok());
  h_.Read(s, 2);
  ASSERT_TRUE(h_.tm().Delete(s).ok());
  ASSERT_TRUE(h_.tm().Put(s, std::vector<uint8_t>(10, 1)).ok());
  EXPECT_EQ(h_.Score(s), 0.0);
  h_.Read(k, 2);
  ASSERT_TRUE(h_.tm().EvictHead(k).ok());
  ASSERT_TRUE(h_.tm().Delete(k).ok());
  h_.PutHead(k, 1);
  EXPECT_EQ(h_.Score(k), 0.0);
  EXPECT_TRUE(h_.tm().CheckInvariants().ok());
}

TEST_F(ScoreOwnershipTest, IncrementAndDecayExactAcrossOwners) {
  TieringKnobs k = SmallKnobs(1, {1});
  k.increment = 0.75;
  k.decay = 0.25;
  TieringHarness h(k);
  const TierKey fixed = Key("fixed");
  const TierKey small = Key("small");
  h.PutHead(fixed, 1);
  ASSERT_TRUE(h.tm().Put(small, std::vector<uint8_t>(10, 1)).ok());
  h.Read(fixed, 4);  // 3.0
  h.Read(small, 2);  // 1.5
  ASSERT_TRUE(h.tm().RunDecayPass().ok());
  EXPECT_EQ(h.Score(fixed), 0.75);
  EXPECT_EQ(h.Score(small), 0.375);
  h.Read(fixed, 1);
  h.Read(small, 1);
  ASSERT_TRUE(h.tm().RunDecayPass().ok());
  EXPECT_EQ(h.Score(fixed), 0.375);      // (0.75 + 0.75) * 0.25
  EXPECT_EQ(h.Score(small), 0.28125);    // (0.375 + 0.75) * 0.25
  EXPECT_EQ(h.tm().stats().decay_passes, 2);
  EXPECT_EQ(h.metrics().Value("tiering_decay_passes_total"), 2);
}

TEST_F(ScoreOwnershipTest, StreamedAndRetriedReadCountsOnce) {
  const TierKey k = Key("k");
  h_.PutHead(k, 4);
  absl::StatusOr<ReadToken> t = h_.tm().OpenRead(k);
  ASSERT_TRUE(t.ok());
  // Stream the head in chunks, re-reading one chunk as an internal retry.
  std::vector<uint8_t> got(head());
  const uint64_t chunk = head() / 4;
  for (uint64_t off = 0; off < head(); off += chunk) {
    ASSERT_TRUE(h_.tm().ReadBytes(*t, off, absl::MakeSpan(got.data() + off, chunk)).ok());
  }
  ASSERT_TRUE(h_.tm().ReadBytes(*t, chunk, absl::MakeSpan(got.data() + chunk, chunk)).ok());
  EXPECT_EQ(got, Pattern(head(), 4));
  EXPECT_EQ(h_.tm().ReadBytes(*t, head() - 1, absl::MakeSpan(got.data(), 2)).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(h_.Score(k), 0.0);  // nothing counted until the read completes
  h_.tm().CompleteRead(*std::move(t));
  EXPECT_EQ(h_.Score(k), 1.0);
  EXPECT_FALSE(t->active());  // consumed: it cannot be credited again
  EXPECT_EQ(h_.tm().ReadBytes(*t, 0, absl::MakeSpan(got.data(), 1)).code(),
            absl::StatusCode::kFailedPrecondition);
  // A failed (abandoned or dropped) read adds nothing.
  absl::StatusOr<ReadToken> failed = h_.tm().OpenRead(k);
  ASSERT_TRUE(failed.ok());
  h_.tm().AbandonRead(*std::move(failed));
  { absl::StatusOr<ReadToken> dropped = h_.tm().OpenRead(k); }
  EXPECT_EQ(h_.Score(k), 1.0);
  EXPECT_EQ(h_.tm().stats().reads_local, 1);
}

TEST_F(ScoreOwnershipTest, ReadCreditFollowsTheKeyNotTheSlot) {
  const TierKey k = Key("k");
  h_.PutHead(k, 1);
  // Replaced while a read is in flight: the credit goes to the new owner.
  absl::StatusOr<ReadToken> t = h_.tm().OpenRead(k);
  ASSERT_TRUE(t.ok());
  h_.PutHead(k, 2);
  h_.tm().CompleteRead(*std::move(t));
  EXPECT_EQ(h_.Score(k), 1.0);
  // Deleted and recreated while a read is in flight: the new key is not the
  // one that was read, so it stays at zero.
  absl::StatusOr<ReadToken> old = h_.tm().OpenRead(k);
  ASSERT_TRUE(old.ok());
  ASSERT_TRUE(h_.tm().Delete(k).ok());
  h_.PutHead(k, 3);
  h_.tm().CompleteRead(*std::move(old));
  EXPECT_EQ(h_.Score(k), 0.0);
  EXPECT_TRUE(h_.tm().CheckInvariants().ok());
}

TEST_F(ScoreOwnershipTest, PinnedHeadSurvivesDeleteUntilUnpinned) {
  const TierKey k = Key("k");
  h_.PutHead(k, 5);
  const KeyInfo before = h_.Info(k);
  absl::StatusOr<ReadToken> t = h_.tm().OpenRead(k);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(h_.tm().Delete(k).ok());
  // The orphaned slot is not reused, so the reader still sees its bytes.
  h_.PutHead(Key("other"), 6);
  EXPECT_NE(h_.Info(Key("other")).offset, before.offset);
  std::vector<uint8_t> got(head());
  ASSERT_TRUE(h_.tm().ReadBytes(*t, 0, absl::MakeSpan(got)).ok());
  EXPECT_EQ(got, Pattern(head(), 5));
  h_.tm().CompleteRead(*std::move(t));
  EXPECT_TRUE(h_.tm().CheckInvariants().ok());
  // Reclaimed by the next exclusive operation: the lowest slot is free again.
  h_.PutHead(Key("third"), 7);
  EXPECT_EQ(h_.Info(Key("third")).offset, before.offset);
}

TEST(ScoreOwnership, PinnedArenaBlockSurvivesDeleteUntilUnpinned) {
  TieringHarness h(SmallKnobs(1, {2}));
  const std::vector<uint8_t> value = Pattern(100, 3);
  ASSERT_TRUE(h.tm().Put(Key("s"), value).ok());
  ASSERT_EQ(h.Info(Key("s")).region, 0);  // the arena took region 0's only block
  absl::StatusOr<ReadToken> t = h.tm().OpenRead(Key("s"));
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(h.tm().Delete(Key("s")).ok());
  h.PutHead(Key("h"), 1);
  EXPECT_EQ(h.Info(Key("h")).region, 1);  // the empty arena block is still held
  std::vector<uint8_t> got(100);
  ASSERT_TRUE(h.tm().ReadBytes(*t, 0, absl::MakeSpan(got)).ok());
  EXPECT_EQ(got, value);
  h.tm().CompleteRead(*std::move(t));
  h.PutHead(Key("h2"), 2);
  EXPECT_EQ(h.Info(Key("h2")).region, 0);  // reclaimed, then reused for heads
  EXPECT_TRUE(h.tm().CheckInvariants().ok());
}

TEST_F(ScoreOwnershipTest, AbortedStoresReleaseSpaceAndLimitsHold) {
  {
    absl::StatusOr<StoreTicket> t = h_.tm().BeginStore(Key("a"), head());
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE(h_.tm().WriteStore(*t, 0, Pattern(head(), 1)).ok());
    EXPECT_EQ(h_.tm().WriteStore(*t, 1, Pattern(head(), 1)).code(),
              absl::StatusCode::kOutOfRange);
  }  // dropped ticket: aborted
  EXPECT_FALSE(h_.tm().Lookup(Key("a")).has_value());
  EXPECT_EQ(h_.tm().BeginStore(Key("big"), head() + 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(h_.tm().BeginStore(Key("empty"), 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  // stores_in_flight_max = 16 (TestMin).
  std::vector<StoreTicket> tickets;
  for (int i = 0; i < 16; ++i) {
    absl::StatusOr<StoreTicket> t = h_.tm().BeginStore(Key(absl::StrCat("s", i)), head());
    ASSERT_TRUE(t.ok());
    tickets.push_back(*std::move(t));
  }
  EXPECT_EQ(h_.tm().BeginStore(Key("x"), 8).status().code(),
            absl::StatusCode::kResourceExhausted);
  for (StoreTicket& t : tickets) h_.tm().AbortStore(std::move(t));
  // The pool holds 16 heads: the 17th is rejected.
  for (int i = 0; i < 16; ++i) h_.PutHead(Key(absl::StrCat("h", i)), i);
  EXPECT_EQ(h_.tm().Put(Key("h16"), Pattern(head(), 0)).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(h_.tm().CheckInvariants().ok());
}

TEST(ScoreOwnership, IndexLimitRejectsNewKeys) {
  TieringKnobs k = SmallKnobs(1, {1});
  k.index_keys_max = 2;
  TieringHarness h(k);
  h.PutHead(Key("a"), 1);
  h.PutHead(Key("b"), 2);
  EXPECT_EQ(h.tm().Put(Key("c"), Pattern(k.ram_head_bytes, 3)).code(),
            absl::StatusCode::kResourceExhausted);
  h.PutHead(Key("a"), 4);  // a replacement needs no new entry
  EXPECT_TRUE(h.tm().CheckInvariants().ok());
}

TEST(ScoreOwnership, LocalHitAccountingByPlacement) {
  TieringHarness h(SmallKnobs(1, {2}));
  const auto local = h.FillRegion("p", 8, 0);
  const auto foreign = h.FillRegion("f", 2, 100);
  ASSERT_TRUE(h.tm().Put(Key("small"), std::vector<uint8_t>(10, 1)).ok());
  ASSERT_EQ(h.Info(Key("small")).region, 1);  // preferred region is full
  h.Read(local[0], 3);
  h.Read(foreign[1], 1);
  h.Read(Key("small"), 2);
  ASSERT_TRUE(h.tm().EvictHead(foreign[0]).ok());
  h.Read(foreign[0], 2);
  const TieringStats s = h.tm().stats();
  EXPECT_EQ(s.reads_local, 3);
  EXPECT_EQ(s.reads_foreign, 3);
  EXPECT_EQ(s.reads_evicted, 2);
  EXPECT_EQ(s.LocalHitFraction(), 3.0 / 8.0);
  EXPECT_EQ(h.metrics().Value("tiering_reads_total", {{"placement", "foreign"}}), 3);
}

// Score inheritance: RaiseScore lifts a key's score to the inherited value in
// either owner (dense slot, index entry), never lowers it, counts no read,
// and rejects what is not a score.
TEST_F(ScoreOwnershipTest, RaiseScoreLiftsNeverLowers) {
  const TierKey head_key = Key("head");
  h_.PutHead(head_key, 1);
  ASSERT_TRUE(h_.tm().RaiseScore(head_key, 12.5).ok());
  EXPECT_EQ(h_.Score(head_key), 12.5);
  ASSERT_TRUE(h_.tm().RaiseScore(head_key, 4.0).ok());
  EXPECT_EQ(h_.Score(head_key), 12.5);
  h_.Read(head_key, 1);
  EXPECT_EQ(h_.Score(head_key), 13.5);
  const TierKey arena_key = Key("arena");
  ASSERT_TRUE(h_.tm().Put(arena_key, std::vector<uint8_t>(10, 7)).ok());
  ASSERT_EQ(h_.Info(arena_key).residence, Residence::kArena);
  ASSERT_TRUE(h_.tm().RaiseScore(arena_key, 3.0).ok());
  EXPECT_EQ(h_.Score(arena_key), 3.0);
  EXPECT_EQ(h_.tm().stats().reads_local + h_.tm().stats().reads_foreign, 1);
  EXPECT_EQ(h_.tm().RaiseScore(Key("absent"), 1.0).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(h_.tm().RaiseScore(head_key, -1.0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(h_.tm().RaiseScore(head_key, std::nan("")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(h_.tm().CheckInvariants().ok());
}

}  // namespace
}  // namespace heatsink
