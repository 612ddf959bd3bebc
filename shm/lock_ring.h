/* SPDX-License-Identifier: MIT */
/*
 * shm/lock_ring.h: internal. The wiring from a lock handle to the
 * transition ring: a writer lane claimed for this process's member row,
 * and the lock's transition sink (shm/lock_internal.h) installed to
 * publish every transition of the handle into that lane, with a doorbell
 * skip mask its owner sets. The owner (the agent) decides only the mask:
 * which wake class its own frames need not wake. Past unseen_max frames
 * published with the mask since the owner last drained, the mask is
 * ignored (everyone is woken), so the owner's lane never laps its own
 * reader. Nothing here starts a thread; no SHM word of its own.
 *
 * Lifetime: orbit__lock_ring_claim() (lane), orbit__lock_ring_attach()
 * (sink), then orbit__lock_ring_detach() (returns once no thread is inside
 * the sink) and orbit__lock_ring_release() (lane), in that order.
 */
#ifndef ORBIT_SHM_LOCK_RING_H
#define ORBIT_SHM_LOCK_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <orbit/lock.h>

#include "shm/members.h"
#include "shm/ring.h"

struct orbit_lock_ring {
	struct orbit_ring_sink sink; /* ring and our lane; publish failures counted */
	orbit_lock_t *lock;	     /* the handle whose sink is ours (attach..detach) */
	orbit_members_t *members;    /* whose row owns the lane */
	bool lane_claimed;
	/*
	 * All three relaxed: skip is a hint set by the owner, unseen a count
	 * the publishing thread bumps and the owner's drain resets,
	 * frames_written a statistic.
	 */
	_Atomic uint32_t skip;
	_Atomic uint32_t unseen;
	uint32_t unseen_max;
	_Atomic uint64_t frames_written;
};

/*
 * orbit__lock_ring_claim - zero @w and claim a writer lane of @ring for
 * @m's joined row; at most @unseen_max frames may skip the masked wake
 * before the owner drains (0 means 1).
 * Context: before the sink is attached; one thread. Returns 0 or
 * orbit__ring_lane_claim()'s code (-ENOSPC, -EPERM, -EROFS, -EINVAL).
 */
int orbit__lock_ring_claim(struct orbit_lock_ring *w, orbit_ring_t *ring, orbit_members_t *m,
			   uint32_t unseen_max);

/*
 * orbit__lock_ring_attach - install the sink on @lock: from now on every
 * transition of @lock is published into the claimed lane.
 * Context: any thread of the opener, while other threads use @lock.
 * Returns 0 or orbit__lock_set_sink()'s code (-EBUSY another sink,
 * -ECHILD a forked child's inherited handle, -EINVAL).
 */
int orbit__lock_ring_attach(struct orbit_lock_ring *w, orbit_lock_t *lock);

/*
 * orbit__lock_ring_detach - remove our sink (another's on the handle
 * stays); returns once no thread is inside it. Not attached: no-op.
 * Context: any thread but the sink's own.
 */
void orbit__lock_ring_detach(struct orbit_lock_ring *w);

/* Give the lane back (after detach). Not claimed: no-op. */
void orbit__lock_ring_release(struct orbit_lock_ring *w);

/* The owner's skip mask for our own frames (0: wake everyone). Relaxed. */
static inline void orbit__lock_ring_set_skip(struct orbit_lock_ring *w, uint32_t skip)
{
	/* Relaxed: a hint; a publish ordered after the call (happens-before) reads it */
	atomic_store_explicit(&w->skip, skip, memory_order_relaxed);
}

static inline uint32_t orbit__lock_ring_skip(const struct orbit_lock_ring *w)
{
	return atomic_load_explicit(&((struct orbit_lock_ring *)w)->skip, memory_order_relaxed);
}

/* The owner drained the ring: our frames may skip the wake again. */
static inline void orbit__lock_ring_drained(struct orbit_lock_ring *w)
{
	/* Relaxed: a count; frames published after this are read now or next time */
	atomic_store_explicit(&w->unseen, 0, memory_order_relaxed);
}

/* Is @lane the one we publish into? */
static inline bool orbit__lock_ring_is_own_lane(const struct orbit_lock_ring *w, uint32_t lane)
{
	return w->lane_claimed && lane == w->sink.lane;
}

static inline uint64_t orbit__lock_ring_frames_written(const struct orbit_lock_ring *w)
{
	return atomic_load_explicit(&((struct orbit_lock_ring *)w)->frames_written,
				    memory_order_relaxed);
}

#endif /* ORBIT_SHM_LOCK_RING_H */
