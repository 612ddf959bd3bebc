/* SPDX-License-Identifier: MIT */
/*
 * orbit/orbit.h: the whole public API of liborbit. One header per concept
 * is included below; include this one.
 */
#ifndef ORBIT_ORBIT_H
#define ORBIT_ORBIT_H

#include <orbit/common.h>
#include <orbit/error.h>
/* ORBIT-HEADERS: one line per concept header, kept sorted. */
#include <orbit/agent.h>
#include <orbit/executor.h>
#include <orbit/fleet.h>
#include <orbit/lock.h>
#include <orbit/registry.h>
#include <orbit/serial_queue.h>
#include <orbit/spot_executor.h>
#include <orbit/spot_queue.h>
#include <orbit/state_lane.h>
#include <orbit/worker_pool.h>

#endif /* ORBIT_ORBIT_H */
