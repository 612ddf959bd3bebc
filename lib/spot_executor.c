// SPDX-License-Identifier: MIT
/*
 * lib/spot_executor.c: the Spot coordinator of spec 07 §2-4
 * (ZLinkSpotSerialExecutor). Owns the Spot queue, the map of Actor queues
 * (with each Actor's registration information, §7) and the map of timer
 * queues, and decides the §4 path of every entry point from the mode
 * fixed at creation. No queue pointer leaves this file.
 *
 * The two maps and the `closed` flag are one class-C2 state (06 §4):
 * closing has to stop every new submission and close every queue in the
 * maps together, so they are owned by the coordinator's state lane, which
 * alone writes them; the maps are lock-free tables (struct etab) so that
 * a submission to an Actor or timer whose queue exists finds it without a
 * lane turn, and close_fn() closes every queue in the turn that sets
 * `closed`, so that queue's own lock decides "before or after close".
 * Every other decision runs in a lane turn (an enqueue only takes the
 * queue mutex, a leaf, and never waits for work), so a queue is never
 * used after close and never created after it. The Spot queue itself lives from create to
 * destroy. Under SpotWide it is never closed before: accepted SpotWide
 * Actor work must still place its turn on it after the Spot closed, and
 * Spot and lifecycle work are decided in a lane turn with the waiting
 * FIFO below. Under PerActor nothing but Spot and lifecycle work uses it
 * and no lane-owned state bears on them, so they go to it directly
 * (07 §4: executeSpot enqueues on the Spot queue) and close_fn() closes
 * it in the turn that closes the maps: the queue's own lock then decides
 * "before or after close" for them, as the lane does for the rest.
 *
 * SpotWide Actor turns never get lost to a full Spot queue: a turn that
 * finds it full by count (or finds turns already waiting) joins the
 * `waiting` FIFO, part of the same lane-owned state, and keeps its Actor
 * queue's claim (HOLD), so that Actor's later records stay queued and its
 * own queue gives the backpressure at the call. The Spot queue's room
 * hook (lib/serial_queue.h), armed by the refusal, runs place_waiting()
 * in a lane turn once a Spot-queue item has finished. No wakeup is lost:
 * every enqueue to the Spot queue that can join the FIFO happens in a
 * lane turn, so the hook's lane turn comes after the one whose refusal
 * armed it, and while the FIFO is not empty the Spot queue is full or the
 * hook is armed or pending. The enqueues outside the lane, a turn placed
 * while no turn waits (a claim's first record in actor_turn_item(), a
 * passed claim's next in pass_claim()), only take room (an item that will
 * finish and fire an armed hook) or are refused, which arms the hook, and
 * then go through the lane. Lock order: lane turn, then a queue mutex
 * (never the reverse).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <orbit/spot_executor.h>
#include <orbit/worker_pool.h>

#include "base/hash.h"
#include "base/options.h"
#include "lib/ownership.h"
#include "lib/serial_executor.h"
#include "lib/serial_queue.h"
#include "lib/spot_batch.h"
#include "lib/sync.h" /* orbit__single_writer_add(), orbit__executor_fork_check() */

/* ---- the lock-free entry tables ------------------------------------------- */

/* What every table entry starts with: its key's hash. */
struct map_node {
	uint64_t hash;
};

typedef bool (*map_eq_fn)(const struct map_node *n, const void *key);

static uint64_t hash_u64(uint64_t x)
{
	/* splitmix64's finalizer */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t hash_str(const char *s)
{
	return orbit__fnv1a64_str(ORBIT__FNV64_BASIS, s);
}

/*
 * The Actor table (Actor id -> entry) and the timer table (timer name ->
 * entry, PerActor): written only in lane turns (which create entries and
 * grow the table; nothing is removed before destroy) and read by anyone
 * without a lock (etab_find()): a submission to an Actor or a timer whose
 * queue exists needs no lane turn (see spot_submit()). Open addressing
 * with linear probing, kept at most half full, so a probe always ends at
 * an empty slot. A full-enough table is replaced by one of twice the
 * size; the old one stays readable (a lookup may still be in it, and
 * finds every entry it held, or misses and goes the lane's way) and is
 * freed with the Spot.
 */
struct entry_head;

struct etab {
	uint32_t cap;	    /* slots, a power of two */
	struct etab *older; /* the table this one replaced, freed at destroy */
	_Atomic(struct entry_head *) slot[];
};

/* ---- the coordinator ------------------------------------------------------- */

/* Both begin with struct entry_head's fields (node, q). */
struct actor_entry {
	struct map_node node; /* first */
	orbit_serial_queue_t *q;
	struct orbit__actor_info info;
};

struct timer_entry {
	struct map_node node; /* first */
	orbit_serial_queue_t *q;
	char name[ORBIT_TIMER_NAME_MAX + 1];
};

struct orbit_spot_serial_executor {
	struct orbit__coord co; /* first: work records point here */
	int mode;
	orbit_executor_t ex;
	int home; /* options encoding (node + 1), passed on to its queues */
	orbit_execution_lane_policy_t actor_pol, timer_pol;
	orbit_serial_queue_t *spot_q; /* from create to destroy */
	/* Owned by co.lane (06 §4 C2), see the file comment; the tables
	 * are written in its turns only and read lock-free (struct etab). */
	bool closed;
	_Atomic(struct etab *) atab, ttab; /* Actors, timers */
	/* SpotWide Actor records whose Spot turn waits for room, oldest
	 * first, linked through orbit__work.wait_next. */
	struct orbit__work *wait_head, *wait_tail;
	/* wait_head != NULL, mirrored for pass_claim()'s lane-free look
	 * (C3): written in the lane turns that change wait_head. */
	_Atomic bool waiting;
	/* The sizes of atab and ttab: written on the lane only (so the
	 * lane reads them relaxed as plain counts), read anywhere for stats;
	 * relaxed, each a lone counter. */
	_Atomic uint64_t n_actors, n_timers;
	char name[64];
};

static bool timer_eq(const struct map_node *n, const void *key)
{
	return strcmp(((const struct timer_entry *)n)->name, key) == 0;
}

static bool actor_eq(const struct map_node *n, const void *key)
{
	return ((const struct actor_entry *)n)->info.actor_id == *(const uint64_t *)key;
}

static int make_queue(orbit_spot_serial_executor_t *s, const orbit_execution_lane_policy_t *pol,
		      const char *name, orbit_serial_queue_t **out)
{
	struct orbit_serial_queue_options o;
	int ret;

	orbit_serial_queue_options_init(&o);
	o.policy = pol;
	o.executor = s->ex;
	o.home = s->home;
	o.name = name;
	ret = orbit_serial_queue_create(&o, out);
	if (ret == 0)
		orbit__serial_queue_seal(*out); /* 07 §3 */
	return ret;
}

/* What both map entries start with. */
struct entry_head {
	struct map_node node; /* first */
	orbit_serial_queue_t *q;
};

/*
 * A new map entry of @size bytes (zeroed) starting with struct entry_head,
 * with @hash and a queue named @qname under @pol; the caller sets its key
 * and adds it to its table (entry_unmake() if that fails). On the lane.
 */
static int entry_make(orbit_spot_serial_executor_t *s, size_t size, uint64_t hash,
		      const orbit_execution_lane_policy_t *pol, const char *qname,
		      struct entry_head **out)
{
	struct entry_head *e;
	int ret;

	ORBIT__ASSERT_ON_LANE(s->co.lane); /* the maps are lane-owned (06 §4 C2) */
	e = calloc(1, size);
	if (!e)
		return -ENOMEM;
	e->node.hash = hash;
	ret = make_queue(s, pol, qname, &e->q);
	if (ret) {
		free(e);
		return ret;
	}
	*out = e;
	return 0;
}

/* An entry_make() entry that no table took. */
static void entry_unmake(struct entry_head *e)
{
	orbit_serial_queue_destroy(e->q);
	free(e);
}

/*
 * The entry for @key (of @hash) in the table *@tabp, or NULL when it has
 * none (yet). Context: any thread, no lock: entries live until destroy,
 * which runs only after every submission returned (the header's
 * Synchronization table). A miss is not authoritative: the lane decides
 * (actor_get(), timer_get()).
 */
static struct entry_head *etab_find(_Atomic(struct etab *) *tabp, uint64_t hash, map_eq_fn eq,
				    const void *key)
{
	/* SP-A2: acquire, pairs with SP-R2 in etab_add(): a grown table's
	 * slots before its pointer */
	const struct etab *t = atomic_load_explicit(tabp, memory_order_acquire);

	if (!t)
		return NULL;
	for (uint32_t i = (uint32_t)hash & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		/* SP-A1: acquire, pairs with SP-R1 in etab_put(): the entry's
		 * key and queue before its pointer */
		struct entry_head *e = atomic_load_explicit(&t->slot[i], memory_order_acquire);

		/* At most half full: an empty slot ends the probe. */
		if (!e || (e->node.hash == hash && eq(&e->node, key)))
			return e;
	}
}

static struct actor_entry *actor_find(orbit_spot_serial_executor_t *s, uint64_t id)
{
	return (struct actor_entry *)etab_find(&s->atab, hash_u64(id), actor_eq, &id);
}

static void etab_put(struct etab *t, struct entry_head *e)
{
	uint32_t i = (uint32_t)e->node.hash & (t->cap - 1);

	/* Relaxed: only lane turns write slots, and they are ordered by the lane. */
	while (atomic_load_explicit(&t->slot[i], memory_order_relaxed))
		i = (i + 1) & (t->cap - 1);
	/* SP-R1: release, pairs with SP-A1 in etab_find() */
	atomic_store_explicit(&t->slot[i], e, memory_order_release);
}

/*
 * Add @e (not in the table *@tabp, which holds *@count entries), growing
 * the table first when it would pass half. On the lane.
 */
static int etab_add(orbit_spot_serial_executor_t *s, _Atomic(struct etab *) *tabp,
		    _Atomic uint64_t *count, struct entry_head *e)
{
	/* Relaxed: written only in lane turns like this one. */
	struct etab *t = atomic_load_explicit(tabp, memory_order_relaxed), *nt;
	/* Relaxed: written only in lane turns like this one. */
	uint64_t n = atomic_load_explicit(count, memory_order_relaxed);

	ORBIT__ASSERT_ON_LANE(s->co.lane); /* the tables are lane-owned (06 §4 C2) */
	if (!t || (n + 1) * 2 > t->cap) {
		uint32_t cap = t ? t->cap * 2 : 32;

		if (t && cap < t->cap)
			return -ENOMEM;
		nt = calloc(1, sizeof(*nt) + cap * sizeof(nt->slot[0]));
		if (!nt)
			return -ENOMEM;
		nt->cap = cap;
		nt->older = t;
		for (uint32_t i = 0; t && i < t->cap; i++) {
			/* Relaxed: lane-owned writes, see above. */
			struct entry_head *o = atomic_load_explicit(&t->slot[i],
								    memory_order_relaxed);

			if (o)
				etab_put(nt, o);
		}
		/* SP-R2: release, pairs with SP-A2 in etab_find() */
		atomic_store_explicit(tabp, nt, memory_order_release);
		t = nt;
	}
	etab_put(t, e);
	/* One writer (the lane): no locked add; relaxed, see the field. */
	orbit__single_writer_add(count, 1);
	return 0;
}

/* Call @fn on every entry of @t (lane turns, or after quiescence). */
static void etab_each(struct etab *t, void (*fn)(struct entry_head *e, void *ctx), void *ctx)
{
	for (uint32_t i = 0; t && i < t->cap; i++) {
		/* Relaxed: lane-owned (or quiescent). */
		struct entry_head *e = atomic_load_explicit(&t->slot[i], memory_order_relaxed);

		if (e)
			fn(e, ctx);
	}
}

static void etab_free(struct etab *t)
{
	while (t) {
		struct etab *o = t->older;

		free(t);
		t = o;
	}
}

/* GetOrCreateActorQueue (§4). On the lane. */
static int actor_get(orbit_spot_serial_executor_t *s, uint64_t id, struct actor_entry **out)
{
	char qname[64];
	int ret;

	ORBIT__ASSERT_ON_LANE(s->co.lane); /* the table is lane-owned (06 §4 C2) */
	/* Found: no queue name is formatted (it cost a third of a PerActor
	 * submission when it was made at every call). */
	*out = actor_find(s, id);
	if (*out)
		return 0;
	snprintf(qname, sizeof(qname), "%.32s/actor/%llu", s->name, (unsigned long long)id);
	ret = entry_make(s, sizeof(**out), hash_u64(id), &s->actor_pol, qname,
			 (struct entry_head **)out);
	if (ret)
		return ret;
	(*out)->info.actor_id = id;
	ret = etab_add(s, &s->atab, &s->n_actors, (struct entry_head *)*out);
	if (ret)
		entry_unmake((struct entry_head *)*out);
	return ret;
}

static struct timer_entry *timer_find(orbit_spot_serial_executor_t *s, const char *name)
{
	return (struct timer_entry *)etab_find(&s->ttab, hash_str(name), timer_eq, name);
}

/* GetOrCreateTimerQueue (§4, PerActor only). On the lane. */
static int timer_get(orbit_spot_serial_executor_t *s, const char *name, struct timer_entry **out)
{
	char qname[64];
	int ret;

	ORBIT__ASSERT_ON_LANE(s->co.lane); /* the table is lane-owned (06 §4 C2) */
	*out = timer_find(s, name);
	if (*out)
		return 0; /* found: no queue name formatted, as in actor_get() */
	snprintf(qname, sizeof(qname), "%.24s/timer/%.31s", s->name, name);
	ret = entry_make(s, sizeof(**out), hash_str(name), &s->timer_pol, qname,
			 (struct entry_head **)out);
	if (ret)
		return ret;
	strcpy((*out)->name, name); /* length checked by the entry point */
	ret = etab_add(s, &s->ttab, &s->n_timers, (struct entry_head *)*out);
	if (ret)
		entry_unmake((struct entry_head *)*out);
	return ret;
}

void orbit_spot_serial_executor_options_init(struct orbit_spot_serial_executor_options *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
}

static void spot_room(void *ctx);
static int pass_claim(struct orbit__work *w, bool run_here, struct orbit__work **next);

int orbit_spot_serial_executor_create(const struct orbit_spot_serial_executor_options *user,
				      orbit_spot_serial_executor_t **out)
{
	struct orbit_spot_serial_executor_options opts;
	orbit_spot_serial_executor_t *s;
	char name[64];
	int ret;

	if (!user || !out)
		return -EINVAL;
	ret = ORBIT__OPTS_COPY(&opts, user); /* base/options.h rule */
	if (ret)
		return ret;
	if (opts.mode != ORBIT_SPOT_PER_ACTOR && opts.mode != ORBIT_SPOT_SPOT_WIDE)
		return -EINVAL;
	if (!opts.executor.submit)
		return -EINVAL;
	ret = orbit__executor_fork_check(&opts.executor); /* an inherited pool's */
	if (ret)
		return ret;
	if (opts.spot_policy) {
		ret = orbit_execution_lane_policy_validate(opts.spot_policy);
		if (ret)
			return ret;
	}
	s = orbit__coord_alloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	ret = orbit__lane_policy_copy(&s->actor_pol, opts.actor_policy);
	if (!ret)
		ret = orbit__lane_policy_copy(&s->timer_pol, opts.timer_policy ? opts.timer_policy
									       : &s->actor_pol);
	if (ret)
		goto err_free;
	s->mode = opts.mode;
	s->ex = opts.executor;
	s->home = opts.home;
	strncpy(s->name, opts.name ? opts.name : "spot", sizeof(s->name) - 1);
	snprintf(name, sizeof(name), "%.48s/spot", s->name);
	ret = make_queue(s, opts.spot_policy, name, &s->spot_q);
	if (ret)
		goto err_free;
	snprintf(name, sizeof(name), "%.48s/lane", s->name);
	ret = orbit__coord_init(&s->co, name);
	if (ret)
		goto err_queue;
	if (s->mode == ORBIT_SPOT_SPOT_WIDE) {
		orbit__serial_queue_set_room_hook(s->spot_q, spot_room, s);
		s->co.pass_claim = pass_claim;
	}
	*out = s;
	return 0;

err_queue:
	orbit_serial_queue_destroy(s->spot_q);
err_free:
	free(s);
	return ret;
}

/* ---- entry points ------------------------------------------------------------ */

/* One submission, decided and enqueued in one lane turn. */
struct submit {
	orbit_spot_serial_executor_t *s;
	struct orbit__work *w;
	unsigned kind;
	uint64_t actor_id;
	const char *timer_name;
	uint64_t payload_bytes;
	/* The record submit_fn makes from the lane's stash. */
	orbit_serial_work_fn fn;
	void *arg;
	orbit_work_completion_t *done;
	unsigned yield_flags;
	/* Set by submit_fn when the record is counted and its enqueue (to
	 * a subordinate queue, which lives until destroy) is left to the
	 * caller, after the lane turn. */
	bool enqueue_after;
	struct orbit__enq e;
};

static int actor_claim_end(orbit_serial_turn_t *turn, void *arg)
{
	/* The handler finished on its Spot turn (or never got one): the
	 * Actor queue's claim ends here and its reservation is returned. */
	orbit__work_release(arg);
	return ORBIT_SERIAL_DONE;
}

/*
 * A SpotWide Actor record's turn cannot be placed for a reason other than
 * room (no memory, the executor refused): its completion gets @err and
 * the held claim ends, which releases the record (actor_claim_end).
 */
static void turn_failed(struct orbit__work *w, int err)
{
	orbit_serial_resume_t *claim = w->claim;
	struct orbit__work *n;

	/* Records taken with @w from the Actor queue (chain_next) cannot run
	 * before it: they fail with it, in order, each marked ended as it
	 * fails (§5: no handler of theirs runs after this). The claim's
	 * continuation holds the last of them and returns every reservation
	 * the claim still holds, the ended ones' too, in one section. */
	for (; (n = w->chain_next); w = n) {
		ORBIT__COORD_INC(w->co, turn_rejected);
		orbit__work_signal(w, err);
		orbit__serial_queue_held_end_one(claim, w->held_bytes);
		orbit__work_release(w);
	}
	ORBIT__COORD_INC(w->co, turn_rejected);
	orbit__work_signal(w, err);
	orbit_serial_queue_resume(claim);
}

/*
 * On the lane: place @w's execution turn on the Spot queue, fixed cost
 * only (§5 internal check: no payload bytes), or, when the Spot queue is
 * full by count or other turns already wait (FIFO: no overtaking), append
 * it to the waiting FIFO. The refusal armed the room hook. Returns 0
 * (placed or waiting) or the Spot queue's error other than -EAGAIN.
 */
static int place_turn_fn(void *arg)
{
	struct orbit__work *w = arg;
	orbit_spot_serial_executor_t *s = (orbit_spot_serial_executor_t *)w->co;
	int ret;

	/* Every build (07 §8): entered from an Actor queue's turn, a path
	 * with a reentrancy history (an executor running it inside a lane
	 * turn of this Spot). */
	ORBIT__CHECK_ON_LANE(s->co.lane);
	if (!s->wait_head) {
		ret = orbit_serial_queue_enqueue(s->spot_q, orbit__work_run, w);
		if (ret != -EAGAIN)
			return ret;
	}
	w->wait_next = NULL;
	if (s->wait_tail)
		s->wait_tail->wait_next = w;
	else
		s->wait_head = w;
	s->wait_tail = w;
	/* Relaxed: see pass_claim(). */
	atomic_store_explicit(&s->waiting, true, memory_order_relaxed);
	/* One writer at a time: only this lane turn counts it. No locked
	 * add: it would wait for the stores to the records' wait links,
	 * cache misses each, before the turn can go on. */
	orbit__single_writer_add(&s->co.st.turn_waited, 1);
	return 0;
}

/*
 * On the lane, from the room hook: place waiting turns, oldest first,
 * until the Spot queue refuses again (which re-arms the hook) or none is
 * left. Runs on the Spot queue's drain between two turns: what it places
 * runs on that drain, so @w is not touched after its enqueue.
 */
static int place_waiting_fn(void *arg)
{
	orbit_spot_serial_executor_t *s = arg;
	struct orbit__work *w, *next;
	int ret;

	/* Every build (07 §8): run from the room hook on a Spot-queue drain,
	 * also directly when that drain ran inside our own lane turn. */
	ORBIT__CHECK_ON_LANE(s->co.lane);
	while ((w = s->wait_head)) {
		next = w->wait_next;
		ret = orbit_serial_queue_enqueue(s->spot_q, orbit__work_run, w);
		if (ret == -EAGAIN)
			break;
		s->wait_head = next;
		if (!next) {
			s->wait_tail = NULL;
			/* Relaxed: see pass_claim(). */
			atomic_store_explicit(&s->waiting, false, memory_order_relaxed);
		}
		if (ret)
			turn_failed(w, ret);
	}
	return 0;
}

/* The Spot queue's room hook (SpotWide): an item finished after a refusal. */
static void spot_room(void *ctx)
{
	orbit_spot_serial_executor_t *s = ctx;
	int ret;

	/* The lane is open until destroy, and destroy waits for this drain
	 * (a waiting turn is outstanding work), so the turn is only refused
	 * when this thread already holds it: an executor ran the Spot
	 * queue's drain inside one of our lane turns. The state is then
	 * ours: place the turns with the body that does not enter the lane
	 * (06 §6 Kind 1) rather than leave them waiting for ever. */
	ret = orbit_state_lane_run(s->co.lane, place_waiting_fn, s);
	if (ret == -EDEADLK && orbit_state_lane_is_on_lane(s->co.lane))
		ret = place_waiting_fn(s);
	if (ret) {
		fprintf(stderr,
			"orbit: spot \"%s\": room hook could not enter its lane (%d): "
			"SpotWide Actor turns would wait for ever\n",
			s->name, ret);
		abort(); /* broken invariant: the lane closes only after quiescence */
	}
}

/*
 * SpotWide, on the Actor queue: the record reached its head. Keep the
 * Actor's claim (HOLD) and place one execution turn on the Spot queue
 * (§4), or let it wait for room there (place_turn_fn). The payload stays
 * reserved here.
 */
static int actor_turn_item(orbit_serial_turn_t *turn, void *arg)
{
	struct orbit__work *w = arg;
	orbit_spot_serial_executor_t *s = (orbit_spot_serial_executor_t *)w->co;
	int ret;

	w->chain_next = NULL; /* the claim holds this record alone */
	/* Suspend first: the Spot turn may finish before we return. */
	ret = orbit_serial_turn_suspend(turn, actor_claim_end, w, ORBIT_SERIAL_SUSPEND_HOLD,
					&w->claim);
	if (ret) {
		/* No memory for the claim: it cannot wait without one. */
		ORBIT__COORD_INC(w->co, turn_rejected);
		orbit__work_signal(w, ret);
		orbit__work_release(w);
		return ORBIT_SERIAL_DONE;
	}
	/*
	 * No turn waits for room: place the turn without a lane turn, as
	 * pass_claim() does for a passed record (the same relaxed look at
	 * `waiting`, and a refusal arms the room hook and goes the lane's way,
	 * which tries again and joins the FIFO). With many Actors each record
	 * starts a claim, so this saves a lane turn per record. Nothing of
	 * the lane's state is read or written, so a thread that holds the
	 * lane already (an executor ran this drain inside one of our lane
	 * turns) may take this way too.
	 */
	if (!atomic_load_explicit(&s->waiting, memory_order_relaxed)) {
		ret = orbit_serial_queue_enqueue(s->spot_q, orbit__work_run, w);
		if (ret != -EAGAIN) {
			if (ret)
				turn_failed(w, ret);
			return ORBIT_SERIAL_SUSPENDED;
		}
	}
	ret = orbit_state_lane_run(s->co.lane, place_turn_fn, w);
	if (ret)
		turn_failed(w, ret);
	return ORBIT_SERIAL_SUSPENDED;
}

/* The placing of a passed record's turn, decided in one lane turn (pass_fn). */
struct pass {
	struct orbit__work *w; /* the record that now holds the claim */
	bool run_here;
	bool here; /* out: run @w on the finishing Spot turn */
};

/*
 * On the lane: @p->w (an Actor's next record, which the claim just passed
 * to; its payload stays reserved in the Actor queue, §5) either runs on
 * the finishing Spot turn (@run_here and no turn waits for room: FIFO
 * among owners) or has its turn placed as actor_turn_item() would have
 * (place_turn_fn(): the back of the Spot queue, or the waiting FIFO).
 */
static int pass_fn(void *arg)
{
	struct pass *p = arg;
	orbit_spot_serial_executor_t *s = (orbit_spot_serial_executor_t *)p->w->co;
	int ret;

	/* Every build (07 §8): entered from a Spot-queue turn, like the
	 * room hook. */
	ORBIT__CHECK_ON_LANE(s->co.lane);
	if (p->run_here && !s->wait_head) {
		p->here = true;
		return 0;
	}
	ret = place_turn_fn(p->w);
	if (ret)
		turn_failed(p->w, ret);
	return 0;
}

/* Link the @n records @taken with @claim in queue order (chain_next),
 * each with its reserved @bytes (held_bytes). */
static struct orbit__work *chain_link(void **taken, const uint64_t *bytes, int n,
				      orbit_serial_resume_t *claim)
{
	for (int i = 0; i < n; i++) {
		struct orbit__work *r = taken[i];

		r->claim = claim;
		r->chain_next = i + 1 < n ? taken[i + 1] : NULL;
		r->held_bytes = bytes[i];
	}
	return taken[0];
}

/*
 * The coordinator's pass_claim (SpotWide, lib/serial_executor.h): hand
 * @w's Actor claim to the Actor's next record. That is the next record
 * taken with @w (chain_next), else the Actor queue's next work: up to
 * ORBIT__WORK_PASS_MAX of its records are taken in one section of its
 * lock (orbit__serial_queue_pass_held()), so the submitters and this
 * drain meet on that lock once per batch, not once per record. Their
 * reservations stay in the Actor queue (§5: the Actor's ceiling stays
 * real, and nothing is returned before its handler finished). One that
 * is not the last is marked ended here (orbit__serial_queue_held_end_one(),
 * no lock) and its reservation carried: all the ended ones go back
 * together at the claim's next return, in one section of the Actor
 * queue's lock: a record of the claim that yields (orbit__work_yield():
 * then it holds only its own and the later records'), a failure
 * (turn_failed(): the claim's continuation), or the pass or end after the
 * last of them (orbit__serial_queue_pass_held()). An Actor
 * queue that holds nothing ends the claim at once (no drain round trip
 * to run actor_claim_end). The lane is entered only to place the next
 * record's turn when it cannot run here.
 */
static int pass_claim(struct orbit__work *w, bool run_here, struct orbit__work **next)
{
	orbit_spot_serial_executor_t *s = (orbit_spot_serial_executor_t *)w->co;
	struct pass p = { .run_here = run_here, .w = w->chain_next };
	void *taken[ORBIT__WORK_PASS_MAX];
	uint64_t bytes[ORBIT__WORK_PASS_MAX];
	bool lane_free;
	int ret;

	/* @w ended before the last record taken with it: its reservation is
	 * carried to the claim's next return (§5: after its handler
	 * finished), with no lock section of its own; a later record that
	 * yields returns it first, so the Actor queue does not count it
	 * however long that one stays yielded. */
	if (p.w)
		orbit__serial_queue_held_end_one(w->claim, w->held_bytes);

	/* This thread holds the lane already (an executor ran the Spot drain
	 * inside one of our lane turns): nothing is passed, the claim is
	 * resumed the ordinary way, and its next records would find the lane
	 * taken (-EDEADLK) as a new claim's first record does. */
	if (orbit_state_lane_is_on_lane(s->co.lane)) {
		if (!p.w)
			return 0;
		p.w->claim = w->claim;
		turn_failed(p.w, -EDEADLK);
		*next = NULL;
		return 1;
	}
	/*
	 * The common case of a busy Actor needs no lane turn at all: nothing
	 * else waits for the Spot gate (run_here: the Spot queue holds
	 * nothing but this turn) and no turn waits for room, so the next
	 * record runs here and nothing of the lane's state is read or
	 * written. Relaxed `waiting`: a turn that starts waiting meanwhile
	 * found the Spot queue full, which run_here just saw it was not, or
	 * found one waiting already, so at most this one record runs ahead
	 * of it, as if this check had come first; the next record's check
	 * sees it. The submitters' lane turns and this drain then no longer
	 * meet on the lane for every record.
	 */
	lane_free = !atomic_load_explicit(&s->waiting, memory_order_relaxed);
	if (!p.w) {
		ret = orbit__serial_queue_pass_held(w->claim, actor_turn_item, actor_claim_end,
						    taken, bytes, ORBIT__WORK_PASS_MAX);
		if (ret < 0)
			return 0;
		if (ret == 0) {
			*next = NULL; /* the claim ended with @w */
			return 1;
		}
		p.w = chain_link(taken, bytes, ret, w->claim);
	}
	if (lane_free && run_here) {
		*next = p.w;
		return 1;
	}
	/*
	 * Other work waits for the gate but no turn waits for room: place the
	 * turn at the back of the Spot queue without a lane turn (fixed cost
	 * only, §5). The same relaxed look as above: a turn that starts
	 * waiting meanwhile is overtaken by this one record at most, as if
	 * this check had come first. A refusal (full by count) arms the room
	 * hook and goes the lane's way below, which tries again and joins the
	 * FIFO: no wake-up is lost (see the file comment).
	 */
	if (lane_free) {
		ret = orbit_serial_queue_enqueue(s->spot_q, orbit__work_run, p.w);
		if (ret != -EAGAIN) {
			if (ret)
				turn_failed(p.w, ret);
			*next = NULL;
			return 1;
		}
	}
	/* The lane is open until destroy, which waits for this record. */
	ret = orbit_state_lane_run(s->co.lane, pass_fn, &p);
	if (ret)
		turn_failed(p.w, ret);
	*next = p.here ? p.w : NULL;
	return 1;
}

static int submit_fn(void *arg)
{
	struct submit *c = arg;
	orbit_spot_serial_executor_t *s = c->s;
	struct orbit__enq e = { .q = s->spot_q, .fn = orbit__work_run, .how = ORBIT__ENQ_FIXED };
	struct actor_entry *a;
	struct timer_entry *t;
	int ret = 0;

	ORBIT__ASSERT_ON_LANE(s->co.lane);
	/* From the lane's stash: no atomic operation on the pool. */
	ret = orbit__work_new_on_lane(&s->co, c->fn, c->arg, c->done, c->yield_flags, &c->w);
	if (ret)
		return ret;
	if (s->closed)
		return orbit__work_refuse(c->w, c->kind, -EPIPE);
	switch (c->kind) {
	case ORBIT_WORK_LIFECYCLE:
		e.how = ORBIT__ENQ_LIFECYCLE;
		break;
	case ORBIT_WORK_ACTOR:
		ret = actor_get(s, c->actor_id, &a);
		if (ret)
			break;
		c->w->info = &a->info;
		e.q = a->q;
		e.how = ORBIT__ENQ_PAYLOAD;
		e.payload_bytes = c->payload_bytes;
		if (s->mode == ORBIT_SPOT_SPOT_WIDE)
			e.fn = actor_turn_item; /* then one turn on the Spot queue */
		break;
	case ORBIT_WORK_TIMER:
		if (s->mode == ORBIT_SPOT_SPOT_WIDE) {
			ret = s->wait_head ? -EAGAIN : 0; /* as for Spot work, below */
			break;				  /* no timer queue: the Spot queue */
		}
		ret = timer_get(s, c->timer_name, &t);
		if (!ret)
			e.q = t->q;
		break;
	default: /* ORBIT_WORK_SPOT */
		/* Waiting Actor turns are owed the Spot queue's next room: new
		 * Spot work meets a full queue until they are placed. */
		ret = s->wait_head ? -EAGAIN : 0;
		break;
	}
	if (ret)
		return orbit__work_refuse(c->w, c->kind, ret);
	if (e.q != s->spot_q) {
		/* An Actor or timer queue: found (or made) here, enqueued after
		 * this turn (07 §4's ExecuteActor: lane.Run finds the queue, the
		 * enqueue follows). Counted now, so a destroy after our close
		 * check sees it outstanding and leaves the queue alone; a close
		 * meanwhile is seen by the queue itself (-EPIPE). The Spot queue's
		 * enqueues stay in the lane turn (the waiting FIFO, file comment). */
		orbit__work_count(c->w, c->kind);
		c->e = e;
		c->enqueue_after = true;
		return 0;
	}
	return orbit__work_submit(c->w, c->kind, &e);
}

/*
 * What spot_submit() cannot place without a lane turn: submit_fn() in one.
 * The struct submit is made only for this way (spot_submit()'s last
 * statement), so the lane-free submissions do not clear it (perf,
 * execute_spot: the zeroing of its 112 bytes at every call was nine
 * tenths of orbit_spot_execute_spot).
 */
static int spot_submit_on_lane(struct submit *c)
{
	/* A refusal of the turn itself (-EDEADLK from our own lane turn) made
	 * no record: nothing to give back. */
	int ret = orbit_state_lane_run(c->s->co.lane, submit_fn, c);

	if (c->enqueue_after)
		return orbit__work_enqueue_counted(c->w, c->kind, &c->e);
	return ret;
}

/* One submission of @kind (@actor_id, @timer_name, @payload_bytes as the
 * entry point gives them). */
static int spot_submit(orbit_spot_serial_executor_t *s, unsigned kind, uint64_t actor_id,
		       const char *timer_name, uint64_t payload_bytes, orbit_serial_work_fn fn,
		       void *arg, orbit_work_completion_t *done)
{
	/* Only SpotWide Actor work hands back the gate on yield (§4). */
	unsigned yf = kind == ORBIT_WORK_ACTOR && s->mode == ORBIT_SPOT_SPOT_WIDE
			  ? ORBIT_SERIAL_SUSPEND_RELEASE
			  : ORBIT_SERIAL_SUSPEND_HOLD;
	struct orbit__work *w;
	int ret;

	if (s->mode == ORBIT_SPOT_PER_ACTOR &&
	    (kind == ORBIT_WORK_SPOT || kind == ORBIT_WORK_LIFECYCLE)) {
		/* No lane turn: see the file comment (-EPIPE from the closed
		 * queue is counted as rejected_closed). */
		struct orbit__enq e = { .q = s->spot_q,
					.fn = orbit__work_run,
					.how = kind == ORBIT_WORK_SPOT ? ORBIT__ENQ_FIXED
								       : ORBIT__ENQ_LIFECYCLE };

		ret = orbit__work_new(&s->co, fn, arg, done, yf, &w);
		if (ret)
			return ret;
		/* After close: refused before it is counted (co.closing). */
		return orbit__work_submit(w, kind, &e);
	}
	if (kind == ORBIT_WORK_ACTOR) {
		/*
		 * An Actor whose queue exists: found without a lane turn
		 * (struct etab) and enqueued on it as submit_fn() would after
		 * its turn. Nothing else of the lane's state bears on it: the
		 * `closed` flag is set in the turn that closes every Actor
		 * queue (close_fn()), so the queue's own lock decides "before
		 * or after close" (-EPIPE), as for PerActor Spot work.
		 */
		struct actor_entry *a = actor_find(s, actor_id);

		if (a) {
			struct orbit__enq e = { .q = a->q,
						.fn = s->mode == ORBIT_SPOT_SPOT_WIDE
							  ? actor_turn_item
							  : orbit__work_run,
						.how = ORBIT__ENQ_PAYLOAD,
						.payload_bytes = payload_bytes };

			ret = orbit__work_new(&s->co, fn, arg, done, yf, &w);
			if (ret)
				return ret;
			w->info = &a->info;
			return orbit__work_submit(w, kind, &e);
		}
	}
	if (kind == ORBIT_WORK_TIMER && s->mode == ORBIT_SPOT_PER_ACTOR) {
		/* A timer whose queue exists: the same as an Actor's above
		 * (the table is struct etab; close_fn() closes its queue). */
		struct timer_entry *t = timer_find(s, timer_name);

		if (t) {
			struct orbit__enq e = { .q = t->q,
						.fn = orbit__work_run,
						.how = ORBIT__ENQ_FIXED };

			ret = orbit__work_new(&s->co, fn, arg, done, yf, &w);
			if (ret)
				return ret;
			return orbit__work_submit(w, kind, &e);
		}
	}
	return spot_submit_on_lane(&(struct submit){ .s = s,
						     .kind = kind,
						     .actor_id = actor_id,
						     .timer_name = timer_name,
						     .payload_bytes = payload_bytes,
						     .fn = fn,
						     .arg = arg,
						     .done = done,
						     .yield_flags = yf });
}

int orbit_spot_execute_spot(orbit_spot_serial_executor_t *spot, orbit_serial_work_fn fn, void *arg,
			    orbit_work_completion_t *done)
{
	if (!spot || !fn)
		return -EINVAL;
	if (orbit__coord_fork_check(&spot->co))
		return -ECHILD; /* a parent's coordinator (base/fork_guard.h) */
	return spot_submit(spot, ORBIT_WORK_SPOT, 0, NULL, 0, fn, arg, done);
}

int orbit_spot_execute_actor(orbit_spot_serial_executor_t *spot, uint64_t actor_id,
			     orbit_serial_work_fn fn, void *arg, uint64_t payload_bytes,
			     orbit_work_completion_t *done)
{
	if (!spot || !fn)
		return -EINVAL;
	if (orbit__coord_fork_check(&spot->co))
		return -ECHILD; /* a parent's coordinator (base/fork_guard.h) */
	return spot_submit(spot, ORBIT_WORK_ACTOR, actor_id, NULL, payload_bytes, fn, arg, done);
}

int orbit_spot_execute_timer(orbit_spot_serial_executor_t *spot, const char *timer_name,
			     orbit_serial_work_fn fn, void *arg, orbit_work_completion_t *done)
{
	size_t len;

	if (!spot || !fn || !timer_name)
		return -EINVAL;
	if (orbit__coord_fork_check(&spot->co))
		return -ECHILD; /* a parent's coordinator (base/fork_guard.h) */
	len = strnlen(timer_name, ORBIT_TIMER_NAME_MAX + 1);
	if (len == 0)
		return -EINVAL;
	if (len > ORBIT_TIMER_NAME_MAX) {
		orbit__coord_count_refusal(&spot->co, ORBIT_WORK_TIMER, -E2BIG);
		return -E2BIG;
	}
	return spot_submit(spot, ORBIT_WORK_TIMER, 0, timer_name, 0, fn, arg, done);
}

int orbit_spot_execute_lifecycle(orbit_spot_serial_executor_t *spot, orbit_serial_work_fn fn,
				 void *arg, orbit_work_completion_t *done)
{
	if (!spot || !fn)
		return -EINVAL;
	if (orbit__coord_fork_check(&spot->co))
		return -ECHILD; /* a parent's coordinator (base/fork_guard.h) */
	return spot_submit(spot, ORBIT_WORK_LIFECYCLE, 0, NULL, 0, fn, arg, done);
}

_Static_assert(ORBIT__SPOT_BATCH_MAX <= ORBIT__WORK_BATCH_MAX,
	       "a batch is one orbit__work_submit_n()");

int orbit__spot_fork_check(const orbit_spot_serial_executor_t *spot)
{
	return orbit__coord_fork_check(&spot->co);
}

int orbit__spot_execute_n(orbit_spot_serial_executor_t *s, bool lifecycle, orbit_serial_work_fn fn,
			  void *const *args, unsigned n, int *err)
{
	struct orbit__work *ws[ORBIT__SPOT_BATCH_MAX] = { NULL };
	unsigned kind = lifecycle ? ORBIT_WORK_LIFECYCLE : ORBIT_WORK_SPOT, made = 0;
	int ret = 0, k;

	if (!s || !fn || !err || !args || n > ORBIT__SPOT_BATCH_MAX)
		return -EINVAL;
	if (orbit__coord_fork_check(&s->co))
		return -ECHILD; /* a parent's coordinator (base/fork_guard.h) */
	*err = 0;
	if (s->mode != ORBIT_SPOT_PER_ACTOR) {
		/* SpotWide: lane turns with the waiting FIFO, one per record */
		for (unsigned i = 0; i < n; i++) {
			ret = lifecycle ? orbit_spot_execute_lifecycle(s, fn, args[i], NULL)
					: orbit_spot_execute_spot(s, fn, args[i], NULL);
			if (ret) {
				*err = ret;
				return (int)i;
			}
		}
		return (int)n;
	}
	/* PerActor: what spot_submit() does for each, with one enqueue */
	/* -ENOMEM for record @made: the single call returns it uncounted */
	made = orbit__work_new_n(&s->co, fn, args, n, ORBIT_SERIAL_SUSPEND_HOLD, ws, &ret);
	if (made && orbit__coord_closing(&s->co)) {
		/* the first record is refused as the single call refuses it */
		for (unsigned i = 1; i < made; i++)
			orbit__work_discard_new(ws[i]);
		*err = orbit__work_refuse(ws[0], kind, -EPIPE);
		return 0;
	}
	k = orbit__work_submit_n(ws, made, kind, s->spot_q, lifecycle, err);
	if (k == (int)made && made < n)
		*err = ret;
	return k;
}

struct set_info {
	orbit_spot_serial_executor_t *s;
	uint64_t actor_id;
	const void *info;
	size_t len;
};

static int set_info_fn(void *arg)
{
	struct set_info *c = arg;
	struct actor_entry *a;
	int ret;

	ORBIT__ASSERT_ON_LANE(c->s->co.lane);
	if (c->s->closed)
		return -EPIPE;
	ret = actor_get(c->s, c->actor_id, &a);
	if (ret)
		return ret;
	return orbit__actor_info_set(&a->info, c->info, c->len);
}

int orbit_spot_actor_set_info(orbit_spot_serial_executor_t *spot, uint64_t actor_id,
			      const void *info, size_t len)
{
	struct set_info c = { .s = spot, .actor_id = actor_id, .info = info, .len = len };

	if (!spot || (len && !info))
		return -EINVAL;
	if (orbit__coord_fork_check(&spot->co))
		return -ECHILD; /* a parent's coordinator (base/fork_guard.h) */
	if (len > ORBIT_ACTOR_INFO_MAX)
		return -E2BIG;
	return orbit_state_lane_run(spot->co.lane, set_info_fn, &c);
}

int orbit_spot_serial_executor_mode(const orbit_spot_serial_executor_t *spot)
{
	return spot ? spot->mode : -EINVAL;
}

/* ---- close, quiescence, destroy ------------------------------------------------ */

static void close_entry(struct entry_head *e, void *ctx)
{
	orbit_serial_queue_close(e->q);
}

static int close_fn(void *arg)
{
	orbit_spot_serial_executor_t *s = arg;

	ORBIT__ASSERT_ON_LANE(s->co.lane);
	/* One turn: no submission gets in after this, and every subordinate
	 * queue closes with the Spot (§2 lifetime). */
	s->closed = true;
	orbit__coord_close_hint(&s->co); /* for the lane-free submissions */
	/* Relaxed: lane-owned. */
	etab_each(atomic_load_explicit(&s->atab, memory_order_relaxed), close_entry, NULL);
	/* Relaxed: lane-owned. */
	etab_each(atomic_load_explicit(&s->ttab, memory_order_relaxed), close_entry, NULL);
	if (s->mode == ORBIT_SPOT_PER_ACTOR)
		orbit_serial_queue_close(s->spot_q); /* its submitters skip the lane */
	return 0;
}

int orbit_spot_serial_executor_close(orbit_spot_serial_executor_t *spot)
{
	if (!spot)
		return -EINVAL;
	if (orbit__coord_fork_check(&spot->co))
		return -ECHILD; /* a parent's coordinator (base/fork_guard.h) */
	return orbit_state_lane_run(spot->co.lane, close_fn, spot);
}

int orbit_spot_serial_executor_await_quiescence(orbit_spot_serial_executor_t *spot, int timeout_ms)
{
	if (!spot)
		return -EINVAL;
	return orbit__coord_await(&spot->co, timeout_ms);
}

int orbit_spot_serial_executor_stats(const orbit_spot_serial_executor_t *spot,
				     struct orbit_serial_executor_stats *out)
{
	if (!spot || !out)
		return -EINVAL;
	orbit__coord_stats(&spot->co, out);
	out->actor_queues = atomic_load_explicit(&spot->n_actors, memory_order_relaxed);
	out->timer_queues = atomic_load_explicit(&spot->n_timers, memory_order_relaxed);
	return 0;
}

/* The maps, taken out of the coordinator in one lane turn. */
struct emptied {
	orbit_spot_serial_executor_t *s;
	struct etab *atab, *ttab;
};

static int empty_fn(void *arg)
{
	struct emptied *e = arg;

	ORBIT__ASSERT_ON_LANE(e->s->co.lane);
	/* Relaxed: lane-owned; quiescent, so no lookup runs any more. */
	e->atab = atomic_exchange_explicit(&e->s->atab, NULL, memory_order_relaxed);
	e->ttab = atomic_exchange_explicit(&e->s->ttab, NULL, memory_order_relaxed);
	/* Relaxed: stats mirrors, each a lone counter (see the fields). */
	atomic_store_explicit(&e->s->n_actors, 0, memory_order_relaxed);
	atomic_store_explicit(&e->s->n_timers, 0, memory_order_relaxed);
	return 0;
}

static void free_entry(struct entry_head *e, void *ctx)
{
	orbit__queue_free(e->q);
	free(e);
}

static int close_cb(void *spot)
{
	return orbit_spot_serial_executor_close(spot);
}

int orbit_spot_serial_executor_destroy(orbit_spot_serial_executor_t *spot)
{
	struct emptied e = { .s = spot };
	int ret;

	if (!spot)
		return 0;
	ret = orbit__coord_destroy_begin(&spot->co, close_cb, spot);
	if (ret)
		return ret;
	/* Nothing is freed unless the maps came out in one turn. */
	ret = orbit_state_lane_run(spot->co.lane, empty_fn, &e);
	if (ret)
		return ret;
	etab_each(e.atab, free_entry, NULL);
	etab_free(e.atab);
	etab_each(e.ttab, free_entry, NULL);
	etab_free(e.ttab);
	orbit__queue_free(spot->spot_q);
	orbit__coord_fini(&spot->co);
	free(spot);
	return 0;
}
