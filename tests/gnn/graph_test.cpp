// The sample's data layer: synthetic generator, binary graph file, fp16 feature file, Cora.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "gnnprof/gnn/feature_file.h"
#include "gnnprof/gnn/graph.h"
#include "gnnprof/gnn/half.h"

namespace gnnprof::gnn {
namespace {

namespace fs = std::filesystem;

std::string temp_dir(const std::string& name) {
  // lexically_normal: TempDir() ends in '/', and /proc/self/maps shows normalized paths.
  std::string d = (fs::path(::testing::TempDir()) / ("gnnprof_gnn_" + name + "_" + std::to_string(::getpid())))
                      .lexically_normal()
                      .string();
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

SyntheticSpec small_spec() {
  SyntheticSpec s;
  s.nodes = 5000;
  s.avg_degree = 8;
  s.feat_dim = 16;
  s.classes = 4;
  s.seed = 7;
  return s;
}

TEST(Half, RoundTripsAndRounds) {
  for (float f : {0.0f, -0.0f, 1.0f, -2.5f, 0.1f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f}) {
    float back = half_to_float(float_to_half(f));
    EXPECT_NEAR(back, f, std::fabs(f) * 1e-3 + 1e-7) << f;
  }
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);                       // overflow -> inf
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3c00);          // tie -> even
  EXPECT_EQ(float_to_half(1.0f + 3.0f / 2048), 0x3c02);          // tie -> even (up)
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
}

TEST(Synthetic, DeterministicValidAndPowerLaw) {
  Dataset a = generate_synthetic(small_spec(), nullptr);
  Dataset b = generate_synthetic(small_spec(), nullptr);
  ASSERT_TRUE(a.graph.validate()) << a.graph.validate().message();
  EXPECT_EQ(a.graph.indptr(), b.graph.indptr());
  EXPECT_EQ(a.graph.indices32(), b.graph.indices32());
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.graph.num_nodes(), 5000);
  const double avg = static_cast<double>(a.graph.num_edges()) / 5000.0;
  EXPECT_GT(avg, 7.0);
  EXPECT_LT(avg, 10.0);
  std::int64_t max_deg = 0;
  for (std::int64_t v = 0; v < 5000; ++v) max_deg = std::max(max_deg, a.graph.in_degree(v));
  EXPECT_GT(max_deg, 20 * 8);  // heavy tail: hubs far above the mean
  for (auto l : a.labels) EXPECT_TRUE(l >= 0 && l < 4);
  EXPECT_EQ(a.nodes_in(Split::kTrain).size(), 500u);
  // Homophily: most in-neighbours share the node's label.
  std::int64_t same = 0;
  for (std::int64_t v = 0; v < 5000; ++v)
    for (auto e = a.graph.indptr()[v]; e < a.graph.indptr()[v + 1]; ++e)
      same += a.labels[static_cast<std::size_t>(a.graph.neighbor(e))] == a.labels[static_cast<std::size_t>(v)];
  EXPECT_GT(static_cast<double>(same) / static_cast<double>(a.graph.num_edges()), 0.7);
  SyntheticSpec other = small_spec();
  other.seed = 8;
  EXPECT_NE(generate_synthetic(other, nullptr).labels, a.labels);
}

TEST(GraphFile, RoundTripAndTruncation) {
  const std::string d = temp_dir("graphfile");
  Dataset a = generate_synthetic(small_spec(), nullptr);
  ASSERT_TRUE(save_graph_file(a, d + "/g.bin"));
  auto b = load_graph_file(d + "/g.bin");
  ASSERT_TRUE(b) << b.status().message();
  EXPECT_EQ(b->graph.indptr(), a.graph.indptr());
  EXPECT_EQ(b->graph.indices32(), a.graph.indices32());
  EXPECT_EQ(b->labels, a.labels);
  EXPECT_EQ(b->split, a.split);
  EXPECT_EQ(b->num_classes, 4);
  fs::resize_file(d + "/g.bin", fs::file_size(d + "/g.bin") - 100);
  auto t = load_graph_file(d + "/g.bin");
  ASSERT_FALSE(t);
  EXPECT_NE(t.status().message().find(d + "/g.bin: truncated or corrupt"), std::string::npos) << t.status().message();
  std::ofstream(d + "/foreign.bin") << std::string(200, 'x');
  auto f = load_graph_file(d + "/foreign.bin");
  ASSERT_FALSE(f);
  EXPECT_EQ(f.status().message(), d + "/foreign.bin: not a gnnprof graph file");
  EXPECT_EQ(load_graph_file(d + "/missing.bin").status().message(), d + "/missing.bin: cannot open: No such file or directory");
}

int open_fds() {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) n += e.exists() ? 1 : 0;
  return n;
}

bool mapped(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(path) != std::string::npos) return true;
  return false;
}

TEST(FeatureFile, GatheredRowsEqualWrittenRowsAndTheFileIsReleased) {
  const std::string d = temp_dir("features");
  const std::string path = d + "/f.f16";
  const std::int64_t rows = 1000, dim = 37;  // 37: exercises the F16C tail
  auto value = [](std::int64_t r, std::int64_t j) { return static_cast<float>(r) * 0.01f - static_cast<float>(j) * 0.5f; };
  ASSERT_TRUE(write_feature_file(path, rows, dim, [&](std::int64_t r0, std::int64_t n, std::uint16_t* out) {
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t j = 0; j < dim; ++j) out[r * dim + j] = float_to_half(value(r0 + r, j));
  }));
  const int fds_before = open_fds();
  {
    auto f = MappedFeatures::open(path);
    ASSERT_TRUE(f) << f.status().message();
    EXPECT_EQ((*f)->rows(), rows);
    EXPECT_EQ((*f)->dim(), dim);
    EXPECT_EQ(open_fds(), fds_before);  // the mapping holds the file, not a descriptor
    EXPECT_TRUE(mapped(path));
    std::vector<std::int64_t> ids{999, 0, 500, 500, 3};
    std::vector<float> out(ids.size() * dim);
    (*f)->gather(ids.data(), 0, static_cast<std::int64_t>(ids.size()), out.data());
    for (std::size_t i = 0; i < ids.size(); ++i)
      for (std::int64_t j = 0; j < dim; ++j)
        EXPECT_EQ(out[i * dim + j], half_to_float(float_to_half(value(ids[i], j)))) << i << "," << j;
  }
  EXPECT_FALSE(mapped(path));  // unmapped on destruction
  EXPECT_EQ(open_fds(), fds_before);
  auto info = read_feature_header(path);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->rows, rows);
}

TEST(FeatureFile, MissingTruncatedAndForeignFilesAreClearErrors) {
  const std::string d = temp_dir("features_bad");
  auto m = MappedFeatures::open(d + "/none.f16");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.status().message(), d + "/none.f16: cannot open: No such file or directory");
  const std::string path = d + "/t.f16";
  ASSERT_TRUE(write_feature_file(path, 100, 8, [](std::int64_t, std::int64_t n, std::uint16_t* out) {
    std::fill(out, out + n * 8, float_to_half(1.0f));
  }));
  fs::resize_file(path, kFeatureHeaderBytes + 100 * 8 * 2 - 2);
  auto t = MappedFeatures::open(path);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.status().message(), path + ": truncated or corrupt (5694 bytes, expected 5696 for 100 x 8 fp16)");
  std::ofstream(d + "/foreign.f16") << std::string(5000, 'x');
  auto f = MappedFeatures::open(d + "/foreign.f16");
  ASSERT_FALSE(f);
  EXPECT_EQ(f.status().message(), d + "/foreign.f16: not a gnnprof feature file");
  std::ofstream(d + "/short.f16") << "GNNP";
  EXPECT_EQ(MappedFeatures::open(d + "/short.f16").status().message(), d + "/short.f16: truncated (no header)");
}

TEST(Synthetic, PrepareGeneratesOnceThenLoadsFromTheCache) {
  const std::string d = temp_dir("prepare");
  std::ostringstream log;
  auto a = prepare_synthetic(d, small_spec(), &log);
  ASSERT_TRUE(a) << a.status().message();
  EXPECT_NE(log.str().find("generating the synthetic dataset"), std::string::npos);
  std::ostringstream log2;
  auto b = prepare_synthetic(d, small_spec(), &log2);
  ASSERT_TRUE(b) << b.status().message();
  EXPECT_EQ(log2.str(), "");  // loaded, not generated
  EXPECT_EQ(a->graph.indptr(), b->graph.indptr());
  EXPECT_EQ(a->features_path, b->features_path);
  // A damaged cache entry is regenerated, not trusted.
  fs::resize_file(b->features_path, 5000);
  std::ostringstream log3;
  auto c = prepare_synthetic(d, small_spec(), &log3);
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_NE(log3.str().find("regenerating"), std::string::npos);
}

const std::string kTests = GNNPROF_TEST_DATA_DIR;

TEST(Cora, LoadsTheTinyHandmadeFiles) {
  const std::string cache = temp_dir("cora");
  auto ds = load_cora(kTests + "/data/cora_tiny", cache);
  ASSERT_TRUE(ds) << ds.status().message();
  EXPECT_EQ(ds->graph.num_nodes(), 5);
  EXPECT_EQ(ds->num_classes, 3);
  EXPECT_EQ(ds->feat_dim, 5);
  // Classes sorted by name: Neural_Networks=0, Reinforcement_Learning=1, Rule_Learning=2.
  EXPECT_EQ(ds->labels, (std::vector<std::int32_t>{0, 2, 1, 1, 0}));
  // 31336-1061127 appears in both directions and is deduplicated; edges are symmetric.
  EXPECT_EQ(ds->graph.num_edges(), 8);
  std::set<std::int64_t> n0;
  for (auto e = ds->graph.indptr()[0]; e < ds->graph.indptr()[1]; ++e) n0.insert(ds->graph.neighbor(e));
  EXPECT_EQ(n0, (std::set<std::int64_t>{1, 4}));
  auto f = MappedFeatures::open(ds->features_path);
  ASSERT_TRUE(f);
  std::vector<float> row(5);
  std::int64_t id = 0;
  f->get()->gather(&id, 0, 1, row.data());
  EXPECT_EQ(row, (std::vector<float>{0, 0.5f, 0, 0, 0.5f}));  // row-normalized
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(Cora, BadLinesAndUnknownIdsNameTheFileAndLine) {
  const std::string d = temp_dir("cora_bad");
  write(d + "/cora.content", "1\t0\t1\tA\n2\t1\tB\n");
  write(d + "/cora.cites", "1\t2\n");
  auto r = load_cora(d, d);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), d + "/cora.content:2: 1 word attributes, earlier lines have 2");
  write(d + "/cora.content", "1\t0\t7\tA\n");
  EXPECT_EQ(load_cora(d, d).status().message(), d + "/cora.content:1: word attribute \"7\" is not 0 or 1");
  write(d + "/cora.content", "1\tA\n");
  EXPECT_EQ(load_cora(d, d).status().message(), d + "/cora.content:1: expected <paper id> <word attributes...> <label>");
  write(d + "/cora.content", "1\t0\t1\tA\n2\t1\t0\tB\n");
  write(d + "/cora.cites", "1\t2\n2\t99\n");
  EXPECT_EQ(load_cora(d, d).status().message(), d + "/cora.cites:2: unknown paper id 99");
  write(d + "/cora.cites", "1\t2\t3\n");
  EXPECT_EQ(load_cora(d, d).status().message(), d + "/cora.cites:1: expected <cited paper id> <citing paper id>");
  EXPECT_EQ(load_cora(d + "/nope", d).status().message(), d + "/nope/cora.content: cannot open: No such file or directory");
}

}  // namespace
}  // namespace gnnprof::gnn
