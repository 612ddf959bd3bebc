/* SPDX-License-Identifier: MIT */
/*
 * agent/agent_watch.h: the in-process objects (serial queues, worker
 * pools, state lanes) an agent watches, and the sums of their counters
 * the agent adds to its stats row at each publish (internal).
 */
#ifndef ORBIT_AGENT_WATCH_H
#define ORBIT_AGENT_WATCH_H

#include <stdint.h>

#include <orbit/agent.h>

/*
 * orbit__agent_watch_sum - add the counters of the objects @agent watches
 * (plus what its unwatched objects counted) to @counters, an array of
 * ORBIT_STAT__COUNT indexed by enum orbit_stats_counter.
 * Context: the agent thread at a stats publish, or orbit_agent_stop()
 * after the join; takes the watch mutex; no syscall.
 */
void orbit__agent_watch_sum(const orbit_agent_t *agent, uint64_t *counters);

/*
 * orbit__agent_watch_forget - drop everything @agent watches and its sums
 * (the agent is being freed). Context: orbit_agent_stop() or a failed
 * start, after the agent's last publish; takes the watch mutex.
 */
void orbit__agent_watch_forget(const orbit_agent_t *agent);

#endif /* ORBIT_AGENT_WATCH_H */
