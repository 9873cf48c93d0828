// File: sim/scenario.h
//
// A simulation scenario as a plain value, and its loader. One JSON file gives
// the topology, knob overrides, workloads, faults, seed, duration, outputs and
// optional checks; docs/scenario-format.md documents every field, its type,
// default and range, with a complete example.
//
// The loader is strict: unknown fields, wrong JSON types, out-of-range
// values, references to unknown domains/hosts/segments/clients and duplicate
// names are INVALID_ARGUMENT with file, line, column and JSON path:
//
//   hot.json:12:7: $.topology.domains[1].hosts[0].nic_send_gbps: expected a number, got string
//
// Every list has a bound (ScenarioLimits); exceeding one is RESOURCE_EXHAUSTED.
//
// Knobs are validated by name and JSON type against a list of KnobSpec given
// by the caller, so the loader does not depend on which components exist; the
// values are handed on as text, ready for KnobRegistry::Set.
//
// Units: integer nanoseconds and bytes throughout (see sim/json_fields.h for
// how sizes, durations and bandwidths are written in JSON).
//
// Example:
//   ScenarioLoadOptions options;
//   AddKnobSpecs(MasterKnobs::Registry(), &options.knobs);
//   HS_ASSIGN_OR_RETURN(Scenario s, LoadScenarioFile("scenarios/hot-key-fanout.json", options));
#ifndef HEATSINK_SIM_SCENARIO_H_
#define HEATSINK_SIM_SCENARIO_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/knobs.h"
#include "core/env/time.h"
#include "core/model/ids.h"
#include "core/model/topology.h"
#include "sim/json.h"

namespace heatsink::sim {

inline constexpr int64_t kScenarioFormatVersion = 1;

// ---------------------------------------------------------------- topology

struct ScenarioNumaNode {
  int64_t id = 0;
  int64_t capacity_bytes = int64_t{64} << 30;
  DurationNs local_read_latency_ns = 100;
  DurationNs remote_read_latency_ns = 180;
  int64_t local_read_bytes_per_s = 100'000'000'000;   // 800 Gbps
  int64_t remote_read_bytes_per_s = 40'000'000'000;   // 320 Gbps
};

// A MEMORY segment served by the host's store worker. `numa_node` is where
// the segment's preferred (head pool) region lives.
struct ScenarioSegment {
  std::string name;       // unique within the host
  std::string full_name;  // "<host>/<name>", how the rest of the scenario refers to it
  int64_t capacity_bytes = 0;
  int64_t numa_node = 0;
};

// A store client (the library inside an inference process) on a host.
struct ScenarioClient {
  std::string name;       // unique within the host
  std::string full_name;  // "<host>/<name>"
  int64_t numa_node = 0;
};

// A prefill or decode instance; it reads and writes through `client`.
struct ScenarioInstance {
  std::string name;       // unique within the host among instances of its role
  std::string full_name;  // "<host>/<name>"
  std::string client;     // full name of a client on the same host
};

struct ScenarioHost {
  HostId name;            // unique in the scenario
  Domain domain;
  int64_t nic_count = 1;
  int64_t nic_send_bytes_per_s = 12'500'000'000;     // 100 Gbps, per NIC
  int64_t nic_receive_bytes_per_s = 12'500'000'000;  // 100 Gbps, per NIC
  int64_t local_copy_bytes_per_s = 20'000'000'000;   // 160 Gbps
  int64_t nic_numa_node = 0;
  std::vector<ScenarioNumaNode> numa_nodes;  // ascending id; default one node, id 0
  // numa_distances[i][j]: ACPI SLIT style distance from numa_nodes[i] to
  // numa_nodes[j] (10 = local). Empty: 10 on the diagonal, 20 elsewhere.
  std::vector<std::vector<int>> numa_distances;
  // Where the host's NUMA set-up is written: "<source>:<line>:<column>: <JSON
  // path>" of its numa_nodes field (of the host entry when absent), so that a
  // NUMA refusal made after parsing (the head-pool placement, which needs the
  // tiering knobs) names it.
  std::string numa_where;
  std::vector<ScenarioSegment> segments;
  std::vector<ScenarioClient> clients;
  std::vector<ScenarioInstance> prefill_instances;
  std::vector<ScenarioInstance> decode_instances;
};

// The host's memory topology as the core's plain value (what the runtime
// builds from hwloc): its NUMA nodes with their capacities (no CPUs), its
// distances (numa_distances, else 10 local and 20 elsewhere) and its NIC node.
Topology HostTopology(const ScenarioHost& host);

struct ScenarioDomain {
  Domain name;
  // The domain's segments are mounted and its clients start at this time
  // (0: from the start). A later join models a new domain or store pool.
  TimeNs join_at_ns = 0;
  std::vector<ScenarioHost> hosts;
};

// A full-duplex link between two domains; oversubscription 300 means 3:1.
struct ScenarioTrunk {
  Domain domain_a;
  Domain domain_b;
  int64_t bandwidth_bytes_per_s = 12'500'000'000;  // 100 Gbps
  DurationNs latency_ns = 20'000;
  int64_t oversubscription_percent = 100;
};

// Network model overrides; absent values keep the network knobs' defaults.
struct ScenarioNetwork {
  std::optional<DurationNs> control_same_host_latency_ns;
  std::optional<DurationNs> control_same_domain_latency_ns;
  std::optional<DurationNs> control_cross_domain_latency_ns;
  std::optional<int64_t> control_jitter_percent;
  std::optional<DurationNs> transfer_overhead_ns;
};

struct ScenarioTopology {
  std::vector<ScenarioDomain> domains;
  // Explicit trunks in document order, then the generated default trunks for
  // every other domain pair (in domain order).
  std::vector<ScenarioTrunk> trunks;
  ScenarioNetwork network;
};

// ------------------------------------------------------------------ knobs

// One knob a registry accepts; the loader checks names and JSON types.
struct KnobSpec {
  std::string name;
  KnobType type = KnobType::kString;
};

template <typename Knobs>
void AddKnobSpecs(const KnobRegistry<Knobs>& registry, std::vector<KnobSpec>* out) {
  for (const auto& e : registry.entries()) out->push_back(KnobSpec{e.name, e.type});
}

// A knob override in text form, for KnobRegistry::Set. `where` is
// "<file>:<line>:<column>: <path>" so a later Set/Validate failure can point
// at the JSON.
struct KnobSetting {
  std::string name;
  std::string value;
  std::string where;
};

// -------------------------------------------------------------- workloads

enum class WorkloadType { kTrace, kZipf, kCrossDomainReuse, kColdStart, kScripted };
// "trace", "zipf", "cross_domain_reuse", "cold_start", "scripted".
absl::string_view WorkloadTypeName(WorkloadType type);

// How a trace request picks its prefill or decode instance.
enum class InstancePolicy {
  kRoundRobin,  // cycle through all instances of the role, in topology order
  kHash,        // stable hash of the request's first block id (prefix affinity)
  kWeights,     // a domain drawn by weight, then round robin inside it
  kSameDomain,  // decode only: round robin inside the prefill instance's domain
};
absl::string_view InstancePolicyName(InstancePolicy policy);

struct DomainWeight {
  Domain domain;
  double weight = 0;
};

struct TraceWorkload {
  std::string path;           // as written in the scenario
  std::string resolved_path;  // relative paths resolved against the scenario's directory
  double replay_speed = 1.0;  // trace time is divided by this
  std::optional<int64_t> request_limit;  // first N requests only
  InstancePolicy prefill_policy = InstancePolicy::kRoundRobin;
  std::vector<DomainWeight> prefill_weights;
  InstancePolicy decode_policy = InstancePolicy::kRoundRobin;
  std::vector<DomainWeight> decode_weights;
  int64_t tokens_per_block = 512;
  int64_t kv_bytes_per_token = 131'072;  // e.g. 8B model, 32 layers x 8 KV heads x 128 x fp16 x 2
  DurationNs prefill_ns_per_token = 20'000;
  std::string key_prefix = "blk-";
};

struct ZipfWorkload {
  std::vector<Domain> reader_domains;  // default: every domain
  int64_t readers_per_domain = 1;
  int64_t objects = 0;
  int64_t object_size_bytes = int64_t{1} << 20;
  double skew = 0.99;
  double rate_per_s = 0;              // reads per second, all readers together
  int64_t batch_size = 1;             // > 1: each read is a BatchGet of this many keys
  Domain writer_domain;               // default: the first reader domain
  DurationNs settle_ns = 100 * kNsPerMs;  // between the puts and the first read
  std::optional<DurationNs> duration_ns;  // reads stop then; default: end of run
  // A hot set that drifts: every drift_step_ns after the first read, rank r
  // moves on to the next object (after k steps it reads object
  // (r + k) mod objects). 0: no drift.
  DurationNs drift_step_ns = 0;
};

struct CrossDomainReuseWorkload {
  Domain writer_domain;
  Domain reader_domain;
  int64_t objects = 0;
  int64_t object_size_bytes = int64_t{1} << 20;
  int64_t reads_per_object = 0;
  double rate_per_s = 0;
  int64_t readers = 1;                // reader clients used in the reader domain
  DurationNs settle_ns = 100 * kNsPerMs;
};

struct ColdStartWorkload {
  Domain domain;         // the joining domain (its join_at_s is the start of its reads)
  Domain source_domain;  // where the working set is written; default: first other domain
  int64_t working_set = 0;
  int64_t object_size_bytes = int64_t{1} << 20;
  double skew = 0;                     // 0: uniform over the working set
  double read_rate_per_s = 0;          // reads from the joining domain
  double source_read_rate_per_s = 0;   // reads from the source domain, from settle on
  int64_t readers = 1;
  DurationNs settle_ns = 100 * kNsPerMs;
  std::optional<DurationNs> duration_ns;  // of the joining domain's reads
};

enum class ScriptOpKind {
  kMount,
  kUnmount,
  kPut,
  kBatchPut,
  kGet,
  kBatchGet,
  kRemove,
  kKillWorker,
  kRestartWorker,
  kFailCopy,
  kDelayCopies,
  kCopyStart,
  kAdvanceTime,
  kSetKnob,
  kDrain,
  kUndrain,
  kPropose,
  kWarmup,
};
// The JSON "op" word: "mount", "batch_get", "advance_time", ...
absl::string_view ScriptOpKindName(ScriptOpKind kind);

// `propose`: a burst of SubmitReplicaActionProposal calls for one key, all at
// the op's instant, the way several proposers (or one retrying) would send
// them. Every call carries the same content; only the proposal id differs,
// unless `same_id`, when every call repeats the first id (an idempotent
// resubmission).
struct ScriptedProposal {
  int64_t first_proposal_id = 0;  // ids first, first + 1, ... (>= 1)
  int64_t count = 1;              // calls in the burst
  bool same_id = false;
  Domain requester_domain;  // hints; empty = none
  Domain target_domain;
  int64_t observed_version = 0;     // 0: the object's version when the op runs
  int64_t expected_size_bytes = 0;  // 0: the object's size when the op runs
  DurationNs expires_in_ns = 0;     // expiration = the op's time + this

  friend bool operator==(const ScriptedProposal&, const ScriptedProposal&) = default;
};

// One scripted operation; which fields are meaningful depends on `kind`
// (docs/scenario-format.md, "scripted").
struct ScriptOp {
  ScriptOpKind kind = ScriptOpKind::kGet;
  TimeNs t_ns = 0;                 // absolute simulated time
  std::string segment;             // mount, unmount: "<host>/<segment>"
  std::string client;              // put, batch_put, get, batch_get, remove: "<host>/<client>"
  HostId host;                     // kill/restart_worker, delay_copies, copy_start
  std::string tenant;              // object ops, fail_copy, copy_start
  std::vector<std::string> keys;   // one key, or the batch; empty for fail_copy = any key
  int64_t size_bytes = 0;          // put, batch_put (every key)
  int64_t count = 1;               // fail_copy: how many copies fail
  DurationNs delay_ns = 0;         // advance_time: by; delay_copies: extra time before CopyEnd
  std::string knob_name;           // set_knob
  std::string knob_value;          // set_knob, text form
  std::optional<ScriptedProposal> proposal;  // propose
  Domain domain;                             // warmup
  std::string where;               // "<file>:<line>:<column>: <path>"
};

struct ScriptedWorkload {
  std::vector<ScriptOp> ops;  // nondecreasing t_ns
};

struct Workload {
  std::string name;        // unique; default "<type>-<index>"
  WorkloadType type = WorkloadType::kScripted;
  std::string tenant = std::string(kDefaultTenant);
  TimeNs start_ns = 0;     // trace: offset of trace time 0; synthetic: time of the puts
  // Synthetic (zipf, cross_domain_reuse, cold_start): keys per initial put.
  // 1: one put per object; above 1: batch_puts of that many keys, each by
  // the next writer in turn.
  int64_t put_batch_keys = 1;
  TraceWorkload trace;
  ZipfWorkload zipf;
  CrossDomainReuseWorkload cross_domain_reuse;
  ColdStartWorkload cold_start;
  ScriptedWorkload scripted;
};

// ----------------------------------------------------------------- faults

struct WorkerCrash {
  HostId host;
  TimeNs at_ns = 0;
  std::optional<TimeNs> restart_at_ns;
};

struct SegmentUnmount {
  std::string segment;  // "<host>/<segment>"
  TimeNs at_ns = 0;
  std::optional<TimeNs> remount_at_ns;
};

struct ControlMessageFaults {
  double drop_probability = 0;
  double delay_probability = 0;
  DurationNs delay_ns = 0;  // added to a delayed message
  // Messages sent at or after this time are neither dropped nor delayed
  // (nullopt: the faults last the whole run).
  std::optional<TimeNs> to_ns;
};

enum class TrunkFaultKind { kPartition, kDegrade };

// Between from_ns (inclusive) and to_ns (exclusive) the trunk between the two
// domains fails everything (partition) or runs at bandwidth_factor of its
// bandwidth with extra latency (degrade).
struct TrunkFault {
  Domain domain_a;
  Domain domain_b;
  TrunkFaultKind kind = TrunkFaultKind::kPartition;
  TimeNs from_ns = 0;
  TimeNs to_ns = 0;
  double bandwidth_factor = 1.0;
  DurationNs extra_latency_ns = 0;
};

// The master process dies at at_ns: everything it kept in memory (objects,
// leases, tasks, heat, cooldowns) is gone, and control messages to it fail
// until a fresh master starts at restart_at_ns and rebuilds its objects from
// the manifests its stores report (docs/scenario-format.md, "faults";
// docs/master-crash.md).
struct MasterCrash {
  TimeNs at_ns = 0;
  TimeNs restart_at_ns = 0;  // > at_ns and < the run's duration
};

// A master crash without restart_at_s restarts this much later.
inline constexpr DurationNs kMasterRestartDelayDefaultNs = 1'000'000'000;

struct ScenarioFaults {
  std::vector<WorkerCrash> worker_crashes;
  std::vector<MasterCrash> master_crashes;  // ascending, never overlapping
  std::vector<SegmentUnmount> segment_unmounts;
  double copy_failure_probability = 0;
  ControlMessageFaults control_messages;
  std::vector<TrunkFault> trunk_faults;
};

// ----------------------------------------------------------------- checks

// An expectation a driver evaluates after a run: `metric op value`, where
// metric names a summary value (the driver defines the names).
struct ScenarioCheck {
  std::string name;    // default "check-<index>"
  std::string metric;
  std::string op;      // "<", "<=", ">", ">=", "=="
  double value = 0;
  std::optional<std::string> mode;  // only in runs with this dynamic_replication_mode
  std::string where;
};

// --------------------------------------------------------------- scenario

struct ScenarioOutputs {
  bool log_reads = false;                 // write reads.jsonl
  DurationNs csv_interval_ns = kNsPerSec;  // a positive multiple of time_step_ns
  bool per_request_csv = true;
  bool html_report = true;
  // Extra-memory budget of the clairvoyant limit line (sim/limit_lines.h);
  // nullopt: unlimited.
  std::optional<int64_t> clairvoyant_budget_bytes;
};

struct Scenario {
  std::string source;       // path or name of the file it came from
  std::string name;
  std::string description;
  uint64_t seed = 1;
  DurationNs duration_ns = 60 * kNsPerSec;
  DurationNs time_step_ns = kNsPerSec;  // sampling step of the time series
  ScenarioOutputs outputs;
  ScenarioTopology topology;
  std::vector<KnobSetting> knobs;       // document order
  std::vector<Workload> workloads;
  ScenarioFaults faults;
  std::vector<ScenarioCheck> checks;

  const ScenarioDomain* FindDomain(absl::string_view name) const;
  const ScenarioHost* FindHost(absl::string_view name) const;
  // By full name "<host>/<name>".
  const ScenarioSegment* FindSegment(absl::string_view full_name) const;
  const ScenarioClient* FindClient(absl::string_view full_name) const;
  // The host a full name ("<host>/<x>") belongs to, or nullptr.
  const ScenarioHost* HostOf(absl::string_view full_name) const;
};

struct ScenarioLimits {
  JsonLimits json;
  size_t domains_max = 256;
  size_t hosts_max = 65'536;           // after `count` expansion, whole topology
  size_t host_items_max = 1'024;       // per host: NUMA nodes, segments, clients, instances
  size_t trunks_max = 32'768;          // after default expansion
  size_t knobs_max = 4'096;
  size_t workloads_max = 256;
  size_t script_ops_max = 1'000'000;   // per scripted workload
  size_t batch_keys_max = 65'536;      // keys in one batch_get
  int64_t proposal_burst_max = 10'000;  // calls in one propose op
  size_t faults_max = 100'000;         // per fault list
  size_t checks_max = 4'096;
  size_t weights_max = 256;
};

struct ScenarioLoadOptions {
  // Knobs the scenario may set. With check_knob_names false any name is
  // accepted (types must still be scalars): for tools that read a scenario
  // without the components' registries.
  std::vector<KnobSpec> knobs;
  bool check_knob_names = true;
  ScenarioLimits limits;
};

// Parses scenario JSON text. `source` names the input in messages; relative
// trace paths are resolved against `base_dir` ("" = as written).
[[nodiscard]] absl::StatusOr<Scenario> ParseScenario(absl::string_view text,
                                                     absl::string_view source,
                                                     absl::string_view base_dir,
                                                     const ScenarioLoadOptions& options);

// Reads and parses a file (NOT_FOUND if it cannot be opened; the JSON size
// limit applies before reading it whole). Trace files are not opened here.
[[nodiscard]] absl::StatusOr<Scenario> LoadScenarioFile(const std::string& path,
                                                        const ScenarioLoadOptions& options);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_SCENARIO_H_
