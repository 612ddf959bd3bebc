// SPDX-License-Identifier: MIT
/*
 * shm/spot_queue_tail.c: tail helping. Whoever finds the slot at a lane's
 * tail claimed (a producer before its own claim, the host at a record
 * whose claimer stopped) moves the tail past it for the claimer, as
 * DPDK's ring and the MS queue do, so a producer killed between its claim
 * and its own tail CAS never stalls the lane. The claimer's own advance is
 * own_tail() in spot_queue_producer.c. Every ordering label of the queue
 * is in the table of shm/spot_queue_internal.h.
 */
#include "config.h"

#include "shm/crashpoint.h"
#include "shm/spot_queue_internal.h"

/* ---- tail helping ---- */

/*
 * Advance the tail past slot @t's position, whose commit word @v shows it
 * claimed. The reserved length comes from the claimer's row (stored with
 * release before its claim, SQ-R1); offset and length go to the slot's resv
 * first, so everyone who sees the tail past it finds them (SQ-R2).
 *
 * A helper may be late: the claimer (or another helper) already moved the
 * tail on, the claimer's row already holds its next claim, the slot may
 * even hold a later lap. So resv is read first, the tail is re-checked
 * (a claim that moved on was stored after the claimer's tail CAS: the
 * acquire of the claim makes that CAS visible), and resv is then CASed from
 * the value read: a late helper's CAS fails and writes nothing. A row that
 * does not hold this claim while the tail still stands here is corrupt
 * bytes: length 0, so the record fails validation, never an out-of-bounds
 * read, and the lane goes on.
 */
void orbit__spotq_help_tail(orbit_spotq_t *q, struct lane_geo *g, uint32_t lane, uint64_t t,
			    uint64_t v)
{
	struct orbit_spotq_slot *s;
	uint32_t T = pw_idx(t), B = pw_bytes(t), len = 0;
	uint32_t row = cw_row(v);
	uint64_t r0, cl = 0;

	if (T >= g->wi || B >= g->wb)
		return; /* a corrupt tail word: callers report it */
	s = slot_at(g, T);
	/* relaxed: only compared by the CAS below */
	r0 = atomic_load_explicit(&s->resv, memory_order_relaxed);
	if (row < q->producer_rows)
		/* SQ-A6: acquire, pairs with SQ-R7 in submit(): the claim's release store */
		cl = atomic_load_explicit(&q->rows[row].claim[lane], memory_order_acquire);
	/* SQ-A6: acquire (with the claim's): the tail CAS a moved-on claim follows */
	if (atomic_load_explicit(&g->w->tail, memory_order_acquire) != t)
		return; /* moved on: nothing left to do here */
	if (row < q->producer_rows && pw_idx(cl) == T && CLAIM_LEN(cl) <= g->bytes)
		len = CLAIM_LEN(cl);
	ORBIT_CRASHPOINT("spotq.help_before_resv");
	/* relaxed: published by the tail CAS's release below (SQ-R2) */
	atomic_compare_exchange_strong_explicit(&s->resv, &r0, pw_make(B, len),
						memory_order_relaxed, memory_order_relaxed);
	uint64_t nt = pw_make((uint32_t)mod_add(T, 1, g->wi), (uint32_t)mod_add(B, len, g->wb));
	/* SQ-R2: release, pairs with SQ-A2/SQ-A4: resv before the tail passes the slot */
	atomic_compare_exchange_strong_explicit(&g->w->tail, &t, nt, memory_order_release,
						memory_order_relaxed);
}
