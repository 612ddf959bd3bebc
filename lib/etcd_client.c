// SPDX-License-Identifier: MIT
/*
 * lib/etcd_client.c: etcd v3 through its JSON gateway (POST /v3/...),
 * libcurl for HTTP and jansson for JSON. Keys and values travel base64
 * encoded, 64-bit numbers as JSON strings (the gateway's proto3 mapping).
 * One curl easy handle per client, under the client's mutex; every call
 * has one deadline (the client's timeout) shared by its attempts on the
 * endpoints, each attempt getting an equal share of what is left.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include <orbit/error.h>

#include "lib/etcd_client.h"

#define MAX_ENDPOINTS 16
#define ENDPOINT_MAX 128
#define RESPONSE_MAX (64u << 20) /* a range answer larger than this is refused */

struct orbit_etcd {
	pthread_mutex_t mu; /* protects curl, cur and the response buffer */
	CURL *curl;
	char endpoints[MAX_ENDPOINTS][ENDPOINT_MAX];
	unsigned n, cur; /* cur: the endpoint that answered last */
	unsigned timeout_ms;
	int64_t max_rev; /* the highest header revision any answer carried (under mu) */
};

/*
 * The deadline of the caller's current operation (orbit__etcd_op_deadline),
 * per thread: one lock call's several client calls share it. 0: none.
 */
static _Thread_local uint64_t op_deadline_ms;

/*
 * Whether the calling thread's last call was answered by another attempt
 * after one whose request may have reached a member (a timeout or a
 * broken connection after connecting): that request may have been
 * applied without its answer coming back (orbit__etcd_last_retried()).
 */
static _Thread_local bool last_retried;

struct buf {
	char *p;
	size_t len, cap;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_ok;

static void curl_init(void)
{
	curl_ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- base64 (RFC 4648, padded), what the gateway uses for bytes ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const void *src, size_t n)
{
	const uint8_t *s = src;
	char *out = malloc(4 * ((n + 2) / 3) + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)s[i + 1] << 8;
		if (i + 2 < n)
			v |= s[i + 2];
		*o++ = b64[v >> 18 & 63];
		*o++ = b64[v >> 12 & 63];
		*o++ = i + 1 < n ? b64[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? b64[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

static int b64_value(char c)
{
	const char *p = c ? strchr(b64, c) : NULL;

	return p ? (int)(p - b64) : -1;
}

/* Decode @s into a malloc'd buffer; -EPROTO on bad input. */
static int b64_decode(const char *s, uint8_t **out, size_t *len)
{
	size_t n = strlen(s), o = 0;
	uint8_t *d;

	if (n % 4)
		return -EPROTO;
	d = malloc(n / 4 * 3 + 1);
	if (!d)
		return -ENOMEM;
	for (size_t i = 0; i < n; i += 4) {
		int a = b64_value(s[i]), b = b64_value(s[i + 1]);
		int c = s[i + 2] == '=' ? 0 : b64_value(s[i + 2]);
		int e = s[i + 3] == '=' ? 0 : b64_value(s[i + 3]);
		uint32_t v;

		if (a < 0 || b < 0 || c < 0 || e < 0 || (s[i + 2] == '=' && s[i + 3] != '=') ||
		    ((s[i + 2] == '=' || s[i + 3] == '=') && i + 4 != n)) {
			free(d);
			return -EPROTO;
		}
		v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)e;
		d[o++] = (uint8_t)(v >> 16);
		if (s[i + 2] != '=')
			d[o++] = (uint8_t)(v >> 8);
		if (s[i + 3] != '=')
			d[o++] = (uint8_t)v;
	}
	*out = d;
	*len = o;
	return 0;
}

/* ---- JSON helpers ---- */

/* An int64 the gateway sends as a string (or, for some fields, a number); 0 if absent. */
int orbit__etcd_json_i64(json_t *o, const char *field, int64_t *v)
{
	json_t *x = json_object_get(o, field);

	*v = 0;
	if (!x)
		return 0;
	if (json_is_integer(x)) {
		*v = json_integer_value(x);
		return 0;
	}
	if (json_is_string(x)) {
		char *end;

		errno = 0;
		*v = strtoll(json_string_value(x), &end, 10);
		return errno || *end ? -EPROTO : 0;
	}
	return -EPROTO;
}

static json_t *json_b64(const void *p, size_t n)
{
	char *s = b64_encode(p, n);
	json_t *j = s ? json_string(s) : NULL;

	free(s);
	return j;
}

void orbit__etcd_kv_free(struct orbit_etcd_kv *kv)
{
	if (!kv)
		return;
	free(kv->key);
	free(kv->value);
	kv->key = kv->value = NULL;
}

int orbit__etcd_kv_parse(json_t *j, struct orbit_etcd_kv *kv)
{
	json_t *k = json_object_get(j, "key"), *v = json_object_get(j, "value");
	int rc;

	memset(kv, 0, sizeof(*kv));
	if (!json_is_string(k))
		return -EPROTO;
	if (orbit__etcd_json_i64(j, "create_revision", &kv->create_revision) ||
	    orbit__etcd_json_i64(j, "mod_revision", &kv->mod_revision) ||
	    orbit__etcd_json_i64(j, "version", &kv->version) ||
	    orbit__etcd_json_i64(j, "lease", &kv->lease))
		return -EPROTO;
	rc = b64_decode(json_string_value(k), &kv->key, &kv->key_len);
	if (rc)
		return rc;
	rc = b64_decode(json_is_string(v) ? json_string_value(v) : "", &kv->value, &kv->value_len);
	if (rc)
		orbit__etcd_kv_free(kv);
	return rc;
}

/* ---- HTTP ---- */

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
	struct buf *b = ctx;
	size_t add = size * n;

	if (b->len + add + 1 > RESPONSE_MAX)
		return 0; /* curl then fails the transfer */
	if (b->len + add + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *q;

		while (cap < b->len + add + 1)
			cap *= 2;
		q = realloc(b->p, cap);
		if (!q)
			return 0;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, add);
	b->len += add;
	b->p[b->len] = '\0';
	return add;
}

/*
 * A gateway error answer: {"error": "...", "code": N, "message": "..."}
 * with gRPC codes. NOT_FOUND (5) is a lease that is gone; UNAVAILABLE (14)
 * and DEADLINE_EXCEEDED (4, etcd's "request timed out" without quorum)
 * say the cluster cannot decide now.
 */
static int grpc_error(json_t *j)
{
	int64_t code = 0;

	orbit__etcd_json_i64(j, "code", &code);
	switch (code) {
	case 5:
		return -ENOENT;
	case 3:
		return -EINVAL;
	case 4:
	case 14:
		return -ORBIT_EUNAVAILABLE;
	case 8:
		return -ENOSPC; /* RESOURCE_EXHAUSTED: "mvcc: database space exceeded" */
	default:
		return -EPROTO;
	}
}

/* Keep the highest header revision seen (e->mu held). */
static void note_revision(orbit_etcd_t *e, json_t *j)
{
	json_t *h = json_object_get(j, "header");
	int64_t rev = 0;

	if (h && !orbit__etcd_json_i64(h, "revision", &rev) && rev > e->max_rev)
		e->max_rev = rev;
}

void orbit__etcd_op_deadline(uint64_t deadline_mono_ms)
{
	op_deadline_ms = deadline_mono_ms;
}

uint64_t orbit__etcd_now_ms(void)
{
	return mono_ms();
}

int64_t orbit__etcd_revision_seen(orbit_etcd_t *e)
{
	int64_t rev;

	pthread_mutex_lock(&e->mu);
	rev = e->max_rev;
	pthread_mutex_unlock(&e->mu);
	return rev;
}

/*
 * POST @body (consumed) to @path; the parsed answer in *@out. Tries the
 * endpoints from the last one that answered, each within its share of
 * the time left of the one deadline.
 */
static int call(orbit_etcd_t *e, const char *path, json_t *body, json_t **out)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	uint64_t deadline = mono_ms() + e->timeout_ms;
	struct curl_slist *hdr = NULL;
	struct buf b = { NULL, 0, 0 };
	int rc = -ORBIT_EUNAVAILABLE;
	bool maybe_sent = false;

	json_decref(body);
	*out = NULL;
	if (!text)
		return -ENOMEM;
	if (op_deadline_ms && op_deadline_ms < deadline)
		deadline = op_deadline_ms;
	hdr = curl_slist_append(NULL, "Content-Type: application/json");
	if (!hdr) {
		free(text);
		return -ENOMEM;
	}
	pthread_mutex_lock(&e->mu);
	for (unsigned tried = 0; tried < e->n; tried++) {
		unsigned idx = (e->cur + tried) % e->n;
		uint64_t now = mono_ms();
		long share, status = 0;
		char url[ENDPOINT_MAX + 64];
		json_error_t jerr;
		json_t *j;
		CURLcode cc;

		if (now >= deadline)
			break;
		share = (long)((deadline - now) / (e->n - tried));
		if (share < 1)
			share = 1;
		snprintf(url, sizeof(url), "%s%s", e->endpoints[idx], path);
		b.len = 0;
		curl_easy_reset(e->curl);
		curl_easy_setopt(e->curl, CURLOPT_URL, url);
		curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, &b);
		curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, share);
		curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, share);
		curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(e->curl, CURLOPT_PROTOCOLS_STR, "http,https");
		cc = curl_easy_perform(e->curl);
		if (cc != CURLE_OK) {
			/* nothing was sent when no connection was made; anything else may have been */
			if (cc != CURLE_COULDNT_CONNECT && cc != CURLE_COULDNT_RESOLVE_HOST)
				maybe_sent = true;
			continue; /* unreachable or too slow: the next endpoint */
		}
		curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
		j = b.p ? json_loads(b.p, 0, &jerr) : NULL;
		if (!j || !json_is_object(j)) {
			json_decref(j);
			rc = -EPROTO;
			continue;
		}
		if (status != 200) {
			rc = grpc_error(j);
			json_decref(j);
			if (rc == -ORBIT_EUNAVAILABLE)
				continue; /* this member has no leader: another may */
			break;
		}
		e->cur = idx;
		note_revision(e, j);
		*out = j;
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&e->mu);
	last_retried = rc == 0 && maybe_sent;
	curl_slist_free_all(hdr);
	free(b.p);
	free(text);
	return rc;
}

/* ---- the client ---- */

int orbit__etcd_open(const char *endpoints, unsigned timeout_ms, orbit_etcd_t **out)
{
	orbit_etcd_t *e;
	const char *p = endpoints;

	if (!out || !endpoints || !*endpoints || timeout_ms == 0)
		return -EINVAL;
	pthread_once(&curl_once, curl_init);
	if (!curl_ok)
		return -ENOMEM;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == 0 || len >= ENDPOINT_MAX || e->n == MAX_ENDPOINTS ||
		    (strncmp(p, "http://", 7) && strncmp(p, "https://", 8))) {
			free(e);
			return -EINVAL;
		}
		memcpy(e->endpoints[e->n], p, len);
		e->endpoints[e->n][len] = '\0';
		while (len > 0 && e->endpoints[e->n][len - 1] == '/')
			e->endpoints[e->n][--len] = '\0'; /* "http://h:p/" -> "http://h:p" */
		e->n++;
		p += len + (end ? 1 : 0);
		if (end && !*p) {
			free(e);
			return -EINVAL; /* a trailing comma */
		}
	}
	e->timeout_ms = timeout_ms;
	e->curl = curl_easy_init();
	if (!e->curl) {
		free(e);
		return -ENOMEM;
	}
	pthread_mutex_init(&e->mu, NULL);
	*out = e;
	return 0;
}

void orbit__etcd_close(orbit_etcd_t *e)
{
	if (!e)
		return;
	curl_easy_cleanup(e->curl);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

static int header_revision(json_t *j, int64_t *rev)
{
	json_t *h = json_object_get(j, "header");

	return h ? orbit__etcd_json_i64(h, "revision", rev) : -EPROTO;
}

int orbit__etcd_revision(orbit_etcd_t *e, int64_t *rev)
{
	json_t *j, *body = json_pack("{s:s, s:b}", "key", "AA==", "count_only", 1);
	int rc;

	if (!e || !rev)
		return -EINVAL;
	rc = call(e, "/v3/kv/range", body, &j);
	if (rc)
		return rc;
	rc = header_revision(j, rev);
	json_decref(j);
	return rc;
}

int orbit__etcd_lease_grant(orbit_etcd_t *e, int64_t ttl_s, int64_t *id, int64_t *granted_s)
{
	json_t *j;
	char ttl[24];
	int rc;

	if (!e || ttl_s <= 0 || !id)
		return -EINVAL;
	snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_s);
	rc = call(e, "/v3/lease/grant", json_pack("{s:s}", "TTL", ttl), &j);
	if (rc)
		return rc;
	rc = orbit__etcd_json_i64(j, "ID", id);
	if (!rc && granted_s)
		rc = orbit__etcd_json_i64(j, "TTL", granted_s);
	if (!rc && *id == 0)
		rc = -EPROTO;
	json_decref(j);
	return rc;
}

static json_t *id_body(int64_t id)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRId64, id);
	return json_pack("{s:s}", "ID", s);
}

int orbit__etcd_lease_keepalive(orbit_etcd_t *e, int64_t id, int64_t *ttl_s)
{
	json_t *j, *res;
	int64_t ttl = 0;
	int rc;

	if (!e || !id)
		return -EINVAL;
	/* The gateway streams keepalive answers: one request, one {"result":...} line. */
	rc = call(e, "/v3/lease/keepalive", id_body(id), &j);
	if (rc)
		return rc;
	res = json_object_get(j, "result");
	rc = res ? orbit__etcd_json_i64(res, "TTL", &ttl) : -EPROTO;
	json_decref(j);
	if (rc)
		return rc;
	if (ttl <= 0)
		return -ENOENT; /* etcd answers TTL 0 for a lease it no longer has */
	if (ttl_s)
		*ttl_s = ttl;
	return 0;
}

int orbit__etcd_lease_ttl(orbit_etcd_t *e, int64_t id, int64_t *left_s)
{
	json_t *j;
	int64_t ttl = 0;
	int rc;

	if (!e || !id)
		return -EINVAL;
	rc = call(e, "/v3/lease/timetolive", id_body(id), &j);
	if (rc)
		return rc;
	rc = orbit__etcd_json_i64(j, "TTL", &ttl);
	json_decref(j);
	if (rc)
		return rc;
	if (ttl < 0)
		return -ENOENT; /* -1: expired or never granted */
	if (left_s)
		*left_s = ttl;
	return 0;
}

int orbit__etcd_lease_revoke(orbit_etcd_t *e, int64_t id)
{
	json_t *j;
	int rc;

	if (!e || !id)
		return -EINVAL;
	rc = call(e, "/v3/lease/revoke", id_body(id), &j);
	json_decref(j);
	return rc;
}

/*
 * Send transaction @body (consumed; NULL: it could not be built, -ENOMEM);
 * the answer in *@j (the caller frees it), whether it succeeded, and its
 * first response (NULL: none).
 */
static int txn(orbit_etcd_t *e, json_t *body, json_t **j, int *succeeded, json_t **first)
{
	json_t *s, *r;
	int rc;

	if (!body)
		return -ENOMEM;
	rc = call(e, "/v3/kv/txn", body, j);
	if (rc)
		return rc;
	s = json_object_get(*j, "succeeded");
	r = json_object_get(*j, "responses");
	*succeeded = json_is_true(s);
	*first = json_is_array(r) && json_array_size(r) > 0 ? json_array_get(r, 0) : NULL;
	return 0;
}

int orbit__etcd_create(orbit_etcd_t *e, const void *key, size_t key_len, const void *value,
		       size_t value_len, int64_t lease, int64_t *create_rev,
		       struct orbit_etcd_kv *cur)
{
	json_t *k, *put, *body, *j, *first, *kvs;
	char lease_s[24];
	int ok, rc;

	if (!e || !key || !key_len || (!value && value_len))
		return -EINVAL;
	k = json_b64(key, key_len);
	snprintf(lease_s, sizeof(lease_s), "%" PRId64, lease);
	put = json_pack("{s:O, s:o, s:s}", "key", k, "value",
			json_b64(value ? value : "", value_len), "lease", lease_s);
	/* compare: create_revision(key) == 0, i.e. the key does not exist */
	body = json_pack("{s:[{s:s, s:s, s:O, s:s}], s:[{s:o}], s:[{s:{s:O}}]}", "compare",
			 "result", "EQUAL", "target", "CREATE", "key", k, "create_revision", "0",
			 "success", "request_put", put, "failure", "request_range", "key", k);
	json_decref(k);
	rc = txn(e, body, &j, &ok, &first);
	if (rc)
		return rc;
	if (ok) {
		/* The put created the key at the transaction's revision. */
		rc = header_revision(j, create_rev);
		json_decref(j);
		return rc ? rc : 1;
	}
	kvs = first ? json_object_get(json_object_get(first, "response_range"), "kvs") : NULL;
	if (!json_is_array(kvs) || json_array_size(kvs) != 1) {
		/* The key existed at the compare and was gone at the range? One txn: impossible. */
		json_decref(j);
		return -EPROTO;
	}
	rc = cur ? orbit__etcd_kv_parse(json_array_get(kvs, 0), cur) : 0;
	json_decref(j);
	return rc ? rc : 0;
}

int orbit__etcd_get(orbit_etcd_t *e, const void *key, size_t key_len, int serializable,
		    struct orbit_etcd_kv *out)
{
	json_t *j, *kvs, *body;
	int rc;

	if (!e || !key || !key_len || !out)
		return -EINVAL;
	body = json_pack("{s:o, s:b}", "key", json_b64(key, key_len), "serializable", serializable);
	rc = call(e, "/v3/kv/range", body, &j);
	if (rc)
		return rc;
	kvs = json_object_get(j, "kvs");
	if (!kvs || json_array_size(kvs) == 0) {
		json_decref(j);
		return 0;
	}
	rc = orbit__etcd_kv_parse(json_array_get(kvs, 0), out);
	json_decref(j);
	return rc ? rc : 1;
}

int orbit__etcd_delete_if(orbit_etcd_t *e, const void *key, size_t key_len, int64_t create_rev,
			  const void *value, size_t value_len)
{
	json_t *k, *body, *j, *first;
	char rev[24];
	int ok, rc;

	if (!e || !key || !key_len || create_rev <= 0 || (!value && value_len))
		return -EINVAL;
	k = json_b64(key, key_len);
	snprintf(rev, sizeof(rev), "%" PRId64, create_rev);
	body = json_pack("{s:[{s:s, s:s, s:O, s:s}, {s:s, s:s, s:O, s:o}], s:[{s:{s:O}}]}",
			 "compare", "result", "EQUAL", "target", "CREATE", "key", k,
			 "create_revision", rev, "result", "EQUAL", "target", "VALUE", "key", k,
			 "value", json_b64(value ? value : "", value_len), "success",
			 "request_delete_range", "key", k);
	json_decref(k);
	rc = txn(e, body, &j, &ok, &first);
	if (rc)
		return rc;
	json_decref(j);
	return ok ? 1 : 0;
}

int orbit__etcd_delete(orbit_etcd_t *e, const void *key, size_t key_len)
{
	json_t *j;
	int64_t deleted = 0;
	int rc;

	if (!e || !key || !key_len)
		return -EINVAL;
	rc = call(e, "/v3/kv/deleterange", json_pack("{s:o}", "key", json_b64(key, key_len)), &j);
	if (rc)
		return rc;
	rc = orbit__etcd_json_i64(j, "deleted", &deleted);
	json_decref(j);
	return rc ? rc : (int)deleted;
}

/* range_end of a prefix: its last byte below 0xff incremented (etcd's rule); 0: none. */
size_t orbit__etcd_range_end(const void *prefix, size_t prefix_len, uint8_t *end)
{
	size_t n = prefix_len;

	memcpy(end, prefix, prefix_len);
	while (n > 0 && end[n - 1] == 0xff)
		n--;
	if (n)
		end[n - 1]++;
	return n;
}

int orbit__etcd_range_prefix(orbit_etcd_t *e, const void *prefix, size_t prefix_len,
			     int serializable, int (*fn)(const struct orbit_etcd_kv *kv, void *ctx),
			     void *ctx, int64_t *rev)
{
	uint8_t end[512];
	json_t *j, *kvs, *body;
	size_t n, i;
	int rc, count = 0;

	if (!e || !prefix || !prefix_len || prefix_len > sizeof(end) || !fn)
		return -EINVAL;
	n = orbit__etcd_range_end(prefix, prefix_len, end);
	if (n == 0)
		return -EINVAL; /* an all-0xff prefix: not one orbit makes */
	body = json_pack("{s:o, s:o, s:b}", "key", json_b64(prefix, prefix_len), "range_end",
			 json_b64(end, n), "serializable", serializable);
	rc = call(e, "/v3/kv/range", body, &j);
	if (rc)
		return rc;
	if (rev && header_revision(j, rev)) {
		json_decref(j);
		return -EPROTO;
	}
	kvs = json_object_get(j, "kvs");
	for (i = 0; kvs && i < json_array_size(kvs); i++) {
		struct orbit_etcd_kv kv;
		int stop;

		rc = orbit__etcd_kv_parse(json_array_get(kvs, i), &kv);
		if (rc) {
			json_decref(j);
			return rc;
		}
		stop = fn(&kv, ctx);
		orbit__etcd_kv_free(&kv);
		count++;
		if (stop)
			break;
	}
	json_decref(j);
	return count;
}

/* The request_put of @p (NULL: none; NULL answer also when out of memory). */
static json_t *put_op(const struct orbit_etcd_put *p)
{
	return p ? json_pack("{s:{s:o, s:o}}", "request_put", "key", json_b64(p->key, p->key_len),
			     "value", json_b64(p->value, p->value_len))
		 : NULL;
}

int orbit__etcd_txn_owned(orbit_etcd_t *e, const void *key, size_t key_len, int64_t create_rev,
			  const void *value, size_t value_len, enum orbit_etcd_op op, int64_t lease,
			  const struct orbit_etcd_put *also, struct orbit_etcd_kv *cur,
			  int64_t *rev)
{
	json_t *k, *cmp, *then, *body, *j, *first, *kvs, *extra = put_op(also);
	char num[24];
	int ok, rc;

	if (!e || !key || !key_len || !value || !value_len || !cur || create_rev < 0)
		return -EINVAL;
	memset(cur, 0, sizeof(*cur));
	k = json_b64(key, key_len);
	cmp = json_pack("[{s:s, s:s, s:O, s:o}]", "result", "EQUAL", "target", "VALUE", "key", k,
			"value", json_b64(value, value_len));
	if (cmp && create_rev) {
		snprintf(num, sizeof(num), "%" PRId64, create_rev);
		json_array_append_new(cmp,
				      json_pack("{s:s, s:s, s:O, s:s}", "result", "EQUAL", "target",
						"CREATE", "key", k, "create_revision", num));
	}
	switch (op) {
	case ORBIT_ETCD_OP_DELETE:
		then = json_pack("{s:{s:O}}", "request_delete_range", "key", k);
		break;
	case ORBIT_ETCD_OP_TOUCH: /* a new mod revision, value and lease kept */
		then = json_pack("{s:{s:O, s:b, s:b}}", "request_put", "key", k, "ignore_value", 1,
				 "ignore_lease", 1);
		break;
	case ORBIT_ETCD_OP_RELEASE_TO_LEASE:
		snprintf(num, sizeof(num), "%" PRId64, lease);
		then = json_pack("{s:{s:O, s:o, s:s}}", "request_put", "key", k, "value",
				 json_b64(value, value_len), "lease", num);
		break;
	default:
		then = NULL;
	}
	/* success: the key as it was, then @also, then @op; failure: the key as it is */
	body = cmp && then && (extra || !also)
		   ? json_pack("{s:O, s:[{s:{s:O}}], s:[{s:{s:O}}]}", "compare", cmp, "success",
			       "request_range", "key", k, "failure", "request_range", "key", k)
		   : NULL;
	if (body && extra) /* append_new consumes its value, also when it fails */
		json_array_append_new(json_object_get(body, "success"), json_incref(extra));
	if (body)
		json_array_append_new(json_object_get(body, "success"), json_incref(then));
	json_decref(cmp);
	json_decref(then);
	json_decref(extra);
	json_decref(k);
	rc = txn(e, body, &j, &ok, &first);
	if (rc)
		return rc;
	rc = rev ? header_revision(j, rev) : 0;
	kvs = first ? json_object_get(json_object_get(first, "response_range"), "kvs") : NULL;
	if (!rc && json_is_array(kvs) && json_array_size(kvs) == 1)
		rc = orbit__etcd_kv_parse(json_array_get(kvs, 0), cur);
	else if (!rc && ok)
		rc = -EPROTO; /* compared equal, so the key existed: one txn cannot lose it */
	json_decref(j);
	return rc ? rc : ok;
}

int orbit__etcd_delete_with(orbit_etcd_t *e, const void *key, size_t key_len,
			    const struct orbit_etcd_put *also)
{
	json_t *k, *body, *j, *first, *extra;
	int64_t deleted = 0;
	int ok, rc;

	if (!e || !key || !key_len || !also)
		return -EINVAL;
	k = json_b64(key, key_len);
	extra = put_op(also);
	/* compare: create_revision(key) > 0, i.e. the key exists */
	body = k && extra
		   ? json_pack("{s:[{s:s, s:s, s:O, s:s}], s:[O, {s:{s:O}}]}", "compare", "result",
			       "GREATER", "target", "CREATE", "key", k, "create_revision", "0",
			       "success", extra, "request_delete_range", "key", k)
		   : NULL;
	json_decref(extra);
	json_decref(k);
	rc = txn(e, body, &j, &ok, &first);
	if (rc)
		return rc;
	if (ok) {
		json_t *r = json_array_get(json_object_get(j, "responses"), 1);

		rc = orbit__etcd_json_i64(json_object_get(r, "response_delete_range"), "deleted",
					  &deleted);
	}
	json_decref(j);
	return rc ? rc : (int)deleted;
}

bool orbit__etcd_last_retried(void)
{
	return last_retried;
}

unsigned orbit__etcd_endpoint_count(const orbit_etcd_t *e)
{
	return e->n;
}

const char *orbit__etcd_endpoint(const orbit_etcd_t *e, unsigned i)
{
	return i < e->n ? e->endpoints[i] : NULL;
}

unsigned orbit__etcd_timeout_ms(const orbit_etcd_t *e)
{
	return e->timeout_ms;
}

char *orbit__etcd_b64(const void *p, size_t n)
{
	return b64_encode(p, n);
}

int orbit__etcd_delete_prefix(orbit_etcd_t *e, const void *prefix, size_t prefix_len)
{
	uint8_t end[512];
	json_t *j, *body;
	int64_t deleted = 0;
	size_t n;
	int rc;

	if (!e || !prefix || !prefix_len || prefix_len > sizeof(end))
		return -EINVAL;
	n = orbit__etcd_range_end(prefix, prefix_len, end);
	if (!n)
		return -EINVAL;
	body = json_pack("{s:o, s:o}", "key", json_b64(prefix, prefix_len), "range_end",
			 json_b64(end, n));
	rc = call(e, "/v3/kv/deleterange", body, &j);
	if (rc)
		return rc;
	rc = orbit__etcd_json_i64(j, "deleted", &deleted);
	json_decref(j);
	return rc ? rc : (int)deleted;
}
