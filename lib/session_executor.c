// SPDX-License-Identifier: MIT
/*
 * lib/session_executor.c: the STREAM session coordinator of spec 07 §2-3
 * (ZLinkSessionSerialExecutor): one queue, no map. Decides the lane of
 * each of its four entry points and makes executeFinal the last work:
 *
 *   execute_application     application lane, payload bytes reserved
 *   execute_infrastructure  application lane, fixed cost: FIFO with the
 *                           packets, so a connection state update never
 *                           overtakes data queued before it
 *   execute_control         lifecycle lane: overtakes queued packets
 *   execute_final           lifecycle lane; runs only once everything
 *                           accepted before it has finished
 *
 * "Nothing after final" spans the closed flag and the queue's contents.
 * The closed flag is owned by the state lane (06 §4 C2), and the turn
 * that sets it (close, or the final work's acceptance) also closes the
 * queue, so the three other entry points need no lane turn: they enqueue
 * directly and the queue's own lock decides "before or after" (-EPIPE),
 * as the Actor coordinator's submissions do. Only execute_final is
 * decided and enqueued in a lane turn (one final, never two). The final
 * is enqueued before the queue is closed (a closed queue would refuse
 * it), so a packet that races the final's acceptance may get in between:
 * it was accepted before the final call returned, and the final work
 * waits for it like for everything accepted before it. For that the
 * final work does not run before its lane turn has closed the queue
 * (final_sealed) and until nothing else is outstanding (final_gate()).
 * final_fn/arg are written before its enqueue and read on the session
 * queue's turns; final_park is exchanged between the gate (on the queue's
 * turn), on_release() (on any thread that releases a record, a refused
 * submission's too) and the final's lane turn, see final_try_resume().
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

struct orbit_session_serial_executor {
	struct orbit__coord co; /* first: work records point here */
	orbit_serial_queue_t *q;
	/* Owned by co.lane: closed, or final accepted. Mirrored for the entry
	 * points that take no lane turn by co.closing (orbit__coord_close_hint(),
	 * in the turn that sets it, before the queue closes). */
	bool closed;
	/* Set in the lane turn that accepts the final work (before its
	 * enqueue publishes them); read on the session queue's turns. */
	orbit_serial_work_fn final_fn;
	void *final_arg;
	/* The final work waiting for the work accepted before it: stored by
	 * final_gate(), taken (exchanged for NULL) by whoever resumes it. */
	_Atomic(orbit_serial_resume_t *) final_park;
	/* The final's lane turn closed the queue: no packet gets in any
	 * more (SN-D3). */
	_Atomic bool final_sealed;
};

void orbit_session_serial_executor_options_init(struct orbit_session_serial_executor_options *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
}

/*
 * Take the parked final work and resume it once the queue is closed and
 * only it is outstanding. Dekker pairs, all seq_cst: on the releasers'
 * side the release (coord_uncount()'s SX-D2 increment), on the final's
 * lane turn the store of final_sealed (SN-D3), each followed by the loads
 * here (SN-D2); on the gate's side the store of final_park (SN-D1)
 * followed by the same loads. So either this sees the parked handle or
 * the gate sees this release (or the seal). The exchange hands the
 * handle to one resumer only.
 */
static void final_try_resume(orbit_session_serial_executor_t *s)
{
	orbit_serial_resume_t *h;

	/* SN-D2: seq_cst loads, pairs with SN-D1 in final_gate() and SN-D3 in
	 * submit_fn(); the count is read as orbit__coord_await() reads it */
	if (!atomic_load_explicit(&s->final_park, memory_order_seq_cst) ||
	    !atomic_load_explicit(&s->final_sealed, memory_order_seq_cst) ||
	    orbit__coord_outstanding(&s->co) != 1)
		return; /* no final parked, the queue still open, or more left */
	h = atomic_exchange_explicit(&s->final_park, NULL, memory_order_seq_cst);
	if (h)
		orbit_serial_queue_resume(h); /* only the final work is left: let it run */
}

/*
 * A piece of session work was released: on the session queue's turn that
 * finished it, or on the thread whose submission the queue refused (see
 * the file comment), so possibly while final_gate() runs. Only a parked
 * final needs the outstanding count: without one, the submitters'
 * counter line is not read at every release.
 */
static void on_release(struct orbit__coord *co)
{
	final_try_resume((orbit_session_serial_executor_t *)co);
}

int orbit_session_serial_executor_create(const struct orbit_session_serial_executor_options *user,
					 orbit_session_serial_executor_t **out)
{
	struct orbit_session_serial_executor_options opts;
	struct orbit_serial_queue_options qo;
	orbit_session_serial_executor_t *s;
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
	s = orbit__coord_alloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	orbit_serial_queue_options_init(&qo);
	qo.policy = opts.policy;
	qo.executor = opts.executor;
	qo.home = opts.home;
	qo.name = opts.name ? opts.name : "session";
	ret = orbit_serial_queue_create(&qo, &s->q);
	if (ret)
		goto err_free;
	orbit__serial_queue_seal(s->q); /* 07 §3 */
	snprintf(name, sizeof(name), "%.48s/lane", qo.name);
	ret = orbit__coord_init(&s->co, name);
	if (ret)
		goto err_queue;
	s->co.on_release = on_release;
	*out = s;
	return 0;

err_queue:
	orbit_serial_queue_destroy(s->q);
err_free:
	free(s);
	return ret;
}

/*
 * The final work's first stage, on the session queue: until its lane
 * turn closed the queue, and while earlier work is outstanding (a
 * lifecycle burst let it run early, work yielded, or a packet raced its
 * acceptance), hand the turn back and wait for final_try_resume() to
 * resume it. Parked first, then looked at again (SN-D1): a release or the
 * seal between the first look and the park is seen here.
 */
static int final_gate(orbit_serial_turn_t *turn, void *arg)
{
	orbit_session_serial_executor_t *s = arg;
	orbit_serial_resume_t *h;

	ORBIT__ASSERT_ON_QUEUE(s->q, false); /* the final work's first stage */
	/* seq_cst like SX-D1: a count of work; a first look only (SN-D1) */
	if ((!atomic_load_explicit(&s->final_sealed, memory_order_seq_cst) ||
	     orbit__coord_outstanding(&s->co) > 1) &&
	    orbit__work_yield(turn, final_gate, s, ORBIT_SERIAL_SUSPEND_RELEASE, &h) == 0) {
		/* SN-D1: seq_cst store, pairs with SN-D2 in final_try_resume() */
		atomic_store_explicit(&s->final_park, h, memory_order_seq_cst);
		/* A resume before this turn returns is kept by the queue
		 * until it has (orbit_serial_queue_resume()). */
		final_try_resume(s);
		return ORBIT_SERIAL_SUSPENDED;
	}
	/* Nothing else outstanding (or no memory to wait: run it now). */
	return s->final_fn(turn, s->final_arg);
}

struct submit {
	orbit_session_serial_executor_t *s;
	struct orbit__work *w;
	unsigned kind;
	struct orbit__enq e;
	/* The record submit_fn makes from the lane's stash. */
	orbit_serial_work_fn fn;
	void *arg;
	orbit_work_completion_t *done;
};

/* execute_final, in one lane turn: one final, and nothing after it. */
static int submit_fn(void *arg)
{
	struct submit *c = arg;
	orbit_session_serial_executor_t *s = c->s;
	orbit_serial_work_fn fn = c->fn;
	void *fn_arg = c->arg;
	int ret;

	ORBIT__ASSERT_ON_LANE(s->co.lane);
	/* From the lane's stash: no atomic operation on the pool. */
	ret = orbit__work_new_on_lane(&s->co, fn, fn_arg, c->done, ORBIT_SERIAL_SUSPEND_HOLD,
				      &c->w);
	if (ret)
		return ret;
	if (s->closed)
		return orbit__work_refuse(c->w, c->kind, -EPIPE);
	s->final_fn = fn;
	s->final_arg = fn_arg;
	c->w->fn = final_gate;
	c->w->arg = s;
	ret = orbit__work_submit(c->w, c->kind, &c->e);
	if (ret == 0) {
		/* The last work: nothing more gets in, through the lane or not. */
		s->closed = true;
		orbit__coord_close_hint(&s->co); /* for session_submit() */
		orbit_serial_queue_close(s->q);
		/* SN-D3: seq_cst store, pairs with SN-D2 in final_try_resume() */
		atomic_store_explicit(&s->final_sealed, true, memory_order_seq_cst);
		final_try_resume(s); /* it may have parked for the seal alone */
	}
	return ret;
}

static int session_submit(orbit_session_serial_executor_t *s, unsigned kind,
			  orbit_serial_work_fn fn, void *arg, uint64_t payload_bytes,
			  orbit_work_completion_t *done)
{
	struct submit c = { .s = s, .kind = kind };
	int ret;

	if (!s || !fn)
		return -EINVAL;
	if (orbit__coord_fork_check(&s->co))
		return -ECHILD; /* a parent's coordinator (base/fork_guard.h) */
	c.e.q = s->q;
	c.e.fn = orbit__work_run;
	switch (kind) {
	case ORBIT_WORK_APPLICATION:
		c.e.how = ORBIT__ENQ_PAYLOAD;
		c.e.payload_bytes = payload_bytes;
		break;
	case ORBIT_WORK_INFRASTRUCTURE:
		c.e.how = ORBIT__ENQ_FIXED;
		break;
	default: /* control, final */
		c.e.how = ORBIT__ENQ_LIFECYCLE;
		break;
	}
	if (kind != ORBIT_WORK_FINAL) {
		/* No lane turn: see the file comment (-EPIPE from the closed
		 * queue is counted as rejected_closed). Closed already: refused
		 * before it is counted by orbit__work_submit() (co.closing), as
		 * the lane turn did (a stats read never sees it accepted); a
		 * submission that misses the hint is refused by the queue. */
		ret = orbit__work_new(&s->co, fn, arg, done, ORBIT_SERIAL_SUSPEND_HOLD, &c.w);
		if (ret)
			return ret;
		return orbit__work_submit(c.w, kind, &c.e);
	}
	c.fn = fn;
	c.arg = arg;
	c.done = done;
	/* A refusal of the turn itself made no record: nothing to give back. */
	return orbit_state_lane_run(s->co.lane, submit_fn, &c);
}

int orbit_session_execute_application(orbit_session_serial_executor_t *session,
				      orbit_serial_work_fn fn, void *arg, uint64_t payload_bytes,
				      orbit_work_completion_t *done)
{
	return session_submit(session, ORBIT_WORK_APPLICATION, fn, arg, payload_bytes, done);
}

int orbit_session_execute_control(orbit_session_serial_executor_t *session, orbit_serial_work_fn fn,
				  void *arg, orbit_work_completion_t *done)
{
	return session_submit(session, ORBIT_WORK_CONTROL, fn, arg, 0, done);
}

int orbit_session_execute_infrastructure(orbit_session_serial_executor_t *session,
					 orbit_serial_work_fn fn, void *arg,
					 orbit_work_completion_t *done)
{
	return session_submit(session, ORBIT_WORK_INFRASTRUCTURE, fn, arg, 0, done);
}

int orbit_session_execute_final(orbit_session_serial_executor_t *session, orbit_serial_work_fn fn,
				void *arg, orbit_work_completion_t *done)
{
	return session_submit(session, ORBIT_WORK_FINAL, fn, arg, 0, done);
}

static int close_fn(void *arg)
{
	orbit_session_serial_executor_t *s = arg;

	ORBIT__ASSERT_ON_LANE(s->co.lane);
	s->closed = true;
	orbit__coord_close_hint(&s->co); /* for session_submit() */
	/* In the same turn: the lane-free entry points see it (-EPIPE). */
	return orbit_serial_queue_close(s->q);
}

int orbit_session_serial_executor_close(orbit_session_serial_executor_t *session)
{
	if (!session)
		return -EINVAL;
	if (orbit__coord_fork_check(&session->co))
		return -ECHILD; /* a parent's coordinator (base/fork_guard.h) */
	return orbit_state_lane_run(session->co.lane, close_fn, session);
}

int orbit_session_serial_executor_await_quiescence(orbit_session_serial_executor_t *session,
						   int timeout_ms)
{
	if (!session)
		return -EINVAL;
	return orbit__coord_await(&session->co, timeout_ms);
}

int orbit_session_serial_executor_stats(const orbit_session_serial_executor_t *session,
					struct orbit_serial_executor_stats *out)
{
	if (!session || !out)
		return -EINVAL;
	orbit__coord_stats(&session->co, out);
	return 0;
}

static int close_cb(void *session)
{
	return orbit_session_serial_executor_close(session);
}

int orbit_session_serial_executor_destroy(orbit_session_serial_executor_t *session)
{
	int ret;

	if (!session)
		return 0;
	ret = orbit__coord_destroy_begin(&session->co, close_cb, session);
	if (ret)
		return ret;
	orbit__queue_free(session->q);
	orbit__coord_fini(&session->co);
	free(session);
	return 0;
}
