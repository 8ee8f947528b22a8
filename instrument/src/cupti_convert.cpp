// cupti_convert.cpp — see cupti_convert.h.
#include "cupti_convert.h"

#include <fmt/format.h>

#include <algorithm>

namespace gnnprof::instrument {
namespace {

constexpr int kH2D = 0, kD2H = 1, kD2D = 2, kH2H = 3;
constexpr int kPageable = 0, kPinned = 1, kNoHost = 2;
constexpr int kSync = 0, kAsync = 1;

const char* copy_name(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "memcpy PtoP";
    default: return "memcpy";
  }
}

int memory_of(std::uint8_t host_kind) {
  if (host_kind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED) return kPinned;
  if (host_kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE) return kPageable;
  return kNoHost;
}

const char* sync_name(CUpti_ActivitySynchronizationType t) {
  switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "cuda sync: event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "cuda sync: stream wait event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "cuda sync: stream";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "cuda sync: device";
    default: return "cuda sync";
  }
}

}  // namespace

std::vector<GpuEvent> CuptiConverter::convert(const std::vector<const CUpti_Activity*>& records) {
  for (const CUpti_Activity* r : records) {
    if (r != nullptr && r->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
      const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(r);
      external_[e->correlationId] = e->externalId;
      latest_ = e->correlationId;
    }
  }
  // An id stays while its activities may still come (a graph launch's nodes all carry the
  // launch's id); RUNTIME and DRIVER give every call inside a pushed op one, most launching
  // nothing, so ids far behind the latest go (distance taken modulo 2^32: ids wrap).
  if (external_.size() > kMaxPending)
    std::erase_if(external_, [&](const auto& kv) {
      return static_cast<std::int32_t>(latest_ - kv.first) > static_cast<std::int32_t>(kMaxPending / 2);
    });
  auto ext = [&](std::uint32_t corr) -> std::uint64_t {
    auto it = external_.find(corr);
    return it == external_.end() ? 0 : it->second;
  };
  std::vector<GpuEvent> out;
  for (const CUpti_Activity* r : records) {
    if (r == nullptr) continue;
    switch (r->kind) {
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      case CUPTI_ACTIVITY_KIND_RUNTIME:  // enabled only so that CUPTI writes the records above
      case CUPTI_ACTIVITY_KIND_DRIVER:
        break;
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
        GpuEvent ev;
        ev.kind = GpuEvent::Kind::kKernel;
        ev.lane = fmt::format("GPU{} stream {}", k->deviceId, k->streamId);
        ev.name = k->name != nullptr ? k->name : "(kernel)";
        ev.external = ext(k->correlationId);
        ev.begin_ns = static_cast<std::int64_t>(k->start) + offset_;
        ev.end_ns = static_cast<std::int64_t>(k->end) + offset_;
        ++kernels_;
        if (ev.external != 0) ++kernels_correlated_;
        out.push_back(std::move(ev));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(r);
        GpuEvent ev;
        ev.kind = GpuEvent::Kind::kMemcpy;
        ev.lane = fmt::format("GPU{} stream {}", m->deviceId, m->streamId);
        ev.name = copy_name(m->copyKind);
        ev.external = ext(m->correlationId);
        ev.begin_ns = static_cast<std::int64_t>(m->start) + offset_;
        ev.end_ns = static_cast<std::int64_t>(m->end) + offset_;
        ev.bytes = m->bytes;
        switch (m->copyKind) {
          case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
          case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
            ev.direction = kH2D;
            ev.memory = memory_of(m->srcKind);
            break;
          case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
          case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
            ev.direction = kD2H;
            ev.memory = memory_of(m->dstKind);
            break;
          case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
            ev.direction = kH2H;
            ev.memory = memory_of(m->srcKind);
            break;
          default:
            ev.direction = kD2D;
            ev.memory = kNoHost;
            break;
        }
        // The host's view, as the torch observer records it: a copy from or to pageable memory
        // returns only once the host side is done (staged or copied), whatever API issued it.
        ev.mode = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0 && ev.memory != kPageable ? kAsync : kSync;
        out.push_back(std::move(ev));
        break;
      }
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(r);
        GpuEvent ev;
        ev.kind = GpuEvent::Kind::kSync;
        ev.lane = "CUDA sync";
        ev.name = sync_name(s->type);
        ev.external = ext(s->correlationId);
        ev.begin_ns = static_cast<std::int64_t>(s->start) + offset_;
        ev.end_ns = static_cast<std::int64_t>(s->end) + offset_;
        out.push_back(std::move(ev));
        break;
      }
      default:
        ++unknown_;
        break;
    }
  }
  return out;
}

}  // namespace gnnprof::instrument

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

#include "gnnprof/gnnprof_c.h"

namespace gnnprof::instrument {

std::string demangle(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;  // C kernels (extern "C") and CUPTI's placeholders
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

std::uint32_t GpuEventEmitter::lane_of(const std::string& name) {
  auto it = lanes_.find(name);
  if (it != lanes_.end()) return it->second;
  const std::uint32_t lane = gnnprof_lane(name.c_str());
  lanes_.emplace(name, lane);
  return lane;
}

std::uint32_t GpuEventEmitter::kernel_site(const std::string& mangled) {
  auto it = kernels_.find(mangled);
  if (it != kernels_.end()) return it->second;
  const std::uint32_t site = gnnprof_stage_site(demangle(mangled).c_str(), "kernel");
  kernels_.emplace(mangled, site);
  return site;
}

std::uint32_t GpuEventEmitter::site_for(std::uint64_t external, const std::string& fallback) {
  std::string name;
  // The launching stage; an op with no stage around it (a linked program without phases) names
  // the range itself.
  for (const std::uint32_t site : {external_stage(external), external_op(external)}) {
    char buf[256];
    if (site != 0 && gnnprof_site_name(site, buf, sizeof(buf)) > 0) {
      name = std::string("gpu: ") + buf;
      break;
    }
  }
  if (name.empty()) name = "gpu: " + fallback;
  return site_named(name, "gpu");
}

bool GpuEventEmitter::observed_copy(std::uint32_t op) {
  if (op == 0) return false;
  auto it = copy_ops_.find(op);
  if (it != copy_ops_.end()) return it->second;
  char buf[128];
  const std::string name = gnnprof_site_name(op, buf, sizeof(buf)) > 0 ? buf : "";
  const bool copy = is_observed_copy_op(name);
  copy_ops_.emplace(op, copy);
  return copy;
}

std::uint32_t GpuEventEmitter::site_named(const std::string& name, const char* category) {
  auto it = sites_.find(name);
  if (it != sites_.end()) return it->second;
  const std::uint32_t site = gnnprof_stage_site(name.c_str(), category);
  sites_.emplace(name, site);
  return site;
}

void GpuEventEmitter::emit(const GpuEvent& ev) {
  const std::uint32_t lane = lane_of(ev.lane);
  const auto ctx = external_stage(ev.external);
  switch (ev.kind) {
    case GpuEvent::Kind::kKernel:
      gnnprof_lane_range(lane, site_for(ev.external, "(no op)"), ctx, ev.begin_ns, ev.end_ns);
      gnnprof_lane_kernel_at(lane, kernel_site(ev.name), ctx, external_op(ev.external), external_line(ev.external),
                             ev.begin_ns, ev.end_ns);
      break;
    case GpuEvent::Kind::kMemcpy:
      // Named by what it moved, in its launching stage. A host<->device copy issued inside a
      // copy op the observer saw is already its transfer; any other copy is CUPTI's to count.
      gnnprof_lane_range(lane, site_named("gpu: " + ev.name, "gpu"), ctx, ev.begin_ns, ev.end_ns);
      if (!((ev.direction == kH2D || ev.direction == kD2H) && observed_copy(external_op(ev.external))))
        gnnprof_lane_transfer(lane, ctx, ev.bytes, ev.direction, ev.memory, ev.mode, ev.begin_ns, ev.end_ns);
      break;
    case GpuEvent::Kind::kSync:
      gnnprof_lane_range(lane, site_named(ev.name, "sync"), ctx, ev.begin_ns, ev.end_ns);
      break;
  }
}

}  // namespace gnnprof::instrument
