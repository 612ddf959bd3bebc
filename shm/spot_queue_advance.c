// SPDX-License-Identifier: MIT
/*
 * shm/spot_queue_advance.c: completing records of the cross-process Spot
 * queue and moving the head, and the two steps every ack word change of
 * a host goes through (take's too): the repair of a word of another
 * generation and the fenced CAS. Complete makes TAKEN FREED under the
 * host's generation, one CAS a record; the head advance walks the run
 * of freeable records from the head (DONE made FREED by the fenced step
 * once an aborted record's producer retired or died), moves the head over
 * the run with one CAS and rings the room doorbell. Every ordering label
 * of the queue is in the table of shm/spot_queue_internal.h.
 */
#include "config.h"

#include <errno.h>

#include <orbit/error.h>
#include "shm/crashpoint.h"
#include "shm/spot_queue_internal.h"

/*
 * @a (an ack word just read) names another generation than ours: fenced
 * when host_gen says a newer host exists; else the word is an older host's
 * missed by no retag or corrupt bytes: retag it (counted) and reload *@a.
 * Returns 0 (retry with *@a) or -ORBIT_EFENCED.
 */
int orbit__spotq_ack_foreign(orbit_spotq_host_t *h, struct lane_geo *g, _Atomic uint64_t *aw,
			     uint64_t *a)
{
	if (host_fenced(h))
		return -ORBIT_EFENCED;
	/* SQ-C1: acq_rel CAS of the repair; on failure *a is the fresh value */
	if (atomic_compare_exchange_strong_explicit(aw, a, ack_retagged(*a, h->gen),
						    memory_order_acq_rel, memory_order_acquire)) {
		atomic_fetch_add_explicit(&g->w->corrupt, 1, memory_order_relaxed);
		*a = atomic_load_explicit(aw, memory_order_acquire);
	}
	return 0;
}

/*
 * CAS the ack of @pos from *@a, the word the caller read under our
 * generation and decided on, to (@st, @pos) under our generation (the
 * fence). One try, never a retry on whatever the word holds after a
 * failure: a failed CAS means the word changed since the caller looked
 * (another thread of this host freed it, and the slot may hold a later
 * lap's record by now; a newer host retagged it; bad bytes), so the
 * decision no longer holds, and writing anyway would turn a later
 * record's word into this position's (that record could then never be
 * completed and the head would stop at it).
 * Returns 0; -EAGAIN: *@a is the fresh word, decide again on it;
 * -ORBIT_EFENCED.
 */
int orbit__spotq_ack_set(orbit_spotq_host_t *h, _Atomic uint64_t *aw, uint64_t *a, uint32_t pos,
			 uint32_t st, bool redeliv)
{
	/* SQ-C1: acq_rel; the expected value names our generation (the fence) */
	if (aw_gen(*a) == (uint32_t)(h->gen & AW_GEN_MASK) &&
	    atomic_compare_exchange_strong_explicit(aw, a, aw_make(pos, st, redeliv, h->gen),
						    memory_order_acq_rel, memory_order_acquire))
		return 0;
	return host_fenced(h) ? -ORBIT_EFENCED : -EAGAIN;
}

/*
 * The handler of the record at @pos finished: TAKEN -> FREED under our
 * generation (the fence), in one CAS. A completed record needs no DONE
 * step of its own: nothing is left to decide before its reservation may
 * come back (DONE stays for aborted and corrupt records, whose producer
 * may still have to retire), and the head advance passes a FREED word
 * without writing it again. Returns 0, -ORBIT_EFENCED, -EINVAL.
 */
static int complete_one(orbit_spotq_host_t *h, struct lane_geo *g, uint32_t pos)
{
	_Atomic uint64_t *aw;
	uint64_t a;
	int r;

	if (pos >= g->wi)
		return -EINVAL;
	aw = ack_at(g, pos);
	/* SQ-C1: acquire, pairs with SQ-C1: the ack CASes */
	a = atomic_load_explicit(aw, memory_order_acquire);
	for (;;) {
		if (aw_gen(a) != (h->gen & AW_GEN_MASK)) {
			r = orbit__spotq_ack_foreign(h, g, aw, &a);
			if (r < 0)
				return r;
			continue;
		}
		if (aw_pos(a) != pos || aw_state(a) != AW_TAKEN)
			return -EINVAL; /* not a record this host took and has not completed */
		/* SQ-C1: acq_rel CAS under our generation (the fence) */
		if (atomic_compare_exchange_strong_explicit(
			aw, &a, aw_make(pos, AW_FREED, aw_redeliv(a), h->gen), memory_order_acq_rel,
			memory_order_acquire))
			return 0;
	}
}

int orbit__spotq_complete_n(orbit_spotq_host_t *h, uint32_t lane, const uint32_t *pos, unsigned n,
			    unsigned *done)
{
	struct lane_geo *g;
	unsigned k = 0;
	int r = orbit__spotq_host_check(h, lane);

	if (done)
		*done = 0;
	if (r < 0)
		return r;
	if (n && !pos)
		return -EINVAL;
	g = &h->q->lane[lane];
	for (; k < n; k++) {
		r = complete_one(h, g, pos[k]);
		if (r < 0)
			break;
	}
	if (done)
		*done = k;
	if (k == 0)
		return r;
	ORBIT_CRASHPOINT("spotq.after_complete");
	/* relaxed: a statistic; one add per batch */
	atomic_fetch_add_explicit(&g->w->completed, k, memory_order_relaxed);
	/* done; a fenced or corrupt head advance does not undo it */
	orbit__spotq_advance(h, lane);
	return r;
}

int orbit__spotq_complete(orbit_spotq_host_t *h, uint32_t lane, uint32_t pos)
{
	return orbit__spotq_complete_n(h, lane, &pos, 1, NULL);
}

/*
 * May the reservation of the ABORTED record @v at @pos be handed to another
 * record? Only once its producer can no longer write into the slot or its
 * bytes: it published RETIRED for this claim, or moved on to a later claim
 * (it stores that only after retiring this one), or it is proven dead.
 */
static bool claimer_gone(orbit_spotq_host_t *h, uint32_t lane, uint64_t v, uint32_t pos)
{
	uint32_t row = cw_row(v);
	uint64_t cl;

	if (row >= h->q->producer_rows)
		return true; /* no producer has this row: corrupt bytes */
	/* SQ-A8: acquire, pairs with SQ-R6 in retire(): the record's last stores */
	cl = atomic_load_explicit(&h->q->rows[row].claim[lane], memory_order_acquire);
	if (pw_idx(cl) != pos || (cl & CLAIM_RETIRED))
		return true;
	return orbit__spotq_claimer_dead(h, v);
}

/*
 * Is the head of @lane an aborted record this host marked DONE (so only
 * its producer's RETIRED, or its death, lets advance() free it)? *@gone:
 * that has happened, advance() may now pass it. take() and the host waits
 * poll this while it holds the head: a producer that retires after the
 * host's last advance() rings nothing, so no one else would call advance()
 * and a full lane would stay full for good.
 */
bool orbit__spotq_head_aborted(orbit_spotq_host_t *h, uint32_t lane, bool *gone)
{
	struct lane_geo *g = &h->q->lane[lane];
	/* SQ-A7: acquire, pairs with SQ-R5 */
	uint64_t hw = atomic_load_explicit(&g->w->head, memory_order_acquire);
	uint32_t H = pw_idx(hw);
	uint64_t a, v;

	if (H >= g->wi)
		return false;
	/*
	 * SQ-C1: acquire, pairs with SQ-C1: the ack CASes. The host's own line
	 * first: DONE for this lap means take() passed the slot (the tail had),
	 * so neither the tail nor (in the common case, no DONE) the slot's line
	 * is read
	 */
	a = atomic_load_explicit(ack_at(g, H), memory_order_acquire);
	if (aw_gen(a) != (h->gen & AW_GEN_MASK) || aw_pos(a) != H || aw_state(a) != AW_DONE)
		return false;
	/* SQ-A5: acquire, pairs with SQ-R4: the aborted record's claim */
	v = atomic_load_explicit(&slot_at(g, H)->commit, memory_order_acquire);
	if (cw_pos(v) != H || cw_state(v) != CW_ABORTED)
		return false;
	*gone = claimer_gone(h, lane, v, H);
	return true;
}

/*
 * New head bytes after freeing the record at @H (head bytes @HB, tail @t):
 * the next record's own offset, or the tail's bytes when it was the last;
 * else this record's end. Each candidate must lie in [HB, tail bytes]: a
 * wrong length in one word then costs that record only, not the lane.
 */
static uint32_t head_bytes_after(const struct lane_geo *g, uint32_t H, uint32_t HB, uint64_t t,
				 uint64_t resv, bool *bad)
{
	uint64_t room = mod_sub(pw_bytes(t), HB, g->wb);
	uint32_t next = (uint32_t)mod_add(H, 1, g->wi);
	uint64_t c;

	if (next == pw_idx(t))
		c = pw_bytes(t);
	else
		/* relaxed: ordered by SQ-A4 or SQ-A9 (the tail passed it) */
		c = pw_idx(atomic_load_explicit(&slot_at(g, next)->resv, memory_order_relaxed));
	if (c < g->wb && mod_sub(c, HB, g->wb) <= room) {
		*bad = pw_idx(resv) != HB || c != mod_add(HB, pw_bytes(resv), g->wb);
		return (uint32_t)c;
	}
	*bad = true;
	c = mod_add(HB, pw_bytes(resv) <= room ? pw_bytes(resv) : 0, g->wb);
	return (uint32_t)c;
}

int orbit__spotq_advance(orbit_spotq_host_t *h, uint32_t lane)
{
	struct lane_geo *g;
	uint64_t t, hw;
	bool fresh = false;
	int freed = 0, r = orbit__spotq_host_check(h, lane);

	if (r < 0)
		return r;
	g = &h->q->lane[lane];
	/*
	 * The tail this host knows (SQ-A9: acquire, pairs with SQ-R8 of the
	 * thread that stored it after its own SQ-A4, or of the take() that
	 * derived it, SQ-V1). A tail that old has
	 * passed fewer slots, never others: every slot below it has its resv,
	 * and the tail word at H + 1 held the end of H's bytes whenever it was
	 * read. It is read again (once per head value walked from: `fresh`)
	 * when the walk has reached it and the ack there is freeable already,
	 * or it lies outside the head's window;
	 * only a tail read after the head, on a head that has not moved since,
	 * decides "corrupt" (a thread preempted mid-walk sees a moved head).
	 */
	t = atomic_load_explicit(&h->tail_seen[lane], memory_order_acquire);
	/* SQ-A7: acquire, pairs with SQ-R5 of a helper (or another thread) that moved it */
	hw = atomic_load_explicit(&g->w->head, memory_order_acquire);
	/*
	 * Each round walks the run of freeable records from the head (FREED:
	 * completed; DONE: aborted or corrupt, made FREED here by the fenced
	 * step) and moves the head past the whole run with ONE CAS. The value
	 * of that CAS is fixed by the FREED words alone (each written by a
	 * fenced CAS of this host or an older one), so a paused host's late
	 * head CAS can only write what the current host writes anyway, in one
	 * step instead of k. A failed CAS (another thread of this host, or a
	 * helper, moved the head) walks again from the head it found. The
	 * rounds are bounded: each failure means the head moved forward.
	 */
	for (uint32_t round = 0; round <= 2 * g->items + 2; round++) {
		uint32_t H = pw_idx(hw), HB = pw_bytes(hw), P = H, PB = HB, k = 0, nbad = 0;
		bool moved = false;

		if (H >= g->wi || HB >= g->wb)
			return -ORBIT_ECORRUPT;
		while (k < g->items) {
			_Atomic uint64_t *aw;
			uint64_t a, resv;
			bool bad = false;

			if (pw_idx(t) >= g->wi || mod_sub(pw_idx(t), H, g->wi) > g->items ||
			    P == pw_idx(t)) {
				if (!fresh && P == pw_idx(t) && pw_idx(t) < g->wi &&
				    mod_sub(pw_idx(t), H, g->wi) <= g->items) {
					/*
					 * The walk reached the tail it knows. The run ends
					 * here unless P's ack is already FREED or DONE (the
					 * host's own line: a take that passed P would have
					 * moved tail_seen past it; this is a thread that
					 * read tail_seen before): only then read the tail,
					 * the producers' line
					 */
					/* SQ-C1: acquire, pairs with SQ-C1: the ack CASes */
					uint64_t pa = atomic_load_explicit(ack_at(g, P),
									   memory_order_acquire);
					if (aw_gen(pa) != (h->gen & AW_GEN_MASK) ||
					    aw_pos(pa) != P ||
					    (aw_state(pa) != AW_FREED && aw_state(pa) != AW_DONE))
						break;
				}
				if (!fresh) {
					/* SQ-A4: acquire, pairs with SQ-R2: resv of the slots the tail passed */
					t = atomic_load_explicit(&g->w->tail, memory_order_acquire);
					/* SQ-R8: release, pairs with SQ-A9: what SQ-A4 saw comes with it */
					atomic_store_explicit(&h->tail_seen[lane], t,
							      memory_order_release);
					fresh = true;
					continue; /* no slot looked at: this position again */
				}
				if (pw_idx(t) >= g->wi || mod_sub(pw_idx(t), H, g->wi) > g->items) {
					/*
					 * SQ-A7: acquire, pairs with SQ-R5. "Corrupt" only
					 * on a head that stood still from before the fresh
					 * tail read until now (the two are then one
					 * snapshot); a head another thread moved meanwhile
					 * (this one was preempted) is walked again.
					 */
					uint64_t hn = atomic_load_explicit(&g->w->head,
									   memory_order_acquire);
					if (hn == hw)
						return freed ? freed : -ORBIT_ECORRUPT;
					hw = hn;
					fresh = false;
					moved = true;
				}
				break; /* the walk reached the tail */
			}
			aw = ack_at(g, P);
			/* SQ-C1: acquire, pairs with SQ-C1: the ack CASes */
			a = atomic_load_explicit(aw, memory_order_acquire);
			if (aw_gen(a) != (h->gen & AW_GEN_MASK)) {
				r = orbit__spotq_ack_foreign(h, g, aw, &a);
				if (r < 0)
					return r;
				continue;
			}
			if (aw_pos(a) != P)
				break;
			if (aw_state(a) == AW_DONE) {
				struct orbit_spotq_slot *s = slot_at(g, P);
				/* SQ-A5: acquire, pairs with SQ-R4: an aborted record's claim */
				uint64_t v = atomic_load_explicit(&s->commit, memory_order_acquire);
				if (cw_pos(v) == P && cw_state(v) == CW_ABORTED &&
				    !claimer_gone(h, lane, v, P))
					break; /* its producer may still write: keep it reserved */
				/* the fenced step: DONE -> FREED under our generation */
				r = orbit__spotq_ack_set(h, aw, &a, P, AW_FREED, false);
				if (r == -EAGAIN)
					continue; /* freed by another thread, or a later lap: look again */
				if (r < 0)
					return r;
			} else if (aw_state(a) != AW_FREED) {
				break;
			}
			/* relaxed: ordered by SQ-A4 */
			resv = atomic_load_explicit(&slot_at(g, P)->resv, memory_order_relaxed);
			PB = head_bytes_after(g, P, PB, t, resv, &bad);
			nbad += bad; /* counted once the head CAS shows the walk read this lap */
			P = (uint32_t)mod_add(P, 1, g->wi);
			k++;
		}
		if (moved)
			continue;
		if (k == 0)
			break;
		/* the run is FREED, the head not moved yet: a host killed here leaves it to the next */
		ORBIT_CRASHPOINT("spotq.after_freed");
		/*
		 * SQ-R5: release (seq_cst for SQ-F2), pairs with SQ-A1: the slots'
		 * last reads before their reuse. On failure hw is the head now.
		 */
		if (!atomic_compare_exchange_strong_explicit(&g->w->head, &hw, pw_make(P, PB),
							     memory_order_seq_cst,
							     memory_order_acquire)) {
			fresh = false; /* a tail read before this head is too old to judge it */
			continue;
		}
		if (nbad)
			atomic_fetch_add_explicit(&g->w->corrupt, nbad, memory_order_relaxed);
		freed += (int)k;
		hw = pw_make(P, PB);
	}
	if (freed) {
		struct orbit_doorbell *db = &h->q->shm->room_db;
		/* SQ-F2: seq_cst load after the seq_cst head CAS, pairs with SQ-D2 */
		if (atomic_load_explicit(&db->sleeping, memory_order_seq_cst))
			orbit__doorbell_ring(db);
	}
	return freed;
}
