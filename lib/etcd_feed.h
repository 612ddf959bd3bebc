/* SPDX-License-Identifier: MIT */
/*
 * lib/etcd_feed.h: orbit-lock's transition feed on etcd (internal): an
 * etcd watch on the fleet's key prefix (lib/etcd_watch.h) turned into the
 * transitions the SHM ring carries (struct orbit_transition_event), for
 * the public reader of orbit_lock_reader_open() (agent/fleet.c). What the
 * feed can and cannot show: doc/orbit-lock.md, "The transition feed on
 * etcd". Built only with --with-etcd.
 */
#ifndef ORBIT_LIB_ETCD_FEED_H
#define ORBIT_LIB_ETCD_FEED_H

#include <stdint.h>

#include <orbit/fleet.h>
#include <orbit/lock.h>

struct orbit__etcd_feed;

/*
 * orbit__etcd_feed_open - a feed of @lock's keys (an etcd handle, which
 * must outlive it) after the current revision: one bounded read of the
 * cluster's revision (the handle's call_timeout_ms), then the watch
 * starts at the revision after it.
 * Returns 0, -EINVAL (not an etcd handle), -ENOMEM, -ORBIT_EUNAVAILABLE,
 * -EPROTO.
 */
int orbit__etcd_feed_open(orbit_lock_t *lock, struct orbit__etcd_feed **out);

/*
 * orbit__etcd_feed_next - the next transition, without blocking.
 * Returns 0 (@ev filled), -EAGAIN (nothing now), -ORBIT_ELAGGED (a
 * compacted revision: transitions were lost, re-read the keys),
 * -ORBIT_EUNAVAILABLE (once per outage longer than the call bound; the
 * feed goes on trying, and misses nothing once back), -ORBIT_ECORRUPT (a
 * key under the prefix this backend did not write: skipped, counted),
 * -ENOMEM.
 */
int orbit__etcd_feed_next(struct orbit__etcd_feed *f, struct orbit_transition_event *ev);

/* Back to the oldest revision etcd keeps (after its last compaction). */
void orbit__etcd_feed_rewind(struct orbit__etcd_feed *f);
void orbit__etcd_feed_counters(const struct orbit__etcd_feed *f, uint64_t *read, uint64_t *lagged,
			       uint64_t *corrupt);
/* The watch's endpoint index (tests: which member to kill). */
unsigned orbit__etcd_feed_endpoint(const struct orbit__etcd_feed *f);
void orbit__etcd_feed_close(struct orbit__etcd_feed *f);

#endif /* ORBIT_LIB_ETCD_FEED_H */
