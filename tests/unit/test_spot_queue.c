// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_spot_queue.c: the cross-process Spot queue's SHM layer
 * (shm/spot_queue.h), issue 11 "Cross-process Spot queues", in one
 * process: admission and backpressure by count and bytes on both lanes,
 * lifecycle independence, reservations returned only after completion,
 * host fencing and redelivery, mismatched / truncated / foreign / corrupt
 * segments, corrupt records, position wrap, the doorbell's coalescing.
 * The multi-process and kill tests are tests/mp/test_spot_queue_mp.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "orbit_test.h"
#include <orbit/error.h>
#include <orbit/lock.h>
#include "shm/members.h"
#include "shm/ring.h"
#include "shm/spot_queue.h"
#include "shm/stats.h"

#define SPOT "bank.shard-3"

struct fx {
	char fleet[64];
	orbit_members_t *m, *m2;
	orbit_spotq_t *q;
	orbit_spotq_producer_t *p, *p2;
	struct orbit_spotq_rec recs[64];
	uint8_t buf[1 << 16];
};

static struct orbit_spotq_options opts(uint32_t ai, uint32_t ab, uint32_t li, uint32_t lb)
{
	struct orbit_spotq_options o;

	orbit__spotq_options_init(&o);
	o.app_items = ai;
	o.app_bytes = ab;
	o.lifecycle_items = li;
	o.lifecycle_bytes = lb;
	o.how = ORBIT_SEG_OPEN_OR_CREATE;
	o.unblock_ms = 50;
	return o;
}

static void fx_open(struct fx *f, struct orbit_spotq_options o)
{
	assert_int_equal(orbit__spotq_open(&f->q, f->fleet, SPOT, &o), 0);
	assert_int_equal(orbit__spotq_producer_open(&f->p, f->q, f->m), 0);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	orbit_test_fleet(f->fleet, sizeof(f->fleet), "sq");
	assert_int_equal(orbit__members_open(&f->m, f->fleet, 8, NULL), 0);
	assert_true(orbit__members_join(f->m, "producer") >= 0);
	assert_int_equal(orbit__members_open(&f->m2, f->fleet, 8, NULL), 0);
	assert_true(orbit__members_join(f->m2, "producer2") >= 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	orbit__spotq_producer_close(f->p);
	orbit__spotq_producer_close(f->p2);
	orbit__spotq_close(f->q);
	orbit__spotq_unlink(f->fleet, SPOT);
	orbit__members_close(f->m);
	orbit__members_close(f->m2);
	orbit__members_unlink(f->fleet);
	free(f);
	return 0;
}

static int submit(orbit_spotq_producer_t *p, uint32_t kind, uint32_t len, uint8_t fill,
		  uint64_t *seq)
{
	uint8_t b[8192];
	struct orbit_spotq_submit s = {
		.kind = kind, .payload = b, .len = len, .actor_id = 77, .timer_name = "tick"
	};

	memset(b, fill, sizeof(b));
	return orbit__spotq_submit(p, &s, seq);
}

static void check_ok(orbit_spotq_t *q)
{
	char why[256];
	int r = orbit__spotq_check(q, why, sizeof(why));

	if (r)
		fail_msg("checker: %s", why);
}

static struct orbit_spotq_counters counters(orbit_spotq_t *q)
{
	struct orbit_spotq_counters c;

	assert_int_equal(orbit__spotq_counters(q, &c), 0);
	return c;
}

static struct orbit_spotq_slot *raw_slots(struct fx *f, int lane)
{
	orbit_seg_t *seg = orbit__spotq_seg(f->q);
	struct orbit_spotq_shm *sh = (void *)((char *)seg->base + ORBIT_SEG_HEADER_BYTES);

	return (void *)((char *)seg->base + sh->slots_off[lane]);
}

/* The lane's ack words (layout 3: an array of their own, one per slot). */
static _Atomic uint64_t *raw_acks(struct fx *f, int lane)
{
	orbit_seg_t *seg = orbit__spotq_seg(f->q);
	struct orbit_spotq_shm *sh = (void *)((char *)seg->base + ORBIT_SEG_HEADER_BYTES);

	return (void *)((char *)seg->base + sh->acks_off[lane]);
}

static struct orbit_spotq_lane_shm *raw_lanes(struct fx *f)
{
	orbit_seg_t *seg = orbit__spotq_seg(f->q);
	struct orbit_spotq_shm *sh = (void *)((char *)seg->base + ORBIT_SEG_HEADER_BYTES);

	return (void *)((char *)seg->base + sh->lanes_off);
}

/* Submit one SPOT record of @len bytes, take it alone and complete it; check the queue. */
static void pass_one(struct fx *f, orbit_spotq_host_t *h, uint32_t len, uint8_t fill)
{
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, len, fill, NULL), 0);
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 1);
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[0].pos), 0);
	check_ok(f->q);
}

/* Issue 11 "Backpressure by count and by bytes on both lanes" (count). */
static void test_backpressure_by_count_both_lanes(void **state)
{
	struct fx *f = *state;
	uint64_t seq;

	fx_open(f, opts(4, 4096, 2, 4096));
	for (int i = 0; i < 4; i++)
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 8, 1, &seq), 0);
	assert_int_equal(seq, 4);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_ACTOR, 0, 1, NULL), -EAGAIN);
	for (int i = 0; i < 2; i++)
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_LIFECYCLE, 8, 1, NULL), 0);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_LIFECYCLE, 8, 1, NULL), -EAGAIN);
	struct orbit_spotq_counters c = counters(f->q);
	assert_int_equal(c.accepted[0], 4);
	assert_int_equal(c.accepted[1], 2);
	assert_int_equal(c.rejected_count[0], 1);
	assert_int_equal(c.rejected_count[1], 1);
	assert_int_equal(c.rejected_bytes[0] + c.rejected_bytes[1], 0);
	assert_int_equal(c.depth[0], 4);
	assert_int_equal(c.bytes[0], 32);
	check_ok(f->q);
}

/* Issue 11 "Backpressure by count and by bytes on both lanes" (bytes). */
static void test_backpressure_by_bytes_both_lanes(void **state)
{
	struct fx *f = *state;

	fx_open(f, opts(64, 1000, 64, 300));
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 600, 1, NULL), 0);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 401, 1, NULL), -EAGAIN);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 400, 1, NULL), 0); /* exactly full */
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 1, 1, NULL), -EAGAIN);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 0, 1, NULL),
			 0); /* no bytes: count only */
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 1001, 1, NULL), -E2BIG);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_LIFECYCLE, 200, 1, NULL), 0);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_LIFECYCLE, 101, 1, NULL), -EAGAIN);
	struct orbit_spotq_counters c = counters(f->q);
	assert_int_equal(c.rejected_bytes[0], 2);
	assert_int_equal(c.rejected_bytes[1], 1);
	assert_int_equal(c.rejected_count[0] + c.rejected_count[1], 0);
	assert_int_equal(c.bytes[0], 1000);
	check_ok(f->q);
}

/* Issue 11 "lifecycle overtaking as in 07 §6": a full application lane never refuses lifecycle. */
static void test_lifecycle_lane_independent_of_full_app_lane(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;

	fx_open(f, opts(3, 4096, 4, 4096));
	for (int i = 0; i < 3; i++)
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_ACTOR, 16, (uint8_t)i, NULL), 0);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 16, 9, NULL), -EAGAIN);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_LIFECYCLE, 16, 42, NULL), 0);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 5), 0);
	/* the host drains lifecycle first: it overtakes the three queued application records */
	assert_int_equal(
	    orbit__spotq_take(h, ORBIT_SPOTQ_LIFECYCLE, f->recs, 8, f->buf, sizeof(f->buf)), 1);
	assert_int_equal(f->recs[0].kind, ORBIT_SPOTQ_KIND_LIFECYCLE);
	assert_int_equal(((uint8_t *)f->recs[0].payload)[0], 42);
	assert_int_equal(f->recs[0].producer_seq, 4);
	assert_int_equal(orbit__spotq_take(h, ORBIT_SPOTQ_APP, f->recs, 8, f->buf, sizeof(f->buf)),
			 3);
	assert_int_equal(f->recs[0].actor_id, 77);
	assert_int_equal(f->recs[2].producer_seq, 3);
	orbit__spotq_host_close(h);
}

/* Issue 11 "return byte/slot reservations only after completion (07 §5)", out of order. */
static void test_reservation_returned_only_after_completion(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;

	fx_open(f, opts(3, 300, 2, 256));
	for (int i = 0; i < 3; i++)
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 100, (uint8_t)i, NULL), 0);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 3);
	/* taken is not returned: still full by count and bytes */
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 0, 0, NULL), -EAGAIN);
	/* Actors run in parallel: the third completes first; the head waits for the first */
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[2].pos), 0);
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[1].pos), 0);
	assert_int_equal(counters(f->q).depth[0], 3);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 0, 0, NULL), -EAGAIN);
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[1].pos), -EINVAL); /* twice */
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[0].pos), 0);
	struct orbit_spotq_counters c = counters(f->q);
	assert_int_equal(c.depth[0], 0);
	assert_int_equal(c.bytes[0], 0);
	assert_int_equal(c.completed[0], 3);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 300, 7, NULL), 0);
	/* the byte ring wrapped: the record is whole */
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 1);
	for (int i = 0; i < 300; i++)
		assert_int_equal(((uint8_t *)f->recs[0].payload)[i], 7);
	check_ok(f->q);
	orbit__spotq_host_close(h);
}

/* Issue 11: "a host paused ... resumes after a newer host took over cannot take, complete or free".
 */
static void test_old_epoch_fenced_and_uncompleted_redelivered(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *a, *b, *x;
	struct orbit_spotq_counters c0, c1;

	fx_open(f, opts(8, 4096, 2, 256));
	for (int i = 0; i < 6; i++)
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 10, (uint8_t)i, NULL), 0);
	assert_int_equal(orbit__spotq_host_takeover(&a, f->q, f->m, 100), 0);
	assert_int_equal(orbit__spotq_take(a, 0, f->recs, 4, f->buf, sizeof(f->buf)), 4);
	assert_false(f->recs[0].redelivered);
	assert_int_equal(f->recs[0].host_epoch, 100);
	assert_int_equal(orbit__spotq_complete(a, 0, f->recs[1].pos),
			 0); /* 2nd done, out of order */
	uint32_t pos0 = f->recs[0].pos;
	/* epochs only grow */
	assert_int_equal(orbit__spotq_host_takeover(&x, f->q, f->m, 100), -ORBIT_EFENCED);
	assert_int_equal(orbit__spotq_host_takeover(&x, f->q, f->m, 99), -ORBIT_EFENCED);
	assert_int_equal(orbit__spotq_host_takeover(&b, f->q, f->m, 101), 0);
	c0 = counters(f->q);
	/* the old host changes nothing */
	assert_int_equal(orbit__spotq_take(a, 0, f->recs, 8, f->buf, sizeof(f->buf)),
			 -ORBIT_EFENCED);
	assert_int_equal(orbit__spotq_complete(a, 0, pos0), -ORBIT_EFENCED);
	assert_int_equal(orbit__spotq_advance(a, 0), -ORBIT_EFENCED);
	c1 = counters(f->q);
	assert_memory_equal(&c0, &c1, sizeof(c0));
	/* the new host: 1st, 3rd, 4th again flagged redelivered, 2nd never again, then 5th, 6th */
	assert_int_equal(orbit__spotq_take(b, 0, f->recs, 8, f->buf, sizeof(f->buf)), 5);
	uint8_t want[] = { 0, 2, 3, 4, 5 };
	bool redeliv[] = { true, true, true, false, false };
	for (int i = 0; i < 5; i++) {
		assert_int_equal(((uint8_t *)f->recs[i].payload)[0], want[i]);
		assert_int_equal(f->recs[i].redelivered, redeliv[i]);
		assert_int_equal(f->recs[i].host_epoch, 101);
		assert_int_equal(f->recs[i].producer_seq, want[i] + 1u);
	}
	assert_int_equal(counters(f->q).redelivered[0], 3);
	for (int i = 0; i < 5; i++)
		assert_int_equal(orbit__spotq_complete(b, 0, f->recs[i].pos), 0);
	c1 = counters(f->q);
	assert_int_equal(c1.depth[0], 0);
	assert_int_equal(c1.epoch, 101);
	assert_int_equal(c1.host_gen, 2);
	check_ok(f->q);
	orbit__spotq_host_close(a);
	orbit__spotq_host_close(b);
}

/* Issue 11 "a mismatched layout refused": the error names the Spot and the value. */
static void test_mismatched_caps_refused_naming_spot_and_value(void **state)
{
	struct fx *f = *state;
	struct orbit_spotq_options o = opts(16, 4096, 4, 1024);
	orbit_spotq_t *q2;
	char why[200] = "";

	fx_open(f, o);
	o.app_items = 32;
	o.why = why;
	o.why_len = sizeof(why);
	assert_int_equal(orbit__spotq_open(&q2, f->fleet, SPOT, &o), -ORBIT_EFINGERPRINT);
	assert_non_null(strstr(why, SPOT));
	assert_non_null(strstr(why, "16"));
	assert_non_null(strstr(why, "32"));
	o.app_items = 16;
	o.lifecycle_bytes = 2048;
	assert_int_equal(orbit__spotq_open(&q2, f->fleet, SPOT, &o), -ORBIT_EFINGERPRINT);
	assert_non_null(strstr(why, "lifecycle lane byte cap is 1024"));
	o.lifecycle_bytes = 1024;
	o.producer_rows = 9;
	assert_int_equal(orbit__spotq_open(&q2, f->fleet, SPOT, &o), -ORBIT_EFINGERPRINT);
	assert_non_null(strstr(why, "producer rows"));
	o.producer_rows = 0;
	assert_int_equal(orbit__spotq_open(&q2, f->fleet, SPOT, &o), 0);
	orbit__spotq_close(q2);
}

/* Issue 11 "corrupt/truncated/foreign segments refused with their codes". */
static void test_truncated_foreign_corrupt_segments_refused(void **state)
{
	struct fx *f = *state;
	struct orbit_spotq_options o = opts(4, 256, 2, 128);
	orbit_spotq_t *q2;
	orbit_seg_t *seg;
	char path[128];
	uint64_t size;
	int fd;

	fx_open(f, o);
	o.how = ORBIT_SEG_OPEN;
	seg = orbit__spotq_seg(f->q);
	size = seg->size;
	snprintf(path, sizeof(path), "/orbit.%s.spotq.%s", f->fleet, SPOT);
	fd = shm_open(path, O_RDWR, 0);
	assert_true(fd >= 0);
	/* truncated */
	assert_int_equal(ftruncate(fd, (off_t)size - 64), 0);
	assert_int_equal(orbit__spotq_open(&q2, f->fleet, SPOT, &o), -ORBIT_ETRUNCATED);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	/* corrupt config words under a valid fingerprint */
	struct orbit_spotq_shm *sh = (void *)((char *)seg->base + ORBIT_SEG_HEADER_BYTES);
	sh->slots_off[1] += 128;
	assert_int_equal(orbit__spotq_open(&q2, f->fleet, SPOT, &o), -ORBIT_ECORRUPT);
	sh->slots_off[1] -= 128;
	/* another kind under the name */
	struct orbit_seg_header *hd = seg->base;
	hd->kind = ORBIT_SEG_KIND_STATS;
	assert_int_equal(orbit__spotq_open(&q2, f->fleet, SPOT, &o), -ORBIT_EKIND);
	hd->kind = ORBIT_SEG_KIND_SPOT_QUEUE;
	hd->layout_version = 99;
	assert_int_equal(orbit__spotq_open(&q2, f->fleet, SPOT, &o), -ORBIT_EVERSION);
	hd->layout_version = ORBIT_SPOTQ_LAYOUT_VERSION;
	{
		/* a layout-4 segment (every stamp exact): refused, both versions named */
		struct orbit_spotq_options ov = o;
		char why[256] = "";

		ov.why = why;
		ov.why_len = sizeof(why);
		hd->layout_version = 4;
		assert_int_equal(orbit__spotq_open(&q2, f->fleet, SPOT, &ov), -ORBIT_EVERSION);
		assert_non_null(strstr(why, "layout version 4, this process uses 5"));
		assert_non_null(strstr(why, SPOT));
		hd->layout_version = ORBIT_SPOTQ_LAYOUT_VERSION;
	}
	/* foreign bytes */
	hd->magic ^= 1;
	assert_int_equal(orbit__spotq_open(&q2, f->fleet, SPOT, &o), -ORBIT_EMAGIC);
	hd->magic ^= 1;
	assert_int_equal(orbit__spotq_open(&q2, f->fleet, SPOT, &o), 0);
	orbit__spotq_close(q2);
	close(fd);
	/* names: validated characters, bounded length */
	assert_int_equal(orbit__spotq_open(&q2, f->fleet, "a/b", &o), -EINVAL);
	assert_int_equal(orbit__spotq_open(&q2, f->fleet, "", &o), -EINVAL);
	assert_int_equal(
	    orbit__spotq_open(&q2, f->fleet, "0123456789012345678901234567890123456789x", &o),
	    -EINVAL);
	o.how = ORBIT_SEG_OPEN_OR_CREATE;
	assert_int_equal(
	    orbit__spotq_open(&q2, f->fleet, "0123456789012345678901234567890123456789", &o), 0);
	orbit__spotq_close(q2);
	orbit__spotq_unlink(f->fleet, "0123456789012345678901234567890123456789");
	/* caps out of range */
	o.app_items = ORBIT_SPOTQ_MAX_ITEMS + 1;
	assert_int_equal(orbit__spotq_open(&q2, f->fleet, "x", &o), -EINVAL);
}

/* Options follow copy_struct_from_user(): a larger struct with a non-zero tail is -E2BIG. */
static void test_options_size_rule(void **state)
{
	struct fx *f = *state;
	struct {
		struct orbit_spotq_options o;
		uint64_t extra;
	} big;
	orbit_spotq_t *q2;

	orbit__spotq_options_init(&big.o);
	big.o.how = ORBIT_SEG_OPEN_OR_CREATE;
	big.o.size = sizeof(big);
	big.extra = 1;
	assert_int_equal(orbit__spotq_open(&q2, f->fleet, SPOT, &big.o), -E2BIG);
	big.extra = 0;
	assert_int_equal(orbit__spotq_open(&q2, f->fleet, SPOT, &big.o), 0);
	struct orbit_spotq_counters c = counters(q2);
	assert_int_equal(c.item_cap[0], ORBIT_SPOTQ_DEFAULT_APP_ITEMS);
	assert_int_equal(c.byte_cap[1], ORBIT_SPOTQ_DEFAULT_LIFECYCLE_BYTES);
	assert_int_equal(c.shm_bytes, orbit__spotq_footprint(NULL));
	assert_int_equal(c.host_row, UINT32_MAX);
	orbit__spotq_close(q2);
}

/* Issue 11 "a corrupt record is counted, skipped and reported, never dereferenced". */
static void test_corrupt_record_counted_skipped_reported(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;
	orbit_seg_t *seg;

	fx_open(f, opts(8, 1024, 2, 128));
	for (int i = 0; i < 3; i++)
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 32, (uint8_t)(i + 1), NULL),
				 0);
	seg = orbit__spotq_seg(f->q);
	struct orbit_spotq_shm *sh = (void *)((char *)seg->base + ORBIT_SEG_HEADER_BYTES);
	/* flip one payload byte of the second record (data at offset 32) */
	((uint8_t *)seg->base + sh->data_off[0])[40] ^= 0xff;
	{
		char why[200];
		assert_int_equal(orbit__spotq_check(f->q, why, sizeof(why)), -ORBIT_ECORRUPT);
		assert_non_null(strstr(why, "pos 1"));
	}
	/* and a lying payload length on the third */
	struct orbit_spotq_slot *slots = (void *)((char *)seg->base + sh->slots_off[0]);
	slots[2].payload_len = 1u << 30;
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 3), 0);
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 1);
	assert_int_equal(((uint8_t *)f->recs[0].payload)[0], 1);
	assert_int_equal(counters(f->q).corrupt[0], 2);
	assert_non_null(strstr(orbit__spotq_host_last_corrupt(h), "pos 2"));
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[0].pos), 0);
	/* every reservation is back, the corrupt ones included */
	assert_int_equal(counters(f->q).depth[0], 0);
	assert_int_equal(counters(f->q).bytes[0], 0);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 32, 5, NULL), 0);
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 1);
	assert_int_equal(((uint8_t *)f->recs[0].payload)[31], 5);
	orbit__spotq_host_close(h);
}

/* Flip byte @b at @at: the checker must call the queue corrupt (@corrupt) or not. */
static void flip_checks(orbit_spotq_t *q, uint8_t *at, bool corrupt)
{
	char why[256];

	*at ^= 0x20;
	assert_int_equal(orbit__spotq_check(q, why, sizeof(why)), corrupt ? -ORBIT_ECORRUPT : 0);
	if (corrupt)
		assert_non_null(strstr(why, "torn"));
	*at ^= 0x20;
	check_ok(q);
}

/*
 * The checksum (two multiply-fold chains over 32-byte blocks, then a
 * 16-byte block, then the padded last bytes) covers every payload byte of
 * every shape of length, the meta fields, an Actor's id and a timer's
 * name; a Spot record's second
 * slot line (its unused target, stale bytes of an older record) is not
 * the record's, and is neither written nor summed.
 */
static void test_checksum_covers_each_byte_of_the_record(void **state)
{
	struct fx *f = *state;
	struct orbit_spotq_slot *sl;
	uint8_t *data;

	fx_open(f, opts(8, 1024, 2, 128));
	sl = raw_slots(f, 0);
	{
		orbit_seg_t *seg = orbit__spotq_seg(f->q);
		struct orbit_spotq_shm *sh = (void *)((char *)seg->base + ORBIT_SEG_HEADER_BYTES);
		data = (uint8_t *)seg->base + sh->data_off[0];
	}
	/* a timer record's name in slot 0, then a Spot record over that line */
	memset(&sl[0].target, 0x5a, sizeof(sl[0].target));
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 45, 1, NULL), 0);	/* data 0..44 */
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 100, 2, NULL), 0); /* 45..144 */
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_ACTOR, 0, 3, NULL), 0);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_TIMER, 3, 4, NULL), 0); /* 145..147 */
	/* 32 + 16 + 10 bytes: a 32-byte block, the 16-byte block and a two-word tail */
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 58, 5, NULL), 0); /* 148..205 */
	check_ok(f->q);
	assert_int_equal(sl[0].target.timer_name[9], 0x5a); /* not written by the Spot record */
	for (int b = 0; b < 206; b++)
		flip_checks(f->q, data + b, true);
	for (size_t b = 0; b < sizeof(uint64_t); b++)
		flip_checks(f->q, (uint8_t *)&sl[2].target.actor_id + b, true);
	for (size_t b = 0; b < sizeof(sl[3].target.timer_name); b++)
		flip_checks(f->q, (uint8_t *)sl[3].target.timer_name + b, true);
	for (size_t b = 0; b < sizeof(uint64_t); b++) {
		flip_checks(f->q, (uint8_t *)&sl[1].producer_seq + b, true);
		flip_checks(f->q, (uint8_t *)&sl[1].submit_ns + b, true);
	}
	for (size_t b = 0; b < sizeof(sl[0].target); b++) {
		flip_checks(f->q, (uint8_t *)&sl[0].target + b, false);
		flip_checks(f->q, (uint8_t *)&sl[1].target + b, false);
	}
}

/*
 * A payload word may hold any value, a multiply constant of the checksum
 * too: a 128-bit multiply fold with one operand 0 is 0 whatever the
 * other, so a sum that XORs a word with a constant and multiplies would
 * drop the running state and the block's other word (the sum then misses
 * a flipped byte there, and the record's position, sequence, time and
 * producer fields before it). Each of the four constants in its place:
 * record 1's payload opens with the 32-byte block's first constant,
 * record 2's is one word equal to the tail's, record 3's 16-byte block
 * opens with its own, record 4's 32-byte block has the second chain's
 * constant in its third word.
 */
static void test_checksum_blind_to_no_payload_word(void **state)
{
	static const uint64_t k0 = 0xa0761d6478bd642full, k1 = 0xe7037ed1a0b428dbull,
			      k2 = 0x8ebc6af09c88c6e3ull, k3 = 0x589965cc75374cc3ull;
	struct fx *f = *state;
	struct orbit_spotq_slot *sl;
	uint8_t *data, b[32];
	struct orbit_spotq_submit s = { .kind = ORBIT_SPOTQ_KIND_SPOT, .payload = b };

	fx_open(f, opts(8, 1024, 2, 128));
	sl = raw_slots(f, 0);
	{
		orbit_seg_t *seg = orbit__spotq_seg(f->q);
		struct orbit_spotq_shm *sh = (void *)((char *)seg->base + ORBIT_SEG_HEADER_BYTES);
		data = (uint8_t *)seg->base + sh->data_off[0];
	}
	memset(b, 0x11, sizeof(b));
	memcpy(b, &k0, sizeof(k0));
	s.len = 32;
	assert_int_equal(orbit__spotq_submit(f->p, &s, NULL), 0); /* data 0..31 */
	memcpy(b, &k3, sizeof(k3));
	s.len = 8;
	assert_int_equal(orbit__spotq_submit(f->p, &s, NULL), 0); /* data 32..39 */
	memcpy(b, &k2, sizeof(k2));
	s.len = 16;
	assert_int_equal(orbit__spotq_submit(f->p, &s, NULL), 0); /* data 40..55 */
	memset(b, 0x11, sizeof(b));
	memcpy(b + 16, &k1, sizeof(k1));
	s.len = 32;
	assert_int_equal(orbit__spotq_submit(f->p, &s, NULL), 0); /* data 56..87 */
	check_ok(f->q);
	for (int i = 0; i < 88; i++)
		flip_checks(f->q, data + i, true);
	for (size_t i = 0; i < sizeof(uint64_t); i++) {
		for (int r = 0; r < 4; r++) {
			flip_checks(f->q, (uint8_t *)&sl[r].producer_seq + i, true);
			flip_checks(f->q, (uint8_t *)&sl[r].submit_ns + i, true);
		}
	}
}

/* Records carry kind, actor id or timer name, producer row + generation, sequence, time. */
static void test_record_fields_and_producer_identity(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;
	uint32_t g1, g2;
	int row1 = orbit__members_self(f->m, &g1), row2 = orbit__members_self(f->m2, &g2);
	orbit_spotq_producer_t *dup;
	uint64_t t0 = orbit_test_now_ns();

	fx_open(f, opts(8, 1024, 2, 128));
	assert_int_equal(orbit__spotq_producer_open(&dup, f->q, f->m), -EBUSY);
	assert_int_equal(orbit__spotq_producer_open(&f->p2, f->q, f->m2), 0);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_ACTOR, 3, 1, NULL), 0);
	assert_int_equal(submit(f->p2, ORBIT_SPOTQ_KIND_TIMER, 0, 1, NULL), 0);
	assert_int_equal(submit(f->p2, ORBIT_SPOTQ_KIND_SPOT, 1, 1, NULL), 0);
	{
		struct orbit_spotq_submit s = { .kind = ORBIT_SPOTQ_KIND_TIMER, .timer_name = "" };
		assert_int_equal(orbit__spotq_submit(f->p, &s, NULL), -EINVAL);
		s.timer_name = "0123456789012345678901234567890123456789012345678901234567890123";
		assert_int_equal(orbit__spotq_submit(f->p, &s, NULL), -E2BIG);
		s.kind = 99;
		assert_int_equal(orbit__spotq_submit(f->p, &s, NULL), -EINVAL);
	}
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 7), 0);
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 3);
	assert_int_equal(f->recs[0].kind, ORBIT_SPOTQ_KIND_ACTOR);
	assert_int_equal(f->recs[0].actor_id, 77);
	assert_int_equal(f->recs[0].member_row, row1);
	assert_int_equal(f->recs[0].member_gen, g1);
	assert_int_equal(f->recs[0].producer_seq, 1);
	assert_true(f->recs[0].submit_ns >= t0);
	assert_int_equal(f->recs[1].kind, ORBIT_SPOTQ_KIND_TIMER);
	assert_string_equal(f->recs[1].timer_name, "tick");
	assert_int_equal(f->recs[1].member_row, row2);
	assert_int_equal(f->recs[1].member_gen, g2);
	assert_int_equal(f->recs[1].producer_seq, 1);
	assert_int_equal(f->recs[2].producer_seq, 2);
	/* the same tenure continues its sequence after a re-open */
	orbit__spotq_producer_close(f->p);
	assert_int_equal(orbit__spotq_producer_open(&f->p, f->q, f->m), 0);
	uint64_t seq;
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 1, 1, &seq), 0);
	assert_int_equal(seq, 2);
	struct orbit_spotq_counters c = counters(f->q);
	assert_int_equal(c.host_row, (uint32_t)row1);
	assert_int_equal(c.host_pid, (uint32_t)getpid());
	/* a too small buffer */
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, 0), -ENOBUFS);
	orbit__spotq_host_close(h);
}

/* Free-running positions survive the 32-bit wrap (slot and byte ring stay continuous). */
static void test_positions_wrap_at_modulus(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;
	orbit_seg_t *seg;
	uint32_t items = 3, bytes = 100;
	uint64_t wi = (uint64_t)items * ((1ull << 32) / items);
	uint64_t wb = (uint64_t)bytes * ((1ull << 32) / bytes);

	fx_open(f, opts(items, bytes, 2, 128));
	seg = orbit__spotq_seg(f->q);
	struct orbit_spotq_shm *sh = (void *)((char *)seg->base + ORBIT_SEG_HEADER_BYTES);
	struct orbit_spotq_lane_shm *ln = (void *)((char *)seg->base + sh->lanes_off);
	uint64_t start = (wi - 2) | (wb - 10) << 32;
	atomic_store(&ln[0].tail, start);
	atomic_store(&ln[0].head, start);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	for (int i = 0; i < 20; i++) {
		uint32_t len = (uint32_t)(7 + i * 3);
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, len, (uint8_t)i, NULL), 0);
		assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 1);
		assert_int_equal(f->recs[0].payload_len, len);
		for (uint32_t k = 0; k < len; k++)
			assert_int_equal(((uint8_t *)f->recs[0].payload)[k], i);
		check_ok(f->q);
		assert_int_equal(orbit__spotq_complete(h, 0, f->recs[0].pos), 0);
	}
	uint64_t t = atomic_load(&ln[0].tail);
	assert_true((uint32_t)t < 100); /* wrapped */
	orbit__spotq_host_close(h);
}

struct claim_waiter {
	orbit_spotq_host_t *h;
	_Atomic int rc, started;
	_Atomic uint64_t ns;
};

static void *host_waits_long(void *arg)
{
	struct claim_waiter *w = arg;
	uint64_t t0 = orbit_test_now_ns();

	atomic_store(&w->started, 1);
	atomic_store(&w->rc, orbit__spotq_host_wait(w->h, 5000000000ll, 0));
	atomic_store(&w->ns, orbit_test_now_ns() - t0);
	return NULL;
}

/*
 * Issue 11 "a producer that is alive but stopped mid-record blocks only
 * until the unblock bound": a producer that claims after the sleeping
 * host's re-check and stops before its commit rings nobody. The host's
 * sleep ends within one unblock bound (50 ms here) anyway, not at its own
 * timeout (5 s), so it finds the claim and starts the bound. The claim is
 * written by hand at the tail (a producer stopped at spotq.after_claim).
 */
static void test_sleeping_host_finds_a_claim_that_rang_nobody(void **state)
{
	struct fx *f = *state;
	struct claim_waiter w = { .rc = 1 };
	orbit_spotq_host_t *h;
	pthread_t th;
	uint32_t g = 0;
	int row = orbit__members_self(f->m, &g);

	fx_open(f, opts(8, 1024, 2, 128));
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	w.h = h;
	assert_int_equal(pthread_create(&th, NULL, host_waits_long, &w), 0);
	while (!atomic_load(&w.started))
		usleep(100);
	usleep(20000); /* asleep (or about to be), nothing in the lanes */
	/* CLAIMED(pos 0, row, gen): the commit word's layout (shm/spot_queue.h) */
	atomic_store(&raw_slots(f, 0)[0].commit,
		     (uint64_t)1 << 32 | (uint64_t)row << 35 | (uint64_t)(g & 0x7ffff) << 45);
	pthread_join(th, NULL);
	assert_int_equal(atomic_load(&w.rc), 0);
	assert_true(atomic_load(&w.ns) < 2000000000ull);
	orbit__spotq_host_close(h);
}

struct waiter {
	orbit_spotq_host_t *h;
	_Atomic int rc;
	_Atomic int started;
	bool seq;      /* orbit__spotq_host_wait_seq() on both lanes past @seen */
	uint32_t seen; /* instead of orbit__spotq_host_wait() */
};

static void *host_waits(void *arg)
{
	struct waiter *w = arg;

	atomic_store(&w->started, 1);
	atomic_store(&w->rc, w->seq ? orbit__spotq_host_wait_seq(w->h, w->seen, 3, 5000000000ll, 0)
				    : orbit__spotq_host_wait(w->h, 5000000000ll, 0));
	return NULL;
}

/* Issue 11 "producers ring only when it sleeps (no syscall per record while it is awake)". */
static void test_doorbell_rung_only_when_host_sleeps(void **state)
{
	struct fx *f = *state;
	struct waiter w = { .rc = 1 };
	orbit_spotq_host_t *h;
	pthread_t th;
	orbit_seg_t *seg;

	fx_open(f, opts(64, 4096, 2, 128));
	seg = orbit__spotq_seg(f->q);
	struct orbit_spotq_shm *sh = (void *)((char *)seg->base + ORBIT_SEG_HEADER_BYTES);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	for (int i = 0; i < 20; i++)
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 8, 1, NULL), 0);
	assert_int_equal(orbit__doorbell_wakes(&sh->rec_db), 0); /* awake host: no FUTEX_WAKE */
	assert_int_equal(orbit__spotq_host_wait(h, 0, 0), 0);	 /* records there: no sleep */
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 64, f->buf, sizeof(f->buf)), 20);
	assert_int_equal(orbit__spotq_host_wait(h, 1000000, 0), -ETIMEDOUT);
	w.h = h;
	assert_int_equal(pthread_create(&th, NULL, host_waits, &w), 0);
	while (!atomic_load(&w.started))
		usleep(100);
	/* wait until it announced itself */
	for (int i = 0; i < 5000 && !atomic_load(&sh->rec_db.sleeping); i++)
		usleep(100);
	usleep(20000);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 8, 1, NULL), 0);
	pthread_join(th, NULL);
	assert_int_equal(atomic_load(&w.rc), 0);
	assert_int_equal(orbit__doorbell_wakes(&sh->rec_db), 1);
	orbit__spotq_host_close(h);
}

/*
 * A host that caught up polls before it announces a sleep: a record
 * submitted meanwhile is found by the poll (host_wait_seq() returns 1,
 * not slept) and its producer makes no system call (no FUTEX_WAKE, the
 * sleeping word never set). A fixed budget of 5 s stands for the
 * adaptive one (at most 20 us) so that the submit surely lands inside it.
 */
static void test_polling_host_takes_a_record_without_a_ring(void **state)
{
	struct fx *f = *state;
	struct waiter w = { .rc = 7, .seq = true };
	struct orbit_spotq_shm *sh;
	orbit_spotq_host_t *h;
	pthread_t th;

	fx_open(f, opts(64, 4096, 2, 128));
	sh = (void *)((char *)orbit__spotq_seg(f->q)->base + ORBIT_SEG_HEADER_BYTES);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	orbit__spotq_host_set_poll(h, 5000000000ll);
	w.h = h;
	w.seen = orbit__spotq_host_seq(h);
	assert_int_equal(pthread_create(&th, NULL, host_waits, &w), 0);
	while (!atomic_load(&w.started))
		usleep(100);
	usleep(20000); /* polling: not announced */
	assert_int_equal(atomic_load(&sh->rec_db.sleeping), 0);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 8, 1, NULL), 0);
	pthread_join(th, NULL);
	assert_int_equal(atomic_load(&w.rc), 1); /* found by the poll */
	assert_int_equal(orbit__doorbell_wakes(&sh->rec_db), 0);
	assert_int_equal(atomic_load(&sh->rec_db.sleeping), 0);
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 64, f->buf, sizeof(f->buf)), 1);
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[0].pos), 0);
	orbit__spotq_host_close(h);
}

/*
 * The poll's time counts against the wait's timeout: a 500 ms wait that
 * polled for all of it (a fixed budget of 5 s, cut to the timeout) ends
 * after about 500 ms, not after a poll and then a sleep of 500 ms each.
 * That mutation takes at least 1,000 ms whatever the load, so the bound
 * is 1,000 ms: 500 ms of slack for a loaded machine (900 failed there).
 */
static void test_poll_counts_against_the_timeout(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;
	uint64_t t0, ns;

	fx_open(f, opts(64, 4096, 2, 128));
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	orbit__spotq_host_set_poll(h, 5000000000ll);
	t0 = orbit_test_now_ns();
	assert_int_equal(orbit__spotq_host_wait_seq(h, orbit__spotq_host_seq(h), 3, 500000000ll, 0),
			 -ETIMEDOUT);
	ns = orbit_test_now_ns() - t0;
	assert_true(ns >= 500000000ull);
	if (ns >= 1000000000ull)
		print_message("wait took %llu ns\n", (unsigned long long)ns);
	assert_true(ns < 1000000000ull);
	orbit__spotq_host_close(h);
}

/*
 * The poll budget adapts as an adaptive mutex's spin does, from the last
 * wait: twice a short one (1 us to 20 us), half after a long one (0 below
 * 1 us: a host whose records come rarely sleeps at once), 0 after a
 * preemption, and a short wait turns a budget of 0 on again.
 */
static void test_poll_budget_adapts_to_the_last_wait(void **state)
{
	(void)state;
	assert_int_equal(orbit__spotq_poll_next(5000, 300), 1000);
	assert_int_equal(orbit__spotq_poll_next(5000, 3000), 6000);
	assert_int_equal(orbit__spotq_poll_next(5000, 15000), 20000);
	assert_int_equal(orbit__spotq_poll_next(5000, 20000), 20000);
	assert_int_equal(orbit__spotq_poll_next(20000, 20001), 10000);
	assert_int_equal(orbit__spotq_poll_next(20000, 60000000), 10000);
	assert_int_equal(orbit__spotq_poll_next(1500, 50000), 0);
	assert_int_equal(orbit__spotq_poll_next(0, 50000), 0);
	assert_int_equal(orbit__spotq_poll_next(0, 3000), 6000);
	assert_int_equal(orbit__spotq_poll_next(20000, UINT64_MAX), 0);
}

/*
 * A ring clears the bit of the host it wakes: the producers that commit
 * after it, while the woken host has not run yet, read the bit clear and
 * make no system call. The host's announce is made by hand here (its row
 * bit in the sleeping word, nobody in FUTEX_WAIT), standing for a host
 * that was woken and is not running yet: ten submits make one FUTEX_WAKE.
 */
static void test_ring_clears_the_host_bit_one_wake_per_sleep(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;
	orbit_seg_t *seg;
	uint32_t bit = orbit__doorbell_bit(3);

	fx_open(f, opts(64, 4096, 2, 128));
	seg = orbit__spotq_seg(f->q);
	struct orbit_spotq_shm *sh = (void *)((char *)seg->base + ORBIT_SEG_HEADER_BYTES);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	for (int sleep = 1; sleep <= 2; sleep++) {
		atomic_fetch_or(&sh->rec_db.sleeping, bit); /* the host announced, then slept */
		for (int i = 0; i < 10; i++)
			assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 8, 1, NULL), 0);
		assert_int_equal(orbit__doorbell_wakes(&sh->rec_db), (uint64_t)sleep);
		assert_int_equal(atomic_load(&sh->rec_db.sleeping) & bit, 0);
		assert_int_equal(orbit__spotq_take(h, 0, f->recs, 64, f->buf, sizeof(f->buf)), 10);
		for (int i = 0; i < 10; i++)
			assert_int_equal(orbit__spotq_complete(h, 0, f->recs[i].pos), 0);
	}
	orbit__spotq_host_close(h);
}

/*
 * A power-of-two item cap (the defaults) makes the position modulus 2^32: a
 * host's first advance() near the wrap must decide on a tail it read, not on
 * a "none read yet" word that lies inside the head's window there (it freed
 * a record with the head's bytes left behind: 20 bytes lost, counted corrupt).
 */
static void test_new_host_near_the_wrap_frees_on_a_real_tail(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;
	uint64_t wi = 1ull << 32, wb = 1ull << 32; /* items 4, bytes 128 */

	fx_open(f, opts(4, 128, 2, 128));
	struct orbit_spotq_lane_shm *ln = raw_lanes(f);
	uint64_t start = (wi - 3) | (wb - 10) << 32;
	atomic_store(&ln[0].tail, start);
	atomic_store(&ln[0].head, start);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	for (int i = 0; i < 6; i++) {
		pass_one(f, h, 20, (uint8_t)i);
		struct orbit_spotq_counters c = counters(f->q);
		assert_int_equal(c.depth[0], 0);
		assert_int_equal(c.bytes[0], 0);
		assert_int_equal(c.corrupt[0], 0);
	}
	orbit__spotq_host_close(h);
}

/*
 * A producer decides room on the head it read last (one cross-CPU miss per
 * submit saved), but "full" only on a fresh one: after the host freed a
 * full lane, the producer whose remembered head still shows it full must be
 * admitted at once, by count and by bytes, and a lane really full must
 * still refuse it.
 */
static void test_remembered_head_full_verdict_read_again(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;

	fx_open(f, opts(4, 128, 2, 128));
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	for (int round = 0; round < 3; round++) {
		/* by count: 4 records of 10 bytes; by bytes: 2 of 60 (+ 8 left) */
		uint32_t n = round == 1 ? 2 : 4, len = round == 1 ? 60 : 10;

		for (uint32_t i = 0; i < n; i++)
			assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, len, 1, NULL), 0);
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, len, 1, NULL), -EAGAIN);
		assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)),
				 (int)n);
		for (uint32_t i = 0; i < n; i++)
			assert_int_equal(orbit__spotq_complete(h, 0, f->recs[i].pos), 0);
		/* the remembered head shows the lane full; the real one is empty */
		pass_one(f, h, len, 2);
	}
	struct orbit_spotq_counters c = counters(f->q);
	assert_int_equal(c.rejected_count[0], 2);
	assert_int_equal(c.rejected_bytes[0], 1);
	orbit__spotq_host_close(h);
}

/*
 * A producer's remembered head must not decide room after a whole lap of
 * positions (2^32 with items 4) went by: that head then lies inside the
 * window again and shows room in a full lane; the claim CAS takes the slot
 * of an unread record (its previous-lap word) and overwrites it. The lap is
 * simulated by moving head and tail on (slots freed), 2 ms after the
 * producer last read the head (HEAD_KEEP_NS is 1 ms, by the coarse clock).
 */
static void test_remembered_head_never_decides_after_a_lap(void **state)
{
	struct fx *f = *state;
	struct orbit_spotq_slot *sl;
	struct orbit_spotq_lane_shm *ln;
	uint64_t wi = 1ull << 32, wb = 1ull << 32; /* items 4, bytes 128 */

	fx_open(f, opts(4, 128, 2, 128));
	assert_int_equal(orbit__spotq_producer_open(&f->p2, f->q, f->m2), 0);
	sl = raw_slots(f, 0);
	ln = raw_lanes(f);
	/* f->p reads the head (0) for its record at 0 */
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 10, 1, NULL), 0);
	/* a lap later: everything so far freed, head = tail = wi - 1 */
	for (int i = 0; i < 4; i++) {
		atomic_store(&sl[i].commit, 0);
		atomic_store(&raw_acks(f, 0)[i], 0);
		atomic_store(&sl[i].resv, 0);
	}
	atomic_store(&ln[0].tail, (wi - 1) | (wb - 20) << 32);
	atomic_store(&ln[0].head, (wi - 1) | (wb - 20) << 32);
	/* 2 ms by the clock the head's age is read on (CLOCK_MONOTONIC_COARSE) */
	struct timespec c0, c1;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &c0);
	do {
		usleep(500);
		clock_gettime(CLOCK_MONOTONIC_COARSE, &c1);
	} while ((c1.tv_sec - c0.tv_sec) * 1000000000ll + (c1.tv_nsec - c0.tv_nsec) < 2000000);
	/* the other producer fills the lane: wi - 1, 0, 1, 2 */
	for (int i = 0; i < 4; i++)
		assert_int_equal(submit(f->p2, ORBIT_SPOTQ_KIND_SPOT, 10, 2, NULL), 0);
	assert_int_equal(submit(f->p2, ORBIT_SPOTQ_KIND_SPOT, 10, 2, NULL), -EAGAIN);
	/* full for f->p too: its head of a lap ago (0) would show one free slot */
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 10, 3, NULL), -EAGAIN);
	check_ok(f->q);
	assert_int_equal(counters(f->q).depth[0], 4);
}

/*
 * Issue 11 "a corrupt record is counted, skipped and reported" (review F2):
 * one wrong reservation length costs that record only, not every later one
 * of the lane, and every byte comes back.
 */
static void test_one_bad_reservation_costs_one_record(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;
	int total = 0;

	fx_open(f, opts(8, 1024, 2, 128));
	for (int i = 0; i < 4; i++)
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 32, (uint8_t)i, NULL), 0);
	struct orbit_spotq_slot *sl = raw_slots(f, 0);
	uint64_t r = atomic_load(&sl[1].resv);
	atomic_store(&sl[1].resv, (r & 0xffffffffull) | (16ull << 32)); /* length 32 -> 16 */
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	for (int round = 0; round < 3; round++) {
		int n;
		while ((n = orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf))) > 0) {
			for (int i = 0; i < n; i++)
				assert_int_equal(orbit__spotq_complete(h, 0, f->recs[i].pos), 0);
			total += n;
		}
		assert_int_equal(n, 0);
		if (round < 2)
			for (int i = 0; i < 4; i++)
				assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 32, 9, NULL),
						 0);
		if (round == 1) { /* and a new host goes on the same way */
			orbit__spotq_host_close(h);
			assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 2), 0);
		}
	}
	struct orbit_spotq_counters c = counters(f->q);
	assert_int_equal(total, 11);
	assert_true(c.corrupt[0] >= 1);
	assert_int_equal(c.depth[0], 0);
	assert_int_equal(c.bytes[0], 0);
	check_ok(f->q);
	orbit__spotq_host_close(h);
}

/* Review F3: one ack word with a "newer" 28-bit generation does not block takeovers. */
static void test_bad_ack_generation_never_blocks_takeover(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;

	fx_open(f, opts(8, 1024, 2, 128));
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 8, 1, NULL), 0);
	atomic_store(&raw_acks(f, 0)[5], (uint64_t)(1u << 20) << 36); /* gen 2^20, NONE */
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	assert_int_equal(counters(f->q).corrupt[0], 1);
	/* on the live host's lane too: a foreign word is repaired, not taken for a fence */
	atomic_store(&raw_acks(f, 0)[0], (uint64_t)(1u << 21) << 36);
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 1);
	uint64_t a = atomic_load(&raw_acks(f, 0)[0]);
	atomic_store(&raw_acks(f, 0)[0], (a & ~(0xfffffffull << 36)) | (7ull << 36));
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[0].pos), -EINVAL); /* was TAKEN: now
										    REDELIVER */
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 0);
	orbit__spotq_host_close(h);
	/* the next host gets it again, flagged */
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 2), 0);
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 1);
	assert_true(f->recs[0].redelivered);
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[0].pos), 0);
	assert_int_equal(counters(f->q).depth[0], 0);
	orbit__spotq_host_close(h);
}

/* Review F4: an ack word in no known state is counted corrupt and its reservation comes back. */
static void test_unknown_ack_state_counted_and_freed(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;

	fx_open(f, opts(4, 1024, 2, 128));
	for (int i = 0; i < 3; i++)
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 8, (uint8_t)i, NULL), 0);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	atomic_store(&raw_acks(f, 0)[0], 0ull | (5ull << 32) | (orbit__spotq_host_gen(h) << 36));
	int n = orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf));
	assert_int_equal(n, 2);
	for (int i = 0; i < n; i++)
		assert_int_equal(orbit__spotq_complete(h, 0, f->recs[i].pos), 0);
	struct orbit_spotq_counters c = counters(f->q);
	assert_int_equal(c.corrupt[0], 1);
	assert_int_equal(c.depth[0], 0);
	orbit__spotq_host_close(h);
}

/*
 * Review F5: the head passed this host's cursor (an old host's late head
 * CAS after the takeover read the head): take() re-syncs and goes on.
 */
static void test_head_past_cursor_resyncs(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;

	fx_open(f, opts(4, 1024, 2, 128));
	for (int i = 0; i < 3; i++)
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 8, (uint8_t)i, NULL), 0);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	atomic_store(&raw_acks(f, 0)[0], 0ull | (3ull << 32) | (orbit__spotq_host_gen(h) << 36));
	atomic_store(&raw_lanes(f)[0].head, 1ull | (8ull << 32));
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 2);
	assert_int_equal(((uint8_t *)f->recs[0].payload)[0], 1);
	for (int i = 0; i < 2; i++)
		assert_int_equal(orbit__spotq_complete(h, 0, f->recs[i].pos), 0);
	assert_int_equal(counters(f->q).depth[0], 0);
	check_ok(f->q);
	orbit__spotq_host_close(h);
}

/*
 * Review F15: a commit word at the tail that is in no lap (bad bytes)
 * would make every submission -ORBIT_ECORRUPT for good; the host resets
 * it. And a NULL payload of length 0 is a valid record (review F10).
 */
static void test_bad_slot_at_tail_reset_by_host_and_empty_payload(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;
	struct orbit_spotq_submit s = { .kind = ORBIT_SPOTQ_KIND_SPOT };

	fx_open(f, opts(4, 1024, 2, 128));
	assert_int_equal(orbit__spotq_submit(f->p, &s, NULL), 0); /* NULL payload, length 0 */
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, NULL, 0), 1);
	assert_int_equal(f->recs[0].payload_len, 0);
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[0].pos), 0);
	atomic_store(&raw_slots(f, 0)[1].commit, 77ull | (2ull << 32)); /* COMMITTED at pos 77 */
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 8, 1, NULL), -ORBIT_ECORRUPT);
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 0);
	assert_int_equal(counters(f->q).corrupt[0], 1);
	assert_non_null(strstr(orbit__spotq_host_last_corrupt(h), "reset"));
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 8, 1, NULL), 0);
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 1);
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[0].pos), 0);
	check_ok(f->q);
	orbit__spotq_host_close(h);
}

struct room_waiter {
	orbit_spotq_producer_t *p;
	_Atomic int rc;
	_Atomic int started;
	uint64_t took_ns;
};

static void *producer_waits_room(void *arg)
{
	struct room_waiter *w = arg;
	uint64_t t0 = orbit_test_now_ns();

	atomic_store(&w->started, 1);
	atomic_store(&w->rc, orbit__spotq_wait_room(w->p, ORBIT_SPOTQ_APP, 8, 5000000000ll));
	w->took_ns = orbit_test_now_ns() - t0;
	return NULL;
}

/*
 * A 2-item application lane, full (a third submit is -EAGAIN), both
 * records taken by the host *@h: room comes back with the first
 * complete. Returns the queue's SHM body (its doorbells).
 */
static struct orbit_spotq_shm *room_full(struct fx *f, orbit_spotq_host_t **h)
{
	fx_open(f, opts(2, 1024, 2, 128));
	assert_int_equal(orbit__spotq_host_takeover(h, f->q, f->m, 1), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 8, 1, NULL), 0);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 8, 1, NULL), -EAGAIN);
	assert_int_equal(orbit__spotq_take(*h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 2);
	return (void *)((char *)orbit__spotq_seg(f->q)->base + ORBIT_SEG_HEADER_BYTES);
}

/* Start *@th, a producer thread that waits for room (@w), with the poll budget fixed at @budget_ns. */
static void room_waiter_start(struct fx *f, struct room_waiter *w, pthread_t *th, int64_t budget_ns)
{
	w->p = f->p;
	orbit__spotq_producer_set_poll(f->p, budget_ns);
	assert_int_equal(orbit__spotq_producer_poll_budget(f->p), (uint64_t)budget_ns);
	assert_int_equal(pthread_create(th, NULL, producer_waits_room, w), 0);
}

/*
 * Issue 11 "an optional helper waits on the lane's free-space doorbell":
 * a producer asleep in wait_room() is woken by the host's head advance
 * (one FUTEX_WAKE on the room doorbell), not by its 5 s timeout; and
 * orbit__spotq_kick() wakes a sleeping host.
 */
static void test_room_doorbell_wakes_waiting_producer_and_kick_wakes_host(void **state)
{
	struct fx *f = *state;
	struct room_waiter w = { .rc = 1 };
	orbit_spotq_host_t *h;
	pthread_t th;

	struct orbit_spotq_shm *sh = room_full(f, &h);
	room_waiter_start(f, &w, &th, 0); /* the sleep itself (the poll: below) */
	for (int i = 0; i < 5000 && !atomic_load(&sh->room_db.sleeping); i++)
		usleep(100);
	usleep(20000);
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[0].pos), 0);
	pthread_join(th, NULL);
	assert_int_equal(atomic_load(&w.rc), 0);
	assert_true(w.took_ns < 2000000000ull);
	assert_int_equal(orbit__doorbell_wakes(&sh->room_db), 1);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 8, 1, NULL), 0);
	/* kick: the agent's death watcher wakes a host that sleeps */
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 1);
	uint32_t seq0 = orbit__doorbell_seq(&sh->rec_db);
	orbit__spotq_kick(f->q);
	assert_true(orbit__doorbell_seq(&sh->rec_db) != seq0);
	orbit__spotq_host_close(h);
}

/*
 * Issue 11 "no syscall per record while it is awake", the producer's side
 * of a full lane: a producer that waits for room polls the lane for its
 * poll budget before it announces a sleep, so the host's advance that
 * frees the room sees nobody asleep and makes no FUTEX_WAKE (before, every
 * wait announced at once: a producer streaming into a host that keeps up
 * cost the host a FUTEX_WAKE per batch it completed).
 */
static void test_room_wait_polls_before_it_sleeps_and_the_host_rings_nobody(void **state)
{
	struct fx *f = *state;
	struct room_waiter w = { .rc = 1 };
	orbit_spotq_host_t *h;
	pthread_t th;

	struct orbit_spotq_shm *sh = room_full(f, &h);
	room_waiter_start(f, &w, &th, 4000000000ll); /* fixed: a loaded machine's gaps too */
	while (!atomic_load(&w.started))
		usleep(100);
	usleep(20000);
	assert_int_equal(atomic_load(&sh->room_db.sleeping), 0); /* polling, not announced */
	assert_int_equal(atomic_load(&w.rc), 1);		 /* still waiting */
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[0].pos), 0);
	pthread_join(th, NULL);
	assert_int_equal(atomic_load(&w.rc), 0);
	assert_true(w.took_ns < 2000000000ull);
	assert_int_equal(orbit__doorbell_wakes(&sh->room_db), 0); /* the advance rang nobody */
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 8, 1, NULL), 0);
	orbit__spotq_host_close(h);
}

/*
 * The room poll's budget adapts as the host's does (orbit__spotq_poll_next):
 * 5 us at first with more than one CPU online, none with one; a wait that
 * timed out (no room came, however short its timeout) halves it; room
 * already there at the first look leaves it alone. A fixed budget's poll
 * counts against the timeout: a 30 ms wait with a 100 ms budget ends
 * after about 30 ms, without an announce.
 */
static void test_room_poll_budget_adapts_to_how_soon_room_came(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;
	struct orbit_spotq_shm *sh = room_full(f, &h);
	uint64_t t0, ns, b0 = orbit__spotq_producer_poll_budget(f->p);
	int tries = 0;

	if (sysconf(_SC_NPROCESSORS_ONLN) <= 1) {
		assert_int_equal(b0, 0); /* one CPU: the host needs it, sleep at once */
		orbit__spotq_host_close(h);
		skip();
	}
	assert_int_equal(b0, 5000);
	/* a gap past 20 us in the 5 us poll (a loaded machine) is a preemption: budget 0, again */
	do {
		orbit__spotq_producer_set_poll(f->p, -1);
		assert_int_equal(orbit__spotq_wait_room(f->p, ORBIT_SPOTQ_APP, 8, 30000000),
				 -ETIMEDOUT);
	} while (orbit__spotq_producer_poll_budget(f->p) == 0 && ++tries < 20);
	assert_int_equal(orbit__spotq_producer_poll_budget(f->p), 2500);
	/* room already there: 0 at once, the budget as it was */
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[0].pos), 0);
	assert_int_equal(orbit__spotq_wait_room(f->p, ORBIT_SPOTQ_APP, 8, 30000000), 0);
	assert_int_equal(orbit__spotq_producer_poll_budget(f->p), 2500);
	/* full again; a fixed 100 ms budget, a 30 ms timeout */
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 8, 1, NULL), 0);
	orbit__spotq_producer_set_poll(f->p, 100000000);
	t0 = orbit_test_now_ns();
	assert_int_equal(orbit__spotq_wait_room(f->p, ORBIT_SPOTQ_APP, 8, 30000000), -ETIMEDOUT);
	ns = orbit_test_now_ns() - t0;
	assert_true(ns >= 30000000ull);
	assert_true(ns < 80000000ull); /* the poll's 100 ms were cut to the timeout */
	assert_int_equal(atomic_load(&sh->room_db.sleeping), 0); /* spent polling: no announce */
	assert_int_equal(orbit__spotq_producer_poll_budget(f->p), 100000000); /* fixed */
	orbit__spotq_producer_set_poll(f->p, -1);
	assert_int_equal(orbit__spotq_producer_poll_budget(f->p), 5000);
	/* a 4 us timeout, spent in the poll, is a long wait too (not "room in 4 us") */
	assert_int_equal(orbit__spotq_wait_room(f->p, ORBIT_SPOTQ_APP, 8, 4000), -ETIMEDOUT);
	assert_true(orbit__spotq_producer_poll_budget(f->p) <= 2500);
	orbit__spotq_host_close(h);
}

/*
 * A record that can never fit its lane (over the lane's byte cap): the
 * wait for room answers -E2BIG at once, as a submit of it does, instead
 * of sleeping until its timeout (forever, without one).
 */
static void test_room_wait_for_a_record_over_the_lane_cap_is_e2big(void **state)
{
	struct fx *f = *state;
	uint64_t t0 = orbit_test_now_ns();

	fx_open(f, opts(8, 256, 4, 256));
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 257, 1, NULL), -E2BIG);
	assert_int_equal(orbit__spotq_wait_room(f->p, ORBIT_SPOTQ_APP, 257, -1), -E2BIG);
	assert_int_equal(orbit__spotq_wait_room(f->p, ORBIT_SPOTQ_LIFECYCLE, 257, 1000000000ll),
			 -E2BIG);
	assert_true(orbit_test_now_ns() - t0 < 500000000ull); /* at once, no wait */
	assert_int_equal(orbit__spotq_wait_room(f->p, ORBIT_SPOTQ_APP, 256, 0), 0); /* fits */
}

/*
 * A record claimed by a tenure that no longer owns its producer row (the
 * member died and its row was taken by a new tenure) is aborted at once,
 * without waiting for the unblock bound: orbit__spotq_claimer_dead()'s tenure branch.
 */
static void test_claim_of_an_ended_tenure_aborted_at_once(void **state)
{
	struct fx *f = *state;
	struct orbit_spotq_options o = opts(4, 1024, 2, 128);
	orbit_spotq_host_t *h;
	uint32_t gen;
	int row = orbit__members_self(f->m, &gen);

	o.unblock_ms = 60000;
	fx_open(f, o);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 8, 1, NULL), 0);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 1);
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[0].pos), 0);
	/* pos 1 claimed by an earlier tenure of our row (generation - 1) */
	struct orbit_spotq_slot *sl = raw_slots(f, 0);
	uint64_t w = 1ull | (1ull << 32) | ((uint64_t)row << 35) |
		     ((uint64_t)((gen - 1) & 0x7ffff) << 45);
	atomic_store(&sl[1].commit, w);
	atomic_store(&sl[1].resv, 8ull | (0ull << 32));
	atomic_store(&raw_lanes(f)[0].tail, 2ull | (8ull << 32));
	uint64_t t0 = orbit_test_now_ns();
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 0);
	assert_true(orbit_test_now_ns() - t0 < 1000000000ull);
	assert_int_equal(counters(f->q).aborted[0], 1);
	assert_int_equal(counters(f->q).depth[0], 0); /* dead: its reservation is back */
	check_ok(f->q);
	orbit__spotq_host_close(h);
}

static int collect(void *ctx, const char *spot)
{
	char *names = ctx;

	strcat(names, spot);
	strcat(names, ";");
	return 0;
}

/* Readers that do not know a Spot's caps (orbitctl spots) list the fleet's Spots and adopt the caps. */
static void test_list_spots_and_open_adopting_caps(void **state)
{
	struct fx *f = *state;
	struct orbit_spotq_options o = opts(16, 2048, 4, 512), ro;
	orbit_spotq_t *q2, *q3;
	char names[256] = "";

	fx_open(f, o);
	assert_int_equal(orbit__spotq_open(&q2, f->fleet, "other.spot", &o), 0);
	assert_int_equal(orbit__spotq_foreach(f->fleet, collect, names), 2);
	assert_true(strstr(names, SPOT ";") && strstr(names, "other.spot;"));
	assert_int_equal(orbit__spotq_foreach("no-such-fleet-here", collect, names), 0);
	assert_int_equal(orbit__spotq_foreach("bad/fleet", collect, names), -EINVAL);
	orbit__spotq_options_init(&ro);
	ro.readonly = true;
	ro.adopt_caps = true;
	assert_int_equal(orbit__spotq_open(&q3, f->fleet, SPOT, &ro), 0);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 10, 1, NULL), 0);
	struct orbit_spotq_counters c = counters(q3);
	assert_int_equal(c.item_cap[0], 16);
	assert_int_equal(c.byte_cap[0], 2048);
	assert_int_equal(c.item_cap[1], 4);
	assert_int_equal(c.byte_cap[1], 512);
	assert_int_equal(c.accepted[0], 1);
	check_ok(q3);
	orbit__spotq_close(q3);
	assert_int_equal(orbit__spotq_open(&q3, f->fleet, "missing", &ro), -ENOENT);
	ro.how = ORBIT_SEG_OPEN_OR_CREATE;
	ro.readonly = false;
	assert_int_equal(orbit__spotq_open(&q3, f->fleet, SPOT, &ro), -EINVAL);
	/* another kind under a Spot queue's name */
	struct orbit_seg_header *hd = orbit__spotq_seg(q2)->base;
	hd->kind = ORBIT_SEG_KIND_STATS;
	ro.how = ORBIT_SEG_OPEN;
	assert_int_equal(orbit__spotq_open(&q3, f->fleet, "other.spot", &ro), -ORBIT_EKIND);
	hd->kind = ORBIT_SEG_KIND_SPOT_QUEUE;
	orbit__spotq_close(q2);
	orbit__spotq_unlink(f->fleet, "other.spot");
}

/*
 * Issue 11 "Footprint": 64 Spots at the defaults fit the 64 MiB /dev/shm of
 * a container beside the fleet's other segments (measured here: the lock
 * table, the transition ring, the member directory, the stats segment).
 */
/*
 * Layout 3: the host writes no byte of a slot's lines when it takes and
 * completes Spot records (its ack words live at acks_off), so the lines
 * go back to the next lap's producer without a write-back from the host.
 */
static void test_host_writes_no_slot_line(void **state)
{
	struct fx *f = *state;
	struct orbit_spotq_slot before[8];
	orbit_spotq_host_t *h;
	int n;

	fx_open(f, opts(8, 1024, 2, 128));
	for (int i = 0; i < 6; i++)
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 16, (uint8_t)i, NULL), 0);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	memcpy(before, raw_slots(f, 0), sizeof(before));
	n = orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf));
	assert_int_equal(n, 6);
	for (int i = 0; i < n; i++)
		assert_int_equal(orbit__spotq_complete(h, 0, f->recs[i].pos), 0);
	assert_int_equal(counters(f->q).depth[0], 0);
	assert_memory_equal(before, raw_slots(f, 0), sizeof(before));
	/* the ack words moved instead: FREED (3) for every completed record */
	for (int i = 0; i < 6; i++)
		assert_int_equal((atomic_load(&raw_acks(f, 0)[i]) >> 32) & 7u, 3);
	check_ok(f->q);
	orbit__spotq_host_close(h);
}

/*
 * Layout 4's record checksum is part of the layout: a host must accept a
 * record summed by any build of the same layout version. Three records
 * written into the segment by hand (Spot, Actor, timer: the target bytes
 * of each kind), with the sums the layout-4 code of 2026-12-01 gave for
 * them, are taken whole and uncounted by the checker. A change of the sum
 * (its constants, its word order, the fields it covers) fails here and
 * needs a new layout version.
 */
static void test_checksum_known_answers_of_layout_4(void **state)
{
	static const uint64_t sum[3] = { 0xd77a89300bec2cc6ull, 0xa6dcd1ed9317ea50ull,
					 0x4599598db660f778ull };
	static const char tn[] = "tick-tock-timer-name-of-some-length";
	struct fx *f = *state;
	struct orbit_spotq_slot *sl;
	orbit_spotq_host_t *h;
	orbit_seg_t *seg;
	uint8_t *data;
	uint32_t pos[3];

	fx_open(f, opts(8, 1024, 2, 128));
	seg = orbit__spotq_seg(f->q);
	data =
	    (uint8_t *)seg->base +
	    ((struct orbit_spotq_shm *)((char *)seg->base + ORBIT_SEG_HEADER_BYTES))->data_off[0];
	sl = raw_slots(f, 0);
	for (uint32_t i = 0; i < 3; i++) {
		for (int b = 0; b < 56; b++) /* rounds of 32 and 16, then 8 padded */
			data[56 * i + (uint32_t)b] = (uint8_t)(0xa0 + b);
		memset(&sl[i].target, 0, sizeof(sl[i].target));
		sl[i].kind = i + 1; /* Spot, Actor, timer */
		sl[i].payload_len = 56;
		sl[i].producer_seq = 42 + i;
		sl[i].submit_ns = i == 0 ? 1234567 : i == 1 ? 1234999 : 1235999;
		sl[i].member_row = 3;
		sl[i].member_gen = 5;
		if (i == 1)
			sl[i].target.actor_id = 77;
		if (i == 2)
			memcpy(sl[i].target.timer_name, tn, sizeof(tn) - 1);
		sl[i].checksum = sum[i];
		atomic_store(&sl[i].resv, (uint64_t)(56 * i) | (56ull << 32));
		/* COMMITTED (2) at pos i, producer row 3, member generation 5 */
		atomic_store(&sl[i].commit, i | (2ull << 32) | (3ull << 35) | (5ull << 45));
	}
	atomic_store(&raw_lanes(f)[0].tail, 3ull | (168ull << 32));
	check_ok(f->q);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 3);
	assert_int_equal(counters(f->q).corrupt[0], 0);
	assert_int_equal(f->recs[1].actor_id, 77);
	assert_string_equal(f->recs[2].timer_name, tn);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(f->recs[i].producer_seq, 42 + i);
		assert_int_equal(((uint8_t *)f->recs[i].payload)[55], 0xa0 + 55);
		pos[i] = f->recs[i].pos;
	}
	assert_int_equal(orbit__spotq_complete_n(h, 0, pos, 3, NULL), 0);
	assert_int_equal(counters(f->q).depth[0], 0);
	check_ok(f->q);
	orbit__spotq_host_close(h);
}

/*
 * SQ-V1: the host's common path reads no tail word. With the lane's tail
 * word scribbled far outside the head's window after three commits, take() still
 * delivers the three (a COMMITTED word at the cursor proves the tail
 * passed the slot) and complete_n() moves the head past them (advance()
 * ends the run at the tail take() published); the bad tail is found when
 * the lane looks empty: by take()'s own look there (at most one tail read
 * per STALL_POLL_NS, the first at once) and by the wait's before a sleep,
 * and take() reports it. Before sq-lines, take() refused at once with
 * -ORBIT_ECORRUPT and the head stayed.
 */
static void test_committed_records_taken_and_freed_without_the_tail(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;
	uint32_t pos[3];
	uint64_t t;
	int n;

	fx_open(f, opts(8, 1024, 2, 128));
	for (int i = 0; i < 3; i++)
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 16, (uint8_t)i, NULL), 0);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	t = atomic_load(&raw_lanes(f)[0].tail);
	assert_int_equal(t, 3ull | (48ull << 32));
	atomic_store(&raw_lanes(f)[0].tail, UINT64_MAX);
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(((uint8_t *)f->recs[i].payload)[0], i);
		pos[i] = f->recs[i].pos;
	}
	assert_int_equal(orbit__spotq_complete_n(h, 0, pos, 3, NULL), 0);
	assert_int_equal(atomic_load(&raw_lanes(f)[0].head), 3ull | (48ull << 32));
	/*
	 * take()'s look at the empty-looking cursor was spent by the take
	 * above (it ended there, its 3 records returned); 0 within
	 * STALL_POLL_NS of it, else that look reports the tail
	 */
	n = orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf));
	assert_true(n == 0 || n == -ORBIT_ECORRUPT);
	/* the wait's look before a sleep finds the tail outside the head's window */
	assert_int_equal(orbit__spotq_host_wait(h, 0, 0), 0);
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)),
			 -ORBIT_ECORRUPT);
	atomic_store(&raw_lanes(f)[0].tail, t);
	check_ok(f->q);
	pass_one(f, h, 16, 7);
	orbit__spotq_host_close(h);
}

/*
 * The other half of SQ-V1's empty test: bad bytes that make a slot the
 * tail passed look FREE. take() calls the lane empty without the tail,
 * except for its own look there at most once per STALL_POLL_NS (the first
 * at once): that look resolves the slot (counted corrupt) and delivers
 * the record behind it. Within the interval the wait reads the tail
 * before it sleeps, sees it past the cursor and returns 1 (a lane ready,
 * no sleep), and the next take() resolves the slot. Without either look
 * the lane would wait for good.
 */
static void test_passed_slot_that_looks_free_found_before_a_sleep(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;
	int n;

	fx_open(f, opts(8, 1024, 2, 128));
	for (int i = 0; i < 3; i++)
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 16, (uint8_t)i, NULL), 0);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 1, f->buf, sizeof(f->buf)), 1);
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[0].pos), 0);
	atomic_store(&raw_slots(f, 0)[1].commit, 0); /* FREE: looks unclaimed */
	/* take()'s first look at the empty-looking cursor reads the tail */
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 1);
	assert_int_equal(((uint8_t *)f->recs[0].payload)[0], 2);
	assert_int_equal(counters(f->q).corrupt[0], 1);
	assert_non_null(strstr(orbit__spotq_host_last_corrupt(h), "not claimed for its lap"));
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[0].pos), 0);
	assert_int_equal(counters(f->q).depth[0], 0);
	/* the same again at once: take()'s look is spent, the wait's finds it */
	for (int i = 3; i < 5; i++)
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 16, (uint8_t)i, NULL), 0);
	atomic_store(&raw_slots(f, 0)[3].commit, 0);
	n = orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf));
	if (n == 0) { /* else STALL_POLL_NS passed since the look above (a loaded machine) */
		assert_int_equal(
		    orbit__spotq_host_wait_seq(h, orbit__spotq_host_seq(h), 3u, 2000000000ll, 0),
		    1);
		n = orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf));
	}
	assert_int_equal(n, 1);
	assert_int_equal(((uint8_t *)f->recs[0].payload)[0], 4);
	assert_int_equal(counters(f->q).corrupt[0], 2);
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[0].pos), 0);
	assert_int_equal(counters(f->q).depth[0], 0);
	orbit__spotq_host_close(h);
}

/*
 * orbit__spotq_complete_n: a batch completed at once, out of order; one
 * record of the batch not taken stops it with -EINVAL at its index, the
 * ones before it are done and their prefix is freed; a fenced host
 * changes nothing.
 */
static void test_complete_n_batch_codes_and_prefix(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h, *h2;
	uint32_t pos[8];
	unsigned done = 99;
	int n;

	fx_open(f, opts(8, 1024, 2, 128));
	for (int i = 0; i < 6; i++)
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 10, (uint8_t)i, NULL), 0);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	n = orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf));
	assert_int_equal(n, 6);
	/* 2, 0, then 0 again (done already): -EINVAL at index 2; 1 is untouched */
	pos[0] = f->recs[2].pos;
	pos[1] = f->recs[0].pos;
	pos[2] = f->recs[0].pos;
	pos[3] = f->recs[1].pos;
	assert_int_equal(orbit__spotq_complete_n(h, 0, pos, 4, &done), -EINVAL);
	assert_int_equal(done, 2);
	assert_int_equal(counters(f->q).completed[0], 2);
	assert_int_equal(counters(f->q).depth[0], 5); /* 0 freed; 1 holds 2 back */
	assert_int_equal(counters(f->q).bytes[0], 50);
	/* the rest in one call: the head passes all six */
	pos[0] = f->recs[5].pos;
	pos[1] = f->recs[1].pos;
	pos[2] = f->recs[4].pos;
	pos[3] = f->recs[3].pos;
	assert_int_equal(orbit__spotq_complete_n(h, 0, pos, 4, &done), 0);
	assert_int_equal(done, 4);
	assert_int_equal(counters(f->q).completed[0], 6);
	assert_int_equal(counters(f->q).depth[0], 0);
	assert_int_equal(counters(f->q).bytes[0], 0);
	assert_int_equal(orbit__spotq_complete_n(h, 0, NULL, 1, &done), -EINVAL);
	assert_int_equal(orbit__spotq_complete_n(h, 0, NULL, 0, &done), 0);
	assert_int_equal(done, 0);
	/* fenced: a newer host took over; the old one's batch changes nothing */
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 10, 9, NULL), 0);
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 1);
	pos[0] = f->recs[0].pos;
	assert_int_equal(orbit__spotq_host_takeover(&h2, f->q, f->m, 2), 0);
	assert_int_equal(orbit__spotq_complete_n(h, 0, pos, 1, &done), -ORBIT_EFENCED);
	assert_int_equal(done, 0);
	assert_int_equal(counters(f->q).depth[0], 1);
	assert_int_equal(orbit__spotq_take(h2, 0, f->recs, 8, f->buf, sizeof(f->buf)), 1);
	assert_true(f->recs[0].redelivered);
	assert_int_equal(orbit__spotq_complete_n(h2, 0, &f->recs[0].pos, 1, NULL), 0);
	assert_int_equal(counters(f->q).depth[0], 0);
	check_ok(f->q);
	orbit__spotq_host_close(h);
	orbit__spotq_host_close(h2);
}

/* The lane's producer rows. */
static struct orbit_spotq_row *raw_rows(struct fx *f)
{
	orbit_seg_t *seg = orbit__spotq_seg(f->q);
	struct orbit_spotq_shm *sh = (void *)((char *)seg->base + ORBIT_SEG_HEADER_BYTES);

	return (void *)((char *)seg->base + sh->rows_off);
}

struct advancers {
	orbit_spotq_host_t *h;
	_Atomic int stop;
	_Atomic int bad; /* an advance() answer other than >= 0 */
};

static void *advance_loop(void *arg)
{
	struct advancers *a = arg;

	while (!atomic_load(&a->stop))
		if (orbit__spotq_advance(a->h, ORBIT_SPOTQ_APP) < 0)
			atomic_store(&a->bad, 1);
	return NULL;
}

#define ADV_THREADS 4
#define ADV_ROUNDS 100

/*
 * advance() may run on any thread of the host (complete() calls it), so
 * two advances of one handle race on the DONE -> FREED step of an aborted
 * record at the head. The loser's CAS fails; it must look again, never
 * write FREED of its position over what the word holds by then. Each
 * round: an aborted record (our own row, alive, not retired) holds the
 * head as DONE while ADV_THREADS threads loop advance() on it (more
 * threads than CPUs: most are preempted at any time, many of them between
 * reading DONE and reading the claim). Then it retires, and at once the
 * main thread frees it, submits two records (the second reuses its slot)
 * and takes both; the preempted advancers resume while that record is
 * TAKEN. Each record must complete (0) and the lane must drain.
 * Mutations that fail it: orbit__spotq_ack_set() retrying its CAS on whatever the
 * word holds after a failure (the code before the fix) -> complete()
 * returns -EINVAL for the reused slot's record (the word reads FREED of
 * the aborted position; 6 of 6 runs, within 2-21 rounds); counting a
 * walk's bad lengths before its head CAS -> corrupt 5-9 (4 of 4 runs);
 * "corrupt" on a fresh tail without re-reading the head -> advance()
 * answers -ORBIT_ECORRUPT (1 of 4 runs).
 */
static void test_racing_advances_never_rewrite_a_reused_ack(void **state)
{
	struct fx *f = *state;
	struct orbit_spotq_options o = opts(2, 256, 2, 128);
	struct advancers a = { 0 };
	pthread_t th[ADV_THREADS];
	orbit_spotq_host_t *h;
	uint32_t gen;
	int row = orbit__members_self(f->m, &gen), fails = 0;

	o.unblock_ms = 1;
	fx_open(f, o);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	a.h = h;
	for (int i = 0; i < ADV_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, advance_loop, &a), 0);
	for (int round = 0; round < ADV_ROUNDS && !fails; round++) {
		uint64_t t = atomic_load(&raw_lanes(f)[0].tail);
		uint32_t P = (uint32_t)t;
		_Atomic uint64_t *claim = &raw_rows(f)[row].claim[0];
		struct orbit_spotq_slot *s = &raw_slots(f, 0)[P % 2];

		/* a claim of our row at the tail, 0 bytes: alive, never committed */
		atomic_store(claim, (uint64_t)P);
		atomic_store(&s->commit, (uint64_t)P | (1ull << 32) | ((uint64_t)row << 35) |
					     ((uint64_t)(gen & 0x7ffff) << 45));
		assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 0);
		usleep(2000); /* past the 1 ms bound */
		assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 0);
		assert_int_equal(counters(f->q).aborted[0], (uint64_t)round + 1);
		assert_int_equal(counters(f->q).depth[0], 1); /* DONE, held: not retired */
		usleep(2000); /* the advancers spin on it and get preempted */
		atomic_store(claim, (uint64_t)P | (1ull << 63)); /* retired */
		assert_true(orbit__spotq_advance(h, 0) >= 0);
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 8, 1, NULL), 0);
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 8, 2, NULL), 0);
		assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 2);
		assert_int_equal(f->recs[1].pos, P + 2); /* the aborted record's slot again */
		usleep(3000);				 /* the preempted advancers run on */
		for (int i = 0; i < 2; i++) {
			int rc = orbit__spotq_complete(h, 0, f->recs[i].pos);
			if (rc != 0) {
				uint64_t w = atomic_load(&raw_acks(f, 0)[f->recs[i].pos % 2]);
				print_message("round %d: complete(pos %u) = %d, its ack word "
					      "pos %u state %u\n",
					      round, f->recs[i].pos, rc, (uint32_t)w,
					      (uint32_t)(w >> 32) & 7u);
				fails++;
			}
		}
	}
	atomic_store(&a.stop, 1);
	for (int i = 0; i < ADV_THREADS; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(fails, 0);
	assert_int_equal(atomic_load(&a.bad), 0);
	assert_int_equal(counters(f->q).depth[0], 0);
	assert_int_equal(counters(f->q).bytes[0], 0);
	assert_int_equal(counters(f->q).corrupt[0], 0);
	check_ok(f->q);
	orbit__spotq_host_close(h);
}

static void test_footprint_64_default_spots_fit_64_mib(void **state)
{
	static const char *const names[] = { "lock-228", "ring-229", "members", "stats" };
	struct fx *f = *state;
	struct orbit_lock_options lo = { .size = sizeof(lo), .fleet = f->fleet };
	orbit_lock_t *l;
	orbit_ring_t *ring;
	orbit_stats_t st;
	uint64_t others = 0, page = (uint64_t)sysconf(_SC_PAGESIZE);

	assert_int_equal(orbit_lock_open(&lo, &l), 0);
	assert_int_equal(orbit__ring_open(&ring, f->fleet, NULL, NULL), 0);
	assert_int_equal(orbit__stats_open(&st, f->fleet, NULL), 0);
	for (unsigned i = 0; i < 4; i++) {
		char path[128];
		struct stat sb;
		snprintf(path, sizeof(path), "/dev/shm/orbit.%s.%s", f->fleet, names[i]);
		assert_int_equal(stat(path, &sb), 0);
		others += ((uint64_t)sb.st_size + page - 1) / page *
			  page; /* tmpfs allocates pages */
	}
	uint64_t spot = orbit__spotq_footprint(NULL);
	uint64_t spot_pages = (spot + page - 1) / page * page;
	print_message("other segments %llu bytes, one default Spot %llu bytes, 64 Spots + others "
		      "%.2f MiB\n",
		      (unsigned long long)others, (unsigned long long)spot,
		      (double)(others + 64 * spot_pages) / (1024.0 * 1024.0));
	assert_true(others + 64 * spot_pages <= 64ull << 20);
	orbit__stats_close(&st);
	orbit__seg_unlink(f->fleet, "stats");
	orbit__ring_close(ring);
	orbit__ring_unlink(f->fleet, NULL);
	orbit_lock_close(l);
	orbit_lock_unlink(&lo);
}

/*
 * doc/spot-queues.md, "The host off the producers' tail line" (H1 of its
 * review): one stray word, the empty lane's tail slot reads COMMITTED for
 * its own lap. take() decides from the commit word (SQ-V1), but a record
 * it would resolve as corrupt or aborted is resolved only once a tail read
 * shows the tail past it (tail_past()); here the tail is at the slot, so
 * the host helps it past first, as a producer would, and frees the slot:
 * the cursor never passes the tail, and a record accepted next is
 * delivered. On sq-lines (main before this fix) the cursor moved past the
 * tail, the wait's lane_ready() called the tail behind it "past", the next
 * take() marked the next, unclaimed, position DONE, and the record a
 * producer then committed there was skipped and freed: accepted, never
 * delivered.
 */
static void test_bad_commit_word_at_the_tail_never_passes_it(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;
	uint64_t seq = 0;
	int n;

	fx_open(f, opts(8, 1024, 2, 128));
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	pass_one(f, h, 16, 1); /* pos 0 done: head = tail = cursor = 1 */
	/* COMMITTED (2) at pos 1, row 0, gen 0: one corrupt word at the tail slot */
	atomic_store(&raw_slots(f, 0)[1].commit, 1ull | (2ull << 32));
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 0);
	/* the host helped the tail past the bad slot before resolving it, and freed it */
	assert_int_equal(atomic_load(&raw_lanes(f)[0].tail), 2ull | (16ull << 32));
	assert_int_equal(atomic_load(&raw_lanes(f)[0].head), 2ull | (16ull << 32));
	assert_int_equal(counters(f->q).corrupt[0], 1);
	/* the host goes idle: wait, take again */
	(void)orbit__spotq_host_wait(h, 0, 0);
	assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 0);
	/* a producer submits one record: accepted */
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 16, 9, &seq), 0);
	n = orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf));
	if (n != 1 || f->recs[0].producer_seq != seq)
		fail_msg("accepted record seq %llu not delivered (take %d, corrupt %llu, "
			 "completed %llu, depth %llu)",
			 (unsigned long long)seq, n, (unsigned long long)counters(f->q).corrupt[0],
			 (unsigned long long)counters(f->q).completed[0],
			 (unsigned long long)counters(f->q).depth[0]);
	orbit__spotq_host_close(h);
}

/*
 * doc/spot-queues.md, "The host off the producers' tail line" (H2 of its
 * review): one stray word, the resv offset of a committed zero-length
 * record (its checksum covers no byte offset, so it validates anywhere).
 * A record at the index of the tail take() knows must start at that
 * tail's bytes, and only such a record extends it; this one does not, so
 * it is corrupt, advance() reads the real tail, the head takes its bytes
 * and the lane goes on (one wrong word costs that record only). On
 * sq-lines take() published (pos + 1, 500 + 0) as the known tail, the head
 * went to (2, 500) past the tail (2, 16), and every later submit was
 * -ORBIT_ECORRUPT for good.
 */
static void test_bad_resv_of_an_empty_record_costs_that_record_only(void **state)
{
	struct fx *f = *state;
	struct orbit_spotq_submit s = { .kind = ORBIT_SPOTQ_KIND_SPOT }; /* length 0 */
	orbit_spotq_host_t *h;
	uint64_t hd, tl;
	int n;

	fx_open(f, opts(8, 1024, 2, 128));
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 16, 1, NULL), 0); /* pos 0: [0, 16) */
	assert_int_equal(orbit__spotq_submit(f->p, &s, NULL), 0);	       /* pos 1: (16, 0) */
	atomic_store(&raw_slots(f, 0)[1].resv, 500ull); /* offset 500, length 0 */
	n = orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf));
	assert_true(n >= 1);
	for (int i = 0; i < n; i++)
		assert_int_equal(orbit__spotq_complete(h, 0, f->recs[i].pos), 0);
	(void)orbit__spotq_advance(h, 0);
	usleep(2000); /* past the producer's remembered head (HEAD_KEEP_NS, 1 ms) */
	hd = atomic_load(&raw_lanes(f)[0].head);
	tl = atomic_load(&raw_lanes(f)[0].tail);
	if (hd != tl)
		fail_msg("head %#llx != tail %#llx on an empty lane (head bytes %llu, tail bytes "
			 "%llu); next submit %d",
			 (unsigned long long)hd, (unsigned long long)tl,
			 (unsigned long long)(hd >> 32), (unsigned long long)(tl >> 32),
			 submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 16, 2, NULL));
	assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 16, 2, NULL), 0);
	orbit__spotq_host_close(h);
}

/*
 * doc/spot-queues.md, "The host off the producers' tail line" (M1 of its
 * review): a lifecycle-lane slot the tail passed reads FREE (bad bytes),
 * a committed lifecycle record behind it, and the app lane is busy, so
 * the host's wait returns at the ready app lane (and the Spot host waits
 * only when nothing moved). take() itself reads the tail at an
 * empty-looking cursor at most once per STALL_POLL_NS (the first look at
 * once) and resolves the slot. On sq-lines only the wait's lane_ready()
 * read the tail there, and the lifecycle record was never delivered while
 * application records kept coming.
 */
static void test_free_looking_passed_slot_found_under_a_busy_other_lane(void **state)
{
	struct fx *f = *state;
	orbit_spotq_host_t *h;
	int got = 0;

	fx_open(f, opts(8, 1024, 4, 128));
	for (int i = 0; i < 3; i++)
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_LIFECYCLE, 16, (uint8_t)i, NULL), 0);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	assert_int_equal(orbit__spotq_take(h, 1, f->recs, 1, f->buf, sizeof(f->buf)), 1);
	assert_int_equal(orbit__spotq_complete(h, 1, f->recs[0].pos), 0);
	atomic_store(&raw_slots(f, 1)[1].commit, 0); /* FREE: looks unclaimed */
	for (int round = 0; round < 20 && !got; round++) {
		int n;

		/* the host's loop while the app lane is busy: lifecycle first, then app */
		n = orbit__spotq_take(h, 1, f->recs, 8, f->buf, sizeof(f->buf));
		got += n > 0 ? n : 0;
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 16, 1, NULL), 0);
		n = orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf));
		for (int i = 0; i < n; i++)
			assert_int_equal(orbit__spotq_complete(h, 0, f->recs[i].pos), 0);
		/* a wait now and then: it returns at the ready app lane */
		assert_int_equal(submit(f->p, ORBIT_SPOTQ_KIND_SPOT, 16, 1, NULL), 0);
		(void)orbit__spotq_host_wait(h, 0, 0);
		n = orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf));
		for (int i = 0; i < n; i++)
			assert_int_equal(orbit__spotq_complete(h, 0, f->recs[i].pos), 0);
	}
	if (!got)
		fail_msg("lifecycle record behind a FREE-looking passed slot not delivered in 20 "
			 "rounds of a busy app lane");
	orbit__spotq_host_close(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_backpressure_by_count_both_lanes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_backpressure_by_bytes_both_lanes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lifecycle_lane_independent_of_full_app_lane,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_reservation_returned_only_after_completion,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_epoch_fenced_and_uncompleted_redelivered,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_mismatched_caps_refused_naming_spot_and_value,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated_foreign_corrupt_segments_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_options_size_rule, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_record_counted_skipped_reported, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_record_fields_and_producer_identity, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_checksum_covers_each_byte_of_the_record, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_checksum_blind_to_no_payload_word, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_positions_wrap_at_modulus, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_host_near_the_wrap_frees_on_a_real_tail,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_remembered_head_full_verdict_read_again, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_remembered_head_never_decides_after_a_lap,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_doorbell_rung_only_when_host_sleeps, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_polling_host_takes_a_record_without_a_ring,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_poll_counts_against_the_timeout, setup,
						teardown),
		cmocka_unit_test(test_poll_budget_adapts_to_the_last_wait),
		cmocka_unit_test_setup_teardown(test_ring_clears_the_host_bit_one_wake_per_sleep,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_sleeping_host_finds_a_claim_that_rang_nobody,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_spots_and_open_adopting_caps, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_one_bad_reservation_costs_one_record, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_ack_generation_never_blocks_takeover,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_ack_state_counted_and_freed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_head_past_cursor_resyncs, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_room_doorbell_wakes_waiting_producer_and_kick_wakes_host, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_room_wait_for_a_record_over_the_lane_cap_is_e2big, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_room_wait_polls_before_it_sleeps_and_the_host_rings_nobody, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_room_poll_budget_adapts_to_how_soon_room_came,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_claim_of_an_ended_tenure_aborted_at_once,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_bad_slot_at_tail_reset_by_host_and_empty_payload, setup, teardown),
		cmocka_unit_test_setup_teardown(test_host_writes_no_slot_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_checksum_known_answers_of_layout_4, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
		    test_committed_records_taken_and_freed_without_the_tail, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_passed_slot_that_looks_free_found_before_a_sleep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_complete_n_batch_codes_and_prefix, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_racing_advances_never_rewrite_a_reused_ack,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_footprint_64_default_spots_fit_64_mib, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_commit_word_at_the_tail_never_passes_it,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_bad_resv_of_an_empty_record_costs_that_record_only, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_free_looking_passed_slot_found_under_a_busy_other_lane, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
