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
 * - owner_uid: 0640 has one writer, so it must name it (owner_uid 0 with
 *   0640 is -EINVAL; a root-owned 0640 fleet cannot be named: run its
 *   writer under its own uid). With 0660 it is optional: 0 lets every
 *   current member create and be trusted. When set (any mode), only that
 *   uid may create a segment (-EPERM for any other euid, before O_CREAT)
 *   and only a file of that uid is accepted at open (-ORBIT_EOWNER).
 * - Open: the link count must be 1, for our own file too (else
 *   -ORBIT_EOWNER; a second name is a file linked under this one - another
 *   fleet's, or an old table kept past an unlink - which
 *   fs.protected_hardlinks=0 lets anyone do). The owner must be
 *   owner_uid when set, and our effective uid or, with a group mode only,
 *   a uid that is a member of the configured gid now (its passwd entry's
 *   primary group, or named in the group's entry: getpwuid_r, getgrgid_r,
 *   looked up at every open, not cached), of a file whose group is the
 *   configured gid (else -ORBIT_EOWNER), or - root inspecting a service
 *   user's fleet - owner_uid itself when the opener is read-only and runs
 *   as root (it maps PROT_READ, never creates, and trusts only the uid it
 *   named). A file's group alone proves
 *   nothing lasting: an ex-member keeps its files of the group, and root
 *   can give any file any group; when /dev/shm itself is setgid to the
 *   group a foreign owner is refused all the same. Then no bit may be
 *   wider than the configured mode, a file with group bits must belong to
 *   the configured group, and the file may carry no POSIX access ACL
 *   (system.posix_acl_access: its named entries hide behind the group
 *   bits) (else -ORBIT_EMODE). A creator removes an access ACL inherited
 *   from a default ACL of /dev/shm before it sets the mode.
 */
#ifndef ORBIT_SHM_SEGMENT_PERM_H
#define ORBIT_SHM_SEGMENT_PERM_H

#include <stdbool.h>
#include <sys/stat.h>

#include "shm/segment.h"

/* The configured mode (0 -> 0600) and group (0 -> getegid()). */
unsigned orbit__seg_perm_mode(const struct orbit_seg_opts *o);
gid_t orbit__seg_perm_gid(const struct orbit_seg_opts *o);

/* 0 when @o->mode and @o->owner_uid are valid (see above), else -EINVAL. No syscall. */
int orbit__seg_perm_valid(const struct orbit_seg_opts *o);

/*
 * orbit__seg_perm_may_create - may this process create a segment under @o?
 * Context: any thread; geteuid only.
 * Returns 0, or -EPERM (owner_uid is set and is not our euid).
 */
int orbit__seg_perm_may_create(const struct orbit_seg_opts *o);

/*
 * orbit__seg_perm_uid_in_group - is @uid a member of @gid in the user
 * database now (passwd primary group, or listed in the group entry)?
 * Context: any thread, not async-signal-safe; NSS lookups (getpwuid_r,
 * getgrgid_r: files, or a directory service), malloc.
 * Returns true or false (a uid or group without an entry, or a failed
 * lookup, is false).
 */
bool orbit__seg_perm_uid_in_group(uid_t uid, gid_t gid);

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
 * while the name looks like that, and its owner is one the check below
 * would trust (owner_uid, or a current member of the group), is retried
 * every 1 ms up to the init timeout, so two members starting at once both
 * succeed. An outsider's file is answered at once (a squatter). Without a
 * group mode nobody else's segment is ever accepted, so there is no wait.
 * Context: any thread; syscalls (shm_open, stat of the name while waiting).
 * Returns the fd, or a negative errno (-EACCES after the wait).
 */
int orbit__seg_perm_shm_open(const char *name, int oflag, const struct orbit_seg_opts *o);

/*
 * orbit__seg_perm_check - the opener's check of @fd and @st (fstat of the
 * descriptor it will map, never of the name).
 * @why: set to what was wrong (a phrase for the caller's message).
 * Context: any thread, not async-signal-safe; fgetxattr on @fd; when the
 * owner is foreign a stat("/dev/shm") and the NSS lookups of
 * orbit__seg_perm_uid_in_group().
 * Returns 0, -ORBIT_EOWNER (more than one link; not owner_uid; a foreign
 * owner not covered by the configured group or not in it now),
 * -ORBIT_EMODE (a bit wider than the configured mode, group bits for a
 * group that is not the configured one, or a POSIX access ACL), or
 * another negative errno of fgetxattr.
 */
int orbit__seg_perm_check(int fd, const struct stat *st, const struct orbit_seg_opts *o,
			  const char **why);

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
