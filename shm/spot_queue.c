// SPDX-License-Identifier: MIT
/*
 * shm/spot_queue.c: the cross-process Spot queue (shm/spot_queue.h):
 * segment layout, open with a caps check that names the Spot, producers
 * (one CAS admission, tail helping, copy, checksum, release commit,
 * coalesced doorbell), the host (fenced takeover, take, complete, head
 * advance, aborting in-progress records of dead or stalled producers,
 * Dekker sleep), the counters and the checker. No thread, no lock.
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
 *            a claim that moved on shows the tail CAS before it (help_tail's
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
 *            own_tail() or a helper's CAS in help_tail() (a late helper's CAS
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
#include "config.h"

#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/mman.h>

#include <orbit/error.h>
#include "base/cpu.h"
#include "base/hash.h"
#include "base/options.h"
#include "shm/crashpoint.h"
#include "shm/fork_guard.h"
#include "shm/segment_perm.h"
#include "shm/spot_queue.h"

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "u64 atomics must be lock-free (address-free in SHM)");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "u32 atomics must be lock-free (address-free in SHM)");
_Static_assert(offsetof(struct orbit_spotq_shm, host_gen) == 192, "host line");
_Static_assert(offsetof(struct orbit_spotq_shm, rec_db) == 256, "doorbells on their own lines");
_Static_assert(offsetof(struct orbit_spotq_lane_shm, head) == 64, "head apart from tail");
_Static_assert(offsetof(struct orbit_spotq_lane_shm, aborted) == 128, "counters apart");
_Static_assert(offsetof(struct orbit_spotq_slot, target) == 64, "target on line 2");

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

#define COPY_CHUNK 1024u	 /* a stalled producer re-checks its claim between chunks */
#define STALL_POLL_NS 10000000ll /* host_wait's poll while a record is being written */
#define EMPTY_LOOK_EVERY 64u	 /* empty_look_due() reads the clock at every 64th */
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
/*
 * The host's poll before it announces a sleep (host_poll()): at most this
 * long, adapted between these bounds from how soon records came after the
 * last catch-up. Kept well below the unblock bound and the wake bench's
 * 50 us gap: a host idle for longer sleeps as before.
 */
#define POLL_MAX_NS 20000ull
#define POLL_MIN_NS 1000ull
/*
 * The poll's spin between two looks at the lanes. Each look reads the
 * slot the producer is writing or claims next (SQ-V1: no tail word), and
 * the producer's next locked instruction waits for that line: 5 us
 * between looks instead of 2 cut the transport producer's CPU per record
 * by about a tenth (130-137 -> 117-121 ns) for a loaded p50 latency of
 * 4.4-5.5 us instead of 2.6-4.0 (doc/spot-queues.md, benchmark).
 */
#define POLL_LOOK_NS 5000ull
/* submit() asks for the slot this many ahead of its own (prefetch_w()) */
#define PREFETCH_SLOTS 4u

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

static inline uint32_t pow2_mask(uint32_t cap)
{
	return cap && !(cap & (cap - 1)) ? cap - 1 : 0;
}

static inline uint64_t wrap_of(uint32_t cap)
{
	return (uint64_t)cap * ((1ull << 32) / cap);
}

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

/* ---- names, options, layout ---- */

static bool spot_name_ok(const char *s)
{
	size_t n = 0;

	if (!s || !*s)
		return false;
	for (; s[n]; n++) {
		char c = s[n];
		if (n >= ORBIT_SPOTQ_NAME_MAX ||
		    !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return false;
	}
	return true;
}

int orbit__spotq_seg_name(char *buf, size_t len, const char *spot)
{
	int n;

	if (!buf || !spot_name_ok(spot))
		return -EINVAL;
	n = snprintf(buf, len, ORBIT_SPOTQ_SEG_PREFIX "%s", spot);
	return (n < 0 || (size_t)n >= len) ? -EINVAL : 0;
}

void orbit__spotq_options_init(struct orbit_spotq_options *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
}

/* base/options.c's rule (copy_struct_from_user()); NULL: every default. */
static int options_read(struct orbit_spotq_options *dst, const struct orbit_spotq_options *user)
{
	if (!user) {
		orbit__spotq_options_init(dst);
		return 0;
	}
	return ORBIT__OPTS_COPY(dst, user);
}

struct layout {
	uint32_t items[2], bytes[2], rows, unblock_ms;
	uint64_t lanes_off, rows_off, slots_off[2], acks_off[2], data_off[2], total;
};

static inline uint64_t round64(uint64_t v)
{
	return (v + 63) & ~63ull;
}

static int layout_of(const struct orbit_spotq_options *o, struct layout *y)
{
	y->items[0] = o->app_items ? o->app_items : ORBIT_SPOTQ_DEFAULT_APP_ITEMS;
	y->bytes[0] = o->app_bytes ? o->app_bytes : ORBIT_SPOTQ_DEFAULT_APP_BYTES;
	y->items[1] = o->lifecycle_items ? o->lifecycle_items : ORBIT_SPOTQ_DEFAULT_LIFECYCLE_ITEMS;
	y->bytes[1] = o->lifecycle_bytes ? o->lifecycle_bytes : ORBIT_SPOTQ_DEFAULT_LIFECYCLE_BYTES;
	y->rows = o->producer_rows ? o->producer_rows : ORBIT_SPOTQ_DEFAULT_PRODUCER_ROWS;
	y->unblock_ms = o->unblock_ms ? o->unblock_ms : ORBIT_SPOTQ_DEFAULT_UNBLOCK_MS;
	for (int l = 0; l < 2; l++)
		if (y->items[l] < ORBIT_SPOTQ_MIN_ITEMS || y->items[l] > ORBIT_SPOTQ_MAX_ITEMS ||
		    y->bytes[l] < ORBIT_SPOTQ_MIN_BYTES || y->bytes[l] > ORBIT_SPOTQ_MAX_BYTES)
			return -EINVAL;
	if (y->rows > ORBIT_SPOTQ_MAX_PRODUCER_ROWS || y->unblock_ms > ORBIT_SPOTQ_MAX_UNBLOCK_MS)
		return -EINVAL;
	y->lanes_off = ORBIT_SEG_HEADER_BYTES + sizeof(struct orbit_spotq_shm);
	y->rows_off = y->lanes_off + 2 * sizeof(struct orbit_spotq_lane_shm);
	y->slots_off[0] = y->rows_off + (uint64_t)y->rows * sizeof(struct orbit_spotq_row);
	y->slots_off[1] = y->slots_off[0] + (uint64_t)y->items[0] * sizeof(struct orbit_spotq_slot);
	y->acks_off[0] = y->slots_off[1] + (uint64_t)y->items[1] * sizeof(struct orbit_spotq_slot);
	y->acks_off[1] = y->acks_off[0] + round64((uint64_t)y->items[0] * sizeof(uint64_t));
	y->data_off[0] = y->acks_off[1] + round64((uint64_t)y->items[1] * sizeof(uint64_t));
	y->data_off[1] = y->data_off[0] + round64(y->bytes[0]);
	y->total = y->data_off[1] + round64(y->bytes[1]);
	return 0;
}

static uint64_t fingerprint_of(const struct layout *y)
{
	const uint64_t w[] = {
		ORBIT_SEG_KIND_SPOT_QUEUE,
		ORBIT_SPOTQ_LAYOUT_VERSION,
		y->items[0],
		y->bytes[0],
		y->items[1],
		y->bytes[1],
		y->rows,
		sizeof(struct orbit_spotq_shm),
		sizeof(struct orbit_spotq_lane_shm),
		sizeof(struct orbit_spotq_row),
		sizeof(struct orbit_spotq_slot),
		y->lanes_off,
		y->rows_off,
		y->slots_off[0],
		y->slots_off[1],
		y->acks_off[0],
		y->acks_off[1],
		y->data_off[0],
		y->data_off[1],
		y->total,
	};
	return orbit__seg_fingerprint(w, sizeof(w) / sizeof(w[0]));
}

uint64_t orbit__spotq_footprint(const struct orbit_spotq_options *user)
{
	struct orbit_spotq_options o;
	struct layout y;

	if (options_read(&o, user) < 0 || layout_of(&o, &y) < 0)
		return 0;
	return y.total;
}

struct init_arg {
	const struct layout *y;
	const char *spot;
};

static int spotq_init(void *body, uint64_t body_bytes, void *arg)
{
	const struct init_arg *a = arg;
	const struct layout *y = a->y;
	struct orbit_spotq_shm *s = body;

	if (body_bytes + ORBIT_SEG_HEADER_BYTES < y->total)
		return -ORBIT_ESIZE;
	snprintf(s->spot, sizeof(s->spot), "%s", a->spot);
	for (int l = 0; l < 2; l++) {
		s->items[l] = y->items[l];
		s->bytes[l] = y->bytes[l];
		s->slots_off[l] = y->slots_off[l];
		s->acks_off[l] = y->acks_off[l];
		s->data_off[l] = y->data_off[l];
	}
	s->producer_rows = y->rows;
	s->unblock_ms = y->unblock_ms;
	s->slot_bytes = sizeof(struct orbit_spotq_slot);
	s->row_bytes = sizeof(struct orbit_spotq_row);
	s->lanes_off = y->lanes_off;
	s->rows_off = y->rows_off;
	/* Relaxed: the segment's READY release (segment.c R1) publishes the body */
	atomic_store_explicit(&s->host_row, UINT32_MAX, memory_order_relaxed);
	orbit__doorbell_init(&s->rec_db);
	orbit__doorbell_init(&s->room_db);
	return 0; /* words, rows, slots, data: zero-filled by the segment layer */
}

static void say(const struct orbit_spotq_options *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(const struct orbit_spotq_options *o, const char *fmt, ...)
{
	va_list ap;

	if (!o->why || !o->why_len)
		return;
	va_start(ap, fmt);
	vsnprintf(o->why, o->why_len, fmt, ap);
	va_end(ap);
}

/*
 * Read the stored header and config of segment @name without mapping it,
 * after the opener's own checks on the descriptor (regular file, owner and
 * mode as shm/segment_perm.h rules, O_NOFOLLOW|O_NONBLOCK). The bytes are
 * untrusted: callers only name values from them, or pass caps from them to
 * orbit__seg_open(), which validates everything again (fingerprint).
 * Returns 0, -ORBIT_ENOTREG (not a regular file), -ORBIT_ETRUNCATED (shorter
 * than header + config, *file_bytes set), or the codes of the checks.
 */
static int probe(const char *fleet, const char *name, const struct orbit_seg_opts *so,
		 struct orbit_seg_header *hd, struct orbit_spotq_shm *cfg, int64_t *file_bytes)
{
	char path[ORBIT_SEG_NAME_MAX];
	const char *why; /* the message is orbit__seg_open()'s */
	struct stat st;
	int fd, r;

	r = orbit__seg_name(path, sizeof(path), fleet, name);
	if (r < 0)
		return r;
	fd = orbit__seg_perm_shm_open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, so);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	*file_bytes = (int64_t)st.st_size;
	r = !S_ISREG(st.st_mode) ? -ORBIT_ENOTREG : orbit__seg_perm_check(fd, &st, so, &why);
	if (r < 0)
		goto out;
	if ((uint64_t)st.st_size < ORBIT_SEG_HEADER_BYTES + sizeof(*cfg) ||
	    pread(fd, hd, sizeof(*hd), 0) != (ssize_t)sizeof(*hd) ||
	    pread(fd, cfg, sizeof(*cfg), ORBIT_SEG_HEADER_BYTES) != (ssize_t)sizeof(*cfg))
		r = -ORBIT_ETRUNCATED;
out:
	close(fd);
	return r;
}

/*
 * After orbit__seg_open refused the size or fingerprint, read the stored
 * config only to name what differs. Returns -ORBIT_EFINGERPRINT when caps
 * differ, else @rc.
 */
static int explain_mismatch(const char *fleet, const char *name, const char *spot,
			    const struct layout *y, const struct orbit_spotq_options *o,
			    const struct orbit_seg_opts *so, int rc)
{
	static const char *const lane_name[2] = { "application", "lifecycle" };
	struct orbit_seg_header hd;
	struct orbit_spotq_shm s;
	int64_t size = -1;

	if (probe(fleet, name, so, &hd, &s, &size) < 0) {
		say(o, "spot '%s': segment %s refused (%s): %lld bytes, %" PRIu64 " expected", spot,
		    name, orbit_strerror(rc), (long long)size, y->total);
		return rc;
	}
	for (int l = 0; l < 2; l++) {
		if (s.items[l] != y->items[l]) {
			say(o, "spot '%s': %s lane item cap is %u in the segment, %u asked", spot,
			    lane_name[l], s.items[l], y->items[l]);
			return -ORBIT_EFINGERPRINT;
		}
		if (s.bytes[l] != y->bytes[l]) {
			say(o, "spot '%s': %s lane byte cap is %u in the segment, %u asked", spot,
			    lane_name[l], s.bytes[l], y->bytes[l]);
			return -ORBIT_EFINGERPRINT;
		}
	}
	if (s.producer_rows != y->rows) {
		say(o, "spot '%s': producer rows are %u in the segment, %u asked", spot,
		    s.producer_rows, y->rows);
		return -ORBIT_EFINGERPRINT;
	}
	say(o, "spot '%s': segment %s refused (%s): %lld bytes, %" PRIu64 " expected", spot, name,
	    orbit_strerror(rc), (long long)size, y->total);
	return rc;
}

/*
 * After orbit__seg_open refused the layout version: name both versions
 * (a peer built with layout 2, which kept the ack words in the slots,
 * gets the same -ORBIT_EVERSION and message from its side).
 */
static void explain_version(const char *fleet, const char *name, const char *spot,
			    const struct orbit_spotq_options *o, const struct orbit_seg_opts *so)
{
	struct orbit_seg_header hd;
	struct orbit_spotq_shm s;
	int64_t size = -1;

	if (probe(fleet, name, so, &hd, &s, &size) < 0)
		say(o, "spot '%s': segment %s has another layout version than %u", spot, name,
		    ORBIT_SPOTQ_LAYOUT_VERSION);
	else
		say(o,
		    "spot '%s': segment %s has queue layout version %u, this process uses %u "
		    "(every member of the fleet must run a build of the same layout)",
		    spot, name, hd.layout_version, ORBIT_SPOTQ_LAYOUT_VERSION);
}

/* adopt_caps: take the caps stored in an existing segment (then validated by the fingerprint). */
static int adopt(const char *fleet, const char *name, const struct orbit_seg_opts *so,
		 struct orbit_spotq_options *o)
{
	struct orbit_seg_header hd;
	struct orbit_spotq_shm s;
	int64_t size;
	int r = probe(fleet, name, so, &hd, &s, &size);

	if (r < 0)
		return r;
	if (hd.magic != ORBIT_SEG_MAGIC)
		return -ORBIT_EMAGIC;
	if (hd.kind != ORBIT_SEG_KIND_SPOT_QUEUE)
		return -ORBIT_EKIND;
	o->app_items = s.items[0];
	o->app_bytes = s.bytes[0];
	o->lifecycle_items = s.items[1];
	o->lifecycle_bytes = s.bytes[1];
	o->producer_rows = s.producer_rows;
	return 0;
}

int orbit__spotq_open(orbit_spotq_t **out, const char *fleet, const char *spot,
		      const struct orbit_spotq_options *user)
{
	struct orbit_spotq_options o;
	struct orbit_seg_opts so;
	struct orbit_seg_spec spec;
	struct init_arg ia;
	struct layout y;
	char name[ORBIT_SEG_NAME_MAX];
	orbit_spotq_t *q;
	int r;

	if (!out)
		return -EINVAL;
	r = options_read(&o, user);
	if (r < 0)
		return r;
	if (orbit__spotq_seg_name(name, sizeof(name), spot) < 0) {
		say(&o, "spot name '%s' is not 1..%u of [A-Za-z0-9_.-]", spot ? spot : "(null)",
		    ORBIT_SPOTQ_NAME_MAX);
		return -EINVAL;
	}
	so = (struct orbit_seg_opts){ .how = (enum orbit_seg_open_mode)o.how,
				      .readonly = o.readonly,
				      .mode = o.mode,
				      .init_timeout_ms = o.init_timeout_ms,
				      .gid = o.gid };
	if (o.adopt_caps) {
		if (o.how != ORBIT_SEG_OPEN)
			return -EINVAL;
		r = adopt(fleet, name, &so, &o);
		if (r < 0)
			return r;
	}
	r = layout_of(&o, &y);
	if (r < 0) {
		say(&o, "spot '%s': a cap or option is out of range (items %u..%u, bytes %u..%u)",
		    spot, ORBIT_SPOTQ_MIN_ITEMS, ORBIT_SPOTQ_MAX_ITEMS, ORBIT_SPOTQ_MIN_BYTES,
		    ORBIT_SPOTQ_MAX_BYTES);
		return r;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	ia = (struct init_arg){ .y = &y, .spot = spot };
	spec = (struct orbit_seg_spec){
		.kind = ORBIT_SEG_KIND_SPOT_QUEUE,
		.layout_version = ORBIT_SPOTQ_LAYOUT_VERSION,
		.total_bytes = y.total,
		.fingerprint = fingerprint_of(&y),
		.init = spotq_init,
		.init_arg = &ia,
	};
	r = orbit__seg_open(&q->seg, fleet, name, &spec, &so);
	if (r == -ORBIT_EFINGERPRINT || r == -ORBIT_ESIZE || r == -ORBIT_ETRUNCATED)
		r = explain_mismatch(fleet, name, spot, &y, &o, &so, r);
	else if (r == -ORBIT_EVERSION)
		explain_version(fleet, name, spot, &o, &so);
	if (r < 0)
		goto err_free;
	q->shm = orbit__seg_at(&q->seg, ORBIT_SEG_HEADER_BYTES, sizeof(*q->shm));
	q->rows = orbit__seg_at(&q->seg, y.rows_off,
				(uint64_t)y.rows * sizeof(struct orbit_spotq_row));
	struct orbit_spotq_lane_shm *lanes = orbit__seg_at(&q->seg, y.lanes_off,
							   2 * sizeof(struct orbit_spotq_lane_shm));
	if (!q->shm || (!q->rows && y.rows) || !lanes) {
		r = -ORBIT_ECORRUPT;
		goto err_close;
	}
	/* The fingerprint matched; the config words are still untrusted bytes */
	for (int l = 0; l < 2; l++) {
		struct lane_geo *g = &q->lane[l];

		g->items = y.items[l];
		g->bytes = y.bytes[l];
		g->wi = wrap_of(g->items);
		g->wb = wrap_of(g->bytes);
		g->imask = pow2_mask(g->items);
		g->bmask = pow2_mask(g->bytes);
		g->w = &lanes[l];
		g->slots = orbit__seg_at(&q->seg, y.slots_off[l],
					 (uint64_t)g->items * sizeof(struct orbit_spotq_slot));
		g->acks = orbit__seg_at(&q->seg, y.acks_off[l],
					(uint64_t)g->items * sizeof(uint64_t));
		g->data = orbit__seg_at(&q->seg, y.data_off[l], g->bytes);
		if (!g->slots || !g->acks || !g->data || q->shm->items[l] != y.items[l] ||
		    q->shm->bytes[l] != y.bytes[l] || q->shm->slots_off[l] != y.slots_off[l] ||
		    q->shm->acks_off[l] != y.acks_off[l] || q->shm->data_off[l] != y.data_off[l])
			r = -ORBIT_ECORRUPT;
	}
	if (r == 0 && (q->shm->producer_rows != y.rows || q->shm->lanes_off != y.lanes_off ||
		       q->shm->rows_off != y.rows_off ||
		       q->shm->slot_bytes != sizeof(struct orbit_spotq_slot) ||
		       q->shm->row_bytes != sizeof(struct orbit_spotq_row) ||
		       q->shm->unblock_ms > ORBIT_SPOTQ_MAX_UNBLOCK_MS ||
		       strncmp(q->shm->spot, spot, sizeof(q->shm->spot)) != 0))
		r = -ORBIT_ECORRUPT;
	if (r < 0) {
		say(&o, "spot '%s': config words of the segment disagree with its fingerprint",
		    spot);
		goto err_close;
	}
	q->producer_rows = y.rows;
	q->unblock_ms = q->shm->unblock_ms ? q->shm->unblock_ms : ORBIT_SPOTQ_DEFAULT_UNBLOCK_MS;
	snprintf(q->spot, sizeof(q->spot), "%s", spot);
	q->pid = orbit__self_pid();
	*out = q;
	return 0;

err_close:
	orbit__seg_close(&q->seg);
err_free:
	free(q);
	return r;
}

void orbit__spotq_close(orbit_spotq_t *q)
{
	if (!q)
		return;
	orbit__seg_close(&q->seg);
	free(q);
}

int orbit__spotq_unlink(const char *fleet, const char *spot)
{
	char name[ORBIT_SEG_NAME_MAX];
	int r = orbit__spotq_seg_name(name, sizeof(name), spot);

	return r < 0 ? r : orbit__seg_unlink(fleet, name);
}

int orbit__spotq_foreach(const char *fleet, int (*fn)(void *ctx, const char *spot), void *ctx)
{
	char prefix[ORBIT_SEG_NAME_MAX];
	struct dirent *d;
	DIR *dir;
	size_t plen;
	int n = 0, r;

	if (!fn || orbit__seg_name(prefix, sizeof(prefix), fleet, "x") < 0)
		return -EINVAL;
	/* "orbit.<fleet>.spotq.": the object names as files under /dev/shm */
	snprintf(prefix, sizeof(prefix), "orbit.%s." ORBIT_SPOTQ_SEG_PREFIX, fleet);
	plen = strlen(prefix);
	dir = opendir("/dev/shm");
	if (!dir)
		return -errno;
	while ((d = readdir(dir))) {
		if (strncmp(d->d_name, prefix, plen) || !spot_name_ok(d->d_name + plen))
			continue;
		n++;
		r = fn(ctx, d->d_name + plen);
		if (r)
			break;
	}
	closedir(dir);
	return n;
}

orbit_seg_t *orbit__spotq_seg(orbit_spotq_t *q)
{
	return q ? &q->seg : NULL;
}

void orbit__spotq_kick(orbit_spotq_t *q)
{
	if (q && !q->seg.readonly && orbit__fork_check(q->pid) == 0)
		orbit__doorbell_ring(&q->shm->rec_db);
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
static void help_tail(orbit_spotq_t *q, struct lane_geo *g, uint32_t lane, uint64_t t, uint64_t v)
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

/*
 * The claimer's own tail advance past its slot @s at tail @t, @len bytes:
 * help_tail() without the helper's care. The claimer is never late for
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

static int lane_of_kind(uint32_t kind)
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

/*
 * libc's memcpy under another name, so that the compiler calls it instead
 * of expanding the call inline. copy_in()'s chunks are at most COPY_CHUNK
 * bytes, and gcc (12, -O2, x86-64) expands a memcpy whose length it knows
 * to be at most 8 KiB as REP MOVSQ with an alignment prologue: for a 64-byte
 * record that is slower than libc's vector copy (see the commit that
 * brought this in for the figures). An asm label, not a builtin: the
 * compiler knows nothing of it, sanitizers still see a call to memcpy.
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
			help_tail(q, g, (uint32_t)lane, t, v); /* claimed: move the tail on */
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
		 * SQ-R7: release, pairs with SQ-A6 in help_tail(): our previous
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

int orbit__spotq_wait_room(orbit_spotq_producer_t *p, uint32_t lane, uint32_t len,
			   int64_t timeout_ns)
{
	struct orbit_doorbell *db;
	uint32_t seen;
	int r;

	if (!p || lane >= ORBIT_SPOTQ_LANES)
		return -EINVAL;
	if (orbit__fork_check(p->pid))
		return -ECHILD;
	db = &p->q->shm->room_db;
	seen = orbit__doorbell_seq(db);
	/* SQ-D2: announce, fence, re-check; pairs with SQ-F2 of the host's advance */
	atomic_fetch_or_explicit(&db->sleeping, ORBIT_DOORBELL_SHARED, memory_order_seq_cst);
	atomic_thread_fence(memory_order_seq_cst);
	if (has_room(&p->q->lane[lane], len))
		return 0;
	r = orbit__doorbell_wait(db, seen, timeout_ns);
	return r;
}

/* ---- the host ---- */

/* Is gen28 @a newer than gen28 @b (serial-number arithmetic, RFC 1982)? */
static inline bool gen_newer(uint32_t a, uint32_t b)
{
	uint32_t d = (a - b) & AW_GEN_MASK;

	return d != 0 && d < (1u << (AW_GEN_BITS - 1));
}

static int host_fenced(const orbit_spotq_host_t *h)
{
	/* SQ-G1: acquire, pairs with SQ-T2: a newer takeover is seen as a newer gen */
	return atomic_load_explicit(&h->q->shm->host_gen, memory_order_acquire) != h->gen
		   ? -ORBIT_EFENCED
		   : 0;
}

static int host_check(const orbit_spotq_host_t *h, uint32_t lane)
{
	if (!h || lane >= ORBIT_SPOTQ_LANES)
		return -EINVAL;
	if (orbit__fork_check(h->pid))
		return -ECHILD;
	return host_fenced(h);
}

/* An ack word seen in a generation other than ours: what it becomes under ours. */
static uint64_t ack_retagged(uint64_t a, uint64_t gen)
{
	uint32_t st = aw_state(a);

	if (st == AW_TAKEN)
		st = AW_REDELIVER; /* taken by an older host, never completed */
	else if (st > AW_REDELIVER)
		st = AW_NONE; /* not a state: take() looks at the record afresh */
	return aw_make(aw_pos(a), st, false, gen);
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

/*
 * @a (an ack word just read) names another generation than ours: fenced
 * when host_gen says a newer host exists; else the word is an older host's
 * missed by no retag or corrupt bytes: retag it (counted) and reload *@a.
 * Returns 0 (retry with *@a) or -ORBIT_EFENCED.
 */
static int ack_foreign(orbit_spotq_host_t *h, struct lane_geo *g, _Atomic uint64_t *aw, uint64_t *a)
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
static int ack_set(orbit_spotq_host_t *h, _Atomic uint64_t *aw, uint64_t *a, uint32_t pos,
		   uint32_t st, bool redeliv)
{
	/* SQ-C1: acq_rel; the expected value names our generation (the fence) */
	if (aw_gen(*a) == (uint32_t)(h->gen & AW_GEN_MASK) &&
	    atomic_compare_exchange_strong_explicit(aw, a, aw_make(pos, st, redeliv, h->gen),
						    memory_order_acq_rel, memory_order_acquire))
		return 0;
	return host_fenced(h) ? -ORBIT_EFENCED : -EAGAIN;
}

/* Is the producer that claimed @v proven dead (kernel proof via the member directory)? */
static bool claimer_dead(orbit_spotq_host_t *h, uint64_t v)
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
static void meta_copy(struct orbit_spotq_slot *m, const struct orbit_spotq_slot *s)
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

	meta_copy(&m, s); /* one copy; validated and summed from here on */
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

static bool head_aborted(orbit_spotq_host_t *h, uint32_t lane, bool *gone);

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
	*dead = claimer_dead(h, v);
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
	int r = host_check(h, lane);

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
						help_tail(h->q, g, lane, t, v);
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
			r = ack_foreign(h, g, aw, &a);
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
			r = ack_set(h, aw, &a, cur, AW_TAKEN, redeliv);
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
		r = ack_set(h, aw, &a, cur, AW_DONE, false);
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
		resolved = head_aborted(h, lane, &gone) && gone;
	}
	if (resolved) {
		r = orbit__spotq_advance(h, lane);
		if (r == -ORBIT_EFENCED && n == 0)
			return r;
	}
	return (int)n;
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
			r = ack_foreign(h, g, aw, &a);
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
	int r = host_check(h, lane);

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
	return claimer_dead(h, v);
}

/*
 * Is the head of @lane an aborted record this host marked DONE (so only
 * its producer's RETIRED, or its death, lets advance() free it)? *@gone:
 * that has happened, advance() may now pass it. take() and the host waits
 * poll this while it holds the head: a producer that retires after the
 * host's last advance() rings nothing, so no one else would call advance()
 * and a full lane would stay full for good.
 */
static bool head_aborted(orbit_spotq_host_t *h, uint32_t lane, bool *gone)
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
	int freed = 0, r = host_check(h, lane);

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
				r = ack_foreign(h, g, aw, &a);
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
				r = ack_set(h, aw, &a, P, AW_FREED, false);
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

/* Something for take(), or a record being written (*stalled)? */
static bool lane_ready(orbit_spotq_host_t *h, uint32_t lane, bool *stalled)
{
	struct lane_geo *g = &h->q->lane[lane];
	uint32_t cur = h->cursor[lane];
	/*
	 * seq_cst: the Dekker re-check of SQ-D1, on the commit word at the
	 * cursor alone (the tail is not read, SQ-V1): a commit before our
	 * announce is seen here, one after it reads the announce and rings
	 */
	uint64_t v = atomic_load_explicit(&slot_at(g, cur)->commit, memory_order_seq_cst);
	bool gone;

	if (head_aborted(h, lane, &gone))
		*stalled = true; /* poll take() for its RETIRED: no ring announces it */
	if (cw_pos(v) == cur && cw_state(v) == CW_CLAIMED) {
		/*
		 * Being written, or its claimer died or stopped (before or after
		 * its tail CAS): the stall poll brings take() back to judge it
		 */
		*stalled = true;
		return false;
	}
	if (cw_state(v) == CW_FREE || cw_pos(v) == mod_sub(cur, g->items, g->wi)) {
		/*
		 * Nothing claimed at the cursor: empty, unless bad bytes made a
		 * slot the tail passed look unclaimed. The tail is read here, once
		 * per sleep (SQ-A4: acquire, pairs with SQ-R2; take() reads it on
		 * this path at most once per STALL_POLL_NS): strictly past the
		 * cursor (tail_past()), take() resolves the slot next
		 */
		uint64_t t = atomic_load_explicit(&g->w->tail, memory_order_acquire);

		if (!tail_past(g, t, cur)) {
			/* SQ-A7: acquire, pairs with SQ-R5 */
			uint64_t hw = atomic_load_explicit(&g->w->head, memory_order_acquire);

			/*
			 * At the cursor: empty. Behind it inside the head's window:
			 * nothing to take either (the cursor waits for the tail).
			 * Outside the window: bad bytes, take() reports them
			 */
			if (pw_idx(t) < g->wi && pw_bytes(t) < g->wb && pw_idx(hw) < g->wi &&
			    mod_sub(pw_idx(t), pw_idx(hw), g->wi) <= g->items)
				return false;
		}
		h->suspect[lane] = true;
		h->suspect_pos[lane] = cur;
		return true;
	}
	return true; /* committed, aborted, or another lap: take() decides */
}

/*
 * A look of host_poll() at @lane: is the cursor's slot committed or
 * aborted for its lap (or in another lap: take() decides)? One relaxed
 * load of the cursor's commit word: a hint, take() reads it again
 * (SQ-A5). The tail is not read (SQ-V1): a look costs the producer one
 * line, the slot it is writing or claims next, which take() reads anyway.
 */
static bool lane_poll(const orbit_spotq_host_t *h, uint32_t lane)
{
	const struct lane_geo *g = &h->q->lane[lane];
	uint32_t cur = h->cursor[lane];
	uint64_t v = atomic_load_explicit(&slot_at(g, cur)->commit, memory_order_relaxed);

	if (cw_pos(v) == cur)
		return cw_state(v) == CW_COMMITTED || cw_state(v) == CW_ABORTED;
	return cw_state(v) != CW_FREE && cw_pos(v) != mod_sub(cur, g->items, g->wi);
}

uint64_t orbit__spotq_poll_next(uint64_t budget_ns, uint64_t waited_ns)
{
	if (waited_ns == UINT64_MAX)
		return 0; /* preempted mid-poll: others want this CPU, sleep instead */
	if (waited_ns <= POLL_MAX_NS) {
		uint64_t b = 2 * waited_ns;
		return b < POLL_MIN_NS ? POLL_MIN_NS : b > POLL_MAX_NS ? POLL_MAX_NS : b;
	}
	return budget_ns / 2 < POLL_MIN_NS ? 0 : budget_ns / 2;
}

/* The next budget of @h after a wait of @waited_ns (orbit__spotq_poll_next()). */
static void poll_adapt(orbit_spotq_host_t *h, uint64_t waited_ns)
{
	if (!h->poll_fixed)
		h->poll_ns = orbit__spotq_poll_next(h->poll_ns, waited_ns);
}

int orbit__spotq_cpus_allowed(void)
{
	cpu_set_t set;

	/* the calling thread's affinity: a process pinned to one CPU has one, whatever is online */
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		return CPU_COUNT(&set);
	return (int)sysconf(_SC_NPROCESSORS_ONLN); /* more CPUs than cpu_set_t holds */
}

uint64_t orbit__spotq_host_poll_budget(const orbit_spotq_host_t *h, bool *fixed)
{
	if (fixed)
		*fixed = h && h->poll_fixed;
	return h ? h->poll_ns : 0;
}

void orbit__spotq_host_set_poll(orbit_spotq_host_t *h, int64_t budget_ns)
{
	if (!h)
		return;
	h->poll_fixed = budget_ns >= 0 || orbit__spotq_cpus_allowed() <= 1;
	h->poll_ns = budget_ns >= 0 ? (uint64_t)budget_ns : h->poll_fixed ? 0 : POLL_MAX_NS / 4;
}

/*
 * Before a host announces a sleep, poll for up to @budget_ns: while
 * producers stream, a host that catches up would otherwise announce,
 * sleep, and be rung by the next commit, a FUTEX_WAKE on the producer's
 * path every few records. The poll spins (PAUSE) for POLL_LOOK_NS between
 * looks without reading a shared line, so records gather and the lines
 * the producer writes stay in its cache (a look per record would pull the
 * slot's line over while it is being written: the 10 us spin tried before
 * did, and lost); each look reads the lanes in @lanes (lane_poll()) and
 * the doorbell's seq. No announce: producers make no syscall meanwhile.
 * A gap between two looks longer than POLL_MAX_NS means this thread was
 * preempted: another thread wants this CPU, so the host stops polling and
 * sleeps (a woken sleeper gets the CPU back promptly; a spinning one only
 * its fair share). @t0: the poll's start. Returns 1 (a lane has something
 * for take()), 0 (seq moved past @seen: a kick, or a ring for another
 * waiter), -ETIMEDOUT (the budget is spent, or preempted: announce and
 * sleep).
 */
static int host_poll(orbit_spotq_host_t *h, uint32_t seen, uint32_t lanes, uint64_t budget_ns,
		     uint64_t t0)
{
	for (uint64_t now = t0;;) {
		uint64_t prev = now;

		do {
			for (int k = 0; k < 16; k++)
				orbit__cpu_relax();
			now = orbit__now_mono_ns();
		} while (now - prev < POLL_LOOK_NS);
		if (now - prev > POLL_MAX_NS && !h->poll_fixed) {
			poll_adapt(h, UINT64_MAX);
			return -ETIMEDOUT;
		}
		for (uint32_t l = 0; l < ORBIT_SPOTQ_LANES; l++)
			if ((lanes & (1u << l)) && lane_poll(h, l)) {
				poll_adapt(h, now - t0);
				return 1;
			}
		/* DB-A1 inside: acquire, what the ring or kick published is visible */
		if (orbit__doorbell_seq(&h->q->shm->rec_db) != seen)
			return 0;
		if (now - t0 >= budget_ns)
			return -ETIMEDOUT;
	}
}

uint32_t orbit__spotq_host_seq(const orbit_spotq_host_t *h)
{
	/* DB-A1 inside: acquire, what a ring published before this value is visible */
	return h ? orbit__doorbell_seq(&h->q->shm->rec_db) : 0;
}

int orbit__spotq_host_wait_seq(orbit_spotq_host_t *h, uint32_t seen, uint32_t lanes,
			       int64_t timeout_ns, uint32_t wake_class)
{
	struct orbit_doorbell *db;
	bool stalled = false;
	uint32_t bit = wake_class ? wake_class : ORBIT_DOORBELL_SHARED;
	uint64_t t0;
	int r = host_check(h, 0);

	if (r < 0)
		return r;
	if (lanes & ~((1u << ORBIT_SPOTQ_LANES) - 1u))
		return -EINVAL;
	db = &h->q->shm->rec_db;
	t0 = lanes && !h->poll_fixed ? orbit__now_mono_ns() : 0; /* poll_adapt() only */
	if (lanes && h->poll_ns && timeout_ns != 0) {
		if (h->poll_fixed)
			t0 = orbit__now_mono_ns();
		uint64_t budget = timeout_ns > 0 && (uint64_t)timeout_ns < h->poll_ns
				      ? (uint64_t)timeout_ns
				      : h->poll_ns;
		r = host_poll(h, seen, lanes, budget, t0);
		if (r >= 0)
			return r;
		if (timeout_ns > 0) { /* the poll's time counts against @timeout_ns */
			uint64_t spent = orbit__now_mono_ns() - t0;

			timeout_ns = spent >= (uint64_t)timeout_ns ? 0
								   : timeout_ns - (int64_t)spent;
		}
	}
	/*
	 * SQ-D1: announce, fence, re-check the lanes; pairs with SQ-F1 in
	 * submit(). A producer that committed before our announce is seen by
	 * the re-check; one that commits after it reads our bit and rings,
	 * which moves seq past @seen (read by the caller before it last looked
	 * at the lanes and at its own wake sources): the futex wait returns at
	 * once. A ring between the caller's @seen and now also ends it.
	 */
	atomic_fetch_or_explicit(&db->sleeping, bit, memory_order_seq_cst);
	atomic_thread_fence(memory_order_seq_cst);
	for (uint32_t l = 0; l < ORBIT_SPOTQ_LANES; l++) {
		if ((lanes & (1u << l)) && lane_ready(h, l, &stalled)) {
			r = 1;
			goto awake;
		}
	}
	if (stalled && (timeout_ns < 0 || timeout_ns > STALL_POLL_NS))
		timeout_ns = STALL_POLL_NS; /* poll the in-progress record's producer */
	/*
	 * A producer that claims after the re-check above and then stops (or is
	 * stopped) before its commit rings nobody: the host looks at the lanes
	 * again within one unblock bound, so that record waits at most about
	 * two bounds, not for the caller's timeout (a lease renewal, seconds).
	 */
	if (lanes && (timeout_ns < 0 || timeout_ns > (int64_t)h->q->unblock_ms * 1000000)) {
		timeout_ns = (int64_t)h->q->unblock_ms * 1000000;
		stalled = true;
	}
	r = orbit__doorbell_wait_class(db, seen, timeout_ns, bit);
	if (lanes && !h->poll_fixed)
		poll_adapt(h, orbit__now_mono_ns() - t0); /* how long this wait took */
	if (r == -ETIMEDOUT && stalled)
		r = 0; /* time to look at the stalled record (or the lanes) again */
awake:
	/*
	 * Awake: a row's own class is ours alone, take the bit back so that
	 * producers make no syscall while we work (the caller announces again
	 * before it sleeps). The shared class may have other sleepers: keep it.
	 * Relaxed: only our own next announce (seq_cst) must order after it.
	 */
	if (bit != ORBIT_DOORBELL_SHARED)
		atomic_fetch_and_explicit(&db->sleeping, ~bit, memory_order_relaxed);
	return r;
}

int orbit__spotq_host_wait(orbit_spotq_host_t *h, int64_t timeout_ns, uint32_t wake_class)
{
	int r = host_check(h, 0);

	if (r < 0)
		return r;
	r = orbit__spotq_host_wait_seq(h, orbit__spotq_host_seq(h), (1u << ORBIT_SPOTQ_LANES) - 1u,
				       timeout_ns, wake_class);
	return r > 0 ? 0 : r;
}

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
				meta_copy(&m, s);
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
