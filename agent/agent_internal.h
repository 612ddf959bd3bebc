/* SPDX-License-Identifier: MIT */
/*
 * agent/agent_internal.h: the agent's state and the entry points its
 * mechanisms give each other (internal; one file per mechanism):
 *   agent.c        start, stop, the fork trap, the lock-to-ring wiring (shm/), small calls
 *   agent_loop.c   the agent thread: drain, signal, reclaim, tick
 *   agent_view.c   the RCU view of lock states and orbit_agent_view_lookup()
 *   agent_death.c  the death watcher thread, pidfds, dead-member reclaim
 *   agent_subs.c   subscribers: eventfds and callbacks
 *   agent_stats.c  the stats row (publish) and orbit_agent_record_latency()
 *   agent_test.c   the test hooks of fleet_internal.h
 *   agent_watch.c  watched in-process objects (agent_watch.h)
 *   agent_spot_stats.c  the Spot hosts' and clients' stats slots (agent/spot.h)
 *
 * Locks and what they protect:
 *   subs_mu   the subscriber arrays (eventfds and callbacks). Taken by API
 *             callers and by the agent thread while it runs the callbacks
 *             and writes the eventfds. Under it the agent thread calls the
 *             application's callbacks, which may take the application's
 *             locks: a thread must not hold a lock a callback takes while
 *             it (un)subscribes, and a callback must not (un)subscribe
 *             (refused with -EDEADLK, never a hang). The library itself
 *             takes nothing under it; a callback that calls the agent API
 *             may take the two leaves below under it (nothing takes
 *             subs_mu under them).
 *   watched   (agent_watch.c) the set's own mutex: watch/unwatch callers
 *             and the stats publish; leaf.
 *   spots->mu (agent_spot_stats.c) the Spot registry and this row's Spot
 *             slots: register/unregister callers and the stats publish;
 *             leaf, never taken with the watch set's mutex.
 *   park->mu  (agent_test.c, test hooks only) leaf; a parked thread waits
 *             on park->cv holding nothing else.
 * The view needs no lock: one updater (the agent thread), RCU readers.
 * The epoll set needs none either: the agent thread alone adds, re-arms
 * and deletes pidfds (the kernel makes epoll_ctl() safe against the
 * watcher's concurrent epoll_wait()); the watcher only waits on it.
 * Counters fed from other threads (frames written by the lock sink, in
 * shm/lock_ring.c, the acquire histogram) are relaxed atomics: they are counts, read once
 * per publish, and order nothing.
 */
#ifndef ORBIT_AGENT_INTERNAL_H
#define ORBIT_AGENT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#include <orbit/agent.h>

#include "agent/agent_watch.h" /* orbit__agent_check() */
#include "agent/fleet_internal.h"
#include "base/die.h"
#include "shm/lock_ring.h"
#include "shm/members.h"
#include "shm/ring.h"
#include "shm/stats.h"

#define AGENT_MAX_SUBS 64

struct cds_lfht;
struct view_node;	   /* agent_view.c */
struct agent_watch_row;	   /* agent_death.c */
struct orbit__agent_park;  /* agent_test.c */
struct orbit__agent_spots; /* agent_spot_stats.c */

struct orbit_agent {
	char fleet[ORBIT_FLEET_NAME_MAX + 1];
	pid_t pid;	       /* the starter (base/fork_guard.h): another = a forked child */
	orbit_lock_t *lock;    /* caller's, optional */
	orbit_lock_t *ro_lock; /* ours, read-only, for resync when lock is NULL */
	struct orbit_lock_layout layout; /* the fleet's: names the table and the ring */
	unsigned mode, gid, owner_uid;	 /* the fleet's permissions (orbit_agent_options) */
	uint64_t tick_ns, stats_ns;
	orbit_members_t *members;
	int row;
	uint32_t member_gen; /* our row's generation, named on lock (FREE_ON_DEATH) */
	orbit_stats_t stats;
	bool have_stats_row;
	orbit_ring_t *ring;
	orbit_ring_reader_t *reader; /* the agent thread's cursor */
	uint32_t wake_class;	     /* our doorbell class (orbit__doorbell_bit(row)) */
	/*
	 * The lock's transitions into our ring lane (shm/lock_ring.h; only with
	 * a lock). We keep only its skip mask: our own frames skip our class's
	 * wake while we have no subscriber (wake_class, else 0; set under
	 * subs_mu by orbit__agent_subs_update_skip()): we would only update the
	 * view, and on the CPU the other processes' agents need. At most a
	 * quarter lane of them wait for our next wake (other frames, a join,
	 * the tick), so our lane never laps us.
	 */
	struct orbit_lock_ring wire;
	struct orbit_ring_event *ev; /* agent thread's frame buffer */

	/* The view (agent_view.c); agent thread only unless said otherwise. */
	struct cds_lfht *view;
	struct view_node *retired; /* free after a grace period */
	uint32_t nretired;	   /* length of retired */
	uint64_t resync_epoch;
	int grace; /* address of the TSan grace-period edge only */
	uint64_t tombstones;
	uint64_t max_revision;
	uint64_t floor_revision; /* frames at or below: already in the last resync */
	uint64_t repairs_seen;	 /* the table's repair count at the last resync */
	bool resync_due;	 /* the last resync's table copy failed: retry */

	struct orbit_agent_watch_set *watched; /* queues, pools, lanes (agent_watch.c; own mutex) */
	struct orbit__agent_spots *spots; /* Spot hosts, clients (agent_spot_stats.c; own mutex) */

	pthread_t thread;
	bool thread_started;
	_Atomic int stop;

	/*
	 * The death watcher (agent_death.c): epfd holds the watched pidfds
	 * (EPOLLIN | EPOLLONESHOT, data = row) and death_stop (an eventfd,
	 * data = AGENT_DEATH_STOP). epfd < 0: no watcher (no epoll), the tick
	 * alone. The watcher sets a row's bit in fired[] (relaxed RMW: the bits
	 * are carried by death_pending), then death_pending (release), then
	 * wakes our doorbell class; the agent thread takes death_pending
	 * (acquire) and then the bits.
	 */
	struct agent_watch_row *watch; /* per member row, agent thread only */
	uint32_t nrows;
	int epfd, death_stop;
	pthread_t death_thread;
	bool death_started;
	_Atomic uint64_t *fired; /* one bit per member row, (nrows + 63) / 64 words */
	_Atomic bool death_pending;

	/*
	 * Test hooks (agent_test.c): NULL unless a test paused the thread.
	 * Published with AT-R1, read with AT-A1 (agent_test.c).
	 */
	struct orbit__agent_park *_Atomic park;

	pthread_mutex_t subs_mu; /* protects subs[], nsubs, cbs[], ncbs */
	int subs[AGENT_MAX_SUBS];
	int nsubs;
	struct agent_callback {
		orbit_agent_wake_fn fn;
		void *arg;
	} cbs[AGENT_MAX_SUBS]; /* run on the agent thread, in order, before the eventfds */
	int ncbs;

	/* Counters. Agent thread only unless _Atomic. */
	uint64_t wakeups, signals, reclaimed, view_entries;
	struct orbit_stats_hist_local delivery;
	_Atomic uint64_t acq_count, acq_sum;
	_Atomic uint64_t acq_buckets[ORBIT_STATS_BUCKETS];
};

/* ---- agent_view.c: the agent thread is the only updater ---- */

/* Make the (empty) view. Returns 0 or -ENOMEM. */
int orbit__agent_view_open(struct orbit_agent *a);
/* Free every node and the table; no reader or updater may be left. NULL view: no-op. */
void orbit__agent_view_close(struct orbit_agent *a);
/* Inside a read-side section: apply one frame if it is newer than the view. */
void orbit__agent_view_apply(struct orbit_agent *a, const struct orbit_ring_event *ev);
/* Inside a read-side section: drop tombstones well behind the newest revision. */
void orbit__agent_view_prune(struct orbit_agent *a);
/* Rebuild the view from the lock table (after a lag, a repair, a failed copy). */
void orbit__agent_view_resync(struct orbit_agent *a);
/* Does the view need a resync without a frame saying so (failed copy, silent repair)? */
bool orbit__agent_view_stale(struct orbit_agent *a);
/* Free the retired nodes after a grace period (no call_rcu thread). Not on a read side. */
void orbit__agent_view_reclaim(struct orbit_agent *a);

/* ---- agent_death.c ---- */

/* The per-row pidfds, the epoll set and stop eventfd (without those two the tick
 * alone notices deaths). Returns 0 or -ENOMEM. */
int orbit__agent_death_open(struct orbit_agent *a);
/* Start the watcher thread (after the agent thread); refused: the tick notices deaths. */
void orbit__agent_death_start(struct orbit_agent *a);
/* Stop and join the watcher thread (before the agent thread: nothing wakes a stopped agent). */
void orbit__agent_death_stop(struct orbit_agent *a);
/* Close every pidfd, the epoll set and the stop eventfd (after both joins). */
void orbit__agent_death_close(struct orbit_agent *a);
/* Agent thread: watch new members' pidfds, reclaim the dead found on the way. */
void orbit__agent_members_rescan(struct orbit_agent *a);
/* Agent thread: one poll() over the watched pidfds; reclaim the proved dead. */
void orbit__agent_deaths_check(struct orbit_agent *a);
/* Agent thread, after orbit__agent_deaths_check(): re-arm the pidfds that fired. */
void orbit__agent_deaths_rearm(struct orbit_agent *a);
/*
 * Agent thread: free the ORBIT_LOCK_FREE_ON_DEATH leases whose holders the
 * kernel proves gone (orbit__lock_free_dead() through our lock; without
 * one, nothing). After each proved death and at each stats period.
 */
void orbit__agent_free_dead_leases(struct orbit_agent *a);

/* ---- agent_subs.c ---- */

/* Under subs_mu: skip our own wake class exactly while nobody subscribes. */
void orbit__agent_subs_update_skip(struct orbit_agent *a);
/* Agent thread: run every subscriber callback, then write every subscriber eventfd. */
void orbit__agent_subs_signal(struct orbit_agent *a);
/* Close every subscriber eventfd still open, drop the callbacks (stop). */
void orbit__agent_subs_close(struct orbit_agent *a);
/*
 * Any thread: whether this thread is @a's agent thread or is running the
 * callbacks of any agent (then (un)subscribe and stop return -EDEADLK).
 */
bool orbit__agent_in_callback(const struct orbit_agent *a);

/* ---- agent_stats.c ---- */

/* Publish our counters into our stats row (its single writer: the agent thread, or stop). */
void orbit__agent_stats_publish(struct orbit_agent *a);

/* ---- agent_spot_stats.c ---- */

/* The registry for row @row of @st (NULL: no stats row, nothing published). NULL: no memory. */
struct orbit__agent_spots *orbit__agent_spots_new(orbit_stats_t *st, uint32_t row, uint64_t pid,
						  uint64_t start_ticks);
/* After the last publish (stop) or a failed start. NULL: no-op. */
void orbit__agent_spots_free(struct orbit__agent_spots *s);
/* The stats publish: every registered Spot into its slot; *@full = refused registrations. */
void orbit__agent_spots_publish(struct orbit__agent_spots *s, uint64_t *full);
/* Spot hosts and clients that exist now (orbit__agent_spot_hold()). */
unsigned orbit__agent_spots_users(struct orbit__agent_spots *s);

/* ---- agent_loop.c ---- */

/* The agent thread (pthread_create() argument: the agent). */
void *orbit__agent_main(void *agent);

/* ---- agent_test.c ---- */

/* Agent thread, top of its loop: park while a test hook says so. */
void orbit__agent_test_park(struct orbit_agent *a);
/* Stop: wake a parked thread (it sees stop). No-op without a test hook. */
void orbit__agent_test_wake(struct orbit_agent *a);
/* Free the test hook state (after the join). */
void orbit__agent_test_free(struct orbit_agent *a);

#endif /* ORBIT_AGENT_INTERNAL_H */
