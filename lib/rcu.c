// SPDX-License-Identifier: MIT
/*
 * lib/rcu.c: liburcu-bp's fork hooks, installed once per process with
 * pthread_atfork() (see lib/rcu.h for the flavour, the order and why).
 * Owns no other state: liburcu-bp registers and unregisters threads
 * itself.
 */
#include <pthread.h>
#include <stdlib.h>

#include "lib/rcu.h"

/* Prepare: call_rcu first (its threads wait for grace periods), then the gp/registry locks. */
static void rcu_before_fork(void)
{
	urcu_bp_call_rcu_before_fork();
	urcu_bp_before_fork();
}

/* Parent: the reverse order. */
static void rcu_after_fork_parent(void)
{
	urcu_bp_after_fork_parent();
	urcu_bp_call_rcu_after_fork_parent();
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
}

static pthread_once_t rcu_once = PTHREAD_ONCE_INIT;

static void rcu_install(void)
{
	if (pthread_atfork(rcu_before_fork, rcu_after_fork_parent, rcu_after_fork_child))
		abort(); /* ENOMEM at the first table: a broken invariant of this process */
}

void orbit__rcu_init(void)
{
	if (pthread_once(&rcu_once, rcu_install))
		abort();
}
