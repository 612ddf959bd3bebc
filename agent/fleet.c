// SPDX-License-Identifier: MIT
/*
 * agent/fleet.c: the outside view of a fleet (orbit/fleet.h): opens the
 * member directory, stats segment, lock table and transition ring
 * read-only (or read-write for administration), copies member and stats
 * rows into public structs, wraps ring cursors as public readers, and
 * implements reset_transport (members checked first, then table and ring).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <orbit/error.h>
#include <orbit/fleet.h>

#include "agent/fleet_internal.h"
#include "base/fork_guard.h"
#include "base/lock_backend.h"
#include "base/options.h"
#include "shm/lock_internal.h"
#include "shm/segment_perm.h"
#include "shm/spot_queue.h"
#include "shm/stats.h"
#ifdef ORBIT_HAVE_ETCD
#include "lib/etcd_feed.h"
#endif

_Static_assert(ORBIT_STATS_MAX_COUNTERS == ORBIT_STATS_COUNTERS_MAX, "counter room agrees");
_Static_assert(ORBIT_STATS_MAX_HISTS == ORBIT_STATS_HISTS_MAX, "histogram room agrees");
_Static_assert(ORBIT_STATS_NBUCKETS == ORBIT_STATS_BUCKETS, "bucket count agrees");
_Static_assert(ORBIT_FLEET_SPOT_SLOTS == ORBIT_STATS_SPOTS_PER_ROW, "Spot slots agree");
_Static_assert(ORBIT_FLEET_STATS_PASS_BUDGET_NS == ORBIT_STATS_PASS_BUDGET_NS,
	       "pass budgets agree");
_Static_assert(ORBIT_FLEET_SPOT_COUNTERS_MAX == ORBIT_STATS_SPOT_COUNTERS_MAX,
	       "Spot counters agree");
_Static_assert(ORBIT_FLEET_SPOT_NAME_MAX == ORBIT_STATS_SPOT_NAME_BYTES, "Spot names agree");
_Static_assert((int)ORBIT_FLEET_SPOT_HOST == (int)ORBIT_STATS_SPOT_HOST, "roles agree");
_Static_assert((int)ORBIT_FLEET_SPOT_CLIENT == (int)ORBIT_STATS_SPOT_CLIENT, "roles agree");
/* The enum-typed fields replaced uint32_t ones: the structs' layout is unchanged. */
_Static_assert(sizeof(enum orbit_member_state) == sizeof(uint32_t), "member state is 32 bits");
_Static_assert(sizeof(enum orbit_transition_type) == sizeof(uint32_t), "type is 32 bits");

struct orbit_fleet {
	char name[ORBIT_FLEET_NAME_MAX + 1];
	bool admin;
	orbit_members_t *members; /* NULL: no directory */
	orbit_stats_t stats;
	bool have_stats;
	orbit_ring_t *ring; /* NULL: no ring */
	orbit_lock_t *lock; /* NULL: no lock table */
};

/* A reader follows the fleet's ring (r) or, on an etcd lock, a watch (feed). */
struct orbit_transition_reader {
	orbit_ring_reader_t *r;	       /* NULL for a feed */
	struct orbit__etcd_feed *feed; /* NULL for a ring */
	pid_t opener;		       /* a feed's connection is this process's */
	struct orbit_ring_event ev;    /* ~4 KiB copy buffer: no allocation per next() */
};

void orbit__fleet_ring_layout(struct orbit_ring_layout *out, const struct orbit_lock_layout *ll)
{
	orbit__ring_layout_default(out);
	if (!ll)
		return;
	out->kind = ll->ring_kind;
	out->frames_per_lane = ll->ring_frames;
	out->frame_bytes = ll->ring_frame_bytes;
}

/* Keep the first real error; -ENOENT (missing) only counts when all are missing. */
static void note(int *first, int rc)
{
	if (rc < 0 && rc != -ENOENT && *first == 0)
		*first = rc;
}

void orbit_fleet_options_init(struct orbit_fleet_options *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
}

int orbit_fleet_open(const struct orbit_fleet_options *user, orbit_fleet_t **out)
{
	struct orbit_fleet_options copy, *opts = &copy;
	struct orbit_lock_layout lay;
	struct orbit_seg_opts so = { .how = ORBIT_SEG_OPEN };
	struct orbit_lock_options lo = { .size = sizeof(lo) };
	const struct orbit_lock_layout *layout = NULL;
	struct orbit_ring_layout rl;
	const char *name = "default";
	orbit_fleet_t *f;
	orbit_lock_t *probe = NULL;
	int first = 0, rc;
	char buf[ORBIT_SEG_NAME_MAX];

	if (!out)
		return -EINVAL;
	orbit_fleet_options_init(opts);
	rc = user ? ORBIT__OPTS_COPY(opts, user) : 0; /* base/options.h rule */
	if (!rc && opts->layout)
		rc = orbit__lock_layout_copy(&lay, opts->layout);
	if (rc)
		return rc;
	layout = opts->layout ? &lay : NULL;
	if (opts && opts->fleet)
		name = opts->fleet;
	if (orbit__seg_name(buf, sizeof(buf), name, "x") < 0)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	strcpy(f->name, name); /* length checked by orbit__seg_name */
	f->admin = opts && opts->admin;
	so.readonly = !f->admin;
	so.mode = lo.mode = opts ? opts->mode : 0;
	so.gid = lo.gid = opts ? opts->gid : 0;
	so.owner_uid = lo.owner_uid = opts ? opts->owner_uid : 0;

	rc = orbit__members_open(&f->members, name, 0, &so);
	if (rc < 0)
		f->members = NULL;
	note(&first, rc);
	rc = orbit__stats_open(&f->stats, name, &so);
	f->have_stats = rc == 0;
	note(&first, rc);
	/* The ring of the layout: one ring per layout, as the lock's writers use. */
	orbit__fleet_ring_layout(&rl, layout);
	rc = orbit__ring_open(&f->ring, name, &rl, &so);
	if (rc < 0)
		f->ring = NULL;
	note(&first, rc);
	/* The lock API creates unless readonly: probe read-only first. */
	lo.fleet = name;
	lo.layout = layout;
	lo.readonly = true;
	rc = orbit_lock_open(&lo, &probe);
	if (rc == 0 && f->admin) {
		orbit_lock_close(probe);
		lo.readonly = false;
		rc = orbit_lock_open(&lo, &probe);
	}
	f->lock = rc == 0 ? probe : NULL;
	note(&first, rc);

	if (first == 0 && !f->members && !f->have_stats && !f->ring && !f->lock)
		first = -ENOENT;
	if (first < 0) {
		orbit_fleet_close(f);
		return first;
	}
	*out = f;
	return 0;
}

void orbit_fleet_close(orbit_fleet_t *f)
{
	if (!f)
		return;
	orbit_lock_close(f->lock);
	orbit__ring_close(f->ring);
	if (f->have_stats)
		orbit__stats_close(&f->stats);
	orbit__members_close(f->members);
	free(f);
}

const char *orbit_fleet_name(const orbit_fleet_t *f)
{
	return f ? f->name : "";
}

uint32_t orbit_fleet_rows(const orbit_fleet_t *f)
{
	return f && f->members ? orbit__members_rows(f->members) : 0;
}

int orbit_fleet_member(orbit_fleet_t *f, uint32_t row, struct orbit_fleet_member *out)
{
	struct orbit_member_info mi;
	int rc;

	if (!f || !out)
		return -EINVAL;
	if (!f->members)
		return -ENOENT;
	rc = orbit__members_snapshot(f->members, row, &mi);
	if (rc < 0)
		return rc;
	if (mi.state == ORBIT_MEMBER_FREE && !mi.alive)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->row = mi.row;
	out->state = mi.state;
	out->generation = mi.generation;
	out->pid = mi.pid;
	out->start_time_ticks = mi.start_time_ticks;
	out->joined_real_ns = mi.joined_real_ns;
	out->heartbeat_ns = mi.heartbeat_ns;
	out->alive = mi.alive;
	memcpy(out->name, mi.name, sizeof(out->name));
	out->name[sizeof(out->name) - 1] = '\0';
	return 0;
}

int orbit_fleet_stats_read(orbit_fleet_t *f, uint32_t row, struct orbit_fleet_stats *out)
{
	return orbit_fleet_stats_read_pass(f, row, out, NULL);
}

int orbit_fleet_stats_read_pass(orbit_fleet_t *f, uint32_t row, struct orbit_fleet_stats *out,
				uint64_t *wait_left_ns)
{
	struct orbit_stats_snapshot s;
	int rc;

	if (!f || !out || row >= ORBIT_STATS_ROWS)
		return -EINVAL;
	if (!f->have_stats)
		return -ENOENT;
	rc = orbit__stats_read_pass(&f->stats, row, &s, wait_left_ns);
	if (rc < 0)
		return rc;
	memset(out, 0, sizeof(*out));
	out->row = row;
	out->pid = (uint32_t)s.pid;
	out->start_time_ticks = s.start_ticks;
	out->published_real_ns = s.published_ns;
	out->ncounters = ORBIT_STAT__COUNT;
	out->nhists = ORBIT_HIST__COUNT;
	memcpy(out->counters, s.counters, sizeof(s.counters));
	for (unsigned h = 0; h < ORBIT_HIST__COUNT; h++) {
		out->hists[h].count = s.hists[h].count;
		out->hists[h].sum_ns = s.hists[h].sum_ns;
		memcpy(out->hists[h].buckets, s.hists[h].buckets, sizeof(s.hists[h].buckets));
	}
	return 0;
}

/* orbit__stats_open() checked the segment's row count against this one. */
uint32_t orbit_fleet_stats_rows(const orbit_fleet_t *f)
{
	return f && f->have_stats ? ORBIT_STATS_ROWS : 0;
}

static const struct orbit_stats_desc *counter_desc(unsigned id)
{
	return id < ORBIT_STAT__COUNT ? &orbit__stats_counters[id] : NULL;
}

static const struct orbit_stats_desc *hist_desc(unsigned id)
{
	return id < ORBIT_HIST__COUNT ? &orbit__stats_hists[id] : NULL;
}

unsigned orbit_stats_counter_count(void)
{
	return ORBIT_STAT__COUNT;
}

const char *orbit_stats_counter_name(unsigned id)
{
	return counter_desc(id) ? counter_desc(id)->name : NULL;
}

const char *orbit_stats_counter_help(unsigned id)
{
	return counter_desc(id) ? counter_desc(id)->help : NULL;
}

bool orbit_stats_counter_is_gauge(unsigned id)
{
	return counter_desc(id) && counter_desc(id)->type == ORBIT_STATS_GAUGE;
}

unsigned orbit_stats_hist_count(void)
{
	return ORBIT_HIST__COUNT;
}

const char *orbit_stats_hist_name(unsigned id)
{
	return hist_desc(id) ? hist_desc(id)->name : NULL;
}

const char *orbit_stats_hist_help(unsigned id)
{
	return hist_desc(id) ? hist_desc(id)->help : NULL;
}

uint64_t orbit_stats_bucket_le(unsigned i)
{
	return orbit__stats_bucket_le(i);
}

uint64_t orbit_stats_hist_quantile(const struct orbit_stats_histogram *h, double q)
{
	uint64_t want, acc = 0;

	if (!h || h->count == 0)
		return 0;
	if (!(q >= 0.0))
		q = 0.0; /* NaN too */
	if (q > 1.0)
		q = 1.0;
	want = (uint64_t)(q * (double)h->count + 0.5);
	if (want == 0)
		want = 1;
	for (unsigned b = 0; b < ORBIT_STATS_NBUCKETS; b++) {
		/* saturate: scribbled buckets must not wrap the sum */
		acc = acc + h->buckets[b] < acc ? UINT64_MAX : acc + h->buckets[b];
		if (acc >= want)
			return orbit_stats_bucket_le(b);
	}
	return UINT64_MAX;
}

int orbit_fleet_spot_stats_read(orbit_fleet_t *f, uint32_t row, uint32_t slot,
				struct orbit_fleet_spot_stats *out)
{
	return orbit_fleet_spot_stats_read_pass(f, row, slot, out, NULL);
}

int orbit_fleet_spot_stats_read_pass(orbit_fleet_t *f, uint32_t row, uint32_t slot,
				     struct orbit_fleet_spot_stats *out, uint64_t *wait_left_ns)
{
	struct orbit_stats_spot_snapshot s;
	int rc;

	if (!f || !out || row >= ORBIT_STATS_ROWS || slot >= ORBIT_STATS_SPOTS_PER_ROW)
		return -EINVAL;
	if (!f->have_stats)
		return -ENOENT;
	rc = orbit__stats_spot_read_pass(&f->stats, row, slot, &s, wait_left_ns);
	if (rc < 0)
		return rc;
	memset(out, 0, sizeof(*out));
	out->row = row;
	out->slot = slot;
	out->pid = (uint32_t)s.pid;
	out->start_time_ticks = s.start_ticks;
	out->published_real_ns = s.published_ns;
	out->role = (enum orbit_fleet_spot_role)s.role;
	memcpy(out->spot, s.name, sizeof(out->spot)); /* validated: NUL-terminated */
	orbit__stats_spot_table(s.role, &out->ncounters);
	memcpy(out->counters, s.counters, sizeof(out->counters));
	out->latency.count = s.hist.count;
	out->latency.sum_ns = s.hist.sum_ns;
	memcpy(out->latency.buckets, s.hist.buckets, sizeof(out->latency.buckets));
	return 0;
}

static const struct orbit_stats_desc *spot_desc(enum orbit_fleet_spot_role role, unsigned id)
{
	unsigned n = 0;
	const struct orbit_stats_desc *t = orbit__stats_spot_table((enum orbit_stats_spot_role)role,
								   &n);

	return t && id < n ? &t[id] : NULL;
}

unsigned orbit_stats_spot_counter_count(enum orbit_fleet_spot_role role)
{
	unsigned n = 0;

	orbit__stats_spot_table((enum orbit_stats_spot_role)role, &n);
	return n;
}

const char *orbit_stats_spot_counter_name(enum orbit_fleet_spot_role role, unsigned id)
{
	return spot_desc(role, id) ? spot_desc(role, id)->name : NULL;
}

const char *orbit_stats_spot_counter_help(enum orbit_fleet_spot_role role, unsigned id)
{
	return spot_desc(role, id) ? spot_desc(role, id)->help : NULL;
}

bool orbit_stats_spot_counter_is_gauge(enum orbit_fleet_spot_role role, unsigned id)
{
	return spot_desc(role, id) && spot_desc(role, id)->type == ORBIT_STATS_GAUGE;
}

const char *orbit_stats_spot_hist_name(void)
{
	return orbit__stats_spot_hist.name;
}

const char *orbit_stats_spot_hist_help(void)
{
	return orbit__stats_spot_hist.help;
}

orbit_lock_t *orbit_fleet_lock(orbit_fleet_t *f)
{
	return f ? f->lock : NULL;
}

int orbit__fleet_reader_wrap(orbit_ring_t *ring, orbit_transition_reader_t **out)
{
	orbit_transition_reader_t *tr;
	int rc;

	if (!ring || !out)
		return -EINVAL;
	tr = calloc(1, sizeof(*tr));
	if (!tr)
		return -ENOMEM;
	rc = orbit__ring_reader_open(&tr->r, ring);
	if (rc < 0) {
		free(tr);
		return rc;
	}
	*out = tr;
	return 0;
}

int orbit_fleet_reader_open(orbit_fleet_t *f, orbit_transition_reader_t **out)
{
	if (!f || !out)
		return -EINVAL;
	if (!f->ring)
		return -ENOENT;
	return orbit__fleet_reader_wrap(f->ring, out);
}

int orbit_lock_reader_open(orbit_lock_t *lock, orbit_transition_reader_t **out)
{
	if (!lock || !out)
		return -EINVAL;
	if (orbit__lock_is_shm(lock))
		return -EOPNOTSUPP; /* the SHM feed is the fleet's ring: fleet or agent reader */
#ifdef ORBIT_HAVE_ETCD
	orbit_transition_reader_t *tr;
	int rc = orbit__fork_check(orbit__lock_base_of(lock)->opener);

	if (rc)
		return rc; /* the handle's connection is the parent's */
	tr = calloc(1, sizeof(*tr));
	if (!tr)
		return -ENOMEM;
	rc = orbit__etcd_feed_open(lock, &tr->feed);
	if (rc) {
		free(tr);
		return rc;
	}
	tr->opener = orbit__self_pid();
	*out = tr;
	return 0;
#else
	return -EOPNOTSUPP; /* no other backend is built */
#endif
}

/* Copy a validated ring event into the public form. */
static void event_copy(struct orbit_transition_event *dst, const struct orbit_ring_event *src)
{
	uint32_t n = src->ns_len + src->label_len + src->owner_len;

	dst->type = src->type;
	dst->lane = src->lane;
	dst->writer_pid = src->writer_pid;
	dst->flags = src->flags;
	dst->lane_pos = src->lane_pos;
	dst->fencing_token = src->fencing_token;
	dst->deadline_ns = src->deadline_ns;
	dst->state_revision = src->state_revision;
	dst->publish_ns = src->publish_ns;
	dst->ns_len = src->ns_len;
	dst->label_len = src->label_len;
	dst->owner_len = src->owner_len;
	/* The ring validated the lengths; clamp all the same (no overread). */
	if (n > sizeof(dst->bytes))
		n = sizeof(dst->bytes);
	memcpy(dst->bytes, src->bytes, n);
}

int orbit_transition_reader_next(orbit_transition_reader_t *tr, struct orbit_transition_event *ev)
{
	uint32_t lane = 0;
	int rc;

	if (!tr || !ev)
		return -EINVAL;
#ifdef ORBIT_HAVE_ETCD
	if (tr->feed) {
		rc = orbit__fork_check(tr->opener);
		return rc ? rc : orbit__etcd_feed_next(tr->feed, ev);
	}
#endif
	/* The reader's own buffer keeps ~4 KiB off small thread stacks. */
	rc = orbit__ring_reader_next(tr->r, &tr->ev, &lane);
	if (rc == 0)
		event_copy(ev, &tr->ev);
	else
		ev->lane = lane;
	return rc;
}

void orbit_transition_reader_counters(const orbit_transition_reader_t *tr, uint64_t *read,
				      uint64_t *lagged, uint64_t *corrupt)
{
	struct orbit_ring_reader_counters c = { 0 };

#ifdef ORBIT_HAVE_ETCD
	if (tr && tr->feed) {
		orbit__etcd_feed_counters(tr->feed, read, lagged, corrupt);
		return;
	}
#endif
	if (tr)
		orbit__ring_reader_counters(tr->r, &c);
	if (read)
		*read = c.read;
	if (lagged)
		*lagged = c.lagged;
	if (corrupt)
		*corrupt = c.corrupt;
}

void orbit_transition_reader_rewind(orbit_transition_reader_t *tr)
{
#ifdef ORBIT_HAVE_ETCD
	if (tr && tr->feed) {
		if (!orbit__fork_check(tr->opener))
			orbit__etcd_feed_rewind(tr->feed);
		return;
	}
#endif
	if (tr)
		orbit__ring_reader_rewind(tr->r);
}

struct replay_arg {
	int (*fn)(const struct orbit_transition_event *ev, void *ctx);
	void *ctx;
	struct orbit_transition_event ev; /* ~4 KiB: heap, not the caller's stack */
};

static int replay_one(void *p, const struct orbit_ring_event *rev)
{
	struct replay_arg *ra = p;

	event_copy(&ra->ev, rev);
	return ra->fn(&ra->ev, ra->ctx);
}

int orbit_fleet_replay_retained(orbit_fleet_t *f,
				int (*fn)(const struct orbit_transition_event *ev, void *ctx),
				void *ctx)
{
	struct replay_arg *ra;
	int rc;

	if (!f || !fn)
		return -EINVAL;
	if (!f->ring)
		return -ENOENT;
	ra = malloc(sizeof(*ra));
	if (!ra)
		return -ENOMEM;
	ra->fn = fn;
	ra->ctx = ctx;
	rc = orbit__ring_replay_retained(f->ring, replay_one, ra);
	free(ra);
	return rc;
}

void orbit_transition_reader_close(orbit_transition_reader_t *tr)
{
	if (!tr)
		return;
#ifdef ORBIT_HAVE_ETCD
	/* In a forked child too: the parent's socket closes in this process only */
	orbit__etcd_feed_close(tr->feed);
#endif
	orbit__ring_reader_close(tr->r);
	free(tr);
}

struct ring_reset_arg {
	orbit_ring_t *ring;
	orbit_members_t *m;
};

static int ring_reset_cb(void *ctx)
{
	struct ring_reset_arg *ra = ctx;

	return orbit__ring_reset(ra->ring, ra->m);
}

struct lease_probe {
	pid_t self;
	bool found;
};

/* foreach callback: stop at an unexpired lease of another live process. */
static int lease_of_other_live(const struct orbit_lock_entry *e, void *ctx)
{
	struct lease_probe *p = ctx;

	if (e->expired || e->holder_pid == (uint32_t)p->self)
		return 0;
	p->found = orbit_lock_holder_alive(e) != 0; /* unsure counts as alive */
	return p->found;
}

int orbit__fleet_reset(orbit_members_t *m, orbit_lock_t *lock, orbit_ring_t *ring)
{
	struct lease_probe probe = { getpid(), false };
	int rc;

	/* No directory: no member has ever joined this fleet. */
	rc = m ? orbit__members_count_live_others(m) : 0;
	if (rc < 0)
		return rc;
	if (rc > 0)
		return -EBUSY;
	/*
	 * A process may use orbit_lock without an agent (no member row): its
	 * unexpired leases still count. Checked before the serializer is
	 * taken, like the members: quiescent boot is the caller's promise.
	 */
	if (lock) {
		rc = orbit_lock_foreach(lock, lease_of_other_live, &probe);
		if (probe.found)
			return -EBUSY;
		if (rc < 0)
			return rc;
	}
	struct ring_reset_arg ra = { ring, m };

	/* The ring is cleared under the table's serializer: every frame is
	 * published under it, so no writer of this process or another races
	 * the reset of a lane head. */
	if (lock)
		return orbit__lock_reset_table(lock, ring ? ring_reset_cb : NULL, &ra);
	return ring ? orbit__ring_reset(ring, m) : 0;
}

int orbit_fleet_reset_transport(orbit_fleet_t *f)
{
	if (!f)
		return -EINVAL;
	if (!f->admin)
		return -EROFS;
	if (!f->lock && !f->ring)
		return -ENOENT;
	return orbit__fleet_reset(f->members, f->lock, f->ring);
}

/* orbit__spotq_foreach callbacks of unlink: check every name first, then remove. */
static int spot_removable(void *ctx, const char *spot)
{
	char name[ORBIT_SEG_NAME_MAX];
	int rc = orbit__spotq_seg_name(name, sizeof(name), spot);

	if (rc == 0)
		rc = orbit__seg_perm_removable((const char *)ctx, name);
	return rc < 0 ? rc : 0;
}

static int spot_unlink(void *ctx, const char *spot)
{
	orbit__spotq_unlink((const char *)ctx, spot);
	return 0;
}

/* A live member's host slot, gathered once per orbit_fleet_spots() walk. */
struct host_slot {
	struct orbit_fleet_spot_stats st;
	char member[ORBIT_FLEET_MEMBER_NAME_MAX];
};

struct spots_walk {
	orbit_fleet_t *f;
	orbit_fleet_spot_fn fn;
	void *ctx;
	int n, stop;
	struct host_slot *hosts; /* NULL: none */
	unsigned nhosts, cap;
	uint32_t unread; /* Spot slots not read or not kept: every Spot's host_slots_unread */
};

/* Is stats row @row's writer (@pid, @ticks) the live member of that row? */
static bool writer_alive(orbit_fleet_t *f, uint32_t row, uint32_t pid, uint64_t ticks,
			 struct orbit_fleet_member *m)
{
	return orbit_fleet_member(f, row, m) == 0 && m->alive && m->pid == pid &&
	       m->start_time_ticks == ticks;
}

/* Room for one more host slot in @w; false: no memory. */
static bool hosts_room(struct spots_walk *w)
{
	struct host_slot *grown;

	if (w->nhosts < w->cap)
		return true;
	grown = realloc(w->hosts, (w->cap + 16) * sizeof(*grown));
	if (!grown)
		return false;
	w->hosts = grown;
	w->cap += 16;
	return true;
}

/*
 * Every host slot of a live member (one probe of liveness per row). A
 * slot that does not read back (-EAGAIN past the pass's wait, or
 * -ORBIT_ECORRUPT) or finds no memory is counted in w->unread, never left
 * out silently: it may be the host slot of a Spot that is then shown
 * without its latency.
 */
static void hosts_gather(struct spots_walk *w)
{
	uint32_t rows = orbit_fleet_stats_rows(w->f);
	uint64_t wait_left = ORBIT_FLEET_STATS_PASS_BUDGET_NS; /* one pass: one wait budget */

	if (rows > orbit_fleet_rows(w->f))
		rows = orbit_fleet_rows(w->f);
	for (uint32_t r = 0; r < rows; r++) {
		struct orbit_fleet_member m;
		struct host_slot h;
		int alive = -1, rc; /* not probed yet */

		for (uint32_t k = 0; k < ORBIT_STATS_SPOTS_PER_ROW; k++) {
			rc = orbit_fleet_spot_stats_read_pass(w->f, r, k, &h.st, &wait_left);
			if (rc == -ENOENT)
				continue; /* a free slot */
			if (rc < 0) {
				w->unread++;
				continue;
			}
			if (h.st.role != ORBIT_FLEET_SPOT_HOST)
				continue;
			if (alive < 0)
				alive = writer_alive(w->f, r, h.st.pid, h.st.start_time_ticks, &m);
			if (!alive || m.pid != h.st.pid ||
			    m.start_time_ticks != h.st.start_time_ticks)
				continue; /* a dead host's slot: shown by orbitctl stats --all */
			if (!hosts_room(w)) {
				w->unread++;
				continue;
			}
			memcpy(h.member, m.name, sizeof(h.member));
			h.member[sizeof(h.member) - 1] = '\0';
			w->hosts[w->nhosts++] = h;
		}
	}
}

/* The host slot of @out's Spot with the highest epoch, into @out. */
static void spot_host_stats(const struct spots_walk *w, struct orbit_fleet_spot *out)
{
	const struct host_slot *best = NULL;

	for (unsigned i = 0; i < w->nhosts; i++) {
		const struct host_slot *h = &w->hosts[i];

		if (strcmp(h->st.spot, out->name))
			continue;
		if (!best || h->st.counters[ORBIT_SPOT_HOST_EPOCH] >
				 best->st.counters[ORBIT_SPOT_HOST_EPOCH])
			best = h;
	}
	if (!best)
		return;
	out->have_host_stats = 1;
	out->host_row = best->st.row;
	memcpy(out->host_member, best->member, sizeof(out->host_member));
	out->host_epoch = best->st.counters[ORBIT_SPOT_HOST_EPOCH];
	out->latency_count = best->st.latency.count;
	out->latency_p50_ns = orbit_stats_hist_quantile(&best->st.latency, 0.50);
	out->latency_p99_ns = orbit_stats_hist_quantile(&best->st.latency, 0.99);
	out->latency_max_ns = best->st.counters[ORBIT_SPOT_HOST_LATENCY_MAX_NS];
	out->in_flight = best->st.counters[ORBIT_SPOT_HOST_IN_FLIGHT];
}

/* Whether the hosting lease "orbit.spot:<spot>" is held by a live process. */
static void spot_host_alive(orbit_fleet_t *f, const char *spot, struct orbit_fleet_spot *out)
{
	static const char ns[] = ORBIT_FLEET_SPOT_LEASE_NAMESPACE;
	orbit_lock_key_t key = { ns, sizeof(ns) - 1, spot, strlen(spot) };
	struct orbit_lock_entry e;

	out->host_alive = -1; /* no lock table: cannot tell */
	if (!f->lock)
		return;
	if (orbit_lock_lookup(f->lock, &key, &e) != 0 || e.expired) {
		out->host_alive = 0;
		return;
	}
	out->lease_token = e.token;
	out->host_alive = orbit_lock_holder_alive(&e) > 0;
}

static int spot_visit(void *ctx, const char *spot)
{
	struct spots_walk *w = ctx;
	struct orbit_spotq_options o;
	struct orbit_spotq_counters c;
	struct orbit_fleet_spot out;
	orbit_spotq_t *q;
	int rc;

	orbit__spotq_options_init(&o);
	o.how = ORBIT_SEG_OPEN;
	o.readonly = true;
	o.adopt_caps = true;
	memset(&out, 0, sizeof(out));
	snprintf(out.name, sizeof(out.name), "%s", spot);
	rc = orbit__spotq_open(&q, w->f->name, spot, &o);
	if (rc == 0) {
		rc = orbit__spotq_counters(q, &c);
		orbit__spotq_close(q);
	}
	out.error = rc;
	if (rc == 0) {
		for (int l = 0; l < 2; l++) {
			out.lanes[l].accepted = c.accepted[l];
			out.lanes[l].rejected_count = c.rejected_count[l];
			out.lanes[l].rejected_bytes = c.rejected_bytes[l];
			out.lanes[l].aborted = c.aborted[l];
			out.lanes[l].redelivered = c.redelivered[l];
			out.lanes[l].corrupt = c.corrupt[l];
			out.lanes[l].completed = c.completed[l];
			out.lanes[l].depth = c.depth[l];
			out.lanes[l].bytes = c.bytes[l];
			out.lanes[l].item_cap = c.item_cap[l];
			out.lanes[l].byte_cap = c.byte_cap[l];
		}
		out.epoch = c.epoch;
		out.takeovers = c.takeovers;
		out.host_pid = c.host_pid;
		out.shm_bytes = c.shm_bytes;
	}
	spot_host_alive(w->f, spot, &out);
	spot_host_stats(w, &out);
	out.host_slots_unread = w->unread;
	w->n++;
	w->stop = w->fn(&out, w->ctx);
	return w->stop;
}

int orbit_fleet_unlink(const char *fleet)
{
	struct orbit_fleet_options fo = { .size = sizeof(fo), .fleet = fleet };

	return orbit_fleet_unlink_with(&fo);
}

/*
 * A member directory that orbit__members_open() refused for its bytes or
 * its file type, not for who may use it (-ORBIT_EOWNER, -ORBIT_EMODE,
 * -EACCES stay refusals): unlink then asks the kernel's locks instead
 * (orbit__members_unlink_damaged()).
 */
static bool members_damaged(int rc)
{
	return rc == -ORBIT_ETRUNCATED || rc == -ORBIT_EMAGIC || rc == -ORBIT_EVERSION ||
	       rc == -ORBIT_EKIND || rc == -ORBIT_EFINGERPRINT || rc == -ORBIT_ESIZE ||
	       rc == -ORBIT_ECORRUPT || rc == -ORBIT_EINITTIMEOUT || rc == -ORBIT_ENOTREG;
}

int orbit_fleet_unlink_with(const struct orbit_fleet_options *user)
{
	struct orbit_fleet_options copy, *opts = &copy;
	struct orbit_seg_opts so = { .how = ORBIT_SEG_OPEN, .readonly = true };
	struct orbit_lock_options lo = { .size = sizeof(lo) };
	const struct orbit_lock_layout *layout;
	struct orbit_lock_layout lay;
	struct orbit_ring_layout rl;
	const char *fleet;
	orbit_members_t *m = NULL;
	char buf[ORBIT_SEG_NAME_MAX], lock_name[32], ring_name[32];
	bool damaged = false;
	int rc, found = 0;

	orbit_fleet_options_init(opts);
	rc = user ? ORBIT__OPTS_COPY(opts, user) : 0; /* base/options.h rule */
	if (!rc)
		rc = orbit__lock_layout_copy(&lay, opts->layout); /* NULL: the default */
	if (rc)
		return rc;
	layout = &lay;
	fleet = opts->fleet ? opts->fleet : "default";
	if (orbit__seg_name(buf, sizeof(buf), fleet, "x") < 0)
		return -EINVAL;
	so.mode = lo.mode = opts ? opts->mode : 0;
	so.gid = lo.gid = opts ? opts->gid : 0;
	so.owner_uid = lo.owner_uid = opts ? opts->owner_uid : 0;
	orbit__fleet_ring_layout(&rl, layout);
	snprintf(lock_name, sizeof(lock_name), "lock-%u", layout->state_kind);
	snprintf(ring_name, sizeof(ring_name), "ring-%u", rl.kind);
	rc = orbit__members_open(&m, fleet, 0, &so);
	if (rc == 0) {
		/* A row this process holds counts too: stop your agents first. */
		rc = orbit__members_count_live_others(m);
		orbit__members_close(m);
		if (rc != 0)
			return rc > 0 ? -EBUSY : rc;
	} else if (members_damaged(rc)) {
		/* Its bytes cannot be read, but its locks can: unlink is the
		 * way out of a damaged directory, so it must not need one.
		 * Checked here, removed below under its flock before any other
		 * name (so a refusal then still removes nothing). */
		rc = orbit__members_unlink_damaged(fleet, true);
		if (rc < 0 && rc != -ENOENT)
			return rc;
		damaged = true;
	} else if (rc != -ENOENT) {
		return rc;
	}
	/* All or nothing: in a group fleet, other members' names are theirs */
	const char *names[] = { lock_name, ring_name, ORBIT_STATS_SEG_NAME,
				ORBIT_MEMBERS_SEG_NAME };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		rc = orbit__seg_perm_removable(fleet, names[i]);
		if (rc < 0)
			return rc;
	}
	rc = orbit__spotq_foreach(fleet, spot_removable, (void *)fleet);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (damaged) {
		rc = orbit__members_unlink_damaged(fleet, false);
		if (rc < 0 && rc != -ENOENT)
			return rc; /* nothing removed */
		found += rc == 0;
	}
	lo.fleet = fleet;
	lo.layout = layout;
	found += orbit_lock_unlink(&lo) == 0;
	found += orbit__ring_unlink(fleet, &rl) == 0;
	found += orbit__seg_unlink(fleet, ORBIT_STATS_SEG_NAME) == 0;
	if (!damaged)
		found += orbit__members_unlink(fleet) == 0;
	rc = orbit__spotq_foreach(fleet, spot_unlink, (void *)fleet);
	found += rc > 0 ? rc : 0;
	return found ? 0 : -ENOENT;
}

/* ---- Spot queues, seen from outside ---- */

int orbit_fleet_spots(orbit_fleet_t *f, orbit_fleet_spot_fn fn, void *ctx)
{
	struct spots_walk w = { f, fn, ctx, 0, 0, NULL, 0, 0, 0 };
	int rc;

	if (!f || !fn)
		return -EINVAL;
	hosts_gather(&w);
	rc = orbit__spotq_foreach(f->name, spot_visit, &w);
	free(w.hosts);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	return w.stop ? w.stop : w.n;
}
