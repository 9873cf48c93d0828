// Covers the runtime Env: the steady clock is monotonic; the thread-pool
// executor runs posted work off the caller's thread, runs timers in due order
// and equal-due work in post order, never runs a timer early, cancels timers
// that have not started, and on Shutdown drains due work, drops future timers
// and late posts (destroying them unrun) and runs nothing after it returns.
// RuntimeEnv wires the three parts into one Env with a seeded Rng.
#include "runtime/env/thread_pool_executor.h"

#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/time/time.h"
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
  SteadyClock clock;
  ThreadPoolExecutor executor(&clock, {.threads = 1});
  OrderLog log;
  std::latch remaining(3);
  const TimeNs start = clock.NowNs();
  std::atomic<TimeNs> ran_at_30{0};
  executor.PostAfter(MsToNs(30), [&] {
    ran_at_30.store(clock.NowNs());
    log.Add(30);
    remaining.count_down();
  });
  executor.PostAfter(MsToNs(10), [&] {
    log.Add(10);
    remaining.count_down();
  });
  executor.PostAfter(MsToNs(20), [&] {
    log.Add(20);
    remaining.count_down();
  });
  remaining.wait();
  EXPECT_EQ(log.Get(), (std::vector<int>{10, 20, 30}));
  EXPECT_GE(ran_at_30.load() - start, MsToNs(30));
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

TEST(ThreadPoolExecutor, EarlierTimerPostedLaterWakesSleepingWorker) {
  SteadyClock clock;
  ThreadPoolExecutor executor(&clock, {.threads = 1});
  Notification late_ran;
  Notification early_ran;
  executor.PostAfter(SecToNs(3600), [&] { late_ran.Notify(); });
  // The worker now sleeps until the hour-long timer; a short one must still run.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  executor.PostAfter(MsToNs(5), [&] { early_ran.Notify(); });
  EXPECT_TRUE(early_ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_FALSE(late_ran.HasBeenNotified());
}

TEST(ThreadPoolExecutor, CancelStopsTimersThatHaveNotStarted) {
  SteadyClock clock;
  ThreadPoolExecutor executor(&clock, {.threads = 2});
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
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
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
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
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
  std::atomic<bool> stop_posting{false};
  std::vector<std::thread> posters;
  for (int t = 0; t < 3; ++t) {
    posters.emplace_back([&] {
      while (!stop_posting.load()) {
        executor->Post([&] { ran.fetch_add(1); });
        executor->PostAfter(MsToNs(1), [&] { ran.fetch_add(1); });
        std::this_thread::yield();
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  executor->Shutdown();
  const int64_t at_shutdown = ran.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop_posting = true;
  for (auto& t : posters) t.join();
  EXPECT_GT(at_shutdown, 0);
  EXPECT_EQ(ran.load(), at_shutdown);
}

TEST(ThreadPoolExecutor, ConcurrentPostCancelAndTimers) {
  // Exercised under TSan: many threads posting, cancelling and running.
  SteadyClock clock;
  ThreadPoolExecutor executor(&clock, {.threads = 4});
  std::atomic<int64_t> ran{0};
  std::atomic<int64_t> cancelled{0};
  constexpr int kPerThread = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const TimerId id = executor.PostAfter((i % 3) * kNsPerUs * 200, [&] { ran.fetch_add(1); });
        if ((i + t) % 4 == 0 && executor.Cancel(id)) cancelled.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  const TimeNs deadline = clock.NowNs() + SecToNs(10);
  while (ran.load() + cancelled.load() < 4 * kPerThread && clock.NowNs() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(ran.load() + cancelled.load(), 4 * kPerThread);
  EXPECT_GT(cancelled.load(), 0);
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
