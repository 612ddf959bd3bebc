// SPDX-License-Identifier: MIT
/*
 * lib/registry.c: the C1 pure lookup registry (orbit/registry.h) over
 * liburcu's rculfhash, memb flavour. Owns the entries (key and value bytes
 * in one allocation), their deferred free after a grace period, and the
 * automatic registration of calling threads with liburcu. liburcu's own
 * barriers order the table; this file adds no atomics of its own.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/urcu-memb.h>
#include <urcu/rculfhash.h>

#include <orbit/registry.h>

#include "base/die.h"
#include "base/hash.h"

struct orbit_registry {
	struct cds_lfht *ht;
	uint64_t seed;
};

struct reg_entry {
	struct cds_lfht_node node;
	struct rcu_head rcu;
	uint32_t key_len;
	uint32_t value_len;
	unsigned char data[]; /* key bytes, then value bytes */
};

struct reg_key {
	const void *p;
	size_t len;
};

/* ---- thread registration with liburcu (memb flavour) ---- */

static pthread_once_t reg_once = PTHREAD_ONCE_INIT;
static pthread_key_t reg_key;
static _Thread_local bool reg_registered;

static void thread_exit(void *unused)
{
	urcu_memb_unregister_thread();
	reg_registered = false;
}

static void reg_init_once(void)
{
	/* broken invariant: out of pthread keys at first use */
	orbit__die_on(pthread_key_create(&reg_key, thread_exit), "pthread_key_create");
}

/* Register the calling thread as an RCU reader once; unregistered at exit. */
static void thread_online(void)
{
	if (reg_registered)
		return;
	orbit__die_on(pthread_once(&reg_once, reg_init_once), "pthread_once");
	urcu_memb_register_thread();
	reg_registered = true;
	orbit__die_on(pthread_setspecific(reg_key, (void *)1), "pthread_setspecific");
}

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
	thread_online();
	reg = calloc(1, sizeof(*reg));
	if (!reg)
		return -ENOMEM;
	reg->seed = (uint64_t)(uintptr_t)reg * 0x9e3779b97f4a7c15ull;
	reg->ht = cds_lfht_new_flavor(initial_buckets, 1, 0,
				      CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
				      &urcu_memb_flavor, NULL);
	if (!reg->ht) {
		free(reg);
		return -ENOMEM;
	}
	*out = reg;
	return 0;
}

ORBIT_API int orbit_registry_destroy(orbit_registry_t *reg)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;

	if (!reg)
		return -EINVAL;
	thread_online();
	urcu_memb_read_lock();
	cds_lfht_for_each(reg->ht, &it, node) {
		if (cds_lfht_del(reg->ht, node) == 0)
			urcu_memb_call_rcu(&caa_container_of(node, struct reg_entry, node)->rcu,
					   entry_free_rcu);
	}
	urcu_memb_read_unlock();
	urcu_memb_barrier(); /* every deferred free of this table has run */
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
	thread_online();
	e = malloc(sizeof(*e) + key_len + value_len);
	if (!e)
		return -ENOMEM;
	cds_lfht_node_init(&e->node);
	e->key_len = (uint32_t)key_len;
	e->value_len = (uint32_t)value_len;
	memcpy(e->data, key, key_len);
	if (value_len)
		memcpy(e->data + key_len, value, value_len);

	urcu_memb_read_lock();
	got = cds_lfht_add_unique(reg->ht, hash_bytes(key, key_len, reg->seed), match_key, &k,
				  &e->node);
	urcu_memb_read_unlock();
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
	thread_online();
	urcu_memb_read_lock();
	e = lookup(reg, key, key_len);
	rc = -ENOENT;
	/* Only the remover that wins cds_lfht_del() frees the entry. */
	if (e && cds_lfht_del(reg->ht, &e->node) == 0) {
		urcu_memb_call_rcu(&e->rcu, entry_free_rcu);
		rc = 0;
	}
	urcu_memb_read_unlock();
	return rc;
}

ORBIT_API long orbit_registry_get(orbit_registry_t *reg, const void *key, size_t key_len,
				  void *buf, size_t len)
{
	const struct reg_entry *e;
	long rc = check_key(reg, key, key_len);

	if (rc)
		return rc;
	if (!buf && len)
		return -EINVAL;
	thread_online();
	urcu_memb_read_lock();
	e = lookup(reg, key, key_len);
	if (e) {
		rc = e->value_len;
		if (len)
			memcpy(buf, e->data + e->key_len, e->value_len < len ? e->value_len : len);
	} else {
		rc = -ENOENT;
	}
	urcu_memb_read_unlock();
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
	thread_online();
	urcu_memb_read_lock();
	e = lookup(reg, key, key_len);
	if (e)
		fn(e->data + e->key_len, e->value_len, arg);
	urcu_memb_read_unlock();
	return e ? 0 : -ENOENT;
}

ORBIT_API long orbit_registry_count(orbit_registry_t *reg)
{
	long before, after;
	unsigned long count;

	if (!reg)
		return -EINVAL;
	thread_online();
	urcu_memb_read_lock();
	cds_lfht_count_nodes(reg->ht, &before, &count, &after);
	urcu_memb_read_unlock();
	return (long)count;
}
