/* SPDX-License-Identifier: MIT */
/*
 * shm/doorbell.h: the cross-process readiness edge (internal). A doorbell
 * is one 64-byte block embedded in a shared segment (the transition ring
 * holds one): an event sequence that is also the futex word, and a
 * "someone sleeps" word. Publishers bump the sequence and make the futex
 * system call only when a waiter has announced itself, so a publish with
 * nobody asleep is two atomic instructions and no syscall; a burst of
 * publishes while the waiter is still waking costs one FUTEX_WAKE (the
 * first publish clears the sleeping word). The futex is a SHARED futex
 * (no FUTEX_PRIVATE_FLAG): waiters and wakers are different processes that
 * map the same object, possibly at different addresses.
 *
 * Layout (struct orbit_doorbell, one cache line):
 *   field     writer                      reader          torn read / crash
 *   seq       publishers: fetch_add       waiters         atomic u32, never torn;
 *             (seq_cst, D1)               (seq_cst, D4)   wraps (harmless: waiters
 *                                                         compare for inequality)
 *   sleeping  waiters: store 1 (D3)       publishers:     a waiter killed asleep
 *             publishers: exchange 0 (D2) exchange (D2)   leaves 1: costs one
 *                                                         spare FUTEX_WAKE, once
 *   wakes     publishers that woke:       stats, bench    counter, relaxed
 *             relaxed add
 *
 * No lost wakeup (Dekker): a waiter stores sleeping=1 (D3) and then reads
 * seq (D4); a publisher bumps seq (D1) and then exchanges sleeping to 0
 * (D2). All four are seq_cst, so they sit in one total order S. If D2 reads
 * 0, the waiter's D3 comes after D2 in S, so D4 comes after D1 and sees the
 * new seq: the waiter does not sleep. If D2 reads 1 the publisher wakes.
 * Between D4 and the kernel's own check the FUTEX_WAIT compares seq again
 * under the futex hash-bucket lock, so a bump in that window makes the wait
 * return EAGAIN instead of sleeping.
 */
#ifndef ORBIT_SHM_DOORBELL_H
#define ORBIT_SHM_DOORBELL_H

#include <stdatomic.h>
#include <stdint.h>

struct orbit_doorbell {
	_Atomic uint32_t seq;      /* the futex word: bumped by every ring */
	_Atomic uint32_t sleeping; /* 1: a waiter may be in FUTEX_WAIT */
	_Atomic uint64_t wakes;    /* FUTEX_WAKE calls made (statistics) */
	uint8_t reserved[48];
};
_Static_assert(sizeof(struct orbit_doorbell) == 64, "doorbell is one cache line");

/* Zero a doorbell (segment initialiser or reset, nobody waiting). */
void orbit__doorbell_init(struct orbit_doorbell *db);

/*
 * orbit__doorbell_seq - the current sequence, to pass to wait() after the
 * caller has drained what it was told about.
 * Context: any thread/process; no syscall.
 * Ordering: acquire (A1 in doorbell.c), pairs with D1: everything published
 * before a ring that this value includes is visible after the load.
 */
uint32_t orbit__doorbell_seq(const struct orbit_doorbell *db);

/*
 * orbit__doorbell_ring - publish an event: bump seq; FUTEX_WAKE all waiters
 * only when the sleeping word says someone sleeps.
 * Context: any thread/process; lock-free; a syscall only when a waiter
 * sleeps. Ordering: seq_cst bump, so every store before it (a ring frame,
 * a queue record) is visible to a waiter that sees the new seq.
 * Returns 1 when it made a FUTEX_WAKE, 0 when no syscall was needed.
 */
int orbit__doorbell_ring(struct orbit_doorbell *db);

/*
 * orbit__doorbell_wait - sleep until seq differs from @seen or @timeout_ns
 * passes (< 0: no timeout; 0: just check).
 * Context: any thread/process; blocks in FUTEX_WAIT (shared futex).
 * Returns 0 when seq != @seen (an event happened; spurious wakeups are
 * filtered), -ETIMEDOUT, or -EINTR when a signal interrupted the sleep.
 */
int orbit__doorbell_wait(struct orbit_doorbell *db, uint32_t seen, int64_t timeout_ns);

/* Statistics: FUTEX_WAKE calls made so far (relaxed read; seq counts rings). */
uint64_t orbit__doorbell_wakes(const struct orbit_doorbell *db);

#endif /* ORBIT_SHM_DOORBELL_H */
