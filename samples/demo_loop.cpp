// demo_loop — a small instrumented mini-batch loop in plain C++ (no libtorch), the demo of
// `make demo` until the GraphSAGE sample exists. It does real work at every stage: neighbour
// sampling on a synthetic power-law graph, a row gather ("lazy materialization"), and a
// one-hidden-layer MLP trained with SGD.
//
//   demo_loop [--iterations N] [--profile OUT.json]
#include <gnnprof/gnnprof.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

struct Graph {
  std::vector<std::int64_t> offsets;
  std::vector<std::int32_t> neighbours;
};

Graph make_graph(int nodes, int avg_degree, std::mt19937& rng) {
  Graph g;
  g.offsets.push_back(0);
  std::exponential_distribution<double> deg(1.0 / avg_degree);
  std::uniform_int_distribution<int> pick(0, nodes - 1);
  for (int v = 0; v < nodes; ++v) {
    int d = 1 + static_cast<int>(deg(rng));
    for (int k = 0; k < d; ++k) g.neighbours.push_back(pick(rng));
    g.offsets.push_back(static_cast<std::int64_t>(g.neighbours.size()));
  }
  return g;
}

// y = W2 relu(W1 x); squared error against a fixed linear target.
struct Mlp {
  int in, hidden;
  std::vector<float> w1, w2, gw1, gw2;
};

}  // namespace

int main(int argc, char** argv) {
  int iterations = 200;
  std::string profile;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--iterations" && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
    } else if (a == "--profile" && i + 1 < argc) {
      profile = argv[++i];
    } else {
      std::fprintf(stderr, "demo_loop: unknown argument %s (usage: demo_loop [--iterations N] [--profile OUT])\n", argv[i]);
      return 2;
    }
  }
  if (iterations <= 0) {
    std::fprintf(stderr, "demo_loop: --iterations must be positive\n");
    return 2;
  }
  gnnprof::Config cfg = gnnprof::Config::from_env();
  if (!profile.empty()) cfg.output = profile;
  gnnprof::start(cfg);

  const int nodes = 20000, feat = 64, batch = 256, fanout = 10;
  std::mt19937 rng(42);
  Graph g = make_graph(nodes, 12, rng);
  std::vector<float> features(static_cast<std::size_t>(nodes) * feat);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (auto& x : features) x = nd(rng);
  Mlp m{feat, 128, {}, {}, {}, {}};
  m.w1.resize(static_cast<std::size_t>(m.in) * m.hidden);
  m.w2.resize(m.hidden);
  for (auto& x : m.w1) x = nd(rng) * 0.1f;
  for (auto& x : m.w2) x = nd(rng) * 0.1f;
  m.gw1.assign(m.w1.size(), 0.f);
  m.gw2.assign(m.w2.size(), 0.f);

  std::uniform_int_distribution<int> seed_pick(0, nodes - 1);
  std::vector<std::int32_t> sampled;
  std::vector<float> x;
  std::vector<float> h, y, grad_h(static_cast<std::size_t>(m.hidden));
  double loss_sum = 0;
  for (int it = 0; it < iterations; ++it) {
    GNNPROF_STEP();
    {
      GNNPROF_STAGE("sample");
      sampled.clear();
      for (int b = 0; b < batch; ++b) {
        int v = seed_pick(rng);
        sampled.push_back(v);
        auto lo = g.offsets[v], hi = g.offsets[v + 1];
        for (int k = 0; k < fanout; ++k) {
          auto j = lo + static_cast<std::int64_t>(rng() % static_cast<unsigned>(hi - lo));
          sampled.push_back(g.neighbours[static_cast<std::size_t>(j)]);
        }
      }
    }
    {
      GNNPROF_STAGE("materialize");
      GNNPROF_LINE(x.resize(sampled.size() * feat));
      GNNPROF_LINE(for (std::size_t r = 0; r < sampled.size(); ++r) std::memcpy(&x[r * feat], &features[static_cast<std::size_t>(sampled[r]) * feat], feat * sizeof(float)));
      GNNPROF_MATERIALIZE("features", sampled.size(), sampled.size() * feat * sizeof(float));
    }
    double loss = 0;
    const std::size_t rows = sampled.size();
    {
      GNNPROF_STAGE("forward");
      h.resize(rows * m.hidden);
      y.resize(rows);
      for (std::size_t r = 0; r < rows; ++r) {
        const float* xr = &x[r * feat];
        float* hr = &h[r * m.hidden];
        std::fill(hr, hr + m.hidden, 0.f);
        for (int i = 0; i < feat; ++i) {
          const float xi = xr[i];
          const float* wi = &m.w1[static_cast<std::size_t>(i) * m.hidden];
          for (int j = 0; j < m.hidden; ++j) hr[j] += wi[j] * xi;
        }
        float out = 0;
        for (int j = 0; j < m.hidden; ++j) {
          hr[j] = hr[j] > 0 ? hr[j] : 0;
          out += m.w2[j] * hr[j];
        }
        y[r] = out;
      }
    }
    {
      GNNPROF_STAGE("backward");
      std::fill(m.gw1.begin(), m.gw1.end(), 0.f);
      std::fill(m.gw2.begin(), m.gw2.end(), 0.f);
      for (std::size_t r = 0; r < rows; ++r) {
        const float* xr = &x[r * feat];
        float err = y[r] - (xr[0] - 0.5f * xr[1]);
        loss += 0.5 * err * err;
        const float* hr = &h[r * m.hidden];
        for (int j = 0; j < m.hidden; ++j) {
          m.gw2[j] += err * hr[j];
          grad_h[j] = hr[j] > 0 ? err * m.w2[j] : 0.f;
        }
        for (int i = 0; i < feat; ++i) {
          const float xi = xr[i];
          float* gi = &m.gw1[static_cast<std::size_t>(i) * m.hidden];
          for (int j = 0; j < m.hidden; ++j) gi[j] += grad_h[j] * xi;
        }
      }
    }
    {
      GNNPROF_STAGE("optimizer");
      const float lr = 1e-3f / static_cast<float>(sampled.size());
      for (std::size_t i = 0; i < m.w1.size(); ++i) m.w1[i] -= lr * m.gw1[i];
      for (std::size_t i = 0; i < m.w2.size(); ++i) m.w2[i] -= lr * m.gw2[i];
    }
    GNNPROF_COUNTER("loss", loss / static_cast<double>(sampled.size()));
    loss_sum += loss / static_cast<double>(sampled.size());
  }
  GNNPROF_STEP_END();
  std::printf("demo_loop: %d iterations, mean loss %.4f\n", iterations, loss_sum / iterations);
  gnnprof::stop();
  return 0;
}
