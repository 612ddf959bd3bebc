/* SPDX-License-Identifier: MIT */
/*
 * lib/etcd_lock.h: orbit-lock's etcd backend (internal): the
 * base/lock_backend.h interface on the keys of an etcd cluster, through
 * lib/etcd_client.h. agent/lock_dispatch.c opens it when a fleet's locks
 * live on etcd. Built only with --with-etcd (ORBIT_HAVE_ETCD). The
 * mapping and its limits: doc/orbit-lock.md, "Beyond one host".
 */
#ifndef ORBIT_LIB_ETCD_LOCK_H
#define ORBIT_LIB_ETCD_LOCK_H

#include <stdbool.h>
#include <stdint.h>

#include <orbit/lock.h>

#include "base/lock_backend.h"

/* What the dispatch resolved from orbit_lock_options (all checked). */
struct orbit__etcd_lock_cfg {
	const char *endpoints; /* "http://host:port,...", at most 16 */
	const char *fleet;     /* the fleet name: keys live under "orbit/<fleet>/lock-<kind>/" */
	uint32_t state_kind;   /* the layout's state kind (a different layout, other keys) */
	unsigned timeout_ms;   /* > 0: the bound of every lock call */
	bool readonly;
};

extern const struct orbit__lock_ops orbit__lock_etcd_ops;

/*
 * The delete marker: the key prefix + ORBIT__ETCD_MARK ('!' sorts before
 * every lock key's hex digits) is put, with the operation's name as its
 * value, by the transaction of every release and force_release, before
 * its delete. The transition feed (lib/etcd_feed.c) tells a release from
 * a force release and from a lease that ran out by it: doc/orbit-lock.md,
 * "The transition feed on etcd". foreach skips it; unlink deletes it.
 */
#define ORBIT__ETCD_MARK "!deleted-by"
#define ORBIT__ETCD_MARK_RELEASE "release"
#define ORBIT__ETCD_MARK_FORCE "force-release"

/*
 * orbit__lock_etcd_open - a handle on the fleet's keys; reads the
 * cluster's revision once, so an unreachable cluster is known at open.
 * Context: any thread; blocks up to cfg->timeout_ms (network).
 * Returns 0, -EINVAL (endpoints), -ENOMEM, -ORBIT_EUNAVAILABLE, -EPROTO.
 */
int orbit__lock_etcd_open(const struct orbit__etcd_lock_cfg *cfg, orbit_lock_t **out);

/*
 * orbit__lock_etcd_unlink - delete every key of the fleet's table (as
 * shm_unlink of the table: every lease is gone; tokens, being cluster
 * revisions, stay above all earlier ones).
 * Returns 0, -ENOENT (no key), or a code of the open.
 */
int orbit__lock_etcd_unlink(const struct orbit__etcd_lock_cfg *cfg);

/*
 * orbit__lock_etcd_key - the etcd key of @key under @prefix (the
 * encoding: prefix, the namespace length as 4 hex digits and '/', the
 * namespace bytes, the label bytes; a length, not a separator, keeps
 * ("ab","c") and ("a","bc") apart). Returns its length, or 0 when @cap is
 * too small. Tests build keys by it.
 */
size_t orbit__lock_etcd_key(char *out, size_t cap, const char *prefix, const orbit_lock_key_t *key);

/*
 * orbit__lock_etcd_key_parse - the inverse of orbit__lock_etcd_key(): is
 * @key one this backend writes under @prefix? *@ns_len: the namespace's
 * length, *@rest: namespace + label bytes (they follow prefix + 5).
 * Returns 0 or -ORBIT_ECORRUPT (another writer's key, or the marker).
 */
int orbit__lock_etcd_key_parse(const char *prefix, size_t prefix_len, const uint8_t *key,
			       size_t key_len, size_t *ns_len, size_t *rest);

/*
 * orbit__lock_etcd_parts - what the transition feed (lib/etcd_feed.c)
 * needs of an etcd handle: its client (thread-safe; not owned), its key
 * prefix and its delete marker key (both NUL-terminated, living as long
 * as the handle). Returns 0, or -EINVAL when @lock is not an etcd handle.
 */
struct orbit_etcd;
int orbit__lock_etcd_parts(orbit_lock_t *lock, struct orbit_etcd **etcd, const char **prefix,
			   const char **mark);

#endif /* ORBIT_LIB_ETCD_LOCK_H */
