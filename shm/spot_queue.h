/* SPDX-License-Identifier: MIT */
/*
 * shm/spot_queue.h: the cross-process Spot queue (internal), segment kind
 * 232, one SHM object per Spot "/orbit.<fleet>.spotq.<spot>". Any fleet
 * member submits records to a Spot by name; the one process hosting the
 * Spot takes them in order, runs them, and completes them. This is the SHM
 * layer only: the hosting lease, the agent's drain into the Spot serial
 * executor and the public client API are built on it (doc/spot-queues.md).
 * Nothing here starts a thread.
 *
 * Lanes: an application lane (Spot, Actor and timer records) and a
 * lifecycle lane, independent: a full application lane never refuses a
 * lifecycle record. Each lane has an item cap and a byte cap (payload
 * bytes), fixed at creation and part of the layout fingerprint.
 *
 * Positions: every lane position is a free-running counter modulo
 * W = cap * floor(2^32 / cap) (W >= 2 * cap, a multiple of cap), so slot
 * = pos % items and payload offset = bytes % byte_cap stay continuous
 * across the wrap. An ABA on a producer's or host's CAS needs 2^32 / cap
 * laps of the lane while that caller is preempted (documented limit).
 *
 * Admission (07 §6.3) is ONE CAS per submission: the CAS of the slot's
 * commit word from its previous lap to CLAIMED(pos, row, gen) at the
 * current tail. The capacity check (count and bytes) was made against that
 * exact tail: the tail cannot move past pos before the slot is claimed (a
 * tail advance needs the slot CLAIMED, see spot_queue_tail.c), so
 * two producers never both pass a full lane, and the lane position is the
 * sequence number. A head read before the tail is only more conservative:
 * a producer decides room on the head it read last while that shows room
 * and is younger than 1 ms (less than a lap of positions old), and makes
 * every "full" or "corrupt" verdict on a fresh head. Whoever sees
 * slot[tail] claimed advances the tail (helping, DPDK/MS-queue style), so
 * a producer killed right after its claim never stalls the tail.
 *
 * Words (all _Atomic uint64_t, lock-free asserted):
 *   tail, head     idx (32 bits, mod Wi) | bytes (32 bits, mod Wb) << 32
 *   commit (slot)  pos 32 | state 3 << 32 | producer row 10 << 35 |
 *                  member generation low 19 bits << 45
 *   ack (per slot, in the lane's ack array since layout 3)
 *                  pos 32 | astate 3 << 32 | redelivered 1 << 35 |
 *                  host generation low 28 bits << 36; astate NONE, TAKEN,
 *                  DONE (an aborted or corrupt record resolved by take),
 *                  FREED (completed: complete() goes TAKEN -> FREED in one
 *                  CAS; or DONE passed by the head advance), REDELIVER
 *   resv (slot)    payload offset (mod Wb) | reserved length << 32
 *
 * Host fencing: a takeover for epoch E (> the stored epoch, 64-bit
 * fencing token of the hosting lease) bumps the queue's host generation
 * g (a 64-bit counter, +1 per takeover) and rewrites the low 28 bits of g
 * into every ack word of the queue. Every take and complete is a CAS on an
 * ack word whose expected value carries the caller's generation (complete
 * writes FREED); a head advance CASes each DONE in its run to FREED
 * (fenced), then moves the head over the whole run of FREED words with one
 * CAS (a step whose value the fenced FREED words already fixed, so a late
 * duplicate from a paused host writes what the current host writes anyway).
 * A host paused across one takeover therefore fails every CAS. Who is
 * fenced is decided by the 64-bit host_gen only (each call compares it
 * first, and again on any word with another generation): a word with a
 * foreign generation while host_gen is ours is an older host's or corrupt,
 * and is repaired (counted), never taken for a fence. An old host's CAS can
 * only succeed if the words carry its own 28 bits again, i.e. after 2^28
 * takeovers of this one Spot while it was paused inside one call.
 *
 * Segment layout (offsets from the segment start; who writes / reads /
 * what a crash leaves):
 *   0     struct orbit_seg_header     segment.h
 *   128   struct orbit_spotq_shm      config: creator only, before READY.
 *                                     host line: takeover (seq_cst CAS on
 *                                     host_gen and epoch; display fields
 *                                     relaxed). A taker killed between its
 *                                     epoch CAS and its gen CAS leaves a
 *                                     higher epoch and no new generation:
 *                                     the next taker needs a still higher
 *                                     epoch (tokens only grow), nothing else.
 *                                     Two doorbells (records, room).
 *   lanes_off  struct orbit_spotq_lane_shm[2], 3 cache lines each:
 *          tail     producers (slot CAS then tail CAS, helpers too); a
 *                   producer killed between its slot CAS and tail CAS
 *                   leaves a claimed slot at the tail: the next producer or
 *                   the host advances the tail for it.
 *          head     host (and helpers of a FREED slot); never moves back.
 *          counters host, relaxed.
 *   rows_off   struct orbit_spotq_row[producer_rows] (one per member row):
 *          the producer of that member row (owner, claim, seq, counters).
 *          claim[l] = pos | len << 32 | RETIRED << 63: stored (release)
 *          before the claim CAS, RETIRED (release) as the producer's last
 *          store for that record; the host reuses an ABORTED record's slot
 *          and bytes only after RETIRED, a later claim, or proven death.
 *          A producer killed leaves its row: the next tenure of that member
 *          row takes it over (new generation: sequence restarts at 1).
 *   slots_off[l] struct orbit_spotq_slot[items[l]], two cache lines each:
 *          commit   producer: claim (CAS), commit (release CAS); host:
 *                   abort (CAS CLAIMED -> ABORTED). Killed after the claim
 *                   or mid-copy: CLAIMED stays; the host proves the member
 *                   dead (kernel OFD lock, shm/members.h) and aborts it at
 *                   once, or aborts it after unblock_ms when the member is
 *                   alive but stopped; the late commit then fails
 *                   (-ECANCELED). Never COMMITTED before every byte is.
 *          meta     producer, between claim and commit (plain stores, made
 *                   visible by the commit's release); covered by a checksum
 *                   the host verifies on its own copy. The target (line 2)
 *                   is written, summed and read only for Actor (its 8-byte
 *                   id) and timer records (the 64-byte name field): a Spot
 *                   or lifecycle record leaves the line as it was.
 *          resv     whoever advances the tail past the slot (identical
 *                   values from every helper: offset from the tail word,
 *                   length from the claimer's row).
 *          The host writes nothing here but the abort CAS: it only reads
 *          the slot lines (layout 2 kept the ack word in line 1).
 *   acks_off[l] _Atomic uint64_t[items[l]] (rounded up to 64 bytes): the
 *          ack word of each slot, host only (fenced CAS, see above), 8 to
 *          a cache line that no producer touches. A host killed mid-call
 *          leaves each word as its last CAS made it: TAKEN (redelivered by
 *          the next host), FREED (the next host's head advance passes it)
 *          or DONE (the next host frees it as this one would have).
 *   data_off[l] payload bytes of lane l, byte_cap[l] (rounded up to 64),
 *          a byte ring: a record's payload may wrap. Producer writes
 *          between claim and commit; host copies after commit.
 *
 * Delivery: a record is delivered (take) when COMMITTED and its ack shows
 * no completion; a record completed by any host is never delivered again;
 * a record taken but not completed when a newer host takes over is
 * delivered again with rec.redelivered set (dedupe by member row, member
 * generation and producer_seq against the set of applied-but-uncompleted
 * keys, not a watermark: completions come out of order; see
 * doc/spot-queues.md). Aborted and corrupt records are counted and never
 * delivered; their reservation comes back like a completed one (an aborted
 * one only once its producer retired or died). Each record's payload
 * locates itself inside [head, tail) bytes: one bad length costs one record.
 */
#ifndef ORBIT_SHM_SPOT_QUEUE_H
#define ORBIT_SHM_SPOT_QUEUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shm/doorbell.h"
#include "shm/members.h"
#include "shm/segment.h"

/*
 * 4: the record checksum is wyhash's 128-bit multiply fold (record_sum()
 * in spot_queue_internal.h), 8 multiplies for a 64-byte Spot record instead of 17;
 * 3: the host's ack words in an array of their own (acks_off), off the
 * producer-written slot lines; 2: the checksum covers only a record's own
 * target bytes (four chains). A peer of another version is refused with
 * -ORBIT_EVERSION (orbit__seg_open(); @why names both versions).
 */
#define ORBIT_SPOTQ_LAYOUT_VERSION 5u
#define ORBIT_SPOTQ_NAME_MAX 40u	/* Spot name: [A-Za-z0-9_.-]{1,40} */
#define ORBIT_SPOTQ_SEG_PREFIX "spotq." /* segment "/orbit.<fleet>.spotq.<spot>" */
#define ORBIT_SPOTQ_TIMER_NAME_MAX 63u	/* = ORBIT_TIMER_NAME_MAX of the executors */

/* Defaults (doc/spot-queues.md: 64 Spots at these fit beside the fleet's other segments). */
#define ORBIT_SPOTQ_DEFAULT_APP_ITEMS 1024u
#define ORBIT_SPOTQ_DEFAULT_APP_BYTES (256u * 1024u)
#define ORBIT_SPOTQ_DEFAULT_LIFECYCLE_ITEMS 128u
#define ORBIT_SPOTQ_DEFAULT_LIFECYCLE_BYTES (32u * 1024u)
#define ORBIT_SPOTQ_DEFAULT_PRODUCER_ROWS 64u /* = ORBIT_MEMBERS_DEFAULT_ROWS */
#define ORBIT_SPOTQ_DEFAULT_UNBLOCK_MS 100u

/* Limits. */
#define ORBIT_SPOTQ_MIN_ITEMS 1u
#define ORBIT_SPOTQ_MAX_ITEMS 65536u
#define ORBIT_SPOTQ_MIN_BYTES 64u
#define ORBIT_SPOTQ_MAX_BYTES (64u * 1024u * 1024u)
#define ORBIT_SPOTQ_MAX_PRODUCER_ROWS 1024u /* 10 bits in the commit word */
#define ORBIT_SPOTQ_MAX_UNBLOCK_MS 60000u

enum orbit_spotq_lane {
	ORBIT_SPOTQ_APP = 0,
	ORBIT_SPOTQ_LIFECYCLE = 1,
	ORBIT_SPOTQ_LANES = 2,
};

/* Entry kinds: the executor entry point a record goes to (07 §3). */
enum orbit_spotq_kind {
	ORBIT_SPOTQ_KIND_SPOT = 1,	/* execute_spot, application lane */
	ORBIT_SPOTQ_KIND_ACTOR = 2,	/* execute_actor(actor_id), application lane */
	ORBIT_SPOTQ_KIND_TIMER = 3,	/* execute_timer(timer_name), application lane */
	ORBIT_SPOTQ_KIND_LIFECYCLE = 4, /* execute_lifecycle, lifecycle lane */
};

/* Body after the segment header (struct at segment offset 128). */
struct orbit_spotq_shm {
	/* config: creator, before READY; validated against the fingerprint */
	char spot[48];	   /* NUL-terminated Spot name */
	uint32_t items[2]; /* item cap per lane */
	uint32_t bytes[2]; /* byte cap per lane */
	uint32_t producer_rows;
	uint32_t unblock_ms; /* bound for an alive producer stopped mid-record */
	uint32_t slot_bytes; /* sizeof(struct orbit_spotq_slot) */
	uint32_t row_bytes;  /* sizeof(struct orbit_spotq_row) */
	uint64_t lanes_off;
	uint64_t rows_off;
	uint64_t slots_off[2];
	uint64_t data_off[2];
	uint64_t acks_off[2]; /* layout 3: the host's ack words, apart from the slots */
	uint8_t reserved0[48];
	/* host line (offset 192) */
	_Atomic uint64_t host_gen;  /* +1 per takeover (SQ-T2) */
	_Atomic uint64_t epoch;	    /* highest epoch that took over (SQ-T1) */
	_Atomic uint64_t takeovers; /* successful takeovers (relaxed) */
	_Atomic uint32_t host_row;  /* display: member row of the host, or UINT32_MAX */
	_Atomic uint32_t host_member_gen;
	_Atomic uint32_t host_pid;
	uint32_t reserved1;
	uint8_t reserved2[24];
	struct orbit_doorbell rec_db;  /* producers ring when the host sleeps */
	struct orbit_doorbell room_db; /* the host rings when a producer waits for room */
};
_Static_assert(sizeof(struct orbit_spotq_shm) == 384, "spotq shm size");

struct orbit_spotq_lane_shm {
	_Atomic uint64_t tail; /* producers: idx | bytes << 32 */
	uint8_t pad0[56];
	_Atomic uint64_t head; /* host: idx | bytes << 32 */
	uint8_t pad1[56];
	_Atomic uint64_t aborted; /* host counters (relaxed) */
	_Atomic uint64_t redelivered;
	_Atomic uint64_t corrupt;
	_Atomic uint64_t completed;
	uint8_t pad2[32];
};
_Static_assert(sizeof(struct orbit_spotq_lane_shm) == 192, "spotq lane size");

/* One per member row: that member's producer. */
struct orbit_spotq_row {
	_Atomic uint64_t owner;	   /* member generation << 32 | 1 while a handle is open */
	_Atomic uint64_t claim[2]; /* per lane: pos | len << 32 of the last claim (helpers) */
	_Atomic uint64_t seq;	   /* last producer sequence issued in this tenure */
	/* counters: the row's producer alone writes them (relaxed load + store,
	 * no RMW); a second writer (a tenure that left the directory with its
	 * producer still open) could lose a count, never anything else */
	_Atomic uint64_t accepted[2];
	_Atomic uint64_t rejected_count[2]; /* -EAGAIN: lane full by count */
	_Atomic uint64_t rejected_bytes[2]; /* -EAGAIN: lane full by bytes */
	_Atomic uint32_t pid;		    /* display */
	uint32_t reserved0;
	uint8_t reserved[40];
};
_Static_assert(sizeof(struct orbit_spotq_row) == 128, "spotq row size");

/*
 * Two cache lines: words and meta, then the target (actor id or timer
 * name). Written by producers (and the host's abort CAS on commit): the
 * host only reads them, so a slot's lines move to the host CPU in shared
 * state and come back to the next lap's producer without a write-back
 * (layout 2 kept the host's ack word here: every take and complete pulled
 * the line over exclusively, and the next claim pulled it back).
 */
struct orbit_spotq_slot {
	_Atomic uint64_t commit; /* producer claim/commit, host abort */
	uint64_t unused0;	 /* layout 2's ack word; zero (the acks are at acks_off) */
	_Atomic uint64_t resv;	 /* tail advancers (identical values) */
	uint64_t checksum;	 /* producer: over pos, meta, target and payload */
	uint64_t producer_seq;
	/*
	 * CLOCK_MONOTONIC at submit: exact with bit 0 set, or the coarse
	 * clock's last tick with bit 0 clear (a sample is exact: stamp_of())
	 */
	uint64_t submit_ns;
	uint32_t kind; /* enum orbit_spotq_kind */
	uint32_t payload_len;
	uint32_t member_row;
	uint32_t member_gen;
	union {
		uint64_t actor_id;
		char timer_name[ORBIT_SPOTQ_TIMER_NAME_MAX + 1];
	} target;
};
_Static_assert(sizeof(struct orbit_spotq_slot) == 128, "spotq slot size");

/* A record taken by the host (process-local copy, validated). */
struct orbit_spotq_rec {
	uint32_t lane; /* enum orbit_spotq_lane */
	uint32_t kind; /* enum orbit_spotq_kind */
	uint32_t pos;  /* lane position: pass to orbit__spotq_complete() */
	uint32_t payload_len;
	uint32_t member_row;   /* producer's member row */
	uint32_t member_gen;   /* producer's member generation (tenure) */
	uint64_t producer_seq; /* per producer tenure, from 1 */
	uint64_t submit_ns;    /* CLOCK_MONOTONIC at submit */
	uint64_t host_epoch;   /* the epoch of the host that took it */
	uint64_t actor_id;     /* ACTOR records */
	bool redelivered;      /* taken by an older host, not completed */
	bool submit_exact;     /* submit_ns read exactly, else the coarse clock's last tick */
	char timer_name[ORBIT_SPOTQ_TIMER_NAME_MAX + 1]; /* TIMER records */
	const void *payload; /* inside the caller's buffer of orbit__spotq_take() */
};

/*
 * Options: caller-filled, `size` first, read with the copy_struct_from_user()
 * rule (a smaller struct is zero-extended; a larger one with a non-zero
 * unknown tail is -E2BIG). Zero means the default everywhere.
 */
struct orbit_spotq_options {
	size_t size;	    /* sizeof(); read by base/options.c's rule (ORBIT__OPTS_COPY) */
	uint32_t app_items; /* 0: ORBIT_SPOTQ_DEFAULT_APP_ITEMS */
	uint32_t app_bytes;
	uint32_t lifecycle_items;
	uint32_t lifecycle_bytes;
	uint32_t producer_rows; /* >= the member directory's rows */
	uint32_t unblock_ms;	/* used at creation only (stored in the segment) */
	uint32_t how;		/* enum orbit_seg_open_mode; 0: ORBIT_SEG_OPEN */
	bool readonly;
	uint32_t mode; /* as struct orbit_seg_opts (0600; 0640/0660 for a group) */
	uint32_t gid;  /* as struct orbit_seg_opts (0: getegid()) */
	int init_timeout_ms;
	bool adopt_caps; /* with how = ORBIT_SEG_OPEN: use the caps stored in the segment
			    (readers such as orbitctl that do not know them) */
	char *why;	 /* optional: a message naming the Spot and the value */
	size_t why_len;
};

typedef struct orbit_spotq orbit_spotq_t;
typedef struct orbit_spotq_producer orbit_spotq_producer_t;
typedef struct orbit_spotq_host orbit_spotq_host_t;

/* Fill @o with the defaults (size set, everything else zero = default). */
void orbit__spotq_options_init(struct orbit_spotq_options *o);

/*
 * orbit__spotq_open - open (or create) the queue segment of Spot @spot.
 * Context: any thread; syscalls (shm_open, fstat, flock, ftruncate, mmap);
 * allocates. Returns 0, or: -EINVAL (bad fleet or Spot name, a cap or
 * option out of range, readonly with create), -E2BIG (options struct with
 * an unknown non-zero tail), -ENOMEM, -ORBIT_EFINGERPRINT (the segment has
 * other caps or layout: @o->why names the Spot, the field, the value found
 * and the value asked), -ORBIT_ETRUNCATED (shorter than its header says),
 * -ORBIT_ESIZE (sizes disagree), -ORBIT_ECORRUPT (config words inconsistent
 * with the fingerprint), or any code of orbit__seg_open (-ENOENT,
 * -ORBIT_ENOTREG, -ORBIT_EOWNER, -ORBIT_EMODE, -ORBIT_EMAGIC, -ORBIT_EKIND,
 * -ENOSPC, ...), whose checks this open inherits.
 * With @o->adopt_caps (only with ORBIT_SEG_OPEN, else -EINVAL) the caps are
 * read from the segment first (descriptor checked: regular file, owner and
 * mode; -ORBIT_ENOTREG, -ORBIT_EKIND for another kind, -ORBIT_EMAGIC,
 * -ORBIT_ETRUNCATED) and then validated like any other open.
 */
int orbit__spotq_open(orbit_spotq_t **out, const char *fleet, const char *spot,
		      const struct orbit_spotq_options *o);
void orbit__spotq_close(orbit_spotq_t *q);
int orbit__spotq_unlink(const char *fleet, const char *spot);

/* The segment name part "spotq.<spot>". Returns 0 or -EINVAL (bad name). */
int orbit__spotq_seg_name(char *buf, size_t len, const char *spot);

/* Bytes of the segment for these options (footprint), or 0 when invalid. */
uint64_t orbit__spotq_footprint(const struct orbit_spotq_options *o);

/*
 * orbit__spotq_foreach - call @fn with the name of every Spot queue segment
 * of @fleet (as listed under /dev/shm, glibc's shm_open directory; names
 * that are not valid Spot names are skipped). Stops when @fn returns
 * non-zero. Open each with adopt_caps to read it without knowing its caps.
 * Context: any thread; opendir/readdir. Returns the number of Spots passed
 * to @fn, -EINVAL (bad fleet name, NULL @fn), or -errno of opendir.
 */
int orbit__spotq_foreach(const char *fleet, int (*fn)(void *ctx, const char *spot), void *ctx);

orbit_seg_t *orbit__spotq_seg(orbit_spotq_t *q);

/* Counters the agent publishes (relaxed reads; a snapshot, not atomic as a whole). */
struct orbit_spotq_counters {
	uint64_t accepted[2];
	uint64_t rejected_count[2];
	uint64_t rejected_bytes[2];
	uint64_t aborted[2];
	uint64_t redelivered[2];
	uint64_t corrupt[2];
	uint64_t completed[2];
	uint32_t depth[2]; /* records reserved (tail - head) */
	uint32_t bytes[2]; /* bytes reserved */
	uint32_t item_cap[2];
	uint32_t byte_cap[2];
	uint64_t epoch;
	uint64_t host_gen;
	uint64_t takeovers;
	uint32_t host_row; /* UINT32_MAX: never hosted */
	uint32_t host_member_gen;
	uint32_t host_pid;
	uint64_t shm_bytes;
};

/* Context: any thread, readonly handles too; lock-free. Returns 0, -EINVAL, -ECHILD. */
int orbit__spotq_counters(orbit_spotq_t *q, struct orbit_spotq_counters *c);

/*
 * orbit__spotq_check - the queue checker (tests, orbitctl): every word of
 * both lanes is consistent (head <= tail within caps, slots in [head,
 * tail) claimed for their lap, reservations contiguous and summing to the
 * reserved bytes, ack words never newer than the host generation, no
 * record TAKEN or DONE that was never committed or aborted, committed
 * records valid). Run it while nobody writes. Returns 0, -ORBIT_ECORRUPT
 * with a reason in @why, -EINVAL.
 */
int orbit__spotq_check(orbit_spotq_t *q, char *why, size_t why_len);

/* ---- producers ---- */

/*
 * orbit__spotq_producer_open - a producer for @m's joined member row.
 * One open producer per member row and queue (the handle is used by one
 * thread at a time: the caller serialises). A new tenure of the row (new
 * member generation) restarts producer_seq at 1; the same tenure continues.
 * Returns 0, -EINVAL, -ENOENT (@m not joined), -ERANGE (row >=
 * producer_rows), -EBUSY (this tenure already has one open), -EROFS,
 * -ECHILD, -ENOMEM.
 */
int orbit__spotq_producer_open(orbit_spotq_producer_t **out, orbit_spotq_t *q, orbit_members_t *m);
void orbit__spotq_producer_close(orbit_spotq_producer_t *p);

struct orbit_spotq_submit {
	uint32_t kind;		/* enum orbit_spotq_kind: picks the lane */
	uint64_t actor_id;	/* ACTOR */
	const char *timer_name; /* TIMER: 1..ORBIT_SPOTQ_TIMER_NAME_MAX bytes */
	const void *payload;	/* NULL only with len 0 */
	uint32_t len;
};

/*
 * orbit__spotq_submit - one immediate attempt to append a record.
 * Context: the producer's thread; lock-free; no syscall unless the host
 * sleeps (then one FUTEX_WAKE). Never blocks: a full lane is -EAGAIN at
 * once. Ordering: the commit is a release (SQ-R3): a host that takes the
 * record sees every byte.
 * Returns 0 with *seq_out = the record's producer sequence number (NULL:
 * not stored); -EAGAIN (lane full by count or by bytes: counted per row);
 * -E2BIG (len above the lane's byte cap, or a timer name too long);
 * -EINVAL (bad kind, NULL payload with len, empty timer name);
 * -ECANCELED (this producer stalled mid-record past the unblock bound, or
 * its member was proven dead, and the host aborted the record: it will
 * never be delivered, its reservation is already back); -ORBIT_ECORRUPT
 * (the lane's words are inconsistent); -ECHILD.
 */
int orbit__spotq_submit(orbit_spotq_producer_t *p, const struct orbit_spotq_submit *s,
			uint64_t *seq_out);

/*
 * orbit__spotq_wait_room - sleep until lane @lane may have room for @len
 * bytes and one item, or @timeout_ns (< 0: none). Before it announces a
 * sleep it polls the lane's head and tail, without announcing (so the
 * host's advance rings nobody), for its poll budget (5 us at first,
 * adapted by orbit__spotq_poll_next() from how soon room came: at most
 * 20 us, none after a preemption until a short wait; none on a machine
 * with one CPU online; cut to @timeout_ns, which it counts against).
 * Returns 0 (room now, or the host freed something), -ETIMEDOUT, -EINTR,
 * -EINVAL, -E2BIG (@len above the lane's byte cap), -ECHILD. Context:
 * the producer's thread (one at a time).
 */
int orbit__spotq_wait_room(orbit_spotq_producer_t *p, uint32_t lane, uint32_t len,
			   int64_t timeout_ns);

/*
 * orbit__spotq_producer_set_poll - fix the poll budget of @p's waits for
 * room at @budget_ns (0: announce and sleep at once, as before the poll
 * existed), never adapted and never cut by a preemption; < 0: back to the
 * adaptive default. For tests, and a producer on a CPU of its own. NULL:
 * nothing. Context: the producer's thread.
 * orbit__spotq_producer_poll_budget - the budget of @p's next poll (tests).
 */
void orbit__spotq_producer_set_poll(orbit_spotq_producer_t *p, int64_t budget_ns);
uint64_t orbit__spotq_producer_poll_budget(const orbit_spotq_producer_t *p);

/* ---- the host (consumer) ---- */

/*
 * orbit__spotq_host_takeover - become the queue's host for @epoch (the
 * hosting lease's fencing token; > every epoch that took over before).
 * Bumps the host generation, rewrites every ack word to it (records taken
 * by the previous host and not completed become deliverable again, flagged
 * redelivered), and starts taking at the head. @m (may be NULL: then only
 * the unblock bound aborts in-progress records) proves producers dead.
 * Context: any thread; lock-free; O(items) per lane. Returns 0;
 * -ORBIT_EFENCED (@epoch is not above the stored epoch, or a newer host
 * took over while this one walked); -EINVAL (@epoch 0); -EROFS; -ECHILD;
 * -ENOMEM.
 */
int orbit__spotq_host_takeover(orbit_spotq_host_t **out, orbit_spotq_t *q, orbit_members_t *m,
			       uint64_t epoch);
/* Free the handle. Changes nothing in SHM: hosting ends with the lease. */
void orbit__spotq_host_close(orbit_spotq_host_t *h);

/*
 * orbit__spotq_take - take up to @max committed records of @lane, in lane
 * order, copying each payload into @buf (records stop when @buf is full).
 * In-progress records of dead producers, or of alive ones past the unblock
 * bound, are aborted on the way; corrupt ones are counted, skipped and
 * reported (orbit__spotq_host_last_corrupt()). The batch stops at a record
 * still being written. Decides from the commit word at the cursor
 * (COMMITTED or ABORTED for its lap: the tail passed it, SQ-V1) and reads
 * the tail only on its slow path (a claimer to abort, bad bytes, a slot
 * the wait found suspect): no tail read per record or per batch. While an aborted record whose producer had not
 * retired holds the head, each call checks it again and advances the head
 * once the producer retired or died (nothing rings for that).
 * Context: one thread at a time per host handle (complete() may run on others);
 * lock-free; one fcntl per in-progress record
 * whose producer must be proven dead. Ordering: acquire of each commit
 * (SQ-A5). Returns the number of records (0: nothing ready); -ORBIT_EFENCED
 * (a newer host took over: nothing changed by this call); -ENOBUFS (the
 * next record alone does not fit @buf_len); -EINVAL; -ECHILD.
 */
int orbit__spotq_take(orbit_spotq_host_t *h, uint32_t lane, struct orbit_spotq_rec *recs,
		      unsigned max, void *buf, size_t buf_len);

/*
 * orbit__spotq_complete - the handler of the record at @pos has finished:
 * mark it done (out of order is fine) and return the reservation of the
 * contiguous completed prefix (head advance).
 * Context: any thread of the host's process, also while another thread is
 * in take() (complete and advance write only SHM words; take alone owns the
 * handle's cursor); lock-free; a FUTEX_WAKE when a producer waits for room.
 * Returns 0 once the record is DONE (a fenced head advance after it does not
 * undo that); -ORBIT_EFENCED (a newer host: nothing changed); -EINVAL (@pos
 * is not a record this host took and has not completed); -ECHILD.
 */
int orbit__spotq_complete(orbit_spotq_host_t *h, uint32_t lane, uint32_t pos);

/*
 * orbit__spotq_complete_n - orbit__spotq_complete() for @n records of
 * @lane at once (a batch the host took): each record's ack goes TAKEN ->
 * FREED by its own fenced CAS, in the order given, then ONE head advance
 * returns the reservations of the contiguous prefix (one head CAS for the
 * whole run, one add to the completed counter).
 * Context: as complete(). *@done (may be NULL): how many of @pos are done
 * by this call (the first *@done; those after a failure are untouched).
 * Returns 0 once all @n are done; else the code of pos[*done]:
 * -ORBIT_EFENCED (a newer host: this and the later ones changed nothing),
 * -EINVAL (not a record this host took and has not completed; the later
 * ones are untouched: call again from pos + *done + 1), -ECHILD. NULL @pos
 * with @n > 0: -EINVAL.
 */
int orbit__spotq_complete_n(orbit_spotq_host_t *h, uint32_t lane, const uint32_t *pos, unsigned n,
			    unsigned *done);

/*
 * orbit__spotq_advance - return the reservations of the contiguous prefix
 * of completed, aborted or corrupt records (complete() and take() call it).
 * It stops at an aborted record whose producer has not retired and is not
 * proven dead (it may still write into the slot).
 * Context: as complete(). Returns the number of slots returned;
 * -ORBIT_EFENCED; -ORBIT_ECORRUPT (head or tail words out of range);
 * -EINVAL; -ECHILD.
 */
int orbit__spotq_advance(orbit_spotq_host_t *h, uint32_t lane);

/*
 * orbit__spotq_host_wait - sleep on the records doorbell until a record
 * may be ready, or @timeout_ns (< 0: none): orbit__spotq_host_wait_seq()
 * with a sequence read on entry and both lanes (so only the lanes, not
 * the caller's other wake sources, are covered). Dekker protocol (SQ-D1/SQ-F1):
 * the host announces itself, re-checks both lanes, then sleeps; producers
 * ring only when it announced. While a record is being written the sleep
 * is cut to the time left of its unblock bound (polling at most every
 * 10 ms for its producer's death), and so is it while an aborted record
 * holds the head until its producer retires (the caller's take() then
 * frees it).
 * @wake_class: orbit__doorbell_bit(host row), or 0 for the shared class.
 * Returns 0 (something to take, or woken), -ETIMEDOUT, -EINTR,
 * -ORBIT_EFENCED, -ECHILD.
 */
int orbit__spotq_host_wait(orbit_spotq_host_t *h, int64_t timeout_ns, uint32_t wake_class);

/*
 * orbit__spotq_host_seq - the records doorbell's sequence now. A host
 * thread reads it BEFORE it looks at what can wake it (take() of the
 * lanes, its own completion queue, its stop flag) and passes it to
 * orbit__spotq_host_wait_seq(): any ring or kick after this read ends
 * that wait at once. Context: any thread; one acquire load (DB-A1). NULL:
 * 0.
 */
uint32_t orbit__spotq_host_seq(const orbit_spotq_host_t *h);

/*
 * orbit__spotq_host_wait_seq - sleep on the records doorbell unless
 * something happened since the caller's @seen (orbit__spotq_host_seq(),
 * read before the caller last looked): announce in the doorbell's
 * sleeping word (class @wake_class), fence, re-check the lanes in @lanes
 * (bit l = lane l: the lanes the caller will take from next; a lane whose
 * head record the caller holds refused is left out), then FUTEX_WAIT on
 * seq == @seen (SQ-D1, pairs with SQ-F1 of submit(); the kernel compares
 * seq again under its bucket lock). No wake is lost: a producer that
 * committed before the announce is seen by the re-check, one after it
 * rings (seq moves), and a kick (a worker, stop, the death watcher) after
 * @seen moved seq too. The re-check reads the commit word at each
 * lane's cursor (SQ-V1 in spot_queue_internal.h), and the tail only when that slot
 * is unclaimed: a tail past it (bad bytes made a passed slot look free)
 * returns 1, and the next take() resolves the slot. While a record in @lanes is being written, or an
 * aborted record whose producer has not retired holds a lane's head, the
 * sleep is cut to its stall poll (10 ms). With @lanes, no sleep lasts
 * longer than the queue's unblock bound (a producer that claimed after the
 * re-check and stopped before its commit rings nobody: the host finds its
 * claim on waking). Awake again, a row's own class bit is taken back
 * (producers then ring no syscall while the host works).
 * Before the announce, with @lanes and a @timeout_ns other than 0, the
 * host polls without announcing for its poll budget (at most 20 us, or
 * the fixed budget of orbit__spotq_host_set_poll(); cut to @timeout_ns,
 * and its time counts against @timeout_ns): it spins 5 us between looks at
 * the commit word at each lane's cursor (never the tail word) and at seq, so a
 * producer that streams records is not rung at every catch-up. The
 * budget adapts after each wait (orbit__spotq_poll_next()); it is 0 for a
 * thread allowed on one CPU only and after the poll was preempted (a busy
 * CPU: the host sleeps instead, and a woken sleeper gets its CPU back promptly).
 * @wake_class: orbit__doorbell_bit(host row), or 0 for the shared class.
 * Context: the host's thread; spins up to its poll budget, then blocks
 * (FUTEX_WAIT_BITSET) unless a lane is ready or seq moved. Returns 1 (a
 * lane in @lanes has a record or an aborted or corrupt slot at the cursor:
 * not slept), 0 (woken: seq moved
 * past @seen, or the stall poll or the unblock-bound look ended),
 * -ETIMEDOUT (@timeout_ns, when shorter than those), -EINTR,
 * -ORBIT_EFENCED, -EINVAL (NULL, or a bit above the lanes in @lanes),
 * -ECHILD.
 */
int orbit__spotq_host_wait_seq(orbit_spotq_host_t *h, uint32_t seen, uint32_t lanes,
			       int64_t timeout_ns, uint32_t wake_class);

/*
 * orbit__spotq_poll_next - the poll budget of a host's next wait after a
 * wait that took @waited_ns from its start until a record came or the
 * wait ended, with @budget_ns the budget that wait had: an adaptive
 * mutex's rule, sized from the last arrival. A wait up to 20 us: twice it
 * (between 1 us and 20 us), so the next gap of that size is polled over
 * without a sleep; a longer one: half the budget, 0 below 1 us (a host
 * whose records come rarely sleeps at once, until one short wait);
 * UINT64_MAX (the poll was preempted): 0.
 * Context: any thread; pure. Returns the next budget in ns.
 */
uint64_t orbit__spotq_poll_next(uint64_t budget_ns, uint64_t waited_ns);

/*
 * orbit__spotq_host_set_poll - fix the poll budget of @h's waits
 * (orbit__spotq_host_wait_seq()) at @budget_ns (0: announce and sleep at
 * once, as before the poll existed), never adapted and never cut by a
 * preemption; < 0: back to the adaptive default (0 for a thread that may
 * run on one CPU only: orbit__spotq_cpus_allowed()). For a host on a CPU
 * of its own that may spin longer, and for tests. NULL: nothing. Context: the host's thread (the budget is its
 * alone).
 */
void orbit__spotq_host_set_poll(orbit_spotq_host_t *h, int64_t budget_ns);

/*
 * orbit__spotq_cpus_allowed - the CPUs the calling thread may run on
 * (sched_getaffinity(); the online count if that fails): a host pinned to
 * one CPU of a larger machine does not poll, as on a one-CPU machine.
 * Context: any thread.
 */
int orbit__spotq_cpus_allowed(void);

/* @h's poll budget for its next wait in ns, and in *@fixed whether it is fixed (tests). */
uint64_t orbit__spotq_host_poll_budget(const orbit_spotq_host_t *h, bool *fixed);

/* Ring the records doorbell (the agent's death watcher: a producer died). */
void orbit__spotq_kick(orbit_spotq_t *q);

/*
 * orbit__spotq_host_aborts - in-progress records this host handle aborted,
 * per lane, by cause: its producer proved dead (@dead), or alive past the
 * unblock bound (@unblock). Their sum is this handle's share of the lane's
 * aborted counter. Context: any thread; relaxed loads. NULL @h: zeros.
 */
void orbit__spotq_host_aborts(orbit_spotq_host_t *h, uint64_t dead[2], uint64_t unblock[2]);

/* "lane %u pos %u: reason" of the last corrupt record this host skipped ("" if none). */
const char *orbit__spotq_host_last_corrupt(const orbit_spotq_host_t *h);
uint64_t orbit__spotq_host_gen(const orbit_spotq_host_t *h);

#endif /* ORBIT_SHM_SPOT_QUEUE_H */
