// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_serial_queue_room_hook.c: the serial queue's internal
 * room hook (lib/serial_queue.h), which the SpotWide Spot coordinator uses
 * to place an Actor turn that found the Spot queue full (spec 07 §4/§5)
 * once room returns. Checked: it is called once per refusal, only after
 * an application reservation was returned (single turns, claimed batches
 * and a finished continuation), never for the lifecycle lane, and what it
 * enqueues runs on the same drain. A manual executor drives the drains on
 * the test thread, so the hook runs there too and may record plainly.
 */
#include "config.h"

#include "orbit_test.h"
#include "orbit_test_manual_executor.h"

#include <errno.h>

#include <orbit/orbit.h>

#include "lib/serial_queue.h"

/* What ran and what the hook saw; only the test thread touches it. */
struct trace {
	orbit_serial_queue_t *q;
	int log[32], n;		  /* ids of items run; -1 marks a hook call */
	int calls;		  /* hook calls */
	int enq_ret;		  /* what the hook's own enqueue returned */
	uint64_t app_items;	  /* the application reservations at the call */
	bool enqueue;		  /* the hook enqueues item 99 */
	orbit_serial_resume_t *h; /* the suspended item's handle */
};

static struct trace tr;

static int item_fn(orbit_serial_turn_t *turn, void *arg)
{
	tr.log[tr.n++] = (int)(intptr_t)arg;
	return ORBIT_SERIAL_DONE;
}

static int suspend_fn(orbit_serial_turn_t *turn, void *arg)
{
	tr.log[tr.n++] = (int)(intptr_t)arg;
	if (orbit_serial_turn_suspend(turn, item_fn, (void *)(intptr_t)77,
				      ORBIT_SERIAL_SUSPEND_RELEASE, &tr.h))
		return ORBIT_SERIAL_DONE;
	return ORBIT_SERIAL_SUSPENDED;
}

static void hook(void *ctx)
{
	struct orbit_serial_queue_stats st;

	assert_ptr_equal(ctx, &tr);
	orbit_serial_queue_stats(tr.q, &st);
	tr.app_items = st.app_items;
	tr.calls++;
	tr.log[tr.n++] = -1;
	if (tr.enqueue)
		tr.enq_ret = orbit_serial_queue_enqueue(tr.q, item_fn, (void *)(intptr_t)99);
}

static orbit_serial_queue_t *setup(struct manual_ex *x, uint32_t app_items, uint32_t lc_items)
{
	struct orbit_serial_queue_options o;
	orbit_execution_lane_policy_t p;

	memset(&tr, 0, sizeof(tr));
	tr.enq_ret = 1;
	orbit_execution_lane_policy_init_default(&p);
	p.application_message_capacity = app_items;
	p.lifecycle_message_capacity = lc_items;
	orbit_serial_queue_options_init(&o);
	o.executor = manual_executor(x);
	o.policy = &p;
	assert_int_equal(orbit_serial_queue_create(&o, &tr.q), 0);
	orbit__serial_queue_set_room_hook(tr.q, hook, &tr);
	return tr.q;
}

static void teardown(orbit_serial_queue_t *q)
{
	assert_int_equal(orbit_serial_queue_await_quiescence(q, 0), 0);
	assert_int_equal(orbit_serial_queue_destroy(q), 0);
}

static void enq(orbit_serial_queue_t *q, int id, int expect)
{
	assert_int_equal(orbit_serial_queue_enqueue(q, item_fn, (void *)(intptr_t)id), expect);
}

/*
 * A refusal arms the hook; the drain calls it once, right after the
 * single turn that returned a reservation (the room is back at the call:
 * no application item reserved), and what it enqueues runs next on the
 * same drain. Without a refusal it is never called.
 */
static void test_room_hook_once_after_refusal_single_turn(void **state)
{
	struct manual_ex x;
	orbit_serial_queue_t *q = setup(&x, 1, 8);
	const int expect[] = { 1, -1, 99, 4 };

	tr.enqueue = true;
	enq(q, 1, 0);
	enq(q, 2, -EAGAIN);
	assert_int_equal(tr.calls, 0); /* nothing returned yet */
	manual_run_all(&x);
	assert_int_equal(tr.calls, 1);
	assert_int_equal(tr.enq_ret, 0);
	assert_int_equal(tr.app_items, 0);
	tr.enqueue = false;
	enq(q, 4, 0); /* accepted: no refusal, no call */
	manual_run_all(&x);
	assert_int_equal(tr.calls, 1);
	assert_int_equal(tr.n, 4);
	assert_memory_equal(tr.log, expect, sizeof(expect));
	teardown(q);
}

/*
 * A claimed batch returns its reservations together: one call after the
 * batch, not one per item; a second refusal arms it again.
 */
static void test_room_hook_once_per_refusal_batch(void **state)
{
	struct manual_ex x;
	orbit_serial_queue_t *q = setup(&x, 3, 8);
	const int expect[] = { 1, 2, 3, -1, 99, 5, 6, 7, -1 };

	tr.enqueue = true;
	enq(q, 1, 0);
	enq(q, 2, 0);
	enq(q, 3, 0);
	enq(q, 4, -EAGAIN);
	enq(q, 4, -EAGAIN); /* two refusals: still one call */
	assert_true(manual_run_one(&x));
	assert_int_equal(tr.calls, 1);
	manual_run_all(&x);
	tr.enqueue = false;
	enq(q, 5, 0);
	enq(q, 6, 0);
	enq(q, 7, 0);
	enq(q, 8, -EAGAIN); /* armed again */
	manual_run_all(&x);
	assert_int_equal(tr.calls, 2);
	assert_int_equal(tr.n, 9);
	assert_memory_equal(tr.log, expect, sizeof(expect));
	teardown(q);
}

/*
 * A suspended item keeps its reservation: no call while it waits; the
 * call follows its continuation's DONE. Lifecycle work neither arms the
 * hook when refused nor fires it when it finishes.
 */
static void test_room_hook_continuation_and_not_lifecycle(void **state)
{
	struct manual_ex x;
	orbit_serial_queue_t *q = setup(&x, 1, 1);
	const int expect_lc[] = { 10, 11, -1 };

	assert_int_equal(orbit_serial_queue_enqueue(q, suspend_fn, (void *)(intptr_t)7), 0);
	enq(q, 8, -EAGAIN);
	manual_run_all(&x);
	assert_int_equal(tr.calls, 0); /* suspended: still reserved */
	assert_int_equal(orbit_serial_queue_resume(tr.h), 0);
	manual_run_all(&x);
	assert_int_equal(tr.calls, 1);
	assert_int_equal(tr.log[1], 77);
	assert_int_equal(tr.log[2], -1);

	tr.n = 0;
	tr.calls = 0;
	assert_int_equal(orbit_serial_queue_enqueue_lifecycle(q, item_fn, (void *)(intptr_t)10), 0);
	assert_int_equal(orbit_serial_queue_enqueue_lifecycle(q, item_fn, (void *)(intptr_t)9),
			 -EAGAIN);
	manual_run_all(&x);
	assert_int_equal(tr.calls, 0); /* a lifecycle refusal does not arm it */
	enq(q, 11, 0);
	enq(q, 12, -EAGAIN); /* armed */
	assert_int_equal(orbit_serial_queue_enqueue_lifecycle(q, item_fn, (void *)(intptr_t)10), 0);
	manual_run_all(&x);
	/* The lifecycle item ran first and returned a lifecycle reservation:
	 * no call; the call follows the application item. */
	assert_int_equal(tr.calls, 1);
	assert_int_equal(tr.n, 4);
	assert_int_equal(tr.log[0], 10);
	assert_memory_equal(tr.log + 1, expect_lc, sizeof(expect_lc));
	teardown(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_room_hook_once_after_refusal_single_turn),
		cmocka_unit_test(test_room_hook_once_per_refusal_batch),
		cmocka_unit_test(test_room_hook_continuation_and_not_lifecycle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
