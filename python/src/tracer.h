/* tracer.h — gnnprof's Python line tracer (tracer.c).
 *
 * Lines are traced only in selected code objects. A PEP 523 frame-evaluation hook switches the
 * thread's C trace function on while a selected frame runs and off while any other frame runs,
 * so an unselected frame costs one check of its code object (and its callees run untraced even
 * when called from a traced line). Selection: explicit (@gnnprof.profile, --lines), or
 * automatic: the user frame that calls the optimizer's step (the training loop; when it is a
 * helper outside any loop, the loop above it too), the user generators it pulls batches
 * from, the user code a data loader calls for it, and, when a framework runs the loop, the
 * user code that framework calls back. */
#ifndef GNNPROF_PY_TRACER_H_
#define GNNPROF_PY_TRACER_H_

#include <Python.h>

enum { ROLE_EXPLICIT = 1, ROLE_LOOP = 2, ROLE_PIPELINE = 4, ROLE_CALLBACK = 8 }; /* bits */

/* Once, at module init. 0 on success, -1 with an exception set. */
int tracer_init(void);
/* Marks `code` selected (role ROLE_*) and installs the hook. 0 or -1 with an exception set. */
int tracer_select(PyObject* code, int role);
/* The function of a selected code object, when known: a __getitem__'s calls then all pass the
 * hook (tracer.c, own_version). */
void tracer_selected_function(PyObject* function);
/* Automatic selection on or off. */
void tracer_set_auto(int on);
/* decider(code) -> bool for explicit specs (--lines), or None: no explicit specs. */
int tracer_set_decider(PyObject* decider);
/* preparer(code) -> (first_line, stmt_lines, sites), both lists covering lines first.. */
int tracer_set_preparer(PyObject* preparer);
/* Path prefixes of library code (stdlib, site-packages, torch, gnnprof): never the user's. */
int tracer_set_excluded(PyObject* prefixes);
/* Path fragments of data-loader libraries ("/torch/utils/data/", ...): auto selection traces
 * the user code they call (a Dataset's __getitem__, a collate_fn) while they run for the loop. */
int tracer_set_loaders(PyObject* fragments);
/* Path fragments of third-party packages ("/site-packages/", ...) and, among them, the names of
 * those that are not a framework driving the loop ("torch/", "gnnprof/": the path's start after
 * the last fragment): when the loop's step is called through
 * a framework (Lightning, skorch), auto selection traces the user code that framework calls back
 * while the loop runs (a training_step, a module's forward). */
int tracer_set_frameworks(PyObject* fragments, PyObject* neutral);
/* The core's optimizer-step hook (any thread, GIL held or not). */
void tracer_on_optimizer_step(void);
/* The core's loader-step hook: a DataLoader's __next__ began an iteration of a loop with no
 * optimizer so far; selects that loop as an optimizer step would (until one comes). */
void tracer_on_loader_step(void);
/* The core's data hook (a gather or host-to-device copy): once the loop is found, a thread
 * without traced frames (or only a producer's found at a hand-over) gets its innermost user
 * function traced from then on (a producer thread's), once per thread and session. */
void tracer_on_data_op(void);
/* The program's own producer call on this thread, GIL held (a Queue.put, Event.set or
 * Condition.notify that user code made): as tracer_on_data_op, its innermost user function
 * traced from then on. `child`: in a process of the program's that feeds the loop's process
 * (a multiprocessing.Queue.put there), where no loop is looked for. 1 when one was selected. */
int tracer_on_producer_call(int child);
/* Whether this thread still looks for its producer function (tracer_on_producer_call's checks
 * alone: the caller's frame walk can be skipped when not). */
int tracer_producer_may_select(int child);
/* A function submitted to a thread pool once the loop is found: its code, when it is the
 * user's, is traced wherever it runs (ROLE_PIPELINE). 1 when selected now. */
int tracer_on_submitted(PyObject* code);
/* Installs the frame-evaluation hook (idempotent); 0, or -1 with an exception set when another
 * hook that gnnprof cannot chain is present. */
int tracer_install(void);
/* Ends the calling thread's open lines and takes the hook out again (gnnprof.stop(),
 * benchmarks); another thread still tracing stops at its next trace event. Selections are kept: tracer_install() resumes them. */
void tracer_uninstall(void);
/* A session (re)started: auto selection looks for the training loop again on every thread. */
void tracer_new_session(void);
/* Puts the hook back when anything is selected (or an explicit decider is set); 0 or -1. */
int tracer_resume(void);
/* Counters for tests and the collector note: a dict. */
PyObject* tracer_stats(void);
/* [(filename, name, qualname (None on 3.10), roles, first line)] of every code object selected so far. */
PyObject* tracer_selected(void);
/* In a fork child whose own session just started: the parent's open lines are forgotten
 * without events, and the hook goes in when auto selection is on. A DataLoader worker
 * (`worker`): the user code any data loader calls joins the pipeline (there is no loop here to
 * look for); else (a multiprocessing.Process that trains) auto selection looks for its loop
 * anew. 0, or -1 with an exception set. */
int tracer_enter_fork_child(int worker);
/* The calling thread exists to feed the loop (gnnprof.prefetch's staging thread): the user
 * code a data loader calls there joins the pipeline, as in a worker process. */
void tracer_feeds_loop_thread(void);
/* Whether auto selection found the training loop on the calling thread: 1 yes, 0 on another
 * thread, -2 not yet (it looks for it), -1 not known (no auto selection, or no tracer). */
int tracer_loop_thread(void);
/* Zero-code prefetch of a batch generator (GNNPROF_PREFETCH_GENERATORS, which gnnprof ab sets
 * when its first run found the loop pulling from one): each call of a generator function whose
 * (co_filename, co_qualname) is in `targets` (a list of 2-tuples of str) returns wrap(gen)
 * instead of the generator, and a frame hook goes in now (3.12 and 3.13: one for this alone).
 * 1 when set; 0 where this tracer cannot see a generator made (CPython 3.10 makes it without
 * evaluating a frame; 3.14's frames are not read here); -1 with an exception set. */
int tracer_prefetch_generators(PyObject* targets, PyObject* wrap);
/* Ends the calling thread's open lines (before the session stops). */
void tracer_close_thread(void);
/* After sys.settrace(None) on the calling thread (CPython 3.10/3.11 keep the tracer in the
 * slot it empties: a debugger's `continue`, a library switching its own tracer off): tracing
 * goes on while a traced frame still runs on the thread. 1 when taken back, else 0. */
int tracer_retake_thread(void);

#endif /* GNNPROF_PY_TRACER_H_ */
