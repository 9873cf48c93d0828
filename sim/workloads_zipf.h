// File: sim/workloads_zipf.h
//
// A Zipf sampler whose draws are identical on every machine: P(rank k) is
// proportional to 1 / (k + 1)^skew for k in [0, n). The weights come from
// DeterministicPow, which uses only IEEE-754 basic operations (+ - * /) and
// exact scaling (frexp/ldexp), never the C library's pow/exp/log, whose last
// bits differ between libm versions. The normalised CDF is stored as 53-bit
// integer thresholds and a draw is a binary search for one 53-bit integer
// from the Rng, so the integer part of the pipeline is exact too.
//
// Memory: 8 bytes per object (the threshold table); Make rejects n above
// `objects_max` with RESOURCE_EXHAUSTED.
//
// Example:
//   HS_ASSIGN_OR_RETURN(ZipfSampler zipf, ZipfSampler::Make(1000, 0.99));
//   int64_t rank = zipf.Sample(rng);   // 0 is the hottest object
#ifndef HEATSINK_SIM_WORKLOADS_ZIPF_H_
#define HEATSINK_SIM_WORKLOADS_ZIPF_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/env/rng.h"

namespace heatsink::sim {

// ln(x) for finite x > 0 and exp(y) for finite y, to about 1e-15 relative,
// bit-identical everywhere (see the file comment).
double DeterministicLog(double x);
double DeterministicExp(double y);
// x^y = exp(y ln x) for x > 0.
double DeterministicPow(double x, double y);

class ZipfSampler {
 public:
  static constexpr int64_t kDefaultObjectsMax = 10'000'000;

  // n >= 1, 0 <= skew <= 10 (INVALID_ARGUMENT otherwise).
  [[nodiscard]] static absl::StatusOr<ZipfSampler> Make(int64_t n, double skew,
                                                        int64_t objects_max = kDefaultObjectsMax);

  ZipfSampler(ZipfSampler&&) = default;
  ZipfSampler& operator=(ZipfSampler&&) = default;
  ZipfSampler(const ZipfSampler&) = delete;
  ZipfSampler& operator=(const ZipfSampler&) = delete;

  int64_t size() const { return static_cast<int64_t>(thresholds_.size()); }
  // A rank in [0, size()); consumes one Next64() from `rng`.
  int64_t Sample(Rng& rng) const;
  // The probability the table gives rank k (threshold differences / 2^53).
  double Probability(int64_t k) const;

 private:
  explicit ZipfSampler(std::vector<uint64_t> thresholds) : thresholds_(std::move(thresholds)) {}

  // thresholds_[k] = floor(CDF(k) * 2^53), nondecreasing, the last = 2^53.
  std::vector<uint64_t> thresholds_;
};

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_WORKLOADS_ZIPF_H_
