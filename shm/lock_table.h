/* SPDX-License-Identifier: MIT */
/*
 * shm/lock_table.h: the SHM layout of the orbit-lock state table (segment
 * kind 228 by default, layout version ORBIT_LOCK_TABLE_VERSION). The body
 * after the segment header is one struct orbit_lock_table_hdr, then
 * `slots` struct orbit_lock_slot, open-addressed by a hash of ns+label with
 * linear probing, then the control bytes (one per slot, at ctrl_off): a
 * dense copy of each slot's state and 7 bits of its hash that probes scan
 * 8 slots per word instead of reading 1,024-byte slots (layout version 4).
 * Internal to shm/lock.c, the kill tests and orbitctl.
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
 *   expiry_ns         M: lowered before   M                 a lower bound of every OCCUPIED
 *                     a slot gets an                        deadline (a kill leaves it low:
 *                     earlier deadline;                     one needless sweep); a scribbled
 *                     set by a sweep                        high value only delays the sweep
 *   ctrl[i]           M: OCCUPIED|h7      lookup, busy_fast  conservative at every instant:
 *   (u64 words of     before slot i's     (LK-A7): a filter; ctrl EMPTY => slot EMPTY, and
 *   8 bytes)          write begins;       M: its probe,      slot OCCUPIED => ctrl OCCUPIED
 *                     TOMBSTONE/EMPTY     checking the slot  | its h7; a kill leaves it so
 *                     after slot i left   it lands on        (stale only towards "read the
 *                     OCCUPIED (LK-R6)                       slot"); repair rebuilds it
 *   slot.seq          M: odd (LK-F1) before  lookup: LK-A1 + LK-F2   odd left by a killed M: the
 *                     any byte, even (LK-R1)  re-check          repair rolls the slot back
 *                     after the last                        (state TOMBSTONE) or forward
 *                                                           (state OCCUPIED: complete)
 *   slot.state        M: TOMBSTONE before bytes, OCCUPIED   never torn (atomic u32)
 *                     after (LK-R2)
 *   slot key_words,   M under seq odd     lookup copy       a torn copy is detected by the
 *   lens, token, pid  (relaxed atomic     (relaxed atomic   seq re-check and retried
 *   ...               stores)             loads)
 *   slot.deadline_ns  M (renew in place)  lookup            atomic u64: old or new
 *   slot.flags,       M under seq odd,    lookup copy,      part of the slot image:
 *   holder_row/gen    with the rest       the agent's       torn copies are
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

/* 2: slot.holder_pidfs_ino; 3: flags, holder_row/gen; 4: control bytes, expiry_ns,
 * ctrl_off, another key hash. (A version 5 on main for a while had a
 * one-fold key hash and nothing else new; it was withdrawn for version
 * 4's hash, and a version-5 table is refused as any other version.) */
#define ORBIT_LOCK_TABLE_VERSION 4u
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
	uint32_t ctrl_off;   /* body offset of the control bytes (after the last slot) */
	uint8_t pad0[36];
	/* line 1: mutation words (serializer held) */
	_Atomic uint64_t next_token;	 /* next fencing token to hand out */
	_Atomic uint64_t state_revision; /* +1 per successful change */
	_Atomic uint64_t move_seq;	 /* odd while compaction moves entries */
	_Atomic uint32_t dirty_pid;	 /* pid of the mutator inside, 0 outside */
	_Atomic uint32_t tombstones;	 /* tombstone count (compaction trigger) */
	_Atomic uint64_t repairs;	 /* crashed-mutator repairs (all handles) */
	_Atomic uint64_t expiry_ns;	 /* no OCCUPIED deadline is below it (sweep trigger) */
	uint8_t pad1[16];
	/* lines 2-3: the FUTEX serializer (robust, process-shared) */
	union {
		pthread_mutex_t mutex;
		uint8_t mutex_bytes[128];
	};
	uint8_t reserved[256]; /* growth; zero */
};

#define ORBIT_LOCK_SLOT_META_BYTES 64u

/*
 * Control bytes: byte i is slot i's, in word i / 8 of the array at bits
 * 8 * (i % 8) (the word's value, so the numbering holds on either byte
 * order). EMPTY 0x00 (a zeroed table is all EMPTY), TOMBSTONE 0x01,
 * OCCUPIED 0x80 | the top 7 bits of the slot's 32-bit hash (the home slot
 * uses the low bits). 0x02-0x7f are never written: a reader treats such a
 * byte as "read the slot", a mutator rebuilds the array from the slots.
 */
#define ORBIT_LOCK_CTRL_EMPTY 0x00u
#define ORBIT_LOCK_CTRL_TOMBSTONE 0x01u
#define ORBIT_LOCK_CTRL_OCCUPIED 0x80u
#define ORBIT_LOCK_CTRL_TAG(hash32) (ORBIT_LOCK_CTRL_OCCUPIED | ((uint32_t)(hash32) >> 25))

/*
 * slot.flags: the lease flags of the acquisition (orbit/lock.h). FREE_ON_DEATH
 * (= ORBIT_LOCK_FREE_ON_DEATH) says holder_row/holder_gen name the holder's
 * member tenure (shm/members.h) and that an agent frees the entry as soon as
 * the member directory proves that tenure over and the holder process gone.
 * Without it holder_row and holder_gen are 0.
 */
#define ORBIT_LOCK_SLOT_F_FREE_ON_DEATH 0x1u
#define ORBIT_LOCK_SLOT_F_KNOWN 0x1u

/*
 * One slot: 1,024 bytes, cache-line aligned. Every field is an atomic of
 * its declared fixed-width type (the bytes as 8-byte words): a lookup
 * copies a slot while a mutator may rewrite it, and the seq protocol
 * discards such a copy, so the race itself must be defined. All of these
 * are lock-free plain loads and stores of the sizes the layout always had
 * (asserted below): the bytes in SHM did not change (layout version 3).
 */
struct orbit_lock_slot {
	_Atomic uint32_t seq;	/* odd while being written */
	_Atomic uint32_t state; /* enum orbit_lock_slot_state */
	_Atomic uint32_t hash;	/* low 32 bits of the key hash */
	_Atomic uint16_t ns_len;
	_Atomic uint16_t label_len;
	_Atomic uint16_t owner_len;
	_Atomic uint16_t flags; /* ORBIT_LOCK_SLOT_F_* of the acquisition */
	_Atomic uint32_t holder_pid;
	_Atomic uint64_t token;
	_Atomic uint64_t deadline_ns;	     /* CLOCK_MONOTONIC absolute */
	_Atomic uint64_t holder_start_ticks; /* /proc/<pid>/stat field 22 */
	_Atomic uint64_t holder_pidfs_ino;   /* the holder's pidfs inode (0: no pidfs) */
	_Atomic uint32_t holder_row;	     /* FREE_ON_DEATH: the holder's member row (else 0) */
	_Atomic uint32_t holder_gen;	     /* FREE_ON_DEATH: that row's generation (else 0) */
	/* ns | label | owner, byte i in word i / 8 at bit 8 * (i % 8) (little-endian
	 * memory order: the byte string as a plain copy would lay it out) */
	_Atomic uint64_t key_words[ORBIT_LOCK_BYTES_MAX / 8];
};

_Static_assert(offsetof(struct orbit_lock_table_hdr, next_token) == 64, "line 1");
_Static_assert(offsetof(struct orbit_lock_table_hdr, mutex) == 128, "line 2");
_Static_assert(offsetof(struct orbit_lock_table_hdr, ctrl_off) == 24, "ctrl_off");
_Static_assert(offsetof(struct orbit_lock_table_hdr, expiry_ns) == 104, "expiry_ns");
_Static_assert(sizeof(pthread_mutex_t) <= 128, "mutex fits");
_Static_assert(sizeof(struct orbit_lock_table_hdr) == 512, "table header size");
/* The slot layout of version 3, field by field (the atomics did not move a byte). */
_Static_assert(offsetof(struct orbit_lock_slot, state) == 4, "state");
_Static_assert(offsetof(struct orbit_lock_slot, hash) == 8, "hash");
_Static_assert(offsetof(struct orbit_lock_slot, ns_len) == 12, "ns_len");
_Static_assert(offsetof(struct orbit_lock_slot, label_len) == 14, "label_len");
_Static_assert(offsetof(struct orbit_lock_slot, owner_len) == 16, "owner_len");
_Static_assert(offsetof(struct orbit_lock_slot, flags) == 18, "flags");
_Static_assert(offsetof(struct orbit_lock_slot, holder_pid) == 20, "holder_pid");
_Static_assert(offsetof(struct orbit_lock_slot, token) == 24, "token");
_Static_assert(offsetof(struct orbit_lock_slot, deadline_ns) == 32, "deadline");
_Static_assert(offsetof(struct orbit_lock_slot, holder_start_ticks) == 40, "ticks");
_Static_assert(offsetof(struct orbit_lock_slot, holder_pidfs_ino) == 48, "pidfs word");
_Static_assert(offsetof(struct orbit_lock_slot, holder_row) == 56, "member word");
_Static_assert(offsetof(struct orbit_lock_slot, holder_gen) == 60, "member generation");
_Static_assert(offsetof(struct orbit_lock_slot, key_words) == ORBIT_LOCK_SLOT_META_BYTES,
	       "slot meta");
_Static_assert(sizeof(struct orbit_lock_slot) == 1024, "slot size");
_Static_assert(sizeof(_Atomic uint16_t) == 2 && sizeof(_Atomic uint32_t) == 4 &&
		   sizeof(_Atomic uint64_t) == 8,
	       "atomics are plain words of their size");
_Static_assert(ORBIT_LOCK_BYTES_MAX % 8 == 0, "whole words of bytes");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2 &&
		   ATOMIC_SHORT_LOCK_FREE == 2,
	       "SHM atomics must be lock-free (address-free)");

/* Body offset of the control bytes of a table with @slots slots. */
static inline uint64_t orbit__lock_table_ctrl_off(uint32_t slots)
{
	return sizeof(struct orbit_lock_table_hdr) +
	       (uint64_t)slots * sizeof(struct orbit_lock_slot);
}

/* Bytes of the control array: one per slot, whole cache lines. */
static inline uint64_t orbit__lock_table_ctrl_bytes(uint32_t slots)
{
	return ((uint64_t)slots + 63u) & ~(uint64_t)63u;
}

/* Body bytes of a table with @slots slots. */
static inline uint64_t orbit__lock_table_body_bytes(uint32_t slots)
{
	return orbit__lock_table_ctrl_off(slots) + orbit__lock_table_ctrl_bytes(slots);
}

#endif /* ORBIT_SHM_LOCK_TABLE_H */
