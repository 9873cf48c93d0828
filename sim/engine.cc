#include "sim/engine.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink::sim {
namespace {

// A heap smaller than this pops top-down (it fits in cache, and the moved
// entry stops as soon as it is in order); a larger one bottom-up.
constexpr size_t kHeapBottomUpMin = 16'384;
// Sequence numbers use the 40 bits above the slot index.
constexpr uint64_t kSequenceMax = (uint64_t{1} << (64 - Engine::kSlotBits)) - 1;
// Compaction only pays off once the heap holds a fair number of stale entries.
constexpr int64_t kCompactStaleMin = 1024;
// A slab smaller than this keeps its size; a larger one shrinks once at most
// 1 / kShrinkInUseDivisor of it is in use, to twice the slots in use (and no
// fewer than kShrinkSlotsFloor).
constexpr size_t kShrinkSlotsMin = 16384;
constexpr size_t kShrinkInUseDivisor = 8;
constexpr size_t kShrinkSlotsFloor = 2048;
// The queue of events due now keeps at most this many entries of capacity
// once it has run empty.
constexpr size_t kDueNowKeepMax = 16384;

}  // namespace

absl::Status EngineKnobs::Validate() const {
  if (events_pending_max < 1 || events_pending_max > Engine::kSlotsMax) {
    return absl::InvalidArgumentError(
        absl::StrCat("events_pending_max must be in [1, ", Engine::kSlotsMax, "], got ",
                     events_pending_max));
  }
  return absl::OkStatus();
}

const KnobRegistry<EngineKnobs>& EngineKnobs::Registry() {
  static const KnobRegistry<EngineKnobs>* const registry = [] {
    auto* r = new KnobRegistry<EngineKnobs>();
    r->Field("events_pending_max", "most simulator events waiting at once",
             [](EngineKnobs& k) -> int64_t& { return k.events_pending_max; });
    return r;
  }();
  return *registry;
}

Engine::Engine(const EngineKnobs& knobs) : knobs_(knobs), heap_(kHeapPad, HeapEntry{0, 0}) {
  HS_CHECK_OK(knobs_.Validate());
}

EventId Engine::ScheduleAt(TimeNs t, EventFn fn) {
  HS_CHECK_MSG(t >= now_ns_, "events cannot be scheduled in the past");
  const uint64_t sequence = NextSequence();
  if (RefuseAtPendingLimit()) {
    // kSlotMask is never a live slot index, so this id cancels nothing.
    return (sequence << kSlotBits) | kSlotMask;
  }
  const uint32_t slot = TakeSlot();
  const uint64_t key = (sequence << kSlotBits) | slot;
  Slot& s = SlotAt(slot);
  s.fn = std::move(fn);
  s.key = key;
  if (t == now_ns_) {
    due_now_.push_back(HeapEntry{t, key});
  } else {
    HeapPush(HeapEntry{t, key});
  }
  ++pending_;
  return key;
}

namespace {

// (time, key) as one unsigned number, for one comparison instead of two.
// Times are never negative.
inline unsigned __int128 RankOf(TimeNs time, uint64_t key) {
  return (static_cast<unsigned __int128>(static_cast<uint64_t>(time)) << 64) | key;
}

// The child of a node (its children are [first, first + arity) clipped to
// n) that runs first, and its rank.
template <typename Entry>
inline std::pair<size_t, unsigned __int128> SmallestChild(const Entry* h, size_t first, size_t n,
                                                          size_t arity) {
  size_t best = first;
  unsigned __int128 best_rank = RankOf(h[first].time, h[first].key);
  const size_t end = std::min(first + arity, n);
  for (size_t c = first + 1; c < end; ++c) {
    const unsigned __int128 r = RankOf(h[c].time, h[c].key);
    if (r < best_rank) {
      best = c;
      best_rank = r;
    }
  }
  return {best, best_rank};
}

// Moves `e` up from the hole at `i` to where its parent runs before it.
template <typename Entry>
inline void SiftUp(Entry* h, size_t i, const Entry& e, size_t arity) {
  const unsigned __int128 rank = RankOf(e.time, e.key);
  while (i > 0) {
    const size_t parent = (i - 1) / arity;
    if (RankOf(h[parent].time, h[parent].key) < rank) break;
    h[i] = h[parent];
    i = parent;
  }
  h[i] = e;
}

}  // namespace

void Engine::HeapPush(const HeapEntry& e) {
  heap_.push_back(e);
  SiftUp(heap_.data() + kHeapPad, HeapSize() - 1, e, kHeapArity);
}

// Bottom-up: the hole the top leaves moves down along the smaller children
// to a leaf (three comparisons a level, none against the entry that fills
// it), and the last entry, which usually belongs near the bottom, moves up
// from there. On the way down the grandchildren's four lines are fetched
// while the children are compared.
void Engine::HeapPop() {
  const HeapEntry last = heap_.back();
  heap_.pop_back();
  if (HeapEmpty()) return;
  HeapEntry* const h = heap_.data() + kHeapPad;
  const size_t n = HeapSize();
  if (n < kHeapBottomUpMin) {
    h[0] = last;
    HeapSiftDown(0);
    return;
  }
  size_t i = 0;
  for (;;) {
    const size_t first = i * kHeapArity + 1;
    if (first >= n) break;
    const size_t grand = first * kHeapArity + 1;
    if (grand < n) {
      const char* line = reinterpret_cast<const char*>(h + grand);
      for (size_t b = 0; b < kHeapArity * kHeapArity * sizeof(HeapEntry); b += 64) {
        __builtin_prefetch(line + b);
      }
    }
    const size_t best = SmallestChild(h, first, n, kHeapArity).first;
    h[i] = h[best];
    i = best;
  }
  SiftUp(h, i, last, kHeapArity);
}

void Engine::HeapSiftDown(size_t i) {
  const size_t n = HeapSize();
  if (i >= n) return;
  HeapEntry* const h = heap_.data() + kHeapPad;
  const HeapEntry moving = h[i];
  const unsigned __int128 rank = RankOf(moving.time, moving.key);
  for (;;) {
    const size_t first = i * kHeapArity + 1;
    if (first >= n) break;
    const auto [best, best_rank] = SmallestChild(h, first, n, kHeapArity);
    if (rank < best_rank) break;
    h[i] = h[best];
    i = best;
  }
  h[i] = moving;
}

bool Engine::Cancel(EventId id) {
  const uint64_t slot = id & kSlotMask;
  if (id == kNoTimer || slot >= slots_.size()) return false;
  Slot& s = SlotAt(slot);
  if (s.key != id) return false;
  s.fn = nullptr;
  s.key = 0;
  FreeSlot(static_cast<uint32_t>(slot));
  --pending_;
  ++stale_;
  MaybeCompact();
  return true;
}

void Engine::MaybeCompact() {
  if (stale_ < kCompactStaleMin || stale_ <= pending_) return;
  DropStaleEntries();
}

void Engine::DropStaleEntries() {
  const auto stale = [this](const HeapEntry& e) { return SlotAt(e.key & kSlotMask).key != e.key; };
  heap_.erase(std::remove_if(heap_.begin() + kHeapPad, heap_.end(), stale), heap_.end());
  due_now_.erase(due_now_.begin(), due_now_.begin() + static_cast<std::ptrdiff_t>(due_now_head_));
  due_now_head_ = 0;
  due_now_.erase(std::remove_if(due_now_.begin(), due_now_.end(), stale), due_now_.end());
  for (size_t i = HeapSize() / kHeapArity + 1; i-- > 0;) HeapSiftDown(i);
  stale_ = 0;
}

uint32_t Engine::TakeSlot() {
  if (free_slots_.empty() && shrink_to_ != kNoShrink) AbandonShrink();
  if (free_slots_.empty()) {
    const auto slot = static_cast<uint32_t>(slots_.size());
    slots_.Grow();
    return slot;
  }
  const uint32_t slot = free_slots_.back();
  free_slots_.pop_back();
  return slot;
}

void Engine::FreeSlot(uint32_t slot) {
  if (slot >= shrink_to_) {
    HS_CHECK(live_above_shrink_ > 0);
    --live_above_shrink_;
  } else {
    free_slots_.push_back(slot);
  }
}

void Engine::MaybeShrink() {
  if (shrink_to_ != kNoShrink) {
    if (live_above_shrink_ == 0) CutSlab();
    return;
  }
  const size_t in_use = slots_.size() - free_slots_.size();
  if (slots_.size() < kShrinkSlotsMin || in_use * kShrinkInUseDivisor > slots_.size()) return;
  shrink_to_ = std::max(in_use * 2, kShrinkSlotsFloor);
  const size_t free_before = free_slots_.size();
  free_slots_.erase(std::remove_if(free_slots_.begin(), free_slots_.end(),
                                   [this](uint32_t slot) { return slot >= shrink_to_; }),
                    free_slots_.end());
  live_above_shrink_ = (slots_.size() - shrink_to_) - (free_before - free_slots_.size());
  if (live_above_shrink_ == 0) CutSlab();
}

void Engine::AbandonShrink() {
  for (size_t i = shrink_to_; i < slots_.size(); ++i) {
    if (SlotAt(i).key == 0) free_slots_.push_back(static_cast<uint32_t>(i));
  }
  shrink_to_ = kNoShrink;
  live_above_shrink_ = 0;
}

void Engine::CutSlab() {
  // Stale heap entries may name slots above the cut.
  DropStaleEntries();
  // Every slot above the cut is free (empty callback, key 0), so the chunks
  // wholly above it go and the slots of the last one stay as they are.
  slots_.CutTo(shrink_to_);
  free_slots_.shrink_to_fit();
  heap_.shrink_to_fit();
  shrink_to_ = kNoShrink;
}

bool Engine::RefuseAtPendingLimit() {
  if (pending_ < knobs_.events_pending_max) return false;
  if (status_.ok()) {
    status_ = absl::ResourceExhaustedError(absl::StrCat(
        "events_pending_max (", knobs_.events_pending_max, ") reached at t_ns=", now_ns_));
  }
  return true;
}

uint64_t Engine::NextSequence() {
  HS_CHECK_MSG(next_sequence_ <= kSequenceMax, "event sequence space exhausted");
  return next_sequence_++;
}

const Engine::HeapEntry* Engine::PeekLive() {
  while (!HeapEmpty()) {
    const HeapEntry& top = HeapAt(0);
    if (SlotAt(top.key & kSlotMask).key == top.key) return &top;
    HeapPop();
    --stale_;
  }
  return nullptr;
}

const Engine::HeapEntry* Engine::PeekLiveDue() {
  while (due_now_head_ < due_now_.size()) {
    const HeapEntry& head = due_now_[due_now_head_];
    if (SlotAt(head.key & kSlotMask).key == head.key) return &head;
    ++due_now_head_;
    --stale_;
  }
  if (due_now_.capacity() > kDueNowKeepMax) {
    // A burst's queue (a bulk put posts an event per object) is given back
    // once it has run, not kept for the rest of the run.
    std::vector<HeapEntry>().swap(due_now_);
  } else {
    due_now_.clear();
  }
  due_now_head_ = 0;
  return nullptr;
}

std::optional<Engine::NextEvent> Engine::PeekNext() {
  std::optional<NextEvent> next;
  uint64_t sequence = 0;
  // Keeps the candidate that runs first in (time, sequence) order.
  const auto consider = [&](LaneId source, TimeNs time, uint64_t seq) {
    if (!next.has_value() || time < next->time || (time == next->time && seq < sequence)) {
      next = NextEvent{source, time};
      sequence = seq;
    }
  };
  if (const HeapEntry* top = PeekLive(); top != nullptr) {
    consider(kFromHeap, top->time, top->key >> kSlotBits);
  }
  if (const HeapEntry* due = PeekLiveDue(); due != nullptr) {
    consider(kFromDueNow, due->time, due->key >> kSlotBits);
  }
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const std::vector<LaneEntry>& heap = lanes_[i].heap;
    if (!heap.empty()) consider(static_cast<LaneId>(i), heap.front().time, heap.front().sequence);
  }
  return next;
}

void Engine::RunEvent(const NextEvent& next) {
  if (next.lane >= 0) {
    RunLaneTop(next.lane);
  } else if (next.lane == kFromDueNow) {
    const HeapEntry head = due_now_[due_now_head_++];
    RunSlot(head);
  } else {
    RunTop();
  }
}

void Engine::RunTop() {
  const HeapEntry top = HeapAt(0);
  HeapPop();
  // The next top's slot is likely the next event's: fetch it while this one
  // runs (with a million events waiting, the slab is far larger than cache).
  if (!HeapEmpty()) {
    const char* next = reinterpret_cast<const char*>(&SlotAt(HeapAt(0).key & kSlotMask));
    __builtin_prefetch(next);
    __builtin_prefetch(next + sizeof(Slot) - 1);
  }
  RunSlot(top);
}

void Engine::RunSlot(const HeapEntry& top) {
  const uint32_t slot = static_cast<uint32_t>(top.key & kSlotMask);
  // Move the callback out and free its slot first: the event may schedule
  // more events and must not be cancellable while running.
  EventFn fn = std::move(SlotAt(slot).fn);
  SlotAt(slot).key = 0;
  FreeSlot(slot);
  --pending_;
  now_ns_ = top.time;
  ++events_run_;
  running_ = true;
  std::move(fn)();
  running_ = false;
  MaybeShrink();
  RunHook();
}

void Engine::RunLaneTop(LaneId id) {
  Lane& lane = LaneAt(id);
  const LaneEntry top = lane.heap.front();
  LaneRemoveAt(lane, 0);
  --pending_;
  now_ns_ = top.time;
  ++events_run_;
  running_ = true;
  running_lane_ = id;
  // Called in place: AddLane is refused while an event runs (lanes_ does
  // not move) and RemoveLane of the running lane too (`fire` stays alive).
  lane.fire(top.handle);
  running_lane_ = -1;
  running_ = false;
  RunHook();
}

void Engine::RunHook() {
  if (after_event_hook_) {
    absl::Status hook_status = after_event_hook_();
    if (!hook_status.ok() && status_.ok()) status_ = std::move(hook_status);
  }
}

bool Engine::Step() {
  HS_CHECK_MSG(!running_, "Step called from inside an event");
  if (!status_.ok()) return false;
  const std::optional<NextEvent> next = PeekNext();
  if (!next.has_value()) return false;
  RunEvent(*next);
  return true;
}

absl::StatusOr<StopReason> Engine::RunUntil(TimeNs t) {
  HS_CHECK_MSG(!running_, "RunUntil called from inside an event");
  HS_CHECK_MSG(t >= now_ns_, "RunUntil limit is in the past");
  while (status_.ok()) {
    const std::optional<NextEvent> next = PeekNext();
    if (!next.has_value() || next->time > t) {
      now_ns_ = t;
      return StopReason::kTimeReached;
    }
    RunEvent(*next);
    if (status_.ok() && stop_predicate_ && stop_predicate_()) return StopReason::kPredicate;
  }
  return status_;
}

absl::StatusOr<StopReason> Engine::Run() {
  HS_CHECK_MSG(!running_, "Run called from inside an event");
  while (status_.ok()) {
    const std::optional<NextEvent> next = PeekNext();
    if (!next.has_value()) return StopReason::kIdle;
    RunEvent(*next);
    if (status_.ok() && stop_predicate_ && stop_predicate_()) return StopReason::kPredicate;
  }
  return status_;
}

std::optional<TimeNs> Engine::NextEventTimeNs() {
  const std::optional<NextEvent> next = PeekNext();
  if (!next.has_value()) return std::nullopt;
  return next->time;
}

LaneId Engine::AddLane(absl::AnyInvocable<void(uint32_t handle)> fire) {
  HS_CHECK_MSG(fire != nullptr, "a lane needs a callback");
  HS_CHECK_MSG(!running_, "lanes are added outside events");
  lanes_.push_back(Lane{std::move(fire), {}, {}});
  return static_cast<LaneId>(lanes_.size() - 1);
}

void Engine::RemoveLane(LaneId id) {
  HS_CHECK_MSG(id != running_lane_, "a lane cannot be removed by its own timer");
  Lane& lane = LaneAt(id);
  pending_ -= static_cast<int64_t>(lane.heap.size());
  lane.heap.clear();
  lane.position.clear();
  lane.fire = nullptr;
}

Engine::Lane& Engine::LaneAt(LaneId id) {
  return const_cast<Lane&>(static_cast<const Engine*>(this)->LaneAt(id));
}

const Engine::Lane& Engine::LaneAt(LaneId id) const {
  HS_CHECK_MSG(id >= 0 && static_cast<size_t>(id) < lanes_.size() &&
                   lanes_[static_cast<size_t>(id)].fire != nullptr,
               "unknown or removed timer lane");
  return lanes_[static_cast<size_t>(id)];
}

std::optional<Engine::LanePlacement> Engine::PlaceLaneTimer(Lane& lane, uint32_t handle, TimeNs t,
                                                            uint64_t sequence) {
  HS_CHECK_MSG(t >= now_ns_, "events cannot be scheduled in the past");
  HS_CHECK_MSG(handle < kNotInLane / 2, "lane timer handle out of range");
  if (handle < lane.position.size() && lane.position[handle] != kNotInLane) {
    // Moved: time and sequence may go either way (a reserved sequence can be
    // older than the entry's).
    const uint32_t i = lane.position[handle];
    LaneEntry& e = lane.heap[i];
    const bool earlier = LaneEntry{t, sequence, handle} < e;
    e.time = t;
    e.sequence = sequence;
    return LanePlacement{i, earlier};
  }
  if (RefuseAtPendingLimit()) return std::nullopt;
  if (handle >= lane.position.size()) lane.position.resize(handle + size_t{1}, kNotInLane);
  const auto i = static_cast<uint32_t>(lane.heap.size());
  lane.heap.push_back(LaneEntry{t, sequence, handle});
  lane.position[handle] = i;
  ++pending_;
  return LanePlacement{i, true};  // a new last entry can only move up
}

void Engine::SetLaneTimer(LaneId id, uint32_t handle, TimeNs t) {
  SetLaneTimerWithSequence(id, handle, t, NextSequence());
}

void Engine::SetLaneTimerWithSequence(LaneId id, uint32_t handle, TimeNs t, uint64_t sequence) {
  HS_CHECK_MSG(sequence < next_sequence_, "lane timer sequence not drawn yet");
  Lane& lane = LaneAt(id);
  const std::optional<LanePlacement> placed = PlaceLaneTimer(lane, handle, t, sequence);
  if (!placed.has_value()) return;
  if (placed->earlier) {
    LaneSiftUp(lane, placed->index);
  } else {
    LaneSiftDown(lane, placed->index);
  }
}

void Engine::SetLaneTimers(LaneId id, absl::Span<const LaneTimerUpdate> updates) {
  Lane& lane = LaneAt(id);
  // Sifting each timer costs about 2 log2(n) comparisons, a rebuild about 2n
  // (Floyd): rebuild when the batch is at least an eighth of the lane.
  if (updates.size() * 8 < lane.heap.size()) {
    for (const LaneTimerUpdate& u : updates) SetLaneTimer(id, u.handle, u.t);
    return;
  }
  // The common case, a timer already in the lane, moves in place here with
  // the checks PlaceLaneTimer makes (a new timer takes the general path, which
  // may refuse it at the pending limit); the sequence numbers are drawn in
  // batch order either way.
  for (const LaneTimerUpdate& u : updates) {
    const uint32_t i = u.handle < lane.position.size() ? lane.position[u.handle] : kNotInLane;
    if (i == kNotInLane) {
      PlaceLaneTimer(lane, u.handle, u.t, NextSequence());
      continue;
    }
    HS_CHECK_MSG(u.t >= now_ns_, "events cannot be scheduled in the past");
    LaneEntry& e = lane.heap[i];
    e.time = u.t;
    e.sequence = NextSequence();
  }
  // (time, sequence) is a total order, so the rebuilt heap runs its timers in
  // exactly the order the sifted one would.
  for (auto i = static_cast<uint32_t>(lane.heap.size() / 2); i-- > 0;) LaneSiftDown(lane, i);
}

bool Engine::CancelLaneTimer(LaneId id, uint32_t handle) {
  Lane& lane = LaneAt(id);
  if (handle >= lane.position.size() || lane.position[handle] == kNotInLane) return false;
  LaneRemoveAt(lane, lane.position[handle]);
  --pending_;
  return true;
}

bool Engine::LaneTimerPending(LaneId id, uint32_t handle) const {
  const Lane& lane = LaneAt(id);
  return handle < lane.position.size() && lane.position[handle] != kNotInLane;
}

void Engine::LaneSiftUp(Lane& lane, uint32_t i) {
  const LaneEntry moving = lane.heap[i];
  while (i > 0) {
    const uint32_t parent = (i - 1) / 2;
    const LaneEntry& p = lane.heap[parent];
    if (!(moving < p)) break;
    lane.heap[i] = p;
    lane.position[p.handle] = i;
    i = parent;
  }
  lane.heap[i] = moving;
  lane.position[moving.handle] = i;
}

void Engine::LaneSiftDown(Lane& lane, uint32_t i) {
  const LaneEntry moving = lane.heap[i];
  const auto n = static_cast<uint32_t>(lane.heap.size());
  for (;;) {
    uint32_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && lane.heap[child + 1] < lane.heap[child]) ++child;
    const LaneEntry& c = lane.heap[child];
    if (!(c < moving)) break;
    lane.heap[i] = c;
    lane.position[c.handle] = i;
    i = child;
  }
  lane.heap[i] = moving;
  lane.position[moving.handle] = i;
}

void Engine::LaneRemoveAt(Lane& lane, uint32_t i) {
  lane.position[lane.heap[i].handle] = kNotInLane;
  const LaneEntry last = lane.heap.back();
  lane.heap.pop_back();
  if (i == lane.heap.size()) return;
  // The last entry fills the hole and moves whichever way its order says.
  lane.heap[i] = last;
  lane.position[last.handle] = i;
  if (i > 0 && last < lane.heap[(i - 1) / 2]) {
    LaneSiftUp(lane, i);
  } else {
    LaneSiftDown(lane, i);
  }
}

TimerId SimExecutor::PostAfter(DurationNs delay_ns, absl::AnyInvocable<void() &&> fn) {
  HS_CHECK_MSG(delay_ns >= 0, "PostAfter delay must not be negative");
  return engine_->ScheduleAfter(delay_ns, std::move(fn));
}

}  // namespace heatsink::sim
