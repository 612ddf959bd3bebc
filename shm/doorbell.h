/* SPDX-License-Identifier: MIT */
/*
 * shm/doorbell.h: the cross-process readiness edge (internal). A doorbell
 * is one 64-byte block embedded in a shared segment (the transition ring
 * holds one): an event sequence that is also the futex word, and a
 * "someone sleeps" word. Publishers bump the sequence and make the futex
 * system call only when a waiter has announced itself, so a publish with
 * nobody asleep is two atomic instructions and no syscall; a burst of
 * publishes while the waiter is still waking costs one FUTEX_WAKE (the
 * first publish clears the sleeping bits). The futex is a SHARED futex
 * (no FUTEX_PRIVATE_FLAG): waiters and wakers are different processes that
 * map the same object, possibly at different addresses.
 *
 * Wake classes: "sleeping" is a mask of 32 classes, and waiters sleep in
 * FUTEX_WAIT_BITSET with their class bit, so a publisher can leave one
 * class asleep (ring_skip): an agent is not woken by its own process's
 * frames when it has nothing to do with them at once, and does not take a
 * CPU from the agent of the process that is waiting for them. Classes
 * 0..30 belong to one member row each (orbit__doorbell_bit(row)); every
 * other waiter shares ORBIT_DOORBELL_SHARED, which is never skipped.
 *
 * Layout (struct orbit_doorbell, one cache line):
 *   field     writer                      reader          torn read / crash
 *   seq       publishers: fetch_add       waiters         atomic u32, never torn;
 *             (seq_cst, DB-D1; DB-D5)        (seq_cst, DB-D4)   wraps (harmless: waiters
 *                                                         compare for inequality)
 *   sleeping  waiters: fetch_or bit (DB-D3)  publishers:     a waiter killed asleep
 *             publishers: fetch_and      load (DB-D2a),      leaves its bit: costs
 *             ~woken (DB-D2)                fetch_and (DB-D2)   one spare wake, once
 *   wakes     publishers that woke:       stats, bench    counter, relaxed
 *             relaxed add
 *
 * No lost wakeup (Dekker, per class bit b): a waiter sets b in sleeping
 * (DB-D3) and then reads seq (DB-D4); a publisher bumps seq (DB-D1) and then reads
 * sleeping (DB-D2a) and clears the bits it wakes (DB-D2). All are seq_cst, so
 * they sit in one total order S. If DB-D2a or DB-D2 reads b clear, the waiter's
 * DB-D3 comes after it in S (or another publisher cleared b after its own DB-D1
 * and wakes class b itself), so DB-D4 comes after DB-D1 and sees the new seq:
 * the waiter does not sleep. If DB-D2 reads b set, the publisher wakes class
 * b. Between DB-D4 and the kernel's own check the FUTEX_WAIT_BITSET compares
 * seq again under the futex hash-bucket lock, so a bump in that window
 * makes the wait return EAGAIN instead of sleeping. A skipped class keeps
 * its bit set: the next publish that does not skip it wakes it, so a skip
 * delays that class (its own frames), it never loses another's wake.
 *
 * The stale clear (DB-D5 closes it): "DB-D2 reads b set" may read the
 * bit of a NEWER announce, by a waiter whose seen already includes this
 * publisher's DB-D1 (the publisher was preempted between DB-D1 and DB-D2a
 * while the waiter woke, worked and announced again). The publisher
 * clears b and its FUTEX_WAKE may come before that waiter's FUTEX_WAIT;
 * without more, the waiter would sleep with b clear and a later publisher
 * reading b clear would ring nobody (a lost wake until the waiter's
 * timeout). So a publisher whose DB-D2 cleared a bit bumps seq again
 * (DB-D5) before its FUTEX_WAKE. The waiter read its seen before its
 * announce (DB-D3), and DB-D3 came before that DB-D2 (which cleared it),
 * so DB-D5 is not in seen: the waiter's DB-D4 or the kernel's compare sees
 * seq != seen (it announces again), or it is queued before the FUTEX_WAKE
 * that follows DB-D5. The same holds for the shared class (a wake of the
 * class wakes all of its waiters). The extra bump costs one atomic only on
 * the path that makes the syscall, and it can end a waiter's sleep without
 * a new event (callers re-check and wait again, as for any wakeup).
 * Tests: test_stale_ring_clearing_a_newer_announce_loses_no_wake (Spot
 * queue) and test_stale_ring_loses_no_wake_{row,shared}_class (the
 * doorbell alone), crash points doorbell.after_bump and
 * doorbell.before_futex.
 */
#ifndef ORBIT_SHM_DOORBELL_H
#define ORBIT_SHM_DOORBELL_H

#include <stdatomic.h>
#include <stdint.h>

struct orbit_doorbell {
	_Atomic uint32_t seq;	   /* the futex word: bumped by every ring */
	_Atomic uint32_t sleeping; /* bit c: a waiter of class c may be in FUTEX_WAIT */
	_Atomic uint64_t wakes;	   /* FUTEX_WAKE calls made (statistics) */
	uint8_t reserved[48];
};
_Static_assert(sizeof(struct orbit_doorbell) == 64, "doorbell is one cache line");

/* The class shared by every waiter without a row of its own; never skipped. */
#define ORBIT_DOORBELL_SHARED (1u << 31)

/* The wake class of member row @row: its own bit below 31, else the shared one. */
static inline uint32_t orbit__doorbell_bit(uint32_t row)
{
	return row < 31 ? 1u << row : ORBIT_DOORBELL_SHARED;
}

/* Zero a doorbell (segment initialiser or reset, nobody waiting). */
void orbit__doorbell_init(struct orbit_doorbell *db);

/*
 * orbit__doorbell_seq - the current sequence, to pass to wait() after the
 * caller has drained what it was told about.
 * Context: any thread/process; no syscall.
 * Ordering: acquire (DB-A1 in doorbell.c), pairs with DB-D1: everything published
 * before a ring that this value includes is visible after the load.
 */
uint32_t orbit__doorbell_seq(const struct orbit_doorbell *db);

/*
 * orbit__doorbell_ring_skip - publish an event: bump seq; wake the sleeping
 * classes except those in @skip (one FUTEX_WAKE_BITSET, only when one of
 * them announced itself). @skip must not hold ORBIT_DOORBELL_SHARED.
 * Context: any thread/process; lock-free; a syscall only when a waiter of
 * a woken class sleeps. Ordering: seq_cst bump, so every store before it
 * (a ring frame, a queue record) is visible to a waiter that sees the new
 * seq. Returns 1 when it made a FUTEX_WAKE_BITSET, 0 when no syscall was
 * needed.
 */
int orbit__doorbell_ring_skip(struct orbit_doorbell *db, uint32_t skip);

/*
 * orbit__doorbell_wake_class - bump seq and wake ONLY class @bit (one bit,
 * see orbit__doorbell_bit(); 0 means ORBIT_DOORBELL_SHARED): a process
 * waking its own agent (its death watcher) without waking the others'.
 * Same ordering as ring_skip (seq_cst bump DB-D1, then DB-D2a/DB-D2 on @bit only).
 * Other classes are not woken, but the shared seq moved: their next
 * wake (their timeout, or another ring) returns 0 like an event, and a
 * waiter between its DB-D4 and the kernel's check returns early. For
 * ORBIT_DOORBELL_SHARED (rows >= 31) every waiter of that class wakes:
 * the other agents at rows >= 31 and the plain readers (orbitctl watch,
 * fleet readers), each finding nothing new.
 * Context: any thread/process; lock-free; FUTEX_WAKE_BITSET only when a
 * waiter of @bit announced itself. Returns 1 when it woke, 0 otherwise.
 */
int orbit__doorbell_wake_class(struct orbit_doorbell *db, uint32_t bit);

/* orbit__doorbell_ring - ring_skip(db, 0): wake every sleeping class. */
int orbit__doorbell_ring(struct orbit_doorbell *db);

/*
 * orbit__doorbell_wait_class - sleep as class @bit (one bit, see
 * orbit__doorbell_bit()) until seq differs from @seen or @timeout_ns passes
 * (< 0: no timeout; 0: just check).
 * Context: any thread/process; blocks in FUTEX_WAIT_BITSET (shared futex,
 * CLOCK_MONOTONIC deadline).
 * Returns 0 when seq != @seen (an event happened; spurious wakeups are
 * filtered), -ETIMEDOUT, or -EINTR when a signal interrupted the sleep.
 */
int orbit__doorbell_wait_class(struct orbit_doorbell *db, uint32_t seen, int64_t timeout_ns,
			       uint32_t bit);

/* orbit__doorbell_wait - wait_class(..., ORBIT_DOORBELL_SHARED). */
int orbit__doorbell_wait(struct orbit_doorbell *db, uint32_t seen, int64_t timeout_ns);

/* Statistics: FUTEX_WAKE calls made so far (relaxed read; seq counts rings). */
uint64_t orbit__doorbell_wakes(const struct orbit_doorbell *db);

#endif /* ORBIT_SHM_DOORBELL_H */
