// SPDX-License-Identifier: MIT
/*
 * tests/mp/test_spot_stats.c: the Spot hosts' and clients' counters in the
 * stats segment (issue 11 "Watch", issue 13 "the agent publishes every
 * component's counters"), with real processes: a host process and
 * producer processes each run their own agent, and the parent, which
 * starts no thread, reads what their agents published through the fleet
 * API (orbit_fleet_spot_stats_read, orbit_fleet_spots) and through the
 * built orbitctl (spots and stats as table, JSON and Prometheus text):
 *   - every counter equals what the test did: N records submitted, K
 *     refused by count and by bytes, waits and their timeouts, records
 *     delivered, completed, in flight, lane depth and bytes, the epoch;
 *   - the submit-to-run histogram of a known latency distribution (records
 *     submitted 600 ms before their host starts, then records run at once)
 *     puts each mode in its bucket, and p50 / p99 / max follow;
 *   - records aborted because their producer died and because it stayed
 *     stopped past the unblock bound are counted apart; a dead member's
 *     slot stays readable but is shown (gone) only with stats --all and
 *     left out of Prometheus;
 *   - a host's slot goes when it stops, a client's when it closes;
 *   - after an adoption the new host counts the redelivered records and
 *     the old one, resumed, its fenced completes and the loss.
 * Shared state between the processes is anonymous MAP_SHARED memory made
 * before any fork.
 */
#include "config.h"

#include "orbit_test.h"
#include "orbit_test_proc.h"
#include "orbit_test_ctl.h"
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <sys/mman.h>
#include <orbit/orbit.h>
#include "shm/crashpoint.h"
#include "shm/members.h"
#include "shm/ring.h"
#include "shm/segment.h"
#include "shm/spot_queue.h"
#include "shm/stats.h"

#define SPOT "acct.shard-1"
#define STATS_MS 10 /* the children's agents publish every 10 ms */
#define WAIT_MS 10000

static char fleet[64];
static char out[1 << 20]; /* orbitctl output */

struct shared {
	_Atomic int phase;   /* parent <-> producer steps */
	_Atomic int gate;    /* 0: every handler of host-a waits for it */
	_Atomic int host_go; /* the host process starts hosting */
	_Atomic int host_end;
	_Atomic int gate_b, host_go_b, host_end_b; /* the same for host-b */
	uint64_t ttl_ns; /* host-a's lease TTL (0: 10 s); host-b's: 30 s */
	_Atomic uint64_t handled;
	_Atomic uint64_t exact_early; /* records with an exact submit_ns handled before phase 2 */
	_Atomic int errors;
	struct orbit_spot_queue_caps caps;
};

static struct shared *S;

/* A child that makes the fleet's segments (an agent's and its lock's) and leaves. */
static int make_fleet(void *arg)
{
	struct orbit_test_proc pr;

	(void)arg;
	if (orbit_test_proc_start(&pr, fleet, "fleet-maker", STATS_MS))
		return 1; /* it said why */
	orbit_test_proc_stop(&pr);
	return 0;
}

/*
 * Each test's own fleet, its segments made before the actors start: the
 * host and producer processes start at once, and the first to create the
 * ring (16 MiB) and stats segments holds them while it zeroes them; an
 * agent start took 0.3-1.4 s under TSan with two CPU hogs (23-94 ms in a
 * plain build), and a second process waiting past the 2 s init bound got
 * -ORBIT_EINITTIMEOUT (a producer exited 10). Concurrent creation is
 * test_segment's matter, not this file's.
 */
static int setup(void **state)
{
	(void)state;
	orbit_test_fleet(fleet, sizeof(fleet), "spst");
	S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(S != MAP_FAILED);
	memset(S, 0, sizeof(*S));
	assert_int_equal(orbit_test_fork_run(make_fleet, NULL, WAIT_MS), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	orbit_test_spot_fleet_unlink(fleet, SPOT);
	munmap(S, sizeof(*S));
	return 0;
}

#define bad() bad_at(__LINE__)
static void bad_at(int line)
{
	fprintf(stderr, "pid %ld: unexpected at line %d\n", (long)getpid(), line);
	atomic_fetch_add(&S->errors, 1);
}

static bool wait_for(_Atomic int *w, int v)
{
	for (int ms = 0; ms < WAIT_MS; ms++) {
		if (atomic_load(w) >= v)
			return true;
		usleep(1000);
	}
	return false;
}

static void expect_exit0(pid_t pid)
{
	orbit_test_expect_exit0(pid, WAIT_MS);
}

/* ---- the host process ---- */

/* host-a (arg NULL: gate, host_go, host_end) or host-b (gate_b, ...). */
struct host_cfg {
	const char *name;
	_Atomic int *gate, *go, *end;
};

static void host_cfg_of(void *arg, struct host_cfg *c)
{
	if (arg) {
		*c = (struct host_cfg){ "host-b", &S->gate_b, &S->host_go_b, &S->host_end_b };
		return;
	}
	*c = (struct host_cfg){ "host-a", &S->gate, &S->host_go, &S->host_end };
}

static int on_spot(orbit_serial_turn_t *turn, const struct orbit_spot_record *rec, void *ctx)
{
	const struct host_cfg *c = ctx;

	(void)turn;
	while (!atomic_load(c->gate))
		usleep(500);
	if (rec->submit_exact && atomic_load(&S->phase) < 2)
		atomic_fetch_add(&S->exact_early, 1);
	atomic_fetch_add(&S->handled, 1);
	return ORBIT_SERIAL_DONE;
}

/* Host SPOT from when its go is set until its end is (arg: see host_cfg_of()). */
static int host_main(void *arg)
{
	struct orbit_worker_pool_options po;
	struct orbit_spot_host_options ho;
	orbit_worker_pool_t *pool;
	orbit_spot_host_t *h;
	struct host_cfg c;
	struct orbit_test_proc pr;
	int r;

	host_cfg_of(arg, &c);
	if (orbit_test_proc_start(&pr, fleet, c.name, STATS_MS))
		return 20;
	orbit_worker_pool_options_init(&po);
	po.nthreads = 1;
	po.no_pin = true;
	if (orbit_worker_pool_create(&po, &pool))
		return 21;
	orbit_spot_host_options_init(&ho);
	ho.spot = SPOT;
	ho.on_spot = on_spot;
	ho.ctx = &c;
	ho.executor = orbit_worker_pool_executor(pool);
	ho.caps = S->caps;
	/*
	 * Host-a holds its lease through every test but the adoption one
	 * (which sets a 2 s TTL to lose it while SIGSTOPped): 10 s. With the
	 * library's 1 s default a TSan host at load 16 with two CPU hogs
	 * missed its renewals once in 30 runs (lost 1, nothing completed). A
	 * sleeping host still finds a claim that rang nobody within one unblock
	 * bound, whatever its TTL. Host-b's lease is never waited for: 30 s.
	 */
	ho.lease_ttl_ns = arg ? 30000000000ull : S->ttl_ns ? S->ttl_ns : 10000000000ull;
	if (!wait_for(c.go, 1))
		return 22;
	/* -EBUSY until an older host's lease ran out (adoption is TTL-bound) */
	for (int ms = 0; (r = orbit_spot_host_start(pr.agent, &ho, &h)) == -EBUSY && ms < WAIT_MS;
	     ms += 5)
		usleep(5000);
	if (r) {
		fprintf(stderr, "host_start: %s\n", orbit_strerror(r));
		return 23;
	}
	if (!wait_for(c.end, 1))
		return 24;
	atomic_store(c.gate, 1); /* nothing may stay blocked at stop */
	r = orbit_spot_host_stop(h);
	orbit_worker_pool_destroy(pool);
	orbit_test_proc_stop(&pr);
	return r ? 25 : 0;
}

/* ---- producers ---- */

static orbit_spot_client_t *client_open(struct orbit_test_proc *pr, const char *name)
{
	struct orbit_spot_client_options co;
	orbit_spot_client_t *cl = NULL;

	if (orbit_test_proc_start(pr, fleet, name, STATS_MS))
		return NULL;
	orbit_spot_client_options_init(&co);
	co.caps = S->caps;
	if (orbit_spot_client_open(pr->agent, SPOT, &co, &cl))
		return NULL;
	return cl;
}

/* @n submits of @len bytes, each expected to return @want. */
/*
 * false: each submit that is to be accepted waits for a new tick of
 * CLOCK_MONOTONIC_COARSE first, so that its submit_ns is exact (the first
 * accepted record of a producer in a tick) and the submit-to-run
 * histogram, which counts the exact stamps only, counts every record.
 */
static bool burst;

static uint64_t coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void submits(orbit_spot_client_t *cl, int n, uint32_t len, int want)
{
	static const char buf[512];

	for (int i = 0; i < n; i++) {
		uint64_t c = coarse_ns();

		while (!burst && want == 0 && coarse_ns() == c)
			usleep(200);
		int r = orbit_spot_submit_spot(cl, buf, len, NULL);

		if (r != want) {
			fprintf(stderr, "submit %d of %u bytes: %d, expected %d\n", i, len, r,
				want);
			bad();
		}
	}
}

/*
 * The counters test's producer, in steps the parent checks in between:
 * 1: no host: 8 accepted (the item cap), 5 refused by count, one too big,
 *    one wait for room that times out;
 * 3: the host runs, its handlers wait at the gate: 2 x 120 bytes accepted,
 *    3 x 120 refused by bytes (the byte cap is 256), 6 x 0 bytes accepted,
 *    4 x 0 refused by count.
 */
static int counters_producer(void *arg)
{
	orbit_spot_client_t *cl;
	struct orbit_test_proc pr;

	(void)arg;
	cl = client_open(&pr, "producer-a");
	if (!cl)
		return 10;
	submits(cl, 8, 16, 0);
	submits(cl, 5, 16, -EAGAIN);
	submits(cl, 1, 300, -E2BIG);
	if (orbit_spot_client_wait_room(cl, ORBIT_SPOT_LANE_APP, 16, 1000000) != -ETIMEDOUT)
		bad();
	atomic_store(&S->phase, 1);
	if (!wait_for(&S->phase, 2))
		return 11;
	submits(cl, 2, 120, 0);
	submits(cl, 3, 120, -EAGAIN);
	submits(cl, 6, 0, 0);
	submits(cl, 4, 0, -EAGAIN);
	atomic_store(&S->phase, 3);
	if (!wait_for(&S->phase, 4))
		return 12;
	orbit_spot_client_close(cl);
	atomic_store(&S->phase, 5);
	if (!wait_for(&S->phase, 6))
		return 13;
	orbit_test_proc_stop(&pr);
	return 0;
}

/* ---- reading what the agents published ---- */

/* The slot of @role for SPOT of the member named @member: 1 live, 0 its writer gone, -1 none. */
static int slot_of(orbit_fleet_t *f, const char *member, enum orbit_fleet_spot_role role,
		   struct orbit_fleet_spot_stats *st)
{
	for (uint32_t r = 0; r < orbit_fleet_rows(f); r++) {
		struct orbit_fleet_member m;

		if (orbit_fleet_member(f, r, &m) || strcmp(m.name, member))
			continue;
		for (uint32_t k = 0; k < ORBIT_FLEET_SPOT_SLOTS; k++) {
			if (orbit_fleet_spot_stats_read(f, r, k, st) == 0 && st->role == role &&
			    !strcmp(st->spot, SPOT) && st->pid == m.pid)
				return m.alive ? 1 : 0;
		}
	}
	return -1;
}

/* Wait until @member's slot of @role holds @want[i] for every i with want[i] != SKIP,
 * and @latency_count records in its histogram (SKIP: any). */
#define SKIP UINT64_MAX
static void expect_counters(const char *member, enum orbit_fleet_spot_role role,
			    const uint64_t *want, uint64_t latency_count,
			    struct orbit_fleet_spot_stats *got)
{
	struct orbit_fleet_options fo = { .size = sizeof(fo), .fleet = fleet };
	unsigned n = orbit_stats_spot_counter_count(role);
	orbit_fleet_t *f;
	bool ok = false;

	memset(got, 0, sizeof(*got));
	for (int ms = 0; ms < WAIT_MS && !ok; ms += 2) {
		/* opened each time: the first child's agent may still be creating
		 * the fleet's segments (a fleet handle opens what exists then) */
		if (orbit_fleet_open(&fo, &f) == 0) {
			ok = slot_of(f, member, role, got) == 1;
			orbit_fleet_close(f);
		}
		for (unsigned i = 0; ok && i < n; i++)
			ok = want[i] == SKIP || got->counters[i] == want[i];
		ok = ok && (latency_count == SKIP || got->latency.count == latency_count);
		if (!ok)
			usleep(2000);
	}
	if (!ok) {
		for (unsigned i = 0; i < n; i++)
			print_error("%s %s: %s = %" PRIu64 " (want %" PRIu64 ")\n", member, SPOT,
				    orbit_stats_spot_counter_name(role, i), got->counters[i],
				    want[i]);
		print_error("latency count %" PRIu64 " (want %" PRIu64 ")\n", got->latency.count,
			    latency_count);
	}
	assert_true(ok);
}

/* Run "orbitctl --fleet F ARGS" (through sh, stderr too), its output in out[]. */
static int ctl(const char *args)
{
	return orbit_test_ctl_run(out, sizeof(out), fleet, args, true);
}

static void expect_out(const char *needle)
{
	orbit_test_expect_in(out, needle);
}

/* The Prometheus sample of a Spot series, e.g. family{fleet=..,member=..,spot=..} value. */
static void expect_prom(const char *family, const char *member, uint64_t v)
{
	char line[512];

	snprintf(line, sizeof(line), "\n%s{fleet=\"%s\",member=\"%s\",spot=\"%s\"} %" PRIu64 "\n",
		 family, fleet, member, SPOT, v);
	expect_out(line);
}

/* The queue's epoch, through orbit_fleet_spots(). */
static int spot_cb(const struct orbit_fleet_spot *sp, void *ctx)
{
	if (!strcmp(sp->name, SPOT))
		*(struct orbit_fleet_spot *)ctx = *sp;
	return 0;
}

static void fleet_spot(struct orbit_fleet_spot *sp)
{
	struct orbit_fleet_options fo = { .size = sizeof(fo), .fleet = fleet };
	orbit_fleet_t *f;

	memset(sp, 0, sizeof(*sp));
	assert_int_equal(orbit_fleet_open(&fo, &f), 0);
	assert_true(orbit_fleet_spots(f, spot_cb, sp) >= 1);
	orbit_fleet_close(f);
	assert_string_equal(sp->name, SPOT);
}

/* ---- tests ---- */

/*
 * Every counter of the host's and the client's slots equals what the test
 * did, across three processes, and orbitctl shows them in its table, JSON
 * and Prometheus text.
 */
static void test_counters_equal_what_the_test_did(void **state)
{
	struct orbit_fleet_spot_stats got;
	struct orbit_fleet_spot sp;
	uint64_t cw[ORBIT_SPOT_CLIENT__COUNT], hw[ORBIT_SPOT_HOST__COUNT];
	char py[1536];
	pid_t prod, host;

	(void)state;
	S->caps.app_items = 8;
	S->caps.app_bytes = 256;
	S->gate = 1;
	host = orbit_test_spawn(host_main, NULL); /* starts its agent, waits for host_go */
	prod = orbit_test_spawn(counters_producer, NULL);
	assert_true(wait_for(&S->phase, 1));

	/* step 1, no host yet: the client's own counters */
	cw[ORBIT_SPOT_CLIENT_SUBMITTED] = 8;
	cw[ORBIT_SPOT_CLIENT_EAGAIN] = 5;
	cw[ORBIT_SPOT_CLIENT_FAILED] = 1;
	cw[ORBIT_SPOT_CLIENT_WAITS] = 1;
	cw[ORBIT_SPOT_CLIENT_WAIT_TIMEOUTS] = 1;
	expect_counters("producer-a", ORBIT_FLEET_SPOT_CLIENT, cw, SKIP, &got);
	assert_int_equal(got.latency.count, 0);

	/* the host takes the 8 over: they are not its accepted (queued before its takeover) */
	atomic_store(&S->host_go, 1);
	for (unsigned i = 0; i < ORBIT_SPOT_HOST__COUNT; i++)
		hw[i] = 0;
	hw[ORBIT_SPOT_HOST_DELIVERED] = 8;
	hw[ORBIT_SPOT_HOST_COMPLETED] = 8;
	hw[ORBIT_SPOT_HOST_EPOCH] = SKIP;
	hw[ORBIT_SPOT_HOST_LATENCY_MAX_NS] = SKIP;
	expect_counters("host-a", ORBIT_FLEET_SPOT_HOST, hw, 8, &got);
	fleet_spot(&sp);
	assert_int_equal(got.counters[ORBIT_SPOT_HOST_EPOCH], sp.epoch);
	assert_true(got.counters[ORBIT_SPOT_HOST_EPOCH] > 0);
	assert_int_equal(sp.lanes[0].rejected_count, 5); /* the queue's lifetime count */
	assert_true(sp.have_host_stats);
	assert_string_equal(sp.host_member, "host-a");
	assert_int_equal(sp.latency_count, 8);

	/* step 3: the handlers wait at the gate, the lane fills by bytes then by count */
	atomic_store(&S->gate, 0);
	atomic_store(&S->phase, 2);
	assert_true(wait_for(&S->phase, 3));
	hw[ORBIT_SPOT_HOST_ACCEPTED] = 8;
	hw[ORBIT_SPOT_HOST_REJECTED_BYTES] = 3;
	hw[ORBIT_SPOT_HOST_REJECTED_COUNT] = 4;
	hw[ORBIT_SPOT_HOST_DELIVERED] = 16;
	hw[ORBIT_SPOT_HOST_IN_FLIGHT] = 8;
	hw[ORBIT_SPOT_HOST_APP_DEPTH] = 8;
	hw[ORBIT_SPOT_HOST_APP_BYTES] = 240;
	/* 9 started: the 8 of step 1 and the first of step 3, waiting at the gate */
	expect_counters("host-a", ORBIT_FLEET_SPOT_HOST, hw, 9, &got);
	cw[ORBIT_SPOT_CLIENT_SUBMITTED] = 16;
	cw[ORBIT_SPOT_CLIENT_EAGAIN] = 12;
	expect_counters("producer-a", ORBIT_FLEET_SPOT_CLIENT, cw, SKIP, &got);

	/* orbitctl: the stats table, JSON and Prometheus text carry both slots */
	assert_int_equal(ctl("stats"), 0);
	orbit_test_assert_80_columns(out);
	expect_out("  spot " SPOT " (host)\n");
	expect_out("  spot " SPOT " (client)\n");
	snprintf(py, sizeof(py), "    %-15s %19d", "rejected_bytes", 3);
	expect_out(py);
	snprintf(py, sizeof(py), "  %-15s %19d\n", "eagain", 12);
	expect_out(py);
	snprintf(py, sizeof(py), "    %-16s n=%-10d p50<=", "submit_to_run", 9);
	expect_out(py);
	snprintf(
	    py, sizeof(py),
	    "stats --json | python3 -c 'import json,sys; d=json.load(sys.stdin); "
	    "S=[(m[\"name\"],s) for m in d[\"members\"] for s in m[\"spots\"]]; "
	    "h=[s for n,s in S if n==\"host-a\"][0]; c=[s for n,s in S if n==\"producer-a\"][0]; "
	    "assert h[\"spot\"]==\"%s\" and h[\"role\"]==\"host\" and h[\"live\"] is True; "
	    "assert h[\"counters\"][\"accepted\"]==8 and h[\"counters\"][\"rejected_count\"]==4; "
	    "assert h[\"counters\"][\"in_flight\"]==8 and h[\"counters\"][\"app_bytes\"]==240; "
	    "l=h[\"histograms\"][\"submit_to_run\"]; "
	    "assert l[\"count\"]==9==sum(b[\"count\"] for b in l[\"buckets\"]); "
	    "assert c[\"role\"]==\"client\" and c[\"counters\"][\"submitted\"]==16; "
	    "assert c[\"counters\"][\"eagain\"]==12 and c[\"counters\"][\"wait_timeouts\"]==1; "
	    "assert c[\"histograms\"]=={}; print(\"json-ok\")'",
	    SPOT);
	assert_int_equal(ctl(py), 0);
	expect_out("json-ok");
	assert_int_equal(ctl("stats --prometheus"), 0);
	expect_out("# TYPE orbit_spot_host_accepted_total counter\n");
	expect_out("# TYPE orbit_spot_host_in_flight gauge\n");
	expect_out("# TYPE orbit_spot_submit_to_run_seconds histogram\n");
	expect_prom("orbit_spot_host_accepted_total", "host-a", 8);
	expect_prom("orbit_spot_host_rejected_bytes_total", "host-a", 3);
	expect_prom("orbit_spot_host_rejected_count_total", "host-a", 4);
	expect_prom("orbit_spot_host_in_flight", "host-a", 8);
	expect_prom("orbit_spot_host_app_depth", "host-a", 8);
	expect_prom("orbit_spot_client_submitted_total", "producer-a", 16);
	expect_prom("orbit_spot_client_eagain_total", "producer-a", 12);
	expect_prom("orbit_spot_client_waits_total", "producer-a", 1);
	expect_prom("orbit_spot_submit_to_run_seconds_count", "host-a", 9);
	snprintf(py, sizeof(py),
		 "\norbit_spot_submit_to_run_seconds_bucket{fleet=\"%s\",member=\"host-a\","
		 "spot=\"%s\",le=\"+Inf\"} 9\n",
		 fleet, SPOT);
	expect_out(py);

	/* the gate opens: everything completes, nothing stays in flight or reserved */
	atomic_store(&S->gate, 1);
	hw[ORBIT_SPOT_HOST_COMPLETED] = 16;
	hw[ORBIT_SPOT_HOST_IN_FLIGHT] = 0;
	hw[ORBIT_SPOT_HOST_APP_DEPTH] = 0;
	hw[ORBIT_SPOT_HOST_APP_BYTES] = 0;
	expect_counters("host-a", ORBIT_FLEET_SPOT_HOST, hw, 16, &got);

	/* a closed client and a stopped host leave no slot */
	atomic_store(&S->phase, 4);
	assert_true(wait_for(&S->phase, 5));
	{
		struct orbit_fleet_options fo = { .size = sizeof(fo), .fleet = fleet };
		orbit_fleet_t *f;

		assert_int_equal(orbit_fleet_open(&fo, &f), 0);
		assert_int_equal(slot_of(f, "producer-a", ORBIT_FLEET_SPOT_CLIENT, &got), -1);
		assert_int_equal(slot_of(f, "host-a", ORBIT_FLEET_SPOT_HOST, &got), 1);
		atomic_store(&S->host_end, 1);
		expect_exit0(host);
		assert_int_equal(slot_of(f, "host-a", ORBIT_FLEET_SPOT_HOST, &got), -1);
		orbit_fleet_close(f);
	}
	atomic_store(&S->phase, 6);
	expect_exit0(prod);
	assert_int_equal(atomic_load(&S->errors), 0);
}

/* The latency test's producer: 40 records in a burst, then (phase 2) 60 more, one at a time,
 * each in a tick of its own. */
static int latency_producer(void *arg)
{
	orbit_spot_client_t *cl;
	struct orbit_test_proc pr;

	(void)arg;
	cl = client_open(&pr, "producer-l");
	if (!cl)
		return 10;
	burst = true;
	submits(cl, 40, 8, 0);
	burst = false;
	atomic_store(&S->phase, 1);
	if (!wait_for(&S->phase, 2))
		return 11;
	for (uint64_t i = 0; i < 60; i++) {
		submits(cl, 1, 8, 0);
		for (int ms = 0; atomic_load(&S->handled) < 41 + i; ms++) {
			if (ms > WAIT_MS * 10)
				return 12;
			usleep(100);
		}
	}
	orbit_spot_client_close(cl);
	orbit_test_proc_stop(&pr);
	return 0;
}

/*
 * A known latency distribution: 40 records wait 600 ms for their host
 * (submitted in a burst, then the host starts 600 ms later), 60 run at
 * once (each submitted to an idle host, in a coarse tick of its own). The
 * histogram samples the records with an exact submit_ns (issue 11
 * "Watch"; doc/spot-queues.md "submit_ns"): of the burst at least 3 (the
 * first and every 16th), of the 60 all. The slow ones are all in the
 * buckets from (2^29, 2^30] ns on, the fast ones below 2^29 ns; p50 is a
 * fast record's bucket, p99 a slow one's, max >= 600 ms; orbitctl spots
 * shows them.
 */
static void test_submit_to_run_percentiles_land_in_their_buckets(void **state)
{
	struct orbit_fleet_spot_stats got;
	struct orbit_fleet_spot sp;
	uint64_t hw[ORBIT_SPOT_HOST__COUNT], slow = 0, fast = 0, max;
	unsigned b600 = orbit__stats_bucket(600000000ull);
	char py[1024];
	pid_t prod, host;

	(void)state;
	assert_int_equal(b600, 30); /* (2^29, 2^30] ns: 536.9 ms to 1.07 s */
	S->gate = 1;
	host = orbit_test_spawn(host_main, NULL);
	prod = orbit_test_spawn(latency_producer, NULL);
	assert_true(wait_for(&S->phase, 1));
	usleep(600000);
	atomic_store(&S->host_go, 1);
	for (unsigned i = 0; i < ORBIT_SPOT_HOST__COUNT; i++)
		hw[i] = SKIP;
	hw[ORBIT_SPOT_HOST_COMPLETED] = 40;
	expect_counters("host-a", ORBIT_FLEET_SPOT_HOST, hw, SKIP, &got);
	atomic_store(&S->phase, 2);
	expect_exit0(prod);
	hw[ORBIT_SPOT_HOST_COMPLETED] = 100;
	hw[ORBIT_SPOT_HOST_ACCEPTED] = 60;
	expect_counters("host-a", ORBIT_FLEET_SPOT_HOST, hw, SKIP, &got);

	uint64_t early = atomic_load(&S->exact_early), want = early + 60;

	print_message("%" PRIu64 " of the 40 burst records stamped exactly\n", early);
	assert_true(early >= 3 && early <= 40);
	assert_int_equal(got.latency.count, want);
	for (unsigned b = 0; b < ORBIT_STATS_NBUCKETS; b++) {
		if (got.latency.buckets[b] && b >= 28)
			print_message("bucket %u (<= %" PRIu64 " ns): %" PRIu64 "\n", b,
				      orbit_stats_bucket_le(b), got.latency.buckets[b]);
		if (b >= b600)
			slow += got.latency.buckets[b];
		else
			fast += got.latency.buckets[b];
	}
	assert_int_equal(slow, early);
	assert_int_equal(fast, 60);
	max = got.counters[ORBIT_SPOT_HOST_LATENCY_MAX_NS];
	assert_true(max >= 600000000ull);
	assert_true(orbit_stats_hist_quantile(&got.latency, 0.50) <=
		    orbit_stats_bucket_le(b600 - 1));
	assert_true(orbit_stats_hist_quantile(&got.latency, 0.99) >= orbit_stats_bucket_le(b600));
	assert_true(orbit_stats_hist_quantile(&got.latency, 0.99) <=
		    orbit_stats_bucket_le(orbit__stats_bucket(max)));

	fleet_spot(&sp);
	assert_true(sp.have_host_stats);
	assert_int_equal(sp.latency_count, want);
	assert_int_equal(sp.latency_p50_ns, orbit_stats_hist_quantile(&got.latency, 0.50));
	assert_int_equal(sp.latency_p99_ns, orbit_stats_hist_quantile(&got.latency, 0.99));
	assert_int_equal(sp.latency_max_ns, max);
	snprintf(py, sizeof(py),
		 "spots --json | python3 -c 'import json,sys; d=json.load(sys.stdin); "
		 "s=[x for x in d[\"spots\"] if x[\"spot\"]==\"%s\"][0][\"host_stats\"]; "
		 "l=s[\"submit_to_run\"]; assert s[\"member\"]==\"host-a\"; "
		 "assert l[\"count\"]==%" PRIu64 " and l[\"p50_le_ns\"]==%" PRIu64
		 " and l[\"p99_le_ns\"]==%" PRIu64 " and l[\"max_ns\"]==%" PRIu64
		 "; print(\"json-ok\")'",
		 SPOT, want, sp.latency_p50_ns, sp.latency_p99_ns, max);
	assert_int_equal(ctl(py), 0);
	expect_out("json-ok");
	assert_int_equal(ctl("spots"), 0);
	orbit_test_assert_80_columns(out);
	expect_out(" run p50<=");
	expect_out(" max ");
	char n_want[32];

	snprintf(n_want, sizeof(n_want), " n %" PRIu64 "\n", want);
	expect_out(n_want);

	atomic_store(&S->host_end, 1);
	expect_exit0(host);
	assert_int_equal(atomic_load(&S->errors), 0);
}

#define DYING_STATS_MS 60000 /* a dying producer's agent publishes once, at its start */

/*
 * 1 when @member's stats row and its client slot of SPOT read back with the
 * same publish time twice, 50 ms apart: its agent is between publishes.
 */
static bool quiet_between_publishes(const char *member)
{
	struct orbit_fleet_options fo = { .size = sizeof(fo), .fleet = fleet };
	struct orbit_fleet_spot_stats a, b;
	struct orbit_fleet_stats ra, rb;
	orbit_fleet_t *f;
	bool quiet = false;

	if (orbit_fleet_open(&fo, &f))
		return false;
	if (slot_of(f, member, ORBIT_FLEET_SPOT_CLIENT, &a) == 1 &&
	    orbit_fleet_stats_read(f, a.row, &ra) == 0) {
		usleep(50000);
		quiet = slot_of(f, member, ORBIT_FLEET_SPOT_CLIENT, &b) == 1 &&
			orbit_fleet_stats_read(f, a.row, &rb) == 0 && b.row == a.row &&
			b.published_real_ns == a.published_real_ns &&
			rb.published_real_ns == ra.published_real_ns;
	}
	orbit_fleet_close(f);
	return quiet;
}

/*
 * A producer that dies (KILL) or stops (STOP) right after claiming its
 * record. Its agent publishes its stats row and client slot once, at its
 * start (DYING_STATS_MS), and the crash point is armed only once both read
 * back unchanged: a kill or a stop that lands inside its agent's publish
 * leaves that row or slot odd for good, which every reader rightly refuses
 * (a torn record is never shown), and the dead member's row and slot this
 * test looks for were gone (2 runs in 30 under TSan, where a publish of
 * ~600 atomic stores is long enough to be hit).
 */
static int dying_producer(void *arg)
{
	const char *name = arg;
	struct orbit_spot_client_options co;
	orbit_spot_client_t *cl = NULL;
	struct orbit_test_proc pr;
	int ms = 0;

	if (orbit_test_proc_start(&pr, fleet, name, DYING_STATS_MS))
		return 10;
	orbit_spot_client_options_init(&co);
	co.caps = S->caps;
	if (orbit_spot_client_open(pr.agent, SPOT, &co, &cl))
		return 10;
	for (; !quiet_between_publishes(name); ms += 50)
		if (ms > WAIT_MS)
			return 12;
	orbit__crashpoint_arm("spotq.after_claim", 1,
			      !strcmp(name, "producer-dead") ? ORBIT_CRASH_KILL : ORBIT_CRASH_STOP);
	orbit_spot_submit_spot(cl, "x", 1, NULL); /* never returns */
	return 11;
}

static int healthy_producer(void *arg)
{
	orbit_spot_client_t *cl;
	struct orbit_test_proc pr;

	(void)arg;
	cl = client_open(&pr, "producer-c");
	if (!cl)
		return 10;
	submits(cl, 3, 8, 0);
	orbit_spot_client_close(cl);
	orbit_test_proc_stop(&pr);
	return 0;
}

/*
 * Aborted records are counted by cause: a producer SIGKILLed after its
 * claim (proved dead) and one stopped after its claim past the unblock
 * bound (alive). The dead producer's client slot stays with its pid and
 * is shown gone (JSON live false) with its row by stats --all only, and
 * left out of Prometheus.
 */
static void test_aborted_by_dead_producer_and_by_unblock_bound(void **state)
{
	struct orbit_fleet_spot_stats got;
	struct orbit_fleet_spot sp;
	uint64_t hw[ORBIT_SPOT_HOST__COUNT];
	pid_t host, dead, stopped;
	int st;

	(void)state;
	/*
	 * The stopped producer is aborted after this bound; the killed one must
	 * be proved dead before it. The proof is the kernel dropping the dead
	 * process's member row lock, which comes after its address space is
	 * torn down: measured from kill() to the lock free, 0.3 ms in a plain
	 * build, up to 38 ms for a small TSan process with two CPU hogs; the
	 * test's TSan producers are larger, and with 100 ms the host saw the
	 * killed one still "alive" past the bound twice in 40 runs (aborted
	 * by the unblock bound, not as dead).
	 */
	S->caps.unblock_ms = 2000;
	S->gate = 1;
	S->host_go = 1;
	host = orbit_test_spawn(host_main, NULL);
	for (unsigned i = 0; i < ORBIT_SPOT_HOST__COUNT; i++)
		hw[i] = SKIP;
	hw[ORBIT_SPOT_HOST_COMPLETED] = 0;
	expect_counters("host-a", ORBIT_FLEET_SPOT_HOST, hw, SKIP, &got);

	dead = orbit_test_spawn(dying_producer, "producer-dead");
	st = orbit_test_wait(dead, WAIT_MS);
	assert_true(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	hw[ORBIT_SPOT_HOST_ABORTED_DEAD] = 1;
	hw[ORBIT_SPOT_HOST_ABORTED_UNBLOCK] = 0;
	expect_counters("host-a", ORBIT_FLEET_SPOT_HOST, hw, SKIP, &got);

	stopped = orbit_test_spawn(dying_producer, "producer-stopped");
	hw[ORBIT_SPOT_HOST_ABORTED_UNBLOCK] = 1;
	expect_counters("host-a", ORBIT_FLEET_SPOT_HOST, hw, SKIP, &got);
	kill(stopped, SIGKILL);
	assert_true(orbit_test_wait(stopped, WAIT_MS) >= 0);

	/* the killed producers' slots: still there (until their rows are taken
	 * again: the second may have taken the first's), their writers gone:
	 * shown with their rows only with --all */
	assert_int_equal(ctl("stats --json | python3 -c 'import json,sys; d=json.load(sys.stdin); "
			     "s=[s for m in d[\"members\"] for s in m[\"spots\"] "
			     "if s[\"role\"]==\"client\"]; "
			     "assert s==[] and d[\"dead_rows_hidden\"]>=1; print(\"json-ok\")'"),
			 0);
	expect_out("json-ok");
	assert_int_equal(ctl("stats"), 0);
	assert_null(strstr(out, "(client"));
	expect_out(" of dead members not shown; --all shows them)\n");
	assert_int_equal(
	    ctl("stats --all --json | python3 -c 'import json,sys; d=json.load(sys.stdin); "
		"s=[s for m in d[\"members\"] for s in m[\"spots\"] "
		"if s[\"role\"]==\"client\"]; "
		"assert len(s)>=1 and all(not x[\"live\"] for x in s); "
		"print(\"json-ok\")'"),
	    0);
	expect_out("json-ok");
	assert_int_equal(ctl("stats --all"), 0);
	expect_out("  spot " SPOT " (client, gone)\n");
	assert_int_equal(ctl("stats --prometheus"), 0);
	expect_out("# TYPE orbit_spot_client_submitted_total counter\n");
	assert_null(strstr(out, "orbit_spot_client_submitted_total{"));
	expect_prom("orbit_spot_host_aborted_dead_total", "host-a", 1);
	expect_prom("orbit_spot_host_aborted_unblock_total", "host-a", 1);

	expect_exit0(orbit_test_spawn(healthy_producer, NULL));
	hw[ORBIT_SPOT_HOST_COMPLETED] = 3;
	hw[ORBIT_SPOT_HOST_ACCEPTED] = 3;
	expect_counters("host-a", ORBIT_FLEET_SPOT_HOST, hw, SKIP, &got);
	fleet_spot(&sp);
	assert_int_equal(sp.lanes[0].aborted, 2);

	atomic_store(&S->host_end, 1);
	expect_exit0(host);
	assert_int_equal(atomic_load(&S->errors), 0);
}

static int three_producer(void *arg)
{
	orbit_spot_client_t *cl;
	struct orbit_test_proc pr;

	(void)arg;
	cl = client_open(&pr, "producer-r");
	if (!cl)
		return 10;
	submits(cl, 3, 8, 0);
	orbit_spot_client_close(cl);
	orbit_test_proc_stop(&pr);
	return 0;
}

/*
 * Redelivered and fenced: host-a takes 3 records and holds them at its
 * gate, is SIGSTOPped past its 2 s lease; host-b adopts and gets the 3
 * again (redelivered 3, completed 3); host-a resumed finishes its
 * handlers and every complete is refused (fenced 3, lost 1, completed 0).
 * Host-a's lease had 200 ms (a renewal every 50 ms): under ASan at load
 * ~20 it ran out before the records came (lost 1, delivered 0), 1 run in
 * 11. Host-b's lease is never waited for: 30 s.
 */
static void test_redelivered_and_fenced_after_adoption(void **state)
{
	struct orbit_fleet_spot_stats got;
	uint64_t hw[ORBIT_SPOT_HOST__COUNT];
	pid_t a, b;

	(void)state;
	S->ttl_ns = 2000000000ull;
	S->host_go = 1;
	a = orbit_test_spawn(host_main, NULL);
	expect_exit0(orbit_test_spawn(three_producer, NULL));
	for (unsigned i = 0; i < ORBIT_SPOT_HOST__COUNT; i++)
		hw[i] = SKIP;
	hw[ORBIT_SPOT_HOST_DELIVERED] = 3;
	hw[ORBIT_SPOT_HOST_IN_FLIGHT] = 3;
	expect_counters("host-a", ORBIT_FLEET_SPOT_HOST, hw, 1, &got);
	assert_int_equal(kill(a, SIGSTOP), 0);

	S->gate_b = 1;
	S->host_go_b = 1;
	b = orbit_test_spawn(host_main, (void *)1);
	hw[ORBIT_SPOT_HOST_IN_FLIGHT] = 0;
	hw[ORBIT_SPOT_HOST_REDELIVERED] = 3;
	hw[ORBIT_SPOT_HOST_COMPLETED] = 3;
	hw[ORBIT_SPOT_HOST_FENCED] = 0;
	hw[ORBIT_SPOT_HOST_LOST] = 0;
	expect_counters("host-b", ORBIT_FLEET_SPOT_HOST, hw, 3, &got);

	/* A resumes past its lease: the handler it was running finishes and
	 * its complete is fenced; the two records queued behind it never
	 * start there (B ran them), so they are neither completed nor fenced */
	assert_int_equal(kill(a, SIGCONT), 0);
	atomic_store(&S->gate, 1);
	hw[ORBIT_SPOT_HOST_REDELIVERED] = 0;
	hw[ORBIT_SPOT_HOST_COMPLETED] = 0;
	hw[ORBIT_SPOT_HOST_FENCED] = 1;
	hw[ORBIT_SPOT_HOST_LOST] = 1;
	expect_counters("host-a", ORBIT_FLEET_SPOT_HOST, hw, 1, &got);
	assert_int_equal(ctl("stats --prometheus"), 0);
	expect_prom("orbit_spot_host_fenced_total", "host-a", 1);
	expect_prom("orbit_spot_host_lost", "host-a", 1);
	expect_prom("orbit_spot_host_redelivered_total", "host-b", 3);

	atomic_store(&S->host_end, 1);
	atomic_store(&S->host_end_b, 1);
	expect_exit0(a);
	expect_exit0(b);
	assert_int_equal(atomic_load(&S->errors), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_counters_equal_what_the_test_did, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
		    test_submit_to_run_percentiles_land_in_their_buckets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_aborted_by_dead_producer_and_by_unblock_bound,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_redelivered_and_fenced_after_adoption, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
