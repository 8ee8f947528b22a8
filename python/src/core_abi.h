/* core_abi.h — the gnnprof C ABI as the Python module reaches it: function pointers resolved
 * at bind time from the process (the preload library under `gnnprof run`) or from the preload
 * library the module loads itself, so that one session serves the process either way. */
#ifndef GNNPROF_PY_CORE_ABI_H_
#define GNNPROF_PY_CORE_ABI_H_

#include <stdint.h>

#include "plugin_abi.h" /* instrument/src: the preload's entry points */

#ifndef GNNPROF_DATA_LINE
#define GNNPROF_DATA_LINE 0x80000000u /* as in gnnprof_c.h: set_line of a data pipeline's line */
#endif
#ifndef GNNPROF_STEP_DROP_OPEN
#define GNNPROF_STEP_DROP_OPEN 4u /* as in gnnprof_c.h: step_end_flags' "the open iteration was none" */
#endif
#ifndef GNNPROF_OFF_CPU_COUNTER_PREFIX
#define GNNPROF_OFF_CPU_COUNTER_PREFIX "off-CPU ns: " /* as in gnnprof_c.h */
#endif
#ifndef GNNPROF_AWAIT_STAGE
#define GNNPROF_AWAIT_STAGE "await" /* as in gnnprof_c.h (gnnprof/profile.h: kAwaitStage) */
#endif
#ifndef GNNPROF_LINE_BEGAN
#define GNNPROF_LINE_BEGAN 2 /* as in gnnprof_c.h: or-ed into line_event's hit */
#endif

typedef struct CoreAbi {
  int (*start)(void);
  int (*stop)(void);
  int (*is_running)(void);
  int (*flush)(void);
  uint32_t (*stage_site)(const char* name, const char* category);
  uint32_t (*counter_site)(const char* name);
  int (*stage_begin)(uint32_t site);
  void (*stage_end)(void);
  void (*step)(void);
  void (*step_end)(void);
  void (*transfer)(uint64_t bytes, int direction, int host_memory, int mode, uint64_t duration_ns);
  void (*materialize)(uint64_t rows, uint64_t bytes);
  void (*counter)(uint32_t site, double value);
  void (*set_thread_name)(const char* name);
  void (*note_collector)(const char* name, int enabled, const char* reason);
  uint32_t (*line_site)(const char* file, unsigned line, const char* function, const char* code);
  uint64_t (*now)(void);
  uint64_t (*set_line)(uint32_t site);
  void (*line_event)(uint32_t site, uint64_t begin, uint64_t end, int hit);
  void (*set_optimizer_step_hook)(void (*hook)(void));
  void (*set_loader_step_hook)(void (*hook)(void)); /* or NULL (an older core) */
  unsigned long long (*config_count_or)(const char* name, unsigned long long code_default);
  int (*config_string)(const char* name, char* buf, unsigned long size);
  int (*config_bool)(const char* name);
  __typeof__(&gnnprof_preload_poll) poll;     /* the preload's poll when present (it also starts its threads) */
  __typeof__(&gnnprof_preload_attach) attach; /* the preload's "look for torch/CUDA now", or NULL */
  __typeof__(&gnnprof_preload_start_worker) start_worker;               /* or NULL */
  __typeof__(&gnnprof_preload_start_fork_child) start_fork_child;       /* or NULL */
  int (*discard)(void);                                                 /* or NULL */
  int (*set_rank)(int rank, int local_rank, int world_size);            /* or NULL */
  int (*set_loader)(const char* loader);                                /* or NULL */
  int (*set_feeds)(long pid);                                           /* or NULL */
  void (*set_data_hook)(void (*hook)(void));                            /* or NULL */
  __typeof__(&gnnprof_preload_close_torch_thread) close_torch_thread;   /* or NULL */
  __typeof__(&gnnprof_preload_torch_state) torch_state;                 /* or NULL */
  __typeof__(&gnnprof_preload_torch_module) torch_module;               /* or NULL */
  __typeof__(&gnnprof_preload_torch_backward) torch_backward;           /* or NULL */
  __typeof__(&gnnprof_preload_torch_grad_clip) torch_grad_clip;         /* or NULL */
  __typeof__(&gnnprof_preload_torch_user_scope) torch_user_scope;       /* or NULL */
  __typeof__(&gnnprof_preload_torch_user_step) torch_user_step;         /* or NULL */
  __typeof__(&gnnprof_preload_torch_observing) torch_observing;         /* or NULL */
  __typeof__(&gnnprof_preload_torch_loop) torch_loop;                   /* or NULL */
  void (*set_loop_extent)(const char* file, const char* function, unsigned first, unsigned last); /* or NULL */
  void (*set_loop_line)(uint32_t site);                                                          /* or NULL */
  void (*line_callee)(uint32_t site, const char* file, const char* function);                    /* or NULL */
  void (*line_event_nested)(uint32_t site, uint64_t begin, uint64_t end, int hit, uint64_t nested, uint32_t caller); /* or NULL */
  uint32_t (*site_register)(int kind, const char* name, const char* category, const char* file, const char* function,
                            const char* code, unsigned line); /* or NULL */
  void (*materialize_at)(uint32_t site, uint64_t rows, uint64_t bytes); /* or NULL */
  void (*step_end_flags)(unsigned flags);                               /* or NULL */
  /* The block trial (gnnprof/block_trial.h): all NULL for an older core. */
  void* (*trial_new)(int arms, int warmup, int block, int rounds, double min_gain);
  int (*trial_iteration)(void* trial, uint64_t now_ns);
  void (*trial_restart)(void* trial);
  int (*trial_chosen)(const void* trial);
  uint64_t (*trial_median_ns)(const void* trial, int arm);
  int (*trial_measured)(const void* trial, int arm);
  void (*trial_free)(void* trial);
} CoreAbi;

/* Filled by bind(); every pointer non-NULL once `bound` is 1. */
extern CoreAbi g_core;
extern int g_core_bound;

#endif /* GNNPROF_PY_CORE_ABI_H_ */
