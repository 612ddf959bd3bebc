// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_lock_fuzz.c: a lock table segment filled with random
 * bytes never crashes an opener or a lookup (DESIGN.md "The fleet and its
 * segments": SHM contents are untrusted input). Random bytes go over the
 * whole segment, over the body only, over the slots only (raw and
 * "plausible" slots with valid-looking states and lengths, lease flags
 * and member words); every call must return one of its documented codes,
 * the agent's dead-holder sweep (orbit__lock_free_dead) too. Meant to run
 * under ASan too.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/stat.h>

#include <orbit/orbit.h>

#include "orbit_test.h"
#include "shm/lock_internal.h"
#include "shm/members.h"

static char fleet[64];
static char path[128];
static unsigned seed = 4242;

static struct orbit_lock_options opts(void)
{
	struct orbit_lock_options o = { .size = sizeof(o), .fleet = fleet, .init_timeout_ms = 20 };
	return o;
}

static void fresh(void)
{
	struct orbit_lock_options o;
	orbit_lock_t *l;

	orbit_test_fleet(fleet, sizeof(fleet), "fz");
	o = opts();
	assert_int_equal(orbit_lock_open(&o, &l), 0);
	orbit_lock_close(l);
	snprintf(path, sizeof(path), "/dev/shm/orbit.%s.lock-228", fleet);
}

static void scribble(off_t from, off_t to, bool plausible)
{
	int fd = open(path, O_RDWR);
	struct stat st;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	if (to == 0)
		to = st.st_size;
	for (off_t off = from; off < to; off += 1024) {
		uint8_t buf[1024];
		size_t n = (size_t)(to - off < 1024 ? to - off : 1024);
		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)rand_r(&seed);
		if (plausible && n == 1024) {
			struct orbit_lock_slot *s = (void *)buf;
			s->seq = (uint32_t)rand_r(&seed) % 8;	/* even or odd */
			s->state = (uint32_t)rand_r(&seed) % 4; /* 3 is invalid */
			s->ns_len = (uint16_t)(rand_r(&seed) % 20);
			s->label_len = (uint16_t)(rand_r(&seed) % 6);
			s->owner_len = (uint16_t)(rand_r(&seed) % (rand_r(&seed) % 8 ? 8 : 2000));
			s->hash = (uint32_t)rand_r(&seed) % 4; /* collide with the probed keys */
			/* lease flags and member words: mostly FREE_ON_DEATH, rows in range or not */
			s->flags = (uint16_t)(rand_r(&seed) % 4);
			s->holder_row = (uint32_t)rand_r(&seed) % 80;
			s->holder_gen = (uint32_t)rand_r(&seed) % 3;
		}
		assert_int_equal(pwrite(fd, buf, n, off), (ssize_t)n);
	}
	close(fd);
}

static bool open_code_documented(int rc)
{
	return rc == -ORBIT_EMAGIC || rc == -ORBIT_EVERSION || rc == -ORBIT_EKIND ||
	       rc == -ORBIT_ESIZE || rc == -ORBIT_EFINGERPRINT || rc == -ORBIT_ECORRUPT ||
	       rc == -ORBIT_EINITTIMEOUT;
}

static void lookups(orbit_lock_t *l)
{
	struct orbit_lock_entry e;
	char lab[8];

	for (int i = 0; i < 64; i++) {
		snprintf(lab, sizeof(lab), "%d", i % 8);
		orbit_lock_key_t k = { "", 0, lab, strlen(lab) };
		int rc = orbit_lock_lookup(l, &k, &e);
		if (rc != 0 && rc != -ENOENT && rc != -EAGAIN && rc != -ORBIT_ECORRUPT)
			fail_msg("lookup returned undocumented %d", rc);
		if (rc == 0)
			assert_true((unsigned)e.ns_len + e.label_len + e.owner_len <=
				    ORBIT_LOCK_BYTES_MAX);
	}
	int n = orbit_lock_foreach(l, NULL, NULL);
	assert_int_equal(n, -EINVAL);
}

/* ctx: int[2] = { entries seen, entries whose lengths lie } */
static int count(const struct orbit_lock_entry *e, void *ctx)
{
	int *c = ctx;

	c[0]++;
	c[1] += (unsigned)e->ns_len + e->label_len + e->owner_len > ORBIT_LOCK_BYTES_MAX;
	return 0;
}

static void unlink_fleet(void)
{
	struct orbit_lock_options o = opts();
	orbit_lock_unlink(&o);
}

/* Random bytes over the whole segment (header included): open fails with a named code. */
static void test_fuzz_random_segment_open_fails_cleanly(void **state)
{
	for (int round = 0; round < (orbit_test_long() ? 2000 : 100); round++) {
		struct orbit_lock_options o;
		orbit_lock_t *l;
		int rc;

		fresh();
		scribble(0, 0, false);
		o = opts();
		rc = orbit_lock_open(&o, &l);
		if (!open_code_documented(rc))
			fail_msg("round %d: open returned %d", round, rc);
		unlink_fleet();
	}
}

/* A valid segment header over a random body: the table header check refuses it. */
static void test_fuzz_random_body_open_ecorrupt(void **state)
{
	for (int round = 0; round < (orbit_test_long() ? 2000 : 100); round++) {
		struct orbit_lock_options o;
		orbit_lock_t *l;
		int rc;

		fresh();
		scribble(128, 0, false);
		o = opts();
		rc = orbit_lock_open(&o, &l);
		if (rc != -ORBIT_ECORRUPT)
			fail_msg("round %d: open returned %d", round, rc);
		unlink_fleet();
	}
}

/* Valid headers over random (raw and plausible) slots: lookups get documented codes. */
static void test_fuzz_random_slots_lookup_documented_codes(void **state)
{
	for (int round = 0; round < (orbit_test_long() ? 2000 : 100); round++) {
		struct orbit_lock_options o;
		orbit_lock_t *l;
		int c[2] = { 0, 0 }, rc;

		fresh();
		scribble(128 + 512, 0, round % 4 != 0);
		o = opts();
		assert_int_equal(orbit_lock_open(&o, &l), 0);
		lookups(l);
		rc = orbit_lock_foreach(l, count, c);
		assert_true(rc == c[0] || rc == -EAGAIN); /* the count of entries handed out */
		assert_int_equal(c[1], 0);		  /* never an entry with lying lengths */
		/* a mutation clears what it cannot trust and keeps working */
		orbit_lock_key_t k = { "", 0, "1", 1 };
		orbit_lock_owner_t ow = { "me", 2 };
		rc = orbit_lock_try_acquire(l, &k, &ow, 1000000000, NULL, NULL);
		assert_true(rc == 0 || rc == -EBUSY || rc == -ENOSPC);
		lookups(l);
		/* the sweep reads flags and member words: proofs fail or entries go */
		orbit_members_t *m;
		assert_int_equal(orbit__members_open(&m, fleet, 0, NULL), 0);
		rc = orbit__lock_free_dead(l, m);
		assert_true(rc >= 0 || rc == -EAGAIN);
		lookups(l);
		orbit__members_close(m);
		orbit__members_unlink(fleet);
		orbit_lock_close(l);
		unlink_fleet();
	}
}

/*
 * Random bytes over the table header's mutation words (next_token,
 * state_revision, move_seq, dirty_pid, tombstones, repairs) behind a valid
 * magic, no mutator dead: lookups stay bounded (documented codes, -EAGAIN
 * at worst), and the next mutation repairs what it can validate (an odd
 * move_seq, a tombstone count above the slot count), after which a miss
 * answers -ENOENT again. The robust mutex bytes (next line) are left
 * alone: a scribbled pthread mutex can hang mutators, a known limit of
 * the FUTEX serializer (the FLOCK serializer keeps no lock state in SHM).
 */
static void test_fuzz_header_words_repaired_by_next_mutation(void **state)
{
	const off_t words = 128 + offsetof(struct orbit_lock_table_hdr, next_token);
	const off_t words_end = 128 + offsetof(struct orbit_lock_table_hdr, mutex);

	for (int round = 0; round < (orbit_test_long() ? 2000 : 100); round++) {
		orbit_lock_key_t k = { "", 0, "1", 1 }, miss = { "", 0, "absent", 6 };
		orbit_lock_owner_t ow = { "me", 2 };
		struct orbit_lock_options o;
		struct orbit_lock_entry e;
		char why[160];
		orbit_lock_t *l;
		int rc;

		fresh();
		scribble(words, words_end, false);
		o = opts();
		assert_int_equal(orbit_lock_open(&o, &l), 0);
		/* bounded: an odd move_seq costs a lookup its whole spin budget */
		rc = orbit_lock_lookup(l, &miss, &e);
		if (rc != -ENOENT && rc != -EAGAIN)
			fail_msg("round %d: lookup returned undocumented %d", round, rc);
		rc = orbit_lock_try_acquire(l, &k, &ow, 1000000000, NULL, NULL);
		if (rc != 0)
			fail_msg("round %d: acquire returned %d", round, rc);
		rc = orbit_lock_lookup(l, &miss, &e);
		if (rc != -ENOENT)
			fail_msg("round %d: a miss after the repairing mutation returned %d", round,
				 rc);
		assert_int_equal(orbit_lock_lookup(l, &k, &e), 0);
		assert_int_equal(orbit_lock_release(l, &k, &ow, 0), 0);
		if (orbit__lock_table_check(l, why, sizeof(why)))
			fail_msg("round %d: %s", round, why);
		orbit_lock_close(l);
		unlink_fleet();
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fuzz_random_segment_open_fails_cleanly),
		cmocka_unit_test(test_fuzz_random_body_open_ecorrupt),
		cmocka_unit_test(test_fuzz_random_slots_lookup_documented_codes),
		cmocka_unit_test(test_fuzz_header_words_repaired_by_next_mutation),
	};

	return cmocka_run_group_tests_name("lock_fuzz", tests, NULL, NULL);
}
