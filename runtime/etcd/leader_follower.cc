#include "runtime/etcd/leader_follower.h"

#include <chrono>
#include <optional>
#include <utility>

#include "runtime/env/wait_until.h"

namespace heatsink::runtime {

LeaderFollower::LeaderFollower(std::unique_ptr<EtcdClient> etcd, LeaderFollowerOptions options,
                               OnChange on_change)
    : etcd_(std::move(etcd)), options_(std::move(options)), on_change_(std::move(on_change)) {}

LeaderFollower::~LeaderFollower() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

absl::Status LeaderFollower::PollOnce() {
  MutexLock lock(&poll_mu_);
  absl::StatusOr<std::optional<EtcdKeyValue>> leader = etcd_->Get(options_.leader_key);
  if (!leader.ok()) return leader.status();
  if (!leader->has_value()) return absl::OkStatus();
  const EtcdKeyValue& kv = **leader;
  // Never back to an older epoch (a slow read racing a newer one).
  if (kv.create_revision < epoch_ || (kv.create_revision == epoch_ && kv.value == address_)) {
    return absl::OkStatus();
  }
  address_ = kv.value;
  epoch_ = kv.create_revision;
  on_change_(address_, epoch_);
  return absl::OkStatus();
}

void LeaderFollower::Start() {
  thread_ = std::thread([this] { Run(); });
}

void LeaderFollower::Wake() {
  {
    MutexLock lock(&mu_);
    woken_ = true;
  }
  wake_.SignalAll();
}

void LeaderFollower::Run() {
  const auto interval = std::chrono::milliseconds(options_.poll_interval_ms);
  mu_.Lock();
  while (!stopping_) {
    const auto deadline = std::chrono::steady_clock::now() + interval;
    while (!stopping_ && !woken_ && WaitUntil(&wake_, &mu_, deadline)) {
    }
    if (stopping_) break;
    woken_ = false;
    mu_.Unlock();
    // Errors (etcd unreachable) are retried at the next round.
    (void)PollOnce();
    // Bounds the polls a burst of failing calls can cause.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    mu_.Lock();
  }
  mu_.Unlock();
}

}  // namespace heatsink::runtime
