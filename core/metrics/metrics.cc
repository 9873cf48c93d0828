#include "core/metrics/metrics.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/check.h"

namespace heatsink {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)),
      buckets_(new std::atomic<int64_t>[bounds_.size() + 1]) {
  HS_CHECK(std::is_sorted(bounds_.begin(), bounds_.end()));
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::Observe(double v) {
  const size_t i = static_cast<size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  double cur = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}

std::vector<int64_t> Histogram::BucketCounts() const {
  std::vector<int64_t> out(bounds_.size() + 1);
  for (size_t i = 0; i < out.size(); ++i) out[i] = buckets_[i].load(std::memory_order_relaxed);
  return out;
}

double Histogram::sum() const { return sum_.load(std::memory_order_relaxed); }

MetricsRegistry::Series& MetricsRegistry::FindOrAdd(absl::string_view name, absl::string_view help,
                                                    MetricType type, MetricLabels labels,
                                                    const std::vector<double>* bounds) {
  auto fit = families_.find(name);
  if (fit == families_.end()) {
    fit = families_.emplace(std::string(name), Family{std::string(help), type, {}}).first;
  }
  Family& family = fit->second;
  HS_CHECK_MSG(family.type == type, absl::StrCat("metric ", name, " used with two types"));
  auto sit = family.series.find(labels);
  if (sit != family.series.end()) return sit->second;
  if (family.series.size() >= series_per_family_max_) {
    for (auto& [k, v] : labels) v = "_overflow";
    sit = family.series.find(labels);
    if (sit != family.series.end()) return sit->second;
  }
  Series s;
  switch (type) {
    case MetricType::kCounter: s.counter = std::make_unique<Counter>(); break;
    case MetricType::kGauge: s.gauge = std::make_unique<Gauge>(); break;
    case MetricType::kHistogram: s.histogram = std::make_unique<Histogram>(*bounds); break;
  }
  return family.series.emplace(std::move(labels), std::move(s)).first->second;
}

Counter& MetricsRegistry::GetCounter(absl::string_view name, absl::string_view help,
                                     MetricLabels labels) {
  absl::MutexLock lock(&mu_);
  return *FindOrAdd(name, help, MetricType::kCounter, std::move(labels), nullptr).counter;
}

Gauge& MetricsRegistry::GetGauge(absl::string_view name, absl::string_view help,
                                 MetricLabels labels) {
  absl::MutexLock lock(&mu_);
  return *FindOrAdd(name, help, MetricType::kGauge, std::move(labels), nullptr).gauge;
}

Histogram& MetricsRegistry::GetHistogram(absl::string_view name, absl::string_view help,
                                         const std::vector<double>& upper_bounds,
                                         MetricLabels labels) {
  absl::MutexLock lock(&mu_);
  return *FindOrAdd(name, help, MetricType::kHistogram, std::move(labels), &upper_bounds)
              .histogram;
}

std::vector<MetricFamily> MetricsRegistry::Snapshot() const {
  absl::MutexLock lock(&mu_);
  std::vector<MetricFamily> out;
  out.reserve(families_.size());
  for (const auto& [name, family] : families_) {
    MetricFamily f{name, family.help, family.type, {}};
    for (const auto& [labels, series] : family.series) {
      MetricSample s;
      s.labels = labels;
      switch (family.type) {
        case MetricType::kCounter: s.value = series.counter->value(); break;
        case MetricType::kGauge: s.value = series.gauge->value(); break;
        case MetricType::kHistogram:
          s.upper_bounds = series.histogram->upper_bounds();
          s.bucket_counts = series.histogram->BucketCounts();
          s.count = series.histogram->count();
          s.sum = series.histogram->sum();
          break;
      }
      f.samples.push_back(std::move(s));
    }
    out.push_back(std::move(f));
  }
  return out;
}

int64_t MetricsRegistry::Value(absl::string_view name, const MetricLabels& labels) const {
  absl::MutexLock lock(&mu_);
  auto fit = families_.find(name);
  if (fit == families_.end()) return 0;
  auto sit = fit->second.series.find(labels);
  if (sit == fit->second.series.end()) return 0;
  if (sit->second.counter) return sit->second.counter->value();
  if (sit->second.gauge) return sit->second.gauge->value();
  return sit->second.histogram->count();
}

namespace {

std::string EscapeLabelValue(absl::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string LabelText(const MetricLabels& labels, absl::string_view extra_name = {},
                      absl::string_view extra_value = {}) {
  if (labels.empty() && extra_name.empty()) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ",";
    first = false;
    absl::StrAppend(&out, k, "=\"", EscapeLabelValue(v), "\"");
  }
  if (!extra_name.empty()) {
    if (!first) out += ",";
    absl::StrAppend(&out, extra_name, "=\"", extra_value, "\"");
  }
  out += "}";
  return out;
}

}  // namespace

std::string RenderPrometheusText(const std::vector<MetricFamily>& families,
                                 absl::string_view prefix) {
  std::string out;
  for (const MetricFamily& f : families) {
    const std::string name = absl::StrCat(prefix, f.name);
    const char* type = f.type == MetricType::kCounter ? "counter"
                       : f.type == MetricType::kGauge ? "gauge"
                                                      : "histogram";
    absl::StrAppend(&out, "# HELP ", name, " ", f.help, "\n# TYPE ", name, " ", type, "\n");
    for (const MetricSample& s : f.samples) {
      if (f.type != MetricType::kHistogram) {
        absl::StrAppend(&out, name, LabelText(s.labels), " ", s.value, "\n");
        continue;
      }
      int64_t cumulative = 0;
      for (size_t i = 0; i < s.bucket_counts.size(); ++i) {
        cumulative += s.bucket_counts[i];
        const std::string le =
            i < s.upper_bounds.size() ? absl::StrFormat("%g", s.upper_bounds[i]) : "+Inf";
        absl::StrAppend(&out, name, "_bucket", LabelText(s.labels, "le", le), " ", cumulative,
                        "\n");
      }
      absl::StrAppend(&out, name, "_sum", LabelText(s.labels), " ", absl::StrFormat("%.17g", s.sum),
                      "\n", name, "_count", LabelText(s.labels), " ", s.count, "\n");
    }
  }
  return out;
}

void AppendScalar(std::vector<MetricFamily>& out, std::string name, std::string help,
                  MetricType type, int64_t value) {
  MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  MetricSample sample;
  sample.value = value;
  family.samples.push_back(std::move(sample));
  out.push_back(std::move(family));
}

}  // namespace heatsink
