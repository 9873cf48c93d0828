#include "sim/network_sampler.h"

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink::sim {

NetworkSampler::NetworkSampler(Engine* engine, const Network* network, DurationNs interval_ns,
                               int64_t samples_max)
    : engine_(engine), network_(network), interval_ns_(interval_ns), samples_max_(samples_max) {
  HS_CHECK(engine_ != nullptr && network_ != nullptr);
  HS_CHECK(interval_ns_ > 0 && samples_max_ > 0);
}

void NetworkSampler::Start() {
  if (next_ != kNoTimer || !status_.ok()) return;
  previous_ = network_->Counters();
  next_ = engine_->ScheduleAfter(interval_ns_, [this] { Sample(); });
}

void NetworkSampler::Stop() {
  if (next_ == kNoTimer) return;
  engine_->Cancel(next_);
  next_ = kNoTimer;
}

void NetworkSampler::Sample() {
  next_ = kNoTimer;
  const NetworkCounters now = network_->Counters();
  NetworkSample sample;
  sample.t_ns = engine_->NowNs();
  for (int d = 0; d < kDistanceCount; ++d) {
    sample.bytes_by_distance[d] = now.bytes_by_distance[d] - previous_.bytes_by_distance[d];
  }
  const size_t hosts = now.host_bytes_sent.size();
  sample.host_bytes_sent.resize(hosts);
  sample.host_bytes_received.resize(hosts);
  for (size_t h = 0; h < hosts; ++h) {
    sample.host_bytes_sent[h] = now.host_bytes_sent[h] - previous_.host_bytes_sent[h];
    sample.host_bytes_received[h] = now.host_bytes_received[h] - previous_.host_bytes_received[h];
  }
  sample.flows_alive = network_->flows_alive();
  samples_.push_back(std::move(sample));
  previous_ = now;
  if (static_cast<int64_t>(samples_.size()) >= samples_max_) {
    status_ = absl::ResourceExhaustedError(
        absl::StrCat("network samples_max (", samples_max_, ") reached"));
    return;
  }
  next_ = engine_->ScheduleAfter(interval_ns_, [this] { Sample(); });
}

}  // namespace heatsink::sim
