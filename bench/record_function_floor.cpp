// A do-nothing RecordFunction observer, loaded by bench/python_record_function_floor.py: what
// torch's own machinery costs a Python loop when any global callback is registered, before
// the callback does anything. Muting copies the torch observer's (RecordFunction off on the
// thread inside a top-level op); mode 2 mutes under FUNCTION-scope ops only, mode 3 also under
// the optimizer's scopes (as the observer's optimizer folding does).
#include <ATen/record_function.h>

#include <cstring>
#include <memory>

namespace {
thread_local int t_depth = 0;
thread_local bool t_muted[256];
int g_mode = 2;

bool mutes(const at::RecordFunction& fn) {
  if (t_depth != 0 || at::hasThreadLocalCallbacks()) return false;
  if (fn.scope() == at::RecordScope::FUNCTION) return true;
  return g_mode == 3 && std::strncmp(fn.name(), "Optimizer.", 10) == 0;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  const bool m = mutes(fn);
  if (m) at::enableRecordFunction(false);
  t_muted[t_depth & 255] = m;
  ++t_depth;
  return nullptr;
}

void on_end(const at::RecordFunction&, at::ObserverContext*) {
  if (t_depth > 0) --t_depth;
  if (t_muted[t_depth & 255]) at::enableRecordFunction(true);
}
}  // namespace

extern "C" int floor_install(int needs_inputs) {
  // The observer's two callbacks: FUNCTION and BACKWARD_FUNCTION (with inputs), USER_SCOPE.
  at::addGlobalCallback(at::RecordFunctionCallback(&on_start, &on_end)
                            .needsInputs(needs_inputs != 0)
                            .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  at::addGlobalCallback(at::RecordFunctionCallback(&on_start, &on_end).scopes({at::RecordScope::USER_SCOPE}));
  return 0;
}

extern "C" void floor_mode(int mode) { g_mode = mode; }
