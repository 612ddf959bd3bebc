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
 * and at random times. A child only SIGSTOPped inside (not killed) must
 * not hold the parent's mutations beyond the serializer bound, nor its
 * lookups at all (test_stopped_holder_bounded_wait_*).
 */
#include "config.h" /* _GNU_SOURCE: sched_getcpu, CPU_SET */

#include <errno.h>
#include <sched.h>
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
	_Atomic uint64_t max_rev;   /* largest state_revision a child's frames carried */
};

static struct shared *sh;
static char fleet[64];
static enum orbit_lock_serializer ser;
static orbit_lock_t *P; /* the parent's handle */
static unsigned seed = 12345;

ORBIT_LOCK_DEFINE_NAMESPACE(kill_ns, "tests.kill");

static const char *points[] = {
	"lock.holding_serializer",     "lock.after_token_bump",
	"lock.after_tombstone",	       "lock.mid_bytes",
	"lock.before_occupied",	       "lock.after_occupied",
	"lock.remove_after_tombstone", "lock.renew_in_slot",
	"lock.compact_after_copy",     "lock.before_unlock",
	"lock.after_ctrl_set",
};
#define NPOINTS (sizeof(points) / sizeof(points[0]))

static const char *child_keys[] = { "k0", "k1", "k2" };

static struct orbit_lock_layout layout = ORBIT_LOCK_LAYOUT_DEFAULT_INIT;

static struct orbit_lock_options opts(void)
{
	struct orbit_lock_options o = {
		.size = sizeof(o), .fleet = fleet, .layout = &layout, .serializer = ser
	};
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
	assert_int_equal(orbit_lock_force_release(P, &k),
			 0); /* the admin path, for the next round */
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
		assert_int_equal(
		    orbit_lock_try_acquire(P, &k, &parent, 3600000000000ull, NULL, NULL), 0);
	}
}

static void close_fleet(void)
{
	struct orbit_lock_options o = opts();
	struct orbit_lock_stats st;
	struct orbit_lock_entry e;
	char lab[32];
	int rc;

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
	/* and what an agent started on it made (stopped_holder): its member
	 * directory, 16 MiB ring and stats; 0 or -ENOENT when none was made */
	rc = orbit_fleet_unlink(fleet);
	if (rc != 0 && rc != -ENOENT)
		fail_msg("orbit_fleet_unlink(%s): %s", fleet, orbit_strerror(rc));
}

static void named_points(enum orbit_lock_serializer s)
{
	int per_point = orbit_test_long() ? 100 : 16, kills = 0, at[NPOINTS] = { 0 };

	open_fleet(s);
	for (size_t p = 0; p < NPOINTS; p++) {
		for (int i = 0, tries = 0; i < per_point && tries < per_point * 8; tries++) {
			/* early hits mostly; compaction copies are rarer */
			uint64_t nth = 1 + (uint64_t)(rand_r(&seed) %
						      (strstr(points[p], "compact") ? 40 : 60));
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

/*
 * Issue 9.9: a mutator stopped inside the serializer (SIGSTOP at a crash
 * point) must not make another process's "one immediate attempt" wait
 * for it. Every mutation of the parent answers -EAGAIN after the bound
 * (the default, ORBIT_LOCK_SERIALIZER_WAIT_MS_DEFAULT, and a configured
 * one), changes nothing, and lookups answer at once. After SIGCONT the
 * child's acquisition completes, the parent's calls work again, and the
 * child's key and tokens show no mutual-exclusion or fencing violation.
 * If a mutation blocked for the whole stop, SIGALRM resumes the child
 * after STOP_WATCHDOG_S so the test fails on the timing instead of hanging.
 */
#define STOP_WATCHDOG_S 10
#define STOP_SLACK_NS 200000000ull /* scheduling delay on a loaded 2-core host */
#define STOP_CUSTOM_MS 300
#define STOP_AGENT_MAX_NS 3000000000ull /* far below STOP_WATCHDOG_S */

static volatile pid_t stopped_child; /* the watchdog's target while the checks run */
static pid_t scenario_child;	     /* forked and not yet reaped */
static pid_t hog_child;		     /* the CPU hog, while it runs */

static void resume_child(int sig)
{
	(void)sig;
	if (stopped_child > 0)
		kill(stopped_child, SIGCONT); /* async-signal-safe */
}

/* After a failed check: no stopped child may outlive the test (it holds the serializer). */
static int reap_scenario_child(void **state)
{
	alarm(0);
	stopped_child = 0;
	if (hog_child > 0) {
		kill(hog_child, SIGKILL);
		waitpid(hog_child, NULL, 0);
		hog_child = 0;
	}
	if (scenario_child > 0) {
		kill(scenario_child, SIGKILL);
		waitpid(scenario_child, NULL, 0);
		scenario_child = 0;
	}
	return 0;
}

/* A child spinning on the CPU this process runs on; both pinned there. */
static pid_t hog_on_my_cpu(cpu_set_t *saved)
{
	cpu_set_t one;
	int cpu = sched_getcpu();
	pid_t pid;

	assert_int_equal(sched_getaffinity(0, sizeof(*saved), saved), 0);
	CPU_ZERO(&one);
	CPU_SET(cpu < 0 ? 0 : cpu, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	pid = fork(); /* inherits the affinity */
	assert_true(pid >= 0);
	if (pid == 0)
		for (;;)
			;
	hog_child = pid;
	return pid;
}

static void hog_stop(pid_t pid, const cpu_set_t *saved)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	hog_child = 0;
	sched_setaffinity(0, sizeof(*saved), saved);
}

static int child_stop_inside(const char *point)
{
	struct orbit_lock_options o = opts();
	orbit_lock_owner_t ow = { "child", 5 };
	orbit_lock_key_t k = key_of("stopped-child-key");
	struct orbit_lock_lease ls;
	orbit_lock_t *l;

	if (orbit_lock_open(&o, &l))
		return 10;
	orbit__crashpoint_arm(point, 1, ORBIT_CRASH_STOP);
	if (orbit_lock_try_acquire(l, &k, &ow, CHILD_TTL_NS, &ls, NULL))
		return 11;
	orbit__crashpoint_arm(NULL, 0, 0);
	note_token(ls.token);
	orbit_lock_close(l);
	return 0;
}

/*
 * This thread's time runnable but not running (field 2 of
 * /proc/thread-self/schedstat, ns; 0 where the kernel has no schedstat).
 * A bounded wait ends at its deadline plus the wake-up's scheduling
 * delay: on a loaded host that delay, not the code, once pushed a FLOCK
 * poll loop's -EAGAIN past the bound's slack. The upper checks below
 * subtract it, so they still catch a wait that slept past the bound (or
 * waited for the whole stop) but not a host that had no CPU to give.
 */
static uint64_t runq_wait_ns(void)
{
	unsigned long long run = 0, wait = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &run, &wait) != 2)
		wait = 0;
	fclose(f);
	return wait;
}

static uint64_t timed_runq_ns; /* the run-queue wait of the last TIMED() call */

/* Run @call's result into *rc and return how long it took, in ns
 * (timed_runq_ns: how much of it this thread waited for a CPU). */
#define TIMED(rc, call)                                                                            \
	({                                                                                         \
		uint64_t w0_ = runq_wait_ns(), t0_ = orbit_test_now_ns(), t1_;                     \
		(rc) = (call);                                                                     \
		t1_ = orbit_test_now_ns();                                                         \
		timed_runq_ns = runq_wait_ns() - w0_;                                              \
		t1_ - t0_;                                                                         \
	})

static void expect_bounded(const char *what, int rc, uint64_t took, uint64_t bound_ns)
{
	uint64_t ran = took > timed_runq_ns ? took - timed_runq_ns : 0;

	print_message("  %-28s %4d after %6.1f ms (bound %.0f ms; %.1f ms waiting for a CPU)\n",
		      what, rc, took / 1e6, bound_ns / 1e6, timed_runq_ns / 1e6);
	if (rc != -EAGAIN)
		fail_msg("%s with a stopped serializer holder: %d, not -EAGAIN", what, rc);
	if (took < bound_ns || ran > bound_ns + STOP_SLACK_NS)
		fail_msg(
		    "%s returned after %.1f ms (%.1f ms of it waiting for a CPU), bound %.0f ms",
		    what, took / 1e6, timed_runq_ns / 1e6, bound_ns / 1e6);
}

static void stopped_holder(enum orbit_lock_serializer s, const char *point)
{
	const uint64_t def_ns = ORBIT_LOCK_SERIALIZER_WAIT_MS_DEFAULT * 1000000ull;
	const uint64_t custom_ns = STOP_CUSTOM_MS * 1000000ull;
	orbit_lock_key_t held = key_of("held"), other = key_of("other");
	orbit_lock_key_t ck = key_of("stopped-child-key");
	orbit_lock_owner_t parent = { "parent", 6 };
	struct orbit_lock_lease l1, l2, l3;
	struct orbit_lock_entry e, e0;
	struct orbit_lock_stats st0, st1;
	struct orbit_lock_options o;
	orbit_lock_t *P2;
	cpu_set_t cpus;
	pid_t hog;
	uint64_t took, rev, max_lookup = 0;
	char why[160];
	int rc, wst;
	pid_t pid;

	print_message("%s, child stopped at %s:\n",
		      s == ORBIT_LOCK_SERIALIZER_FUTEX ? "FUTEX" : "FLOCK", point);
	open_fleet(s);
	o = opts();
	o.serializer_wait_ms = STOP_CUSTOM_MS;
	assert_int_equal(orbit_lock_open(&o, &P2), 0);
	assert_int_equal(orbit_lock_try_acquire(P, &held, &parent, CHILD_TTL_NS, &l1, NULL), 0);
	assert_int_equal(orbit_lock_lookup(P, &held, &e0), 0);
	atomic_store(&sh->max_token, 0);
	orbit_lock_stats(P, &st0);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_stop_inside(point));
	scenario_child = pid;
	assert_int_equal(wait_stop(pid, &wst), 1);
	stopped_child = pid;
	signal(SIGALRM, resume_child);
	alarm(STOP_WATCHDOG_S);
	rev = orbit_lock_state_revision(P);

	/* every mutation: -EAGAIN after the bound, never the whole stop */
	took = TIMED(rc, orbit_lock_try_acquire(P, &other, &parent, CHILD_TTL_NS, NULL, NULL));
	expect_bounded("try_acquire", rc, took, def_ns);
	took = TIMED(rc, orbit_lock_renew(P, &held, &parent, l1.token, 2 * CHILD_TTL_NS, NULL));
	expect_bounded("renew", rc, took, def_ns);
	took = TIMED(rc, orbit_lock_release(P, &held, &parent, l1.token));
	expect_bounded("release", rc, took, def_ns);
	took = TIMED(rc, orbit_lock_force_release(P, &held));
	expect_bounded("force_release", rc, took, def_ns);
	took = TIMED(rc, orbit_lock_try_acquire(P2, &other, &parent, CHILD_TTL_NS, NULL, NULL));
	expect_bounded("try_acquire (300 ms option)", rc, took, custom_ns);
	/*
	 * A key held live by someone: -EBUSY with the holder, at once, from
	 * a consistent copy of its slot (busy_fast() in shm/lock.c), as a
	 * lookup answers; before, every contender queued on the serializer.
	 */
	{
		orbit_lock_owner_t rival = { "rival", 5 };

		took = TIMED(rc, orbit_lock_try_acquire(P2, &held, &rival, CHILD_TTL_NS, NULL, &e));
		print_message("  %-28s %4d after %6.3f ms\n", "try_acquire (held key)", rc,
			      took / 1e6);
		assert_int_equal(rc, -EBUSY);
		assert_int_equal(e.token, l1.token);
		if (took - (timed_runq_ns < took ? timed_runq_ns : took) >= custom_ns)
			fail_msg("try_acquire of a held key waited %.1f ms for the serializer",
				 took / 1e6);
	}

	/*
	 * Lookups never wait for the serializer (nor for the stopped writer's
	 * slot). A CPU hog shares this process's CPU meanwhile, so that every
	 * sched_yield a lookup makes costs a time slice, as on a busy host.
	 */
	hog = hog_on_my_cpu(&cpus);
	for (int i = 0; i < 400; i++) {
		bool mine = i % 2;

		took = TIMED(rc, orbit_lock_lookup(P, mine ? &ck : &held, &e));
		/* one that took the serializer would wait >= the bound; no stall
		 * test in lookup_retry(): 192 yields, 2.4 s under four CPU hogs */
		if (took - (timed_runq_ns < took ? timed_runq_ns : took) >= def_ns)
			fail_msg("lookup %d took %.1f ms while a mutator was stopped", i,
				 took / 1e6);
		max_lookup = took > max_lookup ? took : max_lookup;
		/* the child's own slot is mid-write at lock.mid_bytes: bounded retries */
		assert_int_equal(rc, !mine				    ? 0
				     : strcmp(point, "lock.mid_bytes") == 0 ? -EAGAIN
									    : -ENOENT);
	}
	hog_stop(hog, &cpus);
	print_message("  lookup: slowest of 400 %.3f ms (a CPU hog beside)\n", max_lookup / 1e6);

	/* -EAGAIN changed nothing */
	assert_int_equal(orbit_lock_state_revision(P), rev);
	assert_int_equal(orbit_lock_lookup(P, &held, &e), 0);
	assert_int_equal(e.token, l1.token);
	assert_int_equal(e.deadline_ns, e0.deadline_ns);
	assert_int_equal(orbit_lock_lookup(P, &other, &e), -ENOENT);

	/*
	 * An agent on this lock starts and stops while the holder is stopped:
	 * wiring its sink into the handle is process-local and never waits
	 * for the serializer (CI: a Spot host's agent start hung behind a
	 * host SIGSTOPped inside it until the test's 60 s timeout).
	 */
	{
		struct orbit_agent_options ao;
		orbit_agent_t *ag;

		orbit_agent_options_init(&ao);
		ao.fleet = o.fleet;
		ao.name = "beside-a-stopped-holder";
		ao.lock = P;
		took = orbit_test_now_ns();
		assert_int_equal(orbit_agent_start(&ao, &ag), 0);
		orbit_agent_stop(ag);
		took = orbit_test_now_ns() - took;
		print_message("  agent start+stop on this lock: %.1f ms\n", took / 1e6);
		if (took > STOP_AGENT_MAX_NS)
			fail_msg("agent start+stop took %.1f ms beside a stopped serializer holder",
				 took / 1e6);
	}

	/* resume: the child finishes its acquisition and exits */
	alarm(0);
	stopped_child = 0;
	kill(pid, SIGCONT);
	wst = orbit_test_wait(pid, 10000);
	scenario_child = 0;
	assert_true(wst >= 0 && WIFEXITED(wst));
	assert_int_equal(WEXITSTATUS(wst), 0);
	assert_true(atomic_load(&sh->max_token) > l1.token);

	/* everything works again; exclusion and fencing held throughout */
	assert_int_equal(orbit_lock_try_acquire(P, &ck, &parent, CHILD_TTL_NS, NULL, &e), -EBUSY);
	assert_int_equal(e.token, atomic_load(&sh->max_token));
	assert_int_equal(e.owner_len, 5);
	assert_memory_equal(orbit_lock_entry_owner(&e), "child", 5);
	assert_int_equal(orbit_lock_renew(P, &held, &parent, l1.token, CHILD_TTL_NS, &l2), 0);
	assert_int_equal(l2.token, l1.token);
	assert_int_equal(orbit_lock_release(P, &held, &parent, l1.token), 0);
	assert_int_equal(orbit_lock_try_acquire(P2, &other, &parent, CHILD_TTL_NS, &l3, NULL), 0);
	assert_true(l3.token > atomic_load(&sh->max_token));
	assert_int_equal(orbit_lock_release(P2, &other, &parent, l3.token), 0);
	assert_int_equal(orbit_lock_force_release(P, &ck), 0);
	if (orbit__lock_table_check(P, why, sizeof(why)))
		fail_msg("after the stop at %s: %s", point, why);
	/* a stopped holder is not a dead one: nothing was repaired */
	orbit_lock_stats(P, &st1);
	assert_int_equal(st1.repairs, st0.repairs);
	orbit_lock_close(P2);
	close_fleet();
}

/* Issue 9.9, FUTEX: a stopped serializer holder bounds every other process's mutation. */
static void test_stopped_holder_bounded_wait_futex(void **state)
{
	stopped_holder(ORBIT_LOCK_SERIALIZER_FUTEX, "lock.holding_serializer");
	stopped_holder(ORBIT_LOCK_SERIALIZER_FUTEX, "lock.mid_bytes");
}

/* Issue 9.9, FLOCK: the same with flock (LOCK_NB polling up to the bound). */
static void test_stopped_holder_bounded_wait_flock(void **state)
{
	stopped_holder(ORBIT_LOCK_SERIALIZER_FLOCK, "lock.holding_serializer");
	stopped_holder(ORBIT_LOCK_SERIALIZER_FLOCK, "lock.mid_bytes");
}

/* A child's transition sink: the largest state_revision its frames carried. */
static void note_frame(void *ctx, const struct orbit_transition *t)
{
	uint64_t m = atomic_load(&sh->max_rev);

	(void)ctx;
	while (t->state_revision > m &&
	       !atomic_compare_exchange_weak(&sh->max_rev, &m, t->state_revision))
		;
}

/* Slot @i's control byte of @l (shm/lock_table.h); set to @c when >= 0. */
static uint32_t ctrl_byte(orbit_lock_t *l, uint32_t i, int c)
{
	struct orbit_lock_table_hdr *h = orbit__lock_hdr(l);
	_Atomic uint64_t *w = (_Atomic uint64_t *)((char *)h + h->ctrl_off) + i / 8;
	unsigned sh8 = 8 * (i % 8);
	uint64_t v = atomic_load(w);

	if (c >= 0)
		atomic_store(w, (v & ~(0xffull << sh8)) | (uint64_t)c << sh8);
	return (uint32_t)(v >> sh8) & 0xffu;
}

/*
 * A child that stops at @point (hit @nth) during one try_acquire of @label
 * (publishing its frames to note_frame), then is SIGKILLed there. Returns
 * 1 when it stopped there, 0 when it finished without reaching it.
 */
static int kill_acquirer_at(const char *point, uint64_t nth, const char *label)
{
	int st, stopped;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct orbit_lock_options o = opts();
		orbit_lock_owner_t ow = { "child", 5 };
		orbit_lock_key_t k = key_of(label);
		struct orbit_lock_lease ls;
		orbit_lock_t *l;
		static int ctx;

		if (orbit_lock_open(&o, &l) || orbit__lock_set_sink(l, note_frame, &ctx))
			_exit(10);
		orbit__crashpoint_arm(point, nth, ORBIT_CRASH_STOP);
		if (orbit_lock_try_acquire(l, &k, &ow, CHILD_TTL_NS, &ls, NULL) == 0)
			note_token(ls.token);
		_exit(0);
	}
	stopped = wait_stop(pid, &st);
	assert_true(stopped >= 0);
	if (stopped == 1)
		kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	if (stopped == 0)
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return stopped;
}

/* The parent's sink: the smallest revision of its change frames (REPAIR frames aside). */
static uint64_t parent_min_rev;

static void note_parent_frame(void *ctx, const struct orbit_transition *t)
{
	(void)ctx;
	if (t->type != ORBIT_TRANSITION_REPAIR && t->state_revision < parent_min_rev)
		parent_min_rev = t->state_revision;
}

/*
 * After the kills: the parent's next mutation repairs (and may reclaim
 * what a dead sweeper left); nothing torn, a larger token, and every
 * change it publishes carries a revision above all a dead mutator's frames
 * carried: never one a consumer already saw.
 */
static void expect_repaired(const char *after)
{
	orbit_lock_key_t probe = key_of("probe");
	orbit_lock_owner_t parent = { "parent", 6 };
	struct orbit_lock_lease ls;
	struct orbit_lock_entry e;
	static int ctx;
	char why[160];

	parent_min_rev = UINT64_MAX;
	assert_int_equal(orbit__lock_set_sink(P, note_parent_frame, &ctx), 0);
	assert_int_equal(orbit_lock_try_acquire(P, &probe, &parent, 1000000000, &ls, NULL), 0);
	assert_int_equal(orbit__lock_set_sink(P, NULL, &ctx), 0);
	assert_true(ls.token > atomic_load(&sh->max_token));
	if (parent_min_rev <= atomic_load(&sh->max_rev))
		fail_msg("after a kill at %s: a change after the repair has revision %lu, a dead "
			 "mutator published %lu",
			 after, (unsigned long)parent_min_rev,
			 (unsigned long)atomic_load(&sh->max_rev));
	assert_int_equal(orbit_lock_release(P, &probe, &parent, ls.token), 0);
	if (orbit__lock_table_check(P, why, sizeof(why)))
		fail_msg("after a kill at %s: %s", after, why);
	assert_int_equal(orbit_lock_lookup(P, &probe, &e), -ENOENT);
}

/*
 * A mutator killed while it rebuilds the control bytes (a probe met a byte
 * no writer stores, 0x05, at its key's home): move_seq is left odd, so
 * lookups answer -EAGAIN, and the bytes half rebuilt. The next mutator's
 * repair makes move_seq even and rebuilds every byte: the checker finds
 * nothing, lookups answer again, the next token is larger.
 */
static void kill_mid_rebuild(enum orbit_lock_serializer s)
{
	orbit_lock_key_t k = key_of("rebuild-key"), filler = key_of("filler0");
	struct orbit_lock_entry e;
	uint32_t home;

	open_fleet(s);
	atomic_store(&sh->max_token, 0);
	atomic_store(&sh->max_rev, 0);
	home = (uint32_t)orbit__lock_hash(&k) & (SLOTS - 1);
	assert_int_equal(ctrl_byte(P, home, -1), 0u); /* a free home... */
	ctrl_byte(P, home, 0x05);		      /* ...with a byte no writer stores */
	assert_int_equal(kill_acquirer_at("lock.rebuild_mid", 1, "rebuild-key"), 1);
	assert_true(atomic_load(&orbit__lock_hdr(P)->move_seq) & 1u);
	assert_int_equal(orbit_lock_lookup(P, &filler, &e), -EAGAIN); /* before the repair */
	expect_repaired("lock.rebuild_mid");
	assert_int_equal(orbit_lock_lookup(P, &filler, &e), 0);
	assert_int_equal(orbit_lock_lookup(P, &k, &e), -ENOENT); /* the dead child never had it */
	close_fleet();
}

/* Killed mid-rebuild of the control bytes, FUTEX: repaired by the next mutator. */
static void test_kill_mid_rebuild_futex(void **state)
{
	kill_mid_rebuild(ORBIT_LOCK_SERIALIZER_FUTEX);
}

/* Killed mid-rebuild of the control bytes, FLOCK: repaired by the next mutator. */
static void test_kill_mid_rebuild_flock(void **state)
{
	kill_mid_rebuild(ORBIT_LOCK_SERIALIZER_FLOCK);
}

/*
 * A sweep of expired entries publishes each RECLAIM frame before its
 * commit: a mutator killed between the two (lock.reclaim_after_publish)
 * left a frame carrying state_revision + 1 for a change that never
 * happened. The repair burns that revision; a repairer killed after its
 * REPAIR frame but before burning it (lock.repair_after_publish) leaves
 * it unburnt again, for the next repair. The parent's next change must
 * carry a revision above every one the dead children published, the
 * table must check clean, the expired entry end reclaimed.
 */
static void kill_in_sweep_then_in_repair(enum orbit_lock_serializer s)
{
	orbit_lock_key_t ek = key_of("expiring");
	orbit_lock_owner_t parent = { "parent", 6 };
	struct orbit_lock_entry e;

	open_fleet(s);
	atomic_store(&sh->max_token, 0);
	atomic_store(&sh->max_rev, 0);
	assert_int_equal(orbit_lock_try_acquire(P, &ek, &parent, 1000000, NULL, NULL), 0);
	usleep(5000); /* expired: the next mutation's sweep reclaims it */
	assert_int_equal(kill_acquirer_at("lock.reclaim_after_publish", 1, "sweeper"), 1);
	assert_true(atomic_load(&sh->max_rev) > 0); /* its RECLAIM frame */
	assert_int_equal(kill_acquirer_at("lock.repair_after_publish", 1, "repairer"), 1);
	expect_repaired("lock.reclaim_after_publish, then lock.repair_after_publish");
	assert_int_equal(orbit_lock_lookup(P, &ek, &e), -ENOENT);
	close_fleet();
}

/* Killed inside a sweep's reclaim, then inside the repair, FUTEX. */
static void test_kill_in_sweep_and_repair_revision_burnt_futex(void **state)
{
	kill_in_sweep_then_in_repair(ORBIT_LOCK_SERIALIZER_FUTEX);
}

/* Killed inside a sweep's reclaim, then inside the repair, FLOCK. */
static void test_kill_in_sweep_and_repair_revision_burnt_flock(void **state)
{
	kill_in_sweep_then_in_repair(ORBIT_LOCK_SERIALIZER_FLOCK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kill_at_named_points_futex),
		cmocka_unit_test(test_kill_at_named_points_flock),
		cmocka_unit_test(test_kill_at_random_points_futex),
		cmocka_unit_test(test_kill_at_random_points_flock),
		cmocka_unit_test(test_kill_holder_key_free_after_ttl),
		cmocka_unit_test(test_kill_mid_rebuild_futex),
		cmocka_unit_test(test_kill_mid_rebuild_flock),
		cmocka_unit_test(test_kill_in_sweep_and_repair_revision_burnt_futex),
		cmocka_unit_test(test_kill_in_sweep_and_repair_revision_burnt_flock),
		cmocka_unit_test_teardown(test_stopped_holder_bounded_wait_futex,
					  reap_scenario_child),
		cmocka_unit_test_teardown(test_stopped_holder_bounded_wait_flock,
					  reap_scenario_child),
	};

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	return cmocka_run_group_tests_name("lock_kill", tests, NULL, NULL);
}
