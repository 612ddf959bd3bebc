// SPDX-License-Identifier: MIT
/*
 * lib/rcu.c: liburcu-bp's fork hooks, installed once per process with
 * pthread_atfork() (see lib/rcu.h for the flavour, the order and why).
 * Owns no other state: liburcu-bp registers and unregisters threads
 * itself.
 */
#include "config.h" /* _GNU_SOURCE: the writer-preferring rwlock initializer */

#include <pthread.h>
#include <stdlib.h>

#include "base/die.h"
#include "lib/rcu.h"

/*
 * The fork lock: orbit__rcu_call() holds its read side around
 * urcu_bp_call_rcu(), fork's prepare handler its write side, so no fork
 * happens in the middle of an enqueue (lib/rcu.h). Lock order: this, then
 * liburcu's call_rcu mutex, then its grace-period and registry locks.
 * Writer-preferring: queued removals cannot starve a fork.
 */
static pthread_rwlock_t fork_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

static void fork_lock_do(int rc)
{
	/* a failing rwlock call: a broken invariant of this process */
	orbit__die_on(rc, "pthread_rwlock");
}

void orbit__rcu_call(struct rcu_head *head, void (*fn)(struct rcu_head *))
{
	fork_lock_do(pthread_rwlock_rdlock(&fork_lock));
	urcu_bp_call_rcu(head, fn);
	fork_lock_do(pthread_rwlock_unlock(&fork_lock));
}

void orbit__rcu_barrier(void)
{
	fork_lock_do(pthread_rwlock_rdlock(&fork_lock));
	urcu_bp_barrier();
	fork_lock_do(pthread_rwlock_unlock(&fork_lock));
}

/*
 * Prepare: no enqueue in flight, then call_rcu (its threads wait for grace
 * periods), then the gp/registry locks.
 */
static void rcu_before_fork(void)
{
	fork_lock_do(pthread_rwlock_wrlock(&fork_lock));
	urcu_bp_call_rcu_before_fork();
	urcu_bp_before_fork();
}

/* Parent: the reverse order. */
static void rcu_after_fork_parent(void)
{
	urcu_bp_after_fork_parent();
	urcu_bp_call_rcu_after_fork_parent();
	fork_lock_do(pthread_rwlock_unlock(&fork_lock));
}

/*
 * Child: prune the readers of the threads that did not survive the fork
 * (and release the locks) before call_rcu starts its new thread, which
 * registers as a reader.
 */
static void rcu_after_fork_child(void)
{
	urcu_bp_after_fork_child();
	urcu_bp_call_rcu_after_fork_child();
	/*
	 * Made anew, not unlocked: glibc's unlock tells a writer by its TID,
	 * which is another in the child. The child has one thread: nobody
	 * else holds or waits for it.
	 */
	fork_lock = (pthread_rwlock_t)PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
}

static pthread_once_t rcu_once = PTHREAD_ONCE_INIT;

static void rcu_install(void)
{
	/* ENOMEM at the first table: a broken invariant of this process */
	orbit__die_on(pthread_atfork(rcu_before_fork, rcu_after_fork_parent, rcu_after_fork_child),
		      "pthread_atfork");
}

void orbit__rcu_init(void)
{
	orbit__die_on(pthread_once(&rcu_once, rcu_install), "pthread_once");
}
