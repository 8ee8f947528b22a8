// test_support.h — helpers for tests that run real sessions in-process.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "gnnprof/gnnprof.h"

namespace gnnprof::testing {

/// A session that writes nothing and, by default, drains only at snapshot() (deterministic).
inline Config quiet_config(bool drainer = false) {
  Config c;
  c.write_at_stop = false;
  c.flush_at_exit = false;
  c.drainer_thread = drainer;
  c.quiet = true;
  return c;
}

/// Starts a session, runs `body`, stops and returns the profile.
template <typename F>
Profile profile_of(const Config& cfg, F&& body) {
  (void)stop();
  EXPECT_TRUE(start(cfg));
  body();
  EXPECT_TRUE(stop());
  auto p = snapshot();
  EXPECT_TRUE(static_cast<bool>(p)) << p.status().message();
  return p ? *p : Profile{};
}

inline const StageStats* find_stage(const Profile& p, const std::string& name) {
  for (const auto& s : p.stages)
    if (s.name == name) return &s;
  return nullptr;
}

/// Spins for about `ns` (no sleep: keeps the thread on-CPU so durations are well above noise).
inline void spin_ns(long ns) {
  auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count() < ns) {
  }
}

/// A traced Python line of /w/train.py, as the aggregator makes one.
inline LineStats train_py_line(const char* function, std::uint32_t n, const char* code, std::uint64_t hits,
                               std::int64_t ns) {
  LineStats l;
  l.file = "/w/train.py";
  l.function = function;
  l.line = n;
  l.code = code;
  l.hits = hits;
  l.total_ns = ns;
  return l;
}

}  // namespace gnnprof::testing
