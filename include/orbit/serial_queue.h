/* SPDX-License-Identifier: MIT */
/*
 * orbit/serial_queue.h: the serial execution queue and its policy (the
 * execution lane policy: capacities, fixed cost, burst limit, time budget).
 * A queue runs the work submitted to it one item at a time, in order, on
 * threads of an executor (normally the worker pool): no thread per queue.
 * It rejects work past its count and byte ceilings, lets lifecycle work
 * overtake application work up to a burst limit, cuts its owner's turn at
 * a time budget, and lets an item hand its turn back while it waits for an
 * external completion; the continuation re-enters through the queue.
 *
 * Lanes and the order a drain takes work in:
 *   1. a held item's continuation (ORBIT_SERIAL_SUSPEND_HOLD, see below);
 *   2. barrier-next items, FIFO among themselves (enqueue_barrier_next);
 *   3. resumed continuations, FIFO in resume order;
 *   4. lifecycle items (enqueue_lifecycle), FIFO, but after
 *      lifecycle_burst_limit of them in a row while application work
 *      waits, one application item runs;
 *   5. application items (enqueue, enqueue_with_payload_bytes), FIFO.
 *
 * Reservations: an application item reserves payload bytes plus
 * fixed_work_byte_cost (enqueue: the fixed cost only) and one item of the
 * application count; a barrier-next item is application work and reserves
 * the same as enqueue; a lifecycle item reserves the fixed cost and one
 * lifecycle item. The reservation is held while the item waits, while it
 * runs, and while it is suspended, and is returned when its last
 * continuation returns ORBIT_SERIAL_DONE: after the handler finishes, not
 * when it starts. A resumed continuation needs no new reservation and is
 * never refused for capacity, nor by close().
 *
 * Synchronization:
 *   enqueue*, resume        any thread, also from inside a turn of this or
 *                           another queue; take the queue mutex briefly;
 *                           the drain is scheduled after it is released
 *   is_current, stats       any thread; no lock
 *   await_quiescence        any thread but a turn of this queue; blocks
 *   close                   any thread; takes the queue mutex
 *   destroy                 any thread but a turn of this queue
 * Everything a submitter wrote before an enqueue is visible to the item
 * when it runs, and everything an item wrote is visible to the next item
 * and to await_quiescence's caller (the queue mutex orders them).
 *
 * Fork: a queue belongs to the process that created it. In a forked
 * child its drain would run on the parent's workers, which the child does
 * not have, and its mutex may be held by a parent's thread that does not
 * exist there: every enqueue, orbit_serial_turn_suspend(),
 * orbit_serial_queue_resume(), await_quiescence, close and destroy on an
 * inherited queue returns -ECHILD before it takes the mutex (destroy
 * frees nothing; a resume handle is not consumed), and create refuses an
 * inherited worker pool's executor with -ECHILD. is_current, stats and
 * name stay allowed: they read the copy and take no lock. The check is
 * one relaxed load and a compare (orbit/worker_pool.h, "Fork"). A child
 * forked from inside a turn (an item's fn) must exec or _exit before the
 * item returns: its one thread is a copy of the worker that runs the
 * drain, so returning goes on draining the queue's copy and then the
 * worker's loop (the parent's queued work runs in the child, which then
 * waits on the worker's futex for ever). Nothing checks this on the
 * drain path.
 */
#ifndef ORBIT_SERIAL_QUEUE_H
#define ORBIT_SERIAL_QUEUE_H

#include <orbit/common.h>
#include <orbit/executor.h>

ORBIT_BEGIN_DECLS

typedef struct orbit_serial_queue orbit_serial_queue_t;
/* The turn an item runs on; valid only during that call of the item. */
typedef struct orbit_serial_turn orbit_serial_turn_t;
/* A suspended item's ticket back into its queue; used exactly once. */
typedef struct orbit_serial_resume orbit_serial_resume_t;

/*
 * The execution lane policy of a queue. A value the owner injects; the
 * queue keeps a copy. Fill with orbit_execution_lane_policy_init_default().
 * Size-carrying (see orbit/common.h); 0 in any field: its default.
 */
typedef struct orbit_execution_lane_policy {
	size_t size;			       /* sizeof(orbit_execution_lane_policy_t) */
	uint32_t application_message_capacity; /* items; 0: 1,024 */
	uint64_t application_byte_capacity;    /* bytes; 0: 64 MiB */
	uint32_t lifecycle_message_capacity;   /* items; 0: 128 */
	uint64_t lifecycle_byte_capacity;      /* bytes; 0: 4 MiB */
	/* Bytes every item reserves besides its payload; 0: 256;
	 * ORBIT_POLICY_NO_FIXED_COST: none. */
	uint64_t fixed_work_byte_cost;
	uint32_t lifecycle_burst_limit; /* items; 0: 8 */
	uint32_t owner_time_budget_ms;	/* ms; 0: 10 */
} orbit_execution_lane_policy_t;

/* fixed_work_byte_cost: items reserve their payload bytes only. */
#define ORBIT_POLICY_NO_FIXED_COST UINT64_MAX

#define ORBIT_POLICY_DEFAULT_APP_MESSAGES 1024u
#define ORBIT_POLICY_DEFAULT_APP_BYTES (64ull << 20)
#define ORBIT_POLICY_DEFAULT_LC_MESSAGES 128u
#define ORBIT_POLICY_DEFAULT_LC_BYTES (4ull << 20)
#define ORBIT_POLICY_DEFAULT_FIXED_COST 256u
#define ORBIT_POLICY_DEFAULT_BURST 8u
#define ORBIT_POLICY_DEFAULT_BUDGET_MS 10u

/**
 * orbit_execution_lane_policy_init_default - the default policy.
 * @p: filled with size and the defaults above.
 *
 * Context: any thread; no syscall.
 */
ORBIT_API void orbit_execution_lane_policy_init_default(orbit_execution_lane_policy_t *p);

/**
 * orbit_execution_lane_policy_validate - check a policy.
 * @p: the policy.
 *
 * Zero fields stand for their defaults, as the queue reads them.
 *
 * Context: any thread; no syscall.
 * Returns: 0; -EINVAL for NULL, size 0, or a fixed cost larger than either
 * byte capacity (no item could ever be accepted); -E2BIG (a policy larger
 * than this build's that sets a field it does not know).
 */
ORBIT_API int orbit_execution_lane_policy_validate(const orbit_execution_lane_policy_t *p);

/* What a work function returns. */
enum orbit_serial_result {
	ORBIT_SERIAL_DONE = 0,	    /* finished: its reservation is returned */
	ORBIT_SERIAL_SUSPENDED = 1, /* called orbit_serial_turn_suspend() */
};

/*
 * One work item or continuation. Runs on a turn of its queue; returns
 * ORBIT_SERIAL_DONE, or ORBIT_SERIAL_SUSPENDED after a successful
 * orbit_serial_turn_suspend() on @turn. A suspend without SUSPENDED, or
 * SUSPENDED without a suspend, is counted in stats.protocol_errors and
 * resolved safely: an issued resume handle always stays valid.
 */
typedef int (*orbit_serial_work_fn)(orbit_serial_turn_t *turn, void *arg);

/* Flags for orbit_serial_turn_suspend(). */
enum orbit_serial_suspend_flags {
	/*
	 * Default (0): hand the turn back; the queue runs its other work
	 * while this item waits.
	 */
	ORBIT_SERIAL_SUSPEND_RELEASE = 0,
	/*
	 * Keep the queue's claim: nothing else of this queue runs until the
	 * continuation has run (it runs first when resumed). This is the
	 * SpotWide Actor-queue item waiting for its turn on the Spot queue
	 * (the Actor keeps its claim while it hands back the Spot's gate).
	 */
	ORBIT_SERIAL_SUSPEND_HOLD = 1,
};

/*
 * Options for orbit_serial_queue_create(); fill with _options_init().
 * Size-carrying (see orbit/common.h); 0: the default in every field.
 */
struct orbit_serial_queue_options {
	size_t size; /* sizeof(struct orbit_serial_queue_options) */
	/* Policy, copied; NULL: the default policy. */
	const orbit_execution_lane_policy_t *policy;
	/* Where the drain loop runs (required): a pool's executor, or a test's. */
	orbit_executor_t executor;
	/* ORBIT_HOME_NODE(n): NUMA node n passed to executor.submit; 0 (default):
	 * none (orbit/executor.h). */
	int home;
	/* Name for diagnostics, copied (63 bytes kept); NULL: "serial-queue". */
	const char *name;
};

/* Counters of one queue (drain slices, turns and backpressure). */
struct orbit_serial_queue_stats {
	uint64_t accepted;	       /* submissions accepted, all lanes */
	uint64_t rejected_count;       /* -EAGAIN: lane item capacity full */
	uint64_t rejected_bytes;       /* -EAGAIN: lane byte capacity full */
	uint64_t rejected_too_big;     /* -E2BIG: larger than the byte capacity */
	uint64_t rejected_closed;      /* -EPIPE: after close */
	uint64_t rejected_executor;    /* the executor refused to schedule the drain */
	uint64_t ran;		       /* turns run (items and continuations) */
	uint64_t completed;	       /* items finished (reservation returned) */
	uint64_t suspended;	       /* turns that ended suspended */
	uint64_t resumed;	       /* continuations resubmitted */
	uint64_t lifecycle_ran;	       /* lifecycle turns run */
	uint64_t barrier_ran;	       /* barrier-next turns run */
	uint64_t slices;	       /* drain slices (executor tasks) run */
	uint64_t slices_cut;	       /* slices cut by the owner time budget */
	uint64_t protocol_errors;      /* work fn result and suspend disagreed */
	uint64_t app_items, app_bytes; /* application reservations held now */
	uint64_t lc_items, lc_bytes;   /* lifecycle reservations held now */
};

/**
 * orbit_serial_queue_options_init - defaults: size set, policy NULL,
 * executor empty (must be set), no home node, name NULL (all zero).
 *
 * Context: any thread; no syscall.
 */
ORBIT_API void orbit_serial_queue_options_init(struct orbit_serial_queue_options *opts);

/**
 * orbit_serial_queue_create - a new, empty, open queue.
 * @opts: options; executor.submit must be set.
 * @out: the queue.
 *
 * Context: any thread; allocates.
 * Returns: 0; -EINVAL (NULL argument, size 0, no executor, invalid policy);
 * -E2BIG (@opts is larger than this build's and sets a field it does not
 * know); -ECHILD (the executor is a worker pool's that this forked child
 * inherited: nothing would run); -ENOMEM.
 */
ORBIT_API int orbit_serial_queue_create(const struct orbit_serial_queue_options *opts,
					orbit_serial_queue_t **out);

/**
 * orbit_serial_queue_enqueue - application work, reserved at the fixed cost.
 * @q: the queue.
 * @fn: the work.
 * @arg: passed to @fn.
 *
 * The capacity decision, sequence number and insertion are one step under
 * the queue mutex. The submitter that makes the queue runnable
 * schedules the drain on the executor after releasing the mutex;
 * the item never runs on the caller's stack.
 *
 * Context: any thread, concurrently; never blocks beyond the queue mutex;
 * no syscall unless the executor wakes a worker. Items from one thread run
 * in the order that thread enqueued them.
 * Returns: 0 (accepted: @fn will run unless the executor is destroyed
 * first); -EINVAL (NULL @q or @fn); -E2BIG (reservation larger than the
 * byte capacity: never fits); -EAGAIN (lane full by count or bytes; counted);
 * -EPIPE (closed); -ECHILD (a forked child: the queue is the parent's;
 * nothing counted); or the executor's error (-EPIPE, -ENOMEM) when the
 * drain could not be scheduled, in which case the item was withdrawn.
 */
ORBIT_API int orbit_serial_queue_enqueue(orbit_serial_queue_t *q, orbit_serial_work_fn fn,
					 void *arg);

/**
 * orbit_serial_queue_enqueue_with_payload_bytes - application work holding
 * @payload_bytes: reserves @payload_bytes + fixed_work_byte_cost.
 * @q: the queue. @fn, @arg: the work. @payload_bytes: its payload size.
 *
 * Context: as orbit_serial_queue_enqueue().
 * Returns: as orbit_serial_queue_enqueue(); -E2BIG also on overflow.
 */
ORBIT_API int orbit_serial_queue_enqueue_with_payload_bytes(orbit_serial_queue_t *q,
							    orbit_serial_work_fn fn, void *arg,
							    uint64_t payload_bytes);

/**
 * orbit_serial_queue_enqueue_lifecycle - lifecycle work: overtakes queued
 * application work (up to lifecycle_burst_limit in a row); reserves the
 * fixed cost against the lifecycle lane's capacities.
 *
 * Context: as orbit_serial_queue_enqueue().
 * Returns: as orbit_serial_queue_enqueue(), against the lifecycle lane.
 */
ORBIT_API int orbit_serial_queue_enqueue_lifecycle(orbit_serial_queue_t *q, orbit_serial_work_fn fn,
						   void *arg);

/**
 * orbit_serial_queue_enqueue_barrier_next - run @fn right after the
 * current turn, ahead of queued lifecycle and application work (barrier
 * items among themselves FIFO). Application work: reserves the fixed cost
 * against the application lane.
 *
 * Context: as orbit_serial_queue_enqueue(); usually called from a turn.
 * Returns: as orbit_serial_queue_enqueue().
 */
ORBIT_API int orbit_serial_queue_enqueue_barrier_next(orbit_serial_queue_t *q,
						      orbit_serial_work_fn fn, void *arg);

/**
 * orbit_serial_queue_is_current - does the calling thread hold @q's turn?
 *
 * Context: any thread; a thread-local read, no lock.
 * Returns: true only inside a work function (or continuation) of @q.
 */
ORBIT_API bool orbit_serial_queue_is_current(const orbit_serial_queue_t *q);

/**
 * orbit_serial_queue_await_quiescence - wait until every accepted item,
 * suspended ones included, has finished.
 * @q: the queue.
 * @timeout_ms: -1 waits forever; 0 polls.
 *
 * Context: any thread except a turn of @q (refused at once: waiting on
 * the queue from its own turn would never end). Blocks on a condition variable;
 * an item accepted while it waits is waited for too.
 * Returns: 0 quiescent; -EDEADLK called from a turn of @q; -ETIMEDOUT;
 * -EINVAL NULL @q; -ECHILD (a forked child: nothing of @q runs there).
 */
ORBIT_API int orbit_serial_queue_await_quiescence(orbit_serial_queue_t *q, int timeout_ms);

/**
 * orbit_serial_queue_close - accept no new submissions (-EPIPE from then
 * on); what was accepted still runs, and suspended items may still resume.
 *
 * Context: any thread, also a turn of @q; idempotent; does not wait.
 * Returns: 0; -EINVAL NULL @q; -ECHILD (a forked child: not closed).
 */
ORBIT_API int orbit_serial_queue_close(orbit_serial_queue_t *q);

/**
 * orbit_serial_queue_stats - read @q's counters.
 *
 * Context: any thread, concurrently with everything; relaxed atomic loads
 * (each counter exact, the set approximate).
 * Returns: 0; -EINVAL for NULL.
 */
ORBIT_API int orbit_serial_queue_stats(const orbit_serial_queue_t *q,
				       struct orbit_serial_queue_stats *out);

/**
 * orbit_serial_queue_name - the name given at creation (for diagnostics
 * and stats publishing).
 *
 * Context: any thread; immutable after create.
 * Returns: the name ("serial-queue" when none was given); NULL for NULL @q.
 */
ORBIT_API const char *orbit_serial_queue_name(const orbit_serial_queue_t *q);

/**
 * orbit_serial_queue_destroy - free a quiescent queue.
 * @q: the queue (NULL: nothing).
 *
 * Closes @q, then frees it once no item is outstanding; waits only for a
 * drain that is finishing its last bookkeeping.
 *
 * Context: any thread except a turn of @q.
 * Returns: 0; -EBUSY (items still queued, running or suspended: close and
 * await_quiescence first; @q stays valid and closed); -EDEADLK from a
 * turn of @q; -ECHILD (a forked child: nothing closed or freed).
 */
ORBIT_API int orbit_serial_queue_destroy(orbit_serial_queue_t *q);

/**
 * orbit_serial_turn_queue - the queue whose turn this is.
 *
 * Context: inside the work function that received @turn.
 * Returns: the queue; NULL for NULL, and for a turn of a queue that a
 * Spot, Actor or session coordinator owns (work submitted through a
 * coordinator never names its queue).
 */
ORBIT_API orbit_serial_queue_t *orbit_serial_turn_queue(const orbit_serial_turn_t *turn);

/**
 * orbit_serial_turn_suspend - hand this turn back until an external
 * completion arrives. C has no await: the work names its
 * continuation here and returns ORBIT_SERIAL_SUSPENDED; whoever completes
 * the external operation calls orbit_serial_queue_resume(*@out), which
 * queues @cont for a new turn of the same queue. The item keeps its
 * reservation until a continuation returns ORBIT_SERIAL_DONE.
 * @turn: the running turn.
 * @cont: continuation, runs as a work function of the same queue.
 * @arg: passed to @cont.
 * @flags: ORBIT_SERIAL_SUSPEND_RELEASE (the queue goes on with other work)
 *         or ORBIT_SERIAL_SUSPEND_HOLD (the queue keeps its claim).
 * @out: the resume handle. It may be handed to another thread at once,
 *       even before the work function returns: the continuation still
 *       only runs after it has returned.
 *
 * Context: only inside the work function that received @turn, once per
 * turn. Allocates.
 * Returns: 0; -EINVAL (NULL, unknown flags, not the calling thread's
 * current turn); -EALREADY (this turn already suspended); -ECHILD (a
 * child forked from inside the turn: the queue is the parent's); -ENOMEM.
 */
ORBIT_API int orbit_serial_turn_suspend(orbit_serial_turn_t *turn, orbit_serial_work_fn cont,
					void *arg, unsigned flags, orbit_serial_resume_t **out);

/**
 * orbit_serial_queue_resume - the external completion arrived: queue the
 * suspended item's continuation for a turn. Never runs it on the caller's
 * stack and never bypasses the queue: the continuation waits its turn
 * like any item, so the queue still runs one item at a time.
 * @h: the handle from orbit_serial_turn_suspend(); consumed by a return
 *     of 0 or -EPIPE/-ENOMEM (do not use it again).
 *
 * Context: any thread, including a turn of this or another queue; takes
 * the queue mutex; may make the executor wake a worker. Not refused for
 * capacity nor by close().
 * Returns: 0; -EINVAL NULL @h; -ECHILD (a forked child: the handle is
 * the parent's; not consumed); or the executor's error when the drain
 * could not be scheduled: the continuation stays queued and runs when the
 * next submission schedules a drain.
 */
ORBIT_API int orbit_serial_queue_resume(orbit_serial_resume_t *h);

ORBIT_END_DECLS

#endif /* ORBIT_SERIAL_QUEUE_H */
