// Covers the admission trigger queue: FIFO order, deduplication until a key
// is taken, the bound (RESOURCE_EXHAUSTED at the limit, counted, nothing
// dropped), the wake-up hint, and that the requester domain is part of the
// key.
#include "core/replication/admission_trigger_queue.h"

#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace heatsink {
namespace {

HeatKeyView Key(const std::string& k, const std::string& domain = "") {
  return HeatKeyView{"t", k, domain};
}

TEST(AdmissionTriggerQueue, IsFifo) {
  AdmissionTriggerQueue q(8);
  const std::string a = "a", b = "b", c = "c";
  ASSERT_TRUE(q.Enqueue(10, Key(a)).ok());
  ASSERT_TRUE(q.Enqueue(20, Key(b)).ok());
  ASSERT_TRUE(q.Enqueue(30, Key(c)).ok());
  auto t = q.Take();
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->key.key, "a");
  EXPECT_EQ(t->enqueued_ns, 10);
  const auto rest = q.TakeUpTo(5);
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[0].key.key, "b");
  EXPECT_EQ(rest[1].key.key, "c");
  EXPECT_FALSE(q.Take().has_value());
}

TEST(AdmissionTriggerQueue, DeduplicatesUntilTaken) {
  AdmissionTriggerQueue q(8);
  const std::string a = "a";
  auto first = q.Enqueue(1, Key(a));
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->queued);
  EXPECT_TRUE(first->queue_was_empty);
  auto again = q.Enqueue(2, Key(a));
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->queued);
  EXPECT_EQ(q.size(), 1u);
  EXPECT_TRUE(q.Contains(Key(a)));
  EXPECT_EQ(q.Take()->enqueued_ns, 1);  // the first crossing's time is kept
  EXPECT_FALSE(q.Contains(Key(a)));
  auto after = q.Enqueue(3, Key(a));
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->queued);
  const AdmissionTriggerQueueStats s = q.stats();
  EXPECT_EQ(s.enqueued, 2);
  EXPECT_EQ(s.duplicates, 1);
  EXPECT_EQ(s.taken, 1);
  EXPECT_EQ(s.size, 1);
}

TEST(AdmissionTriggerQueue, WakeHintOnlyWhenEmpty) {
  AdmissionTriggerQueue q(8);
  const std::string a = "a", b = "b";
  EXPECT_TRUE(q.Enqueue(1, Key(a))->queue_was_empty);
  EXPECT_FALSE(q.Enqueue(1, Key(b))->queue_was_empty);
}

TEST(AdmissionTriggerQueue, RejectsAtTheLimitAndCountsOverflow) {
  AdmissionTriggerQueue q(2);
  const std::string a = "a", b = "b", c = "c";
  ASSERT_TRUE(q.Enqueue(1, Key(a)).ok());
  ASSERT_TRUE(q.Enqueue(2, Key(b)).ok());
  const auto full = q.Enqueue(3, Key(c));
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted);
  // A key already waiting is still a (deduplicated) success at the limit.
  EXPECT_TRUE(q.Enqueue(4, Key(a)).ok());
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.stats().overflows, 1);
  EXPECT_EQ(q.Take()->key.key, "a");  // nothing was dropped
  EXPECT_TRUE(q.Enqueue(5, Key(c)).ok());
}

TEST(AdmissionTriggerQueue, RequesterDomainIsPartOfTheKey) {
  AdmissionTriggerQueue q(8);
  const std::string k = "k";
  EXPECT_TRUE(q.Enqueue(1, Key(k, "a"))->queued);
  EXPECT_TRUE(q.Enqueue(1, Key(k, "b"))->queued);
  EXPECT_FALSE(q.Enqueue(1, Key(k, "a"))->queued);
  EXPECT_EQ(q.size(), 2u);
}

TEST(AdmissionTriggerQueue, ConcurrentEnqueuesQueueEachKeyOnce) {
  AdmissionTriggerQueue q(1'000);
  auto worker = [&q] {
    for (int i = 0; i < 500; ++i) (void)q.Enqueue(i, HeatKeyView{"t", std::to_string(i), ""});
  };
  std::thread t1(worker);
  std::thread t2(worker);
  t1.join();
  t2.join();
  EXPECT_EQ(q.size(), 500u);
  const AdmissionTriggerQueueStats s = q.stats();
  EXPECT_EQ(s.enqueued, 500);
  EXPECT_EQ(s.duplicates, 500);
}

}  // namespace
}  // namespace heatsink
