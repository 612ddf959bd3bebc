/* SPDX-License-Identifier: MIT */
/*
 * orbit/fleet.h: looking at a fleet from outside, the way orbitctl does:
 * its members and their kernel-proved liveness, each member's published
 * stats (counters and latency histograms), the lock table (through the
 * lock API's own read-only handle) and the transition ring, followed with
 * a private cursor. A fleet handle opens every segment read-only unless it
 * is opened for administration (force release, reset_transport). Nothing
 * here joins the fleet or starts a thread.
 */
#ifndef ORBIT_FLEET_H
#define ORBIT_FLEET_H

#include <orbit/common.h>
#include <orbit/lock.h>

ORBIT_BEGIN_DECLS

typedef struct orbit_fleet orbit_fleet_t;
typedef struct orbit_transition_reader orbit_transition_reader_t;

#define ORBIT_FLEET_MEMBER_NAME_MAX 32u /* with NUL */
#define ORBIT_FLEET_NAME_MAX 40u	/* a fleet name is [A-Za-z0-9_-]{1,40} */
#define ORBIT_STATS_MAX_COUNTERS 64u
#define ORBIT_STATS_MAX_HISTS 4u
#define ORBIT_STATS_NBUCKETS 48u
#define ORBIT_TRANSITION_BYTES_MAX 4032u

/* Options of orbit_fleet_open(); size-carrying (see orbit/common.h); 0: default. */
struct orbit_fleet_options {
	size_t size;	   /* sizeof(struct orbit_fleet_options) */
	const char *fleet; /* NULL: "default" */
	bool admin;	   /* map read-write (force release, reset); never creates */
	const struct orbit_lock_layout *layout; /* NULL: the default layout; else the
						   fleet's: its lock table and its ring */
	unsigned mode;	    /* the widest mode accepted (0: 0600; 0640 or 0660 for
				 a fleet shared with @gid: lock.h "Sharing a fleet
				 with a group") */
	unsigned gid;	    /* group of a group mode (0: the effective gid) */
	unsigned owner_uid; /* the only owner uid accepted (0: none; required with
				 0640: lock.h "Sharing a fleet with a group"); a
				 read-only open by root accepts this uid's
				 segments whatever their group (root inspecting
				 a service user's fleet) */
};

/**
 * orbit_fleet_options_init - fill @opts with the defaults: size set, fleet
 * "default", read-only, the default layout. NULL is a no-op.
 * Context: any thread; no syscall. Returns nothing.
 */
ORBIT_API void orbit_fleet_options_init(struct orbit_fleet_options *opts);

/*
 * A member directory row's state, as its owner last wrote it (display
 * only: liveness is orbit_fleet_member.alive, proved by the kernel). A row
 * with another value fails validation (-ORBIT_ECORRUPT), so a copied
 * member always holds one of these.
 */
enum orbit_member_state {
	ORBIT_MEMBER_FREE = 0,
	ORBIT_MEMBER_JOINING = 1,
	ORBIT_MEMBER_LIVE = 2,
	ORBIT_MEMBER_LEFT = 3,
};

/* One member directory row. */
struct orbit_fleet_member {
	uint32_t row;
	enum orbit_member_state state; /* display only */
	uint32_t generation;	       /* the row's tenure */
	uint32_t pid;
	uint64_t start_time_ticks; /* /proc/<pid>/stat field 22 */
	uint64_t joined_real_ns;   /* CLOCK_REALTIME */
	uint64_t heartbeat_ns;	   /* CLOCK_MONOTONIC of the last heartbeat (display) */
	bool alive;		   /* proved by the kernel (the row's OFD lock) */
	char name[ORBIT_FLEET_MEMBER_NAME_MAX];
};

struct orbit_stats_histogram {
	uint64_t count;
	uint64_t sum_ns;
	uint64_t buckets[ORBIT_STATS_NBUCKETS]; /* see orbit_stats_bucket_le() */
};

/* One member's stats row, copied consistently. */
struct orbit_fleet_stats {
	uint32_t row;
	uint32_t pid;
	uint64_t start_time_ticks;
	uint64_t published_real_ns; /* CLOCK_REALTIME of the last publish */
	uint32_t ncounters;	    /* orbit_stats_counter_count() */
	uint32_t nhists;	    /* orbit_stats_hist_count() */
	uint64_t counters[ORBIT_STATS_MAX_COUNTERS];
	struct orbit_stats_histogram hists[ORBIT_STATS_MAX_HISTS];
};

/* What a transition frame reports (orbit_transition_event.type). */
enum orbit_transition_type {
	ORBIT_TRANSITION_ACQUIRE = 1,
	ORBIT_TRANSITION_RENEW = 2,
	ORBIT_TRANSITION_RELEASE = 3,
	ORBIT_TRANSITION_FORCE_RELEASE = 4,
	ORBIT_TRANSITION_RECLAIM = 5, /* an expired entry was reclaimed */
	/*
	 * A mutator died inside the serializer and the next one repaired the
	 * table. No key (all lengths 0): frames the dead one published may
	 * describe changes that never committed, so a consumer rebuilds its
	 * view from the table. Its state_revision is past any revision the
	 * dead mutator could have published with.
	 */
	ORBIT_TRANSITION_REPAIR = 6,
};

/* Bits of orbit_transition_event.flags. */
enum orbit_transition_flag {
	/* ns+label+owner did not fit the frame: owner bytes were cut first,
	 * then label, then ns (the lengths say what was kept). */
	ORBIT_TRANSITION_F_TRUNCATED = 0x1,
};

/* A transition frame copied from the ring (ns | label | owner in bytes). */
struct orbit_transition_event {
	enum orbit_transition_type type; /* a frame that fails validation is
					    skipped, so always one of the list */
	uint32_t lane;			 /* writer lane */
	uint32_t writer_pid;
	uint32_t flags;	   /* enum orbit_transition_flag bits */
	uint64_t lane_pos; /* per-lane sequence number */
	uint64_t fencing_token;
	uint64_t deadline_ns;	 /* CLOCK_MONOTONIC absolute; 0 after release */
	uint64_t state_revision; /* orders events across lanes */
	uint64_t publish_ns;	 /* CLOCK_MONOTONIC at publish */
	uint32_t ns_len, label_len, owner_len;
	uint8_t bytes[ORBIT_TRANSITION_BYTES_MAX];
};

/**
 * orbit_fleet_open - open the segments of a fleet for inspection.
 * Opens the member directory, the stats segment, the lock table and the
 * transition ring of @opts->layout (NULL: the default layout; one ring per
 * layout, e.g. "ring-229"), each when it exists; never creates one.
 * Read-only mappings unless @opts->admin.
 * Context: any thread; syscalls (shm_open, mmap, fcntl); allocates.
 * Returns: 0; -ENOENT (none of the fleet's segments exists); -EINVAL (size
 * 0 in @opts or its layout, bad options, fleet name or layout); -E2BIG
 * (@opts or its layout is larger than this build's and sets a field it
 * does not know); -ENOMEM; or the first validation error of a
 * segment that exists: -ORBIT_EMAGIC, -ORBIT_EVERSION, -ORBIT_EKIND,
 * -ORBIT_EFINGERPRINT, -ORBIT_ESIZE, -ORBIT_ECORRUPT, -ORBIT_EOWNER
 * (another uid's segment, not shared through @opts->gid), -ORBIT_EMODE
 * (wider than @opts->mode, e.g. a group fleet opened without its mode),
 * -ORBIT_EINITTIMEOUT, -EACCES (e.g. a group fleet and a process outside
 * the group), -ORBIT_ENOTREG (a FIFO, directory, socket, device node or symlink
 * under a segment name: refused at once, never waited on),
 * -ORBIT_ETRUNCATED (a segment shorter than its header says);
 * orbit_segment_last_error() names the segment.
 */
ORBIT_API int orbit_fleet_open(const struct orbit_fleet_options *opts, orbit_fleet_t **out);

/**
 * orbit_fleet_close - unmap everything. NULL is a no-op. Close readers first.
 * Context: any thread but one still using @f or its readers; syscalls
 * (munmap, close). Returns nothing.
 */
ORBIT_API void orbit_fleet_close(orbit_fleet_t *f);

/**
 * orbit_fleet_name - the fleet's name as opened.
 * Context: any thread; no syscall. Returns: a string owned by @f, or ""
 * for a NULL @f.
 */
ORBIT_API const char *orbit_fleet_name(const orbit_fleet_t *f);

/**
 * orbit_fleet_rows - member directory rows (0 when the fleet has none).
 * Context: any thread; no syscall.
 */
ORBIT_API uint32_t orbit_fleet_rows(const orbit_fleet_t *f);

/**
 * orbit_fleet_member - copy member row @row with its liveness.
 * Context: any thread; lock-free copy, one fcntl (liveness probe).
 * Returns: 0; -ENOENT (row free and not alive, or no directory);
 * -EINVAL (row out of range, NULL); -EAGAIN (being rewritten);
 * -ORBIT_ECORRUPT (bytes fail validation).
 */
ORBIT_API int orbit_fleet_member(orbit_fleet_t *f, uint32_t row, struct orbit_fleet_member *out);

/**
 * orbit_fleet_stats_read - copy the stats row of member row @row.
 * Context: any thread; lock-free (seqlock copy with bounded retries: 64
 * copies, then, while the row's writer process runs, copies with a
 * sched_yield() between for up to 20 ms); no syscall unless the writer is
 * inside the row past the 64 copies. Never returns a torn copy. The
 * values are whatever the row's writer last published; pair them with
 * orbit_fleet_member() (pid, start time) to know whose they are.
 * Returns: 0; -ENOENT (never published, or no stats segment); -EAGAIN
 * (the writer kept it changing for 20 ms, is stopped mid-publish, or died
 * mid-publish: at once then, until the row is claimed again); -EINVAL.
 */
ORBIT_API int orbit_fleet_stats_read(orbit_fleet_t *f, uint32_t row, struct orbit_fleet_stats *out);

/* The wait a read pass over the fleet shares (orbit_fleet_stats_read_pass()): 100 ms. */
#define ORBIT_FLEET_STATS_PASS_BUDGET_NS 100000000ull

/**
 * orbit_fleet_stats_read_pass - orbit_fleet_stats_read() as one read of a
 * pass over many rows and Spot slots (orbitctl stats reads every block of
 * the fleet): it waits for the row's writer at most the smaller of 20 ms
 * and *@wait_left_ns, and takes its wait off *@wait_left_ns. Once that is
 * 0, a row met mid-publish past the 64 copies answers -EAGAIN at once, so
 * a writer that keeps many blocks odd costs the pass at most the budget
 * it started with (set *@wait_left_ns to ORBIT_FLEET_STATS_PASS_BUDGET_NS
 * before the first read), not 20 ms a block. @wait_left_ns NULL: as
 * orbit_fleet_stats_read().
 * Context: as orbit_fleet_stats_read(); *@wait_left_ns is the caller's
 * (one thread at a time).
 * Returns: as orbit_fleet_stats_read().
 */
ORBIT_API int orbit_fleet_stats_read_pass(orbit_fleet_t *f, uint32_t row,
					  struct orbit_fleet_stats *out, uint64_t *wait_left_ns);

/**
 * orbit_fleet_stats_rows - rows of the stats segment: the valid @row
 * values of orbit_fleet_stats_read() are 0 to this count - 1 (one row per
 * member directory row; iterate the smaller of this and orbit_fleet_rows()).
 * Context: any thread; no syscall.
 * Returns: the row count; 0 when the fleet has no stats segment or @f is
 * NULL.
 */
ORBIT_API uint32_t orbit_fleet_stats_rows(const orbit_fleet_t *f);

/*
 * The stats name tables (shared by writer and reader; the stats segment's
 * layout fingerprint covers them). Names are [a-z0-9_]+.
 * Context: any thread; constant tables, no syscall.
 * Returns: the count; a static string, or NULL for an id out of range;
 * is_gauge false out of range.
 */
ORBIT_API unsigned orbit_stats_counter_count(void);
ORBIT_API const char *orbit_stats_counter_name(unsigned id);
ORBIT_API const char *orbit_stats_counter_help(unsigned id);
ORBIT_API bool orbit_stats_counter_is_gauge(unsigned id);
ORBIT_API unsigned orbit_stats_hist_count(void);
ORBIT_API const char *orbit_stats_hist_name(unsigned id);
ORBIT_API const char *orbit_stats_hist_help(unsigned id);
/**
 * orbit_stats_bucket_le - inclusive upper bound of histogram bucket @i in
 * ns. Context: any thread; pure. Returns: the bound; UINT64_MAX for the
 * last bucket (+Inf) and for @i out of range.
 */
ORBIT_API uint64_t orbit_stats_bucket_le(unsigned i);

/**
 * orbit_stats_hist_quantile - the upper bound (orbit_stats_bucket_le) of
 * the bucket that holds quantile @q (0..1) of @h: "p99 <= this". The
 * buckets are log2, so the true value lies in (bound / 2, bound].
 * Context: any thread; pure.
 * Returns: the bound in ns; 0 for an empty histogram or a NULL @h;
 * UINT64_MAX when the quantile is in the last bucket (or the buckets sum
 * to less than the count: a row scribbled).
 */
ORBIT_API uint64_t orbit_stats_hist_quantile(const struct orbit_stats_histogram *h, double q);

/* ---- Spot slots: each member's cross-process Spot hosts and clients ---- */

#define ORBIT_FLEET_SPOT_SLOTS 16u /* Spot slots per member row */
#define ORBIT_FLEET_SPOT_COUNTERS_MAX 32u
#define ORBIT_FLEET_SPOT_NAME_MAX 48u /* with NUL; a Spot name is 1..40 bytes */

/* What a member does with a Spot (orbit_fleet_spot_stats.role). */
enum orbit_fleet_spot_role {
	ORBIT_FLEET_SPOT_HOST = 1,   /* it hosts the Spot (orbit_spot_host_start) */
	ORBIT_FLEET_SPOT_CLIENT = 2, /* it submits to it (orbit_spot_client_open) */
};

/*
 * One Spot slot of a member's stats row, copied consistently. The agent
 * of the member publishes it at each stats period (orbit_agent_options
 * .stats_ms) while the host or client exists; it is cleared when the host
 * stops or the client closes. Counter names: orbit_stats_spot_counter_*
 * of the role. A host's counters of the queue (accepted, rejected_count,
 * rejected_bytes, corrupt) count since that host took the queue over; the
 * queue's lifetime totals are in orbit_fleet_spots().
 */
struct orbit_fleet_spot_stats {
	uint32_t row, slot;
	uint32_t pid;		    /* the member's pid when it published */
	uint64_t start_time_ticks;  /* and its start time: pair with orbit_fleet_member() */
	uint64_t published_real_ns; /* CLOCK_REALTIME of the last publish */
	enum orbit_fleet_spot_role role;
	char spot[ORBIT_FLEET_SPOT_NAME_MAX]; /* NUL-terminated, a valid Spot name */
	uint32_t ncounters;		      /* orbit_stats_spot_counter_count(role) */
	uint64_t counters[ORBIT_FLEET_SPOT_COUNTERS_MAX];
	/* A host's submit-to-run latency: the producer's CLOCK_MONOTONIC stamp
	 * at submit to the handler's start (see orbit_stats_bucket_le), of the
	 * records stamped exactly (orbit_spot_record.submit_exact: a sample);
	 * a client's is all 0. */
	struct orbit_stats_histogram latency;
};

/**
 * orbit_fleet_spot_stats_read - copy Spot slot @slot of member row @row.
 * Context: any thread; lock-free (seqlock copy with bounded retries, as
 * orbit_fleet_stats_read()); every byte validated (a scribbled slot is an
 * error, never a crash). Pair the copy with orbit_fleet_member(@row): a dead member's
 * slots keep their last values until its row is taken again.
 * Returns: 0; -ENOENT (the slot is free, or no stats segment); -EAGAIN
 * (as orbit_fleet_stats_read()); -ORBIT_ECORRUPT (a
 * role or Spot name no writer writes); -EINVAL (@row or @slot out of
 * range, NULL).
 */
ORBIT_API int orbit_fleet_spot_stats_read(orbit_fleet_t *f, uint32_t row, uint32_t slot,
					  struct orbit_fleet_spot_stats *out);

/**
 * orbit_fleet_spot_stats_read_pass - orbit_fleet_spot_stats_read() as one
 * read of a pass, sharing *@wait_left_ns as orbit_fleet_stats_read_pass().
 * Context: as orbit_fleet_spot_stats_read().
 * Returns: as orbit_fleet_spot_stats_read().
 */
ORBIT_API int orbit_fleet_spot_stats_read_pass(orbit_fleet_t *f, uint32_t row, uint32_t slot,
					       struct orbit_fleet_spot_stats *out,
					       uint64_t *wait_left_ns);

/*
 * The Spot slots' name tables, per role (shared by writer and reader, in
 * the stats segment's layout fingerprint). Names are [a-z0-9_]+; orbitctl
 * prefixes them with orbit_spot_host_ or orbit_spot_client_.
 * Context: any thread; constant tables. Returns: the count (0 for an
 * unknown role); a static string or NULL (unknown role or id); is_gauge
 * false when unknown. orbit_stats_spot_hist_name/help: the host slot's
 * histogram ("submit_to_run").
 */
ORBIT_API unsigned orbit_stats_spot_counter_count(enum orbit_fleet_spot_role role);
ORBIT_API const char *orbit_stats_spot_counter_name(enum orbit_fleet_spot_role role, unsigned id);
ORBIT_API const char *orbit_stats_spot_counter_help(enum orbit_fleet_spot_role role, unsigned id);
ORBIT_API bool orbit_stats_spot_counter_is_gauge(enum orbit_fleet_spot_role role, unsigned id);
ORBIT_API const char *orbit_stats_spot_hist_name(void);
ORBIT_API const char *orbit_stats_spot_hist_help(void);

/**
 * orbit_fleet_lock - the fleet's lock table handle (read-only unless
 * admin), owned by @f; NULL when the fleet has no lock table. Use the
 * orbit_lock_* API on it (foreach, lookup, holder_alive; force_release
 * when admin).
 * Context: any thread; no syscall. Returns: the handle, or NULL (no lock
 * table, or @f NULL).
 */
ORBIT_API orbit_lock_t *orbit_fleet_lock(orbit_fleet_t *f);

/**
 * orbit_fleet_reader_open - a private cursor on the transition ring,
 * positioned after the current heads. It never writes to the ring (a
 * read-only mapping is enough); it cannot sleep on the doorbell, so a
 * follower polls (orbitctl watch does every 20 ms).
 * Context: any thread; allocates. The reader must be closed before @f.
 * Returns: 0; -ENOENT (no ring); -ENOMEM; -EINVAL.
 */
ORBIT_API int orbit_fleet_reader_open(orbit_fleet_t *f, orbit_transition_reader_t **out);

/**
 * orbit_lock_reader_open - a reader of @lock's transition feed, for a
 * lock on etcd: a watch on the fleet's keys after the current revision,
 * read with orbit_transition_reader_next() like the ring (the same types,
 * token and state_revision; what differs: doc/orbit-lock.md, "The
 * transition feed on etcd"). On the SHM backend the feed is the fleet's
 * ring: open its reader with orbit_fleet_reader_open() or
 * orbit_agent_reader_open().
 * The reader uses @lock's endpoints and call_timeout_ms but its own
 * connection (one streaming request); close it before @lock.
 * Context: any thread; blocks up to the handle's call_timeout_ms (one
 * read of the cluster's revision); allocates.
 * Returns: 0; -EINVAL (NULL); -EOPNOTSUPP (an SHM handle, or a build
 * without --with-etcd); -ECHILD (the handle was opened by the parent of
 * this forked process); -ENOMEM; -ORBIT_EUNAVAILABLE (no member answered
 * within call_timeout_ms); -EPROTO.
 */
ORBIT_API int orbit_lock_reader_open(orbit_lock_t *lock, orbit_transition_reader_t **out);

/**
 * orbit_transition_reader_next - copy the next transition of any lane.
 * Context: the reader's thread (one thread at a time per reader);
 * lock-free, no syscall, no allocation. An etcd reader
 * (orbit_lock_reader_open()) never blocks either, but reads its socket,
 * reconnects when due and allocates.
 * Returns: 0 (@ev filled); -EAGAIN (nothing new); -ORBIT_ELAGGED (the
 * writers overtook this cursor on lane @ev->lane, or the ring was reset:
 * frames were lost; re-read the lock table, the cursor moved on; etcd:
 * the revisions the watch was to resume from were compacted, it goes on
 * from the oldest one kept); -ORBIT_ECORRUPT (a frame failed validation
 * and was skipped; etcd: a key under the fleet's prefix that orbit did
 * not write); -EINVAL. An etcd reader also: -ORBIT_EUNAVAILABLE (once per
 * outage: no member confirmed the watch for longer than call_timeout_ms;
 * it keeps trying, and resumes after the last transition it returned:
 * none is lost or repeated), -ECHILD (in a forked child), -ENOMEM.
 */
ORBIT_API int orbit_transition_reader_next(orbit_transition_reader_t *r,
					   struct orbit_transition_event *ev);

/**
 * orbit_transition_reader_counters - frames read, lag events and corrupt
 * frames seen by this reader. Any pointer may be NULL (a NULL @r gives 0s).
 * Context: the reader's thread; no syscall. Returns nothing.
 */
ORBIT_API void orbit_transition_reader_counters(const orbit_transition_reader_t *r, uint64_t *read,
						uint64_t *lagged, uint64_t *corrupt);

/**
 * orbit_transition_reader_rewind - move the reader's cursors back to the
 * oldest frame each lane still retains (the ring keeps the last
 * frames-per-lane frames of each lane, 1,024 by default): the next calls
 * to orbit_transition_reader_next() return what is retained, then new
 * frames, with nothing missed or repeated in between (orbitctl watch
 * --replay). A frame overwritten before it is read is reported as a lag.
 * etcd: back to the oldest revision the cluster keeps (since its last
 * compaction; no lag is reported for the compacted part), the fleet's
 * whole history from there.
 * Context: the reader's thread; no syscall (etcd: drops the stream; the
 * next call reconnects). NULL, or an etcd reader in a forked child, is a
 * no-op.
 */
ORBIT_API void orbit_transition_reader_rewind(orbit_transition_reader_t *r);

/**
 * orbit_fleet_replay_retained - replay the retained frames: call @fn for
 * every frame the ring still retains, lane by lane (within a lane in
 * publication order; across lanes order by state_revision). Frames
 * overwritten while the walk runs are skipped. @fn returns 0 to go on,
 * anything else to stop.
 * Context: any thread; allocates one event buffer; no syscall otherwise;
 * never writes to the ring (a read-only handle is enough).
 * Returns: the number of frames passed to @fn; -ENOENT (no ring);
 * -ENOMEM; -EINVAL.
 */
ORBIT_API int orbit_fleet_replay_retained(
    orbit_fleet_t *f, int (*fn)(const struct orbit_transition_event *ev, void *ctx), void *ctx);

/**
 * orbit_transition_reader_close - free a reader. NULL is a no-op.
 * Context: the reader's thread, before its fleet or agent is closed.
 */
ORBIT_API void orbit_transition_reader_close(orbit_transition_reader_t *r);

/**
 * orbit_fleet_reset_transport - clear the lock table (tokens stay
 * increasing) and every ring lane, only when no live member is attached
 * and no other live process holds an unexpired lease (a process using
 * orbit_lock without an agent has no member row; its leases count, seen
 * with orbit_lock_foreach + orbit_lock_holder_alive).
 * For quiescent boot and operators (orbitctl reset); a process with a
 * running agent uses orbit_agent_reset_transport() instead (it ignores
 * its own row).
 * Context: any thread; syscalls; takes the lock table's serializer. A
 * member joining while the reset runs is not excluded (quiescent boot is
 * the caller's promise); live members and leases are checked first.
 * Returns: 0; -EBUSY (a live member is attached, or another live process
 * holds an unexpired lease); -EROFS (not opened admin); -ENOENT (no lock
 * table or ring); -EAGAIN (the lease scan kept finding slots rewritten,
 * or the serializer stayed taken past its bound: nothing was reset);
 * or an error of the lock table's reset (-ENOTRECOVERABLE, -ECHILD).
 */
ORBIT_API int orbit_fleet_reset_transport(orbit_fleet_t *f);

/* The orbit-lock namespace of Spot hosting leases (label: the Spot's name). */
#define ORBIT_FLEET_SPOT_LEASE_NAMESPACE "orbit.spot"

/* One lane of a Spot's queue, as its segment says now. */
struct orbit_fleet_spot_lane {
	uint64_t accepted;	 /* submits that returned 0 */
	uint64_t rejected_count; /* -EAGAIN: full by count */
	uint64_t rejected_bytes; /* -EAGAIN: full by bytes */
	uint64_t aborted;	 /* producers that died or stalled mid-record */
	uint64_t redelivered;	 /* records delivered again to a newer host */
	uint64_t corrupt;	 /* records that failed validation, skipped */
	uint64_t completed;
	uint32_t depth, bytes; /* reserved now: records, payload bytes */
	uint32_t item_cap, byte_cap;
};

/* A cross-process Spot's queue, seen from outside (orbit_fleet_spots()). */
struct orbit_fleet_spot {
	char name[48];
	int error;			       /* 0, or why the queue could not be read (then only
				    name and the host fields are set) */
	struct orbit_fleet_spot_lane lanes[2]; /* [0] application, [1] lifecycle */
	uint64_t epoch;			       /* the highest host epoch (fencing token) so far */
	uint64_t takeovers;		       /* hosts that took it over, adoptions included */
	uint32_t host_pid;		       /* the last host's pid (0: never hosted) */
	int host_alive;			       /* 1: the hosting lease is held by a live process; 0:
				    not held (or its holder is dead); -1: no lock table */
	uint64_t lease_token;		       /* the hosting lease's token when held */
	uint64_t shm_bytes;		       /* the segment's size */
	/*
	 * The host's stats slot (orbit_fleet_spot_stats_read()): of the live
	 * members hosting this Spot, the one with the highest epoch (normally
	 * the queue's epoch). have_host_stats 0: none published (no host, a
	 * dead host, or the stats segment missing) or none read (see
	 * host_slots_unread); the fields below are 0.
	 * Latency: submit-to-run since that host took over, percentiles as
	 * bucket upper bounds (orbit_stats_hist_quantile), max exact.
	 */
	int have_host_stats;
	uint32_t host_row; /* the host's member row */
	char host_member[ORBIT_FLEET_MEMBER_NAME_MAX];
	uint64_t host_epoch; /* that host's epoch */
	uint64_t latency_count;
	uint64_t latency_p50_ns, latency_p99_ns, latency_max_ns;
	uint64_t in_flight; /* handed to the coordinator, not finished */
	/*
	 * Spot slots of the fleet this call could not read: -EAGAIN (a live
	 * writer kept the slot changing, or left it mid-publish, past the
	 * pass's wait), -ORBIT_ECORRUPT (its bytes fail validation), or no
	 * memory to keep it. The same count for every Spot of one call. Not 0:
	 * have_host_stats 0 does not prove that this Spot's host published
	 * nothing (its slot may be one of these); orbitctl spots says so on
	 * stderr and orbitctl stats names each such slot.
	 */
	uint32_t host_slots_unread;
};

typedef int (*orbit_fleet_spot_fn)(const struct orbit_fleet_spot *spot, void *ctx);

/**
 * orbit_fleet_spots - call @fn for every Spot queue of the fleet
 * ("/orbit.<fleet>.spotq.<spot>"), read-only, with its counters, whether a
 * live process holds its hosting lease, and its host's published stats
 * slot (submit-to-run percentiles).
 * @f: the fleet. @fn: returns non-zero to stop (that value is returned).
 * Context: any thread; syscalls (readdir, shm_open, mmap, the lease
 * lookup without the serializer, one fcntl liveness probe per member row
 * with a host slot); allocates; never joins the fleet. The Spot slots are
 * read as one pass (orbit_fleet_spot_stats_read_pass()): at most
 * ORBIT_FLEET_STATS_PASS_BUDGET_NS of waiting for writers in all; a slot
 * still unreadable then is counted in every Spot's host_slots_unread.
 * Returns: the number of Spots passed to @fn; @fn's non-zero value;
 * -EINVAL (NULL argument); -errno of reading /dev/shm.
 */
ORBIT_API int orbit_fleet_spots(orbit_fleet_t *f, orbit_fleet_spot_fn fn, void *ctx);

/**
 * orbit_fleet_unlink - remove the names of a fleet's segments (lock table
 * and ring of the default layout, member directory, stats, every Spot
 * queue), once no live
 * member is attached. Mapped handles stay valid; the next open creates new
 * segments (lock tokens still increase: see orbit_lock_unlink). A member
 * directory that cannot be read (truncated, wrong magic, version, kind,
 * size or fingerprint, corrupt, never initialised) is removed too, first
 * and under its flock, once no process holds a lock on its file (the
 * kernel's record of the live members and of a creator at work): this is
 * the way out of a damaged fleet. So is a FIFO, socket, device node or
 * symlink under its name; a directory there is left (-ORBIT_ENOTREG,
 * nothing removed).
 * @fleet: the fleet name (NULL: "default").
 * Context: any thread; syscalls (shm_open, fcntl, flock, lstat,
 * shm_unlink). A member joining a healthy directory while this runs is
 * not excluded.
 * Returns: 0 (at least one segment removed); -ENOENT (none existed);
 * -EBUSY (a live member is attached, this process's own rows included,
 * also to a damaged directory); -ORBIT_ENOTREG (a directory under the
 * member directory's name: nothing removed); -EINVAL (bad name); or a
 * member directory
 * open error other than damage (a fleet shared with a group: -ORBIT_EMODE
 * or -ORBIT_EOWNER; use orbit_fleet_unlink_with()).
 */
ORBIT_API int orbit_fleet_unlink(const char *fleet);

/**
 * orbit_fleet_unlink_with - orbit_fleet_unlink() for the fleet, layout,
 * mode and gid of @opts (@opts->admin is ignored): the member directory
 * is checked with @opts' mode and gid, and the lock table and ring of
 * @opts->layout are removed (NULL: the default layout). All or nothing:
 * /dev/shm is sticky, so only a segment's owner (or root) can remove its
 * name; when one of the names is another uid's (a fleet shared with a
 * group), nothing is removed.
 * @opts: NULL means orbit_fleet_unlink(NULL).
 * Context: any thread; syscalls (shm_open, fcntl, lstat, shm_unlink). A
 * member joining while this runs is not excluded, nor a member that
 * creates a segment between the ownership check and the removal.
 * Returns: 0 (at least one segment removed); -ENOENT (none existed);
 * -EBUSY (a live member is attached, this process's own rows included);
 * -EACCES (a name is another uid's: nothing removed); -EINVAL (size 0 in
 * @opts or its layout, bad options or name); -E2BIG (@opts or its layout
 * is larger than this build's and sets a field it does not know); or a
 * member directory open error other than damage (-ORBIT_EOWNER,
 * -ORBIT_EMODE, ...).
 */
ORBIT_API int orbit_fleet_unlink_with(const struct orbit_fleet_options *opts);

ORBIT_END_DECLS

#endif /* ORBIT_FLEET_H */
