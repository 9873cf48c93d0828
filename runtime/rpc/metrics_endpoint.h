// File: runtime/rpc/metrics_endpoint.h
//
// Serves `/metrics` in the Prometheus text format over HTTP (prometheus-cpp's
// pull exposer from Debian). The content is whatever `collect` returns at
// scrape time: core MetricFamily snapshots (aggregated, no per-key labels),
// each name given the `heatsink_` prefix. Counters keep their `_total`
// suffix; units are already last in the names.
//
// Example:
//   HS_ASSIGN_OR_RETURN(auto metrics, MetricsEndpoint::Start("127.0.0.1:0", [&] {
//     return master->SyncMetrics().Snapshot();
//   }));
//   std::cout << metrics->port();
//
// Thread safety: `collect` is called on the exposer's HTTP threads, possibly
// concurrently; it must be thread-safe and outlive the endpoint.
#ifndef HEATSINK_RUNTIME_RPC_METRICS_ENDPOINT_H_
#define HEATSINK_RUNTIME_RPC_METRICS_ENDPOINT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/metrics/metrics.h"

namespace prometheus {
class Exposer;
}

namespace heatsink::runtime {

class MetricsEndpoint {
 public:
  using CollectFn = std::function<std::vector<MetricFamily>()>;

  // Binds `listen_address` ("host:port", port 0 picks a free one).
  // UNAVAILABLE when it cannot be bound.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const std::string& listen_address, CollectFn collect);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  int port() const { return port_; }

  class Collector;

 private:
  MetricsEndpoint() = default;

  std::shared_ptr<Collector> collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

// Counter or gauge families with one unlabelled sample (core/metrics).
using ::heatsink::AppendScalar;

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_RPC_METRICS_ENDPOINT_H_
