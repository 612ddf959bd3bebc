// SPDX-License-Identifier: MIT
/*
 * agent/agent_watch.c: orbit_agent_watch() and orbit_agent_unwatch():
 * the serial queues, worker pools, state lanes and serial-executor
 * coordinators (Spot, Actor, session) an agent watches, and the per-kind
 * sums of their counters published in its stats row. lib/
 * does not know the stats segment; this file reads the objects through
 * their public stats getters (relaxed loads, no lock) and the agent's
 * publish puts the sums into the row.
 *
 * Each agent owns one watch set (struct orbit_agent_watch_set, made by
 * orbit_agent_start() and freed by orbit_agent_stop(); agent.c hands it
 * out through orbit__agent_watch_set()). Nothing is shared between agents.
 *
 * Locks and what they protect:
 *   set->mu   that set (objects watched, retired sums). Taken by
 *             watch/unwatch callers and by the publishing thread for the
 *             time it reads the watched objects' counters; nothing is
 *             taken under it (the getters are lock-free). Holding it while
 *             reading is what lets unwatch promise that the agent no
 *             longer touches the object.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <orbit/serial_queue.h>
#include <orbit/spot_executor.h>
#include <orbit/state_lane.h>
#include <orbit/worker_pool.h>

#include "agent/agent_watch.h"
#include "base/die.h"
#include "shm/stats.h"

struct watched {
	enum orbit_agent_watch_kind kind;
	const void *obj;
	/* Counts when watched: only what it does while watched is summed, so
	 * unwatching and watching it again never counts anything twice. */
	uint64_t base[ORBIT_STAT__COUNT];
};

struct orbit_agent_watch_set {
	pthread_mutex_t mu; /* protects the rest (see the top) */
	unsigned n;	    /* objects in obj[0..n) */
	struct watched obj[ORBIT_AGENT_WATCH_MAX];
	uint64_t retired[ORBIT_STAT__COUNT]; /* counts of unwatched objects */
};

static void set_lock(struct orbit_agent_watch_set *s)
{
	/* broken invariant: a default mutex cannot fail here */
	orbit__die_on(pthread_mutex_lock(&s->mu), "pthread_mutex_lock");
}

static void set_unlock(struct orbit_agent_watch_set *s)
{
	orbit__die_on(pthread_mutex_unlock(&s->mu), "pthread_mutex_unlock");
}

struct orbit_agent_watch_set *orbit__agent_watch_new(void)
{
	struct orbit_agent_watch_set *s = calloc(1, sizeof(*s));

	if (s && pthread_mutex_init(&s->mu, NULL)) {
		free(s);
		return NULL;
	}
	return s;
}

void orbit__agent_watch_free(struct orbit_agent_watch_set *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* A coordinator's counters, whatever its kind (one stats struct for the three). */
static int exec_stats(const struct watched *w, struct orbit_serial_executor_stats *e)
{
	switch (w->kind) {
	case ORBIT_AGENT_WATCH_SPOT:
		return orbit_spot_serial_executor_stats(w->obj, e);
	case ORBIT_AGENT_WATCH_ACTOR:
		return orbit_actor_serial_executor_stats(w->obj, e);
	case ORBIT_AGENT_WATCH_SESSION:
		return orbit_session_serial_executor_stats(w->obj, e);
	default:
		return -EINVAL;
	}
}

static void add_exec_counts(uint64_t *c, const struct watched *w)
{
	struct orbit_serial_executor_stats e;

	if (exec_stats(w, &e) < 0)
		return;
	for (unsigned k = 0; k < ORBIT_WORK_KINDS; k++) {
		c[ORBIT_STAT_EXEC_ACCEPTED] += e.accepted[k];
		c[ORBIT_STAT_EXEC_REJECTED] += e.rejected_full[k] + e.rejected_too_big[k] +
					       e.rejected_closed[k];
	}
	c[ORBIT_STAT_EXEC_COMPLETED] += e.completed;
	c[ORBIT_STAT_EXEC_YIELDED] += e.yielded;
	c[ORBIT_STAT_EXEC_TURN_WAITED] += e.turn_waited;
	c[ORBIT_STAT_EXEC_TURN_REJECTED] += e.turn_rejected;
	c[ORBIT_STAT_EXEC_PROTOCOL_ERRORS] += e.protocol_errors;
	c[ORBIT_STAT_EXEC_OUTSTANDING] += e.outstanding;
	c[ORBIT_STAT_EXEC_ACTOR_QUEUES] += e.actor_queues;
	c[ORBIT_STAT_EXEC_TIMER_QUEUES] += e.timer_queues;
}

/* Add @w's counters to @c; lock-free reads of a live object. */
static void add_counts(uint64_t *c, const struct watched *w)
{
	switch (w->kind) {
	case ORBIT_AGENT_WATCH_SPOT:
	case ORBIT_AGENT_WATCH_ACTOR:
	case ORBIT_AGENT_WATCH_SESSION:
		add_exec_counts(c, w);
		break;
	case ORBIT_AGENT_WATCH_QUEUE: {
		struct orbit_serial_queue_stats q;

		if (orbit_serial_queue_stats(w->obj, &q) < 0)
			return;
		c[ORBIT_STAT_QUEUE_ACCEPTED] += q.accepted;
		c[ORBIT_STAT_QUEUE_REJECTED] += q.rejected_count + q.rejected_bytes +
						q.rejected_too_big + q.rejected_closed +
						q.rejected_executor;
		c[ORBIT_STAT_QUEUE_TURNS_RUN] += q.ran;
		c[ORBIT_STAT_QUEUE_COMPLETED] += q.completed;
		c[ORBIT_STAT_QUEUE_SUSPENDED] += q.suspended;
		c[ORBIT_STAT_QUEUE_SLICES_CUT] += q.slices_cut;
		c[ORBIT_STAT_QUEUE_DEPTH] += q.app_items + q.lc_items;
		break;
	}
	case ORBIT_AGENT_WATCH_POOL: {
		struct orbit_worker_pool_stats p;

		/* The getter takes a non-const pool; it only loads. */
		if (orbit_worker_pool_stats((orbit_worker_pool_t *)w->obj, &p) < 0)
			return;
		c[ORBIT_STAT_POOL_TASKS_SUBMITTED] += p.submitted;
		c[ORBIT_STAT_POOL_TASKS_RUN] += p.executed;
		c[ORBIT_STAT_POOL_TASKS_STOLEN] += p.stolen;
		c[ORBIT_STAT_POOL_REJECTED] += p.rejected;
		c[ORBIT_STAT_POOL_SLEEPS] += p.sleeps;
		break;
	}
	case ORBIT_AGENT_WATCH_LANE: {
		struct orbit_state_lane_stats l;

		if (orbit_state_lane_stats(w->obj, &l) < 0)
			return;
		c[ORBIT_STAT_LANE_TURNS] += l.turns;
		c[ORBIT_STAT_LANE_POSTS] += l.posts;
		c[ORBIT_STAT_LANE_REENTRY_REFUSED] += l.reentry_refused;
		break;
	}
	}
}

/* What @w did while watched: counters since its base, gauges as they are. */
static void add_watched(uint64_t *c, const struct watched *w)
{
	uint64_t now[ORBIT_STAT__COUNT] = { 0 };

	add_counts(now, w);
	for (unsigned i = 0; i < ORBIT_STAT__COUNT; i++) {
		if (orbit__stats_counters[i].type == ORBIT_STATS_COUNTER)
			c[i] += now[i] >= w->base[i] ? now[i] - w->base[i] : 0;
		else
			c[i] += now[i];
	}
}

static bool kind_known(enum orbit_agent_watch_kind kind)
{
	return kind >= ORBIT_AGENT_WATCH_QUEUE && kind <= ORBIT_AGENT_WATCH_SESSION;
}

int orbit_agent_watch(orbit_agent_t *agent, enum orbit_agent_watch_kind kind, const void *obj)
{
	struct orbit_agent_watch_set *s;
	int rc = orbit__agent_check(agent); /* before the set's mutex: a child's copy may be held */

	if (rc < 0)
		return rc;
	if (!obj || !kind_known(kind))
		return -EINVAL;
	s = orbit__agent_watch_set(agent);
	set_lock(s);
	for (unsigned i = 0; i < s->n; i++) {
		if (s->obj[i].kind == kind && s->obj[i].obj == obj) {
			rc = -EEXIST;
			goto out_unlock;
		}
	}
	if (s->n == ORBIT_AGENT_WATCH_MAX) {
		rc = -ENOSPC;
		goto out_unlock;
	}
	s->obj[s->n] = (struct watched){ .kind = kind, .obj = obj };
	add_counts(s->obj[s->n].base, &s->obj[s->n]);
	s->n++;
out_unlock:
	set_unlock(s);
	return rc;
}

int orbit_agent_unwatch(orbit_agent_t *agent, enum orbit_agent_watch_kind kind, const void *obj)
{
	uint64_t last[ORBIT_STAT__COUNT] = { 0 };
	struct orbit_agent_watch_set *s;
	int rc = orbit__agent_check(agent); /* as in orbit_agent_watch() */

	if (rc < 0)
		return rc;
	if (!obj || !kind_known(kind))
		return -EINVAL;
	rc = -ENOENT;
	s = orbit__agent_watch_set(agent);
	set_lock(s);
	for (unsigned i = 0; i < s->n; i++) {
		if (s->obj[i].kind != kind || s->obj[i].obj != obj)
			continue;
		/* Its final counts stay in the sums: counters never go backwards. */
		add_watched(last, &s->obj[i]);
		for (unsigned c = 0; c < ORBIT_STAT__COUNT; c++)
			if (orbit__stats_counters[c].type == ORBIT_STATS_COUNTER)
				s->retired[c] += last[c];
		s->obj[i] = s->obj[--s->n];
		rc = 0;
		break;
	}
	/* After this unlock no publish can reach @obj: it is out of the set. */
	set_unlock(s);
	return rc;
}

void orbit__agent_watch_sum(struct orbit_agent_watch_set *s, uint64_t *counters)
{
	if (!s)
		return;
	set_lock(s);
	for (unsigned c = 0; c < ORBIT_STAT__COUNT; c++)
		counters[c] += s->retired[c];
	for (unsigned i = 0; i < s->n; i++)
		add_watched(counters, &s->obj[i]);
	counters[ORBIT_STAT_WATCHED_OBJECTS] += s->n;
	set_unlock(s);
}
