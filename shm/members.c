// SPDX-License-Identifier: MIT
/*
 * shm/members.c: the member directory (shm/members.h): rows owned through
 * kernel OFD byte-range locks, liveness tests with F_OFD_GETLK, reclaim of
 * rows proven dead, the pidfd death-notification helper, and the fork
 * guard that keeps a forked child from keeping its dead parent "alive".
 *
 * Locks: struct orbit_members.mu (process-local) protects the handle's
 * join state (lock_fd, row, generation); nothing else is taken while it is
 * held except the kernel's own file locks. The fork registry (forked_fds)
 * is lock-free: fixed slots of atomic ints.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <orbit/error.h>
#include "base/die.h"
#include "base/fork_guard.h"
#include "shm/members.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#define PIDFS_MAGIC 0x50494446u /* "PIDF": statfs f_type of a pidfs pidfd (Linux 6.9+) */

#define ROWS_OFF (ORBIT_SEG_HEADER_BYTES + sizeof(struct orbit_members_shm))

struct orbit_members {
	orbit_seg_t seg;
	struct orbit_members_shm *hdr;
	uint32_t rows;
	pid_t pid;	    /* process that opened the handle */
	pthread_mutex_t mu; /* protects lock_fd, row, generation, fork_slot */
	int lock_fd;	    /* private description holding our row's OFD lock */
	int row;	    /* -1 when not joined */
	uint32_t generation;
	int fork_slot;
};

/*
 * Fork guard: every liveness description of this process, closed in a
 * forked child so that only the member itself references it.
 */
#define FORK_SLOTS 64
static _Atomic int forked_fds[FORK_SLOTS];
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void child_after_fork(void)
{
	for (int i = 0; i < FORK_SLOTS; i++) {
		/* Relaxed: the child is single-threaded right after fork */
		int fd = atomic_exchange_explicit(&forked_fds[i], -1, memory_order_relaxed);
		if (fd >= 0)
			close(fd);
	}
}

static void fork_guard_init(void)
{
	for (int i = 0; i < FORK_SLOTS; i++)
		atomic_store_explicit(&forked_fds[i], -1,
				      memory_order_relaxed); /* before any join */
	/* broken invariant: cannot guard liveness across fork */
	orbit__die_on(pthread_atfork(NULL, NULL, child_after_fork), "pthread_atfork");
}

static int fork_guard_add(int fd)
{
	pthread_once(&fork_once, fork_guard_init);
	for (int i = 0; i < FORK_SLOTS; i++) {
		int expect = -1;
		/* Relaxed CAS: the slot only has to be claimed once; fork is ordered by the kernel */
		if (atomic_compare_exchange_strong_explicit(
			&forked_fds[i], &expect, fd, memory_order_relaxed, memory_order_relaxed))
			return i;
	}
	return -EMFILE;
}

static void fork_guard_del(int slot, int fd)
{
	int expect = fd;

	if (slot >= 0)
		atomic_compare_exchange_strong_explicit(&forked_fds[slot], &expect, -1,
							memory_order_relaxed, memory_order_relaxed);
}

static void lock_mu(orbit_members_t *m)
{
	orbit__die_on(pthread_mutex_lock(&m->mu), "pthread_mutex_lock(members)");
}

static void unlock_mu(orbit_members_t *m)
{
	orbit__die_on(pthread_mutex_unlock(&m->mu), "pthread_mutex_unlock(members)");
}

static uint64_t layout_fingerprint(uint32_t rows)
{
	const uint64_t w[] = {
		ORBIT_SEG_KIND_MEMBERS,
		ORBIT_MEMBERS_LAYOUT_VERSION,
		rows,
		sizeof(struct orbit_member_row),
		sizeof(struct orbit_members_shm),
		offsetof(struct orbit_member_row, name),
		ORBIT_MEMBER_NAME_MAX,
		ROWS_OFF,
	};
	return orbit__seg_fingerprint(w, sizeof(w) / sizeof(w[0]));
}

static int members_init(void *body, uint64_t body_bytes, void *arg)
{
	struct orbit_members_shm *h = body;
	uint32_t rows = *(uint32_t *)arg;

	if (body_bytes < sizeof(*h) + (uint64_t)rows * sizeof(struct orbit_member_row))
		return -ORBIT_ESIZE;
	h->rows = rows;
	h->row_bytes = sizeof(struct orbit_member_row);
	h->rows_off = ROWS_OFF;
	return 0;
}

static struct orbit_member_row *row_at(const orbit_members_t *m, uint32_t row)
{
	if (row >= m->rows)
		return NULL;
	return orbit__seg_at(&m->seg, ROWS_OFF + (uint64_t)row * sizeof(struct orbit_member_row),
			     sizeof(struct orbit_member_row));
}

static off_t row_file_off(uint32_t row)
{
	return (off_t)(ROWS_OFF + (uint64_t)row * sizeof(struct orbit_member_row));
}

static bool forked(const orbit_members_t *m)
{
	return orbit__fork_check(m->pid) != 0;
}

int orbit__members_open(orbit_members_t **out, const char *fleet, uint32_t rows,
			const struct orbit_seg_opts *opts)
{
	struct orbit_seg_opts def = { .how = ORBIT_SEG_OPEN_OR_CREATE };
	struct orbit_seg_spec spec;
	orbit_members_t *m;
	int r;

	if (!out)
		return -EINVAL;
	if (rows == 0)
		rows = ORBIT_MEMBERS_DEFAULT_ROWS;
	if (rows > ORBIT_MEMBERS_MAX_ROWS)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	spec = (struct orbit_seg_spec){
		.kind = ORBIT_SEG_KIND_MEMBERS,
		.layout_version = ORBIT_MEMBERS_LAYOUT_VERSION,
		.total_bytes = ROWS_OFF + (uint64_t)rows * sizeof(struct orbit_member_row),
		.fingerprint = layout_fingerprint(rows),
		.init = members_init,
		.init_arg = &rows,
		.attach_locks = true, /* the rows' OFD locks */
	};
	r = orbit__seg_open(&m->seg, fleet, ORBIT_MEMBERS_SEG_NAME, &spec, opts ? opts : &def);
	if (r < 0)
		goto err_free;
	m->hdr = orbit__seg_at(&m->seg, ORBIT_SEG_HEADER_BYTES, sizeof(*m->hdr));
	/* The fingerprint covers the layout; the body words are still untrusted bytes */
	if (!m->hdr || m->hdr->rows != rows ||
	    m->hdr->row_bytes != sizeof(struct orbit_member_row) || m->hdr->rows_off != ROWS_OFF) {
		r = -ORBIT_ECORRUPT;
		goto err_close;
	}
	m->rows = rows;
	m->pid = orbit__self_pid();
	m->lock_fd = -1;
	m->row = -1;
	m->fork_slot = -1;
	orbit__die_on(pthread_mutex_init(&m->mu, NULL), "pthread_mutex_init(members)");
	*out = m;
	return 0;

err_close:
	orbit__seg_close(&m->seg);
err_free:
	free(m);
	return r;
}

void orbit__members_close(orbit_members_t *m)
{
	if (!m)
		return;
	if (!forked(m))
		orbit__members_leave(m);
	orbit__seg_close(&m->seg);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

int orbit__members_unlink(const char *fleet)
{
	return orbit__seg_unlink(fleet, ORBIT_MEMBERS_SEG_NAME);
}

int orbit__members_unlink_damaged(const char *fleet, bool dry_run)
{
	char name[ORBIT_SEG_NAME_MAX], path[ORBIT_SEG_NAME_MAX + sizeof("/dev/shm")];
	struct stat ls, st;
	int fd, r;

	r = orbit__seg_name(name, sizeof(name), fleet, ORBIT_MEMBERS_SEG_NAME);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "/dev/shm%s", name);
	if (lstat(path, &ls) < 0)
		return -errno;
	if (S_ISDIR(ls.st_mode))
		return -ORBIT_ENOTREG; /* no name of ours: rmdir is the owner's call */
	if (!S_ISREG(ls.st_mode)) /* a FIFO, socket, device node or symlink: nobody joined it */
		return dry_run ? 0 : orbit__members_unlink(fleet);
	fd = shm_open(name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* The creator's flock, held across the check and the removal: a creator
	 * initialising it holds it, and an opener that would repair it takes
	 * it first and then finds the name gone (st_nlink 0, shm/segment.c). */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		r = errno == EWOULDBLOCK ? -EBUSY : -errno;
	else if (fstat(fd, &st) < 0)
		r = -errno;
	else if (st.st_dev != ls.st_dev || st.st_ino != ls.st_ino)
		r = -EBUSY; /* the name was replaced since the look: look again */
	else if ((r = orbit__seg_file_locked(fd)) != 0)
		r = r > 0 ? -EBUSY : r; /* a member's row lock */
	else
		r = dry_run ? 0 : orbit__members_unlink(fleet);
	close(fd); /* the flock goes with it, after the name */
	return r;
}

uint32_t orbit__members_rows(const orbit_members_t *m)
{
	return m->rows;
}

orbit_seg_t *orbit__members_seg(orbit_members_t *m)
{
	return &m->seg;
}

static int ofd_lock(int fd, short type, int cmd, uint32_t row)
{
	struct flock fl = {
		.l_type = type,
		.l_whence = SEEK_SET,
		.l_start = row_file_off(row),
		.l_len = sizeof(struct orbit_member_row),
	};
	int r;

	do
		r = fcntl(fd, cmd, &fl);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return (errno == EACCES) ? -EAGAIN : -errno;
	if (cmd == F_OFD_GETLK)
		return fl.l_type == F_UNLCK ? 0 : 1; /* 1: a conflicting lock is held */
	return 0;
}

/* Is anyone (other than this handle's segment description) holding @row's lock? */
static int row_locked(const orbit_members_t *m, uint32_t row)
{
	return ofd_lock(m->seg.fd, F_RDLCK, F_OFD_GETLK, row);
}

/*
 * Read /proc/<pid>/stat into @buf; *fields points at the space before
 * field 3 (comm may hold spaces and parentheses: fields restart after the
 * LAST ')'). Returns 0, -ESRCH (no such process), -EPROTO, -errno.
 */
static int read_proc_stat(pid_t pid, char *buf, size_t len, char **fields)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return n == 0 ? -ESRCH : -errno;
	buf[n] = '\0';
	*fields = strrchr(buf, ')');
	if (!*fields || (*fields)[1] != ' ')
		return -EPROTO;
	++*fields;
	return 0;
}

int orbit__proc_start_time(pid_t pid, uint64_t *ticks)
{
	char buf[1024];
	unsigned long long v;
	char *p;
	int r, field;

	r = read_proc_stat(pid, buf, sizeof(buf), &p);
	if (r < 0)
		return r;
	/* each space starts the next field: the space after ")" starts field 3 */
	for (field = 2; field < 22 && *p; p++)
		if (*p == ' ')
			field++;
	if (field != 22 || sscanf(p, "%llu", &v) != 1)
		return -EPROTO;
	*ticks = v;
	return 0;
}

int orbit__proc_state(pid_t pid, char *state)
{
	char buf[1024];
	char *p;
	int r = read_proc_stat(pid, buf, sizeof(buf), &p);

	if (r < 0)
		return r;
	if (!p[1] || p[2] != ' ')
		return -EPROTO;
	*state = p[1];
	return 0;
}

int orbit__pidfd_open(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (fd >= 0)
		return fd;
	/* a pid that is a thread, not a process: ENOENT (Linux 6.x) or EINVAL */
	return errno == ESRCH || errno == ENOENT || errno == EINVAL ? -ESRCH : -errno;
}

int orbit__pidfd_ino(int pidfd, uint64_t *ino)
{
	struct statfs sf;
	struct stat st;

	if (fstatfs(pidfd, &sf) < 0 || fstat(pidfd, &st) < 0)
		return -errno;
	/* before pidfs every pidfd was the one anon inode: no identity */
	if ((uint32_t)sf.f_type != PIDFS_MAGIC || sizeof(st.st_ino) < 8)
		return -ENOSYS;
	*ino = (uint64_t)st.st_ino;
	return 0;
}

int orbit__pid_ino(pid_t pid, uint64_t *ino)
{
	int fd = orbit__pidfd_open(pid);
	int r;

	if (fd < 0)
		return fd;
	r = orbit__pidfd_ino(fd, ino);
	close(fd);
	return r;
}

/* Rewrite our own row (we hold its lock): seq odd, bytes, seq even. */
static void row_write_begin(struct orbit_member_row *rw)
{
	uint32_t s = atomic_load_explicit(&rw->seq,
					  memory_order_relaxed); /* only the lock holder writes */

	if (s & 1)
		s++; /* a dead writer left it odd: restart from even */
	atomic_store_explicit(&rw->seq, s + 1, memory_order_relaxed);
	/* MB-W1: release fence, pairs with MB-A2 in copy_row(): odd seq before the bytes */
	atomic_thread_fence(memory_order_release);
}

static void row_write_end(struct orbit_member_row *rw)
{
	uint32_t s = atomic_load_explicit(&rw->seq, memory_order_relaxed); /* we wrote it */

	/* MB-W2: release, pairs with MB-A1 in copy_row(): bytes before the even seq */
	atomic_store_explicit(&rw->seq, s + 1, memory_order_release);
}

static void set_name(char *dst, const char *name)
{
	size_t i = 0;

	if (name)
		for (; name[i] && i < ORBIT_MEMBER_NAME_MAX - 1; i++)
			dst[i] = (name[i] >= 0x20 && name[i] < 0x7f) ? name[i] : '?';
	memset(dst + i, 0, ORBIT_MEMBER_NAME_MAX - i);
}

int orbit__members_join(orbit_members_t *m, const char *name)
{
	uint64_t start = 0;
	int fd, r, slot;

	if (!m)
		return -EINVAL;
	if (forked(m))
		return -ECHILD;
	if (m->seg.readonly)
		return -EROFS;
	r = orbit__proc_start_time(getpid(), &start);
	if (r < 0)
		return r;
	lock_mu(m);
	if (m->row >= 0) {
		r = -EALREADY;
		goto err_unlock;
	}
	/* A private open file description: its locks are ours alone. Of the
	 * object we map, never of whatever now holds the name. */
	fd = orbit__seg_reopen(&m->seg, false);
	if (fd < 0) {
		r = fd;
		goto err_unlock;
	}
	slot = fork_guard_add(fd);
	if (slot < 0) {
		r = slot;
		goto err_close;
	}
	r = -ENOSPC;
	for (uint32_t i = 0; i < m->rows; i++) {
		struct orbit_member_row *rw = row_at(m, i);
		uint32_t gen;

		if (!rw)
			break;
		if (ofd_lock(fd, F_WRLCK, F_OFD_SETLK, i) < 0) {
			/* No write lock on it, yet ours conflicts: a read lock pins
			 * it (anyone who can read the file can take one) */
			if (row_locked(m, i) == 0)
				r = -EPERM;
			continue; /* held by a live member (or fcntl failed): next row */
		}
		/* The lock is ours: whatever the row says, its last owner is gone */
		row_write_begin(rw);
		atomic_store_explicit(&rw->state, ORBIT_MEMBER_JOINING,
				      memory_order_relaxed); /* in MB-W1..MB-W2 */
		gen = atomic_load_explicit(&rw->generation, memory_order_relaxed) +
		      1; /* only the lock holder writes it */
		atomic_store_explicit(&rw->generation, gen,
				      memory_order_relaxed); /* in MB-W1..MB-W2 */
		rw->pid = (uint32_t)getpid();
		rw->start_time_ticks = start;
		rw->joined_real_ns = orbit__now_real_ns();
		atomic_store_explicit(&rw->heartbeat_ns, orbit__now_mono_ns(),
				      memory_order_relaxed); /* display */
		set_name(rw->name, name);
		memset(rw->reserved, 0, sizeof(rw->reserved));
		atomic_store_explicit(&rw->state, ORBIT_MEMBER_LIVE,
				      memory_order_relaxed); /* by MB-W2 */
		row_write_end(rw);
		m->lock_fd = fd;
		m->fork_slot = slot;
		m->row = (int)i;
		m->generation = gen;
		unlock_mu(m);
		return (int)i;
	}
	if (r == -ENOSPC)
		orbit__seg_refuse(r, &m->seg, "all %u member rows are held by live processes",
				  m->rows);
	else if (r == -EPERM)
		orbit__seg_refuse(
		    r, &m->seg,
		    "no member row is free, and a row no member holds is pinned by a "
		    "read lock (a process that can only read the directory holds it)");
	fork_guard_del(slot, fd);
err_close:
	close(fd);
err_unlock:
	unlock_mu(m);
	return r;
}

int orbit__members_leave(orbit_members_t *m)
{
	struct orbit_member_row *rw;

	if (!m)
		return -EINVAL;
	if (forked(m))
		return -ECHILD;
	lock_mu(m);
	if (m->row < 0) {
		unlock_mu(m);
		return -ENOENT;
	}
	rw = row_at(m, (uint32_t)m->row);
	if (rw) {
		row_write_begin(rw);
		atomic_store_explicit(&rw->state, ORBIT_MEMBER_LEFT,
				      memory_order_relaxed); /* in MB-W1..MB-W2 */
		row_write_end(rw);
	}
	fork_guard_del(m->fork_slot, m->lock_fd);
	close(m->lock_fd); /* drops the OFD lock: the row is free */
	m->lock_fd = -1;
	m->fork_slot = -1;
	m->row = -1;
	unlock_mu(m);
	return 0;
}

int orbit__members_self(orbit_members_t *m, uint32_t *generation)
{
	int row;

	if (!m)
		return -EINVAL;
	if (forked(m))
		return -ECHILD;
	lock_mu(m);
	row = m->row;
	if (row >= 0 && generation)
		*generation = m->generation;
	unlock_mu(m);
	return row >= 0 ? row : -ENOENT;
}

/* 1 when @row is this handle's joined row (then generation is filled). */
static bool is_self(orbit_members_t *m, uint32_t row, uint32_t *generation)
{
	uint32_t g = 0;
	int r = orbit__members_self(m, &g);

	if (r < 0 || (uint32_t)r != row)
		return false;
	if (generation)
		*generation = g;
	return true;
}

int orbit__members_is_alive(orbit_members_t *m, uint32_t row)
{
	if (!m || row >= m->rows)
		return -EINVAL;
	if (forked(m))
		return -ECHILD;
	if (is_self(m, row, NULL))
		return 1;
	/* Our segment description never holds a row lock except during a reclaim probe */
	return row_locked(m, row);
}

/* Copy a row consistently. 0, -EAGAIN (kept changing). */
static int copy_row(const struct orbit_member_row *rw, struct orbit_member_row *cp)
{
	for (int tries = 0; tries < 64; tries++) {
		/* MB-A1: acquire, pairs with MB-W2: a complete row before an even seq */
		uint32_t s1 = atomic_load_explicit(&rw->seq, memory_order_acquire);

		if (s1 & 1) {
			sched_yield();
			continue;
		}
		memcpy(cp, (const void *)rw, sizeof(*cp));
		/* MB-A2: acquire fence, pairs with MB-W1: bytes read before the re-check */
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&rw->seq, memory_order_relaxed) == s1)
			return 0;
	}
	return -EAGAIN;
}

static int validate_row(const struct orbit_member_row *cp)
{
	uint32_t st = atomic_load_explicit(&cp->state, memory_order_relaxed); /* private copy */

	if (st > ORBIT_MEMBER_LEFT)
		return -ORBIT_ECORRUPT;
	/*
	 * The name in every state: a FREE row's copy is handed out too (a
	 * FREE row whose lock is held is shown). tests/fuzz/fuzz_members found
	 * a FREE row passing an unterminated, unprintable name to readers.
	 */
	if (memchr(cp->name, '\0', sizeof(cp->name)) == NULL)
		return -ORBIT_ECORRUPT;
	for (size_t i = 0; cp->name[i]; i++)
		if (cp->name[i] < 0x20 || cp->name[i] >= 0x7f)
			return -ORBIT_ECORRUPT;
	if (st == ORBIT_MEMBER_FREE)
		return 0; /* pid and times of a free row are not looked at */
	if (cp->pid == 0 || cp->pid > (1u << 22))
		return -ORBIT_ECORRUPT; /* pid_max is at most 2^22 on Linux */
	return 0;
}

int orbit__members_snapshot(orbit_members_t *m, uint32_t row, struct orbit_member_info *out)
{
	struct orbit_member_row cp, *rw;
	bool self;
	int r, alive;

	if (!m || !out || row >= m->rows)
		return -EINVAL;
	if (forked(m))
		return -ECHILD;
	rw = row_at(m, row);
	if (!rw)
		return -EINVAL;
	self = is_self(m, row, NULL);
	alive = self ? 1 : row_locked(m, row); /* orbit__members_is_alive() without re-asking */
	if (alive < 0)
		return alive;
	r = copy_row(rw, &cp);
	if (r < 0)
		return r;
	r = validate_row(&cp);
	if (r < 0)
		return r;
	memset(out, 0, sizeof(*out));
	out->row = row;
	out->state = atomic_load_explicit(&cp.state, memory_order_relaxed); /* private copy */
	out->generation = atomic_load_explicit(&cp.generation,
					       memory_order_relaxed); /* private copy */
	out->pid = cp.pid;
	out->start_time_ticks = cp.start_time_ticks;
	out->joined_real_ns = cp.joined_real_ns;
	out->heartbeat_ns = atomic_load_explicit(&cp.heartbeat_ns,
						 memory_order_relaxed); /* private copy */
	out->alive = alive == 1;
	out->self = self;
	memcpy(out->name, cp.name, sizeof(out->name));
	return 0;
}

int orbit__members_is_alive_gen(orbit_members_t *m, uint32_t row, uint32_t generation)
{
	struct orbit_member_row *rw;
	uint32_t g;
	int alive;

	if (!m || row >= m->rows)
		return -EINVAL;
	if (forked(m))
		return -ECHILD;
	if (is_self(m, row, &g))
		return g == generation;
	rw = row_at(m, row);
	if (!rw)
		return -EINVAL;
	alive = row_locked(m, row);
	if (alive != 1)
		return alive;
	/*
	 * Alive; same tenure? A row's generation only changes under its lock,
	 * and the lock is held by a live owner right now, so this value is
	 * that owner's (or its predecessor's during its JOINING window).
	 * Acquire pairs with MB-W2 of the owner's join.
	 */
	g = atomic_load_explicit(&rw->generation, memory_order_acquire);
	return g == generation;
}

int orbit__members_foreach(orbit_members_t *m,
			   int (*fn)(void *ctx, const struct orbit_member_info *info), void *ctx)
{
	struct orbit_member_info info;
	int n = 0;

	if (!m || !fn)
		return -EINVAL;
	if (forked(m))
		return -ECHILD;
	for (uint32_t i = 0; i < m->rows; i++) {
		if (orbit__members_snapshot(m, i, &info) < 0)
			continue; /* corrupt or churning rows are not shown */
		if (info.state == ORBIT_MEMBER_FREE && !info.alive)
			continue;
		n++;
		if (fn(ctx, &info))
			break;
	}
	return n;
}

int orbit__members_count_live_others(orbit_members_t *m)
{
	int n = 0;

	if (!m)
		return -EINVAL;
	if (forked(m))
		return -ECHILD;
	for (uint32_t i = 0; i < m->rows; i++) {
		if (is_self(m, i, NULL))
			continue;
		if (row_locked(m, i) == 1)
			n++;
	}
	return n;
}

int orbit__members_reclaim(orbit_members_t *m, uint32_t row)
{
	struct orbit_member_row *rw;
	uint32_t gen;
	int r;

	if (!m || row >= m->rows)
		return -EINVAL;
	if (forked(m))
		return -ECHILD;
	if (m->seg.readonly)
		return -EROFS;
	rw = row_at(m, row);
	if (!rw)
		return -EINVAL;
	/* mu: two threads of this process probe through the SAME description */
	lock_mu(m);
	if (m->row == (int)row) {
		unlock_mu(m);
		return 0;
	}
	/* Taking the lock IS the proof: no live description holds it */
	r = ofd_lock(m->seg.fd, F_WRLCK, F_OFD_SETLK, row);
	if (r < 0) {
		/* A conflict that is no write lock is a reader's read lock */
		if (r == -EAGAIN && row_locked(m, row) == 0)
			r = -EPERM;
		unlock_mu(m);
		return r == -EAGAIN ? 0 : r;
	}
	if (atomic_load_explicit(&rw->state, memory_order_relaxed) == ORBIT_MEMBER_FREE &&
	    !(atomic_load_explicit(&rw->seq, memory_order_relaxed) & 1)) {
		r = 0; /* already free: nothing to reclaim (relaxed: we hold the row lock) */
	} else {
		row_write_begin(rw);
		gen = atomic_load_explicit(&rw->generation, memory_order_relaxed) +
		      1; /* lock held */
		atomic_store_explicit(&rw->generation, gen,
				      memory_order_relaxed); /* in MB-W1..MB-W2 */
		atomic_store_explicit(&rw->state, ORBIT_MEMBER_FREE,
				      memory_order_relaxed); /* in MB-W1..MB-W2 */
		rw->pid = 0;
		rw->start_time_ticks = 0;
		memset(rw->name, 0, sizeof(rw->name));
		row_write_end(rw);
		/* Relaxed: a statistics counter */
		atomic_fetch_add_explicit(&m->hdr->reclaims, 1, memory_order_relaxed);
		r = 1;
	}
	ofd_lock(m->seg.fd, F_UNLCK, F_OFD_SETLK, row);
	unlock_mu(m);
	return r;
}

int orbit__members_pidfd_open(orbit_members_t *m, uint32_t row, uint32_t *generation)
{
	struct orbit_member_row cp, *rw;
	uint64_t start;
	int fd, r;

	if (!m || row >= m->rows)
		return -EINVAL;
	if (forked(m))
		return -ECHILD;
	rw = row_at(m, row);
	if (!rw)
		return -EINVAL;
	r = copy_row(rw, &cp);
	if (r < 0)
		return r;
	r = validate_row(&cp);
	if (r < 0)
		return r;
	if (atomic_load_explicit(&cp.state, memory_order_relaxed) ==
	    ORBIT_MEMBER_FREE) /* private copy */
		return -ESRCH;
	/*
	 * A pid that is a thread of some process, not a process, is not the
	 * member (members store getpid()): pidfd_open says ENOENT (Linux 6.x)
	 * or EINVAL (older), both -ESRCH here. tests/fuzz/fuzz_members found
	 * -ENOENT escaping.
	 */
	fd = orbit__pidfd_open((pid_t)cp.pid);
	if (fd < 0)
		return fd;
	/* pidfd_open sets O_CLOEXEC. The pidfd pins the process: if the start time matches NOW, it is the member */
	r = orbit__proc_start_time((pid_t)cp.pid, &start);
	if (r < 0 || start != cp.start_time_ticks) {
		close(fd);
		return r == -EPROTO ? r : -ESRCH;
	}
	if (generation)
		*generation = atomic_load_explicit(&cp.generation,
						   memory_order_relaxed); /* private copy */
	return fd;
}

void orbit__members_heartbeat(orbit_members_t *m)
{
	struct orbit_member_row *rw;
	int row;

	if (!m || forked(m))
		return;
	row = orbit__members_self(m, NULL);
	if (row < 0)
		return;
	rw = row_at(m, (uint32_t)row);
	if (rw) /* Relaxed: display only, never decides liveness */
		atomic_store_explicit(&rw->heartbeat_ns, orbit__now_mono_ns(),
				      memory_order_relaxed);
}
