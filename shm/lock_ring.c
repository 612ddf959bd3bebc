// SPDX-License-Identifier: MIT
/*
 * shm/lock_ring.c: the lock-to-ring wiring (shm/lock_ring.h): claim a
 * writer lane, install the lock's transition sink that publishes into it
 * with the owner's skip mask, remove it, give the lane back.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "shm/lock_internal.h"
#include "shm/lock_ring.h"

/* The lock's sink: count the frame, then hand it to the ring. */
static void lock_ring_sink(void *ctx, const struct orbit_transition *t)
{
	struct orbit_lock_ring *w = ctx;
	uint32_t skip = orbit__lock_ring_skip(w);

	/* Relaxed: a statistics count. */
	atomic_fetch_add_explicit(&w->frames_written, 1, memory_order_relaxed);
	/* Relaxed: a count; past the bound the owner is woken like everyone */
	if (skip && atomic_fetch_add_explicit(&w->unseen, 1, memory_order_relaxed) >= w->unseen_max)
		skip = 0;
	orbit__ring_sink_skip(&w->sink, t, skip);
}

int orbit__lock_ring_claim(struct orbit_lock_ring *w, orbit_ring_t *ring, orbit_members_t *m,
			   uint32_t unseen_max)
{
	int rc;

	memset(w, 0, sizeof(*w));
	w->unseen_max = unseen_max ? unseen_max : 1;
	rc = orbit__ring_lane_claim(ring, m);
	if (rc < 0)
		return rc;
	w->sink.ring = ring;
	w->sink.lane = (uint32_t)rc;
	w->members = m;
	w->lane_claimed = true;
	return 0;
}

int orbit__lock_ring_attach(struct orbit_lock_ring *w, orbit_lock_t *lock)
{
	int rc = orbit__lock_set_sink(lock, lock_ring_sink, w);

	if (rc == 0)
		w->lock = lock;
	return rc;
}

void orbit__lock_ring_detach(struct orbit_lock_ring *w)
{
	if (!w->lock)
		return;
	orbit__lock_set_sink(w->lock, NULL, w);
	w->lock = NULL;
}

void orbit__lock_ring_release(struct orbit_lock_ring *w)
{
	if (!w->lane_claimed)
		return;
	orbit__ring_lane_release(w->sink.ring, w->members, w->sink.lane);
	w->lane_claimed = false;
}
