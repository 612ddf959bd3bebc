// SPDX-License-Identifier: MIT
/*
 * shm/segment.c: create, open, validate and map named fleet segments.
 * A creator makes the POSIX SHM object with O_CREAT|O_EXCL, takes its flock,
 * sizes and reserves it fully (fallocate: a shortage is -ENOSPC and the
 * partial object is removed), writes the header and the kind's body, and
 * publishes READY last with a release store. Every open of a name goes
 * through open_checked(): O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC, then file type,
 * owner and mode on the descriptor before a byte is read. An opener then
 * checks the size against the header, every header field, and waits
 * (bounded) for READY while the creator holds the flock. A creator that
 * died initialising leaves the flock free and the state INITIALISING: an
 * opener allowed to create re-initialises it under the flock.
 * Nothing here starts a thread; the only state is each thread's last
 * refusal message (orbit_segment_last_error()).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <orbit/error.h>

#include "base/hash.h"
#include "base/time.h"
#include "shm/crashpoint.h"
#include "shm/segment.h"
#include "shm/segment_perm.h"

_Static_assert(sizeof(_Atomic uint64_t) == 8, "u64 atomics must be plain 8-byte words");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "u64 atomics must be lock-free (address-free in SHM)");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "u32 atomics must be lock-free (address-free in SHM)");

/* POSIX SHM objects are files here (glibc's shm_open opens SHM_DIR/name). */
#define SHM_DIR "/dev/shm"

/* ---- refusal messages --------------------------------------------------- */

/* This thread's last refusal: written and read by the owning thread only. */
static _Thread_local char last_error[288];

ORBIT_API const char *orbit_segment_last_error(void)
{
	return last_error;
}

/* Record "<segment path>: <reason>" for orbit_segment_last_error(); returns @code. */
static int vrefuse(int code, const char *name, const char *fmt, va_list ap)
{
	int n = snprintf(last_error, sizeof(last_error), "%s%s: ", SHM_DIR, name);

	if (n < 0 || (size_t)n >= sizeof(last_error))
		return code;
	vsnprintf(last_error + n, sizeof(last_error) - (size_t)n, fmt, ap);
	return code;
}

__attribute__((format(printf, 3, 4))) static int refuse(int code, const char *name, const char *fmt,
							...)
{
	va_list ap;

	va_start(ap, fmt);
	code = vrefuse(code, name, fmt, ap);
	va_end(ap);
	return code;
}

int orbit__seg_refuse(int code, const orbit_seg_t *seg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = vrefuse(code, seg->name, fmt, ap);
	va_end(ap);
	return code;
}

uint64_t orbit__seg_fingerprint(const uint64_t *words, size_t n)
{
	uint64_t h = ORBIT__FNV64_BASIS;

	for (size_t i = 0; i < n; i++) /* little-endian bytes whatever the host */
		for (int b = 0; b < 8; b++)
			h = orbit__fnv1a64_byte(h, (uint8_t)(words[i] >> (8 * b)));
	return h;
}

static bool name_ok(const char *s, size_t max, bool allow_dot)
{
	size_t n = 0;

	if (!s || !*s)
		return false;
	for (; s[n]; n++) {
		char c = s[n];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '-' || (allow_dot && c == '.');
		if (!ok || n >= max)
			return false;
	}
	return true;
}

int orbit__seg_name(char *buf, size_t len, const char *fleet, const char *name)
{
	int n;

	if (fleet && !name_ok(fleet, ORBIT_FLEET_NAME_MAX, false)) {
		/* No segment to name yet: the message names the fleet and the rule */
		snprintf(last_error, sizeof(last_error),
			 "fleet name \"%.64s\": a fleet name is 1 to %u of A-Z a-z 0-9 _ -", fleet,
			 ORBIT_FLEET_NAME_MAX);
		return -EINVAL;
	}
	if (!buf || !fleet || !name_ok(name, ORBIT_SEG_NAME_MAX, true))
		return -EINVAL;
	n = snprintf(buf, len, "/orbit.%s.%s", fleet, name);
	if (n < 0 || (size_t)n >= len || (size_t)n >= ORBIT_SEG_NAME_MAX)
		return -EINVAL;
	return 0;
}

/* The header checks of orbit__seg_open(), in the order its comment lists. */
static int validate_header(const char *name, const struct orbit_seg_header *h, uint64_t file_bytes,
			   const struct orbit_seg_spec *spec)
{
	if (file_bytes < ORBIT_SEG_HEADER_BYTES)
		return refuse(-ORBIT_ETRUNCATED, name, "%" PRIu64 " bytes, shorter than a header",
			      file_bytes);
	if (h->magic != ORBIT_SEG_MAGIC)
		return refuse(-ORBIT_EMAGIC, name, "magic %#" PRIx64 " is not orbit's", h->magic);
	if (h->layout_version != spec->layout_version)
		return refuse(-ORBIT_EVERSION, name, "layout version %u, expected %u",
			      h->layout_version, spec->layout_version);
	if (h->kind != spec->kind)
		return refuse(-ORBIT_EKIND, name, "kind %u, expected %u", h->kind, spec->kind);
	/* Our layout's size, and the file lacks its tail: truncated (any other
	 * size the header claims is a layout mismatch or corruption: ESIZE). */
	if (h->header_bytes == ORBIT_SEG_HEADER_BYTES && h->total_bytes > file_bytes &&
	    (!spec->total_bytes || h->total_bytes == spec->total_bytes))
		return refuse(-ORBIT_ETRUNCATED, name,
			      "%" PRIu64 " bytes, its header says %" PRIu64 " (truncated)",
			      file_bytes, h->total_bytes);
	/* A whole, self-consistent segment of another size whose fingerprint
	 * differs too: made by a peer with another layout (a lock table of
	 * another slot count), which is what EFINGERPRINT says; ESIZE stays
	 * for sizes that contradict the header or a fingerprint that agrees. */
	if (h->header_bytes == ORBIT_SEG_HEADER_BYTES && h->total_bytes == file_bytes &&
	    spec->total_bytes && h->total_bytes != spec->total_bytes &&
	    h->fingerprint != spec->fingerprint)
		return refuse(-ORBIT_EFINGERPRINT, name,
			      "made with another layout: %" PRIu64
			      " bytes, layout fingerprint %#" PRIx64 "; this layout is %" PRIu64
			      " bytes, fingerprint %#" PRIx64
			      " (all peers must pass the same layout)",
			      h->total_bytes, h->fingerprint, spec->total_bytes, spec->fingerprint);
	if (h->header_bytes != ORBIT_SEG_HEADER_BYTES || h->total_bytes != file_bytes ||
	    (spec->total_bytes && h->total_bytes != spec->total_bytes))
		return refuse(-ORBIT_ESIZE, name,
			      "header %u/%" PRIu64 " bytes, file %" PRIu64 ", expected %u/%" PRIu64,
			      h->header_bytes, h->total_bytes, file_bytes, ORBIT_SEG_HEADER_BYTES,
			      spec->total_bytes);
	if (h->fingerprint != spec->fingerprint)
		return refuse(-ORBIT_EFINGERPRINT, name,
			      "layout fingerprint %#" PRIx64 ", expected %#" PRIx64, h->fingerprint,
			      spec->fingerprint);
	return 0;
}

/* ---- opening a name: the one place a name becomes a descriptor ----------- */

/* What open_checked() found wrong, for the caller's message. */
static const char *type_name(mode_t m)
{
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISLNK(m))
		return "a symlink";
	return "not a regular file";
}

/*
 * Open @name so that nothing under it can make us wait or follow it:
 * O_NONBLOCK (a FIFO opens at once instead of waiting for a writer),
 * O_NOFOLLOW (a symlink is refused: ELOOP), O_NOCTTY (a tty device does not become
 * ours), O_CLOEXEC. Then fstat on the descriptor: only a regular file is
 * kept. An open the kernel refuses (a socket: ENXIO; a directory opened
 * for writing: EISDIR, which glibc's shm_open reports as EINVAL; a device
 * on a nodev mount: EACCES) is told apart by
 * lstat of the path, so every non-regular file gets the same code. The
 * descriptor keeps O_NONBLOCK: it has no effect on a regular tmpfs file,
 * on flock or on mmap.
 * Async-signal-safe (shm_open is open(2) in glibc; lstat, fstat, close).
 * Returns the fd with *st filled, -ORBIT_ENOTREG (*st holds the type
 * found), or -errno of the open.
 */
static int open_checked(const char *name, int flags, mode_t mode, const struct orbit_seg_opts *o,
			struct stat *st)
{
	char path[sizeof(SHM_DIR) + ORBIT_SEG_NAME_MAX];
	int safe = flags | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC;
	int fd, e;

	if (o) { /* an existing segment: waits out a group member's creation (segment_perm.h) */
		fd = orbit__seg_perm_shm_open(name, safe, o);
	} else {
		fd = shm_open(name, safe, mode);
		if (fd < 0)
			fd = -errno;
	}
	if (fd < 0) {
		e = -fd;
		if (e == ENOENT || e == EEXIST || e == EMFILE || e == ENFILE || e == ENOMEM ||
		    e == ENAMETOOLONG)
			return -e; /* (glibc turns a directory's EISDIR into EINVAL) */
		memcpy(path, SHM_DIR, sizeof(SHM_DIR) - 1);
		memcpy(path + sizeof(SHM_DIR) - 1, name, strnlen(name, ORBIT_SEG_NAME_MAX - 1) + 1);
		/* A symlink (ELOOP from O_NOFOLLOW) is one more non-regular file */
		if (lstat(path, st) == 0 && !S_ISREG(st->st_mode))
			return -ORBIT_ENOTREG;
		return -e;
	}
	if (fstat(fd, st) < 0) {
		e = errno;
		close(fd);
		return -e;
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return -ORBIT_ENOTREG;
	}
	return fd;
}

/* The message for an open_checked() refusal. */
static int refuse_open(int r, const char *name, const struct stat *st)
{
	if (r == -ORBIT_ENOTREG)
		return refuse(r, name, "%s, not a segment (anyone can create names in %s)",
			      type_name(st->st_mode), SHM_DIR);
	if (r == -ENOENT)
		return r; /* missing is an answer, not a refusal: no message */
	if (r == -EACCES) {
		char path[sizeof(SHM_DIR) + ORBIT_SEG_NAME_MAX];
		struct stat ls;

		snprintf(path, sizeof(path), "%s%s", SHM_DIR, name);
		if (lstat(path, &ls) == 0 && ls.st_uid != geteuid())
			return refuse(
			    r, name,
			    "open: %s: the name is held by uid %u (group %u, mode %04o, "
			    "%lld bytes); if that uid is not a member of the fleet it squats "
			    "the name, and only it or root can remove it (rm %s)",
			    strerror(-r), (unsigned)ls.st_uid, (unsigned)ls.st_gid,
			    (unsigned)(ls.st_mode & 07777), (long long)ls.st_size, path);
	}
	return refuse(r, name, "open: %s", strerror(-r));
}

/*
 * The owner, group and mode checks of an existing segment, on its
 * descriptor (the rule: shm/segment_perm.h), with the message.
 */
static int check_owner_mode(int fd, const char *name, const struct stat *st,
			    const struct orbit_seg_opts *o)
{
	const char *why = NULL;
	int r = orbit__seg_perm_check(fd, st, o, &why);

	if (r == -ORBIT_EOWNER || r == -ORBIT_EMODE)
		return refuse(
		    r, name,
		    "uid %u, group %u, mode %04o, %u links: %s (we are uid %u; configured "
		    "mode %04o, group %u, owner uid %u)",
		    (unsigned)st->st_uid, (unsigned)st->st_gid, (unsigned)(st->st_mode & 07777),
		    (unsigned)st->st_nlink, why, (unsigned)geteuid(), orbit__seg_perm_mode(o),
		    (unsigned)orbit__seg_perm_gid(o), (unsigned)o->owner_uid);
	if (r < 0)
		return refuse(r, name, "reading its ACL: %s", strerror(-r));
	return r;
}

int orbit__seg_reopen(const orbit_seg_t *seg, bool readonly)
{
	struct stat st;
	int fd;

	if (!seg)
		return -EINVAL;
	fd = open_checked(seg->name, readonly ? O_RDONLY : O_RDWR, 0, NULL, &st);
	if (fd < 0)
		return fd;
	if (st.st_dev != seg->dev || st.st_ino != seg->ino) {
		close(fd);
		return -ESTALE;
	}
	if ((uint64_t)st.st_size < seg->size) {
		close(fd);
		return -ORBIT_ETRUNCATED;
	}
	return fd;
}

/* ---- reserving the space ------------------------------------------------ */

/*
 * Give @fd @bytes of real storage, so that no later store into the mapping
 * can SIGBUS for want of room. fallocate(2) first (what posix_fallocate()
 * does on Linux); where the filesystem has none (EOPNOTSUPP, ENOSYS: and
 * musl's posix_fallocate does not emulate it), size the file and write
 * every page with pwrite(2), which reports a shortage as ENOSPC instead of
 * a signal. The size goes from 0 to @bytes in one step on either path.
 * Returns 0, -ENOSPC (message: the segment and its size), or another
 * negative errno.
 */
static int reserve(int fd, const char *name, uint64_t bytes)
{
	static const char zeros[65536];
	const char *how = "fallocate";
	int r;

	do
		r = fallocate(fd, 0, 0, (off_t)bytes);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return 0;
	r = -errno;
	if (r == -EOPNOTSUPP || r == -ENOSYS) {
		how = "writing every page";
		r = ftruncate(fd, (off_t)bytes) < 0 ? -errno : 0;
		for (uint64_t off = 0; r == 0 && off < bytes;) {
			size_t n = bytes - off < sizeof(zeros) ? (size_t)(bytes - off)
							       : sizeof(zeros);
			ssize_t w = pwrite(fd, zeros, n, (off_t)off);

			if (w > 0)
				off += (uint64_t)w;
			else if (w == 0)
				r = -ENOSPC;
			else if (errno != EINTR)
				r = -errno;
		}
		if (r == 0)
			return 0;
	}
	if (r == -ENOSPC || r == -EDQUOT)
		return refuse(-ENOSPC, name, "no room in %s for %" PRIu64 " bytes (%s: %s)",
			      SHM_DIR, bytes, how, strerror(-r));
	return refuse(r, name, "reserving %" PRIu64 " bytes (%s): %s", bytes, how, strerror(-r));
}

static int flock_retry(int fd, int op)
{
	int r;

	do
		r = flock(fd, op);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : 0;
}

int orbit__seg_lock(const orbit_seg_t *seg)
{
	return flock_retry(seg->fd, LOCK_EX);
}

int orbit__seg_unlock(const orbit_seg_t *seg)
{
	return flock_retry(seg->fd, LOCK_UN);
}

int orbit__seg_trylock(const orbit_seg_t *seg)
{
	int r = flock_retry(seg->fd, LOCK_EX | LOCK_NB);

	return r == -EAGAIN ? -EWOULDBLOCK : r;
}

/* Write the header and body of a segment we hold the flock of. */
static int initialise(void *base, const struct orbit_seg_spec *spec)
{
	struct orbit_seg_header *h = base;
	uint64_t gen;
	int r;

	/* A repair keeps counting generations from where the dead creator left. */
	gen = h->magic == ORBIT_SEG_MAGIC
		  ? atomic_load_explicit(&h->generation, memory_order_relaxed) + 1
		  : 0;
	atomic_store_explicit(&h->init_state, ORBIT_SEG_INITIALISING, memory_order_relaxed);
	memset((char *)base + ORBIT_SEG_HEADER_BYTES, 0,
	       spec->total_bytes - ORBIT_SEG_HEADER_BYTES);
	h->magic = ORBIT_SEG_MAGIC;
	h->kind = spec->kind;
	h->layout_version = spec->layout_version;
	h->header_bytes = ORBIT_SEG_HEADER_BYTES;
	h->creator_pid = (uint32_t)getpid();
	h->total_bytes = spec->total_bytes;
	h->fingerprint = spec->fingerprint;
	h->epoch_ns = orbit__now_real_ns();
	h->reserved0 = 0;
	memset(h->reserved, 0, sizeof(h->reserved));
	atomic_store_explicit(&h->generation, gen, memory_order_relaxed);
	if (spec->init) {
		r = spec->init((char *)base + ORBIT_SEG_HEADER_BYTES,
			       spec->total_bytes - ORBIT_SEG_HEADER_BYTES, spec->init_arg);
		if (r < 0)
			return r;
	}
	/* SG-R1: release, pairs with SG-A1/SG-A2 in wait_ready() and SG-A3 in settled():
	 * header and body before READY */
	atomic_store_explicit(&h->init_state, ORBIT_SEG_READY, memory_order_release);
	return 0;
}

static int map_fd(int fd, uint64_t size, bool readonly, void **out)
{
	void *p = mmap(NULL, size, readonly ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       0);

	if (p == MAP_FAILED)
		return -errno;
	*out = p;
	return 0;
}

/* Map @size bytes unless *base already maps exactly that much. */
static int remap(int fd, uint64_t size, bool readonly, void **base, uint64_t *mapped)
{
	if (*base && *mapped == size)
		return 0;
	if (*base)
		munmap(*base, *mapped);
	*base = NULL;
	*mapped = 0;
	int r = map_fd(fd, size, readonly, base);
	if (r == 0)
		*mapped = size;
	return r;
}

/* Remember which object @seg maps: orbit__seg_reopen() proves a second open reached it. */
static void note_object(orbit_seg_t *seg, const struct stat *st)
{
	seg->dev = st->st_dev;
	seg->ino = st->st_ino;
}

static int create_new(orbit_seg_t *seg, const char *name, const struct orbit_seg_spec *spec,
		      const struct orbit_seg_opts *o)
{
	void *base = NULL;
	struct stat st;
	int fd, r;

	r = orbit__seg_perm_may_create(o);
	if (r < 0)
		return refuse(r, name, "only uid %u creates this fleet's segments; we are uid %u",
			      (unsigned)o->owner_uid, (unsigned)geteuid());
	/* 0600 until orbit__seg_perm_apply() has given it the configured group */
	fd = open_checked(name, O_RDWR | O_CREAT | O_EXCL, 0600, NULL, &st);
	if (fd < 0)
		return fd == -EEXIST ? fd : refuse_open(fd, name, &st);
	/* Hold the flock before the file has a size: openers see size 0 or
	 * INITIALISING, and wait for us or find us dead. */
	ORBIT_CRASHPOINT("seg.create_before_flock");
	r = flock_retry(fd, LOCK_EX);
	if (r < 0)
		goto err_unlink;
	ORBIT_CRASHPOINT("seg.create_holding_flock");
	/* An opener that found the flock free between our O_EXCL and our
	 * flock took us for a dead creator and initialised it under the flock:
	 * it is theirs now, open it as an existing segment. */
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto err_unlink;
	}
	/* Or the name was removed while we waited (an unlink of a damaged
	 * fleet holds the flock across its removal): never initialise an
	 * object no name leads to; the caller's loop opens or creates again. */
	if (st.st_size != 0 || st.st_nlink == 0) {
		flock_retry(fd, LOCK_UN);
		close(fd);
		return -EEXIST;
	}
	r = orbit__seg_perm_apply(fd, o); /* the group, then the mode: no umask narrows it */
	if (r < 0)
		goto err_unlink;
	r = reserve(fd, name, spec->total_bytes);
	if (r < 0)
		goto err_unlink;
	r = map_fd(fd, spec->total_bytes, false, &base);
	if (r < 0)
		goto err_unlink;
	ORBIT_CRASHPOINT("seg.create_sized"); /* full size, all zero, flock held */
	r = initialise(base, spec);
	if (r < 0)
		goto err_unmap;
	flock_retry(fd, LOCK_UN);
	seg->fd = fd;
	seg->base = base;
	seg->size = spec->total_bytes;
	seg->created = true;
	note_object(seg, &st);
	return 0;

err_unmap:
	munmap(base, spec->total_bytes);
err_unlink:
	/* The name is ours (O_EXCL, still empty or not READY under our flock):
	 * nothing is left behind, not even an empty file. */
	shm_unlink(name);
	close(fd);
	return r;
}

/*
 * Only a creator at work (or one that died at work) leaves INITIALISING
 * or an all-zero header; anything else is READY, foreign or corrupt.
 */
static bool being_initialised(const struct orbit_seg_header *h, uint32_t state)
{
	return state == ORBIT_SEG_INITIALISING || (h->magic == 0 && state == 0);
}

/*
 * The header at the top of wait_ready() looked foreign or corrupt. We load
 * the state first and the magic after, and a creator writes INITIALISING
 * first and the magic after, so a creator at work between our two loads
 * shows us state 0 beside orbit's magic: only bytes read while we hold
 * the flock (no creator at work) are settled. Returns -EAGAIN while the
 * flock is held and the bound not reached, 0 when the bytes read under it
 * are a creator's after all (look again), or the refusal.
 */
static int settled(int fd, const char *name, const struct orbit_seg_header *h, uint64_t deadline)
{
	int r = flock_retry(fd, LOCK_EX | LOCK_NB);
	bool held = r == 0;
	uint32_t state;

	if ((r == -EWOULDBLOCK || r == -EAGAIN) && orbit__now_mono_ns() < deadline)
		return -EAGAIN;
	if (r < 0 && r != -EWOULDBLOCK && r != -EAGAIN)
		return r;
	/* SG-A3: acquire, pairs with SG-R1 in initialise(): READY before header/body */
	state = atomic_load_explicit(&h->init_state, memory_order_acquire);
	if (held && (state == ORBIT_SEG_READY || being_initialised(h, state)))
		r = 0;
	else /* settled under our flock, or a flock held past the bound by a non-creator */
		r = h->magic == ORBIT_SEG_MAGIC
			? refuse(-ORBIT_ECORRUPT, name, "init state %#x", state)
			: refuse(-ORBIT_EMAGIC, name, "magic %#" PRIx64 " is not orbit's",
				 h->magic);
	if (held)
		flock_retry(fd, LOCK_UN);
	return r;
}

/*
 * A file of 1..header-1 bytes: no creator ever leaves that (it sizes the
 * file from 0 to the full size in one step), so it was truncated. Its
 * first bytes still say whether it was orbit's.
 */
static int refuse_short(int fd, const char *name, uint64_t size)
{
	uint64_t magic = 0;

	if (size >= sizeof(magic) &&
	    pread(fd, &magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) &&
	    magic != ORBIT_SEG_MAGIC)
		return refuse(-ORBIT_EMAGIC, name,
			      "%" PRIu64 " bytes, magic %#" PRIx64 " is not orbit's", size, magic);
	return refuse(-ORBIT_ETRUNCATED, name,
		      "%" PRIu64 " bytes, shorter than a header (truncated)", size);
}

int orbit__seg_file_locked(int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET }; /* l_len 0: all */

	if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
		return -errno;
	return fl.l_type != F_UNLCK;
}

/*
 * orbit__seg_file_locked(), a failure refused naming @name. Nothing
 * attached to a segment that never was READY holds a lock, so a held one
 * means the file was emptied or spoiled under live users
 * (spec->attach_locks).
 */
static int locked_by_others(int fd, const char *name)
{
	int r = orbit__seg_file_locked(fd);

	return r < 0 ? refuse(r, name, "F_OFD_GETLK: %s", strerror(-r)) : r;
}

/*
 * Re-initialise a segment whose creator died at work, under its flock
 * (held by the caller). Its space is reserved first; when there is none,
 * the partial object is emptied and its name removed (nobody can be using
 * a segment that never was READY) and -ENOSPC returned.
 */
static int repair(int fd, const char *name, const struct orbit_seg_spec *spec, void **base)
{
	int r;

	if (ftruncate(fd, (off_t)spec->total_bytes) < 0)
		return -errno;
	r = reserve(fd, name, spec->total_bytes);
	if (r < 0) {
		if (ftruncate(fd, 0) == 0)
			shm_unlink(name);
		return r;
	}
	r = map_fd(fd, spec->total_bytes, false, base);
	if (r == 0)
		r = initialise(*base, spec);
	return r;
}

/*
 * Wait for READY. While not ready: if the creator still holds the flock we
 * sleep and retry until the bound; if we can take the flock the creator is
 * dead, and we repair when allowed. Returns 0 with the header validated.
 */
static int wait_ready(orbit_seg_t *seg, int fd, const struct orbit_seg_spec *spec,
		      const struct orbit_seg_opts *o, bool may_repair)
{
	int timeout_ms = o->init_timeout_ms > 0 ? o->init_timeout_ms
						: ORBIT_SEG_DEFAULT_INIT_TIMEOUT_MS;
	uint64_t deadline = orbit__now_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	const char *name = seg->name;
	void *base = NULL;
	uint64_t mapped = 0;
	int r;

	for (;;) {
		struct stat st;

		if (fstat(fd, &st) < 0) {
			r = -errno;
			goto out;
		}
		if (st.st_size > 0 && (uint64_t)st.st_size < ORBIT_SEG_HEADER_BYTES) {
			r = refuse_short(fd, name, (uint64_t)st.st_size);
			goto out;
		}
		if ((uint64_t)st.st_size >= ORBIT_SEG_HEADER_BYTES) {
			r = remap(fd, (uint64_t)st.st_size, o->readonly, &base, &mapped);
			if (r < 0)
				goto out;
			struct orbit_seg_header *h = base;
			/* SG-A1: acquire, pairs with SG-R1 in initialise(): READY before header/body */
			uint32_t state = atomic_load_explicit(&h->init_state, memory_order_acquire);

			ORBIT_CRASHPOINT("seg.open_loaded_state"); /* before the magic is read */
			if (state == ORBIT_SEG_READY) {
				r = validate_header(name, h, mapped, spec);
				if (r == 0) {
					seg->base = base;
					seg->size = mapped;
					note_object(seg, &st);
					return 0;
				}
				goto out;
			}
			/* foreign or corrupt: never "repaired" away, but refused only
			 * once no creator is at work (settled() says why) */
			if (!being_initialised(h, state)) {
				r = settled(fd, name, h, deadline);
				if (r == -EAGAIN) {
					usleep(1000);
					continue;
				}
				if (r == 0)
					continue; /* it was a creator at work: look again */
				goto out;
			}
		}
		/* Not ready. Is the creator alive (holding the flock)? */
		ORBIT_CRASHPOINT("seg.open_before_trylock");
		r = flock_retry(fd, LOCK_EX | LOCK_NB);
		if (r == 0) {
			/* No creator at work. It may have finished between our
			 * fstat and our flock: look again, under the flock,
			 * before anything is re-initialised. */
			if (fstat(fd, &st) < 0) {
				r = -errno;
				flock_retry(fd, LOCK_UN);
				goto out;
			}
			if (st.st_nlink == 0) {
				/* Removed (a creator that failed, or an unlink):
				 * never revive an object no name leads to. */
				flock_retry(fd, LOCK_UN);
				r = -ENOENT;
				goto out;
			}
			if (st.st_size > 0 && (uint64_t)st.st_size < ORBIT_SEG_HEADER_BYTES) {
				flock_retry(fd, LOCK_UN);
				continue; /* truncated meanwhile: the loop's top says so */
			}
			if ((uint64_t)st.st_size >= ORBIT_SEG_HEADER_BYTES) {
				r = remap(fd, (uint64_t)st.st_size, o->readonly, &base, &mapped);
				if (r < 0) {
					flock_retry(fd, LOCK_UN);
					goto out;
				}
				struct orbit_seg_header *h = base;
				/* SG-A2: acquire, pairs with SG-R1 in initialise() */
				uint32_t state = atomic_load_explicit(&h->init_state,
								      memory_order_acquire);
				if (!being_initialised(h, state)) {
					/* READY (validated at the loop's top) or foreign */
					flock_retry(fd, LOCK_UN);
					continue;
				}
			}
			if (!may_repair || o->readonly) {
				flock_retry(fd, LOCK_UN);
				/* Empty and no flock: also a creator between its O_EXCL
				 * open and its flock (create_new()), so wait for the
				 * bound before calling it truncated (a read-only fleet
				 * open racing the first agent's create saw this). */
				if (st.st_size == 0 && orbit__now_mono_ns() < deadline) {
					usleep(1000);
					continue;
				}
				r = st.st_size == 0
					? refuse(
					      -ORBIT_ETRUNCATED, name,
					      "0 bytes and no creator at work for %d ms (truncated "
					      "to 0, or its creator died before sizing it)",
					      timeout_ms)
					: refuse(-ORBIT_EINITTIMEOUT, name,
						 "still initialising and no creator at work (it "
						 "died); an opener that may create repairs it");
				goto out;
			}
			r = spec->attach_locks ? locked_by_others(fd, name) : 0;
			if (r != 0) {
				flock_retry(fd, LOCK_UN);
				if (r > 0)
					r = refuse(-EBUSY, name,
						   "%" PRIu64 " bytes and not initialised, but a "
						   "process holds a lock on it (a member attached "
						   "before it was emptied or spoiled): not "
						   "re-initialised",
						   (uint64_t)st.st_size);
				goto out;
			}
			if (base)
				munmap(base, mapped);
			base = NULL;
			/* A creator that died before its group mode left it 0600: finish that too */
			r = orbit__seg_perm_apply(fd, o);
			if (r < 0) {
				flock_retry(fd, LOCK_UN);
				goto out;
			}
			mapped = spec->total_bytes;
			r = repair(fd, name, spec, &base);
			flock_retry(fd, LOCK_UN);
			if (r < 0)
				goto out;
			seg->base = base;
			seg->size = mapped;
			seg->created = true;
			note_object(seg, &st);
			return 0;
		}
		if (r != -EWOULDBLOCK && r != -EAGAIN)
			goto out;
		if (orbit__now_mono_ns() >= deadline) {
			r = refuse(-ORBIT_EINITTIMEOUT, name,
				   "still initialising after %d ms (its creator holds the flock)",
				   timeout_ms);
			goto out;
		}
		usleep(1000);
	}
out:
	if (base)
		munmap(base, mapped);
	return r;
}

static int open_existing(orbit_seg_t *seg, const char *name, const struct orbit_seg_spec *spec,
			 const struct orbit_seg_opts *o, bool may_repair)
{
	struct stat st;
	int fd, r;

	fd = open_checked(name, o->readonly ? O_RDONLY : O_RDWR, 0, o, &st);
	if (fd < 0)
		return refuse_open(fd, name, &st);
	r = check_owner_mode(fd, name, &st, o);
	if (r < 0)
		goto err_close;
	r = wait_ready(seg, fd, spec, o, may_repair);
	if (r < 0)
		goto err_close;
	seg->fd = fd;
	return 0;

err_close:
	close(fd);
	return r;
}

int orbit__seg_open(orbit_seg_t *seg, const char *fleet, const char *name,
		    const struct orbit_seg_spec *spec, const struct orbit_seg_opts *opts)
{
	struct orbit_seg_opts def = { .how = ORBIT_SEG_OPEN };
	const struct orbit_seg_opts *o = opts ? opts : &def;
	orbit_seg_t s = { .fd = -1 };
	int r;

	if (!seg || !spec || spec->total_bytes < ORBIT_SEG_HEADER_BYTES ||
	    (o->readonly && o->how != ORBIT_SEG_OPEN) || orbit__seg_perm_valid(o) < 0)
		return -EINVAL;
	r = orbit__seg_name(s.name, sizeof(s.name), fleet, name);
	if (r < 0)
		return r;
	s.readonly = o->readonly;
	s.pid = getpid();

	switch (o->how) {
	case ORBIT_SEG_CREATE:
		r = create_new(&s, s.name, spec, o);
		break;
	case ORBIT_SEG_OPEN:
		r = open_existing(&s, s.name, spec, o, false);
		break;
	case ORBIT_SEG_OPEN_OR_CREATE:
		for (int tries = 0; tries < 8; tries++) {
			r = open_existing(&s, s.name, spec, o, true);
			if (r != -ENOENT)
				break;
			r = create_new(&s, s.name, spec, o);
			if (r != -EEXIST)
				break; /* lost a race with another creator: open theirs */
		}
		break;
	default:
		return -EINVAL;
	}
	if (r < 0)
		return r;
	*seg = s;
	return 0;
}

void orbit__seg_close(orbit_seg_t *seg)
{
	if (!seg)
		return;
	if (seg->base && seg->size)
		munmap(seg->base, seg->size);
	if (seg->fd > 0 || (seg->fd == 0 && seg->base))
		close(seg->fd);
	seg->base = NULL;
	seg->size = 0;
	seg->fd = -1;
}

int orbit__seg_unlink(const char *fleet, const char *name)
{
	char n[ORBIT_SEG_NAME_MAX];
	int r = orbit__seg_name(n, sizeof(n), fleet, name);

	if (r < 0)
		return r;
	return shm_unlink(n) < 0 ? -errno : 0;
}
