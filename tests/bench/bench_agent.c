// SPDX-License-Identifier: MIT
/*
 * tests/bench/bench_agent.c: the issue 5 wake benchmark end to end, through
 * the public API: cross-process wake latency from a transition's publish
 * to the subscriber's poll() returning, p50 and p99, next to raw futex,
 * eventfd and pipe ping-pong measured in the same run the same way.
 *
 * Process A holds a lock handle with an agent and alternates acquire and
 * release (each publishes one frame on A's lane). Process B runs an agent
 * without a lock and subscribes in one of two ways:
 *   agent     (the target) a subscriber callback: B's agent thread, woken
 *             by the publisher's FUTEX_WAKE, drains the ring and calls it
 *             at once; the callback stamps CLOCK_MONOTONIC, reads the frame
 *             with its own cursor and records stamp - frame.publish_ns (the
 *             ring stamps the frame at publish). Path: publish -> futex
 *             wake of B's agent thread -> drain -> callback: one hand-off,
 *             the same as a raw futex wake, plus the agent's drain.
 *   agent_fd  an eventfd subscriber: B's main thread poll()s it; when poll
 *             returns it stamps, drains the eventfd and reads the frame the
 *             same way. Path: publish -> futex wake of B's agent thread ->
 *             drain -> eventfd write -> the agent's membarrier and futex
 *             wait -> B's poll returns: a second, same-process hand-off.
 * Ping-pong: B acks on a pipe before A's next transition,
 * so one transition is in flight; A sleeps 50 us before each so B's agent
 * is asleep again. The baselines time one way from the sender's stamp (in
 * a shared anonymous mapping) to the receiver's return, with the same ack
 * and gap.
 *
 * Placement. "split" (the target line) pins A to one CPU and all of B (its
 * agent thread and its subscriber) to another, for every method alike, so
 * each figure is a cross-CPU wake. "free" leaves placement to the
 * scheduler and is printed for information: there a raw pair usually
 * shares one CPU (B runs when A blocks, a context switch, not a wake)
 * while B's subscriber may sit on the other CPU from its agent, and on a
 * virtual machine a wake of an idle (halted) vCPU costs tens of
 * microseconds, so free figures measure where the scheduler put the
 * threads more than the wake path. Each method runs REPS times,
 * interleaved; the figure is the median of the runs' quantiles with the
 * range beside it. Under ~30 s.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "orbit_test.h"
#include <orbit/orbit.h>
#include "bench_target.h"
#include "bench_place.h"

#define ROUNDS 4000
#ifndef REPS
#define REPS 3 /* runs per method and placement; -DREPS=1 for a quick look */
#endif

enum method { M_AGENT, M_AGENT_FD, M_FUTEX, M_EVENTFD, M_PIPE, M_N };
enum placement { P_SPLIT, P_FREE, P_N };

static const char *const names[M_N] = { "agent", "agent_fd", "futex", "eventfd", "pipe" };
static pid_t agent_receiver_pid; /* to find B's stats row afterwards */

/* Shared between the two processes of one method (MAP_SHARED | MAP_ANONYMOUS). */
struct box {
	_Atomic uint32_t word; /* raw futex: the round number */
	_Atomic uint64_t sent; /* baselines: the sender's stamp */
	uint64_t lat[ROUNDS];  /* written by the receiver, read after it exits */
};

struct peer {
	struct box *box;
	int efd;     /* eventfd baseline */
	int data[2]; /* pipe baseline */
	int ack[2];  /* receiver -> sender: ready, then one byte per round */
	const char *fleet;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void futex_wait(_Atomic uint32_t *w, uint32_t v)
{
	syscall(SYS_futex, w, FUTEX_WAIT, v, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static int ack(struct peer *p)
{
	char c = 'a';

	return write(p->ack[1], &c, 1) == 1 ? 0 : -1;
}

/* B for M_AGENT_FD: an agent, a subscriber eventfd, a private cursor. */
static int agent_fd_receiver(struct peer *p)
{
	struct orbit_agent_options ao = { .size = sizeof(ao),
					  .fleet = p->fleet,
					  .name = "bench-sub-fd" };
	struct orbit_transition_event *ev = malloc(sizeof(*ev));
	orbit_transition_reader_t *r = NULL;
	orbit_agent_t *a = NULL;
	int fd = -1, rc = 0;

	if (!ev || orbit_agent_start(&ao, &a) < 0 || orbit_agent_subscribe(a, &fd) < 0 ||
	    orbit_agent_reader_open(a, &r) < 0 || ack(p) < 0)
		return 1;
	for (int i = 0; i < ROUNDS && rc == 0; i++) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t now = 0, sent = 0, cnt;
		int n;

		while (!sent) { /* a wake without a frame (none expected) polls again */
			if (poll(&pfd, 1, 10000) != 1) {
				rc = 2;
				break;
			}
			now = orbit_test_now_ns();
			if (read(fd, &cnt, sizeof(cnt)) != sizeof(cnt))
				continue;
			while ((n = orbit_transition_reader_next(r, ev)) != -EAGAIN)
				if (n == 0)
					sent = ev->publish_ns;
		}
		p->box->lat[i] = now > sent ? now - sent : 0;
		if (rc == 0 && ack(p) < 0)
			rc = 3;
	}
	orbit_transition_reader_close(r);
	orbit_agent_stop(a);
	free(ev);
	return rc;
}

/* B for M_AGENT: the callback the agent thread runs, with its own cursor. */
struct cb_state {
	struct peer *p;
	orbit_transition_reader_t *r;
	struct orbit_transition_event *ev;
	int i, rc;
	_Atomic uint32_t done; /* futex word: B's main thread waits for the last round */
};

static void on_wake(void *arg)
{
	struct cb_state *s = arg;
	uint64_t now = orbit_test_now_ns(), sent = 0;
	int n;

	if (s->i >= ROUNDS || s->rc)
		return;
	while ((n = orbit_transition_reader_next(s->r, s->ev)) != -EAGAIN)
		if (n == 0)
			sent = s->ev->publish_ns;
	if (!sent)
		return; /* a wake without a frame (none expected): wait for the next */
	s->p->box->lat[s->i++] = now > sent ? now - sent : 0;
	if (ack(s->p) < 0)
		s->rc = 3;
	if (s->i == ROUNDS || s->rc) {
		atomic_store(&s->done, 1);
		futex_wake(&s->done);
	}
}

static int agent_receiver(struct peer *p)
{
	struct orbit_agent_options ao = { .size = sizeof(ao),
					  .fleet = p->fleet,
					  .name = "bench-sub" };
	struct cb_state s = { .p = p, .ev = malloc(sizeof(*s.ev)) };
	orbit_agent_t *a = NULL;

	if (!s.ev || orbit_agent_start(&ao, &a) < 0 || orbit_agent_reader_open(a, &s.r) < 0 ||
	    orbit_agent_subscribe_callback(a, on_wake, &s) < 0 || ack(p) < 0)
		return 1;
	while (!atomic_load(&s.done)) /* the sender kills us if a round fails */
		futex_wait(&s.done, 0);
	orbit_agent_unsubscribe_callback(a, on_wake, &s);
	orbit_transition_reader_close(s.r);
	orbit_agent_stop(a);
	free(s.ev);
	return s.rc;
}

/* B for the baselines: the same loop shape, one kernel object each. */
static int raw_receiver(enum method m, struct peer *p)
{
	if (ack(p) < 0)
		return 1;
	for (int i = 0; i < ROUNDS; i++) {
		uint64_t now, sent, x;

		if (m == M_FUTEX) {
			while (atomic_load(&p->box->word) == (uint32_t)i)
				futex_wait(&p->box->word, (uint32_t)i);
			now = orbit_test_now_ns();
			sent = atomic_load(&p->box->sent);
		} else if (m == M_EVENTFD) {
			if (read(p->efd, &x, sizeof(x)) != sizeof(x))
				return 2;
			now = orbit_test_now_ns();
			sent = atomic_load(&p->box->sent);
		} else {
			if (read(p->data[0], &x, sizeof(x)) != sizeof(x))
				return 3;
			now = orbit_test_now_ns();
			sent = x;
		}
		p->box->lat[i] = now - sent;
		if (ack(p) < 0)
			return 4;
	}
	return 0;
}

/* A for M_AGENT: a lock handle with an agent; acquire and release alternate. */
struct sender {
	orbit_lock_t *lock;
	orbit_agent_t *agent;
};

static int agent_sender_start(struct sender *s, const char *fleet)
{
	struct orbit_lock_options lo = { .size = sizeof(lo), .fleet = fleet };
	struct orbit_agent_options ao = { .size = sizeof(ao), .fleet = fleet, .name = "bench-pub" };

	if (orbit_lock_open(&lo, &s->lock) < 0)
		return -1;
	ao.lock = s->lock;
	if (orbit_agent_start(&ao, &s->agent) < 0) {
		orbit_lock_close(s->lock);
		return -1;
	}
	return 0;
}

static int send_one(enum method m, struct peer *p, struct sender *s, int i)
{
	static const orbit_lock_owner_t owner = { "bench-a", 7 };
	uint64_t now = orbit_test_now_ns(), one = 1;
	orbit_lock_key_t key = { "bench.agent", 11, "k", 1 };

	switch (m) {
	case M_AGENT:
	case M_AGENT_FD:
		if (i % 2 == 0)
			return orbit_lock_try_acquire(s->lock, &key, &owner, 60000000000ull, NULL,
						      NULL);
		return orbit_lock_release(s->lock, &key, &owner, 0);
	case M_FUTEX:
		atomic_store(&p->box->sent, now);
		atomic_fetch_add(&p->box->word, 1);
		futex_wake(&p->box->word);
		return 0;
	case M_EVENTFD:
		atomic_store(&p->box->sent, now);
		return write(p->efd, &one, sizeof(one)) == sizeof(one) ? 0 : -1;
	default:
		return write(p->data[1], &now, sizeof(now)) == sizeof(now) ? 0 : -1;
	}
}

/* One method, ROUNDS ping-pongs: p50 and p99 in ns. */
static int run(enum method m, enum placement pl, const char *fleet, double *p50, double *p99)
{
	struct timespec gap = { 0, 50 * 1000 }; /* the receiver falls asleep again */
	struct sender s = { NULL, NULL };
	struct peer p = { .fleet = fleet };
	int rc = 0, st;
	pid_t pid;
	char c;

	p.box = mmap(NULL, sizeof(*p.box), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		     0);
	p.efd = eventfd(0, EFD_CLOEXEC);
	if (p.box == MAP_FAILED || p.efd < 0 || pipe(p.data) || pipe(p.ack))
		return -1;
	/* Fork before this process starts an agent thread (liburcu and fork). */
	place(pl == P_SPLIT ? cpu_a : -1);
	pid = fork();
	if (pid == 0) {
		place(pl == P_SPLIT ? cpu_b : -1); /* before B's agent thread: it inherits */
		_exit(m == M_AGENT	? agent_receiver(&p)
		      : m == M_AGENT_FD ? agent_fd_receiver(&p)
					: raw_receiver(m, &p));
	}
	if (m == M_AGENT)
		agent_receiver_pid = pid;
	if (pid < 0 || read(p.ack[0], &c, 1) != 1)
		rc = -1;
	if (rc == 0 && (m == M_AGENT || m == M_AGENT_FD)) {
		rc = agent_sender_start(&s, fleet);
		usleep(50000); /* both agents settle (a join wakes every agent once) */
	}
	for (int i = 0; i < ROUNDS && rc == 0; i++) {
		nanosleep(&gap, NULL);
		if (send_one(m, &p, &s, i) < 0 || read(p.ack[0], &c, 1) != 1)
			rc = -1;
	}
	if (pid > 0) {
		if (rc < 0)
			kill(pid, SIGKILL);
		st = orbit_test_wait(pid, 30000);
		if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			rc = -1;
	}
	if (s.agent) {
		orbit_agent_stop(s.agent);
		orbit_lock_close(s.lock);
	}
	place(-1);
	qsort(p.box->lat, ROUNDS, sizeof(p.box->lat[0]), cmp_u64);
	*p50 = (double)p.box->lat[ROUNDS / 2];
	*p99 = (double)p.box->lat[ROUNDS * 99 / 100];
	close(p.efd);
	close(p.data[0]);
	close(p.data[1]);
	close(p.ack[0]);
	close(p.ack[1]);
	munmap(p.box, sizeof(*p.box));
	return rc;
}

/*
 * The first hop alone: publish -> B's agent thread reads the frame, from
 * the delivery histogram B's agent published at stop (log2 buckets: the
 * figure is the upper bound of the bucket holding the quantile).
 */
static int delivery_quantiles(const char *fleet, pid_t pid, double *p50, double *p99)
{
	struct orbit_fleet_options fo = { .size = sizeof(fo), .fleet = fleet };
	struct orbit_fleet_stats *st = malloc(sizeof(*st));
	orbit_fleet_t *f = NULL;
	int rc = -1;

	if (!st || orbit_fleet_open(&fo, &f) < 0) {
		free(st);
		return -1;
	}
	for (uint32_t row = 0; row < orbit_fleet_stats_rows(f) && rc < 0; row++) {
		const struct orbit_stats_histogram *h = &st->hists[1]; /* delivery_latency */
		uint64_t acc = 0;

		if (orbit_fleet_stats_read(f, row, st) < 0 || st->pid != (uint32_t)pid || !h->count)
			continue;
		*p50 = *p99 = 0;
		for (unsigned b = 0; b < ORBIT_STATS_NBUCKETS; b++) {
			acc += h->buckets[b];
			if (!*p50 && acc * 2 >= h->count)
				*p50 = (double)orbit_stats_bucket_le(b);
			if (!*p99 && acc * 100 >= h->count * 99)
				*p99 = (double)orbit_stats_bucket_le(b);
		}
		rc = 0;
	}
	orbit_fleet_close(f);
	free(st);
	return rc;
}

static double median_of(double v[REPS])
{
	double t[REPS];

	memcpy(t, v, sizeof(t));
	qsort(t, REPS, sizeof(t[0]), cmp_double);
	return t[REPS / 2];
}

static double min_of(const double v[REPS])
{
	double m = v[0];

	for (int i = 1; i < REPS; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

static double max_of(const double v[REPS])
{
	double m = v[0];

	for (int i = 1; i < REPS; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

/* name, median of REPS runs, baseline, median, ratio, range of the ratio per run */
static void line(const char *name, double v[REPS], const char *bname, double b[REPS],
		 const char *target)
{
	double mv = median_of(v), mb = median_of(b), lo = 1e300, hi = 0;

	for (int i = 0; i < REPS; i++) {
		double r = b[i] > 0 ? v[i] / b[i] : 0;

		lo = r < lo ? r : lo;
		hi = r > hi ? r : hi;
	}
	printf("%-18s %7.0f  %-21s %7.0f  %5.2f [%.2f-%.2f]  (%s)\n", name, mv, bname, mb,
	       mb > 0 ? mv / mb : 0.0, lo, hi, target);
}

int main(void)
{
	static const char *const pname[P_N] = { "split", "free" };
	double lat[P_N][M_N][2][REPS] = { { { { 0 } } } }, hop[2];
	char fleet[64];
	int rc = 0;

	orbit_test_fleet(fleet, sizeof(fleet), "bagent");
	pick_cpus();
	printf("bench_agent: publish -> subscriber runs (agent: callback on the agent thread;\n"
	       "agent_fd: poll() on its eventfd returns), %d ping-pong rounds per run,\n"
	       "%d runs per method, one transition in flight, 50 us gap; baselines timed\n"
	       "the same way. Figures: median of the runs' quantiles [ratio range].\n",
	       ROUNDS, REPS);
	if (cpu_b >= 0)
		printf("split: sender on CPU %d, receiver process on CPU %d; free: unpinned\n",
		       cpu_a, cpu_b);
	else
		printf("split placement skipped: this program may use only one CPU\n");
	/* Baselines first in each rep: their children never see an agent thread in the parent. */
	for (int rep = 0; rep < REPS; rep++)
		for (int pl = cpu_b >= 0 ? P_SPLIT : P_FREE; pl < P_N; pl++)
			for (int m = M_N - 1; m >= 0; m--)
				if (run((enum method)m, (enum placement)pl, fleet,
					&lat[pl][m][0][rep], &lat[pl][m][1][rep]) < 0) {
					fprintf(stderr, "bench_agent: %s/%s run failed\n", names[m],
						pname[pl]);
					rc = 1;
				}
	if (delivery_quantiles(fleet, agent_receiver_pid, &hop[0], &hop[1]) < 0)
		hop[0] = hop[1] = 0;
	orbit_fleet_unlink(fleet);
	for (int pl = cpu_b >= 0 ? P_SPLIT : P_FREE; pl < P_N; pl++) {
		const char *t50 = pl == P_SPLIT || cpu_b < 0 ? "<= 1.5" : "info: free";
		double(*L)[2][REPS] = lat[pl];
		double added[REPS];

		printf("\n-- %s placement\n%-18s %7s  %-21s %7s  %s\n", pname[pl], "name", "ns",
		       "baseline", "ns", "ratio [range]  (target)");
		line("agent_wake_p50", L[M_AGENT][0], "futex_pingpong_p50", L[M_FUTEX][0], t50);
		line("agent_wake_p99", L[M_AGENT][1], "futex_pingpong_p99", L[M_FUTEX][1], "info");
		line("agent_wake_p50", L[M_AGENT][0], "eventfd_pingpong_p50", L[M_EVENTFD][0],
		     "info");
		line("agent_wake_p99", L[M_AGENT][1], "eventfd_pingpong_p99", L[M_EVENTFD][1],
		     "info");
		line("agent_wake_p50", L[M_AGENT][0], "pipe_pingpong_p50", L[M_PIPE][0], "info");
		line("agent_wake_p99", L[M_AGENT][1], "pipe_pingpong_p99", L[M_PIPE][1], "info");
		line("agent_fd_wake_p50", L[M_AGENT_FD][0], "futex_pingpong_p50", L[M_FUTEX][0],
		     "info");
		line("agent_fd_wake_p99", L[M_AGENT_FD][1], "futex_pingpong_p99", L[M_FUTEX][1],
		     "info");
		if (pl == P_SPLIT || cpu_b < 0)
			bench_target("agent_wake_p50_vs_futex_pingpong",
				     median_of(L[M_FUTEX][0]) > 0
					 ? median_of(L[M_AGENT][0]) / median_of(L[M_FUTEX][0])
					 : 0,
				     "<=", 1.5, "x");
		for (int m = M_AGENT; m <= M_AGENT_FD; m++) {
			for (int i = 0; i < REPS; i++)
				added[i] = L[m][0][i] - L[M_FUTEX][0][i];
			printf("%-18s %7.0f  (%s p50 - futex p50, ns; range %.0f..%.0f)\n",
			       m == M_AGENT ? "agent_added_p50" : "agent_fd_added_p50",
			       median_of(added), names[m], min_of(added), max_of(added));
		}
	}
	/* Where the time goes: the agent's own hop (<= log2 bucket bound), last agent run. */
	printf("\n-- last agent run (%s): publish -> B's agent reads the frame\n", pname[P_N - 1]);
	printf("%-18s %7.0f  (log2 bucket bound)\n%-18s %7.0f  (log2 bucket bound)\n",
	       "agent_hop1_p50_le", hop[0], "agent_hop1_p99_le", hop[1]);
	return rc;
}
