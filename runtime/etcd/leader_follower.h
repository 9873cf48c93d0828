// File: runtime/etcd/leader_follower.h
//
// Follows the leading master for a store or a client: reads the leader key
// every `poll_interval_ms`, and at once after Wake() (a call that met an
// unreachable or deposed master), and calls `on_change(address, epoch)`
// whenever the leader's address or epoch (the key's create revision)
// changes. A key that disappears is reported to nobody: calls keep going to
// the last leader (which refuses them, not_leader, once its lease lapsed)
// until the next one publishes itself.
//
// Thread safety: thread-safe; `on_change` runs on the follower's thread (or
// on the caller's, inside PollOnce) and must not call back into it.
#ifndef HEATSINK_RUNTIME_ETCD_LEADER_FOLLOWER_H_
#define HEATSINK_RUNTIME_ETCD_LEADER_FOLLOWER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "core/base/mutex.h"
#include "runtime/etcd/etcd_client.h"

namespace heatsink::runtime {

struct LeaderFollowerOptions {
  std::string leader_key;
  int64_t poll_interval_ms = 250;
};

class LeaderFollower {
 public:
  using OnChange = absl::AnyInvocable<void(const std::string& address, int64_t epoch)>;

  LeaderFollower(std::unique_ptr<EtcdClient> etcd, LeaderFollowerOptions options,
                 OnChange on_change);
  ~LeaderFollower();  // stops the thread
  LeaderFollower(const LeaderFollower&) = delete;
  LeaderFollower& operator=(const LeaderFollower&) = delete;

  // Reads the key once, now (on_change when a new leader is there). etcd's
  // error when it cannot be read.
  [[nodiscard]] absl::Status PollOnce();
  // Starts polling on a thread of its own.
  void Start();
  // Makes the thread read the key now (no more often than every 20 ms).
  void Wake();

 private:
  void Run();

  const std::unique_ptr<EtcdClient> etcd_;
  const LeaderFollowerOptions options_;
  Mutex poll_mu_;  // serialises polls
  OnChange on_change_ ABSL_GUARDED_BY(poll_mu_);
  std::string address_ ABSL_GUARDED_BY(poll_mu_);
  int64_t epoch_ ABSL_GUARDED_BY(poll_mu_) = 0;

  Mutex mu_;
  CondVar wake_;
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_ETCD_LEADER_FOLLOWER_H_
