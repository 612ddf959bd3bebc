// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_worker_pool.c: the NUMA-aware worker pool (issue 4,
 * spec 07 §6.5 "the shared execution resource"): placement as a pure
 * function of synthetic 2- and 4-node topologies, home-node preference,
 * FIFO among ready tasks, futex sleep when idle, clean shutdown.
 */
#include "config.h"

#include "orbit_test.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <unistd.h>

#include <orbit/orbit.h>

#include "lib/numa_topology.h"
#include "lib/sync.h"

static const int cpus_a[] = { 0, 1, 2, 3 };
static const int cpus_b[] = { 4, 5, 6, 7 };
static const int cpus_c[] = { 8, 9, 10, 11, 12, 13 };
static const int cpus_d[] = { 14, 15 };

static unsigned count_on(const unsigned *plan, unsigned n, unsigned node_idx)
{
	unsigned c = 0;

	for (unsigned i = 0; i < n; i++)
		c += plan[i] == node_idx;
	return c;
}

/* Workers of one node get consecutive indexes, nodes in topology order. */
static void assert_grouped(const unsigned *plan, unsigned n)
{
	for (unsigned i = 1; i < n; i++)
		assert_true(plan[i] >= plan[i - 1]);
}

/* Placement: two equal nodes share threads evenly; the plan is pure. */
static void test_placement_two_nodes_proportional(void **state)
{
	const struct orbit_topology_node nodes[] = {
		{ .node_id = 0, .ncpus = 4, .cpus = cpus_a },
		{ .node_id = 1, .ncpus = 4, .cpus = cpus_b },
	};
	const struct orbit_topology topo = { .nnodes = 2, .nodes = nodes };
	unsigned plan[8], again[8];

	assert_int_equal(orbit__placement_plan(&topo, 8, plan), 0);
	assert_int_equal(count_on(plan, 8, 0), 4);
	assert_int_equal(count_on(plan, 8, 1), 4);
	assert_grouped(plan, 8);
	assert_int_equal(orbit__placement_plan(&topo, 8, again), 0);
	assert_memory_equal(plan, again, sizeof(plan));

	/* 5 threads: 3 + 2, the extra one to the lower index on a tie. */
	assert_int_equal(orbit__placement_plan(&topo, 5, plan), 0);
	assert_int_equal(count_on(plan, 5, 0), 3);
	assert_int_equal(count_on(plan, 5, 1), 2);
	assert_grouped(plan, 5);
}

/* Placement: four nodes of unequal size, one without CPUs. */
static void test_placement_four_nodes_by_cpu_share(void **state)
{
	const struct orbit_topology_node nodes[] = {
		{ .node_id = 0, .ncpus = 4, .cpus = cpus_a },
		{ .node_id = 1, .ncpus = 0, .cpus = NULL }, /* memory-only node */
		{ .node_id = 2, .ncpus = 6, .cpus = cpus_c },
		{ .node_id = 3, .ncpus = 2, .cpus = cpus_d },
	};
	const struct orbit_topology topo = { .nnodes = 4, .nodes = nodes };
	unsigned plan[12];

	/* 12 threads over 12 CPUs: one per CPU, none on the CPU-less node. */
	assert_int_equal(orbit__placement_plan(&topo, 12, plan), 0);
	assert_int_equal(count_on(plan, 12, 0), 4);
	assert_int_equal(count_on(plan, 12, 1), 0);
	assert_int_equal(count_on(plan, 12, 2), 6);
	assert_int_equal(count_on(plan, 12, 3), 2);
	assert_grouped(plan, 12);

	/* 6 threads: one each (3), then 3 extra by share 4:6:2 -> 1,1.5,0.5. */
	assert_int_equal(orbit__placement_plan(&topo, 6, plan), 0);
	assert_int_equal(count_on(plan, 6, 0), 2);
	assert_int_equal(count_on(plan, 6, 2), 3);
	assert_int_equal(count_on(plan, 6, 3), 1);
	assert_int_equal(count_on(plan, 6, 1), 0);
}

/* Placement: fewer threads than CPU nodes go to the biggest nodes. */
static void test_placement_fewer_threads_than_nodes(void **state)
{
	const struct orbit_topology_node nodes[] = {
		{ .node_id = 0, .ncpus = 2, .cpus = cpus_d },
		{ .node_id = 1, .ncpus = 4, .cpus = cpus_a },
		{ .node_id = 2, .ncpus = 6, .cpus = cpus_c },
		{ .node_id = 3, .ncpus = 4, .cpus = cpus_b },
	};
	const struct orbit_topology topo = { .nnodes = 4, .nodes = nodes };
	unsigned plan[2];

	assert_int_equal(orbit__placement_plan(&topo, 2, plan), 0);
	assert_int_equal(plan[0], 1); /* 4 CPUs, lower index than node 3 */
	assert_int_equal(plan[1], 2); /* 6 CPUs */
	assert_int_equal(orbit__placement_plan(&topo, 1, plan), 0);
	assert_int_equal(plan[0], 2);
}

/* Placement and create refuse bad topologies with -EINVAL. */
static void test_placement_invalid_topologies_einval(void **state)
{
	struct orbit_topology_node nodes[2] = {
		{ .node_id = 0, .ncpus = 4, .cpus = cpus_a },
		{ .node_id = 0, .ncpus = 4, .cpus = cpus_b }, /* duplicate id */
	};
	struct orbit_topology topo = { .nnodes = 2, .nodes = nodes };
	struct orbit_worker_pool_options o;
	orbit_worker_pool_t *p = NULL;
	unsigned plan[4];

	assert_int_equal(orbit__placement_plan(&topo, 4, plan), -EINVAL);
	nodes[1].node_id = 1;
	assert_int_equal(orbit__placement_plan(&topo, 0, plan), -EINVAL);
	assert_int_equal(orbit__placement_plan(&topo, 4, plan), 0);
	nodes[1].cpus = NULL; /* ncpus > 0 without a list */
	assert_int_equal(orbit__placement_plan(&topo, 4, plan), -EINVAL);
	nodes[1].cpus = cpus_b;
	nodes[0].ncpus = nodes[1].ncpus = 0; /* no CPU anywhere */
	assert_int_equal(orbit__placement_plan(&topo, 4, plan), -EINVAL);
	topo.nnodes = 0;
	assert_int_equal(orbit__placement_plan(&topo, 4, plan), -EINVAL);

	orbit_worker_pool_options_init(&o);
	o.topology = &topo;
	assert_int_equal(orbit_worker_pool_create(&o, &p), -EINVAL);
	assert_null(p);
	assert_int_equal(orbit_worker_pool_create(NULL, NULL), -EINVAL);
	o.size = 0;
	assert_int_equal(orbit_worker_pool_create(&o, &p), -EINVAL);
}

/* The discovered topology (1 node here, or the real NUMA nodes) works. */
static void test_pool_discovered_topology_degrades_cleanly(void **state)
{
	struct orbit__topology_buf b;
	struct orbit_worker_pool_stats st;
	orbit_worker_pool_t *p;

	assert_int_equal(orbit__topology_discover(&b), 0);
	assert_true(b.topo.nnodes >= 1);
	assert_int_equal(orbit__topology_validate(&b.topo), 0);
#ifndef ORBIT_HAVE_NUMA
	assert_int_equal(b.topo.nnodes, 1);
#endif
	assert_int_equal(orbit_worker_pool_create(NULL, &p), 0);
	assert_int_equal(orbit_worker_pool_stats(p, &st), 0);
	assert_int_equal(st.nthreads, orbit__topology_ncpus(&b.topo));
	assert_int_equal(st.nnodes, b.topo.nnodes);
	assert_int_equal(st.pin_failures, 0); /* real CPUs pin fine */
	assert_int_equal(orbit_worker_pool_current_node(), ORBIT_NODE_ANY);
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
	orbit__topology_free(&b);
}

struct node_probe {
	atomic_int node;
	atomic_int done;
};

static void probe_task(void *arg)
{
	struct node_probe *pr = arg;

	atomic_store(&pr->node, orbit_worker_pool_current_node());
	atomic_store(&pr->done, 1);
}

static void wait_idle(orbit_worker_pool_t *p, unsigned n)
{
	struct orbit_worker_pool_stats st;

	for (int i = 0; i < 5000; i++) {
		orbit_worker_pool_stats(p, &st);
		if (st.idle == n)
			return;
		usleep(1000);
	}
	fail_msg("workers did not go idle");
}

/* A pool of @nthreads unpinned workers on the synthetic @topo whose idle
 * workers sleep at once (no poll: no stealing race), with the standby
 * option as @standby says. */
static orbit_worker_pool_t *synthetic_pool_of(const struct orbit_topology *topo, unsigned nthreads,
					      bool standby)
{
	struct orbit_worker_pool_options o;
	orbit_worker_pool_t *p = NULL;

	orbit_worker_pool_options_init(&o);
	o.topology = topo;
	o.nthreads = nthreads;
	o.no_pin = true; /* its CPUs may not exist here */
	o.spin_polls = ORBIT_WORKER_POOL_NO_SPIN;
	o.standby = standby;
	assert_int_equal(orbit_worker_pool_create(&o, &p), 0);
	return p;
}

static orbit_worker_pool_t *synthetic_pool(const struct orbit_topology *topo, unsigned nthreads)
{
	return synthetic_pool_of(topo, nthreads, false);
}

/* A task with a home node runs on a worker of that node (synthetic 4 nodes). */
static void test_pool_prefers_home_node_workers(void **state)
{
	const struct orbit_topology_node nodes[] = {
		{ .node_id = 0, .ncpus = 4, .cpus = cpus_a },
		{ .node_id = 1, .ncpus = 4, .cpus = cpus_b },
		{ .node_id = 5, .ncpus = 6, .cpus = cpus_c },
		{ .node_id = 7, .ncpus = 2, .cpus = cpus_d },
	};
	const struct orbit_topology topo = { .nnodes = 4, .nodes = nodes };
	const int ids[] = { 0, 1, 5, 7 };
	orbit_worker_pool_t *p = synthetic_pool(&topo, 4);
	orbit_executor_t ex = orbit_worker_pool_executor(p);
	for (int round = 0; round < 10; round++) {
		for (int k = 0; k < 4; k++) {
			struct node_probe pr = { .node = -2 };

			wait_idle(p, 4);
			assert_int_equal(ex.submit(ex.ctx, probe_task, &pr, ids[k]), 0);
			while (!atomic_load(&pr.done))
				usleep(100);
			assert_int_equal(atomic_load(&pr.node), ids[k]);
		}
	}
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
}

struct fifo_rec {
	pthread_mutex_t m;
	int order[64];
	int n;
	atomic_int gate;
};

struct fifo_arg {
	struct fifo_rec *r;
	int id;
};

static void gate_task(void *arg)
{
	struct fifo_rec *r = arg;

	while (!atomic_load(&r->gate))
		usleep(100);
}

static void rec_task(void *arg)
{
	struct fifo_arg *a = arg;

	pthread_mutex_lock(&a->r->m);
	a->r->order[a->r->n++] = a->id;
	pthread_mutex_unlock(&a->r->m);
}

/* The documented order among ready owners: FIFO. */
static void test_pool_ready_tasks_run_fifo(void **state)
{
	const struct orbit_topology_node nodes[] = { { .node_id = 0, .ncpus = 4, .cpus = cpus_a } };
	const struct orbit_topology topo = { .nnodes = 1, .nodes = nodes };
	struct orbit_worker_pool_options o;
	struct fifo_rec r = { .m = PTHREAD_MUTEX_INITIALIZER };
	struct fifo_arg args[40];
	orbit_worker_pool_t *p;
	orbit_executor_t ex;

	orbit_worker_pool_options_init(&o);
	o.topology = &topo;
	o.nthreads = 1;
	o.no_pin = true;
	assert_int_equal(orbit_worker_pool_create(&o, &p), 0);
	ex = orbit_worker_pool_executor(p);
	assert_int_equal(ex.submit(ex.ctx, gate_task, &r, ORBIT_NODE_ANY), 0);
	for (int i = 0; i < 40; i++) {
		args[i] = (struct fifo_arg){ &r, i };
		assert_int_equal(ex.submit(ex.ctx, rec_task, &args[i], i % 3 - 1), 0);
	}
	atomic_store(&r.gate, 1);
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
	assert_int_equal(r.n, 40);
	for (int i = 0; i < 40; i++)
		assert_int_equal(r.order[i], i);
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void noop_task(void *arg)
{
	atomic_fetch_add((atomic_int *)arg, 1);
}

/* Idle workers sleep on the futex: no CPU burnt while nothing is ready. */
static void test_pool_idle_workers_sleep_on_futex(void **state)
{
	struct orbit_worker_pool_options o;
	struct orbit_worker_pool_stats st;
	orbit_worker_pool_t *p;
	orbit_executor_t ex;
	atomic_int n = 0;
	double c0, c1;

	orbit_worker_pool_options_init(&o);
	o.nthreads = 4;
	assert_int_equal(orbit_worker_pool_create(&o, &p), 0);
	ex = orbit_worker_pool_executor(p);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(ex.submit(ex.ctx, noop_task, &n, ORBIT_NODE_ANY), 0);
	while (atomic_load(&n) < 1000)
		usleep(100);
	wait_idle(p, 4);
	c0 = cpu_seconds();
	usleep(200 * 1000);
	c1 = cpu_seconds();
	assert_true(c1 - c0 < 0.05); /* four spinning threads would burn ~0.4-0.8 s */
	assert_int_equal(orbit_worker_pool_stats(p, &st), 0);
	assert_int_equal(st.idle, 4);
	assert_true(st.sleeps >= 4);
	assert_int_equal(st.executed, 1000);
	assert_int_equal(st.submitted, 1000);
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
}

/* A pool of @nthreads workers on the discovered topology (the options
 * orbit_worker_pool_options_init() gives, but for the count). */
static orbit_worker_pool_t *pool_of(unsigned nthreads)
{
	const struct orbit_worker_pool_options o = { .size = sizeof(o), .nthreads = nthreads };
	orbit_worker_pool_t *p = NULL;

	assert_int_equal(orbit_worker_pool_create(&o, &p), 0);
	return p;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/*
 * A burst of tasks submitted while the one worker sleeps wakes it once:
 * a submitter that sees a wake in flight does not make another (before,
 * each submission until the woken worker ran and uncounted itself made a
 * FUTEX_WAKE: 7.6 per sleep in bench_spot_executor PerActor 1,024 Actors).
 * The median round is asserted: wait_idle() returns once the worker is
 * counted idle (WP-W1), before it is in FUTEX_WAIT, and a round where it
 * is preempted in that gap costs up to two wakes per submission (a wake
 * that woke nobody, then one ungated); the old pool made about one per
 * submission in every round.
 */
static void test_pool_burst_on_sleeping_worker_wakes_it_once(void **state)
{
	orbit_worker_pool_t *p = pool_of(1);
	orbit_executor_t ex = orbit_worker_pool_executor(p);
	struct orbit_worker_pool_stats st;
	atomic_int n = 0;
	enum { rounds = 51, burst = 32 };
	uint64_t wakes[rounds];

	for (int r = 0; r < rounds; r++) {
		uint64_t w0;

		wait_idle(p, 1);
		assert_int_equal(orbit_worker_pool_stats(p, &st), 0);
		w0 = st.wakes;
		for (int i = 0; i < burst; i++)
			assert_int_equal(ex.submit(ex.ctx, noop_task, &n, ORBIT_NODE_ANY), 0);
		while (atomic_load(&n) < (r + 1) * burst)
			usleep(50);
		assert_int_equal(orbit_worker_pool_stats(p, &st), 0);
		wakes[r] = st.wakes - w0;
	}
	qsort(wakes, rounds, sizeof(wakes[0]), cmp_u64);
	print_message("wakes per burst of %d: min %llu median %llu max %llu\n", burst,
		      (unsigned long long)wakes[0], (unsigned long long)wakes[rounds / 2],
		      (unsigned long long)wakes[rounds - 1]);
	assert_true(wakes[rounds / 2] <= 2);
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
}

static atomic_int gap_armed, gap_held, gap_release;

/* The sleep hook: hold the worker between WP-W1 and FUTEX_WAIT once armed. */
static void hold_in_gap(void)
{
	if (!atomic_exchange(&gap_armed, 0))
		return;
	atomic_store(&gap_held, 1);
	while (!atomic_load(&gap_release))
		usleep(100);
}

struct submit_arg {
	orbit_executor_t ex;
	atomic_int *n;
};

static void *submit_one(void *arg)
{
	struct submit_arg *a = arg;

	assert_int_equal(a->ex.submit(a->ex.ctx, noop_task, a->n, ORBIT_NODE_ANY), 0);
	return NULL;
}

/*
 * A submission while the only sleeper sits between WP-W1 and FUTEX_WAIT
 * (held there by the test hook, as a preemption would) makes at most two
 * FUTEX_WAKE calls: the gated one wakes nobody, the ungated one after the
 * second look, then the submitter returns. A waker that went round again
 * while a task and an uncovered sleeper were there spun on FUTEX_WAKE
 * until the sleeper got into the wait (here: until the test let it go).
 */
static void test_pool_wake_bounded_while_sleeper_not_in_wait(void **state)
{
	struct orbit_worker_pool_options o;
	struct orbit_worker_pool_stats st;
	orbit_worker_pool_t *p;
	struct submit_arg a;
	atomic_int n = 0;
	pthread_t th;
	uint64_t w0, w1;

	orbit_worker_pool_options_init(&o);
	o.nthreads = 1;
	o.spin_polls = ORBIT_WORKER_POOL_NO_SPIN;
	assert_int_equal(orbit_worker_pool_create(&o, &p), 0);
	a = (struct submit_arg){ orbit_worker_pool_executor(p), &n };
	atomic_store(&gap_held, 0);
	atomic_store(&gap_release, 0);
	atomic_store(&orbit__worker_pool_test_sleep_hook, hold_in_gap);
	/* Arm, then make the worker go to sleep again through the gap. */
	atomic_store(&gap_armed, 1);
	assert_int_equal(a.ex.submit(a.ex.ctx, noop_task, &n, ORBIT_NODE_ANY), 0);
	for (int i = 0; i < 20000 && !atomic_load(&gap_held); i++)
		usleep(100);
	assert_true(atomic_load(&gap_held));
	assert_int_equal(orbit_worker_pool_stats(p, &st), 0);
	w0 = st.wakes;
	assert_int_equal(pthread_create(&th, NULL, submit_one, &a), 0);
	usleep(100 * 1000); /* the submitter's time: it should be done by now */
	assert_int_equal(orbit_worker_pool_stats(p, &st), 0);
	w1 = st.wakes;
	atomic_store(&gap_release, 1);
	assert_int_equal(pthread_join(th, NULL), 0);
	while (atomic_load(&n) < 2)
		usleep(100);
	wait_idle(p, 1);
	atomic_store(&orbit__worker_pool_test_sleep_hook, NULL);
	print_message("wakes of one submission, sleeper held in the gap: %llu\n",
		      (unsigned long long)(w1 - w0));
	assert_true(w1 - w0 <= 2);
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
}

struct pair_probe {
	atomic_int started, overlapped;
};

/* Start, then wait (up to 2 s) for the other task of the pair to start. */
static void pair_task(void *arg)
{
	struct pair_probe *pp = arg;

	atomic_fetch_add(&pp->started, 1);
	for (int i = 0; i < 20000 && atomic_load(&pp->started) < 2; i++)
		usleep(100);
	if (atomic_load(&pp->started) == 2)
		atomic_fetch_add(&pp->overlapped, 1);
}

/*
 * Two tasks submitted back to back while both workers sleep run at once:
 * the wakes in flight are counted per sleeper, so the second submitter
 * still wakes the second sleeper (and a worker that took a task and sees
 * another ready wakes a sleeper too). With one wake per node and no
 * worker's wake the second task waited behind the first.
 */
static void test_pool_tasks_submitted_together_run_in_parallel(void **state)
{
	orbit_worker_pool_t *p = pool_of(2);
	orbit_executor_t ex = orbit_worker_pool_executor(p);

	for (int r = 0; r < 20; r++) {
		struct pair_probe pp = { 0 };

		wait_idle(p, 2);
		assert_int_equal(ex.submit(ex.ctx, pair_task, &pp, ORBIT_NODE_ANY), 0);
		assert_int_equal(ex.submit(ex.ctx, pair_task, &pp, ORBIT_NODE_ANY), 0);
		while (atomic_load(&pp.started) < 2)
			usleep(100);
		wait_idle(p, 2); /* both returned: pp may go */
		assert_int_equal(atomic_load(&pp.overlapped), 2);
	}
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
}

/*
 * Two tasks homed to node 0 of a synthetic 2-node topology, one worker
 * per node, both asleep, run at once: the first submitter wakes node 0's
 * worker, the second sees that wake in flight and skips, and the woken
 * worker, taking the first task with the second ready and no sleeper on
 * its node, wakes node 1's worker (the order of pool_submit()), which
 * steals the second. A chain wake that looked at its own node only left
 * the second task waiting behind the first.
 */
static void test_pool_chain_wake_falls_back_to_other_node(void **state)
{
	const struct orbit_topology_node nodes[] = {
		{ .node_id = 0, .ncpus = 4, .cpus = cpus_a },
		{ .node_id = 1, .ncpus = 4, .cpus = cpus_b },
	};
	const struct orbit_topology topo = { .nnodes = 2, .nodes = nodes };
	orbit_worker_pool_t *p = synthetic_pool(&topo, 2);
	orbit_executor_t ex = orbit_worker_pool_executor(p);
	for (int r = 0; r < 10; r++) {
		struct pair_probe pp = { 0 };

		wait_idle(p, 2);
		assert_int_equal(ex.submit(ex.ctx, pair_task, &pp, 0), 0);
		assert_int_equal(ex.submit(ex.ctx, pair_task, &pp, 0), 0);
		while (atomic_load(&pp.started) < 2)
			usleep(100);
		wait_idle(p, 2); /* both returned: pp may go */
		assert_int_equal(atomic_load(&pp.overlapped), 2);
	}
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
}

struct poll_probe {
	atomic_int may, done;
};

static void poll_probe_task(void *arg)
{
	struct poll_probe *pp = arg;

	atomic_store(&pp->may, orbit__worker_alone_on_cpu() ? 0 : 1);
	atomic_store(&pp->done, 1);
}

/* What !orbit__worker_alone_on_cpu() answers on a worker of a fresh 1-thread
 * pool (on @topo, pinned; NULL: the discovered topology). */
static int probe_pool_worker(const struct orbit_topology *topo)
{
	struct orbit_worker_pool_options o;
	struct poll_probe pp = { 0 };
	orbit_worker_pool_t *p;
	orbit_executor_t ex;

	orbit_worker_pool_options_init(&o);
	o.nthreads = 1;
	o.topology = topo;
	assert_int_equal(orbit_worker_pool_create(&o, &p), 0);
	ex = orbit_worker_pool_executor(p);
	assert_int_equal(ex.submit(ex.ctx, poll_probe_task, &pp, ORBIT_NODE_ANY), 0);
	while (!atomic_load(&pp.done))
		usleep(100);
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
	return atomic_load(&pp.may);
}

/*
 * A drain on a worker that may run on one CPU only, in a pool whose
 * topology has one CPU (the process pinned to one, or a 1-CPU machine),
 * is told not to poll for more work: whoever would submit it needs the
 * CPU the poll holds (lib/sync.h). Off a worker, on a worker with two
 * CPUs and nothing else ready, and on a worker pinned to a 1-CPU node of
 * a 2-CPU topology (its submitters may run on the other), it may.
 */
static void test_pool_worker_on_one_cpu_does_not_poll(void **state)
{
	int cpu[2] = { -1, -1 }, n = 0;
	cpu_set_t all, one;

	assert_false(orbit__worker_alone_on_cpu()); /* not a pool worker */
	assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &all))
			cpu[n++] = c;
	assert_true(n >= 1);
	if (n == 2) {
		const struct orbit_topology_node nodes[] = {
			{ .node_id = 0, .ncpus = 1, .cpus = &cpu[0] },
			{ .node_id = 1, .ncpus = 1, .cpus = &cpu[1] },
		};
		const struct orbit_topology topo = { .nnodes = 2, .nodes = nodes };

		assert_int_equal(probe_pool_worker(NULL), 1);
		assert_int_equal(probe_pool_worker(&topo), 1); /* pinned to one of two */
	}
	CPU_ZERO(&one);
	CPU_SET(cpu[0], &one);
	/* This thread only; the pool's threads inherit it (and its topology). */
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	assert_int_equal(probe_pool_worker(NULL), 0);
	assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
}

struct spin_probe {
	atomic_int started, granted, release;
	/* Tasks done with the probe: the last access of each, seq_cst, so
	 * the round that sees all @n may reuse its memory (TSan: the idle
	 * count wait_idle() reads is relaxed and orders nothing). */
	atomic_int finished;
	int n; /* tasks that wait for each other */
};

static void spin_probe_task(void *arg)
{
	struct spin_probe *sp = arg;
	bool may = orbit__worker_spin_begin();

	if (may)
		atomic_fetch_add(&sp->granted, 1);
	atomic_fetch_add(&sp->started, 1);
	while (!atomic_load(&sp->release)) /* all @n hold their answer at once */
		usleep(100);
	if (may)
		orbit__worker_spin_end();
	atomic_fetch_add(&sp->finished, 1); /* last: @sp may be gone after it */
}

/* Tasks granted a spin when @n run at once on a pool of @n workers on a
 * synthetic topology of @ncpus CPUs (not pinned, no polls of its own), in
 * each of two rounds on the same pool (@got[0], @got[1]). */
static void spinners_granted(unsigned ncpus, unsigned n, int got[2])
{
	static const int cpus[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	const struct orbit_topology_node node = { .node_id = 0, .ncpus = ncpus, .cpus = cpus };
	const struct orbit_topology topo = { .nnodes = 1, .nodes = &node };
	struct orbit_worker_pool_options o;
	orbit_worker_pool_t *p;
	orbit_executor_t ex;

	orbit_worker_pool_options_init(&o);
	o.topology = &topo;
	o.nthreads = n;
	o.no_pin = true;			  /* synthetic CPUs may not exist here */
	o.spin_polls = ORBIT_WORKER_POOL_NO_SPIN; /* only the tasks ask for spins */
	assert_int_equal(orbit_worker_pool_create(&o, &p), 0);
	ex = orbit_worker_pool_executor(p);
	for (int r = 0; r < 2; r++) {
		struct spin_probe sp = { .n = (int)n };

		for (unsigned k = 0; k < n; k++)
			assert_int_equal(ex.submit(ex.ctx, spin_probe_task, &sp, ORBIT_NODE_ANY),
					 0);
		while (atomic_load(&sp.started) < (int)n)
			usleep(100);
		atomic_store(&sp.release, 1);
		while (atomic_load(&sp.finished) < (int)n) /* every spin of this round ended */
			usleep(100);
		wait_idle(p, n); /* and every worker back asleep */
		got[r] = atomic_load(&sp.granted);
	}
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
}

/*
 * At most one thread fewer than the topology's CPUs (at least one) spins
 * at once (lib/sync.h, orbit__worker_spin_begin()): one CPU stays for a
 * submitter outside the pool. Spins ended are given back: a second round
 * gets as many on the same pool. Off a worker a spin is always allowed
 * and not counted.
 */
static void test_pool_leaves_one_cpu_unspun(void **state)
{
	static const unsigned cases[][3] = {
		/* CPUs, tasks at once, spins granted */
		{ 2, 2, 1 },
		{ 4, 4, 3 },
		{ 1, 2, 1 },
		{ 8, 3, 3 },
	};
	int got[2];

	assert_true(orbit__worker_spin_begin()); /* not a pool worker */
	orbit__worker_spin_end();
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		spinners_granted(cases[i][0], cases[i][1], got);
		assert_int_equal(got[0], (int)cases[i][2]);
		assert_int_equal(got[1], (int)cases[i][2]); /* the first round's came back */
	}
}

/* A task that holds its worker until released, and one that only marks
 * that it ran; both note the thread they ran on. */
struct standby_probe {
	atomic_int held, release, quick_ran;
	pthread_t held_on, quick_on;
};

static void held_task(void *arg)
{
	struct standby_probe *sp = arg;

	sp->held_on = pthread_self();
	atomic_store(&sp->held, 1); /* seq_cst: held_on before it */
	while (!atomic_load(&sp->release))
		usleep(100);
}

static void quick_task(void *arg)
{
	struct standby_probe *sp = arg;

	sp->quick_on = pthread_self();
	atomic_store(&sp->quick_ran, 1); /* seq_cst: quick_on before it */
}

/* Pool of 2 unpinned, non-polling workers on a synthetic node of 2 CPUs:
 * with @standby one slot (CPUs - 1), else one per worker. One task holds a worker; the
 * next, submitted after it, must still run, on the other worker, while the
 * first holds; returns the pool's standby_runs after both. */
static uint64_t held_then_quick(bool standby)
{
	static const int cpus[] = { 0, 1 };
	const struct orbit_topology_node node = { .node_id = 0, .ncpus = 2, .cpus = cpus };
	const struct orbit_topology topo = { .nnodes = 1, .nodes = &node };
	orbit_worker_pool_t *p = synthetic_pool_of(&topo, 2, standby);
	orbit_executor_t ex = orbit_worker_pool_executor(p);
	struct orbit_worker_pool_stats st;
	struct standby_probe sp = { 0 };

	wait_idle(p, 2);
	assert_int_equal(ex.submit(ex.ctx, held_task, &sp, ORBIT_NODE_ANY), 0);
	for (int i = 0; i < 5000 && !atomic_load(&sp.held); i++)
		usleep(1000);
	assert_true(atomic_load(&sp.held));
	assert_int_equal(ex.submit(ex.ctx, quick_task, &sp, ORBIT_NODE_ANY), 0);
	for (int i = 0; i < 5000 && !atomic_load(&sp.quick_ran); i++)
		usleep(1000);
	assert_true(atomic_load(&sp.quick_ran)); /* ran while the first held */
	assert_false(pthread_equal(sp.held_on, sp.quick_on));
	/* Counted before the task ran (quick_ran's store orders it). */
	assert_int_equal(orbit_worker_pool_stats(p, &st), 0);
	atomic_store(&sp.release, 1);
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
	return st.standby_runs;
}

/*
 * The standby option, one worker per CPU: one worker fewer than the CPUs
 * takes every task at once; the other is on standby and runs a task only
 * once it waited a whole look. A task behind a handler that runs long
 * still runs, on the standby worker, while that handler holds (07 §10:
 * PerActor Actors overlap); without the option the other worker takes it
 * at once, not on standby. Without standby looks the second task waited
 * for the first.
 */
static void test_pool_standby_worker_runs_a_task_behind_a_long_handler(void **state)
{
	(void)state;
	assert_int_equal(held_then_quick(true), 1);
	assert_int_equal(held_then_quick(false), 0);
}

struct shut {
	orbit_executor_t ex;
	orbit_worker_pool_t *pool;
	atomic_int ran, refused, deadlk;
};

static void resubmit_task(void *arg)
{
	struct shut *s = arg;

	usleep(50);
	if (orbit_worker_pool_destroy(s->pool) == -EDEADLK)
		atomic_fetch_add(&s->deadlk, 1);
	atomic_fetch_add(&s->ran, 1);
	if (s->ex.submit(s->ex.ctx, resubmit_task, s, ORBIT_NODE_ANY) == -EPIPE)
		atomic_fetch_add(&s->refused, 1);
}

/*
 * Destroy runs every accepted task, refuses new ones with -EPIPE (also
 * from running tasks), and refuses to run from a worker (-EDEADLK).
 */
static void test_pool_destroy_finishes_accepted_and_refuses_new(void **state)
{
	struct orbit_worker_pool_options o;
	struct shut s = { 0 };
	orbit_worker_pool_t *p;
	int accepted = 0;

	orbit_worker_pool_options_init(&o);
	o.nthreads = 2;
	assert_int_equal(orbit_worker_pool_create(&o, &p), 0);
	s.ex = orbit_worker_pool_executor(p);
	s.pool = p;
	for (int i = 0; i < 200; i++)
		accepted += s.ex.submit(s.ex.ctx, resubmit_task, &s, ORBIT_NODE_ANY) == 0;
	assert_int_equal(accepted, 200);
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
	/* Every accepted task ran; each ran task resubmitted; once destroy
	 * began, resubmits were refused, and every resubmit that was accepted
	 * ran too: ran == 200 + accepted resubmits == 200 + (ran - refused). */
	assert_int_equal(atomic_load(&s.refused), 200);
	assert_int_equal(atomic_load(&s.deadlk), atomic_load(&s.ran));
}

struct closer {
	orbit_worker_pool_t *pool;
	int rc; /* destroy's, read by the test once done is set */
	atomic_int done;
};

/* No cmocka assertion here: a failure must not jump from another thread. */
static void *destroy_main(void *arg)
{
	struct closer *c = arg;

	c->rc = orbit_worker_pool_destroy(c->pool);
	atomic_store(&c->done, 1);
	return NULL;
}

static void note_task(void *arg)
{
	atomic_store((atomic_int *)arg, 1);
}

/*
 * Destroy ends an idle worker's poll: a worker left polling by a large
 * spin_polls (INT_MAX polls, seconds of CPU pauses) sees the pool closed
 * and exits, so destroy returns within a bound (1 s here, milliseconds in
 * practice) instead of waiting for the poll to run out. Synthetic
 * 2-CPU topology, unpinned: the worker is not alone on a CPU and may spin.
 */
static void test_pool_destroy_ends_idle_polls(void **state)
{
	static const int cpus[] = { 0, 1 };
	const struct orbit_topology_node node = { .node_id = 0, .ncpus = 2, .cpus = cpus };
	const struct orbit_topology topo = { .nnodes = 1, .nodes = &node };
	struct orbit_worker_pool_options o;
	struct orbit_worker_pool_stats st;
	/* static: a destroy thread left behind on failure writes here later */
	static struct closer c;
	static atomic_int ran;
	orbit_executor_t ex;
	pthread_t t;
	uint64_t t0, waited_ms;

	orbit_worker_pool_options_init(&o);
	o.topology = &topo;
	o.nthreads = 1;
	o.no_pin = true;
	o.spin_polls = INT_MAX;
	assert_int_equal(orbit_worker_pool_create(&o, &c.pool), 0);
	ex = orbit_worker_pool_executor(c.pool);
	assert_int_equal(ex.submit(ex.ctx, note_task, &ran, ORBIT_NODE_ANY), 0);
	while (!atomic_load(&ran))
		usleep(100);
	usleep(20000); /* the worker is deep in its idle poll: awake, never slept */
	orbit_worker_pool_stats(c.pool, &st);
	assert_int_equal(st.sleeps, 0);
	assert_int_equal(st.idle, 0);
	t0 = orbit_test_now_ns();
	assert_int_equal(pthread_create(&t, NULL, destroy_main, &c), 0);
	while (!atomic_load(&c.done) && orbit_test_now_ns() - t0 < 1000000000ull)
		usleep(1000);
	waited_ms = (orbit_test_now_ns() - t0) / 1000000;
	if (!atomic_load(&c.done)) {
		pthread_detach(t); /* still joining the polling worker */
		fail_msg("destroy still waited for an idle poll after %llu ms",
			 (unsigned long long)waited_ms);
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(c.rc, 0);
	print_message("destroy beside an INT_MAX-poll idle worker took %llu ms\n",
		      (unsigned long long)waited_ms);
}

/*
 * The options contract (issue 10, base/options.h): options from an older
 * build (cut before their last field, spin_polls) are accepted with it
 * defaulted; from a newer build, accepted with a zero unknown tail and
 * -E2BIG with a set one; a negative spin_polls other than
 * ORBIT_WORKER_POOL_NO_SPIN is -EINVAL.
 */
/* The children of the test below: a pthread call that fails on an error-checking mutex. */
static void relock(void *m)
{
	orbit__mutex_lock((pthread_mutex_t *)m);
	orbit__mutex_lock((pthread_mutex_t *)m); /* held by this thread: EDEADLK */
}
enum { RELOCK_LINE = __LINE__ - 2 };

static void unlock_unheld(void *m)
{
	orbit__mutex_unlock((pthread_mutex_t *)m); /* not held by this thread: EPERM */
}
enum { UNLOCK_LINE = __LINE__ - 2 };

/*
 * lib/sync.h: a failing lock or unlock aborts naming the caller's file, line and function (as
 * orbit__die does), not sync.h's, and the call and its error.
 */
static void test_sync_mutex_abort_names_the_caller(void **state)
{
	pthread_mutexattr_t ma;
	pthread_mutex_t m;
	char buf[512], want[96];

	(void)state;
	assert_int_equal(pthread_mutexattr_init(&ma), 0);
	assert_int_equal(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK), 0);
	assert_int_equal(pthread_mutex_init(&m, &ma), 0);
	orbit__mutex_lock(&m); /* works: returns */
	orbit__mutex_unlock(&m);
	assert_int_equal(orbit_test_abort_output(relock, &m, buf, sizeof(buf)), 0);
	snprintf(want, sizeof(want),
		 "test_worker_pool.c:%d (relock): pthread_mutex_lock: ", RELOCK_LINE);
	if (!strstr(buf, want))
		fail_msg("no \"%s\" in \"%s\"", want, buf);
	assert_non_null(strstr(buf, strerror(EDEADLK)));
	orbit__mutex_lock(&m); /* held here: the child is not its owner */
	assert_int_equal(orbit_test_abort_output(unlock_unheld, &m, buf, sizeof(buf)), 0);
	snprintf(want, sizeof(want),
		 "test_worker_pool.c:%d (unlock_unheld): pthread_mutex_unlock: ", UNLOCK_LINE);
	if (!strstr(buf, want))
		fail_msg("no \"%s\" in \"%s\"", want, buf);
	assert_non_null(strstr(buf, strerror(EPERM)));
	assert_null(strstr(buf, "sync.h"));
	orbit__mutex_unlock(&m);
	pthread_mutex_destroy(&m);
	pthread_mutexattr_destroy(&ma);
}

static void test_options_older_accepted_newer_tail_e2big(void **state)
{
	struct {
		struct orbit_worker_pool_options o;
		uint64_t unknown;
	} big;
	struct orbit_worker_pool_options o;
	orbit_worker_pool_t *p = NULL;

	(void)state;
	orbit_worker_pool_options_init(&o);
	o.nthreads = 1;
	o.spin_polls = -5; /* not read: past the caller's size */
	o.size = offsetof(struct orbit_worker_pool_options, spin_polls);
	assert_int_equal(orbit_worker_pool_create(&o, &p), 0);
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
	o.size = sizeof(o);
	assert_int_equal(orbit_worker_pool_create(&o, &p), -EINVAL);
	memset(&big, 0, sizeof(big));
	orbit_worker_pool_options_init(&big.o);
	big.o.nthreads = 1;
	big.o.size = sizeof(big);
	assert_int_equal(orbit_worker_pool_create(&big.o, &p), 0);
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
	big.unknown = 1;
	assert_int_equal(orbit_worker_pool_create(&big.o, &p), -E2BIG);
}

/* ---- fork: an inherited pool refuses with -ECHILD ------------------------------ */

#define FORK_WAIT_MS 10000 /* a child that hangs (the old behaviour) is killed: a failure */

struct fork_pool_case {
	orbit_worker_pool_t *pool;
	_Atomic int ran;
};

static void fork_count_task(void *arg)
{
	struct fork_pool_case *c = arg;

	atomic_fetch_add_explicit(&c->ran, 1, memory_order_relaxed);
}

/* In the child: each call on the parent's pool; returns the first step that
 * did not answer as documented, 0 when all did. */
static int pool_calls_in_child(void *arg)
{
	struct fork_pool_case *c = arg;
	orbit_executor_t ex = orbit_worker_pool_executor(c->pool);
	struct orbit_worker_pool_stats st;

	if (ex.submit(ex.ctx, fork_count_task, c, ORBIT_NODE_ANY) != -ECHILD)
		return 1; /* before: queued, and never run (no worker here) */
	/* stats reads the counters as they were at the fork: allowed */
	if (orbit_worker_pool_stats(c->pool, &st) != 0 || st.nthreads != 2)
		return 2;
	if (orbit_worker_pool_destroy(c->pool) != -ECHILD)
		return 3; /* before: waited for workers that do not exist here */
	if (orbit_worker_pool_current_node() != ORBIT_NODE_ANY)
		return 4;
#ifndef ORBIT_TEST_NO_FORK_AMID_THREADS
	{
		/* A pool of the child's own works. */
		struct fork_pool_case own = { 0 };
		struct orbit_worker_pool_options o;
		orbit_executor_t oex;

		orbit_worker_pool_options_init(&o);
		o.nthreads = 1;
		if (orbit_worker_pool_create(&o, &own.pool) != 0)
			return 5;
		oex = orbit_worker_pool_executor(own.pool);
		if (oex.submit(oex.ctx, fork_count_task, &own, ORBIT_NODE_ANY) != 0)
			return 6;
		if (orbit_worker_pool_destroy(own.pool) != 0 ||
		    atomic_load_explicit(&own.ran, memory_order_relaxed) != 1)
			return 7;
	}
#endif
	return 0;
}

/*
 * A forked child has a copy of the pool and none of its workers: submit
 * and destroy return -ECHILD there before they touch a node lock or a
 * counter (destroy joins nothing and frees nothing), stats reads the
 * copy, and the parent's pool goes on working.
 */
static void test_pool_forked_child_gets_echild(void **state)
{
	struct fork_pool_case c = { 0 };
	struct orbit_worker_pool_options o;
	orbit_executor_t ex;

	orbit_worker_pool_options_init(&o);
	o.nthreads = 2;
	assert_int_equal(orbit_worker_pool_create(&o, &c.pool), 0);
	ex = orbit_worker_pool_executor(c.pool);
	assert_int_equal(orbit_test_fork_run(pool_calls_in_child, &c, FORK_WAIT_MS), 0);
	/* The parent's pool is untouched: a submission runs, destroy joins. */
	assert_int_equal(ex.submit(ex.ctx, fork_count_task, &c, ORBIT_NODE_ANY), 0);
	for (int i = 0; i < FORK_WAIT_MS && atomic_load_explicit(&c.ran, memory_order_relaxed) == 0;
	     i++)
		usleep(1000);
	assert_int_equal(atomic_load_explicit(&c.ran, memory_order_relaxed), 1);
	assert_int_equal(orbit_worker_pool_destroy(c.pool), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options_older_accepted_newer_tail_e2big),
		cmocka_unit_test(test_sync_mutex_abort_names_the_caller),
		cmocka_unit_test(test_placement_two_nodes_proportional),
		cmocka_unit_test(test_placement_four_nodes_by_cpu_share),
		cmocka_unit_test(test_placement_fewer_threads_than_nodes),
		cmocka_unit_test(test_placement_invalid_topologies_einval),
		cmocka_unit_test(test_pool_discovered_topology_degrades_cleanly),
		cmocka_unit_test(test_pool_prefers_home_node_workers),
		cmocka_unit_test(test_pool_ready_tasks_run_fifo),
		cmocka_unit_test(test_pool_idle_workers_sleep_on_futex),
		cmocka_unit_test(test_pool_burst_on_sleeping_worker_wakes_it_once),
		cmocka_unit_test(test_pool_tasks_submitted_together_run_in_parallel),
		cmocka_unit_test(test_pool_chain_wake_falls_back_to_other_node),
		cmocka_unit_test(test_pool_wake_bounded_while_sleeper_not_in_wait),
		cmocka_unit_test(test_pool_destroy_finishes_accepted_and_refuses_new),
		cmocka_unit_test(test_pool_destroy_ends_idle_polls),
		cmocka_unit_test(test_pool_worker_on_one_cpu_does_not_poll),
		cmocka_unit_test(test_pool_leaves_one_cpu_unspun),
		cmocka_unit_test(test_pool_standby_worker_runs_a_task_behind_a_long_handler),
		cmocka_unit_test(test_pool_forked_child_gets_echild),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
