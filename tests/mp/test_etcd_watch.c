// SPDX-License-Identifier: MIT
/*
 * tests/mp/test_etcd_watch.c: orbit-lock's transition feed on etcd
 * (issue 15): an etcd watch on the fleet's prefix read through the public
 * transition reader (orbit_lock_reader_open() + orbit_transition_reader_next()),
 * on a 3-member cluster this test starts. It checks that acquire, renew,
 * release, force release and expiry arrive in order with the lock calls'
 * tokens and revisions; that a watch whose member is SIGKILLed reconnects
 * from the last revision it returned and misses and repeats nothing; that
 * a start revision etcd compacted away is reported as a lag; and orbitctl
 * watch --json (and --replay) on an etcd:// fleet. Skipped, with the
 * reason, without etcd.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>

#include <orbit/orbit.h>

#include "lib/etcd_watch.h"
#include "orbit_test.h"
#include "orbit_test_etcd.h"

#define SEC 1000000000ull
#define CALL_TIMEOUT_MS 3000

static struct orbit_test_etcd cluster;
static bool have_cluster;

ORBIT_LOCK_DEFINE_NAMESPACE(w_ns, "tests.watch");

static orbit_lock_key_t K(const char *label)
{
	return orbit_lock_key(w_ns, label, strlen(label));
}

static orbit_lock_owner_t O(const char *s)
{
	return (orbit_lock_owner_t){ s, strlen(s) };
}

static orbit_lock_t *open_on(const char *fleet, const char *endpoints)
{
	struct orbit_lock_options o = { .size = sizeof(o),
					.fleet = fleet,
					.backend = ORBIT_LOCK_BACKEND_ETCD,
					.endpoints = endpoints,
					.call_timeout_ms = CALL_TIMEOUT_MS };
	orbit_lock_t *l = NULL;

	assert_int_equal(orbit_lock_open(&o, &l), 0);
	return l;
}

static void unlink_fleet(const char *fleet)
{
	struct orbit_lock_options o = { .size = sizeof(o),
					.fleet = fleet,
					.backend = ORBIT_LOCK_BACKEND_ETCD,
					.endpoints = cluster.endpoints,
					.call_timeout_ms = CALL_TIMEOUT_MS };

	orbit_lock_unlink(&o);
}

/* Member @i's client URL. */
static void member_url(int i, char *out, size_t cap)
{
	char eps[sizeof(cluster.endpoints)], *h;
	int n = 0;

	snprintf(eps, sizeof(eps), "%s", cluster.endpoints);
	for (h = strtok(eps, ","); h && n < i; h = strtok(NULL, ","))
		n++;
	assert_non_null(h);
	snprintf(out, cap, "%s", h);
}

/* The endpoint list with member @first first, then the others in order. */
static void endpoints_from(int first, char *out, size_t cap)
{
	char u[200];

	member_url(first, out, cap);
	for (int i = 0; i < ORBIT_TEST_ETCD_MEMBERS; i++) {
		if (i == first)
			continue;
		member_url(i, u, sizeof(u));
		snprintf(out + strlen(out), cap - strlen(out), ",%s", u);
	}
}

/*
 * The set-up of a test that watches through a follower: the member that
 * leads now (*@leader) and the one after it (returned), with the endpoint
 * list that starts at that follower in @eps_r (for the watch) and, when
 * @eps_w is not NULL, the one that starts at the leader (for the writes).
 */
static int follower_of_leader(int *leader, char *eps_r, char *eps_w, size_t cap)
{
	int follower;

	*leader = orbit_test_etcd_leader(&cluster);
	assert_true(*leader >= 0);
	follower = (*leader + 1) % ORBIT_TEST_ETCD_MEMBERS;
	endpoints_from(follower, eps_r, cap);
	if (eps_w)
		endpoints_from(*leader, eps_w, cap);
	return follower;
}

/*
 * Read @n transitions within @ms; lags and errors are failures here.
 * Returns the number read.
 */
static int read_n(orbit_transition_reader_t *r, struct orbit_transition_event *ev, int n, int ms)
{
	uint64_t end = orbit_test_now_ns() + (uint64_t)ms * 1000000ull;
	int got = 0;

	while (got < n && orbit_test_now_ns() < end) {
		int rc = orbit_transition_reader_next(r, &ev[got]);

		if (rc == -EAGAIN || rc == -ORBIT_EUNAVAILABLE) {
			usleep(5000);
			continue;
		}
		if (rc)
			fail_msg("reader: %s after %d transitions", orbit_err_name(rc), got);
		got++;
	}
	return got;
}

/* Is nothing more there for @ms? */
static void assert_quiet(orbit_transition_reader_t *r, int ms)
{
	struct orbit_transition_event ev;
	uint64_t end = orbit_test_now_ns() + (uint64_t)ms * 1000000ull;

	while (orbit_test_now_ns() < end) {
		int rc = orbit_transition_reader_next(r, &ev);

		if (rc == 0)
			fail_msg("an extra transition: type %d revision %llu token %llu", ev.type,
				 (unsigned long long)ev.state_revision,
				 (unsigned long long)ev.fencing_token);
		assert_true(rc == -EAGAIN || rc == -ORBIT_EUNAVAILABLE);
		usleep(5000);
	}
}

static void assert_event(const struct orbit_transition_event *ev, enum orbit_transition_type type,
			 const char *label, const char *owner, uint64_t token)
{
	if (ev->type != type)
		fail_msg("%s: type %d, expected %d", label, ev->type, type);
	assert_int_equal(ev->ns_len, strlen("tests.watch"));
	assert_memory_equal(ev->bytes, "tests.watch", ev->ns_len);
	assert_int_equal(ev->label_len, strlen(label));
	assert_memory_equal(ev->bytes + ev->ns_len, label, ev->label_len);
	assert_int_equal(ev->owner_len, strlen(owner));
	assert_memory_equal(ev->bytes + ev->ns_len + ev->label_len, owner, ev->owner_len);
	assert_int_equal(ev->fencing_token, token);
}

/*
 * Issue 15: the feed shows acquire, renew, release, force release and an
 * expiry, in order, each with the token the lock call handed out and the
 * revision it made (state_revision = the event's mod_revision, strictly
 * increasing); a lease that runs out (a 1 s TTL, never renewed) shows as
 * RECLAIM, told apart from a release by the delete marker.
 */
static void test_watch_order_tokens_revisions(void **state)
{
	orbit_lock_key_t k1 = K("one"), k2 = K("two"), k3 = K("three");
	orbit_lock_owner_t a = O("alice"), b = O("bob"), c = O("carol");
	struct orbit_lock_lease l1, r1, l2, l3;
	struct orbit_transition_event ev[8];
	orbit_transition_reader_t *r;
	uint64_t read = 0, lagged = 9, corrupt = 9;
	char fleet[64];
	orbit_lock_t *L;

	(void)state;
	if (!have_cluster)
		skip();
	orbit_test_fleet(fleet, sizeof(fleet), "ew");
	L = open_on(fleet, cluster.endpoints);
	assert_int_equal(orbit_lock_reader_open(L, &r), 0);
	assert_int_equal(orbit_lock_try_acquire(L, &k1, &a, 30 * SEC, &l1, NULL), 0);
	assert_int_equal(orbit_lock_renew(L, &k1, &a, l1.token, 30 * SEC, &r1), 0);
	assert_int_equal(orbit_lock_try_acquire(L, &k2, &b, 30 * SEC, &l2, NULL), 0);
	assert_int_equal(orbit_lock_release(L, &k1, &a, l1.token), 0);
	assert_int_equal(orbit_lock_force_release(L, &k2), 0);
	assert_int_equal(orbit_lock_try_acquire(L, &k3, &c, 1 * SEC, &l3, NULL), 0);
	/* etcd's leader revokes the lease about a second after its TTL */
	assert_int_equal(read_n(r, ev, 7, 8000), 7);
	assert_event(&ev[0], ORBIT_TRANSITION_ACQUIRE, "one", "alice", l1.token);
	assert_int_equal(ev[0].state_revision, l1.state_revision);
	assert_event(&ev[1], ORBIT_TRANSITION_RENEW, "one", "alice", l1.token);
	assert_int_equal(ev[1].state_revision, r1.state_revision);
	assert_event(&ev[2], ORBIT_TRANSITION_ACQUIRE, "two", "bob", l2.token);
	assert_int_equal(ev[2].state_revision, l2.state_revision);
	assert_event(&ev[3], ORBIT_TRANSITION_RELEASE, "one", "alice", l1.token);
	assert_event(&ev[4], ORBIT_TRANSITION_FORCE_RELEASE, "two", "bob", l2.token);
	assert_event(&ev[5], ORBIT_TRANSITION_ACQUIRE, "three", "carol", l3.token);
	assert_int_equal(ev[5].state_revision, l3.state_revision);
	assert_event(&ev[6], ORBIT_TRANSITION_RECLAIM, "three", "carol", l3.token);
	for (int i = 1; i < 7; i++)
		assert_true(ev[i].state_revision > ev[i - 1].state_revision);
	/* the token is the create revision: the acquire's own revision */
	assert_int_equal(l1.token, ev[0].state_revision);
	/* unlink deletes the marker first (it sorts first), then the keys: force releases */
	assert_int_equal(orbit_lock_try_acquire(L, &k1, &a, 30 * SEC, &l1, NULL), 0);
	unlink_fleet(fleet);
	assert_int_equal(read_n(r, ev, 2, 5000), 2);
	assert_event(&ev[0], ORBIT_TRANSITION_ACQUIRE, "one", "alice", l1.token);
	assert_event(&ev[1], ORBIT_TRANSITION_FORCE_RELEASE, "one", "alice", l1.token);
	assert_quiet(r, 300);
	orbit_transition_reader_counters(r, &read, &lagged, &corrupt);
	assert_int_equal(read, 9);
	assert_int_equal(lagged, 0);
	assert_int_equal(corrupt, 0);
	orbit_transition_reader_close(r);
	orbit_lock_close(L);
	unlink_fleet(fleet);
}

static int count_entry(const struct orbit_lock_entry *e, void *ctx)
{
	(void)e;
	++*(int *)ctx;
	return 0;
}

/* The delete marker is not an entry, nor corrupt: foreach after releases lists none. */
static void test_watch_marker_is_not_a_lock(void **state)
{
	orbit_lock_key_t k = K("m");
	orbit_lock_owner_t a = O("alice");
	struct orbit_lock_lease l;
	struct orbit_lock_stats st;
	char fleet[64];
	orbit_lock_t *L;
	int n = 0;

	(void)state;
	if (!have_cluster)
		skip();
	orbit_test_fleet(fleet, sizeof(fleet), "em");
	L = open_on(fleet, cluster.endpoints);
	assert_int_equal(orbit_lock_try_acquire(L, &k, &a, 30 * SEC, &l, NULL), 0);
	assert_int_equal(orbit_lock_release(L, &k, &a, l.token), 0);
	assert_int_equal(orbit_lock_foreach(L, count_entry, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(orbit_lock_stats(L, &st), 0);
	assert_int_equal(st.corrupt_slots, 0);
	orbit_lock_close(L);
	unlink_fleet(fleet);
}

/*
 * Issue 15: a watch whose member is SIGKILLed reconnects to another from
 * the revision after the last one it returned: the transitions made while
 * it had no stream all arrive, in order, none twice. The reader's member
 * is a follower (its endpoint list starts with it), so the writes, through
 * the leader, need no election.
 */
static void test_watch_survives_killed_member(void **state)
{
	enum { BEFORE = 3, DURING = 12 };
	struct orbit_lock_lease l[BEFORE + DURING];
	struct orbit_transition_event ev[2 * (BEFORE + DURING)];
	orbit_lock_owner_t a = O("alice");
	orbit_transition_reader_t *r;
	char fleet[64], eps_r[600], eps_w[600], label[16];
	orbit_lock_t *R, *W;
	int leader, follower;

	(void)state;
	if (!have_cluster)
		skip();
	follower = follower_of_leader(&leader, eps_r, eps_w, sizeof(eps_r));
	orbit_test_fleet(fleet, sizeof(fleet), "ek");
	R = open_on(fleet, eps_r);
	W = open_on(fleet, eps_w);
	assert_int_equal(orbit_lock_reader_open(R, &r), 0);
	for (int i = 0; i < BEFORE; i++) {
		orbit_lock_key_t k;

		snprintf(label, sizeof(label), "k%d", i);
		k = K(label);
		assert_int_equal(orbit_lock_try_acquire(W, &k, &a, 30 * SEC, &l[i], NULL), 0);
	}
	/* the stream is up and delivering: on the follower */
	assert_int_equal(read_n(r, ev, BEFORE, 5000), BEFORE);
	assert_int_equal(kill(cluster.pids[follower], SIGKILL), 0);
	print_message("member m%d (the watch's) SIGKILLed\n", follower);
	/* everything below happens while the watch has no stream */
	for (int i = BEFORE; i < BEFORE + DURING; i++) {
		orbit_lock_key_t k;

		snprintf(label, sizeof(label), "k%d", i);
		k = K(label);
		assert_int_equal(orbit_lock_try_acquire(W, &k, &a, 30 * SEC, &l[i], NULL), 0);
	}
	assert_int_equal(read_n(r, ev + BEFORE, DURING, 10000), DURING);
	for (int i = 0; i < BEFORE + DURING; i++) {
		snprintf(label, sizeof(label), "k%d", i);
		assert_event(&ev[i], ORBIT_TRANSITION_ACQUIRE, label, "alice", l[i].token);
		assert_int_equal(ev[i].state_revision, l[i].state_revision);
		if (i)
			assert_true(ev[i].state_revision > ev[i - 1].state_revision);
	}
	assert_quiet(r, 300); /* none twice */
	orbit_transition_reader_close(r);
	orbit_lock_close(R);
	orbit_lock_close(W);
	assert_int_equal(orbit_test_etcd_restart(&cluster, follower), 0);
	unlink_fleet(fleet);
}

/*
 * Issue 15, a leader change: the watch's member loses its leader (the two
 * others SIGSTOPped). etcd cancels the stream (the watch asks it to:
 * hasleader), the other members do not answer, and after the call bound
 * the reader says so once (-ORBIT_EUNAVAILABLE) and keeps trying. Once
 * the members run again and elect a leader, what was written then arrives
 * from the revision after the last one read, none lost or twice.
 */
static void test_watch_member_without_leader_resumes(void **state)
{
	enum { AFTER = 5 };
	struct orbit_lock_lease l0, l[AFTER];
	struct orbit_transition_event ev[AFTER + 1];
	orbit_lock_owner_t a = O("alice");
	orbit_lock_key_t k0 = K("before");
	orbit_transition_reader_t *r;
	char fleet[64], eps_r[600], eps_w[600], label[16];
	int leader, other, unavailable = 0, rc, lead = -1;
	uint64_t end;
	orbit_lock_t *R, *W;

	(void)state;
	if (!have_cluster)
		skip();
	(void)follower_of_leader(&leader, eps_r, NULL, sizeof(eps_r)); /* the watch's */
	other = (leader + 2) % ORBIT_TEST_ETCD_MEMBERS;
	orbit_test_fleet(fleet, sizeof(fleet), "el");
	R = open_on(fleet, eps_r);
	assert_int_equal(orbit_lock_reader_open(R, &r), 0);
	assert_int_equal(orbit_lock_try_acquire(R, &k0, &a, 30 * SEC, &l0, NULL), 0);
	assert_int_equal(read_n(r, ev, 1, 5000), 1); /* the stream is confirmed */
	assert_int_equal(kill(cluster.pids[leader], SIGSTOP), 0);
	assert_int_equal(kill(cluster.pids[other], SIGSTOP), 0);
	end = orbit_test_now_ns() + 15 * SEC;
	while (!unavailable && orbit_test_now_ns() < end) {
		rc = orbit_transition_reader_next(r, &ev[0]);
		if (rc == -ORBIT_EUNAVAILABLE)
			unavailable = 1;
		else if (rc != -EAGAIN)
			fail_msg("without a leader: %s", orbit_err_name(rc));
		usleep(5000);
	}
	kill(cluster.pids[leader], SIGCONT);
	kill(cluster.pids[other], SIGCONT);
	assert_true(unavailable);
	end = orbit_test_now_ns() + 15 * SEC;
	while (lead < 0 && orbit_test_now_ns() < end) {
		lead = orbit_test_etcd_leader(&cluster);
		usleep(50000);
	}
	assert_true(lead >= 0);
	endpoints_from(lead, eps_w, sizeof(eps_w));
	W = open_on(fleet, eps_w);
	for (int i = 0; i < AFTER; i++) {
		orbit_lock_key_t k;

		snprintf(label, sizeof(label), "a%d", i);
		k = K(label);
		assert_int_equal(orbit_lock_try_acquire(W, &k, &a, 30 * SEC, &l[i], NULL), 0);
	}
	assert_int_equal(read_n(r, ev, AFTER, 15000), AFTER);
	for (int i = 0; i < AFTER; i++) {
		snprintf(label, sizeof(label), "a%d", i);
		assert_event(&ev[i], ORBIT_TRANSITION_ACQUIRE, label, "alice", l[i].token);
		assert_int_equal(ev[i].state_revision, l[i].state_revision);
	}
	assert_quiet(r, 300);
	orbit_transition_reader_close(r);
	orbit_lock_close(R);
	orbit_lock_close(W);
	unlink_fleet(fleet);
}

/*
 * The reader's connection is its opener's: in a forked child next()
 * answers -ECHILD and touches nothing (the parent's reader goes on), and
 * close is safe there. An SHM handle has no such reader (its feed is the
 * ring): -EOPNOTSUPP.
 */
static void test_reader_fork_and_shm(void **state)
{
	orbit_lock_key_t k = K("f");
	orbit_lock_owner_t a = O("alice");
	struct orbit_lock_options so = { .size = sizeof(so) };
	struct orbit_transition_event ev;
	struct orbit_lock_lease l;
	orbit_transition_reader_t *r, *x = (void *)1;
	char fleet[64], shm_fleet[64];
	orbit_lock_t *L, *S;
	pid_t pid;
	int st;

	(void)state;
	so.fleet = orbit_test_fleet(shm_fleet, sizeof(shm_fleet), "es");
	assert_int_equal(orbit_lock_open(&so, &S), 0);
	assert_int_equal(orbit_lock_reader_open(S, &x), -EOPNOTSUPP);
	assert_ptr_equal(x, (void *)1);
	orbit_lock_close(S);
	orbit_lock_unlink(&so);
	if (!have_cluster)
		skip();
	orbit_test_fleet(fleet, sizeof(fleet), "ef");
	L = open_on(fleet, cluster.endpoints);
	assert_int_equal(orbit_lock_reader_open(L, &r), 0);
	assert_int_equal(orbit_lock_try_acquire(L, &k, &a, 30 * SEC, &l, NULL), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int rc = orbit_transition_reader_next(r, &ev);
		int rc2 = orbit_lock_reader_open(L, &x);

		orbit_transition_reader_close(r);
		_exit(rc == -ECHILD && rc2 == -ECHILD ? 0 : 1);
	}
	st = orbit_test_wait(pid, 10000);
	assert_true(st >= 0 && WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(read_n(r, &ev, 1, 5000), 1);
	assert_event(&ev, ORBIT_TRANSITION_ACQUIRE, "f", "alice", l.token);
	orbit_transition_reader_close(r);
	orbit_lock_close(L);
	unlink_fleet(fleet);
}

/* Compact the cluster's history up to its current revision (curl on the gateway). */
static void compact_now(void);

/* The watch below the reader (lib/etcd_watch.h): @n events within @ms into @ev. */
static int watch_n(orbit_etcd_watch_t *w, struct orbit_etcd_event *ev, int n, int ms)
{
	uint64_t end = orbit_test_now_ns() + (uint64_t)ms * 1000000ull;
	int got = 0;

	while (got < n && orbit_test_now_ns() < end) {
		int rc = orbit__etcd_watch_next(w, &ev[got]);

		if (rc == 1)
			got++;
		else if (rc == 0 || rc == -ORBIT_EUNAVAILABLE)
			usleep(5000);
		else
			fail_msg("watch: %s after %d events", orbit_err_name(rc), got);
	}
	return got;
}

/*
 * A quiet stream is probed, not restarted: its member answers a read, so
 * the stream stays (one connect), and a compaction of other keys' history
 * meanwhile costs no lag; a later event arrives on it. A restart on
 * silence would resume from the revision after the last event, which the
 * compaction removed: a lag that lost nothing.
 */
static void test_watch_quiet_stream_is_probed_not_restarted(void **state)
{
	struct orbit_etcd_watch_counters c;
	struct orbit_etcd_event ev[2];
	orbit_etcd_watch_t *w;
	orbit_etcd_t *e;
	char fleet[64], other[64], prefix[96];
	orbit_lock_t *L, *M;
	orbit_lock_key_t k = K("q");
	orbit_lock_owner_t a = O("alice");
	struct orbit_lock_lease l;
	int64_t rev = 0;

	(void)state;
	if (!have_cluster)
		skip();
	orbit_test_fleet(fleet, sizeof(fleet), "eq");
	orbit_test_fleet(other, sizeof(other), "eq");
	snprintf(prefix, sizeof(prefix), "orbit/%s/", fleet);
	assert_int_equal(orbit__etcd_open(cluster.endpoints, 1000, &e), 0);
	assert_int_equal(orbit__etcd_revision(e, &rev), 0);
	assert_int_equal(orbit__etcd_watch_open(e, prefix, strlen(prefix), rev + 1, &w), 0);
	orbit__etcd_watch_set_idle_ms(w, 200);
	L = open_on(fleet, cluster.endpoints);
	M = open_on(other, cluster.endpoints);
	assert_int_equal(orbit_lock_try_acquire(L, &k, &a, 30 * SEC, &l, NULL), 0);
	assert_int_equal(watch_n(w, ev, 1, 5000), 1);
	orbit__etcd_event_free(&ev[0]);
	/* quiet for our prefix; another fleet's writes move the revision on */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(orbit_lock_try_acquire(M, &k, &a, 30 * SEC, &l, NULL), 0);
		assert_int_equal(orbit_lock_release(M, &k, &a, l.token), 0);
	}
	compact_now();
	assert_int_equal(watch_n(w, ev, 1, 1500), 0); /* > several idle periods */
	assert_int_equal(orbit_lock_force_release(L, &k), 0);
	/* the marker put, then the delete: on the same stream, no lag */
	assert_int_equal(watch_n(w, ev, 2, 5000), 2);
	assert_int_equal(ev[1].type, ORBIT_ETCD_DELETE);
	orbit__etcd_event_free(&ev[0]);
	orbit__etcd_event_free(&ev[1]);
	orbit__etcd_watch_counters(w, &c);
	assert_int_equal(c.connects, 1);
	assert_int_equal(c.compacted, 0);
	assert_true(c.probes_ok >= 2);
	orbit__etcd_watch_close(w);
	orbit__etcd_close(e);
	orbit_lock_close(L);
	orbit_lock_close(M);
	unlink_fleet(fleet);
	unlink_fleet(other);
}

/*
 * A stopped member (SIGSTOP: its kernel keeps the connection, it answers
 * nothing) is found by the probe of its quiet stream: no answer within the
 * client's timeout, the watch moves to the next member and resumes where
 * it was, so the events made meanwhile all arrive.
 */
static void test_watch_stopped_member_is_left(void **state)
{
	enum { N = 4 };
	struct orbit_etcd_event ev[N + 1];
	struct orbit_lock_lease l[N + 1];
	orbit_lock_owner_t a = O("alice");
	orbit_etcd_watch_t *w;
	orbit_etcd_t *e;
	char fleet[64], prefix[96], eps_r[600], eps_w[600], label[16];
	int leader, follower, got;
	int64_t rev = 0;
	orbit_lock_t *W;

	(void)state;
	if (!have_cluster)
		skip();
	follower = follower_of_leader(&leader, eps_r, eps_w, sizeof(eps_r));
	orbit_test_fleet(fleet, sizeof(fleet), "ep");
	snprintf(prefix, sizeof(prefix), "orbit/%s/", fleet);
	assert_int_equal(orbit__etcd_open(eps_r, 1000, &e), 0);
	assert_int_equal(orbit__etcd_revision(e, &rev), 0);
	assert_int_equal(orbit__etcd_watch_open(e, prefix, strlen(prefix), rev + 1, &w), 0);
	orbit__etcd_watch_set_idle_ms(w, 300);
	W = open_on(fleet, eps_w);
	for (int i = 0; i <= N; i++) {
		orbit_lock_key_t k;

		if (i == 1) {
			assert_int_equal(watch_n(w, ev, 1, 5000), 1); /* the stream is up */
			assert_int_equal(kill(cluster.pids[follower], SIGSTOP), 0);
		}
		snprintf(label, sizeof(label), "s%d", i);
		k = K(label);
		assert_int_equal(orbit_lock_try_acquire(W, &k, &a, 30 * SEC, &l[i], NULL), 0);
	}
	got = watch_n(w, ev + 1, N, 10000);
	kill(cluster.pids[follower], SIGCONT);
	assert_int_equal(got, N);
	for (int i = 0; i <= N; i++) {
		assert_int_equal(ev[i].kv.create_revision, (int64_t)l[i].token);
		orbit__etcd_event_free(&ev[i]);
	}
	assert_int_equal(orbit__etcd_watch_endpoint(w), 1); /* moved on from the stopped one */
	orbit__etcd_watch_close(w);
	orbit__etcd_close(e);
	orbit_lock_close(W);
	unlink_fleet(fleet);
}

static void compact_now(void)
{
	char cmd[1024], u[200];
	long rev = 0;
	FILE *p;

	member_url(0, u, sizeof(u));
	snprintf(cmd, sizeof(cmd),
		 "curl -s -m 5 -X POST -d '{\"key\":\"AA==\",\"count_only\":true}' %s/v3/kv/range"
		 " | sed 's/.*\"revision\":\"\\([0-9]*\\)\".*/\\1/'",
		 u);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%ld", &rev), 1);
	pclose(p);
	snprintf(cmd, sizeof(cmd),
		 "curl -s -m 5 -X POST -d '{\"revision\":\"%ld\",\"physical\":true}' "
		 "%s/v3/kv/compaction | grep -q header",
		 rev, u);
	assert_int_equal(system(cmd), 0);
}

/*
 * Issue 15: a reader whose start revision etcd compacted away before it
 * read is told so once (-ORBIT_ELAGGED, counted as a lag, as an SHM reader
 * overtaken by the writers), then goes on from the oldest revision kept:
 * what happens after the compaction arrives.
 */
static void test_watch_compacted_start_is_lag(void **state)
{
	orbit_lock_key_t k = K("c");
	orbit_lock_owner_t a = O("alice");
	struct orbit_transition_event ev;
	struct orbit_lock_lease l, l2;
	orbit_transition_reader_t *r;
	uint64_t end, read = 0, lagged = 0;
	char fleet[64];
	orbit_lock_t *L;
	int rc = -EAGAIN;

	(void)state;
	if (!have_cluster)
		skip();
	orbit_test_fleet(fleet, sizeof(fleet), "ec");
	L = open_on(fleet, cluster.endpoints);
	assert_int_equal(orbit_lock_reader_open(L, &r), 0);
	/* history the reader has not read yet, then compacted away */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(orbit_lock_try_acquire(L, &k, &a, 30 * SEC, &l, NULL), 0);
		assert_int_equal(orbit_lock_release(L, &k, &a, l.token), 0);
	}
	compact_now();
	assert_int_equal(orbit_lock_try_acquire(L, &k, &a, 30 * SEC, &l2, NULL), 0);
	end = orbit_test_now_ns() + 8 * SEC;
	while (rc == -EAGAIN && orbit_test_now_ns() < end) {
		rc = orbit_transition_reader_next(r, &ev);
		if (rc == -EAGAIN)
			usleep(5000);
	}
	assert_int_equal(rc, -ORBIT_ELAGGED);
	/* then the acquire made after the compaction, and only it */
	assert_int_equal(read_n(r, &ev, 1, 8000), 1);
	assert_event(&ev, ORBIT_TRANSITION_ACQUIRE, "c", "alice", l2.token);
	assert_quiet(r, 300);
	orbit_transition_reader_counters(r, &read, &lagged, NULL);
	assert_int_equal(read, 1);
	assert_int_equal(lagged, 1);
	orbit_transition_reader_close(r);
	orbit_lock_close(L);
	unlink_fleet(fleet);
}

/*
 * Issue 15: orbitctl watch --json on an etcd:// fleet: --replay reads the
 * history etcd keeps (the earlier test compacted the cluster: no lag is
 * printed for a rewind), one JSON line per transition with its type,
 * token and revision; without --replay it starts at the current revision.
 */
static void test_orbitctl_watch_json_on_etcd(void **state)
{
	orbit_lock_key_t k = K("ctl");
	orbit_lock_owner_t a = O("host-a:42");
	struct orbit_lock_lease l;
	char fleet[64], url[700], out[8192], want[256];
	orbit_lock_t *L;

	(void)state;
	if (!have_cluster)
		skip();
	orbit_test_fleet(fleet, sizeof(fleet), "eo");
	orbit_test_etcd_url(&cluster, fleet, url, sizeof(url));
	L = open_on(fleet, cluster.endpoints);
	assert_int_equal(orbit_lock_try_acquire(L, &k, &a, 30 * SEC, &l, NULL), 0);
	assert_int_equal(orbit_lock_release(L, &k, &a, l.token), 0);
	assert_int_equal(orbit_test_etcd_ctl(url,
					     "watch --json --replay --count 2 --timeout-ms 8000",
					     out, sizeof(out)),
			 0);
	snprintf(want, sizeof(want), "{\"type\":\"acquire\",\"state_revision\":%llu,",
		 (unsigned long long)l.state_revision);
	assert_non_null(strstr(out, want));
	snprintf(want, sizeof(want), "\"fencing_token\":%llu,", (unsigned long long)l.token);
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, "{\"type\":\"release\","));
	assert_true(strstr(out, "\"acquire\"") < strstr(out, "\"release\""));
	assert_non_null(strstr(out, "\"label\":\"ctl\""));
	assert_non_null(strstr(out, "\"owner\":\"host-a:42\""));
	assert_null(strstr(out, "lagged"));
	/* live: nothing happens, so the bound ends it with nothing printed */
	assert_int_equal(
	    orbit_test_etcd_ctl(url, "watch --json --timeout-ms 300", out, sizeof(out)), 0);
	assert_null(strstr(out, "\"type\""));
	orbit_lock_close(L);
	unlink_fleet(fleet);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_watch_order_tokens_revisions),
		cmocka_unit_test(test_watch_marker_is_not_a_lock),
		cmocka_unit_test(test_watch_survives_killed_member),
		cmocka_unit_test(test_watch_member_without_leader_resumes),
		cmocka_unit_test(test_reader_fork_and_shm),
		cmocka_unit_test(test_watch_quiet_stream_is_probed_not_restarted),
		cmocka_unit_test(test_watch_stopped_member_is_left),
		cmocka_unit_test(test_watch_compacted_start_is_lag),
		cmocka_unit_test(test_orbitctl_watch_json_on_etcd),
	};
	int rc;

	if (orbit_test_etcd_up(&cluster, "watch", &have_cluster))
		return 1;
	rc = cmocka_run_group_tests_name("etcd_watch", tests, NULL, NULL);
	orbit_test_etcd_stop(&cluster);
	return rc;
}
