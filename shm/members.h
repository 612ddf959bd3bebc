/* SPDX-License-Identifier: MIT */
/*
 * shm/members.h: the fleet's member directory (internal), segment kind 230
 * "/orbit.<fleet>.members". A fixed table of rows, one per attached process
 * (pid, process start time, name, heartbeat for display, state, row
 * generation). Liveness is PROVED BY THE KERNEL, never by a pid alone (pids
 * are reused) and never by a heartbeat timeout:
 *
 *  - A member owns its row by holding an OFD write lock (fcntl F_OFD_SETLK)
 *    on the row's byte range of the segment file, taken through a private
 *    open file description (a second shm_open of the object). The kernel
 *    drops the lock when the last reference to that description goes away,
 *    i.e. when the member dies. Claiming a row IS taking its lock: two
 *    joiners cannot get the same row, and a row whose lock can be taken is
 *    provably free or dead, whatever its bytes say.
 *  - Any other process tests a row with F_OFD_GETLK (F_RDLCK probe, so a
 *    read-only opener can test too): a conflicting lock means alive.
 *  - For prompt death notification, orbit__members_pidfd_open() opens a
 *    pidfd for the row's pid and verifies the process start time (/proc
 *    stat field 22) AFTER opening, so a recycled pid is refused; the pidfd
 *    polls readable when the process exits. The poller then re-proves the
 *    death with the OFD lock test before reclaiming.
 *
 * fork() trap: OFD locks belong to the open file description, which a
 * forked child SHARES. A child holding the description would keep its dead
 * parent "alive". So the liveness description is O_CLOEXEC (gone at exec)
 * and a pthread_atfork child handler closes it in every forked child (the
 * parent's lock stays: the parent still references the description). The
 * child is NOT the member: its handle refuses every call with -ECHILD and
 * the child must open its own handle and join. Passing the fd elsewhere
 * (SCM_RIGHTS) would defeat the proof; orbit never does.
 *
 * Row layout (struct orbit_member_row, 128 bytes):
 *   field        writer                       reader         torn read / crash
 *   seq          row owner: odd, bytes, even  snapshots      owner killed mid-write
 *                (MB-W1/MB-W2 in members.c)         (MB-A1/MB-A2)        leaves seq odd: the row
 *                                                            is dead (lock free) and
 *                                                            the reclaimer rewrites it
 *   state        row owner (under row lock)   display        FREE/JOINING/LIVE/LEFT;
 *                                                            liveness never trusts it
 *   generation   row owner at join, +1        lane owners    names one tenure: a
 *                reclaimer at reclaim, +1                    ring lane stores
 *                                                            (row, generation)
 *   pid,         row owner at join            pidfd helper,  a lie costs nothing: the
 *   start_time                                display        OFD lock decides
 *   name         row owner at join            display        validated (NUL, printable)
 *   heartbeat_ns row owner, relaxed           display only   never decides liveness
 */
#ifndef ORBIT_SHM_MEMBERS_H
#define ORBIT_SHM_MEMBERS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <orbit/fleet.h>

#include "shm/segment.h"

#define ORBIT_MEMBERS_SEG_NAME "members"
#define ORBIT_MEMBERS_LAYOUT_VERSION 1u
#define ORBIT_MEMBERS_DEFAULT_ROWS 64u
#define ORBIT_MEMBERS_MAX_ROWS 1024u
#define ORBIT_MEMBER_NAME_MAX 32u /* with NUL */

/* enum orbit_member_state (FREE, JOINING, LIVE, LEFT) is public: orbit/fleet.h. */

struct orbit_member_row {
	_Atomic uint32_t seq;	     /* odd while the owner rewrites the row */
	_Atomic uint32_t state;	     /* enum orbit_member_state (display) */
	_Atomic uint32_t generation; /* bumped at every join and reclaim */
	uint32_t pid;
	uint64_t start_time_ticks;     /* /proc/<pid>/stat field 22 */
	uint64_t joined_real_ns;       /* CLOCK_REALTIME at join */
	_Atomic uint64_t heartbeat_ns; /* CLOCK_MONOTONIC, display only */
	char name[ORBIT_MEMBER_NAME_MAX];
	uint8_t reserved[56];
};
_Static_assert(sizeof(struct orbit_member_row) == 128, "member row size");

/* Members body: this header, then rows at rows_off (a multiple of 128). */
struct orbit_members_shm {
	uint32_t rows;		   /* row count (layout) */
	uint32_t row_bytes;	   /* sizeof(struct orbit_member_row) */
	uint64_t rows_off;	   /* from the segment start */
	_Atomic uint64_t reclaims; /* rows proven dead and reclaimed */
	uint8_t reserved[104];
};
_Static_assert(sizeof(struct orbit_members_shm) == 128, "members header size");

/* A process-local copy of one row, validated. */
struct orbit_member_info {
	uint32_t row;
	uint32_t state;
	uint32_t generation;
	uint32_t pid;
	uint64_t start_time_ticks;
	uint64_t joined_real_ns;
	uint64_t heartbeat_ns;
	bool alive; /* kernel-proved at snapshot time */
	bool self;  /* this handle's own row */
	char name[ORBIT_MEMBER_NAME_MAX];
};

typedef struct orbit_members orbit_members_t;

/*
 * orbit__members_open - open (or create) the fleet's member directory.
 * @rows: row count of the layout (0: ORBIT_MEMBERS_DEFAULT_ROWS); all peers
 * must agree (else -ORBIT_EFINGERPRINT).
 * @opts: as orbit__seg_open (NULL: open or create, 0600). A readonly handle
 * can test liveness and snapshot rows, but not join or reclaim.
 * Context: any thread; syscalls; allocates. Returns 0 or the codes of
 * orbit__seg_open, -EINVAL (rows out of range), -ENOMEM.
 */
int orbit__members_open(orbit_members_t **out, const char *fleet, uint32_t rows,
			const struct orbit_seg_opts *opts);

/* Leave (when joined), unmap and free. NULL is fine. */
void orbit__members_close(orbit_members_t *m);

/* Remove the segment's name. Returns 0, -ENOENT, -EINVAL. */
int orbit__members_unlink(const char *fleet);

/*
 * orbit__members_unlink_damaged - remove the name of a member directory
 * orbit__members_open() refused as damaged (truncated, wrong magic,
 * version, kind, size or fingerprint, corrupt, never initialised, not a
 * regular file), asking the kernel instead of its bytes whether anyone is
 * attached: a live member holds its row's OFD lock whatever the file's
 * size or bytes say (a lock range may lie past the end of a truncated
 * file), and a creator holds the file's flock while it initialises. The
 * flock is taken here (non-blocking) and held across the check and the
 * removal, so an opener that would repair the file meanwhile waits and
 * then finds no name. Every layout of the directory must keep these two
 * rules (a member holds an fcntl lock in the file; a creator holds its
 * flock while it initialises): another build's directory (another
 * version, kind or fingerprint) is judged by them too. A FIFO, socket,
 * device node or symlink under the name is removed (nobody can have
 * joined one); a directory is left (-ORBIT_ENOTREG). Neither reads nor
 * maps the file. @dry_run: check only, remove nothing.
 * Context: any thread; lstat, shm_open (O_NOFOLLOW, O_NONBLOCK), flock,
 * fstat, one F_OFD_GETLK over the whole file, shm_unlink, close.
 * Returns 0 (removed, or removable with @dry_run), -EBUSY (a lock is held:
 * this process's own rows count; or the name changed meanwhile),
 * -ORBIT_ENOTREG (a directory), -ENOENT, -EINVAL (bad name), or -errno
 * of the open (-EACCES, ...).
 */
int orbit__members_unlink_damaged(const char *fleet, bool dry_run);

/*
 * orbit__members_join - take a row for this process: the first row whose
 * OFD lock can be taken (free, left, or dead: taking the lock proves it).
 * @name: display name, truncated to ORBIT_MEMBER_NAME_MAX-1 bytes; bytes
 * outside printable ASCII are replaced by '?'.
 * Context: one call per handle at a time (the handle has a process-local
 * mutex); syscalls (open, fcntl, /proc read).
 * Returns the row index (>= 0), -EALREADY (this handle already joined),
 * -ENOSPC (every row held by a live member), -EPERM (no row free, and
 * at least one row no member holds is pinned by another description's
 * read lock: any process that can read the file can take one, e.g. a
 * reader of a 0640 fleet; doc/threat-model.md), -EROFS (readonly handle),
 * -ECHILD (handle inherited through fork), -ESTALE / -ORBIT_ENOTREG /
 * -ORBIT_ETRUNCATED / -ENOENT (the name no longer leads to the object this
 * handle maps: orbit__seg_reopen()), or a negative errno.
 */
int orbit__members_join(orbit_members_t *m, const char *name);

/*
 * orbit__members_leave - mark the row LEFT and drop its lock. The row's
 * generation stays, so ring lanes owned by (row, generation) are now
 * reclaimable. Returns 0, -ENOENT (not joined), -ECHILD.
 */
int orbit__members_leave(orbit_members_t *m);

/* This handle's row and generation; -ENOENT when not joined. */
int orbit__members_self(orbit_members_t *m, uint32_t *generation);

/* Row count of the layout. */
uint32_t orbit__members_rows(const orbit_members_t *m);

/*
 * orbit__members_is_alive - is a live process holding @row's lock?
 * For this handle's own row: 1 while joined. Context: any thread; one fcntl.
 * Returns 1 alive, 0 dead or free, -EINVAL (row out of range), -ECHILD.
 */
int orbit__members_is_alive(orbit_members_t *m, uint32_t row);

/*
 * orbit__members_is_alive_gen - alive AND still the same tenure (the row's
 * generation equals @generation). What ring lane reclaim asks.
 * Returns 1, 0, -EINVAL, -ECHILD.
 */
int orbit__members_is_alive_gen(orbit_members_t *m, uint32_t row, uint32_t generation);

/*
 * orbit__members_snapshot - copy and validate one row, with its liveness.
 * Context: any thread; lock-free copy + one fcntl. Returns 0, -EINVAL (row
 * out of range), -EAGAIN (the owner kept rewriting it), -ORBIT_ECORRUPT
 * (bytes fail validation; a dead row with garbage is reported, not trusted).
 */
int orbit__members_snapshot(orbit_members_t *m, uint32_t row, struct orbit_member_info *out);

/*
 * orbit__members_foreach - call @fn with a validated snapshot of every row
 * that is alive or not FREE (rows that fail validation or keep changing
 * are skipped: use snapshot() per row to see why). Stops when @fn returns
 * non-zero. Context: any thread; one fcntl per row.
 * Returns the number of rows passed to @fn, -EINVAL, or -ECHILD.
 */
int orbit__members_foreach(orbit_members_t *m,
			   int (*fn)(void *ctx, const struct orbit_member_info *info), void *ctx);

/*
 * orbit__members_count_live_others - live members other than this handle's
 * row (reset_transport refuses with -EBUSY while this is > 0).
 * Returns the count or -ECHILD.
 */
int orbit__members_count_live_others(orbit_members_t *m);

/*
 * orbit__members_reclaim - prove @row dead (take its lock through this
 * handle's segment description) and free it: state FREE, generation + 1.
 * Whoever proves a member dead may reclaim; racing reclaimers are
 * serialised by the lock. Returns 1 reclaimed, 0 alive (or our own row),
 * -EPERM (no member holds it, but another description's read lock pins
 * it: it cannot be reclaimed while that lock is held), -EINVAL, -EROFS,
 * -ECHILD, or a negative errno from fcntl.
 */
int orbit__members_reclaim(orbit_members_t *m, uint32_t row);

/*
 * orbit__members_pidfd_open - a pollable death notification for @row's
 * member: pidfd_open(pid), then the process start time is checked against
 * the row (after the open, so a recycled pid cannot slip in). POLLIN on the
 * fd means the process has exited; re-check with is_alive() before
 * reclaiming (the lock, not the pid, is the proof).
 * Returns an fd (O_CLOEXEC; the caller closes it), -ESRCH (no such process,
 * the pid is a thread rather than a process, or start time differs: the
 * member is dead), -EINVAL, -ENOSYS (kernel without pidfd_open),
 * -ORBIT_ECORRUPT, -EAGAIN (row being rewritten), -EPROTO (/proc stat
 * unparsable), or another negative errno of pidfd_open (-EMFILE).
 */
int orbit__members_pidfd_open(orbit_members_t *m, uint32_t row, uint32_t *generation);

/* Store CLOCK_MONOTONIC into this handle's row heartbeat (display only). */
void orbit__members_heartbeat(orbit_members_t *m);

/* The segment handle (for tests and orbitctl's raw view). */
orbit_seg_t *orbit__members_seg(orbit_members_t *m);

/*
 * orbit__proc_start_time - field 22 of /proc/<pid>/stat (clock ticks after
 * boot). Returns 0, -ESRCH (no such process), -EPROTO (unparsable).
 */
int orbit__proc_start_time(pid_t pid, uint64_t *ticks);

/*
 * orbit__pidfd_open - pidfd_open(@pid, 0) (O_CLOEXEC). Returns the fd,
 * -ESRCH (no such process, or @pid names a thread, not a process),
 * -ENOSYS (kernel without pidfd_open), or another negative errno (-EMFILE).
 */
int orbit__pidfd_open(pid_t pid);

/*
 * orbit__pidfd_ino - the pidfs inode number of @pidfd's process. pidfs
 * (Linux 6.9+) gives every process one inode whose number comes from a
 * 64-bit counter: it names that process for the whole uptime of the host
 * and is never given to another, unlike a pid (reused) or a start time
 * (1/100 s: a pid reused within a tick has the same one).
 * Returns 0, -ENOSYS (no pidfs: pidfds share one anon inode; or a 32-bit
 * st_ino), or a negative errno of fstat/fstatfs.
 */
int orbit__pidfd_ino(int pidfd, uint64_t *ino);

/* orbit__pid_ino - orbit__pidfd_open + orbit__pidfd_ino + close: @pid's pidfs inode now. */
int orbit__pid_ino(pid_t pid, uint64_t *ino);

/*
 * orbit__proc_state - field 3 of /proc/<pid>/stat ('R', 'S', 'D', 'T'
 * stopped, 't' tracing stop, 'Z' zombie, ...). One open/read/close.
 * Returns 0, -ESRCH (no such process), -EPROTO (unparsable).
 */
int orbit__proc_state(pid_t pid, char *state);

#endif /* ORBIT_SHM_MEMBERS_H */
