/* SPDX-License-Identifier: MIT */
/*
 * orbit/spot_queue.h: cross-process Spots. A Spot lives in one host
 * process at a time; any member of the fleet submits records to it by
 * name, and the host runs each record on its Spot serial executor
 * (orbit/spot_executor.h) by the record's entry kind: execute_spot,
 * execute_actor(actor id), execute_timer(name) or execute_lifecycle.
 * Records travel through the Spot's shared-memory queue
 * "/orbit.<fleet>.spotq.<spot>" (doc/spot-queues.md has its layout, its
 * crash behaviour, the defaults and the footprint).
 *
 *   host process                          any member
 *   orbit_spot_host_start(agent, &o, &h)  orbit_spot_client_open(agent, "bank.3", NULL, &c)
 *     lease "orbit.spot"/"bank.3"         orbit_spot_submit_actor(c, 42, buf, len, &seq)
 *     host thread: wait, take, execute      -> 0, or -EAGAIN at once (lane full)
 *     handler(turn, rec, ctx)             orbit_spot_client_wait_room(c, lane, len, ns)
 *     complete after the handler's end
 *
 * Hosting is an orbit-lock lease on the key (namespace "orbit.spot",
 * label = the Spot name) held through the agent's lock handle, with a
 * TTL (lease_ttl_ns, 1 s by default) renewed by the host's thread every
 * quarter TTL. Its fencing token is the host epoch: the queue refuses
 * every take and complete of a host whose epoch was superseded, so a host
 * paused past its lease cannot change anything after a newer host took
 * over. When a host dies its lease runs out after the TTL (adoption is
 * TTL-bound: a host killed is replaced after at most lease_ttl_ns), and
 * the next orbit_spot_host_start() takes over with a higher epoch.
 *
 * Delivery is at-least-once: every record a host took and did not
 * complete (its handler had not finished, or the host was killed between
 * the end of the handler and the complete) is delivered again to the next
 * host with rec->redelivered set. A completed record is never delivered
 * again. Per producer (member row and generation) records of one lane
 * reach the coordinator in their sequence order; an application dedupes
 * on (producer_row, producer_gen, producer_seq) of redelivered records.
 *
 * Backpressure never loses a record: the client's submit is one attempt
 * (-EAGAIN when the lane is full by count or by bytes); a coordinator that
 * refuses a taken record (-EAGAIN) gets it again, in lane order, when it
 * has room (the host thread retries at every completion and at least
 * every millisecond).
 *
 * Counters: every host and every client has a Spot slot in its agent's
 * row of the stats segment, published at each stats period (orbit/fleet.h
 * orbit_fleet_spot_stats_read(); orbitctl stats and spots). Stop the hosts
 * and close the clients of an agent before orbit_agent_stop().
 *
 * Synchronization:
 *   host_start, host_stop   any thread but a handler of that host; block
 *                           (start: segment open; stop: joins the thread)
 *   host_state, *_stats     any thread; relaxed loads
 *   client_open, close      any thread
 *   submit_*, wait_room     one thread at a time per client (the caller
 *                           serialises); submit never blocks
 *   orbit_spot_yield        inside a handler, on the turn it received
 * Everything a producer wrote into the payload before its submit is in
 * the bytes the handler sees (the queue's release commit, SHM layer).
 */
#ifndef ORBIT_SPOT_QUEUE_H
#define ORBIT_SPOT_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <orbit/agent.h>
#include <orbit/common.h>
#include <orbit/executor.h>
#include <orbit/serial_queue.h>
#include <orbit/spot_executor.h>

ORBIT_BEGIN_DECLS

typedef struct orbit_spot_host orbit_spot_host_t;
typedef struct orbit_spot_client orbit_spot_client_t;

/* Longest Spot name: [A-Za-z0-9_.-]{1,40}. */
#define ORBIT_SPOT_NAME_MAX 40
/* The orbit-lock namespace of hosting leases (label: the Spot name). */
#define ORBIT_SPOT_LEASE_NAMESPACE "orbit.spot"
/* Default lease TTL: a dead host is replaced after at most this. */
#define ORBIT_SPOT_DEFAULT_LEASE_TTL_NS 1000000000ull
/* Queue defaults (doc/spot-queues.md: footprint and limits). */
#define ORBIT_SPOT_DEFAULT_APP_ITEMS 1024u
#define ORBIT_SPOT_DEFAULT_APP_BYTES (256u * 1024u)
#define ORBIT_SPOT_DEFAULT_LIFECYCLE_ITEMS 128u
#define ORBIT_SPOT_DEFAULT_LIFECYCLE_BYTES (32u * 1024u)
#define ORBIT_SPOT_DEFAULT_UNBLOCK_MS 100u
/* Records the host thread takes from one lane per round (default). */
#define ORBIT_SPOT_DEFAULT_BATCH 64u

/* The two lanes of a Spot's queue. */
enum orbit_spot_lane {
	ORBIT_SPOT_LANE_APP = 0,       /* Spot, Actor and timer records */
	ORBIT_SPOT_LANE_LIFECYCLE = 1, /* lifecycle records */
};

/* The coordinator entry point a record goes to. */
enum orbit_spot_entry_kind {
	ORBIT_SPOT_ENTRY_SPOT = 1,	/* orbit_spot_execute_spot */
	ORBIT_SPOT_ENTRY_ACTOR = 2,	/* orbit_spot_execute_actor(actor_id) */
	ORBIT_SPOT_ENTRY_TIMER = 3,	/* orbit_spot_execute_timer(timer_name) */
	ORBIT_SPOT_ENTRY_LIFECYCLE = 4, /* orbit_spot_execute_lifecycle */
};

/*
 * The queue's caps, fixed when the segment is created by whichever of the
 * host or a client opens it first; every later opener must ask for the
 * same ones (zero fields: the defaults), else -ORBIT_EFINGERPRINT.
 */
struct orbit_spot_queue_caps {
	uint32_t app_items;	  /* 0: ORBIT_SPOT_DEFAULT_APP_ITEMS; 1..65536 */
	uint32_t app_bytes;	  /* payload bytes; 0: default; 64..64 MiB */
	uint32_t lifecycle_items; /* 0: ORBIT_SPOT_DEFAULT_LIFECYCLE_ITEMS */
	uint32_t lifecycle_bytes; /* 0: ORBIT_SPOT_DEFAULT_LIFECYCLE_BYTES */
	/* An alive producer stopped mid-record blocks its lane this long,
	 * then the record is aborted (ms; 0: ORBIT_SPOT_DEFAULT_UNBLOCK_MS). */
	uint32_t unblock_ms;
	unsigned mode; /* segment permissions at creation; 0: 0600 */
};

/* What a handler receives; valid until the handler has finished (its last
 * continuation returned ORBIT_SERIAL_DONE). */
struct orbit_spot_record {
	const void *payload; /* the record's bytes (NULL when len is 0) */
	uint32_t len;	     /* payload bytes */
	enum orbit_spot_entry_kind kind;
	uint64_t actor_id;	/* ORBIT_SPOT_ENTRY_ACTOR, else 0 */
	const char *timer_name; /* ORBIT_SPOT_ENTRY_TIMER, else "" */
	uint32_t producer_row;	/* the producer's member row */
	uint32_t producer_gen;	/* that row's member generation (tenure) */
	uint64_t producer_seq;	/* per producer tenure and lane, from 1 */
	uint64_t host_epoch;	/* the epoch of the host that took it */
	bool redelivered;	/* taken by an older host, not completed */
	/* CLOCK_MONOTONIC at the submit: exactly when submit_exact (the first
	 * record of a producer in each tick of CLOCK_MONOTONIC_COARSE and at
	 * least every 16th), else that clock's last tick: never later than the
	 * submit, earlier by about one tick (1-10 ms; more while a loaded
	 * machine's ticks come late). */
	uint64_t submit_ns;
	bool submit_exact; /* submit_ns is an exact read (a latency sample) */
};

/*
 * A handler: runs on a turn of the Spot coordinator (the queue its kind
 * and the mode decide, as in orbit/spot_executor.h). Returns ORBIT_SERIAL_DONE,
 * or ORBIT_SERIAL_SUSPENDED after orbit_spot_yield() on @turn. The record is
 * completed in the queue (its reservation returned, never delivered again)
 * only after the handler finished: after it returned DONE, or after the
 * last continuation of a yield did.
 */
typedef int (*orbit_spot_handler_fn)(orbit_serial_turn_t *turn, const struct orbit_spot_record *rec,
				     void *ctx);

/* Hosting states (orbit_spot_host_state()). */
enum orbit_spot_host_state {
	ORBIT_SPOT_HOSTING = 1, /* holds the lease, takes records */
	/* Hosting was lost: a renew failed (the lease expired or another host
	 * holds it), or the queue fenced this host (a newer epoch took over),
	 * or the coordinator was closed. Nothing more is taken; handlers that
	 * run still finish (their completes are refused if a newer host took
	 * over). A record handed over whose handler has not started is not
	 * started once the lease has run out (by CLOCK_MONOTONIC_COARSE, a
	 * tick early; by CLOCK_MONOTONIC where a tick is over a quarter of
	 * the TTL) or the host was lost to anything but a closed coordinator:
	 * it stays taken and the next host gets it, flagged redelivered (lost
	 * with its lease still its own, to a closed coordinator, the host runs
	 * and completes them). Once every record handed over is back, the host releases
	 * the lease if it still holds it, so another host may start at once.
	 * The cause is orbit_spot_host_stats().lost_reason. */
	ORBIT_SPOT_LOST = 2,
};

/*
 * Called once, on the host's thread, when hosting is lost (@reason: the
 * error that lost it: -ENOENT or -EPERM from the renew, -EAGAIN when the
 * lock serializer stayed busy until the lease's deadline, -ORBIT_EFENCED
 * from the queue, -EPIPE from a closed coordinator, -ECHILD from one
 * whose work cannot run in this process: a caller's executor that wraps a
 * pool made before a fork). Must not call orbit_spot_host_stop() on @host.
 */
typedef void (*orbit_spot_lost_fn)(orbit_spot_host_t *host, int reason, void *ctx);

struct orbit_spot_host_options {
	size_t size;	  /* sizeof(struct orbit_spot_host_options); read with the size rule */
	const char *spot; /* the Spot's name (required), copied */
	/* Handlers per entry kind; NULL: records of that kind are completed
	 * without running, counted in stats.unhandled. At least one is set. */
	orbit_spot_handler_fn on_spot;
	orbit_spot_handler_fn on_actor;
	orbit_spot_handler_fn on_timer;
	orbit_spot_handler_fn on_lifecycle;
	orbit_spot_lost_fn on_lost; /* NULL: none */
	void *ctx;		    /* passed to every handler and on_lost */
	/* A Spot coordinator the caller created (not owned; must outlive the
	 * host). NULL: the call creates one with mode, executor and policies
	 * below, and destroys it at stop. */
	orbit_spot_serial_executor_t *coordinator;
	/* When the call creates the coordinator: its mode (0: PerActor), the
	 * executor its queues drain on (required then: normally a worker
	 * pool's), and the Spot and Actor queue policies (NULL: the default
	 * policy). */
	enum orbit_spot_execution_mode mode;
	orbit_executor_t executor;
	const orbit_execution_lane_policy_t *spot_policy;
	const orbit_execution_lane_policy_t *actor_policy;
	/* Lease TTL (0: ORBIT_SPOT_DEFAULT_LEASE_TTL_NS); at least 10 ms.
	 * Renewed every quarter of it. Adoption after a host dies takes up to it. */
	uint64_t lease_ttl_ns;
	unsigned batch; /* records taken per lane and round (0: 64) */
	struct orbit_spot_queue_caps caps;
};

/**
 * orbit_spot_host_options_init - defaults: size set, everything else 0/NULL
 * (spot, one handler and, without a coordinator, the executor must be set).
 *
 * Context: any thread; no syscall.
 */
ORBIT_API void orbit_spot_host_options_init(struct orbit_spot_host_options *opts);

/**
 * orbit_spot_host_start - host Spot @opts->spot in this process: open (or
 * create) its queue, take the hosting lease through @agent's lock handle,
 * take the queue over with the lease's token as epoch (records a previous
 * host took and did not complete come again, flagged redelivered), and
 * start the host's thread, which drains the queue into the coordinator
 * (with a coordinator the call creates, the takes of records that stream
 * run as tasks of @opts->executor, beside the handlers: doc/spot-queues.md,
 * "The drain").
 * The host takes a Spot slot of @agent's stats row (its counters and
 * submit-to-run histogram, published by the agent; with all of the row's
 * slots in use it hosts unpublished, counted in spot_slots_full).
 * @agent: a started agent with a lock handle (orbit_agent_options.lock).
 * @opts: options (see above). @out: the host.
 *
 * Context: any thread; syscalls (shm_open, mmap, the lock table's
 * serializer), allocation, pthread_create (one thread per hosted Spot).
 * Not in a forked child of @agent's process.
 * Returns: 0; -EINVAL (NULL argument, no Spot name or a bad one, no
 * handler, no coordinator and no executor, an unknown mode, a lease TTL
 * under 10 ms, caps out of range, @agent without a lock handle); -E2BIG
 * (@opts larger than this library's struct with a non-zero unknown tail);
 * -EBUSY (the lease is held and live: another process hosts the Spot, or
 * its dead host's TTL has not run out yet); -ORBIT_EFENCED (the queue
 * already saw an epoch at or above the lease's token: a lock table
 * re-created with smaller tokens); -ORBIT_EFINGERPRINT (the queue exists
 * with other caps); -ECHILD (in a forked child of @agent's process, or
 * @opts->coordinator or the pool of @opts->executor made in another
 * process: refused before the lease is taken); -ENOMEM; -EAGAIN (thread
 * creation refused, or the lock table's serializer stayed busy: retry);
 * -ENOSPC (the lock table is full, or /dev/shm has no room for the queue
 * it would create: no file is left, orbit_segment_last_error() names it);
 * a segment error of the queue
 * (-ORBIT_EMAGIC, -ORBIT_EKIND, -ORBIT_ESIZE, -ORBIT_EOWNER, ...); an
 * error of orbit_spot_serial_executor_create(). Nothing is left held on
 * failure.
 */
ORBIT_API int orbit_spot_host_start(orbit_agent_t *agent,
				    const struct orbit_spot_host_options *opts,
				    orbit_spot_host_t **out);

/**
 * orbit_spot_host_stop - stop hosting: take nothing more, wait until every
 * record already handed to the coordinator has finished (yielded ones
 * too) and complete it, release the lease and free the host. Records not
 * yet taken stay in the queue, and records taken but not handed over (the
 * coordinator refused them) stay uncompleted: the next host gets them
 * (the latter flagged redelivered). A coordinator the call created is
 * destroyed, and the host's stats slot freed. NULL is a no-op. Call it
 * before orbit_agent_stop() of the host's agent.
 * @host: the host.
 *
 * Context: any thread but a handler of @host; blocks until the handlers
 * in flight finish (a yielded handler that is never resumed blocks it
 * forever). A forked child has no host thread: its copy of @host is
 * refused and left alone (the parent still hosts).
 * Returns: 0; -EDEADLK (called from a handler of @host: nothing done);
 * -ECHILD (in a forked child of the host's process: nothing done).
 */
ORBIT_API int orbit_spot_host_stop(orbit_spot_host_t *host);

/**
 * orbit_spot_host_state - ORBIT_SPOT_HOSTING or ORBIT_SPOT_LOST.
 *
 * Context: any thread; one acquire load.
 * Returns: the state; -EINVAL for NULL.
 */
ORBIT_API int orbit_spot_host_state(const orbit_spot_host_t *host);

/* log2 buckets of the submit-to-run latency: bucket i counts [2^i, 2^(i+1)) ns. */
#define ORBIT_SPOT_LATENCY_BUCKETS 40

struct orbit_spot_host_stats {
	uint64_t epoch;		  /* this host's epoch (the lease's token) */
	uint64_t delivered;	  /* records handed to the coordinator */
	uint64_t redelivered;	  /* of those, flagged redelivered */
	uint64_t completed;	  /* completes the queue accepted */
	uint64_t fenced;	  /* completes refused: a newer host took over */
	uint64_t retried;	  /* coordinator refusals (-EAGAIN, -ENOMEM), retried */
	uint64_t undeliverable;	  /* refused for good (-E2BIG, -EINVAL): completed unrun */
	uint64_t unhandled;	  /* no handler for the kind: completed unrun */
	uint64_t protocol_errors; /* handler SUSPENDED without orbit_spot_yield */
	uint64_t complete_errors; /* completes the queue refused otherwise (its words corrupt) */
	uint64_t renewals;	  /* lease renewals */
	uint64_t renew_retries;	  /* renews answered -EAGAIN (serializer busy), retried */
	uint64_t in_flight;	  /* handed over, not finished, now */
	/* handed over, never started: the lease had run out or another host
	 * took over (left taken: the next host gets them flagged) */
	uint64_t not_started;
	int lost_reason; /* 0 while hosting */
	/* submit-to-run latency (submit until the handler starts) of the
	 * records whose submit_ns is exact (orbit_spot_record.submit_exact):
	 * a sample, so latency_count is not the count of records run */
	uint64_t latency_count, latency_sum_ns, latency_max_ns;
	uint64_t latency_buckets[ORBIT_SPOT_LATENCY_BUCKETS];
};

/**
 * orbit_spot_host_stats - read the host's counters.
 *
 * Context: any thread; each counter exact, the set not a snapshot, except
 * that in_flight is read first and a record leaves it only after its
 * complete was counted: in_flight 0 means completed + fenced +
 * complete_errors + unhandled + not_started cover every record delivered
 * before the call.
 * Returns: 0; -EINVAL for NULL.
 */
ORBIT_API int orbit_spot_host_stats(const orbit_spot_host_t *host,
				    struct orbit_spot_host_stats *out);

/* The queue's own counters (all producers and hosts so far), per lane. */
struct orbit_spot_inbound_stats {
	uint64_t accepted[2];	    /* submits that returned 0 */
	uint64_t rejected_count[2]; /* -EAGAIN: full by count */
	uint64_t rejected_bytes[2]; /* -EAGAIN: full by bytes */
	uint64_t aborted[2];	    /* producers died or stalled mid-record */
	uint64_t redelivered[2];
	uint64_t corrupt[2]; /* records that failed validation, skipped */
	uint64_t completed[2];
	uint32_t depth[2]; /* records reserved now */
	uint32_t bytes[2]; /* payload bytes reserved now */
	uint32_t item_cap[2], byte_cap[2];
	uint64_t epoch; /* the highest host epoch so far */
	uint64_t takeovers;
	uint32_t host_pid;  /* the last host's pid (0: never hosted) */
	uint64_t shm_bytes; /* the segment's size */
};

/**
 * orbit_spot_host_inbound_stats, orbit_spot_client_inbound_stats - read the
 * queue's counters through a host or a client.
 *
 * Context: any thread; relaxed loads of the segment.
 * Returns: 0; -EINVAL; -ECHILD (in a forked child).
 */
ORBIT_API int orbit_spot_host_inbound_stats(const orbit_spot_host_t *host,
					    struct orbit_spot_inbound_stats *out);

/**
 * orbit_spot_yield - hand the turn back around an external call, like
 * orbit_work_yield(), so that the record completes when @cont (the last
 * continuation) returns ORBIT_SERIAL_DONE. The handler returns
 * ORBIT_SERIAL_SUSPENDED after it; *@out goes to orbit_serial_queue_resume().
 * @cont may yield again with orbit_spot_yield(). A handler that yields
 * with orbit_work_yield() instead is counted in stats.protocol_errors and
 * its record completes when the handler returns.
 *
 * Context: only inside a handler (or continuation) of a host, on the
 * @turn it received.
 * Returns: 0; -EINVAL (not inside a handler on @turn); the codes of
 * orbit_work_yield() (-EALREADY, -ENOMEM).
 */
ORBIT_API int orbit_spot_yield(orbit_serial_turn_t *turn, orbit_serial_work_fn cont, void *arg,
			       orbit_serial_resume_t **out);

/* ---- clients ---------------------------------------------------------- */

struct orbit_spot_client_options {
	size_t size; /* sizeof(struct orbit_spot_client_options); read with the size rule */
	struct orbit_spot_queue_caps caps;
};

/**
 * orbit_spot_client_options_init - defaults: size set, caps all default.
 *
 * Context: any thread; no syscall.
 */
ORBIT_API void orbit_spot_client_options_init(struct orbit_spot_client_options *opts);

/**
 * orbit_spot_client_open - a client that submits to Spot @spot from
 * @agent's member row: opens the Spot's queue, creating it with
 * @opts->caps when missing. No host needs to be present: records wait.
 * The client takes a Spot slot of @agent's stats row (submitted, -EAGAIN
 * refusals, other refusals, waits for room and their timeouts; with all of
 * the row's slots in use it runs unpublished, counted in spot_slots_full).
 * @agent: a started agent. @spot: the Spot's name. @opts: NULL: defaults.
 * @out: the client.
 *
 * Context: any thread; syscalls (shm_open, mmap); allocation. One client
 * per agent and Spot at a time.
 * Returns: 0; -EINVAL (NULL @agent or @out, bad Spot name, caps out of
 * range); -E2BIG (options with a non-zero unknown tail);
 * -ORBIT_EFINGERPRINT (the queue exists with other caps); -EBUSY (this
 * agent already has a client of @spot open); -ERANGE (the agent's member
 * row is beyond the queue's producer rows); -ECHILD (in a forked child of
 * @agent's process); -ENOMEM; -ENOSPC (/dev/shm has no room for the queue
 * it would create: no file is left, orbit_segment_last_error() names it);
 * a segment error of the queue (-ORBIT_EMAGIC,
 * -ORBIT_EKIND, -ORBIT_ESIZE, -ORBIT_EOWNER, -ORBIT_EMODE, -EACCES, ...).
 */
ORBIT_API int orbit_spot_client_open(orbit_agent_t *agent, const char *spot,
				     const struct orbit_spot_client_options *opts,
				     orbit_spot_client_t **out);

/**
 * orbit_spot_client_close - close the client (NULL: no-op). Records it
 * submitted stay in the queue; its stats slot is freed. Call it before
 * orbit_agent_stop() of the client's agent.
 *
 * Context: the client's thread; syscall munmap. In a forked child it only
 * frees the child's copy.
 */
ORBIT_API void orbit_spot_client_close(orbit_spot_client_t *client);

/**
 * orbit_spot_submit_spot - one immediate attempt to append a record for
 * execute_spot (application lane).
 * orbit_spot_submit_actor - the same for execute_actor(@actor_id).
 * orbit_spot_submit_timer - the same for execute_timer(@timer_name)
 *   (1..63 bytes).
 * orbit_spot_submit_lifecycle - the same for execute_lifecycle
 *   (lifecycle lane).
 * @payload: @len bytes, copied (NULL only with @len 0).
 * @seq: the record's producer sequence number (NULL: not stored).
 *
 * Context: the client's thread (one at a time); lock-free, no allocation;
 * no syscall unless the host's thread sleeps (then one FUTEX_WAKE). Never
 * blocks. Ordering: a release commit: the host sees every byte.
 * Returns: 0 and *@seq; -EAGAIN (the lane is full by count or by bytes:
 * nothing appended; orbit_spot_client_wait_room() waits for room);
 * -E2BIG (@len above the lane's byte cap, or the timer name too long);
 * -EINVAL (NULL client, NULL payload with @len, empty timer name);
 * -ECANCELED (the host aborted this record: the client stalled mid-record
 * past the unblock bound); -ORBIT_ECORRUPT (the lane's words are
 * inconsistent); -ECHILD (in a forked child of the opener).
 */
ORBIT_API int orbit_spot_submit_spot(orbit_spot_client_t *client, const void *payload, uint32_t len,
				     uint64_t *seq);
ORBIT_API int orbit_spot_submit_actor(orbit_spot_client_t *client, uint64_t actor_id,
				      const void *payload, uint32_t len, uint64_t *seq);
ORBIT_API int orbit_spot_submit_timer(orbit_spot_client_t *client, const char *timer_name,
				      const void *payload, uint32_t len, uint64_t *seq);
ORBIT_API int orbit_spot_submit_lifecycle(orbit_spot_client_t *client, const void *payload,
					  uint32_t len, uint64_t *seq);

/**
 * orbit_spot_client_wait_room - sleep until @lane may have room for one
 * record of @len bytes, or @timeout_ns passes (< 0: no timeout).
 * Room can be taken by another producer before the next submit: submit
 * again, and wait again on -EAGAIN.
 *
 * Context: the client's thread; with more than one CPU online it first
 * polls the lane for a few microseconds (an adaptive budget, at most
 * 20 us: a host that keeps completing frees room that soon, and rings
 * nobody), then blocks in FUTEX_WAIT on the queue's room doorbell (the
 * host rings it when it frees room and someone waits).
 * Returns: 0 (room now, or room was freed); -ETIMEDOUT; -EINTR; -EINVAL
 * (NULL client, bad lane); -E2BIG (@len above the lane's byte cap: no
 * room ever comes, as submit answers at once); -ECHILD.
 */
ORBIT_API int orbit_spot_client_wait_room(orbit_spot_client_t *client, enum orbit_spot_lane lane,
					  uint32_t len, int64_t timeout_ns);

ORBIT_API int orbit_spot_client_inbound_stats(const orbit_spot_client_t *client,
					      struct orbit_spot_inbound_stats *out);

ORBIT_END_DECLS

#endif /* ORBIT_SPOT_QUEUE_H */
