// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_agent_watch.c: the agent publishes the counters of the
 * serial queues, worker pools and state lanes it watches (DESIGN.md
 * "Observability": every component publishes counters into the stats
 * segment). Watched objects' work shows in the member's stats row read
 * through orbit_fleet_stats_read(); unwatch stops the reads so the object
 * can be destroyed at once (run under TSan/ASan: a read after the free
 * would be reported); the bad-argument and capacity codes; the state
 * lane's own counters. The Spot, Actor and session coordinators' counters
 * (exec_*) equal their own stats deltas since watch time.
 */
#include "config.h"

#include "orbit_test.h"
#include "orbit_test_manual_executor.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <orbit/orbit.h>

static char fleet[64];
static orbit_agent_t *agent;
static orbit_fleet_t *fl;
static uint32_t row;

static int setup(void **state)
{
	struct orbit_agent_options ao = {
		.size = sizeof(ao), .name = "watcher", .tick_ms = 5, .stats_ms = 2
	};
	struct orbit_fleet_options fo = { .size = sizeof(fo) };

	(void)state;
	orbit_test_fleet(fleet, sizeof(fleet), "watch");
	ao.fleet = fleet;
	fo.fleet = fleet;
	if (orbit_agent_start(&ao, &agent) != 0)
		return -1;
	row = (uint32_t)orbit_agent_member_row(agent);
	return orbit_fleet_open(&fo, &fl) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	struct orbit_lock_options lo = { .size = sizeof(lo), .fleet = fleet };

	(void)state;
	orbit_fleet_close(fl);
	orbit_agent_stop(agent);
	orbit_fleet_unlink(fleet);
	orbit_lock_unlink(&lo);
	return 0;
}

/* The index of counter @name in the stats table (fails the test if absent). */
static unsigned ctr(const char *name)
{
	for (unsigned i = 0; i < orbit_stats_counter_count(); i++)
		if (!strcmp(orbit_stats_counter_name(i), name))
			return i;
	fail_msg("no counter %s", name);
	return 0;
}

static uint64_t now_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * A row whose counters were gathered after this call: wait for a publish
 * stamped after now, then for the next one (its gathering began after the
 * first one's stamp). 5 s at most.
 */
static void read_fresh_row(uint32_t r, struct orbit_fleet_stats *fs)
{
	uint64_t t = now_real_ns(), t0 = orbit_test_now_ns();

	for (int pass = 0; pass < 2; pass++) {
		do {
			usleep(500);
			assert_true(orbit_test_now_ns() - t0 < 5000000000ull);
		} while (orbit_fleet_stats_read(fl, r, fs) != 0 || fs->published_real_ns <= t);
		t = fs->published_real_ns;
	}
}

/* The same for the fixture agent's row. */
static void read_fresh(struct orbit_fleet_stats *fs)
{
	read_fresh_row(row, fs);
}

static orbit_worker_pool_t *make_pool(void)
{
	struct orbit_worker_pool_options o;
	orbit_worker_pool_t *p = NULL;

	orbit_worker_pool_options_init(&o);
	o.nthreads = 2;
	o.no_pin = true;
	assert_int_equal(orbit_worker_pool_create(&o, &p), 0);
	return p;
}

static orbit_serial_queue_t *make_queue(orbit_worker_pool_t *p)
{
	struct orbit_serial_queue_options o;
	orbit_serial_queue_t *q = NULL;

	orbit_serial_queue_options_init(&o);
	o.executor = orbit_worker_pool_executor(p);
	o.name = "watched-queue";
	assert_int_equal(orbit_serial_queue_create(&o, &q), 0);
	return q;
}

static orbit_state_lane_t *make_lane(orbit_worker_pool_t *p)
{
	struct orbit_state_lane_options o = { .size = sizeof(o),
					      .name = "watched-lane",
					      .home = ORBIT_HOME_NODE_NONE };
	orbit_state_lane_t *l = NULL;

	if (p)
		o.executor = orbit_worker_pool_executor(p);
	assert_int_equal(orbit_state_lane_create(&o, &l), 0);
	return l;
}

static int q_item(orbit_serial_turn_t *turn, void *arg)
{
	(void)turn;
	/* Relaxed: a count checked after await_quiescence (which orders it). */
	atomic_fetch_add_explicit((_Atomic int *)arg, 1, memory_order_relaxed);
	return ORBIT_SERIAL_DONE;
}

static int l_item(void *arg)
{
	(*(int *)arg)++; /* lane-owned state: plain */
	return 0;
}

static int l_reenter(void *arg)
{
	orbit_state_lane_t *l = arg;

	return orbit_state_lane_run(l, l_item, NULL); /* -EDEADLK: we are on l */
}

/* Spec 06 §5 (C3 counters) and DESIGN "Observability": the lane counts turns, posts, refusals. */
static void test_lane_stats_count_turns_posts_and_refusals(void **state)
{
	orbit_worker_pool_t *p = make_pool();
	orbit_state_lane_t *l = make_lane(p);
	struct orbit_state_lane_stats ls;
	int n = 0;

	(void)state;
	assert_int_equal(orbit_state_lane_stats(l, &ls), 0);
	assert_int_equal(ls.turns, 0);
	assert_int_equal(ls.posts, 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(orbit_state_lane_run(l, l_item, &n), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(orbit_state_lane_try_post(l, l_item, &n), 0);
	assert_int_equal(orbit_state_lane_run(l, l_reenter, l), -EDEADLK);
	assert_int_equal(orbit_state_lane_close_sync(l), 0);
	assert_int_equal(orbit_state_lane_stats(l, &ls), 0);
	assert_int_equal(n, 15);
	/* 10 runs + 5 posts + the reentering turn; close_sync may add a barrier turn */
	assert_true(ls.turns >= 16 && ls.turns <= 17);
	assert_int_equal(ls.posts, 5);
	assert_int_equal(ls.reentry_refused, 1);
	assert_int_equal(ls.reentry_refused, orbit_state_lane_reentry_count(l));
	assert_int_equal(orbit_state_lane_stats(NULL, &ls), -EINVAL);
	assert_int_equal(orbit_state_lane_stats(l, NULL), -EINVAL);
	assert_int_equal(orbit_state_lane_destroy(l), 0);
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
}

/* DESIGN "Observability": watched queue, pool and lane counters reach the member's stats row. */
static void test_watched_counters_appear_in_stats_row(void **state)
{
	orbit_worker_pool_t *p = make_pool();
	orbit_serial_queue_t *q = make_queue(p);
	orbit_state_lane_t *l = make_lane(p);
	struct orbit_fleet_stats fs, before;
	_Atomic int qn = 0;
	int ln = 0;

	(void)state;
	read_fresh(&before); /* earlier tests' unwatched objects stay in the sums */
	assert_int_equal(before.counters[ctr("watched_objects")], 0);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_QUEUE, q), 0);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_POOL, p), 0);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_LANE, l), 0);

	for (int i = 0; i < 100; i++)
		assert_int_equal(orbit_serial_queue_enqueue(q, q_item, &qn), 0);
	assert_int_equal(orbit_serial_queue_await_quiescence(q, 10000), 0);
	for (int i = 0; i < 20; i++)
		assert_int_equal(orbit_state_lane_run(l, l_item, &ln), 0);
	for (int i = 0; i < 7; i++)
		assert_int_equal(orbit_state_lane_try_post(l, l_item, &ln), 0);
	assert_int_equal(orbit_state_lane_run(l, l_reenter, l), -EDEADLK);
	assert_int_equal(orbit_state_lane_run(l, l_item, &ln), 0); /* after the posts (FIFO) */
	assert_int_equal(atomic_load(&qn), 100);

	read_fresh(&fs);
#define D(name) (fs.counters[ctr(name)] - before.counters[ctr(name)])
	assert_int_equal(fs.counters[ctr("watched_objects")], 3);
	assert_int_equal(D("queue_accepted"), 100);
	assert_int_equal(D("queue_completed"), 100);
	assert_int_equal(D("queue_turns_run"), 100);
	assert_int_equal(D("queue_rejected"), 0);
	assert_int_equal(fs.counters[ctr("queue_depth")], 0);
	assert_true(D("pool_tasks_submitted") >= 1);
	assert_true(D("pool_tasks_run") >= 1);
	assert_true(D("pool_tasks_run") <= D("pool_tasks_submitted"));
	assert_int_equal(D("lane_turns"), 20 + 7 + 1 + 1);
	assert_int_equal(D("lane_posts"), 7);
	assert_int_equal(D("lane_reentry_refused"), 1);
#undef D
	assert_true(orbit_stats_counter_is_gauge(ctr("queue_depth")));
	assert_true(orbit_stats_counter_is_gauge(ctr("watched_objects")));
	assert_false(orbit_stats_counter_is_gauge(ctr("lane_turns")));

	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_LANE, l), 0);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_QUEUE, q), 0);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_POOL, p), 0);
	assert_int_equal(orbit_state_lane_close_sync(l), 0);
	assert_int_equal(orbit_state_lane_destroy(l), 0);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
}

/* Second review: unwatching and watching the same object again counted it twice. */
static void test_rewatch_counts_each_item_once(void **state)
{
	orbit_worker_pool_t *p = make_pool();
	orbit_serial_queue_t *q = make_queue(p);
	struct orbit_fleet_stats fs, before;
	_Atomic int qn = 0;

	(void)state;
	read_fresh(&before);
	for (int i = 0; i < 4; i++) /* before any watch: not counted */
		assert_int_equal(orbit_serial_queue_enqueue(q, q_item, &qn), 0);
	assert_int_equal(orbit_serial_queue_await_quiescence(q, 10000), 0);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_QUEUE, q), 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(orbit_serial_queue_enqueue(q, q_item, &qn), 0);
	assert_int_equal(orbit_serial_queue_await_quiescence(q, 10000), 0);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_QUEUE, q), 0);
	for (int i = 0; i < 5; i++) /* while unwatched: not counted */
		assert_int_equal(orbit_serial_queue_enqueue(q, q_item, &qn), 0);
	assert_int_equal(orbit_serial_queue_await_quiescence(q, 10000), 0);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_QUEUE, q), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(orbit_serial_queue_enqueue(q, q_item, &qn), 0);
	assert_int_equal(orbit_serial_queue_await_quiescence(q, 10000), 0);
	read_fresh(&fs);
	assert_int_equal(
	    fs.counters[ctr("queue_completed")] - before.counters[ctr("queue_completed")], 10 + 3);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_QUEUE, q), 0);
	read_fresh(&fs);
	assert_int_equal(fs.counters[ctr("queue_completed")] -
			     before.counters[ctr("queue_completed")],
			 10 + 3); /* unwatching keeps what was counted */
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
}

/* A queue's depth is a gauge: items accepted and not finished. */
static int q_block(orbit_serial_turn_t *turn, void *arg)
{
	(void)turn;
	/* Acquire, pairs with the release store that opens the gate below. */
	while (!atomic_load_explicit((_Atomic int *)arg, memory_order_acquire))
		usleep(100);
	return ORBIT_SERIAL_DONE;
}

static void test_watched_queue_depth_is_a_gauge(void **state)
{
	orbit_worker_pool_t *p = make_pool();
	orbit_serial_queue_t *q = make_queue(p);
	struct orbit_fleet_stats fs;
	_Atomic int gate = 0;

	(void)state;
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_QUEUE, q), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(orbit_serial_queue_enqueue(q, q_block, &gate), 0);
	read_fresh(&fs);
	assert_int_equal(fs.counters[ctr("queue_depth")], 5);
	/* Release, pairs with the acquire in q_block(). */
	atomic_store_explicit(&gate, 1, memory_order_release);
	assert_int_equal(orbit_serial_queue_await_quiescence(q, 10000), 0);
	read_fresh(&fs);
	assert_int_equal(fs.counters[ctr("queue_depth")], 0);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_QUEUE, q), 0);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
}

/*
 * DESIGN "Observability": after unwatch the agent no longer reads the
 * object: its later work is not counted, its earlier counts stay (the
 * counters never go backwards), and it can be destroyed at once while the
 * agent keeps publishing every 2 ms (TSan/ASan would flag a late read).
 */
static void test_unwatch_stops_reads_and_allows_destroy(void **state)
{
	orbit_worker_pool_t *p = make_pool();
	struct orbit_fleet_stats fs, before;
	int rounds = orbit_test_long() ? 2000 : 200, ln = 0;
	orbit_state_lane_t *l;

	(void)state;
	read_fresh(&before);
	/* Churn: watch, work, unwatch, destroy, with publishes racing all of it. */
	for (int i = 0; i < rounds; i++) {
		orbit_serial_queue_t *q = make_queue(p);
		_Atomic int qn = 0;

		l = make_lane(NULL);
		assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_QUEUE, q), 0);
		assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_LANE, l), 0);
		assert_int_equal(orbit_serial_queue_enqueue(q, q_item, &qn), 0);
		assert_int_equal(orbit_state_lane_run(l, l_item, &ln), 0);
		assert_int_equal(orbit_serial_queue_await_quiescence(q, 10000), 0);
		if (i % 16 == 0)
			usleep(2000); /* let a publish read them now and then */
		assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_QUEUE, q), 0);
		assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_LANE, l), 0);
		assert_int_equal(orbit_serial_queue_destroy(q), 0);
		assert_int_equal(orbit_state_lane_close_sync(l), 0);
		assert_int_equal(orbit_state_lane_destroy(l), 0);
	}
	read_fresh(&fs);
	assert_int_equal(fs.counters[ctr("watched_objects")], 0);
	assert_int_equal(fs.counters[ctr("queue_accepted")] -
			     before.counters[ctr("queue_accepted")],
			 (uint64_t)rounds);
	assert_true(fs.counters[ctr("lane_turns")] - before.counters[ctr("lane_turns")] >=
		    (uint64_t)rounds);

	/* Work on an unwatched lane is not counted. */
	l = make_lane(NULL);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_LANE, l), 0);
	assert_int_equal(orbit_state_lane_run(l, l_item, &ln), 0);
	read_fresh(&before);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_LANE, l), 0);
	for (int i = 0; i < 50; i++)
		assert_int_equal(orbit_state_lane_run(l, l_item, &ln), 0);
	read_fresh(&fs);
	assert_int_equal(fs.counters[ctr("lane_turns")], before.counters[ctr("lane_turns")]);
	assert_int_equal(orbit_state_lane_close_sync(l), 0);
	assert_int_equal(orbit_state_lane_destroy(l), 0);
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
}

/* Include "Returns": -EINVAL, -EEXIST, -ENOENT, -ENOSPC past ORBIT_AGENT_WATCH_MAX. */
static void test_watch_errors(void **state)
{
	orbit_state_lane_t *lanes[ORBIT_AGENT_WATCH_MAX + 1];
	orbit_worker_pool_t *p = make_pool();
	orbit_serial_queue_t *q = make_queue(p);

	(void)state;
	assert_int_equal(orbit_agent_watch(NULL, ORBIT_AGENT_WATCH_QUEUE, q), -EINVAL);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_QUEUE, NULL), -EINVAL);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_POOL, NULL), -EINVAL);
	assert_int_equal(orbit_agent_watch(NULL, ORBIT_AGENT_WATCH_LANE, NULL), -EINVAL);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_QUEUE, NULL), -EINVAL);
	assert_int_equal(orbit_agent_unwatch(NULL, ORBIT_AGENT_WATCH_POOL, p), -EINVAL);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_LANE, NULL), -EINVAL);
	/* An unknown kind (0 is none) is refused before the object is looked at. */
	assert_int_equal(orbit_agent_watch(agent, (enum orbit_agent_watch_kind)0, q), -EINVAL);
	assert_int_equal(
	    orbit_agent_watch(agent, (enum orbit_agent_watch_kind)(ORBIT_AGENT_WATCH_SESSION + 1),
			      q),
	    -EINVAL);
	assert_int_equal(orbit_agent_unwatch(agent, (enum orbit_agent_watch_kind)0, q), -EINVAL);

	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_QUEUE, q), -ENOENT);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_QUEUE, q), 0);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_QUEUE, q), -EEXIST);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_POOL, p), -ENOENT);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_QUEUE, q), 0);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_QUEUE, q), -ENOENT);

	for (int i = 0; i <= ORBIT_AGENT_WATCH_MAX; i++)
		lanes[i] = make_lane(NULL);
	for (int i = 0; i < ORBIT_AGENT_WATCH_MAX - 1; i++)
		assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_LANE, lanes[i]), 0);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_POOL, p),
			 0); /* the last place, any kind */
	assert_int_equal(
	    orbit_agent_watch(agent, ORBIT_AGENT_WATCH_LANE, lanes[ORBIT_AGENT_WATCH_MAX - 1]),
	    -ENOSPC);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_QUEUE, q), -ENOSPC);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_POOL, p), 0);
	assert_int_equal(
	    orbit_agent_watch(agent, ORBIT_AGENT_WATCH_LANE, lanes[ORBIT_AGENT_WATCH_MAX - 1]), 0);
	assert_int_equal(
	    orbit_agent_watch(agent, ORBIT_AGENT_WATCH_LANE, lanes[ORBIT_AGENT_WATCH_MAX]),
	    -ENOSPC);
	for (int i = 0; i < ORBIT_AGENT_WATCH_MAX; i++)
		assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_LANE, lanes[i]), 0);
	assert_int_equal(
	    orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_LANE, lanes[ORBIT_AGENT_WATCH_MAX]),
	    -ENOENT);
	for (int i = 0; i <= ORBIT_AGENT_WATCH_MAX; i++) {
		assert_int_equal(orbit_state_lane_close_sync(lanes[i]), 0);
		assert_int_equal(orbit_state_lane_destroy(lanes[i]), 0);
	}
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
}

/*
 * A second agent's watches are its own, and objects still watched when an
 * agent stops are published one last time and forgotten (not read after
 * stop returns).
 */
static void test_watch_is_per_agent_and_ends_at_stop(void **state)
{
	struct orbit_agent_options ao = {
		.size = sizeof(ao), .name = "watcher-2", .tick_ms = 5, .stats_ms = 2
	};
	orbit_state_lane_t *l = make_lane(NULL);
	struct orbit_fleet_stats fs;
	orbit_agent_t *b;
	uint32_t brow;
	int ln = 0;

	(void)state;
	ao.fleet = fleet;
	assert_int_equal(orbit_agent_start(&ao, &b), 0);
	brow = (uint32_t)orbit_agent_member_row(b);
	assert_int_equal(orbit_agent_watch(b, ORBIT_AGENT_WATCH_LANE, l), 0);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_LANE, l), -ENOENT);
	for (int i = 0; i < 3; i++)
		assert_int_equal(orbit_state_lane_run(l, l_item, &ln), 0);
	orbit_agent_stop(b); /* still watched: its last publish counts the lane */
	assert_int_equal(orbit_fleet_stats_read(fl, brow, &fs), 0);
	assert_int_equal(fs.counters[ctr("lane_turns")], 3);
	assert_int_equal(fs.counters[ctr("watched_objects")], 1);
	assert_int_equal(orbit_state_lane_close_sync(l), 0);
	assert_int_equal(orbit_state_lane_destroy(l), 0);
}

/*
 * Each agent owns its watch set (made at start, freed at stop): two agents
 * of one process watch the same lane independently, fill their 64 places
 * independently, publish their own sums, and stopping one leaves the
 * other's set as it was. Stop frees a set that still holds objects (under
 * ASan, LeakSanitizer reports a set nobody freed).
 */
static void test_two_agents_keep_separate_watch_sets(void **state)
{
	struct orbit_agent_options ao = {
		.size = sizeof(ao), .name = "watcher-3", .tick_ms = 5, .stats_ms = 2
	};
	orbit_state_lane_t *lanes[ORBIT_AGENT_WATCH_MAX];
	orbit_state_lane_t *shared = make_lane(NULL);
	struct orbit_fleet_stats fa, fb, before;
	orbit_agent_t *b;
	uint32_t brow;
	int ln = 0;

	(void)state;
	ao.fleet = fleet;
	read_fresh(&before);
	assert_int_equal(before.counters[ctr("watched_objects")], 0);
	assert_int_equal(orbit_agent_start(&ao, &b), 0);
	brow = (uint32_t)orbit_agent_member_row(b);
	assert_int_not_equal(brow, row);

	/* One lane in both sets; b fills its 64 places, the fixture agent has room. */
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_LANE, shared), 0);
	assert_int_equal(orbit_agent_watch(b, ORBIT_AGENT_WATCH_LANE, shared), 0);
	assert_int_equal(orbit_agent_watch(b, ORBIT_AGENT_WATCH_LANE, shared), -EEXIST);
	for (int i = 0; i < ORBIT_AGENT_WATCH_MAX; i++)
		lanes[i] = make_lane(NULL);
	for (int i = 0; i < ORBIT_AGENT_WATCH_MAX - 1; i++)
		assert_int_equal(orbit_agent_watch(b, ORBIT_AGENT_WATCH_LANE, lanes[i]), 0);
	assert_int_equal(
	    orbit_agent_watch(b, ORBIT_AGENT_WATCH_LANE, lanes[ORBIT_AGENT_WATCH_MAX - 1]),
	    -ENOSPC);
	assert_int_equal(
	    orbit_agent_watch(agent, ORBIT_AGENT_WATCH_LANE, lanes[ORBIT_AGENT_WATCH_MAX - 1]), 0);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_LANE, lanes[0]),
			 -ENOENT); /* b's, not ours */

	for (int i = 0; i < 3; i++)
		assert_int_equal(orbit_state_lane_run(shared, l_item, &ln), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(
		    orbit_state_lane_run(lanes[ORBIT_AGENT_WATCH_MAX - 1], l_item, &ln), 0);
	read_fresh(&fa);
	read_fresh_row(brow, &fb);
	assert_int_equal(fa.counters[ctr("watched_objects")], 2);
	assert_int_equal(fa.counters[ctr("lane_turns")] - before.counters[ctr("lane_turns")],
			 3 + 2);
	assert_int_equal(fb.counters[ctr("watched_objects")], ORBIT_AGENT_WATCH_MAX);
	assert_int_equal(fb.counters[ctr("lane_turns")], 3);

	/* Unwatching in b leaves the fixture agent's watch of the same lane. */
	assert_int_equal(orbit_agent_unwatch(b, ORBIT_AGENT_WATCH_LANE, shared), 0);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_LANE, shared), -EEXIST);
	orbit_agent_stop(b); /* 63 lanes still watched: its set goes with it */
	for (int i = 0; i < ORBIT_AGENT_WATCH_MAX - 1; i++) {
		assert_int_equal(orbit_state_lane_close_sync(lanes[i]), 0);
		assert_int_equal(orbit_state_lane_destroy(lanes[i]), 0);
	}
	assert_int_equal(orbit_state_lane_run(shared, l_item, &ln), 0);
	read_fresh(&fa);
	assert_int_equal(fa.counters[ctr("watched_objects")], 2);
	assert_int_equal(fa.counters[ctr("lane_turns")] - before.counters[ctr("lane_turns")],
			 3 + 2 + 1);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_LANE, shared), 0);
	assert_int_equal(
	    orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_LANE, lanes[ORBIT_AGENT_WATCH_MAX - 1]),
	    0);
	assert_int_equal(orbit_state_lane_close_sync(shared), 0);
	assert_int_equal(orbit_state_lane_destroy(shared), 0);
	assert_int_equal(orbit_state_lane_close_sync(lanes[ORBIT_AGENT_WATCH_MAX - 1]), 0);
	assert_int_equal(orbit_state_lane_destroy(lanes[ORBIT_AGENT_WATCH_MAX - 1]), 0);
}

/* ---- coordinators (spec 07 §2-4): exec_* ---------------------------------- */

/* What the exec_* counters should show for one coordinator: @now - @base
 * for counters, @now for gauges (the mapping doc/agent.md documents). */
struct exec_expect {
	uint64_t accepted, rejected, completed, yielded, turn_waited, turn_rejected,
	    protocol_errors;				  /* counters: deltas */
	uint64_t outstanding, actor_queues, timer_queues; /* gauges: now */
};

static uint64_t exec_accepted(const struct orbit_serial_executor_stats *st)
{
	uint64_t n = 0;

	for (int k = 0; k < ORBIT_WORK_KINDS; k++)
		n += st->accepted[k];
	return n;
}

static uint64_t exec_rejected(const struct orbit_serial_executor_stats *st)
{
	uint64_t n = 0;

	for (int k = 0; k < ORBIT_WORK_KINDS; k++)
		n += st->rejected_full[k] + st->rejected_too_big[k] + st->rejected_closed[k];
	return n;
}

static void exec_add(struct exec_expect *e, const struct orbit_serial_executor_stats *now,
		     const struct orbit_serial_executor_stats *base)
{
	e->accepted += exec_accepted(now) - exec_accepted(base);
	e->rejected += exec_rejected(now) - exec_rejected(base);
	e->completed += now->completed - base->completed;
	e->yielded += now->yielded - base->yielded;
	e->turn_waited += now->turn_waited - base->turn_waited;
	e->turn_rejected += now->turn_rejected - base->turn_rejected;
	e->protocol_errors += now->protocol_errors - base->protocol_errors;
	e->outstanding += now->outstanding;
	e->actor_queues += now->actor_queues;
	e->timer_queues += now->timer_queues;
}

/* The row @fs shows @e (counters as deltas from @before). */
static void exec_check(const struct orbit_fleet_stats *fs, const struct orbit_fleet_stats *before,
		       const struct exec_expect *e)
{
#define D(name) (fs->counters[ctr(name)] - before->counters[ctr(name)])
	assert_int_equal(D("exec_accepted"), e->accepted);
	assert_int_equal(D("exec_rejected"), e->rejected);
	assert_int_equal(D("exec_completed"), e->completed);
	assert_int_equal(D("exec_yielded"), e->yielded);
	assert_int_equal(D("exec_turn_waited"), e->turn_waited);
	assert_int_equal(D("exec_turn_rejected"), e->turn_rejected);
	assert_int_equal(D("exec_protocol_errors"), e->protocol_errors);
#undef D
	assert_int_equal(fs->counters[ctr("exec_outstanding")], e->outstanding);
	assert_int_equal(fs->counters[ctr("exec_actor_queues")], e->actor_queues);
	assert_int_equal(fs->counters[ctr("exec_timer_queues")], e->timer_queues);
}

static struct orbit_serial_executor_stats spot_st(const orbit_spot_serial_executor_t *s)
{
	struct orbit_serial_executor_stats st;

	assert_int_equal(orbit_spot_serial_executor_stats(s, &st), 0);
	return st;
}

static struct orbit_serial_executor_stats actor_st(const orbit_actor_serial_executor_t *a)
{
	struct orbit_serial_executor_stats st;

	assert_int_equal(orbit_actor_serial_executor_stats(a, &st), 0);
	return st;
}

static struct orbit_serial_executor_stats session_st(const orbit_session_serial_executor_t *x)
{
	struct orbit_serial_executor_stats st;

	assert_int_equal(orbit_session_serial_executor_stats(x, &st), 0);
	return st;
}

static int w_noop(orbit_serial_turn_t *turn, void *arg)
{
	(void)turn;
	(void)arg;
	return ORBIT_SERIAL_DONE;
}

/* A handler that yields around an "external call"; *arg gets the ticket. */
static int w_yield(orbit_serial_turn_t *turn, void *arg)
{
	orbit_serial_resume_t **h = arg;

	if (orbit_work_yield(turn, w_noop, NULL, h) != 0)
		return ORBIT_SERIAL_DONE; /* *h stays NULL: the test fails on it */
	return ORBIT_SERIAL_SUSPENDED;
}

/* SUSPENDED without a yield: a protocol error the coordinator counts. */
static int w_bad_suspend(orbit_serial_turn_t *turn, void *arg)
{
	(void)turn;
	(void)arg;
	return ORBIT_SERIAL_SUSPENDED;
}

/*
 * DESIGN "Observability", 07 §2 (the Spot coordinator), both modes: a
 * watched Spot's exec_* counters in the stats row equal its own
 * orbit_spot_serial_executor_stats() deltas since watch time (work before the
 * watch is not counted), with work queued (gauges), after everything ran
 * (a yield, SpotWide turns that waited for Spot-queue room, refusals by
 * count, size and close), and unwatching keeps the counts and drops the
 * gauges. A manual executor: nothing moves while the row is read.
 */
static void test_watched_spot_counters_equal_its_stats_deltas(void **state)
{
	const int modes[2] = { ORBIT_SPOT_PER_ACTOR, ORBIT_SPOT_SPOT_WIDE };

	(void)state;
	for (int m = 0; m < 2; m++) {
		struct orbit_serial_executor_stats base, now;
		struct orbit_spot_serial_executor_options o;
		orbit_execution_lane_policy_t sp, ap;
		struct orbit_fleet_stats before, fs;
		orbit_serial_resume_t *h = NULL;
		orbit_spot_serial_executor_t *s = NULL;
		struct exec_expect e = { 0 };
		struct manual_ex x;
		int rc;

		orbit_execution_lane_policy_init_default(&sp);
		sp.application_message_capacity = 4;
		orbit_execution_lane_policy_init_default(&ap);
		ap.application_message_capacity = 2;
		ap.application_byte_capacity = 64 * 1024;
		orbit_spot_serial_executor_options_init(&o);
		o.mode = modes[m];
		o.executor = manual_executor(&x);
		o.spot_policy = &sp;
		o.actor_policy = &ap;
		assert_int_equal(orbit_spot_serial_executor_create(&o, &s), 0);

		/* Before the watch: not counted. */
		assert_int_equal(orbit_spot_execute_spot(s, w_noop, NULL, NULL), 0);
		assert_int_equal(orbit_spot_execute_actor(s, 9, w_noop, NULL, 10, NULL), 0);
		manual_run_all(&x);
		read_fresh(&before);
		assert_int_equal(before.counters[ctr("watched_objects")], 0);
		base = spot_st(s);
		assert_true(exec_accepted(&base) >= 2);
		assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_SPOT, s), 0);

		/* Actor records first: their drains run before the Spot queue's. */
		assert_int_equal(orbit_spot_execute_actor(s, 1, w_yield, &h, 100, NULL), 0);
		assert_int_equal(orbit_spot_execute_actor(s, 2, w_noop, NULL, 100, NULL), 0);
		assert_int_equal(orbit_spot_execute_actor(s, 2, w_noop, NULL, 100, NULL), 0);
		assert_int_equal(orbit_spot_execute_actor(s, 2, w_noop, NULL, 100, NULL), -EAGAIN);
		assert_int_equal(orbit_spot_execute_actor(s, 3, w_noop, NULL, 1u << 20, NULL),
				 -E2BIG);
		assert_int_equal(orbit_spot_execute_timer(s, "tick", w_noop, NULL, NULL), 0);
		assert_int_equal(orbit_spot_execute_lifecycle(s, w_noop, NULL, NULL), 0);
		for (int i = 0; i < 4; i++) { /* fills the Spot queue (SpotWide: with the timer) */
			rc = orbit_spot_execute_spot(s, w_noop, NULL, NULL);
			assert_true(rc == 0 || rc == -EAGAIN);
		}
		/* Actor 1's and Actor 2's drains: SpotWide, their turns wait for room. */
		assert_true(manual_run_one(&x));
		assert_true(manual_run_one(&x));
		now = spot_st(s);
		assert_true(now.outstanding > 0);
		if (modes[m] == ORBIT_SPOT_SPOT_WIDE)
			assert_int_equal(now.turn_waited - base.turn_waited, 2);
		read_fresh(&fs);
		assert_int_equal(fs.counters[ctr("watched_objects")], 1);
		exec_add(&e, &now, &base);
		exec_check(&fs, &before, &e);

		/* Everything runs; the yielded handler ends when resumed. */
		manual_run_all(&x);
		assert_non_null(h);
		assert_int_equal(orbit_serial_queue_resume(h), 0);
		manual_run_all(&x);
		assert_int_equal(orbit_spot_serial_executor_close(s), 0);
		assert_int_equal(orbit_spot_execute_spot(s, w_noop, NULL, NULL), -EPIPE);
		assert_int_equal(orbit_spot_serial_executor_await_quiescence(s, 0), 0);
		now = spot_st(s);
		assert_int_equal(now.outstanding, 0);
		assert_int_equal(now.yielded - base.yielded, 1);
		assert_true(exec_rejected(&now) - exec_rejected(&base) >= 3); /* full, too big,
			    closed */
		read_fresh(&fs);
		memset(&e, 0, sizeof(e));
		exec_add(&e, &now, &base);
		assert_int_equal(e.completed, e.accepted);
		assert_true(e.actor_queues >= 3); /* Actors 9, 1, 2 (3's record never fit) */
		assert_int_equal(e.timer_queues, modes[m] == ORBIT_SPOT_PER_ACTOR ? 1 : 0);
		exec_check(&fs, &before, &e);

		/* Unwatched: counts stay, gauges drop it. */
		assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_SPOT, s), 0);
		read_fresh(&fs);
		e.outstanding = e.actor_queues = e.timer_queues = 0;
		exec_check(&fs, &before, &e);
		assert_int_equal(fs.counters[ctr("watched_objects")], 0);
		assert_int_equal(orbit_spot_serial_executor_destroy(s), 0);
	}
	assert_true(orbit_stats_counter_is_gauge(ctr("exec_outstanding")));
	assert_true(orbit_stats_counter_is_gauge(ctr("exec_actor_queues")));
	assert_true(orbit_stats_counter_is_gauge(ctr("exec_timer_queues")));
	assert_false(orbit_stats_counter_is_gauge(ctr("exec_accepted")));
}

/*
 * DESIGN "Observability", 07 §3-4 (the Actor and session coordinators): one
 * Actor and one session watched together add up in the same exec_*
 * counters, each from its own watch-time counts: Actor records, lifecycle
 * work, a yield, refusals; session packets, infrastructure and control
 * work, a protocol error, the final work and what it closes.
 */
static void test_watched_actor_and_session_counters_equal_their_stats_deltas(void **state)
{
	struct orbit_serial_executor_stats abase, sbase, anow, snow;
	struct orbit_session_serial_executor_options so;
	struct orbit_actor_serial_executor_options ao;
	struct orbit_fleet_stats before, fs;
	orbit_execution_lane_policy_t pol;
	orbit_session_serial_executor_t *x = NULL;
	orbit_actor_serial_executor_t *a = NULL;
	orbit_serial_resume_t *h = NULL;
	struct exec_expect e = { 0 };
	struct manual_ex mx;

	(void)state;
	orbit_execution_lane_policy_init_default(&pol);
	pol.application_message_capacity = 3;
	pol.application_byte_capacity = 64 * 1024;
	orbit_actor_serial_executor_options_init(&ao);
	ao.actor_id = 7;
	ao.policy = &pol;
	ao.executor = manual_executor(&mx);
	assert_int_equal(orbit_actor_serial_executor_create(&ao, &a), 0);
	orbit_session_serial_executor_options_init(&so);
	so.policy = &pol;
	so.executor = ao.executor;
	assert_int_equal(orbit_session_serial_executor_create(&so, &x), 0);

	assert_int_equal(orbit_actor_execute_actor(a, w_noop, NULL, 1, NULL), 0); /* not counted */
	assert_int_equal(orbit_session_execute_application(x, w_noop, NULL, 1, NULL), 0);
	manual_run_all(&mx);
	read_fresh(&before);
	abase = actor_st(a);
	sbase = session_st(x);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_ACTOR, a), 0);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_SESSION, x), 0);

	assert_int_equal(orbit_actor_execute_actor(a, w_yield, &h, 10, NULL), 0);
	assert_int_equal(orbit_actor_execute_actor(a, w_noop, NULL, 10, NULL), 0);
	assert_int_equal(orbit_actor_execute_actor(a, w_noop, NULL, 10, NULL), 0);
	assert_int_equal(orbit_actor_execute_actor(a, w_noop, NULL, 10, NULL), -EAGAIN);
	assert_int_equal(orbit_actor_execute_actor(a, w_noop, NULL, 1u << 20, NULL), -E2BIG);
	assert_int_equal(orbit_actor_execute_lifecycle(a, w_noop, NULL, NULL), 0);
	assert_int_equal(orbit_session_execute_application(x, w_noop, NULL, 100, NULL), 0);
	assert_int_equal(orbit_session_execute_infrastructure(x, w_bad_suspend, NULL, NULL), 0);
	assert_int_equal(orbit_session_execute_control(x, w_noop, NULL, NULL), 0);
	assert_int_equal(orbit_session_execute_final(x, w_noop, NULL, NULL), 0);
	assert_int_equal(orbit_session_execute_application(x, w_noop, NULL, 1, NULL), -EPIPE);

	read_fresh(&fs);
	anow = actor_st(a);
	snow = session_st(x);
	assert_int_equal(anow.outstanding + snow.outstanding, 4 + 4);
	assert_int_equal(fs.counters[ctr("watched_objects")], 2);
	exec_add(&e, &anow, &abase);
	exec_add(&e, &snow, &sbase);
	exec_check(&fs, &before, &e);

	manual_run_all(&mx);
	assert_non_null(h);
	assert_int_equal(orbit_serial_queue_resume(h), 0);
	manual_run_all(&mx);
	assert_int_equal(orbit_actor_serial_executor_await_quiescence(a, 0), 0);
	assert_int_equal(orbit_session_serial_executor_await_quiescence(x, 0), 0);
	read_fresh(&fs);
	anow = actor_st(a);
	snow = session_st(x);
	memset(&e, 0, sizeof(e));
	exec_add(&e, &anow, &abase);
	exec_add(&e, &snow, &sbase);
	assert_int_equal(e.accepted, 4 + 4);
	assert_int_equal(e.completed, 4 + 4);
	assert_int_equal(e.rejected, 2 + 1);
	assert_int_equal(e.yielded, 1);
	assert_int_equal(e.protocol_errors, 1);
	assert_int_equal(e.outstanding, 0);
	exec_check(&fs, &before, &e);

	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_ACTOR, a), 0);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_SESSION, x), 0);
	assert_int_equal(orbit_actor_serial_executor_destroy(a), 0);
	assert_int_equal(orbit_session_serial_executor_destroy(x), 0);
}

/*
 * DESIGN "Observability": after orbit_agent_unwatch() of an Actor, session
 * or Spot coordinator the agent no longer reads the coordinator: its later work is not
 * counted, and it can be destroyed at once while the agent publishes
 * every 2 ms from worker-pool threads' counts (TSan/ASan would flag a
 * late read of a freed coordinator).
 */
static void test_unwatch_coordinator_stops_counting_and_allows_destroy(void **state)
{
	orbit_worker_pool_t *p = make_pool();
	int rounds = orbit_test_long() ? 1000 : 100;
	struct orbit_serial_executor_stats st;
	struct orbit_fleet_stats before, fs;
	uint64_t accepted = 0, completed = 0;
	struct orbit_session_serial_executor_options so;
	struct orbit_actor_serial_executor_options ao;
	struct orbit_spot_serial_executor_options po;
	orbit_actor_serial_executor_t *a;

	(void)state;
	orbit_actor_serial_executor_options_init(&ao);
	ao.executor = orbit_worker_pool_executor(p);
	orbit_session_serial_executor_options_init(&so);
	so.executor = ao.executor;
	orbit_spot_serial_executor_options_init(&po);
	po.executor = ao.executor;
	read_fresh(&before);
	for (int i = 0; i < rounds; i++) {
		orbit_session_serial_executor_t *x;
		orbit_spot_serial_executor_t *s;

		po.mode = i % 2 ? ORBIT_SPOT_SPOT_WIDE : ORBIT_SPOT_PER_ACTOR;
		assert_int_equal(orbit_actor_serial_executor_create(&ao, &a), 0);
		assert_int_equal(orbit_session_serial_executor_create(&so, &x), 0);
		assert_int_equal(orbit_spot_serial_executor_create(&po, &s), 0);
		assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_ACTOR, a), 0);
		assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_SESSION, x), 0);
		assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_SPOT, s), 0);
		assert_int_equal(orbit_actor_execute_actor(a, w_noop, NULL, 1, NULL), 0);
		assert_int_equal(orbit_session_execute_application(x, w_noop, NULL, 1, NULL), 0);
		assert_int_equal(orbit_spot_execute_actor(s, 1, w_noop, NULL, 1, NULL), 0);
		assert_int_equal(orbit_spot_execute_timer(s, "t", w_noop, NULL, NULL), 0);
		if (i % 16 == 0)
			usleep(2000); /* let a publish read them now and then */
		assert_int_equal(orbit_actor_serial_executor_close(a), 0);
		assert_int_equal(orbit_session_serial_executor_close(x), 0);
		assert_int_equal(orbit_spot_serial_executor_close(s), 0);
		assert_int_equal(orbit_actor_serial_executor_await_quiescence(a, 10000), 0);
		assert_int_equal(orbit_session_serial_executor_await_quiescence(x, 10000), 0);
		assert_int_equal(orbit_spot_serial_executor_await_quiescence(s, 10000), 0);
		assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_ACTOR, a), 0);
		assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_SESSION, x), 0);
		assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_SPOT, s), 0);
		/* Watched from creation: their whole counts are what was summed. */
		st = actor_st(a);
		accepted += exec_accepted(&st);
		completed += st.completed;
		st = session_st(x);
		accepted += exec_accepted(&st);
		completed += st.completed;
		st = spot_st(s);
		accepted += exec_accepted(&st);
		completed += st.completed;
		assert_int_equal(orbit_actor_serial_executor_destroy(a), 0);
		assert_int_equal(orbit_session_serial_executor_destroy(x), 0);
		assert_int_equal(orbit_spot_serial_executor_destroy(s), 0);
	}
	read_fresh(&fs);
	assert_int_equal(fs.counters[ctr("watched_objects")], 0);
	assert_int_equal(fs.counters[ctr("exec_outstanding")], 0);
	assert_int_equal(fs.counters[ctr("exec_actor_queues")], 0);
	assert_true(accepted >= 4ull * (uint64_t)rounds);
	assert_int_equal(completed, accepted);
	assert_int_equal(fs.counters[ctr("exec_accepted")] - before.counters[ctr("exec_accepted")],
			 accepted);
	assert_int_equal(
	    fs.counters[ctr("exec_completed")] - before.counters[ctr("exec_completed")], completed);

	/* Work of an unwatched Actor is not counted. */
	assert_int_equal(orbit_actor_serial_executor_create(&ao, &a), 0);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_ACTOR, a), 0);
	assert_int_equal(orbit_actor_execute_actor(a, w_noop, NULL, 1, NULL), 0);
	assert_int_equal(orbit_actor_serial_executor_await_quiescence(a, 10000), 0);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_ACTOR, a), 0);
	read_fresh(&before);
	for (int i = 0; i < 20; i++)
		assert_int_equal(orbit_actor_execute_actor(a, w_noop, NULL, 1, NULL), 0);
	assert_int_equal(orbit_actor_serial_executor_await_quiescence(a, 10000), 0);
	read_fresh(&fs);
	assert_int_equal(fs.counters[ctr("exec_accepted")], before.counters[ctr("exec_accepted")]);
	assert_int_equal(fs.counters[ctr("exec_completed")],
			 before.counters[ctr("exec_completed")]);
	assert_int_equal(orbit_actor_serial_executor_destroy(a), 0);
	assert_int_equal(orbit_worker_pool_destroy(p), 0);
}

/* include/orbit/agent.h "Returns" of the coordinator watches: -EINVAL,
 * -EEXIST, -ENOENT (also for another kind), -ENOSPC in the shared bound. */
static void test_watch_coordinator_errors(void **state)
{
	orbit_state_lane_t *lanes[ORBIT_AGENT_WATCH_MAX - 1];
	struct orbit_session_serial_executor_options so;
	struct orbit_actor_serial_executor_options ao;
	struct orbit_spot_serial_executor_options po;
	orbit_session_serial_executor_t *x;
	orbit_actor_serial_executor_t *a;
	orbit_spot_serial_executor_t *s;
	struct manual_ex mx;

	(void)state;
	orbit_actor_serial_executor_options_init(&ao);
	ao.executor = manual_executor(&mx);
	orbit_session_serial_executor_options_init(&so);
	so.executor = ao.executor;
	orbit_spot_serial_executor_options_init(&po);
	po.executor = ao.executor;
	po.mode = ORBIT_SPOT_PER_ACTOR;
	assert_int_equal(orbit_actor_serial_executor_create(&ao, &a), 0);
	assert_int_equal(orbit_session_serial_executor_create(&so, &x), 0);
	assert_int_equal(orbit_spot_serial_executor_create(&po, &s), 0);

	assert_int_equal(orbit_agent_watch(NULL, ORBIT_AGENT_WATCH_SPOT, s), -EINVAL);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_SPOT, NULL), -EINVAL);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_ACTOR, NULL), -EINVAL);
	assert_int_equal(orbit_agent_watch(NULL, ORBIT_AGENT_WATCH_SESSION, x), -EINVAL);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_SPOT, NULL), -EINVAL);
	assert_int_equal(orbit_agent_unwatch(NULL, ORBIT_AGENT_WATCH_ACTOR, a), -EINVAL);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_SESSION, NULL), -EINVAL);

	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_SPOT, s), -ENOENT);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_SPOT, s), 0);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_SPOT, s), -EEXIST);
	/* The same address as another kind is not that watch. */
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_ACTOR, s), -ENOENT);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_SPOT, s), 0);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_SPOT, s), -ENOENT);

	/* One bound for all kinds: 63 lanes + the Spot fill it. */
	for (int i = 0; i < ORBIT_AGENT_WATCH_MAX - 1; i++) {
		lanes[i] = make_lane(NULL);
		assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_LANE, lanes[i]), 0);
	}
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_SPOT, s), 0);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_ACTOR, a), -ENOSPC);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_SESSION, x), -ENOSPC);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_SPOT, s), 0);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_SESSION, x), 0);
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_ACTOR, a), -ENOSPC);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_SESSION, x), 0);
	for (int i = 0; i < ORBIT_AGENT_WATCH_MAX - 1; i++) {
		assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_LANE, lanes[i]), 0);
		assert_int_equal(orbit_state_lane_close_sync(lanes[i]), 0);
		assert_int_equal(orbit_state_lane_destroy(lanes[i]), 0);
	}
	assert_int_equal(orbit_agent_watch(agent, ORBIT_AGENT_WATCH_ACTOR, a), 0);
	assert_int_equal(orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_ACTOR, a), 0);
	assert_int_equal(orbit_actor_serial_executor_destroy(a), 0);
	assert_int_equal(orbit_session_serial_executor_destroy(x), 0);
	assert_int_equal(orbit_spot_serial_executor_destroy(s), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lane_stats_count_turns_posts_and_refusals),
		cmocka_unit_test(test_watched_counters_appear_in_stats_row),
		cmocka_unit_test(test_watched_queue_depth_is_a_gauge),
		cmocka_unit_test(test_unwatch_stops_reads_and_allows_destroy),
		cmocka_unit_test(test_watch_errors),
		cmocka_unit_test(test_rewatch_counts_each_item_once),
		cmocka_unit_test(test_watch_is_per_agent_and_ends_at_stop),
		cmocka_unit_test(test_two_agents_keep_separate_watch_sets),
		cmocka_unit_test(test_watched_spot_counters_equal_its_stats_deltas),
		cmocka_unit_test(test_watched_actor_and_session_counters_equal_their_stats_deltas),
		cmocka_unit_test(test_unwatch_coordinator_stops_counting_and_allows_destroy),
		cmocka_unit_test(test_watch_coordinator_errors),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
