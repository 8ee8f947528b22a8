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

std::int64_t quantile_of(std::vector<std::int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5))];
}

}  // namespace gnnprof::reports
