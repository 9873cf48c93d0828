// Trace replay as prefill/decode traffic (see sim/workloads.h for the model).
#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "sim/json_fields.h"
#include "sim/workloads.h"

namespace heatsink::sim {
namespace {

struct InstanceRef {
  std::string name;    // "<host>/<instance>"
  std::string client;  // "<host>/<client>"
  Domain domain;
};

// Instances of one role in topology order, and per domain.
struct InstancePool {
  std::vector<InstanceRef> all;
  std::map<Domain, std::vector<size_t>> by_domain;  // indices into `all`
  uint64_t next_all = 0;
  std::map<Domain, uint64_t> next_in_domain;

  void Add(const ScenarioInstance& inst, const Domain& domain) {
    by_domain[domain].push_back(all.size());
    all.push_back(InstanceRef{inst.full_name, inst.client, domain});
  }
  const InstanceRef& RoundRobin() { return all[next_all++ % all.size()]; }
  const InstanceRef& RoundRobinIn(const Domain& domain) {
    const std::vector<size_t>& in = by_domain.at(domain);
    return all[in[next_in_domain[domain]++ % in.size()]];
  }
};

class TraceOpStream final : public OpStream {
 public:
  TraceOpStream(const Scenario& scenario, int32_t index, std::vector<TraceRequest> requests,
                Rng rng, const ExpandOptions& options)
      : scenario_(scenario),
        workload_(scenario.workloads[static_cast<size_t>(index)]),
        spec_(workload_.trace),
        index_(index),
        requests_(std::move(requests)),
        rng_(rng),
        options_(options),
        block_bytes_(spec_.tokens_per_block * spec_.kv_bytes_per_token) {
    for (const ScenarioDomain& d : scenario.topology.domains) {
      for (const ScenarioHost& h : d.hosts) {
        for (const ScenarioInstance& i : h.prefill_instances) prefill_.Add(i, d.name);
        for (const ScenarioInstance& i : h.decode_instances) decode_.Add(i, d.name);
      }
    }
    end_index_ = requests_.size();
    if (spec_.request_limit.has_value()) {
      end_index_ = std::min(end_index_, static_cast<size_t>(*spec_.request_limit));
    }
  }

  absl::StatusOr<bool> Next(SimOp* op) override {
    while (true) {
      const bool more_requests = next_ < end_index_;
      if (!heap_.empty() && (!more_requests || heap_.front().t_ns <= ArrivalNs(next_))) {
        std::pop_heap(heap_.begin(), heap_.end(), Later);
        const Pending p = heap_.back();
        heap_.pop_back();
        SimOp& held = slots_[p.slot];
        free_slots_.push_back(p.slot);
        if (p.t_ns >= scenario_.duration_ns) continue;  // past the end of the run
        *op = std::move(held);
        return true;
      }
      if (!more_requests) return false;
      if (ArrivalNs(next_) >= scenario_.duration_ns) {
        end_index_ = next_;  // sorted: every later request arrives later still
        continue;
      }
      if (absl::Status st = Expand(next_); !st.ok()) return st;
      ++next_;
    }
  }

 private:
  // The heap orders small entries; the operations wait in reusable slots so
  // heap moves never copy strings.
  struct Pending {
    TimeNs t_ns = 0;
    int64_t seq = 0;
    size_t slot = 0;
  };
  // Min-heap on (time, sequence) through std::*_heap's max-heap.
  static bool Later(const Pending& a, const Pending& b) {
    return a.t_ns != b.t_ns ? a.t_ns > b.t_ns : a.seq > b.seq;
  }

  TimeNs ArrivalNs(size_t i) const {
    const double ns = static_cast<double>(requests_[i].timestamp_ms) *
                      static_cast<double>(kNsPerMs) / spec_.replay_speed;
    const double offset = static_cast<double>(workload_.start_ns);
    // Far beyond any run: clamp instead of overflowing the conversion.
    if (ns + offset >= 9e18) return kInt64Max;
    return workload_.start_ns + static_cast<TimeNs>(std::floor(ns));
  }

  std::string Key(int64_t id) const { return absl::StrCat(spec_.key_prefix, id); }

  const InstanceRef& PickByWeight(InstancePool& pool, const std::vector<DomainWeight>& weights) {
    double total = 0;
    for (const DomainWeight& w : weights) total += w.weight;
    const double u = rng_.NextDouble01() * total;
    double cumulative = 0;
    const DomainWeight* chosen = nullptr;
    for (const DomainWeight& w : weights) {
      if (w.weight <= 0) continue;
      chosen = &w;
      cumulative += w.weight;
      if (u < cumulative) break;
    }
    HS_CHECK(chosen != nullptr);  // the loader requires a positive weight
    return pool.RoundRobinIn(chosen->domain);
  }

  const InstanceRef& PickPrefill(const TraceRequest& r, size_t index) {
    switch (spec_.prefill_policy) {
      case InstancePolicy::kHash: {
        const uint64_t h = r.hash_ids.empty() ? Mix64(index) : Mix64(static_cast<uint64_t>(r.hash_ids[0]));
        return prefill_.all[h % prefill_.all.size()];
      }
      case InstancePolicy::kWeights:
        return PickByWeight(prefill_, spec_.prefill_weights);
      default:
        return prefill_.RoundRobin();
    }
  }

  const InstanceRef& PickDecode(const TraceRequest& r, size_t index, const InstanceRef& prefill) {
    switch (spec_.decode_policy) {
      case InstancePolicy::kHash: {
        // A different mix than prefill's so the two choices are independent.
        const uint64_t base = r.hash_ids.empty() ? index : static_cast<uint64_t>(r.hash_ids[0]);
        return decode_.all[StableHashCombine(base, 0x6465636f6465ULL) % decode_.all.size()];
      }
      case InstancePolicy::kWeights:
        return PickByWeight(decode_, spec_.decode_weights);
      case InstancePolicy::kSameDomain:
        return decode_.RoundRobinIn(prefill.domain);
      default:
        return decode_.RoundRobin();
    }
  }

  absl::Status Push(TimeNs t, SimOp op) {
    if (static_cast<int64_t>(heap_.size()) >= options_.pending_ops_max) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "trace workload \"", workload_.name, "\": more than ", options_.pending_ops_max,
          " operations of in-flight requests (raise pending_ops_max or the replay speed's "
          "spacing)"));
    }
    op.t_ns = t;
    op.workload = index_;
    size_t slot = slots_.size();
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
      slots_[slot] = std::move(op);
    } else {
      slots_.push_back(std::move(op));
    }
    heap_.push_back(Pending{t, seq_++, slot});
    std::push_heap(heap_.begin(), heap_.end(), Later);
    return absl::OkStatus();
  }

  SimOp BaseOp(SimOpKind kind, SimOpPhase phase, const InstanceRef& inst, size_t request) const {
    SimOp op;
    op.kind = kind;
    op.phase = phase;
    op.tenant = workload_.tenant;
    op.client = inst.client;
    op.requester_domain = inst.domain;
    op.instance = inst.name;
    op.request = static_cast<int64_t>(request);
    return op;
  }

  SimOp ReadOp(SimOpPhase phase, const InstanceRef& inst, size_t request,
               std::vector<std::string> keys) const {
    SimOp op = BaseOp(keys.size() == 1 ? SimOpKind::kGet : SimOpKind::kBatchGet, phase, inst,
                      request);
    op.keys = std::move(keys);
    return op;
  }

  absl::Status Expand(size_t i) {
    const TraceRequest& r = requests_[i];
    const TimeNs t0 = ArrivalNs(i);
    const InstanceRef& prefill = PickPrefill(r, i);
    const size_t n = r.hash_ids.size();

    // The cached prefix: blocks already put, with their put time come.
    size_t cached = 0;
    while (cached < n) {
      const auto it = available_at_.find(r.hash_ids[cached]);
      if (it == available_at_.end() || it->second > t0) break;
      ++cached;
    }
    if (cached > 0) {
      std::vector<std::string> keys;
      keys.reserve(cached);
      for (size_t k = 0; k < cached; ++k) keys.push_back(Key(r.hash_ids[k]));
      if (absl::Status st = Push(t0, ReadOp(SimOpPhase::kPrefillRead, prefill, i, std::move(keys)));
          !st.ok()) {
        return st;
      }
    }
    const int64_t cached_tokens =
        std::min<int64_t>(r.input_length, static_cast<int64_t>(cached) * spec_.tokens_per_block);
    const int64_t compute_tokens = r.input_length - cached_tokens;
    // Capped so absurd token counts cannot overflow; such a request ends past any run.
    const DurationNs compute_ns =
        compute_tokens > kInt64Max / std::max<int64_t>(spec_.prefill_ns_per_token, 1) / 2
            ? kInt64Max / 4
            : compute_tokens * spec_.prefill_ns_per_token;
    const TimeNs t_put = t0 > kInt64Max / 2 ? kInt64Max / 2 : t0 + compute_ns;

    TimeNs ready = t_put;
    // The new blocks are put together, as one batch.
    SimOp put = BaseOp(SimOpKind::kPut, SimOpPhase::kPrefillPut, prefill, i);
    put.size_bytes = block_bytes_;
    put.compute_ns = compute_ns;
    for (size_t k = cached; k < n; ++k) {
      const int64_t id = r.hash_ids[k];
      const auto it = available_at_.find(id);
      if (it != available_at_.end()) {
        ready = std::max(ready, it->second);  // put by another request; wait for it
        continue;
      }
      if (static_cast<int64_t>(available_at_.size()) >= options_.trace_blocks_max) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "trace workload \"", workload_.name, "\": more than ", options_.trace_blocks_max,
            " distinct blocks"));
      }
      available_at_.emplace(id, t_put);
      put.keys.push_back(Key(id));
    }
    if (!put.keys.empty()) {
      if (put.keys.size() > 1) put.kind = SimOpKind::kBatchPut;
      if (absl::Status st = Push(t_put, std::move(put)); !st.ok()) return st;
    }
    if (n == 0) return absl::OkStatus();

    const InstanceRef& decode = PickDecode(r, i, prefill);
    // A request lists each block once; if one ever repeats, read it once.
    std::vector<int64_t> sorted = r.hash_ids;
    std::sort(sorted.begin(), sorted.end());
    const bool repeats = std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
    std::vector<std::string> keys;
    keys.reserve(n);
    for (size_t k = 0; k < n; ++k) {
      const int64_t id = r.hash_ids[k];
      if (repeats && std::find(r.hash_ids.begin(), r.hash_ids.begin() + static_cast<ptrdiff_t>(k),
                               id) != r.hash_ids.begin() + static_cast<ptrdiff_t>(k)) {
        continue;
      }
      keys.push_back(Key(id));
    }
    return Push(ready, ReadOp(SimOpPhase::kDecodeRead, decode, i, std::move(keys)));
  }

  const Scenario& scenario_;
  const Workload& workload_;
  const TraceWorkload& spec_;
  const int32_t index_;
  std::vector<TraceRequest> requests_;
  Rng rng_;
  const ExpandOptions options_;
  const int64_t block_bytes_;
  InstancePool prefill_;
  InstancePool decode_;
  size_t next_ = 0;
  size_t end_index_ = 0;
  int64_t seq_ = 0;
  std::vector<Pending> heap_;
  std::vector<SimOp> slots_;
  std::vector<size_t> free_slots_;
  // Block id -> time its put happens. Looked up only, never iterated.
  absl::flat_hash_map<int64_t, TimeNs> available_at_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<OpStream>> MakeTraceOpStream(const Scenario& scenario,
                                                            int32_t workload_index,
                                                            std::vector<TraceRequest> requests,
                                                            const Rng& rng,
                                                            const ExpandOptions& options) {
  if (workload_index < 0 || static_cast<size_t>(workload_index) >= scenario.workloads.size() ||
      scenario.workloads[static_cast<size_t>(workload_index)].type != WorkloadType::kTrace) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload ", workload_index, " is not a trace workload"));
  }
  const Workload& w = scenario.workloads[static_cast<size_t>(workload_index)];
  bool has_prefill = false;
  bool has_decode = false;
  for (const ScenarioDomain& d : scenario.topology.domains) {
    for (const ScenarioHost& h : d.hosts) {
      has_prefill |= !h.prefill_instances.empty();
      has_decode |= !h.decode_instances.empty();
    }
  }
  if (!has_prefill || !has_decode) {
    return absl::FailedPreconditionError(absl::StrCat(
        "trace workload \"", w.name, "\" needs prefill and decode instances in the topology"));
  }
  // The loader checks these too; a scenario built by hand may not have been
  // through it, and a policy must never reach a domain without instances.
  const auto has_role_in = [&](absl::string_view domain, bool prefill) {
    const ScenarioDomain* d = scenario.FindDomain(domain);
    if (d == nullptr) return false;
    return std::any_of(d->hosts.begin(), d->hosts.end(), [&](const ScenarioHost& h) {
      return !(prefill ? h.prefill_instances : h.decode_instances).empty();
    });
  };
  for (const bool prefill : {true, false}) {
    const std::vector<DomainWeight>& weights =
        prefill ? w.trace.prefill_weights : w.trace.decode_weights;
    const InstancePolicy policy = prefill ? w.trace.prefill_policy : w.trace.decode_policy;
    if (policy != InstancePolicy::kWeights) continue;
    bool any = false;
    for (const DomainWeight& dw : weights) {
      if (dw.weight > 0 && !has_role_in(dw.domain, prefill)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "trace workload \"", w.name, "\": weighted domain \"", dw.domain, "\" has no ",
            prefill ? "prefill" : "decode", " instances"));
      }
      any |= dw.weight > 0;
    }
    if (!any) {
      return absl::FailedPreconditionError(
          absl::StrCat("trace workload \"", w.name, "\": no positive weight"));
    }
  }
  if (w.trace.prefill_policy == InstancePolicy::kSameDomain) {
    return absl::FailedPreconditionError("same_domain is a decode policy only");
  }
  if (w.trace.decode_policy == InstancePolicy::kSameDomain) {
    for (const ScenarioDomain& d : scenario.topology.domains) {
      const bool reachable =
          w.trace.prefill_policy != InstancePolicy::kWeights ||
          std::any_of(w.trace.prefill_weights.begin(), w.trace.prefill_weights.end(),
                      [&](const DomainWeight& dw) { return dw.domain == d.name && dw.weight > 0; });
      if (reachable && has_role_in(d.name, true) && !has_role_in(d.name, false)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "trace workload \"", w.name, "\": decode policy same_domain, but domain \"", d.name,
            "\" has prefill and no decode instances"));
      }
    }
  }
  for (size_t i = 1; i < requests.size(); ++i) {
    if (requests[i].timestamp_ms < requests[i - 1].timestamp_ms) {
      return absl::InvalidArgumentError(absl::StrCat(
          "trace workload \"", w.name, "\": request ", i, " arrives before request ", i - 1,
          " (a trace must be sorted by timestamp)"));
    }
  }
  return std::unique_ptr<OpStream>(
      new TraceOpStream(scenario, workload_index, std::move(requests), rng.Fork(w.name), options));
}

}  // namespace heatsink::sim
