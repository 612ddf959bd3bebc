// SPDX-License-Identifier: MIT
/*
 * agent/agent_stats.c: the agent's stats row (shm/stats.c's layout): the
 * lock's, the ring reader's and the agent's own counters, the watched
 * objects' sums (agent_watch.c) and the latency histograms, published by
 * the row's single writer (the agent thread at each stats period, or
 * orbit_agent_stop() after the join); orbit_agent_record_latency() feeds
 * the acquire histogram from any thread.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <orbit/agent.h>

#include "agent/agent_internal.h"

void orbit__agent_stats_publish(struct orbit_agent *a)
{
	struct orbit_stats_snapshot s;
	struct orbit_ring_reader_counters rc;
	struct orbit_lock_stats ls;
	uint64_t *c = s.counters;

	if (!a->have_stats_row)
		return;
	memset(&s, 0, sizeof(s));
	if (a->lock && orbit_lock_stats(a->lock, &ls) == 0) {
		c[ORBIT_STAT_LOCK_ACQUIRED] = ls.acquired;
		c[ORBIT_STAT_LOCK_BUSY] = ls.busy;
		c[ORBIT_STAT_LOCK_RENEWED] = ls.renewed;
		c[ORBIT_STAT_LOCK_RELEASED] = ls.released;
		c[ORBIT_STAT_LOCK_WRONG_OWNER] = ls.wrong_owner;
		c[ORBIT_STAT_LOCK_NOT_HELD] = ls.not_found;
		c[ORBIT_STAT_LOCK_FULL] = ls.full;
		c[ORBIT_STAT_LOCK_EXPIRED_RECLAIMED] = ls.reclaimed;
		c[ORBIT_STAT_LOCK_FORCE_RELEASED] = ls.force_released;
		c[ORBIT_STAT_CORRUPT_BYTES] = ls.corrupt_slots;
	}
	orbit__ring_reader_counters(a->reader, &rc);
	/* Relaxed: a count read once per publish; orders nothing. */
	c[ORBIT_STAT_FRAMES_WRITTEN] = orbit__lock_ring_frames_written(&a->wire);
	c[ORBIT_STAT_FRAMES_READ] = rc.read;
	c[ORBIT_STAT_FRAMES_LAGGED] = rc.lagged;
	c[ORBIT_STAT_CORRUPT_BYTES] += rc.corrupt;
	c[ORBIT_STAT_WAKEUPS] = a->wakeups;
	c[ORBIT_STAT_SUBSCRIBER_SIGNALS] = a->signals;
	c[ORBIT_STAT_MEMBERS_RECLAIMED] = a->reclaimed;
	c[ORBIT_STAT_VIEW_ENTRIES] = a->view_entries;
	orbit__agent_watch_sum(a->watched, c); /* watched queues, pools, lanes (agent_watch.c) */
	/* the Spot hosts' and clients' own slots (agent_spot_stats.c) */
	orbit__agent_spots_publish(a->spots, &c[ORBIT_STAT_SPOT_SLOTS_FULL]);
	/* Relaxed: counts added by any thread; a publish may miss the newest. */
	s.hists[ORBIT_HIST_ACQUIRE_NS].count = atomic_load_explicit(&a->acq_count,
								    memory_order_relaxed);
	s.hists[ORBIT_HIST_ACQUIRE_NS].sum_ns = atomic_load_explicit(&a->acq_sum,
								     memory_order_relaxed);
	for (unsigned b = 0; b < ORBIT_STATS_BUCKETS; b++)
		s.hists[ORBIT_HIST_ACQUIRE_NS].buckets[b] = atomic_load_explicit(
		    &a->acq_buckets[b], memory_order_relaxed);
	s.hists[ORBIT_HIST_DELIVERY_NS] = a->delivery;
	orbit__stats_publish(&a->stats, (uint32_t)a->row, &s);
}

int orbit_agent_record_latency(orbit_agent_t *a, enum orbit_agent_hist hist, uint64_t ns)
{
	int rc = orbit__agent_check(a);

	if (rc < 0)
		return rc;
	if (hist != ORBIT_AGENT_HIST_ACQUIRE)
		return -EINVAL;
	/* Relaxed: statistics counts from any thread, read at publish. */
	atomic_fetch_add_explicit(&a->acq_count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&a->acq_sum, ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&a->acq_buckets[orbit__stats_bucket(ns)], 1,
				  memory_order_relaxed);
	return 0;
}
