// SPDX-License-Identifier: MIT
/*
 * tests/fuzz/fuzz_stats.c: libFuzzer harness for the stats segment's
 * readers (segment kind 231, 64 rows of 4 KiB, then 64 x 16 Spot slots of
 * 1 KiB). The input is repeated over the whole body (counts, every row,
 * every Spot slot); then:
 *   - orbit__stats_read of every row (read-only handle): 0, -ENOENT or
 *     -EAGAIN only (no syscall, bounded retries); a copy with 0 has an even
 *     seq and a non-zero pid;
 *   - orbit__stats_spot_read of every Spot slot: 0, -ENOENT, -EAGAIN or
 *     -ORBIT_ECORRUPT only; a copy with 0 has a known role, a NUL-terminated
 *     valid Spot name and no counter past its role's table;
 *   - a fresh read-only open: 0 or -ORBIT_ECORRUPT (the counts);
 *   - the row's writer re-claiming and publishing a scribbled row makes it
 *     readable again at once with exactly the published values, and its
 *     Spot slots free, then one of them readable with what it published.
 */
#include "config.h"

#include "fuzz.h"
#include "shm/stats.h"

static const struct orbit_seg_opts stats_ro = { .how = ORBIT_SEG_OPEN, .readonly = true };

const char orbit_fuzz_name[] = "stats";
/* a seed's length: the counts page and two rows (the input repeats over 64) */
const size_t orbit_fuzz_max_len = offsetof(struct orbit_stats_body, row) +
				  2 * ORBIT_STATS_ROW_BYTES;

static char fleet[64];
static orbit_stats_t rw, ro;
static struct orbit_stats_snapshot snap, pub;
static struct orbit_stats_spot_snapshot spot, spot_pub;

static void cleanup(void)
{
	orbit__stats_close(&ro);
	orbit__stats_close(&rw);
	orbit__seg_unlink(fleet, ORBIT_STATS_SEG_NAME);
}

static void setup(void)
{
	fuzz_fleet(fleet, sizeof(fleet), "st");
	orbit__seg_unlink(fleet, ORBIT_STATS_SEG_NAME);
	FUZZ_SETUP(orbit__stats_open(&rw, fleet, NULL));
	FUZZ_SETUP(orbit__stats_open(&ro, fleet, &stats_ro));
	atexit(cleanup);
	/* Seed: row 0 claimed, row 1 claimed and published. */
	FUZZ_SETUP(orbit__stats_claim(&rw, 0, 1234, 99));
	FUZZ_SETUP(orbit__stats_claim(&rw, 1, 4321, 98));
	for (unsigned i = 0; i < ORBIT_STAT__COUNT; i++)
		pub.counters[i] = i * 1000003ull;
	for (unsigned v = 1; v < 5000; v += 7)
		orbit__stats_hist_add(&pub.hists[ORBIT_HIST_ACQUIRE_NS], v);
	FUZZ_SETUP(orbit__stats_publish(&rw, 1, &pub));
	spot_pub.role = ORBIT_STATS_SPOT_HOST;
	spot_pub.pid = 4321;
	spot_pub.start_ticks = 98;
	memcpy(spot_pub.name, "bank.shard-3", sizeof("bank.shard-3"));
	for (unsigned i = 0; i < ORBIT_SPOT_HOST__COUNT; i++)
		spot_pub.counters[i] = i * 7919ull + 1;
	for (unsigned v = 1000; v < 5000000; v = v * 3 + 1)
		orbit__stats_hist_add(&spot_pub.hist, v);
	FUZZ_SETUP(orbit__stats_spot_publish(&rw, 1, 0, &spot_pub));
	fuzz_dump_seed("stats-rows", rw.body, orbit_fuzz_max_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	orbit_stats_t h;
	uint32_t mine;
	int rc;

	fuzz_once(setup);
	fuzz_fill(rw.body, sizeof(*rw.body), data, size, 0);
	for (uint32_t row = 0; row < ORBIT_STATS_ROWS; row++) {
		rc = orbit__stats_read(&ro, row, &snap);
		FUZZ_CHECK(fuzz_rc_in(rc, 3, 0, -ENOENT, -EAGAIN), "read(%u) %d", row, rc);
		if (rc == 0)
			FUZZ_CHECK(!(snap.seq & 1) && snap.pid != 0, "row %u: seq %llu pid %llu",
				   row, (unsigned long long)snap.seq, (unsigned long long)snap.pid);
	}
	FUZZ_CHECK(orbit__stats_read(&ro, ORBIT_STATS_ROWS, &snap) == -EINVAL, "row past the end");
	for (uint32_t row = 0; row < ORBIT_STATS_ROWS; row++) {
		for (uint32_t k = 0; k < ORBIT_STATS_SPOTS_PER_ROW; k++) {
			unsigned n = 0;

			rc = orbit__stats_spot_read(&ro, row, k, &spot);
			FUZZ_CHECK(fuzz_rc_in(rc, 4, 0, -ENOENT, -EAGAIN, -ORBIT_ECORRUPT),
				   "spot_read(%u, %u) %d", row, k, rc);
			if (rc != 0)
				continue;
			FUZZ_CHECK(orbit__stats_spot_table(spot.role, &n) &&
				       memchr(spot.name, 0, sizeof(spot.name)) && spot.name[0] &&
				       strlen(spot.name) <= 40 && !(spot.seq & 1),
				   "spot (%u, %u): role %d", row, k, (int)spot.role);
			for (unsigned i = n; i < ORBIT_STATS_SPOT_COUNTERS_MAX; i++)
				FUZZ_CHECK(spot.counters[i] == 0, "spot (%u, %u) counter %u", row,
					   k, i);
		}
	}
	FUZZ_CHECK(orbit__stats_spot_read(&ro, 0, ORBIT_STATS_SPOTS_PER_ROW, &spot) == -EINVAL,
		   "slot past the end");
	rc = orbit__stats_open(&h, fleet, &stats_ro);
	FUZZ_CHECK(rc == 0 || rc == -ORBIT_ECORRUPT, "read-only open %d", rc);
	if (rc == 0)
		orbit__stats_close(&h);
	/* the writer of one row takes it back from whatever the bytes say */
	mine = size ? data[size - 1] % ORBIT_STATS_ROWS : 0;
	FUZZ_CHECK(orbit__stats_claim(&rw, mine, 777, 5) == 0, "claim");
	FUZZ_CHECK(orbit__stats_publish(&rw, mine, &pub) == 0, "publish");
	rc = orbit__stats_read(&ro, mine, &snap);
	FUZZ_CHECK(rc == 0 && snap.pid == 777 && snap.start_ticks == 5 &&
		       !memcmp(snap.counters, pub.counters, sizeof(pub.counters)) &&
		       !memcmp(snap.hists, pub.hists, sizeof(pub.hists)),
		   "row %u after claim and publish: %d", mine, rc);
	for (uint32_t k = 0; k < ORBIT_STATS_SPOTS_PER_ROW; k++)
		FUZZ_CHECK(orbit__stats_spot_read(&ro, mine, k, &spot) == -ENOENT,
			   "row %u slot %u after claim", mine, k);
	FUZZ_CHECK(orbit__stats_spot_publish(&rw, mine, 3, &spot_pub) == 0, "spot publish");
	rc = orbit__stats_spot_read(&ro, mine, 3, &spot);
	FUZZ_CHECK(rc == 0 && spot.role == ORBIT_STATS_SPOT_HOST &&
		       !strcmp(spot.name, "bank.shard-3") &&
		       !memcmp(spot.counters, spot_pub.counters, sizeof(spot.counters)) &&
		       !memcmp(&spot.hist, &spot_pub.hist, sizeof(spot.hist)),
		   "row %u slot 3 after publish: %d", mine, rc);
	return 0;
}
