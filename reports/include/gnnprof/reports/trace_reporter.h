// gnnprof/reports/trace_reporter.h — Chrome Trace Event JSON (Perfetto UI, chrome://tracing).
//
// One process; each host thread is a track with its stages and lines as complete ("X")
// events; copies go on their own "transfers" track; counters (queue depth) and the host's RSS
// and CPU are counter ("C") tracks; iteration marks are instant events. Built from the
// profile's timeline (the first GNNPROF_TIMELINE_EVENTS raw events), so a long run's trace
// covers its beginning; the stage statistics cover the whole run.
#pragma once

#include "gnnprof/reports/reporter.h"

namespace gnnprof::reports {

class TraceReporter final : public Reporter {
 public:
  const char* format() const noexcept override { return "trace"; }
  using Reporter::render;
  Status render(const Report& report, std::ostream& out) const override;
};

}  // namespace gnnprof::reports
