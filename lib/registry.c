// SPDX-License-Identifier: MIT
/*
 * lib/registry.c: the C1 pure lookup registry (orbit/registry.h) over
 * liburcu's rculfhash, in the library's one RCU flavour (lib/rcu.h: bp,
 * which registers calling threads by itself and survives fork). Owns the
 * entries (key and value bytes in one allocation) and their deferred free
 * after a grace period. liburcu's own barriers order the table; this file
 * adds no atomics of its own.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <orbit/registry.h>

#include "base/die.h"
#include "base/hash.h"
#include "lib/rcu.h"

struct orbit_registry {
	struct cds_lfht *ht;
	uint64_t seed;
};

struct reg_entry {
	struct cds_lfht_node node;
	struct rcu_head rcu;
	struct reg_entry *dead_next; /* orbit_registry_destroy()'s list of deleted entries */
	uint32_t key_len;
	uint32_t value_len;
	unsigned char data[]; /* key bytes, then value bytes */
};

struct reg_key {
	const void *p;
	size_t len;
};

/* ---- hashing and matching ---- */

static uint64_t hash_bytes(const void *p, size_t len, uint64_t seed)
{
	uint64_t h = orbit__fnv1a64(ORBIT__FNV64_BASIS ^ seed, p, len);

	/* Final avalanche so bucket bits (the low ones) depend on every byte. */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

static int match_key(struct cds_lfht_node *node, const void *key)
{
	const struct reg_entry *e = caa_container_of(node, struct reg_entry, node);
	const struct reg_key *k = key;

	return e->key_len == k->len && memcmp(e->data, k->p, k->len) == 0;
}

static int check_key(const orbit_registry_t *reg, const void *key, size_t key_len)
{
	if (!reg || !key || key_len == 0)
		return -EINVAL;
	if (key_len > ORBIT_REGISTRY_KEY_MAX)
		return -E2BIG;
	return 0;
}

static void entry_free_rcu(struct rcu_head *head)
{
	free(caa_container_of(head, struct reg_entry, rcu));
}

/* ---- public surface ---- */

ORBIT_API int orbit_registry_create(size_t initial_buckets, orbit_registry_t **out)
{
	struct orbit_registry *reg;

	if (!out)
		return -EINVAL;
	if (initial_buckets == 0)
		initial_buckets = 64;
	if (initial_buckets & (initial_buckets - 1))
		return -EINVAL;
	orbit__rcu_init(); /* fork hooks before the first table (its resize worker) */
	reg = calloc(1, sizeof(*reg));
	if (!reg)
		return -ENOMEM;
	reg->seed = (uint64_t)(uintptr_t)reg * 0x9e3779b97f4a7c15ull;
	reg->ht = cds_lfht_new_flavor(initial_buckets, 1, 0,
				      CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, ORBIT__RCU_FLAVOR,
				      NULL);
	if (!reg->ht) {
		free(reg);
		return -ENOMEM;
	}
	*out = reg;
	return 0;
}

ORBIT_API int orbit_registry_destroy(orbit_registry_t *reg)
{
	struct reg_entry *dead = NULL;
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;

	if (!reg)
		return -EINVAL;
	orbit__rcu_read_lock();
	cds_lfht_for_each(reg->ht, &it, node)
	{
		if (cds_lfht_del(reg->ht, node) == 0) {
			struct reg_entry *e = caa_container_of(node, struct reg_entry, node);

			e->dead_next = dead;
			dead = e;
		}
	}
	orbit__rcu_read_unlock();
	/* Queued outside the read side: orbit__rcu_call() takes the fork lock (lib/rcu.h) */
	while (dead) {
		struct reg_entry *next = dead->dead_next;

		orbit__rcu_call(&dead->rcu, entry_free_rcu);
		dead = next;
	}
	orbit__rcu_barrier(); /* every deferred free of this table has run */
	/* broken invariant: the table was emptied above */
	orbit__die_on(cds_lfht_destroy(reg->ht, NULL), "cds_lfht_destroy");
	free(reg);
	return 0;
}

ORBIT_API int orbit_registry_add(orbit_registry_t *reg, const void *key, size_t key_len,
				 const void *value, size_t value_len)
{
	struct reg_key k = { key, key_len };
	struct reg_entry *e;
	struct cds_lfht_node *got;
	int rc = check_key(reg, key, key_len);

	if (rc)
		return rc;
	if (!value && value_len)
		return -EINVAL;
	if (value_len > ORBIT_REGISTRY_VALUE_MAX)
		return -E2BIG;
	e = malloc(sizeof(*e) + key_len + value_len);
	if (!e)
		return -ENOMEM;
	cds_lfht_node_init(&e->node);
	e->key_len = (uint32_t)key_len;
	e->value_len = (uint32_t)value_len;
	memcpy(e->data, key, key_len);
	if (value_len)
		memcpy(e->data + key_len, value, value_len);

	orbit__rcu_read_lock();
	got = cds_lfht_add_unique(reg->ht, hash_bytes(key, key_len, reg->seed), match_key, &k,
				  &e->node);
	orbit__rcu_read_unlock();
	if (got != &e->node) {
		free(e); /* never published */
		return -EEXIST;
	}
	return 0;
}

/* Look @key up inside a read-side section the caller holds. */
static struct reg_entry *lookup(orbit_registry_t *reg, const void *key, size_t key_len)
{
	struct reg_key k = { key, key_len };
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;

	cds_lfht_lookup(reg->ht, hash_bytes(key, key_len, reg->seed), match_key, &k, &it);
	node = cds_lfht_iter_get_node(&it);
	return node ? caa_container_of(node, struct reg_entry, node) : NULL;
}

ORBIT_API int orbit_registry_remove(orbit_registry_t *reg, const void *key, size_t key_len)
{
	struct reg_entry *e;
	int rc = check_key(reg, key, key_len);

	if (rc)
		return rc;
	orbit__rcu_read_lock();
	e = lookup(reg, key, key_len);
	rc = -ENOENT;
	/* Only the remover that wins cds_lfht_del() frees the entry. */
	if (e && cds_lfht_del(reg->ht, &e->node) == 0)
		rc = 0;
	orbit__rcu_read_unlock();
	/*
	 * Queued after the unlock (orbit__rcu_call() takes the fork lock, which
	 * a read-side section must not wait for: lib/rcu.h). The grace period
	 * still starts after the del, so every reader that saw @e is waited for.
	 */
	if (rc == 0)
		orbit__rcu_call(&e->rcu, entry_free_rcu);
	return rc;
}

ORBIT_API long orbit_registry_get(orbit_registry_t *reg, const void *key, size_t key_len, void *buf,
				  size_t len)
{
	const struct reg_entry *e;
	long rc = check_key(reg, key, key_len);

	if (rc)
		return rc;
	if (!buf && len)
		return -EINVAL;
	orbit__rcu_read_lock();
	e = lookup(reg, key, key_len);
	if (e) {
		rc = e->value_len;
		if (len)
			memcpy(buf, e->data + e->key_len, e->value_len < len ? e->value_len : len);
	} else {
		rc = -ENOENT;
	}
	orbit__rcu_read_unlock();
	return rc;
}

ORBIT_API int orbit_registry_get_with(orbit_registry_t *reg, const void *key, size_t key_len,
				      orbit_registry_view_fn fn, void *arg)
{
	const struct reg_entry *e;
	int rc = check_key(reg, key, key_len);

	if (rc)
		return rc;
	if (!fn)
		return -EINVAL;
	orbit__rcu_read_lock();
	e = lookup(reg, key, key_len);
	if (e)
		fn(e->data + e->key_len, e->value_len, arg);
	orbit__rcu_read_unlock();
	return e ? 0 : -ENOENT;
}

ORBIT_API long orbit_registry_count(orbit_registry_t *reg)
{
	long before, after;
	unsigned long count;

	if (!reg)
		return -EINVAL;
	orbit__rcu_read_lock();
	cds_lfht_count_nodes(reg->ht, &before, &count, &after);
	orbit__rcu_read_unlock();
	return (long)count;
}
