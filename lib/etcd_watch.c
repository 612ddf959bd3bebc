// SPDX-License-Identifier: MIT
/*
 * lib/etcd_watch.c: an etcd watch on a prefix through the JSON gateway
 * (lib/etcd_watch.h): one streaming POST /v3/watch at a time, driven by
 * libcurl's multi interface from orbit__etcd_watch_next() (no thread),
 * its answer split into lines, each a JSON object parsed with jansson.
 * Owns the resume rule (start_revision = the last event handed out + 1),
 * the endpoint rotation on failure, the idle and confirmation bounds,
 * and the compaction answer.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include <orbit/error.h>

#include "lib/etcd_watch.h"

#define LINE_MAX_BYTES (64u << 20) /* one answer line larger than this ends the stream */
#define NEXT_ROUNDS 64		   /* bound on the work of one next() call */

struct orbit_etcd_watch {
	orbit_etcd_t *e; /* endpoints and timeout only */
	CURLM *multi;
	CURL *easy;		 /* NULL: no stream */
	struct curl_slist *hdr;	 /* Content-Type, hasleader */
	char *key_b64, *end_b64; /* the range */
	unsigned ep;		 /* endpoint index of the stream, or of the next attempt */
	int64_t next_rev;	 /* the next (re)connect's start_revision */
	bool quiet;		 /* a compaction answer moves on without a lag (a rewind) */
	/* the stream's answer: bytes [off, len) not yet split into lines */
	char *in;
	size_t off, len, cap;
	bool overflow;	 /* a line outgrew LINE_MAX_BYTES: the stream is dropped */
	bool created;	 /* etcd confirmed the watch on this stream */
	bool ended;	 /* the transfer finished (its lines may still wait in @in) */
	bool end_failed; /* ... and the member is to be left for the next */
	uint64_t started_ms, last_byte_ms;
	unsigned idle_ms; /* ORBIT__ETCD_WATCH_IDLE_MS; tests shorten it */
	/*
	 * The liveness probe of a quiet stream: a unary read on the stream's
	 * member (NULL: none under way); its answer is in @probe_buf.
	 */
	CURL *probe;
	char probe_buf[512];
	size_t probe_len;
	uint64_t down_since_ms; /* 0: a confirmed stream; else since when there is none */
	uint64_t retry_at_ms;	/* no attempt before */
	bool down_reported;	/* -ORBIT_EUNAVAILABLE said for this outage */
	json_t *resp;		/* the answer whose events are being handed out */
	size_t idx;
	struct orbit_etcd_watch_counters c;
};

static uint64_t now_ms(void)
{
	return orbit__etcd_now_ms();
}

void orbit__etcd_event_free(struct orbit_etcd_event *ev)
{
	if (!ev)
		return;
	orbit__etcd_kv_free(&ev->kv);
	orbit__etcd_kv_free(&ev->prev);
}

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
	orbit_etcd_watch_t *w = ctx;
	size_t add = size * n;

	if (w->len - w->off + add > LINE_MAX_BYTES) {
		w->overflow = true;
		return 0; /* curl fails the transfer */
	}
	if (w->off && w->len + add > w->cap) { /* move the unread tail to the front first */
		memmove(w->in, w->in + w->off, w->len - w->off);
		w->len -= w->off;
		w->off = 0;
	}
	if (w->len + add + 1 > w->cap) {
		size_t cap = w->cap ? w->cap : 16384;
		char *q;

		while (cap < w->len + add + 1)
			cap *= 2;
		q = realloc(w->in, cap);
		if (!q)
			return 0;
		w->in = q;
		w->cap = cap;
	}
	memcpy(w->in + w->len, p, add);
	w->len += add;
	w->last_byte_ms = now_ms();
	return add;
}

static void probe_end(orbit_etcd_watch_t *w)
{
	if (w->probe) {
		curl_multi_remove_handle(w->multi, w->probe);
		curl_easy_cleanup(w->probe);
		w->probe = NULL;
	}
}

static size_t on_probe(char *p, size_t size, size_t n, void *ctx)
{
	orbit_etcd_watch_t *w = ctx;
	size_t add = size * n, room = sizeof(w->probe_buf) - 1 - w->probe_len;

	memcpy(w->probe_buf + w->probe_len, p, add < room ? add : room);
	w->probe_len += add < room ? add : room;
	return add; /* only the start matters: does it carry a header? */
}

/*
 * A stream quiet for idle_ms (ORBIT__ETCD_WATCH_IDLE_MS): ask its member
 * for the cluster's revision (a serializable read: the member's own
 * answer, within the client's timeout). An answer keeps the stream (a
 * quiet fleet); none drops it for the next member. A reconnect instead
 * would resume from an old revision, which a compaction meanwhile would
 * turn into a lag that lost nothing.
 */
static void probe_start(orbit_etcd_watch_t *w)
{
	char url[256];

	w->probe = curl_easy_init();
	if (!w->probe)
		return; /* no memory: the next idle period tries again */
	w->probe_len = 0;
	snprintf(url, sizeof(url), "%s/v3/kv/range", orbit__etcd_endpoint(w->e, w->ep));
	curl_easy_setopt(w->probe, CURLOPT_URL, url);
	curl_easy_setopt(w->probe, CURLOPT_POSTFIELDS,
			 "{\"key\":\"AA==\",\"count_only\":true,\"serializable\":true}");
	curl_easy_setopt(w->probe, CURLOPT_HTTPHEADER, w->hdr);
	curl_easy_setopt(w->probe, CURLOPT_WRITEFUNCTION, on_probe);
	curl_easy_setopt(w->probe, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(w->probe, CURLOPT_TIMEOUT_MS, (long)orbit__etcd_timeout_ms(w->e));
	curl_easy_setopt(w->probe, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(w->probe, CURLOPT_PROTOCOLS_STR, "http,https");
	if (curl_multi_add_handle(w->multi, w->probe) != CURLM_OK) {
		curl_easy_cleanup(w->probe);
		w->probe = NULL;
	}
}

/* Drop the stream and what it buffered; @failed: leave the member, pause before the next try. */
static void drop(orbit_etcd_watch_t *w, bool failed)
{
	uint64_t now = now_ms();

	probe_end(w);
	if (w->easy) {
		curl_multi_remove_handle(w->multi, w->easy);
		curl_easy_cleanup(w->easy);
		w->easy = NULL;
	}
	w->off = w->len = 0;
	w->overflow = w->created = w->ended = w->end_failed = false;
	if (!w->down_since_ms)
		w->down_since_ms = now;
	if (failed) {
		w->c.failures++;
		w->ep = (w->ep + 1) % orbit__etcd_endpoint_count(w->e);
		w->retry_at_ms = now + ORBIT__ETCD_WATCH_RETRY_MS;
	}
}

static int connect_stream(orbit_etcd_watch_t *w)
{
	char url[256], rev[24], *text;
	json_t *body;

	snprintf(rev, sizeof(rev), "%" PRId64, w->next_rev);
	/* prev_kv: a DELETE then carries the owner and the token it ended */
	body = json_pack("{s:{s:s, s:s, s:s, s:b, s:b}}", "create_request", "key", w->key_b64,
			 "range_end", w->end_b64, "start_revision", rev, "prev_kv", 1,
			 "progress_notify", 1);
	text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	w->easy = text ? curl_easy_init() : NULL;
	if (!w->easy) {
		free(text);
		return -ENOMEM;
	}
	snprintf(url, sizeof(url), "%s/v3/watch", orbit__etcd_endpoint(w->e, w->ep));
	curl_easy_setopt(w->easy, CURLOPT_URL, url);
	curl_easy_setopt(w->easy, CURLOPT_COPYPOSTFIELDS, text);
	curl_easy_setopt(w->easy, CURLOPT_HTTPHEADER, w->hdr);
	curl_easy_setopt(w->easy, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(w->easy, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(w->easy, CURLOPT_CONNECTTIMEOUT_MS, (long)orbit__etcd_timeout_ms(w->e));
	curl_easy_setopt(w->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(w->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	free(text);
	if (curl_multi_add_handle(w->multi, w->easy) != CURLM_OK) {
		curl_easy_cleanup(w->easy);
		w->easy = NULL;
		return -ENOMEM;
	}
	w->started_ms = w->last_byte_ms = now_ms();
	w->c.connects++;
	return 0;
}

int orbit__etcd_watch_open(orbit_etcd_t *e, const void *prefix, size_t prefix_len,
			   int64_t start_rev, orbit_etcd_watch_t **out)
{
	uint8_t end[512];
	orbit_etcd_watch_t *w;
	size_t n;

	if (!e || !prefix || !prefix_len || prefix_len > sizeof(end) || start_rev <= 0 || !out)
		return -EINVAL;
	n = orbit__etcd_range_end(prefix, prefix_len, end);
	if (!n)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->e = e;
	w->next_rev = start_rev;
	w->idle_ms = ORBIT__ETCD_WATCH_IDLE_MS;
	w->down_since_ms = now_ms();
	w->key_b64 = orbit__etcd_b64(prefix, prefix_len);
	w->end_b64 = orbit__etcd_b64(end, n);
	w->multi = curl_multi_init();
	w->hdr = curl_slist_append(NULL, "Content-Type: application/json");
	/* etcd cancels the watch when its member loses the leader (grpc metadata
	 * "hasleader", forwarded by the gateway): a partitioned member's stream
	 * would otherwise stay quiet, not fail */
	if (w->hdr)
		w->hdr = curl_slist_append(w->hdr, "Grpc-Metadata-hasleader: true");
	if (!w->key_b64 || !w->end_b64 || !w->multi || !w->hdr) {
		orbit__etcd_watch_close(w);
		return -ENOMEM;
	}
	*out = w;
	return 0;
}

void orbit__etcd_watch_close(orbit_etcd_watch_t *w)
{
	if (!w)
		return;
	probe_end(w);
	if (w->easy) {
		curl_multi_remove_handle(w->multi, w->easy);
		curl_easy_cleanup(w->easy);
	}
	if (w->multi)
		curl_multi_cleanup(w->multi);
	curl_slist_free_all(w->hdr);
	json_decref(w->resp);
	free(w->key_b64);
	free(w->end_b64);
	free(w->in);
	free(w);
}

void orbit__etcd_watch_restart(orbit_etcd_watch_t *w, int64_t start_rev, bool quiet_compaction)
{
	if (!w || start_rev <= 0)
		return;
	json_decref(w->resp);
	w->resp = NULL;
	drop(w, false);
	w->next_rev = start_rev;
	w->quiet = quiet_compaction;
	w->retry_at_ms = 0;
}

void orbit__etcd_watch_set_idle_ms(orbit_etcd_watch_t *w, unsigned ms)
{
	if (w && ms)
		w->idle_ms = ms;
}

int64_t orbit__etcd_watch_next_rev(const orbit_etcd_watch_t *w)
{
	return w ? w->next_rev : 0;
}

unsigned orbit__etcd_watch_endpoint(const orbit_etcd_watch_t *w)
{
	return w ? w->ep : 0;
}

void orbit__etcd_watch_counters(const orbit_etcd_watch_t *w, struct orbit_etcd_watch_counters *out)
{
	if (out)
		*out = w ? w->c : (struct orbit_etcd_watch_counters){ 0 };
}

/* The rest of this stream is not read: @failed as for drop(). */
static void end_stream(orbit_etcd_watch_t *w, bool failed)
{
	w->ended = true;
	w->end_failed = failed;
	w->off = w->len; /* whatever follows on this stream is not ours any more */
}

/*
 * One answer line: a confirmation, events (kept in w->resp), a progress
 * notification, a cancel (compaction or another reason) or an error.
 * Returns 0, or -ORBIT_ELAGGED for a compaction to report.
 */
static int take_line(orbit_etcd_watch_t *w, const char *p, size_t n)
{
	json_error_t jerr;
	json_t *j = json_loadb(p, n, 0, &jerr), *res, *evs;
	int64_t compact = 0;
	int rc = 0;

	res = j ? json_object_get(j, "result") : NULL;
	if (!json_is_object(res)) {
		end_stream(w, true); /* {"error":...} (no leader...) or not the gateway's */
		json_decref(j);
		return 0;
	}
	if (json_is_true(json_object_get(res, "created"))) {
		w->created = true;
		w->down_since_ms = 0;
		w->down_reported = false;
	}
	if (json_is_true(json_object_get(res, "canceled"))) {
		orbit__etcd_json_i64(res, "compact_revision", &compact);
		if (compact > 0) {
			if (compact > w->next_rev)
				w->next_rev = compact; /* the oldest revision etcd still has */
			if (!w->quiet) {
				w->c.compacted++;
				rc = -ORBIT_ELAGGED;
			}
			w->quiet = false;
			end_stream(w, false);
		} else {
			end_stream(w, true);
		}
		json_decref(j);
		return rc;
	}
	evs = json_object_get(res, "events");
	if (!json_array_size(evs) && w->created && !json_is_true(json_object_get(res, "created"))) {
		int64_t rev = 0;

		/* A progress notification: every event up to its header revision was sent */
		orbit__etcd_json_i64(json_object_get(res, "header"), "revision", &rev);
		if (rev >= w->next_rev)
			w->next_rev = rev + 1;
	}
	if (json_is_array(evs) && json_array_size(evs) > 0) {
		int64_t last = 0;

		/* Events come in revision order and a revision is never split
		 * across answers: resume after the last one of this answer. */
		orbit__etcd_json_i64(
		    json_object_get(json_array_get(evs, json_array_size(evs) - 1), "kv"),
		    "mod_revision", &last);
		if (last >= w->next_rev)
			w->next_rev = last + 1;
		w->quiet = false;
		w->resp = j;
		w->idx = 0;
		return 0;
	}
	json_decref(j);
	return 0;
}

/* The next event of w->resp into *@ev: 1, or 0 when it has none left. */
static int take_event(orbit_etcd_watch_t *w, struct orbit_etcd_event *ev)
{
	json_t *evs = json_object_get(json_object_get(w->resp, "result"), "events");

	while (w->idx < json_array_size(evs)) {
		json_t *x = json_array_get(evs, w->idx++), *t = json_object_get(x, "type");
		json_t *prev = json_object_get(x, "prev_kv");

		memset(ev, 0, sizeof(*ev));
		/* proto3 JSON leaves out the default enum value: no type is PUT */
		ev->type = json_is_string(t) && !strcmp(json_string_value(t), "DELETE")
			       ? ORBIT_ETCD_DELETE
			       : ORBIT_ETCD_PUT;
		if (orbit__etcd_kv_parse(json_object_get(x, "kv"), &ev->kv) ||
		    (prev && orbit__etcd_kv_parse(prev, &ev->prev))) {
			orbit__etcd_event_free(ev);
			w->c.failures++; /* not the gateway's form: skipped */
			continue;
		}
		w->c.events++;
		return 1;
	}
	json_decref(w->resp);
	w->resp = NULL;
	return 0;
}

/* Drive the transfers once; notes the stream's end and the probe's answer. */
static void pump(orbit_etcd_watch_t *w)
{
	CURLMsg *m;
	int running = 0, left = 0;

	curl_multi_perform(w->multi, &running);
	while ((m = curl_multi_info_read(w->multi, &left))) {
		if (m->msg == CURLMSG_DONE && m->easy_handle == w->easy) {
			/* any end of a watch stream is the member's doing: leave it */
			w->ended = true;
			w->end_failed = true;
		} else if (m->msg == CURLMSG_DONE && m->easy_handle == w->probe) {
			long status = 0;
			bool alive = m->data.result == CURLE_OK;

			curl_easy_getinfo(w->probe, CURLINFO_RESPONSE_CODE, &status);
			w->probe_buf[w->probe_len] = '\0';
			alive = alive && status == 200 && strstr(w->probe_buf, "\"header\"");
			probe_end(w);
			if (alive) {
				w->last_byte_ms = now_ms(); /* a quiet fleet: keep the stream */
				w->c.probes_ok++;
			} else {
				w->ended = true; /* the member does not answer: leave it */
				w->end_failed = true;
			}
		}
	}
}

int orbit__etcd_watch_next(orbit_etcd_watch_t *w, struct orbit_etcd_event *ev)
{
	if (!w || !ev)
		return -EINVAL;
	for (int round = 0; round < NEXT_ROUNDS; round++) {
		uint64_t now;
		size_t had;
		char *nl;

		if (w->resp && take_event(w, ev))
			return 1;
		nl = w->len > w->off ? memchr(w->in + w->off, '\n', w->len - w->off) : NULL;
		if (nl) {
			size_t n = (size_t)(nl - (w->in + w->off));
			size_t at = w->off;
			int rc;

			w->off += n + 1;
			rc = take_line(w, w->in + at, n);
			if (rc)
				return rc;
			continue;
		}
		if (w->easy && w->ended && w->len > w->off) {
			/* the last line of a finished stream may lack its newline (an error) */
			size_t at = w->off, n = w->len - w->off;
			int rc;

			w->off = w->len;
			rc = take_line(w, w->in + at, n);
			if (rc)
				return rc;
			continue;
		}
		now = now_ms();
		if (w->easy && (w->ended || w->overflow)) {
			drop(w, w->end_failed || w->overflow);
			continue;
		}
		if (w->easy && !w->created && now - w->started_ms > orbit__etcd_timeout_ms(w->e)) {
			drop(w,
			     true); /* connected, or not, but never confirmed: a stopped member */
			continue;
		}
		if (w->easy && w->created && !w->probe && now - w->last_byte_ms > w->idle_ms)
			probe_start(w); /* answered or not within the timeout: pump() says */
		if (!w->easy) {
			int rc;

			if (now < w->retry_at_ms)
				break;
			rc = connect_stream(w);
			if (rc)
				return rc;
		}
		had = w->len;
		pump(w);
		if (w->len == had && !w->ended)
			break; /* nothing new on the wire */
	}
	if (w->down_since_ms && !w->down_reported &&
	    now_ms() - w->down_since_ms > orbit__etcd_timeout_ms(w->e)) {
		w->down_reported = true;
		return -ORBIT_EUNAVAILABLE;
	}
	return 0;
}
