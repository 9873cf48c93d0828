// File: core/metrics/metrics.h
//
// Aggregated counters, gauges and histograms. Labels have bounded cardinality
// (domains, reasons, outcomes; never keys): each family holds at most
// `series_per_family_max` label sets and folds any further one into a single
// series whose label values are "_overflow".
//
// The simulator reads snapshots into summary.json; the runtime renders them in
// Prometheus text format (RenderPrometheusText). Snapshots are sorted by
// family name and label values, so output is deterministic.
//
// Thread safety: all methods are thread-safe. References returned by Get* stay
// valid for the registry's lifetime; updating them is lock-free.
#ifndef HEATSINK_CORE_METRICS_METRICS_H_
#define HEATSINK_CORE_METRICS_METRICS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace heatsink {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void Add(int64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

class Gauge {
 public:
  void Set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  void Add(int64_t d) { value_.fetch_add(d, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// Fixed upper bounds (ascending); an implicit +Inf bucket follows.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double v);
  const std::vector<double>& upper_bounds() const { return bounds_; }
  // Non-cumulative counts, one per bound plus +Inf.
  std::vector<int64_t> BucketCounts() const;
  int64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<int64_t>[]> buckets_;
  std::atomic<int64_t> count_{0};
  std::atomic<double> sum_{0};
};

enum class MetricType { kCounter, kGauge, kHistogram };

struct MetricSample {
  MetricLabels labels;
  int64_t value = 0;                  // counter or gauge
  std::vector<double> upper_bounds;   // histogram
  std::vector<int64_t> bucket_counts; // histogram, non-cumulative, +Inf last
  int64_t count = 0;                  // histogram
  double sum = 0;                     // histogram
};

struct MetricFamily {
  std::string name;
  std::string help;
  MetricType type = MetricType::kCounter;
  std::vector<MetricSample> samples;  // sorted by label values
};

class MetricsRegistry {
 public:
  explicit MetricsRegistry(size_t series_per_family_max = 256)
      : series_per_family_max_(series_per_family_max) {}
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Name conventions: `heatsink_` prefix is added by the renderer, not here;
  // counters end in `_total`; units last (`_bytes`, `_seconds`).
  // REQUIRES: one name is used with one type and one label-name set.
  Counter& GetCounter(absl::string_view name, absl::string_view help, MetricLabels labels = {});
  Gauge& GetGauge(absl::string_view name, absl::string_view help, MetricLabels labels = {});
  Histogram& GetHistogram(absl::string_view name, absl::string_view help,
                          const std::vector<double>& upper_bounds, MetricLabels labels = {});

  std::vector<MetricFamily> Snapshot() const;

  // Convenience for tests and summaries: the value of one counter or gauge
  // series, 0 when absent.
  int64_t Value(absl::string_view name, const MetricLabels& labels = {}) const;

 private:
  struct Series {
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
  };
  struct Family {
    std::string help;
    MetricType type;
    std::map<MetricLabels, Series> series;
  };
  Series& FindOrAdd(absl::string_view name, absl::string_view help, MetricType type,
                    MetricLabels labels, const std::vector<double>* bounds)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t series_per_family_max_;
  mutable absl::Mutex mu_;
  std::map<std::string, Family, std::less<>> families_ ABSL_GUARDED_BY(mu_);
};

// Appends a counter or gauge family with one unlabelled sample (for
// figures kept outside a registry).
void AppendScalar(std::vector<MetricFamily>& out, std::string name, std::string help,
                  MetricType type, int64_t value);

// Prometheus text exposition format 0.0.4, every family prefixed `prefix`.
std::string RenderPrometheusText(const std::vector<MetricFamily>& families,
                                 absl::string_view prefix = "heatsink_");

}  // namespace heatsink

#endif  // HEATSINK_CORE_METRICS_METRICS_H_
