// SPDX-License-Identifier: MIT
/*
 * agent/agent.c: the per-process agent (orbit/agent.h): start and stop,
 * the fork trap, attaching the lock-to-ring wiring (shm/lock_ring.h) and
 * the small calls. It owns the process's member directory row, its ring
 * writer lane, its stats row and TWO threads: the agent thread (agent_loop.c), which drains the ring into the
 * RCU view of lock states (agent_view.c), signals the subscribers
 * (agent_subs.c), reclaims the dead members the death watcher thread
 * (agent_death.c) or its tick finds, and publishes the stats row
 * (agent_stats.c). agent_internal.h has the state, its locks and the
 * entry points between these files.
 *
 * Fork: an agent belongs to the process that started it. In a forked child
 * every call on it returns -ECHILD and orbit_agent_stop() does nothing: its
 * threads are not there, and its fds (the watcher's stop eventfd, the
 * subscribers' eventfds) and segments are the parent's open file
 * descriptions and rows, so touching them would act on the parent (a write
 * to the stop eventfd stopped the parent's watcher). The child starts an
 * agent of its own; liburcu's fork hooks (lib/rcu.c) make that safe.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <orbit/agent.h>
#include <orbit/error.h>

#include "agent/agent_internal.h"
#include "agent/agent_watch.h"
#include "agent/spot.h"
#include "base/fork_guard.h"
#include "base/options.h"
#include "shm/lock_internal.h"

#define die_on orbit__die_on

/* ---- the fork trap ---- */

/* 0, -EINVAL (NULL) or -ECHILD (@a was started by the parent of this forked process). */
static int agent_check(const struct orbit_agent *a)
{
	if (!a)
		return -EINVAL;
	return orbit__fork_check(a->pid); /* shm's one fork guard: no syscall */
}

int orbit__agent_check(const orbit_agent_t *a)
{
	return agent_check(a);
}

/* ---- API ---- */

static void agent_free(struct orbit_agent *a)
{
	orbit__agent_view_close(a);
	orbit__agent_death_close(a);
	free(a->ev);
	orbit__ring_reader_close(a->reader);
	orbit__lock_ring_release(&a->wire);
	orbit__ring_close(a->ring);
	if (a->have_stats_row || a->stats.body)
		orbit__stats_close(&a->stats);
	orbit__members_close(a->members); /* leaves the row */
	orbit_lock_close(a->ro_lock);
	orbit__agent_subs_close(a);
	orbit__agent_watch_free(a->watched); /* after the last publish (stop) */
	orbit__agent_spots_free(a->spots);   /* likewise */
	orbit__agent_test_free(a);
	pthread_mutex_destroy(&a->subs_mu);
	free(a);
}

void orbit_agent_options_init(struct orbit_agent_options *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
}

int orbit_agent_start(const struct orbit_agent_options *user, orbit_agent_t **out)
{
	struct orbit_agent_options copy, *opts = &copy;
	struct orbit_lock_layout lay;
	struct orbit_seg_opts so = { .how = ORBIT_SEG_OPEN_OR_CREATE };
	const struct orbit_lock_layout *ll = NULL;
	const char *fleet = "default", *name = "agent";
	struct orbit_ring_layout rl;
	char buf[ORBIT_SEG_NAME_MAX];
	struct orbit_agent *a;
	sigset_t all, old;
	uint64_t ticks = 0;
	int rc;

	if (!out)
		return -EINVAL;
	orbit_agent_options_init(opts);
	rc = user ? ORBIT__OPTS_COPY(opts, user) : 0; /* base/options.h rule */
	if (!rc && opts->layout)
		rc = orbit__lock_layout_copy(&lay, opts->layout);
	if (rc)
		return rc;
	ll = opts->layout ? &lay : NULL;
	if (opts && opts->fleet)
		fleet = opts->fleet;
	if (opts && opts->name)
		name = opts->name;
	if (orbit__seg_name(buf, sizeof(buf), fleet, "x") < 0)
		return -EINVAL;
	if (opts && opts->lock && !orbit__lock_is_shm(opts->lock))
		return -EOPNOTSUPP; /* an etcd lock has no SHM table, ring or sink to wire */
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
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->pid = orbit__self_pid();
	die_on(pthread_mutex_init(&a->subs_mu, NULL), "mutex init");
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
	so.owner_uid = a->owner_uid = opts ? opts->owner_uid : 0;
	so.init_timeout_ms = opts->init_timeout_ms; /* members, stats, ring alike */
	a->row = -1;
	a->epfd = -1; /* until orbit__agent_death_open(): agent_free() closes none */
	a->death_stop = -1;

	rc = orbit__members_open(&a->members, fleet, 0, &so);
	if (rc < 0) {
		a->members = NULL;
		goto err;
	}
	rc = orbit__agent_death_open(a); /* the pidfd table; the watcher's epoll set if it can */
	if (rc < 0)
		goto err;
	a->ev = malloc(sizeof(*a->ev));
	a->watched = orbit__agent_watch_new();
	rc = -ENOMEM;
	if (!a->ev || !a->watched)
		goto err;
	rc = orbit__members_join(a->members, name);
	if (rc < 0)
		goto err;
	a->row = rc;

	rc = orbit__stats_open(&a->stats, fleet, &so);
	if (rc < 0)
		goto err;
	orbit__proc_start_time(getpid(), &ticks);
	a->have_stats_row = orbit__stats_claim(&a->stats, (uint32_t)a->row, (uint64_t)getpid(),
					       ticks) == 0;
	a->spots = orbit__agent_spots_new(a->have_stats_row ? &a->stats : NULL, (uint32_t)a->row,
					  (uint64_t)getpid(), ticks);
	if (!a->spots) {
		rc = -ENOMEM;
		goto err;
	}

	/* One ring per layout: the agent's lane is on its lock's ring. */
	orbit__fleet_ring_layout(&rl, &a->layout);
	rc = orbit__ring_open(&a->ring, fleet, &rl, &so);
	if (rc < 0) {
		a->ring = NULL;
		goto err;
	}
	/* Lanes are for writers: only a process that hands us its lock writes frames. */
	if (a->lock) {
		/* At most a quarter lane of our frames waits for our next wake
		 * while they skip it (struct orbit_agent), so it never laps us. */
		rc = orbit__lock_ring_claim(&a->wire, a->ring, a->members, rl.frames_per_lane / 4);
		if (rc < 0)
			goto err;
	}
	rc = orbit__ring_reader_open(&a->reader, a->ring);
	if (rc < 0) {
		a->reader = NULL;
		goto err;
	}
	a->wake_class = orbit__doorbell_bit((uint32_t)a->row);
	orbit__ring_reader_set_wake_class(a->reader, a->wake_class);
	orbit__agent_subs_update_skip(a); /* no subscriber yet; the thread is not started */
	rc = orbit__agent_view_open(a);
	if (rc < 0)
		goto err;

	/* Our threads take no signal: they belong to the application's threads. */
	sigfillset(&all);
	die_on(pthread_sigmask(SIG_SETMASK, &all, &old), "sigmask");
	rc = -pthread_create(&a->thread, NULL, orbit__agent_main, a);
	if (rc == 0) {
		a->thread_started = true;
		/* The agent thread first: it fills the epoll set the watcher sleeps on */
		orbit__agent_death_start(a);
	}
	die_on(pthread_sigmask(SIG_SETMASK, &old, NULL), "sigmask");
	if (rc < 0)
		goto err; /* no thread started */
	if (a->wire.lane_claimed) {
		/* Safe while other threads use the lock; never waits for another
		 * process. -EBUSY: the handle serves another agent; -ECHILD: a
		 * forked child holding its parent's handle. */
		rc = orbit__lock_ring_attach(&a->wire, a->lock);
		if (rc < 0) {
			orbit_agent_stop(a);
			return rc;
		}
	}
	if (a->lock) {
		uint32_t gen;

		/* Our tenure for ORBIT_LOCK_FREE_ON_DEATH leases taken through the lock */
		if (orbit__members_self(a->members, &gen) >= 0) {
			a->member_gen = gen;
			orbit__lock_set_member(a->lock, a->row, gen);
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

int orbit_agent_stop(orbit_agent_t *a)
{
	int rc = agent_check(a);

	if (rc < 0) /* NULL, or the parent's agent in a forked child: nothing of it is ours */
		return rc == -EINVAL ? 0 : rc;
	/* From a callback: the join below would wait for ourselves (or, on
	 * another agent, for a thread that may wait for the subs_mu we hold). */
	if (orbit__agent_in_callback(a))
		return -EDEADLK;
	/* A Spot host or client still uses our members, lock and registry */
	if (orbit__agent_spots_users(a->spots))
		return -EBUSY;
	orbit__agent_death_stop(a);
	/* Removes our sink only (another agent's on the same handle stays);
	 * returns once no thread is inside it, so freeing a is safe. */
	orbit__lock_ring_detach(&a->wire);
	/* Before we leave the row: no new FREE_ON_DEATH lease names it */
	if (a->lock)
		orbit__lock_clear_member(a->lock, a->row, a->member_gen);
	if (a->thread_started) {
		/* AG-R1: release, pairs with AG-A1 in orbit__agent_main() (agent_loop.c). */
		atomic_store_explicit(&a->stop, 1, memory_order_release);
		/* Wakes every agent of the fleet once; ours sees stop, others rescan. */
		orbit__doorbell_ring(orbit__ring_doorbell(a->ring));
		/* A thread parked by a test hook sees stop too. */
		orbit__agent_test_wake(a);
		die_on(pthread_join(a->thread, NULL), "join");
		a->thread_started = false;
	}
	orbit__agent_stats_publish(a); /* the thread is joined: we are the row's writer now */
	agent_free(a);
	return 0;
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

/* The handles a Spot host or client runs on (agent/spot.h). */
int orbit__agent_spot_env(orbit_agent_t *a, struct orbit__agent_spot_env *out)
{
	int rc = orbit__agent_check(a); /* NULL, or the parent's agent in a forked child */

	if (rc)
		return rc;
	if (!out)
		return -EINVAL;
	out->fleet = a->fleet;
	out->members = a->members;
	out->lock = a->lock;
	out->row = a->row;
	out->wake_class = a->wake_class;
	return 0;
}
