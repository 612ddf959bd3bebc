/* SPDX-License-Identifier: MIT */
/*
 * orbit/registry.h: the C1 mechanism (orbit/state_lane.h) in C, a pure lookup
 * registry: one concurrent map from a byte-string key to a byte-string
 * value whose operations end at get/add/remove and whose entries take part
 * in no invariant with anything else. It is liburcu's lock-free resizable
 * hash table (rculfhash, bp flavour): lookups run in an RCU read-side
 * section and never block, writers never wait for readers, and removed
 * entries are freed after a grace period (call_rcu). State that shares an
 * invariant with other state is C2 and belongs on a state lane instead
 * (orbit/state_lane.h has the classification rule).
 *
 * Threads: nothing to do for callers. liburcu-bp registers a calling
 * thread at its first lookup and unregisters it when it exits; the library
 * holds no registration of its own (one RCU owner: the agent's view uses
 * the same). A thread the application registered with another liburcu
 * flavour (urcu.h / memb, mb, qsbr, signal), even inside its own read-side
 * section, may call every function here: the flavours do not share
 * readers. Only destroy, which waits for a grace period, must not run
 * inside a liburcu-bp read-side section of the application's own.
 *
 * Fork: a forked child may create, use and destroy registries of its own;
 * the library installs liburcu-bp's fork hooks (pthread_atfork) at the
 * first orbit_registry_create() of the process, so the child's grace
 * periods and deferred frees work (a new call_rcu thread in the child).
 * fork() waits for a grace period in progress; do not fork() from inside
 * a get_with() callback. An application that uses liburcu-bp itself must
 * not call urcu_bp_before_fork() and its siblings as well: liburcu-bp
 * would take its own locks twice and the fork would hang.
 *
 * Synchronization:
 *   function           any thread   blocks             memory
 *   get / get_with     yes          no (RCU reader)    sees a whole value
 *   add / remove       yes          no                 linearizable per key
 *   count              yes          no                 approximate under churn
 *   destroy            one thread, no concurrent use   waits a grace period
 */
#ifndef ORBIT_REGISTRY_H
#define ORBIT_REGISTRY_H

#include <orbit/common.h>

ORBIT_BEGIN_DECLS

typedef struct orbit_registry orbit_registry_t;

/* Largest key and value a registry stores. */
#define ORBIT_REGISTRY_KEY_MAX 256u
#define ORBIT_REGISTRY_VALUE_MAX 4096u

/* Sees a value inside the read-side section; must not block or call the registry's writers. */
typedef void (*orbit_registry_view_fn)(const void *value, size_t value_len, void *arg);

/**
 * orbit_registry_create - an empty registry.
 * @initial_buckets: a power-of-two size hint (0: 64); the table grows and
 * shrinks by itself.
 * @out: receives the registry.
 *
 * Context: any thread; allocates.
 * Returns: 0; -EINVAL (NULL out, hint not a power of two); -ENOMEM.
 */
ORBIT_API int orbit_registry_create(size_t initial_buckets, orbit_registry_t **out);

/**
 * orbit_registry_destroy - remove every entry and free the registry.
 *
 * Context: one thread, once no other thread uses the registry; waits for
 * pending deferred frees (rcu_barrier). Not from an RCU callback.
 * Returns: 0; -EINVAL (NULL).
 */
ORBIT_API int orbit_registry_destroy(orbit_registry_t *reg);

/**
 * orbit_registry_add - add @key -> @value if @key is absent.
 *
 * Context: any thread; allocates; lock-free.
 * Returns: 0; -EEXIST (key present: nothing changed); -EINVAL (NULL reg,
 * key or value with a length, empty key); -E2BIG (key or value over the
 * limits); -ENOMEM.
 */
ORBIT_API int orbit_registry_add(orbit_registry_t *reg, const void *key, size_t key_len,
				 const void *value, size_t value_len);

/**
 * orbit_registry_remove - remove @key; its memory is freed after a grace
 * period, so readers still looking at it are safe.
 *
 * Context: any thread; lock-free.
 * Returns: 0; -ENOENT (absent); -EINVAL; -E2BIG.
 */
ORBIT_API int orbit_registry_remove(orbit_registry_t *reg, const void *key, size_t key_len);

/**
 * orbit_registry_get - copy the value of @key out into @buf (up to @len
 * bytes) and return its full length.
 *
 * Context: any thread; an RCU read-side section; never blocks.
 * Returns: the value's length (>= 0; larger than @len means @buf holds a
 * truncated copy); -ENOENT; -EINVAL (NULL reg or key, NULL buf with a len);
 * -E2BIG (key over the limit).
 */
ORBIT_API long orbit_registry_get(orbit_registry_t *reg, const void *key, size_t key_len, void *buf,
				  size_t len);

/**
 * orbit_registry_get_with - call @fn with the value of @key inside the
 * read-side section (no copy). @fn must not keep the pointer.
 *
 * Context: any thread; never blocks (unless @fn does).
 * Returns: 0; -ENOENT (fn not called); -EINVAL; -E2BIG.
 */
ORBIT_API int orbit_registry_get_with(orbit_registry_t *reg, const void *key, size_t key_len,
				      orbit_registry_view_fn fn, void *arg);

/**
 * orbit_registry_count - the number of entries (approximate while writers
 * run; exact when they are quiet).
 *
 * Context: any thread; walks the table's counters in a read-side section.
 * Returns: the count (>= 0); -EINVAL (NULL).
 */
ORBIT_API long orbit_registry_count(orbit_registry_t *reg);

ORBIT_END_DECLS

#endif /* ORBIT_REGISTRY_H */
