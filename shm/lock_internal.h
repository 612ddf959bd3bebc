/* SPDX-License-Identifier: MIT */
/*
 * shm/lock_internal.h: internal entry points of orbit-lock (shm/lock.c)
 * for the transition ring wiring, orbitctl, the reset path and the tests:
 * the transition sink setter, the table reset, and the table checker.
 */
#ifndef ORBIT_SHM_LOCK_INTERNAL_H
#define ORBIT_SHM_LOCK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <orbit/lock.h>

#include "base/lock_backend.h"
#include "shm/lock_table.h"
#include "shm/segment.h"
#include "shm/transition.h"

/*
 * The SHM table's backend (base/lock_backend.h): each function has the
 * contract of the public orbit_lock_* function of its name, which
 * agent/lock_dispatch.c forwards to it for a handle opened on SHM. Every
 * orbit__lock_* function below takes only a handle of this backend:
 * orbit__lock_is_shm() tells (a caller given a user's handle checks first).
 */
extern const struct orbit__lock_ops orbit__lock_shm_ops;
int orbit__lock_shm_open(const struct orbit_lock_options *opts, orbit_lock_t **out);
int orbit__lock_shm_unlink(const struct orbit_lock_options *opts);
void orbit__lock_shm_close(orbit_lock_t *lock);
int orbit__lock_shm_try_acquire(orbit_lock_t *lock, const orbit_lock_key_t *key,
				const orbit_lock_owner_t *owner, uint64_t ttl_ns,
				struct orbit_lock_lease *lease, struct orbit_lock_entry *holder);
int orbit__lock_shm_try_acquire_flags(orbit_lock_t *lock, const orbit_lock_key_t *key,
				      const orbit_lock_owner_t *owner, uint64_t ttl_ns,
				      uint32_t flags, struct orbit_lock_lease *lease,
				      struct orbit_lock_entry *holder);
int orbit__lock_shm_renew(orbit_lock_t *lock, const orbit_lock_key_t *key,
			  const orbit_lock_owner_t *owner, uint64_t token, uint64_t ttl_ns,
			  struct orbit_lock_lease *lease);
int orbit__lock_shm_release(orbit_lock_t *lock, const orbit_lock_key_t *key,
			    const orbit_lock_owner_t *owner, uint64_t token);
int orbit__lock_shm_force_release(orbit_lock_t *lock, const orbit_lock_key_t *key);
int orbit__lock_shm_lookup(orbit_lock_t *lock, const orbit_lock_key_t *key,
			   struct orbit_lock_entry *entry);
int orbit__lock_shm_foreach(orbit_lock_t *lock,
			    int (*fn)(const struct orbit_lock_entry *e, void *ctx), void *ctx);
int orbit__lock_shm_stats(orbit_lock_t *lock, struct orbit_lock_stats *out);
uint64_t orbit__lock_shm_state_revision(orbit_lock_t *lock);

/* Is @lock a handle of the SHM table (not NULL, not another backend's)? */
static inline bool orbit__lock_is_shm(const orbit_lock_t *lock)
{
	return lock && orbit__lock_base_of(lock)->ops == &orbit__lock_shm_ops;
}

/*
 * orbit__lock_set_sink - every successful acquire / renew / release /
 * force_release / reclaim of this handle calls @fn(@ctx, ...) (with the
 * serializer held, before the table commit). One sink per handle. @fn NULL
 * removes the sink installed with @ctx (another @ctx's sink stays).
 * Process-local: it never takes the serializer, so it never waits for
 * another process (one stopped inside the serializer used to hang an
 * agent's start and stop behind it).
 * Installing: a mutation already in flight in another thread may finish
 * without the new sink, as if it had run just before. Removing: returns
 * once no thread of this process is inside the sink (a call takes
 * microseconds), so the caller may free @ctx then.
 * Context: any thread of the opener; never from inside the sink.
 * Returns 0; -EINVAL (NULL @ctx); -EBUSY (installing while another sink
 * is installed); -ECHILD (forked child: a handle that is not this
 * process's never calls a sink here).
 */
int orbit__lock_set_sink(orbit_lock_t *lock, orbit_transition_sink_fn fn, void *ctx);

/*
 * orbit__lock_reset_table - clear every slot under the serializer, bump
 * the segment generation and the state revision; keeps next_token so
 * tokens stay increasing. Quiescent boot only (the caller checks that no
 * other member is attached). @also (may be NULL) runs after the clear,
 * still under the serializer (the ring's reset: no frame can be published
 * meanwhile); its error is returned, the table stays cleared.
 * Returns 0, -ECHILD, -EROFS, -EAGAIN (the serializer stayed taken past
 * the handle's bound: nothing was cleared), a serializer error, or
 * @also's error.
 */
int orbit__lock_reset_table(orbit_lock_t *lock, int (*also)(void *ctx), void *ctx);

/*
 * orbit__lock_table_check - the table checker of the kill tests: every
 * slot's seq even, states and lengths valid, stored hash = hash of the
 * stored key, every entry reachable from its home slot, no key twice,
 * every token below next_token, dirty_pid 0, move_seq even, every
 * control byte the one its slot's state and hash give, expiry_ns at most
 * every entry's deadline. Reads without
 * the serializer: call it when no mutator runs. Returns 0 or
 * -ORBIT_ECORRUPT with a reason in @why.
 */
int orbit__lock_table_check(orbit_lock_t *lock, char *why, size_t why_len);

/* The segment and the table header of a handle (tests, orbitctl). */
const orbit_seg_t *orbit__lock_seg(orbit_lock_t *lock);
struct orbit_lock_table_hdr *orbit__lock_hdr(orbit_lock_t *lock);

/* The layout the handle was opened with (its ring fields name the fleet's ring). */
const struct orbit_lock_layout *orbit__lock_layout(const orbit_lock_t *lock);

/*
 * What a libc puts into the lock table (the FUTEX serializer's robust
 * mutex), as the table's fingerprint records it: a peer built against a
 * libc whose pthread_mutex_t differs in any of these is refused at open
 * (-ORBIT_EFINGERPRINT) instead of scribbling over the mutex.
 */
struct orbit__lock_libc_abi {
	uint64_t mutex_bytes; /* sizeof(pthread_mutex_t) */
	uint64_t mutex_align; /* _Alignof(pthread_mutex_t) */
	uint64_t mutex_off;   /* offsetof(struct orbit_lock_table_hdr, mutex) */
	uint64_t libc_id;     /* ORBIT_LOCK_LIBC_ID: which libc's mutex layout */
};

/* The libc identity: glibc and its major version, bionic, uClibc; 0 for others (musl). */
#if defined(__GLIBC__)
#define ORBIT_LOCK_LIBC_ID (0x676c696263000000ull | (uint64_t)__GLIBC__) /* "glibc" */
#elif defined(__BIONIC__)
#define ORBIT_LOCK_LIBC_ID 0x62696f6e69630000ull /* "bionic" */
#elif defined(__UCLIBC__)
#define ORBIT_LOCK_LIBC_ID 0x75636c6962630000ull /* "uclibc" */
#else
#define ORBIT_LOCK_LIBC_ID 0ull
#endif

/* This build's libc ABI (what layout_fingerprint() uses). */
void orbit__lock_libc_abi_self(struct orbit__lock_libc_abi *abi);

/*
 * orbit__lock_fingerprint - the table fingerprint a peer with layout @y,
 * serializer @s and libc @abi computes (tests write a foreign peer's with it).
 */
uint64_t orbit__lock_fingerprint(const struct orbit_lock_layout *y, enum orbit_lock_serializer s,
				 const struct orbit__lock_libc_abi *abi);

/*
 * orbit__lock_layout_copy - read a caller's layout the way orbit_lock_open()
 * does (base/options.h rule; NULL: the default; a zero field: its default)
 * and check it. The agent and the fleet view use it for the layout they
 * are given, so that every reader of a layout agrees on it.
 * Returns 0; -EINVAL (size 0, slots not a power of two in 8..65536, state
 * kind equal to ring kind); -E2BIG (unknown non-zero tail).
 */
int orbit__lock_layout_copy(struct orbit_lock_layout *y, const struct orbit_lock_layout *user);

/*
 * orbit__lock_check_attach - may @lock's transitions be wired to fleet
 * @fleet's ring by this process? Context: any thread; no syscall.
 * Returns 0; -ECHILD (the handle was opened by another process: the
 * parent of this forked child); -EINVAL (NULL, or opened on another fleet).
 */
int orbit__lock_check_attach(const orbit_lock_t *lock, const char *fleet);

/*
 * orbit__lock_repairs - the table's shared repair count (hdr->repairs: a
 * mutator repaired a slot or the serializer after a peer died inside it).
 * A relaxed read, a hint: a reader that sees it move re-reads the table.
 * Context: any thread; no syscall, no lock.
 */
uint64_t orbit__lock_repairs(const orbit_lock_t *lock);

/* The hash of a key as the table stores it (tests place keys by it). */
uint64_t orbit__lock_hash(const orbit_lock_key_t *key);

/*
 * orbit__lock_hash_probe - the key hash's word of the table fingerprint:
 * keys with parts of 0/1/2/3/5/8/11/17/33 bytes (every branch of the
 * hash) folded into one value. Context: any thread; pure.
 */
uint64_t orbit__lock_hash_probe(void);

struct orbit_members;

/*
 * orbit__lock_set_member - the member tenure (row, generation of the
 * member directory) that ORBIT_LOCK_FREE_ON_DEATH acquisitions through
 * @lock record; @row < 0 (or generation 0): none, such acquisitions are
 * -EINVAL. The agent sets it at start (after its join) and clears it at
 * stop (before it leaves its row: orbit__lock_clear_member()); a handle
 * serves one agent (a second one is -EBUSY). NULL @lock is a no-op.
 * Context: any thread; one relaxed store (an acquisition racing it
 * records the old or the new tenure, both this process's).
 */
void orbit__lock_set_member(orbit_lock_t *lock, int row, uint32_t generation);

/*
 * orbit__lock_clear_member - forget the tenure (@row, @generation) if it
 * is still the one @lock names (another agent's, set later on the same
 * handle, stays). Context: any thread; one relaxed CAS.
 */
void orbit__lock_clear_member(orbit_lock_t *lock, int row, uint32_t generation);

/*
 * orbit__lock_free_dead - free every ORBIT_LOCK_FREE_ON_DEATH entry whose
 * holder the kernel proves gone: its member tenure over in @members
 * (orbit__members_is_alive_gen() == 0: the row's OFD lock free, or a newer
 * generation) AND its process gone (orbit_lock_holder_alive() == 0). Each
 * is freed like an expired entry (a RECLAIM frame, then the commit;
 * stats.dead_freed); tokens are untouched. The proofs run without the
 * serializer, on consistent slot copies; the serializer is then taken once
 * per batch of 32 candidates and an entry is freed only if its slot still
 * holds the same token. Entries of live holders (stopped ones too), plain
 * TTL entries, slots being rewritten and any proof that errs are left.
 * Context: the agent thread (any thread of the opener); syscalls (fcntl,
 * pidfd_open, fstat, poll per flagged entry), the serializer as a mutation.
 * Returns the number freed (>= 0); -EINVAL (NULL); -EROFS, -ECHILD;
 * -EAGAIN and the serializer errors of try_acquire (when none was freed
 * yet; else the count so far).
 */
int orbit__lock_free_dead(orbit_lock_t *lock, struct orbit_members *members);

#endif /* ORBIT_SHM_LOCK_INTERNAL_H */
