// sage_train as a user runs it: the profile it writes, and bad flags.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include "gnnprof/profile_io.h"

namespace gnnprof {
namespace {

const std::string kBinary = GNNPROF_SAGE_TRAIN;

struct RunResult {
  int rc;
  std::string out, err;
};

RunResult run(const std::string& args) {
  const std::string dir = std::string(::testing::TempDir());
  const std::string out = dir + "/sage_out_" + std::to_string(::getpid()), err = dir + "/sage_err_" + std::to_string(::getpid());
  int status = std::system((kBinary + " " + args + " >" + out + " 2>" + err).c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  return RunResult{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

std::string cache() { return std::string(::testing::TempDir()) + "/gnnprof_sage_cache_" + std::to_string(::getpid()); }

TEST(SageTrain, ProfileHasTheSixStagesCoveringTheLoop) {
  const std::string profile = std::string(::testing::TempDir()) + "/sage_profile_" + std::to_string(::getpid()) + ".json";
  // --eval-nodes 0: validation batches also run sample/materialize/h2d; without them every
  // stage's hits must equal the iterations exactly.
  RunResult r = run("--nodes 20000 --feat-dim 64 --batch-size 256 --iterations 12 --eval-nodes 0 --no-report --cache-dir " +
              cache() + " --profile " + profile);
  ASSERT_EQ(r.rc, 0) << r.err;
  // 2000 train nodes / 256 = 8 batches per epoch: 12 iterations span two epochs.
  EXPECT_NE(r.out.find("epoch 0: 8 batches"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("epoch 1: 4 batches"), std::string::npos) << r.out;
  auto p = read_profile_file(profile);
  ASSERT_TRUE(p) << p.status().message();
  std::int64_t loop_wall = 0;
  std::size_t complete = 0;
  for (const auto& it : p->iterations)
    if (it.complete) {
      loop_wall += it.wall_ns;
      ++complete;
    }
  ASSERT_EQ(complete, 12u);
  std::int64_t six = 0;
  for (const char* name : {"sample", "materialize", "h2d", "forward", "backward", "optimizer"}) {
    const StageStats* s = nullptr;
    for (const auto& st : p->stages)
      if (st.name == name) s = &st;
    ASSERT_NE(s, nullptr) << name;
    std::uint64_t in_loop = 0;
    std::int64_t ns = 0;
    for (const auto& it : p->iterations) {
      auto f = it.stages.find(name);
      if (f != it.stages.end()) {
        ++in_loop;
        ns += f->second;
      }
    }
    EXPECT_EQ(in_loop, 12u) << name;
    EXPECT_EQ(s->hits, 12u) << name;
    six += ns;
  }
  EXPECT_GE(static_cast<double>(six), 0.95 * static_cast<double>(loop_wall))
      << "six stages cover " << 100.0 * static_cast<double>(six) / static_cast<double>(loop_wall) << " % of the loop";
  // On a CPU device the transfer is recorded as a 0-byte copy, not faked.
  ASSERT_FALSE(p->transfers.empty());
  EXPECT_EQ(p->transfers[0].stage, "h2d");
  EXPECT_EQ(p->transfers[0].bytes, 0u);
  bool features = false;
  for (const auto& m : p->materializations) features |= m.name == "features" && m.bytes > 0 && m.rows > 0;
  EXPECT_TRUE(features);
}

// Linked use of the torch observer: with --observe-ops every torch op is a stage of category
// "op" nested in the loop's own stages, which keep their hits; no materialization is counted
// twice and no iteration is marked twice.
TEST(SageTrain, ObserveOpsNestsTorchOpsInTheLoopStages) {
  const std::string profile = std::string(::testing::TempDir()) + "/sage_ops_" + std::to_string(::getpid()) + ".json";
  RunResult r = run("--nodes 20000 --feat-dim 64 --batch-size 256 --iterations 6 --eval-nodes 0 --no-report --observe-ops "
                    "--cache-dir " + cache() + " --profile " + profile);
  ASSERT_EQ(r.rc, 0) << r.err;
  auto p = read_profile_file(profile);
  ASSERT_TRUE(p) << p.status().message();
  std::size_t complete = 0;
  for (const auto& it : p->iterations) complete += it.complete ? 1 : 0;
  EXPECT_EQ(complete, 6u);
  auto stage = [&](const std::string& n) -> const StageStats* {
    for (const auto& st : p->stages)
      if (st.name == n) return &st;
    return nullptr;
  };
  for (const char* name : {"forward", "backward", "optimizer"}) {
    const StageStats* s = stage(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_EQ(s->hits, 6u) << name << ": the observer added no phase stage of its own";
  }
  const StageStats* addmm = stage("aten::addmm");
  ASSERT_NE(addmm, nullptr);
  EXPECT_EQ(addmm->category, "op");
  // Ops nest in the macros' stages: forward's self time excludes them.
  const StageStats* fwd = stage("forward");
  EXPECT_LT(fwd->self_ns, fwd->total_ns / 2);
  bool backward_op = false;
  for (const auto& st : p->stages) backward_op |= st.name.rfind("autograd::engine::evaluate_function:", 0) == 0;
  EXPECT_TRUE(backward_op);
  for (const auto& m : p->materializations) EXPECT_FALSE(m.name.empty()) << "a gather counted by the observer too";
  bool collector = false;
  for (const auto& c : p->collectors) collector |= c.name == "torch-ops" && c.enabled;
  EXPECT_TRUE(collector);
}

// The same under `gnnprof run`: the program's linked copy records into the preload's session,
// and its observe_ops options reach the preload's observer (no phase stages of the observer's
// beside the program's, no iteration marks of its own).
TEST(SageTrain, UnderGnnprofRunObserveOpsKeepsTheProgramsStagesAndSteps) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "gnnprof run under ASan: the preload would come before the ASan runtime";
#endif
  const std::string profile = std::string(::testing::TempDir()) + "/sage_run_" + std::to_string(::getpid()) + ".json";
  const std::string cmd = std::string(GNNPROF_CLI) + " run -o " + profile + " -- " + kBinary +
                          " --nodes 20000 --feat-dim 64 --batch-size 256 --iterations 6 --eval-nodes 0 --no-report "
                          "--observe-ops --cache-dir " + cache() + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  auto p = read_profile_file(profile);
  ASSERT_TRUE(p) << p.status().message();
  std::size_t complete = 0;
  for (const auto& it : p->iterations) complete += it.complete ? 1 : 0;
  EXPECT_EQ(complete, 6u);
  for (const char* name : {"forward", "backward", "optimizer"}) {
    std::uint64_t hits = 0;
    for (const auto& st : p->stages) hits += st.name == name ? st.hits : 0;
    EXPECT_EQ(hits, 6u) << name;
  }
  for (const auto& st : p->stages) EXPECT_NE(st.name, "ops (no grad)") << "a phase of the preload's observer";
  bool linked = false, ops = false;
  for (const auto& c : p->collectors) {
    linked |= c.name == "linked-core" && c.enabled;
    ops |= c.name == "torch-ops" && c.enabled;
  }
  EXPECT_TRUE(linked);
  EXPECT_TRUE(ops);
}

// A program that names its own output under `gnnprof run` keeps its own session and file: the
// launcher's profile says where that file is, and so does gnnprof run.
TEST(SageTrain, UnderGnnprofRunItsOwnProfileIsNamed) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "gnnprof run under ASan: the preload would come before the ASan runtime";
#endif
  const std::string base = std::string(::testing::TempDir()) + "/sage_own_" + std::to_string(::getpid());
  const std::string cmd = std::string(GNNPROF_CLI) + " run -o " + base + "-run.json -- " + kBinary +
                          " --nodes 20000 --feat-dim 64 --batch-size 256 --iterations 4 --eval-nodes 0 --no-report "
                          "--profile " + base + "-own.json --cache-dir " + cache() + " >/dev/null 2>" + base + ".err";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  auto own = read_profile_file(base + "-own.json");
  ASSERT_TRUE(own) << own.status().message();
  EXPECT_EQ(own->iterations.size(), 4u);
  auto run = read_profile_file(base + "-run.json");
  ASSERT_TRUE(run) << run.status().message();
  std::string reason;
  for (const auto& c : run->collectors)
    if (c.name == "linked-core" && !c.enabled) reason = c.reason;
  EXPECT_NE(reason.find("writing " + base + "-own.json"), std::string::npos) << reason;
  std::ifstream err(base + ".err");
  const std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("the program wrote a profile of its own, " + base + "-own.json"), std::string::npos) << text;
}

TEST(SageTrain, PrintsTheStageAndLineTables) {
  RunResult r = run("--nodes 20000 --feat-dim 32 --batch-size 256 --iterations 3 --eval-nodes 64 --cache-dir " + cache() +
              " --profile /dev/null");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("Stage                Category"), std::string::npos);
  EXPECT_NE(r.out.find("Line #      Hits         Time  Per Hit   % Time  Line Contents"), std::string::npos);
  EXPECT_NE(r.out.find("GNNPROF_LINE(loss.backward());"), std::string::npos);
}

void expect_usage_error(const std::string& args, const std::string& want) {
  RunResult r = run(args + " --cache-dir " + cache());
  EXPECT_EQ(r.rc, 2) << args;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
}

TEST(SageTrain, BadFlagValuesGetOneLineAndExit2) {
  expect_usage_error("--fanouts 10,x", "sage_train: --fanouts: expected comma-separated integers in 1..1024, got \"10,x\"");
  expect_usage_error("--fanouts 0", "--fanouts");
  expect_usage_error("--device gpu", "sage_train: --device");
  expect_usage_error("--nodes -5", "sage_train: --nodes");
  expect_usage_error("--batch-size abc", "sage_train: --batch-size");
  expect_usage_error("--epochs 2 --iterations 3", "sage_train: ");
  expect_usage_error("--dataset imagenet", "sage_train: --dataset: expected synthetic or cora:DIR, got \"imagenet\"");
  expect_usage_error("--dataset cora:/nonexistent", "sage_train: /nonexistent/cora.content: cannot open: No such file or directory");
  expect_usage_error("--device cuda", "sage_train: --device cuda: this libtorch has no usable CUDA device");
  expect_usage_error("--no-such-flag", "sage_train: ");
}

}  // namespace
}  // namespace gnnprof
