// Driver knobs, the simulator's knob list, scenario loading for runs, knob
// overrides and scenario checks (sim/runner.h). The run itself is in
// runner.cc and sim/internal/ (the Simulation class).
#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/status_macros.h"
#include "core/master/master_knobs.h"
#include "core/replication/replication_knobs.h"
#include "core/tiering/tiering_knobs.h"
#include "nlohmann/json.hpp"
#include "sim/engine.h"
#include "sim/network_topology.h"
#include "sim/report.h"
#include "sim/runner.h"

namespace heatsink::sim {

absl::Status DriverKnobs::Validate() const {
  auto positive = [](absl::string_view name, int64_t v, int64_t max) -> absl::Status {
    if (v < 1 || v > max) {
      return absl::InvalidArgumentError(
          absl::StrCat("knob ", name, " must be in [1, ", max, "], got ", v));
    }
    return absl::OkStatus();
  };
  HS_RETURN_IF_ERROR(positive("control_rpc_timeout_ms", control_rpc_timeout_ms, 3'600'000));
  HS_RETURN_IF_ERROR(positive("read_retry_ms", read_retry_ms, 60'000));
  if (read_retries_max < 0 || read_retries_max > 1'000'000) {
    return absl::InvalidArgumentError(
        absl::StrCat("knob read_retries_max must be in [0, 1000000], got ", read_retries_max));
  }
  HS_RETURN_IF_ERROR(
      positive("worker_heartbeat_interval_ms", worker_heartbeat_interval_ms, 3'600'000));
  HS_RETURN_IF_ERROR(positive("worker_fetch_interval_ms", worker_fetch_interval_ms, 3'600'000));
  HS_RETURN_IF_ERROR(
      positive("worker_copies_in_flight_max", worker_copies_in_flight_max, 1'000'000));
  if (tiering_scan_ns_per_head < 0 || tiering_scan_ns_per_head > 1'000'000'000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "knob tiering_scan_ns_per_head must be in [0, 1e9], got ", tiering_scan_ns_per_head));
  }
  if (tiering_decay_ns_per_key < 0 || tiering_decay_ns_per_key > 1'000'000'000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "knob tiering_decay_ns_per_key must be in [0, 1e9], got ", tiering_decay_ns_per_key));
  }
  if (invariant_check_events < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("knob invariant_check_events must be >= 0, got ", invariant_check_events));
  }
  return absl::OkStatus();
}

const KnobRegistry<DriverKnobs>& DriverKnobs::Registry() {
  static const KnobRegistry<DriverKnobs>* const registry = [] {
    auto* r = new KnobRegistry<DriverKnobs>();
    r->Field("master_host", "host the master runs on (empty: the first host)",
             [](DriverKnobs& k) -> std::string& { return k.master_host; });
    r->Field("control_rpc_timeout_ms", "a master call whose message was lost fails after this",
             [](DriverKnobs& k) -> int64_t& { return k.control_rpc_timeout_ms; });
    r->Field("read_retry_ms", "retry delay of a read of an object still being written",
             [](DriverKnobs& k) -> int64_t& { return k.read_retry_ms; });
    r->Field("read_retries_max", "retries of such a read before it fails",
             [](DriverKnobs& k) -> int64_t& { return k.read_retries_max; });
    r->Field("worker_heartbeat_interval_ms", "store-worker heartbeat period",
             [](DriverKnobs& k) -> int64_t& { return k.worker_heartbeat_interval_ms; });
    r->Field("worker_fetch_interval_ms", "store-worker FetchTasks period",
             [](DriverKnobs& k) -> int64_t& { return k.worker_fetch_interval_ms; });
    r->Field("worker_copies_in_flight_max", "copies one store worker runs at once",
             [](DriverKnobs& k) -> int64_t& { return k.worker_copies_in_flight_max; });
    r->Field("numa_model", "run the tiering core inside every worker host",
             [](DriverKnobs& k) -> bool& { return k.numa_model; });
    r->Field("tiering_scan_ns_per_head", "modelled scan cost per head",
             [](DriverKnobs& k) -> int64_t& { return k.tiering_scan_ns_per_head; });
    r->Field("tiering_decay_ns_per_key", "modelled decay cost per indexed key",
             [](DriverKnobs& k) -> int64_t& { return k.tiering_decay_ns_per_key; });
    r->Field("replica_selection_seed", "seed of the readers' spread replica selection",
             [](DriverKnobs& k) -> int64_t& { return k.replica_selection_seed; });
    r->Field("invariant_check_events",
             "check the core's invariants every N events (0: at every sampling step only)",
             [](DriverKnobs& k) -> int64_t& { return k.invariant_check_events; });
    return r;
  }();
  return *registry;
}

std::vector<KnobSpec> SimulatorKnobSpecs() {
  std::vector<KnobSpec> specs;
  AddKnobSpecs(MasterKnobs::Registry(), &specs);
  AddKnobSpecs(ReplicationKnobs::Registry(), &specs);
  AddKnobSpecs(TieringKnobs::Registry(), &specs);
  AddKnobSpecs(NetworkKnobs::Registry(), &specs);
  AddKnobSpecs(EngineKnobs::Registry(), &specs);
  AddKnobSpecs(DriverKnobs::Registry(), &specs);
  return specs;
}

ScenarioLoadOptions SimulatorLoadOptions() {
  ScenarioLoadOptions options;
  options.knobs = SimulatorKnobSpecs();
  return options;
}

absl::StatusOr<Scenario> LoadScenarioForRun(const std::string& path) {
  return LoadScenarioFile(path, SimulatorLoadOptions());
}

absl::StatusOr<KnobOverride> ParseKnobOverride(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(absl::StrCat("--set expects name=value, got '", text, "'"));
  }
  return KnobOverride{text.substr(0, eq), text.substr(eq + 1)};
}

namespace {

// The value at a dotted path of a JSON document, if it is a number.
std::optional<double> NumberAt(const nlohmann::ordered_json& doc, const std::string& path) {
  const nlohmann::ordered_json* node = &doc;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = path.find('.', start);
    const std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object()) return std::nullopt;
    const auto it = node->find(part);
    if (it == node->end()) return std::nullopt;
    node = &*it;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (!node->is_number()) return std::nullopt;
  return node->get<double>();
}

bool Compare(double actual, const std::string& op, double expected) {
  if (op == "<") return actual < expected;
  if (op == "<=") return actual <= expected;
  if (op == ">") return actual > expected;
  if (op == ">=") return actual >= expected;
  return actual == expected;
}

}  // namespace

std::vector<CheckOutcome> EvaluateChecks(const Scenario& scenario, const RunResult& run) {
  std::vector<CheckOutcome> out;
  if (scenario.checks.empty()) return out;
  std::string mode;
  for (const auto& [name, value] : run.knobs) {
    if (name == "dynamic_replication_mode") mode = value;
  }
  const nlohmann::ordered_json summary = nlohmann::ordered_json::parse(
      RenderSummaryJson(run, ComputeRunStats(run)), nullptr, /*allow_exceptions=*/false);
  for (const ScenarioCheck& check : scenario.checks) {
    CheckOutcome o;
    o.name = check.name;
    o.metric = check.metric;
    o.op = check.op;
    o.expected = check.value;
    o.applies = !check.mode.has_value() || *check.mode == mode;
    if (o.applies) {
      o.actual = NumberAt(summary, check.metric);
      o.passed = o.actual.has_value() && Compare(*o.actual, check.op, check.value);
    }
    out.push_back(std::move(o));
  }
  return out;
}

std::string FormatCheckOutcomes(const std::vector<CheckOutcome>& outcomes) {
  std::string text;
  for (const CheckOutcome& o : outcomes) {
    if (!o.applies) {
      absl::StrAppend(&text, "check ", o.name, ": skipped (other mode)\n");
      continue;
    }
    absl::StrAppend(&text, "check ", o.name, ": ", o.metric, " = ",
                    o.actual.has_value() ? absl::StrFormat("%.6g", *o.actual)
                                         : std::string("(not in summary.json)"),
                    " ", o.op, " ", absl::StrFormat("%.6g", o.expected), ": ",
                    o.passed ? "ok" : "FAILED", "\n");
  }
  return text;
}

}  // namespace heatsink::sim
