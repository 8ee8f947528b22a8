// op_sampler.cpp — see op_sampler.h.
#include "op_sampler.h"

#include "gnnprof/order_stats.h"  // O(n): runs every kRedecideEvery iterations on the loop thread

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gnnprof::instrument {
namespace {

constexpr std::size_t kMaxSamples = 1024;
constexpr std::uint64_t kRedecideEvery = 64;  // iterations between two looks at the period
// Calibration ends early when each of its first kPlainPairs pairs cost over kPlainFactor x budget.
constexpr std::size_t kPlainPairs = 3;
constexpr double kPlainFactor = 4;

void keep(std::vector<std::int64_t>& v, std::int64_t x, std::uint64_t n) {
  if (v.size() < kMaxSamples) v.push_back(x);
  else v[n % kMaxSamples] = x;
}

}  // namespace

// Its samples are kept for the whole run: their room is taken at once, when torch is loaded,
// not by growing while the host's first iterations free and reuse their tensors.
OpSampler::OpSampler(SamplerOptions opt) : opt_(opt) {
  rng_ ^= opt_.seed;
  on_walls_.reserve(kMaxSamples);
  off_walls_.reserve(kMaxSamples);
  densities_.reserve(64);
  pair_ratios_.reserve(64);
  if (opt_.mode == SamplerOptions::Mode::kAuto && opt_.inherited_period > 0) {
    state_ = State::kDecided;
    period_ = std::clamp(opt_.inherited_period, 1, std::max(2, opt_.max_period));
  }
}

bool SamplerOptions::parse(const char* value) {
  if (value == nullptr || value[0] == '\0' || std::strcmp(value, "auto") == 0) {
    mode = Mode::kAuto;
    return true;
  }
  if (std::strcmp(value, "all") == 0) {
    mode = Mode::kAll;
    return true;
  }
  char* end = nullptr;
  const long n = std::strtol(value, &end, 10);
  if (end == value || *end != '\0' || n < 1 || n > 1000000) return false;
  mode = n == 1 ? Mode::kAll : Mode::kEvery;
  period = static_cast<int>(n);
  return true;
}

std::uint64_t OpSampler::next_random() {  // splitmix64
  std::uint64_t z = (rng_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::uint64_t OpSampler::pick_in_block(std::uint64_t j, std::uint64_t n) {
  if (n <= 1) return 0;
  if (j % n == 0) block_pick_ = next_random() % n;
  return block_pick_;
}

void OpSampler::record(bool observed, std::int64_t wall_ns, std::uint64_t ops) {
  ++iterations_;
  if (observed) ++observed_;
  if (wall_ns <= 0) return;
  // Warm-up iterations carry start-up costs: not part of the measured cost.
  if (state_ == State::kWarmup) {
    if (observed && iterations_ > 1) densities_.push_back(static_cast<double>(ops) * opt_.op_cost_ns / static_cast<double>(wall_ns));
    return;
  }
  if (observed) keep(on_walls_, wall_ns, iterations_);
  else keep(off_walls_, wall_ns, iterations_);
  if (state_ == State::kCalibrate || state_ == State::kVerify) {
    // A pair: an unobserved iteration and an observed neighbour, in either order.
    if (pair_wall_ > 0 && pair_observed_ != observed) {
      const double on = static_cast<double>(observed ? wall_ns : pair_wall_);
      const double off = static_cast<double>(observed ? pair_wall_ : wall_ns);
      pair_ratios_.push_back(on / off);
      pair_wall_ = 0;
    } else {
      pair_wall_ = wall_ns;
      pair_observed_ = observed;
    }
  }
}

double OpSampler::measured_cost() const {
  if (on_walls_.empty() || off_walls_.empty()) return -1;
  const double off = static_cast<double>(upper_median(off_walls_));
  return off > 0 ? static_cast<double>(upper_median(on_walls_)) / off - 1 : -1;
}

bool OpSampler::decide_after_warmup() {
  // The first iteration's start-up is left out, unless it is all there is.
  density_ = densities_.empty() ? 1.0 : upper_median(densities_);
  // No estimate to go by (every warm-up wall 0): observe all rather than sample at a guess.
  if (opt_.estimate && densities_.empty()) density_ = 0;
  if (density_ < opt_.density_limit || opt_.estimate) {
    state_ = State::kDecided;
    // density = cost / observed wall; the cost over an unobserved iteration is d / (1 - d).
    period_ = density_ < opt_.density_limit ? 1 : period_for(std::min(density_, 0.98) / (1 - std::min(density_, 0.98)));
    decided_at_ = iterations_;
    return period_ == 1;
  }
  state_ = State::kCalibrate;
  decided_at_ = iterations_;  // calibration starts here
  return false;
}

int OpSampler::period_for(double cost) const {
  if (cost <= opt_.budget) return 1;
  const double p = std::ceil(cost / opt_.target);
  return static_cast<int>(std::clamp(p, 2.0, static_cast<double>(std::max(2, opt_.max_period))));
}

void OpSampler::decide_after_calibration() {
  state_ = State::kDecided;
  decided_at_ = iterations_;
  // Each observed iteration against the unobserved one just before it: drift (a loop still
  // warming up, the machine's load) hits both of a pair alike.
  calibrated_cost_ = pair_ratios_.empty() ? measured_cost() : upper_median(pair_ratios_) - 1;
  period_ = period_for(calibrated_cost_);
  if (period_ == 1 && pair_ratios_.size() < static_cast<std::size_t>(opt_.verify_pairs) && opt_.verify_every > 1) {
    state_ = State::kVerify;
    next_check_ = pair_ratios_.size() + static_cast<std::size_t>(std::max(1, opt_.calibration_pairs));
  }
}

void OpSampler::verify(std::uint64_t k) {
  if (pair_ratios_.size() < next_check_) return;
  calibrated_cost_ = upper_median(pair_ratios_) - 1;
  period_ = period_for(calibrated_cost_);
  if (period_ > 1 || pair_ratios_.size() >= static_cast<std::size_t>(opt_.verify_pairs)) {
    state_ = State::kDecided;
    decided_at_ = k;
    return;
  }
  next_check_ += static_cast<std::size_t>(std::max(1, opt_.calibration_pairs));
}

bool OpSampler::on_mark(bool first, std::int64_t wall_ns, std::uint64_t ops) {
  if (!first) record(observing_, wall_ns, ops);
  const std::uint64_t k = iterations_;  // index of the iteration that begins now
  switch (opt_.mode) {
    case SamplerOptions::Mode::kAll:
      period_ = 1;
      observing_ = true;
      state_ = State::kDecided;  // nothing to warm up for (and no density samples to keep)
      return observing_;
    case SamplerOptions::Mode::kEvery:
      period_ = std::max(1, opt_.period);
      observing_ = k % static_cast<std::uint64_t>(period_) == 0;
      if (state_ == State::kWarmup) state_ = State::kDecided;  // walls are then all recorded
      return observing_;
    case SamplerOptions::Mode::kAuto:
      break;
  }
  if (state_ == State::kWarmup) {
    if (k < static_cast<std::uint64_t>(std::max(1, opt_.warmup))) return observing_ = true;
    if (decide_after_warmup()) return observing_ = true;
  }
  if (state_ == State::kCalibrate) {
    const std::uint64_t j = k - decided_at_;
    // Every pair so far far over the budget (a loop of per-element tensor ops: +300 %): the rest
    // of the pairs would only cost the run more of its iterations at that price.
    const bool plain = j % 2 == 0 && pair_ratios_.size() >= kPlainPairs &&
                       *std::min_element(pair_ratios_.begin(), pair_ratios_.end()) - 1 > kPlainFactor * opt_.budget;
    if (!plain && j < 2 * static_cast<std::uint64_t>(std::max(1, opt_.calibration_pairs))) {
      if (j % 2 == 0) pair_flip_ = (next_random() & 1) != 0;
      return observing_ = (j % 2 == 1) != pair_flip_;
    }
    decide_after_calibration();
  }
  if (state_ == State::kVerify) {
    verify(k);
    if (state_ == State::kVerify) {
      const auto every = static_cast<std::uint64_t>(opt_.verify_every);
      const std::uint64_t j = k - decided_at_;
      return observing_ = j % every != pick_in_block(j, every);
    }
  }
  // While sampling, both kinds of iterations keep being timed: the period follows the cost as
  // measured over the run so far (a few calibration pairs are noisy). It stays at least 2 once
  // sampling, so that the cost stays measurable.
  if (period_ > 1 && (k - decided_at_) % kRedecideEvery == 0 && k > decided_at_) {
    const int p = std::max(2, period_for(measured_cost()));
    if (p != period_) {
      period_ = p;
      decided_at_ = k;
    }
  }
  const std::uint64_t j = k - decided_at_;
  observing_ = period_ <= 1 || j % static_cast<std::uint64_t>(period_) == pick_in_block(j, static_cast<std::uint64_t>(period_));
  return observing_;
}

std::string OpSampler::describe() const {
  char buf[512];
  const double cost = measured_cost();
  char measured[128] = "";
  if (cost > -1)
    std::snprintf(measured, sizeof(measured), "; observed iterations ran %+.1f %% vs unobserved ones (medians over the run)", 100 * cost);
  const unsigned long long n = iterations_, k = observed_;
  switch (opt_.mode) {
    case SamplerOptions::Mode::kAll:
      std::snprintf(buf, sizeof(buf), "ops observed in every iteration (GNNPROF_TORCH_SAMPLE=all)");
      return buf;
    case SamplerOptions::Mode::kEvery:
      std::snprintf(buf, sizeof(buf), "ops observed in %llu of %llu iterations, one in %d (GNNPROF_TORCH_SAMPLE=%d)%s", k, n,
                    period_, opt_.period, measured);
      return buf;
    case SamplerOptions::Mode::kAuto:
      break;
  }
  if (state_ == State::kWarmup) {
    std::snprintf(buf, sizeof(buf), "ops observed in every iteration (%llu iterations: too few to measure the observer's cost)", n);
  } else if (opt_.inherited_period > 0 && density_ < 0) {
    std::snprintf(buf, sizeof(buf),
                  "ops observed in %llu of %llu iterations, one in %d, as an earlier DataLoader worker of this run "
                  "decided from its estimated cost%s",
                  k, n, period_, measured);
  } else if (opt_.estimate && density_ >= opt_.density_limit) {
    std::snprintf(buf, sizeof(buf),
                  "ops observed in %llu of %llu iterations, one in %d: estimated cost %.0f %% of an observed iteration at "
                  "%.1f us per op (a DataLoader worker decides from the estimate: its batches are too few to measure it)%s",
                  k, n, period_, 100 * density_, opt_.op_cost_ns / 1000, measured);
  } else if (period_ == 1 && density_ >= 0 && density_ < opt_.density_limit) {
    std::snprintf(buf, sizeof(buf),
                  "ops observed in every iteration (estimated cost %.1f %% of an iteration at %.1f us per op, below %.0f %%)",
                  100 * density_, opt_.op_cost_ns / 1000, 100 * opt_.density_limit);
  } else if (state_ == State::kCalibrate) {
    std::snprintf(buf, sizeof(buf), "ops observed in %llu of %llu iterations (the run ended while the observer's cost was being measured)%s",
                  k, n, measured);
  } else if (period_ == 1) {
    std::snprintf(buf, sizeof(buf),
                  "ops observed in %llu of %llu iterations: all but %llu calibration ones (observing every op measured "
                  "%+.1f %% per iteration on %zu pairs, within %.0f %%)",
                  k, n, n - k, 100 * calibrated_cost_, pair_ratios_.size(), 100 * opt_.budget);
  } else {
    // The calibration's figure decided; the run's own figure moves the period later, which stays
    // at least 2 so that it can still be measured (a noisy calibration is not undone).
    std::snprintf(buf, sizeof(buf),
                  "ops observed in %llu of %llu iterations, one in %d: observing every op measured %+.1f %% per iteration "
                  "at calibration, over the %.0f %% budget%s; GNNPROF_TORCH_SAMPLE=all observes all",
                  k, n, period_, 100 * calibrated_cost_, 100 * opt_.budget, measured);
  }
  return buf;
}

}  // namespace gnnprof::instrument
