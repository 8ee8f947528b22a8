/* plugin_abi.h — the C ABI between the preload library and the libraries it reaches with
 * dlopen/dlsym: the torch observer and CUPTI plugins (which the preload loads), and the Python
 * package's native module (which finds the preload's own entry points). Each side includes this
 * header: the plugins define these functions, the callers take their pointer types from the
 * declarations here, so a changed signature fails to compile on both sides.
 *
 * Plain C, no gnnprof types: the plugins are built against libtorch or CUPTI and may come from
 * another build than the preload; every function is noexcept in effect and reports failure in
 * its return value and `reason`. */
#ifndef GNNPROF_INSTRUMENT_PLUGIN_ABI_H_
#define GNNPROF_INSTRUMENT_PLUGIN_ABI_H_

#define GNNPROF_PLUGIN_EXPORT __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/* ---- libgnnprof_torch_observer.so ---- */

/* gnnprof_torch_observe's flags. */
enum {
  GNNPROF_TORCH_OP_STAGES = 1 << 0, /* a stage per observed torch op */
  GNNPROF_TORCH_NO_PHASES = 1 << 1, /* no forward/backward/optimizer stages: the program has its own */
  GNNPROF_TORCH_NO_MARKS = 1 << 2,  /* no iteration marks at optimizer steps: the program calls GNNPROF_STEP */
};

/* Installs the RecordFunction callbacks once per process. 0 on success; else -1 with the
 * reason in `reason`. */
GNNPROF_PLUGIN_EXPORT int gnnprof_torch_observe(int flags, unsigned long long gather_min_bytes, char* reason,
                                                unsigned long reason_size);
/* Closes the calling thread's open op ranges (at exit, before the last flush). */
GNNPROF_PLUGIN_EXPORT void gnnprof_torch_close_thread(void);
/* The process is a DataLoader worker from now on (a spawned one; a fork child is one at the
 * fork): the calling thread starts afresh, no phase spans the wait between batches, and op
 * sampling starts over at the first batch. */
GNNPROF_PLUGIN_EXPORT void gnnprof_torch_become_worker(void);
/* A fork child that runs a program of its own (a multiprocessing.Process's target that trains):
 * the loop's rules, not a worker's (a fork child takes a worker's at the fork). */
GNNPROF_PLUGIN_EXPORT void gnnprof_torch_become_fork_loop(void);
/* The CUPTI plugin's external-correlation hooks, pushed around each op (NULL to remove). */
GNNPROF_PLUGIN_EXPORT void gnnprof_torch_set_correlation(void (*push)(unsigned long long), void (*pop)(void));
/* The preload's poll point for a host without gnnprof threads (NULL to remove). */
GNNPROF_PLUGIN_EXPORT void gnnprof_torch_set_poll(void (*poll)(int at_mark));
/* The calling thread enters (1) or leaves (0) a torch.nn.Module's call (the Python package's
 * module hooks): ops inside one are its forward, those on tensors needing no grad too. */
GNNPROF_PLUGIN_EXPORT void gnnprof_torch_module(int enter);
/* The calling thread enters (1) or leaves (0) torch.autograd.backward (the Python package's
 * wrapper): the loop's backward phase spans the call, and ends with it. */
GNNPROF_PLUGIN_EXPORT void gnnprof_torch_backward(int enter);
/* The calling thread enters (1) or leaves (0) a gradient clipping call (torch.nn.utils'
 * clip_grad_norm_ / clip_grad_value_, the package's wrappers): a scope of its own, as a
 * record_function would be, so that its no-grad ops are not the loop's data work. */
GNNPROF_PLUGIN_EXPORT void gnnprof_torch_grad_clip(int enter);
/* The traced training loop's frame leaves (0) or re-enters (1) its loop statement (the Python
 * tracer): OpClassifier::on_loop. At a re-entry: 1 when the time since leaving was dropped, 0
 * when an iteration mark came between (that loop is not the training loop), -1 otherwise. */
GNNPROF_PLUGIN_EXPORT int gnnprof_torch_loop(int enter);
/* The calling thread enters (1) or leaves (0) a stage of the program's own (gnnprof.stage):
 * as a record_function scope, so that the phases and gathers inside it nest in it. 1 when the
 * observer took it (its end then too); 0: the caller records it (gnnprof_stage_begin/_end).
 * category NULL: the one its name implies. */
GNNPROF_PLUGIN_EXPORT int gnnprof_torch_user_scope(const char* name, const char* category, int enter);
/* The program's own iteration mark (gnnprof.step()) on the calling thread: the observer's
 * optimizer-step marks stop. 1 when the observer marked it; 0: the caller marks it. */
GNNPROF_PLUGIN_EXPORT int gnnprof_torch_user_step(void);
/* Whether the ops of the iteration now running are observed (iteration sampling): 1 or 0; -1
 * when no session runs. What the program records of its own beside the observer's gathers
 * (numpy memmap reads) follows it, so that the reports scale both alike. */
GNNPROF_PLUGIN_EXPORT int gnnprof_torch_observing(void);
/* A linked program's own observe_ops options, for the preload's observer it records into
 * (GNNPROF_TORCH_NO_PHASES: its stages name the phases; GNNPROF_TORCH_NO_MARKS: it marks its
 * iterations): for threads whose first op comes later, and the calling thread's from now on
 * when it has no op open. */
GNNPROF_PLUGIN_EXPORT void gnnprof_torch_configure(int flags);

/* ---- libgnnprof_cupti.so ---- */

/* Subscribes to CUPTI's activity API. 0 on success; else -1 with the reason in `reason` (the
 * plugin has then noted the "cupti" collector itself). */
GNNPROF_PLUGIN_EXPORT int gnnprof_cupti_start(char* reason, unsigned long reason_size);
/* Forces CUPTI's completed buffers out (before a flush of the profile). */
GNNPROF_PLUGIN_EXPORT void gnnprof_cupti_flush(void);
/* Links the GPU work queued until the matching pop to `id` (an op's or a line's). */
GNNPROF_PLUGIN_EXPORT void gnnprof_cupti_push_external(unsigned long long id);
GNNPROF_PLUGIN_EXPORT void gnnprof_cupti_pop_external(void);

/* ---- libgnnprof_preload.so, for the Python package ---- */

/* Threadless mode's poll point: drains and flushes when due, or starts gnnprof's threads once
 * the host has its own. at_mark 1 at an iteration mark. Returns 0. */
GNNPROF_PLUGIN_EXPORT int gnnprof_preload_poll(int at_mark);
/* Looks for libtorch and the CUDA runtime now (the Python package calls it after `import
 * torch`). 1: nothing is left to watch for; 0: not yet (or another thread is looking); -1: no
 * active preload in this process. */
GNNPROF_PLUGIN_EXPORT int gnnprof_preload_attach(void);
/* Looks for libtorch now, waiting (at most ~10 s) for another thread's look, and says what the
 * torch op observer does: 1 it observes; 2 torch is loaded but the observer is off (the
 * collector list says why); 0 torch is not loaded; -1 no active preload in this process; -2
 * the other thread's look took longer. */
GNNPROF_PLUGIN_EXPORT int gnnprof_preload_torch_state(void);
/* gnnprof_torch_module when the observer runs; else nothing. */
GNNPROF_PLUGIN_EXPORT void gnnprof_preload_torch_module(int enter);
/* gnnprof_torch_backward when the observer runs; else nothing. */
GNNPROF_PLUGIN_EXPORT void gnnprof_preload_torch_backward(int enter);
/* gnnprof_torch_grad_clip when the observer runs; else nothing. */
GNNPROF_PLUGIN_EXPORT void gnnprof_preload_torch_grad_clip(int enter);
/* gnnprof_torch_loop when the observer runs; else -1. */
GNNPROF_PLUGIN_EXPORT int gnnprof_preload_torch_loop(int enter);
/* gnnprof_torch_user_scope when the observer runs; else 0. */
GNNPROF_PLUGIN_EXPORT int gnnprof_preload_torch_user_scope(const char* name, const char* category, int enter);
/* gnnprof_torch_user_step when the observer runs; else 0. */
GNNPROF_PLUGIN_EXPORT int gnnprof_preload_torch_user_step(void);
/* gnnprof_torch_observing when the observer runs; else -1. */
GNNPROF_PLUGIN_EXPORT int gnnprof_preload_torch_observing(void);
/* gnnprof_torch_configure when the observer runs (after the look for torch): 1; else 0. */
GNNPROF_PLUGIN_EXPORT int gnnprof_preload_torch_configure(int flags);
/* A DataLoader worker's own session, written to its own file at stop and naming parent_pid (the
 * process's parent when <= 0) as the loop it works for: in a fork() child, threadless while it is
 * single-threaded; in a spawned process, its session so far dropped (gnnprof_start_worker). 0 on
 * success; -1 without an active preload or outside those two cases. */
GNNPROF_PLUGIN_EXPORT int gnnprof_preload_start_worker(long parent_pid);
/* A fork() child's own session as a program of its own (gnnprof_start_in_fork_child), with the
 * torch observer's loop rules: a multiprocessing.Process forked to train. Threadless while it
 * is single-threaded. 0 on success; -1 without an active preload or outside a fork child of a
 * running session. */
GNNPROF_PLUGIN_EXPORT int gnnprof_preload_start_fork_child(void);
/* Before a session stops outside the process's exit (a DataLoader worker's finalizer): closes
 * the calling thread's open torch phase and notes the op sampler's final word, as the exit
 * flush does. */
GNNPROF_PLUGIN_EXPORT void gnnprof_preload_close_torch_thread(void);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* GNNPROF_INSTRUMENT_PLUGIN_ABI_H_ */
