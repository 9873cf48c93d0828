// File: sim/calibration.h
//
// A calibration of the simulator's network to one machine's loopback
// cluster (`heatsink-replay calibrate`, tools/replay/calibrate.h): what a
// read costs on the real processes, and the network parameters that make a
// simulated read cost the same.
//
// A simulated read of S bytes from another host, alone on the network,
// takes two control messages (the GetReplicaList request and answer) plus
// the flow: transfer_overhead + S / bandwidth. The calibration measures,
// after warm-up, the median of
//   - a GetReplicaList round trip (rpc_round_trip_ns),
//   - a whole read (lookup plus data) of a small and of a large object,
// and sets
//   control latency (every distance) = rpc_round_trip / 2,
//   link bandwidth                   = (large - small) bytes /
//                                      (large read - small read),
//   transfer_overhead                = small read - round trip
//                                      - small / bandwidth (at least 0).
// On loopback every host is the same machine: ApplyCalibration gives every
// NIC and every host's local copy the link bandwidth and every trunk the link
// bandwidth, no oversubscription and no latency. What it cannot model: the
// machine's cores are shared by every process, so reads slow down with the
// load on the CPU, not only with the bytes in flight.
//
// The file (JSON, format_version 1):
//   {"format_version": 1, "samples": N,
//    "small_bytes": S, "large_bytes": L,
//    "rpc_round_trip_p50_ns": .., "read_small_p50_ns": .., "read_large_p50_ns": ..,
//    "control_latency_ns": .., "transfer_overhead_ns": .., "link_bytes_per_s": ..}
#ifndef HEATSINK_SIM_CALIBRATION_H_
#define HEATSINK_SIM_CALIBRATION_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sim/scenario.h"

namespace heatsink::sim {

struct Calibration {
  int64_t samples = 0;
  int64_t small_bytes = 0;
  int64_t large_bytes = 0;
  int64_t rpc_round_trip_p50_ns = 0;
  int64_t read_small_p50_ns = 0;
  int64_t read_large_p50_ns = 0;
  // Derived (see the file comment).
  int64_t control_latency_ns = 0;
  int64_t transfer_overhead_ns = 0;
  int64_t link_bytes_per_s = 0;
};

// Derives the network parameters from the measured medians.
// INVALID_ARGUMENT when the measurements cannot give a bandwidth (the large
// read not slower than the small one, sizes not increasing, a non-positive
// median).
[[nodiscard]] absl::StatusOr<Calibration> DeriveCalibration(int64_t samples, int64_t small_bytes,
                                                            int64_t large_bytes,
                                                            int64_t rpc_round_trip_p50_ns,
                                                            int64_t read_small_p50_ns,
                                                            int64_t read_large_p50_ns);

std::string CalibrationJson(const Calibration& c);
// Parses a calibration file's text; errors name `source` and the JSON path
// (or the line of a syntax error). The derived values are recomputed from
// the measurements and must match the file's.
[[nodiscard]] absl::StatusOr<Calibration> ParseCalibration(const std::string& text,
                                                           const std::string& source);
[[nodiscard]] absl::StatusOr<Calibration> ReadCalibrationFile(const std::string& path);

// Sets the scenario's network to the calibration (see the file comment).
void ApplyCalibration(const Calibration& c, Scenario* scenario);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_CALIBRATION_H_
