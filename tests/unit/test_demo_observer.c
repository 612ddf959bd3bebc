// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_demo_observer.c: the bank demo's observer view (issue
 * 13, "Observers follow the transition ring and keep a local view"): fed
 * frames as the ring gives them, it keeps who holds which account lock
 * with which token, counts acquisitions, releases and expiries, and
 * catches the two violations it checks independently of the workers: two
 * holders of one account whose tenures overlap (also when the first was
 * force-released before its deadline), and a token that does not
 * increase. Frames of two lanes arriving out of revision order, frames of
 * other namespaces and the frames around a resync raise no false alarm.
 */
#include "config.h"

#include "orbit_test.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/demo_observer.h"

#define NS "bank.account"
#define MS 1000000ull

static struct orbit_transition_event ev;

/* One frame: @type on account @acct (-1: a hosting lease), published at @pub. */
static const struct orbit_transition_event *frame(enum orbit_transition_type type, int acct,
						  uint64_t token, uint64_t deadline, uint64_t pub,
						  uint64_t rev)
{
	char label[16];
	const char *ns = acct < 0 ? "orbit.spot" : NS;

	memset(&ev, 0, sizeof(ev));
	ev.type = type;
	ev.fencing_token = token;
	ev.deadline_ns = deadline;
	ev.publish_ns = pub;
	ev.state_revision = rev;
	if (type == ORBIT_TRANSITION_REPAIR)
		return &ev;
	snprintf(label, sizeof(label), acct < 0 ? "bank.s0" : "%d", acct);
	ev.ns_len = (uint32_t)strlen(ns);
	ev.label_len = (uint32_t)strlen(label);
	memcpy(ev.bytes, ns, ev.ns_len);
	memcpy(ev.bytes + ev.ns_len, label, ev.label_len);
	memcpy(ev.bytes + ev.ns_len + ev.label_len, "owner", 5);
	ev.owner_len = 5;
	return &ev;
}

static demo_view_t *view(void)
{
	demo_view_t *v;

	assert_int_equal(demo_view_create(NS, 10, &v), 0);
	return v;
}

static struct demo_view_counts counts(demo_view_t *v)
{
	struct demo_view_counts c;

	demo_view_counts(v, &c);
	return c;
}

/* Acquire and release pairs, a lease that expires and is reclaimed: all counted, nothing flagged. */
static void test_clean_history_counts_and_flags_nothing(void **state)
{
	demo_view_t *v = view();
	uint64_t tok, dl;

	(void)state;
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 3, 10, 1000 * MS, 100 * MS, 1));
	demo_view_add(v, frame(ORBIT_TRANSITION_RELEASE, 3, 10, 0, 101 * MS, 2));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 3, 11, 1200 * MS, 200 * MS, 3));
	/* the holder died: its entry expires at 1200 ms and is reclaimed after */
	demo_view_add(v, frame(ORBIT_TRANSITION_RECLAIM, 3, 11, 0, 1300 * MS, 4));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 3, 12, 2300 * MS, 1300 * MS, 5));
	/* a hosting lease of the same table: not an account */
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, -1, 13, 2300 * MS, 1300 * MS, 6));
	assert_int_equal(demo_view_flush(v, NULL, NULL), 5);
	struct demo_view_counts c = counts(v);
	assert_int_equal(c.acquired, 3);
	assert_int_equal(c.released, 1);
	assert_int_equal(c.expired, 1);
	assert_int_equal(c.other_frames, 1);
	assert_int_equal(c.overlaps + c.regressions + c.early_expiries + c.mismatches, 0);
	assert_int_equal(demo_view_holder(v, 3, &tok, &dl), 1);
	assert_int_equal(tok, 12);
	assert_int_equal(dl, 2300 * MS);
	assert_int_equal(demo_view_holder(v, 4, NULL, NULL), 0);
	assert_int_equal(demo_view_holder(v, 10, NULL, NULL), -EINVAL);
	demo_view_destroy(v);
}

/* A second holder while the first's lease still runs is an overlap. */
static void test_overlapping_holders_are_caught(void **state)
{
	demo_view_t *v = view();

	(void)state;
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 1, 10, 1000 * MS, 100 * MS, 1));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 1, 11, 1100 * MS, 500 * MS, 2));
	demo_view_flush(v, NULL, NULL);
	assert_int_equal(counts(v).overlaps, 1);
	/* after the first lease's deadline a new holder is no overlap */
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 2, 20, 1000 * MS, 100 * MS, 3));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 2, 21, 2000 * MS, 1000 * MS, 4));
	demo_view_flush(v, NULL, NULL);
	assert_int_equal(counts(v).overlaps, 1);
	demo_view_destroy(v);
}

/* A force release does not stop the holder: a new holder before its deadline overlaps it. */
static void test_force_released_holder_still_overlaps_until_its_deadline(void **state)
{
	demo_view_t *v = view();

	(void)state;
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 5, 10, 1000 * MS, 100 * MS, 1));
	demo_view_add(v, frame(ORBIT_TRANSITION_FORCE_RELEASE, 5, 10, 0, 200 * MS, 2));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 5, 11, 1200 * MS, 200 * MS, 3));
	demo_view_flush(v, NULL, NULL);
	assert_int_equal(counts(v).forced, 1);
	assert_int_equal(counts(v).overlaps, 1);
	/* forced after its deadline had passed: no overlap */
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 6, 20, 1000 * MS, 100 * MS, 4));
	demo_view_add(v, frame(ORBIT_TRANSITION_FORCE_RELEASE, 6, 20, 0, 1000 * MS, 5));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 6, 21, 2000 * MS, 1000 * MS, 6));
	demo_view_flush(v, NULL, NULL);
	assert_int_equal(counts(v).overlaps, 1);
	demo_view_destroy(v);
}

/* A token not above the key's newest, or an older tenure's release, is a regression. */
static void test_token_regressions_are_caught(void **state)
{
	demo_view_t *v = view();

	(void)state;
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 7, 10, 1000 * MS, 100 * MS, 1));
	demo_view_add(v, frame(ORBIT_TRANSITION_RELEASE, 7, 10, 0, 110 * MS, 2));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 7, 9, 1100 * MS, 120 * MS, 3));
	demo_view_flush(v, NULL, NULL);
	assert_int_equal(counts(v).regressions, 1);
	demo_view_add(v, frame(ORBIT_TRANSITION_RELEASE, 7, 9, 0, 130 * MS, 4));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 7, 10, 1200 * MS, 140 * MS, 5));
	demo_view_flush(v, NULL, NULL);
	assert_int_equal(counts(v).regressions, 3); /* the release of 9, then 10 again */
	demo_view_add(v, frame(ORBIT_TRANSITION_RENEW, 7, 10, 1300 * MS, 150 * MS, 6));
	demo_view_add(v, frame(ORBIT_TRANSITION_RELEASE, 7, 10, 0, 160 * MS, 7));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 7, 30, 1300 * MS, 170 * MS, 8));
	demo_view_flush(v, NULL, NULL);
	assert_int_equal(counts(v).regressions, 3);
	assert_int_equal(counts(v).renewed, 1);
	demo_view_destroy(v);
}

/* A reclaim before the entry's deadline is an early expiry. */
static void test_early_reclaim_is_caught(void **state)
{
	demo_view_t *v = view();

	(void)state;
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 0, 10, 1000 * MS, 100 * MS, 1));
	demo_view_add(v, frame(ORBIT_TRANSITION_RECLAIM, 0, 10, 0, 500 * MS, 2));
	demo_view_flush(v, NULL, NULL);
	assert_int_equal(counts(v).early_expiries, 1);
	demo_view_destroy(v);
}

/*
 * Two lanes read round-robin hand frames over out of revision order (a
 * release on lane 1 read after the next acquire on lane 2): applied in
 * revision order they are a clean handover.
 */
static void test_frames_out_of_lane_order_are_applied_in_revision_order(void **state)
{
	demo_view_t *v = view();
	uint64_t tok;

	(void)state;
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 4, 11, 1500 * MS, 300 * MS, 3));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 4, 10, 1000 * MS, 100 * MS, 1));
	demo_view_add(v, frame(ORBIT_TRANSITION_RELEASE, 4, 10, 0, 200 * MS, 2));
	assert_int_equal(demo_view_flush(v, NULL, NULL), 3);
	assert_int_equal(counts(v).overlaps + counts(v).regressions, 0);
	assert_int_equal(demo_view_holder(v, 4, &tok, NULL), 1);
	assert_int_equal(tok, 11);
	demo_view_destroy(v);
}

static int resyncs_called;

static int resync_from_nothing(demo_view_t *v, void *ctx)
{
	struct orbit_lock_entry *e = ctx;

	resyncs_called++;
	demo_view_resync_begin(v, 20);
	if (e)
		demo_view_resync_entry(v, e);
	demo_view_resync_end(v, 22);
	return 0;
}

static struct orbit_lock_entry entry(int acct, uint64_t token, uint64_t deadline)
{
	struct orbit_lock_entry e;
	char label[16];

	memset(&e, 0, sizeof(e));
	snprintf(label, sizeof(label), "%d", acct);
	e.ns_len = (uint16_t)strlen(NS);
	e.label_len = (uint16_t)strlen(label);
	memcpy(e.bytes, NS, e.ns_len);
	memcpy(e.bytes + e.ns_len, label, e.label_len);
	e.token = token;
	e.deadline_ns = deadline;
	return e;
}

/*
 * A resync rebuilds the holders from the table; frames the scan already
 * contains are skipped, frames that raced it are applied unchecked, and
 * later frames are checked again (against the tokens the scan raised).
 */
static void test_resync_skips_scanned_frames_and_checks_later_ones(void **state)
{
	demo_view_t *v = view();
	struct orbit_lock_entry e = entry(2, 50, 1000 * MS);
	uint64_t tok;

	(void)state;
	/* a view that believes account 2 is held by 40: the table says 50 */
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 2, 40, 900 * MS, 100 * MS, 10));
	demo_view_add(v, frame(ORBIT_TRANSITION_REPAIR, 0, 0, 0, 150 * MS, 19));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 8, 45, 900 * MS, 150 * MS, 18));
	resyncs_called = 0;
	demo_view_flush(v, resync_from_nothing, &e);
	assert_int_equal(resyncs_called, 1);
	assert_int_equal(demo_view_holder(v, 2, &tok, NULL), 1);
	assert_int_equal(tok, 50);
	assert_int_equal(demo_view_holder(v, 8, NULL, NULL), 0); /* not in the table */
	/* rev 20: in the scan, skipped; 21: raced the scan (an overlap there is not judged) */
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 2, 50, 1000 * MS, 100 * MS, 20));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 3, 51, 1000 * MS, 200 * MS, 21));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 3, 52, 1000 * MS, 210 * MS, 22));
	demo_view_flush(v, NULL, NULL);
	struct demo_view_counts c = counts(v);
	assert_int_equal(c.skipped, 1);
	assert_int_equal(c.unchecked, 2);
	assert_int_equal(c.resyncs, 1);
	assert_int_equal(c.overlaps + c.regressions, 0);
	/* checked again: account 2 held by 50 until 1000 ms */
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 2, 49, 1300 * MS, 300 * MS, 23));
	demo_view_flush(v, NULL, NULL);
	assert_int_equal(counts(v).overlaps, 1);
	assert_int_equal(counts(v).regressions, 1);
	demo_view_destroy(v);
}

/*
 * A release in flight during the scan: its frame (revision 11) was read
 * and applied, the scan still shows the holder. The frame wins, so the
 * next acquire (revision 12) is no overlap.
 */
static void test_scan_older_than_an_applied_frame_keeps_the_frame(void **state)
{
	demo_view_t *v = view();
	struct orbit_lock_entry e = entry(1, 10, 1000 * MS);

	(void)state;
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 1, 10, 1000 * MS, 100 * MS, 10));
	demo_view_add(v, frame(ORBIT_TRANSITION_RELEASE, 1, 10, 0, 110 * MS, 11));
	demo_view_flush(v, NULL, NULL);
	demo_view_resync_begin(v, 10); /* revision 11 not yet bumped */
	demo_view_resync_entry(v, &e);
	demo_view_resync_end(v, 11);
	assert_int_equal(demo_view_holder(v, 1, NULL, NULL), 0);
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 1, 11, 1200 * MS, 120 * MS, 12));
	demo_view_flush(v, NULL, NULL);
	assert_int_equal(counts(v).overlaps, 0);
	demo_view_destroy(v);
}

/*
 * A restarted observer: its reader starts after the frame of a release in
 * flight (revision 11), its scan still shows the holder. Until revision
 * 11 is read an acquire over the scanned holder is not judged; once it
 * has been, a real overlap over a scanned holder is counted.
 */
static void test_scanned_holder_unjudged_until_the_next_revision_is_read(void **state)
{
	demo_view_t *v = view();
	struct orbit_lock_entry e1 = entry(1, 10, 1000 * MS), e2 = entry(2, 20, 1000 * MS);

	(void)state;
	demo_view_resync_begin(v, 10);
	demo_view_resync_entry(v, &e1);
	demo_view_resync_entry(v, &e2);
	demo_view_resync_end(v, 10);
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 1, 30, 1200 * MS, 120 * MS, 12));
	demo_view_flush(v, NULL, NULL);
	assert_int_equal(counts(v).overlaps, 0);
	assert_int_equal(counts(v).unjudged, 1);
	/* the next scan's revision + 1 is read: scanned holders are judged */
	demo_view_resync_begin(v, 12);
	demo_view_resync_entry(v, &e2);
	demo_view_resync_end(v, 12);
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, -1, 31, 1200 * MS, 130 * MS, 13));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 2, 32, 1200 * MS, 140 * MS, 14));
	demo_view_flush(v, NULL, NULL);
	assert_int_equal(counts(v).overlaps, 1);
	assert_int_equal(counts(v).unjudged, 1);
	demo_view_destroy(v);
}

static int resync_at_10(demo_view_t *v, void *ctx)
{
	(void)ctx;
	demo_view_resync_begin(v, 10); /* read before the repair's bump to 11 */
	demo_view_resync_end(v, 10);
	return 0;
}

/*
 * A mutator dies after its ACQUIRE frame (revision 11, never committed);
 * the repair publishes REPAIR with the same revision 11, then bumps. The
 * observer's scan read 10: the false edge, read after the REPAIR, is
 * still skipped, so the next real holder is no overlap.
 */
static void test_false_edge_sharing_the_repair_revision_is_skipped(void **state)
{
	demo_view_t *v = view();

	(void)state;
	demo_view_add(v, frame(ORBIT_TRANSITION_REPAIR, 0, 0, 0, 100 * MS, 11));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 4, 10, 1000 * MS, 99 * MS, 11));
	demo_view_flush(v, resync_at_10, NULL);
	assert_int_equal(demo_view_holder(v, 4, NULL, NULL), 0);
	assert_int_equal(counts(v).skipped, 1);
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 4, 11, 1100 * MS, 110 * MS, 12));
	demo_view_flush(v, resync_at_10, NULL);
	assert_int_equal(counts(v).overlaps + counts(v).unjudged, 0);
	/* the false edge read before the REPAIR in the batch: the resync drops it too */
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 5, 20, 1000 * MS, 200 * MS, 13));
	demo_view_add(v, frame(ORBIT_TRANSITION_REPAIR, 0, 0, 0, 201 * MS, 13));
	demo_view_flush(v, resync_at_10, NULL);
	assert_int_equal(demo_view_holder(v, 5, NULL, NULL), 0);
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 5, 21, 1100 * MS, 210 * MS, 14));
	demo_view_flush(v, resync_at_10, NULL);
	assert_int_equal(counts(v).overlaps + counts(v).unjudged, 0);
	demo_view_destroy(v);
}

/* A REPAIR with no resync given: everything after it stays unchecked. */
static void test_repair_without_resync_checks_nothing_after(void **state)
{
	demo_view_t *v = view();

	(void)state;
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 1, 10, 1000 * MS, 100 * MS, 1));
	demo_view_add(v, frame(ORBIT_TRANSITION_REPAIR, 0, 0, 0, 150 * MS, 5));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 1, 11, 1000 * MS, 200 * MS, 6));
	demo_view_flush(v, NULL, NULL);
	assert_int_equal(counts(v).overlaps, 0);
	assert_int_equal(counts(v).unchecked, 1);
	demo_view_destroy(v);
}

/*
 * After a lag the batch may lack a lower revision the reader had not
 * reached (the release before the next acquire): applied unchecked, it
 * raises no alarm, and the resync that follows turns the checks back on.
 */
static void test_batch_cut_by_a_lag_is_applied_unchecked(void **state)
{
	demo_view_t *v = view();

	(void)state;
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 1, 10, 1000 * MS, 100 * MS, 1));
	demo_view_flush(v, NULL, NULL);
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 1, 11, 1200 * MS, 200 * MS, 3));
	assert_int_equal(demo_view_flush_unchecked(v), 1);
	assert_int_equal(counts(v).overlaps, 0);
	demo_view_resync_begin(v, 3);
	demo_view_resync_end(v, 3);
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 2, 20, 1200 * MS, 200 * MS, 4));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 2, 21, 1200 * MS, 300 * MS, 5));
	demo_view_flush(v, NULL, NULL);
	assert_int_equal(counts(v).overlaps, 1);
	demo_view_destroy(v);
}

/* The first violation is kept with what the view held then (the report prints it). */
static void test_first_violation_names_both_frames(void **state)
{
	demo_view_t *v = view();
	struct demo_view_violation f;

	(void)state;
	demo_view_first_violation(v, &f);
	assert_int_equal(f.kind, DEMO_VIEW_OK);
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 9, 10, 1000 * MS, 100 * MS, 1));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 9, 11, 1100 * MS, 500 * MS, 2));
	demo_view_add(v, frame(ORBIT_TRANSITION_ACQUIRE, 9, 5, 1100 * MS, 500 * MS, 3));
	demo_view_flush(v, NULL, NULL);
	demo_view_first_violation(v, &f);
	assert_int_equal(f.kind, DEMO_VIEW_OVERLAP);
	assert_int_equal(f.account, 9);
	assert_int_equal(f.token, 11);
	assert_int_equal(f.revision, 2);
	assert_int_equal(f.held_token, 10);
	assert_int_equal(f.held_deadline_ns, 1000 * MS);
	assert_int_equal(f.held_revision, 1);
	assert_int_equal(counts(v).regressions, 1); /* counted, not the first */
	demo_view_destroy(v);
}

/* Account parsing: only the view's namespace and accounts in range. */
static void test_account_keys_only(void **state)
{
	demo_view_t *v = view();
	uint32_t a = 99;

	(void)state;
	assert_int_equal(demo_view_account(v, (const uint8_t *)NS, 12, (const uint8_t *)"9", 1, &a),
			 0);
	assert_int_equal(a, 9);
	assert_int_equal(
	    demo_view_account(v, (const uint8_t *)NS, 12, (const uint8_t *)"10", 2, &a), -ENOENT);
	assert_int_equal(
	    demo_view_account(v, (const uint8_t *)NS, 12, (const uint8_t *)"1x", 2, &a), -ENOENT);
	assert_int_equal(
	    demo_view_account(v, (const uint8_t *)"bank.accoun", 11, (const uint8_t *)"1", 1, &a),
	    -ENOENT);
	assert_int_equal(demo_view_create(NS, 0, &v), -EINVAL);
	demo_view_destroy(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_history_counts_and_flags_nothing),
		cmocka_unit_test(test_overlapping_holders_are_caught),
		cmocka_unit_test(test_force_released_holder_still_overlaps_until_its_deadline),
		cmocka_unit_test(test_token_regressions_are_caught),
		cmocka_unit_test(test_early_reclaim_is_caught),
		cmocka_unit_test(test_frames_out_of_lane_order_are_applied_in_revision_order),
		cmocka_unit_test(test_resync_skips_scanned_frames_and_checks_later_ones),
		cmocka_unit_test(test_scan_older_than_an_applied_frame_keeps_the_frame),
		cmocka_unit_test(test_scanned_holder_unjudged_until_the_next_revision_is_read),
		cmocka_unit_test(test_false_edge_sharing_the_repair_revision_is_skipped),
		cmocka_unit_test(test_repair_without_resync_checks_nothing_after),
		cmocka_unit_test(test_batch_cut_by_a_lag_is_applied_unchecked),
		cmocka_unit_test(test_first_violation_names_both_frames),
		cmocka_unit_test(test_account_keys_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
