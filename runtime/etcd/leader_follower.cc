#include "runtime/etcd/leader_follower.h"

#include <chrono>
#include <optional>
#include <utility>

namespace heatsink::runtime {

LeaderFollower::LeaderFollower(std::unique_ptr<EtcdClient> etcd, LeaderFollowerOptions options,
                               OnChange on_change)
    : etcd_(std::move(etcd)), options_(std::move(options)), on_change_(std::move(on_change)) {}

LeaderFollower::~LeaderFollower() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

absl::Status LeaderFollower::PollOnce() {
  std::lock_guard<std::mutex> lock(poll_mu_);
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
    std::lock_guard<std::mutex> lock(mu_);
    woken_ = true;
  }
  wake_.notify_all();
}

void LeaderFollower::Run() {
  const auto interval = std::chrono::milliseconds(options_.poll_interval_ms);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, interval, [this] { return stopping_ || woken_; });
    if (stopping_) break;
    woken_ = false;
    lock.unlock();
    // Errors (etcd unreachable) are retried at the next round.
    (void)PollOnce();
    // Bounds the polls a burst of failing calls can cause.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    lock.lock();
  }
}

}  // namespace heatsink::runtime
