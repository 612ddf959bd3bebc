// SPDX-License-Identifier: MIT
/*
 * tests/bench/bench_state_lane.c: what a state lane costs next to the
 * primitives it replaces, measured in one run on the same work (a small
 * state update): run() round trip against a pthread mutex around the same
 * call and against a mutex+condvar hand-off to a dedicated thread;
 * try_post() throughput against a mutex+condvar hand-off queue; both
 * uncontended and with 2 threads (back to back, and with ~100 ns of work
 * outside the lane between calls so the threads really collide). Each
 * figure is the median of interleaved rounds. Posted work drains on the
 * worker pool. The hand-off baseline recycles its requests and its thread
 * takes the whole queue per lock acquisition, as the lane does.
 */
#include "config.h"

#include "orbit_test.h"

#include <pthread.h>
#include <stdatomic.h>

#include <orbit/orbit.h>
#include "bench_target.h"

#define REPS 5

/* The state and the work every variant performs. */
struct state {
	uint64_t count;
	uint64_t mix;
};

static inline int work(struct state *s)
{
	s->count++;
	s->mix = (s->mix ^ s->count) * 0x9e3779b97f4a7c15ull;
	return (int)(s->count & 0x7fffffff);
}

static int lane_work(void *arg)
{
	return work(arg);
}

static uint64_t now(void)
{
	return orbit_test_now_ns();
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "bench: %s\n", what);
		exit(1);
	}
}

/* ---- the lane ---- */

static orbit_worker_pool_t *pool;

static orbit_state_lane_t *lane_make(void)
{
	struct orbit_state_lane_options o = { .size = sizeof(o),
					      .name = "bench",
					      .executor = orbit_worker_pool_executor(pool),
					      .home = ORBIT_HOME_NODE_NONE };
	orbit_state_lane_t *lane;

	check(orbit_state_lane_create(&o, &lane) == 0, "lane create");
	return lane;
}

static void lane_drop(orbit_state_lane_t *lane)
{
	check(orbit_state_lane_close_sync(lane) == 0, "lane close");
	check(orbit_state_lane_destroy(lane) == 0, "lane destroy");
}

/* ---- baselines ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static int mutex_call(struct state *s)
{
	int r;

	pthread_mutex_lock(&mu);
	r = work(s);
	pthread_mutex_unlock(&mu);
	return r;
}

/* Recycled requests kept at most (lib/state_lane.c keeps as many nodes). */
#define HANDOFF_FREE_MAX 256

/* A dedicated thread owns the state; others hand it work through a queue. */
struct hreq {
	struct hreq *next;
	int result;
	bool wait; /* round trip: the submitter waits on done */
	bool done;
	pthread_cond_t cv;
};

struct handoff {
	pthread_mutex_t mu; /* protects the queue, free list, stop, sleeping and every req->done */
	pthread_cond_t cv;
	struct hreq *head, *tail;
	struct hreq *free_reqs; /* recycled posted requests, as the lane recycles its nodes */
	unsigned nfree;		/* at most HANDOFF_FREE_MAX, the lane's cap too */
	bool stop, sleeping;
	struct state *s;
	pthread_t thread;
};

/*
 * The consumer takes the whole queue under one lock acquisition and runs
 * it unlocked (the lane takes its queue in chunks), then settles the
 * batch under one more: the same batching freedom the lane has.
 */
static void *handoff_main(void *p)
{
	struct handoff *h = p;

	pthread_mutex_lock(&h->mu);
	for (;;) {
		struct hreq *r = h->head, *next;

		if (!r) {
			if (h->stop)
				break;
			h->sleeping = true;
			pthread_cond_wait(&h->cv, &h->mu);
			h->sleeping = false;
			continue;
		}
		h->head = h->tail = NULL;
		pthread_mutex_unlock(&h->mu);
		for (struct hreq *x = r; x; x = x->next)
			x->result = work(h->s);
		pthread_mutex_lock(&h->mu);
		for (; r; r = next) {
			next = r->next; /* read first: a waiter's request is gone once done */
			if (r->wait) {
				r->done = true;
				pthread_cond_signal(&r->cv);
			} else if (h->nfree < HANDOFF_FREE_MAX) {
				r->next = h->free_reqs;
				h->free_reqs = r;
				h->nfree++;
			} else {
				free(r);
			}
		}
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

static void handoff_start(struct handoff *h, struct state *s)
{
	memset(h, 0, sizeof(*h));
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	h->s = s;
	h->free_reqs = NULL;
	h->nfree = 0;
	check(pthread_create(&h->thread, NULL, handoff_main, h) == 0, "thread");
}

static void handoff_put_locked(struct handoff *h, struct hreq *r)
{
	r->next = NULL;
	if (h->tail)
		h->tail->next = r;
	else
		h->head = r;
	h->tail = r;
	if (h->sleeping)
		pthread_cond_signal(&h->cv);
}

/* Returns with h->mu held (the caller queues the request and unlocks). */
static struct hreq *handoff_req_get(struct handoff *h)
{
	struct hreq *r;

	pthread_mutex_lock(&h->mu);
	r = h->free_reqs;
	if (r) {
		h->free_reqs = r->next;
		h->nfree--;
		return r;
	}
	pthread_mutex_unlock(&h->mu);
	r = malloc(sizeof(*r));
	check(r != NULL, "malloc");
	pthread_mutex_lock(&h->mu);
	return r;
}

static void handoff_post(struct handoff *h)
{
	struct hreq *r = handoff_req_get(h);

	r->wait = false;
	handoff_put_locked(h, r);
	pthread_mutex_unlock(&h->mu);
}

static int handoff_call(struct handoff *h)
{
	struct hreq r = { .wait = true };

	pthread_cond_init(&r.cv, NULL);
	pthread_mutex_lock(&h->mu);
	handoff_put_locked(h, &r);
	while (!r.done)
		pthread_cond_wait(&r.cv, &h->mu);
	pthread_mutex_unlock(&h->mu);
	pthread_cond_destroy(&r.cv);
	return r.result;
}

/* Stop after everything queued ran; the join is the "all executed" point. */
static void handoff_stop(struct handoff *h)
{
	pthread_mutex_lock(&h->mu);
	h->stop = true;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	pthread_join(h->thread, NULL);
	while (h->free_reqs) {
		struct hreq *r = h->free_reqs;

		h->free_reqs = r->next;
		free(r);
	}
	pthread_cond_destroy(&h->cv);
	pthread_mutex_destroy(&h->mu);
}

/* ---- drivers ---- */

enum kind { K_LANE_RUN, K_MUTEX, K_HANDOFF_CALL, K_LANE_POST, K_HANDOFF_POST };

struct job {
	enum kind kind;
	long n;
	struct state *s;
	orbit_state_lane_t *lane;
	struct handoff *h;
	pthread_barrier_t *start;
	unsigned think; /* iterations of local work between operations */
	long errors;
};

/* Work outside the lane, on the caller's own data. */
static inline void think(unsigned n)
{
	volatile uint64_t x = 1;

	for (unsigned i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
}

static void *job_main(void *p)
{
	struct job *j = p;

	if (j->start)
		pthread_barrier_wait(j->start);
	for (long i = 0; i < j->n; i++) {
		think(j->think);
		switch (j->kind) {
		case K_LANE_RUN:
			j->errors += orbit_state_lane_run(j->lane, lane_work, j->s) < 0;
			break;
		case K_MUTEX:
			mutex_call(j->s);
			break;
		case K_HANDOFF_CALL:
			handoff_call(j->h);
			break;
		case K_LANE_POST:
			j->errors += orbit_state_lane_try_post(j->lane, lane_work, j->s) != 0;
			break;
		case K_HANDOFF_POST:
			handoff_post(j->h);
			break;
		}
	}
	return NULL;
}

/*
 * Run @threads jobs of @n operations each; returns ns per operation over
 * all of them, from the common start until every operation has executed
 * (posted kinds include draining the tail).
 */
static double measure(enum kind kind, int threads, long n, unsigned think_iters)
{
	struct state s = { 0 };
	struct handoff h;
	orbit_state_lane_t *lane = NULL;
	pthread_barrier_t start;
	pthread_t t[2];
	struct job j[2];
	uint64_t t0, t1;
	long errors = 0;

	if (kind == K_LANE_RUN || kind == K_LANE_POST)
		lane = lane_make();
	if (kind == K_HANDOFF_CALL || kind == K_HANDOFF_POST)
		handoff_start(&h, &s);
	pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
	for (int i = 0; i < threads; i++) {
		j[i] = (struct job){ .kind = kind,
				     .n = n,
				     .s = &s,
				     .lane = lane,
				     .h = &h,
				     .start = &start,
				     .think = think_iters };
		check(pthread_create(&t[i], NULL, job_main, &j[i]) == 0, "thread");
	}
	pthread_barrier_wait(&start);
	t0 = now();
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		errors += j[i].errors;
	}
	if (lane)
		lane_drop(lane); /* close_sync: returns when accepted work has run */
	if (kind == K_HANDOFF_CALL || kind == K_HANDOFF_POST)
		handoff_stop(&h);
	t1 = now();
	pthread_barrier_destroy(&start);
	check(errors == 0, "an operation failed");
	check(s.count == (uint64_t)(threads * n), "lost update");
	return (double)(t1 - t0) / (double)(threads * n);
}

/* Per-round ratio range of configuration @a against @b (a/b of ns per op). */
struct range {
	double lo, hi;
};

static int reps = 5;
static double v[16][64];

static struct range ratio_range(int a, int b, bool tput)
{
	struct range r = { 1e30, 0 };

	for (int k = 0; k < reps; k++) {
		double x = tput ? v[b][k] / v[a][k] : v[a][k] / v[b][k];

		r.lo = x < r.lo ? x : r.lo;
		r.hi = x > r.hi ? x : r.hi;
	}
	return r;
}

static void row_ns(const char *name, double ns, const char *base, double base_ns, struct range rr,
		   const char *target)
{
	printf("%-36s %9.1f ns/op   %-34s %9.1f ns/op   ratio %5.2fx [%.2f-%.2f]%s\n", name, ns,
	       base, base_ns, ns / base_ns, rr.lo, rr.hi, target);
}

static void row_tput(const char *name, double ns, const char *base, double base_ns, struct range rr,
		     const char *target)
{
	printf("%-36s %9.2f Mops/s  %-34s %9.2f Mops/s  ratio %5.2fx [%.2f-%.2f]%s\n", name,
	       1e3 / ns, base, 1e3 / base_ns, base_ns / ns, rr.lo, rr.hi, target);
}

/* Every configuration once per round, rounds interleaved: load spikes hit all alike. */
enum cfg {
	C_RUN1,
	C_MTX1,
	C_HCALL1,
	C_RUN2,
	C_MTX2,
	C_RUNT2,
	C_MTXT2,
	C_HCALL2,
	C_POST1,
	C_HPOST1,
	C_POST2,
	C_HPOST2,
	C_COUNT
};

static const struct {
	enum kind kind;
	int threads;
	long n;
	unsigned think;
	const char *group; /* selectable from the command line */
} cfgs[C_COUNT] = {
	[C_RUN1] = { K_LANE_RUN, 1, 2000000, 0, "run" },
	[C_MTX1] = { K_MUTEX, 1, 2000000, 0, "run" },
	[C_HCALL1] = { K_HANDOFF_CALL, 1, 20000, 0, "handoff" },
	[C_RUN2] = { K_LANE_RUN, 2, 2000000, 0, "run" },
	[C_MTX2] = { K_MUTEX, 2, 2000000, 0, "run" },
	[C_RUNT2] = { K_LANE_RUN, 2, 1000000, 32, "run" },
	[C_MTXT2] = { K_MUTEX, 2, 1000000, 32, "run" },
	[C_HCALL2] = { K_HANDOFF_CALL, 2, 20000, 0, "handoff" },
	[C_POST1] = { K_LANE_POST, 1, 500000, 0, "post" },
	[C_HPOST1] = { K_HANDOFF_POST, 1, 500000, 0, "post" },
	[C_POST2] = { K_LANE_POST, 2, 250000, 0, "post" },
	[C_HPOST2] = { K_HANDOFF_POST, 2, 250000, 0, "post" },
};

/*
 * Usage: bench_state_lane [run|post|handoff]: only that group (default
 * all). BENCH_REPS=n sets the rounds (default 5, at most 64); each row
 * prints the median and, in brackets, the range of the per-round ratios.
 */
int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	const char *env = getenv("BENCH_REPS");
	double m[C_COUNT] = { 0 };
	bool on[C_COUNT];
	struct orbit_worker_pool_options po;
	uint64_t t0 = now();

	if (env && atoi(env) > 0)
		reps = atoi(env) < 64 ? atoi(env) : 64;
	for (int c = 0; c < C_COUNT; c++)
		on[c] = !only || !strcmp(only, cfgs[c].group);
	orbit_worker_pool_options_init(&po);
	check(orbit_worker_pool_create(&po, &pool) == 0, "worker pool");
	for (int r = 0; r < reps; r++)
		for (int c = 0; c < C_COUNT; c++)
			if (on[c])
				v[c][r] = measure(cfgs[c].kind, cfgs[c].threads, cfgs[c].n,
						  cfgs[c].think);
	for (int c = 0; c < C_COUNT; c++) {
		double tmp[64];

		memcpy(tmp, v[c], sizeof(tmp));
		m[c] = on[c] ? median(tmp, reps) : 0;
	}

	printf("executor: orbit worker pool, %ld cores; median of %d interleaved rounds "
	       "[per-round ratio range]; work: counter+mix; think: 32 dependent LCG steps "
	       "outside the lane\n",
	       sysconf(_SC_NPROCESSORS_ONLN), reps);
	if (on[C_RUN1]) {
		row_ns("state_lane.run uncontended", m[C_RUN1], "mutex-guarded call", m[C_MTX1],
		       ratio_range(C_RUN1, C_MTX1, false), "");
		row_tput("state_lane.run 2 threads", m[C_RUN2], "mutex-guarded call 2 threads",
			 m[C_MTX2], ratio_range(C_RUN2, C_MTX2, true), "");
		row_tput("state_lane.run 2 threads + think", m[C_RUNT2],
			 "mutex-guarded call 2 thr + think", m[C_MTXT2],
			 ratio_range(C_RUNT2, C_MTXT2, true), "");
	}
	if (on[C_RUN1] && on[C_HCALL1]) {
		row_ns("state_lane.run uncontended", m[C_RUN1], "mutex+condvar hand-off round trip",
		       m[C_HCALL1], ratio_range(C_RUN1, C_HCALL1, false), "");
		row_tput("state_lane.run 2 threads", m[C_RUN2], "mutex+condvar hand-off 2 threads",
			 m[C_HCALL2], ratio_range(C_RUN2, C_HCALL2, true), "");
	}
	if (on[C_POST1]) {
		row_tput("state_lane.try_post 1 producer", m[C_POST1],
			 "mutex+condvar hand-off post", m[C_HPOST1],
			 ratio_range(C_POST1, C_HPOST1, true), "");
		row_tput("state_lane.try_post 2 producers", m[C_POST2],
			 "mutex+condvar hand-off post 2 prod", m[C_HPOST2],
			 ratio_range(C_POST2, C_HPOST2, true), "");
	}
	if (on[C_RUN1]) {
		bench_target("state_lane_run_vs_mutex_call", m[C_RUN1] / m[C_MTX1], "<=", 3, "x");
		bench_target("state_lane_run_2_threads_vs_mutex", m[C_MTX2] / m[C_RUN2], ">=", 1,
			     "x");
		bench_target("state_lane_run_2_threads_think_vs_mutex", m[C_MTXT2] / m[C_RUNT2],
			     ">=", 1, "x");
	}
	if (on[C_POST1])
		bench_target("state_lane_try_post_2_producers_vs_handoff", m[C_HPOST2] / m[C_POST2],
			     ">=", 1.2, "x");
	printf("total %.1f s\n", (double)(now() - t0) / 1e9);
	check(orbit_worker_pool_destroy(pool) == 0, "pool destroy");
	return 0;
}
