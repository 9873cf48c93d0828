#include "core/replication/replica_selection.h"

#include <tuple>

#include "core/env/rng.h"
#include "core/replication/placement.h"

namespace heatsink {
namespace {

std::optional<size_t> FirstMatching(absl::Span<const ReadableReplica> replicas, bool require_memory,
                                    const HostId* host) {
  for (size_t i = 0; i < replicas.size(); ++i) {
    if (require_memory && !replicas[i].memory) continue;
    if (host != nullptr && replicas[i].host != *host) continue;
    return i;
  }
  return std::nullopt;
}

std::optional<size_t> SelectFirst(const ReaderIdentity& reader,
                                  absl::Span<const ReadableReplica> replicas) {
  // A reader without a host name has no local replica.
  if (!reader.host.empty()) {
    if (auto local = FirstMatching(replicas, /*require_memory=*/true, &reader.host)) return local;
  }
  if (auto memory = FirstMatching(replicas, /*require_memory=*/true, nullptr)) return memory;
  return FirstMatching(replicas, /*require_memory=*/false, nullptr);
}

std::optional<size_t> SelectSpread(const ReaderIdentity& reader, const ObjectName& object,
                                   absl::Span<const ReadableReplica> replicas, uint64_t seed) {
  const uint64_t reader_hash = StableHashCombine(Mix64(seed), reader.client.value);
  // Rank: local first (0) then by domain cost (1 + cost); highest score wins
  // within a rank; segment id breaks an exact score tie.
  using Rank = std::tuple<int, uint64_t, uint64_t>;  // (rank, ~score, segment)
  std::optional<size_t> best;
  Rank best_rank{};
  for (size_t i = 0; i < replicas.size(); ++i) {
    const ReadableReplica& r = replicas[i];
    if (!r.memory) continue;
    const bool local = !reader.host.empty() && r.host == reader.host;
    const int rank = local ? 0 : 1 + DomainCost(reader.domain, r.domain);
    const uint64_t score = StableHashCombine(reader_hash, PlacementTieHash(object, r.segment));
    const Rank key{rank, ~score, r.segment.value};
    if (!best.has_value() || key < best_rank) {
      best = i;
      best_rank = key;
    }
  }
  if (best.has_value()) return best;
  return FirstMatching(replicas, /*require_memory=*/false, nullptr);
}

}  // namespace

std::optional<size_t> SelectReplicaForRead(ReplicaSelectionPolicy policy,
                                           const ReaderIdentity& reader, const ObjectName& object,
                                           absl::Span<const ReadableReplica> replicas,
                                           uint64_t seed) {
  switch (policy) {
    case ReplicaSelectionPolicy::kFirst:
      return SelectFirst(reader, replicas);
    case ReplicaSelectionPolicy::kSpread:
      return SelectSpread(reader, object, replicas, seed);
  }
  return std::nullopt;
}

}  // namespace heatsink
