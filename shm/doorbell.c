// SPDX-License-Identifier: MIT
/*
 * shm/doorbell.c: the futex half of the doorbell (shm/doorbell.h): ring
 * wakes only the classes whose sleeping bit says a waiter announced itself
 * (minus the ones the caller skips); wait announces its class, re-checks
 * the sequence and sleeps on a SHARED futex (waiters and publishers are
 * different processes) with its class as the FUTEX_WAIT_BITSET mask. The
 * barrier argument for "no lost wakeup" is in the header; each access
 * below names its part in it. It also owns the process's membarrier
 * registration (the ASYM mode).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
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
	atomic_store_explicit(&db->mode, ORBIT_DOORBELL_FULL, memory_order_relaxed);
	memset(db->reserved, 0, sizeof(db->reserved));
}

void orbit__doorbell_init_mode(struct orbit_doorbell *db, uint32_t mode)
{
	orbit__doorbell_init(db);
	/* Relaxed: before READY, like the words above */
	atomic_store_explicit(&db->mode, mode == ORBIT_DOORBELL_ASYM ? mode : ORBIT_DOORBELL_FULL,
			      memory_order_relaxed);
}

uint32_t orbit__doorbell_mode(const struct orbit_doorbell *db)
{
	/* Relaxed: written once before the segment was READY (ordered by its acquire) */
	uint32_t m = atomic_load_explicit(&((struct orbit_doorbell *)db)->mode,
					  memory_order_relaxed);

	return m == ORBIT_DOORBELL_ASYM ? m : ORBIT_DOORBELL_FULL;
}

/* ---- membarrier (the ASYM mode) ---- */

static pthread_once_t asym_once = PTHREAD_ONCE_INIT;
static int asym_registered;	  /* written once under asym_once */
static _Atomic int asym_disabled; /* tests: orbit__doorbell_asym_force_off() */

static long sys_membarrier(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0);
}

static void asym_register(void)
{
	long cmds = sys_membarrier(MEMBARRIER_CMD_QUERY);
	long need = MEMBARRIER_CMD_GLOBAL_EXPEDITED | MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED;

	asym_registered = cmds >= 0 && (cmds & need) == need &&
			  sys_membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
}

int orbit__doorbell_asym_ready(void)
{
	/* Relaxed: a process-local test switch, set before the attaches it affects */
	if (atomic_load_explicit(&asym_disabled, memory_order_relaxed))
		return 0;
	pthread_once(&asym_once, asym_register);
	return asym_registered;
}

void orbit__doorbell_asym_force_off(int off)
{
	/* Relaxed: see orbit__doorbell_asym_ready() */
	atomic_store_explicit(&asym_disabled, off != 0, memory_order_relaxed);
}

/*
 * DB-M1: the waiter's half of the asymmetric fence (pairs with DB-M2 in
 * orbit__doorbell_notify_skip()). Returns 0, or -1 when this process
 * cannot issue it (the caller then sleeps in slices).
 */
static int asym_fence(void)
{
	static _Atomic bool refused; /* the kernel (seccomp) refused it once: it will again */

	/* Relaxed: as in orbit__doorbell_asym_ready(); @refused is a hint alone */
	if (atomic_load_explicit(&asym_disabled, memory_order_relaxed) ||
	    atomic_load_explicit(&refused, memory_order_relaxed))
		return -1;
	if (sys_membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0)
		return 0;
	atomic_store_explicit(&refused, true, memory_order_relaxed);
	return -1;
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

/*
 * The wait of wait_class() and wait_pending(): @pending NULL is the plain
 * wait (FULL publishers bump seq for every event).
 */
static int wait_impl(struct orbit_doorbell *db, uint32_t seen, int64_t timeout_ns, uint32_t bit,
		     int (*pending)(void *ctx), void *ctx)
{
	struct timespec deadline, slice, *tsp = NULL;
	bool sliced = false;

	if (bit == 0)
		bit = ORBIT_DOORBELL_SHARED;
	if (timeout_ns > 0) {
		orbit__deadline_after_ns(&deadline, CLOCK_MONOTONIC, (uint64_t)timeout_ns);
		tsp = &deadline;
	}
	/*
	 * Nothing to announce when the event is already there: an announce
	 * left behind costs the next publisher a FUTEX_WAKE with nobody asleep.
	 * Acquire: as DB-A1 (the events before the bump are visible).
	 */
	if (atomic_load_explicit(&db->seq, memory_order_acquire) != seen ||
	    (pending && pending(ctx)))
		return 0;
	for (;;) {
		const struct timespec *wait_tsp = tsp;
		long rc;

		/* DB-D3: seq_cst announce of our class; pairs with DB-D2a/DB-D2 in ring_skip() */
		atomic_fetch_or_explicit(&db->sleeping, bit, memory_order_seq_cst);
		/* DB-D4: seq_cst re-check after DB-D3, pairs with DB-D1 and DB-D5: it sees the bump
		 * of any ring whose DB-D2a/DB-D2 missed DB-D3 */
		if (atomic_load_explicit(&db->seq, memory_order_seq_cst) != seen)
			return 0;
		if (pending) {
			/*
			 * DB-M1: membarrier after DB-D3, pairs with DB-M2 in notify_skip():
			 * an ASYM publisher whose load of sleeping missed DB-D3 stored its
			 * event before the barrier this runs on its CPU, so pending() sees
			 * it. Without membarrier we cannot know: sleep in slices.
			 */
			sliced = sliced || asym_fence() < 0; /* no second try per wait */
			if (pending(ctx))
				return 0;
		}
		if (timeout_ns == 0)
			return -ETIMEDOUT;
		if (sliced) {
			orbit__deadline_after_ns(&slice, CLOCK_MONOTONIC,
						 (uint64_t)ORBIT_DOORBELL_SLICE_NS);
			if (!tsp || orbit__timespec_ns(&slice) < orbit__timespec_ns(tsp))
				wait_tsp = &slice;
		}
		/*
		 * The kernel compares seq == seen again under its bucket lock (last
		 * re-check). BITSET: an absolute CLOCK_MONOTONIC deadline, and only a
		 * wake naming our class (or a spare one) ends the sleep.
		 */
		ORBIT_CRASHPOINT("doorbell.before_futex"); /* a waiter preempted here */
		rc = syscall(SYS_futex, &db->seq, FUTEX_WAIT_BITSET, seen, wait_tsp, NULL, bit);
		if (rc < 0 && errno == EINTR)
			return -EINTR;
		/*
		 * DB-D4 again (woken, EAGAIN, or a deadline that raced an event): an
		 * event returns before we announce again, so a waiter that was woken
		 * leaves its bit clear (the waker cleared it) and the next publish
		 * finds nobody asleep.
		 */
		if (atomic_load_explicit(&db->seq, memory_order_seq_cst) != seen ||
		    (pending && pending(ctx)))
			return 0;
		if (rc < 0 && errno == ETIMEDOUT && wait_tsp == tsp)
			return -ETIMEDOUT;
		/* A spurious wake or a slice's end: announce and check again */
	}
}

int orbit__doorbell_wait_class(struct orbit_doorbell *db, uint32_t seen, int64_t timeout_ns,
			       uint32_t bit)
{
	return wait_impl(db, seen, timeout_ns, bit, NULL, NULL);
}

int orbit__doorbell_wait_pending(struct orbit_doorbell *db, uint32_t seen, int64_t timeout_ns,
				 uint32_t bit, int (*pending)(void *ctx), void *ctx)
{
	return wait_impl(db, seen, timeout_ns, bit, pending, ctx);
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
