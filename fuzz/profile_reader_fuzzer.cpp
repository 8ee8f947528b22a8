// libFuzzer target: the profile reader must reject any input with a Status, never crash,
// hang or leak. Accepted inputs must round-trip (write -> read -> write gives the same text).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "gnnprof/profile_io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  gnnprof::Result<gnnprof::Profile> p = gnnprof::profile_from_json(text, "fuzz");
  if (!p) return 0;
  const std::string once = gnnprof::profile_to_json(*p);
  gnnprof::Result<gnnprof::Profile> again = gnnprof::profile_from_json(once, "fuzz-again");
  if (!again || gnnprof::profile_to_json(*again) != once) std::abort();
  return 0;
}
