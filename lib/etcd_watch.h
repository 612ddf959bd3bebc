/* SPDX-License-Identifier: MIT */
/*
 * lib/etcd_watch.h: an etcd v3 watch on a key prefix through the JSON
 * gateway (POST /v3/watch: a streaming answer, one JSON object a line),
 * the transport of orbit-lock's transition feed on etcd (lib/etcd_feed.c).
 * Like lib/etcd_client.h it knows nothing of locks: it hands out etcd's
 * events (PUT or DELETE, the key-value and the one before it) in
 * revision order, each once, across reconnects. Internal; built only with
 * --with-etcd.
 *
 * No thread: orbit__etcd_watch_next() drives the transfer (libcurl's
 * multi interface) without blocking, so the caller's loop sets the pace;
 * events the caller does not take stay in etcd (TCP backpressure), never
 * in an unbounded buffer here.
 *
 * Reconnects. The stream ends when the member it talks to dies, loses its
 * leader (the request asks etcd to cancel it then: "hasleader"), cancels
 * it, or stays silent for ORBIT__ETCD_WATCH_IDLE_MS and then does not
 * answer a read within the client's timeout (a stopped member keeps a
 * connection open; a member that answers keeps its quiet stream). The
 * watch then starts again from the revision after the last event it
 * delivered (start_revision = last + 1; a progress notification moves
 * that on), on the next endpoint when the member failed; a member that
 * does not confirm the watch within the client's timeout is left for the
 * next. So a reconnect neither loses nor repeats an event.
 *
 * Compaction: a start revision etcd no longer keeps is answered with the
 * compact revision; the watch reports that once (-ORBIT_ELAGGED: the
 * events between were lost) and goes on from the compact revision.
 *
 * Context: one thread at a time per watch; the client it was opened from
 * must outlive it (its endpoints and timeout are read, its connection is
 * not used).
 */
#ifndef ORBIT_LIB_ETCD_WATCH_H
#define ORBIT_LIB_ETCD_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/etcd_client.h"

/* A stream silent this long gets a liveness probe of its member (a read within the timeout). */
#define ORBIT__ETCD_WATCH_IDLE_MS 10000u
/* The pause after a failed attempt before the next one (every endpoint may be down). */
#define ORBIT__ETCD_WATCH_RETRY_MS 100u

typedef struct orbit_etcd_watch orbit_etcd_watch_t;

enum orbit_etcd_event_type {
	ORBIT_ETCD_PUT = 1,
	ORBIT_ETCD_DELETE = 2,
};

/* One event (process-local copies; free with orbit__etcd_event_free()). */
struct orbit_etcd_event {
	enum orbit_etcd_event_type type;
	struct orbit_etcd_kv kv;   /* a DELETE's has the key and mod_revision only */
	struct orbit_etcd_kv prev; /* the key before the event; create_revision 0: none */
};

void orbit__etcd_event_free(struct orbit_etcd_event *ev);

/* What a watch did so far (the caller's thread only). */
struct orbit_etcd_watch_counters {
	uint64_t events;    /* events handed out */
	uint64_t connects;  /* streams started (the first included) */
	uint64_t compacted; /* compaction answers reported as a lag */
	uint64_t failures;  /* attempts or streams that ended in an error */
	uint64_t probes_ok; /* quiet streams kept: their member answered the probe */
};

/*
 * orbit__etcd_watch_open - a watch on every key beginning with @prefix,
 * from @start_rev (> 0), on @e's endpoints (the first one first). Nothing
 * is sent before the first orbit__etcd_watch_next().
 * Returns 0, -EINVAL (an empty or all-0xff prefix, start_rev <= 0),
 * -ENOMEM.
 */
int orbit__etcd_watch_open(orbit_etcd_t *e, const void *prefix, size_t prefix_len,
			   int64_t start_rev, orbit_etcd_watch_t **out);

/*
 * orbit__etcd_watch_next - the next event into *@ev, without blocking:
 * reads what the connection has, (re)connects when due.
 * Context: the watch's thread; syscalls (socket reads, connect, poll with
 * a zero timeout), allocation; never sleeps.
 * Returns 1 (@ev filled), 0 (nothing now), -ORBIT_ELAGGED (compacted:
 * events were lost; *@ev untouched; the watch goes on from the compact
 * revision), -ORBIT_EUNAVAILABLE (once per outage: no stream for longer
 * than the client's timeout; it goes on trying), -ENOMEM.
 */
int orbit__etcd_watch_next(orbit_etcd_watch_t *w, struct orbit_etcd_event *ev);

/*
 * orbit__etcd_watch_restart - drop the stream and whatever it buffered
 * and start again at @start_rev; with @quiet_compaction a compaction
 * answer then moves on to the compact revision without a lag (a rewind:
 * "what etcd still keeps").
 */
void orbit__etcd_watch_restart(orbit_etcd_watch_t *w, int64_t start_rev, bool quiet_compaction);

/* Tests: the silence before a liveness probe (0: unchanged). */
void orbit__etcd_watch_set_idle_ms(orbit_etcd_watch_t *w, unsigned ms);
/* The revision the next (re)connect starts from: the last event handed out + 1. */
int64_t orbit__etcd_watch_next_rev(const orbit_etcd_watch_t *w);
/* The endpoint index the stream uses (or tries next). */
unsigned orbit__etcd_watch_endpoint(const orbit_etcd_watch_t *w);
void orbit__etcd_watch_counters(const orbit_etcd_watch_t *w, struct orbit_etcd_watch_counters *out);
void orbit__etcd_watch_close(orbit_etcd_watch_t *w);

#endif /* ORBIT_LIB_ETCD_WATCH_H */
