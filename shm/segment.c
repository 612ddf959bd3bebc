// SPDX-License-Identifier: MIT
/*
 * shm/segment.c: create, open, validate and map named fleet segments.
 * A creator makes the POSIX SHM object with O_CREAT|O_EXCL, takes its flock,
 * sizes it fully, writes the header and the kind's body, and publishes
 * READY last with a release store. An opener checks ownership, mode and
 * size with fstat before touching a page, then every header field, and
 * waits (bounded) for READY while the creator holds the flock. A creator
 * that died initialising leaves the flock free and the state INITIALISING:
 * an opener allowed to create re-initialises it under the flock.
 * Nothing here starts a thread or keeps global state.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <orbit/error.h>

#include "shm/crashpoint.h"
#include "shm/segment.h"
#include "shm/segment_perm.h"

_Static_assert(sizeof(_Atomic uint64_t) == 8, "u64 atomics must be plain 8-byte words");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "u64 atomics must be lock-free (address-free in SHM)");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "u32 atomics must be lock-free (address-free in SHM)");

uint64_t orbit__now_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t orbit__now_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t orbit__seg_fingerprint(const uint64_t *words, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 offset basis */

	for (size_t i = 0; i < n; i++) {
		for (int b = 0; b < 8; b++) {
			h ^= (words[i] >> (8 * b)) & 0xffu;
			h *= 0x100000001b3ull;
		}
	}
	return h;
}

static bool name_ok(const char *s, size_t max, bool allow_dot)
{
	size_t n = 0;

	if (!s || !*s)
		return false;
	for (; s[n]; n++) {
		char c = s[n];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '_' || c == '-' || (allow_dot && c == '.');
		if (!ok || n >= max)
			return false;
	}
	return true;
}

int orbit__seg_name(char *buf, size_t len, const char *fleet, const char *name)
{
	int n;

	if (!buf || !name_ok(fleet, ORBIT_FLEET_NAME_MAX, false) ||
	    !name_ok(name, ORBIT_SEG_NAME_MAX, true))
		return -EINVAL;
	n = snprintf(buf, len, "/orbit.%s.%s", fleet, name);
	if (n < 0 || (size_t)n >= len || (size_t)n >= ORBIT_SEG_NAME_MAX)
		return -EINVAL;
	return 0;
}

/* The header checks of orbit__seg_open(), in the order its comment lists. */
static int validate_header(const struct orbit_seg_header *h, uint64_t file_bytes,
			   const struct orbit_seg_spec *spec)
{
	if (file_bytes < ORBIT_SEG_HEADER_BYTES)
		return -ORBIT_ESIZE;
	if (h->magic != ORBIT_SEG_MAGIC)
		return -ORBIT_EMAGIC;
	if (h->layout_version != spec->layout_version)
		return -ORBIT_EVERSION;
	if (h->kind != spec->kind)
		return -ORBIT_EKIND;
	if (h->header_bytes != ORBIT_SEG_HEADER_BYTES || h->total_bytes != file_bytes ||
	    (spec->total_bytes && h->total_bytes != spec->total_bytes))
		return -ORBIT_ESIZE;
	if (h->fingerprint != spec->fingerprint)
		return -ORBIT_EFINGERPRINT;
	return 0;
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
	gen = h->magic == ORBIT_SEG_MAGIC ? atomic_load_explicit(&h->generation, memory_order_relaxed) + 1 : 0;
	atomic_store_explicit(&h->init_state, ORBIT_SEG_INITIALISING, memory_order_relaxed);
	memset((char *)base + ORBIT_SEG_HEADER_BYTES, 0, spec->total_bytes - ORBIT_SEG_HEADER_BYTES);
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
	/* R1: release, pairs with A1 in wait_ready(): header and body before READY */
	atomic_store_explicit(&h->init_state, ORBIT_SEG_READY, memory_order_release);
	return 0;
}

static int map_fd(int fd, uint64_t size, bool readonly, void **out)
{
	void *p = mmap(NULL, size, readonly ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

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

static int create_new(orbit_seg_t *seg, const char *name, const struct orbit_seg_spec *spec,
		      const struct orbit_seg_opts *o)
{
	void *base = NULL;
	int fd, r;

	/* 0600 until orbit__seg_perm_apply() has given it the configured group */
	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/* Hold the flock before the file has a size: openers see size 0 or
	 * INITIALISING, and wait for us or find us dead. */
	r = flock_retry(fd, LOCK_EX);
	if (r < 0)
		goto err_unlink;
	ORBIT_CRASHPOINT("seg.create_holding_flock");
	/* An opener that found the flock free between our O_EXCL and our
	 * flock took us for a dead creator and initialised it under the flock:
	 * it is theirs now, open it as an existing segment. */
	struct stat st;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto err_unlink;
	}
	if (st.st_size != 0) {
		flock_retry(fd, LOCK_UN);
		close(fd);
		return -EEXIST;
	}
	r = orbit__seg_perm_apply(fd, o); /* the group, then the mode: no umask narrows it */
	if (r < 0)
		goto err_unlink;
	if (ftruncate(fd, (off_t)spec->total_bytes) < 0) {
		r = -errno;
		goto err_unlink;
	}
	r = map_fd(fd, spec->total_bytes, false, &base);
	if (r < 0)
		goto err_unlink;
	r = initialise(base, spec);
	if (r < 0)
		goto err_unmap;
	flock_retry(fd, LOCK_UN);
	seg->fd = fd;
	seg->base = base;
	seg->size = spec->total_bytes;
	seg->created = true;
	return 0;

err_unmap:
	munmap(base, spec->total_bytes);
err_unlink:
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
 * Wait for READY. While not ready: if the creator still holds the flock we
 * sleep and retry until the bound; if we can take the flock the creator is
 * dead, and we repair when allowed. Returns 0 with the header validated.
 */
static int wait_ready(orbit_seg_t *seg, int fd, const struct orbit_seg_spec *spec,
		      const struct orbit_seg_opts *o, bool may_repair)
{
	int timeout_ms = o->init_timeout_ms > 0 ? o->init_timeout_ms : ORBIT_SEG_DEFAULT_INIT_TIMEOUT_MS;
	uint64_t deadline = orbit__now_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	void *base = NULL;
	uint64_t mapped = 0;
	int r;

	for (;;) {
		struct stat st;

		if (fstat(fd, &st) < 0) {
			r = -errno;
			goto out;
		}
		if ((uint64_t)st.st_size >= ORBIT_SEG_HEADER_BYTES) {
			r = remap(fd, (uint64_t)st.st_size, o->readonly, &base, &mapped);
			if (r < 0)
				goto out;
			struct orbit_seg_header *h = base;
			/* A1: acquire, pairs with R1 in initialise(): READY before header/body */
			uint32_t state = atomic_load_explicit(&h->init_state, memory_order_acquire);

			if (state == ORBIT_SEG_READY) {
				r = validate_header(h, mapped, spec);
				if (r == 0) {
					seg->base = base;
					seg->size = mapped;
					return 0;
				}
				goto out;
			}
			/* foreign or corrupt: never "repaired" away */
			if (!being_initialised(h, state)) {
				r = h->magic == ORBIT_SEG_MAGIC ? -ORBIT_ECORRUPT : -ORBIT_EMAGIC;
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
			if ((uint64_t)st.st_size >= ORBIT_SEG_HEADER_BYTES) {
				r = remap(fd, (uint64_t)st.st_size, o->readonly, &base, &mapped);
				if (r < 0) {
					flock_retry(fd, LOCK_UN);
					goto out;
				}
				struct orbit_seg_header *h = base;
				/* A2: acquire, pairs with R1 in initialise() */
				uint32_t state = atomic_load_explicit(&h->init_state, memory_order_acquire);
				if (!being_initialised(h, state)) {
					/* READY (validated at the loop's top) or foreign */
					flock_retry(fd, LOCK_UN);
					continue;
				}
			}
			if (!may_repair || o->readonly) {
				flock_retry(fd, LOCK_UN);
				r = -ORBIT_EINITTIMEOUT;
				goto out;
			}
			if (base)
				munmap(base, mapped);
			base = NULL;
			/* A creator that died before its group mode left it 0600: finish that too */
			r = orbit__seg_perm_apply(fd, o);
			if (r < 0 || ftruncate(fd, (off_t)spec->total_bytes) < 0) {
				r = r < 0 ? r : -errno;
				flock_retry(fd, LOCK_UN);
				goto out;
			}
			mapped = spec->total_bytes;
			r = map_fd(fd, mapped, false, &base);
			if (r == 0)
				r = initialise(base, spec);
			flock_retry(fd, LOCK_UN);
			if (r < 0)
				goto out;
			seg->base = base;
			seg->size = mapped;
			seg->created = true;
			return 0;
		}
		if (r != -EWOULDBLOCK && r != -EAGAIN)
			goto out;
		if (orbit__now_mono_ns() >= deadline) {
			r = -ORBIT_EINITTIMEOUT;
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

	fd = orbit__seg_perm_shm_open(name, (o->readonly ? O_RDONLY : O_RDWR) | O_NOFOLLOW | O_CLOEXEC, o);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto err_close;
	}
	r = orbit__seg_perm_check(&st, o); /* owner, group and mode: shm/segment_perm.h */
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
