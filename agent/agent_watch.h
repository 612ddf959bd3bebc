/* SPDX-License-Identifier: MIT */
/*
 * agent/agent_watch.h: the in-process objects (serial queues, worker
 * pools, state lanes, Spot / Actor / session coordinators) an agent
 * watches, and the sums of their counters the agent adds to its stats row
 * at each publish (internal). One watch set per agent, owned by the agent
 * (agent.c makes it at start and frees it at stop).
 */
#ifndef ORBIT_AGENT_WATCH_H
#define ORBIT_AGENT_WATCH_H

#include <stdint.h>

#include <orbit/agent.h>

struct orbit_agent_watch_set;

/*
 * orbit__agent_watch_new - an empty watch set (ORBIT_AGENT_WATCH_MAX
 * places, its own mutex). Context: orbit_agent_start(); allocates.
 * Returns: the set, or NULL (no memory, or the mutex could not be made).
 */
struct orbit_agent_watch_set *orbit__agent_watch_new(void);

/*
 * orbit__agent_watch_free - forget everything @s watches and its sums.
 * NULL is a no-op. Context: orbit_agent_stop() or a failed start, after
 * the agent's last publish; no watch call may run on the agent any more.
 */
void orbit__agent_watch_free(struct orbit_agent_watch_set *s);

/*
 * orbit__agent_watch_set - @agent's watch set (never NULL for a started
 * agent). Defined in agent.c, which owns struct orbit_agent.
 * Context: any thread while the agent is not being stopped; no syscall.
 */
struct orbit_agent_watch_set *orbit__agent_watch_set(orbit_agent_t *agent);

/*
 * orbit__agent_check - may this process call on @agent? Defined in
 * agent.c (the fork trap). Context: any thread; no syscall, no lock.
 * Returns 0; -EINVAL (NULL); -ECHILD (@agent was started by the parent of
 * this forked process: the call must touch nothing of it).
 */
int orbit__agent_check(const orbit_agent_t *agent);

/*
 * orbit__agent_watch_sum - add the counters of the objects @s watches
 * (plus what its unwatched objects counted) to @counters, an array of
 * ORBIT_STAT__COUNT indexed by enum orbit_stats_counter. NULL @s adds
 * nothing.
 * Context: the agent thread at a stats publish, or orbit_agent_stop()
 * after the join; takes the set's mutex; no syscall.
 */
void orbit__agent_watch_sum(struct orbit_agent_watch_set *s, uint64_t *counters);

#endif /* ORBIT_AGENT_WATCH_H */
