// SPDX-License-Identifier: MIT
/*
 * lib/serial_queue.c: the serial execution queue of spec 07 §5-6. Owns the
 * three rings of waiting items (barrier-next, lifecycle, application), the
 * list of resumed continuations, the two lanes' reservations, the
 * "a drain is scheduled or running" flag that makes one submitter, and
 * only one, schedule the drain (§6.5), and the drain loop itself (§6.6),
 * which runs as an executor task and cuts its slice at the owner time
 * budget. Suspension (§6.7) lives in orbit_serial_resume_t handles.
 * The internal room hook (lib/serial_queue.h) tells an owner once that the
 * application lane has room again after it refused a submission.
 * A drain may claim the whole application ring at once: under the lock it
 * swaps the ring's array for its spare (empty) one and then runs the
 * claimed items from its private `claimed` ring, taking the lock again
 * only to return their reservations. Claimed items stay ahead of the
 * application ring (they are older), so FIFO is kept.
 *
 * Lock: q->lock (the §6.3 gate) protects every field of the queue but
 * those set at creation (`pol` to `sealed`) and `st`, and every handle's
 * turn_ended/resumed; `claimed`, `prio` and `arrivals` say what else
 * reads them. It is a leaf for this module: no work function runs under
 * it and the executor is only called after it is released (§6.5).
 * q->cond goes with it. Stats, the reservation counters and next_seq are
 * _Atomic so other threads may read them without the lock; their writers
 * are serialized by q->lock, so a relaxed load+store is an exact
 * increment and relaxed reads see each counter's latest value.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <orbit/serial_queue.h>
#include <orbit/worker_pool.h>

#include "base/die.h"
#include "base/fork_guard.h"
#include "base/options.h"
#include "base/time.h"
#include "base/tsc.h"
#include "lib/growring.h"
#include "lib/serial_queue.h"
#include "lib/sync.h"

enum lane { LANE_APP = 0, LANE_LC = 1 };

/* Reads of the arrivals counter before an emptied drain gives up (linger),
 * and the pauses between two reads (see linger()). */
#define LINGER_READS ORBIT__DRAIN_LINGER_READS /* lib/sync.h, shared with the lane */
#define LINGER_PAUSES ORBIT__DRAIN_POLL_PAUSES
/* A drain already streaming waits up to GATHER_READS reads for this many
 * application items before it claims (see gather()). */
#define GATHER_MIN ORBIT__DRAIN_GATHER_MIN
#define GATHER_READS ORBIT__DRAIN_GATHER_READS

struct item {
	orbit_serial_work_fn fn;
	void *arg;
	uint64_t seq;
	uint64_t bytes; /* reservation held against `lane` (all its records) */
	enum lane lane;
	/* Records this item holds beyond its own: a HOLD handle that took
	 * several items at once (orbit__serial_queue_pass_held()) holds
	 * their reservations (`bytes` is their sum) until it ends. 0 for
	 * every queued item. */
	uint32_t extra;
};

_Static_assert(sizeof(struct item) == 40, "extra fits the padding after lane");

/* Growable power-of-two ring; grows on demand, bounded by the capacity. */
struct ring {
	struct item *a;
	uint32_t cap, head, len;
};

struct orbit_serial_resume {
	struct orbit_serial_resume *next; /* resumed list, under q->lock */
	orbit_serial_queue_t *q;
	struct item item; /* fn/arg: the continuation; the reservation */
	unsigned flags;
	bool turn_ended; /* under q->lock: the suspending turn has returned */
	bool resumed;	 /* under q->lock: orbit_serial_queue_resume was called */
	/* Of the records a HOLD handle holds (item.extra + 1), those that
	 * ended before the last (orbit__serial_queue_held_end_one()), and
	 * their bytes: still counted in `item`, their reservations carried
	 * until the handle's next return (orbit__serial_queue_held_return(),
	 * a pass or a resume), one lock section for all of them. Owned by
	 * the handle's owner (no lock): only it ends records, returns them
	 * or passes the handle on. held_end_one() takes no lock, so it is
	 * not this queue's lock that orders one owner after the last but
	 * the hand-off of the next record (the Spot queue's lock or lane
	 * turn that places its turn, or the same thread running it), as for
	 * the records' own chain links. */
	uint32_t ended;
	uint64_t ended_bytes;
};

struct slice_clock;

struct orbit_serial_turn {
	orbit_serial_queue_t *q;
	struct orbit_serial_turn *prev; /* the thread's enclosing turn, if any */
	const struct item *item;
	orbit_serial_resume_t *suspended;
	struct slice_clock *clk; /* the drain slice's budget (§6.4) */
	/* Entries of q->claimed up to and including this item (a batch's
	 * items leave `claimed` after the batch); 0 outside a batch. */
	uint32_t claimed_upto;
	/* orbit__serial_turn_may_continue() found this item alone in the
	 * queue when q->arrivals read alone_arrivals (valid while alone_known;
	 * reset with the item). */
	bool alone_known;
	uint64_t alone_arrivals;
};

struct qstats {
	_Atomic uint64_t withdrawn, rejected_count, rejected_bytes, rejected_too_big,
	    rejected_closed, rejected_executor, ran, completed, suspended, resumed, lifecycle_ran,
	    barrier_ran, slices, slices_cut, protocol_errors;
};

/*
 * Cache lines: a submission under a steady stream touches the first two
 * only (the gate with the application ring, then the counters it
 * writes), and a drain running a batch touches neither (its `claimed`
 * ring and `prio` sit apart): every line the two share moves between
 * their CPUs once per claimed batch, not once per item.
 */
struct orbit_serial_queue {
	_Alignas(64) pthread_mutex_t lock; /* the §6.3 gate; see the file comment */
	struct ring app;
	/* What every submission writes. items, bytes and next_seq are written
	 * under lock and also read lock-free by stats (relaxed: a recent value). */
	_Alignas(64) _Atomic uint64_t items[2], bytes[2]; /* reservations held, per lane */
	_Atomic uint64_t next_seq;			  /* = accepted + withdrawn (see qstats) */
	uint64_t outstanding;				  /* items accepted and not yet done */
	/* Bumped under lock by every accepted submission and resume; polled
	 * lock-free by a drain that ran empty (linger). */
	_Atomic uint64_t arrivals;
	bool active; /* a drain is scheduled or running (§6.5) */
	bool closed;
	bool held;	  /* a HOLD item is suspended: nothing else runs */
	bool room_wanted; /* see room_fn */
	/* Application items added to `app` by this queue's own turns (work
	 * that submits to the queue it runs on: a SpotWide Spot queue's
	 * drain places each Actor's next turn) since the drain last claimed
	 * it; under lock. When they are all there is, gather() does not wait
	 * for a stream: nobody else is filling the queue. */
	uint32_t self_added;
	/* Read-mostly: set at creation. */
	_Alignas(64) orbit_execution_lane_policy_t pol;
	/* The creator (orbit__self_pid(), base/fork_guard.h): in a forked
	 * child every entry that would take q->lock (a parent's thread may
	 * have held it at the fork) or schedule a drain refuses with -ECHILD
	 * first. Right after `pol`, on the line every submission reads for
	 * the capacities: the check costs it no other line. */
	pid_t pid;
	orbit_executor_t ex;
	int home_node;
	/* The room hook (lib/serial_queue.h): room_wanted is set when the
	 * application lane refused with -EAGAIN while a hook is installed,
	 * and cleared by the drain that then calls room_fn. */
	orbit__serial_queue_room_fn room_fn;
	void *room_ctx;
	/* Set once by a coordinator before the queue is shared (sealed):
	 * its turns do not name the queue (07 §3). */
	bool sealed;
	/* The drain's side. Application items a drain claimed from `app` in
	 * one piece (older than everything in `app`). Only the active drain
	 * reads or writes it; anyone else reads it only after seeing !active
	 * under the lock (a drain whose re-submission failed may leave items
	 * here), or under the lock while the queue is held: a held queue's
	 * drain runs no batch (claim_batch() and take_next() take nothing),
	 * so it touches `claimed` only under the lock too
	 * (orbit__serial_queue_pass_held()). */
	_Alignas(64) struct ring claimed;
	/* Set under lock when work that outranks the application lane
	 * arrives (lifecycle, barrier-next, a resume); read lock-free by a
	 * drain running a batch. */
	_Atomic bool prio;
	uint32_t lc_burst; /* lifecycle turns in a row while app work waits */
	struct ring lc, barrier;
	orbit_serial_resume_t *res_head, *res_tail; /* resumed continuations */
	orbit_serial_resume_t *held_cont;	    /* a HOLD item's continuation, ready */
	/* A handle whose continuation was taken, kept for the next
	 * orbit_serial_turn_suspend() instead of a free and a calloc (a
	 * SpotWide Actor queue suspends once per claim). Owned by the
	 * active drain (its turns suspend, its take_next() frees), or by
	 * whoever holds q->lock while no drain is active. */
	orbit_serial_resume_t *spare;
	unsigned waiters;
	pthread_cond_t cond; /* quiescence and destroy waiters, with lock */
	_Alignas(64) struct qstats st;
	char name[64];
};

_Static_assert(offsetof(struct orbit_serial_queue, pid) / 64 ==
		   offsetof(struct orbit_serial_queue, pol) / 64,
	       "the fork check reads the policy's cache line");

static _Thread_local struct orbit_serial_turn *tls_turn;

/* Writers serialized by q->lock; relaxed readers (see the fields). */
#define RES(c) atomic_load_explicit(&(c), memory_order_relaxed)
#define RES_ADD(c, n) orbit__single_writer_add(&(c), (n))
#define RES_SUB(c, n) orbit__single_writer_add(&(c), -(uint64_t)(n))

/* Writers serialized by q->lock. */
#define STAT_ADD(q, f, n) orbit__single_writer_add(&(q)->st.f, (n))

/*
 * The owner time budget of one drain slice (§6.4), checked after every
 * item on CLOCK_MONOTONIC. Not CLOCK_MONOTONIC_COARSE with its resolution
 * as slack: the coarse clock can lag by more than its resolution (8.5 ms
 * against a 4 ms tick was measured on a loaded 2-vCPU guest; a slice of
 * 1 ms items under a 5 ms budget ran 7 of them), so it gives no bound.
 */
struct slice_clock {
	uint64_t start_ns, budget_ns;
	/* base/tsc.h: from tsc_start (the counter at the start) to below
	 * tsc_mark the budget is not spent (mark 0: none, or already past) */
	uint64_t tsc_start, tsc_mark;
};

static void slice_begin(struct slice_clock *c, const orbit_serial_queue_t *q)
{
	/* the counter read before the clock: the mark never starts late */
	uint64_t t0 = orbit__tsc_now(), t1;

	c->budget_ns = (uint64_t)q->pol.owner_time_budget_ms * 1000000ull;
	c->start_ns = orbit__clock_ns(CLOCK_MONOTONIC);
	t1 = orbit__tsc_now();
	c->tsc_start = t0;
	c->tsc_mark = orbit__tsc_mark(t0, c->start_ns, t1, c->budget_ns);
}

/*
 * Asked after every item: before the slice's counter mark (half the
 * budget by this thread's measured counter frequency, base/tsc.h) the
 * answer is "no" without a clock read (about 24 ns of the e2e Spot
 * bench's worker per record, doc/spot-queues-perf.md); past it, or
 * without one, the clock decides as before. A counter below the slice's
 * start counter (reset, or jumped back) is not "before" either.
 */
static bool slice_over(struct slice_clock *c)
{
	uint64_t spent;

	if (orbit__tsc_before(c->tsc_start, c->tsc_mark))
		return false;
	spent = orbit__clock_ns(CLOCK_MONOTONIC) - c->start_ns;
	if (c->tsc_mark) {
		/* the first read past the mark: check it (a wrong frequency
		 * drops the thread's measurement); the clock decides from now
		 * on, also if the counter came back below the mark */
		orbit__tsc_check(c->tsc_start, spent);
		c->tsc_mark = 0;
	}
	return spent >= c->budget_ns;
}

/*
 * slice_over() by the clock alone, for orbit__serial_turn_may_continue().
 * Its one caller, a SpotWide record's end (lib/serial_executor.c), asks
 * whether the Actor's next record may run on this turn; when none is
 * queued yet the claim ends and the next record costs a new drain. With
 * the counter's quicker answer the check returned before the producer
 * had queued the next record more often: bench_spot_executor SpotWide 1
 * Actor made 0.078 pool tasks per item against 0.033 and ran 4.46
 * against 6.12 M items/s (medians of 250 interleaved rounds); with the
 * clock read here, 0.037 and 5.94. The answer is the same either way.
 */
static bool slice_over_by_clock(const struct slice_clock *c)
{
	return orbit__clock_ns(CLOCK_MONOTONIC) - c->start_ns >= c->budget_ns;
}

/* ---- policy --------------------------------------------------------- */

void orbit_execution_lane_policy_init_default(orbit_execution_lane_policy_t *p)
{
	if (!p)
		return;
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->application_message_capacity = ORBIT_POLICY_DEFAULT_APP_MESSAGES;
	p->application_byte_capacity = ORBIT_POLICY_DEFAULT_APP_BYTES;
	p->lifecycle_message_capacity = ORBIT_POLICY_DEFAULT_LC_MESSAGES;
	p->lifecycle_byte_capacity = ORBIT_POLICY_DEFAULT_LC_BYTES;
	p->fixed_work_byte_cost = ORBIT_POLICY_DEFAULT_FIXED_COST;
	p->lifecycle_burst_limit = ORBIT_POLICY_DEFAULT_BURST;
	p->owner_time_budget_ms = ORBIT_POLICY_DEFAULT_BUDGET_MS;
}

/* A zero field of a caller's policy takes its default. */
#define POLICY_DEFAULT(p, field, def) ((p)->field = (p)->field ? (p)->field : (def))

int orbit__lane_policy_copy(orbit_execution_lane_policy_t *p,
			    const orbit_execution_lane_policy_t *user)
{
	int ret;

	if (!user) {
		orbit_execution_lane_policy_init_default(p);
		return 0;
	}
	ret = ORBIT__OPTS_COPY(p, user); /* base/options.h rule */
	if (ret)
		return ret;
	POLICY_DEFAULT(p, application_message_capacity, ORBIT_POLICY_DEFAULT_APP_MESSAGES);
	POLICY_DEFAULT(p, application_byte_capacity, ORBIT_POLICY_DEFAULT_APP_BYTES);
	POLICY_DEFAULT(p, lifecycle_message_capacity, ORBIT_POLICY_DEFAULT_LC_MESSAGES);
	POLICY_DEFAULT(p, lifecycle_byte_capacity, ORBIT_POLICY_DEFAULT_LC_BYTES);
	POLICY_DEFAULT(p, fixed_work_byte_cost, ORBIT_POLICY_DEFAULT_FIXED_COST);
	if (p->fixed_work_byte_cost == ORBIT_POLICY_NO_FIXED_COST)
		p->fixed_work_byte_cost = 0;
	POLICY_DEFAULT(p, lifecycle_burst_limit, ORBIT_POLICY_DEFAULT_BURST);
	POLICY_DEFAULT(p, owner_time_budget_ms, ORBIT_POLICY_DEFAULT_BUDGET_MS);
	if (p->fixed_work_byte_cost > p->application_byte_capacity ||
	    p->fixed_work_byte_cost > p->lifecycle_byte_capacity)
		return -EINVAL;
	return 0;
}

int orbit_execution_lane_policy_validate(const orbit_execution_lane_policy_t *p)
{
	orbit_execution_lane_policy_t copy;

	return p ? orbit__lane_policy_copy(&copy, p) : -EINVAL;
}

/* ---- rings ---------------------------------------------------------- */

static int ring_push(struct ring *r, const struct item *it)
{
	if (r->len == r->cap) {
		uint32_t ncap = r->cap ? r->cap * 2 : 8;
		struct item *a;

		if (ncap < r->cap)
			return -ENOMEM;
		a = orbit__growring_regrow(r->a, sizeof(*a), r->cap, r->head, r->len, ncap);
		if (!a)
			return -ENOMEM;
		r->a = a;
		r->cap = ncap;
		r->head = 0;
	}
	r->a[(r->head + r->len) & (r->cap - 1)] = *it;
	r->len++;
	return 0;
}

static void ring_pop(struct ring *r, struct item *out)
{
	*out = r->a[r->head];
	r->head = (r->head + 1) & (r->cap - 1);
	r->len--;
}

/* Remove the item with @seq (searching from the tail); false if absent. */
static bool ring_remove_seq(struct ring *r, uint64_t seq, struct item *out)
{
	for (uint32_t k = r->len; k-- > 0;) {
		if (r->a[(r->head + k) & (r->cap - 1)].seq != seq)
			continue;
		*out = r->a[(r->head + k) & (r->cap - 1)];
		for (uint32_t j = k; j + 1 < r->len; j++)
			r->a[(r->head + j) & (r->cap - 1)] = r->a[(r->head + j + 1) & (r->cap - 1)];
		r->len--;
		return true;
	}
	return false;
}

/* ---- reservations (under q->lock) ------------------------------------ */

static void release_reservation(orbit_serial_queue_t *q, const struct item *it)
{
	RES_SUB(q->items[it->lane], 1 + it->extra);
	RES_SUB(q->bytes[it->lane], it->bytes);
	q->outstanding -= 1 + it->extra;
	if (q->outstanding == 0 && q->waiters)
		orbit__die_on(pthread_cond_broadcast(&q->cond), "pthread_cond_broadcast");
}

static bool runnable(const orbit_serial_queue_t *q)
{
	if (q->held_cont)
		return true;
	if (q->held)
		return false;
	return q->barrier.len || q->res_head || q->lc.len || q->claimed.len || q->app.len;
}

/* Work that runs before the application lane is waiting (or a HOLD). Under q->lock. */
static bool app_outranked(const orbit_serial_queue_t *q)
{
	return q->held_cont || q->held || q->barrier.len || q->res_head || q->lc.len;
}

/* Put a resumed handle where the drain will find it. */
static void place_resumed(orbit_serial_queue_t *q, orbit_serial_resume_t *h)
{
	/* Relaxed: see the fields. */
	atomic_store_explicit(&q->prio, true, memory_order_relaxed);
	orbit__single_writer_add(&q->arrivals, 1);
	if (h->flags & ORBIT_SERIAL_SUSPEND_HOLD) {
		q->held = false;
		q->held_cont = h;
		return;
	}
	h->next = NULL;
	if (q->res_tail)
		q->res_tail->next = h;
	else
		q->res_head = h;
	q->res_tail = h;
}

/* ---- create / submit -------------------------------------------------- */

void orbit_serial_queue_options_init(struct orbit_serial_queue_options *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
}

int orbit_serial_queue_create(const struct orbit_serial_queue_options *user,
			      orbit_serial_queue_t **out)
{
	struct orbit_serial_queue_options opts;
	orbit_execution_lane_policy_t pol;
	orbit_serial_queue_t *q;
	int ret = -ENOMEM;

	if (!user || !out)
		return -EINVAL;
	ret = ORBIT__OPTS_COPY(&opts, user); /* base/options.h rule */
	if (ret)
		return ret;
	ret = -ENOMEM;
	if (!opts.executor.submit)
		return -EINVAL;
	ret = orbit__executor_fork_check(&opts.executor); /* an inherited pool's */
	if (ret)
		return ret;
	ret = orbit__lane_policy_copy(&pol, opts.policy);
	if (ret)
		return ret;
	ret = -ENOMEM;
	q = aligned_alloc(_Alignof(orbit_serial_queue_t), sizeof(*q)); /* the cache lines above */
	if (!q)
		return -ENOMEM;
	memset(q, 0, sizeof(*q));
	q->pol = pol;
	q->ex = opts.executor;
	q->home_node = orbit_home_node_id(opts.home);
	q->pid = orbit__self_pid();
	strncpy(q->name, opts.name ? opts.name : "serial-queue", sizeof(q->name) - 1);
	ret = orbit__mutex_init_adaptive(&q->lock);
	if (ret)
		goto err_free;
	ret = orbit__cond_init_monotonic(&q->cond);
	if (ret)
		goto err_mutex;
	*out = q;
	return 0;

err_mutex:
	pthread_mutex_destroy(&q->lock);
err_free:
	free(q);
	return ret;
}

static void drain(void *arg);

/* The executor refused our drain: nobody drives the queue now. */
static void schedule_failed(orbit_serial_queue_t *q)
{
	q->active = false;
	STAT_ADD(q, rejected_executor, 1);
	if (q->waiters)
		orbit__die_on(pthread_cond_broadcast(&q->cond), "pthread_cond_broadcast");
}

/*
 * §6.3 for one item @it of @lane (under q->lock): the capacity decision,
 * its sequence number and the push onto @ring, then the lane's
 * reservation. Both submit() and orbit__serial_queue_enqueue_n() decide
 * through here. Returns 0, -EPIPE, -E2BIG, -EAGAIN or ring_push()'s code.
 */
static int admit(orbit_serial_queue_t *q, enum lane lane, struct ring *ring, struct item *it,
		 uint64_t cap_items, uint64_t cap_bytes)
{
	int ret;

	if (q->closed) {
		STAT_ADD(q, rejected_closed, 1);
		return -EPIPE;
	}
	if (it->bytes > cap_bytes) {
		STAT_ADD(q, rejected_too_big, 1);
		return -E2BIG;
	}
	if (RES(q->items[lane]) + 1 > cap_items) {
		STAT_ADD(q, rejected_count, 1);
		return -EAGAIN;
	}
	if (RES(q->bytes[lane]) + it->bytes > cap_bytes) {
		STAT_ADD(q, rejected_bytes, 1);
		return -EAGAIN;
	}
	it->seq = RES(q->next_seq);
	ret = ring_push(ring, it);
	if (ret)
		return ret;
	RES_ADD(q->next_seq, 1); /* accepted: see qstats */
	RES_ADD(q->items[lane], 1);
	RES_ADD(q->bytes[lane], it->bytes);
	q->outstanding++;
	return 0;
}

static int submit(orbit_serial_queue_t *q, orbit_serial_work_fn fn, void *arg, enum lane lane,
		  struct ring *ring, uint64_t payload)
{
	struct item it = { .fn = fn, .arg = arg, .lane = lane };
	uint64_t cap_items, cap_bytes;
	bool start = false;
	int ret = 0;

	if (!q || !fn)
		return -EINVAL;
	if (orbit__fork_check(q->pid))
		return -ECHILD; /* a parent's queue (see the field) */
	cap_items = lane == LANE_APP ? q->pol.application_message_capacity
				     : q->pol.lifecycle_message_capacity;
	cap_bytes = lane == LANE_APP ? q->pol.application_byte_capacity
				     : q->pol.lifecycle_byte_capacity;
	it.bytes = payload + q->pol.fixed_work_byte_cost;
	if (it.bytes < payload) /* overflow: certainly larger than any capacity */
		it.bytes = UINT64_MAX;

	/* §6.3: decision, sequence number and insertion in one section. */
	orbit__mutex_lock(&q->lock);
	ret = admit(q, lane, ring, &it, cap_items, cap_bytes);
	if (ret == -EAGAIN && lane == LANE_APP && q->room_fn)
		q->room_wanted = true; /* the next application release calls room_fn */
	if (ret == 0) {
		if (ring == &q->app && tls_turn && tls_turn->q == q)
			q->self_added++; /* from a turn of this queue: see the field */
		orbit__single_writer_add(&q->arrivals, 1); /* relaxed: see the field */
		if (ring != &q->app)			   /* relaxed: see the field */
			atomic_store_explicit(&q->prio, true, memory_order_relaxed);
		/* §6.5: only the submitter that finds nobody driving starts a drain. */
		if (!q->active && runnable(q)) {
			q->active = true;
			start = true;
		}
	}
	orbit__mutex_unlock(&q->lock);
	if (!start)
		return ret;

	/* §6.5: the wake happens outside the section, never on our stack. */
	ret = q->ex.submit(q->ex.ctx, drain, q, q->home_node);
	if (ret == 0)
		return 0;
	/* Withdraw our item: it cannot run. Nobody took it (active was ours). */
	orbit__mutex_lock(&q->lock);
	if (ring_remove_seq(ring, it.seq, &it)) {
		STAT_ADD(q, withdrawn, 1);
		release_reservation(q, &it);
	}
	schedule_failed(q);
	orbit__mutex_unlock(&q->lock);
	return ret;
}

int orbit_serial_queue_enqueue(orbit_serial_queue_t *q, orbit_serial_work_fn fn, void *arg)
{
	return submit(q, fn, arg, LANE_APP, q ? &q->app : NULL, 0);
}

int orbit_serial_queue_enqueue_with_payload_bytes(orbit_serial_queue_t *q, orbit_serial_work_fn fn,
						  void *arg, uint64_t payload_bytes)
{
	return submit(q, fn, arg, LANE_APP, q ? &q->app : NULL, payload_bytes);
}

int orbit_serial_queue_enqueue_lifecycle(orbit_serial_queue_t *q, orbit_serial_work_fn fn,
					 void *arg)
{
	return submit(q, fn, arg, LANE_LC, q ? &q->lc : NULL, 0);
}

int orbit_serial_queue_enqueue_barrier_next(orbit_serial_queue_t *q, orbit_serial_work_fn fn,
					    void *arg)
{
	return submit(q, fn, arg, LANE_APP, q ? &q->barrier : NULL, 0);
}

/*
 * The batch form of submit() (lib/serial_queue.h): the §6.3 decision, the
 * sequence number and the insertion of each item in turn, all in one
 * section of the lock, then at most one drain started after it. The
 * first refused item ends the batch: nothing after it is tried, so the
 * accepted ones are a prefix and FIFO among them and against later
 * submissions is what @n single submissions would give.
 */
int orbit__serial_queue_enqueue_n(orbit_serial_queue_t *q, bool lifecycle, orbit_serial_work_fn fn,
				  void *const *args, uint64_t payload_bytes, unsigned n, int *err)
{
	enum lane lane = lifecycle ? LANE_LC : LANE_APP;
	struct item it = { .fn = fn, .lane = lane };
	struct ring *ring;
	uint64_t cap_items, cap_bytes, seq0;
	unsigned k = 0;
	bool start = false;
	int ret = 0;

	if (!q || !fn || !err || (n && !args))
		return -EINVAL;
	if (orbit__fork_check(q->pid))
		return -ECHILD; /* a parent's queue (see the field) */
	*err = 0;
	if (!n)
		return 0;
	ring = lifecycle ? &q->lc : &q->app;
	cap_items = lifecycle ? q->pol.lifecycle_message_capacity
			      : q->pol.application_message_capacity;
	cap_bytes = lifecycle ? q->pol.lifecycle_byte_capacity : q->pol.application_byte_capacity;
	it.bytes = payload_bytes + q->pol.fixed_work_byte_cost;
	if (it.bytes < payload_bytes) /* overflow: certainly larger than any capacity */
		it.bytes = UINT64_MAX;

	orbit__mutex_lock(&q->lock);
	seq0 = RES(q->next_seq);
	for (; k < n; k++) {
		it.arg = args[k];
		ret = admit(q, lane, ring, &it, cap_items, cap_bytes); /* as submit() decides */
		if (ret)
			break;
	}
	if (ret == -EAGAIN && lane == LANE_APP && q->room_fn)
		q->room_wanted = true; /* the next application release calls room_fn */
	if (k) {
		orbit__single_writer_add(&q->arrivals, k); /* relaxed: see the field */
		if (lifecycle)				   /* relaxed: see the field */
			atomic_store_explicit(&q->prio, true, memory_order_relaxed);
		/* §6.5: only the submitter that finds nobody driving starts a drain. */
		if (!q->active && runnable(q)) {
			q->active = true;
			start = true;
		}
	}
	orbit__mutex_unlock(&q->lock);
	*err = ret;
	if (!start)
		return (int)k;

	/* §6.5: the wake happens outside the section, never on our stack. */
	ret = q->ex.submit(q->ex.ctx, drain, q, q->home_node);
	if (ret == 0)
		return (int)k;
	/* Withdraw the batch: it cannot run. Nobody took it (active was ours). */
	orbit__mutex_lock(&q->lock);
	for (unsigned i = k; i-- > 0;) {
		if (ring_remove_seq(ring, seq0 + i, &it)) {
			STAT_ADD(q, withdrawn, 1);
			release_reservation(q, &it);
		}
	}
	schedule_failed(q);
	orbit__mutex_unlock(&q->lock);
	*err = ret;
	return 0;
}

/* ---- the drain loop (§6.6) -------------------------------------------- */

/* Keep @h as the spare handle, or free it. The caller owns q->spare (see the field). */
static void handle_put(orbit_serial_queue_t *q, orbit_serial_resume_t *h)
{
	if (q->spare)
		free(h);
	else
		q->spare = h;
}

/* Take the next turn's work, in the order of the header. Under q->lock. */
static bool take_next(orbit_serial_queue_t *q, struct item *out)
{
	orbit_serial_resume_t *h = NULL;

	if (q->held_cont) {
		h = q->held_cont;
		q->held_cont = NULL;
	} else if (q->held) {
		return false;
	} else if (q->barrier.len) {
		ring_pop(&q->barrier, out);
		STAT_ADD(q, barrier_ran, 1);
	} else if (q->res_head) {
		h = q->res_head;
		q->res_head = h->next;
		if (!q->res_head)
			q->res_tail = NULL;
	} else if (q->lc.len && (!(q->claimed.len || q->app.len) ||
				 q->lc_burst < q->pol.lifecycle_burst_limit)) {
		ring_pop(&q->lc, out);
		q->lc_burst = q->claimed.len || q->app.len ? q->lc_burst + 1 : 0;
		STAT_ADD(q, lifecycle_ran, 1);
	} else if (q->claimed.len) {
		ring_pop(&q->claimed, out); /* older than the application ring */
		q->lc_burst = 0;
	} else if (q->app.len) {
		ring_pop(&q->app, out);
		q->lc_burst = 0;
		if (!q->app.len)
			q->self_added = 0;
	} else {
		return false;
	}
	if (h) {
		*out = h->item;
		handle_put(q, h); /* on the active drain */
	}
	STAT_ADD(q, ran, 1);
	return true;
}

/* Book the end of a turn: release, or park the suspended item. Under q->lock. */
static void end_turn(orbit_serial_queue_t *q, const struct item *it, orbit_serial_resume_t *h,
		     int result)
{
	if (!h) {
		if (result == ORBIT_SERIAL_SUSPENDED)
			STAT_ADD(q, protocol_errors, 1); /* nothing to resume: done */
		/* A handle's continuation that held more records (extra) ended
		 * them all: each counts as resumed, run and completed. */
		if (it->extra) {
			STAT_ADD(q, resumed, it->extra);
			STAT_ADD(q, ran, it->extra);
		}
		STAT_ADD(q, completed, 1 + it->extra);
		release_reservation(q, it); /* §5: after the handler finished */
		return;
	}
	if (result != ORBIT_SERIAL_SUSPENDED)
		STAT_ADD(q, protocol_errors, 1); /* the handle is live: suspended */
	STAT_ADD(q, suspended, 1);
	h->turn_ended = true;
	if (h->resumed)
		place_resumed(q, h); /* the completion beat the return */
	else if (h->flags & ORBIT_SERIAL_SUSPEND_HOLD)
		q->held = true;
}

/* What a batch of claimed application items left to book (see run_batch). */
struct batch_tally {
	unsigned ran;	 /* turns run, the suspended one included */
	unsigned done;	 /* of them finished: reservations to return */
	uint64_t bytes;	 /* their reserved bytes */
	uint64_t errors; /* SUSPENDED without a suspend call */
	int last_result; /* the last turn's result, when it suspended */
};

/*
 * Claim application work for a batch when nothing outranks it: the items
 * a previous slice claimed and did not run, else the whole application
 * ring, taken by swapping its array for the drain's empty spare (O(1)
 * under the lock, whatever the length). Returns how many are claimed.
 * Under q->lock.
 */
static unsigned claim_batch(orbit_serial_queue_t *q)
{
	struct ring spare;

	if (app_outranked(q))
		return 0;
	if (!q->claimed.len) {
		if (q->app.len < 2)
			return 0;   /* one item: take_next() */
		spare = q->claimed; /* empty; its array is reused by the ring */
		q->claimed = q->app;
		q->app = (struct ring){ .a = spare.a, .cap = spare.cap };
		q->self_added = 0;
	}
	/* Relaxed: written and cleared under q->lock; the drain's lock-free
	 * read of it is a hint to stop the batch early (see run_batch()). */
	atomic_store_explicit(&q->prio, false, memory_order_relaxed);
	q->lc_burst = 0;
	return q->claimed.len;
}

/*
 * Run one taken item on a turn. Stores its result in *@result and
 * returns the handle it suspended with, if any. Not under q->lock.
 */
static orbit_serial_resume_t *run_one(orbit_serial_queue_t *q, const struct item *it, int *result,
				      struct slice_clock *clk)
{
	struct orbit_serial_turn turn = { .q = q, .prev = tls_turn, .item = it, .clk = clk };

	tls_turn = &turn;
	*result = it->fn(&turn, it->arg);
	tls_turn = turn.prev;
	return turn.suspended;
}

/*
 * Run the @n claimed items from the front of q->claimed, one turn each,
 * without the lock (only the active drain touches q->claimed). Stop after
 * an item that suspended (*@suspended), at the owner time budget (*@cut),
 * or when higher-priority work arrived. Tallies what to book in @t.
 */
static void run_batch(orbit_serial_queue_t *q, unsigned n, struct batch_tally *t,
		      orbit_serial_resume_t **suspended, struct slice_clock *clk, bool *cut)
{
	const struct ring *c = &q->claimed;
	struct orbit_serial_turn turn = { .q = q, .prev = tls_turn, .clk = clk };

	*t = (struct batch_tally){ 0 };
	*suspended = NULL;
	tls_turn = &turn;
	while (t->ran < n) {
		const struct item *it = &c->a[(c->head + t->ran) & (c->cap - 1)];
		int r;

		turn.item = it;
		turn.claimed_upto = t->ran + 1;
		turn.alone_known = false;
		r = it->fn(&turn, it->arg);
		t->ran++;
		if (turn.suspended) {
			*suspended = turn.suspended;
			t->last_result = r;
		} else {
			t->done++;
			t->bytes += it->bytes;
			t->errors += r == ORBIT_SERIAL_SUSPENDED; /* nothing to resume: done */
		}
		*cut = slice_over(clk); /* §6.4: at handler boundaries */
		/* Relaxed: a hint; missing it runs one more item of the batch. */
		if (*cut || turn.suspended || atomic_load_explicit(&q->prio, memory_order_relaxed))
			break;
	}
	tls_turn = turn.prev;
}

/*
 * Book a batch: pop what ran off q->claimed, return the finished items'
 * reservations at once (§5: after their handlers) and park the suspended
 * one, if any (it was the last to run). Under q->lock.
 */
static void end_batch(orbit_serial_queue_t *q, const struct batch_tally *t,
		      orbit_serial_resume_t *h)
{
	struct ring *c = &q->claimed;
	uint32_t last = (c->head + t->ran - 1) & (c->cap - 1);

	STAT_ADD(q, ran, t->ran);
	if (t->done) {
		RES_SUB(q->items[LANE_APP], t->done);
		RES_SUB(q->bytes[LANE_APP], t->bytes);
		q->outstanding -= t->done;
		STAT_ADD(q, completed, t->done);
		if (t->errors)
			STAT_ADD(q, protocol_errors, t->errors);
		if (q->outstanding == 0 && q->waiters)
			orbit__die_on(pthread_cond_broadcast(&q->cond), "pthread_cond_broadcast");
	}
	if (h)
		end_turn(q, &c->a[last], h, t->last_result);
	c->head = (c->head + t->ran) & (c->cap - 1);
	c->len -= t->ran;
}

/*
 * The queue ran empty: before giving up the drain (and making the next
 * submitter schedule a new one through the executor), poll the arrivals
 * counter for a few microseconds. Under a steady stream this keeps one
 * drain running instead of one executor round trip per item. Entered and
 * left under q->lock. Returns whether work is runnable now; then *@cut is
 * set when the owner time budget is spent (left alone when nothing is:
 * the slice ends either way; and when every spinner is taken, returned at
 * once with no time spent, so the caller's *@cut, false, stands).
 */
static bool linger(orbit_serial_queue_t *q, struct slice_clock *clk, bool *cut)
{
	/* Relaxed: a hint; the decision is re-made under the lock below. */
	uint64_t seen = atomic_load_explicit(&q->arrivals, memory_order_relaxed);
	bool moved, run;

	/* Every spinner of the pool taken: the submitters need the CPU
	 * (lib/sync.h); give the turn up as a linger that ran out would. */
	if (!orbit__worker_spin_begin())
		return runnable(q);
	orbit__mutex_unlock(&q->lock);
	/* Sparse reads: each one pulls the line the submitters write, so a
	 * read per pause would make every submission miss on it. */
	for (unsigned i = 0; i < LINGER_READS; i++) {
		/* The submitters need the one CPU this thread holds (lib/sync.h). */
		if (orbit__worker_alone_on_cpu())
			break;
		for (unsigned k = 0; k < LINGER_PAUSES; k++)
			orbit__cpu_relax();
		if (atomic_load_explicit(&q->arrivals, memory_order_relaxed) != seen)
			break;
		/* After a read interval, not before: checked first, a drain of one
		 * of many busy queues never lingered and each turn ran fewer items
		 * (bench_spot_executor PerActor 8 and 64 Actors 2-3x slower). */
		if (orbit__worker_others_ready())
			break; /* other queues' drains wait for this thread */
	}
	orbit__worker_spin_end();
	/* The budget matters only if the drain goes on. Most lingers end a
	 * slice with nothing arrived: no clock read for them. Work that
	 * arrived after this hint (relaxed, as above) is found by
	 * runnable(); only then is the clock read under the lock. */
	moved = atomic_load_explicit(&q->arrivals, memory_order_relaxed) != seen;
	if (moved)
		*cut = slice_over(clk);
	orbit__mutex_lock(&q->lock);
	run = runnable(q);
	if (run && !moved)
		*cut = slice_over(clk);
	return run;
}

/*
 * A drain that already ran work in this slice and finds only a few
 * application items (and nothing that outranks them) waits a moment for
 * more before it claims: every claim hands the queue lock and the ring's
 * cache lines over between the submitters and the drain, so claiming one
 * or two items at a time under a steady stream makes every submission
 * miss on them. Waits at most GATHER_READS sparse reads of the arrivals
 * counter (about 3 us), and only while items keep arriving: the first
 * item of an idle queue, which starts a new drain, never waits; nor does a
 * drain whose waiting items were all added by its own turns (self_added:
 * a SpotWide Spot queue's turns, placed by this very drain, so no stream
 * fills it; perf: 9% of all samples of bench_spot_executor SpotWide 8
 * Actors were this wait). Entered and left under q->lock; returns true
 * when the owner time budget ran out meanwhile.
 */
static bool gather(orbit_serial_queue_t *q, struct slice_clock *clk, bool *cut)
{
	uint64_t seen, need;

	if (q->claimed.len || !q->app.len || q->app.len >= GATHER_MIN || app_outranked(q) ||
	    q->self_added >= q->app.len || orbit__worker_alone_on_cpu())
		return false;
	if (!orbit__worker_spin_begin())
		return false; /* claim what there is, as in linger() */
	need = GATHER_MIN - q->app.len;
	/* Relaxed: a hint; what to claim is decided under the lock again. */
	seen = atomic_load_explicit(&q->arrivals, memory_order_relaxed);
	orbit__mutex_unlock(&q->lock);
	for (unsigned i = 0, last = 0; i < GATHER_READS; i++) {
		uint64_t got;

		for (unsigned k = 0; k < LINGER_PAUSES; k++)
			orbit__cpu_relax();
		got = atomic_load_explicit(&q->arrivals, memory_order_relaxed) - seen;
		if (got >= need)
			break;
		/* Nothing arrived for a whole read interval: no stream is filling
		 * the queue (a SpotWide Spot queue gets a turn per Actor, placed
		 * by this very drain), so waiting on would only idle. */
		if (got == last)
			break;
		last = (unsigned)got;
		if (orbit__worker_others_ready())
			break; /* claim what there is and let the others run */
	}
	orbit__worker_spin_end();
	*cut = slice_over(clk);
	orbit__mutex_lock(&q->lock);
	return *cut;
}

/*
 * The drain just returned application reservations (@app_released): if a
 * refusal armed the room hook, call it once, without the lock (it may
 * enqueue here). Entered and left under q->lock, on the active drain.
 */
static void room_notice(orbit_serial_queue_t *q, bool app_released)
{
	orbit__serial_queue_room_fn fn = q->room_fn;
	void *ctx = q->room_ctx;

	if (!app_released || !q->room_wanted)
		return;
	q->room_wanted = false;
	orbit__mutex_unlock(&q->lock);
	fn(ctx);
	orbit__mutex_lock(&q->lock);
}

static void drain(void *arg)
{
	orbit_serial_queue_t *q = arg;
	struct slice_clock clk;
	bool cut = false, resched = false, streaming = false;

	orbit__mutex_lock(&q->lock);
	STAT_ADD(q, slices, 1);
	slice_begin(&clk, q);
	for (;;) {
		orbit_serial_resume_t *h;
		unsigned n;

		if (streaming && gather(q, &clk, &cut))
			break; /* runnable past the budget: cut */
		streaming = true;
		n = claim_batch(q);

		if (n) {
			struct batch_tally t;

			orbit__mutex_unlock(&q->lock);
			run_batch(q, n, &t, &h, &clk, &cut);
			orbit__mutex_lock(&q->lock);
			end_batch(q, &t, h);
			room_notice(q, t.done > 0);
		} else {
			struct item it;
			int r;

			if (!take_next(q, &it)) {
				if (linger(q, &clk, &cut) && !cut)
					continue;
				break; /* empty, or runnable past the budget: cut */
			}
			orbit__mutex_unlock(&q->lock);
			h = run_one(q, &it, &r, &clk);
			cut = slice_over(&clk); /* §6.4: at handler boundaries */
			orbit__mutex_lock(&q->lock);
			end_turn(q, &it, h, r);
			room_notice(q, !h && it.lane == LANE_APP);
		}
		if (cut)
			break; /* §6.4: the owner yields at a handler boundary */
	}
	if (cut && runnable(q)) {
		resched = true; /* stays active: back of the executor's FIFO */
		STAT_ADD(q, slices_cut, 1);
	} else {
		q->active = false;
		if (q->waiters)
			orbit__die_on(pthread_cond_broadcast(&q->cond), "pthread_cond_broadcast");
	}
	orbit__mutex_unlock(&q->lock);
	if (!resched)
		return; /* q may be freed from here on */
	if (q->ex.submit(q->ex.ctx, drain, q, q->home_node) != 0) {
		orbit__mutex_lock(&q->lock);
		schedule_failed(q); /* stalls until the next submission */
		orbit__mutex_unlock(&q->lock);
	}
}

/* ---- suspension (§6.7) ------------------------------------------------ */

orbit_serial_queue_t *orbit_serial_turn_queue(const orbit_serial_turn_t *turn)
{
	/* sealed is written before the queue is shared (set_sealed's Context) */
	return turn && !turn->q->sealed ? turn->q : NULL;
}

int orbit_serial_turn_suspend(orbit_serial_turn_t *turn, orbit_serial_work_fn cont, void *arg,
			      unsigned flags, orbit_serial_resume_t **out)
{
	orbit_serial_resume_t *h;

	if (!turn || !cont || !out || (flags & ~(unsigned)ORBIT_SERIAL_SUSPEND_HOLD) ||
	    turn != tls_turn)
		return -EINVAL;
	if (orbit__fork_check(turn->q->pid))
		return -ECHILD; /* forked from inside a turn: the drain is the parent's */
	if (turn->suspended)
		return -EALREADY;
	/* A turn runs on its queue's active drain, which owns the spare. */
	h = turn->q->spare;
	if (h) {
		turn->q->spare = NULL;
		memset(h, 0, sizeof(*h));
	} else {
		h = calloc(1, sizeof(*h));
		if (!h)
			return -ENOMEM;
	}
	h->q = turn->q;
	h->item = *turn->item;
	h->item.fn = cont;
	h->item.arg = arg;
	h->flags = flags;
	turn->suspended = h;
	*out = h;
	return 0;
}

int orbit_serial_queue_resume(orbit_serial_resume_t *h)
{
	orbit_serial_queue_t *q;
	bool start = false;
	int ret;

	if (!h)
		return -EINVAL;
	q = h->q;
	if (orbit__fork_check(q->pid))
		return -ECHILD; /* a parent's handle: not consumed */
	orbit__mutex_lock(&q->lock);
	h->resumed = true;
	STAT_ADD(q, resumed, 1);
	if (h->turn_ended) {
		/* Through the queue (§6.7): it waits for a turn like any item. */
		place_resumed(q, h);
		if (!q->active && runnable(q)) {
			q->active = true;
			start = true;
		}
	}
	orbit__mutex_unlock(&q->lock);
	if (!start)
		return 0;
	ret = q->ex.submit(q->ex.ctx, drain, q, q->home_node);
	if (ret) {
		orbit__mutex_lock(&q->lock);
		schedule_failed(q); /* the continuation stays queued */
		orbit__mutex_unlock(&q->lock);
	}
	return ret;
}

bool orbit__serial_turn_may_continue(orbit_serial_turn_t *turn)
{
	orbit_serial_queue_t *q = turn->q;
	bool alone;

	if (turn->suspended || slice_over_by_clock(turn->clk))
		return false;
	/* Only this turn's drain takes work out of the queue, and every way
	 * work gets in (a submission, a resume) bumps q->arrivals under the
	 * lock: while it reads what it read when the queue was last seen
	 * alone, the queue still is, and the lock need not be taken again.
	 * Relaxed: no data is read on the strength of it; a submission whose
	 * bump this load misses is one that races this check, which may be
	 * ordered either side of it (the same thread's own submissions, as
	 * from the handler that just ran, are always seen). */
	if (turn->alone_known &&
	    atomic_load_explicit(&q->arrivals, memory_order_relaxed) == turn->alone_arrivals)
		return true;
	/* Claimed items behind this one wait for the gate: not alone, and no
	 * lock needed to see it, since q->claimed is this drain's own (see
	 * the field; the turn runs on the active drain). A SpotWide Spot
	 * queue with several Actors' turns claimed in one batch answers here. */
	if (q->claimed.len > turn->claimed_upto)
		return false;
	orbit__mutex_lock(&q->lock);
	alone = !q->app.len && q->claimed.len == turn->claimed_upto && !q->barrier.len &&
		!q->res_head && !q->lc.len && !q->held_cont;
	/* Relaxed: under q->lock, which orders it with every bump. */
	turn->alone_arrivals = atomic_load_explicit(&q->arrivals, memory_order_relaxed);
	turn->alone_known = alone;
	orbit__mutex_unlock(&q->lock);
	return alone;
}

int orbit__serial_queue_pass_held(orbit_serial_resume_t *h, orbit_serial_work_fn first,
				  orbit_serial_work_fn cont, void **args, uint64_t *bytes,
				  unsigned max)
{
	orbit_serial_queue_t *q = h->q;
	orbit_serial_resume_t *dead = NULL;
	struct item it;
	unsigned n = 0;
	bool ended = false;

	orbit__mutex_lock(&q->lock);
	/* Only a parked HOLD claim, with nothing that outranks the
	 * application lane. A drain may still be active (finishing its
	 * slice): while q->held it takes nothing (take_next(), claim_batch())
	 * and touches `claimed` only under the lock, so its items are taken
	 * from here too (see the field). Anything else goes the ordinary way
	 * (resume). */
	if (!(h->flags & ORBIT_SERIAL_SUSPEND_HOLD) || !h->turn_ended || h->resumed || !q->held ||
	    q->room_fn || q->barrier.len || q->res_head || q->lc.len)
		goto out;
	if (!q->claimed.len && !q->app.len) {
		/* Nothing to pass to: the claim ends here, as if its
		 * continuation had run and finished (the caller does what it
		 * would have done). Nothing is runnable, so no drain is due. */
		ended = true;
	} else {
		/* Application items of @first from the front, oldest first
		 * (claimed items are older than the ring), up to @max. */
		while (n < max) {
			struct ring *from = q->claimed.len ? &q->claimed : &q->app;
			struct item more;

			if (!from->len || from->a[from->head].fn != first)
				break;
			ring_pop(from, &more);
			if (n == 0) {
				it = more;
			} else {
				it.extra++;
				it.bytes += more.bytes;
				it.arg = more.arg; /* the continuation's: the last record */
			}
			bytes[n] = more.bytes;
			args[n++] = more.arg;
		}
		if (!n)
			goto out; /* other work at the front: resume */
	}
	/* The claim's continuation, as if it had run and returned DONE:
	 * the records it held give their reservations back (§5: their
	 * handlers finished), those that ended earlier (h->ended) with the
	 * last, in this one section. */
	STAT_ADD(q, resumed, 1 + h->item.extra);
	STAT_ADD(q, ran, 1 + h->item.extra);
	STAT_ADD(q, completed, 1 + h->item.extra);
	release_reservation(q, &h->item);
	if (ended) {
		q->held = false;
		if (!q->active)
			handle_put(q, h); /* no drain: q->spare is ours under the lock */
		else
			dead = h;
		goto out;
	}
	/* The next items' first stage, as if each had run and suspended
	 * with HOLD at once: the handle now holds them all (still parked,
	 * q->held), its continuation on the last of them. Each but the last
	 * is marked ended when it ends (orbit__serial_queue_held_end_one());
	 * the reservations of those go back together at the next return
	 * (held_return(), or this call or a resume returning the item). */
	q->lc_burst = 0;
	STAT_ADD(q, ran, n);
	STAT_ADD(q, suspended, n);
	h->item = it;
	h->item.fn = cont;
	/* The ended records were in the item just returned. */
	h->ended = 0;
	h->ended_bytes = 0;
out:
	orbit__mutex_unlock(&q->lock);
	free(dead);
	return n ? (int)n : ended ? 0 : -EAGAIN;
}

void orbit__serial_queue_held_end_one(orbit_serial_resume_t *h, uint64_t bytes)
{
	/* Broken caller: the handle holds its last record alone; that one
	 * ends with the claim (resume or pass_held), never here. item is
	 * written only under q->lock by this handle's owner (pass_held,
	 * held_return), which is the caller: read without the lock. */
	if (h->ended >= h->item.extra || h->item.bytes - h->ended_bytes < bytes)
		orbit__die(-EINVAL, "orbit__serial_queue_held_end_one: a record the handle holds");
	/* §5: this record's handler finished. Its reservation is carried
	 * with the others that ended (no lock section per record) and goes
	 * back with the handle's next return: held_return() (at a yield),
	 * or the pass or resume that returns the whole item. */
	h->ended++;
	h->ended_bytes += bytes;
}

void orbit__serial_queue_held_return(orbit_serial_resume_t *h)
{
	orbit_serial_queue_t *q = h->q;
	struct item done;

	if (!h->ended)
		return;
	orbit__mutex_lock(&q->lock);
	/* The ended records leave the handle, which stays parked (q->held)
	 * with its continuation on the last record: the queue counts
	 * exactly the held records not yet finished. Booked as their
	 * continuations running and finishing: resumed, run, completed. */
	h->item.extra -= h->ended;
	h->item.bytes -= h->ended_bytes;
	done = (struct item){ .lane = h->item.lane,
			      .bytes = h->ended_bytes,
			      .extra = h->ended - 1 };
	STAT_ADD(q, resumed, h->ended);
	STAT_ADD(q, ran, h->ended);
	STAT_ADD(q, completed, h->ended);
	release_reservation(q, &done);
	/* A handle holds several records only on a queue without a room
	 * hook (pass_held() passes nothing on one), so no refusal waits for
	 * this release to be told. */
	orbit__mutex_unlock(&q->lock);
	h->ended = 0;
	h->ended_bytes = 0;
}

/* ---- the rest of §6.2 ---------------------------------------------------- */

void orbit__serial_queue_set_room_hook(orbit_serial_queue_t *q, orbit__serial_queue_room_fn fn,
				       void *ctx)
{
	orbit__mutex_lock(&q->lock);
	q->room_fn = fn;
	q->room_ctx = ctx;
	q->room_wanted = false;
	orbit__mutex_unlock(&q->lock);
}

void orbit__serial_queue_seal(orbit_serial_queue_t *q)
{
	q->sealed = true;
}

bool orbit_serial_queue_is_current(const orbit_serial_queue_t *q)
{
	return q && tls_turn && tls_turn->q == q;
}

int orbit_serial_queue_await_quiescence(orbit_serial_queue_t *q, int timeout_ms)
{
	struct timespec dl;
	int ret = 0;

	if (!q)
		return -EINVAL;
	if (orbit__fork_check(q->pid))
		return -ECHILD; /* nothing a parent's queue has runs here */
	if (orbit_serial_queue_is_current(q))
		return -EDEADLK; /* §10: refused at the call site, never a hang */
	if (timeout_ms > 0)
		orbit__deadline_after_ns(&dl, CLOCK_MONOTONIC, (uint64_t)timeout_ms * 1000000ull);
	orbit__mutex_lock(&q->lock);
	q->waiters++;
	while (q->outstanding > 0) {
		int r;

		if (timeout_ms == 0) {
			ret = -ETIMEDOUT;
			break;
		}
		r = timeout_ms < 0 ? pthread_cond_wait(&q->cond, &q->lock)
				   : pthread_cond_timedwait(&q->cond, &q->lock, &dl);
		if (r == ETIMEDOUT && q->outstanding > 0) {
			ret = -ETIMEDOUT;
			break;
		}
		if (r != ETIMEDOUT)
			orbit__die_on(r, "pthread_cond_wait");
	}
	q->waiters--;
	orbit__mutex_unlock(&q->lock);
	return ret;
}

int orbit_serial_queue_close(orbit_serial_queue_t *q)
{
	if (!q)
		return -EINVAL;
	if (orbit__fork_check(q->pid))
		return -ECHILD;
	orbit__mutex_lock(&q->lock);
	q->closed = true;
	orbit__mutex_unlock(&q->lock);
	return 0;
}

int orbit_serial_queue_stats(const orbit_serial_queue_t *cq, struct orbit_serial_queue_stats *out)
{
	orbit_serial_queue_t *q = (orbit_serial_queue_t *)cq;

	if (!q || !out)
		return -EINVAL;
#define LD(f) out->f = atomic_load_explicit(&q->st.f, memory_order_relaxed)
	/* Relaxed: each counter is independent (see the header). */
	/* Each withdrawal follows its own bump of next_seq: read withdrawn
	 * first, and a racing read that still sees more withdrawals than
	 * numbers counts 0, never a wrapped count. */
	{
		uint64_t w = atomic_load_explicit(&q->st.withdrawn, memory_order_relaxed);
		uint64_t n = RES(q->next_seq);

		out->accepted = n > w ? n - w : 0;
	}
	LD(rejected_count);
	LD(rejected_bytes);
	LD(rejected_too_big);
	LD(rejected_closed);
	LD(rejected_executor);
	LD(ran);
	LD(completed);
	LD(suspended);
	LD(resumed);
	LD(lifecycle_ran);
	LD(barrier_ran);
	LD(slices);
	LD(slices_cut);
	LD(protocol_errors);
	out->app_items = RES(q->items[LANE_APP]);
	out->app_bytes = RES(q->bytes[LANE_APP]);
	out->lc_items = RES(q->items[LANE_LC]);
	out->lc_bytes = RES(q->bytes[LANE_LC]);
#undef LD
	return 0;
}

const char *orbit_serial_queue_name(const orbit_serial_queue_t *q)
{
	return q ? q->name : NULL;
}

int orbit_serial_queue_destroy(orbit_serial_queue_t *q)
{
	if (!q)
		return 0;
	if (orbit__fork_check(q->pid))
		return -ECHILD; /* a parent's queue: nothing closed, nothing freed */
	if (orbit_serial_queue_is_current(q))
		return -EDEADLK;
	orbit__mutex_lock(&q->lock);
	q->closed = true;
	if (q->outstanding > 0) {
		orbit__mutex_unlock(&q->lock);
		return -EBUSY;
	}
	/* Only a drain doing its last bookkeeping can still be active. */
	q->waiters++;
	while (q->active)
		orbit__die_on(pthread_cond_wait(&q->cond, &q->lock), "pthread_cond_wait");
	q->waiters--;
	orbit__mutex_unlock(&q->lock);
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	free(q->app.a);
	free(q->claimed.a);
	free(q->lc.a);
	free(q->barrier.a);
	free(q->spare);
	free(q);
	return 0;
}
