/* SPDX-License-Identifier: MIT */
/*
 * shm/lock_table.h: the SHM layout of the orbit-lock state table (segment
 * kind 228 by default, layout version ORBIT_LOCK_TABLE_VERSION). The body
 * after the segment header is one struct orbit_lock_table_hdr followed by
 * `slots` struct orbit_lock_slot, open-addressed by a hash of ns+label with
 * linear probing. Internal to shm/lock.c, the kill tests and orbitctl.
 *
 * Synchronization table (M = a mutator holding the table's serializer):
 *   field             writer              reader            torn read / killed writer
 *   tbl magic..ser    creator (init cb)   every opener      fixed before READY
 *   mutex             pthread (FUTEX)     pthread           robust: EOWNERDEAD -> repair
 *   next_token        M, relaxed          M                 a bump is never undone: a
 *                                                           killed M burns a token (fine)
 *   state_revision    M, release (LK-R3)     anyone, acquire   monotonic, atomic u64
 *   dirty_pid         M: set first, clear last              non-zero at serializer entry
 *                                                           = the last M died: repair
 *   move_seq          M compacting: odd   lookup (LK-A4/LK-A5)    odd left by a killed M: lookups
 *                     while moving                          return -EAGAIN until repaired
 *   tombstones        M                   M                 recomputed by repair
 *   slot.seq          M: odd (LK-F1) before  lookup: LK-A1 + LK-F2   odd left by a killed M: the
 *                     any byte, even (LK-R1)  re-check          repair rolls the slot back
 *                     after the last                        (state TOMBSTONE) or forward
 *                                                           (state OCCUPIED: complete)
 *   slot.state        M: TOMBSTONE before bytes, OCCUPIED   never torn (atomic u32)
 *                     after (LK-R2)
 *   slot bytes, lens, M under seq odd     lookup copy       a torn copy is detected by the
 *   token, pid, ...   (relaxed atomic     (relaxed atomic   seq re-check and retried
 *                     64-bit words)       64-bit words)
 *   slot.deadline_ns  M (renew in place)  lookup            atomic u64: old or new
 *   slot.flags,       M under seq odd,    lookup copy,      part of the slot image (words
 *   holder_row/gen    with the rest       the agent's       2 and 7): torn copies are
 *                     (slot_write)        dead-holder sweep  caught by the seq re-check;
 *                                         (orbit__lock_free_dead) unknown flag bits or a
 *                                                           member word without the flag
 *                                                           fail orbit__lock_table_check
 * Every length and index read from here is validated before use (lengths
 * against ORBIT_LOCK_BYTES_MAX, the slot count against the mapping).
 */
#ifndef ORBIT_SHM_LOCK_TABLE_H
#define ORBIT_SHM_LOCK_TABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <orbit/lock.h>

#define ORBIT_LOCK_TABLE_VERSION 3u /* 2: slot.holder_pidfs_ino; 3: flags, holder_row/gen */
#define ORBIT_LOCK_TABLE_MAGIC 0x4c4254544b434f4cull /* "LOCKTTBL" little-endian */

enum orbit_lock_slot_state {
	ORBIT_LOCK_SLOT_EMPTY = 0,
	ORBIT_LOCK_SLOT_TOMBSTONE = 1,
	ORBIT_LOCK_SLOT_OCCUPIED = 2,
};

/* Body offset 0. Cache lines: constants | mutation words | mutex. */
struct orbit_lock_table_hdr {
	/* line 0: written once by the creator, read by every opener */
	uint64_t magic;	     /* ORBIT_LOCK_TABLE_MAGIC */
	uint32_t slot_count; /* == layout slots */
	uint32_t slot_bytes; /* sizeof(struct orbit_lock_slot) */
	uint32_t serializer; /* enum orbit_lock_serializer (FUTEX or FLOCK) */
	uint32_t slots_off;  /* body offset of slot 0 */
	uint8_t pad0[40];
	/* line 1: mutation words (serializer held) */
	_Atomic uint64_t next_token;	 /* next fencing token to hand out */
	_Atomic uint64_t state_revision; /* +1 per successful change */
	_Atomic uint64_t move_seq;	 /* odd while compaction moves entries */
	_Atomic uint32_t dirty_pid;	 /* pid of the mutator inside, 0 outside */
	_Atomic uint32_t tombstones;	 /* tombstone count (compaction trigger) */
	_Atomic uint64_t repairs;	 /* crashed-mutator repairs (all handles) */
	uint8_t pad1[24];
	/* lines 2-3: the FUTEX serializer (robust, process-shared) */
	union {
		pthread_mutex_t mutex;
		uint8_t mutex_bytes[128];
	};
	uint8_t reserved[256]; /* growth; zero */
};

#define ORBIT_LOCK_SLOT_META_BYTES 64u

/*
 * slot.flags: the lease flags of the acquisition (orbit/lock.h). FREE_ON_DEATH
 * (= ORBIT_LOCK_FREE_ON_DEATH) says holder_row/holder_gen name the holder's
 * member tenure (shm/members.h) and that an agent frees the entry as soon as
 * the member directory proves that tenure over and the holder process gone.
 * Without it holder_row and holder_gen are 0.
 */
#define ORBIT_LOCK_SLOT_F_FREE_ON_DEATH 0x1u
#define ORBIT_LOCK_SLOT_F_KNOWN 0x1u

/* One slot: 1,024 bytes, cache-line aligned. */
struct orbit_lock_slot {
	_Atomic uint32_t seq;	/* odd while being written */
	_Atomic uint32_t state; /* enum orbit_lock_slot_state */
	uint32_t hash;		/* low 32 bits of the key hash */
	uint16_t ns_len;
	uint16_t label_len;
	uint16_t owner_len;
	uint16_t flags; /* ORBIT_LOCK_SLOT_F_* of the acquisition */
	uint32_t holder_pid;
	uint64_t token;
	_Atomic uint64_t deadline_ns;	     /* CLOCK_MONOTONIC absolute */
	uint64_t holder_start_ticks;	     /* /proc/<pid>/stat field 22 */
	uint64_t holder_pidfs_ino;	     /* the holder's pidfs inode (0: no pidfs) */
	uint32_t holder_row;		     /* FREE_ON_DEATH: the holder's member row (else 0) */
	uint32_t holder_gen;		     /* FREE_ON_DEATH: that row's generation (else 0) */
	uint8_t bytes[ORBIT_LOCK_BYTES_MAX]; /* ns | label | owner */
};

_Static_assert(offsetof(struct orbit_lock_table_hdr, next_token) == 64, "line 1");
_Static_assert(offsetof(struct orbit_lock_table_hdr, mutex) == 128, "line 2");
_Static_assert(sizeof(pthread_mutex_t) <= 128, "mutex fits");
_Static_assert(sizeof(struct orbit_lock_table_hdr) == 512, "table header size");
_Static_assert(offsetof(struct orbit_lock_slot, bytes) == ORBIT_LOCK_SLOT_META_BYTES, "slot meta");
_Static_assert(offsetof(struct orbit_lock_slot, holder_pidfs_ino) == 48, "pidfs word");
_Static_assert(offsetof(struct orbit_lock_slot, holder_row) == 56, "member word");
_Static_assert(sizeof(struct orbit_lock_slot) == 1024, "slot size");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
	       "SHM atomics must be lock-free (address-free)");

/* Body bytes of a table with @slots slots. */
static inline uint64_t orbit__lock_table_body_bytes(uint32_t slots)
{
	return sizeof(struct orbit_lock_table_hdr) +
	       (uint64_t)slots * sizeof(struct orbit_lock_slot);
}

#endif /* ORBIT_SHM_LOCK_TABLE_H */
