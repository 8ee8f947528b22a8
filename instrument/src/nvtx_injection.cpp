// nvtx_injection.cpp — NVTX ranges and marks become gnnprof stages, with no GPU.
//
// An NVTX-instrumented program (the nvtx3 header-only loader) dlopens NVTX_INJECTION64_PATH on
// its first NVTX call and calls InitializeInjectionNvtx2 there, which fills the core and core2
// (domain) callback tables. The preload library sets NVTX_INJECTION64_PATH to itself.
//   push/pop (core or domain)  -> a stage on the calling thread, category "nvtx" or the domain
//   start/end (may cross threads) -> a range on the "nvtx ranges" lane
//   marks                      -> counter "nvtx mark: <message>" (one sample per mark)
// Every 16th call on a thread is also a poll point of the preload's threadless mode: an NVTX
// program without torch has no other (docs/zero-code.md, "Threads").
#include <nvtx3/nvToolsExt.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>

#include "gnnprof/gnnprof_c.h"
#include "mono_clock.h"
#include "preload_poll.h"

namespace {

using gnnprof::instrument::mono_ns;

struct Domain {
  std::string name;
};
struct Strings {
  std::mutex mu;
  std::deque<std::string> registered;  // nvtxStringHandle_t points at one of these
  std::deque<Domain> domains;
  std::unordered_map<nvtxRangeId_t, std::pair<gnnprof_site_t, std::int64_t>> open_ranges;
  nvtxRangeId_t next_range = 1;
  gnnprof_lane_t lane = 0;
};
Strings& strings() {
  static auto* s = new Strings();  // leaked: NVTX calls may come during static destruction
  return *s;
}

std::string narrow(const wchar_t* w) {
  std::string out;
  if (w == nullptr) return out;
  for (; *w != 0; ++w) out += (*w >= 0x20 && *w < 0x7f) ? static_cast<char>(*w) : '?';
  return out;
}

std::string message_of(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return "(nvtx)";
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii != nullptr ? a->message.ascii : "(nvtx)";
    case NVTX_MESSAGE_TYPE_UNICODE: return narrow(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      if (a->message.registered != nullptr) return *reinterpret_cast<const std::string*>(a->message.registered);
      return "(nvtx)";
    default: return "(nvtx)";
  }
}

const char* category_of(nvtxDomainHandle_t d) {
  return d != nullptr ? reinterpret_cast<const Domain*>(d)->name.c_str() : "nvtx";
}

gnnprof_site_t site_for(const std::string& name, const char* category) {
  return gnnprof_stage_site(name.c_str(), category);
}

thread_local int t_depth = 0;
thread_local unsigned t_calls = 0;

/// After recording: the preload's poll point (a no-op while gnnprof's threads run).
void polled() {
  if ((++t_calls & 15u) == 0) gnnprof::instrument::preload_poll(0);
}

int push(const std::string& name, const char* category) {
  gnnprof_stage_begin(site_for(name, category));
  polled();
  return t_depth++;
}
int pop() {
  if (t_depth == 0) return -1;
  gnnprof_stage_end();
  polled();
  return --t_depth;
}
void mark(const std::string& name) {
  gnnprof_counter(gnnprof_counter_site(("nvtx mark: " + name).c_str()), 1.0);
  polled();
}
nvtxRangeId_t start(const std::string& name, const char* category) {
  const gnnprof_site_t site = site_for(name, category);
  nvtxRangeId_t id = 0;
  {
    Strings& s = strings();
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.lane == 0) s.lane = gnnprof_lane("nvtx ranges");
    id = s.next_range++;
    s.open_ranges[id] = {site, mono_ns()};
  }
  polled();
  return id;
}
void end(nvtxRangeId_t id) {
  const std::int64_t now = mono_ns();
  {
    Strings& s = strings();
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.open_ranges.find(id);
    if (it == s.open_ranges.end()) return;
    gnnprof_lane_range(s.lane, it->second.first, 0, it->second.second, now);
    s.open_ranges.erase(it);
  }
  polled();
}

// Every callback catches: NVTX calls come from the host's code, which must never see ours.
#define GNNPROF_GUARD(expr, fallback) \
  try {                               \
    expr;                             \
  } catch (...) {                     \
    return fallback;                  \
  }

void MarkEx(const nvtxEventAttributes_t* a) { GNNPROF_GUARD(mark(message_of(a)), ) }
void MarkA(const char* m) { GNNPROF_GUARD(mark(m != nullptr ? m : "(nvtx)"), ) }
void MarkW(const wchar_t* m) { GNNPROF_GUARD(mark(narrow(m)), ) }
nvtxRangeId_t RangeStartEx(const nvtxEventAttributes_t* a) { GNNPROF_GUARD(return start(message_of(a), "nvtx"), 0) }
nvtxRangeId_t RangeStartA(const char* m) { GNNPROF_GUARD(return start(m != nullptr ? m : "(nvtx)", "nvtx"), 0) }
nvtxRangeId_t RangeStartW(const wchar_t* m) { GNNPROF_GUARD(return start(narrow(m), "nvtx"), 0) }
void RangeEnd(nvtxRangeId_t id) { GNNPROF_GUARD(end(id), ) }
int RangePushEx(const nvtxEventAttributes_t* a) { GNNPROF_GUARD(return push(message_of(a), "nvtx"), -1) }
int RangePushA(const char* m) { GNNPROF_GUARD(return push(m != nullptr ? m : "(nvtx)", "nvtx"), -1) }
int RangePushW(const wchar_t* m) { GNNPROF_GUARD(return push(narrow(m), "nvtx"), -1) }
int RangePop() { return pop(); }
void NameOsThreadA(uint32_t, const char*) {}  // thread names come from the OS / gnnprof API

void DomainMarkEx(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) { GNNPROF_GUARD(mark(message_of(a)), ) }
nvtxRangeId_t DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  GNNPROF_GUARD(return start(message_of(a), category_of(d)), 0)
}
void DomainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { GNNPROF_GUARD(end(id), ) }
int DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  GNNPROF_GUARD(return push(message_of(a), category_of(d)), -1)
}
int DomainRangePop(nvtxDomainHandle_t) { return pop(); }
nvtxStringHandle_t DomainRegisterStringA(nvtxDomainHandle_t, const char* str) {
  try {
    Strings& s = strings();
    std::lock_guard<std::mutex> lock(s.mu);
    s.registered.emplace_back(str != nullptr ? str : "");
    return reinterpret_cast<nvtxStringHandle_t>(&s.registered.back());
  } catch (...) {
    return nullptr;
  }
}
nvtxStringHandle_t DomainRegisterStringW(nvtxDomainHandle_t d, const wchar_t* str) {
  try {
    return DomainRegisterStringA(d, narrow(str).c_str());
  } catch (...) {
    return nullptr;
  }
}
nvtxDomainHandle_t DomainCreateA(const char* name) {
  try {
    Strings& s = strings();
    std::lock_guard<std::mutex> lock(s.mu);
    s.domains.push_back(Domain{name != nullptr ? name : "nvtx"});
    return reinterpret_cast<nvtxDomainHandle_t>(&s.domains.back());
  } catch (...) {
    return nullptr;
  }
}
nvtxDomainHandle_t DomainCreateW(const wchar_t* name) {
  try {
    return DomainCreateA(narrow(name).c_str());
  } catch (...) {
    return nullptr;
  }
}
void DomainDestroy(nvtxDomainHandle_t) {}  // handles stay valid: ranges may still refer to them

template <typename F>
void set(NvtxFunctionTable table, unsigned int size, unsigned int id, F fn) {
  if (id < size && table[id] != nullptr) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  try {
    if (get_table == nullptr) return 0;
    auto* cb = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
    if (cb == nullptr || cb->GetModuleFunctionTable == nullptr) return 0;
    NvtxFunctionTable core = nullptr;
    unsigned int core_size = 0;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) == 0 || core == nullptr) return 0;
    set(core, core_size, NVTX_CBID_CORE_MarkEx, &MarkEx);
    set(core, core_size, NVTX_CBID_CORE_MarkA, &MarkA);
    set(core, core_size, NVTX_CBID_CORE_MarkW, &MarkW);
    set(core, core_size, NVTX_CBID_CORE_RangeStartEx, &RangeStartEx);
    set(core, core_size, NVTX_CBID_CORE_RangeStartA, &RangeStartA);
    set(core, core_size, NVTX_CBID_CORE_RangeStartW, &RangeStartW);
    set(core, core_size, NVTX_CBID_CORE_RangeEnd, &RangeEnd);
    set(core, core_size, NVTX_CBID_CORE_RangePushEx, &RangePushEx);
    set(core, core_size, NVTX_CBID_CORE_RangePushA, &RangePushA);
    set(core, core_size, NVTX_CBID_CORE_RangePushW, &RangePushW);
    set(core, core_size, NVTX_CBID_CORE_RangePop, &RangePop);
    set(core, core_size, NVTX_CBID_CORE_NameOsThreadA, &NameOsThreadA);
    NvtxFunctionTable core2 = nullptr;
    unsigned int core2_size = 0;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) != 0 && core2 != nullptr) {
      set(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, &DomainMarkEx);
      set(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, &DomainRangeStartEx);
      set(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, &DomainRangeEnd);
      set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, &DomainRangePushEx);
      set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, &DomainRangePop);
      set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, &DomainRegisterStringA);
      set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, &DomainRegisterStringW);
      set(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, &DomainCreateA);
      set(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, &DomainCreateW);
      set(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, &DomainDestroy);
    }
    gnnprof_note_collector("nvtx", 1, "");
    return 1;
  } catch (...) {
    return 0;
  }
}
