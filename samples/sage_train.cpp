// sage_train — GraphSAGE mini-batch training in libtorch, instrumented with gnnprof: the
// story of the DGL line_profiler seed in C++. Lazy feature materialization from an fp16
// memmap, neighbour sampling, host-to-device copies, forward, backward, optimizer, and the
// loss.item() host sync each show up as their own stage and line.
//
//   sage_train                                   # 1M-node synthetic graph (generated once)
//   sage_train --dataset cora:DIR --epochs 20 --fanouts 10,10
//   sage_train --nodes 100000 --iterations 50 --profile run.json
#include <CLI/CLI.hpp>
#include <gnnprof/gnn/pipeline.h>
#include <gnnprof/gnnprof.h>
#include <gnnprof/prefetch/prefetcher.h>
#include <gnnprof/reports/text_reporter.h>
#include <gnnprof/torch_observer.h>

#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <thread>

namespace {

constexpr int kExitBadUsage = 2;

struct Options {
  std::string dataset = "synthetic";
  std::int64_t nodes = 1000000, avg_degree = 10, feat_dim = 128, classes = 16;
  std::string fanouts = "15,10";
  std::int64_t batch_size = 1024, epochs = 8, iterations = 0, hidden = 128, eval_nodes = 4096;
  std::string device = "cpu";
  int threads = 0;
  int prefetch = -1, prefetch_workers = 1;
  std::string prefetch_priority = "auto";
  std::uint64_t seed = 1;
  double lr = 0.003;
  std::string profile, cache_dir;
  bool quiet_report = false;
  bool observe_ops = false;
};

[[noreturn]] void usage_error(const std::string& msg) {
  std::cerr << "sage_train: " << msg << "\n";
  std::exit(kExitBadUsage);
}

std::vector<int> parse_fanouts(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    char* end = nullptr;
    long v = std::strtol(tok.c_str(), &end, 10);
    if (tok.empty() || *end != '\0' || v <= 0 || v > 1024)
      usage_error("--fanouts: expected comma-separated integers in 1..1024, got \"" + s + "\"");
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) usage_error("--fanouts: expected comma-separated integers in 1..1024, got \"" + s + "\"");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"sage_train: GraphSAGE mini-batch training, profiled by gnnprof"};
  app.add_option("--dataset", o.dataset, "synthetic | cora:DIR (DIR holds cora.content and cora.cites)");
  app.add_option("--nodes", o.nodes, "synthetic: nodes")->check(CLI::Range(std::int64_t{16}, std::int64_t{1} << 31));
  app.add_option("--avg-degree", o.avg_degree, "synthetic: average in-degree")->check(CLI::Range(1, 1000));
  app.add_option("--feat-dim", o.feat_dim, "synthetic: feature dimension")->check(CLI::Range(1, 4096));
  app.add_option("--classes", o.classes, "synthetic: classes")->check(CLI::Range(2, 1000));
  app.add_option("--fanouts", o.fanouts, "neighbours per layer, input layer first, e.g. 15,10");
  app.add_option("--batch-size", o.batch_size, "seed nodes per batch")->check(CLI::Range(1, 1 << 20));
  auto* ep = app.add_option("--epochs", o.epochs, "epochs over the train split")->check(CLI::Range(1, 100000));
  app.add_option("--iterations", o.iterations, "stop after this many iterations (0: run all epochs)")
      ->check(CLI::Range(0, 100000000))
      ->excludes(ep);
  app.add_option("--hidden", o.hidden, "hidden dimension")->check(CLI::Range(1, 8192));
  app.add_option("--lr", o.lr, "Adam learning rate")->check(CLI::PositiveNumber);
  app.add_option("--eval-nodes", o.eval_nodes, "validation nodes evaluated per epoch")->check(CLI::Range(0, 1 << 30));
  app.add_option("--device", o.device, "cpu | cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--threads", o.threads, "torch intra-op threads (default: all cores)")->check(CLI::Range(1, 1024));
  app.add_option("--prefetch", o.prefetch, "batches prepared ahead on a worker thread (default: GNNPROF_PREFETCH or 0 = inline)")
      ->check(CLI::Range(0, gnnprof::prefetch::kMaxDepth));
  app.add_option("--prefetch-workers", o.prefetch_workers, "producer threads when prefetching")->check(CLI::Range(1, 64));
  app.add_option("--prefetch-priority", o.prefetch_priority,
                 "producer threads' scheduling: normal | background (SCHED_IDLE) | auto (background on cpu)")
      ->check(CLI::IsMember({"auto", "normal", "background"}));
  app.add_option("--seed", o.seed, "seed for data, sampling and weights");
  app.add_option("--profile", o.profile, "write the gnnprof profile here (default: GNNPROF_OUTPUT or gnnprof-<pid>.json)");
  app.add_option("--cache-dir", o.cache_dir, "where generated datasets are kept (default ~/.cache/gnnprof)");
  app.add_flag("--no-report", o.quiet_report, "do not print the stage and line tables at the end");
  app.add_flag("--observe-ops", o.observe_ops,
               "also record every torch op (gnnprof::torch::observe_ops), nested in the loop's own stages");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    usage_error(std::string(e.what()) + " (see --help)");
  }
  const std::vector<int> fanouts = parse_fanouts(o.fanouts);
  if (o.device == "cuda" && !torch::cuda::is_available())
    usage_error("--device cuda: this libtorch has no usable CUDA device");
  const torch::Device device = o.device == "cuda" ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  if (o.cache_dir.empty()) o.cache_dir = gnnprof::gnn::default_cache_dir();

  // Data first, outside the profile: a bad --dataset then stops with one line and no profile,
  // and the one-time generation of a synthetic graph is not mistaken for training time.
  gnnprof::Result<gnnprof::gnn::Dataset> ds = gnnprof::Status::error("no dataset");
  {
    if (o.dataset == "synthetic") {
      gnnprof::gnn::SyntheticSpec spec;
      spec.nodes = o.nodes;
      spec.avg_degree = o.avg_degree;
      spec.feat_dim = o.feat_dim;
      spec.classes = o.classes;
      spec.seed = o.seed;
      ds = gnnprof::gnn::prepare_synthetic(o.cache_dir, spec, &std::cerr);
    } else if (o.dataset.rfind("cora:", 0) == 0) {
      ds = gnnprof::gnn::load_cora(o.dataset.substr(5), o.cache_dir);
    } else {
      usage_error("--dataset: expected synthetic or cora:DIR, got \"" + o.dataset + "\"");
    }
  }
  if (!ds) usage_error(ds.status().message());
  auto features = gnnprof::gnn::MappedFeatures::open(ds->features_path);
  if (!features) usage_error(features.status().message());

  gnnprof::Config cfg = gnnprof::Config::from_env();
  if (!o.profile.empty()) cfg.output = o.profile;
  gnnprof::start(cfg);
  if (o.observe_ops) {
    // Op-level detail without a macro per line: the ops nest in this loop's GNNPROF_STAGEs,
    // which already name the phases and mark the iterations.
    gnnprof::torch::ObserveOptions obs;
    obs.phases = false;
    obs.mark_iterations = false;
    if (gnnprof::Status st = gnnprof::torch::observe_ops(obs); !st) std::fprintf(stderr, "%s\n", st.message().c_str());
  }

  // Per-batch tensors are tens of MB (x: ~60 MB at the default size), above glibc's largest
  // mmap threshold (32 MB): each one would be fresh mmap'd pages, paid for with page faults and
  // kernel zeroing on every batch (measured: ~5 ms of a ~50 ms iteration, docs/performance.md).
  // Serving them from the heap lets freed batches be reused.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // A producer thread allocates from an arena of its own, whose heaps hold at most 64 MB: a
  // ~60 MB batch there was a fresh mmap every time (materialize 6 -> ~90 ms in one prefetched
  // iteration of three, measured). One arena serves every thread from the reused heap.
  mallopt(M_ARENA_MAX, 1);

  // Threads: torch's intra-op pool gets every core for the baseline. With prefetching on the
  // CPU, whether the producer should fill compute's gaps at background priority or get a core
  // of its own depends on the machine (how compute scales with threads, what the producer's
  // memory traffic costs it): the CoreSplit below measures both on the first prefetched
  // iterations and keeps the faster (GNNPROF_PREFETCH_THREADS; --threads fixes the count).
  const int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  torch::set_num_threads(threads);
  torch::manual_seed(o.seed);

  gnnprof::gnn::NeighborSampler sampler(ds->graph, fanouts);
  gnnprof::gnn::BatchProducer producer(*ds, **features, sampler, device, o.seed, o.batch_size);
  const int prefetch = o.prefetch >= 0 ? o.prefetch : gnnprof::prefetch::resolve_depth(0);
  producer.set_parallel_gather(prefetch == 0);
  producer.set_staging_slots(static_cast<std::size_t>(prefetch) + 1);  // CUDA: K in flight + the one being handed over
  const bool background = o.prefetch_priority == "background" || (o.prefetch_priority == "auto" && !device.is_cuda());
  const auto priority = background ? gnnprof::prefetch::WorkerPriority::kBackground : gnnprof::prefetch::WorkerPriority::kNormal;
  std::optional<gnnprof::prefetch::CoreSplit> split;
  if (prefetch > 0 && !device.is_cuda() && o.threads <= 0)
    split.emplace(threads, o.prefetch_workers, [](int n) { torch::set_num_threads(n); });
  gnnprof::gnn::Sage model(ds->feat_dim, o.hidden, ds->num_classes, static_cast<std::int64_t>(fanouts.size()), 0.2);
  model->to(device);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(o.lr));
  const std::vector<std::int64_t> val = ds->nodes_in(gnnprof::gnn::Split::kVal);

  std::printf("sage_train: %s, %lld nodes, %lld edges, %lld classes, feat %lld; fanouts %s, batch %lld, %lld batches/epoch, %d threads, %s, prefetch %d\n",
              ds->name.c_str(), static_cast<long long>(ds->graph.num_nodes()), static_cast<long long>(ds->graph.num_edges()),
              static_cast<long long>(ds->num_classes), static_cast<long long>(ds->feat_dim), o.fanouts.c_str(),
              static_cast<long long>(o.batch_size), static_cast<long long>(producer.batches_per_epoch()), threads,
              o.device.c_str(), prefetch);
  std::fflush(stdout);

  std::int64_t done = 0;
  const std::int64_t epochs = o.iterations > 0 ? (o.iterations + producer.batches_per_epoch() - 1) / producer.batches_per_epoch() : o.epochs;
  for (std::int64_t epoch = 0; epoch < epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<std::int64_t> order = producer.epoch_order(epoch);
    double loss_sum = 0;
    std::int64_t batches = 0;
    torch::Tensor logits, loss;
    std::int64_t count = producer.batches_per_epoch();
    if (o.iterations > 0) count = std::min(count, o.iterations - done);
    // K = 0 produces each batch inline in next(): the baseline runs the very same code.
    gnnprof::prefetch::Prefetcher<gnnprof::gnn::MiniBatch> loader(
        [&](std::int64_t i) { return producer.produce(epoch, i, producer.batch_seeds(order, i)); }, count, prefetch,
        o.prefetch_workers, priority);
    if (split) loader.set_core_split(&*split);
    for (std::int64_t i = 0; i < count; ++i) {
      GNNPROF_STEP();
      GNNPROF_LINE(std::optional<gnnprof::gnn::MiniBatch> next = loader.next());
      gnnprof::gnn::wait_ready(*next);  // CUDA: the compute stream waits for the copy stream
      const gnnprof::gnn::MiniBatch& mb = *next;
      {
        GNNPROF_STAGE("forward");
        GNNPROF_LINE(logits = model->forward(mb));
        GNNPROF_LINE(loss = torch::nn::functional::cross_entropy(logits, mb.y));
      }
      {
        GNNPROF_STAGE("backward");
        GNNPROF_LINE(loss.backward());
      }
      {
        GNNPROF_STAGE("optimizer");
        GNNPROF_LINE(opt.step());
        GNNPROF_LINE(opt.zero_grad());
      }
      {
        // loss.item() waits for the device: on a GPU it absorbs all queued work, so it gets
        // its own stage instead of hiding that time in whichever line comes next.
        GNNPROF_STAGE("sync");
        GNNPROF_LINE(loss_sum += loss.item<double>());
      }
      ++batches;
      ++done;
    }
    GNNPROF_STEP_END();
    double acc = 0;
    {
      GNNPROF_STAGE("eval");
      acc = gnnprof::gnn::evaluate(model, producer, val, o.eval_nodes, o.batch_size);
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("epoch %lld: %lld batches, mean loss %.4f, val accuracy %.4f (%lld nodes), %.1f s\n",
                static_cast<long long>(epoch), static_cast<long long>(batches), batches ? loss_sum / static_cast<double>(batches) : 0.0,
                acc, static_cast<long long>(std::min<std::int64_t>(o.eval_nodes, static_cast<std::int64_t>(val.size()))), secs);
    std::fflush(stdout);
  }
  if (o.observe_ops) gnnprof::torch::close_thread();
  gnnprof::stop();
  if (!o.quiet_report) {
    if (auto p = gnnprof::snapshot(); p) {
      gnnprof::reports::TextReporter text({});
      std::cout << "\n";
      text.render_stage_table(*p, std::cout);
      std::cout << "\n";
      text.render_line_table(*p, std::cout);
    }
  }
  return 0;
}
