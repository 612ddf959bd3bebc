/* SPDX-License-Identifier: MIT */
/*
 * base/lock_backend.h: internal. The one interface an orbit-lock backend
 * implements, so that the same orbit_lock_* calls run on the fleet's SHM
 * table (shm/lock.c) or on an etcd cluster (lib/etcd_lock.c). The public
 * functions live in agent/lock_dispatch.c: it chooses the backend at
 * orbit_lock_open() and forwards every later call through the handle's
 * ops. It sits in agent/ because it is the one place that knows both
 * worlds (DESIGN.md "Layers and folders": agent -> shm, agent -> lib;
 * shm and lib never know each other), and this header sits in base/
 * because both backends include it.
 *
 * A handle of any backend begins with struct orbit__lock_base, so an
 * orbit_lock_t pointer always points at it (C11 6.7.2.1p15: a pointer to
 * a struct, converted, points to its first member). The backend's open
 * sets ops; the dispatch sets opener after a successful open. Neither
 * changes afterwards.
 *
 * Like base/options.h it holds no SHM, thread or system call.
 */
#ifndef ORBIT_BASE_LOCK_BACKEND_H
#define ORBIT_BASE_LOCK_BACKEND_H

#include <errno.h>
#include <stdbool.h>
#include <sys/types.h>

#include <orbit/lock.h>

struct orbit__lock_ops {
	const char *name; /* "shm", "etcd": orbitctl and messages */
	/*
	 * true: the dispatch answers -ECHILD to every call but close in a
	 * forked child (a backend whose connection is the parent's); false:
	 * the backend applies its own fork rule (SHM: lookups still work).
	 */
	bool guard_fork;
	/* Each has the public function's contract (include/orbit/lock.h). */
	void (*close)(orbit_lock_t *l);
	int (*try_acquire)(orbit_lock_t *l, const orbit_lock_key_t *key,
			   const orbit_lock_owner_t *owner, uint64_t ttl_ns,
			   struct orbit_lock_lease *lease, struct orbit_lock_entry *holder);
	/*
	 * try_acquire with lease flags (ORBIT_LOCK_FREE_ON_DEATH; the dispatch
	 * checked the options and calls it only for non-zero @flags). NULL: the
	 * backend has no lease flags (the dispatch answers -EOPNOTSUPP).
	 */
	int (*try_acquire_flags)(orbit_lock_t *l, const orbit_lock_key_t *key,
				 const orbit_lock_owner_t *owner, uint64_t ttl_ns, uint32_t flags,
				 struct orbit_lock_lease *lease, struct orbit_lock_entry *holder);
	int (*renew)(orbit_lock_t *l, const orbit_lock_key_t *key, const orbit_lock_owner_t *owner,
		     uint64_t token, uint64_t ttl_ns, struct orbit_lock_lease *lease);
	int (*release)(orbit_lock_t *l, const orbit_lock_key_t *key,
		       const orbit_lock_owner_t *owner, uint64_t token);
	int (*force_release)(orbit_lock_t *l, const orbit_lock_key_t *key);
	int (*lookup)(orbit_lock_t *l, const orbit_lock_key_t *key, struct orbit_lock_entry *e);
	int (*foreach)(orbit_lock_t *l, int (*fn)(const struct orbit_lock_entry *e, void *ctx),
		       void *ctx);
	int (*stats)(orbit_lock_t *l, struct orbit_lock_stats *out);
	uint64_t (*state_revision)(orbit_lock_t *l);
};

/* The first member of every backend's handle. */
struct orbit__lock_base {
	const struct orbit__lock_ops *ops; /* the backend's table (set by its open) */
	pid_t opener;			   /* set by the dispatch: the fork guard of guard_fork */
};

/* The base of a handle of any backend. */
static inline struct orbit__lock_base *orbit__lock_base_of(const orbit_lock_t *l)
{
	return (struct orbit__lock_base *)(void *)(uintptr_t)l;
}

/*
 * The argument rules every backend applies (include/orbit/lock.h): a key
 * needs a non-empty label and bytes for a non-zero length; an owner
 * non-empty bytes; namespace + label + owner at most ORBIT_LOCK_BYTES_MAX.
 * Returns 0, -EINVAL or -E2BIG.
 */
static inline int orbit__lock_check_key(const orbit_lock_key_t *k)
{
	if (!k || (!k->ns && k->ns_len) || !k->label || !k->label_len)
		return -EINVAL;
	/* the second test is the sum's, without an overflow: ns_len is within the max */
	if (k->ns_len > ORBIT_LOCK_BYTES_MAX || k->label_len > ORBIT_LOCK_BYTES_MAX - k->ns_len)
		return -E2BIG;
	return 0;
}

static inline int orbit__lock_check_owner(const orbit_lock_key_t *k, const orbit_lock_owner_t *o)
{
	if (!o || !o->bytes || !o->len)
		return -EINVAL;
	if (o->len > ORBIT_LOCK_BYTES_MAX ||
	    k->ns_len + k->label_len + o->len > ORBIT_LOCK_BYTES_MAX)
		return -E2BIG;
	return 0;
}

#endif /* ORBIT_BASE_LOCK_BACKEND_H */
