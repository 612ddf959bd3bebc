// SPDX-License-Identifier: MIT
/*
 * tests/fuzz/fuzz_ring.c: libFuzzer harness for the transition ring's
 * readers (segment kind 229 layout: 4 lanes x 8 frames x 256 bytes). The
 * input is repeated over the whole body of a live ring (ring words,
 * doorbell, lane heads and owners, frames); then, with the bytes standing
 * still:
 *   - a reader opened now is at the heads: next() says -EAGAIN;
 *   - after rewind, next() reaches -EAGAIN within lanes x (frames + 2)
 *     calls, every code in {0, -EAGAIN, -ORBIT_ELAGGED, -ORBIT_ECORRUPT},
 *     every event valid (lane in range, type 1..6, lengths within the
 *     frame's payload and consistent with flags and orig_len, position
 *     below the lane's head and increasing per lane), counters = outcomes;
 *   - replay_retained hands out at most lanes x frames events, all valid;
 *   - the writer side on the same bytes: lane reclaim and claim answer in
 *     range, and a frame published on a claimed lane is the next event a
 *     reader opened just before it gets, byte for byte; the doorbell wait
 *     (timeout 0) answers 0 or -ETIMEDOUT.
 */
#include "config.h"

#include "fuzz.h"
#include "shm/members.h"
#include "shm/ring.h"

#define LANES 4u
#define FRAMES 8u
#define FRAME_BYTES 256u
#define CAP (FRAME_BYTES - ORBIT_RING_FRAME_HDR_BYTES)

const char orbit_fuzz_name[] = "ring";
const size_t orbit_fuzz_max_len = 8960; /* the body: total_of(layout) - header */

static char fleet[64];
static const struct orbit_ring_layout layout = { 229, LANES, FRAMES, FRAME_BYTES };
static orbit_ring_t *rw, *ro;
static orbit_members_t *m;
static uint8_t *body;
static size_t body_len;
static const struct orbit_ring_lane *lanes; /* inside body: heads as the input set them */
static struct orbit_ring_event ev;	    /* ~4 KiB: not on the stack */

static void cleanup(void)
{
	orbit__ring_close(ro);
	orbit__ring_close(rw);
	orbit__members_close(m);
	orbit__ring_unlink(fleet, &layout);
	orbit__members_unlink(fleet);
}

static void publish(uint32_t lane, uint32_t type, size_t ns, size_t label, size_t owner)
{
	static const char bytes[400] = "ns-label-owner bytes of a transition that may not fit";
	struct orbit_transition t = {
		.type = type,
		.writer_pid = 42,
		.fencing_token = 7 + type,
		.deadline_ns = 1000,
		.state_revision = 3,
		.ns = bytes,
		.ns_len = (uint32_t)ns,
		.label = bytes + 3,
		.label_len = (uint32_t)label,
		.owner = bytes + 9,
		.owner_len = (uint32_t)owner,
	};
	int rc = orbit__ring_publish(rw, lane, &t);

	FUZZ_CHECK(rc == 0 || rc == 1, "seed publish %d", rc);
}

static void setup(void)
{
	struct orbit_seg_opts rdonly = { .how = ORBIT_SEG_OPEN, .readonly = true };
	orbit_seg_t *seg;
	int lane;

	fuzz_fleet(fleet, sizeof(fleet), "rg");
	orbit__ring_unlink(fleet, &layout);
	orbit__members_unlink(fleet);
	FUZZ_SETUP(orbit__members_open(&m, fleet, 8, NULL));
	FUZZ_SETUP(orbit__members_join(m, "fuzz") < 0);
	FUZZ_SETUP(orbit__ring_open(&rw, fleet, &layout, NULL));
	FUZZ_SETUP(orbit__ring_open(&ro, fleet, &layout, &rdonly));
	atexit(cleanup);
	seg = orbit__ring_seg(rw);
	body = (uint8_t *)seg->base + ORBIT_SEG_HEADER_BYTES;
	body_len = seg->size - ORBIT_SEG_HEADER_BYTES;
	FUZZ_SETUP(body_len != orbit_fuzz_max_len);
	/* lanes on the first 128-byte boundary after the ring words (ring.h) */
	lanes = (const void *)((uint8_t *)seg->base +
			       ((ORBIT_SEG_HEADER_BYTES + sizeof(struct orbit_ring_shm) + 127) &
				~127ull));
	/* Seeds: frames real publishers leave, a truncated one, a lane that wrapped. */
	lane = orbit__ring_lane_claim(rw, m);
	FUZZ_SETUP(lane < 0);
	publish((uint32_t)lane, ORBIT_TRANSITION_ACQUIRE, 4, 5, 6);
	publish((uint32_t)lane, ORBIT_TRANSITION_RELEASE, 0, 1, 2);
	publish(2, ORBIT_TRANSITION_RENEW, 100, 100, 100); /* truncated: 300 > 192 */
	publish(3, ORBIT_TRANSITION_REPAIR, 0, 0, 0);
	fuzz_dump_seed("ring-frames", body, body_len);
	for (int i = 0; i < 11; i++)
		publish(1, ORBIT_TRANSITION_RECLAIM + (uint32_t)(i % 2), (size_t)i, 1,
			(size_t)i * 9);
	fuzz_dump_seed("ring-wrapped", body, body_len);
}

static uint64_t head(uint32_t lane)
{
	/* relaxed: this harness is single-threaded */
	return atomic_load_explicit(&((struct orbit_ring_lane *)lanes)[lane].head,
				    memory_order_relaxed);
}

static void check_event(const struct orbit_ring_event *e)
{
	uint32_t sum = e->ns_len + e->label_len + e->owner_len;

	FUZZ_CHECK(e->lane < LANES, "lane %u", e->lane);
	FUZZ_CHECK(e->type >= ORBIT_TRANSITION_ACQUIRE && e->type <= ORBIT_TRANSITION_REPAIR,
		   "type %u", e->type);
	FUZZ_CHECK(e->ns_len <= CAP && e->label_len <= CAP && e->owner_len <= CAP && sum <= CAP,
		   "lengths %u+%u+%u", e->ns_len, e->label_len, e->owner_len);
	FUZZ_CHECK(!(e->flags & ~ORBIT_RING_F_TRUNCATED), "flags %#x", e->flags);
	FUZZ_CHECK((e->flags & ORBIT_RING_F_TRUNCATED) ? e->orig_len > sum : e->orig_len == sum,
		   "orig_len %u for %u bytes, flags %#x", e->orig_len, sum, e->flags);
	FUZZ_CHECK(e->lane_pos < head(e->lane), "position %llu at or past head %llu",
		   (unsigned long long)e->lane_pos, (unsigned long long)head(e->lane));
}

static void drain(void)
{
	struct orbit_ring_reader_counters c;
	orbit_ring_reader_t *r;
	uint64_t last[LANES];
	bool seen[LANES] = { false };
	uint64_t ok = 0, lag = 0, bad = 0;
	uint32_t lane;
	int rc, calls;

	FUZZ_SETUP(orbit__ring_reader_open(&r, ro));
	rc = orbit__ring_reader_next(r, &ev, &lane);
	FUZZ_CHECK(rc == -EAGAIN, "a reader at the heads read %d", rc);
	orbit__ring_reader_rewind(r);
	for (calls = 0; calls <= (int)(LANES * (FRAMES + 2) + 2); calls++) {
		rc = orbit__ring_reader_next(r, &ev, &lane);
		FUZZ_CHECK(fuzz_rc_in(rc, 4, 0, -EAGAIN, -ORBIT_ELAGGED, -ORBIT_ECORRUPT),
			   "next %d", rc);
		if (rc == -EAGAIN)
			break;
		FUZZ_CHECK(lane <= LANES, "lane_out %u", lane);
		ok += rc == 0;
		lag += rc == -ORBIT_ELAGGED;
		bad += rc == -ORBIT_ECORRUPT;
		if (rc)
			continue;
		check_event(&ev);
		FUZZ_CHECK(ev.lane == lane, "event lane %u, lane_out %u", ev.lane, lane);
		FUZZ_CHECK(!seen[lane] || ev.lane_pos > last[lane], "lane %u went back", lane);
		seen[lane] = true;
		last[lane] = ev.lane_pos;
	}
	FUZZ_CHECK(rc == -EAGAIN, "no -EAGAIN after %d calls on bytes that stand still", calls);
	orbit__ring_reader_counters(r, &c);
	FUZZ_CHECK(c.read == ok && c.lagged == lag && c.corrupt == bad,
		   "counters %llu/%llu/%llu, outcomes %llu/%llu/%llu", (unsigned long long)c.read,
		   (unsigned long long)c.lagged, (unsigned long long)c.corrupt,
		   (unsigned long long)ok, (unsigned long long)lag, (unsigned long long)bad);
	orbit__ring_reader_close(r);
}

static int on_replay(void *ctx, const struct orbit_ring_event *e)
{
	check_event(e);
	++*(int *)ctx;
	return 0;
}

static void writer_side(const uint8_t *data, size_t size)
{
	orbit_ring_reader_t *r;
	uint32_t lane_out;
	int rc, lane;

	rc = orbit__ring_lanes_reclaim_dead(rw, m);
	FUZZ_CHECK(rc >= 0 && rc <= (int)LANES, "reclaim_dead %d", rc);
	lane = orbit__ring_lane_claim(rw, m);
	FUZZ_CHECK((lane >= 0 && lane < (int)LANES) || lane == -ENOSPC, "lane_claim %d", lane);
	if (lane < 0)
		return;
	FUZZ_SETUP(orbit__ring_reader_open(&r, rw));
	publish((uint32_t)lane, ORBIT_TRANSITION_ACQUIRE, size % 7, 1 + size % 5, 3);
	rc = orbit__ring_reader_next(r, &ev, &lane_out);
	FUZZ_CHECK(rc == 0 && lane_out == (uint32_t)lane && ev.type == ORBIT_TRANSITION_ACQUIRE &&
		       ev.fencing_token == 8 && ev.ns_len == size % 7 &&
		       ev.label_len == 1 + size % 5 && ev.owner_len == 3,
		   "own frame read back as %d (lane %u)", rc, lane_out);
	FUZZ_CHECK(orbit__ring_reader_wait(r, orbit__ring_reader_arm(r) + 1, 0) == 0,
		   "wait changed seq");
	rc = orbit__ring_reader_wait(r, orbit__ring_reader_arm(r), 0);
	FUZZ_CHECK(rc == -ETIMEDOUT || rc == 0, "wait %d", rc);
	orbit__ring_reader_close(r);
	FUZZ_CHECK(orbit__ring_lane_release(rw, m, (uint32_t)lane) == 0, "lane release");
	(void)data;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct orbit_ring_counters rc_;
	int n = 0, rc;

	fuzz_once(setup);
	fuzz_fill(body, body_len, data, size, 0);
	drain();
	rc = orbit__ring_replay_retained(ro, on_replay, &n);
	FUZZ_CHECK(rc == n && n <= (int)(LANES * FRAMES), "replay %d, %d passed", rc, n);
	orbit__ring_counters(ro, &rc_);
	writer_side(data, size);
	return 0;
}
