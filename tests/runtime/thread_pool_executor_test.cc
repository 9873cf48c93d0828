// Covers the runtime Env: the steady clock is monotonic; the thread-pool
// executor runs posted work off the caller's thread, runs timers in due order
// and equal-due work in post order, never runs a timer early, runs timers of
// a driven clock when told it moved, cancels timers that have not started,
// and on Shutdown drains due work, drops future timers and late posts
// (destroying them unrun) and runs nothing after it returns. Timer tests
// drive a ManualClock; only the steady clock's own test waits on real time.
// RuntimeEnv wires the three parts into one Env with a seeded Rng.
#include "runtime/env/thread_pool_executor.h"

#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "core/env/manual_env.h"
#include "gtest/gtest.h"
#include "runtime/env/notification.h"
#include "runtime/env/runtime_env.h"
#include "runtime/env/steady_clock.h"

namespace heatsink::runtime {
namespace {

// Sets a flag when destroyed, to tell a dropped callable from a leaked one.
struct DestroyFlag {
  explicit DestroyFlag(std::atomic<bool>* flag) : flag(flag) {}
  ~DestroyFlag() { flag->store(true); }
  std::atomic<bool>* flag;
};

// The same, owning its flag: for callables that may outlive the test's frame.
struct SharedDestroyFlag {
  explicit SharedDestroyFlag(std::shared_ptr<std::atomic<bool>> flag) : flag(std::move(flag)) {}
  ~SharedDestroyFlag() { flag->store(true); }
  std::shared_ptr<std::atomic<bool>> flag;
};

// Moves the clock, wakes the executor's workers, and returns once every item
// due by then has run: a marker posted now runs after all of them (one
// thread: items start in (due, post) order).
void AdvanceAndSettle(ManualClock& clock, ThreadPoolExecutor& executor, DurationNs d) {
  clock.AdvanceBy(d);
  executor.ClockAdvanced();
  Notification marker;
  executor.Post([&] { marker.Notify(); });
  marker.WaitForNotification();
}

class OrderLog {
 public:
  void Add(int v) {
    std::unique_lock<std::mutex> lock(mu_);
    order_.push_back(v);
  }
  std::vector<int> Get() {
    std::unique_lock<std::mutex> lock(mu_);
    return order_;
  }

 private:
  std::mutex mu_;
  std::vector<int> order_;
};

TEST(SteadyClock, IsMonotonic) {
  SteadyClock clock;
  TimeNs last = clock.NowNs();
  for (int i = 0; i < 1000; ++i) {
    const TimeNs now = clock.NowNs();
    ASSERT_GE(now, last);
    last = now;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_GE(clock.NowNs() - last, MsToNs(1));
}

TEST(ThreadPoolExecutor, RunsPostedWorkOnPoolThreads) {
  SteadyClock clock;
  ThreadPoolExecutor executor(&clock, {.threads = 3});
  constexpr int kItems = 200;
  std::latch remaining(kItems);
  std::atomic<int> on_caller{0};
  const auto caller = std::this_thread::get_id();
  for (int i = 0; i < kItems; ++i) {
    executor.Post([&] {
      if (std::this_thread::get_id() == caller) on_caller.fetch_add(1);
      remaining.count_down();
    });
  }
  remaining.wait();
  EXPECT_EQ(on_caller.load(), 0);
  EXPECT_EQ(executor.threads(), 3);
}

TEST(ThreadPoolExecutor, TimersRunInDueOrderAndNeverEarly) {
  ManualClock clock;
  ThreadPoolExecutor executor(&clock, {.threads = 1});
  OrderLog log;
  executor.PostAfter(MsToNs(30), [&] { log.Add(30); });
  executor.PostAfter(MsToNs(10), [&] { log.Add(10); });
  executor.PostAfter(MsToNs(20), [&] { log.Add(20); });
  AdvanceAndSettle(clock, executor, MsToNs(9));
  EXPECT_TRUE(log.Get().empty());
  AdvanceAndSettle(clock, executor, MsToNs(1));
  EXPECT_EQ(log.Get(), (std::vector<int>{10}));
  AdvanceAndSettle(clock, executor, MsToNs(19));  // 29 ms: the last is not due
  EXPECT_EQ(log.Get(), (std::vector<int>{10, 20}));
  AdvanceAndSettle(clock, executor, MsToNs(1));
  EXPECT_EQ(log.Get(), (std::vector<int>{10, 20, 30}));
}

TEST(ThreadPoolExecutor, EqualDueWorkRunsInPostOrder) {
  SteadyClock clock;
  ThreadPoolExecutor executor(&clock, {.threads = 1});
  Notification release;
  executor.Post([&] { release.WaitForNotification(); });  // holds the only thread
  OrderLog log;
  std::latch remaining(50);
  for (int i = 0; i < 50; ++i) {
    executor.Post([&log, &remaining, i] {
      log.Add(i);
      remaining.count_down();
    });
  }
  release.Notify();
  remaining.wait();
  std::vector<int> expected(50);
  for (int i = 0; i < 50; ++i) expected[i] = i;
  EXPECT_EQ(log.Get(), expected);
}

TEST(ThreadPoolExecutor, ADrivenClockRunsTimersWhenItIsAdvanced) {
  ManualClock clock;
  ThreadPoolExecutor executor(&clock, {.threads = 2});
  Notification ran;
  executor.PostAfter(SecToNs(3600), [&] { ran.Notify(); });
  EXPECT_FALSE(ran.WaitForNotificationWithTimeout(absl::Milliseconds(1)));
  // The workers sleep for an hour of real time unless told the clock moved.
  clock.AdvanceBy(SecToNs(3600));
  executor.ClockAdvanced();
  EXPECT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
}

TEST(ThreadPoolExecutor, EarlierTimerPostedLaterWakesSleepingWorker) {
  ManualClock clock;
  ThreadPoolExecutor executor(&clock, {.threads = 1});
  Notification late_ran;
  Notification early_ran;
  executor.PostAfter(SecToNs(3600), [&] { late_ran.Notify(); });
  // Once this marker has run, the worker goes to sleep until the hour-long
  // timer; a shorter one posted later must still run when it is due.
  Notification marker;
  executor.Post([&] { marker.Notify(); });
  marker.WaitForNotification();
  executor.PostAfter(MsToNs(5), [&] { early_ran.Notify(); });
  clock.AdvanceBy(MsToNs(5));
  executor.ClockAdvanced();
  EXPECT_TRUE(early_ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_FALSE(late_ran.HasBeenNotified());
}

TEST(ThreadPoolExecutor, CancelStopsTimersThatHaveNotStarted) {
  ManualClock clock;
  ThreadPoolExecutor executor(&clock, {.threads = 1});
  std::atomic<bool> cancelled_ran{false};
  std::atomic<bool> destroyed{false};
  const TimerId id = executor.PostAfter(
      MsToNs(20), [&, flag = std::make_shared<DestroyFlag>(&destroyed)] { cancelled_ran = true; });
  EXPECT_NE(id, kNoTimer);
  EXPECT_TRUE(executor.Cancel(id));
  EXPECT_TRUE(destroyed.load());  // the callable is released at once
  EXPECT_FALSE(executor.Cancel(id));

  Notification ran;
  const TimerId fired = executor.PostAfter(0, [&] { ran.Notify(); });
  ran.WaitForNotification();
  EXPECT_FALSE(executor.Cancel(fired));  // already started
  // Well past the cancelled timer's due time, and everything due has run.
  AdvanceAndSettle(clock, executor, MsToNs(40));
  EXPECT_FALSE(cancelled_ran.load());
  EXPECT_EQ(executor.pending(), 0u);
}

TEST(ThreadPoolExecutor, ShutdownDrainsDueWorkAndDropsFutureTimers) {
  SteadyClock clock;
  ThreadPoolExecutor executor(&clock, {.threads = 1});
  Notification release;
  executor.Post([&] { release.WaitForNotification(); });
  std::atomic<int> due_ran{0};
  for (int i = 0; i < 10; ++i) executor.Post([&] { due_ran.fetch_add(1); });
  std::atomic<bool> future_ran{false};
  std::atomic<bool> future_destroyed{false};
  executor.PostAfter(SecToNs(3600), [&, flag = std::make_shared<DestroyFlag>(&future_destroyed)] {
    future_ran = true;
  });
  // Releases the blocked item once Shutdown has begun, which a probe shows:
  // from then on a posted callable is destroyed inside Post, unrun (probes
  // posted earlier queue behind the due work and run as no-ops).
  std::thread releaser([&] {
    while (true) {
      auto destroyed = std::make_shared<std::atomic<bool>>(false);
      executor.Post([probe = std::make_shared<SharedDestroyFlag>(destroyed)] {});
      if (destroyed->load()) break;
      std::this_thread::yield();
    }
    release.Notify();
  });
  executor.Shutdown();
  releaser.join();
  EXPECT_EQ(due_ran.load(), 10);
  EXPECT_FALSE(future_ran.load());
  EXPECT_TRUE(future_destroyed.load());

  // Work posted after shutdown is destroyed without running.
  std::atomic<bool> late_ran{false};
  std::atomic<bool> late_destroyed{false};
  executor.Post([&, flag = std::make_shared<DestroyFlag>(&late_destroyed)] { late_ran = true; });
  EXPECT_TRUE(late_destroyed.load());
  EXPECT_FALSE(late_ran.load());
  EXPECT_EQ(executor.pending(), 0u);
  executor.Shutdown();  // idempotent
}

TEST(ThreadPoolExecutor, NothingRunsAfterShutdownReturns) {
  SteadyClock clock;
  auto executor = std::make_unique<ThreadPoolExecutor>(&clock, ThreadPoolOptions{.threads = 4});
  std::atomic<int64_t> ran{0};
  std::atomic<bool> shut_down{false};
  std::atomic<int> posted_after{0};
  constexpr int kPostsAfterShutdown = 1000;
  std::vector<std::thread> posters;
  for (int t = 0; t < 3; ++t) {
    posters.emplace_back([&] {
      // Posts while the pool runs, then, once Shutdown has returned, as many
      // again: nothing of those may run, and nothing queued before may run
      // late.
      int after = 0;
      for (int i = 0; !shut_down.load() || after < kPostsAfterShutdown; ++i) {
        if (shut_down.load()) {
          ++after;
        } else if (i >= 300) {
          std::this_thread::yield();
          continue;
        }
        executor->Post([&] { ran.fetch_add(1); });
        executor->PostAfter(MsToNs(1), [&] { ran.fetch_add(1); });
      }
      posted_after.fetch_add(after);
    });
  }
  while (ran.load() < 100) std::this_thread::yield();  // the pool is busy
  executor->Shutdown();
  const int64_t at_shutdown = ran.load();
  shut_down = true;
  for (auto& t : posters) t.join();
  EXPECT_GT(at_shutdown, 0);
  EXPECT_EQ(posted_after.load(), 3 * kPostsAfterShutdown);
  EXPECT_EQ(ran.load(), at_shutdown);
}

TEST(ThreadPoolExecutor, ConcurrentPostCancelAndTimers) {
  // Exercised under TSan: many threads posting, cancelling and running.
  ManualClock clock;
  ThreadPoolExecutor executor(&clock, {.threads = 4});
  std::atomic<int64_t> ran{0};
  std::atomic<int64_t> cancelled{0};
  constexpr int kPerThread = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const TimerId id = executor.PostAfter((i % 3) * kNsPerUs * 200, [&] {
          ran.fetch_add(1);
          ran.notify_all();
        });
        if ((i + t) % 4 == 0 && executor.Cancel(id)) cancelled.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  // Every timer is due now; wait for each one not cancelled to have run.
  clock.AdvanceBy(MsToNs(1));
  executor.ClockAdvanced();
  const int64_t expected = 4 * kPerThread - cancelled.load();
  for (int64_t seen = ran.load(); seen < expected; seen = ran.load()) ran.wait(seen);
  EXPECT_EQ(ran.load(), expected);
  EXPECT_GT(cancelled.load(), 0);
  EXPECT_EQ(executor.pending(), 0u);
}

TEST(RuntimeEnv, BuildsAWorkingSeededEnv) {
  RuntimeEnv runtime_env({.executor = {.threads = 2}, .seed = 42});
  Env* env = runtime_env.env();
  ASSERT_NE(env->clock, nullptr);
  ASSERT_NE(env->executor, nullptr);
  ASSERT_NE(env->rng, nullptr);
  Rng expected(42);
  EXPECT_EQ(env->rng->Next64(), expected.Next64());
  const TimeNs t0 = env->NowNs();
  Notification ran;
  std::atomic<TimeNs> ran_at{0};
  env->executor->PostAfter(MsToNs(5), [&] {
    ran_at = env->NowNs();
    ran.Notify();
  });
  ran.WaitForNotification();
  EXPECT_GE(ran_at.load() - t0, MsToNs(5));
  runtime_env.Shutdown();
}

}  // namespace
}  // namespace heatsink::runtime
