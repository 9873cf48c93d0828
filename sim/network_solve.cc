// Network, the rate solver: which route classes a change touches (Reshare)
// and their max-min fair rates by progressive filling (Solve), with the
// traffic classes' passes (sim/network.h, "Route classes", "Traffic
// classes").
#include <algorithm>
#include <cstdint>

#include "sim/network.h"

namespace heatsink::sim {

void Network::Reshare(absl::Span<const uint32_t> seeds) {
  ++epoch_;
  component_classes_.clear();
  component_resources_.clear();
  stack_.clear();
  auto visit_resource = [this](uint32_t r) {
    if (resources_[r].visit_epoch == epoch_) return;
    resources_[r].visit_epoch = epoch_;
    component_resources_.push_back(r);
    stack_.push_back(r);
  };
  if (knobs_.selective_update) {
    for (uint32_t r : seeds) visit_resource(r);
  } else {
    for (uint32_t r = 0; r < resources_.size(); ++r) {
      if (resources_[r].flows > 0) visit_resource(r);
    }
  }
  // Closure over "shares a resource with": classes of visited resources, and
  // the resources of those classes.
  int64_t component_flows = 0;
  while (!stack_.empty()) {
    const uint32_t r = stack_.back();
    stack_.pop_back();
    for (uint32_t k : resources_[r].classes) {
      RouteClass& c = classes_[k];
      if (c.visit_epoch == epoch_) continue;
      c.visit_epoch = epoch_;
      component_classes_.push_back(k);
      component_flows += c.flows;
      for (uint32_t other : c.resources) visit_resource(other);
    }
  }
  Solve();
  // A class whose rate did not change keeps its clock rate and so every
  // member's completion time; the others are settled at the old rate and
  // their one timer re-timed. A class that gained flows is re-timed either
  // way: its new flows have no rate yet.
  for (uint32_t k : component_classes_) {
    RouteClass& c = classes_[k];
    if (c.next_rate_bytes_per_s == c.rate_bytes_per_s && !c.joined) continue;
    Settle(c);
    c.rate_bytes_per_s = c.next_rate_bytes_per_s;
    c.joined = false;
    ++c.solves;
    ArmClassTimer(k, /*fresh=*/true);
  }
  last_update_flows_recomputed_ = component_flows;
  flows_recomputed_total_ += static_cast<uint64_t>(component_flows);
  ++rate_updates_;
}

void Network::Solve() {
  // Progressive filling over route classes: repeatedly take the resource with
  // the smallest fair share per weight unit (capacity left / units not yet
  // fixed; ties to the lower resource index), give each of its unfixed
  // classes floor(capacity * weight / units) per flow, and charge that to the
  // class's resources, once per flow. With one weight for every flow this is
  // the share a per-flow fill computes (charging k flows of share s at once
  // is max(0, c - k*s), as k charges of s clamped at 0 each), so the rates
  // are the same to the byte per second. A component has a few dozen
  // resources, so the smallest share is found by a scan of the resources that
  // still have unfixed flows. Traffic classes: see the header.
  switch (knobs_.background_sharing) {
    case NetworkKnobs::BackgroundSharing::kEqual:  // no flow is background
    case NetworkKnobs::BackgroundSharing::kStrict:
      SolvePass(1, 0);
      SolvePass(0, 1);
      return;
    case NetworkKnobs::BackgroundSharing::kWeighted: {
      constexpr int64_t kForegroundUnits = int64_t{1} << 20;
      const double scaled = knobs_.background_weight * static_cast<double>(kForegroundUnits);
      const int64_t background_units =
          std::clamp<int64_t>(static_cast<int64_t>(scaled + 0.5), 1, kForegroundUnits);
      SolvePass(kForegroundUnits, background_units);
      return;
    }
  }
}

void Network::SolvePass(int64_t foreground_units, int64_t background_units) {
  const bool first_pass = foreground_units > 0;
  solve_active_.clear();
  for (uint32_t r : component_resources_) {
    Resource& res = resources_[r];
    if (first_pass) res.solve_capacity = res.capacity_bytes_per_s;
    // Flow counts of at most flows_max times at most 2^20 units fit easily.
    res.solve_unfixed = (res.flows - res.background_flows) * foreground_units +
                        res.background_flows * background_units;
    if (res.solve_unfixed > 0) solve_active_.push_back(r);
  }
  if (solve_active_.empty()) return;
  // a's share < b's share, exactly: a.capacity / a.unfixed < b.capacity / b.unfixed.
  auto smaller = [this](uint32_t a, uint32_t b) {
    const Resource& ra = resources_[a];
    const Resource& rb = resources_[b];
    const __int128 lhs = static_cast<__int128>(ra.solve_capacity) * rb.solve_unfixed;
    const __int128 rhs = static_cast<__int128>(rb.solve_capacity) * ra.solve_unfixed;
    if (lhs != rhs) return lhs < rhs;
    return a < b;
  };
  while (!solve_active_.empty()) {
    // One pass drops the resources left without unfixed flows and finds the
    // bottleneck among the others.
    size_t kept = 0;
    size_t best = 0;
    for (uint32_t r : solve_active_) {
      if (resources_[r].solve_unfixed == 0) continue;
      if (kept > 0 && !smaller(r, solve_active_[best])) {
        solve_active_[kept++] = r;
        continue;
      }
      solve_active_[kept] = r;
      best = kept++;
    }
    solve_active_.resize(kept);
    if (kept == 0) break;
    const uint32_t bottleneck_index = solve_active_[best];
    Resource& bottleneck = resources_[bottleneck_index];
    const int64_t capacity = bottleneck.solve_capacity;
    const int64_t unfixed = bottleneck.solve_unfixed;
    for (uint32_t k : bottleneck.classes) {
      RouteClass& c = classes_[k];
      if (c.fixed_epoch == epoch_) continue;
      const int64_t units = c.background ? background_units : foreground_units;
      if (units == 0) continue;  // rated by a later pass
      c.fixed_epoch = epoch_;
      const int64_t share = std::max<int64_t>(
          1, static_cast<int64_t>(static_cast<__int128>(capacity) * units / unfixed));
      c.next_rate_bytes_per_s = share;
      const int64_t members = c.flows;
      const __int128 charge = static_cast<__int128>(share) * members;
      // The bottleneck is charged too: a later pass shares what is left.
      for (uint32_t r : c.resources) {
        Resource& other = resources_[r];
        other.solve_capacity = charge >= other.solve_capacity
                                   ? 0
                                   : static_cast<int64_t>(other.solve_capacity - charge);
        if (r != bottleneck_index) other.solve_unfixed -= members * units;
      }
    }
    bottleneck.solve_unfixed = 0;
  }
}

}  // namespace heatsink::sim
