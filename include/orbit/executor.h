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

/* No home node preference: the home_node argument of submit(). */
#define ORBIT_NODE_ANY (-1)

/*
 * The home node field of an options struct (state lane, serial queue,
 * Spot/Actor/session coordinators) holds node + 1, so that zero, the
 * default, means "no home node": a designated initializer that leaves the
 * field out never pins work to node 0. Write ORBIT_HOME_NODE(n) for node
 * n, ORBIT_HOME_NODE_NONE (or nothing) for none. A negative value (a 0.1
 * program's ORBIT_NODE_ANY) also means none.
 */
#define ORBIT_HOME_NODE_NONE 0
#define ORBIT_HOME_NODE(n) ((int)(n) + 1)

/*
 * orbit_home_node_id - the node an options struct's home field names, as
 * submit() takes it: ORBIT_NODE_ANY for ORBIT_HOME_NODE_NONE or a
 * negative value, else the node number.
 * Context: any thread; pure.
 */
static inline int orbit_home_node_id(int home)
{
	return home > 0 ? home - 1 : ORBIT_NODE_ANY;
}

/* One unit of scheduled work. Runs once, on a thread of the executor. */
typedef void (*orbit_task_fn)(void *arg);

/*
 * An executor: submit(ctx, fn, arg) arranges for fn(arg) to run once,
 * later, on a thread of the executor, never on the caller's stack.
 * submit returns 0, or a negative errno (-EPIPE once shut down, -ENOMEM;
 * a worker pool's also -ECHILD in a forked child, see orbit/worker_pool.h)
 * in which case fn will not run. It may be called from any thread,
 * including from inside a running task. home_node is a NUMA node number
 * (ORBIT_NODE_ANY, -1: no preference; not the +1 encoding of the options
 * structs) that an executor may ignore.
 */
typedef struct orbit_executor {
	int (*submit)(void *ctx, orbit_task_fn fn, void *arg, int home_node);
	void *ctx;
} orbit_executor_t;

ORBIT_END_DECLS

#endif /* ORBIT_EXECUTOR_H */
