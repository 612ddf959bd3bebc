// SPDX-License-Identifier: MIT
/*
 * agent/lock_dispatch.c: the public orbit_lock_* calls. Owns the choice of
 * backend at orbit_lock_open() (orbit_lock_options.backend, .endpoints,
 * or an etcd:// fleet URL) and forwards every later call through the
 * handle's ops (base/lock_backend.h) to the SHM table (shm/lock.c) or the
 * etcd backend (lib/etcd_lock.c). It lives in agent/ because it is the one
 * piece that knows both worlds: shm/ and lib/ never include each other
 * (DESIGN.md "Layers and folders"), and agent/ is the folder that joins
 * them. It maps nothing and starts no thread itself; a forwarded call
 * costs one indirect call.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <orbit/error.h>
#include <orbit/lock.h>

#include "base/fork_guard.h"
#include "base/lock_backend.h"
#include "base/options.h"
#include "shm/lock_internal.h"
#include "shm/segment.h"
#ifdef ORBIT_HAVE_ETCD
#include "lib/etcd_lock.h"
#endif

/* base/options.h: new fields past the older sizeof (56: owner_uid last, then padding). */
_Static_assert(offsetof(struct orbit_lock_options, backend) >= 56,
	       "orbit_lock_options: backend sits in an older caller's tail padding");

#define URL_SCHEME "etcd://"
#define ENDPOINTS_MAX (16 * 128)

/* What orbit_lock_open() and orbit_lock_unlink() resolved. */
struct resolved {
	enum orbit_lock_backend backend; /* SHM or ETCD */
	char fleet[ORBIT_FLEET_NAME_MAX + 1];
	char endpoints[ENDPOINTS_MAX];
	uint32_t state_kind;
	unsigned timeout_ms;
	bool readonly;
};

/*
 * "etcd://host:port[,host:port...][/fleet]" into "http://host:port,..."
 * and the fleet name ("default" when absent). Returns 0 or -EINVAL.
 */
static int parse_url(const char *url, struct resolved *r)
{
	const char *p = url + strlen(URL_SCHEME), *slash = strchr(p, '/');
	size_t hosts = slash ? (size_t)(slash - p) : strlen(p), used = 0;
	const char *fleet = slash ? slash + 1 : "default";

	if (!hosts || strlen(fleet) > ORBIT_FLEET_NAME_MAX)
		return -EINVAL;
	snprintf(r->fleet, sizeof(r->fleet), "%s", fleet);
	for (const char *h = p; h < p + hosts;) {
		const char *end = memchr(h, ',', (size_t)(p + hosts - h));
		size_t len = end ? (size_t)(end - h) : (size_t)(p + hosts - h);
		int n;

		if (!len || memchr(h, '@', len) || !memchr(h, ':', len))
			return -EINVAL; /* empty, credentials, or no port */
		n = snprintf(r->endpoints + used, sizeof(r->endpoints) - used, "%shttp://%.*s",
			     used ? "," : "", (int)len, h);
		if (n < 0 || (size_t)n >= sizeof(r->endpoints) - used)
			return -EINVAL;
		used += (size_t)n;
		h += len + (end ? 1 : 0);
		if (end && h == p + hosts)
			return -EINVAL; /* a trailing comma */
	}
	return 0;
}

/* The backend and its settings from the caller's options (base/options.h rule). */
static int resolve(const struct orbit_lock_options *user, struct resolved *r)
{
	struct orbit_lock_options o;
	struct orbit_lock_layout y;
	char seg[ORBIT_SEG_NAME_MAX];
	bool url;
	int rc;

	memset(r, 0, sizeof(*r));
	orbit_lock_options_init(&o);
	rc = user ? ORBIT__OPTS_COPY(&o, user) : 0;
	if (rc)
		return rc;
	url = o.fleet && !strncmp(o.fleet, URL_SCHEME, strlen(URL_SCHEME));
	if (o.backend > ORBIT_LOCK_BACKEND_ETCD || o.call_timeout_ms < 0 ||
	    o.serializer_wait_ms < 0)
		return -EINVAL; /* a negative bound is wrong on any backend */
	r->backend = o.backend;
	if (r->backend == ORBIT_LOCK_BACKEND_AUTO)
		r->backend = url || o.endpoints ? ORBIT_LOCK_BACKEND_ETCD : ORBIT_LOCK_BACKEND_SHM;
	if (r->backend == ORBIT_LOCK_BACKEND_SHM)
		return url || o.endpoints ? -EINVAL : 0; /* asked for SHM and for a cluster */
	if (url && o.endpoints)
		return -EINVAL; /* two lists of endpoints */
	if (url) {
		rc = parse_url(o.fleet, r);
	} else if (!o.endpoints || strlen(o.endpoints) >= sizeof(r->endpoints)) {
		rc = -EINVAL;
	} else {
		snprintf(r->endpoints, sizeof(r->endpoints), "%s", o.endpoints);
		rc = snprintf(r->fleet, sizeof(r->fleet), "%s", o.fleet ? o.fleet : "default") >=
			     (int)sizeof(r->fleet)
			 ? -EINVAL
			 : 0;
	}
	if (!rc)
		rc = orbit__seg_name(seg, sizeof(seg), r->fleet, "lock"); /* SHM's name rule */
	if (!rc)
		rc = orbit__lock_layout_copy(&y, o.layout);
	if (rc)
		return rc;
	r->state_kind = y.state_kind;
	r->timeout_ms = o.call_timeout_ms ? (unsigned)o.call_timeout_ms
					  : ORBIT_LOCK_CALL_TIMEOUT_MS_DEFAULT;
	r->readonly = o.readonly;
	return 0;
}

#ifdef ORBIT_HAVE_ETCD
static void etcd_cfg(const struct resolved *r, struct orbit__etcd_lock_cfg *c)
{
	*c = (struct orbit__etcd_lock_cfg){ r->endpoints, r->fleet, r->state_kind, r->timeout_ms,
					    r->readonly };
}
#endif

ORBIT_API int orbit_lock_open(const struct orbit_lock_options *opts, orbit_lock_t **out)
{
	struct resolved r;
	int rc;

	if (!out)
		return -EINVAL;
	rc = resolve(opts, &r);
	if (rc)
		return rc;
	if (r.backend == ORBIT_LOCK_BACKEND_SHM) {
		rc = orbit__lock_shm_open(opts, out);
	} else {
#ifdef ORBIT_HAVE_ETCD
		struct orbit__etcd_lock_cfg c;

		etcd_cfg(&r, &c);
		rc = orbit__lock_etcd_open(&c, out);
#else
		rc = -EOPNOTSUPP; /* built without --with-etcd */
#endif
	}
	if (!rc)
		orbit__lock_base_of(*out)->opener = orbit__self_pid();
	return rc;
}

ORBIT_API int orbit_lock_unlink(const struct orbit_lock_options *opts)
{
	struct resolved r;
	int rc = resolve(opts, &r);

	if (rc)
		return rc;
	if (r.backend == ORBIT_LOCK_BACKEND_SHM)
		return orbit__lock_shm_unlink(opts);
#ifdef ORBIT_HAVE_ETCD
	struct orbit__etcd_lock_cfg c;

	etcd_cfg(&r, &c);
	return orbit__lock_etcd_unlink(&c);
#else
	return -EOPNOTSUPP;
#endif
}

ORBIT_API const char *orbit_lock_backend_name(const orbit_lock_t *l)
{
	return l ? orbit__lock_base_of(l)->ops->name : NULL;
}

/* NULL, or a forked child of a backend that refuses every call there. */
static int guard(const orbit_lock_t *l)
{
	const struct orbit__lock_base *b;

	if (!l)
		return -EINVAL;
	b = orbit__lock_base_of(l);
	return b->ops->guard_fork ? orbit__fork_check(b->opener) : 0;
}

#define OPS(l) (orbit__lock_base_of(l)->ops)

ORBIT_API void orbit_lock_close(orbit_lock_t *l)
{
	if (l)
		OPS(l)->close(l);
}

ORBIT_API int orbit_lock_try_acquire(orbit_lock_t *l, const orbit_lock_key_t *key,
				     const orbit_lock_owner_t *owner, uint64_t ttl_ns,
				     struct orbit_lock_lease *lease,
				     struct orbit_lock_entry *holder)
{
	int rc = guard(l);

	return rc ? rc : OPS(l)->try_acquire(l, key, owner, ttl_ns, lease, holder);
}

ORBIT_API void orbit_lock_acquire_options_init(struct orbit_lock_acquire_options *o)
{
	if (!o)
		return;
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
}

ORBIT_API int orbit_lock_try_acquire_with(orbit_lock_t *l, const orbit_lock_key_t *key,
					  const orbit_lock_owner_t *owner, uint64_t ttl_ns,
					  const struct orbit_lock_acquire_options *user,
					  struct orbit_lock_lease *lease,
					  struct orbit_lock_entry *holder)
{
	struct orbit_lock_acquire_options o;
	int rc = guard(l);

	orbit_lock_acquire_options_init(&o);
	if (!rc && user)
		rc = ORBIT__OPTS_COPY(&o, user); /* base/options.h rule */
	if (rc)
		return rc;
	if (o.flags & ~(uint32_t)ORBIT_LOCK_FREE_ON_DEATH)
		return -EINVAL;
	if (!o.flags)
		return OPS(l)->try_acquire(l, key, owner, ttl_ns, lease, holder);
	if (!OPS(l)->try_acquire_flags)
		return -EOPNOTSUPP; /* a backend without lease flags (etcd) */
	return OPS(l)->try_acquire_flags(l, key, owner, ttl_ns, o.flags, lease, holder);
}

ORBIT_API int orbit_lock_renew(orbit_lock_t *l, const orbit_lock_key_t *key,
			       const orbit_lock_owner_t *owner, uint64_t token, uint64_t ttl_ns,
			       struct orbit_lock_lease *lease)
{
	int rc = guard(l);

	return rc ? rc : OPS(l)->renew(l, key, owner, token, ttl_ns, lease);
}

ORBIT_API int orbit_lock_release(orbit_lock_t *l, const orbit_lock_key_t *key,
				 const orbit_lock_owner_t *owner, uint64_t token)
{
	int rc = guard(l);

	return rc ? rc : OPS(l)->release(l, key, owner, token);
}

ORBIT_API int orbit_lock_force_release(orbit_lock_t *l, const orbit_lock_key_t *key)
{
	int rc = guard(l);

	return rc ? rc : OPS(l)->force_release(l, key);
}

ORBIT_API int orbit_lock_lookup(orbit_lock_t *l, const orbit_lock_key_t *key,
				struct orbit_lock_entry *entry)
{
	int rc = guard(l);

	return rc ? rc : OPS(l)->lookup(l, key, entry);
}

ORBIT_API int orbit_lock_foreach(orbit_lock_t *l,
				 int (*fn)(const struct orbit_lock_entry *e, void *ctx), void *ctx)
{
	int rc = guard(l);

	return rc ? rc : OPS(l)->foreach (l, fn, ctx);
}

ORBIT_API int orbit_lock_stats(orbit_lock_t *l, struct orbit_lock_stats *out)
{
	return l ? OPS(l)->stats(l, out) : -EINVAL;
}

ORBIT_API uint64_t orbit_lock_state_revision(orbit_lock_t *l)
{
	return l ? OPS(l)->state_revision(l) : 0;
}
