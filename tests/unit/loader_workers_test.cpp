// A loop's DataLoader workers from the loop's report: which profiles are its workers', and the
// summary of their batches and lines.
#include "gnnprof/reports/loader_workers.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gnnprof/profile_io.h"
#include "gnnprof/reports/markdown_reporter.h"
#include "gnnprof/reports/report.h"
#include "gnnprof/reports/text_reporter.h"

namespace gnnprof::reports {
namespace {

constexpr std::int64_t kMs = 1000000;

Profile worker(std::int64_t pid, std::int64_t parent, std::int64_t start_ns, std::int64_t wall_ns,
               std::vector<std::pair<std::int64_t, bool>> batches) {
  Profile p;
  p.run.pid = pid;
  p.run.parent_pid = parent;
  p.run.host = "vm";
  p.run.start_unix_ns = start_ns;
  p.wall_ns = wall_ns;
  for (const auto& [ms, observed] : batches) {
    IterationStats it;
    it.index = p.iterations.size();
    it.wall_ns = ms * kMs;
    it.ops_observed = observed;
    p.iterations.push_back(it);
  }
  LineStats l;
  l.file = "/w/data.py";
  l.line = 24;
  l.function = "Slow.__getitem__";
  l.code = "x = torch.tanh(x)";
  l.hits = 100;
  l.total_ns = 10 * kMs;
  p.lines.push_back(l);
  l.line = 22;
  l.code = "x = torch.full((256,), 1.0)";
  l.total_ns = 2 * kMs;
  p.lines.push_back(l);
  return p;
}

TEST(LoaderWorkers, PaceBusyShareConcurrencyAndHeaviestLines) {
  // Two workers alive together, then a third (the next epoch's) after them.
  const std::vector<Profile> ws = {
      worker(12, 10, 1000 * kMs, 100 * kMs, {{10, true}, {6, false}, {6, false}, {20, true}}),
      worker(11, 10, 1001 * kMs, 100 * kMs, {{10, true}, {8, false}}),
      worker(13, 10, 1200 * kMs, 50 * kMs, {{5, false}})};
  Profile loop;
  loop.run.pid = 10;
  const LoaderWorkers w = summarize_loader_workers(loop, ws, 1);
  EXPECT_EQ(w.pids, (std::vector<std::int64_t>{11, 12, 13}));
  EXPECT_EQ(w.concurrent, 2);
  EXPECT_EQ(w.batches, 7u);
  EXPECT_TRUE(w.pace_unobserved);  // the median of the batches whose ops were not observed
  EXPECT_EQ(w.batch_median_ns, 6 * kMs);
  EXPECT_EQ(w.supply_interval_ns(), 3 * kMs);
  EXPECT_EQ(w.batch_ns, 65 * kMs);
  EXPECT_DOUBLE_EQ(w.busy_share(), 65.0 / 250.0);
  ASSERT_EQ(w.top_lines.size(), 1u);  // top = 1
  EXPECT_EQ(w.top_lines[0].line, 24u);
  EXPECT_EQ(w.top_lines[0].hits, 300u);
  EXPECT_EQ(w.top_lines[0].total_ns, 30 * kMs);
  EXPECT_DOUBLE_EQ(w.top_lines[0].share, 30.0 / 65.0);
  const std::string text = loader_workers_text(w);
  EXPECT_NE(text.find("3 DataLoader worker profiles (pid 11, 12, 13; 2 at once): 7 batches, 6.00 ms a batch per worker"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("together a batch every 3.00 ms"), std::string::npos) << text;
  // Two sets (11 and 12, then 13): each one's first batch 10 ms and 5 ms after its start.
  EXPECT_NE(text.find("; from a set's start to its first batch "), std::string::npos) << text;
  EXPECT_NE(text.find(" (median of 2 sets)."), std::string::npos) << text;
  // Rendered in the loop's report, and absent from a report without workers.
  Report r = make_report(loop, {});
  std::ostringstream without, with;
  ASSERT_TRUE(TextReporter({}).render(r, without));
  EXPECT_EQ(without.str().find("== DataLoader workers =="), std::string::npos);
  r.workers = summarize_loader_workers(loop, ws);
  ASSERT_TRUE(TextReporter({}).render(r, with));
  EXPECT_NE(with.str().find("== DataLoader workers =="), std::string::npos);
  EXPECT_NE(with.str().find("data.py:24"), std::string::npos) << with.str();
  // A heavy line that calls the user's own function says how to see inside it; a torch call
  // does not.
  r.workers.top_lines.front().share = 0.9;
  r.workers.top_lines.front().code = "return self.sample(seeds)";
  std::ostringstream hint, none;
  ASSERT_TRUE(TextReporter({}).render(r, hint));
  EXPECT_NE(hint.str().find("To see inside sample() (if data.py defines it; else name its file): gnnprof run --lines auto --lines data.py:sample -- ..."), std::string::npos)
      << hint.str();
  // Already traced in the workers (a generator their __iter__ pulls from): the next heavy line's
  // callee is named instead.
  r.workers.functions.insert("Loader.sample");
  WorkerLine inner = r.workers.top_lines.front();
  inner.share = 0.8;
  inner.code = "blocks = make_blocks(seeds)";
  r.workers.top_lines.insert(r.workers.top_lines.begin() + 1, inner);  // heaviest first
  std::ostringstream next;
  ASSERT_TRUE(TextReporter({}).render(r, next));
  EXPECT_NE(next.str().find("To see inside make_blocks()"), std::string::npos) << next.str();
  r.workers.top_lines.erase(r.workers.top_lines.begin() + 1);
  r.workers.top_lines.front().code = "x = torch.tanh(x * 1.01)";
  ASSERT_TRUE(TextReporter({}).render(r, none));
  EXPECT_EQ(none.str().find("To see inside"), std::string::npos) << none.str();
  EXPECT_EQ(none.str().find(">100%"), std::string::npos) << none.str();
  // A line with more time than the workers' batches (a worker_init_fn's sleep at each start):
  // no share above 100 %, but what it means.
  r.workers.top_lines.front().share = 45.6;
  r.workers.top_lines.front().code = "time.sleep(0.25)";
  std::ostringstream outside;
  ASSERT_TRUE(TextReporter({}).render(r, outside));
  EXPECT_NE(outside.str().find("   >100%  time.sleep(0.25)"), std::string::npos) << outside.str();
  EXPECT_EQ(outside.str().find("4560.0%"), std::string::npos) << outside.str();
  EXPECT_NE(outside.str().find("(>100%: more time than the workers' batches took; the line also runs outside them, at a "
                               "worker's start (a worker_init_fn, a Dataset's set-up) or between its batches)"),
            std::string::npos)
      << outside.str();
  std::ostringstream md;
  ASSERT_TRUE(MarkdownReporter({}).render(r, md));
  EXPECT_NE(md.str().find(">100% of their batch time (it also runs outside their batches)."), std::string::npos) << md.str();
  // The loop counted more forks than there are profiles: the cap is named.
  loop.counters.push_back(CounterStats{"DataLoader workers", 40, 2, 2, 2, 2});
  EXPECT_NE(loader_workers_text(summarize_loader_workers(loop, ws)).find("the run started 40 workers; the others wrote no profile"),
            std::string::npos);
  EXPECT_EQ(loader_workers_text(w).find("the run started"), std::string::npos);
}

TEST(LoaderWorkers, WhatTheWorkersGatheredPerObservedBatch) {
  // 3 observed batches of 5; gathers recorded in those only (the observer's and numpy memmap
  // reads alike): 2 MiB at data.py:30 and 1 MiB at data.py:31 over them.
  std::vector<Profile> ws = {worker(12, 10, 1000 * kMs, 100 * kMs, {{10, true}, {6, false}, {6, true}}),
                             worker(11, 10, 1001 * kMs, 100 * kMs, {{10, true}, {8, false}})};
  ws[0].materializations.push_back({"", "materialize", "/w/data.py", 30, 2, 2000, 2u << 20});
  ws[1].materializations.push_back({"", "materialize", "/w/data.py", 31, 1, 1000, 1u << 20});
  ws[0].counters.push_back(CounterStats{kMemmapFaultsCounter, 2, 10, 30, 20, 30});  // 40 major faults
  ws[1].counters.push_back(CounterStats{kMemmapFaultsCounter, 1, 50, 50, 50, 50});  // 50
  Profile loop;
  loop.run.pid = 10;
  const LoaderWorkers w = summarize_loader_workers(loop, ws);
  EXPECT_EQ(w.observed_batches, 3u);
  EXPECT_EQ(w.gathered_bytes, 3u << 20);
  EXPECT_EQ(w.gathered_rows, 3000u);
  EXPECT_EQ(w.gather_file, "/w/data.py");
  EXPECT_EQ(w.gather_line, 30u);
  EXPECT_DOUBLE_EQ(w.memmap_faults_per_batch(), 30);
  EXPECT_NE(loader_workers_text(w).find("; they gathered 1.0 MiB a batch (1000 rows; materializations, over the 3 batches "
                                        "whose ops were observed), most at data.py:30, their numpy memmap reads waiting on 30 "
                                        "major page faults a batch (pages read from storage)."),
            std::string::npos)
      << loader_workers_text(w);
  EXPECT_EQ(workers_gathered_note(w), " Its DataLoader workers gathered 1.0 MiB a batch (most at data.py:30): see the "
                                      "DataLoader workers section.");
  // Rendered under the loop's empty Materializations section.
  Report r = make_report(loop, {});
  r.workers = w;
  std::ostringstream text;
  ASSERT_TRUE(TextReporter({}).render(r, text));
  EXPECT_NE(text.str().find("GNNPROF_MATERIALIZE. Its DataLoader workers gathered 1.0 MiB a batch"), std::string::npos)
      << text.str();
  // Workers that gathered nothing: no such note.
  ws[0].materializations.clear();
  ws[1].materializations.clear();
  ws[0].counters.clear();
  ws[1].counters.clear();
  const LoaderWorkers none = summarize_loader_workers(loop, ws);
  EXPECT_EQ(workers_gathered_note(none), "");
  EXPECT_EQ(loader_workers_text(none).find("gathered"), std::string::npos);
}

TEST(LoaderWorkers, OnlyTheLoopsOwnWorkersProfilesAreRead) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "gnnprof_loader_workers";
  fs::remove_all(dir);
  fs::create_directories(dir);
  Profile loop;
  loop.run.pid = 10;
  loop.run.host = "vm";
  loop.run.start_unix_ns = 1000 * kMs;
  ASSERT_TRUE(write_profile_file(loop, (dir / "run.json").string()));
  ASSERT_TRUE(write_profile_file(worker(12, 10, 1100 * kMs, kMs, {{1, true}}), (dir / "run.12.json").string()));
  ASSERT_TRUE(write_profile_file(worker(11, 10, 1100 * kMs, kMs, {{1, true}}), (dir / "run.11.json").string()));
  // Another loop's worker (pid 100: "parent_pid": 10 is a prefix of its key), one of an
  // earlier run with a recycled pid, one of another host, a truncated file, not JSON.
  ASSERT_TRUE(write_profile_file(worker(13, 100, 1100 * kMs, kMs, {{1, true}}), (dir / "x.13.json").string()));
  ASSERT_TRUE(write_profile_file(worker(14, 10, 900 * kMs, kMs, {{1, true}}), (dir / "old.14.json").string()));
  Profile elsewhere = worker(15, 10, 1100 * kMs, kMs, {{1, true}});
  elsewhere.run.host = "other";
  ASSERT_TRUE(write_profile_file(elsewhere, (dir / "run.15.json").string()));
  {
    std::ifstream in(dir / "run.12.json");
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(dir / "cut.16.json") << s.substr(0, s.size() / 2);
    std::ofstream(dir / "notes.txt") << "\"parent_pid\": 10,";
  }
  const std::vector<Profile> ws = read_loader_worker_profiles((dir / "run.json").string(), loop);
  ASSERT_EQ(ws.size(), 2u);
  EXPECT_EQ(ws[0].run.pid, 11);
  EXPECT_EQ(ws[1].run.pid, 12);
  // At most `limit` read; the other files naming the parent are counted (11 or 12, 14, 15, 16).
  std::size_t more = 0;
  EXPECT_EQ(read_loader_worker_profiles((dir / "run.json").string(), loop, 1, &more).size(), 1u);
  EXPECT_GE(more, 1u);
  EXPECT_LE(more, 4u);
  // Another launch's worker (its run id differs) and one started after the loop ended.
  loop.run.run_id = "launch-a";
  loop.wall_ns = 500 * kMs;
  ASSERT_TRUE(write_profile_file(loop, (dir / "run.json").string()));
  Profile other = worker(17, 10, 1100 * kMs, kMs, {{1, true}});
  other.run.run_id = "launch-b";
  ASSERT_TRUE(write_profile_file(other, (dir / "run.17.json").string()));
  ASSERT_TRUE(write_profile_file(worker(18, 10, 1600 * kMs, kMs, {{1, true}}), (dir / "run.18.json").string()));
  EXPECT_EQ(read_loader_worker_profiles((dir / "run.json").string(), loop).size(), 2u);
  // The parent_pid survives the JSON round trip; a profile without one has none.
  EXPECT_EQ(ws[0].run.parent_pid, 10);
  EXPECT_EQ(profile_to_json(loop).find("parent_pid"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gnnprof::reports
