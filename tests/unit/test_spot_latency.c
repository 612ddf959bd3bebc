// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_spot_latency.c: the Spot host's submit-to-run histogram
 * (agent/spot.h struct orbit__spot_lat): one word per record, folded into
 * the API's [2^i, 2^(i+1)) buckets and the stats segment's (2^(i-1), 2^i]
 * buckets. Checked against each scheme's own definition (the API's
 * bucket loop the host used before, shm/stats.h orbit__stats_bucket())
 * for every power of two, its neighbours, 0, 1 and the largest values,
 * one at a time and all together, with the count, sum and max.
 */
#include "config.h"

#include "orbit_test.h"

#include <inttypes.h>

#include <orbit/orbit.h>

#include "agent/spot.h"
#include "shm/stats.h"

/* The API's bucket of @ns as the host computed it before: [2^b, 2^(b+1)), clamped. */
static unsigned api_bucket(uint64_t ns)
{
	unsigned b = 0;

	while (b + 1 < ORBIT_SPOT_LATENCY_BUCKETS && (ns >> (b + 1)))
		b++;
	return b;
}

static unsigned values(uint64_t *v)
{
	unsigned n = 0;

	v[n++] = 0;
	v[n++] = UINT64_MAX;
	for (unsigned i = 0; i < 64; i++) {
		uint64_t p = 1ull << i;

		v[n++] = p;
		v[n++] = p + 1;
		v[n++] = p - 1;
	}
	v[n++] = 600000000ull; /* test_spot_stats' slow records */
	return n;
}

static void check_one(uint64_t ns)
{
	uint64_t api[ORBIT_SPOT_LATENCY_BUCKETS] = { 0 }, pub[ORBIT_STATS_BUCKETS] = { 0 };
	uint64_t na = 0, np = 0;
	struct orbit__spot_lat l;

	memset(&l, 0, sizeof(l));
	orbit__spot_lat_add(&l, ns);
	orbit__spot_lat_fold(&l, false, api, ORBIT_SPOT_LATENCY_BUCKETS, &na);
	orbit__spot_lat_fold(&l, true, pub, ORBIT_STATS_BUCKETS, &np);
	assert_int_equal(na, 1);
	assert_int_equal(np, 1);
	if (api[api_bucket(ns)] != 1)
		fail_msg("%" PRIu64 " ns: not in API bucket %u", ns, api_bucket(ns));
	if (pub[orbit__stats_bucket(ns)] != 1)
		fail_msg("%" PRIu64 " ns: not in stats bucket %u", ns, orbit__stats_bucket(ns));
	assert_int_equal(atomic_load(&l.sum_ns), ns);
	assert_int_equal(atomic_load(&l.max_ns), ns);
}

static void test_each_value_lands_in_both_schemes_buckets(void **state)
{
	uint64_t v[200];
	unsigned n = values(v);

	(void)state;
	for (unsigned i = 0; i < n; i++)
		check_one(v[i]);
}

static void test_all_values_together_fold_to_the_reference(void **state)
{
	uint64_t api[ORBIT_SPOT_LATENCY_BUCKETS] = { 0 }, pub[ORBIT_STATS_BUCKETS] = { 0 };
	uint64_t ra[ORBIT_SPOT_LATENCY_BUCKETS] = { 0 }, rp[ORBIT_STATS_BUCKETS] = { 0 };
	uint64_t v[200], na = 0, np = 0, max = 0;
	struct orbit__spot_lat l;
	unsigned n = values(v);

	(void)state;
	memset(&l, 0, sizeof(l));
	for (unsigned i = 0; i < n; i++) {
		orbit__spot_lat_add(&l, v[i]);
		ra[api_bucket(v[i])]++;
		rp[orbit__stats_bucket(v[i])]++;
		max = v[i] > max ? v[i] : max;
	}
	orbit__spot_lat_fold(&l, false, api, ORBIT_SPOT_LATENCY_BUCKETS, &na);
	orbit__spot_lat_fold(&l, true, pub, ORBIT_STATS_BUCKETS, &np);
	assert_int_equal(na, n);
	assert_int_equal(np, n);
	assert_memory_equal(api, ra, sizeof(ra));
	assert_memory_equal(pub, rp, sizeof(rp));
	assert_int_equal(atomic_load(&l.max_ns), max);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_value_lands_in_both_schemes_buckets),
		cmocka_unit_test(test_all_values_together_fold_to_the_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
