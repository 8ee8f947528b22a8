// gnnprof/gnnprof.h — the one header a training loop includes.
//
// Quick start:
//
//   #include <gnnprof/gnnprof.h>
//
//   for (auto& batch : loader) {
//     GNNPROF_STEP();                              // iteration boundary
//     { GNNPROF_STAGE("sample");      sample(batch); }
//     GNNPROF_LINE(auto x = gather(batch.nodes));  // timed like line_profiler; x stays in scope
//     gnnprof::record_transfer(x.nbytes(), gnnprof::Direction::kH2D,
//                              gnnprof::HostMemory::kPinned, gnnprof::CopyMode::kAsync);
//     { GNNPROF_STAGE("forward");     loss = model(x); }
//     { GNNPROF_STAGE("backward");    loss.backward(); }
//   }
//   GNNPROF_STEP_END();
//
// Layers (docs/architecture.md):
//
//   macros (GNNPROF_STAGE, GNNPROF_LINE, ...)     compile to nothing under -DGNNPROF_DISABLE
//      |
//   RAII + functions (ScopedStage, LineTimer, record_*)    noexcept, this header
//      |
//   C ABI (gnnprof_c.h)           hot path: site id + raw timestamp -> per-thread ring
//      |
//   collector (profiler/src)      drainer thread -> aggregates -> Profile -> JSON
//
// No libtorch or CUDA type appears here, so including it costs milliseconds.
#pragma once

#include <cstdint>

#include "gnnprof/gnnprof_c.h"
#include "gnnprof/site.h"

namespace gnnprof {

inline constexpr const char* kVersion = "0.1.0";

namespace detail {
// Hot-path entry points (profiler/src/collector.cpp). All noexcept; all cheap no-ops when
// no session runs. stage_begin returns whether a range was pushed: only then call stage_end.
bool stage_begin(std::uint32_t site) noexcept;
void stage_end() noexcept;
bool line_begin(std::uint32_t site) noexcept;
void line_end() noexcept;
/// `flags` (kStep only): kStepOpsUnobserved and future per-iteration facts.
void step(bool begin_next, std::uint8_t flags = 0) noexcept;
inline constexpr std::uint8_t kStepOpsUnobserved = 1;
inline constexpr std::uint8_t kStepByLoader = 2;
inline constexpr std::uint8_t kStepDropOpen = 4;  // the iteration this mark ends is not one (kStep and kStepEnd)
void counter(std::uint32_t site, double value) noexcept;
void materialize(std::uint32_t site, std::uint64_t rows, std::uint64_t bytes) noexcept;
}  // namespace detail

/// RAII range: the stage is open from construction to destruction (also on exceptions).
///
///   { gnnprof::ScopedStage s(gnnprof_stage_site(name.c_str(), "data")); work(); }
class ScopedStage {
 public:
  explicit ScopedStage(std::uint32_t site) noexcept : active_(detail::stage_begin(site)) {}
  explicit ScopedStage(detail::SourceSite& site) noexcept
      : active_(detail::stage_begin(detail::site_id(site))) {}
  ~ScopedStage() {
    if (active_) detail::stage_end();
  }
  ScopedStage(const ScopedStage&) = delete;
  ScopedStage& operator=(const ScopedStage&) = delete;

 private:
  bool active_;
};

/// Times one statement for the line table. stop() ends the timing; if the statement throws,
/// the destructor records the hit with the time up to the throw.
class LineTimer {
 public:
  explicit LineTimer(detail::SourceSite& site) noexcept
      : active_(detail::line_begin(detail::site_id(site))) {}
  void stop() noexcept {
    if (active_) {
      active_ = false;
      detail::line_end();
    }
  }
  ~LineTimer() { stop(); }
  LineTimer(const LineTimer&) = delete;
  LineTimer& operator=(const LineTimer&) = delete;

 private:
  bool active_;
};

/// Records a copy of `bytes`, attributed to the innermost open stage and line of this thread.
/// `duration_ns` is the copy's own duration when known (e.g. from CUPTI), else 0.
inline void record_transfer(std::uint64_t bytes, Direction dir, HostMemory mem, CopyMode mode,
                            std::uint64_t duration_ns = 0) noexcept {
  gnnprof_transfer(bytes, static_cast<int>(dir), static_cast<int>(mem), static_cast<int>(mode),
                   duration_ns);
}

/// Records a materialization (a gather of `rows` rows, `bytes` bytes) in the current stage.
inline void record_materialization(std::uint64_t rows, std::uint64_t bytes) noexcept {
  detail::materialize(0, rows, bytes);
}

/// Marks an iteration boundary: ends the open iteration and begins the next.
inline void step() noexcept { detail::step(true); }
/// Ends the open iteration without beginning another (time until the next step() is outside
/// every iteration, e.g. validation).
inline void step_end() noexcept { detail::step(false); }

}  // namespace gnnprof

#define GNNPROF_CONCAT_INNER(a, b) a##b
#define GNNPROF_CONCAT(a, b) GNNPROF_CONCAT_INNER(a, b)

#if defined(GNNPROF_DISABLE)

#define GNNPROF_STAGE(name) static_cast<void>(0)
#define GNNPROF_STAGE_CAT(name, category) static_cast<void>(0)
#define GNNPROF_FUNCTION() static_cast<void>(0)
#define GNNPROF_LINE(...) __VA_ARGS__
#define GNNPROF_STEP() static_cast<void>(0)
#define GNNPROF_STEP_END() static_cast<void>(0)
#define GNNPROF_COUNTER(name, value) static_cast<void>(0)
#define GNNPROF_MATERIALIZE(name, rows, bytes) static_cast<void>(0)

#else

#define GNNPROF_SITE_(var, kind, name, category, code)                                    \
  static ::gnnprof::detail::SourceSite var {                                              \
    kind, name, category, __FILE__, __func__, code, static_cast<std::uint32_t>(__LINE__), \
        {0}                                                                               \
  }

#define GNNPROF_STAGE_IMPL_(n, name, category)                                                  \
  GNNPROF_SITE_(GNNPROF_CONCAT(gnnprof_site_, n), ::gnnprof::SiteKind::kStage, name, category, \
                nullptr);                                                                       \
  ::gnnprof::ScopedStage GNNPROF_CONCAT(gnnprof_scope_, n)(GNNPROF_CONCAT(gnnprof_site_, n))

/// Opens a stage until the end of the enclosing scope. `name` must be a string literal (or
/// any const char* with static storage). The category is derived from the name: sample,
/// materialize, h2d, loader_wait... -> "data"; forward, backward, optimizer -> "compute".
#define GNNPROF_STAGE(name) GNNPROF_STAGE_IMPL_(__COUNTER__, name, nullptr)
/// GNNPROF_STAGE with an explicit category.
#define GNNPROF_STAGE_CAT(name, category) GNNPROF_STAGE_IMPL_(__COUNTER__, name, category)
/// A stage named after the enclosing function, category "function".
#define GNNPROF_FUNCTION() GNNPROF_STAGE_IMPL_(__COUNTER__, __func__, "function")

#define GNNPROF_LINE_IMPL_(n, ...)                                                             \
  GNNPROF_SITE_(GNNPROF_CONCAT(gnnprof_lsite_, n), ::gnnprof::SiteKind::kLine, nullptr,       \
                nullptr, #__VA_ARGS__);                                                        \
  ::gnnprof::LineTimer GNNPROF_CONCAT(gnnprof_line_, n)(GNNPROF_CONCAT(gnnprof_lsite_, n));   \
  __VA_ARGS__;                                                                                 \
  GNNPROF_CONCAT(gnnprof_line_, n).stop()

/// Times one statement like line_profiler and records its file, line, function and text.
/// A declaration stays visible after the macro: `GNNPROF_LINE(auto y = model(x));`.
/// It expands to several statements: use it where a declaration may stand (not as the
/// unbraced body of an if/for).
#define GNNPROF_LINE(...) GNNPROF_LINE_IMPL_(__COUNTER__, __VA_ARGS__)

/// Iteration boundary (ends the open iteration, begins the next).
#define GNNPROF_STEP() ::gnnprof::step()
/// Ends the open iteration without beginning a new one.
#define GNNPROF_STEP_END() ::gnnprof::step_end()

#define GNNPROF_COUNTER_IMPL_(n, name, value)                                                  \
  do {                                                                                         \
    GNNPROF_SITE_(GNNPROF_CONCAT(gnnprof_csite_, n), ::gnnprof::SiteKind::kCounter, name,     \
                  nullptr, nullptr);                                                           \
    ::gnnprof::detail::counter(::gnnprof::detail::site_id(GNNPROF_CONCAT(gnnprof_csite_, n)), \
                               static_cast<double>(value));                                    \
  } while (0)
/// Samples a named counter (e.g. queue depth).
#define GNNPROF_COUNTER(name, value) GNNPROF_COUNTER_IMPL_(__COUNTER__, name, value)

#define GNNPROF_MATERIALIZE_IMPL_(n, name, rows, bytes)                                          \
  do {                                                                                           \
    GNNPROF_SITE_(GNNPROF_CONCAT(gnnprof_msite_, n), ::gnnprof::SiteKind::kMaterialize, name,   \
                  nullptr, nullptr);                                                             \
    ::gnnprof::detail::materialize(::gnnprof::detail::site_id(GNNPROF_CONCAT(gnnprof_msite_, n)), \
                                   static_cast<std::uint64_t>(rows),                             \
                                   static_cast<std::uint64_t>(bytes));                           \
  } while (0)
/// Records a named materialization (rows, bytes) at this source line.
#define GNNPROF_MATERIALIZE(name, rows, bytes) \
  GNNPROF_MATERIALIZE_IMPL_(__COUNTER__, name, rows, bytes)

#endif  // GNNPROF_DISABLE

#include "gnnprof/session.h"  // NOLINT(misc-header-include-cycle): Config, start, stop
