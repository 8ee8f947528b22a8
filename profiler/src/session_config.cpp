// session_config.cpp — a session's Config from the environment (the table in config.h) and
// the output path's %p / %r / %R expansion.
#include <unistd.h>

#include <string>

#include "gnnprof/config.h"
#include "gnnprof/session.h"
#include "host_info.h"

namespace gnnprof {

Config Config::from_env() {
  // The defaults and the parsing are the table's (gnnprof/config.h).
  Config c;
  c.enabled = config::get_bool("GNNPROF_ENABLED");
  if (config::is_set("GNNPROF_OUTPUT")) c.output = config::get_string("GNNPROF_OUTPUT");
  c.buffer_events = config::get_count("GNNPROF_BUFFER_EVENTS");
  c.max_threads = config::get_count("GNNPROF_MAX_THREADS");
  c.timeline_events = config::get_count("GNNPROF_TIMELINE_EVENTS");
  c.quiet = config::get_bool("GNNPROF_QUIET");
  c.flush_interval_ms = static_cast<std::uint32_t>(config::get_count("GNNPROF_FLUSH_INTERVAL_MS"));
  c.drain_interval_ms = static_cast<std::uint32_t>(config::get_count("GNNPROF_DRAIN_INTERVAL_MS"));
  return c;
}

std::string resolved_output_path(const Config& cfg) { return detail::output_path_for(cfg, ::getpid()); }

namespace detail {
std::string output_path_for(const Config& cfg, pid_t pid, std::optional<std::int64_t> known_rank) {
  std::string pattern = cfg.output.empty() ? std::string("gnnprof-%p.json") : cfg.output;
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[i + 1];
      if (c == 'p') {
        out += std::to_string(pid);
        ++i;
        continue;
      }
      if (c == 'R') {  // "rank<N>." when RANK (else LOCAL_RANK) is set, else nothing
        auto rank = known_rank ? known_rank : detail::env_int("RANK");
        if (!rank) rank = detail::env_int("LOCAL_RANK");
        if (rank) out += "rank" + std::to_string(*rank) + ".";
        ++i;
        continue;
      }
      if (c == 'r') {
        auto rank = known_rank ? known_rank : detail::env_int("RANK");
        out += rank ? std::to_string(*rank) : std::string("0");
        ++i;
        continue;
      }
    }
    out += pattern[i];
  }
  return out;
}
}  // namespace detail

}  // namespace gnnprof
