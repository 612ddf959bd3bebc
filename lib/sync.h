/* SPDX-License-Identifier: MIT */
/*
 * lib/sync.h: internal. What the worker pool and the serial queue share
 * to sleep and lock: the futex calls (process-private; a wait with a
 * relative timeout too), the CPU relax
 * hint of base/cpu.h for short polls, adaptive mutex init, lock/unlock that abort on a failing
 * pthread call (a broken invariant, never bad input), and the increment of
 * a counter that has one writer at a time.
 */
#ifndef ORBIT_LIB_SYNC_H
#define ORBIT_LIB_SYNC_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <orbit/executor.h>

#include "base/cpu.h" /* orbit__cpu_relax() */
#include "base/die.h" /* orbit__die_on() */

/* Sleep while *@word == @val. Returns at once when it differs; spurious wakes happen. */
static inline void orbit__futex_wait(_Atomic uint32_t *word, uint32_t val)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

/*
 * Sleep while *@word == @val, for at most @rel_ns (0: return at once).
 * Returns 0 (woken, or the value differed), -ETIMEDOUT or -EINTR;
 * spurious wakes happen.
 */
static inline int orbit__futex_wait_ns(_Atomic uint32_t *word, uint32_t val, uint64_t rel_ns)
{
	struct timespec rel = { .tv_sec = (time_t)(rel_ns / 1000000000ull),
				.tv_nsec = (long)(rel_ns % 1000000000ull) };

	if (syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, val, &rel, NULL, 0) < 0)
		return errno == EAGAIN ? 0 : -errno;
	return 0;
}

/* Wake up to @n sleepers of @word. Returns how many were woken (0 on error). */
static inline int orbit__futex_wake(_Atomic uint32_t *word, int n)
{
	long r = syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);

	return r > 0 ? (int)r : 0;
}

/*
 * An adaptive mutex, for sections of a few dozen instructions: a
 * contender spins briefly before it sleeps in the kernel. 0 or -ENOMEM.
 */
static inline int orbit__mutex_init_adaptive(pthread_mutex_t *m)
{
	pthread_mutexattr_t ma;
	int rc;

	if (pthread_mutexattr_init(&ma))
		return -ENOMEM;
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
	rc = pthread_mutex_init(m, &ma);
	pthread_mutexattr_destroy(&ma);
	return rc ? -ENOMEM : 0;
}

/*
 * The drain tunables of the state lane and the serial queue, one set so
 * that the two drains behave alike: a drain that ran its queue empty reads
 * the arrivals counter up to ORBIT__DRAIN_LINGER_READS times,
 * ORBIT__DRAIN_POLL_PAUSES CPU pauses apart, before it gives the turn up;
 * one that finds fewer than ORBIT__DRAIN_GATHER_MIN items waits up to
 * ORBIT__DRAIN_GATHER_READS reads for more before it claims them.
 */
#define ORBIT__DRAIN_LINGER_READS 13
#define ORBIT__DRAIN_POLL_PAUSES 16
#define ORBIT__DRAIN_GATHER_MIN 64u
#define ORBIT__DRAIN_GATHER_READS 8

/*
 * orbit__worker_others_ready - is the calling thread a worker of a pool
 * (lib/worker_pool.c) that has other tasks ready to run: a lingering or
 * gathering drain on such a worker stops polling at once and gives the
 * thread to them (with 8 queues on 2 workers, a drain waiting for its own
 * next item kept the others' drains, and their items, waiting behind it).
 *
 * Context: any thread; relaxed loads only, no lock, no syscall.
 * Returns: true only on a pool worker whose pool has a task queued.
 */
bool orbit__worker_others_ready(void);

/*
 * orbit__worker_alone_on_cpu - is the calling thread a pool worker that
 * may run on one CPU only in a pool whose topology has one CPU (its
 * affinity mask at its start and the pool's topology: a process pinned to
 * one CPU, a 1-CPU machine)? A drain there does not linger or gather and
 * the worker does not poll before it sleeps: the poll would only hold the
 * CPU that whoever would submit the next item needs. Spinning that wins
 * on many cores must not lose on one. (Whether other tasks are ready is
 * orbit__worker_others_ready(), checked after each poll interval.)
 *
 * Context: any thread; one plain read of the worker's own flag.
 * Returns: false off a pool worker, else as above.
 */
bool orbit__worker_alone_on_cpu(void);

/*
 * orbit__worker_pool_test_sleep_hook - for tests only: when set, a pool
 * worker that is about to sleep calls it after it counted itself a
 * sleeper (WP-W1) and found nothing ready (WP-W2), just before its
 * FUTEX_WAIT: a test can hold a worker in that gap, where a preemption
 * puts it in production, and see what a submitter does meanwhile. NULL
 * (the default) costs one relaxed load per sleep.
 *
 * Context: set and cleared by a test while the pool's workers are not in
 * the gap (set before the pool sleeps, cleared after the hook returned).
 */
extern _Atomic(void (*)(void)) orbit__worker_pool_test_sleep_hook;

/*
 * orbit__worker_spin_begin - may the calling pool worker spin now (a
 * lingering or gathering drain, a worker polling for tasks)? A pool lets
 * at most one thread fewer than its topology's CPUs (at least one) spin
 * at once, so that one CPU stays for whoever would end the spin: the
 * submitter that feeds the queue runs outside the pool. With a pool
 * thread per CPU and every one of them spinning, that submitter only got
 * a share of a CPU (perf, bench_spot_executor PerActor 8 Actors on 2
 * CPUs: the producer had a third of the samples, the two spinning workers
 * the rest). A thread that may not spin does what it would do once the
 * spin ran out: the drain gives its turn up, the worker sleeps. Spinning
 * that wins on many cores must not lose on two; on many cores this takes
 * one spinner away at most.
 *
 * Context: any thread; relaxed atomics on a counter of the pool, no lock,
 * no syscall. Returns: true off a pool worker (nothing counted); on one,
 * true when it may spin, and then it calls orbit__worker_spin_end() when
 * the spin ends; false when the pool's spinners are all taken.
 */
bool orbit__worker_spin_begin(void);

/* orbit__worker_spin_end - end a spin that orbit__worker_spin_begin()
 * allowed, on the same thread. */
void orbit__worker_spin_end(void);

/*
 * orbit__executor_fork_check - may a queue or lane made now use @ex? An
 * executor of a worker pool (lib/worker_pool.c) that another process
 * created (this is a forked child of it) has no worker here: a create on
 * it refuses with -ECHILD at once instead of handing out an object whose
 * work would never run. Any other executor is its owner's to answer for.
 *
 * Context: any thread; one relaxed load and a compare (base/fork_guard.h).
 * Returns: 0, or -ECHILD for an inherited pool's executor.
 */
int orbit__executor_fork_check(const orbit_executor_t *ex);

/*
 * orbit__cond_init_monotonic - a condvar whose timed waits take absolute
 * CLOCK_MONOTONIC deadlines (base/time.h's orbit__deadline_after_ns), so a
 * step of the wall clock neither cuts nor stretches a wait.
 * Returns 0 or -ENOMEM (attribute or condvar resources).
 */
static inline int orbit__cond_init_monotonic(pthread_cond_t *cv)
{
	pthread_condattr_t ca;
	int rc;

	if (pthread_condattr_init(&ca))
		return -ENOMEM;
	rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) || pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
	return rc ? -ENOMEM : 0;
}

/*
 * Our mutexes are never invalid: a failure is a broken invariant, and the
 * abort names the caller's file, line and function (macros, as
 * orbit__die_on() is: an inline function would name this header).
 * Statements, not expressions; @m is evaluated once.
 */
#define orbit__mutex_lock(m) orbit__die_on(pthread_mutex_lock(m), "pthread_mutex_lock")
#define orbit__mutex_unlock(m) orbit__die_on(pthread_mutex_unlock(m), "pthread_mutex_unlock")

/*
 * Add @n to a counter with one writer at a time (its writers are ordered
 * by a lock or by ownership): a relaxed load + store is an exact add
 * without a locked RMW, and relaxed readers only want a recent value.
 */
static inline void orbit__single_writer_add(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

#endif /* ORBIT_LIB_SYNC_H */
