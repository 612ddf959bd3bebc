// SPDX-License-Identifier: MIT
/*
 * shm/stats.c: the stats segment (kind 231): the counter and histogram
 * name tables, the layout fingerprint that covers them, open/create, and
 * the per-row seqlock (single writer publishes, lock-free readers copy and
 * re-check). See shm/stats.h for the layout and who writes what.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>

#include "base/hash.h"
#include "shm/members.h"
#include "shm/spot_queue.h"
#include "shm/stats.h"
#include <orbit/error.h>

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "u64 atomics must be lock-free (address-free) in SHM");

const struct orbit_stats_desc orbit__stats_counters[ORBIT_STAT__COUNT] = {
	[ORBIT_STAT_LOCK_ACQUIRED] = { "lock_acquired", "try_acquire calls that took the lock", 0 },
	[ORBIT_STAT_LOCK_BUSY] = { "lock_busy", "try_acquire calls refused: held by another owner",
				   0 },
	[ORBIT_STAT_LOCK_RENEWED] = { "lock_renewed", "successful renew calls", 0 },
	[ORBIT_STAT_LOCK_RELEASED] = { "lock_released", "successful release calls", 0 },
	[ORBIT_STAT_LOCK_WRONG_OWNER] = { "lock_wrong_owner",
					  "renew/release refused: another owner or token", 0 },
	[ORBIT_STAT_LOCK_NOT_HELD] = { "lock_not_held", "renew/release of a key nobody holds", 0 },
	[ORBIT_STAT_LOCK_FULL] = { "lock_full", "try_acquire refused: table full", 0 },
	[ORBIT_STAT_LOCK_EXPIRED_RECLAIMED] = { "lock_expired_reclaimed",
						"expired entries reclaimed", 0 },
	[ORBIT_STAT_LOCK_FORCE_RELEASED] = { "lock_force_released", "administrative force releases",
					     0 },
	[ORBIT_STAT_FRAMES_WRITTEN] = { "frames_written", "transition frames published", 0 },
	[ORBIT_STAT_FRAMES_READ] = { "frames_read", "transition frames read by the agent", 0 },
	[ORBIT_STAT_FRAMES_LAGGED] = { "frames_lagged",
				       "lag events: frames overwritten before read", 0 },
	[ORBIT_STAT_WAKEUPS] = { "wakeups", "agent thread wakeups", 0 },
	[ORBIT_STAT_SUBSCRIBER_SIGNALS] = { "subscriber_signals",
					    "signals to local subscribers: eventfd writes, "
					    "callback calls",
					    0 },
	[ORBIT_STAT_CORRUPT_BYTES] = { "corrupt_detected", "SHM records that failed validation",
				       0 },
	[ORBIT_STAT_MEMBERS_RECLAIMED] = { "members_reclaimed",
					   "dead members whose rows and lanes were reclaimed", 0 },
	[ORBIT_STAT_VIEW_ENTRIES] = { "view_entries", "lock states in the local RCU view", 1 },
	/* Summed over the queues, pools, lanes and coordinators the agent
	 * watches; counters keep what unwatched objects counted, gauges do not. */
	[ORBIT_STAT_WATCHED_OBJECTS] = { "watched_objects",
					 "queues, pools, lanes and coordinators the agent watches",
					 1 },
	[ORBIT_STAT_QUEUE_ACCEPTED] = { "queue_accepted", "serial queue submissions accepted", 0 },
	[ORBIT_STAT_QUEUE_REJECTED] = { "queue_rejected",
					"serial queue submissions refused (full, too big, closed)",
					0 },
	[ORBIT_STAT_QUEUE_TURNS_RUN] = { "queue_turns_run",
					 "serial queue turns run (items and continuations)", 0 },
	[ORBIT_STAT_QUEUE_COMPLETED] = { "queue_completed", "serial queue items finished", 0 },
	[ORBIT_STAT_QUEUE_SUSPENDED] = { "queue_suspended",
					 "serial queue turns that ended suspended", 0 },
	[ORBIT_STAT_QUEUE_SLICES_CUT] = { "queue_slices_cut",
					  "serial queue drain slices cut by the owner time budget",
					  0 },
	[ORBIT_STAT_QUEUE_DEPTH] = { "queue_depth",
				     "serial queue items queued, running or suspended", 1 },
	[ORBIT_STAT_POOL_TASKS_SUBMITTED] = { "pool_tasks_submitted", "worker pool tasks accepted",
					      0 },
	[ORBIT_STAT_POOL_TASKS_RUN] = { "pool_tasks_run", "worker pool tasks run", 0 },
	[ORBIT_STAT_POOL_TASKS_STOLEN] = { "pool_tasks_stolen",
					   "worker pool tasks run by a worker of another node", 0 },
	[ORBIT_STAT_POOL_REJECTED] = { "pool_rejected", "worker pool submits refused", 0 },
	[ORBIT_STAT_POOL_SLEEPS] = { "pool_sleeps", "times a worker pool thread went to sleep", 0 },
	[ORBIT_STAT_LANE_TURNS] = { "lane_turns", "state lane work items run", 0 },
	[ORBIT_STAT_LANE_POSTS] = { "lane_posts", "state lane try_post/run_async calls accepted",
				    0 },
	[ORBIT_STAT_LANE_REENTRY_REFUSED] = { "lane_reentry_refused",
					      "state lane entries refused as reentrant", 0 },
	/* Spot, Actor and session coordinators (orbit/spot_executor.h), all kinds of work. */
	[ORBIT_STAT_EXEC_ACCEPTED] = { "exec_accepted", "coordinator work accepted", 0 },
	[ORBIT_STAT_EXEC_REJECTED] = { "exec_rejected",
				       "coordinator work refused at the call (full, too big, "
				       "closed)",
				       0 },
	[ORBIT_STAT_EXEC_COMPLETED] = { "exec_completed", "coordinator handlers finished", 0 },
	[ORBIT_STAT_EXEC_YIELDED] = { "exec_yielded",
				      "coordinator handlers that yielded their turn", 0 },
	[ORBIT_STAT_EXEC_TURN_WAITED] = { "exec_turn_waited",
					  "SpotWide Actor turns that waited for Spot queue room",
					  0 },
	[ORBIT_STAT_EXEC_TURN_REJECTED] = { "exec_turn_rejected",
					    "SpotWide Actor turns lost after acceptance (no "
					    "memory, executor refused)",
					    0 },
	[ORBIT_STAT_EXEC_PROTOCOL_ERRORS] = { "exec_protocol_errors",
					      "coordinator handlers that broke the yield protocol "
					      "(suspended without orbit_work_yield, or yielded and "
					      "did not return SUSPENDED)",
					      0 },
	[ORBIT_STAT_EXEC_OUTSTANDING] = { "exec_outstanding",
					  "coordinator work accepted and not finished", 1 },
	[ORBIT_STAT_EXEC_ACTOR_QUEUES] = { "exec_actor_queues", "Actor queues of the watched Spots",
					   1 },
	[ORBIT_STAT_EXEC_TIMER_QUEUES] = { "exec_timer_queues",
					   "timer queues of the watched PerActor Spots", 1 },
	[ORBIT_STAT_SPOT_SLOTS_FULL] = { "spot_slots_full",
					 "Spot hosts and clients left unpublished: all of the "
					 "member's Spot slots in use",
					 0 },
};

const struct orbit_stats_desc orbit__stats_hists[ORBIT_HIST__COUNT] = {
	[ORBIT_HIST_ACQUIRE_NS] = { "acquire_latency", "try_acquire latency", 0 },
	[ORBIT_HIST_DELIVERY_NS] = { "delivery_latency", "transition publish-to-delivery latency",
				     0 },
};

/* Prometheus names: orbit_spot_host_<name>, orbit_spot_client_<name> (orbitctl). */
const struct orbit_stats_desc orbit__stats_spot_host_counters[ORBIT_SPOT_HOST__COUNT] = {
	[ORBIT_SPOT_HOST_ACCEPTED] = { "accepted",
				       "submits the queue accepted since this host took it over",
				       0 },
	[ORBIT_SPOT_HOST_REJECTED_COUNT] = { "rejected_count",
					     "submits refused since the takeover: a lane full by "
					     "count",
					     0 },
	[ORBIT_SPOT_HOST_REJECTED_BYTES] = { "rejected_bytes",
					     "submits refused since the takeover: a lane full by "
					     "bytes",
					     0 },
	[ORBIT_SPOT_HOST_DELIVERED] = { "delivered", "records handed to the Spot coordinator", 0 },
	[ORBIT_SPOT_HOST_COMPLETED] = { "completed",
					"records completed after their handler finished", 0 },
	[ORBIT_SPOT_HOST_REDELIVERED] = { "redelivered",
					  "records delivered again (taken by an older host, never "
					  "completed)",
					  0 },
	[ORBIT_SPOT_HOST_ABORTED_DEAD] = { "aborted_dead",
					   "records aborted mid-write: their producer was proved "
					   "dead",
					   0 },
	[ORBIT_SPOT_HOST_ABORTED_UNBLOCK] = { "aborted_unblock",
					      "records aborted mid-write: a live producer held "
					      "them past the unblock bound",
					      0 },
	[ORBIT_SPOT_HOST_CORRUPT] = { "corrupt",
				      "records or queue words that failed validation, skipped or "
				      "repaired",
				      0 },
	[ORBIT_SPOT_HOST_FENCED] = { "fenced", "completes refused because a newer host took over",
				     0 },
	[ORBIT_SPOT_HOST_RETRIED] = { "retried", "coordinator refusals of a taken record, retried",
				      0 },
	[ORBIT_SPOT_HOST_UNDELIVERABLE] = { "undeliverable",
					    "records the coordinator can never run, completed "
					    "unrun",
					    0 },
	[ORBIT_SPOT_HOST_UNHANDLED] = { "unhandled",
					"records with no handler for their kind, completed unrun",
					0 },
	[ORBIT_SPOT_HOST_IN_FLIGHT] = { "in_flight",
					"records handed to the coordinator and not finished", 1 },
	[ORBIT_SPOT_HOST_APP_DEPTH] = { "app_depth", "application lane records reserved", 1 },
	[ORBIT_SPOT_HOST_APP_BYTES] = { "app_bytes", "application lane payload bytes reserved", 1 },
	[ORBIT_SPOT_HOST_LIFECYCLE_DEPTH] = { "lifecycle_depth", "lifecycle lane records reserved",
					      1 },
	[ORBIT_SPOT_HOST_LIFECYCLE_BYTES] = { "lifecycle_bytes",
					      "lifecycle lane payload bytes reserved", 1 },
	[ORBIT_SPOT_HOST_EPOCH] = { "epoch",
				    "this host's epoch (the hosting lease's fencing token)", 1 },
	[ORBIT_SPOT_HOST_LOST] = { "lost", "1 once this host lost hosting", 1 },
	[ORBIT_SPOT_HOST_LATENCY_MAX_NS] = { "latency_max_ns",
					     "longest sampled submit-to-run latency seen (ns)", 1 },
	[ORBIT_SPOT_HOST_NOT_STARTED] = { "not_started",
					  "records handed to the coordinator whose handler never "
					  "started here: the lease had run out or another host "
					  "took "
					  "over (left for the next host)",
					  0 },
};

const struct orbit_stats_desc orbit__stats_spot_client_counters[ORBIT_SPOT_CLIENT__COUNT] = {
	[ORBIT_SPOT_CLIENT_SUBMITTED] = { "submitted",
					  "records submitted (the queue accepted them)", 0 },
	[ORBIT_SPOT_CLIENT_EAGAIN] = { "eagain", "submits refused with -EAGAIN: the lane was full",
				       0 },
	[ORBIT_SPOT_CLIENT_FAILED] = { "failed",
				       "submits refused otherwise (too big, aborted, corrupt lane)",
				       0 },
	[ORBIT_SPOT_CLIENT_WAITS] = { "waits", "waits for lane room", 0 },
	[ORBIT_SPOT_CLIENT_WAIT_TIMEOUTS] = { "wait_timeouts", "waits for lane room that timed out",
					      0 },
};

const struct orbit_stats_desc orbit__stats_spot_hist = {
	"submit_to_run",
	"Spot record submit (producer's CLOCK_MONOTONIC) to handler start, exact stamps only", 0
};

const struct orbit_stats_desc *orbit__stats_spot_table(enum orbit_stats_spot_role role, unsigned *n)
{
	unsigned k = 0;
	const struct orbit_stats_desc *t = NULL;

	if (role == ORBIT_STATS_SPOT_HOST) {
		t = orbit__stats_spot_host_counters;
		k = ORBIT_SPOT_HOST__COUNT;
	} else if (role == ORBIT_STATS_SPOT_CLIENT) {
		t = orbit__stats_spot_client_counters;
		k = ORBIT_SPOT_CLIENT__COUNT;
	}
	if (n)
		*n = k;
	return t;
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
	/* then a separator: "ab","c" differs from "a","bc" */
	return orbit__fnv1a64_byte(orbit__fnv1a64_str(h, s), 0xff);
}

uint64_t orbit__stats_fingerprint(void)
{
	uint64_t names = ORBIT__FNV64_BASIS;
	uint64_t w[18];

	for (unsigned i = 0; i < ORBIT_STAT__COUNT; i++)
		names = fnv_str(names, orbit__stats_counters[i].name);
	for (unsigned i = 0; i < ORBIT_HIST__COUNT; i++)
		names = fnv_str(names, orbit__stats_hists[i].name);
	for (unsigned i = 0; i < ORBIT_SPOT_HOST__COUNT; i++)
		names = fnv_str(names, orbit__stats_spot_host_counters[i].name);
	for (unsigned i = 0; i < ORBIT_SPOT_CLIENT__COUNT; i++)
		names = fnv_str(names, orbit__stats_spot_client_counters[i].name);
	names = fnv_str(names, orbit__stats_spot_hist.name);
	w[0] = ORBIT_SEG_KIND_STATS;
	w[1] = ORBIT_STATS_ROWS;
	w[2] = ORBIT_STATS_ROW_BYTES;
	w[3] = ORBIT_STAT__COUNT;
	w[4] = ORBIT_HIST__COUNT;
	w[5] = ORBIT_STATS_BUCKETS;
	w[6] = ORBIT_STATS_COUNTERS_MAX;
	w[7] = offsetof(struct orbit_stats_row, counters);
	w[8] = offsetof(struct orbit_stats_row, hists);
	w[9] = sizeof(struct orbit_stats_hist_shm);
	w[10] = offsetof(struct orbit_stats_body, row);
	w[11] = names;
	w[12] = ORBIT_STATS_SPOTS_PER_ROW;
	w[13] = ORBIT_STATS_SPOT_BYTES;
	w[14] = ORBIT_SPOT_HOST__COUNT;
	w[15] = ORBIT_SPOT_CLIENT__COUNT;
	w[16] = offsetof(struct orbit_stats_body, spot);
	w[17] = offsetof(struct orbit_stats_spot_shm, hist);
	return orbit__seg_fingerprint(w, sizeof(w) / sizeof(w[0]));
}

static int stats_init(void *body, uint64_t body_bytes, void *arg)
{
	struct orbit_stats_body *b = body;

	(void)arg;
	if (body_bytes < sizeof(*b))
		return -ORBIT_ESIZE;
	/* Plain stores: nobody else sees the body before READY (segment.c SG-R1). */
	b->rows = ORBIT_STATS_ROWS;
	b->row_bytes = ORBIT_STATS_ROW_BYTES;
	b->ncounters = ORBIT_STAT__COUNT;
	b->nhists = ORBIT_HIST__COUNT;
	b->spots_per_row = ORBIT_STATS_SPOTS_PER_ROW;
	b->spot_bytes = ORBIT_STATS_SPOT_BYTES;
	b->nspot_host = ORBIT_SPOT_HOST__COUNT;
	b->nspot_client = ORBIT_SPOT_CLIENT__COUNT;
	return 0;
}

int orbit__stats_open(orbit_stats_t *st, const char *fleet, const struct orbit_seg_opts *opts)
{
	struct orbit_seg_spec spec = {
		.kind = ORBIT_SEG_KIND_STATS,
		.layout_version = ORBIT_STATS_LAYOUT_VERSION,
		.total_bytes = ORBIT_STATS_TOTAL_BYTES,
		.fingerprint = orbit__stats_fingerprint(),
		.init = stats_init,
	};
	struct orbit_seg_opts def = { .how = ORBIT_SEG_OPEN_OR_CREATE };
	struct orbit_stats_body *b;
	int rc;

	if (!st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	/* The mode and group are the caller's, as for every kind (segment_perm.h) */
	rc = orbit__seg_open(&st->seg, fleet, ORBIT_STATS_SEG_NAME, &spec, opts ? opts : &def);
	if (rc < 0)
		return rc;
	b = orbit__seg_at(&st->seg, ORBIT_SEG_HEADER_BYTES, sizeof(*b));
	if (!b) {
		rc = -ORBIT_ESIZE;
		goto err_close;
	}
	/* The fingerprint agreed; the counts are bytes of SHM all the same. */
	if (b->rows != ORBIT_STATS_ROWS || b->row_bytes != ORBIT_STATS_ROW_BYTES ||
	    b->ncounters != ORBIT_STAT__COUNT || b->nhists != ORBIT_HIST__COUNT ||
	    b->spots_per_row != ORBIT_STATS_SPOTS_PER_ROW ||
	    b->spot_bytes != ORBIT_STATS_SPOT_BYTES || b->nspot_host != ORBIT_SPOT_HOST__COUNT ||
	    b->nspot_client != ORBIT_SPOT_CLIENT__COUNT) {
		rc = -ORBIT_ECORRUPT;
		goto err_close;
	}
	st->body = b;
	return 0;

err_close:
	orbit__seg_close(&st->seg);
	memset(st, 0, sizeof(*st));
	return rc;
}

void orbit__stats_close(orbit_stats_t *st)
{
	if (!st)
		return;
	orbit__seg_close(&st->seg);
	st->body = NULL;
}

static struct orbit_stats_row *row_at(const orbit_stats_t *st, uint32_t row)
{
	if (!st || !st->body || row >= ORBIT_STATS_ROWS)
		return NULL;
	return &st->body->row[row];
}

/*
 * ST-W1: the writer's odd store on a row's or a Spot slot's seq, then
 * release value stores; pairs with ST-A2/ST-A3 in row_read() and
 * spot_read(). Returns the even seq it started from.
 */
static uint64_t write_begin(_Atomic uint64_t *seq)
{
	/* Relaxed: only this process writes the row or slot; reading our own store. */
	uint64_t s = atomic_load_explicit(seq, memory_order_relaxed);

	s = (s + 1) & ~1ull; /* a writer that died mid-row left it odd */
	/* Relaxed: ordered before every value by the release value stores (ST-W1). */
	atomic_store_explicit(seq, s + 1, memory_order_relaxed);
	return s;
}

static void write_end(_Atomic uint64_t *seq, uint64_t s)
{
	/* ST-W2: release, pairs with ST-A1 in row_read() / spot_read(): values before even seq */
	atomic_store_explicit(seq, s + 2, memory_order_release);
}

/*
 * Seqlock without fences (Boehm, "Can seqlocks get along with programming
 * language memory models?"): a value store is a release (ST-W1: the odd seq
 * before it) and a value load an acquire (ST-A2: a reader that sees a value of
 * a newer publish also sees that publish's odd seq at its re-check). Both
 * are plain moves on x86 and keep TSan exact.
 */
#define ST(f, v) atomic_store_explicit(&(f), (v), memory_order_release) /* ST-W1 */
/* ST-A2: acquire, pairs with ST-W1: a newer value brings its odd seq */
#define LD(f) atomic_load_explicit(&(f), memory_order_acquire)

static void zero_values(struct orbit_stats_row *r)
{
	for (unsigned i = 0; i < ORBIT_STATS_COUNTERS_MAX; i++)
		ST(r->counters[i], 0);
	for (unsigned h = 0; h < ORBIT_STATS_HISTS_MAX; h++) {
		ST(r->hists[h].count, 0);
		ST(r->hists[h].sum_ns, 0);
		for (unsigned b = 0; b < ORBIT_STATS_BUCKETS; b++)
			ST(r->hists[h].buckets[b], 0);
	}
}

static void hist_store(struct orbit_stats_hist_shm *h, const struct orbit_stats_hist_local *v)
{
	ST(h->count, v ? v->count : 0);
	ST(h->sum_ns, v ? v->sum_ns : 0);
	for (unsigned b = 0; b < ORBIT_STATS_BUCKETS; b++)
		ST(h->buckets[b], v ? v->buckets[b] : 0);
}

static void hist_load(struct orbit_stats_hist_local *v, struct orbit_stats_hist_shm *h)
{
	v->count = LD(h->count);
	v->sum_ns = LD(h->sum_ns);
	for (unsigned b = 0; b < ORBIT_STATS_BUCKETS; b++)
		v->buckets[b] = LD(h->buckets[b]);
}

static struct orbit_stats_spot_shm *spot_at(const orbit_stats_t *st, uint32_t row, uint32_t slot)
{
	if (!st || !st->body || row >= ORBIT_STATS_ROWS || slot >= ORBIT_STATS_SPOTS_PER_ROW)
		return NULL;
	return &st->body->spot[row][slot];
}

/* Write a Spot slot: @snap NULL frees it (every value 0). */
static void spot_write(struct orbit_stats_spot_shm *p, const struct orbit_stats_spot_snapshot *snap)
{
	unsigned n = 0;
	uint64_t s = write_begin(&p->seq);

	if (snap)
		orbit__stats_spot_table(snap->role, &n);
	ST(p->role, snap ? (uint64_t)snap->role : 0);
	ST(p->pid, snap ? snap->pid : 0);
	ST(p->start_ticks, snap ? snap->start_ticks : 0);
	ST(p->published_ns, snap ? orbit__now_real_ns() : 0);
	ST(p->ncounters, n);
	for (unsigned w = 0; w < ORBIT_STATS_SPOT_NAME_BYTES / 8; w++) {
		uint64_t v = 0;

		if (snap)
			memcpy(&v, snap->name + 8 * w, 8);
		ST(p->name[w], v);
	}
	for (unsigned i = 0; i < ORBIT_STATS_SPOT_COUNTERS_MAX; i++)
		ST(p->counters[i], i < n ? snap->counters[i] : 0);
	hist_store(&p->hist, snap && snap->role == ORBIT_STATS_SPOT_HOST ? &snap->hist : NULL);
	write_end(&p->seq, s);
}

/* Zero a row's values and its Spot slots and stamp its writer (pid 0: never claimed). */
static int restamp(orbit_stats_t *st, uint32_t row, uint64_t pid, uint64_t start_ticks)
{
	struct orbit_stats_row *r = row_at(st, row);
	uint64_t s;

	if (!r)
		return -EINVAL;
	if (st->seg.readonly)
		return -EROFS;
	/* a new tenure (or a reclaim) starts without the last one's Spots */
	for (uint32_t k = 0; k < ORBIT_STATS_SPOTS_PER_ROW; k++)
		spot_write(spot_at(st, row, k), NULL);
	s = write_begin(&r->seq);
	zero_values(r);
	ST(r->pid, pid);
	ST(r->start_ticks, start_ticks);
	ST(r->published_ns, pid ? orbit__now_real_ns() : 0);
	ST(r->ncounters, ORBIT_STAT__COUNT);
	write_end(&r->seq, s);
	return 0;
}

int orbit__stats_claim(orbit_stats_t *st, uint32_t row, uint64_t pid, uint64_t start_ticks)
{
	if (pid == 0)
		return -EINVAL;
	return restamp(st, row, pid, start_ticks);
}

int orbit__stats_clear(orbit_stats_t *st, uint32_t row)
{
	return restamp(st, row, 0, 0);
}

int orbit__stats_publish(orbit_stats_t *st, uint32_t row, const struct orbit_stats_snapshot *snap)
{
	struct orbit_stats_row *r = row_at(st, row);
	uint64_t s;

	if (!r || !snap)
		return -EINVAL;
	if (st->seg.readonly)
		return -EROFS;
	s = write_begin(&r->seq);
	for (unsigned i = 0; i < ORBIT_STAT__COUNT; i++)
		ST(r->counters[i], snap->counters[i]);
	for (unsigned h = 0; h < ORBIT_HIST__COUNT; h++)
		hist_store(&r->hists[h], &snap->hists[h]);
	ST(r->published_ns, orbit__now_real_ns());
	write_end(&r->seq, s);
	return 0;
}

/*
 * A reader's bound on its retries. A miss (odd seq, or changed at the
 * re-check) is retried: ORBIT_STATS_READ_SPINS copies back to back (a
 * publish takes about a microsecond), then each after a sched_yield() (a
 * writer preempted mid-publish on this CPU gets to finish; under TSan or
 * on a loaded host one stays odd for a time slice, and 64 copies in a row
 * took well under that), until @budget_ns of CLOCK_MONOTONIC from the
 * first yield, and only while the block's stamped writer runs
 * (writer_runs()). So the reader never hangs on a seq a dead or stopped writer
 * left odd, never returns a torn copy, and gives up on a live writer only
 * when it rewrote the block for the whole budget. A read of a pass
 * (orbit__stats_read_pass) waits at most what the pass has left and
 * charges it with the wait: a hostile writer's many odd blocks cost one
 * pass ORBIT_STATS_PASS_BUDGET_NS, not 20 ms each.
 */
struct read_bound {
	uint64_t budget_ns;
	uint64_t deadline_ns;	/* 0 until the spins ran out */
	uint64_t waited_from;	/* CLOCK_MONOTONIC of the first yield (0: none) */
	uint64_t *pass_left_ns; /* NULL, or the pass's wait left, shared by its reads */
	unsigned misses;
	_Atomic uint64_t *pid, *start_ticks; /* the block's writer, as stamped at claim */
};

/*
 * Whether the block's stamped writer runs: a process @pid with start time
 * @start_ticks (one /proc read). Only a live writer is worth the wait: one
 * that died mid-publish, or the random pid of scribbled bytes, gets
 * -EAGAIN without it (a reader of a corrupt segment, orbitctl or a fuzzer,
 * pays no budget per block). A pid reused within its start tick only
 * costs one budget.
 */
static bool writer_runs(const struct read_bound *b)
{
	/* Relaxed: a hint for the wait only; nothing read here is returned. */
	uint64_t pid = atomic_load_explicit(b->pid, memory_order_relaxed);
	uint64_t want = atomic_load_explicit(b->start_ticks, memory_order_relaxed), t = 0;

	if (pid == 0 || pid > INT32_MAX)
		return false;
	return orbit__proc_start_time((pid_t)pid, &t) == 0 && t == want;
}

static bool retry_within(struct read_bound *b)
{
	uint64_t now;

	if (++b->misses <= ORBIT_STATS_READ_SPINS)
		return true;
	now = orbit__now_mono_ns();
	if (!b->deadline_ns) {
		uint64_t budget = b->budget_ns;

		/* a pass's spent budget: -EAGAIN at once, as for a dead writer */
		if (b->pass_left_ns && *b->pass_left_ns < budget)
			budget = *b->pass_left_ns;
		if (!budget || !writer_runs(b))
			return false;
		b->waited_from = now;
		b->deadline_ns = budget > UINT64_MAX - now ? UINT64_MAX : now + budget;
	} else if (now >= b->deadline_ns) {
		return false;
	}
	sched_yield();
	return true;
}

/* Charge the pass (if any) with the time this read waited, and return @rc. */
static int read_done(const struct read_bound *b, int rc)
{
	uint64_t spent;

	if (b->pass_left_ns && b->waited_from) {
		spent = orbit__now_mono_ns() - b->waited_from;
		*b->pass_left_ns -= spent < *b->pass_left_ns ? spent : *b->pass_left_ns;
	}
	return rc;
}

static int row_read(const orbit_stats_t *st, uint32_t row, struct orbit_stats_snapshot *out,
		    struct read_bound *b)
{
	struct orbit_stats_row *r = row_at(st, row);

	if (!r || !out)
		return -EINVAL;
	b->pid = &r->pid;
	b->start_ticks = &r->start_ticks;
	for (;;) {
		/* ST-A1: acquire, pairs with ST-W2 in write_end(): values of that publish visible */
		uint64_t s1 = atomic_load_explicit(&r->seq, memory_order_acquire);

		if (s1 & 1) {
			if (!retry_within(b))
				return -EAGAIN;
			continue;
		}
		out->seq = s1;
		out->pid = LD(r->pid);
		out->start_ticks = LD(r->start_ticks);
		out->published_ns = LD(r->published_ns);
		for (unsigned i = 0; i < ORBIT_STAT__COUNT; i++)
			out->counters[i] = LD(r->counters[i]);
		for (unsigned h = 0; h < ORBIT_HIST__COUNT; h++)
			hist_load(&out->hists[h], &r->hists[h]);
		/* ST-A3: relaxed re-check, pairs with ST-W1: the ST-A2 loads before it already order it */
		if (atomic_load_explicit(&r->seq, memory_order_relaxed) != s1) {
			if (!retry_within(b))
				return -EAGAIN;
			continue;
		}
		return out->pid == 0 ? -ENOENT : 0;
	}
}

int orbit__stats_read(const orbit_stats_t *st, uint32_t row, struct orbit_stats_snapshot *out)
{
	return orbit__stats_read_within(st, row, out, ORBIT_STATS_READ_BUDGET_NS);
}

int orbit__stats_read_within(const orbit_stats_t *st, uint32_t row,
			     struct orbit_stats_snapshot *out, uint64_t budget_ns)
{
	struct read_bound b = { .budget_ns = budget_ns };

	return row_read(st, row, out, &b);
}

int orbit__stats_read_pass(const orbit_stats_t *st, uint32_t row, struct orbit_stats_snapshot *out,
			   uint64_t *pass_left_ns)
{
	struct read_bound b = { .budget_ns = ORBIT_STATS_READ_BUDGET_NS,
				.pass_left_ns = pass_left_ns };

	return read_done(&b, row_read(st, row, out, &b));
}

/* ---- Spot slots ---- */

static bool spot_name_valid(const char *name, size_t room)
{
	char seg[ORBIT_SEG_NAME_MAX];

	/* NUL inside the room, then the Spot name rule of the queue segments */
	return memchr(name, '\0', room) && orbit__spotq_seg_name(seg, sizeof(seg), name) == 0;
}

int orbit__stats_spot_publish(orbit_stats_t *st, uint32_t row, uint32_t slot,
			      const struct orbit_stats_spot_snapshot *snap)
{
	struct orbit_stats_spot_shm *p = spot_at(st, row, slot);

	if (!p || !snap || snap->pid == 0 || !orbit__stats_spot_table(snap->role, NULL) ||
	    !spot_name_valid(snap->name, sizeof(snap->name)))
		return -EINVAL;
	if (st->seg.readonly)
		return -EROFS;
	spot_write(p, snap);
	return 0;
}

int orbit__stats_spot_clear(orbit_stats_t *st, uint32_t row, uint32_t slot)
{
	struct orbit_stats_spot_shm *p = spot_at(st, row, slot);

	if (!p)
		return -EINVAL;
	if (st->seg.readonly)
		return -EROFS;
	spot_write(p, NULL);
	return 0;
}

static int spot_read(const orbit_stats_t *st, uint32_t row, uint32_t slot,
		     struct orbit_stats_spot_snapshot *out, struct read_bound *b)
{
	struct orbit_stats_spot_shm *p = spot_at(st, row, slot);

	if (!p || !out)
		return -EINVAL;
	b->pid = &p->pid;
	b->start_ticks = &p->start_ticks;
	for (;;) {
		/* acquire, as ST-A1 in row_read(): pairs with ST-W2 */
		uint64_t s1 = atomic_load_explicit(&p->seq, memory_order_acquire);
		uint64_t role;
		unsigned n = 0;

		if (s1 & 1) {
			if (!retry_within(b))
				return -EAGAIN;
			continue;
		}
		memset(out, 0, sizeof(*out));
		out->seq = s1;
		role = LD(p->role);
		out->pid = LD(p->pid);
		out->start_ticks = LD(p->start_ticks);
		out->published_ns = LD(p->published_ns);
		for (unsigned w = 0; w < ORBIT_STATS_SPOT_NAME_BYTES / 8; w++) {
			uint64_t v = LD(p->name[w]);

			memcpy(out->name + 8 * w, &v, 8);
		}
		/* the role is validated before it picks a table; n bounds the copy */
		if (role <= ORBIT_STATS_SPOT_CLIENT)
			orbit__stats_spot_table((enum orbit_stats_spot_role)role, &n);
		for (unsigned i = 0; i < n; i++)
			out->counters[i] = LD(p->counters[i]);
		hist_load(&out->hist, &p->hist);
		/* relaxed re-check, as ST-A3 in row_read() */
		if (atomic_load_explicit(&p->seq, memory_order_relaxed) != s1) {
			if (!retry_within(b))
				return -EAGAIN;
			continue;
		}
		if (role == ORBIT_STATS_SPOT_FREE)
			return -ENOENT;
		if (role > ORBIT_STATS_SPOT_CLIENT || out->pid == 0 ||
		    !spot_name_valid(out->name, sizeof(out->name))) {
			out->name[sizeof(out->name) - 1] = '\0';
			return -ORBIT_ECORRUPT;
		}
		out->role = (enum orbit_stats_spot_role)role;
		if (out->role == ORBIT_STATS_SPOT_CLIENT)
			memset(&out->hist, 0, sizeof(out->hist));
		return 0;
	}
}

int orbit__stats_spot_read(const orbit_stats_t *st, uint32_t row, uint32_t slot,
			   struct orbit_stats_spot_snapshot *out)
{
	return orbit__stats_spot_read_within(st, row, slot, out, ORBIT_STATS_READ_BUDGET_NS);
}

int orbit__stats_spot_read_within(const orbit_stats_t *st, uint32_t row, uint32_t slot,
				  struct orbit_stats_spot_snapshot *out, uint64_t budget_ns)
{
	struct read_bound b = { .budget_ns = budget_ns };

	return spot_read(st, row, slot, out, &b);
}

int orbit__stats_spot_read_pass(const orbit_stats_t *st, uint32_t row, uint32_t slot,
				struct orbit_stats_spot_snapshot *out, uint64_t *pass_left_ns)
{
	struct read_bound b = { .budget_ns = ORBIT_STATS_READ_BUDGET_NS,
				.pass_left_ns = pass_left_ns };

	return read_done(&b, spot_read(st, row, slot, out, &b));
}
