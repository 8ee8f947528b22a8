// libFuzzer target: `gnnprof` argument parsing. The input is argv (after "gnnprof"), one
// argument per NUL-separated field. parse_cli must return an exit code or go on, never crash;
// the validators then run on what was parsed (percentages of `check`, K=V lists of `ab`).
// Commands are not run: no file is read and no process is spawned.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cli.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string all(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args{"gnnprof"};
  for (std::size_t pos = 0; pos <= all.size() && args.size() < 64;) {
    const std::size_t end = std::min(all.find('\0', pos), all.size());
    args.push_back(all.substr(pos, end - pos));
    pos = end + 1;
  }
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  gnnprof::cli::Cli cli;
  if (gnnprof::cli::parse_cli(static_cast<int>(argv.size()), argv.data(), cli) >= 0) return 0;
  double pct = 0;
  (void)gnnprof::cli::parse_pct(cli.check.max_slowdown, pct);
  for (const auto& kv : cli.check.stage_limits) (void)gnnprof::cli::parse_pct(kv.substr(kv.find('=') == std::string::npos ? 0 : kv.find('=') + 1), pct);
  std::map<std::string, std::string> env;
  std::string bad;
  (void)gnnprof::cli::parse_env(cli.ab.baseline_env, env, bad);
  (void)gnnprof::cli::parse_env(cli.ab.candidate_env, env, bad);
  return 0;
}
