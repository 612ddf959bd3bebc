// SPDX-License-Identifier: MIT
/*
 * agent/spot_client.c: the submitting side of a cross-process Spot
 * (orbit/spot_queue.h): a client is the queue's producer for its agent's
 * member row; every submit is one immediate attempt of the SHM layer
 * (shm/spot_queue.h). Also the pieces the host shares (agent/spot.h): the
 * options size rule, opening a queue from public caps, and the counters.
 * No thread, no lock: a client is used by one thread at a time.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <orbit/error.h>
#include <orbit/spot_queue.h>

#include "agent/spot.h"
#include "base/fork_guard.h"

_Static_assert((int)ORBIT_SPOT_LANE_APP == (int)ORBIT_SPOTQ_APP, "lane numbers agree");
_Static_assert((int)ORBIT_SPOT_LANE_LIFECYCLE == (int)ORBIT_SPOTQ_LIFECYCLE, "lane numbers agree");
_Static_assert((int)ORBIT_SPOT_ENTRY_SPOT == (int)ORBIT_SPOTQ_KIND_SPOT, "kinds agree");
_Static_assert((int)ORBIT_SPOT_ENTRY_ACTOR == (int)ORBIT_SPOTQ_KIND_ACTOR, "kinds agree");
_Static_assert((int)ORBIT_SPOT_ENTRY_TIMER == (int)ORBIT_SPOTQ_KIND_TIMER, "kinds agree");
_Static_assert((int)ORBIT_SPOT_ENTRY_LIFECYCLE == (int)ORBIT_SPOTQ_KIND_LIFECYCLE, "kinds agree");
_Static_assert(ORBIT_SPOT_NAME_MAX == ORBIT_SPOTQ_NAME_MAX, "Spot name lengths agree");
_Static_assert(ORBIT_SPOT_DEFAULT_APP_ITEMS == ORBIT_SPOTQ_DEFAULT_APP_ITEMS, "defaults agree");
_Static_assert(ORBIT_SPOT_DEFAULT_APP_BYTES == ORBIT_SPOTQ_DEFAULT_APP_BYTES, "defaults agree");
_Static_assert(ORBIT_SPOT_DEFAULT_LIFECYCLE_ITEMS == ORBIT_SPOTQ_DEFAULT_LIFECYCLE_ITEMS,
	       "defaults agree");
_Static_assert(ORBIT_SPOT_DEFAULT_LIFECYCLE_BYTES == ORBIT_SPOTQ_DEFAULT_LIFECYCLE_BYTES,
	       "defaults agree");
_Static_assert(ORBIT_SPOT_DEFAULT_UNBLOCK_MS == ORBIT_SPOTQ_DEFAULT_UNBLOCK_MS, "defaults agree");

struct orbit_spot_client {
	orbit_spotq_t *q;
	orbit_spotq_producer_t *p;
	pid_t pid; /* the opener: a forked child gets -ECHILD */
	/* the stats segment's Spot slot (agent/agent_spot_stats.c, client_fill()) */
	orbit_agent_t *agent;
	int stats_slot; /* < 0: unpublished */
	/* Written by the client's one thread (relaxed load + store: a single
	 * writer needs no RMW), read by the agent's publish (relaxed: counts). */
	_Atomic uint64_t n[ORBIT_SPOT_CLIENT__COUNT];
};

static void count(orbit_spot_client_t *c, enum orbit_stats_spot_client_counter k)
{
	atomic_store_explicit(&c->n[k], atomic_load_explicit(&c->n[k], memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* The agent's publish (any agent thread, under its registry mutex): relaxed loads. */
static void client_fill(void *obj, struct orbit_stats_spot_snapshot *snap)
{
	orbit_spot_client_t *c = obj;

	for (unsigned k = 0; k < ORBIT_SPOT_CLIENT__COUNT; k++)
		snap->counters[k] = atomic_load_explicit(&c->n[k], memory_order_relaxed);
}

/* ---- shared with the host (agent/spot.h) ---- */

int orbit__spot_opts_copy(void *dst, size_t dst_size, const void *src, size_t src_size)
{
	const unsigned char *tail = (const unsigned char *)src + dst_size;

	memset(dst, 0, dst_size);
	if (src_size < sizeof(size_t))
		return -EINVAL;
	if (src_size > dst_size) {
		for (size_t i = 0; i < src_size - dst_size; i++)
			if (tail[i])
				return -E2BIG;
		src_size = dst_size;
	}
	memcpy(dst, src, src_size);
	memcpy(dst, &dst_size, sizeof(dst_size)); /* the size field comes first */
	return 0;
}

int orbit__spot_queue_open(orbit_spotq_t **out, const struct orbit__agent_spot_env *env,
			   const char *spot, const struct orbit_spot_queue_caps *caps)
{
	struct orbit_spotq_options o;

	orbit__spotq_options_init(&o);
	if (caps) {
		/* zero means the default in both structs: copied as they are */
		o.app_items = caps->app_items;
		o.app_bytes = caps->app_bytes;
		o.lifecycle_items = caps->lifecycle_items;
		o.lifecycle_bytes = caps->lifecycle_bytes;
		o.unblock_ms = caps->unblock_ms;
		o.mode = caps->mode;
	}
	o.how = ORBIT_SEG_OPEN_OR_CREATE; /* records may wait for a host that comes later */
	/* every member row of the directory may produce */
	o.producer_rows = orbit__members_rows(env->members);
	return orbit__spotq_open(out, env->fleet, spot, &o);
}

int orbit__spot_queue_stats(orbit_spotq_t *q, struct orbit_spot_inbound_stats *out)
{
	struct orbit_spotq_counters c;
	int r;

	if (!q || !out)
		return -EINVAL;
	r = orbit__spotq_counters(q, &c);
	if (r < 0)
		return r;
	memset(out, 0, sizeof(*out));
	for (int l = 0; l < 2; l++) {
		out->accepted[l] = c.accepted[l];
		out->rejected_count[l] = c.rejected_count[l];
		out->rejected_bytes[l] = c.rejected_bytes[l];
		out->aborted[l] = c.aborted[l];
		out->redelivered[l] = c.redelivered[l];
		out->corrupt[l] = c.corrupt[l];
		out->completed[l] = c.completed[l];
		out->depth[l] = c.depth[l];
		out->bytes[l] = c.bytes[l];
		out->item_cap[l] = c.item_cap[l];
		out->byte_cap[l] = c.byte_cap[l];
	}
	out->epoch = c.epoch;
	out->takeovers = c.takeovers;
	out->host_pid = c.host_pid;
	out->shm_bytes = c.shm_bytes;
	return 0;
}

/* ---- the client ---- */

void orbit_spot_client_options_init(struct orbit_spot_client_options *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
}

int orbit_spot_client_open(orbit_agent_t *agent, const char *spot,
			   const struct orbit_spot_client_options *opts, orbit_spot_client_t **out)
{
	struct orbit_spot_client_options o;
	struct orbit__agent_spot_env env;
	orbit_spot_client_t *c;
	int r;

	if (!agent || !spot || !out)
		return -EINVAL;
	if (opts) {
		r = orbit__spot_opts_copy(&o, sizeof(o), opts, opts->size);
		if (r < 0)
			return r;
	} else {
		orbit_spot_client_options_init(&o);
	}
	r = orbit__agent_spot_env(agent, &env);
	if (r < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->pid = orbit__self_pid();
	r = orbit__spot_queue_open(&c->q, &env, spot, &o.caps);
	if (r < 0)
		goto err_free;
	r = orbit__spotq_producer_open(&c->p, c->q, env.members);
	if (r < 0)
		goto err_queue;
	/* no free slot: submits run unpublished (counted by the agent) */
	c->agent = agent;
	orbit__agent_spot_hold(agent); /* released at the end of orbit_spot_client_close() */
	c->stats_slot = orbit__agent_spot_register(agent, ORBIT_STATS_SPOT_CLIENT, spot, c,
						   client_fill);
	*out = c;
	return 0;
err_queue:
	orbit__spotq_close(c->q);
err_free:
	free(c);
	return r;
}

void orbit_spot_client_close(orbit_spot_client_t *c)
{
	if (!c)
		return;
	/* first (a no-op in a forked child): then no publish reads c again */
	orbit__agent_spot_unregister(c->agent, c->stats_slot);
	orbit__spotq_producer_close(c->p);
	orbit__spotq_close(c->q);
	orbit__agent_spot_release(c->agent); /* its last use of the agent */
	free(c);
}

static int submit(orbit_spot_client_t *c, uint32_t kind, uint64_t actor_id, const char *timer,
		  const void *payload, uint32_t len, uint64_t *seq)
{
	struct orbit_spotq_submit s = {
		.kind = kind,
		.actor_id = actor_id,
		.timer_name = timer,
		.payload = payload,
		.len = len,
	};
	int r;

	if (!c)
		return -EINVAL;
	if (orbit__fork_check(c->pid))
		return -ECHILD;
	r = orbit__spotq_submit(c->p, &s, seq);
	count(c, r == 0		? ORBIT_SPOT_CLIENT_SUBMITTED
		 : r == -EAGAIN ? ORBIT_SPOT_CLIENT_EAGAIN
				: ORBIT_SPOT_CLIENT_FAILED);
	return r;
}

int orbit_spot_submit_spot(orbit_spot_client_t *c, const void *payload, uint32_t len, uint64_t *seq)
{
	return submit(c, ORBIT_SPOTQ_KIND_SPOT, 0, NULL, payload, len, seq);
}

int orbit_spot_submit_actor(orbit_spot_client_t *c, uint64_t actor_id, const void *payload,
			    uint32_t len, uint64_t *seq)
{
	return submit(c, ORBIT_SPOTQ_KIND_ACTOR, actor_id, NULL, payload, len, seq);
}

int orbit_spot_submit_timer(orbit_spot_client_t *c, const char *timer_name, const void *payload,
			    uint32_t len, uint64_t *seq)
{
	if (!timer_name)
		return -EINVAL;
	return submit(c, ORBIT_SPOTQ_KIND_TIMER, 0, timer_name, payload, len, seq);
}

int orbit_spot_submit_lifecycle(orbit_spot_client_t *c, const void *payload, uint32_t len,
				uint64_t *seq)
{
	return submit(c, ORBIT_SPOTQ_KIND_LIFECYCLE, 0, NULL, payload, len, seq);
}

int orbit_spot_client_wait_room(orbit_spot_client_t *c, enum orbit_spot_lane lane, uint32_t len,
				int64_t timeout_ns)
{
	int r;

	if (!c)
		return -EINVAL;
	if (orbit__fork_check(c->pid))
		return -ECHILD;
	r = orbit__spotq_wait_room(c->p, (uint32_t)lane, len, timeout_ns);
	count(c, ORBIT_SPOT_CLIENT_WAITS);
	if (r == -ETIMEDOUT)
		count(c, ORBIT_SPOT_CLIENT_WAIT_TIMEOUTS);
	return r;
}

int orbit_spot_client_inbound_stats(const orbit_spot_client_t *c,
				    struct orbit_spot_inbound_stats *out)
{
	if (!c)
		return -EINVAL;
	if (orbit__fork_check(c->pid))
		return -ECHILD;
	return orbit__spot_queue_stats(c->q, out);
}
