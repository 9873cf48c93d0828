// File: tools/replay/calibrate.h
//
// `heatsink-replay calibrate`: measures what a read costs on this machine's
// loopback cluster and derives the simulator's network parameters from it
// (sim/calibration.h), so `heatsink-sim validate --calibration FILE`
// compares read latencies with a simulated network that costs what the
// real one does.
//
// It starts one heatsink-master (dynamic replication off, so reads make no
// copies) and two heatsink-store processes ("cal-0" and "cal-1", one domain,
// one segment each), puts a small and a large object from cal-1's client,
// and from cal-0's client times, one at a time after `warmup` rounds,
// `samples` rounds of: a GetReplicaList (lookup only), a whole read of the
// small object and a whole read of the large one (remote reads: the objects
// live on cal-1). The medians go into DeriveCalibration. Every process is
// stopped on return, on error and when `stop` is set.
#ifndef HEATSINK_TOOLS_REPLAY_CALIBRATE_H_
#define HEATSINK_TOOLS_REPLAY_CALIBRATE_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "sim/calibration.h"

namespace heatsink::replay {

struct CalibrateOptions {
  std::string logs_dir;      // the processes' logs and address files
  std::string binaries_dir;  // heatsink-master and heatsink-store
  int64_t samples = 200;     // 1..100000
  int64_t warmup = 20;       // 0..100000
  int64_t small_bytes = 4 << 10;
  int64_t large_bytes = 16 << 20;  // > small_bytes, at most 256 MiB
  int64_t start_timeout_ms = 30'000;
  // Idle time before each round (0..10000 ms): the processes sleep between
  // reads as they do under a sparse load, so wake-up costs are measured too.
  int64_t round_gap_ms = 0;
  const std::atomic<bool>* stop = nullptr;
};

// INVALID_ARGUMENT for options out of range; UNAVAILABLE when a process does
// not start; CANCELLED when stopped; the first failed put or read otherwise.
[[nodiscard]] absl::StatusOr<sim::Calibration> RunCalibration(const CalibrateOptions& options);

}  // namespace heatsink::replay

#endif  // HEATSINK_TOOLS_REPLAY_CALIBRATE_H_
