/* tracer.c — line tracing of selected Python code objects on CPython 3.10 and 3.11 (tracer.h
 * says what and why; tracer_common.c holds the selection and the statement logic both tracers
 * share).
 *
 * CPython internals used, all read-only except the thread state's trace slot: the frames
 * (3.11: _PyInterpreterFrame: code, caller, last instruction, owner; 3.10: PyFrameObject),
 * the thread's current frame, and the PEP 523 hook. A trace function is installed by writing
 * c_tracefunc and refreshing use_tracing, as PyEval_SetTrace does, without its audit event:
 * it is switched on and off around selected frames many times a second. Nothing here raises
 * into the host: the trace function always returns 0. */
#include "tracer_common.h"

#include <frameobject.h>
#include <opcode.h>
#if PY_VERSION_HEX >= 0x030B0000
#define Py_BUILD_CORE 1
#include <internal/pycore_frame.h>
#include <internal/pycore_pystate.h>
#undef Py_BUILD_CORE
#endif

#include <stdint.h>
#include <string.h>

#include "core_abi.h"

#if PY_VERSION_HEX < 0x030A0000 || PY_VERSION_HEX >= 0x030C0000
#error "tracer.c reads CPython 3.10's and 3.11's frames"
#endif

/* ---- frames, as each version has them ---- */

#if PY_VERSION_HEX >= 0x030B0000
typedef _PyInterpreterFrame Frame;
static inline Frame* frame_caller(Frame* f) { return f->previous; }
static inline Frame* current_frame(PyThreadState* ts) { return ts->cframe != NULL ? ts->cframe->current_frame : NULL; }
static inline Frame* frame_of(PyFrameObject* fo) { return fo->f_frame; }
/* In bytes, as dis and PyFrame_GetLasti count (the with exits prepare() lists). */
static inline int frame_lasti(Frame* f) { return _PyInterpreterFrame_LASTI(f) * (int)sizeof(_Py_CODEUNIT); }
static inline int generator_frame(Frame* f) { return f->owner == FRAME_OWNED_BY_GENERATOR; }
static inline int yielded(Frame* f) { return _Py_OPCODE(*f->prev_instr) == YIELD_VALUE; }
/* At a generator frame's call event: its first run (its RESUME's oparg 0), a resume (1, 2), or
 * neither (a throw into it: prev_instr is still its YIELD_VALUE). */
static inline int resume_oparg(Frame* f) {
  const int op = _Py_OPCODE(*f->prev_instr);
  return op == RESUME || op == RESUME_QUICK ? _Py_OPARG(*f->prev_instr) : -1;
}
static inline int first_run(Frame* f) { return resume_oparg(f) == 0; }
static inline int resuming(Frame* f) { return resume_oparg(f) > 0; }
static inline PyObject* frame_function(Frame* f) { return (PyObject*)f->f_func; }
static inline void update_tracing(PyThreadState* ts) { _PyThreadState_UpdateTracingState(ts); }
#else /* 3.10: frames are objects; the hook runs before the new frame becomes the thread's */
typedef PyFrameObject Frame;
static inline Frame* frame_caller(Frame* f) { return f->f_back; }
static inline Frame* current_frame(PyThreadState* ts) { return ts->frame; }
static inline Frame* frame_of(PyFrameObject* fo) { return fo; }
static inline int frame_lasti(Frame* f) { return f->f_lasti * (int)sizeof(_Py_CODEUNIT); }
static inline int generator_frame(Frame* f) { return f->f_gen != NULL; }
static inline int yielded(Frame* f) { return f->f_state == FRAME_SUSPENDED; }
static inline int first_run(Frame* f) { return f->f_lasti < 0; }
static inline int resuming(Frame* f) { return f->f_lasti >= 0; }
static inline PyObject* frame_function(Frame* f) { return NULL; } /* nothing is inlined on 3.10 */
static inline void update_tracing(PyThreadState* ts) {
  ts->cframe->use_tracing = ts->c_tracefunc != NULL || ts->c_profilefunc != NULL;
}
#endif

/* A data loader's library code that subscripts something (`self.dataset[idx]`, LOADER_SUBSCR)
 * runs with tracing on while it runs for the loop, its first kLoaderTraces times per code
 * object, so that a user __getitem__ that a site specialized before the hook was in inlines is
 * seen (own_version). Later, a new type at such a site makes it take the generic call, which
 * the hook sees; tracing those frames for good would cost every sample ~1 us. Per code object:
 * a shuffling sampler's generator (also LOADER_SUBSCR) is resumed once per index, before the
 * fetcher's frame, and would spend a shared count first. */
enum { kLoaderTraces = 64, kLoaderSites = 32 };
static struct {
  PyCodeObject* code;
  int left;
} g_loader_sites[kLoaderSites]; /* under the GIL */

static int loader_trace_due(PyCodeObject* co) {
  for (int i = 0; i < kLoaderSites; ++i) {
    if (g_loader_sites[i].code == co) return g_loader_sites[i].left > 0 ? g_loader_sites[i].left-- : 0;
    if (g_loader_sites[i].code == NULL) {
      g_loader_sites[i].code = co; /* a library's code object: lives as long as its module */
      g_loader_sites[i].left = kLoaderTraces - 1;
      return 1;
    }
  }
  return 0;
}

/* CPython 3.11 inlines `obj[key]` into a heap type's Python __getitem__ (BINARY_SUBSCR_GETITEM)
 * without the PEP 523 hook, once the site is specialized: a selected __getitem__ called from an
 * untraced frame would run unseen. The specializer caches the function's version in 16 bits
 * and gives up on a larger one, and an inlined site whose cached version no longer matches
 * falls back to the generic call, which goes through the hook. So the function of a selected
 * __getitem__ gets a version of its own from the top of the 32-bit range (unique per
 * function, far above the interpreter's counter, which starts at 1): calls to it take the
 * hook's path from then on. CPython 3.10 inlines no call. */
#if PY_VERSION_HEX >= 0x030B0000
enum { kOwnVersionsFrom = 0xF0000000u };
static uint32_t g_next_own_version = 0xFFFFFFFFu;
#endif

static void own_version(PyObject* fn) {
#if PY_VERSION_HEX >= 0x030B0000
  if (fn == NULL || !PyFunction_Check(fn)) return;
  PyFunctionObject* f = (PyFunctionObject*)fn;
  if (f->func_version >= kOwnVersionsFrom || g_next_own_version < kOwnVersionsFrom) return;
  f->func_version = g_next_own_version--;
#else
  (void)fn;
#endif
}

static _PyFrameEvalFunction g_prev_eval = NULL;

static int trace_fn(PyObject* obj, PyFrameObject* frame, int what, PyObject* arg);

static void set_tracing(PyThreadState* ts, int on) {
  ts->c_tracefunc = on ? trace_fn : NULL;
  update_tracing(ts);
}

/* Whether frame c and those below it, within kLoaderWalk frames, are library code (a data
 * loader) down to a frame of the loop or its pipeline. In a data loader's worker process
 * always: it exists to run the loader (the parent's frames below its worker loop are not
 * looked at). */
static int runs_for_loop(Frame* c) {
  if (g_worker || t_feeds_loop) return 1; /* the process (thread) exists to run the loader */
  for (int n = 0; c != NULL && n < kLoaderWalk; c = frame_caller(c), ++n) {
    void* x = extra_of(c->f_code);
    if (x == NULL) x = auto_mark(c->f_code); /* begun before the hook was in */
    if (x == MAYBE || x == MAYBE_LOADED) return 0; /* user code the loop is not running */
    if (!is_mark(x)) return feeds_loop((CodeInfo*)x);
  }
  return 0;
}

/* Whether frame c, or the first frame below it that is not library code to look through
 * (callback_walk; within kLoaderWalk), is of the package running the loop: user code that c
 * calls is called back by it. */
static int framework_calls(Frame* c) {
  for (int n = 0; c != NULL && n < kLoaderWalk; c = frame_caller(c), ++n) {
    const int w = callback_walk(c->f_code, extra_of(c->f_code));
    if (w != 0) return w > 0;
  }
  return 0;
}

/* The pipeline's new member: the code of frame f, called by a data loader or pulled by the
 * loop. */
static CodeInfo* join_pipeline(Frame* f, int role) {
  CodeInfo* mine = codeinfo_new(f->f_code, role);
  if (mine == NULL) return NULL;
  set_extra(f->f_code, mine);
  ++g_stats.selected;
  if (mine->getitem) own_version(frame_function(f));
  return mine;
}

/* A user generator/iterator resumed by a frame of the loop (or of the pipeline it already
 * pulls from), directly or through a library's iterator (`for b in tqdm(batches)`), or user
 * code called by a data loader running for the loop, joins the pipeline; user code that the
 * framework running the loop calls back while it runs, the callbacks. */
static int pulled_by_loop(PyThreadState* ts, Frame* f, void* mark) {
  Frame* caller = current_frame(ts);
  if (caller == NULL) return 0;
  void* cx = extra_of(caller->f_code);
  int join;
  if (is_loader(cx)) join = runs_for_loop(caller);
  else if (mark != MAYBE) join = 0;
  else if (cx != NULL && !is_mark(cx)) join = feeds_loop((CodeInfo*)cx);
  else join = library_iterator(caller->f_code, cx) && runs_for_loop(caller);
  if (join) return join_pipeline(f, ROLE_PIPELINE) != NULL;
  if (!framework_loop()) return 0;
  ThreadTrace* tt = t_trace;
  return tt != NULL && tt->depth > 0 && framework_calls(caller) && join_pipeline(f, ROLE_CALLBACK) != NULL;
}

/* ---- zero-code prefetch of a batch generator (tracer_prefetch_generators) ---- */

int tracer_prefetch_generators(PyObject* targets, PyObject* wrap) {
#if PY_VERSION_HEX >= 0x030B0000
  if (gen_targets_set(targets, wrap) != 0) return -1;
  return tracer_install() == 0 ? 1 : -1;
#else
  (void)targets, (void)wrap;
  return 0;
#endif
}

static PyObject* eval_hook(PyThreadState* ts, Frame* f, int throwflag) {
  PyCodeObject* co = f->f_code;
#if PY_VERSION_HEX >= 0x030B0000
  /* A target generator being made (its frame's first run, not a resume): the call returns the
   * prefetcher's iterator over it. Never an exception of gnnprof's into the host: on failure,
   * the generator itself. */
  if ((co->co_flags & CO_GENERATOR) != 0 && !generator_frame(f) && gen_target(co))
    return gen_wrap(g_prev_eval(ts, f, throwflag));
#endif
  void* x = extra_of(co);
  int want;
  if (x == REJECT || x == FRAMEWORK) {
    want = 0;
  } else {
    if (x == NULL) {
      ThreadTrace* tt = thread_trace();
      x = tt != NULL ? decide(&tt->deciding, co) : REJECT;
    }
    if (is_library(x) || x == LOADER) want = 0;
    else if (x == MAYBE || x == MAYBE_LOADED) {
      want = pulled_by_loop(ts, f, x);
      if (!want) note_callee(t_trace, co);
    }
    else if (x == LOADER_SUBSCR)
      want = PY_VERSION_HEX >= 0x030B0000 && runs_for_loop(current_frame(ts)) && loader_trace_due(co);
    else want = 1;
    if (want && !is_mark(x) && ((CodeInfo*)x)->getitem) own_version(frame_function(f));
  }
  Py_tracefunc cur = ts->c_tracefunc;
  if (cur != NULL && cur != trace_fn) { /* a debugger or coverage tool: leave the thread to it */
    ++g_stats.foreign;
    return g_prev_eval(ts, f, throwflag);
  }
  const int on = cur != NULL;
  if (want == on) return g_prev_eval(ts, f, throwflag);
  set_tracing(ts, want);
  PyObject* r = g_prev_eval(ts, f, throwflag);
  if (ts->c_tracefunc == NULL || ts->c_tracefunc == trace_fn) set_tracing(ts, on && g_installed);
  return r;
}

/* ---- the trace function ---- */

/* The selection of a frame that began while tracing was on: normally decided by the hook,
 * but an inlined __getitem__ (own_version) never passed it. */
static CodeInfo* called_info(ThreadTrace* tt, Frame* f) {
  void* x = extra_of(f->f_code);
  if (x == NULL) x = decide(&tt->deciding, f->f_code);
  if (x == MAYBE || x == MAYBE_LOADED) { /* a user __getitem__ inlined into a data loader's frame */
    Frame* caller = frame_caller(f);
    if (caller == NULL || !is_loader(extra_of(caller->f_code)) || !runs_for_loop(caller)) return NULL;
    return join_pipeline(f, ROLE_PIPELINE);
  }
  if (is_mark(x)) return NULL;
  CodeInfo* ci = (CodeInfo*)x;
  if (ci->getitem) own_version(frame_function(f)); /* selected, but inlined until now */
  return ci;
}

static void on_call(ThreadTrace* tt, PyFrameObject* frame, Frame* f) {
  CodeInfo* ci = called_info(tt, f);
  if (ci == NULL) return;
  Entry* e = push(tt, f, ci, 0);
  if (e != NULL && generator_frame(f)) {
    /* A first run has nothing saved: one left by a frame at the same address is another's. */
    if (first_run(f)) forget_suspended(tt, f);
    /* resumed at its yield: the same statement goes on, without a hit */
    else if (!resume(tt, f, f->f_code, e) && resuming(f))
      resume_unsaved(tt, e, f->f_code, PyFrame_GetLineNumber(frame), frame_lasti(f));
  }
  await_end(tt, f); /* the loop's coroutine back from its await */
}

static void on_line(ThreadTrace* tt, PyFrameObject* frame, Frame* f) {
  Entry* e = top_entry(tt);
  if (e == NULL || e->f != f) {
    CodeInfo* ci = info_of(f->f_code);
    if (ci == NULL) return; /* an unselected frame that runs while tracing is on */
    e = entry_of(tt, f);
    if (e == NULL) { /* running before tracing began (the auto-selected loop) */
      if (tt->depth >= kMaxDepth) return; /* a frame too deep to trace, not one to adopt */
      e = push(tt, f, ci, 1);
      if (e == NULL) return;
      ++g_stats.adopted;
    }
  }
  const int line = frame->f_lineno != 0 ? frame->f_lineno : PyFrame_GetLineNumber(frame);
  on_line_of(tt, e, f->f_code, line, frame_lasti(f));
}

void adopt_running(ThreadTrace* tt, PyFrameObject* fr, PyCodeObject* co, CodeInfo* ci) {
  Frame* f = frame_of(fr);
  Entry* e = push(tt, f, ci, 1);
  if (e == NULL) return;
  ++g_stats.adopted;
  on_line_of(tt, e, co, PyFrame_GetLineNumber(fr), frame_lasti(f));
}

/* Whether a frame that called `f` (a few levels down the stack) runs selected code. */
static int selected_caller(Frame* f) {
  int n = 0;
  for (Frame* c = frame_caller(f); c != NULL && n < 64; c = frame_caller(c), ++n)
    if (info_of(c->f_code) != NULL) return 1;
  return 0;
}

static void on_return(ThreadTrace* tt, Frame* f, PyObject* value) {
  if (info_of(f->f_code) == NULL) return;
  Entry* e = entry_of(tt, f);
  if (e == NULL) {
    if (tt->depth > kMaxDepth) --tt->depth; /* a frame too deep to trace */
    return;
  }
  Entry* paused = unpause(tt, e); /* recursion: the outer call's statement goes on */
  const int suspends = generator_frame(f) && yielded(f);
  if (suspends && paused == NULL && loop_awaits(tt, e, f->f_code)) await_begin(tt, f, e);
  const uint64_t now = g_core.set_line(site_below(tt));
  /* The training loop's function returned: no loop statement is current any more. */
  if (paused == NULL && e->ci != NULL && e->ci->loop_levels > 0 && g_core.set_loop_line != NULL) g_core.set_loop_line(0);
  if (paused != NULL) paused->t0 = now;
  charge_caller(tt, e, now);
  if (suspends) suspend(tt, f, f->f_code, e, now, value);
  else if (generator_frame(f)) { /* finished (closed while suspended too): its frame may be reused */
    forget_suspended(tt, f);
    await_end(tt, f);
  }
  end_statement(tt, e, now);
  const int adopted = e->adopted;
  --tt->depth;
  /* A frame that was running before tracing began has no hook around it to switch tracing
   * off: once it returns and nothing traced is left on this thread, the caller runs untraced,
   * unless a selected frame is still running below it (the loop that called a train_step
   * helper, selected with it): that one is adopted at its next line. */
  if (adopted && tt->depth == 0 && !selected_caller(f)) {
    PyThreadState* ts = PyThreadState_Get();
    if (ts->c_tracefunc == trace_fn) set_tracing(ts, 0);
  }
}

static int trace_fn(PyObject* obj, PyFrameObject* frame, int what, PyObject* arg) {
  (void)obj;
  if (!g_core_bound) return 0;
  ThreadTrace* tt = thread_trace();
  if (tt == NULL) return 0;
  if (!g_installed) { /* the hook was taken out (tracer_uninstall): this thread stops too */
    tracer_close_thread();
    set_tracing(PyThreadState_Get(), 0);
    return 0;
  }
  Frame* f = frame_of(frame);
  switch (what) {
    case PyTrace_LINE: on_line(tt, frame, f); break;
    case PyTrace_CALL: on_call(tt, frame, f); break;
    case PyTrace_RETURN: on_return(tt, f, arg); break;
    default: break;
  }
  return 0;
}

/* ---- public ---- */

int tracer_init(void) { return common_init(); }

int tracer_install(void) {
  if (g_installed) return 0;
  PyInterpreterState* interp = PyInterpreterState_Get();
  g_prev_eval = _PyInterpreterState_GetEvalFrameFunc(interp);
  _PyInterpreterState_SetEvalFrameFunc(interp, eval_hook);
  g_installed = 1;
  return 0;
}

void tracer_uninstall(void) {
  tracer_close_thread(); /* the calling thread's open lines end here, whatever the hook's state */
  if (!g_installed) return;
  PyInterpreterState* interp = PyInterpreterState_Get();
  if (_PyInterpreterState_GetEvalFrameFunc(interp) != eval_hook) return; /* another hook came after ours */
  _PyInterpreterState_SetEvalFrameFunc(interp, g_prev_eval);
  g_installed = 0;
  PyThreadState* ts = PyThreadState_Get();
  if (ts->c_tracefunc == trace_fn) set_tracing(ts, 0);
}

int tracer_select(PyObject* code, int roles) {
  void* was;
  return select_code(code, roles, &was) != NULL ? tracer_install() : -1;
}

void tracer_selected_function(PyObject* function) {
  if (!PyFunction_Check(function)) return;
  CodeInfo* ci = info_of((PyCodeObject*)PyFunction_GET_CODE(function));
  if (ci != NULL && ci->getitem) own_version(function);
}

/* A frame just selected runs on this thread: its lines are traced from now on (another
 * tracer holding the thread is counted instead). */
static int trace_running_frame(void) {
  PyThreadState* ts = PyThreadState_Get();
  if (ts->c_tracefunc == NULL) set_tracing(ts, 1);
  else if (ts->c_tracefunc != trace_fn) ++g_stats.foreign;
  return ts->c_tracefunc == trace_fn;
}

static void select_at(int (*gate)(void)) {
  if (!gate()) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  PyFrameObject* adopt = NULL;
  /* the loop is running; a framework's caller is adopted only where the thread is ours */
  if (select_loop(&adopt) && trace_running_frame() && adopt != NULL) adopt_loop(adopt);
  Py_XDECREF(adopt);
  PyGILState_Release(gil);
}

int tracer_retake_thread(void) {
  ThreadTrace* tt = t_trace;
  if (!g_installed || tt == NULL || tt->depth <= 0) return 0;
  PyThreadState* ts = PyThreadState_Get();
  if (ts->c_tracefunc != NULL) return 0; /* ours still, or another tracer's */
  set_tracing(ts, 1);
  ++g_stats.retaken;
  return 1;
}

void tracer_on_optimizer_step(void) { select_at(auto_selects_at_step); }

void tracer_on_loader_step(void) { select_at(auto_selects_at_loader); }

void tracer_on_data_op(void) {
  if (!data_may_select()) return; /* the common case: no GIL taken */
  if (PyGILState_GetThisThreadState() == NULL) return; /* a thread Python never ran on */
  PyGILState_STATE gil = PyGILState_Ensure();
  if (data_may_select() && select_producer()) trace_running_frame(); /* the producer's frame */
  PyGILState_Release(gil);
}

int tracer_on_producer_call(int child) {
  if (!producer_may_select(child) || !select_handed()) return 0;
  trace_running_frame(); /* the producer's frame, running */
  return 1;
}

int tracer_enter_fork_child(int worker) {
  forget_parent(worker);
  memset(g_loader_sites, 0, sizeof g_loader_sites);
  return g_auto ? tracer_install() : 0;
}
