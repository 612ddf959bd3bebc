// SPDX-License-Identifier: MIT
/*
 * agent/agent_test.c: the agent's test hooks (fleet_internal.h), kept out
 * of struct orbit_agent: a park (mutex, condvar, flags) is made by the
 * first orbit__agent_test_pause() and hangs off the agent's park pointer;
 * production agents never have one, and their loop reads only that NULL
 * pointer. The view hooks apply a frame or resync as the agent thread does.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "agent/agent_internal.h"
#include "lib/rcu.h"

#define die_on orbit__die_on

struct orbit__agent_park {
	pthread_mutex_t mu; /* protects pause (writes), parked (leaf) */
	pthread_cond_t cv;
	_Atomic bool pause; /* relaxed read in the loop is a hint, re-read under mu */
	bool parked;
};

/* AT-A1: acquire, pairs with AT-R1 in orbit__agent_test_pause(): the park's initialised fields. */
static struct orbit__agent_park *park_of(struct orbit_agent *a)
{
	return atomic_load_explicit(&a->park, memory_order_acquire);
}

void orbit__agent_test_park(struct orbit_agent *a)
{
	struct orbit__agent_park *p = park_of(a);

	/* Relaxed: a test hook's hint, re-read under p->mu below */
	if (!p || !atomic_load_explicit(&p->pause, memory_order_relaxed))
		return;
	die_on(pthread_mutex_lock(&p->mu), "lock test");
	/* Relaxed under p->mu: the mutex orders it; stop: AG-A1 as in orbit__agent_main() */
	while (atomic_load_explicit(&p->pause, memory_order_relaxed) &&
	       !atomic_load_explicit(&a->stop, memory_order_acquire)) {
		p->parked = true;
		die_on(pthread_cond_broadcast(&p->cv), "broadcast test");
		die_on(pthread_cond_wait(&p->cv, &p->mu), "wait test");
	}
	p->parked = false;
	die_on(pthread_mutex_unlock(&p->mu), "unlock test");
}

void orbit__agent_test_wake(struct orbit_agent *a)
{
	struct orbit__agent_park *p = park_of(a);

	if (!p)
		return;
	die_on(pthread_mutex_lock(&p->mu), "lock test");
	die_on(pthread_cond_broadcast(&p->cv), "broadcast test");
	die_on(pthread_mutex_unlock(&p->mu), "unlock test");
}

void orbit__agent_test_free(struct orbit_agent *a)
{
	struct orbit__agent_park *p = park_of(a);

	if (!p)
		return;
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

void orbit__agent_test_pause(orbit_agent_t *a)
{
	struct orbit__agent_park *p = park_of(a);
	struct timespec until;

	if (!p) { /* one test thread: no other maker races us */
		p = calloc(1, sizeof(*p));
		die_on(!p, "alloc test park");
		die_on(pthread_mutex_init(&p->mu, NULL), "mutex init");
		die_on(pthread_cond_init(&p->cv, NULL), "cond init");
		/* AT-R1: release, pairs with AT-A1 in park_of(): the fields above */
		atomic_store_explicit(&a->park, p, memory_order_release);
	}
	die_on(pthread_mutex_lock(&p->mu), "lock test");
	/* Relaxed: read by the loop as a hint; orbit__agent_test_park() re-reads it under mu */
	atomic_store_explicit(&p->pause, true, memory_order_relaxed);
	while (!p->parked) {
		/* The thread may have armed its wait just before the flag: ring until it parks. */
		orbit__doorbell_ring(orbit__ring_doorbell(a->ring));
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		int rc = pthread_cond_timedwait(&p->cv, &p->mu, &until);

		die_on(rc == ETIMEDOUT ? 0 : rc, "timedwait test"); /* ETIMEDOUT: ring again */
	}
	die_on(pthread_mutex_unlock(&p->mu), "unlock test");
}

void orbit__agent_test_resume(orbit_agent_t *a)
{
	struct orbit__agent_park *p = park_of(a);

	if (!p)
		return; /* never paused */
	die_on(pthread_mutex_lock(&p->mu), "lock test");
	/* Relaxed: under mu, which the parked thread re-takes to read it */
	atomic_store_explicit(&p->pause, false, memory_order_relaxed);
	die_on(pthread_cond_broadcast(&p->cv), "broadcast test");
	die_on(pthread_mutex_unlock(&p->mu), "unlock test");
}

void orbit__agent_test_view_apply(orbit_agent_t *a, const struct orbit_ring_event *ev)
{
	orbit__rcu_read_lock();
	orbit__agent_view_apply(a, ev);
	orbit__rcu_read_unlock();
}

void orbit__agent_test_view_resync(orbit_agent_t *a)
{
	orbit__agent_view_resync(a);
}
