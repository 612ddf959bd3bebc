/* SPDX-License-Identifier: MIT */
/*
 * shm/crashpoint.h: labelled crash points for kill tests (internal).
 * ORBIT_CRASHPOINT("lock.after_tombstone") marks a place inside a critical
 * section. Disarmed, it costs one relaxed load of a process-local global.
 * Armed only by a test program calling orbit__crashpoint_arm() (the
 * library never arms itself: no environment variable is read), the nth
 * hit of the label (or of any label when the label is "*") stops the
 * process with SIGSTOP (the test then SIGKILLs it) or SIGKILLs it.
 */
#ifndef ORBIT_SHM_CRASHPOINT_H
#define ORBIT_SHM_CRASHPOINT_H

#include <stdatomic.h>
#include <stdint.h>

enum orbit_crash_action {
	ORBIT_CRASH_STOP = 1, /* raise(SIGSTOP): the test kills it while stopped */
	ORBIT_CRASH_KILL = 2, /* raise(SIGKILL) */
};

/* Non-zero while a crash point is armed in this process. */
extern _Atomic int orbit__crashpoint_armed;

void orbit__crashpoint_hit(const char *label);

/*
 * orbit__crashpoint_arm - arm @label ("*" = any) to fire on its @nth hit
 * (1 = first) with @action; label NULL disarms. Process-local; a forked
 * child inherits the armed state.
 */
void orbit__crashpoint_arm(const char *label, uint64_t nth, enum orbit_crash_action action);

/* Relaxed: the flag is process-local and only gates the slow path. */
#define ORBIT_CRASHPOINT(label)                                                                    \
	do {                                                                                       \
		if (__builtin_expect(                                                              \
			atomic_load_explicit(&orbit__crashpoint_armed, memory_order_relaxed), 0))  \
			orbit__crashpoint_hit(label);                                              \
	} while (0)

#endif /* ORBIT_SHM_CRASHPOINT_H */
