// File: sim/internal/cluster_directory.h
//
// The cluster of one simulation run (private to the runner, sim/runner.h):
// ClusterDirectory owns the records of the scenario's hosts (each with its
// store worker, NUMA model and master client once the simulation has built
// them), of its clients and of its segments, and answers the lookups between
// them: a host by name or by its worker's client id, a client by name or id,
// a segment by name, the host of a segment.
//
// Numbering, fixed by AddScenario in scenario order: hosts by network index
// from 0, store workers ClientId(1 + host index), segments SegmentId(1, 2,
// ...), clients ClientId(kStoreClientIdBase + client index).
//
// Determinism: the name and id tables are hash maps used for lookup only;
// whatever walks the cluster walks hosts() (scenario order) or the segments
// in id order.
//
// Thread safety: none (engine thread only).
#ifndef HEATSINK_SIM_INTERNAL_CLUSTER_DIRECTORY_H_
#define HEATSINK_SIM_INTERNAL_CLUSTER_DIRECTORY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/env/time.h"
#include "core/master/master_types.h"
#include "core/model/ids.h"
#include "core/worker/store_worker.h"
#include "sim/numa_model.h"
#include "sim/scenario.h"
#include "sim/sim_master_client.h"

namespace heatsink::sim::runner_internal {

// A host of the scenario, with the store worker and models that run on it.
struct HostRt {
  const ScenarioHost* spec = nullptr;
  int index = 0;  // network host index (scenario order)
  std::string name;
  Domain domain;
  TimeNs join_at_ns = 0;
  ClientId worker_id;
  std::vector<MountSegmentRequest> segments;
  std::unique_ptr<StoreWorker> worker;
  bool worker_up = false;
  DurationNs copy_delay_ns = 0;
  std::unique_ptr<NumaHostModel> numa;
  std::unique_ptr<SimMasterClient> master_client;
  int64_t worker_starts = 0;  // StartWorker calls: which StoreWorker object runs
};

// A client of the scenario (a reader and writer on a host).
struct ClientRt {
  std::string full_name;
  ClientId id;
  int host = 0;
  Domain domain;
  int32_t domain_index = 0;  // in the scenario's domains
};

// A segment of a host's store.
struct SegmentRt {
  int host = 0;
  std::string full_name;
  bool mounted = false;
};

class ClusterDirectory {
 public:
  ClusterDirectory() = default;
  ClusterDirectory(const ClusterDirectory&) = delete;
  ClusterDirectory& operator=(const ClusterDirectory&) = delete;

  // Adds the hosts, segments and clients of `scenario`'s topology, numbered
  // as above. Call once, before any lookup; `scenario` must outlive this.
  void AddScenario(const Scenario& scenario);

  // Hosts, by network index (scenario order).
  std::vector<HostRt>& hosts() { return hosts_; }
  const std::vector<HostRt>& hosts() const { return hosts_; }
  HostRt& host(int index) { return hosts_[static_cast<size_t>(index)]; }
  const HostRt& host(int index) const { return hosts_[static_cast<size_t>(index)]; }
  // The host named `name`. REQUIRES: it exists (the scenario names it).
  HostRt& HostNamed(const HostId& name) { return host(host_index_.at(name)); }
  // The index of the host named `name`, if there is one.
  std::optional<int> FindHost(const HostId& name) const;
  // The host whose store worker is `client`, if any.
  std::optional<int> HostOfClient(ClientId client) const;

  // Clients, by index (scenario order).
  const ClientRt& client(int index) const { return clients_[static_cast<size_t>(index)]; }
  // The index of the client named `full_name`. REQUIRES: it exists.
  int ClientIndex(const std::string& full_name) const { return client_index_.at(full_name); }
  const ClientRt& ClientNamed(const std::string& full_name) const {
    return client(ClientIndex(full_name));
  }
  // The client of id `id`, or null when none of the scenario's has it.
  const ClientRt* FindClient(ClientId id) const;

  // The segment named `full_name`. REQUIRES: it exists.
  SegmentId SegmentNamed(const std::string& full_name) const {
    return segment_by_name_.at(full_name);
  }
  // The segment `id`. REQUIRES: it exists.
  SegmentRt& segment(SegmentId id) { return segments_.at(id); }
  // The full name of segment `id`, "?" when there is none.
  std::string SegmentName(SegmentId id) const;
  // The host of segment `id`, if it exists.
  std::optional<int> HostOfSegment(SegmentId id) const;
  // The host that serves segment `id`'s bytes: none when the segment is
  // unknown or unmounted, or its host's store worker is down.
  std::optional<HostId> ServingHost(SegmentId id) const;

 private:
  std::vector<HostRt> hosts_;
  absl::flat_hash_map<std::string, int> host_index_;  // lookup only
  std::vector<ClientRt> clients_;
  absl::flat_hash_map<std::string, int> client_index_;  // lookup only
  absl::flat_hash_map<uint64_t, int> client_by_id_;     // lookup only
  std::map<SegmentId, SegmentRt> segments_;
  absl::flat_hash_map<std::string, SegmentId> segment_by_name_;  // lookup only
};

}  // namespace heatsink::sim::runner_internal

#endif  // HEATSINK_SIM_INTERNAL_CLUSTER_DIRECTORY_H_
