// SPDX-License-Identifier: MIT
/*
 * shm/crashpoint.c: the armed state behind ORBIT_CRASHPOINT (see
 * crashpoint.h). Process-local; used by kill tests only, which arm it with
 * orbit__crashpoint_arm(). Nothing arms it by itself: no environment
 * variable is read, so no stray setting can stop or kill a production
 * process that links liborbit.
 */
#include "config.h"

#include <signal.h>
#include <string.h>

#include "shm/crashpoint.h"

_Atomic int orbit__crashpoint_armed;

/* Written by arm() before the release store of armed; read after it. */
static char armed_label[64];
static uint64_t armed_nth;
static _Atomic uint64_t hits;
static int armed_action;

void orbit__crashpoint_arm(const char *label, uint64_t nth, enum orbit_crash_action action)
{
	/* relaxed: disarming first keeps hit() off the label while it changes */
	atomic_store_explicit(&orbit__crashpoint_armed, 0, memory_order_relaxed);
	if (!label)
		return;
	strncpy(armed_label, label, sizeof(armed_label) - 1);
	armed_label[sizeof(armed_label) - 1] = '\0';
	armed_nth = nth ? nth : 1;
	armed_action = action == ORBIT_CRASH_KILL ? ORBIT_CRASH_KILL : ORBIT_CRASH_STOP;
	atomic_store_explicit(&hits, 0, memory_order_relaxed);
	/* R-CP: release, pairs with the acquire in hit(): label before flag */
	atomic_store_explicit(&orbit__crashpoint_armed, 1, memory_order_release);
}

void orbit__crashpoint_hit(const char *label)
{
	/* A-CP: acquire, pairs with R-CP in arm() */
	if (!atomic_load_explicit(&orbit__crashpoint_armed, memory_order_acquire))
		return;
	if (strcmp(armed_label, "*") != 0 && strcmp(armed_label, label) != 0)
		return;
	/* relaxed: a counter of this process's hits; order is irrelevant */
	if (atomic_fetch_add_explicit(&hits, 1, memory_order_relaxed) + 1 != armed_nth)
		return;
	raise(armed_action == ORBIT_CRASH_KILL ? SIGKILL : SIGSTOP);
}
