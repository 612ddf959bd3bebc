/* SPDX-License-Identifier: MIT */
/*
 * orbit/spot_executor.h: the three serial-executor coordinators (Spot,
 * Actor, session), built on the serial queue (orbit/serial_queue.h). One
 * header for the three layers, because they share the work surface (yield,
 * state snapshot, completion) and the stats:
 *
 *   orbit_spot_serial_executor_t     one per Spot; owns
 *                             the Spot queue, one Actor queue per Actor
 *                             and (PerActor) one timer queue per timer
 *                             name; the two maps live on a state lane.
 *   orbit_actor_serial_executor_t    one per Actor: one queue, no map.
 *   orbit_session_serial_executor_t  one per session: one queue, no map.
 *
 * The application picks the execution mode when it creates a Spot and
 * never names a queue: no entry point takes or returns one. Where
 * each entry point's work runs (doc/executors.md has the diagrams):
 *
 *   entry point                    PerActor                 SpotWide
 *   orbit_spot_execute_spot        Spot queue               Spot queue
 *   orbit_spot_execute_lifecycle   Spot queue, lifecycle    Spot queue, lifecycle
 *   orbit_spot_execute_actor(id)   Actor id's queue         Actor id's queue, then
 *                                  (payload reserved)       one turn on the Spot queue
 *   orbit_spot_execute_timer(name) timer name's queue       Spot queue (no timer queue)
 *   orbit_actor_execute_actor      its queue (payload)
 *   orbit_actor_execute_lifecycle  its queue, lifecycle lane
 *   orbit_session_execute_application     its queue, application lane (payload)
 *   orbit_session_execute_infrastructure  its queue, application lane (fixed cost)
 *   orbit_session_execute_control         its queue, lifecycle lane
 *   orbit_session_execute_final           its queue, lifecycle lane, and only
 *                                         after all work accepted before it
 *
 * Under SpotWide an Actor record reserves its payload bytes on its Actor
 * queue; when it reaches the head there, it places one execution turn on
 * the Spot queue, which reserves only fixed_work_byte_cost (the payload
 * stays reserved on the Actor queue), and keeps its Actor queue's claim until
 * the handler has finished. If the Spot queue is full by count then, the turn
 * waits (FIFO among Actors) until a Spot-queue item finishes; accepted work is
 * never dropped, and the waiting Actor's later records fill its own queue,
 * whose execute_actor then returns -EAGAIN at the call.
 *
 * Work functions are orbit_serial_work_fn: they get the turn they run on
 * and return ORBIT_SERIAL_DONE, or ORBIT_SERIAL_SUSPENDED after
 * orbit_work_yield() (hand the turn back around an external call; resume
 * with orbit_serial_queue_resume()). Use orbit_work_yield(), not
 * orbit_serial_turn_suspend(), on a coordinator's turn: only then does the
 * coordinator see the handler's real end (a direct suspend is counted in
 * stats.protocol_errors and the work counts as finished at once).
 *
 * Yield semantics: a yielded handler frees its worker thread. SpotWide
 * Actor work hands back the shared Spot gate (other Actors, the Spot
 * handler, timers and lifecycle work run) and keeps its Actor queue's
 * claim (that Actor's next record waits). All other work keeps its own
 * queue: nothing else of that queue runs until the handler finishes.
 *
 * Synchronization:
 *   create                     any thread; allocates
 *   execute_*, set_info        any thread, concurrently, also from inside
 *                              any coordinator's work; the queue mutex and
 *                              at most one state lane turn (short, never
 *                              waits for work; none for an existing
 *                              Actor's execute_actor, PerActor execute_spot
 *                              and _lifecycle, orbit_actor_execute_*, and
 *                              every session entry point but
 *                              execute_final); the work never runs on the caller's
 *                              stack. Work one thread submits to one Actor
 *                              (timer name, session) runs in that order.
 *   orbit_work_*               inside the work function that got the turn
 *   completion_wait, await_quiescence
 *                              any thread but a turn of the same
 *                              coordinator (-EDEADLK at once, never a hang)
 *   close                      any thread, also its own work; no waiting
 *   stats                      any thread; relaxed loads
 *   destroy                    after close + await_quiescence; not from
 *                              its own work
 * Everything a submitter wrote before execute_* is visible to the work
 * when it runs; everything work wrote is visible to the next work of the
 * same queue and to a caller whose completion_wait returned.
 *
 * Fork: a coordinator and a completion belong to the process that
 * created them. In a forked child their queues would drain on the
 * parent's workers, which the child does not have, and a lock or lane
 * turn a parent's thread held at the fork stays held: every execute_*,
 * set_info, close, await_quiescence and destroy on an inherited
 * coordinator, and completion_wait and completion_destroy on an inherited
 * completion, return -ECHILD before they take a record, a count or a lock
 * (destroy frees nothing); an execute_* call given a parent's completion
 * returns -ECHILD unarmed; create refuses an inherited worker pool's
 * executor with -ECHILD. stats and mode stay allowed: they read the copy
 * and take no lock. The check is one relaxed load and a compare
 * (orbit/worker_pool.h, "Fork").
 */
#ifndef ORBIT_SPOT_EXECUTOR_H
#define ORBIT_SPOT_EXECUTOR_H

#include <orbit/common.h>
#include <orbit/executor.h>
#include <orbit/serial_queue.h>

ORBIT_BEGIN_DECLS

typedef struct orbit_spot_serial_executor orbit_spot_serial_executor_t;
typedef struct orbit_actor_serial_executor orbit_actor_serial_executor_t;
typedef struct orbit_session_serial_executor orbit_session_serial_executor_t;
/* Lets a thread wait for one submitted piece of work; reusable. */
typedef struct orbit_work_completion orbit_work_completion_t;

/* User Spot execution mode, fixed at creation. 0 is invalid. */
enum orbit_spot_execution_mode {
	ORBIT_SPOT_PER_ACTOR = 1, /* every Actor and timer name its own queue */
	ORBIT_SPOT_SPOT_WIDE = 2, /* one gate: everything runs one at a time */
};

/* What was submitted; indexes the per-kind stats. */
enum orbit_work_kind {
	ORBIT_WORK_SPOT = 0,	   /* orbit_spot_execute_spot */
	ORBIT_WORK_ACTOR,	   /* orbit_spot_execute_actor, orbit_actor_execute_actor */
	ORBIT_WORK_TIMER,	   /* orbit_spot_execute_timer */
	ORBIT_WORK_LIFECYCLE,	   /* orbit_spot/actor_execute_lifecycle */
	ORBIT_WORK_APPLICATION,	   /* orbit_session_execute_application */
	ORBIT_WORK_CONTROL,	   /* orbit_session_execute_control */
	ORBIT_WORK_INFRASTRUCTURE, /* orbit_session_execute_infrastructure */
	ORBIT_WORK_FINAL,	   /* orbit_session_execute_final */
	ORBIT_WORK_KINDS
};

/* Longest timer name, in bytes without the NUL. */
#define ORBIT_TIMER_NAME_MAX 63
/* Most bytes of registration information an Actor carries. */
#define ORBIT_ACTOR_INFO_MAX 64

/*
 * The Actor state snapshot: an Actor's registration information as it
 * was when the handling of the current record started, read in one state
 * lane turn and carried unchanged through the whole handling (across
 * yields too). A change made meanwhile is seen by the next record.
 */
struct orbit_actor_state_snapshot {
	uint64_t actor_id;
	uint64_t version;  /* set_info calls so far for this Actor; 0: never set */
	uint32_t info_len; /* bytes valid in info */
	unsigned char info[ORBIT_ACTOR_INFO_MAX];
};

/*
 * Counters of one coordinator. Per kind: submissions accepted, refused at
 * the call with -EAGAIN (that queue full), -E2BIG (never fits) and
 * -EPIPE (closed). Each counter is exact once the calls it counts have
 * returned (accepted and completed are derived from one count per
 * submission and one per release: a submission that its queue refuses
 * counts as accepted for the moment it is in flight); the set is read
 * with relaxed loads, so counters are mutually approximate while work runs.
 */
struct orbit_serial_executor_stats {
	uint64_t accepted[ORBIT_WORK_KINDS];
	uint64_t rejected_full[ORBIT_WORK_KINDS];
	uint64_t rejected_too_big[ORBIT_WORK_KINDS];
	uint64_t rejected_closed[ORBIT_WORK_KINDS];
	uint64_t completed; /* handlers finished */
	/* SpotWide: accepted Actor work whose execution turn could not be
	 * placed on the Spot queue for a reason other than room (no memory,
	 * the executor refused): it did not run and its completion got that
	 * error. A full Spot queue never counts here (see turn_waited). */
	uint64_t turn_rejected;
	/* SpotWide: Actor turns that found the Spot queue full (or turns
	 * already waiting) when their record reached the head of its Actor
	 * queue, and waited, FIFO, until a Spot-queue item finished. */
	uint64_t turn_waited;
	uint64_t yielded;	  /* orbit_work_yield() calls that succeeded */
	uint64_t protocol_errors; /* suspends bypassing orbit_work_yield, results disagreeing */
	uint64_t outstanding;	  /* accepted and not finished, now */
	uint64_t actor_queues;	  /* Spot: Actor queues now */
	uint64_t timer_queues;	  /* Spot, PerActor: timer queues now */
};

/* ---- Spot coordinator ------------------------------------------------- */

/*
 * Options for orbit_spot_serial_executor_create(); fill with _options_init().
 * Size-carrying (see orbit/common.h); 0: the default (mode excepted).
 */
struct orbit_spot_serial_executor_options {
	size_t size; /* sizeof(struct orbit_spot_serial_executor_options) */
	/* Must be set: 0 is refused (there is no default mode). */
	enum orbit_spot_execution_mode mode;
	/* Policy of the Spot queue, copied; NULL: the default policy. */
	const orbit_execution_lane_policy_t *spot_policy;
	/* Policy of each Actor queue (its mailbox share); NULL: defaults. */
	const orbit_execution_lane_policy_t *actor_policy;
	/* Policy of each timer queue (PerActor); NULL: actor_policy's value. */
	const orbit_execution_lane_policy_t *timer_policy;
	/* Where every queue drains (required): normally a worker pool's. */
	orbit_executor_t executor;
	/* ORBIT_HOME_NODE(n): NUMA node n of the Spot's queues; 0 (default):
	 * none (orbit/executor.h). */
	int home;
	/* Name for diagnostics, copied (63 bytes kept); NULL: "spot". */
	const char *name;
};

/**
 * orbit_spot_serial_executor_options_init - defaults: size set, mode 0 (must be
 * set), policies NULL, executor empty (must be set), no home node, name NULL.
 *
 * Context: any thread; no syscall.
 */
ORBIT_API void
orbit_spot_serial_executor_options_init(struct orbit_spot_serial_executor_options *opts);

/**
 * orbit_spot_serial_executor_create - a Spot coordinator with its Spot queue; the
 * Actor and timer queues are created on first use.
 * @opts: options; mode and executor.submit must be set.
 * @out: the coordinator.
 *
 * Context: any thread; allocates.
 * Returns: 0; -EINVAL (NULL argument, size 0, unknown mode, no executor,
 * an invalid policy); -E2BIG (@opts is larger than this build's and sets a
 * field it does not know); -ECHILD (the executor is a worker pool's that
 * this forked child inherited); -ENOMEM.
 */
ORBIT_API int
orbit_spot_serial_executor_create(const struct orbit_spot_serial_executor_options *opts,
				  orbit_spot_serial_executor_t **out);

/**
 * orbit_spot_execute_spot - Spot handler work, on the Spot queue
 * (application lane, fixed cost).
 * @spot: the coordinator. @fn, @arg: the work.
 * @done: completion to signal when @fn has finished (NULL: none). Armed
 *        only when the call returns 0.
 *
 * Context: see the header comment; never blocks beyond a state lane turn
 * and the queue mutex.
 * Returns: 0 (accepted: @fn will run); -EINVAL (NULL @spot or @fn);
 * -EBUSY (@done still armed by earlier work); -EAGAIN (the Spot queue is
 * full, or SpotWide Actor turns are waiting for its room, which they get
 * first: backpressure, counted); -E2BIG (the fixed cost exceeds the Spot
 * queue's byte capacity); -EPIPE (closed); -ECHILD (a forked child: the
 * Spot is the parent's, or @done is; nothing counted); -ENOMEM; the
 * executor's error.
 */
ORBIT_API int orbit_spot_execute_spot(orbit_spot_serial_executor_t *spot, orbit_serial_work_fn fn,
				      void *arg, orbit_work_completion_t *done);

/**
 * orbit_spot_execute_actor - that Actor's handler work, along the path
 * of the Spot's mode (the table in the header comment). Creates the Actor's
 * queue on first use.
 * @spot: the coordinator.
 * @actor_id: the Actor.
 * @fn, @arg: the handler work.
 * @payload_bytes: the record's payload, reserved on the Actor's queue only.
 * @done: completion (NULL: none).
 *
 * PerActor: @fn runs on the Actor queue, overlapping other Actors' work.
 * SpotWide: the Actor queue reserves @payload_bytes + fixed cost; when the
 * record reaches its head it places one turn (fixed cost, no payload) on
 * the Spot queue and keeps the Actor's claim until @fn has finished. If
 * the Spot queue is full by count at that moment, the turn waits: the
 * Actor keeps its claim, and the turn is placed, in FIFO order among
 * waiting Actors, as soon as a Spot-queue item has finished
 * (stats.turn_waited); meanwhile that Actor's later records stay in its
 * queue, so its -EAGAIN comes at this call once that queue is full. Only
 * a lack of memory (or an executor refusing) loses the work after
 * acceptance: @done then gets that error (stats.turn_rejected).
 *
 * Context: see the header comment.
 * Returns: 0; -EINVAL (NULL @spot or @fn); -EBUSY (@done armed); -EAGAIN
 * (this Actor's queue is full by count or bytes; other Actors unaffected);
 * -E2BIG (@payload_bytes can never fit the Actor's byte capacity); -EPIPE
 * (closed); -ECHILD (a forked child, as orbit_spot_execute_spot()); -ENOMEM;
 * the executor's error.
 */
ORBIT_API int orbit_spot_execute_actor(orbit_spot_serial_executor_t *spot, uint64_t actor_id,
				       orbit_serial_work_fn fn, void *arg, uint64_t payload_bytes,
				       orbit_work_completion_t *done);

/**
 * orbit_spot_execute_timer - the callback of timer @timer_name. PerActor:
 * on that name's timer queue (created on first use; fixed cost), so
 * different names overlap and one name runs in order. SpotWide: on the
 * Spot queue; no timer queue is created.
 * @spot: the coordinator.
 * @timer_name: 1..ORBIT_TIMER_NAME_MAX bytes, copied.
 * @fn, @arg: the callback. @done: completion (NULL: none).
 *
 * Context: see the header comment.
 * Returns: 0; -EINVAL (NULL argument, empty name); -E2BIG (name too
 * long, or the fixed cost exceeds the byte capacity); -EBUSY; -EAGAIN
 * (that timer queue full; SpotWide: as orbit_spot_execute_spot()); -EPIPE;
 * -ECHILD (a forked child); -ENOMEM; the executor's error.
 */
ORBIT_API int orbit_spot_execute_timer(orbit_spot_serial_executor_t *spot, const char *timer_name,
				       orbit_serial_work_fn fn, void *arg,
				       orbit_work_completion_t *done);

/**
 * orbit_spot_execute_lifecycle - lifetime control (join, leave,
 * relocation) on the Spot queue's lifecycle lane: overtakes queued Spot
 * application work, up to lifecycle_burst_limit in a row.
 * @spot, @fn, @arg, @done: as orbit_spot_execute_spot().
 *
 * Context: see the header comment.
 * Returns: as orbit_spot_execute_spot(), against the lifecycle lane.
 */
ORBIT_API int orbit_spot_execute_lifecycle(orbit_spot_serial_executor_t *spot,
					   orbit_serial_work_fn fn, void *arg,
					   orbit_work_completion_t *done);

/**
 * orbit_spot_actor_set_info - set an Actor's registration information
 * (creates the Actor's queue if it has none yet). Handlers see it through
 * orbit_work_actor_snapshot() from the next record on.
 * @spot: the coordinator. @actor_id: the Actor.
 * @info: @len bytes, copied (NULL only with @len 0).
 *
 * Context: any thread, also from a handler; one state lane turn.
 * Returns: 0; -EINVAL (NULL @spot, NULL @info with @len > 0); -E2BIG
 * (@len > ORBIT_ACTOR_INFO_MAX); -EPIPE (closed); -ECHILD (a forked
 * child); -ENOMEM.
 */
ORBIT_API int orbit_spot_actor_set_info(orbit_spot_serial_executor_t *spot, uint64_t actor_id,
					const void *info, size_t len);

/**
 * orbit_spot_serial_executor_mode - the mode fixed at creation.
 *
 * Context: any thread; immutable.
 * Returns: ORBIT_SPOT_PER_ACTOR or ORBIT_SPOT_SPOT_WIDE; -EINVAL for NULL.
 */
ORBIT_API int orbit_spot_serial_executor_mode(const orbit_spot_serial_executor_t *spot);

/**
 * orbit_spot_serial_executor_close - accept nothing more (every entry point and
 * set_info return -EPIPE from now on, for known and new Actors and timer
 * names alike). In one state lane turn the Spot closes every Actor and
 * timer queue with it; what was accepted still runs, including the Spot
 * turns of accepted SpotWide Actor work (those waiting for Spot-queue room
 * too: they are placed as room returns) and yielded work's continuations.
 *
 * Context: any thread, also the Spot's own work; idempotent; no waiting.
 * Returns: 0; -EINVAL NULL @spot; -ECHILD (a forked child: not closed).
 */
ORBIT_API int orbit_spot_serial_executor_close(orbit_spot_serial_executor_t *spot);

/**
 * orbit_spot_serial_executor_await_quiescence - wait until every accepted piece
 * of work of this Spot (all its queues, yielded work included) finished.
 * @spot: the coordinator. @timeout_ms: -1 forever; 0 polls.
 *
 * Context: any thread except work of this Spot (refused at once, never a
 * hang). Blocks on a condition variable.
 * Returns: 0; -EDEADLK (called from this Spot's work); -ETIMEDOUT;
 * -EINVAL (NULL); -ECHILD (a forked child: nothing of the Spot runs there).
 */
ORBIT_API int orbit_spot_serial_executor_await_quiescence(orbit_spot_serial_executor_t *spot,
							  int timeout_ms);

/**
 * orbit_spot_serial_executor_stats - read the Spot's counters.
 *
 * Context: any thread; relaxed loads, no lock.
 * Returns: 0; -EINVAL for NULL.
 */
ORBIT_API int orbit_spot_serial_executor_stats(const orbit_spot_serial_executor_t *spot,
					       struct orbit_serial_executor_stats *out);

/**
 * orbit_spot_serial_executor_destroy - close, then free the Spot with every
 * queue it owns. The maps are emptied in one turn of the state lane
 * that owns them.
 * @spot: the coordinator (NULL: nothing).
 *
 * Context: any thread except the Spot's own work. Waits only for queues
 * finishing their last bookkeeping.
 * Returns: 0; -EBUSY (work still outstanding: it stays valid and closed;
 * await_quiescence first); -EDEADLK (from the Spot's own work, or on a
 * thread that holds the Spot's state lane turn: nothing changed); -ECHILD
 * (a forked child: nothing closed or freed).
 */
ORBIT_API int orbit_spot_serial_executor_destroy(orbit_spot_serial_executor_t *spot);

/* ---- Actor coordinator ------------------------------------------------ */

/* Size-carrying (see orbit/common.h); 0: the default in every field. */
struct orbit_actor_serial_executor_options {
	size_t size;	   /* sizeof(struct orbit_actor_serial_executor_options) */
	uint64_t actor_id; /* reported in snapshots */
	/* Policy of its queue, copied; NULL: the default policy. */
	const orbit_execution_lane_policy_t *policy;
	orbit_executor_t executor; /* required */
	int home;		   /* ORBIT_HOME_NODE(n); 0 (default): none */
	const char *name;	   /* copied; NULL: "actor" */
};

/**
 * orbit_actor_serial_executor_options_init - defaults: size set, actor_id 0,
 * policy NULL, executor empty (must be set), no home node, name NULL.
 *
 * Context: any thread; no syscall.
 */
ORBIT_API void
orbit_actor_serial_executor_options_init(struct orbit_actor_serial_executor_options *opts);

/**
 * orbit_actor_serial_executor_create - an Actor coordinator and its one queue.
 *
 * Context: any thread; allocates.
 * Returns: 0; -EINVAL (NULL, size 0, no executor, invalid policy); -E2BIG
 * (@opts is larger than this build's and sets a field it does not know);
 * -ECHILD (the executor is a worker pool's that this forked child
 * inherited); -ENOMEM.
 */
ORBIT_API int
orbit_actor_serial_executor_create(const struct orbit_actor_serial_executor_options *opts,
				   orbit_actor_serial_executor_t **out);

/**
 * orbit_actor_execute_actor - that Actor's handler work on its queue,
 * reserving @payload_bytes + fixed cost. A yield keeps the queue.
 *
 * Context: see the header comment.
 * Returns: 0; -EINVAL (NULL @actor or @fn); -EBUSY (@done armed); -EAGAIN
 * (full); -E2BIG; -EPIPE (closed); -ECHILD (a forked child: the Actor
 * coordinator is the parent's, or @done is; nothing counted); -ENOMEM; the
 * executor's error.
 */
ORBIT_API int orbit_actor_execute_actor(orbit_actor_serial_executor_t *actor,
					orbit_serial_work_fn fn, void *arg, uint64_t payload_bytes,
					orbit_work_completion_t *done);

/**
 * orbit_actor_execute_lifecycle - that Actor's lifetime control, on its
 * queue's lifecycle lane.
 *
 * Context: see the header comment.
 * Returns: as orbit_actor_execute_actor(), against the lifecycle lane.
 */
ORBIT_API int orbit_actor_execute_lifecycle(orbit_actor_serial_executor_t *actor,
					    orbit_serial_work_fn fn, void *arg,
					    orbit_work_completion_t *done);

/**
 * orbit_actor_set_info - set the Actor's registration information; seen
 * by handlers from the next record on.
 *
 * Context: any thread, also a handler; one state lane turn.
 * Returns: 0; -EINVAL; -E2BIG (@len > ORBIT_ACTOR_INFO_MAX); -EPIPE;
 * -ECHILD (a forked child).
 */
ORBIT_API int orbit_actor_set_info(orbit_actor_serial_executor_t *actor, const void *info,
				   size_t len);

/**
 * orbit_actor_serial_executor_close - accept nothing more (-EPIPE); accepted work
 * still runs.
 *
 * Context: any thread, also its own work; idempotent; no waiting.
 * Returns: 0; -EINVAL for NULL; -ECHILD (a forked child: not closed).
 */
ORBIT_API int orbit_actor_serial_executor_close(orbit_actor_serial_executor_t *actor);

/**
 * orbit_actor_serial_executor_await_quiescence - as
 * orbit_spot_serial_executor_await_quiescence(), for this Actor.
 *
 * Context: any thread except this Actor's own work (refused at once,
 * never a hang). Blocks on a condition variable.
 * Returns: 0; -EDEADLK (from its own work); -ETIMEDOUT; -EINVAL; -ECHILD
 * (a forked child).
 */
ORBIT_API int orbit_actor_serial_executor_await_quiescence(orbit_actor_serial_executor_t *actor,
							   int timeout_ms);

/**
 * orbit_actor_serial_executor_stats - read its counters.
 *
 * Context: any thread; relaxed loads. Returns: 0; -EINVAL.
 */
ORBIT_API int orbit_actor_serial_executor_stats(const orbit_actor_serial_executor_t *actor,
						struct orbit_serial_executor_stats *out);

/**
 * orbit_actor_serial_executor_destroy - close and free.
 *
 * Context: any thread except its own work.
 * Returns: 0; -EBUSY (work outstanding; stays valid and closed); -EDEADLK;
 * -ECHILD (a forked child: nothing closed or freed).
 */
ORBIT_API int orbit_actor_serial_executor_destroy(orbit_actor_serial_executor_t *actor);

/* ---- STREAM session coordinator --------------------------------------- */

/* Size-carrying (see orbit/common.h); 0: the default in every field. */
struct orbit_session_serial_executor_options {
	size_t size; /* sizeof(struct orbit_session_serial_executor_options) */
	/* Policy of its queue, copied; NULL: the default policy. */
	const orbit_execution_lane_policy_t *policy;
	orbit_executor_t executor; /* required */
	int home;		   /* ORBIT_HOME_NODE(n); 0 (default): none */
	const char *name;	   /* copied; NULL: "session" */
};

/**
 * orbit_session_serial_executor_options_init - defaults: size set, policy NULL,
 * executor empty (must be set), no home node, name NULL.
 *
 * Context: any thread; no syscall.
 */
ORBIT_API void
orbit_session_serial_executor_options_init(struct orbit_session_serial_executor_options *opts);

/**
 * orbit_session_serial_executor_create - a session coordinator and its one queue.
 *
 * Context: any thread; allocates.
 * Returns: 0; -EINVAL (NULL, size 0, no executor, invalid policy); -E2BIG
 * (@opts is larger than this build's and sets a field it does not know);
 * -ECHILD (the executor is a worker pool's that this forked child
 * inherited); -ENOMEM.
 */
ORBIT_API int
orbit_session_serial_executor_create(const struct orbit_session_serial_executor_options *opts,
				     orbit_session_serial_executor_t **out);

/**
 * orbit_session_execute_application - a packet for the session callback:
 * application lane, reserving @payload_bytes + fixed cost, FIFO with
 * infrastructure work.
 *
 * Context: see the header comment.
 * Returns: 0; -EINVAL; -EBUSY (@done armed); -EAGAIN (full); -E2BIG;
 * -EPIPE (closed, or executeFinal accepted); -ECHILD (a forked child: the
 * session is the parent's, or @done is; nothing counted); -ENOMEM; the
 * executor's error.
 */
ORBIT_API int orbit_session_execute_application(orbit_session_serial_executor_t *session,
						orbit_serial_work_fn fn, void *arg,
						uint64_t payload_bytes,
						orbit_work_completion_t *done);

/**
 * orbit_session_execute_control - a session control command: lifecycle
 * lane, so it overtakes queued packets (up to lifecycle_burst_limit).
 *
 * Context: see the header comment.
 * Returns: as orbit_session_execute_application(), against the lifecycle lane.
 */
ORBIT_API int orbit_session_execute_control(orbit_session_serial_executor_t *session,
					    orbit_serial_work_fn fn, void *arg,
					    orbit_work_completion_t *done);

/**
 * orbit_session_execute_infrastructure - lower-level work such as a
 * connection state update: application lane at the fixed cost, in FIFO
 * order with packets (a "connection closed" never overtakes data queued
 * before it).
 *
 * Context: see the header comment.
 * Returns: as orbit_session_execute_application().
 */
ORBIT_API int orbit_session_execute_infrastructure(orbit_session_serial_executor_t *session,
						   orbit_serial_work_fn fn, void *arg,
						   orbit_work_completion_t *done);

/**
 * orbit_session_execute_final - the last work before shutdown. Once it
 * returns 0 the session accepts nothing more (-EPIPE, a second final
 * too); @fn runs after every piece of work accepted before it has
 * finished, on any lane, yielded work included. It goes on the lifecycle
 * lane (a full application lane does not block shutdown) and, when it
 * reaches the head while earlier work is still queued or yielded, hands
 * its turn back until that work has finished.
 *
 * Context: see the header comment.
 * Returns: 0; -EINVAL; -EBUSY (@done armed); -EAGAIN (the lifecycle lane
 * is full: the session stays open); -EPIPE (closed or final already
 * accepted); -ECHILD (a forked child); -ENOMEM; the executor's error.
 */
ORBIT_API int orbit_session_execute_final(orbit_session_serial_executor_t *session,
					  orbit_serial_work_fn fn, void *arg,
					  orbit_work_completion_t *done);

/**
 * orbit_session_serial_executor_close - accept nothing more (-EPIPE) without a
 * final work item; accepted work still runs.
 *
 * Context: any thread, also its own work; idempotent; no waiting.
 * Returns: 0; -EINVAL for NULL; -ECHILD (a forked child: not closed).
 */
ORBIT_API int orbit_session_serial_executor_close(orbit_session_serial_executor_t *session);

/**
 * orbit_session_serial_executor_await_quiescence - as
 * orbit_spot_serial_executor_await_quiescence(), for this session.
 *
 * Context: any thread except this session's own work (refused at once,
 * never a hang). Blocks on a condition variable.
 * Returns: 0; -EDEADLK (from its own work); -ETIMEDOUT; -EINVAL; -ECHILD
 * (a forked child).
 */
ORBIT_API int
orbit_session_serial_executor_await_quiescence(orbit_session_serial_executor_t *session,
					       int timeout_ms);

/**
 * orbit_session_serial_executor_stats - read its counters.
 *
 * Context: any thread; relaxed loads. Returns: 0; -EINVAL.
 */
ORBIT_API int orbit_session_serial_executor_stats(const orbit_session_serial_executor_t *session,
						  struct orbit_serial_executor_stats *out);

/**
 * orbit_session_serial_executor_destroy - close and free.
 *
 * Context: any thread except its own work.
 * Returns: 0; -EBUSY (work outstanding; stays valid and closed); -EDEADLK;
 * -ECHILD (a forked child: nothing closed or freed).
 */
ORBIT_API int orbit_session_serial_executor_destroy(orbit_session_serial_executor_t *session);

/* ---- inside work -------------------------------------------------------- */

/**
 * orbit_work_yield - hand the turn back around an external call.
 * The work names its continuation, returns ORBIT_SERIAL_SUSPENDED,
 * and whoever completes the external call passes *@out to
 * orbit_serial_queue_resume() (any thread, even before the work function
 * has returned); @cont then runs on a new turn, queued through the queue
 * like any item, never on the resumer's stack. A yielded handler frees
 * its worker thread; what else it hands back is as "Yield semantics"
 * above says: SpotWide Actor work hands back the Spot gate and keeps its
 * Actor queue's claim (that Actor's next record waits); all other work
 * keeps its own queue (nothing else of it runs meanwhile). The state
 * snapshot and the completion carry over to @cont: the work finishes (its
 * reservation returned, its completion signalled) only when the last
 * continuation returns ORBIT_SERIAL_DONE. A work function that yielded is
 * suspended even if it returns ORBIT_SERIAL_DONE (counted in
 * stats.protocol_errors).
 * @turn: the running turn. @cont, @arg: the continuation (a work function;
 * it runs on a new turn and may yield again). @out: the resume handle
 * (use once).
 *
 * Context: only inside coordinator work that received @turn, once per
 * turn; allocates the resume handle.
 * Returns: 0; -EINVAL (NULL, or @turn is not the calling thread's current
 * coordinator turn); -EALREADY (already yielded in this turn, or the turn
 * was suspended directly); -ENOMEM (nothing yielded: the work goes on);
 * -ECHILD (a child forked inside the turn: the queue is the parent's,
 * orbit_serial_turn_suspend() refused; nothing yielded).
 */
ORBIT_API int orbit_work_yield(orbit_serial_turn_t *turn, orbit_serial_work_fn cont, void *arg,
			       orbit_serial_resume_t **out);

/**
 * orbit_work_actor_snapshot - the Actor state snapshot of the record
 * being handled, taken in one state lane turn when its handling
 * started; the same value on every call during that handling.
 * @turn: the running turn. @out: a copy of the snapshot.
 *
 * Context: only inside Actor work (orbit_spot_execute_actor,
 * orbit_actor_execute_actor) that received @turn; no lock.
 * Returns: 0; -EINVAL (NULL, or not the calling thread's current
 * coordinator turn); -ENOENT (this work is not Actor work); -EDEADLK
 * (the snapshot's lane turn was refused because this thread already held
 * the coordinator's lane: an executor ran the work on a submitter's
 * stack, breaking orbit/executor.h; no snapshot was taken).
 */
ORBIT_API int orbit_work_actor_snapshot(const orbit_serial_turn_t *turn,
					struct orbit_actor_state_snapshot *out);

/* ---- completion ----------------------------------------------------------- */

/**
 * orbit_work_completion_create - an unarmed completion. Pass it as @done
 * to one execute_* call at a time; it may be reused once it completed.
 *
 * Context: any thread; allocates.
 * Returns: 0; -EINVAL (NULL @out); -ENOMEM.
 */
ORBIT_API int orbit_work_completion_create(orbit_work_completion_t **out);

/**
 * orbit_work_completion_wait - wait until the work it was armed by has
 * finished, and return its result.
 * @c: the completion, armed by an execute_* call that returned 0.
 * @timeout_ms: -1 forever; 0 polls.
 *
 * Context: any thread except work of the coordinator that accepted the
 * work (any of its queues): refused at once with -EDEADLK, whether or not
 * the work already finished (waiting from inside could never end). Blocks on a
 * condition variable; everything the work wrote is visible on return.
 * Returns: the work's result: 0 (it ran and finished), or, for SpotWide
 * Actor work whose turn could not be placed for want of memory or
 * because the executor refused, -ENOMEM / the executor's error (a full
 * Spot queue only delays it); otherwise -EDEADLK; -ETIMEDOUT; -EINVAL
 * (NULL, never armed, or its submission was refused meanwhile); -ECHILD
 * (a forked child: the completion is the parent's, its work never runs
 * there).
 */
ORBIT_API int orbit_work_completion_wait(orbit_work_completion_t *c, int timeout_ms);

/**
 * orbit_work_completion_destroy - free an unarmed or completed completion.
 *
 * Context: any thread; the caller's last use.
 * Returns: 0 (NULL: nothing); -EBUSY (still armed by unfinished work);
 * -ECHILD (a forked child: the parent's completion, not freed).
 */
ORBIT_API int orbit_work_completion_destroy(orbit_work_completion_t *c);

ORBIT_END_DECLS

#endif /* ORBIT_SPOT_EXECUTOR_H */
