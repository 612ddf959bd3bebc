/* SPDX-License-Identifier: MIT */
/*
 * shm/spot_queue_internal.h: what the files of the cross-process Spot
 * queue share and nothing outside them sees: the commit, ack and position
 * word encodings, the process-local handles (queue, producer, host), the
 * position arithmetic, the one bounds-checked slot, ack and byte accessors,
 * and the record checksum (static inline: the per-record path of submit
 * and take), the declarations of the few functions one file calls in
 * another, and the queue's synchronization table, whole, which every file
 * of the queue points to. The SHM layout, who writes each field and what a
 * crash leaves behind: shm/spot_queue.h. The files, one mechanism each:
 *   spot_queue.c           names, options, layout, open with a caps check
 *                          that names the Spot
 *   spot_queue_tail.c      tail helping (anyone who sees slot[tail] claimed)
 *   spot_queue_producer.c  producers: one CAS admission, copy, checksum,
 *                          release commit, coalesced doorbell, room wait
 *   spot_queue_host.c      the host handle: the fence check, the takeover
 *                          and its retag of every ack word
 *   spot_queue_take.c      take: validate and copy out, abort in-progress
 *                          records of dead or stalled producers
 *   spot_queue_advance.c   the ack word steps under the fence (repair,
 *                          fenced CAS), complete and the head advance
 *   spot_queue_wait.c      the host's wait: adaptive poll, Dekker sleep
 *   spot_queue_check.c     the counters and the checker
 * No thread, no lock.
 *
 * Synchronization (P producer, H host, X anyone advancing the tail):
 *   SQ-R1 P: slot commit CAS -> CLAIMED (acq_rel)     pairs with SQ-A3 (P, X read
 *            the slot) and SQ-A5 (H): the claimer's row claim before the slot
 *   SQ-R2 X: tail CAS -> pos + 1 (release)            pairs with SQ-A2 (P) and
 *            SQ-A4 (H): the slot's resv before the tail passes it
 *   SQ-R3 P: slot commit CAS CLAIMED -> COMMITTED (release) pairs with SQ-A5 in
 *            take() and SQ-R4: meta, checksum and payload before COMMITTED
 *   SQ-R4 H: slot commit CAS CLAIMED -> ABORTED (acq_rel) pairs with P's SQ-R3
 *            and SQ-A5 (of the two CASes one wins, the loser sees the other's word)
 *   SQ-R5 H: head CAS (release), one per run of FREED slots; pairs with
 *            SQ-A1 (P) and SQ-A7 (H): the slots' last reads (take copied
 *            them) before their reuse
 *   SQ-R7 P: release store of the row claim before the slot CAS, pairs with
 *            SQ-A6: the previous record's tail CAS before the new claim
 *   SQ-A6 X: acquire of the claimer's row claim, pairs with SQ-R7 in submit():
 *            a claim that moved on shows the tail CAS before it (orbit__spotq_help_tail's
 *            lateness check)
 *   SQ-R6 P: release store of RETIRED in the row claim, the producer's last
 *            store for a record; pairs with SQ-A8 in advance(): no slot or
 *            byte of an aborted record is reused while its producer may write
 *   SQ-A7 H: acquire of the head, pairs with SQ-R5 (an older host's or a helper's)
 *   SQ-R8/SQ-A9 H: release store / acquire load of the host handle's
 *            tail_seen (process-local; complete() runs on any host thread):
 *            the SQ-A4 view of the thread that read that tail, or the SQ-A5
 *            view of the take() that derived it from a validated record
 *            (SQ-V1), comes with it
 *   SQ-O1/SQ-O2 P: producer row owner CAS (acquire) / close (release): a
 *            previous tenure's row words before a new producer uses them
 *   SQ-G1 H: acquire of host_gen at every host call, pairs with SQ-T2
 *   SQ-C1 H: ack CASes (acq_rel) and loads (acquire): take, complete
 *            (TAKEN -> FREED), DONE -> FREED in advance, takeover retag;
 *            pairs with SQ-C1 (of this host, of older ones): each names its
 *            expected generation (the fence). The ack words sit in their own
 *            array (layout 3): no producer reads or writes their lines
 *   SQ-T1 takeover: epoch CAS (seq_cst), pairs with SQ-T2; SQ-T2 host_gen CAS
 *            (seq_cst), the order argument is at host_takeover()
 *   SQ-F1 P: the commit CAS is seq_cst, then a seq_cst load of the records
 *            doorbell's sleeping word; pairs with SQ-D1 (H announces, fence,
 *            re-checks with seq_cst loads). Both pairs of seq_cst accesses sit
 *            in the one total order, so no fence is needed on this side: a
 *            load that misses the announce precedes it, hence so does the
 *            commit, which the re-check then sees (on x86 a locked CAS and
 *            a plain load, no extra barrier per record)
 *   SQ-F2 H: the head CAS is seq_cst, then a seq_cst load of the room
 *            doorbell's sleeping word; pairs with SQ-D2 (P announces, fence,
 *            re-checks with seq_cst loads), the same argument
 *   SQ-V1 H: the argument (no partner: it is not an access; it chains the
 *            release and acquire pairs SQ-R2/SQ-A2, SQ-R3/SQ-A5 and SQ-R4) that
 *            lets the host decide from the commit word at its cursor without
 *            reading the tail: a commit word COMMITTED or ABORTED for its lap,
 *            read with the acquire of SQ-A5, shows that the tail passed the
 *            slot and that the slot's resv is visible. The resv of lap T takes
 *            one value only, (B, len) with B the tail word's bytes at index T
 *            and len the claimer's row claim, from the claimer's plain store in
 *            own_tail() or a helper's CAS in orbit__spotq_help_tail() (a late helper's CAS
 *            fails there). COMMITTED is written by the claimer's commit CAS
 *            (release) after own_tail(), which either stored resv itself
 *            (program order) or found the tail moved (acquire): the tail CAS
 *            that passed T (release; every later tail write is a CAS, so it
 *            heads the release sequence the claimer read from) followed that
 *            helper's resv CAS, which therefore happens before the commit; a
 *            helper whose resv CAS failed read another writer's (B, len)
 *            there, and read-read coherence gives the host that value or a
 *            later one, the same. ABORTED is written by a host's abort CAS
 *            (acq_rel) only after that host read the tail past T (acquire), so
 *            the same chain runs through the aborting host. Either way the tail
 *            passed T before the word was written, and the tail word at index
 *            T + 1 held (T + 1, B + len). Bytes that lie break the argument, so
 *            take() leans on it only for a record it validated: one it would
 *            resolve as aborted or corrupt waits for a tail read that shows
 *            the tail past T (tail_past(): the cursor never passes the tail),
 *            and it publishes (T + 1, B + len) as tail_seen for advance() only
 *            when B is the bytes of the tail it knew at index T (the record
 *            starts where the one before it ended; a zero-length record's
 *            checksum covers no offset).
 * Counters are relaxed: statistics, they order nothing.
 */
#ifndef ORBIT_SHM_SPOT_QUEUE_INTERNAL_H
#define ORBIT_SHM_SPOT_QUEUE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include <orbit/error.h>
#include "base/cpu.h"
#include "base/hash.h"
#include "shm/spot_queue.h"

/* commit word */
#define CW_FREE 0u
#define CW_CLAIMED 1u
#define CW_COMMITTED 2u
#define CW_ABORTED 3u
#define CW_GEN_BITS 19
#define CW_GEN_MASK ((1u << CW_GEN_BITS) - 1)
/* ack word */
#define AW_NONE 0u
#define AW_TAKEN 1u
#define AW_DONE 2u
#define AW_FREED 3u
#define AW_REDELIVER 4u
#define AW_GEN_BITS 28
#define AW_GEN_MASK ((1u << AW_GEN_BITS) - 1)

/* row claim word: pos 32 | len 31 << 32 | RETIRED << 63 (the producer is done with the slot) */
#define CLAIM_RETIRED (1ull << 63)
#define CLAIM_LEN(w) ((uint32_t)((w) >> 32) & 0x7fffffffu)
#define STALL_POLL_NS 10000000ll /* host_wait's poll while a record is being written */

static inline uint64_t cw_make(uint32_t pos, uint32_t st, uint32_t row, uint32_t gen)
{
	return (uint64_t)pos | (uint64_t)(st & 7u) << 32 | (uint64_t)(row & 1023u) << 35 |
	       (uint64_t)(gen & CW_GEN_MASK) << 45;
}
static inline uint32_t cw_pos(uint64_t w)
{
	return (uint32_t)w;
}
static inline uint32_t cw_state(uint64_t w)
{
	return (uint32_t)(w >> 32) & 7u;
}
static inline uint32_t cw_row(uint64_t w)
{
	return (uint32_t)(w >> 35) & 1023u;
}
static inline uint32_t cw_gen(uint64_t w)
{
	return (uint32_t)(w >> 45) & CW_GEN_MASK;
}
static inline uint64_t cw_with_state(uint64_t w, uint32_t st)
{
	return (w & ~(7ull << 32)) | (uint64_t)(st & 7u) << 32;
}

static inline uint64_t aw_make(uint32_t pos, uint32_t st, bool redeliv, uint64_t gen)
{
	return (uint64_t)pos | (uint64_t)(st & 7u) << 32 | (uint64_t)redeliv << 35 |
	       (uint64_t)(gen & AW_GEN_MASK) << 36;
}
static inline uint32_t aw_pos(uint64_t w)
{
	return (uint32_t)w;
}
static inline uint32_t aw_state(uint64_t w)
{
	return (uint32_t)(w >> 32) & 7u;
}
static inline bool aw_redeliv(uint64_t w)
{
	return (w >> 35) & 1u;
}
static inline uint32_t aw_gen(uint64_t w)
{
	return (uint32_t)(w >> 36) & AW_GEN_MASK;
}

static inline uint64_t pw_make(uint32_t idx, uint32_t bytes)
{
	return (uint64_t)idx | (uint64_t)bytes << 32;
}
static inline uint32_t pw_idx(uint64_t w)
{
	return (uint32_t)w;
}
static inline uint32_t pw_bytes(uint64_t w)
{
	return (uint32_t)(w >> 32);
}

/* Process-local, validated geometry of one lane: every index goes through it. */
struct lane_geo {
	uint32_t items, bytes; /* caps */
	uint32_t imask, bmask; /* cap - 1 for a power-of-two cap (the defaults), else 0 */
	uint64_t wi, wb;       /* position moduli: cap * floor(2^32 / cap) */
	struct orbit_spotq_lane_shm *w;
	struct orbit_spotq_slot *slots;
	_Atomic uint64_t *acks; /* host-written ack words, one per slot (8 per cache line) */
	uint8_t *data;
};

struct orbit_spotq {
	orbit_seg_t seg;
	struct orbit_spotq_shm *shm;
	struct orbit_spotq_row *rows;
	uint32_t producer_rows;
	uint32_t unblock_ms;
	struct lane_geo lane[2];
	char spot[ORBIT_SPOTQ_NAME_MAX + 1];
	pid_t pid;
};

struct orbit_spotq_producer {
	orbit_spotq_t *q;
	struct orbit_spotq_row *row;
	uint32_t row_idx, gen;
	uint64_t seq;
	/*
	 * Per lane: the head word this producer last read (SQ-A1) and a time at
	 * or before that read. The room check decides on it while it shows
	 * room and is younger than HEAD_KEEP_NS, and reads the head again only
	 * when it does not (the host writes the head at every advance: a
	 * cross-CPU miss per submit saved). The head never moves back, so an
	 * older head only under-counts room.
	 */
	uint64_t head_seen[2];
	uint64_t head_ns[2]; /* 0: none read; CLOCK_MONOTONIC_COARSE */
	/*
	 * The sampled stamp (stamp_of()): the coarse time of the last exact
	 * stamp, and the records stamped coarse since it.
	 */
	uint64_t stamp_tick;
	uint32_t since_exact;
	pid_t pid;
	/* wait_room()'s poll (room_poll()): the budget of the next one (0:
	 * none), fixed by orbit__spotq_producer_set_poll(), else adapted
	 * when more than one CPU was online at open (room_adapt) */
	bool room_fixed, room_adapt;
	uint64_t room_poll_ns;
};

struct orbit_spotq_host {
	orbit_spotq_t *q;
	orbit_members_t *m;
	uint64_t gen, epoch;
	uint32_t cursor[2];	 /* next position to take */
	uint32_t stall_pos[2];	 /* in-progress record first seen at stall_since */
	uint64_t stall_since[2]; /* 0: none */
	/*
	 * Per lane: take() calls the lane empty when the cursor's slot is
	 * unclaimed (FREE or the previous lap) without reading the tail (the
	 * tail cannot pass an unclaimed slot). Bad bytes could make a slot the
	 * tail passed look unclaimed and hold the lane for good, so the host's
	 * wait, before it sleeps, reads the tail (lane_ready()): a tail past
	 * such a cursor sets suspect at suspect_pos, and the next take() reads
	 * the tail there and resolves the slot (take()'s thread only).
	 */
	uint32_t suspect_pos[2];
	bool suspect[2];
	/*
	 * Per lane: when take() last read the tail at an unclaimed-looking
	 * cursor (0: never). A host busy on the other lane may never wait, so
	 * take() itself reads the tail there at most once per STALL_POLL_NS
	 * (empty_look_due(), a clock read at every 64th empty-looking take): a
	 * passed slot that reads FREE is found within that interval or 64
	 * takes of that lane, whichever is later, at one tail read per lane per
	 * interval (take()'s thread only).
	 */
	uint64_t empty_look_ns[2];
	uint32_t empty_takes[2]; /* empty-looking takes, for empty_look_due() */
	char last_corrupt[128];
	pid_t pid;
	/*
	 * Per lane: a value the tail word held that this host knows, the first
	 * read at takeover: a tail read (SQ-A4), or the one take() derives from
	 * a validated record that starts at the bytes of the known tail at its
	 * index (SQ-V1: the tail CAS that passed it).
	 * advance() frees up to it and reads the tail again only when the ack
	 * at it is already freeable or it lies outside the head's window
	 * (producers write the tail at every submit: a cross-CPU miss saved).
	 * complete() may run on several threads, hence atomic (SQ-R8/SQ-A9).
	 */
	_Atomic uint64_t tail_seen[2];
	/* aborts by this host, by cause: written by take(), read by any
	 * thread (relaxed: counts, they order nothing) */
	_Atomic uint64_t aborted_dead[2], aborted_unblock[2];
	/*
	 * host_poll()'s budget (ns, 0: announce at once), adapted after every
	 * wait unless poll_fixed (orbit__spotq_host_set_poll()). The waiting
	 * thread's alone.
	 */
	uint64_t poll_ns;
	bool poll_fixed;
};

/*
 * Position arithmetic without a division on the fast path: every value a
 * hot path passes is already below 2 * w (positions and offsets validated
 * below their modulus, steps at most one modulus), so one compare and at
 * most one subtraction give v % w; anything larger (bytes that lie) takes
 * the division. The results equal (a + n) % w and (a + w - b % w) % w for
 * every input.
 */
static inline uint64_t mod_red(uint64_t v, uint64_t w)
{
	if (v < w)
		return v;
	v -= w;
	return v < w ? v : v % w;
}
static inline uint64_t mod_add(uint64_t a, uint64_t n, uint64_t w)
{
	return mod_red(a + n, w);
}
static inline uint64_t mod_sub(uint64_t a, uint64_t b, uint64_t w)
{
	return mod_red(a + w - mod_red(b, w), w);
}

/* @v % @cap for a lane cap, with @mask = cap - 1 when cap is a power of two (else 0) */
static inline uint32_t cap_mod(uint64_t v, uint32_t cap, uint32_t mask)
{
	return mask ? (uint32_t)(v & mask) : (uint32_t)(v % cap);
}

/* The one bounds-checked slot accessor: position -> slot (pos is reduced mod items). */
static inline struct orbit_spotq_slot *slot_at(const struct lane_geo *g, uint32_t pos)
{
	return &g->slots[cap_mod(pos, g->items, g->imask)];
}

/* The one bounds-checked ack accessor: position -> the slot's ack word. */
static inline _Atomic uint64_t *ack_at(const struct lane_geo *g, uint32_t pos)
{
	return &g->acks[cap_mod(pos, g->items, g->imask)];
}

/* The offset inside the lane's byte ring of byte position @pos. */
static inline uint32_t byte_at(const struct lane_geo *g, uint64_t pos)
{
	return cap_mod(pos, g->bytes, g->bmask);
}

static inline int lane_of_kind(uint32_t kind)
{
	switch (kind) {
	case ORBIT_SPOTQ_KIND_SPOT:
	case ORBIT_SPOTQ_KIND_ACTOR:
	case ORBIT_SPOTQ_KIND_TIMER:
		return ORBIT_SPOTQ_APP;
	case ORBIT_SPOTQ_KIND_LIFECYCLE:
		return ORBIT_SPOTQ_LIFECYCLE;
	default:
		return -1;
	}
}

/* Is gen28 @a newer than gen28 @b (serial-number arithmetic, RFC 1982)? */
static inline bool gen_newer(uint32_t a, uint32_t b)
{
	uint32_t d = (a - b) & AW_GEN_MASK;

	return d != 0 && d < (1u << (AW_GEN_BITS - 1));
}

/*
 * Has the tail @t passed @cur, i.e. is it 1 to items positions ahead of
 * it? Only then may take() resolve the slot at @cur as aborted or corrupt
 * and move its cursor past it: a tail at @cur has not passed it (bad
 * bytes in its commit word), and a tail "behind" the cursor would mean
 * the cursor passed the tail, which would mark positions no producer
 * claimed yet as done.
 */
static inline bool tail_past(const struct lane_geo *g, uint64_t t, uint32_t cur)
{
	uint64_t d = mod_sub(pw_idx(t), cur, g->wi);

	return d >= 1 && d <= g->items;
}

static inline int host_fenced(const orbit_spotq_host_t *h)
{
	/* SQ-G1: acquire, pairs with SQ-T2: a newer takeover is seen as a newer gen */
	return atomic_load_explicit(&h->q->shm->host_gen, memory_order_acquire) != h->gen
		   ? -ORBIT_EFENCED
		   : 0;
}

/* An ack word seen in a generation other than ours: what it becomes under ours. */
static inline uint64_t ack_retagged(uint64_t a, uint64_t gen)
{
	uint32_t st = aw_state(a);

	if (st == AW_TAKEN)
		st = AW_REDELIVER; /* taken by an older host, never completed */
	else if (st > AW_REDELIVER)
		st = AW_NONE; /* not a state: take() looks at the record afresh */
	return aw_make(aw_pos(a), st, false, gen);
}

/*
 * The waits' spin between two looks (the host's poll, a producer's poll
 * for room): PAUSE, no shared line read, until @look_ns past @prev by
 * CLOCK_MONOTONIC. Returns the time then.
 */
static inline uint64_t spin_look(uint64_t prev, uint64_t look_ns)
{
	uint64_t now;

	do {
		for (int k = 0; k < 16; k++)
			orbit__cpu_relax();
		now = orbit__now_mono_ns();
	} while (now - prev < look_ns);
	return now;
}

/* ---- checksum ---- */

/*
 * The bytes of a slot's target that belong to a record of @kind: an
 * Actor's id, a timer's name field, nothing for Spot and lifecycle records
 * (their producers do not write the slot's second cache line at all).
 */
static inline size_t target_len(uint32_t kind)
{
	switch (kind) {
	case ORBIT_SPOTQ_KIND_ACTOR:
		return sizeof(uint64_t);
	case ORBIT_SPOTQ_KIND_TIMER:
		return ORBIT_SPOTQ_TIMER_NAME_MAX + 1;
	default:
		return 0;
	}
}

/*
 * The checksum (layout 4) is wyhash's construction (Wang Yi's public
 * domain hash, which passes SMHasher): a 64 x 64 -> 128-bit multiply
 * folded to 64 bits (mum) takes 16 input bytes per multiply, each word
 * XORed with the running state first, the first one with a constant too.
 * Layout 3's sum took
 * 8 bytes per multiply plus a xor-shift, in four chains (17 multiplies
 * for a 64-byte Spot record, about 8% of a producer's CPU per record):
 * this one makes 8, in two chains. Both are 64-bit non-cryptographic
 * hashes: they catch torn, overwritten and stray bytes (any one flipped
 * byte changes the sum: test_checksum_covers_each_byte_of_the_record),
 * never a peer that writes a consistent record on purpose (a hostile peer
 * can write anything a producer can). A mum is blind when one of its
 * operands is 0: its product is 0 whatever the other operand, and the
 * chain's state drops out. wyhash XORs a payload word with a constant
 * alone, so a payload word equal to that constant dropped the record's
 * position, sequence and time from the sum, for every record that held
 * it (test_checksum_blind_to_no_payload_word); here both operands carry
 * the running state, so which word zeroes one differs per record: a
 * chance of 2^-64 for bytes that went wrong.
 */
#define SUM_K0 ORBIT__WY0
#define SUM_K1 ORBIT__WY1
#define SUM_K2 ORBIT__WY2
#define SUM_K3 ORBIT__WY3

/* The 8 bytes at @p as a word (an unaligned load; memcpy is the portable spelling). */
static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * Fold @n bytes at @p into the two chains @a, @b: 32 bytes per round, then
 * 16, the rest padded. Whole words are loaded straight into registers (a
 * copy into a word array first went through the stack at every round).
 */
static inline __attribute__((always_inline)) void sum_bytes(uint64_t *a, uint64_t *b,
							    const uint8_t *p, size_t n)
{
	uint64_t x = *a, y = *b;

	for (; n >= 32; n -= 32, p += 32) {
		x = orbit__mum(load64(p) ^ SUM_K0 ^ x, load64(p + 8) ^ x);
		y = orbit__mum(load64(p + 16) ^ SUM_K1 ^ y, load64(p + 24) ^ y);
	}
	if (n >= 16) {
		x = orbit__mum(load64(p) ^ SUM_K2 ^ x, load64(p + 8) ^ x);
		p += 16;
		n -= 16;
	}
	if (n) {
		uint64_t w[2] = { 0, 0 };

		memcpy(w, p, n);
		y = orbit__mum(w[0] ^ SUM_K3 ^ y, w[1] ^ y);
	}
	*a = x;
	*b = y;
}

/*
 * Checksum of a record: its position, meta fields (from @m), the target
 * bytes of its kind and its contiguous payload (@n bytes at @p). The
 * lengths are in the first words, so where a piece ends is summed too.
 */
static inline __attribute__((always_inline)) uint64_t
record_sum(uint32_t pos, const struct orbit_spotq_slot *m, const uint8_t *p, uint32_t n)
{
	uint64_t a = orbit__mum((uint64_t)pos << 32 ^ m->payload_len ^ SUM_K0,
				m->producer_seq ^ SUM_K1);
	uint64_t b = orbit__mum(m->submit_ns ^ SUM_K2,
				((uint64_t)m->kind << 32 | m->member_row) ^ SUM_K3);
	size_t tl = target_len(m->kind);

	b = orbit__mum((uint64_t)m->member_gen << 32 ^ SUM_K1, b ^ SUM_K0);
	if (tl)
		sum_bytes(&a, &b, (const uint8_t *)&m->target, tl);
	sum_bytes(&a, &b, p, n);
	return orbit__mum(a ^ SUM_K2, b ^ SUM_K3);
}

/* ---- across files ---- */

/* spot_queue_tail.c: advance the tail past the claimed slot at tail @t (commit word @v) */
void orbit__spotq_help_tail(orbit_spotq_t *q, struct lane_geo *g, uint32_t lane, uint64_t t,
			    uint64_t v);
/* spot_queue_host.c: the fence check at every host call (SQ-G1) */
int orbit__spotq_host_check(const orbit_spotq_host_t *h, uint32_t lane);
/* spot_queue_advance.c: repair an ack word of another generation, or -ORBIT_EFENCED */
int orbit__spotq_ack_foreign(orbit_spotq_host_t *h, struct lane_geo *g, _Atomic uint64_t *aw,
			     uint64_t *a);
/* spot_queue_advance.c: the fenced CAS of an ack word (SQ-C1) */
int orbit__spotq_ack_set(orbit_spotq_host_t *h, _Atomic uint64_t *aw, uint64_t *a, uint32_t pos,
			 uint32_t st, bool redeliv);
/* spot_queue_take.c: is the producer that claimed @v proven dead? */
bool orbit__spotq_claimer_dead(orbit_spotq_host_t *h, uint64_t v);
/* spot_queue_take.c: copy a slot's producer-written fields */
void orbit__spotq_meta_copy(struct orbit_spotq_slot *m, const struct orbit_spotq_slot *s);
/* spot_queue_advance.c: is the head an aborted record this host marked DONE? */
bool orbit__spotq_head_aborted(orbit_spotq_host_t *h, uint32_t lane, bool *gone);

#endif /* ORBIT_SHM_SPOT_QUEUE_INTERNAL_H */
