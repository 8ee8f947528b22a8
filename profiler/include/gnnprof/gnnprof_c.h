/* gnnprof/gnnprof_c.h — the C ABI of gnnprof.
 *
 * For the injected preload library, ctypes and other languages. Every function is noexcept in
 * C++ terms: no exception ever crosses this boundary, and a call on a disabled or stopped
 * session is a cheap no-op. Names passed in are copied at registration; ids are stable for
 * the life of the process.
 *
 *   gnnprof_site_t fwd = gnnprof_stage_site("forward", NULL);
 *   gnnprof_stage_begin(fwd);
 *   run_forward();
 *   gnnprof_stage_end();
 *   gnnprof_step();
 */
#ifndef GNNPROF_GNNPROF_C_H_
#define GNNPROF_GNNPROF_C_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GNNPROF_C_API __attribute__((visibility("default")))
#else
#define GNNPROF_C_API
#endif

typedef uint32_t gnnprof_site_t; /* 0 means "no site" */

/* Directions, host memory kinds and copy modes for gnnprof_transfer(). */
enum { GNNPROF_H2D = 0, GNNPROF_D2H = 1, GNNPROF_D2D = 2, GNNPROF_H2H = 3 };
enum { GNNPROF_PAGEABLE = 0, GNNPROF_PINNED = 1, GNNPROF_NO_HOST_MEMORY = 2 };
enum { GNNPROF_SYNC = 0, GNNPROF_ASYNC = 1 };

/* Session. start() reads the environment (GNNPROF_ENABLED, GNNPROF_OUTPUT, ...); returns 0 on
 * success or when already running, 1 when disabled, -1 on error. stop() drains, writes the
 * profile and returns 0, or -1 when the profile could not be written (one warning on stderr). */
GNNPROF_C_API int gnnprof_start(void);
GNNPROF_C_API int gnnprof_stop(void);
GNNPROF_C_API int gnnprof_is_running(void);

/* Interned sites for run-time names. category may be NULL (derived from the name). */
GNNPROF_C_API gnnprof_site_t gnnprof_stage_site(const char* name, const char* category);
GNNPROF_C_API gnnprof_site_t gnnprof_counter_site(const char* name);

/* Ranges nest per thread; end() closes the innermost range begun by begin(). */
GNNPROF_C_API int gnnprof_stage_begin(gnnprof_site_t site);
GNNPROF_C_API void gnnprof_stage_end(void);

/* Iteration boundary: ends the open iteration (if any) and begins the next. */
GNNPROF_C_API void gnnprof_step(void);
/* Ends the open iteration without beginning another (e.g. before validation). */
GNNPROF_C_API void gnnprof_step_end(void);
/* gnnprof_step() for an iteration with facts to note: GNNPROF_STEP_OPS_UNOBSERVED = the torch
 * op observer does not observe ops in the iteration that begins (iteration sampling). */
#define GNNPROF_STEP_OPS_UNOBSERVED 1u
/* ... GNNPROF_STEP_BY_LOADER = a DataLoader's __next__ marked it (a loop with no optimizer so
 * far): left out of the analysis (complete: false) when the run also has iterations marked
 * otherwise (an evaluation over a DataLoader before the training loop). */
#define GNNPROF_STEP_BY_LOADER 2u
/* ... GNNPROF_STEP_DROP_OPEN = the open iteration that this mark ends was no iteration (the time
 * from a training loop's last step to its next pass: an evaluation, the next epoch's start):
 * its time stays out of the iterations. Also for gnnprof_step_end_flags. */
#define GNNPROF_STEP_DROP_OPEN 4u
GNNPROF_C_API void gnnprof_step_flags(unsigned flags);
GNNPROF_C_API void gnnprof_step_end_flags(unsigned flags);

GNNPROF_C_API void gnnprof_transfer(uint64_t bytes, int direction, int host_memory, int mode,
                                    uint64_t duration_ns);
GNNPROF_C_API void gnnprof_materialize(uint64_t rows, uint64_t bytes);
GNNPROF_C_API void gnnprof_counter(gnnprof_site_t site, double value);
GNNPROF_C_API void gnnprof_set_thread_name(const char* name);

/* For another copy of the core in the process (a program linked with libgnnprof, run under
 * `gnnprof run`, writing where the preload writes): it forwards its sites and events here, so
 * the process writes one profile.
 * kind: 1 stage, 2 line, 3 counter, 4 materialize (gnnprof::SiteKind); "" or NULL strings are empty. */
GNNPROF_C_API gnnprof_site_t gnnprof_site_register(int kind, const char* name, const char* category, const char* file,
                                                   const char* function, const char* code, unsigned line);
GNNPROF_C_API int gnnprof_range_begin(gnnprof_site_t site, int is_line); /* ended by gnnprof_stage_end */
/* 1 when this copy forwards to the preload's session (starting it from the environment first):
 * the preload's torch observer already watches the process, so a linked one stays out. */
GNNPROF_C_API int gnnprof_forwarding(void);
/* While this copy forwards: the program's observe_ops options (GNNPROF_TORCH_NO_PHASES,
 * GNNPROF_TORCH_NO_MARKS, as the torch plugin's flags) for the preload's observer. 1 when it
 * took them; 0 otherwise. */
GNNPROF_C_API int gnnprof_forward_torch_options(int flags);
GNNPROF_C_API void gnnprof_materialize_at(gnnprof_site_t site, uint64_t rows, uint64_t bytes);

/* Writes the profile so far (drained, built and written via temp file + rename) while the
 * session keeps running: what a later SIGKILL leaves behind. 0 on success, -1 otherwise. */
GNNPROF_C_API int gnnprof_flush(void);

/* For a session that runs without the drainer thread (Config::drainer_thread = false; the
 * preload while its host is single-threaded): call from the recording thread at quiet points
 * (an iteration boundary). Drains the rings into the aggregate when the drain period has
 * passed or the caller's ring is over a quarter full, and, when allow_flush is non-zero, writes
 * the periodic flush when due (flush_interval_ms, and at least 1000x the last flush's duration
 * apart). After twice the flush interval (at least 2 s) with no allow_flush call, every call
 * counts as one: a host without quiet points still drains and flushes. One clock read when
 * nothing is due; never waits for a lock. 1 if it did work. */
GNNPROF_C_API int gnnprof_poll(int allow_flush);
/* Starts the drainer thread of a session that runs without one. 0 on success. */
GNNPROF_C_API int gnnprof_start_drainer(void);
/* Writes the profile so far from a child created by _Fork() in a signal handler of the
 * session's process parent_pid (the preload's SIGTERM flush when it has no thread). Takes no
 * lock that the interrupted thread may hold: -1 instead. The file is the parent's. */
GNNPROF_C_API int gnnprof_flush_in_fork_child(long parent_pid);
/* In a fork() child of a process whose session was running (the child's is stopped at the
 * fork): starts a session of the child's own with the parent's configuration, written to the
 * child's own file (the output pattern's %p) when it stops. The collectors noted so far are
 * kept. The child is a program of its own (a multiprocessing.Process that trains): its run names
 * no parent (gnnprof_start_worker's does). 0 on success, -1 elsewhere (not a child of a running
 * session, or already started). */
GNNPROF_C_API int gnnprof_start_in_fork_child(int drainer_thread);
/* A worker's session from now on, naming parent_pid (the process's parent when <= 0) as the
 * process it works for: in a fork() child of a running session, as gnnprof_start_in_fork_child,
 * or where this process's own session already runs (a spawned DataLoader worker: what that
 * session recorded is dropped, the worker's starts now). 0 on success, -1 elsewhere. */
GNNPROF_C_API int gnnprof_start_worker(long parent_pid, int drainer_thread);
/* Stops the session without writing its profile, and removes the file a periodic flush of it
 * wrote (a worker beyond the run's first N). 0 when none runs afterwards. */
GNNPROF_C_API int gnnprof_discard(void);
/* The process's place in a distributed run, learned after the session started (the Python
 * package calls it after torch.distributed.init_process_group, for ranks started without RANK
 * in their environment, e.g. by torch.multiprocessing.spawn): the profile's run block and its
 * file name (%R, %r) follow, and a file a periodic flush wrote under the rankless name moves there.
 * Negative values (world_size <= 0) leave a field as it is. 0 on success. */
GNNPROF_C_API int gnnprof_set_rank(int rank, int local_rank, int world_size);

/* A DataLoader worker's loader, as its profile's run.loader: one string per DataLoader object of
 * the loop's process (the Python package writes its kind, batch size, workers and id), so that
 * the loop's report tells a training loader's workers from a validation loader's. 0 on success,
 * -1 where no session of this process runs. */
GNNPROF_C_API int gnnprof_set_loader(const char* loader);

/* A producer process of the program's own: the pid of the process it hands its batches to, as
 * its profile's run.feeds_pid, so that the loop's report reads this profile beside its own.
 * 0 on success, -1 where no session of this process runs. */
GNNPROF_C_API int gnnprof_set_feeds(long pid);

/* Declares a collector in the profile's "collectors" list (replacing one of the same name),
 * e.g. ("cupti", 0, "no CUDA driver (cuptiActivityEnable: CUPTI_ERROR_UNKNOWN)"). May be called
 * before the session starts. */
GNNPROF_C_API void gnnprof_note_collector(const char* name, int enabled, const char* reason);

/* The GNNPROF_* variables through one table and parser (gnnprof/config.h): the value, or the
 * table's default when unset or bad (a bad value warns once on stderr). gnnprof_config_string
 * copies the value (or default) into buf, NUL-terminated, and returns 1 when the variable is
 * set. */
GNNPROF_C_API int gnnprof_config_bool(const char* name);
GNNPROF_C_API unsigned long long gnnprof_config_count(const char* name);
/* The same for a count whose default is the caller's (the table says "the code's"). */
GNNPROF_C_API unsigned long long gnnprof_config_count_or(const char* name, unsigned long long code_default);
GNNPROF_C_API int gnnprof_config_string(const char* name, char* buf, unsigned long size);
/* For a value with its own grammar: "gnnprof: ignoring NAME=VALUE (expected EXPECTED); using
 * USING", once per variable and value, unless GNNPROF_QUIET. */
GNNPROF_C_API void gnnprof_config_warn(const char* name, const char* value, const char* expected, const char* using_instead);

/* A block trial (gnnprof/block_trial.h): tries `arms` settings on a loop's own iterations and
 * keeps the fastest. gnnprof_trial_iteration is called at each iteration's start with a
 * monotonic time in ns and returns the arm to switch to, or -1. gnnprof_trial_chosen: the
 * chosen arm once decided, else -1. Not thread-safe: one loop thread per trial. */
typedef struct gnnprof_trial gnnprof_trial;
GNNPROF_C_API gnnprof_trial* gnnprof_trial_new(int arms, int warmup, int block, int rounds, double min_gain);
GNNPROF_C_API int gnnprof_trial_iteration(gnnprof_trial* trial, uint64_t now_ns);
GNNPROF_C_API void gnnprof_trial_restart(gnnprof_trial* trial);
GNNPROF_C_API int gnnprof_trial_chosen(const gnnprof_trial* trial);
GNNPROF_C_API uint64_t gnnprof_trial_median_ns(const gnnprof_trial* trial, int arm);
GNNPROF_C_API int gnnprof_trial_measured(const gnnprof_trial* trial, int arm); /* iterations measured */
GNNPROF_C_API void gnnprof_trial_free(gnnprof_trial* trial);

/* Lanes: timelines that belong to no host thread (a GPU stream, cross-thread NVTX ranges),
 * filled with events that carry their own CLOCK_MONOTONIC timestamps. A lane shows in the
 * profile as a thread with that name. Lane calls are serialized internally (not a hot path).
 * ctx is the stage site that caused the event (e.g. the op that launched a kernel), or 0. */
/* Copies a site's name into buf (NUL-terminated, truncated to n-1); returns its length, or -1
 * for an unknown site. */
GNNPROF_C_API int gnnprof_site_name(gnnprof_site_t site, char* buf, unsigned long n);

typedef uint32_t gnnprof_lane_t; /* 0 means "no lane" */
GNNPROF_C_API gnnprof_lane_t gnnprof_lane(const char* name);
GNNPROF_C_API void gnnprof_lane_range(gnnprof_lane_t lane, gnnprof_site_t site, gnnprof_site_t ctx,
                                      int64_t begin_mono_ns, int64_t end_mono_ns);
GNNPROF_C_API void gnnprof_lane_transfer(gnnprof_lane_t lane, gnnprof_site_t ctx, uint64_t bytes, int direction,
                                         int host_memory, int mode, int64_t begin_mono_ns, int64_t end_mono_ns);
/* One GPU kernel, for the per-kernel table (`kernels` in the profile): kernel is a site named
 * after the kernel (gnnprof_stage_site(name, "kernel")), stage and op the sites of the stage and
 * the op that launched it (0 if unknown). Statistics only: record the kernel's time on the
 * lane with gnnprof_lane_range too. */
GNNPROF_C_API void gnnprof_lane_kernel(gnnprof_lane_t lane, gnnprof_site_t kernel, gnnprof_site_t stage,
                                       gnnprof_site_t op, int64_t begin_mono_ns, int64_t end_mono_ns);

/* Line tracing from outside C/C++ (the Python package's tracer). A line site names a statement:
 * its file, first line, function and text. gnnprof_set_line() makes `site` the calling thread's
 * current line (0: none), so that transfers, materializations and stage time recorded from now
 * on are attributed to it, and returns gnnprof_now(). gnnprof_line_event() records one
 * execution of a line from `begin` to `end` (gnnprof_now() values), counted as a hit unless
 * `hit` is 0 (a generator resumed at its yield continues its line); GNNPROF_LINE_BEGAN or-ed
 * into `hit` says that tracing began during this statement, in a frame already running (the
 * frame's earlier statements ran untraced). A GNNPROF_LINE open on the thread takes precedence
 * over the current line. */
GNNPROF_C_API gnnprof_site_t gnnprof_line_site(const char* file, unsigned line, const char* function, const char* code);
GNNPROF_C_API uint64_t gnnprof_now(void);
GNNPROF_C_API uint64_t gnnprof_set_line(gnnprof_site_t site);
/* Or-ed into gnnprof_set_line's site: a line of the loop's data pipeline (a batch generator),
 * where a line watch (below) does not fire. */
#define GNNPROF_DATA_LINE 0x80000000u
/* Calls fn once, on this thread, at its next gnnprof_set_line() of a line that is not a data
 * pipeline's (then forgets it; NULL disarms). The torch observer ends a data phase that
 * torch ops opened there, so that the loop's plain Python after them is not data. */
GNNPROF_C_API void gnnprof_watch_next_line(void (*fn)(void));
#define GNNPROF_LINE_BEGAN 2
GNNPROF_C_API void gnnprof_line_event(gnnprof_site_t site, uint64_t begin, uint64_t end, int hit);
/* gnnprof_line_event with what ran under the statement: `nested`, the part of begin..end (in
 * gnnprof_now() units) spent in traced lines of functions it called or generators it resumed,
 * and `caller`, the line site of the traced statement that called this line's function (0:
 * none), e.g. a loop's header for its batch generator's lines. */
GNNPROF_C_API void gnnprof_line_event_nested(gnnprof_site_t site, uint64_t begin, uint64_t end, int hit,
                                             uint64_t nested, gnnprof_site_t caller);
/* The calling thread's current line (GNNPROF_LINE or gnnprof_set_line), 0 if none. */
GNNPROF_C_API gnnprof_site_t gnnprof_current_line(void);
/* 1 when `line` and `anchor` are lines of one function of one file, `line` below `anchor`
 * (the torch observer: a loop's statements after its backward call) and, when that function's
 * training loop is known (gnnprof_set_loop_extent), both inside it; else 0. */
GNNPROF_C_API int gnnprof_line_after(gnnprof_site_t line, gnnprof_site_t anchor);
/* The lines of a function's training loop (the Python tracer, when it selects the loop). */
GNNPROF_C_API void gnnprof_set_loop_extent(const char* file, const char* function, unsigned first, unsigned last);
/* While `line` was current, its thread ran `function` of `file`, user code that is not traced
 * (the Python tracer: what `--lines FILE` would add). The first call per line is kept. */
GNNPROF_C_API void gnnprof_line_callee(gnnprof_site_t line, const char* file, const char* function);
/* The calling thread's current line in its training loop's function (the Python tracer sets it
 * at each of that function's lines), 0 if none: the loop's statement that a helper runs under
 * (a Trainer's `loss = self.step(batch)`) while the current line is the helper's. */
GNNPROF_C_API void gnnprof_set_loop_line(gnnprof_site_t site);
GNNPROF_C_API gnnprof_site_t gnnprof_loop_line(void);
/* 1 when `stage` is a stage site of category "data" (named so, or by its name: "sample", a
 * DataLoader's scope), else 0. */
GNNPROF_C_API int gnnprof_stage_is_data(gnnprof_site_t stage);
/* The torch observer's counters "off-CPU ns: <stage>": per data stage on the process's main
 * thread (the loop's), its own wall time less the thread's CPU time in it, a data stage nested
 * in it left to its own counter (sleeping, blocked in I/O): time that holds no GIL. */
#define GNNPROF_OFF_CPU_COUNTER_PREFIX "off-CPU ns: "
/* The Python tracer's data stage of a training loop's coroutine suspended at an await (the
 * observer's scope where it runs): the tracer samples its off-CPU counter itself. */
#define GNNPROF_AWAIT_STAGE "await"
/* 1 once any thread has set a line with gnnprof_set_line(). */
GNNPROF_C_API int gnnprof_lines_traced(void);
/* Charges the time of stage `stage` from begin to end (CLOCK_MONOTONIC ns) to `line`, e.g. an
 * autograd backward node to the forward line that built it (the torch observer). */
GNNPROF_C_API void gnnprof_line_charge(gnnprof_site_t line, gnnprof_site_t stage, int64_t begin_mono_ns,
                                       int64_t end_mono_ns);
/* A rendezvous between the torch observer and the Python tracer: the observer calls
 * gnnprof_optimizer_step() on the thread that starts an optimizer step, which calls the hook
 * set with gnnprof_set_optimizer_step_hook() (NULL: none). */
GNNPROF_C_API void gnnprof_set_optimizer_step_hook(void (*hook)(void));
GNNPROF_C_API void gnnprof_optimizer_step(void);
/* The same rendezvous for a loop with no optimizer so far (an inference loop): the observer
 * calls gnnprof_loader_step() where a DataLoader's __next__ begins an iteration, which calls the
 * hook set with gnnprof_set_loader_step_hook() (NULL: none). */
GNNPROF_C_API void gnnprof_set_loader_step_hook(void (*hook)(void));
GNNPROF_C_API void gnnprof_loader_step(void);
/* Called by gnnprof_materialize() and by gnnprof_transfer() of a host-to-device copy (the
 * Python tracer looks for the user code of a producer thread there; its own thread-local
 * checks come first); NULL: none. */
GNNPROF_C_API void gnnprof_set_data_hook(void (*hook)(void));
/* gnnprof_lane_kernel() with the line that launched the kernel (0 if unknown). */
GNNPROF_C_API void gnnprof_lane_kernel_at(gnnprof_lane_t lane, gnnprof_site_t kernel, gnnprof_site_t stage,
                                          gnnprof_site_t op, gnnprof_site_t line, int64_t begin_mono_ns,
                                          int64_t end_mono_ns);

#ifdef __cplusplus
}
#endif

#endif /* GNNPROF_GNNPROF_C_H_ */
