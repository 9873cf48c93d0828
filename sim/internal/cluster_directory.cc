// The cluster of a simulation run: its hosts, clients and segments from the
// scenario's topology, and the lookups between them.
#include "sim/internal/cluster_directory.h"

#include <optional>
#include <string>
#include <utility>

namespace heatsink::sim::runner_internal {
namespace {

constexpr uint64_t kStoreClientIdBase = 1'000'000;

}  // namespace

void ClusterDirectory::AddScenario(const Scenario& scenario) {
  uint64_t next_segment = 1;
  int32_t domain_index = 0;
  for (const ScenarioDomain& d : scenario.topology.domains) {
    const int32_t this_domain = domain_index++;
    for (const ScenarioHost& h : d.hosts) {
      HostRt host;
      host.spec = &h;
      host.index = static_cast<int>(hosts_.size());
      host.name = h.name;
      host.domain = d.name;
      host.join_at_ns = d.join_at_ns;
      host.worker_id = ClientId(1 + static_cast<uint64_t>(host.index));
      for (const ScenarioSegment& s : h.segments) {
        MountSegmentRequest req;
        req.segment_id = SegmentId(next_segment++);
        req.name = s.full_name;
        req.host = h.name;
        req.domain = d.name;
        req.capacity_bytes = static_cast<uint64_t>(s.capacity_bytes);
        req.transport_endpoint = s.full_name;
        segments_[req.segment_id] = SegmentRt{host.index, s.full_name, false};
        segment_by_name_[s.full_name] = req.segment_id;
        host.segments.push_back(std::move(req));
      }
      for (const ScenarioClient& c : h.clients) {
        ClientRt client;
        client.full_name = c.full_name;
        client.id = ClientId(kStoreClientIdBase + clients_.size());
        client.host = host.index;
        client.domain = d.name;
        client.domain_index = this_domain;
        client_index_[c.full_name] = static_cast<int>(clients_.size());
        client_by_id_[client.id.value] = static_cast<int>(clients_.size());
        clients_.push_back(std::move(client));
      }
      host_index_[h.name] = host.index;
      hosts_.push_back(std::move(host));
    }
  }
}

std::optional<int> ClusterDirectory::FindHost(const HostId& name) const {
  const auto it = host_index_.find(name);
  if (it == host_index_.end()) return std::nullopt;
  return it->second;
}

std::optional<int> ClusterDirectory::HostOfClient(ClientId client) const {
  for (const HostRt& h : hosts_) {
    if (h.worker_id == client) return h.index;
  }
  return std::nullopt;
}

const ClientRt* ClusterDirectory::FindClient(ClientId id) const {
  const auto it = client_by_id_.find(id.value);
  if (it == client_by_id_.end()) return nullptr;
  return &clients_[static_cast<size_t>(it->second)];
}

std::string ClusterDirectory::SegmentName(SegmentId id) const {
  const auto it = segments_.find(id);
  return it != segments_.end() ? it->second.full_name : "?";
}

std::optional<int> ClusterDirectory::HostOfSegment(SegmentId id) const {
  const auto it = segments_.find(id);
  if (it == segments_.end()) return std::nullopt;
  return it->second.host;
}

std::optional<HostId> ClusterDirectory::ServingHost(SegmentId id) const {
  const auto it = segments_.find(id);
  if (it == segments_.end() || !it->second.mounted) return std::nullopt;
  const HostRt& host = hosts_[static_cast<size_t>(it->second.host)];
  if (!host.worker_up) return std::nullopt;
  return host.name;
}

}  // namespace heatsink::sim::runner_internal
