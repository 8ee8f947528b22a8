// The comparison: statistics against known values, verdicts, scopes, JSON round trip.
#include "gnnprof/reports/compare.h"

#include <gtest/gtest.h>

#include "gnnprof/reports/analysis.h"
#include "gnnprof/reports/format.h"
#include "gnnprof/order_stats.h"

#include <cmath>
#include <random>

namespace gnnprof::reports {
namespace {

TEST(CompareStats, OneFormatterForRatioCiAndP) {
  EXPECT_EQ(ratio_text(1.23456), "1.235");
  EXPECT_EQ(ratio_text(std::nullopt), "-");
  EXPECT_EQ(p_text(0.0123), "0.012");
  EXPECT_EQ(p_text(1e-9), "<1e-6");
  EXPECT_EQ(cpus_text(1), "1 CPU");  // one-CPU hosts read "of the 1 CPU", not "CPUs"
  EXPECT_EQ(cpus_text(2), "2 CPUs");
  EXPECT_EQ(ci_text(0.9811, 1.0424, CiStyle::kBracket), "[0.981, 1.042]");
  EXPECT_EQ(ci_text(0.9811, 1.0424, CiStyle::kDash), "0.981–1.042");
  EXPECT_EQ(ci_text(0.9811, 1.0424, CiStyle::kSpacedDash), "0.981 – 1.042");
  EXPECT_EQ(ci_text(std::nullopt, 1.0, CiStyle::kBracket), "-");
}

TEST(CompareStats, MannWhitneyMatchesTheTextbookValue) {
  // U = 0 for fully separated samples of 5 and 5: z = (12.5 - 0.5) / sqrt(25/12 * 11),
  // two-sided p = 0.01219 (scipy.stats.mannwhitneyu, asymptotic, continuity correction).
  EXPECT_NEAR(mann_whitney_p({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}), 0.01219, 5e-5);
  EXPECT_NEAR(mann_whitney_p({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}), 0.01219, 5e-5);
  EXPECT_DOUBLE_EQ(mann_whitney_p({1, 2, 3}, {1, 2, 3}), 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney_p({}, {1}), 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney_p({4, 4, 4}, {4, 4}), 1.0);  // all ties
  EXPECT_EQ(median_of({5, 1, 3}), 3);
  EXPECT_EQ(median_of({4, 1, 3, 2}), 2);  // lower-middle average, integer ns
  EXPECT_EQ(median_of({}), 0);
  // The one home of medians (stats.h): unrounded for ratios, the upper middle for "a value some
  // iteration had".
  EXPECT_DOUBLE_EQ(median_value(std::vector<double>{4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median_value(std::vector<std::int64_t>{7, 1, 4}), 4.0);
  EXPECT_DOUBLE_EQ(median_value(std::vector<double>{}), 0.0);
  EXPECT_EQ(upper_median(std::vector<std::int64_t>{4, 1, 3, 2}), 3);
  EXPECT_EQ(upper_median(std::vector<std::int64_t>{9}), 9);
  EXPECT_EQ(upper_median(std::vector<std::int64_t>{}), 0);
}

Profile run(std::mt19937& rng, double wall_ms, double data_ms, bool data_on_loop) {
  Profile p;
  std::normal_distribution<double> noise(0, 0.02);
  for (int i = 0; i < 40; ++i) {
    IterationStats it;
    it.index = static_cast<std::uint64_t>(i);
    it.wall_ns = static_cast<std::int64_t>(wall_ms * (1 + noise(rng)) * 1e6);
    const auto data = static_cast<std::int64_t>(data_ms * (1 + noise(rng)) * 1e6);
    (data_on_loop ? it.stages : it.other_threads)["sample"] = data;
    it.stages["forward"] = static_cast<std::int64_t>(20e6 * (1 + noise(rng)));
    p.iterations.push_back(it);
  }
  return p;
}

// Three or more runs per side: the runs are the samples. Runs of one program that drift as
// wholes (100, 120, 90 ms against 95, 125, 105 ms, each run's iterations within 2 %) are no
// change, where pooling their iterations would call the 5 % between the medians significant; a
// shift of every run (x 1.5) is slower; one run per side keeps the iteration-level tests.
TEST(Compare, WithTwoOrMoreRunsPerSideTheRunsAreTheSamples) {
  std::mt19937 rng(7);
  auto side = [&](std::initializer_list<double> walls) {
    std::vector<Profile> out;
    for (double w : walls) out.push_back(run(rng, w, 10, true));
    return out;
  };
  const Comparison drift = compare_profiles(side({100, 120, 90}), side({95, 125, 105}), CompareOptions{});
  const MetricComparison& it = drift.metrics[0];
  EXPECT_EQ(it.baseline_runs, 3u);
  EXPECT_EQ(it.candidate_runs, 3u);
  EXPECT_EQ(it.verdict, Verdict::kNoChange) << it.p_value;
  EXPECT_GT(it.p_value, 0.3);
  ASSERT_TRUE(it.ci_low && it.ci_high);
  EXPECT_LT(*it.ci_low, 1.0);
  EXPECT_GT(*it.ci_high, 1.0);  // the interval and p agree
  EXPECT_NE(statistics_note(drift).find("the runs are the samples: p: Welch's t on the runs' medians"), std::string::npos);
  // The same iterations pooled, as one run each: the drift passes for a change.
  std::vector<Profile> a = side({100, 120, 90}), b = side({95, 125, 105});
  Profile pa, pb;
  for (const auto& p : a) pa.iterations.insert(pa.iterations.end(), p.iterations.begin(), p.iterations.end());
  for (const auto& p : b) pb.iterations.insert(pb.iterations.end(), p.iterations.begin(), p.iterations.end());
  const Comparison pooled = compare_profiles({pa}, {pb}, CompareOptions{});
  EXPECT_EQ(pooled.metrics[0].baseline_runs, 0u);
  EXPECT_LT(pooled.metrics[0].p_value, 0.05);
  EXPECT_NE(statistics_note(pooled).find("fewer than 3 runs per side"), std::string::npos);

  const Comparison shift = compare_profiles(side({100, 120, 90}), side({150, 180, 135}), CompareOptions{});
  EXPECT_EQ(shift.metrics[0].verdict, Verdict::kSlower) << shift.metrics[0].p_value;
  EXPECT_GT(*shift.metrics[0].ci_low, 1.0);
}

// Each run's warm-up is left out as `gnnprof report` detects it: a run whose first 3
// iterations are slow loses those 3 (the report's figures and the comparison's agree), one
// without loses none; --skip N leaves out N of every run.
TEST(Compare, EachRunsDetectedWarmUpIsLeftOut) {
  std::mt19937 rng(3);
  Profile slow_start = run(rng, 30, 10, true), steady = run(rng, 30, 10, true);
  for (std::size_t i = 0; i < 3; ++i) slow_start.iterations[i].wall_ns = 90'000'000;
  EXPECT_EQ(detected_warmup(slow_start), 3u);
  EXPECT_EQ(detected_warmup(steady), 0u);
  const Comparison c = compare_profiles({slow_start}, {steady}, CompareOptions{});
  EXPECT_EQ(c.metrics[0].baseline_n, 37u);
  EXPECT_EQ(c.metrics[0].candidate_n, 40u);
  EXPECT_EQ(c.metrics[1].baseline_median_ns, [&] {  // the mean row leaves them out too
    std::int64_t sum = 0;
    for (std::size_t i = 3; i < 40; ++i) sum += slow_start.iterations[i].wall_ns;
    return static_cast<std::int64_t>(std::llround(static_cast<double>(sum) / 37));
  }());
  EXPECT_NE(statistics_note(c).find("each run's warm-up left out as `gnnprof report` detects it"), std::string::npos);
  CompareOptions two;
  two.skip = 2;
  EXPECT_EQ(compare_profiles({slow_start}, {steady}, two).metrics[0].baseline_n, 38u);
}

TEST(Compare, VerdictsScopesAndHeadline) {
  std::mt19937 rng(1);
  std::vector<Profile> base{run(rng, 30, 10, true), run(rng, 30, 10, true)};
  std::vector<Profile> cand{run(rng, 21, 10, false), run(rng, 21, 10, false)};
  Comparison c = compare_profiles(base, cand, CompareOptions{});
  ASSERT_GE(c.metrics.size(), 4u);
  const MetricComparison& it = c.metrics[0];
  EXPECT_EQ(it.name, "iteration");
  EXPECT_EQ(it.baseline_n, 2u * 40);  // 2 runs x 40: no leading iteration over 1.5x the median, no warm-up
  EXPECT_STREQ(to_string(it.verdict), "faster");
  ASSERT_TRUE(it.ratio && it.ci_low && it.ci_high);
  EXPECT_NEAR(*it.ratio, 0.7, 0.03);
  EXPECT_LT(*it.ci_low, *it.ratio);
  EXPECT_GT(*it.ci_high, *it.ratio);
  EXPECT_LT(*it.ci_high, 1.0);
  ASSERT_TRUE(c.speedup);
  EXPECT_NEAR(*c.speedup, 1.0 / 0.7, 0.07);
  EXPECT_STREQ(to_string(c.verdict), "faster");
  auto find = [&](const std::string& name, const std::string& scope) -> const MetricComparison& {
    for (const auto& m : c.metrics)
      if (m.name == name && to_string(m.scope) == scope) return m;
    ADD_FAILURE() << name << " " << scope;
    return c.metrics[0];
  };
  EXPECT_EQ(find("sample", "loop_thread").candidate_median_ns, 0);  // moved off the loop
  EXPECT_STREQ(to_string(find("sample", "loop_thread").verdict), "faster");
  EXPECT_STREQ(to_string(find("sample", "other_threads").verdict), "more");       // hidden, not "slower"
  EXPECT_FALSE(find("sample", "other_threads").ratio.has_value());  // baseline median 0
  EXPECT_STREQ(to_string(find("forward", "loop_thread").verdict), "no significant change");
}

TEST(Compare, ASlowerCandidateSaysSoAndNamesTheStage) {
  std::mt19937 rng(2);
  // run(rng, iteration ms, sample ms, on the loop): the candidate's sample takes 5 ms more.
  std::vector<Profile> base{run(rng, 20, 10, true), run(rng, 20, 10, true)};
  std::vector<Profile> cand{run(rng, 30, 15, true), run(rng, 30, 15, true)};
  Comparison c = compare_profiles(base, cand, CompareOptions{});
  ASSERT_EQ(c.verdict, Verdict::kSlower);
  const std::string s = slower_summary(c);
  EXPECT_EQ(s.rfind("The candidate is SLOWER: iteration ", 0), 0u) << s;
  EXPECT_NE(s.find("the stage that got slower most: sample"), std::string::npos) << s;
  EXPECT_NE(comparison_text(c).find(s), std::string::npos);
  // Faster: nothing to say.
  EXPECT_EQ(slower_summary(compare_profiles(cand, base, CompareOptions{})), "");
  // An op new in that stage (a Python-list gather's aten::select) is its likeliest cause.
  MetricComparison fresh;
  fresh.name = "aten::select";
  fresh.scope = Scope::kLoopThread;
  fresh.category = "op";
  fresh.phase = "sample";
  fresh.candidate_median_ns = fresh.delta_ns = 1880000;
  fresh.verdict = Verdict::kCandidateOnly;
  MetricComparison grown = fresh;
  grown.name = "aten::randint";
  grown.baseline_median_ns = 1000;
  grown.candidate_median_ns = 2450;
  grown.delta_ns = 1450;
  grown.verdict = Verdict::kSlower;
  c.metrics.push_back(grown);
  // Only an op that grew by microseconds: the stage's growth is outside its ops (a sleep, Python
  // between them), which the summary says rather than name that op as the cause.
  EXPECT_NE(slower_summary(c).find("inside it, most is outside its torch ops (+"), std::string::npos) << slower_summary(c);
  EXPECT_NE(slower_summary(c).find("the op that grew most: aten::randint (+1.45 us)"), std::string::npos) << slower_summary(c);
  c.metrics.push_back(fresh);
  EXPECT_NE(slower_summary(c).find("inside it, most: aten::select (+1.88 ms, new in the candidate)"), std::string::npos)
      << slower_summary(c);
}

// An op's change too small to matter, however significant (+2 us in a ~20 ms iteration), is no
// change; one above 0.1 % of the iteration is slower.
TEST(Compare, AnOpsTinyChangeIsNoChange) {
  std::mt19937 rng(5);
  auto side = [&](std::int64_t add_ns, std::int64_t mm_ns) {
    Profile p = run(rng, 20, 5, true);
    StageStats add, mm;
    add.name = "aten::add";
    add.category = mm.category = "op";
    mm.name = "aten::mm";
    p.stages = {add, mm};
    for (auto& it : p.iterations) {
      it.stages["aten::add"] = add_ns + static_cast<std::int64_t>(it.index % 3) * 10;
      it.stages["aten::mm"] = mm_ns + static_cast<std::int64_t>(it.index % 3) * 10;
    }
    return p;
  };
  const Comparison c = compare_profiles({side(10000, 1000000)}, {side(12000, 1050000)}, CompareOptions{});
  for (const auto& m : c.metrics) {
    if (m.name == "aten::add") {
      EXPECT_EQ(m.verdict, Verdict::kNoChange) << m.delta_ns;
    }
    if (m.name == "aten::mm") {
      EXPECT_EQ(m.verdict, Verdict::kSlower) << m.delta_ns;
    }
  }
}

// Slow iterations the median leaves out (a producer's fresh mmap every third batch): the median
// says faster, the mean row (second) says slower, and the headline says they disagree.
TEST(Compare, TheMeanIterationCatchesSlowIterationsTheMedianLeavesOut) {
  auto walls = [](std::vector<double> ms) {
    Profile p;
    for (std::size_t i = 0; i < 60; ++i) {
      IterationStats it;
      it.index = i;
      it.wall_ns = static_cast<std::int64_t>(ms[i % ms.size()] * (1 + 0.01 * static_cast<double>(i % 5)) * 1e6);
      p.iterations.push_back(it);
    }
    return p;
  };
  std::vector<Profile> base{walls({30}), walls({30})};
  std::vector<Profile> cand{walls({28, 28, 90}), walls({28, 28, 90})};
  Comparison c = compare_profiles(base, cand, CompareOptions{});
  ASSERT_GE(c.metrics.size(), 2u);
  EXPECT_EQ(c.metrics[0].verdict, Verdict::kFaster);
  const MetricComparison& mean = c.metrics[1];
  EXPECT_EQ(mean.name, kMeanIteration);
  EXPECT_EQ(mean.statistic, "mean");
  EXPECT_EQ(mean.verdict, Verdict::kSlower);
  ASSERT_TRUE(mean.ratio && mean.ci_low && mean.ci_high);
  EXPECT_NEAR(*mean.ratio, (28 + 28 + 90) / 3.0 / 30.0, 0.03);
  EXPECT_GT(*mean.ci_low, 1.0);
  EXPECT_LT(mean.p_value, 1e-3);
  const std::string s = mean_summary(c);
  EXPECT_NE(s.find("The mean iteration (an epoch's time per iteration, slow iterations included) says slower"), std::string::npos) << s;
  EXPECT_NE(s.find("where the median says faster: the candidate has slow iterations"), std::string::npos) << s;
  EXPECT_NE(comparison_text(c).find(s), std::string::npos);
  // JSON keeps the row and its statistic.
  auto back = comparison_from_json(comparison_to_json(c), "c.json");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(back->metrics[1].statistic, "mean");
  EXPECT_EQ(mean_summary(*back), s);
  // Agreeing verdicts: nothing to say.
  EXPECT_EQ(mean_summary(compare_profiles(base, std::vector<Profile>{walls({20}), walls({20})}, CompareOptions{})), "");
}

// Few iterations: Welch's t-test with Student's t (Welch-Satterthwaite df), as
// scipy.stats.ttest_ind(a, b, equal_var=False) gives it, not "no verdict".
TEST(Compare, TheMeanRowsPValueIsWelchsWithStudentsTForFewIterations) {
  auto walls = [](std::vector<int> ms) {
    Profile p;
    for (std::size_t i = 0; i < ms.size(); ++i) {
      IterationStats it;
      it.index = i;
      it.wall_ns = ms[i] * 1000000LL;
      p.iterations.push_back(it);
    }
    return p;
  };
  CompareOptions opt;
  opt.skip = 0;
  Comparison c = compare_profiles({walls({10, 12, 11, 13, 10, 12, 11, 14})}, {walls({13, 15, 12, 16, 14, 13, 17, 15})}, opt);
  ASSERT_GE(c.metrics.size(), 2u);
  EXPECT_NEAR(c.metrics[1].p_value, 0.003395055654176987, 1e-9);
  EXPECT_EQ(c.metrics[1].verdict, Verdict::kSlower);
  // Equal means: p = 1.
  c = compare_profiles({walls({10, 12, 11})}, {walls({12, 10, 11})}, opt);
  EXPECT_DOUBLE_EQ(c.metrics[1].p_value, 1.0);
}

// num_workers 0 -> 2: the DataLoader's stage is _SingleProcessDataLoaderIter's on one side and
// _MultiProcessingDataLoaderIter's on the other. One stage, compared (not "faster" beside a
// "candidate only" that the slower headline then blamed); the headline names forward.
TEST(Compare, TheDataLoadersStageIsOneWhateverItsIteratorClass) {
  std::mt19937 rng(5);
  const std::string single = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
  const std::string multi = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
  std::vector<Profile> base{run(rng, 30, 5, true)}, cand{run(rng, 34, 5, true)};
  for (auto* side : {&base, &cand})
    for (auto& p : *side) {
      const std::string& name = side == &base ? single : multi;
      p.stages.push_back(StageStats{});
      p.stages.back().name = name;
      for (auto& it : p.iterations) {
        it.stages[name] = side == &base ? 8000000 : 4000000;
        if (side == &cand) it.stages["forward"] += 8000000;
      }
    }
  base[0].stages.push_back(StageStats{});
  base[0].stages.back().name = single;  // and an evaluation loader without workers on both sides
  cand[0].stages.push_back(StageStats{});
  cand[0].stages.back().name = single;
  Comparison c = compare_profiles(base, cand, CompareOptions{});
  const MetricComparison* loader = nullptr;
  for (const auto& m : c.metrics) {
    EXPECT_NE(m.name, single);
    EXPECT_NE(m.name, multi);
    if (m.name == kLoaderNext) loader = &m;
  }
  ASSERT_NE(loader, nullptr);
  EXPECT_EQ(loader->verdict, Verdict::kFaster);
  EXPECT_EQ(loader->delta_ns, -4000000);
  const std::string slow = slower_summary(c);
  EXPECT_NE(slow.find("the stage that got slower most: forward"), std::string::npos) << slow;
  // The same class on both sides keeps its name.
  c = compare_profiles(base, base, CompareOptions{});
  bool kept = false;
  for (const auto& m : c.metrics) kept = kept || m.name == single;
  EXPECT_TRUE(kept);
}

// An op replaced by another (x = feats[idx] -> feats.index_select(0, idx)): each side's own,
// not "0 ns -> 1.3 ms, slower"; and the time outside every stage is a metric of its own.
TEST(Compare, StagesOfOneSideOnlyAreNamedSoAndUnattributedTimeIsCompared) {
  std::mt19937 rng(3);
  std::vector<Profile> base{run(rng, 30, 5, true)}, cand{run(rng, 34, 5, true)};
  for (auto& it : base[0].iterations) {
    it.stages["aten::index"] = 2000000;
    it.unattributed_ns = 1000000;
  }
  for (auto& it : cand[0].iterations) {
    it.stages["aten::index_select"] = 1300000;
    it.unattributed_ns = 5000000;  // a sleep no stage covers
  }
  Comparison c = compare_profiles(base, cand, CompareOptions{});
  auto find = [&](const std::string& name) -> const MetricComparison& {
    for (const auto& m : c.metrics)
      if (m.name == name) return m;
    ADD_FAILURE() << name;
    return c.metrics[0];
  };
  EXPECT_EQ(find("aten::index").verdict, Verdict::kBaselineOnly);
  EXPECT_EQ(find("aten::index_select").verdict, Verdict::kCandidateOnly);
  const MetricComparison& outside = find(kUnattributed);
  EXPECT_EQ(outside.scope, Scope::kLoopThread);
  EXPECT_EQ(outside.verdict, Verdict::kSlower);
  EXPECT_EQ(outside.delta_ns, 4000000);
  const std::string slow = slower_summary(c);
  EXPECT_NE(slow.find("what got slower most is time outside every stage"), std::string::npos) << slow;
  // JSON keeps the one-sided verdicts.
  auto back = comparison_from_json(comparison_to_json(c), "c.json");
  ASSERT_TRUE(back) << back.status().message();
  bool seen = false;
  for (const auto& m : back->metrics) seen = seen || (m.name == "aten::index_select" && m.verdict == Verdict::kCandidateOnly);
  EXPECT_TRUE(seen);
}

// A baseline that traced its hot sampler line by line is slower by that: the text says so.
TEST(Compare, ASideSlowedByLineTracingIsNamed) {
  std::mt19937 rng(4);
  std::vector<Profile> base{run(rng, 30, 5, true)}, cand{run(rng, 20, 5, true)};
  LineStats hot;
  hot.file = "train.py";
  hot.line = 40;
  hot.hits = 100000 * base[0].iterations.size();  // 5.5 ms of a 30 ms iteration
  base[0].lines = {hot};
  Comparison c = compare_profiles(base, cand, CompareOptions{});
  for (auto* side : {&c.baseline, &c.candidate}) {
    RunRecord r;
    describe_run(side == &c.baseline ? base[0] : cand[0], 2, r);
    side->runs.push_back(r);
  }
  EXPECT_EQ(c.baseline.runs[0].line_events, 100000u);
  const std::string t = comparison_text(c);
  EXPECT_NE(t.find("the baseline traced 100000 Python line events per iteration: 5.50 ms or more of tracing"), std::string::npos)
      << t;
  EXPECT_EQ(t.find("the candidate traced"), std::string::npos);
}

TEST(Compare, IdenticalSidesShowNoChange) {
  std::mt19937 rng(2);
  std::vector<Profile> a{run(rng, 30, 5, true)};
  Comparison c = compare_profiles(a, a, CompareOptions{});
  for (const auto& m : c.metrics) EXPECT_STREQ(to_string(m.verdict), "no significant change") << m.name;
}

TEST(Compare, JsonRoundTripAndForeignFiles) {
  std::mt19937 rng(3);
  std::vector<Profile> a{run(rng, 30, 5, true)}, b{run(rng, 25, 5, false)};
  Comparison c = compare_profiles(a, b, CompareOptions{});
  c.baseline.label = "baseline";
  c.baseline.env = {"GNNPROF_PREFETCH=0"};
  c.baseline.runs.push_back(RunRecord{"b-1.json", "./train", 0, "", 38, 30000000, 2000000000});
  c.candidate.runs.push_back(RunRecord{"", "./train", 3, "exit code 3", 0, 0, 1000000});
  const std::string text = comparison_to_json(c);
  auto back = comparison_from_json(text, "c.json");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(comparison_to_json(*back), text);
  // Same inputs, same document (seeded bootstrap).
  Comparison again = compare_profiles(a, b, CompareOptions{});
  again.baseline = c.baseline;
  again.candidate = c.candidate;
  EXPECT_EQ(comparison_to_json(again), text);
  EXPECT_EQ(comparison_from_json(R"({"schema": "gnnprof.profile/1"})", "p.json").status().message(),
            "p.json: not a gnnprof comparison (expected schema \"gnnprof.compare/1\")");
  EXPECT_EQ(comparison_from_json(text.substr(0, 100), "t.json").status().message(), "t.json: truncated JSON");
  EXPECT_NE(comparison_text(c).find("Headline: iteration"), std::string::npos);
}

}  // namespace
}  // namespace gnnprof::reports

namespace gnnprof::reports {
namespace {

// Gradient accumulation 1 vs 4: an iteration (one optimizer step) holds 4 backward passes on
// the candidate's side. The comparison says so, per pass from the means, instead of "SLOWER".
TEST(Compare, UnlikeIterationsUnderGradientAccumulationAreSaidPerPass) {
  auto side = [](int passes, double ms) {
    Profile p;
    p.collectors.push_back(CollectorInfo{"torch-ops", true, "torch 1.13"});
    StageStats b;
    b.name = "backward";
    b.category = "compute";
    for (int i = 0; i < 40; ++i) {
      IterationStats it;
      it.index = static_cast<std::uint64_t>(i);
      it.wall_ns = static_cast<std::int64_t>(ms * passes * (1 + 0.01 * (i % 5)) * 1e6);
      p.iterations.push_back(it);
      b.hits += static_cast<std::uint64_t>(passes);
    }
    p.stages.push_back(b);
    return p;
  };
  Comparison c = compare_profiles({side(1, 10)}, {side(4, 10)}, CompareOptions{});
  ASSERT_TRUE(c.baseline_passes && c.candidate_passes);
  EXPECT_DOUBLE_EQ(*c.candidate_passes, 4.0);
  EXPECT_EQ(c.verdict, Verdict::kSlower);
  EXPECT_EQ(slower_summary(c), "");
  const std::string s = passes_summary(c);
  EXPECT_NE(s.find("1.0 backward passes each in the baseline, 4.0 in the candidate"), std::string::npos) << s;
  EXPECT_NE(s.find("Per backward pass the mean iteration is"), std::string::npos) << s;
  EXPECT_NE(s.find("(x1.000)"), std::string::npos) << s;
  auto back = comparison_from_json(comparison_to_json(c), "c.json");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(passes_summary(*back), s);
  // Alike: nothing to say.
  EXPECT_EQ(passes_summary(compare_profiles({side(4, 10)}, {side(4, 11)}, CompareOptions{})), "");
}

}  // namespace
}  // namespace gnnprof::reports
