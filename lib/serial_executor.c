// SPDX-License-Identifier: MIT
/*
 * lib/serial_executor.c: what the Spot, Actor and session coordinators of
 * spec 07 §2 share. Owns the coordinator base (state lane, outstanding
 * count and quiescence wait, stats), the work record wrapped around every
 * submitted work function, the thread-local chain of coordinator turns
 * (which work of which coordinator this thread runs: yield, the §7
 * snapshot and the §10 reentrancy refusal read it), and the completion
 * object a caller may wait on.
 *
 * Locks: coord->mu protects only the handshake with quiescence waiters
 * (the count itself is atomic); a completion's mu protects its state,
 * result and owner. Both are leaves: nothing else is taken under them.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/time.h"
#include "lib/ownership.h"
#include "lib/serial_executor.h"
#include "lib/serial_queue.h" /* orbit__serial_queue_enqueue_n(), _held_return() */
#include "lib/sync.h"

/* Coordinator ids: relaxed, only uniqueness matters. */
static _Atomic uint64_t next_coord_id = 1;

/* One coordinator turn this thread is running (work of orbit__work_run). */
struct frame {
	struct orbit__work *w;
	const orbit_serial_turn_t *turn;
	struct frame *prev; /* an enclosing turn on this thread, if any */
};

static _Thread_local struct frame *tls_frame;

static void pool_fini(struct orbit__coord *co);

enum cstate { C_IDLE = 0, C_PENDING, C_DONE };

struct orbit_work_completion {
	pthread_mutex_t mu; /* protects the three fields below */
	pthread_cond_t cv;  /* state left C_PENDING */
	int state;
	int result;
	uint64_t owner; /* id of the coordinator that accepted the work */
	/* The creator (base/fork_guard.h): wait and destroy refuse with
	 * -ECHILD in a forked child, where the work it waits for never runs
	 * and a parent's thread may have held @mu at the fork. */
	pid_t pid;
};

/* The completion's state before a submission armed it (restored on refusal). */
struct carm {
	int state, result;
	uint64_t owner;
};

#define STAT_INC ORBIT__COORD_INC

/* One wait step: 0 woken (maybe spuriously), -ETIMEDOUT past @dl. */
static int cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int timeout_ms,
			   const struct timespec *dl)
{
	int r;

	if (timeout_ms == 0)
		return -ETIMEDOUT;
	r = timeout_ms < 0 ? pthread_cond_wait(cv, mu) : pthread_cond_timedwait(cv, mu, dl);
	if (r == ETIMEDOUT)
		return -ETIMEDOUT;
	if (r)
		orbit__die(r, "pthread_cond_wait"); /* broken invariant */
	return 0;
}

/* ---- 07 §8 ownership premise (lib/ownership.h) ------------------------------ */

void orbit__ownership_broken(const char *what, const char *name, const char *file, int line)
{
	fprintf(stderr,
		"orbit: %s:%d assumes it runs on the turn of %s \"%s\", but this thread does "
		"not hold it (07 §8 ownership premise broken)\n",
		file, line, what, name ? name : "?");
	abort(); /* a broken invariant of this process */
}

/* ---- coordinator base ---------------------------------------------------- */

void *orbit__coord_alloc(size_t size)
{
	size_t align = _Alignof(struct orbit__coord);
	size_t n = (size + align - 1) / align * align; /* C11: a multiple of the alignment */
	void *p = n >= size ? aligned_alloc(align, n) : NULL;

	if (p)
		memset(p, 0, n);
	return p;
}

int orbit__coord_init(struct orbit__coord *co, const char *lane_name)
{
	struct orbit_state_lane_options lo = { .size = sizeof(lo),
					       .name = lane_name,
					       .home = ORBIT_HOME_NODE_NONE };
	int ret;

	memset(co, 0, sizeof(*co));
	co->pid = orbit__self_pid();
	/* Relaxed: only uniqueness matters. */
	co->id = atomic_fetch_add_explicit(&next_coord_id, 1, memory_order_relaxed);
	/* The lane is only entered with run() (never posted to), so it needs
	 * no executor. */
	ret = orbit_state_lane_create(&lo, &co->lane);
	if (ret)
		return ret;
	ret = orbit__mutex_init_adaptive(&co->mu);
	if (ret)
		goto err_lane;
	ret = orbit__cond_init_monotonic(&co->cv);
	if (ret)
		goto err_mutex;
	return 0;

err_mutex:
	pthread_mutex_destroy(&co->mu);
err_lane:
	orbit_state_lane_close_sync(co->lane);
	orbit_state_lane_destroy(co->lane);
	return ret;
}

void orbit__coord_fini(struct orbit__coord *co)
{
	orbit_state_lane_close_sync(co->lane);
	orbit_state_lane_destroy(co->lane);
	pool_fini(co);
	pthread_cond_destroy(&co->cv);
	pthread_mutex_destroy(&co->mu);
}

bool orbit__coord_is_current(const struct orbit__coord *co)
{
	for (const struct frame *f = tls_frame; f; f = f->prev)
		if (f->w->co == co)
			return true;
	return false;
}

static bool on_turn_of_id(uint64_t id)
{
	for (const struct frame *f = tls_frame; f; f = f->prev)
		if (f->w->co->id == id)
			return true;
	return false;
}

int orbit__coord_await(struct orbit__coord *co, int timeout_ms)
{
	struct timespec dl;
	int ret = 0;

	if (orbit__coord_fork_check(co))
		return -ECHILD; /* nothing of a parent's coordinator runs here */
	if (orbit__coord_is_current(co))
		return -EDEADLK; /* 07 §10: refused at the call site, never a hang */
	if (timeout_ms > 0)
		orbit__deadline_after_ns(&dl, CLOCK_MONOTONIC, (uint64_t)timeout_ms * 1000000ull);
	orbit__mutex_lock(&co->mu);
	/* SX-D1: seq_cst increment, then seq_cst loads of the count; pairs
	 * with SX-D2 in coord_uncount(): either the releaser sees us waiting
	 * and broadcasts under mu (which we hold until cond_wait releases
	 * it), or we see its decrement below. */
	atomic_fetch_add_explicit(&co->waiters, 1, memory_order_seq_cst);
	while (orbit__coord_outstanding(co) > 0) {
		ret = cond_wait_until(&co->cv, &co->mu, timeout_ms, &dl);
		if (ret && orbit__coord_outstanding(co) > 0)
			break;
		ret = 0;
	}
	/* Relaxed: a releaser that still sees us only broadcasts in vain. */
	atomic_fetch_sub_explicit(&co->waiters, 1, memory_order_relaxed);
	orbit__mutex_unlock(&co->mu);
	return ret;
}

int orbit__coord_destroy_begin(struct orbit__coord *co, int (*close)(void *obj), void *obj)
{
	int ret;

	if (orbit__coord_fork_check(co))
		return -ECHILD; /* a parent's: nothing closed, nothing freed */
	if (orbit__coord_is_current(co))
		return -EDEADLK;
	/* 07 §8: destroy frees the lane; from inside its turn that would
	 * pull it from under the holder. Refused here, in every build. */
	ret = orbit_state_lane_throw_if_reentrant(co->lane);
	if (ret)
		return ret;
	ret = close(obj);
	if (ret)
		return ret;
	/* seq_cst like SX-D1: closed, so the count only goes down from here. */
	return orbit__coord_outstanding(co) > 0 ? -EBUSY : 0;
}

void orbit__queue_free(orbit_serial_queue_t *q)
{
	/* Quiescent at the coordinator level already: this only waits for
	 * the queue to return the last reservation after our release. */
	orbit_serial_queue_await_quiescence(q, -1);
	orbit_serial_queue_destroy(q);
}

void orbit__coord_count_refusal(struct orbit__coord *co, unsigned kind, int err)
{
	if (err == -EAGAIN)
		STAT_INC(co, rejected_full[kind]);
	else if (err == -E2BIG)
		STAT_INC(co, rejected_too_big[kind]);
	else if (err == -EPIPE)
		STAT_INC(co, rejected_closed[kind]);
}

void orbit__coord_stats(const struct orbit__coord *cco, struct orbit_serial_executor_stats *out)
{
	struct orbit__coord *co = (struct orbit__coord *)cco;

	uint64_t released;

	memset(out, 0, sizeof(*out));
	/* SX-A3: acquire, pairs with SX-R3 in coord_uncount(): every rejected
	 * turn counted before a release we see is seen below, so `completed`
	 * never counts one of them. Refusals are not releases (`refused`). */
	released = atomic_load_explicit(&co->released, memory_order_acquire);
	/* Relaxed: each counter is independent (see the header). */
#define LD(f) atomic_load_explicit(&co->st.f, memory_order_relaxed)
	out->turn_rejected = LD(turn_rejected);
	for (unsigned k = 0; k < ORBIT_WORK_KINDS; k++) {
		uint64_t un = LD(unaccepted[k]);

		/* Relaxed: a counter; its refusals, read after it, only lag. */
		out->accepted[k] = atomic_load_explicit(&co->submitted[k], memory_order_relaxed) -
				   un;
		out->rejected_full[k] = LD(rejected_full[k]);
		out->rejected_too_big[k] = LD(rejected_too_big[k]);
		out->rejected_closed[k] = LD(rejected_closed[k]);
	}
	/* A turn rejected after our load of `released` (its release not seen
	 * yet) is not subtracted below zero. */
	out->completed = released > out->turn_rejected ? released - out->turn_rejected : 0;
	out->turn_waited = LD(turn_waited);
	out->yielded = LD(yielded);
	out->protocol_errors = LD(protocol_errors);
#undef LD
	out->outstanding = orbit__coord_outstanding(co);
}

/* ---- completion ------------------------------------------------------------ */

int orbit_work_completion_create(orbit_work_completion_t **out)
{
	orbit_work_completion_t *c;
	int ret;

	if (!out)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->pid = orbit__self_pid();
	ret = orbit__mutex_init_adaptive(&c->mu);
	if (ret)
		goto err_free;
	ret = orbit__cond_init_monotonic(&c->cv);
	if (ret)
		goto err_mutex;
	*out = c;
	return 0;

err_mutex:
	pthread_mutex_destroy(&c->mu);
err_free:
	free(c);
	return ret;
}

static int completion_arm(orbit_work_completion_t *c, uint64_t owner, struct carm *prev)
{
	int ret = 0;

	if (orbit__fork_check(c->pid))
		return -ECHILD; /* a parent's completion: its mutex is not ours */
	orbit__mutex_lock(&c->mu);
	if (c->state == C_PENDING) {
		ret = -EBUSY;
	} else {
		*prev = (struct carm){ c->state, c->result, c->owner };
		c->state = C_PENDING;
		c->owner = owner;
	}
	orbit__mutex_unlock(&c->mu);
	return ret;
}

static void completion_set(orbit_work_completion_t *c, int state, int result, uint64_t owner)
{
	orbit__mutex_lock(&c->mu);
	c->state = state;
	c->result = result;
	c->owner = owner;
	orbit__die_on(pthread_cond_broadcast(&c->cv), "pthread_cond_broadcast");
	/* After this unlock the waiter may destroy or re-arm @c: not touched again. */
	orbit__mutex_unlock(&c->mu);
}

int orbit_work_completion_wait(orbit_work_completion_t *c, int timeout_ms)
{
	struct timespec dl;
	uint64_t owner;
	int ret;

	if (!c)
		return -EINVAL;
	if (orbit__fork_check(c->pid))
		return -ECHILD; /* its work runs in the parent, if at all */
	orbit__mutex_lock(&c->mu);
	owner = c->state == C_IDLE ? 0 : c->owner;
	orbit__mutex_unlock(&c->mu);
	if (!owner)
		return -EINVAL;
	/* 07 §10 Reentrancy: waiting on its own coordinator's work from a
	 * turn of it is refused here, whether or not the work is done. */
	if (on_turn_of_id(owner))
		return -EDEADLK;
	if (timeout_ms > 0)
		orbit__deadline_after_ns(&dl, CLOCK_MONOTONIC, (uint64_t)timeout_ms * 1000000ull);
	orbit__mutex_lock(&c->mu);
	ret = 0;
	while (c->state == C_PENDING) {
		ret = cond_wait_until(&c->cv, &c->mu, timeout_ms, &dl);
		if (ret && c->state == C_PENDING)
			break;
		ret = 0;
	}
	if (c->state == C_DONE)
		ret = c->result;
	else if (c->state == C_IDLE)
		ret = -EINVAL; /* its submission was refused meanwhile */
	orbit__mutex_unlock(&c->mu);
	return ret;
}

int orbit_work_completion_destroy(orbit_work_completion_t *c)
{
	int state;

	if (!c)
		return 0;
	if (orbit__fork_check(c->pid))
		return -ECHILD; /* the parent's: nothing freed */
	orbit__mutex_lock(&c->mu);
	state = c->state;
	orbit__mutex_unlock(&c->mu);
	if (state == C_PENDING)
		return -EBUSY;
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
	return 0;
}

/* ---- work records ------------------------------------------------------------ */

/*
 * A record plus the completion state its submission replaced. Cache-line
 * aligned: the pool link and the record's hot fields fill the first line
 * (the one a submitter fills and a drain reads and frees), the rest (the
 * SpotWide wait link, the completion's earlier state, touched only with
 * a completion) the second.
 */
struct work_alloc {
	/* pool stack link: index + 1 of the next free, 0 none */
	_Alignas(64) _Atomic uint32_t next;
	uint32_t idx;	      /* index in the coordinator's pool, or WORK_MALLOCED */
	struct orbit__work w; /* the record handed around (work_of()) */
	struct carm prev;
};

_Static_assert(sizeof(struct work_alloc) % 64 == 0, "whole cache lines");
_Static_assert(offsetof(struct work_alloc, w) + offsetof(struct orbit__work, wait_next) <= 64,
	       "the hot part of a record in one line");

static struct work_alloc *work_of(struct orbit__work *w)
{
	return (struct work_alloc *)((char *)w - offsetof(struct work_alloc, w));
}

#define WORK_MALLOCED UINT32_MAX

/*
 * The record pool (struct orbit__coord's pool_*). Records are made on a
 * submitter's thread and released on a drain's, so malloc's per-thread
 * caches never get them back: every submission paid an arena round trip
 * (callgrind: malloc, calloc and free were the largest cost after the
 * queue name of a PerActor submission). A Treiber stack of indexes with
 * a tag in the same word: a pop that read a stale `next` fails its CAS
 * because every push and pop changes the tag, so ABA cannot hand out a
 * record twice. Chunks live until orbit__coord_fini(), so reading a
 * stale record's `next` always reads pool memory.
 */
/* The first index of chunk @c: chunks 0..c-1 hold ORBIT__WORK_CHUNK * (2^c - 1). */
static uint32_t chunk_first(unsigned c)
{
	return ORBIT__WORK_CHUNK * ((1u << c) - 1);
}

/* The chunk that holds index @idx: the c with chunk_first(c) <= idx < chunk_first(c + 1). */
static unsigned chunk_of(uint32_t idx)
{
	return 31u - (unsigned)__builtin_clz(idx / ORBIT__WORK_CHUNK + 1);
}

static struct work_alloc *pool_at(struct orbit__coord *co, uint32_t idx)
{
	/* Relaxed: the index came from pool_top, whose SX-A2 acquire saw the
	 * push (SX-R2) that follows the chunk's store on the same thread. */
	unsigned c = chunk_of(idx);
	struct work_alloc *chunk = atomic_load_explicit(&co->pool_chunk[c], memory_order_relaxed);

	return &chunk[idx - chunk_first(c)];
}

/* Push the records @first..@last, already linked through `next`, in one CAS. */
static void pool_push_chain(struct orbit__coord *co, struct work_alloc *first,
			    struct work_alloc *last)
{
	/* Relaxed: the CAS below publishes (SX-R2). */
	uint64_t top = atomic_load_explicit(&co->pool_top, memory_order_relaxed), nt;

	do {
		/* Relaxed: published by the SX-R2 CAS; racing pops only read it. */
		atomic_store_explicit(&last->next, (uint32_t)top, memory_order_relaxed);
		nt = (((top >> 32) + 1) << 32) | (first->idx + 1);
		/* SX-R2: release, pairs with SX-A2 in pool_pop(): each record's
		 * last use (its release), its link and a new chunk's bytes
		 * before any of it can be popped */
	} while (!atomic_compare_exchange_weak_explicit(
	    &co->pool_top, &top, nt, memory_order_release, memory_order_relaxed));
}

static void pool_push(struct orbit__coord *co, struct work_alloc *a)
{
	pool_push_chain(co, a, a);
}

static struct work_alloc *pool_pop(struct orbit__coord *co)
{
	/* SX-A2: acquire, pairs with SX-R2 in pool_push_chain() */
	uint64_t top = atomic_load_explicit(&co->pool_top, memory_order_acquire), nt;
	struct work_alloc *a;

	do {
		if (!(uint32_t)top)
			return NULL;
		a = pool_at(co, (uint32_t)top - 1);
		/* Relaxed: may be stale if @a was popped meanwhile; the tag
		 * makes the CAS fail then. */
		nt = (((top >> 32) + 1) << 32) |
		     atomic_load_explicit(&a->next, memory_order_relaxed);
		/* SX-A2 (again): acquire on success and on failure */
	} while (!atomic_compare_exchange_weak_explicit(
	    &co->pool_top, &top, nt, memory_order_acquire, memory_order_acquire));
	return a;
}

/*
 * Take every free record in one piece: returns the index + 1 of the first
 * (0: none), linked through `next`. Bumping the tag makes a racing pop
 * that read the old top fail its CAS, as a pop does.
 */
static uint32_t pool_take_all(struct orbit__coord *co)
{
	/* Relaxed: the CAS below is what orders (SX-A2). */
	uint64_t top = atomic_load_explicit(&co->pool_top, memory_order_relaxed);

	do {
		if (!(uint32_t)top)
			return 0;
		/* SX-A2 (again): acquire, pairs with SX-R2 of every push in
		 * the chain (they are RMWs of one release sequence) */
	} while (
	    !atomic_compare_exchange_weak_explicit(&co->pool_top, &top, ((top >> 32) + 1) << 32,
						   memory_order_acquire, memory_order_relaxed));
	return (uint32_t)top;
}

/* The pool is empty: add a chunk as large as all before it and 64 more
 * records (keeping one), or fall back to malloc. */
static struct work_alloc *pool_grow(struct orbit__coord *co)
{
	/* Relaxed: a slot number only; the chunk is published by SX-R2. */
	uint32_t c = atomic_load_explicit(&co->pool_chunks, memory_order_relaxed), n;
	struct work_alloc *chunk;

	while (c < ORBIT__WORK_CHUNKS &&
	       !atomic_compare_exchange_weak_explicit(&co->pool_chunks, &c, c + 1,
						      memory_order_relaxed, memory_order_relaxed))
		;
	if (c >= ORBIT__WORK_CHUNKS) {
		chunk = aligned_alloc(_Alignof(struct work_alloc), sizeof(*chunk));
		if (chunk)
			chunk->idx = WORK_MALLOCED;
		return chunk;
	}
	n = ORBIT__WORK_CHUNK << c;
	chunk = aligned_alloc(_Alignof(struct work_alloc), n * sizeof(*chunk));
	if (!chunk)
		return NULL; /* the slot stays empty: its indexes are never pushed */
	memset(chunk, 0, n * sizeof(*chunk));
	for (uint32_t i = 0; i < n; i++)
		chunk[i].idx = chunk_first(c) + i;
	/* Relaxed: published to other threads by the SX-R2 push below. */
	atomic_store_explicit(&co->pool_chunk[c], chunk, memory_order_relaxed);
	/* Relaxed: the chunk is this thread's until pool_push_chain()'s SX-R2. */
	for (uint32_t i = 1; i + 1 < n; i++)
		atomic_store_explicit(&chunk[i].next, chunk[i + 1].idx + 1, memory_order_relaxed);
	pool_push_chain(co, &chunk[1], &chunk[n - 1]); /* one CAS, not one per record */
	return &chunk[0];
}

static void work_free(struct orbit__coord *co, struct work_alloc *a)
{
	if (a->idx == WORK_MALLOCED)
		free(a);
	else
		pool_push(co, a);
}

static void pool_fini(struct orbit__coord *co)
{
	for (uint32_t i = 0; i < ORBIT__WORK_CHUNKS; i++)
		/* Relaxed: quiescent; the lane close ordered every release before. */
		free(atomic_load_explicit(&co->pool_chunk[i], memory_order_relaxed));
}

static int work_init(struct orbit__coord *co, struct work_alloc *a, orbit_serial_work_fn fn,
		     void *arg, orbit_work_completion_t *done, unsigned yield_flags,
		     struct orbit__work **out)
{
	int ret;

	if (!a)
		a = pool_grow(co);
	if (!a)
		return -ENOMEM;
	/* The hot line only: wait_next is set before it is read
	 * (place_turn_fn()), prev by completion_arm(). */
	memset(&a->w, 0, offsetof(struct orbit__work, wait_next));
	if (done) {
		ret = completion_arm(done, co->id, &a->prev);
		if (ret) {
			work_free(co, a);
			return ret;
		}
	}
	a->w.fn = fn;
	a->w.arg = arg;
	a->w.co = co;
	a->w.done = done;
	a->w.yield_flags = (uint8_t)yield_flags;
	*out = &a->w;
	return 0;
}

/* Take a record from the stash whose head is *@top, refilling it from
 * the pool in one piece when empty; NULL when the pool is empty too. The
 * caller owns the stash. */
static struct work_alloc *stash_take(struct orbit__coord *co, uint32_t *top)
{
	struct work_alloc *a;

	if (!*top)
		*top = pool_take_all(co);
	if (!*top)
		return NULL;
	a = pool_at(co, *top - 1);
	/* Relaxed: taken with the chain (pool_take_all's SX-A2). */
	*top = atomic_load_explicit(&a->next, memory_order_relaxed);
	/* The next submission's record was last written by a drain on
	 * another CPU: fetch its line now, for writing, so that miss
	 * overlaps this submission instead of stalling the next. */
	if (*top)
		__builtin_prefetch(pool_at(co, *top - 1), 1);
	return a;
}

int orbit__work_new(struct orbit__coord *co, orbit_serial_work_fn fn, void *arg,
		    orbit_work_completion_t *done, unsigned yield_flags, struct orbit__work **out)
{
	struct work_alloc *a;

	/* SX-A4: acquire, pairs with SX-R4 below: the previous owner's
	 * ostash_top before we read it. Taken: another submitter is inside,
	 * so pop one record from the shared stack instead of waiting. */
	if (atomic_exchange_explicit(&co->ostash_busy, true, memory_order_acquire))
		return work_init(co, pool_pop(co), fn, arg, done, yield_flags, out);
	a = stash_take(co, &co->ostash_top);
	/* SX-R4: release, pairs with SX-A4: our ostash_top before the next owner */
	atomic_store_explicit(&co->ostash_busy, false, memory_order_release);
	return work_init(co, a, fn, arg, done, yield_flags, out);
}

unsigned orbit__work_new_n(struct orbit__coord *co, orbit_serial_work_fn fn, void *const *args,
			   unsigned n, unsigned yield_flags, struct orbit__work **out, int *err)
{
	unsigned k = 0;
	bool own;

	*err = 0;
	/* SX-A4 as in orbit__work_new(): the stash once for the batch; taken
	 * by another submitter, each record is popped from the shared stack. */
	own = !atomic_exchange_explicit(&co->ostash_busy, true, memory_order_acquire);
	for (; k < n; k++) {
		struct work_alloc *a = own ? stash_take(co, &co->ostash_top) : pool_pop(co);

		*err = work_init(co, a, fn, args[k], NULL, yield_flags, &out[k]);
		if (*err)
			break;
	}
	if (own) /* SX-R4 as in orbit__work_new() */
		atomic_store_explicit(&co->ostash_busy, false, memory_order_release);
	return k;
}

int orbit__work_new_on_lane(struct orbit__coord *co, orbit_serial_work_fn fn, void *arg,
			    orbit_work_completion_t *done, unsigned yield_flags,
			    struct orbit__work **out)
{
	ORBIT__ASSERT_ON_LANE(co->lane); /* the stash is lane-owned */
	return work_init(co, stash_take(co, &co->stash_top), fn, arg, done, yield_flags, out);
}

/* Free a record that was never accepted; its completion goes back as it was. */
static void work_discard(struct orbit__work *w)
{
	struct work_alloc *a = work_of(w);

	if (w->done)
		completion_set(w->done, a->prev.state, a->prev.result, a->prev.owner);
	work_free(w->co, a);
}

int orbit__work_refuse(struct orbit__work *w, unsigned kind, int err)
{
	orbit__coord_count_refusal(w->co, kind, err);
	work_discard(w);
	return err;
}

/* Uncount one piece of work by one on @ctr (released, or refused for a
 * record its queue refused); wake quiescence waiters at zero. */
static void coord_uncount(struct orbit__coord *co, _Atomic uint64_t *ctr)
{
	/* SX-D2: seq_cst increment of released (refused), then a seq_cst load
	 * of waiters; pairs with SX-D1 in orbit__coord_await(): either we see
	 * the waiter and check the count under its mutex, or its loads see
	 * our release. */
	/* SX-R3: release (the same seq_cst increment), pairs with SX-A3 in
	 * orbit__coord_stats(): the record's turn_rejected count, made
	 * before, is seen with it. */
	atomic_fetch_add_explicit(ctr, 1, memory_order_seq_cst);
	if (co->on_release)
		co->on_release(co);
	if (atomic_load_explicit(&co->waiters, memory_order_seq_cst) &&
	    orbit__coord_outstanding(co) == 0) {
		orbit__mutex_lock(&co->mu);
		orbit__die_on(pthread_cond_broadcast(&co->cv), "pthread_cond_broadcast");
		orbit__mutex_unlock(&co->mu);
	}
}

static int enqueue(struct orbit__work *w, const struct orbit__enq *e)
{
	switch (e->how) {
	case ORBIT__ENQ_PAYLOAD:
		return orbit_serial_queue_enqueue_with_payload_bytes(e->q, e->fn, w,
								     e->payload_bytes);
	case ORBIT__ENQ_LIFECYCLE:
		return orbit_serial_queue_enqueue_lifecycle(e->q, e->fn, w);
	default:
		return orbit_serial_queue_enqueue(e->q, e->fn, w);
	}
}

void orbit__work_count(struct orbit__work *w, unsigned kind)
{
	/* Counted before the enqueue: the work may finish before it returns.
	 * seq_cst like SX-D2 (a waiter must not miss it). The only counter of
	 * an accepted submission: accepted[kind] is derived from it. */
	atomic_fetch_add_explicit(&w->co->submitted[kind], 1, memory_order_seq_cst);
}

int orbit__work_submit(struct orbit__work *w, unsigned kind, const struct orbit__enq *e)
{
	if (orbit__coord_closing(w->co))
		return orbit__work_refuse(w, kind, -EPIPE);
	orbit__work_count(w, kind);
	return orbit__work_enqueue_counted(w, kind, e);
}

int orbit__work_enqueue_counted(struct orbit__work *w, unsigned kind, const struct orbit__enq *e)
{
	struct orbit__coord *co = w->co;
	int ret;

	ret = enqueue(w, e);
	if (ret == 0)
		return 0;
	STAT_INC(co, unaccepted[kind]);
	orbit__coord_count_refusal(co, kind, ret);
	work_discard(w);
	coord_uncount(co, &co->refused); /* not a release: see orbit__coord_stats */
	return ret;
}

void orbit__work_discard_new(struct orbit__work *w)
{
	work_discard(w);
}

int orbit__work_submit_n(struct orbit__work *const *ws, unsigned n, unsigned kind,
			 orbit_serial_queue_t *q, bool lifecycle, int *err)
{
	void *args[ORBIT__WORK_BATCH_MAX];
	struct orbit__coord *co;
	int k;

	*err = 0;
	if (!n)
		return 0;
	co = ws[0]->co;
	for (unsigned i = 0; i < n; i++)
		args[i] = ws[i];
	/* Counted before the enqueue, as orbit__work_count(): seq_cst like
	 * SX-D2, one add for the batch (the work may finish before it returns). */
	atomic_fetch_add_explicit(&co->submitted[kind], n, memory_order_seq_cst);
	k = orbit__serial_queue_enqueue_n(q, lifecycle, orbit__work_run, args, 0, n, err);
	if (k < 0) { /* never with these arguments: refused as a whole */
		*err = k;
		k = 0;
	}
	/* As orbit__work_enqueue_counted() on a refusal: the first record not
	 * accepted is the refused one (counted as that refusal), the others
	 * were never tried (uncounted only, as if never submitted). */
	for (unsigned i = (unsigned)k; i < n; i++) {
		STAT_INC(co, unaccepted[kind]);
		if (i == (unsigned)k)
			orbit__coord_count_refusal(co, kind, *err);
		work_discard(ws[i]);
		coord_uncount(co, &co->refused); /* not a release: see orbit__coord_stats */
	}
	return k;
}

void orbit__work_signal(struct orbit__work *w, int result)
{
	if (w->done)
		completion_set(w->done, C_DONE, result, w->co->id);
}

void orbit__work_release(struct orbit__work *w)
{
	struct orbit__coord *co = w->co;

	/* Back to the pool before the uncount: destroy frees the pool once
	 * the count reached zero. */
	work_free(co, work_of(w));
	coord_uncount(co, &co->released);
}

static int snapshot_fn(void *arg)
{
	struct orbit__work *w = arg;
	struct orbit__actor_info *a = w->info;

	ORBIT__ASSERT_ON_LANE(w->co->lane);
	/* On the owner's lane turn: all fields read together (07 §7), into
	 * the Actor's `last`, which this handling owns (orbit__actor_info). */
	a->last.actor_id = a->actor_id;
	a->last.version = a->version;
	a->last.info_len = a->len;
	memcpy(a->last.info, a->bytes, a->len);
	return 0;
}

/*
 * The snapshot of a handling's start (07 §7), left in the Actor's `last`
 * (orbit_work_actor_snapshot() copies it out). All fields are read in
 * one lane turn; when no set_info completed since the previous handling
 * of this Actor took its turn (SX-A1 reads the version that turn saw),
 * `last` is still the registration as it is now, so it is carried
 * instead and the drain does not meet the submitters on the lane for
 * every record. A set_info that completed before this handling started is
 * always seen: its SX-R1 store happens before our SX-A1 load. One still
 * running is ordered after this start, as when its turn comes after the
 * snapshot turn. A turn refused (this thread already holds the lane: an
 * executor ran the work inside a coordinator's lane turn; or the lane is
 * closed) leaves no snapshot: the handler is told, not handed a stale one.
 */
static void snapshot_take(struct orbit__work *w)
{
	struct orbit__actor_info *a = w->info;
	/* SX-A1: acquire, pairs with SX-R1 in orbit__actor_info_set() */
	uint64_t v = atomic_load_explicit(&a->version_pub, memory_order_acquire);

	w->snap_err = v == a->last.version ? 0 : orbit_state_lane_run(w->co->lane, snapshot_fn, w);
}

/*
 * The handler finished (its last continuation returned DONE). Returns the
 * next record to run on @turn, or NULL. Under SpotWide the record held
 * its Actor's claim, which passes on to the Actor's next record if one is
 * queued (pass_claim: one taken with this record, or a batch taken from
 * the Actor queue in one lock section), or ends there when none is: that
 * record's Spot turn is placed from here, at the back of the Spot queue,
 * instead of by a new Actor-queue drain (a pool hand-off per record
 * saved). When nothing else waits for the Spot
 * gate (orbit__serial_turn_may_continue(): no other work in the Spot
 * queue, no turn waiting for room, the slice budget not spent) and fewer
 * than ORBIT__WORK_CHAIN_MAX records ran on @turn, the record runs on
 * this turn instead: the same order as placing it at the back of an
 * empty queue, without the round trip. Else the Actor queue gets the
 * claim back.
 */
static struct orbit__work *work_finish(struct orbit__work *w, orbit_serial_turn_t *turn,
				       unsigned chained)
{
	orbit_serial_resume_t *claim = w->claim;
	struct orbit__work *next = NULL;
	bool here;

	/* Counted as completed by its release (see orbit__coord_stats). */
	orbit__work_signal(w, 0);
	if (!claim) {
		orbit__work_release(w);
		return NULL;
	}
	if (w->co->pass_claim) {
		here = chained + 1 < ORBIT__WORK_CHAIN_MAX && orbit__serial_turn_may_continue(turn);
		if (w->co->pass_claim(w, here, &next)) {
			/* Its reservation went back with the pass; the record ends here. */
			orbit__work_release(w);
			return next;
		}
	}
	/* SpotWide: give the Actor queue its claim back; its continuation
	 * releases @w there. On an executor error it stays queued and runs
	 * with the Actor queue's next drain (see orbit_serial_queue_resume). */
	orbit_serial_queue_resume(claim);
	return NULL;
}

int orbit__work_run(orbit_serial_turn_t *turn, void *arg)
{
	struct orbit__work *w = arg;
	int r;

	for (unsigned chained = 0;; chained++) {
		struct frame f = { .w = w, .turn = turn, .prev = tls_frame };

		if (w->info && !w->snapped) {
			/* §7: at the start of the handling, never again during it
			 * (continuations carry the same snapshot). */
			w->snapped = true;
			snapshot_take(w);
		}
		w->yielded = false;
		tls_frame = &f;
		r = w->fn(turn, w->arg);
		tls_frame = f.prev;
		if (w->yielded) {
			if (r != ORBIT_SERIAL_SUSPENDED)
				STAT_INC(w->co,
					 protocol_errors); /* the queue resolves it as suspended */
			return ORBIT_SERIAL_SUSPENDED;
		}
		if (r == ORBIT_SERIAL_SUSPENDED)
			/* orbit_serial_turn_suspend() called directly (its continuation
			 * bypasses us) or SUSPENDED without a suspend: the handler's
			 * end is unknowable, so the work counts as finished now. */
			STAT_INC(w->co, protocol_errors);
		w = work_finish(w, turn, chained);
		if (!w)
			return r;
	}
}

int orbit__work_yield(orbit_serial_turn_t *turn, orbit_serial_work_fn cont, void *arg,
		      unsigned flags, orbit_serial_resume_t **out)
{
	struct frame *f = tls_frame;
	struct orbit__work *w;
	int ret;

	if (!turn || !cont || !out || !f || f->turn != turn)
		return -EINVAL;
	w = f->w;
	if (w->yielded)
		return -EALREADY;
	/* The continuation is orbit__work_run() again, so the frame, the
	 * snapshot and the completion carry over. It runs only after this
	 * turn has returned, so setting fn/arg after the suspend is safe. */
	ret = orbit_serial_turn_suspend(turn, orbit__work_run, w, flags, out);
	if (ret)
		return ret;
	w->fn = cont;
	w->arg = arg;
	w->yielded = true;
	/* A SpotWide Actor record that holds its claim with records that
	 * ended before it (taken in one batch, their reservations carried
	 * so far): they go back now, so that while it waits the Actor queue
	 * counts only it and the records after it (07 §5). */
	if (w->claim)
		orbit__serial_queue_held_return(w->claim);
	return 0;
}

int orbit_work_yield(orbit_serial_turn_t *turn, orbit_serial_work_fn cont, void *arg,
		     orbit_serial_resume_t **out)
{
	struct frame *f = tls_frame;
	int ret;

	if (!f || f->turn != turn)
		return -EINVAL;
	ret = orbit__work_yield(turn, cont, arg, f->w->yield_flags, out);
	if (ret == 0)
		STAT_INC(f->w->co, yielded);
	return ret;
}

int orbit_work_actor_snapshot(const orbit_serial_turn_t *turn,
			      struct orbit_actor_state_snapshot *out)
{
	const struct frame *f = tls_frame;

	if (!turn || !out || !f || f->turn != turn)
		return -EINVAL;
	if (!f->w->info)
		return -ENOENT;
	if (f->w->snap_err)
		return f->w->snap_err;
	/* The handling's own snapshot: `last` is written only at a
	 * handling's start (see orbit__actor_info). */
	*out = f->w->info->last;
	out->actor_id = f->w->info->actor_id;
	return 0;
}

int orbit__actor_info_set(struct orbit__actor_info *a, const void *info, size_t len)
{
	if (len > ORBIT_ACTOR_INFO_MAX)
		return -E2BIG;
	if (len && !info)
		return -EINVAL;
	if (len)
		memcpy(a->bytes, info, len);
	a->len = (uint32_t)len;
	a->version++;
	/* SX-R1: release, pairs with SX-A1 in snapshot_take(): the new
	 * information before its version is seen */
	atomic_store_explicit(&a->version_pub, a->version, memory_order_release);
	return 0;
}
