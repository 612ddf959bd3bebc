// SPDX-License-Identifier: MIT
/*
 * tests/mp/test_shm_hostile.c: what another local user, a full /dev/shm, a
 * careless truncate or a peer built against another libc does to a fleet,
 * seen through the public openers (issue 9, items 3, 4, 8 and 11):
 * - a FIFO, directory, socket or device node under each of the fleet's
 *   segment names (lock table, ring, member directory, stats) is refused
 *   at once with -ORBIT_ENOTREG by every opener that reaches the name
 *   (read-only and read-write lock open, fleet open, an agent started
 *   without a lock, orbitctl); every one runs in a child under a hard
 *   timeout, so a hang fails the test;
 * - in a private 4 MiB /dev/shm, orbit_agent_start() and orbit_lock_open()
 *   get -ENOSPC naming the segment and its size, leave no partial segment
 *   and raise no signal;
 * - a truncated lock table is -ORBIT_ETRUNCATED for every opener and is
 *   never re-created; one truncated to 0 is re-created by a read-write
 *   open, and its fencing tokens stay above every token the old one gave;
 * - a lock table created by a peer whose pthread_mutex_t differs (size,
 *   alignment, place, libc) is refused at open with -ORBIT_EFINGERPRINT.
 */
#include "config.h" /* _GNU_SOURCE: unshare(2) for orbit_test_shm.h */

#include "orbit_test.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <orbit/orbit.h>
#include "orbit_test_shm.h"
#include "shm/lock_internal.h"
#include "shm/members.h"
#include "shm/ring.h"
#include "shm/segment.h"
#include "shm/stats.h"

static char fleet[64];

ORBIT_LOCK_DEFINE_NAMESPACE(test_ns, "test.hostile");

static int setup(void **state)
{
	(void)state;
	orbit_test_fleet(fleet, sizeof(fleet), "hostile");
	return 0;
}

static void unlink_fleet(const char *f)
{
	struct orbit_lock_options lo = { .size = sizeof(lo), .fleet = f };

	orbit__members_unlink(f);
	orbit__ring_unlink(f, NULL);
	orbit__seg_unlink(f, ORBIT_STATS_SEG_NAME);
	orbit_lock_unlink(&lo);
}

static int teardown(void **state)
{
	(void)state;
	unlink_fleet(fleet);
	return 0;
}

/* A crash must end a child, not reach cmocka's signal handler in it. */
static void child_signals_default(void)
{
	signal(SIGBUS, SIG_DFL);
	signal(SIGSEGV, SIG_DFL);
	signal(SIGABRT, SIG_DFL);
}

/* ---- 9.3: non-regular files under every segment name, every opener -------- */

static int open_lock_rw_quiet(orbit_lock_t **l)
{
	struct orbit_lock_options lo = { .size = sizeof(lo), .fleet = fleet };

	return orbit_lock_open(&lo, l);
}

/* The fleet's segment names (shm/lock.c, shm/ring.c, shm/members.h, shm/stats.h). */
static const char *const seg_names[] = { "lock-228", "ring-229", ORBIT_MEMBERS_SEG_NAME,
					 ORBIT_STATS_SEG_NAME };
#define NSEG (sizeof(seg_names) / sizeof(seg_names[0]))

enum opener {
	OPEN_LOCK_RO,
	OPEN_LOCK_RW,
	OPEN_FLEET,
	OPEN_AGENT, /* without a lock: its thread opens the table read-only */
	OPEN_ORBITCTL,
	OPEN__COUNT,
};

static const char *const opener_names[] = { "read-only lock open", "read-write lock open",
					    "fleet open", "agent start without lock",
					    "orbitctl locks" };

/* Does @o open segment @seg at all (else it must succeed around it)? */
static bool reaches(enum opener o, size_t seg)
{
	switch (o) {
	case OPEN_LOCK_RO:
	case OPEN_LOCK_RW:
		return seg == 0;
	case OPEN_AGENT:
		return seg != 0; /* the table: only its thread, read-only (below) */
	default:
		return true;
	}
}

struct hostile_run {
	enum opener o;
	size_t seg;
	char path[128];
};

static int check_code(const struct hostile_run *h, int rc)
{
	bool want_refusal = reaches(h->o, h->seg);

	if (want_refusal ? rc != -ORBIT_ENOTREG : rc != 0) {
		fprintf(stderr, "%s with a hostile %s: %d (%s)\n", opener_names[h->o],
			seg_names[h->seg], rc, orbit_strerror(rc));
		return 1;
	}
	if (want_refusal && !strstr(orbit_segment_last_error(), h->path)) {
		fprintf(stderr, "message \"%s\" does not name %s\n", orbit_segment_last_error(),
			h->path);
		return 2;
	}
	return 0;
}

static int run_opener(void *arg)
{
	const struct hostile_run *h = arg;
	struct orbit_lock_options lo = { .size = sizeof(lo), .fleet = fleet };
	struct orbit_fleet_options fo = { .size = sizeof(fo), .fleet = fleet };
	struct orbit_agent_options ao = { .size = sizeof(ao), .fleet = fleet, .tick_ms = 5 };
	orbit_agent_t *a;
	orbit_fleet_t *f;
	orbit_lock_t *l;
	int rc;

	child_signals_default();
	switch (h->o) {
	case OPEN_LOCK_RO:
	case OPEN_LOCK_RW:
		lo.readonly = h->o == OPEN_LOCK_RO;
		rc = orbit_lock_open(&lo, &l);
		if (rc == 0)
			orbit_lock_close(l);
		if (rc == -ENOENT && lo.readonly && h->seg != 0)
			rc = 0; /* nothing else exists: missing, as it should be */
		return check_code(h, rc);
	case OPEN_FLEET:
		rc = orbit_fleet_open(&fo, &f);
		if (rc == 0)
			orbit_fleet_close(f);
		return check_code(h, rc);
	case OPEN_AGENT:
		rc = orbit_agent_start(&ao, &a);
		if (rc == 0) {
			/* Let its thread open the table (view_resync at start) and tick. */
			usleep(30 * 1000);
			orbit_agent_stop(a);
		}
		return check_code(h, rc);
	default:
		return 9;
	}
}

static const char *orbitctl(void)
{
	static char path[512];
	const char *b = getenv("top_builddir");

	snprintf(path, sizeof(path), "%s/agent/orbitctl", b ? b : ".");
	return path;
}

/* orbitctl --fleet F locks, stderr captured: it must exit (refused), naming the segment. */
static void run_orbitctl(const struct hostile_run *h)
{
	char err[2048] = "";
	int pfd[2], st;
	ssize_t n, got = 0;
	pid_t pid;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pfd[1], 2);
		close(pfd[0]);
		execl(orbitctl(), "orbitctl", "--fleet", fleet, "locks", (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	st = orbit_test_wait(pid, 5000);
	while ((n = read(pfd[0], err + got, sizeof(err) - 1 - (size_t)got)) > 0)
		got += n;
	close(pfd[0]);
	err[got] = 0;
	if (st < 0)
		fail_msg("orbitctl with a hostile %s hung", seg_names[h->seg]);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 127 || !strstr(err, h->path))
		fail_msg("orbitctl with a hostile %s: exit %d, stderr \"%s\"", seg_names[h->seg],
			 WEXITSTATUS(st), err);
}

/*
 * Issue 9.3: `mkfifo /dev/shm/orbit.X.lock-228` by any local user hung
 * every read-only opener (orbitctl, a read-only lock open, the fleet open,
 * an agent without a lock, and then its stop) forever.
 */
static void test_non_regular_file_under_every_segment_name(void **state)
{
	int devices = 0;

	(void)state;
	for (int k = 0; k < ORBIT_TEST_HOSTILE_COUNT; k++) {
		for (size_t s = 0; s < NSEG; s++) {
			struct hostile_run h = { .seg = s };
			int r;

			orbit_test_shm_path(h.path, sizeof(h.path), fleet, seg_names[s]);
			r = orbit_test_hostile_make(k, h.path);
			if (r == 1) {
				print_message("skipping the %s: mknod needs CAP_MKNOD\n",
					      orbit_test_hostile_name(k));
				break;
			}
			assert_int_equal(r, 0);
			if (k >= ORBIT_TEST_CHARDEV)
				devices++;
			for (int o = 0; o < OPEN__COUNT; o++) {
				h.o = o;
				if (o == OPEN_ORBITCTL) {
					run_orbitctl(&h);
				} else {
					int rc = orbit_test_fork_run(run_opener, &h, 5000);

					if (rc != 0)
						fail_msg("%s under %s, %s: %s",
							 orbit_test_hostile_name(k), seg_names[s],
							 opener_names[o],
							 rc < 0 ? "hung or died" : "wrong answer");
				}
				/* what a successful opener created around the name goes */
				for (size_t t = 0; t < NSEG; t++)
					if (t != s)
						orbit__seg_unlink(fleet, seg_names[t]);
			}
			orbit_test_hostile_remove(h.path);
		}
	}
	if (!devices)
		print_message("device nodes not tested (not root)\n");
}

/*
 * Issue 9.3, the second opens: a FIFO put under a name after it was
 * unlinked must not hang a forked child's atfork handler (it re-opens the
 * lock table read-only by name) nor give the member directory's row locks
 * to another object. Each runs in a child under a hard timeout.
 */
static int fork_with_fifo_under_the_table(void *arg)
{
	orbit_lock_key_t k = orbit_lock_key(test_ns, "x", 1);
	struct orbit_lock_entry e;
	char path[128];
	orbit_lock_t *l;
	pid_t pid;
	int st;

	(void)arg;
	child_signals_default();
	if (open_lock_rw_quiet(&l) != 0)
		return 10;
	orbit_test_shm_path(path, sizeof(path), fleet, "lock-228");
	if (unlink(path) < 0 || mkfifo(path, 0600) < 0)
		return 11;
	pid = fork(); /* the atfork child handler re-opens the name */
	if (pid == 0)
		_exit(orbit_lock_lookup(l, &k, &e) == -ENOENT ? 0 : 1);
	st = orbit_test_wait(pid, 3000);
	unlink(path);
	orbit_lock_close(l);
	return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 12;
}

static void test_second_opens_never_reach_what_now_holds_the_name(void **state)
{
	orbit_members_t *m;
	char path[128];

	(void)state;
	assert_int_equal(orbit_test_fork_run(fork_with_fifo_under_the_table, NULL, 6000), 0);
	/* the member directory: join opens it a second time for its row locks */
	assert_int_equal(orbit__members_open(&m, fleet, 8, NULL), 0);
	orbit_test_shm_path(path, sizeof(path), fleet, ORBIT_MEMBERS_SEG_NAME);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(orbit__members_join(m, "x"), -ORBIT_ENOTREG);
	unlink(path);
	assert_int_equal(orbit__members_join(m, "x"), -ENOENT);
	orbit__members_close(m);
}

/* ---- 9.4: too little /dev/shm ------------------------------------------- */

static bool exists(const char *name)
{
	char path[128];
	struct stat st;

	orbit_test_shm_path(path, sizeof(path), fleet, name);
	return lstat(path, &st) == 0;
}

static int enospc_child(void *arg)
{
	struct orbit_agent_options ao = { .size = sizeof(ao), .fleet = fleet };
	/* 16384 slots: a table of about 16 MiB */
	struct orbit_lock_layout big = ORBIT_LOCK_LAYOUT_DEFAULT_INIT;
	struct orbit_lock_options lo = { .size = sizeof(lo), .fleet = fleet, .layout = &big };
	char ring[128];
	const char *why;
	orbit_agent_t *a;
	orbit_lock_t *l;
	int rc;

	(void)arg;
	child_signals_default();
	why = orbit_test_private_shm("size=4m");
	if (why) {
		printf("skip: %s\n", why);
		return 77;
	}
	/* The agent: members and stats fit, the 16 MiB ring does not. */
	rc = orbit_agent_start(&ao, &a);
	if (rc != -ENOSPC) {
		fprintf(stderr, "agent start: %d (%s)\n", rc, orbit_strerror(rc));
		return 10;
	}
	orbit_test_shm_path(ring, sizeof(ring), fleet, "ring-229");
	if (!strstr(orbit_segment_last_error(), ring) ||
	    !strstr(orbit_segment_last_error(), " bytes")) {
		fprintf(stderr, "message: %s\n", orbit_segment_last_error());
		return 11;
	}
	if (exists("ring-229"))
		return 12; /* the partial ring was left behind */
	/* what the agent created before the ring is whole: it opens */
	struct orbit_fleet_options fo = { .size = sizeof(fo), .fleet = fleet };
	orbit_fleet_t *f;
	if (!exists(ORBIT_MEMBERS_SEG_NAME) || !exists(ORBIT_STATS_SEG_NAME) ||
	    orbit_fleet_open(&fo, &f) != 0)
		return 17;
	orbit_fleet_close(f);
	/* The lock table. */
	big.slots = 16384;
	rc = orbit_lock_open(&lo, &l);
	if (rc != -ENOSPC) {
		fprintf(stderr, "lock open: %d (%s)\n", rc, orbit_strerror(rc));
		return 13;
	}
	if (!strstr(orbit_segment_last_error(), "lock-228"))
		return 14;
	if (exists("lock-228"))
		return 15;
	/* What fits still works in the same /dev/shm. */
	lo.layout = NULL;
	if (orbit_lock_open(&lo, &l) != 0)
		return 16;
	orbit_lock_close(l);
	unlink_fleet(fleet);
	return 0;
}

/*
 * Issue 9.4: with a 4 MiB /dev/shm, orbit_agent_start() died of SIGBUS
 * and left a 16 MiB ring file behind.
 */
static void test_small_dev_shm_is_enospc_for_agent_and_lock(void **state)
{
	int rc;

	(void)state;
	if (geteuid() != 0) {
		print_message("skip: a private tmpfs on /dev/shm needs root\n");
		skip();
	}
	rc = orbit_test_fork_run(enospc_child, NULL, 30000);
	if (rc == 77)
		skip();
	assert_int_equal(rc, 0);
}

/* ---- 9.8: a truncated lock table ----------------------------------------- */

static int open_lock(bool readonly, orbit_lock_t **l)
{
	struct orbit_lock_options lo = {
		.size = sizeof(lo), .fleet = fleet, .readonly = readonly, .init_timeout_ms = 200
	};

	return orbit_lock_open(&lo, l);
}

static uint64_t acquire(orbit_lock_t *l, const char *label)
{
	orbit_lock_key_t k = orbit_lock_key(test_ns, label, strlen(label));
	orbit_lock_owner_t ow = { "me", 2 };
	struct orbit_lock_lease lease;

	assert_int_equal(orbit_lock_try_acquire(l, &k, &ow, 60ull * 1000000000ull, &lease, NULL),
			 0);
	return lease.token;
}

static off_t file_size(const char *name)
{
	char path[128];
	struct stat st;

	orbit_test_shm_path(path, sizeof(path), fleet, name);
	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

static int truncate_to(const char *name, off_t size)
{
	char path[128];

	orbit_test_shm_path(path, sizeof(path), fleet, name);
	return truncate(path, size);
}

/*
 * Issue 9.8: a table cut short is its own error for every opener, and the
 * table is left as it is (it used to be "still initialising past the
 * bound", and a read-write open re-created one cut below a header).
 */
static void test_truncated_lock_table_is_etruncated_and_kept(void **state)
{
	struct orbit_fleet_options fo = { .size = sizeof(fo), .fleet = fleet };
	orbit_lock_t *l, *x;
	orbit_fleet_t *f;
	off_t full;

	(void)state;
	assert_int_equal(open_lock(false, &l), 0);
	acquire(l, "held");
	full = file_size("lock-228");
	orbit_lock_close(l);
	const off_t sizes[] = { full / 2, ORBIT_SEG_HEADER_BYTES + 1, ORBIT_SEG_HEADER_BYTES, 64 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		assert_int_equal(truncate_to("lock-228", sizes[i]), 0);
		assert_int_equal(open_lock(true, &x), -ORBIT_ETRUNCATED);
		assert_non_null(strstr(orbit_segment_last_error(), "lock-228"));
		assert_int_equal(open_lock(false, &x), -ORBIT_ETRUNCATED);
		assert_int_equal(orbit_fleet_open(&fo, &f), -ORBIT_ETRUNCATED);
		assert_int_equal(file_size("lock-228"), sizes[i]); /* not re-created */
	}
}

/*
 * Issue 9.8 for every segment of a fleet: the fleet open (read-only) and
 * an agent start (read-write, may create) both say -ORBIT_ETRUNCATED for
 * any one segment cut short, and leave it as it is.
 */
static void test_every_truncated_segment_is_etruncated(void **state)
{
	struct orbit_fleet_options fo = { .size = sizeof(fo), .fleet = fleet };
	struct orbit_agent_options ao = { .size = sizeof(ao), .fleet = fleet };
	orbit_agent_t *a;
	orbit_fleet_t *f;
	orbit_lock_t *l;

	(void)state;
	assert_int_equal(open_lock(false, &l), 0);
	orbit_lock_close(l);
	assert_int_equal(orbit_agent_start(&ao, &a), 0);
	orbit_agent_stop(a);
	for (size_t s = 0; s < NSEG; s++) {
		off_t full = file_size(seg_names[s]);
		char path[128];
		char *keep = malloc((size_t)full);
		int fd;

		orbit_test_shm_path(path, sizeof(path), fleet, seg_names[s]);
		fd = open(path, O_RDWR);
		assert_true(fd >= 0 && keep);
		assert_int_equal(pread(fd, keep, (size_t)full, 0), full);
		assert_int_equal(ftruncate(fd, full / 2), 0);
		assert_int_equal(orbit_fleet_open(&fo, &f), -ORBIT_ETRUNCATED);
		assert_non_null(strstr(orbit_segment_last_error(), path));
		if (s != 0) { /* the agent without a lock opens the table only from its thread */
			assert_int_equal(orbit_agent_start(&ao, &a), -ORBIT_ETRUNCATED);
			assert_non_null(strstr(orbit_segment_last_error(), path));
		}
		assert_int_equal(file_size(seg_names[s]), full / 2);
		/* put it back whole for the next one */
		assert_int_equal(ftruncate(fd, full), 0);
		assert_int_equal(pwrite(fd, keep, (size_t)full, 0), full);
		close(fd);
		free(keep);
	}
	assert_int_equal(orbit_fleet_open(&fo, &f), 0);
	orbit_fleet_close(f);
}

/*
 * Issue 9.8, the decision: a table truncated to 0 cannot be told from one
 * whose creator died before sizing it, so a read-write open re-creates it
 * (a read-only one says -ORBIT_ETRUNCATED). Every lease is gone; fencing
 * tokens stay above every token handed out before. They survive
 * re-creation as they survive orbit_lock_unlink(): a new table starts its
 * counter at the creation's CLOCK_REALTIME in ns (a high-water mark the
 * clock keeps: one token per ns at most), not at a constant.
 */
static void test_lock_table_truncated_to_zero_is_recreated_with_larger_tokens(void **state)
{
	orbit_lock_t *l, *x;
	uint64_t before, after;

	(void)state;
	assert_int_equal(open_lock(false, &l), 0);
	before = acquire(l, "a");
	after = acquire(l, "b");
	assert_true(after > before);
	before = after;
	orbit_lock_close(l);
	assert_int_equal(truncate_to("lock-228", 0), 0);
	assert_int_equal(open_lock(true, &x), -ORBIT_ETRUNCATED);
	assert_int_equal(open_lock(false, &l), 0);
	assert_true(orbit__lock_seg(l)->created); /* re-created, every lease gone */
	after = acquire(l, "a");		  /* "a" is free again */
	assert_true(after > before);
	orbit_lock_close(l);
	/* and the same across an unlink */
	assert_int_equal(truncate_to("lock-228", 0), 0);
	assert_int_equal(open_lock(false, &l), 0);
	before = acquire(l, "a");
	orbit_lock_close(l);
	teardown(NULL);
	assert_int_equal(open_lock(false, &l), 0);
	assert_true(acquire(l, "a") > before);
	orbit_lock_close(l);
}

/* ---- 9.11: a peer whose libc lays the robust mutex out differently ------- */

static void rewrite_fingerprint(orbit_lock_t *l, uint64_t fp)
{
	const orbit_seg_t *seg = orbit__lock_seg(l);
	struct orbit_seg_header *h;
	void *p;

	/* the handle maps the table as we opened it; write through a mapping of our own */
	p = mmap(NULL, seg->size, PROT_READ | PROT_WRITE, MAP_SHARED, seg->fd, 0);
	assert_true(p != MAP_FAILED);
	h = p;
	h->fingerprint = fp;
	munmap(p, seg->size);
}

/*
 * Issue 9.11: the FUTEX serializer's pthread_mutex_t lives in the table.
 * A peer built against a libc whose mutex has another size, alignment,
 * offset or libc writes its own fingerprint when it creates the table:
 * opening that table must be refused, never scribbled over.
 */
static void test_foreign_libc_mutex_layout_is_refused(void **state)
{
	struct orbit_lock_layout y = ORBIT_LOCK_LAYOUT_DEFAULT_INIT;
	struct orbit__lock_libc_abi self, peer[4];
	struct orbit_lock_options lo = { .size = sizeof(lo),
					 .fleet = fleet,
					 .serializer = ORBIT_LOCK_SERIALIZER_FUTEX };
	orbit_lock_t *l, *x;
	uint64_t own;

	(void)state;
	orbit__lock_libc_abi_self(&self);
	assert_int_equal(self.mutex_bytes, sizeof(pthread_mutex_t));
	for (int i = 0; i < 4; i++)
		peer[i] = self;
	peer[0].mutex_bytes = 48; /* e.g. another libc's or arch's mutex */
	peer[1].mutex_align = 4;  /* a 32-bit peer */
	peer[2].mutex_off += 64;  /* a mutex placed elsewhere */
	peer[3].libc_id ^= 0x100; /* same size, another libc (glibc vs musl: both 40 bytes) */
	assert_int_equal(orbit_lock_open(&lo, &l), 0);
	own = orbit__lock_fingerprint(&y, ORBIT_LOCK_SERIALIZER_FUTEX, &self);
	assert_int_equal(orbit__seg_header(orbit__lock_seg(l))->fingerprint, own);
	for (int i = 0; i < 4; i++) {
		uint64_t fp = orbit__lock_fingerprint(&y, ORBIT_LOCK_SERIALIZER_FUTEX, &peer[i]);

		assert_true(fp != own);
		rewrite_fingerprint(l, fp);
		lo.serializer = ORBIT_LOCK_SERIALIZER_FUTEX;
		assert_int_equal(orbit_lock_open(&lo, &x), -ORBIT_EFINGERPRINT);
		lo.serializer = ORBIT_LOCK_SERIALIZER_AUTO;
		assert_int_equal(orbit_lock_open(&lo, &x), -ORBIT_EFINGERPRINT);
		lo.readonly = true;
		assert_int_equal(orbit_lock_open(&lo, &x), -ORBIT_EFINGERPRINT);
		lo.readonly = false;
		/* a FLOCK table holds no libc object: peers of any libc share it */
		assert_int_equal(orbit__lock_fingerprint(&y, ORBIT_LOCK_SERIALIZER_FLOCK, &peer[i]),
				 orbit__lock_fingerprint(&y, ORBIT_LOCK_SERIALIZER_FLOCK, &self));
	}
	rewrite_fingerprint(l, own);
	lo.serializer = ORBIT_LOCK_SERIALIZER_FUTEX;
	assert_int_equal(orbit_lock_open(&lo, &x), 0);
	orbit_lock_close(x);
	orbit_lock_close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_non_regular_file_under_every_segment_name,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_second_opens_never_reach_what_now_holds_the_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_small_dev_shm_is_enospc_for_agent_and_lock,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated_lock_table_is_etruncated_and_kept,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_truncated_segment_is_etruncated, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
		    test_lock_table_truncated_to_zero_is_recreated_with_larger_tokens, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_foreign_libc_mutex_layout_is_refused, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
