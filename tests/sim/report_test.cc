// Covers the simulator reports: exact nearest-rank percentiles (empty, one
// value, hand-made sets), host load max/mean, local-hit fraction and
// admission counting; the fixed-format writers (numbers, CSV, JSON); the run
// output files (CSV headers and row counts, summary.json fields and values
// with no wall time, report.html with one <svg> per plot and no network
// references); byte-identical output for the same RunResult; the compare
// table, compare outputs and label checks; and errors for unwritable
// directories and inconsistent run results.
#include <unistd.h>

#include <filesystem>
#include <limits>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sim/report.h"
#include "sim/report_format.h"
#include "sim/report_html.h"
#include "sim/report_stats.h"
#include "sim/report_svg.h"

namespace heatsink::sim {
namespace {

namespace fs = std::filesystem;

// Tests that write files get a fresh directory, removed afterwards.
class ReportOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = (fs::path(::testing::TempDir()) /
            absl::StrCat("heatsink_report_", info->name(), "_", getpid()))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  std::string dir_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

// Three hosts in two domains, four 1 s intervals, hand-checkable totals.
RunResult MakeRun(const std::string& label = "enforce") {
  RunResult run;
  run.scenario_name = "hot-key fanout";
  run.scenario_path = "scenarios/hot_key.json";
  run.scenario_json = R"({"name": "hot-key fanout", "seed": 7, "knobs": {"x": 0.25}})";
  run.label = label;
  run.seed = 7;
  run.sub_seeds = {{"workload", 111}, {"network", 222}, {"faults", 333}};
  run.knobs = {{"dynamic_replication_mode", "enforce"},
               {"dynamic_replication_admission_qps_threshold", "0.5"},
               {"dynamic_replication_max_memory_replicas", "2"}};
  run.replay_command = "heatsink-sim run scenarios/hot_key.json --seed 7 --set mode=enforce";
  run.duration_ns = 4 * kNsPerSec;
  run.time_step_ns = kNsPerSec;
  run.hosts = {"h1", "h2", "h3"};
  run.host_domains = {"a", "a", "b"};
  run.domains = {"a", "b"};
  // 10 reads: 1..10 ms.
  for (int i = 10; i >= 1; --i) run.read_latencies_ns.push_back(i * kNsPerMs);
  run.reads = 10;
  run.bytes_read = {.same_host = 100, .same_domain = 200, .cross_domain = 300};
  run.host_bytes_served = {450, 100, 50};
  run.copies_completed = 3;
  run.copies_failed = 1;
  run.copy_bytes = 3000;
  run.copy_bytes_cross_domain = 1000;
  run.extra_memory_peak_bytes = 2048;
  run.extra_memory_final_bytes = 1024;
  run.decisions_by_outcome = {{"accepted", 3},
                              {"would_propose", 0},
                              {"rejected/cooldown", 5},
                              {"rejected/below_threshold", 7}};
  run.metrics = {{"heatsink_admissions_total{outcome=\"accepted\"}", 3},
                 {"heatsink_copies_total", 3}};
  run.numa_reads = 8;
  run.numa_local_reads = 6;
  run.numa_oracle_local_reads = 6;
  run.events_simulated = 12345;
  run.wall_time_ms = 42;
  for (int i = 0; i < 4; ++i) {
    IntervalSample s;
    s.t_start_ns = i * kNsPerSec;
    s.reads = 2 + (i % 2);
    s.background_bytes = static_cast<uint64_t>(1000 * i);
    s.bytes = {.same_host = 25, .same_domain = 50, .cross_domain = 75};
    s.host_bytes_served = {static_cast<uint64_t>(100 + 10 * i), 25, 25};
    s.replica_count = 1 + i;
    s.dynamic_replica_count = i;
    s.extra_memory_bytes = static_cast<uint64_t>(512 * i);
    s.copies_completed = i == 0 ? 0 : 1;
    s.copy_bytes = i == 0 ? 0 : 1000;
    s.numa_reads = i == 2 ? 0 : 2;
    s.numa_local_reads = i == 2 ? 0 : 1 + (i % 2);
    s.numa_oracle_local_reads = i == 2 ? 0 : 2;
    run.intervals.push_back(s);
  }
  for (int i = 0; i < 3; ++i) {
    run.requests.push_back(RequestSample{.id = i,
                                         .arrival_ns = i * kNsPerMs,
                                         .done_ns = i * kNsPerMs + 5 * kNsPerMs,
                                         .prefill_instance = "prefill,0",
                                         .decode_instance = "decode-1",
                                         .blocks_hit = 4,
                                         .blocks_missed = 1,
                                         .bytes_read = 4096,
                                         .cross_domain_bytes = 1024});
  }
  return run;
}

TEST(ReportPercentiles, EmptyInputIsAllZero) {
  const LatencyPercentiles p = ComputeLatencyPercentiles({});
  EXPECT_EQ(p.count, 0);
  EXPECT_EQ(p.p50_ns, 0);
  EXPECT_EQ(p.p999_ns, 0);
  EXPECT_EQ(p.max_ns, 0);
  EXPECT_EQ(NearestRankPercentile({}, kP99), 0);
}

TEST(ReportPercentiles, SingleValueIsEveryPercentile) {
  const LatencyPercentiles p = ComputeLatencyPercentiles({1234});
  EXPECT_EQ(p.count, 1);
  EXPECT_EQ(p.min_ns, 1234);
  EXPECT_EQ(p.p50_ns, 1234);
  EXPECT_EQ(p.p90_ns, 1234);
  EXPECT_EQ(p.p99_ns, 1234);
  EXPECT_EQ(p.p999_ns, 1234);
  EXPECT_EQ(p.mean_ns, 1234);
}

TEST(ReportPercentiles, NearestRankOnHandMadeSets) {
  // 1..100 shuffled: rank ceil(q * 100).
  std::vector<TimeNs> hundred;
  for (int i = 100; i >= 1; --i) hundred.push_back(i);
  const LatencyPercentiles p = ComputeLatencyPercentiles(hundred);
  EXPECT_EQ(p.p50_ns, 50);
  EXPECT_EQ(p.p90_ns, 90);
  EXPECT_EQ(p.p99_ns, 99);
  EXPECT_EQ(p.p999_ns, 100);  // ceil(99.9) = rank 100
  EXPECT_EQ(p.min_ns, 1);
  EXPECT_EQ(p.max_ns, 100);
  EXPECT_EQ(p.mean_ns, 50);   // 5050 / 100 = 50.5, floored

  std::vector<TimeNs> thousand;
  for (int i = 1; i <= 1000; ++i) thousand.push_back(i * 10);
  EXPECT_EQ(ComputeLatencyPercentiles(thousand).p999_ns, 9990);

  // Two samples: the median is the lower one (rank ceil(1.0) = 1).
  EXPECT_EQ(NearestRankPercentile({10, 20}, kP50), 10);
  EXPECT_EQ(NearestRankPercentile({10, 20}, kP90), 20);
  EXPECT_EQ(NearestRankPercentile({10, 20}, 1'000'000), 20);
  // Repeated values.
  EXPECT_EQ(NearestRankPercentile({5, 5, 5, 9}, kP50), 5);
  EXPECT_EQ(NearestRankPercentile({5, 5, 5, 9}, kP90), 9);
}

TEST(ReportHostLoad, MaxOverMeanAndBusiestHost) {
  const HostLoad load = ComputeHostLoad({100, 300, 0, 0});
  EXPECT_EQ(load.total_bytes, 400u);
  EXPECT_EQ(load.max_bytes, 300u);
  EXPECT_DOUBLE_EQ(load.mean_bytes, 100.0);
  EXPECT_DOUBLE_EQ(load.max_over_mean, 3.0);
  EXPECT_EQ(load.busiest_host, 1);

  const HostLoad even = ComputeHostLoad({7, 7, 7});
  EXPECT_DOUBLE_EQ(even.max_over_mean, 1.0);
  EXPECT_EQ(even.busiest_host, 0);  // tie: lowest index

  const HostLoad idle = ComputeHostLoad({0, 0});
  EXPECT_EQ(idle.busiest_host, -1);
  EXPECT_DOUBLE_EQ(idle.max_over_mean, 0.0);
  EXPECT_EQ(ComputeHostLoad({}).busiest_host, -1);
}

TEST(ReportStats, LocalHitFractionAndAdmissions) {
  EXPECT_FALSE(LocalHitFraction(0, 0).has_value());
  EXPECT_DOUBLE_EQ(*LocalHitFraction(4, 3), 0.75);

  const AdmissionCounts a = CountAdmissions(
      {{"accepted", 2}, {"would_propose", 4}, {"rejected/pending", 1}, {"rejected/cooldown", 3},
       {"odd", 9}});
  EXPECT_EQ(a.accepted, 2);
  EXPECT_EQ(a.would_propose, 4);
  EXPECT_EQ(a.rejected, 4);
  EXPECT_EQ(a.rejected_by_reason.at("cooldown"), 3);
  EXPECT_EQ(a.other.at("odd"), 9);
}

TEST(ReportStats, PerIntervalLoadAndPeak) {
  const RunResult run = MakeRun();
  const RunStats stats = ComputeRunStats(run);
  ASSERT_EQ(stats.intervals.size(), 4u);
  // Interval 3: {130, 25, 25} -> 130 * 3 / 180.
  EXPECT_DOUBLE_EQ(stats.intervals[3].host_load.max_over_mean, 130.0 * 3 / 180.0);
  EXPECT_EQ(stats.interval_max_over_mean_peak_index, 3);
  EXPECT_FALSE(stats.intervals[2].local_hit_fraction.has_value());
  EXPECT_DOUBLE_EQ(*stats.intervals[1].local_hit_fraction, 1.0);
  EXPECT_DOUBLE_EQ(stats.host_load.max_over_mean, 450.0 * 3 / 600.0);
}

TEST(ReportFormat, FixedFormats) {
  EXPECT_EQ(FormatFixed(1.23456, 3), "1.235");
  EXPECT_EQ(FormatFixed(-0.0001, 2), "0.00");
  EXPECT_EQ(FormatNsAsMs(1'999'999), "1.999");
  EXPECT_EQ(FormatNsAsMs(-2'500'000), "-2.500");
  EXPECT_EQ(FormatNsAsSeconds(1'500'000'000, 3), "1.500");
  EXPECT_EQ(FormatBytesIec(512), "512 B");
  EXPECT_EQ(FormatBytesIec(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytesIec(uint64_t{3} << 30), "3.00 GiB");
  EXPECT_EQ(SecondsDecimalsFor({0, kNsPerSec, 250 * kNsPerMs}), 3);
  EXPECT_EQ(SecondsDecimalsFor({0, 1500}), 9);
  EXPECT_EQ(CsvEscape("plain"), "plain");
  EXPECT_EQ(CsvEscape("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvEscape("say \"hi\""), "\"say \"\"hi\"\"\"");
}

TEST(ReportFormat, JsonWriterKeepsOrderAndFixedDoubles) {
  JsonWriter w;
  w.BeginObject()
      .Key("z").Int(-3)
      .Key("a").Double(0.5, 3)
      .Key("list").BeginArray().Uint(1).String("x\"y").Null().EndArray()
      .Key("empty").BeginObject().EndObject()
      .Key("nan").Double(std::numeric_limits<double>::quiet_NaN())
      .EndObject();
  EXPECT_EQ(w.Finish(),
            "{\n  \"z\": -3,\n  \"a\": 0.500,\n  \"list\": [\n    1,\n    \"x\\\"y\",\n"
            "    null\n  ],\n  \"empty\": {},\n  \"nan\": null\n}\n");
}

TEST(ReportFormat, TextTableAlignsColumns) {
  TextTable t({"metric", "off", "enforce"});
  t.AddRow({"copies", "0", "12"});
  t.AddRow({"latency p99 (ms)", "10.500", "2.000"});
  EXPECT_EQ(t.Render(),
            "metric" + std::string(15, ' ') + "off  enforce\n" + std::string(33, '-') + "\n" +
                "copies" + std::string(17, ' ') + "0       12\n" +
                "latency p99 (ms)  10.500    2.000\n");
}

TEST(ReportCsv, TimeseriesHeaderAndRows) {
  const RunResult run = MakeRun();
  const RunStats stats = ComputeRunStats(run);
  const std::vector<std::string> lines = Lines(RenderTimeseriesCsv(run, stats));
  ASSERT_EQ(lines.size(), 5u);  // header + 4 intervals
  EXPECT_EQ(lines[0],
            "t_s,reads,bytes_same_host,bytes_same_domain,bytes_cross_domain,host_load_max_bytes,"
            "host_load_mean_bytes,host_load_max_over_mean,replica_count,dynamic_replica_count,"
            "extra_memory_bytes,copies,copy_bytes,numa_reads,numa_local_reads,local_hit_fraction,"
            "numa_oracle_local_reads,local_hit_oracle,background_bytes,latency_p50_ms,"
            "latency_p99_ms,latency_p999_ms,latency_max_ms");
  // Interval 0 completed the first two reads (10 and 9 ms).
  EXPECT_EQ(lines[1],
            "0.000,2,25,50,75,100,50.000,2.000000,1,0,0,0,0,2,1,0.500000,2,1.000000,0,"
            "9.000000,10.000000,10.000000,10.000000");
  // No NUMA reads in interval 2: both fractions are empty, not zero (and
  // never a division by zero). Its reads are the 6th and 7th (5 and 4 ms).
  EXPECT_TRUE(absl::EndsWith(lines[3], ",0,0,,0,,2000,4.000000,5.000000,5.000000,5.000000"))
      << lines[3];
  // Latencies that do not add up to the intervals' reads give empty cells.
  RunResult short_run = run;
  short_run.read_latencies_ns.pop_back();
  const std::vector<std::string> short_lines =
      Lines(RenderTimeseriesCsv(short_run, ComputeRunStats(short_run)));
  EXPECT_TRUE(absl::EndsWith(short_lines[1], ",0,,,,")) << short_lines[1];

  const std::vector<std::string> host = Lines(RenderHostLoadCsv(run));
  ASSERT_EQ(host.size(), 5u);
  EXPECT_EQ(host[0], "t_s,h1,h2,h3");
  EXPECT_EQ(host[4], "3.000,130,25,25");

  const std::vector<std::string> requests = Lines(RenderRequestsCsv(run));
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0],
            "id,arrival_ns,done_ns,latency_ns,prefill_instance,decode_instance,blocks_hit,"
            "blocks_missed,bytes_read,cross_domain_bytes");
  EXPECT_EQ(requests[2], "1,1000000,6000000,5000000,\"prefill,0\",decode-1,4,1,4096,1024");
}

bool ContainsKey(const nlohmann::json& j, absl::string_view needle) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      if (absl::StrContains(key, needle) || ContainsKey(value, needle)) return true;
    }
  } else if (j.is_array()) {
    for (const auto& value : j) {
      if (ContainsKey(value, needle)) return true;
    }
  }
  return false;
}

TEST(ReportSummary, ParsesWithDocumentedFieldsAndNoWallTime) {
  const RunResult run = MakeRun();
  const std::string text = RenderSummaryJson(run, ComputeRunStats(run));
  const nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["format_version"], 1);
  EXPECT_EQ(j["scenario"]["name"], "hot-key fanout");
  EXPECT_EQ(j["scenario"]["label"], "enforce");
  EXPECT_EQ(j["seed"], 7);
  EXPECT_EQ(j["sub_seeds"]["network"], 222);
  EXPECT_EQ(j["replay_command"], run.replay_command);
  EXPECT_EQ(j["knobs"]["dynamic_replication_mode"], "enforce");
  EXPECT_DOUBLE_EQ(j["knobs"]["dynamic_replication_admission_qps_threshold"].get<double>(), 0.5);
  EXPECT_EQ(j["knobs"]["dynamic_replication_max_memory_replicas"], 2);
  EXPECT_EQ(j["topology"]["hosts"][2]["domain"], "b");
  EXPECT_EQ(j["reads"]["count"], 10);
  EXPECT_EQ(j["reads"]["latency_ns"]["p50"], 5 * kNsPerMs);
  EXPECT_EQ(j["reads"]["latency_ns"]["p90"], 9 * kNsPerMs);
  EXPECT_EQ(j["reads"]["latency_ns"]["p99"], 10 * kNsPerMs);
  EXPECT_EQ(j["reads"]["latency_ns"]["p999"], 10 * kNsPerMs);
  EXPECT_EQ(j["bytes_read"]["same_host"], 100);
  EXPECT_EQ(j["bytes_read"]["same_domain"], 200);
  EXPECT_EQ(j["bytes_read"]["cross_domain"], 300);
  EXPECT_EQ(j["bytes_read"]["total"], 600);
  EXPECT_EQ(j["host_load"]["busiest_host"], "h1");
  EXPECT_EQ(j["host_load"]["max_bytes"], 450);
  EXPECT_DOUBLE_EQ(j["host_load"]["max_over_mean"].get<double>(), 2.25);
  EXPECT_EQ(j["host_load"]["hosts"].size(), 3u);
  EXPECT_EQ(j["host_load"]["hosts"][1]["bytes_served"], 100);
  EXPECT_EQ(j["host_load"]["interval_max_over_mean_peak_t_ns"], 3 * kNsPerSec);
  EXPECT_EQ(j["copies"]["completed"], 3);
  EXPECT_EQ(j["copies"]["failed"], 1);
  EXPECT_EQ(j["copies"]["bytes"], 3000);
  EXPECT_EQ(j["copies"]["cross_domain_bytes"], 1000);
  EXPECT_EQ(j["extra_memory_bytes"]["peak"], 2048);
  EXPECT_EQ(j["extra_memory_bytes"]["final"], 1024);
  EXPECT_EQ(j["admissions"]["accepted"], 3);
  EXPECT_EQ(j["admissions"]["rejected"], 12);
  EXPECT_EQ(j["admissions"]["rejected_by_reason"]["below_threshold"], 7);
  EXPECT_DOUBLE_EQ(j["local_hit_fraction"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(j["local_hit_oracle"].get<double>(), 0.75);
  EXPECT_EQ(j["numa_oracle_local_reads"], 6);
  EXPECT_EQ(j["metrics"]["heatsink_copies_total"], 3);
  EXPECT_EQ(j["events_simulated"], 12345);
  EXPECT_DOUBLE_EQ(j["scenario_echo"]["knobs"]["x"].get<double>(), 0.25);
  // Wall time is not deterministic and must stay out of summary.json.
  EXPECT_FALSE(ContainsKey(j, "wall"));
  EXPECT_FALSE(absl::StrContains(text, "wall"));
  // Key order is the documented one (ordered_json keeps file order).
  const nlohmann::ordered_json o = nlohmann::ordered_json::parse(text);
  EXPECT_EQ(o.begin().key(), "format_version");
}

TEST(ReportSummary, LocalHitFractionIsNullWithoutNumaReads) {
  RunResult run = MakeRun();
  run.numa_reads = 0;
  run.numa_local_reads = 0;
  const nlohmann::json j = nlohmann::json::parse(RenderSummaryJson(run, ComputeRunStats(run)));
  EXPECT_TRUE(j["local_hit_fraction"].is_null());
  EXPECT_TRUE(j["local_hit_oracle"].is_null());
}

TEST(ReportCsv, NumaCsvRowsPerHostAndInterval) {
  RunResult run = MakeRun();
  EXPECT_EQ(RenderNumaCsv(run), "");  // no NUMA hosts: no file
  NumaHostSample busy;
  busy.host = 1;
  busy.stats = NumaIntervalStats{.head_reads = 4,
                                 .local_reads = 1,
                                 .oracle_local_reads = 3,
                                 .head_oracle_local_reads = 4,
                                 .exchanges = 2,
                                 .promotion_rounds = 3,
                                 .head_trades = 1,
                                 .eligible_local_blocks = 8,
                                 .eligible_foreign_blocks = 5,
                                 .coldest_local_score = 1.5,
                                 .hottest_foreign_score = std::nullopt};
  run.numa_samples.push_back(busy);
  NumaHostSample quiet;
  quiet.t_start_ns = SecToNs(1);
  quiet.host = 0;
  run.numa_samples.push_back(quiet);
  const std::vector<std::string> lines = Lines(RenderNumaCsv(run));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "t_s,host,head_reads,local_reads,local_hit_fraction,oracle_local_reads,"
            "local_hit_oracle,head_oracle_local_reads,head_oracle,exchanges,promotion_rounds,"
            "head_trades,eligible_local_blocks,eligible_foreign_blocks,coldest_local_score,"
            "hottest_foreign_score");
  EXPECT_EQ(lines[1], "0.000,h2,4,1,0.250000,3,0.750000,4,1.000000,2,3,1,8,5,1.500,");
  // No head reads: empty fractions, never a division by zero.
  EXPECT_EQ(lines[2], "1.000,h1,0,0,,0,,0,,0,0,0,0,0,,");
}

TEST(ReportSummary, ScenarioEchoAndKnobTyping) {
  RunResult run = MakeRun();
  run.knobs = {{"a", "1e3"}, {"b", "true"}, {"c", " 1"}, {"d", "01"}, {"e", ""}};
  run.scenario_json = "not json";
  nlohmann::json j = nlohmann::json::parse(RenderSummaryJson(run, ComputeRunStats(run)));
  EXPECT_TRUE(j["knobs"]["a"].is_number());
  EXPECT_EQ(j["knobs"]["b"], true);
  EXPECT_EQ(j["knobs"]["c"], " 1");  // blanks: kept as text
  EXPECT_EQ(j["knobs"]["d"], "01");  // not a JSON number
  EXPECT_EQ(j["knobs"]["e"], "");
  EXPECT_EQ(j["scenario_echo"], "not json");
  run.scenario_json.clear();
  j = nlohmann::json::parse(RenderSummaryJson(run, ComputeRunStats(run)));
  EXPECT_TRUE(j["scenario_echo"].is_null());
}

TEST(ReportHtml, OneSvgPerPlotAndNoNetworkReferences) {
  const RunResult run = MakeRun();
  const std::string html = RenderRunReportHtml(run, ComputeRunStats(run));
  EXPECT_EQ(Count(html, "<svg"), 6u);
  EXPECT_EQ(Count(html, "</svg>"), 6u);
  EXPECT_TRUE(absl::StrContains(html, "Read latency per interval, copy traffic behind it"));
  // Intervals 1..3 moved copy bytes: three grey bars.
  EXPECT_EQ(Count(html, "fill=\"#d9d9d9\""), 3u);
  EXPECT_FALSE(absl::StrContains(html, "http://"));
  EXPECT_FALSE(absl::StrContains(html, "https://"));
  EXPECT_FALSE(absl::StrContains(html, "<script"));
  EXPECT_FALSE(absl::StrContains(html, "<link"));
  EXPECT_TRUE(absl::StrContains(html, "hot-key fanout"));
  EXPECT_TRUE(absl::StrContains(html, "seed 7"));
  EXPECT_TRUE(absl::StrContains(html, "--set mode=enforce"));
  EXPECT_TRUE(absl::StrContains(html, "Per-host read load over time"));
  EXPECT_TRUE(absl::StrContains(html, "Read latency CDF"));
}

TEST(ReportSvg, LineChartBreaksAtGapsAndLabelsLogTicks) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::string svg = RenderLineChartSvg(
      {.title = "t", .x_label = "x", .y_label = "y"},
      {{.name = "s", .x = {0, 1, 2, 3, 4}, .y = {1, 2, nan, 3, 4}}});
  EXPECT_EQ(Count(svg, "<polyline"), 2u);
  EXPECT_TRUE(absl::StrContains(svg, ">s</text>"));  // legend

  const std::string log_svg = RenderLineChartSvg(
      {.title = "cdf", .x_label = "ms", .y_label = "f", .log_x = true, .y_max = 1.0},
      {LatencyCdfSeries("reads", {100'000, 2'000'000, 30'000'000})});
  EXPECT_TRUE(absl::StrContains(log_svg, ">0.1</text>"));
  EXPECT_TRUE(absl::StrContains(log_svg, ">100</text>"));

  const std::string empty = RenderLineChartSvg({.title = "e", .x_label = "", .y_label = ""}, {});
  EXPECT_TRUE(absl::StrContains(empty, "no data"));
}

TEST(ReportSvg, CdfSeriesEndsAtMaximum) {
  std::vector<TimeNs> sorted;
  for (int i = 1; i <= 100'000; ++i) sorted.push_back(i * 1000);
  const PlotSeries cdf = LatencyCdfSeries("r", sorted);
  ASSERT_FALSE(cdf.x.empty());
  EXPECT_LT(cdf.x.size(), 300u);
  EXPECT_DOUBLE_EQ(cdf.y.back(), 1.0);
  EXPECT_DOUBLE_EQ(cdf.x.back(), 100.0);  // 100'000 us
  EXPECT_DOUBLE_EQ(cdf.x.front(), 0.001);
  for (size_t i = 1; i < cdf.x.size(); ++i) {
    EXPECT_GE(cdf.x[i], cdf.x[i - 1]);
    EXPECT_GT(cdf.y[i], cdf.y[i - 1]);
  }
}

TEST(ReportSvg, HeatmapMergesColumnsBeyondTheLimit) {
  std::vector<double> starts;
  std::vector<std::vector<double>> values(2);
  for (int c = 0; c < 500; ++c) {
    starts.push_back(c);
    values[0].push_back(c);
    values[1].push_back(0);
  }
  HeatmapOptions options{.title = "h", .x_label = "s", .y_label = "host", .value_label = "MB/s",
                         .columns_max = 100};
  const std::string svg = RenderHeatmapSvg(options, {"a", "b"}, starts, 1.0, values);
  // 2 rows x 100 bins + 32 colour-bar steps.
  EXPECT_EQ(Count(svg, "<rect"), 2u * 100 + 32 + 1 /*frame*/);
  EXPECT_EQ(Count(svg, "<svg"), 1u);
}

TEST_F(ReportOutputTest, WritesEveryFileAndIsDeterministic) {
  const std::string& dir = dir_;
  RunResult run = MakeRun();
  ASSERT_TRUE(WriteRunOutputs(run, dir + "/first/nested").ok());
  // A different wall time must not change any deterministic file.
  run.wall_time_ms = 99999;
  ASSERT_TRUE(WriteRunOutputs(run, dir + "/second").ok());
  for (const char* name :
       {"summary.json", "timeseries.csv", "host_load.csv", "requests.csv", "report.html"}) {
    const std::string a = ReadFile(dir + "/first/nested/" + name);
    const std::string b = ReadFile(dir + "/second/" + name);
    EXPECT_FALSE(a.empty()) << name;
    EXPECT_EQ(a, b) << name;
  }
  const nlohmann::json timing = nlohmann::json::parse(ReadFile(dir + "/second/timing.json"));
  EXPECT_EQ(timing["wall_time_ms"], 99999);
  EXPECT_EQ(timing["events_simulated"], 12345);
  EXPECT_NEAR(timing["events_per_second"].get<double>(), 12345 * 1000.0 / 99999, 0.1);
}

TEST_F(ReportOutputTest, GivenStatsWriteTheSameFilesAndSummary) {
  // The CLI computes the stats once and hands them to both writers; the
  // files and the stdout summary are those of the forms that compute them.
  const RunResult run = MakeRun();
  const RunStats stats = ComputeRunStats(run);
  ASSERT_TRUE(WriteRunOutputs(run, dir_ + "/computed").ok());
  ASSERT_TRUE(WriteRunOutputs(run, stats, dir_ + "/given").ok());
  for (const char* name : {"summary.json", "timeseries.csv", "host_load.csv", "requests.csv",
                           "report.html", "timing.json"}) {
    const std::string a = ReadFile(dir_ + "/computed/" + name);
    EXPECT_FALSE(a.empty()) << name;
    EXPECT_EQ(a, ReadFile(dir_ + "/given/" + name)) << name;
  }
  EXPECT_EQ(FormatRunSummary(run, stats), FormatRunSummary(run));
  // A run that breaks its own invariants is refused before anything is written.
  RunResult broken = run;
  broken.host_domains.pop_back();
  EXPECT_FALSE(WriteRunOutputs(broken, stats, dir_ + "/broken").ok());
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/broken"));
}

TEST_F(ReportOutputTest, UnwritableDirectoryIsAnErrorNamingThePath) {
  const std::string& dir = dir_;
  const std::string file = dir + "/not_a_dir";
  ASSERT_TRUE(WriteTextFile(file, "x").ok());
  const absl::Status under_file = WriteRunOutputs(MakeRun(), file + "/out");
  EXPECT_FALSE(under_file.ok());
  EXPECT_TRUE(absl::StrContains(under_file.message(), file + "/out")) << under_file;
  const absl::Status is_file = WriteRunOutputs(MakeRun(), file);
  EXPECT_EQ(is_file.code(), absl::StatusCode::kFailedPrecondition) << is_file;
  EXPECT_TRUE(absl::StrContains(is_file.message(), file)) << is_file;
}

TEST_F(ReportOutputTest, InconsistentRunResultIsRejected) {
  RunResult run = MakeRun();
  run.intervals[1].host_bytes_served.pop_back();
  const absl::Status status = WriteRunOutputs(run, dir_ + "/out");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(status.message(), "interval 1")) << status;
}

TEST(ReportSummaryText, DozenLinesWithKeyNumbers) {
  const std::string text = FormatRunSummary(MakeRun());
  const std::vector<std::string> lines = Lines(text);
  EXPECT_GE(lines.size(), 10u);
  EXPECT_LE(lines.size(), 14u);
  EXPECT_TRUE(absl::StrContains(text, "seed 7"));
  EXPECT_TRUE(absl::StrContains(text, "p99 10.000"));
  EXPECT_TRUE(absl::StrContains(text, "busiest h1"));
  EXPECT_TRUE(absl::StrContains(text, "cooldown 5"));
  EXPECT_TRUE(absl::StartsWith(lines.back(), "wall time"));
}

TEST(ReportCompare, TableHasAColumnPerLabel) {
  std::vector<RunResult> runs;
  runs.push_back(MakeRun("off"));
  runs.push_back(MakeRun(""));
  runs.push_back(MakeRun("enforce"));
  runs[2].read_latencies_ns = {kNsPerMs};
  runs[2].copies_completed = 17;
  const std::string table = FormatCompareTable(runs);
  const std::vector<std::string> lines = Lines(table);
  ASSERT_GE(lines.size(), 3u);
  const std::vector<std::string> header = absl::StrSplit(lines[0], ' ', absl::SkipEmpty());
  EXPECT_EQ(header, (std::vector<std::string>{"metric", "off", "run2", "enforce"}));
  // One row per metric, each with a cell per run.
  EXPECT_EQ(lines.size(), 2 + BuildCompareRows(runs, {ComputeRunStats(runs[0]),
                                                      ComputeRunStats(runs[1]),
                                                      ComputeRunStats(runs[2])})
                                  .size());
  bool copies_row = false;
  for (const std::string& line : lines) {
    const std::vector<std::string> cells = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (absl::StartsWith(line, "copies ")) {
      copies_row = true;
      EXPECT_EQ(cells, (std::vector<std::string>{"copies", "3", "3", "17"}));
    }
    if (absl::StartsWith(line, "latency p50 (ms)")) {
      EXPECT_EQ(cells, (std::vector<std::string>{"latency", "p50", "(ms)", "5.000", "5.000",
                                                 "1.000"}));
    }
  }
  EXPECT_TRUE(copies_row);
}

TEST_F(ReportOutputTest, CompareWritesPerRunDirectoriesAndCombinedPage) {
  const std::string& dir = dir_;
  std::vector<RunResult> runs = {MakeRun("off"), MakeRun("observe"), MakeRun("enforce")};
  ASSERT_TRUE(WriteCompareOutputs(runs, dir).ok());
  for (const char* label : {"off", "observe", "enforce"}) {
    EXPECT_TRUE(fs::exists(absl::StrCat(dir, "/", label, "/summary.json"))) << label;
    EXPECT_TRUE(fs::exists(absl::StrCat(dir, "/", label, "/report.html"))) << label;
  }
  const std::string html = ReadFile(dir + "/compare.html");
  EXPECT_EQ(Count(html, "<svg"), 7u);
  EXPECT_TRUE(absl::StrContains(html, "against the limit lines"));
  EXPECT_TRUE(absl::StrContains(html, "Extra memory over time"));
  EXPECT_FALSE(absl::StrContains(html, "http://"));
  EXPECT_FALSE(absl::StrContains(html, "https://"));
  EXPECT_TRUE(absl::StrContains(html, "href=\"observe/report.html\""));
  const nlohmann::json j = nlohmann::json::parse(ReadFile(dir + "/compare.json"));
  ASSERT_EQ(j["runs"].size(), 3u);
  EXPECT_EQ(j["runs"][1]["label"], "observe");
  EXPECT_EQ(j["runs"][2]["latency_ns"]["p99"], 10 * kNsPerMs);
  EXPECT_EQ(ReadFile(dir + "/compare.txt"), FormatCompareTable(runs));
}

TEST_F(ReportOutputTest, CompareRejectsDuplicateAndUnsafeLabels) {
  const std::string& dir = dir_;
  const absl::Status duplicate = WriteCompareOutputs({MakeRun("a"), MakeRun("a")}, dir + "/d");
  EXPECT_EQ(duplicate.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(dir + "/d"));
  const absl::Status slash = WriteCompareOutputs({MakeRun("../x")}, dir + "/s");
  EXPECT_EQ(slash.code(), absl::StatusCode::kInvalidArgument);
  const absl::Status dots = WriteCompareOutputs({MakeRun("..")}, dir + "/p");
  EXPECT_EQ(dots.code(), absl::StatusCode::kInvalidArgument);
  // Unusual but legal labels are percent-encoded in the page's links.
  std::vector<RunResult> runs = {MakeRun("high load")};
  const std::string html = RenderCompareReportHtml(runs, {ComputeRunStats(runs[0])});
  EXPECT_TRUE(absl::StrContains(html, "href=\"high%20load/report.html\"")) << html.substr(0, 2000);
}

}  // namespace
}  // namespace heatsink::sim
