// SPDX-License-Identifier: MIT
/*
 * shm/lock_serializer.c: the FLOCK and FUTEX serializers of the lock table
 * (see lock_serializer.h). Owns the pthread calls on the robust mutex, the
 * flock pairing and the bounded wait for both; knows nothing of slots.
 */
#include "config.h" /* _GNU_SOURCE: pthread_mutex_clocklock */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/cpu.h"
#include "base/die.h"
#include "shm/lock_serializer.h"

/*
 * A contended FUTEX enter's spin (lock_serializer.h): SPIN_TRIES trylocks,
 * SPIN_PAUSES pauses before each. 256 pauses in all: 6.6 us on this AMD
 * Zen 4 guest (67 cycles a pause), about 12-18 us on Intel Skylake and
 * later (140 cycles); a review measured no throughput difference for 34
 * pauses a try instead of 16. In one sweep of bench_lock's 2- and
 * 32-process points on 1 and 64 keys (load 2-5), 8 to 128 tries gave
 * about the same figures, 4 lower ones.
 */
#define SPIN_TRIES 16u
#define SPIN_PAUSES 16u

_Atomic(void (*)(unsigned try_no)) orbit__lock_ser_test_spin_hook;

int orbit__lock_ser_init_shared(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int rc;

	rc = pthread_mutexattr_init(&a);
	if (rc)
		return -rc;
	rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (!rc)
		rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (!rc)
		rc = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return -rc;
}

void orbit__lock_ser_init(struct orbit__lock_ser *s, enum orbit_lock_serializer kind,
			  const orbit_seg_t *seg, struct orbit_lock_table_hdr *hdr)
{
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->seg = seg;
	s->shared = &hdr->mutex;
	s->dirty_pid = &hdr->dirty_pid;
	/*
	 * With one CPU online the holder cannot leave while we spin. Online
	 * CPUs, not this thread's affinity: a process pinned to one CPU still
	 * contends with holders on the others (a review measured the spin
	 * doubling two processes pinned to different CPUs), and where every
	 * process shares one CPU it cost nothing measurable.
	 */
	s->spin = sysconf(_SC_NPROCESSORS_ONLN) > 1;
	orbit__die_on(pthread_mutex_init(&s->local, NULL), "pthread_mutex_init");
}

void orbit__lock_ser_destroy(struct orbit__lock_ser *s)
{
	orbit__die_on(pthread_mutex_destroy(&s->local), "pthread_mutex_destroy");
}

/*
 * FLOCK polling pauses (see lock_serializer.h): short first, since the
 * holder's critical section takes microseconds; doubled up to 1 ms so a
 * stopped holder costs a waiter at most ~log2(1 ms / 20 us) + bound/1 ms
 * wake-ups.
 */
#define FLOCK_PAUSE_MIN_NS 20000ull
#define FLOCK_PAUSE_MAX_NS 1000000ull

/*
 * pthread_mutex_clocklock on CLOCK_MONOTONIC (pthread_mutex_timedlock's
 * CLOCK_REALTIME would stretch or cut the bound when the clock is
 * stepped). GCC 12's libtsan intercepts timedlock but not clocklock, so
 * under TSan the lock is announced with its mutex annotations (else every
 * contended entry looks like no synchronisation at all: races reported on
 * every slot word in test_lock_threads); elsewhere they compile away.
 */
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
static int clocklock(pthread_mutex_t *m, const struct timespec *abs)
{
	int rc;

	__tsan_mutex_pre_lock(m, __tsan_mutex_try_lock);
	rc = pthread_mutex_clocklock(m, CLOCK_MONOTONIC, abs);
	__tsan_mutex_post_lock(m,
			       rc == 0 || rc == EOWNERDEAD
				   ? __tsan_mutex_try_lock
				   : __tsan_mutex_try_lock | __tsan_mutex_try_lock_failed,
			       0);
	return rc;
}
#else
static int clocklock(pthread_mutex_t *m, const struct timespec *abs)
{
	return pthread_mutex_clocklock(m, CLOCK_MONOTONIC, abs);
}
#endif

static struct timespec mono_ts(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
			       .tv_nsec = (long)(ns % 1000000000ull) };
	return ts;
}

/* The absolute CLOCK_MONOTONIC deadline @wait_ns from now (saturating). */
static uint64_t deadline_of(uint64_t wait_ns)
{
	uint64_t now = orbit__now_mono_ns();

	return wait_ns > UINT64_MAX - now ? UINT64_MAX : now + wait_ns;
}

/*
 * Lock @m within @wait_ns (ORBIT__LOCK_SER_WAIT_FOREVER: no bound).
 * Returns pthread_mutex_lock's codes (0, EOWNERDEAD, ENOTRECOVERABLE,
 * EINVAL, ...) or ETIMEDOUT. *deadline_ns (0: not yet known) is computed
 * on the first miss, before the spin (which so counts against the bound),
 * and shared with the next step of the same enter(). @first: the answer
 * of a trylock the caller already made (the inline fast path of
 * orbit__lock_ser_enter()), or -1 to make it here. @s: the FUTEX
 * serializer whose spin and spin_misses apply (NULL: no spin, the FLOCK
 * serializer's local mutex).
 */
static int mutex_lock_by(struct orbit__lock_ser *s, pthread_mutex_t *m, uint64_t wait_ns,
			 uint64_t *deadline_ns, int first)
{
	struct timespec abs;
	int rc = first >= 0 ? first : pthread_mutex_trylock(m);

	if (rc != EBUSY)
		return rc; /* taken, EOWNERDEAD, or an error of the SHM bytes */
	if (wait_ns != ORBIT__LOCK_SER_WAIT_FOREVER && !*deadline_ns)
		*deadline_ns = deadline_of(wait_ns);
	if (s && s->spin) {
		/* relaxed: set by a test before the enter it watches */
		void (*hook)(unsigned) = atomic_load_explicit(&orbit__lock_ser_test_spin_hook,
							      memory_order_relaxed);

		for (unsigned i = 0; i < SPIN_TRIES; i++) {
			for (unsigned k = 0; k < SPIN_PAUSES; k++)
				orbit__cpu_relax();
			if (hook)
				hook(i);
			rc = pthread_mutex_trylock(m);
			if (rc != EBUSY)
				return rc; /* taken, or EOWNERDEAD: a holder died meanwhile */
		}
		/* relaxed: a count for tests, no order */
		atomic_fetch_add_explicit(&s->spin_misses, 1, memory_order_relaxed);
	}
	if (wait_ns == ORBIT__LOCK_SER_WAIT_FOREVER)
		return pthread_mutex_lock(m);
	abs = mono_ts(*deadline_ns);
	return clocklock(m, &abs);
}

/* flock(LOCK_EX) within the same bound: LOCK_NB polls with doubling pauses; -EAGAIN past it. */
static int flock_by(const orbit_seg_t *seg, uint64_t wait_ns, uint64_t *deadline_ns)
{
	uint64_t pause_ns = FLOCK_PAUSE_MIN_NS;
	int rc = orbit__seg_trylock(seg);

	if (rc != -EWOULDBLOCK)
		return rc;
	if (wait_ns == ORBIT__LOCK_SER_WAIT_FOREVER)
		return orbit__seg_lock(seg);
	if (!*deadline_ns)
		*deadline_ns = deadline_of(wait_ns);
	for (;;) {
		uint64_t now = orbit__now_mono_ns();
		struct timespec rel;

		if (now >= *deadline_ns)
			return -EAGAIN;
		rel = mono_ts(pause_ns < *deadline_ns - now ? pause_ns : *deadline_ns - now);
		/* EINTR: a signal of the application; the loop re-checks the clock */
		clock_nanosleep(CLOCK_MONOTONIC, 0, &rel, NULL);
		rc = orbit__seg_trylock(seg);
		if (rc != -EWOULDBLOCK)
			return rc;
		if (pause_ns < FLOCK_PAUSE_MAX_NS)
			pause_ns *= 2;
	}
}

int orbit__lock_ser_enter_slow(struct orbit__lock_ser *s, uint64_t wait_ns, int first,
			       bool *prev_died)
{
	uint64_t deadline_ns = 0; /* read once, on the first miss */
	int rc;

	*prev_died = false;
	if (s->kind == ORBIT_LOCK_SERIALIZER_FUTEX) {
		rc = mutex_lock_by(s, s->shared, wait_ns, &deadline_ns, first);
		if (rc == EOWNERDEAD) {
			*prev_died = true;
			return 0;
		}
		if (rc == ETIMEDOUT)
			return -EAGAIN;
		/* EINVAL/EDEADLK/ENOTRECOVERABLE come from SHM bytes, not from us */
		return -rc;
	}
	rc = mutex_lock_by(NULL, &s->local, wait_ns, &deadline_ns, -1);
	if (rc == ETIMEDOUT)
		return -EAGAIN; /* another thread of ours waits for (or holds) the flock */
	if (rc)
		orbit__die(rc, "locking the local mutex");
	rc = flock_by(s->seg, wait_ns, &deadline_ns);
	if (rc) {
		orbit__die_on(pthread_mutex_unlock(&s->local), "pthread_mutex_unlock");
		return rc;
	}
	/* relaxed: the flock orders us after the last holder's stores */
	*prev_died = atomic_load_explicit(s->dirty_pid, memory_order_relaxed) != 0;
	return 0;
}

void orbit__lock_ser_repaired(struct orbit__lock_ser *s)
{
	if (s->kind == ORBIT_LOCK_SERIALIZER_FUTEX)
		pthread_mutex_consistent(s->shared); /* only fails if not EOWNERDEAD-held */
}

void orbit__lock_ser_leave_flock(struct orbit__lock_ser *s)
{
	orbit__seg_unlock(s->seg); /* LOCK_UN on our own description */
	orbit__die_on(pthread_mutex_unlock(&s->local), "pthread_mutex_unlock");
}
