// File: runtime/transport/foreground_traffic.h
//
// Foreground first, inside one store (docs/runtime.md, "Foreground first").
// A store's data services count the foreground transfers they are serving
// (reads of clients: READs without a copy lease); its background transfers
// (replica copies the mover pushes out, READs under a copy lease) call
// YieldToForeground() before each copy chunk, so a chunk of a copy waits
// while foreground reads are in progress. The wait is bounded per chunk
// (TcpTransportKnobs::copy_yield_max_ms), so a steady foreground load slows
// copies down but can never starve them. A transfer that ended less than
// copy_yield_quiet_us ago still counts, so a stream of short reads keeps
// copies waiting rather than letting them run in its gaps. Foreground
// transfers never wait for background ones.
//
// One object per store, shared by its TCP data server and its mover
// (TcpTransportKnobs::foreground); a server or mover without one has no
// foreground to yield to.
//
// Time: every time (the bound, the quiet time, when the last transfer
// ended) is read from the Clock given at construction, the Env's. The
// production clock is a SteadyClock; tests may drive a ManualClock and call
// ClockAdvanced() after moving it, instead of sleeping.
//
// Example:
//   auto foreground = std::make_shared<ForegroundTraffic>(env->clock);
//   {
//     ForegroundTraffic::Scope reading = foreground->Enter();  // a client's READ
//     ... send the bytes ...
//   }
//   // a copy, before each chunk:
//   foreground->YieldToForeground(knobs.copy_yield_max_ms);
//
// Thread safety: thread-safe.
#ifndef HEATSINK_RUNTIME_TRANSPORT_FOREGROUND_TRAFFIC_H_
#define HEATSINK_RUNTIME_TRANSPORT_FOREGROUND_TRAFFIC_H_

#include <atomic>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "core/base/mutex.h"
#include "core/env/clock.h"
#include "core/env/time.h"
#include "core/metrics/metrics.h"
#include "runtime/transport/socket.h"
#include "runtime/transport/tcp_knobs.h"

namespace heatsink::runtime {

class ForegroundTraffic {
 public:
  // One foreground transfer in progress for as long as it lives.
  class Scope {
   public:
    explicit Scope(ForegroundTraffic* traffic) : traffic_(traffic) {}
    ~Scope() {
      if (traffic_ != nullptr) traffic_->Leave();
    }
    Scope(Scope&& other) noexcept : traffic_(other.traffic_) { other.traffic_ = nullptr; }
    Scope& operator=(Scope&&) = delete;
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    ForegroundTraffic* traffic_;
  };

  // `clock` (the Env's, never null) must outlive the object; every time is
  // read from it.
  explicit ForegroundTraffic(const Clock* clock);
  ForegroundTraffic(const ForegroundTraffic&) = delete;
  ForegroundTraffic& operator=(const ForegroundTraffic&) = delete;

  [[nodiscard]] Scope Enter();

  // Returns at once when no foreground transfer is in progress and none
  // ended in the last `quiet_us`; otherwise waits until that holds or
  // `max_wait_ms` passed (<= 0: never waits), both on the clock. Returns
  // true when it waited. Counts yields (before it waits) and yields cut
  // short by the bound. `quiet_us` > 0 treats a steady stream of short reads
  // as the load it is, not as the gaps between its reads.
  bool YieldToForeground(int64_t max_wait_ms, int64_t quiet_us = 0);

  // For a clock that something else moves (a ManualClock in tests): wakes
  // the yields waiting now to read it again, so a bound or quiet time that
  // passed ends their wait now. A waiting yield otherwise sleeps until its
  // bound or quiet time measured in real time. A steady clock needs no call.
  void ClockAdvanced();

  int64_t in_progress() const { return in_progress_.load(); }
  // Copy chunks that found foreground in progress and waited.
  uint64_t yields() const { return yields_.load(); }
  // Of those, the ones whose wait ended at the bound with foreground still
  // in progress.
  uint64_t yields_timed_out() const { return yields_timed_out_.load(); }

 private:
  void Leave();
  // When the foreground counts as idle: never (the largest TimeNs) while a
  // transfer is in progress, else `quiet_us` after the last one ended
  // (at once, the smallest TimeNs, before any has).
  TimeNs IdleAt(int64_t quiet_us) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // last_end_ before the first foreground transfer ended.
  static constexpr TimeNs kNoneEnded = std::numeric_limits<TimeNs>::min();

  const Clock* const clock_;
  Mutex mu_;  // pairs with idle_cv_; in_progress_ changes under it
  CondVar idle_cv_;
  // When the last foreground transfer ended, on the clock.
  TimeNs last_end_ ABSL_GUARDED_BY(mu_) = kNoneEnded;
  std::atomic<int64_t> in_progress_{0};
  std::atomic<uint64_t> yields_{0};
  std::atomic<uint64_t> yields_timed_out_{0};
};

// The store's foreground-first figures, for its /metrics (the renderer adds
// the heatsink_ prefix): store_copy_yields_total (copy chunks, out, in or
// pulled, that found foreground traffic and waited),
// store_copy_yields_timed_out_total (of those, the waits cut short by
// copy_yield_max_ms) and store_foreground_transfers_in_progress (reads and
// puts being served now).
std::vector<MetricFamily> ForegroundMetrics(const ForegroundTraffic& traffic);

// Marks a copy connection as background (MarkBackground with
// knobs.copy_socket_priority and knobs.copy_dscp; nothing when both are 0).
// A failure is not fatal: the copy runs unmarked, and the first failure of
// the process is written to stderr once.
void MarkCopyConnection(const Socket& socket, const TcpTransportKnobs& knobs);

// Gives the calling thread (a copy thread) the nice value
// knobs.copy_thread_nice, once per thread (nothing for 0). A failure is
// written to stderr once per process.
void NiceCopyThread(const TcpTransportKnobs& knobs);

// Sends `size` bytes of a copy as DATA frames (wire.h) of at most
// min(chunk_bytes, copy_chunk_bytes), yielding to knobs.foreground (when
// set) for at most copy_yield_max_ms before each copy_chunk_bytes. The
// receiver sees the same frames a foreground transfer sends. UNAVAILABLE
// when the connection breaks.
[[nodiscard]] absl::Status SendCopyData(const Socket& socket, const uint8_t* data, uint64_t size,
                                        const TcpTransportKnobs& knobs);

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_TRANSPORT_FOREGROUND_TRAFFIC_H_
