// Covers heatsink::CondVar over heatsink::Mutex: a waiter wakes when another
// thread signals, a wait with a timeout returns after it with the mutex held
// again, and SignalAll wakes every waiter.
#include "core/base/mutex.h"

#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace heatsink {
namespace {

// Long enough that a missed wake-up shows as a failure, not a slow pass.
constexpr absl::Duration kWakeLimit = absl::Seconds(10);

struct Flag {
  Mutex mu;
  CondVar cv;
  bool set ABSL_GUARDED_BY(mu) = false;
  int woken ABSL_GUARDED_BY(mu) = 0;

  // Waits until `set` or kWakeLimit has passed; true when `set` was seen.
  bool AwaitSet() {
    MutexLock lock(&mu);
    const absl::Time deadline = absl::Now() + kWakeLimit;
    while (!set) {
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return false;
      cv.WaitWithTimeout(&mu, left);
    }
    ++woken;
    return true;
  }
};

TEST(CondVarTest, SignalWakesWaiter) {
  Flag flag;
  bool seen = false;
  std::thread waiter([&] { seen = flag.AwaitSet(); });
  absl::SleepFor(absl::Milliseconds(20));  // let the waiter block first
  {
    MutexLock lock(&flag.mu);
    flag.set = true;
  }
  flag.cv.Signal();
  const absl::Time start = absl::Now();
  waiter.join();
  EXPECT_TRUE(seen);
  EXPECT_LT(absl::Now() - start, kWakeLimit / 2);
}

TEST(CondVarTest, WaitBlocksUntilSignalled) {
  Flag flag;
  bool seen = false;
  std::thread waiter([&] {
    MutexLock lock(&flag.mu);
    while (!flag.set) flag.cv.Wait(&flag.mu);
    seen = true;
  });
  absl::SleepFor(absl::Milliseconds(20));
  {
    MutexLock lock(&flag.mu);
    flag.set = true;
    flag.cv.Signal();  // signalling with the mutex held is allowed too
  }
  waiter.join();
  EXPECT_TRUE(seen);
}

TEST(CondVarTest, SignalAllWakesEveryWaiter) {
  Flag flag;
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i) waiters.emplace_back([&] { flag.AwaitSet(); });
  absl::SleepFor(absl::Milliseconds(20));
  {
    MutexLock lock(&flag.mu);
    flag.set = true;
  }
  flag.cv.SignalAll();
  const absl::Time start = absl::Now();
  for (std::thread& t : waiters) t.join();
  EXPECT_LT(absl::Now() - start, kWakeLimit / 2);
  MutexLock lock(&flag.mu);
  EXPECT_EQ(flag.woken, 3);
}

TEST(CondVarTest, WaitWithTimeoutTimesOutAndHoldsTheMutex) {
  Mutex mu;
  CondVar cv;
  MutexLock lock(&mu);
  const absl::Time start = absl::Now();
  bool timed_out = false;
  // A spurious wake-up returns false early; wait again until the time is up.
  while (!timed_out && absl::Now() - start < absl::Milliseconds(30)) {
    timed_out = cv.WaitWithTimeout(&mu, absl::Milliseconds(30) - (absl::Now() - start));
  }
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(30));
  mu.AssertHeld();
}

}  // namespace
}  // namespace heatsink
