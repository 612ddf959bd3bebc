// SPDX-License-Identifier: MIT
/*
 * lib/etcd_feed.c: orbit-lock's transition feed on etcd (lib/etcd_feed.h).
 * Owns the mapping of etcd's events on the fleet's prefix to the ring's
 * transition types: a PUT that created the key (create_revision ==
 * mod_revision) is an acquire, any other PUT a renew (renew touches the
 * key: lib/etcd_lock.c e_renew()); a DELETE is a release or a force
 * release when the delete marker was put at the same revision (the
 * release and force_release transactions put it before they delete) and
 * an expiry (RECLAIM) without it: etcd deleted the key when its lease ran
 * out. state_revision is the event's mod_revision, the token the key's
 * create revision (prev_kv's for a DELETE), as everywhere in the backend.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <orbit/error.h>

#include "base/time.h"
#include "lib/etcd_client.h"
#include "lib/etcd_feed.h"
#include "lib/etcd_lock.h"
#include "lib/etcd_watch.h"

enum mark_kind { MARK_NONE, MARK_RELEASE, MARK_FORCE };

struct orbit__etcd_feed {
	orbit_etcd_watch_t *w;
	const char *prefix, *mark; /* the handle's */
	size_t prefix_len, mark_len;
	int64_t mark_rev; /* the revision of the last marker event seen */
	enum mark_kind mark_kind;
	uint64_t seq; /* lane_pos: events handed out */
	uint64_t read, lagged, corrupt;
};

int orbit__etcd_feed_open(orbit_lock_t *lock, struct orbit__etcd_feed **out)
{
	struct orbit__etcd_feed *f;
	orbit_etcd_t *e;
	int64_t rev = 0;
	int rc;

	if (!out)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	rc = orbit__lock_etcd_parts(lock, &e, &f->prefix, &f->mark);
	if (rc)
		goto err;
	f->prefix_len = strlen(f->prefix);
	f->mark_len = strlen(f->mark);
	/* After the current heads, as a ring reader: what happens from now on */
	rc = orbit__etcd_revision(e, &rev);
	if (!rc)
		rc = orbit__etcd_watch_open(e, f->prefix, f->prefix_len, rev + 1, &f->w);
	if (rc)
		goto err;
	*out = f;
	return 0;
err:
	free(f);
	return rc;
}

void orbit__etcd_feed_close(struct orbit__etcd_feed *f)
{
	if (!f)
		return;
	orbit__etcd_watch_close(f->w);
	free(f);
}

void orbit__etcd_feed_rewind(struct orbit__etcd_feed *f)
{
	if (!f)
		return;
	/* revision 1: etcd answers a compacted history with its compact revision */
	orbit__etcd_watch_restart(f->w, 1, true);
	f->mark_rev = 0;
}

void orbit__etcd_feed_counters(const struct orbit__etcd_feed *f, uint64_t *read, uint64_t *lagged,
			       uint64_t *corrupt)
{
	if (read)
		*read = f ? f->read : 0;
	if (lagged)
		*lagged = f ? f->lagged : 0;
	if (corrupt)
		*corrupt = f ? f->corrupt : 0;
}

unsigned orbit__etcd_feed_endpoint(const struct orbit__etcd_feed *f)
{
	return f ? orbit__etcd_watch_endpoint(f->w) : 0;
}

/* The marker's event: remember who deletes at its revision. */
static void note_mark(struct orbit__etcd_feed *f, const struct orbit_etcd_event *x)
{
	f->mark_rev = x->kv.mod_revision;
	if (x->type == ORBIT_ETCD_DELETE)
		f->mark_kind = MARK_FORCE; /* orbit_lock_unlink(): an administrative delete */
	else if (x->kv.value_len == strlen(ORBIT__ETCD_MARK_RELEASE) &&
		 !memcmp(x->kv.value, ORBIT__ETCD_MARK_RELEASE, x->kv.value_len))
		f->mark_kind = MARK_RELEASE;
	else
		f->mark_kind = MARK_FORCE;
}

/* One lock key's event as a transition. Returns 0 or -ORBIT_ECORRUPT. */
static int to_transition(struct orbit__etcd_feed *f, const struct orbit_etcd_event *x,
			 struct orbit_transition_event *ev)
{
	const struct orbit_etcd_kv *held = x->type == ORBIT_ETCD_PUT ? &x->kv : &x->prev;
	size_t ns_len, rest;

	if (orbit__lock_etcd_key_parse(f->prefix, f->prefix_len, x->kv.key, x->kv.key_len, &ns_len,
				       &rest) ||
	    rest + held->value_len > ORBIT_LOCK_BYTES_MAX)
		return -ORBIT_ECORRUPT;
	memset(ev, 0, offsetof(struct orbit_transition_event, bytes));
	if (x->type == ORBIT_ETCD_PUT)
		ev->type = x->kv.create_revision == x->kv.mod_revision ? ORBIT_TRANSITION_ACQUIRE
								       : ORBIT_TRANSITION_RENEW;
	else if (f->mark_rev == x->kv.mod_revision)
		ev->type = f->mark_kind == MARK_RELEASE ? ORBIT_TRANSITION_RELEASE
							: ORBIT_TRANSITION_FORCE_RELEASE;
	else
		ev->type = ORBIT_TRANSITION_RECLAIM; /* the lease ran out: etcd deleted the key */
	ev->lane_pos = ++f->seq;
	ev->fencing_token = (uint64_t)held->create_revision; /* 0: no prev_kv (not expected) */
	ev->state_revision = (uint64_t)x->kv.mod_revision;
	ev->publish_ns = orbit__clock_ns(CLOCK_MONOTONIC); /* received: etcd keeps no time */
	ev->ns_len = (uint32_t)ns_len;
	ev->label_len = (uint32_t)(rest - ns_len);
	ev->owner_len = (uint32_t)held->value_len;
	memcpy(ev->bytes, x->kv.key + f->prefix_len + 5, rest);
	if (held->value_len)
		memcpy(ev->bytes + rest, held->value, held->value_len);
	return 0;
}

int orbit__etcd_feed_next(struct orbit__etcd_feed *f, struct orbit_transition_event *ev)
{
	struct orbit_etcd_event x;

	if (!f || !ev)
		return -EINVAL;
	for (;;) {
		int rc = orbit__etcd_watch_next(f->w, &x);

		if (rc == 0)
			return -EAGAIN;
		if (rc == -ORBIT_ELAGGED) {
			f->lagged++;
			ev->lane = 0;
			return rc;
		}
		if (rc < 0)
			return rc;
		if (x.kv.key_len == f->mark_len && !memcmp(x.kv.key, f->mark, f->mark_len)) {
			note_mark(f, &x);
			orbit__etcd_event_free(&x);
			continue;
		}
		rc = to_transition(f, &x, ev);
		orbit__etcd_event_free(&x);
		if (rc) {
			f->corrupt++;
			return rc;
		}
		f->read++;
		return 0;
	}
}
