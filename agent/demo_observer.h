/* SPDX-License-Identifier: MIT */
/*
 * agent/demo_observer.h: the bank demo's observer view (agent/demo_observer.c):
 * a local view of the account locks built only from the transition ring
 * (who holds which account, with which token and deadline), and the
 * checks an observer makes on it independently of the workers: no two
 * holders of one account lock overlap, and the tokens of one account only
 * increase. An observer process (agent/demo_bank.c) feeds it the frames it
 * reads and, after a lag or a repair, the lock table.
 *
 * Order. The ring is read lane by lane, round-robin, so frames of two
 * writers come out of orbit_transition_reader_next() in any order. The
 * view therefore collects frames in a batch (demo_view_add()) until the
 * reader answers -EAGAIN and applies the batch in state_revision order
 * (demo_view_flush()). That order is complete per batch: revisions are
 * taken under the table's serializer and a frame is published (its lane
 * head stored, release) before the serializer is let go, so a frame of
 * revision r is visible to a reader that saw one of revision r + 1; and
 * -EAGAIN is only answered after one pass over every lane with nothing
 * left, which comes after the reader saw the newest frame of the batch.
 *
 * What counts as an overlap. A holder's tenure runs from its ACQUIRE
 * until its own RELEASE, the RECLAIM of its expired entry, or its
 * deadline. A FORCE_RELEASE ends the entry in the table, not the holder's
 * belief that it holds the lock: its tenure runs on to its deadline. An
 * ACQUIRE of another token while a tenure runs (its deadline after the
 * new frame's publish_ns) is an overlap: the table grants a key only when
 * its entry's deadline is at or before the lock's clock reading, which is
 * taken before the frame's publish_ns. A RECLAIM of an entry whose
 * deadline is after the frame's publish_ns is an early expiry. A token is
 * a regression when an ACQUIRE's is not above every token the key had,
 * or a RENEW's, RELEASE's or RECLAIM's is below it.
 *
 * Resync. After a lag (frames lost), a REPAIR (frames of a mutator that
 * died inside the serializer may describe changes never committed), a
 * full batch or a start, the holders are rebuilt from the lock table:
 * demo_view_resync_begin(revision before the scan), one
 * demo_view_resync_entry() per entry, demo_view_resync_end(revision
 * after). Frames at or below the first revision are in the scan and are
 * skipped; frames up to the second may or may not be, and are applied
 * unchecked; later ones are checked. Token high-water marks are kept
 * across a resync (raised by the scan).
 *
 * A frame is published before its change commits, so one change (the
 * serializer admits one) may be in flight while the table is scanned: its
 * frame (revision before + 1) is read but the scan shows the key as it
 * was. Two rules keep that from looking like a violation. A key whose
 * last applied frame is newer than the scan's start keeps what the frame
 * said. And when the reader started after that frame (a restarted
 * observer) or lost it in a lag, nobody can tell whether it released a
 * scanned holder: until the frame of revision before + 1 has been read,
 * an ACQUIRE over a holder known only from the scan is counted as
 * unjudged, not as an overlap.
 *
 * A REPAIR carries the revision the dead mutator may have published its
 * false edge with (the repair burns it), and is published before the
 * repair's own bump: a scan that follows it covers every frame up to the
 * REPAIR's revision, whatever revision it read, so those are skipped.
 *
 * Context: a view belongs to one thread (the observer's); no call blocks,
 * takes a lock or makes a syscall; demo_view_create() allocates.
 */
#ifndef ORBIT_AGENT_DEMO_OBSERVER_H
#define ORBIT_AGENT_DEMO_OBSERVER_H

#include <stdint.h>

#include <orbit/fleet.h>
#include <orbit/lock.h>

typedef struct demo_view demo_view_t;

/* Frames a batch holds; a full batch is applied and followed by a resync. */
#define DEMO_VIEW_BATCH_MAX 32768u

/* What the view counted (every figure only grows). */
struct demo_view_counts {
	uint64_t frames;       /* account-lock frames applied (checked or not) */
	uint64_t other_frames; /* frames of other namespaces (hosting leases): ignored */
	uint64_t acquired, renewed, released, expired, forced;
	uint64_t overlaps;	 /* an ACQUIRE while another tenure ran */
	uint64_t early_expiries; /* a RECLAIM before the entry's deadline */
	uint64_t regressions;	 /* a token that did not increase */
	uint64_t mismatches;	 /* RENEW/RELEASE of a tenure the view did not hold
				  (not a violation: what the checks skip) */
	uint64_t resyncs;	 /* holders rebuilt from the table */
	uint64_t skipped;	 /* frames already in a resync's scan */
	uint64_t unchecked;	 /* frames applied unchecked right after a resync */
	uint64_t unjudged;	 /* overlaps with a scanned holder left unjudged (above) */
};

/* The first violation the view found, for the report (kind 0: none yet). */
struct demo_view_violation {
	enum {
		DEMO_VIEW_OK = 0,
		DEMO_VIEW_OVERLAP,
		DEMO_VIEW_EARLY_EXPIRY,
		DEMO_VIEW_REGRESSION
	} kind;
	uint32_t account;
	/* the frame that showed it */
	uint32_t type, writer_pid, lane;
	uint64_t token, revision, publish_ns;
	/* what the view held for the account then (its last frame) */
	uint64_t held_token, held_deadline_ns, max_token;
	uint32_t held_writer_pid, held_lane, held_type;
	int held_from_scan;	/* the holder came from a scan, no frame of the key since */
	uint64_t scan_revision; /* the last scan's revision before */
	int next_seen;		/* its revision + 1 had been read */
	uint64_t held_revision;
	int held_forced; /* the holder was force-released: its tenure ran on */
};

/*
 * demo_view_create - an empty view of @accounts account locks of
 * namespace @ns (label: the account number in decimal); copies @ns.
 * Returns 0, -EINVAL (NULL, no accounts), -ENOMEM.
 */
int demo_view_create(const char *ns, uint32_t accounts, demo_view_t **out);
void demo_view_destroy(demo_view_t *v);

/*
 * demo_view_add - put one frame read from the ring into the batch (frames
 * of other keys are only counted).
 * Returns 0; 1 when the batch is now full: flush it and resync.
 */
int demo_view_add(demo_view_t *v, const struct orbit_transition_event *ev);

/* Called by demo_view_flush() when the batch holds a REPAIR. Returns 0 or an error. */
typedef int (*demo_view_resync_fn)(demo_view_t *v, void *ctx);

/*
 * demo_view_flush - apply the batch in state_revision order and empty it.
 * At a REPAIR frame the frames before it are applied, then @resync is
 * called (NULL: the rest of the batch is applied unchecked), then the rest.
 * Returns the number of frames applied, or @resync's negative error.
 */
int demo_view_flush(demo_view_t *v, demo_view_resync_fn resync, void *ctx);

/*
 * demo_view_flush_unchecked - apply the batch in state_revision order
 * without judging it: after a lag, or with a full batch, the batch may
 * lack frames of lower revisions that the reader had not reached. The
 * caller resyncs next; checks stay off until then.
 * Returns the number of frames applied.
 */
int demo_view_flush_unchecked(demo_view_t *v);

/* Resync: see the header comment. @e: an entry of orbit_lock_foreach(). */
void demo_view_resync_begin(demo_view_t *v, uint64_t revision_before);
void demo_view_resync_entry(demo_view_t *v, const struct orbit_lock_entry *e);
void demo_view_resync_end(demo_view_t *v, uint64_t revision_after);

/*
 * demo_view_holder - the holder of @account in the view: 1 (*@token and
 * *@deadline_ns set; either may be NULL), 0 (free), -EINVAL (out of range).
 */
int demo_view_holder(const demo_view_t *v, uint32_t account, uint64_t *token,
		     uint64_t *deadline_ns);

/* The account of a lock key of the view's namespace: 0 (*@account set) or -ENOENT. */
int demo_view_account(const demo_view_t *v, const uint8_t *ns, uint32_t ns_len,
		      const uint8_t *label, uint32_t label_len, uint32_t *account);

/* The first violation found (kind DEMO_VIEW_OK: none). */
void demo_view_first_violation(const demo_view_t *v, struct demo_view_violation *out);

/* The counts so far. */
void demo_view_counts(const demo_view_t *v, struct demo_view_counts *out);

#endif /* ORBIT_AGENT_DEMO_OBSERVER_H */
