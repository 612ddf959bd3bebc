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
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/xattr.h>

#include <orbit/error.h>

#include "shm/segment_perm.h"

#define PERM_OWNER_RW 0600u
#define PERM_GROUP_BITS 0060u
#define PERM_GROUP_W 0020u
#define PERM_ACL_XATTR "system.posix_acl_access"
#define PERM_NSS_BUF_MAX (1u << 20) /* a group of some 50,000 names */

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
	/* 0640: the group only reads, so exactly one uid writes: it must be named */
	if ((m & PERM_GROUP_BITS) && !(m & PERM_GROUP_W) && o->owner_uid == 0)
		return -EINVAL;
	return 0;
}

int orbit__seg_perm_may_create(const struct orbit_seg_opts *o)
{
	return o->owner_uid && geteuid() != (uid_t)o->owner_uid ? -EPERM : 0;
}

/* One NSS lookup by id into @ent, as getpwuid_r/getgrgid_r: 0 or an errno; *@found NULL: none. */
typedef int (*nss_by_id_fn)(unsigned id, void *ent, char *buf, size_t len, void **found);

static int pw_by_id(unsigned id, void *ent, char *buf, size_t len, void **found)
{
	return getpwuid_r((uid_t)id, ent, buf, len, (struct passwd **)found);
}

static int gr_by_id(unsigned id, void *ent, char *buf, size_t len, void **found)
{
	return getgrgid_r((gid_t)id, ent, buf, len, (struct group **)found);
}

/* @by_id with a buffer grown on ERANGE; 0 found, -ENOENT, -errno. */
static int nss_get(nss_by_id_fn by_id, unsigned id, void *ent, char **buf)
{
	void *res = NULL;
	size_t len = 4096;

	for (;;) {
		char *b = realloc(*buf, len);
		int rc;

		if (!b)
			return -ENOMEM;
		*buf = b;
		rc = by_id(id, ent, b, len, &res);
		if (rc == ERANGE && len < PERM_NSS_BUF_MAX) {
			len *= 2;
			continue;
		}
		return rc ? -rc : res ? 0 : -ENOENT;
	}
}

static int nss_pw(uid_t uid, struct passwd *pw, char **buf)
{
	return nss_get(pw_by_id, (unsigned)uid, pw, buf);
}

static int nss_gr(gid_t gid, struct group *gr, char **buf)
{
	return nss_get(gr_by_id, (unsigned)gid, gr, buf);
}

bool orbit__seg_perm_uid_in_group(uid_t uid, gid_t gid)
{
	char *pbuf = NULL, *gbuf = NULL;
	struct passwd pw;
	struct group gr;
	bool in = false;

	if (nss_pw(uid, &pw, &pbuf) == 0) {
		in = pw.pw_gid == gid;
		if (!in && nss_gr(gid, &gr, &gbuf) == 0)
			for (char **m = gr.gr_mem; m && *m && !in; m++)
				in = strcmp(*m, pw.pw_name) == 0;
	}
	free(pbuf);
	free(gbuf);
	return in;
}

/* May a segment owned by @uid (not us) be trusted under @o? */
static bool owner_allowed(uid_t uid, const struct orbit_seg_opts *o)
{
	if (o->owner_uid)
		return uid == (uid_t)o->owner_uid;
	return orbit__seg_perm_uid_in_group(uid, orbit__seg_perm_gid(o));
}

int orbit__seg_perm_apply(int fd, const struct orbit_seg_opts *o)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_uid != geteuid())
		return 0; /* a repair of another member's segment: its owner set it */
	/* An inherited access ACL (a default ACL on /dev/shm) would grant what
	 * the mode does not show; the opener refuses one (EMODE), so drop it */
	if (fremovexattr(fd, PERM_ACL_XATTR) < 0 && errno != ENODATA && errno != EOPNOTSUPP)
		return -errno;
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

/*
 * Another uid's segment between its O_EXCL create and its group mode: a
 * 0600 empty regular file, and its owner one we would trust (a current
 * member, or the configured owner): an outsider's squatting file looks
 * the same, and is not waited for.
 */
static bool being_shared(const char *name, const struct orbit_seg_opts *o)
{
	char path[ORBIT_SEG_NAME_MAX + 16];
	struct stat st;

	snprintf(path, sizeof(path), "/dev/shm%s", name);
	if (lstat(path, &st) < 0)
		return false;
	return S_ISREG(st.st_mode) && st.st_uid != geteuid() &&
	       (st.st_mode & 07777) == PERM_OWNER_RW && st.st_size == 0 &&
	       owner_allowed(st.st_uid, o);
}

int orbit__seg_perm_shm_open(const char *name, int oflag, const struct orbit_seg_opts *o)
{
	int timeout_ms = o->init_timeout_ms > 0 ? o->init_timeout_ms
						: ORBIT_SEG_DEFAULT_INIT_TIMEOUT_MS;
	bool last_try = false;

	for (int waited_ms = 0;;) {
		int fd = shm_open(name, oflag, 0), err = errno;

		if (fd >= 0)
			return fd;
		if (err != EACCES || !group_mode(o) || last_try)
			return -err;
		if (being_shared(name, o)) {
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

/*
 * Root inspecting a service user's fleet: a read-only opener running as
 * root that names the fleet's owner (owner_uid) accepts that uid's
 * segments whatever the mode's group. It maps them PROT_READ and never
 * creates or writes, and reads their bytes as untrusted like every
 * segment; it trusts only the uid it was told to.
 */
static bool root_inspects(const struct stat *st, const struct orbit_seg_opts *o)
{
	return o->readonly && o->owner_uid && st->st_uid == (uid_t)o->owner_uid && geteuid() == 0;
}

int orbit__seg_perm_check(int fd, const struct stat *st, const struct orbit_seg_opts *o,
			  const char **why)
{
	unsigned want = orbit__seg_perm_mode(o);
	unsigned have = (unsigned)st->st_mode & 07777u;
	gid_t g = orbit__seg_perm_gid(o);

	/* A second link is no segment of ours, our own included: someone linked
	 * a file (of another fleet, or an old table kept past an unlink) under
	 * this name (fs.protected_hardlinks=0) */
	*why = "it has a second name (a hard link): no segment has one";
	if (st->st_nlink != 1)
		return -ORBIT_EOWNER;
	*why = "not the configured owner uid";
	if (o->owner_uid && st->st_uid != (uid_t)o->owner_uid)
		return -ORBIT_EOWNER;
	*why = !group_mode(o)		     ? "not ours, and the mode shares with no group"
	       : st->st_gid != g	     ? "not ours, and of another group than the configured"
	       : !group_proves_membership(g) ? "not ours, and /dev/shm is setgid to the group"
					     : "not ours, and its owner is not (now) in the group";
	if (st->st_uid != geteuid() && !root_inspects(st, o) &&
	    (!group_mode(o) || st->st_gid != g || !group_proves_membership(g) ||
	     !owner_allowed(st->st_uid, o)))
		return -ORBIT_EOWNER;
	*why = "wider than the configured mode, or group bits of another group";
	if (have & ~want)
		return -ORBIT_EMODE;
	if ((have & PERM_GROUP_BITS) && st->st_gid != g)
		return -ORBIT_EMODE;
	/* An access ACL's named entries hide behind the mode's group bits */
	*why = "it carries a POSIX access ACL (system.posix_acl_access), which may "
	       "grant more than the mode shows";
	if (fgetxattr(fd, PERM_ACL_XATTR, NULL, 0) >= 0)
		return -ORBIT_EMODE;
	if (errno != ENODATA && errno != EOPNOTSUPP)
		return -errno;
	*why = NULL;
	return 0;
}
