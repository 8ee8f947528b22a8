/* module.c — gnnprof._native: the Python package's bridge to the gnnprof core.
 *
 * bind() finds the core's C ABI in the process (the preload library under `gnnprof run`, so
 * the package joins that session) or loads the preload library itself (a session of its own).
 * Every other function is a thin call through that table; before bind() succeeds they do
 * nothing. Stage is a C type so that `with gnnprof.stage("x"):` costs two C calls. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core_abi.h"
#include "tracer.h"

#ifndef GNNPROF_PY_LINES
#define GNNPROF_PY_LINES 1 /* 0: built with tracer_none.c */
#endif

CoreAbi g_core;
int g_core_bound = 0;

static int preload_poll_fallback(int allow_flush) { (void)allow_flush; return 0; }

/* ---- bind ---- */

static int resolve(void* h, CoreAbi* t, const char** missing) {
#define GNNPROF_SYM(field, name)                    \
  do {                                              \
    *(void**)(&t->field) = dlsym(h, name);          \
    if (t->field == NULL) {                         \
      *missing = name;                              \
      return -1;                                    \
    }                                               \
  } while (0)
  GNNPROF_SYM(start, "gnnprof_start");
  GNNPROF_SYM(stop, "gnnprof_stop");
  GNNPROF_SYM(is_running, "gnnprof_is_running");
  GNNPROF_SYM(flush, "gnnprof_flush");
  GNNPROF_SYM(stage_site, "gnnprof_stage_site");
  GNNPROF_SYM(counter_site, "gnnprof_counter_site");
  GNNPROF_SYM(stage_begin, "gnnprof_stage_begin");
  GNNPROF_SYM(stage_end, "gnnprof_stage_end");
  GNNPROF_SYM(step, "gnnprof_step");
  GNNPROF_SYM(step_end, "gnnprof_step_end");
  GNNPROF_SYM(transfer, "gnnprof_transfer");
  GNNPROF_SYM(materialize, "gnnprof_materialize");
  GNNPROF_SYM(counter, "gnnprof_counter");
  GNNPROF_SYM(set_thread_name, "gnnprof_set_thread_name");
  GNNPROF_SYM(note_collector, "gnnprof_note_collector");
  GNNPROF_SYM(line_site, "gnnprof_line_site");
  GNNPROF_SYM(now, "gnnprof_now");
  GNNPROF_SYM(set_line, "gnnprof_set_line");
  GNNPROF_SYM(line_event, "gnnprof_line_event");
  GNNPROF_SYM(set_optimizer_step_hook, "gnnprof_set_optimizer_step_hook");
  GNNPROF_SYM(config_count_or, "gnnprof_config_count_or");
  GNNPROF_SYM(config_string, "gnnprof_config_string");
  GNNPROF_SYM(config_bool, "gnnprof_config_bool");
#undef GNNPROF_SYM
  /* The preload library's poll also starts gnnprof's threads once the host has its own; a
   * core linked some other way has only the core's. */
  *(void**)(&t->poll) = dlsym(h, "gnnprof_preload_poll");
  if (t->poll == NULL) *(void**)(&t->poll) = dlsym(h, "gnnprof_poll");
  if (t->poll == NULL) t->poll = preload_poll_fallback;
  *(void**)(&t->attach) = dlsym(h, "gnnprof_preload_attach");
  *(void**)(&t->start_worker) = dlsym(h, "gnnprof_preload_start_worker");
  *(void**)(&t->start_fork_child) = dlsym(h, "gnnprof_preload_start_fork_child");
  *(void**)(&t->discard) = dlsym(h, "gnnprof_discard");
  *(void**)(&t->set_rank) = dlsym(h, "gnnprof_set_rank");
  *(void**)(&t->set_loader) = dlsym(h, "gnnprof_set_loader");
  *(void**)(&t->set_feeds) = dlsym(h, "gnnprof_set_feeds");
  *(void**)(&t->set_data_hook) = dlsym(h, "gnnprof_set_data_hook");
  *(void**)(&t->set_loop_extent) = dlsym(h, "gnnprof_set_loop_extent");
  *(void**)(&t->set_loop_line) = dlsym(h, "gnnprof_set_loop_line");
  *(void**)(&t->line_callee) = dlsym(h, "gnnprof_line_callee");
  *(void**)(&t->line_event_nested) = dlsym(h, "gnnprof_line_event_nested");
  *(void**)(&t->site_register) = dlsym(h, "gnnprof_site_register");
  *(void**)(&t->materialize_at) = dlsym(h, "gnnprof_materialize_at");
  *(void**)(&t->step_end_flags) = dlsym(h, "gnnprof_step_end_flags");
  if (t->site_register == NULL || t->materialize_at == NULL) t->site_register = NULL; /* both or neither */
  *(void**)(&t->close_torch_thread) = dlsym(h, "gnnprof_preload_close_torch_thread");
  *(void**)(&t->torch_state) = dlsym(h, "gnnprof_preload_torch_state");
  *(void**)(&t->torch_module) = dlsym(h, "gnnprof_preload_torch_module");
  *(void**)(&t->torch_backward) = dlsym(h, "gnnprof_preload_torch_backward");
  *(void**)(&t->torch_grad_clip) = dlsym(h, "gnnprof_preload_torch_grad_clip");
  *(void**)(&t->torch_user_scope) = dlsym(h, "gnnprof_preload_torch_user_scope");
  *(void**)(&t->torch_user_step) = dlsym(h, "gnnprof_preload_torch_user_step");
  *(void**)(&t->torch_observing) = dlsym(h, "gnnprof_preload_torch_observing");
  *(void**)(&t->torch_loop) = dlsym(h, "gnnprof_preload_torch_loop");
  *(void**)(&t->set_loader_step_hook) = dlsym(h, "gnnprof_set_loader_step_hook");
  *(void**)(&t->trial_new) = dlsym(h, "gnnprof_trial_new");
  *(void**)(&t->trial_iteration) = dlsym(h, "gnnprof_trial_iteration");
  *(void**)(&t->trial_restart) = dlsym(h, "gnnprof_trial_restart");
  *(void**)(&t->trial_chosen) = dlsym(h, "gnnprof_trial_chosen");
  *(void**)(&t->trial_median_ns) = dlsym(h, "gnnprof_trial_median_ns");
  *(void**)(&t->trial_measured) = dlsym(h, "gnnprof_trial_measured");
  *(void**)(&t->trial_free) = dlsym(h, "gnnprof_trial_free");
  if (!t->trial_new || !t->trial_iteration || !t->trial_restart || !t->trial_chosen || !t->trial_median_ns ||
      !t->trial_measured || !t->trial_free)
    t->trial_new = NULL; /* all or none */
  return 0;
}

/* bind(preload_path) -> (ok, how): "process" when the process already has the core (gnnprof
 * run, or a program linked with it), "loaded" when this call loaded the preload library, or
 * the reason it is unavailable. */
static const char* g_how = "process"; /* how the first bind found the core */

static PyObject* py_bind(PyObject* self, PyObject* args) {
  (void)self;
  const char* path = NULL;
  if (!PyArg_ParseTuple(args, "z", &path)) return NULL;
  if (g_core_bound) return Py_BuildValue("(Os)", Py_True, g_how); /* a reload of the package */
  CoreAbi t;
  memset(&t, 0, sizeof(t));
  const char* missing = NULL;
  const char* how = "process";
  if (dlsym(RTLD_DEFAULT, "gnnprof_set_line") == NULL || resolve(RTLD_DEFAULT, &t, &missing) != 0) {
    if (path == NULL || path[0] == '\0')
      return Py_BuildValue("(Os)", Py_False, "the gnnprof preload library was not found next to the package");
    void* h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL) {
      const char* err = dlerror();
      return Py_BuildValue("(Os)", Py_False, err != NULL ? err : path);
    }
    if (resolve(h, &t, &missing) != 0) {
      char buf[512];
      snprintf(buf, sizeof(buf), "%s lacks %s (a gnnprof of another version?)", path, missing);
      return Py_BuildValue("(Os)", Py_False, buf);
    }
    how = "loaded";
  }
  g_core = t;
  g_core_bound = 1;
  g_how = how;
  g_core.set_optimizer_step_hook(tracer_on_optimizer_step);
  if (g_core.set_loader_step_hook != NULL) g_core.set_loader_step_hook(tracer_on_loader_step);
  if (g_core.set_data_hook != NULL) g_core.set_data_hook(tracer_on_data_op);
  return Py_BuildValue("(Os)", Py_True, how);
}

#define REQUIRE_CORE() \
  if (!g_core_bound) Py_RETURN_NONE

static PyObject* py_start(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  if (!g_core_bound) return PyLong_FromLong(-1);
  const int rc = g_core.start();
  if (rc == 0) tracer_new_session();
  if (rc == 0 && tracer_resume() != 0) PyErr_Clear(); /* lines are not traced; the session runs */
  return PyLong_FromLong(rc);
}

static PyObject* py_stop(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  if (!g_core_bound) return PyLong_FromLong(-1);
  tracer_uninstall(); /* ends this thread's open lines; a stopped session traces nothing */
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = g_core.stop();
  Py_END_ALLOW_THREADS return PyLong_FromLong(rc);
}

static PyObject* py_is_running(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  return PyBool_FromLong(g_core_bound && g_core.is_running());
}

static PyObject* py_flush(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  if (!g_core_bound) return PyLong_FromLong(-1);
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = g_core.flush();
  Py_END_ALLOW_THREADS return PyLong_FromLong(rc);
}

static PyObject* py_stage_site(PyObject* self, PyObject* args) {
  (void)self;
  const char *name, *category = NULL;
  if (!PyArg_ParseTuple(args, "s|z", &name, &category)) return NULL;
  return PyLong_FromUnsignedLong(g_core_bound ? g_core.stage_site(name, category) : 0);
}

static PyObject* py_counter(PyObject* self, PyObject* args) {
  (void)self;
  unsigned long site;
  double value;
  if (!PyArg_ParseTuple(args, "kd", &site, &value)) return NULL;
  REQUIRE_CORE();
  g_core.counter((uint32_t)site, value);
  Py_RETURN_NONE;
}

static PyObject* py_counter_site(PyObject* self, PyObject* args) {
  (void)self;
  const char* name;
  if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
  return PyLong_FromUnsignedLong(g_core_bound ? g_core.counter_site(name) : 0);
}

static PyObject* py_step(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  REQUIRE_CORE();
  /* With the torch observer its mark (it samples iterations there); the optimizer's end none. */
  if (g_core.torch_user_step == NULL || g_core.torch_user_step() == 0) {
    g_core.step();
    (void)g_core.poll(1);
  }
  Py_RETURN_NONE;
}

/* step_end(drop=False): drop, the open iteration was none (a worker's fetch that found its
 * iterable dataset exhausted): its time stays out of the iterations. */
static PyObject* py_step_end(PyObject* self, PyObject* args) {
  (void)self;
  int drop = 0;
  if (!PyArg_ParseTuple(args, "|p", &drop)) return NULL;
  REQUIRE_CORE();
  if (drop && g_core.step_end_flags != NULL) g_core.step_end_flags(GNNPROF_STEP_DROP_OPEN);
  else g_core.step_end();
  Py_RETURN_NONE;
}

static PyObject* py_transfer(PyObject* self, PyObject* args) {
  (void)self;
  unsigned long long bytes, duration = 0;
  int dir, mem, mode;
  if (!PyArg_ParseTuple(args, "Kiii|K", &bytes, &dir, &mem, &mode, &duration)) return NULL;
  REQUIRE_CORE();
  g_core.transfer(bytes, dir, mem, mode, duration);
  Py_RETURN_NONE;
}

static PyObject* py_materialize(PyObject* self, PyObject* args) {
  (void)self;
  unsigned long long rows, bytes;
  if (!PyArg_ParseTuple(args, "KK", &rows, &bytes)) return NULL;
  REQUIRE_CORE();
  g_core.materialize(rows, bytes);
  Py_RETURN_NONE;
}

/* materialize_site(name, file, function, line) -> a named materialization's site at that
 * place (GNNPROF_MATERIALIZE's), or 0 when the core has none. */
static PyObject* py_materialize_site(PyObject* self, PyObject* args) {
  (void)self;
  const char *name, *file, *function;
  unsigned line;
  if (!PyArg_ParseTuple(args, "sssI", &name, &file, &function, &line)) return NULL;
  if (!g_core_bound || g_core.site_register == NULL) return PyLong_FromLong(0);
  return PyLong_FromUnsignedLong(g_core.site_register(4 /* SiteKind::kMaterialize */, name, "", file, function, "", line));
}

static PyObject* py_materialize_at(PyObject* self, PyObject* args) {
  (void)self;
  unsigned long site;
  unsigned long long rows, bytes;
  if (!PyArg_ParseTuple(args, "kKK", &site, &rows, &bytes)) return NULL;
  REQUIRE_CORE();
  if (site != 0 && g_core.site_register != NULL) g_core.materialize_at((uint32_t)site, rows, bytes);
  else g_core.materialize(rows, bytes);
  Py_RETURN_NONE;
}

static PyObject* py_note_collector(PyObject* self, PyObject* args) {
  (void)self;
  const char *name, *reason;
  int enabled;
  if (!PyArg_ParseTuple(args, "sps", &name, &enabled, &reason)) return NULL;
  REQUIRE_CORE();
  g_core.note_collector(name, enabled, reason);
  Py_RETURN_NONE;
}

/* ---- the block trial (gnnprof/block_trial.h), for gnnprof.prefetch's compute threads ---- */

static const char* const kTrialCapsule = "gnnprof.trial";

static void trial_capsule_free(PyObject* cap) {
  void* t = PyCapsule_GetPointer(cap, kTrialCapsule);
  if (t != NULL && g_core_bound && g_core.trial_free != NULL) g_core.trial_free(t);
}

static void* trial_of(PyObject* cap) { return PyCapsule_GetPointer(cap, kTrialCapsule); }

/* trial_new(arms, warmup, block, rounds, min_gain) -> a trial, or None (an older core) */
static PyObject* py_trial_new(PyObject* self, PyObject* args) {
  (void)self;
  int arms, warmup, block, rounds;
  double min_gain;
  if (!PyArg_ParseTuple(args, "iiiid", &arms, &warmup, &block, &rounds, &min_gain)) return NULL;
  if (!g_core_bound || g_core.trial_new == NULL) Py_RETURN_NONE;
  void* t = g_core.trial_new(arms, warmup, block, rounds, min_gain);
  if (t == NULL) Py_RETURN_NONE;
  PyObject* cap = PyCapsule_New(t, kTrialCapsule, trial_capsule_free);
  if (cap == NULL) g_core.trial_free(t);
  return cap;
}

/* trial_iteration(trial, now_ns) -> the arm to switch to, or -1 */
static PyObject* py_trial_iteration(PyObject* self, PyObject* args) {
  (void)self;
  PyObject* cap;
  unsigned long long now;
  if (!PyArg_ParseTuple(args, "OK", &cap, &now)) return NULL;
  void* t = trial_of(cap);
  if (t == NULL) return NULL;
  return PyLong_FromLong(g_core.trial_iteration(t, now));
}

static PyObject* py_trial_restart(PyObject* self, PyObject* cap) {
  (void)self;
  void* t = trial_of(cap);
  if (t == NULL) return NULL;
  g_core.trial_restart(t);
  Py_RETURN_NONE;
}

/* trial_state(trial) -> (chosen arm or -1, [(median_ns, measured) per arm]) */
static PyObject* py_trial_state(PyObject* self, PyObject* args) {
  (void)self;
  PyObject* cap;
  int arms;
  if (!PyArg_ParseTuple(args, "Oi", &cap, &arms)) return NULL;
  void* t = trial_of(cap);
  if (t == NULL) return NULL;
  PyObject* list = PyList_New(0);
  if (list == NULL) return NULL;
  for (int a = 0; a < arms; ++a) {
    PyObject* item = Py_BuildValue("(Ki)", (unsigned long long)g_core.trial_median_ns(t, a), g_core.trial_measured(t, a));
    if (item == NULL || PyList_Append(list, item) != 0) {
      Py_XDECREF(item);
      Py_DECREF(list);
      return NULL;
    }
    Py_DECREF(item);
  }
  PyObject* out = Py_BuildValue("(iO)", g_core.trial_chosen(t), list);
  Py_DECREF(list);
  return out;
}

/* torch_observing() -> 1 the op observer observes the ops of the iteration now running, 0 not
 * (iteration sampling), -1 no observer or no session (gnnprof_preload_torch_observing). */
static PyObject* py_torch_observing(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  if (!g_core_bound || g_core.torch_observing == NULL) return PyLong_FromLong(-1);
  return PyLong_FromLong(g_core.torch_observing());
}

/* torch_state() -> 1 the op observer observes, 2 torch loaded and the observer off, 0 torch not
 * loaded, -1 no preload to ask, -2 the preload was busy too long (gnnprof_preload_torch_state) */
static PyObject* py_torch_state(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  if (!g_core_bound || g_core.torch_state == NULL) return PyLong_FromLong(-1);
  int state;
  Py_BEGIN_ALLOW_THREADS
  state = g_core.torch_state();
  Py_END_ALLOW_THREADS
  return PyLong_FromLong(state);
}

/* module_enter(*hook_args) / module_exit(*hook_args): torch's global module forward hooks
 * themselves (no Python frame per call): the thread is in a torch.nn.Module's call. */
static PyObject* py_module_enter(PyObject* self, PyObject* args) {
  (void)self, (void)args;
  if (g_core_bound && g_core.torch_module != NULL) g_core.torch_module(1);
  Py_RETURN_NONE;
}

static PyObject* py_module_exit(PyObject* self, PyObject* args) {
  (void)self, (void)args;
  if (g_core_bound && g_core.torch_module != NULL) g_core.torch_module(0);
  Py_RETURN_NONE;
}

/* backward_call(entering): the loop thread enters (True) or leaves (False) torch.autograd.backward */
static PyObject* py_backward_call(PyObject* self, PyObject* arg) {
  (void)self;
  if (g_core_bound && g_core.torch_backward != NULL) g_core.torch_backward(PyObject_IsTrue(arg) == 1);
  Py_RETURN_NONE;
}

/* grad_clip(entering): the thread enters (True) or leaves (False) a gradient clipping call */
static PyObject* py_grad_clip(PyObject* self, PyObject* arg) {
  (void)self;
  if (g_core_bound && g_core.torch_grad_clip != NULL) g_core.torch_grad_clip(PyObject_IsTrue(arg) == 1);
  Py_RETURN_NONE;
}

static PyObject* py_set_thread_name(PyObject* self, PyObject* args) {
  (void)self;
  const char* name;
  if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
  REQUIRE_CORE();
  g_core.set_thread_name(name);
  Py_RETURN_NONE;
}

static PyObject* py_line_site(PyObject* self, PyObject* args) {
  (void)self;
  const char *file, *function, *code;
  unsigned int line;
  if (!PyArg_ParseTuple(args, "sIss", &file, &line, &function, &code)) return NULL;
  return PyLong_FromUnsignedLong(g_core_bound ? g_core.line_site(file, line, function, code) : 0);
}

static PyObject* py_attach(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  if (!g_core_bound || g_core.attach == NULL) return PyLong_FromLong(-1);
  return PyLong_FromLong(g_core.attach());
}

/* start_worker(parent_pid=0) -> 0, or -1: a DataLoader worker's session and profile of its
 * own, naming parent_pid (else the process's parent) as its loop: in a fork child, or in a
 * spawned process whose session so far is dropped; its line tracing started afresh
 * (tracer_enter_fork_child). */
static PyObject* py_start_worker(PyObject* self, PyObject* args) {
  (void)self;
  long parent_pid = 0;
  if (!PyArg_ParseTuple(args, "|l", &parent_pid)) return NULL;
  if (!g_core_bound || g_core.start_worker == NULL || g_core.start_worker(parent_pid) != 0)
    return PyLong_FromLong(-1);
  if (tracer_enter_fork_child(1) != 0) PyErr_Clear(); /* lines are not traced; the session runs */
  return PyLong_FromLong(0);
}

/* start_fork_child() -> 0, or -1: in a fork child of a running session, a session and profile
 * of the child's own as a program of its own (a multiprocessing.Process that trains), its line
 * tracing looking for its own loop. */
static PyObject* py_start_fork_child(PyObject* self, PyObject* args) {
  (void)self;
  (void)args;
  if (!g_core_bound || g_core.start_fork_child == NULL || g_core.start_fork_child() != 0) return PyLong_FromLong(-1);
  if (tracer_enter_fork_child(0) != 0) PyErr_Clear();
  return PyLong_FromLong(0);
}

/* start_pool_child(spawned=False) -> 0, or -1: in a process pool's worker forked from a running
 * session, a session and profile of its own (spawned: the process's own session goes on), its
 * line tracing as in a DataLoader worker's (the user code its pool calls), no loop looked for. */
static PyObject* py_start_pool_child(PyObject* self, PyObject* args) {
  (void)self;
  int spawned = 0;
  if (!PyArg_ParseTuple(args, "|p", &spawned)) return NULL;
  if (!spawned && (!g_core_bound || g_core.start_fork_child == NULL || g_core.start_fork_child() != 0))
    return PyLong_FromLong(-1);
  if (tracer_enter_fork_child(1) != 0) PyErr_Clear();
  return PyLong_FromLong(0);
}

/* set_rank(rank, local_rank, world_size): the process's place in a distributed run (-1: as
 * it is) -> 0, or -1. */
static PyObject* py_set_rank(PyObject* self, PyObject* args) {
  (void)self;
  int rank = -1, local_rank = -1, world_size = -1;
  if (!PyArg_ParseTuple(args, "iii", &rank, &local_rank, &world_size)) return NULL;
  if (!g_core_bound || g_core.set_rank == NULL) return PyLong_FromLong(-1);
  return PyLong_FromLong(g_core.set_rank(rank, local_rank, world_size));
}

/* set_loader(text): a DataLoader worker's loader, as its profile's run.loader -> 0, or -1. */
static PyObject* py_set_loader(PyObject* self, PyObject* args) {
  (void)self;
  const char* loader = NULL;
  if (!PyArg_ParseTuple(args, "s", &loader)) return NULL;
  if (!g_core_bound || g_core.set_loader == NULL) return PyLong_FromLong(-1);
  return PyLong_FromLong(g_core.set_loader(loader));
}

/* set_feeds(pid): a producer process's, as its profile's run.feeds_pid -> 0, or -1. */
static PyObject* py_set_feeds(PyObject* self, PyObject* args) {
  (void)self;
  long pid = 0;
  if (!PyArg_ParseTuple(args, "l", &pid)) return NULL;
  if (!g_core_bound || g_core.set_feeds == NULL) return PyLong_FromLong(-1);
  return PyLong_FromLong(g_core.set_feeds(pid));
}

/* discard(): the session stops, its profile not written; the frame hook out. */
static PyObject* py_discard(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  tracer_uninstall();
  if (!g_core_bound || g_core.discard == NULL) return PyLong_FromLong(-1);
  return PyLong_FromLong(g_core.discard());
}

/* ---- tracer control ---- */

/* select(code, roles=ROLE_EXPLICIT, function=None): `function`, the code's function when
 * known (@gnnprof.profile), lets a __getitem__ be seen from its first call. */
static PyObject* py_select(PyObject* self, PyObject* args) {
  (void)self;
  PyObject* code;
  PyObject* function = Py_None;
  int roles = ROLE_EXPLICIT;
  if (!PyArg_ParseTuple(args, "O|iO", &code, &roles, &function)) return NULL;
  if (tracer_select(code, roles) != 0) return NULL;
  if (function != Py_None) tracer_selected_function(function);
  Py_RETURN_NONE;
}

static PyObject* py_set_auto(PyObject* self, PyObject* arg) {
  (void)self;
  const int on = PyObject_IsTrue(arg);
  if (on < 0) return NULL;
  tracer_set_auto(on);
  Py_RETURN_NONE;
}

static PyObject* py_feeds_loop(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  tracer_feeds_loop_thread();
  Py_RETURN_NONE;
}

static PyObject* py_loop_thread(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  return PyLong_FromLong(tracer_loop_thread());
}

/* producer_call(child): the program's own producer call on this thread (tracer_on_producer_call). */
static PyObject* py_producer_call(PyObject* self, PyObject* arg) {
  (void)self;
  const int child = PyObject_IsTrue(arg);
  if (child < 0) return NULL;
  return PyBool_FromLong(tracer_on_producer_call(child));
}

static PyObject* py_producer_may(PyObject* self, PyObject* arg) {
  (void)self;
  const int child = PyObject_IsTrue(arg);
  if (child < 0) return NULL;
  return PyBool_FromLong(tracer_producer_may_select(child));
}

static PyObject* py_submitted(PyObject* self, PyObject* code) {
  (void)self;
  return PyBool_FromLong(tracer_on_submitted(code));
}

static PyObject* py_set_decider(PyObject* self, PyObject* arg) {
  (void)self;
  tracer_set_decider(arg);
  if (arg != Py_None && tracer_install() != 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject* py_set_preparer(PyObject* self, PyObject* arg) {
  (void)self;
  tracer_set_preparer(arg);
  Py_RETURN_NONE;
}

static PyObject* py_set_excluded(PyObject* self, PyObject* arg) {
  (void)self;
  if (tracer_set_excluded(arg) != 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject* py_set_loaders(PyObject* self, PyObject* arg) {
  (void)self;
  if (tracer_set_loaders(arg) != 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject* py_set_frameworks(PyObject* self, PyObject* args) {
  (void)self;
  PyObject *fragments, *neutral;
  if (!PyArg_ParseTuple(args, "OO", &fragments, &neutral)) return NULL;
  if (tracer_set_frameworks(fragments, neutral) != 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject* py_stats(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  return tracer_stats();
}

static PyObject* py_selected(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  return tracer_selected();
}

/* set_hook(on): the frame hook in or out, selections kept (bench/python_sample_inproc.py). */
/* prefetch_generators(targets, wrap) -> 1 when set, 0 where this Python's tracer cannot
 * (tracer_prefetch_generators). */
static PyObject* py_prefetch_generators(PyObject* self, PyObject* args) {
  (void)self;
  PyObject *targets, *wrap;
  if (!PyArg_ParseTuple(args, "OO", &targets, &wrap)) return NULL;
  const int r = tracer_prefetch_generators(targets, wrap);
  return r < 0 ? NULL : PyLong_FromLong(r);
}

static PyObject* py_set_hook(PyObject* self, PyObject* arg) {
  (void)self;
  const int on = PyObject_IsTrue(arg);
  if (on < 0) return NULL;
  if (!on) {
    tracer_uninstall();
  } else if (tracer_resume() != 0) {
    return NULL;
  }
  Py_RETURN_NONE;
}

/* optimizer_step(): what torch's observer reports at Optimizer.step, from Python: the auto
 * selection's trigger for tests without torch (tests/python/scripts/hook_loop.py). */
static PyObject* py_optimizer_step(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  tracer_on_optimizer_step();
  Py_RETURN_NONE;
}

static PyObject* py_retake_thread(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  return PyBool_FromLong(tracer_retake_thread());
}

static PyObject* py_close_thread(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  tracer_close_thread();
  Py_RETURN_NONE;
}

/* close_torch_thread(): the torch observer's end of this thread (its open phase, the op
 * sampler's final note), for a session stopped before the process's exit flush. */
static PyObject* py_close_torch_thread(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  if (g_core_bound && g_core.close_torch_thread != NULL) g_core.close_torch_thread();
  Py_RETURN_NONE;
}

/* ---- Stage: `with Stage("name"):` ---- */

typedef struct {
  PyObject_HEAD uint32_t site;
  PyObject* name;
  const char* name_utf8; /* owned by name */
  char* category;        /* NULL: implied by the name */
} StageObject;

static int stage_init(StageObject* self, PyObject* args, PyObject* kwds) {
  static char* kwlist[] = {"name", "category", NULL};
  PyObject* name;
  const char* category = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "U|z", kwlist, &name, &category)) return -1;
  const char* n = PyUnicode_AsUTF8(name);
  if (n == NULL) return -1;
  char* cat = NULL;
  if (category != NULL && (cat = strdup(category)) == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  Py_XSETREF(self->name, Py_NewRef(name));
  self->name_utf8 = n;
  free(self->category);
  self->category = cat;
  self->site = g_core_bound ? g_core.stage_site(n, category) : 0;
  return 0;
}

static void stage_dealloc(StageObject* self) {
  free(self->category);
  Py_XDECREF(self->name);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

/* With the torch observer the stage is its scope, as a record_function's: the phases and
 * gathers inside it nest in it (recorded straight to the core, a phase that ends inside it
 * would end it instead). */
static PyObject* stage_enter(StageObject* self, PyObject* unused) {
  (void)unused;
  if (g_core_bound && self->name_utf8 != NULL &&
      (g_core.torch_user_scope == NULL || g_core.torch_user_scope(self->name_utf8, self->category, 1) == 0))
    g_core.stage_begin(self->site);
  return Py_NewRef((PyObject*)self);
}

static PyObject* stage_exit(StageObject* self, PyObject* args) {
  (void)args;
  if (g_core_bound && self->name_utf8 != NULL &&
      (g_core.torch_user_scope == NULL || g_core.torch_user_scope(self->name_utf8, self->category, 0) == 0))
    g_core.stage_end();
  Py_RETURN_FALSE;
}

static PyObject* stage_get_name(StageObject* self, void* closure) {
  (void)closure;
  return Py_NewRef(self->name != NULL ? self->name : Py_None);
}

/* ---- Timed: a callable that times the call it forwards ---- */

/* `Timed(fn)`: calling it calls fn and keeps the call's wall time in `ns`. A C callable, so the
 * callee's frame has its real caller above it (the line tracer's data-pipeline selection looks
 * at that frame): the loader-fetch wrapper times a DataLoader's collate_fn with it. */
typedef struct {
  PyObject_HEAD PyObject* fn;
  long long ns;
} TimedObject;

static int timed_init(TimedObject* self, PyObject* args, PyObject* kwds) {
  PyObject* fn = NULL;
  if (kwds != NULL && PyDict_GET_SIZE(kwds) > 0) {
    PyErr_SetString(PyExc_TypeError, "Timed(fn) takes no keyword arguments");
    return -1;
  }
  if (!PyArg_ParseTuple(args, "O", &fn)) return -1;
  Py_XSETREF(self->fn, Py_NewRef(fn));
  self->ns = 0;
  return 0;
}

static void timed_dealloc(TimedObject* self) {
  Py_XDECREF(self->fn);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

static long long monotonic_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static PyObject* timed_call(TimedObject* self, PyObject* args, PyObject* kwds) {
  if (self->fn == NULL) {
    PyErr_SetString(PyExc_TypeError, "Timed: no function");
    return NULL;
  }
  PyObject* fn = Py_NewRef(self->fn); /* held: a call that re-inits this object keeps its function */
  const long long start = monotonic_ns();
  PyObject* out = PyObject_Call(fn, args, kwds);
  self->ns = monotonic_ns() - start;
  Py_DECREF(fn);
  return out;
}

static PyObject* timed_get_ns(TimedObject* self, void* closure) {
  (void)closure;
  return PyLong_FromLongLong(self->ns);
}

static PyGetSetDef timed_getset[] = {
    {"ns", (getter)timed_get_ns, NULL, "the last call's wall time (CLOCK_MONOTONIC), ns", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject TimedType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gnnprof._native.Timed",
    .tp_basicsize = sizeof(TimedObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Timed(fn): calls fn, keeping the call's wall time in `ns`.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)timed_init,
    .tp_dealloc = (destructor)timed_dealloc,
    .tp_call = (ternaryfunc)timed_call,
    .tp_getset = timed_getset,
};

/* ---- the GNNPROF_* table (profiler/config.*): one parser, one warning per bad value ---- */

static PyObject* py_config_count(PyObject* self, PyObject* args) {
  (void)self;
  const char* name = NULL;
  unsigned long long code_default = 0;
  if (!PyArg_ParseTuple(args, "sK", &name, &code_default)) return NULL;
  if (!g_core_bound) return PyLong_FromUnsignedLongLong(code_default);
  return PyLong_FromUnsignedLongLong(g_core.config_count_or(name, code_default));
}

static PyObject* py_config_bool(PyObject* self, PyObject* args) {
  (void)self;
  const char* name = NULL;
  if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
  if (!g_core_bound) Py_RETURN_NONE;
  return PyBool_FromLong(g_core.config_bool(name));
}

static PyObject* py_config_string(PyObject* self, PyObject* args) {
  (void)self;
  const char* name = NULL;
  if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
  if (!g_core_bound) Py_RETURN_NONE;
  char buf[4096];
  buf[0] = '\0';
  g_core.config_string(name, buf, sizeof(buf));
  return PyUnicode_DecodeFSDefault(buf);
}

static PyMethodDef stage_methods[] = {
    {"__enter__", (PyCFunction)stage_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)stage_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef stage_getset[] = {
    {"name", (getter)stage_get_name, NULL, "the stage's name", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject StageType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gnnprof._native.Stage",
    .tp_basicsize = sizeof(StageObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A gnnprof stage: `with Stage(name[, category]):` times the block.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)stage_init,
    .tp_dealloc = (destructor)stage_dealloc,
    .tp_methods = stage_methods,
    .tp_getset = stage_getset,
};

static PyMethodDef methods[] = {
    {"bind", py_bind, METH_VARARGS, "bind(preload_path) -> (ok, how)"},
    {"start", py_start, METH_NOARGS, "start the session (0, 1 when disabled, -1 on error)"},
    {"stop", py_stop, METH_NOARGS, "stop the session and write the profile (0 or -1)"},
    {"is_running", py_is_running, METH_NOARGS, NULL},
    {"flush", py_flush, METH_NOARGS, "write the profile so far"},
    {"stage_site", py_stage_site, METH_VARARGS, NULL},
    {"counter_site", py_counter_site, METH_VARARGS, NULL},
    {"counter", py_counter, METH_VARARGS, NULL},
    {"step", py_step, METH_NOARGS, "iteration boundary"},
    {"step_end", py_step_end, METH_VARARGS, "step_end(drop=False): end the open iteration (drop: it was none)"},
    {"transfer", py_transfer, METH_VARARGS, NULL},
    {"materialize", py_materialize, METH_VARARGS, NULL},
    {"materialize_site", py_materialize_site, METH_VARARGS, "materialize_site(name, file, function, line) -> site or 0"},
    {"materialize_at", py_materialize_at, METH_VARARGS, "materialize_at(site, rows, bytes): a named gather"},
    {"note_collector", py_note_collector, METH_VARARGS, NULL},
    {"module_enter", py_module_enter, METH_VARARGS, "a module forward pre-hook: the thread enters a torch.nn.Module's call"},
    {"module_exit", py_module_exit, METH_VARARGS, "a module forward hook: the thread leaves a torch.nn.Module's call"},
    {"backward_call", py_backward_call, METH_O, "backward_call(entering): the thread enters or leaves torch.autograd.backward"},
    {"grad_clip", py_grad_clip, METH_O, "grad_clip(entering): the thread enters or leaves a gradient clipping call"},
    {"torch_observing", py_torch_observing, METH_NOARGS, "1/0: this iteration's ops observed or not; -1 no observer"},
    {"torch_state", py_torch_state, METH_NOARGS, "1 the op observer observes, 2 torch loaded and it is off, 0 torch not loaded, -1 unknown"},
    {"set_thread_name", py_set_thread_name, METH_VARARGS, NULL},
    {"line_site", py_line_site, METH_VARARGS, NULL},
    {"attach", py_attach, METH_NOARGS, "let the preload library look for torch and CUDA now"},
    {"select", py_select, METH_VARARGS, "trace the lines of a code object"},
    {"set_auto", py_set_auto, METH_O, NULL},
    {"feeds_loop", py_feeds_loop, METH_NOARGS, "the calling thread runs a data loader for the loop (the prefetcher's)"},
    {"loop_thread", py_loop_thread, METH_NOARGS, "1: the training loop was found on this thread; 0: on another; -2: not yet found; -1: not known"},
    {"producer_call", py_producer_call, METH_O, "producer_call(child): the program's own Queue.put/Event.set/notify here; True when its function was selected"},
    {"producer_may", py_producer_may, METH_O, "producer_may(child): whether this thread still looks for its producer function"},
    {"submitted", py_submitted, METH_O, "submitted(code): a function given to a thread pool; True when selected"},
    {"set_decider", py_set_decider, METH_O, NULL},
    {"set_preparer", py_set_preparer, METH_O, NULL},
    {"set_excluded", py_set_excluded, METH_O, NULL},
    {"set_loaders", py_set_loaders, METH_O, NULL},
    {"set_frameworks", py_set_frameworks, METH_VARARGS, "set_frameworks(fragments, neutral): third-party packages' path fragments, and the names of those that are no framework"},
    {"stats", py_stats, METH_NOARGS, NULL},
    {"selected", py_selected, METH_NOARGS, "[(filename, name, qualname or None (3.10), roles, first line)] of the traced code objects"},
    {"set_hook", py_set_hook, METH_O, "the frame hook in (True) or out (False); selections are kept"},
    {"prefetch_generators", py_prefetch_generators, METH_VARARGS,
     "prefetch_generators([(co_filename, co_qualname)], wrap): their calls return wrap(gen); 1, or 0 where unsupported"},
    {"start_worker", py_start_worker, METH_VARARGS, "start_worker(parent_pid=0): a worker's own session: 0, or -1"},
    {"start_pool_child", py_start_pool_child, METH_VARARGS, "start_pool_child(spawned=False): a process pool worker's own session: 0, or -1"},
    {"start_fork_child", py_start_fork_child, METH_NOARGS, "start_fork_child(): a fork child's own session: 0, or -1"},
    {"discard", py_discard, METH_NOARGS, "stop the session without writing its profile"},
    {"set_rank", py_set_rank, METH_VARARGS, "set_rank(rank, local_rank, world_size): -1 leaves a field"},
    {"set_loader", py_set_loader, METH_VARARGS, "set_loader(text): a DataLoader worker's loader (run.loader)"},
    {"set_feeds", py_set_feeds, METH_VARARGS, "set_feeds(pid): the process a producer process feeds (run.feeds_pid)"},
    {"close_thread", py_close_thread, METH_NOARGS, "end the calling thread's open lines"},
    {"retake_thread", py_retake_thread, METH_NOARGS, "after sys.settrace(None): tracing goes on where a traced frame runs (3.10/3.11)"},
    {"optimizer_step", py_optimizer_step, METH_NOARGS, "the optimizer-step trigger of auto selection (tests)"},
    {"close_torch_thread", py_close_torch_thread, METH_NOARGS, "end the torch observer's state of this thread"},
    {"trial_new", py_trial_new, METH_VARARGS, "trial_new(arms, warmup, block, rounds, min_gain): a block trial, or None"},
    {"trial_iteration", py_trial_iteration, METH_VARARGS, "trial_iteration(trial, now_ns): the arm to switch to, or -1"},
    {"trial_restart", py_trial_restart, METH_O, "trial_restart(trial): the last interval was no iteration"},
    {"trial_state", py_trial_state, METH_VARARGS, "trial_state(trial, arms): (chosen or -1, [(median_ns, measured)])"},
    {"config_count", py_config_count, METH_VARARGS, "config_count(name, code_default): a GNNPROF_* count"},
    {"config_string", py_config_string, METH_VARARGS, "config_string(name): a GNNPROF_* value, else its default"},
    {"config_bool", py_config_bool, METH_VARARGS, "config_bool(name): a GNNPROF_* flag, else its default"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "gnnprof._native", NULL, -1, methods,
                                    NULL,                  NULL,              NULL, NULL};

PyMODINIT_FUNC PyInit__native(void) {
  if (tracer_init() != 0) return NULL;
  if (PyType_Ready(&StageType) < 0 || PyType_Ready(&TimedType) < 0) return NULL;
  PyObject* m = PyModule_Create(&module);
  if (m == NULL) return NULL;
  if (PyModule_AddObjectRef(m, "Stage", (PyObject*)&StageType) < 0 ||
      PyModule_AddObjectRef(m, "Timed", (PyObject*)&TimedType) < 0 ||
      PyModule_AddIntConstant(m, "ROLE_EXPLICIT", ROLE_EXPLICIT) < 0 ||
      PyModule_AddIntConstant(m, "ROLE_LOOP", ROLE_LOOP) < 0 ||
      PyModule_AddIntConstant(m, "ROLE_PIPELINE", ROLE_PIPELINE) < 0 ||
      PyModule_AddIntConstant(m, "PY_VERSION_HEX", PY_VERSION_HEX) < 0 ||
      PyModule_AddIntConstant(m, "LINES", GNNPROF_PY_LINES) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
