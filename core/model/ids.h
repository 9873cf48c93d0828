// File: core/model/ids.h
//
// Identifiers shared by every layer. Numeric ids are strong types so a segment
// id cannot be passed where a lease id is expected. Names (tenant, key, domain,
// host) are strings; an empty tenant or domain means "default" and is
// normalised at the API boundary with NormalizeTenant/NormalizeDomain.
#ifndef HEATSINK_CORE_MODEL_IDS_H_
#define HEATSINK_CORE_MODEL_IDS_H_

#include <compare>
#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <utility>

#include "absl/strings/str_cat.h"

namespace heatsink {

template <typename Tag>
struct StrongId {
  uint64_t value = 0;

  constexpr StrongId() = default;
  constexpr explicit StrongId(uint64_t v) : value(v) {}
  constexpr bool valid() const { return value != 0; }  // 0 is never issued
  friend constexpr auto operator<=>(StrongId, StrongId) = default;
  template <typename H>
  friend H AbslHashValue(H h, StrongId id) {
    return H::combine(std::move(h), id.value);
  }
  template <typename Sink>
  friend void AbslStringify(Sink& sink, StrongId id) {
    sink.Append(absl::StrCat(id.value));
  }
};

using SegmentId = StrongId<struct SegmentIdTag>;
using ClientId = StrongId<struct ClientIdTag>;
using ReplicaId = StrongId<struct ReplicaIdTag>;
using TaskId = StrongId<struct TaskIdTag>;
using LeaseId = StrongId<struct LeaseIdTag>;
using ProposalId = StrongId<struct ProposalIdTag>;

// Object version: a per-object counter that increases on every put of the key
// (DESIGN "version"), so two puts within one clock tick still differ. 0 means
// "not given" only where an API documents it.
using Version = uint64_t;

using Domain = std::string;
using HostId = std::string;

inline constexpr absl::string_view kDefaultTenant = "default";
inline constexpr absl::string_view kDefaultDomain = "default";

inline std::string NormalizeTenant(absl::string_view tenant) {
  return tenant.empty() ? std::string(kDefaultTenant) : std::string(tenant);
}
inline std::string NormalizeDomain(absl::string_view domain) {
  return domain.empty() ? std::string(kDefaultDomain) : std::string(domain);
}

// A tenant-scoped object name. Ordered (tenant, key) for deterministic
// iteration in ordered containers.
struct ObjectName {
  std::string tenant;
  std::string key;

  friend auto operator<=>(const ObjectName&, const ObjectName&) = default;
  friend bool operator==(const ObjectName&, const ObjectName&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const ObjectName& n) {
    return H::combine(std::move(h), n.tenant, n.key);
  }
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_MODEL_IDS_H_
