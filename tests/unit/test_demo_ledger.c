// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_demo_ledger.c: the bank demo's ledger (issue 13, "The
 * workload"): a transfer is applied once (a redelivered id is a
 * duplicate), a write carrying a token older than the account's newest is
 * refused with the whole transfer, no balance goes below zero, a process
 * SIGKILLed between the two balance writes leaves nothing applied, and
 * the audit really finds an accepted stale write when one is forced in.
 */
#include "config.h"

#include "orbit_test.h"

#include <errno.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent/demo_ledger.h"

static char path[128];

static int setup(void **state)
{
	demo_ledger_t *l;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/orbit-test-ledger-%ld.db", (long)getpid());
	if (demo_ledger_open(path, &l) || demo_ledger_init(l, 4, 100))
		return -1;
	demo_ledger_close(l);
	return 0;
}

static int teardown(void **state)
{
	char p[160];

	(void)state;
	unlink(path);
	snprintf(p, sizeof(p), "%s-wal", path);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", path);
	unlink(p);
	return 0;
}

static void check_audit(demo_ledger_t *l, uint64_t transfers)
{
	struct demo_ledger_audit a;

	assert_int_equal(demo_ledger_audit(l, &a), 0);
	assert_int_equal(a.total, 400); /* money is neither made nor lost */
	assert_true(a.min_balance >= 0);
	assert_int_equal(a.accounts, 4);
	assert_int_equal(a.transfers, transfers);
	assert_int_equal(a.writes, 2 * transfers);
	assert_int_equal(a.stale_accepted, 0);
}

/* A transfer moves money; the same id again is a duplicate and changes nothing. */
static void test_ledger_transfer_applies_once(void **state)
{
	struct demo_transfer t = {
		.id = 7, .from = 0, .to = 1, .amount = 30, .from_token = 10, .to_token = 11
	};
	demo_ledger_t *l;
	int64_t b;
	uint64_t tok;

	(void)state;
	assert_int_equal(demo_ledger_open(path, &l), 0);
	assert_int_equal(demo_ledger_transfer(l, &t, 1000), DEMO_LEDGER_APPLIED);
	t.from_token = 20; /* a redelivery under a newer tenure: still applied once */
	t.to_token = 21;
	assert_int_equal(demo_ledger_transfer(l, &t, 1000), DEMO_LEDGER_DUPLICATE);
	assert_int_equal(demo_ledger_balance(l, 0, &b, &tok), 0);
	assert_int_equal(b, 70);
	assert_int_equal(tok, 10);
	assert_int_equal(demo_ledger_balance(l, 1, &b, &tok), 0);
	assert_int_equal(b, 130);
	check_audit(l, 1);
	demo_ledger_close(l);
}

/* A token older than the account's newest is refused, and the transfer with it. */
static void test_ledger_refuses_stale_token(void **state)
{
	struct demo_transfer newer = {
		.id = 1, .from = 2, .to = 3, .amount = 5, .from_token = 50, .to_token = 51
	};
	struct demo_transfer stale = {
		.id = 2, .from = 3, .to = 2, .amount = 5, .from_token = 52, .to_token = 49
	};
	demo_ledger_t *l;
	int64_t b;
	uint64_t tok;

	(void)state;
	assert_int_equal(demo_ledger_open(path, &l), 0);
	assert_int_equal(demo_ledger_transfer(l, &newer, 1000), DEMO_LEDGER_APPLIED);
	/* Account 2's newest token is 50: a credit to it carrying 49 is stale. */
	assert_int_equal(demo_ledger_transfer(l, &stale, 1000), DEMO_LEDGER_STALE);
	assert_int_equal(demo_ledger_balance(l, 3, &b, &tok), 0);
	assert_int_equal(b, 105); /* the debit of the refused transfer was rolled back */
	assert_int_equal(tok, 51);
	stale.from_token = 40; /* and a stale debit */
	stale.to_token = 60;
	assert_int_equal(demo_ledger_transfer(l, &stale, 1000), DEMO_LEDGER_STALE);
	check_audit(l, 1);
	demo_ledger_close(l);
}

/* No balance below zero; the refusal is told apart from a stale token. */
static void test_ledger_refuses_overdraft(void **state)
{
	struct demo_transfer t = {
		.id = 3, .from = 0, .to = 1, .amount = 101, .from_token = 1, .to_token = 1
	};
	demo_ledger_t *l;

	(void)state;
	assert_int_equal(demo_ledger_open(path, &l), 0);
	assert_int_equal(demo_ledger_transfer(l, &t, 1000), DEMO_LEDGER_INSUFFICIENT);
	t.amount = 0;
	assert_int_equal(demo_ledger_transfer(l, &t, 1000), -EINVAL);
	/* A redelivery that no longer has the funds is still a duplicate, not a refusal. */
	t.amount = 100;
	assert_int_equal(demo_ledger_transfer(l, &t, 1000), DEMO_LEDGER_APPLIED);
	assert_int_equal(demo_ledger_transfer(l, &t, 1000), DEMO_LEDGER_DUPLICATE);
	check_audit(l, 1);
	demo_ledger_close(l);
}

/* A paused holder's late write is refused as stale even after its transfer was applied. */
static void test_ledger_late_write_is_stale_before_duplicate(void **state)
{
	struct demo_transfer t = {
		.id = 5, .from = 0, .to = 1, .amount = 2, .from_token = 30, .to_token = 31
	};
	demo_ledger_t *l;

	(void)state;
	assert_int_equal(demo_ledger_open(path, &l), 0);
	t.from_token = 40; /* the adopting host, newer tokens */
	t.to_token = 41;
	assert_int_equal(demo_ledger_transfer(l, &t, 1000), DEMO_LEDGER_APPLIED);
	t.from_token = 30; /* the paused holder wakes with its old tokens */
	t.to_token = 31;
	assert_int_equal(demo_ledger_transfer(l, &t, 1000), DEMO_LEDGER_STALE);
	check_audit(l, 1);
	demo_ledger_close(l);
}

static void die_now(void)
{
	kill(getpid(), SIGKILL);
}

/* SIGKILL between the two balance writes: nothing applied; the redelivery applies once. */
static void test_ledger_kill_between_writes_leaves_nothing(void **state)
{
	struct demo_transfer t = {
		.id = 9, .from = 1, .to = 2, .amount = 40, .from_token = 100, .to_token = 101
	};
	demo_ledger_t *l;
	int64_t b;
	uint64_t tok;
	pid_t pid;
	int st;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		demo_ledger_t *c;

		if (demo_ledger_open(path, &c))
			_exit(1);
		demo_ledger_between_writes = die_now;
		demo_ledger_transfer(c, &t, 1000);
		_exit(2); /* not reached */
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_int_equal(demo_ledger_open(path, &l), 0);
	assert_int_equal(demo_ledger_balance(l, 1, &b, &tok), 0);
	assert_int_equal(b, 100); /* the debit died with its transaction */
	assert_int_equal(tok, 0);
	check_audit(l, 0);
	assert_int_equal(demo_ledger_transfer(l, &t, 1000), DEMO_LEDGER_APPLIED);
	assert_int_equal(demo_ledger_transfer(l, &t, 1000), DEMO_LEDGER_DUPLICATE);
	check_audit(l, 1);
	demo_ledger_close(l);
}

/* The audit is a real check: a stale write forced past the ledger is found. */
static void test_ledger_audit_finds_a_forced_stale_write(void **state)
{
	struct demo_transfer t = {
		.id = 4, .from = 0, .to = 1, .amount = 1, .from_token = 70, .to_token = 71
	};
	struct demo_ledger_audit a;
	demo_ledger_t *l;
	sqlite3 *db;

	(void)state;
	assert_int_equal(demo_ledger_open(path, &l), 0);
	assert_int_equal(demo_ledger_transfer(l, &t, 1000), DEMO_LEDGER_APPLIED);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "INSERT INTO writes (account, token) VALUES (0, 69)",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(demo_ledger_audit(l, &a), 0);
	assert_int_equal(a.stale_accepted, 1);
	demo_ledger_close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ledger_transfer_applies_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ledger_refuses_stale_token, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ledger_refuses_overdraft, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ledger_late_write_is_stale_before_duplicate,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_ledger_kill_between_writes_leaves_nothing,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_ledger_audit_finds_a_forced_stale_write, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
