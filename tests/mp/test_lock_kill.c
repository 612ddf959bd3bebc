// SPDX-License-Identifier: MIT
/*
 * tests/mp/test_lock_kill.c: kill tests of orbit-lock (spec
 * orbit-lock-architecture.md "State and notification": a process exiting
 * inside the critical section has its lock released by the kernel, a slot
 * is tombstoned before rewrite and occupied only when complete; "TTL and
 * fencing": the next owner gets a larger token, also after a crash).
 * A child stops itself at a labelled crash point inside the critical
 * section (shm/crashpoint.h) and is SIGKILLed there; then the parent's
 * next mutation must not block (serializer free) and repairs, the table
 * checker finds no torn slot, each key the child touched is free or held
 * by the child until its TTL, and the next token is larger than any the
 * child saw. `make check`: a few hundred kills at named points;
 * `make check-long`: 10,000+ kills at random points (any label, any hit)
 * and at random times.
 */
#include <errno.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include <orbit/orbit.h>

#include "orbit_test.h"
#include "shm/crashpoint.h"
#include "shm/lock_internal.h"

#define CHILD_TTL_NS 60000000000ull
#define FILLERS 24
#define SLOTS 64 /* small: tombstones pile up faster, compaction runs often */
#define WINDOW 12

struct shared {
	_Atomic uint64_t max_token; /* largest token the child was handed */
};

static struct shared *sh;
static char fleet[64];
static enum orbit_lock_serializer ser;
static orbit_lock_t *P; /* the parent's handle */
static unsigned seed = 12345;

ORBIT_LOCK_DEFINE_NAMESPACE(kill_ns, "tests.kill");

static const char *points[] = {
	"lock.holding_serializer", "lock.after_token_bump", "lock.after_tombstone",
	"lock.mid_bytes", "lock.before_occupied", "lock.after_occupied",
	"lock.remove_after_tombstone", "lock.renew_in_slot", "lock.compact_after_copy",
	"lock.before_unlock",
};
#define NPOINTS (sizeof(points) / sizeof(points[0]))

static const char *child_keys[] = { "k0", "k1", "k2" };

static struct orbit_lock_layout layout = ORBIT_LOCK_LAYOUT_DEFAULT_INIT;

static struct orbit_lock_options opts(void)
{
	struct orbit_lock_options o = { .size = sizeof(o), .fleet = fleet, .layout = &layout,
					.serializer = ser };
	layout.slots = SLOTS;
	return o;
}

static orbit_lock_key_t key_of(const char *label)
{
	return orbit_lock_key(kill_ns, label, strlen(label));
}

static void note_token(uint64_t t)
{
	uint64_t m = atomic_load(&sh->max_token);
	while (t > m && !atomic_compare_exchange_weak(&sh->max_token, &m, t))
		;
}

/*
 * The child's workload: acquire/renew/release on three keys plus churn
 * keys (tombstones, so compaction runs); it stops at the armed point.
 */
static int child(const char *label, uint64_t nth)
{
	struct orbit_lock_options o = opts();
	orbit_lock_owner_t ow = { "child", 5 };
	unsigned s = (unsigned)getpid();
	orbit_lock_t *l;
	char lab[32];

	if (orbit_lock_open(&o, &l))
		return 10;
	if (label)
		orbit__crashpoint_arm(label, nth, ORBIT_CRASH_STOP);
	for (int i = 0; i < 3000; i++) {
		orbit_lock_key_t k = key_of(child_keys[rand_r(&s) % 3]);
		struct orbit_lock_lease ls;

		if (orbit_lock_try_acquire(l, &k, &ow, CHILD_TTL_NS, &ls, NULL) == 0) {
			note_token(ls.token);
			if (rand_r(&s) % 2)
				orbit_lock_renew(l, &k, &ow, ls.token, CHILD_TTL_NS, NULL);
			if (rand_r(&s) % 4)
				orbit_lock_release(l, &k, &ow, ls.token);
		} else {
			orbit_lock_release(l, &k, &ow, 0);
		}
		/* a window of churn keys: entries land behind later tombstones */
		snprintf(lab, sizeof(lab), "c%d-%d", (int)getpid(), i);
		orbit_lock_key_t c = key_of(lab);
		if (orbit_lock_try_acquire(l, &c, &ow, CHILD_TTL_NS, &ls, NULL) == 0)
			note_token(ls.token);
		snprintf(lab, sizeof(lab), "c%d-%d", (int)getpid(), i - WINDOW);
		c = key_of(lab);
		orbit_lock_release(l, &c, &ow, 0);
	}
	orbit__crashpoint_arm(NULL, 0, 0);
	orbit_lock_close(l);
	return 0;
}

/* Wait until the child stops (or exits); -1 on timeout. 1 = stopped, 0 = exited. */
static int wait_stop(pid_t pid, int *status)
{
	for (int i = 0; i < 100000; i++) {
		pid_t r = waitpid(pid, status, WUNTRACED | WNOHANG);
		if (r == pid)
			return WIFSTOPPED(*status) ? 1 : 0;
		usleep(100);
	}
	return -1;
}

static int check_key_after_kill(const char *label, uint64_t now)
{
	orbit_lock_key_t k = key_of(label);
	orbit_lock_owner_t parent = { "parent", 6 };
	struct orbit_lock_entry e;
	int rc = orbit_lock_lookup(P, &k, &e);

	if (rc == -ENOENT)
		return 0; /* free */
	if (rc)
		fail_msg("lookup %s after kill: %d", label, rc);
	/* held: by the dead child, until its TTL, with a token it was handed or burnt */
	if (e.owner_len != 5 || memcmp(orbit_lock_entry_owner(&e), "child", 5) != 0)
		fail_msg("%s held by a foreign owner after the kill", label);
	if (e.deadline_ns > now + CHILD_TTL_NS)
		fail_msg("%s: deadline beyond the child's TTL", label);
	if (orbit_lock_holder_alive(&e) != 0)
		fail_msg("%s: holder reported alive after SIGKILL", label);
	assert_int_equal(orbit_lock_try_acquire(P, &k, &parent, 1000000, NULL, NULL), -EBUSY);
	assert_int_equal(orbit_lock_force_release(P, &k), 0); /* the admin path, for the next round */
	return 1;
}

/*
 * One kill: child armed at @label (NULL: no crash point, killed after
 * @delay_us instead). Returns 1 when the child was killed inside, 0 when
 * it finished first.
 */
static int one_kill(const char *label, uint64_t nth, unsigned delay_us)
{
	orbit_lock_key_t probe = key_of("probe");
	orbit_lock_owner_t parent = { "parent", 6 };
	struct orbit_lock_lease ls;
	char why[160];
	int st, stopped;
	uint64_t before = atomic_load(&orbit__lock_hdr(P)->next_token);
	pid_t pid;

	atomic_store(&sh->max_token, 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child(label, nth));
	if (label) {
		stopped = wait_stop(pid, &st);
		assert_true(stopped >= 0);
		if (stopped == 0) {
			assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
			return 0;
		}
	} else {
		usleep(delay_us);
		stopped = 1;
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	if (!label && WIFEXITED(st))
		return 0;
	/* the serializer is free (this would hang otherwise: the test's timeout) and repaired */
	assert_int_equal(orbit_lock_try_acquire(P, &probe, &parent, 1000000000, &ls, NULL), 0);
	assert_true(ls.token >= before);
	assert_true(ls.token > atomic_load(&sh->max_token));
	assert_int_equal(orbit_lock_release(P, &probe, &parent, ls.token), 0);
	if (orbit__lock_table_check(P, why, sizeof(why)))
		fail_msg("after a kill at %s (hit %lu): %s", label ? label : "a random time",
			 (unsigned long)nth, why);
	uint64_t now = orbit_test_now_ns();
	for (size_t i = 0; i < 3; i++)
		check_key_after_kill(child_keys[i], now);
	return 1;
}

static int drop_child_entries(const struct orbit_lock_entry *e, void *ctx)
{
	orbit_lock_key_t k = { e->bytes, e->ns_len, e->bytes + e->ns_len, e->label_len };
	if (e->owner_len == 5 && memcmp(orbit_lock_entry_owner(e), "child", 5) == 0)
		orbit_lock_force_release((orbit_lock_t *)ctx, &k);
	return 0;
}

static void open_fleet(enum orbit_lock_serializer s)
{
	struct orbit_lock_options o;
	orbit_lock_owner_t parent = { "parent", 6 };
	char lab[32];

	ser = s;
	orbit_test_fleet(fleet, sizeof(fleet), "kl");
	o = opts();
	assert_int_equal(orbit_lock_open(&o, &P), 0);
	/* long-lived fillers: releases then leave tombstones and compaction runs */
	for (int i = 0; i < FILLERS; i++) {
		snprintf(lab, sizeof(lab), "filler%d", i);
		orbit_lock_key_t k = key_of(lab);
		assert_int_equal(orbit_lock_try_acquire(P, &k, &parent, 3600000000000ull, NULL, NULL), 0);
	}
}

static void close_fleet(void)
{
	struct orbit_lock_options o = opts();
	struct orbit_lock_stats st;
	struct orbit_lock_entry e;
	char lab[32];

	/* the fillers survived every kill */
	for (int i = 0; i < FILLERS; i++) {
		snprintf(lab, sizeof(lab), "filler%d", i);
		orbit_lock_key_t k = key_of(lab);
		assert_int_equal(orbit_lock_lookup(P, &k, &e), 0);
	}
	orbit_lock_stats(P, &st);
	print_message("repairs %lu, compactions %lu, corrupt %lu\n", (unsigned long)st.repairs,
		      (unsigned long)st.compactions, (unsigned long)st.corrupt_slots);
	assert_int_equal(st.corrupt_slots, 0);
	orbit_lock_close(P);
	P = NULL;
	orbit_lock_unlink(&o);
}

static void named_points(enum orbit_lock_serializer s)
{
	int per_point = orbit_test_long() ? 100 : 16, kills = 0, at[NPOINTS] = { 0 };

	open_fleet(s);
	for (size_t p = 0; p < NPOINTS; p++) {
		for (int i = 0, tries = 0; i < per_point && tries < per_point * 8; tries++) {
			/* early hits mostly; compaction copies are rarer */
			uint64_t nth = 1 + (uint64_t)(rand_r(&seed) % (strstr(points[p], "compact") ? 40 : 60));
			int k = one_kill(points[p], nth, 0);
			i += k;
			at[p] += k;
			/* the dead child's churn keys: out, so the table does not fill */
			orbit_lock_foreach(P, drop_child_entries, P);
		}
		kills += at[p];
		if (at[p] == 0)
			fail_msg("crash point %s never reached", points[p]);
	}
	print_message("%d kills at %zu named points\n", kills, NPOINTS);
	close_fleet();
}

/* Kill tests at every named crash point, FUTEX serializer. */
static void test_kill_at_named_points_futex(void **state)
{
	named_points(ORBIT_LOCK_SERIALIZER_FUTEX);
}

/* Kill tests at every named crash point, FLOCK serializer. */
static void test_kill_at_named_points_flock(void **state)
{
	named_points(ORBIT_LOCK_SERIALIZER_FLOCK);
}

static void random_points(enum orbit_lock_serializer s)
{
	int target = orbit_test_long() ? 5000 : 40, kills = 0;

	open_fleet(s);
	for (int tries = 0; kills < target && tries < target * 4; tries++) {
		if (tries % 4 == 3)
			kills += one_kill(NULL, 0, (unsigned)(rand_r(&seed) % 3000));
		else
			kills += one_kill("*", 1 + (uint64_t)(rand_r(&seed) % 3000), 0);
		orbit_lock_foreach(P, drop_child_entries, P);
	}
	print_message("%d kills at random points and times\n", kills);
	assert_true(kills >= target);
	close_fleet();
}

/* Kills at random crash points (any label, any hit) and random times, FUTEX. */
static void test_kill_at_random_points_futex(void **state)
{
	random_points(ORBIT_LOCK_SERIALIZER_FUTEX);
}

/* Kills at random crash points (any label, any hit) and random times, FLOCK. */
static void test_kill_at_random_points_flock(void **state)
{
	random_points(ORBIT_LOCK_SERIALIZER_FLOCK);
}

static int child_hold_and_die(void *arg)
{
	struct orbit_lock_options o = opts();
	orbit_lock_owner_t ow = { "child", 5 };
	orbit_lock_key_t k = key_of("ttl");
	struct orbit_lock_lease ls;
	orbit_lock_t *l;

	if (orbit_lock_open(&o, &l) || orbit_lock_try_acquire(l, &k, &ow, 50000000, &ls, NULL))
		return 1;
	note_token(ls.token);
	raise(SIGKILL);
	return 2;
}

/* A holder killed while holding keeps its key until the TTL; then a larger token. */
static void test_kill_holder_key_free_after_ttl(void **state)
{
	orbit_lock_key_t k = key_of("ttl");
	orbit_lock_owner_t parent = { "parent", 6 };
	struct orbit_lock_entry e;
	struct orbit_lock_lease ls;

	open_fleet(ORBIT_LOCK_SERIALIZER_AUTO);
	assert_int_equal(orbit_test_fork_run(child_hold_and_die, NULL, 10000), -1);
	assert_int_equal(orbit_lock_try_acquire(P, &k, &parent, 1000000000, NULL, &e), -EBUSY);
	assert_int_equal(orbit_lock_holder_alive(&e), 0);
	while (orbit_test_now_ns() <= e.deadline_ns)
		usleep(5000);
	assert_int_equal(orbit_lock_try_acquire(P, &k, &parent, 1000000000, &ls, NULL), 0);
	assert_true(ls.token > atomic_load(&sh->max_token));
	close_fleet();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kill_at_named_points_futex),
		cmocka_unit_test(test_kill_at_named_points_flock),
		cmocka_unit_test(test_kill_at_random_points_futex),
		cmocka_unit_test(test_kill_at_random_points_flock),
		cmocka_unit_test(test_kill_holder_key_free_after_ttl),
	};

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	return cmocka_run_group_tests_name("lock_kill", tests, NULL, NULL);
}
