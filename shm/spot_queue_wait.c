// SPDX-License-Identifier: MIT
/*
 * shm/spot_queue_wait.c: the host's wait on the cross-process Spot queue:
 * the adaptive poll before a sleep (its budget, one relaxed look at each
 * lane's cursor every few microseconds), then the Dekker sleep on the
 * records doorbell (announce, fence, re-check the lanes, FUTEX_WAIT), cut
 * to the stall poll while a record is being written or an aborted record
 * holds the head. Every ordering label of the queue is in the table of
 * shm/spot_queue_internal.h.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <unistd.h>

#include <orbit/error.h>
#include "shm/spot_queue_internal.h"

/*
 * The host's poll before it announces a sleep (host_poll()): at most this
 * long, adapted between these bounds from how soon records came after the
 * last catch-up. Kept well below the unblock bound and the wake bench's
 * 50 us gap: a host idle for longer sleeps as before.
 */
#define POLL_MAX_NS 20000ull
#define POLL_MIN_NS 1000ull
/*
 * The poll's spin between two looks at the lanes. Each look reads the
 * slot the producer is writing or claims next (SQ-V1: no tail word), and
 * the producer's next locked instruction waits for that line: 5 us
 * between looks instead of 2 cut the transport producer's CPU per record
 * by about a tenth (130-137 -> 117-121 ns) for a loaded p50 latency of
 * 4.4-5.5 us instead of 2.6-4.0 (doc/spot-queues.md, benchmark).
 */
#define POLL_LOOK_NS 5000ull

/* Something for take(), or a record being written (*stalled)? */
static bool lane_ready(orbit_spotq_host_t *h, uint32_t lane, bool *stalled)
{
	struct lane_geo *g = &h->q->lane[lane];
	uint32_t cur = h->cursor[lane];
	/*
	 * seq_cst: the Dekker re-check of SQ-D1, on the commit word at the
	 * cursor alone (the tail is not read, SQ-V1): a commit before our
	 * announce is seen here, one after it reads the announce and rings
	 */
	uint64_t v = atomic_load_explicit(&slot_at(g, cur)->commit, memory_order_seq_cst);
	bool gone;

	if (orbit__spotq_head_aborted(h, lane, &gone))
		*stalled = true; /* poll take() for its RETIRED: no ring announces it */
	if (cw_pos(v) == cur && cw_state(v) == CW_CLAIMED) {
		/*
		 * Being written, or its claimer died or stopped (before or after
		 * its tail CAS): the stall poll brings take() back to judge it
		 */
		*stalled = true;
		return false;
	}
	if (cw_state(v) == CW_FREE || cw_pos(v) == mod_sub(cur, g->items, g->wi)) {
		/*
		 * Nothing claimed at the cursor: empty, unless bad bytes made a
		 * slot the tail passed look unclaimed. The tail is read here, once
		 * per sleep (SQ-A4: acquire, pairs with SQ-R2; take() reads it on
		 * this path at most once per STALL_POLL_NS): strictly past the
		 * cursor (tail_past()), take() resolves the slot next
		 */
		uint64_t t = atomic_load_explicit(&g->w->tail, memory_order_acquire);

		if (!tail_past(g, t, cur)) {
			/* SQ-A7: acquire, pairs with SQ-R5 */
			uint64_t hw = atomic_load_explicit(&g->w->head, memory_order_acquire);

			/*
			 * At the cursor: empty. Behind it inside the head's window:
			 * nothing to take either (the cursor waits for the tail).
			 * Outside the window: bad bytes, take() reports them
			 */
			if (pw_idx(t) < g->wi && pw_bytes(t) < g->wb && pw_idx(hw) < g->wi &&
			    mod_sub(pw_idx(t), pw_idx(hw), g->wi) <= g->items)
				return false;
		}
		h->suspect[lane] = true;
		h->suspect_pos[lane] = cur;
		return true;
	}
	return true; /* committed, aborted, or another lap: take() decides */
}

/*
 * A look of host_poll() at @lane: is the cursor's slot committed or
 * aborted for its lap (or in another lap: take() decides)? One relaxed
 * load of the cursor's commit word: a hint, take() reads it again
 * (SQ-A5). The tail is not read (SQ-V1): a look costs the producer one
 * line, the slot it is writing or claims next, which take() reads anyway.
 */
static bool lane_poll(const orbit_spotq_host_t *h, uint32_t lane)
{
	const struct lane_geo *g = &h->q->lane[lane];
	uint32_t cur = h->cursor[lane];
	uint64_t v = atomic_load_explicit(&slot_at(g, cur)->commit, memory_order_relaxed);

	if (cw_pos(v) == cur)
		return cw_state(v) == CW_COMMITTED || cw_state(v) == CW_ABORTED;
	return cw_state(v) != CW_FREE && cw_pos(v) != mod_sub(cur, g->items, g->wi);
}

uint64_t orbit__spotq_poll_next(uint64_t budget_ns, uint64_t waited_ns)
{
	if (waited_ns == UINT64_MAX)
		return 0; /* preempted mid-poll: others want this CPU, sleep instead */
	if (waited_ns <= POLL_MAX_NS) {
		uint64_t b = 2 * waited_ns;
		return b < POLL_MIN_NS ? POLL_MIN_NS : b > POLL_MAX_NS ? POLL_MAX_NS : b;
	}
	return budget_ns / 2 < POLL_MIN_NS ? 0 : budget_ns / 2;
}

/* The next budget of @h after a wait of @waited_ns (orbit__spotq_poll_next()). */
static void poll_adapt(orbit_spotq_host_t *h, uint64_t waited_ns)
{
	if (!h->poll_fixed)
		h->poll_ns = orbit__spotq_poll_next(h->poll_ns, waited_ns);
}

int orbit__spotq_cpus_allowed(void)
{
	cpu_set_t set;

	/* the calling thread's affinity: a process pinned to one CPU has one, whatever is online */
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		return CPU_COUNT(&set);
	return (int)sysconf(_SC_NPROCESSORS_ONLN); /* more CPUs than cpu_set_t holds */
}

uint64_t orbit__spotq_host_poll_budget(const orbit_spotq_host_t *h, bool *fixed)
{
	if (fixed)
		*fixed = h && h->poll_fixed;
	return h ? h->poll_ns : 0;
}

void orbit__spotq_host_set_poll(orbit_spotq_host_t *h, int64_t budget_ns)
{
	if (!h)
		return;
	h->poll_fixed = budget_ns >= 0 || orbit__spotq_cpus_allowed() <= 1;
	h->poll_ns = budget_ns >= 0 ? (uint64_t)budget_ns : h->poll_fixed ? 0 : POLL_MAX_NS / 4;
}

/*
 * Before a host announces a sleep, poll for up to @budget_ns: while
 * producers stream, a host that catches up would otherwise announce,
 * sleep, and be rung by the next commit, a FUTEX_WAKE on the producer's
 * path every few records. The poll spins (PAUSE) for POLL_LOOK_NS between
 * looks without reading a shared line, so records gather and the lines
 * the producer writes stay in its cache (a look per record would pull the
 * slot's line over while it is being written: the 10 us spin tried before
 * did, and lost); each look reads the lanes in @lanes (lane_poll()) and
 * the doorbell's seq. No announce: producers make no syscall meanwhile.
 * A gap between two looks longer than POLL_MAX_NS means this thread was
 * preempted: another thread wants this CPU, so the host stops polling and
 * sleeps (a woken sleeper gets the CPU back promptly; a spinning one only
 * its fair share). @t0: the poll's start. Returns 1 (a lane has something
 * for take()), 0 (seq moved past @seen: a kick, or a ring for another
 * waiter), -ETIMEDOUT (the budget is spent, or preempted: announce and
 * sleep).
 */
static int host_poll(orbit_spotq_host_t *h, uint32_t seen, uint32_t lanes, uint64_t budget_ns,
		     uint64_t t0)
{
	for (uint64_t now = t0;;) {
		uint64_t prev = now;

		now = spin_look(prev, POLL_LOOK_NS);
		if (now - prev > POLL_MAX_NS && !h->poll_fixed) {
			poll_adapt(h, UINT64_MAX);
			return -ETIMEDOUT;
		}
		for (uint32_t l = 0; l < ORBIT_SPOTQ_LANES; l++)
			if ((lanes & (1u << l)) && lane_poll(h, l)) {
				poll_adapt(h, now - t0);
				return 1;
			}
		/* DB-A1 inside: acquire, what the ring or kick published is visible */
		if (orbit__doorbell_seq(&h->q->shm->rec_db) != seen)
			return 0;
		if (now - t0 >= budget_ns)
			return -ETIMEDOUT;
	}
}

uint32_t orbit__spotq_host_seq(const orbit_spotq_host_t *h)
{
	/* DB-A1 inside: acquire, what a ring published before this value is visible */
	return h ? orbit__doorbell_seq(&h->q->shm->rec_db) : 0;
}

int orbit__spotq_host_wait_seq(orbit_spotq_host_t *h, uint32_t seen, uint32_t lanes,
			       int64_t timeout_ns, uint32_t wake_class)
{
	struct orbit_doorbell *db;
	bool stalled = false;
	uint32_t bit = wake_class ? wake_class : ORBIT_DOORBELL_SHARED;
	uint64_t t0;
	int r = orbit__spotq_host_check(h, 0);

	if (r < 0)
		return r;
	if (lanes & ~((1u << ORBIT_SPOTQ_LANES) - 1u))
		return -EINVAL;
	db = &h->q->shm->rec_db;
	t0 = lanes && !h->poll_fixed ? orbit__now_mono_ns() : 0; /* poll_adapt() only */
	if (lanes && h->poll_ns && timeout_ns != 0) {
		if (h->poll_fixed)
			t0 = orbit__now_mono_ns();
		uint64_t budget = timeout_ns > 0 && (uint64_t)timeout_ns < h->poll_ns
				      ? (uint64_t)timeout_ns
				      : h->poll_ns;
		r = host_poll(h, seen, lanes, budget, t0);
		if (r >= 0)
			return r;
		if (timeout_ns > 0) { /* the poll's time counts against @timeout_ns */
			uint64_t spent = orbit__now_mono_ns() - t0;

			timeout_ns = spent >= (uint64_t)timeout_ns ? 0
								   : timeout_ns - (int64_t)spent;
		}
	}
	/*
	 * SQ-D1: announce, fence, re-check the lanes; pairs with SQ-F1 in
	 * submit(). A producer that committed before our announce is seen by
	 * the re-check; one that commits after it reads our bit and rings,
	 * which moves seq past @seen (read by the caller before it last looked
	 * at the lanes and at its own wake sources): the futex wait returns at
	 * once. A ring between the caller's @seen and now also ends it.
	 */
	atomic_fetch_or_explicit(&db->sleeping, bit, memory_order_seq_cst);
	atomic_thread_fence(memory_order_seq_cst);
	for (uint32_t l = 0; l < ORBIT_SPOTQ_LANES; l++) {
		if ((lanes & (1u << l)) && lane_ready(h, l, &stalled)) {
			r = 1;
			goto awake;
		}
	}
	if (stalled && (timeout_ns < 0 || timeout_ns > STALL_POLL_NS))
		timeout_ns = STALL_POLL_NS; /* poll the in-progress record's producer */
	/*
	 * A producer that claims after the re-check above and then stops (or is
	 * stopped) before its commit rings nobody: the host looks at the lanes
	 * again within one unblock bound, so that record waits at most about
	 * two bounds, not for the caller's timeout (a lease renewal, seconds).
	 */
	if (lanes && (timeout_ns < 0 || timeout_ns > (int64_t)h->q->unblock_ms * 1000000)) {
		timeout_ns = (int64_t)h->q->unblock_ms * 1000000;
		stalled = true;
	}
	r = orbit__doorbell_wait_class(db, seen, timeout_ns, bit);
	if (lanes && !h->poll_fixed)
		poll_adapt(h, orbit__now_mono_ns() - t0); /* how long this wait took */
	if (r == -ETIMEDOUT && stalled)
		r = 0; /* time to look at the stalled record (or the lanes) again */
awake:
	/*
	 * Awake: a row's own class is ours alone, take the bit back so that
	 * producers make no syscall while we work (the caller announces again
	 * before it sleeps). The shared class may have other sleepers: keep it.
	 * Relaxed: only our own next announce (seq_cst) must order after it.
	 */
	if (bit != ORBIT_DOORBELL_SHARED)
		atomic_fetch_and_explicit(&db->sleeping, ~bit, memory_order_relaxed);
	return r;
}

int orbit__spotq_host_wait(orbit_spotq_host_t *h, int64_t timeout_ns, uint32_t wake_class)
{
	int r = orbit__spotq_host_check(h, 0);

	if (r < 0)
		return r;
	r = orbit__spotq_host_wait_seq(h, orbit__spotq_host_seq(h), (1u << ORBIT_SPOTQ_LANES) - 1u,
				       timeout_ns, wake_class);
	return r > 0 ? 0 : r;
}
