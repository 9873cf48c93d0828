// Fuzz target: scenario JSON loading (sim/scenario.h, sim/json.h) and the
// expansion of a loaded scenario into operations (sim/workloads.h).
//
// The input is scenario JSON, loaded against the real knob registries with
// small limits. Checked:
// - a rejected scenario is INVALID_ARGUMENT or RESOURCE_EXHAUSTED whose
//   message starts with the source name;
// - a loaded scenario keeps the promises of scenario.h: lists within their
//   limits, names unique, every reference (segments, clients, hosts,
//   domains) resolves, scripted operations in time order inside the run;
// - every knob override is accepted by name by some registry (setting it
//   may still fail on range, as a status);
// - without trace workloads (which read files), the operation stream ends
//   or fails with a status, its times never decrease and stay inside the
//   run, and two expansions with the same seed are identical.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/env/rng.h"
#include "core/master/master_knobs.h"
#include "core/replication/replication_knobs.h"
#include "core/tiering/tiering_knobs.h"
#include "sim/engine.h"
#include "sim/network_topology.h"
#include "sim/scenario.h"
#include "sim/workloads.h"

namespace heatsink::sim {
namespace {

constexpr absl::string_view kSource = "fuzz.json";

ScenarioLoadOptions Options() {
  ScenarioLoadOptions o;
  AddKnobSpecs(ReplicationKnobs::Registry(), &o.knobs);
  AddKnobSpecs(MasterKnobs::Registry(), &o.knobs);
  AddKnobSpecs(TieringKnobs::Registry(), &o.knobs);
  AddKnobSpecs(NetworkKnobs::Registry(), &o.knobs);
  AddKnobSpecs(EngineKnobs::Registry(), &o.knobs);
  ScenarioLimits& l = o.limits;
  l.json.input_bytes_max = 64 * 1024;
  l.json.depth_max = 16;
  l.json.values_max = 4096;
  l.json.string_bytes_max = 1024;
  l.domains_max = 4;
  l.hosts_max = 16;
  l.host_items_max = 4;
  l.trunks_max = 16;
  l.knobs_max = 16;
  l.workloads_max = 4;
  l.script_ops_max = 32;
  l.batch_keys_max = 4;
  l.faults_max = 8;
  l.checks_max = 4;
  l.weights_max = 4;
  return o;
}

ExpandOptions Expand() {
  ExpandOptions e;
  e.ops_max = 2000;
  e.pending_ops_max = 2000;
  e.trace_blocks_max = 2000;
  e.zipf_objects_max = 256;
  return e;
}

template <typename Knobs>
bool TrySet(const KnobRegistry<Knobs>& registry, const KnobSetting& s) {
  if (registry.Find(s.name) == nullptr) return false;
  Knobs knobs;
  const absl::Status st = registry.Set(knobs, s.name, s.value);
  HS_CHECK_MSG(st.code() != absl::StatusCode::kNotFound, st.ToString());
  if (st.ok()) (void)knobs.Validate();
  return true;
}

void CheckLoaded(const Scenario& s, const ScenarioLimits& l) {
  HS_CHECK(s.topology.domains.size() <= l.domains_max);
  HS_CHECK(s.topology.trunks.size() <= l.trunks_max);
  HS_CHECK(s.knobs.size() <= l.knobs_max);
  HS_CHECK(s.workloads.size() <= l.workloads_max);
  HS_CHECK(s.checks.size() <= l.checks_max);
  HS_CHECK(s.duration_ns > 0 && s.time_step_ns > 0);
  std::set<std::string> domains;
  std::set<std::string> hosts;
  size_t host_count = 0;
  for (const ScenarioDomain& d : s.topology.domains) {
    HS_CHECK_MSG(domains.insert(d.name).second, "duplicate domain " + d.name);
    HS_CHECK(d.join_at_ns >= 0);
    for (const ScenarioHost& h : d.hosts) {
      ++host_count;
      HS_CHECK_MSG(hosts.insert(h.name).second, "duplicate host " + h.name);
      HS_CHECK(h.domain == d.name);
      HS_CHECK(s.FindHost(h.name) == &h);
      HS_CHECK(h.numa_nodes.size() <= l.host_items_max && h.segments.size() <= l.host_items_max);
      for (const ScenarioSegment& seg : h.segments) {
        HS_CHECK(s.FindSegment(seg.full_name) == &seg);
        HS_CHECK(s.HostOf(seg.full_name) == &h);
      }
      for (const ScenarioClient& c : h.clients) HS_CHECK(s.FindClient(c.full_name) == &c);
      for (const auto* list : {&h.prefill_instances, &h.decode_instances}) {
        for (const ScenarioInstance& i : *list) {
          const ScenarioClient* c = s.FindClient(i.client);
          HS_CHECK_MSG(c != nullptr && s.HostOf(i.client) == &h, "instance client " + i.client);
        }
      }
    }
  }
  HS_CHECK(host_count <= l.hosts_max);
  for (const ScenarioTrunk& t : s.topology.trunks) {
    HS_CHECK(s.FindDomain(t.domain_a) != nullptr && s.FindDomain(t.domain_b) != nullptr);
  }
  std::set<std::string> workload_names;
  for (const Workload& w : s.workloads) {
    HS_CHECK_MSG(workload_names.insert(w.name).second, "duplicate workload " + w.name);
    if (w.type != WorkloadType::kScripted) continue;
    HS_CHECK(w.scripted.ops.size() <= l.script_ops_max);
    TimeNs last = 0;
    for (const ScriptOp& op : w.scripted.ops) {
      HS_CHECK_MSG(op.t_ns >= last && op.t_ns >= 0, op.where);
      last = op.t_ns;
      HS_CHECK(op.keys.size() <= l.batch_keys_max);
      if (!op.segment.empty()) HS_CHECK_MSG(s.FindSegment(op.segment) != nullptr, op.where);
      if (!op.client.empty()) HS_CHECK_MSG(s.FindClient(op.client) != nullptr, op.where);
      if (!op.host.empty()) HS_CHECK_MSG(s.FindHost(op.host) != nullptr, op.where);
    }
  }
  for (const WorkerCrash& c : s.faults.worker_crashes) HS_CHECK(s.FindHost(c.host) != nullptr);
  for (const SegmentUnmount& u : s.faults.segment_unmounts) {
    HS_CHECK(s.FindSegment(u.segment) != nullptr);
  }
  for (const TrunkFault& f : s.faults.trunk_faults) {
    HS_CHECK(s.FindDomain(f.domain_a) != nullptr && s.FindDomain(f.domain_b) != nullptr);
  }
  for (const KnobSetting& k : s.knobs) {
    bool known = false;
    known |= TrySet(ReplicationKnobs::Registry(), k);
    known |= TrySet(MasterKnobs::Registry(), k);
    known |= TrySet(TieringKnobs::Registry(), k);
    known |= TrySet(NetworkKnobs::Registry(), k);
    known |= TrySet(EngineKnobs::Registry(), k);
    HS_CHECK_MSG(known, "knob accepted by the loader but by no registry: " + k.name);
  }
}

// The expanded operations as comparable text, or the error.
std::vector<std::string> ExpandOps(const Scenario& s) {
  std::vector<std::string> out;
  const absl::StatusOr<std::unique_ptr<OpStream>> stream =
      MakeScenarioOpStream(s, Rng(s.seed).Fork("workload"), Expand());
  if (!stream.ok()) {
    out.push_back(stream.status().ToString());
    return out;
  }
  TimeNs last = 0;
  SimOp op;
  for (int64_t n = 0; n <= Expand().ops_max; ++n) {
    const absl::StatusOr<bool> more = (*stream)->Next(&op);
    if (!more.ok()) {
      out.push_back(more.status().ToString());
      return out;
    }
    if (!*more) return out;
    HS_CHECK_MSG(op.t_ns >= last, "operation times decrease");
    HS_CHECK_MSG(op.t_ns >= 0 && op.t_ns < s.duration_ns, "operation outside the run");
    last = op.t_ns;
    out.push_back(absl::StrCat(op.t_ns, " ", SimOpKindName(op.kind), " ", op.workload, " ",
                               op.client, " ", op.segment, " ", op.host, " ", op.size_bytes, " ",
                               op.keys.empty() ? "" : op.keys.front(), " ", op.keys.size()));
  }
  return out;
}

void Run(absl::string_view text) {
  static const ScenarioLoadOptions* const options = new ScenarioLoadOptions(Options());
  const absl::StatusOr<Scenario> s = ParseScenario(text, kSource, "/nonexistent", *options);
  if (!s.ok()) {
    const absl::StatusCode code = s.status().code();
    HS_CHECK_MSG(code == absl::StatusCode::kInvalidArgument ||
                     code == absl::StatusCode::kResourceExhausted,
                 s.status().ToString());
    HS_CHECK_MSG(absl::StartsWith(s.status().message(), absl::StrCat(kSource, ":")),
                 s.status().ToString());
    return;
  }
  CheckLoaded(*s, options->limits);
  for (const Workload& w : s->workloads) {
    if (w.type == WorkloadType::kTrace) return;
  }
  const std::vector<std::string> first = ExpandOps(*s);
  HS_CHECK_MSG(first == ExpandOps(*s), "expansion is not deterministic");
}

}  // namespace
}  // namespace heatsink::sim

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  heatsink::sim::Run(absl::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
