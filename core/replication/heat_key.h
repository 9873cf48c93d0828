// File: core/replication/heat_key.h
//
// The key that dynamic replication counts heat, queues triggers and keeps
// admission cooldowns under: tenant + object key + requester domain. The
// domain is empty while domain-aware placement is off (RFC stage 1: keyed by
// tenant and key only); with it on, a key hot from domain B is a different
// heat key from the same object read in domain A (RFC stage 2).
//
// The recreate cooldown uses the same type with the domain of the evicted
// replica (empty in stage 1: per object).
#ifndef HEATSINK_CORE_REPLICATION_HEAT_KEY_H_
#define HEATSINK_CORE_REPLICATION_HEAT_KEY_H_

#include <compare>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "core/model/ids.h"

namespace heatsink {

// A non-owning heat key, for the read path (no string copies).
struct HeatKeyView {
  absl::string_view tenant;
  absl::string_view key;
  absl::string_view domain;  // requester domain; empty when not domain-aware
};

struct HeatKey {
  std::string tenant;
  std::string key;
  std::string domain;  // requester domain; empty when not domain-aware

  HeatKey() = default;
  HeatKey(std::string tenant_in, std::string key_in, std::string domain_in = "")
      : tenant(std::move(tenant_in)), key(std::move(key_in)), domain(std::move(domain_in)) {}
  explicit HeatKey(HeatKeyView v)
      : tenant(v.tenant.data(), v.tenant.size()),
        key(v.key.data(), v.key.size()),
        domain(v.domain.data(), v.domain.size()) {}

  HeatKeyView view() const { return HeatKeyView{tenant, key, domain}; }
  ObjectName object() const { return ObjectName{tenant, key}; }

  friend auto operator<=>(const HeatKey&, const HeatKey&) = default;
  friend bool operator==(const HeatKey&, const HeatKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const HeatKey& k) {
    return H::combine(std::move(h), k.tenant, k.key, k.domain);
  }
};

// A 64-bit hash of (tenant, key, domain) that is identical in every process
// and on every machine (unlike absl::Hash, which is salted per process), so
// anything derived from it (the heat-window shard a key lives in) is
// deterministic. Field boundaries are part of the hash: ("ab", "c") and
// ("a", "bc") differ. Processes 8 bytes per step.
uint64_t StableHeatKeyHash(HeatKeyView key);

}  // namespace heatsink

#endif  // HEATSINK_CORE_REPLICATION_HEAT_KEY_H_
