// SPDX-License-Identifier: MIT
/*
 * shm/ring.c: the transition ring (shm/ring.h): segment layout and
 * validation, writer-lane claim/release/reclaim through the member
 * directory, the publisher (per-frame seq written odd then even, then the
 * lane head, then the doorbell), readers with per-lane cursors that copy a
 * frame and re-check its seq, replay of what is retained, and reset.
 *
 * Synchronization (publisher P on one lane, reader R anywhere):
 *   RG-W1 P: seq = 2p+1 (relaxed), release fence   pairs with RG-R2: odd before bytes
 *   RG-W2 P: seq = 2p+2 (release)                  pairs with RG-R1: bytes before even
 *   RG-W3 P: head = p+1 (release)                  pairs with RG-R0: frame before head
 *   DB-M2.. P: doorbell (ASYM: compiler barrier, load sleeping; FULL: the
 *            whole ring, DB-D1..): see shm/doorbell.h; the reader's side
 *            (its membarrier, then reader_pending() re-checks the heads) is there
 *   RG-G1 reset: generation + 1 (release)       pairs with RG-G2 in reader_next()
 *   RG-C1/RG-C2/RG-C3 P: lane owner CASes (claim, release, reclaim), pairs
 *            with RG-O1 (owner loads) and each other: the previous owner's
 *            frames before the next owner's
 * Frame bytes are copied as relaxed atomic words inside the seq window (a
 * seqlock): a torn copy is detected by the re-check and never used.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <orbit/error.h>
#include "shm/crashpoint.h"
#include "shm/ring.h"

#define RING_MAX_TOTAL_BYTES (1ull << 30)

struct orbit_ring {
	orbit_seg_t seg;
	struct orbit_ring_layout layout; /* validated; every index uses these */
	struct orbit_ring_shm *shm;
	struct orbit_ring_lane *lanes;
	/* the frame area, declared as what it is: lanes x frames_per_lane x frame_bytes / 8 words */
	_Atomic uint64_t *frames;
	bool asym;     /* the doorbell's mode is ASYM: readers wait with membarrier (DB-M1) */
	bool asym_pub; /* asym, and this process is registered: publish with DB-M2 */
	/* From the validated layout (powers of two), so frame_at() shifts instead of multiplying */
	uint32_t slot_mask;   /* frames_per_lane - 1 */
	uint32_t frame_shift; /* log2(frame_bytes / 8): words per frame */
	uint32_t lane_shift;  /* log2(frames_per_lane * frame_bytes / 8): words per lane */
	uint32_t cap;	      /* payload bytes of a frame: frame_bytes - 64 */
};

struct orbit_ring_reader {
	orbit_ring_t *ring;
	uint64_t generation;
	uint32_t next_lane;
	uint32_t wake_class; /* doorbell class this reader sleeps as */
	struct orbit_ring_reader_counters c;
	uint64_t cursor[]; /* one per lane */
};

static bool pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

void orbit__ring_layout_default(struct orbit_ring_layout *l)
{
	l->kind = ORBIT_SEG_KIND_LOCK_RING;
	l->lanes = ORBIT_RING_DEFAULT_LANES;
	l->frames_per_lane = ORBIT_RING_DEFAULT_FRAMES;
	l->frame_bytes = ORBIT_RING_DEFAULT_FRAME_BYTES;
}

static int layout_check(const struct orbit_ring_layout *l)
{
	if (l->kind == 0 || l->kind > 0xffff || l->lanes == 0 || l->lanes > ORBIT_RING_MAX_LANES ||
	    !pow2(l->frames_per_lane) || l->frames_per_lane < ORBIT_RING_MIN_FRAMES ||
	    l->frames_per_lane > ORBIT_RING_MAX_FRAMES || !pow2(l->frame_bytes) ||
	    l->frame_bytes < ORBIT_RING_MIN_FRAME_BYTES ||
	    l->frame_bytes > ORBIT_RING_MAX_FRAME_BYTES)
		return -EINVAL;
	if ((uint64_t)l->lanes * l->frames_per_lane * l->frame_bytes > RING_MAX_TOTAL_BYTES)
		return -E2BIG;
	return 0;
}

/* "ring-<kind>" into buf (segment name part). Returns 0 or -EINVAL. */
static int ring_seg_name(char *buf, size_t len, const struct orbit_ring_layout *l)
{
	int n;

	if (!buf || !l || l->kind == 0 || l->kind > 0xffff)
		return -EINVAL;
	n = snprintf(buf, len, "ring-%u", l->kind);
	return (n < 0 || (size_t)n >= len) ? -EINVAL : 0;
}

static uint64_t lanes_off_of(void)
{
	/* header, ring words, then lanes on a 128-byte boundary */
	return (ORBIT_SEG_HEADER_BYTES + sizeof(struct orbit_ring_shm) + 127) & ~127ull;
}

static uint64_t frames_off_of(const struct orbit_ring_layout *l)
{
	return lanes_off_of() + (uint64_t)l->lanes * sizeof(struct orbit_ring_lane);
}

static uint64_t total_of(const struct orbit_ring_layout *l)
{
	return frames_off_of(l) + (uint64_t)l->lanes * l->frames_per_lane * l->frame_bytes;
}

static uint64_t fingerprint_of(const struct orbit_ring_layout *l)
{
	const uint64_t w[] = {
		l->kind,
		ORBIT_RING_LAYOUT_VERSION,
		l->lanes,
		l->frames_per_lane,
		l->frame_bytes,
		sizeof(struct orbit_ring_shm),
		sizeof(struct orbit_ring_lane),
		sizeof(struct orbit_ring_frame_hdr),
		lanes_off_of(),
		frames_off_of(l),
	};
	return orbit__seg_fingerprint(w, sizeof(w) / sizeof(w[0]));
}

static int ring_init(void *body, uint64_t body_bytes, void *arg)
{
	const struct orbit_ring_layout *l = arg;
	struct orbit_ring_shm *s = body;

	if (body_bytes + ORBIT_SEG_HEADER_BYTES < total_of(l))
		return -ORBIT_ESIZE;
	s->lanes = l->lanes;
	s->frames_per_lane = l->frames_per_lane;
	s->frame_bytes = l->frame_bytes;
	s->lanes_off = lanes_off_of();
	s->frames_off = frames_off_of(l);
	/* The fleet's doorbell mode, once: ASYM when the creator can register for membarrier */
	orbit__doorbell_init_mode(&s->doorbell, orbit__doorbell_asym_ready() ? ORBIT_DOORBELL_ASYM
									     : ORBIT_DOORBELL_FULL);
	return 0; /* heads, owners and frames: zero-filled by the segment layer */
}

int orbit__ring_open(orbit_ring_t **out, const char *fleet, const struct orbit_ring_layout *layout,
		     const struct orbit_seg_opts *opts)
{
	struct orbit_seg_opts def = { .how = ORBIT_SEG_OPEN_OR_CREATE };
	struct orbit_ring_layout l;
	struct orbit_seg_spec spec;
	char name[32];
	orbit_ring_t *ring;
	int r;

	if (!out)
		return -EINVAL;
	if (layout)
		l = *layout;
	else
		orbit__ring_layout_default(&l);
	r = layout_check(&l);
	if (r < 0)
		return r;
	r = ring_seg_name(name, sizeof(name), &l);
	if (r < 0)
		return r;
	ring = calloc(1, sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	spec = (struct orbit_seg_spec){
		.kind = l.kind,
		.layout_version = ORBIT_RING_LAYOUT_VERSION,
		.total_bytes = total_of(&l),
		.fingerprint = fingerprint_of(&l),
		.init = ring_init,
		.init_arg = &l,
	};
	r = orbit__seg_open(&ring->seg, fleet, name, &spec, opts ? opts : &def);
	if (r < 0)
		goto err_free;
	ring->layout = l;
	ring->shm = orbit__seg_at(&ring->seg, ORBIT_SEG_HEADER_BYTES, sizeof(*ring->shm));
	ring->lanes = orbit__seg_at(&ring->seg, lanes_off_of(),
				    (uint64_t)l.lanes * sizeof(struct orbit_ring_lane));
	ring->frames = orbit__seg_at(&ring->seg, frames_off_of(&l),
				     (uint64_t)l.lanes * l.frames_per_lane * l.frame_bytes);
	/* The fingerprint matched; the body words are still untrusted bytes */
	if (!ring->shm || !ring->lanes || !ring->frames || ring->shm->lanes != l.lanes ||
	    ring->shm->frames_per_lane != l.frames_per_lane ||
	    ring->shm->frame_bytes != l.frame_bytes || ring->shm->lanes_off != lanes_off_of() ||
	    ring->shm->frames_off != frames_off_of(&l)) {
		r = -ORBIT_ECORRUPT;
		goto err_close;
	}
	/* Chosen once per attach: a process that cannot register publishes with the locked add */
	ring->asym = orbit__doorbell_mode(&ring->shm->doorbell) == ORBIT_DOORBELL_ASYM;
	ring->asym_pub = ring->asym && orbit__doorbell_asym_ready();
	ring->slot_mask = l.frames_per_lane - 1;
	ring->frame_shift = (uint32_t)__builtin_ctz(l.frame_bytes / 8);
	ring->lane_shift = (uint32_t)__builtin_ctz(l.frames_per_lane) + ring->frame_shift;
	ring->cap = l.frame_bytes - ORBIT_RING_FRAME_HDR_BYTES;
	*out = ring;
	return 0;

err_close:
	orbit__seg_close(&ring->seg);
err_free:
	free(ring);
	return r;
}

void orbit__ring_close(orbit_ring_t *ring)
{
	if (!ring)
		return;
	orbit__seg_close(&ring->seg);
	free(ring);
}

int orbit__ring_unlink(const char *fleet, const struct orbit_ring_layout *layout)
{
	struct orbit_ring_layout l;
	char name[32];
	int r;

	if (layout)
		l = *layout;
	else
		orbit__ring_layout_default(&l);
	r = ring_seg_name(name, sizeof(name), &l);
	return r < 0 ? r : orbit__seg_unlink(fleet, name);
}

const struct orbit_ring_layout *orbit__ring_layout(const orbit_ring_t *ring)
{
	return &ring->layout;
}

struct orbit_doorbell *orbit__ring_doorbell(orbit_ring_t *ring)
{
	return &ring->shm->doorbell;
}

orbit_seg_t *orbit__ring_seg(orbit_ring_t *ring)
{
	return &ring->seg;
}

/*
 * The words of @lane's frame at position @pos (8 header words, then the
 * payload's): inside the validated frame area by construction.
 */
static _Atomic uint64_t *frame_at(const orbit_ring_t *ring, uint32_t lane, uint64_t pos)
{
	return ring->frames + ((uint64_t)lane << ring->lane_shift) +
	       ((pos & ring->slot_mask) << ring->frame_shift);
}

/*
 * Frame bytes move as relaxed 64-bit atomic words: a seqlock's data is
 * read while it may be rewritten, and word atomics make that race defined
 * (and visible as such to TSan); the seq words order them (RG-W1/RG-W2, RG-R1/RG-R2).
 * Frames are 64-byte aligned (offsets and frame_bytes are multiples of 64).
 * The publisher stores its words in orbit__ring_publish_skip() (sink_word()).
 */
static void words_load(uint64_t *dst, const _Atomic uint64_t *src, size_t nwords)
{
	for (size_t i = 0; i < nwords; i++) /* Relaxed: ordered by RG-R1 before and RG-R2 after */
		dst[i] = atomic_load_explicit(&src[i], memory_order_relaxed);
}

/* ---- lanes ---- */

static uint64_t owner_word(uint32_t row, uint32_t generation)
{
	return ((uint64_t)row + 1) << 32 | generation;
}

/* 1 when the owner word names a live tenure, 0 when provably not, <0 error. */
static int owner_alive(orbit_members_t *m, uint64_t o)
{
	uint64_t row1 = o >> 32;

	if (o == 0)
		return 0;
	if (row1 == 0 || row1 > orbit__members_rows(m))
		return 0; /* not a row of this directory: garbage, nobody owns it */
	return orbit__members_is_alive_gen(m, (uint32_t)(row1 - 1), (uint32_t)o);
}

int orbit__ring_lane_claim(orbit_ring_t *ring, orbit_members_t *m)
{
	uint32_t gen;
	uint64_t mine;
	int row;

	if (!ring || !m)
		return -EINVAL;
	if (ring->seg.readonly)
		return -EROFS;
	row = orbit__members_self(m, &gen);
	if (row < 0)
		return -ENOENT;
	mine = owner_word((uint32_t)row, gen);
	for (uint32_t i = 0; i < ring->layout.lanes; i++)
		/* Acquire, pairs with the claim CAS below: the lane is already ours */
		if (atomic_load_explicit(&ring->lanes[i].owner, memory_order_acquire) == mine)
			return (int)i;
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < ring->layout.lanes; i++) {
			struct orbit_ring_lane *ln = &ring->lanes[i];
			/* RG-O1: acquire, pairs with RG-C1/RG-C2/RG-C3: the last owner change */
			uint64_t o = atomic_load_explicit(&ln->owner, memory_order_acquire);

			if (pass == 0 && o != 0)
				continue; /* first pass: free lanes only */
			if (pass == 1 && (o == 0 || owner_alive(m, o) != 0))
				continue; /* second pass: lanes whose owner is proven dead */
			/* RG-C1: acq_rel CAS, pairs with RG-C2/RG-C3/RG-O1: the dead owner's last frame stores before our publishes */
			if (!atomic_compare_exchange_strong_explicit(
				&ln->owner, &o, mine, memory_order_acq_rel, memory_order_relaxed))
				continue;
			/* Relaxed: display only */
			atomic_store_explicit(&ln->owner_pid, (uint32_t)getpid(),
					      memory_order_relaxed);
			if (pass == 1) /* Relaxed: a statistics counter */
				atomic_fetch_add_explicit(&ring->shm->reclaims, 1,
							  memory_order_relaxed);
			return (int)i;
		}
	}
	return orbit__seg_refuse(-ENOSPC, &ring->seg,
				 "all %u writer lanes are held by live members (one per process "
				 "whose agent has a lock handle)",
				 ring->layout.lanes);
}

int orbit__ring_lane_release(orbit_ring_t *ring, orbit_members_t *m, uint32_t lane)
{
	uint32_t gen;
	uint64_t mine;
	int row;

	if (!ring || !m || lane >= ring->layout.lanes)
		return -EINVAL;
	if (ring->seg.readonly)
		return -EROFS;
	row = orbit__members_self(m, &gen);
	if (row < 0)
		return -EPERM;
	mine = owner_word((uint32_t)row, gen);
	/* RG-C2: release CAS, pairs with RG-C1/RG-O1 of the next claimer: our frames before the free */
	if (!atomic_compare_exchange_strong_explicit(&ring->lanes[lane].owner, &mine, 0,
						     memory_order_release, memory_order_relaxed))
		return -EPERM;
	return 0;
}

int orbit__ring_lanes_reclaim_dead(orbit_ring_t *ring, orbit_members_t *m)
{
	int n = 0;

	if (!ring || !m)
		return -EINVAL;
	if (ring->seg.readonly)
		return -EROFS;
	for (uint32_t i = 0; i < ring->layout.lanes; i++) {
		struct orbit_ring_lane *ln = &ring->lanes[i];
		/* RG-O1 (again): acquire, pairs with RG-C1/RG-C2/RG-C3 */
		uint64_t o = atomic_load_explicit(&ln->owner, memory_order_acquire);

		if (o == 0 || owner_alive(m, o) != 0)
			continue;
		/* RG-C3: acq_rel, like RG-C1, pairs with RG-C1/RG-O1: a dead owner's frames before the free */
		if (atomic_compare_exchange_strong_explicit(&ln->owner, &o, 0, memory_order_acq_rel,
							    memory_order_relaxed)) {
			/* Relaxed: statistics */
			atomic_fetch_add_explicit(&ring->shm->reclaims, 1, memory_order_relaxed);
			n++;
		}
	}
	return n;
}

uint64_t orbit__ring_lane_owner(const orbit_ring_t *ring, uint32_t lane)
{
	if (!ring || lane >= ring->layout.lanes)
		return 0;
	/* Relaxed: display only */
	return atomic_load_explicit(&ring->lanes[lane].owner, memory_order_relaxed);
}

/* ---- publisher ---- */

/*
 * The publisher builds every frame word in registers and stores it once.
 * A header built in a stack struct (and a payload packed into a stack
 * buffer with memcpy) copied out word by word made each 64-bit load span
 * several narrower stores still in the store buffer: such a load is not
 * forwarded and waits for them to reach the cache, once per word (perf
 * annotate put most of publish's own samples on those two copy loops).
 * The same code runs on either byte order: RING_LATER(x, n) moves the
 * bytes of word @x n places towards higher addresses, RING_EARLIER(x, n)
 * towards lower ones, RING_AT(b, k) is byte @b at address k of a word.
 */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RING_LATER(x, n) ((x) << (8 * (n)))
#define RING_EARLIER(x, n) ((x) >> (8 * (n)))
#define RING_AT(b, k) ((uint64_t)(b) << (8 * (k)))
#define RING_PACK32(a, b) ((uint64_t)(a) | (uint64_t)(b) << 32)
#define RING_PACK16(a, b, c, d)                                                                    \
	((uint64_t)(a) | (uint64_t)(b) << 16 | (uint64_t)(c) << 32 | (uint64_t)(d) << 48)
#else
#define RING_LATER(x, n) ((x) >> (8 * (n)))
#define RING_EARLIER(x, n) ((x) << (8 * (n)))
#define RING_AT(b, k) ((uint64_t)(b) << (56 - 8 * (k)))
#define RING_PACK32(a, b) ((uint64_t)(a) << 32 | (uint64_t)(b))
#define RING_PACK16(a, b, c, d)                                                                    \
	((uint64_t)(a) << 48 | (uint64_t)(b) << 32 | (uint64_t)(c) << 16 | (uint64_t)(d))
#endif

/*
 * RING_F_PADDED (frame flags, internal: readers strip it): ns, label and
 * owner each start on a word boundary of the payload (label at
 * RING_ROUND8(ns_len), owner after the label rounded up likewise), so the
 * publisher copies each part as whole words. A payload that does not fit
 * with the padding (or is truncated) is packed (ns | label | owner).
 */
#define RING_F_PADDED 0x2u
/* In 64 bits: a publisher's lengths near UINT32_MAX must not wrap into "fits" */
#define RING_ROUND8(n) (((uint64_t)(n) + 7u) & ~7ull)
#define RING_PADDED_LEN(ns, label, owner) (RING_ROUND8(ns) + RING_ROUND8(label) + (uint64_t)(owner))
_Static_assert((RING_F_PADDED & ORBIT_RING_F_TRUNCATED) == 0, "frame flag bits");

/* The header words publish builds: struct orbit_ring_frame_hdr's layout, 8 words. */
_Static_assert(offsetof(struct orbit_ring_frame_hdr, type) == 8 &&
		   offsetof(struct orbit_ring_frame_hdr, writer_pid) == 12 &&
		   offsetof(struct orbit_ring_frame_hdr, fencing_token) == 16 &&
		   offsetof(struct orbit_ring_frame_hdr, deadline_ns) == 24 &&
		   offsetof(struct orbit_ring_frame_hdr, state_revision) == 32 &&
		   offsetof(struct orbit_ring_frame_hdr, publish_ns) == 40 &&
		   offsetof(struct orbit_ring_frame_hdr, ns_len) == 48 &&
		   offsetof(struct orbit_ring_frame_hdr, label_len) == 50 &&
		   offsetof(struct orbit_ring_frame_hdr, owner_len) == 52 &&
		   offsetof(struct orbit_ring_frame_hdr, flags) == 54 &&
		   offsetof(struct orbit_ring_frame_hdr, orig_len) == 56 &&
		   offsetof(struct orbit_ring_frame_hdr, reserved0) == 60,
	       "ring frame header words");

/* Payload words being assembled: the first @nb (0..7) bytes of @acc wait for the rest of *dst. */
struct word_sink {
	_Atomic uint64_t *dst;
	uint64_t acc;
	uint32_t nb;
};

/* Append word @w, whose first @len (1..8) bytes count and whose others are zero. */
static inline void sink_word(struct word_sink *s, uint64_t w, uint32_t len)
{
	s->acc |= RING_LATER(w, s->nb);
	s->nb += len;
	if (s->nb < 8)
		return;
	/* Relaxed: ordered by RG-W1 before and RG-W2 after */
	atomic_store_explicit(s->dst++, s->acc, memory_order_relaxed);
	s->nb -= 8;
	/* the bytes of @w that did not fit (none when nb is 0: a shift by 64 is undefined) */
	s->acc = s->nb ? RING_EARLIER(w, len - s->nb) : 0;
}

/* Append @len bytes at @src, read as 8-byte loads that never reach past @src + @len. */
static inline __attribute__((always_inline)) void sink_bytes(struct word_sink *s,
							     const uint8_t *src, uint32_t len)
{
	uint64_t w;

	if (len < 8) {
		if (len == 0)
			return;
		w = 0;
		for (uint32_t i = 0; i < len; i++)
			w |= RING_AT(src[i], i);
		sink_word(s, w, len);
		return;
	}
	for (; len >= 8; src += 8, len -= 8) {
		memcpy(&w, src, 8);
		sink_word(s, w, 8);
	}
	if (len) { /* the last 8 bytes, of which the first 8 - len are in already */
		memcpy(&w, src + len - 8, 8);
		sink_word(s, RING_EARLIER(w, 8 - len), len);
	}
}

/* Store the last partial word: the bytes after the payload are zero, never stale stack. */
static inline void sink_flush(struct word_sink *s)
{
	if (s->nb) /* Relaxed: ordered by RG-W1 before and RG-W2 after */
		atomic_store_explicit(s->dst, s->acc, memory_order_relaxed);
}

/*
 * Store the @len bytes at @src as whole words from @dst on (the last
 * word's bytes past @len zero); returns the word after them. Each word is
 * one 8-byte load of the source (the last one overlapping the one before
 * it, shifted so its new bytes come first) and one store: no shifts
 * between parts, no dependency from word to word, and no load of bytes
 * still in the store buffer. One count of words drives the loop (the
 * last word is the overlapping one, also when @len is a multiple of 8:
 * then its shift is 0), so a part of 9..16 bytes is two loads and two
 * stores; up to 24 bytes (the common ns, label and owner) take no loop.
 */
static inline __attribute__((always_inline)) _Atomic uint64_t *
put_part(_Atomic uint64_t *dst, const uint8_t *src, uint32_t len)
{
	uint64_t w;
	uint32_t nw, i;

	if (len < 8) {
		if (len == 0)
			return dst;
		w = 0;
		for (i = 0; i < len; i++)
			w |= RING_AT(src[i], i);
		/* Relaxed: ordered by RG-W1 before and RG-W2 after */
		atomic_store_explicit(dst, w, memory_order_relaxed);
		return dst + 1;
	}
	if (len <= 24) { /* the common key and owner parts: no loop */
		memcpy(&w, src, 8);
		/* Relaxed: as above */
		atomic_store_explicit(&dst[0], w, memory_order_relaxed);
		if (len == 8)
			return dst + 1;
		if (len > 16) {
			memcpy(&w, src + 8, 8);
			/* Relaxed: as above */
			atomic_store_explicit(&dst[1], w, memory_order_relaxed);
		}
		nw = len > 16 ? 3 : 2;
		memcpy(&w, src + len - 8, 8);
		/* Relaxed: as above */
		atomic_store_explicit(&dst[nw - 1], RING_EARLIER(w, 8 * nw - len),
				      memory_order_relaxed);
		return dst + nw;
	}
	nw = (len + 7) / 8;
	for (i = 0; i + 1 < nw; i++) {
		memcpy(&w, src + 8 * i, 8);
		/* Relaxed: as above */
		atomic_store_explicit(&dst[i], w, memory_order_relaxed);
	}
	/* the last 8 bytes, of which the first 8 * nw - len are in the word before */
	memcpy(&w, src + len - 8, 8);
	/* Relaxed: as above */
	atomic_store_explicit(&dst[i], RING_EARLIER(w, 8 * nw - len), memory_order_relaxed);
	return dst + nw;
}

int orbit__ring_publish(orbit_ring_t *ring, uint32_t lane, const struct orbit_transition *t)
{
	return orbit__ring_publish_skip(ring, lane, t, 0);
}

/*
 * Header words 1..7 (struct orbit_ring_frame_hdr after seq), built in
 * registers (@w1: type and writer pid): the caller stored the odd seq
 * (RG-W1) before.
 */
static inline __attribute__((always_inline)) void
put_header(_Atomic uint64_t *w, uint64_t w1, uint64_t token, uint64_t deadline, uint64_t revision,
	   uint64_t now, uint32_t ns_len, uint32_t label_len, uint32_t owner_len, uint32_t flags,
	   uint64_t orig)
{
	/* Relaxed, every header word but seq: ordered by RG-W1 before and RG-W2 after */
	atomic_store_explicit(&w[1], w1, memory_order_relaxed);
	atomic_store_explicit(&w[2], token, memory_order_relaxed);
	atomic_store_explicit(&w[3], deadline, memory_order_relaxed);
	atomic_store_explicit(&w[4], revision, memory_order_relaxed);
	atomic_store_explicit(&w[5], now, memory_order_relaxed);
	atomic_store_explicit(&w[6], RING_PACK16(ns_len, label_len, owner_len, flags),
			      memory_order_relaxed);
	atomic_store_explicit(&w[7],
			      RING_PACK32(orig > UINT32_MAX ? UINT32_MAX : (uint32_t)orig, 0),
			      memory_order_relaxed);
}

/*
 * The rare frame, out of line so the common one keeps its registers: a
 * payload that does not fit with the padding is packed (ns | label |
 * owner, byte by byte into words), one that does not fit at all is
 * truncated first (owner cut first, then label, then ns: the key is what
 * readers look up). Writes header words 1..7 and the payload; returns 1
 * when truncated, else 0.
 */
static __attribute__((noinline)) int put_packed(const orbit_ring_t *ring, _Atomic uint64_t *w,
						const struct orbit_transition *t, uint64_t w1,
						uint64_t now)
{
	uint32_t cap = ring->cap, ns_keep, label_keep, owner_keep;
	uint64_t orig = (uint64_t)t->ns_len + t->label_len + t->owner_len;
	struct word_sink sink;
	int truncated = orig > cap;

	ns_keep = t->ns_len < cap ? t->ns_len : cap;
	label_keep = t->label_len < cap - ns_keep ? t->label_len : cap - ns_keep;
	owner_keep = t->owner_len < cap - ns_keep - label_keep ? t->owner_len
							       : cap - ns_keep - label_keep;
	put_header(w, w1, t->fencing_token, t->deadline_ns, t->state_revision, now, ns_keep,
		   label_keep, owner_keep, truncated ? ORBIT_RING_F_TRUNCATED : 0, orig);
	sink = (struct word_sink){ .dst = w + ORBIT_RING_FRAME_HDR_BYTES / 8 };
	sink_bytes(&sink, t->ns, ns_keep);
	sink_bytes(&sink, t->label, label_keep);
	sink_bytes(&sink, t->owner, owner_keep);
	sink_flush(&sink);
	return truncated;
}

int orbit__ring_publish_skip(orbit_ring_t *ring, uint32_t lane, const struct orbit_transition *t,
			     uint32_t skip)
{
	struct orbit_ring_lane *ln;
	_Atomic uint64_t *w;
	uint64_t pos, now, span, w1;
	uint32_t ns_len, label_len, owner_len;
	int truncated = 0;

	if (!ring || !t || lane >= ring->layout.lanes || t->type < ORBIT_TRANSITION_ACQUIRE ||
	    t->type > ORBIT_TRANSITION_REPAIR || (t->ns_len && !t->ns) ||
	    (t->label_len && !t->label) || (t->owner_len && !t->owner))
		return -EINVAL;
	if (ring->seg.readonly)
		return -EROFS;
	/* The stamp first: nothing of the frame is live across the vDSO call, no spills */
	now = orbit__now_mono_ns();
	ns_len = t->ns_len;
	label_len = t->label_len;
	owner_len = t->owner_len;
	w1 = RING_PACK32(t->type, t->writer_pid ? t->writer_pid : (uint32_t)ring->seg.pid);
	ln = &ring->lanes[lane];
	/* Acquire, pairs with RG-W3 of a previous (possibly dead) publisher of this lane */
	pos = atomic_load_explicit(&ln->head, memory_order_acquire);
	w = frame_at(ring, lane, pos);
	span = RING_PADDED_LEN(ns_len, label_len, owner_len);

	/* RG-W1: odd seq, then a release fence: pairs with RG-R2 (a reader re-checking sees odd/newer) */
	atomic_store_explicit(&w[0], 2 * pos + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	if (__builtin_expect(span <= ring->cap, 1)) {
		/* The common frame: whole, each part from a word boundary (RING_F_PADDED) */
		_Atomic uint64_t *p = w + ORBIT_RING_FRAME_HDR_BYTES / 8;

		put_header(w, w1, t->fencing_token, t->deadline_ns, t->state_revision, now, ns_len,
			   label_len, owner_len, RING_F_PADDED,
			   (uint64_t)ns_len + label_len + owner_len);
		p = put_part(p, t->ns, ns_len);
		p = put_part(p, t->label, label_len);
		put_part(p, t->owner, owner_len);
	} else {
		truncated = put_packed(ring, w, t, w1, now);
	}
	/* A publisher killed here leaves seq odd and the head unmoved (kill tests) */
	ORBIT_CRASHPOINT("ring.publish.mid_frame");
	/* RG-W2: release, pairs with RG-R1 in read_lane(): frame bytes before the even seq */
	atomic_store_explicit(&w[0], 2 * pos + 2, memory_order_release);
	/* RG-W3: release, pairs with RG-R0 in read_lane(): the complete frame before the head */
	atomic_store_explicit(&ln->head, pos + 1, memory_order_release);
	ORBIT_CRASHPOINT("ring.publish.after_head");
	if (__builtin_expect(truncated, 0)) /* Relaxed: a statistics counter */
		atomic_fetch_add_explicit(&ring->shm->truncated, 1, memory_order_relaxed);
	/*
	 * DB-M2 (ASYM: a compiler barrier, then the sleeping load; partner DB-M1
	 * in reader_wait(), which re-checks the heads RG-W3 stored) or DB-D1/DB-D2
	 * (FULL): wakes only if a reader of a class not in @skip sleeps.
	 */
	orbit__doorbell_notify_skip(&ring->shm->doorbell, skip & ~ORBIT_DOORBELL_SHARED,
				    ring->asym_pub);
	return truncated;
}

void orbit__ring_sink_skip(struct orbit_ring_sink *s, const struct orbit_transition *t,
			   uint32_t skip)
{
	if (!s)
		return;
	if (orbit__ring_publish_skip(s->ring, s->lane, t, skip) < 0)
		/* Relaxed: a failure counter; the lock's outcome never depends on it */
		atomic_fetch_add_explicit(&s->failed, 1, memory_order_relaxed);
}

int orbit__ring_reset(orbit_ring_t *ring, orbit_members_t *m)
{
	struct orbit_seg_header *h;

	if (!ring)
		return -EINVAL;
	if (ring->seg.readonly)
		return -EROFS;
	for (uint32_t i = 0; i < ring->layout.lanes; i++) {
		/* Relaxed: ordered before RG-G1 by its release */
		atomic_store_explicit(&ring->lanes[i].head, 0, memory_order_relaxed);
	}
	/* Relaxed, word by word (readers may be copying): ordered before RG-G1 by its release */
	for (uint64_t i = 0, n = (uint64_t)ring->layout.lanes * ring->layout.frames_per_lane *
				 (ring->layout.frame_bytes / 8);
	     i < n; i++)
		atomic_store_explicit(&ring->frames[i], 0, memory_order_relaxed);
	h = orbit__seg_header(&ring->seg);
	/* RG-G1: release, pairs with RG-G2 in orbit__ring_reader_next(): cleared lanes before the bump */
	atomic_fetch_add_explicit(&h->generation, 1, memory_order_release);
	/* Relaxed: a statistics counter */
	atomic_fetch_add_explicit(&ring->shm->resets, 1, memory_order_relaxed);
	if (m)
		orbit__ring_lanes_reclaim_dead(ring, m);
	orbit__doorbell_ring(&ring->shm->doorbell); /* sleeping readers notice the reset */
	return 0;
}

void orbit__ring_counters(const orbit_ring_t *ring, struct orbit_ring_counters *c)
{
	memset(c, 0, sizeof(*c));
	/* Relaxed loads throughout: statistics, no ordering implied */
	c->truncated = atomic_load_explicit(&ring->shm->truncated, memory_order_relaxed);
	c->resets = atomic_load_explicit(&ring->shm->resets, memory_order_relaxed);
	c->reclaims = atomic_load_explicit(&ring->shm->reclaims, memory_order_relaxed);
	c->doorbell_wakes = orbit__doorbell_wakes(&ring->shm->doorbell);
	for (uint32_t i = 0; i < ring->layout.lanes; i++)
		c->published += atomic_load_explicit(&ring->lanes[i].head, memory_order_relaxed);
}

/* ---- readers ---- */

static uint64_t head_of(const orbit_ring_t *ring, uint32_t lane)
{
	/* RG-R0: acquire, pairs with RG-W3 in orbit__ring_publish(): frames below head are complete */
	return atomic_load_explicit(&ring->lanes[lane].head, memory_order_acquire);
}

/* Oldest position safe to read while a writer may be rewriting slot (head). */
static uint64_t oldest_safe(const orbit_ring_t *ring, uint64_t h)
{
	uint64_t n = ring->layout.frames_per_lane;

	return h >= n ? h - n + 1 : 0;
}

static void resync(orbit_ring_reader_t *r)
{
	for (uint32_t i = 0; i < r->ring->layout.lanes; i++)
		r->cursor[i] = head_of(r->ring, i);
}

static uint64_t generation_of(const orbit_ring_t *ring)
{
	/* RG-G2: acquire, pairs with RG-G1 in orbit__ring_reset() */
	return atomic_load_explicit(&orbit__seg_header(&ring->seg)->generation,
				    memory_order_acquire);
}

int orbit__ring_reader_open(orbit_ring_reader_t **out, orbit_ring_t *ring)
{
	orbit_ring_reader_t *r;

	if (!out || !ring)
		return -EINVAL;
	r = calloc(1, sizeof(*r) + ring->layout.lanes * sizeof(uint64_t));
	if (!r)
		return -ENOMEM;
	r->ring = ring;
	r->wake_class = ORBIT_DOORBELL_SHARED;
	r->generation = generation_of(ring);
	resync(r); /* subscribe after the current heads */
	*out = r;
	return 0;
}

void orbit__ring_reader_close(orbit_ring_reader_t *r)
{
	free(r);
}

void orbit__ring_reader_rewind(orbit_ring_reader_t *r)
{
	uint64_t n = r->ring->layout.frames_per_lane;

	r->generation = generation_of(r->ring);
	for (uint32_t i = 0; i < r->ring->layout.lanes; i++) {
		uint64_t h = head_of(r->ring, i);
		r->cursor[i] = h > n ? h - n : 0;
	}
}

static int lagged(orbit_ring_reader_t *r, uint32_t lane, uint64_t h)
{
	r->cursor[lane] = oldest_safe(r->ring, h);
	r->c.lagged++;
	return -ORBIT_ELAGGED;
}

static int corrupt(orbit_ring_reader_t *r, uint32_t lane)
{
	r->cursor[lane]++;
	r->c.corrupt++;
	return -ORBIT_ECORRUPT;
}

/* Validate a private copy of a frame header. */
static bool frame_ok(const orbit_ring_t *ring, const struct orbit_ring_frame_hdr *f)
{
	uint32_t cap = ring->cap;
	uint32_t sum = (uint32_t)f->ns_len + f->label_len + f->owner_len;

	if (f->type < ORBIT_TRANSITION_ACQUIRE || f->type > ORBIT_TRANSITION_REPAIR)
		return false;
	if (f->ns_len > cap || f->label_len > cap || f->owner_len > cap || sum > cap)
		return false;
	if (f->flags & ~(ORBIT_RING_F_TRUNCATED | RING_F_PADDED))
		return false;
	if (f->flags & RING_F_PADDED) /* never truncated, and the padding fits */
		return !(f->flags & ORBIT_RING_F_TRUNCATED) && f->orig_len == sum &&
		       RING_PADDED_LEN(f->ns_len, f->label_len, f->owner_len) <= cap;
	if (f->flags & ORBIT_RING_F_TRUNCATED)
		return f->orig_len > sum;
	return f->orig_len == sum;
}

static int read_lane(orbit_ring_reader_t *r, uint32_t lane, struct orbit_ring_event *ev)
{
	const orbit_ring_t *ring = r->ring;
	uint64_t c = r->cursor[lane], h, s1, s2, want;
	const _Atomic uint64_t *f;
	struct orbit_ring_frame_hdr hdr;
	uint64_t hw[ORBIT_RING_FRAME_HDR_BYTES / 8];
	uint64_t stage[ORBIT_RING_PAYLOAD_MAX / 8];
	uint32_t cap = ring->cap;
	uint32_t plen, span;
	bool padded;

	h = head_of(ring, lane);
	if (h == c)
		return -EAGAIN;
	if ((int64_t)(h - c) < 0) {
		/* Head behind our cursor: a reset (or garbage head). Start over at the head. */
		r->cursor[lane] = h;
		r->c.lagged++;
		return -ORBIT_ELAGGED;
	}
	if (h - c > ring->layout.frames_per_lane)
		return lagged(r, lane, h); /* position c + frames is complete: slot rewritten */
	/* 0 < h - c <= frames: slot c holds position c unless the writer began c + frames */
	f = frame_at(ring, lane, c);
	want = 2 * c + 2;
	/* RG-R1: acquire, pairs with RG-W2: the frame's bytes before its even seq */
	s1 = atomic_load_explicit(&f[0], memory_order_acquire);
	if (s1 != want) {
		h = head_of(ring, lane);
		if (s1 > want && h - c >= ring->layout.frames_per_lane)
			return lagged(r, lane, h);
		return corrupt(r, lane); /* below the head yet not complete: bad bytes */
	}
	words_load(hw, f, ORBIT_RING_FRAME_HDR_BYTES / 8);
	memcpy(&hdr, hw, sizeof(hdr)); /* the plain copy's fields are the words' bytes */
	/* Only lengths from the copy are used; bound them before touching payload bytes */
	plen = (uint32_t)hdr.ns_len + hdr.label_len + hdr.owner_len;
	padded = hdr.flags & RING_F_PADDED;
	span = padded ? (uint32_t)RING_PADDED_LEN(hdr.ns_len, hdr.label_len, hdr.owner_len) : plen;
	if (span > cap)
		span = plen = 0; /* frame_ok() refuses it below */
	words_load(stage, f + ORBIT_RING_FRAME_HDR_BYTES / 8, (span + 7) / 8);
	if (padded && span) { /* the parts side by side again: ns | label | owner */
		const uint8_t *b = (const uint8_t *)stage;
		uint32_t a1 = RING_ROUND8(hdr.ns_len), a2 = a1 + RING_ROUND8(hdr.label_len);

		memcpy(ev->bytes, b, hdr.ns_len);
		memcpy(ev->bytes + hdr.ns_len, b + a1, hdr.label_len);
		memcpy(ev->bytes + hdr.ns_len + hdr.label_len, b + a2, hdr.owner_len);
	} else {
		memcpy(ev->bytes, stage, plen);
	}
	/* RG-R2: acquire fence, pairs with RG-W1: the copies above happen before the re-check */
	atomic_thread_fence(memory_order_acquire);
	s2 = atomic_load_explicit(&f[0], memory_order_relaxed);
	if (s2 != s1) {
		h = head_of(ring, lane);
		if ((int64_t)(h - c) >= (int64_t)ring->layout.frames_per_lane)
			return lagged(r, lane, h);
		return corrupt(r, lane);
	}
	if (!frame_ok(ring, &hdr))
		return corrupt(r, lane);
	ev->lane = lane;
	ev->type = hdr.type;
	ev->writer_pid = hdr.writer_pid;
	ev->flags = hdr.flags & ~RING_F_PADDED; /* a layout bit, not the transition's */
	ev->lane_pos = c;
	ev->fencing_token = hdr.fencing_token;
	ev->deadline_ns = hdr.deadline_ns;
	ev->state_revision = hdr.state_revision;
	ev->publish_ns = hdr.publish_ns;
	ev->ns_len = hdr.ns_len;
	ev->label_len = hdr.label_len;
	ev->owner_len = hdr.owner_len;
	ev->orig_len = hdr.orig_len;
	r->cursor[lane] = c + 1;
	r->c.read++;
	return 0;
}

int orbit__ring_reader_next(orbit_ring_reader_t *r, struct orbit_ring_event *ev, uint32_t *lane_out)
{
	uint32_t lanes;
	uint64_t g;

	if (!r || !ev)
		return -EINVAL;
	lanes = r->ring->layout.lanes;
	g = generation_of(r->ring);
	if (g != r->generation) {
		r->generation = g;
		resync(r);
		r->c.lagged++;
		if (lane_out)
			*lane_out = lanes; /* every lane */
		return -ORBIT_ELAGGED;
	}
	for (uint32_t k = 0; k < lanes; k++) {
		uint32_t lane = (r->next_lane + k) % lanes;
		int rc = read_lane(r, lane, ev);

		if (rc == -EAGAIN)
			continue;
		r->next_lane = (lane + 1) % lanes;
		if (lane_out)
			*lane_out = lane;
		return rc;
	}
	return -EAGAIN;
}

int orbit__ring_replay_retained(orbit_ring_t *ring,
				int (*fn)(void *ctx, const struct orbit_ring_event *ev), void *ctx)
{
	struct orbit_ring_event *ev;
	orbit_ring_reader_t *r;
	uint64_t budget;
	int n = 0, rc;

	if (!ring || !fn)
		return -EINVAL;
	rc = orbit__ring_reader_open(&r, ring);
	if (rc < 0)
		return rc;
	ev = malloc(sizeof(*ev));
	if (!ev) {
		orbit__ring_reader_close(r);
		return -ENOMEM;
	}
	orbit__ring_reader_rewind(r);
	/* Bounded: writers may keep publishing while we walk */
	budget = 2ull * ring->layout.lanes * ring->layout.frames_per_lane;
	while (budget--) {
		rc = orbit__ring_reader_next(r, ev, NULL);
		if (rc == -EAGAIN)
			break;
		if (rc < 0)
			continue; /* lagged or corrupt: skipped */
		n++;
		if (fn(ctx, ev))
			break;
	}
	free(ev);
	orbit__ring_reader_close(r);
	return n;
}

uint32_t orbit__ring_reader_arm(orbit_ring_reader_t *r)
{
	return orbit__doorbell_seq(&r->ring->shm->doorbell);
}

/*
 * The ASYM waiter's re-check after its membarrier (DB-M1): 1 when a lane's
 * head (RG-R0, acquire) passed our cursor or the ring was reset, so
 * reader_next() has something to return.
 */
static int reader_pending(void *ctx)
{
	orbit_ring_reader_t *r = ctx;

	if (generation_of(r->ring) != r->generation)
		return 1;
	for (uint32_t i = 0; i < r->ring->layout.lanes; i++)
		if (head_of(r->ring, i) != r->cursor[i])
			return 1;
	return 0;
}

int orbit__ring_reader_wait(orbit_ring_reader_t *r, uint32_t seen, int64_t timeout_ns)
{
	struct orbit_doorbell *db = &r->ring->shm->doorbell;

	if (r->ring->asym) /* publishers may not bump seq: re-check the heads after DB-M1 */
		return orbit__doorbell_wait_pending(db, seen, timeout_ns, r->wake_class,
						    reader_pending, r);
	return orbit__doorbell_wait_class(db, seen, timeout_ns, r->wake_class);
}

void orbit__ring_reader_set_wake_class(orbit_ring_reader_t *r, uint32_t bit)
{
	r->wake_class = bit ? bit : ORBIT_DOORBELL_SHARED;
}

void orbit__ring_reader_counters(const orbit_ring_reader_t *r, struct orbit_ring_reader_counters *c)
{
	*c = r->c;
}
