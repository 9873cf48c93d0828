#include "runtime/transport/foreground_traffic.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>

#include "runtime/env/wait_until.h"
#include "runtime/transport/wire.h"

namespace heatsink::runtime {

ForegroundTraffic::Scope ForegroundTraffic::Enter() {
  MutexLock lock(&mu_);
  in_progress_.fetch_add(1);
  return Scope(this);
}

void ForegroundTraffic::Leave() {
  bool idle = false;
  {
    MutexLock lock(&mu_);
    idle = in_progress_.fetch_sub(1) == 1;
    if (idle) last_end_ = std::chrono::steady_clock::now();
  }
  if (idle) idle_cv_.SignalAll();
}

std::chrono::steady_clock::time_point ForegroundTraffic::IdleAt(int64_t quiet_us) const {
  if (in_progress_.load() > 0) return std::chrono::steady_clock::time_point::max();
  return last_end_ + std::chrono::microseconds(std::max<int64_t>(quiet_us, 0));
}

bool ForegroundTraffic::YieldToForeground(int64_t max_wait_ms, int64_t quiet_us) {
  using SteadyTime = std::chrono::steady_clock::time_point;
  // Without a quiet time, the unlocked look keeps the idle case lock-free.
  if (max_wait_ms <= 0 || (quiet_us <= 0 && in_progress_.load() == 0)) return false;
  MutexLock lock(&mu_);
  SteadyTime now = std::chrono::steady_clock::now();
  if (IdleAt(quiet_us) <= now) return false;
  yields_.fetch_add(1);
  const SteadyTime deadline = now + std::chrono::milliseconds(max_wait_ms);
  while (true) {
    const SteadyTime idle = IdleAt(quiet_us);
    now = std::chrono::steady_clock::now();
    if (idle <= now) return true;
    if (now >= deadline) {
      yields_timed_out_.fetch_add(1);
      return true;
    }
    WaitUntil(&idle_cv_, &mu_, std::min(idle, deadline));
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
