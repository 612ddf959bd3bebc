// SPDX-License-Identifier: MIT
/*
 * shm/doorbell.c: the futex half of the doorbell (shm/doorbell.h): ring
 * wakes only when the sleeping word says a waiter announced itself; wait
 * announces, re-checks the sequence and sleeps on a SHARED futex (waiters
 * and publishers are different processes). The barrier argument for "no
 * lost wakeup" is in the header; each access below names its part in it.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shm/doorbell.h"

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "u32 atomics must be lock-free (address-free)");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "u64 atomics must be lock-free (address-free)");

void orbit__doorbell_init(struct orbit_doorbell *db)
{
	/* Relaxed: runs before the segment is published READY (its release orders these). */
	atomic_store_explicit(&db->seq, 0, memory_order_relaxed);
	atomic_store_explicit(&db->sleeping, 0, memory_order_relaxed);
	atomic_store_explicit(&db->wakes, 0, memory_order_relaxed);
	memset(db->reserved, 0, sizeof(db->reserved));
}

uint32_t orbit__doorbell_seq(const struct orbit_doorbell *db)
{
	/* A1: acquire, pairs with D1 in orbit__doorbell_ring(): events before the bump */
	return atomic_load_explicit(&((struct orbit_doorbell *)db)->seq, memory_order_acquire);
}

int orbit__doorbell_ring(struct orbit_doorbell *db)
{
	/* D1: seq_cst bump; with D2 it forms the publisher half of the Dekker pair (D3/D4) */
	atomic_fetch_add_explicit(&db->seq, 1, memory_order_seq_cst);
	/*
	 * D2a: seq_cst load after D1, the no-sleeper fast path: it keeps this
	 * word read-only (no cache-line ping-pong with waiters). Reading 0 here
	 * means no waiter's D3 precedes D2a in S, so any later D4 sees D1.
	 */
	if (atomic_load_explicit(&db->sleeping, memory_order_seq_cst) == 0)
		return 0;
	/* D2: seq_cst exchange; clearing coalesces a burst into one wake */
	if (atomic_exchange_explicit(&db->sleeping, 0, memory_order_seq_cst) == 0)
		return 0;
	/* Relaxed: a statistics counter, orders nothing */
	atomic_fetch_add_explicit(&db->wakes, 1, memory_order_relaxed);
	/* Shared futex (no FUTEX_PRIVATE_FLAG): waiters live in other processes */
	syscall(SYS_futex, &db->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	return 1;
}

int orbit__doorbell_wait(struct orbit_doorbell *db, uint32_t seen, int64_t timeout_ns)
{
	struct timespec deadline, ts, *tsp = NULL;

	if (timeout_ns >= 0) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += timeout_ns / 1000000000;
		deadline.tv_nsec += timeout_ns % 1000000000;
		if (deadline.tv_nsec >= 1000000000) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000;
		}
	}
	for (;;) {
		/* D3: seq_cst announce; pairs with D2/D2a in orbit__doorbell_ring() */
		atomic_store_explicit(&db->sleeping, 1, memory_order_seq_cst);
		/* D4: seq_cst re-check after D3; sees D1 of any ring whose D2 missed D3 */
		if (atomic_load_explicit(&db->seq, memory_order_seq_cst) != seen)
			return 0;
		if (timeout_ns == 0)
			return -ETIMEDOUT;
		if (timeout_ns > 0) {
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			int64_t left = (int64_t)(deadline.tv_sec - now.tv_sec) * 1000000000 +
				       (deadline.tv_nsec - now.tv_nsec);
			if (left <= 0)
				return -ETIMEDOUT;
			ts.tv_sec = left / 1000000000;
			ts.tv_nsec = left % 1000000000;
			tsp = &ts;
		}
		/* The kernel compares seq == seen again under its bucket lock (last re-check) */
		long rc = syscall(SYS_futex, &db->seq, FUTEX_WAIT, seen, tsp, NULL, 0);
		if (rc < 0 && errno == EINTR)
			return -EINTR;
		/* Woken, EAGAIN (seq moved) or ETIMEDOUT: loop re-announces and re-checks */
	}
}

uint64_t orbit__doorbell_wakes(const struct orbit_doorbell *db)
{
	/* Relaxed: a statistics counter */
	return atomic_load_explicit(&((struct orbit_doorbell *)db)->wakes, memory_order_relaxed);
}
