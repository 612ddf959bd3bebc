// SPDX-License-Identifier: MIT
/*
 * shm/spot_queue.c: the cross-process Spot queue's segment (shm/spot_queue.h):
 * Spot and segment names, the options and the layout they give (offsets,
 * fingerprint, footprint), the segment's initialization, open with a caps
 * check that names the Spot (and what differs when a peer's segment is
 * refused), close, unlink, the fleet's list of queues and the kick. The
 * queue's other mechanisms have files of their own, listed with the
 * synchronization table in shm/spot_queue_internal.h.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <orbit/error.h>
#include "base/fork_guard.h"
#include "base/options.h"
#include "shm/segment_perm.h"
#include "shm/spot_queue_internal.h"

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "u64 atomics must be lock-free (address-free in SHM)");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "u32 atomics must be lock-free (address-free in SHM)");
_Static_assert(offsetof(struct orbit_spotq_shm, host_gen) == 192, "host line");
_Static_assert(offsetof(struct orbit_spotq_shm, rec_db) == 256, "doorbells on their own lines");
_Static_assert(offsetof(struct orbit_spotq_lane_shm, head) == 64, "head apart from tail");
_Static_assert(offsetof(struct orbit_spotq_lane_shm, aborted) == 128, "counters apart");
_Static_assert(offsetof(struct orbit_spotq_slot, target) == 64, "target on line 2");

static inline uint32_t pow2_mask(uint32_t cap)
{
	return cap && !(cap & (cap - 1)) ? cap - 1 : 0;
}

static inline uint64_t wrap_of(uint32_t cap)
{
	return (uint64_t)cap * ((1ull << 32) / cap);
}

/* ---- names, options, layout ---- */

static bool spot_name_ok(const char *s)
{
	size_t n = 0;

	if (!s || !*s)
		return false;
	for (; s[n]; n++) {
		char c = s[n];
		if (n >= ORBIT_SPOTQ_NAME_MAX ||
		    !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return false;
	}
	return true;
}

int orbit__spotq_seg_name(char *buf, size_t len, const char *spot)
{
	int n;

	if (!buf || !spot_name_ok(spot))
		return -EINVAL;
	n = snprintf(buf, len, ORBIT_SPOTQ_SEG_PREFIX "%s", spot);
	return (n < 0 || (size_t)n >= len) ? -EINVAL : 0;
}

void orbit__spotq_options_init(struct orbit_spotq_options *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
}

/* base/options.c's rule (copy_struct_from_user()); NULL: every default. */
static int options_read(struct orbit_spotq_options *dst, const struct orbit_spotq_options *user)
{
	if (!user) {
		orbit__spotq_options_init(dst);
		return 0;
	}
	return ORBIT__OPTS_COPY(dst, user);
}

struct layout {
	uint32_t items[2], bytes[2], rows, unblock_ms;
	uint64_t lanes_off, rows_off, slots_off[2], acks_off[2], data_off[2], total;
};

static inline uint64_t round64(uint64_t v)
{
	return (v + 63) & ~63ull;
}

static int layout_of(const struct orbit_spotq_options *o, struct layout *y)
{
	y->items[0] = o->app_items ? o->app_items : ORBIT_SPOTQ_DEFAULT_APP_ITEMS;
	y->bytes[0] = o->app_bytes ? o->app_bytes : ORBIT_SPOTQ_DEFAULT_APP_BYTES;
	y->items[1] = o->lifecycle_items ? o->lifecycle_items : ORBIT_SPOTQ_DEFAULT_LIFECYCLE_ITEMS;
	y->bytes[1] = o->lifecycle_bytes ? o->lifecycle_bytes : ORBIT_SPOTQ_DEFAULT_LIFECYCLE_BYTES;
	y->rows = o->producer_rows ? o->producer_rows : ORBIT_SPOTQ_DEFAULT_PRODUCER_ROWS;
	y->unblock_ms = o->unblock_ms ? o->unblock_ms : ORBIT_SPOTQ_DEFAULT_UNBLOCK_MS;
	for (int l = 0; l < 2; l++)
		if (y->items[l] < ORBIT_SPOTQ_MIN_ITEMS || y->items[l] > ORBIT_SPOTQ_MAX_ITEMS ||
		    y->bytes[l] < ORBIT_SPOTQ_MIN_BYTES || y->bytes[l] > ORBIT_SPOTQ_MAX_BYTES)
			return -EINVAL;
	if (y->rows > ORBIT_SPOTQ_MAX_PRODUCER_ROWS || y->unblock_ms > ORBIT_SPOTQ_MAX_UNBLOCK_MS)
		return -EINVAL;
	y->lanes_off = ORBIT_SEG_HEADER_BYTES + sizeof(struct orbit_spotq_shm);
	y->rows_off = y->lanes_off + 2 * sizeof(struct orbit_spotq_lane_shm);
	y->slots_off[0] = y->rows_off + (uint64_t)y->rows * sizeof(struct orbit_spotq_row);
	y->slots_off[1] = y->slots_off[0] + (uint64_t)y->items[0] * sizeof(struct orbit_spotq_slot);
	y->acks_off[0] = y->slots_off[1] + (uint64_t)y->items[1] * sizeof(struct orbit_spotq_slot);
	y->acks_off[1] = y->acks_off[0] + round64((uint64_t)y->items[0] * sizeof(uint64_t));
	y->data_off[0] = y->acks_off[1] + round64((uint64_t)y->items[1] * sizeof(uint64_t));
	y->data_off[1] = y->data_off[0] + round64(y->bytes[0]);
	y->total = y->data_off[1] + round64(y->bytes[1]);
	return 0;
}

static uint64_t fingerprint_of(const struct layout *y)
{
	const uint64_t w[] = {
		ORBIT_SEG_KIND_SPOT_QUEUE,
		ORBIT_SPOTQ_LAYOUT_VERSION,
		y->items[0],
		y->bytes[0],
		y->items[1],
		y->bytes[1],
		y->rows,
		sizeof(struct orbit_spotq_shm),
		sizeof(struct orbit_spotq_lane_shm),
		sizeof(struct orbit_spotq_row),
		sizeof(struct orbit_spotq_slot),
		y->lanes_off,
		y->rows_off,
		y->slots_off[0],
		y->slots_off[1],
		y->acks_off[0],
		y->acks_off[1],
		y->data_off[0],
		y->data_off[1],
		y->total,
	};
	return orbit__seg_fingerprint(w, sizeof(w) / sizeof(w[0]));
}

uint64_t orbit__spotq_footprint(const struct orbit_spotq_options *user)
{
	struct orbit_spotq_options o;
	struct layout y;

	if (options_read(&o, user) < 0 || layout_of(&o, &y) < 0)
		return 0;
	return y.total;
}

struct init_arg {
	const struct layout *y;
	const char *spot;
};

static int spotq_init(void *body, uint64_t body_bytes, void *arg)
{
	const struct init_arg *a = arg;
	const struct layout *y = a->y;
	struct orbit_spotq_shm *s = body;

	if (body_bytes + ORBIT_SEG_HEADER_BYTES < y->total)
		return -ORBIT_ESIZE;
	snprintf(s->spot, sizeof(s->spot), "%s", a->spot);
	for (int l = 0; l < 2; l++) {
		s->items[l] = y->items[l];
		s->bytes[l] = y->bytes[l];
		s->slots_off[l] = y->slots_off[l];
		s->acks_off[l] = y->acks_off[l];
		s->data_off[l] = y->data_off[l];
	}
	s->producer_rows = y->rows;
	s->unblock_ms = y->unblock_ms;
	s->slot_bytes = sizeof(struct orbit_spotq_slot);
	s->row_bytes = sizeof(struct orbit_spotq_row);
	s->lanes_off = y->lanes_off;
	s->rows_off = y->rows_off;
	/* Relaxed: the segment's READY release (segment.c R1) publishes the body */
	atomic_store_explicit(&s->host_row, UINT32_MAX, memory_order_relaxed);
	orbit__doorbell_init(&s->rec_db);
	orbit__doorbell_init(&s->room_db);
	return 0; /* words, rows, slots, data: zero-filled by the segment layer */
}

static void say(const struct orbit_spotq_options *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(const struct orbit_spotq_options *o, const char *fmt, ...)
{
	va_list ap;

	if (!o->why || !o->why_len)
		return;
	va_start(ap, fmt);
	vsnprintf(o->why, o->why_len, fmt, ap);
	va_end(ap);
}

/*
 * Read the stored header and config of segment @name without mapping it,
 * after the opener's own checks on the descriptor (regular file, owner and
 * mode as shm/segment_perm.h rules, O_NOFOLLOW|O_NONBLOCK). The bytes are
 * untrusted: callers only name values from them, or pass caps from them to
 * orbit__seg_open(), which validates everything again (fingerprint).
 * Returns 0, -ORBIT_ENOTREG (not a regular file), -ORBIT_ETRUNCATED (shorter
 * than header + config, *file_bytes set), or the codes of the checks.
 */
static int probe(const char *fleet, const char *name, const struct orbit_seg_opts *so,
		 struct orbit_seg_header *hd, struct orbit_spotq_shm *cfg, int64_t *file_bytes)
{
	char path[ORBIT_SEG_NAME_MAX];
	const char *why; /* the message is orbit__seg_open()'s */
	struct stat st;
	int fd, r;

	r = orbit__seg_name(path, sizeof(path), fleet, name);
	if (r < 0)
		return r;
	fd = orbit__seg_perm_shm_open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, so);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	*file_bytes = (int64_t)st.st_size;
	r = !S_ISREG(st.st_mode) ? -ORBIT_ENOTREG : orbit__seg_perm_check(fd, &st, so, &why);
	if (r < 0)
		goto out;
	if ((uint64_t)st.st_size < ORBIT_SEG_HEADER_BYTES + sizeof(*cfg) ||
	    pread(fd, hd, sizeof(*hd), 0) != (ssize_t)sizeof(*hd) ||
	    pread(fd, cfg, sizeof(*cfg), ORBIT_SEG_HEADER_BYTES) != (ssize_t)sizeof(*cfg))
		r = -ORBIT_ETRUNCATED;
out:
	close(fd);
	return r;
}

/*
 * After orbit__seg_open refused the size or fingerprint, read the stored
 * config only to name what differs. Returns -ORBIT_EFINGERPRINT when caps
 * differ, else @rc.
 */
static int explain_mismatch(const char *fleet, const char *name, const char *spot,
			    const struct layout *y, const struct orbit_spotq_options *o,
			    const struct orbit_seg_opts *so, int rc)
{
	static const char *const lane_name[2] = { "application", "lifecycle" };
	struct orbit_seg_header hd;
	struct orbit_spotq_shm s;
	int64_t size = -1;

	if (probe(fleet, name, so, &hd, &s, &size) < 0) {
		say(o, "spot '%s': segment %s refused (%s): %lld bytes, %" PRIu64 " expected", spot,
		    name, orbit_strerror(rc), (long long)size, y->total);
		return rc;
	}
	for (int l = 0; l < 2; l++) {
		if (s.items[l] != y->items[l]) {
			say(o, "spot '%s': %s lane item cap is %u in the segment, %u asked", spot,
			    lane_name[l], s.items[l], y->items[l]);
			return -ORBIT_EFINGERPRINT;
		}
		if (s.bytes[l] != y->bytes[l]) {
			say(o, "spot '%s': %s lane byte cap is %u in the segment, %u asked", spot,
			    lane_name[l], s.bytes[l], y->bytes[l]);
			return -ORBIT_EFINGERPRINT;
		}
	}
	if (s.producer_rows != y->rows) {
		say(o, "spot '%s': producer rows are %u in the segment, %u asked", spot,
		    s.producer_rows, y->rows);
		return -ORBIT_EFINGERPRINT;
	}
	say(o, "spot '%s': segment %s refused (%s): %lld bytes, %" PRIu64 " expected", spot, name,
	    orbit_strerror(rc), (long long)size, y->total);
	return rc;
}

/*
 * After orbit__seg_open refused the layout version: name both versions
 * (a peer built with layout 2, which kept the ack words in the slots,
 * gets the same -ORBIT_EVERSION and message from its side).
 */
static void explain_version(const char *fleet, const char *name, const char *spot,
			    const struct orbit_spotq_options *o, const struct orbit_seg_opts *so)
{
	struct orbit_seg_header hd;
	struct orbit_spotq_shm s;
	int64_t size = -1;

	if (probe(fleet, name, so, &hd, &s, &size) < 0)
		say(o, "spot '%s': segment %s has another layout version than %u", spot, name,
		    ORBIT_SPOTQ_LAYOUT_VERSION);
	else
		say(o,
		    "spot '%s': segment %s has queue layout version %u, this process uses %u "
		    "(every member of the fleet must run a build of the same layout)",
		    spot, name, hd.layout_version, ORBIT_SPOTQ_LAYOUT_VERSION);
}

/* adopt_caps: take the caps stored in an existing segment (then validated by the fingerprint). */
static int adopt(const char *fleet, const char *name, const struct orbit_seg_opts *so,
		 struct orbit_spotq_options *o)
{
	struct orbit_seg_header hd;
	struct orbit_spotq_shm s;
	int64_t size;
	int r = probe(fleet, name, so, &hd, &s, &size);

	if (r < 0)
		return r;
	if (hd.magic != ORBIT_SEG_MAGIC)
		return -ORBIT_EMAGIC;
	if (hd.kind != ORBIT_SEG_KIND_SPOT_QUEUE)
		return -ORBIT_EKIND;
	o->app_items = s.items[0];
	o->app_bytes = s.bytes[0];
	o->lifecycle_items = s.items[1];
	o->lifecycle_bytes = s.bytes[1];
	o->producer_rows = s.producer_rows;
	return 0;
}

int orbit__spotq_open(orbit_spotq_t **out, const char *fleet, const char *spot,
		      const struct orbit_spotq_options *user)
{
	struct orbit_spotq_options o;
	struct orbit_seg_opts so;
	struct orbit_seg_spec spec;
	struct init_arg ia;
	struct layout y;
	char name[ORBIT_SEG_NAME_MAX];
	orbit_spotq_t *q;
	int r;

	if (!out)
		return -EINVAL;
	r = options_read(&o, user);
	if (r < 0)
		return r;
	if (orbit__spotq_seg_name(name, sizeof(name), spot) < 0) {
		say(&o, "spot name '%s' is not 1..%u of [A-Za-z0-9_.-]", spot ? spot : "(null)",
		    ORBIT_SPOTQ_NAME_MAX);
		return -EINVAL;
	}
	so = (struct orbit_seg_opts){ .how = (enum orbit_seg_open_mode)o.how,
				      .readonly = o.readonly,
				      .mode = o.mode,
				      .init_timeout_ms = o.init_timeout_ms,
				      .gid = o.gid };
	if (o.adopt_caps) {
		if (o.how != ORBIT_SEG_OPEN)
			return -EINVAL;
		r = adopt(fleet, name, &so, &o);
		if (r < 0)
			return r;
	}
	r = layout_of(&o, &y);
	if (r < 0) {
		say(&o, "spot '%s': a cap or option is out of range (items %u..%u, bytes %u..%u)",
		    spot, ORBIT_SPOTQ_MIN_ITEMS, ORBIT_SPOTQ_MAX_ITEMS, ORBIT_SPOTQ_MIN_BYTES,
		    ORBIT_SPOTQ_MAX_BYTES);
		return r;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	ia = (struct init_arg){ .y = &y, .spot = spot };
	spec = (struct orbit_seg_spec){
		.kind = ORBIT_SEG_KIND_SPOT_QUEUE,
		.layout_version = ORBIT_SPOTQ_LAYOUT_VERSION,
		.total_bytes = y.total,
		.fingerprint = fingerprint_of(&y),
		.init = spotq_init,
		.init_arg = &ia,
	};
	r = orbit__seg_open(&q->seg, fleet, name, &spec, &so);
	if (r == -ORBIT_EFINGERPRINT || r == -ORBIT_ESIZE || r == -ORBIT_ETRUNCATED)
		r = explain_mismatch(fleet, name, spot, &y, &o, &so, r);
	else if (r == -ORBIT_EVERSION)
		explain_version(fleet, name, spot, &o, &so);
	if (r < 0)
		goto err_free;
	q->shm = orbit__seg_at(&q->seg, ORBIT_SEG_HEADER_BYTES, sizeof(*q->shm));
	q->rows = orbit__seg_at(&q->seg, y.rows_off,
				(uint64_t)y.rows * sizeof(struct orbit_spotq_row));
	struct orbit_spotq_lane_shm *lanes = orbit__seg_at(&q->seg, y.lanes_off,
							   2 * sizeof(struct orbit_spotq_lane_shm));
	if (!q->shm || (!q->rows && y.rows) || !lanes) {
		r = -ORBIT_ECORRUPT;
		goto err_close;
	}
	/* The fingerprint matched; the config words are still untrusted bytes */
	for (int l = 0; l < 2; l++) {
		struct lane_geo *g = &q->lane[l];

		g->items = y.items[l];
		g->bytes = y.bytes[l];
		g->wi = wrap_of(g->items);
		g->wb = wrap_of(g->bytes);
		g->imask = pow2_mask(g->items);
		g->bmask = pow2_mask(g->bytes);
		g->w = &lanes[l];
		g->slots = orbit__seg_at(&q->seg, y.slots_off[l],
					 (uint64_t)g->items * sizeof(struct orbit_spotq_slot));
		g->acks = orbit__seg_at(&q->seg, y.acks_off[l],
					(uint64_t)g->items * sizeof(uint64_t));
		g->data = orbit__seg_at(&q->seg, y.data_off[l], g->bytes);
		if (!g->slots || !g->acks || !g->data || q->shm->items[l] != y.items[l] ||
		    q->shm->bytes[l] != y.bytes[l] || q->shm->slots_off[l] != y.slots_off[l] ||
		    q->shm->acks_off[l] != y.acks_off[l] || q->shm->data_off[l] != y.data_off[l])
			r = -ORBIT_ECORRUPT;
	}
	if (r == 0 && (q->shm->producer_rows != y.rows || q->shm->lanes_off != y.lanes_off ||
		       q->shm->rows_off != y.rows_off ||
		       q->shm->slot_bytes != sizeof(struct orbit_spotq_slot) ||
		       q->shm->row_bytes != sizeof(struct orbit_spotq_row) ||
		       q->shm->unblock_ms > ORBIT_SPOTQ_MAX_UNBLOCK_MS ||
		       strncmp(q->shm->spot, spot, sizeof(q->shm->spot)) != 0))
		r = -ORBIT_ECORRUPT;
	if (r < 0) {
		say(&o, "spot '%s': config words of the segment disagree with its fingerprint",
		    spot);
		goto err_close;
	}
	q->producer_rows = y.rows;
	q->unblock_ms = q->shm->unblock_ms ? q->shm->unblock_ms : ORBIT_SPOTQ_DEFAULT_UNBLOCK_MS;
	snprintf(q->spot, sizeof(q->spot), "%s", spot);
	q->pid = orbit__self_pid();
	*out = q;
	return 0;

err_close:
	orbit__seg_close(&q->seg);
err_free:
	free(q);
	return r;
}

void orbit__spotq_close(orbit_spotq_t *q)
{
	if (!q)
		return;
	orbit__seg_close(&q->seg);
	free(q);
}

int orbit__spotq_unlink(const char *fleet, const char *spot)
{
	char name[ORBIT_SEG_NAME_MAX];
	int r = orbit__spotq_seg_name(name, sizeof(name), spot);

	return r < 0 ? r : orbit__seg_unlink(fleet, name);
}

int orbit__spotq_foreach(const char *fleet, int (*fn)(void *ctx, const char *spot), void *ctx)
{
	char prefix[ORBIT_SEG_NAME_MAX];
	struct dirent *d;
	DIR *dir;
	size_t plen;
	int n = 0, r;

	if (!fn || orbit__seg_name(prefix, sizeof(prefix), fleet, "x") < 0)
		return -EINVAL;
	/* "orbit.<fleet>.spotq.": the object names as files under /dev/shm */
	snprintf(prefix, sizeof(prefix), "orbit.%s." ORBIT_SPOTQ_SEG_PREFIX, fleet);
	plen = strlen(prefix);
	dir = opendir("/dev/shm");
	if (!dir)
		return -errno;
	while ((d = readdir(dir))) {
		if (strncmp(d->d_name, prefix, plen) || !spot_name_ok(d->d_name + plen))
			continue;
		n++;
		r = fn(ctx, d->d_name + plen);
		if (r)
			break;
	}
	closedir(dir);
	return n;
}

orbit_seg_t *orbit__spotq_seg(orbit_spotq_t *q)
{
	return q ? &q->seg : NULL;
}

void orbit__spotq_kick(orbit_spotq_t *q)
{
	if (q && !q->seg.readonly && orbit__fork_check(q->pid) == 0)
		orbit__doorbell_ring(&q->shm->rec_db);
}
