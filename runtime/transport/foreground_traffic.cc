#include "runtime/transport/foreground_traffic.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <limits>

#include "absl/time/time.h"
#include "core/base/check.h"
#include "runtime/transport/wire.h"

namespace heatsink::runtime {
namespace {

// `t` plus `count` units of `unit_ns`, saturating at the largest TimeNs: the
// knobs have no upper bound. REQUIRES: count >= 0, unit_ns > 0.
TimeNs PlusSaturating(TimeNs t, int64_t count, DurationNs unit_ns) {
  DurationNs span = 0;
  TimeNs sum = 0;
  if (__builtin_mul_overflow(count, unit_ns, &span) || __builtin_add_overflow(t, span, &sum)) {
    return std::numeric_limits<TimeNs>::max();
  }
  return sum;
}

}  // namespace

ForegroundTraffic::ForegroundTraffic(const Clock* clock) : clock_(clock) {
  HS_CHECK(clock_ != nullptr);
}

ForegroundTraffic::Scope ForegroundTraffic::Enter() {
  MutexLock lock(&mu_);
  in_progress_.fetch_add(1);
  return Scope(this);
}

void ForegroundTraffic::Leave() {
  bool idle = false;
  {
    MutexLock lock(&mu_);
    // The clock before the count: whoever sees in_progress() reach 0 and then
    // moves a driven clock finds the end before the move.
    const TimeNs now = clock_->NowNs();
    idle = in_progress_.fetch_sub(1) == 1;
    if (idle) last_end_ = now;
  }
  if (idle) idle_cv_.SignalAll();
}

void ForegroundTraffic::ClockAdvanced() {
  MutexLock lock(&mu_);
  idle_cv_.SignalAll();
}

TimeNs ForegroundTraffic::IdleAt(int64_t quiet_us) const {
  if (in_progress_.load() > 0) return std::numeric_limits<TimeNs>::max();
  if (last_end_ == kNoneEnded) return kNoneEnded;  // idle for ever, whatever the quiet time
  return PlusSaturating(last_end_, std::max<int64_t>(quiet_us, 0), kNsPerUs);
}

bool ForegroundTraffic::YieldToForeground(int64_t max_wait_ms, int64_t quiet_us) {
  // Without a quiet time, the unlocked look keeps the idle case lock-free.
  if (max_wait_ms <= 0 || (quiet_us <= 0 && in_progress_.load() == 0)) return false;
  MutexLock lock(&mu_);
  TimeNs now = clock_->NowNs();
  if (IdleAt(quiet_us) <= now) return false;
  yields_.fetch_add(1);
  const TimeNs deadline = PlusSaturating(now, max_wait_ms, kNsPerMs);
  while (true) {
    const TimeNs idle = IdleAt(quiet_us);
    if (idle <= now) return true;
    if (IsExpired(now, deadline)) {
      yields_timed_out_.fetch_add(1);
      return true;
    }
    // Woken by the last transfer's end, by ClockAdvanced() or by the time
    // left passing in real time; each reads the clock again.
    idle_cv_.WaitWithTimeout(&mu_,
                             absl::Nanoseconds(std::min(idle, deadline)) - absl::Nanoseconds(now));
    now = clock_->NowNs();
  }
}

std::vector<MetricFamily> ForegroundMetrics(const ForegroundTraffic& traffic) {
  std::vector<MetricFamily> out;
  AppendScalar(out, "store_copy_yields_total",
               "Copy chunks (sent, received or pulled) that found the store's foreground reads or "
               "puts in progress and waited.",
               MetricType::kCounter, static_cast<int64_t>(traffic.yields()));
  AppendScalar(out, "store_copy_yields_timed_out_total",
               "Copy chunk waits cut short by copy_yield_max_ms with foreground still in progress.",
               MetricType::kCounter, static_cast<int64_t>(traffic.yields_timed_out()));
  AppendScalar(out, "store_foreground_transfers_in_progress",
               "Foreground reads and puts the store is serving now.", MetricType::kGauge,
               std::max<int64_t>(traffic.in_progress(), 0));
  return out;
}

void MarkCopyConnection(const Socket& socket, const TcpTransportKnobs& knobs) {
  if (knobs.copy_socket_priority == 0 && knobs.copy_dscp == 0) return;
  const absl::Status marked = MarkBackground(socket, knobs.copy_socket_priority, knobs.copy_dscp);
  if (marked.ok()) return;
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    std::cerr << "heatsink: copy connections run unmarked (copy_socket_priority="
              << knobs.copy_socket_priority << ", copy_dscp=" << knobs.copy_dscp
              << "): " << marked.message() << "\n";
  }
}

void NiceCopyThread(const TcpTransportKnobs& knobs) {
  thread_local bool niced = false;
  if (niced || knobs.copy_thread_nice == 0) return;
  niced = true;
  // On Linux the nice value is per thread: PRIO_PROCESS with a thread id.
  const id_t tid = static_cast<id_t>(::syscall(SYS_gettid));
  if (::setpriority(PRIO_PROCESS, tid, knobs.copy_thread_nice) == 0) return;
  const int err = errno;
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    std::cerr << "heatsink: copy threads keep their priority (copy_thread_nice="
              << knobs.copy_thread_nice << "): " << std::strerror(err) << "\n";
  }
}

absl::Status SendCopyData(const Socket& socket, const uint8_t* data, uint64_t size,
                          const TcpTransportKnobs& knobs) {
  ForegroundTraffic* const foreground = knobs.foreground.get();
  const uint64_t frame_max = std::min(knobs.chunk_bytes, knobs.copy_chunk_bytes);
  uint64_t sent = 0;
  while (sent < size) {
    if (foreground != nullptr) {
      foreground->YieldToForeground(knobs.copy_yield_max_ms, knobs.copy_yield_quiet_us);
    }
    const uint64_t chunk_end = std::min<uint64_t>(size, sent + knobs.copy_chunk_bytes);
    while (sent < chunk_end) {
      const uint32_t n = static_cast<uint32_t>(std::min(frame_max, chunk_end - sent));
      uint8_t header[wire::kHeaderBytes];
      wire::EncodeHeader(wire::FrameHeader{wire::FrameType::kData, n}, header);
      const absl::Status status = SendAll2(socket, header, sizeof(header), data + sent, n);
      if (!status.ok()) return status;
      sent += n;
    }
  }
  return absl::OkStatus();
}

}  // namespace heatsink::runtime
