// SPDX-License-Identifier: MIT
/*
 * agent/spot_host.c: hosting a cross-process Spot (orbit/spot_queue.h).
 * It owns the hosting lease (an orbit-lock lease on "orbit.spot"/<Spot>
 * through the agent's lock handle, its token the host epoch), the host's
 * thread, and the records between the queue (shm/spot_queue.h) and the
 * Spot coordinator (orbit/spot_executor.h). One owner at a time calls
 * orbit__spotq_take/complete (the SHM layer's host handle is one
 * owner's): the host's thread, or, while records stream with a
 * coordinator the host made, its take task on the coordinator's worker
 * (feed_task(), handed over by SH-P1..SH-P4). The host's thread
 * sleeps on the queue's records doorbell, takes batches (lifecycle lane
 * first), hands each record to the coordinator by its entry kind (runs of
 * Spot or lifecycle records with one orbit__spot_execute_n(), lib/spot_batch.h:
 * one queue lock and at most one worker wake-up per run), and
 * completes a record only after its handler finished, across yields too
 * (07 §5). Handlers finish on the coordinator's worker threads; their
 * records come back to the feed state's owner on a lock-free stack (one
 * CAS per record, the whole stack taken with one exchange) and a kick of
 * the doorbell when the host's thread sleeps.
 * A record the coordinator refuses (-EAGAIN) stays taken, first in line,
 * and is handed over again when room may have come back.
 *
 * Threads and what they touch:
 *   host thread   take, complete, renew; pending[], spare, buf, recs,
 *                 outstanding (its own, no lock): the feed state, which
 *                 it lends to its take task while records stream
 *                 (feed_task(), with a coordinator the host made: the
 *                 take runs on the coordinator's worker, SH-P1/SH-P2)
 *   take task     the feed state while it owns it (struct feed_link)
 *   workers       run a delivery's handler, then push it on `done` (any
 *                 number of pushers, one taker: the feed state's owner,
 *                 the host thread or its take task)
 *   API callers   start/stop, state and stats (atomics)
 * No mutex: a push is a CAS loop on `done` (it retries only when another
 * worker pushed in between); the host thread takes the whole stack with
 * one exchange, never a single node (no ABA).
 *
 * Synchronization:
 *   SH-D1 host: idle = 1 (seq_cst), then the doorbell's seq (acquire),
 *         then `done` (seq_cst) and `stop`; pairs with SH-F1
 *   SH-F1 worker: the push's CAS on `done` (seq_cst), load idle (seq_cst),
 *         and if it reads 1 an exchange of idle with 0 (seq_cst); pairs
 *         with SH-D1: all seq_cst, one total order, so the host's load of
 *         `done` after its idle store sees the push or the worker's idle
 *         load after its CAS sees the 1 (no fence of its own: the CAS is
 *         the locked instruction the fence was). The CAS is a release
 *         too, for SH-A4. A worker that
 *         reads idle 0 has its record seen by the host's check, the one
 *         whose exchange takes the 1 kicks (a seq bump the host's wait sees,
 *         or, if the host's seen already holds it, the host's check sees
 *         that worker's record: the bump follows it and seen is an acquire).
 *         A worker whose exchange finds 0 comes after that kick or after the
 *         host woke: the host drains again before its next idle period, or
 *         its next check sees the record. One kick per idle period, not one
 *         per finished record
 *   SH-A4 host: exchange of `done` with NULL (acquire), pairs with SH-F1:
 *         each pushed delivery's fields and its handler's writes
 *   SH-S1 stop: stop = 1 (seq_cst), then an unconditional kick; pairs with
 *         SH-A2: the host's stop loads, one after its seq read (SH-D1)
 *   SH-L1 state: release store of LOST (after lost_reason), pairs with SH-L2:
 *         the acquire loads of the state, and SH-L3: a worker's acquire
 *         load before a handler starts (lease_gone()), then lost_reason
 *   SH-R1 worker: finishing-- (release) after its last touch of the host;
 *         pairs with SH-A1: the acquire loads in orbit_spot_host_stop() before free.
 *         With a coordinator the host created, the coordinator's quiescence
 *         (its seq_cst release count after the handler's piece returned,
 *         waited for before its destroy and our free) orders it instead
 *   SH-P1 task: feeding = FEED_HOST (release) when it hands the
 *         feed state back (its last touch of sh), then the bump of the
 *         link's seq (SH-W1); pairs with SH-P2
 *   SH-P2 host: acquire loads of feeding, and the acquire CAS
 *         POSTED -> HOST that takes the feed state back from a queued
 *         task; pairs with SH-P1 and SH-P4
 *   SH-W1 task: seq_cst bump of the link's seq, then a seq_cst load of
 *         waiting (a wake only if set); pairs with SH-W2: the host
 *         thread's seq_cst store of waiting = 1, then its seq_cst load
 *         of seq before the FUTEX_WAIT: either the task sees waiting and
 *         wakes, or the host thread's seq load (after the task's bump in
 *         the total order) reads the new value and the wait returns
 *   SH-P3 task: acquire CAS POSTED -> RUNNING that starts a round;
 *         pairs with SH-P4
 *   SH-P4 feeder: (the host thread, or a round) feeding = FEED_POSTED (release) before
 *         the executor's submit of the next task: the feed state for
 *         whoever wins it next (SH-P3 or SH-P2)
 *   SH-R3 link: refs-- (the release half of feed_put()'s acq_rel) after a
 *         holder's last touch of the link: a task's, or the host's in
 *         orbit_spot_host_stop(); pairs with SH-A5
 *   SH-A5 link: the acquire half of the last feed_put() (then the free),
 *         and the host thread's acquire load of refs == 1 before it posts
 *         a task (a reclaimed task has run and touches nothing more);
 *         pairs with SH-R3
 *   SH-R2 host: in_flight-- (release) after the complete counted the
 *         record; pairs with SH-A3: orbit_spot_host_stats() loads in_flight
 *         (acquire) first, so a reader that sees a record leave in_flight
 *         sees its completed (or fenced, complete_errors) count too
 * Other counters are relaxed atomics: statistics, they order nothing. The
 * host thread's own (all but protocol_errors and the histogram) have one
 * writer at a time, the feed state's owner (the host thread or its take
 * task, handed over by SH-P1..SH-P4): a relaxed load + store (INC, ADD),
 * no locked instruction; the
 * workers' are relaxed read-modify-writes (WINC, orbit__spot_lat_add()).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <orbit/error.h>
#include <orbit/spot_queue.h>

#include "agent/spot.h"
#include "base/die.h"
#include "base/fork_guard.h"
#include "base/time.h"
#include "shm/crashpoint.h"
#include "shm/doorbell.h"
#include "shm/stats.h"
#include "lib/spot_batch.h"
#include "lib/sync.h" /* orbit__single_writer_add(), the futex calls */

#define MIN_TTL_NS 10000000ull	 /* lease TTL floor: 10 ms */
#define RETRY_NS 1000000ll	 /* refused records are retried at least this often */
#define STALL_POLL_NS 10000000ll /* a record being written: look again after this */
#define MAX_BATCH 4096u
/* Takes of one lane per round whose records go over together (take_lane()):
 * full default batches fill one run of ORBIT__SPOT_BATCH_MAX. */
#define RUN_TAKES 4u
/* Deliveries with room for this many payload bytes are kept for reuse. */
#define SPARE_PAYLOAD 256u
#define SPARE_MAX MAX_BATCH

ORBIT_LOCK_DEFINE_NAMESPACE(spot_lease_ns, ORBIT_SPOT_LEASE_NAMESPACE);

struct orbit_spot_host;

/* One record from take to complete. */
struct delivery {
	struct delivery *done_next; /* below it on host->done once its handler finished */
	struct orbit_spot_host *host;
	struct delivery *next; /* host->pending (host thread) */
	orbit_spot_handler_fn handler;
	/* the piece running now (its worker only) */
	orbit_serial_turn_t *turn;
	bool *yielded;		   /* the running piece's flag: orbit_spot_yield() sets it */
	orbit_serial_work_fn cont; /* set by orbit_spot_yield() */
	void *cont_arg;
	uint32_t lane, pos;
	uint32_t cap; /* payload bytes it has room for */
	/* its worker found the lease gone before the handler started
	 * (lease_gone()): the handler never ran, the record is not completed */
	bool not_run;
	struct orbit_spot_record rec;
	/*
	 * cap payload bytes, then TIMER_ROOM for a timer record's name
	 * (timer_of()): the fields a Spot record's take, hand-over and run
	 * touch lie in the first lines, its payload right after them
	 */
	unsigned char payload[];
};

#define TIMER_ROOM (ORBIT_SPOTQ_TIMER_NAME_MAX + 1)

static char *timer_of(struct delivery *d)
{
	return (char *)d->payload + d->cap;
}

struct orbit_spot_host {
	char spot[ORBIT_SPOT_NAME_MAX + 1];
	struct orbit_spot_host_options o; /* the caller's, read by the size rule */
	struct orbit__agent_spot_env env;
	orbit_spotq_t *q;
	orbit_spotq_host_t *h; /* the host thread's once it runs */
	struct orbit_doorbell *rec_db;
	orbit_spot_serial_executor_t *coord;
	bool own_coord;
	pid_t pid;

	/* the lease */
	orbit_lock_key_t key;
	char owner_bytes[64];
	orbit_lock_owner_t owner;
	struct orbit_lock_lease lease;
	uint64_t ttl_ns, renew_at_ns;
	uint64_t epoch;	  /* the lease's token at start: immutable (lease is the host thread's) */
	bool lease_freed; /* let_go() released it (the host thread's, then stop's) */
	/*
	 * What a worker reads before it starts a handler (lease_gone()):
	 * run_until_ns is the lease's deadline less run_margin_ns (immutable:
	 * the coarse clock's resolution; 0 with precise_clock),
	 * stored by the host thread at the take and at every renewal, relaxed
	 * (a renewal stores it at least 3/4 TTL before the previous value
	 * passes); lease_over is set, once, by the first worker that finds
	 * the clock past it, and read by every later start and by the host
	 * thread's drain_done(), which gets the skipped record after the flag
	 * (SH-F1/SH-A4) and then loses the Spot (-ENOENT, as an expired
	 * renewal).
	 */
	_Atomic uint64_t run_until_ns;
	_Atomic bool lease_over;
	uint64_t run_margin_ns;
	/* immutable: the tick is over TTL/4, lease_gone() reads CLOCK_MONOTONIC */
	bool precise_clock;

	/* the host thread */
	pthread_t thread;
	_Atomic int stop;  /* SH-S1 */
	_Atomic int idle;  /* SH-D1 */
	_Atomic int state; /* enum orbit_spot_host_state, SH-L1 */
	_Atomic int lost_reason;
	/* SH-F1, SH-A4: finished deliveries, newest first, linked by done_next */
	/* hand-written, not liburcu's cds_lfs: an earlier attempt
	 * measured that slower (e2e host 216 -> 244 ns/rec; not re-measured) */
	_Atomic(struct delivery *) done;
	struct delivery *pending[2], *pending_tail[2]; /* refused: first in line */
	/* Completed deliveries of SPARE_PAYLOAD room, linked by next, for
	 * reuse: a record is allocated and freed on the host thread, at
	 * every record, and glibc's per-thread cache holds only 7 of a size. */
	struct delivery *spare;
	unsigned n_spare;
	struct orbit_spotq_rec *recs;
	void *buf;
	size_t buf_len;
	unsigned batch;
	uint64_t outstanding;	    /* handed over, not yet back (host thread) */
	_Atomic uint64_t finishing; /* SH-R1: workers between their push and their last touch */
	/* The take task's link (struct feed_link), only with a coordinator
	 * the host made on o.executor (NULL: the host thread takes alone) */
	struct feed_link *fl;
	bool lost_cb_due; /* the feed task lost the Spot: on_lost is owed (feed state) */

	/* counters (relaxed); the host thread's alone are written with
	 * single-writer adds (INC), protocol_errors and the latency words by
	 * the workers with read-modify-writes (WINC) */
	_Atomic uint64_t delivered, redelivered, completed, fenced, retried, undeliverable,
	    unhandled, protocol_errors, renewals, renew_retries, in_flight, complete_errors,
	    not_started;
	struct orbit__spot_lat lat; /* submit-to-run (agent/spot.h; record_latency()) */

	/* the stats segment's Spot slot (agent/agent_spot_stats.c, host_fill()) */
	orbit_agent_t *agent;
	int stats_slot;			  /* < 0: unpublished */
	struct orbit_spotq_counters base; /* the queue's counters before the takeover */
};

static _Thread_local struct delivery *tls_cur; /* the delivery whose piece this thread runs */
static _Thread_local struct orbit_spot_host *tls_host; /* the host whose thread this is */
static _Atomic unsigned owner_nonce;

#define LD(f) atomic_load_explicit(&sh->f, memory_order_relaxed) /* counts (see the top) */
/* A counter only the host thread writes: a relaxed load + store is an exact add. */
#define INC(sh, f) ADD(sh, f, 1)
#define ADD(sh, f, n) orbit__single_writer_add(&(sh)->f, (n))
/* A counter the workers write (any number at once). */
#define WINC(sh, f, n) atomic_fetch_add_explicit(&(sh)->f, (n), memory_order_relaxed)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the lease ---- */

/* A take or renewal gave the lease @sh->lease.deadline_ns (host thread). */
static void lease_until(struct orbit_spot_host *sh)
{
	uint64_t d = sh->lease.deadline_ns;

	/* relaxed: a value for lease_gone()'s compare, see the field */
	atomic_store_explicit(&sh->run_until_ns, d > sh->run_margin_ns ? d - sh->run_margin_ns : 0,
			      memory_order_relaxed);
}

/*
 * lease_take - THE seam of adoption: the one place the hosting lease is
 * taken. With ORBIT_LOCK_FREE_ON_DEATH the other members' agents free
 * it as soon as the member directory proves this host dead (its row's
 * OFD lock and its process gone), so a killed host's Spot is adopted in
 * milliseconds; a host that is alive but stopped keeps it until the TTL.
 */
static int lease_take(struct orbit_spot_host *sh)
{
	struct orbit_lock_acquire_options ao;

	orbit_lock_acquire_options_init(&ao);
	ao.flags = ORBIT_LOCK_FREE_ON_DEATH; /* env.lock is the agent's: it names our tenure */
	return orbit_lock_try_acquire_with(sh->env.lock, &sh->key, &sh->owner, sh->ttl_ns, &ao,
					   &sh->lease, NULL);
}

static int lease_renew(struct orbit_spot_host *sh)
{
	/* the token too: a newer tenure of the key is never extended */
	return orbit_lock_renew(sh->env.lock, &sh->key, &sh->owner, sh->lease.token, sh->ttl_ns,
				&sh->lease);
}

_Atomic(int (*)(void)) orbit__spot_host_test_release_hook;

static int lease_release(struct orbit_spot_host *sh)
{
	/* Relaxed: a test's hook, set before the gate that lets this release run */
	int (*hook)(void) = atomic_load_explicit(&orbit__spot_host_test_release_hook,
						 memory_order_relaxed);
	int r = hook ? hook() : 0;

	if (r)
		return r;
	/* -ENOENT (expired) or -EPERM (a newer host): nothing of ours to free */
	return orbit_lock_release(sh->env.lock, &sh->key, &sh->owner, sh->lease.token);
}

/*
 * let_go - a lost host frees its lease as soon as nothing it handed over
 * is still out (the host thread, from host_main()): another process then
 * adopts the Spot at once, not when the TTL runs out. Waiting for the
 * hand-backs keeps a redelivered record from running in the next host
 * while this host's handler of it still runs, for as long as the lease
 * lasts (it is not renewed after the loss: a handler that runs past the
 * TTL can overlap the next host's run of its record, as for a host paused
 * past its lease). A lost host whose epoch is still the queue's completes
 * what comes back, as before. A host lost to a newer one (-ORBIT_EFENCED,
 * -EPERM) or an expired lease (-ENOENT) holds nothing: the release,
 * conditional on the owner and token, frees nothing. A release that did
 * not get through (-EAGAIN: the serializer stayed busy; a backend's
 * -ORBIT_EUNAVAILABLE) is tried again every RETRY_NS until the lease's
 * deadline.
 */
static void let_go(struct orbit_spot_host *sh)
{
	int r = lease_release(sh);

	if (r == 0 || r == -ENOENT || r == -EPERM || now_ns() >= sh->lease.deadline_ns)
		sh->lease_freed = true;
}

/* ---- losing ---- */

static void lose(struct orbit_spot_host *sh, int reason)
{
	int hosting = ORBIT_SPOT_HOSTING, none = 0;

	/* relaxed: the first cause stays (the host thread's renew and its take
	 * task may lose at once); SH-L1 below publishes it */
	atomic_compare_exchange_strong_explicit(&sh->lost_reason, &none, reason,
						memory_order_relaxed, memory_order_relaxed);
	/* SH-L1: release, pairs with SH-L2 in orbit_spot_host_state() and SH-L3 in
	 * lease_gone(): lost_reason before the state */
	if (!atomic_compare_exchange_strong_explicit(&sh->state, &hosting, ORBIT_SPOT_LOST,
						     memory_order_release, memory_order_relaxed))
		return;
	if (tls_host != sh) {
		/* the take task (feed_task()): on_lost runs on the host's
		 * thread, once the feed state is handed back (await_feed()) */
		sh->lost_cb_due = true;
		return;
	}
	/* the stored first cause, as await_feed() passes it: the same reason
	 * as stats.lost_reason whichever of the two losers got here first */
	if (sh->o.on_lost)
		sh->o.on_lost(sh, atomic_load_explicit(&sh->lost_reason, memory_order_relaxed),
			      sh->o.ctx);
}

static bool hosting(const struct orbit_spot_host *sh)
{
	/* relaxed: the feed state's owner (the host thread, or its take task
	 * while it feeds) writes LOST, and the other owner's renew: its own
	 * next read sees its own write; the other's, in time (a hint) */
	return atomic_load_explicit(&sh->state, memory_order_relaxed) == ORBIT_SPOT_HOSTING;
}

/* ---- handlers (workers) ---- */

/* The handler has finished: give the record back to the host thread. */
static void finish(struct delivery *d)
{
	struct orbit_spot_host *sh = d->host;
	/*
	 * After the enqueue the host thread may complete @d, exit, and stop
	 * free sh: a worker between its push and its last touch is counted in
	 * `finishing`, which stop waits for. Not with a coordinator the host
	 * made (own_coord, fixed before the thread starts): stop destroys it
	 * after orbit_spot_serial_executor_await_quiescence(), which returns
	 * only once this work record was released, after we returned (the
	 * coordinator's seq_cst release count, SX-D2, pairs with its wait):
	 * two locked instructions per record fewer.
	 */
	bool count = !sh->own_coord;
	struct delivery *top;

	if (count)
		atomic_fetch_add_explicit(&sh->finishing, 1, memory_order_relaxed);
	/* relaxed: the CAS's first guess only; the CAS below orders the push */
	top = atomic_load_explicit(&sh->done, memory_order_relaxed);
	do
		d->done_next = top;
	/* SH-F1: seq_cst CAS, pairs with SH-D1 (the push before the idle load)
	 * and SH-A4 (its release: d's fields and the handler's writes) */
	while (!atomic_compare_exchange_weak_explicit(&sh->done, &top, d, memory_order_seq_cst,
						      memory_order_relaxed));
	/* only the first finish of an idle period kicks: the rest find idle 0.
	 * SH-F1: seq_cst load, pairs with SH-D1 (the host's idle store) */
	if (atomic_load_explicit(&sh->idle, memory_order_seq_cst) &&
	    atomic_exchange_explicit(&sh->idle, 0, memory_order_seq_cst))
		orbit__spotq_kick(sh->q);
	/* SH-R1: release, pairs with SH-A1 in orbit_spot_host_stop(): our last touch of sh */
	if (count)
		atomic_fetch_sub_explicit(&sh->finishing, 1, memory_order_release);
}

static void record_latency(struct orbit_spot_host *sh, uint64_t submit_ns)
{
	uint64_t now = now_ns();

	orbit__spot_lat_add(&sh->lat, now > submit_ns ? now - submit_ns : 0);
}

/* Run one piece (the handler, or a continuation) of @d on @turn. */
static int run_piece(struct delivery *d, orbit_serial_turn_t *turn, orbit_serial_work_fn cont,
		     void *carg)
{
	struct orbit_spot_host *sh = d->host;
	struct delivery *prev = tls_cur;
	bool yielded = false;
	int r;

	d->turn = turn;
	d->yielded = &yielded;
	tls_cur = d;
	r = cont ? cont(turn, carg) : d->handler(turn, &d->rec, sh->o.ctx);
	tls_cur = prev;
	/* after a yield @d belongs to its continuation: not touched again here */
	if (yielded)
		return r;
	if (r == ORBIT_SERIAL_SUSPENDED)
		WINC(sh, protocol_errors, 1); /* suspended around us: finished for the queue */
	finish(d);
	return r;
}

/*
 * lease_gone - may a record whose handler has not started start now? Not
 * once the lease has run out by the coarse clock (less the margin: see
 * run_until_ns; by CLOCK_MONOTONIC with precise_clock), nor once the host
 * was lost for any reason but a closed coordinator's: another host may
 * run the record already (it gets it flagged
 * redelivered), and a record run here after that would run twice with
 * nothing to tell the application. A host paused past its lease
 * (SIGSTOP) found its queued records started by its workers as soon as
 * it resumed, before its thread's renewal found the loss. A host lost
 * with its lease still its own (-EPIPE, -ECHILD) runs them as before.
 * Context: a worker, before a handler; a clock read and relaxed loads
 * (see the fields).
 */
static bool lease_gone(struct orbit_spot_host *sh)
{
	uint64_t now;
	int why;

	if (atomic_load_explicit(&sh->lease_over, memory_order_relaxed))
		return true;
	/* The clock first, then the deadline: a deadline loaded first and
	 * compared after a preemption with a clock read later could be one a
	 * renewal had replaced meanwhile (a healthy host lost to one slow
	 * worker). Past it, the deadline is read once more before the
	 * sticky flag is set: a renewal that landed since counts. */
	/* the coarse clock is never ahead of CLOCK_MONOTONIC */
	now = orbit__clock_ns(sh->precise_clock ? CLOCK_MONOTONIC : CLOCK_MONOTONIC_COARSE);
	if (now >= atomic_load_explicit(&sh->run_until_ns, memory_order_relaxed) &&
	    now >= atomic_load_explicit(&sh->run_until_ns, memory_order_relaxed)) {
		atomic_store_explicit(&sh->lease_over, true, memory_order_relaxed);
		return true;
	}
	/* SH-L3: acquire, pairs with SH-L1 in lose(): lost_reason before the state */
	if (atomic_load_explicit(&sh->state, memory_order_acquire) == ORBIT_SPOT_HOSTING)
		return false;
	why = atomic_load_explicit(&sh->lost_reason, memory_order_relaxed);
	/* Only a loss that leaves the lease ours runs on; any other may not */
	return why != -EPIPE && why != -ECHILD;
}

static int run_first(orbit_serial_turn_t *turn, void *arg)
{
	struct delivery *d = arg;

	if (lease_gone(d->host)) {
		d->not_run = true; /* back to the host thread, which completes nothing */
		finish(d);
		return ORBIT_SERIAL_DONE;
	}

	/* the histogram samples the exact stamps only: no clock read for the others */
	if (d->rec.submit_exact)
		record_latency(d->host, d->rec.submit_ns);
	return run_piece(d, turn, NULL, NULL);
}

static int run_cont(orbit_serial_turn_t *turn, void *arg)
{
	struct delivery *d = arg;

	return run_piece(d, turn, d->cont, d->cont_arg);
}

int orbit_spot_yield(orbit_serial_turn_t *turn, orbit_serial_work_fn cont, void *arg,
		     orbit_serial_resume_t **out)
{
	struct delivery *d = tls_cur;
	int r;

	if (!turn || !cont || !out || !d || d->turn != turn)
		return -EINVAL;
	/* the continuation runs only through the queue, after this piece returned */
	d->cont = cont;
	d->cont_arg = arg;
	r = orbit_work_yield(turn, run_cont, d, out);
	if (r == 0)
		*d->yielded = true;
	return r;
}

/* ---- the host thread ---- */

/* @d is done with (host thread): keep it for reuse, or free it. */
static void delivery_put(struct orbit_spot_host *sh, struct delivery *d)
{
	if (d->cap != SPARE_PAYLOAD || sh->n_spare >= SPARE_MAX) {
		free(d);
		return;
	}
	d->next = sh->spare;
	sh->spare = d;
	sh->n_spare++;
}

/* Count the result @r of completing one record (a fence loses the Spot). */
static void complete_counted(struct orbit_spot_host *sh, int r)
{
	if (r == 0) {
		INC(sh, completed);
	} else if (r == -ORBIT_EFENCED) {
		INC(sh, fenced);
		lose(sh, r);
	} else {
		INC(sh, complete_errors);
	}
}

static void complete(struct orbit_spot_host *sh, struct delivery *d)
{
	/* a host killed here: the handler finished, the queue never heard (redelivered) */
	ORBIT_CRASHPOINT("spothost.before_complete");
	complete_counted(sh, orbit__spotq_complete(sh->h, d->lane, d->pos));
	delivery_put(sh, d);
}

#define DONE_BATCH 256u /* finished records completed per orbit__spotq_complete_n() */

/*
 * Complete the @n finished records @ds of @lane with one
 * orbit__spotq_complete_n() (one head advance, one doorbell check, one
 * counter add for all of them, where one complete() per record made each
 * of those per record), each counted as complete() counts it: a record
 * that fails is counted and skipped, the rest are completed after it.
 * Then each leaves in_flight and goes back to the spares.
 */
static void complete_batch(struct orbit_spot_host *sh, uint32_t lane, struct delivery **ds,
			   unsigned n)
{
	uint32_t pos[DONE_BATCH];
	unsigned off = 0;

	for (unsigned i = 0; i < n; i++) {
		/* a host killed here: the handlers finished, the queue never heard (redelivered) */
		ORBIT_CRASHPOINT("spothost.before_complete");
		pos[i] = ds[i]->pos;
	}
	while (off < n) {
		unsigned done = 0;
		int r = orbit__spotq_complete_n(sh->h, lane, pos + off, n - off, &done);

		ADD(sh, completed, done);
		off += done;
		if (off < n) {
			complete_counted(sh, r); /* the record at off failed */
			off++;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		delivery_put(sh, ds[i]);
	}
	/* SH-R2: release, pairs with SH-A3 in orbit_spot_host_stats(): the
	 * completes' counts before the records leave in_flight (the feed
	 * state's owner is its only writer: a release store of the new value) */
	atomic_store_explicit(&sh->in_flight, LD(in_flight) - n, memory_order_release);
}

/* Complete every record whose handler finished, per lane in batches. Returns how many. */
static unsigned drain_done(struct orbit_spot_host *sh)
{
	struct delivery *ds[ORBIT_SPOTQ_LANES][DONE_BATCH];
	unsigned nd[ORBIT_SPOTQ_LANES] = { 0 }, k = 0, unrun = 0;
	struct delivery *top;

	if (!atomic_load_explicit(&sh->done, memory_order_relaxed))
		return 0; /* nothing pushed (SH-D1 looks again with seq_cst before a sleep) */
	/*
	 * SH-A4: acquire, pairs with SH-F1: the whole stack, each delivery's
	 * fields. Newest first, not reversed (a second walk of the list, one
	 * dependent load per record): the head advance after the completes
	 * walks from the oldest FREED word whatever order they were freed in.
	 */
	top = atomic_exchange_explicit(&sh->done, NULL, memory_order_acquire);
	while (top) {
		struct delivery *d = top;
		uint32_t l = d->lane; /* from take(): < ORBIT_SPOTQ_LANES */

		top = d->done_next;
		sh->outstanding--;
		if (d->not_run) {
			/* not completed: it stays taken, the next host gets it flagged */
			delivery_put(sh, d);
			unrun++;
			k++;
			continue;
		}
		if (l >= ORBIT_SPOTQ_LANES) { /* never: complete() refuses it and counts it */
			complete(sh, d);
			/* SH-R2 as in complete_batch() */
			atomic_store_explicit(&sh->in_flight, LD(in_flight) - 1,
					      memory_order_release);
			k++;
			continue;
		}
		ds[l][nd[l]++] = d;
		if (nd[l] == DONE_BATCH) {
			complete_batch(sh, l, ds[l], nd[l]);
			nd[l] = 0;
		}
		k++;
	}
	for (uint32_t l = 0; l < ORBIT_SPOTQ_LANES; l++)
		if (nd[l])
			complete_batch(sh, l, ds[l], nd[l]);
	if (unrun) {
		ADD(sh, not_started, unrun);
		/* SH-R2 as in complete_batch(): counted before they leave in_flight */
		atomic_store_explicit(&sh->in_flight, LD(in_flight) - unrun, memory_order_release);
		/* relaxed: see the field */
		if (atomic_load_explicit(&sh->lease_over, memory_order_relaxed))
			lose(sh, -ENOENT); /* no renewal can succeed now: the lease ran out */
	}
	return k;
}

static orbit_spot_handler_fn handler_of(const struct orbit_spot_host *sh, uint32_t kind)
{
	switch (kind) {
	case ORBIT_SPOT_ENTRY_SPOT:
		return sh->o.on_spot;
	case ORBIT_SPOT_ENTRY_ACTOR:
		return sh->o.on_actor;
	case ORBIT_SPOT_ENTRY_TIMER:
		return sh->o.on_timer;
	default:
		return sh->o.on_lifecycle;
	}
}

static int refused(struct orbit_spot_host *sh, struct delivery *d, int r);

/* Count the @n deliveries @ds the coordinator accepted (host thread). */
static void handed(struct orbit_spot_host *sh, struct delivery *const *ds, unsigned n)
{
	uint64_t re = 0;

	if (!n)
		return;
	for (unsigned i = 0; i < n; i++)
		re += ds[i]->rec.redelivered;
	sh->outstanding += n;
	/* SH-R2 (the host thread's every store of in_flight is a release, so
	 * an SH-A3 load that reads this one also sees the completes before) */
	atomic_store_explicit(&sh->in_flight, LD(in_flight) + n, memory_order_release);
	ADD(sh, delivered, n);
	if (re)
		ADD(sh, redelivered, re);
}

/* Hand @d to the coordinator. 0: handed over (or completed unrun); -EAGAIN: keep it. */
static int dispatch(struct orbit_spot_host *sh, struct delivery *d)
{
	orbit_spot_serial_executor_t *c = sh->coord;
	int r;

	if (!d->handler) {
		INC(sh, unhandled);
		complete(sh, d);
		return 0;
	}
	switch (d->rec.kind) {
	case ORBIT_SPOT_ENTRY_SPOT:
		r = orbit_spot_execute_spot(c, run_first, d, NULL);
		break;
	case ORBIT_SPOT_ENTRY_ACTOR:
		r = orbit_spot_execute_actor(c, d->rec.actor_id, run_first, d, d->rec.len, NULL);
		break;
	case ORBIT_SPOT_ENTRY_TIMER:
		r = orbit_spot_execute_timer(c, timer_of(d), run_first, d, NULL);
		break;
	default:
		r = orbit_spot_execute_lifecycle(c, run_first, d, NULL);
		break;
	}
	if (r == 0) {
		handed(sh, &d, 1);
		return 0;
	}
	return refused(sh, d, r);
}

/*
 * What the coordinator's refusal @r of @d means (dispatch()): -EAGAIN,
 * the record stays taken and first in line; 0, it was completed unrun.
 */
static int refused(struct orbit_spot_host *sh, struct delivery *d, int r)
{
	if (r == -EAGAIN || r == -ENOMEM) {
		INC(sh, retried); /* backpressure: the record stays taken, first in line */
		return -EAGAIN;
	}
	if (r == -EPIPE || r == -ECHILD) {
		/* the coordinator was closed, or its process is not this one (a
		 * caller's executor that wraps an inherited pool, a coordinator
		 * made before a fork): the record stays taken, the next host
		 * gets it */
		lose(sh, r);
		return -EAGAIN;
	}
	/* -E2BIG, -EINVAL: it can never run on this coordinator */
	INC(sh, undeliverable);
	complete(sh, d);
	return 0;
}

static struct delivery *delivery_of(struct orbit_spot_host *sh, const struct orbit_spotq_rec *r)
{
	uint32_t cap = r->payload_len <= SPARE_PAYLOAD ? SPARE_PAYLOAD : r->payload_len;
	struct delivery *d = cap == SPARE_PAYLOAD ? sh->spare : NULL;

	if (d) {
		sh->spare = d->next;
		sh->n_spare--;
	} else {
		d = malloc(sizeof(*d) + cap + TIMER_ROOM);
		if (!d)
			return NULL;
	}
	/* Every field set here, no memset of the whole delivery (the timer
	 * name is copied for timer records only). */
	d->done_next = NULL;
	d->host = sh;
	d->next = NULL;
	d->handler = handler_of(sh, r->kind);
	d->turn = NULL;
	d->yielded = NULL;
	d->cont = NULL;
	d->cont_arg = NULL;
	d->lane = r->lane;
	d->pos = r->pos;
	d->cap = cap;
	d->not_run = false;
	memcpy(d->payload, r->payload, r->payload_len);
	if (r->kind == ORBIT_SPOTQ_KIND_TIMER) {
		char *t = timer_of(d);

		memcpy(t, r->timer_name, TIMER_ROOM);
		t[TIMER_ROOM - 1] = '\0';
	}
	d->rec = (struct orbit_spot_record){
		.payload = r->payload_len ? d->payload : NULL,
		.len = r->payload_len,
		.kind = (enum orbit_spot_entry_kind)r->kind,
		.actor_id = r->kind == ORBIT_SPOTQ_KIND_ACTOR ? r->actor_id : 0,
		.timer_name = r->kind == ORBIT_SPOTQ_KIND_TIMER ? timer_of(d) : "",
		.producer_row = r->member_row,
		.producer_gen = r->member_gen,
		.producer_seq = r->producer_seq,
		.host_epoch = r->host_epoch,
		.redelivered = r->redelivered,
		.submit_ns = r->submit_ns,
		.submit_exact = r->submit_exact,
	};
	return d;
}

static void pend(struct orbit_spot_host *sh, uint32_t lane, struct delivery *d)
{
	d->next = NULL;
	if (sh->pending[lane])
		sh->pending_tail[lane]->next = d;
	else
		sh->pending[lane] = d;
	sh->pending_tail[lane] = d;
}

/* Does @d go to the coordinator in a run (orbit__spot_execute_n())? */
static bool batchable(const struct delivery *d)
{
	return d->handler &&
	       (d->rec.kind == ORBIT_SPOT_ENTRY_SPOT || d->rec.kind == ORBIT_SPOT_ENTRY_LIFECYCLE);
}

/*
 * Hand the run @ds[0..@n) of @lane (batchable(), one kind, in take order)
 * to the coordinator with orbit__spot_execute_n(): one queue lock and at
 * most one worker wake-up for the run where dispatch() made one of each
 * per record. The same outcome per record as dispatch() one after the
 * other: the accepted ones are counted, a refused one is kept first in
 * line (pend(), with everything after it: nothing passes it) or, when it
 * can never run, completed unrun and the run goes on after it.
 */
static void dispatch_run(struct orbit_spot_host *sh, uint32_t lane, struct delivery **ds,
			 unsigned n)
{
	bool lc = ds[0]->rec.kind == ORBIT_SPOT_ENTRY_LIFECYCLE;
	void *args[ORBIT__SPOT_BATCH_MAX];
	unsigned i = 0;

	while (i < n && !sh->pending[lane]) {
		int err = 0, k;

		for (unsigned j = i; j < n; j++)
			args[j - i] = ds[j];
		k = orbit__spot_execute_n(sh->coord, lc, run_first, args, n - i, &err);
		if (k < 0) { /* never with these arguments */
			err = k;
			k = 0;
		}
		handed(sh, ds + i, (unsigned)k);
		i += (unsigned)k;
		if (i == n || refused(sh, ds[i], err) < 0)
			break;
		i++; /* completed unrun */
	}
	for (; i < n; i++)
		pend(sh, lane, ds[i]); /* head-of-line: the refused one first */
}

/*
 * Take up to RUN_TAKES batches of @lane, as long as each comes full, and
 * hand them over: Spot and lifecycle records in runs of up to
 * ORBIT__SPOT_BATCH_MAX (dispatch_run()), the others one by one. The
 * payloads are copied out of the take buffer (delivery_of()) before the
 * next take reuses it. Returns the records taken.
 */
static unsigned take_lane(struct orbit_spot_host *sh, uint32_t lane)
{
	struct delivery *run[ORBIT__SPOT_BATCH_MAX];
	unsigned m = 0, moved = 0;

	for (unsigned t = 0; t < RUN_TAKES; t++) {
		int n = orbit__spotq_take(sh->h, lane, sh->recs, sh->batch, sh->buf, sh->buf_len);

		if (n == -ORBIT_EFENCED) {
			lose(sh, n);
			break;
		}
		if (n < 0)
			break; /* -ORBIT_ECORRUPT lane words: counted by the SHM layer; poll */
		for (int k = 0; k < n; k++) {
			struct delivery *d = delivery_of(sh, &sh->recs[k]);
			if (!d) {
				/* no memory: it stays taken, uncompleted: a later host redelivers */
				INC(sh, undeliverable);
				continue;
			}
			/* Spot and lifecycle records go over in runs (dispatch_run()) */
			if (m && (m == ORBIT__SPOT_BATCH_MAX || !batchable(d) ||
				  d->rec.kind != run[0]->rec.kind)) {
				dispatch_run(sh, lane, run, m);
				m = 0;
			}
			if (batchable(d))
				run[m++] = d;
			else if (sh->pending[lane] || dispatch(sh, d) < 0)
				pend(sh, lane, d);
		}
		moved += (unsigned)n;
		if ((unsigned)n < sh->batch || sh->pending[lane] || !hosting(sh))
			break;
	}
	/*
	 * A later take of this call found the Spot lost (lose()): the host
	 * takes and hands over nothing more, so the gathered run stays taken
	 * (pending: stop frees it, the next host redelivers it).
	 */
	for (unsigned k = 0; k < m && !hosting(sh); k++)
		pend(sh, lane, run[k]);
	if (m && hosting(sh))
		dispatch_run(sh, lane, run, m);
	return moved;
}

/* Retry refused records, then take and hand over new ones. Returns records moved. */
static unsigned feed(struct orbit_spot_host *sh)
{
	static const uint32_t order[2] = { ORBIT_SPOTQ_LIFECYCLE, ORBIT_SPOTQ_APP };
	unsigned moved = 0;

	for (int i = 0; i < 2 && hosting(sh); i++) {
		uint32_t lane = order[i];

		while (sh->pending[lane]) {
			/* next first: a record completed unrun frees d or makes it a spare */
			struct delivery *d = sh->pending[lane], *next = d->next;

			if (dispatch(sh, d) < 0)
				break;
			sh->pending[lane] = next;
			moved++;
		}
		if (sh->pending[lane] || !hosting(sh))
			continue; /* head-of-line: nothing of this lane passes a refused record */
		moved += take_lane(sh, lane);
	}
	return moved;
}

static void renew_if_due(struct orbit_spot_host *sh, uint64_t now)
{
	int r;

	if (now < sh->renew_at_ns)
		return;
	r = lease_renew(sh);
	if (r == -EAGAIN && now < sh->lease.deadline_ns) {
		/* the serializer stayed busy: nothing changed, try again in 1 ms */
		INC(sh, renew_retries);
		sh->renew_at_ns = now + (uint64_t)RETRY_NS;
		return;
	}
	if (r < 0) {
		lose(sh, r); /* expired (-ENOENT), another host's (-EPERM), or past the deadline */
		return;
	}
	INC(sh, renewals);
	lease_until(sh);
	sh->renew_at_ns = now + sh->ttl_ns / 4;
}

/*
 * The take task: the host thread's take-and-hand-over round (drain_done()
 * and feed()) as a task of the coordinator's executor, so that while
 * records stream the take and their handlers run on one worker thread,
 * one after the other, with no thread switch and no worker wake-up
 * between them (the host thread and the worker shared the consumer's CPU
 * and switched about every run). The task posts itself again while a
 * round moves anything (the coordinator's drains, posted by its
 * hand-over, run in between: the executor is FIFO for the pool's worker)
 * and hands the feed state back to the host thread when a round moved
 * nothing, the host stops or loses the Spot, or the executor refuses: the
 * host thread then polls, sleeps and is rung as before. A task that waits
 * in the executor's queue while no round ran for a whole RECLAIM_NS
 * (every worker busy in handlers) loses the feed state to the host thread, which goes on
 * taking itself meanwhile (await_feed()); the late task then does
 * nothing. The drain still never runs on the submitter's stack: the
 * hand-over posts it.
 *
 * A task's argument is the host's struct feed_link, not the host: a task
 * touches the host (sh) only in a round, which owns the feed state, and
 * otherwise only the link, which the last of its references frees. So
 * orbit_spot_host_stop() never waits for a task still queued (it may be
 * queued behind the very task that calls the stop, on the pool's only
 * worker): after its join the host thread owns the feed state, the stop
 * marks the link FEED_DEAD and drops the host's reference; a late task's
 * CAS fails and it drops its own.
 */
#define FEED_HOST 0
#define FEED_POSTED 1
#define FEED_RUNNING 2
#define FEED_DEAD 3 /* the host stopped: no round starts any more */
#define RECLAIM_NS 1000000ull

/*
 * `feeding`: FEED_HOST (the host thread owns the feed state: pending,
 * spare, recs, buf, outstanding, the host thread's counters, the SHM host
 * handle's take and complete), FEED_POSTED (a task is queued and will own
 * it unless the host thread takes it back), FEED_RUNNING (a task's round
 * owns it), FEED_DEAD. One owner at a time: a round starts only by its
 * CAS POSTED -> RUNNING, the host thread takes the feed state back only
 * by its CAS POSTED -> HOST or by reading the task's HOST. SH-P1..SH-P4.
 */
struct feed_link {
	/* a line of its own: a heap neighbour's writes would bounce it */
	_Alignas(64) _Atomic int feeding;
	/* SH-R3/SH-A5: the host's one (dropped by the stop) and one per task
	 * posted and not past its last touch of the link; the host thread
	 * posts a task only at 1, so a reclaimed task is never joined by a
	 * second one; the last one frees the link */
	_Atomic unsigned refs;
	_Atomic uint64_t rounds; /* rounds run (relaxed: a progress hint for the reclaim) */
	/* Bumped by the task after it hands the feed state back (SH-P1),
	 * the host thread's private futex while it waits for that: not the
	 * queue's records doorbell, whose host bit makes every producer ring */
	_Atomic uint32_t seq;
	_Atomic uint32_t waiting;   /* SH-W1/SH-W2: the host thread sleeps on seq */
	struct orbit_spot_host *sh; /* touched only in a round (feed state owned) */
};

static void feed_put(struct feed_link *fl)
{
	/* SH-R3 (release) and SH-A5 (acquire, the last one): every holder's
	 * touches of the link before its free */
	if (atomic_fetch_sub_explicit(&fl->refs, 1, memory_order_acq_rel) == 1)
		free(fl);
}

static void feed_task(void *arg)
{
	struct feed_link *fl = arg;
	struct orbit_spot_host *sh;
	orbit_executor_t ex;
	int posted = FEED_POSTED;
	bool stopping;
	unsigned moved;

	/* SH-P3: acquire, pairs with SH-P4: the feed state as the host
	 * thread or the previous round left it */
	if (!atomic_compare_exchange_strong_explicit(&fl->feeding, &posted, FEED_RUNNING,
						     memory_order_acquire, memory_order_relaxed))
		goto out; /* the host thread took it back while we were queued, or stopped */
	sh = fl->sh;
	/* relaxed: a hint for the host thread's reclaim (await_feed()) */
	atomic_store_explicit(&fl->rounds,
			      atomic_load_explicit(&fl->rounds, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	/* SH-A2: acquire, pairs with SH-S1 in orbit_spot_host_stop() */
	stopping = atomic_load_explicit(&sh->stop, memory_order_acquire);
	moved = drain_done(sh);
	if (hosting(sh) && !stopping)
		moved += feed(sh);
	if (moved && !stopping && hosting(sh)) {
		ex = sh->o.executor; /* the caller's pool: it outlives the host */
		atomic_fetch_add_explicit(&fl->refs, 1, memory_order_relaxed); /* the next task's */
		/* SH-P4: release, pairs with SH-P3 (the next round) and SH-P2 (a
		 * host thread that takes the feed state back); from here on sh
		 * may be stopped and freed: only fl and ex are touched */
		atomic_store_explicit(&fl->feeding, FEED_POSTED, memory_order_release);
		if (ex.submit(ex.ctx, feed_task, fl, ORBIT_NODE_ANY) == 0)
			goto out; /* the next round owns the feed state */
		/* never runs; relaxed: ours keeps the link */
		atomic_fetch_sub_explicit(&fl->refs, 1, memory_order_relaxed);
		posted = FEED_POSTED;
		/* SH-P3 again: ours unless the host thread took it meanwhile */
		if (!atomic_compare_exchange_strong_explicit(&fl->feeding, &posted, FEED_RUNNING,
							     memory_order_acquire,
							     memory_order_relaxed))
			goto out;
	}
	/* SH-P1: release, pairs with SH-P2 in await_feed(): the feed state
	 * back to the host thread (sh is not touched after it), then the
	 * bump that ends a wait that read the old value */
	atomic_store_explicit(&fl->feeding, FEED_HOST, memory_order_release);
	/* SH-W1: seq_cst bump, then seq_cst load of waiting; pairs with
	 * SH-W2 in await_feed() (its waiting store, then its seq load): the
	 * host thread sees the bump or we see it waiting and wake it */
	atomic_fetch_add_explicit(&fl->seq, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&fl->waiting, memory_order_seq_cst))
		orbit__futex_wake(&fl->seq, 1);
out:
	feed_put(fl); /* SH-R3 */
}

/*
 * Hand the feed state to the take task (the round that moved records
 * goes on there) and wait until it comes back, renewing the lease
 * meanwhile; take it back from a task still queued after RECLAIM_NS.
 * false: nothing was handed over (a reclaimed task is still queued, or
 * the executor refused): the host thread goes on itself.
 */
static bool await_feed(struct orbit_spot_host *sh)
{
	struct feed_link *fl = sh->fl;
	uint64_t rounds, last_round_ns;

	/* SH-A5: acquire, pairs with SH-R3 in feed_task(): a reclaimed task
	 * has run and will not touch the feed state */
	if (atomic_load_explicit(&fl->refs, memory_order_acquire) != 1)
		return false;
	atomic_fetch_add_explicit(&fl->refs, 1, memory_order_relaxed); /* the task's */
	/* SH-P4: release, pairs with SH-P3 in feed_task(): our feed state */
	atomic_store_explicit(&fl->feeding, FEED_POSTED, memory_order_release);
	if (sh->o.executor.submit(sh->o.executor.ctx, feed_task, fl, ORBIT_NODE_ANY) != 0) {
		atomic_fetch_sub_explicit(&fl->refs, 1, memory_order_relaxed);
		atomic_store_explicit(&fl->feeding, FEED_HOST,
				      memory_order_relaxed); /* never ran */
		return false;
	}
	/* relaxed: a progress hint, see the reclaim below */
	rounds = atomic_load_explicit(&fl->rounds, memory_order_relaxed);
	last_round_ns = now_ns();

	for (;;) {
		uint64_t now = now_ns(),
			 r = atomic_load_explicit(&fl->rounds, memory_order_relaxed);
		uint64_t to;
		uint32_t seen;
		int posted = FEED_POSTED;

		/* SH-P2: acquire, pairs with SH-P1 in feed_task(): the feed state is ours again */
		if (atomic_load_explicit(&fl->feeding, memory_order_acquire) == FEED_HOST)
			break;
		if (r != rounds) { /* a round ran since the last look */
			rounds = r;
			last_round_ns = now;
		} else if (now - last_round_ns >= RECLAIM_NS &&
			   atomic_compare_exchange_strong_explicit(&fl->feeding, &posted, FEED_HOST,
								   memory_order_acquire,
								   memory_order_relaxed)) {
			/* no round for a whole RECLAIM_NS by the clock (the task is
			 * queued behind workers busy in handlers, not just behind
			 * one drain): SH-P2, an acquire CAS, pairs with SH-P4 */
			break;
		}
		to = last_round_ns + RECLAIM_NS > now ? last_round_ns + RECLAIM_NS - now
						      : RECLAIM_NS;
		if (hosting(sh)) {
			renew_if_due(sh, now);
			if (sh->renew_at_ns <= now)
				to = 0;
			else if (sh->renew_at_ns - now < to)
				to = sh->renew_at_ns - now;
		}
		/* SH-W2: seq_cst, pairs with SH-W1 in feed_task(): announce, then
		 * read seq and check feeding once more */
		atomic_store_explicit(&fl->waiting, 1, memory_order_seq_cst);
		seen = atomic_load_explicit(&fl->seq, memory_order_seq_cst);
		/* SH-P2: acquire, pairs with SH-P1 in feed_task() */
		if (atomic_load_explicit(&fl->feeding, memory_order_acquire) != FEED_HOST)
			orbit__futex_wait_ns(&fl->seq, seen, to); /* EINTR, timeout: look again */
		atomic_store_explicit(&fl->waiting, 0, memory_order_relaxed);
	}
	if (sh->lost_cb_due) {
		sh->lost_cb_due = false;
		if (sh->o.on_lost)
			sh->o.on_lost(sh,
				      atomic_load_explicit(&sh->lost_reason, memory_order_relaxed),
				      sh->o.ctx);
	}
	return true;
}

static void *host_main(void *p)
{
	struct orbit_spot_host *sh = p;
	bool ready = false; /* the last wait saw a lane ready, without sleeping */

	tls_host = sh;

	for (;;) {
		/* SH-A2: acquire, pairs with SH-S1 in orbit_spot_host_stop() */
		bool stopping = atomic_load_explicit(&sh->stop, memory_order_acquire);
		unsigned moved = drain_done(sh);
		int64_t to = -1;
		uint32_t seen;
		bool poll;

		if (!hosting(sh) && sh->outstanding == 0) {
			if (!sh->lease_freed)
				let_go(sh);
			if (sh->lease_freed)
				break; /* lost, nothing out, nothing held: the stop joins at once */
		}
		if (stopping && sh->outstanding == 0)
			break;
		if (hosting(sh))
			renew_if_due(sh, now_ns());
		if (hosting(sh) && !stopping)
			moved += feed(sh);
		poll = ready && !moved; /* a ready lane that gave nothing: poll, never spin */
		ready = false;
		if (moved && sh->fl && !stopping && hosting(sh) && await_feed(sh))
			continue; /* records streamed on the take task: back to the top */
		if (moved)
			continue;

		/* SH-D1: idle, then the seq, then what may wake us (the stop load: SH-A2 again) */
		atomic_store_explicit(&sh->idle, 1, memory_order_seq_cst);
		atomic_thread_fence(memory_order_seq_cst);
		seen = orbit__spotq_host_seq(sh->h);
		/* SH-D1: seq_cst load of done after the idle store, pairs with SH-F1 (the push) */
		if (atomic_load_explicit(&sh->done, memory_order_seq_cst) ||
		    atomic_load_explicit(&sh->stop, memory_order_acquire) != stopping) {
			atomic_store_explicit(&sh->idle, 0, memory_order_relaxed);
			continue;
		}
		if (hosting(sh) && !stopping) {
			uint64_t now = now_ns();
			uint32_t lanes = 0;
			int r;

			to = sh->renew_at_ns > now ? (int64_t)(sh->renew_at_ns - now) : 0;
			for (uint32_t l = 0; l < 2; l++)
				if (!sh->pending[l]) /* a refused head: that lane waits for room */
					lanes |= 1u << l;
				else if (to < 0 || to > RETRY_NS)
					to = RETRY_NS; /* room comes back unannounced */
			if (poll) {
				lanes = 0;
				to = to >= 0 && to < STALL_POLL_NS ? to : STALL_POLL_NS;
			}
			/* announce, re-check the lanes, sleep past seen (SQ-D1): a
			 * producer's ring or a worker's kick after seen ends it */
			r = orbit__spotq_host_wait_seq(sh->h, seen, lanes, to, sh->env.wake_class);
			if (r == -ORBIT_EFENCED)
				lose(sh, r);
			ready = r == 1;
		} else {
			/* a worker's kick or stop (both after seen) ends it; a lost
			 * host's release that did not get through goes again */
			if (!sh->lease_freed && sh->outstanding == 0 && !hosting(sh))
				to = RETRY_NS;
			orbit__doorbell_wait_class(sh->rec_db, seen, to, sh->env.wake_class);
		}
		atomic_store_explicit(&sh->idle, 0, memory_order_relaxed);
	}
	return NULL;
}

/* ---- the stats slot ---- */

static uint64_t since(uint64_t now, uint64_t base)
{
	return now >= base ? now - base : 0; /* scribbled queue words never go negative */
}

/*
 * host_fill - the agent's publish (agent/agent_spot_stats.c, under its
 * registry mutex, any agent thread): the queue's counters since this
 * host's takeover, the host's own, and the submit-to-run histogram.
 * Relaxed loads only: a statistics snapshot, not atomic as a whole.
 */
static void host_fill(void *obj, struct orbit_stats_spot_snapshot *snap)
{
	struct orbit_spot_host *sh = obj;
	struct orbit_spotq_counters q, *b = &sh->base;
	uint64_t *c = snap->counters, dead[2], unblock[2];

	if (orbit__spotq_counters(sh->q, &q) == 0) {
		for (int l = 0; l < 2; l++) {
			c[ORBIT_SPOT_HOST_ACCEPTED] += since(q.accepted[l], b->accepted[l]);
			c[ORBIT_SPOT_HOST_REJECTED_COUNT] += since(q.rejected_count[l],
								   b->rejected_count[l]);
			c[ORBIT_SPOT_HOST_REJECTED_BYTES] += since(q.rejected_bytes[l],
								   b->rejected_bytes[l]);
			c[ORBIT_SPOT_HOST_CORRUPT] += since(q.corrupt[l], b->corrupt[l]);
		}
		c[ORBIT_SPOT_HOST_APP_DEPTH] = q.depth[ORBIT_SPOTQ_APP];
		c[ORBIT_SPOT_HOST_APP_BYTES] = q.bytes[ORBIT_SPOTQ_APP];
		c[ORBIT_SPOT_HOST_LIFECYCLE_DEPTH] = q.depth[ORBIT_SPOTQ_LIFECYCLE];
		c[ORBIT_SPOT_HOST_LIFECYCLE_BYTES] = q.bytes[ORBIT_SPOTQ_LIFECYCLE];
	}
	orbit__spotq_host_aborts(sh->h, dead, unblock);
	c[ORBIT_SPOT_HOST_ABORTED_DEAD] = dead[0] + dead[1];
	c[ORBIT_SPOT_HOST_ABORTED_UNBLOCK] = unblock[0] + unblock[1];
	c[ORBIT_SPOT_HOST_DELIVERED] = LD(delivered);
	c[ORBIT_SPOT_HOST_COMPLETED] = LD(completed);
	c[ORBIT_SPOT_HOST_REDELIVERED] = LD(redelivered);
	c[ORBIT_SPOT_HOST_FENCED] = LD(fenced);
	c[ORBIT_SPOT_HOST_RETRIED] = LD(retried);
	c[ORBIT_SPOT_HOST_UNDELIVERABLE] = LD(undeliverable);
	c[ORBIT_SPOT_HOST_UNHANDLED] = LD(unhandled);
	c[ORBIT_SPOT_HOST_IN_FLIGHT] = LD(in_flight);
	c[ORBIT_SPOT_HOST_NOT_STARTED] = LD(not_started);
	c[ORBIT_SPOT_HOST_EPOCH] = sh->epoch;
	/* relaxed: a display value (SH-L1 orders lost_reason, not needed here) */
	c[ORBIT_SPOT_HOST_LOST] = atomic_load_explicit(&sh->state, memory_order_relaxed) ==
				  ORBIT_SPOT_LOST;
	c[ORBIT_SPOT_HOST_LATENCY_MAX_NS] = LD(lat.max_ns);
	snap->hist.sum_ns = LD(lat.sum_ns);
	orbit__spot_lat_fold(&sh->lat, true, snap->hist.buckets, ORBIT_STATS_BUCKETS,
			     &snap->hist.count);
}

void orbit_spot_host_options_init(struct orbit_spot_host_options *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
}

static int options_check(const struct orbit_spot_host_options *o)
{
	char seg[ORBIT_SEG_NAME_MAX];

	if (!o->spot || orbit__spotq_seg_name(seg, sizeof(seg), o->spot) < 0)
		return -EINVAL;
	if (!o->on_spot && !o->on_actor && !o->on_timer && !o->on_lifecycle)
		return -EINVAL;
	if (!o->coordinator && !o->executor.submit)
		return -EINVAL;
	if (o->mode != 0 && o->mode != ORBIT_SPOT_PER_ACTOR && o->mode != ORBIT_SPOT_SPOT_WIDE)
		return -EINVAL;
	if (o->lease_ttl_ns && o->lease_ttl_ns < MIN_TTL_NS)
		return -EINVAL;
	if (o->batch > MAX_BATCH)
		return -EINVAL;
	return 0;
}

static int coordinator_make(struct orbit_spot_host *sh)
{
	struct orbit_spot_serial_executor_options co;

	if (sh->o.coordinator) {
		sh->coord = sh->o.coordinator;
		return 0;
	}
	orbit_spot_serial_executor_options_init(&co);
	co.mode = sh->o.mode ? (int)sh->o.mode : ORBIT_SPOT_PER_ACTOR;
	co.executor = sh->o.executor;
	co.spot_policy = sh->o.spot_policy;
	co.actor_policy = sh->o.actor_policy;
	co.name = sh->spot;
	sh->own_coord = true;
	return orbit_spot_serial_executor_create(&co, &sh->coord);
}

static void coordinator_drop(struct orbit_spot_host *sh)
{
	if (!sh->own_coord || !sh->coord)
		return;
	orbit_spot_serial_executor_close(sh->coord);
	orbit_spot_serial_executor_await_quiescence(sh->coord, -1);
	orbit_spot_serial_executor_destroy(sh->coord);
	sh->coord = NULL;
}

static int buffers_make(struct orbit_spot_host *sh)
{
	struct orbit_spotq_counters c;
	int r = orbit__spotq_counters(sh->q, &c);

	if (r < 0)
		return r;
	/* one record of either lane always fits (take's -ENOBUFS never comes) */
	sh->buf_len = c.byte_cap[0] > c.byte_cap[1] ? c.byte_cap[0] : c.byte_cap[1];
	sh->batch = sh->o.batch ? sh->o.batch : ORBIT_SPOT_DEFAULT_BATCH;
	sh->buf = malloc(sh->buf_len);
	sh->recs = calloc(sh->batch, sizeof(*sh->recs));
	return sh->buf && sh->recs ? 0 : -ENOMEM;
}

int orbit_spot_host_start(orbit_agent_t *agent, const struct orbit_spot_host_options *opts,
			  orbit_spot_host_t **out)
{
	struct orbit_spot_host *sh;
	int r;

	if (!agent || !opts || !out)
		return -EINVAL;
	sh = calloc(1, sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	r = orbit__spot_opts_copy(&sh->o, sizeof(sh->o), opts, opts->size);
	if (r < 0)
		goto err_free;
	r = options_check(&sh->o);
	if (r < 0)
		goto err_free;
	/* an inherited coordinator or pool would refuse every record: say so
	 * before the lease is taken */
	r = sh->o.coordinator ? orbit__spot_fork_check(sh->o.coordinator)
			      : orbit__executor_fork_check(&sh->o.executor);
	if (r < 0)
		goto err_free;
	r = orbit__agent_spot_env(agent, &sh->env);
	if (r < 0)
		goto err_free;
	if (!sh->env.lock) {
		r = -EINVAL; /* the lease needs the agent's lock handle */
		goto err_free;
	}
	snprintf(sh->spot, sizeof(sh->spot), "%s", sh->o.spot);
	sh->o.spot = sh->spot;
	sh->pid = orbit__self_pid();
	sh->ttl_ns = sh->o.lease_ttl_ns ? sh->o.lease_ttl_ns : ORBIT_SPOT_DEFAULT_LEASE_TTL_NS;
	sh->key = orbit_lock_key(spot_lease_ns, sh->spot, strlen(sh->spot));
	snprintf(sh->owner_bytes, sizeof(sh->owner_bytes), "spot-host pid %ld row %d #%u",
		 (long)getpid(), sh->env.row,
		 atomic_fetch_add_explicit(&owner_nonce, 1, memory_order_relaxed));
	sh->owner.bytes = sh->owner_bytes;
	sh->owner.len = strlen(sh->owner_bytes);
	atomic_init(&sh->done, NULL);
	atomic_init(&sh->state, ORBIT_SPOT_HOSTING);
	atomic_init(&sh->run_until_ns, 0);
	atomic_init(&sh->lease_over, false);

	r = orbit__spot_queue_open(&sh->q, &sh->env, sh->spot, &sh->o.caps);
	if (r < 0)
		goto err_free;
	sh->rec_db = &((struct orbit_spotq_shm *)orbit__seg_body(orbit__spotq_seg(sh->q)))->rec_db;
	r = buffers_make(sh);
	if (r < 0)
		goto err_queue;
	r = lease_take(sh);
	if (r < 0)
		goto err_queue;
	{
		struct timespec res = { 0, 0 };
		uint64_t m = clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0
				 ? (uint64_t)res.tv_sec * 1000000000ull + (uint64_t)res.tv_nsec
				 : sh->ttl_ns / 4;

		/* a tick longer than a quarter TTL (HZ=100 and a 10 ms TTL) could
		 * lag past the deadline: read CLOCK_MONOTONIC then, no margin */
		sh->precise_clock = m > sh->ttl_ns / 4;
		sh->run_margin_ns = sh->precise_clock ? 0 : m;
	}
	lease_until(sh);
	sh->renew_at_ns = now_ns() + sh->ttl_ns / 4;
	sh->epoch = sh->lease.token;
	/* the stats slot counts the queue's counters from here (host_fill()) */
	r = orbit__spotq_counters(sh->q, &sh->base);
	if (r < 0)
		goto err_lease;
	/* the lease's fencing token is the epoch: a later host has a larger one */
	r = orbit__spotq_host_takeover(&sh->h, sh->q, sh->env.members, sh->lease.token);
	if (r < 0)
		goto err_lease;
	r = coordinator_make(sh);
	if (r < 0)
		goto err_host;
	/* the take task needs the coordinator's own executor (not a caller's
	 * coordinator, whose executor we do not know) */
	if (sh->own_coord && sh->o.executor.submit) {
		sh->fl = aligned_alloc(_Alignof(struct feed_link), sizeof(*sh->fl));
		if (!sh->fl) {
			r = -ENOMEM;
			goto err_coord;
		}
		memset(sh->fl, 0, sizeof(*sh->fl));
		sh->fl->sh = sh;
		atomic_init(&sh->fl->refs, 1);
	}
	r = -pthread_create(&sh->thread, NULL, host_main, sh);
	if (r < 0)
		goto err_coord;
	/* published from now on; no free slot: hosted unpublished (counted by the agent) */
	sh->agent = agent;
	orbit__agent_spot_hold(agent); /* released at the end of orbit_spot_host_stop() */
	sh->stats_slot = orbit__agent_spot_register(agent, ORBIT_STATS_SPOT_HOST, sh->spot, sh,
						    host_fill);
	*out = sh;
	return 0;
err_coord:
	free(sh->fl); /* no task was posted */
	coordinator_drop(sh);
err_host:
	orbit__spotq_host_close(sh->h);
err_lease:
	(void)lease_release(sh);
err_queue:
	orbit__spotq_close(sh->q);
err_free:
	free(sh->buf);
	free(sh->recs);
	free(sh);
	return r;
}

int orbit_spot_host_stop(orbit_spot_host_t *sh)
{
	struct delivery *d;

	if (!sh)
		return 0;
	if (orbit__fork_check(sh->pid))
		return -ECHILD; /* the child has no host thread: its copy is left alone */
	if (tls_cur && tls_cur->host == sh)
		return -EDEADLK;
	/* first: once it returns the agent's publish never reads sh again */
	orbit__agent_spot_unregister(sh->agent, sh->stats_slot);
	/* SH-S1: seq_cst, pairs with SH-A2 in host_main(): the flag, then an
	 * unconditional kick (a seq bump the thread sees) */
	atomic_store_explicit(&sh->stop, 1, memory_order_seq_cst);
	orbit__spotq_kick(sh->q);
	orbit__die_on(pthread_join(sh->thread, NULL), "pthread_join");
	/* SH-A1: acquire, pairs with SH-R1 in finish(): no worker touches sh any more */
	while (atomic_load_explicit(&sh->finishing, memory_order_acquire))
		sched_yield();
	if (sh->fl) {
		/* the host thread owned the feed state when it ended: a take
		 * task still queued (taken back from) would fail its CAS anyway;
		 * DEAD says so for good. Relaxed: the task's acquire CAS only has
		 * to fail. No wait for that task: it may be queued behind our
		 * caller (struct feed_link), and it drops the last reference */
		atomic_store_explicit(&sh->fl->feeding, FEED_DEAD, memory_order_relaxed);
		feed_put(sh->fl);
	}
	for (int l = 0; l < 2; l++) {
		while ((d = sh->pending[l])) { /* left taken: the next host redelivers them */
			sh->pending[l] = d->next;
			free(d);
		}
	}
	while ((d = sh->spare)) {
		sh->spare = d->next;
		free(d);
	}
	coordinator_drop(sh);
	if (!sh->lease_freed) /* hosting at the stop, or a lost host's release that failed */
		(void)lease_release(sh);
	orbit__spotq_host_close(sh->h);
	orbit__spotq_close(sh->q);
	orbit__agent_spot_release(sh->agent); /* its last use of the agent */
	free(sh->buf);
	free(sh->recs);
	free(sh);
	return 0;
}

int orbit_spot_host_state(const orbit_spot_host_t *sh)
{
	if (!sh)
		return -EINVAL;
	/* SH-L2: acquire, pairs with SH-L1 in lose(): lost_reason is readable after LOST */
	return atomic_load_explicit(&sh->state, memory_order_acquire);
}

int orbit_spot_host_stats(const orbit_spot_host_t *sh, struct orbit_spot_host_stats *out)
{
	if (!sh || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	/* SH-A3: acquire, pairs with SH-R2: every record that left in_flight is
	 * counted in completed/fenced/complete_errors read below */
	out->in_flight = atomic_load_explicit(&sh->in_flight, memory_order_acquire);
	out->epoch = sh->epoch;
	out->delivered = LD(delivered);
	out->redelivered = LD(redelivered);
	out->completed = LD(completed);
	out->fenced = LD(fenced);
	out->retried = LD(retried);
	out->undeliverable = LD(undeliverable);
	out->unhandled = LD(unhandled);
	out->not_started = LD(not_started);
	out->protocol_errors = LD(protocol_errors);
	out->complete_errors = LD(complete_errors);
	out->renewals = LD(renewals);
	out->renew_retries = LD(renew_retries);
	out->lost_reason = orbit_spot_host_state(sh) == ORBIT_SPOT_LOST ? LD(lost_reason) : 0;
	out->latency_sum_ns = LD(lat.sum_ns);
	out->latency_max_ns = LD(lat.max_ns);
	orbit__spot_lat_fold(&sh->lat, false, out->latency_buckets, ORBIT_SPOT_LATENCY_BUCKETS,
			     &out->latency_count);
	return 0;
}

int orbit_spot_host_inbound_stats(const orbit_spot_host_t *sh, struct orbit_spot_inbound_stats *out)
{
	if (!sh)
		return -EINVAL;
	if (orbit__fork_check(sh->pid))
		return -ECHILD;
	return orbit__spot_queue_stats(sh->q, out);
}
