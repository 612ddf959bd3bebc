// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_registry.c: the C1 pure lookup registry (06 §4) over
 * liburcu rculfhash: add/get/remove/count and every error code, and
 * lookups racing with adds and removes (deferred free: ASan catches a
 * reader touching freed memory); threads the application registered with
 * liburcu itself; registries in forked children of a busy process.
 */
#include "config.h"

#include "orbit_test.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include <urcu/urcu-memb.h>

#include <orbit/orbit.h>

static void test_add_get_remove_count(void **state)
{
	orbit_registry_t *reg = NULL;
	char buf[32];
	uint64_t v = 0;

	assert_int_equal(orbit_registry_create(0, &reg), 0);
	assert_int_equal(orbit_registry_count(reg), 0);
	assert_int_equal(orbit_registry_add(reg, "route-a", 7, "10.0.0.1", 9), 0);
	assert_int_equal(orbit_registry_add(reg, "route-b", 7, "10.0.0.2", 9), 0);
	assert_int_equal(orbit_registry_add(reg, "route-a", 7, "other", 6), -EEXIST);
	assert_int_equal(orbit_registry_count(reg), 2);

	assert_int_equal(orbit_registry_get(reg, "route-a", 7, buf, sizeof(buf)), 9);
	assert_string_equal(buf, "10.0.0.1");
	/* Truncated copy: the full length comes back. */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(orbit_registry_get(reg, "route-b", 7, buf, 4), 9);
	assert_memory_equal(buf, "10.0", 4);
	assert_int_equal(buf[4], 0);
	/* Key is bytes, not a C string: a prefix is another key. */
	assert_int_equal(orbit_registry_get(reg, "route-a", 6, buf, sizeof(buf)), -ENOENT);

	assert_int_equal(orbit_registry_remove(reg, "route-a", 7), 0);
	assert_int_equal(orbit_registry_remove(reg, "route-a", 7), -ENOENT);
	assert_int_equal(orbit_registry_get(reg, "route-a", 7, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(orbit_registry_count(reg), 1);

	/* Empty value, binary key. */
	v = 0x0102030405060708ull;
	assert_int_equal(orbit_registry_add(reg, &v, sizeof(v), NULL, 0), 0);
	assert_int_equal(orbit_registry_get(reg, &v, sizeof(v), NULL, 0), 0);
	assert_int_equal(orbit_registry_destroy(reg), 0);
}

static void test_error_codes(void **state)
{
	orbit_registry_t *reg = NULL;
	static char big[ORBIT_REGISTRY_VALUE_MAX + 1];
	char buf[8];

	assert_int_equal(orbit_registry_create(0, NULL), -EINVAL);
	assert_int_equal(orbit_registry_create(3, &reg), -EINVAL);
	assert_int_equal(orbit_registry_create(16, &reg), 0);
	assert_int_equal(orbit_registry_add(NULL, "k", 1, "v", 1), -EINVAL);
	assert_int_equal(orbit_registry_add(reg, "k", 0, "v", 1), -EINVAL);
	assert_int_equal(orbit_registry_add(reg, NULL, 1, "v", 1), -EINVAL);
	assert_int_equal(orbit_registry_add(reg, "k", 1, NULL, 1), -EINVAL);
	assert_int_equal(orbit_registry_add(reg, big, ORBIT_REGISTRY_KEY_MAX + 1, "v", 1), -E2BIG);
	assert_int_equal(orbit_registry_add(reg, "k", 1, big, sizeof(big)), -E2BIG);
	assert_int_equal(orbit_registry_add(reg, "k", 1, big, ORBIT_REGISTRY_VALUE_MAX), 0);
	assert_int_equal(orbit_registry_get(reg, "k", 1, NULL, 4), -EINVAL);
	assert_int_equal(orbit_registry_get(reg, big, ORBIT_REGISTRY_KEY_MAX + 1, buf, 8), -E2BIG);
	assert_int_equal(orbit_registry_get_with(reg, "k", 1, NULL, NULL), -EINVAL);
	assert_int_equal(orbit_registry_get_with(reg, "x", 1, (orbit_registry_view_fn)abort, NULL),
			 -ENOENT);
	assert_int_equal(orbit_registry_remove(NULL, "k", 1), -EINVAL);
	assert_int_equal(orbit_registry_remove(reg, big, ORBIT_REGISTRY_KEY_MAX + 1), -E2BIG);
	assert_int_equal(orbit_registry_count(NULL), -EINVAL);
	assert_int_equal(orbit_registry_destroy(NULL), -EINVAL);
	assert_int_equal(orbit_registry_destroy(reg), 0);
}

/* Each value holds its key's number four times: a torn or freed read shows. */
struct val {
	uint64_t k[4];
};

struct race {
	orbit_registry_t *reg;
	atomic_bool stop;
	long bad;
	long hits;
	long views;
};

static void view_check(const void *value, size_t len, void *arg)
{
	const struct val *v = value;
	struct race *r = arg;

	if (len != sizeof(*v) || v->k[0] != v->k[1] || v->k[1] != v->k[2] || v->k[2] != v->k[3])
		r->bad++;
	r->views++;
}

static void *race_reader(void *p)
{
	struct race *r = p;
	unsigned seed = 7;

	while (!atomic_load(&r->stop)) {
		uint64_t k = (uint64_t)(rand_r(&seed) % 512);
		struct val v;
		long n = orbit_registry_get(r->reg, &k, sizeof(k), &v, sizeof(v));

		if (n == (long)sizeof(v)) {
			r->hits++;
			if (v.k[0] != k || v.k[3] != k)
				r->bad++;
		} else if (n != -ENOENT) {
			r->bad++;
		}
		orbit_registry_get_with(r->reg, &k, sizeof(k), view_check, r);
	}
	return NULL;
}

/* One random add or remove (writers and the fork test's churn). */
static void churn_once(struct race *r, unsigned *seed)
{
	uint64_t k = (uint64_t)(rand_r(seed) % 512);
	struct val v = { { k, k, k, k } };

	if (rand_r(seed) & 1)
		orbit_registry_add(r->reg, &k, sizeof(k), &v, sizeof(v));
	else
		orbit_registry_remove(r->reg, &k, sizeof(k));
}

static void *race_writer(void *p)
{
	struct race *r = p;
	unsigned seed = 11;
	long n = orbit_test_long() ? 2000000 : 200000;

	for (long i = 0; i < n; i++)
		churn_once(r, &seed);
	return NULL;
}

/* Adds and removes until r->stop (the fork test's background churn). */
static void *race_churn(void *p)
{
	struct race *r = p;
	unsigned seed = 13;

	while (!atomic_load(&r->stop))
		churn_once(r, &seed);
	return NULL;
}

/* Readers never see a torn or freed value while writers add and remove. */
static void test_concurrent_lookups_during_churn(void **state)
{
	struct race r = { 0 };
	pthread_t rd, wr[2];

	assert_int_equal(orbit_registry_create(0, &r.reg), 0);
	assert_int_equal(pthread_create(&rd, NULL, race_reader, &r), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&wr[i], NULL, race_writer, &r), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(wr[i], NULL);
	atomic_store(&r.stop, true);
	pthread_join(rd, NULL);
	assert_int_equal(r.bad, 0);
	assert_true(r.hits > 0);
	/* Quiet now: the count is exact and matches what get finds. */
	long found = 0;
	for (uint64_t k = 0; k < 512; k++)
		found += orbit_registry_get(r.reg, &k, sizeof(k), NULL, 0) >= 0;
	assert_int_equal(orbit_registry_count(r.reg), found);
	assert_int_equal(orbit_registry_destroy(r.reg), 0);
}

/*
 * Issue 9 item 5: an application thread registered with liburcu (memb,
 * what urcu.h gives) before calling orbit, even inside its own read-side
 * section, and one that registers after calling orbit, never abort in
 * liburcu (the registry registered the thread itself: "Assertion
 * '!URCU_TLS(rcu_reader).registered' failed"). Run in a child: an abort
 * is a failed exit, not a dead test binary.
 */
static void *app_registers_first(void *p)
{
	orbit_registry_t *reg = p;
	uint64_t k = 1, v = 0;
	long n;

	urcu_memb_register_thread();
	urcu_memb_read_lock();
	n = orbit_registry_get(reg, &k, sizeof(k), &v, sizeof(v));
	urcu_memb_read_unlock();
	urcu_memb_unregister_thread();
	return (void *)(intptr_t)(n == (long)sizeof(v) && v == 7 ? 0 : 1);
}

static void *app_registers_after(void *p)
{
	orbit_registry_t *reg = p;
	uint64_t k = 1, v = 0;
	long n = orbit_registry_get(reg, &k, sizeof(k), &v, sizeof(v));

	urcu_memb_register_thread();
	urcu_memb_read_lock();
	n += orbit_registry_get(reg, &k, sizeof(k), &v, sizeof(v)); /* inside the app's section */
	urcu_memb_read_unlock();
	urcu_memb_unregister_thread();
	return (void *)(intptr_t)(n == 2 * (long)sizeof(v) && v == 7 ? 0 : 1);
}

static int app_registered_threads(void *arg)
{
	orbit_registry_t *reg = NULL;
	uint64_t k = 1, v = 7;
	void *(*fns[])(void *) = { app_registers_first, app_registers_after };

	(void)arg;
	if (orbit_registry_create(0, &reg) || orbit_registry_add(reg, &k, sizeof(k), &v, sizeof(v)))
		return 2;
	for (unsigned i = 0; i < 2; i++) {
		pthread_t th;
		void *res = (void *)1;

		if (pthread_create(&th, NULL, fns[i], reg) || pthread_join(th, &res) || res)
			return 3 + (int)i;
	}
	return orbit_registry_destroy(reg) == 0 ? 0 : 6;
}

static void test_thread_registered_by_the_application(void **state)
{
	(void)state;
	assert_int_equal(orbit_test_fork_run(app_registered_threads, NULL, 10000), 0);
}

/*
 * Issue 9 item 1, the registry's part: a child forked while this process's
 * threads add, remove (deferred frees: the call_rcu thread, the resize
 * worker) and look up creates, churns and destroys a registry of its own.
 * Its destroy waits for its deferred frees (rcu_barrier): with memb and no
 * fork hooks the child's call_rcu thread was the parent's, gone, and the
 * barrier never returned. 50 children, each within 10 s.
 */
static int child_own_registry(void *arg)
{
	orbit_registry_t *reg = NULL;

	(void)arg;
	if (orbit_registry_create(0, &reg))
		return 2;
	for (uint64_t k = 0; k < 300; k++) {
		struct val v = { { k, k, k, k } };

		if (orbit_registry_add(reg, &k, sizeof(k), &v, sizeof(v)))
			return 3;
		if (k % 2 && orbit_registry_remove(reg, &k, sizeof(k)))
			return 4;
	}
	if (orbit_registry_count(reg) != 150)
		return 5;
	return orbit_registry_destroy(reg) == 0 ? 0 : 6;
}

static void test_registry_in_children_forked_amid_churn(void **state)
{
	struct race r = { 0 };
	pthread_t rd, wr;
	int n = orbit_test_long() ? 500 : 50, rc = 0, i;

	(void)state;
#ifdef ORBIT_TEST_NO_FORK_AMID_THREADS
	print_message("skipped: " ORBIT_TEST_NO_FORK_AMID_THREADS "\n");
	skip();
#endif
	assert_int_equal(orbit_registry_create(0, &r.reg), 0);
	assert_int_equal(pthread_create(&rd, NULL, race_reader, &r), 0);
	assert_int_equal(pthread_create(&wr, NULL, race_churn, &r), 0);
	for (i = 0; i < n && rc == 0; i++)
		rc = orbit_test_fork_run(child_own_registry, NULL, 10000);
	atomic_store(&r.stop, true); /* before any assert: the threads use this frame */
	pthread_join(wr, NULL);
	pthread_join(rd, NULL);
	if (rc)
		print_message("child %d of %d: %d (-1: killed, crashed or timed out)\n", i - 1, n,
			      rc);
	assert_int_equal(rc, 0);
	assert_int_equal(r.bad, 0);
	assert_int_equal(orbit_registry_destroy(r.reg), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_get_remove_count),
		cmocka_unit_test(test_error_codes),
		cmocka_unit_test(test_concurrent_lookups_during_churn),
		cmocka_unit_test(test_thread_registered_by_the_application),
		cmocka_unit_test(test_registry_in_children_forked_amid_churn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
