// gnnprof/reports/json_reporter.h — the profile itself as `gnnprof.profile/1` JSON.
#pragma once

#include "gnnprof/reports/reporter.h"

namespace gnnprof::reports {

class JsonReporter final : public Reporter {
 public:
  const char* format() const noexcept override { return "json"; }
  using Reporter::render;
  Status render(const Report& report, std::ostream& out) const override;
};

}  // namespace gnnprof::reports
