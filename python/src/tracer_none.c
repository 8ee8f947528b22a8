/* tracer_none.c — the line tracer's interface in a package built without it
 * (-DGNNPROF_PYTHON_LINES=OFF, e.g. for a CPython whose internals tracer.c does not know).
 * Everything else in the package works (stages, steps,
 * transfers, counters, start/stop, prefetch); selecting code traces nothing, and the package
 * says so in the collector list (`python-lines` off). */
#include "tracer.h"

int tracer_init(void) { return 0; }
int tracer_select(PyObject* code, int role) {
  (void)code, (void)role;
  return 0;
}
void tracer_selected_function(PyObject* function) { (void)function; }
void tracer_set_auto(int on) { (void)on; }
void tracer_feeds_loop_thread(void) {}
int tracer_loop_thread(void) { return -1; }
int tracer_set_decider(PyObject* decider) {
  (void)decider;
  return 0;
}
int tracer_set_preparer(PyObject* preparer) {
  (void)preparer;
  return 0;
}
int tracer_set_excluded(PyObject* prefixes) {
  (void)prefixes;
  return 0;
}
int tracer_set_loaders(PyObject* fragments) {
  (void)fragments;
  return 0;
}
int tracer_set_frameworks(PyObject* fragments, PyObject* neutral) {
  (void)fragments;
  (void)neutral;
  return 0;
}
void tracer_on_optimizer_step(void) {}
void tracer_on_loader_step(void) {}
void tracer_on_data_op(void) {}
int tracer_on_producer_call(int child) {
  (void)child;
  return 0;
}
int tracer_producer_may_select(int child) {
  (void)child;
  return 0;
}
int tracer_on_submitted(PyObject* code) {
  (void)code;
  return 0;
}
int tracer_install(void) { return 0; }
int tracer_prefetch_generators(PyObject* targets, PyObject* wrap) {
  (void)targets, (void)wrap;
  return 0;
}
void tracer_uninstall(void) {}
int tracer_resume(void) { return 0; }
void tracer_new_session(void) {}
PyObject* tracer_stats(void) {
  return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:i,s:i,s:i,s:N}", "selected", 0ULL, "line_events", 0ULL,
                       "adopted", 0ULL, "polls", 0ULL, "foreign_tracer", 0ULL, "prepare_failed", 0ULL, "too_deep",
                       0ULL, "producers", 0ULL, "callbacks", 0ULL, "retaken", 0ULL, "installed", 0, "auto", 0, "framework", 0,
                       "loop_packages", PyList_New(0));
}
PyObject* tracer_selected(void) { return PyList_New(0); }
int tracer_enter_fork_child(int worker) {
  (void)worker;
  return 0;
}
void tracer_close_thread(void) {}
int tracer_retake_thread(void) { return 0; }
