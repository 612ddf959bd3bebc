// SPDX-License-Identifier: MIT
/*
 * agent/agent_death.c: how an agent notices dead members. The agent
 * thread holds a pidfd for every other live member (member directory
 * rescans) and, at each tick, polls them; the death watcher thread sleeps
 * in epoll_wait() on the same pidfds and, when one turns readable (that
 * process exited), marks the row and wakes the agent thread through the
 * doorbell, as our own wake class only, so a death is handled at once.
 * A readable pidfd is proved with the member directory's kernel lock,
 * then the row and the dead member's ring lanes are reclaimed and the
 * ORBIT_LOCK_FREE_ON_DEATH leases of dead holders freed (through our
 * lock handle, when the agent has one; orbit__lock_free_dead() proves
 * each holder gone again, by its own tenure and process).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "agent/agent_internal.h"
#include "shm/lock_internal.h"

#define die_on orbit__die_on
#define AGENT_DEATH_STOP UINT64_MAX /* epoll data of the watcher's stop eventfd (rows are below) */

struct agent_watch_row {
	int pidfd; /* -1: not watched */
	uint32_t generation;
};

/*
 * Agent thread: (re-)arm @row's pidfd in the watcher's epoll set. Without
 * a watcher, or refused (-ENOMEM, -ENOSPC: the epoll watch limit), the
 * tick's orbit__agent_deaths_check() still polls it.
 */
static void death_arm(struct orbit_agent *a, uint32_t row, int op)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT, .data.u64 = row };

	if (a->epfd >= 0)
		(void)epoll_ctl(a->epfd, op, a->watch[row].pidfd, &ev);
}

static void unwatch(struct orbit_agent *a, uint32_t row)
{
	if (a->watch[row].pidfd >= 0) {
		/* Before the close: the watcher never sees an event of a closed fd */
		if (a->epfd >= 0)
			epoll_ctl(a->epfd, EPOLL_CTL_DEL, a->watch[row].pidfd, NULL);
		close(a->watch[row].pidfd);
	}
	a->watch[row].pidfd = -1;
}

void orbit__agent_free_dead_leases(struct orbit_agent *a)
{
	/* Without a lock of our own (ro_lock only) the holders' other peers do it */
	if (a->lock)
		(void)orbit__lock_free_dead(a->lock, a->members); /* -EAGAIN: the next sweep */
}

/* A member may be dead: prove it (kernel lock), reclaim its row, lanes and leases. */
static void handle_death(struct orbit_agent *a, uint32_t row)
{
	if (orbit__members_is_alive(a->members, row) != 0)
		return; /* alive (or error): keep watching */
	unwatch(a, row);
	if (orbit__members_reclaim(a->members, row) == 1)
		a->reclaimed++;
	orbit__ring_lanes_reclaim_dead(a->ring, a->members);
	orbit__agent_free_dead_leases(a);
}

static int rescan_one(void *p, const struct orbit_member_info *mi)
{
	struct orbit_agent *a = p;
	uint32_t gen = 0;
	int fd;

	if (mi->self || mi->row >= a->nrows)
		return 0;
	if (!mi->alive) {
		if (mi->state != ORBIT_MEMBER_FREE)
			handle_death(a, mi->row); /* died before we watched it */
		return 0;
	}
	if (a->watch[mi->row].pidfd >= 0 && a->watch[mi->row].generation == mi->generation)
		return 0;
	unwatch(a, mi->row);
	fd = orbit__members_pidfd_open(a->members, mi->row, &gen);
	if (fd == -ESRCH) {
		handle_death(a, mi->row);
		return 0;
	}
	if (fd < 0)
		return 0; /* -EAGAIN (rewriting) / -ENOSYS: the next rescan retries */
	a->watch[mi->row].pidfd = fd;
	a->watch[mi->row].generation = gen;
	death_arm(a, mi->row, EPOLL_CTL_ADD);
	return 0;
}

void orbit__agent_members_rescan(struct orbit_agent *a)
{
	orbit__members_foreach(a->members, rescan_one, a);
}

/* One poll() over the watched pidfds; POLLIN = that process exited. */
void orbit__agent_deaths_check(struct orbit_agent *a)
{
	struct pollfd pfd[64];
	uint32_t rows[64];
	uint32_t r = 0;

	while (r < a->nrows) {
		int n = 0;

		for (; r < a->nrows && n < 64; r++) {
			if (a->watch[r].pidfd < 0)
				continue;
			pfd[n].fd = a->watch[r].pidfd;
			pfd[n].events = POLLIN;
			pfd[n].revents = 0;
			rows[n++] = r;
		}
		if (n == 0 || poll(pfd, (nfds_t)n, 0) <= 0)
			continue;
		for (int i = 0; i < n; i++)
			if (pfd[i].revents)
				handle_death(a, rows[i]);
	}
}

/*
 * Agent thread, after orbit__agent_deaths_check(): the rows whose pidfd fired and that
 * are still watched. Not readable (a spurious event, or the row's new
 * pidfd, armed already): re-arm. Readable but not proved dead (the kernel
 * lock still held): left disarmed, or the watcher would wake us in a loop;
 * the tick's orbit__agent_deaths_check() retries the proof, as before the watcher.
 */
void orbit__agent_deaths_rearm(struct orbit_agent *a)
{
	for (uint32_t w = 0; w < (a->nrows + 63) / 64; w++) {
		/* Relaxed: the bits ride on death_pending, taken (acquire) by the caller */
		uint64_t bits = atomic_exchange_explicit(&a->fired[w], 0, memory_order_relaxed);

		while (bits) {
			uint32_t row = w * 64 + (uint32_t)__builtin_ctzll(bits);
			struct pollfd pfd = { .fd = a->watch[row].pidfd, .events = POLLIN };

			bits &= bits - 1;
			if (pfd.fd >= 0 && poll(&pfd, 1, 0) == 0)
				death_arm(a, row, EPOLL_CTL_MOD);
		}
	}
}

/* The death watcher thread: wait for a pidfd to fire, mark it, wake our agent. */
static void *death_main(void *p)
{
	struct orbit_agent *a = p;
	struct epoll_event ev[16];

	for (;;) {
		int n = epoll_wait(a->epfd, ev, 16, -1);

		if (n < 0 && errno == EINTR)
			continue; /* signals are blocked; a ptrace stop can still interrupt */
		if (n < 0)
			return NULL; /* cannot happen on our own fd; the tick notices deaths */
		for (int i = 0; i < n; i++) {
			uint64_t row = ev[i].data.u64;

			if (row == AGENT_DEATH_STOP)
				return NULL; /* orbit_agent_stop() */
			/* Relaxed RMW: no bit is lost; death_pending below carries them */
			atomic_fetch_or_explicit(&a->fired[row / 64], 1ull << (row % 64),
						 memory_order_relaxed);
		}
		if (n == 0)
			continue;
		/* AG-R2: release, pairs with AG-A2 in orbit__agent_main(): the bits above */
		atomic_store_explicit(&a->death_pending, true, memory_order_release);
		/*
		 * Our class only: other processes' agents have their own watchers.
		 * The seq bump (DB-D1) comes after the store above: an agent thread that
		 * armed before it is woken, one that arms after it sees the flag.
		 */
		orbit__doorbell_wake_class(orbit__ring_doorbell(a->ring), a->wake_class);
	}
}

/*
 * The watcher's epoll set and its stop eventfd. When either cannot be had
 * (-ENOSYS on an old kernel, -EPERM from a seccomp filter, no fd, the
 * epoll watch limit) the agent runs without a watcher: the tick notices
 * deaths, as before it. Fails the start only for memory (-ENOMEM: the
 * per-row pidfd table and fired bits).
 */
int orbit__agent_death_open(struct orbit_agent *a)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = AGENT_DEATH_STOP };

	a->epfd = -1;
	a->death_stop = -1;
	a->nrows = orbit__members_rows(a->members);
	a->watch = calloc(a->nrows, sizeof(*a->watch));
	/* Before any failure: orbit__agent_death_close() closes every pidfd >= 0 (calloc: fd 0) */
	for (uint32_t r = 0; a->watch && r < a->nrows; r++)
		a->watch[r].pidfd = -1;
	a->fired = calloc((a->nrows + 63) / 64, sizeof(*a->fired));
	if (!a->watch || !a->fired)
		return -ENOMEM;
	a->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (a->epfd < 0)
		return 0;
	a->death_stop = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (a->death_stop < 0 || epoll_ctl(a->epfd, EPOLL_CTL_ADD, a->death_stop, &ev) < 0) {
		close(a->epfd);
		a->epfd = -1; /* death_stop is closed by orbit__agent_death_close() */
	}
	return 0;
}

void orbit__agent_death_start(struct orbit_agent *a)
{
	/* Refused: no watcher (the epoll set stays unused), the tick notices deaths */
	if (a->epfd >= 0)
		a->death_started = pthread_create(&a->death_thread, NULL, death_main, a) == 0;
}

/* Stop and join the death watcher (before the agent thread: nothing wakes a stopped agent). */
void orbit__agent_death_stop(struct orbit_agent *a)
{
	uint64_t one = 1;

	if (!a->death_started)
		return;
	/* Our own eventfd, written once: cannot fail (else the join would hang) */
	die_on(write(a->death_stop, &one, sizeof(one)) != (ssize_t)sizeof(one), "write stop");
	die_on(pthread_join(a->death_thread, NULL), "join watcher");
	a->death_started = false;
}

void orbit__agent_death_close(struct orbit_agent *a)
{
	if (a->watch)
		for (uint32_t r = 0; r < a->nrows; r++)
			unwatch(a, r);
	free(a->watch);
	if (a->epfd >= 0) /* after the unwatch (its DELs) and the watcher's join */
		close(a->epfd);
	if (a->death_stop >= 0)
		close(a->death_stop);
	free((void *)a->fired);
}
