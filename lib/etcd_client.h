/* SPDX-License-Identifier: MIT */
/*
 * lib/etcd_client.h: a small client of etcd's v3 API through its JSON
 * gateway (libcurl, jansson), the transport of orbit-lock's etcd backend
 * for fleets larger than one host (doc/orbit-lock.md, "Beyond one host").
 * It knows nothing of orbit's lock semantics: it offers the few etcd
 * operations the backend maps them onto (a create-if-absent transaction
 * attached to a lease, a compare-and-delete transaction, ranges, leases).
 * Internal; built only with --with-etcd (ORBIT_HAVE_ETCD).
 *
 * Bounded time: every call finishes within the client's timeout, whatever
 * the cluster does. Each attempt gets what is left of that budget; an
 * endpoint that cannot be reached is left for the next one in the list.
 * A cluster that cannot be reached, that answers that it has no leader or
 * no quorum, or that does not answer within the budget, is
 * -ORBIT_EUNAVAILABLE. That leaves nothing half-done on the client side;
 * a transaction that reached the leader before the budget ran out may
 * still have been applied (etcd's own rule): callers that must know look
 * again.
 *
 * Context: a client handle serialises its calls with a mutex (one curl
 * handle, one connection cache); use one handle per thread for parallel
 * calls. Calls block for at most the timeout; no callback runs on another
 * thread.
 */
#ifndef ORBIT_LIB_ETCD_CLIENT_H
#define ORBIT_LIB_ETCD_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct orbit_etcd orbit_etcd_t;

/* A key-value as a range returns it (process-local copies). */
struct orbit_etcd_kv {
	int64_t create_revision; /* the key's revision at creation: never reused */
	int64_t mod_revision;
	int64_t version;
	int64_t lease; /* 0: none */
	size_t key_len, value_len;
	uint8_t *key; /* malloc'd; free with orbit__etcd_kv_free() */
	uint8_t *value;
};

void orbit__etcd_kv_free(struct orbit_etcd_kv *kv);

/*
 * orbit__etcd_open - a client of the cluster at @endpoints, a
 * comma-separated list of http://host:port URLs (at most 16), with
 * @timeout_ms (> 0) as the bound of every call.
 * Returns 0, -EINVAL (empty or malformed list, timeout 0), -ENOMEM.
 */
int orbit__etcd_open(const char *endpoints, unsigned timeout_ms, orbit_etcd_t **out);
void orbit__etcd_close(orbit_etcd_t *e);

/* The cluster's current revision (a linearizable read of no key). */
int orbit__etcd_revision(orbit_etcd_t *e, int64_t *rev);

/*
 * orbit__etcd_lease_grant - a lease of @ttl_s seconds. etcd may grant
 * more than asked (its minimum TTL); *@granted_s says what it granted.
 * Returns 0, -EINVAL, -ORBIT_EUNAVAILABLE, -EPROTO (an answer that is not
 * what the API documents), -ENOMEM. Every other call returns these too,
 * and -ENOSPC when the cluster's space quota is exhausted.
 */
int orbit__etcd_lease_grant(orbit_etcd_t *e, int64_t ttl_s, int64_t *id, int64_t *granted_s);
/* Renew once: *@ttl_s is the TTL it has again; -ENOENT: the lease expired or was revoked. */
int orbit__etcd_lease_keepalive(orbit_etcd_t *e, int64_t id, int64_t *ttl_s);
/* Seconds left (-ENOENT when gone). */
int orbit__etcd_lease_ttl(orbit_etcd_t *e, int64_t id, int64_t *left_s);
/* Revoke (its keys go with it). Returns 0 or -ENOENT when already gone. */
int orbit__etcd_lease_revoke(orbit_etcd_t *e, int64_t id);

/*
 * orbit__etcd_create - one transaction: if @key does not exist, put @value
 * attached to @lease (0: none) and return 1 with *@create_rev = the new
 * key's create revision; else return 0 and fill *@cur with the existing
 * key (NULL: not copied). Two callers can never both create.
 */
int orbit__etcd_create(orbit_etcd_t *e, const void *key, size_t key_len, const void *value,
		       size_t value_len, int64_t lease, int64_t *create_rev,
		       struct orbit_etcd_kv *cur);

/*
 * orbit__etcd_get - the key's current value into *@out. Returns 1 (found),
 * 0 (no such key), or a negative code. @serializable: answer from the
 * member asked without a quorum round (may be stale).
 */
int orbit__etcd_get(orbit_etcd_t *e, const void *key, size_t key_len, int serializable,
		    struct orbit_etcd_kv *out);

/*
 * orbit__etcd_delete_if - one transaction: delete @key only if its create
 * revision is @create_rev and its value is @value. Returns 1 (deleted), 0
 * (the key is gone, is another tenure, or has another value), or a
 * negative code.
 */
int orbit__etcd_delete_if(orbit_etcd_t *e, const void *key, size_t key_len, int64_t create_rev,
			  const void *value, size_t value_len);

/* Delete @key whatever it holds. Returns the number deleted (0 or 1) or a negative code. */
int orbit__etcd_delete(orbit_etcd_t *e, const void *key, size_t key_len);

/*
 * orbit__etcd_range_prefix - call @fn for every key beginning with
 * @prefix, in key order, as of one revision (*@rev, NULL: not wanted);
 * @fn returning non-zero stops. @serializable as for orbit__etcd_get.
 * Returns the number of keys passed to @fn, or a negative code.
 */
int orbit__etcd_range_prefix(orbit_etcd_t *e, const void *prefix, size_t prefix_len,
			     int serializable, int (*fn)(const struct orbit_etcd_kv *kv, void *ctx),
			     void *ctx, int64_t *rev);

/* Delete every key beginning with @prefix. Returns the number deleted or a negative code. */
int orbit__etcd_delete_prefix(orbit_etcd_t *e, const void *prefix, size_t prefix_len);

/* What orbit__etcd_txn_owned() does when the compare holds. */
enum orbit_etcd_op {
	ORBIT_ETCD_OP_DELETE = 1,	/* delete the key */
	ORBIT_ETCD_OP_TOUCH,		/* put keeping value and lease: a new mod revision */
	ORBIT_ETCD_OP_RELEASE_TO_LEASE, /* put the same value attached to @lease instead */
};

/*
 * A put a transaction makes before its own operation, when it succeeds
 * (the lock backend's delete marker: doc/orbit-lock.md, "The transition
 * feed on etcd"). Its key must not be the transaction's key.
 */
struct orbit_etcd_put {
	const void *key;
	size_t key_len;
	const void *value;
	size_t value_len;
};

/*
 * orbit__etcd_txn_owned - one transaction on @key: if its value is
 * @value and (when @create_rev is non-zero) its create revision is
 * @create_rev, do @also (NULL: nothing), then @op, both at one revision
 * (a watch sees @also's event first). Either way *@cur receives the key as it was before
 * @op (create_revision 0 in *@cur: no such key); free it with
 * orbit__etcd_kv_free(). *@rev (NULL: not wanted): the revision of the
 * answer (the one @op made when it made one).
 * Returns 1 (compared equal, @op done), 0 (not: the key is absent or
 * another tenure or owner), or a negative code (-EINVAL: empty @value).
 */
int orbit__etcd_txn_owned(orbit_etcd_t *e, const void *key, size_t key_len, int64_t create_rev,
			  const void *value, size_t value_len, enum orbit_etcd_op op, int64_t lease,
			  const struct orbit_etcd_put *also, struct orbit_etcd_kv *cur,
			  int64_t *rev);

/*
 * orbit__etcd_delete_with - one transaction: if @key exists, put @also
 * and delete @key (one revision; a watch sees the put first). Returns the
 * number deleted (0 or 1) or a negative code.
 */
int orbit__etcd_delete_with(orbit_etcd_t *e, const void *key, size_t key_len,
			    const struct orbit_etcd_put *also);

/*
 * orbit__etcd_op_deadline - bound every later call of this thread, on any
 * client, to end by @deadline_mono_ms (CLOCK_MONOTONIC ms, as
 * orbit__etcd_now_ms()) as well as by its own timeout; 0 lifts it. Lets
 * one operation made of several calls keep one bound: a call that starts
 * past it is -ORBIT_EUNAVAILABLE at once.
 * Context: thread-local; no syscall.
 */
void orbit__etcd_op_deadline(uint64_t deadline_mono_ms);
uint64_t orbit__etcd_now_ms(void);

/* The highest cluster revision any answer to @e carried (0: none yet). */
int64_t orbit__etcd_revision_seen(orbit_etcd_t *e);

/*
 * orbit__etcd_last_retried - whether the calling thread's last call got
 * its answer from a later attempt after an attempt whose request may
 * have reached a member and been applied (its answer lost to a timeout
 * or a broken connection). A compare that then fails may have failed on
 * that first attempt's own effect.
 * Context: the thread that made the call; per thread; no syscall.
 */
bool orbit__etcd_last_retried(void);

/*
 * What lib/etcd_watch.c shares with the calls above: the client's
 * endpoints (index < orbit__etcd_endpoint_count()) and bound, the
 * gateway's byte encoding, a prefix's range end, and one key-value of an
 * answer ("kv" or "prev_kv" objects) parsed like a range's.
 * Context: any thread; no syscall; the endpoints never change after open.
 */
unsigned orbit__etcd_endpoint_count(const orbit_etcd_t *e);
const char *orbit__etcd_endpoint(const orbit_etcd_t *e, unsigned i);
unsigned orbit__etcd_timeout_ms(const orbit_etcd_t *e);
/* base64 of @n bytes, malloc'd (NULL: no memory). */
char *orbit__etcd_b64(const void *p, size_t n);
/* etcd's range end of @prefix into @end (room for @prefix_len); 0: none (all 0xff). */
size_t orbit__etcd_range_end(const void *prefix, size_t prefix_len, uint8_t *end);
struct json_t;
/* Returns 0, -EPROTO (not a key-value of the gateway's form), -ENOMEM. */
int orbit__etcd_kv_parse(struct json_t *j, struct orbit_etcd_kv *kv);
/* An int64 field of @o (a JSON string or number; 0 when absent). Returns 0 or -EPROTO. */
int orbit__etcd_json_i64(struct json_t *o, const char *field, int64_t *v);

#endif /* ORBIT_LIB_ETCD_CLIENT_H */
