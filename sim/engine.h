// File: sim/engine.h
//
// The simulator's discrete-event engine: one queue of events ordered by
// (integer time in ns, sequence number), so events due at the same time run in
// the order they were scheduled (FIFO). Work scheduled for "now" from inside an
// event is queued behind everything already due now; nothing ever runs
// re-entrantly. SimClock and SimExecutor expose the engine to core code through
// the core/env interfaces, so core components cannot tell they are simulated.
//
// Layout, chosen for speed: the (4-ary) heap holds 16-byte PODs {time, key} where
// key = (sequence << 24) | slot, four children to a cache line, popped
// bottom-up with the grandchildren fetched ahead once the heap outgrows the
// cache; the callbacks live in a slab of slots reused through a free list and
// kept in fixed chunks that never move, so a burst grows it without copying. An event id is its
// key, so Cancel is O(1): it empties the slot and leaves a stale heap entry that the run loop skips
// (lazy cancellation). When stale entries outnumber live ones the heap is compacted, which keeps
// memory bounded for cancel-heavy users such as timeouts. After a burst (a bulk put has an event
// per object waiting at once) the slab would keep its peak size: once at most an eighth of a slab
// of 16,384 slots or more is in use, slots above twice the number in use are no longer handed out,
// and when the last of them is free the slab is cut there and its storage
// given back (MaybeShrink). A new burst before that ends the shrink. Slot
// numbers never order events (the sequence does), so this changes no output.
// Events scheduled for the current time (Post, zero delays) wait in a FIFO
// queue beside the heap instead of in it: they are due first, and their
// sequence numbers keep their place among the heap's and the lanes' events.
// Timers that move on almost every event (flow completions) live in timer
// lanes instead (AddLane): indexed heaps moved in place, merged with the main
// heap by (time, sequence) when the next event is chosen.
//
// Limits: at most `events_pending_max` events wait at once (<= 2^24 - 1, the
// slot space). Scheduling beyond it drops the event and latches
// RESOURCE_EXHAUSTED; the run loop then stops and returns that status, because
// a simulation that lost an event is no longer the scenario it claims to be.
//
// Thread safety: none. The simulated world is single-threaded by design
// (DESIGN: sim backend, one thread); every call comes from the thread that
// runs the engine. The core/env "thread-safe" promise is trivially met there.
//
// Example:
//   Engine engine;
//   engine.ScheduleAfter(MsToNs(5), [&] { ... });
//   engine.SetAfterEventHook([&] { return master.CheckInvariants(); });
//   HS_ASSIGN_OR_RETURN(StopReason why, engine.RunUntil(SecToNs(60)));
#ifndef HEATSINK_SIM_ENGINE_H_
#define HEATSINK_SIM_ENGINE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/base/knobs.h"
#include "core/env/clock.h"
#include "core/env/executor.h"
#include "core/env/time.h"
#include "sim/chunked_slab.h"
#include "sim/inline_function.h"

namespace heatsink::sim {

// An event's callback. Most are closures of a few words, a shared_ptr and a
// nested callback; up to 96 bytes they live inline in the engine's slot, so
// scheduling one does not allocate (sim/inline_function.h).
using EventFn = InlineFunction<void(), 96>;
// Same space as core's TimerId: never kNoTimer for a scheduled event.
using EventId = TimerId;
// A timer lane of one engine (see Engine::AddLane).
using LaneId = int32_t;

struct EngineKnobs {
  // Most events that may wait in the queue at once. Reaching it is a runaway
  // scenario (for example a timer storm), reported as RESOURCE_EXHAUSTED.
  int64_t events_pending_max = 4'000'000;

  [[nodiscard]] absl::Status Validate() const;
  static const KnobRegistry<EngineKnobs>& Registry();
};

// Why a run loop returned successfully.
enum class StopReason {
  kTimeReached,  // RunUntil reached its limit; the clock now reads the limit
  kIdle,         // Run drained the queue
  kPredicate,    // the stop predicate returned true after an event
};

class Engine {
 public:
  // Slot indices use the low 24 bits of an event key.
  static constexpr int kSlotBits = 24;
  static constexpr int64_t kSlotsMax = (int64_t{1} << kSlotBits) - 1;

  // REQUIRES: knobs.Validate().ok().
  explicit Engine(const EngineKnobs& knobs = EngineKnobs());
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Current simulated time: the time of the event being run, or of the last
  // one run, or the limit of the last RunUntil. Never decreases.
  TimeNs NowNs() const { return now_ns_; }

  // Schedules `fn` at absolute time `t`. REQUIRES: t >= NowNs(). Returns an id
  // for Cancel (never kNoTimer). At the pending limit the event is dropped,
  // status() becomes RESOURCE_EXHAUSTED and the returned id cancels nothing.
  EventId ScheduleAt(TimeNs t, EventFn fn);
  // REQUIRES: delay_ns >= 0.
  EventId ScheduleAfter(DurationNs delay_ns, EventFn fn) {
    return ScheduleAt(now_ns_ + delay_ns, std::move(fn));
  }
  // Zero-delay work: runs after everything already due now.
  EventId Post(EventFn fn) { return ScheduleAt(now_ns_, std::move(fn)); }

  // True if the event was pending and now never runs. False for unknown ids,
  // events that already ran or started, and ids already cancelled.
  bool Cancel(EventId id);
  // Timer lanes. A client with many timers that move often (the network's
  // flow completions, re-timed on every rate change) keeps them in a lane:
  // an indexed heap inside the engine, one timer per integer handle, all
  // firing one callback with the handle. A lane timer moves in place, with
  // no stale entry left behind and no callback rebuilt. Lane timers run
  // interleaved with every other event in (time, sequence) order, and
  // setting one (new or moved) takes the next sequence number exactly as
  // ScheduleAt does, so a lane timer runs exactly where Cancel + ScheduleAt
  // of the same work would have run it. They count in pending(),
  // events_run() and the pending limit like any event.
  //
  // Adds a lane whose timers call `fire(handle)`; the lane lives until
  // RemoveLane or the engine's end. REQUIRES: not called from an event.
  LaneId AddLane(absl::AnyInvocable<void(uint32_t handle)> fire);
  // Drops the lane's pending timers (they never run) and its callback.
  // REQUIRES: not called from one of the lane's own timers.
  void RemoveLane(LaneId lane);
  // Sets `handle`'s timer to `t` (REQUIRES: t >= NowNs(); handle < 2^31),
  // scheduling it or moving it if pending. At the pending limit a new timer
  // is dropped and status() becomes RESOURCE_EXHAUSTED, as for ScheduleAt.
  void SetLaneTimer(LaneId lane, uint32_t handle, TimeNs t);
  // SetLaneTimer for each update in order -- the same sequence numbers, the
  // same refusals at the pending limit, so the same run -- in one pass: a
  // batch that moves a large part of the lane (at least an eighth of its
  // timers) rebuilds the lane's heap once instead of sifting every timer.
  struct LaneTimerUpdate {
    uint32_t handle;
    TimeNs t;
  };
  void SetLaneTimers(LaneId lane, absl::Span<const LaneTimerUpdate> updates);
  // A sequence number drawn ahead of time, for a client that keeps several
  // logical timers behind one lane timer (the network keeps one timer per
  // route class for all the flows of that class). DrawSequence takes the
  // next number now, exactly as SetLaneTimer would. SetLaneTimerWithSequence
  // is SetLaneTimer with such a number instead of the next one, so the timer
  // runs among the events due at its time where a timer set when the number
  // was drawn would have run; several timers set one after the other with the
  // same number keep the place of the first.
  // REQUIRES: `sequence` was returned by DrawSequence.
  uint64_t DrawSequence() { return NextSequence(); }
  void SetLaneTimerWithSequence(LaneId lane, uint32_t handle, TimeNs t, uint64_t sequence);
  // True if the timer was pending and now never runs.
  bool CancelLaneTimer(LaneId lane, uint32_t handle);
  bool LaneTimerPending(LaneId lane, uint32_t handle) const;

  // Runs the next pending event (whatever its time), then the after-event
  // hook. Returns false when nothing ran: queue empty or status() not OK.
  // REQUIRES: not called from inside an event.
  bool Step();

  // Runs every event due at or before `t` in (time, sequence) order, calling
  // the hook after each and the stop predicate after the hook. Unless stopped
  // early, the clock ends at `t`. Returns the sticky status on a hook failure
  // or the pending limit. REQUIRES: t >= NowNs(); not called from an event.
  [[nodiscard]] absl::StatusOr<StopReason> RunUntil(TimeNs t);
  // Like RunUntil without a time limit: returns kIdle when the queue drains.
  [[nodiscard]] absl::StatusOr<StopReason> Run();

  // Called after every event (the scenario driver checks invariants here). A
  // non-OK result latches into status() and stops the run loop.
  void SetAfterEventHook(absl::AnyInvocable<absl::Status()> hook) {
    after_event_hook_ = std::move(hook);
  }
  // Checked after every event run by RunUntil/Run; true stops the loop.
  void SetStopPredicate(absl::AnyInvocable<bool()> predicate) {
    stop_predicate_ = std::move(predicate);
  }

  // OK until the pending limit is hit or the hook fails; then sticky.
  const absl::Status& status() const { return status_; }
  // Events run so far (cancelled events are not counted).
  uint64_t events_run() const { return events_run_; }
  // Events waiting to run (cancelled ones excluded).
  int64_t pending() const { return pending_; }
  // Slots the event slab holds, in use or free: its memory is this many
  // times a slot's size (it shrinks after a burst, see the top).
  size_t slab_slots() const { return slots_.size(); }
  // Entries the queue of events due now holds room for: a burst's room is
  // given back once the queue has run empty (at most 16,384 are kept).
  size_t due_now_capacity() const { return due_now_.capacity(); }
  // Time of the earliest pending event, if any.
  std::optional<TimeNs> NextEventTimeNs();

 private:
  struct HeapEntry {
    TimeNs time;
    uint64_t key;  // (sequence << kSlotBits) | slot; also the EventId
  };
  // The event heap is a min-heap on (time, key) (key order is sequence
  // order) and 4-ary, so a heap of a million events is half as deep as a
  // binary one. Its storage starts on a cache line and holds kHeapPad unused
  // entries before the root, so that a node's four children (4i+1..4i+4 of
  // the heap's own indices) are exactly one 64-byte line, and its sixteen
  // grandchildren four whole lines that the pop fetches ahead while it
  // compares the children.
  static constexpr size_t kHeapArity = 4;
  static constexpr size_t kHeapPad = 3;
  template <typename T>
  struct CacheLineAllocator {
    using value_type = T;
    CacheLineAllocator() = default;
    template <typename U>
    explicit CacheLineAllocator(const CacheLineAllocator<U>& /*other*/) {}
    T* allocate(size_t n) {
      return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64}));
    }
    void deallocate(T* p, size_t /*n*/) { ::operator delete (p, std::align_val_t{64}); }
    friend bool operator==(const CacheLineAllocator& /*a*/, const CacheLineAllocator& /*b*/) {
      return true;
    }
  };
  size_t HeapSize() const { return heap_.size() - kHeapPad; }
  bool HeapEmpty() const { return heap_.size() == kHeapPad; }
  // The entry at heap index i (0: the top).
  HeapEntry& HeapAt(size_t i) { return heap_[i + kHeapPad]; }
  const HeapEntry& HeapAt(size_t i) const { return heap_[i + kHeapPad]; }
  void HeapPush(const HeapEntry& e);
  // Removes the top. REQUIRES: !HeapEmpty().
  void HeapPop();
  void HeapSiftDown(size_t i);
  struct Slot {
    EventFn fn;
    uint64_t key = 0;  // 0: free
  };
  // The slab is kept in chunks of 4,096 slots that never move
  // (sim/chunked_slab.h).
  Slot& SlotAt(uint64_t slot) { return slots_[slot]; }
  const Slot& SlotAt(uint64_t slot) const { return slots_[slot]; }
  static constexpr uint64_t kSlotMask = (uint64_t{1} << kSlotBits) - 1;

  struct LaneEntry {
    TimeNs time;
    uint64_t sequence;
    uint32_t handle;
    // Runs first: (time, sequence) order, as the event heap.
    bool operator<(const LaneEntry& other) const {
      return time < other.time || (time == other.time && sequence < other.sequence);
    }
  };
  struct Lane {
    absl::AnyInvocable<void(uint32_t)> fire;  // empty once removed
    std::vector<LaneEntry> heap;              // min-heap on (time, sequence)
    std::vector<uint32_t> position;           // by handle; kNotInLane if none
  };
  static constexpr uint32_t kNotInLane = ~uint32_t{0};

  // Drops cancelled entries from the top; returns the live top or nullptr.
  const HeapEntry* PeekLive();
  // The same for the events due now.
  const HeapEntry* PeekLiveDue();
  // The event that runs next: the heap's live top (lane -1) or a lane's top,
  // whichever is first in (time, sequence) order.
  struct NextEvent {
    LaneId lane;  // a lane, or kFromHeap, or kFromDueNow
    TimeNs time;
  };
  static constexpr LaneId kFromHeap = -1;
  static constexpr LaneId kFromDueNow = -2;
  // The next event, if any (drops stale heap entries on the way).
  std::optional<NextEvent> PeekNext();
  // Runs `next` (as PeekNext returned it, nothing run since) and the hook.
  void RunEvent(const NextEvent& next);
  // Pops the live top (REQUIRES: PeekLive() != nullptr), runs it and the hook.
  void RunTop();
  // Runs the event of `entry`, taken off its queue, and the hook.
  void RunSlot(const HeapEntry& entry);
  void RunLaneTop(LaneId lane);
  void RunHook();
  void MaybeCompact();
  // Drops every stale heap entry (Cancel's lazy leftovers).
  void DropStaleEntries();
  // The slab's free list, with the shrink described at the top.
  uint32_t TakeSlot();
  void FreeSlot(uint32_t slot);
  void MaybeShrink();
  void AbandonShrink();
  void CutSlab();
  Lane& LaneAt(LaneId lane);
  const Lane& LaneAt(LaneId lane) const;
  uint64_t NextSequence();
  // True, latching RESOURCE_EXHAUSTED into status(), when no event may be
  // added (events_pending_max are waiting).
  bool RefuseAtPendingLimit();
  // Lane heap maintenance: restores the order around position `i`.
  // Where PlaceLaneTimer left a timer, and whether it must move up (an
  // earlier time, or a new entry) or down to restore the heap.
  struct LanePlacement {
    uint32_t index;
    bool earlier;
  };
  // Sets `handle`'s entry to (t, next sequence) in place, or appends it
  // (nullopt when refused at the pending limit); the caller restores the heap.
  std::optional<LanePlacement> PlaceLaneTimer(Lane& lane, uint32_t handle, TimeNs t,
                                              uint64_t sequence);
  static void LaneSiftUp(Lane& lane, uint32_t i);
  static void LaneSiftDown(Lane& lane, uint32_t i);
  static void LaneRemoveAt(Lane& lane, uint32_t i);

  const EngineKnobs knobs_;
  TimeNs now_ns_ = 0;
  uint64_t next_sequence_ = 1;
  std::vector<HeapEntry, CacheLineAllocator<HeapEntry>> heap_;
  // Events scheduled for the time it is when they are scheduled (Post, zero
  // delays) skip the heap: they queue here, in sequence order, from
  // due_now_head_ on, and PeekNext merges the queue's head with the heap's
  // top and the lanes' tops by (time, sequence) like any other source.
  std::vector<HeapEntry> due_now_;
  size_t due_now_head_ = 0;
  ChunkedSlab<Slot, 12> slots_;       // slots in use or free
  std::vector<uint32_t> free_slots_;  // below shrink_to_ while a shrink is under way
  // While the slab shrinks: slots at or above shrink_to_ are not handed out
  // again, and live_above_shrink_ of them are still in use.
  static constexpr size_t kNoShrink = ~size_t{0};
  size_t shrink_to_ = kNoShrink;
  size_t live_above_shrink_ = 0;
  std::vector<Lane> lanes_;
  int64_t pending_ = 0;
  int64_t stale_ = 0;  // cancelled entries still in heap_ or due_now_
  uint64_t events_run_ = 0;
  bool running_ = false;
  LaneId running_lane_ = -1;  // the lane whose timer is running, if any
  absl::Status status_;
  absl::AnyInvocable<absl::Status()> after_event_hook_;
  absl::AnyInvocable<bool()> stop_predicate_;
};

// core/env Clock over the engine's virtual time.
class SimClock final : public Clock {
 public:
  explicit SimClock(const Engine* engine) : engine_(engine) {}
  SimClock(const SimClock&) = delete;
  SimClock& operator=(const SimClock&) = delete;
  TimeNs NowNs() const override { return engine_->NowNs(); }

 private:
  const Engine* const engine_;
};

// core/env Executor whose work runs as engine events.
class SimExecutor final : public Executor {
 public:
  explicit SimExecutor(Engine* engine) : engine_(engine) {}
  SimExecutor(const SimExecutor&) = delete;
  SimExecutor& operator=(const SimExecutor&) = delete;

  void Post(absl::AnyInvocable<void() &&> fn) override { engine_->Post(std::move(fn)); }
  TimerId PostAfter(DurationNs delay_ns, absl::AnyInvocable<void() &&> fn) override;
  bool Cancel(TimerId id) override { return engine_->Cancel(id); }

 private:
  Engine* const engine_;
};

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_ENGINE_H_
