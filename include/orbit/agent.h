/* SPDX-License-Identifier: MIT */
/*
 * orbit/agent.h: the per-process agent. orbit_agent_start() joins the
 * fleet's member directory, claims a writer lane of the transition ring
 * (when given a lock handle: lanes are for writers; 16 by default) and
 * starts TWO threads: the agent thread, which sleeps on the ring's futex
 * doorbell, and a death watcher (epoll on the members' pidfds, which wakes
 * the agent thread when one exits). On each wake the agent thread
 * drains the ring into an RCU-protected local view of lock states (read
 * with orbit_agent_view_lookup(), no lock), signals every local
 * subscriber's eventfd, notices dead members (pidfds, proved by the
 * member directory's kernel locks) and reclaims their rows and lanes, and
 * periodically publishes this process's counters into its stats row.
 * orbit_agent_stop() undoes all of it: no thread, fd or mapping is left.
 *
 * Subscribing: int fd; orbit_agent_subscribe(a, &fd); then poll/epoll fd;
 * when readable, read() it (drain), then advance your own cursor
 * (orbit_agent_reader_open() + orbit_transition_reader_next() until
 * -EAGAIN). A lag (-ORBIT_ELAGGED) means frames were lost: re-read the
 * lock table. The eventfd carries no payload; wakes coalesce. Or
 * orbit_agent_subscribe_callback(a, fn, arg): fn runs on the agent thread
 * itself after the drain, one futex hand-off from the publisher instead
 * of two (the eventfd wakes a second thread).
 *
 * Caveats: deaths are noticed at once, not per tick: the death watcher
 * wakes the agent thread when a member's pidfd turns readable (measured
 * 0.5-4.5 ms from SIGKILL to row and lane reclaimed, whatever tick_ms;
 * see doc/agent.md). The tick (tick_ms, default 10 ms) stays the fallback
 * bound when epoll is unavailable (-ENOSYS: no watcher) and retries a
 * death whose kernel-lock proof failed. Members that joined are
 * picked up at the next wake that found no frame (a joining agent rings
 * the doorbell) and at every stats publish. The view follows the ring; it
 * is advisory like the ring (the lock table is the authority).
 *
 * Fork: an agent belongs to the process that started it. In a forked
 * child every call on an inherited agent returns -ECHILD (the fork-trap
 * code of orbit/lock.h) and touches none of the parent's threads, fds or
 * segments; orbit_agent_stop() on it does nothing (its memory in the child
 * is the parent's copy; its fds are O_CLOEXEC). The child starts an agent
 * of its own, on a lock handle of its own (the parent's handle is refused
 * with -ECHILD), also while the parent's agent runs and however busy its
 * threads are: the library's RCU (liburcu-bp, with its fork hooks
 * installed by pthread_atfork() at the first agent or registry) is
 * fork-safe. fork() waits for a grace period in progress (the agent's is
 * one membarrier).
 *
 * RCU: the view is read in liburcu-bp read-side sections. Threads need no
 * registration (liburcu-bp registers a thread at its first lookup and
 * unregisters it at exit) and may freely mix the view with
 * orbit/registry.h; a thread the application registered with another
 * liburcu flavour (urcu.h / memb, ...), even inside its own read-side
 * section, may call orbit_agent_view_lookup(). An application that uses
 * liburcu-bp itself must not call urcu_bp_before_fork() and its siblings
 * around fork(): the library already does.
 */
#ifndef ORBIT_AGENT_H
#define ORBIT_AGENT_H

#include <orbit/common.h>
#include <orbit/fleet.h>
#include <orbit/lock.h>

ORBIT_BEGIN_DECLS

typedef struct orbit_agent orbit_agent_t;

/* Options of orbit_agent_start(); size-carrying (see orbit/common.h); 0: default. */
struct orbit_agent_options {
	size_t size;				/* sizeof(struct orbit_agent_options) */
	const char *fleet;			/* NULL: "default" */
	const char *name;			/* member display name (NULL: "agent") */
	orbit_lock_t *lock;			/* optional, not owned, must outlive the agent:
				    its counters are published, its transitions
				    are written to the agent's lane (the agent
				    installs the ring as the lock's sink), and the
				    view re-reads its table after a lag */
	unsigned tick_ms;			/* longest futex sleep: housekeeping period and
				    the fallback bound on noticing a dead member
				    (the death watcher notices at once) (0: 10) */
	unsigned stats_ms;			/* stats publish + member rescan period (0: 250) */
	unsigned mode;				/* segment permissions (0: 0600; 0640 or 0660 to
				    share with @gid, see lock.h "Sharing a fleet
				    with a group"): every segment the agent opens
				    or creates, stats included. A lock passed in
				    @lock was opened with its own options: give it
				    the same mode and gid */
	const struct orbit_lock_layout *layout; /* NULL: the lock's layout, else the
						   default; names the ring the agent
						   writes and follows (one per layout) */
	unsigned gid;				/* group of a group mode (0: the effective gid) */
	unsigned owner_uid;  /* the fleet's one creating and trusted uid (0: none;
				    required with 0640: lock.h "Sharing a fleet with a group") */
	int init_timeout_ms; /* how long to wait for another process that is
				    creating one of the fleet's segments (holding its
				    flock) to finish, before -ORBIT_EINITTIMEOUT (0: 2 s,
				    as orbit_lock_options) */
};

/**
 * orbit_agent_options_init - fill @opts with the defaults: size set, every
 * other field zero (fleet "default", name "agent", no lock, tick 10 ms,
 * stats 250 ms, mode 0600, the lock's or the default layout, a 2 s wait for
 * a segment another process is creating). NULL is a
 * no-op.
 * Context: any thread; no syscall. Returns nothing.
 */
ORBIT_API void orbit_agent_options_init(struct orbit_agent_options *opts);

/* Histograms a caller may feed (the lock API does not time itself). */
enum orbit_agent_hist {
	ORBIT_AGENT_HIST_ACQUIRE = 0, /* try_acquire call latency */
};

/**
 * orbit_agent_start - join the fleet and start the agent thread and its
 * death watcher.
 * Creates the member directory, stats segment and ring when missing.
 * Context: any thread, once per process per fleet (a second agent in one
 * process takes a second member row); syscalls (epoll_create1, eventfd),
 * allocation, pthread_create (two threads). A forked child must start its
 * own agent (see "Fork" above); it may, while the parent's agent runs.
 * The ring is the one of the lock's layout (its ring_kind, ring_frames and
 * ring_frame_bytes; 16 lanes), or of @opts->layout without a lock, or the
 * default "ring-229".
 * Returns: 0; -EINVAL (size 0 in @opts or its layout, bad options, fleet
 * name or layout, a layout other than the lock's, or a lock handle opened
 * on another fleet than @opts->fleet: its transitions would go into this
 * fleet's ring; refused before anything is created); -E2BIG (@opts or its
 * layout is larger than this build's and sets a field it does not know);
 * -ECHILD (the lock handle was opened by the parent of this forked
 * process; refused before anything is created); -EBUSY (@opts->lock
 * already serves another running agent: a handle has one ring lane);
 * -EOPNOTSUPP (the lock handle is on the etcd backend: the agent wires
 * SHM tables and rings only; read an etcd lock's transitions with
 * orbit_lock_reader_open()); -ENOMEM; -ENOSPC (every
 * member row, or with a lock every ring lane, is held by a live process:
 * orbit_segment_last_error() names the member directory or the ring and
 * its row or lane count);
 * -EPERM (no member row is free and some row no member holds is pinned by
 * a read lock: a process that can only read the directory, such as a
 * reader of a 0640 fleet, holds F_RDLCK on it; doc/threat-model.md);
 * -EAGAIN (thread
 * creation refused for the agent thread; the death watcher is optional: without
 * its thread, epoll set or eventfd the tick notices deaths); or a
 * segment error (-ORBIT_EMAGIC, -ORBIT_EVERSION, -ORBIT_EKIND,
 * -ORBIT_EFINGERPRINT, -ORBIT_ESIZE, -ORBIT_EOWNER, -ORBIT_EMODE,
 * -ORBIT_EINITTIMEOUT, -EACCES, -ORBIT_ENOTREG, -ORBIT_ETRUNCATED; -EBUSY
 * for one to re-initialise that a process holds a byte-range lock on; -EPERM
 * when it would create a segment with a group mode for a group this
 * process is not in; and -ENOSPC when /dev/shm has no room for a segment
 * it creates: nothing is left under that name; orbit_segment_last_error()
 * names the segment and its size).
 */
ORBIT_API int orbit_agent_start(const struct orbit_agent_options *opts, orbit_agent_t **out);

/**
 * orbit_agent_stop - stop and join both threads, publish the last stats,
 * uninstall the lock sink, release the lane, leave the directory, close
 * every subscriber eventfd still open and unmap everything. NULL is a no-op.
 * Context: not from the agent's own thread nor from any agent's subscriber
 * callback (refused: -EDEADLK), not concurrently with other calls on
 * @agent; readers from orbit_agent_reader_open() must be closed first; no
 * thread may be inside orbit_agent_view_lookup(). Blocks up to a tick plus
 * a grace period (RCU synchronize), plus the rest of a subscriber callback
 * that is running: the join waits for it to return. So the calling thread
 * must not hold a lock a callback of @agent takes: the callback would wait
 * for the lock, stop for the callback, and neither returns. In a forked
 * child, on the parent's agent: does nothing (the threads, fds and rows
 * are the parent's; see "Fork" above).
 * Returns: 0 (stopped, @agent freed; also for NULL); -ECHILD (forked child,
 * the parent's agent: nothing done); -EDEADLK (called from a subscriber
 * callback or on the agent thread: nothing done, @agent still runs);
 * -EBUSY (a Spot host or client of @agent still exists: stop the hosts
 * and close the clients first; nothing done, @agent still runs). Not
 * alongside any other call on @agent (a host start racing it can still
 * find it freed): the refusal guards against a forgotten host, not a
 * concurrent one.
 */
ORBIT_API int orbit_agent_stop(orbit_agent_t *agent);

/**
 * orbit_agent_subscribe - a new eventfd (EFD_NONBLOCK|EFD_CLOEXEC) that
 * the agent writes to after each drain that brought at least one frame or
 * a lag. The agent owns it: give it back with orbit_agent_unsubscribe().
 * Context: any thread but one running a subscriber callback; syscall
 * eventfd; takes the subscriber mutex, so it waits for callbacks that are
 * running (the agent thread holds the mutex while it runs the callbacks
 * and writes the eventfds): do not hold a lock a callback takes.
 * Returns: 0; -EINVAL; -ECHILD (@agent is the parent's: this is a forked
 * child, no eventfd is made, *@fd is untouched); -EDEADLK (called from a
 * subscriber callback of any agent of this process, or on @agent's
 * thread: nothing is made); -ENOSPC (64
 * subscribers already); -EMFILE/-ENFILE.
 */
ORBIT_API int orbit_agent_subscribe(orbit_agent_t *agent, int *fd);

/**
 * orbit_agent_unsubscribe - stop signalling @fd and close it.
 * Context: as orbit_agent_subscribe(): takes the subscriber mutex, which
 * the agent thread holds while it runs the callbacks and writes the
 * eventfds, so it waits for callbacks that are running.
 * Returns: 0; -EINVAL; -ECHILD (forked child: @fd is left open, the
 * parent's subscription untouched); -EDEADLK (called from a subscriber
 * callback of any agent of this process: @fd stays subscribed); -ENOENT
 * (not a subscriber of @agent).
 */
ORBIT_API int orbit_agent_unsubscribe(orbit_agent_t *agent, int fd);

/* A subscriber callback (orbit_agent_subscribe_callback()): @arg as subscribed. */
typedef void (*orbit_agent_wake_fn)(void *arg);

/**
 * orbit_agent_subscribe_callback - run @fn(@arg) on the agent thread after
 * each drain that brought at least one frame or a lag: the same wakes an
 * eventfd subscriber gets, coalesced the same way, but with no second
 * thread to wake. The thread the publisher's FUTEX_WAKE woke drains the
 * ring into the view and calls @fn at once (callbacks in subscription
 * order, before any eventfd is written), so a wake-up costs one futex
 * hand-off, not two (doc/agent.md "Wake latency"). When @fn runs, the
 * view already holds every frame that drain read; read the frames with a
 * cursor of your own (orbit_agent_reader_open(); used from @fn only, it
 * is one thread's), -ORBIT_ELAGGED meaning re-read the lock table.
 * @fn runs on the agent thread with every signal blocked, while the agent
 * holds its subscriber mutex: keep it short and never block in it. While
 * it runs, the agent waits: the view stays stale for every reader, no
 * eventfd subscriber is woken, no member rescan or join is seen, dead
 * members' rows and lanes and their ORBIT_LOCK_FREE_ON_DEATH leases are
 * not reclaimed (other processes wait longer for those locks), and every
 * (un)subscribe caller and orbit_agent_stop() wait for it to return. The
 * agent renews no lease, and liveness is proved by pidfds and kernel
 * locks, not by a heartbeat: a slow callback cannot get this process
 * declared dead. @fn may call orbit_agent_view_lookup(),
 * orbit_transition_reader_next(), orbit_agent_record_latency(),
 * orbit_agent_watch()/unwatch() and the lock API, but a lock call can wait
 * for the table's serializer up to serializer_wait_ms (orbit/lock.h):
 * prefer the try_ calls and expect that wait. A transition @fn makes
 * (acquire, renew, release) is a frame like any other: it wakes the agent
 * again and @fn is called again for it, as an eventfd subscriber that
 * reacts with a transition is woken again; a callback that makes one on
 * every call keeps the agent thread busy for good, so make it only when
 * the state calls for it. Every (un)subscribe call of any agent of this
 * process and orbit_agent_stop() made from @fn are refused (-EDEADLK). A
 * thread must not hold a lock @fn takes while it calls any (un)subscribe
 * function of @agent or orbit_agent_stop(@agent): they wait for a running
 * @fn, and @fn for the lock.
 * Context: any thread but one running a subscriber callback; takes the
 * subscriber mutex (waits while callbacks run); no syscall, no allocation.
 * Returns: 0; -EINVAL (NULL @agent or @fn); -ECHILD (@agent is the
 * parent's: forked child, nothing subscribed); -EDEADLK (called from a
 * subscriber callback of any agent of this process, or on @agent's thread:
 * nothing subscribed); -EEXIST
 * (@fn with @arg is subscribed already); -ENOSPC (64 callbacks already).
 */
ORBIT_API int orbit_agent_subscribe_callback(orbit_agent_t *agent, orbit_agent_wake_fn fn,
					     void *arg);

/**
 * orbit_agent_unsubscribe_callback - stop calling @fn(@arg). When it
 * returns 0, @fn(@arg) is not running and will not run again: @arg may be
 * freed. Callbacks still subscribed at orbit_agent_stop() are dropped.
 * Context: as orbit_agent_subscribe_callback(); waits for callbacks that
 * are running (the subscriber mutex), never for more.
 * Returns: 0; -EINVAL (NULL @agent or @fn); -ECHILD (forked child: the
 * parent's subscription untouched); -EDEADLK (called from a subscriber
 * callback of any agent of this process: it stays subscribed); -ENOENT
 * (@fn with @arg is not subscribed to @agent).
 */
ORBIT_API int orbit_agent_unsubscribe_callback(orbit_agent_t *agent, orbit_agent_wake_fn fn,
					       void *arg);

/**
 * orbit_agent_reader_open - a private ring cursor after the current heads
 * (see orbit/fleet.h for next/close). Close it before orbit_agent_stop().
 * Context: any thread; allocates; no syscall. The cursor is the caller's
 * alone (one thread at a time).
 * Returns: 0; -EINVAL; -ECHILD (forked child); -ENOMEM.
 */
ORBIT_API int orbit_agent_reader_open(orbit_agent_t *agent, orbit_transition_reader_t **out);

/**
 * orbit_agent_view_lookup - the lock state of @key in the local view: what
 * the ring said last (holder owner bytes, token, deadline; expired entries
 * are reported as such by the deadline, not removed).
 * Context: any thread, lock-free (a liburcu-bp read-side section: the
 * calling thread is registered by liburcu-bp at its first one and
 * unregistered at its exit; see "RCU" above). No syscall after the first
 * call in a thread.
 * Returns: 0 (@out filled: token, deadline_ns, holder_pid = the writer of
 * the last frame, the key and owner bytes); -ENOENT (not held as far as
 * the view knows); -EINVAL; -ECHILD (forked child); -E2BIG (key over
 * ORBIT_LOCK_BYTES_MAX).
 */
ORBIT_API int orbit_agent_view_lookup(orbit_agent_t *agent, const orbit_lock_key_t *key,
				      struct orbit_lock_entry *out);

/**
 * orbit_agent_record_latency - add @ns to histogram @hist of this
 * process's stats (published at the next stats tick).
 * Context: any thread; lock-free (relaxed atomic adds).
 * Returns: 0; -EINVAL; -ECHILD (forked child).
 */
ORBIT_API int orbit_agent_record_latency(orbit_agent_t *agent, enum orbit_agent_hist hist,
					 uint64_t ns);

/**
 * orbit_agent_member_row - this agent's member directory row (also its
 * stats row). Context: any thread; no syscall.
 * Returns the row (>= 0), -EINVAL (NULL agent) or -ECHILD (forked child).
 */
ORBIT_API int orbit_agent_member_row(const orbit_agent_t *agent);

/**
 * orbit_agent_reset_transport - reset the transport: clear the lock
 * table (tokens stay increasing) and every ring lane, only when no other
 * live member is attached and no other live process holds an unexpired
 * lease (lock users without an agent count through their leases; this
 * process's own leases do not). Needs the options' lock (else only the ring).
 * Context: any thread but the agent's; quiescent boot only; takes the lock
 * table's serializer.
 * Returns: 0; -EBUSY (another live member is attached, or another live
 * process holds an unexpired lease); -EINVAL; -ECHILD (@agent is the
 * parent's: forked child); an error of the table scan (-EAGAIN) or reset
 * (-EAGAIN: the serializer stayed taken past its bound, nothing was reset;
 * -ENOTRECOVERABLE, -ECHILD, -EROFS).
 */
ORBIT_API int orbit_agent_reset_transport(orbit_agent_t *agent);

/*
 * Watching in-process objects. lib/ knows nothing of the stats segment: an
 * agent that watches a serial queue, a worker pool, a state lane or a
 * serial-executor coordinator (Spot, Actor, session) reads its counters
 * (orbit_serial_queue_stats(), orbit_worker_pool_stats(),
 * orbit_state_lane_stats(), orbit_spot/actor/session_executor_stats()) at
 * every stats publish and adds them, summed over the watched objects of
 * each kind, to its stats row (queue_*, pool_*, lane_*, exec_* (the three
 * coordinator kinds together) and watched_objects; see doc/agent.md).
 * When an object is unwatched its counts so far stay in the sums, so the
 * published counters never go backwards; gauges (queue_depth,
 * exec_outstanding, exec_actor_queues, exec_timer_queues,
 * watched_objects) drop it.
 */
#define ORBIT_AGENT_WATCH_MAX 64 /* objects one agent watches at a time, all kinds */

/* What orbit_agent_watch() is given; @obj's type follows the kind. */
enum orbit_agent_watch_kind {
	ORBIT_AGENT_WATCH_QUEUE = 1, /* const orbit_serial_queue_t * (orbit/serial_queue.h) */
	ORBIT_AGENT_WATCH_POOL,	     /* orbit_worker_pool_t * (orbit/worker_pool.h) */
	ORBIT_AGENT_WATCH_LANE,	     /* const orbit_state_lane_t * (orbit/state_lane.h) */
	ORBIT_AGENT_WATCH_SPOT,	 /* const orbit_spot_serial_executor_t * (orbit/spot_executor.h) */
	ORBIT_AGENT_WATCH_ACTOR, /* const orbit_actor_serial_executor_t * */
	ORBIT_AGENT_WATCH_SESSION, /* const orbit_session_serial_executor_t * */
};

/**
 * orbit_agent_watch - publish the counters of @obj, an object of @kind,
 * with this agent's stats: a serial queue (queue_*), a worker pool
 * (pool_*), a state lane (lane_*), or a Spot, Actor or session
 * coordinator (exec_*, the three kinds summed together; read with
 * orbit_spot/actor/session_serial_executor_stats(): all its queues).
 * The object must stay valid until it is unwatched (or the agent
 * stopped): the agent reads its counters at every publish (relaxed loads
 * through its *_stats() getter, no lock of the object, never a state lane
 * turn, no call into it otherwise), so a closed coordinator may stay
 * watched; unwatch it before destroying it.
 * Context: any thread, concurrently with the agent thread and with other
 * watch/unwatch calls; takes @agent's watch mutex (one per agent), which
 * its thread holds only while it reads the watched objects' counters at a
 * stats publish. Not concurrently with orbit_agent_stop(). No syscall, no
 * allocation (the watch set is made by orbit_agent_start()).
 * Returns: 0; -EINVAL (NULL @agent or @obj, or an unknown @kind); -ECHILD
 * (@agent is the parent's: forked child; the object is not touched);
 * -EEXIST (already watched by @agent as @kind); -ENOSPC
 * (ORBIT_AGENT_WATCH_MAX objects of all kinds watched already).
 */
ORBIT_API int orbit_agent_watch(orbit_agent_t *agent, enum orbit_agent_watch_kind kind,
				const void *obj);

/**
 * orbit_agent_unwatch - stop publishing the counters of @obj (of @kind).
 * Its counts so far are kept in the agent's sums (counters stay monotonic;
 * gauges drop it). When the call returns the agent no longer touches the
 * object: the caller may destroy it.
 * Context: as orbit_agent_watch(); may wait for a stats publish in
 * progress (the watch mutex), never for more.
 * Returns: 0; -EINVAL (NULL argument or an unknown @kind); -ECHILD (forked
 * child); -ENOENT (not watched by @agent as @kind).
 */
ORBIT_API int orbit_agent_unwatch(orbit_agent_t *agent, enum orbit_agent_watch_kind kind,
				  const void *obj);

ORBIT_END_DECLS

#endif /* ORBIT_AGENT_H */
