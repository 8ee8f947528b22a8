// The JSON profile: round trip, required keys, and clear errors for bad files.
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <thread>

#include "gnnprof/profile_io.h"
#include "test_support.h"

namespace gnnprof {
namespace {

std::string temp_path(const std::string& name) {
  return (std::string(::testing::TempDir()) + "/gnnprof_io_" + name);
}

Profile real_profile() {
  return testing::profile_of(testing::quiet_config(), [] {
    for (int i = 0; i < 5; ++i) {
      GNNPROF_STEP();
      { GNNPROF_STAGE("sample"); testing::spin_ns(5000); }
      GNNPROF_LINE(record_transfer(4096, Direction::kH2D, HostMemory::kPageable, CopyMode::kSync));
      GNNPROF_MATERIALIZE("labels", 16, 64);
      GNNPROF_COUNTER("queue_depth", i);
      std::thread([] { GNNPROF_STAGE("producer"); }).join();
    }
    GNNPROF_STEP_END();
  });
}

TEST(ProfileIo, WriteReadWriteIsIdentical) {
  Profile p = real_profile();
  const std::string path = temp_path("roundtrip.json");
  ASSERT_TRUE(write_profile_file(p, path));
  auto back = read_profile_file(path);
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(profile_to_json(*back), profile_to_json(p));
  const std::string path2 = temp_path("roundtrip2.json");
  ASSERT_TRUE(write_profile_file(*back, path2));
  std::ifstream a(path), b(path2);
  std::string sa((std::istreambuf_iterator<char>(a)), {}), sb((std::istreambuf_iterator<char>(b)), {});
  EXPECT_EQ(sa, sb);
}

// The timeline's columns are written as text of their own (profile_text), not through the tree:
// every value survives the round trip, floats stay floats, and an empty timeline is valid JSON.
TEST(ProfileIo, TimelineColumnsRoundTripExactly) {
  Profile p;
  p.timeline_names = {"a \"quoted\" name", "\u00e9t\u00e9\n"};
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  p.timeline = {TimelineEvent{0, TimelineKind::kStage, 0, -5, big, 0.1},
                TimelineEvent{std::numeric_limits<std::uint32_t>::max(), TimelineKind::kCounter, 1, 7, 0, 1e300},
                TimelineEvent{2, TimelineKind::kTransfer, 1, 8, 3, 3.0}};
  const std::string text = profile_to_json(p);
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["timeline"]["names"][0], "a \"quoted\" name");
  EXPECT_TRUE(j["timeline"]["value"][2].is_number_float()) << "3.0 is written as a float";
  EXPECT_EQ(j["timeline"]["ts_ns"][0], -5);
  EXPECT_EQ(j["timeline"]["dur_ns"][0], big);
  auto back = profile_from_json(text, "mem");
  ASSERT_TRUE(back) << back.status().message();
  ASSERT_EQ(back->timeline.size(), 3u);
  EXPECT_EQ(back->timeline_names, p.timeline_names);
  EXPECT_EQ(back->timeline[0].value, 0.1);
  EXPECT_EQ(back->timeline[1].value, 1e300);
  EXPECT_EQ(back->timeline[1].thread, std::numeric_limits<std::uint32_t>::max());
  EXPECT_EQ(back->timeline[1].kind, TimelineKind::kCounter);
  EXPECT_EQ(profile_to_json(*back), text);

  Profile empty;
  auto e = nlohmann::json::parse(profile_to_json(empty));
  EXPECT_TRUE(e["timeline"]["thread"].is_array());
  EXPECT_TRUE(e["timeline"]["names"].empty());
}

// A name that is not UTF-8 (a host string, a collector note) must not cost the profile: the
// byte is written as U+FFFD, everything else is kept.
TEST(ProfileIo, InvalidUtf8IsReplacedNotFatal) {
  Profile p = real_profile();
  p.collectors.push_back({"cupti", true, std::string("a\x80\xC0" "b")});
  p.timeline_names.push_back(std::string("x\x80"));
  const std::string path = temp_path("utf8.json");
  ASSERT_TRUE(write_profile_file(p, path));
  auto back = read_profile_file(path);
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(back->collectors.back().reason, "a\xEF\xBF\xBD\xEF\xBF\xBD" "b");
  EXPECT_EQ(back->timeline_names.back(), "x\xEF\xBF\xBD");
  EXPECT_EQ(back->stages.size(), p.stages.size());
}

TEST(ProfileIo, SchemaRequiredKeysArePresent) {
  auto j = nlohmann::json::parse(profile_to_json(real_profile()));
  EXPECT_EQ(j["schema"], "gnnprof.profile/1");
  for (const char* key : {"schema", "tool", "run", "collectors", "wall_ns", "stages", "iterations", "lines",
                          "transfers", "dropped_events", "diagnostics"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["tool"]["name"], "gnnprof");
  for (const char* key : {"command", "pid", "host", "start_time", "rank", "world_size"})
    EXPECT_TRUE(j["run"].contains(key)) << key;
  EXPECT_TRUE(j["wall_ns"].is_number_integer());
  for (const auto& s : j["stages"]) {
    for (const char* key : {"name", "category", "hits", "total_ns", "self_ns", "p50_ns", "p90_ns", "max_ns"})
      EXPECT_TRUE(s.contains(key)) << key;
    EXPECT_TRUE(s["total_ns"].is_number_integer());
  }
  ASSERT_FALSE(j["iterations"].empty());
  for (const char* key : {"index", "wall_ns", "stages"}) EXPECT_TRUE(j["iterations"][0].contains(key)) << key;
  ASSERT_FALSE(j["lines"].empty());
  for (const char* key : {"file", "line", "function", "code", "hits", "total_ns"})
    EXPECT_TRUE(j["lines"][0].contains(key)) << key;
  EXPECT_EQ(j["collectors"][0]["name"], "host");
  EXPECT_TRUE(j["collectors"][0]["enabled"].get<bool>());
  EXPECT_TRUE(j["diagnostics"].is_array());
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(ProfileIo, KernelsRoundTripAndAreOptionalWhenReading) {
  Profile p = real_profile();
  p.kernels = {KernelStats{"sgemm", "forward", "aten::mm", 3, 300, 90, 120}};
  auto j = nlohmann::json::parse(profile_to_json(p));
  ASSERT_EQ(j["kernels"].size(), 1u);
  EXPECT_EQ(j["kernels"][0]["op"], "aten::mm");
  const std::string path = temp_path("kernels.json");
  write_text(path, j.dump());
  auto back = read_profile_file(path);
  ASSERT_TRUE(back) << back.status().message();
  ASSERT_EQ(back->kernels.size(), 1u);
  EXPECT_EQ(back->kernels[0].name, "sgemm");
  EXPECT_EQ(back->kernels[0].count, 3u);
  EXPECT_EQ(back->kernels[0].min_ns, 90);
  EXPECT_EQ(back->kernels[0].max_ns, 120);
  j.erase("kernels");  // a profile written before the table existed
  write_text(path, j.dump());
  back = read_profile_file(path);
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_TRUE(back->kernels.empty());
}

TEST(ProfileIo, MissingFileNamesTheFile) {
  auto r = read_profile_file("/nonexistent/p.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "/nonexistent/p.json: cannot open: No such file or directory");
}

TEST(ProfileIo, TruncatedFileIsReportedAsTruncated) {
  std::string full = profile_to_json(real_profile());
  const std::string path = temp_path("truncated.json");
  write_text(path, full.substr(0, full.size() / 2));
  auto r = read_profile_file(path);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find(path + ": truncated JSON"), std::string::npos) << r.status().message();
}

TEST(ProfileIo, ForeignFilesAreRejected) {
  const std::string path = temp_path("foreign.json");
  write_text(path, R"({"traceEvents": []})");
  auto r = read_profile_file(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), path + ": not a gnnprof profile (no \"schema\" key)");

  write_text(path, R"({"schema": 1})");
  r = read_profile_file(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), path + ": not a gnnprof profile (\"schema\" is number, not a string)");

  write_text(path, R"({"schema": "gnnprof.compare/1"})");
  r = read_profile_file(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), path + ": not a gnnprof profile (schema \"gnnprof.compare/1\")");

  write_text(path, R"({"schema": "gnnprof.profile/9"})");
  r = read_profile_file(path);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("unsupported profile schema"), std::string::npos);

  write_text(path, "\x7f" "ELF\x02\x01");
  r = read_profile_file(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), path + ": not a JSON file (malformed at byte 1)");  // had a stray ")"

  r = read_profile_file(::testing::TempDir());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), ::testing::TempDir() + ": is a directory, not a profile file");

  write_text(path, "");
  r = read_profile_file(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), path + ": empty file");
}

TEST(ProfileIo, NumbersTooLargeForADoubleAreAnErrorNotACrash) {
  // Found by fuzz/profile_reader_fuzzer (regression input fuzz/corpus/profile/crash-number-overflow.json):
  // nlohmann throws out_of_range, not parse_error, for such a number.
  auto r = profile_from_json(R"({"schema": "gnnprof.profile/1", "wall_ns": 1E6000000})", "big.json");
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("big.json: invalid JSON: "), std::string::npos) << r.status().message();
}

TEST(ProfileIo, WrongTypesNameTheField) {
  auto j = nlohmann::ordered_json::parse(profile_to_json(real_profile()));
  j["stages"][0]["hits"] = "many";
  auto r = profile_from_json(j.dump(), "x.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "x.json: $.stages[0].hits: wrong type (string)");
  j = nlohmann::ordered_json::parse(profile_to_json(real_profile()));
  j.erase("wall_ns");
  r = profile_from_json(j.dump(), "x.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "x.json: $: missing key \"wall_ns\"");
}

TEST(ProfileIo, OptionalFieldsAreWrittenWhenSetAndReadWhenPresent) {
  Profile p = real_profile();
  ASSERT_FALSE(p.iterations.empty());
  auto j = nlohmann::ordered_json::parse(profile_to_json(p));
  // Unset: a null rank, no run_id, no ops_observed, per-iteration lines or line attribution.
  EXPECT_TRUE(j["run"]["rank"].is_null());
  EXPECT_FALSE(j["run"].contains("run_id"));
  EXPECT_FALSE(j["run"].contains("exit_code"));
  EXPECT_FALSE(j["run"].contains("exit_signal"));
  EXPECT_FALSE(j["iterations"][0].contains("ops_observed"));
  EXPECT_FALSE(j["lines"][0].contains("backward_ns"));
  EXPECT_FALSE(j["lines"][0].contains("unobserved_hits"));
  EXPECT_FALSE(j["lines"][0].contains("unobserved_ns"));
  EXPECT_FALSE(j["lines"][0].contains("began_running"));
  // Set: written, and read back the same.
  p.run.rank = 3;
  p.run.run_id = "job-7";
  p.run.exit_code = 0;  // known, and a success: written
  p.iterations[0].ops_observed = false;
  p.iterations[0].lines = {{0, 1200}};
  p.lines[0].backward_ns = 900;
  p.lines[0].unobserved_hits = 1;
  p.lines[0].unobserved_ns = 700;
  p.lines[0].began_running = 1;
  p.lines[0].stages = {{"forward", 300}};
  j = nlohmann::ordered_json::parse(profile_to_json(p));
  EXPECT_EQ(j["run"]["rank"], 3);
  EXPECT_EQ(j["run"]["run_id"], "job-7");
  EXPECT_EQ(j["run"]["exit_code"], 0);
  EXPECT_FALSE(j["run"].contains("exit_signal"));
  EXPECT_EQ(j["iterations"][0]["ops_observed"], false);
  EXPECT_EQ(j["iterations"][0]["lines"]["0"], 1200);
  EXPECT_EQ(j["lines"][0]["backward_ns"], 900);
  EXPECT_EQ(j["lines"][0]["unobserved_hits"], 1);
  EXPECT_EQ(j["lines"][0]["unobserved_ns"], 700);
  EXPECT_EQ(j["lines"][0]["began_running"], 1);
  EXPECT_EQ(j["lines"][0]["stages"]["forward"], 300);
  auto back = profile_from_json(j.dump(), "x.json");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(back->run.rank, 3);
  EXPECT_FALSE(back->run.world_size.has_value());
  EXPECT_EQ(back->run.run_id, "job-7");
  EXPECT_EQ(back->run.exit_code, 0);
  EXPECT_FALSE(back->run.failed());
  EXPECT_FALSE(back->iterations[0].ops_observed);
  EXPECT_TRUE(back->iterations[1].ops_observed);
  EXPECT_EQ(back->iterations[0].lines.at(0), 1200);
  EXPECT_EQ(back->lines[0].stages.at("forward"), 300);
  EXPECT_EQ(back->lines[0].unobserved_hits, 1u);
  EXPECT_EQ(back->lines[0].unobserved_ns, 700);
  EXPECT_EQ(back->lines[0].began_running, 1u);
  EXPECT_EQ(profile_to_json(*back), profile_to_json(p));
  // Bad values name their path: a map key, a map value, a timeline column.
  auto bad = j;
  bad["iterations"][0]["lines"] = {{"first", 1}};
  auto r = profile_from_json(bad.dump(), "x.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "x.json: $.iterations[0].lines: key \"first\" is not an index");
  bad = j;
  bad["lines"][0]["stages"]["forward"] = "slow";
  r = profile_from_json(bad.dump(), "x.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "x.json: $.lines[0].stages.forward: wrong type (string)");
  bad = j;
  ASSERT_FALSE(bad["timeline"]["kind"].empty());
  bad["timeline"]["kind"][0] = 99;
  r = profile_from_json(bad.dump(), "x.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "x.json: $.timeline[0]: kind or name index out of range");
  bad = j;
  bad["timeline"]["ts_ns"][0] = "soon";
  r = profile_from_json(bad.dump(), "x.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "x.json: $.timeline[0].ts_ns: wrong type (string)");
  bad = j;
  bad["timeline"]["thread"][0] = -1;
  r = profile_from_json(bad.dump(), "x.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "x.json: $.timeline[0].thread: integer out of range");
  bad = j;
  bad["timeline"]["value"].erase(0);
  r = profile_from_json(bad.dump(), "x.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "x.json: $.timeline: columns differ in length");
}

TEST(ProfileIo, TransferEnumsRoundTripAndUnknownNamesAreErrors) {
  Profile p = real_profile();
  p.transfers = {TransferStats{"h2d", "", 0, Direction::kD2H, HostMemory::kPageable, CopyMode::kAsync, 3, 300, 0}};
  auto j = nlohmann::ordered_json::parse(profile_to_json(p));
  EXPECT_EQ(j["transfers"][0]["direction"], "d2h");
  EXPECT_EQ(j["transfers"][0]["memory"], "pageable");
  EXPECT_EQ(j["transfers"][0]["mode"], "async");
  auto back = profile_from_json(j.dump(), "x.json");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->transfers[0].direction, Direction::kD2H);
  EXPECT_EQ(back->transfers[0].memory, HostMemory::kPageable);
  EXPECT_EQ(back->transfers[0].mode, CopyMode::kAsync);
  j["transfers"][0]["memory"] = "locked";
  auto r = profile_from_json(j.dump(), "x.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "x.json: $.transfers[0].memory: \"locked\" is not one of pinned, pageable or none");
}

TEST(ProfileIo, AtomicWriteKeepsThePreviousFileOnFailure) {
  const std::string path = temp_path("keep.json");
  write_text(path, "previous");
  // A directory that does not exist: the write fails and names the target.
  Status st = write_file_atomic("/nonexistent-dir/keep.json", "new");
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("cannot write /nonexistent-dir/keep.json"), std::string::npos);
  ASSERT_TRUE(write_file_atomic(path, "new"));
  std::ifstream f(path);
  std::string s((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(s, "new");
}

// Through a symbolic link the file it names is replaced and the link stays; a FIFO (as
// /dev/stdout may be) is written in place, not replaced by a regular file.
TEST(ProfileIo, AtomicWriteGoesThroughALinkAndIntoAFifo) {
  const std::string target = temp_path("target.json"), link = temp_path("link.json"), fifo = temp_path("out.fifo");
  write_text(target, "old");
  std::remove(link.c_str());
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  ASSERT_TRUE(write_file_atomic(link, "new"));
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  std::ifstream f(target);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(f)), {}), "new");

  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    std::ifstream in(fifo);
    got.assign((std::istreambuf_iterator<char>(in)), {});
  });
  const bool wrote = static_cast<bool>(write_file_atomic(fifo, "through"));
  EXPECT_TRUE(wrote);
  if (!wrote) ::close(::open(fifo.c_str(), O_WRONLY | O_NONBLOCK));  // the reader must not wait forever
  reader.join();
  EXPECT_EQ(got, "through");
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  std::remove(fifo.c_str());
  std::remove(link.c_str());

  // A descriptor the process has (stdout redirected with `>> log`): appended through it, the
  // file's earlier contents kept.
  const std::string log = temp_path("appended.log");
  write_text(log, "earlier\n");
  const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(write_file_atomic("/proc/self/fd/" + std::to_string(fd), "report\n"));
  ::close(fd);
  std::ifstream l(log);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(l)), {}), "earlier\nreport\n");
}

}  // namespace
}  // namespace gnnprof
