// Shared helpers for the network tests: small hand-checkable topologies and a
// recorder of flow outcomes.
#ifndef HEATSINK_TESTS_SIM_NETWORK_FIXTURE_H_
#define HEATSINK_TESTS_SIM_NETWORK_FIXTURE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/env/rng.h"
#include "gtest/gtest.h"
#include "sim/engine.h"
#include "sim/network.h"

namespace heatsink::sim::testing {

inline constexpr int64_t kGBps = 1'000'000'000;

inline HostSpec Host(std::string name, int64_t nic_bytes_per_s, int nics = 1) {
  HostSpec h;
  h.name = std::move(name);
  for (int i = 0; i < nics; ++i) h.nics.push_back(NicSpec{nic_bytes_per_s, nic_bytes_per_s});
  return h;
}

// Domain A: a1..a4, domain B: b1..b2, every NIC at `nic` B/s each way; one
// A-B trunk of `trunk` B/s (before oversubscription) and `trunk_latency_ns`.
inline NetworkTopology TwoDomains(int64_t nic, int64_t trunk, DurationNs trunk_latency_ns = 0,
                                  int64_t oversubscription_percent = 100) {
  NetworkTopology t;
  t.domains.push_back(DomainSpec{"A", {Host("a1", nic), Host("a2", nic), Host("a3", nic),
                                       Host("a4", nic)}});
  t.domains.push_back(DomainSpec{"B", {Host("b1", nic), Host("b2", nic)}});
  t.trunks.push_back(TrunkSpec{"A", "B", trunk, trunk_latency_ns, oversubscription_percent});
  return t;
}

// Knobs that keep hand computations exact: no overhead, no jitter.
inline NetworkKnobs ExactKnobs() {
  NetworkKnobs k;
  k.transfer_overhead_ns = 0;
  k.control_jitter_percent = 0;
  return k;
}

struct Outcome {
  TimeNs t_ns = -1;
  absl::StatusCode code = absl::StatusCode::kUnknown;
};

// An engine, a network and a record of how each named flow ended.
class NetworkHarness {
 public:
  explicit NetworkHarness(NetworkTopology topology, NetworkKnobs knobs = ExactKnobs(),
                          uint64_t seed = 1)
      : rng_(seed) {
    auto network = Network::Create(&engine_, &rng_, std::move(topology), knobs);
    EXPECT_TRUE(network.ok()) << network.status();
    network_ = std::move(network).value();
  }

  Engine& engine() { return engine_; }
  Network& net() { return *network_; }

  int H(absl::string_view name) const {
    auto h = network_->FindHost(name);
    EXPECT_TRUE(h.has_value()) << name;
    return h.value_or(-1);
  }

  // Starts a flow named `label` and records its outcome; returns its id.
  FlowId Start(const std::string& label, absl::string_view src, absl::string_view dst,
               int64_t bytes, DurationNs source_delay_ns = 0,
               TrafficClass traffic_class = TrafficClass::kForeground) {
    FlowSpec spec;
    spec.traffic_class = traffic_class;
    spec.src_host = H(src);
    spec.dst_host = H(dst);
    spec.bytes = bytes;
    spec.source_delay_ns = source_delay_ns;
    auto id = network_->StartFlow(spec, [this, label](absl::Status s) {
      outcomes_[label] = Outcome{engine_.NowNs(), s.code()};
    });
    EXPECT_TRUE(id.ok()) << id.status();
    return id.value_or(0);
  }

  int64_t Rate(FlowId id) const {
    auto info = network_->GetFlow(id);
    EXPECT_TRUE(info.has_value());
    return info.has_value() ? info->rate_bytes_per_s : -1;
  }

  void RunUntil(TimeNs t) { ASSERT_TRUE(engine_.RunUntil(t).ok()); }
  void Run() { ASSERT_TRUE(engine_.Run().ok()); }

  const std::map<std::string, Outcome>& outcomes() const { return outcomes_; }
  Outcome outcome(const std::string& label) const {
    auto it = outcomes_.find(label);
    return it == outcomes_.end() ? Outcome{} : it->second;
  }

 private:
  Engine engine_;
  Rng rng_;
  std::unique_ptr<Network> network_;
  std::map<std::string, Outcome> outcomes_;
};

}  // namespace heatsink::sim::testing

#endif  // HEATSINK_TESTS_SIM_NETWORK_FIXTURE_H_
