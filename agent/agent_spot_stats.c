// SPDX-License-Identifier: MIT
/*
 * agent/agent_spot_stats.c: the agent's Spot slots in the stats segment
 * (shm/stats.h, ORBIT_STATS_SPOTS_PER_ROW per member row): the cross-process
 * Spot hosts (agent/spot_host.c) and clients (agent/spot_client.c) of this
 * process register here, each gets one slot of the agent's row, and the
 * agent's stats publish copies what each one counted into its slot.
 *
 * Locks and what they protect:
 *   spots->mu  the registry (entries, which slot is whose) and the writes
 *              to this row's Spot slots: register, unregister and the
 *              publish all write slots under it, so each slot has one
 *              writer at a time (the slot's seqlock needs that). Leaf: the
 *              fill callbacks it calls take no lock (relaxed loads and the
 *              queue's lock-free counters).
 * Holding it while a fill reads its object is what lets unregister promise
 * that the agent no longer touches the host or client once it returns.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_internal.h"
#include "agent/spot.h"

struct spot_entry {
	enum orbit_stats_spot_role role; /* FREE: the slot is unused */
	char name[ORBIT_STATS_SPOT_NAME_BYTES];
	void *obj;
	orbit__agent_spot_fill_fn fill;
};

struct orbit__agent_spots {
	pthread_mutex_t mu; /* see the top */
	orbit_stats_t *st;  /* the agent's stats segment; NULL: no row, nothing published */
	uint32_t row;
	uint64_t pid, start_ticks;
	uint64_t full;	/* registrations refused: every slot in use (under mu) */
	unsigned users; /* hosts and clients that exist (hold .. release; under mu) */
	struct spot_entry e[ORBIT_STATS_SPOTS_PER_ROW];
};

static void spots_lock(struct orbit__agent_spots *s)
{
	orbit__die_on(pthread_mutex_lock(&s->mu), "spots mutex");
}

static void spots_unlock(struct orbit__agent_spots *s)
{
	orbit__die_on(pthread_mutex_unlock(&s->mu), "spots mutex");
}

struct orbit__agent_spots *orbit__agent_spots_new(orbit_stats_t *st, uint32_t row, uint64_t pid,
						  uint64_t start_ticks)
{
	struct orbit__agent_spots *s = calloc(1, sizeof(*s));

	if (s && pthread_mutex_init(&s->mu, NULL)) {
		free(s);
		return NULL;
	}
	if (!s)
		return NULL;
	s->st = st;
	s->row = row;
	s->pid = pid;
	s->start_ticks = start_ticks;
	return s;
}

void orbit__agent_spots_free(struct orbit__agent_spots *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* Under mu: fill and write slot @k (a failed publish leaves the slot as it was). */
static void publish_one(struct orbit__agent_spots *s, uint32_t k)
{
	struct orbit_stats_spot_snapshot snap;
	struct spot_entry *e = &s->e[k];

	memset(&snap, 0, sizeof(snap));
	snap.role = e->role;
	snap.pid = s->pid;
	snap.start_ticks = s->start_ticks;
	memcpy(snap.name, e->name, sizeof(snap.name));
	e->fill(e->obj, &snap);
	(void)orbit__stats_spot_publish(s->st, s->row, k, &snap);
}

void orbit__agent_spots_publish(struct orbit__agent_spots *s, uint64_t *full)
{
	if (!s)
		return;
	spots_lock(s);
	for (uint32_t k = 0; s->st && k < ORBIT_STATS_SPOTS_PER_ROW; k++)
		if (s->e[k].role != ORBIT_STATS_SPOT_FREE)
			publish_one(s, k);
	if (full)
		*full = s->full;
	spots_unlock(s);
}

int orbit__agent_spot_register(orbit_agent_t *agent, enum orbit_stats_spot_role role,
			       const char *spot, void *obj, orbit__agent_spot_fill_fn fill)
{
	struct orbit__agent_spots *s;
	int rc = orbit__agent_check(agent);

	if (rc < 0)
		return rc;
	if (!spot || !obj || !fill || !orbit__stats_spot_table(role, NULL) ||
	    strlen(spot) >= ORBIT_STATS_SPOT_NAME_BYTES)
		return -EINVAL;
	s = agent->spots;
	spots_lock(s);
	rc = -ENOSPC;
	for (uint32_t k = 0; k < ORBIT_STATS_SPOTS_PER_ROW; k++) {
		struct spot_entry *e = &s->e[k];

		if (e->role != ORBIT_STATS_SPOT_FREE)
			continue;
		e->role = role;
		memset(e->name, 0, sizeof(e->name));
		memcpy(e->name, spot, strlen(spot));
		e->obj = obj;
		e->fill = fill;
		if (s->st)
			publish_one(s, k); /* seen at once, not only at the next period */
		rc = (int)k;
		break;
	}
	if (rc == -ENOSPC)
		s->full++;
	spots_unlock(s);
	return rc;
}

void orbit__agent_spot_hold(orbit_agent_t *agent)
{
	struct orbit__agent_spots *s = agent->spots;

	spots_lock(s);
	s->users++;
	spots_unlock(s);
}

void orbit__agent_spot_release(orbit_agent_t *agent)
{
	struct orbit__agent_spots *s;

	if (!agent || orbit__agent_check(agent) < 0)
		return; /* a forked child's copy: the parent's agent is not ours */
	s = agent->spots;
	spots_lock(s);
	if (!s->users) /* a release without its hold: a broken invariant of this process */
		orbit__die(EINVAL, "Spot registry: release without a hold");
	s->users--;
	spots_unlock(s);
}

unsigned orbit__agent_spots_users(struct orbit__agent_spots *s)
{
	unsigned n;

	spots_lock(s);
	n = s->users;
	spots_unlock(s);
	return n;
}

void orbit__agent_spot_unregister(orbit_agent_t *agent, int slot)
{
	struct orbit__agent_spots *s;

	if (slot < 0 || slot >= (int)ORBIT_STATS_SPOTS_PER_ROW || orbit__agent_check(agent) < 0)
		return;
	s = agent->spots;
	spots_lock(s);
	memset(&s->e[slot], 0, sizeof(s->e[slot]));
	if (s->st)
		(void)orbit__stats_spot_clear(s->st, s->row, (uint32_t)slot);
	/* After this unlock no publish reaches the object: its entry is gone. */
	spots_unlock(s);
}
