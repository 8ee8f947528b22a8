// gnnprof/internal/load_counts.h — the dynamic loader's counts of objects loaded and unloaded so
// far (dl_iterate_phdr's dlpi_adds / dlpi_subs): a cheap "did the set of loaded objects
// change?" before walking a list of hundreds of objects. Header-only; used by the session (the
// BLAS path in the profile's environment) and the preload (watching for libtorch and CUDA).
#pragma once

#include <link.h>

#include <cstddef>

namespace gnnprof::detail {

struct LoadCounts {
  unsigned long long adds = 0, subs = 0;  // both 0: this libc does not report them
  bool available() const { return adds != 0; }
  bool operator==(const LoadCounts& o) const { return adds == o.adds && subs == o.subs; }
};

inline LoadCounts load_counts() {
  LoadCounts out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t size, void* data) {
        auto* c = static_cast<LoadCounts*>(data);
        if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
          c->adds = info->dlpi_adds;
          c->subs = info->dlpi_subs;
        }
        return 1;  // every entry carries the same counters: the first is enough
      },
      &out);
  return out;
}

}  // namespace gnnprof::detail
