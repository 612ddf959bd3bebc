/* SPDX-License-Identifier: MIT */
/*
 * shm/fork_guard.h: the one fork guard of shm/. Every handle that owns
 * descriptors, mappings or kernel locks records the pid that opened it;
 * in a forked child each call on such a handle returns -ECHILD before it
 * touches anything (the child shares its parent's open file descriptions,
 * flocks and OFD locks, so using them would act for the parent).
 *
 * The pid comes from a cache refreshed by a pthread_atfork child handler
 * (glibc no longer caches getpid(), a syscall of ~100 ns on a VM), so the
 * check is one relaxed load and a compare.
 */
#ifndef ORBIT_SHM_FORK_GUARD_H
#define ORBIT_SHM_FORK_GUARD_H

#include <errno.h>
#include <sys/types.h>

/*
 * orbit__self_pid - this process's pid without a syscall.
 * Context: any thread. The first call registers the atfork handler (its
 * child handler runs before those registered later, so handlers of other
 * modules already see the child's pid).
 */
pid_t orbit__self_pid(void);

/* orbit__fork_check - 0 in the process that opened a handle, else -ECHILD. */
static inline int orbit__fork_check(pid_t opener)
{
	return orbit__self_pid() == opener ? 0 : -ECHILD;
}

#endif /* ORBIT_SHM_FORK_GUARD_H */
