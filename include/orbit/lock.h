/* SPDX-License-Identifier: MIT */
/*
 * orbit/lock.h: orbit-lock, the fleet's keyed lock. One shared-memory
 * table per fleet (kind 228 by default, 256 slots) holds the current
 * holder of each key: a namespace plus a label. An owner is opaque bytes
 * compared exactly; every acquisition has a TTL (an absolute deadline on
 * CLOCK_MONOTONIC) and a strictly increasing fencing token to carry to a
 * protected resource. Every call is one immediate attempt: nothing here
 * sleeps, retries or waits for a holder (see doc/orbit-lock.md). A
 * mutation waits only for another mutation's critical section (the
 * serializer, microseconds), and that wait is bounded: past
 * serializer_wait_ms (default ORBIT_LOCK_SERIALIZER_WAIT_MS_DEFAULT, 100
 * ms) it answers -EAGAIN. Lookups never wait for the serializer.
 *
 * Caveats (read before use):
 * - Deadlines are CLOCK_MONOTONIC nanoseconds. They are comparable only
 *   between processes of one time namespace (a container with its own
 *   time namespace has another monotonic offset): all members of a fleet
 *   must share one time namespace.
 * - Fencing tokens start, at segment creation, at the creator's
 *   CLOCK_REALTIME in ns and then count up by one; a re-created segment
 *   therefore starts above every token the old one could have issued,
 *   unless the realtime clock was stepped back between the two (or the
 *   old table handed out more than one token per ns of its life). This
 *   covers unlink, a table truncated to 0 and re-created, and a repair of
 *   a creator that died initialising. reset keeps the counter.
 * - The owner is a compare token, not an authorisation mechanism: any
 *   process that can map the segment can present any owner bytes, and
 *   orbit_lock_force_release() removes any holder.
 * - A holder killed while holding keeps its key until the TTL passes
 *   (the table cannot tell a dead holder from a paused one), unless it
 *   took the key with ORBIT_LOCK_FREE_ON_DEATH (orbit_lock_try_acquire_with):
 *   then a running agent of another fleet member frees it as soon as the
 *   member directory proves the holder dead (milliseconds, see
 *   doc/orbit-lock.md "Leases freed on the holder's death"). Either way
 *   the next owner gets a larger token. orbit_lock_holder_alive() tells orbitctl
 *   whether the recorded pid still runs the same process: by its pidfs
 *   inode, which a reused pid never has (Linux 6.9+). On an older kernel
 *   it falls back to the /proc start time, which a pid reused within
 *   the same 1/100 s tick fools.
 * - A forked child must not use its parent's handle: every mutation in a
 *   child returns -ECHILD; close it there and open a new one. At fork the
 *   child's copy of each handle loses its fd and has its mapping replaced
 *   by a read-only mapping of the same segment (lookups still work): an
 *   inherited fd or MAP_SHARED mapping would keep the parent's flock
 *   alive after the parent died holding it. The check
 *   uses a pid refreshed by a pthread_atfork handler (no getpid syscall
 *   per call): a child made by a raw clone(2) that skips the atfork
 *   handlers is not detected.
 * - A holder that dies inside the serializer is repaired by the next
 *   mutator: a half-written slot is rolled back (or completed if it was
 *   already marked occupied), so the interrupted operation either happened
 *   or did not; a token it drew is never reused.
 * - Lookups copy a slot and re-check its sequence: a writer stopped (not
 *   killed) mid-write makes lookups of keys probing through that slot
 *   return -EAGAIN until it resumes or dies and is repaired.
 * - A mutator stopped (SIGSTOP, a debugger, a frozen cgroup) inside the
 *   serializer makes every other mutation of the fleet answer -EAGAIN
 *   after serializer_wait_ms, until it resumes or dies (then the next
 *   mutator repairs). -EAGAIN changes nothing in the table: retrying is
 *   the caller's policy. A holder preempted for longer than the bound
 *   (an overloaded host) has the same effect; so may a compaction or
 *   full sweep of a table with many thousand slots: raise the bound for
 *   such layouts.
 *
 * The etcd backend (ORBIT_LOCK_BACKEND_ETCD, or an etcd:// fleet URL;
 * built with --with-etcd; doc/orbit-lock.md "Beyond one host"): the same
 * calls and codes on the keys of an etcd cluster, for a fleet on several
 * hosts. What differs:
 * - Each key is "orbit/<fleet>/lock-<state_kind>/" + the namespace length
 *   (4 hex digits) + "/" + namespace + label; its value is the owner; the
 *   token is the key's create revision (increasing across all keys and
 *   all time of the cluster, also after orbit_lock_unlink()).
 * - TTLs are etcd leases of whole seconds: a TTL is rounded up to seconds
 *   and raised to the cluster's minimum (etcd's, about 1.5 election
 *   timeouts: 2 s by default). The deadline handed back is the real one:
 *   the local CLOCK_MONOTONIC when the grant (or keepalive) was sent plus
 *   the TTL etcd granted, a lower bound of the lease's end. etcd ends a
 *   lease on its leader's clock and a new leader gives every lease its
 *   whole TTL again, so a key may outlive that deadline (by the TTL at
 *   most per leader change, plus up to about a second until the leader
 *   revokes it): a holder must stop at its deadline, a waiter must not
 *   assume the key is free at it. Deadlines read by lookup, foreach and
 *   -EBUSY are the answer's time plus the whole seconds etcd says are left.
 * - Every call is network round trips (1-2 ms each on a local
 *   3-member cluster: `make bench`) bounded as a whole by call_timeout_ms;
 *   a cluster that cannot be reached, has no leader or no quorum within
 *   it is -ORBIT_EUNAVAILABLE, never a hang. A mutation that answered so
 *   may still have been applied (etcd's rule): an acquisition nobody knows
 *   of then ends with its lease's TTL; look the key up to know.
 * - No table, slots or serializer: never -ENOSPC for a full table (but
 *   -ENOSPC when the cluster's space quota is exhausted), never -EAGAIN.
 *   Entries carry no holder pid (0): the holder may run on another host;
 *   orbit_lock_holder_alive() answers -EINVAL for them.
 * - In a forked child every call but close answers -ECHILD (the
 *   connection is the parent's), lookups included.
 * - No ring: the transition feed is an etcd watch on the prefix, read
 *   with orbit_lock_reader_open() (orbit/fleet.h) and the same
 *   orbit_transition_reader_* calls; release and force_release put a
 *   marker key in their transaction so the feed tells them from an
 *   expiry (doc/orbit-lock.md "The transition feed on etcd"). An etcd
 *   handle cannot be given to an agent (orbit_agent_start() answers
 *   -EOPNOTSUPP).
 * - The owner stays a compare token: anyone who can write the cluster's
 *   keys can present any owner (etcd's own authentication is outside
 *   orbit).
 */
#ifndef ORBIT_LOCK_H
#define ORBIT_LOCK_H

#include <orbit/common.h>

ORBIT_BEGIN_DECLS

/* Namespace + label + owner bytes that fit in one slot. */
#define ORBIT_LOCK_BYTES_MAX 960u
#define ORBIT_LOCK_DEFAULT_STATE_KIND 228u
#define ORBIT_LOCK_DEFAULT_RING_KIND 229u
#define ORBIT_LOCK_DEFAULT_SLOTS 256u
#define ORBIT_LOCK_DEFAULT_RING_FRAMES 1024u
#define ORBIT_LOCK_DEFAULT_FRAME_BYTES 1024u
/*
 * How long a mutation waits for the serializer before it answers -EAGAIN
 * (orbit_lock_options.serializer_wait_ms 0). Critical sections take a few
 * microseconds, so this fires only when the holder is not running;
 * 100 ms stays "immediate" for a person and is far beyond any scheduling
 * delay of a running holder short of an overloaded host.
 */
#define ORBIT_LOCK_SERIALIZER_WAIT_MS_DEFAULT 100u

typedef struct orbit_lock orbit_lock_t;

/*
 * Which cross-process serializer orders table mutations. A fleet uses one;
 * it is recorded in the table and in its layout fingerprint, so a peer
 * asking for the other one gets -ORBIT_EFINGERPRINT at open.
 */
enum orbit_lock_serializer {
	ORBIT_LOCK_SERIALIZER_AUTO =
	    0, /* create: the default (FUTEX); open: whichever the fleet uses */
	ORBIT_LOCK_SERIALIZER_FUTEX =
	    1, /* process-shared robust mutex in the table (EOWNERDEAD repair) */
	ORBIT_LOCK_SERIALIZER_FLOCK = 2, /* process-local mutex + flock(2) on the segment */
};

/*
 * Where a fleet's locks live, chosen at orbit_lock_open(). Every call then
 * behaves as documented below on either; what differs is listed under
 * "The etcd backend" (and in doc/orbit-lock.md, "Beyond one host").
 */
enum orbit_lock_backend {
	ORBIT_LOCK_BACKEND_AUTO =
	    0, /* ETCD when @endpoints is set or @fleet is an etcd:// URL, else SHM */
	ORBIT_LOCK_BACKEND_SHM = 1,  /* the fleet's shared-memory table on this host */
	ORBIT_LOCK_BACKEND_ETCD = 2, /* keys of an etcd cluster: the fleet spans hosts */
};

/* etcd: each call's bound when call_timeout_ms is 0. */
#define ORBIT_LOCK_CALL_TIMEOUT_MS_DEFAULT 2000u

/*
 * A fleet's lock layout; every peer must pass the same one. Size-carrying
 * (see orbit/common.h); 0: the default in every field.
 */
struct orbit_lock_layout {
	size_t size;		   /* sizeof(struct orbit_lock_layout) */
	uint32_t state_kind;	   /* segment kind of the table (0: 228) */
	uint32_t ring_kind;	   /* segment kind of the transition ring (0: 229) */
	uint32_t slots;		   /* table slots: a power of two, 8..65536 (0: 256) */
	uint32_t ring_frames;	   /* frames per writer lane (0: 1024) */
	uint32_t ring_frame_bytes; /* bytes per frame (0: 1024) */
};

#define ORBIT_LOCK_LAYOUT_DEFAULT_INIT                                                             \
	{                                                                                          \
		sizeof(struct orbit_lock_layout), ORBIT_LOCK_DEFAULT_STATE_KIND,                   \
		    ORBIT_LOCK_DEFAULT_RING_KIND, ORBIT_LOCK_DEFAULT_SLOTS,                        \
		    ORBIT_LOCK_DEFAULT_RING_FRAMES, ORBIT_LOCK_DEFAULT_FRAME_BYTES                 \
	}

/*
 * Options of orbit_lock_open(); size-carrying (see orbit/common.h); 0:
 * default. mode, gid, owner_uid, serializer, init_timeout_ms and
 * serializer_wait_ms concern the SHM table and are ignored by the etcd
 * backend (a fleet moves to etcd by changing fleet or endpoints alone);
 * endpoints and call_timeout_ms concern etcd.
 */
struct orbit_lock_options {
	size_t size;				/* sizeof(struct orbit_lock_options) */
	const char *fleet;			/* NULL: "default" */
	const struct orbit_lock_layout *layout; /* NULL: the default layout */
	unsigned mode;				/* 0: 0600; 0640 or 0660 to share with the group
				       @gid (see "Sharing a fleet with a group") */
	enum orbit_lock_serializer serializer;	/* 0: AUTO */
	bool readonly;				/* never creates, never mutates, maps PROT_READ */
	int init_timeout_ms;			/* wait for a creator to finish (0: default 2 s) */
	unsigned gid;				/* group of a group mode (0: the effective gid):
				       given to a new segment, and the one foreign
				       group whose segments an opener accepts */
	int serializer_wait_ms; /* a mutation's bound on waiting for the serializer, then
				     * -EAGAIN (0: ORBIT_LOCK_SERIALIZER_WAIT_MS_DEFAULT; < 0: -EINVAL) */
	unsigned owner_uid;	/* the fleet's one creating and trusted uid (0: none;
				       required with 0640: "Sharing a fleet with a group") */
	unsigned reserved0;	/* the older sizeof's tail padding (56 bytes with
				       owner_uid last): never read, so garbage there from an
				       older caller is harmless; leave it 0 */
	/* Added with the etcd backend, past the older sizeof (base/options.h). */
	enum orbit_lock_backend backend; /* 0: AUTO */
	const char *endpoints;		 /* ETCD: "http://host:port,..." (at most 16; NULL: from an
				       etcd:// @fleet, which then must not be given too) */
	int call_timeout_ms;		 /* ETCD: the bound of every call, whatever the cluster does
				       (0: ORBIT_LOCK_CALL_TIMEOUT_MS_DEFAULT; < 0: -EINVAL) */
};

/*
 * Sharing a fleet with a group. Every peer passes the same mode (0640 or
 * 0660) and gid to every open (lock, agent, fleet, orbitctl --mode/--group).
 * A creator makes each segment 0600, gives it @gid (fchown: a process not
 * in that group gets -EPERM) and then exactly @mode (fchmod: the umask does
 * not narrow it). An opener accepts a segment owned by its own euid, or by
 * another uid when the segment's group is @gid and that uid is a member
 * of @gid now (the user database: passwd and group entries, looked up at
 * open; an ex-member's segments are refused) (not when /dev/shm is setgid
 * to @gid); every segment must have one link; anything else is
 * -ORBIT_EOWNER, and a mode wider than configured, group bits for another
 * group, or a POSIX access ACL is -ORBIT_EMODE. Without a group mode only
 * the own euid is accepted. A process outside the group cannot open a
 * 0660 segment at all (-EACCES; the wait for a member's creation in
 * progress is skipped for an outsider's file, and the message names its
 * uid). 0640 has one writer: @owner_uid names it, and is required; only
 * that uid creates (-EPERM) and only its segments are accepted, so a
 * reader that creates the names first cannot feed forged tables to the
 * other readers (it still blocks the writer, -EACCES naming it, until root
 * removes its names). With 0660 @owner_uid is optional (0: any current
 * member). A 0640 writer cannot use the FLOCK serializer (-EINVAL): a
 * reader could hold the flock. Group members of a 0660 fleet are trusted
 * as the owner is: each can write every byte (doc/threat-model.md).
 * Only a segment's owner (or root) removes its name: orbit_fleet_unlink_with().
 */

/**
 * orbit_lock_layout_init - fill @y with the default layout (size set; the
 * same as ORBIT_LOCK_LAYOUT_DEFAULT_INIT). NULL is a no-op.
 * Context: any thread; no syscall. Returns nothing.
 */
ORBIT_API void orbit_lock_layout_init(struct orbit_lock_layout *y);

/**
 * orbit_lock_options_init - fill @o with the defaults: size set, every
 * other field zero (fleet "default", default layout, mode 0600,
 * serializer AUTO, read-write, 2 s init timeout, the effective gid). NULL
 * is a no-op.
 * Context: any thread; no syscall. Returns nothing.
 */
ORBIT_API void orbit_lock_options_init(struct orbit_lock_options *o);

/* A key: namespace bytes plus the label of the resource. Only the key contends. */
typedef struct orbit_lock_key {
	const void *ns;
	size_t ns_len;
	const void *label;
	size_t label_len;
} orbit_lock_key_t;

/* An owner: opaque bytes compared exactly (a compare token, not a credential). */
typedef struct orbit_lock_owner {
	const void *bytes;
	size_t len;
} orbit_lock_owner_t;

/*
 * A static, typed namespace: a compile-time constant that names one kind of
 * lock:
 *   ORBIT_LOCK_DEFINE_NAMESPACE(pool_locks, "runtime.tasks.pool");
 *   orbit_lock_key_t k = orbit_lock_key(pool_locks, "worker-3", 8);
 * The literal is checked to be a string literal at compile time.
 */
struct orbit_lock_namespace {
	const char *bytes;
	size_t len;
};
#define ORBIT_LOCK_NAMESPACE(lit) ((struct orbit_lock_namespace){ "" lit, sizeof(lit) - 1 })
#define ORBIT_LOCK_DEFINE_NAMESPACE(name, lit)                                                     \
	static const struct orbit_lock_namespace name = { "" lit, sizeof(lit) - 1 }

/**
 * orbit_lock_key - the key of @label (@label_len bytes) in namespace @ns.
 * The key points at @ns's bytes and at @label: both must outlive its use.
 * Context: any thread; pure. Returns: the key.
 */
static inline orbit_lock_key_t orbit_lock_key(struct orbit_lock_namespace ns, const void *label,
					      size_t label_len)
{
	orbit_lock_key_t k = { ns.bytes, ns.len, label, label_len };
	return k;
}

/* What a successful acquire or renew hands back. */
struct orbit_lock_lease {
	uint64_t token;		 /* fencing token: strictly increasing per acquisition */
	uint64_t deadline_ns;	 /* CLOCK_MONOTONIC absolute */
	uint64_t state_revision; /* the table's revision after this change */
};

/* A copy of one table entry (lookup, the holder on -EBUSY, snapshots). */
struct orbit_lock_entry {
	uint64_t token;
	uint64_t deadline_ns;	     /* CLOCK_MONOTONIC absolute */
	uint64_t holder_start_ticks; /* /proc/<pid>/stat field 22 of the holder */
	uint64_t holder_pidfs_ino;   /* the holder's pidfs inode: names that process
				      * for the host's uptime (0: kernel without pidfs) */
	uint32_t holder_pid;
	uint32_t slot_idx;
	uint16_t ns_len, label_len, owner_len;
	uint16_t flags; /* the acquisition's ORBIT_LOCK_FREE_ON_DEATH, 0 else */
	bool expired;	/* deadline passed (only snapshots report these) */
	uint8_t bytes[ORBIT_LOCK_BYTES_MAX]; /* ns, then label, then owner */
};

/**
 * orbit_lock_entry_owner - where the owner bytes of @e start
 * (@e->owner_len bytes, after the namespace and the label).
 * Context: any thread; pure. Returns: a pointer into @e->bytes.
 */
static inline const void *orbit_lock_entry_owner(const struct orbit_lock_entry *e)
{
	return e->bytes + e->ns_len + e->label_len;
}

/* Counters of this handle (C11 atomics, readable from any thread). */
struct orbit_lock_stats {
	uint64_t acquired, busy, full; /* try_acquire outcomes */
	uint64_t renewed, released, force_released;
	uint64_t not_found, wrong_owner; /* -ENOENT / -EPERM from renew/release */
	uint64_t reclaimed;		 /* expired entries this handle cleared */
	uint64_t compactions;		 /* tombstone compactions run */
	uint64_t lookups;
	uint64_t corrupt_slots; /* slots that failed validation */
	uint64_t repairs;	/* crashed-holder repairs this handle ran */
	uint64_t dead_freed;	/* FREE_ON_DEATH entries of dead holders freed */
};

/**
 * orbit_lock_open - create or open the fleet's lock table.
 * @opts: options (size set, see orbit_lock_options_init()); NULL means
 *        all defaults.
 * @out:  the handle on success.
 *
 * The backend: ETCD when @opts->backend says so, or (AUTO) when
 * @opts->endpoints is set or @opts->fleet is "etcd://host:port[,host:port
 * ...][/NAME]" (NAME: the fleet, default "default"; each host:port is
 * reached as http://host:port); else SHM.
 * SHM: creates "/orbit.<fleet>.lock-<state_kind>" when missing (not when
 * readonly). With serializer AUTO an existing table is opened with
 * whichever serializer it records.
 * ETCD: reads the cluster's revision once (so an unreachable cluster is
 * known here); nothing is created.
 *
 * Context: any thread; syscalls (shm_open, mmap, flock, read of
 * /proc/self/stat); may sleep up to init_timeout_ms while a creator
 * initialises.
 * Returns: 0; -EINVAL (size 0 in @opts or its layout, bad options, fleet
 * name or layout, a mode other than 0600, 0640 or 0660, 0640 without
 * @owner_uid, a negative serializer_wait_ms, a writable open of a 0640
 * fleet with the FLOCK serializer); -E2BIG (@opts or its layout is larger
 * than this build's and sets a field it does not know); -ENOMEM; -EPERM
 * (creating with a group mode for a group this process is not in, or
 * creating while @owner_uid is set and is not our euid: nothing is left
 * behind);
 * -ENOENT (readonly and missing); -ORBIT_EFINGERPRINT (the fleet's table
 * has another slot count, kind or serializer); -ORBIT_ECORRUPT (the
 * table's own header fails validation); or any code of the segment layer:
 * -EACCES (no permission: e.g. a group segment and a process outside the
 * group), -ORBIT_EMAGIC, -ORBIT_EVERSION, -ORBIT_EKIND, -ORBIT_ESIZE,
 * -ORBIT_EOWNER (owned by another uid, not through the configured group,
 * or not by a current member of it, or not by @owner_uid; a second link),
 * -ORBIT_EMODE (wider than @mode, shared with another group, or carrying
 * a POSIX access ACL),
 * -ORBIT_EINITTIMEOUT, -ORBIT_ENOTREG (a FIFO, directory, socket,
 * device node or symlink under the name: refused at once), -ENOSPC (creating:
 * /dev/shm has no room for the table; no file is left), -ORBIT_ETRUNCATED
 * (the table is shorter than its header says: refused by every open, the
 * file is left as it is; an operator removes it with orbit_lock_unlink(),
 * orbit_fleet_unlink() or `orbitctl unlink`, and the next open creates it
 * anew with larger tokens). A table truncated to 0 bytes is
 * -ORBIT_ETRUNCATED for a readonly open and re-created by a read-write one
 * (it cannot be told from a creator that died before sizing it): every
 * lease is gone, tokens stay above every earlier one. A FUTEX table made by
 * a peer whose libc lays pthread_mutex_t out differently (size, alignment,
 * place, libc) is -ORBIT_EFINGERPRINT. orbit_segment_last_error() names
 * the segment of any segment-layer refusal.
 * Backend selection and etcd: -EINVAL (a backend out of the enumeration,
 * SHM asked for with endpoints or an etcd:// fleet, ETCD without
 * endpoints, endpoints both in the URL and in @endpoints, a malformed URL
 * or endpoint list (more than 16, no port, user@host), a fleet name
 * outside [A-Za-z0-9_-]{1,40}, a negative call_timeout_ms);
 * -EOPNOTSUPP (ETCD in a build without --with-etcd);
 * -ORBIT_EUNAVAILABLE (no member answered within call_timeout_ms);
 * -EPROTO (an answer that is not etcd's v3 JSON gateway's).
 * Context (ETCD): blocks up to call_timeout_ms on the network.
 */
ORBIT_API int orbit_lock_open(const struct orbit_lock_options *opts, orbit_lock_t **out);

/**
 * orbit_lock_backend_name - which backend a handle was opened on: "shm"
 * or "etcd" (a static string); NULL for NULL.
 * Context: any thread; no syscall.
 */
ORBIT_API const char *orbit_lock_backend_name(const orbit_lock_t *lock);

/**
 * orbit_lock_close - unmap and free a handle. Entries it holds stay held
 * until released or expired. NULL is a no-op. In a forked child it frees
 * the child's copy without touching the parent's serializer.
 * Context: no other thread may use the handle; syscalls (munmap, close).
 */
ORBIT_API void orbit_lock_close(orbit_lock_t *lock);

/**
 * orbit_lock_unlink - remove the fleet's table name (mapped handles stay
 * valid; the next open creates a new table with larger tokens). ETCD:
 * deletes every key of the fleet's table (every lease is gone; tokens
 * stay increasing: they are revisions).
 * @opts: fleet and layout as for open.
 * Context: any thread; syscall shm_unlink (ETCD: one bounded request).
 * Returns: 0, -ENOENT (no table; ETCD: no key), -EINVAL, -E2BIG,
 * -EOPNOTSUPP, -ORBIT_EUNAVAILABLE (as for open).
 */
ORBIT_API int orbit_lock_unlink(const struct orbit_lock_options *opts);

/**
 * orbit_lock_try_acquire - take @key for @owner for @ttl_ns, once.
 * @lease:  filled on success (token, deadline, revision). May be NULL.
 * @holder: on -EBUSY, a copy of the current holder (owner bytes, token,
 *          deadline, pid). May be NULL.
 *
 * An expired entry of the key is reclaimed and the key taken with a new,
 * larger token. A key held (live) by any owner, the same one included, is
 * -EBUSY: extend a lease with orbit_lock_renew(). SHM: a live entry seen
 * in a consistent copy of the key's slot (as lookup reads it) answers
 * -EBUSY without taking the serializer (no wait, no syscall: the clock
 * read is vDSO); only the other outcomes take it.
 *
 * Context: any thread of the process that opened the handle; takes the
 * serializer (futex: no syscall uncontended; flock: two syscalls); never
 * sleeps beyond waiting for another mutation to finish, and that for at
 * most the handle's serializer_wait_ms (futex: a timed futex wait; flock:
 * flock(LOCK_NB) retried after pauses of 20 us doubling to 1 ms).
 * Publication to the transition sink precedes the table commit.
 * Returns: 0; -EBUSY (held and live); -EAGAIN (the serializer stayed
 * taken for serializer_wait_ms: another mutator is stopped or not
 * running inside; nothing changed, the key's state is unknown: lookup
 * answers without the serializer); -ENOSPC (table full of live keys,
 * nothing evicted); -EINVAL (NULL key/owner, ttl_ns 0, empty label or
 * owner, deadline overflow); -E2BIG (ns+label+owner over 960 bytes);
 * -ECHILD (handle opened by the parent process); -EROFS (readonly
 * handle); -ENOTRECOVERABLE (the FUTEX serializer was left unrepaired by
 * a foreign program); another negative errno from flock(2) or from a
 * FUTEX mutex whose SHM bytes are corrupt. A slot on the probe path that
 * fails validation is cleared and counted (stats.corrupt_slots), not
 * returned; a slot a dead mutator left half-written is repaired first
 * (rolled back when not yet OCCUPIED, completed when it was).
 * ETCD: a lease grant and one transaction (create the key if absent,
 * attached to the lease; else read the holder); on -EBUSY the unused
 * lease is revoked and, when @holder is given, the holder's lease read
 * for its deadline. Also -ORBIT_EUNAVAILABLE (see "The etcd backend":
 * it may have been applied), -ENOSPC (the cluster's space quota), -EPROTO.
 */
ORBIT_API int orbit_lock_try_acquire(orbit_lock_t *lock, const orbit_lock_key_t *key,
				     const orbit_lock_owner_t *owner, uint64_t ttl_ns,
				     struct orbit_lock_lease *lease,
				     struct orbit_lock_entry *holder);

/*
 * Lease flags of orbit_lock_try_acquire_with() (struct
 * orbit_lock_acquire_options.flags), recorded in the entry (entry.flags).
 *
 * ORBIT_LOCK_FREE_ON_DEATH: release when the holder is proved dead. The
 * handle must be the lock of a running agent (orbit_agent_options.lock):
 * the entry records that agent's member tenure (row and generation of the
 * member directory). As soon as the kernel proves the holder gone - its
 * member row's OFD lock is free (or the row has a newer generation) AND
 * its process is gone (its pidfs inode, or on kernels before 6.9 its
 * /proc start time, no longer names a running process) - the agent of
 * any other member with a writable lock handle frees the entry: at once
 * when its death watcher sees the holder's pidfd fire, else at its next
 * stats period (250 ms by default). The frame published is
 * ORBIT_TRANSITION_RECLAIM, as for an expired entry: the lease ended
 * without its holder. A holder that is alive - stopped (SIGSTOP), or
 * whose agent stopped - is never freed this way: its TTL still runs as
 * for any entry. Tokens are unchanged: the next owner gets a larger one.
 */
#define ORBIT_LOCK_FREE_ON_DEATH 0x1u

/* Options of orbit_lock_try_acquire_with(); size-carrying (orbit/common.h); 0: default. */
struct orbit_lock_acquire_options {
	size_t size;	/* sizeof(struct orbit_lock_acquire_options) */
	uint32_t flags; /* ORBIT_LOCK_FREE_ON_DEATH or 0 (0: a plain TTL lease) */
};

/**
 * orbit_lock_acquire_options_init - fill @o with the defaults: size set,
 * flags 0 (a plain TTL lease, as orbit_lock_try_acquire()). NULL is a no-op.
 * Context: any thread; no syscall. Returns nothing.
 */
ORBIT_API void orbit_lock_acquire_options_init(struct orbit_lock_acquire_options *o);

/**
 * orbit_lock_try_acquire_with - orbit_lock_try_acquire() with options.
 * @opts: NULL, or options (size set, see orbit_lock_acquire_options_init());
 *        NULL or flags 0 is exactly orbit_lock_try_acquire().
 *
 * Context: as orbit_lock_try_acquire(); with ORBIT_LOCK_FREE_ON_DEATH no
 * further syscall (the member tenure was recorded at the agent's start).
 * Returns: the codes of orbit_lock_try_acquire(), and -EINVAL also for
 * @opts with size 0 or a flag this build does not know, and for
 * ORBIT_LOCK_FREE_ON_DEATH on a handle no running agent of this process
 * was started with (orbit_agent_options.lock; after orbit_agent_stop()
 * too); -E2BIG for @opts larger than this build's with a non-zero
 * unknown tail; -EOPNOTSUPP for a lease flag on a backend without lease
 * flags (etcd: its leases end with the etcd lease's TTL only). On any
 * error nothing changed.
 */
ORBIT_API int orbit_lock_try_acquire_with(orbit_lock_t *lock, const orbit_lock_key_t *key,
					  const orbit_lock_owner_t *owner, uint64_t ttl_ns,
					  const struct orbit_lock_acquire_options *opts,
					  struct orbit_lock_lease *lease,
					  struct orbit_lock_entry *holder);

/**
 * orbit_lock_renew - move the deadline of a live entry to now + @ttl_ns,
 * keeping its token.
 * @token: 0, or the lease's token: then the entry must also carry it.
 * Context: as orbit_lock_try_acquire.
 * Returns: 0; -ENOENT (not held, or expired: an expired entry is
 * reclaimed); -EPERM (another owner, or another token); -EAGAIN (the
 * serializer stayed taken: the deadline did not move); -EINVAL (also a
 * NULL owner: renewal never acts without one), -E2BIG, -ECHILD, -EROFS,
 * -ENOTRECOVERABLE, serializer errors as for try_acquire.
 * ETCD: one transaction compares the owner (and @token) and touches the
 * key (a new revision: lease->state_revision), then a keepalive of its
 * lease. A TTL of other whole seconds than the lease's attaches the key
 * to a new lease of that TTL in a second transaction comparing owner and
 * token again (the token stays: it is the key's create revision) and
 * revokes the old lease. Also -ORBIT_EUNAVAILABLE, -EPROTO.
 */
ORBIT_API int orbit_lock_renew(orbit_lock_t *lock, const orbit_lock_key_t *key,
			       const orbit_lock_owner_t *owner, uint64_t token, uint64_t ttl_ns,
			       struct orbit_lock_lease *lease);

/**
 * orbit_lock_release - free @key if @owner (and @token when non-zero)
 * hold it: key, owner and token are compared and the entry removed in one
 * serialized step, so a retried release cannot free a newer tenure.
 * Context: as orbit_lock_try_acquire.
 * Returns: 0; -ENOENT (not held, or expired: reclaimed); -EPERM (another
 * owner or token holds it; nothing changes); -EAGAIN (the serializer
 * stayed taken: still held, retry or let the TTL run out); -EINVAL (owner
 * NULL: normal release never acts without one), -E2BIG, -ECHILD, -EROFS,
 * -ENOTRECOVERABLE, serializer errors as for try_acquire.
 * ETCD: one transaction comparing the value (owner) and, with @token, the
 * create revision, then putting the fleet's delete marker (for the
 * transition feed) and deleting; the tenure's lease is left to run out.
 * When the client retried on another member after an answer was lost (a
 * timeout once the request was sent), the first attempt may have deleted
 * the key: a retry whose compare then fails answers 0, not -ENOENT or
 * -EPERM (the tenure is over; the compare kept the retry off any newer
 * one). Also -ORBIT_EUNAVAILABLE (it may have been applied), -EPROTO.
 */
ORBIT_API int orbit_lock_release(orbit_lock_t *lock, const orbit_lock_key_t *key,
				 const orbit_lock_owner_t *owner, uint64_t token);

/**
 * orbit_lock_force_release - administrative escape: remove @key whoever
 * holds it. Not for the normal release path.
 * Context: as orbit_lock_try_acquire.
 * Returns: 0; -ENOENT (not held or expired); -EAGAIN (the serializer
 * stayed taken); -EINVAL, -E2BIG, -ECHILD, -EROFS, -ENOTRECOVERABLE,
 * serializer errors as for try_acquire. ETCD: one transaction that, if
 * the key exists, puts the fleet's delete marker and deletes it; also
 * -ORBIT_EUNAVAILABLE, -EPROTO.
 */
ORBIT_API int orbit_lock_force_release(orbit_lock_t *lock, const orbit_lock_key_t *key);

/**
 * orbit_lock_lookup - copy the live entry of @key into @entry.
 * Never takes the serializer: copies the slot and re-checks its sequence,
 * so a mutator stopped inside the serializer never delays it. @key's
 * bytes may lie inside @entry (re-looking up an entry a lookup or foreach
 * gave): they are copied before @entry is written.
 * Context: any thread, any process with a (readonly) handle, also a forked
 * child; no allocation, no lock, and no syscall unless it meets a slot
 * being rewritten for a while (sched_yield, a /proc read; vDSO clock).
 * The retry budget counts retries caused by concurrent rewrites (not slots
 * probed: a miss on a full table answers -ENOENT); the first 64 retries
 * spin with CPU pauses, the rest (up to 256) sched_yield once each so a
 * writer preempted mid-slot on this CPU can finish. Before the first
 * yield (and every 16th after) the lookup reads /proc/<pid>/stat of the
 * mutator inside the serializer: stopped (SIGSTOP, ptrace), a zombie or
 * gone, it answers -EAGAIN at once, so a stopped writer never delays a
 * lookup by more than the spins and that one read. (A writer in another
 * pid namespace, whose pid this process cannot see, reads as gone: its
 * half-written slot costs -EAGAIN after the spins instead of the yields.)
 * Returns: 0; -ENOENT (not held or expired); -EAGAIN (slots kept changing
 * for the whole bounded retry budget, or a mutator stopped or died mid-write or
 * mid-compaction, or a corrupt move_seq word, and no mutation repaired the
 * table yet); -EINVAL, -E2BIG;
 * -ORBIT_ECORRUPT (a slot on the probe path fails validation).
 * ETCD: a linearizable read (through the leader: a serializable one could
 * show a lagging member's past for as long as it lags) and its lease's
 * time to live; -ECHILD in a forked child, -ORBIT_EUNAVAILABLE, -EPROTO,
 * -ORBIT_ECORRUPT (a key under the fleet's prefix this backend did not
 * write).
 */
ORBIT_API int orbit_lock_lookup(orbit_lock_t *lock, const orbit_lock_key_t *key,
				struct orbit_lock_entry *entry);

/**
 * orbit_lock_foreach - call @fn for each occupied entry (expired ones
 * too, flagged), in slot order, from consistent slot copies.
 * @fn: returns 0 to continue, anything else to stop (returned as is).
 * Context: like lookup (no serializer); a snapshot per slot, not of the
 * whole table.
 * Returns: the number of entries visited, @fn's non-zero value,
 * -EINVAL, or -EAGAIN as for lookup.
 * ETCD: one serializable range over the fleet's keys, in key order (any
 * member answers from its copy, no quorum round: an inspection that still
 * lists what a member knows without quorum), then each entry's lease for
 * its deadline (the leader answers); a key another writer put under the
 * prefix is skipped and counted (stats.corrupt_slots). Also -ECHILD,
 * -ORBIT_EUNAVAILABLE, -EPROTO.
 */
ORBIT_API int orbit_lock_foreach(orbit_lock_t *lock,
				 int (*fn)(const struct orbit_lock_entry *e, void *ctx), void *ctx);

/**
 * orbit_lock_holder_alive - is the entry's holder process still running?
 * Opens a pidfd for holder_pid and compares its pidfs inode number with
 * the recorded holder_pidfs_ino: pidfs numbers every process from a
 * 64-bit counter and never gives a number to another process, so a pid
 * reused by any other process - even within the same clock tick, where
 * the /proc start time is equal - is "gone". A holder that exited but is
 * not yet reaped (a zombie: its pidfd polls readable) is gone too.
 * Entries whose holder_pidfs_ino is 0 (written on a kernel without
 * pidfs, before Linux 6.9) fall back to comparing /proc/<pid>/stat's
 * start time, which a pid reused within one tick (1/100 s) fools.
 * Context: any thread; syscalls (pidfd_open, fstat, fstatfs, poll,
 * close; or open/read of /proc).
 * Returns: 1 alive, 0 gone (exited, or the pid now names another
 * process), -EINVAL (NULL, or holder_pid 0), or a negative errno of
 * pidfd_open/fstat when the question cannot be answered (-EMFILE,
 * -ENFILE, -ENOMEM, -ENOSYS under a seccomp filter): treat it as
 * "unknown", not as "gone".
 */
ORBIT_API int orbit_lock_holder_alive(const struct orbit_lock_entry *e);

/**
 * orbit_lock_stats - copy this handle's counters.
 * Context: any thread; relaxed loads (counters only).
 * Returns: 0, -EINVAL.
 */
ORBIT_API int orbit_lock_stats(orbit_lock_t *lock, struct orbit_lock_stats *out);

/**
 * orbit_lock_state_revision - the table's current state revision (it
 * increases on every successful change). ETCD: the highest cluster
 * revision any answer to this handle carried (no request is made).
 * Context: any thread; one acquire load (ETCD: a mutex). Returns the
 * revision, 0 on NULL.
 */
ORBIT_API uint64_t orbit_lock_state_revision(orbit_lock_t *lock);

ORBIT_END_DECLS

#endif /* ORBIT_LOCK_H */
