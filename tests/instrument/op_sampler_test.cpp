// Iteration sampling decisions (instrument/src/op_sampler.h), driven with synthetic iteration
// walls and op counts.
#include "op_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace gi = gnnprof::instrument;

namespace {

// Runs `n` iterations: observed ones take `on_ns` with `ops` ops, unobserved ones `off_ns`.
// Returns the observe decisions, one per iteration.
std::vector<bool> run(gi::OpSampler& s, int n, std::int64_t on_ns, std::int64_t off_ns, std::uint64_t ops) {
  std::vector<bool> seen;
  bool obs = s.on_mark(true, 0, 0);
  for (int i = 0; i < n; ++i) {
    seen.push_back(obs);
    obs = s.on_mark(false, obs ? on_ns : off_ns, obs ? ops : 0);
  }
  return seen;
}

int count(const std::vector<bool>& v) {
  int c = 0;
  for (bool b : v) c += b ? 1 : 0;
  return c;
}

int count(const std::vector<bool>& v, std::size_t from, std::size_t n) {
  int c = 0;
  for (std::size_t i = from; i < from + n && i < v.size(); ++i) c += v[i] ? 1 : 0;
  return c;
}

}  // namespace

// Ops of ~200 us (the GNN sample): the density estimate (180 x 4 us / 36 ms = 2 %) is below the
// limit, so every iteration is observed and none is spent calibrating.
TEST(OpSampler, LongOpsAreObservedInEveryIterationWithoutCalibrating) {
  gi::OpSampler s({});
  const auto seen = run(s, 50, 36'000'000, 36'000'000, 180);
  EXPECT_EQ(count(seen), 50);
  EXPECT_EQ(s.period(), 1);
  EXPECT_EQ(s.observed_iterations(), 50u);
  EXPECT_NE(s.describe().find("every iteration"), std::string::npos) << s.describe();
}

// Ops of a few microseconds whose observation costs 35 %: after the warm-up and 3 calibration
// pairs (each over 4x the 5 % budget: the other 5 are not spent), one iteration in
// ceil(0.35 / 0.02) = 18 is observed.
TEST(OpSampler, TinyOpsAreSampledAtAPeriodFromTheMeasuredCost) {
  gi::SamplerOptions o;
  gi::OpSampler s(o);
  const int w = o.warmup, c = 2 * 3;
  const auto seen = run(s, w + c + 120, 270'000, 200'000, 40);
  // Warm-up observed; then pairs of one unobserved and one observed iteration, in either order.
  for (int i = 0; i < w; ++i) EXPECT_TRUE(seen[i]) << i;
  for (int j = 0; j < c; j += 2) EXPECT_EQ(count(seen, w + j, 2), 1) << j;
  EXPECT_EQ(s.period(), 18);
  // One observed iteration in each block of 18, at an offset drawn per block.
  for (int b = 0; b < 6; ++b) EXPECT_EQ(count(seen, w + c + 18 * b, 18), 1) << b;
  EXPECT_NEAR(s.measured_cost(), 0.35, 1e-9);
  EXPECT_GE(s.observed_iterations(), static_cast<std::uint64_t>(w + c / 2 + 6));
  EXPECT_LE(s.observed_iterations(), static_cast<std::uint64_t>(w + c / 2 + 7));
  const std::string d = s.describe();
  EXPECT_NE(d.find("one in 18"), std::string::npos) << d;
  EXPECT_NE(d.find("+35.0 %"), std::string::npos) << d;
}

// A cost near the budget takes every calibration pair: 11 % is over 5 % but not by 4x.
TEST(OpSampler, ACostNearTheBudgetIsCalibratedOnEveryPair) {
  gi::SamplerOptions o;
  gi::OpSampler s(o);
  const int w = o.warmup, c = 2 * o.calibration_pairs;
  const auto seen = run(s, w + c + 40, 222'000, 200'000, 40);
  for (int j = 0; j < c; j += 2) EXPECT_EQ(count(seen, w + j, 2), 1) << j;
  EXPECT_EQ(s.period(), 6);  // ceil(0.11 / 0.02)
  EXPECT_EQ(count(seen, w + c, 6), 1);
}

// Dense ops whose measured cost is within the budget: back to every iteration after calibrating,
// but for one in 16 that keeps measuring until 32 pairs are in; then every iteration.
TEST(OpSampler, ACheapObserverMeasuredWithinBudgetObservesAll) {
  const gi::SamplerOptions o;
  gi::OpSampler s(o);
  const auto seen = run(s, 60, 204'000, 200'000, 100);  // density 4 us*100/204us: calibrates
  EXPECT_EQ(s.period(), 1);
  const int w = o.warmup, c = 2 * o.calibration_pairs;
  // The calibration's unobserved iterations, then the verification's: one in each block of 16.
  EXPECT_EQ(count(seen, w, c), o.calibration_pairs);
  EXPECT_EQ(count(seen, w + c, o.verify_every), o.verify_every - 1);
  EXPECT_EQ(count(seen, w + c + o.verify_every, o.verify_every), o.verify_every - 1);
  const int unobserved = 60 - count(seen);
  EXPECT_GE(unobserved, o.calibration_pairs + 2);
  EXPECT_LE(unobserved, o.calibration_pairs + 3);
  EXPECT_NE(s.describe().find("all but " + std::to_string(unobserved) + " calibration"), std::string::npos)
      << s.describe();
  EXPECT_NE(s.describe().find("+2.0 %"), std::string::npos) << s.describe();

  gi::OpSampler t(o);
  const auto all = run(t, 1000, 204'000, 200'000, 100);
  EXPECT_EQ(t.period(), 1);
  EXPECT_EQ(count(all), 1000 - o.verify_pairs);  // no unobserved iteration once 32 pairs are in
  const int last = w + c + o.verify_every * (o.verify_pairs - o.calibration_pairs);
  for (int i = last; i < 1000; ++i) ASSERT_TRUE(all[i]) << i;
  EXPECT_NE(t.describe().find("on 32 pairs"), std::string::npos) << t.describe();
}

// Calibration on a loaded machine passed a +35 % observer for +2 %: the verification pairs
// take the cost again every 8 pairs and switch to sampling.
TEST(OpSampler, VerificationCatchesACalibrationThatMeasuredTooLittle) {
  const gi::SamplerOptions o;
  gi::OpSampler s(o);
  std::vector<bool> seen;
  bool obs = s.on_mark(true, 0, 0);
  for (int i = 0; i < 400; ++i) {
    seen.push_back(obs);
    const std::int64_t on = i < 21 ? 204'000 : 270'000;
    obs = s.on_mark(false, obs ? on : 200'000, obs ? 100 : 0);
    if (i == 100) EXPECT_EQ(s.period(), 1) << "verifying: 8 + 5 pairs";
  }
  EXPECT_EQ(s.period(), 18);  // ceil(0.35 / 0.02), from the pairs' upper median
  EXPECT_LT(count(seen), 200);
  EXPECT_NE(s.describe().find("one in 18"), std::string::npos) << s.describe();
}

TEST(OpSampler, EnvironmentChoosesAllOrAFixedPeriod) {
  gi::SamplerOptions o;
  ASSERT_TRUE(o.parse("all"));
  gi::OpSampler all(o);
  EXPECT_EQ(count(run(all, 30, 300'000, 200'000, 40)), 30);
  EXPECT_EQ(all.describe(), "ops observed in every iteration (GNNPROF_TORCH_SAMPLE=all)");
  gi::SamplerOptions e;
  ASSERT_TRUE(e.parse("5"));
  gi::OpSampler every(e);
  const auto seen = run(every, 30, 300'000, 200'000, 40);
  EXPECT_EQ(count(seen), 6);
  EXPECT_TRUE(seen[0]);
  EXPECT_TRUE(seen[5]);
  EXPECT_FALSE(seen[1]);
  gi::SamplerOptions bad;
  EXPECT_FALSE(bad.parse("often"));
  EXPECT_FALSE(bad.parse("0"));
  EXPECT_FALSE(bad.parse("3x"));
  EXPECT_TRUE(bad.parse(""));
  EXPECT_TRUE(bad.parse("1"));
  EXPECT_TRUE(bad.mode == gi::SamplerOptions::Mode::kAll);
}

// A run shorter than the warm-up observes everything and says why.
TEST(OpSampler, AShortRunIsObservedThroughout) {
  gi::OpSampler s({});
  EXPECT_EQ(count(run(s, 4, 300'000, 200'000, 40)), 4);
  EXPECT_NE(s.describe().find("too few"), std::string::npos) << s.describe();
}

// Calibration on a few pairs is noisy: the period follows the cost measured over the run.
TEST(OpSampler, ThePeriodFollowsTheCostMeasuredOverTheRun) {
  gi::OpSampler s({});
  bool obs = s.on_mark(true, 0, 0);
  for (int i = 0; i < 1000; ++i) {
    // Calibration (iterations 5..20) sees +10.5 %; the run's true cost is +35 %.
    const std::int64_t on = i < 21 ? 221'000 : 270'000;
    obs = s.on_mark(false, obs ? on : 200'000, obs ? 40 : 0);
    if (i == 21) EXPECT_EQ(s.period(), 6) << "from the calibration pairs";
  }
  EXPECT_EQ(s.period(), 18);
  EXPECT_GT(s.measured_cost(), 0.30);
}

// A loop still warming up during calibration (every iteration faster than the one before):
// pairs compare neighbours, so the drift does not pass for the observer's cost.
TEST(OpSampler, CalibrationComparesNeighboursNotDriftingMedians) {
  gi::OpSampler s({});
  bool obs = s.on_mark(true, 0, 0);
  for (int i = 0; i < 40; ++i) {
    const double base = 400'000.0 * (1.0 - 0.02 * i);  // -2 % per iteration
    obs = s.on_mark(false, static_cast<std::int64_t>(obs ? base * 1.30 : base), obs ? 40 : 0);
  }
  // Each pair: observed = 1.30 x its unobserved neighbour, x 0.98 when it comes after it and
  // / 0.98 when before (the order is drawn per pair): between ceil(0.274 / 0.02) and
  // ceil(0.327 / 0.02), where a fixed order would always see the drift one way.
  EXPECT_GE(s.period(), 14);
  EXPECT_LE(s.period(), 17);
}

// A loop whose iterations alternate long and short (two DataLoader workers delivering in turn,
// a sawtooth of period 2), ops costing +35 %. A fixed schedule at an even period would observe
// only one phase, and its stage figures and measured cost would be that phase's; the drawn
// offsets observe both, and the cost measured over the run is the true one.
TEST(OpSampler, APeriodicLoopIsObservedAtEveryPhase) {
  gi::OpSampler s({});
  bool obs = s.on_mark(true, 0, 0);
  int long_on = 0, short_on = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::int64_t base = i % 2 == 0 ? 2'000'000 : 200'000;
    if (obs && i > 100) (base > 1'000'000 ? long_on : short_on) += 1;
    obs = s.on_mark(false, static_cast<std::int64_t>(obs ? base * 1.35 : base), obs ? 100 : 0);
  }
  EXPECT_GT(s.period(), 1);
  EXPECT_GT(long_on, 0);
  EXPECT_GT(short_on, 0);
  EXPECT_LT(std::abs(long_on - short_on), (long_on + short_on) / 2) << long_on << " vs " << short_on;
}

// A DataLoader worker: 8 batches of a collate that reads 25 000 elements one by one (100 ms of
// estimated observer cost in a 130 ms observed batch: +333 % over a 30 ms one) decide from the
// estimate after 2 batches past the first, with no calibration pairs; a worker forked later
// starts from that decision.
TEST(OpSampler, AWorkerDecidesFromTheEstimateAndTheNextOneInheritsIt) {
  gi::SamplerOptions o;
  o.warmup = 3;
  o.estimate = true;
  gi::OpSampler first(o);
  const auto seen = run(first, 8, 130'000'000, 30'000'000, 25'000);
  EXPECT_TRUE(first.decided());
  EXPECT_EQ(first.period(), 64);  // ceil(333 % / 2 %), at most 64
  EXPECT_EQ(count(seen, 0, 3), 3);
  EXPECT_LE(count(seen, 3, 5), 1);
  EXPECT_NE(first.describe().find("one in 64: estimated cost"), std::string::npos) << first.describe();

  o.inherited_period = first.period();
  gi::OpSampler next(o);
  const auto later = run(next, 8, 130'000'000, 30'000'000, 25'000);
  EXPECT_LE(count(later), 1) << "no warm-up of its own";
  EXPECT_NE(next.describe().find("as an earlier DataLoader worker of this run decided"), std::string::npos) << next.describe();
  // Workers with seeds of their own observe different batches: over many, about 1 in the period.
  o.inherited_period = 8;
  std::vector<int> first_observed;
  int observed = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    o.seed = seed * 7919;
    gi::OpSampler w(o);
    const auto seen = run(w, 16, 130'000'000, 30'000'000, 25'000);
    observed += count(seen);
    for (int i = 0; i < 16; ++i)
      if (seen[static_cast<std::size_t>(i)]) {
        first_observed.push_back(i);
        break;
      }
  }
  EXPECT_EQ(observed, 40 * 2);  // 16 batches, one in 8
  std::sort(first_observed.begin(), first_observed.end());
  EXPECT_GT(std::unique(first_observed.begin(), first_observed.end()) - first_observed.begin(), 4) << "different offsets";

  // Cheap ops: every batch observed, as in the loop.
  o.inherited_period = 0;
  gi::OpSampler cheap(o);
  EXPECT_EQ(count(run(cheap, 8, 30'000'000, 30'000'000, 100)), 8);
  EXPECT_EQ(cheap.period(), 1);
}
