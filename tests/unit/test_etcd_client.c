// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_etcd_client.c: the etcd client (lib/etcd_client.c)
 * against a real 3-member etcd cluster on 127.0.0.1 that the test starts
 * (scripts/etcd-cluster: free ports, data in a temporary directory) and
 * stops by its pids. Issue 15: the operations the lock backend maps onto
 * (create-if-absent with a lease, compare-and-delete on tenure and
 * value, ranges, leases) and "never a hang": an unreachable cluster and
 * one without quorum answer -ORBIT_EUNAVAILABLE within the bound.
 * Skipped, with the reason, when etcd is not installed.
 */
#include "config.h"

#include "orbit_test.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <orbit/error.h>

#include "lib/etcd_client.h"
#include "orbit_test_etcd.h"

static struct orbit_test_etcd cluster;
static char prefix[64];
static int have_cluster;
static orbit_etcd_t *etcd;

static int group_setup(void **state)
{
	int rc;

	(void)state;
	snprintf(prefix, sizeof(prefix), "orbit-test/%ld/", (long)getpid());
	rc = orbit_test_etcd_start(&cluster, "client");
	if (rc == 77)
		return 0;
	if (rc || orbit__etcd_open(cluster.endpoints, 3000, &etcd) != 0)
		return -1;
	have_cluster = 1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	orbit__etcd_close(etcd);
	return orbit_test_etcd_stop(&cluster);
}

#define NEED_CLUSTER()                                                                             \
	do {                                                                                       \
		if (!have_cluster)                                                                 \
			skip();                                                                    \
	} while (0)

/* A key under this test's prefix. */
static size_t key(char *out, size_t len, const char *name)
{
	return (size_t)snprintf(out, len, "%s%s", prefix, name);
}

/* Issue 15 "Mapping": create-if-absent is exclusive; create revisions only grow. */
static void test_etcd_create_is_exclusive_and_revisions_increase(void **state)
{
	struct orbit_etcd_kv cur;
	char k1[128], k2[128];
	size_t l1 = key(k1, sizeof(k1), "k1"), l2 = key(k2, sizeof(k2), "k2");
	int64_t r1 = 0, r2 = 0, r3 = 0, again = 0;

	(void)state;
	NEED_CLUSTER();
	assert_int_equal(orbit__etcd_create(etcd, k1, l1, "owner-a", 7, 0, &r1, NULL), 1);
	assert_true(r1 > 0);
	assert_int_equal(orbit__etcd_create(etcd, k1, l1, "owner-b", 7, 0, &again, &cur), 0);
	assert_int_equal(cur.create_revision, r1); /* the holder, not the loser */
	assert_int_equal(cur.value_len, 7);
	assert_memory_equal(cur.value, "owner-a", 7);
	assert_memory_equal(cur.key, k1, l1);
	orbit__etcd_kv_free(&cur);
	assert_int_equal(orbit__etcd_create(etcd, k2, l2, "owner-b", 7, 0, &r2, NULL), 1);
	assert_true(r2 > r1);
	assert_int_equal(orbit__etcd_delete(etcd, k1, l1), 1);
	assert_int_equal(orbit__etcd_create(etcd, k1, l1, "owner-c", 7, 0, &r3, NULL), 1);
	assert_true(r3 > r2); /* a new tenure of k1: larger than every earlier one */
	assert_int_equal(orbit__etcd_delete(etcd, k1, l1), 1);
	assert_int_equal(orbit__etcd_delete(etcd, k2, l2), 1);
	assert_int_equal(orbit__etcd_delete(etcd, k2, l2), 0);
}

/* Issue 15 "Mapping": release compares the tenure (create revision) and the owner (value). */
static void test_etcd_delete_if_compares_tenure_and_value(void **state)
{
	struct orbit_etcd_kv kv;
	char k[128];
	size_t l = key(k, sizeof(k), "rel");
	int64_t rev = 0;

	(void)state;
	NEED_CLUSTER();
	assert_int_equal(orbit__etcd_create(etcd, k, l, "me", 2, 0, &rev, NULL), 1);
	assert_int_equal(orbit__etcd_delete_if(etcd, k, l, rev + 1, "me", 2), 0);
	assert_int_equal(orbit__etcd_delete_if(etcd, k, l, rev, "you", 3), 0);
	assert_int_equal(orbit__etcd_get(etcd, k, l, 0, &kv), 1); /* still held */
	assert_int_equal(kv.create_revision, rev);
	orbit__etcd_kv_free(&kv);
	assert_int_equal(orbit__etcd_delete_if(etcd, k, l, rev, "me", 2), 1);
	assert_int_equal(orbit__etcd_delete_if(etcd, k, l, rev, "me", 2),
			 0); /* a retry frees nothing */
	assert_int_equal(orbit__etcd_get(etcd, k, l, 0, &kv), 0);
}

/* Issue 15 "Mapping": a key attached to a lease goes when the lease expires. */
static void test_etcd_lease_expiry_removes_key(void **state)
{
	struct orbit_etcd_kv kv;
	int64_t id = 0, granted = 0, rev = 0, left = 0;
	char k[128];
	size_t l = key(k, sizeof(k), "leased");

	(void)state;
	NEED_CLUSTER();
	assert_int_equal(orbit__etcd_lease_grant(etcd, 1, &id, &granted), 0);
	assert_true(granted >= 1);
	assert_int_equal(orbit__etcd_create(etcd, k, l, "o", 1, id, &rev, NULL), 1);
	assert_int_equal(orbit__etcd_get(etcd, k, l, 0, &kv), 1);
	assert_int_equal(kv.lease, id);
	orbit__etcd_kv_free(&kv);
	assert_int_equal(orbit__etcd_lease_ttl(etcd, id, &left), 0);
	assert_true(left <= granted);
	/* etcd expires a lease at most about a second after its TTL */
	for (int t = 0; t < (int)(granted + 4) * 10; t++) {
		if (orbit__etcd_get(etcd, k, l, 0, &kv) == 0)
			break;
		orbit__etcd_kv_free(&kv);
		usleep(100000);
	}
	assert_int_equal(orbit__etcd_get(etcd, k, l, 0, &kv), 0);
	assert_int_equal(orbit__etcd_lease_keepalive(etcd, id, NULL), -ENOENT);
	assert_int_equal(orbit__etcd_lease_ttl(etcd, id, &left), -ENOENT);
}

/* Issue 15 "Mapping": renew is a keepalive: the lease's TTL is back to its grant. */
static void test_etcd_keepalive_and_revoke(void **state)
{
	struct orbit_etcd_kv kv;
	int64_t id = 0, granted = 0, ttl = 0, rev = 0;
	char k[128];
	size_t l = key(k, sizeof(k), "kept");

	(void)state;
	NEED_CLUSTER();
	assert_int_equal(orbit__etcd_lease_grant(etcd, 3, &id, &granted), 0);
	assert_int_equal(orbit__etcd_create(etcd, k, l, "o", 1, id, &rev, NULL), 1);
	sleep(1);
	assert_int_equal(orbit__etcd_lease_keepalive(etcd, id, &ttl), 0);
	assert_int_equal(ttl, granted);
	assert_int_equal(orbit__etcd_lease_revoke(etcd, id), 0);
	assert_int_equal(orbit__etcd_get(etcd, k, l, 0, &kv), 0); /* its keys went with it */
	assert_int_equal(orbit__etcd_lease_revoke(etcd, id), -ENOENT);
}

struct seen {
	int n;
	char names[8][64];
};

static int on_kv(const struct orbit_etcd_kv *kv, void *ctx)
{
	struct seen *s = ctx;

	if (s->n < 8 && kv->key_len < sizeof(s->names[0])) {
		memcpy(s->names[s->n], kv->key, kv->key_len);
		s->names[s->n][kv->key_len] = '\0';
	}
	s->n++;
	return 0;
}

/* Issue 15 "Mapping": foreach is a range over the prefix, in key order; bytes round-trip. */
static void test_etcd_range_prefix_in_key_order(void **state)
{
	static const uint8_t bin[] = { 'b', 0x00, 0xff, '"', '\\', 0x7f };
	struct orbit_etcd_kv kv;
	struct seen s = { 0 };
	char k[128], p[128];
	size_t pl = key(p, sizeof(p), "r/");
	int64_t rev = 0, at = 0;

	(void)state;
	NEED_CLUSTER();
	for (const char *const *n = (const char *const[]){ "r/c", "r/a", "r/b", "rx", NULL }; *n;
	     n++)
		assert_int_equal(
		    orbit__etcd_create(etcd, k, key(k, sizeof(k), *n), "v", 1, 0, &rev, NULL), 1);
	assert_int_equal(orbit__etcd_range_prefix(etcd, p, pl, 0, on_kv, &s, &at), 3);
	assert_true(at >= rev);
	assert_string_equal(s.names[0] + strlen(prefix), "r/a");
	assert_string_equal(s.names[1] + strlen(prefix), "r/b");
	assert_string_equal(s.names[2] + strlen(prefix), "r/c");
	/* Binary keys and values, NUL and 0xff included, come back byte for byte. */
	memcpy(k, prefix, strlen(prefix));
	memcpy(k + strlen(prefix), bin, sizeof(bin));
	assert_int_equal(orbit__etcd_create(etcd, k, strlen(prefix) + sizeof(bin), bin, sizeof(bin),
					    0, &rev, NULL),
			 1);
	assert_int_equal(orbit__etcd_get(etcd, k, strlen(prefix) + sizeof(bin), 1, &kv), 1);
	assert_int_equal(kv.value_len, sizeof(bin));
	assert_memory_equal(kv.value, bin, sizeof(bin));
	assert_int_equal(kv.key_len, strlen(prefix) + sizeof(bin));
	orbit__etcd_kv_free(&kv);
}

/* A client whose first endpoint is closed uses the next one. */
static void test_etcd_failover_past_a_dead_endpoint(void **state)
{
	char list[640];
	orbit_etcd_t *e;
	int64_t rev = 0;

	(void)state;
	NEED_CLUSTER();
	snprintf(list, sizeof(list), "http://127.0.0.1:1,%s", cluster.endpoints);
	assert_int_equal(orbit__etcd_open(list, 2000, &e), 0);
	assert_int_equal(orbit__etcd_revision(e, &rev), 0);
	assert_true(rev > 0);
	orbit__etcd_close(e);
}

/* Issue 15: bad endpoint lists are refused at open, not at the first call. */
static void test_etcd_open_rejects_bad_endpoints(void **state)
{
	orbit_etcd_t *e = NULL;

	(void)state;
	assert_int_equal(orbit__etcd_open("", 100, &e), -EINVAL);
	assert_int_equal(orbit__etcd_open("127.0.0.1:2379", 100, &e), -EINVAL); /* no scheme */
	assert_int_equal(orbit__etcd_open("http://a:1,", 100, &e), -EINVAL);
	assert_int_equal(orbit__etcd_open("http://a:1,,http://b:2", 100, &e), -EINVAL);
	assert_int_equal(orbit__etcd_open("http://a:1", 0, &e), -EINVAL);
	assert_null(e);
}

/* Issue 15 "never a hang": nobody listening is -ORBIT_EUNAVAILABLE within the bound. */
static void test_etcd_unreachable_cluster_is_bounded(void **state)
{
	orbit_etcd_t *e;
	int64_t rev;
	uint64_t t0;

	(void)state;
	assert_int_equal(orbit__etcd_open("http://127.0.0.1:1,http://127.0.0.1:2", 300, &e), 0);
	t0 = orbit_test_now_ns();
	assert_int_equal(orbit__etcd_revision(e, &rev), -ORBIT_EUNAVAILABLE);
	assert_true(orbit_test_now_ns() - t0 < 1000000000ull);
	orbit__etcd_close(e);
}

/*
 * Issue 15 "never a hang": a cluster that lost its quorum (2 of 3 members
 * killed by pid) answers -ORBIT_EUNAVAILABLE within the bound, for reads
 * and for writes. Runs last: the cluster stays without quorum.
 */
static void test_etcd_no_quorum_is_bounded(void **state)
{
	orbit_etcd_t *e;
	char k[128];
	size_t l = key(k, sizeof(k), "noquorum");
	struct orbit_etcd_kv kv;
	int64_t rev;
	uint64_t t0;

	(void)state;
	NEED_CLUSTER();
	assert_int_equal(kill(cluster.pids[1], SIGKILL), 0);
	assert_int_equal(kill(cluster.pids[2], SIGKILL), 0);
	usleep(200000);
	assert_int_equal(orbit__etcd_open(cluster.endpoints, 1500, &e), 0);
	t0 = orbit_test_now_ns();
	assert_int_equal(orbit__etcd_create(e, k, l, "o", 1, 0, &rev, NULL), -ORBIT_EUNAVAILABLE);
	assert_true(orbit_test_now_ns() - t0 < 2500000000ull);
	t0 = orbit_test_now_ns();
	assert_int_equal(orbit__etcd_get(e, k, l, 0, &kv), -ORBIT_EUNAVAILABLE);
	assert_true(orbit_test_now_ns() - t0 < 2500000000ull);
	orbit__etcd_close(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_etcd_open_rejects_bad_endpoints),
		cmocka_unit_test(test_etcd_unreachable_cluster_is_bounded),
		cmocka_unit_test(test_etcd_create_is_exclusive_and_revisions_increase),
		cmocka_unit_test(test_etcd_delete_if_compares_tenure_and_value),
		cmocka_unit_test(test_etcd_lease_expiry_removes_key),
		cmocka_unit_test(test_etcd_keepalive_and_revoke),
		cmocka_unit_test(test_etcd_range_prefix_in_key_order),
		cmocka_unit_test(test_etcd_failover_past_a_dead_endpoint),
		cmocka_unit_test(test_etcd_no_quorum_is_bounded),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
