#include "gnnprof/reports/stats.h"

#include <algorithm>

namespace gnnprof::reports {

std::int64_t median_of(std::vector<std::int64_t> v) {
  if (v.empty()) return 0;
  const std::size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2), v.end());
  std::int64_t hi = v[n / 2];
  if (n % 2 == 1) return hi;
  std::int64_t lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2));
  return lo + (hi - lo) / 2;
}

double median_value(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double median_value(const std::vector<std::int64_t>& v) {
  std::vector<double> d(v.begin(), v.end());
  return median_value(std::move(d));
}

std::int64_t upper_median_of(std::vector<std::int64_t> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

std::int64_t quantile_of(std::vector<std::int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5))];
}

}  // namespace gnnprof::reports
