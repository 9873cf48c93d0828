// Covers sim/engine: events run in (time, sequence) order with FIFO ties,
// zero-delay work is queued behind what is already due (never re-entrant),
// cancellation (including heavy cancel-and-reschedule that triggers heap
// compaction, and the slab shrinking after a burst), timer lanes (moved in place, one by one or in
// batches, yet run exactly where Cancel + ScheduleAt would run them; counted like events),
// RunUntil/Run/Step semantics, the after-event hook and stop predicate, the pending-event limit,
// the core/env adapters, and determinism: two runs of a seeded random workload produce identical
// traces.
#include "sim/engine.h"

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/env/rng.h"
#include "gtest/gtest.h"

namespace heatsink::sim {
namespace {

TEST(Engine, OrdersByTimeThenFifo) {
  Engine engine;
  std::vector<std::string> trace;
  auto note = [&](std::string s) { return [&trace, s] { trace.push_back(s); }; };
  engine.ScheduleAt(30, note("c30"));
  engine.ScheduleAt(10, note("a10"));
  engine.ScheduleAt(20, note("b20-first"));
  engine.ScheduleAt(20, note("b20-second"));
  engine.ScheduleAt(10, note("a10-second"));
  engine.ScheduleAt(20, note("b20-third"));
  ASSERT_TRUE(engine.Run().ok());
  EXPECT_EQ(trace, (std::vector<std::string>{"a10", "a10-second", "b20-first", "b20-second",
                                             "b20-third", "c30"}));
  EXPECT_EQ(engine.NowNs(), 30);
  EXPECT_EQ(engine.events_run(), 6u);
  EXPECT_EQ(engine.pending(), 0);
}

TEST(Engine, ZeroDelayWorkIsQueuedNotReentrant) {
  Engine engine;
  std::vector<std::string> trace;
  bool inside = false;
  engine.ScheduleAt(5, [&] {
    inside = true;
    engine.Post([&] {
      EXPECT_FALSE(inside);  // would be true if run re-entrantly
      trace.push_back("posted");
    });
    trace.push_back("first");
    inside = false;
  });
  // Already due at 5 before the Post above: runs before the posted work.
  engine.ScheduleAt(5, [&] { trace.push_back("second"); });
  ASSERT_TRUE(engine.Run().ok());
  EXPECT_EQ(trace, (std::vector<std::string>{"first", "second", "posted"}));
  EXPECT_EQ(engine.NowNs(), 5);
}

TEST(Engine, CancelPendingOnly) {
  Engine engine;
  int ran = 0;
  const EventId a = engine.ScheduleAt(10, [&] { ran += 1; });
  const EventId b = engine.ScheduleAt(20, [&] { ran += 10; });
  EventId self = kNoTimer;
  self = engine.ScheduleAt(30, [&] {
    ran += 100;
    EXPECT_FALSE(engine.Cancel(self));  // already started
  });
  EXPECT_NE(a, kNoTimer);
  EXPECT_EQ(engine.pending(), 3);
  EXPECT_TRUE(engine.Cancel(b));
  EXPECT_FALSE(engine.Cancel(b));  // twice
  EXPECT_FALSE(engine.Cancel(kNoTimer));
  EXPECT_FALSE(engine.Cancel(a + (uint64_t{1} << 40)));  // unknown id
  EXPECT_EQ(engine.pending(), 2);
  ASSERT_TRUE(engine.Run().ok());
  EXPECT_EQ(ran, 101);
  EXPECT_FALSE(engine.Cancel(a));  // already ran
}

TEST(Engine, CancelledSlotReuseDoesNotConfuseIds) {
  Engine engine;
  int ran = 0;
  const EventId old_id = engine.ScheduleAt(10, [&] { ran += 1; });
  ASSERT_TRUE(engine.Cancel(old_id));
  // Reuses the freed slot; the stale heap entry must not run it early or twice.
  const EventId new_id = engine.ScheduleAt(20, [&] { ran += 10; });
  EXPECT_NE(old_id, new_id);
  EXPECT_FALSE(engine.Cancel(old_id));
  ASSERT_TRUE(engine.RunUntil(15).ok());
  EXPECT_EQ(ran, 0);
  ASSERT_TRUE(engine.Run().ok());
  EXPECT_EQ(ran, 10);
}

TEST(Engine, TheSlabShrinksAfterABurstAndEventsKeepTheirOrderAndIds) {
  Engine engine;
  constexpr int kBurst = 100'000;
  std::vector<int> ran;
  std::vector<EventId> ids;
  // A burst: every event due at once, some cancelled; one long-lived event
  // takes a slot near the end of the slab and holds the shrink back.
  for (int i = 0; i < kBurst; ++i) {
    ids.push_back(engine.ScheduleAt(10 + i % 7, [&ran, i] { ran.push_back(i); }));
  }
  const EventId late = engine.ScheduleAt(1'000, [&ran] { ran.push_back(-1); });
  for (int i = 0; i < kBurst; i += 10) ASSERT_TRUE(engine.Cancel(ids[static_cast<size_t>(i)]));
  const size_t burst_slots = engine.slab_slots();
  EXPECT_GE(burst_slots, static_cast<size_t>(kBurst));
  // A periodic timer, rescheduled from its own event all along.
  int ticks = 0;
  std::function<void()> tick = [&] {
    ++ticks;
    if (engine.NowNs() < 2'000) engine.ScheduleAfter(5, [&] { tick(); });
  };
  engine.ScheduleAt(10, [&] { tick(); });
  ASSERT_TRUE(engine.RunUntil(500).ok());
  // Every burst event that was not cancelled ran, in (time, FIFO) order.
  std::vector<int> expected;
  for (int t = 0; t < 7; ++t) {
    for (int i = t; i < kBurst; i += 7) {
      if (i % 10 != 0) expected.push_back(i);
    }
  }
  EXPECT_EQ(ran, expected);
  // The late event's slot is still in use: the slab waits for it.
  EXPECT_EQ(engine.slab_slots(), burst_slots);
  ASSERT_TRUE(engine.RunUntil(1'100).ok());
  EXPECT_EQ(ran.back(), -1);
  // Cut down to a floor of 2,048 slots; the ids of the burst cancel nothing.
  EXPECT_LE(engine.slab_slots(), 2'048u);
  EXPECT_FALSE(engine.Cancel(late));
  for (size_t i = 1; i < ids.size(); i += 9'999) EXPECT_FALSE(engine.Cancel(ids[i]));
  // The periodic timer never missed a beat, and new events still run.
  int after = 0;
  const EventId next = engine.ScheduleAfter(1, [&] { ++after; });
  ASSERT_TRUE(engine.Run().ok());
  EXPECT_EQ(after, 1);
  EXPECT_FALSE(engine.Cancel(next));
  EXPECT_EQ(ticks, (2'000 - 10) / 5 + 1);
}

TEST(Engine, ANewBurstDuringTheShrinkGrowsTheSlabAgain) {
  Engine engine;
  std::vector<EventId> first;
  for (int i = 0; i < 40'000; ++i) first.push_back(engine.ScheduleAt(10, [] {}));
  // Long-lived events spread over the slab keep the shrink going.
  int late_ran = 0;
  for (int i = 0; i < 40'000; i += 8'000) {
    ASSERT_TRUE(engine.Cancel(first[static_cast<size_t>(i)]));
    first[static_cast<size_t>(i)] = engine.ScheduleAt(1'000, [&] { ++late_ran; });
  }
  ASSERT_TRUE(engine.RunUntil(20).ok());
  // A second burst, larger than the slots below the shrink's cut.
  int second_ran = 0;
  for (int i = 0; i < 30'000; ++i) engine.ScheduleAt(30 + i % 3, [&] { ++second_ran; });
  EXPECT_GE(engine.slab_slots(), 30'000u);
  ASSERT_TRUE(engine.Run().ok());
  EXPECT_EQ(second_ran, 30'000);
  EXPECT_EQ(late_ran, 5);
  EXPECT_EQ(engine.pending(), 0);
}

TEST(Engine, ALargeHeapRunsEventsInTimeThenScheduleOrder) {
  // Deep enough for the bottom-up pop (16,384 entries and more) and a slab
  // of several chunks; times drawn from a small range, so ties are many.
  // Every event schedules another one while the first 200,000 run: the
  // order must be (time, order of scheduling), as a sorted reference says.
  Engine engine;
  Rng rng(7);
  struct Scheduled {
    TimeNs t;
    int64_t order;
  };
  std::vector<Scheduled> scheduled;
  std::vector<int64_t> ran;
  std::function<void(TimeNs)> add;
  add = [&](TimeNs t) {
    const int64_t order = static_cast<int64_t>(scheduled.size());
    scheduled.push_back(Scheduled{t, order});
    engine.ScheduleAt(t, [&, order] {
      ran.push_back(order);
      if (scheduled.size() < 200'000) {
        add(engine.NowNs() + static_cast<TimeNs>(rng.Uniform(50)));
      }
    });
  };
  for (int i = 0; i < 60'000; ++i) add(static_cast<TimeNs>(rng.Uniform(1'000)));
  EXPECT_GE(engine.slab_slots(), 60'000u);
  ASSERT_TRUE(engine.Run().ok());
  // The reference: an event runs after every event scheduled for an earlier
  // time, and after those scheduled before it for the same time.
  std::vector<Scheduled> expected = scheduled;
  std::stable_sort(expected.begin(), expected.end(),
                   [](const Scheduled& a, const Scheduled& b) { return a.t < b.t; });
  ASSERT_EQ(ran.size(), expected.size());
  for (size_t i = 0; i < ran.size(); ++i) ASSERT_EQ(ran[i], expected[i].order) << "at " << i;
}

TEST(Engine, HeavyRescheduleStaysOrderedAndBounded) {
  // A timeout pushed back on every event: each reschedule cancels the old
  // one, which leaves stale entries that compaction must clear.
  Engine engine;
  EventId timeout = kNoTimer;
  int fired = 0;
  std::vector<TimeNs> ticks;
  for (int i = 1; i <= 5000; ++i) {
    engine.ScheduleAt(i, [&, i] {
      ticks.push_back(engine.NowNs());
      engine.Cancel(timeout);
      timeout = engine.ScheduleAfter(100, [&] { ++fired; });
      EXPECT_EQ(engine.pending(), 5000 - i + 1);
    });
  }
  ASSERT_TRUE(engine.Run().ok());
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(engine.NowNs(), 5100);
  ASSERT_EQ(ticks.size(), 5000u);
  for (int i = 0; i < 5000; ++i) EXPECT_EQ(ticks[i], i + 1);
}

// How MovingEventsTrace moves events.
enum class Mover {
  kPlain,      // plain events, moved with Cancel + ScheduleAt of the same work
  kLane,       // timers of one lane, moved one by one with SetLaneTimer
  kLaneBatch,  // timers of one lane, each event's moves in one SetLaneTimers
};

// Runs a seeded workload of events that move other pending events (`moves`
// per event), kept as `mover` says; every event also schedules a plain
// event, so lane timers and heap events interleave, with ties at equal
// times. The first `rearms` picks of an event that already ran schedule it
// again, so a batch mixes new timers with moved ones. Returns the order
// events ran in, as "time:event".
std::vector<std::string> MovingEventsTrace(Mover mover, int moves = 3, int rearms = 0) {
  Engine engine;
  Rng rng(7);
  constexpr int kEvents = 400;
  std::vector<EventId> ids(kEvents, kNoTimer);
  std::vector<std::string> trace;
  std::function<void(int)> body;
  LaneId lane = -1;
  if (mover != Mover::kPlain) {
    lane = engine.AddLane([&](uint32_t handle) { body(static_cast<int>(handle)); });
  }
  body = [&](int n) {
    trace.push_back(absl::StrCat(engine.NowNs(), ":", n));
    // Move other events (pending or not) to a time in [now, now + 20).
    std::vector<Engine::LaneTimerUpdate> batch;
    for (int k = 0; k < moves; ++k) {
      const int other = static_cast<int>(rng.Uniform(kEvents));
      const TimeNs t = engine.NowNs() + static_cast<TimeNs>(rng.Uniform(20));
      const auto handle = static_cast<uint32_t>(other);
      // A timer set earlier in this event's batch counts as pending, as it
      // would be had it been set on its own.
      const bool pending = mover == Mover::kPlain
                               ? engine.Cancel(ids[other])
                               : engine.LaneTimerPending(lane, handle) ||
                                     std::any_of(batch.begin(), batch.end(),
                                                 [handle](const Engine::LaneTimerUpdate& u) {
                                                   return u.handle == handle;
                                                 });
      if (!pending) {
        if (rearms == 0) continue;
        --rearms;
      }
      if (mover == Mover::kPlain) ids[other] = engine.ScheduleAt(t, [&, other] { body(other); });
      if (mover == Mover::kLane) engine.SetLaneTimer(lane, handle, t);
      if (mover == Mover::kLaneBatch) batch.push_back({handle, t});
    }
    if (!batch.empty()) engine.SetLaneTimers(lane, batch);
    const TimeNs t = engine.NowNs() + static_cast<TimeNs>(rng.Uniform(20));
    engine.ScheduleAt(t, [&trace, &engine, n] {
      trace.push_back(absl::StrCat(engine.NowNs(), ":plain-after-", n));
    });
  };
  std::vector<Engine::LaneTimerUpdate> first;
  for (int n = 0; n < kEvents; ++n) {
    const TimeNs t = static_cast<TimeNs>(rng.Uniform(50));
    if (mover == Mover::kPlain) {
      ids[n] = engine.ScheduleAt(t, [&, n] { body(n); });
    } else if (mover == Mover::kLane) {
      engine.SetLaneTimer(lane, static_cast<uint32_t>(n), t);
    } else {
      first.push_back({static_cast<uint32_t>(n), t});
    }
  }
  if (!first.empty()) engine.SetLaneTimers(lane, first);  // new timers, one rebuild
  EXPECT_EQ(engine.pending(), kEvents);
  EXPECT_TRUE(engine.Run().ok());
  EXPECT_EQ(engine.pending(), 0);
  EXPECT_EQ(engine.events_run(), trace.size());
  return trace;
}

TEST(Engine, LaneTimersRunWhereCancelPlusScheduleWould) {
  const std::vector<std::string> lane = MovingEventsTrace(Mover::kLane);
  const std::vector<std::string> plain = MovingEventsTrace(Mover::kPlain);
  EXPECT_EQ(lane.size(), 800u);  // every event once, and its plain follower
  EXPECT_EQ(lane, plain);
}

TEST(Engine, BatchedLaneTimerMovesRunWhereOneByOneWould) {
  // 3 moves per event sift each timer (the lane holds far more than 8x3);
  // 120 moves per event rebuild the lane's heap as it drains. With re-arms,
  // a batch also sets timers that are not in the lane (any more).
  for (const int moves : {3, 120}) {
    for (const int rearms : {0, 300}) {
      const std::vector<std::string> plain = MovingEventsTrace(Mover::kPlain, moves, rearms);
      EXPECT_EQ(plain.size(), 800u + 2u * static_cast<size_t>(rearms)) << moves << " moves";
      EXPECT_EQ(MovingEventsTrace(Mover::kLane, moves, rearms), plain)
          << moves << " moves per event, " << rearms << " re-arms";
      EXPECT_EQ(MovingEventsTrace(Mover::kLaneBatch, moves, rearms), plain)
          << moves << " moves per event, " << rearms << " re-arms";
    }
  }
}

TEST(Engine, LaneTimersMoveCancelAndCount) {
  Engine engine;
  std::vector<std::string> trace;
  const LaneId lane = engine.AddLane(
      [&](uint32_t handle) { trace.push_back(absl::StrCat(engine.NowNs(), ":lane", handle)); });
  engine.SetLaneTimer(lane, 3, 30);
  engine.SetLaneTimer(lane, 1, 10);
  engine.ScheduleAt(10, [&] { trace.push_back(absl::StrCat(engine.NowNs(), ":plain")); });
  engine.SetLaneTimer(lane, 2, 40);
  EXPECT_EQ(engine.pending(), 4);
  EXPECT_EQ(engine.NextEventTimeNs(), std::optional<TimeNs>(10));
  // Moving a timer gives it a new sequence number: at 10 it now runs after
  // the plain event scheduled before the move.
  engine.SetLaneTimer(lane, 1, 10);
  engine.SetLaneTimer(lane, 2, 5);   // earlier
  engine.SetLaneTimer(lane, 3, 50);  // later
  EXPECT_EQ(engine.pending(), 4);
  EXPECT_TRUE(engine.LaneTimerPending(lane, 3));
  EXPECT_FALSE(engine.LaneTimerPending(lane, 7));
  EXPECT_FALSE(engine.CancelLaneTimer(lane, 7));
  ASSERT_TRUE(engine.RunUntil(20).ok());
  EXPECT_EQ(trace, (std::vector<std::string>{"5:lane2", "10:plain", "10:lane1"}));
  EXPECT_FALSE(engine.LaneTimerPending(lane, 2));  // ran
  EXPECT_TRUE(engine.CancelLaneTimer(lane, 3));
  EXPECT_FALSE(engine.CancelLaneTimer(lane, 3));
  EXPECT_EQ(engine.pending(), 0);
  ASSERT_TRUE(engine.Run().ok());
  EXPECT_EQ(engine.events_run(), 3u);
  EXPECT_EQ(engine.NowNs(), 20);

  // RemoveLane drops what is pending; a timer may re-arm itself.
  int fired = 0;
  const LaneId again = engine.AddLane([&](uint32_t handle) {
    ++fired;
    if (fired < 3) engine.SetLaneTimer(again, handle, engine.NowNs() + 1);
  });
  engine.SetLaneTimer(again, 0, 25);
  engine.SetLaneTimer(lane, 9, 100);
  ASSERT_TRUE(engine.RunUntil(50).ok());
  EXPECT_EQ(fired, 3);
  EXPECT_EQ(engine.pending(), 1);
  engine.RemoveLane(lane);
  EXPECT_EQ(engine.pending(), 0);
  EXPECT_EQ(engine.NextEventTimeNs(), std::nullopt);
}

TEST(Engine, EventsDueNowKeepTheirPlaceAmongHeapAndLaneEvents) {
  // Events scheduled for the current time wait outside the heap; they still
  // run in (time, sequence) order with the heap's events and lane timers due
  // at the same time, and a cancelled one never runs.
  Engine engine;
  std::vector<std::string> trace;
  const auto note = [&](std::string what) {
    return [&trace, &engine, what] { trace.push_back(absl::StrCat(engine.NowNs(), ":", what)); };
  };
  const LaneId lane = engine.AddLane(
      [&](uint32_t handle) { trace.push_back(absl::StrCat(engine.NowNs(), ":lane", handle)); });
  engine.ScheduleAt(0, note("first"));  // due now, before the run starts
  engine.ScheduleAt(10, [&] {
    trace.push_back(absl::StrCat(engine.NowNs(), ":a"));
    engine.Post([&] {
      trace.push_back(absl::StrCat(engine.NowNs(), ":c"));
      engine.Post(note("f"));
    });
    engine.SetLaneTimer(lane, 2, engine.NowNs());
    const EventId d = engine.Post(note("d"));
    engine.ScheduleAfter(0, note("e"));
    EXPECT_TRUE(engine.Cancel(d));
    EXPECT_FALSE(engine.Cancel(d));
  });
  engine.SetLaneTimer(lane, 1, 10);
  engine.ScheduleAt(10, note("b"));
  engine.ScheduleAt(11, note("later"));
  ASSERT_TRUE(engine.Run().ok());
  EXPECT_EQ(trace, (std::vector<std::string>{"0:first", "10:a", "10:lane1", "10:b", "10:c",
                                             "10:lane2", "10:e", "10:f", "11:later"}));
  EXPECT_EQ(engine.pending(), 0);
  EXPECT_EQ(engine.events_run(), 9u);
}

TEST(Engine, CancelledEventsDueNowAreCompactedAway) {
  // Thousands of events posted and cancelled at one instant: compaction
  // drops them from the queue of events due now as from the heap, and the
  // survivors still run in order.
  Engine engine;
  std::vector<int> ran;
  engine.ScheduleAt(5, [&] {
    for (int i = 0; i < 5'000; ++i) {
      const EventId id = engine.Post([&ran, i] { ran.push_back(i); });
      if (i % 100 != 0) {
        EXPECT_TRUE(engine.Cancel(id));
      }
    }
  });
  ASSERT_TRUE(engine.Run().ok());
  std::vector<int> expected;
  for (int i = 0; i < 5'000; i += 100) expected.push_back(i);
  EXPECT_EQ(ran, expected);
  EXPECT_EQ(engine.pending(), 0);
}

TEST(Engine, ABurstOfEventsDueNowRunsInOrderAndGivesItsQueueBack) {
  // A bulk put posts an event per object at one instant: the queue grows to
  // hold them all, runs them in order, and keeps no more than 16,384
  // entries of room once empty; a second burst grows it again.
  Engine engine;
  std::vector<int> ran;
  for (int burst = 0; burst < 2; ++burst) {
    engine.ScheduleAt(5 + burst, [&engine, &ran, burst] {
      for (int i = 0; i < 40'000; ++i)
        engine.Post([&ran, burst, i] { ran.push_back(burst * 40'000 + i); });
    });
  }
  size_t capacity_in_burst = 0;
  engine.ScheduleAt(5,
                    [&] { engine.Post([&] { capacity_in_burst = engine.due_now_capacity(); }); });
  ASSERT_TRUE(engine.Run().ok());
  ASSERT_EQ(ran.size(), 80'000u);
  for (size_t i = 0; i < ran.size(); ++i) ASSERT_EQ(ran[i], static_cast<int>(i));
  EXPECT_GE(capacity_in_burst, 40'000u);
  EXPECT_LE(engine.due_now_capacity(), 16'384u);
  EXPECT_EQ(engine.pending(), 0);
}

TEST(Engine, LaneTimersCountTowardsThePendingLimit) {
  EngineKnobs knobs;
  knobs.events_pending_max = 3;
  for (const bool batched : {false, true}) {
    SCOPED_TRACE(batched ? "one batch" : "one by one");
    Engine engine(knobs);
    const LaneId lane = engine.AddLane([](uint32_t) {});
    engine.SetLaneTimer(lane, 0, 10);
    engine.ScheduleAt(10, [] {});
    // A move adds nothing, a new timer is the third event, another new one
    // would be a fourth: dropped. The batch is larger than the lane, so the
    // lane's heap is rebuilt.
    const std::vector<Engine::LaneTimerUpdate> updates = {{0, 20}, {1, 15}, {2, 5}};
    if (batched) {
      engine.SetLaneTimers(lane, updates);
    } else {
      for (const Engine::LaneTimerUpdate& u : updates) engine.SetLaneTimer(lane, u.handle, u.t);
    }
    EXPECT_EQ(engine.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_TRUE(engine.LaneTimerPending(lane, 1));
    EXPECT_FALSE(engine.LaneTimerPending(lane, 2));
    EXPECT_EQ(engine.pending(), 3);
    EXPECT_EQ(engine.NextEventTimeNs(), std::optional<TimeNs>(10));  // the plain event
  }
}

TEST(Engine, RunUntilRunsDueEventsAndSetsClock) {
  Engine engine;
  std::vector<TimeNs> ran;
  for (TimeNs t : {5, 10, 11, 40}) engine.ScheduleAt(t, [&ran, &engine] { ran.push_back(engine.NowNs()); });
  auto result = engine.RunUntil(10);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, StopReason::kTimeReached);
  EXPECT_EQ(ran, (std::vector<TimeNs>{5, 10}));  // due at the limit runs
  EXPECT_EQ(engine.NowNs(), 10);
  ASSERT_TRUE(engine.RunUntil(20).ok());
  EXPECT_EQ(engine.NowNs(), 20);
  EXPECT_EQ(engine.NextEventTimeNs(), std::optional<TimeNs>(40));
  // Scheduling after RunUntil is relative to the limit it reached.
  engine.ScheduleAfter(1, [&ran, &engine] { ran.push_back(engine.NowNs()); });
  ASSERT_TRUE(engine.Step());
  EXPECT_EQ(ran.back(), 21);
  auto idle = engine.Run();
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ(*idle, StopReason::kIdle);
  EXPECT_FALSE(engine.Step());
  EXPECT_EQ(engine.NextEventTimeNs(), std::nullopt);
}

TEST(Engine, HookRunsAfterEveryEventAndItsErrorStopsTheRun) {
  Engine engine;
  int events = 0;
  int hooks = 0;
  for (int i = 0; i < 10; ++i) engine.ScheduleAt(i, [&] { ++events; });
  engine.SetAfterEventHook([&]() -> absl::Status {
    ++hooks;
    EXPECT_EQ(hooks, events);  // after, not before, each event
    if (events == 4) return absl::InternalError("invariant broken");
    return absl::OkStatus();
  });
  auto result = engine.RunUntil(100);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(events, 4);
  EXPECT_EQ(engine.NowNs(), 3);  // the clock stays at the failing event
  EXPECT_FALSE(engine.Step());   // sticky
  EXPECT_EQ(engine.status().code(), absl::StatusCode::kInternal);
}

TEST(Engine, StopPredicateEndsTheRunEarly) {
  Engine engine;
  int events = 0;
  for (int i = 1; i <= 10; ++i) engine.ScheduleAt(i * 10, [&] { ++events; });
  engine.SetStopPredicate([&] { return events == 3; });
  auto result = engine.RunUntil(1000);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, StopReason::kPredicate);
  EXPECT_EQ(engine.NowNs(), 30);
  EXPECT_EQ(engine.pending(), 7);
}

TEST(Engine, PendingLimitLatchesResourceExhausted) {
  EngineKnobs knobs;
  knobs.events_pending_max = 3;
  Engine engine(knobs);
  int ran = 0;
  for (int i = 0; i < 3; ++i) engine.ScheduleAt(i, [&] { ++ran; });
  EXPECT_TRUE(engine.status().ok());
  const EventId dropped = engine.ScheduleAt(5, [&] { ran += 100; });
  EXPECT_NE(dropped, kNoTimer);
  EXPECT_FALSE(engine.Cancel(dropped));
  EXPECT_EQ(engine.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(engine.Run().status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ran, 0);
}

TEST(EngineKnobs, ValidateAndRegistry) {
  EngineKnobs knobs;
  EXPECT_TRUE(knobs.Validate().ok());
  knobs.events_pending_max = 0;
  EXPECT_EQ(knobs.Validate().code(), absl::StatusCode::kInvalidArgument);
  knobs.events_pending_max = Engine::kSlotsMax + 1;
  EXPECT_EQ(knobs.Validate().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(EngineKnobs::Registry().Set(knobs, "events_pending_max", "77").ok());
  EXPECT_EQ(knobs.events_pending_max, 77);
}

TEST(SimExecutor, ImplementsCoreEnvContract) {
  Engine engine;
  SimClock clock(&engine);
  SimExecutor executor(&engine);
  Executor& ex = executor;
  std::vector<std::string> trace;
  ex.PostAfter(100, [&] { trace.push_back(absl::StrCat("timer@", clock.NowNs())); });
  const TimerId cancelled = ex.PostAfter(50, [&] { trace.push_back("cancelled"); });
  ex.Post([&] {
    trace.push_back(absl::StrCat("post@", clock.NowNs()));
    ex.Post([&] { trace.push_back("nested"); });
  });
  ex.Post([&] { trace.push_back("post2"); });
  EXPECT_TRUE(ex.Cancel(cancelled));
  EXPECT_TRUE(trace.empty());  // nothing runs inside Post
  ASSERT_TRUE(engine.Run().ok());
  EXPECT_EQ(trace, (std::vector<std::string>{"post@0", "post2", "nested", "timer@100"}));
}

// A random workload: events that schedule, cancel and record, driven by one
// seed. Returns "time:label" lines.
std::vector<std::string> RandomTrace(uint64_t seed) {
  Engine engine;
  Rng rng(seed);
  std::vector<std::string> trace;
  std::vector<EventId> ids;
  int next_label = 0;
  std::function<void(int)> spawn = [&](int depth) {
    const int label = next_label++;
    const DurationNs delay = static_cast<DurationNs>(rng.Uniform(4));  // many ties
    ids.push_back(engine.ScheduleAfter(delay, [&, label, depth] {
      trace.push_back(absl::StrCat(engine.NowNs(), ":", label));
      if (depth < 6) {
        const int children = static_cast<int>(rng.Uniform(3));
        for (int c = 0; c < children; ++c) spawn(depth + 1);
      }
      if (!ids.empty() && rng.Bernoulli(1, 5)) {
        engine.Cancel(ids[rng.Uniform(ids.size())]);
      }
    }));
  };
  for (int i = 0; i < 50; ++i) spawn(0);
  EXPECT_TRUE(engine.Run().ok());
  return trace;
}

TEST(Engine, SameSeedSameTrace) {
  const std::vector<std::string> a = RandomTrace(11);
  const std::vector<std::string> b = RandomTrace(11);
  const std::vector<std::string> c = RandomTrace(12);
  EXPECT_GT(a.size(), 100u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

}  // namespace
}  // namespace heatsink::sim
