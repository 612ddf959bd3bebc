// SPDX-License-Identifier: MIT
/*
 * shm/spot_queue_take.c: the host's take from a lane of the cross-process
 * Spot queue: decide at the cursor from the commit word alone (SQ-V1),
 * validate a committed record (kind, lengths, self-location, producer
 * fields, checksum) while copying it out, mark it TAKEN under the
 * host's generation, and resolve what cannot be taken: abort the record
 * of a producer proven dead or stalled past the unblock bound, count and
 * pass corrupt ones once the tail has passed them. Every ordering label
 * of the queue is in the table of shm/spot_queue_internal.h.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <orbit/error.h>
#include "shm/spot_queue_internal.h"

#define EMPTY_LOOK_EVERY 64u /* empty_look_due() reads the clock at every 64th */

/* Is the producer that claimed @v proven dead (kernel proof via the member directory)? */
bool orbit__spotq_claimer_dead(orbit_spotq_host_t *h, uint64_t v)
{
	orbit_spotq_t *q = h->q;
	uint32_t row = cw_row(v);
	uint64_t own;

	if (!h->m)
		return false;
	if (row >= q->producer_rows)
		return true; /* no producer can have claimed with this row: corrupt */
	/* SQ-O1: acquire, pairs with SQ-O2 (and the owner CAS in producer_open()) */
	own = atomic_load_explicit(&q->rows[row].owner, memory_order_acquire);
	if (((uint32_t)(own >> 32) & CW_GEN_MASK) != cw_gen(v))
		return true; /* that tenure no longer owns the row: it ended */
	return orbit__members_is_alive_gen(h->m, row, (uint32_t)(own >> 32)) == 0;
}

static void corrupt(orbit_spotq_host_t *h, struct lane_geo *g, uint32_t lane, uint32_t pos,
		    const char *why)
{
	atomic_fetch_add_explicit(&g->w->corrupt, 1, memory_order_relaxed);
	snprintf(h->last_corrupt, sizeof(h->last_corrupt), "spot '%s' lane %u pos %u: %s",
		 h->q->spot, lane, pos, why);
}

/*
 * Copy the plain (producer-written) fields of a slot: the meta fields of
 * its first line, then the target bytes of the kind just copied (a Spot or
 * lifecycle record's second line is not read). The atomic words are
 * zeroed; the target is read only for the kinds whose bytes are copied
 * (an Actor's id, a timer's whole name field: target_len()), so the copy's
 * target is left as it is for the others. No memset of the whole
 * copy: 128 bytes compiled to REP STOS, about two thirds of this
 * function's samples (some 18 ns per record on the e2e bench's host).
 */
void orbit__spotq_meta_copy(struct orbit_spotq_slot *m, const struct orbit_spotq_slot *s)
{
	const size_t from = offsetof(struct orbit_spotq_slot, checksum);
	const size_t to = offsetof(struct orbit_spotq_slot, target);

	atomic_init(&m->commit, 0); /* a local copy: plain stores */
	m->unused0 = 0;
	atomic_init(&m->resv, 0);
	memcpy((char *)m + from, (const char *)s + from, to - from);
	memcpy(&m->target, &s->target, target_len(m->kind));
}

/*
 * Validate the committed record at @pos and copy it out (payload into
 * @dst, which has room for payload_len). Returns 0 or a reason.
 */
static const char *copy_out(const orbit_spotq_host_t *h, const struct lane_geo *g, uint32_t lane,
			    uint32_t pos, uint64_t v, const struct orbit_spotq_slot *s,
			    uint64_t resv, uint64_t *hw, struct orbit_spotq_rec *rec, uint8_t *dst,
			    size_t room)
{
	struct orbit_spotq_slot m;
	uint32_t at, n1;

	orbit__spotq_meta_copy(&m, s); /* one copy; validated and summed from here on */
	if (lane_of_kind(m.kind) != (int)lane)
		return "kind not of this lane";
	if (pw_bytes(resv) != m.payload_len || m.payload_len > g->bytes)
		return "payload length disagrees with the reservation";
	/*
	 * Self-locating: its bytes lie inside the lap of bytes that starts at
	 * the head (what is reserved, [head, tail), is never more; the tail
	 * itself is not read: SQ-V1). A head read before another thread of
	 * this host advanced it is read again before the record is called bad.
	 */
	if (pw_idx(resv) >= g->wb ||
	    mod_sub(pw_idx(resv), pw_bytes(*hw), g->wb) + m.payload_len > g->bytes) {
		/* SQ-A7: acquire, pairs with SQ-R5 */
		uint64_t hn = atomic_load_explicit(&g->w->head, memory_order_acquire);

		if (pw_idx(resv) >= g->wb || hn == *hw || pw_idx(hn) >= g->wi ||
		    pw_bytes(hn) >= g->wb ||
		    mod_sub(pw_idx(resv), pw_bytes(hn), g->wb) + m.payload_len > g->bytes)
			return "payload outside the reserved bytes";
		*hw = hn;
	}
	if (m.member_row != cw_row(v) || (m.member_gen & CW_GEN_MASK) != cw_gen(v) ||
	    m.member_row >= h->q->producer_rows)
		return "producer fields disagree with the claim";
	if (m.kind == ORBIT_SPOTQ_KIND_TIMER &&
	    (!m.target.timer_name[0] ||
	     !memchr(m.target.timer_name, '\0', sizeof(m.target.timer_name))))
		return "timer name not terminated";
	if (m.payload_len > room)
		return "no room in the caller's buffer";
	at = byte_at(g, pw_idx(resv));
	n1 = m.payload_len < g->bytes - at ? m.payload_len : g->bytes - at;
	if (n1)
		memcpy(dst, g->data + at, n1);
	if (m.payload_len - n1)
		memcpy(dst + n1, g->data, m.payload_len - n1);
	if (record_sum(pos, &m, dst, m.payload_len) != m.checksum)
		return "checksum mismatch (torn or overwritten record)";
	rec->lane = lane;
	rec->kind = m.kind;
	rec->pos = pos;
	rec->payload_len = m.payload_len;
	rec->member_row = m.member_row;
	rec->member_gen = m.member_gen;
	rec->producer_seq = m.producer_seq;
	rec->submit_ns = m.submit_ns;
	rec->submit_exact = m.submit_ns & 1u; /* stamp_of() */
	rec->host_epoch = h->epoch;
	rec->actor_id = m.kind == ORBIT_SPOTQ_KIND_ACTOR ? m.target.actor_id : 0;
	rec->timer_name[0] = '\0';
	if (m.kind == ORBIT_SPOTQ_KIND_TIMER)
		memcpy(rec->timer_name, m.target.timer_name, sizeof(rec->timer_name));
	rec->payload = dst;
	return NULL;
}

/*
 * The tail for take()'s slow path. SQ-A4: acquire, pairs with SQ-R2: the
 * resv of every slot it passed. Checked against the head *@hw (read at the
 * start of the take): a head that another thread advanced since is read
 * again (SQ-A7) before the tail is called outside its window.
 * Returns 0 with *@t, 1 when the head moved (*@hw is the new one: decide
 * again), or -ORBIT_ECORRUPT.
 */
static int take_tail(const struct lane_geo *g, uint64_t *hw, uint64_t *t)
{
	uint64_t hn;

	*t = atomic_load_explicit(&g->w->tail, memory_order_acquire);
	if (pw_idx(*t) >= g->wi || pw_bytes(*t) >= g->wb)
		return -ORBIT_ECORRUPT;
	if (mod_sub(pw_idx(*t), pw_idx(*hw), g->wi) <= g->items)
		return 0;
	/* SQ-A7: acquire, pairs with SQ-R5 */
	hn = atomic_load_explicit(&g->w->head, memory_order_acquire);
	if (hn == *hw || pw_idx(hn) >= g->wi || pw_bytes(hn) >= g->wb)
		return -ORBIT_ECORRUPT;
	*hw = hn;
	return 1;
}

/*
 * take()'s best known tail: @c, a tail word value the tail held, if it lies
 * further from @base (the cursor this take started from) than *@seen. A
 * value behind @base (more than a lap "ahead" of it) is never taken: it
 * would read as the furthest of all. Returns true when *@seen changed.
 */
static inline bool tail_note(const struct lane_geo *g, uint32_t base, uint64_t c, uint64_t *seen,
			     bool *have)
{
	uint64_t d = mod_sub(pw_idx(c), base, g->wi);

	if (pw_idx(c) >= g->wi || d > g->items)
		return false;
	if (!*have || d > mod_sub(pw_idx(*seen), base, g->wi)) {
		*seen = c;
		*have = true;
		return true;
	}
	return false;
}

/*
 * May take() read the tail at the unclaimed-looking cursor of @lane now?
 * At most once per STALL_POLL_NS, and the clock is read only at every
 * EMPTY_LOOK_EVERY-th empty-looking take (the first at once): a clock
 * read at every one left the transport bench's host behind its producer
 * in 9 of 12 invocations against main's 1 (loaded p50 median 33 us
 * against 7; doc/spot-queues.md, "The host off the producers' tail
 * line").
 */
static bool empty_look_due(orbit_spotq_host_t *h, uint32_t lane)
{
	uint64_t now;

	if (h->empty_takes[lane]++ % EMPTY_LOOK_EVERY)
		return false;
	now = orbit__now_mono_ns();
	if (h->empty_look_ns[lane] && now - h->empty_look_ns[lane] < (uint64_t)STALL_POLL_NS)
		return false;
	h->empty_look_ns[lane] = now;
	return true;
}

/*
 * The record at @cur is claimed (@v) and not committed: start its stall
 * clock when it is new, and judge its claimer (*@dead: proven dead).
 * Returns true while the lane must wait for it (alive and within the
 * unblock bound), false when it is to be aborted.
 */
static bool claim_waits(orbit_spotq_host_t *h, uint32_t lane, uint32_t cur, uint64_t v, bool *dead)
{
	uint64_t now = orbit__now_mono_ns();

	if (h->stall_since[lane] == 0 || h->stall_pos[lane] != cur) {
		h->stall_pos[lane] = cur;
		h->stall_since[lane] = now;
	}
	*dead = orbit__spotq_claimer_dead(h, v);
	return !*dead && now - h->stall_since[lane] < (uint64_t)h->q->unblock_ms * 1000000ull;
}

int orbit__spotq_take(orbit_spotq_host_t *h, uint32_t lane, struct orbit_spotq_rec *recs,
		      unsigned max, void *buf, size_t buf_len)
{
	struct lane_geo *g;
	uint8_t *out = buf;
	size_t used = 0;
	unsigned n = 0;
	uint32_t cur, base, at;
	uint64_t t = 0, hw, seen, judged = 0;
	bool resolved = false, have_seen, seen_new = false, have_judged = false, dead = false;
	/*
	 * For the position `at`: the tail must be read before it is resolved
	 * (confirm); it was read and had passed it (past)
	 */
	bool confirm = false, past = false;
	int r = orbit__spotq_host_check(h, lane);

	if (r < 0)
		return r;
	if ((max && !recs) || (buf_len && !buf))
		return -EINVAL;
	g = &h->q->lane[lane];
	cur = h->cursor[lane];
	/* SQ-A7: acquire, pairs with SQ-R5 */
	hw = atomic_load_explicit(&g->w->head, memory_order_acquire);
	if (pw_idx(hw) >= g->wi || pw_bytes(hw) >= g->wb)
		return -ORBIT_ECORRUPT;
	/*
	 * The cursor never passes the tail, and the tail is at most a lap
	 * (items) ahead of the head: a cursor further than that from the head
	 * is behind it (W is at least 65,536 laps: no ambiguity).
	 */
	if (mod_sub(cur, pw_idx(hw), g->wi) > g->items)
		cur = pw_idx(hw); /* the head passed our cursor (records done before us) */
	base = cur;
	at = cur;
	/*
	 * The tail this host knows (SQ-A9: acquire, pairs with SQ-R8): a value
	 * the tail word held, read or derived from a chain of validated records
	 * that starts at one read. A record at its index must start at its
	 * bytes (the tail CAS that passed the record before it wrote them),
	 * and only such a record extends it (H2 of the sq-lines review).
	 */
	seen = atomic_load_explicit(&h->tail_seen[lane], memory_order_acquire);
	have_seen = pw_idx(seen) < g->wi && mod_sub(pw_idx(seen), base, g->wi) <= g->items;

	while (n < max) {
		struct orbit_spotq_slot *s = slot_at(g, cur);
		_Atomic uint64_t *aw = ack_at(g, cur);
		/*
		 * SQ-A5: acquire, pairs with SQ-R3 (and SQ-R1, SQ-R4). COMMITTED
		 * or ABORTED for this lap: the tail passed the slot and its resv
		 * is visible (SQ-V1), so the tail is not read (the producers'
		 * line: each read made their next tail CAS wait for it) unless
		 * the record is to be resolved as aborted or corrupt (confirm).
		 */
		uint64_t v = atomic_load_explicit(&s->commit, memory_order_acquire);
		uint64_t a, resv;
		uint32_t rlen;
		const char *why;

		if (at != cur) {
			at = cur;
			confirm = past = false;
		}
		if (cw_pos(v) != cur ||
		    (cw_state(v) != CW_COMMITTED && cw_state(v) != CW_ABORTED) ||
		    (confirm && !past)) {
			/*
			 * The slow path: a record in progress, an empty lane, bad
			 * bytes, or a record to be resolved as aborted or corrupt.
			 */
			bool unclaimed = cw_state(v) == CW_FREE ||
					 cw_pos(v) == mod_sub(cur, g->items, g->wi);

			if (cw_pos(v) == cur && cw_state(v) == CW_CLAIMED) {
				judged = v;
				have_judged = true;
				if (claim_waits(h, lane, cur, v, &dead))
					break; /* alive and within the bound: the lane waits for it */
			} else if (unclaimed &&
				   !(h->suspect[lane] && h->suspect_pos[lane] == cur) &&
				   !empty_look_due(h, lane)) {
				break; /* nothing claimed here: the tail cannot have passed it */
			}
			r = take_tail(g, &hw, &t);
			if (r < 0) {
				h->cursor[lane] = cur;
				return n ? (int)n : r;
			}
			if (r > 0) {
				if (mod_sub(cur, pw_idx(hw), g->wi) > g->items)
					cur = pw_idx(hw);
				continue;
			}
			seen_new |= tail_note(g, base, t, &seen, &have_seen);
			if (!tail_past(g, t, cur)) {
				if (cur == pw_idx(t) && !unclaimed) {
					if (cw_pos(v) == cur) {
						/*
						 * Claimed for this lap at the tail: a claimer dead
						 * or stopped past the bound between its claim and
						 * its tail CAS, or bad bytes that read COMMITTED or
						 * ABORTED (no producer can claim the slot then).
						 * Advance the tail for it as a producer would
						 * (submit() helps any claimed word at the tail),
						 * then judge the slot again
						 */
						orbit__spotq_help_tail(h->q, g, lane, t, v);
						/* SQ-A4 again, after helping */
						if (atomic_load_explicit(&g->w->tail,
									 memory_order_acquire) != t)
							continue;
					} else if (atomic_compare_exchange_strong_explicit(
						       &s->commit, &v, 0, memory_order_acq_rel,
						       memory_order_relaxed)) {
						/*
						 * Neither claimed at the tail nor the previous lap: no
						 * producer can claim it (their CAS expects one of the
						 * two), so the lane would refuse every submission for
						 * good. Only bad bytes leave this; reset it to FREE
						 * (counted). The CAS fails if the word changed since.
						 */
						corrupt(h, g, lane, cur,
							"slot at the tail in no lap: reset");
					}
				}
				/*
				 * The tail confirms: nothing more here. (A tail behind the
				 * cursor is never passed: the cursor waits for it.)
				 */
				break;
			}
			past = true;
			/* SQ-A5 again, read after the tail (SQ-A4) that passed the slot */
			v = atomic_load_explicit(&s->commit, memory_order_acquire);
		}
		/* SQ-C1: acquire, pairs with SQ-C1: the ack CASes (ours, a takeover's) */
		a = atomic_load_explicit(aw, memory_order_acquire);
		/* relaxed: ordered by SQ-A5 (SQ-V1) or, on the slow path, SQ-A4 */
		resv = atomic_load_explicit(&s->resv, memory_order_relaxed);
		rlen = pw_bytes(resv);

		if (aw_gen(a) != (h->gen & AW_GEN_MASK)) {
			r = orbit__spotq_ack_foreign(h, g, aw, &a);
			if (r < 0) {
				h->cursor[lane] = cur;
				return n ? (int)n : r;
			}
			continue;
		}
		if (aw_pos(a) == cur && aw_state(a) > AW_REDELIVER) {
			why = "acknowledgement word in no known state";
			goto bad;
		}
		if (aw_pos(a) == cur && aw_state(a) != AW_NONE && aw_state(a) != AW_REDELIVER) {
			resolved =
			    true; /* done (or taken) under this or an older host: never again */
			goto next;
		}
		if (cw_pos(v) != cur || cw_state(v) == CW_FREE) {
			why = "slot not claimed for its lap";
			goto bad;
		}
		if (cw_state(v) == CW_CLAIMED) {
			if (!have_judged || judged != v) {
				judged = v;
				have_judged = true;
				if (claim_waits(h, lane, cur, v, &dead))
					break;
			}
			/* SQ-R4: acq_rel CAS; the producer's SQ-R3 commit or this abort wins */
			if (!atomic_compare_exchange_strong_explicit(
				&s->commit, &v, cw_with_state(v, CW_ABORTED), memory_order_acq_rel,
				memory_order_acquire))
				continue; /* it committed meanwhile: look again */
			atomic_fetch_add_explicit(&g->w->aborted, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(dead ? &h->aborted_dead[lane]
						       : &h->aborted_unblock[lane],
						  1, memory_order_relaxed);
			h->stall_since[lane] = 0;
			have_judged = false;
			goto resolve; /* past: this path read the tail */
		}
		if (cw_state(v) == CW_ABORTED) {
			why = NULL;
			goto bad;
		}
		/* COMMITTED */
		if (rlen <= g->bytes && rlen > buf_len - used) {
			if (n == 0 && rlen > buf_len) {
				h->cursor[lane] = cur;
				return -ENOBUFS;
			}
			break;
		}
		if (have_seen && pw_idx(seen) == cur && pw_idx(resv) != pw_bytes(seen))
			/*
			 * The tail word at cur held (cur, B): every record's resv
			 * starts where the tail CAS that passed the one before it
			 * ended (SQ-V1). A zero-length record, or bytes that repeat,
			 * would pass the checksum at a wrong offset.
			 */
			why = "reservation not where the record before it ended";
		else
			why = copy_out(h, g, lane, cur, v, s, resv, &hw, &recs[n], out + used,
				       buf_len - used);
		if (why)
			goto bad;
		{
			bool redeliv = aw_pos(a) == cur && aw_state(a) == AW_REDELIVER;
			r = orbit__spotq_ack_set(h, aw, &a, cur, AW_TAKEN, redeliv);
			if (r == -EAGAIN)
				continue; /* the word changed: this record again */
			if (r < 0) {
				h->cursor[lane] = cur;
				return n ? (int)n : r;
			}
			recs[n].redelivered = redeliv;
			if (redeliv)
				atomic_fetch_add_explicit(&g->w->redelivered, 1,
							  memory_order_relaxed);
		}
		used += recs[n].payload_len; /* validated: equal to the reservation */
		n++;
		/*
		 * The tail word at cur + 1 held (cur + 1, end of this record): the
		 * value of the tail CAS that passed the slot (SQ-V1); a validated
		 * record's resv is that CAS's, so advance() may stop its walk and
		 * take the head's bytes from it without reading the tail. Derived
		 * only from a record that starts at the known tail (checked
		 * above): a record whose offset nobody vouched for could carry a
		 * wrong one and make the head pass the real tail's bytes.
		 */
		if (have_seen && pw_idx(seen) == cur)
			seen_new |= tail_note(g, base,
					      pw_make((uint32_t)mod_add(cur, 1, g->wi),
						      (uint32_t)mod_add(pw_idx(resv), rlen, g->wb)),
					      &seen, &have_seen);
		goto next;
	bad:
		/*
		 * Aborted or corrupt, decided without the tail so far: a slot
		 * whose commit word lies (COMMITTED or ABORTED for its lap at the
		 * tail) would move the cursor past the tail. Read the tail first
		 * (the slow path above: rare), and resolve only once it passed
		 * the slot (H1 of the sq-lines review).
		 */
		if (!past) {
			confirm = true;
			continue;
		}
		if (why)
			corrupt(h, g, lane, cur, why);
	resolve:
		/* aborted or corrupt: DONE, its reservation comes back with the head */
		r = orbit__spotq_ack_set(h, aw, &a, cur, AW_DONE, false);
		if (r == -EAGAIN)
			continue; /* the word changed: this record again */
		if (r < 0) {
			h->cursor[lane] = cur;
			return n ? (int)n : r;
		}
		resolved = true;
	next:
		cur = (uint32_t)mod_add(cur, 1, g->wi);
		h->suspect[lane] = false;
	}
	h->cursor[lane] = cur;
	if (seen_new)
		/* SQ-R8: release, pairs with SQ-A9: what SQ-A4 or SQ-A5 saw comes with it */
		atomic_store_explicit(&h->tail_seen[lane], seen, memory_order_release);
	if (!resolved) {
		bool gone = false;
		/* an aborted record holds the head: its producer may have retired since */
		resolved = orbit__spotq_head_aborted(h, lane, &gone) && gone;
	}
	if (resolved) {
		r = orbit__spotq_advance(h, lane);
		if (r == -ORBIT_EFENCED && n == 0)
			return r;
	}
	return (int)n;
}
