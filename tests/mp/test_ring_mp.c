// SPDX-License-Identifier: MIT
/*
 * tests/mp/test_ring_mp.c: the transition ring across processes, issue 5
 * "Tests": observers in other processes see every transition or a lag
 * signal with 4 writer processes; a publisher SIGKILLed between frame and
 * table commit (the false edge is harmless); writer-lane reclaim after
 * SIGKILL; no lost wakeup across 100,000 transitions (check tier; the long
 * tier runs 1,000,000); no lost wakeup under the doorbell's asymmetric
 * fence and its fallbacks (stress, issue 12). Real fork and SIGKILL;
 * unique fleet per test.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "orbit_test.h"
#include <orbit/error.h>
#include "shm/crashpoint.h"
#include "shm/ring.h"

#define WRITERS 4
#define OBSERVERS 2

struct shared {
	_Atomic int ready;
	_Atomic int go;
	_Atomic uint64_t seen[OBSERVERS];   /* frames read */
	_Atomic uint64_t lagged[OBSERVERS]; /* lag signals */
	_Atomic uint64_t gaps[OBSERVERS];   /* transitions missed WITHOUT a lag signal */
	struct orbit_doorbell ack;	    /* ping-pong acknowledgements */
	/* the simulated authoritative table entry (seqlock) */
	_Atomic uint64_t tseq;
	uint64_t trevision;
	char towner[32];
};

struct fx {
	char fleet[64];
	struct orbit_ring_layout l;
	struct shared *sh;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	orbit_test_fleet(f->fleet, sizeof(f->fleet), "rmp");
	orbit__ring_layout_default(&f->l);
	f->l.lanes = 8;
	f->l.frames_per_lane = 256;
	f->l.frame_bytes = 256;
	f->sh = mmap(NULL, sizeof(*f->sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		     0);
	if (f->sh == MAP_FAILED)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	orbit__ring_unlink(f->fleet, &f->l);
	orbit__members_unlink(f->fleet);
	munmap(f->sh, sizeof(*f->sh));
	free(f);
	return 0;
}

static uint64_t per_writer(void)
{
	return orbit_test_long() ? 200000 : 20000;
}

static void tr_fill(struct orbit_transition *t, uint64_t token, const char *label,
		    const char *owner)
{
	*t = (struct orbit_transition){
		.type = ORBIT_TRANSITION_ACQUIRE,
		.fencing_token = token,
		.state_revision = token,
		.deadline_ns = orbit_test_now_ns() + 1000000000ull,
		.ns = "mp",
		.ns_len = 2,
		.label = label,
		.label_len = (uint32_t)strlen(label),
		.owner = owner,
		.owner_len = (uint32_t)strlen(owner),
	};
}

static void spin_until(_Atomic int *w, int v)
{
	while (atomic_load(w) < v)
		usleep(100);
}

static int writer_main(struct fx *f, int id)
{
	orbit_members_t *m;
	orbit_ring_t *ring;
	struct orbit_transition t;
	char label[8] = { 'w', (char)('0' + id), 0 };
	int lane;

	if (orbit__members_open(&m, f->fleet, 0, NULL) < 0 || orbit__members_join(m, label) < 0)
		return 10;
	if (orbit__ring_open(&ring, f->fleet, &f->l, NULL) < 0)
		return 11;
	lane = orbit__ring_lane_claim(ring, m);
	if (lane < 0)
		return 12;
	atomic_fetch_add(&f->sh->ready, 1);
	spin_until(&f->sh->go, 1);
	for (uint64_t k = 0; k < per_writer(); k++) {
		tr_fill(&t, k, label, "owner");
		if (orbit__ring_publish(ring, (uint32_t)lane, &t) != 0)
			return 13;
		if ((k & 1023) == 0)
			sched_yield(); /* let observers fall asleep now and then */
	}
	orbit__ring_close(ring);
	orbit__members_close(m);
	return 0;
}

static int observer_main(struct fx *f, int id)
{
	struct orbit_ring_event *ev = malloc(sizeof(*ev));
	uint64_t expect[ORBIT_RING_MAX_LANES] = { 0 };
	bool lag[ORBIT_RING_MAX_LANES] = { false };
	int done_lanes = 0;
	orbit_ring_reader_t *r;
	orbit_ring_t *ring;
	uint64_t deadline;

	if (!ev || orbit__ring_open(&ring, f->fleet, &f->l, NULL) < 0)
		return 20;
	if (orbit__ring_reader_open(&r, ring) < 0)
		return 21;
	atomic_fetch_add(&f->sh->ready, 1);
	deadline = orbit_test_now_ns() + 60ull * 1000000000ull;
	while (done_lanes < WRITERS) {
		uint32_t seen = orbit__ring_reader_arm(r), lane = 0;
		int rc;

		while ((rc = orbit__ring_reader_next(r, ev, &lane)) != -EAGAIN) {
			if (rc == -ORBIT_ELAGGED) {
				atomic_fetch_add(&f->sh->lagged[id], 1);
				for (uint32_t i = 0; i < f->l.lanes; i++)
					if (lane == f->l.lanes || i == lane)
						lag[i] = true;
				continue;
			}
			if (rc < 0)
				return 22; /* corrupt: nobody writes garbage here */
			atomic_fetch_add(&f->sh->seen[id], 1);
			if (ev->fencing_token != expect[lane] &&
			    !(lag[lane] && ev->fencing_token > expect[lane]))
				atomic_fetch_add(&f->sh->gaps[id], 1);
			lag[lane] = false;
			expect[lane] = ev->fencing_token + 1;
			if (ev->fencing_token == per_writer() - 1)
				done_lanes++;
		}
		if (orbit_test_now_ns() > deadline)
			return 23;
		orbit__ring_reader_wait(r, seen, 200 * 1000 * 1000);
	}
	orbit__ring_reader_close(r);
	orbit__ring_close(ring);
	free(ev);
	return 0;
}

/* Issue 5 "Tests": observers in other processes see every transition or a lag signal, with 4 writer processes. */
static void test_observers_see_every_transition_or_lag_4_writers(void **state)
{
	struct fx *f = *state;
	pid_t pids[WRITERS + OBSERVERS];
	uint64_t total = 0;

	for (int i = 0; i < OBSERVERS; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			_exit(observer_main(f, i));
	}
	for (int i = 0; i < WRITERS; i++) {
		pids[OBSERVERS + i] = fork();
		if (pids[OBSERVERS + i] == 0)
			_exit(writer_main(f, i));
	}
	spin_until(&f->sh->ready, WRITERS + OBSERVERS);
	atomic_store(&f->sh->go, 1);
	for (int i = 0; i < WRITERS + OBSERVERS; i++) {
		int st = orbit_test_wait(pids[i], 90000);
		assert_true(st >= 0 && WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	for (int i = 0; i < OBSERVERS; i++) {
		assert_int_equal(atomic_load(&f->sh->gaps[i]), 0);
		assert_true(atomic_load(&f->sh->seen[i]) > 0);
		/* every frame was either read or covered by a lag signal */
		assert_true(atomic_load(&f->sh->seen[i]) == WRITERS * per_writer() ||
			    atomic_load(&f->sh->lagged[i]) > 0);
		total += atomic_load(&f->sh->seen[i]);
		print_message("observer %d: read %llu of %llu, %llu lag signals\n", i,
			      (unsigned long long)atomic_load(&f->sh->seen[i]),
			      (unsigned long long)(WRITERS * per_writer()),
			      (unsigned long long)atomic_load(&f->sh->lagged[i]));
	}
	assert_true(total > 0);
}

/* The simulated table commit: a seqlock'd entry (the lock's real commit follows the ring publish). */
static void table_commit(struct shared *sh, uint64_t rev, const char *owner)
{
	uint64_t s = atomic_load_explicit(&sh->tseq, memory_order_relaxed);

	atomic_store_explicit(&sh->tseq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	sh->trevision = rev;
	strncpy(sh->towner, owner, sizeof(sh->towner) - 1);
	atomic_store_explicit(&sh->tseq, s + 2, memory_order_release);
}

static bool table_read(struct shared *sh, uint64_t *rev, char *owner)
{
	uint64_t s1 = atomic_load_explicit(&sh->tseq, memory_order_acquire);

	if (s1 & 1)
		return false;
	*rev = sh->trevision;
	memcpy(owner, sh->towner, sizeof(sh->towner));
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&sh->tseq, memory_order_relaxed) == s1;
}

enum crash_at { CRASH_AFTER_PUBLISH, CRASH_AFTER_HEAD, CRASH_MID_FRAME };

static void crashing_publisher(struct fx *f, enum crash_at where)
{
	struct orbit_transition t;
	orbit_ring_t *ring;

	if (orbit__ring_open(&ring, f->fleet, &f->l, NULL) < 0)
		_exit(30);
	tr_fill(&t, f->sh->trevision + 1, "key", "crasher");
	if (where == CRASH_AFTER_HEAD)
		orbit__crashpoint_arm("ring.publish.after_head", 1, ORBIT_CRASH_KILL);
	if (where == CRASH_MID_FRAME)
		orbit__crashpoint_arm("ring.publish.mid_frame", 1, ORBIT_CRASH_KILL);
	orbit__ring_publish(ring, 0, &t);
	/* crash point: between the frame publish and the table commit */
	raise(SIGKILL);
	table_commit(f->sh, t.state_revision, "crasher"); /* never reached */
	_exit(31);
}

static void run_crash(struct fx *f, enum crash_at where)
{
	struct orbit_ring_event ev;
	orbit_ring_reader_t *r;
	orbit_ring_t *ring;
	char owner[32];
	uint64_t rev = 0;
	uint32_t seen, lane;
	pid_t pid;
	int st, rc;

	table_commit(f->sh, 41, "before");
	assert_int_equal(orbit__ring_open(&ring, f->fleet, &f->l, NULL), 0);
	assert_int_equal(orbit__ring_reader_open(&r, ring), 0);
	seen = orbit__ring_reader_arm(r);
	pid = fork();
	if (pid == 0)
		crashing_publisher(f, where);
	st = orbit_test_wait(pid, 10000);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	/* the doorbell rang unless the publisher died before ringing it; a bounded wait covers both */
	rc = orbit__ring_reader_wait(r, seen, 100 * 1000 * 1000);
	assert_true(rc == 0 || (where != CRASH_AFTER_PUBLISH && rc == -ETIMEDOUT));
	rc = orbit__ring_reader_next(r, &ev, &lane);
	if (where == CRASH_MID_FRAME) {
		/* a half-written frame is never visible: the head did not move */
		assert_int_equal(rc, -EAGAIN);
	} else {
		/* the false edge: a complete frame for a change the table never got */
		assert_int_equal(rc, 0);
		assert_int_equal(ev.state_revision, 42);
		assert_memory_equal(ev.bytes + ev.ns_len + ev.label_len, "crasher", 7);
	}
	/* the reader re-checks the authoritative table: nothing torn, nothing changed */
	assert_true(table_read(f->sh, &rev, owner));
	assert_int_equal(rev, 41);
	assert_string_equal(owner, "before");
	/* the lane goes on: the next publisher's frame is whole and readable */
	struct orbit_transition t;
	tr_fill(&t, 42, "key", "next");
	assert_int_equal(orbit__ring_publish(ring, 0, &t), 0);
	table_commit(f->sh, 42, "next");
	assert_int_equal(orbit__ring_reader_next(r, &ev, &lane), 0);
	assert_int_equal(ev.lane_pos, where == CRASH_MID_FRAME ? 0 : 1);
	assert_memory_equal(ev.bytes + ev.ns_len + ev.label_len, "next", 4);
	assert_int_equal(orbit__ring_reader_next(r, &ev, &lane), -EAGAIN);
	orbit__ring_reader_close(r);
	orbit__ring_close(ring);
}

/* Issue 5 "Tests": a publisher SIGKILLed between frame and table commit: the false edge is harmless. */
static void test_publisher_sigkilled_between_frame_and_table_commit(void **state)
{
	run_crash(*state, CRASH_AFTER_PUBLISH);
}

/* Issue 5: killed after the head store but before the doorbell: found by a bounded wait, still harmless. */
static void test_publisher_sigkilled_before_doorbell(void **state)
{
	run_crash(*state, CRASH_AFTER_HEAD);
}

/* Issue 5: killed mid-frame: readers never see the half-written frame; the next publisher rewrites it. */
static void test_publisher_sigkilled_mid_frame(void **state)
{
	run_crash(*state, CRASH_MID_FRAME);
}

/* Issue 5 "Tests": writer-lane reclaim after SIGKILL (liveness proved by the kernel). */
static void test_writer_lane_reclaim_after_sigkill(void **state)
{
	struct fx *f = *state;
	struct orbit_ring_counters c;
	struct orbit_ring_event ev;
	struct orbit_transition t;
	orbit_ring_reader_t *r;
	orbit_members_t *m;
	orbit_ring_t *ring;
	uint32_t lane;
	pid_t pid;
	int p[2], msg = -1;

	f->l.lanes = 1; /* one lane: the only way in is reclaiming the dead owner's */
	assert_int_equal(orbit__members_open(&m, f->fleet, 0, NULL), 0);
	assert_true(orbit__members_join(m, "survivor") >= 0);
	assert_int_equal(orbit__ring_open(&ring, f->fleet, &f->l, NULL), 0);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		orbit_members_t *cm;
		orbit_ring_t *cr;
		close(p[0]);
		if (orbit__members_open(&cm, f->fleet, 0, NULL) < 0 ||
		    orbit__members_join(cm, "doomed") < 0 ||
		    orbit__ring_open(&cr, f->fleet, &f->l, NULL) < 0)
			_exit(1);
		msg = orbit__ring_lane_claim(cr, cm);
		for (uint64_t k = 0; k < 3; k++) {
			tr_fill(&t, k, "c", "doomed");
			orbit__ring_publish(cr, (uint32_t)msg, &t);
		}
		if (write(p[1], &msg, sizeof(msg)) != sizeof(msg))
			_exit(2);
		for (;;)
			pause();
	}
	close(p[1]);
	assert_int_equal(read(p[0], &msg, sizeof(msg)), (ssize_t)sizeof(msg));
	close(p[0]);
	assert_int_equal(msg, 0);
	assert_int_equal(orbit__ring_lane_claim(ring, m), -ENOSPC); /* owner alive */
	assert_int_equal(orbit__ring_lanes_reclaim_dead(ring, m), 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(orbit__ring_lane_claim(ring, m), 0); /* proven dead: reclaimed */
	orbit__ring_counters(ring, &c);
	assert_int_equal(c.reclaims, 1);
	/* the head kept running: a reader rewound sees the dead owner's frames, then ours */
	assert_int_equal(orbit__ring_reader_open(&r, ring), 0);
	orbit__ring_reader_rewind(r);
	for (uint64_t k = 0; k < 3; k++) {
		assert_int_equal(orbit__ring_reader_next(r, &ev, &lane), 0);
		assert_int_equal(ev.fencing_token, k);
	}
	tr_fill(&t, 3, "c", "survivor");
	assert_int_equal(orbit__ring_publish(ring, 0, &t), 0);
	assert_int_equal(orbit__ring_reader_next(r, &ev, &lane), 0);
	assert_int_equal(ev.lane_pos, 3);
	assert_int_equal(ev.writer_pid, getpid());
	orbit__ring_reader_close(r);
	orbit__ring_close(ring);
	orbit__members_close(m);
}

static uint64_t pingpong_n(void)
{
	return orbit_test_long() ? 1000000 : 100000;
}

static int pingpong_waiter(struct fx *f)
{
	struct orbit_ring_event ev;
	orbit_ring_reader_t *r;
	orbit_ring_t *ring;
	uint64_t k = 0;

	if (orbit__ring_open(&ring, f->fleet, &f->l, NULL) < 0 ||
	    orbit__ring_reader_open(&r, ring) < 0)
		return 40;
	atomic_fetch_add(&f->sh->ready, 1);
	while (k < pingpong_n()) {
		uint32_t seen = orbit__ring_reader_arm(r), lane;
		int rc;
		bool got = false;

		while ((rc = orbit__ring_reader_next(r, &ev, &lane)) == 0) {
			if (ev.fencing_token != k)
				return 41;
			k++;
			got = true;
		}
		if (rc != -EAGAIN)
			return 42;
		if (got) {
			orbit__doorbell_ring(&f->sh->ack);
			continue;
		}
		rc = orbit__ring_reader_wait(r, seen, 2000ll * 1000 * 1000);
		if (rc == -ETIMEDOUT)
			return 43; /* a lost wakeup: the publisher waits for our ack forever */
	}
	return 0;
}

/* Issue 5 "Tests": no lost wakeup across 100,000 transitions (ping-pong: the waiter sleeps for each). */
static void test_no_lost_wakeup_100000_transitions(void **state)
{
	struct fx *f = *state;
	struct orbit_ring_counters c;
	struct orbit_transition t;
	orbit_ring_t *ring;
	pid_t pid;
	int st;

	assert_int_equal(orbit__ring_open(&ring, f->fleet, &f->l, NULL), 0);
	pid = fork();
	if (pid == 0)
		_exit(pingpong_waiter(f));
	spin_until(&f->sh->ready, 1);
	uint64_t t0 = orbit_test_now_ns();
	for (uint64_t k = 0; k < pingpong_n(); k++) {
		uint32_t seen = orbit__doorbell_seq(&f->sh->ack);
		int rc;

		tr_fill(&t, k, "pp", "o");
		assert_int_equal(orbit__ring_publish(ring, 0, &t), 0);
		rc = orbit__doorbell_wait(&f->sh->ack, seen, 2000ll * 1000 * 1000);
		assert_int_equal(rc, 0); /* -ETIMEDOUT would be a lost wakeup on the ack side */
	}
	uint64_t dt = orbit_test_now_ns() - t0;
	st = orbit_test_wait(pid, 10000);
	assert_true(st >= 0 && WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	orbit__ring_counters(ring, &c);
	print_message("%llu transitions ping-ponged in %.2f s, %llu futex wakes by publishers\n",
		      (unsigned long long)pingpong_n(), (double)dt / 1e9,
		      (unsigned long long)c.doorbell_wakes);
	assert_true(c.doorbell_wakes > 0); /* the sleeping path was exercised */
	assert_true(c.doorbell_wakes <= pingpong_n());
	orbit__ring_close(ring);
}

/*
 * The stale clear (shm/doorbell.h, doc/ring.md "The stale clear"): a
 * publisher R rings for event A and is stopped right after its seq bump
 * (doorbell.after_bump). The waiter W, woken by another ring, handles A,
 * reads the new seq, announces its class and is stopped just before
 * FUTEX_WAIT (doorbell.before_futex, its 2nd sleep). R resumes, finds W's
 * new announce, clears it and wakes nobody. W then sleeps; event B, posted
 * only once W is back in futex(), must wake it at once (its own timeout is
 * 5 s). Without DB-D5 W sleeps with its bit clear and B rings nobody.
 */
struct stale {
	struct orbit_doorbell db;
	_Atomic uint64_t posted, got, timeouts;
};

static int stale_waiter(struct stale *s, uint32_t bit)
{
	orbit__crashpoint_arm("doorbell.before_futex", 2, ORBIT_CRASH_STOP);
	while (atomic_load(&s->got) < 2) {
		/* DB-A1 first, then the events: a post after this load moves seq */
		uint32_t seen = orbit__doorbell_seq(&s->db);
		int r;

		if (atomic_load(&s->posted) > atomic_load(&s->got)) {
			atomic_fetch_add(&s->got, 1);
			continue;
		}
		r = bit == ORBIT_DOORBELL_SHARED
			? orbit__doorbell_wait(&s->db, seen, 5000ll * 1000 * 1000)
			: orbit__doorbell_wait_class(&s->db, seen, 5000ll * 1000 * 1000, bit);
		if (r == -ETIMEDOUT)
			atomic_fetch_add(&s->timeouts, 1);
		else if (r < 0 && r != -EINTR)
			return 3;
	}
	return 0;
}

/* Until @pid sleeps in futex() with @bit announced; false after @ms. */
static bool wait_asleep_announced(pid_t pid, struct stale *s, uint32_t bit, int ms)
{
	uint64_t end = orbit_test_now_ns() + (uint64_t)ms * 1000000ull;

	while (!(orbit_test_pid_in_futex(pid) && (atomic_load(&s->db.sleeping) & bit)))
		if (orbit_test_now_ns() > end)
			return false;
		else
			usleep(200);
	return true;
}

static void wait_stopped_child(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
	assert_true(WIFSTOPPED(st));
}

static void stale_ring_case(uint32_t bit)
{
	struct stale *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			       -1, 0);
	pid_t w, r;
	int st;

	assert_true(s != MAP_FAILED);
	memset(s, 0, sizeof(*s));
	orbit__doorbell_init(&s->db);
	w = fork();
	if (w == 0) {
		orbit_test_child_default_signals();
		_exit(stale_waiter(s, bit));
	}
	assert_true(wait_asleep_announced(w, s, bit, 5000)); /* its 1st sleep */
	r = fork();
	if (r == 0) {
		/* event A: bump seq, stop before DB-D2a */
		orbit__crashpoint_arm("doorbell.after_bump", 1, ORBIT_CRASH_STOP);
		atomic_fetch_add(&s->posted, 1);
		orbit__doorbell_ring(&s->db);
		_exit(0);
	}
	wait_stopped_child(r);
	orbit__doorbell_ring(&s->db); /* wakes W for A (R's own wake never came) */
	wait_stopped_child(w);	      /* handled A, announced, stopped before FUTEX_WAIT */
	assert_int_equal(atomic_load(&s->got), 1);
	assert_true(atomic_load(&s->db.sleeping) & bit);
	kill(r, SIGCONT); /* the stale ring: DB-D2a/DB-D2 on W's new announce */
	st = orbit_test_wait(r, 10000);
	assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	kill(w, SIGCONT);
	/* W back in futex() with its class announced (never, when it sleeps with it clear) */
	bool announced = wait_asleep_announced(w, s, bit, 2000);
	uint64_t t0 = orbit_test_now_ns();
	atomic_fetch_add(&s->posted, 1); /* event B */
	orbit__doorbell_ring(&s->db);
	while (atomic_load(&s->got) < 2 && orbit_test_now_ns() - t0 < 1000000000ull)
		usleep(1000);
	if (atomic_load(&s->got) < 2)
		fail_msg("event B not seen %.0f ms after its ring: a lost wake (the waiter %s)",
			 (orbit_test_now_ns() - t0) / 1e6,
			 announced ? "had announced itself" : "slept with its class bit clear");
	st = orbit_test_wait(w, 10000);
	assert_true(st >= 0 && WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(atomic_load(&s->timeouts), 0);
	munmap(s, sizeof(*s));
}

/* A member row's class (an agent's ring doorbell, rung by orbit__doorbell_ring()). */
static void test_stale_ring_loses_no_wake_row_class(void **state)
{
	(void)state;
	stale_ring_case(orbit__doorbell_bit(3));
}

/* The shared class (plain readers, Spot producers waiting for room). */
static void test_stale_ring_loses_no_wake_shared_class(void **state)
{
	(void)state;
	stale_ring_case(ORBIT_DOORBELL_SHARED);
}

/*
 * No lost wake-up under the asymmetric fence (shm/doorbell.h "Asymmetric
 * fence"): a reader process R and a publisher process P race stress_n()
 * times, litmus style. For frame k, R arms, finds nothing, stores
 * armed = k + 1 and, after a pseudo-random 0-255 ns spin, waits; P spins
 * until it sees armed = k + 1 and, after its own 0-255 ns spin, publishes
 * frame k. Both start from the same store, so P's head store and load of
 * sleeping land right on R's announce and head re-check (the store-load
 * window the membarrier closes). R's wait is bounded: one that times out
 * while frame k is there slept past a publish by more than STRESS_BOUND_NS
 * (a lost wake), counted in lost; R stops after 3. Cases: the fleet's
 * ring in ASYM mode; in FULL mode (created by a process with membarrier
 * forced off: the fallback, locked add on both sides); an ASYM ring whose
 * publisher cannot register (it publishes with the locked add); one whose
 * reader cannot issue membarrier (it sleeps in slices).
 *
 * Each case also proves which path ran, not only that no wake was lost:
 *   - the doorbell's seq: a publish through the whole ring (FULL mode, or
 *     an unregistered publisher) bumps it once per frame (DB-D1) and once
 *     more per FUTEX_WAKE (DB-D5), so seq == frames + wakes; a registered
 *     ASYM publisher only bumps it on the way to a wake, seq == 2 x wakes;
 *   - the reader's sleep: after the race R waits STRESS_PROBE_NS on the
 *     now quiet ring and counts its voluntary context switches
 *     (getrusage(RUSAGE_THREAD)): a reader without membarrier sleeps in
 *     ORBIT_DOORBELL_SLICE_NS slices (about 20 switches), the others in
 *     one FUTEX_WAIT (one switch).
 */
#define STRESS_BOUND_NS (1000ll * 1000 * 1000)
#define STRESS_PROBE_NS (20ll * 1000 * 1000)
#define STRESS_KEY_BYTES 440 /* label and owner: 14 cache lines of frame stores ahead of the head */

struct stress {
	_Atomic uint64_t armed;	 /* R is about to wait for frame armed - 1 */
	_Atomic uint64_t got;	 /* frames R has read */
	_Atomic uint64_t lost;	 /* lost wakes: see stress_wait_lost() */
	_Atomic uint64_t stalls; /* waits past a frame by > STRESS_BOUND_NS that were not */
	_Atomic uint64_t sleeps;
	_Atomic int ready;
	_Atomic int done;	     /* R returned (P stops waiting for it) */
	_Atomic long probe_switches; /* R's voluntary switches in its STRESS_PROBE_NS wait */
	/* P, after each publish: frames published, when the last returned, whether it woke */
	_Atomic uint64_t pub_seq, pub_done_ns;
	_Atomic int pub_woke;
	char label[STRESS_KEY_BYTES + 1], owner[STRESS_KEY_BYTES + 1];
};

static uint64_t stress_n(void)
{
	return orbit_test_long() ? 200000 : 20000;
}

/* A spin of 0-@mask ns from the xorshift64 state @x. */
static void stress_jitter(uint64_t *x, uint64_t mask)
{
	uint64_t until;

	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	until = orbit_test_now_ns() + (*x & mask);
	while (orbit_test_now_ns() < until)
		;
}

/* Pin the caller to CPU @cpu when the machine has two: R and P then race on two cores. */
static void stress_pin(int cpu)
{
	cpu_set_t set;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)sched_setaffinity(0, sizeof(set), &set); /* best effort: the race still runs */
}

/*
 * Read every word of the slot frame @k will be written to (lane 0) and the
 * lane heads, so P's stores to them must take the lines back from our
 * cache: they queue in P's store buffer ahead of its head store.
 */
static void stress_touch(orbit_ring_t *ring, const struct orbit_ring_layout *l, uint64_t k)
{
	const struct orbit_ring_shm *rs = orbit__seg_at(orbit__ring_seg(ring),
							ORBIT_SEG_HEADER_BYTES, sizeof(*rs));
	uint64_t off = rs->frames_off + (k & (l->frames_per_lane - 1)) * l->frame_bytes;
	const _Atomic uint64_t *w = orbit__seg_at(orbit__ring_seg(ring), off, l->frame_bytes);
	uint64_t sum = 0;

	for (uint32_t i = 0; i < l->frame_bytes / 8; i++)
		sum += atomic_load_explicit(&w[i], memory_order_relaxed);
	__asm__ volatile("" : : "r"(sum));
}

/* The calling thread's run-queue wait so far (ns; /proc/thread-self/schedstat), or 0. */
static uint64_t stress_runq_ns(int fd)
{
	unsigned long long run, wait;
	char buf[128];
	ssize_t n = fd < 0 ? -1 : pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return 0;
	buf[n] = 0;
	return sscanf(buf, "%llu %llu", &run, &wait) == 2 ? wait : 0;
}

/*
 * R's wait for frame @k began at @t0 and returned at or after its
 * deadline, t0 + STRESS_BOUND_NS, with the frame there. A lost wake only
 * when P's publish of @k returned well before that deadline (half the
 * bound), R spent little of it on the run queue (@runq_ns under 20 ms:
 * it was not woken and left waiting for a CPU) and the publish issued no
 * FUTEX_WAKE (one that was issued reached a reader that was stopped or
 * stalled, e.g. by SIGSTOP or a VM/cgroup stall). Anything else is a
 * stall: counted and printed, never a failure.
 */
static bool stress_wait_lost(struct stress *s, uint64_t k, uint64_t t0, uint64_t runq_ns)
{
	uint64_t deadline = t0 + (uint64_t)STRESS_BOUND_NS, t = orbit_test_now_ns();

	/* The frame is visible before P's publish returns: wait for P's record of it */
	while (atomic_load_explicit(&s->pub_seq, memory_order_acquire) < k + 1)
		if (orbit_test_now_ns() - t > 2000000000ull)
			return true; /* P never finished the publish R read: count it */
	return atomic_load_explicit(&s->pub_done_ns, memory_order_relaxed) +
		       (uint64_t)STRESS_BOUND_NS / 2 <=
		   deadline &&
	       runq_ns < 20000000ull && !atomic_load_explicit(&s->pub_woke, memory_order_relaxed);
}

static int stress_reader(struct fx *f, struct stress *s, bool wait_off)
{
	int sfd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	struct orbit_ring_event ev;
	orbit_ring_reader_t *r;
	orbit_ring_t *ring;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	uint32_t lane;

	stress_pin(0);
	if (wait_off)
		orbit__doorbell_asym_force_off(1);
	if (orbit__ring_open(&ring, f->fleet, &f->l, NULL) < 0 ||
	    orbit__ring_reader_open(&r, ring) < 0)
		return 50;
	atomic_store(&s->ready, 1);
	for (uint64_t k = 0; k < stress_n() && atomic_load(&s->lost) < 3; k++) {
		uint64_t runq0 = stress_runq_ns(sfd); /* before the race: not in its window */
		uint32_t seen = orbit__ring_reader_arm(r);
		int rc = orbit__ring_reader_next(r, &ev, &lane);

		if (rc != -EAGAIN)
			return 51; /* frame k comes only after armed = k + 1 */
		stress_touch(ring, &f->l, k);
		atomic_store_explicit(&s->armed, k + 1, memory_order_release);
		stress_jitter(&x, 1023);
		for (;;) {
			uint64_t t0 = orbit_test_now_ns();

			orbit__ring_reader_wait(r, seen, STRESS_BOUND_NS);
			atomic_fetch_add_explicit(&s->sleeps, 1, memory_order_relaxed);
			seen = orbit__ring_reader_arm(r);
			if (orbit__ring_reader_next(r, &ev, &lane) == 0) {
				/* the wait ran to its bound (or past), yet the frame is here */
				if (orbit_test_now_ns() - t0 >= (uint64_t)STRESS_BOUND_NS)
					atomic_fetch_add(
					    stress_wait_lost(s, k, t0, stress_runq_ns(sfd) - runq0)
						? &s->lost
						: &s->stalls,
					    1);
				break;
			}
		}
		if (ev.fencing_token != k)
			return 53;
		atomic_store_explicit(&s->got, k + 1, memory_order_release);
	}
	if (atomic_load(&s->lost) == 0) { /* the probe: P publishes no more */
		struct rusage ru0, ru1;
		uint32_t seen = orbit__ring_reader_arm(r);

		if (getrusage(RUSAGE_THREAD, &ru0) < 0 ||
		    orbit__ring_reader_wait(r, seen, STRESS_PROBE_NS) != -ETIMEDOUT ||
		    getrusage(RUSAGE_THREAD, &ru1) < 0)
			return 54;
		atomic_store(&s->probe_switches, ru1.ru_nvcsw - ru0.ru_nvcsw);
	}
	orbit__ring_reader_close(r);
	orbit__ring_close(ring);
	if (sfd >= 0)
		close(sfd);
	return 0;
}

static int stress_publisher(struct fx *f, struct stress *s, bool pub_off)
{
	struct orbit_transition t;
	orbit_ring_t *ring;
	uint64_t x = 88172645463325252ull;

	stress_pin(1);
	if (pub_off)
		orbit__doorbell_asym_force_off(1);
	if (orbit__ring_open(&ring, f->fleet, &f->l, NULL) < 0)
		return 60;
	for (uint64_t k = 0; k < stress_n(); k++) {
		uint64_t spins = 0, w0;

		while (atomic_load_explicit(&s->armed, memory_order_acquire) < k + 1) {
			if (atomic_load(&s->lost) >= 3 || atomic_load(&s->done))
				goto out;
			if (++spins % (1u << 22) == 0)
				sched_yield(); /* R is off its CPU for long: let it run */
		}
		stress_jitter(&x, 255);
		tr_fill(&t, k, s->label, s->owner);
		w0 = orbit__doorbell_wakes(orbit__ring_doorbell(ring));
		if (orbit__ring_publish(ring, 0, &t) != 0)
			return 61;
		atomic_store_explicit(&s->pub_woke,
				      orbit__doorbell_wakes(orbit__ring_doorbell(ring)) != w0,
				      memory_order_relaxed);
		atomic_store_explicit(&s->pub_done_ns, orbit_test_now_ns(), memory_order_relaxed);
		/* Release: R's acquire in stress_wait_lost() sees the two stores above */
		atomic_store_explicit(&s->pub_seq, k + 1, memory_order_release);
	}
out:
	orbit__ring_close(ring);
	return 0;
}

static void stress_case(struct fx *f, bool full_ring, bool pub_off, bool wait_off)
{
	struct stress *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct orbit_ring_counters c;
	orbit_ring_t *ring;
	uint32_t seq;
	pid_t rd, pb;
	int st;

	assert_true(s != MAP_FAILED);
	/*
	 * Two 1 KB frames: R has just read the slot P rewrites, so each of P's
	 * frame stores needs the line back from R's cache, and the head store
	 * waits behind them in P's store buffer while P's load of sleeping
	 * goes ahead (the store-load reordering DB-M1 must close).
	 */
	f->l.frames_per_lane = 2;
	f->l.frame_bytes = 1024;
	memset(s->label, 'l', STRESS_KEY_BYTES);
	memset(s->owner, 'o', STRESS_KEY_BYTES);
	if (!full_ring && !orbit__doorbell_asym_ready()) {
		munmap(s, sizeof(*s));
		skip(); /* no membarrier here: only the FULL case can run */
	}
	orbit__doorbell_asym_force_off(full_ring); /* the creator decides the mode */
	assert_int_equal(orbit__ring_open(&ring, f->fleet, &f->l, NULL), 0);
	orbit__doorbell_asym_force_off(0);
	assert_int_equal(orbit__doorbell_mode(orbit__ring_doorbell(ring)),
			 full_ring ? ORBIT_DOORBELL_FULL : ORBIT_DOORBELL_ASYM);
	rd = fork();
	if (rd == 0) {
		int code = stress_reader(f, s, wait_off);

		atomic_store(&s->done, 1);
		_exit(code);
	}
	while (!atomic_load(&s->ready))
		usleep(100);
	pb = fork();
	if (pb == 0)
		_exit(stress_publisher(f, s, pub_off));
	st = orbit_test_wait(pb, 120000);
	assert_true(st >= 0 && WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	st = orbit_test_wait(rd, 10000);
	assert_true(st >= 0 && WIFEXITED(st));
	print_message("reader exit %d\n", WEXITSTATUS(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	orbit__ring_counters(ring, &c);
	print_message(
	    "%llu frames, %llu waits, %llu futex wakes, %llu lost wakes, %llu stalls "
	    "(slept > %lld ms past a frame; see stress_wait_lost())\n",
	    (unsigned long long)atomic_load(&s->got), (unsigned long long)atomic_load(&s->sleeps),
	    (unsigned long long)c.doorbell_wakes, (unsigned long long)atomic_load(&s->lost),
	    (unsigned long long)atomic_load(&s->stalls), STRESS_BOUND_NS / 1000000);
	assert_int_equal(atomic_load(&s->lost), 0);
	assert_int_equal(atomic_load(&s->got), stress_n());
	assert_true(atomic_load(&s->sleeps) > 0); /* the sleeping path was exercised */
	/* Which publish path ran (see above): every frame bumped seq, or only the wakes did */
	seq = orbit__doorbell_seq(orbit__ring_doorbell(ring));
	print_message("doorbell seq %u, reader's switches in a %lld ms quiet wait: %ld\n", seq,
		      STRESS_PROBE_NS / 1000000, atomic_load(&s->probe_switches));
	if (full_ring || pub_off)
		assert_int_equal(seq, (uint32_t)(stress_n() + c.doorbell_wakes));
	else
		assert_int_equal(seq, (uint32_t)(2 * c.doorbell_wakes));
	assert_true(c.doorbell_wakes < stress_n()); /* the two counts differ: the check decides */
	/*
	 * Which sleep ran: slices of ORBIT_DOORBELL_SLICE_NS, or one FUTEX_WAIT.
	 * Slicing makes about 20 switches, one FUTEX_WAIT 1. Each slice ends
	 * with a wake-up that takes its scheduling latency on top of the
	 * slice, so on a loaded machine far fewer than 20 fit in the wait:
	 * a quarter (5) still tells slicing from a single sleep.
	 */
	if (wait_off)
		assert_true(atomic_load(&s->probe_switches) >=
			    STRESS_PROBE_NS / ORBIT_DOORBELL_SLICE_NS / 4);
	else
		assert_true(atomic_load(&s->probe_switches) <= 3);
	orbit__ring_close(ring);
	munmap(s, sizeof(*s));
}

static void test_ring_asym_no_lost_wake_stress(void **state)
{
	stress_case(*state, false, false, false);
}

static void test_ring_full_mode_no_lost_wake_stress(void **state)
{
	stress_case(*state, true, false, false);
}

static void test_ring_asym_unregistered_publisher_no_lost_wake_stress(void **state)
{
	stress_case(*state, false, true, false);
}

static void test_ring_asym_reader_without_membarrier_sleeps_in_slices(void **state)
{
	stress_case(*state, false, false, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_observers_see_every_transition_or_lag_4_writers, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_publisher_sigkilled_between_frame_and_table_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_publisher_sigkilled_before_doorbell, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_publisher_sigkilled_mid_frame, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_writer_lane_reclaim_after_sigkill, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_no_lost_wakeup_100000_transitions, setup,
						teardown),
		cmocka_unit_test(test_stale_ring_loses_no_wake_row_class),
		cmocka_unit_test(test_stale_ring_loses_no_wake_shared_class),
		cmocka_unit_test_setup_teardown(test_ring_asym_no_lost_wake_stress, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_ring_full_mode_no_lost_wake_stress, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
		    test_ring_asym_unregistered_publisher_no_lost_wake_stress, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_ring_asym_reader_without_membarrier_sleeps_in_slices, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
