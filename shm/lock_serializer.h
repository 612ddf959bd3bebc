/* SPDX-License-Identifier: MIT */
/*
 * shm/lock_serializer.h: the two cross-process serializers of the lock
 * table behind one internal interface (shm/lock.c is the only user).
 *   FLOCK: a process-local pthread mutex (threads of this process) plus
 *          flock(LOCK_EX) on this handle's segment fd (processes); the
 *          kernel drops the flock when the holder dies. A holder that died
 *          inside is detected by the table's dirty_pid word.
 *   FUTEX: a PTHREAD_PROCESS_SHARED + PTHREAD_MUTEX_ROBUST mutex in the
 *          table header; the kernel marks it when the holder dies and the
 *          next locker gets EOWNERDEAD. No syscall when uncontended.
 * Either way the caller learns "the previous holder died inside" and runs
 * the table repair before it mutates anything.
 *
 * The wait is bounded (ORBIT_LOCK_SERIALIZER_WAIT_MS_DEFAULT, or the
 * handle's serializer_wait_ms): a holder that is stopped (SIGSTOP, a
 * debugger, a frozen cgroup) or preempted for longer makes enter() answer
 * -EAGAIN instead of waiting for it. Critical sections take well under a
 * microsecond, so the bound only fires on a holder that is not running.
 *   FUTEX: pthread_mutex_trylock; if taken (EBUSY), the clock is read for
 *          the deadline, then up to SPIN_TRIES more trylocks SPIN_PAUSES
 *          pauses apart (7-18 us), when more than one CPU is online; then
 *          pthread_mutex_clocklock on CLOCK_MONOTONIC (a futex wait with
 *          the absolute deadline; the holder's death still wakes it with
 *          EOWNERDEAD). The spin: a critical section takes about 100 ns,
 *          a futex sleep and wake-up several microseconds, and once one
 *          waiter sleeps every leave makes a FUTEX_WAKE, so without it
 *          contended processes went to sleep and woke in turn at every
 *          entry (bench_lock's contended points, 6 interleaved rounds:
 *          2 processes on 64 keys 2.1 M acquisitions/s without the spin,
 *          5.9 M with it).
 *   FLOCK: pthread_mutex_trylock, then pthread_mutex_clocklock for the
 *          local mutex; flock(2) has no timed form, so the cross-process
 *          part is flock(LOCK_EX | LOCK_NB) retried with a pause that
 *          starts at FLOCK_PAUSE_MIN_NS and doubles up to FLOCK_PAUSE_MAX_NS
 *          (clock_nanosleep) until the same deadline. A blocking flock
 *          interrupted by a timer signal would need a signal of the
 *          application's; a helper thread would need a thread per wait.
 *          Cost: under cross-process contention a FLOCK waiter notices the
 *          release up to one pause late (at most 1 ms), never later than
 *          the deadline; uncontended it is one flock call, as before.
 * Lock order: the process-local mutex, then the cross-process lock; no
 * other lock may be held while entering.
 */
#ifndef ORBIT_SHM_LOCK_SERIALIZER_H
#define ORBIT_SHM_LOCK_SERIALIZER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "shm/lock_table.h"
#include "shm/segment.h"

/* enter()'s @wait_ns meaning "no bound" (only orbit__lock_set_sink uses it). */
#define ORBIT__LOCK_SER_WAIT_FOREVER UINT64_MAX

struct orbit__lock_ser {
	enum orbit_lock_serializer kind; /* FUTEX or FLOCK */
	const orbit_seg_t *seg;		 /* FLOCK: whose fd is flocked */
	pthread_mutex_t *shared;	 /* FUTEX: the mutex in the table header */
	pthread_mutex_t local;		 /* FLOCK: protects this handle's flock */
	_Atomic uint32_t *dirty_pid;	 /* FLOCK: the table's dirty word */
	bool spin; /* FUTEX: a contended enter spins first (more than one CPU online) */
	/* FUTEX: enters whose spin ran out and that went on to
	 * pthread_mutex_clocklock (which may still take it without sleeping;
	 * relaxed; tests) */
	_Atomic uint64_t spin_misses;
};

/*
 * For tests only: when set, called at every try of a FUTEX enter's spin
 * (orbit__lock_ser_enter_slow) with the try's index, before the try.
 */
extern _Atomic(void (*)(unsigned try_no)) orbit__lock_ser_test_spin_hook;

/* Creator only (segment init callback): initialise the robust mutex in SHM. */
int orbit__lock_ser_init_shared(pthread_mutex_t *m);

/* Set up a handle's serializer (local mutex). Aborts only on a pthread failure. */
void orbit__lock_ser_init(struct orbit__lock_ser *s, enum orbit_lock_serializer kind,
			  const orbit_seg_t *seg, struct orbit_lock_table_hdr *hdr);
void orbit__lock_ser_destroy(struct orbit__lock_ser *s);

/*
 * orbit__lock_ser_enter - take the serializer, waiting at most @wait_ns.
 * @wait_ns: the bound (ORBIT__LOCK_SER_WAIT_FOREVER: none). The clock is
 *           read only when the first attempt finds the serializer taken.
 * @prev_died: set when the previous holder died inside the critical
 *             section: the caller must repair the table, then call
 *             orbit__lock_ser_repaired().
 * Context: blocks (futex wait, or flock polls with clock_nanosleep) for
 * at most @wait_ns; no syscall when uncontended (FUTEX).
 * Returns 0; -EAGAIN (still held by another thread or process when
 * @wait_ns passed; nothing is held then); -ENOTRECOVERABLE (a robust mutex
 * left unrepaired); or a negative errno from flock / a mutex in corrupt
 * SHM (-EINVAL).
 * orbit__lock_ser_enter_slow() is its out-of-line rest (same Context and
 * Returns): @first is the FUTEX first trylock's answer, -1 for FLOCK.
 */
int orbit__lock_ser_enter_slow(struct orbit__lock_ser *s, uint64_t wait_ns, int first,
			       bool *prev_died);
static inline int orbit__lock_ser_enter(struct orbit__lock_ser *s, uint64_t wait_ns,
					bool *prev_died)
{
	/* FUTEX: the first trylock inline (no call into lock_serializer.c when it
	 * takes the mutex); any other answer (EBUSY, EOWNERDEAD: held and to
	 * repair, an error of the SHM bytes) goes on to the slow path with it. */
	int first = -1; /* FLOCK: no attempt yet */

	if (s->kind == ORBIT_LOCK_SERIALIZER_FUTEX) {
		first = pthread_mutex_trylock(s->shared);
		if (__builtin_expect(first == 0, 1)) {
			*prev_died = false;
			return 0;
		}
	}
	return orbit__lock_ser_enter_slow(s, wait_ns, first, prev_died);
}
/* After repair under a FUTEX EOWNERDEAD: pthread_mutex_consistent. */
void orbit__lock_ser_repaired(struct orbit__lock_ser *s);
/* FLOCK's leave (LOCK_UN, then the local mutex); only via orbit__lock_ser_leave(). */
void orbit__lock_ser_leave_flock(struct orbit__lock_ser *s);
/*
 * orbit__lock_ser_leave - give the serializer up.
 * Context: the serializer held by this thread. Returns nothing; never fails.
 */
static inline void orbit__lock_ser_leave(struct orbit__lock_ser *s)
{
	if (s->kind == ORBIT_LOCK_SERIALIZER_FUTEX) {
		pthread_mutex_unlock(s->shared); /* cannot fail: we own it */
		return;
	}
	orbit__lock_ser_leave_flock(s);
}

#endif /* ORBIT_SHM_LOCK_SERIALIZER_H */
