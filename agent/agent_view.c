// SPDX-License-Identifier: MIT
/*
 * agent/agent_view.c: the agent's local view of lock states (orbit/agent.h):
 * a liburcu rculfhash in the library's RCU flavour (lib/rcu.h), keyed by
 * namespace + label. The agent thread is its only updater: it applies the
 * ring's frames (newer state_revision wins), rebuilds the view from the
 * lock table after a lag or a repair, prunes old tombstones and frees
 * replaced nodes after a grace period (no call_rcu thread). Any thread
 * reads it with orbit_agent_view_lookup(), lock-free.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <orbit/agent.h>

#include "agent/agent_internal.h"
#include "lib/rcu.h"
#include "shm/lock_internal.h"

/*
 * liburcu is not built with TSan: its publication (rcu_assign_pointer) and
 * grace periods (membarrier) are invisible to it. Under TSan we state the
 * same edges with annotations; elsewhere they compile to nothing.
 */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#define TSAN_RELEASE(p) __tsan_release((void *)(p))
#else
#define TSAN_ACQUIRE(p) ((void)(p))
#define TSAN_RELEASE(p) ((void)(p))
#endif

#define AGENT_VIEW_BUCKETS 1024
#define AGENT_TOMBSTONES_MAX 1024

/* A view node: the last known state of one key (ns | label | owner bytes). */
struct view_node {
	struct cds_lfht_node node;
	uint64_t hash;
	uint64_t token;
	uint64_t deadline_ns;
	uint64_t revision;
	uint64_t epoch; /* resync pass that last confirmed it */
	uint32_t writer_pid;
	uint32_t ns_len, label_len, owner_len;
	bool held;		     /* false: a tombstone keeping the revision */
	struct view_node *next_free; /* retired list, agent thread only */
	uint8_t bytes[];
};

static int view_match(struct cds_lfht_node *node, const void *key)
{
	const struct view_node *n = caa_container_of(node, struct view_node, node);
	const orbit_lock_key_t *k = key;

	TSAN_ACQUIRE(n); /* pairs with the TSAN_RELEASE in view_install() */
	return n->ns_len == k->ns_len && n->label_len == k->label_len &&
	       memcmp(n->bytes, k->ns, k->ns_len) == 0 &&
	       memcmp(n->bytes + n->ns_len, k->label, k->label_len) == 0;
}

static struct view_node *node_new(const void *ns, uint32_t ns_len, const void *label,
				  uint32_t label_len, const void *owner, uint32_t owner_len)
{
	struct view_node *n = malloc(sizeof(*n) + ns_len + label_len + owner_len);

	if (!n)
		return NULL;
	memset(n, 0, sizeof(*n));
	cds_lfht_node_init(&n->node);
	n->ns_len = ns_len;
	n->label_len = label_len;
	n->owner_len = owner_len;
	memcpy(n->bytes, ns, ns_len);
	memcpy(n->bytes + ns_len, label, label_len);
	if (owner_len) /* tombstones have no owner (NULL) */
		memcpy(n->bytes + ns_len + label_len, owner, owner_len);
	n->hash = orbit__lock_hash(&(orbit_lock_key_t){ ns, ns_len, label, label_len });
	return n;
}

/* Agent thread, inside rcu read side: install @n, retire what it replaces. */
static void view_install(struct orbit_agent *a, struct view_node *n)
{
	orbit_lock_key_t k = { n->bytes, n->ns_len, n->bytes + n->ns_len, n->label_len };
	struct cds_lfht_node *old;

	TSAN_RELEASE(n); /* the node's bytes before its publication (rcu_assign_pointer) */
	old = cds_lfht_add_replace(a->view, n->hash, view_match, &k, &n->node);

	a->view_entries += n->held;
	a->tombstones += !n->held;
	if (old) {
		struct view_node *o = caa_container_of(old, struct view_node, node);

		a->view_entries -= o->held;
		a->tombstones -= !o->held;
		o->next_free = a->retired;
		a->retired = o;
		a->nretired++;
	}
}

static struct view_node *view_find(struct orbit_agent *a, const orbit_lock_key_t *k)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;

	cds_lfht_lookup(a->view, orbit__lock_hash(k), view_match, k, &it);
	node = cds_lfht_iter_get_node(&it);
	if (!node)
		return NULL;
	TSAN_ACQUIRE(caa_container_of(node, struct view_node, node)); /* as in view_match() */
	return caa_container_of(node, struct view_node, node);
}

/* Agent thread: free retired nodes after a grace period (no call_rcu thread). */
void orbit__agent_view_reclaim(struct orbit_agent *a)
{
	struct view_node *n = a->retired;

	if (!n)
		return;
	a->retired = NULL;
	a->nretired = 0;
	orbit__rcu_synchronize();
	TSAN_ACQUIRE(&a->grace); /* pairs with TSAN_RELEASE in orbit_agent_view_lookup() */
	while (n) {
		struct view_node *next = n->next_free;

		free(n);
		n = next;
	}
}

/* Agent thread, read side: drop tombstones well behind the newest revision. */
void orbit__agent_view_prune(struct orbit_agent *a)
{
	struct cds_lfht_iter it;
	struct view_node *n;

	if (a->tombstones <= AGENT_TOMBSTONES_MAX)
		return;
	cds_lfht_for_each_entry(a->view, &it, n, node)
	{
		if (!n->held && n->revision + AGENT_TOMBSTONES_MAX < a->max_revision &&
		    cds_lfht_del(a->view, &n->node) == 0) {
			a->tombstones--;
			n->next_free = a->retired;
			a->retired = n;
			a->nretired++;
		}
	}
}

/* Agent thread, read side: apply one frame if it is newer than the view. */
void orbit__agent_view_apply(struct orbit_agent *a, const struct orbit_ring_event *ev)
{
	const uint8_t *ns = ev->bytes, *label = ev->bytes + ev->ns_len;
	orbit_lock_key_t k = { ns, ev->ns_len, label, ev->label_len };
	struct view_node *cur = view_find(a, &k);
	bool held = ev->type == ORBIT_TRANSITION_ACQUIRE || ev->type == ORBIT_TRANSITION_RENEW;
	struct view_node *n;

	if (ev->state_revision > a->max_revision)
		a->max_revision = ev->state_revision;
	if (ev->state_revision <= a->floor_revision)
		return; /* the resync's table copy already has it (or it never committed) */
	if (cur && cur->revision >= ev->state_revision)
		return; /* an older frame from a slower lane */
	n = node_new(ns, ev->ns_len, label, ev->label_len, label + ev->label_len,
		     held ? ev->owner_len : 0);
	if (!n)
		return; /* the view is advisory; a later frame or resync repairs it */
	n->held = held;
	n->token = ev->fencing_token;
	n->deadline_ns = held ? ev->deadline_ns : 0;
	n->revision = ev->state_revision;
	n->writer_pid = ev->writer_pid;
	view_install(a, n);
}

struct resync_ctx {
	struct orbit_agent *a;
	uint64_t revision;
};

static int resync_entry(const struct orbit_lock_entry *e, void *p)
{
	struct resync_ctx *c = p;
	struct view_node *n;

	if (e->expired)
		return 0;
	/* A frame applied before this copy may be newer than the copy's
	 * revision (frames precede commits): keep what it said. */
	orbit_lock_key_t k = { e->bytes, e->ns_len, e->bytes + e->ns_len, e->label_len };
	struct view_node *cur = view_find(c->a, &k);
	if (cur && cur->revision > c->revision)
		return 0; /* and the tombstone pass below skips it as newer too */
	n = node_new(e->bytes, e->ns_len, e->bytes + e->ns_len, e->label_len,
		     e->bytes + e->ns_len + e->label_len, e->owner_len);
	if (!n)
		return 0;
	n->held = true;
	n->token = e->token;
	n->deadline_ns = e->deadline_ns;
	n->revision = c->revision;
	n->epoch = c->a->resync_epoch;
	n->writer_pid = e->holder_pid;
	view_install(c->a, n);
	return 0;
}

/* Agent thread: rebuild the view from the authoritative table (after a lag). */
void orbit__agent_view_resync(struct orbit_agent *a)
{
	struct orbit_lock_options lo = { .size = sizeof(lo),
					 .fleet = a->fleet,
					 .readonly = true,
					 .layout = &a->layout,
					 .mode = a->mode,
					 .gid = a->gid,
					 .owner_uid = a->owner_uid };
	orbit_lock_t *lock = a->lock;
	struct resync_ctx c = { a, 0 };
	struct cds_lfht_iter it;
	struct view_node *n;

	if (!lock && !a->ro_lock && orbit_lock_open(&lo, &a->ro_lock) < 0)
		a->ro_lock = NULL;
	if (!lock)
		lock = a->ro_lock;
	if (!lock)
		return;
	a->resync_epoch++;
	/* A hint to resync again, read before the copy it triggers */
	a->repairs_seen = orbit__lock_repairs(lock);
	/* Entries found are at least as new as this revision. */
	c.revision = orbit_lock_state_revision(lock);
	orbit__rcu_read_lock();
	a->resync_due = true; /* until the copy below succeeds (-EAGAIN: retried next drain) */
	if (orbit_lock_foreach(lock, resync_entry, &c) >= 0) {
		a->resync_due = false;
		a->floor_revision = c.revision;
		/* Held entries the table no longer has become tombstones. */
		cds_lfht_for_each_entry(a->view, &it, n, node)
		{
			struct view_node *t;

			if (!n->held || n->epoch == a->resync_epoch || n->revision > c.revision)
				continue;
			t = node_new(n->bytes, n->ns_len, n->bytes + n->ns_len, n->label_len, NULL,
				     0);
			if (!t)
				continue;
			t->revision = c.revision;
			t->epoch = a->resync_epoch;
			view_install(a, t);
		}
	}
	orbit__rcu_read_unlock();
}

/*
 * A repair without a REPAIR frame (the repairing handle had no sink): the
 * table's shared repair count moved since our last resync (a hint).
 */
static bool repaired_since_resync(struct orbit_agent *a)
{
	orbit_lock_t *lock = a->lock ? a->lock : a->ro_lock;

	return lock && orbit__lock_repairs(lock) != a->repairs_seen;
}

bool orbit__agent_view_stale(struct orbit_agent *a)
{
	return a->resync_due || repaired_since_resync(a);
}

int orbit__agent_view_open(struct orbit_agent *a)
{
	orbit__rcu_init(); /* liburcu's fork hooks: a child of ours may start its own agent */
	/* Fixed size, no CDS_LFHT_AUTO_RESIZE: resizing would start liburcu's worker thread. */
	a->view = cds_lfht_new_flavor(AGENT_VIEW_BUCKETS, AGENT_VIEW_BUCKETS, AGENT_VIEW_BUCKETS, 0,
				      ORBIT__RCU_FLAVOR, NULL);
	return a->view ? 0 : -ENOMEM;
}

void orbit__agent_view_close(struct orbit_agent *a)
{
	struct cds_lfht_iter it;
	struct view_node *n;

	if (!a->view)
		return;
	/* No reader or updater is left: the thread is joined (see stop()). */
	orbit__rcu_read_lock();
	cds_lfht_for_each_entry(a->view, &it, n, node)
	{
		if (cds_lfht_del(a->view, &n->node) == 0) {
			n->next_free = a->retired;
			a->retired = n;
		}
	}
	orbit__rcu_read_unlock();
	orbit__agent_view_reclaim(a);
	cds_lfht_destroy(a->view, NULL);
}

int orbit_agent_view_lookup(orbit_agent_t *a, const orbit_lock_key_t *key,
			    struct orbit_lock_entry *out)
{
	orbit_lock_key_t k;
	struct view_node *n;
	int rc = orbit__agent_check(a);

	if (rc < 0)
		return rc;
	if (!key || !out || (!key->ns && key->ns_len) || (!key->label && key->label_len))
		return -EINVAL;
	rc = -ENOENT;
	if (key->ns_len + key->label_len > ORBIT_LOCK_BYTES_MAX)
		return -E2BIG;
	k = *key;
	if (!k.ns)
		k.ns = ""; /* memcmp never sees NULL */
	if (!k.label)
		k.label = "";
	orbit__rcu_read_lock();
	n = view_find(a, &k);
	if (n && n->held) {
		uint32_t len = n->ns_len + n->label_len + n->owner_len;

		if (len > ORBIT_LOCK_BYTES_MAX) {
			rc = -E2BIG;
		} else {
			memset(out, 0, offsetof(struct orbit_lock_entry, bytes));
			out->token = n->token;
			out->deadline_ns = n->deadline_ns;
			out->holder_pid = n->writer_pid;
			out->ns_len = (uint16_t)n->ns_len;
			out->label_len = (uint16_t)n->label_len;
			out->owner_len = (uint16_t)n->owner_len;
			out->expired = n->deadline_ns && n->deadline_ns <= orbit__now_mono_ns();
			memcpy(out->bytes, n->bytes, len);
			rc = 0;
		}
	}
	/* Before the unlock: synchronize_rcu() returns only after that unlock. */
	TSAN_RELEASE(&a->grace); /* our reads before the grace period that frees */
	orbit__rcu_read_unlock();
	return rc;
}
