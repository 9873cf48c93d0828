// Covers sim/calibration: the network parameters derived from measured
// medians (hand-computed), the file's round trip and its errors (JSON path,
// line, derived values that do not follow), ApplyCalibration on a scenario,
// and a whole simulated read costing what the calibration measured.
#include "sim/calibration.h"

#include <string>

#include "gtest/gtest.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace heatsink::sim {
namespace {

TEST(Calibration, DerivesLatencyOverheadAndBandwidth) {
  // Round trip 300 us; 4 KiB read 420 us; 16 MiB + 4 KiB read 4.42 ms:
  // 16 MiB more in 4 ms = 4194304000 B/s; 4 KiB at that rate takes 976 ns.
  const absl::StatusOr<Calibration> c =
      DeriveCalibration(10, 4096, (16 << 20) + 4096, 300'000, 420'000, 4'420'000);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->control_latency_ns, 150'000);
  EXPECT_EQ(c->link_bytes_per_s, 4'194'304'000);
  EXPECT_EQ(c->transfer_overhead_ns, 420'000 - 300'000 - 976);
}

TEST(Calibration, RefusesMeasurementsWithoutABandwidth) {
  EXPECT_EQ(DeriveCalibration(10, 4096, 1 << 20, 300, 500, 500).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DeriveCalibration(10, 4096, 4096, 300, 500, 600).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DeriveCalibration(0, 4096, 1 << 20, 300, 500, 600).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A small read faster than the round trip gives no negative overhead.
  const absl::StatusOr<Calibration> c = DeriveCalibration(10, 4096, 1 << 20, 900, 500, 600);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->transfer_overhead_ns, 0);
}

TEST(Calibration, FileRoundTripsAndErrorsNameThePath) {
  const Calibration c = *DeriveCalibration(5, 4096, 1 << 20, 200'000, 300'000, 700'000);
  const std::string text = CalibrationJson(c);
  const absl::StatusOr<Calibration> back = ParseCalibration(text, "cal.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->link_bytes_per_s, c.link_bytes_per_s);
  EXPECT_EQ(back->transfer_overhead_ns, c.transfer_overhead_ns);

  std::string missing = text;
  missing.replace(missing.find("\"samples\""), 9, "\"sample\"");
  EXPECT_EQ(ParseCalibration(missing, "cal.json").status().message(),
            "cal.json: $.samples: missing");
  std::string edited = text;
  const std::string from = "\"link_bytes_per_s\": " + std::to_string(c.link_bytes_per_s);
  edited.replace(edited.find(from), from.size(), "\"link_bytes_per_s\": 1");
  const absl::Status st = ParseCalibration(edited, "cal.json").status();
  EXPECT_NE(st.message().find("$.link_bytes_per_s: 1 does not follow"), std::string::npos) << st;
  EXPECT_NE(ParseCalibration("{\n\"samples\": }", "cal.json")
                .status()
                .message()
                .find("cal.json:2: not JSON"),
            std::string::npos);
  EXPECT_EQ(ReadCalibrationFile("/nonexistent/cal.json").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(Calibration, ASimulatedReadCostsWhatWasMeasured) {
  // One 1 MiB object on h1 read once from h0's client, nothing else moving.
  absl::StatusOr<Scenario> s = ParseScenario(
      R"({"name": "one-read", "seed": 1, "duration_s": 2,
          "topology": {"domains": [{"name": "a", "hosts": [
            {"name": "h", "count": 2, "segments": [{"name": "m", "capacity_bytes": "64MiB"}],
             "clients": [{"name": "c"}]}]},
            {"name": "b", "hosts": [{"name": "x", "clients": [{"name": "c"}]}]}]},
          "knobs": {"dynamic_replication_mode": "off", "numa_model": false},
          "workloads": [{"type": "scripted", "name": "w", "ops": [
            {"op": "put", "client": "h-1/c", "key": "k", "size_bytes": "1MiB"},
            {"op": "advance_time", "by_ms": 500},
            {"op": "get", "client": "h-0/c", "key": "k"}]}]})",
      "one-read.json", "", SimulatorLoadOptions());
  ASSERT_TRUE(s.ok()) << s.status();
  const Calibration c =
      *DeriveCalibration(10, 4096, (16 << 20) + 4096, 300'000, 420'000, 4'420'000);
  ApplyCalibration(c, &*s);
  EXPECT_EQ(s->topology.network.control_same_domain_latency_ns, 150'000);
  EXPECT_EQ(s->topology.domains[0].hosts[0].nic_send_bytes_per_s, c.link_bytes_per_s);
  for (const ScenarioTrunk& t : s->topology.trunks) {
    EXPECT_EQ(t.latency_ns, 0);
    EXPECT_EQ(t.bandwidth_bytes_per_s, c.link_bytes_per_s);
  }
  RunOptions options;
  options.overrides.push_back(KnobOverride{"control_jitter_percent", "0"});
  const absl::StatusOr<RunResult> r = RunScenario(*s, options);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->read_latencies_ns.size(), 1u);
  // Two control messages, the overhead, 1 MiB at the link's rate (rounded
  // up to the ns).
  const int64_t transfer_ns =
      ((int64_t{1} << 20) * 1'000'000'000 + c.link_bytes_per_s - 1) / c.link_bytes_per_s;
  EXPECT_EQ(r->read_latencies_ns[0],
            2 * c.control_latency_ns + c.transfer_overhead_ns + transfer_ns);
}

}  // namespace
}  // namespace heatsink::sim
