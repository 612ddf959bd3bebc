// SPDX-License-Identifier: MIT
/*
 * tests/fuzz/fuzz_spotq.c: libFuzzer harness for the Spot queue's readers
 * and writers (segment kind 232; lanes of 8 items x 512 bytes and 4 items x
 * 128 bytes, 8 producer rows). The input is repeated over the whole body of
 * a live queue (config words, host line, doorbells, lane words, producer
 * rows, slots, ack words, payload bytes); then, with the bytes standing still:
 *   - the checker answers 0 or -ORBIT_ECORRUPT, the counters 0 with depth
 *     and bytes within their moduli;
 *   - a takeover with a higher epoch than any before answers 0 or
 *     -ORBIT_EFENCED (the bytes may hold a huge epoch or a newer gen);
 *   - take on each lane, at most items + 2 calls, answers a count, 0,
 *     -ORBIT_EFENCED, -ORBIT_ECORRUPT or -ENOBUFS; every record is valid
 *     (lane, kind of that lane, payload inside the buffer and within the
 *     byte cap, timer name terminated, producer row in range), and each
 *     complete answers 0, -EINVAL, -ORBIT_EFENCED or -ORBIT_ECORRUPT;
 *   - after the wait, one more take on each lane (it consumes what the wait
 *     marked suspect), its records valid as above;
 *   - the head never passes the tail: a lane whose depth and bytes were
 *     within the caps before the host ran has no head ahead of its tail;
 *   - a submit answers 0, -EAGAIN, -ECANCELED or -ORBIT_ECORRUPT and
 *     returns (no spin on bytes that lie).
 * A hang fails through replay.c's alarm.
 */
#include "config.h"

#include "fuzz.h"
#include "shm/members.h"
#include "shm/spot_queue.h"

#define SPOT "fuzz.spot"

const char orbit_fuzz_name[] = "spotq";
const size_t orbit_fuzz_max_len = 4096; /* the body: footprint - header (checked in setup) */

static char fleet[64];
static struct orbit_spotq_options o;
static orbit_members_t *m;
static orbit_spotq_t *q;
static orbit_spotq_producer_t *p;
static uint8_t *body;
static size_t body_len;
static uint64_t next_epoch = 1;
static struct orbit_spotq_rec recs[16];
static uint8_t buf[2048];

static void cleanup(void)
{
	orbit__spotq_producer_close(p);
	orbit__spotq_close(q);
	orbit__spotq_unlink(fleet, SPOT);
	orbit__members_close(m);
	orbit__members_unlink(fleet);
}

static void put(uint32_t kind, uint32_t len, uint8_t fill)
{
	uint8_t b[512];
	struct orbit_spotq_submit s = {
		.kind = kind, .actor_id = 9, .timer_name = "tick", .payload = b, .len = len
	};

	memset(b, fill, sizeof(b));
	FUZZ_SETUP(orbit__spotq_submit(p, &s, NULL));
}

static void setup(void)
{
	orbit_spotq_host_t *h;
	orbit_seg_t *seg;

	fuzz_fleet(fleet, sizeof(fleet), "sq");
	orbit__spotq_unlink(fleet, SPOT);
	orbit__members_unlink(fleet);
	orbit__spotq_options_init(&o);
	o.how = ORBIT_SEG_OPEN_OR_CREATE;
	o.app_items = 8;
	o.app_bytes = 512;
	o.lifecycle_items = 4;
	o.lifecycle_bytes = 128;
	o.producer_rows = 8;
	o.unblock_ms = 1;
	FUZZ_SETUP(orbit__members_open(&m, fleet, 8, NULL));
	FUZZ_SETUP(orbit__members_join(m, "fuzz") < 0);
	FUZZ_SETUP(orbit__spotq_open(&q, fleet, SPOT, &o));
	FUZZ_SETUP(orbit__spotq_producer_open(&p, q, m));
	atexit(cleanup);
	seg = orbit__spotq_seg(q);
	body = (uint8_t *)seg->base + ORBIT_SEG_HEADER_BYTES;
	body_len = seg->size - ORBIT_SEG_HEADER_BYTES;
	FUZZ_SETUP(body_len != orbit_fuzz_max_len);
	/* Seeds: records real producers leave, taken, completed, wrapped, redelivered. */
	put(ORBIT_SPOTQ_KIND_SPOT, 40, 1);
	put(ORBIT_SPOTQ_KIND_ACTOR, 200, 2);
	put(ORBIT_SPOTQ_KIND_TIMER, 0, 3);
	put(ORBIT_SPOTQ_KIND_LIFECYCLE, 100, 4);
	fuzz_dump_seed("spotq-committed", body, body_len);
	FUZZ_SETUP(orbit__spotq_host_takeover(&h, q, m, next_epoch++));
	FUZZ_SETUP(orbit__spotq_take(h, 0, recs, 2, buf, sizeof(buf)) != 2);
	FUZZ_SETUP(orbit__spotq_complete(h, 0, recs[1].pos));
	fuzz_dump_seed("spotq-taken", body, body_len);
	FUZZ_SETUP(orbit__spotq_complete(h, 0, recs[0].pos));
	for (int i = 0; i < 6; i++)
		put(ORBIT_SPOTQ_KIND_SPOT, 70, (uint8_t)(10 + i));
	orbit__spotq_host_close(h);
	FUZZ_SETUP(orbit__spotq_host_takeover(&h, q, m, next_epoch++));
	FUZZ_SETUP(orbit__spotq_take(h, 0, recs, 3, buf, sizeof(buf)) != 3);
	orbit__spotq_host_close(h);
	FUZZ_SETUP(orbit__spotq_host_takeover(&h, q, m, next_epoch++)); /* 3 to redeliver */
	fuzz_dump_seed("spotq-wrapped-redeliver", body, body_len);
	orbit__spotq_host_close(h);
}

static void check_rec(const struct orbit_spotq_rec *r, uint32_t lane)
{
	const uint8_t *pl = r->payload;

	FUZZ_CHECK(r->lane == lane, "lane %u on lane %u", r->lane, lane);
	FUZZ_CHECK(lane == ORBIT_SPOTQ_LIFECYCLE ? r->kind == ORBIT_SPOTQ_KIND_LIFECYCLE
						 : (r->kind >= 1 && r->kind <= 3),
		   "kind %u on lane %u", r->kind, lane);
	FUZZ_CHECK(r->payload_len <= (lane ? 128u : 512u), "payload %u", r->payload_len);
	FUZZ_CHECK(pl >= buf && pl + r->payload_len <= buf + sizeof(buf),
		   "payload outside the buffer");
	FUZZ_CHECK(fuzz_nul_terminated(r->timer_name, sizeof(r->timer_name)), "timer name");
	FUZZ_CHECK(r->kind != ORBIT_SPOTQ_KIND_TIMER || r->timer_name[0], "empty timer name");
	FUZZ_CHECK(r->member_row < 8, "member row %u", r->member_row);
}

static void host_side(void)
{
	orbit_spotq_host_t *h;
	char why[256];
	int rc;

	rc = orbit__spotq_check(q, why, sizeof(why));
	FUZZ_CHECK(rc == 0 || rc == -ORBIT_ECORRUPT, "check %d", rc);
	/* an epoch above anything a seed holds; the input may still hold a bigger one */
	rc = orbit__spotq_host_takeover(&h, q, m, (next_epoch++) + (1ull << 20));
	FUZZ_CHECK(rc == 0 || rc == -ORBIT_EFENCED, "takeover %d", rc);
	if (rc)
		return;
	for (uint32_t lane = 0; lane < ORBIT_SPOTQ_LANES; lane++) {
		for (int calls = 0; calls < (lane ? 4 : 8) + 2; calls++) {
			rc = orbit__spotq_take(h, lane, recs, 16, buf, sizeof(buf));
			FUZZ_CHECK(rc >= 0 ||
				       fuzz_rc_in(rc, 3, -ORBIT_EFENCED, -ORBIT_ECORRUPT, -ENOBUFS),
				   "take %d", rc);
			FUZZ_CHECK(rc <= 16, "take %d records", rc);
			if (rc <= 0)
				break;
			for (int i = 0; i < rc; i++) {
				check_rec(&recs[i], lane);
				int c = orbit__spotq_complete(h, lane, recs[i].pos);
				FUZZ_CHECK(
				    fuzz_rc_in(c, 4, 0, -EINVAL, -ORBIT_EFENCED, -ORBIT_ECORRUPT),
				    "complete %d", c);
			}
		}
		rc = orbit__spotq_advance(h, lane);
		FUZZ_CHECK(rc >= 0 || rc == -ORBIT_EFENCED || rc == -ORBIT_ECORRUPT, "advance %d",
			   rc);
	}
	rc = orbit__spotq_host_wait(h, 0, 0);
	FUZZ_CHECK(fuzz_rc_in(rc, 4, 0, -ETIMEDOUT, -ORBIT_EFENCED, -EINTR), "host_wait %d", rc);
	/* the take after the wait: it consumes what the wait marked suspect */
	for (uint32_t lane = 0; lane < ORBIT_SPOTQ_LANES; lane++) {
		rc = orbit__spotq_take(h, lane, recs, 16, buf, sizeof(buf));
		FUZZ_CHECK(rc >= 0 || fuzz_rc_in(rc, 3, -ORBIT_EFENCED, -ORBIT_ECORRUPT, -ENOBUFS),
			   "take after the wait %d", rc);
		for (int i = 0; i < rc; i++)
			check_rec(&recs[i], lane);
	}
	orbit__spotq_host_close(h);
}

/*
 * The head never passes the tail: a lane whose head and tail were inside
 * each other's window before the host ran (depth and bytes at most the
 * caps) has no head ahead of its tail after it (a depth or byte count of
 * more than half the modulus is a head past the tail).
 */
static void check_head_behind_tail(const struct orbit_spotq_counters *before)
{
	struct orbit_spotq_counters c;

	FUZZ_CHECK(orbit__spotq_counters(q, &c) == 0, "counters");
	for (uint32_t l = 0; l < ORBIT_SPOTQ_LANES; l++) {
		if (before->depth[l] > before->item_cap[l] ||
		    before->bytes[l] > before->byte_cap[l])
			continue;
		FUZZ_CHECK(c.depth[l] < (1u << 31) && c.bytes[l] < (1u << 31),
			   "lane %u: head past the tail (depth %u, bytes %u; before %u, %u)", l,
			   c.depth[l], c.bytes[l], before->depth[l], before->bytes[l]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct orbit_spotq_counters c;
	uint8_t b[64] = { 0 };
	int rc;

	fuzz_once(setup);
	fuzz_fill(body, body_len, data, size, 0);
	rc = orbit__spotq_counters(q, &c);
	FUZZ_CHECK(rc == 0 && c.item_cap[0] == 8 && c.byte_cap[1] == 128, "counters %d", rc);
	host_side();
	check_head_behind_tail(&c);
	for (uint32_t kind = ORBIT_SPOTQ_KIND_SPOT; kind <= ORBIT_SPOTQ_KIND_LIFECYCLE; kind++) {
		struct orbit_spotq_submit s = {
			.kind = kind, .timer_name = "t", .payload = b, .len = (uint32_t)(size % 64)
		};
		rc = orbit__spotq_submit(p, &s, NULL);
		FUZZ_CHECK(fuzz_rc_in(rc, 4, 0, -EAGAIN, -ECANCELED, -ORBIT_ECORRUPT), "submit %d",
			   rc);
	}
	return 0;
}
