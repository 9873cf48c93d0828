#include "runtime/client/lookup_coalescer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink::runtime {

absl::Status LookupCoalescerOptions::Validate() const {
  if (!requester.valid()) return absl::InvalidArgumentError("requester must be non-zero");
  if (batches_in_flight_max == 0) {
    return absl::InvalidArgumentError("batches_in_flight_max must be at least 1");
  }
  if (keys_max == 0) return absl::InvalidArgumentError("keys_max must be at least 1");
  return absl::OkStatus();
}

LookupCoalescer::LookupCoalescer(MasterClient* master, LookupCoalescerOptions options)
    : master_(master), options_(std::move(options)) {
  HS_CHECK(master_ != nullptr);
  HS_CHECK_OK(options_.Validate());
}

LookupCoalescerStats LookupCoalescer::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

void LookupCoalescer::Lookup(ObjectName name, MasterClient::Callback<GetReplicaListResponse> done) {
  std::vector<Waiter> batch;
  {
    MutexLock lock(&mu_);
    ++stats_.lookups;
    if (in_flight_ >= options_.batches_in_flight_max) {
      waiting_.push_back(Waiter{std::move(name), std::move(done)});
      return;
    }
    ++in_flight_;
    ++stats_.single_calls;
  }
  batch.push_back(Waiter{std::move(name), std::move(done)});
  Send(std::move(batch));
}

std::vector<LookupCoalescer::Waiter> LookupCoalescer::NextBatch() {
  MutexLock lock(&mu_);
  std::vector<Waiter> next;
  if (waiting_.empty()) {
    --in_flight_;
    return next;
  }
  const size_t n = std::min(waiting_.size(), options_.keys_max);
  next.reserve(n);
  for (size_t i = 0; i < n; ++i) next.push_back(std::move(waiting_[i]));
  waiting_.erase(waiting_.begin(), waiting_.begin() + static_cast<ptrdiff_t>(n));
  if (n == 1) {
    ++stats_.single_calls;
  } else {
    ++stats_.batch_calls;
    stats_.batched_lookups += n;
  }
  return next;
}

void LookupCoalescer::Send(std::vector<Waiter> batch) {
  HS_CHECK(!batch.empty());
  if (batch.size() == 1) {
    GetReplicaListRequest req;
    req.name = batch[0].name;
    req.requester = options_.requester;
    req.requester_domain = options_.domain;
    master_->GetReplicaList(req, [this, done = std::move(batch[0].done)](
                                     absl::StatusOr<GetReplicaListResponse> r) mutable {
      // The next call goes out before this one's caller wakes: once it
      // has, the coalescer may be gone, so nothing touches `this` after.
      std::vector<Waiter> next = NextBatch();
      if (!next.empty()) Send(std::move(next));
      std::move(done)(std::move(r));
    });
    return;
  }
  BatchGetReplicaListRequest req;
  req.names.reserve(batch.size());
  for (const Waiter& w : batch) req.names.push_back(w.name);
  req.requester = options_.requester;
  req.requester_domain = options_.domain;
  master_->BatchGetReplicaList(req, [this, waiters = std::move(batch)](
                                        absl::StatusOr<BatchGetReplicaListResponse> r) mutable {
    std::vector<Waiter> next = NextBatch();
    if (!next.empty()) Send(std::move(next));
    if (r.ok() && r->results.size() != waiters.size()) {
      r = absl::InternalError(absl::StrCat("the master answered a batch of ", waiters.size(),
                                           " names with ", r->results.size(), " results"));
    }
    for (size_t i = 0; i < waiters.size(); ++i) {
      if (r.ok()) {
        std::move(waiters[i].done)(std::move(r->results[i]));
      } else {
        std::move(waiters[i].done)(r.status());
      }
    }
  });
}

}  // namespace heatsink::runtime
