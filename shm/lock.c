// SPDX-License-Identifier: MIT
/*
 * shm/lock.c: orbit-lock, the keyed lock table in shared memory (layout in
 * shm/lock_table.h, public API in include/orbit/lock.h). Owns the table's
 * creation and validation, probing, the torn-write-safe slot protocol
 * (tombstone, bytes, occupied, even seq), TTL reclaim, tombstone
 * compaction, fencing tokens, the repair after a mutator died inside the
 * serializer, and the serializer-free lookup. The serializers themselves
 * live in shm/lock_serializer.c.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>
#include <sys/mman.h>

#include <orbit/error.h>
#include <orbit/lock.h>

#include "base/cpu.h"
#include "base/die.h"
#include "base/fork_guard.h"
#include "base/hash.h"
#include "base/lock_backend.h"
#include "base/options.h"
#include "shm/crashpoint.h"
#include "shm/lock_internal.h"
#include "shm/lock_serializer.h"
#include "shm/lock_table.h"
#include "shm/members.h"
#include "shm/segment.h"

/*
 * Lookup retry budget: it counts retries caused by a concurrent rewrite
 * (a slot's seq odd or changed under the copy, move_seq odd or changed
 * under the probe), never slots probed: a miss on a full table with no
 * writer costs one pass over the slots and answers -ENOENT. Retry r (from
 * 1) spins min(r, LOOKUP_SPIN_MAX) orbit__cpu_relax() pauses (no syscall); past
 * LOOKUP_SPIN_RETRIES retries the writer is likely preempted on our CPU,
 * so each further retry yields the CPU once (sched_yield) to let it finish
 * its slot - unless the mutator inside the serializer (dirty_pid) is
 * stopped or gone: then the lookup answers -EAGAIN at once instead of
 * yielding for a writer that cannot run (192 yields took 0.8-1.1 s with a
 * CPU hog sharing the reader's CPU, 2.0-2.5 s with four hogs on 2 cores,
 * while a writer was SIGSTOPped mid-slot; test_stopped_holder_bounded_wait_*
 * in tests/mp/test_lock_kill.c). The stall test reads /proc/<dirty_pid>/stat
 * when the yielding starts and every LOOKUP_STALL_CHECK yields after. A
 * lookup that meets no writer makes no syscall; one that meets a writer
 * killed mid-slot answers -EAGAIN (the next mutation repairs the slot).
 */
#define LOOKUP_RETRIES 256
/* Slots try_acquire's serializer-free -EBUSY probe reads at most (busy_fast()):
 * the slots on the key's path whose control byte carries its hash bits; and
 * control words it scans at most (the first 32 slots of the path: a key
 * further from home is left to the serializer's probe, which scans anyway). */
#define BUSY_FAST_PROBES 8u
#define BUSY_FAST_WORDS 4u
#define LOOKUP_SPIN_RETRIES 64
#define LOOKUP_SPIN_MAX 32
#define LOOKUP_STALL_CHECK 16

struct lookup_budget {
	int left;	       /* retries left (LOOKUP_RETRIES at the start) */
	const orbit_lock_t *l; /* whose dirty_pid names the writer */
};

enum lock_stat {
	ST_ACQUIRED,
	ST_BUSY,
	ST_FULL,
	ST_RENEWED,
	ST_RELEASED,
	ST_FORCE_RELEASED,
	ST_NOT_FOUND,
	ST_WRONG_OWNER,
	ST_RECLAIMED,
	ST_COMPACTIONS,
	ST_LOOKUPS,
	ST_CORRUPT,
	ST_REPAIRS,
	ST_DEAD_FREED,
	ST_N
};

struct orbit_lock {
	struct orbit__lock_base base; /* first: the dispatch's view (base/lock_backend.h) */
	struct orbit_lock *next;      /* in handles (handles_lock) */
	orbit_seg_t seg;
	struct orbit_lock_table_hdr *hdr;
	struct orbit_lock_slot *slots;
	_Atomic uint64_t *ctrl; /* the control words (shm/lock_table.h), nslots / 8 */
	uint32_t nslots;	/* validated copy: never re-read from SHM */
	uint32_t mask;
	uint32_t nwords;	    /* nslots / 8: control words (a power of two) */
	struct orbit__lock_ser ser; /* lock order: ser.local, then the cross-process lock */
	/*
	 * The slot of the entry this handle's last acquisition wrote (or its
	 * last renew/release found): where its release or renew looks first
	 * (find_live()). Read and written only with the serializer held (the
	 * serializer orders it as it orders the table); a hint only: the slot
	 * is checked to hold the key's live entry before it is used.
	 */
	uint32_t last_idx;
	uint64_t ser_wait_ns; /* bound on waiting for the serializer (options) */
	pid_t pid;	      /* the opener: a forked child gets -ECHILD */
	bool readonly;
	uint64_t start_ticks; /* this process's /proc start time */
	uint64_t pidfs_ino;   /* this process's pidfs inode (0: no pidfs) */
	/*
	 * The member tenure ORBIT_LOCK_FREE_ON_DEATH records: (generation << 32)
	 * | (row + 1), 0 while no running agent was started with this handle.
	 * Written by orbit__lock_set_member() (agent start/stop), read by
	 * try_acquire. Relaxed: one word, old or new tenure, both ours.
	 */
	_Atomic uint64_t member;
	/* The sink (orbit__lock_set_sink): called with the serializer held.
	 * Process-local words, never the serializer's: installing or removing
	 * it never waits for another process (a SIGSTOPped one inside the
	 * serializer made an agent's start and stop hang). */
	_Atomic(orbit_transition_sink_fn) sink;
	_Atomic(void *) sink_ctx;
	_Atomic uint32_t sink_calls;	 /* this process's mutations inside a sink call */
	struct orbit_lock_layout layout; /* as opened (validated): the ring follows it */
	_Atomic uint64_t st[ST_N];	 /* counters; relaxed: statistics only */
};

/*
 * Every open handle of this process, for the fork handlers. handles_lock
 * protects the list; it is taken in prepare and released on both sides,
 * so the child sees a consistent list. Lock order: handles_lock alone
 * (never taken with a serializer held).
 */
static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static struct orbit_lock *handles;

static void fork_prepare(void)
{
	pthread_mutex_lock(&handles_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&handles_lock);
}

static void fork_child(void);

static pthread_once_t pid_once = PTHREAD_ONCE_INIT;

static void pid_init(void)
{
	(void)orbit__self_pid(); /* the guard's child handler first: ours sees the child's pid */
	/* ENOMEM at first open: a broken invariant of this process */
	orbit__die_on(pthread_atfork(fork_prepare, fork_parent, fork_child), "pthread_atfork");
}

/*
 * Fork trap: the child shares the parent's open file descriptions, and a
 * flock lives until the last reference to its description goes: the
 * inherited fd AND the inherited mapping (a MAP_SHARED vma holds the
 * file). A child keeping either would keep the parent's flock alive after
 * the parent died holding it. So the child closes every inherited segment
 * fd and replaces each mapping, at the same address, by a read-only
 * mapping of a fresh open of the same name (lookups keep working;
 * mutations say -ECHILD); if the name is gone, or now holds another
 * object, a non-regular file or a shorter file (orbit__seg_reopen()), by
 * zeroes (lookups then say -ENOENT). open, fstat, mmap and close are
 * async-signal-safe.
 */
static void fork_child(void)
{
	for (struct orbit_lock *l = handles; l; l = l->next) {
		int fd;
		void *p = MAP_FAILED;

		if (l->seg.fd >= 0) {
			close(l->seg.fd);
			l->seg.fd = -1;
		}
		if (!l->seg.base || !l->seg.size)
			continue;
		fd = orbit__seg_reopen(&l->seg, true); /* never a FIFO, never another object */
		if (fd >= 0) {
			p = mmap(l->seg.base, l->seg.size, PROT_READ, MAP_SHARED | MAP_FIXED, fd,
				 0);
			close(fd);
		}
		if (p == MAP_FAILED)
			mmap(l->seg.base, l->seg.size, PROT_READ,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	}
	pthread_mutex_unlock(&handles_lock);
}

/*
 * Counters bumped with the serializer held: every mutator of this handle
 * is serialized, so a relaxed load + store is exact and keeps locked
 * instructions off the mutation path.
 */
static void stat_inc(orbit_lock_t *l, enum lock_stat s)
{
	atomic_store_explicit(&l->st[s], atomic_load_explicit(&l->st[s], memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* Counters bumped without the serializer (lookup side): a relaxed RMW. */
static void stat_inc_rmw(orbit_lock_t *l, enum lock_stat s)
{
	atomic_fetch_add_explicit(&l->st[s], 1, memory_order_relaxed);
}

/*
 * HOT: a step of a fast path (try_acquire, renew, release, lookup), forced
 * inline into it: the calls between the small steps of one operation cost
 * more than the steps. The one spelling of always_inline in this file; a
 * slow path calls a step's out-of-line copy instead (the _slow wrappers
 * below), so that the cold code does not carry copies of the hot.
 */
#define HOT static inline __attribute__((always_inline))

/*
 * The key hash (layout version 4): wyhash's multiply-fold. A byte string
 * of up to 16 bytes is two overlapping loads (never a byte past its end:
 * 8-16 bytes two 8-byte loads, 4-7 two 4-byte ones, 1-3 the first,
 * middle and last byte) and one 64x64->128 multiply; longer ones fold 16
 * bytes per multiply. Namespace and label are hashed independently (two
 * multiply chains the CPU runs side by side), each with its length in its
 * seed, where no data word can cancel it, so "ab"+"c" and "a"+"bc"
 * differ, then folded once more with both lengths. One multiply of both
 * parts' raw words (lock-floor3's layout 5) let equal bytes split
 * differently collide and ids shared by namespace and label cancel each
 * other; it is gone. Part of the layout: the fingerprint hashes keys
 * with parts of every length class (orbit__lock_hash_probe()), so a peer hashing
 * differently in any branch is refused.
 */
#define HK0 ORBIT__WY0
#define HK1 ORBIT__WY1
#define HK2 ORBIT__WY2

static inline uint64_t load64(const uint8_t *b)
{
	uint64_t v;

	memcpy(&v, b, 8);
	return v;
}

static inline uint64_t load32(const uint8_t *b)
{
	uint32_t v;

	memcpy(&v, b, 4);
	return v;
}

static inline uint64_t load16(const uint8_t *b)
{
	uint16_t v;

	memcpy(&v, b, 2);
	return v;
}

static inline uint64_t str_hash(const void *p, size_t n, uint64_t seed)
{
	const uint8_t *b = p;
	uint64_t a, c;

	seed ^= HK0 ^ n;
	if (n <= 16) {
		if (n >= 8) {
			a = load64(b);
			c = load64(b + n - 8);
		} else if (n >= 4) {
			a = load32(b);
			c = load32(b + n - 4);
		} else if (n) {
			a = (uint64_t)b[0] << 16 | (uint64_t)b[n >> 1] << 8 | b[n - 1];
			c = 0;
		} else {
			a = c = 0;
		}
	} else {
		size_t i = n;

		for (; i > 16; i -= 16, b += 16)
			seed = orbit__mum(load64(b) ^ HK1, load64(b + 8) ^ seed);
		a = load64(b + i - 16); /* the last 16 bytes (overlapping: n > 16) */
		c = load64(b + i - 8);
	}
	return orbit__mum(a ^ HK1, c ^ seed);
}

HOT uint64_t key_hash(const void *ns, size_t ns_len, const void *label, size_t label_len)
{
	uint64_t x = str_hash(ns, ns_len, HK2), y = str_hash(label, label_len, HK1);

	return orbit__mum(x ^ HK2, y ^ ((uint64_t)ns_len << 32 | label_len));
}

/* The 32 bits the table stores (home slot: the low bits; control byte: the top 7). */
HOT uint32_t hash32(const orbit_lock_key_t *key)
{
	return (uint32_t)key_hash(key->ns, key->ns_len, key->label, key->label_len);
}

uint64_t orbit__lock_hash(const orbit_lock_key_t *key)
{
	return key_hash(key->ns, key->ns_len, key->label, key->label_len);
}

/* /proc/<pid>/stat field 22 (starttime in clock ticks); 0 when unreadable. */
static uint64_t proc_start_ticks(pid_t pid)
{
	uint64_t t;

	return orbit__proc_start_time(pid, &t) ? 0 : t;
}

/* This process's pidfs inode (see orbit__pidfd_ino); 0 without pidfs. */
static uint64_t self_pidfs_ino(pid_t self)
{
	uint64_t ino;

	return orbit__pid_ino(self, &ino) ? 0 : ino;
}

/* ---- argument checks ---------------------------------------------------- */

/* Keys and owners: orbit__lock_check_key/_owner(), shared by every backend (base/lock_backend.h). */

HOT int check_mutator(orbit_lock_t *l)
{
	if (!l)
		return -EINVAL;
	if (l->readonly)
		return -EROFS;
	return orbit__fork_check(l->pid); /* never use the parent's open file description */
}

/* Arguments of a mutation; @owner NULL = force_release; @ttl_ns must be > 0. */
HOT int check_mutation(orbit_lock_t *l, const orbit_lock_key_t *key,
		       const orbit_lock_owner_t *owner, uint64_t ttl_ns)
{
	int rc = check_mutator(l);

	if (!rc)
		rc = orbit__lock_check_key(key);
	if (!rc && owner)
		rc = orbit__lock_check_owner(key, owner);
	if (!rc && !ttl_ns)
		rc = -EINVAL;
	return rc;
}

/* Slot metadata sane? (bytes of a crashed or buggy peer are untrusted) */
static inline bool meta_valid(uint32_t state, uint32_t ns_len, uint32_t label_len,
			      uint32_t owner_len)
{
	if (state == ORBIT_LOCK_SLOT_EMPTY || state == ORBIT_LOCK_SLOT_TOMBSTONE)
		return true;
	if (state != ORBIT_LOCK_SLOT_OCCUPIED)
		return false;
	return label_len && owner_len && ns_len + label_len + owner_len <= ORBIT_LOCK_BYTES_MAX;
}

/*
 * Slot fields are atomics of their declared types (shm/lock_table.h) and
 * every access to them is relaxed, for one of two reasons: a mutator
 * holds the serializer (no other writer; the serializer's hand-over
 * orders it after the previous holder's stores), or a reader copies
 * inside a seq window (a copy racing a rewrite is a stale value the seq
 * re-check discards, never a data race; seq orders the copy: LK-F1/LK-R1
 * on the writer side, LK-A1/LK-F2 on the reader side, as shm/ring.c does
 * for frames). seq and state have their own labelled accesses.
 */
#define SLOT_LD(s, field) atomic_load_explicit(&(s)->field, memory_order_relaxed)
#define SLOT_ST(s, field, v) atomic_store_explicit(&(s)->field, (v), memory_order_relaxed)

/*
 * The first @n key bytes of @s into @dst, in whole words: @dst has room
 * for @n rounded up to 8 (every caller's buffer is ORBIT_LOCK_BYTES_MAX,
 * a multiple of 8, and @n <= it), so no variable-length tail copy.
 */
static inline void key_load(const struct orbit_lock_slot *s, void *dst, size_t n)
{
	uint8_t *d = dst;
	size_t w = 0;

	do { /* n 0 copies one word: room for it in every caller's buffer */
		uint64_t v = SLOT_LD(s, key_words[w]);

		memcpy(d + 8 * w, &v, 8);
	} while (8 * ++w < n);
}

/* The stored key and owner lengths (never more than the slot holds once meta_valid). */
static uint32_t slot_used(const struct orbit_lock_slot *s)
{
	return (uint32_t)SLOT_LD(s, ns_len) + SLOT_LD(s, label_len) + SLOT_LD(s, owner_len);
}

static inline bool slot_valid(const struct orbit_lock_slot *s)
{
	return meta_valid(atomic_load_explicit(&s->state, memory_order_relaxed), SLOT_LD(s, ns_len),
			  SLOT_LD(s, label_len), SLOT_LD(s, owner_len));
}

/*
 * memcmp(a, b, n) inline, as the bits that differ (0: equal): keys and
 * owners are a few to a few dozen bytes, and the libc call cost more than
 * the compare (perf: 7% of a lookup in memcmp and its PLT stub).
 * Whole words, then the last 1-8 bytes by two overlapping loads (of 4 or 2
 * bytes, or the one byte), with no branch on the bytes themselves. Every
 * load of @a lies inside one of the 8-byte words counted from @a: a
 * lookup compares the copy it has just stored word by word, and a load
 * across two of those stores would wait for them to reach the cache
 * instead of being forwarded.
 */
HOT uint64_t bytes_diff(const void *a, const void *b, size_t n)
{
	const uint8_t *x = a, *y = b;
	uint64_t d = 0;

	for (; n > 8; n -= 8, x += 8, y += 8)
		d |= load64(x) ^ load64(y);
	if (n >= 4)
		d |= (load32(x) ^ load32(y)) | (load32(x + n - 4) ^ load32(y + n - 4));
	else if (n >= 2) /* 2-3 bytes: the first two and the last two cover them */
		d |= (load16(x) ^ load16(y)) | (load16(x + n - 2) ^ load16(y + n - 2));
	else if (n)
		d |= (uint64_t)(x[0] ^ y[0]);
	return d;
}

/* @b (ns | label | ...) holds @k's namespace and label. */
HOT bool key_bytes_eq(const uint8_t *b, const orbit_lock_key_t *k)
{
	return (bytes_diff(b, k->ns, k->ns_len) |
		bytes_diff(b + k->ns_len, k->label, k->label_len)) == 0;
}

/* @n (<= 16 or any) bytes from @s to @d: short ones inline, without a libc call. */
static inline void copy_bytes(uint8_t *d, const uint8_t *s, size_t n)
{
	if (n > 16) {
		memcpy(d, s, n);
	} else if (n >= 8) {
		uint64_t a = load64(s), b = load64(s + n - 8);

		memcpy(d, &a, 8);
		memcpy(d + n - 8, &b, 8);
	} else if (n >= 4) {
		uint32_t a = (uint32_t)load32(s), b = (uint32_t)load32(s + n - 4);

		memcpy(d, &a, 4);
		memcpy(d + n - 4, &b, 4);
	} else if (n) {
		d[0] = s[0];
		d[n >> 1] = s[n >> 1];
		d[n - 1] = s[n - 1];
	}
}

/*
 * A mutation's key (and owner) as the slot stores them: ns | label |
 * owner in 8-byte words, the last word's tail zero. Built once per
 * operation: the probe compares it word by word with the slots, and
 * slot_write() stores it as it is.
 */
struct keyimg {
	uint32_t keyb;	/* ns_len + label_len */
	uint32_t total; /* keyb + owner bytes (0 without an owner) */
	uint64_t w[ORBIT_LOCK_BYTES_MAX / 8];
};

/* @k's bytes, then @olen owner bytes (lengths checked by the caller: <= the max). */
HOT void keyimg_build(struct keyimg *ki, const orbit_lock_key_t *k, const void *owner, size_t olen)
{
	uint8_t *b = (uint8_t *)ki->w;

	ki->keyb = (uint32_t)(k->ns_len + k->label_len);
	ki->total = ki->keyb + (uint32_t)olen;
	/* the copies below write every byte before total: only the last word's tail
	 * needs zeroes (total >= 1: a label is never empty) */
	ki->w[(ki->total - 1) / 8] = 0;
	copy_bytes(b, k->ns, k->ns_len);
	copy_bytes(b + k->ns_len, k->label, k->label_len);
	copy_bytes(b + ki->keyb, owner, olen);
}

/* The first @r (1..7) bytes of a word in memory order. */
static inline uint64_t head_mask(uint32_t r)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return ~0ull << (64 - 8 * r);
#else
	return ~0ull >> (64 - 8 * r);
#endif
}

/* Serializer held: the first @n stored bytes of @s equal the image's. */
static inline bool slot_words_eq(const struct orbit_lock_slot *s, const uint64_t *img, uint32_t n)
{
	uint32_t w;

	for (w = 0; w < n / 8; w++)
		if (SLOT_LD(s, key_words[w]) != img[w])
			return false;
	return n % 8 == 0 || !((SLOT_LD(s, key_words[w]) ^ img[w]) & head_mask(n % 8));
}

/* Serializer held, @s valid: its key bytes compared with the image's. */
HOT bool slot_has_key(const struct orbit_lock_slot *s, uint32_t h32, const orbit_lock_key_t *k,
		      const struct keyimg *ki)
{
	return SLOT_LD(s, hash) == h32 && SLOT_LD(s, ns_len) == k->ns_len &&
	       SLOT_LD(s, label_len) == k->label_len && slot_words_eq(s, ki->w, ki->keyb);
}

/* Serializer held, @s valid and holding the image's key: its owner bytes compared too. */
HOT bool slot_has_owner(const struct orbit_lock_slot *s, const struct keyimg *ki)
{
	return SLOT_LD(s, owner_len) == ki->total - ki->keyb && slot_words_eq(s, ki->w, ki->total);
}

static uint64_t slot_deadline(const struct orbit_lock_slot *s)
{
	return SLOT_LD(s, deadline_ns);
}

/* Serializer held (or the checker), @s valid: the entry it holds. */
static void slot_to_entry(const struct orbit_lock_slot *s, uint32_t idx, struct orbit_lock_entry *e,
			  uint64_t now)
{
	uint32_t n = slot_used(s);

	e->token = SLOT_LD(s, token);
	e->deadline_ns = slot_deadline(s);
	e->holder_start_ticks = SLOT_LD(s, holder_start_ticks);
	e->holder_pidfs_ino = SLOT_LD(s, holder_pidfs_ino);
	e->holder_pid = SLOT_LD(s, holder_pid);
	e->slot_idx = idx;
	e->ns_len = SLOT_LD(s, ns_len);
	e->label_len = SLOT_LD(s, label_len);
	e->owner_len = SLOT_LD(s, owner_len);
	e->flags = SLOT_LD(s, flags);
	e->expired = e->deadline_ns <= now;
	key_load(s, e->bytes, n <= ORBIT_LOCK_BYTES_MAX ? n : 0);
}

/* ---- the slot write protocol (serializer held) -------------------------- */

/* Open a slot for writing: seq odd before any other byte changes. */
static uint32_t slot_begin(struct orbit_lock_slot *s)
{
	/* relaxed: only serializer holders write seq; the fence orders it */
	uint32_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);

	atomic_store_explicit(&s->seq, seq | 1u, memory_order_relaxed);
	/* LK-F1: release fence, pairs with LK-F2 in read_meta(): seq odd before the bytes */
	atomic_thread_fence(memory_order_release);
	return seq | 1u;
}

static void slot_end(struct orbit_lock_slot *s, uint32_t odd_seq)
{
	/* LK-R1: release, pairs with LK-A1 in read_meta(): bytes before the even seq */
	atomic_store_explicit(&s->seq, odd_seq + 1u, memory_order_release);
}

static void slot_set_state(struct orbit_lock_slot *s, uint32_t state)
{
	/* LK-R2: release, pairs with LK-A6 in repair(): every byte before OCCUPIED
	 * for a repairer after a crash (lookups are ordered by seq, LK-R1/LK-A1) */
	atomic_store_explicit(&s->state, state, memory_order_release);
}

/* ---- control bytes (shm/lock_table.h) ---------------------------------- */

#define CW_LSB 0x0101010101010101ull
#define CW_MSB 0x8080808080808080ull
#define CW_LO7 0x7f7f7f7f7f7f7f7full

/* The MSB of every byte of @x that is zero (exact: no borrow between bytes). */
static inline uint64_t zero_bytes(uint64_t x)
{
	return ~(((x & CW_LO7) + CW_LO7) | x | CW_LO7);
}

/* The MSB of every byte of @w no writer stores (0x02-0x7f: corrupt). */
static inline uint64_t invalid_bytes(uint64_t w)
{
	return ~w & ((w & CW_LO7) + 0x7e7e7e7e7e7e7e7eull) & CW_MSB;
}

/* Control word @wi for a reader without the serializer. */
static inline uint64_t ctrl_load(const orbit_lock_t *l, uint32_t wi)
{
	/* LK-A7: acquire, pairs with LK-R6 in ctrl_set(): a slot that left
	 * OCCUPIED before its byte said so is read in that newer state */
	return atomic_load_explicit(&l->ctrl[wi], memory_order_acquire);
}

/* Serializer held: slot @i's control byte. */
static inline uint32_t ctrl_get(const orbit_lock_t *l, uint32_t i)
{
	/* relaxed: only serializer holders write the control words */
	return (uint32_t)(atomic_load_explicit(&l->ctrl[i >> 3], memory_order_relaxed) >>
			  (8 * (i & 7))) &
	       0xffu;
}

/* Serializer held: set slot @i's control byte to @c. */
static inline void ctrl_set(orbit_lock_t *l, uint32_t i, uint32_t c)
{
	_Atomic uint64_t *p = &l->ctrl[i >> 3];
	unsigned sh = 8 * (i & 7);
	/* relaxed load: only serializer holders write the control words */
	uint64_t w = atomic_load_explicit(p, memory_order_relaxed);

	w = (w & ~(0xffull << sh)) | (uint64_t)(c & 0xffu) << sh;
	/* LK-R6: release, pairs with LK-A7 in ctrl_load(): the slot's earlier
	 * changes (it left OCCUPIED) before its new byte */
	atomic_store_explicit(p, w, memory_order_release);
}

/* The control byte a slot in @state with @hash has. */
static inline uint32_t ctrl_of(uint32_t state, uint32_t hash)
{
	return state == ORBIT_LOCK_SLOT_OCCUPIED    ? ORBIT_LOCK_CTRL_TAG(hash)
	       : state == ORBIT_LOCK_SLOT_TOMBSTONE ? ORBIT_LOCK_CTRL_TOMBSTONE
						    : ORBIT_LOCK_CTRL_EMPTY;
}

/*
 * Which bytes of control word number @k of a probe from @home (word
 * (home / 8 + k) mod nwords, k = 0..nwords) are on the path not yet
 * visited: from home's byte in the first word; the same word's bytes
 * before home last.
 */
static inline uint64_t path_bytes(const orbit_lock_t *l, uint32_t home, uint32_t k)
{
	uint64_t from = ~0ull << (8 * (home & 7));

	return k == 0 ? from : k == l->nwords ? ~from : ~0ull;
}

static inline uint32_t path_word(const orbit_lock_t *l, uint32_t home, uint32_t k)
{
	return ((home >> 3) + k) & (l->nwords - 1);
}

struct slot_content {
	uint32_t hash;
	const struct keyimg *img; /* ns | label | owner */
	uint32_t ns_len, label_len;
	uint64_t token;
	uint64_t deadline_ns;
	uint32_t pid;
	uint64_t start_ticks;
	uint64_t pidfs_ino;
	uint16_t flags;	   /* ORBIT_LOCK_SLOT_F_* */
	uint32_t row, gen; /* the holder's member tenure (FREE_ON_DEATH), else 0 */
};

/*
 * Control byte OCCUPIED first (a reader then reads the slot, and waits
 * for its odd seq), then tombstone, bytes, occupied, even seq: a kill
 * anywhere leaves no torn entry. @idx is never an OCCUPIED slot.
 */
HOT void slot_write(orbit_lock_t *l, uint32_t idx, const struct slot_content *c)
{
	struct orbit_lock_slot *s = &l->slots[idx];
	uint32_t seq, nwords = (c->img->total + 7) / 8;

	ctrl_set(l, idx, ORBIT_LOCK_CTRL_TAG(c->hash));
	/* a kill here leaves an OCCUPIED byte over a slot that is not: repair() rebuilds it */
	ORBIT_CRASHPOINT("lock.after_ctrl_set");
	seq = slot_begin(s);
	slot_set_state(s, ORBIT_LOCK_SLOT_TOMBSTONE);
	ORBIT_CRASHPOINT("lock.after_tombstone");
	/* relaxed stores: published by LK-R1 (seq) and LK-R2 (state) */
	SLOT_ST(s, hash, c->hash);
	SLOT_ST(s, ns_len, (uint16_t)c->ns_len);
	SLOT_ST(s, label_len, (uint16_t)c->label_len);
	SLOT_ST(s, owner_len, (uint16_t)(c->img->total - c->img->keyb));
	SLOT_ST(s, flags, c->flags);
	SLOT_ST(s, holder_pid, c->pid);
	SLOT_ST(s, token, c->token);
	SLOT_ST(s, deadline_ns, c->deadline_ns);
	SLOT_ST(s, holder_start_ticks, c->start_ticks);
	SLOT_ST(s, holder_pidfs_ino, c->pidfs_ino);
	SLOT_ST(s, holder_row, c->row);
	SLOT_ST(s, holder_gen, c->gen);
	for (uint32_t w = 0; w < nwords; w++) {
		if (w == nwords / 2)
			ORBIT_CRASHPOINT("lock.mid_bytes");
		SLOT_ST(s, key_words[w], c->img->w[w]);
	}
	ORBIT_CRASHPOINT("lock.before_occupied");
	slot_set_state(s, ORBIT_LOCK_SLOT_OCCUPIED);
	ORBIT_CRASHPOINT("lock.after_occupied");
	slot_end(s, seq);
}

/* slot_write() out of line, for the slow paths (compaction). */
static __attribute__((noinline)) void slot_write_slow(orbit_lock_t *l, uint32_t idx,
						      const struct slot_content *c)
{
	slot_write(l, idx, c);
}

/*
 * Serializer held: slot @idx becomes @state (TOMBSTONE or EMPTY) in one
 * seq window, then its control byte says so (never before: LK-R6).
 */
static void slot_mark(orbit_lock_t *l, uint32_t idx, uint32_t state)
{
	struct orbit_lock_slot *s = &l->slots[idx];
	uint32_t seq = slot_begin(s);

	slot_set_state(s, state);
	slot_end(s, seq);
	ctrl_set(l, idx, ctrl_of(state, 0));
}

static void tombs_add(orbit_lock_t *l, int d)
{
	/* relaxed: serializer held; a heuristic count repaired by repair() */
	uint32_t t = atomic_load_explicit(&l->hdr->tombstones, memory_order_relaxed);

	atomic_store_explicit(&l->hdr->tombstones, d < 0 && t == 0 ? 0 : t + (uint32_t)d,
			      memory_order_relaxed);
}

static uint32_t slot_state(const struct orbit_lock_slot *s)
{
	/* relaxed: serializer held (mutators) - no concurrent writer */
	return atomic_load_explicit(&s->state, memory_order_relaxed);
}

/*
 * Remove an entry: seq odd, TOMBSTONE, even; then trailing tombstones -> EMPTY.
 * The neighbours' states come from their control bytes (ctrl EMPTY implies
 * the slot is EMPTY, ctrl TOMBSTONE that it is not OCCUPIED: shm/lock_table.h)
 * and are confirmed by the slot's state word before a slot becomes EMPTY: a
 * byte scribbled EMPTY over the next slot's live entry would otherwise make
 * this one EMPTY and cut that entry's path (a lookup -ENOENT for a held key,
 * a second acquirer placing a second entry). The disagreeing byte is left
 * for the next probe, which rebuilds the bytes.
 */
HOT void slot_remove(orbit_lock_t *l, uint32_t idx)
{
	struct orbit_lock_slot *s = &l->slots[idx];
	/*
	 * A tombstone followed by EMPTY ends no probe chain that the EMPTY does
	 * not already end, so it may become EMPTY even with lookups running;
	 * so an entry followed by EMPTY becomes EMPTY in one seq window (what
	 * TOMBSTONE then EMPTY left, one window and four header words fewer).
	 * A kill inside leaves seq odd and state not OCCUPIED: repair() makes
	 * it a TOMBSTONE, as when killed inside the TOMBSTONE window.
	 */
	uint32_t next = (idx + 1) & l->mask;
	bool last = ctrl_get(l, next) == ORBIT_LOCK_CTRL_EMPTY &&
		    slot_state(&l->slots[next]) == ORBIT_LOCK_SLOT_EMPTY;
	uint32_t seq = slot_begin(s);

	slot_set_state(s, last ? ORBIT_LOCK_SLOT_EMPTY : ORBIT_LOCK_SLOT_TOMBSTONE);
	ORBIT_CRASHPOINT("lock.remove_after_tombstone");
	slot_end(s, seq);
	ctrl_set(l, idx, last ? ORBIT_LOCK_CTRL_EMPTY : ORBIT_LOCK_CTRL_TOMBSTONE);
	if (!last) { /* the next slot is not EMPTY: no tombstone before it may become EMPTY */
		tombs_add(l, 1);
		return;
	}
	idx = (idx - 1) & l->mask; /* the tombstones before it, if any */
	while (ctrl_get(l, (idx + 1) & l->mask) == ORBIT_LOCK_CTRL_EMPTY &&
	       ctrl_get(l, idx) == ORBIT_LOCK_CTRL_TOMBSTONE &&
	       slot_state(&l->slots[idx]) == ORBIT_LOCK_SLOT_TOMBSTONE) {
		slot_mark(l, idx, ORBIT_LOCK_SLOT_EMPTY);
		tombs_add(l, -1);
		idx = (idx - 1) & l->mask;
	}
}

/* slot_remove() out of line, for the slow paths (reclaims, the slot-by-slot probe). */
static __attribute__((noinline)) void slot_remove_slow(orbit_lock_t *l, uint32_t idx)
{
	slot_remove(l, idx);
}

static uint64_t bump_revision(orbit_lock_t *l)
{
	/* relaxed load: serializer held; LK-R3: release, pairs with LK-A3 in
	 * orbit_lock_state_revision(): the change before its revision */
	uint64_t r = atomic_load_explicit(&l->hdr->state_revision, memory_order_relaxed) + 1;

	atomic_store_explicit(&l->hdr->state_revision, r, memory_order_release);
	return r;
}

static void publish_to_sink(orbit_lock_t *l, uint32_t type, uint64_t token, uint64_t deadline,
			    uint64_t rev, const void *ns, uint32_t ns_len, const void *label,
			    uint32_t label_len, const void *owner, uint32_t owner_len);

static inline void publish(orbit_lock_t *l, uint32_t type, uint64_t token, uint64_t deadline,
			   uint64_t rev, const void *ns, uint32_t ns_len, const void *label,
			   uint32_t label_len, const void *owner, uint32_t owner_len)
{
	/* relaxed: the no-sink fast path; a sink installed meanwhile is a
	 * mutation in flight finishing without it (as before the install) */
	if (atomic_load_explicit(&l->sink, memory_order_relaxed))
		publish_to_sink(l, type, token, deadline, rev, ns, ns_len, label, label_len, owner,
				owner_len);
}

static void publish_to_sink(orbit_lock_t *l, uint32_t type, uint64_t token, uint64_t deadline,
			    uint64_t rev, const void *ns, uint32_t ns_len, const void *label,
			    uint32_t label_len, const void *owner, uint32_t owner_len)
{
	struct orbit_transition t = {
		.type = type,
		.writer_pid = (uint32_t)l->pid,
		.fencing_token = token,
		.deadline_ns = deadline,
		.state_revision = rev,
		.ns = ns,
		.ns_len = ns_len,
		.label = label,
		.label_len = label_len,
		.owner = owner,
		.owner_len = owner_len,
	};

	orbit_transition_sink_fn fn;

	/* LK-K1: seq_cst count, then seq_cst re-load, pairs with LK-K2 in
	 * orbit__lock_set_sink(): either the remover sees us counted and waits,
	 * or we see its NULL; LK-K6: the load is also an acquire, pairs with
	 * LK-K3: the ctx stored before the sink */
	atomic_fetch_add_explicit(&l->sink_calls, 1, memory_order_seq_cst);
	fn = atomic_load_explicit(&l->sink, memory_order_seq_cst);
	if (fn)
		fn(atomic_load_explicit(&l->sink_ctx, memory_order_relaxed), &t);
	/* LK-K4: release, pairs with LK-K5: our last use of ctx before "done" */
	atomic_fetch_sub_explicit(&l->sink_calls, 1, memory_order_release);
}

/*
 * Reclaim an entry that ended without its holder (expired, or its holder
 * proved dead: @st says which counter): event first, then the table commit.
 */
static void reclaim_as(orbit_lock_t *l, uint32_t idx, enum lock_stat st)
{
	uint64_t rev = atomic_load_explicit(&l->hdr->state_revision, memory_order_relaxed) + 1;
	struct orbit_lock_entry e;

	slot_to_entry(&l->slots[idx], idx, &e, 0);
	publish(l, ORBIT_TRANSITION_RECLAIM, e.token, 0, rev, e.bytes, e.ns_len, e.bytes + e.ns_len,
		e.label_len, e.bytes + e.ns_len + e.label_len, e.owner_len);
	ORBIT_CRASHPOINT("lock.reclaim_after_publish");
	slot_remove_slow(l, idx);
	bump_revision(l);
	stat_inc(l, st);
}

static void reclaim(orbit_lock_t *l, uint32_t idx)
{
	reclaim_as(l, idx, ST_RECLAIMED);
}

/*
 * Serializer held: every control byte and the tombstone count from the
 * slots' states, clearing (as corrupt) a slot no mutator could have left:
 * an unknown state, or OCCUPIED with lengths that do not fit. After a
 * repair, and when a mutator finds the control bytes disagree with the
 * slots (only corrupt bytes can: shm/lock_table.h).
 */
static void ctrl_rebuild(orbit_lock_t *l)
{
	uint32_t tombs = 0;

	for (uint32_t wi = 0; wi < l->nwords; wi++) {
		uint64_t w = 0;

		for (uint32_t b = 0; b < 8; b++) {
			uint32_t i = wi * 8 + b;
			struct orbit_lock_slot *s = &l->slots[i];
			uint32_t st = slot_state(s);

			if (!slot_valid(s)) {
				stat_inc(l, ST_CORRUPT);
				uint32_t seq = slot_begin(s);

				slot_set_state(s, ORBIT_LOCK_SLOT_TOMBSTONE);
				slot_end(s, seq);
				st = ORBIT_LOCK_SLOT_TOMBSTONE;
			}
			tombs += st == ORBIT_LOCK_SLOT_TOMBSTONE;
			w |= (uint64_t)ctrl_of(st, SLOT_LD(s, hash)) << (8 * b);
		}
		/* LK-R6: release, pairs with LK-A7 in ctrl_load() */
		atomic_store_explicit(&l->ctrl[wi], w, memory_order_release);
		/* a kill here leaves the bytes half rebuilt (and move_seq odd when a
		 * probe rebuilds): the next mutator's repair() rebuilds them all */
		if (wi == 0)
			ORBIT_CRASHPOINT("lock.rebuild_mid");
	}
	/* relaxed: serializer held */
	atomic_store_explicit(&l->hdr->tombstones, tombs, memory_order_relaxed);
}

/*
 * Serializer held: expiry_ns becomes the earliest deadline of the table's
 * entries (UINT64_MAX: none), after reclaiming every entry expired at
 * @now when @reclaim_expired. Returns the number reclaimed. Reads a slot
 * only where its control byte is not EMPTY or TOMBSTONE.
 */
static uint32_t rehint(orbit_lock_t *l, uint64_t now, bool reclaim_expired)
{
	uint64_t min = UINT64_MAX;
	uint32_t n = 0;

	for (uint32_t i = 0; i < l->nslots; i++) {
		struct orbit_lock_slot *s = &l->slots[i];
		uint32_t c = ctrl_get(l, i);
		uint64_t d;

		if (c == ORBIT_LOCK_CTRL_EMPTY || c == ORBIT_LOCK_CTRL_TOMBSTONE ||
		    slot_state(s) != ORBIT_LOCK_SLOT_OCCUPIED || !slot_valid(s))
			continue;
		d = slot_deadline(s);
		if (reclaim_expired && d <= now) {
			reclaim(l, i);
			n++;
		} else if (d < min) {
			min = d;
		}
	}
	/* relaxed: serializer held (a lower bound: shm/lock_table.h) */
	atomic_store_explicit(&l->hdr->expiry_ns, min, memory_order_relaxed);
	return n;
}

/* Serializer held: an entry with deadline @d is about to be written. */
static void hint_lower(orbit_lock_t *l, uint64_t d)
{
	/* relaxed: serializer held; lowered before the slot write, so a kill
	 * leaves it at most every deadline */
	if (d < atomic_load_explicit(&l->hdr->expiry_ns, memory_order_relaxed))
		atomic_store_explicit(&l->hdr->expiry_ns, d, memory_order_relaxed);
}

/*
 * Serializer held, the clock read @now: once the earliest deadline has
 * passed, one sweep reclaims every expired entry of the table (what the
 * probe path did for the entries it read, before the control bytes let
 * probes skip them) and sets the next trigger.
 */
static void maybe_sweep(orbit_lock_t *l, uint64_t now)
{
	/* relaxed: serializer held */
	if (now >= atomic_load_explicit(&l->hdr->expiry_ns, memory_order_relaxed))
		rehint(l, now, true);
}

/* ---- repair and compaction (serializer held) ---------------------------- */

static uint32_t home_of(const orbit_lock_t *l, uint32_t hash)
{
	return hash & l->mask;
}

static uint32_t dist(const orbit_lock_t *l, uint32_t from, uint32_t to)
{
	return (to - from) & l->mask;
}

/* Serializer held (or the checker), both valid: one key in both? */
static bool same_key(const struct orbit_lock_slot *a, const struct orbit_lock_slot *b)
{
	uint8_t ab[ORBIT_LOCK_BYTES_MAX], bb[ORBIT_LOCK_BYTES_MAX];
	size_t n = (size_t)SLOT_LD(a, ns_len) + SLOT_LD(a, label_len);

	if (SLOT_LD(a, hash) != SLOT_LD(b, hash) || SLOT_LD(a, ns_len) != SLOT_LD(b, ns_len) ||
	    SLOT_LD(a, label_len) != SLOT_LD(b, label_len))
		return false;
	key_load(a, ab, n);
	key_load(b, bb, n);
	return memcmp(ab, bb, n) == 0;
}

/*
 * The previous serializer holder died inside. Each slot it left open (odd
 * seq) is completed when already OCCUPIED (every byte was written before
 * LK-R2) and rolled back to TOMBSTONE otherwise; a compaction cut between
 * "copy written" and "old tombstoned" leaves a key twice: the copy nearer
 * its home stays. Counts are recomputed, move_seq made even.
 *
 * The dead mutator may have published a frame with state_revision + 1 (a
 * mutation publishes before its commit and bumps the revision after it)
 * for a change that never committed, or committed without its bump. So
 * the repair burns that revision - the next change publishes with + 2,
 * never a revision a consumer already saw - and publishes a REPAIR frame
 * carrying it: consumers rebuild their view from the table.
 */
static void repair(orbit_lock_t *l)
{
	for (uint32_t i = 0; i < l->nslots; i++) {
		struct orbit_lock_slot *s = &l->slots[i];
		/* LK-A6: relaxed, pairs with LK-R2: serializer held; the dead writer's
		 * stores are ordered before us by the serializer's kernel/pthread
		 * hand-over, and its state store after its bytes by LK-R2 */
		uint32_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);

		if (!(seq & 1u) && slot_valid(s))
			continue;
		if (!(seq & 1u)) {
			seq = slot_begin(s);
			stat_inc(l, ST_CORRUPT);
		}
		if (!(slot_state(s) == ORBIT_LOCK_SLOT_OCCUPIED && slot_valid(s)))
			slot_set_state(s, ORBIT_LOCK_SLOT_TOMBSTONE);
		slot_end(s, seq);
	}
	for (uint32_t i = 0; i < l->nslots; i++) {
		struct orbit_lock_slot *a = &l->slots[i];

		if (slot_state(a) != ORBIT_LOCK_SLOT_OCCUPIED)
			continue;
		for (uint32_t j = i + 1; j < l->nslots; j++) {
			struct orbit_lock_slot *b = &l->slots[j];
			uint32_t drop;

			if (slot_state(b) != ORBIT_LOCK_SLOT_OCCUPIED || !same_key(a, b))
				continue;
			drop = dist(l, home_of(l, SLOT_LD(a, hash)), i) <=
				       dist(l, home_of(l, SLOT_LD(b, hash)), j)
				   ? j
				   : i;
			slot_mark(l, drop, ORBIT_LOCK_SLOT_TOMBSTONE);
			if (drop == i)
				break;
		}
	}
	ctrl_rebuild(l); /* the dead mutator may have left bytes ahead of or behind its slots */
	rehint(l, 0, false);
	uint64_t m = atomic_load_explicit(&l->hdr->move_seq, memory_order_relaxed);
	if (m & 1u)
		/* LK-R4: release, pairs with LK-A4 in lookup(): slots before the even move_seq */
		atomic_store_explicit(&l->hdr->move_seq, m + 1, memory_order_release);
	atomic_fetch_add_explicit(&l->hdr->repairs, 1, memory_order_relaxed); /* counter */
	stat_inc(l, ST_REPAIRS);
	/* relaxed load: serializer held. Event first, then the commit (LK-R3). */
	publish(l, ORBIT_TRANSITION_REPAIR, 0, 0,
		atomic_load_explicit(&l->hdr->state_revision, memory_order_relaxed) + 1, NULL, 0,
		NULL, 0, NULL, 0);
	ORBIT_CRASHPOINT("lock.repair_after_publish");
	bump_revision(l);
}

/*
 * No holder died, yet header words may hold values no live mutator can
 * leave (random bytes in SHM, a buggy peer): with the serializer held and
 * no compaction running, move_seq must be even and tombstones at most the
 * slot count. Fix what can be validated (counted as corrupt); the other
 * words (next_token, state_revision) have no checkable invariant here.
 */
static void check_hdr_words(orbit_lock_t *l)
{
	/* relaxed: serializer held, no other writer */
	uint64_t m = atomic_load_explicit(&l->hdr->move_seq, memory_order_relaxed);
	uint32_t tombs = 0;

	if (m & 1u) {
		stat_inc(l, ST_CORRUPT);
		/* LK-R4: release, pairs with LK-A4 in lookup(): an even move_seq again */
		atomic_store_explicit(&l->hdr->move_seq, m + 1, memory_order_release);
	}
	if (atomic_load_explicit(&l->hdr->tombstones, memory_order_relaxed) <= l->nslots)
		return;
	stat_inc(l, ST_CORRUPT);
	for (uint32_t i = 0; i < l->nslots; i++)
		tombs += slot_state(&l->slots[i]) == ORBIT_LOCK_SLOT_TOMBSTONE;
	atomic_store_explicit(&l->hdr->tombstones, tombs,
			      memory_order_relaxed); /* serializer held */
}

/*
 * Compaction: move each entry to the first non-occupied slot of its probe
 * path (copy fully, then tombstone the original: a kill in between leaves
 * a duplicate that repair() removes), until no entry can move; then every
 * path is all-occupied, so every tombstone can become EMPTY. Lookups see
 * move_seq odd and retry, because an entry in flight may be missed.
 */
static void compact(orbit_lock_t *l)
{
	uint64_t m = atomic_load_explicit(&l->hdr->move_seq,
					  memory_order_relaxed); /* serializer held */

	atomic_store_explicit(&l->hdr->move_seq, m + 1, memory_order_relaxed);
	/* LK-F3: release fence, pairs with LK-A5 in lookup(): move_seq odd before any move */
	atomic_thread_fence(memory_order_release);
	for (uint32_t pass = 0; pass < l->nslots; pass++) {
		bool moved = false;

		for (uint32_t i = 0; i < l->nslots; i++) {
			struct orbit_lock_slot *s = &l->slots[i];
			uint32_t p;

			if (slot_state(s) != ORBIT_LOCK_SLOT_OCCUPIED)
				continue;
			if (!slot_valid(s)) {
				/*
				 * Lengths no mutator writes (a buggy peer's bytes): never
				 * copy them (slot_write would run past the slot and its
				 * stack image). Cleared as corrupt, like probe_locked().
				 * Found by tests/fuzz/fuzz_lock (corpus/lock/
				 * regress-compact-invalid-lengths).
				 */
				stat_inc(l, ST_CORRUPT);
				slot_mark(l, i, ORBIT_LOCK_SLOT_TOMBSTONE);
				/*
				 * A new hole: an entry checked earlier in this pass may
				 * probe through it (wrapped past the table's end). Pass
				 * again, or the sweep below would make it EMPTY mid-path.
				 */
				moved = true;
				continue;
			}
			for (p = home_of(l, SLOT_LD(s, hash)); p != i; p = (p + 1) & l->mask)
				if (slot_state(&l->slots[p]) != ORBIT_LOCK_SLOT_OCCUPIED)
					break;
			if (p == i)
				continue;
			struct orbit_lock_entry e;

			struct keyimg img;

			slot_to_entry(s, i, &e, 0);
			orbit_lock_key_t k = { e.bytes, e.ns_len, e.bytes + e.ns_len, e.label_len };
			keyimg_build(&img, &k, e.bytes + e.ns_len + e.label_len, e.owner_len);
			struct slot_content c = {
				.hash = SLOT_LD(s, hash),
				.img = &img,
				.ns_len = e.ns_len,
				.label_len = e.label_len,
				.token = e.token,
				.deadline_ns = e.deadline_ns,
				.pid = e.holder_pid,
				.start_ticks = e.holder_start_ticks,
				.pidfs_ino = e.holder_pidfs_ino,
				.flags = e.flags,
				.row = SLOT_LD(s, holder_row),
				.gen = SLOT_LD(s, holder_gen),
			};
			slot_write_slow(l, p, &c);
			ORBIT_CRASHPOINT("lock.compact_after_copy");
			slot_mark(l, i, ORBIT_LOCK_SLOT_TOMBSTONE);
			moved = true;
		}
		if (!moved)
			break;
	}
	for (uint32_t i = 0; i < l->nslots; i++) {
		struct orbit_lock_slot *s = &l->slots[i];

		if (slot_state(s) != ORBIT_LOCK_SLOT_TOMBSTONE)
			continue;
		slot_mark(l, i, ORBIT_LOCK_SLOT_EMPTY);
	}
	atomic_store_explicit(&l->hdr->tombstones, 0, memory_order_relaxed); /* serializer held */
	/* LK-R4: release, pairs with LK-A4 in lookup(): all moves before the even move_seq */
	atomic_store_explicit(&l->hdr->move_seq, m + 2, memory_order_release);
	stat_inc(l, ST_COMPACTIONS);
}

static void maybe_compact(orbit_lock_t *l)
{
	/* relaxed: serializer held */
	if (atomic_load_explicit(&l->hdr->tombstones, memory_order_relaxed) > l->nslots / 4)
		compact(l);
}

/* ---- serializer entry / exit ------------------------------------------- */

/*
 * Take the serializer within @wait_ns (the handle's bound for every public
 * mutation: -EAGAIN past it), repair after a holder that died inside, and
 * mark the table dirty.
 */
HOT int enter_within(orbit_lock_t *l, uint64_t wait_ns)
{
	bool died;
	int rc = orbit__lock_ser_enter(&l->ser, wait_ns, &died);

	if (rc)
		return rc;
	ORBIT_CRASHPOINT("lock.holding_serializer");
	if (died) {
		repair(l);
		orbit__lock_ser_repaired(&l->ser);
	} else {
		check_hdr_words(l);
	}
	/* relaxed: ordered for the next holder by the serializer hand-over */
	atomic_store_explicit(&l->hdr->dirty_pid, (uint32_t)l->pid, memory_order_relaxed);
	return 0;
}

HOT int enter(orbit_lock_t *l)
{
	return enter_within(l, l->ser_wait_ns);
}

HOT void leave(orbit_lock_t *l)
{
	/* relaxed: as in enter() */
	atomic_store_explicit(&l->hdr->dirty_pid, 0, memory_order_relaxed);
	ORBIT_CRASHPOINT("lock.before_unlock");
	orbit__lock_ser_leave(&l->ser);
}

/*
 * The slow probe (serializer held): slot by slot by the slots' own states,
 * as before the control bytes; only after ctrl_rebuild(), when the bytes
 * disagreed with the slots. Reclaims expired entries met on the way (other
 * keys too) and clears corrupt slots (counted). Returns the key's live
 * slot index in *found (or UINT32_MAX) and the first reusable slot in
 * *free_idx (or UINT32_MAX).
 */
static void probe_slots(orbit_lock_t *l, const orbit_lock_key_t *k, const struct keyimg *ki,
			uint32_t h32, uint64_t now, uint32_t *found, uint32_t *free_idx)
{
	uint32_t i = home_of(l, h32);

	*found = UINT32_MAX;
	*free_idx = UINT32_MAX;
	for (uint32_t n = 0; n < l->nslots; n++, i = (i + 1) & l->mask) {
		struct orbit_lock_slot *s = &l->slots[i];
		uint32_t st = slot_state(s);

		if (st == ORBIT_LOCK_SLOT_OCCUPIED && !slot_valid(s)) {
			stat_inc(l, ST_CORRUPT);
			slot_remove_slow(l, i);
			st = slot_state(s);
		} else if (st != ORBIT_LOCK_SLOT_OCCUPIED && st != ORBIT_LOCK_SLOT_TOMBSTONE &&
			   st != ORBIT_LOCK_SLOT_EMPTY) {
			stat_inc(l, ST_CORRUPT);
			slot_mark(l, i, ORBIT_LOCK_SLOT_TOMBSTONE);
			tombs_add(l, 1);
			st = ORBIT_LOCK_SLOT_TOMBSTONE;
		}
		if (st == ORBIT_LOCK_SLOT_OCCUPIED && slot_deadline(s) <= now) {
			reclaim(l, i);
			st = slot_state(s);
		}
		if (st == ORBIT_LOCK_SLOT_EMPTY) {
			if (*free_idx == UINT32_MAX)
				*free_idx = i;
			return;
		}
		if (st == ORBIT_LOCK_SLOT_TOMBSTONE) {
			if (*free_idx == UINT32_MAX)
				*free_idx = i;
			continue;
		}
		if (slot_has_key(s, h32, k, ki)) {
			*found = i;
			return;
		}
	}
}

enum { PROBE_DONE, PROBE_AGAIN, PROBE_DISAGREE };

/*
 * One pass of the fast probe over the control bytes from @k's home, 8
 * slots a word: only slots whose byte carries the key's 7 hash bits are
 * read; the first TOMBSTONE and the EMPTY that ends the path are checked
 * against their slots (the slot a new entry goes to is read anyway).
 * PROBE_AGAIN: it reclaimed the key's expired entry (the path changed),
 * PROBE_DISAGREE: a byte contradicts its slot (corrupt bytes: rebuild).
 */
/*
 * The usual cases of a probe, without the word scan (serializer held): a
 * free home (byte and slot EMPTY), or @k's live entry at home. True when
 * one of them decided (*found, *free_idx set as probe_pass() sets them).
 */
HOT bool probe_home(orbit_lock_t *l, const orbit_lock_key_t *k, const struct keyimg *ki,
		    uint32_t h32, uint64_t now, uint32_t *found, uint32_t *free_idx)
{
	uint32_t home = home_of(l, h32), c = ctrl_get(l, home);
	struct orbit_lock_slot *hs = &l->slots[home];

	if (c == ORBIT_LOCK_CTRL_EMPTY && slot_state(hs) == ORBIT_LOCK_SLOT_EMPTY) {
		*found = UINT32_MAX;
		*free_idx = home;
		return true;
	}
	if (c == ORBIT_LOCK_CTRL_TAG(h32) && slot_state(hs) == ORBIT_LOCK_SLOT_OCCUPIED &&
	    slot_valid(hs) && slot_has_key(hs, h32, k, ki) && slot_deadline(hs) > now) {
		*found = home;
		*free_idx = UINT32_MAX;
		return true;
	}
	return false;
}

static int probe_pass(orbit_lock_t *l, const orbit_lock_key_t *k, const struct keyimg *ki,
		      uint32_t h32, uint64_t now, uint32_t *found, uint32_t *free_idx)
{
	uint32_t home = home_of(l, h32);
	uint64_t tagw = ORBIT_LOCK_CTRL_TAG(h32) * CW_LSB;

	/* no probe_home() again: the caller checked home, and the scan below
	 * starts at home's byte, so it decides those cases too */
	*found = UINT32_MAX;
	*free_idx = UINT32_MAX;
	for (uint32_t kw = 0; kw <= l->nwords; kw++) {
		uint32_t wi = path_word(l, home, kw);
		/* relaxed: serializer held, only holders write the control words */
		uint64_t w = atomic_load_explicit(&l->ctrl[wi], memory_order_relaxed);
		uint64_t empty = zero_bytes(w), tomb = zero_bytes(w ^ CW_LSB);
		uint64_t m = (empty | tomb | zero_bytes(w ^ tagw) | invalid_bytes(w)) &
			     path_bytes(l, home, kw);

		for (; m; m &= m - 1) {
			uint32_t b = (uint32_t)__builtin_ctzll(m) >> 3, i = wi * 8 + b;
			uint64_t bit = 0x80ull << (8 * b);
			struct orbit_lock_slot *s = &l->slots[i];

			if (tomb & bit) {
				if (*free_idx == UINT32_MAX)
					*free_idx = i;
				continue;
			}
			if (empty & bit) {
				if (slot_state(s) != ORBIT_LOCK_SLOT_EMPTY ||
				    (*free_idx != UINT32_MAX &&
				     slot_state(&l->slots[*free_idx]) != ORBIT_LOCK_SLOT_TOMBSTONE))
					return PROBE_DISAGREE;
				if (*free_idx == UINT32_MAX)
					*free_idx = i;
				return PROBE_DONE;
			}
			/* the key's hash bits (or a byte no writer stores) */
			if (!(w & bit) || slot_state(s) != ORBIT_LOCK_SLOT_OCCUPIED ||
			    !slot_valid(s))
				return PROBE_DISAGREE;
			if (!slot_has_key(s, h32, k, ki))
				continue;
			if (slot_deadline(s) <= now) {
				reclaim(l, i);
				return PROBE_AGAIN;
			}
			*found = i;
			return PROBE_DONE;
		}
	}
	/* a full table without the key */
	if (*free_idx != UINT32_MAX &&
	    slot_state(&l->slots[*free_idx]) != ORBIT_LOCK_SLOT_TOMBSTONE)
		return PROBE_DISAGREE;
	return PROBE_DONE;
}

/*
 * Probe for @k (serializer held): the fast probe over the control bytes;
 * when they disagree with the slots (corrupt), they are rebuilt (counted
 * as corrupt) and the slow probe decides. Returns the key's live slot
 * index in *found (or UINT32_MAX) and the first reusable slot in
 * *free_idx (or UINT32_MAX); its expired entry is reclaimed on the way.
 */
static void probe_locked_slow(orbit_lock_t *l, const orbit_lock_key_t *k, const struct keyimg *ki,
			      uint32_t h32, uint64_t now, uint32_t *found, uint32_t *free_idx);

HOT void probe_locked(orbit_lock_t *l, const orbit_lock_key_t *k, const struct keyimg *ki,
		      uint32_t h32, uint64_t now, uint32_t *found, uint32_t *free_idx)
{
	/* the home slot inline; the word scan, reclaims and rebuilds out of line */
	if (!probe_home(l, k, ki, h32, now, found, free_idx))
		probe_locked_slow(l, k, ki, h32, now, found, free_idx);
}

static void probe_locked_slow(orbit_lock_t *l, const orbit_lock_key_t *k, const struct keyimg *ki,
			      uint32_t h32, uint64_t now, uint32_t *found, uint32_t *free_idx)
{
	int rc;

	/* each AGAIN reclaimed an entry: at most nslots of them */
	while ((rc = probe_pass(l, k, ki, h32, now, found, free_idx)) == PROBE_AGAIN)
		;
	if (rc == PROBE_DONE)
		return;
	stat_inc(l, ST_CORRUPT);
	/* relaxed: serializer held; lookups see move_seq odd and retry while the bytes change */
	uint64_t m = atomic_load_explicit(&l->hdr->move_seq, memory_order_relaxed);

	atomic_store_explicit(&l->hdr->move_seq, m + 1, memory_order_relaxed);
	/* LK-F3: release fence, pairs with LK-A5 in lookup(): move_seq odd before the rebuild */
	atomic_thread_fence(memory_order_release);
	ctrl_rebuild(l);
	/* LK-R4: release, pairs with LK-A4 in lookup(): the rebuilt bytes before the even move_seq */
	atomic_store_explicit(&l->hdr->move_seq, m + 2, memory_order_release);
	probe_slots(l, k, ki, h32, now, found, free_idx);
}

/* The whole table: reclaim every expired entry (before saying "full"). */
static uint32_t sweep_expired(orbit_lock_t *l, uint64_t now)
{
	return rehint(l, now, true);
}

/* ---- public operations -------------------------------------------------- */

/* The member word for lease flags @oflags (checked by the dispatch). */
static int acquire_flags(orbit_lock_t *l, uint32_t oflags, uint16_t *flags, uint32_t *row,
			 uint32_t *gen)
{
	uint64_t m;

	*flags = 0;
	*row = *gen = 0;
	if (oflags & ~(uint32_t)ORBIT_LOCK_SLOT_F_KNOWN)
		return -EINVAL;
	if (!(oflags & ORBIT_LOCK_FREE_ON_DEATH))
		return 0;
	/* relaxed: see struct orbit_lock */
	m = atomic_load_explicit(&l->member, memory_order_relaxed);
	if (!m)
		return -EINVAL; /* no running agent names our member tenure */
	*flags = ORBIT_LOCK_SLOT_F_FREE_ON_DEATH;
	*row = (uint32_t)m - 1;
	*gen = (uint32_t)(m >> 32);
	return 0;
}

static int busy_fast(orbit_lock_t *l, const orbit_lock_key_t *k, uint32_t h32, uint64_t ttl_ns,
		     struct orbit_lock_entry *holder);

int orbit__lock_shm_try_acquire(orbit_lock_t *l, const orbit_lock_key_t *key,
				const orbit_lock_owner_t *owner, uint64_t ttl_ns,
				struct orbit_lock_lease *lease, struct orbit_lock_entry *holder)
{
	return orbit__lock_shm_try_acquire_flags(l, key, owner, ttl_ns, 0, lease, holder);
}

int orbit__lock_shm_try_acquire_flags(orbit_lock_t *l, const orbit_lock_key_t *key,
				      const orbit_lock_owner_t *owner, uint64_t ttl_ns,
				      uint32_t oflags, struct orbit_lock_lease *lease,
				      struct orbit_lock_entry *holder)
{
	uint32_t found, free_idx, h32, mrow, mgen;
	uint64_t now, token, rev;
	struct keyimg ki;
	uint16_t flags;
	int rc;

	rc = owner ? check_mutation(l, key, owner, ttl_ns) : -EINVAL;
	if (!rc)
		rc = acquire_flags(l, oflags, &flags, &mrow, &mgen);
	if (rc)
		return rc;
	h32 = hash32(key);
	rc = busy_fast(l, key, h32, ttl_ns, holder);
	if (rc != -EAGAIN)
		return rc; /* -EBUSY without the serializer (or -EINVAL) */
	keyimg_build(&ki, key, owner->bytes, owner->len);
	rc = enter(l);
	if (rc)
		return rc;
	now = orbit__now_mono_ns(); /* the operation's one clock read */
	if (ttl_ns > UINT64_MAX - now) {
		rc = -EINVAL;
		goto out;
	}
	maybe_sweep(l, now);
	probe_locked(l, key, &ki, h32, now, &found, &free_idx);
	if (found != UINT32_MAX) {
		if (holder)
			slot_to_entry(&l->slots[found], found, holder, now);
		stat_inc_rmw(l, ST_BUSY); /* busy_fast() counts without the serializer */
		rc = -EBUSY;
		goto out;
	}
	if (free_idx == UINT32_MAX && sweep_expired(l, now))
		probe_locked_slow(l, key, &ki, h32, now, &found, &free_idx);
	if (free_idx == UINT32_MAX) {
		stat_inc(l, ST_FULL);
		rc = -ENOSPC;
		goto out;
	}
	/* relaxed: serializer held; a kill after this store burns the token */
	token = atomic_load_explicit(&l->hdr->next_token, memory_order_relaxed);
	atomic_store_explicit(&l->hdr->next_token, token + 1, memory_order_relaxed);
	ORBIT_CRASHPOINT("lock.after_token_bump");
	rev = atomic_load_explicit(&l->hdr->state_revision, memory_order_relaxed) + 1;
	publish(l, ORBIT_TRANSITION_ACQUIRE, token, now + ttl_ns, rev, key->ns,
		(uint32_t)key->ns_len, key->label, (uint32_t)key->label_len, owner->bytes,
		(uint32_t)owner->len);
	if (ctrl_get(l, free_idx) == ORBIT_LOCK_CTRL_TOMBSTONE)
		tombs_add(l, -1);
	struct slot_content c = {
		.hash = h32,
		.img = &ki,
		.ns_len = (uint32_t)key->ns_len,
		.label_len = (uint32_t)key->label_len,
		.token = token,
		.deadline_ns = now + ttl_ns,
		.pid = (uint32_t)l->pid,
		.start_ticks = l->start_ticks,
		.pidfs_ino = l->pidfs_ino,
		.flags = flags,
		.row = mrow,
		.gen = mgen,
	};
	hint_lower(l, now + ttl_ns);
	slot_write(l, free_idx, &c);
	l->last_idx = free_idx; /* where its release looks first */
	rev = bump_revision(l);
	if (lease) {
		lease->token = token;
		lease->deadline_ns = now + ttl_ns;
		lease->state_revision = rev;
	}
	stat_inc(l, ST_ACQUIRED);
	maybe_compact(l);
out:
	leave(l);
	return rc;
}

/*
 * Serializer held: would probe_pass() walk from @h32's home past every
 * slot before @i without stopping or reading one? True when each of their
 * control bytes is a TOMBSTONE or another hash's tag: no EMPTY byte (the
 * path's end), no byte of the key's hash bits (its entry, or a duplicate
 * a corrupt path let a second acquirer place nearer home) and none no
 * writer stores (the probe would rebuild). Word by word, no slot read.
 */
static inline bool path_clear(const orbit_lock_t *l, uint32_t h32, uint32_t i)
{
	uint64_t tagw = ORBIT_LOCK_CTRL_TAG(h32) * CW_LSB;
	uint32_t pos = home_of(l, h32), n = dist(l, pos, i);

	while (n) {
		uint32_t b = pos & 7, take = 8 - b < n ? 8 - b : n;
		/* relaxed: serializer held, only holders write the control words */
		uint64_t w = atomic_load_explicit(&l->ctrl[pos >> 3], memory_order_relaxed);
		uint64_t sel = (take == 8 ? ~0ull : (1ull << (8 * take)) - 1) << (8 * b);

		if ((zero_bytes(w) | zero_bytes(w ^ tagw) | invalid_bytes(w)) & sel)
			return false;
		pos = (pos + take) & l->mask;
		n -= take;
	}
	return true;
}

/*
 * Serializer held: does the handle's last slot (l->last_idx) hold @key's
 * live entry, the one probe_locked() would find? Its control byte, state,
 * lengths, hash, key bytes and deadline are what the probe accepts at
 * that slot, and the probe would reach it (path_clear()): a table that
 * broke "one entry per key" (a path cut by corrupt bytes) answers as the
 * probe does. Without the key compares of the walk from home that a long
 * cluster makes costly (90% occupancy: the release's half of the scan).
 */
HOT bool last_holds(orbit_lock_t *l, const orbit_lock_key_t *key, const struct keyimg *ki,
		    uint32_t h32, uint64_t now)
{
	uint32_t i = l->last_idx;
	const struct orbit_lock_slot *s = &l->slots[i]; /* last_idx < nslots: set from probes */

	return ctrl_get(l, i) == ORBIT_LOCK_CTRL_TAG(h32) &&
	       slot_state(s) == ORBIT_LOCK_SLOT_OCCUPIED && slot_valid(s) &&
	       slot_has_key(s, h32, key, ki) && slot_deadline(s) > now && path_clear(l, h32, i);
}

/* Find @key's live entry for renew/release/force_release (serializer held). */
HOT int find_live(orbit_lock_t *l, const orbit_lock_key_t *key, const struct keyimg *ki,
		  uint32_t *idx, uint64_t *now)
{
	uint32_t free_idx, h32 = hash32(key);

	*now = orbit__now_mono_ns(); /* the operation's one clock read */
	maybe_sweep(l, *now);
	if (last_holds(l, key, ki, h32, *now)) {
		*idx = l->last_idx;
		return 0;
	}
	probe_locked(l, key, ki, h32, *now, idx, &free_idx);
	if (*idx == UINT32_MAX) {
		stat_inc(l, ST_NOT_FOUND);
		return -ENOENT;
	}
	l->last_idx = *idx;
	return 0;
}

/*
 * Take the serializer and find @key's live entry, held by the owner of
 * @ki (when it has owner bytes) with @token when given (no owner:
 * anyone's). On failure the serializer is released again.
 */
HOT int enter_owned(orbit_lock_t *l, const orbit_lock_key_t *key, const struct keyimg *ki,
		    uint64_t token, uint32_t *idx, uint64_t *now)
{
	const struct orbit_lock_slot *s;
	int rc = enter(l);

	if (rc)
		return rc;
	rc = find_live(l, key, ki, idx, now);
	if (!rc && ki->total > ki->keyb) {
		s = &l->slots[*idx];
		if (!slot_has_owner(s, ki) || (token && SLOT_LD(s, token) != token)) {
			stat_inc(l, ST_WRONG_OWNER);
			rc = -EPERM;
		}
	}
	if (rc)
		leave(l);
	return rc;
}

int orbit__lock_shm_renew(orbit_lock_t *l, const orbit_lock_key_t *key,
			  const orbit_lock_owner_t *owner, uint64_t token, uint64_t ttl_ns,
			  struct orbit_lock_lease *lease)
{
	struct orbit_lock_slot *s;
	struct keyimg ki;
	uint32_t idx, seq;
	uint64_t now, rev;
	int rc;

	rc = owner ? check_mutation(l, key, owner, ttl_ns) : -EINVAL;
	if (rc)
		return rc;
	keyimg_build(&ki, key, owner->bytes, owner->len);
	rc = enter_owned(l, key, &ki, token, &idx, &now);
	if (rc)
		return rc;
	s = &l->slots[idx];
	if (ttl_ns > UINT64_MAX - now) {
		rc = -EINVAL;
		goto out;
	}
	rev = atomic_load_explicit(&l->hdr->state_revision, memory_order_relaxed) + 1;
	publish(l, ORBIT_TRANSITION_RENEW, SLOT_LD(s, token), now + ttl_ns, rev, key->ns,
		(uint32_t)key->ns_len, key->label, (uint32_t)key->label_len, owner->bytes,
		(uint32_t)owner->len);
	hint_lower(l, now + ttl_ns); /* a shorter TTL may bring the deadline forward */
	seq = slot_begin(s);
	/* relaxed: published by LK-R1; an 8-byte atomic is never torn */
	SLOT_ST(s, deadline_ns, now + ttl_ns);
	ORBIT_CRASHPOINT("lock.renew_in_slot");
	slot_end(s, seq);
	rev = bump_revision(l);
	if (lease) {
		lease->token = SLOT_LD(s, token);
		lease->deadline_ns = now + ttl_ns;
		lease->state_revision = rev;
	}
	stat_inc(l, ST_RENEWED);
out:
	leave(l);
	return rc;
}

HOT int remove_common(orbit_lock_t *l, const orbit_lock_key_t *key, const orbit_lock_owner_t *owner,
		      uint64_t token)
{
	struct orbit_lock_entry e;
	struct keyimg ki;
	const void *obytes;
	uint32_t idx, olen;
	uint64_t now, rev;
	int rc;

	rc = check_mutation(l, key, owner, 1);
	if (rc)
		return rc;
	keyimg_build(&ki, key, owner ? owner->bytes : NULL, owner ? owner->len : 0);
	rc = enter_owned(l, key, &ki, token, &idx, &now);
	if (rc)
		return rc;
	if (owner) { /* enter_owned() compared the stored owner with it */
		obytes = owner->bytes;
		olen = (uint32_t)owner->len;
		token = SLOT_LD(&l->slots[idx], token);
	} else {
		slot_to_entry(&l->slots[idx], idx, &e, now);
		obytes = e.bytes + e.ns_len + e.label_len;
		olen = e.owner_len;
		token = e.token;
	}
	rev = atomic_load_explicit(&l->hdr->state_revision, memory_order_relaxed) + 1;
	publish(l, owner ? ORBIT_TRANSITION_RELEASE : ORBIT_TRANSITION_FORCE_RELEASE, token, 0, rev,
		key->ns, (uint32_t)key->ns_len, key->label, (uint32_t)key->label_len, obytes, olen);
	slot_remove(l, idx);
	bump_revision(l);
	stat_inc(l, owner ? ST_RELEASED : ST_FORCE_RELEASED);
	maybe_compact(l);
	leave(l);
	return 0;
}

int orbit__lock_shm_release(orbit_lock_t *l, const orbit_lock_key_t *key,
			    const orbit_lock_owner_t *owner, uint64_t token)
{
	if (!owner)
		return -EINVAL; /* normal release never acts without an owner */
	return remove_common(l, key, owner, token);
}

int orbit__lock_shm_force_release(orbit_lock_t *l, const orbit_lock_key_t *key)
{
	return remove_common(l, key, NULL, 0);
}

/* ---- lookup: no serializer, copy and re-check --------------------------- */

struct meta {
	uint32_t state, hash, ns_len, label_len, owner_len;
};

/*
 * Is the mutator inside the serializer stopped (SIGSTOP, ptrace), a
 * zombie, or gone? Only then can a slot it left mid-write not change
 * soon. Relaxed: a hint; a stale pid costs one needless yield or -EAGAIN
 * (the caller's documented "slots kept changing"). The state is the main
 * thread's: a process whose main thread has exited (pthread_exit) while a
 * writer thread runs also reads 'Z' - again only an early -EAGAIN.
 */
static bool writer_stalled(const orbit_lock_t *l)
{
	uint32_t pid = atomic_load_explicit(&l->hdr->dirty_pid, memory_order_relaxed);
	char st;

	if (!pid)
		return false; /* no mutator inside: the rewrite we saw is ending */
	if (orbit__proc_state((pid_t)pid, &st) < 0)
		return true; /* no such process here: dead (repaired by the next mutation) */
	return st == 'T' || st == 't' || st == 'Z' || st == 'X';
}

/*
 * One retry caused by a concurrent rewrite: false when the budget is
 * spent or the writer is stalled (the caller answers -EAGAIN). Spins
 * first, then yields (see LOOKUP_RETRIES): a writer preempted mid-slot on
 * this CPU gets to finish.
 */
static bool lookup_retry(struct lookup_budget *b)
{
	int done = LOOKUP_RETRIES - b->left;

	if (--b->left < 0)
		return false;
	if (done >= LOOKUP_SPIN_RETRIES) {
		if ((done - LOOKUP_SPIN_RETRIES) % LOOKUP_STALL_CHECK == 0 && writer_stalled(b->l))
			return false;
		sched_yield();
		return true;
	}
	for (int i = 0; i <= done && i < LOOKUP_SPIN_MAX; i++)
		orbit__cpu_relax();
	return true;
}

/* One consistent read of a slot's metadata; -EAGAIN when it is being written. */
static inline int read_meta(const struct orbit_lock_slot *s, struct meta *m, uint32_t *seq)
{
	/* LK-A1: acquire, pairs with LK-R1 in slot_end(): the bytes of that version */
	uint32_t s1 = atomic_load_explicit(&s->seq, memory_order_acquire);

	if (s1 & 1u)
		return -EAGAIN;
	m->state = atomic_load_explicit(&s->state, memory_order_relaxed); /* checked by seq */
	m->hash = SLOT_LD(s, hash);
	m->ns_len = SLOT_LD(s, ns_len);
	m->label_len = SLOT_LD(s, label_len);
	m->owner_len = SLOT_LD(s, owner_len);
	/* LK-F2: acquire fence, pairs with LK-F1 in slot_begin(): copy before re-check */
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&s->seq, memory_order_relaxed) != s1)
		return -EAGAIN;
	*seq = s1;
	return 0;
}

/* Inside a seq window, lengths validated: the rest of a slot into @e. */
static inline void copy_entry(const struct orbit_lock_slot *s, const struct meta *m, uint32_t idx,
			      struct orbit_lock_entry *e)
{
	e->holder_pid = SLOT_LD(s, holder_pid);
	e->flags = SLOT_LD(s, flags);
	e->token = SLOT_LD(s, token);
	e->deadline_ns = SLOT_LD(s, deadline_ns);
	e->holder_start_ticks = SLOT_LD(s, holder_start_ticks);
	e->holder_pidfs_ino = SLOT_LD(s, holder_pidfs_ino);
	e->slot_idx = idx;
	e->ns_len = (uint16_t)m->ns_len;
	e->label_len = (uint16_t)m->label_len;
	e->owner_len = (uint16_t)m->owner_len;
	key_load(s, e->bytes, m->ns_len + m->label_len + m->owner_len);
}

/* Copy the rest of a slot read as @seq; -EAGAIN when it changed meanwhile. */
static inline int read_entry(const struct orbit_lock_slot *s, const struct meta *m, uint32_t seq,
			     uint32_t idx, struct orbit_lock_entry *e)
{
	/* lengths validated by meta_valid(): the copy stays inside both buffers */
	copy_entry(s, m, idx, e);
	/* LK-F2: acquire fence, pairs with LK-F1 in slot_begin() */
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&s->seq, memory_order_relaxed) == seq ? 0 : -EAGAIN;
}

/*
 * Slot @i of a lookup's path, read as a consistent copy: 0 (@k's entry,
 * copied into @e), 1 (another key or a tombstone: go on), -ENOENT (EMPTY:
 * the path ends), -EAGAIN (the retry budget ran out), -ORBIT_ECORRUPT.
 */
HOT int lookup_slot(orbit_lock_t *l, uint32_t i, const orbit_lock_key_t *k, uint32_t h32,
		    struct orbit_lock_entry *e, struct lookup_budget *budget)
{
	const struct orbit_lock_slot *s = &l->slots[i];

	/* one seq window per visit: the meta, and the rest only for a candidate */
	for (bool again = false;; again = true) {
		if (again && !lookup_retry(budget))
			return -EAGAIN;
		/* LK-A1: acquire, pairs with LK-R1 in slot_end(): the bytes of that version */
		uint32_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
		struct meta m;
		bool valid, cand;

		if (seq & 1u)
			continue;
		m.state = atomic_load_explicit(&s->state,
					       memory_order_relaxed); /* checked by seq */
		m.hash = SLOT_LD(s, hash);
		m.ns_len = SLOT_LD(s, ns_len);
		m.label_len = SLOT_LD(s, label_len);
		m.owner_len = SLOT_LD(s, owner_len);
		valid = meta_valid(m.state, m.ns_len, m.label_len, m.owner_len);
		cand = valid && m.state == ORBIT_LOCK_SLOT_OCCUPIED && m.hash == h32 &&
		       m.ns_len == k->ns_len && m.label_len == k->label_len;
		if (cand) /* lengths validated: the copy stays inside both buffers */
			copy_entry(s, &m, i, e);
		/* LK-F2: acquire fence, pairs with LK-F1 in slot_begin(): copy before re-check */
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&s->seq, memory_order_relaxed) != seq)
			continue;
		if (!valid) {
			stat_inc_rmw(l, ST_CORRUPT);
			return -ORBIT_ECORRUPT;
		}
		if (m.state == ORBIT_LOCK_SLOT_EMPTY)
			return -ENOENT;
		if (!cand)
			return 1;
		return key_bytes_eq(e->bytes, k) ? 0 : 1;
	}
}

/*
 * The path of @k over the control bytes (LK-A7), 8 slots a word: a slot
 * is read only when its byte carries the key's hash bits, is EMPTY (the
 * slot confirms that the path ends: a byte read just before an insert
 * into that slot may be older than the slot) or holds a value no writer
 * stores (the slot decides). TOMBSTONE bytes and other keys' bytes are
 * skipped: a slot holding @k always has @k's byte (shm/lock_table.h).
 */
static int lookup_once(orbit_lock_t *l, const orbit_lock_key_t *k, uint32_t h32,
		       struct orbit_lock_entry *e, struct lookup_budget *budget)
{
	uint32_t home = home_of(l, h32);
	uint64_t tagw = ORBIT_LOCK_CTRL_TAG(h32) * CW_LSB;
	uint64_t w = ctrl_load(l, home >> 3);
	int rc;

	/* the usual case first: the key sits in its home slot */
	if (((w >> (8 * (home & 7))) & 0xffu) == ORBIT_LOCK_CTRL_TAG(h32)) {
		rc = lookup_slot(l, home, k, h32, e, budget);
		if (rc != 1)
			return rc;
	}
	for (uint32_t kw = 0; kw <= l->nwords; kw++) {
		uint32_t wi = path_word(l, home, kw);
		uint64_t m;

		if (kw)
			w = ctrl_load(l, wi);
		m = (zero_bytes(w) | zero_bytes(w ^ tagw) | invalid_bytes(w)) &
		    path_bytes(l, home, kw);
		for (; m; m &= m - 1) {
			uint32_t i = wi * 8 + ((uint32_t)__builtin_ctzll(m) >> 3);

			if (i == home && kw == 0 &&
			    ((w >> (8 * (home & 7))) & 0xffu) == ORBIT_LOCK_CTRL_TAG(h32))
				continue; /* read above */
			rc = lookup_slot(l, i, k, h32, e, budget);
			if (rc != 1)
				return rc;
		}
	}
	return -ENOENT;
}

/*
 * try_acquire's -EBUSY without the serializer: every failed attempt on a
 * hot key used to take it, so N contenders queued on the serializer
 * behind each other's failures (a hot key's acquisitions fell 20x from 2
 * to 32 processes). The probe walks the key's path over the control
 * bytes as lookup does (its first BUSY_FAST_WORDS words) and reads at
 * most BUSY_FAST_PROBES of the slots they name (read_meta() and read_entry(): one consistent copy per slot,
 * LK-A1/LK-F2); an EMPTY byte ends it. A copy of an OCCUPIED slot holding
 * @k says the key was held by that entry when the copy was taken (a
 * compaction's copy in flight, or a duplicate a killed compaction left,
 * names the same tenure); the clock is read after the copy, so a deadline
 * past it was in the future at that moment (up to the nanoseconds a CPU
 * may run a vDSO clock read ahead of earlier loads, as for the clock read
 * after taking the serializer), and a live holder is exactly
 * what the serializer's probe answers -EBUSY for (probe_locked() reclaims
 * only entries whose deadline <= now; a FREE_ON_DEATH holder proved dead
 * is freed by an agent's sweep, never by try_acquire, so it is -EBUSY on
 * both paths until then). The same owner gets -EBUSY too, on both paths.
 * No token is taken, so fencing is untouched.
 * Returns -EBUSY (@holder filled as the serializer path fills it),
 * -EINVAL (a deadline that would overflow, as that path answers), or
 * -EAGAIN: not proved (no such entry within the probes, an expired one, a
 * slot being written or failing validation, a compaction running): the
 * caller takes the serializer, which decides, reclaims and repairs.
 */
static int busy_fast(orbit_lock_t *l, const orbit_lock_key_t *k, uint32_t h32, uint64_t ttl_ns,
		     struct orbit_lock_entry *holder)
{
	uint32_t home = home_of(l, h32), reads = 0;
	uint64_t tagw = ORBIT_LOCK_CTRL_TAG(h32) * CW_LSB;
	struct orbit_lock_entry e;
	uint64_t now;

	if (((ctrl_load(l, home >> 3) >> (8 * (home & 7))) & 0xffu) == ORBIT_LOCK_CTRL_EMPTY)
		return -EAGAIN; /* a free home: the usual case of an acquisition, no scan */
	for (uint32_t kw = 0; kw <= l->nwords && kw < BUSY_FAST_WORDS; kw++) {
		uint32_t wi = path_word(l, home, kw);
		uint64_t w = ctrl_load(l, wi), empty = zero_bytes(w);
		uint64_t m = (empty | zero_bytes(w ^ tagw) | invalid_bytes(w)) &
			     path_bytes(l, home, kw);

		for (; m; m &= m - 1) {
			uint32_t b = (uint32_t)__builtin_ctzll(m) >> 3, i = wi * 8 + b;
			const struct orbit_lock_slot *s = &l->slots[i];
			struct meta mt;
			uint32_t seq;

			if ((empty & (0x80ull << (8 * b))) || ++reads > BUSY_FAST_PROBES)
				return -EAGAIN; /* the path ends (or too long): not proved */
			if (read_meta(s, &mt, &seq) ||
			    !meta_valid(mt.state, mt.ns_len, mt.label_len, mt.owner_len) ||
			    mt.state == ORBIT_LOCK_SLOT_EMPTY)
				return -EAGAIN;
			if (mt.state == ORBIT_LOCK_SLOT_TOMBSTONE || mt.hash != h32 ||
			    mt.ns_len != k->ns_len || mt.label_len != k->label_len)
				continue;
			if (read_entry(s, &mt, seq, i, &e))
				return -EAGAIN;
			if (!key_bytes_eq(e.bytes, k))
				continue;
			now = orbit__now_mono_ns(); /* after the copy (see above) */
			if (e.deadline_ns <= now)
				return -EAGAIN; /* expired: the serializer path reclaims it */
			if (ttl_ns > UINT64_MAX - now)
				return -EINVAL;
			e.expired = false;
			if (holder)
				memcpy(holder, &e,
				       offsetof(struct orbit_lock_entry, bytes) + mt.ns_len +
					   mt.label_len + mt.owner_len);
			stat_inc_rmw(l, ST_BUSY);
			return -EBUSY;
		}
	}
	return -EAGAIN;
}

/* lookup_home()'s answer when the usual case does not hold: the general path decides. */
#define LOOKUP_UNDECIDED 1

/*
 * The usual case of a lookup, inline and without the path scan: no
 * compaction running (move_seq even, LK-A4/LK-A5), @k's entry in its home
 * slot (the home's control byte carries @k's tag), one consistent copy of
 * it (LK-A1/LK-F2), the clock read after the copy as in the general path.
 * Returns 0 or -ENOENT (the entry expired) when that decided, else
 * LOOKUP_UNDECIDED: anything else (another key at home, a slot being
 * rewritten or failing validation, a compaction) is left to
 * lookup_general(), which reads everything again. The key's fields are
 * read once, before @e is written (@e might alias the key as far as the
 * compiler knows): every instruction here costs a lookup its share, since
 * the clock read waits for all of them (the vDSO's rdtscp).
 */
HOT int lookup_home(orbit_lock_t *l, const orbit_lock_key_t *k, struct orbit_lock_entry *e)
{
	uint32_t h32 = hash32(k), home = home_of(l, h32), seq, ol, keyb;
	const struct orbit_lock_slot *s = &l->slots[home];
	struct meta m;
	/* LK-A4: acquire, pairs with LK-R4 in compact()/repair(): moves done */
	uint64_t m1 = atomic_load_explicit(&l->hdr->move_seq, memory_order_acquire);

	if ((m1 & 1u) ||
	    ((ctrl_load(l, home >> 3) >> (8 * (home & 7))) & 0xffu) != ORBIT_LOCK_CTRL_TAG(h32))
		return LOOKUP_UNDECIDED;
	/* LK-A1: acquire, pairs with LK-R1 in slot_end(): the bytes of that version */
	seq = atomic_load_explicit(&s->seq, memory_order_acquire);
	ol = SLOT_LD(s, owner_len);
	keyb = (uint32_t)(k->ns_len + k->label_len);
	/* checked by seq; the key's lengths were checked by the caller, so
	 * these equal lengths and an owner that fits are meta_valid()'s test */
	if ((seq & 1u) ||
	    atomic_load_explicit(&s->state, memory_order_relaxed) != ORBIT_LOCK_SLOT_OCCUPIED ||
	    SLOT_LD(s, hash) != h32 || SLOT_LD(s, ns_len) != k->ns_len ||
	    SLOT_LD(s, label_len) != k->label_len || ol - 1u >= ORBIT_LOCK_BYTES_MAX - keyb)
		return LOOKUP_UNDECIDED;
	m = (struct meta){ ORBIT_LOCK_SLOT_OCCUPIED, h32, (uint32_t)k->ns_len,
			   (uint32_t)k->label_len, ol };
	copy_entry(s, &m, home, e);
	/* LK-F2: acquire fence, pairs with LK-F1 in slot_begin(): copy before re-check */
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&s->seq, memory_order_relaxed) != seq ||
	    !key_bytes_eq(e->bytes, k))
		return LOOKUP_UNDECIDED;
	/* LK-A5: acquire fence, pairs with LK-F3 in compact(): probe before re-check */
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&l->hdr->move_seq, memory_order_relaxed) != m1)
		return LOOKUP_UNDECIDED;
	e->expired = e->deadline_ns <=
		     orbit__now_mono_ns(); /* after the copy, as lookup_general() */
	return e->expired ? -ENOENT : 0;
}

/* Any path, with retries (the rest of orbit__lock_shm_lookup()). */
static __attribute__((noinline)) int lookup_general(orbit_lock_t *l, const orbit_lock_key_t *key,
						    uint32_t h32, struct orbit_lock_entry *e)
{
	struct lookup_budget budget = { LOOKUP_RETRIES, l };
	int rc;

	for (;;) {
		/* LK-A4: acquire, pairs with LK-R4 in compact()/repair(): moves done */
		uint64_t m1 = atomic_load_explicit(&l->hdr->move_seq, memory_order_acquire);

		if (m1 & 1u) { /* a compaction is moving entries (or a corrupt word) */
			if (!lookup_retry(&budget))
				return -EAGAIN;
			continue;
		}
		rc = lookup_once(l, key, h32, e, &budget);
		if (rc == -EAGAIN)
			return rc;
		/* LK-A5: acquire fence, pairs with LK-F3 in compact(): probe before re-check */
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&l->hdr->move_seq, memory_order_relaxed) != m1) {
			if (!lookup_retry(&budget))
				return -EAGAIN;
			continue;
		}
		if (rc == 0) {
			e->expired = e->deadline_ns <= orbit__now_mono_ns();
			if (e->expired)
				return -ENOENT;
		}
		return rc;
	}
}

/* @n bytes at @p overlap @e (compared as addresses: @p may be any object). */
static inline bool in_entry(const void *p, size_t n, const struct orbit_lock_entry *e)
{
	uintptr_t a = (uintptr_t)p, lo = (uintptr_t)e;

	return n && a < lo + sizeof(*e) && lo < a + n;
}

/*
 * A lookup whose key bytes lie inside the @e it fills (re-looking up an
 * entry a lookup or foreach gave): the key is copied first, else the copy
 * of a slot into @e would overwrite it and the key check would compare
 * that copy with itself (another key of the same hash and lengths would
 * answer 0), and a miss would rehash overwritten bytes. Out of line: the
 * usual lookup pays only the two range checks.
 */
static __attribute__((noinline)) int lookup_aliased(orbit_lock_t *l, const orbit_lock_key_t *key,
						    struct orbit_lock_entry *e)
{
	uint8_t b[ORBIT_LOCK_BYTES_MAX];
	orbit_lock_key_t k = { b, key->ns_len, b + key->ns_len, key->label_len };
	int rc;

	if (key->ns_len) /* lengths checked: ns + label <= the max; ns may be NULL */
		memcpy(b, key->ns, key->ns_len);
	memcpy(b + key->ns_len, key->label, key->label_len);
	rc = lookup_home(l, &k, e);
	return rc != LOOKUP_UNDECIDED ? rc : lookup_general(l, &k, hash32(&k), e);
}

int orbit__lock_shm_lookup(orbit_lock_t *l, const orbit_lock_key_t *key, struct orbit_lock_entry *e)
{
	int rc;

	if (!l || !e)
		return -EINVAL;
	rc = orbit__lock_check_key(key);
	if (rc)
		return rc;
	/* not an RMW, no serializer: concurrent lookups of one handle may lose
	 * a count; the fast path stays free of locked instructions */
	stat_inc(l, ST_LOOKUPS);
	if (__builtin_expect(
		in_entry(key->ns, key->ns_len, e) || in_entry(key->label, key->label_len, e), 0))
		return lookup_aliased(l, key, e);
	rc = lookup_home(l, key, e);
	return rc != LOOKUP_UNDECIDED ? rc : lookup_general(l, key, hash32(key), e);
}

int orbit__lock_shm_foreach(orbit_lock_t *l, int (*fn)(const struct orbit_lock_entry *e, void *ctx),
			    void *ctx)
{
	struct orbit_lock_entry e;
	int count = 0;

	if (!l || !fn)
		return -EINVAL;
	for (uint32_t i = 0; i < l->nslots; i++) {
		const struct orbit_lock_slot *s = &l->slots[i];
		struct lookup_budget budget = { LOOKUP_RETRIES, l };
		struct meta m;
		uint32_t seq;

		for (bool again = false;; again = true) {
			if (again && !lookup_retry(&budget))
				return -EAGAIN;
			if (read_meta(s, &m, &seq))
				continue;
			if (!meta_valid(m.state, m.ns_len, m.label_len, m.owner_len)) {
				stat_inc_rmw(l, ST_CORRUPT);
				break;
			}
			if (m.state != ORBIT_LOCK_SLOT_OCCUPIED)
				break;
			if (read_entry(s, &m, seq, i, &e))
				continue;
			e.expired = e.deadline_ns <= orbit__now_mono_ns();
			int rc = fn(&e, ctx);
			if (rc)
				return rc;
			count++;
			break;
		}
	}
	return count;
}

ORBIT_API int orbit_lock_holder_alive(const struct orbit_lock_entry *e)
{
	struct pollfd pfd;
	uint64_t ino;
	int fd, rc;

	if (!e || !e->holder_pid)
		return -EINVAL;
	if (!e->holder_pidfs_ino) {
		/* written without pidfs: the start time, foolable within one tick */
		uint64_t t = proc_start_ticks((pid_t)e->holder_pid);

		return t != 0 && t == e->holder_start_ticks;
	}
	/*
	 * The pidfd pins the process it names, so the inode compared below
	 * and the exit state polled after belong to one process: whichever
	 * runs under that pid now. Only the holder itself has its inode.
	 */
	fd = orbit__pidfd_open((pid_t)e->holder_pid);
	if (fd == -ESRCH)
		return 0; /* no process (or a thread id): the holder is gone */
	if (fd < 0)
		return fd;
	rc = orbit__pidfd_ino(fd, &ino);
	if (rc < 0)
		goto out;
	if (ino != e->holder_pidfs_ino) {
		rc = 0; /* the pid was reused: another process */
		goto out;
	}
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (poll(&pfd, 1, 0) < 0)
		rc = -errno;
	else
		rc = !(pfd.revents & POLLIN); /* readable: the holder exited (a zombie) */
out:
	close(fd);
	return rc;
}

int orbit__lock_shm_stats(orbit_lock_t *l, struct orbit_lock_stats *o)
{
	uint64_t v[ST_N];

	if (!l || !o)
		return -EINVAL;
	for (int i = 0; i < ST_N; i++)
		v[i] = atomic_load_explicit(&l->st[i], memory_order_relaxed); /* counters */
	memset(o, 0, sizeof(*o));
	o->acquired = v[ST_ACQUIRED];
	o->busy = v[ST_BUSY];
	o->full = v[ST_FULL];
	o->renewed = v[ST_RENEWED];
	o->released = v[ST_RELEASED];
	o->force_released = v[ST_FORCE_RELEASED];
	o->not_found = v[ST_NOT_FOUND];
	o->wrong_owner = v[ST_WRONG_OWNER];
	o->reclaimed = v[ST_RECLAIMED];
	o->compactions = v[ST_COMPACTIONS];
	o->lookups = v[ST_LOOKUPS];
	o->corrupt_slots = v[ST_CORRUPT];
	o->repairs = v[ST_REPAIRS];
	o->dead_freed = v[ST_DEAD_FREED];
	return 0;
}

uint64_t orbit__lock_shm_state_revision(orbit_lock_t *l)
{
	/* LK-A3: acquire, pairs with LK-R3 in bump_revision() */
	return l ? atomic_load_explicit(&l->hdr->state_revision, memory_order_acquire) : 0;
}

/* ---- open / close ------------------------------------------------------- */

struct init_arg {
	uint32_t slots;
	enum orbit_lock_serializer ser;
};

/* Segment init callback: creator, under the segment flock, before READY. */
static int table_init(void *body, uint64_t body_bytes, void *arg)
{
	const struct init_arg *a = arg;
	struct orbit_lock_table_hdr *h = body;

	if (body_bytes < orbit__lock_table_body_bytes(a->slots))
		return -ORBIT_ESIZE;
	h->magic = ORBIT_LOCK_TABLE_MAGIC;
	h->slot_count = a->slots;
	h->slot_bytes = sizeof(struct orbit_lock_slot);
	h->serializer = a->ser;
	h->slots_off = sizeof(*h);
	h->ctrl_off = (uint32_t)orbit__lock_table_ctrl_off(a->slots);
	/* every control byte EMPTY, as every slot (the body starts zeroed) */
	memset((char *)body + h->ctrl_off, 0, orbit__lock_table_ctrl_bytes(a->slots));
	/* relaxed: published by the segment's READY release; no entry yet */
	atomic_store_explicit(&h->expiry_ns, UINT64_MAX, memory_order_relaxed);
	/*
	 * Tokens start at the creation time in realtime ns: a re-created
	 * table starts above anything an older one issued (one token per ns
	 * at most). relaxed: published by the segment's READY release.
	 */
	atomic_store_explicit(&h->next_token, orbit__now_real_ns() | 1u, memory_order_relaxed);
	if (a->ser == ORBIT_LOCK_SERIALIZER_FUTEX)
		return orbit__lock_ser_init_shared(&h->mutex);
	return 0;
}

ORBIT_API void orbit_lock_layout_init(struct orbit_lock_layout *y)
{
	if (y)
		*y = (struct orbit_lock_layout)ORBIT_LOCK_LAYOUT_DEFAULT_INIT;
}

ORBIT_API void orbit_lock_options_init(struct orbit_lock_options *o)
{
	if (!o)
		return;
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
}

int orbit__lock_layout_copy(struct orbit_lock_layout *y, const struct orbit_lock_layout *user)
{
	int rc;

	if (!user) {
		orbit_lock_layout_init(y);
		return 0;
	}
	rc = ORBIT__OPTS_COPY(y, user);
	if (rc)
		return rc;
	/* Zero means the default in every field. */
	y->state_kind = y->state_kind ? y->state_kind : ORBIT_LOCK_DEFAULT_STATE_KIND;
	y->ring_kind = y->ring_kind ? y->ring_kind : ORBIT_LOCK_DEFAULT_RING_KIND;
	y->slots = y->slots ? y->slots : ORBIT_LOCK_DEFAULT_SLOTS;
	y->ring_frames = y->ring_frames ? y->ring_frames : ORBIT_LOCK_DEFAULT_RING_FRAMES;
	y->ring_frame_bytes = y->ring_frame_bytes ? y->ring_frame_bytes
						  : ORBIT_LOCK_DEFAULT_FRAME_BYTES;
	if (y->slots < 8 || y->slots > 65536 || (y->slots & (y->slots - 1)) ||
	    y->state_kind == y->ring_kind)
		return -EINVAL;
	return 0;
}

/* Copy the caller's options and layout (NULL: defaults) and check them. */
static int resolve(const struct orbit_lock_options *user, struct orbit_lock_options *o,
		   struct orbit_lock_layout *y, const char **fleet, char *name, size_t name_len)
{
	int rc;

	orbit_lock_options_init(o);
	rc = user ? ORBIT__OPTS_COPY(o, user) : 0;
	if (!rc)
		rc = orbit__lock_layout_copy(y, o->layout);
	if (rc)
		return rc;
	if (o->serializer > ORBIT_LOCK_SERIALIZER_FLOCK)
		return -EINVAL;
	o->layout = y;
	*fleet = o->fleet ? o->fleet : "default";
	snprintf(name, name_len, "lock-%u", y->state_kind);
	return 0;
}

void orbit__lock_libc_abi_self(struct orbit__lock_libc_abi *abi)
{
	abi->mutex_bytes = sizeof(pthread_mutex_t);
	abi->mutex_align = _Alignof(pthread_mutex_t);
	abi->mutex_off = offsetof(struct orbit_lock_table_hdr, mutex);
	abi->libc_id = ORBIT_LOCK_LIBC_ID;
}

/*
 * The key hash's part of the fingerprint: keys whose namespace and label
 * run through every branch of str_hash() (0, 1, 2, 3, 5, 8, 11, 17 and 33
 * bytes: empty, the three 1-3 byte loads, 4-7, 8-16, one and two 16-byte
 * folds), each length as namespace and as label, folded into one word. A
 * peer whose hash differs in any branch gets another fingerprint. One
 * fixed key ("orbit", "fingerprint": 5 and 11 bytes) ran only two
 * branches, so two builds differing in the 1-3 byte one shared a
 * fingerprint and placed short keys in different slots of one table.
 */
uint64_t orbit__lock_hash_probe(void)
{
	static const uint8_t lens[] = { 0, 1, 2, 3, 5, 8, 11, 17, 33 };
	const size_t nl = sizeof(lens);
	char ns[40], label[40];
	uint64_t h = 0;

	for (size_t i = 0; i < sizeof(ns); i++) {
		ns[i] = (char)('a' + i % 26);
		label[i] = (char)('0' + (i * 7) % 75);
	}
	for (size_t i = 0; i < nl; i++) /* namespace of each length against label of another */
		h = orbit__mum(h ^ HK0, key_hash(ns, lens[i], label, lens[nl - 1 - i]) ^ HK1);
	return h;
}

uint64_t orbit__lock_fingerprint(const struct orbit_lock_layout *y, enum orbit_lock_serializer s,
				 const struct orbit__lock_libc_abi *abi)
{
	/* Only the FUTEX serializer puts a libc object (the robust mutex) in
	 * SHM: FLOCK tables stay shareable between peers of different libcs. */
	bool futex = s == ORBIT_LOCK_SERIALIZER_FUTEX;
	uint64_t w[] = {
		ORBIT_LOCK_TABLE_VERSION,
		y->state_kind,
		y->ring_kind,
		y->slots,
		y->ring_frames,
		y->ring_frame_bytes,
		sizeof(struct orbit_lock_table_hdr),
		sizeof(struct orbit_lock_slot),
		ORBIT_LOCK_BYTES_MAX,
		(uint64_t)s,
		/* the probe hash itself: peers hashing keys differently would miss
		 * each other's entries, so they must refuse each other instead */
		orbit__lock_hash_probe(),
		/* the libc's robust mutex: a peer whose pthread_mutex_t has another
		 * size, alignment, place or libc would scribble over ours */
		futex ? abi->mutex_bytes : 0,
		futex ? abi->mutex_align : 0,
		futex ? abi->mutex_off : 0,
		futex ? abi->libc_id : 0,
	};
	return orbit__seg_fingerprint(w, sizeof(w) / sizeof(w[0]));
}

static uint64_t layout_fingerprint(const struct orbit_lock_layout *y, enum orbit_lock_serializer s)
{
	struct orbit__lock_libc_abi abi;

	orbit__lock_libc_abi_self(&abi);
	return orbit__lock_fingerprint(y, s, &abi);
}

static int open_as(orbit_lock_t *l, const struct orbit_lock_options *o,
		   const struct orbit_lock_layout *y, const char *fleet, const char *name,
		   enum orbit_lock_serializer ser, enum orbit_seg_open_mode how)
{
	struct init_arg a = { y->slots, ser };
	struct orbit_seg_spec spec = {
		.kind = y->state_kind,
		.layout_version = ORBIT_LOCK_TABLE_VERSION,
		.total_bytes = ORBIT_SEG_HEADER_BYTES + orbit__lock_table_body_bytes(y->slots),
		.fingerprint = layout_fingerprint(y, ser),
		.init = table_init,
		.init_arg = &a,
	};
	struct orbit_seg_opts so = {
		.how = how,
		.readonly = o && o->readonly,
		.mode = o ? o->mode : 0,
		.init_timeout_ms = o ? o->init_timeout_ms : 0,
		.gid = o ? o->gid : 0,
		.owner_uid = o ? o->owner_uid : 0,
	};

	return orbit__seg_open(&l->seg, fleet, name, &spec, &so);
}

/* A 0640 fleet: the group reads (and so can flock) but never writes. */
static bool read_only_group(const struct orbit_lock_options *o)
{
	return (o->mode & 0060u) == 0040u;
}

int orbit__lock_shm_open(const struct orbit_lock_options *user, orbit_lock_t **out)
{
	struct orbit_lock_options opts, *o = &opts;
	struct orbit_lock_layout lay, *y = &lay;
	enum orbit_lock_serializer ser;
	enum orbit_seg_open_mode how;
	struct orbit_lock_table_hdr *h;
	char name[32];
	const char *fleet;
	orbit_lock_t *l;
	int rc;

	if (!out)
		return -EINVAL;
	orbit__die_on(pthread_once(&pid_once, pid_init), "pthread_once"); /* cannot fail on Linux */
	rc = resolve(user, o, y, &fleet, name, sizeof(name));
	if (rc)
		return rc;
	if (o && o->serializer_wait_ms < 0)
		return -EINVAL;
	/* 0640: flock(2) needs no write access, so any reader could hold the
	 * FLOCK serializer and stall every mutator; FUTEX keeps it in pages
	 * only writers can touch */
	if (o && !o->readonly && o->serializer == ORBIT_LOCK_SERIALIZER_FLOCK && read_only_group(o))
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	ser = o ? o->serializer : ORBIT_LOCK_SERIALIZER_AUTO;
	how = o && o->readonly ? ORBIT_SEG_OPEN : ORBIT_SEG_OPEN_OR_CREATE;
	if (ser == ORBIT_LOCK_SERIALIZER_AUTO) {
		rc = open_as(l, o, y, fleet, name, ORBIT_LOCK_SERIALIZER_FUTEX, how);
		ser = ORBIT_LOCK_SERIALIZER_FUTEX;
		if (rc == -ORBIT_EFINGERPRINT && !(o && !o->readonly && read_only_group(o))) {
			rc = open_as(l, o, y, fleet, name, ORBIT_LOCK_SERIALIZER_FLOCK,
				     ORBIT_SEG_OPEN);
			ser = ORBIT_LOCK_SERIALIZER_FLOCK;
			if (rc == -ORBIT_EFINGERPRINT || rc == -ENOENT)
				rc = -ORBIT_EFINGERPRINT; /* neither: another layout */
		}
	} else {
		rc = open_as(l, o, y, fleet, name, ser, how);
	}
	if (rc)
		goto err_free;
	h = orbit__seg_at(&l->seg, ORBIT_SEG_HEADER_BYTES, orbit__lock_table_body_bytes(y->slots));
	if (!h || h->magic != ORBIT_LOCK_TABLE_MAGIC || h->slot_count != y->slots ||
	    h->slot_bytes != sizeof(struct orbit_lock_slot) || h->serializer != (uint32_t)ser ||
	    h->slots_off != sizeof(*h) || h->ctrl_off != orbit__lock_table_ctrl_off(y->slots)) {
		rc = -ORBIT_ECORRUPT;
		goto err_close;
	}
	l->base.ops = &orbit__lock_shm_ops;
	l->hdr = h;
	l->slots = (struct orbit_lock_slot *)((char *)h + sizeof(*h));
	l->ctrl = (_Atomic uint64_t *)((char *)h + h->ctrl_off); /* inside h's checked span */
	l->nslots = y->slots;
	l->nwords = y->slots / 8;
	l->layout = *y;
	l->layout.size = sizeof(l->layout);
	l->mask = y->slots - 1;
	l->readonly = o && o->readonly;
	l->pid = orbit__self_pid();
	l->start_ticks = proc_start_ticks(l->pid);
	l->pidfs_ino = self_pidfs_ino(l->pid);
	l->ser_wait_ns = 1000000ull * (o && o->serializer_wait_ms
					   ? (uint64_t)o->serializer_wait_ms
					   : ORBIT_LOCK_SERIALIZER_WAIT_MS_DEFAULT);
	orbit__lock_ser_init(&l->ser, ser, &l->seg, h);
	orbit__die_on(pthread_mutex_lock(&handles_lock), "pthread_mutex_lock");
	l->next = handles;
	handles = l;
	pthread_mutex_unlock(&handles_lock);
	*out = l;
	return 0;

err_close:
	orbit__seg_close(&l->seg);
err_free:
	free(l);
	return rc;
}

void orbit__lock_shm_close(orbit_lock_t *l)
{
	if (!l)
		return;
	orbit__die_on(pthread_mutex_lock(&handles_lock), "pthread_mutex_lock");
	for (struct orbit_lock **pp = &handles; *pp; pp = &(*pp)->next) {
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	}
	pthread_mutex_unlock(&handles_lock);
	/* In a forked child the local mutex may be a locked copy: leave it. */
	if (orbit__self_pid() == l->pid)
		orbit__lock_ser_destroy(&l->ser);
	orbit__seg_close(&l->seg);
	free(l);
}

int orbit__lock_shm_unlink(const struct orbit_lock_options *user)
{
	struct orbit_lock_options o;
	struct orbit_lock_layout y;
	const char *fleet;
	char name[32];
	int rc = resolve(user, &o, &y, &fleet, name, sizeof(name));

	return rc ? rc : orbit__seg_unlink(fleet, name);
}

/* ---- internal ----------------------------------------------------------- */

int orbit__lock_set_sink(orbit_lock_t *l, orbit_transition_sink_fn fn, void *ctx)
{
	int rc = check_mutator(l);
	void *none = NULL;

	if (rc && rc != -EROFS) /* a readonly handle never mutates, so never calls the sink */
		return rc;
	if (!ctx)
		return -EINVAL;
	if (fn) {
		/* the ctx word is the claim: relaxed, published by LK-K3 below */
		if (!atomic_compare_exchange_strong_explicit(
			&l->sink_ctx, &none, ctx, memory_order_relaxed, memory_order_relaxed))
			return -EBUSY;
		/* LK-K3: release, pairs with LK-K6 in publish() */
		atomic_store_explicit(&l->sink, fn, memory_order_release);
		return 0;
	}
	/* relaxed: only the claimant (this ctx's owner) clears its own claim */
	if (atomic_load_explicit(&l->sink_ctx, memory_order_relaxed) != ctx)
		return 0; /* not ours: another agent's sink stays */
	/* LK-K2: seq_cst, pairs with LK-K1 in publish() */
	atomic_store_explicit(&l->sink, NULL, memory_order_seq_cst);
	/* LK-K5: acquire, pairs with LK-K4: a call in flight (a thread of this
	 * process, inside the serializer for microseconds) has finished with
	 * @ctx; no other process is ever waited for */
	while (atomic_load_explicit(&l->sink_calls, memory_order_acquire))
		sched_yield();
	/* relaxed: the next claimant's CAS; no call can still read @ctx */
	atomic_store_explicit(&l->sink_ctx, NULL, memory_order_relaxed);
	return 0;
}

const orbit_seg_t *orbit__lock_seg(orbit_lock_t *l)
{
	return &l->seg;
}

struct orbit_lock_table_hdr *orbit__lock_hdr(orbit_lock_t *l)
{
	return l->hdr;
}

int orbit__lock_reset_table(orbit_lock_t *l, int (*also)(void *ctx), void *ctx)
{
	int rc = check_mutator(l);

	if (rc)
		return rc;
	rc = enter(l);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < l->nslots; i++)
		slot_mark(l, i, ORBIT_LOCK_SLOT_EMPTY);
	atomic_store_explicit(&l->hdr->tombstones, 0, memory_order_relaxed); /* serializer held */
	atomic_store_explicit(&l->hdr->expiry_ns, UINT64_MAX, memory_order_relaxed); /* ditto */
	/* next_token is kept: tokens stay increasing across reset */
	bump_revision(l);
	/* LK-R5: release, no partner yet: no reader acquires this table's generation
	 * (openers read it under the flock); a future one sees the cleared slots first */
	atomic_fetch_add_explicit(&orbit__seg_header(&l->seg)->generation, 1, memory_order_release);
	/* e.g. the ring's reset: no writer of this table publishes meanwhile */
	rc = also ? also(ctx) : 0;
	leave(l);
	return rc;
}

int orbit__lock_table_check(orbit_lock_t *l, char *why, size_t why_len)
{
	/* relaxed loads throughout: the caller guarantees no mutator runs */
	uint64_t next = atomic_load_explicit(&l->hdr->next_token, memory_order_relaxed);

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		snprintf(why, why_len, __VA_ARGS__);                                               \
		return -ORBIT_ECORRUPT;                                                            \
	} while (0)
	if (atomic_load_explicit(&l->hdr->dirty_pid, memory_order_relaxed))
		FAIL("dirty_pid %u",
		     atomic_load_explicit(&l->hdr->dirty_pid, memory_order_relaxed));
	if (atomic_load_explicit(&l->hdr->move_seq, memory_order_relaxed) & 1u)
		FAIL("move_seq odd");
	for (uint32_t i = 0; i < l->nslots; i++) {
		const struct orbit_lock_slot *s = &l->slots[i];
		uint32_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);

		if (seq & 1u)
			FAIL("slot %u: odd seq %u (torn)", i, seq);
		if (!slot_valid(s))
			FAIL("slot %u: invalid state %u or lengths", i, slot_state(s));
		if (ctrl_get(l, i) != ctrl_of(slot_state(s), SLOT_LD(s, hash)))
			FAIL("slot %u: control byte %#x, its state %u says %#x", i, ctrl_get(l, i),
			     slot_state(s), ctrl_of(slot_state(s), SLOT_LD(s, hash)));
		if (slot_state(s) != ORBIT_LOCK_SLOT_OCCUPIED)
			continue;
		if (slot_deadline(s) <
		    atomic_load_explicit(&l->hdr->expiry_ns, memory_order_relaxed))
			FAIL("slot %u: deadline %" PRIu64 " below expiry_ns %" PRIu64, i,
			     slot_deadline(s),
			     atomic_load_explicit(&l->hdr->expiry_ns, memory_order_relaxed));
		struct orbit_lock_entry e;
		uint32_t hash = SLOT_LD(s, hash), row = SLOT_LD(s, holder_row),
			 gen = SLOT_LD(s, holder_gen);

		slot_to_entry(s, i, &e, 0);
		if ((uint32_t)key_hash(e.bytes, e.ns_len, e.bytes + e.ns_len, e.label_len) != hash)
			FAIL("slot %u: hash does not match its key (torn bytes)", i);
		if (e.token >= next)
			FAIL("slot %u: token %" PRIu64 " >= next_token %" PRIu64, i, e.token, next);
		if (e.flags & ~ORBIT_LOCK_SLOT_F_KNOWN)
			FAIL("slot %u: unknown lease flags 0x%x", i, e.flags);
		if (!(e.flags & ORBIT_LOCK_SLOT_F_FREE_ON_DEATH) && (row || gen))
			FAIL("slot %u: member tenure %u/%u without FREE_ON_DEATH", i, row, gen);
		if ((e.flags & ORBIT_LOCK_SLOT_F_FREE_ON_DEATH) && !gen)
			FAIL("slot %u: FREE_ON_DEATH with member generation 0 (no tenure)", i);
		for (uint32_t p = home_of(l, hash); p != i; p = (p + 1) & l->mask)
			if (slot_state(&l->slots[p]) == ORBIT_LOCK_SLOT_EMPTY)
				FAIL("slot %u: unreachable (EMPTY at %u on its path)", i, p);
		for (uint32_t j = i + 1; j < l->nslots; j++)
			if (slot_state(&l->slots[j]) == ORBIT_LOCK_SLOT_OCCUPIED &&
			    same_key(s, &l->slots[j]))
				FAIL("slots %u and %u hold the same key", i, j);
	}
#undef FAIL
	if (why_len)
		why[0] = '\0';
	return 0;
}

const struct orbit_lock_layout *orbit__lock_layout(const orbit_lock_t *l)
{
	return &l->layout;
}

int orbit__lock_check_attach(const orbit_lock_t *l, const char *fleet)
{
	char want[ORBIT_SEG_NAME_MAX], name[32];

	if (!l || !fleet)
		return -EINVAL;
	if (orbit__fork_check(l->pid) < 0)
		return -ECHILD; /* the fork trap, as check_mutator() */
	snprintf(name, sizeof(name), "lock-%u", l->layout.state_kind); /* as resolve() */
	if (orbit__seg_name(want, sizeof(want), fleet, name) < 0 || strcmp(want, l->seg.name) != 0)
		return -EINVAL; /* opened on another fleet */
	return 0;
}

uint64_t orbit__lock_repairs(const orbit_lock_t *l)
{
	/* Relaxed: a hint for readers of the table (the agent's resync), orders nothing */
	return atomic_load_explicit(&l->hdr->repairs, memory_order_relaxed);
}

void orbit__lock_set_member(orbit_lock_t *l, int row, uint32_t generation)
{
	uint64_t m = row >= 0 && generation ? (uint64_t)generation << 32 | ((uint32_t)row + 1u) : 0;

	if (orbit__lock_is_shm(l)) /* relaxed: see struct orbit_lock */
		atomic_store_explicit(&l->member, m, memory_order_relaxed);
}

void orbit__lock_clear_member(orbit_lock_t *l, int row, uint32_t generation)
{
	uint64_t m = row >= 0 && generation ? (uint64_t)generation << 32 | ((uint32_t)row + 1u) : 0;

	/* relaxed: see struct orbit_lock; fails when another tenure is named */
	if (l && m)
		atomic_compare_exchange_strong_explicit(&l->member, &m, 0, memory_order_relaxed,
							memory_order_relaxed);
}

/* A FREE_ON_DEATH entry seen without the serializer, to be freed if still the same. */
struct dead_cand {
	uint32_t idx;
	uint64_t token;
};

#define DEAD_BATCH 32u

/*
 * One consistent copy of slot @i: is it a FREE_ON_DEATH entry whose
 * holder the kernel proves gone? Without the serializer (the proofs make
 * syscalls); a slot being rewritten is skipped (the next sweep sees it).
 */
static bool dead_holder(orbit_lock_t *l, orbit_members_t *m, uint32_t i, struct dead_cand *c)
{
	const struct orbit_lock_slot *s = &l->slots[i];
	struct orbit_lock_entry e;
	struct meta mt;
	uint32_t seq, row, gen;

	if (read_meta(s, &mt, &seq) || mt.state != ORBIT_LOCK_SLOT_OCCUPIED ||
	    !meta_valid(mt.state, mt.ns_len, mt.label_len, mt.owner_len))
		return false;
	row = SLOT_LD(s, holder_row); /* checked by read_entry()'s seq re-check */
	gen = SLOT_LD(s, holder_gen);
	if (read_entry(s, &mt, seq, i, &e) || !(e.flags & ORBIT_LOCK_SLOT_F_FREE_ON_DEATH))
		return false;
	/*
	 * Both proofs, each stable once true: the member tenure is over (its
	 * row's OFD lock is free or the row has a newer generation: a tenure
	 * never comes back) and the process is gone (a pidfs inode or a start
	 * time never names a running process again). The tenure alone would
	 * free a live holder whose agent stopped (left its row); the process
	 * alone would trust a pid of another pid namespace. Errors (-EINVAL: a
	 * row out of range; -EMFILE, ...) answer "not proved": the TTL decides.
	 */
	if (orbit__members_is_alive_gen(m, row, gen) != 0 || orbit_lock_holder_alive(&e) != 0)
		return false;
	c->idx = i;
	c->token = e.token;
	return true;
}

int orbit__lock_free_dead(orbit_lock_t *l, orbit_members_t *m)
{
	struct dead_cand c[DEAD_BATCH];
	uint32_t i = 0, n;
	int rc, freed = 0;

	if (!orbit__lock_is_shm(l))
		return -EINVAL;
	rc = check_mutator(l);
	if (rc)
		return rc;
	if (!m)
		return -EINVAL;
	while (i < l->nslots) {
		for (n = 0; i < l->nslots && n < DEAD_BATCH; i++)
			n += dead_holder(l, m, i, &c[n]);
		if (!n)
			continue;
		rc = enter(l);
		if (rc)
			return freed ? freed : rc;
		for (uint32_t k = 0; k < n; k++) {
			const struct orbit_lock_slot *s = &l->slots[c[k].idx];

			/* the same tenure still: a token names one acquisition */
			if (slot_state(s) != ORBIT_LOCK_SLOT_OCCUPIED || !slot_valid(s) ||
			    SLOT_LD(s, token) != c[k].token ||
			    !(SLOT_LD(s, flags) & ORBIT_LOCK_SLOT_F_FREE_ON_DEATH))
				continue;
			reclaim_as(l, c[k].idx, ST_DEAD_FREED);
			freed++;
		}
		/* entries may move: one the scan passes waits for the next sweep */
		maybe_compact(l);
		leave(l);
	}
	return freed;
}

/* The SHM table as an orbit-lock backend (base/lock_backend.h). */
const struct orbit__lock_ops orbit__lock_shm_ops = {
	.name = "shm",
	.guard_fork = false, /* its own rule: mutations -ECHILD, lookups work */
	.close = orbit__lock_shm_close,
	.try_acquire = orbit__lock_shm_try_acquire,
	.try_acquire_flags = orbit__lock_shm_try_acquire_flags,
	.renew = orbit__lock_shm_renew,
	.release = orbit__lock_shm_release,
	.force_release = orbit__lock_shm_force_release,
	.lookup = orbit__lock_shm_lookup,
	.foreach = orbit__lock_shm_foreach,
	.stats = orbit__lock_shm_stats,
	.state_revision = orbit__lock_shm_state_revision,
};
