// File: core/master/internal/client_registry.h
//
// Registered clients and their last heartbeat. A client is live while
// now < last_heartbeat + client_live_ttl; the master's sweep reaps the rest
// and unmounts their segments.
//
// Thread safety: every method locks the registry's own mutex and calls
// nothing else while holding it (see MasterService for the lock order).
#ifndef HEATSINK_CORE_MASTER_INTERNAL_CLIENT_REGISTRY_H_
#define HEATSINK_CORE_MASTER_INTERNAL_CLIENT_REGISTRY_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/status/status.h"
#include "core/base/mutex.h"
#include "core/env/time.h"
#include "core/master/master_knobs.h"
#include "core/master/master_types.h"

namespace heatsink::master_internal {

struct ClientInfo {
  ClientId id;
  HostId host;
  Domain domain;  // normalised
  TimeNs registered_ns = 0;
  TimeNs last_heartbeat_ns = 0;
};

class ClientRegistry {
 public:
  explicit ClientRegistry(const MasterKnobs& knobs);
  ClientRegistry(const ClientRegistry&) = delete;
  ClientRegistry& operator=(const ClientRegistry&) = delete;

  // Registers or refreshes (idempotent; host and domain take the new values).
  // RESOURCE_EXHAUSTED at clients_max for a new client.
  [[nodiscard]] absl::Status Register(const RegisterClientRequest& req, TimeNs now);
  // NOT_FOUND for an unknown (or reaped) client: it must register again and
  // remount its segments.
  [[nodiscard]] absl::Status Heartbeat(ClientId id, TimeNs now);
  bool IsLive(ClientId id, TimeNs now) const;
  std::optional<ClientInfo> Find(ClientId id) const;
  // Removes clients whose ttl ran out; returns them in ascending id.
  std::vector<ClientId> ReapDead(TimeNs now);
  int64_t size() const;

 private:
  const DurationNs live_ttl_ns_;
  const int64_t clients_max_;
  mutable Mutex mu_;
  absl::btree_map<ClientId, ClientInfo> clients_ ABSL_GUARDED_BY(mu_);
};

}  // namespace heatsink::master_internal

#endif  // HEATSINK_CORE_MASTER_INTERNAL_CLIENT_REGISTRY_H_
