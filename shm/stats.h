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
 *                  values, even (ST-W2 release) (ST-A1 / ST-A2)       (64 copies, then
 *                                                            yielding for 20 ms), then -EAGAIN;
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
 * Spot slots (struct orbit_stats_spot_shm, ORBIT_STATS_SPOT_BYTES each,
 * ORBIT_STATS_SPOTS_PER_ROW per member row, after the rows): one per
 * cross-process Spot the member hosts or submits to (agent/agent_spot_stats.c
 * assigns them), with the counters of orbit__stats_spot_host_counters[] or
 * orbit__stats_spot_client_counters[] (by role) and, for a host, the
 * submit-to-run histogram.
 *   field          writer                    reader          torn read / crash
 *   seq            the member's agent (its   copy, re-check  as a row's seq; a writer
 *                  publish, or a register/   (ST-A1 / ST-A2)  killed mid-slot leaves it
 *                  unregister under the                      odd: -EAGAIN until the next
 *                  agent's spots mutex),                     claim of the row clears it
 *                  ST-W1 / ST-W2 as a row
 *   role           same, inside the seqlock  validated: 1 or 2, else -ORBIT_ECORRUPT;
 *                                            0: free (-ENOENT)
 *   pid,           same (the agent's pid     pair with the member directory: a slot of a
 *   start_ticks    and start time)           dead member keeps its last values until the
 *                                            row's next claim clears it (readers show it
 *                                            as gone, orbitctl leaves it out of Prometheus)
 *   name[]         same: the Spot name,      validated: NUL inside the 48 bytes and a valid
 *                  NUL-padded                Spot name ([A-Za-z0-9_.-]{1,40}), else
 *                                            -ORBIT_ECORRUPT
 *   counters, hist same                      numbers only (as a row's values)
 * A slot is cleared (role 0) by the unregister of its Spot host or client
 * and, with all of the row's slots, by every orbit__stats_claim() and
 * orbit__stats_clear() of its row.
 *
 * Synchronization:
 *   object             writers                 readers
 *   row r              the agent of member r   anyone, lock-free (seqlock)
 *   spot slot (r, k)   the agent of member r   anyone, lock-free (seqlock)
 *   segment header     creator (segment.c)     every opener
 */
#ifndef ORBIT_SHM_STATS_H
#define ORBIT_SHM_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shm/segment.h"

#define ORBIT_STATS_SEG_NAME "stats"
#define ORBIT_STATS_LAYOUT_VERSION 2u /* 2: the Spot slots */
#define ORBIT_STATS_ROWS 64u	      /* = member directory rows */
#define ORBIT_STATS_COUNTERS_MAX 64u  /* room in a row; the table uses fewer */
#define ORBIT_STATS_HISTS_MAX 4u
#define ORBIT_STATS_BUCKETS 48u /* bucket i: (2^(i-1), 2^i] ns; last: the rest */
#define ORBIT_STATS_ROW_BYTES 4096u
/* A reader's retries: this many copies back to back, then copies with a
 * sched_yield() between them for up to the budget (see orbit__stats_read). */
#define ORBIT_STATS_READ_SPINS 64u
#define ORBIT_STATS_READ_BUDGET_NS 20000000ull /* 20 ms */
/* A read pass's (every block of the fleet, one orbitctl stats or spots)
 * wait, shared by its reads (orbit__stats_read_pass): five blocks' worth. */
#define ORBIT_STATS_PASS_BUDGET_NS 100000000ull /* 100 ms */
#define ORBIT_STATS_SPOTS_PER_ROW 16u		/* Spot hosts + clients of one member */
#define ORBIT_STATS_SPOT_COUNTERS_MAX 32u	/* room in a slot; the tables use fewer */
#define ORBIT_STATS_SPOT_NAME_BYTES 48u		/* a Spot name (<= 40) and its NUL, padded */
#define ORBIT_STATS_SPOT_BYTES 1024u

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
	/* Spot hosts and clients that found no free Spot slot (stats below). */
	ORBIT_STAT_SPOT_SLOTS_FULL,
	ORBIT_STAT__COUNT
};

enum orbit_stats_hist {
	ORBIT_HIST_ACQUIRE_NS = 0, /* try_acquire call to return */
	ORBIT_HIST_DELIVERY_NS,	   /* frame publish to the agent reading it */
	ORBIT_HIST__COUNT
};

/* What a Spot slot holds (struct orbit_stats_spot_shm.role). */
enum orbit_stats_spot_role {
	ORBIT_STATS_SPOT_FREE = 0,
	ORBIT_STATS_SPOT_HOST = 1,   /* orbit_spot_host_start() in this member */
	ORBIT_STATS_SPOT_CLIENT = 2, /* orbit_spot_client_open() in this member */
};

/*
 * A Spot host's counters (index into a host slot's counters). The queue's
 * own counters (accepted .. corrupt) count what happened since this host
 * took the queue over (the queue segment keeps the lifetime totals that
 * orbitctl spots shows); the host's (delivered .. lost) are its own.
 */
enum orbit_stats_spot_host_counter {
	ORBIT_SPOT_HOST_ACCEPTED = 0,	 /* submits the queue accepted, both lanes */
	ORBIT_SPOT_HOST_REJECTED_COUNT,	 /* -EAGAIN: a lane full by count */
	ORBIT_SPOT_HOST_REJECTED_BYTES,	 /* -EAGAIN: a lane full by bytes */
	ORBIT_SPOT_HOST_DELIVERED,	 /* records handed to the coordinator */
	ORBIT_SPOT_HOST_COMPLETED,	 /* completes the queue accepted */
	ORBIT_SPOT_HOST_REDELIVERED,	 /* delivered records flagged redelivered */
	ORBIT_SPOT_HOST_ABORTED_DEAD,	 /* in-progress records of producers proved dead */
	ORBIT_SPOT_HOST_ABORTED_UNBLOCK, /* ... of live producers past the unblock bound */
	ORBIT_SPOT_HOST_CORRUPT,	 /* records or words that failed validation */
	ORBIT_SPOT_HOST_FENCED,		 /* completes refused: a newer host took over */
	ORBIT_SPOT_HOST_RETRIED,	 /* coordinator refusals, retried */
	ORBIT_SPOT_HOST_UNDELIVERABLE,	 /* completed unrun: the coordinator can never run it */
	ORBIT_SPOT_HOST_UNHANDLED,	 /* completed unrun: no handler for its kind */
	ORBIT_SPOT_HOST_IN_FLIGHT,	 /* gauge: handed over, not finished */
	ORBIT_SPOT_HOST_APP_DEPTH,	 /* gauge: application lane records reserved */
	ORBIT_SPOT_HOST_APP_BYTES,	 /* gauge: application lane bytes reserved */
	ORBIT_SPOT_HOST_LIFECYCLE_DEPTH, /* gauge */
	ORBIT_SPOT_HOST_LIFECYCLE_BYTES, /* gauge */
	ORBIT_SPOT_HOST_EPOCH,		 /* gauge: this host's epoch */
	ORBIT_SPOT_HOST_LOST,		 /* gauge: 1 once hosting was lost */
	ORBIT_SPOT_HOST_LATENCY_MAX_NS,	 /* gauge: the longest submit-to-run */
	ORBIT_SPOT_HOST_NOT_STARTED,	 /* handed over, never started: the lease was gone */
	ORBIT_SPOT_HOST__COUNT
};

/* A Spot client's counters (index into a client slot's counters). */
enum orbit_stats_spot_client_counter {
	ORBIT_SPOT_CLIENT_SUBMITTED = 0, /* submits that returned 0 */
	ORBIT_SPOT_CLIENT_EAGAIN,	 /* submits refused with -EAGAIN (lane full) */
	ORBIT_SPOT_CLIENT_FAILED,	 /* submits refused otherwise (-E2BIG, -ECANCELED, ...) */
	ORBIT_SPOT_CLIENT_WAITS,	 /* orbit_spot_client_wait_room() calls */
	ORBIT_SPOT_CLIENT_WAIT_TIMEOUTS, /* ... that returned -ETIMEDOUT */
	ORBIT_SPOT_CLIENT__COUNT
};

/* kind: counter (monotonic) or gauge (a current value). */
enum orbit_stats_type { ORBIT_STATS_COUNTER = 0, ORBIT_STATS_GAUGE = 1 };

struct orbit_stats_desc {
	const char *name; /* [a-z0-9_]+, a Prometheus metric suffix */
	const char *help; /* one line */
	int type;	  /* enum orbit_stats_type (counters table only) */
};

extern const struct orbit_stats_desc orbit__stats_counters[ORBIT_STAT__COUNT];
extern const struct orbit_stats_desc orbit__stats_hists[ORBIT_HIST__COUNT];
extern const struct orbit_stats_desc orbit__stats_spot_host_counters[ORBIT_SPOT_HOST__COUNT];
extern const struct orbit_stats_desc orbit__stats_spot_client_counters[ORBIT_SPOT_CLIENT__COUNT];
/* The host slot's histogram. */
extern const struct orbit_stats_desc orbit__stats_spot_hist;

_Static_assert(ORBIT_STAT__COUNT <= ORBIT_STATS_COUNTERS_MAX, "counters fit a row");
_Static_assert(ORBIT_HIST__COUNT <= ORBIT_STATS_HISTS_MAX, "histograms fit a row");
_Static_assert(ORBIT_SPOT_HOST__COUNT <= ORBIT_STATS_SPOT_COUNTERS_MAX, "host counters fit a slot");
_Static_assert(ORBIT_SPOT_CLIENT__COUNT <= ORBIT_STATS_SPOT_COUNTERS_MAX, "client counters fit");

/* SHM: one histogram inside a row. */
struct orbit_stats_hist_shm {
	_Atomic uint64_t count;
	_Atomic uint64_t sum_ns;
	_Atomic uint64_t buckets[ORBIT_STATS_BUCKETS];
};

/* SHM: one row (see the layout comment at the top). */
struct orbit_stats_row {
	_Atomic uint64_t seq;	       /* even: stable; odd: being written */
	_Atomic uint64_t pid;	       /* writer's pid (0: never claimed) */
	_Atomic uint64_t start_ticks;  /* writer's /proc start time */
	_Atomic uint64_t published_ns; /* CLOCK_REALTIME of the last publish */
	_Atomic uint64_t ncounters;    /* ORBIT_STAT__COUNT of the writer */
	_Atomic uint64_t reserved0[3];
	_Atomic uint64_t counters[ORBIT_STATS_COUNTERS_MAX];
	struct orbit_stats_hist_shm hists[ORBIT_STATS_HISTS_MAX];
	uint8_t reserved[ORBIT_STATS_ROW_BYTES - 64 - 8 * ORBIT_STATS_COUNTERS_MAX -
			 ORBIT_STATS_HISTS_MAX * sizeof(struct orbit_stats_hist_shm)];
};
_Static_assert(sizeof(struct orbit_stats_row) == ORBIT_STATS_ROW_BYTES, "row size");

/* SHM: one Spot slot (see the layout comment at the top). */
struct orbit_stats_spot_shm {
	_Atomic uint64_t seq;	       /* even: stable; odd: being written */
	_Atomic uint64_t role;	       /* enum orbit_stats_spot_role */
	_Atomic uint64_t pid;	       /* the writing agent's pid */
	_Atomic uint64_t start_ticks;  /* its /proc start time */
	_Atomic uint64_t published_ns; /* CLOCK_REALTIME of the last publish */
	_Atomic uint64_t ncounters;    /* the role's counter count of the writer */
	_Atomic uint64_t reserved0[2];
	_Atomic uint64_t name[ORBIT_STATS_SPOT_NAME_BYTES / 8]; /* Spot name bytes, NUL-padded */
	_Atomic uint64_t reserved1[2];
	_Atomic uint64_t counters[ORBIT_STATS_SPOT_COUNTERS_MAX];
	struct orbit_stats_hist_shm hist; /* host: submit-to-run; client: unused (0) */
	uint8_t reserved[ORBIT_STATS_SPOT_BYTES - 128 - 8 * ORBIT_STATS_SPOT_COUNTERS_MAX -
			 sizeof(struct orbit_stats_hist_shm)];
};
_Static_assert(sizeof(struct orbit_stats_spot_shm) == ORBIT_STATS_SPOT_BYTES, "spot slot size");
_Static_assert(offsetof(struct orbit_stats_spot_shm, counters) == 128, "spot slot counters");

/* SHM: the body, right after the segment header. */
struct orbit_stats_body {
	uint32_t rows;		/* ORBIT_STATS_ROWS, written at creation */
	uint32_t row_bytes;	/* ORBIT_STATS_ROW_BYTES */
	uint32_t ncounters;	/* ORBIT_STAT__COUNT */
	uint32_t nhists;	/* ORBIT_HIST__COUNT */
	uint32_t spots_per_row; /* ORBIT_STATS_SPOTS_PER_ROW */
	uint32_t spot_bytes;	/* ORBIT_STATS_SPOT_BYTES */
	uint32_t nspot_host;	/* ORBIT_SPOT_HOST__COUNT */
	uint32_t nspot_client;	/* ORBIT_SPOT_CLIENT__COUNT */
	uint8_t reserved[ORBIT_STATS_ROW_BYTES - 32 - ORBIT_SEG_HEADER_BYTES];
	struct orbit_stats_row row[ORBIT_STATS_ROWS];
	struct orbit_stats_spot_shm spot[ORBIT_STATS_ROWS][ORBIT_STATS_SPOTS_PER_ROW];
};
_Static_assert(sizeof(struct orbit_stats_body) % ORBIT_STATS_ROW_BYTES ==
		   ORBIT_STATS_ROW_BYTES - ORBIT_SEG_HEADER_BYTES,
	       "rows page-aligned in the file");

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

/* A consistent, validated copy of one Spot slot. */
struct orbit_stats_spot_snapshot {
	uint64_t seq;
	uint64_t pid;
	uint64_t start_ticks;
	uint64_t published_ns;
	enum orbit_stats_spot_role role;
	char name[ORBIT_STATS_SPOT_NAME_BYTES];		  /* NUL-terminated, a valid Spot name */
	uint64_t counters[ORBIT_STATS_SPOT_COUNTERS_MAX]; /* the role's table; the rest 0 */
	struct orbit_stats_hist_local hist;
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
 * any process, read-only mappings included. A copy the writer changed (odd
 * seq, or another seq at the re-check) is never returned: it is copied
 * again, ORBIT_STATS_READ_SPINS times back to back, then with a
 * sched_yield() before each copy until ORBIT_STATS_READ_BUDGET_NS passed
 * (a writer preempted mid-publish finishes meanwhile). No syscall unless a
 * writer is inside the row past the spins; never waits past the budget.
 * Returns 0, -ENOENT (row never claimed), -EAGAIN (the row stayed odd or
 * kept changing for the whole budget: a writer that died or is stopped
 * mid-publish, or one rewriting it without pause), -EINVAL (row out of
 * range). orbit__stats_read_within: the same with a budget of @budget_ns.
 */
int orbit__stats_read(const orbit_stats_t *st, uint32_t row, struct orbit_stats_snapshot *out);
int orbit__stats_read_within(const orbit_stats_t *st, uint32_t row,
			     struct orbit_stats_snapshot *out, uint64_t budget_ns);
/*
 * orbit__stats_read_pass - orbit__stats_read() as one read of a pass: the
 * wait (the yields past the spins) is at most the smaller of
 * ORBIT_STATS_READ_BUDGET_NS and *@pass_left_ns, and is taken off
 * *@pass_left_ns; at 0 a block met odd or changing past the spins gets
 * -EAGAIN at once, as with a dead writer. @pass_left_ns NULL: no pass.
 * Start a pass at ORBIT_STATS_PASS_BUDGET_NS; one caller's variable.
 */
int orbit__stats_read_pass(const orbit_stats_t *st, uint32_t row, struct orbit_stats_snapshot *out,
			   uint64_t *pass_left_ns);

/* Reset row @row (and its Spot slots) to never-claimed. Returns as claim. */
int orbit__stats_clear(orbit_stats_t *st, uint32_t row);

/* The counter table of @role (NULL for FREE or unknown) and its length in *@n. */
const struct orbit_stats_desc *orbit__stats_spot_table(enum orbit_stats_spot_role role,
						       unsigned *n);

/*
 * orbit__stats_spot_publish - copy @snap (role, name, pid, start_ticks,
 * the role's counters, the histogram) into Spot slot @slot of row @row
 * under the slot's seqlock. The writer is row @row's agent, serialised
 * (its publish and its register/unregister take one mutex).
 * Context: that writer only; wait-free, no syscall.
 * Returns 0, -EINVAL (row or slot out of range, role not HOST or CLIENT,
 * name not a valid Spot name, pid 0), -EROFS (read-only mapping).
 */
int orbit__stats_spot_publish(orbit_stats_t *st, uint32_t row, uint32_t slot,
			      const struct orbit_stats_spot_snapshot *snap);

/* Reset Spot slot @slot of row @row to free (role 0, values 0). Returns 0, -EINVAL, -EROFS. */
int orbit__stats_spot_clear(orbit_stats_t *st, uint32_t row, uint32_t slot);

/*
 * orbit__stats_spot_read - a consistent, validated copy of Spot slot
 * @slot of row @row; lock-free, any thread or process, read-only mappings
 * too; retries as orbit__stats_read (no syscall unless a writer is inside
 * the slot past the spins, never past the budget). Whatever the bytes: a
 * bounded copy, never a crash.
 * Returns 0; -ENOENT (free); -EAGAIN (kept odd or changing for
 * ORBIT_STATS_READ_BUDGET_NS); -ORBIT_ECORRUPT (a role or a name no
 * writer writes: scribbled bytes); -EINVAL (out of range, NULL).
 * orbit__stats_spot_read_within: the same with a budget of @budget_ns.
 */
int orbit__stats_spot_read(const orbit_stats_t *st, uint32_t row, uint32_t slot,
			   struct orbit_stats_spot_snapshot *out);
int orbit__stats_spot_read_within(const orbit_stats_t *st, uint32_t row, uint32_t slot,
				  struct orbit_stats_spot_snapshot *out, uint64_t budget_ns);
/* orbit__stats_spot_read as one read of a pass (see orbit__stats_read_pass). */
int orbit__stats_spot_read_pass(const orbit_stats_t *st, uint32_t row, uint32_t slot,
				struct orbit_stats_spot_snapshot *out, uint64_t *pass_left_ns);

#endif /* ORBIT_SHM_STATS_H */
