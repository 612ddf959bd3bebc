// SPDX-License-Identifier: MIT
/*
 * agent/demo_observer.c: the bank demo's observer view (demo_observer.h):
 * the account locks as the transition ring tells them, batched and
 * applied in state_revision order, and the overlap and token checks made
 * on it. Plain memory owned by one thread; no orbit call is made here
 * (the observer process reads the ring and the table and feeds them in).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "agent/demo_observer.h"

/* One account lock as the ring told it. */
struct key_state {
	uint64_t max_token; /* highest token the key ever had (0: none seen) */
	uint64_t token;	    /* the entry's holder (0: free) */
	uint64_t deadline_ns;
	/* A holder force-released before its deadline: its tenure runs on. */
	uint64_t ghost_token, ghost_deadline_ns;
	/* The key's last frame applied (for the report of a violation). */
	uint64_t last_revision;
	uint32_t last_writer_pid, last_lane, last_type;
	/* The holder came from a scan and no frame of the key followed yet. */
	bool from_scan;
};

/* A frame in the batch, reduced to what the checks need. */
struct pending {
	uint64_t revision, token, deadline_ns, publish_ns;
	uint32_t seq;	  /* arrival order: ties of revision keep it */
	uint32_t account; /* UINT32_MAX for a REPAIR */
	uint32_t type;	  /* enum orbit_transition_type */
	uint32_t writer_pid, lane;
};

struct demo_view {
	char *ns;
	size_t ns_len;
	uint32_t accounts;
	struct key_state *k;
	struct pending *batch;
	uint32_t n;
	uint64_t skip_through;	    /* frames at or below: in the last scan */
	uint64_t unchecked_through; /* frames at or below: applied unchecked */
	bool scanning;
	uint64_t max_seen; /* highest revision read (any frame) */
	bool next_seen;
	uint64_t scan_floor;
	/* a resync for a REPAIR covers at least its revision */ /* the frame of revision skip_through + 1 was read */
	struct demo_view_counts c;
	struct demo_view_violation first;
};

int demo_view_create(const char *ns, uint32_t accounts, demo_view_t **out)
{
	demo_view_t *v;

	if (!ns || !out || !accounts)
		return -EINVAL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->ns = strdup(ns);
	v->k = calloc(accounts, sizeof(*v->k));
	v->batch = malloc(DEMO_VIEW_BATCH_MAX * sizeof(*v->batch));
	if (!v->ns || !v->k || !v->batch) {
		demo_view_destroy(v);
		return -ENOMEM;
	}
	v->ns_len = strlen(ns);
	v->accounts = accounts;
	*out = v;
	return 0;
}

void demo_view_destroy(demo_view_t *v)
{
	if (!v)
		return;
	free(v->ns);
	free(v->k);
	free(v->batch);
	free(v);
}

int demo_view_account(const demo_view_t *v, const uint8_t *ns, uint32_t ns_len,
		      const uint8_t *label, uint32_t label_len, uint32_t *account)
{
	uint64_t a = 0;

	if (ns_len != v->ns_len || memcmp(ns, v->ns, ns_len) || label_len == 0 || label_len > 10)
		return -ENOENT;
	for (uint32_t i = 0; i < label_len; i++) {
		if (label[i] < '0' || label[i] > '9')
			return -ENOENT;
		a = a * 10 + (uint64_t)(label[i] - '0');
	}
	if (a >= v->accounts)
		return -ENOENT;
	*account = (uint32_t)a;
	return 0;
}

int demo_view_add(demo_view_t *v, const struct orbit_transition_event *ev)
{
	struct pending p = { .revision = ev->state_revision,
			     .token = ev->fencing_token,
			     .deadline_ns = ev->deadline_ns,
			     .publish_ns = ev->publish_ns,
			     .seq = v->n,
			     .account = UINT32_MAX,
			     .type = ev->type,
			     .writer_pid = ev->writer_pid,
			     .lane = ev->lane };

	if (ev->state_revision > v->max_seen)
		v->max_seen = ev->state_revision;
	if (ev->state_revision == v->skip_through + 1)
		v->next_seen = true;
	if (ev->type != ORBIT_TRANSITION_REPAIR &&
	    ((ev->flags & ORBIT_TRANSITION_F_TRUNCATED) ||
	     demo_view_account(v, ev->bytes, ev->ns_len, ev->bytes + ev->ns_len, ev->label_len,
			       &p.account))) {
		v->c.other_frames++;
		return 0;
	}
	v->batch[v->n++] = p;
	return v->n >= DEMO_VIEW_BATCH_MAX;
}

static int by_revision(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;

	if (x->revision != y->revision)
		return x->revision < y->revision ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The holder's tenure ends; a forced end leaves it running in the holder's mind. */
static void end_tenure(struct key_state *k, const struct pending *p, bool forced)
{
	if (forced && k->token == p->token && k->deadline_ns > p->publish_ns) {
		k->ghost_token = k->token;
		k->ghost_deadline_ns = k->deadline_ns;
	}
	k->token = 0;
	k->deadline_ns = 0;
}

/* Count a violation of @kind and keep the first one's circumstances. */
static void violation(demo_view_t *v, const struct pending *p, const struct key_state *k, int kind,
		      uint64_t *counter)
{
	(*counter)++;
	if (v->first.kind != DEMO_VIEW_OK)
		return;
	v->first = (struct demo_view_violation){
		.kind = kind,
		.account = p->account,
		.type = p->type,
		.writer_pid = p->writer_pid,
		.lane = p->lane,
		.token = p->token,
		.revision = p->revision,
		.publish_ns = p->publish_ns,
		.max_token = k->max_token,
		.held_writer_pid = k->last_writer_pid,
		.held_lane = k->last_lane,
		.held_type = k->last_type,
		.held_from_scan = k->from_scan,
		.scan_revision = v->skip_through,
		.next_seen = v->next_seen,
		.held_revision = k->last_revision,
	};
	v->first.held_forced = !k->token && k->ghost_token;
	v->first.held_token = k->token ? k->token : k->ghost_token;
	v->first.held_deadline_ns = k->token ? k->deadline_ns : k->ghost_deadline_ns;
}

static void apply(demo_view_t *v, const struct pending *p)
{
	struct key_state *k = &v->k[p->account];
	bool check;

	if (p->revision <= v->skip_through) {
		v->c.skipped++;
		return;
	}
	check = p->revision > v->unchecked_through;
	v->c.unchecked += !check;
	v->c.frames++;
	switch (p->type) {
	case ORBIT_TRANSITION_ACQUIRE:
		v->c.acquired++;
		if (check && k->from_scan && !v->next_seen && k->token && k->token != p->token &&
		    k->deadline_ns > p->publish_ns) {
			/* the scan's holder may have been released by the one change
			 * in flight during the scan, whose frame was never read */
			v->c.unjudged++;
		} else if (check) {
			if (k->token && k->token != p->token && k->deadline_ns > p->publish_ns)
				violation(v, p, k, DEMO_VIEW_OVERLAP, &v->c.overlaps);
			else if (k->ghost_token && k->ghost_token != p->token &&
				 k->ghost_deadline_ns > p->publish_ns)
				violation(v, p, k, DEMO_VIEW_OVERLAP, &v->c.overlaps);
			if (p->token <= k->max_token)
				violation(v, p, k, DEMO_VIEW_REGRESSION, &v->c.regressions);
		}
		k->token = p->token;
		k->deadline_ns = p->deadline_ns;
		k->ghost_token = 0;
		break;
	case ORBIT_TRANSITION_RENEW:
		v->c.renewed++;
		if (check && p->token < k->max_token)
			violation(v, p, k, DEMO_VIEW_REGRESSION, &v->c.regressions);
		if (k->token != p->token)
			v->c.mismatches++;
		k->token = p->token;
		k->deadline_ns = p->deadline_ns;
		break;
	case ORBIT_TRANSITION_RELEASE:
	case ORBIT_TRANSITION_FORCE_RELEASE:
	case ORBIT_TRANSITION_RECLAIM:
		if (p->type == ORBIT_TRANSITION_RELEASE)
			v->c.released++;
		else if (p->type == ORBIT_TRANSITION_FORCE_RELEASE)
			v->c.forced++;
		else
			v->c.expired++;
		if (check && p->token < k->max_token)
			violation(v, p, k, DEMO_VIEW_REGRESSION, &v->c.regressions);
		if (check && p->type == ORBIT_TRANSITION_RECLAIM && k->token == p->token &&
		    k->deadline_ns > p->publish_ns)
			violation(v, p, k, DEMO_VIEW_EARLY_EXPIRY, &v->c.early_expiries);
		if (k->token != p->token)
			v->c.mismatches++;
		/* a stale frame of an older tenure does not end the newer one */
		if (k->token == p->token || p->token >= k->max_token)
			end_tenure(k, p, p->type == ORBIT_TRANSITION_FORCE_RELEASE);
		break;
	default:
		break;
	}
	if (p->token > k->max_token)
		k->max_token = p->token;
	k->last_revision = p->revision;
	k->from_scan = false;
	k->last_writer_pid = p->writer_pid;
	k->last_lane = p->lane;
	k->last_type = p->type;
}

int demo_view_flush(demo_view_t *v, demo_view_resync_fn resync, void *ctx)
{
	int applied = 0, rc;

	qsort(v->batch, v->n, sizeof(*v->batch), by_revision);
	for (uint32_t i = 0; i < v->n; i++) {
		const struct pending *p = &v->batch[i];

		if (p->type == ORBIT_TRANSITION_REPAIR) {
			if (resync) {
				/*
				 * The repair burned the dead mutator's revision and
				 * publishes with it before its bump: a scan that read
				 * the revision before the bump still covers every frame
				 * up to the REPAIR's (the repair had fixed the slots),
				 * and the false edge shares the REPAIR's revision.
				 */
				v->scan_floor = p->revision;
				rc = resync(v, ctx);
				v->scan_floor = 0;
				if (rc < 0) {
					v->n = 0;
					return rc;
				}
			} else {
				v->unchecked_through = UINT64_MAX; /* until the caller resyncs */
			}
			continue;
		}
		apply(v, p);
		applied++;
	}
	v->n = 0;
	return applied;
}

int demo_view_flush_unchecked(demo_view_t *v)
{
	v->unchecked_through = UINT64_MAX; /* until the caller's resync ends */
	return demo_view_flush(v, NULL, NULL);
}

void demo_view_resync_begin(demo_view_t *v, uint64_t revision_before)
{
	if (revision_before < v->scan_floor)
		revision_before = v->scan_floor;
	for (uint32_t a = 0; a < v->accounts; a++) {
		struct key_state *k = &v->k[a];

		if (k->last_revision > revision_before)
			continue; /* a frame newer than the scan's start: it knows better */
		k->token = 0;
		k->deadline_ns = 0;
		k->ghost_token = 0;
		k->from_scan = false;
	}
	v->skip_through = revision_before;
	v->unchecked_through = UINT64_MAX; /* until the scan ends */
	v->scanning = true;
}

void demo_view_resync_entry(demo_view_t *v, const struct orbit_lock_entry *e)
{
	uint32_t a;

	if (!v->scanning ||
	    demo_view_account(v, e->bytes, e->ns_len, e->bytes + e->ns_len, e->label_len, &a))
		return;
	if (v->k[a].last_revision > v->skip_through)
		return; /* the scan may predate the commit of a frame already applied */
	v->k[a].token = e->token;
	v->k[a].deadline_ns = e->deadline_ns;
	v->k[a].from_scan = true;
	if (e->token > v->k[a].max_token)
		v->k[a].max_token = e->token;
}

void demo_view_resync_end(demo_view_t *v, uint64_t revision_after)
{
	if (revision_after < v->skip_through)
		revision_after = v->skip_through;
	v->unchecked_through = revision_after;
	v->scanning = false;
	/* Nothing past skip_through + 1 can have been published yet at the
	 * scan's start, so a higher revision read means that one was read. */
	v->next_seen = v->max_seen > v->skip_through;
	v->c.resyncs++;
}

int demo_view_holder(const demo_view_t *v, uint32_t account, uint64_t *token, uint64_t *deadline_ns)
{
	if (account >= v->accounts)
		return -EINVAL;
	if (!v->k[account].token)
		return 0;
	if (token)
		*token = v->k[account].token;
	if (deadline_ns)
		*deadline_ns = v->k[account].deadline_ns;
	return 1;
}

void demo_view_first_violation(const demo_view_t *v, struct demo_view_violation *out)
{
	*out = v->first;
}

void demo_view_counts(const demo_view_t *v, struct demo_view_counts *out)
{
	*out = v->c;
}
