/* tracer.c — line tracing of selected Python code objects (tracer.h says what and why).
 *
 * CPython 3.11 internals used, all read-only except the thread state's trace slot:
 * _PyInterpreterFrame (code, caller, last instruction, owner), the thread's current
 * _PyCFrame, and the PEP 523 hook. A trace function is installed by writing c_tracefunc and
 * refreshing use_tracing, as PyEval_SetTrace does, without its audit event: it is switched
 * on and off around selected frames many times a second. Nothing here raises into the host:
 * the trace function always returns 0, and a Python error in the selection or statement-map
 * helpers is cleared and that code object is traced line by line or not at all. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <opcode.h>
#define Py_BUILD_CORE 1
#include <internal/pycore_frame.h>
#include <internal/pycore_pystate.h>
#undef Py_BUILD_CORE

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core_abi.h"
#include "tracer.h"

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030C0000
#error "tracer.c reads CPython 3.11's frame layout"
#endif

/* ---- code objects: selected (CodeInfo), rejected, or candidates ---- */

typedef struct CodeInfo {
  int roles;    /* ROLE_* bits */
  int getitem;  /* a __getitem__(self, key): kept out of BINARY_SUBSCR's inlined calls (own_version) */
  int state;    /* 0: statement map not built yet, 1: built, -1: unavailable (one site per line) */
  int first, n; /* lines first .. first + n - 1 */
  int32_t* stmt;  /* per line: the first line of its statement */
  uint32_t* site; /* per line: the statement's line site */
  PyObject* filename;
  PyObject* name;
  PyObject* qualname;
  struct CodeInfo* next_selected; /* every CodeInfo ever made, for tracer_selected() */
} CodeInfo;

static CodeInfo* g_all = NULL; /* list of every selection (freed entries are unlinked) */

static Py_ssize_t g_extra = -1;
static char k_reject, k_maybe, k_maybe_loaded, k_loader, k_loader_subscr;
#define REJECT ((void*)&k_reject)
#define MAYBE ((void*)&k_maybe) /* a user generator/iterator: selected when the loop pulls from it */
/* Other user code (auto): selected when a data loader running for the loop calls it (a
 * Dataset's __getitem__, a collate_fn). */
#define MAYBE_LOADED ((void*)&k_maybe_loaded)
/* Library code of a data loader (torch.utils.data, ...). One that subscripts something
 * (`self.dataset[idx]`) runs with tracing on while it runs for the loop, its first
 * kLoaderTraces times, so that a user __getitem__ that a site specialized before the hook was
 * in inlines is seen (own_version). Later, a new type at such a site makes it take the generic
 * call, which the hook sees; tracing those frames for good would cost every sample ~1 us. */
#define LOADER ((void*)&k_loader)
#define LOADER_SUBSCR ((void*)&k_loader_subscr)
enum { kLoaderTraces = 64 };
static int g_loader_traces = kLoaderTraces; /* under the GIL */

static inline int is_loader(void* x) { return x == LOADER || x == LOADER_SUBSCR; }
static inline int is_mark(void* x) { return x == REJECT || x == MAYBE || x == MAYBE_LOADED || is_loader(x); }

static void codeinfo_free(CodeInfo* ci) {
  for (CodeInfo** p = &g_all; *p != NULL; p = &(*p)->next_selected)
    if (*p == ci) {
      *p = ci->next_selected;
      break;
    }
  free(ci->stmt);
  free(ci->site);
  Py_XDECREF(ci->filename);
  Py_XDECREF(ci->name);
  Py_XDECREF(ci->qualname);
  free(ci);
}

static void free_extra(void* p) {
  if (p != NULL && !is_mark(p)) codeinfo_free((CodeInfo*)p);
}

static inline void* extra_of(PyCodeObject* co) {
  void* x = NULL;
  if (_PyCode_GetExtra((PyObject*)co, g_extra, &x) != 0) {
    PyErr_Clear();
    return REJECT;
  }
  return x;
}

static inline CodeInfo* info_of(PyCodeObject* co) {
  void* x = extra_of(co);
  return (x == NULL || is_mark(x)) ? NULL : (CodeInfo*)x;
}

static void set_extra(PyCodeObject* co, void* x) {
  if (_PyCode_SetExtra((PyObject*)co, g_extra, x) != 0) PyErr_Clear();
}

static CodeInfo* codeinfo_new(PyCodeObject* co, int roles) {
  CodeInfo* ci = (CodeInfo*)calloc(1, sizeof(CodeInfo));
  if (ci == NULL) return NULL;
  ci->roles = roles;
  ci->getitem = co->co_argcount == 2 && PyUnicode_Check(co->co_name) &&
                PyUnicode_CompareWithASCIIString(co->co_name, "__getitem__") == 0;
  ci->first = co->co_firstlineno;
  ci->filename = Py_NewRef(co->co_filename);
  ci->name = Py_NewRef(co->co_name);
  ci->qualname = Py_NewRef(co->co_qualname);
  ci->next_selected = g_all;
  g_all = ci;
  return ci;
}

/* CPython 3.11 inlines `obj[key]` into a heap type's Python __getitem__ (BINARY_SUBSCR_GETITEM)
 * without the PEP 523 hook, once the site is specialized: a selected __getitem__ called from an
 * untraced frame would run unseen. The specializer caches the function's version in 16 bits
 * and gives up on a larger one, and an inlined site whose cached version no longer matches
 * falls back to the generic call, which goes through the hook. So the function of a selected
 * __getitem__ gets a version of its own from the top of the 32-bit range (unique per
 * function, far above the interpreter's counter, which starts at 1): calls to it take the
 * hook's path from then on. */
enum { kOwnVersionsFrom = 0xF0000000u };
static uint32_t g_next_own_version = 0xFFFFFFFFu;

static void own_version(PyObject* fn) {
  if (fn == NULL || !PyFunction_Check(fn)) return;
  PyFunctionObject* f = (PyFunctionObject*)fn;
  if (f->func_version >= kOwnVersionsFrom || g_next_own_version < kOwnVersionsFrom) return;
  f->func_version = g_next_own_version--;
}

/* ---- settings (under the GIL) ---- */

static int g_auto = 0;
static PyObject* g_decider = NULL;  /* explicit specs, or NULL */
static PyObject* g_preparer = NULL;
static char** g_excluded = NULL;
static Py_ssize_t g_n_excluded = 0;
static int g_installed = 0;
static _PyFrameEvalFunction g_prev_eval = NULL;

static struct {
  unsigned long long selected, line_events, adopted, polls, foreign, prepare_failed, deep;
} g_stats;

/* ---- per-thread state ---- */

enum { kMaxDepth = 128, kMaxSuspended = 16, kPollEvery = 1024 };

typedef struct Entry {
  _PyInterpreterFrame* f;
  CodeInfo* ci;
  uint32_t site;  /* the current statement's site, 0 before the frame's first line */
  int32_t stmt;   /* its first line */
  int lasti;      /* the instruction of the last line event */
  uint64_t t0;    /* when the current statement began (gnnprof_now) */
  uint8_t hit;    /* the current segment began the statement (0: a generator resumed) */
  uint8_t adopted; /* already running when tracing began: no hook switches tracing off */
} Entry;

typedef struct Suspended {
  _PyInterpreterFrame* f; /* a selected generator suspended at a yield */
  uint32_t site;
  int32_t stmt;
  int lasti;
} Suspended;

typedef struct ThreadTrace {
  int depth; /* may exceed kMaxDepth: those frames are not traced */
  Entry stack[kMaxDepth];
  Suspended suspended[kMaxSuspended];
  unsigned next_victim;
  unsigned since_poll;
  int auto_done;
  int deciding; /* inside the explicit decider or the preparer: no decisions */
} ThreadTrace;

static pthread_key_t g_key;
static __thread ThreadTrace* t_trace = NULL;

static void free_thread_trace(void* p) { free(p); }

static ThreadTrace* thread_trace(void) {
  ThreadTrace* tt = t_trace;
  if (tt != NULL) return tt;
  tt = (ThreadTrace*)calloc(1, sizeof(ThreadTrace));
  if (tt == NULL) return NULL;
  pthread_setspecific(g_key, tt);
  t_trace = tt;
  return tt;
}

static int trace_fn(PyObject* obj, PyFrameObject* frame, int what, PyObject* arg);

static void set_tracing(PyThreadState* ts, int on) {
  ts->c_tracefunc = on ? trace_fn : NULL;
  _PyThreadState_UpdateTracingState(ts);
}

/* ---- selection ---- */

static int user_file(PyObject* filename) {
  const char* f = PyUnicode_Check(filename) ? PyUnicode_AsUTF8(filename) : NULL;
  if (f == NULL) {
    PyErr_Clear();
    return 0;
  }
  if (f[0] == '<' || f[0] == '\0') return 0; /* <frozen ...>, <string>, <stdin> */
  for (Py_ssize_t i = 0; i < g_n_excluded; ++i)
    if (strncmp(f, g_excluded[i], strlen(g_excluded[i])) == 0) return 0;
  return 1;
}

/* A generator or an iterator's __next__/__iter__: what a loop pulls batches from. */
static int iterator_shaped(PyCodeObject* co) {
  if ((co->co_flags & (CO_GENERATOR | CO_ITERABLE_COROUTINE)) != 0) return 1;
  if (!PyUnicode_Check(co->co_name)) return 0;
  return PyUnicode_CompareWithASCIIString(co->co_name, "__next__") == 0 ||
         PyUnicode_CompareWithASCIIString(co->co_name, "__iter__") == 0;
}

static char** g_loaders = NULL; /* path fragments of data-loader libraries */
static Py_ssize_t g_n_loaders = 0;

static int loader_file(PyObject* filename) {
  const char* f = PyUnicode_Check(filename) ? PyUnicode_AsUTF8(filename) : NULL;
  if (f == NULL) {
    PyErr_Clear();
    return 0;
  }
  for (Py_ssize_t i = 0; i < g_n_loaders; ++i)
    if (strstr(f, g_loaders[i]) != NULL) return 1;
  return 0;
}

/* Whether co's (unquickened) bytecode subscripts anything. */
static int subscripts(PyCodeObject* co) {
  PyObject* code = PyCode_GetCode(co);
  if (code == NULL || !PyBytes_Check(code)) {
    Py_XDECREF(code);
    PyErr_Clear();
    return 1;
  }
  const unsigned char* b = (const unsigned char*)PyBytes_AS_STRING(code);
  int found = 0;
  for (Py_ssize_t i = 0; i + 1 < PyBytes_GET_SIZE(code) && !found; i += 2) found = b[i] == BINARY_SUBSCR;
  Py_DECREF(code);
  return found;
}

/* The auto selection's mark for a code object seen for the first time. */
static void* auto_mark(PyCodeObject* co) {
  if (user_file(co->co_filename)) return iterator_shaped(co) ? MAYBE : MAYBE_LOADED;
  if (!loader_file(co->co_filename)) return REJECT;
  return subscripts(co) ? LOADER_SUBSCR : LOADER;
}

/* Calls fn(code) with no exception pending and decisions off; returns a new reference or NULL
 * (error cleared). */
static PyObject* call_helper(ThreadTrace* tt, PyObject* fn, PyObject* code) {
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);
  tt->deciding = 1;
  PyObject* r = PyObject_CallOneArg(fn, code);
  tt->deciding = 0;
  if (r == NULL) PyErr_Clear();
  PyErr_Restore(et, ev, tb);
  return r;
}

/* First sight of a code object in the hook: its selection, cached in the code's extra slot. */
static void* decide(ThreadTrace* tt, PyCodeObject* co) {
  if (tt->deciding || _Py_IsFinalizing()) return REJECT; /* not cached */
  if (g_decider != NULL) {
    PyObject* r = call_helper(tt, g_decider, (PyObject*)co);
    const int yes = r != NULL && PyObject_IsTrue(r) == 1;
    Py_XDECREF(r);
    PyErr_Clear();
    if (yes) {
      CodeInfo* ci = codeinfo_new(co, ROLE_EXPLICIT);
      if (ci != NULL) {
        set_extra(co, ci);
        ++g_stats.selected;
        return ci;
      }
    }
  }
  void* x = g_auto ? auto_mark(co) : REJECT;
  set_extra(co, x);
  return x;
}

static int feeds_loop(CodeInfo* ci) { return ci != NULL && (ci->roles & (ROLE_LOOP | ROLE_PIPELINE)) != 0; }

/* Frames a data loader's call of user code is looked through for the loop it runs for. */
enum { kLoaderWalk = 16 };

static int g_worker = 0; /* a data loader's worker process (tracer_enter_fork_child) */

/* Whether frame c and those below it, within kLoaderWalk frames, are library code (a data
 * loader) down to a frame of the loop or its pipeline. In a data loader's worker process
 * always: it exists to run the loader (the parent's frames below its worker loop are not
 * looked at). */
static int runs_for_loop(_PyInterpreterFrame* c) {
  if (g_worker) return 1; /* the process exists to run the loader */
  for (int n = 0; c != NULL && n < kLoaderWalk; c = c->previous, ++n) {
    void* x = extra_of(c->f_code);
    if (x == NULL) x = auto_mark(c->f_code); /* begun before the hook was in */
    if (x == MAYBE || x == MAYBE_LOADED) return 0; /* user code the loop is not running */
    if (!is_mark(x)) return feeds_loop((CodeInfo*)x);
  }
  return 0;
}

/* The pipeline's new member: the code of frame f, called by a data loader or pulled by the
 * loop. */
static CodeInfo* join_pipeline(_PyInterpreterFrame* f) {
  CodeInfo* mine = codeinfo_new(f->f_code, ROLE_PIPELINE);
  if (mine == NULL) return NULL;
  set_extra(f->f_code, mine);
  ++g_stats.selected;
  if (mine->getitem) own_version((PyObject*)f->f_func);
  return mine;
}

/* A user generator/iterator resumed directly by a frame of the loop (or of the pipeline it
 * already pulls from), or user code called by a data loader running for the loop, joins the
 * pipeline. */
static int pulled_by_loop(PyThreadState* ts, _PyInterpreterFrame* f, void* mark) {
  _PyInterpreterFrame* caller = ts->cframe != NULL ? ts->cframe->current_frame : NULL;
  if (caller == NULL) return 0;
  void* cx = extra_of(caller->f_code);
  const int join = is_loader(cx) ? runs_for_loop(caller)
                                 : mark == MAYBE && !is_mark(cx) && feeds_loop((CodeInfo*)cx);
  return join && join_pipeline(f) != NULL;
}

static PyObject* eval_hook(PyThreadState* ts, _PyInterpreterFrame* f, int throwflag) {
  PyCodeObject* co = f->f_code;
  void* x = extra_of(co);
  int want;
  if (x == REJECT) {
    want = 0;
  } else {
    if (x == NULL) {
      ThreadTrace* tt = thread_trace();
      x = tt != NULL ? decide(tt, co) : REJECT;
    }
    if (x == REJECT || x == LOADER) want = 0;
    else if (x == MAYBE || x == MAYBE_LOADED) want = pulled_by_loop(ts, f, x);
    else if (x == LOADER_SUBSCR)
      want = g_loader_traces > 0 && ts->cframe != NULL && runs_for_loop(ts->cframe->current_frame) && g_loader_traces--;
    else want = 1;
    if (want && !is_mark(x) && ((CodeInfo*)x)->getitem) own_version((PyObject*)f->f_func);
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

static void prepare(ThreadTrace* tt, CodeInfo* ci, PyCodeObject* co) {
  ci->state = -1;
  if (g_preparer == NULL) return;
  PyObject* r = call_helper(tt, g_preparer, (PyObject*)co);
  if (r == NULL || !PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 3) {
    ++g_stats.prepare_failed;
    Py_XDECREF(r);
    return;
  }
  PyObject *first = PyTuple_GET_ITEM(r, 0), *stmts = PyTuple_GET_ITEM(r, 1), *sites = PyTuple_GET_ITEM(r, 2);
  if (!PyLong_Check(first) || !PyList_Check(stmts) || !PyList_Check(sites) || PyList_GET_SIZE(stmts) != PyList_GET_SIZE(sites)) {
    ++g_stats.prepare_failed;
    Py_DECREF(r);
    return;
  }
  const Py_ssize_t n = PyList_GET_SIZE(stmts);
  int32_t* stmt = (int32_t*)calloc((size_t)n + 1, sizeof(int32_t));
  uint32_t* site = (uint32_t*)calloc((size_t)n + 1, sizeof(uint32_t));
  if (stmt == NULL || site == NULL) {
    free(stmt);
    free(site);
    Py_DECREF(r);
    return;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    stmt[i] = (int32_t)PyLong_AsLong(PyList_GET_ITEM(stmts, i));
    site[i] = (uint32_t)PyLong_AsUnsignedLong(PyList_GET_ITEM(sites, i));
  }
  PyErr_Clear();
  ci->first = (int)PyLong_AsLong(first);
  PyErr_Clear();
  ci->n = (int)n;
  ci->stmt = stmt;
  ci->site = site;
  ci->state = 1;
  Py_DECREF(r);
}

static void lookup(CodeInfo* ci, int line, int32_t* stmt, uint32_t* site) {
  const int off = line - ci->first;
  if (ci->state == 1 && off >= 0 && off < ci->n && ci->site[off] != 0) {
    *stmt = ci->stmt[off];
    *site = ci->site[off];
    return;
  }
  /* No statement map (no source): each line is a statement of its own. */
  *stmt = line;
  const char* file = PyUnicode_AsUTF8(ci->filename);
  const char* fn = PyUnicode_AsUTF8(ci->qualname);
  if (file == NULL || fn == NULL) PyErr_Clear();
  *site = file != NULL ? g_core.line_site(file, (unsigned)line, fn != NULL ? fn : "", "") : 0;
}

static Entry* push(ThreadTrace* tt, _PyInterpreterFrame* f, CodeInfo* ci, int adopted) {
  if (tt->depth >= kMaxDepth) {
    ++tt->depth;
    ++g_stats.deep;
    return NULL;
  }
  Entry* e = &tt->stack[tt->depth++];
  memset(e, 0, sizeof(*e));
  e->f = f;
  e->ci = ci;
  e->stmt = -1;
  e->lasti = -1;
  e->adopted = (uint8_t)adopted;
  return e;
}

/* Ends the current statement of the top entry at `now` (no new line set). */
static void end_statement(Entry* e, uint64_t now) {
  if (e->site != 0) g_core.line_event(e->site, e->t0, now, e->hit);
  e->site = 0;
}

static uint32_t site_below(ThreadTrace* tt) {
  const int d = tt->depth < kMaxDepth ? tt->depth : kMaxDepth;
  return d >= 2 ? tt->stack[d - 2].site : 0;
}

/* The entry of frame f: the top one normally. Entries above it belong to frames that left
 * without a return event (tracing was off when they did): they end now. */
static Entry* entry_of(ThreadTrace* tt, _PyInterpreterFrame* f) {
  if (tt->depth > kMaxDepth) return NULL;
  for (int i = tt->depth - 1; i >= 0; --i) {
    if (tt->stack[i].f != f) continue;
    if (i != tt->depth - 1) {
      const uint64_t now = g_core.now();
      while (tt->depth - 1 > i) end_statement(&tt->stack[--tt->depth], now);
    }
    return &tt->stack[i];
  }
  return NULL;
}

static Suspended* find_suspended(ThreadTrace* tt, _PyInterpreterFrame* f) {
  for (int i = 0; i < kMaxSuspended; ++i)
    if (tt->suspended[i].f == f) return &tt->suspended[i];
  return NULL;
}

/* The selection of a frame that began while tracing was on: normally decided by the hook,
 * but an inlined __getitem__ (own_version) never passed it. */
static CodeInfo* called_info(ThreadTrace* tt, _PyInterpreterFrame* f) {
  void* x = extra_of(f->f_code);
  if (x == NULL) x = decide(tt, f->f_code);
  if (x == MAYBE || x == MAYBE_LOADED) { /* a user __getitem__ inlined into a data loader's frame */
    _PyInterpreterFrame* caller = f->previous;
    if (caller == NULL || !is_loader(extra_of(caller->f_code)) || !runs_for_loop(caller)) return NULL;
    return join_pipeline(f);
  }
  if (is_mark(x)) return NULL;
  CodeInfo* ci = (CodeInfo*)x;
  if (ci->getitem) own_version((PyObject*)f->f_func); /* selected, but inlined until now */
  return ci;
}

static void on_call(ThreadTrace* tt, _PyInterpreterFrame* f) {
  CodeInfo* ci = called_info(tt, f);
  if (ci == NULL) return;
  Entry* e = push(tt, f, ci, 0);
  if (e == NULL) return;
  if (f->owner == FRAME_OWNED_BY_GENERATOR) {
    Suspended* s = find_suspended(tt, f);
    if (s != NULL) { /* resumed at its yield: the same statement goes on, without a hit */
      e->site = s->site;
      e->stmt = s->stmt;
      e->lasti = s->lasti;
      e->hit = 0;
      e->t0 = g_core.set_line(e->site);
      s->f = NULL;
    }
  }
}

static void maybe_poll(ThreadTrace* tt) {
  if (++tt->since_poll < kPollEvery) return;
  tt->since_poll = 0;
  ++g_stats.polls;
  (void)g_core.poll(0);
}

static void on_line(ThreadTrace* tt, PyFrameObject* frame, _PyInterpreterFrame* f) {
  Entry* e = tt->depth > 0 && tt->depth <= kMaxDepth ? &tt->stack[tt->depth - 1] : NULL;
  if (e == NULL || e->f != f) {
    CodeInfo* ci = info_of(f->f_code);
    if (ci == NULL) return; /* an unselected frame that runs while tracing is on */
    e = entry_of(tt, f);
    if (e == NULL) { /* running before tracing began (the auto-selected loop) */
      e = push(tt, f, ci, 1);
      if (e == NULL) return;
      ++g_stats.adopted;
    }
  }
  CodeInfo* ci = e->ci;
  if (ci->state == 0) prepare(tt, ci, f->f_code);
  const int line = frame->f_lineno != 0 ? frame->f_lineno : PyFrame_GetLineNumber(frame);
  const int lasti = _PyInterpreterFrame_LASTI(f);
  int32_t stmt;
  uint32_t site;
  lookup(ci, line, &stmt, &site);
  /* A statement spanning several lines is one execution until control jumps back. */
  if (stmt == e->stmt && lasti > e->lasti) {
    e->lasti = lasti;
    return;
  }
  const uint64_t now = g_core.set_line(site);
  end_statement(e, now);
  e->site = site;
  e->stmt = stmt;
  e->t0 = now;
  e->hit = 1;
  e->lasti = lasti;
  ++g_stats.line_events;
  maybe_poll(tt);
}

/* Whether a frame that called `f` (a few levels down the stack) runs selected code. */
static int selected_caller(_PyInterpreterFrame* f) {
  int n = 0;
  for (_PyInterpreterFrame* c = f->previous; c != NULL && n < 64; c = c->previous, ++n)
    if (info_of(c->f_code) != NULL) return 1;
  return 0;
}

static void on_return(ThreadTrace* tt, _PyInterpreterFrame* f) {
  if (info_of(f->f_code) == NULL) return;
  Entry* e = entry_of(tt, f);
  if (e == NULL) {
    if (tt->depth > kMaxDepth) --tt->depth; /* a frame too deep to trace */
    return;
  }
  const uint64_t now = g_core.set_line(site_below(tt));
  const uint32_t site = e->site;
  end_statement(e, now);
  if (f->owner == FRAME_OWNED_BY_GENERATOR) {
    Suspended* s = find_suspended(tt, f);
    if (_Py_OPCODE(*f->prev_instr) == YIELD_VALUE) {
      if (s == NULL) {
        for (int i = 0; i < kMaxSuspended && s == NULL; ++i)
          if (tt->suspended[i].f == NULL) s = &tt->suspended[i];
        if (s == NULL) s = &tt->suspended[tt->next_victim++ % kMaxSuspended];
      }
      s->f = f;
      s->site = site;
      s->stmt = e->stmt;
      s->lasti = e->lasti;
    } else if (s != NULL) {
      s->f = NULL; /* finished: its frame may be reused */
    }
  }
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
  (void)arg;
  if (!g_core_bound) return 0;
  ThreadTrace* tt = thread_trace();
  if (tt == NULL) return 0;
  if (!g_installed) { /* the hook was taken out (tracer_uninstall): this thread stops too */
    tracer_close_thread();
    set_tracing(PyThreadState_Get(), 0);
    return 0;
  }
  _PyInterpreterFrame* f = frame->f_frame;
  switch (what) {
    case PyTrace_LINE: on_line(tt, frame, f); break;
    case PyTrace_CALL: on_call(tt, f); break;
    case PyTrace_RETURN: on_return(tt, f); break;
    default: break;
  }
  return 0;
}

/* ---- public ---- */

int tracer_init(void) {
  if (g_extra >= 0) return 0;
  g_extra = _PyEval_RequestCodeExtraIndex(free_extra);
  if (g_extra < 0) {
    PyErr_SetString(PyExc_RuntimeError, "gnnprof: no code extra slot left");
    return -1;
  }
  if (pthread_key_create(&g_key, free_thread_trace) != 0) {
    PyErr_SetString(PyExc_RuntimeError, "gnnprof: pthread_key_create failed");
    return -1;
  }
  return 0;
}

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

int tracer_resume(void) { return g_all != NULL || g_decider != NULL ? tracer_install() : 0; }

int tracer_select(PyObject* code, int roles) {
  if (!PyCode_Check(code)) {
    PyErr_SetString(PyExc_TypeError, "gnnprof: expected a code object");
    return -1;
  }
  PyCodeObject* co = (PyCodeObject*)code;
  CodeInfo* ci = info_of(co);
  if (ci != NULL) {
    ci->roles |= roles;
  } else {
    ci = codeinfo_new(co, roles);
    if (ci == NULL) {
      PyErr_NoMemory();
      return -1;
    }
    set_extra(co, ci);
    ++g_stats.selected;
  }
  return tracer_install();
}

void tracer_selected_function(PyObject* function) {
  if (!PyFunction_Check(function)) return;
  CodeInfo* ci = info_of((PyCodeObject*)PyFunction_GET_CODE(function));
  if (ci != NULL && ci->getitem) own_version(function);
}

void tracer_set_auto(int on) { g_auto = on; }

int tracer_set_decider(PyObject* decider) {
  Py_XSETREF(g_decider, decider == Py_None ? NULL : Py_NewRef(decider));
  return 0;
}

int tracer_set_preparer(PyObject* preparer) {
  Py_XSETREF(g_preparer, preparer == Py_None ? NULL : Py_NewRef(preparer));
  return 0;
}

/* Replaces *list (n entries) with a copy of the strings in `seq`; 0, or -1 with an exception set. */
static int set_strings(PyObject* strings, char*** list, Py_ssize_t* count) {
  PyObject* seq = PySequence_Fast(strings, "gnnprof: expected a sequence of strings");
  if (seq == NULL) return -1;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  char** out = (char**)calloc((size_t)n + 1, sizeof(char*));
  if (out == NULL) {
    Py_DECREF(seq);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    const char* s = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i));
    if (s == NULL || (out[i] = strdup(s)) == NULL) {
      for (Py_ssize_t k = 0; k < i; ++k) free(out[k]);
      free(out);
      Py_DECREF(seq);
      if (!PyErr_Occurred()) PyErr_NoMemory();
      return -1;
    }
  }
  Py_DECREF(seq);
  for (Py_ssize_t i = 0; i < *count; ++i) free((*list)[i]);
  free(*list);
  *list = out;
  *count = n;
  return 0;
}

int tracer_set_excluded(PyObject* prefixes) { return set_strings(prefixes, &g_excluded, &g_n_excluded); }

int tracer_set_loaders(PyObject* fragments) { return set_strings(fragments, &g_loaders, &g_n_loaders); }

/* Whether frame `fr` of `co` is, at its current instruction, inside a loop of its code:
 * between a backward jump (the end of a for/while body) and its target. */
static int in_loop(PyFrameObject* fr, PyCodeObject* co) {
  const int lasti = PyFrame_GetLasti(fr);
  PyObject* code = lasti >= 0 ? PyCode_GetCode(co) : NULL; /* unquickened: plain opcodes */
  if (code == NULL || !PyBytes_Check(code)) {
    Py_XDECREF(code);
    PyErr_Clear();
    return 0;
  }
  const unsigned char* b = (const unsigned char*)PyBytes_AS_STRING(code);
  const Py_ssize_t n = PyBytes_GET_SIZE(code) / 2;
  int found = 0;
  Py_ssize_t arg = 0;
  for (Py_ssize_t i = 0; i < n && !found; ++i) {
    const int op = b[2 * i];
    arg = (arg << 8) | b[2 * i + 1];
    if (op == EXTENDED_ARG) continue;
    if (op == JUMP_BACKWARD || op == JUMP_BACKWARD_NO_INTERRUPT) {
      const Py_ssize_t target = i + 1 - arg; /* in code units, from the next instruction */
      found = 2 * target <= lasti && lasti <= 2 * i;
    }
    arg = 0;
  }
  Py_DECREF(code);
  return found;
}

/* User frames above the optimizer step's caller looked at for the loop that calls it. */
enum { kLoopWalk = 4 };

void tracer_on_optimizer_step(void) {
  if (!g_auto || !Py_IsInitialized() || _Py_IsFinalizing()) return;
  ThreadTrace* tt = thread_trace();
  if (tt == NULL || tt->auto_done) return;
  tt->auto_done = 1;
  PyGILState_STATE gil = PyGILState_Ensure();
  PyThreadState* ts = PyThreadState_Get();
  PyFrameObject* fr = PyEval_GetFrame();
  Py_XINCREF(fr);
  /* The first user frame that calls the step; if it is not inside a loop itself (a train_step
   * helper), also the first user frame above it that is (the loop that calls the helper). */
  int found = 0, looping = 0, above = 0;
  while (fr != NULL && !looping && above < kLoopWalk) {
    PyCodeObject* co = PyFrame_GetCode(fr);
    if (user_file(co->co_filename)) {
      if (!found) {
        found = tracer_select((PyObject*)co, ROLE_LOOP) == 0;
        looping = found && in_loop(fr, co);
      } else {
        ++above;
        if (in_loop(fr, co)) {
          (void)tracer_select((PyObject*)co, ROLE_LOOP);
          looping = 1;
        }
      }
    }
    Py_DECREF(co);
    PyFrameObject* back = PyFrame_GetBack(fr);
    Py_DECREF(fr);
    fr = back;
  }
  Py_XDECREF(fr);
  PyErr_Clear();
  if (found) {
    if (ts->c_tracefunc == NULL) set_tracing(ts, 1); /* the loop is running: trace it from now on */
    else if (ts->c_tracefunc != trace_fn) ++g_stats.foreign;
  }
  PyGILState_Release(gil);
}

int tracer_enter_fork_child(void) {
  ThreadTrace* tt = t_trace;
  if (tt != NULL) { /* the frames the parent was tracing never return here */
    tt->depth = 0;
    memset(tt->suspended, 0, sizeof(tt->suspended));
  }
  if (g_core_bound) (void)g_core.set_line(0);
  memset(&g_stats, 0, sizeof(g_stats)); /* the worker's own counts, for its profile's note */
  g_worker = 1;
  g_loader_traces = kLoaderTraces;
  return g_auto ? tracer_install() : 0;
}

void tracer_close_thread(void) {
  ThreadTrace* tt = t_trace;
  if (tt == NULL || !g_core_bound) return;
  const uint64_t now = g_core.set_line(0);
  const int d = tt->depth < kMaxDepth ? tt->depth : kMaxDepth;
  for (int i = d - 1; i >= 0; --i) end_statement(&tt->stack[i], now);
  tt->depth = 0;
}

PyObject* tracer_selected(void) {
  PyObject* out = PyList_New(0);
  if (out == NULL) return NULL;
  for (CodeInfo* ci = g_all; ci != NULL; ci = ci->next_selected) {
    PyObject* t = Py_BuildValue("(OOOi)", ci->filename, ci->name, ci->qualname, ci->roles);
    if (t == NULL || PyList_Append(out, t) != 0) {
      Py_XDECREF(t);
      Py_DECREF(out);
      return NULL;
    }
    Py_DECREF(t);
  }
  return out;
}

PyObject* tracer_stats(void) {
  return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:i,s:i}", "selected", g_stats.selected, "line_events",
                       g_stats.line_events, "adopted", g_stats.adopted, "polls", g_stats.polls, "foreign_tracer",
                       g_stats.foreign, "prepare_failed", g_stats.prepare_failed, "too_deep", g_stats.deep,
                       "installed", g_installed, "auto", g_auto);
}
