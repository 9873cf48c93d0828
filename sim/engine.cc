#include "sim/engine.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink::sim {
namespace {

// Sequence numbers use the 40 bits above the slot index.
constexpr uint64_t kSequenceMax = (uint64_t{1} << (64 - Engine::kSlotBits)) - 1;
// Compaction only pays off once the heap holds a fair number of stale entries.
constexpr int64_t kCompactStaleMin = 1024;

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

Engine::Engine(const EngineKnobs& knobs) : knobs_(knobs) { HS_CHECK_OK(knobs_.Validate()); }

EventId Engine::ScheduleAt(TimeNs t, EventFn fn) {
  HS_CHECK_MSG(t >= now_ns_, "events cannot be scheduled in the past");
  HS_CHECK_MSG(next_sequence_ <= kSequenceMax, "event sequence space exhausted");
  const uint64_t sequence = next_sequence_++;
  if (pending_ >= knobs_.events_pending_max) {
    if (status_.ok()) {
      status_ = absl::ResourceExhaustedError(absl::StrCat(
          "events_pending_max (", knobs_.events_pending_max, ") reached at t_ns=", now_ns_));
    }
    // kSlotMask is never a live slot index, so this id cancels nothing.
    return (sequence << kSlotBits) | kSlotMask;
  }
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  const uint64_t key = (sequence << kSlotBits) | slot;
  Slot& s = slots_[slot];
  s.fn = std::move(fn);
  s.key = key;
  heap_.push_back(HeapEntry{t, key});
  std::push_heap(heap_.begin(), heap_.end(), Later());
  ++pending_;
  return key;
}

bool Engine::Cancel(EventId id) {
  const uint64_t slot = id & kSlotMask;
  if (id == kNoTimer || slot >= slots_.size()) return false;
  Slot& s = slots_[slot];
  if (s.key != id) return false;
  s.fn = nullptr;
  s.key = 0;
  free_slots_.push_back(static_cast<uint32_t>(slot));
  --pending_;
  ++stale_;
  MaybeCompact();
  return true;
}

EventId Engine::Reschedule(EventId id, TimeNs t) {
  const uint64_t slot = id & kSlotMask;
  if (id == kNoTimer || slot >= slots_.size() || slots_[slot].key != id) return kNoTimer;
  HS_CHECK_MSG(t >= now_ns_, "events cannot be scheduled in the past");
  HS_CHECK_MSG(next_sequence_ <= kSequenceMax, "event sequence space exhausted");
  // As Cancel: the old heap entry goes stale. As ScheduleAt: a new sequence
  // number, and the slot Cancel would have freed and ScheduleAt taken back.
  const uint64_t key = (next_sequence_++ << kSlotBits) | slot;
  slots_[slot].key = key;
  heap_.push_back(HeapEntry{t, key});
  std::push_heap(heap_.begin(), heap_.end(), Later());
  ++stale_;
  MaybeCompact();
  return key;
}

void Engine::MaybeCompact() {
  if (stale_ < kCompactStaleMin || stale_ <= pending_) return;
  auto live_end = std::remove_if(heap_.begin(), heap_.end(), [this](const HeapEntry& e) {
    return slots_[e.key & kSlotMask].key != e.key;
  });
  heap_.erase(live_end, heap_.end());
  std::make_heap(heap_.begin(), heap_.end(), Later());
  stale_ = 0;
}

const Engine::HeapEntry* Engine::PeekLive() {
  while (!heap_.empty()) {
    const HeapEntry& top = heap_.front();
    if (slots_[top.key & kSlotMask].key == top.key) return &top;
    std::pop_heap(heap_.begin(), heap_.end(), Later());
    heap_.pop_back();
    --stale_;
  }
  return nullptr;
}

void Engine::RunTop() {
  const HeapEntry top = heap_.front();
  std::pop_heap(heap_.begin(), heap_.end(), Later());
  heap_.pop_back();
  const uint32_t slot = static_cast<uint32_t>(top.key & kSlotMask);
  // Move the callback out and free its slot first: the event may schedule
  // more events (growing slots_) and must not be cancellable while running.
  EventFn fn = std::move(slots_[slot].fn);
  slots_[slot].key = 0;
  free_slots_.push_back(slot);
  --pending_;
  now_ns_ = top.time;
  ++events_run_;
  running_ = true;
  std::move(fn)();
  running_ = false;
  if (after_event_hook_) {
    absl::Status hook_status = after_event_hook_();
    if (!hook_status.ok() && status_.ok()) status_ = std::move(hook_status);
  }
}

bool Engine::Step() {
  HS_CHECK_MSG(!running_, "Step called from inside an event");
  if (!status_.ok() || PeekLive() == nullptr) return false;
  RunTop();
  return true;
}

absl::StatusOr<StopReason> Engine::RunUntil(TimeNs t) {
  HS_CHECK_MSG(!running_, "RunUntil called from inside an event");
  HS_CHECK_MSG(t >= now_ns_, "RunUntil limit is in the past");
  while (status_.ok()) {
    const HeapEntry* top = PeekLive();
    if (top == nullptr || top->time > t) {
      now_ns_ = t;
      return StopReason::kTimeReached;
    }
    RunTop();
    if (status_.ok() && stop_predicate_ && stop_predicate_()) return StopReason::kPredicate;
  }
  return status_;
}

absl::StatusOr<StopReason> Engine::Run() {
  HS_CHECK_MSG(!running_, "Run called from inside an event");
  while (status_.ok()) {
    if (PeekLive() == nullptr) return StopReason::kIdle;
    RunTop();
    if (status_.ok() && stop_predicate_ && stop_predicate_()) return StopReason::kPredicate;
  }
  return status_;
}

std::optional<TimeNs> Engine::NextEventTimeNs() {
  const HeapEntry* top = PeekLive();
  if (top == nullptr) return std::nullopt;
  return top->time;
}

TimerId SimExecutor::PostAfter(DurationNs delay_ns, absl::AnyInvocable<void() &&> fn) {
  HS_CHECK_MSG(delay_ns >= 0, "PostAfter delay must not be negative");
  return engine_->ScheduleAfter(delay_ns, std::move(fn));
}

}  // namespace heatsink::sim
