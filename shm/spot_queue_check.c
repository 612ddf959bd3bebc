// SPDX-License-Identifier: MIT
/*
 * shm/spot_queue_check.c: the counters of a cross-process Spot queue (a
 * relaxed statistics snapshot of its rows, lanes and host words) and the
 * checker, which walks every lane from head to tail and verifies claims,
 * reservations, ack generations and the checksum of each committed record
 * (for tests and orbitctl, on a queue nobody writes). The ordering it
 * leans on is in the table of shm/spot_queue_internal.h.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <orbit/error.h>
#include "base/fork_guard.h"
#include "shm/spot_queue_internal.h"

/* ---- counters and checker ---- */

int orbit__spotq_counters(orbit_spotq_t *q, struct orbit_spotq_counters *c)
{
	if (!q || !c)
		return -EINVAL;
	if (orbit__fork_check(q->pid))
		return -ECHILD;
	memset(c, 0, sizeof(*c));
	/* relaxed everywhere: a statistics snapshot */
	for (uint32_t r = 0; r < q->producer_rows; r++) {
		for (int l = 0; l < 2; l++) {
			c->accepted[l] += atomic_load_explicit(&q->rows[r].accepted[l],
							       memory_order_relaxed);
			c->rejected_count[l] += atomic_load_explicit(&q->rows[r].rejected_count[l],
								     memory_order_relaxed);
			c->rejected_bytes[l] += atomic_load_explicit(&q->rows[r].rejected_bytes[l],
								     memory_order_relaxed);
		}
	}
	for (int l = 0; l < 2; l++) {
		struct lane_geo *g = &q->lane[l];
		uint64_t hw = atomic_load_explicit(&g->w->head, memory_order_relaxed);
		uint64_t t = atomic_load_explicit(&g->w->tail, memory_order_relaxed);

		c->aborted[l] = atomic_load_explicit(&g->w->aborted, memory_order_relaxed);
		c->redelivered[l] = atomic_load_explicit(&g->w->redelivered, memory_order_relaxed);
		c->corrupt[l] = atomic_load_explicit(&g->w->corrupt, memory_order_relaxed);
		c->completed[l] = atomic_load_explicit(&g->w->completed, memory_order_relaxed);
		c->depth[l] = (uint32_t)mod_sub(pw_idx(t) % g->wi, pw_idx(hw) % g->wi, g->wi);
		c->bytes[l] = (uint32_t)mod_sub(pw_bytes(t) % g->wb, pw_bytes(hw) % g->wb, g->wb);
		c->item_cap[l] = g->items;
		c->byte_cap[l] = g->bytes;
	}
	c->epoch = atomic_load_explicit(&q->shm->epoch, memory_order_relaxed);
	c->host_gen = atomic_load_explicit(&q->shm->host_gen, memory_order_relaxed);
	c->takeovers = atomic_load_explicit(&q->shm->takeovers, memory_order_relaxed);
	c->host_row = atomic_load_explicit(&q->shm->host_row, memory_order_relaxed);
	c->host_member_gen = atomic_load_explicit(&q->shm->host_member_gen, memory_order_relaxed);
	c->host_pid = atomic_load_explicit(&q->shm->host_pid, memory_order_relaxed);
	c->shm_bytes = q->seg.size;
	return 0;
}

int orbit__spotq_check(orbit_spotq_t *q, char *why, size_t why_len)
{
#define FAIL(...)                                                                                  \
	do {                                                                                       \
		if (why && why_len)                                                                \
			snprintf(why, why_len, __VA_ARGS__);                                       \
		free(tmp);                                                                         \
		return -ORBIT_ECORRUPT;                                                            \
	} while (0)
	uint8_t *tmp;
	uint64_t gen;

	if (!q)
		return -EINVAL;
	if (orbit__fork_check(q->pid))
		return -ECHILD;
	tmp = malloc(q->lane[0].bytes > q->lane[1].bytes ? q->lane[0].bytes : q->lane[1].bytes);
	if (!tmp)
		return -ENOMEM;
	/* The checker's acquires pair with SQ-T2, SQ-R5, SQ-R2, SQ-R3 and SQ-C1; it
	 * runs while nobody writes (tests, orbitctl on a quiet queue). */
	gen = atomic_load_explicit(&q->shm->host_gen, memory_order_acquire);
	for (uint32_t l = 0; l < 2; l++) {
		struct lane_geo *g = &q->lane[l];
		uint64_t hw = atomic_load_explicit(&g->w->head, memory_order_acquire);
		uint64_t t = atomic_load_explicit(&g->w->tail, memory_order_acquire);
		uint32_t H = pw_idx(hw), T = pw_idx(t);
		uint64_t off = pw_bytes(hw), depth;

		if (H >= g->wi || T >= g->wi || pw_bytes(hw) >= g->wb || pw_bytes(t) >= g->wb)
			FAIL("lane %u: head or tail outside its modulus", l);
		depth = mod_sub(T, H, g->wi);
		if (depth > g->items)
			FAIL("lane %u: %" PRIu64 " records reserved, cap %u", l, depth, g->items);
		if (mod_sub(pw_bytes(t), pw_bytes(hw), g->wb) > g->bytes)
			FAIL("lane %u: bytes reserved above the cap %u", l, g->bytes);
		for (uint32_t p = H; p != T; p = (uint32_t)mod_add(p, 1, g->wi)) {
			struct orbit_spotq_slot *s = slot_at(g, p);
			uint64_t v = atomic_load_explicit(&s->commit, memory_order_acquire);
			uint64_t a = atomic_load_explicit(ack_at(g, p), memory_order_acquire);
			uint64_t resv = atomic_load_explicit(&s->resv, memory_order_relaxed);

			if (cw_pos(v) != p || cw_state(v) == CW_FREE)
				FAIL("lane %u pos %u: slot not claimed for its lap", l, p);
			if (pw_idx(resv) != off)
				FAIL("lane %u pos %u: reservation at %u, %" PRIu64 " expected", l,
				     p, pw_idx(resv), off);
			off = mod_add(off, pw_bytes(resv), g->wb);
			if (gen_newer(aw_gen(a), (uint32_t)(gen & AW_GEN_MASK)))
				FAIL("lane %u pos %u: ack newer than the host generation", l, p);
			if (aw_pos(a) == p && aw_state(a) != AW_NONE && cw_state(v) == CW_CLAIMED)
				FAIL("lane %u pos %u: acknowledged but never committed", l, p);
			if (cw_state(v) == CW_COMMITTED) {
				struct orbit_spotq_slot m;
				orbit__spotq_meta_copy(&m, s);
				if (lane_of_kind(m.kind) != (int)l ||
				    m.payload_len != pw_bytes(resv) || m.payload_len > g->bytes ||
				    m.member_row != cw_row(v))
					FAIL("lane %u pos %u: committed record invalid", l, p);
				uint32_t at = byte_at(g, pw_idx(resv));
				uint32_t n1 = m.payload_len < g->bytes - at ? m.payload_len
									    : g->bytes - at;
				memcpy(tmp, g->data + at, n1);
				memcpy(tmp + n1, g->data, m.payload_len - n1);
				if (record_sum(p, &m, tmp, m.payload_len) != m.checksum)
					FAIL("lane %u pos %u: committed record torn (checksum)", l,
					     p);
			}
		}
		if (off != pw_bytes(t))
			FAIL("lane %u: reservations sum to %" PRIu64 ", tail bytes %u", l, off,
			     pw_bytes(t));
	}
	if (why && why_len)
		why[0] = '\0';
	free(tmp);
	return 0;
#undef FAIL
}
