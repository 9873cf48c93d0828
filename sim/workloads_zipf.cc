#include "sim/workloads_zipf.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink::sim {
namespace {

constexpr double kLn2 = 0.69314718055994530942;
constexpr uint64_t kOne53 = uint64_t{1} << 53;

}  // namespace

double DeterministicLog(double x) {
  HS_CHECK(x > 0 && std::isfinite(x));
  int e = 0;
  double m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1); exact
  // Move m into [sqrt(1/2), sqrt(2)) so the series argument stays small.
  if (m < 0.70710678118654752440) {
    m *= 2;  // exact
    --e;
  }
  // ln(m) = 2 atanh(t), t = (m - 1) / (m + 1), |t| < 0.1716.
  const double t = (m - 1) / (m + 1);
  const double t2 = t * t;
  double term = t;
  double sum = 0;
  for (int k = 1; k < 60; k += 2) {
    sum += term / k;
    term *= t2;
  }
  return 2 * sum + e * kLn2;
}

double DeterministicExp(double y) {
  HS_CHECK(std::isfinite(y));
  if (y > 709.0) return HUGE_VAL;
  if (y < -745.0) return 0.0;
  // y = n ln2 + r with |r| <= ln2 / 2; exp(y) = 2^n exp(r).
  const double n = std::floor(y / kLn2 + 0.5);
  const double r = y - n * kLn2;
  double term = 1;
  double sum = 1;
  for (int k = 1; k < 30; ++k) {
    term = term * r / k;
    sum += term;
  }
  return std::ldexp(sum, static_cast<int>(n));  // exact scaling
}

double DeterministicPow(double x, double y) {
  HS_CHECK(x > 0);
  if (y == 0) return 1;
  return DeterministicExp(y * DeterministicLog(x));
}

absl::StatusOr<ZipfSampler> ZipfSampler::Make(int64_t n, double skew, int64_t objects_max) {
  if (n < 1) return absl::InvalidArgumentError(absl::StrCat("zipf: objects must be >= 1, got ", n));
  if (!(skew >= 0 && skew <= 10)) {
    return absl::InvalidArgumentError(absl::StrCat("zipf: skew must be in [0, 10], got ", skew));
  }
  if (n > objects_max) {
    return absl::ResourceExhaustedError(
        absl::StrCat("zipf: ", n, " objects, more than the limit of ", objects_max));
  }
  std::vector<double> cumulative(static_cast<size_t>(n));
  double total = 0;
  for (int64_t k = 0; k < n; ++k) {
    total += skew == 0 ? 1.0 : DeterministicPow(static_cast<double>(k + 1), -skew);
    cumulative[static_cast<size_t>(k)] = total;
  }
  std::vector<uint64_t> thresholds(static_cast<size_t>(n));
  const double scale = static_cast<double>(kOne53);
  for (size_t k = 0; k < thresholds.size(); ++k) {
    // cumulative / total <= 1, so the product is at most 2^53 and exact to convert.
    const double v = std::floor(cumulative[k] / total * scale);
    thresholds[k] = std::min<uint64_t>(static_cast<uint64_t>(v), kOne53);
  }
  thresholds.back() = kOne53;
  return ZipfSampler(std::move(thresholds));
}

int64_t ZipfSampler::Sample(Rng& rng) const {
  const uint64_t u = rng.Next64() >> 11;  // uniform in [0, 2^53)
  const auto it = std::upper_bound(thresholds_.begin(), thresholds_.end(), u);
  return static_cast<int64_t>(it - thresholds_.begin());
}

double ZipfSampler::Probability(int64_t k) const {
  HS_CHECK(k >= 0 && k < size());
  const uint64_t hi = thresholds_[static_cast<size_t>(k)];
  const uint64_t lo = k == 0 ? 0 : thresholds_[static_cast<size_t>(k - 1)];
  return static_cast<double>(hi - lo) / static_cast<double>(kOne53);
}

}  // namespace heatsink::sim
