// SPDX-License-Identifier: MIT
/*
 * shm/doorbell.c: the futex half of the doorbell (shm/doorbell.h): ring
 * wakes only the classes whose sleeping bit says a waiter announced itself
 * (minus the ones the caller skips); wait announces its class, re-checks
 * the sequence and sleeps on a SHARED futex (waiters and publishers are
 * different processes) with its class as the FUTEX_WAIT_BITSET mask. The barrier argument for "no
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

#include "base/time.h"
#include "shm/crashpoint.h"
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
	/* DB-A1: acquire, pairs with DB-D1 in orbit__doorbell_ring(): events before the bump */
	return atomic_load_explicit(&((struct orbit_doorbell *)db)->seq, memory_order_acquire);
}

/*
 * Bump seq, then wake the sleeping classes in @mask (ring_skip and
 * wake_class), clearing their bits.
 */
static int ring_mask(struct orbit_doorbell *db, uint32_t mask)
{
	uint32_t wake;

	/* DB-D1: seq_cst bump, pairs with DB-A1 and DB-D4; with DB-D2a/DB-D2 the
	 * publisher half of the Dekker pair (DB-D3/DB-D4) */
	atomic_fetch_add_explicit(&db->seq, 1, memory_order_seq_cst);
	ORBIT_CRASHPOINT("doorbell.after_bump"); /* a ringer preempted before DB-D2a */
	/*
	 * DB-D2a: seq_cst load after DB-D1, the no-sleeper fast path: it keeps this
	 * word read-only (no cache-line ping-pong with waiters). A class bit
	 * read clear here means that class's later DB-D3/DB-D4 sees DB-D1.
	 */
	wake = atomic_load_explicit(&db->sleeping, memory_order_seq_cst) & mask;
	if (wake == 0)
		return 0;
	/* DB-D2: seq_cst fetch_and; clears only the classes we wake (a burst coalesces) */
	wake &= atomic_fetch_and_explicit(&db->sleeping, ~wake, memory_order_seq_cst);
	if (wake == 0)
		return 0; /* another publisher cleared them after its DB-D1: it wakes them */
	/*
	 * DB-D5: seq_cst bump after a DB-D2 that cleared a bit, pairs with DB-D4
	 * and the kernel's compare in FUTEX_WAIT. The bit cleared may be a NEWER
	 * announce by a waiter whose seen already includes our DB-D1 (we were
	 * preempted between DB-D1 and DB-D2a). Its seen was read before its
	 * announce (DB-D3), which came before our DB-D2, so this bump is not in
	 * seen: its DB-D4 or the kernel's compare sees it (EAGAIN: it announces
	 * again), or it is queued before our FUTEX_WAKE.
	 */
	atomic_fetch_add_explicit(&db->seq, 1, memory_order_seq_cst);
	/* Relaxed: a statistics counter, orders nothing */
	atomic_fetch_add_explicit(&db->wakes, 1, memory_order_relaxed);
	/* Shared futex (no FUTEX_PRIVATE_FLAG): waiters live in other processes */
	syscall(SYS_futex, &db->seq, FUTEX_WAKE_BITSET, INT_MAX, NULL, NULL, wake);
	return 1;
}

int orbit__doorbell_ring_skip(struct orbit_doorbell *db, uint32_t skip)
{
	return ring_mask(db, ~skip);
}

int orbit__doorbell_wake_class(struct orbit_doorbell *db, uint32_t bit)
{
	return ring_mask(db, bit ? bit : ORBIT_DOORBELL_SHARED);
}

int orbit__doorbell_ring(struct orbit_doorbell *db)
{
	return orbit__doorbell_ring_skip(db, 0);
}

int orbit__doorbell_wait_class(struct orbit_doorbell *db, uint32_t seen, int64_t timeout_ns,
			       uint32_t bit)
{
	struct timespec deadline, *tsp = NULL;

	if (bit == 0)
		bit = ORBIT_DOORBELL_SHARED;
	if (timeout_ns > 0) {
		orbit__deadline_after_ns(&deadline, CLOCK_MONOTONIC, (uint64_t)timeout_ns);
		tsp = &deadline;
	}
	for (;;) {
		/* DB-D3: seq_cst announce of our class; pairs with DB-D2a/DB-D2 in ring_skip() */
		atomic_fetch_or_explicit(&db->sleeping, bit, memory_order_seq_cst);
		/* DB-D4: seq_cst re-check after DB-D3, pairs with DB-D1 and DB-D5: it sees the bump
		 * of any ring whose DB-D2a/DB-D2 missed DB-D3 */
		if (atomic_load_explicit(&db->seq, memory_order_seq_cst) != seen)
			return 0;
		if (timeout_ns == 0)
			return -ETIMEDOUT;
		/*
		 * The kernel compares seq == seen again under its bucket lock (last
		 * re-check). BITSET: an absolute CLOCK_MONOTONIC deadline, and only a
		 * wake naming our class (or a spare one) ends the sleep.
		 */
		ORBIT_CRASHPOINT("doorbell.before_futex"); /* a waiter preempted here */
		long rc = syscall(SYS_futex, &db->seq, FUTEX_WAIT_BITSET, seen, tsp, NULL, bit);
		if (rc < 0 && errno == EINTR)
			return -EINTR;
		if (rc < 0 && errno == ETIMEDOUT) {
			/* DB-D4 again: an event that raced the deadline still counts */
			if (atomic_load_explicit(&db->seq, memory_order_seq_cst) != seen)
				return 0;
			return -ETIMEDOUT;
		}
		/* Woken or EAGAIN (seq moved): loop re-announces and re-checks */
	}
}

int orbit__doorbell_wait(struct orbit_doorbell *db, uint32_t seen, int64_t timeout_ns)
{
	return orbit__doorbell_wait_class(db, seen, timeout_ns, ORBIT_DOORBELL_SHARED);
}

uint64_t orbit__doorbell_wakes(const struct orbit_doorbell *db)
{
	/* Relaxed: a statistics counter */
	return atomic_load_explicit(&((struct orbit_doorbell *)db)->wakes, memory_order_relaxed);
}
