// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_segment.c: the segment layer (DESIGN.md "The fleet and its
 * segments"): creation, every documented open error, the creator killed
 * while initialising, permissions, symlinks, random bytes, bounds checks.
 */
#include "config.h" /* _GNU_SOURCE: unshare(2) for orbit_test_shm.h */

#include "orbit_test.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <orbit/error.h>
#include "orbit_test_shm.h"
#include "shm/crashpoint.h"
#include "shm/segment.h"

#define BODY_BYTES 4096u

static int init_pattern(void *body, uint64_t n, void *arg)
{
	memset(body, 0x5a, (size_t)n);
	return 0;
}

static struct orbit_seg_spec spec_of(uint32_t kind, uint32_t version, uint64_t fp)
{
	struct orbit_seg_spec s = {
		.kind = kind,
		.layout_version = version,
		.total_bytes = ORBIT_SEG_HEADER_BYTES + BODY_BYTES,
		.fingerprint = fp,
		.init = init_pattern,
	};
	return s;
}

static const uint64_t fp_words[] = { 1, 2, 3 };

static struct orbit_seg_spec default_spec(void)
{
	return spec_of(ORBIT_SEG_KIND_TEST, 1, orbit__seg_fingerprint(fp_words, 3));
}

static char fleet[64];

static int setup(void **state)
{
	orbit_test_fleet(fleet, sizeof(fleet), "seg");
	return 0;
}

static int teardown(void **state)
{
	orbit__seg_unlink(fleet, "s");
	return 0;
}

static int create_default(orbit_seg_t *seg)
{
	struct orbit_seg_spec sp = default_spec();
	struct orbit_seg_opts o = { .how = ORBIT_SEG_CREATE };
	return orbit__seg_open(seg, fleet, "s", &sp, &o);
}

static int open_with(const struct orbit_seg_spec *sp, orbit_seg_t *seg)
{
	struct orbit_seg_opts o = { .how = ORBIT_SEG_OPEN, .init_timeout_ms = 200 };
	return orbit__seg_open(seg, fleet, "s", sp, &o);
}

static void test_create_then_open_sees_body(void **state)
{
	orbit_seg_t a, b;
	struct orbit_seg_spec sp = default_spec();

	assert_int_equal(create_default(&a), 0);
	assert_true(a.created);
	assert_int_equal(open_with(&sp, &b), 0);
	assert_false(b.created);
	assert_int_equal(b.size, ORBIT_SEG_HEADER_BYTES + BODY_BYTES);
	assert_int_equal(((unsigned char *)orbit__seg_body(&b))[17], 0x5a);
	assert_int_equal(orbit__seg_header(&b)->kind, ORBIT_SEG_KIND_TEST);
	assert_true(orbit__seg_header(&b)->epoch_ns > 0);
	/* both mappings are the same memory */
	((unsigned char *)orbit__seg_body(&a))[5] = 7;
	assert_int_equal(((unsigned char *)orbit__seg_body(&b))[5], 7);
	orbit__seg_close(&a);
	orbit__seg_close(&b);
}

static void test_create_twice_is_eexist_and_missing_is_enoent(void **state)
{
	orbit_seg_t a, b;
	struct orbit_seg_spec sp = default_spec();

	assert_int_equal(open_with(&sp, &a), -ENOENT);
	assert_int_equal(create_default(&a), 0);
	assert_int_equal(create_default(&b), -EEXIST);
	orbit__seg_close(&a);
}

static void test_open_or_create_races_to_one_segment(void **state)
{
	struct orbit_seg_spec sp = default_spec();
	struct orbit_seg_opts o = { .how = ORBIT_SEG_OPEN_OR_CREATE };
	pid_t kids[4];

	for (int i = 0; i < 4; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			orbit_seg_t s;
			int r = orbit__seg_open(&s, fleet, "s", &sp, &o);
			if (r == 0)
				atomic_fetch_add((_Atomic uint32_t *)orbit__seg_body(&s), 1);
			_exit(r == 0 ? (s.created ? 10 : 0) : 1);
		}
	}
	int created = 0;
	for (int i = 0; i < 4; i++) {
		int st = orbit_test_wait(kids[i], 10000);
		assert_true(st >= 0 && WIFEXITED(st));
		assert_true(WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 10);
		created += WEXITSTATUS(st) == 10;
	}
	assert_int_equal(created, 1);
	orbit_seg_t s;
	assert_int_equal(open_with(&sp, &s), 0);
	/* every child's increment landed in the one segment: 0x5a5a5a5a + 4 */
	assert_int_equal(*(uint32_t *)orbit__seg_body(&s), 0x5a5a5a5au + 4);
	orbit__seg_close(&s);
}

/* Each wrong header field gets its own documented error, in order. */
static void test_open_errors_name_the_mismatch(void **state)
{
	orbit_seg_t a, b;
	struct orbit_seg_spec sp;

	assert_int_equal(create_default(&a), 0);
	sp = spec_of(ORBIT_SEG_KIND_TEST, 2, default_spec().fingerprint);
	assert_int_equal(open_with(&sp, &b), -ORBIT_EVERSION);
	sp = spec_of(ORBIT_SEG_KIND_STATS, 1, default_spec().fingerprint);
	assert_int_equal(open_with(&sp, &b), -ORBIT_EKIND);
	sp = spec_of(ORBIT_SEG_KIND_TEST, 1, 12345);
	assert_int_equal(open_with(&sp, &b), -ORBIT_EFINGERPRINT);
	sp = default_spec();
	sp.total_bytes += 4096;
	assert_int_equal(open_with(&sp, &b), -ORBIT_ESIZE);
	sp = default_spec();
	orbit__seg_header(&a)->magic ^= 1;
	assert_int_equal(open_with(&sp, &b), -ORBIT_EMAGIC);
	orbit__seg_header(&a)->magic ^= 1;
	orbit__seg_header(&a)->total_bytes = 1ull << 40;
	assert_int_equal(open_with(&sp, &b), -ORBIT_ESIZE);
	orbit__seg_close(&a);
}

/*
 * Issue 9.8: a file shorter than its header says is its own error,
 * -ORBIT_ETRUNCATED (it was "still initialising past the bound" below a
 * header, ESIZE above), for every opener, and is never re-initialised;
 * only an empty file with no creator at work (a creator dead before sizing
 * it looks the same) is re-created by an opener that may create.
 */
static void test_truncated_file_is_etruncated(void **state)
{
	struct orbit_seg_opts roo = { .how = ORBIT_SEG_OPEN,
				      .readonly = true,
				      .init_timeout_ms = 200 };
	struct orbit_seg_opts rwo = { .how = ORBIT_SEG_OPEN, .init_timeout_ms = 200 };
	struct orbit_seg_opts cro = { .how = ORBIT_SEG_OPEN_OR_CREATE, .init_timeout_ms = 200 };
	const off_t sizes[] = { ORBIT_SEG_HEADER_BYTES + 100, ORBIT_SEG_HEADER_BYTES, 60, 3 };
	struct orbit_seg_spec sp = default_spec();
	orbit_seg_t a, b;
	struct stat st;
	char path[128];

	snprintf(path, sizeof(path), "/dev/shm/orbit.%s.s: ", fleet); /* the message names it */
	assert_int_equal(create_default(&a), 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		assert_int_equal(ftruncate(a.fd, sizes[i]), 0);
		assert_int_equal(orbit__seg_open(&b, fleet, "s", &sp, &roo), -ORBIT_ETRUNCATED);
		assert_non_null(strstr(orbit_segment_last_error(), path));
		assert_int_equal(orbit__seg_open(&b, fleet, "s", &sp, &rwo), -ORBIT_ETRUNCATED);
		assert_int_equal(orbit__seg_open(&b, fleet, "s", &sp, &cro), -ORBIT_ETRUNCATED);
		assert_int_equal(fstat(a.fd, &st), 0);
		assert_int_equal(st.st_size, sizes[i]); /* never re-initialised */
	}
	/* Empty, no creator at work: only an opener that may create re-creates it. */
	assert_int_equal(ftruncate(a.fd, 0), 0);
	assert_int_equal(orbit__seg_open(&b, fleet, "s", &sp, &roo), -ORBIT_ETRUNCATED);
	assert_non_null(strstr(orbit_segment_last_error(), "0 bytes"));
	assert_int_equal(orbit__seg_open(&b, fleet, "s", &sp, &rwo), -ORBIT_ETRUNCATED);
	assert_int_equal(orbit__seg_open(&b, fleet, "s", &sp, &cro), 0);
	assert_true(b.created);
	assert_int_equal(((unsigned char *)orbit__seg_body(&b))[0], 0x5a);
	orbit__seg_close(&b);
	orbit__seg_close(&a); /* a's mapping outlived its pages: never touched */
}

/*
 * An empty segment file of a kind whose users hold byte-range locks
 * (attach_locks: a member's row lock on a member directory emptied under
 * its live members) with one held is not re-initialised by an opener that
 * may create: -EBUSY, a message that names it, still 0 bytes. With the
 * lock gone the same open re-creates it. A kind without attach_locks is
 * re-created whatever a stranger holds. Before, the repair re-initialised
 * the file under the live holder.
 */
static void test_emptied_segment_with_a_lock_holder_is_not_reinitialised(void **state)
{
	struct orbit_seg_opts cro = { .how = ORBIT_SEG_OPEN_OR_CREATE, .init_timeout_ms = 200 };
	struct orbit_seg_spec sp = default_spec();
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 4096, .l_len = 64 };
	struct orbit_seg_spec plain;
	orbit_seg_t a, b;
	struct stat st;
	char path[128];
	int holder;

	sp.attach_locks = true;
	plain = sp;
	plain.attach_locks = false;
	orbit_test_shm_path(path, sizeof(path), fleet, "s");
	assert_int_equal(create_default(&a), 0);
	holder = open(path, O_RDWR | O_CLOEXEC);
	assert_true(holder >= 0);
	assert_int_equal(fcntl(holder, F_OFD_SETLK, &fl), 0); /* the member's row */
	assert_int_equal(ftruncate(a.fd, 0), 0);
	assert_int_equal(orbit__seg_open(&b, fleet, "s", &sp, &cro), -EBUSY);
	assert_non_null(strstr(orbit_segment_last_error(), path));
	assert_non_null(strstr(orbit_segment_last_error(), "holds a lock"));
	assert_int_equal(fstat(a.fd, &st), 0);
	assert_int_equal(st.st_size, 0); /* never re-initialised */
	assert_int_equal(orbit__seg_open(&b, fleet, "s", &plain, &cro), 0);
	assert_true(b.created); /* a stranger's lock keeps no other kind empty */
	orbit__seg_close(&b);
	assert_int_equal(ftruncate(a.fd, 0), 0);
	close(holder);
	assert_int_equal(orbit__seg_open(&b, fleet, "s", &sp, &cro), 0);
	assert_true(b.created);
	orbit__seg_close(&b);
	orbit__seg_close(&a);
}

/*
 * Issue 9.3: a FIFO, directory, socket or device node under a segment name
 * (anyone can create one in /dev/shm) is refused with -ORBIT_ENOTREG and a
 * message naming the segment, by every kind of opener, at once: a FIFO
 * used to block every read-only opener forever in open(2). Each open runs
 * in a child under a hard timeout, so a hang fails the test.
 */
struct hostile_open {
	struct orbit_seg_opts o;
	int want;
};

static int open_hostile(void *arg)
{
	const struct hostile_open *h = arg;
	struct orbit_seg_spec sp = default_spec();
	char path[128];
	orbit_seg_t b;
	int r;

	signal(SIGBUS, SIG_DFL); /* a crash must end this child, not reach cmocka's handler */
	signal(SIGSEGV, SIG_DFL);
	r = orbit__seg_open(&b, fleet, "s", &sp, &h->o);

	if (r != h->want) {
		fprintf(stderr, "open: %d (%s), want %d\n", r, orbit_strerror(r), h->want);
		return 1;
	}
	orbit_test_shm_path(path, sizeof(path), fleet, "s");
	if (h->want == -ORBIT_ENOTREG && !strstr(orbit_segment_last_error(), path)) {
		fprintf(stderr, "message \"%s\" does not name %s\n", orbit_segment_last_error(),
			path);
		return 2;
	}
	return 0;
}

static void test_non_regular_file_under_the_name_is_enotreg(void **state)
{
	const struct hostile_open opens[] = {
		{ { .how = ORBIT_SEG_OPEN, .readonly = true }, -ORBIT_ENOTREG },
		{ { .how = ORBIT_SEG_OPEN }, -ORBIT_ENOTREG },
		{ { .how = ORBIT_SEG_OPEN_OR_CREATE }, -ORBIT_ENOTREG },
		{ { .how = ORBIT_SEG_CREATE }, -EEXIST },
	};
	char path[128];
	int made = 0;

	orbit_test_shm_path(path, sizeof(path), fleet, "s");
	for (int k = 0; k < ORBIT_TEST_HOSTILE_COUNT; k++) {
		int r = orbit_test_hostile_make(k, path);

		if (r == 1) {
			print_message("skipping the %s: mknod needs CAP_MKNOD\n",
				      orbit_test_hostile_name(k));
			continue;
		}
		assert_int_equal(r, 0);
		made++;
		for (size_t i = 0; i < sizeof(opens) / sizeof(opens[0]); i++) {
			int rc = orbit_test_fork_run(open_hostile, (void *)&opens[i], 5000);

			if (rc != 0)
				fail_msg("%s, opener %zu: %s", orbit_test_hostile_name(k), i,
					 rc < 0 ? "hung or died" : "wrong answer");
		}
		orbit_test_hostile_remove(path);
	}
	assert_true(made >= 4); /* FIFO, directory, socket, symlink: devices need root */
}

static int reopen_is_enotreg(void *arg)
{
	return orbit__seg_reopen(arg, true) == -ORBIT_ENOTREG ? 0 : 1;
}

/* orbit__seg_reopen() (members' row locks, a forked child's lock mapping)
 * reaches the object the handle maps, or says why not. */
static void test_reopen_reaches_the_same_object_or_refuses(void **state)
{
	orbit_seg_t a, b;
	char path[128];
	int fd;

	assert_int_equal(create_default(&a), 0);
	fd = orbit__seg_reopen(&a, false);
	assert_true(fd >= 0);
	close(fd);
	orbit_test_shm_path(path, sizeof(path), fleet, "s");
	/* a name now holding another object */
	assert_int_equal(orbit__seg_unlink(fleet, "s"), 0);
	assert_int_equal(orbit__seg_reopen(&a, true), -ENOENT);
	assert_int_equal(create_default(&b), 0);
	assert_int_equal(orbit__seg_reopen(&a, true), -ESTALE);
	orbit__seg_close(&b);
	orbit__seg_unlink(fleet, "s");
	/* a FIFO: refused, not waited on (in a child under a timeout: a hang fails) */
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(orbit_test_fork_run(reopen_is_enotreg, &a, 3000), 0);
	unlink(path);
	/* the same object, shorter than mapped */
	assert_int_equal(create_default(&b), 0);
	assert_int_equal(ftruncate(b.fd, ORBIT_SEG_HEADER_BYTES), 0);
	assert_int_equal(orbit__seg_reopen(&b, true), -ORBIT_ETRUNCATED);
	orbit__seg_close(&b);
	orbit__seg_close(&a);
}

/*
 * Issue 9.4: too little /dev/shm is -ENOSPC naming the segment and its
 * size, with nothing left under the name and no SIGBUS (the segment used to
 * be ftruncated, then memset: "Bus error"). In a private 4 MiB tmpfs on
 * /dev/shm (root: a mount namespace of a forked child).
 */
#define BIG_BYTES (16ull << 20)

static int enospc_child(void *arg)
{
	bool no_fallocate = arg != NULL;
	struct orbit_seg_spec sp = default_spec();
	struct orbit_seg_opts o = { .how = ORBIT_SEG_OPEN_OR_CREATE, .init_timeout_ms = 200 };
	const char *why;
	char path[128], want[64];
	struct stat st;
	orbit_seg_t a;
	int r;

	signal(SIGBUS, SIG_DFL); /* a SIGBUS must kill this child, not reach cmocka's handler */
	why = orbit_test_private_shm("size=4m");
	if (why) {
		printf("skip: %s\n", why);
		return 77;
	}
	if (no_fallocate && orbit_test_no_fallocate() < 0)
		return 10;
	orbit_test_shm_path(path, sizeof(path), fleet, "s");
	sp.total_bytes = BIG_BYTES;
	r = orbit__seg_open(&a, fleet, "s", &sp, &o);
	if (r != -ENOSPC) {
		fprintf(stderr, "create: %d (%s)\n", r, orbit_strerror(r));
		return 11;
	}
	snprintf(want, sizeof(want), "%llu bytes", BIG_BYTES);
	if (!strstr(orbit_segment_last_error(), path) ||
	    !strstr(orbit_segment_last_error(), want)) {
		fprintf(stderr, "message: %s\n", orbit_segment_last_error());
		return 12;
	}
	if (lstat(path, &st) == 0 || errno != ENOENT)
		return 13; /* a partial segment was left behind */
	/* the repair of a creator dead before sizing it: the same, and the
	 * empty file it left is removed too */
	int fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0600);
	if (fd < 0)
		return 14;
	close(fd);
	r = orbit__seg_open(&a, fleet, "s", &sp, &o);
	if (r != -ENOSPC || lstat(path, &st) == 0)
		return 15;
	/* what fits is created, on either path, and its pages are really there */
	sp.total_bytes = 1u << 20;
	if (orbit__seg_open(&a, fleet, "s", &sp, &o) != 0)
		return 16;
	if (fstat(a.fd, &st) < 0 || (uint64_t)st.st_blocks * 512 < sp.total_bytes)
		return 17;
	orbit__seg_close(&a);
	orbit__seg_unlink(fleet, "s");
	return 0;
}

static void run_enospc(bool no_fallocate)
{
	int rc;

	if (geteuid() != 0) {
		print_message("skip: a private tmpfs on /dev/shm needs root\n");
		skip();
	}
	rc = orbit_test_fork_run(enospc_child, no_fallocate ? (void *)1 : NULL, 20000);
	if (rc == 77)
		skip();
	assert_int_equal(rc, 0);
}

static void test_shm_shortage_is_enospc_and_leaves_nothing(void **state)
{
	run_enospc(false);
}

/* The same through the fallback for filesystems without fallocate(2). */
static void test_shm_shortage_without_fallocate_is_enospc(void **state)
{
	run_enospc(true);
}

static void test_foreign_owner_is_eowner(void **state)
{
	orbit_seg_t a, b;
	struct orbit_seg_spec sp = default_spec();

	if (geteuid() != 0)
		skip();
	assert_int_equal(create_default(&a), 0);
	assert_int_equal(fchown(a.fd, 4242, (gid_t)-1), 0);
	assert_int_equal(open_with(&sp, &b), -ORBIT_EOWNER);
	orbit__seg_close(&a);
}

static void test_mode_wider_than_configured_is_emode(void **state)
{
	orbit_seg_t a, b;
	struct orbit_seg_spec sp = default_spec();
	struct stat st;

	assert_int_equal(create_default(&a), 0);
	assert_int_equal(fstat(a.fd, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(fchmod(a.fd, 0660), 0);
	assert_int_equal(open_with(&sp, &b), -ORBIT_EMODE);
	/* the group option accepts it */
	struct orbit_seg_opts o = { .how = ORBIT_SEG_OPEN, .mode = 0660 };
	assert_int_equal(orbit__seg_open(&b, fleet, "s", &sp, &o), 0);
	orbit__seg_close(&b);
	/* world bits are never configurable */
	o.mode = 0666;
	assert_int_equal(orbit__seg_open(&b, fleet, "s", &sp, &o), -EINVAL);
	orbit__seg_close(&a);
}

static void test_group_mode_creates_0660(void **state)
{
	orbit_seg_t a;
	struct orbit_seg_spec sp = default_spec();
	struct orbit_seg_opts o = { .how = ORBIT_SEG_CREATE, .mode = 0660 };
	struct stat st;
	mode_t old = umask(077);

	assert_int_equal(orbit__seg_open(&a, fleet, "s", &sp, &o), 0);
	umask(old);
	assert_int_equal(fstat(a.fd, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0660);
	orbit__seg_close(&a);
}

static void test_symlink_is_refused(void **state)
{
	char path[128], target[128];
	orbit_seg_t b;
	struct orbit_seg_spec sp = default_spec();

	snprintf(path, sizeof(path), "/dev/shm/orbit.%s.s", fleet);
	snprintf(target, sizeof(target), "/dev/shm/orbit.%s.target", fleet);
	int fd = open(target, O_CREAT | O_RDWR, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlink(target, path), 0);
	/* One code for every non-regular name, and a message that says it */
	assert_int_equal(open_with(&sp, &b), -ORBIT_ENOTREG);
	assert_non_null(strstr(orbit_segment_last_error(), "a symlink, not a segment"));
	unlink(path);
	unlink(target);
}

static void test_bad_names_are_einval(void **state)
{
	char buf[ORBIT_SEG_NAME_MAX];
	orbit_seg_t s;
	struct orbit_seg_spec sp = default_spec();

	assert_int_equal(orbit__seg_name(buf, sizeof(buf), "ok", "locks"), 0);
	assert_string_equal(buf, "/orbit.ok.locks");
	assert_int_equal(orbit__seg_name(buf, sizeof(buf), "", "x"), -EINVAL);
	assert_int_equal(orbit__seg_name(buf, sizeof(buf), "a/b", "x"), -EINVAL);
	assert_int_equal(orbit__seg_name(buf, sizeof(buf), "a.b", "x"), -EINVAL);
	assert_int_equal(orbit__seg_name(buf, sizeof(buf), "x", "../y"), -EINVAL);
	assert_int_equal(
	    orbit__seg_name(buf, sizeof(buf), "0123456789012345678901234567890123456789X", "x"),
	    -EINVAL);
	assert_int_equal(orbit__seg_open(&s, "bad/fleet", "s", &sp, NULL), -EINVAL);
	struct orbit_seg_opts o = { .how = ORBIT_SEG_CREATE, .readonly = true };
	assert_int_equal(orbit__seg_open(&s, fleet, "s", &sp, &o), -EINVAL);
}

/* A creator that stops mid-initialisation holding the flock: openers wait
 * the bound and get EINITTIMEOUT; once it is killed, an opener that may
 * create repairs the segment, and a plain opener would not. */
static int stop_in_init(void *body, uint64_t n, void *arg)
{
	memset(body, 0x11, 64);
	raise(SIGSTOP);
	return 0;
}

static void test_creator_killed_while_initialising(void **state)
{
	struct orbit_seg_spec sp = default_spec();
	orbit_seg_t b;
	pid_t pid = fork();

	if (pid == 0) {
		struct orbit_seg_spec s2 = sp;
		struct orbit_seg_opts o = { .how = ORBIT_SEG_CREATE };
		orbit_seg_t a;
		s2.init = stop_in_init;
		_exit(orbit__seg_open(&a, fleet, "s", &s2, &o) == 0 ? 0 : 1);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
	assert_true(WIFSTOPPED(st));
	/* alive and holding the flock: bounded wait, then EINITTIMEOUT */
	uint64_t t0 = orbit_test_now_ns();
	assert_int_equal(open_with(&sp, &b), -ORBIT_EINITTIMEOUT);
	assert_true(orbit_test_now_ns() - t0 >= 150 * 1000000ull);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	/* dead: a plain open still refuses (it may not create) */
	assert_int_equal(open_with(&sp, &b), -ORBIT_EINITTIMEOUT);
	struct orbit_seg_opts o = { .how = ORBIT_SEG_OPEN_OR_CREATE };
	assert_int_equal(orbit__seg_open(&b, fleet, "s", &sp, &o), 0);
	assert_true(b.created);
	assert_int_equal(((unsigned char *)orbit__seg_body(&b))[0], 0x5a);
	assert_int_equal(atomic_load(&orbit__seg_header(&b)->init_state), ORBIT_SEG_READY);
	orbit__seg_close(&b);
}

/* Random bytes in the header never crash an opener: a documented error. */
static void test_random_header_bytes_never_crash(void **state)
{
	orbit_seg_t a, b;
	struct orbit_seg_spec sp = default_spec();
	unsigned seed = 12345;
	int rounds = orbit_test_long() ? 20000 : 2000;

	assert_int_equal(create_default(&a), 0);
	for (int i = 0; i < rounds; i++) {
		unsigned char *h = a.base;
		int n = 1 + rand_r(&seed) % 8;
		for (int k = 0; k < n; k++)
			h[rand_r(&seed) % ORBIT_SEG_HEADER_BYTES] = (unsigned char)rand_r(&seed);
		if (i % 7 == 0)
			for (unsigned k = 0; k < ORBIT_SEG_HEADER_BYTES; k++)
				h[k] = (unsigned char)rand_r(&seed);
		int r = open_with(&sp, &b);
		if (r == 0) {
			orbit__seg_close(&b);
		} else {
			assert_true(r == -ORBIT_EMAGIC || r == -ORBIT_EVERSION ||
				    r == -ORBIT_EKIND || r == -ORBIT_ESIZE ||
				    r == -ORBIT_EFINGERPRINT || r == -ORBIT_ECORRUPT ||
				    r == -ORBIT_EINITTIMEOUT);
		}
		/* restore a valid header for the next round half of the time */
		if (i % 2) {
			orbit__seg_close(&a);
			orbit__seg_unlink(fleet, "s");
			assert_int_equal(create_default(&a), 0);
		}
	}
	orbit__seg_close(&a);
}

static void test_bounds_checked_accessor(void **state)
{
	orbit_seg_t a;

	assert_int_equal(create_default(&a), 0);
	assert_non_null(orbit__seg_at(&a, 0, a.size));
	assert_non_null(orbit__seg_at(&a, a.size - 1, 1));
	assert_non_null(orbit__seg_at(&a, a.size, 0));
	assert_null(orbit__seg_at(&a, a.size, 1));
	assert_null(orbit__seg_at(&a, 1, a.size));
	assert_null(orbit__seg_at(&a, UINT64_MAX, 2));
	assert_null(orbit__seg_at(&a, 8, UINT64_MAX - 4));
	assert_null(orbit__seg_at(NULL, 0, 1));
	orbit__seg_close(&a);
	assert_null(orbit__seg_at(&a, 0, 1));
	orbit__seg_close(&a); /* twice is safe */
}

static void test_readonly_open_maps_read_only(void **state)
{
	orbit_seg_t a, b;
	struct orbit_seg_spec sp = default_spec();
	struct orbit_seg_opts o = { .how = ORBIT_SEG_OPEN, .readonly = true };

	assert_int_equal(create_default(&a), 0);
	assert_int_equal(orbit__seg_open(&b, fleet, "s", &sp, &o), 0);
	assert_true(b.readonly);
	assert_int_equal(((unsigned char *)orbit__seg_body(&b))[3], 0x5a);
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL); /* cmocka's handler would catch it */
		((volatile unsigned char *)orbit__seg_body(&b))[3] = 1; /* must fault */
		_exit(0);
	}
	int st = orbit_test_wait(pid, 5000);
	assert_true(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	orbit__seg_close(&a);
	orbit__seg_close(&b);
}

static void test_flock_is_per_open_and_released_by_death(void **state)
{
	orbit_seg_t a, b;
	struct orbit_seg_spec sp = default_spec();

	assert_int_equal(create_default(&a), 0);
	assert_int_equal(open_with(&sp, &b), 0);
	assert_int_equal(orbit__seg_lock(&a), 0);
	assert_int_equal(orbit__seg_trylock(&b), -EWOULDBLOCK);
	assert_int_equal(orbit__seg_unlock(&a), 0);
	pid_t pid = fork();
	if (pid == 0) {
		orbit_seg_t c;
		if (open_with(&sp, &c) != 0 || orbit__seg_lock(&c) != 0)
			_exit(1);
		raise(SIGSTOP);
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
	assert_int_equal(orbit__seg_trylock(&b), -EWOULDBLOCK);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	assert_int_equal(orbit__seg_trylock(&b), 0); /* the kernel released it */
	orbit__seg_unlock(&b);
	orbit__seg_close(&a);
	orbit__seg_close(&b);
}

static void test_fingerprint_depends_on_every_word(void **state)
{
	uint64_t w[4] = { 228, 229, 256, 960 };
	uint64_t f = orbit__seg_fingerprint(w, 4);

	for (int i = 0; i < 4; i++) {
		w[i]++;
		assert_true(orbit__seg_fingerprint(w, 4) != f);
		w[i]--;
	}
	assert_true(orbit__seg_fingerprint(w, 3) != f);
	assert_true(orbit__seg_fingerprint(w, 4) == f);
}

/*
 * A child that arms crash point @label to stop it, runs @body and exits
 * with its result; returned once it stopped there. resume_ok() lets it
 * go on and expects exit status 0.
 */
static pid_t stopped_child(const char *label, int (*body)(void))
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		orbit__crashpoint_arm(label, 1, ORBIT_CRASH_STOP);
		_exit(body());
	}
	assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
	assert_true(WIFSTOPPED(st));
	return pid;
}

static void resume_ok(pid_t pid)
{
	int st;

	kill(pid, SIGCONT);
	st = orbit_test_wait(pid, 10000);
	assert_true(st >= 0 && WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* Creates the segment "s"; with @live, then writes live data into it. */
static int create_s(bool live)
{
	struct orbit_seg_spec sp = default_spec();
	struct orbit_seg_opts o = { .how = ORBIT_SEG_CREATE };
	orbit_seg_t a;

	if (orbit__seg_open(&a, fleet, "s", &sp, &o) != 0)
		return 1;
	if (live)
		((unsigned char *)orbit__seg_body(&a))[100] = 0x77;
	return 0;
}

static int create_s_live(void)
{
	return create_s(true);
}

static int create_s_plain(void)
{
	return create_s(false);
}

/* Opens "s" as an opener that may create: 0 when it found the creator's
 * segment (not re-initialised) with byte 100 at @want. */
static int open_s_expect(unsigned char want)
{
	struct orbit_seg_spec sp = default_spec();
	struct orbit_seg_opts o = { .how = ORBIT_SEG_OPEN_OR_CREATE };
	orbit_seg_t b;
	int rc = orbit__seg_open(&b, fleet, "s", &sp, &o);

	if (rc != 0) {
		fprintf(stderr, "opener: %d %s\n", rc, orbit_segment_last_error());
		return 2;
	}
	if (b.created)
		return 3; /* it re-initialised the creator's segment */
	return ((unsigned char *)orbit__seg_body(&b))[100] == want ? 0 : 4;
}

static int open_s_live(void)
{
	return open_s_expect(0x77);
}

static int open_s_plain(void)
{
	return open_s_expect(0x5a);
}

/*
 * An opener that saw the file still empty while the creator held the flock,
 * and got the flock only after the creator finished, must open the live
 * segment, never re-initialise it (review: "a second opener can wipe a live
 * lock table"). Crash points stop both processes at the two places: the
 * creator holding the flock with the file still empty, the opener after
 * it saw the empty file, before its trylock.
 */
static void test_opener_never_reinitialises_a_finished_segment(void **state)
{
	pid_t creator = stopped_child("seg.create_holding_flock", create_s_live);
	pid_t opener = stopped_child("seg.open_before_trylock", open_s_live);

	(void)state;
	resume_ok(creator);
	resume_ok(opener);
}

/*
 * An opener loads the init state, then the magic. A creator at work can
 * write both in between: the opener holds state 0 beside orbit's magic,
 * which no finished or dead creator leaves, and must wait for the flock's
 * answer instead of calling it corrupt (CI, the long tier: two uids
 * starting agents at once on a fresh fleet, one refused with -ECORRUPT).
 * The creator stops sized and still zero, holding the flock; the opener
 * stops after its state load; the creator then finishes before the opener
 * reads the magic it has written since.
 */
static void test_opener_racing_the_creators_header_waits(void **state)
{
	pid_t creator = stopped_child("seg.create_sized", create_s_plain);
	pid_t opener = stopped_child("seg.open_loaded_state", open_s_plain);

	(void)state;
	resume_ok(creator);
	resume_ok(opener);
}

/*
 * A read-only opener that finds the file empty and its flock free has
 * caught a creator between its O_EXCL open and its flock (CI: the demo's
 * read-only fleet open, racing the first agent's create, answered
 * "truncated"). It waits for the bound and opens the finished segment.
 */
static void test_readonly_opener_waits_for_creator_before_its_flock(void **state)
{
	struct orbit_seg_spec sp = default_spec();
	struct orbit_seg_opts ro = { .how = ORBIT_SEG_OPEN,
				     .readonly = true,
				     .init_timeout_ms = 5000 };
	orbit_seg_t b;
	int st, rc;
	pid_t creator = fork();

	if (creator == 0) {
		struct orbit_seg_opts o = { .how = ORBIT_SEG_CREATE };
		orbit_seg_t a;
		orbit__crashpoint_arm("seg.create_before_flock", 1, ORBIT_CRASH_STOP);
		_exit(orbit__seg_open(&a, fleet, "s", &sp, &o) != 0);
	}
	assert_int_equal(waitpid(creator, &st, WUNTRACED), creator);
	assert_true(WIFSTOPPED(st)); /* the file exists, empty, nobody holds its flock */
	pid_t waker = fork();
	if (waker == 0) {
		usleep(100000);
		kill(creator, SIGCONT);
		_exit(0);
	}
	rc = orbit__seg_open(&b, fleet, "s", &sp, &ro);
	st = orbit_test_wait(creator, 10000);
	orbit_test_wait(waker, 10000);
	assert_true(st >= 0 && WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(rc, 0);
	assert_int_equal(((unsigned char *)orbit__seg_body(&b))[0], 0x5a);
	orbit__seg_close(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_then_open_sees_body, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_twice_is_eexist_and_missing_is_enoent,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_or_create_races_to_one_segment, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_open_errors_name_the_mismatch, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_truncated_file_is_etruncated, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_emptied_segment_with_a_lock_holder_is_not_reinitialised, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_readonly_opener_waits_for_creator_before_its_flock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_opener_racing_the_creators_header_waits, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_non_regular_file_under_the_name_is_enotreg,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen_reaches_the_same_object_or_refuses,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_shm_shortage_is_enospc_and_leaves_nothing,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_shm_shortage_without_fallocate_is_enospc,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_owner_is_eowner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mode_wider_than_configured_is_emode, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_group_mode_creates_0660, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_names_are_einval, setup, teardown),
		cmocka_unit_test_setup_teardown(test_creator_killed_while_initialising, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_opener_never_reinitialises_a_finished_segment,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_header_bytes_never_crash, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bounds_checked_accessor, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readonly_open_maps_read_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flock_is_per_open_and_released_by_death, setup,
						teardown),
		cmocka_unit_test(test_fingerprint_depends_on_every_word),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
