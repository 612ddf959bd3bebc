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
 *
 * Asymmetric fence (ORBIT_DOORBELL_ASYM; the transition ring uses it): the
 * event itself is a word the waiter can check (a ring's lane heads), not
 * the seq bump, so the frequent side, a publisher with nobody asleep,
 * needs no locked instruction: it stores its event (a release store),
 * then a compiler barrier (DB-M2), then loads sleeping; only when a class
 * it wakes is announced does it do the whole ring above (DB-D1 ..
 * FUTEX_WAKE). The rare side, a waiter about to sleep, announces (DB-D3),
 * re-checks seq (DB-D4), then issues membarrier(MEMBARRIER_CMD_GLOBAL_
 * EXPEDITED) (DB-M1) and re-checks the events themselves (the caller's
 * pending() callback) before FUTEX_WAIT. membarrier makes every running
 * thread of every process registered with MEMBARRIER_CMD_REGISTER_GLOBAL_
 * EXPEDITED pass a full barrier between the announce and the re-check
 * (liburcu's urcu-memb flavour: its readers' compiler barrier against the
 * writer's membarrier). So either the publisher's event store came before
 * that barrier on its CPU and pending() sees it, or its load of sleeping
 * came after it and sees the announce (then it rings as above). This
 * holds only for publishers whose process registered: a process decides
 * once, when it attaches the segment (orbit__doorbell_asym_ready()), and a
 * process that cannot register publishes with the whole ring (its locked
 * add is a full barrier, correct against either kind of waiter). A waiter
 * whose membarrier fails (seccomp) cannot force that barrier; it sleeps
 * in slices of at most ORBIT_DOORBELL_SLICE_NS and re-checks pending()
 * after each (a frame that raced its sleep waits at most one slice). The
 * creator of a segment records the mode once (orbit__doorbell_init_mode):
 * ORBIT_DOORBELL_FULL when the creator cannot register, and every peer
 * then uses the whole ring and the plain wait (the behaviour above).
 * Tests: test_ring_asym_no_lost_wake_stress, and the same on a ring
 * created in the full mode (test_ring_full_mode_no_lost_wake_stress),
 * with an unregistered publisher and with a reader without membarrier
 * (tests/mp/test_ring_mp.c); each also proves its path ran: the seq
 * count (frames + wakes for the whole ring, 2 x wakes for ASYM) and the
 * reader's slices (its voluntary switches in a quiet wait).
 */
#ifndef ORBIT_SHM_DOORBELL_H
#define ORBIT_SHM_DOORBELL_H

#include <stdatomic.h>
#include <stdint.h>

struct orbit_doorbell {
	_Atomic uint32_t seq;	   /* the futex word: bumped by every ring */
	_Atomic uint32_t sleeping; /* bit c: a waiter of class c may be in FUTEX_WAIT */
	_Atomic uint64_t wakes;	   /* FUTEX_WAKE calls made (statistics) */
	/*
	 * ORBIT_DOORBELL_FULL (0) or ORBIT_DOORBELL_ASYM: written by the
	 * segment's creator before it publishes the segment READY, read-only
	 * after (relaxed loads, ordered by READY). Any other value reads as
	 * FULL, which is correct with every peer (a crash cannot tear it: it
	 * is written once, before anyone can map the segment).
	 */
	_Atomic uint32_t mode;
	uint8_t reserved[44];
};
_Static_assert(sizeof(struct orbit_doorbell) == 64, "doorbell is one cache line");

/* Doorbell modes (struct orbit_doorbell.mode). */
#define ORBIT_DOORBELL_FULL 0u /* every ring bumps seq with a locked add */
#define ORBIT_DOORBELL_ASYM 1u /* publishers: compiler barrier; waiters: membarrier */

/* The longest sleep of a waiter that cannot issue membarrier on an ASYM doorbell. */
#define ORBIT_DOORBELL_SLICE_NS (1000ll * 1000)

/* The class shared by every waiter without a row of its own; never skipped. */
#define ORBIT_DOORBELL_SHARED (1u << 31)

/* The wake class of member row @row: its own bit below 31, else the shared one. */
static inline uint32_t orbit__doorbell_bit(uint32_t row)
{
	return row < 31 ? 1u << row : ORBIT_DOORBELL_SHARED;
}

/* Zero a doorbell (segment initialiser or reset, nobody waiting); mode FULL. */
void orbit__doorbell_init(struct orbit_doorbell *db);

/*
 * orbit__doorbell_init_mode - orbit__doorbell_init() that records @mode
 * (ORBIT_DOORBELL_FULL or ORBIT_DOORBELL_ASYM). The segment's creator
 * passes ASYM only when orbit__doorbell_asym_ready() said 1.
 * Context: the creator, before the segment is READY.
 */
void orbit__doorbell_init_mode(struct orbit_doorbell *db, uint32_t mode);

/* The recorded mode: ORBIT_DOORBELL_ASYM, or ORBIT_DOORBELL_FULL for any other value. */
uint32_t orbit__doorbell_mode(const struct orbit_doorbell *db);

/*
 * orbit__doorbell_asym_ready - register this process for membarrier
 * (MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) once, so its threads may
 * publish on an ASYM doorbell with a compiler barrier. The registration
 * belongs to the process's memory map: a forked child inherits it, an
 * execve clears it (the new image registers again when it attaches).
 * Context: any thread; the first call makes 1-2 membarrier syscalls
 * (MEMBARRIER_CMD_QUERY, then the registration), later calls none.
 * Returns 1 when registered (and MEMBARRIER_CMD_GLOBAL_EXPEDITED is
 * supported), 0 when not (the kernel lacks it, a seccomp filter refuses
 * it, or a test forced it off).
 */
int orbit__doorbell_asym_ready(void);

/*
 * orbit__doorbell_asym_force_off - tests only: make this process behave as
 * one whose kernel has no membarrier (asym_ready() says 0 from now on,
 * waiters on an ASYM doorbell sleep in slices). Process-local; call it
 * before the first attach. @off false undoes it for later attaches.
 */
void orbit__doorbell_asym_force_off(int off);

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
 * orbit__doorbell_notify_skip - an event the waiters can see without the
 * seq (an ASYM doorbell's publisher: the caller stored the event before,
 * with a release store): wake the sleeping classes not in @skip. With
 * @asym (this process is registered: orbit__doorbell_asym_ready() said 1
 * and the doorbell's mode is ASYM) the fast path is a compiler barrier
 * and one load (DB-M2, partner DB-M1 in the waiter's membarrier); without
 * it, the whole ring_skip() (its locked add is the full barrier).
 * @skip must not hold ORBIT_DOORBELL_SHARED.
 * Context: any thread/process; lock-free; a syscall only when a waiter of
 * a woken class sleeps. Returns 1 when it made a FUTEX_WAKE_BITSET, 0
 * when no syscall was needed.
 */
static inline int orbit__doorbell_notify_skip(struct orbit_doorbell *db, uint32_t skip, int asym)
{
	if (!asym)
		return orbit__doorbell_ring_skip(db, skip);
	/*
	 * DB-M2: a compiler barrier, pairs with DB-M1 (the waiter's
	 * membarrier): the caller's event store is issued before the load of
	 * sleeping below; the membarrier supplies the store-load order. The
	 * load is relaxed for the same reason: the order that matters comes
	 * from the barrier the kernel runs on this CPU, not from C11.
	 */
	atomic_signal_fence(memory_order_seq_cst);
	if (__builtin_expect(
		(atomic_load_explicit(&db->sleeping, memory_order_relaxed) & ~skip) == 0, 1))
		return 0;
	return orbit__doorbell_ring_skip(db, skip); /* a class is announced: the whole ring */
}

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

/*
 * orbit__doorbell_wait_pending - wait_class() for the waiters of an ASYM
 * doorbell (published with notify_skip()): after the announce and the
 * seq re-check it issues membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)
 * (DB-M1) and returns 0 when @pending(@ctx) says an event is there, before
 * every FUTEX_WAIT. When membarrier fails (seccomp) it sleeps at most
 * ORBIT_DOORBELL_SLICE_NS at a time and calls @pending after each slice.
 * Context: any thread/process; one membarrier syscall (IPIs to the CPUs
 * running registered processes) per sleep, then FUTEX_WAIT_BITSET.
 * Returns 0 (seq moved or @pending said 1), -ETIMEDOUT, -EINTR.
 */
int orbit__doorbell_wait_pending(struct orbit_doorbell *db, uint32_t seen, int64_t timeout_ns,
				 uint32_t bit, int (*pending)(void *ctx), void *ctx);

/* orbit__doorbell_wait - wait_class(..., ORBIT_DOORBELL_SHARED). */
int orbit__doorbell_wait(struct orbit_doorbell *db, uint32_t seen, int64_t timeout_ns);

/* Statistics: FUTEX_WAKE calls made so far (relaxed read; seq counts rings). */
uint64_t orbit__doorbell_wakes(const struct orbit_doorbell *db);

#endif /* ORBIT_SHM_DOORBELL_H */
