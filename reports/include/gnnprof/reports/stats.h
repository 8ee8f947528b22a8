// gnnprof/reports/stats.h — order statistics over per-iteration samples, shared by the
// renderers and the comparison.
#pragma once

#include <cstdint>
#include <vector>

namespace gnnprof::reports {

/// Median; the mean of the two middle values for an even count. 0 when empty.
std::int64_t median_of(std::vector<std::int64_t> v);
/// The same, unrounded (for ratios against it). 0 when empty.
double median_value(std::vector<double> v);
double median_value(const std::vector<std::int64_t>& v);
/// The upper of the two middle samples for an even count: a value some sample had. 0 when empty.
std::int64_t upper_median_of(std::vector<std::int64_t> v);
/// The sample at rank round(q * (n - 1)), 0 <= q <= 1. 0 when empty.
std::int64_t quantile_of(std::vector<std::int64_t> v, double q);

}  // namespace gnnprof::reports
