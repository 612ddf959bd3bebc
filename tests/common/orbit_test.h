/* SPDX-License-Identifier: MIT */
/*
 * tests/common/orbit_test.h: helpers every orbit test shares: a unique
 * fleet name per test process, the test tier (check or long), and running
 * a function in a forked child under a hard timeout.
 */
#ifndef ORBIT_TEST_H
#define ORBIT_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>

/* 1 in `make check`, larger in `make check-long`. */
static inline int orbit_test_long(void)
{
	const char *t = getenv("ORBIT_TEST_TIER");
	return t && strcmp(t, "long") == 0;
}

/* A fleet name no other test run uses: prefix, pid and a counter. */
static inline const char *orbit_test_fleet(char *buf, size_t len, const char *prefix)
{
	static unsigned n;
	snprintf(buf, len, "t%s%ld_%u", prefix, (long)getpid(), n++);
	return buf;
}

static inline uint64_t orbit_test_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Wait for @pid at most @timeout_ms; SIGKILL it past that.
 * Returns the wait status, or -1 when it had to be killed.
 */
static inline int orbit_test_wait(pid_t pid, int timeout_ms)
{
	int st = 0;
	for (int waited = 0;; waited++) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return st;
		if (r < 0)
			return -1;
		if (waited >= timeout_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		usleep(1000);
	}
}

/* Fork, run fn(arg) in the child, _exit with its return; wait with a timeout. */
static inline int orbit_test_fork_run(int (*fn)(void *), void *arg, int timeout_ms)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(fn(arg) & 0xff);
	int st = orbit_test_wait(pid, timeout_ms);
	if (st < 0 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

#endif /* ORBIT_TEST_H */
