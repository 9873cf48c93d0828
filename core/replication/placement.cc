#include "core/replication/placement.h"

#include <tuple>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "core/base/check.h"
#include "core/env/rng.h"

namespace heatsink {
namespace {

absl::string_view Normalized(absl::string_view domain) {
  return domain.empty() ? kDefaultDomain : domain;
}

using Wide = unsigned __int128;

uint64_t UsedOrReserved(const SegmentCandidate& s) {
  const uint64_t sum = s.used_bytes + s.reserved_bytes;
  return sum < s.used_bytes ? UINT64_MAX : sum;  // saturate on overflow
}

uint64_t FreeBytes(const SegmentCandidate& s) {
  const uint64_t taken = UsedOrReserved(s);
  return taken >= s.capacity_bytes ? 0 : s.capacity_bytes - taken;
}

// Bytes in use after the copy, exactly.
Wide ProjectedBytes(const SegmentCandidate& s, uint64_t size_bytes) {
  return static_cast<Wide>(s.used_bytes) + s.reserved_bytes + size_bytes;
}

// (projected / capacity) <= cap_ppm / 1e6, in exact integer arithmetic.
bool UnderCap(const SegmentCandidate& s, uint64_t size_bytes, int64_t cap_ppm) {
  return ProjectedBytes(s, size_bytes) * 1'000'000 <=
         static_cast<Wide>(cap_ppm) * static_cast<Wide>(s.capacity_bytes);
}

// a's utilisation after the copy is lower than b's.
bool LowerUtilization(const SegmentCandidate& a, const SegmentCandidate& b, uint64_t size_bytes) {
  return ProjectedBytes(a, size_bytes) * b.capacity_bytes <
         ProjectedBytes(b, size_bytes) * a.capacity_bytes;
}

bool HoldsReplica(absl::Span<const ReplicaCandidate> replicas, SegmentId segment) {
  for (const ReplicaCandidate& r : replicas) {
    if (r.segment == segment) return true;
  }
  return false;
}

bool HostHasReadableReplica(absl::Span<const ReplicaCandidate> replicas, absl::string_view host) {
  for (const ReplicaCandidate& r : replicas) {
    if (r.readable_memory && r.host == host) return true;
  }
  return false;
}

}  // namespace

int DomainCost(absl::string_view requester_domain, absl::string_view candidate_domain) {
  return Normalized(requester_domain) == Normalized(candidate_domain) ? 0 : 1;
}

uint64_t PlacementTieHash(const ObjectName& object, SegmentId segment) {
  const uint64_t object_hash = StableHashCombine(StableHash(object.tenant), StableHash(object.key));
  return StableHashCombine(object_hash, segment.value);
}

SourceChoice SelectSource(const ObjectName& object, absl::Span<const ReplicaCandidate> replicas,
                          absl::string_view target_domain, bool domain_aware) {
  // Lexicographic key; stage 1 leaves cost and pressure at zero so only the
  // stable tie-break (and the id, for a hash collision) decides.
  using Key = std::tuple<int, int64_t, uint64_t, uint64_t>;
  std::optional<size_t> best;
  Key best_key{};
  for (size_t i = 0; i < replicas.size(); ++i) {
    const ReplicaCandidate& r = replicas[i];
    if (!r.readable_memory || !r.can_source || !r.segment.valid()) continue;
    const Key key{domain_aware ? DomainCost(target_domain, r.domain) : 0,
                  domain_aware ? r.inflight_pressure : 0, PlacementTieHash(object, r.segment),
                  r.segment.value};
    if (!best.has_value() || key < best_key) {
      best = i;
      best_key = key;
    }
  }
  if (!best.has_value()) return SourceChoice{std::nullopt, RejectReason::kNoSource};
  return SourceChoice{best, std::nullopt};
}

TargetChoice SelectTarget(const PlacementRequest& request,
                          absl::Span<const SegmentCandidate> segments,
                          absl::Span<const ReplicaCandidate> replicas) {
  HS_CHECK(request.utilization_cap_ppm > 0 && request.utilization_cap_ppm <= 1'000'000);
  TargetChoice out;
  size_t fitting = 0;  // passed every check except the utilisation cap
  absl::InlinedVector<size_t, 16> valid;
  for (size_t i = 0; i < segments.size(); ++i) {
    const SegmentCandidate& s = segments[i];
    if (!s.id.valid() || !s.allocatable || s.capacity_bytes == 0) continue;
    if (HoldsReplica(replicas, s.id)) continue;  // never a second replica on one segment
    if (request.domain_aware && DomainCost(request.target_domain, s.domain) != 0) continue;
    if (FreeBytes(s) < request.size_bytes) continue;
    ++fitting;
    if (!UnderCap(s, request.size_bytes, request.utilization_cap_ppm)) continue;
    valid.push_back(i);
  }
  if (request.preferred_target.has_value()) {
    for (const size_t i : valid) {
      if (segments[i].id == *request.preferred_target) {
        out.index = i;
        out.preferred_used = true;
        return out;
      }
    }
    out.preferred_ignored = true;
  }
  if (valid.empty()) {
    if (fitting > 0) {
      out.reason = RejectReason::kUtilizationCap;
    } else {
      out.reason = request.domain_aware ? RejectReason::kNoTargetInDomain : RejectReason::kNoTarget;
    }
    return out;
  }
  // Host anti-affinity: a second copy on a host that already serves the
  // object relieves neither its NIC nor its memory bandwidth.
  bool any_fresh_host = false;
  for (const size_t i : valid) {
    if (!HostHasReadableReplica(replicas, segments[i].host)) {
      any_fresh_host = true;
      break;
    }
  }
  std::optional<size_t> best;
  for (const size_t i : valid) {
    const SegmentCandidate& s = segments[i];
    if (any_fresh_host && HostHasReadableReplica(replicas, s.host)) continue;
    if (!best.has_value()) {
      best = i;
      continue;
    }
    const SegmentCandidate& b = segments[*best];
    if (request.heat_aware && s.hosted_heat != b.hosted_heat) {
      if (s.hosted_heat < b.hosted_heat) best = i;
    } else if (LowerUtilization(s, b, request.size_bytes)) {
      best = i;
    } else if (!LowerUtilization(b, s, request.size_bytes)) {
      const uint64_t hs = PlacementTieHash(request.object, s.id);
      const uint64_t hb = PlacementTieHash(request.object, b.id);
      if (hs < hb || (hs == hb && s.id < b.id)) best = i;
    }
  }
  out.index = best;
  return out;
}

std::optional<RejectReason> CheckTargetDomainSuppression(
    absl::Span<const ReplicaCandidate> replicas, const ReplicaCandidate& source,
    absl::string_view target_domain, bool domain_aware) {
  if (!domain_aware || DomainCost(target_domain, source.domain) == 0) return std::nullopt;
  for (const ReplicaCandidate& r : replicas) {
    if (r.readable_memory && DomainCost(target_domain, r.domain) == 0) {
      return RejectReason::kTargetDomainHasReplica;
    }
  }
  return std::nullopt;
}

int64_t CountReplicasForLimit(absl::Span<const ReplicaCandidate> replicas,
                              absl::string_view target_domain, bool domain_aware) {
  int64_t n = 0;
  for (const ReplicaCandidate& r : replicas) {
    if (!r.readable_memory) continue;
    if (domain_aware && DomainCost(target_domain, r.domain) != 0) continue;
    ++n;
  }
  return n;
}

PlacementPlan PlanCopy(const PlacementRequest& request,
                       absl::Span<const SegmentCandidate> segments,
                       absl::Span<const ReplicaCandidate> replicas) {
  PlacementPlan plan;
  const SourceChoice source =
      SelectSource(request.object, replicas, request.target_domain, request.domain_aware);
  if (!source.index.has_value()) {
    plan.reason = source.reason;
    return plan;
  }
  plan.source = source.index;
  if (const auto suppressed = CheckTargetDomainSuppression(
          replicas, replicas[*source.index], request.target_domain, request.domain_aware)) {
    plan.reason = suppressed;
    return plan;
  }
  const TargetChoice target = SelectTarget(request, segments, replicas);
  plan.preferred_used = target.preferred_used;
  plan.preferred_ignored = target.preferred_ignored;
  if (!target.index.has_value()) {
    plan.reason = target.reason;
    return plan;
  }
  plan.target = target.index;
  plan.cross_domain =
      DomainCost(replicas[*source.index].domain, segments[*target.index].domain) != 0;
  return plan;
}

}  // namespace heatsink
