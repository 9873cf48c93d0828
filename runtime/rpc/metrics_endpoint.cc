#include "runtime/rpc/metrics_endpoint.h"

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"
#include "prometheus/metric_family.h"

namespace heatsink::runtime {

class MetricsEndpoint::Collector final : public prometheus::Collectable {
 public:
  explicit Collector(MetricsEndpoint::CollectFn collect) : collect_(std::move(collect)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> out;
    for (const MetricFamily& family : collect_()) {
      prometheus::MetricFamily converted;
      converted.name = absl::StrCat("heatsink_", family.name);
      converted.help = family.help;
      switch (family.type) {
        case MetricType::kCounter:
          converted.type = prometheus::MetricType::Counter;
          break;
        case MetricType::kGauge:
          converted.type = prometheus::MetricType::Gauge;
          break;
        case MetricType::kHistogram:
          converted.type = prometheus::MetricType::Histogram;
          break;
      }
      for (const MetricSample& sample : family.samples) {
        prometheus::ClientMetric metric;
        for (const auto& [name, value] : sample.labels) metric.label.push_back({name, value});
        switch (family.type) {
          case MetricType::kCounter:
            metric.counter.value = static_cast<double>(sample.value);
            break;
          case MetricType::kGauge:
            metric.gauge.value = static_cast<double>(sample.value);
            break;
          case MetricType::kHistogram: {
            metric.histogram.sample_count = static_cast<uint64_t>(sample.count);
            metric.histogram.sample_sum = sample.sum;
            uint64_t cumulative = 0;
            for (size_t i = 0; i < sample.upper_bounds.size() && i < sample.bucket_counts.size();
                 ++i) {
              cumulative += static_cast<uint64_t>(sample.bucket_counts[i]);
              metric.histogram.bucket.push_back({cumulative, sample.upper_bounds[i]});
            }
            break;
          }
        }
        converted.metric.push_back(std::move(metric));
      }
      out.push_back(std::move(converted));
    }
    return out;
  }

 private:
  const MetricsEndpoint::CollectFn collect_;
};

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& listen_address, CollectFn collect) {
  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint());
  endpoint->collector_ = std::make_shared<Collector>(std::move(collect));
  try {
    endpoint->exposer_ = std::make_unique<prometheus::Exposer>(listen_address, 2);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on '", listen_address, "': ", e.what()));
  }
  endpoint->exposer_->RegisterCollectable(endpoint->collector_);
  const std::vector<int> ports = endpoint->exposer_->GetListeningPorts();
  if (ports.empty()) {
    return absl::UnavailableError(absl::StrCat("metrics endpoint '", listen_address,
                                               "' is not listening"));
  }
  endpoint->port_ = ports.front();
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() = default;

}  // namespace heatsink::runtime
