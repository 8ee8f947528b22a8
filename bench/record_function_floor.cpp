// A do-nothing RecordFunction observer, loaded by bench/python_record_function_floor.py: what
// torch's own machinery costs a Python loop when any global callback is registered, before
// the callback does anything. Muting follows the torch observer's, without its exceptions
// (copies, AccumulateGrad): RecordFunction off on the thread inside an op with no op open
// around it (user scopes do not count); mode 3 also inside the optimizer's scopes (as the
// observer's optimizer folding does).
#include <ATen/record_function.h>

#include <cstdint>
#include <cstring>
#include <memory>

namespace {
thread_local int t_frames = 0;   // frames open on the thread
thread_local int t_ops = 0;      // of which ops (FUNCTION scope)
thread_local std::uint8_t t_frame[256];  // per frame: 1 an op, 2 muted
int g_mode = 2;

bool mutes(const at::RecordFunction& fn, bool op) {
  if (t_ops != 0 || at::hasThreadLocalCallbacks()) return false;
  if (op) return true;
  return g_mode == 3 && std::strncmp(fn.name(), "Optimizer.", 10) == 0;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  const bool op = fn.scope() == at::RecordScope::FUNCTION;
  const bool m = mutes(fn, op);
  if (m) at::enableRecordFunction(false);
  t_frame[t_frames & 255] = static_cast<std::uint8_t>((op ? 1 : 0) | (m ? 2 : 0));
  ++t_frames;
  t_ops += op ? 1 : 0;
  return nullptr;
}

void on_end(const at::RecordFunction&, at::ObserverContext*) {
  if (t_frames == 0) return;
  const std::uint8_t f = t_frame[--t_frames & 255];
  if (f & 1) --t_ops;
  if (f & 2) at::enableRecordFunction(true);
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
