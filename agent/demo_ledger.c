// SPDX-License-Identifier: MIT
/*
 * agent/demo_ledger.c: the bank demo's ledger on SQLite (WAL mode); see
 * demo_ledger.h for why. One transaction per transfer: the dedupe check,
 * two conditional balance updates (token not older than the account's
 * newest; no balance below zero), the transfer row and two audit rows.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "agent/demo_ledger.h"

void (*demo_ledger_between_writes)(void);

enum stmt {
	S_BEGIN,
	S_COMMIT,
	S_ROLLBACK,
	S_SEEN,
	S_DEBIT,
	S_CREDIT,
	S_WHY, /* after a refused debit: stale or insufficient? */
	S_RECORD,
	S_AUDIT_WRITE,
	S_BALANCE,
	S_N
};

static const char *const sql[S_N] = {
	[S_BEGIN] = "BEGIN IMMEDIATE",
	[S_COMMIT] = "COMMIT",
	[S_ROLLBACK] = "ROLLBACK",
	[S_SEEN] = "SELECT 1 FROM transfers WHERE id = ?1",
	[S_DEBIT] = "UPDATE accounts SET balance = balance - ?2, token = ?3 "
		    "WHERE id = ?1 AND token <= ?3 AND balance >= ?2",
	[S_CREDIT] = "UPDATE accounts SET balance = balance + ?2, token = ?3 "
		     "WHERE id = ?1 AND token <= ?3",
	[S_WHY] = "SELECT token > ?2 FROM accounts WHERE id = ?1",
	[S_RECORD] = "INSERT INTO transfers (id, src, dst, amount) VALUES (?1, ?2, ?3, ?4)",
	[S_AUDIT_WRITE] = "INSERT INTO writes (account, token) VALUES (?1, ?2)",
	[S_BALANCE] = "SELECT balance, token FROM accounts WHERE id = ?1",
};

struct demo_ledger {
	sqlite3 *db;
	sqlite3_stmt *st[S_N];
};

static int fail(demo_ledger_t *l, const char *what)
{
	fprintf(stderr, "demo ledger: %s: %s\n", what, l && l->db ? sqlite3_errmsg(l->db) : "?");
	return -EIO;
}

/* Run one prepared statement to its end (or its first row when @row). */
static int step(demo_ledger_t *l, enum stmt s, int *row)
{
	int rc = sqlite3_step(l->st[s]);

	if (row)
		*row = rc == SQLITE_ROW;
	if (rc == SQLITE_ROW && !row)
		while ((rc = sqlite3_step(l->st[s])) == SQLITE_ROW)
			;
	if (rc == SQLITE_BUSY)
		return -EBUSY;
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return fail(l, sql[s]);
	return 0;
}

static void done(demo_ledger_t *l, enum stmt s)
{
	sqlite3_reset(l->st[s]);
	sqlite3_clear_bindings(l->st[s]);
}

int demo_ledger_open(const char *path, demo_ledger_t **out)
{
	static const char schema[] =
	    "PRAGMA journal_mode = WAL;"
	    "PRAGMA synchronous = NORMAL;" /* WAL: durable at checkpoints; atomic always */
	    "CREATE TABLE IF NOT EXISTS accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT "
	    "NULL, token INTEGER NOT NULL DEFAULT 0);"
	    "CREATE TABLE IF NOT EXISTS transfers (id INTEGER PRIMARY KEY, src INTEGER, dst "
	    "INTEGER, amount INTEGER);"
	    "CREATE TABLE IF NOT EXISTS writes (seq INTEGER PRIMARY KEY AUTOINCREMENT, account "
	    "INTEGER NOT NULL, token INTEGER NOT NULL);";
	demo_ledger_t *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	if (sqlite3_open_v2(path, &l->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK)
		goto err;
	sqlite3_busy_timeout(l->db, 5000); /* schema set-up: others may be writing */
	if (sqlite3_exec(l->db, schema, NULL, NULL, NULL) != SQLITE_OK)
		goto err;
	for (int s = 0; s < S_N; s++)
		if (sqlite3_prepare_v2(l->db, sql[s], -1, &l->st[s], NULL) != SQLITE_OK)
			goto err;
	*out = l;
	return 0;
err:
	fail(l, path);
	demo_ledger_close(l);
	return -EIO;
}

void demo_ledger_close(demo_ledger_t *l)
{
	if (!l)
		return;
	for (int s = 0; s < S_N; s++)
		sqlite3_finalize(l->st[s]);
	sqlite3_close(l->db);
	free(l);
}

int demo_ledger_init(demo_ledger_t *l, uint32_t n, int64_t initial)
{
	char q[160];

	/* One statement: a second process running it at once inserts nothing twice. */
	snprintf(q, sizeof(q),
		 "WITH RECURSIVE a(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM a WHERE i + 1 < %u) "
		 "INSERT OR IGNORE INTO accounts (id, balance) SELECT i, %lld FROM a",
		 n, (long long)initial);
	return sqlite3_exec(l->db, q, NULL, NULL, NULL) == SQLITE_OK ? 0 : fail(l, "init");
}

/* The two audit rows and the transfer row, inside the open transaction. */
static int record(demo_ledger_t *l, const struct demo_transfer *t)
{
	int rc;

	sqlite3_bind_int64(l->st[S_RECORD], 1, (sqlite3_int64)t->id);
	sqlite3_bind_int64(l->st[S_RECORD], 2, t->from);
	sqlite3_bind_int64(l->st[S_RECORD], 3, t->to);
	sqlite3_bind_int64(l->st[S_RECORD], 4, t->amount);
	rc = step(l, S_RECORD, NULL);
	done(l, S_RECORD);
	for (int k = 0; k < 2 && !rc; k++) {
		sqlite3_bind_int64(l->st[S_AUDIT_WRITE], 1, k ? t->to : t->from);
		sqlite3_bind_int64(l->st[S_AUDIT_WRITE], 2,
				   (sqlite3_int64)(k ? t->to_token : t->from_token));
		rc = step(l, S_AUDIT_WRITE, NULL);
		done(l, S_AUDIT_WRITE);
	}
	return rc;
}

int demo_ledger_transfer(demo_ledger_t *l, const struct demo_transfer *t, int busy_ms)
{
	int rc, row, result = DEMO_LEDGER_APPLIED;

	if (!l || !t || t->amount <= 0 || t->from == t->to || t->from_token > INT64_MAX ||
	    t->to_token > INT64_MAX || t->id > INT64_MAX)
		return -EINVAL;
	sqlite3_busy_timeout(l->db, busy_ms);
	rc = step(l, S_BEGIN, NULL);
	done(l, S_BEGIN);
	if (rc)
		return rc;
	sqlite3_bind_int64(l->st[S_DEBIT], 1, t->from);
	sqlite3_bind_int64(l->st[S_DEBIT], 2, t->amount);
	sqlite3_bind_int64(l->st[S_DEBIT], 3, (sqlite3_int64)t->from_token);
	rc = step(l, S_DEBIT, NULL);
	done(l, S_DEBIT);
	if (rc)
		goto rollback;
	if (sqlite3_changes(l->db) != 1) {
		/* Refused: tell a stale token from too little money. */
		sqlite3_bind_int64(l->st[S_WHY], 1, t->from);
		sqlite3_bind_int64(l->st[S_WHY], 2, (sqlite3_int64)t->from_token);
		rc = step(l, S_WHY, &row);
		result = row && sqlite3_column_int(l->st[S_WHY], 0) ? DEMO_LEDGER_STALE
								    : DEMO_LEDGER_INSUFFICIENT;
		done(l, S_WHY);
		if (!rc && result == DEMO_LEDGER_INSUFFICIENT) {
			/* Too little money now, or applied before (a redelivery)? */
			sqlite3_bind_int64(l->st[S_SEEN], 1, (sqlite3_int64)t->id);
			rc = step(l, S_SEEN, &row);
			done(l, S_SEEN);
			if (!rc && row)
				result = DEMO_LEDGER_DUPLICATE;
		}
		goto rollback;
	}
	if (demo_ledger_between_writes)
		demo_ledger_between_writes(); /* a kill here must leave nothing applied */
	sqlite3_bind_int64(l->st[S_CREDIT], 1, t->to);
	sqlite3_bind_int64(l->st[S_CREDIT], 2, t->amount + (t->credit_extra ? 1 : 0));
	sqlite3_bind_int64(l->st[S_CREDIT], 3, (sqlite3_int64)t->to_token);
	rc = step(l, S_CREDIT, NULL);
	done(l, S_CREDIT);
	if (rc)
		goto rollback;
	if (sqlite3_changes(l->db) != 1) {
		result = DEMO_LEDGER_STALE;
		goto rollback;
	}
	/*
	 * Redelivered? Applied once, whoever applied it. Checked after the
	 * fencing conditions, so that a late write of a paused holder is
	 * refused as stale even when its transfer was applied meanwhile.
	 */
	sqlite3_bind_int64(l->st[S_SEEN], 1, (sqlite3_int64)t->id);
	rc = step(l, S_SEEN, &row);
	done(l, S_SEEN);
	if (rc)
		goto rollback;
	if (row) {
		result = DEMO_LEDGER_DUPLICATE;
		goto rollback; /* undo the two updates: nothing applied twice */
	}
	rc = record(l, t);
	if (rc)
		goto rollback;
	rc = step(l, S_COMMIT, NULL);
	done(l, S_COMMIT);
	if (rc == 0)
		return DEMO_LEDGER_APPLIED;
rollback:
	step(l, S_ROLLBACK, NULL);
	done(l, S_ROLLBACK);
	return rc ? rc : result;
}

int demo_ledger_balance(demo_ledger_t *l, uint32_t account, int64_t *balance, uint64_t *token)
{
	int rc, row;

	sqlite3_bind_int64(l->st[S_BALANCE], 1, account);
	rc = step(l, S_BALANCE, &row);
	if (!rc && row) {
		*balance = sqlite3_column_int64(l->st[S_BALANCE], 0);
		*token = (uint64_t)sqlite3_column_int64(l->st[S_BALANCE], 1);
	}
	done(l, S_BALANCE);
	return rc ? rc : row ? 0 : -ENOENT;
}

int demo_ledger_has_transfer(demo_ledger_t *l, uint64_t id)
{
	int rc, row;

	sqlite3_bind_int64(l->st[S_SEEN], 1, (sqlite3_int64)id);
	rc = step(l, S_SEEN, &row);
	done(l, S_SEEN);
	return rc ? rc : row;
}

/* One integer of a one-row query. */
static int scalar(demo_ledger_t *l, const char *q, int64_t *v)
{
	sqlite3_stmt *s;
	int rc;

	if (sqlite3_prepare_v2(l->db, q, -1, &s, NULL) != SQLITE_OK)
		return fail(l, q);
	rc = sqlite3_step(s);
	*v = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
	sqlite3_finalize(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : fail(l, q);
}

int demo_ledger_audit(demo_ledger_t *l, struct demo_ledger_audit *out)
{
	int64_t v[6];
	/* A write is stale when an earlier accepted write of its account carried a newer token. */
	static const char *const q[6] = {
		"SELECT COALESCE(SUM(balance), 0) FROM accounts",
		"SELECT COALESCE(MIN(balance), 0) FROM accounts",
		"SELECT COUNT(*) FROM accounts",
		"SELECT COUNT(*) FROM transfers",
		"SELECT COUNT(*) FROM writes",
		"SELECT COUNT(*) FROM (SELECT token, MAX(token) OVER (PARTITION BY account ORDER "
		"BY "
		"seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS newest FROM writes) "
		"WHERE token < newest",
	};

	sqlite3_busy_timeout(l->db, 5000);
	for (int i = 0; i < 6; i++)
		if (scalar(l, q[i], &v[i]))
			return -EIO;
	out->total = v[0];
	out->min_balance = v[1];
	out->accounts = (uint64_t)v[2];
	out->transfers = (uint64_t)v[3];
	out->writes = (uint64_t)v[4];
	out->stale_accepted = (uint64_t)v[5];
	return 0;
}
