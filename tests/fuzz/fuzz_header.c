// SPDX-License-Identifier: MIT
/*
 * tests/fuzz/fuzz_header.c: libFuzzer harness for the checks at open
 * (shm/segment.c validate_header() and wait_ready(), then each kind's own
 * body check). Four real segments of this process's private fleet (lock
 * table, ring, member directory, stats; small layouts) are kept closed;
 * per input, byte 0 picks one, byte 1 its file size (as created, 0, 64,
 * 127, 128, one byte short, one page long, twice as long), byte 2 its
 * mode, and the rest is repeated over its 128-byte segment header. Then
 * the kind's read-only open and its read-write open (which may repair a
 * segment whose creator "died initialising") must answer 0 or one of the
 * documented open codes, never hang (the opener waits only while a
 * creator holds the flock, and nobody does), and a handle that opens maps
 * exactly the size its layout needs and answers a read. The segment is
 * restored (bytes, size, mode) after every input.
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <orbit/orbit.h>

#include "fuzz.h"
#include "shm/lock_internal.h"
#include "shm/members.h"
#include "shm/ring.h"
#include "shm/stats.h"

const char orbit_fuzz_name[] = "header";
const size_t orbit_fuzz_max_len = 3 + ORBIT_SEG_HEADER_BYTES;

enum { K_LOCK, K_RING, K_MEMBERS, K_STATS, K_N };

static char fleet[64];
static struct orbit_lock_layout lock_layout;
static const struct orbit_ring_layout ring_layout = { 229, 2, 4, 128 };
static const char *const seg_names[K_N] = { "lock-228", "ring-229", "members", "stats" };
static struct {
	int fd;
	uint8_t *pristine;
	size_t size;
} segs[K_N];

static struct orbit_lock_options lock_opts(bool readonly)
{
	return fuzz_lock_opts(fleet, &lock_layout, readonly);
}

static void cleanup(void)
{
	for (int k = 0; k < K_N; k++) {
		close(segs[k].fd);
		orbit__seg_unlink(fleet, seg_names[k]);
	}
}

static void setup(void)
{
	struct orbit_lock_options lo;
	orbit_members_t *m;
	orbit_ring_t *ring;
	orbit_stats_t st;
	orbit_lock_t *l;

	fuzz_fleet(fleet, sizeof(fleet), "hd");
	lock_layout = fuzz_lock_layout();
	for (int k = 0; k < K_N; k++)
		orbit__seg_unlink(fleet, seg_names[k]);
	lo = lock_opts(false);
	FUZZ_SETUP(orbit_lock_open(&lo, &l));
	orbit_lock_close(l);
	FUZZ_SETUP(orbit__ring_open(&ring, fleet, &ring_layout, NULL));
	orbit__ring_close(ring);
	FUZZ_SETUP(orbit__members_open(&m, fleet, 8, NULL));
	orbit__members_close(m);
	FUZZ_SETUP(orbit__stats_open(&st, fleet, NULL));
	orbit__stats_close(&st);
	atexit(cleanup);
	for (int k = 0; k < K_N; k++) {
		char name[ORBIT_SEG_NAME_MAX];
		struct stat sb;
		uint8_t seed[3 + ORBIT_SEG_HEADER_BYTES] = { (uint8_t)k, 0, 0 };
		char file[32];

		FUZZ_SETUP(orbit__seg_name(name, sizeof(name), fleet, seg_names[k]));
		segs[k].fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
		FUZZ_SETUP(segs[k].fd < 0 || fstat(segs[k].fd, &sb) != 0);
		segs[k].size = (size_t)sb.st_size;
		segs[k].pristine = malloc(segs[k].size);
		FUZZ_SETUP(!segs[k].pristine || pread(segs[k].fd, segs[k].pristine, segs[k].size,
						      0) != (ssize_t)segs[k].size);
		memcpy(seed + 3, segs[k].pristine, ORBIT_SEG_HEADER_BYTES);
		snprintf(file, sizeof(file), "header-%s", seg_names[k]);
		fuzz_dump_seed(file, seed, sizeof(seed));
	}
}

static bool open_code_ok(int rc)
{
	return fuzz_rc_in(rc, 10, 0, -ORBIT_EMAGIC, -ORBIT_EVERSION, -ORBIT_EKIND,
			  -ORBIT_EFINGERPRINT, -ORBIT_ESIZE, -ORBIT_ECORRUPT, -ORBIT_EINITTIMEOUT,
			  -ORBIT_EMODE, -ORBIT_ETRUNCATED);
}

/* Open @k read-only or read-write; on success check the mapping and read once. */
static void open_kind(int k, bool readonly)
{
	struct orbit_seg_opts so = { .how = readonly ? ORBIT_SEG_OPEN : ORBIT_SEG_OPEN_OR_CREATE,
				     .readonly = readonly,
				     .init_timeout_ms = 20 };
	int rc = -EINVAL;

	switch (k) {
	case K_LOCK: {
		struct orbit_lock_options lo = lock_opts(readonly);
		orbit_lock_key_t key = { "", 0, "a", 1 };
		struct orbit_lock_entry e;
		orbit_lock_t *l;

		rc = orbit_lock_open(&lo, &l);
		if (rc)
			break;
		FUZZ_CHECK(orbit__lock_seg(l)->size == segs[k].size, "lock mapping size");
		rc = orbit_lock_lookup(l, &key, &e);
		FUZZ_CHECK(rc == -ENOENT, "lookup in a fresh table %d", rc);
		rc = 0;
		orbit_lock_close(l);
		break;
	}
	case K_RING: {
		orbit_ring_reader_t *r;
		orbit_ring_t *ring;

		rc = orbit__ring_open(&ring, fleet, &ring_layout, &so);
		if (rc)
			break;
		FUZZ_CHECK(orbit__ring_seg(ring)->size == segs[k].size, "ring mapping size");
		FUZZ_SETUP(orbit__ring_reader_open(&r, ring));
		struct orbit_ring_event *ev = malloc(sizeof(*ev));
		FUZZ_SETUP(!ev);
		orbit__ring_reader_rewind(r);
		rc = orbit__ring_reader_next(r, ev, NULL);
		FUZZ_CHECK(rc == -EAGAIN || rc == -ORBIT_ELAGGED, "next on an empty ring %d", rc);
		rc = 0;
		free(ev);
		orbit__ring_reader_close(r);
		orbit__ring_close(ring);
		break;
	}
	case K_MEMBERS: {
		struct orbit_member_info in;
		orbit_members_t *m;

		rc = orbit__members_open(&m, fleet, 8, &so);
		if (rc)
			break;
		FUZZ_CHECK(orbit__members_seg(m)->size == segs[k].size, "members mapping size");
		rc = orbit__members_snapshot(m, 7, &in);
		FUZZ_CHECK(rc == 0 && in.state == ORBIT_MEMBER_FREE, "fresh row %d", rc);
		orbit__members_close(m);
		break;
	}
	default: {
		struct orbit_stats_snapshot snap;
		orbit_stats_t st;

		rc = orbit__stats_open(&st, fleet, &so);
		if (rc)
			break;
		FUZZ_CHECK(st.seg.size == segs[k].size, "stats mapping size");
		rc = orbit__stats_read(&st, 63, &snap);
		FUZZ_CHECK(rc == -ENOENT, "fresh stats row %d", rc);
		rc = 0;
		orbit__stats_close(&st);
		break;
	}
	}
	FUZZ_CHECK(open_code_ok(rc), "%s open of %s: %d", readonly ? "read-only" : "read-write",
		   seg_names[k], rc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const mode_t modes[] = { 0600, 0640, 0660, 0604, 0400, 0700, 0666, 0200 };
	uint8_t hdr[ORBIT_SEG_HEADER_BYTES];
	int k = size > 0 ? data[0] % K_N : 0;
	unsigned size_sel = size > 1 ? data[1] % 8 : 0;
	mode_t mode = modes[size > 2 ? data[2] % 8 : 0];
	off_t sizes[8];
	int fd;

	fuzz_once(setup);
	fd = segs[k].fd;
	sizes[0] = (off_t)segs[k].size;
	sizes[1] = 0;
	sizes[2] = 64;
	sizes[3] = 127;
	sizes[4] = 128;
	sizes[5] = (off_t)segs[k].size - 1;
	sizes[6] = (off_t)segs[k].size + 4096;
	sizes[7] = 2 * (off_t)segs[k].size;
	fuzz_fill(hdr, sizeof(hdr), size > 3 ? data + 3 : NULL, size > 3 ? size - 3 : 0, 0);
	FUZZ_SETUP(pwrite(fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr));
	FUZZ_SETUP(ftruncate(fd, sizes[size_sel])); /* after: a short file keeps a header prefix */
	FUZZ_SETUP(fchmod(fd, mode));
	open_kind(k, true);
	open_kind(k, false);
	/* restore: the next input starts from the segment as created */
	FUZZ_SETUP(ftruncate(fd, (off_t)segs[k].size));
	FUZZ_SETUP(pwrite(fd, segs[k].pristine, segs[k].size, 0) != (ssize_t)segs[k].size);
	FUZZ_SETUP(fchmod(fd, 0600));
	return 0;
}
