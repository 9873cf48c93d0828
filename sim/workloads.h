// File: sim/workloads.h
//
// Workload generators: each workload of a Scenario becomes a time-ordered
// stream of abstract operations (SimOp) that the driver feeds to the engine.
// Streams are lazy: they hold only the state needed for the next operation
// (plus, for trace replay, the requests and the operations of requests still
// in flight), so a 10x trace costs 10x time, not 10x memory per op.
//
// Determinism: every random choice comes from an Rng forked from the
// workload Rng by the workload's name (adding a workload never shifts the
// draws of another); ties in time are broken by a sequence number, and the
// scenario stream merges workloads by (time, workload index, order within the
// workload). No hash-map iteration reaches the output.
//
// Generators (docs/scenario-format.md has the user-facing description):
// - trace: Mooncake P/D replay. Request i arrives at
//   start + floor(timestamp_ms * 1e6 / replay_speed) ns and goes to a prefill
//   instance by policy. Its blocks are objects "<key_prefix><hash_id>" of
//   tokens_per_block x kv_bytes_per_token bytes. The longest prefix of its
//   blocks that earlier requests already put (and whose put time has come)
//   is read by the prefill instance at arrival (get, or batch_get for more
//   than one block); the rest of the prompt is computed
//   (uncached tokens x prefill_ns_per_token), then every block never put
//   before is put, in one batch_put (a put for a single block). Blocks another request is still
//   computing are not put twice (that would bump the version). The decode
//   instance, chosen by its policy, reads all of the request's blocks with
//   one batch_get once the prefill is done and every block is in the store.
// - zipf: the objects are put at start_ns by writer-domain clients (round
//   robin); after settle_ns, reads arrive at rate_per_s (gaps uniform in
//   [mean/2, 3 mean/2]) from a uniformly drawn reader; keys by Zipf rank
//   ("<workload>-<rank>", rank 0 the hottest).
// - cross_domain_reuse: objects put in the writer domain, then read round
//   after round (object 0..n-1, reads_per_object rounds) from the reader
//   domain at rate_per_s.
// - cold_start: the working set is put in the source domain at start_ns;
//   optional source-domain reads from settle on; the joining domain's reads
//   start at its join_at_ns.
// - scripted: the scenario's ops as written (advance_time only moves time).
// Faults with a time (worker crashes and restarts, segment unmounts and
// remounts) become operations too, after every workload at equal time.
//
// Example:
//   HS_ASSIGN_OR_RETURN(std::unique_ptr<OpStream> ops,
//                       MakeScenarioOpStream(scenario, root.Fork("workload")));
//   SimOp op;
//   while (true) {
//     HS_ASSIGN_OR_RETURN(bool more, ops->Next(&op));
//     if (!more) break;
//     engine.ScheduleAt(op.t_ns, ...);
//   }
#ifndef HEATSINK_SIM_WORKLOADS_H_
#define HEATSINK_SIM_WORKLOADS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/env/rng.h"
#include "core/env/time.h"
#include "core/model/ids.h"
#include "sim/scenario.h"
#include "sim/trace.h"

namespace heatsink::sim {

enum class SimOpKind {
  kPut,
  kBatchPut,
  kGet,
  kBatchGet,
  kRemove,
  kMount,
  kUnmount,
  kKillWorker,
  kRestartWorker,
  kFailCopy,
  kDelayCopies,
  kCopyStart,
  kSetKnob,
  kDrain,
  kUndrain,
  kPropose,
  kWarmup,
};
// "put", "get", "batch_get", ... (the scripted op words).
absl::string_view SimOpKindName(SimOpKind kind);

// Where a trace operation sits in its request's life.
enum class SimOpPhase { kNone, kPrefillRead, kPrefillPut, kDecodeRead };
absl::string_view SimOpPhaseName(SimOpPhase phase);

inline constexpr int32_t kFaultSource = -1;  // SimOp::workload of fault operations

struct SimOp {
  TimeNs t_ns = 0;
  SimOpKind kind = SimOpKind::kGet;
  int32_t workload = 0;            // index in Scenario::workloads, or kFaultSource
  std::string tenant;
  std::vector<std::string> keys;   // get/put/remove/copy_start: one; batch_*: the batch
  int64_t size_bytes = 0;          // put, batch_put (every key)
  std::string client;              // object ops: "<host>/<client>" issuing them
  Domain requester_domain;         // object ops: the client's domain; warmup: the domain
  int64_t reader = -1;             // synthetic reads: reader index within the workload
  std::string instance;            // trace: "<host>/<instance>"
  int64_t request = -1;            // trace: index of the request in the trace
  SimOpPhase phase = SimOpPhase::kNone;
  DurationNs compute_ns = 0;       // trace prefill puts: the compute that preceded them
  std::string segment;             // mount/unmount: "<host>/<segment>"
  HostId host;                     // kill/restart_worker, delay_copies, copy_start
  int64_t count = 0;               // fail_copy
  DurationNs delay_ns = 0;         // delay_copies
  std::string knob_name;           // set_knob
  std::string knob_value;
  std::shared_ptr<const ScriptedProposal> proposal;  // propose
  std::string where;               // scripted ops: JSON location for messages
};

// A time-ordered source of operations. Streams made by the functions below
// keep a reference to their Scenario, which must outlive them.
class OpStream {
 public:
  virtual ~OpStream() = default;
  // Fills *op with the next operation and returns true, or returns false at
  // the end. Every field of *op is overwritten (the caller may pass an op it
  // is done with, so its storage can be reused). Times never decrease.
  // Errors (limits, unreadable trace) end the stream.
  [[nodiscard]] virtual absl::StatusOr<bool> Next(SimOp* op) = 0;
};

struct ExpandOptions {
  // Most operations one scenario stream emits (RESOURCE_EXHAUSTED beyond).
  int64_t ops_max = 500'000'000;
  // Operations of in-flight trace requests held for reordering.
  int64_t pending_ops_max = 4'000'000;
  // Distinct trace blocks remembered (to know which are cached).
  int64_t trace_blocks_max = 50'000'000;
  int64_t zipf_objects_max = 10'000'000;
  // Bounds for reading trace files (request_limit comes from the workload).
  TraceLimits trace;
};

// The stream of one workload. `rng` is the workload subsystem's Rng; the
// stream forks its own by the workload's name. Trace workloads read their
// file here (ReadTraceFile on resolved_path, honouring request_limit).
[[nodiscard]] absl::StatusOr<std::unique_ptr<OpStream>> MakeWorkloadOpStream(
    const Scenario& scenario, int32_t workload_index, const Rng& rng,
    const ExpandOptions& options = ExpandOptions());

// A trace workload's stream over requests already in memory (tests, tools).
// request_limit still applies.
[[nodiscard]] absl::StatusOr<std::unique_ptr<OpStream>> MakeTraceOpStream(
    const Scenario& scenario, int32_t workload_index, std::vector<TraceRequest> requests,
    const Rng& rng, const ExpandOptions& options = ExpandOptions());

// The timed faults of the scenario as operations.
[[nodiscard]] std::unique_ptr<OpStream> MakeFaultOpStream(const Scenario& scenario);

// Every workload and the timed faults, merged by (t_ns, workload index,
// order within the workload); faults come after workloads at equal time.
// Operations at or after the scenario's duration are dropped.
[[nodiscard]] absl::StatusOr<std::unique_ptr<OpStream>> MakeScenarioOpStream(
    const Scenario& scenario, const Rng& rng, const ExpandOptions& options = ExpandOptions());

// Drains a stream into a vector; RESOURCE_EXHAUSTED past `ops_max`.
[[nodiscard]] absl::StatusOr<std::vector<SimOp>> CollectOps(OpStream& stream, int64_t ops_max);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_WORKLOADS_H_
