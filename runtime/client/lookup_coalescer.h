// File: runtime/client/lookup_coalescer.h
//
// Coalesces one client's concurrent single-key lookups (GetReplicaList) into
// BatchGetReplicaList calls, the way a group commit batches log writes: at
// most `batches_in_flight_max` master calls are out at once; a lookup that
// finds a free slot goes out at once, alone, as a plain GetReplicaList (a lone
// caller pays exactly what it paid without coalescing); a lookup that finds
// every slot taken waits, and when a call comes back, everything that waited
// goes out as one BatchGetReplicaList of up to `keys_max` names. A lookup so
// waits at most for the call ahead of it (each bounded by the master client's
// deadline); under load one round trip answers many lookups.
//
// The master sees the same reads either way: BatchGetReplicaList answers
// each name exactly as GetReplicaList does (core/master/master_service.h),
// the heat window included. A call that fails as a whole (transport error,
// refusal) fails each lookup it carried with that status.
//
// Example:
//   LookupCoalescer lookups(master, {.requester = ClientId(7), .domain = "a"});
//   lookups.Lookup(ObjectName{"", "k"}, [](absl::StatusOr<GetReplicaListResponse> r) {...});
//
// Thread-safe. `done` runs on the master client's callback thread, never
// inside Lookup. REQUIRES: no lookup is outstanding when the coalescer is
// destroyed (HeatsinkClient's calls block until answered).
#ifndef HEATSINK_RUNTIME_CLIENT_LOOKUP_COALESCER_H_
#define HEATSINK_RUNTIME_CLIENT_LOOKUP_COALESCER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "core/base/mutex.h"
#include "core/master/master_types.h"
#include "core/worker/master_client.h"

namespace heatsink::runtime {

struct LookupCoalescerOptions {
  ClientId requester = {};  // the reads' requester (the heat window keys on it)
  Domain domain = {};       // the requester's domain (empty = default)
  // Master calls out at once (>= 1).
  size_t batches_in_flight_max = 1;
  // Names in one BatchGetReplicaList (1 .. the master's batch_keys_max).
  size_t keys_max = 128;

  [[nodiscard]] absl::Status Validate() const;
};

struct LookupCoalescerStats {
  uint64_t lookups = 0;          // Lookup calls
  uint64_t single_calls = 0;     // GetReplicaList calls sent
  uint64_t batch_calls = 0;      // BatchGetReplicaList calls sent
  uint64_t batched_lookups = 0;  // lookups those batches carried
};

class LookupCoalescer {
 public:
  // REQUIRES: options.Validate().ok() (checked); `master` outlives this.
  LookupCoalescer(MasterClient* master, LookupCoalescerOptions options);
  LookupCoalescer(const LookupCoalescer&) = delete;
  LookupCoalescer& operator=(const LookupCoalescer&) = delete;

  void Lookup(ObjectName name, MasterClient::Callback<GetReplicaListResponse> done);

  LookupCoalescerStats stats() const;

 private:
  struct Waiter {
    ObjectName name;
    MasterClient::Callback<GetReplicaListResponse> done;
  };

  // Sends `batch` (one call); its completion sends what waited meanwhile.
  void Send(std::vector<Waiter> batch);
  // A call came back: sends the next batch, or frees the slot. Returns the
  // waiters the next call carries (empty: the slot is free).
  std::vector<Waiter> NextBatch();

  MasterClient* const master_;
  const LookupCoalescerOptions options_;

  mutable Mutex mu_;
  std::vector<Waiter> waiting_ ABSL_GUARDED_BY(mu_);  // oldest first
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  LookupCoalescerStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_CLIENT_LOOKUP_COALESCER_H_
