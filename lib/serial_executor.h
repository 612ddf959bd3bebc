/* SPDX-License-Identifier: MIT */
/*
 * lib/serial_executor.h: internal. What the three coordinators of spec 07
 * §2 (lib/spot_executor.c, lib/actor_executor.c, lib/session_executor.c)
 * share: the coordinator base (its state lane, its count of outstanding
 * work with the quiescence wait, its stats) and the work record that
 * wraps every submitted work function (the turn frame that makes yield,
 * the §7 snapshot and the §10 reentrancy refusal possible, and the
 * completion signal). No queue pointer leaves a coordinator through here.
 */
#ifndef ORBIT_LIB_SERIAL_EXECUTOR_H
#define ORBIT_LIB_SERIAL_EXECUTOR_H

#include <pthread.h>
#include <stdatomic.h>

#include <orbit/spot_executor.h>
#include <orbit/state_lane.h>

#include "base/fork_guard.h"

/*
 * Registration information of one Actor (07 §7). actor_id is fixed before
 * the first record; version, len and bytes are owned by the coordinator's
 * state lane. version_pub mirrors version (C3, 06 §4): written in the
 * lane turn that changed the information, after it (SX-R1), read by a
 * handling's start (SX-A1). `last` is the snapshot the latest handling
 * of this Actor took in its lane turn: owned by the Actor's handlings,
 * which run one at a time (its queue, or its held claim under SpotWide)
 * and are ordered by that queue's lock. A handling whose SX-A1 read
 * equals last.version carries `last` instead of taking a new lane turn:
 * no set_info completed since that turn (see snapshot_take()). It is
 * the snapshot of the handling that runs: only a handling's start writes
 * it, so it stays as it was at that start until the handling ends.
 */
struct orbit__actor_info {
	uint64_t actor_id;
	uint64_t version;
	uint32_t len;
	unsigned char bytes[ORBIT_ACTOR_INFO_MAX];
	_Atomic uint64_t version_pub;
	struct orbit_actor_state_snapshot last; /* version 0, len 0 until a turn took one */
};

/*
 * Counters off the hot path. A submission's only counter is its kind's
 * `submitted` word and a release's only one is `released` (struct
 * orbit__coord): accepted[k] is submitted[k] - unaccepted[k] (work counted
 * and then refused by its queue, which uncounts it with `refused`, not
 * `released`), completed is released - turn_rejected (every record that
 * entered a queue is released once: finished, or its SpotWide turn
 * rejected). turn_rejected is written before the release (SX-R3).
 * Refusals stay out of `released`: a stats reader that read `released`
 * and then, after a pause, a refusal count that grew meanwhile would
 * subtract refusals whose release it never saw (completed below zero,
 * read as about 2^64; a closed coordinator refuses at every submission).
 */
struct orbit__coord_stats {
	_Atomic uint64_t unaccepted[ORBIT_WORK_KINDS], rejected_full[ORBIT_WORK_KINDS],
	    rejected_too_big[ORBIT_WORK_KINDS], rejected_closed[ORBIT_WORK_KINDS];
	_Alignas(64) _Atomic uint64_t turn_rejected;
	_Atomic uint64_t turn_waited, yielded, protocol_errors;
};

struct orbit__coord;
struct orbit__work;

/* Work records pooled per coordinator: chunk c holds ORBIT__WORK_CHUNK << c
 * records (each chunk doubles the pool), at most ORBIT__WORK_CHUNKS chunks
 * (262,080 records: 256 Actor queues full at the default 1,024 items, so
 * a SpotWide Spot of a thousand busy Actors still takes its records from
 * the pool); past it records come from malloc. */
#define ORBIT__WORK_CHUNK 64u
#define ORBIT__WORK_CHUNKS 12u
/* SpotWide: records of one Actor run in one hold of the Spot gate, at most. */
#define ORBIT__WORK_CHAIN_MAX 64u
/* SpotWide: records of one Actor taken from its queue in one lock section
 * when its claim passes on (orbit__serial_queue_pass_held()), at most. */
#define ORBIT__WORK_PASS_MAX 64u

/*
 * Called by orbit__work_release() after every release, on the thread (and
 * turn) that finished the work. It reads orbit__coord_outstanding() itself
 * when it needs the count: that sum reads every submitted[] word, whose
 * line the submitters write, so the release path does not pay for it
 * unless the hook has a use for it.
 */
typedef void (*orbit__coord_release_fn)(struct orbit__coord *co);

/* The part every coordinator has. */
struct orbit__coord {
	uint64_t id; /* unique in the process: completions name their coordinator by it */
	orbit_state_lane_t *lane; /* owns the coordinator's C2 state (06 §4) */
	/*
	 * The coordinator's close has begun: a hint for the submissions that
	 * take no lane turn (C3, 06 §4), set with orbit__coord_close_hint()
	 * in the lane turn that closes, before it closes the queues, and read
	 * by orbit__work_submit(), which refuses such a record before it is
	 * counted (a stats read never sees it accepted, and a submission
	 * after close does not pay the count and the queue's lock). One that
	 * misses it is refused by the closed queue (-EPIPE). Relaxed both
	 * ways: the queues' locks decide. Read-mostly, beside `lane`.
	 */
	_Atomic bool closing;
	/*
	 * The creator (orbit__self_pid(), base/fork_guard.h), set by
	 * orbit__coord_init(): in a forked child every public entry of the
	 * coordinator but stats and mode refuses with -ECHILD
	 * (orbit__coord_fork_check()) before it takes a record, a count, the
	 * lane or a queue lock, which a parent's thread may have held at the
	 * fork. Read-mostly, beside `lane`.
	 */
	pid_t pid;
	/*
	 * Work accepted and not yet released is the sum of submitted[] -
	 * released - refused (orbit__coord_outstanding()). submitted[kind] is
	 * incremented by the submitter before the enqueue (the submission's
	 * only counter: accepted[] is derived from it, see orbit__coord_stats),
	 * `released` when the work's last piece ended: on their own cache
	 * lines (the eight kinds fill one), so that a submitter and a drain
	 * do not pull one line back and forth for every record. All only
	 * grow and a record is released (or refused) after it was submitted,
	 * so released + refused <= the sum in the seq_cst order. `refused`
	 * counts records counted and then refused by their queue (on the
	 * submitter's thread). Both pair with `waiters` in
	 * a Dekker handshake (seq_cst, see coord_uncount() and
	 * orbit__coord_await()); waiters sits on the releasers' line, which
	 * they read at every release.
	 */
	_Alignas(64) _Atomic uint64_t submitted[ORBIT_WORK_KINDS];
	_Alignas(64) _Atomic uint64_t released;
	_Atomic uint64_t refused;
	_Atomic unsigned waiters;	    /* threads in orbit__coord_await(); see SX-D1/SX-D2 */
	pthread_mutex_t mu;		    /* protects nothing but the cv handshake */
	pthread_cond_t cv;		    /* outstanding reached 0 */
	orbit__coord_release_fn on_release; /* NULL: none */
	/*
	 * SpotWide Spot coordinator: @w (an Actor record) finished on its
	 * Spot turn. Pass its Actor claim on to that Actor's next record:
	 * with @run_here and no turn waiting for the Spot queue, return it in
	 * *@next to run on the same Spot turn; else place its Spot turn (or
	 * make it wait for room) as its Actor queue turn would have. Returns
	 * 1 (passed: @w ends without its claim) or 0 (the claim is untouched:
	 * resume it). NULL: never passed.
	 */
	int (*pass_claim)(struct orbit__work *w, bool run_here, struct orbit__work **next);
	struct orbit__coord_stats st;
	/*
	 * The pool of work records (serial_executor.c): a lock-free stack of
	 * free records, pool_top = tag << 32 | (index + 1), 0 in the low half
	 * when empty; chunk c of ORBIT__WORK_CHUNK << c records, made on demand
	 * up to ORBIT__WORK_CHUNKS and freed by orbit__coord_fini(). Own cache
	 * line: submitters and drains both write pool_top (a releasing drain
	 * at every record).
	 */
	_Alignas(64) _Atomic uint64_t pool_top;
	/*
	 * The chunks, on a line of their own: read at every record taken
	 * (pool_at()) and written only when the pool grows. Beside pool_top
	 * they made every take miss on the line the drain's release had
	 * just written, and every release miss on it after the take read it
	 * (perf, bench_spot_executor execute_spot: 68% of stash_take and
	 * half of orbit__work_release).
	 */
	_Alignas(64) _Atomic(void *) pool_chunk[ORBIT__WORK_CHUNKS];
	_Atomic uint32_t pool_chunks; /* chunk slots claimed */
	/*
	 * Free records taken from pool_top in one piece by a submitter in a
	 * turn of `lane` (orbit__work_new_on_lane()): index + 1 of the first,
	 * linked like the stack, 0 when empty. Owned by the lane (06 §4 C2),
	 * so a submission that already holds the lane takes a record with no
	 * atomic operation and leaves pool_top to the releasing drains,
	 * instead of pulling its line from them at every record.
	 */
	_Alignas(64) uint32_t stash_top;
	/*
	 * The same for submitters that take no lane turn
	 * (orbit__work_new(): the Actor coordinator, PerActor Spot and
	 * lifecycle work): a stash of free records owned by whoever set
	 * ostash_busy (SX-A4/SX-R4), linked like the stack. A submitter
	 * that finds it taken pops from pool_top as before. One producer
	 * then pays one exchange on this line, which only submitters
	 * write, instead of a CAS on pool_top, whose line the releasing
	 * drain writes at every record.
	 */
	_Atomic bool ostash_busy;
	uint32_t ostash_top;
};

/*
 * One submitted piece of work, from acceptance to its last continuation.
 * The fields every record touches come first and, with the pool link
 * before them (serial_executor.c's struct work_alloc), fill one cache
 * line: a record crosses from its submitter to its drain and back (the
 * drain frees it) as one line. wait_next is used only by a SpotWide turn
 * that waits for room.
 */
struct orbit__work {
	orbit_serial_work_fn fn; /* what runs next: the handler, then continuations */
	void *arg;
	struct orbit__coord *co;
	orbit_work_completion_t *done; /* NULL: nobody waits */
	/* SpotWide Actor work: the Actor queue item's held claim, resumed
	 * (instead of releasing the work) when the handler finishes. */
	orbit_serial_resume_t *claim;
	/* Actor work: the registration whose snapshot the handling reads
	 * (its `last`, see orbit__actor_info and snapshot_take()). */
	struct orbit__actor_info *info;
	int snap_err;	     /* the snapshot turn's error (-EDEADLK, -EPIPE), or 0 */
	uint8_t yield_flags; /* ORBIT_SERIAL_SUSPEND_HOLD or _RELEASE */
	bool yielded;	     /* orbit_work_yield() in the current turn */
	bool snapped;	     /* the handling's snapshot is taken */
	/* SpotWide Actor work whose Spot turn waits for room: the next in
	 * the Spot coordinator's FIFO (owned by its state lane). */
	struct orbit__work *wait_next;
	/* SpotWide Actor work taken from its Actor queue together with this
	 * one when the claim passed (all holding `claim`): the Actor's next
	 * record, which runs after this one ends; NULL after the last. Owned
	 * by whoever runs this record (the claim makes them one at a time). */
	struct orbit__work *chain_next;
	/* SpotWide Actor work taken that way: its own reservation in the
	 * Actor queue (bytes, as orbit__serial_queue_pass_held() reported
	 * it), marked ended when it ends before the last of the batch
	 * (orbit__serial_queue_held_end_one(), §5) and returned with the
	 * claim's next return. Same owner. */
	uint64_t held_bytes;
};

/*
 * Work of @co accepted and not yet released: released and refused are
 * read first, then each submitted word (seq_cst, SX-D1); every word only
 * grows, so the sum is at least what was submitted when they were read,
 * and 0 means there was a moment at which nothing was outstanding; a
 * submission racing the reads only makes it larger.
 */
static inline uint64_t orbit__coord_outstanding(const struct orbit__coord *cco)
{
	struct orbit__coord *co = (struct orbit__coord *)cco;
	uint64_t n = 0, r = atomic_load_explicit(&co->released, memory_order_seq_cst);

	r += atomic_load_explicit(&co->refused, memory_order_seq_cst);

	for (unsigned k = 0; k < ORBIT_WORK_KINDS; k++)
		n += atomic_load_explicit(&co->submitted[k], memory_order_seq_cst);
	return n - r;
}

/*
 * Zeroed memory of @size bytes for a coordinator object that begins with
 * (or holds) a struct orbit__coord, aligned as that struct asks: its
 * _Alignas(64) members keep the submitters' and the drains' words on
 * lines of their own only if the object itself starts on a line (malloc
 * gives 16 bytes). Freed with free(). NULL when out of memory.
 */
void *orbit__coord_alloc(size_t size);
int orbit__coord_init(struct orbit__coord *co, const char *lane_name);
void orbit__coord_fini(struct orbit__coord *co);
/* 0, or -EDEADLK on a turn of @co's work, -ETIMEDOUT, -EINVAL. */
int orbit__coord_await(struct orbit__coord *co, int timeout_ms);
/* True when the calling thread runs work of @co (any queue, any depth). */
bool orbit__coord_is_current(const struct orbit__coord *co);
/*
 * The common start of a coordinator's destroy: refuse from its own work
 * (-EDEADLK), close it with @close(@obj), refuse while work is
 * outstanding (-EBUSY). 0: nothing runs or will run any more.
 */
int orbit__coord_destroy_begin(struct orbit__coord *co, int (*close)(void *obj), void *obj);
/* Destroy a queue whose work all finished (waits for its last bookkeeping). */
void orbit__queue_free(orbit_serial_queue_t *q);
void orbit__coord_stats(const struct orbit__coord *co, struct orbit_serial_executor_stats *out);

/*
 * A work record for @fn/@arg of kind @kind, with @done armed (-EBUSY if
 * it is armed already). Not yet counted as outstanding. 0 or -errno.
 */
int orbit__work_new(struct orbit__coord *co, orbit_serial_work_fn fn, void *arg,
		    orbit_work_completion_t *done, unsigned yield_flags, struct orbit__work **out);
/*
 * orbit__work_new() for @n records of @fn with @args[0..n-1], without a
 * completion, into @out: the submitters' stash is taken once for all of
 * them. Returns how many were made (the first ones); below @n, *@err is
 * the next one's error (-ENOMEM), else 0.
 */
unsigned orbit__work_new_n(struct orbit__coord *co, orbit_serial_work_fn fn, void *const *args,
			   unsigned n, unsigned yield_flags, struct orbit__work **out, int *err);
/* The same, from @co's lane-owned stash (refilled from the pool in one
 * piece when empty). Context: on a turn of co->lane. */
int orbit__work_new_on_lane(struct orbit__coord *co, orbit_serial_work_fn fn, void *arg,
			    orbit_work_completion_t *done, unsigned yield_flags,
			    struct orbit__work **out);
/* Where and how a coordinator enqueues a work record. */
struct orbit__enq {
	orbit_serial_queue_t *q;
	orbit_serial_work_fn fn; /* orbit__work_run, or a first stage (SpotWide Actor) */
	enum { ORBIT__ENQ_FIXED, ORBIT__ENQ_PAYLOAD, ORBIT__ENQ_LIFECYCLE } how;
	uint64_t payload_bytes; /* ORBIT__ENQ_PAYLOAD */
};

/*
 * Enqueue @w as @e says, counting it outstanding first. On success counts
 * it accepted under @kind; on failure counts the refusal, gives the
 * completion back its earlier state and frees @w. A coordinator whose
 * close has begun (orbit__coord_close_hint()) refuses @w with -EPIPE
 * before it is counted. Returns the queue's code.
 */
int orbit__work_submit(struct orbit__work *w, unsigned kind, const struct orbit__enq *e);

/* Mark @co's close as begun (see `closing`). Context: the close's lane turn. */
static inline void orbit__coord_close_hint(struct orbit__coord *co)
{
	/* Relaxed: a hint, see the field. */
	atomic_store_explicit(&co->closing, true, memory_order_relaxed);
}

/*
 * orbit__coord_fork_check - 0 in the process that created @co, -ECHILD in
 * a forked child (see `pid`). Context: any thread; one relaxed load and a
 * compare, inline.
 */
static inline int orbit__coord_fork_check(const struct orbit__coord *co)
{
	return orbit__fork_check(co->pid);
}

/* Has @co's close begun (see `closing`)? Context: any thread. */
static inline bool orbit__coord_closing(const struct orbit__coord *cco)
{
	struct orbit__coord *co = (struct orbit__coord *)cco;

	/* Relaxed: a hint, see the field. */
	return atomic_load_explicit(&co->closing, memory_order_relaxed);
}
/*
 * orbit__work_submit() in two steps: count @w outstanding (so a close
 * and destroy that follow see it, -EBUSY), then enqueue it as
 * orbit__work_submit() does. A coordinator counts in the lane turn that
 * found the queue and enqueues after it (07 §4: lane.Run finds the queue,
 * the enqueue follows), which keeps the queue's lock out of its turns.
 */
void orbit__work_count(struct orbit__work *w, unsigned kind);
int orbit__work_enqueue_counted(struct orbit__work *w, unsigned kind, const struct orbit__enq *e);
/* Refuse @w before it was ever counted (closed, bad name): free it. */
int orbit__work_refuse(struct orbit__work *w, unsigned kind, int err);

/* Records orbit__work_submit_n() takes at once, at most. */
#define ORBIT__WORK_BATCH_MAX 256u
/*
 * orbit__work_submit_n - orbit__work_submit() for @n (1..ORBIT__WORK_BATCH_MAX)
 * records @ws of one coordinator and @kind, made with orbit__work_new()
 * and not yet counted, onto @q (its application lane, or its lifecycle
 * lane with @lifecycle, each enqueued for orbit__work_run without payload
 * bytes) with one count and one orbit__serial_queue_enqueue_n(): one
 * queue lock and at most one drain started for all of them. The records
 * accepted are the first ones, in order (the return value); of the others
 * the first is refused as orbit__work_submit() refuses a record (its code
 * in *@err and in the coordinator's refusal counts) and the rest are
 * given back untried (freed, uncounted, counted in no refusal): the
 * caller submits them again later, in the same order.
 * Context: as orbit__work_submit(). Returns: the number accepted, 0..@n.
 */
int orbit__work_submit_n(struct orbit__work *const *ws, unsigned n, unsigned kind,
			 orbit_serial_queue_t *q, bool lifecycle, int *err);
/* Free @w, made by orbit__work_new() and never counted (a batch cut short
 * before its submission). */
void orbit__work_discard_new(struct orbit__work *w);

/* The orbit_serial_work_fn every coordinator enqueues, with the record. */
int orbit__work_run(orbit_serial_turn_t *turn, void *arg);
/* Signal @w's completion with @result (for work that never ran). */
void orbit__work_signal(struct orbit__work *w, int result);
/* The work's last piece ended: uncount it, wake waiters, free it. */
void orbit__work_release(struct orbit__work *w);
/*
 * Yield from the current coordinator turn with explicit @flags; not
 * counted in stats.yielded. Returns as orbit_work_yield().
 */
int orbit__work_yield(orbit_serial_turn_t *turn, orbit_serial_work_fn cont, void *arg,
		      unsigned flags, orbit_serial_resume_t **out);

/* Count @err (-EAGAIN, -E2BIG, -EPIPE) as a refusal of @kind. */
void orbit__coord_count_refusal(struct orbit__coord *co, unsigned kind, int err);

/* Add one to a coordinator counter; relaxed: counters are independent. */
#define ORBIT__COORD_INC(co, f) atomic_fetch_add_explicit(&(co)->st.f, 1, memory_order_relaxed)

/* Copy @info into @a (lane turn of its owner). 0, -EINVAL, -E2BIG. */
int orbit__actor_info_set(struct orbit__actor_info *a, const void *info, size_t len);

#endif /* ORBIT_LIB_SERIAL_EXECUTOR_H */
