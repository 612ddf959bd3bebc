// SPDX-License-Identifier: MIT
/*
 * base/fork_guard.c: this process's pid, cached and refreshed in a forked
 * child before fork() returns there; the -ECHILD check of every shm/
 * handle, agent and lib/ object is built on it (base/fork_guard.h).
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/die.h"
#include "base/fork_guard.h"

/*
 * The cached pid, alone on its cache line: every enqueue, try_post and
 * submit of lib/ reads it, and the globals the linker would place beside
 * it are written at unrelated times.
 */
_Alignas(64) _Atomic int orbit__cached_pid;
static pthread_once_t pid_once = PTHREAD_ONCE_INIT;

static void pid_refresh(void)
{
	/* FG-R1: relaxed, pairs with FG-A1 in orbit__fork_check() and
	 * orbit__self_pid(). Each process writes its own copy before any of
	 * its threads reads it (at first use, or in the child handler, which
	 * runs while the child is single-threaded); a thread that still reads
	 * 0 takes the pthread_once. */
	atomic_store_explicit(&orbit__cached_pid, (int)getpid(), memory_order_relaxed);
}

static void pid_init(void)
{
	pid_refresh();
	/* ENOMEM at first use: a broken invariant of this process */
	orbit__die_on(pthread_atfork(NULL, NULL, pid_refresh), "pthread_atfork");
}

pid_t orbit__self_pid(void)
{
	pthread_once(&pid_once, pid_init); /* a load and a compare once done */
	/* FG-A1 again: relaxed, pairs with FG-R1: pthread_once orders the
	 * first store before this load */
	return (pid_t)atomic_load_explicit(&orbit__cached_pid, memory_order_relaxed);
}
