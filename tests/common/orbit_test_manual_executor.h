/* SPDX-License-Identifier: MIT */
/*
 * tests/common/orbit_test_manual_executor.h: an orbit_executor_t whose
 * tasks wait until the test runs them, in FIFO order, on the test's own
 * thread (manual_run_one / manual_run_all). Deterministic tests drive a
 * serial queue's drains with it: nothing runs behind the test's back.
 * Holds up to MANUAL_EX_SLOTS pending tasks (submit returns -ENOMEM past
 * that); `refuse`, when non-zero, is what submit returns instead of
 * accepting (an executor that fails to schedule); `submits` counts the
 * tasks accepted, `last_node` is the home_node of the last one;
 * `run_inline`, when set (manual_set_inline), makes submit run every
 * pending task on the submitter's stack before it returns: an
 * executor that breaks the contract of orbit/executor.h on purpose, so a
 * test can put a drain inside whatever turn its submitter holds. Submit
 * may be called from any thread (a mutex guards the ring); the run
 * functions belong to one thread at a time. Header-only: every function
 * is static inline.
 */
#ifndef ORBIT_TEST_MANUAL_EXECUTOR_H
#define ORBIT_TEST_MANUAL_EXECUTOR_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include <orbit/executor.h>

#define MANUAL_EX_SLOTS 1024

struct manual_ex {
	pthread_mutex_t m; /* protects everything below */
	struct {
		orbit_task_fn fn;
		void *arg;
	} t[MANUAL_EX_SLOTS];
	int head, tail;
	int submits;
	int last_node;	/* home_node argument of the last accepted submit */
	int refuse;	/* when non-zero, submit returns it */
	int run_inline; /* when non-zero, submit runs the pending tasks itself */
};

static inline void manual_run_all_pending(struct manual_ex *x);

static inline int manual_submit(void *ctx, orbit_task_fn fn, void *arg, int node)
{
	struct manual_ex *x = ctx;
	bool run_now;
	int ret = 0;

	pthread_mutex_lock(&x->m);
	if (x->refuse) {
		ret = x->refuse;
	} else if (x->tail - x->head >= MANUAL_EX_SLOTS) {
		ret = -ENOMEM;
	} else {
		x->t[x->tail % MANUAL_EX_SLOTS].fn = fn;
		x->t[x->tail % MANUAL_EX_SLOTS].arg = arg;
		x->tail++;
		x->submits++;
		x->last_node = node;
	}
	run_now = ret == 0 && x->run_inline;
	pthread_mutex_unlock(&x->m);
	if (run_now)
		manual_run_all_pending(x); /* on the submitter's stack: contract broken */
	return ret;
}

/* Make submit run the pending tasks on its caller's stack (@on) or not. */
static inline void manual_set_inline(struct manual_ex *x, int on)
{
	pthread_mutex_lock(&x->m);
	x->run_inline = on;
	pthread_mutex_unlock(&x->m);
}

/* Make submit return @err from now on (0: accept again); any thread. */
static inline void manual_set_refuse(struct manual_ex *x, int err)
{
	pthread_mutex_lock(&x->m);
	x->refuse = err;
	pthread_mutex_unlock(&x->m);
}

/* Tasks submitted and not yet run. */
static inline int manual_pending(struct manual_ex *x)
{
	int n;

	pthread_mutex_lock(&x->m);
	n = x->tail - x->head;
	pthread_mutex_unlock(&x->m);
	return n;
}

/* Run the oldest pending task on this thread; false if there was none. */
static inline bool manual_run_one(struct manual_ex *x)
{
	orbit_task_fn fn = NULL;
	void *arg = NULL;

	pthread_mutex_lock(&x->m);
	if (x->head < x->tail) {
		fn = x->t[x->head % MANUAL_EX_SLOTS].fn;
		arg = x->t[x->head % MANUAL_EX_SLOTS].arg;
		x->head++;
	}
	pthread_mutex_unlock(&x->m);
	if (fn)
		fn(arg);
	return fn != NULL;
}

/* Run tasks, those they submit included, until none is pending. */
static inline void manual_run_all(struct manual_ex *x)
{
	while (manual_run_one(x))
		;
}

static inline void manual_run_all_pending(struct manual_ex *x)
{
	manual_run_all(x);
}

/* Initialise @x (empty, accepting) and return the executor that feeds it. */
static inline orbit_executor_t manual_executor(struct manual_ex *x)
{
	memset(x, 0, sizeof(*x));
	pthread_mutex_init(&x->m, NULL);
	return (orbit_executor_t){ .submit = manual_submit, .ctx = x };
}

#endif /* ORBIT_TEST_MANUAL_EXECUTOR_H */
