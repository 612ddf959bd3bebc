// SPDX-License-Identifier: MIT
/*
 * shm/segment_perm.c: the permission rule of fleet segments (see
 * shm/segment_perm.h): the group and mode a creator gives a new segment
 * (fchown, then fchmod, before a byte is written) and the owner, group
 * and mode check an opener makes on the descriptor. Owns no state.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/mman.h>

#include <orbit/error.h>

#include "shm/segment_perm.h"

#define PERM_OWNER_RW 0600u
#define PERM_GROUP_BITS 0060u

unsigned orbit__seg_perm_mode(const struct orbit_seg_opts *o)
{
	return o->mode ? o->mode : PERM_OWNER_RW;
}

gid_t orbit__seg_perm_gid(const struct orbit_seg_opts *o)
{
	return o->gid ? (gid_t)o->gid : getegid();
}

static bool group_mode(const struct orbit_seg_opts *o)
{
	return (orbit__seg_perm_mode(o) & PERM_GROUP_BITS) != 0;
}

int orbit__seg_perm_valid(const struct orbit_seg_opts *o)
{
	unsigned m = orbit__seg_perm_mode(o);

	if ((m & ~(PERM_OWNER_RW | PERM_GROUP_BITS)) || (m & PERM_OWNER_RW) != PERM_OWNER_RW)
		return -EINVAL;
	return 0;
}

int orbit__seg_perm_apply(int fd, const struct orbit_seg_opts *o)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_uid != geteuid())
		return 0; /* a repair of another member's segment: its owner set it */
	if (group_mode(o)) {
		gid_t g = orbit__seg_perm_gid(o);

		/* Before the group bits: never shared with the creator's other group */
		if (st.st_gid != g && fchown(fd, (uid_t)-1, g) < 0)
			return -errno;
	}
	/* umask narrowed the bits of the O_CREAT, if anything: set them exactly */
	if (fchmod(fd, (mode_t)orbit__seg_perm_mode(o)) < 0)
		return -errno;
	return 0;
}

/* Another uid's segment between its O_EXCL create and its group mode. */
static bool being_shared(const char *name)
{
	char path[ORBIT_SEG_NAME_MAX + 16];
	struct stat st;

	snprintf(path, sizeof(path), "/dev/shm%s", name);
	if (lstat(path, &st) < 0)
		return false;
	return S_ISREG(st.st_mode) && st.st_uid != geteuid() &&
	       (st.st_mode & 07777) == PERM_OWNER_RW && st.st_size == 0;
}

int orbit__seg_perm_shm_open(const char *name, int oflag, const struct orbit_seg_opts *o)
{
	int timeout_ms =
	    o->init_timeout_ms > 0 ? o->init_timeout_ms : ORBIT_SEG_DEFAULT_INIT_TIMEOUT_MS;
	bool last_try = false;

	for (int waited_ms = 0;;) {
		int fd = shm_open(name, oflag, 0), err = errno;

		if (fd >= 0)
			return fd;
		if (err != EACCES || !group_mode(o) || last_try)
			return -err;
		if (being_shared(name)) {
			if (waited_ms++ >= timeout_ms)
				return -err;
			usleep(1000);
		} else {
			/* Not (or no longer) a creation in progress: it may have
			 * finished since our shm_open. One more, then the answer. */
			last_try = true;
		}
	}
}

int orbit__seg_perm_removable(const char *fleet, const char *name)
{
	char seg[ORBIT_SEG_NAME_MAX], path[ORBIT_SEG_NAME_MAX + 16];
	struct stat st;
	int r = orbit__seg_name(seg, sizeof(seg), fleet, name);

	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "/dev/shm%s", seg);
	if (lstat(path, &st) < 0 || st.st_uid == geteuid() || geteuid() == 0)
		return 0;
	return -EACCES;
}

/*
 * A file's group proves its owner is (or was) in the group, unless the
 * directory hands its own group to every new file (setgid directory).
 */
static bool group_proves_membership(gid_t g)
{
	struct stat d;

	if (stat("/dev/shm", &d) < 0)
		return false;
	return !((d.st_mode & S_ISGID) && d.st_gid == g);
}

int orbit__seg_perm_check(const struct stat *st, const struct orbit_seg_opts *o)
{
	unsigned want = orbit__seg_perm_mode(o);
	unsigned have = (unsigned)st->st_mode & 07777u;
	gid_t g = orbit__seg_perm_gid(o);

	/* A second link is no segment of ours: someone linked a member's file
	 * (of another fleet, say) under this name (fs.protected_hardlinks=0) */
	if (st->st_uid != geteuid() && (!group_mode(o) || st->st_gid != g || st->st_nlink != 1 ||
					!group_proves_membership(g)))
		return -ORBIT_EOWNER;
	if (have & ~want)
		return -ORBIT_EMODE;
	if ((have & PERM_GROUP_BITS) && st->st_gid != g)
		return -ORBIT_EMODE;
	return 0;
}
