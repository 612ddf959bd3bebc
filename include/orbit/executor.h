/* SPDX-License-Identifier: MIT */
/*
 * orbit/executor.h: the one interface through which lib/ components hand
 * work to threads they do not own. A state lane posts its turns through
 * it, a serial queue schedules its drain loop through it, and the worker
 * pool (orbit/worker_pool.h) is its standard implementation. Tests and
 * embedders may supply their own (an event loop, a single thread).
 */
#ifndef ORBIT_EXECUTOR_H
#define ORBIT_EXECUTOR_H

#include <orbit/common.h>

ORBIT_BEGIN_DECLS

/* One unit of scheduled work. Runs once, on a thread of the executor. */
typedef void (*orbit_task_fn)(void *arg);

/*
 * An executor: submit(ctx, fn, arg) arranges for fn(arg) to run once,
 * later, on a thread of the executor, never on the caller's stack.
 * submit returns 0, or a negative errno (-EPIPE once shut down, -ENOMEM)
 * in which case fn will not run. It may be called from any thread,
 * including from inside a running task. home_node is a NUMA node hint
 * (-1: no preference) that an executor may ignore.
 */
typedef struct orbit_executor {
	int (*submit)(void *ctx, orbit_task_fn fn, void *arg, int home_node);
	void *ctx;
} orbit_executor_t;

ORBIT_END_DECLS

#endif /* ORBIT_EXECUTOR_H */
