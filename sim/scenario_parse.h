// File: sim/scenario_parse.h
//
// Internal to the scenario loader: the pieces scenario.cc (top level,
// topology, knobs, faults, checks) and scenario_workloads.cc (workloads and
// scripted operations) share. Not for use outside those two files.
#ifndef HEATSINK_SIM_SCENARIO_PARSE_H_
#define HEATSINK_SIM_SCENARIO_PARSE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/json_fields.h"
#include "sim/scenario.h"

namespace heatsink::sim::scenario_internal {

struct ParseContext {
  absl::string_view source;
  std::string base_dir;
  const ScenarioLoadOptions* options = nullptr;
  // Filled in order: top-level scalars and the topology come first, so
  // workloads and faults can resolve references against them.
  Scenario* scenario = nullptr;
};

// "<file>:<line>:<column>: <path>" for KnobSetting::where and ScriptOp::where.
std::string Where(const JsonField& f);

// Checks a knob name and value against the caller's KnobSpec list and
// returns the value as text for KnobRegistry::Set. An unknown name is
// reported at `name_pos` / `name_path` (the key or the "name" field).
[[nodiscard]] absl::StatusOr<std::string> KnobValueText(const ParseContext& ctx,
                                                        absl::string_view name, JsonPos name_pos,
                                                        absl::string_view name_path,
                                                        const JsonField& value);

// A domain name that must exist in the topology.
[[nodiscard]] absl::StatusOr<std::string> ReadDomainRef(const ParseContext& ctx,
                                                        const JsonField& f);
// "<host>/<segment>", "<host>/<client>", "<host>" that must exist.
[[nodiscard]] absl::StatusOr<std::string> ReadSegmentRef(const ParseContext& ctx,
                                                         const JsonField& f);
[[nodiscard]] absl::StatusOr<std::string> ReadClientRef(const ParseContext& ctx,
                                                        const JsonField& f);
[[nodiscard]] absl::StatusOr<std::string> ReadHostRef(const ParseContext& ctx,
                                                      const JsonField& f);
// An object key: 1..1024 bytes, no control characters.
[[nodiscard]] absl::StatusOr<std::string> ReadKey(const JsonField& f);

// A point in the run: a number of seconds (or ms) in [0, duration).
[[nodiscard]] absl::StatusOr<TimeNs> ReadRunTime(const ParseContext& ctx, const JsonField& f,
                                                 int64_t unit_ns);

// `$.workloads` (an array); the topology must already be in ctx.scenario.
// In scenario_workloads.cc.
[[nodiscard]] absl::Status ParseWorkloads(ParseContext& ctx, const JsonField& f);

// The `ops` of a scripted workload `w` (its start and tenant are read).
// In scenario_script.cc.
[[nodiscard]] absl::Status ParseScript(const ParseContext& ctx, ObjectReader& r,
                                       const Workload& w, ScriptedWorkload* out);

// `$.faults` (an object); needs the topology. In scenario_faults.cc.
[[nodiscard]] absl::Status ParseFaults(const ParseContext& ctx, const JsonField& f,
                                       ScenarioFaults* out);

}  // namespace heatsink::sim::scenario_internal

#endif  // HEATSINK_SIM_SCENARIO_PARSE_H_
