// preload_poll.h — the preload library's poll point, for its own collectors (NVTX injection).
#pragma once

namespace gnnprof::instrument {

/// Threadless mode's poll point (docs/zero-code.md, "Threads"): drains and flushes on the
/// calling thread when due (gnnprof_poll), or starts gnnprof's threads once the host has a
/// thread of its own. at_mark 1 at an iteration mark. Returns at once when gnnprof's threads
/// run. Never throws.
void preload_poll(int at_mark) noexcept;

}  // namespace gnnprof::instrument
