// SPDX-License-Identifier: MIT
/*
 * shm/stats.c: the stats segment (kind 231): the counter and histogram
 * name tables, the layout fingerprint that covers them, open/create, and
 * the per-row seqlock (single writer publishes, lock-free readers copy and
 * re-check). See shm/stats.h for the layout and who writes what.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "base/hash.h"
#include "shm/stats.h"
#include "orbit/error.h"

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "u64 atomics must be lock-free (address-free) in SHM");

const struct orbit_stats_desc orbit__stats_counters[ORBIT_STAT__COUNT] = {
	[ORBIT_STAT_LOCK_ACQUIRED] = { "lock_acquired", "try_acquire calls that took the lock", 0 },
	[ORBIT_STAT_LOCK_BUSY] = { "lock_busy", "try_acquire calls refused: held by another owner", 0 },
	[ORBIT_STAT_LOCK_RENEWED] = { "lock_renewed", "successful renew calls", 0 },
	[ORBIT_STAT_LOCK_RELEASED] = { "lock_released", "successful release calls", 0 },
	[ORBIT_STAT_LOCK_WRONG_OWNER] = { "lock_wrong_owner", "renew/release refused: another owner or token", 0 },
	[ORBIT_STAT_LOCK_NOT_HELD] = { "lock_not_held", "renew/release of a key nobody holds", 0 },
	[ORBIT_STAT_LOCK_FULL] = { "lock_full", "try_acquire refused: table full", 0 },
	[ORBIT_STAT_LOCK_EXPIRED_RECLAIMED] = { "lock_expired_reclaimed", "expired entries reclaimed", 0 },
	[ORBIT_STAT_LOCK_FORCE_RELEASED] = { "lock_force_released", "administrative force releases", 0 },
	[ORBIT_STAT_FRAMES_WRITTEN] = { "frames_written", "transition frames published", 0 },
	[ORBIT_STAT_FRAMES_READ] = { "frames_read", "transition frames read by the agent", 0 },
	[ORBIT_STAT_FRAMES_LAGGED] = { "frames_lagged", "lag events: frames overwritten before read", 0 },
	[ORBIT_STAT_WAKEUPS] = { "wakeups", "agent thread wakeups", 0 },
	[ORBIT_STAT_SUBSCRIBER_SIGNALS] = { "subscriber_signals", "eventfd signals to local subscribers", 0 },
	[ORBIT_STAT_CORRUPT_BYTES] = { "corrupt_detected", "SHM records that failed validation", 0 },
	[ORBIT_STAT_MEMBERS_RECLAIMED] = { "members_reclaimed", "dead members whose rows and lanes were reclaimed", 0 },
	[ORBIT_STAT_VIEW_ENTRIES] = { "view_entries", "lock states in the local RCU view", 1 },
	/* Summed over the queues, pools, lanes and coordinators the agent
	 * watches; counters keep what unwatched objects counted, gauges do not. */
	[ORBIT_STAT_WATCHED_OBJECTS] = { "watched_objects", "queues, pools, lanes and coordinators the agent watches", 1 },
	[ORBIT_STAT_QUEUE_ACCEPTED] = { "queue_accepted", "serial queue submissions accepted", 0 },
	[ORBIT_STAT_QUEUE_REJECTED] = { "queue_rejected", "serial queue submissions refused (full, too big, closed)", 0 },
	[ORBIT_STAT_QUEUE_TURNS_RUN] = { "queue_turns_run", "serial queue turns run (items and continuations)", 0 },
	[ORBIT_STAT_QUEUE_COMPLETED] = { "queue_completed", "serial queue items finished", 0 },
	[ORBIT_STAT_QUEUE_SUSPENDED] = { "queue_suspended", "serial queue turns that ended suspended", 0 },
	[ORBIT_STAT_QUEUE_SLICES_CUT] = { "queue_slices_cut", "serial queue drain slices cut by the owner time budget", 0 },
	[ORBIT_STAT_QUEUE_DEPTH] = { "queue_depth", "serial queue items queued, running or suspended", 1 },
	[ORBIT_STAT_POOL_TASKS_SUBMITTED] = { "pool_tasks_submitted", "worker pool tasks accepted", 0 },
	[ORBIT_STAT_POOL_TASKS_RUN] = { "pool_tasks_run", "worker pool tasks run", 0 },
	[ORBIT_STAT_POOL_TASKS_STOLEN] = { "pool_tasks_stolen", "worker pool tasks run by a worker of another node", 0 },
	[ORBIT_STAT_POOL_REJECTED] = { "pool_rejected", "worker pool submits refused", 0 },
	[ORBIT_STAT_POOL_SLEEPS] = { "pool_sleeps", "times a worker pool thread went to sleep", 0 },
	[ORBIT_STAT_LANE_TURNS] = { "lane_turns", "state lane work items run", 0 },
	[ORBIT_STAT_LANE_POSTS] = { "lane_posts", "state lane try_post/run_async calls accepted", 0 },
	[ORBIT_STAT_LANE_REENTRY_REFUSED] = { "lane_reentry_refused", "state lane entries refused as reentrant", 0 },
	/* Spot, Actor and session coordinators (orbit/spot_executor.h), all kinds of work. */
	[ORBIT_STAT_EXEC_ACCEPTED] = { "exec_accepted", "coordinator work accepted", 0 },
	[ORBIT_STAT_EXEC_REJECTED] = { "exec_rejected", "coordinator work refused at the call (full, too big, closed)", 0 },
	[ORBIT_STAT_EXEC_COMPLETED] = { "exec_completed", "coordinator handlers finished", 0 },
	[ORBIT_STAT_EXEC_YIELDED] = { "exec_yielded", "coordinator handlers that yielded their turn", 0 },
	[ORBIT_STAT_EXEC_TURN_WAITED] = { "exec_turn_waited", "SpotWide Actor turns that waited for Spot queue room", 0 },
	[ORBIT_STAT_EXEC_TURN_REJECTED] = { "exec_turn_rejected", "SpotWide Actor turns lost after acceptance (no memory, executor refused)", 0 },
	[ORBIT_STAT_EXEC_PROTOCOL_ERRORS] = { "exec_protocol_errors", "coordinator handlers that broke the yield protocol (suspended without orbit_work_yield, or yielded and did not return SUSPENDED)", 0 },
	[ORBIT_STAT_EXEC_OUTSTANDING] = { "exec_outstanding", "coordinator work accepted and not finished", 1 },
	[ORBIT_STAT_EXEC_ACTOR_QUEUES] = { "exec_actor_queues", "Actor queues of the watched Spots", 1 },
	[ORBIT_STAT_EXEC_TIMER_QUEUES] = { "exec_timer_queues", "timer queues of the watched PerActor Spots", 1 },
};

const struct orbit_stats_desc orbit__stats_hists[ORBIT_HIST__COUNT] = {
	[ORBIT_HIST_ACQUIRE_NS] = { "acquire_latency", "try_acquire latency", 0 },
	[ORBIT_HIST_DELIVERY_NS] = { "delivery_latency", "transition publish-to-delivery latency", 0 },
};

static uint64_t fnv_str(uint64_t h, const char *s)
{
	/* then a separator: "ab","c" differs from "a","bc" */
	return orbit__fnv1a64_byte(orbit__fnv1a64_str(h, s), 0xff);
}

uint64_t orbit__stats_fingerprint(void)
{
	uint64_t names = ORBIT__FNV64_BASIS;
	uint64_t w[12];

	for (unsigned i = 0; i < ORBIT_STAT__COUNT; i++)
		names = fnv_str(names, orbit__stats_counters[i].name);
	for (unsigned i = 0; i < ORBIT_HIST__COUNT; i++)
		names = fnv_str(names, orbit__stats_hists[i].name);
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
	    b->ncounters != ORBIT_STAT__COUNT || b->nhists != ORBIT_HIST__COUNT) {
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
 * ST-W1: the writer's odd store, then release value stores; pairs with
 * ST-A2/ST-A3 in orbit__stats_read(). Returns the even seq it started from.
 */
static uint64_t write_begin(struct orbit_stats_row *r)
{
	/* Relaxed: only this process writes the row; reading our own store. */
	uint64_t s = atomic_load_explicit(&r->seq, memory_order_relaxed);

	s = (s + 1) & ~1ull; /* a writer that died mid-row left it odd */
	/* Relaxed: ordered before every value by the release value stores (ST-W1). */
	atomic_store_explicit(&r->seq, s + 1, memory_order_relaxed);
	return s;
}

static void write_end(struct orbit_stats_row *r, uint64_t s)
{
	/* ST-W2: release, pairs with ST-A1 in orbit__stats_read(): values before even seq */
	atomic_store_explicit(&r->seq, s + 2, memory_order_release);
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

/* Zero a row's values and stamp its writer (pid 0: never claimed). */
static int restamp(orbit_stats_t *st, uint32_t row, uint64_t pid, uint64_t start_ticks)
{
	struct orbit_stats_row *r = row_at(st, row);
	uint64_t s;

	if (!r)
		return -EINVAL;
	if (st->seg.readonly)
		return -EROFS;
	s = write_begin(r);
	zero_values(r);
	ST(r->pid, pid);
	ST(r->start_ticks, start_ticks);
	ST(r->published_ns, pid ? orbit__now_real_ns() : 0);
	ST(r->ncounters, ORBIT_STAT__COUNT);
	write_end(r, s);
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
	s = write_begin(r);
	for (unsigned i = 0; i < ORBIT_STAT__COUNT; i++)
		ST(r->counters[i], snap->counters[i]);
	for (unsigned h = 0; h < ORBIT_HIST__COUNT; h++) {
		ST(r->hists[h].count, snap->hists[h].count);
		ST(r->hists[h].sum_ns, snap->hists[h].sum_ns);
		for (unsigned b = 0; b < ORBIT_STATS_BUCKETS; b++)
			ST(r->hists[h].buckets[b], snap->hists[h].buckets[b]);
	}
	ST(r->published_ns, orbit__now_real_ns());
	write_end(r, s);
	return 0;
}

int orbit__stats_read(const orbit_stats_t *st, uint32_t row, struct orbit_stats_snapshot *out)
{
	struct orbit_stats_row *r = row_at(st, row);

	if (!r || !out)
		return -EINVAL;
	for (int tries = 0; tries < ORBIT_STATS_READ_RETRIES; tries++) {
		/* ST-A1: acquire, pairs with ST-W2 in write_end(): values of that publish visible */
		uint64_t s1 = atomic_load_explicit(&r->seq, memory_order_acquire);

		if (s1 & 1)
			continue;
		out->seq = s1;
		out->pid = LD(r->pid);
		out->start_ticks = LD(r->start_ticks);
		out->published_ns = LD(r->published_ns);
		for (unsigned i = 0; i < ORBIT_STAT__COUNT; i++)
			out->counters[i] = LD(r->counters[i]);
		for (unsigned h = 0; h < ORBIT_HIST__COUNT; h++) {
			out->hists[h].count = LD(r->hists[h].count);
			out->hists[h].sum_ns = LD(r->hists[h].sum_ns);
			for (unsigned b = 0; b < ORBIT_STATS_BUCKETS; b++)
				out->hists[h].buckets[b] = LD(r->hists[h].buckets[b]);
		}
		/* ST-A3: relaxed re-check, pairs with ST-W1: the ST-A2 loads before it already order it */
		if (atomic_load_explicit(&r->seq, memory_order_relaxed) != s1)
			continue;
		return out->pid == 0 ? -ENOENT : 0;
	}
	return -EAGAIN;
}
