// SPDX-License-Identifier: MIT
/*
 * tests/bench/bench_spot_executor.c: what the coordinators of spec 07
 * §2-4 cost on top of the serial queue they are built on. One producer
 * thread submits ITEMS trivial work items (a counter increment) through
 * each path, retrying on -EAGAIN (backpressure) with sched_yield(), then
 * waits for quiescence; the figure is items per second from the first
 * submission to quiescence, on the worker pool (threads = CPUs). Baseline:
 * orbit_serial_queue_enqueue() on a bare serial queue, measured in the
 * same run. Every path runs ROUNDS times, interleaved; the figure is the
 * median with the per-round ratio range. Targets (issue 12): every
 * coordinator path >= 0.5x the bare queue, SpotWide execute_actor
 * >= 0.25x (its records take two pool hand-offs). Every LAT_EVERY-th item
 * carries its submission time and the handler records how long it waited
 * to start: p50/p99 submit-to-start latency per path (all rounds pooled).
 * "serial_queue 8 queues" (8 bare queues, round-robin, no target) shows
 * what spreading one producer's items over 8 queues costs without any
 * coordinator, next to PerActor 8 Actors.
 *
 * Scale series (issue 12): PerActor and SpotWide execute_actor with 1, 8,
 * 64 and 1,024 Actors in one Spot (round-robin), median of SCALE_ROUNDS;
 * target: the 1,024-Actor throughput >= 0.67x the 1-Actor one (flat:
 * within 1.5x in cost per item).
 *
 * Environment (for instruction counting, e.g. under callgrind):
 * BENCH_ITEMS (items per run, default ITEMS), BENCH_ROUNDS (default
 * ROUNDS), BENCH_PATH (run only the path whose name starts with it; no
 * targets are printed then, only each round's M items/s, for an A/B of
 * two builds), BENCH_ACTORS (Actors of the 8-Actor paths, and queues of
 * "serial_queue 8 queues", when BENCH_PATH is set: one point of the scale
 * series, for a profile), BENCH_THREADS (the pool's workers, default one
 * per CPU) and BENCH_STANDBY=1 (the pool's standby option).
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <orbit/orbit.h>

#include "bench_target.h"

#define ITEMS 200000
#define ROUNDS 5
#define ROUNDS_MAX 15
#define ACTORS 8
#define LAT_EVERY 64

#define SCALE_ROUNDS 3
#define SCALE_N 4

static uint64_t items = ITEMS;
static int rounds = ROUNDS;
/* Actors the round-robin paths spread over (ACTORS, or the scale series'). */
static uint64_t n_actors = ACTORS;

enum path {
	P_QUEUE,       /* baseline: a bare serial queue */
	P_SPOT,	       /* execute_spot */
	P_PER_ACTOR_1, /* PerActor execute_actor, one Actor */
	P_PER_ACTOR_8, /* PerActor execute_actor, 8 Actors round-robin */
	P_SPOT_WIDE_1, /* SpotWide execute_actor, one Actor (two queues) */
	P_SPOT_WIDE_8, /* SpotWide execute_actor, 8 Actors round-robin */
	P_ACTOR,       /* Actor coordinator execute_actor */
	P_SESSION,     /* session execute_application */
	P_QUEUE_8,     /* no coordinator: 8 bare serial queues, round-robin (no target) */
	P_N
};

static const char *const names[P_N] = {
	"serial_queue enqueue", "spot execute_spot",   "per_actor 1 actor",
	"per_actor 8 actors",	"spot_wide 1 actor",   "spot_wide 8 actors",
	"actor execute_actor",	"session execute_app", "serial_queue 8 queues",
};

/* Relaxed: a count read after quiescence (the queue mutex orders it) */
static _Atomic uint64_t ran;

/* Submit-to-start samples of one path, all rounds; written by handlers
 * (serial per queue, but 8 Actor queues may run at once: relaxed slot
 * claim), read after quiescence. */
struct lat {
	uint64_t *ns;
	_Atomic uint64_t n;
	uint64_t cap;
};

struct lat_item {
	uint64_t t0;
	struct lat *l;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int work(orbit_serial_turn_t *turn, void *arg)
{
	struct lat_item *li = arg;

	(void)turn;
	if (li) {
		uint64_t d = now_ns() - li->t0;
		/* Relaxed: only a unique slot is needed; read after quiescence */
		uint64_t k = atomic_fetch_add_explicit(&li->l->n, 1, memory_order_relaxed);

		if (k < li->l->cap)
			li->l->ns[k] = d;
	}
	atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
	return ORBIT_SERIAL_DONE;
}

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

struct subject {
	orbit_serial_queue_t *q;
	orbit_serial_queue_t **qs; /* P_QUEUE_8: n_actors queues */
	orbit_spot_serial_executor_t *spot;
	orbit_actor_serial_executor_t *actor;
	orbit_session_serial_executor_t *session;
};

static int submit(enum path p, struct subject *s, uint64_t i, void *a)
{
	switch (p) {
	case P_QUEUE:
		return orbit_serial_queue_enqueue(s->q, work, a);
	case P_QUEUE_8:
		return orbit_serial_queue_enqueue(s->qs[i % n_actors], work, a);
	case P_SPOT:
		return orbit_spot_execute_spot(s->spot, work, a, NULL);
	case P_PER_ACTOR_1:
	case P_SPOT_WIDE_1:
		return orbit_spot_execute_actor(s->spot, 1, work, a, 0, NULL);
	case P_PER_ACTOR_8:
	case P_SPOT_WIDE_8:
		return orbit_spot_execute_actor(s->spot, 1 + i % n_actors, work, a, 0, NULL);
	case P_ACTOR:
		return orbit_actor_execute_actor(s->actor, work, a, 0, NULL);
	default:
		return orbit_session_execute_application(s->session, work, a, 0, NULL);
	}
}

static int setup(enum path p, orbit_executor_t ex, struct subject *s)
{
	memset(s, 0, sizeof(*s));
	if (p == P_QUEUE_8) {
		struct orbit_serial_queue_options o;

		orbit_serial_queue_options_init(&o);
		o.executor = ex;
		s->qs = calloc(n_actors, sizeof(*s->qs));
		if (!s->qs)
			return -1;
		for (uint64_t k = 0; k < n_actors; k++)
			if (orbit_serial_queue_create(&o, &s->qs[k]) < 0)
				return -1;
		return 0;
	}
	if (p == P_QUEUE) {
		struct orbit_serial_queue_options o;

		orbit_serial_queue_options_init(&o);
		o.executor = ex;
		return orbit_serial_queue_create(&o, &s->q);
	}
	if (p == P_ACTOR) {
		struct orbit_actor_serial_executor_options o;

		orbit_actor_serial_executor_options_init(&o);
		o.executor = ex;
		return orbit_actor_serial_executor_create(&o, &s->actor);
	}
	if (p == P_SESSION) {
		struct orbit_session_serial_executor_options o;

		orbit_session_serial_executor_options_init(&o);
		o.executor = ex;
		return orbit_session_serial_executor_create(&o, &s->session);
	}
	struct orbit_spot_serial_executor_options o;

	orbit_spot_serial_executor_options_init(&o);
	o.executor = ex;
	o.mode = p == P_SPOT_WIDE_1 || p == P_SPOT_WIDE_8 ? ORBIT_SPOT_SPOT_WIDE
							  : ORBIT_SPOT_PER_ACTOR;
	return orbit_spot_serial_executor_create(&o, &s->spot);
}

static int quiesce_and_destroy(struct subject *s)
{
	int rc = 0;

	if (s->qs) {
		for (uint64_t k = 0; k < n_actors; k++) {
			if (orbit_serial_queue_await_quiescence(s->qs[k], -1))
				rc = -1;
			orbit_serial_queue_destroy(s->qs[k]);
		}
		free(s->qs);
	} else if (s->q) {
		rc = orbit_serial_queue_await_quiescence(s->q, -1);
		orbit_serial_queue_destroy(s->q);
	} else if (s->spot) {
		rc = orbit_spot_serial_executor_await_quiescence(s->spot, -1);
		if (orbit_spot_serial_executor_close(s->spot) ||
		    orbit_spot_serial_executor_destroy(s->spot))
			rc = -1;
	} else if (s->actor) {
		rc = orbit_actor_serial_executor_await_quiescence(s->actor, -1);
		if (orbit_actor_serial_executor_close(s->actor) ||
		    orbit_actor_serial_executor_destroy(s->actor))
			rc = -1;
	} else {
		rc = orbit_session_serial_executor_await_quiescence(s->session, -1);
		if (orbit_session_serial_executor_close(s->session) ||
		    orbit_session_serial_executor_destroy(s->session))
			rc = -1;
	}
	return rc;
}

/* One round of one path: items per second, or a negative value on error. */
static double run(enum path p, orbit_executor_t ex, uint64_t *full, struct lat *l,
		  struct lat_item *li)
{
	struct subject s;
	uint64_t t0, t1;
	int rc;

	if (setup(p, ex, &s) < 0)
		return -1;
	atomic_store_explicit(&ran, 0, memory_order_relaxed);
	t0 = now_ns();
	for (uint64_t i = 0; i < items; i++) {
		struct lat_item *a = NULL;

		if (i % LAT_EVERY == 0) {
			a = &li[i / LAT_EVERY];
			a->l = l;
		}
		for (;;) {
			if (a)
				a->t0 = now_ns();
			rc = submit(p, &s, i, a);
			if (rc != -EAGAIN)
				break;
			(*full)++;
			sched_yield(); /* backpressure: let the workers drain */
		}
		if (rc < 0) {
			fprintf(stderr, "bench_spot_executor: %s: submit %d\n", names[p], rc);
			quiesce_and_destroy(&s);
			return -1;
		}
	}
	if (quiesce_and_destroy(&s) < 0)
		return -1;
	t1 = now_ns();
	/* Relaxed: quiescence ordered every increment before it */
	if (atomic_load_explicit(&ran, memory_order_relaxed) != items) {
		fprintf(stderr, "bench_spot_executor: %s: %llu of %llu ran\n", names[p],
			(unsigned long long)atomic_load_explicit(&ran, memory_order_relaxed),
			(unsigned long long)items);
		return -1;
	}
	return (double)items * 1e9 / (double)(t1 - t0);
}

static uint64_t env_u64(const char *name, uint64_t def, uint64_t max)
{
	const char *v = getenv(name);
	unsigned long long x;

	if (!v || !*v)
		return def;
	x = strtoull(v, NULL, 10);
	return x && x <= max ? (uint64_t)x : def;
}

static uint64_t pct(uint64_t *ns, uint64_t n, unsigned p)
{
	return n ? ns[(n - 1) * p / 100] : 0;
}

static orbit_worker_pool_t *pool_for_scale;

/*
 * The scale series: PerActor and SpotWide execute_actor over 1, 8, 64 and
 * 1,024 Actors, interleaved, ITEMS items a run, median of SCALE_ROUNDS.
 */
static void scale_series(orbit_worker_pool_t *pool)
{
	static const uint64_t counts[SCALE_N] = { 1, 8, 64, 1024 };
	static const enum path paths[2] = { P_PER_ACTOR_8, P_SPOT_WIDE_8 };
	static const char *const pname[2] = { "per_actor", "spot_wide" };
	double v[2][SCALE_N][SCALE_ROUNDS];
	static struct lat none;
	struct lat_item *li = calloc(items / LAT_EVERY + 1, sizeof(*li));
	uint64_t full = 0;

	none.cap = 0; /* latency samples are not kept here */
	if (!li)
		return;
	for (int r = 0; r < SCALE_ROUNDS; r++)
		for (int k = 0; k < SCALE_N; k++)
			for (int m = 0; m < 2; m++) {
				n_actors = counts[k];
				v[m][k][r] = run(paths[m], orbit_worker_pool_executor(pool), &full,
						 &none, li);
			}
	n_actors = ACTORS;
	free(li);
	printf("\nscale: execute_actor with N Actors in one Spot (round-robin), M items/s, "
	       "median of %d\n%-10s",
	       SCALE_ROUNDS, "mode");
	for (int k = 0; k < SCALE_N; k++)
		printf(" %9llu", (unsigned long long)counts[k]);
	printf("   1024/1\n");
	for (int m = 0; m < 2; m++) {
		double med[SCALE_N];
		char name[64];

		for (int k = 0; k < SCALE_N; k++) {
			qsort(v[m][k], SCALE_ROUNDS, sizeof(double), cmp_double);
			med[k] = v[m][k][SCALE_ROUNDS / 2];
		}
		printf("%-10s", pname[m]);
		for (int k = 0; k < SCALE_N; k++)
			printf(" %9.2f", med[k] / 1e6);
		printf("   %.2fx\n", med[0] > 0 ? med[SCALE_N - 1] / med[0] : 0);
		snprintf(name, sizeof(name), "%s_1024_actors_vs_1", pname[m]);
		bench_target(name, med[0] > 0 ? med[SCALE_N - 1] / med[0] : 0, ">=", 0.67, "x");
	}
}

int main(void)
{
	static double v[P_N][ROUNDS_MAX];
	static struct lat lat[P_N];
	uint64_t full[P_N] = { 0 };
	const char *only = getenv("BENCH_PATH");
	struct lat_item *li;
	orbit_worker_pool_t *pool;
	int rc = 0;

	items = env_u64("BENCH_ITEMS", ITEMS, 100000000);
	rounds = (int)env_u64("BENCH_ROUNDS", ROUNDS, ROUNDS_MAX);
	if (only)
		n_actors = env_u64("BENCH_ACTORS", ACTORS, 1u << 20);
	li = calloc(items / LAT_EVERY + 1, sizeof(*li));
	for (int p = 0; p < P_N; p++) {
		lat[p].cap = (items / LAT_EVERY + 1) * (uint64_t)rounds;
		lat[p].ns = calloc(lat[p].cap, sizeof(uint64_t));
		if (!lat[p].ns || !li) {
			fprintf(stderr, "bench_spot_executor: no memory\n");
			return 1;
		}
	}
	struct orbit_worker_pool_options po;

	orbit_worker_pool_options_init(&po);
	po.nthreads = (unsigned)env_u64("BENCH_THREADS", 0, 1024);
	po.standby = env_u64("BENCH_STANDBY", 0, 1) == 1;
	if (orbit_worker_pool_create(&po, &pool) < 0) {
		fprintf(stderr, "bench_spot_executor: no worker pool\n");
		return 1;
	}
	printf("bench_spot_executor: %llu trivial items per run, 1 producer (retries -EAGAIN),\n"
	       "worker pool, default policies; median of %d interleaved rounds [ratio range];\n"
	       "submit-to-start latency of every %dth item, all rounds\n",
	       (unsigned long long)items, rounds, LAT_EVERY);
	for (int r = 0; r < rounds; r++)
		for (int p = 0; p < P_N; p++) {
			if (only && strncmp(names[p], only, strlen(only)))
				continue;
			v[p][r] = run((enum path)p, orbit_worker_pool_executor(pool), &full[p],
				      &lat[p], li);
			if (v[p][r] < 0)
				rc = 1;
			else if (only)
				printf("%s round %d: %.3f M/s\n", names[p], r, v[p][r] / 1e6);
		}
	if (only) {
		struct orbit_worker_pool_stats ps;

		/* Pool hand-offs per item: what a drain start costs this path. */
		if (orbit_worker_pool_stats(pool, &ps) == 0)
			printf(
			    "pool: %.3f tasks, %.4f on standby, %.4f wakes, %.4f sleeps per item; "
			    "%llu -EAGAIN\n",
			    (double)ps.submitted / (double)(items * (uint64_t)rounds),
			    (double)ps.standby_runs / (double)(items * (uint64_t)rounds),
			    (double)ps.wakes / (double)(items * (uint64_t)rounds),
			    (double)ps.sleeps / (double)(items * (uint64_t)rounds),
			    (unsigned long long)full[0] + full[P_PER_ACTOR_8] + full[P_QUEUE_8] +
				full[P_SPOT_WIDE_8]);
		orbit_worker_pool_destroy(pool);
		return rc;
	}
	pool_for_scale = pool;
	printf("%-22s %9s  %-22s %9s  %-26s %s\n", "path", "M/s", "baseline", "M/s",
	       "ratio [range] (-EAGAIN)", "start p50/p99 us");
	static const char *const target_names[P_N] = {
		NULL,
		"spot_execute_spot_vs_queue",
		"per_actor_1_vs_queue",
		"per_actor_8_vs_queue",
		"spot_wide_1_vs_queue",
		"spot_wide_8_vs_queue",
		"actor_execute_actor_vs_queue",
		"session_execute_application_vs_queue",
		NULL, /* P_QUEUE_8: what 8 queues cost without a coordinator */
	};
	double ratio_of[P_N] = { 0 };

	for (int p = 0; p < P_N; p++) {
		double t[ROUNDS_MAX], b[ROUNDS_MAX], lo = 1e300, hi = 0;
		char rr[64];
		/* Relaxed: read after every round's quiescence */
		uint64_t n = atomic_load_explicit(&lat[p].n, memory_order_relaxed);

		n = n < lat[p].cap ? n : lat[p].cap;
		qsort(lat[p].ns, n, sizeof(uint64_t), cmp_u64);
		for (int r = 0; r < rounds; r++) {
			double ratio = v[P_QUEUE][r] > 0 ? v[p][r] / v[P_QUEUE][r] : 0;

			lo = ratio < lo ? ratio : lo;
			hi = ratio > hi ? ratio : hi;
		}
		memcpy(t, v[p], sizeof(t));
		memcpy(b, v[P_QUEUE], sizeof(b));
		qsort(t, rounds, sizeof(t[0]), cmp_double);
		qsort(b, rounds, sizeof(b[0]), cmp_double);
		ratio_of[p] = b[rounds / 2] > 0 ? t[rounds / 2] / b[rounds / 2] : 0.0;
		snprintf(rr, sizeof(rr), "%5.2f [%.2f-%.2f] (%llu)", ratio_of[p], lo, hi,
			 (unsigned long long)full[p]);
		printf("%-22s %9.2f  %-22s %9.2f  %-26s %.1f/%.1f\n", names[p], t[rounds / 2] / 1e6,
		       names[P_QUEUE], b[rounds / 2] / 1e6, rr, pct(lat[p].ns, n, 50) / 1e3,
		       pct(lat[p].ns, n, 99) / 1e3);
	}
	for (int p = 1; p < P_N; p++)
		if (target_names[p])
			bench_target(target_names[p], ratio_of[p],
				     ">=", p == P_SPOT_WIDE_1 || p == P_SPOT_WIDE_8 ? 0.25 : 0.5,
				     "x");
	scale_series(pool_for_scale);
	orbit_worker_pool_destroy(pool);
	free(li);
	for (int p = 0; p < P_N; p++)
		free(lat[p].ns);
	return rc;
}
