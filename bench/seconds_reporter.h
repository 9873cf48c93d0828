// File: bench/seconds_reporter.h
//
// A console reporter that also keeps each benchmark's real time per iteration
// (seconds), so a program can print ratios against the baselines it measured
// in the same run once RunSpecifiedBenchmarks returns.
//
// Example:
//   class MyReporter : public heatsink::SecondsReporter { ... PrintRatios() ... };
//   MyReporter reporter;
//   benchmark::RunSpecifiedBenchmarks(&reporter);
//   reporter.PrintRatios();   // uses Seconds("BM_Baseline") etc.
#ifndef HEATSINK_BENCH_SECONDS_REPORTER_H_
#define HEATSINK_BENCH_SECONDS_REPORTER_H_

#include <map>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"

namespace heatsink {

class SecondsReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration) continue;
      // "BM_X/123/real_time" -> "BM_X/123"; "BM_X/real_time" -> "BM_X".
      std::string name = run.benchmark_name();
      const size_t cut = name.find("/real_time");
      if (cut != std::string::npos) name = name.substr(0, cut);
      seconds_[name] = run.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(run.time_unit);
    }
    ConsoleReporter::ReportRuns(runs);
  }

  // Real time per iteration of `name` in seconds; 0 when it did not run.
  double Seconds(const std::string& name) const {
    auto it = seconds_.find(name);
    return it == seconds_.end() ? 0.0 : it->second;
  }

 private:
  std::map<std::string, double> seconds_;
};

}  // namespace heatsink

#endif  // HEATSINK_BENCH_SECONDS_REPORTER_H_
