// SPDX-License-Identifier: MIT
/*
 * agent/agent.c: the per-process agent (orbit/agent.h). It owns the
 * process's member directory row, its ring writer lane, its stats row and
 * TWO threads. The agent thread sleeps on the ring's futex doorbell at most
 * a tick, drains the ring into an RCU-protected view of lock states
 * (liburcu rculfhash in the library's RCU flavour, lib/rcu.h; this thread
 * is the only updater),
 * writes every subscriber's eventfd, checks the pidfds of the other
 * members and reclaims the rows and lanes of the dead (the member directory
 * proves the death with its kernel locks), and publishes the stats row (it
 * is that row's single writer). The death watcher thread only sleeps in
 * epoll_wait() on those pidfds: when one becomes readable (that process
 * exited) it marks the row and wakes the agent thread through the doorbell,
 * as our own wake class only, so a death is checked at once and not at the
 * next tick (the futex wait cannot also poll fds). The tick check stays as
 * the fallback (no epoll, a pidfd epoll refused, a death proof retried).
 *
 * Fork: an agent belongs to the process that started it. In a forked child
 * every call on it returns -ECHILD and orbit_agent_stop() does nothing: its
 * threads are not there, and its fds (the watcher's stop eventfd, the
 * subscribers' eventfds) and segments are the parent's open file
 * descriptions and rows, so touching them would act on the parent (a write
 * to the stop eventfd stopped the parent's watcher). The child starts an
 * agent of its own; liburcu's fork hooks (lib/rcu.c) make that safe.
 *
 * Locks and what they protect:
 *   subs_mu   the subscriber eventfd array. Taken by API callers and by the
 *             agent thread while it writes the eventfds; nothing else is
 *             taken or called under it (leaf).
 *   watched   (agent_watch.c) the set's own mutex: watch/unwatch callers
 *             and publish_stats(); leaf, never taken with subs_mu.
 *   test_mu   test_pause and test_parked (test hooks only, see
 *             fleet_internal.h); leaf. A parked thread waits on test_cv
 *             holding nothing else.
 * The view needs no lock: one updater (the agent thread), RCU readers.
 * The epoll set needs none either: the agent thread alone adds, re-arms
 * and deletes pidfds (the kernel makes epoll_ctl() safe against the
 * watcher's concurrent epoll_wait()); the watcher only waits on it.
 * Counters fed from other threads (frames_written by the lock sink,
 * the acquire histogram) are relaxed atomics: they are counts, read once
 * per publish, and order nothing.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <orbit/agent.h>
#include <orbit/error.h>

#include "agent/agent_watch.h"
#include "agent/fleet_internal.h"
#include "lib/rcu.h"
#include "shm/lock_internal.h"
#include "shm/members.h"
#include "shm/ring.h"
#include "shm/stats.h"

/*
 * liburcu is not built with TSan: its publication (rcu_assign_pointer) and
 * grace periods (membarrier) are invisible to it. Under TSan we state the
 * same edges with annotations; elsewhere they compile to nothing.
 */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#define TSAN_RELEASE(p) __tsan_release((void *)(p))
#else
#define TSAN_ACQUIRE(p) ((void)(p))
#define TSAN_RELEASE(p) ((void)(p))
#endif

#define AGENT_MAX_SUBS 64
#define AGENT_VIEW_BUCKETS 1024
#define AGENT_TOMBSTONES_MAX 1024
#define AGENT_DRAIN_BATCH ORBIT__AGENT_DRAIN_BATCH /* fleet_internal.h */
#define AGENT_RETIRED_MAX 256  /* retired nodes that force a grace period before the tick */
#define AGENT_DEATH_STOP UINT64_MAX /* epoll data of the watcher's stop eventfd (rows are below) */

/* A view node: the last known state of one key (ns | label | owner bytes). */
struct view_node {
	struct cds_lfht_node node;
	uint64_t hash;
	uint64_t token;
	uint64_t deadline_ns;
	uint64_t revision;
	uint64_t epoch;           /* resync pass that last confirmed it */
	uint32_t writer_pid;
	uint32_t ns_len, label_len, owner_len;
	bool held;                /* false: a tombstone keeping the revision */
	struct view_node *next_free; /* retired list, agent thread only */
	uint8_t bytes[];
};

struct watch {
	int pidfd;                /* -1: not watched */
	uint32_t generation;
};

struct orbit_agent {
	char fleet[ORBIT_FLEET_NAME_MAX + 1];
	unsigned fork_gen;        /* agent_fork_gen at start: another value = a forked child */
	orbit_lock_t *lock;       /* caller's, optional */
	orbit_lock_t *ro_lock;    /* ours, read-only, for resync when lock is NULL */
	struct orbit_lock_layout layout; /* the fleet's: names the table and the ring */
	unsigned mode, gid;       /* the fleet's permissions (orbit_agent_options) */
	uint64_t tick_ns, stats_ns;
	orbit_members_t *members;
	int row;
	orbit_stats_t stats;
	bool have_stats_row;
	orbit_ring_t *ring;
	struct orbit_ring_sink sink;
	bool lane_claimed;
	orbit_ring_reader_t *reader;   /* the agent thread's cursor */
	uint32_t wake_class;           /* our doorbell class (orbit__doorbell_bit(row)) */
	/*
	 * Our own frames skip our class's wake while we have no subscriber
	 * (skip_own = wake_class, else 0; written under subs_mu): we would only
	 * update the view, and on the CPU the other processes' agents need. At
	 * most own_unseen_max of them wait for our next wake (other frames, a
	 * join, the tick), so our lane never laps us. Both relaxed: a hint and
	 * a count, read by the publishing thread in agent_sink().
	 */
	_Atomic uint32_t skip_own;
	_Atomic uint32_t own_unseen;
	uint32_t own_unseen_max;
	struct orbit_ring_event *ev;   /* agent thread's frame buffer */
	struct cds_lfht *view;
	struct view_node *retired;     /* agent thread: free after a grace period */
	uint32_t nretired;             /* length of retired (agent thread) */
	uint64_t resync_epoch;
	int grace;                     /* address of the TSan grace-period edge only */
	uint64_t tombstones;
	uint64_t max_revision;
	uint64_t floor_revision;       /* frames at or below: already in the last resync */
	uint64_t repairs_seen;         /* the table's repair count at the last resync */
	bool resync_due;               /* the last resync's table copy failed: retry */
	struct watch *watch;           /* per member row, agent thread only */
	struct orbit_agent_watch_set *watched; /* queues, pools, lanes (agent_watch.c; own mutex) */
	uint32_t nrows;

	pthread_t thread;
	bool thread_started;
	_Atomic int stop;

	/*
	 * The death watcher: epfd holds the watched pidfds (EPOLLIN |
	 * EPOLLONESHOT, data = row) and death_stop (an eventfd, data =
	 * AGENT_DEATH_STOP). epfd < 0: no watcher (no epoll), the tick alone.
	 * The watcher sets a row's bit in fired[] (relaxed RMW: the bits are
	 * carried by death_pending), then death_pending (release), then wakes
	 * our doorbell class; the agent thread takes death_pending (acquire)
	 * and then the bits.
	 */
	int epfd, death_stop;
	pthread_t death_thread;
	bool death_started;
	_Atomic uint64_t *fired;       /* one bit per member row, (nrows + 63) / 64 words */
	_Atomic bool death_pending;

	/*
	 * Test hooks: the thread parks at the top of its loop while test_pause
	 * is set (its relaxed read there is a hint, re-read under test_mu).
	 */
	pthread_mutex_t test_mu;       /* protects test_pause (writes), test_parked */
	pthread_cond_t test_cv;
	_Atomic bool test_pause;
	bool test_parked;

	pthread_mutex_t subs_mu;       /* protects subs[], nsubs (leaf) */
	int subs[AGENT_MAX_SUBS];
	int nsubs;

	/* Counters. Agent thread only unless _Atomic. */
	_Atomic uint64_t frames_written;
	uint64_t wakeups, signals, reclaimed, view_entries;
	struct orbit_stats_hist_local delivery;
	_Atomic uint64_t acq_count, acq_sum;
	_Atomic uint64_t acq_buckets[ORBIT_STATS_BUCKETS];
};

static void die_on(int rc, const char *what)
{
	if (rc != 0) /* a failing pthread call: a broken invariant of this process */
		abort();
	(void)what;
}

/* ---- the fork trap ---- */

/*
 * Bumped in every forked child (before fork() returns there) by the
 * handler below, so a child tells an inherited agent from its own without
 * a getpid() system call on the lookup path. Relaxed: each process writes
 * its copy while it has one thread, before any of its threads reads it.
 */
static _Atomic unsigned agent_fork_gen;
static pthread_once_t agent_fork_once = PTHREAD_ONCE_INIT;

static void agent_after_fork_child(void)
{
	atomic_fetch_add_explicit(&agent_fork_gen, 1, memory_order_relaxed);
}

static void agent_fork_install(void)
{
	die_on(pthread_atfork(NULL, NULL, agent_after_fork_child), "pthread_atfork");
}

/* 0, -EINVAL (NULL) or -ECHILD (@a was started by the parent of this forked process). */
static int agent_check(const struct orbit_agent *a)
{
	if (!a)
		return -EINVAL;
	if (atomic_load_explicit(&agent_fork_gen, memory_order_relaxed) != a->fork_gen)
		return -ECHILD;
	return 0;
}

int orbit__agent_check(const orbit_agent_t *a)
{
	return agent_check(a);
}

/* ---- the view ---- */

/* The view's key is the lock table's (orbit_lock_key_t), hashed by orbit__lock_hash(). */
static int view_match(struct cds_lfht_node *node, const void *key)
{
	const struct view_node *n = caa_container_of(node, struct view_node, node);
	const orbit_lock_key_t *k = key;

	TSAN_ACQUIRE(n); /* pairs with the TSAN_RELEASE in view_install() */
	return n->ns_len == k->ns_len && n->label_len == k->label_len &&
	       memcmp(n->bytes, k->ns, k->ns_len) == 0 &&
	       memcmp(n->bytes + n->ns_len, k->label, k->label_len) == 0;
}

static struct view_node *node_new(const void *ns, uint32_t ns_len, const void *label,
				  uint32_t label_len, const void *owner, uint32_t owner_len)
{
	struct view_node *n = malloc(sizeof(*n) + ns_len + label_len + owner_len);

	if (!n)
		return NULL;
	memset(n, 0, sizeof(*n));
	cds_lfht_node_init(&n->node);
	n->ns_len = ns_len;
	n->label_len = label_len;
	n->owner_len = owner_len;
	memcpy(n->bytes, ns, ns_len);
	memcpy(n->bytes + ns_len, label, label_len);
	if (owner_len) /* tombstones have no owner (NULL) */
		memcpy(n->bytes + ns_len + label_len, owner, owner_len);
	n->hash = orbit__lock_hash(&(orbit_lock_key_t){ ns, ns_len, label, label_len });
	return n;
}

/* Agent thread, inside rcu read side: install @n, retire what it replaces. */
static void view_install(struct orbit_agent *a, struct view_node *n)
{
	orbit_lock_key_t k = { n->bytes, n->ns_len, n->bytes + n->ns_len, n->label_len };
	struct cds_lfht_node *old;

	TSAN_RELEASE(n); /* the node's bytes before its publication (rcu_assign_pointer) */
	old = cds_lfht_add_replace(a->view, n->hash, view_match, &k, &n->node);

	a->view_entries += n->held;
	a->tombstones += !n->held;
	if (old) {
		struct view_node *o = caa_container_of(old, struct view_node, node);

		a->view_entries -= o->held;
		a->tombstones -= !o->held;
		o->next_free = a->retired;
		a->retired = o;
		a->nretired++;
	}
}

static struct view_node *view_find(struct orbit_agent *a, const orbit_lock_key_t *k)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;

	cds_lfht_lookup(a->view, orbit__lock_hash(k), view_match, k, &it);
	node = cds_lfht_iter_get_node(&it);
	if (!node)
		return NULL;
	TSAN_ACQUIRE(caa_container_of(node, struct view_node, node)); /* as in view_match() */
	return caa_container_of(node, struct view_node, node);
}

/* Agent thread: free retired nodes after a grace period (no call_rcu thread). */
static void view_reclaim(struct orbit_agent *a)
{
	struct view_node *n = a->retired;

	if (!n)
		return;
	a->retired = NULL;
	a->nretired = 0;
	orbit__rcu_synchronize();
	TSAN_ACQUIRE(&a->grace); /* pairs with TSAN_RELEASE in orbit_agent_view_lookup() */
	while (n) {
		struct view_node *next = n->next_free;

		free(n);
		n = next;
	}
}

/* Agent thread, read side: drop tombstones well behind the newest revision. */
static void view_prune(struct orbit_agent *a)
{
	struct cds_lfht_iter it;
	struct view_node *n;

	if (a->tombstones <= AGENT_TOMBSTONES_MAX)
		return;
	cds_lfht_for_each_entry(a->view, &it, n, node) {
		if (!n->held && n->revision + AGENT_TOMBSTONES_MAX < a->max_revision &&
		    cds_lfht_del(a->view, &n->node) == 0) {
			a->tombstones--;
			n->next_free = a->retired;
			a->retired = n;
			a->nretired++;
		}
	}
}

/* Agent thread, read side: apply one frame if it is newer than the view. */
static void view_apply(struct orbit_agent *a, const struct orbit_ring_event *ev)
{
	const uint8_t *ns = ev->bytes, *label = ev->bytes + ev->ns_len;
	orbit_lock_key_t k = { ns, ev->ns_len, label, ev->label_len };
	struct view_node *cur = view_find(a, &k);
	bool held = ev->type == ORBIT_TRANSITION_ACQUIRE || ev->type == ORBIT_TRANSITION_RENEW;
	struct view_node *n;

	if (ev->state_revision > a->max_revision)
		a->max_revision = ev->state_revision;
	if (ev->state_revision <= a->floor_revision)
		return; /* the resync's table copy already has it (or it never committed) */
	if (cur && cur->revision >= ev->state_revision)
		return; /* an older frame from a slower lane */
	n = node_new(ns, ev->ns_len, label, ev->label_len, label + ev->label_len,
		     held ? ev->owner_len : 0);
	if (!n)
		return; /* the view is advisory; a later frame or resync repairs it */
	n->held = held;
	n->token = ev->fencing_token;
	n->deadline_ns = held ? ev->deadline_ns : 0;
	n->revision = ev->state_revision;
	n->writer_pid = ev->writer_pid;
	view_install(a, n);
}

struct resync_ctx {
	struct orbit_agent *a;
	uint64_t revision;
};

static int resync_entry(const struct orbit_lock_entry *e, void *p)
{
	struct resync_ctx *c = p;
	struct view_node *n;

	if (e->expired)
		return 0;
	/* A frame applied before this copy may be newer than the copy's
	 * revision (frames precede commits): keep what it said. */
	orbit_lock_key_t k = { e->bytes, e->ns_len, e->bytes + e->ns_len, e->label_len };
	struct view_node *cur = view_find(c->a, &k);
	if (cur && cur->revision > c->revision)
		return 0; /* and the tombstone pass below skips it as newer too */
	n = node_new(e->bytes, e->ns_len, e->bytes + e->ns_len, e->label_len,
		     e->bytes + e->ns_len + e->label_len, e->owner_len);
	if (!n)
		return 0;
	n->held = true;
	n->token = e->token;
	n->deadline_ns = e->deadline_ns;
	n->revision = c->revision;
	n->epoch = c->a->resync_epoch;
	n->writer_pid = e->holder_pid;
	view_install(c->a, n);
	return 0;
}

/* Agent thread: rebuild the view from the authoritative table (after a lag). */
static void view_resync(struct orbit_agent *a)
{
	struct orbit_lock_options lo = { .size = sizeof(lo), .fleet = a->fleet, .readonly = true,
					 .layout = &a->layout, .mode = a->mode, .gid = a->gid };
	orbit_lock_t *lock = a->lock;
	struct resync_ctx c = { a, 0 };
	struct cds_lfht_iter it;
	struct view_node *n;

	if (!lock && !a->ro_lock && orbit_lock_open(&lo, &a->ro_lock) < 0)
		a->ro_lock = NULL;
	if (!lock)
		lock = a->ro_lock;
	if (!lock)
		return;
	a->resync_epoch++;
	/* relaxed: a hint to resync again, read before the copy it triggers */
	a->repairs_seen = atomic_load_explicit(&orbit__lock_hdr(lock)->repairs, memory_order_relaxed);
	/* Entries found are at least as new as this revision. */
	c.revision = orbit_lock_state_revision(lock);
	orbit__rcu_read_lock();
	a->resync_due = true; /* until the copy below succeeds (-EAGAIN: retried next drain) */
	if (orbit_lock_foreach(lock, resync_entry, &c) >= 0) {
		a->resync_due = false;
		a->floor_revision = c.revision;
		/* Held entries the table no longer has become tombstones. */
		cds_lfht_for_each_entry(a->view, &it, n, node) {
			struct view_node *t;

			if (!n->held || n->epoch == a->resync_epoch || n->revision > c.revision)
				continue;
			t = node_new(n->bytes, n->ns_len, n->bytes + n->ns_len, n->label_len, NULL, 0);
			if (!t)
				continue;
			t->revision = c.revision;
			t->epoch = a->resync_epoch;
			view_install(a, t);
		}
	}
	orbit__rcu_read_unlock();
}

/* ---- subscribers ---- */

/* Under subs_mu: skip our own wake class exactly while nobody subscribes. */
static void update_skip_own(struct orbit_agent *a)
{
	uint32_t skip = a->nsubs == 0 && a->wake_class != ORBIT_DOORBELL_SHARED ? a->wake_class : 0;

	/* Relaxed: a hint; a publish ordered after subscribe() (happens-before) reads it */
	atomic_store_explicit(&a->skip_own, skip, memory_order_relaxed);
}

static void signal_subscribers(struct orbit_agent *a)
{
	uint64_t one = 1;

	die_on(pthread_mutex_lock(&a->subs_mu), "lock subs");
	for (int i = 0; i < a->nsubs; i++) {
		/* EAGAIN: the counter is at its max, the subscriber is woken anyway. */
		if (write(a->subs[i], &one, sizeof(one)) == (ssize_t)sizeof(one))
			a->signals++;
	}
	die_on(pthread_mutex_unlock(&a->subs_mu), "unlock subs");
}

/* ---- members: death notice and reclaim ---- */

/*
 * Agent thread: (re-)arm @row's pidfd in the watcher's epoll set. Without
 * a watcher, or refused (-ENOMEM, -ENOSPC: the epoll watch limit), the
 * tick's check_deaths() still polls it.
 */
static void death_arm(struct orbit_agent *a, uint32_t row, int op)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT, .data.u64 = row };

	if (a->epfd >= 0)
		(void)epoll_ctl(a->epfd, op, a->watch[row].pidfd, &ev);
}

static void unwatch(struct orbit_agent *a, uint32_t row)
{
	if (a->watch[row].pidfd >= 0) {
		/* Before the close: the watcher never sees an event of a closed fd */
		if (a->epfd >= 0)
			epoll_ctl(a->epfd, EPOLL_CTL_DEL, a->watch[row].pidfd, NULL);
		close(a->watch[row].pidfd);
	}
	a->watch[row].pidfd = -1;
}

/* A member may be dead: prove it (kernel lock), reclaim its row and lanes. */
static void handle_death(struct orbit_agent *a, uint32_t row)
{
	if (orbit__members_is_alive(a->members, row) != 0)
		return; /* alive (or error): keep watching */
	unwatch(a, row);
	if (orbit__members_reclaim(a->members, row) == 1)
		a->reclaimed++;
	orbit__ring_lanes_reclaim_dead(a->ring, a->members);
}

static int rescan_one(void *p, const struct orbit_member_info *mi)
{
	struct orbit_agent *a = p;
	uint32_t gen = 0;
	int fd;

	if (mi->self || mi->row >= a->nrows)
		return 0;
	if (!mi->alive) {
		if (mi->state != ORBIT_MEMBER_FREE)
			handle_death(a, mi->row); /* died before we watched it */
		return 0;
	}
	if (a->watch[mi->row].pidfd >= 0 && a->watch[mi->row].generation == mi->generation)
		return 0;
	unwatch(a, mi->row);
	fd = orbit__members_pidfd_open(a->members, mi->row, &gen);
	if (fd == -ESRCH) {
		handle_death(a, mi->row);
		return 0;
	}
	if (fd < 0)
		return 0; /* -EAGAIN (rewriting) / -ENOSYS: the next rescan retries */
	a->watch[mi->row].pidfd = fd;
	a->watch[mi->row].generation = gen;
	death_arm(a, mi->row, EPOLL_CTL_ADD);
	return 0;
}

static void rescan_members(struct orbit_agent *a)
{
	orbit__members_foreach(a->members, rescan_one, a);
}

/* One poll() over the watched pidfds; POLLIN = that process exited. */
static void check_deaths(struct orbit_agent *a)
{
	struct pollfd pfd[64];
	uint32_t rows[64];
	uint32_t r = 0;

	while (r < a->nrows) {
		int n = 0;

		for (; r < a->nrows && n < 64; r++) {
			if (a->watch[r].pidfd < 0)
				continue;
			pfd[n].fd = a->watch[r].pidfd;
			pfd[n].events = POLLIN;
			pfd[n].revents = 0;
			rows[n++] = r;
		}
		if (n == 0 || poll(pfd, (nfds_t)n, 0) <= 0)
			continue;
		for (int i = 0; i < n; i++)
			if (pfd[i].revents)
				handle_death(a, rows[i]);
	}
}

/*
 * Agent thread, after check_deaths(): the rows whose pidfd fired and that
 * are still watched. Not readable (a spurious event, or the row's new
 * pidfd, armed already): re-arm. Readable but not proved dead (the kernel
 * lock still held): left disarmed, or the watcher would wake us in a loop;
 * the tick's check_deaths() retries the proof, as before the watcher.
 */
static void death_rearm(struct orbit_agent *a)
{
	for (uint32_t w = 0; w < (a->nrows + 63) / 64; w++) {
		/* Relaxed: the bits ride on death_pending, taken (acquire) by the caller */
		uint64_t bits = atomic_exchange_explicit(&a->fired[w], 0, memory_order_relaxed);

		while (bits) {
			uint32_t row = w * 64 + (uint32_t)__builtin_ctzll(bits);
			struct pollfd pfd = { .fd = a->watch[row].pidfd, .events = POLLIN };

			bits &= bits - 1;
			if (pfd.fd >= 0 && poll(&pfd, 1, 0) == 0)
				death_arm(a, row, EPOLL_CTL_MOD);
		}
	}
}

/* The death watcher thread: wait for a pidfd to fire, mark it, wake our agent. */
static void *death_main(void *p)
{
	struct orbit_agent *a = p;
	struct epoll_event ev[16];

	for (;;) {
		int n = epoll_wait(a->epfd, ev, 16, -1);

		if (n < 0 && errno == EINTR)
			continue; /* signals are blocked; a ptrace stop can still interrupt */
		if (n < 0)
			return NULL; /* cannot happen on our own fd; the tick notices deaths */
		for (int i = 0; i < n; i++) {
			uint64_t row = ev[i].data.u64;

			if (row == AGENT_DEATH_STOP)
				return NULL; /* orbit_agent_stop() */
			/* Relaxed RMW: no bit is lost; death_pending below carries them */
			atomic_fetch_or_explicit(&a->fired[row / 64], 1ull << (row % 64),
						 memory_order_relaxed);
		}
		if (n == 0)
			continue;
		/* Release, pairs with the acquire exchange in agent_main(): the bits above */
		atomic_store_explicit(&a->death_pending, true, memory_order_release);
		/*
		 * Our class only: other processes' agents have their own watchers.
		 * The seq bump (D1) comes after the store above: an agent thread that
		 * armed before it is woken, one that arms after it sees the flag.
		 */
		orbit__doorbell_wake_class(orbit__ring_doorbell(a->ring), a->wake_class);
	}
}

/* ---- stats ---- */

static void publish_stats(struct orbit_agent *a)
{
	struct orbit_stats_snapshot s;
	struct orbit_ring_reader_counters rc;
	struct orbit_lock_stats ls;
	uint64_t *c = s.counters;

	if (!a->have_stats_row)
		return;
	memset(&s, 0, sizeof(s));
	if (a->lock && orbit_lock_stats(a->lock, &ls) == 0) {
		c[ORBIT_STAT_LOCK_ACQUIRED] = ls.acquired;
		c[ORBIT_STAT_LOCK_BUSY] = ls.busy;
		c[ORBIT_STAT_LOCK_RENEWED] = ls.renewed;
		c[ORBIT_STAT_LOCK_RELEASED] = ls.released;
		c[ORBIT_STAT_LOCK_WRONG_OWNER] = ls.wrong_owner;
		c[ORBIT_STAT_LOCK_NOT_HELD] = ls.not_found;
		c[ORBIT_STAT_LOCK_FULL] = ls.full;
		c[ORBIT_STAT_LOCK_EXPIRED_RECLAIMED] = ls.reclaimed;
		c[ORBIT_STAT_LOCK_FORCE_RELEASED] = ls.force_released;
		c[ORBIT_STAT_CORRUPT_BYTES] = ls.corrupt_slots;
	}
	orbit__ring_reader_counters(a->reader, &rc);
	/* Relaxed: a count read once per publish; orders nothing. */
	c[ORBIT_STAT_FRAMES_WRITTEN] = atomic_load_explicit(&a->frames_written, memory_order_relaxed);
	c[ORBIT_STAT_FRAMES_READ] = rc.read;
	c[ORBIT_STAT_FRAMES_LAGGED] = rc.lagged;
	c[ORBIT_STAT_CORRUPT_BYTES] += rc.corrupt;
	c[ORBIT_STAT_WAKEUPS] = a->wakeups;
	c[ORBIT_STAT_SUBSCRIBER_SIGNALS] = a->signals;
	c[ORBIT_STAT_MEMBERS_RECLAIMED] = a->reclaimed;
	c[ORBIT_STAT_VIEW_ENTRIES] = a->view_entries;
	orbit__agent_watch_sum(a->watched, c); /* watched queues, pools, lanes (agent_watch.c) */
	/* Relaxed: counts added by any thread; a publish may miss the newest. */
	s.hists[ORBIT_HIST_ACQUIRE_NS].count = atomic_load_explicit(&a->acq_count, memory_order_relaxed);
	s.hists[ORBIT_HIST_ACQUIRE_NS].sum_ns = atomic_load_explicit(&a->acq_sum, memory_order_relaxed);
	for (unsigned b = 0; b < ORBIT_STATS_BUCKETS; b++)
		s.hists[ORBIT_HIST_ACQUIRE_NS].buckets[b] =
			atomic_load_explicit(&a->acq_buckets[b], memory_order_relaxed);
	s.hists[ORBIT_HIST_DELIVERY_NS] = a->delivery;
	orbit__stats_publish(&a->stats, (uint32_t)a->row, &s);
}

/* ---- the thread ---- */

/*
 * A repair without a REPAIR frame (the repairing handle had no sink): the
 * table's shared repair count moved since our last resync. relaxed: a hint.
 */
static bool repaired_since_resync(struct orbit_agent *a)
{
	orbit_lock_t *lock = a->lock ? a->lock : a->ro_lock;

	return lock && atomic_load_explicit(&orbit__lock_hdr(lock)->repairs,
					    memory_order_relaxed) != a->repairs_seen;
}

/*
 * Drain the ring; returns 1 when something was read or lost, 2 when the
 * batch bound stopped it with frames possibly left (drain again at once).
 */
static int drain(struct orbit_agent *a)
{
	/* Relaxed: a hint (see struct orbit_agent) */
	uint32_t skip_own = atomic_load_explicit(&a->skip_own, memory_order_relaxed);
	int any = 0, lagged = 0, i;
	uint32_t lane;

	/* Relaxed: a count; frames the sink counts after this are read below or next time */
	atomic_store_explicit(&a->own_unseen, 0, memory_order_relaxed);
	orbit__rcu_read_lock();
	for (i = 0; i < AGENT_DRAIN_BATCH; i++) {
		int rc = orbit__ring_reader_next(a->reader, a->ev, &lane);

		if (rc == -EAGAIN)
			break;
		any = 1;
		if (rc == -ORBIT_ELAGGED) {
			lagged = 1;
			continue;
		}
		if (rc < 0)
			continue; /* corrupt frame: skipped and counted by the reader */
		/* Our own frames, skipped while nobody subscribes, would time the skip */
		if (a->ev->publish_ns && !(skip_own && a->lane_claimed && lane == a->sink.lane)) {
			uint64_t now = orbit__now_mono_ns();

			orbit__stats_hist_add(&a->delivery, now > a->ev->publish_ns ?
						  now - a->ev->publish_ns : 0);
		}
		if (a->ev->flags & ORBIT_RING_F_TRUNCATED)
			lagged = 1; /* key bytes cut: only the table knows */
		else if (a->ev->type == ORBIT_TRANSITION_REPAIR)
			lagged = 1; /* a mutator died: its frames may not have committed */
		else
			view_apply(a, a->ev);
	}
	view_prune(a);
	orbit__rcu_read_unlock();
	if (lagged || a->resync_due || repaired_since_resync(a))
		view_resync(a);
	if (i == AGENT_DRAIN_BATCH)
		return 2;
	return any; /* the caller frees what was replaced, after signalling */
}

/* Test hook: park until orbit__agent_test_resume() or stop (see fleet_internal.h). */
static void test_park(struct orbit_agent *a)
{
	die_on(pthread_mutex_lock(&a->test_mu), "lock test");
	/* Relaxed under test_mu: the mutex orders it; stop as in agent_main() */
	while (atomic_load_explicit(&a->test_pause, memory_order_relaxed) &&
	       !atomic_load_explicit(&a->stop, memory_order_acquire)) {
		a->test_parked = true;
		die_on(pthread_cond_broadcast(&a->test_cv), "broadcast test");
		die_on(pthread_cond_wait(&a->test_cv, &a->test_mu), "wait test");
	}
	a->test_parked = false;
	die_on(pthread_mutex_unlock(&a->test_mu), "unlock test");
}

/*
 * The loop keeps the wake path (futex return -> drain -> eventfd writes ->
 * back to sleep) free of other system calls: the grace period that frees
 * replaced view nodes (membarrier: an IPI to every CPU running one of our
 * threads, e.g. the subscriber just woken) and the pidfd poll run once per
 * tick, or sooner when AGENT_RETIRED_MAX nodes wait. A pidfd that fired
 * (death_pending, set by the death watcher, which also woke us) makes the
 * pidfd poll run at once. The sleep ends at the next tick, so deaths are
 * still checked at least once per tick however often frames wake the thread.
 */
static void *agent_main(void *p)
{
	struct orbit_agent *a = p;
	uint64_t next_stats = 0, next_tick = 0;
	bool woke = false;

	rescan_members(a);
	view_resync(a);
	view_reclaim(a);
	/* Acquire, pairs with the release store in orbit_agent_stop(). */
	while (!atomic_load_explicit(&a->stop, memory_order_acquire)) {
		bool died;
		uint32_t seen;
		int drained;
		uint64_t now;

		/* Relaxed: a test hook's hint, re-read under test_mu in test_park() */
		if (atomic_load_explicit(&a->test_pause, memory_order_relaxed))
			test_park(a);
		seen = orbit__ring_reader_arm(a->reader);
		drained = drain(a); /* after arming: a frame published meanwhile ends the wait */

		if (drained)
			signal_subscribers(a);
		else if (woke)
			rescan_members(a); /* a wake without frames: a join, leave or stop */
		now = orbit__now_mono_ns();
		/* After the signal: the grace period is not on the wake path. */
		if (now >= next_tick || a->nretired >= AGENT_RETIRED_MAX)
			view_reclaim(a);
		/*
		 * Acquire, pairs with the release store in death_main(): its fired[]
		 * bits. After the arm above: a watcher that set it later also bumped
		 * the seq after our arm, so the wait below returns at once.
		 */
		died = atomic_exchange_explicit(&a->death_pending, false, memory_order_acquire);
		if (died || now >= next_tick)
			check_deaths(a);
		if (died)
			death_rearm(a);
		if (now >= next_tick)
			next_tick = now + a->tick_ns;
		if (now >= next_stats) {
			rescan_members(a);
			orbit__members_heartbeat(a->members);
			publish_stats(a);
			next_stats = now + a->stats_ns;
		}
		if (atomic_load_explicit(&a->stop, memory_order_acquire)) /* as above */
			break;
		if (drained == 2) { /* the batch bound left frames: no sleep */
			woke = false;
			continue;
		}
		woke = orbit__ring_reader_wait(a->reader, seen, (int64_t)(next_tick - now)) == 0;
		a->wakeups += woke;
	}
	return NULL;
}

/* Counts frames this process writes, then hands the frame to the ring. */
static void agent_sink(void *ctx, const struct orbit_transition *t)
{
	struct orbit_agent *a = ctx;
	/* Relaxed: a hint (see struct orbit_agent) */
	uint32_t skip = atomic_load_explicit(&a->skip_own, memory_order_relaxed);

	/* Relaxed: a statistics count. */
	atomic_fetch_add_explicit(&a->frames_written, 1, memory_order_relaxed);
	/* Relaxed: a count; past the bound our agent is woken like everyone */
	if (skip && atomic_fetch_add_explicit(&a->own_unseen, 1, memory_order_relaxed) >=
			    a->own_unseen_max)
		skip = 0;
	orbit__ring_sink_skip(&a->sink, t, skip);
}

/* ---- API ---- */

static void agent_free(struct orbit_agent *a)
{
	if (a->view) {
		struct cds_lfht_iter it;
		struct view_node *n;

		/* No reader or updater is left: the thread is joined (see stop()). */
		orbit__rcu_read_lock();
		cds_lfht_for_each_entry(a->view, &it, n, node) {
			if (cds_lfht_del(a->view, &n->node) == 0) {
				n->next_free = a->retired;
				a->retired = n;
			}
		}
		orbit__rcu_read_unlock();
		view_reclaim(a);
		cds_lfht_destroy(a->view, NULL);
	}
	if (a->watch)
		for (uint32_t r = 0; r < a->nrows; r++)
			unwatch(a, r);
	free(a->watch);
	if (a->epfd >= 0) /* after the unwatch (its DELs) and the watcher's join */
		close(a->epfd);
	if (a->death_stop >= 0)
		close(a->death_stop);
	free((void *)a->fired);
	free(a->ev);
	orbit__ring_reader_close(a->reader);
	if (a->lane_claimed)
		orbit__ring_lane_release(a->ring, a->members, a->sink.lane);
	orbit__ring_close(a->ring);
	if (a->have_stats_row || a->stats.body)
		orbit__stats_close(&a->stats);
	orbit__members_close(a->members); /* leaves the row */
	orbit_lock_close(a->ro_lock);
	for (int i = 0; i < a->nsubs; i++)
		close(a->subs[i]);
	orbit__agent_watch_free(a->watched); /* after the last publish (stop) */
	pthread_mutex_destroy(&a->subs_mu);
	pthread_cond_destroy(&a->test_cv);
	pthread_mutex_destroy(&a->test_mu);
	free(a);
}

/*
 * The watcher's epoll set and its stop eventfd. When either cannot be had
 * (-ENOSYS on an old kernel, -EPERM from a seccomp filter, no fd, the
 * epoll watch limit) the agent runs without a watcher: the tick notices
 * deaths, as before it. Never fails the start.
 */
static void death_open(struct orbit_agent *a)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = AGENT_DEATH_STOP };

	a->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (a->epfd < 0)
		return;
	a->death_stop = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (a->death_stop < 0 || epoll_ctl(a->epfd, EPOLL_CTL_ADD, a->death_stop, &ev) < 0) {
		close(a->epfd);
		a->epfd = -1; /* death_stop is closed by agent_free() */
	}
}

int orbit_agent_start(const struct orbit_agent_options *opts, orbit_agent_t **out)
{
	struct orbit_seg_opts so = { .how = ORBIT_SEG_OPEN_OR_CREATE };
	const struct orbit_lock_layout *ll = opts ? opts->layout : NULL;
	const char *fleet = "default", *name = "agent";
	struct orbit_ring_layout rl;
	char buf[ORBIT_SEG_NAME_MAX];
	struct orbit_agent *a;
	sigset_t all, old;
	uint64_t ticks = 0;
	int rc;

	if (!out || (opts && opts->size < sizeof(*opts)))
		return -EINVAL;
	if (opts && opts->fleet)
		fleet = opts->fleet;
	if (opts && opts->name)
		name = opts->name;
	if (orbit__seg_name(buf, sizeof(buf), fleet, "x") < 0)
		return -EINVAL;
	if (opts && opts->lock) {
		/* The lock's layout names the ring its transitions go to. */
		const struct orbit_lock_layout *own = orbit__lock_layout(opts->lock);

		/* Before anything is made: the parent's handle (-ECHILD), or one of
		 * another fleet (-EINVAL: its transitions would go to our ring) */
		rc = orbit__lock_check_attach(opts->lock, fleet);
		if (rc < 0)
			return rc;
		if (ll && (ll->state_kind != own->state_kind || ll->ring_kind != own->ring_kind ||
			   ll->slots != own->slots || ll->ring_frames != own->ring_frames ||
			   ll->ring_frame_bytes != own->ring_frame_bytes))
			return -EINVAL;
		ll = own;
	}
	if (ll && ll->size < sizeof(*ll))
		return -EINVAL;
	die_on(pthread_once(&agent_fork_once, agent_fork_install), "pthread_once");
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	/* Relaxed: this process's own counter (see agent_fork_gen) */
	a->fork_gen = atomic_load_explicit(&agent_fork_gen, memory_order_relaxed);
	die_on(pthread_mutex_init(&a->subs_mu, NULL), "mutex init");
	die_on(pthread_mutex_init(&a->test_mu, NULL), "mutex init");
	die_on(pthread_cond_init(&a->test_cv, NULL), "cond init");
	strcpy(a->fleet, fleet); /* length checked by orbit__seg_name */
	a->lock = opts ? opts->lock : NULL;
	if (ll) {
		a->layout = *ll;
		a->layout.size = sizeof(a->layout);
	} else {
		a->layout = (struct orbit_lock_layout)ORBIT_LOCK_LAYOUT_DEFAULT_INIT;
	}
	a->tick_ns = (uint64_t)(opts && opts->tick_ms ? opts->tick_ms : 10) * 1000000ull;
	a->stats_ns = (uint64_t)(opts && opts->stats_ms ? opts->stats_ms : 250) * 1000000ull;
	so.mode = a->mode = opts ? opts->mode : 0;
	so.gid = a->gid = opts ? opts->gid : 0;
	a->row = -1;
	a->epfd = -1;
	a->death_stop = -1;

	rc = orbit__members_open(&a->members, fleet, 0, &so);
	if (rc < 0) {
		a->members = NULL;
		goto err;
	}
	a->nrows = orbit__members_rows(a->members);
	a->watch = calloc(a->nrows, sizeof(*a->watch));
	/* Before any goto err: agent_free() closes every pidfd >= 0 (calloc: fd 0) */
	for (uint32_t r = 0; a->watch && r < a->nrows; r++)
		a->watch[r].pidfd = -1;
	a->fired = calloc((a->nrows + 63) / 64, sizeof(*a->fired));
	a->ev = malloc(sizeof(*a->ev));
	a->watched = orbit__agent_watch_new();
	rc = -ENOMEM;
	if (!a->watch || !a->fired || !a->ev || !a->watched)
		goto err;
	death_open(a);
	rc = orbit__members_join(a->members, name);
	if (rc < 0)
		goto err;
	a->row = rc;

	rc = orbit__stats_open(&a->stats, fleet, &so);
	if (rc < 0)
		goto err;
	orbit__proc_start_time(getpid(), &ticks);
	a->have_stats_row = orbit__stats_claim(&a->stats, (uint32_t)a->row,
					       (uint64_t)getpid(), ticks) == 0;

	/* One ring per layout: the agent's lane is on its lock's ring. */
	orbit__fleet_ring_layout(&rl, &a->layout);
	rc = orbit__ring_open(&a->ring, fleet, &rl, &so);
	if (rc < 0) {
		a->ring = NULL;
		goto err;
	}
	/* Lanes are for writers: only a process that hands us its lock writes frames. */
	if (a->lock) {
		rc = orbit__ring_lane_claim(a->ring, a->members);
		if (rc < 0)
			goto err;
		a->sink.ring = a->ring;
		a->sink.lane = (uint32_t)rc;
		a->lane_claimed = true;
	}
	rc = orbit__ring_reader_open(&a->reader, a->ring);
	if (rc < 0) {
		a->reader = NULL;
		goto err;
	}
	a->wake_class = orbit__doorbell_bit((uint32_t)a->row);
	orbit__ring_reader_set_wake_class(a->reader, a->wake_class);
	a->own_unseen_max = rl.frames_per_lane / 4 ? rl.frames_per_lane / 4 : 1;
	update_skip_own(a); /* no subscriber yet; the thread is not started */
	/* Fixed size, no CDS_LFHT_AUTO_RESIZE: resizing would start liburcu's worker thread. */
	orbit__rcu_init(); /* liburcu's fork hooks: a child of ours may start its own agent */
	a->view = cds_lfht_new_flavor(AGENT_VIEW_BUCKETS, AGENT_VIEW_BUCKETS, AGENT_VIEW_BUCKETS, 0,
				      ORBIT__RCU_FLAVOR, NULL);
	rc = -ENOMEM;
	if (!a->view)
		goto err;

	/* Our threads take no signal: they belong to the application's threads. */
	sigfillset(&all);
	die_on(pthread_sigmask(SIG_SETMASK, &all, &old), "sigmask");
	rc = -pthread_create(&a->thread, NULL, agent_main, a);
	if (rc == 0) {
		a->thread_started = true;
		/* The agent thread first: it fills the epoll set the watcher sleeps on */
		/* Refused: no watcher (the epoll set stays unused), the tick notices deaths */
		if (a->epfd >= 0)
			a->death_started = pthread_create(&a->death_thread, NULL, death_main, a) == 0;
	}
	die_on(pthread_sigmask(SIG_SETMASK, &old, NULL), "sigmask");
	if (rc < 0)
		goto err; /* no thread started */
	if (a->lane_claimed) {
		/* Under the lock's serializer: safe while other threads use the lock.
		 * Fails in a forked child holding its parent's handle (-ECHILD). */
		rc = orbit__lock_set_sink(a->lock, agent_sink, a);
		if (rc < 0) {
			orbit_agent_stop(a);
			return rc;
		}
	}
	/* Tell the other agents a member joined (they rescan on an empty wake). */
	orbit__doorbell_ring(orbit__ring_doorbell(a->ring));
	*out = a;
	return 0;

err:
	agent_free(a);
	return rc;
}

/* Stop and join the death watcher (before the agent thread: nothing wakes a stopped agent). */
static void death_watcher_stop(struct orbit_agent *a)
{
	uint64_t one = 1;

	if (!a->death_started)
		return;
	/* Our own eventfd, written once: cannot fail (else the join would hang) */
	die_on(write(a->death_stop, &one, sizeof(one)) != (ssize_t)sizeof(one), "write stop");
	die_on(pthread_join(a->death_thread, NULL), "join watcher");
	a->death_started = false;
}

void orbit_agent_stop(orbit_agent_t *a)
{
	if (agent_check(a) < 0)
		return; /* NULL, or the parent's agent in a forked child: nothing of it is ours */
	death_watcher_stop(a);
	/* Its error is ignored on purpose: even then the sink is removed (no
	 * mutation can run while the serializer fails), so freeing is safe. */
	if (a->lock)
		orbit__lock_set_sink(a->lock, NULL, NULL);
	if (a->thread_started) {
		/* Release, pairs with the acquire loads in agent_main(). */
		atomic_store_explicit(&a->stop, 1, memory_order_release);
		/* Wakes every agent of the fleet once; ours sees stop, others rescan. */
		orbit__doorbell_ring(orbit__ring_doorbell(a->ring));
		/* A thread parked by a test hook sees stop too. */
		die_on(pthread_mutex_lock(&a->test_mu), "lock test");
		die_on(pthread_cond_broadcast(&a->test_cv), "broadcast test");
		die_on(pthread_mutex_unlock(&a->test_mu), "unlock test");
		die_on(pthread_join(a->thread, NULL), "join");
		a->thread_started = false;
	}
	publish_stats(a); /* the thread is joined: we are the row's writer now */
	agent_free(a);
}

int orbit_agent_subscribe(orbit_agent_t *a, int *fd)
{
	int e, rc = agent_check(a);

	if (rc < 0)
		return rc;
	if (!fd)
		return -EINVAL;
	e = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e < 0)
		return -errno;
	die_on(pthread_mutex_lock(&a->subs_mu), "lock subs");
	if (a->nsubs >= AGENT_MAX_SUBS)
		rc = -ENOSPC;
	else
		a->subs[a->nsubs++] = e;
	update_skip_own(a);
	die_on(pthread_mutex_unlock(&a->subs_mu), "unlock subs");
	if (rc < 0) {
		close(e);
		return rc;
	}
	*fd = e;
	return 0;
}

int orbit_agent_unsubscribe(orbit_agent_t *a, int fd)
{
	int rc = agent_check(a);

	if (rc < 0)
		return rc;
	if (fd < 0)
		return -EINVAL;
	rc = -ENOENT;
	die_on(pthread_mutex_lock(&a->subs_mu), "lock subs");
	for (int i = 0; i < a->nsubs; i++) {
		if (a->subs[i] == fd) {
			a->subs[i] = a->subs[--a->nsubs];
			update_skip_own(a);
			rc = 0;
			break;
		}
	}
	die_on(pthread_mutex_unlock(&a->subs_mu), "unlock subs");
	if (rc == 0)
		close(fd);
	return rc;
}

int orbit_agent_reader_open(orbit_agent_t *a, orbit_transition_reader_t **out)
{
	int rc = agent_check(a);

	if (rc < 0)
		return rc;
	if (!out)
		return -EINVAL;
	return orbit__fleet_reader_wrap(a->ring, out);
}

int orbit_agent_view_lookup(orbit_agent_t *a, const orbit_lock_key_t *key,
			    struct orbit_lock_entry *out)
{
	orbit_lock_key_t k;
	struct view_node *n;
	int rc = agent_check(a);

	if (rc < 0)
		return rc;
	if (!key || !out || (!key->ns && key->ns_len) || (!key->label && key->label_len))
		return -EINVAL;
	rc = -ENOENT;
	if (key->ns_len + key->label_len > ORBIT_LOCK_BYTES_MAX)
		return -E2BIG;
	k = *key;
	if (!k.ns)
		k.ns = ""; /* memcmp never sees NULL */
	if (!k.label)
		k.label = "";
	orbit__rcu_read_lock();
	n = view_find(a, &k);
	if (n && n->held) {
		uint32_t len = n->ns_len + n->label_len + n->owner_len;

		if (len > ORBIT_LOCK_BYTES_MAX) {
			rc = -E2BIG;
		} else {
			memset(out, 0, offsetof(struct orbit_lock_entry, bytes));
			out->token = n->token;
			out->deadline_ns = n->deadline_ns;
			out->holder_pid = n->writer_pid;
			out->ns_len = (uint16_t)n->ns_len;
			out->label_len = (uint16_t)n->label_len;
			out->owner_len = (uint16_t)n->owner_len;
			out->expired = n->deadline_ns && n->deadline_ns <= orbit__now_mono_ns();
			memcpy(out->bytes, n->bytes, len);
			rc = 0;
		}
	}
	/* Before the unlock: synchronize_rcu() returns only after that unlock. */
	TSAN_RELEASE(&a->grace); /* our reads before the grace period that frees */
	orbit__rcu_read_unlock();
	return rc;
}

int orbit_agent_record_latency(orbit_agent_t *a, enum orbit_agent_hist hist, uint64_t ns)
{
	int rc = agent_check(a);

	if (rc < 0)
		return rc;
	if (hist != ORBIT_AGENT_HIST_ACQUIRE)
		return -EINVAL;
	/* Relaxed: statistics counts from any thread, read at publish. */
	atomic_fetch_add_explicit(&a->acq_count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&a->acq_sum, ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&a->acq_buckets[orbit__stats_bucket(ns)], 1, memory_order_relaxed);
	return 0;
}

struct orbit_agent_watch_set *orbit__agent_watch_set(orbit_agent_t *a)
{
	return a->watched;
}

int orbit_agent_member_row(const orbit_agent_t *a)
{
	int rc = agent_check(a);

	return rc < 0 ? rc : a->row;
}

int orbit_agent_reset_transport(orbit_agent_t *a)
{
	int rc = agent_check(a);

	if (rc < 0)
		return rc;
	return orbit__fleet_reset(a->members, a->lock, a->ring);
}

/* ---- test hooks (fleet_internal.h) ---- */

void orbit__agent_test_pause(orbit_agent_t *a)
{
	struct timespec until;

	die_on(pthread_mutex_lock(&a->test_mu), "lock test");
	/* Relaxed: read by agent_main() as a hint; test_park() re-reads it under test_mu */
	atomic_store_explicit(&a->test_pause, true, memory_order_relaxed);
	while (!a->test_parked) {
		/* The thread may have armed its wait just before the flag: ring until it parks. */
		orbit__doorbell_ring(orbit__ring_doorbell(a->ring));
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		int rc = pthread_cond_timedwait(&a->test_cv, &a->test_mu, &until);

		die_on(rc == ETIMEDOUT ? 0 : rc, "timedwait test"); /* ETIMEDOUT: ring again */
	}
	die_on(pthread_mutex_unlock(&a->test_mu), "unlock test");
}

void orbit__agent_test_resume(orbit_agent_t *a)
{
	die_on(pthread_mutex_lock(&a->test_mu), "lock test");
	/* Relaxed: under test_mu, which the parked thread re-takes to read it */
	atomic_store_explicit(&a->test_pause, false, memory_order_relaxed);
	die_on(pthread_cond_broadcast(&a->test_cv), "broadcast test");
	die_on(pthread_mutex_unlock(&a->test_mu), "unlock test");
}

void orbit__agent_test_view_apply(orbit_agent_t *a, const struct orbit_ring_event *ev)
{
	orbit__rcu_read_lock();
	view_apply(a, ev);
	orbit__rcu_read_unlock();
}

void orbit__agent_test_view_resync(orbit_agent_t *a)
{
	view_resync(a);
}
