// histogram.h — log-linear histogram of per-hit durations for p50/p90.
//
// Values below 128 ns are exact; above, each power of two is split into 64 buckets, so a
// reported percentile is within 1/128 (0.8 %) of a value that was recorded. Counters are kept
// for the span of buckets between the smallest and the largest value seen (at most 128 + 57 x
// 64), never per hit, so a stage hit a billion times costs the same as one hit a thousand
// times, and one whose hits all take 8-15 us keeps 64 counters, not the 512 below them.
#pragma once

#include <cstdint>
#include <memory_resource>
#include <vector>

namespace gnnprof::detail {

class LogHistogram {
 public:
  LogHistogram() = default;
  /// Buckets allocated from `mr` (the aggregator's private heap).
  explicit LogHistogram(std::pmr::memory_resource* mr) : counts_(mr) {}
  void add(std::int64_t v) {
    if (v < 0) v = 0;
    const std::size_t i = index_of(static_cast<std::uint64_t>(v));
    if (counts_.empty()) {
      first_ = i;
    } else if (i < first_) {
      counts_.insert(counts_.begin(), first_ - i, 0);
      first_ = i;
    }
    if (i - first_ >= counts_.size()) counts_.resize(i - first_ + 1, 0);
    ++counts_[i - first_];
    ++n_;
  }
  std::uint64_t count() const { return n_; }
  /// Counters kept: the span of buckets from the smallest value seen to the largest.
  std::size_t buckets() const { return counts_.size(); }
  /// The q-quantile (0 < q <= 1): the representative value of the bucket holding rank
  /// ceil(q * n). 0 when empty.
  std::int64_t quantile(double q) const {
    if (n_ == 0) return 0;
    auto rank = static_cast<std::uint64_t>(q * static_cast<double>(n_));
    if (static_cast<double>(rank) < q * static_cast<double>(n_)) ++rank;
    if (rank == 0) rank = 1;
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= rank) return value_of(first_ + i);
    }
    return value_of(first_ + counts_.size() - 1);
  }

  static std::size_t index_of(std::uint64_t v) {
    if (v < 128) return static_cast<std::size_t>(v);
    int e = 63 - __builtin_clzll(v);  // >= 7
    std::uint64_t sub = (v >> (e - 6)) & 63;
    return 128 + static_cast<std::size_t>(e - 7) * 64 + static_cast<std::size_t>(sub);
  }
  static std::int64_t value_of(std::size_t i) {
    if (i < 128) return static_cast<std::int64_t>(i);
    std::size_t e = (i - 128) / 64 + 7;
    std::uint64_t sub = (i - 128) % 64;
    std::uint64_t lower = (64 + sub) << (e - 6);
    std::uint64_t width = 1ULL << (e - 6);
    return static_cast<std::int64_t>(lower + width / 2);
  }

 private:
  std::pmr::vector<std::uint64_t> counts_;  // buckets first_, first_ + 1, ...
  std::size_t first_ = 0;
  std::uint64_t n_ = 0;
};

}  // namespace gnnprof::detail
