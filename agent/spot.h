/* SPDX-License-Identifier: MIT */
/*
 * agent/spot.h: internal. What the Spot host (agent/spot_host.c) and the
 * Spot client (agent/spot_client.c) share: the agent's handles they run
 * on (orbit__agent_spot_env(), in agent/agent.c), the size rule for their
 * options, and the mapping of public caps onto the queue's options.
 */
#ifndef ORBIT_AGENT_SPOT_H
#define ORBIT_AGENT_SPOT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

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
 * orbit__spot_host_test_release_hook - for tests only: when set, a Spot
 * host's release of its lease first calls it, and a non-zero answer is
 * taken as the release's (a lock backend that cannot be reached:
 * -ORBIT_EUNAVAILABLE) without calling orbit_lock_release(). NULL in
 * every program but the test that sets it.
 */
extern _Atomic(int (*)(void)) orbit__spot_host_test_release_hook;

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

/*
 * orbit__agent_spot_hold / _release - a Spot host or client of @agent
 * exists (from its start or open until its stop or close, whether or not
 * it got a stats slot): orbit_agent_stop() refuses with -EBUSY while any
 * does, since each one uses the agent's members, lock handle and stats
 * registry to its end. Context: any thread while @agent runs; the
 * registry's mutex. Release in a forked child: a no-op.
 */
void orbit__agent_spot_hold(orbit_agent_t *agent);
void orbit__agent_spot_release(orbit_agent_t *agent);

/*
 * A Spot host's submit-to-run histogram (agent/spot_host.c), one word per
 * record: pow2[i] counts latencies of exactly 2^i ns (0 ns with 1 ns in
 * [0]), mid[i] those strictly between 2^i and 2^(i+1). Both bucket schemes
 * read from it add two words, never subtract (so a reader racing the
 * writers never sees a bucket below zero): the API's [2^i, 2^(i+1)) is
 * pow2[i] + mid[i], the stats segment's (2^(i-1), 2^i] is mid[i-1] +
 * pow2[i]; the count is the sum of all. Writers: the workers that start
 * handlers, any number at once (relaxed read-modify-writes, two per
 * record with the sum); readers: relaxed loads, a statistics snapshot.
 */
struct orbit__spot_lat {
	_Atomic uint64_t sum_ns, max_ns;
	_Atomic uint64_t pow2[64], mid[64];
};

/* Count one latency of @ns. Context: any thread; two or three relaxed RMWs. */
static inline void orbit__spot_lat_add(struct orbit__spot_lat *l, uint64_t ns)
{
	/* Relaxed: statistics, they order nothing. */
	uint64_t max = atomic_load_explicit(&l->max_ns, memory_order_relaxed);
	unsigned b = ns ? 63u - (unsigned)__builtin_clzll(ns) : 0; /* 2^b <= ns < 2^(b+1) */

	if (ns <= 1 || !(ns & (ns - 1)))
		atomic_fetch_add_explicit(&l->pow2[b], 1, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&l->mid[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&l->sum_ns, ns, memory_order_relaxed);
	while (ns > max && !atomic_compare_exchange_weak_explicit(
			       &l->max_ns, &max, ns, memory_order_relaxed, memory_order_relaxed))
		;
}

/*
 * Add @l's counts to @buckets (@nb of them, zeroed by the caller) and
 * *@count: with @stats_scheme the stats segment's (2^(i-1), 2^i] buckets
 * (shm/stats.h orbit__stats_bucket()), else the API's [2^i, 2^(i+1));
 * the last bucket takes the rest. Context: any thread; relaxed loads.
 */
static inline void orbit__spot_lat_fold(const struct orbit__spot_lat *cl, bool stats_scheme,
					uint64_t *buckets, unsigned nb, uint64_t *count)
{
	struct orbit__spot_lat *l = (struct orbit__spot_lat *)cl;

	for (unsigned i = 0; i < 64; i++) {
		/* Relaxed: statistics (see the struct). */
		uint64_t p = atomic_load_explicit(&l->pow2[i], memory_order_relaxed);
		uint64_t m = atomic_load_explicit(&l->mid[i], memory_order_relaxed);
		unsigned bp = i < nb ? i : nb - 1;
		unsigned bm = (stats_scheme ? i + 1 : i) < nb ? (stats_scheme ? i + 1 : i) : nb - 1;

		buckets[bp] += p;
		buckets[bm] += m;
		*count += p + m;
	}
}

/* Copy the SHM layer's counters into the public struct. */
int orbit__spot_queue_stats(orbit_spotq_t *q, struct orbit_spot_inbound_stats *out);

#endif /* ORBIT_AGENT_SPOT_H */
