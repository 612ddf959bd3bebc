// SPDX-License-Identifier: MIT
/*
 * tests/bench/bench_ring.c: what a transition costs (issue 5 "Benchmark"),
 * measured in one run next to its baselines: publish cost (ns/op, nobody
 * asleep) against the floor of a frame write (issue 12: a clock read, the
 * header and payload copy, one release store), one eventfd write and an
 * uncontended process-shared robust mutex lock/unlock pair, with the
 * doorbell's FUTEX_WAKE count to verify "no syscall when nobody sleeps";
 * and cross-process wake latency (publish -> the sleeping waiter returns
 * with the frame, p50/p99) against raw futex, eventfd and pipe ping-pong
 * between two processes, each round timed one way from the sender's
 * CLOCK_MONOTONIC stamp to the receiver's return. The cost figures are
 * measured interleaved: COST_ROUNDS rounds, each timing publish, floor,
 * mutex and eventfd in turn (the order rotates every round), so load on
 * the shared machine moves all of them; each figure is the median of its
 * rounds (range printed), and the publish/floor target is the median of
 * the per-round ratios. Under ~30 s.
 * Scale series (issue 12): publish cost with 1, 4 and 16 reader handles
 * subscribed to the ring (idle, none asleep), each point the best of 3
 * interleaved medians; target: 16 readers <= 1.2x 1 reader (publishing
 * is independent of readers).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "orbit_test.h"
#include <orbit/error.h>
#include "shm/ring.h"
#include "bench_target.h"

#define REPS 5		   /* runs per point of the readers series */
#define OPS 1000000ull	   /* operations per timed run of the readers series */
#define COST_OPS 200000ull /* operations per timed run of a cost round */
#define COST_ROUNDS 25	   /* interleaved rounds of the cost figures */
#define ROUNDS 5000

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sort @v (n values) and return its median; *lo and *hi get the range. */
static double median_range(double *v, int n, double *lo, double *hi)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	*lo = v[0];
	*hi = v[n - 1];
	return v[n / 2];
}

static void line(const char *name, double v, const char *bname, double b, const char *target)
{
	printf("%-22s %9.1f  %-22s %9.1f  %6.2f  (%s)\n", name, v, bname, b, b > 0 ? v / b : 0.0,
	       target);
}

/* ---- costs: each function times one run of OPS operations, in ns/op ---- */

static const struct orbit_transition bench_t = {
	.type = ORBIT_TRANSITION_ACQUIRE,
	.ns = "runtime.tasks.pool",
	.ns_len = 18,
	.label = "job-000042",
	.label_len = 10,
	.owner = "worker-7:tenure-99",
	.owner_len = 18,
};

static double publish_run(orbit_ring_t *ring, uint64_t ops)
{
	struct orbit_transition t = bench_t;
	uint64_t t0 = orbit_test_now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		t.state_revision = i;
		orbit__ring_publish(ring, 0, &t);
	}
	return (double)(orbit_test_now_ns() - t0) / (double)ops;
}

/* The median of REPS publish runs (the readers series). */
static double publish_cost(orbit_ring_t *ring)
{
	double v[REPS], lo, hi;

	for (int r = 0; r < REPS; r++)
		v[r] = publish_run(ring, OPS);
	return median_range(v, REPS, &lo, &hi);
}

/*
 * The floor of a frame write with nobody asleep: what publish must do at
 * the least: stamp it (one CLOCK_MONOTONIC read), copy the frame header
 * and the key and owner bytes of bench_t into a shared frame @f, and
 * publish it with one release store of its sequence.
 */
static double frame_floor_run(_Atomic uint64_t *f, uint64_t ops)
{
	static const char key_owner[] = "runtime.tasks.pooljob-000042worker-7:tenure-99";
	struct orbit_ring_frame_hdr h;
	uint64_t t0;

	memset(&h, 0, sizeof(h));
	h.type = ORBIT_TRANSITION_ACQUIRE;
	t0 = orbit_test_now_ns();
	for (uint64_t i = 0; i < ops; i++) {
		h.state_revision = i;
		h.publish_ns = orbit_test_now_ns();
		/* every header word but seq, then the bytes, then seq (release) */
		memcpy((char *)f + 8, (const char *)&h + 8, sizeof(h) - 8);
		memcpy((char *)f + sizeof(h), key_owner, sizeof(key_owner) - 1);
		atomic_store_explicit(&f[0], 2 * i + 2, memory_order_release);
	}
	return (double)(orbit_test_now_ns() - t0) / (double)ops;
}

static double eventfd_run(int fd, uint64_t ops)
{
	uint64_t one = 1, sink, t0 = orbit_test_now_ns();

	for (uint64_t i = 0; i < ops; i++)
		if (write(fd, &one, sizeof(one)) != sizeof(one))
			break;
	t0 = orbit_test_now_ns() - t0;
	if (read(fd, &sink, sizeof(sink)) < 0)
		return 0;
	return (double)t0 / (double)ops;
}

static double robust_mutex_run(pthread_mutex_t *mu, uint64_t ops)
{
	uint64_t t0 = orbit_test_now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		pthread_mutex_lock(mu);
		pthread_mutex_unlock(mu);
	}
	return (double)(orbit_test_now_ns() - t0) / (double)ops;
}

enum { C_PUB, C_FLOOR, C_MUTEX, C_EVENTFD, C_N };

/* The interleaved cost rounds of the file comment: v[k][round] in ns/op, ratio[round]. */
static int cost_rounds(orbit_ring_t *ring, double v[C_N][COST_ROUNDS], double ratio[COST_ROUNDS])
{
	_Atomic uint64_t *f = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				   -1, 0);
	pthread_mutex_t *mu = mmap(NULL, sizeof(*mu), PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutexattr_t a;

	if (f == MAP_FAILED || mu == MAP_FAILED || fd < 0)
		return -1;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(mu, &a);
	for (int r = 0; r < COST_ROUNDS; r++) {
		for (int j = 0; j < C_N; j++) {
			int k = (r + j) % C_N; /* rotate: no figure always runs first */

			switch (k) {
			case C_PUB:
				v[k][r] = publish_run(ring, COST_OPS);
				break;
			case C_FLOOR:
				v[k][r] = frame_floor_run(f, COST_OPS);
				break;
			case C_MUTEX:
				v[k][r] = robust_mutex_run(mu, COST_OPS);
				break;
			default:
				v[k][r] = eventfd_run(fd, COST_OPS / 4);
				break;
			}
		}
		ratio[r] = v[C_PUB][r] / v[C_FLOOR][r];
	}
	pthread_mutex_destroy(mu);
	munmap(mu, sizeof(*mu));
	munmap(f, 4096);
	close(fd);
	return 0;
}

/* ---- wake latency ---- */

enum method { M_RING, M_FUTEX, M_EVENTFD, M_PIPE };

struct shm_box {
	_Atomic uint32_t word; /* raw futex */
	_Atomic uint64_t ts;   /* sender's stamp for the baselines */
	uint64_t lat[ROUNDS];  /* receiver's measurements */
};

static void futex_wait(_Atomic uint32_t *w, uint32_t v)
{
	syscall(SYS_futex, w, FUTEX_WAIT, v, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static int receiver(enum method m, struct shm_box *box, const char *fleet,
		    const struct orbit_ring_layout *l, int efd, int data_rd, int ack_wr)
{
	struct orbit_ring_event *ev = malloc(sizeof(*ev));
	orbit_ring_reader_t *r = NULL;
	orbit_ring_t *ring = NULL;
	uint32_t lane;
	char c = 'a';

	if (m == M_RING &&
	    (orbit__ring_open(&ring, fleet, l, NULL) < 0 || orbit__ring_reader_open(&r, ring) < 0))
		return 1;
	if (write(ack_wr, &c, 1) != 1) /* ready */
		return 2;
	for (int i = 0; i < ROUNDS; i++) {
		uint64_t now = 0, sent = 0, x;

		switch (m) {
		case M_RING: {
			for (;;) {
				uint32_t seen = orbit__ring_reader_arm(r);
				if (orbit__ring_reader_next(r, ev, &lane) == 0)
					break;
				orbit__ring_reader_wait(r, seen, -1);
			}
			now = orbit_test_now_ns();
			sent = ev->publish_ns;
			break;
		}
		case M_FUTEX: {
			uint32_t v = (uint32_t)i;
			while (atomic_load(&box->word) == v)
				futex_wait(&box->word, v);
			now = orbit_test_now_ns();
			sent = atomic_load(&box->ts);
			break;
		}
		case M_EVENTFD:
			if (read(efd, &x, sizeof(x)) != sizeof(x))
				return 3;
			now = orbit_test_now_ns();
			sent = atomic_load(&box->ts);
			break;
		case M_PIPE:
			if (read(data_rd, &x, sizeof(x)) != sizeof(x))
				return 4;
			now = orbit_test_now_ns();
			sent = x;
			break;
		}
		box->lat[i] = now - sent;
		if (write(ack_wr, &c, 1) != 1)
			return 5;
	}
	if (r)
		orbit__ring_reader_close(r);
	orbit__ring_close(ring);
	free(ev);
	return 0;
}

/* One method: returns p50 and p99 in ns. */
static int latency(enum method m, const char *fleet, const struct orbit_ring_layout *l,
		   orbit_ring_t *ring, double *p50, double *p99)
{
	struct shm_box *box = mmap(NULL, sizeof(*box), PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int efd = eventfd(0, EFD_CLOEXEC), data[2], ack[2], st;
	struct orbit_transition t = {
		.type = ORBIT_TRANSITION_RELEASE,
		.ns = "bench",
		.ns_len = 5,
		.label = "k",
		.label_len = 1,
	};
	struct timespec gap = { 0, 50 * 1000 }; /* let the receiver fall asleep again */
	pid_t pid;
	char c;

	if (box == MAP_FAILED || efd < 0 || pipe(data) || pipe(ack))
		return -1;
	pid = fork();
	if (pid == 0)
		_exit(receiver(m, box, fleet, l, efd, data[0], ack[1]));
	if (read(ack[0], &c, 1) != 1)
		return -1;
	for (int i = 0; i < ROUNDS; i++) {
		nanosleep(&gap, NULL);
		uint64_t now = orbit_test_now_ns();
		switch (m) {
		case M_RING:
			t.state_revision = (uint64_t)i;
			orbit__ring_publish(ring, 1, &t);
			break;
		case M_FUTEX:
			atomic_store(&box->ts, now);
			atomic_fetch_add(&box->word, 1);
			futex_wake(&box->word);
			break;
		case M_EVENTFD: {
			uint64_t one = 1;
			atomic_store(&box->ts, now);
			if (write(efd, &one, sizeof(one)) != sizeof(one))
				return -1;
			break;
		}
		case M_PIPE:
			if (write(data[1], &now, sizeof(now)) != sizeof(now))
				return -1;
			break;
		}
		if (read(ack[0], &c, 1) != 1)
			return -1;
	}
	st = orbit_test_wait(pid, 30000);
	qsort(box->lat, ROUNDS, sizeof(box->lat[0]), cmp_u64);
	*p50 = (double)box->lat[ROUNDS / 2];
	*p99 = (double)box->lat[ROUNDS * 99 / 100];
	close(efd);
	close(data[0]);
	close(data[1]);
	close(ack[0]);
	close(ack[1]);
	munmap(box, sizeof(*box));
	return (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0) ? 0 : -1;
}

#define SCALE_READERS_MAX 16

/* The scale series of the file comment, printed and judged. */
static int readers_series(orbit_ring_t *ring)
{
	static const int counts[3] = { 1, 4, 16 };
	orbit_ring_reader_t *r[SCALE_READERS_MAX] = { NULL };
	double best[3] = { 1e30, 1e30, 1e30 };
	int open = 0, rc = 0;

	for (int round = 0; round < 3 && !rc; round++)
		for (int k = 0; k < 3 && !rc; k++) {
			double v;

			while (open < counts[k] && !rc)
				if (orbit__ring_reader_open(&r[open], ring) < 0)
					rc = 1;
				else
					open++;
			if (rc)
				break;
			v = publish_cost(ring);
			best[k] = v < best[k] ? v : best[k];
			if (k == 2)
				while (open > 0)
					orbit__ring_reader_close(r[--open]);
		}
	while (open > 0)
		orbit__ring_reader_close(r[--open]);
	if (rc) {
		fprintf(stderr, "bench_ring: cannot open a reader\n");
		return 1;
	}
	printf("\nscale: publish_ns with N subscribed readers (idle)      1        4       16   "
	       "16/1\n");
	printf("%-52s %8.1f %8.1f %8.1f   %.2fx\n", "publish_ns", best[0], best[1], best[2],
	       best[2] / best[0]);
	bench_target("ring_publish_16_readers_vs_1", best[2] / best[0], "<=", 1.2, "x");
	return 0;
}

int main(void)
{
	struct orbit_ring_layout l;
	struct orbit_ring_counters c0, c1;
	double v[C_N][COST_ROUNDS], ratio[COST_ROUNDS], med[C_N], lo[C_N], hi[C_N], rmed, rlo, rhi,
	    lat[4][2];
	const char *cnames[C_N] = { "publish_ns", "frame_floor_ns", "robust_mutex_pair_ns",
				    "eventfd_write_ns" };
	const char *names[4] = { "ring", "futex", "eventfd", "pipe" };
	orbit_ring_t *ring;
	char fleet[64];
	int rc = 0;

	orbit_test_fleet(fleet, sizeof(fleet), "bring");
	orbit__ring_layout_default(&l);
	if (orbit__ring_open(&ring, fleet, &l, NULL) < 0) {
		fprintf(stderr, "bench_ring: cannot open the ring\n");
		return 1;
	}
	printf("bench_ring: layout %u lanes x %u frames x %u bytes; costs: median of %d "
	       "interleaved rounds of %llu ops [range]\n",
	       l.lanes, l.frames_per_lane, l.frame_bytes, COST_ROUNDS, COST_OPS);
	orbit__ring_counters(ring, &c0);
	if (cost_rounds(ring, v, ratio) < 0) {
		fprintf(stderr, "bench_ring: cannot set up the cost baselines\n");
		return 1;
	}
	orbit__ring_counters(ring, &c1);
	for (int k = 0; k < C_N; k++) {
		med[k] = median_range(v[k], COST_ROUNDS, &lo[k], &hi[k]);
		printf("%-22s %9.1f  [%.1f .. %.1f]\n", cnames[k], med[k], lo[k], hi[k]);
	}
	rmed = median_range(ratio, COST_ROUNDS, &rlo, &rhi);
	printf("%-22s %9s  %-22s %9s  %6s  %s\n", "name", "value", "baseline", "value", "ratio",
	       "(target)");
	line("publish_ns", med[C_PUB], "frame_floor_ns", med[C_FLOOR], "<= 1.5");
	printf("%-22s %9.2f  [%.2f .. %.2f]  (median of the per-round ratios: the target)\n",
	       "publish/floor_rounds", rmed, rlo, rhi);
	line("publish_ns", med[C_PUB], "robust_mutex_pair_ns", med[C_MUTEX], "info");
	line("publish_ns", med[C_PUB], "eventfd_write_ns", med[C_EVENTFD], "info");
	printf("%-22s %9llu  %-22s %9llu  %6s  (%s)\n", "publish_futex_wakes",
	       (unsigned long long)(c1.doorbell_wakes - c0.doorbell_wakes), "publishes",
	       (unsigned long long)(c1.published - c0.published), "-", "0 wakes: no syscall");
	if (c1.doorbell_wakes != c0.doorbell_wakes)
		rc = 1;
	bench_target("ring_publish_vs_frame_floor", rmed, "<=", 1.5, "x");
	bench_target("ring_publish_futex_wakes", (double)(c1.doorbell_wakes - c0.doorbell_wakes),
		     "<=", 0, "");

	for (int m = 0; m < 4; m++)
		if (latency((enum method)m, fleet, &l, ring, &lat[m][0], &lat[m][1]) < 0) {
			fprintf(stderr, "bench_ring: %s latency run failed\n", names[m]);
			rc = 1;
		}
	line("wake_p50_ns", lat[0][0], "futex_pingpong_p50_ns", lat[1][0], "<= 1.5");
	bench_target("ring_wake_p50_vs_futex_pingpong", lat[0][0] / lat[1][0], "<=", 1.5, "x");
	line("wake_p99_ns", lat[0][1], "futex_pingpong_p99_ns", lat[1][1], "info");
	line("wake_p50_ns", lat[0][0], "eventfd_pingpong_p50_ns", lat[2][0], "info");
	line("wake_p50_ns", lat[0][0], "pipe_pingpong_p50_ns", lat[3][0], "info");
	line("wake_p99_ns", lat[0][1], "eventfd_pingpong_p99_ns", lat[2][1], "info");
	line("wake_p99_ns", lat[0][1], "pipe_pingpong_p99_ns", lat[3][1], "info");
	if (readers_series(ring))
		rc = 1;
	orbit__ring_close(ring);
	orbit__ring_unlink(fleet, &l);
	return rc;
}
