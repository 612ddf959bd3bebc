/* SPDX-License-Identifier: MIT */
/*
 * shm/segment.h: named fleet segments (internal). Every orbit SHM object is
 * a POSIX SHM object "/orbit.<fleet>.<name>" that starts with the header
 * below. This module creates (O_CREAT|O_EXCL, initialised under the
 * segment's flock, "ready" published last), opens and validates segments,
 * and gives bounds-checked access to their bytes. Nothing here starts a
 * thread; nothing here knows what the body holds.
 *
 * Header layout (struct orbit_seg_header, 128 bytes at offset 0):
 *   field           writer                    reader        torn read / crash
 *   magic..epoch_ns creator, before ready     every opener  creator killed before
 *                   (plain stores)                          ready: init_state stays
 *                                                           INITIALISING, the flock is
 *                                                           free -> next opener repairs
 *   init_state      creator: release store    openers:      never torn (atomic u32)
 *                   READY last (SG-R1)           acquire (SG-A1), but loaded before
 *                                               the magic: mid-creation a pair of
 *                                               state 0 and orbit's magic is seen,
 *                                               so "corrupt" is decided only under
 *                                               the flock (settled(), SG-A3)
 *   generation      reset (under the body's   anyone        atomic u64; a reader
 *                   serializer), +1 release   acquire        sees old or new
 *   creator_pid     creator                   display       informational only
 * Everything after header_bytes belongs to the kind's own layout, sized
 * and reserved fully at creation (fallocate before any page is touched, so
 * a full /dev/shm is -ENOSPC at open, never a SIGBUS later).
 *
 * Hostile names: /dev/shm is writable by every local user, so a name may
 * hold a FIFO, a directory, a socket, a device node or a symlink. Every
 * open goes through one helper (open_checked() in segment.c): shm_open with
 * O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC|O_NOCTTY, then fstat on the descriptor
 * (regular file, our euid, mode no wider than configured) before a byte is
 * read or mapped. A refusal is a code (-ORBIT_ENOTREG, -ORBIT_EOWNER, ...)
 * plus a message naming the segment: orbit_segment_last_error().
 *
 * File size states: a creator sizes the file from 0 to total_bytes in one
 * step (fallocate, or ftruncate before the fallback's writes), so a size
 * strictly between 0 and the header's total_bytes is never a creator's
 * state: it is a truncation, -ORBIT_ETRUNCATED for every opener. Size 0
 * with no creator holding the flock is a truncation to 0 or a creator that
 * died before sizing it (the two cannot be told apart): -ORBIT_ETRUNCATED
 * for an opener that may not create, re-initialised by one that may.
 */
#ifndef ORBIT_SHM_SEGMENT_H
#define ORBIT_SHM_SEGMENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/time.h"

#define ORBIT_SEG_MAGIC 0x4745534f4254524full /* "ORBTOSEG" little-endian */
#define ORBIT_SEG_HEADER_BYTES 128u
#define ORBIT_SEG_NAME_MAX 96u	 /* "/orbit.<fleet>.<name>" with NUL */
#define ORBIT_FLEET_NAME_MAX 40u /* [A-Za-z0-9_-]{1,40} */
#define ORBIT_SEG_DEFAULT_INIT_TIMEOUT_MS 2000

/* Segment kinds. 228/229 are the orbit-lock defaults (a layout may move them). */
enum orbit_seg_kind {
	ORBIT_SEG_KIND_LOCK_STATE = 228,
	ORBIT_SEG_KIND_LOCK_RING = 229,
	ORBIT_SEG_KIND_MEMBERS = 230,
	ORBIT_SEG_KIND_STATS = 231,
	ORBIT_SEG_KIND_SPOT_QUEUE = 232,
	ORBIT_SEG_KIND_TEST = 250, /* tests only */
};

enum orbit_seg_init_state {
	ORBIT_SEG_INITIALISING = 0x494e4954u, /* "INIT" */
	ORBIT_SEG_READY = 0x52454459u,	      /* "REDY" */
};

struct orbit_seg_header {
	uint64_t magic;		     /* ORBIT_SEG_MAGIC */
	uint32_t kind;		     /* enum orbit_seg_kind (or a layout's own) */
	uint32_t layout_version;     /* the kind's layout version */
	uint32_t header_bytes;	     /* ORBIT_SEG_HEADER_BYTES */
	uint32_t creator_pid;	     /* informational */
	uint64_t total_bytes;	     /* file size fixed at creation */
	uint64_t fingerprint;	     /* orbit__seg_fingerprint() of the kind's layout */
	uint64_t epoch_ns;	     /* CLOCK_REALTIME at creation: orders re-creations */
	_Atomic uint64_t generation; /* bumped by reset of the body */
	_Atomic uint32_t init_state; /* enum orbit_seg_init_state */
	uint32_t reserved0;
	uint8_t reserved[64]; /* growth; zero */
};
_Static_assert(sizeof(struct orbit_seg_header) == ORBIT_SEG_HEADER_BYTES, "header size");

/* What the caller expects a segment to be. */
struct orbit_seg_spec {
	uint32_t kind;
	uint32_t layout_version;
	uint64_t total_bytes; /* including the header */
	uint64_t fingerprint;
	/*
	 * Body initialiser, run by the creator (or the repairer of a segment
	 * whose creator died initialising) under the segment's exclusive
	 * flock, before READY is published. body points just past the header,
	 * zero-filled. Returns 0 or a negative errno (creation then fails and
	 * the object is unlinked).
	 */
	int (*init)(void *body, uint64_t body_bytes, void *arg);
	void *init_arg;
	/*
	 * Its users hold byte-range (OFD) locks on its file while attached
	 * (the member directory's rows): an empty or never-READY file is then
	 * re-initialised only while nobody holds one (-EBUSY otherwise). Off
	 * for every other kind, whose users hold none: there a lock would be
	 * a stranger's, and it may not keep a read-write opener from
	 * re-creating the segment.
	 */
	bool attach_locks;
};

enum orbit_seg_open_mode {
	ORBIT_SEG_OPEN = 0,	  /* open an existing segment */
	ORBIT_SEG_CREATE,	  /* create; -EEXIST if it exists */
	ORBIT_SEG_OPEN_OR_CREATE, /* open, or create when missing */
};

struct orbit_seg_opts {
	enum orbit_seg_open_mode how;
	bool readonly;	     /* O_RDONLY + PROT_READ (orbitctl); never with create */
	unsigned mode;	     /* permission bits at creation, and the widest accepted
	                       at open: 0600 default (0 means 0600), 0640 or 0660
	                       for a group (shm/segment_perm.h has the rule) */
	int init_timeout_ms; /* how long an opener waits for READY (0: default) */
	uint32_t gid;	     /* the group of a group mode: given to a new segment,
	                       the only foreign group trusted at open (0: getegid()) */
	uint32_t owner_uid;  /* the only uid that may create, and the only owner
	                       accepted at open (0: any current member of gid with
	                       0660; required with 0640): shm/segment_perm.h */
};

/* A mapped segment in this process. */
typedef struct orbit_seg {
	int fd;	       /* O_CLOEXEC; its flock belongs to this process's open file description */
	void *base;    /* mapping of total_bytes */
	uint64_t size; /* total_bytes, validated against fstat */
	bool readonly;
	bool created; /* this handle created (or repaired) it */
	pid_t pid;    /* process that opened it: a forked child must re-open */
	dev_t dev;    /* the object mapped (fstat of fd): orbit__seg_reopen() */
	ino_t ino;    /* proves a second open reached the same object */
	char name[ORBIT_SEG_NAME_MAX];
} orbit_seg_t;

/*
 * orbit__seg_name - build "/orbit.<fleet>.<name>".
 * Returns 0, or -EINVAL for a fleet or name that is empty, too long, or has
 * characters outside [A-Za-z0-9_-] (fleet) / [A-Za-z0-9_.-] (name).
 */
int orbit__seg_name(char *buf, size_t len, const char *fleet, const char *name);

/*
 * orbit__seg_refuse - record why an operation on the mapped segment @seg
 * was refused, as "/dev/shm/orbit.<fleet>.<name>: <reason>", for
 * orbit_segment_last_error() on this thread (a full ring or member
 * directory names its segment and its limit this way).
 * Context: any thread; thread-local; no allocation, no syscall.
 * Returns: @code.
 */
__attribute__((format(printf, 3, 4))) int orbit__seg_refuse(int code, const orbit_seg_t *seg,
							    const char *fmt, ...);

/*
 * orbit__seg_open - create and/or open, map and validate a segment.
 * @seg:   filled on success; untouched on failure.
 * Context: any thread; syscalls (shm_open, fstat, flock, fallocate, mmap);
 * never blocks on the object itself (O_NONBLOCK: a FIFO under the name is
 * refused, not waited on); may sleep up to init_timeout_ms while a creator
 * initialises. Every refusal other than -ENOENT also leaves a message
 * naming the segment for orbit_segment_last_error() on this thread.
 * Returns 0, or: -EINVAL (bad names/options, a mode segment_perm.h
 * refuses), -ENOENT (missing and not created), -EEXIST (ORBIT_SEG_CREATE
 * and it exists), -EACCES (permission; its message names the uid that
 * holds the name), -EPERM (creating with a
 * group mode for a group this process is not in, or creating while
 * opts->owner_uid is another uid), -ORBIT_ENOTREG
 * (the name is a FIFO, directory, socket, device node or symlink), -ORBIT_EOWNER
 * (owned by another uid, and not by a current member of the configured
 * group of a group mode; not by opts->owner_uid; a second link),
 * -ORBIT_EMODE (mode wider than opts->mode, group bits for another
 * group than opts->gid, a POSIX access ACL), -ENOSPC (creating or repairing: /dev/shm has no
 * room for total_bytes; nothing is left under the name),
 * -ORBIT_ETRUNCATED (the file is shorter than its header's total_bytes,
 * or shorter than a header, or empty with no creator at work and this
 * opener may not create), -ORBIT_EMAGIC, -ORBIT_EVERSION, -ORBIT_EKIND,
 * -ORBIT_ESIZE (header sizes disagree with the file or the spec),
 * -ORBIT_EFINGERPRINT (checked in that order; a whole segment whose size
 * and fingerprint both differ from the spec's was made with another
 * layout, a lock table of another slot count: -ORBIT_EFINGERPRINT too), -ORBIT_EINITTIMEOUT (still
 * initialising past the bound while the creator holds the flock, or found
 * initialising with its creator dead by an opener that may not repair),
 * -ORBIT_ECORRUPT (orbit's magic but an init state neither READY nor
 * initialising: never repaired away), or another negative errno from the
 * kernel.
 * A segment whose creator died initialising (flock free, not READY, full
 * size or empty) is re-initialised by an opener that may create
 * (ORBIT_SEG_OPEN_OR_CREATE); a truncated one (non-zero size) never is.
 */
int orbit__seg_open(orbit_seg_t *seg, const char *fleet, const char *name,
		    const struct orbit_seg_spec *spec, const struct orbit_seg_opts *opts);

/* Unmap and close. Safe on a zeroed or already closed handle. */
void orbit__seg_close(orbit_seg_t *seg);

/*
 * orbit__seg_reopen - a second open file description of @seg's object, by
 * name, with the checks of the first open: O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC,
 * then fstat: a regular file, the same object @seg maps (st_dev, st_ino),
 * at least seg->size bytes (a mapping of it cannot SIGBUS).
 * @readonly: O_RDONLY, else O_RDWR.
 * Context: async-signal-safe (open, fstat, close only): a pthread_atfork
 * child handler may call it. Sets no message.
 * Returns the fd, or -ENOENT (the name is gone), -ORBIT_ENOTREG, -ESTALE
 * (the name now holds another object), -ORBIT_ETRUNCATED, or another
 * negative errno from open/fstat.
 */
int orbit__seg_reopen(const orbit_seg_t *seg, bool readonly);

/* Remove the name (mapped handles stay valid). Returns 0, -ENOENT, -EINVAL. */
int orbit__seg_unlink(const char *fleet, const char *name);

/*
 * Does another open file description hold a byte-range lock (OFD or
 * POSIX) anywhere in @fd's file, past its end too (a member directory's
 * row locks: shm/members.c)? 1 yes, 0 no, or -errno from fcntl. Sets no
 * message.
 */
int orbit__seg_file_locked(int fd);

/*
 * orbit__seg_at - the one bounds-checked accessor: pointer to [off, off+len)
 * inside the mapping, or NULL when any byte of it is outside (overflow-safe).
 * Every offset, length or index read from SHM goes through here (or through
 * a check against a size this module validated).
 */
static inline void *orbit__seg_at(const orbit_seg_t *seg, uint64_t off, uint64_t len)
{
	if (!seg || !seg->base || off > seg->size || len > seg->size - off)
		return (void *)0;
	return (char *)seg->base + off;
}

static inline struct orbit_seg_header *orbit__seg_header(const orbit_seg_t *seg)
{
	return (struct orbit_seg_header *)seg->base;
}

/* The body: everything after the header. */
static inline void *orbit__seg_body(const orbit_seg_t *seg)
{
	return (char *)seg->base + ORBIT_SEG_HEADER_BYTES;
}

/*
 * orbit__seg_fingerprint - FNV-1a 64 over @n 64-bit words describing a
 * layout (sizes, offsets, counts, kinds). Peers that build the same words
 * agree; a peer with another layout gets -ORBIT_EFINGERPRINT at open.
 */
uint64_t orbit__seg_fingerprint(const uint64_t *words, size_t n);

/*
 * orbit__seg_lock / orbit__seg_unlock - flock(LOCK_EX) / flock(LOCK_UN) on
 * this handle's open file description. The kernel releases it when the
 * process dies. Returns 0 or a negative errno (-EBADF on a readonly handle
 * is fine: flock works on any fd). Blocking.
 */
int orbit__seg_lock(const orbit_seg_t *seg);
int orbit__seg_unlock(const orbit_seg_t *seg);
/* Non-blocking: 0 when taken, -EWOULDBLOCK when another description holds it. */
int orbit__seg_trylock(const orbit_seg_t *seg);

/*
 * CLOCK_MONOTONIC / CLOCK_REALTIME in ns: the one clock helper of shm/
 * (the lock table's deadlines, the serializer's bounds, heartbeats),
 * inline, so a lock operation reads the vDSO without a call into
 * segment.c. Context: any thread; no allocation, vDSO (no syscall).
 */
static inline uint64_t orbit__now_mono_ns(void)
{
	return orbit__clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t orbit__now_real_ns(void)
{
	return orbit__clock_ns(CLOCK_REALTIME);
}

#endif /* ORBIT_SHM_SEGMENT_H */
