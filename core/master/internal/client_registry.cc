#include "core/master/internal/client_registry.h"

#include "absl/strings/str_cat.h"

namespace heatsink::master_internal {

ClientRegistry::ClientRegistry(const MasterKnobs& knobs)
    : live_ttl_ns_(knobs.client_live_ttl_ns()), clients_max_(knobs.clients_max) {}

absl::Status ClientRegistry::Register(const RegisterClientRequest& req, TimeNs now) {
  MutexLock lock(&mu_);
  auto it = clients_.find(req.client_id);
  if (it == clients_.end()) {
    if (static_cast<int64_t>(clients_.size()) >= clients_max_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("clients_max (", clients_max_, ") clients are registered"));
    }
    it = clients_.emplace(req.client_id, ClientInfo{req.client_id, {}, {}, now, now}).first;
  }
  it->second.host = req.host;
  it->second.domain = NormalizeDomain(req.domain);
  it->second.last_heartbeat_ns = now;
  return absl::OkStatus();
}

absl::Status ClientRegistry::Heartbeat(ClientId id, TimeNs now) {
  MutexLock lock(&mu_);
  auto it = clients_.find(id);
  if (it == clients_.end()) {
    return absl::NotFoundError(
        absl::StrCat("client ", id.value, " is not registered; register and remount"));
  }
  it->second.last_heartbeat_ns = now;
  return absl::OkStatus();
}

bool ClientRegistry::IsLive(ClientId id, TimeNs now) const {
  MutexLock lock(&mu_);
  auto it = clients_.find(id);
  return it != clients_.end() && !IsExpired(now, it->second.last_heartbeat_ns + live_ttl_ns_);
}

std::optional<ClientInfo> ClientRegistry::Find(ClientId id) const {
  MutexLock lock(&mu_);
  auto it = clients_.find(id);
  if (it == clients_.end()) return std::nullopt;
  return it->second;
}

std::vector<ClientId> ClientRegistry::ReapDead(TimeNs now) {
  MutexLock lock(&mu_);
  std::vector<ClientId> dead;
  for (auto it = clients_.begin(); it != clients_.end();) {
    if (IsExpired(now, it->second.last_heartbeat_ns + live_ttl_ns_)) {
      dead.push_back(it->first);
      it = clients_.erase(it);
    } else {
      ++it;
    }
  }
  return dead;
}

int64_t ClientRegistry::size() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(clients_.size());
}

}  // namespace heatsink::master_internal
