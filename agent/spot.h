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

/* Copy the SHM layer's counters into the public struct. */
int orbit__spot_queue_stats(orbit_spotq_t *q, struct orbit_spot_inbound_stats *out);

#endif /* ORBIT_AGENT_SPOT_H */
