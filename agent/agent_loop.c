// SPDX-License-Identifier: MIT
/*
 * agent/agent_loop.c: the agent thread. It sleeps on the ring's futex
 * doorbell at most a tick, drains the ring into the view (agent_view.c),
 * runs the subscribers' callbacks and writes their eventfds (agent_subs.c:
 * a callback runs on this thread, the one the publisher's FUTEX_WAKE woke,
 * so it is one hand-off from the publish; an eventfd subscriber is two,
 * the second when this thread sleeps again), frees replaced view
 * nodes and polls the members' pidfds once per tick or when the death
 * watcher woke it (agent_death.c), and publishes the stats row at each
 * stats period (agent_stats.c).
 */
#include "config.h"

#include <errno.h>

#include <orbit/error.h>

#include "agent/agent_internal.h"
#include "lib/rcu.h"

#define AGENT_DRAIN_BATCH ORBIT__AGENT_DRAIN_BATCH /* fleet_internal.h */
#define AGENT_RETIRED_MAX 256 /* retired nodes that force a grace period before the tick */

/*
 * Drain the ring; returns 1 when something was read or lost, 2 when the
 * batch bound stopped it with frames possibly left (drain again at once).
 */
static int drain(struct orbit_agent *a)
{
	uint32_t skip_own = orbit__lock_ring_skip(&a->wire);
	int any = 0, lagged = 0, i;
	uint32_t lane;

	orbit__lock_ring_drained(&a->wire);
	orbit__rcu_read_lock();
	for (i = 0; i < AGENT_DRAIN_BATCH; i++) {
		int rc = orbit__ring_reader_next(a->reader, a->ev, &lane);

		if (rc == -EAGAIN)
			break;
		any = 1;
		if (rc == -ORBIT_ELAGGED) {
			lagged = 1;
			continue;
		}
		if (rc < 0)
			continue; /* corrupt frame: skipped and counted by the reader */
		/* Our own frames, skipped while nobody subscribes, would time the skip */
		if (a->ev->publish_ns &&
		    !(skip_own && orbit__lock_ring_is_own_lane(&a->wire, lane))) {
			uint64_t now = orbit__now_mono_ns();

			orbit__stats_hist_add(
			    &a->delivery, now > a->ev->publish_ns ? now - a->ev->publish_ns : 0);
		}
		if (a->ev->flags & ORBIT_RING_F_TRUNCATED)
			lagged = 1; /* key bytes cut: only the table knows */
		else if (a->ev->type == ORBIT_TRANSITION_REPAIR)
			lagged = 1; /* a mutator died: its frames may not have committed */
		else
			orbit__agent_view_apply(a, a->ev);
	}
	orbit__agent_view_prune(a);
	orbit__rcu_read_unlock();
	if (lagged || orbit__agent_view_stale(a))
		orbit__agent_view_resync(a);
	if (i == AGENT_DRAIN_BATCH)
		return 2;
	return any; /* the caller frees what was replaced, after signalling */
}

/*
 * The loop keeps the wake path (futex return -> drain -> callbacks ->
 * eventfd writes -> back to sleep) free of other system calls: the grace
 * period that frees
 * replaced view nodes (membarrier: an IPI to every CPU running one of our
 * threads, e.g. the subscriber just woken) and the pidfd poll run once per
 * tick, or sooner when AGENT_RETIRED_MAX nodes wait. A pidfd that fired
 * (death_pending, set by the death watcher, which also woke us) makes the
 * pidfd poll run at once. The sleep ends at the next tick, so deaths are
 * still checked at least once per tick however often frames wake the thread.
 */
void *orbit__agent_main(void *p)
{
	struct orbit_agent *a = p;
	uint64_t next_stats = 0, next_tick = 0;
	bool woke = false;

	orbit__agent_members_rescan(a);
	orbit__agent_view_resync(a);
	orbit__agent_view_reclaim(a);
	/* AG-A1: acquire, pairs with AG-R1 in orbit_agent_stop() (agent.c). */
	while (!atomic_load_explicit(&a->stop, memory_order_acquire)) {
		bool died;
		uint32_t seen;
		int drained;
		uint64_t now;

		orbit__agent_test_park(a); /* tests only: returns at once without a park */
		seen = orbit__ring_reader_arm(a->reader);
		drained = drain(a); /* after arming: a frame published meanwhile ends the wait */

		if (drained)
			orbit__agent_subs_signal(a);
		else if (woke)
			orbit__agent_members_rescan(
			    a); /* a wake without frames: a join, leave or stop */
		now = orbit__now_mono_ns();
		/* After the signal: the grace period is not on the wake path. */
		if (now >= next_tick || a->nretired >= AGENT_RETIRED_MAX)
			orbit__agent_view_reclaim(a);
		/*
		 * AG-A2: acquire, pairs with AG-R2 in death_main()
		 * (agent_death.c): its fired[] bits. After the arm above: a watcher
		 * that set it later also bumped the seq after our arm, so the wait
		 * below returns at once.
		 */
		died = atomic_exchange_explicit(&a->death_pending, false, memory_order_acquire);
		if (died || now >= next_tick)
			orbit__agent_deaths_check(a);
		if (died)
			orbit__agent_deaths_rearm(a);
		if (now >= next_tick)
			next_tick = now + a->tick_ns;
		if (now >= next_stats) {
			orbit__agent_members_rescan(a);
			/* A holder that died unwatched (or whose watcher died first) */
			orbit__agent_free_dead_leases(a);
			orbit__members_heartbeat(a->members);
			orbit__agent_stats_publish(a);
			next_stats = now + a->stats_ns;
		}
		if (atomic_load_explicit(&a->stop, memory_order_acquire)) /* AG-A1 again */
			break;
		if (drained == 2) { /* the batch bound left frames: no sleep */
			woke = false;
			continue;
		}
		woke = orbit__ring_reader_wait(a->reader, seen, (int64_t)(next_tick - now)) == 0;
		a->wakeups += woke;
	}
	return NULL;
}
