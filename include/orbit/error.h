/* SPDX-License-Identifier: MIT */
/*
 * orbit/error.h: error codes. Every orbit function returns 0 (or a count)
 * on success and a negative code on failure: a negative errno where errno
 * has a name for it, else one of the ORBIT_E* codes below (all above 4095,
 * returned negated). orbit_strerror() turns either into a message.
 *
 * errno codes used across orbit:
 *   -EBUSY    a lock is held by another owner / members still attached
 *   -ENOSPC   the lock table is full (never evicts a live key)
 *   -EAGAIN   backpressure: a queue or lane is full
 *   -EDEADLK  reentrancy refused (a state lane or queue entered from its own turn)
 *   -EPIPE    the lane, queue or pool is closed
 *   -EINVAL   a bad argument (zero TTL, NULL, bad policy value)
 *   -E2BIG    an argument too large (key+owner over the limit, item over capacity)
 *   -EPERM    wrong owner or token
 *   -ENOENT   no such entry or segment
 *   -EEXIST   the segment already exists
 *   -ENOMEM   allocation failed
 */
#ifndef ORBIT_ERROR_H
#define ORBIT_ERROR_H

#include <orbit/common.h>

ORBIT_BEGIN_DECLS

/* Codes errno cannot name. Returned negated, like errno codes. */
enum orbit_error {
	ORBIT_ERRNO_BASE = 4096,
	ORBIT_EMAGIC = ORBIT_ERRNO_BASE, /* segment does not start with orbit's magic */
	ORBIT_EVERSION,     /* segment layout version differs from ours */
	ORBIT_EKIND,        /* segment is of another kind than asked for */
	ORBIT_EFINGERPRINT, /* layout fingerprint differs: peers disagree on sizes/kinds */
	ORBIT_ESIZE,        /* header sizes or file size disagree */
	ORBIT_EOWNER,       /* segment owned by a foreign uid */
	ORBIT_EMODE,        /* segment mode wider than configured */
	ORBIT_EINITTIMEOUT, /* segment still initialising past the bound */
	ORBIT_ECORRUPT,     /* bytes in a segment fail validation */
	ORBIT_ELAGGED,      /* a ring reader was overtaken; re-read the table */
	ORBIT_ERRNO_MAX
};

/**
 * orbit_strerror - message for an orbit return code.
 * @err: a code as returned (negative) or its absolute value.
 *
 * Context: any thread; no allocation, no syscall.
 * Returns: a static string; never NULL (unknown codes get a generic message).
 */
ORBIT_API const char *orbit_strerror(int err);

ORBIT_END_DECLS

#endif /* ORBIT_ERROR_H */
