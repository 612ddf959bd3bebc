/* SPDX-License-Identifier: MIT */
/*
 * agent/spot.h: internal. What the Spot host (agent/spot_host.c) and the
 * Spot client (agent/spot_client.c) share: the agent's handles they run
 * on (orbit__agent_spot_env(), in agent/agent.c), the size rule for their
 * options, and the mapping of public caps onto the queue's options.
 */
#ifndef ORBIT_AGENT_SPOT_H
#define ORBIT_AGENT_SPOT_H

#include <orbit/agent.h>
#include <orbit/lock.h>
#include <orbit/spot_queue.h>

#include "shm/members.h"
#include "shm/spot_queue.h"
#include "shm/stats.h"

/* The parts of an agent a Spot host or client uses (borrowed, not owned). */
struct orbit__agent_spot_env {
	const char *fleet;
	orbit_members_t *members; /* joined: row, generation */
	orbit_lock_t *lock;	  /* the caller's lock handle; NULL: none */
	int row;
	uint32_t wake_class; /* orbit__doorbell_bit(row) */
};

/*
 * orbit__agent_spot_env - fill @out from @a (agent/agent.c).
 * Context: any thread while @a runs; no syscall. Returns 0 or -EINVAL.
 */
int orbit__agent_spot_env(orbit_agent_t *a, struct orbit__agent_spot_env *out);

/*
 * orbit__spot_opts_copy - the copy_struct_from_user() rule for the Spot
 * options structs: @src_size below sizeof(size_t) is -EINVAL; smaller than
 * ours is zero-extended; larger with a non-zero byte past ours is -E2BIG.
 * (Written here because base/ has no shared helper yet; the same rule as
 * every other options struct of orbit.)
 */
int orbit__spot_opts_copy(void *dst, size_t dst_size, const void *src, size_t src_size);

/*
 * orbit__spot_queue_open - open or create Spot @spot's queue for @env's
 * fleet with @caps (NULL: defaults). Returns as orbit__spotq_open().
 */
int orbit__spot_queue_open(orbit_spotq_t **out, const struct orbit__agent_spot_env *env,
			   const char *spot, const struct orbit_spot_queue_caps *caps);

/*
 * A Spot host's or client's stats slot (agent/agent_spot_stats.c). The
 * fill callback writes @snap's counters (the role's table of shm/stats.h)
 * and histogram from @obj; the agent calls it from its publish, under its
 * Spot registry's mutex, on any of its threads: it must only load
 * (relaxed atomics, the queue's lock-free counters) and take no lock.
 */
typedef void (*orbit__agent_spot_fill_fn)(void *obj, struct orbit_stats_spot_snapshot *snap);

/*
 * orbit__agent_spot_register - give @obj (Spot @spot, @role HOST or
 * CLIENT) a slot of @agent's stats row and publish it once at once; the
 * agent publishes it at every stats period from then on.
 * Context: any thread while @agent runs; takes the registry's mutex; no
 * syscall. Returns the slot (>= 0) for unregister; -ENOSPC (every one of
 * the row's ORBIT_STATS_SPOTS_PER_ROW slots in use: the object runs
 * unpublished, counted in the agent's spot_slots_full); -EINVAL; -ECHILD.
 */
int orbit__agent_spot_register(orbit_agent_t *agent, enum orbit_stats_spot_role role,
			       const char *spot, void *obj, orbit__agent_spot_fill_fn fill);

/*
 * orbit__agent_spot_unregister - free slot @slot (a negative @slot, as a
 * refused register returned, is a no-op): cleared in SHM, and once this
 * returns the agent never calls the fill of its object again.
 * Context: any thread while @agent runs (before orbit_agent_stop());
 * takes the registry's mutex. In a forked child: a no-op.
 */
void orbit__agent_spot_unregister(orbit_agent_t *agent, int slot);

/* Copy the SHM layer's counters into the public struct. */
int orbit__spot_queue_stats(orbit_spotq_t *q, struct orbit_spot_inbound_stats *out);

#endif /* ORBIT_AGENT_SPOT_H */
