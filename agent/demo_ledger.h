/* SPDX-License-Identifier: MIT */
/*
 * agent/demo_ledger.h: the bank demo's ledger (the resource its fencing
 * tokens protect): account balances in one SQLite database in WAL mode,
 * shared by every worker process of the demo.
 *
 * Why SQLite and not a file per shard: a transfer writes two balances,
 * possibly of two shards, and must be atomic across a SIGKILL at any
 * instruction. SQLite's write-ahead log is exactly the intent the issue
 * asks for (a killed writer's transaction is rolled back by the next
 * opener, a committed one is complete), it is a well-kept Debian library,
 * and the checks a fencing resource needs (token not older than the
 * newest seen, transfer id not applied before, balance not below zero)
 * become conditions of the same transaction. A hand-written intent log
 * per shard would do the same with more code to get wrong.
 *
 * Fencing: every account row keeps the newest token any accepted write
 * carried; a write whose token is older is refused (DEMO_LEDGER_STALE) and
 * the whole transfer with it. Every accepted write is appended to an
 * audit table, so the final report can prove that no stale write was ever
 * accepted (demo_ledger_audit()), independently of the check itself.
 *
 * Context: one handle per process (SQLite connections are not shared
 * across fork); a handle is used by one thread at a time.
 */
#ifndef ORBIT_AGENT_DEMO_LEDGER_H
#define ORBIT_AGENT_DEMO_LEDGER_H

#include <stdint.h>

typedef struct demo_ledger demo_ledger_t;

enum demo_ledger_result {
	DEMO_LEDGER_APPLIED = 0,
	DEMO_LEDGER_DUPLICATE = 1,    /* this transfer id was applied before: nothing done */
	DEMO_LEDGER_STALE = 2,	      /* a token older than the account's newest: refused */
	DEMO_LEDGER_INSUFFICIENT = 3, /* the source would go below zero: refused */
};

struct demo_transfer {
	uint64_t id; /* unique per transfer (the client's), the dedupe key */
	uint32_t from, to;
	int64_t amount;		       /* > 0 */
	uint64_t from_token, to_token; /* the fencing tokens of both account locks */
	int credit_extra; /* a deliberate bug for the demo's --inject-bug: credit one more */
};

struct demo_ledger_audit {
	int64_t total; /* sum of all balances */
	int64_t min_balance;
	uint64_t accounts;
	uint64_t transfers;	 /* applied, each once (the id is the key) */
	uint64_t writes;	 /* accepted balance writes (two per transfer) */
	uint64_t stale_accepted; /* accepted writes older than an earlier accepted write of
				     the same account: must be 0 */
};

/*
 * demo_ledger_open - open (create) the database at @path in WAL mode.
 * Returns 0 or a negative errno (-EIO with the SQLite message on stderr).
 */
int demo_ledger_open(const char *path, demo_ledger_t **out);
void demo_ledger_close(demo_ledger_t *l);

/* Accounts 0..@n-1 with @initial each, if the table is empty. Returns 0 or -EIO. */
int demo_ledger_init(demo_ledger_t *l, uint32_t n, int64_t initial);

/*
 * demo_ledger_transfer - apply @t atomically: both balances, both tokens,
 * the transfer id, the audit rows, or nothing. Waits for SQLite's lock at
 * most @busy_ms (other processes write too).
 * Returns a demo_ledger_result (>= 0), -EBUSY (the database stayed locked
 * past @busy_ms: nothing applied, try again), -EINVAL, -EIO.
 */
int demo_ledger_transfer(demo_ledger_t *l, const struct demo_transfer *t, int busy_ms);

/* The final checks' figures. Returns 0 or -EIO. */
int demo_ledger_audit(demo_ledger_t *l, struct demo_ledger_audit *out);

/* Balance and newest token of one account. Returns 0, -ENOENT, -EIO. */
int demo_ledger_balance(demo_ledger_t *l, uint32_t account, int64_t *balance, uint64_t *token);

/* Whether transfer @id was applied: 1, 0, or -EIO. */
int demo_ledger_has_transfer(demo_ledger_t *l, uint64_t id);

/*
 * Test hook: called between the two balance updates of a transfer (a
 * kill test SIGKILLs the process there). NULL in the demo.
 */
extern void (*demo_ledger_between_writes)(void);

#endif /* ORBIT_AGENT_DEMO_LEDGER_H */
