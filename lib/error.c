// SPDX-License-Identifier: MIT
/*
 * lib/error.c: the one table of error strings behind orbit_strerror().
 * Knows nothing of SHM or threads; the codes are plain numbers.
 */
#include <errno.h>
#include <string.h>

#include <orbit/error.h>

static const char *const orbit_messages[ORBIT_ERRNO_MAX - ORBIT_ERRNO_BASE] = {
	[ORBIT_EMAGIC - ORBIT_ERRNO_BASE] = "segment has the wrong magic (not an orbit segment)",
	[ORBIT_EVERSION - ORBIT_ERRNO_BASE] = "segment layout version differs from this library's",
	[ORBIT_EKIND - ORBIT_ERRNO_BASE] = "segment is of a different kind",
	[ORBIT_EFINGERPRINT - ORBIT_ERRNO_BASE] = "segment layout fingerprint differs (peers disagree on the layout)",
	[ORBIT_ESIZE - ORBIT_ERRNO_BASE] = "segment size does not match its header",
	[ORBIT_EOWNER - ORBIT_ERRNO_BASE] = "segment is owned by a foreign uid",
	[ORBIT_EMODE - ORBIT_ERRNO_BASE] = "segment permissions are wider than configured",
	[ORBIT_EINITTIMEOUT - ORBIT_ERRNO_BASE] = "segment still initialising past the bound (creator died?)",
	[ORBIT_ECORRUPT - ORBIT_ERRNO_BASE] = "segment bytes failed validation (corrupt)",
	[ORBIT_ELAGGED - ORBIT_ERRNO_BASE] = "ring reader lagged behind the writer; re-read the table",
};

static const char *errno_message(int e)
{
	switch (e) {
	case EBUSY: return "held by another owner or still in use";
	case ENOSPC: return "table full";
	case EAGAIN: return "backpressure: queue or lane full";
	case EDEADLK: return "reentrancy refused: already on this lane's turn";
	case EPIPE: return "closed";
	case EINVAL: return "invalid argument";
	case E2BIG: return "argument too large";
	case EPERM: return "not the owner";
	case ENOENT: return "no such entry";
	default: return NULL;
	}
}

ORBIT_API const char *orbit_strerror(int err)
{
	int e = err < 0 ? -err : err;
	const char *m;

	if (e == 0)
		return "success";
	if (e >= ORBIT_ERRNO_BASE && e < ORBIT_ERRNO_MAX)
		return orbit_messages[e - ORBIT_ERRNO_BASE];
	m = errno_message(e);
	if (m)
		return m;
	if (e < ORBIT_ERRNO_BASE)
		return strerror(e); /* not thread-safe for unknown codes in old libcs; glibc returns static strings */
	return "unknown orbit error";
}
