#include "gnnprof/config.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "gnnprof/gnnprof_c.h"

namespace gnnprof::config {

namespace {

using T = Type;

// clang-format off
constexpr Option kOptions[] = {
  // Session (the core, linked or injected)
  {"GNNPROF_ENABLED", T::kBool, "1", "0/false/off: record nothing; every gnnprof call is a no-op", "core"},
  {"GNNPROF_OUTPUT", T::kString, "gnnprof-%p.json (gnnprof run: gnnprof-%R%p.json)",
   "the profile's path: %p the pid, %r the rank, %R \"rank<N>.\" when RANK or LOCAL_RANK is set", "core"},
  {"GNNPROF_QUIET", T::kBool, "0", "1: no notes on stderr (bad values, missing collectors)", "core, torch observer"},
  {"GNNPROF_BUFFER_EVENTS", T::kCount, "4096 (gnnprof run: 16384)", "events per thread ring (48 B each)", "core", "", 1ull << 26},
  {"GNNPROF_MAX_THREADS", T::kCount, "256", "threads that get a ring; later threads' events are counted as dropped", "core", "", 1ull << 16},
  {"GNNPROF_TIMELINE_EVENTS", T::kCount, "50000", "raw events kept for the Chrome trace (the first ones)", "core"},
  {"GNNPROF_DRAIN_INTERVAL_MS", T::kCount, "10", "the drainer's period while rings are less than a quarter full", "core", "", 60000},
  {"GNNPROF_FLUSH_INTERVAL_MS", T::kCount, "0 (gnnprof run: 1000)", "write the profile so far this often (0: only at exit)", "core", "", 86400000},
  {"GNNPROF_CLOCK", T::kChoice, "tsc", "the event clock: tsc when the CPU's is invariant, else monotonic", "core", "tsc|monotonic"},
  {"GNNPROF_RUN_ID", T::kString, "", "one id for every rank of a run (else TORCHELASTIC_RUN_ID, else host-pid-time)", "core"},
  // Zero-code (the preload library and its plugins)
  {"GNNPROF_THREADLESS", T::kBool, "1", "0: keep gnnprof's threads in a single-threaded Python process", "preload"},
  {"GNNPROF_CUPTI", T::kChoice, "auto", "1: start CUPTI at process start; 0: never (auto: when the CUDA runtime loads)", "preload", "0|1"},
  {"GNNPROF_TORCH_OPS", T::kBool, "1", "0: no stage per torch op (phases, copies and gathers still)", "preload"},
  {"GNNPROF_GATHER_MIN_BYTES", T::kCount, "1048576", "a host gather from a table at least this big is a materialization (a torch tensor's rows; a numpy memmap's, in Python)", "preload, python"},
  {"GNNPROF_TORCH_NESTED", T::kBool, "0", "1: also observe ops nested in other ops", "torch observer"},
  {"GNNPROF_TORCH_FOLD_OPTIMIZER", T::kBool, "1", "0: observe the optimizer's own ops (1: folded into its stage after a first step of plain CPU ops)", "torch observer"},
  {"GNNPROF_TORCH_SAMPLE", T::kString, "auto", "auto, all or N: watch ops in every N-th iteration (auto: when every one costs > 5 %)", "torch observer"},
  {"GNNPROF_RUN_PID", T::kCount, "", "set by gnnprof run: the pid whose children always write a profile", "preload"},
  {"GNNPROF_TORCH_BUILT_PATH", T::kString, "", "test hook: pretend gnnprof was built against this libtorch_cpu", "preload"},
  // Python and the CLI
  {"GNNPROF_LINES", T::kString, "auto", "Python lines to trace: auto, none, or FILE[:FUNCTION] entries split by ';'", "python, cli"},
  {"GNNPROF_TORCH_MODULES", T::kBool, "1", "0: no torch module hooks (ops on tensors needing no grad in a model's call, such as its input's dropout, are then not its forward)", "python"},
  {"GNNPROF_TORCH_PYTHON", T::kBool, "1", "0: no Python-side phases where the op observer is off (another torch than gnnprof's)", "python"},
  {"GNNPROF_PRODUCER_WAITS", T::kBool, "1", "0: the training loop's blocking waits for the program's own threads or processes (Queue.get, Future.result, Event.wait, Thread.join, a multiprocessing Queue.get, a Pipe's recv) are not the data stage \"producer wait\"", "python"},
  {"GNNPROF_LOADER_WORKERS", T::kString, "16", "data loader worker processes (forks) that write a profile of their own: the run's first N (on: 16); later ones and 0/off: record nothing", "python"},
  {"GNNPROF_PREFETCH", T::kCount, "the code's", "prefetch depth K in 0..64 (0: inline, as the baseline)", "prefetch, python", "", 64},
  {"GNNPROF_PREFETCH_LOADERS", T::kBool, "0", "1: zero-code prefetch: each pass the program's own code makes over a torch DataLoader (or a subclass such as DGL's or PyG's loaders) runs through gnnprof.prefetch at GNNPROF_PREFETCH's depth (gnnprof ab sets it for a Python command)", "prefetch, python"},
  {"GNNPROF_PREFETCH_GENERATORS", T::kString, "", "zero-code prefetch of batch generators: FILE:QUALNAME entries split by ','; each call of those generator functions returns gnnprof.prefetch's iterator over the generator at GNNPROF_PREFETCH's depth (gnnprof ab sets it when its first run found the loop pulling from one; CPython 3.11 to 3.13)", "prefetch, python"},
  {"GNNPROF_PREFETCH_THREADS", T::kChoice, "auto", "compute's threads while a CPU producer prefetches: all cores, or split (cores minus producers: a core of their own); auto tries both on the first prefetched iterations and keeps the faster", "prefetch, python", "auto|all|split"},
  {"GNNPROF_PRELOAD", T::kString, "next to gnnprof", "the libgnnprof_preload.so that gnnprof run injects", "cli"},
  {"GNNPROF_PYTHON_DIR", T::kString, "next to gnnprof", "the directory with the gnnprof Python package that gnnprof run puts on PYTHONPATH", "cli"},
};
// clang-format on

std::mutex g_warned_mu;  // constant-initialized: usable from the preload's constructor
std::set<std::string>& warned() {
  static auto* s = new std::set<std::string>();  // leaked: used from atexit paths; built on first use
  return *s;
}

bool parse_bool(const std::string& v, bool& out) {
  for (const char* t : {"1", "true", "on", "yes"})
    if (v == t) return out = true, true;
  for (const char* f : {"0", "false", "off", "no"})
    if (v == f) return out = false, true;
  return false;
}

bool quiet() {  // without warnings: GNNPROF_QUIET decides whether there are any
  bool q = false;
  const auto v = raw("GNNPROF_QUIET");
  return v && parse_bool(*v, q) && q;
}

bool in_choices(const Option& o, const std::string& v) {
  const std::string all = std::string("|") + o.choices + "|";
  return all.find("|" + v + "|") != std::string::npos;
}

}  // namespace

std::span<const Option> options() { return kOptions; }

const Option* find(const char* name) {
  for (const Option& o : kOptions)
    if (std::strcmp(o.name, name) == 0) return &o;
  return nullptr;
}

std::optional<std::string> raw(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

bool is_set(const char* name) { return raw(name).has_value(); }

void warn_bad_value(const char* name, const std::string& value, const std::string& expected, const std::string& using_instead) {
  try {
    {
      std::lock_guard<std::mutex> lock(g_warned_mu);
      if (!warned().insert(std::string(name) + "=" + value).second) return;  // once per variable and value
    }
    if (!quiet())
      std::fprintf(stderr, "gnnprof: ignoring %s=%s (expected %s); using %s\n", name, value.c_str(), expected.c_str(),
                   using_instead.c_str());
  } catch (...) {
  }
}

bool get_bool(const char* name) {
  const Option* o = find(name);
  bool def = false;
  if (o == nullptr || !parse_bool(o->default_text, def)) return false;
  const auto v = raw(name);
  if (!v) return def;
  bool out = def;
  if (!parse_bool(*v, out)) {
    warn_bad_value(name, *v, "1/true/on/yes or 0/false/off/no", def ? "1" : "0");
    return def;
  }
  return out;
}

std::uint64_t get_count(const char* name) {
  const Option* o = find(name);
  if (o == nullptr) return 0;
  return get_count(name, std::strtoull(o->default_text, nullptr, 10));  // "4096 (...)" -> 4096, "" -> 0
}

std::uint64_t get_count(const char* name, std::uint64_t def) {
  const Option* o = find(name);
  if (o == nullptr) return def;
  const auto v = raw(name);
  if (!v) return def;
  if (!valid(*o, *v)) {
    warn_bad_value(name, *v, o->max == ~0ull ? std::string("a non-negative integer") : "an integer in 0.." + std::to_string(o->max),
                   std::to_string(def));
    return def;
  }
  return std::strtoull(v->c_str(), nullptr, 10);
}

std::string get_string(const char* name) {
  const Option* o = find(name);
  if (o == nullptr) return "";
  const auto v = raw(name);
  if (!v) return o->default_text;
  if (o->type == Type::kChoice && !in_choices(*o, *v)) {
    warn_bad_value(name, *v, std::string("one of ") + o->choices, o->default_text);
    return o->default_text;
  }
  return *v;
}

bool valid(const Option& o, const std::string& v) {
  bool b = false;
  switch (o.type) {
    case Type::kBool: return parse_bool(v, b);
    case Type::kCount: {
      if (v.empty() || v[0] < '0' || v[0] > '9') return false;
      char* end = nullptr;
      const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
      return *end == '\0' && x <= o.max;
    }
    case Type::kChoice: return in_choices(o, v);
    case Type::kString: return true;
  }
  return true;
}

namespace {
// A '|' inside a Markdown table cell ends the cell unless escaped.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}
}  // namespace

std::string markdown() {
  static const char* types[] = {"bool", "count", "choice", "text"};
  std::string out = "| variable | type | default | read by | what it does |\n|---|---|---|---|---|\n";
  for (const Option& o : kOptions) {
    std::string type = types[static_cast<int>(o.type)];
    if (o.type == Type::kChoice) type += std::string(": ") + o.choices;
    if (o.type == Type::kCount && o.max != ~0ull) type += " ≤ " + std::to_string(o.max);
    std::string def = o.default_text;
    out += "| `" + std::string(o.name) + "` | " + cell(type) + " | " + cell(def.empty() ? "-" : def) + " | " + o.read_by + " | " +
           cell(o.doc) + " |\n";
  }
  return out;
}

}  // namespace gnnprof::config

// The C ABI (gnnprof_c.h): the plugins and the preload read the same table.
extern "C" {

GNNPROF_C_API int gnnprof_config_bool(const char* name) {
  try {
    return gnnprof::config::get_bool(name) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

GNNPROF_C_API unsigned long long gnnprof_config_count(const char* name) {
  try {
    return gnnprof::config::get_count(name);
  } catch (...) {
    return 0;
  }
}

GNNPROF_C_API unsigned long long gnnprof_config_count_or(const char* name, unsigned long long code_default) {
  try {
    return gnnprof::config::get_count(name, code_default);
  } catch (...) {
    return code_default;
  }
}

GNNPROF_C_API int gnnprof_config_string(const char* name, char* buf, unsigned long size) {
  try {
    const std::string v = gnnprof::config::get_string(name);
    if (buf != nullptr && size > 0) {
      const std::size_t n = std::min<std::size_t>(v.size(), size - 1);
      std::memcpy(buf, v.data(), n);
      buf[n] = '\0';
    }
    return gnnprof::config::is_set(name) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

GNNPROF_C_API void gnnprof_config_warn(const char* name, const char* value, const char* expected, const char* using_instead) {
  try {
    gnnprof::config::warn_bad_value(name, value ? value : "", expected ? expected : "", using_instead ? using_instead : "");
  } catch (...) {
  }
}

}  // extern "C"
