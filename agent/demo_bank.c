// SPDX-License-Identifier: MIT
/*
 * agent/demo_bank.c: the fleet demo's main scenario, a bank of accounts
 * run by a fleet under chaos (orbit-demo --scenario bank, the default).
 *
 * Worker processes host one Spot per shard of accounts ("bank.s<N>"),
 * each account an Actor of its shard's Spot, under the hosting lease;
 * when a worker dies its shards are adopted by the survivors. Client
 * processes submit transfers (from, to, amount, a unique id) to the Spot
 * of the source account through the cross-process Spot queues, as fast as
 * the queues take them, backing off on -EAGAIN. A transfer's handler
 * takes orbit-locks on both accounts in a fixed order and writes both
 * balances with the locks' fencing tokens to the ledger (agent/demo_ledger.c:
 * SQLite in WAL mode), which refuses a token older than the newest it saw
 * and applies a transfer id once. A chaos loop SIGKILLs workers (inside
 * handlers when it can) and clients, and SIGSTOPs a worker past its
 * hosting lease now and then. Observer processes follow the transition
 * ring and keep their own view of the account locks (agent/demo_observer.c):
 * they check, independently of the workers, that no two holders of one
 * account overlap and that an account's tokens only increase, and at the
 * end that their view agrees with the lock table; the chaos loop kills
 * them too, and a restarted observer resyncs from the table. A live status
 * line runs; the report checks the invariants and the exit status is 1
 * when one fails.
 *
 * The supervisor (this process) runs no agent and no orbit thread, so its
 * fork()s are plain; every child starts its own agent.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <orbit/orbit.h>

#include "agent/demo_bank.h"
#include "agent/demo_ledger.h"
#include "agent/demo_observer.h"

#define MAX_PROCS 32
#define MAX_SHARDS 64
#define MAX_OBSERVERS 8
#define LAT_BUCKETS 40
#define INITIAL_BALANCE 1000
#define LOCK_TTL_NS 1000000000ull /* account locks */
#define HOST_TTL_NS 1000000000ull /* hosting leases: adoption within about this */

ORBIT_LOCK_DEFINE_NAMESPACE(acct_ns, "bank.account");

static struct bank_cfg {
	int seconds, workers, clients, shards, accounts, observers;
	double chaos; /* chaos events per second */
	char fleet[48];
	char plot[256];
	char dir[160], db[200];
	int keep;
	int inject_bug; /* --inject-bug[=KIND]: a deliberate bug the report must catch */
	int work_us;	/* a handler's own work between taking its locks and writing */
} cfg = { 30, 4, 2, 0, 1000, 1, 1.0, "", "", "", "", 0, 0, 200 }; /* shards 0: 8, at most A */

/* The deliberate bugs of --inject-bug (the report must fail with each). */
enum {
	BUG_NONE = 0,
	BUG_CREDIT = 1, /* credit one unit too many per transfer: the total is wrong */
	BUG_STEAL = 2,	/* a handler that waited breaks the account lock (force release):
			   two holders at once, which the markers and the observers see */
};

/* A transfer on the wire (the record's payload). */
struct transfer_msg {
	uint64_t id;
	uint32_t from, to;
	int64_t amount;
	uint64_t submit_ns; /* CLOCK_MONOTONIC: one host, one clock */
};

struct proc_slot {
	_Atomic int pid;
	_Atomic int in_handler; /* worker: a transfer between its locks */
	_Atomic int stopped;	/* SIGSTOPped by the chaos loop */
};

/*
 * An observer's figures, summed over its incarnations: each incarnation
 * adds its view's counts (demo_view_counts) to what the slot held when it
 * started (base), so a kill loses at most the last batch. Written by the
 * observer process alone (one incarnation at a time: the supervisor
 * starts the next after reaping the last), read by the supervisor for the
 * status line and the report. A kill between two stores leaves some
 * figures one batch behind the others. first[] is claimed with first_set
 * before it is written: a kill in between leaves it empty or cut short.
 */
struct observer_slot {
	_Atomic int pid;
	_Atomic uint64_t starts;
	_Atomic uint64_t acquired, released, expired, forced;
	_Atomic uint64_t overlaps, early_expiries, regressions, resyncs, lags, frames, unjudged;
	/* Written once by the incarnation that stops at the end: */
	_Atomic int final_done;
	_Atomic uint64_t final_agree, final_differ;
	/* The first violation an incarnation found, once (first_set claims it). */
	_Atomic int first_set;
	char first[400];
};

struct shard_slot {
	_Atomic int host_pid; /* the worker hosting it (0: none) */
	_Atomic uint32_t depth;
	_Atomic uint64_t epoch;
};

/* Who is inside an account's critical section (mutual exclusion check). */
struct marker {
	_Atomic uint64_t token;
	_Atomic uint64_t deadline_ns;
};

/* Shared by the supervisor and every child (anonymous MAP_SHARED). */
struct bank_shared {
	_Atomic int stop_clients, stop_workers;
	_Atomic int workers_alive;
	_Atomic uint64_t next_client_uid;
	_Atomic uint64_t accepted, rejected, applied, duplicates, stale, insufficient;
	_Atomic uint64_t violations, redelivered, adoptions, lost, handler_errors, lock_retries;
	_Atomic uint64_t lat[LAT_BUCKETS]; /* submit -> handler start, log2 ns */
	_Atomic int stop_observers;
	struct proc_slot w[MAX_PROCS], c[MAX_PROCS];
	struct shard_slot s[MAX_SHARDS];
	struct observer_slot o[MAX_OBSERVERS];
	struct marker m[]; /* one per account */
};

static struct bank_shared *sh;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void spot_name(char *out, size_t len, int shard)
{
	snprintf(out, len, "bank.s%d", shard);
}

static unsigned lat_bucket(uint64_t ns)
{
	unsigned b = 0;

	while (ns > 1 && b < LAT_BUCKETS - 1) {
		ns >>= 1;
		b++;
	}
	return b;
}

/* ---- workers: host shards, run transfers ---- */

/*
 * A worker's parts, each watched by its agent so that its counters are in
 * the worker's stats row (orbitctl --fleet demo stats): the worker pool
 * the handlers run on (pool_*), one Spot coordinator per hosted shard
 * (exec_*), the state lane that owns the SQLite connection (lane_*: one
 * connection, one turn at a time) and the receipts queue (queue_*).
 */
struct worker {
	int idx;
	orbit_lock_t *lock;
	demo_ledger_t *ledger; /* owned by ledger_lane: touched only in its turns */
	orbit_state_lane_t *ledger_lane;
	orbit_serial_queue_t *receipts; /* a transfer's outcome, counted off its handler's turn */
	_Atomic uint64_t owner_seq;
};

/* Take @account's lock, waiting (the holder may be stopped: its lease runs out). */
static void lock_account(struct worker *w, uint32_t account, orbit_lock_owner_t *me,
			 struct orbit_lock_lease *lease)
{
	char label[16];
	orbit_lock_key_t key;
	int rc, waits = 0;

	snprintf(label, sizeof(label), "%u", account);
	key = orbit_lock_key(acct_ns, label, strlen(label));
	while ((rc = orbit_lock_try_acquire(w->lock, &key, me, LOCK_TTL_NS, lease, NULL)) != 0) {
		if (rc == -EBUSY && cfg.inject_bug == BUG_STEAL && ++waits >= 5) {
			/* The bug: "waited a millisecond, the holder must be stuck". */
			orbit_lock_force_release(w->lock, &key);
			waits = 0;
			continue;
		}
		if (rc != -EBUSY && rc != -EAGAIN) {
			/* -ENOSPC: the table is full of leases of killed holders until they expire */
			atomic_fetch_add(&sh->lock_retries, 1);
			usleep(1000);
		}
		usleep(200);
	}
}

static void unlock_account(struct worker *w, uint32_t account, orbit_lock_owner_t *me,
			   uint64_t token)
{
	char label[16];
	orbit_lock_key_t key;

	snprintf(label, sizeof(label), "%u", account);
	key = orbit_lock_key(acct_ns, label, strlen(label));
	orbit_lock_release(w->lock, &key, me, token); /* -ENOENT/-EPERM: it expired meanwhile */
}

/*
 * Mark @account entered under @lease. A violation is two holders whose
 * leases are both unexpired at once: another holder's marker with a
 * deadline still ahead while ours is still valid too. A holder whose own
 * lease ran out (it was paused after taking it) is no holder any more:
 * it marks nothing and its write is fenced by the ledger.
 */
static void enter(uint32_t account, const struct orbit_lock_lease *lease)
{
	struct marker *m = &sh->m[account];
	uint64_t t = atomic_load(&m->token), d = atomic_load(&m->deadline_ns), now = now_ns();

	if (lease->deadline_ns <= now)
		return; /* expired before we got here: not in the critical section */
	if (t && t != lease->token && d > now)
		atomic_fetch_add(&sh->violations, 1); /* someone else holds an unexpired lease */
	atomic_store(&m->deadline_ns, lease->deadline_ns);
	atomic_store(&m->token, lease->token);
}

static void leave(uint32_t account, uint64_t token)
{
	uint64_t t = token;

	atomic_compare_exchange_strong(&sh->m[account].token, &t, 0);
}

/* One ledger write, in a turn of the worker's ledger lane. */
struct ledger_job {
	struct worker *w;
	const struct demo_transfer *t;
	int rc; /* the ledger's answer (its codes could be taken for the lane's) */
};

static int ledger_turn(void *arg)
{
	struct ledger_job *j = arg;

	do
		j->rc = demo_ledger_transfer(j->w->ledger, j->t, 2000);
	while (j->rc == -EBUSY);
	return 0;
}

/* A transfer's outcome into the run's figures (the status line and the report). */
static void count_outcome(int rc)
{
	switch (rc) {
	case DEMO_LEDGER_APPLIED:
		atomic_fetch_add(&sh->applied, 1);
		break;
	case DEMO_LEDGER_DUPLICATE:
		atomic_fetch_add(&sh->duplicates, 1);
		break;
	case DEMO_LEDGER_INSUFFICIENT:
		atomic_fetch_add(&sh->insufficient, 1);
		break;
	default:
		atomic_fetch_add(&sh->handler_errors, 1);
		break;
	}
}

/* A receipt: runs on the receipts queue after the transfer's record completed. */
static int receipt(orbit_serial_turn_t *turn, void *arg)
{
	(void)turn;
	count_outcome((int)(intptr_t)arg);
	return ORBIT_SERIAL_DONE;
}

static int on_transfer(orbit_serial_turn_t *turn, const struct orbit_spot_record *rec, void *ctx)
{
	struct worker *w = ctx;
	struct transfer_msg msg;
	struct orbit_lock_lease l1, l2;
	struct demo_transfer t;
	char owner[48];
	orbit_lock_owner_t me;
	uint32_t lo, hi;
	int rc;

	(void)turn;
	if (rec->len != sizeof(msg)) {
		atomic_fetch_add(&sh->handler_errors, 1);
		return ORBIT_SERIAL_DONE;
	}
	memcpy(&msg, rec->payload, sizeof(msg));
	if (msg.from >= (uint32_t)cfg.accounts || msg.to >= (uint32_t)cfg.accounts ||
	    msg.from == msg.to) {
		atomic_fetch_add(&sh->handler_errors, 1);
		return ORBIT_SERIAL_DONE;
	}
	atomic_fetch_add(&sh->lat[lat_bucket(now_ns() - msg.submit_ns)], 1);
	if (rec->redelivered)
		atomic_fetch_add(&sh->redelivered, 1);
	/* A unique owner per transfer: two handlers of one process never share a tenure. */
	snprintf(owner, sizeof(owner), "w%d.%d.%llu", w->idx, (int)getpid(),
		 (unsigned long long)atomic_fetch_add(&w->owner_seq, 1));
	me.bytes = owner;
	me.len = strlen(owner);
	lo = msg.from < msg.to ? msg.from : msg.to; /* fixed order: no deadlock */
	hi = msg.from < msg.to ? msg.to : msg.from;
	for (;;) {
		lock_account(w, lo, &me, &l1);
		lock_account(w, hi, &me, &l2);
		atomic_store(&sh->w[w->idx].in_handler, 1);
		enter(lo, &l1);
		enter(hi, &l2);
		if (cfg.work_us > 0)
			usleep((useconds_t)cfg
				   .work_us); /* the business logic: a pause here is a late write */
		t.id = msg.id;
		t.from = msg.from;
		t.to = msg.to;
		t.amount = msg.amount;
		t.credit_extra = cfg.inject_bug == BUG_CREDIT;
		t.from_token = msg.from == lo ? l1.token : l2.token;
		t.to_token = msg.to == lo ? l1.token : l2.token;
		struct ledger_job job = { .w = w, .t = &t };

		rc = orbit_state_lane_run(w->ledger_lane, ledger_turn, &job);
		if (rc == 0)
			rc = job.rc;
		leave(hi, l2.token);
		leave(lo, l1.token);
		atomic_store(&sh->w[w->idx].in_handler, 0);
		unlock_account(w, hi, &me, l2.token);
		unlock_account(w, lo, &me, l1.token);
		if (rc != DEMO_LEDGER_STALE)
			break;
		/*
		 * Refused as stale: this handler was paused past its locks and a
		 * newer holder wrote meanwhile. The transfer is not applied by
		 * this write; completing the record now would lose it when no
		 * newer host took the Spot over. Take the locks again: the next
		 * write applies it, or finds it applied (a duplicate).
		 */
		atomic_fetch_add(&sh->stale, 1);
	}
	/* The bookkeeping goes to the receipts queue; a full queue (-EAGAIN) counts it here. */
	if (orbit_serial_queue_enqueue(w->receipts, receipt, (void *)(intptr_t)rc) != 0)
		count_outcome(rc);
	return ORBIT_SERIAL_DONE;
}

/* A hosted shard: its host and the coordinator its records run on. */
struct shard_host {
	orbit_spot_host_t *host;
	orbit_spot_serial_executor_t *coord; /* made before the host, freed after it */
	bool watched;			     /* coord is watched by the agent */
};

/*
 * Stop hosting @sh (or give up a coordinator whose host never started):
 * the host first (its handlers finish), then the coordinator, unwatched
 * before it is freed (agent.h: the agent reads it until unwatch returns).
 */
static void shard_stop(orbit_agent_t *agent, struct shard_host *h)
{
	if (h->host)
		orbit_spot_host_stop(h->host);
	h->host = NULL;
	if (!h->coord)
		return;
	if (h->watched)
		orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_SPOT, h->coord);
	h->watched = false;
	orbit_spot_serial_executor_close(h->coord);
	orbit_spot_serial_executor_await_quiescence(h->coord, -1);
	orbit_spot_serial_executor_destroy(h->coord);
	h->coord = NULL;
}

/* Try to host shard @s on a coordinator of our own. Returns 0 or the host's error. */
static int shard_start(orbit_agent_t *agent, orbit_worker_pool_t *pool, struct worker *w, int s,
		       struct shard_host *h)
{
	struct orbit_spot_host_options ho;
	char name[32];
	int rc;

	spot_name(name, sizeof(name), s);
	if (!h->coord) { /* kept across refused attempts; a stopped one is not reused */
		struct orbit_spot_serial_executor_options co;

		orbit_spot_serial_executor_options_init(&co);
		co.mode = ORBIT_SPOT_PER_ACTOR; /* every account its own Actor queue */
		co.executor = orbit_worker_pool_executor(pool);
		co.name = name;
		rc = orbit_spot_serial_executor_create(&co, &h->coord);
		if (rc)
			return rc;
	}
	orbit_spot_host_options_init(&ho);
	ho.spot = name;
	ho.on_actor = on_transfer;
	ho.ctx = w;
	ho.coordinator = h->coord;
	ho.lease_ttl_ns = HOST_TTL_NS;
	rc = orbit_spot_host_start(agent, &ho, &h->host);
	if (rc) {
		h->host = NULL;
		return rc; /* -EBUSY: hosted by another worker, or its TTL runs */
	}
	/* -ENOSPC past ORBIT_AGENT_WATCH_MAX objects: hosted, not published */
	h->watched = orbit_agent_watch(agent, ORBIT_AGENT_WATCH_SPOT, h->coord) == 0;
	return 0;
}

static int worker_main(int idx)
{
	struct orbit_lock_options lo = { .size = sizeof(lo), .fleet = cfg.fleet };
	struct orbit_agent_options ao = { .size = sizeof(ao), .fleet = cfg.fleet };
	struct orbit_state_lane_options lno;
	struct orbit_serial_queue_options qo;
	struct shard_host hosted[MAX_SHARDS];
	orbit_worker_pool_t *pool;
	orbit_agent_t *agent;
	struct worker w = { .idx = idx };
	char name[32], lane_name[40], queue_name[40];
	int rc;

	memset(hosted, 0, sizeof(hosted));
	snprintf(name, sizeof(name), "bank-worker-%d", idx);
	ao.name = name;
	if (orbit_lock_open(&lo, &w.lock) || demo_ledger_open(cfg.db, &w.ledger))
		return 2;
	ao.lock = w.lock;
	rc = orbit_agent_start(&ao, &agent);
	if (rc || orbit_worker_pool_create(NULL, &pool))
		return 2;
	orbit_state_lane_options_init(&lno);
	snprintf(lane_name, sizeof(lane_name), "bank.w%d.ledger", idx);
	lno.name = lane_name; /* no executor: run() only, on the handler's thread */
	orbit_serial_queue_options_init(&qo);
	snprintf(queue_name, sizeof(queue_name), "bank.w%d.receipts", idx);
	qo.name = queue_name;
	qo.executor = orbit_worker_pool_executor(pool);
	if (orbit_state_lane_create(&lno, &w.ledger_lane) ||
	    orbit_serial_queue_create(&qo, &w.receipts))
		return 2;
	/* Published at every stats tick: orbitctl --fleet demo stats shows them move. */
	if (orbit_agent_watch(agent, ORBIT_AGENT_WATCH_POOL, pool) ||
	    orbit_agent_watch(agent, ORBIT_AGENT_WATCH_LANE, w.ledger_lane) ||
	    orbit_agent_watch(agent, ORBIT_AGENT_WATCH_QUEUE, w.receipts))
		return 2;
	while (!atomic_load(&sh->stop_workers)) {
		int alive = atomic_load(&sh->workers_alive), mine = 0, quota;

		for (int s = 0; s < cfg.shards; s++)
			if (hosted[s].host &&
			    orbit_spot_host_state(hosted[s].host) == ORBIT_SPOT_LOST) {
				atomic_fetch_add(&sh->lost, 1);
				shard_stop(agent, &hosted[s]);
			}
		for (int s = 0; s < cfg.shards; s++)
			mine += hosted[s].host != NULL;
		quota = (cfg.shards + (alive > 0 ? alive : 1) - 1) / (alive > 0 ? alive : 1);
		for (int k = 0; k < cfg.shards && mine < quota; k++) {
			/* Worker idx starts at its share of the shards: the first choices spread. */
			int s = (idx * cfg.shards / cfg.workers + k) % cfg.shards;
			struct orbit_spot_inbound_stats qs;

			if (hosted[s].host || shard_start(agent, pool, &w, s, &hosted[s]) != 0)
				continue;
			mine++;
			if (orbit_spot_host_inbound_stats(hosted[s].host, &qs) == 0 &&
			    qs.takeovers > 1)
				atomic_fetch_add(&sh->adoptions, 1);
		}
		for (int s = 0; s < cfg.shards; s++) {
			struct orbit_spot_inbound_stats qs;
			struct orbit_spot_host_stats hs;

			if (!hosted[s].host || orbit_spot_host_inbound_stats(hosted[s].host, &qs) ||
			    orbit_spot_host_stats(hosted[s].host, &hs))
				continue;
			atomic_store(&sh->s[s].host_pid, (int)getpid());
			atomic_store(&sh->s[s].depth, qs.depth[0] + qs.depth[1]);
			atomic_store(&sh->s[s].epoch, hs.epoch);
		}
		usleep(50000);
	}
	for (int s = 0; s < cfg.shards; s++) {
		if (hosted[s].host)
			atomic_store(&sh->s[s].host_pid, 0);
		shard_stop(agent, &hosted[s]);
	}
	/* Every handler has finished: the last receipts, then the queue and the lane go. */
	orbit_serial_queue_await_quiescence(w.receipts, -1);
	orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_QUEUE, w.receipts);
	orbit_serial_queue_destroy(w.receipts);
	orbit_state_lane_close_sync(w.ledger_lane);
	orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_LANE, w.ledger_lane);
	orbit_state_lane_destroy(w.ledger_lane);
	orbit_agent_unwatch(agent, ORBIT_AGENT_WATCH_POOL, pool);
	orbit_worker_pool_destroy(pool);
	orbit_agent_stop(agent);
	demo_ledger_close(w.ledger);
	orbit_lock_close(w.lock);
	return 0;
}

/* ---- clients: submit transfers ---- */

static int client_main(int idx)
{
	struct orbit_agent_options ao = { .size = sizeof(ao), .fleet = cfg.fleet };
	orbit_spot_client_t *c[MAX_SHARDS];
	uint64_t uid = atomic_fetch_add(&sh->next_client_uid, 1) + 1, n = 0;
	unsigned seed = (unsigned)getpid() ^ (unsigned)now_ns();
	orbit_agent_t *agent;
	char name[32], path[256];
	int fd;

	snprintf(name, sizeof(name), "bank-client-%d", idx);
	ao.name = name;
	if (orbit_agent_start(&ao, &agent))
		return 2;
	for (int s = 0; s < cfg.shards; s++) {
		spot_name(name, sizeof(name), s);
		if (orbit_spot_client_open(agent, name, NULL, &c[s]))
			return 2;
	}
	/* Every accepted id, written at once: the verifier's list (a kill may lose the last). */
	snprintf(path, sizeof(path), "%s/accepted-%llu.ids", cfg.dir, (unsigned long long)uid);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return 2;
	while (!atomic_load(&sh->stop_clients)) {
		struct transfer_msg m;
		int rc;

		m.id = uid << 32 | ++n;
		m.from = (uint32_t)(rand_r(&seed) % (unsigned)cfg.accounts);
		do
			m.to = (uint32_t)(rand_r(&seed) % (unsigned)cfg.accounts);
		while (m.to == m.from);
		m.amount = 1 + rand_r(&seed) % 10;
		m.submit_ns = now_ns();
		rc = orbit_spot_submit_actor(c[m.from % (uint32_t)cfg.shards], m.from, &m,
					     sizeof(m), NULL);
		if (rc == 0) {
			atomic_fetch_add(&sh->accepted, 1);
			if (write(fd, &m.id, sizeof(m.id)) != (ssize_t)sizeof(m.id))
				break;
		} else if (rc == -EAGAIN) {
			atomic_fetch_add(&sh->rejected, 1);
			orbit_spot_client_wait_room(c[m.from % (uint32_t)cfg.shards],
						    ORBIT_SPOT_LANE_APP, sizeof(m), 10000000);
		} else {
			usleep(1000);
		}
	}
	close(fd);
	for (int s = 0; s < cfg.shards; s++)
		orbit_spot_client_close(c[s]);
	orbit_agent_stop(agent);
	return 0;
}

/* ---- observers: follow the ring, keep a view of the account locks, check it ---- */

struct observer {
	int idx;
	orbit_lock_t *table; /* the fleet's table, read-only (orbit_fleet_lock) */
	demo_view_t *view;
	bool need_resync;	      /* the last scan failed: checks stay off until one works */
	struct demo_view_counts base; /* the slot's figures when this incarnation started */
};

static int resync_entry(const struct orbit_lock_entry *e, void *ctx)
{
	demo_view_resync_entry(ctx, e);
	return 0;
}

/*
 * Rebuild the view's holders from the table. The scan is lock-free; a
 * mutator stopped in the middle of a slot makes it answer -EAGAIN, so it
 * is tried a few times; when it keeps failing the view stays unchecked
 * and the observer tries again at its next wake.
 */
static int observer_resync(demo_view_t *v, void *ctx)
{
	struct observer *o = ctx;

	for (int tries = 0; tries < 20; tries++) {
		demo_view_resync_begin(v, orbit_lock_state_revision(o->table));
		if (orbit_lock_foreach(o->table, resync_entry, v) >= 0) {
			demo_view_resync_end(v, orbit_lock_state_revision(o->table));
			o->need_resync = false;
			return 0;
		}
		usleep(5000);
	}
	o->need_resync = true;
	return 0; /* not fatal: the rest of the batch is applied unchecked */
}

/* The first violation, in words, into the observer's slot (once per run). */
static void observer_note_first(const struct observer *o)
{
	static const char *const kind[] = { "", "overlap", "early expiry", "token regression" };
	static const char *const type[] = { "?",       "ACQUIRE",	"RENEW",
					    "RELEASE", "FORCE_RELEASE", "RECLAIM",
					    "REPAIR" };
	struct observer_slot *s = &sh->o[o->idx];
	struct demo_view_violation f;
	int zero = 0;

	demo_view_first_violation(o->view, &f);
	if (f.kind == DEMO_VIEW_OK || !atomic_compare_exchange_strong(&s->first_set, &zero, 1))
		return;
	snprintf(s->first, sizeof(s->first),
		 "%s on account %u: %s token %llu rev %llu by pid %u (lane %u) at %.3f s; "
		 "held%s%s: token %llu until %.3f s (%s rev %llu, pid %u, lane %u), newest token "
		 "%llu; last scan from rev %llu%s",
		 kind[f.kind], f.account, type[f.type < 7 ? f.type : 0],
		 (unsigned long long)f.token, (unsigned long long)f.revision, f.writer_pid, f.lane,
		 (double)f.publish_ns / 1e9, f.held_forced ? " (force-released)" : "",
		 f.held_from_scan ? " (from the scan)" : "", (unsigned long long)f.held_token,
		 (double)f.held_deadline_ns / 1e9, type[f.held_type < 7 ? f.held_type : 0],
		 (unsigned long long)f.held_revision, f.held_writer_pid, f.held_lane,
		 (unsigned long long)f.max_token, (unsigned long long)f.scan_revision,
		 f.next_seen ? "" : " (its next frame unread)");
}

static void observer_publish(const struct observer *o)
{
	struct observer_slot *s = &sh->o[o->idx];
	struct demo_view_counts c;

	demo_view_counts(o->view, &c);
	atomic_store(&s->acquired, o->base.acquired + c.acquired);
	atomic_store(&s->released, o->base.released + c.released);
	atomic_store(&s->expired, o->base.expired + c.expired);
	atomic_store(&s->forced, o->base.forced + c.forced);
	atomic_store(&s->overlaps, o->base.overlaps + c.overlaps);
	atomic_store(&s->early_expiries, o->base.early_expiries + c.early_expiries);
	atomic_store(&s->regressions, o->base.regressions + c.regressions);
	atomic_store(&s->resyncs, o->base.resyncs + c.resyncs);
	atomic_store(&s->frames, o->base.frames + c.frames);
	atomic_store(&s->unjudged, o->base.unjudged + c.unjudged);
	observer_note_first(o);
}

/* Read the ring until it has nothing more, then apply the batch in revision order. */
static void observer_drain(struct observer *o, orbit_transition_reader_t *rd)
{
	static struct orbit_transition_event ev; /* 4 KiB: not on the stack */
	int rc;

	while ((rc = orbit_transition_reader_next(rd, &ev)) != -EAGAIN) {
		if (rc ==
		    -ORBIT_ELAGGED) { /* frames lost: what we have, unjudged, then the table */
			atomic_fetch_add(&sh->o[o->idx].lags, 1);
			demo_view_flush_unchecked(o->view);
			observer_resync(o->view, o);
		} else if (rc == 0 && demo_view_add(o->view, &ev) == 1) {
			demo_view_flush_unchecked(o->view); /* a full batch: its order is unsure */
			observer_resync(o->view, o);
		} else if (rc < 0 && rc != -ORBIT_ECORRUPT) {
			break; /* -EINVAL: cannot happen with a valid reader */
		}
	}
	demo_view_flush(o->view, observer_resync, o);
	if (o->need_resync)
		observer_resync(o->view, o);
	observer_publish(o);
}

struct compare_ctx {
	demo_view_t *view;
	uint8_t *in_table;
	uint64_t agree, differ;
};

static int compare_entry(const struct orbit_lock_entry *e, void *arg)
{
	struct compare_ctx *c = arg;
	uint64_t token;
	uint32_t a;

	if (demo_view_account(c->view, e->bytes, e->ns_len, e->bytes + e->ns_len, e->label_len, &a))
		return 0;
	c->in_table[a] = 1;
	if (demo_view_holder(c->view, a, &token, NULL) == 1 && token == e->token)
		c->agree++;
	else
		c->differ++;
	return 0;
}

/*
 * At the end (every worker stopped, so the ring is quiet): does the view
 * hold exactly the entries the table holds, with the same tokens?
 * Returns 0, or -EAGAIN when the table could not be scanned.
 */
static int observer_compare(struct observer *o)
{
	struct compare_ctx c = { .view = o->view };
	int rc = -EAGAIN;

	c.in_table = calloc((size_t)cfg.accounts, 1);
	if (!c.in_table)
		return -ENOMEM;
	for (int tries = 0; tries < 50 && rc < 0; tries++) {
		memset(c.in_table, 0, (size_t)cfg.accounts);
		c.agree = c.differ = 0;
		rc = orbit_lock_foreach(o->table, compare_entry, &c);
		if (rc < 0)
			usleep(10000);
	}
	for (uint32_t a = 0; rc >= 0 && a < (uint32_t)cfg.accounts; a++)
		if (!c.in_table[a] && demo_view_holder(o->view, a, NULL, NULL) == 1)
			c.differ++; /* the view holds what the table does not */
	free(c.in_table);
	if (rc < 0)
		return rc;
	atomic_store(&sh->o[o->idx].final_agree, c.agree);
	atomic_store(&sh->o[o->idx].final_differ, c.differ);
	return 0;
}

static int observer_main(int idx)
{
	struct orbit_agent_options ao = { .size = sizeof(ao), .fleet = cfg.fleet };
	struct orbit_fleet_options fo = { .size = sizeof(fo), .fleet = cfg.fleet };
	struct observer_slot *s = &sh->o[idx];
	struct observer o = { .idx = idx };
	orbit_transition_reader_t *rd;
	orbit_fleet_t *fleet = NULL;
	orbit_agent_t *agent;
	char name[32];
	int fd, rc;

	/* The agent turns the ring's futex doorbell into an eventfd (agent.h, "Subscribing"). */
	snprintf(name, sizeof(name), "bank-observer-%d", idx);
	ao.name = name;
	if (orbit_agent_start(&ao, &agent) || orbit_agent_subscribe(agent, &fd) ||
	    orbit_agent_reader_open(agent, &rd))
		return 2;
	/* The table, read-only, for the resyncs: the first worker created it. */
	for (int tries = 0; tries < 200; tries++) {
		if (orbit_fleet_open(&fo, &fleet) == 0 && (o.table = orbit_fleet_lock(fleet)))
			break;
		orbit_fleet_close(fleet);
		fleet = NULL;
		usleep(10000);
	}
	if (!o.table || demo_view_create(acct_ns.bytes, (uint32_t)cfg.accounts, &o.view))
		return 2;
	o.base.acquired = atomic_load(&s->acquired);
	o.base.released = atomic_load(&s->released);
	o.base.expired = atomic_load(&s->expired);
	o.base.forced = atomic_load(&s->forced);
	o.base.overlaps = atomic_load(&s->overlaps);
	o.base.early_expiries = atomic_load(&s->early_expiries);
	o.base.regressions = atomic_load(&s->regressions);
	o.base.resyncs = atomic_load(&s->resyncs);
	o.base.frames = atomic_load(&s->frames);
	o.base.unjudged = atomic_load(&s->unjudged);
	atomic_fetch_add(&s->starts, 1);
	/* The reader starts after the current heads: what came before is in the table. */
	observer_resync(o.view, &o);
	while (!atomic_load(&sh->stop_observers)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t n;

		if (poll(&p, 1, 100) > 0 && read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
			break;
		observer_drain(&o, rd); /* drain the eventfd first, then the cursor */
	}
	/* Every worker has stopped: the last frames, then the view against the table. */
	observer_drain(&o, rd);
	rc = observer_compare(&o);
	if (rc == 0)
		atomic_store(&s->final_done, 1);
	demo_view_destroy(o.view);
	orbit_fleet_close(fleet);
	orbit_transition_reader_close(rd);
	orbit_agent_unsubscribe(agent, fd);
	orbit_agent_stop(agent);
	return rc == 0 ? 0 : 3;
}

/* ---- the supervisor ---- */

static pid_t spawn(bool worker, int idx)
{
	struct proc_slot *p = worker ? &sh->w[idx] : &sh->c[idx];
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(demo_child_signals() ? 1 : worker ? worker_main(idx) : client_main(idx));
	if (pid > 0) {
		atomic_store(&p->pid, pid);
		atomic_store(&p->in_handler, 0);
		atomic_store(&p->stopped, 0);
	}
	return pid;
}

static pid_t spawn_observer(int idx)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(demo_child_signals() ? 1 : observer_main(idx));
	if (pid > 0)
		atomic_store(&sh->o[idx].pid, pid);
	return pid;
}

/* Observers that died (chaos kills them) are started again: they resync from the table. */
static void restart_observers(uint64_t *restarts)
{
	for (int i = 0; i < cfg.observers; i++) {
		int st, pid = atomic_load(&sh->o[i].pid);

		if (pid > 0 && waitpid(pid, &st, WNOHANG) == pid) {
			atomic_store(&sh->o[i].pid, 0);
			if (spawn_observer(i) > 0)
				(*restarts)++;
		}
	}
}

/* What the observers saw (sums; acquisitions: the most any one saw). */
struct observed {
	uint64_t acquired, released, expired, forced, bad, resyncs, lags, starts;
};

static void observed_sum(struct observed *t)
{
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < cfg.observers; i++) {
		struct observer_slot *o = &sh->o[i];
		uint64_t a = atomic_load(&o->acquired);

		if (a > t->acquired)
			t->acquired = a;
		t->released += atomic_load(&o->released);
		t->expired += atomic_load(&o->expired);
		t->forced += atomic_load(&o->forced);
		t->bad += atomic_load(&o->overlaps) + atomic_load(&o->early_expiries) +
			  atomic_load(&o->regressions);
		t->resyncs += atomic_load(&o->resyncs);
		t->lags += atomic_load(&o->lags);
		t->starts += atomic_load(&o->starts);
	}
}

/* @n in at most @width characters: digits, or thousands (k), millions (M), ... */
static const char *compact(char *buf, size_t len, uint64_t n, int width)
{
	static const char unit[] = "kMGTP";

	snprintf(buf, len, "%llu", (unsigned long long)n);
	for (int u = 0; (int)strlen(buf) > width && u < 5; u++) {
		n /= 1000;
		snprintf(buf, len, "%llu%c", (unsigned long long)n, unit[u]);
	}
	return buf;
}

/* A duration in at most 5 characters: 530us, 5.3ms, 530ms, 8.6s, 120s. */
static const char *duration5(char *buf, size_t len, uint64_t ns)
{
	if (ns < 1000000ull)
		snprintf(buf, len, "%lluus", (unsigned long long)(ns / 1000));
	else if (ns < 10000000ull)
		snprintf(buf, len, "%.1fms", (double)ns / 1e6);
	else if (ns < 1000000000ull)
		snprintf(buf, len, "%llums", (unsigned long long)(ns / 1000000));
	else if (ns < 10000000000ull)
		snprintf(buf, len, "%.1fs", (double)ns / 1e9);
	else
		snprintf(buf, len, "%llus", (unsigned long long)(ns / 1000000000ull));
	return buf;
}

static uint64_t p99_of(const uint64_t *h)
{
	uint64_t n = 0, acc = 0;

	for (int b = 0; b < LAT_BUCKETS; b++)
		n += h[b];
	if (!n)
		return 0;
	for (int b = 0; b < LAT_BUCKETS; b++) {
		acc += h[b];
		if (acc * 100 >= n * 99)
			return 2ull << b; /* the bucket's upper bound */
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: orbit-demo [--scenario bank|locks] [--seconds N] [--workers W]\n"
		"                  [--clients C] [--observers O] [--shards S] [--accounts A]\n"
		"                  [--chaos R] [--fleet NAME] [--plot FILE.svg|.png] [--keep]\n"
		"                  [--work-us U] [--inject-bug[=credit|steal]]\n"
		"  bank (default): W workers host S Spots of A accounts; C clients submit\n"
		"  transfers through the cross-process Spot queues; each transfer locks both\n"
		"  accounts and writes a fencing-checked SQLite ledger; O observers follow\n"
		"  the transition ring and check the account locks on their own; a chaos\n"
		"  loop kills and pauses processes R times a second. Default: 30 s,\n"
		"  4 workers, 2 clients, 1 observer, 8 shards, 1000 accounts, 1/s, fleet\n"
		"  \"demo\"; each transfer works U us (default 200) holding its locks.\n"
		"  Status line: seconds, transfers/s, p99 submit-to-handler latency, kills,\n"
		"  adoptions, redelivered, stale writes refused, account lock acquisitions\n"
		"  the observers saw, violations seen by the workers/by the observers.\n"
		"  Exit status 1 when an invariant fails, 2 on a setup error. --inject-bug\n"
		"  (=credit) credits one unit too many per transfer; =steal breaks account\n"
		"  locks a handler waited for: the report must fail with either.\n"
		"  --scenario locks: the lock-table demo (orbit-demo --scenario locks --help).\n");
}

static int parse(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "workers", required_argument, NULL, 'w' },
		{ "clients", required_argument, NULL, 'c' },
		{ "shards", required_argument, NULL, 'S' },
		{ "accounts", required_argument, NULL, 'a' },
		{ "chaos", required_argument, NULL, 'x' },
		{ "fleet", required_argument, NULL, 'f' },
		{ "plot", required_argument, NULL, 'p' },
		{ "keep", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ "inject-bug", optional_argument, NULL, 'B' },
		{ "work-us", required_argument, NULL, 'W' },
		{ "observers", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct demo_int_opt ints[] = {
		{ 's', "seconds", 1, 86400, &cfg.seconds },
		{ 'w', "workers", 1, MAX_PROCS, &cfg.workers },
		{ 'c', "clients", 1, MAX_PROCS, &cfg.clients },
		{ 'S', "shards", 1, MAX_SHARDS, &cfg.shards },
		{ 'a', "accounts", 2, 1000000, &cfg.accounts },
		{ 'o', "observers", 0, MAX_OBSERVERS, &cfg.observers },
		{ 'W', "work-us", 0, 1000000, &cfg.work_us },
	};
	int o;

	while ((o = getopt_long(argc, argv, "s:w:c:S:a:x:f:p:khB::W:o:", opts, NULL)) != -1) {
		char *end;
		int r = demo_opt_ints(ints, sizeof(ints) / sizeof(ints[0]), o, optarg);

		if (r <= 0) {
			if (r < 0)
				return -1;
			continue;
		}
		switch (o) {
		case 'x':
			cfg.chaos = strtod(optarg, &end);
			if (end == optarg || *end || !(cfg.chaos >= 0 && cfg.chaos <= 1000)) {
				fprintf(
				    stderr,
				    "orbit-demo: --chaos %s: allowed 0..1000 (events a second)\n",
				    optarg);
				return -1;
			}
			break;
		case 'f':
			if (demo_opt_fleet(optarg, cfg.fleet, sizeof(cfg.fleet)))
				return -1;
			break;
		case 'p':
			if (strlen(optarg) >= sizeof(cfg.plot)) {
				fprintf(stderr, "orbit-demo: --plot: at most %zu bytes\n",
					sizeof(cfg.plot) - 1);
				return -1;
			}
			strcpy(cfg.plot, optarg);
			break;
		case 'k':
			cfg.keep = 1;
			break;
		case 'B':
			if (!optarg || !strcmp(optarg, "credit"))
				cfg.inject_bug = BUG_CREDIT;
			else if (!strcmp(optarg, "steal"))
				cfg.inject_bug = BUG_STEAL;
			else {
				fprintf(stderr, "orbit-demo: --inject-bug=%s: credit or steal\n",
					optarg);
				return -1;
			}
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -1;
		}
	}
	return 0;
}

int demo_opt_fleet(const char *arg, char *out, size_t len)
{
	size_t n = strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-");

	if (n == 0 || arg[n] || n > ORBIT_FLEET_NAME_MAX || n >= len) {
		fprintf(stderr,
			"orbit-demo: --fleet %s: a fleet name is 1 to %u of A-Z a-z 0-9 _ -\n", arg,
			ORBIT_FLEET_NAME_MAX);
		return -1;
	}
	memcpy(out, arg, n + 1);
	return 0;
}

int demo_opt_ints(const struct demo_int_opt *tab, size_t n, int letter, const char *arg)
{
	for (size_t i = 0; i < n; i++)
		if (tab[i].letter == letter)
			return demo_opt_int(tab[i].name, arg, tab[i].lo, tab[i].hi, tab[i].out);
	return 1;
}

volatile sig_atomic_t demo_interrupted;
static pid_t supervisor; /* demo_stop_signals()'s caller: its children's parent */

static void on_stop_signal(int sig)
{
	demo_interrupted = sig;
}

void demo_stop_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	supervisor = getpid();
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL); /* no SA_RESTART: the loop's usleep returns early */
	sigaction(SIGTERM, &sa, NULL);
}

void demo_say_interrupted(void)
{
	if (demo_interrupted)
		printf("orbit-demo: %s: winding down\n",
		       demo_interrupted == SIGTERM ? "SIGTERM" : "SIGINT");
}

int demo_child_signals(void)
{
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_DFL);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		return 0; /* unsupported: a killed supervisor leaves us to run out */
	return getppid() == supervisor ? 0 : -1; /* it died before the prctl */
}

int demo_opt_int(const char *opt, const char *arg, long lo, long hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (end == arg || *end || errno || v < lo || v > hi) {
		fprintf(stderr, "orbit-demo: --%s %s: allowed %ld..%ld\n", opt, arg, lo, hi);
		return -1;
	}
	*out = (int)v;
	return 0;
}

/* The fleet's segments: the default ones and this demo's Spot queues. */
static void unlink_segments(void)
{
	char name[64], path[256];

	orbit_fleet_unlink(cfg.fleet);
	for (int s = 0; s < cfg.shards; s++) {
		spot_name(name, sizeof(name), s);
		snprintf(path, sizeof(path), "/orbit.%s.spotq.%s", cfg.fleet, name);
		shm_unlink(path);
	}
}

static void remove_dir(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", cfg.dir);
	if (system(cmd) != 0)
		fprintf(stderr, "orbit-demo: could not remove %s\n", cfg.dir);
}

/* Accepted ids (the clients' logs) the ledger does not have: 0 after the drain. */
static uint64_t missing_accepted(demo_ledger_t *l, uint64_t *logged)
{
	uint64_t missing = 0, n = 0;
	char path[256];

	for (uint64_t uid = 1; uid <= atomic_load(&sh->next_client_uid); uid++) {
		uint64_t id;
		int fd;

		snprintf(path, sizeof(path), "%s/accepted-%llu.ids", cfg.dir,
			 (unsigned long long)uid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* A client killed mid-write leaves a short last id: read whole ids only. */
		while (read(fd, &id, sizeof(id)) == (ssize_t)sizeof(id)) {
			n++;
			missing += demo_ledger_has_transfer(l, id) != 1;
		}
		close(fd);
	}
	*logged = n;
	return missing;
}

static void plot(const char *data)
{
	char cmd[1024];
	const char *png = strstr(cfg.plot, ".png");

	if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
		printf(
		    "orbit-demo: gnuplot not installed (apt-get install gnuplot-nox): no plot\n");
		return;
	}
	snprintf(cmd, sizeof(cmd),
		 "gnuplot -e \"set terminal %s size 1000,500; set output '%s'; "
		 "set title 'orbit bank demo: %d workers, %d clients, %d shards'; "
		 "set xlabel 'seconds'; set ylabel 'transfers/s'; set y2label 'p99 ms'; "
		 "set y2tics; set ytics nomirror; set key left top; "
		 "plot '%s' using 1:2 with lines title 'transfers/s', "
		 "'' using 1:3 axes x1y2 with lines title 'p99 ms', "
		 "'' using 1:(\\$4>0?0:1/0) with points pt 7 title 'kill', "
		 "'' using 1:(\\$5>0?0:1/0) with points pt 5 title 'adoption'\"",
		 png ? "pngcairo" : "svg", cfg.plot, cfg.workers, cfg.clients, cfg.shards, data);
	if (system(cmd) == 0)
		printf("orbit-demo: plot written to %s\n", cfg.plot);
	else
		printf("orbit-demo: gnuplot failed; data in %s\n", data);
}

/*
 * The orbitctl beside this program: in the build tree orbit-demo runs as
 * agent/.libs/orbit-demo (libtool) and orbitctl is agent/orbitctl;
 * installed, both are in one bin directory. "orbitctl" when not found.
 */
static void orbitctl_path(char *out, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	snprintf(out, len, "orbitctl");
	if (n <= 0)
		return;
	exe[n] = 0;
	if (!(slash = strrchr(exe, '/')))
		return;
	*slash = 0;
	if ((slash = strrchr(exe, '/')) && !strcmp(slash, "/.libs"))
		*slash = 0;
	if (strlen(exe) + sizeof("/orbitctl") <= len) {
		char path[PATH_MAX + 16];

		snprintf(path, sizeof(path), "%s/orbitctl", exe);
		if (access(path, X_OK) == 0 && strlen(path) < len)
			memcpy(out, path, strlen(path) + 1);
	}
}

int demo_bank_main(int argc, char **argv)
{
	uint64_t t0, t_end, next_status, kills = 0, pauses = 0, last_applied = 0, logged = 0,
					 missing;
	uint64_t obs_restarts = 0;
	struct observed ob;
	uint64_t prev_lat[LAT_BUCKETS] = { 0 }, last_adopt = 0, last_kills = 0;
	int tty = isatty(STDOUT_FILENO), stopped = -1, fails = 0;
	uint64_t resume_at = 0;
	unsigned seed = (unsigned)getpid();
	struct demo_ledger_audit a;
	demo_ledger_t *ledger;
	char data[256], ctl[PATH_MAX];
	FILE *series = NULL;
	size_t shared_bytes;
	int rc;

	if (parse(argc, argv)) {
		usage(stderr);
		return 2;
	}
	if (!cfg.fleet[0])
		strcpy(cfg.fleet, "demo");
	if (cfg.shards > cfg.accounts) { /* given: a range error, as the others */
		fprintf(stderr, "orbit-demo: --shards %d: allowed 1..%d (at most --accounts)\n",
			cfg.shards, cfg.accounts);
		return 2;
	}
	if (cfg.shards == 0) /* the default: 8, at most the accounts */
		cfg.shards = cfg.accounts < 8 ? cfg.accounts : 8;
	rc = orbit_fleet_unlink(cfg.fleet); /* an earlier, killed run's leftovers */
	if (rc == -EBUSY) {
		fprintf(stderr, "orbit-demo: fleet \"%s\" has live members; pass --fleet NAME\n",
			cfg.fleet);
		return 2;
	}
	unlink_segments(); /* the queues of an earlier run with this fleet name */
	snprintf(cfg.dir, sizeof(cfg.dir), "%s/orbit-demo.%d",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	snprintf(cfg.db, sizeof(cfg.db), "%s/ledger.db", cfg.dir);
	if (mkdir(cfg.dir, 0700)) {
		perror("orbit-demo: mkdir");
		return 2;
	}
	if (demo_ledger_open(cfg.db, &ledger) ||
	    demo_ledger_init(ledger, (uint32_t)cfg.accounts, INITIAL_BALANCE))
		return 2;
	demo_ledger_close(ledger); /* no SQLite connection crosses a fork */
	shared_bytes = sizeof(*sh) + (size_t)cfg.accounts * sizeof(struct marker);
	sh = mmap(NULL, shared_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 2;
	atomic_store(&sh->workers_alive, cfg.workers);
	orbitctl_path(ctl, sizeof(ctl));
	printf("orbit-demo: bank of %d accounts in %d shards, %d workers, %d clients, "
	       "%d observers, %d s, chaos %.1f/s\n"
	       "orbit-demo: fleet %s; watch it from another terminal:\n",
	       cfg.accounts, cfg.shards, cfg.workers, cfg.clients, cfg.observers, cfg.seconds,
	       cfg.chaos, cfg.fleet);
	for (int i = 0; i < 5; i++)
		printf("  %s --fleet %s %s\n", ctl, cfg.fleet,
		       (const char *[]){ "spots", "locks", "members", "stats", "top" }[i]);
	demo_stop_signals();
	for (int i = 0; i < cfg.workers; i++)
		spawn(true, i);
	usleep(300000); /* the workers take their shards: the queues exist */
	for (int i = 0; i < cfg.observers; i++)
		spawn_observer(i);
	for (int i = 0; i < cfg.clients; i++)
		spawn(false, i);
	if (cfg.plot[0]) {
		snprintf(data, sizeof(data), "%s/series.dat", cfg.dir);
		series = fopen(data, "w");
	}
	t0 = now_ns();
	t_end = t0 + (uint64_t)cfg.seconds * 1000000000ull;
	next_status = t0 + 1000000000ull;
	/* The status line's columns: p99 is submit-to-handler; obs acq: account lock
	 * acquisitions the observers saw; viol w/o: seen by the workers / the observers. */
	printf("%5s %6s %6s %5s %5s %6s %5s %7s %8s\n", "time", "op/s", "p99", "kills", "adopt",
	       "redel", "stale", "obs acq", "viol w/o");
	while (now_ns() < t_end && !demo_interrupted) {
		uint64_t now;

		usleep(100000);
		now = now_ns();
		/* Reap and restart the dead. */
		for (int i = 0; i < cfg.workers + cfg.clients; i++) {
			bool wk = i < cfg.workers;
			int idx = wk ? i : i - cfg.workers;
			struct proc_slot *p = wk ? &sh->w[idx] : &sh->c[idx];
			int st, pid = atomic_load(&p->pid);

			if (pid > 0 && waitpid(pid, &st, WNOHANG) == pid) {
				atomic_store(&p->pid, 0);
				if (wk)
					atomic_fetch_sub(&sh->workers_alive, 1);
			}
			if (atomic_load(&p->pid) == 0 && spawn(wk, idx) > 0 && wk)
				atomic_fetch_add(&sh->workers_alive, 1);
		}
		restart_observers(&obs_restarts);
		if (stopped >= 0 && now >= resume_at) {
			kill(atomic_load(&sh->w[stopped].pid), SIGCONT);
			atomic_store(&sh->w[stopped].stopped, 0);
			stopped = -1;
		}
		/* Chaos: cfg.chaos events a second on average. */
		if (cfg.chaos > 0 && (double)rand_r(&seed) / RAND_MAX < cfg.chaos / 10.0) {
			int r = rand_r(&seed) % 100, victim;

			if (r < 15 && stopped < 0 && cfg.workers > 1) {
				/* Pause a worker past its hosting lease and its account locks,
				 * inside a handler when one is: its late write must be refused. */
				victim = rand_r(&seed) % cfg.workers;
				for (int k = 0; k < cfg.workers; k++)
					if (atomic_load(
						&sh->w[(victim + k) % cfg.workers].in_handler)) {
						victim = (victim + k) % cfg.workers;
						break;
					}
				if (atomic_load(&sh->w[victim].pid) > 0 &&
				    kill(atomic_load(&sh->w[victim].pid), SIGSTOP) == 0) {
					atomic_store(&sh->w[victim].stopped, 1);
					stopped = victim;
					resume_at = now +
						    (HOST_TTL_NS > LOCK_TTL_NS ? HOST_TTL_NS
									       : LOCK_TTL_NS) +
						    800000000ull;
					pauses++;
				}
			} else if (r < (cfg.observers ? 65 : 75)) {
				/* Kill a worker, one inside a handler when there is one. */
				victim = rand_r(&seed) % cfg.workers;
				for (int k = 0; k < cfg.workers; k++)
					if (atomic_load(
						&sh->w[(victim + k) % cfg.workers].in_handler)) {
						victim = (victim + k) % cfg.workers;
						break;
					}
				if (victim != stopped && atomic_load(&sh->w[victim].pid) > 0 &&
				    kill(atomic_load(&sh->w[victim].pid), SIGKILL) == 0)
					kills++;
			} else if (r >= 85 && cfg.observers) {
				/* Kill an observer: its restart resyncs from the table. */
				victim = rand_r(&seed) % cfg.observers;
				if (atomic_load(&sh->o[victim].pid) > 0 &&
				    kill(atomic_load(&sh->o[victim].pid), SIGKILL) == 0)
					kills++;
			} else {
				victim = rand_r(&seed) % cfg.clients;
				if (atomic_load(&sh->c[victim].pid) > 0 &&
				    kill(atomic_load(&sh->c[victim].pid), SIGKILL) == 0)
					kills++;
			}
		}
		if (now >= next_status) {
			uint64_t applied = atomic_load(&sh->applied), lat[LAT_BUCKETS],
				 d[LAT_BUCKETS];
			uint64_t adopt = atomic_load(&sh->adoptions);
			double secs = (double)(now - t0) / 1e9;

			for (int b = 0; b < LAT_BUCKETS; b++) {
				lat[b] = atomic_load(&sh->lat[b]);
				d[b] = lat[b] - prev_lat[b];
				prev_lat[b] = lat[b];
			}
			char f[9][24], viol[24];

			observed_sum(&ob);
			snprintf(viol, sizeof(viol), "%s/%s",
				 compact(f[7], sizeof(f[7]), atomic_load(&sh->violations), 3),
				 cfg.observers ? compact(f[8], sizeof(f[8]), ob.bad, 3) : "-");
			/* columns under the header above; 62 of 80 (check-demo.sh holds it to 80) */
			printf("%s%4.0fs %6s %6s %5s %5s %6s %5s %7s %8s%s", tty ? "\r" : "", secs,
			       compact(f[0], sizeof(f[0]), applied - last_applied, 6),
			       duration5(f[1], sizeof(f[1]), p99_of(d)),
			       compact(f[2], sizeof(f[2]), kills, 5),
			       compact(f[3], sizeof(f[3]), adopt, 5),
			       compact(f[4], sizeof(f[4]), atomic_load(&sh->redelivered), 6),
			       compact(f[5], sizeof(f[5]), atomic_load(&sh->stale), 5),
			       cfg.observers ? compact(f[6], sizeof(f[6]), ob.acquired, 7) : "-",
			       viol, tty ? "" : "\n");
			fflush(stdout);
			if (series)
				fprintf(series, "%.1f %llu %.3f %llu %llu\n", secs,
					(unsigned long long)(applied - last_applied),
					p99_of(d) / 1e6, (unsigned long long)(kills - last_kills),
					(unsigned long long)(adopt - last_adopt));
			last_applied = applied;
			last_kills = kills;
			last_adopt = adopt;
			next_status = now + 1000000000ull;
		}
	}
	if (tty)
		printf("\n");
	demo_say_interrupted();
	/* Wind down: no more chaos; clients stop; the queues drain; workers stop. */
	if (stopped >= 0) {
		kill(atomic_load(&sh->w[stopped].pid), SIGCONT);
		stopped = -1;
	}
	atomic_store(&sh->stop_clients, 1);
	for (int i = 0; i < cfg.clients; i++)
		if (atomic_load(&sh->c[i].pid) > 0)
			waitpid(atomic_load(&sh->c[i].pid), NULL, 0);
	{
		uint64_t deadline = now_ns() + 30000000000ull;
		bool drained = false;

		while (!drained && now_ns() < deadline) {
			/* Workers that died meanwhile are restarted: every shard gets a host. */
			for (int i = 0; i < cfg.workers; i++) {
				int st, pid = atomic_load(&sh->w[i].pid);

				if (pid > 0 && waitpid(pid, &st, WNOHANG) == pid) {
					atomic_store(&sh->w[i].pid, 0);
					spawn(true, i);
				}
			}
			restart_observers(&obs_restarts);
			usleep(200000);
			drained = true;
			for (int s = 0; s < cfg.shards; s++) {
				int pid = atomic_load(&sh->s[s].host_pid);

				if (pid <= 0 || kill(pid, 0) != 0 ||
				    atomic_load(&sh->s[s].depth) != 0)
					drained = false;
			}
		}
		if (!drained) {
			printf(
			    "orbit-demo: FAIL: the queues did not drain, or a Spot has no host\n");
			fails++;
		}
	}
	atomic_store(&sh->stop_workers, 1);
	for (int i = 0; i < cfg.workers; i++)
		if (atomic_load(&sh->w[i].pid) > 0)
			waitpid(atomic_load(&sh->w[i].pid), NULL, 0);
	/* The ring is quiet now: each observer reads its last frames and compares its view. */
	restart_observers(&obs_restarts);
	atomic_store(&sh->stop_observers, 1);
	for (int i = 0; i < cfg.observers; i++) {
		int pid = atomic_load(&sh->o[i].pid);

		for (int ms = 0; pid > 0 && ms < 10000 && waitpid(pid, NULL, WNOHANG) == 0;
		     ms += 10)
			usleep(10000);
		if (pid > 0 && kill(pid, 0) == 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
	}
	observed_sum(&ob);
	/* The report. */
	if (demo_ledger_open(cfg.db, &ledger) || demo_ledger_audit(ledger, &a)) {
		printf("orbit-demo: FAIL: the ledger cannot be audited\n");
		return 1;
	}
	missing = missing_accepted(ledger, &logged);
	demo_ledger_close(ledger);
	printf("\norbit-demo report (%d s)\n", cfg.seconds);
	printf("  transfers accepted %llu (%llu logged), applied %llu, refused for funds %llu\n",
	       (unsigned long long)atomic_load(&sh->accepted), (unsigned long long)logged,
	       (unsigned long long)a.transfers, (unsigned long long)atomic_load(&sh->insufficient));
	printf("  redelivered %llu, of which deduplicated %llu; stale writes refused %llu\n",
	       (unsigned long long)atomic_load(&sh->redelivered),
	       (unsigned long long)atomic_load(&sh->duplicates),
	       (unsigned long long)atomic_load(&sh->stale));
	printf("  kills %llu, pauses past the lease %llu, adoptions %llu, hosting lost %llu\n",
	       (unsigned long long)kills, (unsigned long long)pauses,
	       (unsigned long long)atomic_load(&sh->adoptions),
	       (unsigned long long)atomic_load(&sh->lost));
	printf("  account locks retried after an error (a full table): %llu\n",
	       (unsigned long long)atomic_load(&sh->lock_retries));
	for (int i = 0; i < cfg.observers; i++) {
		struct observer_slot *o = &sh->o[i];

		printf("  observer %d (started %llu times): acquisitions %llu, releases %llu,\n"
		       "      expiries %llu, force releases %llu, resyncs %llu (lags %llu), "
		       "frames %llu,\n      acquisitions over a holder known only from a scan "
		       "left unjudged %llu\n",
		       i, (unsigned long long)atomic_load(&o->starts),
		       (unsigned long long)atomic_load(&o->acquired),
		       (unsigned long long)atomic_load(&o->released),
		       (unsigned long long)atomic_load(&o->expired),
		       (unsigned long long)atomic_load(&o->forced),
		       (unsigned long long)atomic_load(&o->resyncs),
		       (unsigned long long)atomic_load(&o->lags),
		       (unsigned long long)atomic_load(&o->frames),
		       (unsigned long long)atomic_load(&o->unjudged));
	}
#define CHECK(ok, ...)                                                                             \
	do {                                                                                       \
		bool ok_ = (ok);                                                                   \
		printf("  %s ", ok_ ? "ok  " : "FAIL");                                            \
		printf(__VA_ARGS__);                                                               \
		printf("\n");                                                                      \
		fails += !ok_;                                                                     \
	} while (0)
	CHECK(a.total == (int64_t)cfg.accounts * INITIAL_BALANCE,
	      "total balance %lld (expected %lld)", (long long)a.total,
	      (long long)cfg.accounts * INITIAL_BALANCE);
	CHECK(missing == 0, "every accepted transfer applied once: %llu of %llu logged missing",
	      (unsigned long long)missing, (unsigned long long)logged);
	CHECK(a.min_balance >= 0, "no account below zero (lowest %lld)", (long long)a.min_balance);
	CHECK(atomic_load(&sh->violations) == 0, "mutual-exclusion violations: %llu",
	      (unsigned long long)atomic_load(&sh->violations));
	CHECK(a.stale_accepted == 0, "stale writes accepted: %llu (audit of %llu writes)",
	      (unsigned long long)a.stale_accepted, (unsigned long long)a.writes);
	CHECK(atomic_load(&sh->handler_errors) == 0, "handler errors: %llu",
	      (unsigned long long)atomic_load(&sh->handler_errors));
	for (int i = 0; i < cfg.observers; i++) {
		struct observer_slot *o = &sh->o[i];
		uint64_t ov = atomic_load(&o->overlaps), ee = atomic_load(&o->early_expiries);
		uint64_t rg = atomic_load(&o->regressions);

		CHECK(ov + ee + rg == 0,
		      "observer %d: overlapping holders %llu, early expiries %llu, "
		      "token regressions %llu",
		      i, (unsigned long long)ov, (unsigned long long)ee, (unsigned long long)rg);
		if (atomic_load(&o->first_set))
			printf("         the first: %s\n", o->first);
		CHECK(atomic_load(&o->final_done) && atomic_load(&o->final_differ) == 0,
		      "observer %d's view agrees with the lock table at the end: %s%llu held, "
		      "%llu differ",
		      i, atomic_load(&o->final_done) ? "" : "NO VERDICT, ",
		      (unsigned long long)atomic_load(&o->final_agree),
		      (unsigned long long)atomic_load(&o->final_differ));
	}
	if (series) {
		fclose(series);
		plot(data);
	}
	if (!cfg.keep) {
		unlink_segments();
		remove_dir();
	} else {
		printf("orbit-demo: --keep: fleet %s's segments and the ledger in %s are kept\n"
		       "orbit-demo: remove them with: orbitctl --fleet %s unlink; rm -r %s\n",
		       cfg.fleet, cfg.dir, cfg.fleet, cfg.dir);
	}
	printf("orbit-demo: %s\n", fails ? "FAILED" : "all invariants hold");
	return fails ? 1 : 0;
}
