// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_spot_execute_batch.c: the batch hand-over that the
 * cross-process Spot host uses (lib/serial_queue.h
 * orbit__serial_queue_enqueue_n(), lib/spot_batch.h orbit__spot_execute_n()):
 * a batch gives what the same submissions made one after the other give
 * when they stop at the first refusal: the accepted items are a prefix,
 * run in order, with one drain scheduled for the batch; the first refused
 * item is counted as that refusal (by count, by bytes, too big, closed,
 * executor refused) and the rest are counted nowhere; lifecycle items
 * still overtake application work up to the burst limit (07 §6); the
 * coordinator counts accepted and refused records per kind as its single
 * entry points do, in both modes. A manual executor runs the drains on the
 * test thread, so handlers record plainly.
 */
#include "config.h"

#include "orbit_test.h"
#include "orbit_test_manual_executor.h"

#include <errno.h>

#include <orbit/orbit.h>

#include "lib/serial_queue.h"
#include "lib/spot_batch.h"

/* What ran, in order; only the test thread touches it. */
static int ran[256], nran;

static int item_fn(orbit_serial_turn_t *turn, void *arg)
{
	(void)turn;
	ran[nran++] = (int)(intptr_t)arg;
	return ORBIT_SERIAL_DONE;
}

static void args_from(void **a, int first, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		a[i] = (void *)(intptr_t)(first + (int)i);
}

static void assert_ran(const int *want, int n)
{
	assert_int_equal(nran, n);
	for (int i = 0; i < n; i++)
		if (ran[i] != want[i])
			fail_msg("turn %d ran item %d, want %d", i, ran[i], want[i]);
}

static orbit_serial_queue_t *make_queue(struct manual_ex *x,
					const orbit_execution_lane_policy_t *pol)
{
	struct orbit_serial_queue_options o;
	orbit_serial_queue_t *q = NULL;

	orbit_serial_queue_options_init(&o);
	o.executor = manual_executor(x);
	o.policy = pol;
	assert_int_equal(orbit_serial_queue_create(&o, &q), 0);
	nran = 0;
	return q;
}

static struct orbit_serial_queue_stats qstats(orbit_serial_queue_t *q)
{
	struct orbit_serial_queue_stats st;

	assert_int_equal(orbit_serial_queue_stats(q, &st), 0);
	return st;
}

/* Full by count: the first 5 of 8 go in, in order, with one drain; one refusal. */
static void test_enqueue_n_prefix_in_order_one_drain(void **state)
{
	static const int want[8] = { 0, 1, 2, 3, 4, 8, 9, 10 };
	orbit_execution_lane_policy_t pol;
	struct orbit_serial_queue_stats st;
	struct manual_ex x;
	orbit_serial_queue_t *q;
	void *a[8];
	int err = 1;

	(void)state;
	orbit_execution_lane_policy_init_default(&pol);
	pol.application_message_capacity = 5;
	q = make_queue(&x, &pol);
	args_from(a, 0, 8);
	assert_int_equal(orbit__serial_queue_enqueue_n(q, false, item_fn, a, 0, 8, &err), 5);
	assert_int_equal(err, -EAGAIN);
	assert_int_equal(x.submits, 1); /* one drain for the batch */
	st = qstats(q);
	assert_int_equal(st.accepted, 5);
	assert_int_equal(st.rejected_count, 1); /* the first refused one only */
	assert_int_equal(st.app_items, 5);
	/* still full for a single submission */
	assert_int_equal(orbit_serial_queue_enqueue(q, item_fn, (void *)(intptr_t)99), -EAGAIN);
	manual_run_all(&x);
	args_from(a, 8, 3);
	assert_int_equal(orbit__serial_queue_enqueue_n(q, false, item_fn, a, 0, 3, &err), 3);
	assert_int_equal(err, 0);
	manual_run_all(&x);
	assert_ran(want, 8);
	st = qstats(q);
	assert_int_equal(st.completed, 8);
	assert_int_equal(st.app_items, 0);
	assert_int_equal(orbit__serial_queue_enqueue_n(q, false, item_fn, a, 0, 0, &err), 0);
	assert_int_equal(orbit__serial_queue_enqueue_n(q, false, item_fn, NULL, 0, 1, &err),
			 -EINVAL);
	assert_int_equal(orbit__serial_queue_enqueue_n(q, false, item_fn, a, 0, 1, NULL), -EINVAL);
	orbit_serial_queue_close(q);
	orbit_serial_queue_destroy(q);
}

/* Full by bytes, and too big: each item's payload plus the fixed cost counts. */
static void test_enqueue_n_bytes_and_too_big(void **state)
{
	orbit_execution_lane_policy_t pol;
	struct orbit_serial_queue_stats st;
	struct manual_ex x;
	orbit_serial_queue_t *q;
	void *a[5];
	int err = 0;

	(void)state;
	orbit_execution_lane_policy_init_default(&pol);
	pol.fixed_work_byte_cost = 100;
	pol.application_byte_capacity = 1000;
	q = make_queue(&x, &pol);
	args_from(a, 0, 5);
	/* 300 bytes each: three fit in 1000 */
	assert_int_equal(orbit__serial_queue_enqueue_n(q, false, item_fn, a, 200, 5, &err), 3);
	assert_int_equal(err, -EAGAIN);
	st = qstats(q);
	assert_int_equal(st.rejected_bytes, 1);
	assert_int_equal(st.app_bytes, 900);
	assert_int_equal(orbit__serial_queue_enqueue_n(q, false, item_fn, a, 1000, 5, &err), 0);
	assert_int_equal(err, -E2BIG);
	assert_int_equal(qstats(q).rejected_too_big, 1);
	manual_run_all(&x);
	assert_int_equal(nran, 3);
	assert_int_equal(qstats(q).app_bytes, 0);
	orbit_serial_queue_close(q);
	orbit_serial_queue_destroy(q);
}

/* 07 §6: a lifecycle batch overtakes waiting application work, burst limit 2. */
static void test_enqueue_n_lifecycle_overtakes_up_to_burst(void **state)
{
	/* application items 0..3, lifecycle items 10..19 */
	static const int want[14] = { 10, 11, 0, 12, 13, 1, 14, 15, 2, 16, 17, 3, 18, 19 };
	orbit_execution_lane_policy_t pol;
	struct manual_ex x;
	orbit_serial_queue_t *q;
	void *a[10];
	int err = 0;

	(void)state;
	orbit_execution_lane_policy_init_default(&pol);
	pol.lifecycle_burst_limit = 2;
	q = make_queue(&x, &pol);
	args_from(a, 0, 4);
	assert_int_equal(orbit__serial_queue_enqueue_n(q, false, item_fn, a, 0, 4, &err), 4);
	args_from(a, 10, 10);
	assert_int_equal(orbit__serial_queue_enqueue_n(q, true, item_fn, a, 0, 10, &err), 10);
	assert_int_equal(x.submits, 1); /* the drain of the first batch covers the second */
	manual_run_all(&x);
	assert_ran(want, 14);
	assert_int_equal(qstats(q).lifecycle_ran, 10);
	orbit_serial_queue_close(q);
	orbit_serial_queue_destroy(q);
}

/* Closed: refused at the first item; an executor that refuses the drain withdraws the batch. */
static void test_enqueue_n_closed_and_executor_refusal(void **state)
{
	struct orbit_serial_queue_stats st;
	struct manual_ex x;
	orbit_serial_queue_t *q;
	void *a[4];
	int err = 0;

	(void)state;
	q = make_queue(&x, NULL);
	args_from(a, 0, 4);
	manual_set_refuse(&x, -EAGAIN);
	assert_int_equal(orbit__serial_queue_enqueue_n(q, false, item_fn, a, 0, 4, &err), 0);
	assert_int_equal(err, -EAGAIN);
	st = qstats(q);
	assert_int_equal(st.rejected_executor, 1);
	assert_int_equal(st.accepted, 0);
	assert_int_equal(st.app_items, 0);
	assert_int_equal(st.app_bytes, 0);
	manual_set_refuse(&x, 0);
	assert_int_equal(orbit__serial_queue_enqueue_n(q, false, item_fn, a, 0, 4, &err), 4);
	manual_run_all(&x);
	assert_int_equal(nran, 4);
	orbit_serial_queue_close(q);
	assert_int_equal(orbit__serial_queue_enqueue_n(q, true, item_fn, a, 0, 4, &err), 0);
	assert_int_equal(err, -EPIPE);
	assert_int_equal(qstats(q).rejected_closed, 1);
	orbit_serial_queue_destroy(q);
}

/* ---- the Spot coordinator --------------------------------------------- */

static orbit_spot_serial_executor_t *make_spot(int mode, struct manual_ex *x,
					       const orbit_execution_lane_policy_t *spot_pol)
{
	struct orbit_spot_serial_executor_options o;
	orbit_spot_serial_executor_t *s = NULL;

	orbit_spot_serial_executor_options_init(&o);
	o.mode = mode;
	o.executor = manual_executor(x);
	o.spot_policy = spot_pol;
	assert_int_equal(orbit_spot_serial_executor_create(&o, &s), 0);
	nran = 0;
	return s;
}

static struct orbit_serial_executor_stats sstats(orbit_spot_serial_executor_t *s)
{
	struct orbit_serial_executor_stats st;

	assert_int_equal(orbit_spot_serial_executor_stats(s, &st), 0);
	return st;
}

/*
 * In both modes: a full Spot queue (4 items) takes the first 4 of 6 Spot
 * records; the coordinator counts 4 accepted and one refusal, as 5 single
 * calls would; they run in order, then a lifecycle batch is counted as
 * lifecycle work; after close the first record is refused as closed.
 */
static void test_spot_execute_n_counts_as_single_calls(void **state)
{
	static const int want[9] = { 0, 1, 2, 3, 20, 21, 22, 23, 24 };
	orbit_execution_lane_policy_t pol;

	(void)state;
	orbit_execution_lane_policy_init_default(&pol);
	pol.application_message_capacity = 4;
	for (int m = 0; m < 2; m++) {
		int mode = m ? ORBIT_SPOT_SPOT_WIDE : ORBIT_SPOT_PER_ACTOR;
		struct orbit_serial_executor_stats st;
		orbit_spot_serial_executor_t *s;
		struct manual_ex x;
		void *a[ORBIT__SPOT_BATCH_MAX];
		int err = 0;

		print_message("mode %d\n", mode);
		s = make_spot(mode, &x, &pol);
		args_from(a, 0, 6);
		assert_int_equal(orbit__spot_execute_n(s, false, item_fn, a, 6, &err), 4);
		assert_int_equal(err, -EAGAIN);
		st = sstats(s);
		assert_int_equal(st.accepted[ORBIT_WORK_SPOT], 4);
		assert_int_equal(st.rejected_full[ORBIT_WORK_SPOT], 1);
		assert_int_equal(st.outstanding, 4);
		manual_run_all(&x);
		args_from(a, 20, 5);
		assert_int_equal(orbit__spot_execute_n(s, true, item_fn, a, 5, &err), 5);
		assert_int_equal(err, 0);
		manual_run_all(&x);
		assert_ran(want, 9);
		st = sstats(s);
		assert_int_equal(st.accepted[ORBIT_WORK_LIFECYCLE], 5);
		assert_int_equal(st.completed, 9);
		assert_int_equal(st.outstanding, 0);
		assert_int_equal(orbit__spot_execute_n(s, false, item_fn, a, 0, &err), 0);
		assert_int_equal(
		    orbit__spot_execute_n(s, false, item_fn, a, ORBIT__SPOT_BATCH_MAX + 1, &err),
		    -EINVAL);
		assert_int_equal(orbit_spot_serial_executor_close(s), 0);
		assert_int_equal(orbit__spot_execute_n(s, false, item_fn, a, 3, &err), 0);
		assert_int_equal(err, -EPIPE);
		st = sstats(s);
		assert_int_equal(st.rejected_closed[ORBIT_WORK_SPOT], 1);
		assert_int_equal(st.accepted[ORBIT_WORK_SPOT], 4);
		assert_int_equal(st.outstanding, 0);
		manual_run_all(&x);
		assert_int_equal(orbit_spot_serial_executor_await_quiescence(s, 1000), 0);
		assert_int_equal(orbit_spot_serial_executor_destroy(s), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enqueue_n_prefix_in_order_one_drain),
		cmocka_unit_test(test_enqueue_n_bytes_and_too_big),
		cmocka_unit_test(test_enqueue_n_lifecycle_overtakes_up_to_burst),
		cmocka_unit_test(test_enqueue_n_closed_and_executor_refusal),
		cmocka_unit_test(test_spot_execute_n_counts_as_single_calls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
