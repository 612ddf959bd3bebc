/* SPDX-License-Identifier: MIT */
/*
 * shm/transition.h: the value a lock state change hands to the transition
 * ring (internal). The lock table (shm/lock.c) fills one per successful
 * acquire / renew / release / force_release / reclaim of an expired entry,
 * and one per repair after a mutator died inside the serializer, and
 * passes it to its sink while the state serializer is held, BEFORE the
 * table commit (spec orbit-lock "Invariants": event publication precedes
 * the table commit). The ring (shm/ring.c) is the standard sink.
 */
#ifndef ORBIT_SHM_TRANSITION_H
#define ORBIT_SHM_TRANSITION_H

#include <stdint.h>

#include <orbit/fleet.h> /* enum orbit_transition_type: the types are public */

struct orbit_transition {
	uint32_t type; /* enum orbit_transition_type */
	uint32_t writer_pid;
	uint64_t fencing_token;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC absolute; 0 after release */
	uint64_t state_revision;
	const void *ns; /* namespace bytes */
	uint32_t ns_len;
	const void *label; /* key label bytes */
	uint32_t label_len;
	const void *owner; /* owner token bytes */
	uint32_t owner_len;
};

/*
 * A sink receives each transition. It must not block or take the lock
 * table's serializer; a failure is counted by the sink and never changes
 * the lock operation's outcome (the ring is advisory).
 */
typedef void (*orbit_transition_sink_fn)(void *ctx, const struct orbit_transition *t);

#endif /* ORBIT_SHM_TRANSITION_H */
