/* SPDX-License-Identifier: MIT */
/*
 * lib/rcu.h: the one owner of liburcu state in liborbit (internal). Every
 * RCU user of the library (lib/registry.c, the agent's view) reads, waits
 * for grace periods and defers frees through these names, and so through
 * one flavour: liburcu-bp ("bulletproof").
 *
 * Why bp. The memb flavour keeps each registered reader in the thread's
 * TLS, linked into a process-wide registry, and is not fork-safe: in a
 * forked child the parent's other threads are gone but stay in the
 * registry (their TLS reused by the child's new threads: SIGSEGV in
 * synchronize_rcu; or still inside a read-side section: a grace period
 * that never ends), and a thread registered twice (by the registry and by
 * the agent, or by the application and by us) aborts in liburcu. bp
 * registers a thread by itself at its first read-side section, keeps its
 * readers in its own arena and unregisters them at thread exit, and its
 * fork hooks prune the readers of threads that did not survive a fork.
 * liburcu documents it as the one flavour that handles fork() (README,
 * "Interaction with fork()"). Its registry is its own: an application
 * that registers its threads with another flavour (urcu.h, memb, mb,
 * qsbr, signal) and calls orbit from them is independent of it.
 *
 * Fork. orbit__rcu_init() installs, once per process, pthread_atfork()
 * handlers that run liburcu-bp's fork hooks around every fork(): in
 * prepare, call_rcu's (it pauses the call_rcu threads and rculfhash's
 * resize worker), then the reader registry's (it takes the grace-period
 * and registry locks); in the parent, both released; in the child, the
 * registry pruned to the forking thread, then a new call_rcu thread and
 * resize worker (callbacks queued before the fork run there). liburcu's
 * README warns that running call_rcu's hooks from pthread_atfork() can
 * hang on a glibc malloc lock when callbacks call free(); glibc >= 2.24
 * runs the prepare handlers before it takes its malloc locks, so a
 * call_rcu thread inside free() finishes before the fork, which is what
 * the warning was about. liburcu's hooks pause the call_rcu threads but
 * not the threads that queue callbacks: call_rcu()'s wait-free enqueue
 * is two stores (swap the tail, then link the old tail to the node), and
 * a fork between them gave the child a queue whose link nobody would
 * ever write; the child's call_rcu thread then waited for it forever
 * (seen: a child's rcu_barrier() stuck, its call_rcu thread polling in
 * the splice). So orbit__rcu_call() holds the read side of a fork lock
 * (a writer-preferring rwlock, so forks are not starved) and the prepare
 * handler takes its write side first. Consequence for applications: one that uses
 * liburcu-bp itself must not also call urcu_bp_before_fork() and the
 * others around its fork() calls (the registry lock would be taken twice):
 * liborbit already does.
 *
 * Cost: a bp read-side pair is memb's (a TLS load, a counter store and a
 * compiler barrier each side; both flavours use membarrier for the grace
 * period) plus a test of the reader pointer. Measured on the 2-vCPU
 * development VM under load, thread CPU time, best of 3 x 5 runs of 5 M:
 * a bare out-of-line pair 14.1-14.7 ns (memb) against 16.1-17.5 ns (bp);
 * orbit_registry_get() 42-53 ns before (memb plus the registry's own
 * registration test) against 38-42 ns; orbit_agent_view_lookup() 135-158
 * ns against 133-141 ns. The 2-3 ns of the pair disappear in the calls.
 */
#ifndef ORBIT_LIB_RCU_H
#define ORBIT_LIB_RCU_H

#include <urcu/urcu-bp.h>
#include <urcu/rculfhash.h>

/*
 * orbit__rcu_init - install the fork handlers (above) once per process.
 * Call before creating an RCU hash table or queueing a deferred free.
 * Context: any thread; pthread_once; aborts if pthread_atfork() fails
 * (ENOMEM at the first table: a broken invariant of this process).
 */
void orbit__rcu_init(void);

/* The flavour to give cds_lfht_new_flavor(). */
#define ORBIT__RCU_FLAVOR (&urcu_bp_flavor)

/*
 * Read-side section: any thread, lock-free, nestable; the first one in a
 * thread registers it with liburcu-bp (a mutex, a signal mask and an arena
 * slot), its exit unregisters it. No other registration exists.
 */
static inline void orbit__rcu_read_lock(void)
{
	urcu_bp_read_lock();
}

static inline void orbit__rcu_read_unlock(void)
{
	urcu_bp_read_unlock();
}

/* Wait for every read-side section that began before the call (not inside one). */
static inline void orbit__rcu_synchronize(void)
{
	urcu_bp_synchronize_rcu();
}

/*
 * Run @fn(@head) after a grace period, on liburcu's call_rcu thread.
 * Context: any thread, not from a callback and NOT inside a read-side
 * section: it takes the fork lock's read side (lib/rcu.c), so no fork()
 * copies a half-made enqueue, and fork's prepare holds the write side
 * while it waits for the call_rcu thread's grace period.
 */
void orbit__rcu_call(struct rcu_head *head, void (*fn)(struct rcu_head *));

/*
 * Wait until every orbit__rcu_call() queued before it has run. Not inside a
 * read side; takes the fork lock's read side too (it queues callbacks).
 */
void orbit__rcu_barrier(void);

#endif /* ORBIT_LIB_RCU_H */
