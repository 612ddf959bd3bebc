/* SPDX-License-Identifier: MIT */
/*
 * shm/segment_perm.h: the permission rule of fleet segments (internal),
 * used by shm/segment.c for every kind (lock table, ring, member
 * directory, stats, Spot queues): the mode and group a creator gives a
 * new segment, and the owner, group and mode an opener accepts. The rule
 * is written once, here; no kind makes its own check.
 *
 * The rule (struct orbit_seg_opts .mode and .gid):
 * - mode 0 means 0600. A valid mode is 0600 plus any of the group bits
 *   0060 (0640: the group reads, 0660: the group reads and writes);
 *   anything else (other bits, exec bits, no owner rw) is -EINVAL.
 * - gid is the group of a group mode; 0 means the effective gid of the
 *   calling process. It is ignored when the mode has no group bit.
 * - Create: the object is made 0600 (O_EXCL), then given gid (fchown; a
 *   process outside that group gets -EPERM, and the creation fails) and
 *   then exactly the mode (fchmod, so no umask narrows it), before any
 *   byte is written. The name never stands with group bits of a group
 *   that was not configured.
 * - Open: the owner must be our effective uid, or, with a group mode
 *   only, the file's group must be the configured gid and its link count
 *   1 (else -ORBIT_EOWNER; a second name would be a member's file linked
 *   under this one, which fs.protected_hardlinks=0 lets anyone do). A file in /dev/shm has a group only its creator could
 *   give it (the creator's gid, or a group the owner belongs to: chown(2)),
 *   so a process outside the group cannot make one; when /dev/shm itself
 *   is setgid to that group (every new file would get it) a foreign owner
 *   is refused all the same. Then no bit may be wider than the configured
 *   mode, and a file with group bits must belong to the configured group
 *   (else -ORBIT_EMODE).
 */
#ifndef ORBIT_SHM_SEGMENT_PERM_H
#define ORBIT_SHM_SEGMENT_PERM_H

#include <sys/stat.h>

#include "shm/segment.h"

/* The configured mode (0 -> 0600) and group (0 -> getegid()). */
unsigned orbit__seg_perm_mode(const struct orbit_seg_opts *o);
gid_t orbit__seg_perm_gid(const struct orbit_seg_opts *o);

/* 0 when @o->mode is valid (see above), else -EINVAL. No syscall. */
int orbit__seg_perm_valid(const struct orbit_seg_opts *o);

/*
 * orbit__seg_perm_apply - give the new object @fd (created 0600, nothing
 * written yet) the configured group and then the configured mode. Also
 * called by the repairer of a segment whose creator died initialising
 * (it may have died before this step); a segment of another uid is left
 * as it is (the opener's check accepted it).
 * Context: the creator or repairer under the segment's flock, before the
 * first byte; syscalls (fstat, fchown, fchmod).
 * Returns 0, -EPERM (the process is not in the configured group), or
 * another negative errno of fchown/fchmod.
 */
int orbit__seg_perm_apply(int fd, const struct orbit_seg_opts *o);

/*
 * orbit__seg_perm_shm_open - shm_open(@name, @oflag) of an existing
 * segment. With a group mode, a segment another uid is creating is 0600
 * (and empty) until that creator's orbit__seg_perm_apply(): an -EACCES
 * while the name looks like that is retried every 1 ms up to the init
 * timeout, so two members starting at once both succeed. Without a group
 * mode nobody else's segment is ever accepted, so there is no wait.
 * Context: any thread; syscalls (shm_open, stat of the name while waiting).
 * Returns the fd, or a negative errno (-EACCES after the wait).
 */
int orbit__seg_perm_shm_open(const char *name, int oflag, const struct orbit_seg_opts *o);

/*
 * orbit__seg_perm_check - the opener's check of @st (fstat of the
 * descriptor it will map, never of the name).
 * Context: any thread; a stat("/dev/shm") only when the owner is foreign.
 * Returns 0, -ORBIT_EOWNER (a foreign owner not covered by the configured
 * group), -ORBIT_EMODE (a bit wider than the configured mode, or group
 * bits for a group that is not the configured one).
 */
int orbit__seg_perm_check(const struct stat *st, const struct orbit_seg_opts *o);

/*
 * orbit__seg_perm_removable - may this process remove segment @name of
 * @fleet? /dev/shm is sticky: only the owner (or root) unlinks a name.
 * A check before a removal of several names, so that none is removed
 * when one cannot be (it does not make the removal atomic).
 * Context: any thread; one lstat.
 * Returns 0 (ours, root, or missing), -EACCES (another uid's), -EINVAL.
 */
int orbit__seg_perm_removable(const char *fleet, const char *name);

#endif /* ORBIT_SHM_SEGMENT_PERM_H */
