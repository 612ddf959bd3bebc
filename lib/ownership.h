/* SPDX-License-Identifier: MIT */
/*
 * lib/ownership.h: internal. Spec 07 §8 "check the ownership premise":
 * code that assumes it already runs serially, on a state lane's turn or
 * on a serial queue's turn, says so with one of these at its entry, so a
 * broken premise stops at that line, naming the lane or queue and the
 * call site, instead of surfacing later as a deadlock or torn state.
 *
 *   ORBIT__ASSERT_ON_LANE(lane)   isOnLane, debug builds (ORBIT_DEBUG,
 *                                 configure --enable-debug) only
 *   ORBIT__CHECK_ON_LANE(lane)    isOnLane in every build: the paths with
 *                                 a reentrancy history keep it (07 §8)
 *   ORBIT__ASSERT_ON_QUEUE(q, alt)  debug only: on @q's turn, or @alt true
 *
 * A failed check is a broken invariant of this process (STYLE: abort
 * only then): one line on stderr, then abort(). Where reentrancy is
 * possible the check is orbit_state_lane_throw_if_reentrant(), which
 * refuses with -EDEADLK in every build (06 §7) instead. Every function a
 * coordinator runs on its lane carries one of the lane checks;
 * tests/unit/check-ownership-premise.sh enforces that.
 */
#ifndef ORBIT_LIB_OWNERSHIP_H
#define ORBIT_LIB_OWNERSHIP_H

#include "config.h"

#include <orbit/serial_queue.h>
#include <orbit/state_lane.h>

/* Report a broken ownership premise and abort (lib/serial_executor.c). */
void orbit__ownership_broken(const char *what, const char *name, const char *file, int line)
    __attribute__((noreturn, cold));

#define ORBIT__CHECK_ON_LANE(lane)                                                                 \
	((void)(orbit_state_lane_is_on_lane(lane) ||                                               \
		(orbit__ownership_broken("state lane", orbit_state_lane_name(lane), __FILE__,      \
					 __LINE__),                                                \
		 0)))

#ifdef ORBIT_DEBUG
#define ORBIT__ASSERT_ON_LANE(lane) ORBIT__CHECK_ON_LANE(lane)
#define ORBIT__ASSERT_ON_QUEUE(q, alt)                                                             \
	((void)(orbit_serial_queue_is_current(q) || (alt) ||                                       \
		(orbit__ownership_broken("serial queue", orbit_serial_queue_name(q), __FILE__,     \
					 __LINE__),                                                \
		 0)))
#else
#define ORBIT__ASSERT_ON_LANE(lane) ((void)0)
#define ORBIT__ASSERT_ON_QUEUE(q, alt) ((void)0)
#endif

#endif /* ORBIT_LIB_OWNERSHIP_H */
