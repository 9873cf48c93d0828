// Covers the metrics registry: counters by label, bounded label cardinality,
// histogram buckets and the Prometheus text rendering.
#include "core/metrics/metrics.h"

#include "gtest/gtest.h"

namespace heatsink {
namespace {

TEST(Metrics, CountersByLabel) {
  MetricsRegistry m;
  m.GetCounter("admissions_rejected_total", "rejections", {{"reason", "pending"}}).Add();
  m.GetCounter("admissions_rejected_total", "rejections", {{"reason", "pending"}}).Add(2);
  m.GetCounter("admissions_rejected_total", "rejections", {{"reason", "cooldown"}}).Add();
  EXPECT_EQ(m.Value("admissions_rejected_total", {{"reason", "pending"}}), 3);
  EXPECT_EQ(m.Value("admissions_rejected_total", {{"reason", "cooldown"}}), 1);
  EXPECT_EQ(m.Value("missing"), 0);
}

TEST(Metrics, CardinalityIsBounded) {
  MetricsRegistry m(/*series_per_family_max=*/2);
  m.GetCounter("c_total", "c", {{"domain", "a"}}).Add();
  m.GetCounter("c_total", "c", {{"domain", "b"}}).Add();
  m.GetCounter("c_total", "c", {{"domain", "c"}}).Add();
  m.GetCounter("c_total", "c", {{"domain", "d"}}).Add();
  EXPECT_EQ(m.Value("c_total", {{"domain", "_overflow"}}), 2);
  EXPECT_EQ(m.Snapshot()[0].samples.size(), 3u);
}

TEST(Metrics, PrometheusText) {
  MetricsRegistry m;
  m.GetCounter("copies_total", "copies", {{"scope", "cross_domain"}}).Add(4);
  m.GetGauge("dynamic_replicas", "replicas").Set(2);
  Histogram& h = m.GetHistogram("pause_seconds", "pause", {0.001, 0.01});
  h.Observe(0.0005);
  h.Observe(0.005);
  h.Observe(1);
  const std::string text = RenderPrometheusText(m.Snapshot());
  EXPECT_NE(text.find("# TYPE heatsink_copies_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("heatsink_copies_total{scope=\"cross_domain\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("heatsink_dynamic_replicas 2\n"), std::string::npos);
  EXPECT_NE(text.find("heatsink_pause_seconds_bucket{le=\"0.01\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("heatsink_pause_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("heatsink_pause_seconds_count 3\n"), std::string::npos);
}

}  // namespace
}  // namespace heatsink
