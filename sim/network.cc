#include "sim/network.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink::sim {
namespace {

constexpr uint64_t kWorkPerByte = 1'000'000'000;  // work units per byte (ns per s)
// Completion times are clamped here so time arithmetic never overflows; a
// flow this slow is re-timed long before by any rate change.
constexpr TimeNs kFarFutureNs = int64_t{1} << 62;
// Activation and completion events name their flow by one word, (id <<
// kFlowSlotBits) | slot, so the callback fits an EventFn's inline storage and
// scheduling one never allocates.
constexpr int kFlowSlotBits = 24;
constexpr uint64_t kFlowSlotMask = (uint64_t{1} << kFlowSlotBits) - 1;
constexpr uint64_t kFlowIdMax = (uint64_t{1} << (64 - kFlowSlotBits)) - 1;
// Flow slots (and a class heap's entries) kept once nothing uses them.
constexpr size_t kFlowSlotsKeepMax = size_t{1} << 14;

// std heap comparator for a min-heap on (target_work, join_order).
struct MemberAfter {
  template <typename M>
  bool operator()(const M& a, const M& b) const {
    if (a.target_work != b.target_work) return a.target_work > b.target_work;
    return a.join_order > b.join_order;
  }
};

uint64_t FlowToken(uint32_t slot, FlowId id) { return (id << kFlowSlotBits) | slot; }
uint32_t TokenSlot(uint64_t token) { return static_cast<uint32_t>(token & kFlowSlotMask); }
FlowId TokenId(uint64_t token) { return token >> kFlowSlotBits; }

}  // namespace

absl::StatusOr<std::unique_ptr<Network>> Network::Create(Engine* engine, Rng* rng,
                                                         NetworkTopology topology,
                                                         const NetworkKnobs& knobs) {
  HS_CHECK(engine != nullptr && rng != nullptr);
  if (absl::Status s = topology.Validate(); !s.ok()) return s;
  if (absl::Status s = knobs.Validate(); !s.ok()) return s;
  return std::unique_ptr<Network>(new Network(engine, rng, std::move(topology), knobs));
}

Network::Network(Engine* engine, Rng* rng, NetworkTopology topology, const NetworkKnobs& knobs)
    : engine_(engine), rng_(rng), topology_(std::move(topology)), knobs_(knobs) {
  // A class has a timer only while it has flows, so the handle alone names
  // the class whose first flow completes.
  completion_lane_ = engine_->AddLane([this](uint32_t route_class) {
    HS_CHECK_MSG(route_class < classes_.size() && classes_[route_class].members > 0,
                 "completion timer of a class without flows");
    CompleteFirst(route_class);
  });
  routes_ = ComputeRoutes(topology_);
  auto add_resource = [this](int64_t capacity) {
    resources_.emplace_back();
    resources_.back().capacity_bytes_per_s = capacity;
    return static_cast<uint32_t>(resources_.size() - 1);
  };
  for (size_t d = 0; d < topology_.domains.size(); ++d) {
    for (const HostSpec& spec : topology_.domains[d].hosts) {
      HostState host;
      host.name = spec.name;
      host.domain = static_cast<int>(d);
      host.local_resource = add_resource(spec.local_copy_bytes_per_s);
      for (const NicSpec& nic : spec.nics) {
        host.send_resources.push_back(add_resource(nic.send_bytes_per_s));
        host.receive_resources.push_back(add_resource(nic.receive_bytes_per_s));
      }
      host_index_.emplace(spec.name, static_cast<int>(hosts_.size()));
      hosts_.push_back(std::move(host));
    }
  }
  for (const TrunkSpec& spec : topology_.trunks) {
    TrunkState trunk;
    trunk.effective_bytes_per_s = std::max<int64_t>(
        1, static_cast<int64_t>(static_cast<__int128>(spec.bandwidth_bytes_per_s) * 100 /
                                spec.oversubscription_percent));
    trunk.latency_ns = spec.latency_ns;
    trunk.resource_a_to_b = add_resource(trunk.effective_bytes_per_s);
    trunk.resource_b_to_a = add_resource(trunk.effective_bytes_per_s);
    trunks_.push_back(trunk);
  }
  counters_.host_bytes_sent.assign(hosts_.size(), 0);
  counters_.host_bytes_received.assign(hosts_.size(), 0);
}

Network::~Network() {
  // Pending activation/completion/re-solve events point at this network.
  for (size_t slot = 0; slot < flows_.size(); ++slot) {
    if (flows_[slot].id != 0) engine_->Cancel(flows_[slot].event);
  }
  if (reshare_event_ != kNoTimer) engine_->Cancel(reshare_event_);
  engine_->RemoveLane(completion_lane_);
}

std::optional<int> Network::FindHost(absl::string_view name) const {
  auto it = host_index_.find(name);
  if (it == host_index_.end()) return std::nullopt;
  return it->second;
}

const HostId& Network::host_name(int host) const {
  HS_CHECK(host >= 0 && host < host_count());
  return hosts_[host].name;
}

int Network::host_domain(int host) const {
  HS_CHECK(host >= 0 && host < host_count());
  return hosts_[host].domain;
}

const Domain& Network::domain_name(int domain) const {
  HS_CHECK(domain >= 0 && domain < static_cast<int>(topology_.domains.size()));
  return topology_.domains[domain].name;
}

int Network::nic_count(int host) const {
  HS_CHECK(host >= 0 && host < host_count());
  return static_cast<int>(hosts_[host].send_resources.size());
}

Distance Network::DistanceBetween(int src_host, int dst_host) const {
  HS_CHECK(src_host >= 0 && src_host < host_count() && dst_host >= 0 && dst_host < host_count());
  if (src_host == dst_host) return Distance::kSameHost;
  return hosts_[src_host].domain == hosts_[dst_host].domain ? Distance::kSameDomain
                                                            : Distance::kCrossDomain;
}

absl::StatusOr<int> Network::FindTrunk(absl::string_view domain_a,
                                       absl::string_view domain_b) const {
  for (size_t t = 0; t < topology_.trunks.size(); ++t) {
    const TrunkSpec& spec = topology_.trunks[t];
    if ((spec.domain_a == domain_a && spec.domain_b == domain_b) ||
        (spec.domain_a == domain_b && spec.domain_b == domain_a)) {
      return static_cast<int>(t);
    }
  }
  return absl::NotFoundError(
      absl::StrCat("no trunk between domains '", domain_a, "' and '", domain_b, "'"));
}

bool Network::RouteBlocked(int src_domain, int dst_domain) const {
  for (const RouteHop& hop : routes_[src_domain][dst_domain].hops) {
    if (trunks_[hop.trunk].partitioned) return true;
  }
  return false;
}

DurationNs Network::RouteLatencyNs(int src_domain, int dst_domain) const {
  DurationNs latency = 0;
  for (const RouteHop& hop : routes_[src_domain][dst_domain].hops) {
    latency += trunks_[hop.trunk].latency_ns + trunks_[hop.trunk].extra_latency_ns;
  }
  return latency;
}

bool Network::RouteCrosses(int src_domain, int dst_domain, int trunk) const {
  for (const RouteHop& hop : routes_[src_domain][dst_domain].hops) {
    if (hop.trunk == trunk) return true;
  }
  return false;
}

absl::StatusOr<FlowId> Network::StartFlow(const FlowSpec& spec, FlowDone done) {
  if (spec.src_host < 0 || spec.src_host >= host_count() || spec.dst_host < 0 ||
      spec.dst_host >= host_count()) {
    return absl::InvalidArgumentError(
        absl::StrCat("flow hosts out of range: ", spec.src_host, " -> ", spec.dst_host));
  }
  if (spec.bytes < 0 || spec.bytes > knobs_.flow_bytes_max) {
    return absl::InvalidArgumentError(absl::StrCat(
        "flow of ", spec.bytes, " bytes outside [0, flow_bytes_max=", knobs_.flow_bytes_max, "]"));
  }
  if (spec.source_delay_ns < 0 || spec.source_delay_ns > FlowSpec::kSourceDelayMaxNs) {
    return absl::InvalidArgumentError(absl::StrCat("flow source delay of ", spec.source_delay_ns,
                                                   " ns outside [0, ", FlowSpec::kSourceDelayMaxNs,
                                                   "]"));
  }
  if (spec.src_nic < -1 || spec.src_nic >= nic_count(spec.src_host) || spec.dst_nic < -1 ||
      spec.dst_nic >= nic_count(spec.dst_host)) {
    return absl::InvalidArgumentError("flow NIC index out of range");
  }
  if (spec.count < 1 || spec.count > knobs_.flows_max) {
    return absl::InvalidArgumentError(absl::StrCat(
        "flow group of ", spec.count, " flows outside [1, flows_max=", knobs_.flows_max, "]"));
  }
  if (flows_alive_ > knobs_.flows_max - spec.count) {
    return absl::ResourceExhaustedError(absl::StrCat("flows_max (", knobs_.flows_max,
                                                     ") would be passed: ", flows_alive_,
                                                     " flows alive, ", spec.count, " more asked"));
  }
  if (free_flow_slots_.empty() && flows_.size() > kFlowSlotMask) {
    return absl::ResourceExhaustedError(
        absl::StrCat("more than ", kFlowSlotMask, " flows alive at once"));
  }
  HS_CHECK_MSG(next_flow_id_ <= kFlowIdMax, "flow id space exhausted");
  const int src_domain = hosts_[spec.src_host].domain;
  const int dst_domain = hosts_[spec.dst_host].domain;
  if (RouteBlocked(src_domain, dst_domain)) {
    return absl::UnavailableError(absl::StrCat("route from domain '", domain_name(src_domain),
                                               "' to '", domain_name(dst_domain),
                                               "' crosses a partitioned trunk"));
  }
  if (flows_alive_ == 0 && flows_.size() > kFlowSlotsKeepMax) {
    // Nothing is alive: a burst's slots are given
    // back instead of being kept for the rest of the run.
    flows_.CutTo(0);
    std::vector<uint32_t>().swap(free_flow_slots_);
  }
  uint32_t slot;
  if (!free_flow_slots_.empty()) {
    slot = free_flow_slots_.back();
    free_flow_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(flows_.size());
    flows_.Grow();
  }
  const uint64_t id = next_flow_id_++;
  Flow& flow = flows_[slot];
  flow.id = id;
  flow.src_host = spec.src_host;
  flow.dst_host = spec.dst_host;
  flow.src_nic = spec.src_nic;
  flow.dst_nic = spec.dst_nic;
  flow.distance = DistanceBetween(spec.src_host, spec.dst_host);
  flow.bytes = spec.bytes;
  flow.count = spec.count;
  // Under `equal` sharing background flows are ordinary ones.
  flow.background = spec.traffic_class == TrafficClass::kBackground;
  flow.background_class =
      flow.background && knobs_.background_sharing != NetworkKnobs::BackgroundSharing::kEqual;
  flow.done = std::move(done);
  const DurationNs setup_ns =
      knobs_.transfer_overhead_ns + RouteLatencyNs(src_domain, dst_domain) + spec.source_delay_ns;
  const uint64_t token = FlowToken(slot, id);
  flow.event = engine_->ScheduleAfter(
      setup_ns, [this, token] { Activate(TokenSlot(token), TokenId(token)); });
  flows_alive_ += spec.count;
  counters_.flows_started += static_cast<uint64_t>(spec.count);
  return token;
}

void Network::Activate(uint32_t slot, FlowId id) {
  Flow& flow = flows_[slot];
  HS_CHECK_MSG(flow.id == id && !flow.moving, "activation of a flow that is gone");
  const HostState& src = hosts_[flow.src_host];
  const HostState& dst = hosts_[flow.dst_host];
  flow.event = kNoTimer;
  route_scratch_.clear();
  if (flow.distance == Distance::kSameHost) {
    route_scratch_.push_back(src.local_resource);
  } else {
    auto least_loaded = [this](const std::vector<uint32_t>& nics) {
      size_t best = 0;
      for (size_t n = 1; n < nics.size(); ++n) {
        if (resources_[nics[n]].flows < resources_[nics[best]].flows) best = n;
      }
      return static_cast<int>(best);
    };
    if (flow.src_nic < 0) flow.src_nic = least_loaded(src.send_resources);
    if (flow.dst_nic < 0) flow.dst_nic = least_loaded(dst.receive_resources);
    route_scratch_.push_back(src.send_resources[flow.src_nic]);
    for (const RouteHop& hop : routes_[src.domain][dst.domain].hops) {
      const TrunkState& trunk = trunks_[hop.trunk];
      route_scratch_.push_back(hop.a_to_b ? trunk.resource_a_to_b : trunk.resource_b_to_a);
    }
    route_scratch_.push_back(dst.receive_resources[flow.dst_nic]);
  }
  if (flow.bytes == 0) {  // nothing to move: done once set up
    Complete(slot);
    return;
  }
  const uint32_t route_class = FindOrAddClass(route_scratch_, flow.background_class);
  Join(slot, route_class);
  RequestReshare(classes_[route_class].resources);
}

uint32_t Network::FindOrAddClass(const ResourceList& route, bool background) {
  ResourceList key = route;
  if (background) key.push_back(kBackgroundKey);
  auto [it, added] = class_index_.try_emplace(key, static_cast<uint32_t>(classes_.size()));
  if (added) {
    classes_.emplace_back();
    classes_.back().resources = route;
    classes_.back().background = background;
  }
  return it->second;
}

void Network::Join(uint32_t slot, uint32_t route_class) {
  RouteClass& c = classes_[route_class];
  Flow& flow = flows_[slot];
  if (c.members == 0) {
    // A class starts afresh each time it gains its first flow (Leave gave
    // a burst's heap storage back when the class emptied).
    c.heap.clear();
    c.clock = 0;
    c.settled_ns = engine_->NowNs();
    c.rate_bytes_per_s = 0;
    c.positions.clear();
    for (uint32_t r : c.resources) {
      std::vector<uint32_t>& members = resources_[r].classes;
      c.positions.push_back(static_cast<uint32_t>(members.size()));
      members.push_back(route_class);
    }
  } else {
    Settle(c);
  }
  for (uint32_t r : c.resources) {
    resources_[r].flows += flow.count;
    if (c.background) resources_[r].background_flows += flow.count;
  }
  flow.moving = true;
  flow.route_class = route_class;
  flow.target_work = c.clock + static_cast<Work>(flow.bytes) * kWorkPerByte;
  flow.join_order = next_join_order_++;
  flow.rated_after = c.solves + 1;
  c.joined = true;
  c.heap.push_back(Member{flow.target_work, flow.join_order, slot});
  std::push_heap(c.heap.begin(), c.heap.end(), MemberAfter());
  ++c.members;
  c.flows += flow.count;
}

void Network::Leave(uint32_t slot, std::vector<uint32_t>& touched) {
  Flow& flow = flows_[slot];
  const uint32_t route_class = flow.route_class;
  RouteClass& c = classes_[route_class];
  const bool was_first = c.heap.front().join_order == flow.join_order;
  flow.moving = false;  // its heap entry is stale from here
  --c.members;
  c.flows -= flow.count;
  for (uint32_t r : c.resources) {
    resources_[r].flows -= flow.count;
    if (c.background) resources_[r].background_flows -= flow.count;
    touched.push_back(r);
  }
  if (c.members > 0) {
    if (static_cast<int64_t>(c.heap.size()) > 2 * c.members + 16) {
      // Mostly stale: rebuilt from the live entries. The order of live
      // entries is total, so the heap's shape does not matter.
      c.heap.erase(std::remove_if(c.heap.begin(), c.heap.end(),
                                  [this](const Member& m) { return !MemberLive(m); }),
                   c.heap.end());
      std::make_heap(c.heap.begin(), c.heap.end(), MemberAfter());
    } else {
      DropStaleFirst(c);
    }
    if (was_first) ArmClassTimer(route_class, /*fresh=*/false);
    return;
  }
  c.heap.clear();
  // A burst's heap storage goes back at once, not at the class's next flow.
  if (c.heap.capacity() > kFlowSlotsKeepMax) std::vector<Member>().swap(c.heap);
  // Empty: off its resources' lists (swap with the last entry), no timer.
  for (size_t i = 0; i < c.resources.size(); ++i) {
    std::vector<uint32_t>& members = resources_[c.resources[i]].classes;
    const uint32_t last = members.back();
    members[c.positions[i]] = last;
    members.pop_back();
    if (last != route_class) {
      RouteClass& moved = classes_[last];
      for (size_t j = 0; j < moved.resources.size(); ++j) {
        if (moved.resources[j] == c.resources[i]) moved.positions[j] = c.positions[i];
      }
    }
  }
  c.positions.clear();
  if (c.timer_ns >= 0) engine_->CancelLaneTimer(completion_lane_, route_class);
  c.timer_ns = -1;
  c.rate_bytes_per_s = 0;
  c.next_rate_bytes_per_s = 0;
}

bool Network::MemberLive(const Member& m) const {
  const Flow& flow = flows_[m.slot];
  return flow.moving && flow.join_order == m.join_order;
}

void Network::DropStaleFirst(RouteClass& c) {
  while (!c.heap.empty() && !MemberLive(c.heap.front())) {
    std::pop_heap(c.heap.begin(), c.heap.end(), MemberAfter());
    c.heap.pop_back();
  }
}

void Network::RequestReshare(absl::Span<const uint32_t> seeds) {
  for (uint32_t r : seeds) {
    if (resources_[r].reshare_pending) continue;
    resources_[r].reshare_pending = true;
    pending_seeds_.push_back(r);
  }
  if (reshare_event_ != kNoTimer) return;
  reshare_event_ = engine_->ScheduleAfter(0, [this] {
    reshare_event_ = kNoTimer;
    // Swapped with a member, not a local, so neither vector gives up its
    // capacity (this runs once per coalesced re-solve).
    resharing_seeds_.clear();
    resharing_seeds_.swap(pending_seeds_);
    for (uint32_t r : resharing_seeds_) resources_[r].reshare_pending = false;
    Reshare(resharing_seeds_);
  });
}

Network::Work Network::ClockNow(const RouteClass& c) const {
  const TimeNs now = engine_->NowNs();
  if (now == c.settled_ns) return c.clock;
  return c.clock + static_cast<Work>(c.rate_bytes_per_s) * static_cast<Work>(now - c.settled_ns);
}

void Network::Settle(RouteClass& c) {
  c.clock = ClockNow(c);
  c.settled_ns = engine_->NowNs();
}

Network::Work Network::RemainingWorkNow(const Flow& flow) const {
  const Work clock = ClockNow(classes_[flow.route_class]);
  return flow.target_work > clock ? flow.target_work - clock : 0;
}

uint64_t Network::BytesDone(const Flow& flow, Work remaining) {
  const Work total = static_cast<Work>(flow.bytes) * kWorkPerByte;
  return static_cast<uint64_t>((total - remaining) / kWorkPerByte);
}

void Network::AddBytes(const Flow& flow, uint64_t bytes_per_flow, NetworkCounters& counters) {
  if (bytes_per_flow == 0) return;
  const uint64_t bytes = bytes_per_flow * static_cast<uint64_t>(flow.count);
  counters.bytes_by_distance[static_cast<int>(flow.distance)] += bytes;
  counters.host_bytes_sent[flow.src_host] += bytes;
  counters.host_bytes_received[flow.dst_host] += bytes;
  if (flow.background) counters.background_bytes += bytes;
}

void Network::CountProgress(Flow& flow, Work remaining) {
  const uint64_t bytes_done = BytesDone(flow, remaining);
  AddBytes(flow, bytes_done - flow.bytes_counted, counters_);
  flow.bytes_counted = bytes_done;
}

TimeNs Network::CompletionTime(Work remaining, int64_t rate_bytes_per_s) const {
  const TimeNs now = engine_->NowNs();
  if (remaining == 0) return now;
  const Work rate = static_cast<Work>(rate_bytes_per_s);
  Work wait;
  if (remaining <= std::numeric_limits<uint64_t>::max() - rate) {
    // The usual case (below 18 GB left): one 64-bit division.
    const auto rate64 = static_cast<uint64_t>(rate);
    wait = (static_cast<uint64_t>(remaining) + rate64 - 1) / rate64;
  } else {
    wait = (remaining + rate - 1) / rate;
  }
  const Work limit = static_cast<Work>(kFarFutureNs - now);
  return now + static_cast<TimeNs>(std::min(wait, limit));
}

void Network::ArmClassTimer(uint32_t route_class, bool fresh) {
  RouteClass& c = classes_[route_class];
  if (c.rate_bytes_per_s == 0) return;  // not rated yet: its re-solve arms it
  const uint32_t first = c.heap.front().slot;
  const TimeNs completion = CompletionTime(RemainingWorkNow(flows_[first]), c.rate_bytes_per_s);
  if (fresh) {
    const bool unchanged = c.timer_ns == completion && c.timer_slot == first;
    c.sequence = engine_->DrawSequence();
    // A first flow whose completion did not move keeps its timer and so its
    // place among the events due then.
    if (unchanged) return;
  }
  c.timer_ns = completion;
  c.timer_slot = first;
  engine_->SetLaneTimerWithSequence(completion_lane_, route_class, completion, c.sequence);
}

void Network::CompleteFirst(uint32_t route_class) {
  RouteClass& c = classes_[route_class];
  c.timer_ns = -1;  // the lane dropped the timer before firing it
  const uint32_t slot = c.heap.front().slot;
  HS_CHECK_MSG(RemainingWorkNow(flows_[slot]) == 0, "flow completion fired before its last byte");
  Complete(slot);
}

void Network::Complete(uint32_t slot) {
  Flow& flow = flows_[slot];
  touched_.clear();
  Work remaining = static_cast<Work>(flow.bytes) * kWorkPerByte;
  if (flow.moving) {
    remaining = RemainingWorkNow(flow);
    Leave(slot, touched_);
  }
  CountProgress(flow, remaining);
  FlowDone done = std::move(flow.done);
  counters_.flows_completed += static_cast<uint64_t>(flow.count);
  FreeSlot(slot);
  // The remaining flows' rates are re-solved once for every flow that ends
  // now (see RequestReshare); `done` only starts flows, which begin in setup.
  if (!touched_.empty()) RequestReshare(touched_);
  std::move(done)(absl::OkStatus());
}

void Network::FreeSlot(uint32_t slot) {
  Flow& flow = flows_[slot];
  flow.id = 0;
  flow.moving = false;
  flow.target_work = 0;
  flow.bytes_counted = 0;
  flow.event = kNoTimer;
  flow.src_nic = -1;
  flow.dst_nic = -1;
  flow.done = nullptr;
  free_flow_slots_.push_back(slot);
  flows_alive_ -= flow.count;
  flow.count = 1;
}

void Network::Fail(uint32_t slot, absl::Status status, std::vector<uint32_t>& touched) {
  HS_CHECK_MSG(!status.ok(), "a flow is failed with an error status");
  Flow& flow = flows_[slot];
  engine_->Cancel(flow.event);
  // A flow failed in setup counts as fully moved (as it always has): kept so
  // that the accounting outputs do not change with the solver.
  Work remaining = 0;
  if (flow.moving) {
    remaining = RemainingWorkNow(flow);
    Leave(slot, touched);
  }
  CountProgress(flow, remaining);
  FlowDone done = std::move(flow.done);
  counters_.flows_failed += static_cast<uint64_t>(flow.count);
  FreeSlot(slot);
  // Posted, so a failure never calls back into the code that caused it.
  engine_->Post([done = std::move(done), status = std::move(status)]() mutable {
    std::move(done)(std::move(status));
  });
}

std::optional<uint32_t> Network::LiveSlot(FlowId id) const {
  const uint32_t slot = TokenSlot(id);
  if (slot >= flows_.size() || flows_[slot].id == 0 || flows_[slot].id != TokenId(id)) {
    return std::nullopt;
  }
  return slot;
}

bool Network::FailFlow(FlowId id, absl::Status status) {
  const std::optional<uint32_t> slot = LiveSlot(id);
  if (!slot.has_value()) return false;
  std::vector<uint32_t> touched;
  Fail(*slot, std::move(status), touched);
  if (!touched.empty()) Reshare(touched);
  return true;
}

int Network::FailFlowsOfHost(int host, absl::Status status) {
  HS_CHECK(host >= 0 && host < host_count());
  std::vector<std::pair<FlowId, uint32_t>> victims;
  for (uint32_t slot = 0; slot < flows_.size(); ++slot) {
    const Flow& flow = flows_[slot];
    if (flow.id != 0 && (flow.src_host == host || flow.dst_host == host)) {
      victims.emplace_back(flow.id, slot);
    }
  }
  std::sort(victims.begin(), victims.end());
  std::vector<uint32_t> touched;
  for (const auto& [id, slot] : victims) Fail(slot, status, touched);
  if (!touched.empty()) Reshare(touched);
  return static_cast<int>(victims.size());
}

std::optional<FlowInfo> Network::GetFlow(FlowId id) const {
  const std::optional<uint32_t> slot = LiveSlot(id);
  if (!slot.has_value()) return std::nullopt;
  const Flow& flow = flows_[*slot];
  FlowInfo info;
  info.id = id;
  info.moving = flow.moving;
  if (flow.moving) {
    const RouteClass& c = classes_[flow.route_class];
    const Work remaining = RemainingWorkNow(flow);
    info.remaining_bytes = static_cast<int64_t>((remaining + kWorkPerByte - 1) / kWorkPerByte);
    // A flow that joined its class since the class's last re-solve has no
    // rate yet.
    if (c.solves >= flow.rated_after) {
      info.rate_bytes_per_s = c.rate_bytes_per_s;
      info.completion_ns = CompletionTime(remaining, c.rate_bytes_per_s);
    }
  } else {
    info.remaining_bytes = flow.bytes;
  }
  return info;
}

absl::Status Network::PartitionTrunk(absl::string_view domain_a, absl::string_view domain_b) {
  absl::StatusOr<int> trunk = FindTrunk(domain_a, domain_b);
  if (!trunk.ok()) return trunk.status();
  if (trunks_[*trunk].partitioned) return absl::OkStatus();
  trunks_[*trunk].partitioned = true;
  std::vector<std::pair<FlowId, uint32_t>> victims;
  for (uint32_t slot = 0; slot < flows_.size(); ++slot) {
    const Flow& flow = flows_[slot];
    if (flow.id != 0 &&
        RouteCrosses(hosts_[flow.src_host].domain, hosts_[flow.dst_host].domain, *trunk)) {
      victims.emplace_back(flow.id, slot);
    }
  }
  std::sort(victims.begin(), victims.end());
  std::vector<uint32_t> touched;
  for (const auto& [id, slot] : victims) {
    Fail(slot,
         absl::UnavailableError(
             absl::StrCat("trunk between '", domain_a, "' and '", domain_b, "' partitioned")),
         touched);
  }
  if (!touched.empty()) Reshare(touched);
  return absl::OkStatus();
}

absl::Status Network::HealTrunk(absl::string_view domain_a, absl::string_view domain_b) {
  absl::StatusOr<int> trunk = FindTrunk(domain_a, domain_b);
  if (!trunk.ok()) return trunk.status();
  trunks_[*trunk].partitioned = false;
  return absl::OkStatus();
}

absl::Status Network::DegradeTrunk(absl::string_view domain_a, absl::string_view domain_b,
                                   int64_t bandwidth_percent, DurationNs extra_latency_ns) {
  if (bandwidth_percent < 1 || bandwidth_percent > 100) {
    return absl::InvalidArgumentError(
        absl::StrCat("bandwidth_percent must be in [1, 100], got ", bandwidth_percent));
  }
  if (extra_latency_ns < 0) return absl::InvalidArgumentError("negative extra latency");
  absl::StatusOr<int> index = FindTrunk(domain_a, domain_b);
  if (!index.ok()) return index.status();
  TrunkState& trunk = trunks_[*index];
  trunk.bandwidth_percent = bandwidth_percent;
  trunk.extra_latency_ns = extra_latency_ns;
  const int64_t capacity =
      std::max<int64_t>(1, static_cast<int64_t>(static_cast<__int128>(trunk.effective_bytes_per_s) *
                                                bandwidth_percent / 100));
  resources_[trunk.resource_a_to_b].capacity_bytes_per_s = capacity;
  resources_[trunk.resource_b_to_a].capacity_bytes_per_s = capacity;
  const uint32_t seeds[] = {trunk.resource_a_to_b, trunk.resource_b_to_a};
  Reshare(seeds);
  return absl::OkStatus();
}

absl::StatusOr<DurationNs> Network::ControlLatencyNs(int src_host, int dst_host) {
  const Distance distance = DistanceBetween(src_host, dst_host);
  DurationNs base = 0;
  switch (distance) {
    case Distance::kSameHost:
      base = knobs_.control_same_host_latency_ns;
      break;
    case Distance::kSameDomain:
      base = knobs_.control_same_domain_latency_ns;
      break;
    case Distance::kCrossDomain: {
      const int src_domain = hosts_[src_host].domain;
      const int dst_domain = hosts_[dst_host].domain;
      if (RouteBlocked(src_domain, dst_domain)) {
        return absl::UnavailableError(absl::StrCat("control message from '", hosts_[src_host].name,
                                                   "' to '", hosts_[dst_host].name,
                                                   "' crosses a partitioned trunk"));
      }
      base = knobs_.control_cross_domain_latency_ns + RouteLatencyNs(src_domain, dst_domain);
      break;
    }
  }
  const DurationNs jitter_max =
      static_cast<DurationNs>(static_cast<__int128>(base) * knobs_.control_jitter_percent / 100);
  const DurationNs jitter =
      jitter_max > 0 ? static_cast<DurationNs>(rng_->Uniform(static_cast<uint64_t>(jitter_max) + 1))
                     : 0;
  ++counters_.control_messages_by_distance[static_cast<int>(distance)];
  return base + jitter;
}

absl::Status Network::SendControl(int src_host, int dst_host, EventFn deliver) {
  absl::StatusOr<DurationNs> latency = ControlLatencyNs(src_host, dst_host);
  if (!latency.ok()) return latency.status();
  engine_->ScheduleAfter(*latency, std::move(deliver));
  return absl::OkStatus();
}

NetworkCounters Network::Counters() const {
  NetworkCounters out = counters_;
  for (size_t slot = 0; slot < flows_.size(); ++slot) {
    const Flow& flow = flows_[slot];
    if (flow.id == 0 || !flow.moving) continue;
    AddBytes(flow, BytesDone(flow, RemainingWorkNow(flow)) - flow.bytes_counted, out);
  }
  return out;
}

NicLoad Network::NicFlows(int host, int nic) const {
  HS_CHECK(host >= 0 && host < host_count() && nic >= 0 && nic < nic_count(host));
  NicLoad load;
  load.send_flows = static_cast<int>(resources_[hosts_[host].send_resources[nic]].flows);
  load.receive_flows = static_cast<int>(resources_[hosts_[host].receive_resources[nic]].flows);
  return load;
}

}  // namespace heatsink::sim
