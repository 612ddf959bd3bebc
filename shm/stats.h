/* SPDX-License-Identifier: MIT */
/*
 * shm/stats.h: the stats segment (internal), kind 231, "/orbit.<fleet>.stats".
 * One row per fleet member (row index = the member's directory row), each
 * written by exactly one process (the member's agent) and read lock-free by
 * anyone (other members, orbitctl with a read-only mapping). A row holds the
 * named counters of orbit__stats_counters[] and the log2-bucket latency
 * histograms of orbit__stats_hists[]; the two tables are compiled into
 * writer and reader alike and the layout fingerprint covers them (names,
 * order and counts), so peers that disagree refuse each other at open.
 *
 * Row layout (struct orbit_stats_row, ORBIT_STATS_ROW_BYTES each):
 *   field          writer                    reader          torn read / crash
 *   seq            row's writer: odd (ST-W1),   copy, re-check  odd or changed: retry
 *                  values, even (ST-W2 release) (ST-A1 / ST-A2)       (bounded), then -EAGAIN;
 *                                                            writer killed mid-row
 *                                                            leaves seq odd: readers
 *                                                            report -EAGAIN until a new
 *                                                            writer claims the row
 *   pid..values    row's writer, between     inside the      atomic words (release
 *                  ST-W1 and ST-W2 (release        seqlock copy    stores, acquire loads:
 *                  stores, see stats.c)      (acquire loads) stats.c); a torn copy is
 *                                                            discarded by the re-check
 * Random bytes in a row are numbers to a reader: no length, offset or index
 * is taken from a row, so they can only yield odd-looking values (or
 * -EAGAIN for a stuck odd seq), never an out-of-bounds access.
 *
 * Synchronization:
 *   object             writers                 readers
 *   row r              the agent of member r   anyone, lock-free (seqlock)
 *   segment header     creator (segment.c)     every opener
 */
#ifndef ORBIT_SHM_STATS_H
#define ORBIT_SHM_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "shm/segment.h"

#define ORBIT_STATS_SEG_NAME "stats"
#define ORBIT_STATS_LAYOUT_VERSION 1u
#define ORBIT_STATS_ROWS 64u           /* = member directory rows */
#define ORBIT_STATS_COUNTERS_MAX 64u   /* room in a row; the table uses fewer */
#define ORBIT_STATS_HISTS_MAX 4u
#define ORBIT_STATS_BUCKETS 48u        /* bucket i: (2^(i-1), 2^i] ns; last: the rest */
#define ORBIT_STATS_ROW_BYTES 4096u
#define ORBIT_STATS_READ_RETRIES 64

/* Counter ids: the index into a row's counters and into orbit__stats_counters[]. */
enum orbit_stats_counter {
	ORBIT_STAT_LOCK_ACQUIRED = 0,
	ORBIT_STAT_LOCK_BUSY,
	ORBIT_STAT_LOCK_RENEWED,
	ORBIT_STAT_LOCK_RELEASED,
	ORBIT_STAT_LOCK_WRONG_OWNER,
	ORBIT_STAT_LOCK_NOT_HELD,
	ORBIT_STAT_LOCK_FULL,
	ORBIT_STAT_LOCK_EXPIRED_RECLAIMED,
	ORBIT_STAT_LOCK_FORCE_RELEASED,
	ORBIT_STAT_FRAMES_WRITTEN,
	ORBIT_STAT_FRAMES_READ,
	ORBIT_STAT_FRAMES_LAGGED,
	ORBIT_STAT_WAKEUPS,
	ORBIT_STAT_SUBSCRIBER_SIGNALS,
	ORBIT_STAT_CORRUPT_BYTES,
	ORBIT_STAT_MEMBERS_RECLAIMED,
	ORBIT_STAT_VIEW_ENTRIES,
	/* In-process objects watched through orbit_agent_watch_*(), summed. */
	ORBIT_STAT_WATCHED_OBJECTS,
	ORBIT_STAT_QUEUE_ACCEPTED,
	ORBIT_STAT_QUEUE_REJECTED,
	ORBIT_STAT_QUEUE_TURNS_RUN,
	ORBIT_STAT_QUEUE_COMPLETED,
	ORBIT_STAT_QUEUE_SUSPENDED,
	ORBIT_STAT_QUEUE_SLICES_CUT,
	ORBIT_STAT_QUEUE_DEPTH,
	ORBIT_STAT_POOL_TASKS_SUBMITTED,
	ORBIT_STAT_POOL_TASKS_RUN,
	ORBIT_STAT_POOL_TASKS_STOLEN,
	ORBIT_STAT_POOL_REJECTED,
	ORBIT_STAT_POOL_SLEEPS,
	ORBIT_STAT_LANE_TURNS,
	ORBIT_STAT_LANE_POSTS,
	ORBIT_STAT_LANE_REENTRY_REFUSED,
	/* Spot, Actor and session coordinators watched, summed together. */
	ORBIT_STAT_EXEC_ACCEPTED,
	ORBIT_STAT_EXEC_REJECTED,
	ORBIT_STAT_EXEC_COMPLETED,
	ORBIT_STAT_EXEC_YIELDED,
	ORBIT_STAT_EXEC_TURN_WAITED,
	ORBIT_STAT_EXEC_TURN_REJECTED,
	ORBIT_STAT_EXEC_PROTOCOL_ERRORS,
	ORBIT_STAT_EXEC_OUTSTANDING,
	ORBIT_STAT_EXEC_ACTOR_QUEUES,
	ORBIT_STAT_EXEC_TIMER_QUEUES,
	ORBIT_STAT__COUNT
};

enum orbit_stats_hist {
	ORBIT_HIST_ACQUIRE_NS = 0,  /* try_acquire call to return */
	ORBIT_HIST_DELIVERY_NS,     /* frame publish to the agent reading it */
	ORBIT_HIST__COUNT
};

/* kind: counter (monotonic) or gauge (a current value). */
enum orbit_stats_type { ORBIT_STATS_COUNTER = 0, ORBIT_STATS_GAUGE = 1 };

struct orbit_stats_desc {
	const char *name;  /* [a-z0-9_]+, a Prometheus metric suffix */
	const char *help;  /* one line */
	int type;          /* enum orbit_stats_type (counters table only) */
};

extern const struct orbit_stats_desc orbit__stats_counters[ORBIT_STAT__COUNT];
extern const struct orbit_stats_desc orbit__stats_hists[ORBIT_HIST__COUNT];

_Static_assert(ORBIT_STAT__COUNT <= ORBIT_STATS_COUNTERS_MAX, "counters fit a row");
_Static_assert(ORBIT_HIST__COUNT <= ORBIT_STATS_HISTS_MAX, "histograms fit a row");

/* SHM: one histogram inside a row. */
struct orbit_stats_hist_shm {
	_Atomic uint64_t count;
	_Atomic uint64_t sum_ns;
	_Atomic uint64_t buckets[ORBIT_STATS_BUCKETS];
};

/* SHM: one row (see the layout comment at the top). */
struct orbit_stats_row {
	_Atomic uint64_t seq;               /* even: stable; odd: being written */
	_Atomic uint64_t pid;               /* writer's pid (0: never claimed) */
	_Atomic uint64_t start_ticks;       /* writer's /proc start time */
	_Atomic uint64_t published_ns;      /* CLOCK_REALTIME of the last publish */
	_Atomic uint64_t ncounters;         /* ORBIT_STAT__COUNT of the writer */
	_Atomic uint64_t reserved0[3];
	_Atomic uint64_t counters[ORBIT_STATS_COUNTERS_MAX];
	struct orbit_stats_hist_shm hists[ORBIT_STATS_HISTS_MAX];
	uint8_t reserved[ORBIT_STATS_ROW_BYTES - 64 - 8 * ORBIT_STATS_COUNTERS_MAX -
			 ORBIT_STATS_HISTS_MAX * sizeof(struct orbit_stats_hist_shm)];
};
_Static_assert(sizeof(struct orbit_stats_row) == ORBIT_STATS_ROW_BYTES, "row size");

/* SHM: the body, right after the segment header. */
struct orbit_stats_body {
	uint32_t rows;           /* ORBIT_STATS_ROWS, written at creation */
	uint32_t row_bytes;      /* ORBIT_STATS_ROW_BYTES */
	uint32_t ncounters;      /* ORBIT_STAT__COUNT */
	uint32_t nhists;         /* ORBIT_HIST__COUNT */
	uint8_t reserved[ORBIT_STATS_ROW_BYTES - 16 - ORBIT_SEG_HEADER_BYTES];
	struct orbit_stats_row row[ORBIT_STATS_ROWS];
};
_Static_assert(sizeof(struct orbit_stats_body) % ORBIT_STATS_ROW_BYTES ==
	       ORBIT_STATS_ROW_BYTES - ORBIT_SEG_HEADER_BYTES, "rows page-aligned in the file");

#define ORBIT_STATS_TOTAL_BYTES ((uint64_t)ORBIT_SEG_HEADER_BYTES + sizeof(struct orbit_stats_body))

/* A process-local histogram (the writer accumulates here, then publishes). */
struct orbit_stats_hist_local {
	uint64_t count;
	uint64_t sum_ns;
	uint64_t buckets[ORBIT_STATS_BUCKETS];
};

/* A consistent copy of one row. */
struct orbit_stats_snapshot {
	uint64_t seq;
	uint64_t pid;
	uint64_t start_ticks;
	uint64_t published_ns;
	uint64_t counters[ORBIT_STAT__COUNT];
	struct orbit_stats_hist_local hists[ORBIT_HIST__COUNT];
};

/* An open stats segment in this process. */
typedef struct orbit_stats {
	orbit_seg_t seg;
	struct orbit_stats_body *body;
} orbit_stats_t;

/*
 * orbit__stats_bucket - the log2 bucket of @v ns: 0 for v <= 1, i for
 * 2^(i-1) < v <= 2^i, clamped to ORBIT_STATS_BUCKETS - 1.
 */
static inline unsigned orbit__stats_bucket(uint64_t v)
{
	unsigned b;

	if (v <= 1)
		return 0;
	b = 64u - (unsigned)__builtin_clzll(v - 1);
	return b < ORBIT_STATS_BUCKETS ? b : ORBIT_STATS_BUCKETS - 1;
}

/* Upper bound (inclusive) of bucket @i in ns; UINT64_MAX for the last. */
static inline uint64_t orbit__stats_bucket_le(unsigned i)
{
	return i + 1 >= ORBIT_STATS_BUCKETS ? UINT64_MAX : 1ull << i;
}

static inline void orbit__stats_hist_add(struct orbit_stats_hist_local *h, uint64_t v_ns)
{
	h->count++;
	h->sum_ns += v_ns;
	h->buckets[orbit__stats_bucket(v_ns)]++;
}

/* The layout fingerprint: sizes, counts and the counter/histogram tables. */
uint64_t orbit__stats_fingerprint(void);

/*
 * orbit__stats_open - open (or create) the fleet's stats segment.
 * @opts: as orbit__seg_open (NULL: open or create, 0600): .how, .readonly
 * (PROT_READ; never with a create), and .mode/.gid, which a creator gives
 * the segment and an opener checks, as for every other kind.
 * Context: any thread; syscalls (see orbit__seg_open).
 * Returns 0 or the codes of orbit__seg_open, -ORBIT_ECORRUPT when the body's
 * counts disagree with ours.
 */
int orbit__stats_open(orbit_stats_t *st, const char *fleet, const struct orbit_seg_opts *opts);
void orbit__stats_close(orbit_stats_t *st);

/*
 * orbit__stats_claim - start writing row @row for this process: zero its
 * values and stamp pid / start time. Only the row's owner (the member that
 * holds directory row @row) calls this or orbit__stats_publish.
 * Returns 0, -EINVAL (row out of range, pid 0), -EROFS (read-only mapping).
 */
int orbit__stats_claim(orbit_stats_t *st, uint32_t row, uint64_t pid, uint64_t start_ticks);

/*
 * orbit__stats_publish - copy @snap's counters and histograms into row @row
 * under the row's seqlock (the row's single writer only). Wait-free.
 * Returns 0, -EINVAL, -EROFS.
 */
int orbit__stats_publish(orbit_stats_t *st, uint32_t row, const struct orbit_stats_snapshot *snap);

/*
 * orbit__stats_read - a consistent copy of row @row; lock-free, any thread,
 * any process, read-only mappings included. No syscall.
 * Returns 0, -ENOENT (row never claimed), -EAGAIN (the writer kept the row
 * odd or changing for ORBIT_STATS_READ_RETRIES copies: busy, or a writer
 * died mid-publish), -EINVAL (row out of range).
 */
int orbit__stats_read(const orbit_stats_t *st, uint32_t row, struct orbit_stats_snapshot *out);

/* Reset row @row to never-claimed (reclaim of a dead member's row). */
int orbit__stats_clear(orbit_stats_t *st, uint32_t row);

#endif /* ORBIT_SHM_STATS_H */
