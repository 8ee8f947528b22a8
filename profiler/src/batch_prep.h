// batch_prep.h — the training loop's Python batch preparation, from its traced lines.
#pragma once

#include "gnnprof/profile.h"

namespace gnnprof::detail {

/// Adds the data stage kBatchPrepStage: the time, in no stage, of the training loop's traced
/// header and of the statements above its first forward line that bind what the forward
/// reads (a numpy or C-extension sampler runs no torch op), per line, per iteration and as a
/// stage row, with a "batch-prep" collector saying which lines. Nothing when no such loop is
/// found or it takes under 1 % of an iteration; a collector "batch-prep" (off) saying why
/// when a traced function of another runs under the loop in most iterations; nothing twice.
void attribute_batch_prep(Profile& p);

}  // namespace gnnprof::detail
