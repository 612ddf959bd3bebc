// SPDX-License-Identifier: MIT
/*
 * lib/etcd_lock.c: orbit-lock's etcd backend. Owns the mapping of the
 * orbit_lock_* contract onto etcd (doc/orbit-lock.md, "Beyond one host"):
 * a key per lock under the fleet's prefix whose value is the owner bytes,
 * a lease per tenure for the TTL, the key's create revision as the
 * fencing token, transactions for create-if-absent and for the owner's
 * renew and release, range reads for lookup and foreach. Every lock call
 * is bounded as a whole: its client calls share one deadline
 * (orbit__etcd_op_deadline). No SHM, no thread: network calls only.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <orbit/error.h>
#include <orbit/lock.h>

#include "base/lock_backend.h"
#include "base/time.h"
#include "lib/etcd_client.h"
#include "lib/etcd_lock.h"

#define NS 1000000000ull
/* etcd's largest lease TTL (its MaxLeaseTTL, about 285 years) */
#define ETCD_MAX_TTL_S 9000000000ll
#define PREFIX_MAX 96
#define KEY_MAX (PREFIX_MAX + 5 + ORBIT_LOCK_BYTES_MAX)

enum {
	ST_ACQUIRED,
	ST_BUSY,
	ST_RENEWED,
	ST_RELEASED,
	ST_FORCE_RELEASED,
	ST_NOT_FOUND,
	ST_WRONG_OWNER,
	ST_LOOKUPS,
	ST_CORRUPT,
	ST_N
};

struct etcd_lock {
	struct orbit__lock_base base; /* first: the dispatch's view */
	orbit_etcd_t *etcd;
	char prefix[PREFIX_MAX]; /* "orbit/<fleet>/lock-<kind>/" */
	size_t prefix_len;
	char mark[PREFIX_MAX + sizeof(ORBIT__ETCD_MARK)]; /* prefix + ORBIT__ETCD_MARK */
	size_t mark_len;
	unsigned timeout_ms;
	bool readonly;
	/* the cluster's minimum TTL as grants revealed it (0: none seen); relaxed: a hint */
	_Atomic int64_t min_ttl_s;
	_Atomic uint64_t st[ST_N]; /* counters; relaxed: statistics only */
};

static struct etcd_lock *E(orbit_lock_t *l)
{
	return (struct etcd_lock *)(void *)l;
}

static uint64_t now_ns(void)
{
	return orbit__clock_ns(CLOCK_MONOTONIC);
}

static void stat_inc(struct etcd_lock *l, int s)
{
	atomic_fetch_add_explicit(&l->st[s], 1, memory_order_relaxed);
}

/* One lock call: its client calls end by the handle's bound, all together. */
static void op_begin(struct etcd_lock *l)
{
	orbit__etcd_op_deadline(orbit__etcd_now_ms() + l->timeout_ms);
}

static void op_end(void)
{
	orbit__etcd_op_deadline(0);
}

size_t orbit__lock_etcd_key(char *out, size_t cap, const char *prefix, const orbit_lock_key_t *k)
{
	size_t pl = strlen(prefix), n = pl + 5 + k->ns_len + k->label_len;

	if (n > cap || k->ns_len > 0xffff)
		return 0;
	memcpy(out, prefix, pl);
	snprintf(out + pl, 6, "%04zx/", k->ns_len);
	if (k->ns_len)
		memcpy(out + pl + 5, k->ns, k->ns_len);
	memcpy(out + pl + 5 + k->ns_len, k->label, k->label_len);
	return n;
}

/*
 * A TTL in ns as etcd's whole seconds: rounded up (a holder never gets
 * less than it asked for), then raised to the cluster's minimum once a
 * grant has shown it (etcd grants max(asked, minimum) and says so).
 */
static int ttl_seconds(struct etcd_lock *l, uint64_t ttl_ns, int64_t *s)
{
	uint64_t sec = ttl_ns / NS + (ttl_ns % NS != 0);
	int64_t min = atomic_load_explicit(&l->min_ttl_s, memory_order_relaxed);

	if (!ttl_ns || sec > (uint64_t)ETCD_MAX_TTL_S)
		return -EINVAL;
	*s = (int64_t)sec < min ? min : (int64_t)sec;
	return 0;
}

static void learn_min(struct etcd_lock *l, int64_t asked, int64_t granted)
{
	if (granted > asked)
		atomic_store_explicit(&l->min_ttl_s, granted, memory_order_relaxed);
}

/* Arguments of a mutation (@owner NULL: force_release; @ttl_ns 0: not a TTL call). */
static int check_mutation(struct etcd_lock *l, const orbit_lock_key_t *key,
			  const orbit_lock_owner_t *owner)
{
	int rc;

	if (l->readonly)
		return -EROFS;
	rc = orbit__lock_check_key(key);
	if (!rc && owner)
		rc = orbit__lock_check_owner(key, owner);
	return rc;
}

/* Arguments of try_acquire and renew (an owner is required), and the TTL in seconds. */
static int check_ttl_call(struct etcd_lock *l, const orbit_lock_key_t *key,
			  const orbit_lock_owner_t *owner, uint64_t ttl_ns, uint64_t now,
			  int64_t *secs)
{
	int rc = owner ? check_mutation(l, key, owner) : -EINVAL;

	if (!rc && (!ttl_ns || ttl_ns > UINT64_MAX - now))
		rc = -EINVAL; /* no TTL, or a deadline past the clock's range */
	return rc ? rc : ttl_seconds(l, ttl_ns, secs);
}

/*
 * @kv as an entry: the key decoded back into namespace and label, the
 * value as the owner, the create revision as the token, and the deadline
 * from its lease's time to live (asked now: the answer's time plus the
 * whole seconds etcd says are left). holder_pid and the holder identity
 * are 0: the holder may run on another host. A key this backend could
 * not have written (another writer under the prefix) is -ORBIT_ECORRUPT.
 * Returns 0, -ENOENT (the lease is gone: the entry expired, @e filled
 * with expired set), -ORBIT_ECORRUPT, or a client error.
 */
int orbit__lock_etcd_key_parse(const char *prefix, size_t prefix_len, const uint8_t *key,
			       size_t key_len, size_t *ns_len, size_t *rest)
{
	const uint8_t *p = key + prefix_len;

	*ns_len = 0;
	if (key_len < prefix_len + 5 || memcmp(key, prefix, prefix_len) || p[4] != '/')
		return -ORBIT_ECORRUPT;
	for (int i = 0; i < 4; i++) {
		const char *hex = "0123456789abcdef", *d = p[i] ? strchr(hex, p[i]) : NULL;

		if (!d)
			return -ORBIT_ECORRUPT;
		*ns_len = *ns_len * 16 + (size_t)(d - hex);
	}
	*rest = key_len - prefix_len - 5;
	return *ns_len < *rest && *rest <= ORBIT_LOCK_BYTES_MAX ? 0 : -ORBIT_ECORRUPT;
}

static int kv_to_entry(struct etcd_lock *l, const struct orbit_etcd_kv *kv,
		       struct orbit_lock_entry *e)
{
	const uint8_t *p = kv->key + l->prefix_len;
	size_t rest, ns_len = 0;
	int64_t left = 0;
	int rc = 0;

	if (orbit__lock_etcd_key_parse(l->prefix, l->prefix_len, kv->key, kv->key_len, &ns_len,
				       &rest) ||
	    !kv->value_len || rest + kv->value_len > ORBIT_LOCK_BYTES_MAX ||
	    kv->create_revision <= 0)
		goto corrupt;
	e->token = (uint64_t)kv->create_revision;
	e->holder_start_ticks = e->holder_pidfs_ino = 0;
	e->holder_pid = e->slot_idx = 0;
	e->ns_len = (uint16_t)ns_len;
	e->label_len = (uint16_t)(rest - ns_len);
	e->owner_len = (uint16_t)kv->value_len;
	memcpy(e->bytes, p + 5, rest);
	memcpy(e->bytes + rest, kv->value, kv->value_len);
	e->expired = false;
	if (!kv->lease) {
		e->deadline_ns = UINT64_MAX; /* a key without a lease (not ours) never expires */
		return 0;
	}
	rc = orbit__etcd_lease_ttl(l->etcd, kv->lease, &left);
	e->deadline_ns = now_ns() + (uint64_t)(left > 0 ? left : 0) * NS;
	if (rc == -ENOENT)
		e->expired = true;
	return rc;
corrupt:
	stat_inc(l, ST_CORRUPT);
	return -ORBIT_ECORRUPT;
}

static int e_try_acquire(orbit_lock_t *lk, const orbit_lock_key_t *key,
			 const orbit_lock_owner_t *owner, uint64_t ttl_ns,
			 struct orbit_lock_lease *lease, struct orbit_lock_entry *holder)
{
	struct etcd_lock *l = E(lk);
	struct orbit_etcd_kv cur;
	char k[KEY_MAX];
	int64_t secs, id = 0, granted = 0, crev = 0;
	uint64_t t0 = now_ns();
	size_t kl;
	int rc = check_ttl_call(l, key, owner, ttl_ns, t0, &secs);

	if (rc)
		return rc;
	kl = orbit__lock_etcd_key(k, sizeof(k), l->prefix, key);
	op_begin(l);
	rc = orbit__etcd_lease_grant(l->etcd, secs, &id, &granted);
	if (rc)
		goto out;
	learn_min(l, secs, granted);
	rc = orbit__etcd_create(l->etcd, k, kl, owner->bytes, owner->len, id, &crev, &cur);
	if (rc == 1) {
		if (lease) {
			lease->token = (uint64_t)crev;
			/* sent at t0: the lease cannot end before t0 + its TTL */
			lease->deadline_ns = t0 + (uint64_t)granted * NS;
			lease->state_revision = (uint64_t)crev;
		}
		stat_inc(l, ST_ACQUIRED);
		rc = 0;
	} else if (rc == 0) {
		stat_inc(l, ST_BUSY);
		if (holder && kv_to_entry(l, &cur, holder) == -ENOENT)
			holder->expired = true; /* went while we asked: -EBUSY all the same */
		orbit__etcd_kv_free(&cur);
		orbit__etcd_lease_revoke(l->etcd, id); /* unused; else it just runs out */
		rc = -EBUSY;
	}
	/* an error after the grant: the lease, and a create that may have been
	 * applied after all, run out by the TTL (nobody renews them) */
out:
	op_end();
	return rc;
}

/* Not compared equal: absent (-ENOENT) or another owner or tenure (-EPERM). */
static int not_owned(struct etcd_lock *l, struct orbit_etcd_kv *cur)
{
	bool exists = cur->create_revision != 0;

	orbit__etcd_kv_free(cur);
	stat_inc(l, exists ? ST_WRONG_OWNER : ST_NOT_FOUND);
	return exists ? -EPERM : -ENOENT;
}

/*
 * renew: one transaction compares the owner (and the token when given)
 * and touches the key (a new revision, so the change is ordered like any
 * other), then a keepalive of its lease moves the deadline. A TTL that is
 * the lease's own (in whole seconds) is that keepalive alone; another TTL
 * attaches the key to a new lease of that TTL in a second transaction
 * that compares owner and tenure again, and revokes the old lease: the
 * key, and so the token, stays.
 */
static int e_renew(orbit_lock_t *lk, const orbit_lock_key_t *key, const orbit_lock_owner_t *owner,
		   uint64_t token, uint64_t ttl_ns, struct orbit_lock_lease *lease)
{
	struct etcd_lock *l = E(lk);
	struct orbit_etcd_kv cur, again;
	char k[KEY_MAX];
	int64_t secs, ttl = 0, rev = 0, nid = 0, granted = 0;
	uint64_t t0 = now_ns();
	size_t kl;
	int rc = check_ttl_call(l, key, owner, ttl_ns, t0, &secs);

	if (rc)
		return rc;
	if (token > INT64_MAX)
		return -EPERM; /* no revision is that large: no tenure carries it */
	kl = orbit__lock_etcd_key(k, sizeof(k), l->prefix, key);
	op_begin(l);
	rc = orbit__etcd_txn_owned(l->etcd, k, kl, (int64_t)token, owner->bytes, owner->len,
				   ORBIT_ETCD_OP_TOUCH, 0, NULL, &cur, &rev);
	if (rc == 0)
		rc = not_owned(l, &cur);
	if (rc != 1)
		goto out;
	t0 = now_ns();
	rc = cur.lease ? orbit__etcd_lease_keepalive(l->etcd, cur.lease, &ttl) : 0;
	if (rc == -ENOENT) {
		stat_inc(l, ST_NOT_FOUND); /* its lease ran out after the compare */
		goto out_kv;
	}
	if (rc)
		goto out_kv;
	if (!cur.lease || ttl != secs) { /* another TTL: a new lease for the same key */
		t0 = now_ns();
		rc = orbit__etcd_lease_grant(l->etcd, secs, &nid, &granted);
		if (rc)
			goto out_kv;
		learn_min(l, secs, granted);
		rc = orbit__etcd_txn_owned(l->etcd, k, kl, cur.create_revision, owner->bytes,
					   owner->len, ORBIT_ETCD_OP_RELEASE_TO_LEASE, nid, NULL,
					   &again, &rev);
		if (rc == 0) {
			orbit__etcd_lease_revoke(l->etcd, nid);
			rc = not_owned(l, &again);
			goto out_kv;
		}
		if (rc < 0)
			goto out_kv; /* nid (and, if applied, the key) runs out by the new TTL */
		orbit__etcd_kv_free(&again);
		if (cur.lease)
			orbit__etcd_lease_revoke(l->etcd, cur.lease); /* holds nothing now */
		ttl = granted;
	}
	if (lease) {
		lease->token = (uint64_t)cur.create_revision;
		lease->deadline_ns = t0 + (uint64_t)ttl * NS;
		lease->state_revision = (uint64_t)rev;
	}
	stat_inc(l, ST_RENEWED);
	rc = 0;
out_kv:
	orbit__etcd_kv_free(&cur);
out:
	op_end();
	return rc;
}

/*
 * The delete marker: a release and a force_release put the fleet's
 * marker key (prefix + ORBIT__ETCD_MARK) in the transaction that deletes,
 * before the delete, so the transition feed (lib/etcd_feed.c) sees, at
 * the delete's revision, who deleted: a delete without it is a lease that
 * ran out. l->mark holds the key; its value names the operation.
 */
static void mark_put(struct etcd_lock *l, struct orbit_etcd_put *p, const char *what)
{
	*p = (struct orbit_etcd_put){ l->mark, l->mark_len, what, strlen(what) };
}

/*
 * release: one transaction compares the owner and (when given) the token
 * - the key's create revision, so a retried release never frees a newer
 * tenure of the same owner - and puts the delete marker and deletes. The
 * tenure's lease is left to run out (it holds nothing): revoking it would
 * cost a round trip.
 */
static int e_release(orbit_lock_t *lk, const orbit_lock_key_t *key, const orbit_lock_owner_t *owner,
		     uint64_t token)
{
	struct etcd_lock *l = E(lk);
	struct orbit_etcd_put mark;
	struct orbit_etcd_kv cur;
	char k[KEY_MAX];
	size_t kl;
	int rc = owner ? check_mutation(l, key, owner) : -EINVAL;

	if (rc)
		return rc;
	if (token > INT64_MAX)
		return -EPERM; /* no revision is that large: no tenure carries it */
	kl = orbit__lock_etcd_key(k, sizeof(k), l->prefix, key);
	op_begin(l);
	mark_put(l, &mark, ORBIT__ETCD_MARK_RELEASE);
	rc = orbit__etcd_txn_owned(l->etcd, k, kl, (int64_t)token, owner->bytes, owner->len,
				   ORBIT_ETCD_OP_DELETE, 0, &mark, &cur, NULL);
	if (rc == 0 && orbit__etcd_last_retried()) {
		/*
		 * The compare failed on a retry after an attempt whose answer was
		 * lost: that attempt may have deleted the key itself (the key is
		 * then gone, or a newer tenure holds it). Our tenure is over
		 * either way, and the compare kept the retry off anything newer:
		 * the release is reported done, not -ENOENT / -EPERM.
		 */
		orbit__etcd_kv_free(&cur);
		stat_inc(l, ST_RELEASED);
		rc = 0;
	} else if (rc == 0) {
		rc = not_owned(l, &cur);
	} else if (rc == 1) {
		orbit__etcd_kv_free(&cur);
		stat_inc(l, ST_RELEASED);
		rc = 0;
	}
	op_end();
	return rc;
}

static int e_force_release(orbit_lock_t *lk, const orbit_lock_key_t *key)
{
	struct etcd_lock *l = E(lk);
	struct orbit_etcd_put mark;
	char k[KEY_MAX];
	size_t kl;
	int rc = check_mutation(l, key, NULL);

	if (rc)
		return rc;
	kl = orbit__lock_etcd_key(k, sizeof(k), l->prefix, key);
	mark_put(l, &mark, ORBIT__ETCD_MARK_FORCE);
	op_begin(l);
	rc = orbit__etcd_delete_with(l->etcd, k, kl, &mark);
	op_end();
	if (rc == 0) {
		stat_inc(l, ST_NOT_FOUND);
		return -ENOENT;
	}
	if (rc > 0)
		stat_inc(l, ST_FORCE_RELEASED);
	return rc > 0 ? 0 : rc;
}

/*
 * lookup: a linearizable read (a quorum round through the leader), then
 * its lease's time to live. Linearizable because lookup is the
 * authoritative answer (spec "State and notification"): a serializable
 * read of a lagging or partitioned member could report a released holder
 * as live, or miss a new one, for as long as it lags.
 */
static int e_lookup(orbit_lock_t *lk, const orbit_lock_key_t *key, struct orbit_lock_entry *e)
{
	struct etcd_lock *l = E(lk);
	struct orbit_etcd_kv kv;
	char k[KEY_MAX];
	size_t kl;
	int rc;

	if (!e)
		return -EINVAL;
	rc = orbit__lock_check_key(key);
	if (rc)
		return rc;
	stat_inc(l, ST_LOOKUPS);
	kl = orbit__lock_etcd_key(k, sizeof(k), l->prefix, key);
	op_begin(l);
	rc = orbit__etcd_get(l->etcd, k, kl, 0, &kv);
	if (rc == 1) {
		rc = kv_to_entry(l, &kv, e);
		orbit__etcd_kv_free(&kv);
	} else if (rc == 0) {
		rc = -ENOENT;
	}
	op_end();
	return rc;
}

struct foreach_ctx {
	struct etcd_lock *l;
	int (*fn)(const struct orbit_lock_entry *e, void *ctx);
	void *ctx;
	int rc, visited;
};

static int foreach_kv(const struct orbit_etcd_kv *kv, void *p)
{
	struct foreach_ctx *c = p;
	struct orbit_lock_entry e;
	int rc;

	if (kv->key_len == c->l->mark_len && !memcmp(kv->key, c->l->mark, c->l->mark_len))
		return 0; /* the delete marker (mark_put()): no lock */
	rc = kv_to_entry(c->l, kv, &e);

	if (rc == -ORBIT_ECORRUPT)
		return 0; /* not ours: counted (corrupt_slots), skipped as SHM skips such slots */
	if (rc && rc != -ENOENT) {
		c->rc = rc;
		return 1;
	}
	c->rc = c->fn(&e, c->ctx);
	c->visited += !c->rc;
	return c->rc;
}

/*
 * foreach: one serializable range over the prefix (the member asked
 * answers from its own copy, no quorum round): an inspection, like SHM's
 * per-slot snapshots, that still lists what a member knows while the
 * cluster has no quorum. Each entry's deadline then comes from its lease
 * (the leader answers). Entries come in key order.
 */
static int e_foreach(orbit_lock_t *lk, int (*fn)(const struct orbit_lock_entry *e, void *ctx),
		     void *ctx)
{
	struct etcd_lock *l = E(lk);
	struct foreach_ctx c = { l, fn, ctx, 0, 0 };
	int rc;

	if (!fn)
		return -EINVAL;
	op_begin(l);
	rc = orbit__etcd_range_prefix(l->etcd, l->prefix, l->prefix_len, 1, foreach_kv, &c, NULL);
	op_end();
	if (rc < 0)
		return rc;
	return c.rc ? c.rc : c.visited;
}

static int e_stats(orbit_lock_t *lk, struct orbit_lock_stats *o)
{
	struct etcd_lock *l = E(lk);
	uint64_t v[ST_N];

	if (!o)
		return -EINVAL;
	for (int i = 0; i < ST_N; i++)
		v[i] = atomic_load_explicit(&l->st[i], memory_order_relaxed); /* counters */
	memset(o, 0, sizeof(*o));
	o->acquired = v[ST_ACQUIRED];
	o->busy = v[ST_BUSY];
	o->renewed = v[ST_RENEWED];
	o->released = v[ST_RELEASED];
	o->force_released = v[ST_FORCE_RELEASED];
	o->not_found = v[ST_NOT_FOUND];
	o->wrong_owner = v[ST_WRONG_OWNER];
	o->lookups = v[ST_LOOKUPS];
	o->corrupt_slots = v[ST_CORRUPT];
	return 0;
}

static uint64_t e_state_revision(orbit_lock_t *lk)
{
	return (uint64_t)orbit__etcd_revision_seen(E(lk)->etcd);
}

static void e_close(orbit_lock_t *lk)
{
	struct etcd_lock *l = E(lk);

	orbit__etcd_close(l->etcd);
	free(l);
}

const struct orbit__lock_ops orbit__lock_etcd_ops = {
	.name = "etcd",
	.guard_fork = true, /* the curl connection is the parent's */
	.close = e_close,
	.try_acquire = e_try_acquire,
	.renew = e_renew,
	.release = e_release,
	.force_release = e_force_release,
	.lookup = e_lookup,
	.foreach = e_foreach,
	.stats = e_stats,
	.state_revision = e_state_revision,
};

static int make_prefix(char *out, const struct orbit__etcd_lock_cfg *cfg)
{
	int n = snprintf(out, PREFIX_MAX, "orbit/%s/lock-%u/", cfg->fleet, cfg->state_kind);

	return n > 0 && n < PREFIX_MAX ? n : -EINVAL;
}

int orbit__lock_etcd_open(const struct orbit__etcd_lock_cfg *cfg, orbit_lock_t **out)
{
	struct etcd_lock *l;
	int64_t rev = 0;
	int rc;

	if (!cfg || !out || !cfg->timeout_ms)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	rc = make_prefix(l->prefix, cfg);
	if (rc < 0)
		goto err_free;
	l->prefix_len = (size_t)rc;
	l->mark_len = (size_t)snprintf(l->mark, sizeof(l->mark), "%s%s", l->prefix,
				       ORBIT__ETCD_MARK);
	rc = orbit__etcd_open(cfg->endpoints, cfg->timeout_ms, &l->etcd);
	if (rc)
		goto err_free;
	rc = orbit__etcd_revision(l->etcd, &rev); /* reachable, and a first revision */
	if (rc)
		goto err_close;
	l->base.ops = &orbit__lock_etcd_ops;
	l->timeout_ms = cfg->timeout_ms;
	l->readonly = cfg->readonly;
	*out = (orbit_lock_t *)(void *)l;
	return 0;

err_close:
	orbit__etcd_close(l->etcd);
err_free:
	free(l);
	return rc;
}

int orbit__lock_etcd_parts(orbit_lock_t *lock, orbit_etcd_t **etcd, const char **prefix,
			   const char **mark)
{
	if (!lock || orbit__lock_base_of(lock)->ops != &orbit__lock_etcd_ops)
		return -EINVAL;
	*etcd = E(lock)->etcd;
	*prefix = E(lock)->prefix;
	*mark = E(lock)->mark;
	return 0;
}

int orbit__lock_etcd_unlink(const struct orbit__etcd_lock_cfg *cfg)
{
	char prefix[PREFIX_MAX];
	orbit_etcd_t *e;
	int rc = cfg ? make_prefix(prefix, cfg) : -EINVAL;

	if (rc < 0)
		return rc;
	rc = orbit__etcd_open(cfg->endpoints, cfg->timeout_ms, &e);
	if (rc)
		return rc;
	rc = orbit__etcd_delete_prefix(e, prefix, strlen(prefix));
	orbit__etcd_close(e);
	return rc < 0 ? rc : rc == 0 ? -ENOENT : 0;
}
