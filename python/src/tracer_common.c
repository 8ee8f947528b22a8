/* tracer_common.c — the half of the line tracer that does not depend on how frames are seen
 * (tracer_common.h). Nothing here raises into the host: a Python error in the selection or
 * statement-map helpers is cleared and that code object is traced line by line or not at all. */
#include "tracer_common.h"

#include <opcode.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core_abi.h"

/* ---- what 3.10 spells differently ---- */

#if PY_VERSION_HEX < 0x030B0000
#include <frameobject.h>
/* No co_qualname: the name stands in (the Python side finds the qualified one, _lines.qualname). */
#define CODE_QUALNAME(co) ((co)->co_name)
static PyObject* code_bytes(PyCodeObject* co) { return Py_NewRef(co->co_code); }
static int frame_lasti_bytes(PyFrameObject* fr) { return fr->f_lasti < 0 ? -1 : fr->f_lasti * 2; }
#else
#define CODE_QUALNAME(co) ((co)->co_qualname)
static PyObject* code_bytes(PyCodeObject* co) { return PyCode_GetCode(co); } /* unquickened */
static int frame_lasti_bytes(PyFrameObject* fr) { return PyFrame_GetLasti(fr); }
#endif

/* The target (in code units) of instruction i, op with argument arg, when it jumps backward
 * (the end of a loop), else -1. */
static Py_ssize_t backward_target(int op, Py_ssize_t i, Py_ssize_t arg) {
#if PY_VERSION_HEX < 0x030B0000 /* absolute targets */
  if (op == JUMP_ABSOLUTE || op == POP_JUMP_IF_FALSE || op == POP_JUMP_IF_TRUE || op == JUMP_IF_FALSE_OR_POP ||
      op == JUMP_IF_TRUE_OR_POP)
    return arg <= i ? arg : -1;
  return -1;
#else /* relative to the next instruction (after JUMP_BACKWARD's cache entry on 3.13+) */
  int back = op == JUMP_BACKWARD || op == JUMP_BACKWARD_NO_INTERRUPT;
#if PY_VERSION_HEX < 0x030C0000 /* 3.11's `while cond:` ends in a conditional backward jump */
  back = back || op == POP_JUMP_BACKWARD_IF_TRUE || op == POP_JUMP_BACKWARD_IF_FALSE ||
         op == POP_JUMP_BACKWARD_IF_NONE || op == POP_JUMP_BACKWARD_IF_NOT_NONE;
#endif
  if (!back) return -1;
  const int cache = PY_VERSION_HEX >= 0x030D0000 && op == JUMP_BACKWARD ? 1 : 0;
  return i + 1 + cache - arg;
#endif
}

/* ---- code objects ---- */

CodeInfo* g_all = NULL; /* list of every selection (freed entries are unlinked) */
char k_reject, k_maybe, k_maybe_loaded, k_loader, k_loader_subscr, k_framework;
static Py_ssize_t g_extra = -1;

static void codeinfo_free(CodeInfo* ci) {
  for (CodeInfo** p = &g_all; *p != NULL; p = &(*p)->next_selected)
    if (*p == ci) {
      *p = ci->next_selected;
      break;
    }
  free(ci->stmt);
  free(ci->exits);
  free(ci->site);
  Py_XDECREF(ci->filename);
  Py_XDECREF(ci->name);
  Py_XDECREF(ci->qualname);
  free(ci);
}

static void free_extra(void* p) {
  if (p != NULL && !is_mark(p)) codeinfo_free((CodeInfo*)p);
}

void* extra_of(PyCodeObject* co) {
  void* x = NULL;
  if (GNNPROF_CODE_GET_EXTRA((PyObject*)co, g_extra, &x) != 0) {
    PyErr_Clear();
    return REJECT;
  }
  return x;
}

CodeInfo* info_of(PyCodeObject* co) {
  void* x = extra_of(co);
  return (x == NULL || is_mark(x)) ? NULL : (CodeInfo*)x;
}

void set_extra(PyCodeObject* co, void* x) {
  if (GNNPROF_CODE_SET_EXTRA((PyObject*)co, g_extra, x) != 0) PyErr_Clear();
}

CodeInfo* codeinfo_new(PyCodeObject* co, int roles) {
  CodeInfo* ci = (CodeInfo*)calloc(1, sizeof(CodeInfo));
  if (ci == NULL) return NULL;
  ci->roles = roles;
  if (roles & ROLE_CALLBACK) ++g_stats.callbacks; /* counted where made: each callback once */
  ci->getitem = co->co_argcount == 2 && PyUnicode_Check(co->co_name) &&
                PyUnicode_CompareWithASCIIString(co->co_name, "__getitem__") == 0;
  ci->first = co->co_firstlineno;
  ci->filename = Py_NewRef(co->co_filename);
  ci->name = Py_NewRef(co->co_name);
  ci->qualname = Py_NewRef(CODE_QUALNAME(co));
  ci->next_selected = g_all;
  g_all = ci;
  return ci;
}

/* ---- settings ---- */

int g_auto = 0;
/* Bumped by each session start (tracer_new_session): auto selection looks for the loop again on
 * each thread (a notebook's next profiled cell). Read without the GIL by torch's observer. */
static unsigned g_auto_epoch = 1;
static unsigned g_loop_epoch = 0; /* the g_auto_epoch in which the loop was found */
static unsigned g_framework_epoch = 0; /* the g_auto_epoch whose loop a framework runs */
PyObject* g_decider = NULL;
int g_installed = 0;
int g_worker = 0;
__thread int t_feeds_loop = 0;
struct TracerStats g_stats;
static PyObject* g_preparer = NULL;
static char** g_excluded = NULL; /* path prefixes of library code */
static Py_ssize_t g_n_excluded = 0;
static char** g_loaders = NULL; /* path fragments of data-loader libraries */
static Py_ssize_t g_n_loaders = 0;
static char** g_frameworks = NULL; /* path fragments of third-party packages */
static Py_ssize_t g_n_frameworks = 0;
static char** g_neutral = NULL; /* ...and the names of those that are no framework ("torch/") */
static Py_ssize_t g_n_neutral = 0;

static pthread_key_t g_key;
__thread ThreadTrace* t_trace = NULL;

static void free_thread_trace(void* p) {
  if (t_trace == p) t_trace = NULL; /* the exiting thread's own: later destructors must not reach it */
  free(p);
}

int common_init(void) {
  if (g_extra >= 0) return 0;
  g_extra = GNNPROF_REQUEST_CODE_EXTRA(free_extra);
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

ThreadTrace* thread_trace(void) {
  ThreadTrace* tt = t_trace;
  if (tt != NULL) return tt;
  tt = (ThreadTrace*)calloc(1, sizeof(ThreadTrace));
  if (tt == NULL) return NULL;
  pthread_setspecific(g_key, tt);
  t_trace = tt;
  return tt;
}

/* ---- selection ---- */

static int user_file(PyObject* filename) {
  const char* f = PyUnicode_Check(filename) ? PyUnicode_AsUTF8(filename) : NULL;
  if (f == NULL) {
    PyErr_Clear();
    return 0;
  }
  /* <frozen ...>, <string>, <stdin>; but terminal IPython's cells (Jupyter's have paths) */
  if (f[0] == '\0' || (f[0] == '<' && strncmp(f, "<ipython-input-", 15) != 0)) return 0;
  for (Py_ssize_t i = 0; i < g_n_excluded; ++i)
    if (strncmp(f, g_excluded[i], strlen(g_excluded[i])) == 0) return 0;
  return 1;
}

/* A generator or an iterator's __next__/__iter__, or their async kin (an async generator,
 * __anext__: `async for batch in batches()`): what a loop pulls batches from. Not a generator
 * expression: one line of the loop's own function (`" ".join(str(t) for t in times)` after
 * the loop), whose block would repeat that function's source. */
static int iterator_shaped(PyCodeObject* co) {
  if (!PyUnicode_Check(co->co_name)) return 0;
  if (PyUnicode_CompareWithASCIIString(co->co_name, "<genexpr>") == 0) return 0;
  if ((co->co_flags & (CO_GENERATOR | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR)) != 0) return 1;
  return PyUnicode_CompareWithASCIIString(co->co_name, "__next__") == 0 ||
         PyUnicode_CompareWithASCIIString(co->co_name, "__iter__") == 0 ||
         PyUnicode_CompareWithASCIIString(co->co_name, "__anext__") == 0;
}

static int contains_any(const char* f, char** fragments, Py_ssize_t n) {
  for (Py_ssize_t i = 0; i < n; ++i)
    if (strstr(f, fragments[i]) != NULL) return 1;
  return 0;
}

static int loader_file(PyObject* filename) {
  const char* f = PyUnicode_Check(filename) ? PyUnicode_AsUTF8(filename) : NULL;
  if (f == NULL) {
    PyErr_Clear();
    return 0;
  }
  return contains_any(f, g_loaders, g_n_loaders);
}

/* The package part of f, after the last third-party fragment ("/site-packages/"): a prefix
 * such as /opt/torch/.venv/lib/... says nothing of the package. NULL where there is none. */
static const char* package_name(const char* f) {
  const char* name = NULL;
  for (Py_ssize_t i = 0; i < g_n_frameworks; ++i)
    for (const char* at = g_frameworks[i][0] != '\0' ? strstr(f, g_frameworks[i]) : NULL; at != NULL;
         at = strstr(at + 1, g_frameworks[i]))
      if (name == NULL || at + strlen(g_frameworks[i]) > name) name = at + strlen(g_frameworks[i]);
  return name;
}

/* Library code of a third-party package other than torch's and gnnprof's. */
static int framework_file(PyObject* filename) {
  const char* f = PyUnicode_Check(filename) ? PyUnicode_AsUTF8(filename) : NULL;
  if (f == NULL) {
    PyErr_Clear();
    return 0;
  }
  const char* name = package_name(f);
  if (name == NULL) return 0;
  for (Py_ssize_t i = 0; i < g_n_neutral; ++i)
    if (strncmp(name, g_neutral[i], strlen(g_neutral[i])) == 0) return 0;
  return 1;
}

/* Whether co's (unquickened) bytecode subscripts anything. */
static int subscripts(PyCodeObject* co) {
#ifdef BINARY_SUBSCR
  PyObject* code = code_bytes(co);
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
#else
  (void)co;
  return 1;
#endif
}

int library_iterator(PyCodeObject* co, void* mark) {
  if (mark == NULL) mark = auto_mark(co); /* begun before the hook was in */
  return is_library(mark) && iterator_shaped(co) && !user_file(co->co_filename);
}

int framework_loop(void) {
  return !g_worker && __atomic_load_n(&g_framework_epoch, __ATOMIC_RELAXED) == __atomic_load_n(&g_auto_epoch, __ATOMIC_RELAXED);
}

static int loop_package_file(PyObject* filename);

int callback_walk(PyCodeObject* co, void* x) {
  if (x == NULL) x = auto_mark(co); /* begun before the hook was in */
  if (x == FRAMEWORK) return loop_package_file(co->co_filename); /* another package's: looked through */
  return x == REJECT || is_loader(x) ? 0 : -1;
}

void* auto_mark(PyCodeObject* co) {
  if (user_file(co->co_filename)) {
    /* A Dataset's __len__ answers the loader's size queries (len(loader)): no data work. */
    if (PyUnicode_Check(co->co_name) && PyUnicode_CompareWithASCIIString(co->co_name, "__len__") == 0) return REJECT;
    return iterator_shaped(co) ? MAYBE : MAYBE_LOADED;
  }
  if (loader_file(co->co_filename)) return subscripts(co) ? LOADER_SUBSCR : LOADER;
  return framework_file(co->co_filename) ? FRAMEWORK : REJECT;
}

/* Calls fn(code) with no exception pending and decisions off; returns a new reference or NULL
 * (error cleared). */
static PyObject* call_helper(int* deciding, PyObject* fn, PyObject* code) {
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);
  *deciding = 1;
  PyObject* r = PyObject_CallOneArg(fn, code);
  *deciding = 0;
  if (r == NULL) PyErr_Clear();
  PyErr_Restore(et, ev, tb);
  return r;
}

void* decide(int* deciding, PyCodeObject* co) {
  if (*deciding || GNNPROF_IS_FINALIZING()) return REJECT; /* not cached */
  if (g_decider != NULL) {
    PyObject* r = call_helper(deciding, g_decider, (PyObject*)co);
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

#if PY_VERSION_HEX >= 0x030C0000
/* Whether a backward jump from i to target passes an exception handler's start (code units;
 * co_exceptiontable's entries: start, length, target, depth-and-lasti, varints of 6 bits, bit 6
 * says more): 3.12+ puts handlers after the code (cold blocks), and one whose try statement
 * goes on jumps back to it. No loop. */
static int passes_handler(PyObject* table, Py_ssize_t target, Py_ssize_t i) {
  if (table == NULL || !PyBytes_Check(table)) return 0;
  const unsigned char* b = (const unsigned char*)PyBytes_AS_STRING(table);
  const Py_ssize_t n = PyBytes_GET_SIZE(table);
  for (Py_ssize_t k = 0; k < n;) {
    Py_ssize_t v[4] = {0, 0, 0, 0};
    for (int f = 0; f < 4 && k < n; ++f) {
      unsigned char c = b[k++];
      v[f] = c & 63;
      while ((c & 64) != 0 && k < n) {
        c = b[k++];
        v[f] = (v[f] << 6) | (c & 63);
      }
    }
    if (target < v[2] && v[2] <= i) return 1;
  }
  return 0;
}
#endif

/* Whether the frame runs inside a loop; with lo/hi, the first and last lines of the loops
 * around it (each one's instructions from its backward jump's target to the jump), innermost
 * first, at most `max` of them, their count in *levels. */
static int loop_of(PyFrameObject* fr, PyCodeObject* co, int* lo, int* hi, int max, int* levels) {
  const int lasti = frame_lasti_bytes(fr);
  PyObject* code = lasti >= 0 ? code_bytes(co) : NULL;
  if (code == NULL || !PyBytes_Check(code)) {
    Py_XDECREF(code);
    PyErr_Clear();
    return 0;
  }
  const unsigned char* b = (const unsigned char*)PyBytes_AS_STRING(code);
  const Py_ssize_t n = PyBytes_GET_SIZE(code) / 2;
#if PY_VERSION_HEX >= 0x030C0000
  PyObject* handlers = NULL; /* co_exceptiontable, read at the first backward jump */
#endif
  enum { kMaxLoops = 16 };
  Py_ssize_t from[kMaxLoops], to[kMaxLoops];
  int found = 0;
  Py_ssize_t arg = 0;
  for (Py_ssize_t i = 0; i < n && (found == 0 || (lo != NULL && found < kMaxLoops)); ++i) {
    const int op = b[2 * i];
    arg = (arg << 8) | b[2 * i + 1];
    if (op == EXTENDED_ARG) continue;
    Py_ssize_t target = backward_target(op, i, arg);
#if PY_VERSION_HEX >= 0x030C0000
    if (target >= 0 && handlers == NULL) {
      handlers = PyObject_GetAttrString((PyObject*)co, "co_exceptiontable");
      if (handlers == NULL) PyErr_Clear();
    }
    if (target >= 0 && passes_handler(handlers, target, i)) target = -1;
#endif
    if (target >= 0 && 2 * target <= lasti && lasti <= 2 * i) {
      /* insertion by size: nested loops' ranges nest */
      int k = found++;
      while (k > 0 && to[k - 1] - from[k - 1] > i - target) {
        from[k] = from[k - 1];
        to[k] = to[k - 1];
        --k;
      }
      from[k] = target;
      to[k] = i;
    }
    arg = 0;
  }
  if (found > 0 && lo != NULL && hi != NULL && levels != NULL) {
    *levels = found < max ? found : max;
    for (int l = 0; l < *levels; ++l) {
      lo[l] = hi[l] = 0;
      for (Py_ssize_t i = from[l]; i <= to[l]; ++i) {
        const int line = PyCode_Addr2Line(co, (int)(2 * i));
        if (line <= 0) continue;
        if (lo[l] == 0 || line < lo[l]) lo[l] = line;
        if (line > hi[l]) hi[l] = line;
      }
    }
  }
  Py_DECREF(code);
#if PY_VERSION_HEX >= 0x030C0000
  Py_XDECREF(handlers);
#endif
  return found > 0;
}

static int in_loop(PyFrameObject* fr, PyCodeObject* co) { return loop_of(fr, co, NULL, NULL, 0, NULL); }

/* The loop statements' lines of a frame selected as the loop, for its epoch boundaries. */
static void note_loop_lines(PyFrameObject* fr, PyCodeObject* co) {
  CodeInfo* ci = info_of(co);
  /* Not a generator's (its resumes are no new passes) */
  if (co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) return;
  if (ci != NULL && ci->loop_levels == 0 && loop_of(fr, co, ci->loop_lo, ci->loop_hi, 4, &ci->loop_levels)) {
    ci->loop_level = 0;
    ci->loop_out = 0;
    /* The innermost loop's lines, for the torch observer: its work below the backward call is
     * the step's (metrics), what lies past the loop (an evaluation) is not. */
    if (g_core.set_loop_extent != NULL) {
      const char* file = PyUnicode_AsUTF8(ci->filename);
      const char* fn = PyUnicode_AsUTF8(ci->qualname);
      if (file != NULL && fn != NULL) g_core.set_loop_extent(file, fn, (unsigned)ci->loop_lo[0], (unsigned)ci->loop_hi[0]);
      else PyErr_Clear();
    }
  }
}

/* User frames above the optimizer step's caller looked at for the loop that calls it. */
enum { kLoopWalk = 4 };

int auto_selects_now(void) {
  if (!g_auto || !Py_IsInitialized() || GNNPROF_IS_FINALIZING()) return 0;
  ThreadTrace* tt = thread_trace();
  const unsigned epoch = __atomic_load_n(&g_auto_epoch, __ATOMIC_RELAXED);
  if (tt == NULL || tt->auto_epoch == epoch) return 0;
  tt->auto_epoch = epoch;
  return 1;
}

int auto_selects_at_loader(void) {
  if (!auto_selects_now()) return 0;
  ThreadTrace* tt = thread_trace();
  if (tt != NULL) tt->loader_loop = 1;
  return 1;
}

int auto_selects_at_step(void) {
  ThreadTrace* tt = thread_trace();
  if (tt != NULL && tt->loader_loop) {
    tt->loader_loop = 0;
    tt->auto_epoch = 0; /* looks again: the training loop */
  }
  return auto_selects_now();
}

/* Looks a thread gets for its producer code per session: a data op with no user frame on the
 * stack (gnnprof's own staging copies) does not use up the look for a later one that has. */
enum { kProducerTries = 16 };

/* Whether tt has looks left for its producer code in this session (a new session: all). */
static int producer_tries_left(ThreadTrace* tt, unsigned epoch) {
  if (tt->data_epoch != epoch) tt->data_epoch = epoch, tt->data_tries = 0;
  return tt->data_tries < kProducerTries;
}

/* The frame that called fr (a new reference, or NULL); fr's reference released. */
static PyFrameObject* caller_of(PyFrameObject* fr) {
  PyFrameObject* back = PyFrame_GetBack(fr);
  Py_DECREF(fr);
  return back;
}

int data_may_select(void) {
  if (!g_auto || g_worker || !Py_IsInitialized() || GNNPROF_IS_FINALIZING()) return 0;
  const unsigned epoch = __atomic_load_n(&g_auto_epoch, __ATOMIC_RELAXED);
  if (__atomic_load_n(&g_loop_epoch, __ATOMIC_RELAXED) != epoch) return 0; /* no loop found yet */
  ThreadTrace* tt = t_trace;
  if (tt == NULL) return 1; /* a thread the tracer has not seen: looked at under the GIL */
  if (tt->loop_epoch == epoch || tt->deciding) return 0; /* the loop's thread */
  /* Traced frames here: only a producer's found at a hand-over, whose callee may gather. */
  if (tt->depth > 0 && tt->handed_found != epoch) return 0;
  return producer_tries_left(tt, epoch);
}

/* Selects the innermost user frame that is not module code (ROLE_PIPELINE): 1 when selected
 * now, 2 when it was a producer's already, 0 when there is none. */
static int select_innermost(void) {
  PyFrameObject* fr = PyEval_GetFrame();
  Py_XINCREF(fr);
  int found = 0;
  for (; fr != NULL && !found; fr = caller_of(fr)) {
    PyCodeObject* co = PyFrame_GetCode(fr);
    /* Module code is a script's top level, not a producer's function. */
    if (user_file(co->co_filename) && PyUnicode_CompareWithASCIIString(co->co_name, "<module>") != 0) {
      const CodeInfo* ci = info_of(co);
      found = ci != NULL && (ci->roles & ROLE_PIPELINE) ? 2 : tracer_select((PyObject*)co, ROLE_PIPELINE) == 0;
    }
    Py_DECREF(co);
  }
  Py_XDECREF(fr);
  PyErr_Clear();
  if (found == 1) ++g_stats.producers;
  return found;
}

int select_producer(void) {
  ThreadTrace* tt = thread_trace();
  if (tt == NULL) return 0;
  if (!producer_tries_left(tt, __atomic_load_n(&g_auto_epoch, __ATOMIC_RELAXED))) return 0;
  const int found = select_innermost();
  /* Found: this thread is done for the session; else one try used. */
  tt->data_tries = found ? kProducerTries : tt->data_tries + 1;
  return found;
}

/* The looks a thread gets at its hand-overs per session, apart from those at its gathers. */
static int handed_tries_left(ThreadTrace* tt, unsigned epoch) {
  if (tt->handed_epoch != epoch) tt->handed_epoch = epoch, tt->handed_tries = 0;
  return tt->handed_tries < kProducerTries;
}

int select_handed(void) {
  ThreadTrace* tt = thread_trace();
  if (tt == NULL) return 0;
  const unsigned epoch = __atomic_load_n(&g_auto_epoch, __ATOMIC_RELAXED);
  if (!handed_tries_left(tt, epoch)) return 0;
  const int found = select_innermost();
  tt->handed_tries = found ? kProducerTries : tt->handed_tries + 1;
  if (found) tt->handed_found = epoch; /* a gather in what it calls still selects that */
  return found;
}

int producer_may_select(int child) {
  if (!g_auto || g_worker || !Py_IsInitialized() || GNNPROF_IS_FINALIZING()) return 0;
  const unsigned epoch = __atomic_load_n(&g_auto_epoch, __ATOMIC_RELAXED);
  if (!child && __atomic_load_n(&g_loop_epoch, __ATOMIC_RELAXED) != epoch) return 0; /* no loop found yet */
  ThreadTrace* tt = t_trace;
  if (tt == NULL) return 1;
  if (tt->depth > 0 || tt->loop_epoch == epoch || tt->deciding) return 0; /* under traced code, or the loop's */
  return handed_tries_left(tt, epoch);
}

int tracer_producer_may_select(int child) { return producer_may_select(child); }

int tracer_on_submitted(PyObject* code) {
  if (!g_auto || g_worker || !PyCode_Check(code)) return 0;
  const unsigned epoch = __atomic_load_n(&g_auto_epoch, __ATOMIC_RELAXED);
  if (__atomic_load_n(&g_loop_epoch, __ATOMIC_RELAXED) != epoch) return 0; /* its later submits */
  PyCodeObject* co = (PyCodeObject*)code;
  CodeInfo* ci = info_of(co);
  if ((ci != NULL && (ci->roles & ROLE_PIPELINE)) || !user_file(co->co_filename) ||
      PyUnicode_CompareWithASCIIString(co->co_name, "<module>") == 0)
    return 0;
  if (tracer_select(code, ROLE_PIPELINE) != 0) {
    PyErr_Clear();
    return 0;
  }
  ++g_stats.producers;
  return 1;
}

/* The directory (or module file) of the third-party package that file f belongs to, as a
 * prefix of f: ".../site-packages/lightning/". Its length, or 0. */
static size_t package_prefix(const char* f) {
  const char* name = package_name(f);
  if (name == NULL) return 0;
  const char* slash = strchr(name, '/');
  return slash != NULL ? (size_t)(slash - f) + 1 : strlen(f);
}

/* The packages whose loops run the loop of this session (callback_walk's frameworks). */
enum { kLoopPackages = 4 };
static char* g_loop_packages[kLoopPackages];

static void note_loop_package(PyCodeObject* co) {
  const char* f = PyUnicode_Check(co->co_filename) ? PyUnicode_AsUTF8(co->co_filename) : NULL;
  if (f == NULL) {
    PyErr_Clear();
    return;
  }
  const size_t n = package_prefix(f);
  if (n == 0) return;
  for (int i = 0; i < kLoopPackages; ++i) {
    if (g_loop_packages[i] != NULL && strlen(g_loop_packages[i]) == n && strncmp(g_loop_packages[i], f, n) == 0) return;
    if (g_loop_packages[i] == NULL) {
      g_loop_packages[i] = strndup(f, n);
      return;
    }
  }
}

static int loop_package_file(PyObject* filename) {
  const char* f = PyUnicode_Check(filename) ? PyUnicode_AsUTF8(filename) : NULL;
  if (f == NULL) {
    PyErr_Clear();
    return 0;
  }
  for (int i = 0; i < kLoopPackages && g_loop_packages[i] != NULL; ++i)
    if (strncmp(f, g_loop_packages[i], strlen(g_loop_packages[i])) == 0) return 1;
  return 0;
}

/* Frames walked out from the optimizer step looking for a framework's loop. */
enum { kFrameworkWalk = 128 };

/* A framework running the loop: walking out from the step (innermost), a frame of a third-party
 * package inside a loop of its own (Lightning's fit loop, skorch's batch loop), other than the
 * package frame right below the step (an optimizer's own loop over its parameter groups), then
 * a user frame not inside a loop: the one whose line called the framework (`fit`). A user frame
 * inside a loop is the user's own loop (one a library may call, as a hyperparameter search's
 * trials; one that steps a DeepSpeed engine, whose loop over parameter groups is a frame out):
 * no framework's (`for fold in folds: trainer.fit()` too, then traced as a plain loop). That frame (a new reference) or NULL; *first: the first
 * user frame met on the way (a new reference or NULL; the user's training_step when it steps
 * the optimizer itself). The looping packages are noted for callback_walk. */
static PyFrameObject* framework_caller(PyFrameObject* fr, PyFrameObject** first) {
  *first = NULL;
  Py_XINCREF(fr);
  int met = 0, looping = 0;
  PyFrameObject* fit = NULL;
  for (int n = 0; fr != NULL && fit == NULL && n < kFrameworkWalk; ++n, fr = caller_of(fr)) {
    PyCodeObject* co = PyFrame_GetCode(fr);
    void* x = extra_of(co);
    if (x == NULL) x = auto_mark(co);
    if (x == FRAMEWORK) {
      /* the first package frame right below the step may loop over parameter groups */
      if ((met++ > 0 || *first != NULL) && in_loop(fr, co)) {
        looping = 1;
        note_loop_package(co);
      }
    } else if (user_file(co->co_filename) && !is_library(x)) {
      /* A user frame inside a loop is the user's own loop: before a package's loop (a search
       * library runs trials of it), or after one that is an optimizer's (DeepSpeed's loop over
       * its parameter groups, one frame out). Then no framework runs it. */
      const int own = in_loop(fr, co);
      if (own) {
        Py_DECREF(co);
        break;
      }
      if (looping) fit = (PyFrameObject*)Py_NewRef(fr);
      else if (*first == NULL) *first = (PyFrameObject*)Py_NewRef(fr);
    }
    Py_DECREF(co);
  }
  Py_XDECREF(fr);
  PyErr_Clear();
  if (fit == NULL) Py_CLEAR(*first);
  return fit;
}

int select_loop(PyFrameObject** adopt) {
  *adopt = NULL;
  PyFrameObject* innermost = PyEval_GetFrame();
  const unsigned epoch = __atomic_load_n(&g_auto_epoch, __ATOMIC_RELAXED);
  ThreadTrace* tt = thread_trace();
  PyFrameObject* first = NULL;
  PyFrameObject* fit = framework_caller(innermost, &first);
  if (fit != NULL) {
    /* The framework's loop: the user frame that called it is the loop (adopted by the caller
     * at once: it stays on that line until training ends); a user frame between (a
     * training_step stepping the optimizer itself) is the framework's callback. */
    PyCodeObject* co = PyFrame_GetCode(fit);
    const int found = tracer_select((PyObject*)co, ROLE_LOOP) == 0;
    Py_DECREF(co);
    if (first != NULL) {
      co = PyFrame_GetCode(first);
      (void)tracer_select((PyObject*)co, ROLE_CALLBACK);
      Py_DECREF(co);
      Py_DECREF(first);
    }
    PyErr_Clear();
    if (!found) {
      Py_DECREF(fit);
      return 0;
    }
    __atomic_store_n(&g_loop_epoch, epoch, __ATOMIC_RELAXED);
    __atomic_store_n(&g_framework_epoch, epoch, __ATOMIC_RELAXED);
    if (tt != NULL) tt->loop_epoch = epoch;
    *adopt = fit;
    return 1;
  }

  PyFrameObject* fr = innermost;
  Py_XINCREF(fr);
  /* The first user frame that calls the step; if it is not inside a loop itself (a train_step
   * helper), also the first user frame above it that is (the loop that calls the helper). */
  int found = 0, looping = 0, above = 0;
  for (; fr != NULL && !looping && above < kLoopWalk; fr = caller_of(fr)) {
    PyCodeObject* co = PyFrame_GetCode(fr);
    if (user_file(co->co_filename)) {
      if (!found) {
        found = tracer_select((PyObject*)co, ROLE_LOOP) == 0;
        looping = found && in_loop(fr, co);
        if (looping) note_loop_lines(fr, co);
        /* The loop steps the optimizer itself: adopted at once, so that the step's own line
         * is current from its first call (the classifier tells two optimizers' steps apart by
         * it). A helper's frame is left to its next line: the loop above must come first. */
        if (looping) *adopt = (PyFrameObject*)Py_NewRef(fr);
      } else {
        ++above;
        if (in_loop(fr, co)) {
          (void)tracer_select((PyObject*)co, ROLE_LOOP);
          note_loop_lines(fr, co);
          looping = 1;
        }
      }
    }
    Py_DECREF(co);
  }
  Py_XDECREF(fr);
  PyErr_Clear();
  if (found) {
    __atomic_store_n(&g_loop_epoch, epoch, __ATOMIC_RELAXED);
    if (tt != NULL) tt->loop_epoch = epoch; /* the loop's thread: never a producer's */
  }
  return found;
}

void adopt_loop(PyFrameObject* fr) {
  ThreadTrace* tt = thread_trace();
  if (tt == NULL || tt->depth != 0) return; /* only under nothing traced: the stack stays in frame order */
  PyCodeObject* co = PyFrame_GetCode(fr);
  CodeInfo* ci = info_of(co);
  if (ci != NULL) adopt_running(tt, fr, co, ci);
  Py_DECREF(co);
  PyErr_Clear();
}

void forget_parent(int worker) {
  ThreadTrace* tt = t_trace;
  if (tt != NULL) { /* the frames the parent was tracing never return here */
    tt->depth = 0;
    memset(tt->suspended, 0, sizeof(tt->suspended));
    await_forget(tt); /* the parent's stage: this process's core has its own */
  }
  if (g_core_bound) (void)g_core.set_line(0);
  memset(&g_stats, 0, sizeof(g_stats)); /* the child's own counts, for its profile's note */
  g_worker = worker;
  if (!worker) tracer_new_session(); /* its own loop, whatever the parent had found */
  __atomic_store_n(&g_loop_epoch, 0, __ATOMIC_RELAXED); /* the parent's loop; no producers here */
  __atomic_store_n(&g_framework_epoch, 0, __ATOMIC_RELAXED);
}

/* ---- statement maps ---- */

void prepare(ThreadTrace* tt, CodeInfo* ci, PyCodeObject* co) {
  ci->state = -1;
  if (g_preparer == NULL) return;
  PyObject* r = call_helper(&tt->deciding, g_preparer, (PyObject*)co);
  if (r == NULL || !PyTuple_Check(r) || PyTuple_GET_SIZE(r) < 3) {
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
  if (PyTuple_GET_SIZE(r) > 3 && PyList_Check(PyTuple_GET_ITEM(r, 3))) {
    PyObject* exits = PyTuple_GET_ITEM(r, 3);
    const Py_ssize_t m = PyList_GET_SIZE(exits);
    int32_t* x = m > 0 ? (int32_t*)calloc((size_t)m, sizeof(int32_t)) : NULL;
    if (x != NULL) {
      for (Py_ssize_t i = 0; i < m; ++i) x[i] = (int32_t)PyLong_AsLong(PyList_GET_ITEM(exits, i));
      PyErr_Clear();
      ci->exits = x;
      ci->n_exits = (int)m;
    }
  }
  ci->state = 1;
  Py_DECREF(r);
}

int with_exit(const CodeInfo* ci, int lasti) {
  int lo = 0, hi = ci->n_exits - 1;
  while (lo <= hi) {
    const int mid = (lo + hi) / 2;
    if (ci->exits[mid] == lasti) return 1;
    if (ci->exits[mid] < lasti) lo = mid + 1;
    else hi = mid - 1;
  }
  return 0;
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

/* Line sites whose callee the core has (under the GIL): each is passed once. */
enum { kNotedSites = 1024 };
static uint32_t g_noted_sites[kNotedSites];

void note_callee(ThreadTrace* tt, PyCodeObject* co) {
  if (tt == NULL) return; /* a thread that has traced nothing */
  const Entry* e = top_entry(tt);
  if (e == NULL || e->site == 0 || g_core.line_callee == NULL) return;
  const uint32_t site = e->site & ~GNNPROF_DATA_LINE;
  uint32_t i = (site * 2654435761u) & (kNotedSites - 1);
  for (int n = 0; g_noted_sites[i] != site; i = (i + 1) & (kNotedSites - 1)) {
    if (g_noted_sites[i] == 0) break;
    if (++n == kNotedSites) return; /* full: the lines noted so far keep theirs */
  }
  if (g_noted_sites[i] == site) return;
  g_noted_sites[i] = site;
  /* A frame may start with an exception pending (thrown into a generator): kept as it is. */
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);
  const char* file = PyUnicode_AsUTF8(co->co_filename);
  const char* fn = file != NULL ? PyUnicode_AsUTF8(CODE_QUALNAME(co)) : NULL;
  if (fn != NULL) g_core.line_callee(site, file, fn);
  PyErr_Clear();
  PyErr_Restore(et, ev, tb);
}

int multi_line(const CodeInfo* ci, int line) {
  const int off = line - ci->first;
  if (ci->state != 1 || off < 0 || off >= ci->n) return 0;
  return ci->stmt[off] != line || (off + 1 < ci->n && ci->stmt[off + 1] == line);
}

/* ---- the stack of traced frames ---- */

Entry* push(ThreadTrace* tt, const void* f, CodeInfo* ci, int adopted) {
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
  e->start = -1;
  e->adopted = (uint8_t)adopted;
  e->began = (uint8_t)adopted;
  e->paused_below = -1;
  if (!adopted && ci->loop_level < ci->loop_levels && !ci->loop_out && g_core.torch_loop != NULL) {
    /* A new call of the training loop's function (`train(epoch)` per epoch): it begins outside
     * its loop statement, whose first line then enters it again. */
    ci->loop_out = 1;
    (void)g_core.torch_loop(0);
  }
  for (int i = tt->depth - 2; i >= 0; --i) {
    Entry* o = &tt->stack[i];
    if (o->ci != ci) continue;
    if (o->site != 0) { /* recursion: the outer call's statement stops while this frame runs */
      o->paused_site = o->site;
      end_statement(tt, o, g_core.now());
      e->paused_below = i;
    }
    break;
  }
  return e;
}

Entry* unpause(ThreadTrace* tt, Entry* e) {
  if (e->paused_below < 0 || e->paused_below >= tt->depth - 1) return NULL;
  Entry* o = &tt->stack[e->paused_below];
  e->paused_below = -1;
  if (o->paused_site == 0) return NULL;
  o->site = o->paused_site;
  o->paused_site = 0;
  o->hit = 0;
  return o;
}

void end_statement(ThreadTrace* tt, Entry* e, uint64_t now) {
  if (e->site != 0) {
    const int hit = e->hit | (e->began ? GNNPROF_LINE_BEGAN : 0);
    if (g_core.line_event_nested != NULL)
      g_core.line_event_nested(e->site, e->t0, now, hit, e->nested, e > tt->stack ? (e - 1)->site : 0);
    else
      g_core.line_event(e->site, e->t0, now, hit);
    e->began = 0;
  }
  e->site = 0;
  e->nested = 0;
}

void charge_caller(ThreadTrace* tt, const Entry* e, uint64_t now) {
  if (e->entered == 0 || e <= tt->stack || e >= tt->stack + kMaxDepth) return;
  Entry* c = &tt->stack[e - tt->stack - 1];
  if (c->site == 0) return;
  const uint64_t from = e->entered > c->t0 ? e->entered : c->t0; /* a paused caller went on later */
  if (now > from) c->nested += now - from;
}

/* The site to make current for e's statement: a data pipeline's (a batch generator's, a
 * helper it calls) carries GNNPROF_DATA_LINE, so that a data phase open goes on across it. */
static uint32_t current_site(const Entry* e, uint32_t site) {
  const int roles = e->ci != NULL ? e->ci->roles : 0;
  return site != 0 && (roles & ROLE_PIPELINE) != 0 && (roles & ROLE_LOOP) == 0 ? site | GNNPROF_DATA_LINE : site;
}

uint32_t site_below(ThreadTrace* tt) {
  const int d = tt->depth < kMaxDepth ? tt->depth : kMaxDepth;
  return d >= 2 ? current_site(&tt->stack[d - 2], tt->stack[d - 2].site) : tt->await_site;
}

Entry* entry_of(ThreadTrace* tt, const void* f) {
  if (tt->depth > kMaxDepth) return NULL;
  for (int i = tt->depth - 1; i >= 0; --i) {
    if (tt->stack[i].f != f) continue;
    if (i != tt->depth - 1) {
      const uint64_t now = g_core.now();
      while (tt->depth - 1 > i) {
        Entry* gone = &tt->stack[tt->depth - 1];
        Entry* o = unpause(tt, gone);
        end_statement(tt, gone, now);
        --tt->depth;
        if (o != NULL) o->t0 = now;
        charge_caller(tt, gone, now);
      }
    }
    return &tt->stack[i];
  }
  return NULL;
}

Suspended* find_suspended(ThreadTrace* tt, const void* f, const void* code) {
  for (int i = 0; i < kMaxSuspended; ++i)
    if (tt->suspended[i].f == f && (code == NULL || tt->suspended[i].code == code)) return &tt->suspended[i];
  return NULL;
}

void forget_suspended(ThreadTrace* tt, const void* f) {
  for (int i = 0; i < kMaxSuspended; ++i)
    if (tt->suspended[i].f == f) tt->suspended[i].f = NULL;
}

/* Whether a frame of co that yielded `value` waits at an await: a coroutine always; an async
 * generator unless it yields an item to its consumer (CPython wraps those, `yield x`, in an
 * async_generator_wrapped_value, 3.10 to 3.13). */
static int awaits(PyCodeObject* co, PyObject* value) {
  if ((co->co_flags & CO_COROUTINE) != 0) return 1;
  if ((co->co_flags & CO_ASYNC_GENERATOR) == 0 || value == NULL) return 0;
  return strcmp(Py_TYPE(value)->tp_name, "async_generator_wrapped_value") != 0;
}

void suspend(ThreadTrace* tt, const void* f, PyCodeObject* co, const Entry* e, uint64_t now, PyObject* value) {
  const void* code = co;
  Suspended* s = find_suspended(tt, f, NULL);
  if (s == NULL) {
    for (int i = 0; i < kMaxSuspended && s == NULL; ++i)
      if (tt->suspended[i].f == NULL) s = &tt->suspended[i];
    if (s == NULL) s = &tt->suspended[tt->next_victim++ % kMaxSuspended];
  }
  s->f = f;
  s->code = code;
  s->site = e->site;
  s->stmt = e->stmt;
  s->lasti = e->lasti;
  s->start = e->start;
  s->at = now;
  s->awaiting = awaits(co, value);
}

int resume(ThreadTrace* tt, const void* f, const void* code, Entry* e) {
  Suspended* s = find_suspended(tt, f, code);
  if (s == NULL) return 0;
  e->site = s->site;
  e->stmt = s->stmt;
  e->lasti = s->lasti;
  e->start = s->start;
  e->hit = 0;
  e->t0 = g_core.set_line(current_site(e, e->site));
  e->entered = e->t0;
  /* its await's time, the caller's (a coroutine that awaited this one) nested time too */
  if (s->awaiting && s->at != 0 && s->at < e->t0) e->t0 = e->entered = s->at;
  s->f = NULL;
  return 1;
}

/* ---- the training loop's coroutine suspended at an await ---- */

static uint64_t clock_ns(clockid_t clock) {
  struct timespec ts;
  if (clock_gettime(clock, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int loop_awaits(const ThreadTrace* tt, const Entry* e, PyCodeObject* co) {
  return (co->co_flags & CO_COROUTINE) != 0 && tt->depth == 1 && e->ci != NULL && (e->ci->roles & ROLE_LOOP) != 0 &&
         e->site != 0;
}

void await_begin(ThreadTrace* tt, const void* f, const Entry* e) {
  static uint32_t stage;
  if (stage == 0) stage = g_core.stage_site(GNNPROF_AWAIT_STAGE, "data");
  const uint32_t site = current_site(e, e->site);
  /* The same line again first: the torch observer ends the phases it ends at a line change. */
  (void)g_core.set_line(site);
  if (tt->await_f != NULL) await_end(tt, NULL); /* one left open: its coroutine never resumed here */
  tt->await_f = f;
  tt->await_site = site;
  /* With the torch observer, its scope (as gnnprof.stage's): its phases, open below or begun
   * by the ops the event loop runs meanwhile, nest around or in it instead of ending it. */
  tt->await_scope = g_core.torch_user_scope != NULL && g_core.torch_user_scope(GNNPROF_AWAIT_STAGE, "data", 1) != 0;
  tt->await_open = tt->await_scope || (stage != 0 && g_core.stage_begin(stage) != 0);
  tt->await_at = tt->await_cpu = 0;
  if (!tt->await_open) return;
  if (tt->await_draw == 0) tt->await_draw = 0x9e3779b9u ^ (uint32_t)(uintptr_t)tt;
  tt->await_draw ^= tt->await_draw << 13; /* xorshift32 */
  tt->await_draw ^= tt->await_draw >> 17;
  tt->await_draw ^= tt->await_draw << 5;
  if (tt->await_n++ >= 16 && (tt->await_draw & 7) != 0) return;
  tt->await_at = clock_ns(CLOCK_MONOTONIC); /* (g_core.now() counts ticks) */
  tt->await_cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static void await_stage_end(const ThreadTrace* tt) {
  if (!tt->await_scope || g_core.torch_user_scope == NULL || g_core.torch_user_scope(GNNPROF_AWAIT_STAGE, "data", 0) == 0)
    g_core.stage_end();
}

void await_end(ThreadTrace* tt, const void* f) {
  static uint32_t off_cpu;
  if (tt->await_f == NULL || (f != NULL && f != tt->await_f)) return;
  if (tt->await_open && tt->await_at != 0 && tt->await_cpu != 0) {
    /* (the clocks first: a reschedule at their syscall is the stage's) */
    const uint64_t wall = clock_ns(CLOCK_MONOTONIC) - tt->await_at, cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - tt->await_cpu;
    await_stage_end(tt);
    if (off_cpu == 0) off_cpu = g_core.counter_site(GNNPROF_OFF_CPU_COUNTER_PREFIX GNNPROF_AWAIT_STAGE);
    if (off_cpu != 0) g_core.counter(off_cpu, wall > cpu ? (double)(wall - cpu) : 0.0);
  } else if (tt->await_open) {
    await_stage_end(tt);
  }
  await_forget(tt);
}

void await_forget(ThreadTrace* tt) {
  tt->await_f = NULL;
  tt->await_site = 0;
  tt->await_open = tt->await_scope = 0;
}

void resume_unsaved(ThreadTrace* tt, Entry* e, PyCodeObject* co, int line, int lasti) {
  if (line <= 0) return;
  on_line_of(tt, e, co, line, lasti);
  e->hit = 0;
}

static void maybe_poll(ThreadTrace* tt) {
  if (++tt->since_poll < kPollEvery) return;
  tt->since_poll = 0;
  ++g_stats.polls;
  (void)g_core.poll(0);
}

void on_line_of(ThreadTrace* tt, Entry* e, PyCodeObject* co, int line, int lasti) {
  CodeInfo* ci = e->ci;
  if (ci->state == 0) prepare(tt, ci, co);
  int32_t stmt;
  uint32_t site;
  lookup(ci, line, &stmt, &site);
  /* A statement spanning several lines is one execution until control goes back to where it
   * began (a loop around it). A jump back inside it (3.12+ runs a comprehension in its
   * statement's frame, PEP 709) goes on with the same execution. */
  if (stmt == e->stmt && lasti >= 0 && lasti > e->start) {
    e->lasti = lasti;
    return;
  }
  if (ci->loop_level < ci->loop_levels && g_core.torch_loop != NULL) {
    /* The training loop's frame leaving its loop statement, or coming back: an epoch's end
     * (evaluation, the next epoch's start) is no iteration (OpClassifier::on_loop). A step
     * between leaving and coming back: that loop was inside the training loop's pass (a
     * discriminator stepped in a loop of its own); the next one out is taken from then on. */
    const int l = ci->loop_level;
    const int out = stmt < ci->loop_lo[l] || stmt > ci->loop_hi[l];
    if (out != ci->loop_out) {
      ci->loop_out = out;
      if (g_core.torch_loop(!out) == 0 && !out) ++ci->loop_level;
    }
  }
  const uint64_t now = g_core.set_line(current_site(e, site));
  /* The training loop's own statement, for the torch observer: a helper's ops run under it. */
  if (ci->loop_levels > 0 && g_core.set_loop_line != NULL) g_core.set_loop_line(site);
  end_statement(tt, e, now);
  e->site = site;
  e->stmt = stmt;
  e->t0 = now;
  if (e->entered == 0) e->entered = now;
  /* A `with` block leaving: its __exit__'s time is the with line's, but not another hit. */
  e->hit = ci->n_exits > 0 && lasti >= 0 && with_exit(ci, lasti) ? 0 : 1;
  e->lasti = lasti;
  e->start = lasti;
  ++g_stats.line_events;
  maybe_poll(tt);
}

void tracer_close_thread(void) {
  ThreadTrace* tt = t_trace;
  if (tt == NULL || !g_core_bound) return;
  await_end(tt, NULL);
  const uint64_t now = g_core.set_line(0);
  const int d = tt->depth < kMaxDepth ? tt->depth : kMaxDepth;
  for (int i = d - 1; i >= 0; --i) end_statement(tt, &tt->stack[i], now);
  tt->depth = 0;
  /* a coroutine resumed after tracing resumes would take the time between for its await's */
  memset(tt->suspended, 0, sizeof(tt->suspended));
}

CodeInfo* select_code(PyObject* code, int roles, void** was) {
  if (!PyCode_Check(code)) {
    PyErr_SetString(PyExc_TypeError, "gnnprof: expected a code object");
    return NULL;
  }
  PyCodeObject* co = (PyCodeObject*)code;
  void* x = extra_of(co);
  *was = x;
  if (x != NULL && !is_mark(x)) {
    ((CodeInfo*)x)->roles |= roles;
    return (CodeInfo*)x;
  }
  CodeInfo* ci = codeinfo_new(co, roles);
  if (ci == NULL) {
    PyErr_NoMemory();
    return NULL;
  }
  set_extra(co, ci);
  ++g_stats.selected;
  return ci;
}

int tracer_resume(void) { return g_all != NULL || g_decider != NULL ? tracer_install() : 0; }

void tracer_new_session(void) { __atomic_add_fetch(&g_auto_epoch, 1, __ATOMIC_RELAXED); }

/* ---- public settings and views ---- */

void tracer_set_auto(int on) { g_auto = on; }

void tracer_feeds_loop_thread(void) { t_feeds_loop = 1; }

int tracer_loop_thread(void) {
  const unsigned epoch = __atomic_load_n(&g_auto_epoch, __ATOMIC_RELAXED);
  /* Not found in this session (a notebook's next one looks anew): not yet, or not known. */
  if (epoch == 0 || __atomic_load_n(&g_loop_epoch, __ATOMIC_RELAXED) != epoch) return g_auto ? -2 : -1;
  return t_trace != NULL && t_trace->loop_epoch == epoch;
}

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

int tracer_set_frameworks(PyObject* fragments, PyObject* neutral) {
  return set_strings(fragments, &g_frameworks, &g_n_frameworks) != 0 ? -1 : set_strings(neutral, &g_neutral, &g_n_neutral);
}

PyObject* tracer_selected(void) {
  PyObject* out = PyList_New(0);
  if (out == NULL) return NULL;
  for (CodeInfo* ci = g_all; ci != NULL; ci = ci->next_selected) {
    /* 3.10: no qualified name here (the Python side finds it from the first line) */
    PyObject* t = Py_BuildValue("(OOOii)", ci->filename, ci->name, PY_VERSION_HEX >= 0x030B0000 ? ci->qualname : Py_None,
                                ci->roles, ci->first);
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
  /* the packages whose loops run the loop (callback_walk's), for a framework's untraced callback */
  PyObject* packages = PyList_New(0);
  for (int i = 0; packages != NULL && i < kLoopPackages && g_loop_packages[i] != NULL; ++i) {
    PyObject* name = PyUnicode_DecodeFSDefault(g_loop_packages[i]);
    if (name == NULL || PyList_Append(packages, name) != 0) PyErr_Clear();
    Py_XDECREF(name);
  }
  if (packages == NULL) return NULL;
  return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:i,s:i,s:i,s:N}", "selected", g_stats.selected, "line_events",
                       g_stats.line_events, "adopted", g_stats.adopted, "polls", g_stats.polls, "foreign_tracer",
                       g_stats.foreign, "prepare_failed", g_stats.prepare_failed, "too_deep", g_stats.deep,
                       "producers", g_stats.producers, "callbacks", g_stats.callbacks, "retaken", g_stats.retaken, "installed", g_installed,
                       "auto", g_auto, "framework", framework_loop(), "loop_packages", packages);
}

/* ---- zero-code prefetch of a batch generator ---- */

#if PY_VERSION_HEX >= 0x030B0000 /* co_qualname */
static PyObject* g_gen_targets = NULL; /* [(co_filename, co_qualname)], or NULL: none */
static PyObject* g_gen_wrap = NULL;
static Py_ssize_t g_gen_extra = -1; /* a code extra slot of its own: k_gen_target or k_gen_other */
static char k_gen_target, k_gen_other;

int gen_targets_set(PyObject* targets, PyObject* wrap) {
  if (!PyList_Check(targets) || !PyCallable_Check(wrap)) {
    PyErr_SetString(PyExc_TypeError, "prefetch_generators(targets: list, wrap: callable)");
    return -1;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(targets); ++i) {
    PyObject* t = PyList_GET_ITEM(targets, i);
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(t, 0)) ||
        !PyUnicode_Check(PyTuple_GET_ITEM(t, 1))) {
      PyErr_SetString(PyExc_TypeError, "prefetch_generators: each target is (co_filename, co_qualname)");
      return -1;
    }
  }
  if (g_gen_extra < 0 && (g_gen_extra = GNNPROF_REQUEST_CODE_EXTRA(NULL)) < 0) return -1;
  Py_INCREF(targets);
  Py_INCREF(wrap);
  Py_XSETREF(g_gen_targets, targets);
  Py_XSETREF(g_gen_wrap, wrap);
  return 0;
}

int gen_targets_any(void) { return g_gen_targets != NULL; }

int gen_target(PyCodeObject* co) {
  if (g_gen_targets == NULL || (co->co_flags & CO_GENERATOR) == 0) return 0;
  void* x = NULL;
  if (GNNPROF_CODE_GET_EXTRA((PyObject*)co, g_gen_extra, &x) != 0) {
    PyErr_Clear();
    return 0;
  }
  if (x != NULL) return x == &k_gen_target;
  int hit = 0;
  for (Py_ssize_t i = 0; !hit && i < PyList_GET_SIZE(g_gen_targets); ++i) {
    PyObject* t = PyList_GET_ITEM(g_gen_targets, i);
    hit = PyUnicode_Compare(co->co_filename, PyTuple_GET_ITEM(t, 0)) == 0 &&
          PyUnicode_Compare(co->co_qualname, PyTuple_GET_ITEM(t, 1)) == 0;
  }
  PyErr_Clear();
  if (GNNPROF_CODE_SET_EXTRA((PyObject*)co, g_gen_extra, hit ? &k_gen_target : &k_gen_other) != 0) PyErr_Clear();
  return hit;
}

PyObject* gen_wrap(PyObject* gen) {
  if (gen == NULL || !PyGen_Check(gen)) return gen;
  PyObject* wrapped = PyObject_CallOneArg(g_gen_wrap, gen);
  if (wrapped == NULL) {
    PyErr_Clear();
    return gen;
  }
  Py_DECREF(gen);
  return wrapped;
}
#endif
