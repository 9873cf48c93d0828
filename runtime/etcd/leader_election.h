// File: runtime/etcd/leader_election.h
//
// Leader election of heatsink-master over etcd (Mooncake's convention: the
// leader publishes its address under a key attached to its lease).
//
// Campaign. TryCampaign() reads the leader key; when it is absent it grants a
// lease of `lease_ttl_sec` and runs one transaction
// "create_revision(key) == 0 -> put(key, advertise, lease)". The winner's
// epoch is the key's create revision: etcd's revisions only grow, so every
// later leader has a larger epoch (the fence clients check).
//
// Holding. KeepLeading() starts two threads: a keeper that sends one
// keep-alive every TTL/3 (each on its own LeaseKeepAlive stream, bounded by
// the etcd client's call deadline) and a watchdog. The lease counts as held
// until the send time of the last acknowledged keep-alive (or of the grant)
// plus the TTL etcd answered, minus `lease_margin_ms`: etcd restarts the
// lease's clock when it receives the keep-alive, which is after we sent it,
// so our deadline comes first. Held() compares that deadline with the
// monotonic clock on every call, so a master stopped (SIGSTOP) past its lease
// refuses calls the moment it runs again, before any thread of ours notices.
// The watchdog calls `on_lost` once, within `watchdog_interval_ms` of the
// deadline, or at once when etcd says the lease is gone.
//
// Thread safety: Held(), epoch() and lease_id() are thread-safe; the others
// are called from one thread (the process's main thread).
#ifndef HEATSINK_RUNTIME_ETCD_LEADER_ELECTION_H_
#define HEATSINK_RUNTIME_ETCD_LEADER_ELECTION_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/env/clock.h"
#include "runtime/etcd/etcd_client.h"

namespace heatsink::runtime {

struct LeaderElectionOptions {
  std::string leader_key;  // LeaderKey(prefix)
  std::string advertise;   // the address stores and clients should call
  // The etcd lease's TTL (etcd may raise it to its minimum, 2 s by default).
  int64_t lease_ttl_sec = 5;
  // Held() turns false this long before the lease could expire in etcd.
  int64_t lease_margin_ms = 500;
  // How often the watchdog compares the deadline with the clock.
  int64_t watchdog_interval_ms = 50;

  [[nodiscard]] absl::Status Validate() const;
};

class LeaderElection {
 public:
  // REQUIRES: `etcd` and `clock` (monotonic) outlive this object.
  LeaderElection(EtcdClient* etcd, LeaderElectionOptions options, const Clock* clock);
  // Stops the threads; does not revoke the lease (Resign does).
  ~LeaderElection();
  LeaderElection(const LeaderElection&) = delete;
  LeaderElection& operator=(const LeaderElection&) = delete;

  // One round. True when this candidate leads now (epoch() is set); false
  // when another does (its address in `*leader` when given) or the key was
  // taken meanwhile. etcd's errors as they come.
  [[nodiscard]] absl::StatusOr<bool> TryCampaign(std::string* leader = nullptr);

  // REQUIRES: TryCampaign() returned true. `on_lost` runs once, on the
  // watchdog thread, when the lease is no longer certainly held.
  void KeepLeading(absl::AnyInvocable<void(const absl::Status&) &&> on_lost);

  // The lease is certainly held now (monotonic clock).
  bool Held() const;
  int64_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  int64_t lease_id() const { return lease_id_.load(std::memory_order_acquire); }
  int64_t lease_ttl_sec() const { return lease_ttl_sec_.load(std::memory_order_acquire); }

  // Stops the threads and revokes the lease, so the key goes at once and a
  // standby can lead without waiting out the TTL. Held() is false after.
  [[nodiscard]] absl::Status Resign();

 private:
  // Extends the deadline to `sent_ns` + `ttl_sec` - margin.
  void HeldFrom(TimeNs sent_ns, int64_t ttl_sec);
  void KeepAlive();
  void Watch();
  void StopThreads();

  EtcdClient* const etcd_;
  const LeaderElectionOptions options_;
  const Clock* const clock_;
  std::atomic<int64_t> lease_id_{0};
  std::atomic<int64_t> lease_ttl_sec_{0};
  std::atomic<int64_t> epoch_{0};
  // Held() while clock_->NowNs() < held_until_ns_.
  std::atomic<TimeNs> held_until_ns_{0};
  TimeNs lease_sent_ns_ = 0;  // when the grant of lease_id_ was sent

  Mutex mu_;
  CondVar wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status lost_ ABSL_GUARDED_BY(mu_);  // why the keeper saw the lease go
  absl::AnyInvocable<void(const absl::Status&) &&> on_lost_;
  std::thread keeper_;
  std::thread watchdog_;
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_ETCD_LEADER_ELECTION_H_
