// SPDX-License-Identifier: MIT
/*
 * tests/mp/test_spot_host.c: a Spot hosted by one process and fed by
 * others through the public API (orbit/spot_queue.h; issue 11, the
 * agent-side half), with real processes: producers submit, a host runs
 * the records on its Spot coordinator, and a verifier in the parent reads
 * what the handlers saw from a shared log (anonymous MAP_SHARED memory
 * made before any fork, so it survives a SIGKILLed host):
 *   - 4 producer processes x 100,000 records (1,000,000 in check-long): no
 *     loss, no duplicate, per-producer order;
 *   - the host SIGKILLed mid-handler, and between the end of a handler and
 *     its complete: a second process, refused while the first lived,
 *     adopts within milliseconds (the hosting lease is freed when the
 *     member directory proves the host dead, not after its 5 s TTL) and
 *     gets every uncompleted record again, flagged redelivered, and
 *     nothing completed twice;
 *   - a host SIGSTOPped past its lease and resumed is fenced: its
 *     completes change nothing and it reports the loss;
 *   - backpressure by count and by bytes, and the coordinator's own
 *     -EAGAIN, through the public API, never losing a record;
 *   - records submitted with no host wait for the host that comes;
 *   - the take goes on (on the host thread) while the pool's only worker
 *     runs a handler;
 *   - a stop called from a task of the host's own executor returns;
 *   - a host lost to a closed coordinator frees its lease once its
 *     handlers are back, and the next host starts at once, also when the
 *     first release met a busy lock serializer;
 *   - a failing pthread_join() in orbit_spot_host_stop() aborts (house
 *     style: a failing pthread call on a valid object is a broken
 *     invariant), naming the call.
 * Each child process starts its own lock handle and agent; the parent
 * starts no thread before it forks.
 */
#include "config.h"

#include "orbit_test.h"
#include "orbit_test_proc.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <orbit/orbit.h>
#include "agent/spot.h"
#include "shm/crashpoint.h"
#include "shm/members.h"
#include "shm/ring.h"
#include "shm/segment.h"
#include "shm/spot_queue.h"

#if defined(__SANITIZE_THREAD__)
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "die_after_fork=0";
}
#endif

#define SPOT "bank.shard-3"
#define MAXP 4

static char fleet[64];

struct entry {
	uint32_t producer;
	uint8_t host; /* 1 or 2 */
	uint8_t redelivered;
	uint8_t kind;
	uint8_t pad;
	uint64_t i;
	uint64_t epoch;
	uint64_t seq;
};

/* What children report and the log, in shared anonymous memory. */
struct shared {
	_Atomic uint64_t n;	     /* log entries */
	_Atomic uint64_t distinct;   /* records whose handler finished once */
	_Atomic uint64_t handled[3]; /* handler starts per host */
	_Atomic int gate;	     /* releases a handler held at gate_at */
	_Atomic int host_up[3];	     /* host started */
	_Atomic int busy_seen[3];    /* host_start answered -EBUSY first */
	_Atomic int lost_calls[3];   /* on_lost calls */
	_Atomic int lost_reason[3];
	_Atomic int final_state[3];
	_Atomic int errors;	      /* unexpected codes in children */
	_Atomic uint64_t start_ns[3]; /* when host_start returned 0 */
	_Atomic uint64_t run_ns[3];   /* when its latest handler started */
	struct orbit_spot_host_stats st[3];
	uint64_t total; /* records the test submits */
	uint64_t per;	/* per producer */
	struct entry *log;
	_Atomic uint8_t *seen;
};

static struct shared *S;
static size_t S_bytes;

struct payload {
	uint32_t p;
	uint32_t pad;
	uint64_t i;
};

static void shared_make(uint64_t per, unsigned producers, uint64_t log_max)
{
	size_t off_log = (sizeof(struct shared) + 63) & ~(size_t)63;
	size_t off_seen = off_log + log_max * sizeof(struct entry);

	S_bytes = off_seen + per * producers;
	S = mmap(NULL, S_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(S != MAP_FAILED);
	S->log = (struct entry *)((char *)S + off_log);
	S->seen = (_Atomic uint8_t *)((char *)S + off_seen);
	S->per = per;
	S->total = per * producers;
}

static void shared_drop(void)
{
	munmap(S, S_bytes);
	S = NULL;
}

static int setup(void **state)
{
	(void)state;
	orbit_test_fleet(fleet, sizeof(fleet), "spoth");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	orbit_test_spot_fleet_unlink(fleet, SPOT);
	return 0;
}

/* A 1-thread worker pool, unpinned (the hosts' executor in these tests). */
static int one_thread_pool(orbit_worker_pool_t **pool)
{
	struct orbit_worker_pool_options po;

	orbit_worker_pool_options_init(&po);
	po.nthreads = 1;
	po.no_pin = true;
	return orbit_worker_pool_create(&po, pool);
}

#define bad() bad_at(__LINE__)
static void bad_at(int line)
{
	fprintf(stderr, "pid %ld: unexpected at line %d\n", (long)getpid(), line);
	atomic_fetch_add(&S->errors, 1);
}

/* ---- producers ---- */

struct prod_cfg {
	uint32_t p;
	uint64_t n;
	bool spot; /* submit for execute_spot (else execute_actor(p)) */
	struct orbit_spot_queue_caps caps;
};

static int producer_main(void *arg)
{
	struct prod_cfg *c = arg;
	struct orbit_spot_client_options co;
	orbit_spot_client_t *cl;
	struct orbit_test_proc pr;
	int r;

	if (orbit_test_proc_start(&pr, fleet, "producer", 0))
		return 10;
	orbit_spot_client_options_init(&co);
	co.caps = c->caps;
	r = orbit_spot_client_open(pr.agent, SPOT, &co, &cl);
	if (r) {
		fprintf(stderr, "client_open: %s\n", orbit_strerror(r));
		return 11;
	}
	for (uint64_t i = 0; i < c->n; i++) {
		struct payload pl = { .p = c->p, .i = i };
		uint64_t seq = 0;

		for (uint64_t t0 = orbit_test_now_ns();;) {
			r = c->spot ? orbit_spot_submit_spot(cl, &pl, sizeof(pl), &seq)
				    : orbit_spot_submit_actor(cl, c->p, &pl, sizeof(pl), &seq);
			if (r != -EAGAIN)
				break;
			if (orbit_test_now_ns() - t0 > 20000000000ull) {
				fprintf(stderr, "producer %u: no room for 20 s\n", c->p);
				return 14;
			}
			r = orbit_spot_client_wait_room(cl, ORBIT_SPOT_LANE_APP, sizeof(pl),
							100000000);
			if (r && r != -ETIMEDOUT && r != -EINTR)
				return 12;
		}
		if (r || seq != i + 1) {
			fprintf(stderr, "submit %" PRIu64 ": %d seq %" PRIu64 "\n", i, r, seq);
			return 13;
		}
	}
	orbit_spot_client_close(cl);
	orbit_test_proc_stop(&pr);
	return 0;
}

/* ---- hosts ---- */

struct host_cfg {
	int no; /* 1 or 2: tags its log entries */
	enum orbit_spot_execution_mode mode;
	uint64_t ttl_ns;
	uint64_t kill_at;	 /* SIGKILL itself in its kill_at-th handler */
	uint64_t gate_at;	 /* hold the gate_at-th handler until S->gate */
	const char *crash_label; /* arm this crash point (SIGKILL) ... */
	uint64_t crash_nth;	 /* ... at its nth hit */
	uint32_t actor_items;	 /* the Actor queues' item cap (0: default) */
	uint32_t spot_items;	 /* the Spot queue's item cap (0: default) */
	bool spot;		 /* records are execute_spot ones (else execute_actor) */
	unsigned handler_us;	 /* each handler sleeps this long */
	bool wait_lost;		 /* keep going until hosting is lost */
	bool wait_rival;	 /* the first handler waits until host 2 was refused */
	struct orbit_spot_queue_caps caps;
};

static int on_record(orbit_serial_turn_t *turn, const struct orbit_spot_record *rec, void *ctx)
{
	const struct host_cfg *c = ctx;
	struct payload pl;
	uint64_t k, at;

	(void)turn;
	if (rec->len != sizeof(pl) ||
	    rec->kind != (c->spot ? ORBIT_SPOT_ENTRY_SPOT : ORBIT_SPOT_ENTRY_ACTOR)) {
		bad();
		return ORBIT_SERIAL_DONE;
	}
	memcpy(&pl, rec->payload, sizeof(pl));
	if (pl.p >= MAXP || pl.i >= S->per || rec->actor_id != (c->spot ? 0 : pl.p)) {
		bad();
		return ORBIT_SERIAL_DONE;
	}
	k = atomic_fetch_add(&S->handled[c->no], 1) + 1;
	atomic_store(&S->run_ns[c->no], orbit_test_now_ns());
	for (int ms = 0; c->wait_rival && k == 1 && !atomic_load(&S->busy_seen[2]) && ms < 10000;
	     ms++)
		usleep(1000); /* host 2 tries (and is refused) while we live */
	at = atomic_fetch_add(&S->n, 1);
	S->log[at] = (struct entry){ .producer = pl.p,
				     .host = (uint8_t)c->no,
				     .redelivered = rec->redelivered,
				     .kind = (uint8_t)rec->kind,
				     .i = pl.i,
				     .epoch = rec->host_epoch,
				     .seq = rec->producer_seq };
	if (c->kill_at && k == c->kill_at)
		raise(SIGKILL); /* mid-handler: this record never finishes here */
	if (c->gate_at && k == c->gate_at)
		while (!atomic_load(&S->gate))
			usleep(1000);
	if (c->handler_us)
		usleep(c->handler_us);
	if (!atomic_exchange(&S->seen[(uint64_t)pl.p * S->per + pl.i], 1))
		atomic_fetch_add(&S->distinct, 1);
	return ORBIT_SERIAL_DONE;
}

static void on_lost(orbit_spot_host_t *h, int reason, void *ctx)
{
	const struct host_cfg *c = ctx;

	(void)h;
	atomic_store(&S->lost_reason[c->no], reason);
	atomic_fetch_add(&S->lost_calls[c->no], 1);
}

static int host_main(void *arg)
{
	struct host_cfg *c = arg;
	struct orbit_worker_pool_options po;
	struct orbit_spot_host_options ho;
	orbit_execution_lane_policy_t ap, sp;
	orbit_worker_pool_t *pool;
	orbit_spot_host_t *h;
	struct orbit_test_proc pr;
	int r;

	if (orbit_test_proc_start(&pr, fleet, "host", 0))
		return 20;
	orbit_worker_pool_options_init(&po);
	po.nthreads = 2;
	po.no_pin = true;
	if (orbit_worker_pool_create(&po, &pool))
		return 21;
	orbit_execution_lane_policy_init_default(&ap);
	if (c->actor_items)
		ap.application_message_capacity = c->actor_items;
	orbit_execution_lane_policy_init_default(&sp);
	if (c->spot_items)
		sp.application_message_capacity = c->spot_items;
	orbit_spot_host_options_init(&ho);
	ho.spot = SPOT;
	ho.on_actor = on_record;
	ho.on_spot = on_record;
	ho.spot_policy = &sp;
	ho.on_lost = on_lost;
	ho.ctx = c;
	ho.mode = c->mode;
	ho.executor = orbit_worker_pool_executor(pool);
	ho.actor_policy = &ap;
	/*
	 * Tests that do not set a TTL are not about losing the lease: 30 s,
	 * so that a host thread starved past the 1 s default's renewals
	 * (TSan, load 20 and CPU hogs: it lost the lease and the Spot stopped)
	 * keeps hosting. The adoption and fencing tests set their own.
	 */
	ho.lease_ttl_ns = c->ttl_ns ? c->ttl_ns : 30000000000ull;
	ho.caps = c->caps;
	for (;;) {
		r = orbit_spot_host_start(pr.agent, &ho, &h);
		if (r != -EBUSY)
			break;
		atomic_store(&S->busy_seen[c->no], 1);
		usleep(5000);
	}
	if (r) {
		fprintf(stderr, "host_start: %s\n", orbit_strerror(r));
		return 22;
	}
	atomic_store(&S->start_ns[c->no], orbit_test_now_ns());
	atomic_store(&S->host_up[c->no], 1);
	if (c->crash_label)
		orbit__crashpoint_arm(c->crash_label, c->crash_nth, ORBIT_CRASH_KILL);
	/* give up after 20 s without progress (a lost record stalls the lane for good) */
	for (uint64_t t0 = orbit_test_now_ns(), seen = 0;;) {
		uint64_t d = atomic_load(&S->distinct);
		if (c->wait_lost ? orbit_spot_host_state(h) == ORBIT_SPOT_LOST : d >= S->total)
			break;
		if (d != seen) {
			seen = d;
			t0 = orbit_test_now_ns();
		}
		if (orbit_test_now_ns() - t0 > 20000000000ull) {
			fprintf(stderr,
				"host %d: no progress for 20 s (%" PRIu64 " of %" PRIu64
				"), state %d, lost %d times (last: %s)\n",
				c->no, d, S->total, (int)orbit_spot_host_state(h),
				atomic_load(&S->lost_calls[c->no]),
				orbit_strerror(atomic_load(&S->lost_reason[c->no])));
			return 24;
		}
		usleep(1000);
	}
	/*
	 * What the handlers finished is completed before the stats are read:
	 * every record handed over has its complete answered (accepted,
	 * fenced or refused). Not in_flight == 0 alone: the host thread takes
	 * a finished record off in_flight just before its complete, and a
	 * read in between (TSan in CI) saw completed one short.
	 */
	for (int ms = 0; ms < 5000; ms++) {
		struct orbit_spot_host_stats *st = &S->st[c->no];

		orbit_spot_host_stats(h, st);
		if (st->in_flight == 0 &&
		    st->completed + st->fenced + st->complete_errors + st->not_started >=
			st->delivered)
			break;
		usleep(1000);
	}
	atomic_store(&S->final_state[c->no], orbit_spot_host_state(h));
	r = orbit_spot_host_stop(h);
	orbit_worker_pool_destroy(pool);
	orbit_test_proc_stop(&pr);
	return r ? 23 : 0;
}

/* ---- the verifier ---- */

/*
 * Every record was seen; a record seen twice is flagged redelivered the
 * second time; a record host 1 started and host 2 got again is flagged;
 * per producer, each host saw increasing sequence numbers (first
 * deliveries; a redelivered record may repeat the one before it).
 */
static void verify(unsigned producers, bool expect_redelivery)
{
	uint64_t n = atomic_load(&S->n), redeliv = 0;
	uint64_t last[3][MAXP];
	uint8_t *count = calloc(S->total, 1), *first = calloc(S->total, 1),
		*in1 = calloc(S->total, 1), *flagged = calloc(S->total, 1);

	assert_non_null(count);
	assert_non_null(first);
	assert_non_null(in1);
	assert_non_null(flagged);
	memset(last, 0xff, sizeof(last));
	assert_int_equal(atomic_load(&S->errors), 0);
	assert_true(n <= 2 * S->total + 16); /* the log did not overflow */
	for (uint64_t k = 0; k < n; k++) {
		const struct entry *e = &S->log[k];

		assert_true(e->producer < producers);
		assert_true(e->i < S->per);
		if (e->host == 1)
			in1[(uint64_t)e->producer * S->per + e->i] = 1;
	}
	for (uint64_t k = 0; k < n; k++) {
		const struct entry *e = &S->log[k];
		uint64_t idx = (uint64_t)e->producer * S->per + e->i;
		uint64_t *l = &last[e->host][e->producer];

		assert_true(e->host == 1 || e->host == 2);
		assert_int_equal(e->seq, e->i + 1);
		if (e->redelivered) {
			redeliv++;
			flagged[idx] = 1;
		} else {
			/* one first delivery at most: every other one is flagged */
			assert_int_equal(first[idx], 0);
			first[idx] = 1;
			/*
			 * and it comes before every flagged one (the log is in
			 * the order the handlers started): the application's
			 * dedupe (doc/spot-queues.md) checks only flagged
			 * records, so an unflagged run after one would apply
			 * the record twice unseen
			 */
			if (flagged[idx])
				fail_msg("host %u ran producer %u record %" PRIu64
					 " unflagged after a flagged run of it",
					 (unsigned)e->host, (unsigned)e->producer, e->i);
		}
		if (e->host == 2 && in1[idx])
			assert_true(e->redelivered); /* host 1 took it: it comes flagged */
		if (count[idx] < 255)
			count[idx]++;
		/* per-producer order within each host (a redelivered one may repeat) */
		if (*l != UINT64_MAX && !e->redelivered)
			assert_true(e->i > *l);
		if (*l == UINT64_MAX || e->i > *l)
			*l = e->i;
	}
	for (uint64_t idx = 0; idx < S->total; idx++) {
		if (count[idx] == 0)
			fprintf(stderr,
				"lost: producer %" PRIu64 " record %" PRIu64 " (log %" PRIu64 ")\n",
				idx / S->per, idx % S->per, n);
		assert_true(count[idx] >= 1); /* no loss */
	}
	if (!expect_redelivery)
		assert_int_equal(redeliv, 0);
	free(count);
	free(first);
	free(in1);
	free(flagged);
}

/* The queue's own checker and counters, read through the internal API. */
static void queue_check(uint64_t completed_expected, const struct orbit_spot_queue_caps *caps)
{
	struct orbit_spotq_options o;
	struct orbit_spotq_counters c;
	orbit_spotq_t *q;
	char why[256] = "";

	orbit__spotq_options_init(&o);
	o.how = ORBIT_SEG_OPEN;
	o.readonly = true;
	if (caps) {
		o.app_items = caps->app_items;
		o.app_bytes = caps->app_bytes;
	}
	assert_int_equal(orbit__spotq_open(&q, fleet, SPOT, &o), 0);
	assert_int_equal(orbit__spotq_check(q, why, sizeof(why)), 0);
	assert_int_equal(orbit__spotq_counters(q, &c), 0);
	assert_int_equal(c.depth[ORBIT_SPOTQ_APP], 0);
	if (completed_expected)
		assert_int_equal(c.completed[ORBIT_SPOTQ_APP], completed_expected);
	fprintf(stderr,
		"# queue: accepted %" PRIu64 " rejected %" PRIu64 "/%" PRIu64 " completed %" PRIu64
		" redelivered %" PRIu64 " aborted %" PRIu64 "\n",
		c.accepted[0], c.rejected_count[0], c.rejected_bytes[0], c.completed[0],
		c.redelivered[0], c.aborted[0]);
	orbit__spotq_close(q);
}

/* ---- tests ---- */

/* Issue 11 Tests: 4 producer processes x 100,000 records (1,000,000 in check-long). */
static void test_4_producers_x_100000_records_no_loss_no_duplicate_order_kept(void **state)
{
	uint64_t per = orbit_test_long() ? 1000000 : 100000, t0;
	struct prod_cfg pc[MAXP];
	struct host_cfg hc = { .no = 1, .mode = ORBIT_SPOT_PER_ACTOR };
	pid_t host, prod[MAXP];

	(void)state;
	shared_make(per, MAXP, per * MAXP + 16);
	t0 = orbit_test_now_ns();
	host = orbit_test_spawn(host_main, &hc);
	for (uint32_t p = 0; p < MAXP; p++) {
		pc[p] = (struct prod_cfg){ .p = p, .n = per };
		prod[p] = orbit_test_spawn(producer_main, &pc[p]);
	}
	for (uint32_t p = 0; p < MAXP; p++)
		orbit_test_expect_exit0(prod[p], 600000);
	orbit_test_expect_exit0(host, 120000);
	fprintf(stderr, "# %" PRIu64 " records through the Spot in %.2f s\n", S->total,
		(double)(orbit_test_now_ns() - t0) / 1e9);
	if (S->st[1].latency_count)
		fprintf(stderr, "# submit-to-run mean %.1f us, max %.1f ms\n",
			(double)S->st[1].latency_sum_ns / (double)S->st[1].latency_count / 1e3,
			(double)S->st[1].latency_max_ns / 1e6);
	verify(MAXP, false);
	assert_int_equal(atomic_load(&S->n), S->total);
	assert_int_equal(S->st[1].delivered, S->total);
	assert_int_equal(S->st[1].completed, S->total);
	queue_check(S->total, NULL);
	shared_drop();
}

/*
 * Records in the queue before any host (a producer that has exited), host
 * 1 dies with @crash while host 2 retries host_start (-EBUSY); host 2
 * adopts well before the lease TTL of 5 s (milliseconds): the hosting lease
 * is ORBIT_LOCK_FREE_ON_DEATH, freed by host 2's agent once the member
 * directory proves host 1 dead.
 */
static void adopt_after_kill(uint64_t kill_at, const char *crash_label, uint64_t crash_nth)
{
	const uint64_t per = 2000, ttl = 5000000000ull;
	struct orbit_spot_queue_caps caps = { .app_items = 2048 };
	struct prod_cfg pc = { .p = 0, .n = per, .caps = caps };
	struct host_cfg h1 = { .no = 1,
			       .mode = ORBIT_SPOT_SPOT_WIDE,
			       .ttl_ns = ttl,
			       .kill_at = kill_at,
			       .crash_label = crash_label,
			       .crash_nth = crash_nth,
			       .handler_us = 50,
			       .wait_rival = true,
			       .caps = caps };
	struct host_cfg h2 = { .no = 2, .mode = ORBIT_SPOT_SPOT_WIDE, .ttl_ns = ttl, .caps = caps };
	uint64_t died, adopted_ns, k1, killed_i = UINT64_MAX;
	pid_t p, a, b;
	int st;

	shared_make(per, 1, 2 * per + 16);
	p = orbit_test_spawn(producer_main, &pc);
	orbit_test_expect_exit0(p, 60000);
	a = orbit_test_spawn(host_main, &h1);
	for (int ms = 0; !atomic_load(&S->host_up[1]) && ms < 30000; ms++)
		usleep(1000);
	assert_int_equal(atomic_load(&S->host_up[1]), 1);
	b = orbit_test_spawn(host_main,
			     &h2); /* refused (-EBUSY) while host 1 lives, retrying every 5 ms */
	st = orbit_test_wait(a, 60000);
	assert_true(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	died = atomic_load(&S->run_ns[1]); /* its last handler's start: at or before its death */
	/*
	 * k1: the end of host 1's entries. Not S->n read now: host 2 adopts
	 * within a millisecond or two of the death and may have logged its
	 * first records (the redelivered one among them) before this wait
	 * noticed the exit. Host 2 starts only after host 1 died, so host 1's
	 * entries all come first; the record it was in (mid-handler) or had
	 * finished and not completed is its last.
	 */
	k1 = 0;
	for (uint64_t k = 0, n = atomic_load(&S->n); k < n; k++)
		if (S->log[k].host == 1) {
			killed_i = S->log[k].i;
			k1 = k + 1;
		}
	assert_true(k1 > 0 && k1 < per);
	orbit_test_expect_exit0(b, 60000);
	/* host 2 was refused (-EBUSY) while host 1 lived, and took over at once after */
	assert_int_equal(atomic_load(&S->busy_seen[2]), 1);
	adopted_ns = atomic_load(&S->start_ns[2]) - died;
	fprintf(stderr, "# host SIGKILLed: Spot adopted %.2f ms later (lease TTL %.0f s)\n",
		(double)adopted_ns / 1e6, (double)ttl / 1e9);
	/*
	 * Well before the TTL: the death proof, not the lease's expiry, let
	 * host 2 in (1-4 ms in a plain build; 440 ms seen under TSan at load
	 * 20, so the bound is half the TTL, which expiry can never meet).
	 */
	assert_true(adopted_ns < ttl / 2);
	verify(1, true);
	/* every record host 1 did not complete came again, flagged; the last one it was in is
	 * among them */
	{
		bool found = false;
		uint64_t n = atomic_load(&S->n), first_h2_epoch = 0, h1_epoch = S->log[0].epoch;
		for (uint64_t k = k1; k < n; k++) {
			const struct entry *e = &S->log[k];
			assert_int_equal(e->host, 2);
			first_h2_epoch = e->epoch;
			if (e->i == killed_i) {
				assert_true(e->redelivered);
				found = true;
			}
		}
		assert_true(found);
		assert_true(first_h2_epoch > h1_epoch); /* a higher epoch took over */
		assert_true(S->st[2].redelivered >= 1);
	}
	/* nothing completed twice: every record completed exactly once in all */
	queue_check(per, &caps);
	shared_drop();
}

/* Issue 11 Tests: the host SIGKILLed mid-handler: another process adopts. */
static void test_host_sigkilled_mid_handler_adopted_with_redelivery(void **state)
{
	(void)state;
	adopt_after_kill(700, NULL, 0);
}

/* Issue 11 Tests: the host SIGKILLed between taking and completing. */
static void test_host_sigkilled_between_take_and_complete_adopted_with_redelivery(void **state)
{
	(void)state;
	adopt_after_kill(0, "spothost.before_complete", 700);
}

/* While host 1 lives, another process's host_start is refused with -EBUSY. */
static int busy_probe_main(void *arg)
{
	struct orbit_spot_host_options ho;
	orbit_spot_host_t *h;
	struct orbit_test_proc pr;
	int r;

	(void)arg;
	if (orbit_test_proc_start(&pr, fleet, "probe", 0))
		return 70;
	orbit_spot_host_options_init(&ho);
	ho.spot = SPOT;
	ho.on_actor = on_record;
	ho.caps.app_items = 1024;
	{
		/* a coordinator is never reached: the lease is refused first */
		orbit_worker_pool_t *pool;

		if (one_thread_pool(&pool))
			return 71;
		ho.executor = orbit_worker_pool_executor(pool);
		r = orbit_spot_host_start(pr.agent, &ho, &h);
		if (r == 0)
			orbit_spot_host_stop(h);
		orbit_worker_pool_destroy(pool);
	}
	orbit_test_proc_stop(&pr);
	return r == -EBUSY ? 0 : 72;
}

/*
 * Issue 11 Tests: a host paused past its lease and resumed is fenced off.
 * The TTLs are what a TSan build on a loaded 2-CPU machine keeps renewed
 * (a renewal every TTL/4): with 100 ms, host 2 under TSan at load 12 took
 * its first renewal after its lease had run out (lost -ENOENT, renewals 0)
 * and stalled at 867 of 1000 records, 1 run in 60. Host 1's lease runs out
 * while it is stopped however long it is; host 2's is never waited for.
 */
static void test_host_sigstopped_past_lease_is_fenced(void **state)
{
	const uint64_t per = 1000, ttl1 = 2000000000ull, ttl2 = 30000000000ull;
	struct orbit_spot_queue_caps caps = { .app_items = 1024 };
	struct prod_cfg pc = { .p = 0, .n = per, .caps = caps };
	struct host_cfg h1 = { .no = 1,
			       .mode = ORBIT_SPOT_PER_ACTOR,
			       .ttl_ns = ttl1,
			       .gate_at = 100,
			       .wait_lost = true,
			       .caps = caps };
	struct host_cfg h2 = {
		.no = 2, .mode = ORBIT_SPOT_PER_ACTOR, .ttl_ns = ttl2, .caps = caps
	};
	pid_t p, a, b;

	(void)state;
	shared_make(per, 1, 2 * per + 16);
	p = orbit_test_spawn(producer_main, &pc);
	orbit_test_expect_exit0(p, 60000);
	a = orbit_test_spawn(host_main, &h1);
	/* host 1 holds its 100th record's handler at the gate */
	for (int ms = 0; ms < 30000 && atomic_load(&S->handled[1]) < 100; ms++)
		usleep(1000);
	assert_int_equal(atomic_load(&S->handled[1]), 100);
	/* a live host's lease: a second host is refused */
	assert_int_equal(orbit_test_fork_run(busy_probe_main, NULL, 30000), 0);
	kill(a, SIGSTOP);
	/*
	 * Host 2's start is refused (-EBUSY, retried every 5 ms) until host 1's
	 * lease ran out: host 1 is past its lease when host 2 takes over.
	 */
	b = orbit_test_spawn(host_main, &h2);
	orbit_test_expect_exit0(b, 60000);
	assert_int_equal(atomic_load(&S->distinct), per);
	/* host 1 resumes: its held handler finishes, its complete is refused,
	 * and none of the records queued behind it starts (host 2 ran them) */
	atomic_store(&S->gate, 1);
	kill(a, SIGCONT);
	orbit_test_expect_exit0(a, 60000);
	assert_int_equal(atomic_load(&S->handled[1]), 100);
	/* the rest it had handed over are counted, none completed or fenced */
	assert_true(S->st[1].not_started >= 1);
	assert_int_equal(S->st[1].completed + S->st[1].fenced + S->st[1].complete_errors +
			     S->st[1].not_started,
			 S->st[1].delivered);
	assert_int_equal(atomic_load(&S->final_state[1]), ORBIT_SPOT_LOST);
	assert_int_equal(atomic_load(&S->lost_calls[1]), 1);
	{
		int why = atomic_load(&S->lost_reason[1]);
		assert_true(why == -ORBIT_EFENCED || why == -ENOENT || why == -EPERM);
	}
	assert_true(S->st[1].fenced >= 1); /* the held record's complete changed nothing */
	assert_true(S->st[2].redelivered >= 1);
	assert_true(S->st[2].epoch > S->st[1].epoch);
	verify(1, true);
	queue_check(per,
		    &caps); /* each record completed exactly once: host 1's late one was refused */
	shared_drop();
}

/* One process: a client and (for room) a host child. */
static int backpressure_main(void *arg)
{
	struct orbit_spot_client_options co;
	orbit_spot_client_t *cl, *cl2;
	struct orbit_spot_inbound_stats qs;
	unsigned char big[1100] = { 0 };
	struct orbit_test_proc pr;
	uint64_t seq;

	(void)arg;
	if (orbit_test_proc_start(&pr, fleet, "bp", 0))
		return 30;
	orbit_spot_client_options_init(&co);
	co.caps.app_items = 8;
	co.caps.app_bytes = 1024;
	co.caps.lifecycle_items = 2;
	if (orbit_spot_client_open(pr.agent, SPOT, &co, &cl))
		return 31;
	/* one client per agent and Spot */
	if (orbit_spot_client_open(pr.agent, SPOT, &co, &cl2) != -EBUSY)
		return 32;
	/* other caps than the queue's: refused by name */
	co.caps.app_items = 16;
	if (orbit_spot_client_open(pr.agent, SPOT, &co, &cl2) != -ORBIT_EFINGERPRINT)
		return 33;
	/* by count: 8 small records fit, the 9th is -EAGAIN at once */
	for (int i = 0; i < 8; i++)
		if (orbit_spot_submit_spot(cl, "x", 1, &seq) || seq != (uint64_t)i + 1)
			return 34;
	if (orbit_spot_submit_spot(cl, "x", 1, &seq) != -EAGAIN)
		return 35;
	/* the lifecycle lane is independent */
	if (orbit_spot_submit_lifecycle(cl, "l", 1, &seq) || seq != 9)
		return 36;
	if (orbit_spot_submit_lifecycle(cl, "l", 1, &seq) ||
	    orbit_spot_submit_lifecycle(cl, "l", 1, &seq) != -EAGAIN)
		return 37;
	if (orbit_spot_client_wait_room(cl, ORBIT_SPOT_LANE_APP, 1, 20000000) != -ETIMEDOUT)
		return 38;
	if (orbit_spot_submit_spot(cl, big, 1025, &seq) != -E2BIG)
		return 39;
	if (orbit_spot_client_inbound_stats(cl, &qs) || qs.rejected_count[0] != 1 ||
	    qs.rejected_count[1] != 1 || qs.depth[0] != 8)
		return 40;
	orbit_spot_client_close(cl);
	orbit_test_proc_stop(&pr);
	return 0;
}

static int bytes_main(void *arg)
{
	struct orbit_spot_client_options co;
	orbit_spot_client_t *cl;
	struct orbit_spot_inbound_stats qs;
	unsigned char big[600] = { 0 };
	struct orbit_test_proc pr;
	uint64_t seq;

	(void)arg;
	if (orbit_test_proc_start(&pr, fleet, "bytes", 0))
		return 50;
	orbit_spot_client_options_init(&co);
	co.caps.app_items = 64;
	co.caps.app_bytes = 1024;
	if (orbit_spot_client_open(pr.agent, SPOT, &co, &cl))
		return 51;
	/* by bytes: 600 + 400 fit in 1024, 25 more do not, 24 do */
	if (orbit_spot_submit_actor(cl, 7, big, 600, &seq) ||
	    orbit_spot_submit_actor(cl, 7, big, 400, &seq))
		return 52;
	if (orbit_spot_submit_actor(cl, 7, big, 25, &seq) != -EAGAIN)
		return 53;
	if (orbit_spot_submit_timer(cl, "tick", big, 24, &seq))
		return 54;
	if (orbit_spot_client_inbound_stats(cl, &qs) || qs.rejected_bytes[0] != 1 ||
	    qs.rejected_count[0] != 0 || qs.bytes[0] != 1024)
		return 55;
	orbit_spot_client_close(cl);
	orbit_test_proc_stop(&pr);
	return 0;
}

static int fork_child_main(void *arg)
{
	struct orbit_test_proc pr;
	orbit_spot_client_t *cl;
	uint64_t seq;
	int r;

	(void)arg;
	if (orbit_test_proc_start(&pr, fleet, "forker", 0))
		return 60;
	if (orbit_spot_client_open(pr.agent, SPOT, NULL, &cl))
		return 61;
	pid_t pid = fork();
	if (pid == 0) {
		/* a client in a forked child is refused */
		r = orbit_spot_submit_spot(cl, "x", 1, &seq);
		_exit(r == -ECHILD &&
			      orbit_spot_client_wait_room(cl, ORBIT_SPOT_LANE_APP, 1, 0) == -ECHILD
			  ? 0
			  : 1);
	}
	int st = orbit_test_wait(pid, 10000);
	orbit_spot_client_close(cl);
	orbit_test_proc_stop(&pr);
	return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 62;
}

/* Issue 11 "Submit": backpressure (-EAGAIN) by count and by bytes through the public API. */
static void test_backpressure_by_count_and_bytes_public_api(void **state)
{
	(void)state;
	assert_int_equal(orbit_test_fork_run(backpressure_main, NULL, 30000), 0);
	orbit__spotq_unlink(fleet, SPOT);
	assert_int_equal(orbit_test_fork_run(bytes_main, NULL, 30000), 0);
	orbit__spotq_unlink(fleet, SPOT);
	assert_int_equal(orbit_test_fork_run(fork_child_main, NULL, 30000), 0);
}

/*
 * The coordinator's own backpressure: an Actor queue of 2 items and a slow
 * handler refuse most hand-overs (-EAGAIN); the host keeps each refused
 * record taken and first in line, so all arrive, in order, none lost.
 */
/* @per records of @pc, queued first, then hosted by @h1 whose coordinator refuses most. */
static void coordinator_backpressure_run(uint64_t per, struct prod_cfg *pc, struct host_cfg *h1)
{
	pid_t p, a;

	shared_make(per, 1, per + 16);
	p = orbit_test_spawn(producer_main, pc);
	orbit_test_expect_exit0(p, 60000);
	a = orbit_test_spawn(host_main, h1);
	orbit_test_expect_exit0(a, 60000);
	verify(1, false);
	assert_int_equal(atomic_load(&S->n), per);
	assert_true(S->st[1].retried > 0);
	assert_int_equal(S->st[1].delivered, per);
	assert_int_equal(S->st[1].completed, per);
	assert_int_equal(S->st[1].undeliverable, 0);
	queue_check(per, NULL);
	shared_drop();
}

static void test_coordinator_backpressure_never_loses_a_record(void **state)
{
	struct prod_cfg pc = { .p = 0, .n = 300 };
	struct host_cfg h1 = {
		.no = 1, .mode = ORBIT_SPOT_SPOT_WIDE, .actor_items = 2, .handler_us = 200
	};

	(void)state;
	coordinator_backpressure_run(300, &pc, &h1);
}

/*
 * The same with Spot records, which the host hands to a PerActor
 * coordinator in runs (orbit__spot_execute_n()): a Spot queue of 2 items
 * accepts the head of each run and refuses the rest; the refused record
 * and everything after it stay taken, first in line, and come again in
 * order: all arrive, none lost or reordered, every one delivered once.
 */
static void test_coordinator_backpressure_on_a_run_never_loses_a_record(void **state)
{
	struct prod_cfg pc = { .p = 0, .n = 300, .spot = true };
	struct host_cfg h1 = { .no = 1,
			       .mode = ORBIT_SPOT_PER_ACTOR,
			       .spot = true,
			       .spot_items = 2,
			       .handler_us = 200 };

	(void)state;
	coordinator_backpressure_run(300, &pc, &h1);
}

/* ---- every entry kind through one host ---- */

#define MIX_N 240 /* records: kinds in runs of 1 to 5, cycling */

/* What each record's handler saw (one process: the host's handlers write, the test reads). */
static struct mix_seen {
	_Atomic int runs;
	int kind;
	uint64_t actor_id;
	char timer[16];
	uint64_t order; /* Spot records: the index among them it ran at */
} mix[MIX_N];
static _Atomic uint64_t mix_done, mix_spot_next;

static enum orbit_spot_entry_kind mix_kind(unsigned i)
{
	static const enum orbit_spot_entry_kind k[4] = { ORBIT_SPOT_ENTRY_SPOT,
							 ORBIT_SPOT_ENTRY_ACTOR,
							 ORBIT_SPOT_ENTRY_TIMER,
							 ORBIT_SPOT_ENTRY_LIFECYCLE };
	/* runs of 1..5 of one kind: 1 spot, 2 actor, 3 timer, 4 lifecycle, 5 spot, ... */
	unsigned r = 0, at = 0;

	while (at + (r % 5) + 1 <= i)
		at += (r++ % 5) + 1;
	return k[r % 4];
}

static int mix_handler(orbit_serial_turn_t *turn, const struct orbit_spot_record *rec, void *ctx)
{
	uint32_t i;

	(void)turn;
	(void)ctx;
	if (rec->len != sizeof(i))
		return ORBIT_SERIAL_DONE;
	memcpy(&i, rec->payload, sizeof(i));
	if (i >= MIX_N)
		return ORBIT_SERIAL_DONE;
	mix[i].kind = rec->kind;
	mix[i].actor_id = rec->actor_id;
	snprintf(mix[i].timer, sizeof(mix[i].timer), "%s", rec->timer_name);
	if (rec->kind == ORBIT_SPOT_ENTRY_SPOT) /* one Spot queue: these run one at a time */
		mix[i].order = atomic_fetch_add(&mix_spot_next, 1);
	atomic_fetch_add(&mix[i].runs, 1);
	atomic_fetch_add(&mix_done, 1);
	return ORBIT_SERIAL_DONE;
}

static int mix_main(void *arg)
{
	struct orbit_worker_pool_options po;
	struct orbit_spot_host_options ho;
	orbit_worker_pool_t *pool;
	orbit_spot_client_t *cl;
	orbit_spot_host_t *h;
	struct orbit_test_proc pr;
	uint64_t seq = 0, spot_seen = 0;

	(void)arg;
	if (orbit_test_proc_start(&pr, fleet, "mix", 0))
		return 70;
	orbit_worker_pool_options_init(&po);
	po.nthreads = 2;
	po.no_pin = true;
	if (orbit_worker_pool_create(&po, &pool))
		return 71;
	if (orbit_spot_client_open(pr.agent, SPOT, NULL, &cl))
		return 72;
	/* queued before the host starts: its first takes hold every kind */
	for (uint32_t i = 0; i < MIX_N; i++) {
		enum orbit_spot_entry_kind k = mix_kind(i);
		uint64_t s;
		int r = k == ORBIT_SPOT_ENTRY_SPOT ? orbit_spot_submit_spot(cl, &i, sizeof(i), &s)
			: k == ORBIT_SPOT_ENTRY_ACTOR
			    ? orbit_spot_submit_actor(cl, 40 + i % 3, &i, sizeof(i), &s)
			: k == ORBIT_SPOT_ENTRY_TIMER
			    ? orbit_spot_submit_timer(cl, i % 2 ? "tick" : "tock", &i, sizeof(i),
						      &s)
			    : orbit_spot_submit_lifecycle(cl, &i, sizeof(i), &s);
		if (r || s != ++seq) /* one sequence per producer tenure */
			return 73;
	}
	orbit_spot_host_options_init(&ho);
	ho.spot = SPOT;
	ho.on_spot = ho.on_actor = ho.on_timer = ho.on_lifecycle = mix_handler;
	ho.mode = ORBIT_SPOT_PER_ACTOR;
	ho.executor = orbit_worker_pool_executor(pool);
	ho.lease_ttl_ns = 30000000000ull;
	if (orbit_spot_host_start(pr.agent, &ho, &h))
		return 74;
	for (int ms = 0; atomic_load(&mix_done) < MIX_N; ms++) {
		if (ms > 20000)
			return 75;
		usleep(1000);
	}
	if (orbit_spot_host_stop(h))
		return 76;
	for (uint32_t i = 0; i < MIX_N; i++) {
		enum orbit_spot_entry_kind k = mix_kind(i);
		char want[16] = "";

		if (k == ORBIT_SPOT_ENTRY_TIMER)
			snprintf(want, sizeof(want), "%s", i % 2 ? "tick" : "tock");
		if (atomic_load(&mix[i].runs) != 1 || mix[i].kind != (int)k ||
		    mix[i].actor_id != (k == ORBIT_SPOT_ENTRY_ACTOR ? 40 + i % 3 : 0) ||
		    strcmp(mix[i].timer, want) != 0) {
			fprintf(stderr,
				"record %u: runs %d kind %d (want %d) actor %" PRIu64
				" timer '%s' (want '%s')\n",
				i, atomic_load(&mix[i].runs), mix[i].kind, (int)k, mix[i].actor_id,
				mix[i].timer, want);
			return 77;
		}
		/* Spot records run in their submission order */
		if (k == ORBIT_SPOT_ENTRY_SPOT && mix[i].order != spot_seen++)
			return 78;
	}
	orbit_spot_client_close(cl);
	orbit_worker_pool_destroy(pool);
	orbit_test_proc_stop(&pr);
	return 0;
}

/*
 * Every entry kind through one host (PerActor): 240 records queued in runs
 * of 1 to 5 of one kind (Spot, Actor, timer, lifecycle), so the host's
 * runs of Spot and lifecycle records are cut by the other kinds. Each
 * handler runs once and sees its record's kind, Actor id and timer name;
 * Spot records run in submission order.
 */
static void test_every_entry_kind_reaches_its_handler_with_its_fields(void **state)
{
	(void)state;
	assert_int_equal(orbit_test_fork_run(mix_main, NULL, 60000), 0);
}

/* Issue 11 "Submit": submitting with no host is allowed; a host that comes gets them. */
static void test_submit_with_no_host_then_host_arrives(void **state)
{
	const uint64_t per = 500;
	struct prod_cfg pc = { .p = 0, .n = per };
	struct host_cfg h1 = { .no = 1, .mode = ORBIT_SPOT_PER_ACTOR };
	pid_t p, a;

	(void)state;
	shared_make(per, 1, per + 16);
	p = orbit_test_spawn(producer_main, &pc);
	orbit_test_expect_exit0(p, 60000); /* all 500 accepted, no host anywhere */
	a = orbit_test_spawn(host_main, &h1);
	orbit_test_expect_exit0(a, 30000);
	verify(1, false);
	assert_int_equal(atomic_load(&S->n), per);
	queue_check(per, NULL);
	shared_drop();
}

/* ---- a yielded handler ---- */

static _Atomic(orbit_serial_resume_t *) y_resume;
static _Atomic int y_cont_ran;

static int y_cont(orbit_serial_turn_t *turn, void *arg)
{
	(void)turn;
	(void)arg;
	atomic_store(&y_cont_ran, 1);
	return ORBIT_SERIAL_DONE;
}

static int y_handler(orbit_serial_turn_t *turn, const struct orbit_spot_record *rec, void *ctx)
{
	orbit_serial_resume_t *r;

	(void)rec;
	(void)ctx;
	if (orbit_spot_yield(turn, y_cont, NULL, &r))
		return ORBIT_SERIAL_DONE;
	atomic_store(&y_resume, r);
	return ORBIT_SERIAL_SUSPENDED;
}

static int yield_main(void *arg)
{
	struct orbit_worker_pool_options po;
	struct orbit_spot_host_options ho;
	struct orbit_spot_inbound_stats qs;
	struct orbit_spot_host_stats hs;
	orbit_worker_pool_t *pool;
	orbit_spot_client_t *cl;
	orbit_spot_host_t *h;
	orbit_serial_resume_t *r = NULL;
	struct orbit_test_proc pr;
	uint64_t seq;

	(void)arg;
	if (orbit_test_proc_start(&pr, fleet, "yield", 0))
		return 80;
	orbit_worker_pool_options_init(&po);
	po.nthreads = 2;
	po.no_pin = true;
	if (orbit_worker_pool_create(&po, &pool))
		return 81;
	orbit_spot_host_options_init(&ho);
	ho.spot = SPOT;
	ho.on_spot = y_handler;
	ho.mode = ORBIT_SPOT_SPOT_WIDE;
	ho.executor = orbit_worker_pool_executor(pool);
	ho.lease_ttl_ns = 30000000000ull; /* not about the lease (see host_main) */
	if (orbit_spot_host_start(pr.agent, &ho, &h))
		return 82;
	/* orbit_spot_yield outside a handler is refused */
	if (orbit_spot_yield((orbit_serial_turn_t *)&ho, y_cont, NULL, &r) != -EINVAL)
		return 83;
	if (orbit_spot_client_open(pr.agent, SPOT, NULL, &cl) ||
	    orbit_spot_submit_spot(cl, "y", 1, &seq))
		return 84;
	for (int ms = 0; ms < 10000 && !(r = atomic_load(&y_resume)); ms++)
		usleep(1000);
	if (!r)
		return 85;
	usleep(50000);
	/* yielded: the handler has not finished, so the record is not completed */
	if (orbit_spot_client_inbound_stats(cl, &qs) || qs.completed[0] != 0 || qs.depth[0] != 1)
		return 86;
	if (orbit_serial_queue_resume(r))
		return 87;
	for (int ms = 0; ms < 10000; ms++) {
		orbit_spot_client_inbound_stats(cl, &qs);
		if (qs.completed[0] == 1)
			break;
		usleep(1000);
	}
	if (!atomic_load(&y_cont_ran) || qs.completed[0] != 1 || qs.depth[0] != 0)
		return 88;
	if (orbit_spot_host_stats(h, &hs) || hs.protocol_errors != 0 || hs.completed != 1)
		return 89;
	orbit_spot_client_close(cl);
	if (orbit_spot_host_stop(h))
		return 90;
	orbit_worker_pool_destroy(pool);
	orbit_test_proc_stop(&pr);
	return 0;
}

/* ---- a handler that finishes while the host thread sleeps ---- */

#define K_BURST 8
static _Atomic uint64_t k_done_ns; /* when the last handler returned */

static int k_handler(orbit_serial_turn_t *turn, const struct orbit_spot_record *rec, void *ctx)
{
	(void)turn;
	(void)rec;
	(void)ctx;
	usleep(20000); /* the host thread has gone to sleep by now */
	atomic_store(&k_done_ns, orbit_test_now_ns());
	return ORBIT_SERIAL_DONE;
}

/* Submit @n records at once; 0 once all are completed within 1 s of the last handler's end. */
static int k_round(orbit_spot_client_t *cl, unsigned n, uint64_t *completed)
{
	struct orbit_spot_inbound_stats qs;
	uint64_t seq, want = *completed + n;

	for (unsigned i = 0; i < n; i++)
		if (orbit_spot_submit_spot(cl, "k", 1, &seq))
			return 1;
	for (int ms = 0; ms < 10000; ms++) {
		if (orbit_spot_client_inbound_stats(cl, &qs))
			return 2;
		if (qs.completed[0] == want)
			break;
		usleep(1000);
	}
	if (qs.completed[0] != want)
		return 3;
	*completed = want;
	/* the last handler's end to "completed": a kick, not the lease's renewal (5 s) */
	if (orbit_test_now_ns() - atomic_load(&k_done_ns) > 1000000000ull) {
		fprintf(stderr, "completed %.0f ms after the handler finished\n",
			(double)(orbit_test_now_ns() - atomic_load(&k_done_ns)) / 1e6);
		return 4;
	}
	return 0;
}

static int kick_main(void *arg)
{
	struct orbit_spot_host_options ho;
	struct orbit_spot_client_options co;
	orbit_worker_pool_t *pool;
	orbit_spot_client_t *cl;
	orbit_spot_host_t *h;
	uint64_t completed = 0;
	struct orbit_test_proc pr;
	int r = 0;

	(void)arg;
	if (orbit_test_proc_start(&pr, fleet, "kick", 0))
		return 90;
	if (one_thread_pool(&pool))
		return 91;
	orbit_spot_host_options_init(&ho);
	ho.spot = SPOT;
	ho.on_spot = k_handler;
	ho.lease_ttl_ns = 20000000000ull; /* renewed every 5 s */
	/*
	 * A sleeping host with both lanes announced also wakes at the unblock
	 * bound (100 ms by default), well inside the 1 s this test allows: 10 s
	 * here, so that the renewal and the bound are both past it and only
	 * the kick completes a record in time.
	 */
	ho.caps.unblock_ms = 10000;
	ho.executor = orbit_worker_pool_executor(pool);
	if (orbit_spot_host_start(pr.agent, &ho, &h))
		return 92;
	orbit_spot_client_options_init(&co);
	co.caps = ho.caps;
	if (orbit_spot_client_open(pr.agent, SPOT, &co, &cl))
		return 93;
	for (int round = 0; round < 6 && !r; round++)
		r = k_round(cl, round % 2 ? K_BURST : 1, &completed);
	orbit_spot_client_close(cl);
	if (orbit_spot_host_stop(h))
		return 94;
	orbit_worker_pool_destroy(pool);
	orbit_test_proc_stop(&pr);
	return r ? 95 + r : 0;
}

/*
 * Issue 11 "sleeps on a futex doorbell": a handler that finishes while the
 * host thread sleeps wakes it (one kick per idle period, however many
 * handlers finish in it), so the record is completed at once, not at the
 * host's next renewal or at its wait's unblock bound. Rounds of 1 and of 8
 * records, nothing submitted until a round is completed.
 */
static void test_handler_finished_while_host_sleeps_is_completed_at_once(void **state)
{
	(void)state;
	assert_int_equal(orbit_test_fork_run(kick_main, NULL, 120000), 0);
}

/* Issue 11 / 07 §5: a record completes only after its handler finished, across a yield. */
static void test_record_completed_only_after_yielded_handler_finished(void **state)
{
	(void)state;
	assert_int_equal(orbit_test_fork_run(yield_main, NULL, 60000), 0);
}

/*
 * pthread_join() of this program: the C library's, except that once join_fails is set it
 * reports ESRCH after joining (the thread really ends; only the result is false). The library's
 * calls come here: this program's own definition is found first.
 */
static _Atomic int join_fails;

int pthread_join(pthread_t t, void **ret)
{
	static int (*real)(pthread_t, void **);
	int r;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "pthread_join");
	if (!real)
		return ENOSYS;
	r = real(t, ret);
	return r == 0 && atomic_load(&join_fails) ? ESRCH : r;
}

/* In a child: host a Spot, then stop it with pthread_join() failing. */
static void stop_with_failing_join(void *arg)
{
	struct orbit_worker_pool_options po;
	struct orbit_spot_host_options ho;
	orbit_worker_pool_t *pool;
	orbit_spot_host_t *h;
	struct orbit_test_proc pr;

	(void)arg;
	orbit_worker_pool_options_init(&po);
	po.nthreads = 1;
	po.no_pin = true;
	orbit_spot_host_options_init(&ho);
	ho.spot = SPOT;
	ho.on_spot = y_handler;
	if (orbit_test_proc_start(&pr, fleet, "join", 0) || orbit_worker_pool_create(&po, &pool))
		return;
	ho.executor = orbit_worker_pool_executor(pool);
	if (orbit_spot_host_start(pr.agent, &ho, &h))
		return;
	atomic_store(&join_fails, 1);
	orbit_spot_host_stop(h); /* must not return */
	fprintf(stderr, "orbit_spot_host_stop() returned\n");
}

/* orbit_spot_host_stop() does not ignore pthread_join()'s result: it aborts, naming the call. */
static void test_host_stop_dies_when_pthread_join_fails(void **state)
{
	char buf[1024];

	(void)state;
	if (orbit_test_abort_output(stop_with_failing_join, NULL, buf, sizeof(buf)) != 0)
		fail_msg("the child did not abort; its stderr: \"%s\"", buf);
	if (!strstr(buf, "spot_host.c:") || !strstr(buf, "(orbit_spot_host_stop): pthread_join") ||
	    !strstr(buf, strerror(ESRCH)))
		fail_msg("the abort does not name the failing join: \"%s\"", buf);
}

/* ---- "The drain": an unhandled record kept in line behind a refused one ---- */

#define HOL_N 20
#define HOL_TIMER 10 /* record 10 is a timer record: no on_timer, completed unrun */
static _Atomic int hol_runs[HOL_N];
static _Atomic uint64_t hol_done;

static int hol_spot(orbit_serial_turn_t *turn, const struct orbit_spot_record *rec, void *ctx)
{
	uint32_t i;

	(void)turn;
	(void)ctx;
	if (rec->len != sizeof(i))
		return ORBIT_SERIAL_DONE;
	memcpy(&i, rec->payload, sizeof(i));
	usleep(3000); /* slow: the Spot queue (1 item) refuses the next ones */
	if (i < HOL_N)
		atomic_fetch_add(&hol_runs[i], 1);
	atomic_fetch_add(&hol_done, 1);
	return ORBIT_SERIAL_DONE;
}

static int hol_main(void *arg)
{
	struct orbit_spot_host_options ho;
	orbit_execution_lane_policy_t sp;
	orbit_worker_pool_t *pool;
	orbit_spot_client_t *cl;
	orbit_spot_host_t *h;
	struct orbit_test_proc pr;
	uint64_t s;

	(void)arg;
	if (orbit_test_proc_start(&pr, fleet, "hol", 0))
		return 80;
	if (one_thread_pool(&pool))
		return 81;
	if (orbit_spot_client_open(pr.agent, SPOT, NULL, &cl))
		return 82;
	for (uint32_t i = 0; i < HOL_N; i++) {
		int r = i == HOL_TIMER ? orbit_spot_submit_timer(cl, "tick", &i, sizeof(i), &s)
				       : orbit_spot_submit_spot(cl, &i, sizeof(i), &s);
		if (r)
			return 83;
	}
	orbit_execution_lane_policy_init_default(&sp);
	sp.application_message_capacity = 1;
	orbit_spot_host_options_init(&ho);
	ho.spot = SPOT;
	ho.on_spot = hol_spot; /* on_timer NULL: timer records are completed unrun */
	ho.mode = ORBIT_SPOT_PER_ACTOR;
	ho.spot_policy = &sp;
	ho.executor = orbit_worker_pool_executor(pool);
	ho.lease_ttl_ns = 30000000000ull;
	if (orbit_spot_host_start(pr.agent, &ho, &h))
		return 84;
	for (int ms = 0; atomic_load(&hol_done) < HOL_N - 1 && ms < 3000; ms++)
		usleep(1000);
	usleep(200000); /* anything run twice shows now */
	for (uint32_t i = 0; i < HOL_N; i++) {
		int want = i == HOL_TIMER ? 0 : 1;

		if (atomic_load(&hol_runs[i]) != want) {
			fprintf(stderr, "record %u ran %d times (want %d)\n", i,
				atomic_load(&hol_runs[i]), want);
			_exit(85); /* stop would free the clobbered lists twice */
		}
	}
	if (orbit_spot_host_stop(h))
		return 86;
	orbit_spot_client_close(cl);
	orbit_worker_pool_destroy(pool);
	orbit_test_proc_stop(&pr);
	return 0;
}

/*
 * A refused Spot record and everything after it stay first in line; an
 * unhandled record among them is completed unrun when its turn comes, and
 * the records after it still run, each once, in order.
 */
static void test_unhandled_record_behind_a_refused_one_runs_nothing_twice(void **state)
{
	(void)state;
	assert_int_equal(orbit_test_fork_run(hol_main, NULL, 60000), 0);
}

/* ---- the take goes on while every worker runs a handler ---- */

/*
 * A host of SPOT on a pool of one unpinned worker, and a client: the
 * setup of the take task's tests. 0, or the first failing step (90-93).
 */
static int one_worker_host(struct orbit_test_proc *pr, const char *name,
			   orbit_spot_handler_fn handler, orbit_worker_pool_t **pool,
			   orbit_spot_host_t **h, orbit_spot_client_t **cl)
{
	struct orbit_spot_host_options ho;
	struct orbit_spot_client_options co;

	if (orbit_test_proc_start(pr, fleet, name, 0))
		return 90;
	if (one_thread_pool(pool))
		return 91;
	orbit_spot_host_options_init(&ho);
	ho.spot = SPOT;
	ho.on_spot = handler;
	ho.executor = orbit_worker_pool_executor(*pool);
	if (orbit_spot_host_start(pr->agent, &ho, h))
		return 92;
	orbit_spot_client_options_init(&co);
	co.caps = ho.caps;
	if (orbit_spot_client_open(pr->agent, SPOT, &co, cl))
		return 93;
	return 0;
}

#define BL_N 16u
static orbit_spot_host_t *_Atomic bl_host; /* set after start, read by the handler */
static _Atomic int bl_started, bl_seen;	   /* bl_seen: 1 all delivered, -1 timed out */

static int bl_handler(orbit_serial_turn_t *turn, const struct orbit_spot_record *rec, void *ctx)
{
	struct orbit_spot_host_stats st;

	(void)turn;
	(void)ctx;
	if (rec->producer_seq != 1)
		return ORBIT_SERIAL_DONE;
	atomic_store(&bl_started, 1);
	/* the pool's one worker is ours: the others can only be taken by the host thread */
	for (int ms = 0; ms < 5000; ms++) {
		if (orbit_spot_host_stats(atomic_load(&bl_host), &st) == 0 &&
		    st.delivered >= BL_N) {
			atomic_store(&bl_seen, 1);
			return ORBIT_SERIAL_DONE;
		}
		usleep(1000);
	}
	atomic_store(&bl_seen, -1);
	return ORBIT_SERIAL_DONE;
}

static int blocked_main(void *arg)
{
	orbit_worker_pool_t *pool;
	orbit_spot_client_t *cl;
	orbit_spot_host_t *h;
	struct orbit_test_proc pr;
	uint64_t seq;
	int r;

	(void)arg;
	r = one_worker_host(&pr, "blocked", bl_handler, &pool, &h, &cl);
	if (r)
		return r;
	atomic_store(&bl_host, h);
	if (orbit_spot_submit_spot(cl, "b", 1, &seq))
		return 94;
	for (int ms = 0; ms < 5000 && !atomic_load(&bl_started); ms++)
		usleep(1000);
	if (!atomic_load(&bl_started))
		return 95;
	for (unsigned i = 1; i < BL_N; i++)
		if (orbit_spot_submit_spot(cl, "b", 1, &seq))
			return 96;
	for (int ms = 0; ms < 10000 && !atomic_load(&bl_seen); ms++)
		usleep(1000);
	if (atomic_load(&bl_seen) != 1)
		r = 97; /* the other records were never taken while the handler ran */
	orbit_spot_client_close(cl);
	if (orbit_spot_host_stop(h))
		return 98;
	orbit_worker_pool_destroy(pool);
	orbit_test_proc_stop(&pr);
	return r;
}

/*
 * The take task (agent/spot_host.c feed_task()): while records stream,
 * the host's take runs on the coordinator's worker; when that one worker
 * is held by a handler, the take task waits in the pool's queue behind
 * it, and the host thread takes the feed state back after about a
 * millisecond without a round and goes on taking: the records submitted
 * while the handler runs are delivered to the coordinator, as before the
 * take task. The handler itself waits for them (stats.delivered == 16).
 */
static void test_take_goes_on_while_every_worker_runs_a_handler(void **state)
{
	(void)state;
	assert_int_equal(orbit_test_fork_run(blocked_main, NULL, 60000), 0);
}

/* ---- stop from a task of the host's own executor ---- */

static orbit_spot_host_t *_Atomic ps_host;	  /* set after start, read by the pool task */
static orbit_executor_t ps_ex;			  /* the pool's executor (set before start) */
static _Atomic int ps_posted, ps_rc = 1, ps_done; /* ps_rc: the stop's return */

/* The pool task: on the pool's only worker, so the host's take task
 * (posted when the handler's record came back) waits behind it. */
static void ps_stop_task(void *arg)
{
	(void)arg;
	usleep(20000);
	atomic_store(&ps_rc, orbit_spot_host_stop(atomic_load(&ps_host)));
	atomic_store(&ps_done, 1);
}

static int ps_handler(orbit_serial_turn_t *turn, const struct orbit_spot_record *rec, void *ctx)
{
	(void)turn;
	(void)rec;
	(void)ctx;
	if (!atomic_exchange(&ps_posted, 1) &&
	    ps_ex.submit(ps_ex.ctx, ps_stop_task, NULL, ORBIT_NODE_ANY) != 0)
		atomic_store(&ps_posted, -1);
	return ORBIT_SERIAL_DONE;
}

static int pool_stop_main(void *arg)
{
	orbit_worker_pool_t *pool;
	orbit_spot_client_t *cl;
	orbit_spot_host_t *h;
	struct orbit_test_proc pr;
	uint64_t seq;
	int r;

	(void)arg;
	r = one_worker_host(&pr, "poolstop", ps_handler, &pool, &h, &cl);
	if (r)
		return r;
	ps_ex = orbit_worker_pool_executor(pool);
	atomic_store(&ps_host, h);
	if (orbit_spot_submit_spot(cl, "p", 1, &seq))
		return 94;
	/* bounded: a stop that hangs never sets ps_done (the process is left
	 * with _exit(), its pool worker still spinning) */
	for (int ms = 0; ms < 5000 && !atomic_load(&ps_done); ms++)
		usleep(1000);
	if (atomic_load(&ps_posted) != 1)
		return 95;
	if (!atomic_load(&ps_done))
		_exit(96);
	if (atomic_load(&ps_rc) != 0)
		return 97;
	orbit_spot_client_close(cl);
	orbit_worker_pool_destroy(pool);
	orbit_test_proc_stop(&pr);
	return 0;
}

/*
 * orbit_spot_host_stop() from a plain task of the host's own executor
 * (its Context: any thread but a handler of the host): the pool's only
 * worker runs that task, which sleeps 20 ms, then stops the host; the
 * host's take task, posted when the handler's record came back, is
 * queued behind it and the host thread took the feed state back from it.
 * The stop must return 0 without waiting for that queued task.
 */
static void test_stop_from_a_task_of_the_hosts_own_executor_returns(void **state)
{
	(void)state;
	assert_int_equal(orbit_test_fork_run(pool_stop_main, NULL, 60000), 0);
}

/* ---- an inherited coordinator ---- */

static _Atomic int ic_seen; /* 1: delivered fresh, 2: delivered redelivered */

static int ic_handler(orbit_serial_turn_t *turn, const struct orbit_spot_record *rec, void *ctx)
{
	(void)turn;
	(void)ctx;
	atomic_store(&ic_seen, rec->redelivered ? 2 : 1);
	return ORBIT_SERIAL_DONE;
}

/*
 * The forked child: its own agent, and a host of SPOT on the parent's
 * coordinator @coord. 0 when start said -ECHILD; 2 when it started (the
 * host thread is given 300 ms to take the record and hand it over).
 */
static int ic_child(orbit_spot_serial_executor_t *coord)
{
	struct orbit_spot_host_options ho;
	struct orbit_test_proc pr;
	orbit_spot_host_t *h;
	int r;

	if (orbit_test_proc_start(&pr, fleet, "icchild", 0))
		return 1;
	orbit_spot_host_options_init(&ho);
	ho.spot = SPOT;
	ho.on_spot = ic_handler;
	ho.coordinator = coord;
	r = orbit_spot_host_start(pr.agent, &ho, &h);
	if (r == 0) {
		usleep(300000);
		return 2; /* left hosting: the process ends with it */
	}
	if (r != -ECHILD)
		return 3;
	orbit_test_proc_stop(&pr);
	return 0;
}

/*
 * In the parent, after the child @pid: the child must exit 0, the record
 * must be in the queue uncompleted, and a host of this process (on
 * @coord, else on @ex) must get it, flagged redelivered or not as @seen
 * (1 fresh, 2 redelivered) says. 0, or the first failing step (75-80).
 */
static int child_then_parent_hosts(struct orbit_test_proc *pr, pid_t pid,
				   orbit_spot_serial_executor_t *coord, orbit_executor_t ex,
				   int seen)
{
	struct orbit_spot_host_options ho;
	struct orbit_spotq_counters c;
	struct orbit_spotq_options qo;
	orbit_spot_host_t *h;
	orbit_spotq_t *q;
	int st = orbit_test_wait(pid, 20000);

	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "child: status %#x\n", (unsigned)st);
		return 75;
	}
	/* not completed: the record waits for the next host */
	orbit__spotq_options_init(&qo);
	qo.how = ORBIT_SEG_OPEN;
	qo.readonly = true;
	if (orbit__spotq_open(&q, fleet, SPOT, &qo) || orbit__spotq_counters(q, &c))
		return 76;
	orbit__spotq_close(q);
	if (c.completed[ORBIT_SPOTQ_APP] != 0 || c.depth[ORBIT_SPOTQ_APP] != 1)
		return 77;
	orbit_spot_host_options_init(&ho);
	ho.spot = SPOT;
	ho.on_spot = ic_handler;
	ho.coordinator = coord;
	ho.executor = ex;
	/*
	 * A child that hosted and was lost keeps its lease until it expires
	 * (no renewal after the loss) or an agent frees it for the child's
	 * death: -EBUSY until then, retried every 5 ms as the adoption tests
	 * do (one attempt failed in CI's long tier, the child gone only
	 * milliseconds before).
	 */
	int r;
	for (int ms = 0; (r = orbit_spot_host_start(pr->agent, &ho, &h)) == -EBUSY && ms < 10000;
	     ms += 5)
		usleep(5000);
	if (r)
		return 78; /* -EBUSY past 10 s: the child's lease was never freed */
	for (int ms = 0; ms < 5000 && !atomic_load(&ic_seen); ms++)
		usleep(1000);
	if (atomic_load(&ic_seen) != seen)
		return 79; /* lost (0), or flagged otherwise */
	if (orbit_spot_host_stop(h))
		return 80;
	return 0;
}

/*
 * The parent's half before its fork: an agent named @name, a 1-thread
 * pool (*@pool), a client (*@cl) that submits one Spot record. 0, or the
 * first failing step (70-74).
 */
static int parent_submits_one(struct orbit_test_proc *pr, const char *name,
			      orbit_worker_pool_t **pool, orbit_spot_client_t **cl)
{
	uint64_t seq;

	if (orbit_test_proc_start(pr, fleet, name, 0))
		return 70;
	if (one_thread_pool(pool))
		return 71;
	if (orbit_spot_client_open(pr->agent, SPOT, NULL, cl))
		return 73;
	if (orbit_spot_submit_spot(*cl, "r", 1, &seq))
		return 74;
	return 0;
}

static int inherited_coord_main(void *arg)
{
	struct orbit_spot_serial_executor_options so;
	struct orbit_test_proc pr;
	orbit_spot_serial_executor_t *coord;
	orbit_worker_pool_t *pool;
	orbit_spot_client_t *cl;
	int st;

	(void)arg;
	st = parent_submits_one(&pr, "icparent", &pool, &cl);
	if (st)
		return st;
	orbit_spot_serial_executor_options_init(&so);
	so.mode = ORBIT_SPOT_PER_ACTOR;
	so.executor = orbit_worker_pool_executor(pool);
	if (orbit_spot_serial_executor_create(&so, &coord))
		return 72;
	pid_t pid = fork();
	if (pid == 0) {
		orbit_test_child_default_signals();
		_exit(ic_child(coord));
	}
	st = child_then_parent_hosts(&pr, pid, coord, (orbit_executor_t){ 0 }, 1);
	if (st)
		return st;
	orbit_spot_client_close(cl);
	orbit_spot_serial_executor_close(coord);
	orbit_spot_serial_executor_await_quiescence(coord, -1);
	orbit_spot_serial_executor_destroy(coord);
	orbit_worker_pool_destroy(pool);
	orbit_test_proc_stop(&pr);
	return 0;
}

/*
 * A forked child with its own agent hosts SPOT on the coordinator its
 * parent made: orbit_spot_host_start() says -ECHILD before it takes the
 * lease, so the child takes no record and completes none (before, it
 * took the record and, the coordinator refusing it with -ECHILD,
 * completed it unrun: the fleet lost it). The parent then hosts the Spot
 * itself and gets the record, not flagged redelivered.
 */
static void test_host_start_refuses_an_inherited_coordinator(void **state)
{
	(void)state;
#ifdef ORBIT_TEST_NO_FORK_AMID_THREADS
	skip(); /* the child starts an agent amid the parent's pool and agent threads */
#endif
	assert_int_equal(orbit_test_fork_run(inherited_coord_main, NULL, 60000), 0);
}

/* ---- a caller's executor that wraps an inherited pool ---- */

static orbit_executor_t wp_inner; /* the parent's pool's executor */
static _Atomic int wp_lost;	  /* on_lost's reason, 1 before */

static int wp_submit(void *ctx, void (*fn)(void *), void *arg, int home_node)
{
	(void)ctx;
	return wp_inner.submit(wp_inner.ctx, fn, arg, home_node);
}

static void wp_on_lost(orbit_spot_host_t *host, int reason, void *ctx)
{
	(void)host;
	(void)ctx;
	atomic_store(&wp_lost, reason);
}

/*
 * The forked child: its own agent, and a host of SPOT whose coordinator
 * the call makes on an executor that passes every task to the parent's
 * pool (the fork check cannot see through it). 0 when the host was lost
 * with -ECHILD and stopped; 4 when the record was completed unrun.
 */
static int wp_child(void)
{
	struct orbit_spot_host_options ho;
	struct orbit_spot_host_stats st;
	struct orbit_test_proc pr;
	orbit_spot_host_t *h;

	atomic_store(&wp_lost, 1);
	if (orbit_test_proc_start(&pr, fleet, "wpchild", 0))
		return 1;
	orbit_spot_host_options_init(&ho);
	ho.spot = SPOT;
	ho.on_spot = ic_handler;
	ho.on_lost = wp_on_lost;
	ho.mode = ORBIT_SPOT_PER_ACTOR;
	ho.executor = (orbit_executor_t){ .submit = wp_submit };
	if (orbit_spot_host_start(pr.agent, &ho, &h))
		return 2;
	for (int ms = 0; ms < 3000 && atomic_load(&wp_lost) == 1; ms++)
		usleep(1000);
	if (orbit_spot_host_stats(h, &st) == 0 && st.undeliverable != 0)
		return 4; /* before: the -ECHILD refusal completed it unrun */
	if (atomic_load(&wp_lost) != -ECHILD || orbit_spot_host_state(h) != ORBIT_SPOT_LOST)
		return 3;
	if (orbit_spot_host_stop(h))
		return 5;
	orbit_test_proc_stop(&pr);
	return 0;
}

static int wrapped_pool_main(void *arg)
{
	struct orbit_test_proc pr;
	orbit_worker_pool_t *pool;
	orbit_spot_client_t *cl;
	int st;

	(void)arg;
	st = parent_submits_one(&pr, "wpparent", &pool, &cl);
	if (st)
		return st;
	wp_inner = orbit_worker_pool_executor(pool);
	pid_t pid = fork();
	if (pid == 0) {
		orbit_test_child_default_signals();
		_exit(wp_child());
	}
	st = child_then_parent_hosts(&pr, pid, NULL, wp_inner, 2);
	if (st)
		return st;
	orbit_spot_client_close(cl);
	orbit_worker_pool_destroy(pool);
	orbit_test_proc_stop(&pr);
	return 0;
}

/*
 * A forked child hosts SPOT on an executor of its own that wraps the
 * parent's pool: every hand-over is refused with -ECHILD (the pool's
 * submit). The host is lost with reason -ECHILD and the record stays
 * taken, uncompleted (before, the refusal was taken for -E2BIG/-EINVAL
 * and the record completed unrun: the fleet lost it); the parent then
 * hosts the Spot and gets the record, flagged redelivered.
 */
static void test_record_refused_with_echild_stays_for_the_next_host(void **state)
{
	(void)state;
#ifdef ORBIT_TEST_NO_FORK_AMID_THREADS
	skip(); /* the child starts an agent amid the parent's pool and agent threads */
#endif
	assert_int_equal(orbit_test_fork_run(wrapped_pool_main, NULL, 60000), 0);
}

/* ---- a host lost to a closed coordinator ---- */

#define CC_TTL_NS 30000000000ull /* the lost host's lease: far past the test's 10 s wait */

static _Atomic int cc_gate_in, cc_gate_open;  /* record "g": its handler is in / may return */
static _Atomic int cc_runs[3], cc_redeliv[3]; /* per record g, r, s */

static int cc_handler(orbit_serial_turn_t *turn, const struct orbit_spot_record *rec, void *ctx)
{
	static const char names[] = "grs";
	const char *at = rec->len == 1 ? memchr(names, *(const char *)rec->payload, 3) : NULL;

	(void)turn;
	(void)ctx;
	if (!at)
		return ORBIT_SERIAL_DONE;
	atomic_fetch_add(&cc_runs[at - names], 1);
	atomic_fetch_add(&cc_redeliv[at - names], rec->redelivered);
	if (*at == 'g') {
		atomic_store(&cc_gate_in, 1);
		for (int ms = 0; ms < 10000 && !atomic_load(&cc_gate_open); ms++)
			usleep(1000);
	}
	return ORBIT_SERIAL_DONE;
}

static bool cc_wait(_Atomic int *w, int want)
{
	for (int ms = 0; ms < 5000 && atomic_load(w) != want; ms++)
		usleep(1000);
	return atomic_load(w) == want;
}

/* The one process of the closed-coordinator tests. */
struct cc {
	struct orbit_test_proc pr;
	orbit_worker_pool_t *pool;
	orbit_spot_serial_executor_t *coord;
	orbit_spot_client_t *cl;
	orbit_spot_host_t *a, *b;
	struct orbit_spot_host_options bo; /* B's options */
};

/*
 * Host A on a coordinator the caller made (lease TTL 30 s); record "g",
 * whose handler waits at a gate; the coordinator closed; record "r",
 * which A's hand-over sees refused with -EPIPE: A is lost with "g" still
 * out. Then B's options (a coordinator of its own). 0, or the first
 * failing step (1-7).
 */
static int cc_lose_a(struct cc *c, const char *name)
{
	struct orbit_spot_serial_executor_options so;
	struct orbit_spot_host_options ho;
	uint64_t seq;

	atomic_store(&wp_lost, 1);
	if (orbit_test_proc_start(&c->pr, fleet, name, 0))
		return 1;
	if (one_thread_pool(&c->pool))
		return 2;
	orbit_spot_serial_executor_options_init(&so);
	so.mode = ORBIT_SPOT_PER_ACTOR;
	so.executor = orbit_worker_pool_executor(c->pool);
	if (orbit_spot_serial_executor_create(&so, &c->coord))
		return 3;
	orbit_spot_host_options_init(&ho);
	ho.spot = SPOT;
	ho.on_spot = cc_handler;
	ho.on_lost = wp_on_lost;
	ho.coordinator = c->coord;
	ho.lease_ttl_ns = CC_TTL_NS;
	if (orbit_spot_host_start(c->pr.agent, &ho, &c->a))
		return 4;
	if (orbit_spot_client_open(c->pr.agent, SPOT, NULL, &c->cl) ||
	    orbit_spot_submit_spot(c->cl, "g", 1, &seq) || !cc_wait(&cc_gate_in, 1))
		return 5;
	if (orbit_spot_serial_executor_close(c->coord) ||
	    orbit_spot_submit_spot(c->cl, "r", 1, &seq))
		return 6;
	if (!cc_wait(&wp_lost, -EPIPE) || orbit_spot_host_state(c->a) != ORBIT_SPOT_LOST)
		return 7;
	orbit_spot_host_options_init(&c->bo);
	c->bo.spot = SPOT;
	c->bo.on_spot = cc_handler;
	c->bo.mode = ORBIT_SPOT_PER_ACTOR;
	c->bo.executor = orbit_worker_pool_executor(c->pool);
	return 0;
}

/* B's start, retried on -EBUSY and -EAGAIN (the lock serializer stayed busy) up to 10 s. */
static int cc_start_b(struct cc *c)
{
	int r;

	for (int ms = 0;
	     ((r = orbit_spot_host_start(c->pr.agent, &c->bo, &c->b)) == -EBUSY || r == -EAGAIN) &&
	     ms < 10000;
	     ms += 5)
		usleep(5000);
	return r;
}

/*
 * After B started: "r" comes to B flagged redelivered, "g" ran once (A
 * completed it); A's stop frees nothing of B's, which hosts on and runs a
 * new record "s". 0, or the first failing step (10-14).
 */
static int cc_finish(struct cc *c)
{
	uint64_t seq;

	if (!cc_wait(&cc_runs[1], 1) || atomic_load(&cc_redeliv[1]) != 1)
		return 10; /* "r": refused by A, run by B, flagged */
	if (atomic_load(&cc_runs[0]) != 1)
		return 11; /* "g": A completed it, B must not get it */
	if (orbit_spot_host_stop(c->a))
		return 12;
	if (orbit_spot_host_state(c->b) != ORBIT_SPOT_HOSTING ||
	    orbit_spot_submit_spot(c->cl, "s", 1, &seq))
		return 13;
	if (!cc_wait(&cc_runs[2], 1) || atomic_load(&cc_redeliv[2]) || orbit_spot_host_stop(c->b))
		return 14;
	orbit_spot_client_close(c->cl);
	orbit_spot_serial_executor_await_quiescence(c->coord, -1);
	orbit_spot_serial_executor_destroy(c->coord);
	orbit_worker_pool_destroy(c->pool);
	orbit_test_proc_stop(&c->pr);
	return 0;
}

/* A lost; B refused while "g" runs; the gate opens and B starts. 0, or a step (1-14). */
static int closed_coord_main(void *arg)
{
	struct cc c = { 0 };
	int r = cc_lose_a(&c, "ccproc");

	(void)arg;
	if (r)
		return r;
	/* B, while A's handler of "g" still runs: the lease stays A's */
	for (int ms = 0; ms < 300; ms += 20) {
		r = orbit_spot_host_start(c.pr.agent, &c.bo, &c.b);
		if (r != -EBUSY && r != -EAGAIN) /* -EAGAIN: the lock serializer stayed busy */
			return 8;		 /* freed with a handed-over record still out */
		usleep(20000);
	}
	/* the handler returns, A completes "g" and lets go: B starts (-EBUSY
	 * for 30 s before the fix) */
	atomic_store(&cc_gate_open, 1);
	if (cc_start_b(&c))
		return 9; /* -EBUSY past 10 s: the lost host kept its lease */
	return cc_finish(&c);
}

/* A child that opens its own lock handle and stops itself holding the table's serializer. */
static int cc_stop_in_serializer(void)
{
	struct orbit_lock_options o = { .size = sizeof(o), .fleet = fleet };
	orbit_lock_key_t k = orbit_lock_key(ORBIT_LOCK_NAMESPACE("test.cc"), "held", 4);
	orbit_lock_owner_t me = { "cc-child", 8 };
	orbit_lock_t *l;

	if (orbit_lock_open(&o, &l))
		return 1;
	orbit__crashpoint_arm("lock.holding_serializer", 1, ORBIT_CRASH_STOP);
	(void)orbit_lock_try_acquire(l, &k, &me, 1000000000ull, NULL, NULL); /* stops inside */
	orbit_lock_close(l);
	return 0;
}

/*
 * A lost as above; a child holds the lock table's serializer (stopped in
 * it) when A's handler of "g" returns, so A's release is refused with
 * -EAGAIN (the 100 ms serializer bound) for 500 ms; the child goes on and
 * B starts. 0, or a step (1-7, 20-22, 9-14).
 */
static int serializer_busy_main(void *arg)
{
	struct cc c = { 0 };
	int st, r = cc_lose_a(&c, "ccser");
	pid_t pid;

	(void)arg;
	if (r)
		return r;
	pid = fork();
	if (pid < 0)
		return 20;
	if (pid == 0) {
		orbit_test_child_default_signals();
		_exit(cc_stop_in_serializer());
	}
	if (waitpid(pid, &st, WUNTRACED) != pid || !WIFSTOPPED(st))
		return 21; /* the child holds the serializer, stopped */
	atomic_store(&cc_gate_open, 1);
	usleep(500000); /* A's releases: -EAGAIN after 100 ms each */
	kill(pid, SIGCONT);
	if (orbit_test_wait(pid, 10000) < 0)
		return 22;
	if (cc_start_b(&c))
		return 9; /* -EBUSY past 10 s: A gave up its refused release */
	return cc_finish(&c);
}

/*
 * A lock backend that cannot be reached for a while (etcd without quorum:
 * -ORBIT_EUNAVAILABLE once the call's bound is spent), through the host's
 * release hook: each release answers so while cc_unavailable is above 0,
 * counting it down.
 */
static _Atomic int cc_unavailable;

static int cc_unreachable_release(void)
{
	int left = atomic_load(&cc_unavailable);

	while (left > 0 && !atomic_compare_exchange_weak(&cc_unavailable, &left, left - 1))
		;
	return left > 0 ? -ORBIT_EUNAVAILABLE : 0;
}

/*
 * A lost as above, with a lock backend that answers A's first 20
 * releases -ORBIT_EUNAVAILABLE (about 20 ms of A's 1 ms retries) once
 * A's handler of "g" returns; then B starts. 0, or a step (1-7, 9-14).
 */
static int backend_unavailable_main(void *arg)
{
	struct cc c = { 0 };
	int r = cc_lose_a(&c, "ccuna");

	(void)arg;
	if (r)
		return r;
	atomic_store(&cc_unavailable, 20);
	atomic_store(&orbit__spot_host_test_release_hook, cc_unreachable_release);
	atomic_store(&cc_gate_open, 1);
	if (cc_start_b(&c))
		return 9; /* -EBUSY past 10 s: A took an unreachable backend for a release */
	return cc_finish(&c);
}

/*
 * A host lost because its coordinator was closed (-EPIPE) frees its lease
 * as soon as every record it handed over is back (a handler still running
 * keeps it), so the next host of the Spot starts at once, not after the
 * lost host's 30 s TTL (before, it kept the lease until the TTL ran out
 * or its process died). The next host gets the record the lost host took
 * and could not hand over again, flagged redelivered, not the one it
 * completed; the lost host's stop then frees nothing of the new host's.
 */
static void test_host_lost_to_a_closed_coordinator_frees_its_lease_at_once(void **state)
{
	(void)state;
	assert_int_equal(orbit_test_fork_run(closed_coord_main, NULL, 60000), 0);
}

/*
 * A lost host whose release of its lease is refused because the lock
 * table's serializer stayed busy (-EAGAIN, a stopped process holding it)
 * tries again until it gets through, within its lease's deadline: the
 * next host then starts at once, not after the 30 s TTL (fails at its
 * 10 s bound when the first refusal counts as released).
 */
static void test_lost_host_retries_a_release_the_serializer_refused(void **state)
{
	(void)state;
	assert_int_equal(orbit_test_fork_run(serializer_busy_main, NULL, 60000), 0);
}

/*
 * A lost host whose release gets -ORBIT_EUNAVAILABLE (a lock backend it
 * cannot reach within the call's bound, as the etcd backend answers
 * without quorum) tries again, as for a busy serializer, until it gets
 * through within its lease's deadline: the next host starts at once
 * (fails at its 10 s bound when only -EAGAIN is retried).
 */
static void test_lost_host_retries_a_release_an_unreachable_backend_refused(void **state)
{
	(void)state;
	assert_int_equal(orbit_test_fork_run(backend_unavailable_main, NULL, 60000), 0);
}

/* A child: the agent's stop refused while a host or a client of it exists. 0, or a step. */
static int stop_refused_main(void *arg)
{
	struct orbit_spot_host_options ho;
	orbit_worker_pool_t *pool;
	orbit_spot_client_t *cl;
	orbit_spot_host_t *h;
	struct orbit_test_proc pr;
	uint64_t seq;

	(void)arg;
	if (orbit_test_proc_start(&pr, fleet, "stopper", 0) || one_thread_pool(&pool))
		return 1;
	if (orbit_spot_client_open(pr.agent, SPOT, NULL, &cl))
		return 2;
	if (orbit_agent_stop(pr.agent) != -EBUSY)
		return 3; /* was 0, and the client's next call used a freed agent */
	if (orbit_spot_submit_spot(cl, "x", 1, &seq))
		return 4; /* the refused stop changed nothing */
	orbit_spot_host_options_init(&ho);
	ho.spot = SPOT;
	ho.on_spot = cc_handler;
	ho.executor = orbit_worker_pool_executor(pool);
	if (orbit_spot_host_start(pr.agent, &ho, &h))
		return 5;
	orbit_spot_client_close(cl);
	if (orbit_agent_stop(pr.agent) != -EBUSY)
		return 6; /* the host still runs */
	if (orbit_spot_host_stop(h))
		return 7; /* aborted in the registry's freed mutex before the fix */
	orbit_worker_pool_destroy(pool);
	if (orbit_agent_stop(pr.agent))
		return 8; /* nothing of it is left: stopped */
	orbit_lock_close(pr.lock);
	return 0;
}

/*
 * orbit_agent_stop() while a Spot host or client of the agent exists
 * answers -EBUSY and changes nothing; once the last one is stopped or
 * closed it stops. It answered 0 and freed the agent, and the host's
 * later stop aborted on the agent's freed registry mutex.
 */
static void test_agent_stop_refused_while_a_spot_host_or_client_exists(void **state)
{
	(void)state;
	assert_int_equal(orbit_test_fork_run(stop_refused_main, NULL, 30000), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_4_producers_x_100000_records_no_loss_no_duplicate_order_kept, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    test_host_sigkilled_mid_handler_adopted_with_redelivery, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_host_sigkilled_between_take_and_complete_adopted_with_redelivery, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_host_sigstopped_past_lease_is_fenced, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_backpressure_by_count_and_bytes_public_api,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_coordinator_backpressure_never_loses_a_record,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_coordinator_backpressure_on_a_run_never_loses_a_record, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_every_entry_kind_reaches_its_handler_with_its_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_submit_with_no_host_then_host_arrives, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
		    test_record_completed_only_after_yielded_handler_finished, setup, teardown),
		cmocka_unit_test_setup_teardown(test_host_stop_dies_when_pthread_join_fails, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
		    test_handler_finished_while_host_sleeps_is_completed_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_unhandled_record_behind_a_refused_one_runs_nothing_twice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_take_goes_on_while_every_worker_runs_a_handler,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_stop_from_a_task_of_the_hosts_own_executor_returns, setup, teardown),
		cmocka_unit_test_setup_teardown(test_host_start_refuses_an_inherited_coordinator,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_record_refused_with_echild_stays_for_the_next_host, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_host_lost_to_a_closed_coordinator_frees_its_lease_at_once, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    test_lost_host_retries_a_release_the_serializer_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_lost_host_retries_a_release_an_unreachable_backend_refused, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    test_agent_stop_refused_while_a_spot_host_or_client_exists, setup, teardown),
	};

	if (getenv("ORBIT_TEST_FILTER"))
		cmocka_set_test_filter(getenv("ORBIT_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
