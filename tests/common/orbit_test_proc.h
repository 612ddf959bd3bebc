/* SPDX-License-Identifier: MIT */
/*
 * tests/common/orbit_test_proc.h: the process fixtures of the
 * multi-process Spot tests (test_spot_host, test_spot_stats): a child's
 * own lock handle and agent, fork-and-run, the exit check, and the
 * unlinking of every segment a Spot fleet leaves. Include after
 * orbit_test.h (cmocka) and <orbit/orbit.h>.
 */
#ifndef ORBIT_TEST_PROC_H
#define ORBIT_TEST_PROC_H

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <orbit/orbit.h>
#include "shm/members.h"
#include "shm/ring.h"
#include "shm/segment.h"
#include "shm/spot_queue.h"
#include "shm/stats.h"

/* A child's lock handle and agent. */
struct orbit_test_proc {
	orbit_lock_t *lock;
	orbit_agent_t *agent;
};

/*
 * Open @fleet's lock table and start an agent named @name on it (@stats_ms:
 * 0 = default). A failure is said on stderr with the call, its code and
 * the segment that refused (orbit_segment_last_error()).
 */
static inline int orbit_test_proc_start(struct orbit_test_proc *pr, const char *fleet,
					const char *name, uint32_t stats_ms)
{
	struct orbit_lock_options lo = { .size = sizeof(lo), .fleet = fleet };
	struct orbit_agent_options ao = {
		.size = sizeof(ao), .fleet = fleet, .name = name, .stats_ms = stats_ms
	};

	int r = orbit_lock_open(&lo, &pr->lock);

	if (r) {
		fprintf(stderr, "pid %ld (%s): orbit_lock_open: %s\n  %s\n", (long)getpid(), name,
			orbit_strerror(r), orbit_segment_last_error());
		return -1;
	}
	ao.lock = pr->lock;
	r = orbit_agent_start(&ao, &pr->agent);
	if (r) {
		fprintf(stderr, "pid %ld (%s): orbit_agent_start: %s\n  %s\n", (long)getpid(), name,
			orbit_strerror(r), orbit_segment_last_error());
		orbit_lock_close(pr->lock);
		return -1;
	}
	return 0;
}

static inline void orbit_test_proc_stop(struct orbit_test_proc *pr)
{
	int r = orbit_agent_stop(pr->agent);

	if (r) { /* -EBUSY: a Spot host or client left running; never close the lock under it */
		fprintf(stderr, "pid %ld: orbit_agent_stop: %s\n", (long)getpid(),
			orbit_strerror(r));
		abort();
	}
	orbit_lock_close(pr->lock);
}

/* Fork a child that runs fn(arg) with default crash signals and _exits with its answer. */
static inline pid_t orbit_test_spawn(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		orbit_test_child_default_signals();
		_exit(fn(arg) & 0xff);
	}
	return pid;
}

/* Wait for @pid (SIGKILLed after @timeout_ms) and require exit status 0. */
static inline void orbit_test_expect_exit0(pid_t pid, int timeout_ms)
{
	int st = orbit_test_wait(pid, timeout_ms);

	assert_true(st >= 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "child %ld: status %#x\n", (long)pid, st);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* Unlink what a fleet with Spot @spot leaves: its queue, directory, ring, stats, lock table. */
static inline void orbit_test_spot_fleet_unlink(const char *fleet, const char *spot)
{
	struct orbit_lock_options lo = { .size = sizeof(lo), .fleet = fleet };

	orbit__spotq_unlink(fleet, spot);
	orbit__members_unlink(fleet);
	orbit__ring_unlink(fleet, NULL);
	orbit__seg_unlink(fleet, ORBIT_STATS_SEG_NAME);
	orbit_lock_unlink(&lo);
}

#endif /* ORBIT_TEST_PROC_H */
