#include "runtime/etcd/leader_election.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "runtime/env/wait_until.h"

namespace heatsink::runtime {

absl::Status LeaderElectionOptions::Validate() const {
  if (leader_key.empty()) return absl::InvalidArgumentError("empty etcd leader key");
  if (advertise.empty()) return absl::InvalidArgumentError("empty advertised address");
  if (lease_ttl_sec < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd lease TTL must be at least 1 s, got ", lease_ttl_sec));
  }
  if (lease_margin_ms < 0 || lease_margin_ms >= lease_ttl_sec * 1000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lease margin must be in [0, TTL), got ", lease_margin_ms, " ms for a TTL of ",
        lease_ttl_sec, " s"));
  }
  if (watchdog_interval_ms < 1) {
    return absl::InvalidArgumentError("watchdog interval must be positive");
  }
  return absl::OkStatus();
}

LeaderElection::LeaderElection(EtcdClient* etcd, LeaderElectionOptions options,
                               const Clock* clock)
    : etcd_(etcd), options_(std::move(options)), clock_(clock) {
  HS_CHECK_OK(options_.Validate());
}

LeaderElection::~LeaderElection() { StopThreads(); }

bool LeaderElection::Held() const {
  return clock_->NowNs() < held_until_ns_.load(std::memory_order_acquire);
}

void LeaderElection::HeldFrom(TimeNs sent_ns, int64_t ttl_sec) {
  const TimeNs until = sent_ns + ttl_sec * 1'000'000'000 - options_.lease_margin_ms * 1'000'000;
  TimeNs before = held_until_ns_.load(std::memory_order_acquire);
  while (before < until &&
         !held_until_ns_.compare_exchange_weak(before, until, std::memory_order_acq_rel)) {
  }
}

absl::StatusOr<bool> LeaderElection::TryCampaign(std::string* leader) {
  HS_CHECK_MSG(epoch() == 0, "TryCampaign after winning");
  HS_ASSIGN_OR_RETURN(std::optional<EtcdKeyValue> current, etcd_->Get(options_.leader_key));
  const int64_t lease = lease_id();
  if (current.has_value()) {
    // Ours when an earlier transaction was applied but its answer was lost.
    if (lease != 0 && current->lease == lease) {
      epoch_.store(current->create_revision, std::memory_order_release);
      HeldFrom(lease_sent_ns_, lease_ttl_sec());
      return true;
    }
    if (leader != nullptr) *leader = current->value;
    return false;
  }
  if (lease == 0) {
    const TimeNs sent = clock_->NowNs();
    HS_ASSIGN_OR_RETURN(EtcdLease granted, etcd_->GrantLease(options_.lease_ttl_sec));
    lease_sent_ns_ = sent;
    lease_ttl_sec_.store(granted.ttl_sec, std::memory_order_release);
    lease_id_.store(granted.id, std::memory_order_release);
  }
  absl::StatusOr<EtcdCreateResult> created =
      etcd_->CreateIfAbsent(options_.leader_key, options_.advertise, lease_id());
  if (created.ok() && created->created) {
    // The put is the transaction's only write: its revision is the key's
    // create revision.
    epoch_.store(created->revision, std::memory_order_release);
    HeldFrom(lease_sent_ns_, lease_ttl_sec());
    return true;
  }
  // Lost the race (or do not know): the lease goes, a later round grants a
  // fresh one. A failed revoke leaves it to expire by itself.
  (void)etcd_->RevokeLease(lease_id());
  lease_id_.store(0, std::memory_order_release);
  if (!created.ok()) return created.status();
  return false;
}

void LeaderElection::KeepLeading(absl::AnyInvocable<void(const absl::Status&) &&> on_lost) {
  HS_CHECK_MSG(epoch() != 0, "KeepLeading before winning");
  HS_CHECK_MSG(!keeper_.joinable(), "KeepLeading twice");
  on_lost_ = std::move(on_lost);
  keeper_ = std::thread([this] { KeepAlive(); });
  watchdog_ = std::thread([this] { Watch(); });
}

void LeaderElection::KeepAlive() {
  const auto interval = std::chrono::milliseconds(std::max<int64_t>(lease_ttl_sec() * 1000 / 3, 1));
  mu_.Lock();
  while (!stopping_) {
    const auto deadline = std::chrono::steady_clock::now() + interval;
    while (!stopping_ && WaitUntil(&wake_, &mu_, deadline)) {
    }
    if (stopping_) break;
    mu_.Unlock();
    const TimeNs sent = clock_->NowNs();
    absl::StatusOr<int64_t> ttl = etcd_->KeepAliveOnce(lease_id());
    mu_.Lock();
    if (ttl.ok()) {
      HeldFrom(sent, *ttl);
    } else if (absl::IsNotFound(ttl.status())) {
      // etcd says the lease is gone: stop holding at once.
      lost_ = ttl.status();
      held_until_ns_.store(0, std::memory_order_release);
      wake_.SignalAll();
      break;
    }
    // Other errors (etcd unreachable, a deadline): try again next round;
    // the watchdog steps down when the deadline passes first.
  }
  mu_.Unlock();
}

void LeaderElection::Watch() {
  const auto interval = std::chrono::milliseconds(options_.watchdog_interval_ms);
  mu_.Lock();
  while (!stopping_) {
    if (!Held()) {
      absl::Status why = lost_.ok() ? absl::UnavailableError(absl::StrCat(
                                          "no keep-alive of etcd lease ", lease_id(),
                                          " acknowledged within its TTL of ", lease_ttl_sec(),
                                          " s minus the margin of ", options_.lease_margin_ms,
                                          " ms"))
                                    : lost_;
      mu_.Unlock();
      std::move(on_lost_)(why);
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + interval;
    while (!stopping_ && WaitUntil(&wake_, &mu_, deadline)) {
    }
  }
  mu_.Unlock();
}

void LeaderElection::StopThreads() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.SignalAll();
  if (keeper_.joinable() && keeper_.get_id() != std::this_thread::get_id()) keeper_.join();
  if (watchdog_.joinable()) {
    if (watchdog_.get_id() == std::this_thread::get_id()) {
      watchdog_.detach();  // on_lost resigning from the watchdog itself
    } else {
      watchdog_.join();
    }
  }
}

absl::Status LeaderElection::Resign() {
  held_until_ns_.store(0, std::memory_order_release);
  StopThreads();
  const int64_t lease = lease_id();
  if (lease == 0) return absl::OkStatus();
  lease_id_.store(0, std::memory_order_release);
  return etcd_->RevokeLease(lease);
}

}  // namespace heatsink::runtime
