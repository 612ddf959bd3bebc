/* SPDX-License-Identifier: MIT */
/*
 * orbit/state_lane.h: the state lane, the execution unit a
 * component uses to own its mutable state. One turn runs at a time, work
 * runs in FIFO arrival order with no front insertion, entering a lane from
 * its own turn is refused at the call site with -EDEADLK and a diagnostic
 * naming the lane and the caller's file:line (never a hang, in every build
 * mode), and the collections a lane owns stay plain C structures.
 *
 * How to classify a component's state, and what to use in C:
 *
 *   C1  pure lookup registry: one map whose operations are get/add/remove
 *       and whose entries take part in no invariant with any other field.
 *       Use orbit_registry_t (orbit/registry.h, liburcu rculfhash).
 *   C2  cross-invariant state: an invariant spans two or more collections
 *       or fields, or a decision made here is acted on asynchronously.
 *       Own all of it with ONE orbit_state_lane_t and keep the collections
 *       plain (no locks, no concurrent maps inside).
 *   C3  a counter, a flag or a single pointer swap: C11 <stdatomic.h>.
 *
 *   A component that mixes the three is C2 as a whole: put every field
 *   that shares an invariant on the lane; do not leave part of it on a
 *   registry or a mutex. Do not replace a lane with a semaphore or a
 *   concurrent map: each guards one step, and an invariant across two
 *   steps still breaks between them.
 *
 * The six members of a state lane:
 *
 *   current            orbit_state_lane_current()
 *   is_on_lane         orbit_state_lane_is_on_lane(lane)
 *   run                orbit_state_lane_run(lane, fn, arg)      (waits)
 *                      orbit_state_lane_run_async(lane, fn, arg, done, done_arg)
 *   try_post           orbit_state_lane_try_post(lane, fn, arg)
 *   throw_if_reentrant orbit_state_lane_throw_if_reentrant(lane)
 *   close              orbit_state_lane_close(lane, done, done_arg) (async,
 *                      canonical) and orbit_state_lane_close_sync(lane)
 *
 * Where work runs. orbit_state_lane_run() from a thread that is not on the
 * lane combines: if the lane is idle the caller takes the turn with one
 * CAS and runs its work itself (no lock, no syscall); if another thread
 * holds the turn the caller queues, spins briefly, then sleeps on a futex,
 * and the holder runs the caller's work for it (up to combine_limit items
 * past its own) or hands it the turn. Posted work (try_post, run_async) is
 * drained by a task submitted to the lane's executor, at most slice_limit
 * items per task before it re-submits itself. A waiting run() never waits
 * for the executor: when the turn is only promised to a drain task that
 * has not started, the caller takes it over and drains the items ahead of
 * its own. doc/state-lane.md gives the measurements behind this.
 *
 * Nesting. A turn on lane A may run() lane B (the thread then holds both
 * turns; current() is B). Entering A again from anywhere in that chain,
 * for example from B's work, is reentrancy: -EDEADLK. Work of B run by a
 * thread that also holds A's turn sees A as held too. Lanes nest like
 * locks: keep a global order (A before B), and never run() A from a turn
 * of B on another thread while A's holder waits for B; that cross-thread
 * cycle is a lock-order inversion the thread-local marker cannot see.
 *
 * Synchronization (who may call what, concurrently):
 *
 *   function               any thread   from own turn   blocks
 *   current / is_on_lane   yes          yes             no
 *   run                    yes          -EDEADLK        yes (futex)
 *   run_async / try_post   yes          -EDEADLK        no
 *   throw_if_reentrant     yes          -EDEADLK        no
 *   close                  yes          yes             no
 *   close_sync             yes          -EDEADLK        yes
 *   set_diagnostics_async  yes          -EDEADLK        no
 *   set_diagnostics        not in any lane turn (-EDEADLK)  yes
 *   destroy                after close completed             no
 *
 * Memory ordering: everything a turn wrote happens-before the next turn of
 * the same lane, before run() returns its result, and before the
 * completion callback of run_async()/close() runs.
 *
 * Fork: a lane belongs to the process that created it. In a forked child
 * a parent's thread may have held its turn or its lock at the fork, and
 * its drain tasks would run on the parent's workers: run, run_async,
 * try_post, close, close_sync, both set_diagnostics calls and destroy on
 * an inherited lane return -ECHILD before they touch the turn word or the
 * lock (destroy frees nothing), and create refuses an inherited worker
 * pool's executor with -ECHILD. current, is_on_lane, throw_if_reentrant,
 * name, reentry_count and stats stay allowed: they read a thread-local or
 * the copy and take no lock. The check is one relaxed load and a compare
 * (orbit/worker_pool.h, "Fork"). A lane the child creates is its own.
 */
#ifndef ORBIT_STATE_LANE_H
#define ORBIT_STATE_LANE_H

#include <orbit/common.h>
#include <orbit/executor.h>

ORBIT_BEGIN_DECLS

typedef struct orbit_state_lane orbit_state_lane_t;

/* Work for one turn. Its return value is what run() returns. */
typedef int (*orbit_state_lane_fn)(void *arg);

/*
 * Completion of run_async() (result: the work's return value) or of
 * close() (result 0). Runs after the lane's ownership marker is released
 * and after the turn that ran the work has been handed on, so it may enter the
 * same lane again (run, try_post). Where: on the executor thread of the drain
 * task that ran the work. Never on the thread of a run() caller that ran the
 * work while combining (it may hold a gate the completion needs): such
 * completions are posted, in order, to the executor as one completion
 * task (no allocation); if the executor refuses that task they wait on
 * the lane and run with the next drain task or in close_sync(). On a lane
 * without an executor (no posting, so only close() callbacks exist) the
 * thread that ends the last turn calls them.
 */
typedef void (*orbit_state_lane_done_fn)(void *arg, int result);

/* Where reentrancy refusals go besides the per-thread record. */
enum orbit_state_lane_diag {
	/* Record only: orbit_state_lane_last_diagnostic() on the thread. */
	ORBIT_STATE_LANE_DIAG_RECORD = 0,
	/* Also hand the message to the log hook (default: stderr). */
	ORBIT_STATE_LANE_DIAG_LOG = 1,
};

/* Options of orbit_state_lane_create(); size-carrying (see orbit/common.h); 0: default. */
struct orbit_state_lane_options {
	size_t size;				/* sizeof(struct orbit_state_lane_options) */
	const char *name;			/* named in diagnostics; copied (63 bytes kept) */
	orbit_executor_t executor;		/* drains posted work; submit NULL: no posting */
	int home;				/* ORBIT_HOME_NODE(n): NUMA hint node n passed to
				      submit; 0 (default): none (orbit/executor.h) */
	unsigned combine_limit;			/* items a run() caller runs past its own; 0: 32 */
	unsigned slice_limit;			/* items a drain task runs per submission; 0: 256 */
	enum orbit_state_lane_diag diagnostics; /* 0: RECORD */
};

/**
 * orbit_state_lane_options_init - fill @opt with the defaults: size set,
 * every other field zero (name "lane", no executor, no home node, combine
 * limit 32, slice limit 256, diagnostics RECORD). NULL is a no-op.
 * Context: any thread; no syscall. Returns nothing.
 */
ORBIT_API void orbit_state_lane_options_init(struct orbit_state_lane_options *opt);

/**
 * orbit_state_lane_create - make an open, idle lane.
 * @opt: options (size set, see orbit_state_lane_options_init(); name may be
 *       NULL: "lane").
 * @out: receives the lane.
 *
 * Context: any thread; allocates.
 * Returns: 0; -EINVAL (NULL, size 0, bad diagnostics value); -E2BIG (@opt
 * is larger than this build's and sets a field it does not know); -ECHILD
 * (the executor is a worker pool's that this forked child inherited);
 * -ENOMEM.
 */
ORBIT_API int orbit_state_lane_create(const struct orbit_state_lane_options *opt,
				      orbit_state_lane_t **out);

/**
 * orbit_state_lane_destroy - free a lane whose close has completed.
 * @lane: the lane (NULL is accepted and ignored).
 *
 * Drain tasks still queued on the executor keep the memory alive until
 * they have run; the executor must run every task it accepted.
 *
 * Context: any thread but the lane's own turn; no blocking.
 * Returns: 0; -EBUSY (not closed, accepted work not finished, or
 * completions deferred because the executor refused their task: the lane
 * is untouched; close_sync() makes them); -ECHILD (a forked child: the
 * lane is the parent's, nothing freed).
 */
ORBIT_API int orbit_state_lane_destroy(orbit_state_lane_t *lane);

/**
 * orbit_state_lane_current - the innermost lane whose turn the calling
 * thread is running, or NULL.
 *
 * Context: any thread; reads a thread-local; no blocking.
 */
ORBIT_API orbit_state_lane_t *orbit_state_lane_current(void);

/**
 * orbit_state_lane_is_on_lane - whether the calling thread holds @lane's
 * turn (innermost or further out in a nested chain), that is, whether it
 * may touch the state @lane owns.
 *
 * Context: any thread; no blocking.
 */
ORBIT_API bool orbit_state_lane_is_on_lane(const orbit_state_lane_t *lane);

/**
 * orbit_state_lane_run - run fn(arg) in one turn of @lane and return its
 * result; the caller observes the return only after the turn ended.
 *
 * Context: any thread that is not on @lane's turn. Blocks (futex) while
 * another thread holds the turn; makes no syscall when the lane is idle.
 * Never waits for the executor. fn runs on the calling thread or on the
 * thread holding the turn.
 * Returns: fn's return value; or, without running fn: -EDEADLK (the
 * calling thread is on @lane's turn: diagnostic recorded), -EPIPE (closed),
 * -EINVAL (NULL lane or fn), -ECHILD (a forked child: the lane is the
 * parent's). A work function that can itself return these codes should
 * report its result through @arg.
 */
#define orbit_state_lane_run(lane, fn, arg)                                                        \
	orbit_state_lane_run_at((lane), (fn), (arg), __FILE__, __LINE__)
ORBIT_API int orbit_state_lane_run_at(orbit_state_lane_t *lane, orbit_state_lane_fn fn, void *arg,
				      const char *file, int line);

/**
 * orbit_state_lane_run_async - enqueue fn(arg) and return; when it has run,
 * done(done_arg, result) runs outside the turn (see orbit_state_lane_done_fn).
 *
 * Context: any thread not on @lane's turn; no blocking; may submit a drain
 * task to the executor.
 * Returns: 0 (fn and done will run exactly once); -EDEADLK (on @lane's
 * turn); -EPIPE (closed); -EINVAL (NULL lane/fn/done, or no executor);
 * -ECHILD (a forked child); -ENOMEM; or the executor's submit error. On
 * error neither runs.
 */
#define orbit_state_lane_run_async(lane, fn, arg, done, done_arg)                                  \
	orbit_state_lane_run_async_at((lane), (fn), (arg), (done), (done_arg), __FILE__, __LINE__)
ORBIT_API int orbit_state_lane_run_async_at(orbit_state_lane_t *lane, orbit_state_lane_fn fn,
					    void *arg, orbit_state_lane_done_fn done,
					    void *done_arg, const char *file, int line);

/**
 * orbit_state_lane_try_post - enqueue fn(arg) without waiting; its result
 * is dropped. Not for work whose effect a caller must observe on return
 * (completion before return: use run for that).
 *
 * Context: as orbit_state_lane_run_async().
 * Returns: 0; -EDEADLK; -EPIPE (closed: work posted to a closed lane is
 * refused, never dropped silently);
 * -EINVAL; -ECHILD (a forked child); -ENOMEM; the executor's submit error.
 */
#define orbit_state_lane_try_post(lane, fn, arg)                                                   \
	orbit_state_lane_try_post_at((lane), (fn), (arg), __FILE__, __LINE__)
ORBIT_API int orbit_state_lane_try_post_at(orbit_state_lane_t *lane, orbit_state_lane_fn fn,
					   void *arg, const char *file, int line);

/**
 * orbit_state_lane_throw_if_reentrant - refuse here if the calling thread
 * is on @lane's turn. Public entry points of a C2 component call it first.
 *
 * Context: any thread; no blocking.
 * Returns: 0; -EDEADLK with the diagnostic recorded (and logged when the
 * lane's diagnostics level is LOG); -EINVAL (NULL).
 */
#define orbit_state_lane_throw_if_reentrant(lane)                                                  \
	orbit_state_lane_throw_if_reentrant_at((lane), __FILE__, __LINE__)
ORBIT_API int orbit_state_lane_throw_if_reentrant_at(const orbit_state_lane_t *lane,
						     const char *file, int line);

/**
 * orbit_state_lane_close - stop accepting; when everything accepted before
 * has run, call done(done_arg, 0) (outside any turn of @lane). The
 * canonical, asynchronous close. A second close only adds its callback.
 *
 * Context: any thread, also @lane's own turn (done then runs after that
 * turn). done runs where run_async completions run (after the last
 * accepted item), or on the caller before close returns if the lane is
 * already idle. It may run before completions of earlier run_async items
 * have returned; it never runs before their work has.
 * Returns: 0; -EINVAL (NULL lane); -ECHILD (a forked child: not closed,
 * done not called); -ENOMEM (done could not be recorded: the lane is
 * closed all the same).
 */
ORBIT_API int orbit_state_lane_close(orbit_state_lane_t *lane, orbit_state_lane_done_fn done,
				     void *done_arg);

/**
 * orbit_state_lane_close_sync - close and wait until accepted work has
 * run. The synchronous bridge over orbit_state_lane_close(). If the turn
 * is only promised to an unstarted drain task, the caller drains itself.
 * Completions that wait on the lane because the executor refused their
 * completion task (see orbit_state_lane_done_fn) are made here, on the
 * caller, before it returns.
 *
 * Context: any thread not on @lane's turn (configuration time, tests).
 * Returns: 0; -EDEADLK (on @lane's turn: nothing changed); -EINVAL;
 * -ECHILD (a forked child: nothing changed); -ENOMEM.
 */
#define orbit_state_lane_close_sync(lane) orbit_state_lane_close_sync_at((lane), __FILE__, __LINE__)
ORBIT_API int orbit_state_lane_close_sync_at(orbit_state_lane_t *lane, const char *file, int line);

/**
 * orbit_state_lane_detach - start a long-running
 * operation (timeout, retry loop, background loop) so that it does not
 * inherit the lane marker. The start itself is posted to @executor, so
 * even a synchronous prefix that enters the lane runs outside the turn
 * that started it and enters normally once that turn has ended.
 *
 * Context: any thread, typically inside a turn; no blocking.
 * Returns: 0; -EINVAL (NULL executor submit or fn); the submit error
 * (-ECHILD for a worker pool inherited through fork).
 */
ORBIT_API int orbit_state_lane_detach(const orbit_executor_t *executor, orbit_task_fn fn, void *arg,
				      int home_node);

/**
 * orbit_state_lane_set_diagnostics_async - change @lane's diagnostics
 * level (enum orbit_state_lane_diag) in a turn of @lane; then call
 * done(done_arg, previous level). The canonical dynamic-control surface.
 *
 * Context: as orbit_state_lane_run_async().
 * Returns: as orbit_state_lane_run_async() (-ECHILD in a forked child
 * too), and -EINVAL for a bad level.
 */
ORBIT_API int orbit_state_lane_set_diagnostics_async(orbit_state_lane_t *lane, int level,
						     orbit_state_lane_done_fn done, void *done_arg);

/**
 * orbit_state_lane_set_diagnostics - the synchronous bridge over
 * orbit_state_lane_set_diagnostics_async(): waits for its completion.
 * Only for configuration time, tools and tests (the asynchronous call is
 * the one for running code).
 *
 * Context: a thread on no lane turn and not an executor thread that the
 * lane's drain needs. Blocks.
 * Returns: the previous level (>= 0); -EDEADLK (called inside a lane turn);
 * -ECHILD (a forked child); the codes of the async surface.
 */
ORBIT_API int orbit_state_lane_set_diagnostics(orbit_state_lane_t *lane, int level);

/**
 * orbit_state_lane_last_diagnostic - the calling thread's last refusal
 * message ("" if none): lane name, refused operation, caller's file:line
 * and where the held turn was entered.
 *
 * Context: any thread; the string is thread-local and valid until this
 * thread's next refusal.
 */
ORBIT_API const char *orbit_state_lane_last_diagnostic(void);

/* Receives each logged diagnostic; must not enter any lane. */
typedef void (*orbit_state_lane_log_fn)(const char *message);

/**
 * orbit_state_lane_set_log_hook - where LOG-level diagnostics go,
 * process-wide (NULL: stderr). Returns the previous hook.
 *
 * Context: any thread; one atomic exchange.
 */
ORBIT_API orbit_state_lane_log_fn orbit_state_lane_set_log_hook(orbit_state_lane_log_fn hook);

/**
 * orbit_state_lane_name - the lane's name as given at creation.
 *
 * Context: any thread; the string lives as long as the lane.
 */
ORBIT_API const char *orbit_state_lane_name(const orbit_state_lane_t *lane);

/**
 * orbit_state_lane_reentry_count - how many entries @lane has refused
 * with -EDEADLK so far (a C3 counter; relaxed read).
 *
 * Context: any thread; no blocking.
 */
ORBIT_API uint64_t orbit_state_lane_reentry_count(const orbit_state_lane_t *lane);

/* Counters of one lane; each a separate relaxed read, so mutually approximate. */
struct orbit_state_lane_stats {
	uint64_t turns;		  /* work items run on the lane (run, posted, close_sync) */
	uint64_t posts;		  /* try_post / run_async calls accepted */
	uint64_t reentry_refused; /* entries refused with -EDEADLK (reentry_count) */
};

/**
 * orbit_state_lane_stats - read @lane's counters.
 * @lane: the lane.
 * @out: filled with the counters.
 *
 * The lane counts with plain relaxed stores by whoever holds the turn (or
 * its queue lock), so counting costs the fast path no atomic RMW.
 *
 * Context: any thread, concurrently with everything, from a turn too;
 * relaxed loads only, no blocking.
 * Returns: 0; -EINVAL for a NULL argument.
 */
ORBIT_API int orbit_state_lane_stats(const orbit_state_lane_t *lane,
				     struct orbit_state_lane_stats *out);

ORBIT_END_DECLS

#endif /* ORBIT_STATE_LANE_H */
