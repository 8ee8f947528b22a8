// gnnprof/order_stats.h — the one home of medians and quantiles over samples: the reports,
// the comparison, the merge and the torch observer's sampler use these. Header-only: the
// observer plugin reaches the core through the C ABI alone.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace gnnprof {

/// Median; the mean of the two middle values for an even count. 0 when empty.
inline std::int64_t median_of(std::vector<std::int64_t> v) {
  if (v.empty()) return 0;
  const std::size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2), v.end());
  const std::int64_t hi = v[n / 2];
  if (n % 2 == 1) return hi;
  const std::int64_t lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2));
  return lo + (hi - lo) / 2;
}

/// The same, unrounded (for ratios against it). 0 when empty.
inline double median_value(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
inline double median_value(const std::vector<std::int64_t>& v) { return median_value(std::vector<double>(v.begin(), v.end())); }

/// The upper of the two middle samples for an even count: a value some sample had. 0 when
/// empty. O(n).
template <class T>
T upper_median(std::vector<T> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

/// The sample at rank round(q * (n - 1)), 0 <= q <= 1. 0 when empty.
inline std::int64_t quantile_of(std::vector<std::int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5))];
}

}  // namespace gnnprof
