// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_ring.c: the transition ring (shm/ring.h) in one process:
 * issue 5 "Transition ring" (wrap and lag, replay_retained, a new handle
 * subscribes after the current heads, too-big transitions, random bytes in
 * frames never crash a reader, reset) and spec orbit-lock "Lifecycle".
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "orbit_test.h"
#include <orbit/error.h>
#include "shm/ring.h"

struct fx {
	char fleet[64];
	struct orbit_ring_layout l;
	orbit_ring_t *ring;
	orbit_ring_reader_t *r;
	struct orbit_ring_event ev;
};

static int setup_layout(void **state, uint32_t lanes, uint32_t frames, uint32_t bytes)
{
	struct fx *f = calloc(1, sizeof(*f));

	orbit_test_fleet(f->fleet, sizeof(f->fleet), "ring");
	orbit__ring_layout_default(&f->l);
	f->l.lanes = lanes;
	f->l.frames_per_lane = frames;
	f->l.frame_bytes = bytes;
	if (orbit__ring_open(&f->ring, f->fleet, &f->l, NULL) != 0)
		return -1;
	*state = f;
	return 0;
}

static int setup_small(void **state)
{
	return setup_layout(state, 2, 8, 256);
}

static int setup_default(void **state)
{
	return setup_layout(state, ORBIT_RING_DEFAULT_LANES, ORBIT_RING_DEFAULT_FRAMES,
			    ORBIT_RING_DEFAULT_FRAME_BYTES);
}

static int teardown(void **state)
{
	struct fx *f = *state;

	orbit__ring_reader_close(f->r);
	orbit__ring_close(f->ring);
	orbit__ring_unlink(f->fleet, &f->l);
	free(f);
	return 0;
}

static void publish(orbit_ring_t *ring, uint32_t lane, uint64_t rev, const char *label)
{
	struct orbit_transition t = {
		.type = ORBIT_TRANSITION_ACQUIRE,
		.fencing_token = rev * 10,
		.deadline_ns = 1000 + rev,
		.state_revision = rev,
		.ns = "runtime.tasks",
		.ns_len = 13,
		.label = label,
		.label_len = (uint32_t)strlen(label),
		.owner = "owner-1",
		.owner_len = 7,
	};
	assert_int_equal(orbit__ring_publish(ring, lane, &t), 0);
}

/* Spec orbit-lock "Lifecycle": a new handle subscribes after the current transition heads. */
static void test_new_reader_starts_after_heads(void **state)
{
	struct fx *f = *state;
	uint32_t lane = 99;

	for (uint64_t i = 1; i <= 5; i++)
		publish(f->ring, i & 1, i, "k");
	assert_int_equal(orbit__ring_reader_open(&f->r, f->ring), 0);
	assert_int_equal(orbit__ring_reader_next(f->r, &f->ev, &lane), -EAGAIN);
	publish(f->ring, 1, 6, "key-6");
	assert_int_equal(orbit__ring_reader_next(f->r, &f->ev, &lane), 0);
	assert_int_equal(lane, 1);
	assert_int_equal(f->ev.state_revision, 6);
	assert_int_equal(f->ev.lane_pos, 3); /* lane 1 had positions 0..2 (revisions 1, 3, 5) */
	assert_int_equal(f->ev.fencing_token, 60);
	assert_int_equal(f->ev.type, ORBIT_TRANSITION_ACQUIRE);
	assert_int_equal(f->ev.writer_pid, getpid());
	assert_int_equal(f->ev.ns_len, 13);
	assert_int_equal(f->ev.label_len, 5);
	assert_int_equal(f->ev.owner_len, 7);
	assert_memory_equal(f->ev.bytes, "runtime.taskskey-6owner-1", 25);
	assert_int_equal(orbit__ring_reader_next(f->r, &f->ev, &lane), -EAGAIN);
}

/* Issue 5: ring wrap and lag: overwrite is detected and reported, then reading resumes at the oldest retained. */
static void test_wrap_and_lag(void **state)
{
	struct fx *f = *state;
	struct orbit_ring_reader_counters c;
	uint32_t lane;
	uint64_t expect;

	assert_int_equal(orbit__ring_reader_open(&f->r, f->ring), 0);
	/* 7 = frames - 1: everything still readable, no lag */
	for (uint64_t i = 1; i <= 7; i++)
		publish(f->ring, 0, i, "a");
	for (uint64_t i = 1; i <= 7; i++) {
		assert_int_equal(orbit__ring_reader_next(f->r, &f->ev, &lane), 0);
		assert_int_equal(f->ev.state_revision, i);
	}
	assert_int_equal(orbit__ring_reader_next(f->r, &f->ev, &lane), -EAGAIN);
	/* 20 more on an 8-frame lane: the reader is lapped */
	for (uint64_t i = 8; i <= 27; i++)
		publish(f->ring, 0, i, "a");
	assert_int_equal(orbit__ring_reader_next(f->r, &f->ev, &lane), -ORBIT_ELAGGED);
	assert_int_equal(lane, 0);
	/* resumes at the oldest safe frame: head 27 - 8 + 1 = position 20 = revision 21 */
	expect = 21;
	while (orbit__ring_reader_next(f->r, &f->ev, &lane) == 0)
		assert_int_equal(f->ev.state_revision, expect++);
	assert_int_equal(expect, 28);
	orbit__ring_reader_counters(f->r, &c);
	assert_int_equal(c.lagged, 1);
	assert_int_equal(c.read, 7 + 7);
	assert_int_equal(c.corrupt, 0);
}

static int collect(void *ctx, const struct orbit_ring_event *ev)
{
	uint64_t *revs = ctx;

	revs[++revs[0]] = ev->state_revision;
	return 0;
}

/* replay hands out validated events only, whatever bytes the frames hold (256-byte frames) */
static int check_valid_cb(void *ctx, const struct orbit_ring_event *ev)
{
	(void)ctx;
	assert_true(ev->type >= ORBIT_TRANSITION_ACQUIRE && ev->type <= ORBIT_TRANSITION_REPAIR);
	assert_true(ev->ns_len + ev->label_len + ev->owner_len <= 192);
	return 0;
}

/* Spec orbit-lock "Lifecycle": replay_retained returns what is still retained. */
static void test_replay_retained(void **state)
{
	struct fx *f = *state;
	uint64_t revs[64] = { 0 };

	assert_int_equal(orbit__ring_replay_retained(f->ring, collect, revs), 0);
	for (uint64_t i = 1; i <= 3; i++)
		publish(f->ring, 1, i, "b");
	assert_int_equal(orbit__ring_replay_retained(f->ring, collect, revs), 3);
	assert_int_equal(revs[0], 3);
	assert_int_equal(revs[1], 1);
	assert_int_equal(revs[3], 3);
	for (uint64_t i = 4; i <= 30; i++)
		publish(f->ring, 1, i, "b");
	memset(revs, 0, sizeof(revs));
	/* 8 frames per lane retained: revisions 23..30, in order */
	assert_int_equal(orbit__ring_replay_retained(f->ring, collect, revs), 8);
	for (uint64_t i = 1; i <= 8; i++)
		assert_int_equal(revs[i], 22 + i);
}

/* Issue 5: a transition too big for a frame is truncated (owner first), flagged and counted. */
static void test_frame_too_big_truncated_and_counted(void **state)
{
	struct fx *f = *state;
	struct orbit_ring_counters rc;
	char big[300];
	uint32_t lane;
	struct orbit_transition t = {
		.type = ORBIT_TRANSITION_RELEASE,
		.state_revision = 9,
		.ns = "ns",
		.ns_len = 2,
		.label = big,
		.label_len = 150,
		.owner = big,
		.owner_len = 100,
	};

	memset(big, 'x', sizeof(big));
	assert_int_equal(orbit__ring_reader_open(&f->r, f->ring), 0);
	/* 256-byte frames: 192 payload bytes; 2 + 150 + 100 = 252 does not fit */
	assert_int_equal(orbit__ring_publish(f->ring, 0, &t), 1);
	orbit__ring_counters(f->ring, &rc);
	assert_int_equal(rc.truncated, 1);
	assert_int_equal(orbit__ring_reader_next(f->r, &f->ev, &lane), 0);
	assert_true(f->ev.flags & ORBIT_RING_F_TRUNCATED);
	assert_int_equal(f->ev.ns_len, 2);
	assert_int_equal(f->ev.label_len, 150);
	assert_int_equal(f->ev.owner_len, 40);
	assert_int_equal(f->ev.orig_len, 252);
	assert_int_equal(f->ev.state_revision, 9);
	/* label cut when even the key does not fit */
	t.label_len = 250;
	assert_int_equal(orbit__ring_publish(f->ring, 0, &t), 1);
	assert_int_equal(orbit__ring_reader_next(f->r, &f->ev, &lane), 0);
	assert_int_equal(f->ev.label_len, 190);
	assert_int_equal(f->ev.owner_len, 0);
	/* exactly the payload size fits untruncated */
	t.label_len = 90;
	assert_int_equal(orbit__ring_publish(f->ring, 0, &t), 0);
	assert_int_equal(orbit__ring_reader_next(f->r, &f->ev, &lane), 0);
	assert_int_equal(f->ev.flags, 0);
	assert_int_equal(f->ev.owner_len, 100);
	orbit__ring_counters(f->ring, &rc);
	assert_int_equal(rc.truncated, 2);
}

/*
 * Issue 12 (publish picks the padded frame by one 64-bit sum of the
 * rounded lengths): part lengths near UINT32_MAX, whose rounding up to a
 * word would wrap a 32-bit sum to a small value, are truncated to the
 * frame (ns first in, label and owner cut), never copied as if they fit.
 * The sources are 192 readable bytes: publish may read only what it keeps.
 */
static void test_huge_part_lengths_truncated_not_wrapped(void **state)
{
	struct fx *f = *state;
	char big[192];
	uint32_t lane;
	struct orbit_transition t = {
		.type = ORBIT_TRANSITION_ACQUIRE,
		.ns = big,
		.ns_len = UINT32_MAX - 3, /* + 7 wraps to 3 in 32 bits */
		.label = big,
		.label_len = UINT32_MAX - 6,
		.owner = big,
		.owner_len = 5,
	};

	memset(big, 'k', sizeof(big));
	assert_int_equal(orbit__ring_reader_open(&f->r, f->ring), 0);
	assert_int_equal(orbit__ring_publish(f->ring, 0, &t), 1);
	assert_int_equal(orbit__ring_reader_next(f->r, &f->ev, &lane), 0);
	assert_true(f->ev.flags & ORBIT_RING_F_TRUNCATED);
	assert_int_equal(f->ev.ns_len, 192);
	assert_int_equal(f->ev.label_len, 0);
	assert_int_equal(f->ev.owner_len, 0);
	assert_int_equal(f->ev.orig_len, UINT32_MAX); /* saturated */
	assert_memory_equal(f->ev.bytes, big, 192);
}

/*
 * Issue 12 (publish builds frame words in registers; each part from a word
 * boundary): every split of the payload into ns, label and owner lengths
 * 0..17 and 23, 24, 25, 32, 33, 41 (short parts, the unrolled parts of
 * 8..16 and 17..24 bytes and the looped longer ones, ends on and off word
 * boundaries) comes
 * back byte for byte with its header fields, and in SHM each part starts
 * on a word boundary (label at round8(ns), owner at round8(ns) +
 * round8(label)) with zero bytes after it up to the next boundary, not
 * bytes of an earlier publish. Each source is its own malloc of exactly
 * its length, so the ASan run catches a load past a part's end.
 */
static void test_payload_every_split_round_trips_zero_padded(void **state)
{
	struct fx *f = *state;
	orbit_seg_t *seg = orbit__ring_seg(f->ring);
	uint64_t frames_bytes = 2ull * 8 * 256;
	uint8_t *area = orbit__seg_at(seg, seg->size - frames_bytes, frames_bytes);
	static const uint32_t lens[] = { 0,  1,	 2,  3,	 4,  5,	 6,  7,	 8,  9,	 10, 11,
					 12, 13, 14, 15, 16, 17, 23, 24, 25, 32, 33, 41 };
	const unsigned nl = sizeof(lens) / sizeof(lens[0]);
	uint8_t want[3 * 41];
	uint64_t pos = 0;
	uint32_t lane;

	assert_non_null(area);
	assert_int_equal(orbit__ring_reader_open(&f->r, f->ring), 0);
	for (unsigned ia = 0; ia < nl; ia++)
		for (unsigned ib = 0; ib < nl; ib++)
			for (unsigned ic = 0; ic < nl; ic++, pos++) {
				uint32_t a = lens[ia], b = lens[ib], c = lens[ic];
				uint8_t *ns = malloc(a ? a : 1), *label = malloc(b ? b : 1);
				uint8_t *owner = malloc(c ? c : 1);
				struct orbit_transition t = {
					.type = ORBIT_TRANSITION_RENEW,
					.writer_pid = 4242,
					.fencing_token = pos * 3,
					.deadline_ns = pos + 7,
					.state_revision = pos,
					.ns = a ? ns : NULL,
					.ns_len = a,
					.label = b ? label : NULL,
					.label_len = b,
					.owner = c ? owner : NULL,
					.owner_len = c,
				};
				uint32_t plen = a + b + c;
				const uint8_t *fr = area + (pos & 7) * 256;

				for (uint32_t i = 0; i < a; i++)
					ns[i] = want[i] = (uint8_t)(0x10 + i + pos);
				for (uint32_t i = 0; i < b; i++)
					label[i] = want[a + i] = (uint8_t)(0x80 + i + pos);
				for (uint32_t i = 0; i < c; i++)
					owner[i] = want[a + b + i] = (uint8_t)(0xc0 + i + pos);
				assert_int_equal(orbit__ring_publish(f->ring, 0, &t), 0);
				assert_int_equal(orbit__ring_reader_next(f->r, &f->ev, &lane), 0);
				assert_int_equal(lane, 0);
				assert_int_equal(f->ev.type, ORBIT_TRANSITION_RENEW);
				assert_int_equal(f->ev.writer_pid, 4242);
				assert_int_equal(f->ev.fencing_token, pos * 3);
				assert_int_equal(f->ev.deadline_ns, pos + 7);
				assert_int_equal(f->ev.state_revision, pos);
				assert_true(f->ev.publish_ns > 0);
				assert_int_equal(f->ev.flags, 0);
				assert_int_equal(f->ev.ns_len, a);
				assert_int_equal(f->ev.label_len, b);
				assert_int_equal(f->ev.owner_len, c);
				assert_int_equal(f->ev.orig_len, plen);
				if (plen)
					assert_memory_equal(f->ev.bytes, want, plen);
				uint32_t a8 = (a + 7) / 8 * 8, b8 = (b + 7) / 8 * 8;
				uint32_t c8 = (c + 7) / 8 * 8;
				uint8_t img[3 * 48] = { 0 };

				memcpy(img, want, a);
				memcpy(img + a8, want + a, b);
				memcpy(img + a8 + b8, want + a + b, c);
				assert_memory_equal(fr + ORBIT_RING_FRAME_HDR_BYTES, img,
						    a8 + b8 + c8);
				free(ns);
				free(label);
				free(owner);
			}
}

/* Issue 5: the default frame holds the lock's whole 960-byte key+owner limit untruncated. */
static void test_default_frame_holds_960_bytes(void **state)
{
	struct fx *f = *state;
	static char big[961];
	uint32_t lane;
	struct orbit_transition t = {
		.type = ORBIT_TRANSITION_ACQUIRE,
		.ns = big,
		.ns_len = 60,
		.label = big,
		.label_len = 400,
		.owner = big,
		.owner_len = 500,
	};

	memset(big, 'k', sizeof(big));
	assert_int_equal(orbit__ring_reader_open(&f->r, f->ring), 0);
	assert_int_equal(orbit__ring_publish(f->ring, 15, &t), 0);
	t.owner_len = 501;
	assert_int_equal(orbit__ring_publish(f->ring, 15, &t), 1);
	assert_int_equal(orbit__ring_reader_next(f->r, &f->ev, &lane), 0);
	assert_int_equal(f->ev.ns_len + f->ev.label_len + f->ev.owner_len, 960);
	assert_int_equal(f->ev.flags, 0);
	assert_int_equal(orbit__ring_reader_next(f->r, &f->ev, &lane), 0);
	assert_int_equal(f->ev.flags, ORBIT_RING_F_TRUNCATED);
}

/*
 * Issue 12: a payload that fits the frame only without the word padding
 * (61 + 401 + 498 = 960 bytes, padded 970) is stored packed and still
 * comes back byte for byte, untruncated, with no layout flag in ev.flags.
 * The stored frame itself (lane 15, position 0 of the frame area at the
 * segment's end) is read too: its header says packed (no padded flag,
 * the three lengths, orig_len) and its payload holds ns | label | owner
 * side by side, filling the frame to its last byte.
 */
static void test_payload_too_long_for_padding_stored_packed(void **state)
{
	struct fx *f = *state;
	static uint8_t ns[61], label[401], owner[498], want[960];
	orbit_seg_t *seg = orbit__ring_seg(f->ring);
	uint64_t frames_bytes = (uint64_t)f->l.lanes * f->l.frames_per_lane * f->l.frame_bytes;
	const uint8_t *area = orbit__seg_at(seg, seg->size - frames_bytes, frames_bytes);
	const uint8_t *fr = area + 15ull * f->l.frames_per_lane * f->l.frame_bytes;
	struct orbit_ring_frame_hdr hdr;
	uint32_t lane;
	struct orbit_transition t = {
		.type = ORBIT_TRANSITION_ACQUIRE,
		.ns = (const char *)ns,
		.ns_len = sizeof(ns),
		.label = (const char *)label,
		.label_len = sizeof(label),
		.owner = (const char *)owner,
		.owner_len = sizeof(owner),
	};

	for (uint32_t i = 0; i < sizeof(want); i++)
		want[i] = (uint8_t)(i * 7 + 1);
	memcpy(ns, want, sizeof(ns));
	memcpy(label, want + sizeof(ns), sizeof(label));
	memcpy(owner, want + sizeof(ns) + sizeof(label), sizeof(owner));
	assert_int_equal(orbit__ring_reader_open(&f->r, f->ring), 0);
	assert_int_equal(orbit__ring_publish(f->ring, 15, &t), 0);
	assert_int_equal(orbit__ring_reader_next(f->r, &f->ev, &lane), 0);
	assert_int_equal(f->ev.flags, 0);
	assert_int_equal(f->ev.orig_len, sizeof(want));
	assert_memory_equal(f->ev.bytes, want, sizeof(want));

	assert_non_null(area);
	assert_int_equal(f->l.frame_bytes - ORBIT_RING_FRAME_HDR_BYTES, sizeof(want));
	memcpy(&hdr, fr, sizeof(hdr));
	assert_int_equal(hdr.seq, 2); /* position 0, complete */
	assert_int_equal(hdr.flags, 0);
	assert_int_equal(hdr.ns_len, sizeof(ns));
	assert_int_equal(hdr.label_len, sizeof(label));
	assert_int_equal(hdr.owner_len, sizeof(owner));
	assert_int_equal(hdr.orig_len, sizeof(want));
	assert_memory_equal(fr + ORBIT_RING_FRAME_HDR_BYTES, want, sizeof(want));
}

/* Issue 5: publish rejects bad arguments without touching the ring. */
static void test_publish_rejects_bad_arguments(void **state)
{
	struct fx *f = *state;
	struct orbit_transition t = { .type = ORBIT_TRANSITION_ACQUIRE };
	struct orbit_ring_counters c;

	assert_int_equal(orbit__ring_publish(f->ring, 2, &t), -EINVAL);
	t.type = ORBIT_TRANSITION_REPAIR + 1; /* past the last type */
	assert_int_equal(orbit__ring_publish(f->ring, 0, &t), -EINVAL);
	t.type = ORBIT_TRANSITION_RECLAIM;
	t.label_len = 3; /* NULL label with a length */
	assert_int_equal(orbit__ring_publish(f->ring, 0, &t), -EINVAL);
	assert_int_equal(orbit__ring_publish(f->ring, 0, NULL), -EINVAL);
	orbit__ring_counters(f->ring, &c);
	assert_int_equal(c.published, 0);
}

/* Issue 5: random bytes in frames never crash a reader: they yield lagged or corrupt. */
static void test_random_bytes_in_frames_never_crash(void **state)
{
	struct fx *f = *state;
	orbit_seg_t *seg = orbit__ring_seg(f->ring);
	uint64_t frames_bytes = 2ull * 8 * 256;
	uint8_t *area = orbit__seg_at(seg, seg->size - frames_bytes, frames_bytes);
	struct orbit_ring_lane *lanes = orbit__seg_at(seg, seg->size - frames_bytes - 2 * 128,
						      2 * 128);
	uint64_t seen_corrupt = 0, seen_lag = 0;

	assert_non_null(area);
	assert_non_null(lanes);
	srand(77);
	for (int round = 0; round < 300; round++) {
		struct orbit_ring_reader_counters c;

		for (uint32_t l = 0; l < 2; l++)
			for (int i = 0; i < 4; i++)
				publish(f->ring, l, (uint64_t)i, "good");
		assert_int_equal(orbit__ring_reader_open(&f->r, f->ring), 0);
		orbit__ring_reader_rewind(f->r);
		for (uint64_t i = 0; i < frames_bytes; i++)
			area[i] = (uint8_t)rand();
		if (round % 3 == 1) {
			/* keep seqs consistent so the lengths, not the seq, are what is checked */
			for (uint32_t l = 0; l < 2; l++)
				for (uint64_t p = 0; p < 8; p++) {
					uint64_t h = atomic_load(&lanes[l].head);
					uint64_t pos = h - 8 + p;
					_Atomic uint64_t *fr =
					    (void *)(area + ((uint64_t)l * 8 + (pos & 7)) * 256);
					atomic_store(&fr[0], 2 * pos + 2); /* the seq word */
				}
		}
		if (round % 3 == 2)
			for (uint32_t l = 0; l < 2; l++)
				atomic_store(&lanes[l].head,
					     ((uint64_t)rand() << 31) ^ (uint64_t)rand());
		for (int i = 0; i < 100; i++) {
			uint32_t lane = 7;
			int rc = orbit__ring_reader_next(f->r, &f->ev, &lane);
			assert_true(rc == 0 || rc == -EAGAIN || rc == -ORBIT_ELAGGED ||
				    rc == -ORBIT_ECORRUPT);
			if (rc == 0) {
				assert_true(f->ev.ns_len + f->ev.label_len + f->ev.owner_len <=
					    192);
				assert_true(f->ev.type >= 1 && f->ev.type <= 5);
			}
			if (rc == -EAGAIN)
				break;
		}
		orbit__ring_reader_counters(f->r, &c);
		seen_corrupt += c.corrupt;
		seen_lag += c.lagged;
		assert_int_equal(orbit__ring_replay_retained(f->ring, check_valid_cb, NULL) >= 0,
				 1);
		orbit__ring_reader_close(f->r);
		f->r = NULL;
		assert_int_equal(orbit__ring_reset(f->ring, NULL), 0);
	}
	assert_true(seen_corrupt > 0); /* the validation did reject garbage */
	assert_true(seen_lag > 0);
}

/* Spec orbit-lock "Lifecycle" (reset_transport's ring half): reset clears lanes, readers resync with a lag signal. */
static void test_reset_clears_lanes_and_readers_resync(void **state)
{
	struct fx *f = *state;
	uint64_t revs[64] = { 0 };
	uint32_t lane;

	for (uint64_t i = 1; i <= 5; i++)
		publish(f->ring, 0, i, "r");
	assert_int_equal(orbit__ring_reader_open(&f->r, f->ring), 0);
	assert_int_equal(orbit__ring_reset(f->ring, NULL), 0);
	assert_int_equal(orbit__ring_reader_next(f->r, &f->ev, &lane), -ORBIT_ELAGGED);
	assert_int_equal(lane, 2); /* all lanes */
	assert_int_equal(orbit__ring_reader_next(f->r, &f->ev, &lane), -EAGAIN);
	assert_int_equal(orbit__ring_replay_retained(f->ring, collect, revs), 0);
	publish(f->ring, 0, 6, "r");
	assert_int_equal(orbit__ring_reader_next(f->r, &f->ev, &lane), 0);
	assert_int_equal(f->ev.lane_pos, 0);
	assert_int_equal(f->ev.state_revision, 6);
}

/* Issue 5: writer lanes are claimed by attached members: idempotent, released, -ENOSPC when all are live. */
static void test_lane_claim_release_enospc(void **state)
{
	struct fx *f = *state;
	orbit_members_t *a, *b, *c;

	assert_int_equal(orbit__members_open(&a, f->fleet, 4, NULL), 0);
	assert_int_equal(orbit__members_open(&b, f->fleet, 4, NULL), 0);
	assert_int_equal(orbit__members_open(&c, f->fleet, 4, NULL), 0);
	assert_int_equal(orbit__ring_lane_claim(f->ring, a), -ENOENT); /* not joined */
	assert_true(orbit__members_join(a, "a") >= 0);
	assert_true(orbit__members_join(b, "b") >= 0);
	assert_true(orbit__members_join(c, "c") >= 0);
	int la = orbit__ring_lane_claim(f->ring, a);
	int lb = orbit__ring_lane_claim(f->ring, b);
	assert_true(la >= 0 && lb >= 0 && la != lb);
	assert_int_equal(orbit__ring_lane_claim(f->ring, a), la);
	assert_int_equal(orbit__ring_lane_claim(f->ring, c), -ENOSPC);
	/* The refusal names the ring and its lane count, not "table full" */
	assert_non_null(strstr(orbit_segment_last_error(), ".ring-"));
	assert_non_null(strstr(orbit_segment_last_error(), ": all 2 writer lanes are held"));
	assert_int_equal(orbit__ring_lane_release(f->ring, c, (uint32_t)la), -EPERM);
	assert_int_equal(orbit__ring_lanes_reclaim_dead(f->ring, c), 0); /* a and b live */
	/* b leaves: its tenure ends, its lane is reclaimable by whoever proves it */
	assert_int_equal(orbit__members_leave(b), 0);
	assert_int_equal(orbit__ring_lane_claim(f->ring, c), lb);
	assert_int_equal(orbit__ring_lane_release(f->ring, a, (uint32_t)la), 0);
	assert_int_equal(orbit__ring_lane_owner(f->ring, (uint32_t)la), 0);
	orbit__members_close(a);
	orbit__members_close(b);
	orbit__members_close(c);
	orbit__members_unlink(f->fleet);
}

/* Issue 5: a publish makes no syscall when nobody sleeps; a waiter with nothing new times out. */
static void test_publish_no_wake_when_nobody_sleeps(void **state)
{
	struct fx *f = *state;
	struct orbit_ring_counters c;
	uint32_t seen;

	for (uint64_t i = 1; i <= 1000; i++)
		publish(f->ring, (uint32_t)(i & 1), i, "n");
	orbit__ring_counters(f->ring, &c);
	assert_int_equal(c.doorbell_wakes, 0);
	assert_int_equal(c.published, 1000);
	assert_int_equal(orbit__ring_reader_open(&f->r, f->ring), 0);
	seen = orbit__ring_reader_arm(f->r);
	assert_int_equal(orbit__ring_reader_wait(f->r, seen, 0), -ETIMEDOUT);
	uint64_t t0 = orbit_test_now_ns();
	assert_int_equal(orbit__ring_reader_wait(f->r, seen, 20 * 1000 * 1000), -ETIMEDOUT);
	assert_true(orbit_test_now_ns() - t0 >= 19 * 1000 * 1000);
	/* a stale announcement costs exactly one wake, then the burst coalesces */
	for (uint64_t i = 1; i <= 100; i++)
		publish(f->ring, 0, i, "n");
	orbit__ring_counters(f->ring, &c);
	assert_int_equal(c.doorbell_wakes, 1); /* the timed-out waiter left its class bit set */
	assert_int_equal(orbit__ring_reader_wait(f->r, seen, -1), 0); /* seq moved: no sleep */
}

struct classed {
	orbit_ring_t *ring;
	uint32_t bit;
	uint32_t seen;
	_Atomic int ready, done;
	_Atomic pid_t tid;
	int rc;
};

/* Until each waiter sleeps in FUTEX_WAIT_BITSET (bounded: 5 s). */
static bool all_in_futex(struct classed *const *c, int n)
{
	uint64_t end = orbit_test_now_ns() + 5000000000ull;

	for (int i = 0; i < n; i++)
		while (!atomic_load(&c[i]->ready) ||
		       !orbit_test_in_futex(atomic_load(&c[i]->tid))) {
			if (orbit_test_now_ns() > end)
				return false;
			usleep(1000);
		}
	return true;
}

static void *classed_waiter(void *arg)
{
	struct classed *c = arg;
	orbit_ring_reader_t *r;

	if (orbit__ring_reader_open(&r, c->ring) < 0) {
		c->rc = -1;
		atomic_store(&c->done, 1);
		return NULL;
	}
	orbit__ring_reader_set_wake_class(r, c->bit);
	c->seen = orbit__ring_reader_arm(r);
	atomic_store(&c->tid, (pid_t)syscall(SYS_gettid));
	atomic_store(&c->ready, 1);
	c->rc = orbit__ring_reader_wait(r, c->seen, 3000ll * 1000 * 1000);
	atomic_store(&c->done, 1);
	orbit__ring_reader_close(r);
	return NULL;
}

/*
 * Issue 5 readiness (wake classes, shm/doorbell.h): a publish that skips a
 * class leaves that class's waiter asleep and still wakes every other
 * (the shared class can never be skipped); the next publish that does not
 * skip it wakes it: a skip delays, it never loses a wakeup.
 */
static void test_skipped_wake_class_sleeps_until_next_publish(void **state)
{
	struct fx *f = *state;
	struct classed own = { .ring = f->ring, .bit = orbit__doorbell_bit(3) };
	struct classed other = { .ring = f->ring, .bit = orbit__doorbell_bit(40) };
	struct orbit_transition t = { .type = ORBIT_TRANSITION_ACQUIRE, .ns = "n", .ns_len = 1 };
	pthread_t th[2];
	uint64_t t0;

	assert_int_equal(own.bit, 1u << 3);
	assert_int_equal(other.bit, ORBIT_DOORBELL_SHARED);
	assert_int_equal(pthread_create(&th[0], NULL, classed_waiter, &own), 0);
	assert_int_equal(pthread_create(&th[1], NULL, classed_waiter, &other), 0);
	struct classed *both[2] = { &own, &other };

	assert_true(all_in_futex(both, 2)); /* both asleep in FUTEX_WAIT_BITSET */
	/* skipping the shared class too is ignored: it is never skipped */
	assert_true(orbit__ring_publish_skip(f->ring, 0, &t, own.bit | ORBIT_DOORBELL_SHARED) >= 0);
	t0 = orbit_test_now_ns();
	while (!atomic_load(&other.done) && orbit_test_now_ns() - t0 < 2000000000ull)
		usleep(100);
	assert_int_equal(atomic_load(&other.done), 1);
	assert_int_equal(other.rc, 0);
	usleep(50000);
	assert_int_equal(atomic_load(&own.done), 0); /* skipped: still asleep */
	assert_true(orbit__ring_publish(f->ring, 0, &t) >= 0);
	t0 = orbit_test_now_ns();
	while (!atomic_load(&own.done) && orbit_test_now_ns() - t0 < 2000000000ull)
		usleep(100);
	assert_int_equal(atomic_load(&own.done), 1);
	assert_int_equal(own.rc, 0);
	assert_true(orbit_test_now_ns() - t0 < 1000000000ull); /* woken, not the 3 s timeout */
	assert_int_equal(pthread_join(th[0], NULL), 0);
	assert_int_equal(pthread_join(th[1], NULL), 0);
}

/* Waits up to 2 s for a classed waiter to finish; 1 when it did. */
static int classed_done(struct classed *c)
{
	uint64_t t0 = orbit_test_now_ns();

	while (!atomic_load(&c->done) && orbit_test_now_ns() - t0 < 2000000000ull)
		usleep(100);
	return atomic_load(&c->done);
}

/*
 * Issue 5 readiness (wake classes, shm/doorbell.h): wake_class wakes the
 * waiters of that one class only (the agent's death watcher wakes its own
 * agent, no other process's); for the shared class (rows >= 31) it wakes
 * every waiter of the shared class and still no row-class waiter.
 */
static void test_wake_class_wakes_only_that_class(void **state)
{
	struct fx *f = *state;
	struct orbit_doorbell *db = orbit__ring_doorbell(f->ring);
	struct classed own = { .ring = f->ring, .bit = orbit__doorbell_bit(3) };
	struct classed other = { .ring = f->ring, .bit = orbit__doorbell_bit(5) };
	struct classed shared = { .ring = f->ring, .bit = orbit__doorbell_bit(40) };
	pthread_t th[3];

	assert_int_equal(pthread_create(&th[0], NULL, classed_waiter, &own), 0);
	assert_int_equal(pthread_create(&th[1], NULL, classed_waiter, &other), 0);
	assert_int_equal(pthread_create(&th[2], NULL, classed_waiter, &shared), 0);
	struct classed *all[3] = { &own, &other, &shared };

	/* All three asleep in the kernel: a waiter still between its re-check
	 * and futex() would see the seq move and return, by design. */
	assert_true(all_in_futex(all, 3));
	assert_int_equal(orbit__doorbell_wake_class(db, own.bit), 1);
	assert_int_equal(classed_done(&own), 1);
	assert_int_equal(own.rc, 0);
	usleep(50000);
	assert_int_equal(atomic_load(&other.done), 0);	/* another row's class: asleep */
	assert_int_equal(atomic_load(&shared.done), 0); /* the shared class too */
	assert_int_equal(orbit__doorbell_wake_class(db, ORBIT_DOORBELL_SHARED), 1);
	assert_int_equal(classed_done(&shared), 1);
	assert_int_equal(shared.rc, 0);
	usleep(50000);
	assert_int_equal(atomic_load(&other.done), 0);
	assert_int_equal(orbit__doorbell_ring(db), 1);
	assert_int_equal(classed_done(&other), 1);
	assert_int_equal(other.rc, 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
}

/* Issue 5 layout: peers must agree on the layout; a bad layout is refused. */
static void test_layout_mismatch_refused(void **state)
{
	struct fx *f = *state;
	struct orbit_ring_layout l = f->l;
	orbit_ring_t *other;

	l.frames_per_lane = 16;
	assert_true(orbit__ring_open(&other, f->fleet, &l, NULL) < 0);
	l = f->l;
	l.frame_bytes = 300; /* not a power of two */
	assert_int_equal(orbit__ring_open(&other, f->fleet, &l, NULL), -EINVAL);
	l = f->l;
	l.lanes = 0;
	assert_int_equal(orbit__ring_open(&other, f->fleet, &l, NULL), -EINVAL);
}

struct thr {
	orbit_ring_t *ring;
	uint64_t n;
	uint64_t got, lagged, bad;
	_Atomic int opened; /* the reader is subscribed (or failed to): publishing may start */
};

static void *reader_thread(void *arg)
{
	struct thr *t = arg;
	struct orbit_ring_event *ev = malloc(sizeof(*ev));
	orbit_ring_reader_t *r;
	uint64_t expect = 0;

	if (!ev || orbit__ring_reader_open(&r, t->ring) < 0) {
		t->bad++;
		/* release, pairs with the acquire in the test: t->bad before opened */
		atomic_store_explicit(&t->opened, 1, memory_order_release);
		free(ev);
		return NULL;
	}
	/* release, pairs with the acquire in the test: subscribed before the first publish */
	atomic_store_explicit(&t->opened, 1, memory_order_release);
	while (expect < t->n) {
		uint32_t seen = orbit__ring_reader_arm(r), lane;
		int rc;

		while ((rc = orbit__ring_reader_next(r, ev, &lane)) != -EAGAIN) {
			if (rc == -ORBIT_ELAGGED) {
				t->lagged++;
				continue;
			}
			if (rc < 0 || ev->state_revision < expect ||
			    memcmp(ev->bytes + ev->ns_len, "thr", 3) != 0) {
				t->bad++;
				continue;
			}
			t->got++;
			expect = ev->state_revision + 1;
		}
		if (orbit__ring_reader_wait(r, seen, 1000ll * 1000 * 1000) == -ETIMEDOUT)
			break;
	}
	orbit__ring_reader_close(r);
	free(ev);
	return NULL;
}

/* Issue 5 (agent shape): a reader thread and a publisher thread of one process; TSan-clean (TSAN_TESTS). */
static void test_reader_thread_and_publisher_thread(void **state)
{
	struct fx *f = *state;
	struct thr t = { .ring = f->ring, .n = 20000 };
	pthread_t th;

	/*
	 * The reader starts after the heads: publish only once it is open (a
	 * fixed 20 ms sleep lost that race on a loaded host and the reader saw
	 * nothing). Acquire, pairs with the reader's release of opened.
	 */
	assert_int_equal(pthread_create(&th, NULL, reader_thread, &t), 0);
	while (!atomic_load_explicit(&t.opened, memory_order_acquire))
		usleep(1000);
	for (uint64_t i = 0; i < t.n; i++) {
		publish(f->ring, 0, i, "thr");
		if ((i & 255) == 0)
			usleep(50); /* let the reader fall asleep now and then */
	}
	pthread_join(th, NULL);
	assert_int_equal(t.bad, 0);
	assert_true(t.got > 0);
	assert_true(t.got == t.n || t.lagged > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_new_reader_starts_after_heads, setup_small,
						teardown),
		cmocka_unit_test_setup_teardown(test_wrap_and_lag, setup_small, teardown),
		cmocka_unit_test_setup_teardown(test_replay_retained, setup_small, teardown),
		cmocka_unit_test_setup_teardown(test_frame_too_big_truncated_and_counted,
						setup_small, teardown),
		cmocka_unit_test_setup_teardown(test_huge_part_lengths_truncated_not_wrapped,
						setup_small, teardown),
		cmocka_unit_test_setup_teardown(test_payload_every_split_round_trips_zero_padded,
						setup_small, teardown),
		cmocka_unit_test_setup_teardown(test_default_frame_holds_960_bytes, setup_default,
						teardown),
		cmocka_unit_test_setup_teardown(test_payload_too_long_for_padding_stored_packed,
						setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_publish_rejects_bad_arguments, setup_small,
						teardown),
		cmocka_unit_test_setup_teardown(test_random_bytes_in_frames_never_crash,
						setup_small, teardown),
		cmocka_unit_test_setup_teardown(test_reset_clears_lanes_and_readers_resync,
						setup_small, teardown),
		cmocka_unit_test_setup_teardown(test_lane_claim_release_enospc, setup_small,
						teardown),
		cmocka_unit_test_setup_teardown(test_publish_no_wake_when_nobody_sleeps,
						setup_small, teardown),
		cmocka_unit_test_setup_teardown(test_skipped_wake_class_sleeps_until_next_publish,
						setup_small, teardown),
		cmocka_unit_test_setup_teardown(test_wake_class_wakes_only_that_class, setup_small,
						teardown),
		cmocka_unit_test_setup_teardown(test_layout_mismatch_refused, setup_small,
						teardown),
		cmocka_unit_test_setup_teardown(test_reader_thread_and_publisher_thread,
						setup_default, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
