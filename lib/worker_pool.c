// SPDX-License-Identifier: MIT
/*
 * lib/worker_pool.c: the NUMA-aware worker pool behind orbit_executor_t.
 * Owns the worker threads, one FIFO of ready tasks per NUMA node, and the
 * futex words idle workers sleep on. Placement comes from
 * orbit__placement_plan() and pinning from orbit__numa_pin_self(), both in
 * numa_topology.c (the only libnuma user).
 *
 * Locks: node->lock protects that node's ring (ring, cap, head, len) and
 * is the point where submit decides against pool->stopping. It is a leaf:
 * nothing else is taken while it is held and no task runs under it.
 *
 * Sleeping (Dekker pair, both sides seq_cst):
 *   submit: push under node->lock, WP-S1 store node->ready; then WP-S2 load
 *           sleepers of the target node (then of the others).
 *   worker: WP-W1 fetch_add own node->sleepers; then WP-W2 load every ready.
 * The single total order of seq_cst operations means either the worker
 * sees the task (and does not sleep) or the submitter sees the sleeper
 * (and wakes it). The futex word is bumped before each wake so a wake
 * that lands between WP-W2 and FUTEX_WAIT makes the wait return at once.
 *
 * One wake in flight per sleeper (node->waking, the wakes issued whose
 * worker is not back from its wait yet; all seq_cst): a submitter wakes a
 * sleeper only if the node has more sleepers than wakes in flight (WP-S3);
 * the woken worker takes its wake off the count once it returns from the
 * wait (WP-W3), or the waker does when its FUTEX_WAKE woke nobody (WP-S4)
 * and then looks once again for a task and a sleeper without a wake (a
 * submitter that saw the count skipped its wake, WP-S5); if both are
 * there it makes one ungated wake and stops (at most two FUTEX_WAKE calls
 * per wake_node(), the argument is there). Taking off never goes
 * below zero (a wait that returned for another reason takes off too), so
 * the count is never above the wakes really in flight. A worker that
 * takes a task and sees more ready wakes a sleeper too (the same gate,
 * and the same order as a submitter: its node, else the first with one).
 * Without the count a submitter woke at every task until the woken
 * worker ran and uncounted itself: bench_spot_executor PerActor 1,024
 * Actors made 7.6 FUTEX_WAKE calls per sleep, 0.58 per item, nearly all
 * of them on the producer. Either a sleeper has no wake (the next
 * submitter wakes it) or every sleeper has one on its way, and a thread
 * that will then take tasks or look again (the woken worker, the waker)
 * takes it off: no task is left with every worker asleep, and tasks
 * submitted together wake as many sleepers as before.
 *
 * Slots (pool->slots), with the standby option: at most one worker fewer
 * than the topology's CPUs (at least one) takes every ready task at once
 * (without it every worker does); a worker that finds no
 * slot free is on standby (standby()): it looks at the FIFOs on a timer
 * and runs only a task that waited since its previous look. A slot is
 * given back just before a worker sleeps on its node's futex (and taken
 * again when it wakes, else it goes on standby), so a counted sleeper
 * never holds one. With one worker per CPU and a thread outside the pool
 * submitting, every worker taking tasks at once made three runnable
 * threads on two CPUs: bench_spot_executor's producer shared its CPU with
 * a worker (PerActor 8 Actors: 0.41x of the bare queue, median of 15 full
 * runs, against 0.53x with one slot). Not the default: with two producers
 * spinning on one full queue (bench_serial_queue) it ran 9-25% slower
 * (13.8 against 18.2 and 18.2 against 20.0 M/s, medians of two sets of 8
 * interleaved runs) with no task run on standby (standby_runs 0, about a
 * hundred pool tasks per run). Likely cost: a standby wake preempts the
 * drain's worker, which then waits behind a spinning producer; not
 * proven.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <orbit/worker_pool.h>

#include "base/fork_guard.h"
#include "base/options.h"
#include "lib/growring.h"
#include "lib/sync.h"
#include "lib/numa_topology.h"

#define RING_INITIAL 64
#define SPIN_POLLS_DEFAULT 256
/* A standby worker's sleep between two looks (see the pool's slots):
 * STANDBY_MIN_NS after a look that found a task queued, twice the last
 * one (up to STANDBY_MAX_NS) after one that found none. */
#define STANDBY_MIN_NS 50000ull
#define STANDBY_MAX_NS 500000ull

struct task {
	orbit_task_fn fn;
	void *arg;
};

struct pool_node {
	pthread_mutex_t lock; /* protects ring, cap, head, len */
	struct task *ring;
	size_t cap, head, len;
	/* Copy of len for lock-free polls; WP-S1/WP-W2 of the sleeping protocol. */
	_Atomic size_t ready;
	_Atomic uint32_t futex;	   /* sleep word, bumped before each wake */
	_Atomic unsigned sleepers; /* workers of this node asleep or about to */
	_Atomic unsigned waking;   /* wakes in flight (file comment) */
	/* Written under lock, read lock-free by stats and by standby
	 * workers (a hint: the task is re-taken under the lock): relaxed. */
	_Atomic uint64_t submitted, taken;
	int node_id;
	unsigned nworkers;
} __attribute__((aligned(64)));

struct worker {
	orbit_worker_pool_t *pool;
	unsigned node_idx;
	pthread_t thread;
	bool started;
	/* Set by this worker at its start, read by it only: it may run on
	 * one CPU and the pool's whole topology has one, so a poll on it only
	 * holds the CPU that whoever would end the poll (a submitter, another
	 * worker) needs. */
	bool one_cpu;
	/* Holds one of the pool's slots (this worker only). */
	bool slot;
	/* Per node, `submitted` at this worker's last standby look: a task
	 * whose index is below it waited a whole standby period. */
	uint64_t *seen;
	uint64_t *seen_taken; /* per node, `taken` at that look: progress since */
	uint64_t standby_ns;  /* the next standby sleep (this worker only) */
	/* Written by this worker only, read by stats: relaxed is enough. */
	_Atomic uint64_t executed, stolen, sleeps, standby_runs;
} __attribute__((aligned(64)));

struct orbit_worker_pool {
	struct orbit__topology_buf topo;
	struct pool_node *nodes;
	struct worker *workers;
	unsigned nthreads, nnodes;
	unsigned ncpus; /* the topology's CPUs, counted once at create */
	unsigned spin_polls;
	/* The creator (orbit__self_pid(), base/fork_guard.h): in a forked
	 * child, which has none of the workers, submit and destroy refuse
	 * with -ECHILD before they touch a node lock or a counter. */
	pid_t pid;
	bool pin;
	/* Set by destroy; read by submit under a node lock. */
	_Atomic bool stopping;
	/* Set by destroy once no submit can succeed any more; workers exit. */
	_Atomic bool closed;
	_Atomic unsigned rr;   /* round robin for ORBIT_NODE_ANY from outside */
	_Atomic unsigned idle; /* workers asleep */
	/* Workers spinning now (polls, lingering or gathering drains): at
	 * most spin_max, the topology's CPUs - 1 (at least 1), set at create
	 * (orbit__worker_spin_begin(), lib/sync.h). Relaxed everywhere: a
	 * count that bounds how many spin, it publishes nothing (what a
	 * spinner waits for is re-read under a lock or by the sleeping
	 * protocol). */
	_Atomic unsigned spinners;
	unsigned spin_max;
	/* Slots: workers that take any ready task at once. With the standby
	 * option at most slot_max (the topology's CPUs - 1, at least 1: one
	 * CPU is left to the threads outside the pool that submit), else
	 * every worker holds one for good. A worker without one is on
	 * standby (standby()): it sleeps STANDBY_MIN_NS to STANDBY_MAX_NS at
	 * a time, uncounted by submitters (WP-S2 never wakes it), and takes
	 * only a task that waited a whole sleep while its FIFO made no
	 * progress or grew (see standby()). Relaxed: a count that bounds how
	 * many run at once; liveness does not depend on it (a standby wait is
	 * timed). */
	_Atomic unsigned slots;
	unsigned slot_max;
	bool standby; /* the option: slots are counted (else every worker has one) */
	_Atomic uint32_t standby_futex; /* bumped by destroy only */
	_Atomic uint64_t rejected, wakes, pin_failures;
};

static _Thread_local struct worker *tls_worker;

/* lib/sync.h; relaxed everywhere: a test sets it while no worker calls it. */
_Atomic(void (*)(void)) orbit__worker_pool_test_sleep_hook;

void orbit_worker_pool_options_init(struct orbit_worker_pool_options *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
}

int orbit_worker_pool_current_node(void)
{
	struct worker *w = tls_worker;

	return w ? w->pool->nodes[w->node_idx].node_id : ORBIT_NODE_ANY;
}

/* Pop the oldest task of @n; false when empty. */
static bool node_pop(struct pool_node *n, struct task *out)
{
	bool got = false;

	/* Relaxed: a hint only; the decision is re-made under the lock. */
	if (atomic_load_explicit(&n->ready, memory_order_relaxed) == 0)
		return false;
	orbit__mutex_lock(&n->lock);
	if (n->len) {
		*out = n->ring[n->head];
		n->head = (n->head + 1) & (n->cap - 1);
		n->len--;
		orbit__single_writer_add(&n->taken, 1); /* writers serialized by n->lock */
		/* Relaxed: the ring itself is ordered by n->lock. */
		atomic_store_explicit(&n->ready, n->len, memory_order_relaxed);
		got = true;
	}
	orbit__mutex_unlock(&n->lock);
	return got;
}

/* Own node first, then the others in index order after it. */
static bool take_task(struct worker *w, struct task *out)
{
	orbit_worker_pool_t *p = w->pool;

	if (node_pop(&p->nodes[w->node_idx], out))
		return true;
	for (unsigned k = 1; k < p->nnodes; k++) {
		unsigned i = (w->node_idx + k) % p->nnodes;

		if (node_pop(&p->nodes[i], out)) {
			orbit__single_writer_add(&w->stolen, 1); /* this worker only */
			return true;
		}
	}
	return false;
}

/* Any node with a ready task? @order: relaxed for polls, seq_cst for WP-W2. */
static bool any_ready(orbit_worker_pool_t *p, memory_order order)
{
	for (unsigned i = 0; i < p->nnodes; i++)
		if (atomic_load_explicit(&p->nodes[i].ready, order))
			return true;
	return false;
}

bool orbit__worker_others_ready(void)
{
	struct worker *w = tls_worker;

	/* Relaxed: a hint for a polling drain (lib/sync.h). */
	return w && any_ready(w->pool, memory_order_relaxed);
}

bool orbit__worker_spin_begin(void)
{
	struct worker *w = tls_worker;
	orbit_worker_pool_t *p;

	if (!w)
		return true;
	p = w->pool;
	/* Relaxed: a count of spinners, it orders nothing (see the field). */
	if (atomic_fetch_add_explicit(&p->spinners, 1, memory_order_relaxed) < p->spin_max)
		return true;
	/* Relaxed: as above. */
	atomic_fetch_sub_explicit(&p->spinners, 1, memory_order_relaxed);
	return false;
}

void orbit__worker_spin_end(void)
{
	struct worker *w = tls_worker;

	if (w) /* relaxed: as in orbit__worker_spin_begin() */
		atomic_fetch_sub_explicit(&w->pool->spinners, 1, memory_order_relaxed);
}

bool orbit__worker_alone_on_cpu(void)
{
	struct worker *w = tls_worker;

	return w && w->one_cpu; /* set by this worker at its start */
}

/*
 * Is the calling worker of @p alone on one CPU: its affinity mask (now)
 * holds one CPU and so does @p's topology (discovered from the creating
 * thread's mask, or given)? A worker pinned to a 1-CPU node of a larger
 * machine is not: its submitters may run elsewhere.
 */
static bool alone_on_one_cpu(const orbit_worker_pool_t *p)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	return p->ncpus <= 1 && sched_getaffinity(0, sizeof(set), &set) == 0 &&
	       CPU_COUNT(&set) == 1;
}

/* One wake of @n is no longer in flight: take it off the count, never
 * below zero (file comment). WP-W3/WP-S4: seq_cst, pairs with WP-S3. */
static void waking_put(struct pool_node *n)
{
	unsigned k = atomic_load_explicit(&n->waking, memory_order_seq_cst);

	while (k && !atomic_compare_exchange_weak_explicit(
			&n->waking, &k, k - 1, memory_order_seq_cst, memory_order_seq_cst))
		;
}

static void worker_sleep(struct worker *w)
{
	orbit_worker_pool_t *p = w->pool;
	struct pool_node *n = &p->nodes[w->node_idx];
	/* WP-A1: acquire, pairs with WP-R1 in wake_call() and WP-R2 in
	 * stop_and_join(): read before WP-W1 */
	uint32_t v = atomic_load_explicit(&n->futex, memory_order_acquire);

	/* WP-W1: seq_cst, pairs with WP-S2 in submit (see the file comment). */
	atomic_fetch_add_explicit(&n->sleepers, 1, memory_order_seq_cst);
	atomic_fetch_add_explicit(&p->idle, 1, memory_order_relaxed); /* statistic */
	/* WP-W2: seq_cst, pairs with WP-S1 in submit. */
	bool wait = !any_ready(p, memory_order_seq_cst) &&
		    !atomic_load_explicit(&p->closed, memory_order_seq_cst);

	if (wait) {
		void (*hook)(void) = atomic_load_explicit(&orbit__worker_pool_test_sleep_hook,
							  memory_order_relaxed);

		if (hook) /* tests only (lib/sync.h) */
			hook();
		orbit__single_writer_add(&w->sleeps, 1); /* this worker only */
		orbit__futex_wait(&n->futex, v);
	}
	atomic_fetch_sub_explicit(&p->idle, 1, memory_order_relaxed); /* statistic */
	/* Relaxed: a late decrement only costs a submitter one spare wake
	 * (or a waker its ungated wake, WP-S5). Done before WP-W3, so that a
	 * waker's re-check (the CAS loop at WP-S3, or WP-S5) that sees the
	 * decrement of waking at WP-W3 does not count us as a sleeper
	 * without a wake; a submitter's WP-S2 load may still count us (it only
	 * decides whether to call wake_node()). */
	atomic_fetch_sub_explicit(&n->sleepers, 1, memory_order_relaxed);
	/* WP-W3: pairs with WP-S3 in wake_node(): a wake that woke us is no
	 * longer in flight; the tasks whose submitters saw it and skipped
	 * theirs are taken by our caller (run_next() wakes the next sleeper
	 * when more are ready). */
	if (wait)
		waking_put(n);
}

static void wake_for(orbit_worker_pool_t *p, struct pool_node *home);

/* Take a task and run it; false when none is ready. */
static bool run_next(struct worker *w)
{
	struct pool_node *n = &w->pool->nodes[w->node_idx];
	struct task t;

	if (!take_task(w, &t))
		return false;
	/* More ready: wake a sleeper, of our node first, else of another
	 * (its submitter may have skipped the wake while one was in flight,
	 * file comment). Seq_cst load, as WP-W2. */
	if (any_ready(w->pool, memory_order_seq_cst))
		wake_for(w->pool, n);
	t.fn(t.arg);
	orbit__single_writer_add(&w->executed, 1); /* this worker only */
	return true;
}

static bool slot_take(orbit_worker_pool_t *p)
{
	/* Relaxed: see the field. */
	unsigned k = atomic_load_explicit(&p->slots, memory_order_relaxed);

	while (k < p->slot_max)
		if (atomic_compare_exchange_weak_explicit(
			&p->slots, &k, k + 1, memory_order_relaxed, memory_order_relaxed))
			return true;
	return false;
}

/*
 * Standby (no slot free): run one task that waited since this worker's
 * last look, if there is one and its node's FIFO took nothing since then
 * (a slot holder stuck in a long handler) or holds more than it did (the
 * slot holders fall behind); else note what is queued now and sleep
 * (STANDBY_MIN_NS, longer while nothing is queued). Returns false once
 * the pool is closed. No task waits on a standby worker alone: a slot
 * holder takes every ready task in FIFO order, and one that runs long
 * leaves the rest to the standby worker's next look but one.
 */
static bool standby(struct worker *w)
{
	orbit_worker_pool_t *p = w->pool;
	/* WP-A3: acquire, pairs with WP-R4 in stop_and_join(): closed before the bump */
	uint32_t v = atomic_load_explicit(&p->standby_futex, memory_order_acquire);
	bool queued = false;
	struct task t;

	/* WP-A2 as in worker_main(): acquire, pairs with WP-R3 in
	 * stop_and_join(), so the caller's final scan sees every task
	 * accepted before closed (WP-A3 only orders the futex word). */
	if (atomic_load_explicit(&p->closed, memory_order_acquire))
		return false;
	/* Own node first, then the others in index order after it (take_task()). */
	for (unsigned k = 0; k < p->nnodes; k++) {
		unsigned i = (w->node_idx + k) % p->nnodes;
		struct pool_node *n = &p->nodes[i];

		/* Relaxed: hints; node_pop() decides under the lock (a
		 * difference of two loads that wrapped only makes one spare
		 * or one missed run). */
		uint64_t tk = atomic_load_explicit(&n->taken, memory_order_relaxed);
		uint64_t sub = atomic_load_explicit(&n->submitted, memory_order_relaxed);

		if (tk < w->seen[i] &&
		    (tk == w->seen_taken[i] || sub - tk > w->seen[i] - w->seen_taken[i]) &&
		    node_pop(n, &t)) {
			/* Our own take is not the slot holders' progress: a
			 * second task behind the same long handler runs at the
			 * next look. */
			w->seen_taken[i]++;
			if (k) /* this worker only */
				orbit__single_writer_add(&w->stolen, 1);
			orbit__single_writer_add(&w->standby_runs, 1); /* this worker only */
			t.fn(t.arg);
			orbit__single_writer_add(&w->executed, 1); /* this worker only */
			return true;
		}
	}
	for (unsigned i = 0; i < p->nnodes; i++) { /* relaxed: as above */
		w->seen[i] = atomic_load_explicit(&p->nodes[i].submitted, memory_order_relaxed);
		w->seen_taken[i] = atomic_load_explicit(&p->nodes[i].taken, memory_order_relaxed);
		queued |= w->seen_taken[i] < w->seen[i];
	}
	/* Nothing queued: look less often while the slot holders keep up. */
	if (queued || w->standby_ns < STANDBY_MIN_NS)
		w->standby_ns = STANDBY_MIN_NS;
	else
		w->standby_ns = w->standby_ns * 2 < STANDBY_MAX_NS ? w->standby_ns * 2
								   : STANDBY_MAX_NS;
	orbit__futex_wait_ns(&p->standby_futex, v, w->standby_ns);
	return true;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	orbit_worker_pool_t *p = w->pool;

	tls_worker = w;
	if (p->pin && orbit__numa_pin_self(&p->topo.topo.nodes[w->node_idx]) != 0)
		atomic_fetch_add_explicit(&p->pin_failures, 1,
					  memory_order_relaxed); /* statistic */
	w->one_cpu = alone_on_one_cpu(p); /* after pinning: the mask it keeps */
	/* Without the standby option every worker keeps a slot for good: the
	 * shared count is not touched on its sleep path. */
	w->slot = !p->standby;
	for (;;) {
		if (!w->slot && !(w->slot = slot_take(p))) {
			if (standby(w))
				continue;
			/* Closed: no submit succeeds any more, run what is left. */
			if (run_next(w))
				continue;
			break;
		}
		if (run_next(w))
			continue;
		/* One CPU: a task can only be submitted once this thread sleeps. */
		if (!w->one_cpu && p->spin_polls && orbit__worker_spin_begin()) {
			for (unsigned s = 0; s < p->spin_polls; s++) {
				/* Relaxed polls: take_task() re-checks under the
				 * lock, and closed is read again (WP-A2) below.
				 * Destroy's closed ends the poll, whatever its
				 * length: it waits to join this thread. */
				if (any_ready(p, memory_order_relaxed) ||
				    atomic_load_explicit(&p->closed, memory_order_relaxed))
					break;
				orbit__cpu_relax();
			}
			orbit__worker_spin_end();
		}
		if (any_ready(p, memory_order_relaxed))
			continue;
		/* WP-A2: acquire, pairs with WP-R3 in stop_and_join(): stopping before closed */
		if (atomic_load_explicit(&p->closed, memory_order_acquire)) {
			/* No submit succeeds after closed: an empty scan is final. */
			if (run_next(w))
				continue;
			break;
		}
		if (p->standby) { /* a counted sleeper holds no slot */
			w->slot = false;
			/* Relaxed: see the field. */
			atomic_fetch_sub_explicit(&p->slots, 1, memory_order_relaxed);
		}
		worker_sleep(w);
	}
	tls_worker = NULL;
	return NULL;
}

/* Bump the futex word and wake one sleeper of @n; how many were woken. */
static int wake_call(orbit_worker_pool_t *p, struct pool_node *n)
{
	/* WP-R1: release, pairs with WP-A1 in worker_sleep(): the bump before the wake */
	atomic_fetch_add_explicit(&n->futex, 1, memory_order_release);
	atomic_fetch_add_explicit(&p->wakes, 1, memory_order_relaxed); /* statistic */
	return orbit__futex_wake(&n->futex, 1);
}

/*
 * Wake one sleeper of @n that has no wake on its way (file comment): at
 * most two FUTEX_WAKE calls, a gated one and, when it woke nobody, one
 * ungated.
 */
static void wake_node(orbit_worker_pool_t *p, struct pool_node *n)
{
	/* WP-S3: seq_cst, pairs with WP-W3, WP-S4 and WP-S5 (worker_sleep(),
	 * below): a wake seen counted is taken off later in the total order,
	 * by a thread that then takes or looks for our task. Loads first:
	 * the submitters that skip do not write the line. */
	unsigned k = atomic_load_explicit(&n->waking, memory_order_seq_cst);

	do {
		if (atomic_load_explicit(&n->sleepers, memory_order_seq_cst) <= k)
			return; /* every sleeper has a wake on its way */
	} while (!atomic_compare_exchange_weak_explicit(&n->waking, &k, k + 1, memory_order_seq_cst,
							memory_order_seq_cst));
	if (wake_call(p, n) > 0)
		return; /* the woken worker takes it off (WP-W3) */
	/* WP-S4: nobody was in the wait (a sleeper between WP-W1 and
	 * FUTEX_WAIT returns at once, having read the futex word before our
	 * bump, or sees the task at WP-W2): take our wake off. */
	waking_put(n);
	/* WP-S5: seq_cst, pairs with WP-S3 of a skipping submitter (and
	 * WP-W1, as WP-S2); after WP-S4 in the total order. A
	 * submitter whose WP-S3 saw our wake counted skipped its own; look
	 * once more for a ready task and a sleeper without a wake. If both
	 * are there, make one ungated wake (no count, so no submitter skips
	 * because of it) and stop, whatever it returns. That is enough: each
	 * sleeper counted here is in the wait (woken now, or by a wake in
	 * flight), or read the futex word before this bump (its WP-A1 came
	 * first, so FUTEX_WAIT returns at once and it looks again), or is
	 * past its wait (it looks again); a worker whose WP-W1 comes after
	 * this look sees the task at WP-W2 (its WP-S1 came before the
	 * skipper's WP-S3, before our WP-S4). Looping instead, while a
	 * preempted sleeper sat between WP-W1 and FUTEX_WAIT, spun on
	 * FUTEX_WAKE calls until it got a CPU: 20,639 in one call, and no
	 * end for a SCHED_FIFO waker sharing its CPU. The worker this wake
	 * returns takes a wake off the count (WP-W3) that may be another's:
	 * the count only falls, never above the wakes in flight. */
	if (!any_ready(p, memory_order_seq_cst) ||
	    atomic_load_explicit(&n->sleepers, memory_order_seq_cst) <=
		atomic_load_explicit(&n->waking, memory_order_seq_cst))
		return;
	wake_call(p, n);
}

/*
 * A task is ready on @home (or was just taken from it with more ready):
 * wake a sleeper of @home if it has any, else of the first node in index
 * order that has. Submitters and the chain wake of run_next() both use
 * this order, so a chain wake does not stop at a node without sleepers
 * while another node's worker sleeps.
 */
static void wake_for(orbit_worker_pool_t *p, struct pool_node *home)
{
	/* WP-S2: seq_cst, pairs with WP-W1 in worker_sleep(). Home node first. */
	if (atomic_load_explicit(&home->sleepers, memory_order_seq_cst)) {
		wake_node(p, home);
		return;
	}
	for (unsigned i = 0; i < p->nnodes; i++) {
		/* Seq_cst, as WP-S2 above. */
		if (atomic_load_explicit(&p->nodes[i].sleepers, memory_order_seq_cst)) {
			wake_node(p, &p->nodes[i]);
			return;
		}
	}
}

static int node_index(orbit_worker_pool_t *p, int home_node)
{
	struct worker *w = tls_worker;

	if (home_node >= 0)
		for (unsigned i = 0; i < p->nnodes; i++)
			if (p->nodes[i].node_id == home_node && p->nodes[i].nworkers)
				return (int)i;
	if (w && w->pool == p)
		return (int)w->node_idx;
	for (;;) {
		/* Relaxed: only spreads load, orders nothing. */
		unsigned i = atomic_fetch_add_explicit(&p->rr, 1, memory_order_relaxed) % p->nnodes;

		if (p->nodes[i].nworkers)
			return (int)i;
	}
}

static int ring_grow(struct pool_node *n)
{
	size_t ncap = n->cap ? n->cap * 2 : RING_INITIAL;
	struct task *r = orbit__growring_regrow(n->ring, sizeof(*r), n->cap, n->head, n->len, ncap);

	if (!r)
		return -ENOMEM;
	n->ring = r;
	n->cap = ncap;
	n->head = 0;
	return 0;
}

static int pool_submit(void *ctx, orbit_task_fn fn, void *arg, int home_node)
{
	orbit_worker_pool_t *p = ctx;
	struct pool_node *n;
	int ret = 0;

	if (!p || !fn)
		return -EINVAL;
	if (orbit__fork_check(p->pid))
		return -ECHILD; /* no worker of this pool runs in this process */
	n = &p->nodes[node_index(p, home_node)];
	orbit__mutex_lock(&n->lock);
	/* Relaxed: destroy sets it, then takes every node lock (ordered by it). */
	if (atomic_load_explicit(&p->stopping, memory_order_relaxed)) {
		ret = -EPIPE;
		goto out_unlock;
	}
	if (n->len == n->cap && (ret = ring_grow(n)) != 0)
		goto out_unlock;
	n->ring[(n->head + n->len) & (n->cap - 1)] = (struct task){ fn, arg };
	n->len++;
	/* WP-S1: seq_cst, pairs with WP-W2 in worker_sleep(). */
	atomic_store_explicit(&n->ready, n->len, memory_order_seq_cst);
	orbit__single_writer_add(&n->submitted, 1); /* writers serialized by n->lock */
out_unlock:
	orbit__mutex_unlock(&n->lock);
	if (ret) {
		atomic_fetch_add_explicit(&p->rejected, 1, memory_order_relaxed); /* statistic */
		return ret;
	}
	wake_for(p, n);
	return 0;
}

orbit_executor_t orbit_worker_pool_executor(orbit_worker_pool_t *pool)
{
	return (orbit_executor_t){ .submit = pool_submit, .ctx = pool };
}

int orbit__executor_fork_check(const orbit_executor_t *ex)
{
	if (!ex || ex->submit != pool_submit || !ex->ctx)
		return 0; /* not a pool's: its owner answers for it */
	return orbit__fork_check(((const orbit_worker_pool_t *)ex->ctx)->pid);
}

int orbit_worker_pool_stats(orbit_worker_pool_t *pool, struct orbit_worker_pool_stats *out)
{
	if (!pool || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->nthreads = pool->nthreads;
	out->nnodes = pool->nnodes;
	/* All relaxed: independent counters, documented as approximate. */
	for (unsigned i = 0; i < pool->nnodes; i++)
		out->submitted += atomic_load_explicit(&pool->nodes[i].submitted,
						       memory_order_relaxed);
	for (unsigned i = 0; i < pool->nthreads; i++) {
		struct worker *w = &pool->workers[i];

		out->executed += atomic_load_explicit(&w->executed, memory_order_relaxed);
		out->stolen += atomic_load_explicit(&w->stolen, memory_order_relaxed);
		out->sleeps += atomic_load_explicit(&w->sleeps, memory_order_relaxed);
		out->standby_runs += atomic_load_explicit(&w->standby_runs, memory_order_relaxed);
	}
	out->rejected = atomic_load_explicit(&pool->rejected, memory_order_relaxed);
	out->wakes = atomic_load_explicit(&pool->wakes, memory_order_relaxed);
	out->pin_failures = atomic_load_explicit(&pool->pin_failures, memory_order_relaxed);
	out->idle = atomic_load_explicit(&pool->idle, memory_order_relaxed);
	return 0;
}

/* Refuse submits, let the workers finish every accepted task, join them. */
static void stop_and_join(orbit_worker_pool_t *p)
{
	/* Relaxed: every node lock below orders it before any later submit. */
	atomic_store_explicit(&p->stopping, true, memory_order_relaxed);
	for (unsigned i = 0; i < p->nnodes; i++) {
		orbit__mutex_lock(&p->nodes[i].lock);
		orbit__mutex_unlock(&p->nodes[i].lock);
	}
	/* WP-R3: release (seq_cst), pairs with WP-A2 in worker_main(). */
	atomic_store_explicit(&p->closed, true, memory_order_seq_cst);
	for (unsigned i = 0; i < p->nnodes; i++) {
		/* WP-R2: release, pairs with WP-A1 in worker_sleep(): closed before the bump */
		atomic_fetch_add_explicit(&p->nodes[i].futex, 1, memory_order_release);
		orbit__futex_wake(&p->nodes[i].futex, INT_MAX);
	}
	/* WP-R4: release, pairs with WP-A3 in standby(): closed before the bump */
	atomic_fetch_add_explicit(&p->standby_futex, 1, memory_order_release);
	orbit__futex_wake(&p->standby_futex, INT_MAX);
	for (unsigned i = 0; i < p->nthreads; i++)
		if (p->workers[i].started) /* broken invariant: our own joinable thread */
			orbit__die_on(pthread_join(p->workers[i].thread, NULL), "pthread_join");
}

static void pool_free(orbit_worker_pool_t *p)
{
	for (unsigned i = 0; i < p->nnodes; i++) {
		pthread_mutex_destroy(&p->nodes[i].lock);
		free(p->nodes[i].ring);
	}
	for (unsigned t = 0; t < p->nthreads; t++) {
		free(p->workers[t].seen);
		free(p->workers[t].seen_taken);
	}
	free(p->nodes);
	free(p->workers);
	orbit__topology_free(&p->topo);
	free(p);
}

int orbit_worker_pool_create(const struct orbit_worker_pool_options *user,
			     orbit_worker_pool_t **out)
{
	struct orbit_worker_pool_options opts;
	orbit_worker_pool_t *p;
	unsigned *plan = NULL;
	sigset_t all, old;
	int ret;

	if (!out)
		return -EINVAL;
	orbit_worker_pool_options_init(&opts);
	ret = user ? ORBIT__OPTS_COPY(&opts, user) : 0; /* base/options.h rule */
	if (ret)
		return ret;
	if (opts.spin_polls < ORBIT_WORKER_POOL_NO_SPIN)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	ret = opts.topology ? orbit__topology_copy(&p->topo, opts.topology)
			    : orbit__topology_discover(&p->topo);
	if (ret)
		goto err_pool;
	p->nnodes = p->topo.topo.nnodes;
	p->ncpus = orbit__topology_ncpus(&p->topo.topo);
	p->nthreads = opts.nthreads ? opts.nthreads : p->ncpus;
	p->pin = !opts.no_pin;
	p->pid = orbit__self_pid();
	/* One CPU for a submitter outside the pool. */
	p->spin_max = p->ncpus > 1 ? p->ncpus - 1 : 1;
	p->standby = opts.standby;
	p->slot_max = p->spin_max;
	if (opts.spin_polls == ORBIT_WORKER_POOL_NO_SPIN)
		p->spin_polls = 0;
	else
		p->spin_polls = opts.spin_polls ? (unsigned)opts.spin_polls : SPIN_POLLS_DEFAULT;
	plan = calloc(p->nthreads, sizeof(*plan));
	p->nodes = aligned_alloc(64, sizeof(*p->nodes) * p->nnodes);
	p->workers = aligned_alloc(64, sizeof(*p->workers) * p->nthreads);
	if (!plan || !p->nodes || !p->workers) {
		ret = -ENOMEM;
		goto err_arrays;
	}
	ret = orbit__placement_plan(&p->topo.topo, p->nthreads, plan);
	if (ret)
		goto err_arrays;
	memset(p->nodes, 0, sizeof(*p->nodes) * p->nnodes);
	memset(p->workers, 0, sizeof(*p->workers) * p->nthreads);
	for (unsigned i = 0; i < p->nnodes; i++) {
		/* default attributes cannot fail but for resources */
		orbit__die_on(pthread_mutex_init(&p->nodes[i].lock, NULL), "pthread_mutex_init");
		p->nodes[i].node_id = p->topo.topo.nodes[i].node_id;
	}
	for (unsigned t = 0; t < p->nthreads; t++) {
		p->workers[t].seen = calloc(p->nnodes, sizeof(uint64_t));
		p->workers[t].seen_taken = calloc(p->nnodes, sizeof(uint64_t));
		if (!p->workers[t].seen || !p->workers[t].seen_taken) {
			ret = -ENOMEM;
			goto err_seen;
		}
		p->workers[t].pool = p;
		p->workers[t].node_idx = plan[t];
		p->nodes[plan[t]].nworkers++;
	}
	free(plan);
	plan = NULL;

	/* Workers take no asynchronous signals: those go to the application. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned t = 0; t < p->nthreads; t++) {
		if (pthread_create(&p->workers[t].thread, NULL, worker_main, &p->workers[t])) {
			ret = -EAGAIN;
			break;
		}
		p->workers[t].started = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		goto err_threads;
	*out = p;
	return 0;

err_threads:
	stop_and_join(p);
	pool_free(p);
	return ret;
err_seen:
	for (unsigned t = 0; t < p->nthreads; t++) {
		free(p->workers[t].seen);
		free(p->workers[t].seen_taken);
	}
	for (unsigned i = 0; i < p->nnodes; i++)
		pthread_mutex_destroy(&p->nodes[i].lock);
err_arrays:
	free(plan);
	free(p->nodes);
	free(p->workers);
	orbit__topology_free(&p->topo);
err_pool:
	free(p);
	return ret;
}

int orbit_worker_pool_destroy(orbit_worker_pool_t *pool)
{
	if (!pool)
		return 0;
	if (orbit__fork_check(pool->pid))
		return -ECHILD; /* the parent's pool: its workers are not ours to join */
	if (tls_worker && tls_worker->pool == pool)
		return -EDEADLK;
	stop_and_join(pool);
	pool_free(pool);
	return 0;
}
