// libFuzzer target: the gnnprof.compare/1 reader and the text renderer never crash.
#include <cstdint>
#include <string>

#include "gnnprof/reports/compare.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto c = gnnprof::reports::comparison_from_json(text, "fuzz");
  if (c && !c->metrics.empty()) (void)gnnprof::reports::comparison_text(*c);
  return 0;
}
