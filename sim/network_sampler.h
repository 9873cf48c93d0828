// File: sim/network_sampler.h
//
// Per-interval network accounting for reports: every `interval_ns` it records
// the bytes each host sent and received and the bytes moved per distance class
// during that interval (partial progress of moving flows included, whole
// bytes only), plus the flows alive at the sample time.
//
// Sampling is a periodic engine event, so a sampled engine never goes idle:
// drive it with RunUntil(duration), not Run(). At `samples_max` samples the
// sampler stops and status() turns RESOURCE_EXHAUSTED.
//
// Example:
//   NetworkSampler sampler(&engine, network.get(), SecToNs(1), 10'000);
//   sampler.Start();
//   HS_RETURN_IF_ERROR(engine.RunUntil(SecToNs(600)).status());
//   for (const NetworkSample& s : sampler.samples()) WriteCsvRow(s);
//
// Thread safety: none (engine thread only).
#ifndef HEATSINK_SIM_NETWORK_SAMPLER_H_
#define HEATSINK_SIM_NETWORK_SAMPLER_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "sim/engine.h"
#include "sim/network.h"

namespace heatsink::sim {

struct NetworkSample {
  TimeNs t_ns = 0;  // end of the interval
  std::array<uint64_t, kDistanceCount> bytes_by_distance{};
  std::vector<uint64_t> host_bytes_sent;      // by host index
  std::vector<uint64_t> host_bytes_received;  // by host index
  int64_t flows_alive = 0;
};

class NetworkSampler {
 public:
  // `engine` and `network` must outlive the sampler.
  // REQUIRES: interval_ns > 0, samples_max > 0.
  NetworkSampler(Engine* engine, const Network* network, DurationNs interval_ns,
                 int64_t samples_max);
  NetworkSampler(const NetworkSampler&) = delete;
  NetworkSampler& operator=(const NetworkSampler&) = delete;
  ~NetworkSampler() { Stop(); }

  // Takes the first sample one interval from now. No effect if running.
  void Start();
  // Cancels the next sample; samples taken so far stay.
  void Stop();

  const std::vector<NetworkSample>& samples() const { return samples_; }
  // OK, or RESOURCE_EXHAUSTED once samples_max was reached.
  const absl::Status& status() const { return status_; }

 private:
  void Sample();

  Engine* const engine_;
  const Network* const network_;
  const DurationNs interval_ns_;
  const int64_t samples_max_;
  EventId next_ = kNoTimer;
  NetworkCounters previous_;
  std::vector<NetworkSample> samples_;
  absl::Status status_;
};

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_NETWORK_SAMPLER_H_
