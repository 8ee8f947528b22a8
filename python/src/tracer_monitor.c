/* tracer_monitor.c — line tracing of selected code objects on CPython 3.12 and newer, through
 * sys.monitoring (PEP 669); tracer.h says what is traced, tracer_common.c holds the selection
 * and the statement logic both tracers share.
 *
 * Public API for tracing: a tool id (PROFILER_ID, else the next free one), C callbacks, and
 * events. Only zero-code generator prefetch reads frames (gen_hook, a PEP 523 hook).
 * - Global PY_START/PY_RESUME/PY_THROW: a code object's first sight decides its selection; a
 *   rejected one answers DISABLE, so its calls cost nothing from then on.
 * - Selected code objects get local LINE, PY_START, PY_RESUME, PY_RETURN and PY_YIELD events:
 *   the thread's stack of traced frames follows them. A selected frame that is already running
 *   (the loop, selected at its optimizer step) starts its events at once and is adopted at its
 *   next line.
 * - Global PY_UNWIND: a traced frame left by an exception ends there.
 * Frames are keyed by their code object (the innermost traced frame is the top of the stack);
 * a generator's suspended statement by its frame object. Nothing here raises into the host:
 * every callback returns None or DISABLE with no exception set. */
#include "tracer_common.h"

#include <frameobject.h>
#include <stdarg.h>
#include <string.h>
#if PY_VERSION_HEX < 0x030E0000 /* the frame layout gen_hook reads */
#define GNNPROF_GEN_HOOK 1
#define Py_BUILD_CORE 1
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE
#endif

#include "core_abi.h"

#if PY_VERSION_HEX < 0x030C0000
#error "tracer_monitor.c needs sys.monitoring (CPython 3.12 or newer)"
#endif

static PyObject* g_mon = NULL;       /* sys.monitoring */
static PyObject* g_disable = NULL;   /* sys.monitoring.DISABLE */
static PyObject* g_set_events = NULL;
static PyObject* g_set_local = NULL;
static PyObject* g_register = NULL;
static PyObject* g_restart = NULL;
static PyObject* g_codes = NULL;     /* every selected code object, for their local events */
static int g_tool = -1;
static long g_ev_start, g_ev_resume, g_ev_return, g_ev_yield, g_ev_line, g_ev_unwind, g_ev_throw;

static const int kGeneratorFlags = CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR;

static long local_events(void) { return g_ev_start | g_ev_resume | g_ev_return | g_ev_yield | g_ev_line; }
static long global_events(void) { return g_ev_start | g_ev_resume | g_ev_throw | g_ev_unwind; }

/* Calls fn(*args) (format as Py_BuildValue), discarding the result; 0, or -1 with an exception set. */
static int call_mon(PyObject* fn, const char* format, ...) {
  va_list va;
  va_start(va, format);
  PyObject* args = Py_VaBuildValue(format, va);
  va_end(va);
  if (args == NULL) return -1;
  PyObject* r = PyObject_Call(fn, args, NULL);
  Py_DECREF(args);
  if (r == NULL) return -1;
  Py_DECREF(r);
  return 0;
}

static int set_local(PyObject* code, long events) { return call_mon(g_set_local, "(iOl)", g_tool, code, events); }

static PyObject* none(void) { Py_RETURN_NONE; }

static PyCodeObject* code_arg(PyObject* const* args, Py_ssize_t nargs) {
  return nargs >= 1 && PyCode_Check(args[0]) ? (PyCodeObject*)args[0] : NULL;
}

/* Bumped by tracer_uninstall(): a thread whose stack is of an older epoch has frames that left
 * while no events came; they are forgotten, without line events, at its next callback. */
static unsigned g_epoch = 1;

static ThreadTrace* ready_thread(void) {
  if (!g_core_bound || !g_installed) return NULL;
  ThreadTrace* tt = thread_trace();
  if (tt != NULL && tt->epoch != g_epoch) {
    if (tt->epoch != 0) {
      tt->depth = 0;
      memset(tt->suspended, 0, sizeof(tt->suspended));
      await_forget(tt);
      (void)g_core.set_line(0);
    }
    tt->epoch = g_epoch;
  }
  return tt;
}

/* Every callback's answer: None or DISABLE, never with an exception pending. */
static PyObject* answer(PyObject* r) {
  if (PyErr_Occurred()) PyErr_Clear();
  return r;
}

/* Whether any data loader's library code has run (a MAYBE_LOADED code can join only then). */
static int g_loader_seen = 0;

/* The local events of a newly selected code object. 0, or -1 with an exception set. */
static int watch(PyCodeObject* co) {
  if (PyList_Append(g_codes, (PyObject*)co) != 0) return -1;
  return g_installed ? set_local((PyObject*)co, local_events()) : 0;
}

/* ---- selection at first sight ---- */

/* Whether frame c and those below it, within kLoaderWalk frames, are library code (a data
 * loader) down to a frame of the loop or its pipeline. Always in a data loader's worker. */
static int runs_for_loop(PyFrameObject* c) {
  if (g_worker || t_feeds_loop) return 1;
  Py_XINCREF(c);
  int result = 0;
  for (int n = 0; c != NULL && n < kLoaderWalk; ++n) {
    PyCodeObject* co = PyFrame_GetCode(c);
    void* x = extra_of(co);
    if (x == NULL) x = auto_mark(co);
    Py_DECREF(co);
    if (x == MAYBE || x == MAYBE_LOADED) break; /* user code the loop is not running */
    if (!is_mark(x)) {
      result = feeds_loop((CodeInfo*)x);
      break;
    }
    PyFrameObject* back = PyFrame_GetBack(c);
    Py_DECREF(c);
    c = back;
  }
  Py_XDECREF(c);
  return result;
}

/* Whether frame c, or the first frame below it that is not library code to look through
 * (callback_walk; within kLoaderWalk), is of the package running the loop: user code that c
 * calls is called back by it. */
static int framework_calls(PyFrameObject* c) {
  Py_XINCREF(c);
  int w = 0;
  for (int n = 0; c != NULL && n < kLoaderWalk && w == 0; ++n) {
    PyCodeObject* co = PyFrame_GetCode(c);
    w = callback_walk(co, extra_of(co));
    Py_DECREF(co);
    PyFrameObject* back = PyFrame_GetBack(c);
    Py_DECREF(c);
    c = back;
  }
  Py_XDECREF(c);
  return w > 0;
}

/* A user generator/iterator resumed by a frame of the loop (or of the pipeline it already
 * pulls from), directly or through a library's iterator (tqdm), or user code called by a data
 * loader running for the loop: the code joins the pipeline; user code that the framework
 * running the loop calls back while it runs: a callback. Returns its CodeInfo, or NULL. */
static CodeInfo* join_if_pulled(ThreadTrace* tt, PyCodeObject* co, void* mark) {
  if (!g_worker && !t_feeds_loop && tt->depth == 0) return NULL; /* nothing of the loop runs on this thread */
  const int framework = framework_loop();
  /* no loader to call it, nor a framework */
  if (mark == MAYBE_LOADED && !g_loader_seen && !g_worker && !t_feeds_loop && !framework) return NULL;
  PyFrameObject* f = PyEval_GetFrame();
  PyFrameObject* caller = f != NULL ? PyFrame_GetBack(f) : NULL;
  if (caller == NULL) return NULL;
  PyCodeObject* cc = PyFrame_GetCode(caller);
  void* cx = extra_of(cc);
  int join;
  if (is_loader(cx)) join = runs_for_loop(caller);
  else if (mark != MAYBE) join = 0;
  else if (cx != NULL && !is_mark(cx)) join = feeds_loop((CodeInfo*)cx);
  else join = library_iterator(cc, cx) && runs_for_loop(caller);
  const int role = join ? ROLE_PIPELINE : framework && framework_calls(caller) ? ROLE_CALLBACK : 0;
  Py_DECREF(cc);
  Py_DECREF(caller);
  if (role == 0 || tracer_select((PyObject*)co, role) != 0) {
    PyErr_Clear();
    return NULL;
  }
  return info_of(co);
}

/* The selection of co at a call or resume: its CodeInfo, NULL (not traced now), or REJECT
 * (never: the caller answers DISABLE). */
static void* selection(ThreadTrace* tt, PyCodeObject* co) {
  void* x = extra_of(co);
  if (x == NULL) {
    if (tt->deciding) return NULL; /* inside the decider or the preparer: decided later */
    x = decide(&tt->deciding, co);
    if (!is_mark(x) && watch(co) != 0) { /* selected by the explicit specs */
      PyErr_Clear();
      return NULL;
    }
  }
  if (is_loader(x)) g_loader_seen = 1;
  if (is_library(x) || is_loader(x)) return REJECT;
  if (x == MAYBE || x == MAYBE_LOADED) {
    CodeInfo* joined = join_if_pulled(tt, co, x);
    if (joined == NULL) note_callee(tt, co);
    return joined;
  }
  return x;
}

/* ---- callbacks ---- */

/* PY_START, PY_RESUME, PY_THROW: a frame of co begins or goes on. */
static PyObject* enter(PyObject* const* args, Py_ssize_t nargs, int resumed) {
  PyCodeObject* co = code_arg(args, nargs);
  ThreadTrace* tt = ready_thread();
  if (co == NULL || tt == NULL) return answer(none());
  void* x = selection(tt, co);
  if (x == REJECT) return answer(Py_NewRef(g_disable));
  if (x == NULL) return answer(none());
  Entry* e = push(tt, co, (CodeInfo*)x, 0);
  if ((co->co_flags & kGeneratorFlags) != 0) {
    PyFrameObject* f = PyEval_GetFrame();
    if (e != NULL && !resumed) forget_suspended(tt, f); /* a frame object reused from a generator gone */
    /* at its yield: the same statement goes on, without a hit */
    else if (e != NULL && !resume(tt, f, co, e) && f != NULL)
      resume_unsaved(tt, e, co, PyFrame_GetLineNumber(f), PyFrame_GetLasti(f));
    if (f != NULL) await_end(tt, f); /* the loop's coroutine back from its await */
  }
  return answer(none());
}

static PyObject* on_start(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  return enter(args, nargs, 0);
}

static PyObject* on_resume(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  return enter(args, nargs, 1);
}

/* PY_THROW cannot be disabled: only selected code is looked at. */
static PyObject* on_throw(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  PyCodeObject* co = code_arg(args, nargs);
  if (co == NULL || info_of(co) == NULL) return answer(none());
  return enter(args, nargs, 1);
}

/* PY_RETURN, PY_YIELD, PY_UNWIND (on_return's): a frame of co leaves. */
static PyObject* leave(PyObject* const* args, Py_ssize_t nargs, int yielded) {
  PyCodeObject* co = code_arg(args, nargs);
  ThreadTrace* tt = ready_thread();
  if (co == NULL || tt == NULL || info_of(co) == NULL) return answer(none());
  const int generator = (co->co_flags & kGeneratorFlags) != 0;
  PyFrameObject* f = generator ? PyEval_GetFrame() : NULL;
  Entry* e = NULL;
  if (!generator) {
    e = entry_of(tt, co);
  } else {
    /* A generator leaves only from the top: one closed or collected while suspended may unwind
     * with no resume before it (CPython 3.13+), and must not pop a live frame of its code. */
    e = top_entry(tt);
    if (e != NULL && e->f != co) e = NULL;
    if (e == NULL || !yielded) { /* finished: its frame may be reused */
      forget_suspended(tt, f);
      if (!yielded) await_end(tt, f);
    }
    if (e == NULL && tt->depth <= kMaxDepth) return answer(none());
  }
  if (e == NULL) {
    if (tt->depth > kMaxDepth) --tt->depth; /* a frame too deep to trace */
    return answer(none());
  }
  Entry* paused = unpause(tt, e); /* recursion: the outer call's statement goes on */
  if (generator && yielded && paused == NULL && loop_awaits(tt, e, co)) await_begin(tt, f, e);
  const uint64_t now = g_core.set_line(site_below(tt));
  /* The training loop's function returned: no loop statement is current any more. */
  if (paused == NULL && e->ci != NULL && e->ci->loop_levels > 0 && g_core.set_loop_line != NULL) g_core.set_loop_line(0);
  if (paused != NULL) paused->t0 = now;
  charge_caller(tt, e, now);
  if (generator && yielded) suspend(tt, f, co, e, now, nargs >= 3 ? args[2] : NULL); /* (code, offset, value) */
  end_statement(tt, e, now);
  --tt->depth;
  return answer(none());
}

static PyObject* on_return(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  return leave(args, nargs, 0);
}

static PyObject* on_yield(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  return leave(args, nargs, 1);
}

static PyObject* on_line(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  PyCodeObject* co = code_arg(args, nargs);
  ThreadTrace* tt = ready_thread();
  if (co == NULL || tt == NULL || nargs < 2) return answer(none());
  Entry* e = top_entry(tt);
  if (e == NULL || e->f != co) {
    CodeInfo* ci = info_of(co);
    if (ci == NULL) return answer(none());
    e = entry_of(tt, co);
    if (e == NULL) { /* running before its events began (the auto-selected loop) */
      if (tt->depth >= kMaxDepth) return answer(none()); /* a frame too deep to trace, not one to adopt */
      e = push(tt, co, ci, 1);
      if (e == NULL) return answer(none());
      ++g_stats.adopted;
    }
  }
  const int line = (int)PyLong_AsLong(args[1]);
  if (line <= 0) return answer(none());
  if (e->ci->state == 0) prepare(tt, e->ci, co);
  int lasti = -1;
  if (multi_line(e->ci, line) || e->ci->n_exits > 0) { /* continuation, repetition, a with's exit: the instruction tells */
    PyFrameObject* f = PyEval_GetFrame();
    if (f != NULL) lasti = PyFrame_GetLasti(f);
  }
  on_line_of(tt, e, co, line, lasti);
  return answer(none());
}

void adopt_running(ThreadTrace* tt, PyFrameObject* fr, PyCodeObject* co, CodeInfo* ci) {
  Entry* e = push(tt, co, ci, 1);
  if (e == NULL) return;
  ++g_stats.adopted;
  on_line_of(tt, e, co, PyFrame_GetLineNumber(fr), PyFrame_GetLasti(fr));
}

static PyMethodDef k_callbacks[] = {
    {"py_start", (PyCFunction)(void (*)(void))on_start, METH_FASTCALL, NULL},
    {"py_resume", (PyCFunction)(void (*)(void))on_resume, METH_FASTCALL, NULL},
    {"py_throw", (PyCFunction)(void (*)(void))on_throw, METH_FASTCALL, NULL},
    {"py_return", (PyCFunction)(void (*)(void))on_return, METH_FASTCALL, NULL},
    {"py_yield", (PyCFunction)(void (*)(void))on_yield, METH_FASTCALL, NULL},
    {"py_unwind", (PyCFunction)(void (*)(void))on_return, METH_FASTCALL, NULL}, /* leaves as a return does */
    {"line", (PyCFunction)(void (*)(void))on_line, METH_FASTCALL, NULL},
};

/* ---- the tool ---- */

static long event_bit(PyObject* events, const char* name) {
  PyObject* v = PyObject_GetAttrString(events, name);
  const long bit = v != NULL ? PyLong_AsLong(v) : -1;
  Py_XDECREF(v);
  return bit;
}

int tracer_init(void) {
  if (common_init() != 0) return -1;
  if (g_mon != NULL) return 0;
  PyObject* mon = PySys_GetObject("monitoring"); /* borrowed */
  PyObject* events = mon != NULL ? PyObject_GetAttrString(mon, "events") : NULL;
  if (events == NULL) {
    PyErr_Clear();
    PyErr_SetString(PyExc_RuntimeError, "gnnprof: sys.monitoring not found");
    return -1;
  }
  g_ev_start = event_bit(events, "PY_START");
  g_ev_resume = event_bit(events, "PY_RESUME");
  g_ev_return = event_bit(events, "PY_RETURN");
  g_ev_yield = event_bit(events, "PY_YIELD");
  g_ev_line = event_bit(events, "LINE");
  g_ev_unwind = event_bit(events, "PY_UNWIND");
  g_ev_throw = event_bit(events, "PY_THROW");
  Py_DECREF(events);
  g_disable = PyObject_GetAttrString(mon, "DISABLE");
  g_set_events = PyObject_GetAttrString(mon, "set_events");
  g_set_local = PyObject_GetAttrString(mon, "set_local_events");
  g_register = PyObject_GetAttrString(mon, "register_callback");
  g_restart = PyObject_GetAttrString(mon, "restart_events");
  g_codes = PyList_New(0);
  if (PyErr_Occurred() || g_disable == NULL || g_set_events == NULL || g_set_local == NULL || g_register == NULL ||
      g_restart == NULL || g_codes == NULL)
    return -1;
  g_mon = Py_NewRef(mon);
  return 0;
}

/* A tool id of our own: PROFILER_ID (2) when free, else 3 or 4. 0, or -1 with an exception set. */
static int claim_tool(void) {
  if (g_tool >= 0) return 0;
  const long bits[] = {g_ev_start, g_ev_resume, g_ev_throw, g_ev_return, g_ev_yield, g_ev_unwind, g_ev_line};
  for (int id = 2; id <= 4; ++id) {
    PyObject* r = PyObject_CallMethod(g_mon, "use_tool_id", "is", id, "gnnprof");
    if (r == NULL) {
      PyErr_Clear(); /* in use */
      continue;
    }
    Py_DECREF(r);
    for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); ++i) { /* in k_callbacks' order */
      PyObject* fn = PyCFunction_New(&k_callbacks[i], NULL);
      const int rc = fn != NULL ? call_mon(g_register, "(ilO)", id, bits[i], fn) : -1;
      Py_XDECREF(fn);
      if (rc != 0) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        r = PyObject_CallMethod(g_mon, "free_tool_id", "i", id); /* tried again at the next install */
        Py_XDECREF(r);
        PyErr_Clear();
        PyErr_Restore(et, ev, tb);
        return -1;
      }
    }
    g_tool = id;
    return 0;
  }
  PyErr_SetString(PyExc_RuntimeError, "gnnprof: sys.monitoring tool ids 2-4 are all in use");
  return -1;
}

/* ---- zero-code prefetch of a batch generator (tracer_prefetch_generators) ----
 * sys.monitoring sees a generator start, not its making, so no event can replace a call's
 * result. A PEP 523 frame hook can, as tracer.c's does on 3.11: a generator function's call
 * evaluates its frame once (RETURN_GENERATOR), and the hook returns wrap(gen). It goes in only
 * while targets are set (gnnprof ab sets them on both sides): with it, CPython stops inlining
 * Python-to-Python calls. 3.12 and 3.13, whose frame layout is read here. */
#ifdef GNNPROF_GEN_HOOK
static _PyFrameEvalFunction g_prev_eval = NULL;
static int g_gen_hook = 0;

static PyObject* gen_hook(PyThreadState* ts, struct _PyInterpreterFrame* f, int throwflag) {
#if PY_VERSION_HEX >= 0x030D0000
  PyCodeObject* co = PyCode_Check(f->f_executable) ? (PyCodeObject*)f->f_executable : NULL;
#else
  PyCodeObject* co = f->f_code;
#endif
  if (co != NULL && (co->co_flags & CO_GENERATOR) != 0 && f->owner != FRAME_OWNED_BY_GENERATOR && gen_target(co))
    return gen_wrap(g_prev_eval(ts, f, throwflag));
  return g_prev_eval(ts, f, throwflag);
}
#endif

static void gen_hook_in(void) {
#ifdef GNNPROF_GEN_HOOK
  if (g_gen_hook || !gen_targets_any()) return;
  PyInterpreterState* interp = PyInterpreterState_Get();
  g_prev_eval = _PyInterpreterState_GetEvalFrameFunc(interp);
  _PyInterpreterState_SetEvalFrameFunc(interp, gen_hook);
  g_gen_hook = 1;
#endif
}

static void gen_hook_out(void) {
#ifdef GNNPROF_GEN_HOOK
  if (!g_gen_hook) return;
  PyInterpreterState* interp = PyInterpreterState_Get();
  if (_PyInterpreterState_GetEvalFrameFunc(interp) != gen_hook) return; /* another hook came after ours */
  _PyInterpreterState_SetEvalFrameFunc(interp, g_prev_eval);
  g_gen_hook = 0;
#endif
}

int tracer_prefetch_generators(PyObject* targets, PyObject* wrap) {
#ifdef GNNPROF_GEN_HOOK
  if (gen_targets_set(targets, wrap) != 0) return -1;
  gen_hook_in();
  return 1;
#else
  (void)targets, (void)wrap;
  return 0;
#endif
}

int tracer_install(void) {
  gen_hook_in(); /* back after tracer_uninstall, as tracer.c's hook is */
  if (g_installed) return 0;
  if (g_mon == NULL || claim_tool() != 0) return -1;
  if (call_mon(g_set_events, "(il)", g_tool, global_events()) != 0) return -1;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(g_codes); ++i)
    if (set_local(PyList_GET_ITEM(g_codes, i), local_events()) != 0) {
      PyObject *et, *ev, *tb;
      PyErr_Fetch(&et, &ev, &tb);
      if (call_mon(g_set_events, "(il)", g_tool, 0L) != 0) PyErr_Clear(); /* nothing half on */
      PyErr_Restore(et, ev, tb);
      return -1;
    }
  g_installed = 1;
  return 0;
}

void tracer_uninstall(void) {
  tracer_close_thread(); /* the calling thread's open lines end here */
  gen_hook_out();
  if (!g_installed) return;
  g_installed = 0; /* other threads' callbacks answer nothing from now on */
  ++g_epoch;       /* and their stacks are forgotten at their next callback after a resume */
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);
  if (call_mon(g_set_events, "(il)", g_tool, 0L) != 0) PyErr_Clear();
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(g_codes); ++i)
    if (set_local(PyList_GET_ITEM(g_codes, i), 0) != 0) PyErr_Clear();
  PyErr_Restore(et, ev, tb);
}

int tracer_select(PyObject* code, int roles) {
  void* x;
  if (select_code(code, roles, &x) == NULL) return -1;
  if (x != NULL && !is_mark(x)) return tracer_install(); /* selected before: watched already */
  PyCodeObject* co = (PyCodeObject*)code;
  if (!g_installed) return PyList_Append(g_codes, code) != 0 ? -1 : tracer_install();
  if (watch(co) != 0) return -1;
  /* Rejected before (its calls answered DISABLE): those locations report again. This also
   * re-enables what other tools disabled (they answer DISABLE again); explicit selections of
   * code that already ran are rare. */
  if (is_library(x) || is_loader(x)) return call_mon(g_restart, "()");
  return 0;
}

void tracer_selected_function(PyObject* function) { (void)function; } /* events see inlined calls */

static void select_at(int (*gate)(void)) {
  if (!gate()) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  PyFrameObject* adopt = NULL;
  /* its frame's events begin at once; adopted now: the loop that steps the optimizer itself, a framework's caller */
  if (select_loop(&adopt) && adopt != NULL) adopt_loop(adopt);
  Py_XDECREF(adopt);
  PyErr_Clear();
  PyGILState_Release(gil);
}

int tracer_retake_thread(void) { return 0; } /* sys.monitoring is apart from sys.settrace */

void tracer_on_optimizer_step(void) { select_at(auto_selects_at_step); }

void tracer_on_loader_step(void) { select_at(auto_selects_at_loader); }

void tracer_on_data_op(void) {
  if (!data_may_select()) return; /* the common case: no GIL taken */
  if (PyGILState_GetThisThreadState() == NULL) return; /* a thread Python never ran on */
  PyGILState_STATE gil = PyGILState_Ensure();
  if (data_may_select()) (void)select_producer(); /* its frame's events begin at once */
  PyErr_Clear();
  PyGILState_Release(gil);
}

int tracer_on_producer_call(int child) {
  const int found = producer_may_select(child) && select_handed(); /* its frame's events begin at once */
  PyErr_Clear();
  return found;
}

int tracer_enter_fork_child(int worker) {
  forget_parent(worker);
  return g_auto ? tracer_install() : 0;
}
