// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_base.c: the base/ helpers. orbit__opts_copy() follows the
 * kernel's copy_struct_from_user() rule: a smaller struct is zero-filled, a
 * larger one is accepted only when its unknown tail is zero (-E2BIG
 * otherwise), a size below the size field alone is -EINVAL.
 */
#include "config.h"

#include "orbit_test.h"
#include <errno.h>

#include "base/die.h"
#include "base/hash.h"
#include "base/options.h"
#include "base/time.h"
#include "base/tsc.h"
#include "shm/lock_internal.h"
#include "shm/segment.h"

/*
 * "Our" version of a struct, and an older (v0) and a newer (v2) one. Each
 * version's fields start at or past the previous version's sizeof, never
 * in its tail padding (base/options.h): v0 has none.
 */
struct opts_v1 {
	size_t size;
	int64_t a;
	unsigned b;
	const char *c;
};

struct opts_v0 {
	size_t size;
	int64_t a;
};

struct opts_v2 {
	size_t size;
	int64_t a;
	unsigned b;
	const char *c;
	uint64_t d; /* unknown to v1 */
	uint32_t e; /* unknown to v1 */
};

static void test_opts_smaller_is_zero_filled(void **state)
{
	struct opts_v0 old = { .size = sizeof(old), .a = 7 };
	struct opts_v1 ours;

	(void)state;
	memset(&ours, 0xa5, sizeof(ours)); /* poisoned: zero-fill must be real */
	assert_int_equal(ORBIT__OPTS_COPY(&ours, &old), 0);
	assert_int_equal(ours.size, sizeof(ours)); /* now ours */
	assert_int_equal(ours.a, 7);
	assert_int_equal(ours.b, 0); /* not in the caller's struct: zero (default) */
	assert_null(ours.c);
}

static void test_opts_same_size_copies_all(void **state)
{
	struct opts_v1 in = { .size = sizeof(in), .a = -3, .b = 9, .c = "x" };
	struct opts_v1 ours;

	(void)state;
	memset(&ours, 0xa5, sizeof(ours));
	assert_int_equal(ORBIT__OPTS_COPY(&ours, &in), 0);
	assert_int_equal(ours.a, -3);
	assert_int_equal(ours.b, 9);
	assert_ptr_equal(ours.c, in.c);
}

static void test_opts_larger_with_zero_tail_is_accepted(void **state)
{
	struct opts_v2 newer;
	struct opts_v1 ours;

	(void)state;
	memset(&ours, 0xa5, sizeof(ours));
	memset(&newer, 0, sizeof(newer)); /* padding too: the tail is all zero */
	newer.size = sizeof(newer);
	newer.a = 5;
	newer.b = 6;
	assert_int_equal(orbit__opts_copy(&ours, sizeof(ours), &newer, newer.size), 0);
	assert_int_equal(ours.size, sizeof(ours));
	assert_int_equal(ours.a, 5);
	assert_int_equal(ours.b, 6);
}

static void test_opts_larger_with_nonzero_tail_is_e2big(void **state)
{
	struct opts_v2 newer;
	struct opts_v1 ours;

	(void)state;
	memset(&ours, 0xa5, sizeof(ours));
	memset(&newer, 0, sizeof(newer));
	newer.size = sizeof(newer);
	newer.e = 1; /* the last byte we do not know is set */
	assert_int_equal(orbit__opts_copy(&ours, sizeof(ours), &newer, newer.size), -E2BIG);
	newer.e = 0;
	newer.d = 1ull << 63; /* the first one */
	assert_int_equal(orbit__opts_copy(&ours, sizeof(ours), &newer, newer.size), -E2BIG);
	/* Failure leaves nothing of the caller's struct behind. */
	assert_int_equal(ours.size, 0);
	/* One byte past ours, the rest not even claimed: still checked. */
	newer.d = 0;
	((unsigned char *)&newer)[sizeof(ours)] = 1;
	assert_int_equal(orbit__opts_copy(&ours, sizeof(ours), &newer, sizeof(ours) + 1), -E2BIG);
	assert_int_equal(orbit__opts_copy(&ours, sizeof(ours), &newer, sizeof(ours)), 0);
}

static void test_opts_too_small_is_einval(void **state)
{
	struct opts_v1 in = { .size = 0, .a = 1 };
	struct opts_v1 ours;

	(void)state;
	memset(&ours, 0xa5, sizeof(ours));
	assert_int_equal(ORBIT__OPTS_COPY(&ours, &in), -EINVAL);
	in.size = sizeof(size_t) - 1;
	assert_int_equal(ORBIT__OPTS_COPY(&ours, &in), -EINVAL);
	/* The size field alone is the first version: every field defaulted. */
	in.size = sizeof(size_t);
	assert_int_equal(ORBIT__OPTS_COPY(&ours, &in), 0);
	assert_int_equal(ours.a, 0);
}

/*
 * orbit__die (liburcu's urcu_die): a broken invariant aborts with one line
 * on stderr naming file, line, function, what failed and the error.
 */
static void test_die_names_place_call_and_error(void **state)
{
	char buf[512], want[64];
	int fds[2], st, line = 0;
	ssize_t n, got = 0;
	pid_t pid;

	(void)state;
	orbit__die_on(0, "not an error"); /* 0: returns */
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], STDERR_FILENO);
		line = __LINE__ + 1;
		orbit__die_on(EBUSY, "pthread_mutex_lock(test)");
		_exit(0); /* not reached */
	}
	line = __LINE__ - 3;
	close(fds[1]);
	while ((n = read(fds[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	close(fds[0]);
	buf[got] = '\0';
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGABRT);
	snprintf(want, sizeof(want), "test_base.c:%d (test_die_names_place_call_and_error)", line);
	if (!strstr(buf, want))
		fail_msg("no \"%s\" in \"%s\"", want, buf);
	assert_non_null(strstr(buf, "pthread_mutex_lock(test)"));
	assert_non_null(strstr(buf, strerror(EBUSY)));
	assert_non_null(strstr(buf, "(16)"));
}

/* base/time.h: ns <-> timespec, the carry into tv_sec, deadlines ahead of now. */
static void test_time_add_carries_and_deadline_is_ahead(void **state)
{
	struct timespec ts = { .tv_sec = 5, .tv_nsec = 999999999 }, dl;
	uint64_t before;

	(void)state;
	assert_int_equal(orbit__timespec_ns(&ts), 5999999999ull);
	orbit__timespec_add_ns(&ts, 1);
	assert_int_equal(ts.tv_sec, 6);
	assert_int_equal(ts.tv_nsec, 0);
	orbit__timespec_add_ns(&ts, 2500000001ull); /* whole seconds and a rest */
	assert_int_equal(ts.tv_sec, 8);
	assert_int_equal(ts.tv_nsec, 500000001);
	orbit__timespec_add_ns(&ts, 499999999ull); /* exactly to the next second */
	assert_int_equal(ts.tv_sec, 9);
	assert_int_equal(ts.tv_nsec, 0);
	before = orbit__clock_ns(CLOCK_MONOTONIC);
	orbit__deadline_after_ns(&dl, CLOCK_MONOTONIC, 3000000000ull);
	assert_true(dl.tv_nsec >= 0 && dl.tv_nsec < 1000000000);
	assert_true(orbit__timespec_ns(&dl) >= before + 3000000000ull);
	assert_true(orbit__timespec_ns(&dl) < orbit__clock_ns(CLOCK_MONOTONIC) + 3000000000ull + 1);
}

static uint64_t tsc_start; /* the counter of the last tsc_stamp() */

/* One stamp as lib/serial_queue.c's slice_begin() takes it. */
static uint64_t tsc_stamp(uint64_t budget_ns, uint64_t *now)
{
	uint64_t t0 = orbit__tsc_now(), t1;

	*now = orbit__clock_ns(CLOCK_MONOTONIC);
	t1 = orbit__tsc_now();
	tsc_start = t0;
	return orbit__tsc_mark(t0, *now, t1, budget_ns);
}

/* Stamps until this thread has measured the counter (2 s at most): a
 * 1 ms mark, or 0 where the counter is not usable. */
static uint64_t tsc_calibrated(uint64_t *now)
{
	uint64_t start = orbit__clock_ns(CLOCK_MONOTONIC), mark = tsc_stamp(1000000, now);

	while (!mark && orbit__clock_ns(CLOCK_MONOTONIC) - start < 2000000000ull)
		mark = tsc_stamp(1000000, now);
	return mark;
}

/*
 * base/tsc.h: no mark before this thread measured the counter (or where
 * it is not usable: then the test ends there), never one for a budget
 * of 0, and a mark is never passed late: while the counter is below it,
 * less than the budget has passed on CLOCK_MONOTONIC (checked over 200
 * budgets of 1 ms); and it is no later than the budget itself by the
 * clock, so a pre-check saves reads without ever deciding past it.
 */
static void test_tsc_mark_never_outlasts_the_budget(void **state)
{
	uint64_t now, mark, saw = 0;

	(void)state;
	assert_int_equal(tsc_stamp(0, &now), 0);
	/* the first good pair starts the measurement: no mark yet */
	mark = tsc_calibrated(&now);
	if (!mark) {
		print_message("no tsc clocksource here: every mark is 0 (the clock decides)\n");
		assert_true(orbit__tsc_ticks_per_ns() == 0);
		return;
	}
	assert_true(orbit__tsc_ticks_per_ns() > 0.05 && orbit__tsc_ticks_per_ns() < 100);
	assert_int_equal(tsc_stamp(0, &now), 0);
	for (int i = 0; i < 200; i++) {
		uint64_t before = 0;

		mark = tsc_stamp(1000000, &now);
		assert_true(mark != 0);
		for (;;) {
			/* the clock first: when the counter then says "before",
			 * at least this much had passed (a preemption between
			 * the two reads only moves the counter's read later) */
			uint64_t c = orbit__clock_ns(CLOCK_MONOTONIC) - now;

			if (!orbit__tsc_before(tsc_start, mark))
				break;
			assert_true(c < 1000000);
			before = c;
		}
		saw = before > saw ? before : saw;
	}
	print_message("latest clock reading still before a 1 ms mark: %llu ns\n",
		      (unsigned long long)saw);
	assert_true(saw > 0);
}

/*
 * base/tsc.h: a counter below the slice's start counter (a reset, a jump
 * back, a CPU whose counter lags) is not "before the mark": the clock
 * decides. A start far ahead of the counter now, with its mark further
 * still, says "read the clock"; the same span around now says "before".
 * Needs no measurement (orbit__tsc_before() is arithmetic on the counter).
 */
static void test_tsc_counter_below_the_start_reads_the_clock(void **state)
{
	uint64_t now;

	(void)state;
	now = orbit__tsc_now();
	if (!now) {
		print_message("no time stamp counter here\n");
		return;
	}
	assert_true(orbit__tsc_before(now, now + (1ull << 40)));
	assert_false(orbit__tsc_before(now + (1ull << 40), now + (2ull << 40)));
	assert_false(orbit__tsc_before(now, 0));
}

/*
 * base/tsc.h: the check at the first clock read past a mark drops a
 * measurement the clock shows wrong, and keeps one it shows right. Right:
 * the counter's ticks since the start cover the clock's time at the
 * measured frequency. Wrong: 10 ms by the clock with (nearly) no ticks,
 * as a frequency measured over 2x too high would show; the thread's
 * marks are then 0 until it measures again.
 */
static void test_tsc_check_drops_a_frequency_the_clock_shows_wrong(void **state)
{
	uint64_t now, mark, t;
	double f;

	(void)state;
	mark = tsc_calibrated(&now);
	if (!mark) {
		print_message("no tsc clocksource here: every mark is 0 (the clock decides)\n");
		return;
	}
	f = orbit__tsc_ticks_per_ns();
	/* right: the start 1 ms of ticks ago, 1 ms by the clock */
	t = orbit__tsc_now();
	orbit__tsc_check(t - (uint64_t)(1000000.0 * f), 1000000);
	assert_true(orbit__tsc_ticks_per_ns() == f);
	/* wrong: 10 ms by the clock, the counter's ticks since the start a few */
	orbit__tsc_check(orbit__tsc_now(), 10000000);
	assert_true(orbit__tsc_ticks_per_ns() == 0);
	assert_int_equal(tsc_stamp(1000000, &now), 0);
	/* measured again over the next stamps */
	assert_true(tsc_calibrated(&now) != 0);
}

/*
 * base/tsc.h: a measurement whose two stamps saw CLOCK_BOOTTIME move
 * away from CLOCK_MONOTONIC (a suspend between them, the counter going
 * on) is not used: replayed through orbit__tsc_mark_at(), 3 ms awake and
 * 12 ms suspended with the counter at 3 ticks/ns (a frequency 5x too
 * high if it were used) gives no mark; the same pair without the
 * suspend, or a next pair after it, does, at the right frequency.
 */
static void test_tsc_measurement_across_a_suspend_is_not_used(void **state)
{
	const uint64_t t0 = 1000000000ull, n0 = 5000000000ull, b0 = 7000000000ull;
	uint64_t now, mark;

	(void)state;
	if (!tsc_calibrated(&now)) {
		print_message("no tsc clocksource here: every mark is 0 (the clock decides)\n");
		return;
	}
	orbit__tsc_check(orbit__tsc_now(), 10000000); /* drop this thread's measurement */
	assert_true(orbit__tsc_ticks_per_ns() == 0);
	/* the first pair: no mark */
	assert_int_equal(orbit__tsc_mark_at(t0, n0, b0, t0 + 100, 1000000), 0);
	/* 3 ms awake, 12 ms suspended: 45e6 ticks, 3 ms monotonic, 15 ms boottime */
	assert_int_equal(
	    orbit__tsc_mark_at(t0 + 45000000, n0 + 3000000, b0 + 15000000, t0 + 45000100, 1000000),
	    0);
	assert_true(orbit__tsc_ticks_per_ns() == 0);
	/* from that pair on, 3 ms awake with nothing suspended: 3 ticks/ns */
	mark = orbit__tsc_mark_at(t0 + 54000000, n0 + 6000000, b0 + 18000000, t0 + 54000100,
				  1000000);
	assert_true(mark == t0 + 54000000 + 1500000);
	assert_true(orbit__tsc_ticks_per_ns() == 3.0);
	orbit__tsc_check(orbit__tsc_now(), 10000000); /* the next test measures for real */
}

/*
 * base/hash.h: the published FNV-1a 64 vectors and MurmurHash3 fmix64; and
 * the values of every SHM-visible hash, pinned (the lock's probe hash
 * places slots, the fingerprints are in segment headers: a change is a
 * layout change, as the lock's in its table layout version 4).
 */
static void test_hash_vectors_and_layout_values_unchanged(void **state)
{
	orbit_lock_key_t k = { "runtime.tasks.pool", 18, "worker-3", 8 };
	orbit_lock_key_t k2 = { "ns", 2, "abcdefghijk", 11 };
	orbit_lock_key_t k3 = { "ab", 2, "xyz", 3 }, k4 = { "", 0, "q", 1 };
	uint64_t w[] = { 1, 228, 0xdeadbeefcafef00dull, 7 };

	(void)state;
	assert_int_equal(orbit__fnv1a64(ORBIT__FNV64_BASIS, "", 0), 0xcbf29ce484222325ull);
	assert_int_equal(orbit__fnv1a64(ORBIT__FNV64_BASIS, "a", 1), 0xaf63dc4c8601ec8cull);
	assert_int_equal(orbit__fnv1a64(ORBIT__FNV64_BASIS, "foobar", 6), 0x85944171f73967e8ull);
	assert_int_equal(orbit__fnv1a64_str(ORBIT__FNV64_BASIS, "foobar"), 0x85944171f73967e8ull);
	assert_int_equal(orbit__fmix64(0), 0);
	assert_int_equal(orbit__fmix64(1), 0xb456bcfc34c2cb2cull);
	assert_int_equal(orbit__fmix64(0x123456789abcdef0ull), 0x18b8c062f6f42398ull);
	/* lock table layout version 4: wyhash's multiply-fold per part, then
	 * of both (version 3: 0x0f7a7a9484852ef4, 0xed3830aef0737ddd; the
	 * withdrawn one-fold version 5: 0xc011174c981f5ca0, 0x2d8dcaed4b6df432) */
	assert_int_equal(orbit__lock_hash(&k), 0x917159c6ac331e85ull);
	assert_int_equal(orbit__lock_hash(&k2), 0x40a2b4f13cb7f9c6ull);
	/* parts of 0-3 bytes (first, middle and last byte; none) */
	assert_int_equal(orbit__lock_hash(&k3), 0x3a8da2074353b4efull);
	assert_int_equal(orbit__lock_hash(&k4), 0xea60dc98888fcfa8ull);
	assert_int_equal(orbit__seg_fingerprint(w, 4), 0xa4e7d3b240a61710ull);
}

/*
 * The lock hash keeps the boundary between namespace and label: one byte
 * string split two ways, and one namespace with labels of 8 and 9 bytes
 * whose extra byte a data word could cancel, hash apart. The one-fold
 * version 5 XORed both lengths into the word that also carried namespace
 * word 2 ^ label word 1, and each of these pairs shared its whole 64-bit
 * hash (same home, same tag). Fails on that hash (main before this
 * change): all four pairs collided.
 */
static void test_lock_hash_keeps_part_boundaries_apart(void **state)
{
	static const orbit_lock_key_t pairs[][2] = {
		/* "00000110000": split 8|3 and 9|2 */
		{ { "00000110", 8, "000", 3 }, { "000001100", 9, "00", 2 } },
		/* "0000000110": split 2|9 and 3|8 */
		{ { "00", 2, "000001100", 9 }, { "000", 3, "00001100", 8 } },
		/* one namespace, labels of 8 and 9 bytes */
		{ { "ns", 2, "AAAA@@@@", 8 }, { "ns", 2, "AAAAA@@@@", 9 } },
		/* same lengths, bytes differing in both parts */
		{ { "AAAAAAAA", 8, "BBBBBBBB", 8 }, { "@AAA@AAA", 8, "CBBBCBBB", 8 } },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		if (orbit__lock_hash(&pairs[i][0]) == orbit__lock_hash(&pairs[i][1]))
			fail_msg("(\"%.*s\",\"%.*s\") and (\"%.*s\",\"%.*s\") share hash %#llx",
				 (int)pairs[i][0].ns_len, (const char *)pairs[i][0].ns,
				 (int)pairs[i][0].label_len, (const char *)pairs[i][0].label,
				 (int)pairs[i][1].ns_len, (const char *)pairs[i][1].ns,
				 (int)pairs[i][1].label_len, (const char *)pairs[i][1].label,
				 (unsigned long long)orbit__lock_hash(&pairs[i][0]));
}

/*
 * Ids carried by namespace and label alike ("host-017" / "disk-017")
 * spread over the homes of a 256-slot table: 192 keys on at least 110
 * distinct homes (a uniform hash: ~136 +- 6; version 4: 132). The
 * one-fold version 5 let the label's first word cancel the namespace's
 * second and put them on 72. Fails on that hash (main before this change).
 */
static void test_lock_hash_spreads_shared_ids(void **state)
{
	unsigned char seen[256] = { 0 };
	unsigned distinct = 0;
	char ns[16], lab[16];

	(void)state;
	for (int i = 0; i < 192; i++) {
		snprintf(ns, sizeof(ns), "host-%03d", i);
		snprintf(lab, sizeof(lab), "disk-%03d", i);
		orbit_lock_key_t k = { ns, strlen(ns), lab, strlen(lab) };
		unsigned h = (unsigned)orbit__lock_hash(&k) & 255u;

		distinct += !seen[h];
		seen[h] = 1;
	}
	if (distinct < 110)
		fail_msg("192 keys host-NNN/disk-NNN on %u of 256 homes (uniform ~136)", distinct);
}

/*
 * The fingerprint's hash word covers every branch of the key hash: keys
 * with parts of 0/1/2/3/5/8/11/17/33 bytes, as namespace and as label, so
 * a peer hashing any length class differently gets another fingerprint
 * and is refused (two builds that once said layout 5 differed only in
 * the 1-3 byte branch and shared the one-key fingerprint). The value is
 * pinned as the hashes above are. Mutations, each failed this test: the
 * 1-3 byte branch gathering b[0] for b[n >> 1]; the 0-byte branch's
 * a = 1; the >16 branch's fold seeded with HK2 for HK1; and with the old
 * one-key word (key_hash("orbit", 5, "fingerprint", 11)) the first of
 * them left that word unchanged.
 */
static void test_lock_fingerprint_covers_every_hash_branch(void **state)
{
	(void)state;
	assert_int_equal(orbit__lock_hash_probe(), 0x6b6ce7f4aa8f674cull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opts_smaller_is_zero_filled),
		cmocka_unit_test(test_opts_same_size_copies_all),
		cmocka_unit_test(test_opts_larger_with_zero_tail_is_accepted),
		cmocka_unit_test(test_opts_larger_with_nonzero_tail_is_e2big),
		cmocka_unit_test(test_opts_too_small_is_einval),
		cmocka_unit_test(test_die_names_place_call_and_error),
		cmocka_unit_test(test_time_add_carries_and_deadline_is_ahead),
		cmocka_unit_test(test_tsc_mark_never_outlasts_the_budget),
		cmocka_unit_test(test_tsc_counter_below_the_start_reads_the_clock),
		cmocka_unit_test(test_tsc_check_drops_a_frequency_the_clock_shows_wrong),
		cmocka_unit_test(test_tsc_measurement_across_a_suspend_is_not_used),
		cmocka_unit_test(test_hash_vectors_and_layout_values_unchanged),
		cmocka_unit_test(test_lock_hash_keeps_part_boundaries_apart),
		cmocka_unit_test(test_lock_hash_spreads_shared_ids),
		cmocka_unit_test(test_lock_fingerprint_covers_every_hash_branch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
