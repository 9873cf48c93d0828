// The small vocabulary shared by the heat window's tests
// (heat_window_test.cc, tests/core/stress/heat_window_stress_test.cc): a
// 10-second window of ten sub-buckets, keys of one tenant, numbered key names.
#ifndef HEATSINK_TESTS_CORE_REPLICATION_HEAT_WINDOW_TEST_UTIL_H_
#define HEATSINK_TESTS_CORE_REPLICATION_HEAT_WINDOW_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/replication/heat_window.h"

namespace heatsink::testing {

inline constexpr TimeNs kMs = kNsPerMs;
inline constexpr TimeNs kSec = kNsPerSec;

inline HeatWindow::Options Opts(int64_t entries_max, int64_t hit_count, int32_t shards = 1) {
  HeatWindow::Options o;
  o.window_ns = 10 * kSec;
  o.sub_buckets = 10;
  o.entries_max = entries_max;
  o.hit_count = hit_count;
  o.shards = shards;
  o.cleanup_slots_per_record = 2;
  o.replacement_probe_slots = 8;
  return o;
}

inline HeatKeyView Key(const std::string& key) { return HeatKeyView{"tenant", key, ""}; }

inline std::vector<std::string> Names(const std::string& prefix, int n) {
  std::vector<std::string> out;
  out.reserve(n);
  for (int i = 0; i < n; ++i) out.push_back(absl::StrFormat("%s-%08d", prefix, i));
  return out;
}

}  // namespace heatsink::testing

#endif  // HEATSINK_TESTS_CORE_REPLICATION_HEAT_WINDOW_TEST_UTIL_H_
