/* SPDX-License-Identifier: MIT */
/*
 * agent/fleet_internal.h: pieces of agent/fleet.c that the agent shares:
 * the ring a lock layout names, wrapping a ring reader into the public
 * transition reader, and the reset_transport steps (internal); and the
 * agent's test hooks (agent/agent.c), for tests linked with
 * liborbit_internal.la only.
 */
#ifndef ORBIT_AGENT_FLEET_INTERNAL_H
#define ORBIT_AGENT_FLEET_INTERNAL_H

#include <orbit/agent.h>
#include <orbit/fleet.h>
#include <orbit/lock.h>

#include "shm/members.h"
#include "shm/ring.h"

_Static_assert(ORBIT_TRANSITION_BYTES_MAX == ORBIT_RING_PAYLOAD_MAX, "event payload sizes agree");
_Static_assert(ORBIT_FLEET_MEMBER_NAME_MAX == ORBIT_MEMBER_NAME_MAX, "member name sizes agree");

/*
 * The ring a lock layout names (@ll NULL: the default): kind, frames and
 * frame bytes from the layout, the default lane count. One ring per layout.
 */
void orbit__fleet_ring_layout(struct orbit_ring_layout *out, const struct orbit_lock_layout *ll);

/* A public reader over @ring (not owned). Returns 0, -ENOMEM, -EINVAL. */
int orbit__fleet_reader_wrap(orbit_ring_t *ring, orbit_transition_reader_t **out);

/*
 * orbit__fleet_reset - reset_transport on open handles: refuse with -EBUSY
 * while orbit__members_count_live_others(@m) > 0 (@m NULL: no directory,
 * nobody ever joined) or while @lock holds an unexpired lease of another
 * live process (orbit_lock_holder_alive; agent or not), else reset @lock's
 * table (when non-NULL) and @ring (when non-NULL), the ring under the
 * table's serializer.
 */
int orbit__fleet_reset(orbit_members_t *m, orbit_lock_t *lock, orbit_ring_t *ring);

/*
 * Frames one drain of the agent thread reads before it checks deaths, stop
 * and the tick; when the bound stops a drain, the thread drains again at
 * once, without sleeping (tests publish more than this to check that).
 */
#define ORBIT__AGENT_DRAIN_BATCH 4096

/*
 * Agent test hooks (agent/agent.c; tests only, nothing else calls them).
 * orbit__agent_test_pause - park @a's thread at the top of its loop (never
 * inside a drain) and return once it is parked; it rings the fleet's
 * doorbell until then. orbit__agent_test_resume - let it go on WITHOUT a
 * doorbell ring: it arms, then drains what was published meanwhile, as
 * after any wake. orbit_agent_stop() also ends a pause.
 * While parked, the caller is the view's only updater and may call
 * orbit__agent_test_view_apply() (apply one frame as a drain does: newer
 * state_revision wins, frames at or below the last resync's revision are
 * dropped) and orbit__agent_test_view_resync() (rebuild the view from the
 * lock table as after a lag). Both read in liburcu-bp read-side
 * sections, like orbit_agent_view_lookup() (no registration to make).
 * Context: one test thread; not concurrently with orbit_agent_stop().
 */
void orbit__agent_test_pause(orbit_agent_t *a);
void orbit__agent_test_resume(orbit_agent_t *a);
void orbit__agent_test_view_apply(orbit_agent_t *a, const struct orbit_ring_event *ev);
void orbit__agent_test_view_resync(orbit_agent_t *a);

#endif /* ORBIT_AGENT_FLEET_INTERNAL_H */
