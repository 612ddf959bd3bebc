/* SPDX-License-Identifier: MIT */
/*
 * base/fork_guard.h: the library's one fork guard, shared by shm/, lib/
 * and agent/. Every object that owns descriptors, mappings, kernel locks
 * or threads records the pid that created or opened it; in a forked child
 * each call on such an object returns -ECHILD before it touches anything.
 * shm/ handles: the child shares its parent's open file descriptions,
 * flocks and OFD locks, so using them would act for the parent. lib/
 * objects (worker pool, serial queue, state lane, coordinators): the
 * child has none of the parent's worker threads and may hold a copy of a
 * mutex a parent's thread held at the fork, so work would never run and
 * a lock could never be taken.
 *
 * The pid comes from a cache refreshed by a pthread_atfork child handler
 * (glibc no longer caches getpid(), a syscall of ~100 ns on a VM), so the
 * check is one relaxed load and a compare, inline: no call, no
 * pthread_once on the hot path (the cache is 0 only before this process's
 * first orbit__self_pid(), and then the slow path fills it).
 */
#ifndef ORBIT_BASE_FORK_GUARD_H
#define ORBIT_BASE_FORK_GUARD_H

#include <errno.h>
#include <stdatomic.h>
#include <sys/types.h>

/*
 * The cached pid (base/fork_guard.c): 0 until this process's first
 * orbit__self_pid(), then this process's pid. Written by the first
 * orbit__self_pid() (under pthread_once) and by the atfork child handler
 * (the child is single-threaded then); read by orbit__fork_check().
 */
extern _Alignas(64) _Atomic int orbit__cached_pid;

/*
 * orbit__self_pid - this process's pid without a syscall.
 * Context: any thread. The first call registers the atfork handler (its
 * child handler runs before those registered later, so handlers of other
 * modules already see the child's pid).
 * Returns: the pid (never fails; an atfork registration failure aborts).
 */
pid_t orbit__self_pid(void);

/*
 * orbit__fork_check - 0 in the process that opened a handle, else -ECHILD.
 * @opener: the handle's (or object's) orbit__self_pid() at open or create.
 * Context: any thread; no syscall, no lock.
 * Returns: 0 or -ECHILD.
 */
static inline int orbit__fork_check(pid_t opener)
{
	/* FG-A1: relaxed, pairs with FG-R1 in pid_refresh(). A
	 * handle's opener came from orbit__self_pid(), which filled the cache
	 * before the handle reached this thread (the hand-over of the handle
	 * orders it); a child's value is stored before fork() returns there. */
	pid_t self = (pid_t)atomic_load_explicit(&orbit__cached_pid, memory_order_relaxed);

	if (__builtin_expect(self == 0, 0))
		self = orbit__self_pid(); /* no orbit__self_pid() yet in this process */
	return self == opener ? 0 : -ECHILD;
}

#endif /* ORBIT_BASE_FORK_GUARD_H */
