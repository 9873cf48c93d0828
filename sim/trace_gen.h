// File: sim/trace_gen.h
//
// A seeded generator of synthetic request traces in the Mooncake format
// (sim/trace.h), for studies of cross-domain prefix reuse. Three shapes
// (docs/gen-trace.md has the full rules and the defaults):
//
//   agentic         multi-turn agent sessions: each turn's prompt is a shared
//                   tool prompt, the session's whole history and a few fresh
//                   blocks; turns minutes apart, so a session's blocks are
//                   reused slowly.
//   hot-shift       requests on a zipf-popular set of hot prefixes that is
//                   replaced by a fresh set every shift period.
//   one-shot-flood  a flood of one-shot prompts: a hot shared system prompt
//                   plus blocks that never appear again.
//
// Every hash id names one 512-token block; equal ids mean equal content, and
// distinct blocks have distinct ids. Ids are numbered 0, 1, 2, ... in the
// order they first appear in the output, as in the public traces.
// input_length is blocks x 512 minus a remainder drawn uniformly from
// [0, 511] (the last block is partial); output_length is drawn uniformly from
// [1, 2 x output_length_mean - 1].
//
// Determinism: the same spec (seed included) gives the same requests, and
// so the same bytes from AppendTraceJsonl, on every machine. All draws come
// from core/env/rng.h's Rng, forked from the seed per purpose (arrivals,
// content, lengths) so that changing one parameter does not reshuffle the
// others' draws. Times are integer microseconds; the only real-valued step
// is an exponential gap, -ln(1 - U) x mean, computed with DeterministicLog
// (sim/workloads_zipf.h: IEEE basic operations only, never libm) and rounded
// to whole microseconds. Zipf choices use ZipfSampler (53-bit integer
// thresholds). No hash container is iterated.
//
// Order: requests are sorted by arrival time in microseconds (timestamps
// are its floor in milliseconds); requests arriving in the same microsecond
// keep generation order (sessions in arrival order, a session's turns in
// turn order).
//
// The trace is a window of duration_s: every arrival falls in
// [0, duration_s); turns of an agentic session that would arrive after the
// window are not part of the trace, as in a trace captured during a window.
//
// Errors: a spec that breaks a rule (ValidateTraceGenSpec) is
// INVALID_ARGUMENT; a trace that would pass requests_max,
// blocks_per_request_max or hash_ids_max is RESOURCE_EXHAUSTED (never a
// silently cut trace). Messages name the parameter by its heatsink-sim
// gen-trace flag, e.g. "--session-rate-per-s: must be > 0, got -1".
//
// Example:
//   TraceGenSpec spec;
//   spec.shape = TraceShape::kHotShift;
//   spec.seed = 7;
//   HS_RETURN_IF_ERROR(SetTraceGenParam(&spec, "shift-period-s", "60"));
//   HS_ASSIGN_OR_RETURN(std::vector<TraceRequest> trace, GenerateTrace(spec));
//   std::string jsonl;
//   AppendTraceJsonl(trace, &jsonl);
#ifndef HEATSINK_SIM_TRACE_GEN_H_
#define HEATSINK_SIM_TRACE_GEN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/trace.h"

namespace heatsink::sim {

enum class TraceShape { kAgentic, kHotShift, kOneShotFlood };

// "agentic", "hot-shift", "one-shot-flood".
absl::string_view TraceShapeName(TraceShape shape);
std::optional<TraceShape> ParseTraceShape(absl::string_view word);
// Every shape, in the order above.
std::vector<TraceShape> AllTraceShapes();

// Tokens per block, as in the public traces.
inline constexpr int64_t kGenTokensPerBlock = 512;

// The generator's knobs. Each numeric field is a parameter in
// TraceGenParams() (its flag is the field name with '-' for '_'); the
// comment after each group says which shapes read it. Defaults give traces
// of 10 minutes and well under 2 MB of JSONL.
struct TraceGenSpec {
  TraceShape shape = TraceShape::kAgentic;
  uint64_t seed = 1;

  // --- Every shape ---------------------------------------------------------
  int64_t duration_s = 600;          // the trace's window: arrivals in [0, duration_s)
  double zipf_s = 1.0;               // zipf exponent of prompt popularity (0: uniform)
  int64_t output_length_mean = 256;  // output_length uniform in [1, 2 x mean - 1]
  // Limits: a trace that would pass one is an error.
  int64_t requests_max = 100'000;
  int64_t blocks_per_request_max = 1'024;
  int64_t hash_ids_max = 10'000'000;  // hash ids in the whole trace (sum over requests)

  // --- agentic -------------------------------------------------------------
  double session_rate_per_s = 0.5;  // Poisson session arrivals
  int64_t turns_mean = 8;           // turns per session uniform in [1, 2 x mean - 1]
  int64_t turn_gap_s = 30;          // mean of the exponential gap between turns
  int64_t tool_prompts = 8;         // distinct shared tool prompts, zipf-popular
  int64_t tool_prompt_blocks = 8;   // blocks of each tool prompt
  int64_t new_blocks_per_turn = 4;  // fresh blocks each turn adds to the history

  // --- hot-shift and one-shot-flood -----------------------------------------
  double rate_per_s = 8;      // Poisson request arrivals (mean, bursts included)
  int64_t unique_blocks = 4;  // fresh blocks after the shared prefix

  // --- hot-shift -----------------------------------------------------------
  int64_t hot_prefixes = 16;     // prefixes in each hot set, zipf-popular
  int64_t prefix_blocks = 8;     // blocks of each hot prefix
  int64_t shift_period_s = 120;  // a fresh hot set every period

  // --- one-shot-flood ------------------------------------------------------
  int64_t system_prompts = 3;        // shared system prompts, zipf-popular
  int64_t shared_prefix_blocks = 4;  // blocks of each system prompt
  int64_t burst_period_s = 0;        // 0: steady; else arrivals only in the first
  int64_t burst_on_s = 10;           //   burst_on_s of every burst_period_s
};

// One numeric parameter of TraceGenSpec, for flags and documentation.
struct TraceGenParam {
  absl::string_view name;  // flag spelling without "--", e.g. "session-rate-per-s"
  uint32_t shapes = 0;     // bit (1 << TraceShape) for each shape that reads it
  // Exactly one of the two is set.
  int64_t TraceGenSpec::*integer = nullptr;
  double TraceGenSpec::*decimal = nullptr;
  double min = 0;  // the value must be >= min (> min when min_exclusive)
  bool min_exclusive = false;
  double max = 0;  // and <= max
  absl::string_view help;

  bool BelongsTo(TraceShape shape) const {
    return (shapes & (uint32_t{1} << static_cast<int>(shape))) != 0;
  }
  bool common() const { return shapes == 0b111; }
};

// Every parameter: the ones of every shape first, then by shape, each group
// in TraceGenSpec's order.
const std::vector<TraceGenParam>& TraceGenParams();
// nullptr when `name` is no parameter.
const TraceGenParam* FindTraceGenParam(absl::string_view name);
// The parameter's value in `spec`, formatted as a flag value ("0.5", "600").
std::string TraceGenParamValue(const TraceGenParam& param, const TraceGenSpec& spec);

// Parses `value` (a decimal number; an integer for integer parameters) and
// stores it after its range check. INVALID_ARGUMENT naming the flag for an
// unknown name, a malformed number or a value out of range. It does not check
// the spec's shape: the command line rejects a parameter of another shape.
[[nodiscard]] absl::Status SetTraceGenParam(TraceGenSpec* spec, absl::string_view name,
                                            absl::string_view value);

// Every parameter's range, and the rules that tie two together
// (burst_on_s <= burst_period_s when bursts are on). INVALID_ARGUMENT naming
// the flag.
[[nodiscard]] absl::Status ValidateTraceGenSpec(const TraceGenSpec& spec);

// The trace, sorted (see the file comment); `line` is each request's 1-based
// line in the JSONL text AppendTraceJsonl writes.
[[nodiscard]] absl::StatusOr<std::vector<TraceRequest>> GenerateTrace(const TraceGenSpec& spec);

// Counts for a one-line summary.
struct TraceStats {
  int64_t requests = 0;
  int64_t distinct_blocks = 0;  // distinct hash ids
  int64_t hash_ids = 0;         // sum of the requests' hash id counts
  int64_t first_ms = 0;         // first and last timestamp (0 for an empty trace)
  int64_t last_ms = 0;
};
TraceStats ComputeTraceStats(const std::vector<TraceRequest>& requests);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_TRACE_GEN_H_
