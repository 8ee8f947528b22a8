/* tracer_common.h — what both line tracers share (tracer_common.c): the selection of code
 * objects (explicit, automatic), their statement maps, and the per-thread stack of traced
 * frames whose statements become the core's line events. The frame-specific halves are
 * tracer.c (CPython 3.11: a PEP 523 hook switching a C trace function) and tracer_monitor.c
 * (CPython 3.12+: sys.monitoring's local events, PEP 669). */
#ifndef GNNPROF_PY_TRACER_COMMON_H_
#define GNNPROF_PY_TRACER_COMMON_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "tracer.h"

#if PY_VERSION_HEX >= 0x030D0000
#define GNNPROF_IS_FINALIZING() Py_IsFinalizing()
#else
#define GNNPROF_IS_FINALIZING() _Py_IsFinalizing()
#endif
#if PY_VERSION_HEX >= 0x030C0000 /* the code extra slot's names since 3.12 */
#define GNNPROF_CODE_GET_EXTRA PyUnstable_Code_GetExtra
#define GNNPROF_CODE_SET_EXTRA PyUnstable_Code_SetExtra
#define GNNPROF_REQUEST_CODE_EXTRA PyUnstable_Eval_RequestCodeExtraIndex
#else
#define GNNPROF_CODE_GET_EXTRA _PyCode_GetExtra
#define GNNPROF_CODE_SET_EXTRA _PyCode_SetExtra
#define GNNPROF_REQUEST_CODE_EXTRA _PyEval_RequestCodeExtraIndex
#endif

/* ---- code objects: selected (CodeInfo), rejected, or candidates ---- */

typedef struct CodeInfo {
  int roles;    /* ROLE_* bits */
  int getitem;  /* a __getitem__(self, key) (tracer.c: own_version) */
  int state;    /* 0: statement map not built yet, 1: built, -1: unavailable (one site per line) */
  int first, n; /* lines first .. first + n - 1 */
  int32_t* stmt;  /* per line: the first line of its statement */
  uint32_t* site; /* per line: the statement's line site */
  int32_t* exits; /* sorted byte offsets where a `with` block leaves (its line again: no new hit) */
  int n_exits;
  PyObject* filename;
  PyObject* name;
  PyObject* qualname;
  /* ROLE_LOOP found at a step: the lines of the loop statements around it, innermost first
   * (loop_levels of them); loop_level: the one taken for the training loop (the next one out
   * when a step came between leaving it and coming back: a discriminator's inner loop);
   * loop_out: whether the frame is out of it now (after an epoch, before the next). */
  int loop_lo[4], loop_hi[4], loop_levels, loop_level, loop_out;
  struct CodeInfo* next_selected; /* every CodeInfo ever made, for tracer_selected() */
} CodeInfo;

extern CodeInfo* g_all;

/* Marks kept in a code object's extra slot instead of a CodeInfo. */
extern char k_reject, k_maybe, k_maybe_loaded, k_loader, k_loader_subscr, k_framework;
#define REJECT ((void*)&k_reject)
/* Code of a framework that may run the loop and call the user's code back (Lightning, skorch:
 * a third-party package but torch): never traced itself, like REJECT. */
#define FRAMEWORK ((void*)&k_framework)
#define MAYBE ((void*)&k_maybe) /* a user generator/iterator: selected when the loop pulls from it */
/* Other user code (auto): selected when a data loader running for the loop calls it (a
 * Dataset's __getitem__, a collate_fn). */
#define MAYBE_LOADED ((void*)&k_maybe_loaded)
/* Library code of a data loader (torch.utils.data, ...); LOADER_SUBSCR: one that subscripts
 * something (tracer.c traces those a few times, for an inlined user __getitem__). */
#define LOADER ((void*)&k_loader)
#define LOADER_SUBSCR ((void*)&k_loader_subscr)

static inline int is_loader(void* x) { return x == LOADER || x == LOADER_SUBSCR; }
static inline int is_library(void* x) { return x == REJECT || x == FRAMEWORK; }
static inline int is_mark(void* x) { return is_library(x) || x == MAYBE || x == MAYBE_LOADED || is_loader(x); }

void* extra_of(PyCodeObject* co); /* the slot's CodeInfo or mark; NULL: never seen */
CodeInfo* info_of(PyCodeObject* co);
void set_extra(PyCodeObject* co, void* x);
CodeInfo* codeinfo_new(PyCodeObject* co, int roles);
static inline int feeds_loop(CodeInfo* ci) { return ci != NULL && (ci->roles & (ROLE_LOOP | ROLE_PIPELINE)) != 0; }

/* ---- settings and counters (under the GIL) ---- */

extern int g_auto;
extern PyObject* g_decider; /* explicit specs, or NULL */
extern int g_installed;
extern int g_worker; /* a data loader's worker process (tracer_enter_fork_child) */
extern __thread int t_feeds_loop; /* this thread runs a data loader for the loop (tracer_feeds_loop_thread) */

extern struct TracerStats {
  unsigned long long selected, line_events, adopted, polls, foreign, prepare_failed, deep, producers, callbacks, retaken;
} g_stats;

/* 0, or -1 with an exception set: the code extra slot. */
int common_init(void);

/* tracer_select's common half: `code` gets `roles`, a CodeInfo made where it had none; *was
 * receives its extra slot's previous content (a CodeInfo, a mark, or NULL). NULL with an
 * exception set on error. */
CodeInfo* select_code(PyObject* code, int roles, void** was);
/* The auto selection's mark for a code object seen for the first time. */
void* auto_mark(PyCodeObject* co);
/* First sight of a code object: its selection, cached in its extra slot. `deciding` guards
 * against deciding inside the decider. */
void* decide(int* deciding, PyCodeObject* co);
/* Whether co (of the given mark, NULL: not decided yet) is a library's generator or iterator
 * (tqdm's __iter__, a framework's fetcher) that can stand between the loop and a user
 * generator/iterator it pulls from. */
int library_iterator(PyCodeObject* co, void* mark);
/* Whether the loop found in this session is run by a framework (its step was called through
 * FRAMEWORK code) and this process is not a data loader's worker. */
int framework_loop(void);
/* A step of the walk down from the caller of user code, for a framework's callback: 1 where
 * the frame's code (mark x, NULL: not decided) is of the package running the loop, 0 where it
 * is other library code to look through (torch, the standard library, another package: PyG's
 * layer calling a user message()), -1 where the walk stops (user code). */
int callback_walk(PyCodeObject* co, void* x);
/* At the optimizer step: whether auto selection looks for the loop now (on, Python running, not
 * yet on this thread; marks the thread done). */
int auto_selects_now(void);
/* auto_selects_now at a DataLoader's __next__ in a loop with no optimizer so far (inference):
 * the thread's first optimizer step may look again (that loop was an evaluation before it). */
int auto_selects_at_loader(void);
/* auto_selects_now at an optimizer step. */
int auto_selects_at_step(void);
/* At the optimizer step (GIL held): selects the first user frame that calls it (ROLE_LOOP),
 * and when that one is not inside a loop of its own (a train_step helper), the first user
 * frame above it that is. When a framework runs the loop (framework_caller), the user frame
 * that called the framework instead. The frame to adopt at once (the framework's caller, or
 * a loop that calls the step itself) is returned in *adopt (a new reference) for adopt_loop
 * once the tracer holds the thread. 1 when a frame was selected. */
int select_loop(PyFrameObject** adopt);
/* On a gather or host-to-device copy before taking the GIL:
 * whether to look for that thread's user code (auto on, not a worker process; the loop found
 * this session, on another thread; no traced frame here, or only a producer's found at a
 * hand-over; tries left on this thread). */
int data_may_select(void);
/* There (GIL held): selects the innermost user frame that is not module code (a producer
 * thread's sampling or gathering function, ROLE_PIPELINE); a thread stops looking once one is
 * found, or after 16 tries. 1 when a frame was selected. */
int select_producer(void);
/* At the program's own producer call (GIL held): data_may_select, or in a process of the
 * program's that feeds the loop's (`child`: no loop is needed here) the same without it. */
int producer_may_select(int child);
/* There (GIL held): select_producer's selection with looks of its own (a thread's gathers and
 * hand-overs each find their function: the producer's loop that puts, the callee that
 * gathers); once found, a gather under it may still select its callee. 1 when found. */
int select_handed(void);
/* In a fork child: the parent's traced frames and counts are forgotten; a worker from now on,
 * or (worker 0) a program whose own loop auto selection looks for. */
void forget_parent(int worker);
/* Frames a data loader's call of user code is looked through for the loop it runs for. */
enum { kLoaderWalk = 16 };

/* ---- per-thread stack of traced frames ---- */

enum { kMaxDepth = 128, kMaxSuspended = 16, kPollEvery = 1024 };

typedef struct Entry {
  const void* f;  /* the frame's key (tracer.c: its _PyInterpreterFrame; tracer_monitor.c: its code) */
  CodeInfo* ci;
  uint32_t site;  /* the current statement's site, 0 before the frame's first line */
  int32_t stmt;   /* its first line */
  int lasti;      /* the instruction of the last line event (-1: not known) */
  int start;      /* the instruction where the statement's current execution began (-1: not known) */
  uint64_t t0;    /* when the current statement began (gnnprof_now) */
  uint64_t nested; /* of the current statement's time so far, traced frames above this one (callees) */
  uint64_t entered; /* when this frame's traced time began (its first line, or its resume), 0: not yet */
  uint8_t hit;    /* the current segment began the statement (0: a generator resumed) */
  uint8_t adopted; /* already running when tracing began */
  uint8_t began;   /* adopted, and its first traced statement not yet recorded */
  /* Recursion: a frame of the same code deeper in the stack pauses this one's statement (its
   * site kept here), so that the function's time is counted once; the deeper frame's lines
   * hold it. paused_below: the index of the entry this one paused, -1 if none. */
  uint32_t paused_site;
  int paused_below;
} Entry;

typedef struct Suspended {
  const void* f;    /* a selected generator suspended at a yield (its frame) */
  const void* code; /* its code object: a frame freed unseen and its address reused is no match */
  uint32_t site;
  int32_t stmt;
  int lasti, start;
  uint64_t at;       /* when it suspended */
  uint8_t awaiting; /* at an await: its statement's time goes on across the suspension */
} Suspended;

typedef struct ThreadTrace {
  int depth; /* may exceed kMaxDepth: those frames are not traced */
  Entry stack[kMaxDepth];
  Suspended suspended[kMaxSuspended];
  unsigned next_victim;
  unsigned since_poll;
  unsigned auto_epoch; /* the g_auto_epoch whose loop this thread looked for */
  unsigned data_epoch; /* the g_auto_epoch whose producer code this thread looks for */
  unsigned data_tries; /* its looks so far in that session */
  unsigned loop_epoch; /* the g_auto_epoch whose loop was found on this thread */
  unsigned handed_epoch; /* the g_auto_epoch whose hand-overs this thread looks at */
  unsigned handed_tries; /* its looks so far in that session */
  unsigned handed_found; /* the g_auto_epoch in which a hand-over selected its function */
  int loader_loop; /* that look was at a DataLoader's __next__: an optimizer step looks again */
  int deciding; /* inside the explicit decider or the preparer: no decisions */
  /* The training loop's coroutine suspended at an await, with no traced frame below it: the
   * stage "await" is open (await_open) and its statement (await_site) is the thread's line
   * while no traced frame runs (site_below). Its time off the CPU is measured at the first 16
   * awaits and one in 8 after, drawn at random (await_at: 0 when not: the thread's CPU clock
   * costs a syscall, ~0.5 us here, twice). */
  const void* await_f;
  uint32_t await_site;
  int await_open, await_scope; /* await_scope: begun as the torch observer's scope */
  uint64_t await_at, await_cpu;
  unsigned await_n;
  uint32_t await_draw;
  unsigned epoch; /* tracer_monitor.c: the g_epoch its stack belongs to */
} ThreadTrace;

extern __thread ThreadTrace* t_trace;
ThreadTrace* thread_trace(void);
/* Each tracer's: frame fr of co (selected: ci), running since before tracing began, is pushed
 * on tt's stack now, its current line a statement from now on (one hit). */
void adopt_running(ThreadTrace* tt, PyFrameObject* fr, PyCodeObject* co, CodeInfo* ci);
/* Adopts the selected running frame fr now (adopt_running) when nothing is traced on this
 * thread yet. */
void adopt_loop(PyFrameObject* fr);
Entry* push(ThreadTrace* tt, const void* f, CodeInfo* ci, int adopted);
/* The innermost traced frame's entry, or NULL (none, or deeper than traced). */
static inline Entry* top_entry(ThreadTrace* tt) {
  return tt->depth > 0 && tt->depth <= kMaxDepth ? &tt->stack[tt->depth - 1] : NULL;
}
/* User code co, not traced, begins under the thread's current traced statement: the core
 * keeps the first such function per line (gnnprof_line_callee), for the report to name the
 * file that `--lines` would add. */
void note_callee(ThreadTrace* tt, PyCodeObject* co); /* tt: NULL, or the thread's */
/* Ends the entry's current statement at `now` (no new line set); e is in tt's stack. */
void end_statement(ThreadTrace* tt, Entry* e, uint64_t now);
/* e, the top entry, leaves at `now`: its time since it began is nested time of its caller's
 * (the entry below) current statement. */
void charge_caller(ThreadTrace* tt, const Entry* e, uint64_t now);
/* As e leaves: the statement of the entry it paused goes on (site restored, no hit); that
 * entry is returned for its t0 to be set once the line is current again, or NULL. */
Entry* unpause(ThreadTrace* tt, Entry* e);
/* The site of the entry below the top (the caller's line), or 0. */
uint32_t site_below(ThreadTrace* tt);
/* The topmost entry of frame key f; entries above it (frames that left unseen) end now. */
Entry* entry_of(ThreadTrace* tt, const void* f);
Suspended* find_suspended(ThreadTrace* tt, const void* f, const void* code);
/* Saves e's statement for generator frame f (of code co) suspended at a yield at `now`;
 * `value`: what it yielded (NULL: not known). */
void suspend(ThreadTrace* tt, const void* f, PyCodeObject* co, const Entry* e, uint64_t now, PyObject* value);
/* Restores a resumed generator's statement into e (no hit); forgets it. 0 when none was
 * saved (it yielded while not traced). A coroutine's statement goes on from its suspension:
 * the time of `x = await task` is what the coroutine waited, as its caller sees a call's. */
int resume(ThreadTrace* tt, const void* f, const void* code, Entry* e);
/* A generator resumed that yielded while not traced (selected since, as the loop's batch
 * generator suspended in a `yield from`): its statement at `line` goes on from now, no hit. */
void resume_unsaved(ThreadTrace* tt, Entry* e, PyCodeObject* co, int line, int lasti);
/* Whether entry e (the top one, of code co) suspending at a yield is the training loop's
 * coroutine at an await with no traced frame below it. */
int loop_awaits(const ThreadTrace* tt, const Entry* e, PyCodeObject* co);
/* Before its line changes: opens the stage "await" (data) for frame key f, whose statement
 * stays the thread's line while no traced frame runs. */
void await_begin(ThreadTrace* tt, const void* f, const Entry* e);
/* Frame key f resumed or finished, or the thread's tracing ends (f NULL: whichever): the stage
 * it opened ends, with its time off the CPU as the counter "off-CPU ns: await". */
void await_end(ThreadTrace* tt, const void* f);
/* Forgets an open await without ending its stage (a new session's stack is not its). */
void await_forget(ThreadTrace* tt);
/* Forgets a generator frame's saved statement (it finished, or its frame is reused). */
void forget_suspended(ThreadTrace* tt, const void* f);
/* Whether `line` of ci belongs to a statement spanning several lines (map built). */
int multi_line(const CodeInfo* ci, int line);
/* Whether byte offset `lasti` is where a `with` block of ci leaves (prepare()'s exits). */
int with_exit(const CodeInfo* ci, int lasti);
/* A line event of entry e (frame code co) at `line`; lasti: its instruction offset, or -1
 * when not known (then a line of the current statement ends it unless the statement spans
 * several lines and lasti says control went on forward). */
void on_line_of(ThreadTrace* tt, Entry* e, PyCodeObject* co, int line, int lasti);
/* Builds ci's statement map (first line event of a selected code). */
void prepare(ThreadTrace* tt, CodeInfo* ci, PyCodeObject* co);

/* ---- zero-code prefetch of a batch generator (tracer_prefetch_generators), 3.11+ ---- */

/* Sets the targets and the wrapper after checking their types; 0, or -1 with an exception set. */
int gen_targets_set(PyObject* targets, PyObject* wrap);
/* Whether any target is set. */
int gen_targets_any(void);
/* Whether generator code co is a target (decided once per code object). Frame hooks call it
 * on a frame's first evaluation, where a generator function's call makes the generator. */
int gen_target(PyCodeObject* co);
/* The call's result for a target: wrap(gen), or gen itself (NULL passes through) when that
 * fails; never an exception of gnnprof's. Steals gen. */
PyObject* gen_wrap(PyObject* gen);

#endif /* GNNPROF_PY_TRACER_COMMON_H_ */
