// SPDX-License-Identifier: MIT
/*
 * tests/mp/test_spot_queue_mp.c: the Spot queue's SHM layer across real
 * processes (issue 11 "Cross-process Spot queues"): 4 producer processes
 * into one queue drained by a host process (100,000 records each; the long
 * tier 1,000,000), producers SIGKILLed at the labelled crash points and
 * SIGSTOPped mid-record, hosts SIGKILLed between take and complete and
 * paused across a takeover. Real fork, kill and the member directory's
 * kernel proof; a unique fleet per test, unlinked at the end.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "orbit_test.h"
#include <orbit/error.h>
#include "shm/crashpoint.h"
#include "shm/members.h"
#include "shm/spot_queue.h"

#define SPOT "mp.spot"
#define PRODUCERS 4
#define MAX_ROWS 8

struct fx {
	char fleet[64];
	orbit_members_t *m;
	orbit_spotq_t *q;
	orbit_spotq_producer_t *p;
	struct orbit_spotq_options o;
	struct orbit_spotq_rec recs[256];
	uint8_t buf[1 << 17];
};

/* What the 4x100k host saw (shared anonymous mapping, written by the host only). */
struct verdict {
	_Atomic uint64_t taken, redelivered, out_of_order, bad_payload, corrupt_seen;
	uint64_t last_seq[MAX_ROWS];
	uint64_t count[MAX_ROWS];
	_Atomic int host_ready;
	_Atomic int done;
};

static struct orbit_spotq_options base_opts(void)
{
	struct orbit_spotq_options o;

	orbit__spotq_options_init(&o);
	o.how = ORBIT_SEG_OPEN_OR_CREATE;
	o.app_items = 256;
	o.app_bytes = 64 * 1024;
	o.lifecycle_items = 16;
	o.lifecycle_bytes = 4096;
	o.producer_rows = MAX_ROWS;
	o.unblock_ms = 10000; /* a timeout would show: dead producers must go at once */
	return o;
}

static void fx_init(struct fx *f, struct orbit_spotq_options o, bool producer)
{
	orbit_test_fleet(f->fleet, sizeof(f->fleet), "sqmp");
	f->o = o;
	assert_int_equal(orbit__members_open(&f->m, f->fleet, MAX_ROWS, NULL), 0);
	assert_true(orbit__members_join(f->m, "test") >= 0);
	assert_int_equal(orbit__spotq_open(&f->q, f->fleet, SPOT, &f->o), 0);
	if (producer)
		assert_int_equal(orbit__spotq_producer_open(&f->p, f->q, f->m), 0);
}

static void fx_fini(struct fx *f)
{
	orbit__spotq_producer_close(f->p);
	orbit__spotq_close(f->q);
	orbit__spotq_unlink(f->fleet, SPOT);
	orbit__members_close(f->m);
	orbit__members_unlink(f->fleet);
}

static void check_ok(orbit_spotq_t *q)
{
	char why[256];

	if (orbit__spotq_check(q, why, sizeof(why)))
		fail_msg("queue checker: %s", why);
}

static struct orbit_spotq_counters counters(orbit_spotq_t *q)
{
	struct orbit_spotq_counters c;

	assert_int_equal(orbit__spotq_counters(q, &c), 0);
	return c;
}

/* A child's own handles (a forked child must not use the parent's: -ECHILD). */
struct child {
	orbit_members_t *m;
	orbit_spotq_t *q;
	orbit_spotq_producer_t *p;
};

static int child_open(struct child *c, const char *fleet, const struct orbit_spotq_options *o,
		      bool producer)
{
	if (orbit__members_open(&c->m, fleet, MAX_ROWS, NULL) ||
	    orbit__members_join(c->m, "child") < 0)
		return 10;
	if (orbit__spotq_open(&c->q, fleet, SPOT, o))
		return 11;
	if (producer && orbit__spotq_producer_open(&c->p, c->q, c->m))
		return 12;
	return 0;
}

/* A child's own handles and a takeover for @epoch. Returns 0 or an exit code. */
static int child_host(struct child *c, const char *fleet, const struct orbit_spotq_options *o,
		      uint64_t epoch, orbit_spotq_host_t **h)
{
	int r = child_open(c, fleet, o, false);

	if (r)
		return r;
	return orbit__spotq_host_takeover(h, c->q, c->m, epoch) ? 13 : 0;
}

/* Payload of record @seq of row @row, @len bytes. */
static void fill(uint8_t *b, uint32_t len, uint32_t row, uint64_t seq)
{
	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(row * 31u + seq * 7u + i);
}

static bool payload_ok(const struct orbit_spotq_rec *r)
{
	const uint8_t *b = r->payload;

	for (uint32_t i = 0; i < r->payload_len; i++)
		if (b[i] != (uint8_t)(r->member_row * 31u + r->producer_seq * 7u + i))
			return false;
	return true;
}

static int submit_seq(orbit_spotq_producer_t *p, uint32_t row, uint64_t seq, uint32_t len,
		      uint64_t *seq_out)
{
	static uint8_t b[8192];
	struct orbit_spotq_submit s = { .kind = seq % 3 ? ORBIT_SPOTQ_KIND_SPOT
							: ORBIT_SPOTQ_KIND_ACTOR,
					.actor_id = seq,
					.payload = b,
					.len = len };

	fill(b, len, row, seq);
	return orbit__spotq_submit(p, &s, seq_out);
}

/* ---- 4 producers x 100,000 ---- */

static int producer_main(const char *fleet, const struct orbit_spotq_options *o, uint64_t n)
{
	struct child c = { 0 };
	uint32_t gen;
	int r = child_open(&c, fleet, o, true);

	if (r)
		return r;
	uint32_t row = (uint32_t)orbit__members_self(c.m, &gen);
	for (uint64_t i = 1; i <= n;) {
		uint64_t seq;
		uint32_t len = (uint32_t)(i % 97);
		r = submit_seq(c.p, row, i, len, &seq);
		if (r == -EAGAIN) {
			orbit__spotq_wait_room(c.p, ORBIT_SPOTQ_APP, len, 50000000);
			continue;
		}
		if (r || seq != i) {
			fprintf(stderr, "producer: submit %llu: %d (%s), seq %llu\n",
				(unsigned long long)i, r, orbit_strerror(r),
				(unsigned long long)seq);
			return 20;
		}
		i++;
	}
	return 0;
}

static int host_main(const char *fleet, const struct orbit_spotq_options *o, struct verdict *v,
		     uint64_t total)
{
	static struct orbit_spotq_rec recs[128];
	static uint8_t buf[1 << 16];
	struct child c = { 0 };
	orbit_spotq_host_t *h;
	int r = child_host(&c, fleet, o, 1, &h);

	if (r)
		return r;
	atomic_store(&v->host_ready, 1);
	uint64_t deadline = orbit_test_now_ns() + 600ull * 1000000000ull;
	while (atomic_load(&v->taken) < total) {
		int n = orbit__spotq_take(h, ORBIT_SPOTQ_APP, recs, 128, buf, sizeof(buf));
		if (n < 0)
			return 14;
		if (n == 0) {
			if (orbit_test_now_ns() > deadline)
				return 15;
			orbit__spotq_host_wait(h, 100000000, 0);
			continue;
		}
		for (int i = 0; i < n; i++) {
			const struct orbit_spotq_rec *rec = &recs[i];
			uint32_t row = rec->member_row;
			if (row >= MAX_ROWS) {
				atomic_fetch_add(&v->bad_payload, 1);
				continue;
			}
			if (rec->producer_seq != v->last_seq[row] + 1)
				atomic_fetch_add(&v->out_of_order, 1);
			v->last_seq[row] = rec->producer_seq;
			v->count[row]++;
			if (rec->redelivered)
				atomic_fetch_add(&v->redelivered, 1);
			if (!payload_ok(rec))
				atomic_fetch_add(&v->bad_payload, 1);
			if (orbit__spotq_complete(h, ORBIT_SPOTQ_APP, rec->pos))
				return 16;
			atomic_fetch_add(&v->taken, 1);
		}
	}
	struct orbit_spotq_counters cn;
	orbit__spotq_counters(c.q, &cn);
	atomic_store(&v->corrupt_seen, cn.corrupt[0] + cn.corrupt[1]);
	return 0;
}

/* Issue 11 "4 producer processes x 100,000 records: no loss, no duplicate, per-producer order". */
static void test_4_producers_x_100k_no_loss_no_dup_order_kept(void **state)
{
	struct fx f = { 0 };
	uint64_t n = orbit_test_long() ? 1000000 : 100000;
	struct verdict *v = mmap(NULL, sizeof(*v), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t host, prod[PRODUCERS];
	int st;

	(void)state;
	assert_true(v != MAP_FAILED);
	memset(v, 0, sizeof(*v));
	fx_init(&f, base_opts(), false);
	host = fork();
	if (host == 0)
		_exit(host_main(f.fleet, &f.o, v, n * PRODUCERS));
	while (!atomic_load(&v->host_ready))
		usleep(1000);
	uint64_t t0 = orbit_test_now_ns();
	for (int i = 0; i < PRODUCERS; i++) {
		prod[i] = fork();
		if (prod[i] == 0)
			_exit(producer_main(f.fleet, &f.o, n));
	}
	for (int i = 0; i < PRODUCERS; i++) {
		st = orbit_test_wait(prod[i], 900000);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	st = orbit_test_wait(host, 900000);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	double secs = (double)(orbit_test_now_ns() - t0) / 1e9;
	print_message(
	    "4 x %llu records in %.2f s (%.2f M records/s, host and producers on 2 cores)\n",
	    (unsigned long long)n, secs, (double)(n * PRODUCERS) / secs / 1e6);
	/* the verifier: every producer's 1..n exactly once, in order */
	assert_int_equal(atomic_load(&v->taken), n * PRODUCERS);
	assert_int_equal(atomic_load(&v->out_of_order), 0);
	assert_int_equal(atomic_load(&v->redelivered), 0);
	assert_int_equal(atomic_load(&v->bad_payload), 0);
	assert_int_equal(atomic_load(&v->corrupt_seen), 0);
	int rows = 0;
	for (int r = 0; r < MAX_ROWS; r++) {
		if (!v->count[r])
			continue;
		rows++;
		assert_int_equal(v->count[r], n);
		assert_int_equal(v->last_seq[r], n);
	}
	assert_int_equal(rows, PRODUCERS);
	struct orbit_spotq_counters c = counters(f.q);
	assert_int_equal(c.accepted[0], n * PRODUCERS);
	assert_int_equal(c.completed[0], n * PRODUCERS);
	assert_int_equal(c.depth[0], 0);
	assert_int_equal(c.bytes[0], 0);
	check_ok(f.q);
	fx_fini(&f);
	munmap(v, sizeof(*v));
}

/* ---- producers killed and stopped mid-record ---- */

/* A producer child that arms @label on its @nth hit and submits @count records of @len. */
static int crashing_producer(const char *fleet, const struct orbit_spotq_options *o,
			     const char *label, uint64_t nth, enum orbit_crash_action act,
			     int count, uint32_t len, int report_fd)
{
	struct child c = { 0 };
	uint32_t gen;
	int r = child_open(&c, fleet, o, true);

	if (r)
		return r;
	uint32_t row = (uint32_t)orbit__members_self(c.m, &gen);
	orbit__crashpoint_arm(label, nth, act);
	for (int i = 1; i <= count; i++) {
		r = submit_seq(c.p, row, (uint64_t)i, len, NULL);
		if (report_fd >= 0 && write(report_fd, &r, sizeof(r)) != sizeof(r))
			return 30;
		if (r)
			return r == -ECANCELED ? 0 : 31;
	}
	return 32; /* the crash point never fired */
}

static pid_t wait_stopped_or_dead(pid_t pid, bool *stopped)
{
	int st;

	for (int i = 0; i < 10000; i++) {
		pid_t r = waitpid(pid, &st, WUNTRACED | WNOHANG);
		if (r == pid) {
			*stopped = WIFSTOPPED(st);
			return pid;
		}
		usleep(1000);
	}
	return -1;
}

/* Drain everything takeable, completing it; returns records taken. */
static int drain(struct fx *f, orbit_spotq_host_t *h, uint32_t lane, int *bad)
{
	int total = 0, n;

	while ((n = orbit__spotq_take(h, lane, f->recs, 256, f->buf, sizeof(f->buf))) > 0) {
		for (int i = 0; i < n; i++) {
			if (!payload_ok(&f->recs[i]))
				++*bad;
			assert_int_equal(orbit__spotq_complete(h, lane, f->recs[i].pos), 0);
		}
		total += n;
	}
	assert_true(n == 0);
	return total;
}

/* Issue 11 "Producers SIGKILLed at labelled crash points: the queue moves on, reservations come
 * back". */
static void test_producer_sigkilled_at_crash_points_queue_moves_on(void **state)
{
	static const char *const labels[] = { "spotq.after_claim", "spotq.mid_copy",
					      "spotq.before_commit" };

	(void)state;
	for (unsigned k = 0; k < 3; k++) {
		struct fx *f = calloc(1, sizeof(*f));
		orbit_spotq_host_t *h;
		bool stopped = true;
		int bad = 0;
		uint32_t gen;

		fx_init(f, base_opts(), true);
		uint32_t row = (uint32_t)orbit__members_self(f->m, &gen);
		assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
		pid_t pid = fork();
		if (pid == 0)
			_exit(crashing_producer(f->fleet, &f->o, labels[k], 3, ORBIT_CRASH_KILL, 10,
						3000, -1));
		assert_int_equal(wait_stopped_or_dead(pid, &stopped), pid);
		assert_false(stopped);
		/* records after the dead one, from a live producer */
		for (uint64_t i = 1; i <= 5; i++)
			assert_int_equal(submit_seq(f->p, row, i, 100, NULL), 0);
		uint64_t t0 = orbit_test_now_ns();
		int got = drain(f, h, ORBIT_SPOTQ_APP, &bad);
		uint64_t took = orbit_test_now_ns() - t0;
		/* mid_copy's 3rd hit is in the 2nd record (two chunk gaps per 3000 bytes) */
		int before = k == 1 ? 1 : 2;
		assert_int_equal(got, before + 5);
		assert_int_equal(bad, 0);
		struct orbit_spotq_counters c = counters(f->q);
		assert_int_equal(c.aborted[0], 1);
		assert_int_equal(c.corrupt[0], 0);
		assert_int_equal(c.depth[0], 0); /* reservations came back */
		assert_int_equal(c.bytes[0], 0);
		/* the kernel proof, not the 10 s unblock bound */
		assert_true(took < 1000000000ull);
		check_ok(f->q);
		orbit__spotq_host_close(h);
		fx_fini(f);
		free(f);
	}
}

/*
 * Issue 11 "SIGSTOPped mid-record: blocks only until the unblock bound, then
 * aborted; the late commit after SIGCONT is refused".
 */
static void test_producer_sigstopped_mid_record_aborted_late_commit_refused(void **state)
{
	static const char *const labels[] = { "spotq.before_commit", "spotq.mid_copy" };

	(void)state;
	for (unsigned k = 0; k < 2; k++) {
		struct fx *f = calloc(1, sizeof(*f));
		struct orbit_spotq_options o = base_opts();
		orbit_spotq_host_t *h;
		bool stopped = false;
		int bad = 0, fds[2], rc[8], nrc = 0;
		uint32_t gen;

		o.unblock_ms = 300;
		o.app_items = 4;
		o.app_bytes = 8192;
		fx_init(f, o, true);
		uint32_t row = (uint32_t)orbit__members_self(f->m, &gen);
		assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
		assert_int_equal(pipe(fds), 0);
		pid_t pid = fork();
		if (pid == 0) {
			close(fds[0]);
			_exit(crashing_producer(f->fleet, &f->o, labels[k], 1, ORBIT_CRASH_STOP, 3,
						3000, fds[1]));
		}
		close(fds[1]);
		assert_int_equal(wait_stopped_or_dead(pid, &stopped), pid);
		assert_true(stopped);
		assert_int_equal(submit_seq(f->p, row, 1, 100, NULL), 0);
		/* the lane waits for the stopped producer, but only until the bound */
		uint64_t t0 = orbit_test_now_ns();
		assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 0);
		int got = 0;
		while (got == 0) {
			assert_int_equal(orbit__spotq_host_wait(h, 1000000000, 0), 0);
			got = drain(f, h, 0, &bad);
			assert_true(orbit_test_now_ns() - t0 < 5000000000ull);
		}
		uint64_t took = orbit_test_now_ns() - t0;
		assert_true(took >= 300000000ull);
		assert_int_equal(got, 1);
		assert_int_equal(counters(f->q).aborted[0], 1);
		/*
		 * Later records are delivered, but the stopped producer may still
		 * write into its slot and bytes: their reservation stays held
		 * (backpressure, never a reuse under a live writer).
		 */
		assert_int_equal(submit_seq(f->p, row, 2, 100, NULL), 0);
		assert_int_equal(submit_seq(f->p, row, 3, 100, NULL), 0);
		assert_int_equal(submit_seq(f->p, row, 4, 100, NULL), -EAGAIN);
		assert_int_equal(drain(f, h, 0, &bad), 2);
		assert_int_equal(counters(f->q).depth[0], 4);
		kill(pid, SIGCONT);
		int st = orbit_test_wait(pid, 10000);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
		while (read(fds[0], &rc[nrc], sizeof(rc[0])) == sizeof(rc[0]) && nrc < 7)
			nrc++;
		close(fds[0]);
		assert_int_equal(nrc, 1);
		assert_int_equal(rc[0], -ECANCELED); /* the late commit is refused */
		/* it retired: the reservations come back, its slot and bytes are reused */
		assert_true(orbit__spotq_advance(h, 0) >= 1);
		assert_int_equal(counters(f->q).depth[0], 0);
		for (uint64_t i = 4; i <= 12; i++) {
			assert_int_equal(submit_seq(f->p, row, i, 2500, NULL), 0);
			assert_int_equal(drain(f, h, 0, &bad), 1);
		}
		/* nothing torn */
		check_ok(f->q);
		assert_int_equal(bad, 0);
		struct orbit_spotq_counters c = counters(f->q);
		assert_int_equal(c.corrupt[0], 0);
		assert_int_equal(c.depth[0], 0);
		orbit__spotq_host_close(h);
		fx_fini(f);
		free(f);
	}
}

/*
 * A 4-item lane whose pos 0 a producer child claimed and is stopped in
 * (spotq.after_claim); the host @h aborted it after the 50 ms bound.
 * Returns that child's pid; *@row is the test process's own row.
 */
static pid_t stopped_claim_aborted(struct fx *f, orbit_spotq_host_t **hp, uint32_t *row)
{
	struct orbit_spotq_options o = base_opts();
	bool stopped = false;
	uint32_t gen;

	o.unblock_ms = 50;
	o.app_items = 4;
	o.app_bytes = 8192;
	fx_init(f, o, true);
	*row = (uint32_t)orbit__members_self(f->m, &gen);
	assert_int_equal(orbit__spotq_host_takeover(hp, f->q, f->m, 1), 0);
	pid_t pid = fork();
	if (pid == 0)
		_exit(crashing_producer(f->fleet, &f->o, "spotq.after_claim", 1, ORBIT_CRASH_STOP,
					1, 100, -1));
	assert_int_equal(wait_stopped_or_dead(pid, &stopped), pid);
	assert_true(stopped); /* pos 0 CLAIMED by the stopped producer */
	for (int i = 0; i < 100 && counters(f->q).aborted[0] == 0; i++) {
		assert_true(orbit__spotq_take(*hp, 0, f->recs, 8, f->buf, sizeof(f->buf)) >= 0);
		usleep(10000);
	}
	assert_int_equal(counters(f->q).aborted[0], 1);
	return pid;
}

/*
 * Issue 11 "Never a torn record visible" and "loses nothing that was
 * accepted" (review F1): a producer stopped right after its claim
 * (spotq.after_claim) is aborted after the bound; its slot is reused only
 * after it resumed and retired, so its late meta stores cannot clobber a
 * later accepted record in the same slot.
 */
static void test_stopped_producer_late_stores_never_hit_a_later_record(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	orbit_spotq_host_t *h;
	int bad = 0;

	(void)state;
	uint32_t row;
	pid_t pid = stopped_claim_aborted(f, &h, &row);
	for (uint64_t i = 1; i <= 3; i++) {
		assert_int_equal(submit_seq(f->p, row, i, 100, NULL), 0);
		assert_int_equal(drain(f, h, 0, &bad), 1);
	}
	/* pos 4 would reuse slot 0 under a live writer: refused as backpressure */
	assert_int_equal(submit_seq(f->p, row, 4, 100, NULL), -EAGAIN);
	kill(pid, SIGCONT);
	int st = orbit_test_wait(pid, 10000);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0); /* its submit said -ECANCELED */
	assert_true(orbit__spotq_advance(h, 0) >= 1);
	assert_int_equal(submit_seq(f->p, row, 4, 100, NULL), 0); /* accepted */
	assert_int_equal(drain(f, h, 0, &bad), 1);		  /* delivered, whole */
	assert_int_equal(bad, 0);
	assert_int_equal(counters(f->q).corrupt[0], 0);
	check_ok(f->q);
	orbit__spotq_host_close(h);
	fx_fini(f);
	free(f);
}

/*
 * Issue 11 "a producer stopped mid-record blocks only until the unblock
 * bound" (liveness): the host aborts a stopped producer's record and makes
 * its last advance() while the producer has not retired, so the record
 * holds the head and the lane is full. The producer then resumes and
 * retires; nothing rings for that. A host that only takes and waits (as
 * every host loop does once nothing is in flight) must still free the
 * slot within a few stall polls, or the Spot stops for good.
 */
static void held_head_case(bool resume_while_waiting)
{
	struct fx *f = calloc(1, sizeof(*f));
	orbit_spotq_host_t *h;
	int bad = 0, st;

	uint32_t row;
	pid_t pid = stopped_claim_aborted(f, &h, &row);
	/* fill the lane behind it; each complete() advances, and stops at pos 0 */
	for (uint64_t i = 1; i <= 3; i++) {
		assert_int_equal(submit_seq(f->p, row, i, 100, NULL), 0);
		assert_int_equal(drain(f, h, 0, &bad), 1);
	}
	assert_int_equal(submit_seq(f->p, row, 4, 100, NULL), -EAGAIN); /* full */
	/* the producer resumes and retires after the host's last advance() */
	uint64_t t0 = orbit_test_now_ns(), waited_ns;
	pid_t resumer = -1;
	if (resume_while_waiting) {
		resumer = fork(); /* resumes its sibling while the host sleeps */
		if (resumer == 0) {
			usleep(200000);
			_exit(kill(pid, SIGCONT) ? 1 : 0);
		}
		assert_true(resumer > 0);
	} else {
		kill(pid, SIGCONT);
		st = orbit_test_wait(pid, 10000);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0); /* its submit said -ECANCELED */
		t0 = orbit_test_now_ns();
	}
	/* the host loop: wait, take; no advance() or complete() from here on */
	int r = -EAGAIN;
	while (orbit_test_now_ns() - t0 < 1500000000ull) {
		/* longer than the bound: only a wait that polls the held head passes */
		int w = orbit__spotq_host_wait(h, 3000000000ll, 0);
		assert_true(w == 0 || w == -ETIMEDOUT);
		assert_int_equal(orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf)), 0);
		r = submit_seq(f->p, row, 4, 100, NULL);
		if (r != -EAGAIN)
			break;
	}
	waited_ns = orbit_test_now_ns() - t0;
	if (r != 0 || waited_ns > 1500000000ull)
		fail_msg(
		    "%s: head still held %.0f ms after the producer was resumed: submit %d (%s)",
		    resume_while_waiting ? "resumed while the host waits"
					 : "retired before the host waits",
		    waited_ns / 1e6, r, orbit_strerror(r));
	if (resume_while_waiting) {
		st = orbit_test_wait(resumer, 10000);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
		st = orbit_test_wait(pid, 10000);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	assert_int_equal(drain(f, h, 0, &bad), 1); /* delivered, whole */
	assert_int_equal(bad, 0);
	assert_int_equal(counters(f->q).corrupt[0], 0);
	check_ok(f->q);
	orbit__spotq_host_close(h);
	fx_fini(f);
	free(f);
}

static void test_aborted_record_retired_after_last_advance_frees_head(void **state)
{
	(void)state;
	held_head_case(false); /* retired before the wait: lane_ready() sees it */
	held_head_case(true);  /* retires during the wait: the stall poll sees it */
}

/*
 * The late tail helper (fixed in the commit after the first one, found by
 * the 4 x 100k test about one run in seven), made deterministic: producer P
 * stops right after its claim (spotq.after_claim), producer Q comes to help
 * it and stops inside orbit__spotq_help_tail() before its resv CAS
 * (spotq.help_before_resv). P resumes and finishes; the lane runs on until
 * the slot holds a later record; then Q resumes. Its stale resv write must
 * not land: every record stays whole and the bytes all come back.
 */
static void test_late_tail_helper_writes_nothing(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct orbit_spotq_options o = base_opts();
	orbit_spotq_host_t *h;
	bool stopped = false;
	int bad = 0;
	uint32_t gen;

	(void)state;
	o.app_items = 4;
	o.app_bytes = 4096;
	fx_init(f, o, true);
	uint32_t row = (uint32_t)orbit__members_self(f->m, &gen);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	pid_t p = fork();
	if (p == 0)
		_exit(crashing_producer(f->fleet, &f->o, "spotq.after_claim", 1, ORBIT_CRASH_STOP,
					1, 100, -1) == 32
			  ? 0
			  : 1);
	assert_int_equal(wait_stopped_or_dead(p, &stopped), p);
	assert_true(stopped);
	pid_t qp = fork();
	if (qp == 0)
		_exit(crashing_producer(f->fleet, &f->o, "spotq.help_before_resv", 1,
					ORBIT_CRASH_STOP, 1, 200, -1) == 32
			  ? 0
			  : 1);
	assert_int_equal(wait_stopped_or_dead(qp, &stopped), qp);
	assert_true(stopped); /* Q stopped while helping P's claim */
	kill(p, SIGCONT);
	int st = orbit_test_wait(p, 10000);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0); /* P's record was accepted */
	assert_int_equal(drain(f, h, 0, &bad), 1);
	/* run the lane on past that slot: it now holds a later record */
	for (uint64_t i = 1; i <= 3; i++) {
		assert_int_equal(submit_seq(f->p, row, i, 40, NULL), 0);
		assert_int_equal(drain(f, h, 0, &bad), 1);
	}
	assert_int_equal(submit_seq(f->p, row, 4, 40, NULL), 0); /* pos 4: P's old slot, untaken */
	kill(qp, SIGCONT);
	st = orbit_test_wait(qp, 10000);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0); /* Q went on and its record was accepted */
	check_ok(f->q);
	assert_int_equal(drain(f, h, 0, &bad), 2);
	assert_int_equal(bad, 0);
	struct orbit_spotq_counters c = counters(f->q);
	assert_int_equal(c.corrupt[0], 0);
	assert_int_equal(c.depth[0], 0);
	assert_int_equal(c.bytes[0], 0);
	orbit__spotq_host_close(h);
	fx_fini(f);
	free(f);
}

/* ---- hosts killed and paused ---- */

/*
 * A host child for @epoch: take @take records, complete the first @complete,
 * then (mode 0) report and sleep mid-"handler" until killed, (mode 1) hit an
 * armed crash point, (mode 2) stop itself and, when continued, try to take,
 * complete and advance and report what happened.
 */
struct host_report {
	int taken, completed;
	uint32_t pos[16];
	int rc_take, rc_complete, rc_advance;
	int changed; /* counters or checker changed across the fenced calls */
};

static int host_child(const char *fleet, const struct orbit_spotq_options *o, uint64_t epoch,
		      int take, int complete, int mode, struct host_report *rep)
{
	static struct orbit_spotq_rec recs[16];
	static uint8_t buf[1 << 16];
	struct child c = { 0 };
	orbit_spotq_host_t *h;
	int r = child_host(&c, fleet, o, epoch, &h);

	if (r)
		return r;
	if (mode == 1)
		orbit__crashpoint_arm("spotq.after_complete", (uint64_t)complete, ORBIT_CRASH_KILL);
	if (mode == 3 || mode == 4)
		orbit__crashpoint_arm("spotq.after_freed", 1,
				      mode == 3 ? ORBIT_CRASH_KILL : ORBIT_CRASH_STOP);
	rep->taken = orbit__spotq_take(h, 0, recs, (unsigned)take, buf, sizeof(buf));
	for (int i = 0; i < rep->taken; i++)
		rep->pos[i] = recs[i].pos;
	for (int i = 0; i < complete; i++) {
		int rc = orbit__spotq_complete(h, 0, recs[i].pos);
		if (mode == 4) {
			rep->rc_complete = rc; /* resumed after a takeover, mid head advance */
			return 0;
		}
		if (rc)
			return 41;
		rep->completed++;
	}
	if (mode == 0) {
		for (;;)
			pause(); /* mid-handler */
	}
	if (mode == 2) {
		struct orbit_spotq_counters a, b;
		char why[128];
		raise(SIGSTOP);
		/* resumed after a newer host took over */
		orbit__spotq_counters(c.q, &a);
		rep->rc_take = orbit__spotq_take(h, 0, recs, 16, buf, sizeof(buf));
		rep->rc_complete = orbit__spotq_complete(h, 0, rep->pos[complete]);
		rep->rc_advance = orbit__spotq_advance(h, 0);
		orbit__spotq_counters(c.q, &b);
		rep->changed = memcmp(&a, &b, sizeof(a)) != 0 ||
			       orbit__spotq_check(c.q, why, sizeof(why));
		return 0;
	}
	return 42;
}

/*
 * Issue 11 "The consumer SIGKILLed between take and complete, and
 * mid-handler: a new consumer with a higher epoch gets every uncompleted
 * record again flagged redelivered, and the old epoch's writes are refused".
 */
static void test_host_sigkilled_new_epoch_redelivers_uncompleted(void **state)
{
	(void)state;
	for (int mode = 0; mode < 2; mode++) {
		struct fx *f = calloc(1, sizeof(*f));
		struct host_report *rep = mmap(NULL, sizeof(*rep), PROT_READ | PROT_WRITE,
					       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		orbit_spotq_host_t *h;
		bool stopped = true;
		int bad = 0, st;
		uint32_t gen;

		memset(rep, 0, sizeof(*rep));
		fx_init(f, base_opts(), true);
		uint32_t row = (uint32_t)orbit__members_self(f->m, &gen);
		for (uint64_t i = 1; i <= 8; i++)
			assert_int_equal(submit_seq(f->p, row, i, 50, NULL), 0);
		pid_t pid = fork();
		if (pid == 0)
			_exit(host_child(f->fleet, &f->o, 10, 5, mode ? 3 : 2, mode, rep));
		if (mode == 0) {
			for (int i = 0; i < 5000 && rep->completed < 2; i++)
				usleep(1000);
			usleep(10000);
			kill(pid, SIGKILL); /* mid-handler */
		}
		assert_int_equal(wait_stopped_or_dead(pid, &stopped), pid);
		assert_false(stopped);
		int done = mode ? 3 : 2; /* mode 1: killed right after the 3rd complete's ack */
		assert_int_equal(rep->taken, 5);
		/* the old epoch cannot come back */
		assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 10), -ORBIT_EFENCED);
		assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 11), 0);
		int n = orbit__spotq_take(h, 0, f->recs, 256, f->buf, sizeof(f->buf));
		assert_int_equal(n, 8 - done);
		for (int i = 0; i < n; i++) {
			assert_int_equal(f->recs[i].producer_seq, (uint64_t)(done + 1 + i));
			assert_int_equal(f->recs[i].redelivered, done + 1 + i <= 5);
			assert_int_equal(f->recs[i].host_epoch, 11);
			assert_true(payload_ok(&f->recs[i]));
			assert_int_equal(orbit__spotq_complete(h, 0, f->recs[i].pos), 0);
		}
		assert_int_equal(drain(f, h, 0, &bad), 0);
		struct orbit_spotq_counters c = counters(f->q);
		assert_int_equal(c.redelivered[0], 5 - done);
		assert_int_equal(c.depth[0], 0);
		assert_int_equal(c.epoch, 11);
		check_ok(f->q);
		st = orbit_test_wait(pid, 100);
		(void)st;
		orbit__spotq_host_close(h);
		fx_fini(f);
		free(f);
		munmap(rep, sizeof(*rep));
	}
}

/* Issue 11 "a consumer paused (SIGSTOP) across a takeover and resumed is fenced off". */
static void test_host_sigstopped_across_takeover_fenced_off(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct host_report *rep = mmap(NULL, sizeof(*rep), PROT_READ | PROT_WRITE,
				       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	orbit_spotq_host_t *h;
	bool stopped = false;
	int bad = 0;
	uint32_t gen;

	(void)state;
	memset(rep, 0, sizeof(*rep));
	fx_init(f, base_opts(), true);
	uint32_t row = (uint32_t)orbit__members_self(f->m, &gen);
	for (uint64_t i = 1; i <= 6; i++)
		assert_int_equal(submit_seq(f->p, row, i, 70, NULL), 0);
	pid_t pid = fork();
	if (pid == 0)
		_exit(host_child(f->fleet, &f->o, 20, 4, 1, 2, rep));
	assert_int_equal(wait_stopped_or_dead(pid, &stopped), pid);
	assert_true(stopped);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 21), 0);
	assert_int_equal(drain(f, h, 0, &bad), 5);
	assert_int_equal(counters(f->q).redelivered[0], 3);
	/* more work the new host has not taken yet: the old one must not take it */
	assert_int_equal(submit_seq(f->p, row, 7, 70, NULL), 0);
	kill(pid, SIGCONT);
	int st = orbit_test_wait(pid, 10000);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(rep->rc_take, -ORBIT_EFENCED);
	assert_int_equal(rep->rc_complete, -ORBIT_EFENCED);
	assert_int_equal(rep->rc_advance, -ORBIT_EFENCED);
	assert_int_equal(rep->changed, 0);
	int n = orbit__spotq_take(h, 0, f->recs, 8, f->buf, sizeof(f->buf));
	assert_int_equal(n, 1);
	assert_int_equal(f->recs[0].producer_seq, 7);
	assert_false(f->recs[0].redelivered);
	assert_int_equal(orbit__spotq_complete(h, 0, f->recs[0].pos), 0);
	assert_int_equal(bad, 0);
	check_ok(f->q);
	orbit__spotq_host_close(h);
	fx_fini(f);
	free(f);
	munmap(rep, sizeof(*rep));
}

/*
 * Issue 11 "return reservations only after completion" across a host crash
 * between the fenced DONE -> FREED step and its head CAS: killed, the next
 * host finishes the head move; stopped across a takeover and resumed, its
 * late head CAS changes nothing the new host did not (the checker agrees).
 */
static void test_host_killed_or_stopped_mid_head_advance(void **state)
{
	(void)state;
	for (int mode = 3; mode <= 4; mode++) {
		struct fx *f = calloc(1, sizeof(*f));
		struct host_report *rep = mmap(NULL, sizeof(*rep), PROT_READ | PROT_WRITE,
					       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		orbit_spotq_host_t *h;
		bool stopped = false;
		int bad = 0;
		uint32_t gen;

		memset(rep, 0, sizeof(*rep));
		fx_init(f, base_opts(), true);
		uint32_t row = (uint32_t)orbit__members_self(f->m, &gen);
		for (uint64_t i = 1; i <= 6; i++)
			assert_int_equal(submit_seq(f->p, row, i, 60, NULL), 0);
		pid_t pid = fork();
		if (pid == 0)
			_exit(host_child(f->fleet, &f->o, 30, 3, 1, mode, rep));
		assert_int_equal(wait_stopped_or_dead(pid, &stopped), pid);
		assert_int_equal(stopped, mode == 4);
		assert_int_equal(counters(f->q).depth[0], 6); /* FREED, head not moved yet */
		assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 31), 0);
		/* the takeover finished the head move over the first record */
		assert_int_equal(counters(f->q).depth[0], 5);
		assert_int_equal(counters(f->q).bytes[0], 300);
		assert_int_equal(drain(f, h, 0, &bad), 5);
		assert_int_equal(counters(f->q).redelivered[0], 2);
		if (mode == 4) {
			struct orbit_spotq_counters before = counters(f->q), after;
			kill(pid, SIGCONT);
			int st = orbit_test_wait(pid, 10000);
			assert_true(WIFEXITED(st));
			assert_int_equal(WEXITSTATUS(st), 0);
			/* its complete took effect before the takeover (not redelivered): 0 */
			assert_int_equal(rep->rc_complete, 0);
			after = counters(f->q);
			assert_memory_equal(&before, &after,
					    sizeof(before)); /* late head CAS: no-op */
		}
		struct orbit_spotq_counters c = counters(f->q);
		assert_int_equal(c.depth[0], 0);
		assert_int_equal(c.bytes[0], 0);
		assert_int_equal(c.corrupt[0], 0);
		assert_int_equal(bad, 0);
		check_ok(f->q);
		/* the lane still works */
		assert_int_equal(submit_seq(f->p, row, 7, 60, NULL), 0);
		assert_int_equal(drain(f, h, 0, &bad), 1);
		orbit__spotq_host_close(h);
		fx_fini(f);
		free(f);
		munmap(rep, sizeof(*rep));
	}
}

/* ---- the host's doorbell sleep: no lost wake ---- */

struct wake_verdict {
	_Atomic uint64_t taken;			 /* records the host took and completed */
	_Atomic uint64_t woken, ready, timeouts; /* host_wait_seq answers: 0, 1, -ETIMEDOUT */
	_Atomic uint32_t host_bit;		 /* the host's wake class */
	_Atomic uint64_t work, work_done; /* a wake source beside the lane (a worker's kick) */
	_Atomic int host_ready, done;
};

#define WAKE_HOST_TIMEOUT_NS 5000000000ll /* a lost wake sleeps this long */
#define WAKE_STALL_NS 2000000000ull	  /* the bound on one record's wait */

/*
 * The host of the wake test: the loop a host thread runs (agent/spot_host.c):
 * the seq first, then its wake sources (done, the lane), then
 * host_wait_seq() with that seq.
 */
static int wake_host_main(const char *fleet, const struct orbit_spotq_options *o,
			  struct wake_verdict *v)
{
	static struct orbit_spotq_rec recs[16];
	static uint8_t buf[1 << 16];
	struct child c = { 0 };
	orbit_spotq_host_t *h;
	uint32_t gen, bit;
	uint64_t rnd = 42;
	int r = child_host(&c, fleet, o, 1, &h);

	if (r)
		return r;
	bit = orbit__doorbell_bit((uint32_t)orbit__members_self(c.m, &gen));
	atomic_store(&v->host_bit, bit);
	atomic_store(&v->host_ready, 1);
	for (;;) {
		uint32_t seen = orbit__spotq_host_seq(h);
		int n;

		if (atomic_load(&v->done))
			return 0;
		uint64_t w = atomic_load(&v->work);
		if (w != atomic_load(&v->work_done)) {
			atomic_store(&v->work_done,
				     w); /* what a host does with a finished handler */
			continue;
		}
		n = orbit__spotq_take(h, ORBIT_SPOTQ_APP, recs, 16, buf, sizeof(buf));
		if (n < 0)
			return 14;
		for (int i = 0; i < n; i++) {
			if (orbit__spotq_complete(h, ORBIT_SPOTQ_APP, recs[i].pos))
				return 16;
			atomic_fetch_add(&v->taken, 1);
		}
		if (n > 0)
			continue;
		/* other work between the empty take and the sleep (a host completes,
		 * renews): 0-31 us, so that submissions land inside that window too */
		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		for (uint64_t t = orbit_test_now_ns() + (rnd >> 59) * 1000;
		     orbit_test_now_ns() < t;)
			;
		r = orbit__spotq_host_wait_seq(h, seen, 1u << ORBIT_SPOTQ_APP, WAKE_HOST_TIMEOUT_NS,
					       bit);
		if (r == 1)
			atomic_fetch_add(&v->ready, 1);
		else if (r == 0)
			atomic_fetch_add(&v->woken, 1);
		else if (r == -ETIMEDOUT)
			atomic_fetch_add(&v->timeouts, 1);
		else if (r != -EINTR)
			return 15;
	}
}

/*
 * Issue 11 item "wake-ups": 100,000 single submissions (1,000,000 in
 * check-long), each waited for until the host took it, so the host goes
 * back to its doorbell sleep between any two. Every other one is
 * submitted only once the host has announced itself in the sleeping word
 * (the window between its announce and its futex wait), the rest at once,
 * while the host spends 0-31 us between its empty take and its wait (the
 * window between its look at the lane and its announce). Every tenth is
 * no record but a kick of the doorbell after a flag the host checks after
 * reading its seq (what a worker does with a finished handler): that wait
 * must end on the caller's seq, the lane re-check cannot see it. No wake
 * is lost:
 * the host never sleeps into its 5 s timeout and no record waits 2 s.
 */
static void test_host_wait_seq_single_submissions_no_lost_wake(void **state)
{
	struct fx f = { 0 };
	uint64_t n = orbit_test_long() ? 1000000 : 100000, max_ns = 0, t0, wakes0;
	struct wake_verdict *v = mmap(NULL, sizeof(*v), PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct orbit_doorbell *db;
	uint32_t row, gen, bit;
	uint64_t stalled_at = 0;
	uint32_t stall_bit = 0;
	pid_t host;
	int st;

	(void)state;
	assert_true(v != MAP_FAILED);
	memset(v, 0, sizeof(*v));
	fx_init(&f, base_opts(), true);
	row = (uint32_t)orbit__members_self(f.m, &gen);
	db = &((struct orbit_spotq_shm *)orbit__seg_body(orbit__spotq_seg(f.q)))->rec_db;
	host = fork();
	if (host == 0)
		_exit(wake_host_main(f.fleet, &f.o, v));
	while (!atomic_load(&v->host_ready))
		usleep(1000);
	bit = atomic_load(&v->host_bit);
	wakes0 = orbit__doorbell_wakes(db);
	t0 = orbit_test_now_ns();
	for (uint64_t i = 1, r = 0; i <= n && !stalled_at; i++) {
		uint64_t seq, t;
		bool kick = i % 10 == 5;

		/* even: only once the host announced (until its bit shows, at most 1 s) */
		for (t = orbit_test_now_ns(); i % 2 == 0 && !(atomic_load(&db->sleeping) & bit) &&
					      orbit_test_now_ns() - t < 1000000000ull;)
			sched_yield();
		if (kick) {
			/* a wake source the lane re-check cannot see: only the seq can */
			atomic_store(&v->work, i);
			orbit__spotq_kick(f.q);
		} else {
			assert_int_equal(submit_seq(f.p, row, ++r, 8, &seq), 0);
		}
		t = orbit_test_now_ns();
		while (kick ? atomic_load(&v->work_done) != i : atomic_load(&v->taken) < r) {
			if (orbit_test_now_ns() - t > WAKE_STALL_NS) {
				stalled_at = i;
				/* bit clear while the host sleeps: no one will ring it */
				stall_bit = atomic_load(&db->sleeping) & bit;
				break;
			}
			sched_yield();
		}
		t = orbit_test_now_ns() - t;
		max_ns = t > max_ns ? t : max_ns;
	}
	atomic_store(&v->done, 1);
	orbit__spotq_kick(f.q);
	st = orbit_test_wait(host, 30000);
	print_message(
	    "%llu single submissions and kicks in %.2f s: slowest taken after %.2f ms; host "
	    "woken %llu, ready without sleeping %llu, timed out %llu; %llu FUTEX_WAKEs\n",
	    (unsigned long long)n, (double)(orbit_test_now_ns() - t0) / 1e9, (double)max_ns / 1e6,
	    (unsigned long long)atomic_load(&v->woken), (unsigned long long)atomic_load(&v->ready),
	    (unsigned long long)atomic_load(&v->timeouts),
	    (unsigned long long)(orbit__doorbell_wakes(db) - wakes0));
	if (stalled_at)
		fail_msg("record %llu waited past %llu ms: a lost wake (host's bit %s in the "
			 "sleeping word: %s)",
			 (unsigned long long)stalled_at, WAKE_STALL_NS / 1000000,
			 stall_bit ? "set" : "clear",
			 stall_bit ? "a ring would wake it: starved, or woken and not run"
				   : "no producer rings it");
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(atomic_load(&v->taken), n - (n + 5) / 10);
	assert_int_equal(atomic_load(&v->timeouts), 0); /* it never slept into its timeout */
	assert_true(max_ns < WAKE_STALL_NS);
	/* the host did sleep between events: a wake per event, roughly */
	assert_true(atomic_load(&v->woken) >= n / 4);
	check_ok(f.q);
	fx_fini(&f);
	munmap(v, sizeof(*v));
}

/*
 * Issue 11 "wake-ups", the stale ring (found by the wake test failing at
 * load ~15): a producer rings for record A and is preempted after its seq
 * bump (doorbell.after_bump), before it reads the sleeping word. The host,
 * woken meanwhile, takes A, reads the new seq, announces its class again
 * and is preempted just before FUTEX_WAIT (doorbell.before_futex). The
 * stale ringer resumes, sees the host's new bit, clears it and wakes
 * nobody; the host then sleeps with its bit clear, so the producer's next
 * record B rings nothing. B must still be taken within 1 s (the host's
 * wait is 5 s: a lost wake shows as B waiting for that timeout).
 */
static int stale_host_main(const char *fleet, const struct orbit_spotq_options *o,
			   struct wake_verdict *v)
{
	static struct orbit_spotq_rec recs[4];
	static uint8_t buf[4096];
	struct child c = { 0 };
	orbit_spotq_host_t *h;
	uint32_t gen, bit;
	int r = child_host(&c, fleet, o, 1, &h);

	if (r)
		return r;
	bit = orbit__doorbell_bit((uint32_t)orbit__members_self(c.m, &gen));
	atomic_store(&v->host_bit, bit);
	/* its 1st futex sleep runs, the 2nd (after taking A) stops before FUTEX_WAIT */
	orbit__crashpoint_arm("doorbell.before_futex", 2, ORBIT_CRASH_STOP);
	atomic_store(&v->host_ready, 1);
	while (atomic_load(&v->taken) < 2) {
		uint32_t seen = orbit__spotq_host_seq(h);
		int n = orbit__spotq_take(h, ORBIT_SPOTQ_APP, recs, 4, buf, sizeof(buf));
		if (n < 0)
			return 14;
		for (int i = 0; i < n; i++) {
			if (orbit__spotq_complete(h, ORBIT_SPOTQ_APP, recs[i].pos))
				return 16;
			atomic_fetch_add(&v->taken, 1);
		}
		if (n > 0)
			continue;
		r = orbit__spotq_host_wait_seq(h, seen, 1u << ORBIT_SPOTQ_APP, WAKE_HOST_TIMEOUT_NS,
					       bit);
		if (r == -ETIMEDOUT)
			atomic_fetch_add(&v->timeouts, 1);
		else if (r < 0 && r != -EINTR)
			return 15;
	}
	return 0;
}

static pid_t wait_stopped(pid_t pid)
{
	bool stopped = false;

	assert_int_equal(wait_stopped_or_dead(pid, &stopped), pid);
	assert_true(stopped);
	return pid;
}

static void test_stale_ring_clearing_a_newer_announce_loses_no_wake(void **state)
{
	struct fx f = { 0 };
	struct wake_verdict *v = mmap(NULL, sizeof(*v), PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct orbit_doorbell *db;
	uint32_t row, gen, bit;
	pid_t host, ringer;
	int st;

	(void)state;
	assert_true(v != MAP_FAILED);
	memset(v, 0, sizeof(*v));
	fx_init(&f, base_opts(), true);
	row = (uint32_t)orbit__members_self(f.m, &gen);
	db = &((struct orbit_spotq_shm *)orbit__seg_body(orbit__spotq_seg(f.q)))->rec_db;
	host = fork();
	if (host == 0)
		_exit(stale_host_main(f.fleet, &f.o, v));
	while (!atomic_load(&v->host_ready))
		usleep(1000);
	bit = atomic_load(&v->host_bit);
	for (int i = 0; i < 5000 && !(atomic_load(&db->sleeping) & bit); i++)
		usleep(1000);
	assert_true(atomic_load(&db->sleeping) & bit); /* asleep in its 1st wait */
	ringer = fork();
	if (ringer == 0) {
		/* record A: commit, see the host's bit, bump seq, stop before DB-D2a */
		struct child c = { 0 };
		uint32_t g, rrow;
		if (child_open(&c, f.fleet, &f.o, true))
			_exit(10);
		rrow = (uint32_t)orbit__members_self(c.m, &g);
		orbit__crashpoint_arm("doorbell.after_bump", 1, ORBIT_CRASH_STOP);
		_exit(submit_seq(c.p, rrow, 1, 8, NULL) ? 11 : 0);
	}
	wait_stopped(ringer);
	orbit__spotq_kick(f.q); /* wakes the host (the ringer's wake never came) */
	wait_stopped(host);	/* took A, announced, stopped before FUTEX_WAIT */
	assert_int_equal(atomic_load(&v->taken), 1);
	kill(ringer, SIGCONT); /* the stale ring: DB-D2a/DB-D2 on the new announce */
	st = orbit_test_wait(ringer, 10000);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(submit_seq(f.p, row, 1, 8, NULL), 0); /* record B */
	uint64_t t0 = orbit_test_now_ns();
	kill(host, SIGCONT); /* into FUTEX_WAIT with seq == its seen */
	while (atomic_load(&v->taken) < 2 && orbit_test_now_ns() - t0 < 1000000000ull)
		usleep(1000);
	uint64_t waited = orbit_test_now_ns() - t0;
	if (atomic_load(&v->taken) < 2)
		fail_msg("record B not taken %.0f ms after the host resumed: a lost wake "
			 "(host bit %s in the sleeping word)",
			 waited / 1e6, (atomic_load(&db->sleeping) & bit) ? "set" : "clear");
	st = orbit_test_wait(host, 10000);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(atomic_load(&v->timeouts), 0);
	check_ok(f.q);
	fx_fini(&f);
	munmap(v, sizeof(*v));
}

/* The coarse clock's tick (its resolution), in ns. */
static uint64_t coarse_tick_ns(void)
{
	struct timespec ts;

	assert_int_equal(clock_getres(CLOCK_MONOTONIC_COARSE, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t coarse_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Issue 11 "Watch" (submit-to-run latency) and doc/spot-queues.md
 * "submit_ns": a producer stamps its record exactly (CLOCK_MONOTONIC,
 * submit_exact) on its first record in each coarse tick and on at least
 * every 16th; the others carry CLOCK_MONOTONIC_COARSE, never later than
 * the submit, earlier by the time since the kernel's last tick. A producer whose records are a
 * tick or more apart has every record exact.
 */
static void test_submit_ns_exact_on_a_sample_coarse_between(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	uint64_t tick = coarse_tick_ns(), before[200], after[200], exact = 0, total = 0;
	orbit_spotq_host_t *h;
	uint32_t gen, run = 0;

	(void)state;
	fx_init(f, base_opts(), true);
	uint32_t row = (uint32_t)orbit__members_self(f->m, &gen);
	assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
	for (uint64_t round = 0; round < 8; round++) {
		for (uint64_t i = 0; i < 200; i++) {
			before[i] = orbit_test_now_ns();
			assert_int_equal(submit_seq(f->p, row, round * 200 + i + 1, 16, NULL), 0);
			after[i] = orbit_test_now_ns();
		}
		int n = orbit__spotq_take(h, 0, f->recs, 256, f->buf, sizeof(f->buf));
		assert_int_equal(n, 200);
		for (int i = 0; i < n; i++) {
			const struct orbit_spotq_rec *r = &f->recs[i];

			assert_true(r->submit_ns <= after[i] + 1);
			if (r->submit_exact) {
				assert_true(r->submit_ns >= before[i]);
				exact++;
				run = 0;
			} else {
				/* the kernel's last tick: one tick earlier, more when a loaded
				 * guest's ticks come late (8.5 ms seen at a 4 ms tick) */
				assert_true(r->submit_ns + 100 * tick >= before[i]);
				assert_true(++run < 16); /* at least every 16th is exact */
			}
			if (round == 0 && i == 0)
				assert_true(r->submit_exact); /* a producer's first record */
			assert_int_equal(orbit__spotq_complete(h, 0, r->pos), 0);
		}
		total += (uint64_t)n;
	}
	/* 1,600 records in well under 800 ticks: a sample, not every record */
	print_message("%" PRIu64 " of %" PRIu64 " stamps exact (tick %" PRIu64 " ns)\n", exact,
		      total, tick);
	assert_true(exact >= total / 16);
	assert_true(exact < total / 2);
	/* records a tick apart: every one exact */
	for (uint64_t i = 0; i < 4; i++) {
		uint64_t c = coarse_now_ns();

		while (coarse_now_ns() == c)
			usleep(200);
		assert_int_equal(submit_seq(f->p, row, 1601 + i, 16, NULL), 0);
		assert_int_equal(orbit__spotq_take(h, 0, f->recs, 256, f->buf, sizeof(f->buf)), 1);
		assert_true(f->recs[0].submit_exact);
		assert_int_equal(orbit__spotq_complete(h, 0, f->recs[0].pos), 0);
	}
	check_ok(f->q);
	orbit__spotq_host_close(h);
	fx_fini(f);
	free(f);
}

/*
 * doc/spot-queues.md "The host's poll": a host thread allowed on one CPU
 * (sched_setaffinity) does not poll before it sleeps, on a machine with
 * more CPUs online as on a one-CPU machine; an unpinned host on a
 * machine with two or more CPUs gets the adaptive budget.
 */
static void test_host_pinned_to_one_cpu_does_not_poll(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	orbit_spotq_host_t *h;
	cpu_set_t set;
	bool fixed;

	(void)state;
	fx_init(f, base_opts(), false);
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	assert_int_equal(orbit__spotq_cpus_allowed(), CPU_COUNT(&set));
	if (CPU_COUNT(&set) >= 2) {
		assert_int_equal(orbit__spotq_host_takeover(&h, f->q, f->m, 1), 0);
		assert_true(orbit__spotq_host_poll_budget(h, &fixed) > 0);
		assert_false(fixed);
		orbit__spotq_host_close(h);
	} else {
		print_message("one CPU allowed: the unpinned half is not run\n");
	}
	pid_t pid = fork();
	if (pid == 0) {
		struct child c;
		cpu_set_t one;
		int cpu = 0;

		while (!CPU_ISSET(cpu, &set))
			cpu++;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			_exit(20);
		if (orbit__spotq_cpus_allowed() != 1)
			_exit(21);
		int r = child_host(&c, f->fleet, &f->o, 2, &h);
		if (r)
			_exit(r);
		uint64_t b = orbit__spotq_host_poll_budget(h, &fixed);
		_exit(b == 0 && fixed ? 0 : 22);
	}
	assert_int_equal(orbit_test_wait(pid, 10000), 0);
	fx_fini(f);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_4_producers_x_100k_no_loss_no_dup_order_kept),
		cmocka_unit_test(test_producer_sigkilled_at_crash_points_queue_moves_on),
		cmocka_unit_test(test_producer_sigstopped_mid_record_aborted_late_commit_refused),
		cmocka_unit_test(test_stopped_producer_late_stores_never_hit_a_later_record),
		cmocka_unit_test(test_late_tail_helper_writes_nothing),
		cmocka_unit_test(test_aborted_record_retired_after_last_advance_frees_head),
		cmocka_unit_test(test_host_sigkilled_new_epoch_redelivers_uncompleted),
		cmocka_unit_test(test_host_sigstopped_across_takeover_fenced_off),
		cmocka_unit_test(test_host_killed_or_stopped_mid_head_advance),
		cmocka_unit_test(test_host_wait_seq_single_submissions_no_lost_wake),
		cmocka_unit_test(test_stale_ring_clearing_a_newer_announce_loses_no_wake),
		cmocka_unit_test(test_submit_ns_exact_on_a_sample_coarse_between),
		cmocka_unit_test(test_host_pinned_to_one_cpu_does_not_poll),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
