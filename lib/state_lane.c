// SPDX-License-Identifier: MIT
/*
 * lib/state_lane.c: the state lane of spec 06 (orbit/state_lane.h). Owns
 * the lane's turn token, its FIFO of waiting work, the thread-local chain
 * of turns a thread holds (the lane marker), reentrancy refusal and its
 * diagnostics, and the hand-off of the turn between run() callers that
 * combine and drain tasks posted to the lane's executor.
 *
 * The turn token lives in one atomic word, lane->state:
 *
 *   0                  idle: nobody holds the turn and the queue is empty
 *   RUNNING            an active thread holds the turn
 *   PENDING            the turn is promised to a drain task submitted to
 *                      the executor that has not started; any run() or
 *                      close_sync() caller may take it over
 *   QUEUED             the queue may be non-empty (set with RUNNING or
 *                      PENDING; makes the fast-path release fail)
 *   CLOSED             no new work is accepted
 *
 * Synchronization table:
 *
 *   what                            written by               under
 *   state 0 -> RUNNING (fast)       run() on an idle lane    CAS SL-A1, no lock
 *   state RUNNING -> 0 (fast)       the holder, queue empty  CAS SL-R1, no lock
 *   every other state change        enqueuers, holder, close lane->mu
 *   head/tail, qlen, waiters, slab, enqueuers, holder        lane->mu
 *   slab_used, closers, deferred
 *   completions (cdone, cclosers),
 *   ctask
 *   arrivals                        enqueuers (under mu)     relaxed hint
 *   node->result, node->word        the thread running it    SL-R3/SL-A3 pair
 *   diag_level                      lane turns only (C2)     the turn
 *   reentries                       refusing threads         relaxed (C3)
 *   refs                            drain tasks, batches     acq_rel
 *   slab->live                      post() (retire), node    acq_rel (SL-R5)
 *                                   releases (drain, batch)
 *   spare                           the block's last         exchange, acq_rel
 *                                   releaser; post()         (SL-R6)
 *
 * Lock order: lane->mu, then the executor's internal locks (post() calls
 * submit under lane->mu on the idle->PENDING transition; hand-offs and the
 * completion task submit after unlocking). No lane lock is held while work, completions or log
 * hooks run, so lanes nest freely.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <orbit/state_lane.h>

#include "base/fork_guard.h"
#include "base/options.h"
#include "lib/sync.h"

enum {
	ST_RUNNING = 1u,
	ST_PENDING = 2u,
	ST_QUEUED = 4u,
	ST_CLOSED = 8u,
};

/* A waiter's word: what the thread that ran or handed on its node says. */
enum {
	W_WAITING = 0,	/* not yet; the waiter spins */
	W_SLEEPING = 1, /* not yet; the waiter sleeps on the futex */
	W_DONE = 2,	/* the work ran; node->result holds its return */
	W_GRANTED = 3,	/* the turn is handed to the waiter: it drains */
};

#define LANE_DEFAULT_COMBINE 32u
#define LANE_DEFAULT_SLICE 256u
/* Posted nodes come LANE_SLAB_NODES at a time from one allocation (struct lane_slab). */
#define LANE_SLAB_NODES 64u
#define LANE_SPINS 128
/* run() on a busy lane: reads of the turn word before queueing, and the
 * pauses (log2) before the first read and at most between two reads (the
 * backoff doubles from the first to the cap): about 3,500 pauses, tens of
 * microseconds, in all. */
#define LANE_TAKE_READS 16
#define LANE_TAKE_FIRST_LOG2 5
#define LANE_TAKE_BACKOFF_LOG2 8
#define LANE_CHUNK 256u
/* A drain task that ran its queue empty reads the arrivals counter up to
 * LANE_LINGER_READS times, LANE_POLL_PAUSES pauses apart, before it gives
 * the turn up; one that finds fewer than LANE_GATHER_MIN items after its
 * first chunk waits up to LANE_GATHER_READS reads for more. */
#define LANE_LINGER_READS ORBIT__DRAIN_LINGER_READS /* lib/sync.h, shared with the queue */
#define LANE_GATHER_READS ORBIT__DRAIN_GATHER_READS
#define LANE_GATHER_MIN ORBIT__DRAIN_GATHER_MIN
#define LANE_POLL_PAUSES ORBIT__DRAIN_POLL_PAUSES

struct lane_node {
	struct lane_node *next;	       /* FIFO of the lane, or a batch list */
	struct lane_node *next_waiter; /* FIFO of run() callers that wait */
	orbit_state_lane_fn fn;
	void *arg;
	orbit_state_lane_done_fn done; /* run_async: completion after the turn */
	void *done_arg;
	const char *file; /* submitter's call site, for diagnostics */
	int line;
	int result;
	bool sync;		/* a run() caller's node, on its stack */
	_Atomic uint32_t word;	/* W_*; only for sync nodes and latches */
	struct lane_slab *slab; /* posted nodes: the block it came from; NULL on a stack */
};

/*
 * Posted nodes are carved, in order, out of blocks of LANE_SLAB_NODES: one
 * malloc() per block instead of one per post, and a node is given back by
 * one atomic subtraction (node_release()), with or without lane->mu, so
 * neither a poster nor the drain allocates or frees per item while others
 * wait for the lock. @live counts the nodes not yet released, counting
 * every node not yet carved too while the block is the lane's current one
 * (post() subtracts those when it retires the block); whoever takes it to
 * 0 gives the block back. Nodes run and are released in FIFO order, so
 * blocks die in order; a node whose completion is late keeps its block (a
 * few kilobytes) until it is released.
 *
 * A block given back goes to the lane's one spare slot (lane->spare), and
 * post() takes its next block from there before it calls malloc(): under a
 * stream of posts that the drain keeps up with, one block is given back
 * about as often as one is needed, so the spare turns a malloc() on the
 * poster's thread and a free() on the drain's (into the poster's arena,
 * under that arena's lock) per block into two exchanges. A block given
 * back while the slot is full is freed. A block can be given back while
 * it is still the current one (all 64 carved and released), and even be
 * freed there, displaced by another: post() retires the current one with
 * 0 nodes left, and slab_put() of 0 touches nothing, so a block is never
 * freed twice nor read once freed.
 */
struct lane_slab {
	_Atomic uint32_t live;
	struct orbit_state_lane *lane; /* the spare slot it goes back to; outlived by the lane */
	struct lane_node nodes[LANE_SLAB_NODES];
};

struct close_waiter {
	struct close_waiter *next;
	orbit_state_lane_done_fn done;
	void *arg;
};

struct orbit_state_lane {
	_Atomic uint32_t state;
	_Atomic uint32_t refs; /* user + promised drain tasks + batches */
	/* The creator (orbit__self_pid(), base/fork_guard.h), set at create:
	 * in a forked child every entry that would take the turn or lane->mu
	 * (a parent's thread may have held either at the fork) or post to
	 * the executor refuses with -ECHILD first. 8 bytes past @state,
	 * which run() and post() take anyway: in the same 16 bytes of a
	 * 16-byte aligned allocation, so on its cache line. It takes the
	 * place of @reentries, which moved past name[]: the words after it
	 * (lane->mu, head) stay where they were. */
	pid_t pid;
	/* lane->mu protects: head, tail, wait_head, wait_tail, slab,
	 * slab_used, closers, cdone_*, cclosers, ctask, and state changes other
	 * than SL-A1/SL-R1. Nothing else
	 * (no lane, no executor call other than submit) is taken under it. */
	pthread_mutex_t mu;
	struct lane_node *head, *tail;
	struct lane_node *wait_head, *wait_tail;
	unsigned qlen; /* nodes in head..tail */
	/* Bumped (relaxed) under lane->mu by every append; polled without
	 * the lock by a drain task that lingers or gathers (a hint only). */
	_Atomic uint32_t arrivals;
	/* Posts made (statistics; one writer at a time: under lane->mu, so a relaxed
	 * load + store). Beside the other words every post writes: a post's
	 * stores under the lock stay on the lines it writes anyway. */
	_Atomic uint64_t posts;
	struct lane_slab *slab; /* the block post() carves nodes from, or NULL */
	unsigned slab_used;	/* nodes of @slab handed out */
	/* A block whose nodes were all released, kept for post()'s next block
	 * (struct lane_slab): exchanged in by any releaser (SL-R6), out by
	 * post() under lane->mu; freed with the lane. */
	_Atomic(struct lane_slab *) spare;
	struct close_waiter *closers;
	/* Completions a run() caller made while combining and may not call
	 * itself (06 §5): they wait here, in order, for the completion task
	 * (ctask: one is submitted and has not taken them yet), for the next
	 * drain task, or for close_sync(). Under lane->mu. */
	struct lane_node *cdone_head, *cdone_tail;
	struct close_waiter *cclosers;
	bool ctask;
	int diag_level; /* owned by the lane: touched in turns only */
	orbit_executor_t ex;
	int home_node;
	unsigned combine_limit;
	unsigned slice_limit;
	char name[64];
	/* Turns run (statistics with one writer at a time, so a relaxed load +
	 * store, no locked RMW): by the turn holder (turns are ordered by
	 * SL-A1/SL-R1), once per chunk in a drain. Read relaxed by
	 * orbit_state_lane_stats(). Past name[], away from state and from
	 * @posts: a waiter spinning on state is not disturbed, and a drain
	 * counting does not take the line a poster writes (it shared one
	 * with @posts, so every post and every drained item moved it). */
	_Atomic uint64_t turns;
	_Atomic uint64_t reentries; /* C3 counter of refusals (rare: off the hot lines) */
};

/* The lane marker: the chain of turns this thread holds, innermost first. */
struct turn_frame {
	const struct orbit_state_lane *lane;
	struct turn_frame *prev;
	const char *file;
	int line;
};

static _Thread_local struct turn_frame *tls_turn __attribute__((tls_model("initial-exec")));
static _Thread_local char tls_diag[384];

static _Atomic(orbit_state_lane_log_fn) log_hook;

/* What a slice leaves to do once the turn is handed on (outside lane->mu). */
struct batch {
	struct lane_node *done_head, *done_tail; /* run_async nodes, in order */
	struct close_waiter *closers;		 /* close() callbacks, idle+closed */
	bool ref;				 /* holds a lane ref while it runs */
	/* Set by the caller: a run() caller's slice, whose completions go to
	 * the lane's deferred lists (and its completion task) instead of
	 * @done_head/@closers, but for sync-bridge latches. */
	bool defer;
	struct lane_node *def_head, *def_tail; /* b->defer: run_async nodes, in order */
	bool submit_ctask;		       /* this slice scheduled the completion task */
};

static inline void lane_lock(struct orbit_state_lane *lane)
{
	orbit__mutex_lock(&lane->mu);
}

static inline void lane_unlock(struct orbit_state_lane *lane)
{
	orbit__mutex_unlock(&lane->mu);
}

/* ---- waiting on a node's word (run() callers, latches) ---- */

static uint32_t node_wait(struct lane_node *n)
{
	uint32_t w, exp = W_WAITING;

	for (int i = 0; i < LANE_SPINS; i++) {
		/* SL-A3: acquire, pairs with SL-R3 in node_complete(): result and the turn's writes */
		w = atomic_load_explicit(&n->word, memory_order_acquire);
		if (w >= W_DONE)
			return w;
		orbit__cpu_relax();
	}
	/* Relaxed is enough: the value we act on is re-read with SL-A3 below. */
	atomic_compare_exchange_strong_explicit(&n->word, &exp, W_SLEEPING, memory_order_relaxed,
						memory_order_relaxed);
	for (;;) {
		/* SL-A3 (again): acquire, pairs with SL-R3 */
		w = atomic_load_explicit(&n->word, memory_order_acquire);
		if (w >= W_DONE)
			return w;
		orbit__futex_wait(&n->word, W_SLEEPING);
	}
}

/*
 * Tell a waiter its node ran (W_DONE) or that it now holds the turn
 * (W_GRANTED). The node may be gone as soon as the exchange is visible;
 * a wake on a stale address is a harmless spurious wake-up.
 */
static void node_complete(struct lane_node *n, uint32_t v)
{
	/* SL-R3: release, pairs with SL-A3 in node_wait(): result and the turn's writes before the word */
	if (atomic_exchange_explicit(&n->word, v, memory_order_release) == W_SLEEPING)
		orbit__futex_wake(&n->word, 1);
}

static void latch_done(void *arg, int result)
{
	struct lane_node *latch = arg;

	latch->result = result;
	node_complete(latch, W_DONE);
}

/* ---- the marker and diagnostics ---- */

static const struct turn_frame *held_frame(const struct orbit_state_lane *lane)
{
	for (const struct turn_frame *f = tls_turn; f; f = f->prev)
		if (f->lane == lane)
			return f;
	return NULL;
}

static void diag_emit(const char *msg)
{
	/* Relaxed is enough: the hook is a function pointer, no data hangs off it. */
	orbit_state_lane_log_fn hook = atomic_load_explicit(&log_hook, memory_order_relaxed);

	if (hook)
		hook(msg);
	else
		fprintf(stderr, "%s\n", msg);
}

/*
 * Refuse an entry into @lane whose turn this thread holds (@held). Runs on
 * a thread holding @lane's turn, so it may read the lane-owned diag_level.
 */
static int refuse(struct orbit_state_lane *lane, const struct turn_frame *held, const char *op,
		  const char *file, int line)
{
	snprintf(tls_diag, sizeof(tls_diag),
		 "orbit state lane \"%s\": reentrant %s at %s:%d refused (-EDEADLK): "
		 "this thread already runs the lane's turn (entered at %s:%d)",
		 lane->name, op, file ? file : "?", line, held->file ? held->file : "?",
		 held->line);
	/* Relaxed is enough: a statistics counter, nothing is published with it. */
	atomic_fetch_add_explicit(&lane->reentries, 1, memory_order_relaxed);
	if (lane->diag_level == ORBIT_STATE_LANE_DIAG_LOG)
		diag_emit(tls_diag);
	return -EDEADLK;
}

static __attribute__((noinline)) int check_nested_entry(struct orbit_state_lane *lane,
							const char *op, const char *file, int line)
{
	const struct turn_frame *f = held_frame(lane);

	return f ? refuse(lane, f, op, file, line) : 0;
}

static inline int check_entry(struct orbit_state_lane *lane, const char *op, const char *file,
			      int line)
{
	if (!tls_turn)
		return 0; /* the common case: this thread holds no turn at all */
	return check_nested_entry(lane, op, file, line);
}

static inline int run_item(struct orbit_state_lane *lane, orbit_state_lane_fn fn, void *arg,
			   const char *file, int line)
{
	struct turn_frame f = { .lane = lane, .prev = tls_turn, .file = file, .line = line };
	int r;

	tls_turn = &f;
	r = fn(arg);
	tls_turn = f.prev;
	return r; /* the caller counts the turn (lane->turns) */
}

/* ---- lifetime ---- */

static void slab_retire(struct lane_slab *slab, unsigned used);

static void lane_free(struct orbit_state_lane *lane)
{
	if (lane->slab)
		slab_retire(lane->slab, lane->slab_used); /* every node is released by now */
	/* Relaxed: the last reference (SL-R4) ordered every slab_put() before us */
	free(atomic_load_explicit(&lane->spare, memory_order_relaxed));
	pthread_mutex_destroy(&lane->mu);
	free(lane);
}

static void lane_unref(struct orbit_state_lane *lane)
{
	/* SL-R4: acq_rel, pairs with SL-R4 of the other references: every use of the lane
	 * happens before the free by the last one */
	if (atomic_fetch_sub_explicit(&lane->refs, 1, memory_order_acq_rel) == 1)
		lane_free(lane);
}

static void lane_ref(struct orbit_state_lane *lane)
{
	/* Relaxed is enough: the caller already holds a reference (or lane->mu). */
	atomic_fetch_add_explicit(&lane->refs, 1, memory_order_relaxed);
}

/* ---- queue (all under lane->mu) ---- */

static void append_locked(struct orbit_state_lane *lane, struct lane_node *n)
{
	n->next = NULL;
	if (lane->tail)
		lane->tail->next = n;
	else
		lane->head = n;
	lane->tail = n;
	lane->qlen++;
	/* Relaxed: a hint for a polling drain; the queue is read under lane->mu. */
	atomic_store_explicit(&lane->arrivals,
			      atomic_load_explicit(&lane->arrivals, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	if (n->sync) {
		n->next_waiter = NULL;
		if (lane->wait_tail)
			lane->wait_tail->next_waiter = n;
		else
			lane->wait_head = n;
		lane->wait_tail = n;
	}
}

static struct lane_node *pop_locked(struct orbit_state_lane *lane)
{
	struct lane_node *n = lane->head;

	lane->head = n->next;
	if (!lane->head)
		lane->tail = NULL;
	lane->qlen--;
	if (n->sync) {
		/* Waiters are queued in FIFO order too, so n is the first one. */
		lane->wait_head = n->next_waiter;
		if (!lane->wait_head)
			lane->wait_tail = NULL;
	}
	return n;
}

/*
 * Give @k nodes of @slab back (or its never carved ones); the last puts the
 * block in the lane's spare slot (freeing the one it displaces).
 */
static void slab_put(struct lane_slab *slab, uint32_t k)
{
	/* SL-R5: acq_rel, pairs with SL-R5 of the other releases of this block: every
	 * use of its nodes (on any thread) happens before the last one's reuse or free */
	if (k && atomic_fetch_sub_explicit(&slab->live, k, memory_order_acq_rel) == k)
		/* SL-R6: acq_rel, pairs with SL-R6 in node_get_locked() (and with a block
		 * displaced here): its last uses before post() carves it again */
		free(atomic_exchange_explicit(&slab->lane->spare, slab, memory_order_acq_rel));
}

/* The block stops being the current one: its nodes never carved are not coming. */
static void slab_retire(struct lane_slab *slab, unsigned used)
{
	slab_put(slab, LANE_SLAB_NODES - used);
}

/* A posted node is done with (it ran, and its completion too). Any thread, no lock. */
static inline void node_release(struct lane_node *n)
{
	slab_put(n->slab, 1);
}

/*
 * Release the nodes of @list (linked by ->next), one subtraction per run of
 * nodes from the same block (they are carved and run in order).
 */
static void nodes_release(struct lane_node *list)
{
	struct lane_slab *slab = NULL;
	uint32_t k = 0;

	for (struct lane_node *n = list, *next; n; n = next) {
		next = n->next; /* read first: the node may be freed below */
		if (n->slab != slab) {
			if (slab)
				slab_put(slab, k);
			slab = n->slab;
			k = 0;
		}
		k++;
	}
	if (slab)
		slab_put(slab, k);
}

/* A node for post(), carved from the current block (a new one every LANE_SLAB_NODES). */
static struct lane_node *node_get_locked(struct orbit_state_lane *lane)
{
	struct lane_node *n;

	if (!lane->slab || lane->slab_used == LANE_SLAB_NODES) {
		/* SL-R6: acq_rel, pairs with SL-R6 in slab_put(): the block's last uses before ours */
		struct lane_slab *slab = atomic_exchange_explicit(&lane->spare, NULL,
								  memory_order_acq_rel);

		if (!slab)
			slab = malloc(sizeof(*slab));
		if (!slab)
			return NULL;
		/* Relaxed: the block is not shared until a node of it is queued under lane->mu. */
		atomic_init(&slab->live, LANE_SLAB_NODES);
		slab->lane = lane;
		if (lane->slab)
			slab_retire(lane->slab, lane->slab_used);
		lane->slab = slab;
		lane->slab_used = 0;
	}
	n = &lane->slab->nodes[lane->slab_used++];
	n->slab = lane->slab;
	return n;
}

static void drain_task(void *arg);

/*
 * The holder is done (queue empty): give the turn up. Under lane->mu.
 */
static void release_idle_locked(struct orbit_state_lane *lane, struct batch *b)
{
	uint32_t s = atomic_load_explicit(&lane->state, memory_order_relaxed);

	/* SL-R2: release, pairs with SL-A1 in orbit_state_lane_run_at() and SL-A2 in
	 * run_slow(): this turn's writes before the next fast-path turn */
	atomic_store_explicit(&lane->state, s & ST_CLOSED, memory_order_release);
	if (s & ST_CLOSED) {
		b->closers = lane->closers;
		lane->closers = NULL;
	}
}

/*
 * The holder stops with work left: hand the turn to the first waiting run()
 * caller if there is one (it drains from the head), else promise it to a
 * drain task, which the caller submits after unlocking (submit_promise).
 * Under lane->mu. Returns the waiter to wake, or NULL for a promise.
 */
static struct lane_node *handoff_locked(struct orbit_state_lane *lane)
{
	uint32_t s = atomic_load_explicit(&lane->state, memory_order_relaxed);

	if (lane->wait_head)
		return lane->wait_head; /* state stays RUNNING: the token moves with the grant */
	/* Holding the turn with QUEUED set, nobody else changes state outside lane->mu. */
	atomic_store_explicit(&lane->state, (s & ~ST_RUNNING) | ST_PENDING, memory_order_relaxed);
	lane_ref(lane); /* held by the promised drain task */
	return NULL;
}

/*
 * Submit the drain task promised by handoff_locked(), without lane->mu. If
 * the executor refuses, take the turn back (unless a run() caller already
 * took it over) and return true: the caller keeps draining. Entered and
 * left without lane->mu; returns with it held when it returns true.
 */
static bool submit_promise(struct orbit_state_lane *lane, orbit_executor_t ex, int node)
{
	uint32_t s;

	if (ex.submit && ex.submit(ex.ctx, drain_task, lane, node) == 0)
		return false;
	lane_lock(lane); /* the promise's reference keeps the lane alive */
	s = atomic_load_explicit(&lane->state, memory_order_relaxed);
	if (s & ST_PENDING) {
		/* Not idle, so the user's reference is still held: ours is not the last. */
		atomic_fetch_sub_explicit(&lane->refs, 1, memory_order_relaxed);
		atomic_store_explicit(&lane->state, (s & ~ST_PENDING) | ST_RUNNING,
				      memory_order_relaxed);
		return true;
	}
	lane_unlock(lane);
	lane_unref(lane); /* a run() caller took over; the lane may be gone after this */
	return false;
}

static void latch_done(void *arg, int result);

/*
 * A completion that only wakes a sync bridge waiting in node_wait()
 * (close_sync, set_diagnostics): it takes no gate and never blocks, so
 * whoever ends the turn calls it, also a run() caller; deferring it could
 * leave the bridge waiting for an executor that refuses.
 */
static inline bool is_latch(orbit_state_lane_done_fn done)
{
	return done == latch_done;
}

/*
 * The slice ends (under lane->mu): decide where its completions run.
 * A run() caller's (b->defer, on a lane with an executor) go to the
 * lane's deferred lists, and the first such slice schedules the
 * completion task (submitted by batch_run() after unlocking). A drain
 * task or a sync bridge takes what is deferred, if no completion task is
 * on its way, and calls it before its own (deferred ones are older).
 * A batch with callbacks to make keeps the lane alive until it ran them.
 */
static void settle_locked(struct orbit_state_lane *lane, struct batch *b)
{
	if (b->defer && lane->ex.submit) {
		struct close_waiter *c, *next, *keep = NULL;

		for (c = b->closers; c; c = next) {
			next = c->next;
			if (is_latch(c->done)) {
				c->next = keep;
				keep = c;
			} else {
				c->next = lane->cclosers;
				lane->cclosers = c;
			}
		}
		b->closers = keep;
		if (b->def_head) {
			if (lane->cdone_tail)
				lane->cdone_tail->next = b->def_head;
			else
				lane->cdone_head = b->def_head;
			lane->cdone_tail = b->def_tail;
			b->def_head = b->def_tail = NULL;
		}
		if ((lane->cdone_head || lane->cclosers) && !lane->ctask) {
			lane->ctask = true;
			lane_ref(lane); /* held by the completion task */
			b->submit_ctask = true;
		}
	} else if ((lane->cdone_head || lane->cclosers) && !lane->ctask) {
		struct close_waiter **tail = &lane->cclosers;

		if (lane->cdone_head) {
			lane->cdone_tail->next = b->done_head;
			if (!b->done_head)
				b->done_tail = lane->cdone_tail;
			b->done_head = lane->cdone_head;
			lane->cdone_head = lane->cdone_tail = NULL;
		}
		while (*tail)
			tail = &(*tail)->next;
		*tail = b->closers;
		b->closers = lane->cclosers;
		lane->cclosers = NULL;
	}
	if ((b->done_head || b->closers) && !b->ref) {
		lane_ref(lane);
		b->ref = true;
	}
}

/*
 * Wait without lane->mu, for at most @reads sparse reads, until @need more
 * items were appended (a drain task that holds the turn; posters keep
 * appending under lane->mu meanwhile). Entered and left with lane->mu.
 */
static void poll_arrivals(struct orbit_state_lane *lane, uint32_t need, unsigned reads)
{
	/* Relaxed: a hint; the queue is re-read under lane->mu. */
	uint32_t seen = atomic_load_explicit(&lane->arrivals, memory_order_relaxed);

	lane_unlock(lane);
	for (unsigned i = 0, last = 0; i < reads; i++) {
		uint32_t got;

		for (unsigned k = 0; k < LANE_POLL_PAUSES; k++)
			orbit__cpu_relax();
		got = atomic_load_explicit(&lane->arrivals, memory_order_relaxed) - seen;
		if (got >= need)
			break;
		/* Gathering (need > 1) goes on only while posts keep coming. */
		if (need > 1 && got == last)
			break;
		last = got;
		if (orbit__worker_others_ready())
			break; /* other tasks wait for this worker thread */
	}
	lane_lock(lane);
}

/*
 * Run queued work FIFO while holding the turn. Entered with lane->mu held,
 * returns with it released and the turn handed on (idle, granted to a
 * waiter, or promised to a drain task). @own is the caller's node in the
 * queue (run() callers) or NULL; the holder always runs up to and including
 * @own, then at most @limit more items. @stream: a drain task, which may
 * linger and gather (poll_arrivals()).
 */
static void drain_locked(struct orbit_state_lane *lane, struct lane_node *own, unsigned limit,
			 struct batch *b, bool stream)
{
	bool own_done = own == NULL, lingered = false;
	unsigned ran = 0, uncounted;
	struct lane_node *n, *next, *next_holder, *chunk, **chunk_tail, *recycle;

	for (;;) {
		unsigned take;

		if (!lane->head && stream && !lingered && ran < limit) {
			/*
			 * A drain task (never a run() caller) that ran its queue
			 * empty lingers a few microseconds: under a steady stream
			 * of posts this keeps one drain instead of an executor
			 * round trip per burst. A run() caller arriving meanwhile
			 * queues and is served by this drain.
			 */
			lingered = true; /* once per task */
			poll_arrivals(lane, 1, LANE_LINGER_READS);
			continue;
		}
		if (!lane->head) {
			release_idle_locked(lane, b);
			break;
		}
		if (own_done && ran >= limit) {
			orbit_executor_t ex = lane->ex;
			int node = lane->home_node;

			next_holder = handoff_locked(lane);
			settle_locked(lane, b);
			lane_unlock(lane);
			if (next_holder) {
				node_complete(next_holder, W_GRANTED);
				return;
			}
			if (!submit_promise(lane, ex, node))
				return;
			ran = 0; /* the executor refused: keep draining ourselves */
			continue;
		}
		/*
		 * A streaming drain task finding only a few items waits a moment
		 * for more: each chunk hands lane->mu and the queue's cache lines
		 * over between posters and the drain, so tiny chunks make every
		 * post miss on them.
		 */
		if (stream && ran && lane->qlen < LANE_GATHER_MIN && !lane->wait_head &&
		    ran < limit)
			poll_arrivals(lane, LANE_GATHER_MIN - lane->qlen, LANE_GATHER_READS);
		/* Take a chunk off the head in one lock hold; run it unlocked. */
		take = own_done && limit - ran < LANE_CHUNK ? limit - ran : LANE_CHUNK;
		chunk = NULL;
		chunk_tail = &chunk;
		while (lane->head && take--) {
			n = pop_locked(lane);
			n->next = NULL;
			*chunk_tail = n;
			chunk_tail = &n->next;
		}
		lane_unlock(lane);

		recycle = NULL;
		for (n = chunk, uncounted = 0; n; n = next) {
			int r;

			next = n->next; /* read first: a waiter's node is gone once completed */
			r = run_item(lane, n->fn, n->arg, n->file, n->line);
			ran++;
			uncounted++;
			if (n->sync || n->done) /* a plain post's result is read by nobody */
				n->result = r;
			if (n->sync) {
				if (n == own) {
					own_done = true;
				} else {
					/* Its turn counted before its run() returns (W_DONE orders
					 * it): a caller reading the stats then sees it */
					orbit__single_writer_add(&lane->turns, uncounted);
					uncounted = 0;
					node_complete(n, W_DONE);
				}
			} else if (n->done) {
				struct lane_node **head = &b->done_head, **tail = &b->done_tail;

				if (b->defer && lane->ex.submit && !is_latch(n->done)) {
					head = &b->def_head; /* 06 §5: not on this thread */
					tail = &b->def_tail;
				}
				n->next = NULL;
				if (*tail)
					(*tail)->next = n;
				else
					*head = n;
				*tail = n;
			} else {
				n->next = recycle;
				recycle = n;
			}
		}

		/* The turn holder, once per chunk (and before a waiter's W_DONE above):
		 * ordered by SL-A1/SL-R1 like every turn */
		if (uncounted)
			orbit__single_writer_add(&lane->turns, uncounted);
		nodes_release(recycle); /* without lane->mu: posters keep posting */
		lane_lock(lane);
	}
	settle_locked(lane, b);
	lane_unlock(lane);
}

static void batch_call(struct batch *b)
{
	struct lane_node *n = b->done_head;
	struct close_waiter *c = b->closers;

	while (n) {
		struct lane_node *next = n->next;

		n->done(n->done_arg, n->result);
		node_release(n);
		n = next;
	}
	while (c) {
		struct close_waiter *next = c->next;

		c->done(c->arg, 0);
		free(c);
		c = next;
	}
}

/*
 * The completion task: calls, on an executor thread, what run() callers
 * deferred (settle_locked()), oldest first, then drops its lane reference.
 */
static void completion_task(void *arg)
{
	struct orbit_state_lane *lane = arg;
	struct batch b = { 0 };

	lane_lock(lane);
	b.done_head = lane->cdone_head;
	b.closers = lane->cclosers;
	lane->cdone_head = lane->cdone_tail = NULL;
	lane->cclosers = NULL;
	lane->ctask = false;
	lane_unlock(lane);
	batch_call(&b);
	lane_unref(lane); /* the reference settle_locked() took for us */
}

/*
 * Completions of a slice, after its turn was handed on. A drain task or a
 * sync bridge calls its own here. A run() caller never calls one but a
 * latch: it may hold a gate a completion needs (06 §5 blocking-compatible
 * boundary), so settle_locked() deferred them and this submits the
 * completion task. If the executor refuses, they stay deferred, for the
 * next drain task or close_sync(): still never on this thread.
 */
static void batch_run(struct orbit_state_lane *lane, struct batch *b)
{
	if (b->submit_ctask &&
	    lane->ex.submit(lane->ex.ctx, completion_task, lane, lane->home_node) != 0) {
		lane_lock(lane);
		lane->ctask = false;
		lane_unlock(lane);
		lane_unref(lane); /* the task's; b->ref, if any, is separate */
	}
	if (!b->done_head && !b->closers)
		return;
	batch_call(b);
	if (b->ref)
		lane_unref(lane);
}

static void drain_task(void *arg)
{
	struct orbit_state_lane *lane = arg;
	struct batch b = { 0 };
	uint32_t s;

	lane_lock(lane);
	s = atomic_load_explicit(&lane->state, memory_order_relaxed);
	if (!(s & ST_PENDING)) {
		/* A run() or close_sync() caller took the promised turn over. */
		lane_unlock(lane);
		lane_unref(lane);
		return;
	}
	atomic_store_explicit(&lane->state, (s & ~ST_PENDING) | ST_RUNNING, memory_order_relaxed);
	drain_locked(lane, NULL, lane->slice_limit, &b, true);
	batch_run(lane, &b);
	lane_unref(lane); /* the reference the promise held */
}

/* ---- public surface ---- */

ORBIT_API void orbit_state_lane_options_init(struct orbit_state_lane_options *opt)
{
	if (!opt)
		return;
	memset(opt, 0, sizeof(*opt));
	opt->size = sizeof(*opt);
}

ORBIT_API int orbit_state_lane_create(const struct orbit_state_lane_options *user,
				      orbit_state_lane_t **out)
{
	struct orbit_state_lane_options copy, *opt = &copy;
	struct orbit_state_lane *lane;
	int rc;

	if (!user || !out)
		return -EINVAL;
	rc = ORBIT__OPTS_COPY(opt, user); /* base/options.h rule */
	if (rc)
		return rc;
	if (opt->diagnostics != ORBIT_STATE_LANE_DIAG_RECORD &&
	    opt->diagnostics != ORBIT_STATE_LANE_DIAG_LOG)
		return -EINVAL;
	rc = orbit__executor_fork_check(&opt->executor); /* an inherited pool's */
	if (rc)
		return rc;
	lane = calloc(1, sizeof(*lane));
	if (!lane)
		return -ENOMEM;
	/* Adaptive: a poster contending with the drain spins briefly instead
	 * of paying a futex sleep and wake. */
	if (orbit__mutex_init_adaptive(&lane->mu)) {
		free(lane);
		return -ENOMEM;
	}
	atomic_init(&lane->state, 0);
	atomic_init(&lane->refs, 1);
	atomic_init(&lane->reentries, 0);
	atomic_init(&lane->spare, NULL);
	lane->pid = orbit__self_pid();
	lane->diag_level = opt->diagnostics;
	lane->ex = opt->executor;
	lane->home_node = orbit_home_node_id(opt->home);
	lane->combine_limit = opt->combine_limit ? opt->combine_limit : LANE_DEFAULT_COMBINE;
	lane->slice_limit = opt->slice_limit ? opt->slice_limit : LANE_DEFAULT_SLICE;
	snprintf(lane->name, sizeof(lane->name), "%s", opt->name ? opt->name : "lane");
	*out = lane;
	return 0;
}

ORBIT_API int orbit_state_lane_destroy(orbit_state_lane_t *lane)
{
	if (!lane)
		return 0;
	if (orbit__fork_check(lane->pid))
		return -ECHILD; /* a parent's lane: nothing freed */
	if (held_frame(lane))
		return -EBUSY;
	lane_lock(lane);
	if (atomic_load_explicit(&lane->state, memory_order_relaxed) != ST_CLOSED ||
	    lane->closers || ((lane->cdone_head || lane->cclosers) && !lane->ctask)) {
		lane_unlock(lane);
		return -EBUSY;
	}
	lane_unlock(lane);
	lane_unref(lane);
	return 0;
}

ORBIT_API orbit_state_lane_t *orbit_state_lane_current(void)
{
	return tls_turn ? (orbit_state_lane_t *)tls_turn->lane : NULL;
}

ORBIT_API bool orbit_state_lane_is_on_lane(const orbit_state_lane_t *lane)
{
	return lane && held_frame(lane);
}

ORBIT_API const char *orbit_state_lane_name(const orbit_state_lane_t *lane)
{
	return lane ? lane->name : "";
}

ORBIT_API uint64_t orbit_state_lane_reentry_count(const orbit_state_lane_t *lane)
{
	/* Relaxed is enough: a statistic, read on its own. */
	return lane ? atomic_load_explicit(&lane->reentries, memory_order_relaxed) : 0;
}

ORBIT_API int orbit_state_lane_stats(const orbit_state_lane_t *lane,
				     struct orbit_state_lane_stats *out)
{
	if (!lane || !out)
		return -EINVAL;
	/* Relaxed is enough: statistics, each read on its own. */
	out->turns = atomic_load_explicit(&lane->turns, memory_order_relaxed);
	out->posts = atomic_load_explicit(&lane->posts, memory_order_relaxed);
	out->reentry_refused = atomic_load_explicit(&lane->reentries, memory_order_relaxed);
	return 0;
}

ORBIT_API const char *orbit_state_lane_last_diagnostic(void)
{
	return tls_diag;
}

ORBIT_API orbit_state_lane_log_fn orbit_state_lane_set_log_hook(orbit_state_lane_log_fn hook)
{
	/* Relaxed is enough: see diag_emit(). */
	return atomic_exchange_explicit(&log_hook, hook, memory_order_relaxed);
}

ORBIT_API int orbit_state_lane_throw_if_reentrant_at(const orbit_state_lane_t *lane,
						     const char *file, int line)
{
	if (!lane)
		return -EINVAL;
	return check_entry((struct orbit_state_lane *)lane, "entry", file, line);
}

/*
 * The holder's SL-R1 failed: work queued behind its turn, or the lane was
 * closed. Combine: run what waits, then hand the turn on. Out of line so
 * the uncontended path of run() stays a leaf-like call.
 */
static __attribute__((noinline)) void release_contended(struct orbit_state_lane *lane)
{
	struct batch b = { .defer = true }; /* 06 §5: never our completions */

	lane_lock(lane);
	drain_locked(lane, NULL, lane->combine_limit, &b, false);
	batch_run(lane, &b);
}

/*
 * Run @fn in the turn the caller just took (SL-A1), then give the turn up:
 * SL-R1 if nobody queued behind us and the lane is open, else combine.
 */
static inline int run_owned(struct orbit_state_lane *lane, orbit_state_lane_fn fn, void *arg,
			    const char *file, int line)
{
	uint32_t s = ST_RUNNING;
	int r = run_item(lane, fn, arg, file, line);

	orbit__single_writer_add(&lane->turns, 1); /* the turn holder: ordered by SL-A1/SL-R1 */

	/* SL-R1: release, pairs with SL-A1/SL-A2/SL-A5: this turn's writes before the next turn */
	if (!atomic_compare_exchange_strong_explicit(&lane->state, &s, 0, memory_order_release,
						     memory_order_relaxed))
		release_contended(lane);
	return r;
}

static int noop(void *arg)
{
	return 0;
}

/*
 * run() when the fast path did not get the turn. A @barrier is accepted
 * on a closed lane (it only waits for what is queued before it) and
 * returns 0 at once if a closed lane is idle.
 */
static int run_slow(struct orbit_state_lane *lane, orbit_state_lane_fn fn, void *arg,
		    const char *file, int line, bool barrier)
{
	struct lane_node me = { .fn = fn, .arg = arg, .file = file, .line = line, .sync = true };
	/* A run() caller defers completions; a sync bridge (@barrier) calls them. */
	struct batch b = { .defer = !barrier };
	uint32_t s;

	atomic_init(&me.word, W_WAITING);
	lane_lock(lane);
	for (;;) {
		s = atomic_load_explicit(&lane->state, memory_order_relaxed);
		if (s & ST_CLOSED) {
			if (!barrier || !(s & (ST_RUNNING | ST_PENDING))) {
				lane_unlock(lane);
				return barrier ? 0 : -EPIPE;
			}
		}
		if (s == 0) {
			/* SL-A2: acquire, pairs with SL-R1/SL-R2: the previous turn's writes before ours */
			if (!atomic_compare_exchange_strong_explicit(&lane->state, &s, ST_RUNNING,
								     memory_order_acquire,
								     memory_order_relaxed))
				continue;
			lane_unlock(lane);
			return run_owned(lane, fn, arg, file, line);
		}
		if (s & ST_PENDING) {
			/* The turn is only promised to a drain task that has not started:
			 * take it over rather than wait for the executor. */
			atomic_store_explicit(&lane->state, (s & ~ST_PENDING) | ST_RUNNING,
					      memory_order_relaxed);
			append_locked(lane, &me);
			break;
		}
		/* RUNNING: queue behind the holder. QUEUED makes its SL-R1 fail. */
		if (!(s & ST_QUEUED) && !atomic_compare_exchange_strong_explicit(
					    &lane->state, &s, s | ST_QUEUED, memory_order_relaxed,
					    memory_order_relaxed))
			continue;
		append_locked(lane, &me);
		lane_unlock(lane);
		if (node_wait(&me) == W_DONE)
			return me.result;
		lane_lock(lane); /* W_GRANTED: we hold the turn and drain from the head */
		break;
	}
	drain_locked(lane, &me, lane->combine_limit, &b, false);
	batch_run(lane, &b);
	return me.result;
}

/*
 * run() when SL-A1 found the turn taken: spin for a plain RUNNING to end,
 * then queue (run_slow). Out of line, like release_contended().
 */
static __attribute__((noinline)) int run_contended(struct orbit_state_lane *lane,
						   orbit_state_lane_fn fn, void *arg,
						   const char *file, int line, uint32_t s)
{
	/*
	 * Another thread runs a turn and nobody waits behind it: take the
	 * turn when it goes idle, with exponential backoff between reads of
	 * the word. Queueing costs the holder a combine per call (lane->mu,
	 * a node, a futex word) and moves the turn and the state's cache
	 * lines between the threads at every call; backing off (the first
	 * read only after ~1 us) lets the running thread keep both hot for a
	 * stretch, as a contended mutex whose waiter sleeps does: taking the
	 * turn at the first idle moment measured 2-10x more hand-overs and
	 * lower throughput. Only a plain RUNNING is waited for: once
	 * anything is queued the word never returns to 0 before the queue
	 * ran, so FIFO is kept; past the reads the caller queues.
	 */
	for (int i = 0; i < LANE_TAKE_READS && s == ST_RUNNING; i++) {
		int lg = LANE_TAKE_FIRST_LOG2 + i;
		int pauses = 1 << (lg < LANE_TAKE_BACKOFF_LOG2 ? lg : LANE_TAKE_BACKOFF_LOG2);

		while (pauses--)
			orbit__cpu_relax();
		/* Relaxed: only a hint; the CAS below (SL-A1) is what orders the turn. */
		s = atomic_load_explicit(&lane->state, memory_order_relaxed);
		/* SL-A1 (again): acquire, pairs with SL-R1/SL-R2 */
		if (s == 0 && atomic_compare_exchange_strong_explicit(&lane->state, &s, ST_RUNNING,
								      memory_order_acquire,
								      memory_order_relaxed))
			return run_owned(lane, fn, arg, file, line);
	}
	return run_slow(lane, fn, arg, file, line, false);
}

ORBIT_API int orbit_state_lane_run_at(orbit_state_lane_t *lane, orbit_state_lane_fn fn, void *arg,
				      const char *file, int line)
{
	uint32_t s = 0;
	int rc;

	if (!lane || !fn)
		return -EINVAL;
	if (orbit__fork_check(lane->pid))
		return -ECHILD; /* a parent's lane (see the field) */
	rc = check_entry(lane, "run", file, line);
	if (rc)
		return rc;
	/* SL-A1: acquire, pairs with SL-R1/SL-R2: the previous turn's writes before ours */
	if (!atomic_compare_exchange_strong_explicit(&lane->state, &s, ST_RUNNING,
						     memory_order_acquire, memory_order_relaxed))
		return run_contended(lane, fn, arg, file, line, s);
	return run_owned(lane, fn, arg, file, line);
}

static int post(struct orbit_state_lane *lane, orbit_state_lane_fn fn, void *arg,
		orbit_state_lane_done_fn done, void *done_arg, const char *op, const char *file,
		int line)
{
	struct lane_node *n;
	struct lane_slab *slab;
	uint32_t s;
	int rc;

	if (!lane || !fn || !lane->ex.submit)
		return -EINVAL;
	if (orbit__fork_check(lane->pid))
		return -ECHILD; /* a parent's lane (see the field) */
	rc = check_entry(lane, op, file, line);
	if (rc)
		return rc;
	lane_lock(lane);
	n = node_get_locked(lane);
	if (!n) {
		rc = -ENOMEM;
		goto err_unlock;
	}
	slab = n->slab; /* the block it was carved from: kept through the reset */
	*n = (struct lane_node){ .fn = fn,
				 .arg = arg,
				 .done = done,
				 .done_arg = done_arg,
				 .file = file,
				 .line = line,
				 .slab = slab };
	for (;;) {
		s = atomic_load_explicit(&lane->state, memory_order_relaxed);
		if (s & ST_CLOSED) {
			rc = -EPIPE;
			goto err_put;
		}
		if (s == 0) {
			/* Idle: promise the turn to a drain task. Under lane->mu, so the
			 * task (which takes lane->mu first) cannot see it half done. */
			/* SL-A5: acquire, pairs with SL-R1 (released without lane->mu): the
			 * drain task, ordered after us by lane->mu, sees the last turn's writes */
			if (!atomic_compare_exchange_strong_explicit(
				&lane->state, &s, ST_PENDING | ST_QUEUED, memory_order_acquire,
				memory_order_relaxed))
				continue;
			lane_ref(lane);
			rc = lane->ex.submit(lane->ex.ctx, drain_task, lane, lane->home_node);
			if (rc) {
				atomic_fetch_sub_explicit(&lane->refs, 1, memory_order_relaxed);
				atomic_store_explicit(&lane->state, 0, memory_order_relaxed);
				goto err_put;
			}
			break;
		}
		if ((s & ST_QUEUED) || atomic_compare_exchange_strong_explicit(
					   &lane->state, &s, s | ST_QUEUED, memory_order_relaxed,
					   memory_order_relaxed))
			break;
	}
	append_locked(lane, n);
	orbit__single_writer_add(&lane->posts, 1); /* under lane->mu */
	lane_unlock(lane);
	return 0;

err_put:
	node_release(n);
err_unlock:
	lane_unlock(lane);
	return rc;
}

ORBIT_API int orbit_state_lane_try_post_at(orbit_state_lane_t *lane, orbit_state_lane_fn fn,
					   void *arg, const char *file, int line)
{
	return post(lane, fn, arg, NULL, NULL, "try_post", file, line);
}

ORBIT_API int orbit_state_lane_run_async_at(orbit_state_lane_t *lane, orbit_state_lane_fn fn,
					    void *arg, orbit_state_lane_done_fn done,
					    void *done_arg, const char *file, int line)
{
	if (!done)
		return -EINVAL;
	return post(lane, fn, arg, done, done_arg, "run_async", file, line);
}

ORBIT_API int orbit_state_lane_close(orbit_state_lane_t *lane, orbit_state_lane_done_fn done,
				     void *done_arg)
{
	struct close_waiter *c = NULL;
	uint32_t s;

	if (!lane)
		return -EINVAL;
	if (orbit__fork_check(lane->pid))
		return -ECHILD; /* not closed: the lane is the parent's */
	if (done) {
		c = malloc(sizeof(*c));
		if (!c) {
			lane_lock(lane);
			atomic_fetch_or_explicit(&lane->state, ST_CLOSED, memory_order_relaxed);
			lane_unlock(lane);
			return -ENOMEM;
		}
		c->done = done;
		c->arg = done_arg;
	}
	lane_lock(lane);
	/* Relaxed is enough: a fast-path SL-A1/SL-R1 CAS racing with this either
	 * sees CLOSED and fails into lane->mu, or is ordered before it. */
	s = atomic_fetch_or_explicit(&lane->state, ST_CLOSED, memory_order_relaxed);
	if (s & (ST_RUNNING | ST_PENDING)) {
		if (c) {
			/* The holder's release under lane->mu takes these (release_idle_locked). */
			c->next = lane->closers;
			lane->closers = c;
		}
		lane_unlock(lane);
		return 0;
	}
	lane_unlock(lane);
	if (c) {
		c->done(c->arg, 0);
		free(c);
	}
	return 0;
}

ORBIT_API int orbit_state_lane_close_sync_at(orbit_state_lane_t *lane, const char *file, int line)
{
	struct lane_node latch = { 0 };
	int rc;

	if (!lane)
		return -EINVAL;
	if (orbit__fork_check(lane->pid))
		return -ECHILD;
	rc = check_entry(lane, "close_sync", file, line);
	if (rc)
		return rc;
	atomic_init(&latch.word, W_WAITING);
	rc = orbit_state_lane_close(lane, latch_done, &latch);
	if (rc)
		return rc;
	/* Wait for what was accepted like a run() caller would: never for the
	 * executor (a promised turn is taken over), then for the callback,
	 * which the thread that ran the last item is about to make. */
	run_slow(lane, noop, NULL, file, line, true);
	node_wait(&latch);
	/* A sync bridge may make what run() callers deferred when the
	 * executor refused their completion task (06 §5): outside any turn,
	 * on a thread that asked to wait. */
	{
		struct batch b = { 0 };

		lane_lock(lane);
		settle_locked(lane, &b);
		lane_unlock(lane);
		batch_run(lane, &b);
	}
	return 0;
}

ORBIT_API int orbit_state_lane_detach(const orbit_executor_t *executor, orbit_task_fn fn, void *arg,
				      int home_node)
{
	if (!executor || !executor->submit || !fn)
		return -EINVAL;
	/* The start runs on an executor thread, whose marker chain is empty:
	 * nothing of this thread's turns is handed down, not even to a
	 * synchronous prefix (06 §6 Kind 2). */
	return executor->submit(executor->ctx, fn, arg, home_node);
}

/* ---- dual surfaces for the diagnostics level (06 §5) ---- */

struct diag_req {
	struct orbit_state_lane *lane;
	int level;
	orbit_state_lane_done_fn done;
	void *done_arg;
};

static int diag_set_on_lane(void *arg)
{
	struct diag_req *r = arg;
	int prev = r->lane->diag_level; /* lane-owned: we are on its turn */

	r->lane->diag_level = r->level;
	return prev;
}

static void diag_set_done(void *arg, int prev)
{
	struct diag_req *r = arg;
	orbit_state_lane_done_fn done = r->done;
	void *done_arg = r->done_arg;

	free(r);
	done(done_arg, prev);
}

ORBIT_API int orbit_state_lane_set_diagnostics_async(orbit_state_lane_t *lane, int level,
						     orbit_state_lane_done_fn done, void *done_arg)
{
	struct diag_req *r;
	int rc;

	if (!lane || !done)
		return -EINVAL;
	if (orbit__fork_check(lane->pid))
		return -ECHILD;
	if (level != ORBIT_STATE_LANE_DIAG_RECORD && level != ORBIT_STATE_LANE_DIAG_LOG)
		return -EINVAL;
	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	*r = (struct diag_req){ .lane = lane, .level = level, .done = done, .done_arg = done_arg };
	rc = post(lane, diag_set_on_lane, r, diag_set_done, r, "set_diagnostics_async", __FILE__,
		  __LINE__);
	if (rc)
		free(r);
	return rc;
}

ORBIT_API int orbit_state_lane_set_diagnostics(orbit_state_lane_t *lane, int level)
{
	struct diag_req req = { .lane = lane, .level = level };
	struct lane_node latch = { 0 };
	int rc;

	if (!lane)
		return -EINVAL;
	if (orbit__fork_check(lane->pid))
		return -ECHILD;
	if (tls_turn) {
		/* A sync bridge is not for framework contexts (06 §5): waiting
		 * here could wait on ourselves. */
		snprintf(
		    tls_diag, sizeof(tls_diag),
		    "orbit state lane \"%s\": synchronous set_diagnostics called inside the turn "
		    "of lane \"%s\" (entered at %s:%d) refused (-EDEADLK): use "
		    "orbit_state_lane_set_diagnostics_async",
		    lane->name, tls_turn->lane->name, tls_turn->file ? tls_turn->file : "?",
		    tls_turn->line);
		return -EDEADLK;
	}
	if (level != ORBIT_STATE_LANE_DIAG_RECORD && level != ORBIT_STATE_LANE_DIAG_LOG)
		return -EINVAL;
	atomic_init(&latch.word, W_WAITING);
	/* The latch is the completion itself, so whoever ends the turn wakes
	 * us, also a combining run() caller (is_latch()). */
	rc = post(lane, diag_set_on_lane, &req, latch_done, &latch, "set_diagnostics", __FILE__,
		  __LINE__);
	if (rc)
		return rc;
	/* As in close_sync: wait behind the item without needing the executor. */
	run_slow(lane, noop, NULL, __FILE__, __LINE__, true);
	node_wait(&latch);
	return latch.result;
}
