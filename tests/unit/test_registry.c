// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_registry.c: the C1 pure lookup registry (06 §4) over
 * liburcu rculfhash: add/get/remove/count and every error code, and
 * lookups racing with adds and removes (deferred free: ASan catches a
 * reader touching freed memory).
 */
#include "orbit_test.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

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

static void *race_writer(void *p)
{
	struct race *r = p;
	unsigned seed = 11;
	long n = orbit_test_long() ? 2000000 : 200000;

	for (long i = 0; i < n; i++) {
		uint64_t k = (uint64_t)(rand_r(&seed) % 512);
		struct val v = { { k, k, k, k } };

		if (rand_r(&seed) & 1)
			orbit_registry_add(r->reg, &k, sizeof(k), &v, sizeof(v));
		else
			orbit_registry_remove(r->reg, &k, sizeof(k));
	}
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_get_remove_count),
		cmocka_unit_test(test_error_codes),
		cmocka_unit_test(test_concurrent_lookups_during_churn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
