// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_serial_queue.c: the serial execution queue primitive of
 * spec 07 §5-6, one test per verification item of §10 that belongs to the
 * primitive, plus the §6.5 drain rules, the §6.7 hand-back, the SpotWide
 * two-level composition of §4 and a two-producer stress. Deterministic
 * tests drive the drain through a manual executor run by the test thread;
 * concurrency tests use the worker pool.
 */
#include "config.h"

#include "orbit_test.h"
#include "orbit_test_manual_executor.h"
#include "orbit_test_order_log.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include <orbit/orbit.h>

static orbit_serial_queue_t *make_queue(orbit_executor_t ex,
					const orbit_execution_lane_policy_t *pol)
{
	struct orbit_serial_queue_options o;
	orbit_serial_queue_t *q = NULL;

	orbit_serial_queue_options_init(&o);
	o.executor = ex;
	o.policy = pol;
	assert_int_equal(orbit_serial_queue_create(&o, &q), 0);
	return q;
}

static orbit_worker_pool_t *make_pool(unsigned nthreads)
{
	struct orbit_worker_pool_options o;
	orbit_worker_pool_t *p = NULL;

	orbit_worker_pool_options_init(&o);
	o.nthreads = nthreads;
	assert_int_equal(orbit_worker_pool_create(&o, &p), 0);
	return p;
}

/* ---- an order log: tests/common/orbit_test_order_log.h -------------- */

struct rec_arg {
	struct olog *log;
	int id;
};

static int rec_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct rec_arg *a = arg;

	olog_add(a->log, a->id);
	return ORBIT_SERIAL_DONE;
}

static int rec_fn_quiet(orbit_serial_turn_t *turn, void *arg)
{
	(void)turn;
	(void)arg;
	return ORBIT_SERIAL_DONE;
}

static void busy_ms(double ms)
{
	uint64_t end = orbit_test_now_ns() + (uint64_t)(ms * 1e6);

	while (orbit_test_now_ns() < end)
		;
}

static struct orbit_serial_queue_stats qstats(orbit_serial_queue_t *q)
{
	struct orbit_serial_queue_stats s;

	assert_int_equal(orbit_serial_queue_stats(q, &s), 0);
	return s;
}

/* ---- §6.1 policy ---------------------------------------------------- */

/* §6.1: the seven values with their defaults (0 in a field: its default); bad values give -EINVAL. */
static void test_s6_1_policy_defaults_and_invalid_values(void **state)
{
	orbit_execution_lane_policy_t p, bad;
	struct orbit_serial_queue_options o;
	struct manual_ex x;
	orbit_serial_queue_t *q = NULL;

	orbit_execution_lane_policy_init_default(&p);
	assert_int_equal(p.size, sizeof(p));
	assert_int_equal(p.application_message_capacity, 1024);
	assert_int_equal(p.application_byte_capacity, 64ull << 20);
	assert_int_equal(p.lifecycle_message_capacity, 128);
	assert_int_equal(p.lifecycle_byte_capacity, 4ull << 20);
	assert_int_equal(p.fixed_work_byte_cost, 256);
	assert_int_equal(p.lifecycle_burst_limit, 8);
	assert_int_equal(p.owner_time_budget_ms, 10);
	assert_int_equal(orbit_execution_lane_policy_validate(&p), 0);
	assert_int_equal(orbit_execution_lane_policy_validate(NULL), -EINVAL);

#define EXPECT_INVALID(field, value)                                                               \
	do {                                                                                       \
		bad = p;                                                                           \
		bad.field = value;                                                                 \
		assert_int_equal(orbit_execution_lane_policy_validate(&bad), -EINVAL);             \
	} while (0)
	EXPECT_INVALID(size, 0);
	EXPECT_INVALID(fixed_work_byte_cost, (4ull << 20) + 1); /* no item could fit */
#undef EXPECT_INVALID
	bad = p;
	bad.fixed_work_byte_cost = ORBIT_POLICY_NO_FIXED_COST; /* a cost of 0 */
	assert_int_equal(orbit_execution_lane_policy_validate(&bad), 0);
	bad = (orbit_execution_lane_policy_t){ .size = sizeof(bad) }; /* all defaults */
	assert_int_equal(orbit_execution_lane_policy_validate(&bad), 0);

	orbit_serial_queue_options_init(&o);
	assert_int_equal(o.home, ORBIT_HOME_NODE_NONE);
	o.executor = manual_executor(&x);
	o.name = "actor-42";
	assert_int_equal(orbit_serial_queue_create(&o, &q), 0);
	assert_string_equal(orbit_serial_queue_name(q), "actor-42");
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
	q = NULL;
	orbit_serial_queue_options_init(&o);
	assert_int_equal(orbit_serial_queue_create(&o, &q), -EINVAL); /* no executor */
	o.executor = manual_executor(&x);
	bad = p;
	bad.fixed_work_byte_cost = bad.lifecycle_byte_capacity + 1;
	o.policy = &bad;
	assert_int_equal(orbit_serial_queue_create(&o, &q), -EINVAL);
	assert_null(q);
	assert_int_equal(orbit_serial_queue_create(NULL, &q), -EINVAL);
	assert_int_equal(orbit_serial_queue_enqueue(NULL, rec_fn, NULL), -EINVAL);
}

/*
 * The options contract (issue 10, base/options.h): options from an older
 * build (cut before their last field, name) are accepted with that field
 * defaulted; from a newer build, accepted with a zero unknown tail and
 * -E2BIG with a set one.
 */
static void test_options_older_accepted_newer_tail_e2big(void **state)
{
	struct {
		struct orbit_serial_queue_options o;
		uint64_t unknown;
	} big;
	struct orbit_serial_queue_options o;
	struct manual_ex x;
	orbit_serial_queue_t *q = NULL;

	orbit_serial_queue_options_init(&o);
	o.executor = manual_executor(&x);
	o.name = "not-read";
	o.size = offsetof(struct orbit_serial_queue_options, name);
	assert_int_equal(orbit_serial_queue_create(&o, &q), 0);
	assert_string_equal(orbit_serial_queue_name(q), "serial-queue"); /* name defaulted */
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
	memset(&big, 0, sizeof(big));
	orbit_serial_queue_options_init(&big.o);
	big.o.executor = manual_executor(&x);
	big.o.size = sizeof(big);
	assert_int_equal(orbit_serial_queue_create(&big.o, &q), 0);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
	q = NULL;
	big.unknown = 1;
	assert_int_equal(orbit_serial_queue_create(&big.o, &q), -E2BIG);
	assert_null(q);
}

/*
 * The policy is size-carrying too (issue 10): zero in a field is its
 * default, as the queue applies it (a designated initializer naming one
 * capacity keeps the other defaults); ORBIT_POLICY_NO_FIXED_COST is a
 * fixed cost of 0; an older policy (cut before owner_time_budget_ms) is
 * accepted; a newer one with a set unknown tail is -E2BIG.
 */
static void test_policy_zero_is_default_and_size_contract(void **state)
{
	struct {
		orbit_execution_lane_policy_t p;
		uint64_t unknown;
	} big;
	orbit_execution_lane_policy_t p = { .size = sizeof(p), .application_message_capacity = 2 };
	struct orbit_serial_queue_options o;
	struct manual_ex x;
	orbit_serial_queue_t *q;
	int i;

	orbit_serial_queue_options_init(&o);
	o.executor = manual_executor(&x);
	o.policy = &p;
	assert_int_equal(orbit_serial_queue_create(&o, &q), 0);
	assert_int_equal(orbit_serial_queue_enqueue(q, rec_fn_quiet, NULL), 0);
	assert_int_equal(orbit_serial_queue_enqueue(q, rec_fn_quiet, NULL), 0);
	assert_int_equal(orbit_serial_queue_enqueue(q, rec_fn_quiet, NULL), -EAGAIN);
	for (i = 0; i < 128; i++) /* lifecycle: the default 128, not 0 */
		assert_int_equal(orbit_serial_queue_enqueue_lifecycle(q, rec_fn_quiet, NULL), 0);
	assert_int_equal(orbit_serial_queue_enqueue_lifecycle(q, rec_fn_quiet, NULL), -EAGAIN);
	assert_int_equal(qstats(q).app_bytes, 2 * ORBIT_POLICY_DEFAULT_FIXED_COST);
	manual_run_all(&x);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);

	p = (orbit_execution_lane_policy_t){ .size = sizeof(p),
					     .fixed_work_byte_cost = ORBIT_POLICY_NO_FIXED_COST };
	assert_int_equal(orbit_serial_queue_create(&o, &q), 0);
	assert_int_equal(orbit_serial_queue_enqueue_with_payload_bytes(q, rec_fn_quiet, NULL, 5),
			 0);
	assert_int_equal(qstats(q).app_bytes, 5);
	manual_run_all(&x);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);

	orbit_execution_lane_policy_init_default(&p);
	p.owner_time_budget_ms = 0;
	p.size = offsetof(orbit_execution_lane_policy_t, owner_time_budget_ms);
	assert_int_equal(orbit_execution_lane_policy_validate(&p), 0);
	assert_int_equal(orbit_serial_queue_create(&o, &q), 0);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
	memset(&big, 0, sizeof(big));
	orbit_execution_lane_policy_init_default(&big.p);
	big.p.size = sizeof(big);
	o.policy = &big.p;
	assert_int_equal(orbit_execution_lane_policy_validate(&big.p), 0);
	assert_int_equal(orbit_serial_queue_create(&o, &q), 0);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
	q = NULL;
	big.unknown = 1;
	assert_int_equal(orbit_execution_lane_policy_validate(&big.p), -E2BIG);
	assert_int_equal(orbit_serial_queue_create(&o, &q), -E2BIG);
	assert_null(q);
}

/*
 * Zero means the default (issue 10): a designated initializer that does not
 * name the home node submits with ORBIT_NODE_ANY, never node 0;
 * ORBIT_HOME_NODE(n) submits with node n, node 0 included.
 */
static void test_designated_initializer_home_node_is_none(void **state)
{
	struct manual_ex x;
	struct orbit_serial_queue_options o = { .size = sizeof(o),
						.executor = manual_executor(&x) };
	orbit_serial_queue_t *q;
	int home[] = { ORBIT_HOME_NODE(0), ORBIT_HOME_NODE(3) };

	assert_int_equal(orbit_serial_queue_create(&o, &q), 0);
	x.last_node = 99;
	assert_int_equal(orbit_serial_queue_enqueue(q, rec_fn_quiet, NULL), 0);
	assert_int_equal(x.submits, 1);
	assert_int_equal(x.last_node, ORBIT_NODE_ANY);
	manual_run_all(&x);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
	for (int i = 0; i < 2; i++) {
		o.home = home[i];
		assert_int_equal(orbit_serial_queue_create(&o, &q), 0);
		assert_int_equal(orbit_serial_queue_enqueue(q, rec_fn_quiet, NULL), 0);
		assert_int_equal(x.last_node, i == 0 ? 0 : 3);
		manual_run_all(&x);
		assert_int_equal(orbit_serial_queue_destroy(q), 0);
	}
}

/* ---- §10 capacity and backpressure ------------------------------------- */

/* §10 / §5: a lane full by item count rejects with -EAGAIN and counts it. */
static void test_s10_capacity_by_count(void **state)
{
	orbit_execution_lane_policy_t p;
	struct manual_ex x;
	struct olog log;
	struct rec_arg a[8];
	orbit_serial_queue_t *q;

	olog_init(&log);
	orbit_execution_lane_policy_init_default(&p);
	p.application_message_capacity = 4;
	p.lifecycle_message_capacity = 2;
	q = make_queue(manual_executor(&x), &p);
	for (int i = 0; i < 8; i++)
		a[i] = (struct rec_arg){ &log, i };
	for (int i = 0; i < 4; i++)
		assert_int_equal(orbit_serial_queue_enqueue(q, rec_fn, &a[i]), 0);
	assert_int_equal(orbit_serial_queue_enqueue(q, rec_fn, &a[4]), -EAGAIN);
	assert_int_equal(orbit_serial_queue_enqueue_barrier_next(q, rec_fn, &a[4]), -EAGAIN);
	/* The lifecycle lane has its own ceiling. */
	assert_int_equal(orbit_serial_queue_enqueue_lifecycle(q, rec_fn, &a[5]), 0);
	assert_int_equal(orbit_serial_queue_enqueue_lifecycle(q, rec_fn, &a[6]), 0);
	assert_int_equal(orbit_serial_queue_enqueue_lifecycle(q, rec_fn, &a[7]), -EAGAIN);
	assert_int_equal(qstats(q).rejected_count, 3);
	assert_int_equal(qstats(q).app_items, 4);
	assert_int_equal(qstats(q).lc_items, 2);
	manual_run_all(&x);
	assert_int_equal(log.n, 6);
	/* Reservations came back: room again. */
	assert_int_equal(qstats(q).app_items, 0);
	assert_int_equal(orbit_serial_queue_enqueue(q, rec_fn, &a[0]), 0);
	manual_run_all(&x);
	assert_int_equal(qstats(q).accepted, 7);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
}

/* §10 / §5: byte ceiling: payload + fixed cost; an item over capacity at once. */
static void test_s10_capacity_by_bytes(void **state)
{
	orbit_execution_lane_policy_t p;
	struct manual_ex x;
	struct olog log;
	struct rec_arg a = { &log, 1 };
	orbit_serial_queue_t *q;

	olog_init(&log);
	orbit_execution_lane_policy_init_default(&p);
	p.application_byte_capacity = 1000;
	p.fixed_work_byte_cost = 100;
	q = make_queue(manual_executor(&x), &p);
	/* Larger than the whole capacity: rejected at once, even when empty. */
	assert_int_equal(orbit_serial_queue_enqueue_with_payload_bytes(q, rec_fn, &a, 901), -E2BIG);
	assert_int_equal(orbit_serial_queue_enqueue_with_payload_bytes(q, rec_fn, &a, UINT64_MAX),
			 -E2BIG);
	assert_int_equal(qstats(q).rejected_too_big, 2);
	assert_int_equal(orbit_serial_queue_enqueue_with_payload_bytes(q, rec_fn, &a, 300), 0);
	assert_int_equal(orbit_serial_queue_enqueue_with_payload_bytes(q, rec_fn, &a, 300), 0);
	assert_int_equal(qstats(q).app_bytes, 800);
	/* 800 + 400 > 1000: full by bytes long before the 1,024-item ceiling. */
	assert_int_equal(orbit_serial_queue_enqueue_with_payload_bytes(q, rec_fn, &a, 300),
			 -EAGAIN);
	assert_int_equal(qstats(q).rejected_bytes, 1);
	/* A payload-less item reserves the fixed cost only: 900 fits. */
	assert_int_equal(orbit_serial_queue_enqueue(q, rec_fn, &a), 0);
	assert_int_equal(qstats(q).app_bytes, 900);
	assert_int_equal(orbit_serial_queue_enqueue(q, rec_fn, &a), 0);
	assert_int_equal(orbit_serial_queue_enqueue(q, rec_fn, &a), -EAGAIN);
	manual_run_all(&x);
	assert_int_equal(log.n, 4);
	assert_int_equal(qstats(q).app_bytes, 0);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
}

struct resv_probe {
	orbit_serial_queue_t *q;
	struct orbit_serial_queue_stats during;
	int inner_ret;
};

static int resv_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct resv_probe *r = arg;

	r->during = qstats(r->q);
	r->inner_ret = orbit_serial_queue_enqueue(r->q, rec_fn, NULL);
	return ORBIT_SERIAL_DONE;
}

/* §5: the reservation is returned after the handler finishes, not when it starts. */
static void test_s5_reservation_returned_after_handler_finishes(void **state)
{
	orbit_execution_lane_policy_t p;
	struct manual_ex x;
	struct resv_probe r = { 0 };
	orbit_serial_queue_t *q;

	orbit_execution_lane_policy_init_default(&p);
	p.application_message_capacity = 1;
	q = make_queue(manual_executor(&x), &p);
	r.q = q;
	assert_int_equal(orbit_serial_queue_enqueue_with_payload_bytes(q, resv_fn, &r, 1000), 0);
	manual_run_all(&x);
	assert_int_equal(r.during.app_items, 1);
	assert_int_equal(r.during.app_bytes, 1000 + 256);
	assert_int_equal(r.inner_ret, -EAGAIN); /* its own reservation still held */
	assert_int_equal(qstats(q).app_items, 0);
	assert_int_equal(qstats(q).app_bytes, 0);
	assert_int_equal(qstats(q).completed, 1);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
}

/* ---- §6.5 who starts the loop ------------------------------------------ */

struct stack_probe {
	atomic_int ran;
	pthread_t runner;
};

static int stack_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct stack_probe *s = arg;

	s->runner = pthread_self();
	atomic_fetch_add(&s->ran, 1);
	return ORBIT_SERIAL_DONE;
}

/*
 * §6.5: the submitter that makes the queue non-empty schedules the drain,
 * once; never two drains; never on the submitter's stack.
 */
static void test_s6_5_first_submitter_schedules_one_drain_off_its_stack(void **state)
{
	struct manual_ex x;
	struct stack_probe s = { 0 };
	orbit_serial_queue_t *q = make_queue(manual_executor(&x), NULL);
	orbit_worker_pool_t *pool;

	for (int i = 0; i < 10; i++)
		assert_int_equal(orbit_serial_queue_enqueue(q, stack_fn, &s), 0);
	assert_int_equal(atomic_load(&s.ran), 0); /* nothing ran on our stack */
	assert_int_equal(x.submits, 1);		  /* one drain for ten items */
	assert_true(manual_run_one(&x));
	assert_int_equal(atomic_load(&s.ran), 10);
	assert_int_equal(manual_pending(&x), 0);
	assert_int_equal(orbit_serial_queue_enqueue(q, stack_fn, &s), 0);
	assert_int_equal(x.submits, 2); /* empty again: the next submitter wakes it */
	manual_run_all(&x);
	assert_int_equal(qstats(q).slices, 2);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);

	/* On the pool the item runs on a worker, not the submitting thread. */
	pool = make_pool(2);
	q = make_queue(orbit_worker_pool_executor(pool), NULL);
	atomic_store(&s.ran, 0);
	assert_int_equal(orbit_serial_queue_enqueue(q, stack_fn, &s), 0);
	assert_int_equal(orbit_serial_queue_await_quiescence(q, 10000), 0);
	assert_int_equal(atomic_load(&s.ran), 1);
	assert_false(pthread_equal(s.runner, pthread_self()));
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
	assert_int_equal(orbit_worker_pool_destroy(pool), 0);
}

/* §6.5: when the executor refuses the drain the item is withdrawn, not lost silently. */
static void test_s6_5_refused_drain_withdraws_the_item(void **state)
{
	struct manual_ex x;
	struct olog log;
	struct rec_arg a = { &log, 1 };
	orbit_serial_queue_t *q = make_queue(manual_executor(&x), NULL);

	olog_init(&log);
	x.refuse = -EPIPE;
	assert_int_equal(orbit_serial_queue_enqueue(q, rec_fn, &a), -EPIPE);
	assert_int_equal(qstats(q).rejected_executor, 1);
	assert_int_equal(qstats(q).app_items, 0);
	assert_int_equal(qstats(q).accepted, 0);
	x.refuse = 0;
	assert_int_equal(orbit_serial_queue_enqueue(q, rec_fn, &a), 0);
	manual_run_all(&x);
	assert_int_equal(log.n, 1);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
}

/* A continuation that notes whether it ran inside orbit_serial_queue_resume(). */
struct resume_probe {
	_Atomic(orbit_serial_resume_t *) h;
	atomic_int cont_ran;
	atomic_int ran_in_resume; /* the continuation saw the resumer's marker */
	pthread_t runner;
};

/* Set by the test thread only for the duration of its resume call. */
static _Thread_local bool tl_in_resume;

static int resume_cont_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct resume_probe *p = arg;

	if (tl_in_resume)
		atomic_fetch_add(&p->ran_in_resume, 1);
	p->runner = pthread_self();
	atomic_fetch_add(&p->cont_ran, 1);
	return ORBIT_SERIAL_DONE;
}

static int resume_first_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct resume_probe *p = arg;
	orbit_serial_resume_t *h = NULL;

	assert_int_equal(orbit_serial_turn_suspend(turn, resume_cont_fn, p, 0, &h), 0);
	atomic_store(&p->h, h);
	return ORBIT_SERIAL_SUSPENDED;
}

static int resume_on_marked_stack(orbit_serial_resume_t *h)
{
	int ret;

	tl_in_resume = true;
	ret = orbit_serial_queue_resume(h);
	tl_in_resume = false;
	return ret;
}

/*
 * §6.5 "the loop does not start on the submitter's call stack", for the
 * resume path of §6.7 (a resume is a queue submission): resuming a
 * suspended item of an idle queue wakes one drain through the executor
 * and returns; the continuation runs later, on the executor's thread,
 * never inside orbit_serial_queue_resume() on the resumer's stack.
 */
static void test_s6_5_resume_never_drains_on_the_resumers_stack(void **state)
{
	struct manual_ex x;
	struct resume_probe p = { 0 };
	orbit_serial_queue_t *q = make_queue(manual_executor(&x), NULL);
	orbit_worker_pool_t *pool;
	int submits;

	assert_int_equal(orbit_serial_queue_enqueue(q, resume_first_fn, &p), 0);
	manual_run_all(&x); /* suspended; the queue is idle, no drain scheduled */
	assert_non_null(atomic_load(&p.h));
	assert_int_equal(manual_pending(&x), 0);
	submits = x.submits;
	assert_int_equal(resume_on_marked_stack(atomic_load(&p.h)), 0);
	assert_int_equal(atomic_load(&p.cont_ran), 0); /* not on our stack */
	assert_int_equal(x.submits, submits + 1);      /* one drain woken */
	assert_int_equal(manual_pending(&x), 1);
	manual_run_all(&x);
	assert_int_equal(atomic_load(&p.cont_ran), 1);
	assert_int_equal(atomic_load(&p.ran_in_resume), 0);
	assert_int_equal(qstats(q).completed, 1);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);

	/* On the pool the continuation runs on a worker, not the resumer. */
	pool = make_pool(1);
	q = make_queue(orbit_worker_pool_executor(pool), NULL);
	atomic_store(&p.h, NULL);
	atomic_store(&p.cont_ran, 0);
	assert_int_equal(orbit_serial_queue_enqueue(q, resume_first_fn, &p), 0);
	while (!atomic_load(&p.h))
		usleep(100);
	assert_int_equal(resume_on_marked_stack(atomic_load(&p.h)), 0);
	assert_int_equal(orbit_serial_queue_await_quiescence(q, 10000), 0);
	assert_int_equal(atomic_load(&p.cont_ran), 1);
	assert_int_equal(atomic_load(&p.ran_in_resume), 0);
	assert_false(pthread_equal(p.runner, pthread_self()));
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
	assert_int_equal(orbit_worker_pool_destroy(pool), 0);
}

/* ---- §10 lifecycle overtaking, §6.2 barrier-next -------------------------- */

/*
 * §10: lifecycle work overtakes queued application work, and the
 * consecutive overtaking stops at lifecycleBurstLimit so one application
 * item runs.
 */
static void test_s10_lifecycle_overtakes_until_burst_limit(void **state)
{
	struct manual_ex x;
	struct olog log;
	struct rec_arg a[23];
	orbit_serial_queue_t *q = make_queue(manual_executor(&x), NULL);
	const int expect[] = { 100, 101, 102, 103, 104, 105, 106, 107, 0,   108, 109, 110,
			       111, 112, 113, 114, 115, 1,   116, 117, 118, 119, 2 };

	olog_init(&log);
	for (int i = 0; i < 3; i++) {
		a[i] = (struct rec_arg){ &log, i };
		assert_int_equal(orbit_serial_queue_enqueue(q, rec_fn, &a[i]), 0);
	}
	for (int i = 0; i < 20; i++) {
		a[3 + i] = (struct rec_arg){ &log, 100 + i };
		assert_int_equal(orbit_serial_queue_enqueue_lifecycle(q, rec_fn, &a[3 + i]), 0);
	}
	manual_run_all(&x);
	assert_int_equal(log.n, 23);
	for (int i = 0; i < 23; i++)
		assert_int_equal(log.v[i], expect[i]);
	assert_int_equal(qstats(q).lifecycle_ran, 20);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
}

struct barrier_ctx {
	orbit_serial_queue_t *q;
	struct olog log;
	struct rec_arg b1, b2;
};

static int barrier_first_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct barrier_ctx *c = arg;

	olog_add(&c->log, 0);
	assert_int_equal(orbit_serial_queue_enqueue_barrier_next(c->q, rec_fn, &c->b1), 0);
	assert_int_equal(orbit_serial_queue_enqueue_barrier_next(c->q, rec_fn, &c->b2), 0);
	return ORBIT_SERIAL_DONE;
}

/* §6.2: barrier-next runs right after the current turn, ahead of queued work. */
static void test_s6_2_barrier_next_runs_right_after_current_turn(void **state)
{
	struct manual_ex x;
	struct barrier_ctx c;
	struct rec_arg a1, a2, l1;
	orbit_serial_queue_t *q = make_queue(manual_executor(&x), NULL);

	olog_init(&c.log);
	c.q = q;
	c.b1 = (struct rec_arg){ &c.log, 50 };
	c.b2 = (struct rec_arg){ &c.log, 51 };
	a1 = (struct rec_arg){ &c.log, 1 };
	a2 = (struct rec_arg){ &c.log, 2 };
	l1 = (struct rec_arg){ &c.log, 10 };
	assert_int_equal(orbit_serial_queue_enqueue(q, barrier_first_fn, &c), 0);
	assert_int_equal(orbit_serial_queue_enqueue(q, rec_fn, &a1), 0);
	assert_int_equal(orbit_serial_queue_enqueue(q, rec_fn, &a2), 0);
	assert_int_equal(orbit_serial_queue_enqueue_lifecycle(q, rec_fn, &l1), 0);
	/* The lifecycle item overtakes the first application item too. */
	manual_run_all(&x);
	assert_int_equal(c.log.n, 6);
	assert_int_equal(c.log.v[0], 10);
	assert_int_equal(c.log.v[1], 0);
	assert_int_equal(c.log.v[2], 50);
	assert_int_equal(c.log.v[3], 51);
	assert_int_equal(c.log.v[4], 1);
	assert_int_equal(c.log.v[5], 2);
	assert_int_equal(qstats(q).barrier_ran, 2);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
}

/* ---- §10 fairness ------------------------------------------------------- */

struct slice_probe {
	struct manual_ex *x;
	atomic_int ran;
	double item_ms;
};

static int slice_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct slice_probe *s = arg;

	busy_ms(s->item_ms);
	atomic_fetch_add(&s->ran, 1);
	return ORBIT_SERIAL_DONE;
}

/*
 * §10 fairness / §6.4: an owner with a lot of work piled up is cut once it
 * held its turn past ownerTimeBudget; the rest goes back to ready.
 */
static void test_s10_fairness_turn_cut_at_time_budget(void **state)
{
	orbit_execution_lane_policy_t p;
	struct manual_ex x;
	struct slice_probe s = { .x = &x, .item_ms = 1.0 };
	orbit_serial_queue_t *q;
	int first;

	orbit_execution_lane_policy_init_default(&p);
	p.owner_time_budget_ms = 5;
	q = make_queue(manual_executor(&x), &p);
	for (int i = 0; i < 20; i++)
		assert_int_equal(orbit_serial_queue_enqueue(q, slice_fn, &s), 0);
	assert_true(manual_run_one(&x));
	first = atomic_load(&s.ran);
	assert_true(first >= 1 && first <= 5);	 /* cut at the first boundary past 5 ms */
	assert_int_equal(manual_pending(&x), 1); /* it went back to ready */
	assert_int_equal(qstats(q).slices_cut, 1);
	manual_run_all(&x);
	assert_int_equal(atomic_load(&s.ran), 20);
	assert_true(qstats(q).slices >= 4);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
}

struct light_probe {
	uint64_t submitted_ns;
	_Atomic uint64_t started_ns;
	struct slice_probe *heavy;
	_Atomic int heavy_ran_at_start; /* heavy items finished when the light one started */
};

static int light_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct light_probe *l = arg;

	atomic_store(&l->heavy_ran_at_start, atomic_load(&l->heavy->ran));
	atomic_store(&l->started_ns, orbit_test_now_ns());
	return ORBIT_SERIAL_DONE;
}

/*
 * §6.4 on the shared resource: with one worker, a light owner's item
 * starts within about one budget while a heavy owner floods (without the
 * cut it would wait for the whole flood, ~100 ms). Checked in heavy items
 * run before the light one started, which preemption by other processes
 * cannot inflate (a preempted slice runs fewer items, not more); the wall
 * time is printed (bench_serial_queue measures it against the budget).
 */
static void test_s6_4_light_owner_starts_within_budget_during_flood(void **state)
{
	orbit_execution_lane_policy_t p;
	struct slice_probe s = { .item_ms = 1.0 };
	struct light_probe l = { .heavy = &s };
	orbit_worker_pool_t *pool = make_pool(1);
	orbit_serial_queue_t *heavy, *light;
	uint64_t lat_ms;
	int before;

	orbit_execution_lane_policy_init_default(&p);
	p.owner_time_budget_ms = 5;
	heavy = make_queue(orbit_worker_pool_executor(pool), &p);
	light = make_queue(orbit_worker_pool_executor(pool), &p);
	for (int i = 0; i < 100; i++)
		assert_int_equal(orbit_serial_queue_enqueue(heavy, slice_fn, &s), 0);
	/* 3 items into the flood, counted, not slept: a usleep(3000) that
	 * overslept on a loaded host let 25 items pass before the light one */
	while (atomic_load(&s.ran) < 3)
		sched_yield();
	l.submitted_ns = orbit_test_now_ns();
	assert_int_equal(orbit_serial_queue_enqueue(light, light_fn, &l), 0);
	/* read after the enqueue: a preemption before it can only loosen the check */
	before = atomic_load(&s.ran);
	assert_int_equal(orbit_serial_queue_await_quiescence(light, 10000), 0);
	lat_ms = (atomic_load(&l.started_ns) - l.submitted_ns) / 1000000;
	print_message("light owner waited %llu ms and %d heavy items (submitted after %d) behind a "
		      "100-item flood (budget 5 ms)\n",
		      (unsigned long long)lat_ms, atomic_load(&l.heavy_ran_at_start), before);
	/* after its submission: the rest of the current slice (<= 5-6 items of
	 * 1 ms) and at most one more slice before the cut hands the worker over */
	assert_true(atomic_load(&l.heavy_ran_at_start) - before <= 13);
	assert_int_equal(orbit_serial_queue_await_quiescence(heavy, 10000), 0);
	assert_true(qstats(heavy).slices_cut >= 5);
	assert_int_equal(orbit_serial_queue_destroy(heavy), 0);
	assert_int_equal(orbit_serial_queue_destroy(light), 0);
	assert_int_equal(orbit_worker_pool_destroy(pool), 0);
}

/* ---- §6.7 hand-back ----------------------------------------------------- */

struct overlap {
	orbit_serial_queue_t *q;
	atomic_int inflight, max_inflight;
	atomic_int b_running;
	_Atomic(orbit_serial_resume_t *) handle;
	struct olog log;
	struct orbit_serial_queue_stats during_b;
	uint64_t b_end_ns;
};

/* Count a handler in; keep the highest concurrency seen in *@max. */
static void track_enter(atomic_int *inflight, atomic_int *max)
{
	int n = atomic_fetch_add(inflight, 1) + 1;
	int m = atomic_load(max);

	while (n > m && !atomic_compare_exchange_weak(max, &m, n))
		;
}

static void enter(struct overlap *o)
{
	track_enter(&o->inflight, &o->max_inflight);
}

static void leave(struct overlap *o)
{
	atomic_fetch_sub(&o->inflight, 1);
}

static int cont_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct overlap *o = arg;

	enter(o);
	olog_add(&o->log, 3);
	busy_ms(2);
	leave(o);
	return ORBIT_SERIAL_DONE;
}

static int suspend_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct overlap *o = arg;
	orbit_serial_resume_t *h;

	enter(o);
	olog_add(&o->log, 1);
	assert_int_equal(orbit_serial_turn_suspend(turn, cont_fn, o, 0, &h), 0);
	assert_int_equal(orbit_serial_turn_suspend(turn, cont_fn, o, 0, &h), -EALREADY);
	atomic_store(&o->handle, h); /* hand it to the "external" completer */
	leave(o);
	return ORBIT_SERIAL_SUSPENDED;
}

static int long_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct overlap *o = arg;

	enter(o);
	olog_add(&o->log, 2);
	o->during_b = qstats(o->q);
	atomic_store(&o->b_running, 1);
	busy_ms(20);
	o->b_end_ns = orbit_test_now_ns();
	leave(o);
	return ORBIT_SERIAL_DONE;
}

static void *completer(void *arg)
{
	struct overlap *o = arg;

	while (!atomic_load(&o->b_running))
		usleep(100);
	/* The result arrives while B holds the turn: it must wait for B. */
	assert_int_equal(orbit_serial_queue_resume(atomic_load(&o->handle)), 0);
	return NULL;
}

static int early_cont_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct overlap *o = arg;

	enter(o);
	olog_add(&o->log, 5);
	leave(o);
	return ORBIT_SERIAL_DONE;
}

static int early_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct overlap *o = arg;
	orbit_serial_resume_t *h;

	enter(o);
	olog_add(&o->log, 4);
	assert_int_equal(orbit_serial_turn_suspend(turn, early_cont_fn, o, 0, &h), 0);
	/* Completion arrives before we return: still no overlap. */
	assert_int_equal(orbit_serial_queue_resume(h), 0);
	busy_ms(10);
	leave(o);
	return ORBIT_SERIAL_SUSPENDED;
}

/*
 * §6.7 / §10: a suspended item hands its turn back (the queue goes on with
 * B), keeps its reservation, and its continuation re-enters through the
 * queue: it never overlaps B nor itself, also when the result arrives
 * before the item has even returned.
 */
static void test_s6_7_suspended_item_queue_does_not_overlap_itself(void **state)
{
	orbit_worker_pool_t *pool = make_pool(2);
	struct overlap o = { 0 };
	orbit_serial_queue_t *q = make_queue(orbit_worker_pool_executor(pool), NULL);
	pthread_t t;

	olog_init(&o.log);
	o.q = q;
	assert_int_equal(pthread_create(&t, NULL, completer, &o), 0);
	assert_int_equal(orbit_serial_queue_enqueue(q, suspend_fn, &o), 0);
	assert_int_equal(orbit_serial_queue_enqueue(q, long_fn, &o), 0);
	pthread_join(t, NULL);
	assert_int_equal(orbit_serial_queue_await_quiescence(q, 10000), 0);
	assert_int_equal(o.log.n, 3);
	assert_int_equal(o.log.v[0], 1);
	assert_int_equal(o.log.v[1], 2);
	assert_int_equal(o.log.v[2], 3);
	assert_true(o.log.at_ns[2] >= o.b_end_ns);
	assert_int_equal(atomic_load(&o.max_inflight), 1);
	/* While suspended the item kept its reservation: S and B both held. */
	assert_int_equal(o.during_b.app_items, 2);

	assert_int_equal(orbit_serial_queue_enqueue(q, early_fn, &o), 0);
	assert_int_equal(orbit_serial_queue_await_quiescence(q, 10000), 0);
	assert_int_equal(o.log.n, 5);
	assert_int_equal(o.log.v[3], 4);
	assert_int_equal(o.log.v[4], 5);
	assert_int_equal(atomic_load(&o.max_inflight), 1);
	assert_int_equal(qstats(q).suspended, 2);
	assert_int_equal(qstats(q).resumed, 2);
	assert_int_equal(qstats(q).completed, 3);
	assert_int_equal(qstats(q).protocol_errors, 0);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
	assert_int_equal(orbit_worker_pool_destroy(pool), 0);
}

/* ---- §4 SpotWide two-level composition ------------------------------------ */

struct spot {
	orbit_serial_queue_t *spot_q;
	orbit_serial_queue_t *actor_q[2];
	atomic_int inflight, max_inflight;
	struct olog log;
	atomic_int yield_next;			   /* the next A handler yields (external call) */
	_Atomic(orbit_serial_resume_t *) external; /* the pending external call */
	atomic_int bad_spot_bytes;
};

struct record {
	struct spot *s;
	int actor, seq;
	orbit_serial_resume_t *actor_h; /* the Actor item's claim, held */
};

static void spot_enter(struct spot *s)
{
	track_enter(&s->inflight, &s->max_inflight);
}

/* The Actor handler's tail, on the Spot queue: complete the Actor item. */
static int handler_tail(orbit_serial_turn_t *turn, void *arg)
{
	struct record *r = arg;

	spot_enter(r->s);
	olog_add(&r->s->log, 1000 + r->actor * 100 + r->seq); /* tail marker */
	atomic_fetch_sub(&r->s->inflight, 1);
	/* The Spot turn completed: give the Actor queue its claim back. */
	assert_int_equal(orbit_serial_queue_resume(r->actor_h), 0);
	return ORBIT_SERIAL_DONE;
}

/* The Actor handler, on its Spot turn (one at a time across the Spot). */
static int actor_handler(orbit_serial_turn_t *turn, void *arg)
{
	struct record *r = arg;
	struct spot *s = r->s;
	struct orbit_serial_queue_stats st = qstats(s->spot_q);
	orbit_serial_resume_t *h;

	/* §5: the upper queue reserved the fixed cost only, never payload. */
	if (st.app_bytes != st.app_items * 256)
		atomic_fetch_add(&s->bad_spot_bytes, 1);
	spot_enter(s);
	olog_add(&s->log, r->actor * 100 + r->seq);
	busy_ms(1);
	if (r->actor == 0 && atomic_exchange(&s->yield_next, 0)) {
		/* Yield around an external call: hand back the Spot gate only. */
		assert_int_equal(orbit_serial_turn_suspend(turn, handler_tail, r, 0, &h), 0);
		atomic_store(&s->external, h);
		atomic_fetch_sub(&s->inflight, 1);
		return ORBIT_SERIAL_SUSPENDED;
	}
	atomic_fetch_sub(&s->inflight, 1);
	assert_int_equal(orbit_serial_queue_resume(r->actor_h), 0);
	return ORBIT_SERIAL_DONE;
}

static int actor_done(orbit_serial_turn_t *turn, void *arg)
{
	return ORBIT_SERIAL_DONE;
}

/* The Actor queue item: place one execution turn on the Spot queue, hold the claim. */
static int actor_item(orbit_serial_turn_t *turn, void *arg)
{
	struct record *r = arg;

	/* Suspend first: the Spot turn may complete us before we return. */
	assert_int_equal(
	    orbit_serial_turn_suspend(turn, actor_done, r, ORBIT_SERIAL_SUSPEND_HOLD, &r->actor_h),
	    0);
	/* §5 check: the submission to the upper queue passes no payload bytes. */
	if (orbit_serial_queue_enqueue(r->s->spot_q, actor_handler, r) != 0)
		assert_int_equal(orbit_serial_queue_resume(r->actor_h), 0);
	return ORBIT_SERIAL_SUSPENDED;
}

static int spot_item(orbit_serial_turn_t *turn, void *arg)
{
	struct record *r = arg;

	spot_enter(r->s);
	olog_add(&r->s->log, 900 + r->seq);
	atomic_fetch_sub(&r->s->inflight, 1);
	return ORBIT_SERIAL_DONE;
}

static int log_index(const struct olog *l, int v)
{
	for (int i = 0; i < l->n; i++)
		if (l->v[i] == v)
			return i;
	return -1;
}

static void spot_setup(struct spot *s, orbit_worker_pool_t *pool)
{
	orbit_execution_lane_policy_t p;

	memset(s, 0, sizeof(*s));
	olog_init(&s->log);
	orbit_execution_lane_policy_init_default(&p);
	s->spot_q = make_queue(orbit_worker_pool_executor(pool), &p);
	p.application_byte_capacity = 64 * 1024; /* a per-Actor share */
	s->actor_q[0] = make_queue(orbit_worker_pool_executor(pool), &p);
	s->actor_q[1] = make_queue(orbit_worker_pool_executor(pool), &p);
}

static void spot_teardown(struct spot *s)
{
	for (int i = 0; i < 2; i++) {
		assert_int_equal(orbit_serial_queue_await_quiescence(s->actor_q[i], 10000), 0);
		assert_int_equal(orbit_serial_queue_destroy(s->actor_q[i]), 0);
	}
	assert_int_equal(orbit_serial_queue_await_quiescence(s->spot_q, 10000), 0);
	assert_int_equal(orbit_serial_queue_destroy(s->spot_q), 0);
}

/*
 * §4 SpotWide / §5: Actor work crosses two queues. The Actor queue
 * reserves the payload and holds its claim (SUSPEND_HOLD) until its turn
 * on the Spot queue, which reserves the fixed cost only, completes. Two
 * Actors' handlers never overlap; each Actor's records keep their order;
 * a large payload fills the Actor's share, not the Spot queue.
 */
static void test_s4_spotwide_actor_work_crosses_two_queues(void **state)
{
	orbit_worker_pool_t *pool = make_pool(2);
	struct record rec[2][6];
	struct spot s;
	int rejected = 0;

	spot_setup(&s, pool);
	for (int k = 0; k < 6; k++)
		for (int a = 0; a < 2; a++) {
			rec[a][k] = (struct record){ .s = &s, .actor = a, .seq = k };
			assert_int_equal(orbit_serial_queue_enqueue_with_payload_bytes(
					     s.actor_q[a], actor_item, &rec[a][k], 8 * 1024),
					 0);
		}
	/* The Actor's 64 KiB share is what fills: 8 KiB payload + 256 each. */
	for (int k = 0; k < 16; k++)
		rejected += orbit_serial_queue_enqueue_with_payload_bytes(
				s.actor_q[0], actor_done, NULL, 8 * 1024) == -EAGAIN;
	assert_true(rejected >= 8);
	assert_int_equal(qstats(s.spot_q).rejected_bytes, 0);
	spot_teardown(&s);
	assert_int_equal(atomic_load(&s.max_inflight), 1);
	assert_int_equal(atomic_load(&s.bad_spot_bytes), 0);
	for (int a = 0; a < 2; a++)
		for (int k = 1; k < 6; k++)
			assert_true(log_index(&s.log, a * 100 + k - 1) <
				    log_index(&s.log, a * 100 + k));
	assert_int_equal(orbit_worker_pool_destroy(pool), 0);
}

static void wait_for_log(struct spot *s, int v)
{
	for (int i = 0; i < 10000; i++) {
		int found;

		pthread_mutex_lock(&s->log.m);
		found = log_index(&s->log, v) >= 0;
		pthread_mutex_unlock(&s->log.m);
		if (found)
			return;
		usleep(1000);
	}
	fail_msg("%d never ran", v);
}

/*
 * §10 "A yielded Actor": while Actor A's handler has yielded under
 * SpotWide, A's next record does not run, while Actor B's handler and the
 * Spot's own work proceed; once the external call completes, A's handler
 * finishes on a new Spot turn and only then A's next record runs.
 */
static void test_s10_yielded_actor_holds_claim_others_proceed(void **state)
{
	orbit_worker_pool_t *pool = make_pool(2);
	struct record a1 = { 0 }, a2 = { 0 }, b1 = { 0 }, x1 = { 0 };
	struct spot s;

	spot_setup(&s, pool);
	a1 = (struct record){ .s = &s, .actor = 0, .seq = 1 };
	a2 = (struct record){ .s = &s, .actor = 0, .seq = 2 };
	b1 = (struct record){ .s = &s, .actor = 1, .seq = 1 };
	x1 = (struct record){ .s = &s, .actor = 9, .seq = 1 };
	atomic_store(&s.yield_next, 1);
	assert_int_equal(
	    orbit_serial_queue_enqueue_with_payload_bytes(s.actor_q[0], actor_item, &a1, 100), 0);
	wait_for_log(&s, 1); /* A1's handler ran and yielded */
	while (!atomic_load(&s.external))
		usleep(100);
	assert_int_equal(
	    orbit_serial_queue_enqueue_with_payload_bytes(s.actor_q[0], actor_item, &a2, 100), 0);
	assert_int_equal(
	    orbit_serial_queue_enqueue_with_payload_bytes(s.actor_q[1], actor_item, &b1, 100), 0);
	assert_int_equal(orbit_serial_queue_enqueue(s.spot_q, spot_item, &x1), 0);
	wait_for_log(&s, 101); /* B proceeds */
	wait_for_log(&s, 901); /* the Spot's own work proceeds */
	usleep(20000);
	pthread_mutex_lock(&s.log.m);
	assert_int_equal(log_index(&s.log, 2), -1); /* A2 did not run */
	pthread_mutex_unlock(&s.log.m);
	assert_int_equal(qstats(s.actor_q[0]).app_items, 2); /* A1 in flight, A2 waiting */
	/* The external call completes: A1 resumes through the Spot queue. */
	assert_int_equal(orbit_serial_queue_resume(atomic_load(&s.external)), 0);
	wait_for_log(&s, 2);
	spot_teardown(&s);
	assert_true(log_index(&s.log, 1001) < log_index(&s.log, 2));
	assert_int_equal(atomic_load(&s.max_inflight), 1);
	assert_int_equal(orbit_worker_pool_destroy(pool), 0);
}

/* ---- §10 reentrancy, §6.2 close and quiescence --------------------------- */

struct reent {
	orbit_serial_queue_t *q, *other;
	int await_ret, destroy_ret;
	bool current, other_current;
	uint64_t took_ns;
};

static int reent_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct reent *r = arg;
	uint64_t t0 = orbit_test_now_ns();

	r->await_ret = orbit_serial_queue_await_quiescence(r->q, -1);
	r->took_ns = orbit_test_now_ns() - t0;
	r->destroy_ret = orbit_serial_queue_destroy(r->q);
	r->current = orbit_serial_queue_is_current(r->q);
	r->other_current = orbit_serial_queue_is_current(r->other);
	return ORBIT_SERIAL_DONE;
}

/*
 * §10 Reentrancy: synchronously waiting on one's own queue from inside
 * its turn does not hang; the error is observed at the call site.
 */
static void test_s10_sync_wait_on_own_queue_fails_at_once(void **state)
{
	orbit_worker_pool_t *pool = make_pool(2);
	struct reent r = { 0 };

	r.q = make_queue(orbit_worker_pool_executor(pool), NULL);
	r.other = make_queue(orbit_worker_pool_executor(pool), NULL);
	assert_int_equal(orbit_serial_queue_enqueue(r.q, reent_fn, &r), 0);
	assert_int_equal(orbit_serial_queue_await_quiescence(r.q, 10000), 0);
	assert_int_equal(r.await_ret, -EDEADLK);
	assert_true(r.took_ns < 100 * 1000000ull);
	assert_int_equal(r.destroy_ret, -EDEADLK);
	assert_true(r.current);
	assert_false(r.other_current);
	assert_false(orbit_serial_queue_is_current(r.q));
	assert_int_equal(orbit_serial_queue_destroy(r.q), 0);
	assert_int_equal(orbit_serial_queue_destroy(r.other), 0);
	assert_int_equal(orbit_worker_pool_destroy(pool), 0);
}

struct held_item {
	atomic_int ran;
	_Atomic(orbit_serial_resume_t *) h;
};

static int count_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct held_item *c = arg;

	busy_ms(2);
	atomic_fetch_add(&c->ran, 1);
	return ORBIT_SERIAL_DONE;
}

static int park_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct held_item *c = arg;
	orbit_serial_resume_t *h;

	assert_int_equal(orbit_serial_turn_suspend(turn, count_fn, c, 0, &h), 0);
	atomic_store(&c->h, h);
	return ORBIT_SERIAL_SUSPENDED;
}

/*
 * §6.2 close and awaitQuiescence: close refuses new work with -EPIPE and
 * finishes what was accepted; quiescence waits for it, suspended items
 * included; destroy refuses a queue with work outstanding.
 */
static void test_s6_2_close_and_quiescence(void **state)
{
	orbit_worker_pool_t *pool = make_pool(2);
	orbit_serial_queue_t *q = make_queue(orbit_worker_pool_executor(pool), NULL);
	struct held_item c = { 0 };

	for (int i = 0; i < 10; i++)
		assert_int_equal(orbit_serial_queue_enqueue(q, count_fn, &c), 0);
	assert_int_equal(orbit_serial_queue_enqueue(q, park_fn, &c), 0);
	assert_int_equal(orbit_serial_queue_close(q), 0);
	assert_int_equal(orbit_serial_queue_close(q), 0);
	assert_int_equal(orbit_serial_queue_enqueue(q, count_fn, &c), -EPIPE);
	assert_int_equal(orbit_serial_queue_enqueue_lifecycle(q, count_fn, &c), -EPIPE);
	assert_int_equal(orbit_serial_queue_enqueue_barrier_next(q, count_fn, &c), -EPIPE);
	assert_int_equal(qstats(q).rejected_closed, 3);
	assert_int_equal(orbit_serial_queue_await_quiescence(q, 0), -ETIMEDOUT);
	/* The parked item is outstanding: not quiescent, not destroyable. */
	while (!atomic_load(&c.h))
		usleep(100);
	assert_int_equal(atomic_load(&c.ran), 10);
	assert_int_equal(orbit_serial_queue_await_quiescence(q, 20), -ETIMEDOUT);
	assert_int_equal(orbit_serial_queue_destroy(q), -EBUSY);
	/* A resume is accepted work: not refused by close. */
	assert_int_equal(orbit_serial_queue_resume(atomic_load(&c.h)), 0);
	assert_int_equal(orbit_serial_queue_await_quiescence(q, -1), 0);
	assert_int_equal(atomic_load(&c.ran), 11);
	assert_int_equal(qstats(q).app_items, 0);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
	assert_int_equal(orbit_worker_pool_destroy(pool), 0);
}

/* ---- stress: §6.3 under two producers ---------------------------------- */

struct stress {
	orbit_serial_queue_t *q;
	uint64_t n;
	uint64_t next[2]; /* only touched on the queue's turns */
	uint64_t ran, disorder;
	atomic_ullong backpressure;
};

struct producer {
	struct stress *s;
	int id;
};

static struct stress *g_stress;

static int stress_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct stress *s = g_stress;
	uintptr_t v = (uintptr_t)arg;
	int p = (int)(v & 1);
	uint64_t seq = v >> 1;

	if (seq != s->next[p])
		s->disorder++;
	s->next[p] = seq + 1;
	s->ran++;
	return ORBIT_SERIAL_DONE;
}

static void *produce(void *arg)
{
	struct producer *pr = arg;
	struct stress *s = pr->s;
	unsigned long long bp = 0;

	for (uint64_t i = 0; i < s->n; i++) {
		void *v = (void *)(uintptr_t)((i << 1) | (uint64_t)pr->id);
		int r;

		while ((r = orbit_serial_queue_enqueue(s->q, stress_fn, v)) == -EAGAIN) {
			bp++;
			sched_yield();
		}
		assert_int_equal(r, 0);
	}
	atomic_fetch_add(&s->backpressure, bp);
	return NULL;
}

/*
 * §6.3 stress: two producers x 1,000,000 items through one queue on the
 * pool: none lost, none duplicated, each producer's order kept, and the
 * count ceiling holds (backpressure only ever as -EAGAIN).
 */
static void test_s6_3_two_producers_none_lost_order_kept(void **state)
{
	orbit_worker_pool_t *pool = make_pool(2);
	struct stress s = { 0 };
	struct producer pr[2];
	pthread_t t[2];
	uint64_t t0 = orbit_test_now_ns();
	struct orbit_serial_queue_stats st;

	s.n = orbit_test_long() ? 5000000 : 1000000;
	s.q = make_queue(orbit_worker_pool_executor(pool), NULL);
	g_stress = &s;
	for (int i = 0; i < 2; i++) {
		pr[i] = (struct producer){ &s, i };
		assert_int_equal(pthread_create(&t[i], NULL, produce, &pr[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(orbit_serial_queue_await_quiescence(s.q, 120000), 0);
	st = qstats(s.q);
	print_message("2 x %llu items in %.2f s, %llu backpressure retries, %llu slices\n",
		      (unsigned long long)s.n, (orbit_test_now_ns() - t0) / 1e9,
		      (unsigned long long)atomic_load(&s.backpressure),
		      (unsigned long long)st.slices);
	assert_int_equal(s.ran, 2 * s.n);
	assert_int_equal(s.disorder, 0);
	assert_int_equal(s.next[0], s.n);
	assert_int_equal(s.next[1], s.n);
	assert_int_equal(st.accepted, 2 * s.n);
	assert_int_equal(st.completed, 2 * s.n);
	assert_int_equal(st.rejected_count, atomic_load(&s.backpressure));
	assert_int_equal(orbit_serial_queue_destroy(s.q), 0);
	assert_int_equal(orbit_worker_pool_destroy(pool), 0);
}

/* ---- fork: an inherited queue refuses with -ECHILD ----------------------------- */

#define FORK_WAIT_MS 10000 /* a child that hangs (the old behaviour) is killed: a failure */

struct fork_queue_case {
	orbit_worker_pool_t *pool;
	orbit_serial_queue_t *q;
	_Atomic(orbit_serial_resume_t *) h; /* the suspended item's, set by its turn */
	_Atomic int ran;
};

static int fork_count_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct fork_queue_case *c = arg;

	atomic_fetch_add_explicit(&c->ran, 1, memory_order_relaxed);
	return ORBIT_SERIAL_DONE;
}

static int fork_suspend_fn(orbit_serial_turn_t *turn, void *arg)
{
	struct fork_queue_case *c = arg;
	orbit_serial_resume_t *h;

	if (orbit_serial_turn_suspend(turn, fork_count_fn, c, ORBIT_SERIAL_SUSPEND_RELEASE, &h))
		return ORBIT_SERIAL_DONE; /* the test sees no handle and fails */
	/* Release: the handle to the test thread (it may be used at once). */
	atomic_store_explicit(&c->h, h, memory_order_release);
	return ORBIT_SERIAL_SUSPENDED;
}

/* In the child: each call on the parent's queue; returns the first step that
 * did not answer as documented, 0 when all did. */
static int queue_calls_in_child(void *arg)
{
	struct fork_queue_case *c = arg;
	struct orbit_serial_queue_stats st;
	struct orbit_serial_queue_options o;
	orbit_serial_queue_t *q2 = NULL;

	if (orbit_serial_queue_enqueue(c->q, fork_count_fn, c) != -ECHILD)
		return 1; /* before: accepted, and never run */
	if (orbit_serial_queue_enqueue_with_payload_bytes(c->q, fork_count_fn, c, 8) != -ECHILD)
		return 2;
	if (orbit_serial_queue_enqueue_lifecycle(c->q, fork_count_fn, c) != -ECHILD)
		return 3;
	if (orbit_serial_queue_enqueue_barrier_next(c->q, fork_count_fn, c) != -ECHILD)
		return 4;
	if (orbit_serial_queue_resume(atomic_load_explicit(&c->h, memory_order_acquire)) != -ECHILD)
		return 5;
	if (orbit_serial_queue_close(c->q) != -ECHILD)
		return 6;
	if (orbit_serial_queue_await_quiescence(c->q, -1) != -ECHILD)
		return 7; /* before: waited forever for the suspended item */
	if (orbit_serial_queue_destroy(c->q) != -ECHILD)
		return 8;
	/* stats and name read the copy: allowed */
	if (orbit_serial_queue_stats(c->q, &st) != 0 || st.accepted != 1 ||
	    strcmp(orbit_serial_queue_name(c->q), "fork") != 0)
		return 9;
	/* A new queue on the inherited pool could never run: refused. */
	orbit_serial_queue_options_init(&o);
	o.executor = orbit_worker_pool_executor(c->pool);
	if (orbit_serial_queue_create(&o, &q2) != -ECHILD || q2)
		return 10;
	return 0;
}

/*
 * A forked child has a copy of the queue, and its drain would run on the
 * parent's workers, which the child does not have: every enqueue, resume,
 * close, await_quiescence and destroy returns -ECHILD there before it
 * takes the queue lock (destroy frees nothing), stats and name read the
 * copy, a queue made on the inherited pool is refused, and the parent's
 * queue goes on working, its suspended item included.
 */
static void test_queue_forked_child_gets_echild(void **state)
{
	struct fork_queue_case c = { 0 };
	struct orbit_serial_queue_options o;

	c.pool = make_pool(2);
	orbit_serial_queue_options_init(&o);
	o.executor = orbit_worker_pool_executor(c.pool);
	o.name = "fork";
	assert_int_equal(orbit_serial_queue_create(&o, &c.q), 0);
	assert_int_equal(orbit_serial_queue_enqueue(c.q, fork_suspend_fn, &c), 0);
	for (int i = 0; i < FORK_WAIT_MS && !atomic_load_explicit(&c.h, memory_order_acquire); i++)
		usleep(1000);
	assert_non_null(atomic_load_explicit(&c.h, memory_order_acquire));
	assert_int_equal(orbit_test_fork_run(queue_calls_in_child, &c, FORK_WAIT_MS), 0);
	/* The parent's queue is untouched: the resume and a new item run. */
	assert_int_equal(
	    orbit_serial_queue_resume(atomic_load_explicit(&c.h, memory_order_acquire)), 0);
	assert_int_equal(orbit_serial_queue_enqueue(c.q, fork_count_fn, &c), 0);
	assert_int_equal(orbit_serial_queue_await_quiescence(c.q, FORK_WAIT_MS), 0);
	assert_int_equal(atomic_load_explicit(&c.ran, memory_order_relaxed), 2);
	assert_int_equal(orbit_serial_queue_destroy(c.q), 0);
	assert_int_equal(orbit_worker_pool_destroy(c.pool), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_s6_1_policy_defaults_and_invalid_values),
		cmocka_unit_test(test_options_older_accepted_newer_tail_e2big),
		cmocka_unit_test(test_designated_initializer_home_node_is_none),
		cmocka_unit_test(test_policy_zero_is_default_and_size_contract),
		cmocka_unit_test(test_s10_capacity_by_count),
		cmocka_unit_test(test_s10_capacity_by_bytes),
		cmocka_unit_test(test_s5_reservation_returned_after_handler_finishes),
		cmocka_unit_test(test_s6_5_first_submitter_schedules_one_drain_off_its_stack),
		cmocka_unit_test(test_s6_5_refused_drain_withdraws_the_item),
		cmocka_unit_test(test_s6_5_resume_never_drains_on_the_resumers_stack),
		cmocka_unit_test(test_s10_lifecycle_overtakes_until_burst_limit),
		cmocka_unit_test(test_s6_2_barrier_next_runs_right_after_current_turn),
		cmocka_unit_test(test_s10_fairness_turn_cut_at_time_budget),
		cmocka_unit_test(test_s6_4_light_owner_starts_within_budget_during_flood),
		cmocka_unit_test(test_s6_7_suspended_item_queue_does_not_overlap_itself),
		cmocka_unit_test(test_s4_spotwide_actor_work_crosses_two_queues),
		cmocka_unit_test(test_s10_yielded_actor_holds_claim_others_proceed),
		cmocka_unit_test(test_s10_sync_wait_on_own_queue_fails_at_once),
		cmocka_unit_test(test_s6_2_close_and_quiescence),
		cmocka_unit_test(test_s6_3_two_producers_none_lost_order_kept),
		cmocka_unit_test(test_queue_forked_child_gets_echild),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
