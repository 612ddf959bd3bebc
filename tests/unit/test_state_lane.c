// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_state_lane.c: the state lane of spec 06 through its
 * public surface. One test per verification item of 06 §8 (test_s8_*),
 * then the extra cases of issue 3: 2 threads x 1,000,000 submissions, a
 * bidirectional binding table (06 §4) read while it changes, reentrancy
 * through run, try_post and a nested chain, Kind 1/2/3 structures (06 §6),
 * the dual diagnostics surface (06 §5), close and destroy, bad arguments.
 * Posted work runs on the small test executor (tests/common); every test
 * that could hang runs under a deadline and fails instead.
 */
#include "config.h" /* _GNU_SOURCE: pthread_timedjoin_np */

#include "orbit_test.h"
#include "orbit_test_executor.h"
#include "orbit_test_manual_executor.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>

#include <orbit/orbit.h>

#define DEADLINE_MS 20000

/* ---- helpers ---- */

static orbit_state_lane_t *lane_new(const char *name, struct test_executor *ex)
{
	struct orbit_state_lane_options o = {
		.size = sizeof(o),
		.name = name,
		.executor = ex ? test_executor_iface(ex) : (orbit_executor_t){ 0 },
		.home = ORBIT_HOME_NODE_NONE,
	};
	orbit_state_lane_t *lane = NULL;

	assert_int_equal(orbit_state_lane_create(&o, &lane), 0);
	assert_non_null(lane);
	return lane;
}

static void lane_end(orbit_state_lane_t *lane)
{
	assert_int_equal(orbit_state_lane_close_sync(lane), 0);
	assert_int_equal(orbit_state_lane_destroy(lane), 0);
}

struct deadline_call {
	void (*fn)(void *);
	void *arg;
};

static void *deadline_main(void *p)
{
	struct deadline_call *c = p;

	c->fn(c->arg);
	return NULL;
}

/* Run fn(arg) on a thread; fail the test (not hang) if it takes too long. */
static void within_deadline(void (*fn)(void *), void *arg, int ms)
{
	struct deadline_call c = { fn, arg };
	struct timespec ts;
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, deadline_main, &c), 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	if (pthread_timedjoin_np(t, NULL, &ts) != 0) {
		fprintf(stderr, "hung past %d ms\n", ms);
		fail_msg("call hung past its deadline");
	}
}

/* Wait (bounded) until *flag reaches want. */
static bool wait_for(atomic_long *flag, long want)
{
	for (int i = 0; i < DEADLINE_MS; i++) {
		if (atomic_load(flag) >= want)
			return true;
		usleep(1000);
	}
	return false;
}

/* A task that blocks an executor thread until released: keeps drain tasks queued. */
struct plug {
	sem_t go;
	atomic_long entered;
};

static void plug_task(void *arg)
{
	struct plug *p = arg;

	atomic_fetch_add(&p->entered, 1);
	sem_wait(&p->go);
}

/* ---- a counter component (C2 owned by a lane) ---- */

struct counter {
	orbit_state_lane_t *lane;
	long value;	  /* plain: the lane provides exclusivity */
	long last_seq[4]; /* per submitter, for FIFO checks */
	long order_errors;
};

static int counter_incr(void *arg)
{
	struct counter *c = arg;

	return (int)++c->value;
}

static int counter_read(void *arg)
{
	struct counter *c = arg;

	return (int)c->value;
}

/* ---- 06 §8 Single execution and order ---- */

struct submitter {
	struct counter *c;
	int id;
	long n;
	bool post; /* alternate try_post and run */
	long failures;
};

static void *submitter_main(void *p)
{
	struct submitter *s = p;

	for (long i = 0; i < s->n; i++) {
		int rc;

		if (s->post && (i & 1))
			rc = orbit_state_lane_try_post(s->c->lane, counter_incr, s->c);
		else
			rc = orbit_state_lane_run(s->c->lane, counter_incr, s->c);
		if (rc < 0)
			s->failures++;
	}
	return NULL;
}

/* 06 §8: concurrent submitters to one lane lose no update (run and try_post mixed). */
static void test_s8_concurrent_submissions_lose_no_update(void **state)
{
	struct test_executor *ex = test_executor_create(2);
	struct counter c = { .lane = lane_new("counter", ex) };
	struct submitter s[4];
	pthread_t t[4];
	long n = orbit_test_long() ? 500000 : 50000;

	for (int i = 0; i < 4; i++) {
		s[i] = (struct submitter){ .c = &c, .id = i, .n = n, .post = i >= 2 };
		assert_int_equal(pthread_create(&t[i], NULL, submitter_main, &s[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(s[i].failures, 0);
	}
	/* try_post work is accepted, not yet run: close finishes what was accepted. */
	assert_int_equal(orbit_state_lane_close_sync(c.lane), 0);
	assert_int_equal(c.value, 4 * n);
	assert_int_equal(orbit_state_lane_destroy(c.lane), 0);
	test_executor_destroy(ex);
}

struct seq_item {
	struct counter *c;
	int submitter;
	long seq;
};

static int check_seq(void *arg)
{
	struct seq_item *it = arg;
	struct counter *c = it->c;

	if (it->seq != c->last_seq[it->submitter] + 1)
		c->order_errors++;
	c->last_seq[it->submitter] = it->seq;
	c->value++;
	return 0;
}

struct order_thread {
	struct counter *c;
	int id;
	long n;
	struct seq_item *items;
};

static void *order_main(void *p)
{
	struct order_thread *o = p;

	for (long i = 0; i < o->n; i++) {
		o->items[i] = (struct seq_item){ o->c, o->id, i + 1 };
		/* Posts and waiting runs interleaved: one FIFO for both. */
		if (i % 7 == 3)
			assert_int_equal(orbit_state_lane_run(o->c->lane, check_seq, &o->items[i]),
					 0);
		else
			assert_int_equal(
			    orbit_state_lane_try_post(o->c->lane, check_seq, &o->items[i]), 0);
	}
	return NULL;
}

/* 06 §8: work runs in submission order (per submitter, across run and try_post). */
static void test_s8_submissions_run_in_submission_order(void **state)
{
	struct test_executor *ex = test_executor_create(2);
	struct counter c = { .lane = lane_new("order", ex) };
	struct order_thread o[3];
	pthread_t t[3];
	long n = 20000;

	for (int i = 0; i < 3; i++) {
		o[i] = (struct order_thread){ &c, i, n, calloc(n, sizeof(struct seq_item)) };
		assert_int_equal(pthread_create(&t[i], NULL, order_main, &o[i]), 0);
	}
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(orbit_state_lane_close_sync(c.lane), 0);
	assert_int_equal(c.order_errors, 0);
	assert_int_equal(c.value, 3 * n);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(c.last_seq[i], n);
		free(o[i].items);
	}
	assert_int_equal(orbit_state_lane_destroy(c.lane), 0);
	test_executor_destroy(ex);
}

static void count_done(void *arg, int result)
{
	atomic_fetch_add((atomic_long *)arg, 1);
}

static int close_done_sees(void *arg)
{
	return 0;
}

struct close_check {
	struct counter *c;
	long seen_at_close;
	atomic_long fired;
};

static void close_cb(void *arg, int result)
{
	struct close_check *cc = arg;

	cc->seen_at_close = cc->c->value; /* lane is idle and closed: safe to read */
	atomic_fetch_add(&cc->fired, 1);
}

/* 06 §8: a waiting call on a closed lane fails at once; a post returns a failure. */
static void test_s8_closed_lane_fails_run_at_once_and_post(void **state)
{
	struct test_executor *ex = test_executor_create(1);
	struct counter c = { .lane = lane_new("closing", ex) };
	struct close_check cc = { .c = &c };
	atomic_long dones = 0;
	uint64_t t0;

	for (int i = 0; i < 100; i++)
		assert_int_equal(orbit_state_lane_try_post(c.lane, counter_incr, &c), 0);
	assert_int_equal(orbit_state_lane_close(c.lane, close_cb, &cc), 0);
	/* Accepted work finishes; close completes after it. */
	assert_true(wait_for(&cc.fired, 1));
	assert_int_equal(cc.seen_at_close, 100);

	t0 = orbit_test_now_ns();
	assert_int_equal(orbit_state_lane_run(c.lane, counter_incr, &c), -EPIPE);
	assert_true(orbit_test_now_ns() - t0 < 100000000ull); /* at once, not after a wait */
	assert_int_equal(orbit_state_lane_try_post(c.lane, counter_incr, &c), -EPIPE);
	assert_int_equal(
	    orbit_state_lane_run_async(c.lane, close_done_sees, &c, count_done, &dones), -EPIPE);
	assert_int_equal(c.value, 100);
	assert_int_equal(atomic_load(&dones), 0);
	/* A second close only adds its callback, which runs at once on an idle lane. */
	assert_int_equal(orbit_state_lane_close(c.lane, close_cb, &cc), 0);
	assert_int_equal(atomic_load(&cc.fired), 2);
	assert_int_equal(orbit_state_lane_destroy(c.lane), 0);
	test_executor_destroy(ex);
}

/* ---- 06 §8 Reentrancy ---- */

struct reentry {
	orbit_state_lane_t *lane;
	int inner_rc;
	int inner_line;
	int throw_rc;
	char diag[384];
};

static int reenter_run(void *arg)
{
	struct reentry *r = arg;

	r->inner_line = __LINE__ + 1;
	r->inner_rc = orbit_state_lane_run(r->lane, counter_read, NULL);
	snprintf(r->diag, sizeof(r->diag), "%s", orbit_state_lane_last_diagnostic());
	r->throw_rc = orbit_state_lane_throw_if_reentrant(r->lane);
	return 7;
}

static void reentry_body(void *arg)
{
	struct reentry *r = arg;

	assert_int_equal(orbit_state_lane_run(r->lane, reenter_run, r), 7);
}

/* 06 §8: re-entering a lane from its own turn ends at once with an error at that call site. */
static void test_s8_reentry_fails_at_call_site(void **state)
{
	struct reentry r = { .lane = lane_new("bindings", NULL) };
	char where[64];

	within_deadline(reentry_body, &r, DEADLINE_MS);
	assert_int_equal(r.inner_rc, -EDEADLK);
	assert_int_equal(r.throw_rc, -EDEADLK);
	/* The diagnostic names the lane and the caller's file:line. */
	assert_non_null(strstr(r.diag, "\"bindings\""));
	snprintf(where, sizeof(where), "test_state_lane.c:%d", r.inner_line);
	assert_non_null(strstr(r.diag, where));
	assert_int_equal(orbit_state_lane_reentry_count(r.lane), 2);
	/* Outside the turn the same checks pass. */
	assert_int_equal(orbit_state_lane_throw_if_reentrant(r.lane), 0);
	assert_false(orbit_state_lane_is_on_lane(r.lane));
	assert_null(orbit_state_lane_current());
	lane_end(r.lane);
}

/* A component with a retry loop started from a turn (06 §6 Kind 2). */
struct retrier {
	orbit_state_lane_t *lane;
	orbit_executor_t ex;
	bool retrying;	  /* lane-owned */
	int attempts;	  /* lane-owned */
	int turn_over;	  /* lane-owned: set last in the starting turn */
	bool sleep_first; /* the loop's first action is a genuine delay */
	int loop_rc;	  /* what the loop's own lane entry returned */
	int loop_saw_turn_over;
	int inline_rc; /* the hazard: the same loop called inline */
	atomic_long finished;
};

static int retry_attempt(void *arg)
{
	struct retrier *r = arg;

	r->attempts++;
	r->retrying = false;
	return r->turn_over;
}

static void retry_loop(void *arg)
{
	struct retrier *r = arg;

	if (r->sleep_first)
		usleep(2000);
	/* Synchronous prefix (when !sleep_first): enters the lane at once. */
	r->loop_saw_turn_over = orbit_state_lane_run(r->lane, retry_attempt, r);
	r->loop_rc = r->loop_saw_turn_over < 0 ? r->loop_saw_turn_over : 0;
	atomic_fetch_add(&r->finished, 1);
}

static int start_retry_in_turn(void *arg)
{
	struct retrier *r = arg;

	r->retrying = true;
	/* What Kind 2 guards against: running the start on this stack inherits the turn. */
	r->inline_rc = orbit_state_lane_run(r->lane, retry_attempt, r);
	/* The fix: post the start itself, so even its synchronous prefix runs outside. */
	if (orbit_state_lane_detach(&r->ex, retry_loop, r, -1))
		return -1;
	r->turn_over = 1;
	return 0;
}

/* 06 §8: a long-running op started in a turn enters normally after it ended (with and without a synchronous prefix). */
static void test_s8_long_running_op_reenters_after_turn_ends(void **state)
{
	struct test_executor *ex = test_executor_create(1);

	for (int variant = 0; variant < 2; variant++) {
		struct retrier r = { .lane = lane_new("retry", ex),
				     .ex = test_executor_iface(ex),
				     .sleep_first = variant == 1 };

		assert_int_equal(orbit_state_lane_run(r.lane, start_retry_in_turn, &r), 0);
		assert_int_equal(r.inline_rc, -EDEADLK);
		assert_true(wait_for(&r.finished, 1));
		assert_int_equal(r.loop_rc, 0);		   /* no false reentrancy */
		assert_int_equal(r.loop_saw_turn_over, 1); /* it ran after the turn ended */
		assert_int_equal(r.attempts, 1);
		assert_false(r.retrying);
		lane_end(r.lane);
	}
	test_executor_destroy(ex);
}

/*
 * A component that notifies an external listener (06 §6 Kind 3): turn A
 * finishes validation, every state transition and a placeholder claim;
 * the callback runs outside the turn; turn B settles the placeholder.
 */
enum { SUB_NONE, SUB_ACTIVE };
#define SLOT_PLACEHOLDER (-1000)

struct subscriptions {
	orbit_state_lane_t *lane;
	int state;	/* lane-owned */
	int generation; /* lane-owned */
	int slot;	/* lane-owned: SLOT_PLACEHOLDER until turn B */
};

struct sub_view {
	int state, generation, slot;
};

struct sub_call {
	struct subscriptions *s;
	struct sub_view seen;
	int seen_rc;
	int result;
	bool accept;
};

static int sub_snapshot(void *arg)
{
	struct sub_call *c = arg;

	c->seen = (struct sub_view){ c->s->state, c->s->generation, c->s->slot };
	return 0;
}

/* The listener re-enters the component's public surface, as old monitor code did. */
static int listener(struct sub_call *c)
{
	c->seen_rc = orbit_state_lane_run(c->s->lane, sub_snapshot, c);
	return c->seen_rc == 0 ? 42 : c->seen_rc;
}

static int sub_turn_a(void *arg)
{
	struct sub_call *c = arg;

	if (c->s->state != SUB_NONE)
		return -EBUSY;	  /* validation */
	c->s->state = SUB_ACTIVE; /* every transition the old code finished before the callback */
	c->s->generation++;
	c->s->slot = SLOT_PLACEHOLDER; /* placeholder ownership claim */
	return 0;
}

static int sub_turn_b(void *arg)
{
	struct sub_call *c = arg;

	if (c->result < 0) { /* settle the failure */
		c->s->state = SUB_NONE;
		c->s->slot = 0;
	} else {
		c->s->slot = c->result; /* replace the placeholder exactly */
	}
	return 0;
}

static int subscribe(struct sub_call *c)
{
	int rc = orbit_state_lane_run(c->s->lane, sub_turn_a, c);

	if (rc)
		return rc;
	c->result = listener(c); /* outside the turn */
	return orbit_state_lane_run(c->s->lane, sub_turn_b, c);
}

static int subscribe_wrong_in_turn(void *arg)
{
	struct sub_call *c = arg;

	return listener(c); /* callback inside the turn: re-enters */
}

/* 06 §8: external callbacks run outside the turn and see every transition made before them. */
static void test_s8_callback_outside_turn_sees_transitions(void **state)
{
	struct subscriptions s = { .lane = lane_new("subscriptions", NULL) };
	struct sub_call c = { .s = &s };
	struct sub_call wrong = { .s = &s };

	assert_int_equal(subscribe(&c), 0);
	assert_int_equal(c.seen_rc, 0); /* no reentrancy error */
	assert_int_equal(c.seen.state, SUB_ACTIVE);
	assert_int_equal(c.seen.generation, 1);
	assert_int_equal(c.seen.slot, SLOT_PLACEHOLDER);
	assert_int_equal(s.slot, 42); /* turn B replaced the placeholder */
	/* Invoking it inside the turn is refused, not hung. */
	assert_int_equal(orbit_state_lane_run(s.lane, subscribe_wrong_in_turn, &wrong), -EDEADLK);
	assert_int_equal(wrong.seen_rc, -EDEADLK);
	lane_end(s.lane);
}

/* ---- 06 §8 Completion boundary ---- */

struct completion_probe {
	struct counter *c;
	int read_rc;
	bool on_lane;
	bool has_current;
	atomic_long done;
};

static void completion_reenters(void *arg, int result)
{
	struct completion_probe *p = arg;

	p->on_lane = orbit_state_lane_is_on_lane(p->c->lane);
	p->has_current = orbit_state_lane_current() != NULL;
	/* The continuation enters the same lane with a waiting call. */
	p->read_rc = orbit_state_lane_run(p->c->lane, counter_read, p->c);
	atomic_fetch_add(&p->done, 1);
}

static void completion_body(void *arg)
{
	struct completion_probe *p = arg;

	assert_int_equal(
	    orbit_state_lane_run_async(p->c->lane, counter_incr, p->c, completion_reenters, p), 0);
	assert_true(wait_for(&p->done, 1));
}

/* 06 §8: a completion signalled in a turn runs its continuation normally, no reentrancy error. */
static void test_s8_completion_in_turn_runs_continuation(void **state)
{
	struct test_executor *ex = test_executor_create(1);
	struct counter c = { .lane = lane_new("completion", ex) };
	struct completion_probe p = { .c = &c };

	within_deadline(completion_body, &p, DEADLINE_MS);
	assert_int_equal(p.read_rc, 1);
	assert_false(p.on_lane);
	assert_false(p.has_current);
	lane_end(c.lane);
	test_executor_destroy(ex);
}

/* A reservation ledger with a register-before-return contract. */
#define RES_ROUNDS 20
struct ledger;

struct res_arg {
	struct ledger *l;
	long key;
};

struct ledger {
	orbit_state_lane_t *lane;
	bool reserved[RES_ROUNDS]; /* lane-owned, plain */
	/* Each key's request, owned by the ledger (not the caller's stack),
	 * so a broken lane that returns early still runs valid work. */
	struct res_arg req[RES_ROUNDS];
};

static int reserve_on_lane(void *arg)
{
	struct res_arg *a = arg;

	/* Some work before the registration: a holder that reported the
	 * completion before running this would let the caller return ~1 ms
	 * before the key is reserved. */
	usleep(1000);
	a->l->reserved[a->key] = true;
	return 0;
}

/* Reserve(key): the caller that sees the return believes the key is taken. */
static int reserve(struct ledger *l, long key)
{
	l->req[key] = (struct res_arg){ l, key };
	return orbit_state_lane_run(l->lane, reserve_on_lane, &l->req[key]);
}

/* A turn another thread holds until the test lets it go. */
struct holder {
	orbit_state_lane_t *lane;
	atomic_long entered;
	atomic_long go;
	pid_t tid;
	int rc;
};

static int hold_fn(void *arg)
{
	struct holder *h = arg;

	atomic_store(&h->entered, 1);
	while (!atomic_load(&h->go))
		usleep(100);
	return 0;
}

static void *holder_main(void *p)
{
	struct holder *h = p;

	h->rc = orbit_state_lane_run(h->lane, hold_fn, h); /* idle lane: the fast path */
	return NULL;
}

static void holder_start(struct holder *h, orbit_state_lane_t *lane, pthread_t *t)
{
	h->lane = lane;
	atomic_store(&h->entered, 0);
	atomic_store(&h->go, 0);
	assert_int_equal(pthread_create(t, NULL, holder_main, h), 0);
	assert_true(wait_for(&h->entered, 1));
}

/* Join @t within the test deadline: a hang fails the test. */
static void join_within_deadline(pthread_t t)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += DEADLINE_MS / 1000;
	if (pthread_timedjoin_np(t, NULL, &ts) != 0)
		fail_msg("thread hung past its deadline");
}

/* A reserve() caller that checks, right at the return, what it was promised. */
struct reserver {
	struct ledger *l;
	long key;
	atomic_int tid;
	int rc;
	bool seen_at_return;
};

static void *reserver_main(void *p)
{
	struct reserver *r = p;

	atomic_store(&r->tid, orbit_test_gettid());
	r->rc = reserve(r->l, r->key);
	/* Directly after the return, without another turn: the state this
	 * caller observes must already hold its registration. */
	r->seen_at_return = r->l->reserved[r->key];
	return NULL;
}

/* Start a reserve() for @key and wait until it sleeps queued behind the busy turn. */
static void reserver_start(struct reserver *r, struct ledger *l, long key, pthread_t *t)
{
	*r = (struct reserver){ .l = l, .key = key };
	assert_int_equal(pthread_create(t, NULL, reserver_main, r), 0);
	while (!atomic_load(&r->tid))
		usleep(100);
	assert_true(orbit_test_wait_in_futex(atomic_load(&r->tid), DEADLINE_MS));
}

/*
 * 06 §8 Completion boundary: "a method with a register-or-capture-before-
 * return contract has that registration or capture already finished at
 * the moment a caller observes the return". The caller reads the ledger
 * itself right after reserve() returns (no later turn that FIFO would
 * order after the registration anyway). Its work is always run for it by
 * another holder, the case where an early report is possible: half the
 * rounds by a run() caller that took the turn on the fast path and
 * combines on release, half by a drain task of the executor.
 */
static void test_s8_registration_done_at_return(void **state)
{
	struct test_executor *ex = test_executor_create(1);
	static struct ledger l;
	struct holder h = { 0 };
	struct reserver r;
	pthread_t ht, rt;
	long missed = 0;

	memset(&l, 0, sizeof(l));
	l.lane = lane_new("ledger", ex);
	for (long k = 0; k < RES_ROUNDS; k++) {
		if (k % 2 == 0) {
			holder_start(&h, l.lane, &ht); /* a run() caller holds the turn */
		} else {
			atomic_store(&h.entered, 0);
			atomic_store(&h.go, 0);
			h.lane = l.lane;
			/* a drain task holds it */
			assert_int_equal(orbit_state_lane_try_post(l.lane, hold_fn, &h), 0);
			assert_true(wait_for(&h.entered, 1));
		}
		reserver_start(&r, &l, k, &rt);
		atomic_store(&h.go, 1);
		join_within_deadline(rt);
		if (k % 2 == 0)
			join_within_deadline(ht);
		assert_int_equal(r.rc, 0);
		missed += !r.seen_at_return;
	}
	print_message("returns observed before their registration: %ld of %d\n", missed,
		      RES_ROUNDS);
	assert_int_equal(missed, 0);
	lane_end(l.lane);
	test_executor_destroy(ex);
}

struct gate_case {
	struct counter *c;
	pthread_mutex_t gate; /* an operation-protocol gate */
	atomic_long completions;
	int run_rc;
};

static void completion_takes_gate(void *arg, int result)
{
	struct gate_case *g = arg;

	pthread_mutex_lock(&g->gate);
	atomic_fetch_add(&g->completions, 1);
	pthread_mutex_unlock(&g->gate);
}

static void gate_body(void *arg)
{
	struct gate_case *g = arg;

	pthread_mutex_lock(&g->gate);
	/* Waits for lane completion while holding the gate: the lane item
	 * does not take the gate, and the completions that do run async. */
	g->run_rc = orbit_state_lane_run(g->c->lane, counter_incr, g->c);
	pthread_mutex_unlock(&g->gate);
}

/* 06 §8: waiting for lane completion while holding an operation-protocol gate returns. */
static void test_s8_wait_under_gate_returns(void **state)
{
	struct test_executor *ex = test_executor_create(1);
	struct counter c = { .lane = lane_new("gated", ex) };
	struct gate_case g = { .c = &c };
	struct plug plug = { 0 };

	pthread_mutex_init(&g.gate, NULL);
	sem_init(&plug.go, 0, 0);
	/* Keep the executor busy so the posted items wait for a drain. */
	assert_int_equal(test_executor_submit(ex, plug_task, &plug, -1), 0);
	assert_true(wait_for(&plug.entered, 1));
	for (int i = 0; i < 10; i++)
		assert_int_equal(
		    orbit_state_lane_run_async(c.lane, counter_incr, &c, completion_takes_gate, &g),
		    0);
	within_deadline(gate_body, &g, DEADLINE_MS);
	/* It ran behind the ten accepted items (FIFO), without the executor. */
	assert_int_equal(g.run_rc, 11);
	sem_post(&plug.go);
	assert_true(wait_for(&g.completions, 10));
	lane_end(c.lane);
	test_executor_destroy(ex);
	sem_destroy(&plug.go);
	pthread_mutex_destroy(&g.gate);
}

/*
 * A run() caller that holds an operation-protocol gate while the lane
 * makes it combine work posted with run_async(), whose completions take
 * that same gate. The gate is an error-checking mutex, so a completion
 * made on the gate holder's own thread fails with EDEADLK (counted)
 * instead of hanging the test.
 */
struct gated_holder {
	struct holder h;
	pthread_mutex_t gate;
	pthread_t self;
	atomic_long done_calls;
	atomic_long done_on_holder; /* completions made on the gate holder's thread */
	atomic_long self_deadlocks; /* ... that found the gate held by their own thread */
	long done_at_holder_return; /* completions made before run() returned */
	long order[8];
	atomic_long norder;
};

static void *gated_holder_main(void *p)
{
	struct gated_holder *g = p;

	g->self = pthread_self();
	pthread_mutex_lock(&g->gate);
	g->h.rc = orbit_state_lane_run(g->h.lane, hold_fn, &g->h);
	g->done_at_holder_return = atomic_load(&g->done_calls);
	pthread_mutex_unlock(&g->gate);
	return NULL;
}

struct gated_item {
	struct gated_holder *g;
	long id;
};

static int gated_work(void *arg)
{
	return (int)((struct gated_item *)arg)->id;
}

static void gated_done(void *arg, int result)
{
	struct gated_item *it = arg;
	struct gated_holder *g = it->g;
	int rc = pthread_mutex_lock(&g->gate);

	if (pthread_equal(pthread_self(), g->self))
		atomic_fetch_add(&g->done_on_holder, 1);
	if (rc == EDEADLK)
		atomic_fetch_add(&g->self_deadlocks, 1);
	else
		pthread_mutex_unlock(&g->gate);
	g->order[atomic_fetch_add(&g->norder, 1) & 7] = result;
	atomic_fetch_add(&g->done_calls, 1);
}

static orbit_state_lane_t *manual_lane(const char *name, struct manual_ex *x)
{
	struct orbit_state_lane_options o = {
		.size = sizeof(o),
		.name = name,
		.executor = manual_executor(x),
		.home = ORBIT_HOME_NODE_NONE,
	};
	orbit_state_lane_t *lane = NULL;

	assert_int_equal(orbit_state_lane_create(&o, &lane), 0);
	return lane;
}

/*
 * Thread G takes the idle lane's turn on the fast path while holding the
 * gate; three run_async() items are posted behind its turn (no drain task:
 * the turn is busy); G's release finds them and combines. Returns with G
 * joined; @refuse is what the executor answers from just before G's release.
 */
static void gated_round(struct gated_holder *g, orbit_state_lane_t *lane, struct manual_ex *x,
			struct gated_item *items, int refuse)
{
	pthread_t t;

	g->h.lane = lane;
	atomic_store(&g->h.entered, 0);
	atomic_store(&g->h.go, 0);
	assert_int_equal(pthread_create(&t, NULL, gated_holder_main, g), 0);
	assert_true(wait_for(&g->h.entered, 1));
	for (int i = 0; i < 3; i++)
		assert_int_equal(
		    orbit_state_lane_run_async(lane, gated_work, &items[i], gated_done, &items[i]),
		    0);
	assert_int_equal(manual_pending(x), 0); /* queued behind G, nothing submitted */
	manual_set_refuse(x, refuse);
	atomic_store(&g->h.go, 1);
	join_within_deadline(t);
	manual_set_refuse(x, 0);
	assert_int_equal(g->h.rc, 0);
}

/*
 * 06 §5 Completion signals / blocking-compatible boundary, on the fast
 * path: a run() caller that took an idle lane's turn without a lock and,
 * at its release, combines posted run_async() work behind it, must not
 * make those completions on its own thread (it may hold a gate they take:
 * it would deadlock on itself). They are posted to the executor: none has
 * run when its run() returns; the executor makes them, in order.
 */
static void test_s5_fast_path_holder_posts_combined_completions(void **state)
{
	struct manual_ex x;
	orbit_state_lane_t *lane = manual_lane("fast-combine", &x);
	struct gated_holder g = { 0 };
	pthread_mutexattr_t ma;
	struct gated_item items[3] = { { &g, 1 }, { &g, 2 }, { &g, 3 } };

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&g.gate, &ma);
	gated_round(&g, lane, &x, items, 0);
	assert_int_equal(g.done_at_holder_return, 0);
	assert_int_equal(manual_pending(&x), 1); /* one completion task for the three */
	manual_run_all(&x);
	assert_int_equal(atomic_load(&g.done_calls), 3);
	assert_int_equal(atomic_load(&g.done_on_holder), 0);
	assert_int_equal(atomic_load(&g.self_deadlocks), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(g.order[i], i + 1);
	assert_int_equal(orbit_state_lane_close_sync(lane), 0);
	assert_int_equal(orbit_state_lane_destroy(lane), 0);
	pthread_mutex_destroy(&g.gate);
	pthread_mutexattr_destroy(&ma);
}

/*
 * 06 §5, when the executor refuses the completion task: the combining
 * run() caller still does not make the completions itself (the old code
 * did, on the gate holder's thread). They wait on the lane and run, in
 * order and once each, with the next drain task (round 1) or in
 * close_sync() on the thread that waits for the close (round 2).
 */
static void test_s5_refused_completion_task_never_runs_on_run_caller(void **state)
{
	struct manual_ex x;
	orbit_state_lane_t *lane = manual_lane("refused-completions", &x);
	struct gated_holder g = { 0 };
	pthread_mutexattr_t ma;
	struct gated_item items[4] = { { &g, 1 }, { &g, 2 }, { &g, 3 }, { &g, 4 } };

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&g.gate, &ma);

	/* Round 1: the next accepted post's drain task makes them. */
	gated_round(&g, lane, &x, items, -ENOMEM);
	assert_int_equal(g.done_at_holder_return, 0);
	assert_int_equal(manual_pending(&x), 0); /* refused: nothing queued */
	assert_int_equal(atomic_load(&g.done_calls), 0);
	assert_int_equal(orbit_state_lane_destroy(lane), -EBUSY); /* open; completions owed */
	assert_int_equal(
	    orbit_state_lane_run_async(lane, gated_work, &items[3], gated_done, &items[3]), 0);
	manual_run_all(&x);
	assert_int_equal(atomic_load(&g.done_calls), 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(g.order[i], i + 1);

	/* Round 2: close_sync() makes them, on this thread. */
	atomic_store(&g.norder, 0);
	atomic_store(&g.done_calls, 0);
	gated_round(&g, lane, &x, items, -EPIPE);
	assert_int_equal(g.done_at_holder_return, 0);
	assert_int_equal(atomic_load(&g.done_calls), 0);
	assert_int_equal(orbit_state_lane_close_sync(lane), 0);
	assert_int_equal(atomic_load(&g.done_calls), 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(g.order[i], i + 1);
	assert_int_equal(atomic_load(&g.done_on_holder), 0);
	assert_int_equal(atomic_load(&g.self_deadlocks), 0);
	assert_int_equal(manual_pending(&x), 0);
	assert_int_equal(orbit_state_lane_destroy(lane), 0);
	pthread_mutex_destroy(&g.gate);
	pthread_mutexattr_destroy(&ma);
}

/* ---- 06 §8 Cross-collection invariants: the binding table of 06 §4 ---- */

#define ACTORS 64
#define SESSIONS 64

struct binding_table {
	orbit_state_lane_t *lane;
	int actor_to_session[ACTORS]; /* plain maps: the lane provides exclusivity */
	int session_to_actor[SESSIONS];
};

struct bind_arg {
	struct binding_table *t;
	int actor, session;
	int seen_session, seen_back;
};

/* Kind 1: bodies that do not enter the lane, called from inside turns. */
static void unbind_on_lane(struct binding_table *t, int actor)
{
	int s = t->actor_to_session[actor];

	if (s >= 0)
		t->session_to_actor[s] = -1;
	t->actor_to_session[actor] = -1;
}

static void bind_on_lane(struct binding_table *t, int actor, int session)
{
	int other = t->session_to_actor[session];

	if (other >= 0)
		unbind_on_lane(t, other);
	unbind_on_lane(t, actor);
	t->actor_to_session[actor] = session; /* both change in one turn */
	t->session_to_actor[session] = actor;
}

static int bt_bind_turn(void *arg)
{
	struct bind_arg *a = arg;

	bind_on_lane(a->t, a->actor, a->session);
	return 0;
}

static int bt_rebind_turn(void *arg)
{
	struct bind_arg *a = arg;

	unbind_on_lane(a->t, a->actor); /* calling bt_unbind() here would re-enter */
	bind_on_lane(a->t, a->actor, a->session);
	return 0;
}

static int bt_unbind_turn(void *arg)
{
	struct bind_arg *a = arg;

	unbind_on_lane(a->t, a->actor);
	return 0;
}

static int bt_lookup_turn(void *arg)
{
	struct bind_arg *a = arg;

	a->seen_session = a->t->actor_to_session[a->actor];
	a->seen_back = a->seen_session >= 0 ? a->t->session_to_actor[a->seen_session] : -1;
	return 0;
}

/* Public surface. Each enters the lane exactly once. */
static int bt_bind(struct binding_table *t, int actor, int session)
{
	struct bind_arg a = { .t = t, .actor = actor, .session = session };

	return orbit_state_lane_run(t->lane, bt_bind_turn, &a);
}

static int bt_unbind(struct binding_table *t, int actor)
{
	struct bind_arg a = { .t = t, .actor = actor, .session = -1 };

	return orbit_state_lane_run(t->lane, bt_unbind_turn, &a);
}

static int bt_rebind(struct binding_table *t, int actor, int session)
{
	struct bind_arg a = { .t = t, .actor = actor, .session = session };

	return orbit_state_lane_run(t->lane, bt_rebind_turn, &a);
}

static void bt_init(struct binding_table *t, struct test_executor *ex)
{
	t->lane = lane_new("binding-table", ex);
	for (int i = 0; i < ACTORS; i++)
		t->actor_to_session[i] = -1;
	for (int i = 0; i < SESSIONS; i++)
		t->session_to_actor[i] = -1;
}

struct bt_worker {
	struct binding_table *t;
	unsigned seed;
	long n;
	bool posted; /* writers: post changes instead of waiting */
	long disagreements;
	long errors;
	atomic_bool *stop;
};

static struct bind_arg *posted_args;
static atomic_long posted_next;

static void *bt_writer(void *p)
{
	struct bt_worker *w = p;

	for (long i = 0; i < w->n; i++) {
		int actor = rand_r(&w->seed) % ACTORS, session = rand_r(&w->seed) % SESSIONS;
		int op = rand_r(&w->seed) % 4, rc;

		if (w->posted) {
			struct bind_arg *a = &posted_args[atomic_fetch_add(&posted_next, 1)];

			*a = (struct bind_arg){ .t = w->t, .actor = actor, .session = session };
			rc = orbit_state_lane_try_post(w->t->lane,
						       op == 0 ? bt_unbind_turn : bt_bind_turn, a);
		} else {
			rc = op == 0   ? bt_unbind(w->t, actor)
			     : op == 1 ? bt_rebind(w->t, actor, session)
				       : bt_bind(w->t, actor, session);
		}
		if (rc)
			w->errors++;
	}
	return NULL;
}

static void *bt_reader(void *p)
{
	struct bt_worker *w = p;

	while (!atomic_load(w->stop)) {
		struct bind_arg a = { .t = w->t, .actor = rand_r(&w->seed) % ACTORS };

		if (orbit_state_lane_run(w->t->lane, bt_lookup_turn, &a)) {
			w->errors++;
			continue;
		}
		if (a.seen_session >= 0 && a.seen_back != a.actor)
			w->disagreements++;
	}
	return NULL;
}

static int bt_check_all(void *arg)
{
	struct binding_table *t = arg;
	int bad = 0;

	for (int a = 0; a < ACTORS; a++)
		if (t->actor_to_session[a] >= 0 && t->session_to_actor[t->actor_to_session[a]] != a)
			bad++;
	for (int s = 0; s < SESSIONS; s++)
		if (t->session_to_actor[s] >= 0 && t->actor_to_session[t->session_to_actor[s]] != s)
			bad++;
	return bad;
}

static void binding_table_run(bool posted, long writes)
{
	struct test_executor *ex = test_executor_create(1);
	static struct binding_table t;
	atomic_bool stop = false;
	struct bt_worker w[4];
	pthread_t th[4];

	bt_init(&t, ex);
	if (posted) {
		posted_args = calloc(2 * writes, sizeof(*posted_args));
		atomic_store(&posted_next, 0);
	}
	for (int i = 0; i < 4; i++) {
		w[i] = (struct bt_worker){
			.t = &t, .seed = 17u * (i + 1), .n = writes, .posted = posted, .stop = &stop
		};
		assert_int_equal(pthread_create(&th[i], NULL, i < 2 ? bt_writer : bt_reader, &w[i]),
				 0);
	}
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	/* Readers keep reading while the posted tail drains. */
	assert_int_equal(orbit_state_lane_close_sync(t.lane), 0);
	atomic_store(&stop, true);
	pthread_join(th[2], NULL);
	pthread_join(th[3], NULL);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(w[i].disagreements, 0);
		if (i < 2)
			assert_int_equal(w[i].errors, 0);
	}
	assert_int_equal(bt_check_all(&t), 0);
	assert_int_equal(orbit_state_lane_destroy(t.lane), 0);
	test_executor_destroy(ex);
	free(posted_args);
	posted_args = NULL;
}

/* 06 §8: concurrent changes to collections sharing an invariant are never seen disagreeing. */
static void test_s8_cross_collection_invariant_holds(void **state)
{
	binding_table_run(false, orbit_test_long() ? 500000 : 50000);
}

/* Issue 3: the bidirectional binding table changed by posted writes while readers check. */
static void test_binding_table_posted_writes_readers_agree(void **state)
{
	binding_table_run(true, orbit_test_long() ? 500000 : 50000);
}

/* ---- issue 3 extras ---- */

struct million {
	struct counter *c;
	long n;
	long errors;
};

static void *million_main(void *p)
{
	struct million *m = p;

	for (long i = 0; i < m->n; i++)
		if (orbit_state_lane_run(m->c->lane, counter_incr, m->c) < 0)
			m->errors++;
	return NULL;
}

/* Issue 3: 2 threads x 1,000,000 waiting submissions, no lost update. */
static void test_two_threads_million_submissions_each(void **state)
{
	struct counter c = { .lane = lane_new("million", NULL) };
	struct million m[2] = { { .c = &c, .n = 1000000 }, { .c = &c, .n = 1000000 } };
	pthread_t t[2];

	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, million_main, &m[i]), 0);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(m[i].errors, 0);
	}
	assert_int_equal(orbit_state_lane_run(c.lane, counter_read, &c), 2000000);
	lane_end(c.lane);
}

static int post_from_turn(void *arg)
{
	struct reentry *r = arg;

	r->inner_line = __LINE__ + 1;
	r->inner_rc = orbit_state_lane_try_post(r->lane, counter_read, NULL);
	snprintf(r->diag, sizeof(r->diag), "%s", orbit_state_lane_last_diagnostic());
	r->throw_rc = orbit_state_lane_run_async(r->lane, counter_read, NULL, count_done, NULL);
	return 0;
}

static void post_reentry_body(void *arg)
{
	struct reentry *r = arg;

	assert_int_equal(orbit_state_lane_run(r->lane, post_from_turn, r), 0);
}

/* Issue 3: reentrancy through try_post (and run_async) is refused at the call site. */
static void test_reentry_through_try_post(void **state)
{
	struct test_executor *ex = test_executor_create(1);
	struct reentry r = { .lane = lane_new("posting", ex) };
	char where[64];

	within_deadline(post_reentry_body, &r, DEADLINE_MS);
	assert_int_equal(r.inner_rc, -EDEADLK);
	assert_int_equal(r.throw_rc, -EDEADLK);
	assert_non_null(strstr(r.diag, "\"posting\""));
	assert_non_null(strstr(r.diag, "try_post"));
	snprintf(where, sizeof(where), "test_state_lane.c:%d", r.inner_line);
	assert_non_null(strstr(r.diag, where));
	lane_end(r.lane);
	test_executor_destroy(ex);
}

struct chain {
	orbit_state_lane_t *a, *b;
	int b_rc, a_again_rc, throw_a_rc;
	bool on_a_in_b, on_b_in_b;
	orbit_state_lane_t *current_in_b;
	char diag[384];
};

static int chain_in_b(void *arg)
{
	struct chain *c = arg;

	c->on_a_in_b = orbit_state_lane_is_on_lane(c->a);
	c->on_b_in_b = orbit_state_lane_is_on_lane(c->b);
	c->current_in_b = orbit_state_lane_current();
	c->a_again_rc = orbit_state_lane_run(c->a, counter_read, NULL); /* A -> B -> A */
	snprintf(c->diag, sizeof(c->diag), "%s", orbit_state_lane_last_diagnostic());
	c->throw_a_rc = orbit_state_lane_throw_if_reentrant(c->a);
	return 5;
}

static int chain_in_a(void *arg)
{
	struct chain *c = arg;

	c->b_rc = orbit_state_lane_run(c->b, chain_in_b, c); /* nesting A -> B is allowed */
	return 0;
}

static void chain_body(void *arg)
{
	struct chain *c = arg;

	assert_int_equal(orbit_state_lane_run(c->a, chain_in_a, c), 0);
}

/* Kind 1 broken on purpose: a public method called from inside the component's own turn. */
static int bt_bind_calls_public_unbind(void *arg)
{
	struct bind_arg *a = arg;

	return bt_unbind(a->t, a->actor);
}

/* Issue 3: reentrancy through a nested helper chain (A -> B -> A) and a public helper. */
static void test_reentry_through_nested_helper(void **state)
{
	struct chain c = { .a = lane_new("outer", NULL), .b = lane_new("inner", NULL) };
	static struct binding_table t;
	struct bind_arg a;

	within_deadline(chain_body, &c, DEADLINE_MS);
	assert_int_equal(c.b_rc, 5);
	assert_int_equal(c.a_again_rc, -EDEADLK);
	assert_int_equal(c.throw_a_rc, -EDEADLK);
	assert_true(c.on_a_in_b);
	assert_true(c.on_b_in_b);
	assert_ptr_equal(c.current_in_b, c.b);
	assert_non_null(strstr(c.diag, "\"outer\""));

	bt_init(&t, NULL);
	a = (struct bind_arg){ .t = &t, .actor = 3, .session = 4 };
	assert_int_equal(bt_bind(&t, 3, 4), 0);
	assert_int_equal(orbit_state_lane_run(t.lane, bt_bind_calls_public_unbind, &a), -EDEADLK);
	assert_int_equal(bt_rebind(&t, 3, 5), 0); /* the Kind 1 shape works */
	assert_int_equal(t.actor_to_session[3], 5);
	assert_int_equal(t.session_to_actor[4], -1);
	lane_end(t.lane);
	lane_end(c.a);
	lane_end(c.b);
}

static char logged[512];
static atomic_long log_calls;

static void test_log_hook(const char *msg)
{
	snprintf(logged, sizeof(logged), "%s", msg);
	atomic_fetch_add(&log_calls, 1);
}

struct diag_async {
	atomic_long done;
	int prev;
};

static void diag_done(void *arg, int prev)
{
	struct diag_async *d = arg;

	d->prev = prev;
	atomic_fetch_add(&d->done, 1);
}

static int sync_bridge_in_turn(void *arg)
{
	return orbit_state_lane_set_diagnostics(arg, ORBIT_STATE_LANE_DIAG_LOG);
}

/* 06 §5 dual surfaces: the diagnostics level, async canonical, sync bridge over it. */
static void test_dual_surface_diagnostics_level(void **state)
{
	struct test_executor *ex = test_executor_create(1);
	struct reentry r = { .lane = lane_new("diag", ex) };
	struct diag_async d = { 0 };
	orbit_state_lane_log_fn old = orbit_state_lane_set_log_hook(test_log_hook);

	/* RECORD (default): a refusal is recorded, not logged. */
	within_deadline(reentry_body, &r, DEADLINE_MS);
	assert_int_equal(atomic_load(&log_calls), 0);
	/* Canonical async setter: completion gets the previous level. */
	assert_int_equal(orbit_state_lane_set_diagnostics_async(r.lane, ORBIT_STATE_LANE_DIAG_LOG,
								diag_done, &d),
			 0);
	assert_true(wait_for(&d.done, 1));
	assert_int_equal(d.prev, ORBIT_STATE_LANE_DIAG_RECORD);
	within_deadline(reentry_body, &r, DEADLINE_MS);
	assert_int_equal(atomic_load(&log_calls), 2); /* run and throw_if_reentrant */
	assert_non_null(strstr(logged, "\"diag\""));
	/* Sync bridge: returns the previous level once applied. */
	assert_int_equal(orbit_state_lane_set_diagnostics(r.lane, ORBIT_STATE_LANE_DIAG_RECORD),
			 ORBIT_STATE_LANE_DIAG_LOG);
	within_deadline(reentry_body, &r, DEADLINE_MS);
	assert_int_equal(atomic_load(&log_calls), 2);
	/* The sync bridge is refused inside a lane turn (framework context). */
	assert_int_equal(orbit_state_lane_run(r.lane, sync_bridge_in_turn, r.lane), -EDEADLK);
	assert_int_equal(orbit_state_lane_set_diagnostics(r.lane, 7), -EINVAL);
	orbit_state_lane_set_log_hook(old);
	lane_end(r.lane);
	test_executor_destroy(ex);
}

struct waiter_on_executor {
	struct counter *c;
	atomic_long done;
	int rc;
};

static void run_from_executor_task(void *arg)
{
	struct waiter_on_executor *w = arg;

	w->rc = orbit_state_lane_run(w->c->lane, counter_incr, w->c);
	atomic_fetch_add(&w->done, 1);
}

/* Issue 3: a blocked run never holds a thread the lane's own work needs. */
static void test_run_on_only_executor_thread_does_not_wait_for_it(void **state)
{
	struct test_executor *ex = test_executor_create(1);
	struct counter c = { .lane = lane_new("single", ex) };
	struct waiter_on_executor w = { .c = &c };
	struct plug plug = { 0 };

	sem_init(&plug.go, 0, 0);
	assert_int_equal(test_executor_submit(ex, plug_task, &plug, -1), 0);
	assert_true(wait_for(&plug.entered, 1));
	/* Behind the plug: a task that will run() the lane on the only executor thread. */
	assert_int_equal(test_executor_submit(ex, run_from_executor_task, &w, -1), 0);
	/* Posted work: its drain task queues behind that task, on the same thread. */
	for (int i = 0; i < 50; i++)
		assert_int_equal(orbit_state_lane_try_post(c.lane, counter_incr, &c), 0);
	sem_post(&plug.go);
	assert_true(wait_for(&w.done, 1));
	assert_int_equal(w.rc, 51); /* took the promised turn over and ran the 50 first */
	lane_end(c.lane);
	test_executor_destroy(ex);
	sem_destroy(&plug.go);
}

/* Issue 3: close from inside a turn, close_sync refused there, destroy only when done. */
static int close_inside(void *arg)
{
	struct reentry *r = arg;

	r->throw_rc = orbit_state_lane_close_sync(r->lane);
	r->inner_rc = orbit_state_lane_close(r->lane, NULL, NULL);
	return 0;
}

static void test_close_and_destroy_rules(void **state)
{
	struct reentry r = { .lane = lane_new("lifecycle", NULL) };

	assert_int_equal(orbit_state_lane_destroy(r.lane), -EBUSY); /* still open */
	assert_int_equal(orbit_state_lane_run(r.lane, close_inside, &r), 0);
	assert_int_equal(r.throw_rc, -EDEADLK);
	assert_int_equal(r.inner_rc, 0);
	assert_int_equal(orbit_state_lane_run(r.lane, counter_read, NULL), -EPIPE);
	assert_int_equal(orbit_state_lane_close_sync(r.lane), 0);
	assert_int_equal(orbit_state_lane_destroy(r.lane), 0);
	assert_int_equal(orbit_state_lane_destroy(NULL), 0);
}

static int noop_work(void *arg)
{
	(void)arg;
	return 0;
}

/*
 * The options contract (issue 10, base/options.h): options from an older
 * build (cut before their last field, diagnostics) are accepted with it
 * defaulted; from a newer build, accepted with a zero unknown tail and
 * -E2BIG with a set one.
 */
static void test_options_older_accepted_newer_tail_e2big(void **state)
{
	struct {
		struct orbit_state_lane_options o;
		uint64_t unknown;
	} big;
	struct orbit_state_lane_options o;
	orbit_state_lane_t *lane = NULL;

	(void)state;
	orbit_state_lane_options_init(&o);
	o.name = "older";
	o.diagnostics = 9; /* not read: past the caller's size */
	o.size = offsetof(struct orbit_state_lane_options, diagnostics);
	assert_int_equal(orbit_state_lane_create(&o, &lane), 0);
	assert_string_equal(orbit_state_lane_name(lane), "older");
	lane_end(lane);
	memset(&big, 0, sizeof(big));
	orbit_state_lane_options_init(&big.o);
	big.o.size = sizeof(big);
	assert_int_equal(orbit_state_lane_create(&big.o, &lane), 0);
	lane_end(lane);
	lane = NULL;
	big.unknown = 1;
	assert_int_equal(orbit_state_lane_create(&big.o, &lane), -E2BIG);
	assert_null(lane);
}

/*
 * Zero means the default (issue 10): a designated initializer that does not
 * name the home node posts with ORBIT_NODE_ANY, never node 0;
 * ORBIT_HOME_NODE(0) posts with node 0.
 */
static void test_designated_initializer_home_node_is_none(void **state)
{
	struct manual_ex x;
	struct orbit_state_lane_options o = { .size = sizeof(o), .executor = manual_executor(&x) };
	orbit_state_lane_t *lane;

	(void)state;
	for (int i = 0; i < 2; i++) {
		o.home = i == 0 ? ORBIT_HOME_NODE_NONE : ORBIT_HOME_NODE(0);
		assert_int_equal(orbit_state_lane_create(&o, &lane), 0);
		x.last_node = 99;
		x.submits = 0;
		assert_int_equal(orbit_state_lane_try_post(lane, noop_work, NULL), 0);
		assert_int_equal(x.submits, 1);
		assert_int_equal(x.last_node, i == 0 ? ORBIT_NODE_ANY : 0);
		manual_run_all(&x);
		lane_end(lane);
	}
}

/*
 * Issue 12 (try_post with 2 producers): a block of posted nodes whose
 * nodes all ran goes to the lane's spare slot and is carved again, so a
 * steady stream of posts makes no malloc() per block (nor a free() on
 * the drain's thread into the poster's arena). Counted by a malloc()
 * interposed in this program for the blocks' size class (>= 4 KiB), over
 * 40 blocks' worth of posts, each batch run and released before the
 * next (two barrier run() calls). The turns a drain now counts once per
 * chunk (not per item, on the line posters write) are all counted.
 * Under a sanitizer (whose allocator the counting malloc() would bypass)
 * the same posts and reuses run, checked by it, without the count.
 */
#if defined(__GLIBC__) && !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define LANE_COUNT_MALLOC 1
extern void *__libc_malloc(size_t n);
static _Atomic int big_malloc_counting;
static _Atomic long big_mallocs;

void *malloc(size_t n)
{
	/* Relaxed: a test counter read after the counted calls returned on this thread */
	if (n >= 4096 && atomic_load_explicit(&big_malloc_counting, memory_order_relaxed))
		atomic_fetch_add_explicit(&big_mallocs, 1, memory_order_relaxed);
	return __libc_malloc(n);
}
#endif

static int slab_noop(void *arg)
{
	(void)arg;
	return 0;
}

static void test_posted_blocks_reused_not_reallocated(void **state)
{
	struct test_executor *ex = test_executor_create(1);
	orbit_state_lane_t *lane = lane_new("slab", ex);
	struct orbit_state_lane_stats st;

	for (int batch = 0; batch < 42; batch++) {
#ifdef LANE_COUNT_MALLOC
		if (batch == 2) /* the first blocks (current + spare) are allocated by now */
			atomic_store(&big_malloc_counting, 1);
#endif
		for (int i = 0; i < 64; i++)
			assert_int_equal(orbit_state_lane_try_post(lane, slab_noop, NULL), 0);
		/* FIFO: after them; the second only after the drain released the chunk of the first */
		assert_int_equal(orbit_state_lane_run(lane, slab_noop, NULL), 0);
		assert_int_equal(orbit_state_lane_run(lane, slab_noop, NULL), 0);
	}
#ifdef LANE_COUNT_MALLOC
	atomic_store(&big_malloc_counting, 0);
	print_message("blocks allocated for 40 x 64 posts: %ld\n", atomic_load(&big_mallocs));
	assert_true(atomic_load(&big_mallocs) <= 2);
#endif
	/* Every turn counted, also those a drain counts once per chunk */
	assert_int_equal(orbit_state_lane_stats(lane, &st), 0);
	assert_int_equal(st.posts, 42 * 64);
	assert_true(st.turns >= 42 * 66);
	lane_end(lane);
	test_executor_destroy(ex);
}

/*
 * Spec 06 §5 (the C3 counters) and include/orbit/state_lane.h "turns": a
 * drain counts its turns once per chunk, but a run() caller whose node a
 * drain ran sees its own turn counted when run() returns, even while the
 * drain still runs the rest of that chunk. The drain is held in a posted
 * item (gate) until the caller queued, then runs [caller, blocker] as one
 * chunk; the blocker waits until the caller has read the stats.
 */
struct turns_seen {
	orbit_state_lane_t *lane;
	atomic_long entered, gate, caller_read;
	uint64_t turns;
	int run_rc, stats_rc;
};

static int turns_hold(void *arg)
{
	struct turns_seen *t = arg;

	atomic_store(&t->entered, 1);
	wait_for(&t->gate, 1);
	return 0;
}

static int turns_after_caller(void *arg)
{
	wait_for(&((struct turns_seen *)arg)->caller_read, 1); /* bounded: never hangs */
	return 0;
}

static int turns_noop(void *arg)
{
	(void)arg;
	return 0;
}

static void *turns_caller_main(void *arg)
{
	struct turns_seen *t = arg;
	struct orbit_state_lane_stats st;

	t->run_rc = orbit_state_lane_run(t->lane, turns_noop, NULL);
	t->stats_rc = orbit_state_lane_stats(t->lane, &st);
	t->turns = st.turns;
	atomic_store(&t->caller_read, 1);
	return NULL;
}

static void test_waiter_sees_its_turn_counted_mid_chunk(void **state)
{
	struct test_executor *ex = test_executor_create(1);
	struct turns_seen t = { .lane = lane_new("turns", ex) };
	pthread_t caller;

	(void)state;
	assert_int_equal(orbit_state_lane_try_post(t.lane, turns_hold, &t), 0);
	assert_true(wait_for(&t.entered, 1)); /* the drain holds the turn, its chunk taken */
	assert_int_equal(pthread_create(&caller, NULL, turns_caller_main, &t), 0);
	usleep(50000); /* the caller queues behind the drain (its spins take microseconds) */
	assert_int_equal(orbit_state_lane_try_post(t.lane, turns_after_caller, &t), 0);
	atomic_store(&t.gate, 1);
	assert_int_equal(pthread_join(caller, NULL), 0);
	assert_int_equal(t.run_rc, 0);
	assert_int_equal(t.stats_rc, 0);
	/* the held item and the caller's own turn */
	print_message("turns seen by the caller: %llu\n", (unsigned long long)t.turns);
	assert_true(t.turns >= 2);
	lane_end(t.lane);
	test_executor_destroy(ex);
}

/* Issue 3: argument errors are returned, never aborts. */
static void test_bad_arguments(void **state)
{
	struct orbit_state_lane_options o = { .size = sizeof(o) };
	orbit_state_lane_t *lane = NULL;
	orbit_executor_t none = { 0 };

	assert_int_equal(orbit_state_lane_create(NULL, &lane), -EINVAL);
	o.size = 4;
	assert_int_equal(orbit_state_lane_create(&o, &lane), -EINVAL);
	o.size = sizeof(o);
	o.diagnostics = 9;
	assert_int_equal(orbit_state_lane_create(&o, &lane), -EINVAL);
	o.diagnostics = 0;
	assert_int_equal(orbit_state_lane_create(&o, &lane), 0);
	assert_string_equal(orbit_state_lane_name(lane), "lane");
	assert_int_equal(orbit_state_lane_run(NULL, counter_read, NULL), -EINVAL);
	assert_int_equal(orbit_state_lane_run(lane, NULL, NULL), -EINVAL);
	/* No executor: posting is not possible. */
	assert_int_equal(orbit_state_lane_try_post(lane, counter_read, NULL), -EINVAL);
	assert_int_equal(orbit_state_lane_run_async(lane, counter_read, NULL, NULL, NULL), -EINVAL);
	assert_int_equal(orbit_state_lane_throw_if_reentrant(NULL), -EINVAL);
	assert_int_equal(orbit_state_lane_close(NULL, NULL, NULL), -EINVAL);
	assert_int_equal(orbit_state_lane_detach(&none, plug_task, NULL, -1), -EINVAL);
	assert_int_equal(orbit_state_lane_detach(NULL, plug_task, NULL, -1), -EINVAL);
	assert_false(orbit_state_lane_is_on_lane(NULL));
	lane_end(lane);
}

/* ---- fork: an inherited lane refuses with -ECHILD ------------------------------ */

#define FORK_WAIT_MS 10000 /* a child that hangs (the old behaviour) is killed: a failure */

struct fork_lane_case {
	orbit_worker_pool_t *pool;
	orbit_state_lane_t *lane;
	_Atomic int ran;
};

static int fork_lane_fn(void *arg)
{
	struct fork_lane_case *c = arg;

	atomic_fetch_add_explicit(&c->ran, 1, memory_order_relaxed);
	return 42;
}

static void fork_lane_done(void *arg, int result)
{
}

/* In the child: each call on the parent's lane; returns the first step that
 * did not answer as documented, 0 when all did. */
static int lane_calls_in_child(void *arg)
{
	struct fork_lane_case *c = arg;
	struct orbit_state_lane_stats st;
	struct orbit_state_lane_options o = { .size = sizeof(o), .name = "child" };
	orbit_state_lane_t *own = NULL;

	if (orbit_state_lane_run(c->lane, fork_lane_fn, c) != -ECHILD)
		return 1; /* before: ran it (42), or waited for a parent's turn */
	if (orbit_state_lane_try_post(c->lane, fork_lane_fn, c) != -ECHILD)
		return 2; /* before: accepted, and never run */
	if (orbit_state_lane_run_async(c->lane, fork_lane_fn, c, fork_lane_done, NULL) != -ECHILD)
		return 3;
	if (orbit_state_lane_set_diagnostics_async(c->lane, ORBIT_STATE_LANE_DIAG_LOG,
						   fork_lane_done, NULL) != -ECHILD)
		return 4;
	if (orbit_state_lane_set_diagnostics(c->lane, ORBIT_STATE_LANE_DIAG_LOG) != -ECHILD)
		return 5;
	if (orbit_state_lane_close(c->lane, NULL, NULL) != -ECHILD)
		return 6;
	if (orbit_state_lane_close_sync(c->lane) != -ECHILD)
		return 7;
	if (orbit_state_lane_destroy(c->lane) != -ECHILD)
		return 8;
	/* stats and name read the copy: allowed */
	if (orbit_state_lane_stats(c->lane, &st) != 0 || st.turns != 1 ||
	    strcmp(orbit_state_lane_name(c->lane), "fork") != 0)
		return 9;
	/* A lane posting to the inherited pool could never drain: refused. */
	o.executor = orbit_worker_pool_executor(c->pool);
	if (orbit_state_lane_create(&o, &own) != -ECHILD || own)
		return 10;
#ifndef ORBIT_TEST_NO_FORK_AMID_THREADS
	/* A lane of the child's own (no executor) works. It allocates, in a
	 * child forked while the pool's threads run (orbit_test.h). */
	o.executor = (orbit_executor_t){ 0 };
	if (orbit_state_lane_create(&o, &own) != 0 ||
	    orbit_state_lane_run(own, fork_lane_fn, c) != 42)
		return 11;
	if (orbit_state_lane_close_sync(own) != 0 || orbit_state_lane_destroy(own) != 0)
		return 12;
#else
	(void)own;
#endif
	return 0;
}

/*
 * A forked child has a copy of the lane, whose turn or lock a parent's
 * thread may have held at the fork and whose drain runs on the parent's
 * workers: run, try_post, run_async, the diagnostics calls, close,
 * close_sync and destroy return -ECHILD there before they touch the turn
 * word or the lock (destroy frees nothing), stats and name read the copy,
 * a lane made on the inherited pool is refused, and the parent's lane goes
 * on working.
 */
static void test_lane_forked_child_gets_echild(void **state)
{
	struct fork_lane_case c = { 0 };
	struct orbit_worker_pool_options po;
	struct orbit_state_lane_options o = { .size = sizeof(o), .name = "fork" };

	orbit_worker_pool_options_init(&po);
	po.nthreads = 2;
	assert_int_equal(orbit_worker_pool_create(&po, &c.pool), 0);
	o.executor = orbit_worker_pool_executor(c.pool);
	assert_int_equal(orbit_state_lane_create(&o, &c.lane), 0);
	assert_int_equal(orbit_state_lane_run(c.lane, fork_lane_fn, &c), 42);
	assert_int_equal(orbit_test_fork_run(lane_calls_in_child, &c, FORK_WAIT_MS), 0);
	/* The parent's lane is untouched: run and a post both run. */
	assert_int_equal(orbit_state_lane_run(c.lane, fork_lane_fn, &c), 42);
	assert_int_equal(orbit_state_lane_try_post(c.lane, fork_lane_fn, &c), 0);
	assert_int_equal(orbit_state_lane_close_sync(c.lane), 0);
	assert_int_equal(atomic_load_explicit(&c.ran, memory_order_relaxed), 3);
	assert_int_equal(orbit_state_lane_destroy(c.lane), 0);
	assert_int_equal(orbit_worker_pool_destroy(c.pool), 0);
}

/* ---- fork: a parent's thread holds the turn at the fork ---------------------- */

struct fork_held_case {
	orbit_worker_pool_t *pool;
	orbit_state_lane_t *lane;
	_Atomic int inside;  /* the holder's fn runs: the turn is held */
	_Atomic int release; /* lets it return */
};

static int fork_held_fn(void *arg)
{
	struct fork_held_case *c = arg;

	atomic_store(&c->inside, 1);
	while (!atomic_load(&c->release))
		usleep(1000);
	return 7;
}

static void *fork_held_thread(void *arg)
{
	struct fork_held_case *c = arg;

	return (void *)(intptr_t)orbit_state_lane_run(c->lane, fork_held_fn, c);
}

/* In the child, the turn held by a thread that does not exist here: each
 * call must answer -ECHILD at once (before, run and close_sync waited for
 * the turn forever and the child was killed). */
static int held_calls_in_child(void *arg)
{
	struct fork_held_case *c = arg;
	struct fork_lane_case r = { 0 };

	if (orbit_state_lane_run(c->lane, fork_lane_fn, &r) != -ECHILD)
		return 1;
	if (orbit_state_lane_try_post(c->lane, fork_lane_fn, &r) != -ECHILD)
		return 2;
	if (orbit_state_lane_close_sync(c->lane) != -ECHILD)
		return 3;
	return 0;
}

/*
 * A parent's thread sits inside orbit_state_lane_run() (its fn waits on a
 * flag) when the parent forks: the child's copy of the lane has the turn
 * taken by a thread that does not exist there. run, try_post and
 * close_sync in the child return -ECHILD without waiting for it; the
 * parent's holder then returns and the lane works on.
 */
static void test_lane_turn_held_across_fork_child_gets_echild(void **state)
{
	struct fork_held_case c = { 0 };
	struct fork_lane_case ran = { 0 };
	struct orbit_worker_pool_options po;
	struct orbit_state_lane_options o = { .size = sizeof(o), .name = "held" };
	pthread_t t;
	void *rc;

	(void)state;
	orbit_worker_pool_options_init(&po);
	po.nthreads = 1;
	assert_int_equal(orbit_worker_pool_create(&po, &c.pool), 0);
	o.executor = orbit_worker_pool_executor(c.pool);
	assert_int_equal(orbit_state_lane_create(&o, &c.lane), 0);
	assert_int_equal(pthread_create(&t, NULL, fork_held_thread, &c), 0);
	while (!atomic_load(&c.inside))
		usleep(1000);
	assert_int_equal(orbit_test_fork_run(held_calls_in_child, &c, FORK_WAIT_MS), 0);
	atomic_store(&c.release, 1);
	assert_int_equal(pthread_join(t, &rc), 0);
	assert_int_equal((int)(intptr_t)rc, 7);
	assert_int_equal(orbit_state_lane_run(c.lane, fork_lane_fn, &ran), 42);
	assert_int_equal(orbit_state_lane_close_sync(c.lane), 0);
	assert_int_equal(orbit_state_lane_destroy(c.lane), 0);
	assert_int_equal(orbit_worker_pool_destroy(c.pool), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_s8_concurrent_submissions_lose_no_update),
		cmocka_unit_test(test_s8_submissions_run_in_submission_order),
		cmocka_unit_test(test_s8_closed_lane_fails_run_at_once_and_post),
		cmocka_unit_test(test_s8_reentry_fails_at_call_site),
		cmocka_unit_test(test_s8_long_running_op_reenters_after_turn_ends),
		cmocka_unit_test(test_s8_callback_outside_turn_sees_transitions),
		cmocka_unit_test(test_s8_completion_in_turn_runs_continuation),
		cmocka_unit_test(test_s8_registration_done_at_return),
		cmocka_unit_test(test_s8_wait_under_gate_returns),
		cmocka_unit_test(test_s5_fast_path_holder_posts_combined_completions),
		cmocka_unit_test(test_s5_refused_completion_task_never_runs_on_run_caller),
		cmocka_unit_test(test_s8_cross_collection_invariant_holds),
		cmocka_unit_test(test_two_threads_million_submissions_each),
		cmocka_unit_test(test_binding_table_posted_writes_readers_agree),
		cmocka_unit_test(test_reentry_through_try_post),
		cmocka_unit_test(test_reentry_through_nested_helper),
		cmocka_unit_test(test_dual_surface_diagnostics_level),
		cmocka_unit_test(test_run_on_only_executor_thread_does_not_wait_for_it),
		cmocka_unit_test(test_close_and_destroy_rules),
		cmocka_unit_test(test_options_older_accepted_newer_tail_e2big),
		cmocka_unit_test(test_designated_initializer_home_node_is_none),
		cmocka_unit_test(test_posted_blocks_reused_not_reallocated),
		cmocka_unit_test(test_waiter_sees_its_turn_counted_mid_chunk),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_lane_forked_child_gets_echild),
		cmocka_unit_test(test_lane_turn_held_across_fork_child_gets_echild),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
