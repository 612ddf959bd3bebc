// SPDX-License-Identifier: MIT
/*
 * shm/spot_queue_host.c: the host handle of the cross-process Spot queue:
 * the fence (every host call compares the queue's 64-bit host_gen with
 * its own), the takeover for a newer epoch (epoch and generation CASes,
 * every ack word retagged to the new generation, TAKEN made REDELIVER,
 * the head finished where an older host left it) and the handle's
 * figures. The fence test itself is inline in shm/spot_queue_internal.h;
 * taking, completing and waiting have files of their own. Every ordering
 * label of the queue is in the table of shm/spot_queue_internal.h.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <orbit/error.h>
#include "base/fork_guard.h"
#include "shm/crashpoint.h"
#include "shm/spot_queue_internal.h"

/* ---- the host ---- */

int orbit__spotq_host_check(const orbit_spotq_host_t *h, uint32_t lane)
{
	if (!h || lane >= ORBIT_SPOTQ_LANES)
		return -EINVAL;
	if (orbit__fork_check(h->pid))
		return -ECHILD;
	return host_fenced(h);
}

/*
 * Rewrite every ack word of @g to @h's generation: TAKEN becomes REDELIVER.
 * "Fenced" is decided by the 64-bit host_gen in the header, never by a
 * word's 28 bits: a newer taker bumps host_gen (SQ-T2) before it retags, so
 * while host_gen is still ours any other generation in a word is an older
 * host's or corrupt bytes (counted), and is overwritten.
 */
static int retag(orbit_spotq_host_t *h, struct lane_geo *g)
{
	uint32_t mine = (uint32_t)(h->gen & AW_GEN_MASK);

	for (uint32_t i = 0; i < g->items; i++) {
		_Atomic uint64_t *aw = &g->acks[i];
		/* SQ-C1: acquire, pairs with SQ-C1: the ack CASes of older hosts */
		uint64_t a = atomic_load_explicit(aw, memory_order_acquire);

		while (aw_gen(a) != mine) {
			if (host_fenced(h))
				return -ORBIT_EFENCED; /* a newer host took over meanwhile */
			bool bad = gen_newer(aw_gen(a), mine) || aw_state(a) > AW_REDELIVER;
			/* SQ-C1: acq_rel CAS; a paused old host's CAS on this word now fails */
			if (atomic_compare_exchange_weak_explicit(aw, &a, ack_retagged(a, h->gen),
								  memory_order_acq_rel,
								  memory_order_acquire)) {
				if (bad)
					atomic_fetch_add_explicit(&g->w->corrupt, 1,
								  memory_order_relaxed);
				break;
			}
		}
	}
	return 0;
}

int orbit__spotq_host_takeover(orbit_spotq_host_t **out, orbit_spotq_t *q, orbit_members_t *m,
			       uint64_t epoch)
{
	struct orbit_spotq_shm *sh;
	orbit_spotq_host_t *h;
	uint64_t e, g;
	int r;

	if (!out || !q || epoch == 0)
		return -EINVAL;
	if (orbit__fork_check(q->pid))
		return -ECHILD;
	if (q->seg.readonly)
		return -EROFS;
	sh = q->shm;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	/* SQ-T1: seq_cst max-CAS of the epoch, pairs with SQ-T2: takers are ordered by epoch here */
	e = atomic_load_explicit(&sh->epoch, memory_order_seq_cst);
	do {
		if (epoch <= e) {
			free(h);
			return -ORBIT_EFENCED;
		}
	} while (!atomic_compare_exchange_weak_explicit(&sh->epoch, &e, epoch, memory_order_seq_cst,
							memory_order_seq_cst));
	ORBIT_CRASHPOINT("spotq.takeover_epoch");
	/*
	 * SQ-T2: read gen, THEN check the epoch is still ours, then CAS gen.
	 * A taker B with a higher epoch does its SQ-T1 after our epoch read saw
	 * ours, so its gen read comes after our gen read: either our CAS wins
	 * first (B gets gen + 2, newer than ours) or B's did and ours fails (we
	 * re-read and see B's epoch). Generation order = epoch order.
	 */
	g = atomic_load_explicit(&sh->host_gen, memory_order_seq_cst);
	for (;;) {
		if (atomic_load_explicit(&sh->epoch, memory_order_seq_cst) != epoch) {
			free(h);
			return -ORBIT_EFENCED;
		}
		if (atomic_compare_exchange_weak_explicit(
			&sh->host_gen, &g, g + 1, memory_order_seq_cst, memory_order_seq_cst))
			break;
	}
	h->q = q;
	h->m = m;
	h->gen = g + 1;
	h->epoch = epoch;
	h->pid = orbit__self_pid();
	orbit__spotq_host_set_poll(h, -1); /* adaptive; none when pinned to one CPU (host_poll()) */
	for (int l = 0; l < 2; l++) {
		r = retag(h, &q->lane[l]);
		if (r < 0) {
			free(h);
			return r;
		}
		ORBIT_CRASHPOINT("spotq.takeover_lane");
	}
	/* Display fields (relaxed: informational) */
	atomic_fetch_add_explicit(&sh->takeovers, 1, memory_order_relaxed);
	{
		uint32_t mg = 0;
		int row = m ? orbit__members_self(m, &mg) : -1;
		atomic_store_explicit(&sh->host_row, row < 0 ? UINT32_MAX : (uint32_t)row,
				      memory_order_relaxed);
		atomic_store_explicit(&sh->host_member_gen, mg, memory_order_relaxed);
		atomic_store_explicit(&sh->host_pid, (uint32_t)getpid(), memory_order_relaxed);
	}
	for (int l = 0; l < 2; l++) {
		struct lane_geo *gl = &q->lane[l];
		/*
		 * SQ-A4: acquire, pairs with SQ-R2: the first tail advance() decides
		 * on is one read, never a made-up "none yet" word (with a
		 * power-of-two cap every 32-bit index is a valid position)
		 */
		uint64_t t0 = atomic_load_explicit(&gl->w->tail, memory_order_acquire);
		/* relaxed: the handle is published to other threads only after this */
		atomic_store_explicit(&h->tail_seen[l], t0, memory_order_relaxed);
		r = orbit__spotq_advance(h, (uint32_t)l); /* finish a FREED the old host left */
		if (r < 0 && r != -ORBIT_ECORRUPT) {
			free(h);
			return r;
		}
		/* SQ-A7: acquire, pairs with SQ-R5; take() re-syncs if the head moves on */
		uint64_t hw = atomic_load_explicit(&gl->w->head, memory_order_acquire);
		h->cursor[l] = (uint32_t)(pw_idx(hw) % gl->wi);
	}
	*out = h;
	return 0;
}

void orbit__spotq_host_close(orbit_spotq_host_t *h)
{
	free(h);
}

uint64_t orbit__spotq_host_gen(const orbit_spotq_host_t *h)
{
	return h ? h->gen : 0;
}

void orbit__spotq_host_aborts(orbit_spotq_host_t *h, uint64_t dead[2], uint64_t unblock[2])
{
	for (int l = 0; l < 2; l++) {
		/* relaxed: counts (see struct orbit_spotq_host) */
		dead[l] = h ? atomic_load_explicit(&h->aborted_dead[l], memory_order_relaxed) : 0;
		unblock[l] = h ? atomic_load_explicit(&h->aborted_unblock[l], memory_order_relaxed)
			       : 0;
	}
}

const char *orbit__spotq_host_last_corrupt(const orbit_spotq_host_t *h)
{
	return h ? h->last_corrupt : "";
}
