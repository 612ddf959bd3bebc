// SPDX-License-Identifier: MIT
/*
 * lib/actor_executor.c: the Actor coordinator of spec 07 §2-3
 * (ZLinkActorSerialExecutor): one queue, no map. Owns that queue and the
 * Actor's registration information (§7), which its state lane owns with
 * the closed flag; the queue's own close gives -EPIPE to later
 * submissions, so submitting needs no lane turn. A yield keeps the queue
 * (the Actor's claim).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <orbit/spot_executor.h>
#include <orbit/worker_pool.h>

#include "base/options.h"
#include "lib/ownership.h"
#include "lib/serial_executor.h"
#include "lib/serial_queue.h"
#include "lib/sync.h" /* orbit__executor_fork_check() */

struct orbit_actor_serial_executor {
	struct orbit__coord co; /* first: work records point here */
	orbit_serial_queue_t *q;
	/* Owned by co.lane: the registration (§7) and the closed flag. */
	struct orbit__actor_info info;
	bool closed;
};

void orbit_actor_serial_executor_options_init(struct orbit_actor_serial_executor_options *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
}

int orbit_actor_serial_executor_create(const struct orbit_actor_serial_executor_options *user,
				       orbit_actor_serial_executor_t **out)
{
	struct orbit_actor_serial_executor_options opts;
	struct orbit_serial_queue_options qo;
	orbit_actor_serial_executor_t *a;
	char name[64];
	int ret;

	if (!user || !out)
		return -EINVAL;
	ret = ORBIT__OPTS_COPY(&opts, user); /* base/options.h rule */
	if (ret)
		return ret;
	if (!opts.executor.submit)
		return -EINVAL;
	ret = orbit__executor_fork_check(&opts.executor); /* an inherited pool's */
	if (ret)
		return ret;
	a = orbit__coord_alloc(sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->info.actor_id = opts.actor_id;
	orbit_serial_queue_options_init(&qo);
	qo.policy = opts.policy;
	qo.executor = opts.executor;
	qo.home = opts.home;
	qo.name = opts.name ? opts.name : "actor";
	ret = orbit_serial_queue_create(&qo, &a->q);
	if (ret)
		goto err_free;
	orbit__serial_queue_seal(a->q); /* 07 §3 */
	snprintf(name, sizeof(name), "%.48s/lane", qo.name);
	ret = orbit__coord_init(&a->co, name);
	if (ret)
		goto err_queue;
	*out = a;
	return 0;

err_queue:
	orbit_serial_queue_destroy(a->q);
err_free:
	free(a);
	return ret;
}

static int actor_submit(orbit_actor_serial_executor_t *a, unsigned kind, orbit_serial_work_fn fn,
			void *arg, const struct orbit__enq *e, orbit_work_completion_t *done)
{
	struct orbit__work *w;
	int ret;

	if (orbit__coord_fork_check(&a->co))
		return -ECHILD; /* a parent's coordinator (base/fork_guard.h) */
	ret = orbit__work_new(&a->co, fn, arg, done, ORBIT_SERIAL_SUSPEND_HOLD, &w);
	if (ret)
		return ret;
	if (kind == ORBIT_WORK_ACTOR)
		w->info = &a->info;
	return orbit__work_submit(w, kind, e);
}

int orbit_actor_execute_actor(orbit_actor_serial_executor_t *actor, orbit_serial_work_fn fn,
			      void *arg, uint64_t payload_bytes, orbit_work_completion_t *done)
{
	struct orbit__enq e = { .fn = orbit__work_run,
				.how = ORBIT__ENQ_PAYLOAD,
				.payload_bytes = payload_bytes };

	if (!actor || !fn)
		return -EINVAL;
	e.q = actor->q;
	return actor_submit(actor, ORBIT_WORK_ACTOR, fn, arg, &e, done);
}

int orbit_actor_execute_lifecycle(orbit_actor_serial_executor_t *actor, orbit_serial_work_fn fn,
				  void *arg, orbit_work_completion_t *done)
{
	struct orbit__enq e = { .fn = orbit__work_run, .how = ORBIT__ENQ_LIFECYCLE };

	if (!actor || !fn)
		return -EINVAL;
	e.q = actor->q;
	return actor_submit(actor, ORBIT_WORK_LIFECYCLE, fn, arg, &e, done);
}

struct set_info {
	orbit_actor_serial_executor_t *a;
	const void *info;
	size_t len;
};

static int set_info_fn(void *arg)
{
	struct set_info *c = arg;

	ORBIT__ASSERT_ON_LANE(c->a->co.lane);
	if (c->a->closed)
		return -EPIPE;
	return orbit__actor_info_set(&c->a->info, c->info, c->len);
}

int orbit_actor_set_info(orbit_actor_serial_executor_t *actor, const void *info, size_t len)
{
	struct set_info c = { .a = actor, .info = info, .len = len };

	if (!actor || (len && !info))
		return -EINVAL;
	if (orbit__coord_fork_check(&actor->co))
		return -ECHILD; /* a parent's coordinator (base/fork_guard.h) */
	if (len > ORBIT_ACTOR_INFO_MAX)
		return -E2BIG;
	return orbit_state_lane_run(actor->co.lane, set_info_fn, &c);
}

static int close_fn(void *arg)
{
	orbit_actor_serial_executor_t *a = arg;

	ORBIT__ASSERT_ON_LANE(a->co.lane);
	a->closed = true;
	/* Before the queue closes: a submission after close is refused
	 * before it is counted (orbit__work_submit()). */
	orbit__coord_close_hint(&a->co);
	return orbit_serial_queue_close(a->q);
}

int orbit_actor_serial_executor_close(orbit_actor_serial_executor_t *actor)
{
	if (!actor)
		return -EINVAL;
	if (orbit__coord_fork_check(&actor->co))
		return -ECHILD; /* a parent's coordinator (base/fork_guard.h) */
	return orbit_state_lane_run(actor->co.lane, close_fn, actor);
}

int orbit_actor_serial_executor_await_quiescence(orbit_actor_serial_executor_t *actor,
						 int timeout_ms)
{
	if (!actor)
		return -EINVAL;
	return orbit__coord_await(&actor->co, timeout_ms);
}

int orbit_actor_serial_executor_stats(const orbit_actor_serial_executor_t *actor,
				      struct orbit_serial_executor_stats *out)
{
	if (!actor || !out)
		return -EINVAL;
	orbit__coord_stats(&actor->co, out);
	return 0;
}

static int close_cb(void *actor)
{
	return orbit_actor_serial_executor_close(actor);
}

int orbit_actor_serial_executor_destroy(orbit_actor_serial_executor_t *actor)
{
	int ret;

	if (!actor)
		return 0;
	ret = orbit__coord_destroy_begin(&actor->co, close_cb, actor);
	if (ret)
		return ret;
	orbit__queue_free(actor->q);
	orbit__coord_fini(&actor->co);
	free(actor);
	return 0;
}
