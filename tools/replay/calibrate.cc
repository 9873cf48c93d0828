#include "tools/replay/calibrate.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "runtime/env/steady_clock.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "tools/replay/cluster.h"
#include "tools/replay/replay_plan.h"

namespace heatsink::replay {
namespace {

constexpr int64_t kSegmentBytesMax = int64_t{256} << 20;

// Two hosts of one domain with a client each; no workload of its own.
std::string CalibrationScenarioJson(int64_t segment_bytes) {
  return absl::StrCat(R"({
  "name": "calibration",
  "seed": 1,
  "duration_s": 1,
  "topology": {"domains": [{"name": "loopback", "hosts": [
    {"name": "cal", "count": 2, "segments": [{"name": "mem", "capacity_bytes": )",
                      segment_bytes, R"(}], "clients": [{"name": "c"}]}]}]},
  "knobs": {"dynamic_replication_mode": "off"},
  "workloads": [{"type": "zipf", "name": "idle", "objects": 1, "object_size_bytes": 1,
                 "rate_per_s": 1, "readers_per_domain": 1}]
})");
}

int64_t Median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

}  // namespace

absl::StatusOr<sim::Calibration> RunCalibration(const CalibrateOptions& options) {
  if (options.samples < 1 || options.samples > 100'000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--samples must be in [1, 100000], got ", options.samples));
  }
  if (options.round_gap_ms < 0 || options.round_gap_ms > 10'000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--round-gap-ms must be in [0, 10000], got ", options.round_gap_ms));
  }
  if (options.warmup < 0 || options.warmup > 100'000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--warmup must be in [0, 100000], got ", options.warmup));
  }
  if (options.small_bytes < 1 || options.large_bytes <= options.small_bytes ||
      options.large_bytes > kSegmentBytesMax / 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("object sizes must satisfy 1 <= small < large <= ", kSegmentBytesMax / 2,
                     ", got ", options.small_bytes, " and ", options.large_bytes));
  }
  HS_ASSIGN_OR_RETURN(
      const sim::Scenario scenario,
      sim::ParseScenario(CalibrationScenarioJson(kSegmentBytesMax), "(calibration scenario)", ".",
                         sim::SimulatorLoadOptions()));
  ReplayLimits limits;
  HS_ASSIGN_OR_RETURN(limits.memory_available_bytes, ReadMemAvailableBytes("/proc/meminfo"));
  HS_ASSIGN_OR_RETURN(const ReplayPlan plan, MakeReplayPlan(scenario, limits));
  ReplayOptions replay;
  replay.out_dir = options.logs_dir;
  replay.binaries_dir = options.binaries_dir;
  replay.start_timeout_ms = options.start_timeout_ms;
  replay.stop = options.stop;
  Cluster cluster(plan, replay, scenario.seed);
  HS_RETURN_IF_ERROR(cluster.StartMaster());
  for (const ReplayStore& store : plan.stores) HS_RETURN_IF_ERROR(cluster.StartStore(store));
  runtime::SteadyClock clock;
  Clients clients(&clock, plan, cluster.master_address());
  const std::string tenant = scenario.workloads.front().tenant;
  HS_RETURN_IF_ERROR(clients.Warm({tenant}));
  HS_ASSIGN_OR_RETURN(runtime::HeatsinkClient * reader, clients.For("cal-0/c", tenant));
  HS_ASSIGN_OR_RETURN(runtime::HeatsinkClient * writer, clients.For("cal-1/c", tenant));
  const std::string small_key = "calibration-small";
  const std::string large_key = "calibration-large";
  HS_RETURN_IF_ERROR(writer->Put(small_key, *clients.Payload(options.small_bytes)));
  HS_RETURN_IF_ERROR(writer->Put(large_key, *clients.Payload(options.large_bytes)));

  // Reads land in one buffer whose pages are touched here, as the replay's
  // readers read into theirs: the figures are the cluster's, not the
  // reader's page faults.
  std::vector<uint8_t> buffer(
      static_cast<size_t>(std::max(options.small_bytes, options.large_bytes)), 0);
  std::vector<int64_t> lookups, smalls, larges;
  for (int64_t round = 0; round < options.warmup + options.samples; ++round) {
    if (options.round_gap_ms > 0 &&
        !SleepUntil(SteadyNs() + options.round_gap_ms * 1'000'000, replay)) {
      return absl::CancelledError("calibration stopped");
    }
    if (Stopped(replay)) return absl::CancelledError("calibration stopped");
    const int64_t t0 = SteadyNs();
    HS_RETURN_IF_ERROR(reader->Lookup(small_key).status());
    const int64_t t1 = SteadyNs();
    HS_ASSIGN_OR_RETURN(const runtime::GetResult small,
                        reader->GetInto(small_key, absl::MakeSpan(buffer)));
    const int64_t t2 = SteadyNs();
    HS_ASSIGN_OR_RETURN(const runtime::GetResult large,
                        reader->GetInto(large_key, absl::MakeSpan(buffer)));
    const int64_t t3 = SteadyNs();
    if (static_cast<int64_t>(small.size_bytes) != options.small_bytes ||
        static_cast<int64_t>(large.size_bytes) != options.large_bytes) {
      return absl::InternalError("calibration: a read returned the wrong number of bytes");
    }
    if (round < options.warmup) continue;
    lookups.push_back(t1 - t0);
    smalls.push_back(t2 - t1);
    larges.push_back(t3 - t2);
  }
  cluster.StopAll();
  return sim::DeriveCalibration(options.samples, options.small_bytes, options.large_bytes,
                                Median(lookups), Median(smalls), Median(larges));
}

}  // namespace heatsink::replay
