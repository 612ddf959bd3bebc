// SPDX-License-Identifier: MIT
/*
 * tests/fuzz/fuzz_members.c: libFuzzer harness for the member directory's
 * readers (segment kind 230, 8 rows). One handle of this process is
 * joined (row 0: the kernel holds its OFD lock); the input is repeated
 * over the whole body (directory header and rows); then:
 *   - snapshot of every row (read-only handle): 0, -EAGAIN or
 *     -ORBIT_ECORRUPT; a copy has a state <= LEFT, a NUL-terminated
 *     printable name, a pid in 1..2^22 unless FREE, and its liveness is the
 *     kernel's, whatever the bytes: alive exactly for the joined row;
 *   - is_alive / is_alive_gen agree with the kernel; count_live_others is
 *     1 seen from outside, 0 from the member itself;
 *   - foreach hands out at most the row count, each copy valid;
 *   - pidfd_open answers an fd or a documented code;
 *   - a fresh read-only open: 0 or -ORBIT_ECORRUPT;
 *   - reclaim (the writer that reads dead rows): 0 or 1 for every other
 *     row, 0 for our own, and a reclaimed row reads FREE afterwards.
 */
#include "config.h"

#include "fuzz.h"
#include "shm/members.h"

#define ROWS 8u
#define BODY_BYTES (sizeof(struct orbit_members_shm) + ROWS * sizeof(struct orbit_member_row))

const char orbit_fuzz_name[] = "members";
const size_t orbit_fuzz_max_len = BODY_BYTES;

static char fleet[64];
static orbit_members_t *joined, *ro;
static uint8_t *body;
static uint32_t own_row;

static void cleanup(void)
{
	orbit__members_close(ro);
	orbit__members_close(joined);
	orbit__members_unlink(fleet);
}

static void setup(void)
{
	struct orbit_seg_opts rdonly = { .how = ORBIT_SEG_OPEN, .readonly = true };
	orbit_members_t *other;
	int row;

	fuzz_fleet(fleet, sizeof(fleet), "mb");
	orbit__members_unlink(fleet);
	FUZZ_SETUP(orbit__members_open(&joined, fleet, ROWS, NULL));
	FUZZ_SETUP(orbit__members_open(&ro, fleet, ROWS, &rdonly));
	atexit(cleanup);
	row = orbit__members_join(joined, "fuzz member");
	FUZZ_SETUP(row < 0);
	own_row = (uint32_t)row;
	body = (uint8_t *)orbit__members_seg(joined)->base + ORBIT_SEG_HEADER_BYTES;
	/* Seeds: a live row, a row that left, a row whose member died (lock gone, bytes LIVE). */
	FUZZ_SETUP(orbit__members_open(&other, fleet, ROWS, NULL));
	FUZZ_SETUP(orbit__members_join(other, "left") < 0);
	FUZZ_SETUP(orbit__members_leave(other));
	FUZZ_SETUP(orbit__members_join(other, "died \x01 name") < 0);
	fuzz_dump_seed("members-live", body, BODY_BYTES);
	orbit__members_close(other); /* leaves: LEFT */
	fuzz_dump_seed("members-left", body, BODY_BYTES);
}

static void check_info(const struct orbit_member_info *in, uint32_t row)
{
	FUZZ_CHECK(in->row == row, "row %u for %u", in->row, row);
	FUZZ_CHECK(in->state <= ORBIT_MEMBER_LEFT, "state %u", in->state);
	FUZZ_CHECK(fuzz_nul_terminated(in->name, sizeof(in->name)), "name not terminated");
	for (size_t i = 0; in->name[i]; i++)
		FUZZ_CHECK(in->name[i] >= 0x20 && in->name[i] < 0x7f, "name byte %#x", in->name[i]);
	FUZZ_CHECK(in->state == ORBIT_MEMBER_FREE || (in->pid >= 1 && in->pid <= (1u << 22)),
		   "pid %u", in->pid);
	FUZZ_CHECK(in->alive == (row == own_row), "row %u alive=%d: liveness from bytes", row,
		   in->alive);
}

static int on_row(void *ctx, const struct orbit_member_info *in)
{
	int *n = ctx;

	check_info(in, in->row);
	FUZZ_CHECK(in->row < ROWS && ++*n <= (int)ROWS, "foreach row %u, %d rows", in->row, *n);
	return 0;
}

static void readers(void)
{
	struct orbit_member_info in;
	int n = 0, rc;

	for (uint32_t row = 0; row < ROWS; row++) {
		rc = orbit__members_snapshot(ro, row, &in);
		FUZZ_CHECK(fuzz_rc_in(rc, 3, 0, -EAGAIN, -ORBIT_ECORRUPT), "snapshot %d", rc);
		if (rc == 0)
			check_info(&in, row);
		rc = orbit__members_is_alive(ro, row);
		FUZZ_CHECK(rc == (row == own_row), "is_alive(%u) %d", row, rc);
		rc = orbit__members_is_alive_gen(ro, row, (uint32_t)rc);
		FUZZ_CHECK(rc == 0 || (rc == 1 && row == own_row), "is_alive_gen(%u) %d", row, rc);
		rc = orbit__members_pidfd_open(ro, row, NULL);
		if (rc >= 0)
			close(rc);
		else
			FUZZ_CHECK(fuzz_rc_in(rc, 6, -ESRCH, -EINVAL, -ENOSYS, -ORBIT_ECORRUPT,
					      -EAGAIN, -EPROTO),
				   "pidfd_open %d", rc);
	}
	FUZZ_CHECK(orbit__members_snapshot(ro, ROWS, &in) == -EINVAL, "row past the end");
	rc = orbit__members_foreach(ro, on_row, &n);
	FUZZ_CHECK(rc == n, "foreach %d, %d passed", rc, n);
	FUZZ_CHECK(orbit__members_count_live_others(ro) == 1, "live others from outside");
	FUZZ_CHECK(orbit__members_count_live_others(joined) == 0, "live others of the member");
}

static void reopen(void)
{
	struct orbit_seg_opts rdonly = { .how = ORBIT_SEG_OPEN, .readonly = true };
	orbit_members_t *h = NULL;
	int rc = orbit__members_open(&h, fleet, ROWS, &rdonly);

	FUZZ_CHECK(rc == 0 || rc == -ORBIT_ECORRUPT, "read-only open %d", rc);
	orbit__members_close(h);
}

static void reclaims(void)
{
	struct orbit_member_info in;

	for (uint32_t row = 0; row < ROWS; row++) {
		int rc = orbit__members_reclaim(joined, row);

		FUZZ_CHECK(rc == 0 || (rc == 1 && row != own_row), "reclaim(%u) %d", row, rc);
		if (rc != 1)
			continue;
		rc = orbit__members_snapshot(ro, row, &in);
		FUZZ_CHECK(rc == 0 && in.state == ORBIT_MEMBER_FREE && !in.alive,
			   "reclaimed row %u reads %d, state %u", row, rc, in.state);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{

	fuzz_once(setup);
	fuzz_fill(body, BODY_BYTES, data, size, 0);
	readers();
	reopen();
	reclaims();
	return 0;
}
