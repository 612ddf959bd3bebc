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
#include <poll.h>
#include <sys/syscall.h>
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

/*
 * A forked child inherits cmocka's signal handlers: a crash there would
 * jump back into the test runner inside the child and run the next tests
 * in it. A child of orbit_test_fork_run() dies of the signal instead.
 */
static inline void orbit_test_child_default_signals(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS };
	for (unsigned i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
}

/*
 * gcc 12's sanitizers cannot follow a fork() of a process whose other
 * threads run and allocate: ASan takes none of its allocator's locks
 * around fork (a child deadlocks in malloc() when a parent thread held
 * one at the fork), and TSan refuses new threads in such a child. Tests
 * that fork amid running threads skip themselves with this reason.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ORBIT_TEST_NO_FORK_AMID_THREADS "the sanitizer cannot follow a fork amid running threads"
#endif

/* Fork, run fn(arg) in the child, _exit with its return; wait with a timeout. */
static inline int orbit_test_fork_run(int (*fn)(void *), void *arg, int timeout_ms)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		orbit_test_child_default_signals();
		_exit(fn(arg) & 0xff);
	}
	int st = orbit_test_wait(pid, timeout_ms);
	if (st < 0 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/*
 * Run fn(arg) in a forked child whose stderr goes into @buf (NUL-terminated, @len bytes at most);
 * the child is meant to abort (orbit__die). Returns 0 when it died of SIGABRT, -1 otherwise
 * (it returned, exited, hung past 10 s, then killed, or died of another signal).
 */
static inline int orbit_test_abort_output(void (*fn)(void *), void *arg, char *buf, size_t len)
{
	int fds[2], st;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		orbit_test_child_default_signals();
		dup2(fds[1], STDERR_FILENO);
		fn(arg);
		_exit(0);
	}
	close(fds[1]);
	for (uint64_t end = orbit_test_now_ns() + 10000000000ull;
	     got + 1 < len && orbit_test_now_ns() < end;) {
		struct pollfd p = { .fd = fds[0], .events = POLLIN };

		if (poll(&p, 1, 100) == 0)
			continue;
		n = read(fds[0], buf + got, len - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fds[0]);
	buf[got] = '\0';
	st = orbit_test_wait(pid, 1000);
	return st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT ? 0 : -1;
}

/* The calling thread's kernel id (for orbit_test_in_futex()). */
static inline pid_t orbit_test_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* Whether the task whose /proc syscall file is @path is blocked in futex() now. */
static inline int orbit_test_syscall_is_futex(const char *path)
{
	long nr = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	if (fscanf(f, "%ld", &nr) != 1)
		nr = -1;
	fclose(f);
	return nr == SYS_futex;
}

/* Whether thread @tid of this process is blocked in futex() now (/proc/self/task/<tid>/syscall). */
static inline int orbit_test_in_futex(pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	return orbit_test_syscall_is_futex(path);
}

/* Whether (the main thread of) process @pid is blocked in futex() now (/proc/<pid>/syscall). */
static inline int orbit_test_pid_in_futex(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	return orbit_test_syscall_is_futex(path);
}

/* Until thread @tid sleeps in futex(); 0 after @timeout_ms. */
static inline int orbit_test_wait_in_futex(pid_t tid, int timeout_ms)
{
	uint64_t end = orbit_test_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	while (!orbit_test_in_futex(tid)) {
		if (orbit_test_now_ns() > end)
			return 0;
		usleep(200);
	}
	return 1;
}

#endif /* ORBIT_TEST_H */
