// SPDX-License-Identifier: MIT
/*
 * tests/fuzz/fuzz_fleet.c: libFuzzer harness for the read-only fleet view
 * that orbitctl uses (orbit/fleet.h, agent/fleet.c). A fleet of this
 * process (a small lock layout: 8 slots, ring of 16 lanes x 2 frames x
 * 128 bytes; 64 member rows; stats) is written by real writers, then the
 * input is repeated over the body of all four segments at once; then,
 * through one fleet handle opened read-only before the scribble:
 *   - orbit_fleet_member for every row: 0, -ENOENT, -EAGAIN or
 *     -ORBIT_ECORRUPT; a row read has a NUL-terminated printable name, a
 *     state <= 3, and is alive exactly when it is our joined row;
 *   - orbit_fleet_stats_read for every row: 0, -ENOENT or -EAGAIN; counts
 *     as the name tables say;
 *   - the lock table through orbit_fleet_lock: foreach lengths valid;
 *   - a transition reader: -EAGAIN at the heads; after rewind -EAGAIN
 *     within lanes x (frames + 2) calls, events within their bounds;
 *     replay_retained hands out at most lanes x frames;
 *   - a fresh orbit_fleet_open read-only: 0 or -ORBIT_ECORRUPT.
 */
#include "config.h"

#include <orbit/orbit.h>

#include "agent/fleet_internal.h"
#include "fuzz.h"
#include "shm/lock_internal.h"
#include "shm/members.h"
#include "shm/ring.h"
#include "shm/stats.h"

#define LANES ORBIT_RING_DEFAULT_LANES
#define FRAMES 2u
#define CAP (128u - ORBIT_RING_FRAME_HDR_BYTES)

const char orbit_fuzz_name[] = "fleet";
const size_t orbit_fuzz_max_len = 8320; /* the member directory's body (64 rows) */

static char fleet[64];
static struct orbit_lock_layout layout;
static orbit_members_t *member;
static orbit_stats_t stats;
static orbit_ring_t *ring;
static orbit_lock_t *lock;
static orbit_fleet_t *view;
static int own_row;
static struct {
	uint8_t *p;
	size_t len;
} bodies[4];
static struct orbit_transition_event ev; /* ~4 KiB: not on the stack */
static struct orbit_fleet_stats fst;

static struct orbit_fleet_options view_opts(void)
{
	struct orbit_fleet_options o = { .size = sizeof(o), .fleet = fleet, .layout = &layout };
	return o;
}

static void cleanup(void)
{
	orbit_fleet_close(view);
	orbit_lock_close(lock);
	orbit__ring_close(ring);
	orbit__stats_close(&stats);
	orbit__members_close(member);
	/* each name directly (libFuzzer runs once left them behind with orbit_fleet_unlink) */
	orbit_lock_unlink(&(struct orbit_lock_options){
	    .size = sizeof(struct orbit_lock_options), .fleet = fleet, .layout = &layout });
	orbit__seg_unlink(fleet, "ring-229");
	orbit__seg_unlink(fleet, ORBIT_STATS_SEG_NAME);
	orbit__members_unlink(fleet);
}

static void body_of(int i, const orbit_seg_t *seg)
{
	bodies[i].p = (uint8_t *)seg->base + ORBIT_SEG_HEADER_BYTES;
	bodies[i].len = seg->size - ORBIT_SEG_HEADER_BYTES;
}

static void setup(void)
{
	struct orbit_lock_options lo;
	struct orbit_ring_layout rl;
	struct orbit_ring_sink sink = { 0 };
	struct orbit_stats_snapshot snap = { 0 };
	struct orbit_fleet_options vo;
	int lane;

	fuzz_fleet(fleet, sizeof(fleet), "fl");
	layout = fuzz_lock_layout();
	FUZZ_SETUP(layout.ring_frames != FRAMES);
	lo = fuzz_lock_opts(fleet, &layout, false);
	FUZZ_SETUP(orbit__members_open(&member, fleet, 0, NULL));
	own_row = orbit__members_join(member, "fuzz fleet");
	FUZZ_SETUP(own_row < 0);
	FUZZ_SETUP(orbit__stats_open(&stats, fleet, NULL));
	FUZZ_SETUP(orbit__stats_claim(&stats, (uint32_t)own_row, (uint64_t)getpid(), 1));
	snap.counters[ORBIT_STAT_LOCK_ACQUIRED] = 3;
	FUZZ_SETUP(orbit__stats_publish(&stats, (uint32_t)own_row, &snap));
	orbit__fleet_ring_layout(&rl, &layout);
	FUZZ_SETUP(orbit__ring_open(&ring, fleet, &rl, NULL));
	FUZZ_SETUP(orbit_lock_open(&lo, &lock));
	atexit(cleanup);
	/* real frames for real transitions: the lock's sink publishes on our lane */
	lane = orbit__ring_lane_claim(ring, member);
	FUZZ_SETUP(lane < 0);
	sink.ring = ring;
	sink.lane = (uint32_t)lane;
	for (int i = 0; i < 3; i++) {
		char label[8];
		orbit_lock_key_t k = { "fz", 2, label, 0 };
		orbit_lock_owner_t ow = { "owner", 5 };

		k.label_len = (size_t)snprintf(label, sizeof(label), "k%d", i);
		FUZZ_SETUP(orbit_lock_try_acquire(lock, &k, &ow, 3600000000000ull, NULL, NULL));
		struct orbit_transition t = { .type = ORBIT_TRANSITION_ACQUIRE,
					      .ns = "fz",
					      .ns_len = 2,
					      .label = label,
					      .label_len = (uint32_t)k.label_len,
					      .owner = "owner",
					      .owner_len = 5,
					      .state_revision = (uint64_t)i };
		orbit__ring_sink_skip(&sink, &t, 0);
	}
	vo = view_opts();
	FUZZ_SETUP(orbit_fleet_open(&vo, &view));
	body_of(0, orbit__members_seg(member));
	body_of(1, &stats.seg);
	body_of(2, orbit__ring_seg(ring));
	body_of(3, orbit__lock_seg(lock));
	FUZZ_SETUP(bodies[0].len != orbit_fuzz_max_len);
	fuzz_dump_seed("fleet-members", bodies[0].p, bodies[0].len);
}

static void members(void)
{
	struct orbit_fleet_member fm;
	uint32_t rows = orbit_fleet_rows(view);

	FUZZ_CHECK(rows == ORBIT_MEMBERS_DEFAULT_ROWS, "rows %u", rows);
	for (uint32_t row = 0; row < rows; row++) {
		int rc = orbit_fleet_member(view, row, &fm);

		FUZZ_CHECK(fuzz_rc_in(rc, 4, 0, -ENOENT, -EAGAIN, -ORBIT_ECORRUPT), "member %d",
			   rc);
		if (rc)
			continue;
		FUZZ_CHECK(fm.row == row && fm.state <= ORBIT_MEMBER_LEFT, "row %u state %u",
			   fm.row, (unsigned)fm.state);
		FUZZ_CHECK(fuzz_nul_terminated(fm.name, sizeof(fm.name)), "name not terminated");
		for (size_t i = 0; fm.name[i]; i++)
			FUZZ_CHECK(fm.name[i] >= 0x20 && fm.name[i] < 0x7f, "name byte %#x",
				   fm.name[i]);
		FUZZ_CHECK(fm.alive == ((int)row == own_row), "row %u alive=%d", row, fm.alive);
	}
	FUZZ_CHECK(orbit_fleet_member(view, rows, &fm) == -EINVAL, "row past the end");
}

static void stats_rows(void)
{
	uint32_t rows = orbit_fleet_stats_rows(view);

	FUZZ_CHECK(rows == ORBIT_STATS_ROWS, "stats rows %u", rows);
	for (uint32_t row = 0; row < rows; row++) {
		int rc = orbit_fleet_stats_read(view, row, &fst);

		FUZZ_CHECK(fuzz_rc_in(rc, 3, 0, -ENOENT, -EAGAIN), "stats_read %d", rc);
		/* the row's pid is a number (stats.h): any value, cut to 32 bits */
		if (rc == 0)
			FUZZ_CHECK(fst.row == row && fst.ncounters == orbit_stats_counter_count() &&
				       fst.nhists == orbit_stats_hist_count(),
				   "stats row %u", row);
	}
}

static int on_entry(const struct orbit_lock_entry *e, void *ctx)
{
	FUZZ_CHECK(e->label_len && e->owner_len &&
		       (unsigned)e->ns_len + e->label_len + e->owner_len <= ORBIT_LOCK_BYTES_MAX &&
		       e->slot_idx < layout.slots,
		   "entry lengths %u+%u+%u slot %u", e->ns_len, e->label_len, e->owner_len,
		   e->slot_idx);
	++*(int *)ctx;
	return 0;
}

static void check_event(const struct orbit_transition_event *e)
{
	uint32_t sum = e->ns_len + e->label_len + e->owner_len;

	FUZZ_CHECK(e->lane < LANES && e->type >= ORBIT_TRANSITION_ACQUIRE &&
		       e->type <= ORBIT_TRANSITION_REPAIR,
		   "lane %u type %u", e->lane, (unsigned)e->type);
	FUZZ_CHECK(sum <= CAP && sum <= ORBIT_TRANSITION_BYTES_MAX, "lengths %u", sum);
	FUZZ_CHECK(!(e->flags & ~(uint32_t)ORBIT_TRANSITION_F_TRUNCATED), "flags %#x", e->flags);
}

static int on_replay(const struct orbit_transition_event *e, void *ctx)
{
	check_event(e);
	++*(int *)ctx;
	return 0;
}

static void transitions(void)
{
	orbit_transition_reader_t *r;
	uint64_t read, lagged, corrupt, ok = 0;
	int rc = 0, calls, n = 0;

	FUZZ_SETUP(orbit_fleet_reader_open(view, &r));
	rc = orbit_transition_reader_next(r, &ev);
	FUZZ_CHECK(rc == -EAGAIN, "reader at the heads %d", rc);
	orbit_transition_reader_rewind(r);
	for (calls = 0; calls <= (int)(LANES * (FRAMES + 2) + 2); calls++) {
		rc = orbit_transition_reader_next(r, &ev);
		FUZZ_CHECK(fuzz_rc_in(rc, 4, 0, -EAGAIN, -ORBIT_ELAGGED, -ORBIT_ECORRUPT),
			   "next %d", rc);
		if (rc == -EAGAIN)
			break;
		if (rc == 0) {
			check_event(&ev);
			ok++;
		}
	}
	FUZZ_CHECK(rc == -EAGAIN, "no -EAGAIN after %d calls", calls);
	orbit_transition_reader_counters(r, &read, &lagged, &corrupt);
	FUZZ_CHECK(read == ok, "read counter %llu, %llu events", (unsigned long long)read,
		   (unsigned long long)ok);
	orbit_transition_reader_close(r);
	rc = orbit_fleet_replay_retained(view, on_replay, &n);
	FUZZ_CHECK(rc == n && n <= (int)(LANES * FRAMES), "replay %d, %d passed", rc, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct orbit_fleet_options vo;
	orbit_fleet_t *f = NULL;
	int n = 0, rc;

	fuzz_once(setup);
	for (int i = 0; i < 4; i++)
		fuzz_fill(bodies[i].p, bodies[i].len, data, size, 0);
	members();
	stats_rows();
	rc = orbit_lock_foreach(orbit_fleet_lock(view), on_entry, &n);
	FUZZ_CHECK(rc == n || rc == -EAGAIN, "foreach %d, %d passed", rc, n);
	transitions();
	vo = view_opts();
	rc = orbit_fleet_open(&vo, &f);
	FUZZ_CHECK(rc == 0 || rc == -ORBIT_ECORRUPT, "fleet open %d", rc);
	orbit_fleet_close(f);
	return 0;
}
