/* SPDX-License-Identifier: MIT */
/*
 * tests/common/orbit_test_shm.h: what a hostile local user (or a full
 * /dev/shm) does to a fleet's segment names, for the segment tests:
 * putting a FIFO, a directory, a socket or a device node under a name,
 * giving this process a private, small /dev/shm (a tmpfs in its own mount
 * namespace, root only), and making fallocate(2) unsupported (seccomp).
 * Every helper runs in the calling process: call them in a forked child.
 */
#ifndef ORBIT_TEST_SHM_H
#define ORBIT_TEST_SHM_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before the first include (unshare(2))"
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

enum orbit_test_hostile {
	ORBIT_TEST_FIFO,
	ORBIT_TEST_DIR,
	ORBIT_TEST_SOCKET,
	ORBIT_TEST_SYMLINK,  /* to PATH.target, a file of ours: followed, a wrong size */
	ORBIT_TEST_CHARDEV,  /* mknod c 1 3 (/dev/null's numbers): root only */
	ORBIT_TEST_BLOCKDEV, /* mknod b 7 0 (loop0's numbers): root only */
	ORBIT_TEST_HOSTILE_COUNT,
};

static inline const char *orbit_test_hostile_name(enum orbit_test_hostile k)
{
	static const char *const n[] = { "fifo",    "directory",   "socket",
					 "symlink", "char device", "block device" };
	return n[k];
}

/* The path of segment @name of @fleet ("/dev/shm/orbit.<fleet>.<name>"). */
static inline void orbit_test_shm_path(char *buf, size_t len, const char *fleet, const char *name)
{
	snprintf(buf, len, "/dev/shm/orbit.%s.%s", fleet, name);
}

/*
 * Put a file of kind @k at @path. Returns 0; 1 when this process may not
 * (device nodes need CAP_MKNOD: the caller skips with a reason); -errno.
 */
static inline int orbit_test_hostile_make(enum orbit_test_hostile k, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, r = 0;

	switch (k) {
	case ORBIT_TEST_FIFO:
		r = mkfifo(path, 0600);
		break;
	case ORBIT_TEST_DIR:
		r = mkdir(path, 0700);
		break;
	case ORBIT_TEST_SOCKET:
		if (strlen(path) >= sizeof(sa.sun_path))
			return -ENAMETOOLONG;
		strcpy(sa.sun_path, path);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd < 0)
			return -errno;
		r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
		if (r == 0)
			r = listen(fd, 1); /* a listening socket: an open must still not connect */
		close(fd);
		break;
	case ORBIT_TEST_SYMLINK: {
		char target[PATH_MAX];

		if (snprintf(target, sizeof(target), "%s.target", path) >= (int)sizeof(target))
			return -ENAMETOOLONG;
		fd = open(target, O_CREAT | O_WRONLY | O_TRUNC, 0600);
		if (fd < 0)
			return -errno;
		r = write(fd, "not a segment", 13) == 13 ? 0 : -1;
		close(fd);
		if (r == 0)
			r = symlink(target, path);
		break;
	}
	case ORBIT_TEST_CHARDEV:
		r = mknod(path, S_IFCHR | 0600, makedev(1, 3));
		if (r < 0 && errno == EPERM)
			return 1;
		break;
	case ORBIT_TEST_BLOCKDEV:
		r = mknod(path, S_IFBLK | 0600, makedev(7, 0));
		if (r < 0 && errno == EPERM)
			return 1;
		break;
	default:
		return -EINVAL;
	}
	return r < 0 ? -errno : 0;
}

/* Remove what orbit_test_hostile_make() put there (and a symlink's target). */
static inline void orbit_test_hostile_remove(const char *path)
{
	char target[PATH_MAX];

	if (unlink(path) < 0)
		rmdir(path);
	if (snprintf(target, sizeof(target), "%s.target", path) < (int)sizeof(target))
		unlink(target);
}

/*
 * Give this process a private /dev/shm of @size_opt ("size=4m"): a new mount
 * namespace, mounts made private, a fresh tmpfs on /dev/shm. Returns 0, or
 * a message saying why not (not root, no CLONE_NEWNS) for the skip.
 */
static inline const char *orbit_test_private_shm(const char *size_opt)
{
	if (unshare(CLONE_NEWNS) < 0)
		return "unshare(CLONE_NEWNS) refused (needs CAP_SYS_ADMIN)";
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return "cannot make / private in the new mount namespace";
	if (mount("orbit-test", "/dev/shm", "tmpfs", MS_NOSUID, size_opt) < 0)
		return "cannot mount a tmpfs on /dev/shm";
	return NULL;
}

/*
 * Make fallocate(2) fail with EOPNOTSUPP in this process (as on a
 * filesystem without it), with a seccomp filter. Returns 0 or -errno.
 */
static inline int orbit_test_no_fallocate(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_fallocate, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EOPNOTSUPP & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return -errno;
	return 0;
}

#endif /* ORBIT_TEST_SHM_H */
