// CUPTI activity records -> gnnprof events, with synthetic records (no GPU, no libcupti):
// kernels and copies find the stage of the op that launched them through the external
// correlation id; memcpy kinds map to direction and pinned/pageable; timestamps are offset;
// and the emitter puts them into a real session as lane stages and transfers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "cupti_convert.h"
#include "gnnprof/gnnprof.h"
#include "gnnprof/gnnprof_c.h"
#include "gnnprof/session.h"

namespace gi = gnnprof::instrument;

namespace {

CUpti_ActivityKernel10 kernel(std::uint32_t corr, std::uint64_t start, std::uint64_t end, const char* name) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof(k));
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.correlationId = corr;
  k.start = start;
  k.end = end;
  k.deviceId = 0;
  k.streamId = 7;
  k.name = name;
  return k;
}

CUpti_ActivityMemcpy6 memcpy_rec(std::uint32_t corr, std::uint8_t copy_kind, std::uint8_t src, std::uint8_t dst,
                                 std::uint64_t bytes, bool async) {
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = copy_kind;
  m.srcKind = src;
  m.dstKind = dst;
  m.bytes = bytes;
  m.start = 1000;
  m.end = 1500;
  m.streamId = 3;
  m.correlationId = corr;
  m.flags = async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
  return m;
}

CUpti_ActivityExternalCorrelation ext(std::uint32_t corr, std::uint64_t id) {
  CUpti_ActivityExternalCorrelation e;
  std::memset(&e, 0, sizeof(e));
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.correlationId = corr;
  e.externalId = id;
  return e;
}

const CUpti_Activity* as_rec(const void* p) { return static_cast<const CUpti_Activity*>(p); }

}  // namespace

TEST(CuptiConvert, KernelsFindTheirOpThroughExternalCorrelationEvenWhenItComesLater) {
  auto k1 = kernel(11, 100, 300, "sgemm");
  auto k2 = kernel(12, 400, 450, "relu");
  auto e1 = ext(11, 42);  // after the kernel in the buffer
  gi::CuptiConverter conv(1000);
  auto out = conv.convert({as_rec(&k1), as_rec(&k2), as_rec(&e1)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].kind, gi::GpuEvent::Kind::kKernel);
  EXPECT_EQ(out[0].lane, "GPU0 stream 7");
  EXPECT_EQ(out[0].name, "sgemm");
  EXPECT_EQ(out[0].external, 42u);
  EXPECT_EQ(out[0].begin_ns, 1100);  // offset applied
  EXPECT_EQ(out[0].end_ns, 1300);
  EXPECT_EQ(out[1].external, 0u);  // no correlation record: unattributed
  // A record whose launch completes in a later buffer still finds its op there.
  auto e3 = ext(13, 43);
  EXPECT_TRUE(conv.convert({as_rec(&e3)}).empty());
  auto k3 = kernel(13, 500, 600, "sgemm");
  EXPECT_EQ(conv.convert({as_rec(&k3)}).at(0).external, 43u);
  EXPECT_EQ(conv.kernels(), 3u);
  EXPECT_EQ(conv.kernels_correlated(), 2u);
}

// CUPTI writes external correlation records only in front of API records, so RUNTIME and
// DRIVER are enabled; their records are expected, not unknown.
TEST(CuptiConvert, ApiRecordsAreExpectedAndIgnored) {
  CUpti_ActivityAPI api;
  std::memset(&api, 0, sizeof(api));
  api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  api.correlationId = 5;
  CUpti_ActivityAPI drv = api;
  drv.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  auto e = ext(5, 7);
  auto k = kernel(5, 10, 20, "relu");
  gi::CuptiConverter conv;
  auto out = conv.convert({as_rec(&e), as_rec(&api), as_rec(&drv), as_rec(&k)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].external, 7u);
  EXPECT_EQ(conv.unknown_records(), 0u);
}

TEST(CuptiConvert, MemcpyKindsBecomeDirectionsMemoryKindsAndModes) {
  auto h2d_pinned = memcpy_rec(1, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
                               CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1 << 20, true);
  auto h2d_pageable = memcpy_rec(2, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                                 CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 4096, false);
  auto d2h = memcpy_rec(3, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                        CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 8, true);
  auto d2d = memcpy_rec(4, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                        CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 64, true);
  gi::CuptiConverter conv;
  auto out = conv.convert({as_rec(&h2d_pinned), as_rec(&h2d_pageable), as_rec(&d2h), as_rec(&d2d)});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].name, "memcpy HtoD");
  EXPECT_EQ(out[0].direction, GNNPROF_H2D);
  EXPECT_EQ(out[0].memory, GNNPROF_PINNED);
  EXPECT_EQ(out[0].mode, GNNPROF_ASYNC);
  EXPECT_EQ(out[0].bytes, 1u << 20);
  EXPECT_EQ(out[0].lane, "GPU0 stream 3");
  EXPECT_EQ(out[1].memory, GNNPROF_PAGEABLE);
  EXPECT_EQ(out[1].mode, GNNPROF_SYNC);
  EXPECT_EQ(out[2].direction, GNNPROF_D2H);
  EXPECT_EQ(out[2].memory, GNNPROF_PINNED);
  EXPECT_EQ(out[3].direction, GNNPROF_D2D);
  EXPECT_EQ(out[3].memory, GNNPROF_NO_HOST_MEMORY);
  // cudaMemcpyAsync from pageable memory returns once the host side is staged: sync for the
  // host, as the torch observer records the same copy.
  auto pageable_async = memcpy_rec(5, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                                   CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 4096, true);
  EXPECT_EQ(conv.convert({as_rec(&pageable_async)}).at(0).mode, GNNPROF_SYNC);
}

// A CUDA graph's launch: every node carries the launch's correlation id.
TEST(CuptiConvert, EveryNodeOfAGraphLaunchFindsTheLaunchingOp) {
  auto e = ext(21, 99);
  auto k1 = kernel(21, 10, 20, "node_a");
  auto k2 = kernel(21, 20, 30, "node_b");
  gi::CuptiConverter conv;
  auto out = conv.convert({as_rec(&e), as_rec(&k1)});
  auto later = conv.convert({as_rec(&k2)});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(out[0].external, 99u);
  EXPECT_EQ(later[0].external, 99u);
}

// Ids of calls that launched nothing are dropped once far behind, also across the 2^32 wrap.
TEST(CuptiConvert, OldCorrelationIdsArePrunedAcrossTheWrap) {
  gi::CuptiConverter conv;
  std::vector<CUpti_ActivityExternalCorrelation> recs;
  const std::uint32_t start = 0xFFFFFFFFu - 1000;  // wraps after 1001 ids
  for (std::uint32_t i = 0; i < (1u << 17) + 10; ++i) recs.push_back(ext(start + i, 1000 + i));
  std::vector<const CUpti_Activity*> ptrs;
  for (const auto& r : recs) ptrs.push_back(as_rec(&r));
  conv.convert(ptrs);
  const std::uint32_t last = start + (1u << 17) + 9;
  auto recent = kernel(last - 5, 0, 1, "recent");
  auto old = kernel(start + 3, 0, 1, "old");
  EXPECT_EQ(conv.convert({as_rec(&recent)}).at(0).external, 1000u + (1u << 17) + 4) << "kept: close to the latest";
  EXPECT_EQ(conv.convert({as_rec(&old)}).at(0).external, 0u) << "pruned: before the wrap, far behind";
}

TEST(CuptiConvert, SynchronizationAndUnknownRecords) {
  CUpti_ActivitySynchronization2 s;
  std::memset(&s, 0, sizeof(s));
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  s.start = 10;
  s.end = 90;
  s.correlationId = 5;
  CUpti_Activity other;
  std::memset(&other, 0, sizeof(other));
  other.kind = CUPTI_ACTIVITY_KIND_MEMORY;  // not enabled: unknown
  gi::CuptiConverter conv;
  auto out = conv.convert({as_rec(&s), &other, nullptr});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, gi::GpuEvent::Kind::kSync);
  EXPECT_EQ(out[0].lane, "CUDA sync");
  EXPECT_EQ(out[0].name, "cuda sync: stream");
  EXPECT_EQ(conv.unknown_records(), 1u);
}

// The emitter against a real session: GPU time per launching stage, on a lane of its own.
TEST(CuptiConvert, EmittedEventsBecomeGpuStagesOnLanesAndTransfers) {
  gnnprof::Config cfg;
  cfg.drainer_thread = false;
  cfg.write_at_stop = false;
  cfg.flush_at_exit = false;
  ASSERT_TRUE(gnnprof::start(cfg));
  const gnnprof_site_t fwd = gnnprof_stage_site("forward", nullptr);
  const gnnprof_site_t mm = gnnprof_stage_site("aten::mm", "op");
  const gnnprof_site_t line = gnnprof_line_site("train.py", 12, "train", "y_hat = model(x)");
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const std::int64_t t = static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
  gi::GpuEvent k;
  k.kind = gi::GpuEvent::Kind::kKernel;
  k.lane = "GPU0 stream 7";
  k.name = "_Z5sgemmPKfPfi";                              // mangled, as CUPTI reports it
  k.external = gi::pack_external(fwd, mm, line);  // what the torch observer pushes
  k.begin_ns = t + 1000;
  k.end_ns = t + 6000;
  gi::GpuEvent m;
  m.kind = gi::GpuEvent::Kind::kMemcpy;
  m.lane = "GPU0 stream 7";
  m.name = "memcpy HtoD";
  m.begin_ns = t + 100;
  m.end_ns = t + 900;
  m.bytes = 4096;
  m.direction = GNNPROF_H2D;
  m.memory = GNNPROF_PINNED;
  m.mode = GNNPROF_ASYNC;
  // The same kind of copy issued inside aten::to: the torch observer recorded its transfer.
  gi::GpuEvent seen = m;
  seen.external = gi::pack_external(fwd, gnnprof_stage_site("aten::to", "op"), 0);
  seen.begin_ns = t + 7000;
  seen.end_ns = t + 7500;
  // A device-to-device copy inside aten::copy_: the observer records none, so CUPTI's counts.
  gi::GpuEvent d2d = seen;
  d2d.name = "memcpy DtoD";
  d2d.direction = GNNPROF_D2D;
  d2d.memory = GNNPROF_NO_HOST_MEMORY;
  d2d.external = gi::pack_external(fwd, gnnprof_stage_site("aten::copy_", "op"), 0);
  // A kernel whose op ran outside every non-op stage: the range takes the op's name.
  gi::GpuEvent bare = k;
  bare.external = gi::pack_external(0, gnnprof_stage_site("aten::relu", "op"), 0);
  gi::GpuEventEmitter em;
  em.emit(k);
  em.emit(k);
  em.emit(m);
  em.emit(seen);
  em.emit(d2d);
  em.emit(bare);
  ASSERT_TRUE(gnnprof::stop());
  auto p = gnnprof::snapshot();
  ASSERT_TRUE(p);
  const gnnprof::StageStats* gpu_fwd = nullptr;
  const gnnprof::StageStats* gpu_copy = nullptr;
  for (const auto& s : p->stages) {
    if (s.name == "gpu: forward") gpu_fwd = &s;
    if (s.name == "gpu: memcpy HtoD") gpu_copy = &s;
  }
  ASSERT_NE(gpu_fwd, nullptr);
  EXPECT_EQ(gpu_fwd->category, "gpu");
  EXPECT_EQ(gpu_fwd->hits, 2u);
  EXPECT_EQ(gpu_fwd->total_ns, 10000);
  ASSERT_NE(gpu_copy, nullptr);  // copies are named by what they move, in any stage
  EXPECT_EQ(gpu_copy->hits, 2u);
  EXPECT_EQ(gpu_copy->total_ns, 1300);
  bool lane = false;
  for (const auto& th : p->threads) lane |= th.name == "GPU0 stream 7" && th.tid == 0;
  EXPECT_TRUE(lane);
  // The per-kernel table: demangled name, launching stage and op.
  ASSERT_EQ(p->kernels.size(), 2u);  // heaviest first: the forward one, then the bare relu
  EXPECT_EQ(p->kernels[1].op, "aten::relu");
  EXPECT_TRUE(std::any_of(p->stages.begin(), p->stages.end(), [](const auto& s) { return s.name == "gpu: aten::relu"; }));
  EXPECT_EQ(p->kernels[0].name, "sgemm(float const*, float*, int)");
  EXPECT_EQ(p->kernels[0].stage, "forward");
  EXPECT_EQ(p->kernels[0].op, "aten::mm");
  EXPECT_EQ(p->kernels[0].count, 2u);
  EXPECT_EQ(p->kernels[0].total_ns, 10000);
  // ... and the GPU time of the line that launched it.
  ASSERT_EQ(p->lines.size(), 1u);
  EXPECT_EQ(p->lines[0].file, "train.py");
  EXPECT_EQ(p->lines[0].line, 12u);
  EXPECT_EQ(p->lines[0].gpu_ns, 10000);
  ASSERT_EQ(p->transfers.size(), 2u);  // not the observed one twice; the DtoD one
  auto transfers = p->transfers;
  std::sort(transfers.begin(), transfers.end(), [](const auto& a, const auto& b) { return a.direction < b.direction; });
  EXPECT_EQ(transfers[1].direction, gnnprof::Direction::kD2D);
  EXPECT_EQ(transfers[0].count, 1u);
  EXPECT_EQ(transfers[0].bytes, 4096u);
  EXPECT_EQ(transfers[0].memory, gnnprof::HostMemory::kPinned);
  EXPECT_EQ(transfers[0].mode, gnnprof::CopyMode::kAsync);
  EXPECT_EQ(transfers[0].total_ns, 800);
}

TEST(CuptiConvert, KernelNamesAreDemangledAndExternalIdsSplitIntoStageOpAndLine) {
  EXPECT_EQ(gi::demangle("_Z5sgemmPKfPfi"), "sgemm(float const*, float*, int)");
  EXPECT_EQ(gi::demangle("ampere_sgemm_128x64_tn"), "ampere_sgemm_128x64_tn");  // extern "C": as is
  EXPECT_EQ(gi::demangle("_Znot-a-mangled-name"), "_Znot-a-mangled-name");       // fails: as is
  const std::uint64_t ext = gi::pack_external(3, 7, 11);
  EXPECT_EQ(gi::external_stage(ext), 3u);
  EXPECT_EQ(gi::external_op(ext), 7u);
  EXPECT_EQ(gi::external_line(ext), 11u);
  EXPECT_EQ(gi::external_op(3u), 0u);  // a stage alone (no op known)
  EXPECT_EQ(gi::external_line(gi::pack_external(3, 7, 0)), 0u);
  // A site id beyond 21 bits is left out rather than corrupting its neighbours.
  const std::uint64_t big = gi::pack_external(5, 1u << 21, 9);
  EXPECT_EQ(gi::external_stage(big), 5u);
  EXPECT_EQ(gi::external_op(big), 0u);
  EXPECT_EQ(gi::external_line(big), 9u);
}
