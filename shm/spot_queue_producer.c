// SPDX-License-Identifier: MIT
/*
 * shm/spot_queue_producer.c: the producers of the cross-process Spot
 * queue: a producer's row (open, close), and submit: the room check on a
 * remembered head, ONE CAS admission at the tail, the claimer's own tail
 * advance, the copy into the byte ring, the checksum, the release commit
 * and the coalesced doorbell; and the wait for room. Every ordering label
 * of the queue is in the table of shm/spot_queue_internal.h.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <orbit/error.h>
#include "base/fork_guard.h"
#include "shm/crashpoint.h"
#include "shm/spot_queue_internal.h"

#define COPY_CHUNK 1024u /* a stalled producer re-checks its claim between chunks */
/*
 * A producer's remembered head decides room for this long at most, by
 * CLOCK_MONOTONIC_COARSE (so really for this plus the coarse clock's lag,
 * about a tick: 4 ms here, 8.5 ms seen on a loaded guest): only after a
 * whole lap of positions (a modulus: more than 2^32 - 65,536 records, or
 * 2^32 - 64 MiB bytes) can a head that old show room again, and no lane
 * moves that much in a second, let alone in a few ms.
 */
#define HEAD_KEEP_NS 1000000ull
/*
 * submit_ns is exact (CLOCK_MONOTONIC, bit 0 set) on the first record of
 * a producer in each coarse clock tick and on at least every
 * STAMP_EXACT_EVERY-th record; the others carry the coarse clock (bit 0
 * clear), early by the time since the kernel's last tick (stamp_of()).
 */
#define STAMP_EXACT_EVERY 16u
/* submit() asks for the slot this many ahead of its own (prefetch_w()) */
#define PREFETCH_SLOTS 4u
/*
 * wait_room()'s poll before it announces a sleep (room_poll()): a look at
 * the lane's head and tail every ROOM_LOOK_NS (the spin between looks
 * reads no shared line), for a budget adapted as the host's poll is
 * (orbit__spotq_poll_next(): twice the last wait when room came within
 * 20 us, else halved; none after a preemption until a short wait again).
 * A gap of more than ROOM_GAP_NS between two looks means this thread was
 * preempted: it sleeps. A host that keeps completing frees room every
 * batch, microseconds apart, and a producer that slept for it cost the
 * host a FUTEX_WAKE per batch (its announce makes the freeing advance
 * ring) and itself a wake-up; one that shares its CPU with the host finds
 * no room while it spins, and its budget falls to nothing.
 */
#define ROOM_LOOK_NS 2000ull
#define ROOM_GAP_NS 20000ull
#define ROOM_POLL_START_NS 5000ull

/*
 * Prefetch the cache line at @p for writing (x86 PREFETCHW, a NOP where
 * the CPU lacks it): the line comes over exclusively in the background.
 */
static inline void prefetch_w(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("prefetchw %0" ::"m"(*(const char *)p));
#else
	__builtin_prefetch(p, 1, 3);
#endif
}

/*
 * The claimer's own tail advance past its slot @s at tail @t, @len bytes:
 * orbit__spotq_help_tail() without the helper's care. The claimer is never late for
 * its own slot: the tail may pass it (a helper writes the same resv), but
 * the slot is not reused before this record is committed or retired, so
 * a plain store of resv cannot land on a later lap, and a helper's resv
 * CAS on the same values fails or writes what this store writes.
 */
static void own_tail(struct lane_geo *g, struct orbit_spotq_slot *s, uint64_t t, uint32_t len)
{
	uint32_t T = pw_idx(t), B = pw_bytes(t);
	uint64_t nt;

	/* SQ-A2: acquire, pairs with SQ-R2: a helper that moved it wrote our resv */
	if (atomic_load_explicit(&g->w->tail, memory_order_acquire) != t)
		return; /* helped already */
	/* relaxed: published by the tail CAS's release below (SQ-R2) */
	atomic_store_explicit(&s->resv, pw_make(B, len), memory_order_relaxed);
	nt = pw_make((uint32_t)mod_add(T, 1, g->wi), (uint32_t)mod_add(B, len, g->wb));
	/* SQ-R2: release, pairs with SQ-A2/SQ-A4: resv before the tail passes the slot */
	atomic_compare_exchange_strong_explicit(&g->w->tail, &t, nt, memory_order_release,
						memory_order_relaxed);
}

/* ---- producers ---- */

int orbit__spotq_producer_open(orbit_spotq_producer_t **out, orbit_spotq_t *q, orbit_members_t *m)
{
	orbit_spotq_producer_t *p;
	struct orbit_spotq_row *rw;
	uint32_t gen;
	uint64_t own, mine;
	int row;

	if (!out || !q || !m)
		return -EINVAL;
	if (orbit__fork_check(q->pid))
		return -ECHILD;
	if (q->seg.readonly)
		return -EROFS;
	row = orbit__members_self(m, &gen);
	if (row < 0)
		return row;
	if ((uint32_t)row >= q->producer_rows)
		return -ERANGE;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	rw = &q->rows[row];
	mine = (uint64_t)gen << 32 | 1u;
	/* SQ-O1: acquire, pairs with SQ-O2: a previous tenure's row words before reuse */
	own = atomic_load_explicit(&rw->owner, memory_order_acquire);
	for (;;) {
		if (own == mine) {
			free(p);
			return -EBUSY;
		}
		if (atomic_compare_exchange_weak_explicit(
			&rw->owner, &own, mine, memory_order_acq_rel, memory_order_acquire))
			break;
	}
	if ((uint32_t)(own >> 32) != gen) /* a new tenure: sequence restarts */
		atomic_store_explicit(&rw->seq, 0, memory_order_relaxed);
	atomic_store_explicit(&rw->pid, (uint32_t)getpid(), memory_order_relaxed);
	p->q = q;
	p->row = rw;
	p->row_idx = (uint32_t)row;
	p->gen = gen;
	/* relaxed: this row is ours from the CAS on */
	p->seq = atomic_load_explicit(&rw->seq, memory_order_relaxed);
	p->pid = orbit__self_pid();
	orbit__spotq_producer_set_poll(p, -1);
	*out = p;
	return 0;
}

void orbit__spotq_producer_close(orbit_spotq_producer_t *p)
{
	if (!p)
		return;
	if (orbit__fork_check(p->pid) == 0) {
		uint64_t mine = (uint64_t)p->gen << 32 | 1u;
		/* SQ-O2: release, pairs with SQ-O1: our claims and seq before "closed" */
		atomic_compare_exchange_strong_explicit(&p->row->owner, &mine, mine & ~1ull,
							memory_order_release, memory_order_relaxed);
	}
	free(p);
}

/*
 * libc's memcpy under another name, so that the compiler calls it instead
 * of expanding the call inline. copy_in()'s chunks are at most COPY_CHUNK
 * bytes, and gcc (12, -O2, x86-64) expands a memcpy whose length it knows
 * to be at most 8 KiB as REP MOVSQ with an alignment prologue: for a 64-byte
 * record that is slower than libc's vector copy (see the commit that
 * brought this in for the figures). An asm label, not a builtin: gcc
 * knows nothing of it (clang recognises the symbol as memcpy, but with a
 * length it cannot bound it emits the call too), and sanitizers still see
 * a call to memcpy. Under LTO gcc might merge it with the builtin again:
 * only the speed would change.
 */
extern void *libc_memcpy(void *restrict dst, const void *restrict src, size_t n) __asm__("memcpy");

/* Copy @n bytes into the lane's byte ring at @off, re-checking our claim per chunk. */
static bool copy_in(struct lane_geo *g, struct orbit_spotq_slot *s, uint64_t mine, uint32_t off,
		    const uint8_t *src, uint32_t n)
{
	uint32_t done = 0;

	while (done < n) {
		uint32_t at = byte_at(g, off + (uint64_t)done);
		uint32_t k = n - done;

		if (k > COPY_CHUNK)
			k = COPY_CHUNK;
		if (k > g->bytes - at)
			k = g->bytes - at;
		/* relaxed: a stalled producer's early exit; the commit CAS decides */
		if (atomic_load_explicit(&s->commit, memory_order_relaxed) != mine)
			return false;
		libc_memcpy(g->data + at, src + done, k);
		done += k;
		if (done < n)
			ORBIT_CRASHPOINT("spotq.mid_copy");
	}
	return true;
}

/*
 * The producer's last SHM store for the record at @T: RETIRED in its row
 * claim. SQ-R6: release, pairs with SQ-A8 in advance(): every store of this
 * record (meta, checksum, payload, even after an abort) comes before the
 * host may hand the slot and its bytes to another record. Returns @rc.
 */
static int retire(orbit_spotq_producer_t *p, uint32_t lane, uint32_t T, uint32_t len, int rc)
{
	atomic_store_explicit(&p->row->claim[lane], pw_make(T, len) | CLAIM_RETIRED,
			      memory_order_release);
	return rc;
}

/*
 * +1 on a counter of the producer's row. The row's producer is its only
 * writer (one open producer per tenure, used by one thread at a time; a
 * new tenure takes the row over by the owner CAS, SQ-O1, after the old one
 * closed or died), so a relaxed load and store do it without a locked
 * read-modify-write on every submit. Readers (counters()) load relaxed.
 */
static inline void row_count(_Atomic uint64_t *c)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/*
 * The head this producer decides room on: the one it read last while that
 * is younger than HEAD_KEEP_NS (@now: this submit's clock read), else a
 * fresh one. Returns the head word.
 */
static inline uint64_t head_get(orbit_spotq_producer_t *p, struct lane_geo *g, int lane,
				uint64_t now)
{
	if (p->head_ns[lane] && now - p->head_ns[lane] < HEAD_KEEP_NS)
		return p->head_seen[lane];
	/* SQ-A1: acquire, pairs with SQ-R5: the host is done with what it freed */
	p->head_seen[lane] = atomic_load_explicit(&g->w->head, memory_order_acquire);
	p->head_ns[lane] = now;
	return p->head_seen[lane];
}

/*
 * The remembered head @used does not show room (or lies out of the
 * tail's window): read the head again (SQ-A1). Returns true when it moved
 * (decide again on the fresh one), false when @used was the head already
 * (the verdict stands: every "full" and "corrupt" is decided on a fresh head).
 */
static bool head_refresh(orbit_spotq_producer_t *p, struct lane_geo *g, int lane, uint64_t used,
			 uint64_t now)
{
	/* SQ-A1: acquire, pairs with SQ-R5: the host is done with what it freed */
	uint64_t h = atomic_load_explicit(&g->w->head, memory_order_acquire);

	p->head_seen[lane] = h;
	p->head_ns[lane] = now;
	return h != used;
}

/*
 * The record's submit_ns from @coarse (this submit's CLOCK_MONOTONIC_COARSE
 * read): an exact CLOCK_MONOTONIC read with bit 0 set on the first record
 * of @p in a new tick and on every STAMP_EXACT_EVERY-th, else @coarse with
 * bit 0 clear (the same clock at the kernel's last tick: never later
 * than the submit; one tick earlier at most while ticks come on time, 8.5
 * ms seen at a 4 ms tick on a loaded guest). The exact read was a quarter of the
 * producer's CPU per record; the submit-to-run histogram counts the exact
 * stamps only (orbit_spotq_rec.submit_exact).
 */
static inline uint64_t stamp_of(orbit_spotq_producer_t *p, uint64_t coarse)
{
	if (coarse == p->stamp_tick && ++p->since_exact < STAMP_EXACT_EVERY)
		return coarse & ~1ull;
	p->stamp_tick = coarse;
	p->since_exact = 0;
	return orbit__now_mono_ns() | 1u;
}

/* A retry that sees the same head and tail 1,000 times in a row: the bytes lie. */
struct retry {
	uint64_t h, t;
	int n;
};

static bool stuck(struct retry *r, uint64_t h, uint64_t t)
{
	r->n = r->h == h && r->t == t ? r->n + 1 : 0;
	r->h = h;
	r->t = t;
	return r->n > 1000;
}

int orbit__spotq_submit(orbit_spotq_producer_t *p, const struct orbit_spotq_submit *sub,
			uint64_t *seq_out)
{
	orbit_spotq_t *q;
	struct lane_geo *g;
	struct orbit_spotq_slot *s;
	uint64_t h, t, v, mine, seq;
	struct retry st = { UINT64_MAX, UINT64_MAX, 0 };
	uint32_t T, B, len, tn = 0;
	uint64_t now, used = 0;
	int lane;

	if (!p || !sub)
		return -EINVAL;
	if (orbit__fork_check(p->pid))
		return -ECHILD;
	lane = lane_of_kind(sub->kind);
	if (lane < 0 || (sub->len && !sub->payload))
		return -EINVAL;
	if (sub->kind == ORBIT_SPOTQ_KIND_TIMER) {
		if (!sub->timer_name || !sub->timer_name[0])
			return -EINVAL;
		tn = (uint32_t)strnlen(sub->timer_name, ORBIT_SPOTQ_TIMER_NAME_MAX + 1);
		if (tn > ORBIT_SPOTQ_TIMER_NAME_MAX)
			return -E2BIG;
	}
	q = p->q;
	g = &q->lane[lane];
	len = sub->len;
	if (len > g->bytes)
		return -E2BIG;
	/* the remembered head's age, and the record's submit_ns (stamp_of()) */
	now = orbit__clock_ns(CLOCK_MONOTONIC_COARSE);

	for (;;) {
		/*
		 * The head this producer read last, while it is young (head_get):
		 * slots and bytes below it were freed, and that read's SQ-A1
		 * acquire saw the host done with them; the head never moves back,
		 * so an older value only under-counts room (less than a lap old:
		 * HEAD_KEEP_NS). Every "no room" or out-of-window verdict is made
		 * again on a fresh head before it counts (head_refresh).
		 */
		h = head_get(p, g, lane, now);
		/* SQ-A2: acquire, pairs with SQ-R2: the tail's slot is at least claimed */
		t = atomic_load_explicit(&g->w->tail, memory_order_acquire);
		T = pw_idx(t);
		B = pw_bytes(t);
		if (T >= g->wi || B >= g->wb || pw_idx(h) >= g->wi || pw_bytes(h) >= g->wb) {
			if (head_refresh(p, g, lane, h, now))
				continue;
			return -ORBIT_ECORRUPT;
		}
		uint64_t used_i = mod_sub(T, pw_idx(h), g->wi);
		uint64_t used_b = mod_sub(B, pw_bytes(h), g->wb);

		used = used_i;
		if (used_i > g->items || used_b > g->bytes) {
			if (head_refresh(p, g, lane, h, now))
				continue; /* our head is older than the tail's lap window */
			/* a head read long before the tail (preempted), or bad bytes */
			if (stuck(&st, h, t))
				return -ORBIT_ECORRUPT;
			continue;
		}
		s = slot_at(g, T);
		/* SQ-A3: acquire, pairs with SQ-R1: a claimer's row claim before its slot */
		v = atomic_load_explicit(&s->commit, memory_order_acquire);
		if (cw_state(v) != CW_FREE && cw_pos(v) == T) {
			orbit__spotq_help_tail(q, g, (uint32_t)lane, t,
					       v); /* claimed: move the tail on */
			continue;
		}
		if (cw_state(v) != CW_FREE && cw_pos(v) != mod_sub(T, g->items, g->wi)) {
			/* Not the previous lap: our tail read is stale, or the bytes are bad. */
			if (stuck(&st, h, t))
				return -ORBIT_ECORRUPT;
			continue;
		}
		if (used_i >= g->items) {
			if (head_refresh(p, g, lane, h, now))
				continue;
			row_count(&p->row->rejected_count[lane]);
			return -EAGAIN;
		}
		if (used_b + len > g->bytes) {
			if (head_refresh(p, g, lane, h, now))
				continue;
			row_count(&p->row->rejected_bytes[lane]);
			return -EAGAIN;
		}
		/*
		 * SQ-R7: release, pairs with SQ-A6 in orbit__spotq_help_tail(): our previous
		 * record's tail CAS before this claim replaces its row claim
		 */
		atomic_store_explicit(&p->row->claim[lane], pw_make(T, len), memory_order_release);
		mine = cw_make(T, CW_CLAIMED, p->row_idx, p->gen);
		/*
		 * THE admission step (07 §6.3): capacity was checked against tail
		 * (T, B), which cannot move before slot T is claimed; this CAS
		 * claims it and fixes the lane sequence number T.
		 * SQ-R1: acq_rel, pairs with SQ-A3/SQ-A5.
		 */
		if (atomic_compare_exchange_strong_explicit(
			&s->commit, &v, mine, memory_order_acq_rel, memory_order_relaxed))
			break;
	}
	seq = ++p->seq;
	atomic_store_explicit(&p->row->seq, seq, memory_order_relaxed);
	ORBIT_CRASHPOINT("spotq.after_claim");
	own_tail(g, s, t, len);

	s->producer_seq = seq;
	s->submit_ns = stamp_of(p, now); /* accepted records only count for the sample */
	s->kind = sub->kind;
	s->payload_len = len;
	s->member_row = p->row_idx;
	s->member_gen = p->gen;
	/* the slot's second line only for the kinds that have a target (target_len()) */
	if (sub->kind == ORBIT_SPOTQ_KIND_ACTOR) {
		s->target.actor_id = sub->actor_id;
	} else if (sub->kind == ORBIT_SPOTQ_KIND_TIMER) {
		memset(&s->target, 0, sizeof(s->target));
		memcpy(s->target.timer_name, sub->timer_name, tn);
	}
	if (!copy_in(g, s, mine, B, sub->payload, len))
		return retire(p, (uint32_t)lane, T, len, -ECANCELED);
	s->checksum = record_sum(T, s, sub->payload, len);
	ORBIT_CRASHPOINT("spotq.before_commit");
	/*
	 * SQ-R3: release (seq_cst for SQ-F1), pairs with SQ-A5 in take(): every
	 * byte before COMMITTED
	 */
	if (!atomic_compare_exchange_strong_explicit(&s->commit, &mine,
						     cw_with_state(mine, CW_COMMITTED),
						     memory_order_seq_cst, memory_order_relaxed))
		return retire(p, (uint32_t)lane, T, len, -ECANCELED); /* SQ-R4 won */
	retire(p, (uint32_t)lane, T, len, 0);
	row_count(&p->row->accepted[lane]);
	/*
	 * The next records of this lane most likely go to slots T + 1, T + 2,
	 * ... and to the bytes after ours: ask for those lines exclusively
	 * now, so that the claim CAS and the copy do not stall on taking them
	 * back from the host CPU, which read them a lap ago (a hint: no order,
	 * no effect on the words; a wrong guess costs one line). The slot
	 * PREFETCH_SLOTS ahead, not the next one: between this commit and the
	 * next claim there is less time than a line takes to come back across
	 * CPUs, and the claim CAS waited for the rest (measured: the claim CAS
	 * took 32% of submit's samples one slot ahead, 17% four ahead). Only
	 * while that slot's previous lap is freed by the head this submit
	 * decided on: else the host may still read it (a full lane), and the
	 * next slot is asked for as before.
	 */
	prefetch_w(slot_at(
	    g, (uint32_t)mod_add(T, used + PREFETCH_SLOTS < g->items ? PREFETCH_SLOTS : 1, g->wi)));
	prefetch_w(g->data + byte_at(g, (uint64_t)B + len));
	if (seq_out)
		*seq_out = seq;
	/* SQ-F1: seq_cst load after the seq_cst commit, pairs with SQ-D1 (the Dekker read) */
	if (atomic_load_explicit(&q->shm->rec_db.sleeping, memory_order_seq_cst))
		/*
		 * The ring clears the bits it wakes (DB-D2), so the next submits
		 * make no syscall while the woken host is not running yet; a bit
		 * of a newer announce cleared by a stale ring is covered by the
		 * doorbell's second bump (DB-D5).
		 */
		orbit__doorbell_ring(&q->shm->rec_db);
	return 0;
}

/* Room for one item and @len bytes on @g right now? */
static bool has_room(struct lane_geo *g, uint32_t len)
{
	/* seq_cst: the Dekker re-check of SQ-D2 */
	uint64_t h = atomic_load_explicit(&g->w->head, memory_order_seq_cst);
	uint64_t t = atomic_load_explicit(&g->w->tail, memory_order_seq_cst);

	return mod_sub(pw_idx(t), pw_idx(h), g->wi) < g->items &&
	       mod_sub(pw_bytes(t), pw_bytes(h), g->wb) + len <= g->bytes;
}

void orbit__spotq_producer_set_poll(orbit_spotq_producer_t *p, int64_t budget_ns)
{
	if (!p)
		return;
	p->room_fixed = budget_ns >= 0;
	/* CPUs online, not this thread's affinity: the host is another process */
	p->room_adapt = !p->room_fixed && sysconf(_SC_NPROCESSORS_ONLN) > 1;
	p->room_poll_ns = p->room_fixed	  ? (uint64_t)budget_ns
			  : p->room_adapt ? ROOM_POLL_START_NS
					  : 0;
}

uint64_t orbit__spotq_producer_poll_budget(const orbit_spotq_producer_t *p)
{
	return p ? p->room_poll_ns : 0;
}

/*
 * Poll @g for room for one item and @len bytes for up to @budget_ns from
 * @t0. No announce: the host rings nobody meanwhile. Returns the time
 * from @t0 to the look that saw room, or UINT64_MAX when the budget was
 * spent or (unless @fixed) a gap past ROOM_GAP_NS showed this thread was
 * preempted (*@preempted).
 */
static uint64_t room_poll(struct lane_geo *g, uint32_t len, uint64_t budget_ns, uint64_t t0,
			  bool fixed, bool *preempted)
{
	if (has_room(g, len))
		return 0; /* freed since the caller's -EAGAIN */
	for (uint64_t now = t0;;) {
		uint64_t prev = now;

		now = spin_look(prev, ROOM_LOOK_NS);
		if (now - prev > ROOM_GAP_NS && !fixed) {
			*preempted = true; /* another thread wants this CPU */
			return UINT64_MAX;
		}
		if (has_room(g, len))
			return now - t0;
		if (now - t0 >= budget_ns)
			return UINT64_MAX;
	}
}

int orbit__spotq_wait_room(orbit_spotq_producer_t *p, uint32_t lane, uint32_t len,
			   int64_t timeout_ns)
{
	struct orbit_doorbell *db;
	struct lane_geo *g;
	uint64_t t0 = 0;
	uint32_t seen;
	bool adapt;
	int r;

	if (!p || lane >= ORBIT_SPOTQ_LANES)
		return -EINVAL;
	if (orbit__fork_check(p->pid))
		return -ECHILD;
	g = &p->q->lane[lane];
	if (len > g->bytes)
		return -E2BIG; /* as submit answers: no room ever comes for it */
	adapt = p->room_adapt && timeout_ns != 0;
	if (p->room_poll_ns && timeout_ns != 0) {
		uint64_t budget = timeout_ns > 0 && (uint64_t)timeout_ns < p->room_poll_ns
				      ? (uint64_t)timeout_ns
				      : p->room_poll_ns;
		bool preempted = false;
		uint64_t got;

		t0 = orbit__now_mono_ns();
		got = room_poll(g, len, budget, t0, p->room_fixed, &preempted);
		if (got != UINT64_MAX) {
			/* room at the first look (got 0) says nothing of how soon it comes */
			if (adapt && got)
				p->room_poll_ns = orbit__spotq_poll_next(p->room_poll_ns, got);
			return 0;
		}
		if (preempted) {
			p->room_poll_ns = orbit__spotq_poll_next(p->room_poll_ns, UINT64_MAX);
			adapt = false; /* this wait's length says nothing about the host */
		}
		if (timeout_ns > 0) { /* the poll's time counts against @timeout_ns */
			uint64_t spent = orbit__now_mono_ns() - t0;

			timeout_ns = spent >= (uint64_t)timeout_ns ? 0
								   : timeout_ns - (int64_t)spent;
			if (timeout_ns == 0) {
				/* spent polling: answer without an announce, which
				 * would only make the host's next advance ring nobody */
				r = has_room(g, len) ? 0 : -ETIMEDOUT;
				goto adapted;
			}
		}
	} else if (adapt) {
		t0 = orbit__now_mono_ns(); /* no budget now: a short wait brings one back */
	}
	db = &p->q->shm->room_db;
	seen = orbit__doorbell_seq(db);
	/* SQ-D2: announce, fence, re-check; pairs with SQ-F2 of the host's advance */
	atomic_fetch_or_explicit(&db->sleeping, ORBIT_DOORBELL_SHARED, memory_order_seq_cst);
	atomic_thread_fence(memory_order_seq_cst);
	r = has_room(g, len) ? 0 : orbit__doorbell_wait(db, seen, timeout_ns);
adapted:
	/*
	 * How soon room came: the next poll's budget (a wait of 20 us or less
	 * brings it back). A timeout saw no room at all: it counts as a long
	 * wait, whatever its length (the budget halves).
	 */
	if (adapt && r == 0)
		p->room_poll_ns = orbit__spotq_poll_next(p->room_poll_ns,
							 orbit__now_mono_ns() - t0);
	else if (adapt && r == -ETIMEDOUT)
		p->room_poll_ns = orbit__spotq_poll_next(p->room_poll_ns,
							 UINT64_MAX - 1); /* long */
	return r;
}
