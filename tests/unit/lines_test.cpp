// Lines traced from outside C++ (the Python tracer's C ABI): hits and time, what is attributed
// to the current line (stage time split at line changes, copies, gathers, backward charged
// back, GPU time), per-iteration line times, the JSON round trip, the line table and the
// per-line comparison.
#include <time.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "gnnprof/gnnprof_c.h"
#include "gnnprof/profile_io.h"
#include "gnnprof/reports/check.h"
#include "gnnprof/reports/compare.h"
#include "gnnprof/reports/html_reporter.h"
#include "gnnprof/reports/line_table.h"
#include "gnnprof/reports/text_reporter.h"
#include "test_support.h"

namespace gnnprof {
namespace {

const LineStats* find_line(const Profile& p, std::uint32_t line) {
  for (const auto& l : p.lines)
    if (l.line == line) return &l;
  return nullptr;
}

std::int64_t mono_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

TEST(Lines, EventsCountHitsAndContinuationsOnlyAddTime) {
  Profile p = testing::profile_of(testing::quiet_config(), [] {
    const gnnprof_site_t a = gnnprof_line_site("train.py", 10, "train", "x = f()");
    const gnnprof_site_t b = gnnprof_line_site("train.py", 11, "train", "y = g(x)");
    EXPECT_EQ(gnnprof_line_site("train.py", 10, "train", "x = f()"), a);  // interned
    for (int i = 0; i < 3; ++i) {
      const std::uint64_t t0 = gnnprof_set_line(a);
      testing::spin_ns(20000);
      const std::uint64_t t1 = gnnprof_set_line(b);
      gnnprof_line_event(a, t0, t1, 1);
      testing::spin_ns(10000);
      const std::uint64_t t2 = gnnprof_set_line(0);
      gnnprof_line_event(b, t1, t2, 1);
    }
    // A generator resumed at its yield: more time for the line, no new hit.
    const std::uint64_t t0 = gnnprof_set_line(b);
    testing::spin_ns(10000);
    gnnprof_line_event(b, t0, gnnprof_set_line(0), 0);
  });
  const LineStats* a = find_line(p, 10);
  const LineStats* b = find_line(p, 11);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->hits, 3u);
  EXPECT_EQ(b->hits, 3u);
  EXPECT_EQ(a->code, "x = f()");
  EXPECT_EQ(a->function, "train");
  EXPECT_GE(a->total_ns, 60000);
  EXPECT_GE(b->total_ns, 40000);  // 3 hits of 10 us and the continuation
}

TEST(Lines, TimeUnderALineAndItsCallerRoundTrip) {
  // A loop's header resumes a traced generator twice: the generator's line runs under it.
  Profile p = testing::profile_of(testing::quiet_config(), [] {
    const gnnprof_site_t header = gnnprof_line_site("train.py", 10, "main", "for x in batches():");
    const gnnprof_site_t body = gnnprof_line_site("train.py", 3, "batches", "yield sample()");
    for (int i = 0; i < 2; ++i) {
      const std::uint64_t t0 = gnnprof_set_line(header);
      testing::spin_ns(5000);
      const std::uint64_t t1 = gnnprof_set_line(body | GNNPROF_DATA_LINE);
      testing::spin_ns(20000);
      const std::uint64_t t2 = gnnprof_set_line(header);
      gnnprof_line_event_nested(body, t1, t2, 1, 0, header | GNNPROF_DATA_LINE);
      gnnprof_line_event_nested(header, t0, gnnprof_set_line(0), 1, t2 - t1, 0);
    }
  });
  const LineStats* header = find_line(p, 10);
  const LineStats* body = find_line(p, 3);
  ASSERT_NE(header, nullptr);
  ASSERT_NE(body, nullptr);
  EXPECT_GE(header->nested_ns, 40000);
  EXPECT_LE(header->nested_ns, body->total_ns);
  EXPECT_LE(header->total_ns - header->nested_ns, header->total_ns / 2);  // its own: 2 x 5 us and the calls
  EXPECT_EQ(body->nested_ns, 0);
  EXPECT_EQ(header->caller, -1);
  ASSERT_GE(body->caller, 0);
  EXPECT_EQ(&p.lines.at(static_cast<std::size_t>(body->caller)), header);
  auto back = profile_from_json(profile_to_json(p), "mem");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(find_line(*back, 10)->nested_ns, header->nested_ns);
  EXPECT_EQ(find_line(*back, 3)->caller, body->caller);
  // A caller out of range: a file that is not a profile gnnprof wrote.
  const std::string foreign = std::regex_replace(profile_to_json(p), std::regex("\"caller\": *[0-9]+"), "\"caller\": 7");
  ASSERT_NE(foreign, profile_to_json(p));
  auto bad = profile_from_json(foreign, "mem");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("caller"), std::string::npos) << bad.status().message();
}

TEST(Lines, AFunctionRunUnderATracedStatementSaysWhichInBothReports) {
  Profile p;
  auto line = [&](const char* fn, std::uint32_t n, const char* code, std::int64_t caller) {
    p.lines.push_back(testing::train_py_line(fn, n, code, 10, 1'000'000));
    p.lines.back().caller = caller;
  };
  line("batches", 3, "ids = sample(n)", 2);
  line("batches", 4, "yield ids", 2);
  line("main", 20, "for ids in batches(n):", -1);
  line("main", 21, "loss = model(ids)", -1);
  const reports::LineTable t = reports::build_line_table(p, {});
  ASSERT_EQ(t.blocks.size(), 2u);
  const auto& gen = t.blocks[0].function == "batches" ? t.blocks[0] : t.blocks[1];
  const auto& loop = t.blocks[0].function == "batches" ? t.blocks[1] : t.blocks[0];
  const std::string note = reports::caller_note(p, gen);
  EXPECT_EQ(note, "run under train.py:20 `for ids in batches(n):` in main(), whose Time includes this function's (a "
                  "line's time includes what it calls, as in line_profiler)");
  EXPECT_EQ(reports::caller_note(p, loop), "");
  std::ostringstream text;
  ASSERT_TRUE(reports::TextReporter({}).render(p, text));
  EXPECT_NE(text.str().find("(" + note + ")"), std::string::npos) << text.str();
  std::ostringstream html;
  ASSERT_TRUE(reports::HtmlReporter({}).render(p, html));
  EXPECT_NE(html.str().find("run under train.py:20 `for ids in batches(n):` in main()"), std::string::npos);
}

TEST(Lines, OutermostStageTimeIsSplitBetweenTheLinesItSpans) {
  Profile p = testing::profile_of(testing::quiet_config(), [] {
    const gnnprof_site_t l1 = gnnprof_line_site("t.py", 1, "f", "out = model(x)");
    const gnnprof_site_t l2 = gnnprof_line_site("t.py", 2, "f", "loss = crit(out)");
    const gnnprof_site_t fwd = gnnprof_stage_site("forward", nullptr);
    const gnnprof_site_t op = gnnprof_stage_site("aten::mm", "op");
    gnnprof_set_line(l1);
    gnnprof_stage_begin(fwd);  // a phase that stays open across lines
    gnnprof_stage_begin(op);
    testing::spin_ns(30000);
    gnnprof_stage_end();
    gnnprof_set_line(l2);  // 30 us of forward so far belong to line 1
    testing::spin_ns(20000);
    gnnprof_stage_end();   // ... and these 20 us to line 2
    gnnprof_set_line(0);
  });
  const LineStats* l1 = find_line(p, 1);
  const LineStats* l2 = find_line(p, 2);
  ASSERT_NE(l1, nullptr);
  ASSERT_NE(l2, nullptr);
  ASSERT_EQ(l1->stages.count("forward"), 1u);
  ASSERT_EQ(l2->stages.count("forward"), 1u);
  EXPECT_GE(l1->stages.at("forward"), 30000);
  EXPECT_GE(l2->stages.at("forward"), 20000);
  // The two parts are the whole stage: nothing lost or counted twice at the line change.
  const StageStats* fwd = testing::find_stage(p, "forward");
  ASSERT_NE(fwd, nullptr);
  EXPECT_NEAR(static_cast<double>(l1->stages.at("forward") + l2->stages.at("forward")),
              static_cast<double>(fwd->total_ns), 2.0);
  EXPECT_EQ(l1->stages.count("aten::mm"), 0u);  // nested stages are inside their phase's time
}

// A phase that ends at the loop's next line (gnnprof_watch_next_line: the torch observer's data
// ops) ends at the line change, however late its watcher gets to it (preempted there).
TEST(Lines, APhaseEndedByTheNextLineEndsAtTheLineChange) {
  static gnnprof_site_t data = 0;
  Profile p = testing::profile_of(testing::quiet_config(), [] {
    const gnnprof_site_t l1 = gnnprof_line_site("t.py", 1, "f", "y = torch.randint(0, 4, (256,))");
    const gnnprof_site_t l2 = gnnprof_line_site("t.py", 2, "f", "busy(0.002)");
    data = gnnprof_stage_site("ops (no grad)", "data");
    const std::uint64_t t0 = gnnprof_set_line(l1);
    gnnprof_stage_begin(data);
    testing::spin_ns(30000);
    gnnprof_watch_next_line([] {
      testing::spin_ns(2000000);  // the watcher, late
      gnnprof_stage_end();
    });
    const std::uint64_t t1 = gnnprof_set_line(l2);
    gnnprof_line_event(l1, t0, t1, 1);
    testing::spin_ns(20000);
    gnnprof_line_event(l2, t1, gnnprof_set_line(0), 1);
  });
  const LineStats* l1 = find_line(p, 1);
  const LineStats* l2 = find_line(p, 2);
  ASSERT_NE(l1, nullptr);
  ASSERT_NE(l2, nullptr);
  ASSERT_EQ(l1->stages.count("ops (no grad)"), 1u);
  EXPECT_GE(l1->stages.at("ops (no grad)"), 30000);
  EXPECT_LT(l1->stages.at("ops (no grad)"), 1000000);
  EXPECT_EQ(l2->stages.count("ops (no grad)"), 0u);
  const StageStats* st = testing::find_stage(p, "ops (no grad)");
  ASSERT_NE(st, nullptr);
  EXPECT_LT(st->total_ns, 1000000);  // the stage itself ends at the line change too
}

TEST(Lines, CopiesGathersAndBackwardGoToTheCurrentLine) {
  Profile p = testing::profile_of(testing::quiet_config(), [] {
    const gnnprof_site_t lazy = gnnprof_line_site("t.py", 7, "train", "x = mfgs[0].srcdata['x']");
    const gnnprof_site_t fwd = gnnprof_line_site("t.py", 8, "train", "y_hat = model(mfgs, x)");
    const gnnprof_site_t bwd_stage = gnnprof_stage_site("backward", "compute");
    const std::uint64_t t0 = gnnprof_set_line(lazy);
    gnnprof_materialize(100, 25600);
    gnnprof_transfer(25600, GNNPROF_H2D, GNNPROF_PAGEABLE, GNNPROF_SYNC, 0);
    const std::uint64_t t1 = gnnprof_set_line(fwd);
    gnnprof_line_event(lazy, t0, t1, 1);
    const std::int64_t end = mono_now();
    gnnprof_line_charge(fwd, bwd_stage, end - 50000, end);
    {
      // A GNNPROF_LINE open on the thread takes precedence over the traced line.
      GNNPROF_LINE(gnnprof_transfer(4096, GNNPROF_H2D, GNNPROF_PINNED, GNNPROF_ASYNC, 0));
    }
    gnnprof_line_event(fwd, t1, gnnprof_set_line(0), 1);
    gnnprof_transfer(1, GNNPROF_H2D, GNNPROF_PINNED, GNNPROF_ASYNC, 0);  // no line
  });
  ASSERT_EQ(p.materializations.size(), 1u);
  EXPECT_EQ(p.materializations[0].line, 7u);
  EXPECT_EQ(p.materializations[0].bytes, 25600u);
  std::uint64_t at7 = 0, at8 = 0, elsewhere = 0;
  for (const auto& t : p.transfers) (t.line == 7 ? at7 : t.line == 8 ? at8 : elsewhere) += t.bytes;
  EXPECT_EQ(at7, 25600u);
  EXPECT_EQ(at8, 0u);
  EXPECT_EQ(elsewhere, 4096u + 1u);
  const LineStats* f = find_line(p, 8);
  ASSERT_NE(f, nullptr);
  EXPECT_GE(f->backward_ns, 50000);
  EXPECT_LT(f->backward_ns, 1000000);
  ASSERT_NE(find_line(p, 7), nullptr);
  const reports::LineExtras e = reports::line_extras(p, *find_line(p, 7));
  EXPECT_EQ(e.copied_pageable, 25600u);
  EXPECT_EQ(e.gathered, 25600u);
  EXPECT_EQ(reports::copied_cell(e), "25.0 KiB pageable");
}

TEST(Lines, IterationsHoldTheTimeOfEachLine) {
  Profile p = testing::profile_of(testing::quiet_config(), [] {
    const gnnprof_site_t a = gnnprof_line_site("t.py", 3, "loop", "a()");
    const gnnprof_site_t b = gnnprof_line_site("t.py", 4, "loop", "b()");
    for (int i = 0; i < 4; ++i) {
      gnnprof_step();
      std::uint64_t t0 = gnnprof_set_line(a);
      testing::spin_ns(10000 * (i + 1));
      std::uint64_t t1 = gnnprof_set_line(b);
      gnnprof_line_event(a, t0, t1, 1);
      if (i % 2 == 0) {
        testing::spin_ns(5000);
      }
      gnnprof_line_event(b, t1, gnnprof_set_line(0), 1);
    }
    gnnprof_step_end();
  });
  ASSERT_EQ(p.iterations.size(), 4u);
  std::uint32_t ia = 0;
  for (std::uint32_t k = 0; k < p.lines.size(); ++k)
    if (p.lines[k].line == 3) ia = k;
  for (std::size_t i = 0; i < 4; ++i) {
    ASSERT_EQ(p.iterations[i].lines.count(ia), 1u) << i;
    EXPECT_GE(p.iterations[i].lines.at(ia), static_cast<std::int64_t>(10000 * (i + 1))) << i;
  }
  // Round trip through JSON: the index keys and the line attribution survive.
  auto back = profile_from_json(profile_to_json(p), "mem");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(back->iterations[2].lines, p.iterations[2].lines);
  EXPECT_EQ(profile_to_json(*back), profile_to_json(p));
}

TEST(Lines, HitsInIterationsWithoutObservedOpsAreCountedApart) {
  // Iteration sampling: the observer marks the iterations whose ops it does not observe.
  Profile p = testing::profile_of(testing::quiet_config(), [] {
    const gnnprof_site_t a = gnnprof_line_site("t.py", 3, "loop", "x = batch.srcdata['x']");
    for (int i = 0; i < 6; ++i) {
      gnnprof_step_flags(i % 3 == 0 ? 0u : GNNPROF_STEP_OPS_UNOBSERVED);
      const std::uint64_t t0 = gnnprof_set_line(a);
      if (i % 3 == 0) gnnprof_materialize(10, 4000);  // seen only where ops are observed
      testing::spin_ns(5000);
      gnnprof_line_event(a, t0, gnnprof_set_line(0), 1);
    }
    gnnprof_step_end();
  });
  const LineStats* a = find_line(p, 3);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->hits, 6u);
  EXPECT_EQ(a->unobserved_hits, 4u);
  EXPECT_GT(a->unobserved_ns, 0);  // the time of those 4 hits
  EXPECT_LT(a->unobserved_ns, a->total_ns);
  // The line's gathers, seen in 2 of its 6 hits, are scaled to all of them and marked.
  const reports::LineExtras e = reports::line_extras(p, *a);
  EXPECT_EQ(e.gathered, 24000u);
  EXPECT_TRUE(e.estimated);
  EXPECT_STREQ(reports::estimate_mark(e), "~");
  auto back = profile_from_json(profile_to_json(p), "mem");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(find_line(*back, 3)->unobserved_hits, 4u);
  EXPECT_EQ(find_line(*back, 3)->unobserved_ns, a->unobserved_ns);
}

// Another thread's lines (a producer thread's) are drained apart from the loop's marks: whether
// their iteration's ops were observed is read from the iteration each event falls in, not from
// the loop thread's latest mark consumed.
TEST(Lines, AnotherThreadsHitsAreUnobservedByTheIterationTheyFallIn) {
  Profile p = testing::profile_of(testing::quiet_config(), [] {
    const gnnprof_site_t loop = gnnprof_line_site("t.py", 10, "train", "batch = q.get()");
    const gnnprof_site_t producer = gnnprof_line_site("t.py", 3, "sample", "x = feats[hood]");
    for (int i = 0; i < 6; ++i) {
      gnnprof_step_flags(i % 3 == 0 ? 0u : GNNPROF_STEP_OPS_UNOBSERVED);
      const std::uint64_t t0 = gnnprof_set_line(loop);
      std::thread([producer] {
        const std::uint64_t b = gnnprof_set_line(producer);
        testing::spin_ns(20000);
        gnnprof_line_event(producer, b, gnnprof_set_line(0), 1);
      }).join();
      gnnprof_line_event(loop, t0, gnnprof_set_line(0), 1);
      // Drained in passes of two iterations: the producer's events of the first are consumed
      // after the loop's second mark.
      if (i % 2 == 1) (void)gnnprof_flush();
    }
    gnnprof_step_end();
  });
  const LineStats* produced = find_line(p, 3);
  ASSERT_NE(produced, nullptr);
  EXPECT_EQ(produced->hits, 6u);
  EXPECT_EQ(produced->unobserved_hits, 4u);
  EXPECT_GT(produced->unobserved_ns, 0);
  EXPECT_LT(produced->unobserved_ns, produced->total_ns);
  EXPECT_EQ(find_line(p, 10)->unobserved_hits, 4u);
}

/// Line n of train() in /nowhere/t.py, with its hits (some in unobserved iterations).
LineStats train_line(std::uint32_t n, std::uint64_t hits, std::uint64_t unobserved) {
  LineStats l;
  l.file = "/nowhere/t.py";
  l.line = n;
  l.function = "train";
  l.code = "stmt" + std::to_string(n);
  l.hits = hits;
  l.unobserved_hits = unobserved;
  return l;
}

TEST(LineTable, ExtrasOfPartlyObservedLinesAreScaledAndMarked) {
  Profile p;
  auto line = [&](std::uint32_t n, std::uint64_t hits, std::uint64_t unobserved) {
    LineStats l = train_line(n, hits, unobserved);
    l.total_ns = 1000000;
    l.backward_ns = 300000;
    l.gpu_ns = 50000;
    l.stages = {{"sync", 20000}, {"materialize", 40000}, {"forward", 100000}, {"enumerate(DataLoader)#It.__next__", 5000}};
    return l;
  };
  p.stages = {StageStats{}, StageStats{}, StageStats{}, StageStats{}};
  p.stages[3].name = "enumerate(DataLoader)#It.__next__";  // a scope: recorded in every iteration
  p.stages[3].category = "data";
  p.stages[0].name = "sync";
  p.stages[0].category = "sync";
  p.stages[1].name = "materialize";
  p.stages[1].category = "data";
  p.stages[2].name = "forward";
  p.stages[2].category = "compute";
  p.lines = {line(1, 10, 0), line(2, 10, 6), line(3, 10, 10)};
  p.transfers = {TransferStats{"", "/nowhere/t.py", 2, Direction::kH2D, HostMemory::kPinned, CopyMode::kAsync, 4, 1000, 0}};
  p.materializations = {MaterializationStats{"", "", "/nowhere/t.py", 2, 4, 40, 800}};
  const reports::LineExtras all = reports::line_extras(p, p.lines[0]);
  EXPECT_FALSE(all.estimated);
  EXPECT_EQ(all.data_ns, 45000);  // its data stages' time; not the forward's, not the sync's
  EXPECT_EQ(all.backward_ns, 300000);
  const reports::LineExtras part = reports::line_extras(p, p.lines[1]);  // 4 of 10 hits observed
  EXPECT_TRUE(part.estimated);
  EXPECT_EQ(part.backward_ns, 750000);
  EXPECT_EQ(part.gpu_ns, 125000);
  EXPECT_EQ(part.wait_ns, 50000);
  EXPECT_EQ(part.data_ns, 105000);  // the observer's materialize scaled (x 2.5), the loader's scope not
  EXPECT_EQ(part.copied_pinned, 2500u);
  EXPECT_EQ(part.gathered, 2000u);
  // A wait is part of the line's time: scaled by the time of the observed hits where the
  // profile has it (a long wait in an observed hit: 90 % of the time was unobserved), and never
  // more than the line's time.
  LineStats timed = p.lines[1];
  timed.unobserved_ns = 900000;
  EXPECT_EQ(reports::line_extras(p, timed).wait_ns, 200000);
  timed.unobserved_ns = 0;
  timed.total_ns = 30000;
  EXPECT_EQ(reports::line_extras(p, timed).wait_ns, 30000) << "scaled by hits, capped at the line's time";
  // Backward by the time of the line that runs it, where one has it: the observed hits include
  // the warm-up's slow backward passes and the observer's cost. At that line's unobserved pace
  // (its Time: 400 us + 4 hits at 66.7 us, of 600 us observed: x1.11, not x2.5 by hits; on the
  // H200 a PyG loop's forward line showed 183 ms of backward beside loss.backward()'s 89 ms),
  // and never more than the hits' ratio (1/5 of it in 4 of 10, not slowed: x2.5, not x5).
  {
    Profile q = p;
    LineStats bw = q.lines[0];
    bw.line = 9;
    bw.code = "loss.backward()";
    bw.hits = 10;
    bw.unobserved_hits = 6;
    bw.total_ns = 1000000;
    bw.unobserved_ns = 800000;
    bw.backward_ns = 0;
    bw.stages = {{"backward", 190000}};  // most of its observed time
    q.lines.push_back(bw);
    EXPECT_EQ(reports::line_extras(q, q.lines[1]).backward_ns, 750000);  // capped at the hits' ratio
    q.lines.back().unobserved_ns = 400000;
    q.lines.back().stages = {{"backward", 500000}};
    EXPECT_NEAR(reports::line_extras(q, q.lines[1]).backward_ns, 333333, 1);
    EXPECT_LE(reports::line_extras(q, q.lines[1]).backward_ns, reports::line_time(q.lines.back()));
  }
  // No observed hit: nothing to scale from; the figures stay as recorded, and are unknown.
  const reports::LineExtras none = reports::line_extras(p, p.lines[2]);
  EXPECT_FALSE(none.estimated);
  EXPECT_TRUE(none.unknown);
  EXPECT_FALSE(part.unknown);
  EXPECT_EQ(none.backward_ns, 300000);
  const reports::LineTable t = reports::build_line_table(p, {});
  EXPECT_TRUE(t.estimated);
  EXPECT_NE(reports::extra_columns_legend(t).find("~ = estimated"), std::string::npos);
  EXPECT_NE(reports::extra_columns_legend(t).find("? = not known"), std::string::npos);
  // Rendered: the estimated row's cells carry "~" (text) and why (HTML); the others do not.
  p.iterations = {IterationStats{}, IterationStats{}};
  p.iterations[1].ops_observed = false;
  std::ostringstream text, html;
  ASSERT_TRUE(reports::TextReporter({}).render(p, text));
  ASSERT_TRUE(reports::HtmlReporter({}).render(p, html));
  const std::string s = text.str();
  EXPECT_NE(s.find("~750.0"), std::string::npos) << s;
  EXPECT_NE(s.find("~2.0 KiB"), std::string::npos) << s;
  EXPECT_EQ(s.find("~300.0"), std::string::npos) << s;
  // Line 3 (no hit observed): its empty cells say "not known".
  const std::size_t row3 = s.find("stmt3", s.find("== Line table =="));  // not the summary's mention
  ASSERT_NE(row3, std::string::npos);
  const std::string line3 = s.substr(s.rfind('\n', row3) + 1, row3 - s.rfind('\n', row3) - 1);
  EXPECT_NE(line3.find(" ?"), std::string::npos) << line3;
  EXPECT_NE(s.find("from the 1 of 2 iterations whose ops it observed"), std::string::npos) << s;
  EXPECT_NE(html.str().find("estimated: torch ops observed in 4 of the line&apos;s 10 hits"), std::string::npos);
  // A line under 0.1% of its function (`total = 0` between epochs): blank, not "?".
  LineStats tiny = train_line(4, 2, 2);
  tiny.total_ns = 2000;
  p.lines.push_back(tiny);
  const reports::LineTable u = reports::build_line_table(p, {});
  for (const reports::LineRow& r : u.blocks.at(0).rows) EXPECT_EQ(r.extras.unknown, r.line == 3) << r.line;
}

// A function whose lines ran on a prefetcher's thread: the note says their Data is hidden.
TEST(LineTable, LinesOffTheLoopThreadAreSaidToBeHidden) {
  Profile p;
  LineStats a = train_line(1, 10, 0), b = train_line(2, 10, 0);
  a.function = b.function = "collate";
  a.total_ns = 900;
  b.total_ns = 100;
  p.lines = {a, b};
  EXPECT_EQ(reports::off_loop_note(reports::build_line_table(p, {}).blocks.at(0)), "");
  p.lines[0].off_loop_ns = 900;
  p.lines[1].off_loop_ns = 50;
  EXPECT_EQ(reports::off_loop_note(reports::build_line_table(p, {}).blocks.at(0)),
            "95% of these lines' time ran on threads other than the loop's (a prefetcher's producer, or the program's "
            "own): their Data is hidden behind the loop's iterations, not exposed");
  p.lines[0].off_loop_ns = 400;  // under half: nothing to say
  EXPECT_EQ(reports::off_loop_note(reports::build_line_table(p, {}).blocks.at(0)), "");
}

TEST(LineTable, LinesTheObserverSlowedAreNamedWithBothPaces) {
  Profile p;
  auto line = [&](std::uint32_t n, std::uint64_t hits, std::uint64_t unobserved, std::int64_t total, std::int64_t unobserved_ns) {
    LineStats l = train_line(n, hits, unobserved);
    l.total_ns = total;
    l.unobserved_ns = unobserved_ns;
    return l;
  };
  // Line 1: 4 observed hits of 3 ms, 16 unobserved of 1 ms; line 2: the same pace in both.
  p.lines = {line(1, 20, 16, 28'000'000, 16'000'000), line(2, 20, 16, 20'000'000, 16'000'000)};
  const reports::LineTable t = reports::build_line_table(p, {});
  ASSERT_EQ(t.blocks.size(), 1u);
  const std::string note = reports::observer_pace_note(t.blocks[0]);
  EXPECT_NE(note.find("line 1 3.00 ms per hit against 1.00 ms in the other 16 of its 20 hits."), std::string::npos) << note;
  EXPECT_EQ(note.find("line 2"), std::string::npos) << note;
  EXPECT_NE(note.find("% Time of the function's time at that pace, 40.0 ms of the 48.0 ms measured"), std::string::npos) << note;
  // Its Time and Per Hit at the unobserved pace (20 ms, 1 ms), marked; % Time of the 40 ms.
  EXPECT_EQ(reports::line_time(p.lines[0]), 20'000'000);
  EXPECT_EQ(reports::line_time(p.lines[1]), 20'000'000);
  std::ostringstream text;
  ASSERT_TRUE(reports::TextReporter({}).render(p, text));
  EXPECT_NE(text.str().find("(iteration sampling: these lines' hits"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("     1        20     ~20000.0  ~1000.0     50.0"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("     2        20      20000.0   1000.0     50.0"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("Total time: 0.048 s"), std::string::npos) << text.str();  // measured, as line_profiler's
  // Every hit observed, or too few unobserved hits for a pace: nothing to say.
  p.lines = {line(1, 20, 0, 28'000'000, 0), line(2, 20, 3, 20'000'000, 1'000'000)};
  EXPECT_EQ(reports::observer_pace_note(reports::build_line_table(p, {}).blocks[0]), "");
}

// graphsage-simple's loop: one line, `loss = model.loss(nodes, labels)`, takes 90 % of the loop
// in the model, whose functions are not traced: the table names the file that defines the
// first of them (the tracer saw it run under the line) and how to trace it.
TEST(LineTable, ALineTakingMostOfItsFunctionInUntracedCallsSaysHowToTraceThem) {
  Profile p;
  auto line = [&](std::uint32_t n, const std::string& code, std::int64_t total, std::map<std::string, std::int64_t> stages) {
    LineStats l = train_line(n, 10, 0);
    l.code = code;
    l.total_ns = total;
    l.stages = std::move(stages);
    return l;
  };
  p.lines = {line(1, "loss = model.loss(nodes, labels)", 90'000'000, {{"forward", 60'000'000}}),
             line(2, "loss.backward()", 10'000'000, {{"backward", 10'000'000}})};
  // Only torch's own modules ran under it (no user callee): the op tables have them.
  EXPECT_EQ(reports::callee_hint(reports::build_line_table(p, {})), "");
  p.lines[0].callee_file = "/src/models/sage.py";
  p.lines[0].callee_function = "SupervisedGraphSage.loss";
  const std::string hint = reports::callee_hint(reports::build_line_table(p, {}));
  EXPECT_EQ(hint, "Line 1 of t.py takes 90% of train() in what it calls, which is not traced: it runs "
                  "SupervisedGraphSage.loss() of sage.py. `gnnprof run --lines auto --lines sage.py -- ...` traces "
                  "every function of sage.py as well (--lines sage.py:SupervisedGraphSage.loss that one alone).");
  EXPECT_EQ(reports::callee_hint(reports::build_line_table(p, {}), true),
            "t.py:1 holds 90% of train() in calls not traced (SupervisedGraphSage.loss() of sage.py): gnnprof run "
            "--lines auto --lines sage.py -- ... traces them");
  std::ostringstream text;
  ASSERT_TRUE(reports::TextReporter({}).render(p, text));
  EXPECT_NE(text.str().find(hint), std::string::npos) << text.str();
  std::ostringstream html;
  ASSERT_TRUE(reports::HtmlReporter({}).render(p, html));
  EXPECT_NE(html.str().find("<p id=callee-hint>Line 1 of t.py"), std::string::npos);

  // What it calls is traced (a function of comparable time): nothing to say.
  LineStats callee = line(7, "return self.forward(nodes)", 88'000'000, {{"forward", 60'000'000}});
  callee.function = "Model.loss";
  p.lines.push_back(callee);
  EXPECT_EQ(reports::callee_hint(reports::build_line_table(p, {})), "");
  p.lines.pop_back();
  // A traced caller (the script's `loss = train()`, holding the line's time and more) does not
  // hide it; the named callee traced after all (a later --lines) does, whatever its time.
  LineStats caller = line(30, "train()", 95'000'000, {});
  caller.function = "<module>";
  p.lines.push_back(caller);
  EXPECT_EQ(reports::callee_hint(reports::build_line_table(p, {})), hint);
  p.lines.pop_back();
  LineStats named = line(3, "return self.net(x)", 20'000'000, {{"forward", 20'000'000}});
  named.file = "/src/models/sage.py";
  named.function = "SupervisedGraphSage.loss";
  p.lines.push_back(named);
  EXPECT_EQ(reports::callee_hint(reports::build_line_table(p, {})), "");
  p.lines.pop_back();
  // Mostly backward or the optimizer (torch's own work), or no call, or under half: nothing.
  p.lines[0].stages = {{"backward", 50'000'000}};
  EXPECT_EQ(reports::callee_hint(reports::build_line_table(p, {})), "");
  p.lines[0].stages = {{"enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 80'000'000}};
  EXPECT_EQ(reports::callee_hint(reports::build_line_table(p, {})), "");  // waiting for its workers
  p.lines[0].stages = {{"forward", 60'000'000}};
  p.lines[0].code = "x = y";
  EXPECT_EQ(reports::callee_hint(reports::build_line_table(p, {})), "");
  p.lines[0].code = "loss = model.loss(nodes, labels)";
  p.lines[0].total_ns = 9'000'000;
  EXPECT_EQ(reports::callee_hint(reports::build_line_table(p, {})), "");
}

TEST(Lines, WhereTracingBeganInARunningFrameIsCountedAndSaid) {
  Profile p = testing::profile_of(testing::quiet_config(), [] {
    const gnnprof_site_t step = gnnprof_line_site("train.py", 12, "train", "opt.step()");
    const gnnprof_site_t x = gnnprof_line_site("train.py", 10, "train", "x = next(it)");
    // The loop, adopted at its step line (its first pass up to there untraced), then a pass.
    std::uint64_t t0 = gnnprof_set_line(step);
    std::uint64_t t1 = gnnprof_set_line(x);
    gnnprof_line_event(step, t0, t1, 1 | GNNPROF_LINE_BEGAN);
    t0 = gnnprof_set_line(step);
    gnnprof_line_event(x, t1, t0, 1);
    gnnprof_line_event(step, t0, gnnprof_set_line(0), 1);
  });
  const LineStats* step = find_line(p, 12);
  const LineStats* x = find_line(p, 10);
  ASSERT_NE(step, nullptr);
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(step->hits, 2u);  // the flag is no hit of its own
  EXPECT_EQ(step->began_running, 1u);
  EXPECT_EQ(x->began_running, 0u);
  const reports::LineTable t = reports::build_line_table(p, {});
  ASSERT_EQ(t.blocks.size(), 1u);
  const std::string note = reports::began_note(t.blocks[0]);
  EXPECT_NE(note.find("tracing began at line 12 in a call already running"), std::string::npos) << note;
  EXPECT_NE(note.find("such as a loop's first pass up to line 12"), std::string::npos) << note;
  EXPECT_NE(note.find("where the training loop is found at its first optimizer step"), std::string::npos) << note;
  {  // The same function on a thread beside the loop: a producer's, found at a gather.
    Profile producer = p;
    for (auto& l : producer.lines) l.off_loop_ns = l.total_ns;
    const std::string beside = reports::began_note(reports::build_line_table(producer, {}).blocks.at(0));
    EXPECT_NE(beside.find("as it does where a producer thread's function is found at its first feature gather or "
                          "hand-over of a batch (Queue.put, Event.set): the statements that call ran before are not counted"),
              std::string::npos)
        << beside;
    // In a producer process's own profile: found where it first hands a batch over.
    producer.run.feeds_pid = 4242;
    const std::string process = reports::began_note(reports::build_line_table(producer, {}).blocks.at(0));
    EXPECT_NE(process.find("as it does where a producer process's function is found at its first "
                           "multiprocessing.Queue.put: "),
              std::string::npos)
        << process;
    const std::string gist = reports::run_summary(reports::make_report(producer, {}));
    EXPECT_EQ(gist.rfind("  a producer process of pid 4242: the batches it makes feed that process's loop", 0), 0u) << gist;
  }
  std::ostringstream text;
  ASSERT_TRUE(reports::TextReporter({}).render(p, text));
  EXPECT_NE(text.str().find("(" + note + ")"), std::string::npos) << text.str();
  // A table without such a row says nothing.
  p.lines[0].began_running = p.lines[1].began_running = 0;
  EXPECT_EQ(reports::began_note(reports::build_line_table(p, {}).blocks[0]), "");
}

TEST(Lines, JsonKeepsLineAttributionAndRejectsBadLineIndices) {
  Profile p;
  LineStats l;
  l.file = "t.py";
  l.line = 5;
  l.function = "f";
  l.code = "y = m(x)";
  l.hits = 2;
  l.total_ns = 100;
  l.max_ns = 60;
  l.stages = {{"forward", 80}};
  l.backward_ns = 70;
  l.gpu_ns = 30;
  p.lines.push_back(l);
  IterationStats it;
  it.lines = {{0, 50}};
  p.iterations.push_back(it);
  auto back = profile_from_json(profile_to_json(p), "mem");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(back->lines[0].stages, l.stages);
  EXPECT_EQ(back->lines[0].backward_ns, 70);
  EXPECT_EQ(back->lines[0].gpu_ns, 30);
  std::string text = profile_to_json(p);
  const std::string key = "\"lines\": {\n        \"0\": 50";
  ASSERT_NE(text.find(key), std::string::npos) << text;
  text.replace(text.find(key), key.size(), "\"lines\": {\n        \"7\": 50");
  auto bad = profile_from_json(text, "bad.json");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("line index out of range"), std::string::npos) << bad.status().message();
}

/// A profile of `n` iterations whose line i (by code) took ns_of(code, iteration).
Profile lines_profile(const std::vector<std::pair<std::uint32_t, std::string>>& lines, int n,
                      const std::function<std::int64_t(const std::string&, int)>& ns_of) {
  Profile p;
  for (const auto& [num, code] : lines) {
    LineStats l;
    l.file = "/somewhere/train.py";
    l.line = num;
    l.function = "train";
    l.code = code;
    l.hits = static_cast<std::uint64_t>(n);
    p.lines.push_back(l);
  }
  for (int i = 0; i < n; ++i) {
    IterationStats it;
    it.index = static_cast<std::uint64_t>(i);
    it.wall_ns = 1000000;
    for (std::uint32_t k = 0; k < p.lines.size(); ++k) it.lines[k] = ns_of(p.lines[k].code, i);
    p.iterations.push_back(it);
  }
  return p;
}

TEST(LineCompare, MatchesByTextPairsEditsAndListsOneSidedLines) {
  auto jitter = [](int i) { return static_cast<std::int64_t>(i % 5) * 1000; };
  Profile base = lines_profile({{10, "for mfgs in loader:"}, {11, "x = mfgs[0].srcdata['x']"}, {12, "y_hat = model(mfgs, x)"},
                                {13, "loss = F.cross_entropy(y_hat, y)"}},
                               40, [&](const std::string& c, int i) {
                                 return (c.find("srcdata") != std::string::npos ? 5000000 : 1000000) + jitter(i);
                               });
  // The candidate prefetches: the lazy line is gone, the model line was edited, a line was added.
  Profile cand = lines_profile({{10, "for mfgs in prefetcher:"}, {11, "y_hat = model(mfgs, mfgs[0].srcdata['x'])"},
                                {12, "torch.cuda.synchronize()"}, {13, "loss = F.cross_entropy(y_hat, y)"}},
                               40, [&](const std::string& c, int i) {
                                 return (c.find("synchronize") != std::string::npos ? 300000 : 1000000) + jitter(i);
                               });
  const auto lines = reports::compare_lines({base}, {cand}, {});
  std::map<std::string, const reports::LineComparison*> by;
  for (const auto& l : lines) by[l.code] = &l;
  ASSERT_EQ(by.count("loss = F.cross_entropy(y_hat, y)"), 1u);
  EXPECT_STREQ(to_string(by["loss = F.cross_entropy(y_hat, y)"]->match), "same");
  EXPECT_STREQ(to_string(by["loss = F.cross_entropy(y_hat, y)"]->metric.verdict), "no significant change");
  ASSERT_EQ(by.count("for mfgs in loader:"), 1u);
  EXPECT_STREQ(to_string(by["for mfgs in loader:"]->match), "edited");
  EXPECT_EQ(by["for mfgs in loader:"]->candidate_code, "for mfgs in prefetcher:");
  ASSERT_EQ(by.count("y_hat = model(mfgs, x)"), 1u);
  EXPECT_STREQ(to_string(by["y_hat = model(mfgs, x)"]->match), "edited");
  ASSERT_EQ(by.count("x = mfgs[0].srcdata['x']"), 1u);
  EXPECT_STREQ(to_string(by["x = mfgs[0].srcdata['x']"]->match), "baseline only");
  EXPECT_EQ(by["x = mfgs[0].srcdata['x']"]->candidate_line, 0u);
  EXPECT_EQ(by["x = mfgs[0].srcdata['x']"]->metric.baseline_median_ns, 5002000);
  ASSERT_EQ(by.count("torch.cuda.synchronize()"), 1u);
  EXPECT_STREQ(to_string(by["torch.cuda.synchronize()"]->match), "candidate only");
  EXPECT_EQ(lines.size(), 5u);
  // A line that got faster is called so, with statistics.
  Profile slow = lines_profile({{5, "a()"}}, 40, [&](const std::string&, int i) { return 2000000 + jitter(i); });
  Profile fast = lines_profile({{5, "a()"}}, 40, [&](const std::string&, int i) { return 1000000 + jitter(i); });
  const auto ab = reports::compare_lines({slow}, {fast}, {});
  ASSERT_EQ(ab.size(), 1u);
  EXPECT_STREQ(to_string(ab[0].metric.verdict), "faster");
  EXPECT_LT(ab[0].metric.p_value, 1e-6);
  // The document keeps them, and its text shows them.
  reports::Comparison c = reports::compare_profiles({base}, {cand}, {});
  ASSERT_EQ(c.lines.size(), 5u);
  auto doc = reports::comparison_from_json(reports::comparison_to_json(c), "mem");
  ASSERT_TRUE(doc) << doc.status().message();
  ASSERT_EQ(doc->lines.size(), 5u);
  EXPECT_EQ(doc->lines[0].match, c.lines[0].match);
  EXPECT_NE(reports::comparison_text(*doc).find("baseline only"), std::string::npos);
}

// A statement written twice in one function (the training loop's gather and the validation
// loop's) is two lines: editing the first does not lose the second or pair it wrongly.
TEST(LineCompare, AStatementWrittenTwiceIsTwoLines) {
  const std::string gather = "x = feats.index_select(0, nodes)";
  auto ns = [](const std::string& c, int i) { return (c.find("tolist") != std::string::npos ? 3000000 : 1000000) + i % 5 * 1000; };
  Profile base = lines_profile({{10, gather}, {11, "loss = step(x)"}, {20, gather}}, 30, ns);
  Profile cand = lines_profile({{10, "x = feats[nodes.tolist()]"}, {11, "loss = step(x)"}, {20, gather}}, 30, ns);
  const auto lines = reports::compare_lines({base}, {cand}, {});
  ASSERT_EQ(lines.size(), 3u);
  std::map<std::uint32_t, const reports::LineComparison*> by;
  for (const auto& l : lines) by[l.baseline_line] = &l;
  ASSERT_EQ(by.count(10u), 1u);
  EXPECT_STREQ(to_string(by[10]->match), "edited");
  EXPECT_EQ(by[10]->candidate_line, 10u);
  EXPECT_STREQ(to_string(by[10]->metric.verdict), "slower");
  ASSERT_EQ(by.count(20u), 1u);
  EXPECT_STREQ(to_string(by[20]->match), "same");
  EXPECT_EQ(by[20]->candidate_line, 20u);
  EXPECT_EQ(by[20]->metric.baseline_median_ns, by[20]->metric.candidate_median_ns);  // its own time, not the sum of both
}

// A statement moved past others (zero_grad() below backward()) is one line, not a baseline-only
// and a candidate-only one.
TEST(LineCompare, AMovedStatementIsOneLine) {
  auto ns = [](const std::string&, int i) { return 1000000 + i % 5 * 1000; };
  Profile base = lines_profile({{10, "opt.zero_grad()"}, {11, "loss = step(x)"}, {12, "loss.backward()"}}, 30, ns);
  Profile cand = lines_profile({{10, "loss = step(x)"}, {11, "loss.backward()"}, {12, "opt.zero_grad()"}}, 30, ns);
  const auto lines = reports::compare_lines({base}, {cand}, {});
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& l : lines) EXPECT_STREQ(to_string(l.match), "same") << l.code;
  const auto moved = std::find_if(lines.begin(), lines.end(), [](const auto& l) { return l.code == "opt.zero_grad()"; });
  ASSERT_NE(moved, lines.end());
  EXPECT_EQ(moved->baseline_line, 10u);
  EXPECT_EQ(moved->candidate_line, 12u);
  EXPECT_EQ(moved - lines.begin(), 2);  // at the candidate's place
}

// A line run once an epoch (validation) has a per-iteration median of 0 on both sides: it is
// compared over the iterations it ran in, and marked so.
TEST(LineCompare, ALineRunInFewIterationsIsComparedWhereItRan) {
  auto side = [](std::int64_t val_ns) {
    return lines_profile({{10, "loss = step(x)"}, {20, "evaluate(model)"}}, 60, [=](const std::string& c, int i) {
      if (c[0] == 'l') return static_cast<std::int64_t>(1000000 + i % 5 * 1000);
      return i % 6 == 5 ? val_ns + i * 1000 : std::int64_t{0};  // in 10 of 60 iterations
    });
  };
  const auto lines = reports::compare_lines({side(20000000)}, {side(40000000)}, {});
  ASSERT_EQ(lines.size(), 2u);
  const auto& val = lines[0].code == "evaluate(model)" ? lines[0] : lines[1];
  const auto& step = lines[0].code == "evaluate(model)" ? lines[1] : lines[0];
  EXPECT_TRUE(val.sparse);
  EXPECT_FALSE(step.sparse);
  EXPECT_EQ(val.metric.baseline_n, 10u);
  EXPECT_GT(val.metric.baseline_median_ns, 20000000);
  EXPECT_STREQ(to_string(val.metric.verdict), "slower");
  reports::Comparison c = reports::compare_profiles({side(20000000)}, {side(40000000)}, {});
  const std::string text = reports::comparison_text(c);
  EXPECT_NE(text.find("* evaluate(model)"), std::string::npos) << text;
  EXPECT_NE(text.find("* ran in fewer than half the iterations"), std::string::npos) << text;
  auto doc = reports::comparison_from_json(reports::comparison_to_json(c), "mem");
  ASSERT_TRUE(doc) << doc.status().message();
  EXPECT_EQ(doc->lines[0].sparse, c.lines[0].sparse);
}

// A script saved under a new name for the experiment (train.py -> train_slow.py): its
// function still meets its twin, since no other file of either side has it.
TEST(LineCompare, ARenamedScriptsFunctionMeetsItsTwin) {
  auto side = [](const std::string& file, std::int64_t gather_ns) {
    Profile p = lines_profile({{10, "x = gather(batch)"}, {11, "loss = step(x)"}}, 30, [=](const std::string& c, int i) {
      return (c[0] == 'x' ? gather_ns : 1000000) + i % 4 * 1000;
    });
    for (auto& l : p.lines) l.file = file;
    return p;
  };
  const auto lines = reports::compare_lines({side("/w/train.py", 1000000)}, {side("/w/train_slow.py", 3000000)}, {});
  ASSERT_EQ(lines.size(), 2u);
  for (const auto& l : lines) EXPECT_STREQ(to_string(l.match), "same") << l.code;
  // Both files on both sides: told apart, as before.
  Profile both = side("/w/train.py", 1000000);
  for (const auto& l : side("/w/train_slow.py", 1000000).lines) both.lines.push_back(l);
  EXPECT_EQ(reports::compare_lines({both}, {side("/w/train_slow.py", 1000000)}, {}).size(), 4u);
}

// Notebook cells' file names change with each edit and run (IPython's <ipython-input-N-HASH>,
// a Jupyter kernel's /tmp/ipykernel_PID/HASH.py): a function redefined in another cell is
// still matched with its earlier self, by function and statement text.
TEST(LineCompare, NotebookCellsAreOneFile) {
  auto cell = [](const std::string& file, std::int64_t ns) {
    Profile p = lines_profile({{2, "x = gather(batch)"}, {3, "loss = step(x)"}}, 20,
                              [&](const std::string& c, int i) { return (c[0] == 'x' ? ns : 1000000) + i % 3 * 1000; });
    for (auto& l : p.lines) l.file = file;
    return p;
  };
  for (const auto& [a, b] : {std::pair<std::string, std::string>{"<ipython-input-3-1f56>", "<ipython-input-7-9a2c>"},
                             {"/tmp/ipykernel_4242/2510291601.py", "/tmp/ipykernel_5151/543341955.py"}}) {
    const auto lines = reports::compare_lines({cell(a, 5000000)}, {cell(b, 1000000)}, {});
    ASSERT_EQ(lines.size(), 2u) << a;
    for (const auto& l : lines) EXPECT_STREQ(to_string(l.match), "same") << a << " " << l.code;
    EXPECT_STREQ(to_string(lines[0].code == "x = gather(batch)" ? lines[0].metric.verdict : lines[1].metric.verdict), "faster");
  }
  // Files of a program are still told apart by name: each line meets its own file's twin.
  auto two_files = [&](std::int64_t train_ns) {
    Profile p = cell("/a/train.py", train_ns);
    for (const auto& l : cell("/a/other.py", 1000000).lines) p.lines.push_back(l);
    for (auto& it : p.iterations)
      for (std::uint32_t k = 2; k < 4; ++k) it.lines[k] = it.lines[k - 2] == 0 ? 0 : 1000000;
    return p;
  };
  const auto apart = reports::compare_lines({two_files(5000000)}, {two_files(1000000)}, {});
  ASSERT_EQ(apart.size(), 4u);
  for (const auto& l : apart) {
    EXPECT_STREQ(to_string(l.match), "same") << l.file;
    if (l.code == "x = gather(batch)") {
      EXPECT_STREQ(to_string(l.metric.verdict), l.file == "/a/train.py" ? "faster" : "no significant change") << l.file;
    }
  }
}

// Zero-code prefetch: the collate_fn's lines stay in the process but run on the prefetcher's
// thread (off_loop_ns): "moved off the loop thread", and the summary sums them.
TEST(LineCompare, ACollateMovedOntoAPrefetchThreadIsSaidToBeOffTheLoop) {
  auto profile = [](bool off, std::int64_t collate_ns) {
    Profile p = lines_profile({{3, "x = feats[nbrs]"}, {20, "for x in loader:"}}, 30, [=](const std::string& c, int i) {
      return (c[0] == 'x' ? collate_ns : 200000) + i % 3 * 1000;
    });
    p.lines[0].function = "collate";
    for (LineStats& l : p.lines) l.total_ns = 30 * (l.function == "collate" ? collate_ns : 200000);
    if (off) p.lines[0].off_loop_ns = p.lines[0].total_ns;
    return p;
  };
  const Profile base = profile(false, 1000000), cand = profile(true, 1500000);
  reports::Comparison c = reports::compare_profiles({base}, {cand}, {});
  const auto gather = std::find_if(c.lines.begin(), c.lines.end(), [](const auto& l) { return l.function == "collate"; });
  ASSERT_NE(gather, c.lines.end());
  EXPECT_STREQ(to_string(gather->metric.verdict), "moved off the loop thread");
  EXPECT_FALSE(gather->baseline_off_loop);
  EXPECT_TRUE(gather->candidate_off_loop);
  EXPECT_EQ(reports::moved_summary(c).rfind("collate() moved off the loop's thread (1 line): 1.00 ms per iteration on the "
                                            "baseline's loop thread, 1.50 ms on the candidate's other thread",
                                            0),
            0u)
      << reports::moved_summary(c);
  EXPECT_NE(reports::comparison_text(c).find("train.py: collate (moved off the loop thread (a prefetcher's producer)"),
            std::string::npos);
  auto doc = reports::comparison_from_json(reports::comparison_to_json(c), "mem");
  ASSERT_TRUE(doc) << doc.status().message();
  EXPECT_EQ(reports::moved_summary(*doc), reports::moved_summary(c));
  // Back on the loop's thread: the other way; on both sides off it: compared as usual.
  reports::Comparison back = reports::compare_profiles({cand}, {base}, {});
  for (const auto& l : back.lines)
    if (l.function == "collate") EXPECT_STREQ(to_string(l.metric.verdict), "moved to the loop thread");
  reports::Comparison same = reports::compare_profiles({cand}, {cand}, {});
  for (const auto& l : same.lines) EXPECT_STREQ(to_string(l.metric.verdict), "no significant change") << l.code;
}

// num_workers 0 -> 2: the collate_fn's lines leave the loop's process for the DataLoader
// workers. They are followed there (per batch, each worker's first batch left out), not listed
// as gone; the workers' batches are compared too, as hidden time that check does not judge.
TEST(LineCompare, ACollateMovedIntoWorkersIsFollowedThere) {
  auto with_collate = [](Profile p) {
    for (auto& l : p.lines)
      if (l.code.rfind("for ", 0) != 0) l.function = "collate";
    return p;
  };
  const std::vector<std::pair<std::uint32_t, std::string>> collate = {{3, "nbrs = sample(seeds)"}, {4, "x = feats[nbrs]"}};
  // Baseline: the loop runs collate itself (3 ms + 1 ms per iteration).
  Profile base = with_collate(lines_profile({{3, collate[0].second}, {4, collate[1].second}, {20, "for x in loader:"}}, 30,
                                            [](const std::string& c, int i) {
                                              return (c[0] == 'n' ? 3000000 : c[0] == 'x' ? 1000000 : 4100000) + i % 3 * 1000;
                                            }));
  base.run.pid = 100;
  // Candidate: the loop only waits; two workers run collate, slower there (contention), and
  // each one's first batch pays its start.
  Profile cand = lines_profile({{20, "for x in loader:"}}, 30, [](const std::string&, int i) { return 200000 + i % 3 * 1000; });
  cand.run.pid = 200;
  std::vector<Profile> workers;
  for (int w = 0; w < 2; ++w) {
    Profile wp = with_collate(lines_profile(collate, 8, [](const std::string& c, int i) {
      return (i == 0 ? 50000000 : 0) + (c[0] == 'n' ? 4000000 : 1500000) + i % 3 * 1000;
    }));
    wp.run.pid = 201 + w;
    wp.run.parent_pid = 200;
    for (auto& it : wp.iterations) it.wall_ns = 6000000 + (it.index == 0 ? 50000000 : 0);
    workers.push_back(wp);
  }
  const auto lines = reports::compare_lines({base}, {cand}, {}, {}, workers);
  std::map<std::string, const reports::LineComparison*> by;
  for (const auto& l : lines) by[l.code] = &l;
  ASSERT_EQ(lines.size(), 3u);
  const auto* gather = by["x = feats[nbrs]"];
  ASSERT_NE(gather, nullptr);
  EXPECT_STREQ(to_string(gather->match), "same");
  EXPECT_STREQ(to_string(gather->metric.verdict), "moved to workers");
  EXPECT_FALSE(gather->baseline_in_workers);
  EXPECT_TRUE(gather->candidate_in_workers);
  EXPECT_EQ(gather->metric.baseline_median_ns, 1001000);
  EXPECT_EQ(gather->metric.candidate_median_ns, 1501000);  // first batches left out
  EXPECT_EQ(gather->metric.candidate_n, 14u);
  EXPECT_STREQ(to_string(by["for x in loader:"]->metric.verdict), "faster");
  EXPECT_FALSE(by["for x in loader:"]->candidate_in_workers);

  reports::Comparison c = reports::compare_profiles({base}, {cand}, {}, {}, workers);
  const auto batch = std::find_if(c.metrics.begin(), c.metrics.end(),
                                  [](const reports::MetricComparison& m) { return m.name == reports::kWorkerBatch; });
  ASSERT_NE(batch, c.metrics.end());
  EXPECT_STREQ(to_string(batch->scope), "workers");
  EXPECT_STREQ(to_string(batch->verdict), "candidate only");
  EXPECT_EQ(batch->candidate_median_ns, 6000000);
  const std::string moved = reports::moved_summary(c);
  EXPECT_NE(moved.find("collate() moved into DataLoader workers (2 lines): 4.00 ms per iteration on the baseline's loop "
                       "thread, 5.50 ms per batch in the candidate's workers"),
            std::string::npos)
      << moved;
  const std::string text = reports::comparison_text(c);
  EXPECT_NE(text.find("train.py: collate (moved to DataLoader workers: the baseline per iteration, the candidate per batch)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("scope workers: DataLoader worker processes"), std::string::npos);
  std::ostringstream html;
  ASSERT_TRUE(reports::render_comparison_html(c, nullptr, nullptr, html));
  EXPECT_NE(html.str().find("id=moved-to-workers>collate() moved into DataLoader workers"), std::string::npos);
  EXPECT_NE(html.str().find("train.py: collate (moved to DataLoader workers"), std::string::npos);
  auto doc = reports::comparison_from_json(reports::comparison_to_json(c), "mem");
  ASSERT_TRUE(doc) << doc.status().message();
  ASSERT_EQ(doc->lines.size(), c.lines.size());
  for (std::size_t i = 0; i < c.lines.size(); ++i) {
    EXPECT_EQ(doc->lines[i].candidate_in_workers, c.lines[i].candidate_in_workers);
    EXPECT_EQ(doc->lines[i].metric.verdict, c.lines[i].metric.verdict);
  }
  EXPECT_EQ(reports::moved_summary(*doc), moved);

  // Workers on both sides, slower in the candidate: hidden time, "more", not "slower"; and
  // check leaves the workers' rows to the loop's (its DataLoader wait is a loop-thread stage).
  std::vector<Profile> slower = workers;
  for (auto& wp : slower)
    for (auto& it : wp.iterations) {
      it.wall_ns *= 2;
      for (auto& [k, ns] : it.lines) ns *= 2;
    }
  reports::Comparison both = reports::compare_profiles({cand}, {cand}, {}, workers, slower);
  std::size_t in_workers = 0;
  for (const auto& l : both.lines) {
    if (!l.baseline_in_workers) continue;
    ++in_workers;
    EXPECT_TRUE(l.candidate_in_workers);
    EXPECT_STREQ(to_string(l.metric.verdict), "more") << l.code;
  }
  EXPECT_EQ(in_workers, 2u);
  const auto wbatch = std::find_if(both.metrics.begin(), both.metrics.end(),
                                   [](const reports::MetricComparison& m) { return m.name == reports::kWorkerBatch; });
  ASSERT_NE(wbatch, both.metrics.end());
  EXPECT_STREQ(to_string(wbatch->verdict), "more");
  EXPECT_EQ(reports::moved_summary(both), "");
  const reports::CheckResult r = reports::apply_check(both, {});
  EXPECT_EQ(r.regressions, 0);
  for (const auto& row : r.rows) EXPECT_NE(row.metric.scope, reports::Scope::kWorkers) << row.metric.name;
}

TEST(LineCompare, StatementSimilarity) {
  EXPECT_DOUBLE_EQ(reports::statement_similarity("abc", "abc"), 1.0);
  EXPECT_DOUBLE_EQ(reports::statement_similarity("", "abc"), 0.0);
  EXPECT_GT(reports::statement_similarity("time.sleep(0.004)", "time.sleep(0.001)"), 0.9);
  EXPECT_LT(reports::statement_similarity("opt.step()", "x = mfgs[0].srcdata['x']"), 0.5);
}

TEST(LineTable, PythonFunctionsShowFromTheirDecoratorToTheEndOfTheirBody) {
  const std::string path = std::string(::testing::TempDir()) + "/gnnprof_line_table.py";
  {
    std::ofstream f(path);
    f << "import x\n"           // 1
         "\n"                   // 2
         "@profile\n"           // 3
         "def train(n):\n"      // 4
         "    a = 1\n"          // 5
         "    for i in range(n):\n"  // 6
         "        a += (i *\n"  // 7
         "              2)\n"   // 8
         "    if a < 0:\n"      // 9
         "        print(a)\n"   // 10
         "\n"                   // 11
         "x = 3\n";             // 12
  }
  Profile p;
  auto line = [&](std::uint32_t n, std::uint64_t hits, std::int64_t ns) {
    LineStats l;
    l.file = path;
    l.line = n;
    l.function = "train";
    l.hits = hits;
    l.total_ns = ns;
    return l;
  };
  p.lines = {line(5, 1, 100), line(6, 11, 300), line(7, 10, 600), line(9, 1, 0)};
  const reports::LineTable t = reports::build_line_table(p, {});
  ASSERT_EQ(t.blocks.size(), 1u);
  const reports::LineBlock& b = t.blocks[0];
  EXPECT_TRUE(b.python);
  EXPECT_TRUE(b.source_found);
  EXPECT_EQ(b.first, 3u);  // the decorator
  ASSERT_EQ(b.rows.size(), 8u);  // lines 3..10: the body ends before the blank line and `x = 3`
  EXPECT_EQ(b.rows.back().line, 10u);
  EXPECT_EQ(b.rows[5].line, 8u);
  EXPECT_EQ(b.rows[5].stats, nullptr);  // a continuation line
  EXPECT_EQ(b.total_ns, 1000);
  EXPECT_FALSE(t.any_extra());
  std::remove(path.c_str());
  // No lines at all: the hint says how to get them.
  EXPECT_NE(reports::no_lines_hint(Profile{}).find("--lines"), std::string::npos);
}

// Three runs a side, as `gnnprof ab --repeat 3` gives: a line's runs are its samples, as a
// stage's are. Runs that drift as wholes (each run's iterations tight) are no change, where
// pooling their iterations would call the gap between them significant; a line slower in every
// run is slower.
TEST(LineCompare, WithThreeRunsASideTheRunsAreTheLinesSamples) {
  auto run = [](std::int64_t ns) {
    return lines_profile({{10, "x = sample(seeds)"}}, 30, [=](const std::string&, int i) { return ns + i % 3 * 1000; });
  };
  auto side = [&](std::initializer_list<std::int64_t> per_run) {
    std::vector<Profile> out;
    for (std::int64_t ns : per_run) out.push_back(run(ns));
    return out;
  };
  const auto drift = reports::compare_lines(side({1000000, 1200000, 900000}), side({1050000, 1250000, 950000}), {});
  ASSERT_EQ(drift.size(), 1u);
  EXPECT_EQ(drift[0].metric.baseline_runs, 3u);
  EXPECT_STREQ(to_string(drift[0].metric.verdict), "no significant change") << drift[0].metric.p_value;
  // One run a side: the iterations are the samples, and the 5 % is significant.
  const auto pooled = reports::compare_lines(side({1000000}), side({1050000}), {});
  EXPECT_STREQ(to_string(pooled[0].metric.verdict), "slower");
  const auto shifted = reports::compare_lines(side({1000000, 1020000, 990000}), side({2000000, 2030000, 1990000}), {});
  EXPECT_STREQ(to_string(shifted[0].metric.verdict), "slower");
}

}  // namespace
}  // namespace gnnprof
