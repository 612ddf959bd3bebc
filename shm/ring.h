/* SPDX-License-Identifier: MIT */
/*
 * shm/ring.h: the orbit-lock transition ring (internal), segment kind 229
 * by default, one SHM object per lock layout "/orbit.<fleet>.ring-<kind>".
 * It holds N writer lanes, each a power-of-two ring of fixed-size frames
 * (default 16 lanes x 1,024 frames x 1,024 bytes), and one doorbell
 * (shm/doorbell.h) that readers sleep on. The ring is advisory (spec
 * orbit-lock "State and notification"): it wakes observers and feeds local
 * views, it never decides ownership; a reader that lagged or finds a frame
 * it cannot trust re-reads the authoritative table.
 *
 * Lanes: one publisher per lane at a time. A process claims a lane for its
 * member row (shm/members.h) and its calls are serialised by the caller
 * (the lock publishes under its state serializer). A lane whose owner is
 * proven dead by the kernel (members: OFD lock) is reclaimed by whoever
 * proves it; the lane's head keeps running, so readers' cursors stay valid.
 *
 * Doorbell mode (layout version 3): the creator records ASYM when it can
 * register for membarrier (shm/doorbell.h "Asymmetric fence"): then a
 * publish with nobody asleep is the frame stores, the head store and one
 * load, with no locked instruction; each process decides at
 * orbit__ring_open() whether it may publish that way.
 *
 * Frames: each lane has a free-running head (frames ever published). The
 * frame for lane position p lives in slot p & (frames - 1). Its seq word is
 * 2p+1 while being written and 2p+2 once complete (0: never written). A
 * reader at cursor c copies the frame and re-checks seq: any other value
 * than 2c+2 after the copy means the writer lapped it -> -ORBIT_ELAGGED.
 * Lengths in a frame are validated before use; bad bytes -> -ORBIT_ECORRUPT.
 *
 * Too-big transitions: a frame holds 64 header bytes and frame_bytes - 64
 * payload bytes (960 by default: the lock's own key+owner limit, so the
 * default layout never truncates). With a smaller layout a transition whose
 * ns+label+owner does not fit is TRUNCATED, not dropped: owner bytes are cut
 * first, then label, then ns; the frame carries ORBIT_RING_F_TRUNCATED and
 * the original lengths, and the ring counts it. A reader of a truncated
 * frame still learns type, token and state_revision and must look the key
 * up in the table (it cannot trust the key bytes to be whole).
 *
 * Layout of the body (after the 128-byte segment header):
 *   struct orbit_ring_shm        writer: creator (layout words), publishers
 *                                (counters, relaxed); reader: everyone
 *   struct orbit_doorbell        see shm/doorbell.h
 *   struct orbit_ring_lane[N]    head: lane publisher (release, RG-W3);
 *                                owner: claim/release/reclaim (CAS)
 *   frames[N][frames][bytes]     lane publisher; readers copy + re-check
 *   Crash: a publisher killed mid-frame leaves seq odd and head unmoved, so
 *   no reader ever reads that slot as position head; the next owner of the
 *   lane rewrites the same position. Killed after head moved but before the
 *   lock's table commit: the frame is complete and describes a change that
 *   never happened -> a false edge; readers re-check the table (harmless).
 */
#ifndef ORBIT_SHM_RING_H
#define ORBIT_SHM_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "shm/doorbell.h"
#include "shm/members.h"
#include "shm/segment.h"
#include "shm/transition.h"

/* 2: doorbell sleeping word is a wake-class mask; 3: the doorbell records its mode (ASYM) */
#define ORBIT_RING_LAYOUT_VERSION 3u
#define ORBIT_RING_DEFAULT_LANES 16u
#define ORBIT_RING_DEFAULT_FRAMES 1024u
#define ORBIT_RING_DEFAULT_FRAME_BYTES 1024u
#define ORBIT_RING_MAX_LANES 256u
#define ORBIT_RING_MIN_FRAMES 2u
#define ORBIT_RING_MAX_FRAMES 65536u
#define ORBIT_RING_MIN_FRAME_BYTES 128u
#define ORBIT_RING_MAX_FRAME_BYTES 4096u
#define ORBIT_RING_FRAME_HDR_BYTES 64u
#define ORBIT_RING_PAYLOAD_MAX (ORBIT_RING_MAX_FRAME_BYTES - ORBIT_RING_FRAME_HDR_BYTES)

/* Frame flags. */
/* key/owner bytes cut to fit the frame: the public flag bit */
#define ORBIT_RING_F_TRUNCATED ((uint32_t)ORBIT_TRANSITION_F_TRUNCATED)

/* The lock layout's ring part; all peers must agree (fingerprinted). */
struct orbit_ring_layout {
	uint32_t kind;		  /* segment kind (default 229) */
	uint32_t lanes;		  /* writer lanes, 1..ORBIT_RING_MAX_LANES */
	uint32_t frames_per_lane; /* power of two, MIN..MAX_FRAMES */
	uint32_t frame_bytes;	  /* power of two, MIN..MAX_FRAME_BYTES */
};

/* Ring-wide words after the segment header. */
struct orbit_ring_shm {
	uint32_t lanes;
	uint32_t frames_per_lane;
	uint32_t frame_bytes;
	uint32_t reserved0;
	uint64_t lanes_off;	    /* struct orbit_ring_lane[lanes], from segment start */
	uint64_t frames_off;	    /* frame area, from segment start */
	_Atomic uint64_t truncated; /* frames published truncated (relaxed counter) */
	_Atomic uint64_t resets;    /* orbit__ring_reset calls */
	_Atomic uint64_t reclaims;  /* lanes taken from dead owners */
	uint8_t reserved[72];
	struct orbit_doorbell doorbell; /* at body offset 128: its own cache line */
};
_Static_assert(sizeof(struct orbit_ring_shm) == 192, "ring shm header size");

/* One per lane, two cache lines: the publisher's word apart from the claim word. */
struct orbit_ring_lane {
	_Atomic uint64_t head; /* frames ever published on this lane (RG-W3) */
	uint8_t pad0[56];
	_Atomic uint64_t owner;	    /* 0 free, else (row + 1) << 32 | row generation */
	_Atomic uint32_t owner_pid; /* display */
	uint32_t reserved0;
	uint8_t pad1[48];
};
_Static_assert(sizeof(struct orbit_ring_lane) == 128, "ring lane size");

/*
 * A frame in SHM is frame_bytes / 8 atomic words (_Atomic uint64_t, the
 * type the segment's frame area is declared as: every access is an atomic
 * load or store of one word); this is the layout of its first 8 words,
 * the header, as a reader copies it out (a process-local, plain copy);
 * the payload (ns, label, owner bytes) follows at byte 64.
 */
struct orbit_ring_frame_hdr {
	uint64_t seq;  /* word 0: 2p+1 writing, 2p+2 complete (p = lane position) */
	uint32_t type; /* enum orbit_transition_type */
	uint32_t writer_pid;
	uint64_t fencing_token;
	uint64_t deadline_ns;
	uint64_t state_revision;
	uint64_t publish_ns; /* CLOCK_MONOTONIC at publish (delivery latency) */
	uint16_t ns_len;     /* stored lengths (after truncation) */
	uint16_t label_len;
	uint16_t owner_len;
	uint16_t flags;	   /* ORBIT_RING_F_* */
	uint32_t orig_len; /* ns+label+owner before truncation */
	uint32_t reserved0;
};
_Static_assert(sizeof(struct orbit_ring_frame_hdr) == ORBIT_RING_FRAME_HDR_BYTES, "frame hdr");

/* A frame copied out of SHM and validated (process-local). */
struct orbit_ring_event {
	uint32_t lane;
	uint32_t type;
	uint32_t writer_pid;
	uint32_t flags;
	uint64_t lane_pos; /* position on the lane (per-lane sequence number) */
	uint64_t fencing_token;
	uint64_t deadline_ns;
	uint64_t state_revision;
	uint64_t publish_ns;
	uint32_t ns_len, label_len, owner_len, orig_len;
	uint8_t bytes[ORBIT_RING_PAYLOAD_MAX]; /* ns | label | owner */
};

typedef struct orbit_ring orbit_ring_t;
typedef struct orbit_ring_reader orbit_ring_reader_t;

/* The default layout (kind 229, 16 x 1,024 x 1,024). */
void orbit__ring_layout_default(struct orbit_ring_layout *l);

/*
 * orbit__ring_open - open (or create) the fleet's ring for @layout (NULL:
 * default). @opts as orbit__seg_open (NULL: open or create, 0600).
 * Context: any thread; syscalls; allocates. Returns 0, -EINVAL (bad layout),
 * -ENOMEM, or the codes of orbit__seg_open (a peer with another layout
 * gets -ORBIT_EFINGERPRINT).
 */
int orbit__ring_open(orbit_ring_t **out, const char *fleet, const struct orbit_ring_layout *layout,
		     const struct orbit_seg_opts *opts);
void orbit__ring_close(orbit_ring_t *ring);
int orbit__ring_unlink(const char *fleet, const struct orbit_ring_layout *layout);

/* The layout actually mapped, the doorbell, the segment. */
const struct orbit_ring_layout *orbit__ring_layout(const orbit_ring_t *ring);
struct orbit_doorbell *orbit__ring_doorbell(orbit_ring_t *ring);
orbit_seg_t *orbit__ring_seg(orbit_ring_t *ring);

/*
 * orbit__ring_lane_claim - claim a writer lane for @m's joined row and its
 * current generation (the tenure): a lane this tenure already owns, else a
 * free lane, else a lane whose owner @m proves dead (reclaimed, counted).
 * Context: any thread; lock-free CAS on the owner words; liveness probes
 * make fcntl calls. Returns the lane index, -ENOSPC (all lanes held by live
 * members), -ENOENT (@m has not joined), -EROFS, -EINVAL.
 */
int orbit__ring_lane_claim(orbit_ring_t *ring, orbit_members_t *m);

/* Give a lane back (CAS from our owner word to 0). Returns 0, -EPERM (not ours), -EINVAL. */
int orbit__ring_lane_release(orbit_ring_t *ring, orbit_members_t *m, uint32_t lane);

/*
 * orbit__ring_lanes_reclaim_dead - free every lane whose owner is not alive
 * with the same generation (the agent calls this when it notices a death).
 * Returns the number of lanes reclaimed, -EROFS.
 */
int orbit__ring_lanes_reclaim_dead(orbit_ring_t *ring, orbit_members_t *m);

/* Owner word of @lane (0 free) for display; 0 when out of range. */
uint64_t orbit__ring_lane_owner(const orbit_ring_t *ring, uint32_t lane);

/*
 * orbit__ring_publish - append @t to @lane and ring the doorbell.
 * Context: ONE publisher per lane at a time (the caller serialises; the
 * lock does under its state serializer); lock-free, no allocation, no
 * syscall unless a reader sleeps. Returns 0, 1 when the frame was truncated
 * (flag set, counted), -EINVAL (lane out of range, NULL, bad type), -EROFS.
 */
int orbit__ring_publish(orbit_ring_t *ring, uint32_t lane, const struct orbit_transition *t);

/*
 * orbit__ring_publish_skip - orbit__ring_publish() that leaves the doorbell
 * wake classes in @skip asleep (orbit__doorbell_ring_skip(); 0: wake all).
 * A skipped class sees the frame at its next wake: the caller bounds how
 * long (the agent skips only its own class, and only for a while).
 */
int orbit__ring_publish_skip(orbit_ring_t *ring, uint32_t lane, const struct orbit_transition *t,
			     uint32_t skip);

/*
 * A lock sink's target (the agent's orbit__lock_set_sink() callback calls
 * orbit__ring_sink_skip() with s = { ring, lane }): publish @t with the
 * doorbell skip mask @skip (see orbit__ring_publish_skip()). Failures are
 * counted in s->failed (relaxed) and never change the lock's outcome.
 */
struct orbit_ring_sink {
	orbit_ring_t *ring;
	uint32_t lane;
	_Atomic uint64_t failed;
};
void orbit__ring_sink_skip(struct orbit_ring_sink *s, const struct orbit_transition *t,
			   uint32_t skip);

/*
 * orbit__ring_reset - clear every lane (heads to 0, frames zeroed), bump the
 * segment generation, free lanes whose owners are dead. The CALLER decides
 * when that is allowed (reset_transport: no other live member attached, no
 * publish running). Readers notice the generation and return
 * -ORBIT_ELAGGED once, resynchronised at the new heads. Returns 0, -EROFS.
 */
int orbit__ring_reset(orbit_ring_t *ring, orbit_members_t *m);

/* Counters (relaxed reads). */
struct orbit_ring_counters {
	uint64_t truncated;
	uint64_t resets;
	uint64_t reclaims;
	uint64_t doorbell_wakes;
	uint64_t published; /* sum of lane heads */
};
void orbit__ring_counters(const orbit_ring_t *ring, struct orbit_ring_counters *c);

/*
 * Readers: process-local cursors, one per lane. A reader belongs to one
 * thread at a time; many readers (threads or processes) read one ring.
 *
 * orbit__ring_reader_open - a reader positioned AFTER the current heads
 * (spec: a new handle subscribes after the current heads).
 * Returns 0, -ENOMEM, -EINVAL.
 */
int orbit__ring_reader_open(orbit_ring_reader_t **out, orbit_ring_t *ring);
void orbit__ring_reader_close(orbit_ring_reader_t *r);

/*
 * orbit__ring_reader_next - copy the next frame of any lane (lanes are
 * visited round-robin; order across lanes is given by state_revision).
 * Context: the reader's thread; lock-free, no syscall.
 * Returns 0 with *ev filled; -EAGAIN nothing new; -ORBIT_ELAGGED the writer
 * overtook this reader on *lane_out (or the ring was reset): the cursor
 * jumped to the oldest retained frame and the caller must re-read the
 * table; -ORBIT_ECORRUPT a frame failed validation (skipped, counted).
 */
int orbit__ring_reader_next(orbit_ring_reader_t *r, struct orbit_ring_event *ev,
			    uint32_t *lane_out);

/* Move every cursor to the oldest frame still retained (replay_retained). */
void orbit__ring_reader_rewind(orbit_ring_reader_t *r);

/*
 * orbit__ring_replay_retained - call @fn for every frame still retained, lane
 * by lane (diagnostics, tests). Frames overwritten during the walk are
 * skipped. Returns the number of frames passed to @fn, or -ENOMEM.
 */
int orbit__ring_replay_retained(orbit_ring_t *ring,
				int (*fn)(void *ctx, const struct orbit_ring_event *ev), void *ctx);

/*
 * orbit__ring_reader_wait - sleep on the doorbell until something may be
 * new. Protocol: seen = orbit__ring_reader_arm(r); drain next() to -EAGAIN;
 * orbit__ring_reader_wait(r, seen, timeout). No lost wakeup: a publish
 * before arm is visible to next(); one after it changes the doorbell seq
 * (FULL mode), or (ASYM mode, shm/doorbell.h) moves a lane head past this
 * reader's cursor, which the wait re-checks after its membarrier, or
 * rings because it saw the announce. Other rings (reset, agents' joins
 * and stops, wake_class) always change seq.
 * Context: the reader's thread; before it sleeps, ASYM mode makes one
 * membarrier system call; blocks in FUTEX_WAIT_BITSET.
 * Returns 0 (woken / already changed), -ETIMEDOUT, -EINTR.
 */
uint32_t orbit__ring_reader_arm(orbit_ring_reader_t *r);
int orbit__ring_reader_wait(orbit_ring_reader_t *r, uint32_t seen, int64_t timeout_ns);

/*
 * The doorbell class this reader sleeps as (orbit__doorbell_bit(row) for a
 * member's agent; ORBIT_DOORBELL_SHARED, the default, for anyone else).
 * Context: the reader's own thread, before it waits.
 */
void orbit__ring_reader_set_wake_class(orbit_ring_reader_t *r, uint32_t bit);

/* Reader counters: frames read, lag events, corrupt frames. */
struct orbit_ring_reader_counters {
	uint64_t read;
	uint64_t lagged;
	uint64_t corrupt;
};
void orbit__ring_reader_counters(const orbit_ring_reader_t *r,
				 struct orbit_ring_reader_counters *c);

#endif /* ORBIT_SHM_RING_H */
