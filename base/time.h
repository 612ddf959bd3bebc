/* SPDX-License-Identifier: MIT */
/*
 * base/time.h: internal, header-only. Nanosecond arithmetic on struct
 * timespec, written once for both worlds: a clock read in ns (the lock's
 * deadlines, the queue's time budget), and an absolute deadline "now + ns"
 * for the waits that take one (futex, pthread_cond_timedwait). No SHM, no
 * thread, no allocation; the clock reads are clock_gettime() (vDSO).
 */
#ifndef ORBIT_BASE_TIME_H
#define ORBIT_BASE_TIME_H

#include <stdint.h>
#include <time.h>

#define ORBIT__NS_PER_SEC 1000000000ull

/* @ts in ns (a non-negative timespec, as every clock of ours gives). */
static inline uint64_t orbit__timespec_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * ORBIT__NS_PER_SEC + (uint64_t)ts->tv_nsec;
}

/* Clock @c now, in ns. Context: any thread; vDSO clock read. */
static inline uint64_t orbit__clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return orbit__timespec_ns(&ts);
}

/* Add @ns to a normalised @ts, keeping tv_nsec below one second. */
static inline void orbit__timespec_add_ns(struct timespec *ts, uint64_t ns)
{
	ts->tv_sec += (time_t)(ns / ORBIT__NS_PER_SEC);
	ts->tv_nsec += (long)(ns % ORBIT__NS_PER_SEC);
	if (ts->tv_nsec >= (long)ORBIT__NS_PER_SEC) {
		ts->tv_sec++;
		ts->tv_nsec -= (long)ORBIT__NS_PER_SEC;
	}
}

/*
 * The absolute time @ns after now on clock @c, for a wait that takes an
 * absolute deadline (FUTEX_WAIT_BITSET, a condvar on CLOCK_MONOTONIC).
 * Context: any thread; one vDSO clock read.
 */
static inline void orbit__deadline_after_ns(struct timespec *dl, clockid_t c, uint64_t ns)
{
	clock_gettime(c, dl);
	orbit__timespec_add_ns(dl, ns);
}

#endif /* ORBIT_BASE_TIME_H */
