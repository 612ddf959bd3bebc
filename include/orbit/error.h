/* SPDX-License-Identifier: MIT */
/*
 * orbit/error.h: error codes. Every orbit function returns 0 (or a count)
 * on success and a negative code on failure: a negative errno where errno
 * has a name for it, else one of the ORBIT_E* codes (all above 4095,
 * returned negated). orbit_strerror() gives a message, orbit_err_name()
 * the code's name ("EBUSY", "ORBIT_EMAGIC").
 *
 * The two lists below are the one table of codes (libuv's UV_ERRNO_MAP is
 * the model): ORBIT_ERROR_MAP generates enum orbit_error and the messages
 * and names orbit_strerror() and orbit_err_name() give for ORBIT_E* codes;
 * ORBIT_SYS_ERRNO_MAP is the list of errno codes orbit returns (orbit_error(3)
 * explains each; a check keeps the page and both lists in step). A code is
 * added by adding one line; the order of ORBIT_ERROR_MAP is the ABI
 * (append only).
 *
 * errno codes keep the kernel's meaning, and orbit_strerror() gives the
 * kernel's message for them ("Device or resource busy" for -EBUSY, as
 * strerror(3) says it in the C locale); orbit adds its own wording only to
 * its ORBIT_E* codes. ORBIT_SYS_ERRNO_MAP lists the errno codes orbit
 * returns with what each says across orbit, for documentation and for
 * programs that want to show it (orbit_strerror() does not return it).
 * Where a refusal is about a segment, orbit_segment_last_error() names the
 * segment and what was found.
 */
#ifndef ORBIT_ERROR_H
#define ORBIT_ERROR_H

#include <orbit/common.h>

ORBIT_BEGIN_DECLS

/* XX(name, message): codes errno cannot name, from ORBIT_ERRNO_BASE up. */
#define ORBIT_ERROR_MAP(XX)                                                                        \
	XX(EMAGIC, "segment has the wrong magic (not an orbit segment)")                           \
	XX(EVERSION, "segment layout version differs from this library's")                         \
	XX(EKIND, "segment is of a different kind")                                                \
	XX(EFINGERPRINT, "segment layout fingerprint differs (peers disagree on the layout)")      \
	XX(ESIZE, "segment size does not match its header")                                        \
	XX(EOWNER, "segment is owned by a foreign uid")                                            \
	XX(EMODE, "segment permissions are wider than configured")                                 \
	XX(EINITTIMEOUT, "segment still initialising past the bound (creator died?)")              \
	XX(ECORRUPT, "segment bytes failed validation (corrupt)")                                  \
	XX(ELAGGED, "ring reader lagged behind the writer; re-read the table")                     \
	XX(EUNAVAILABLE, "cluster unreachable or without quorum within the call's bound")          \
	XX(ENOTREG,                                                                                \
	   "segment name is not a regular file (FIFO, directory, socket, device, symlink)")        \
	XX(ETRUNCATED, "segment is shorter than its header says (truncated)")                      \
	XX(EFENCED, "a newer host epoch took over: this host's writes are refused")

/*
 * XX(name, meaning): the errno codes orbit returns and what each says
 * across orbit. The meaning is orbit's context, not a message:
 * orbit_strerror(-name) is the kernel's message for the code.
 */
#define ORBIT_SYS_ERRNO_MAP(XX)                                                                    \
	XX(EBUSY, "a lock is held by another owner, or members are still attached")                \
	XX(ENOSPC, "the lock table is full (never evicts a live key), or no room for a segment")   \
	XX(EAGAIN, "backpressure: a queue or lane is full; or a bounded wait ran out")             \
	XX(EDEADLK, "reentrancy refused: a state lane or queue entered from its own turn")         \
	XX(EPIPE, "the lane, queue or pool is closed")                                             \
	XX(EINVAL, "a bad argument (zero TTL, NULL, bad policy value)")                            \
	XX(E2BIG, "an argument too large (key+owner over the limit, item over capacity, "          \
		  "an options struct with an unknown non-zero tail)")                              \
	XX(EPERM, "wrong owner or token")                                                          \
	XX(ENOENT, "no such entry or segment")                                                     \
	XX(EEXIST, "the segment already exists")                                                   \
	XX(ENOMEM, "allocation failed")                                                            \
	XX(ECHILD, "a handle used in a forked child (the child must open its own)")                \
	XX(EROFS, "a mutation through a read-only handle")                                         \
	XX(ECANCELED, "a Spot queue record the host aborted (its producer stalled past the "       \
		      "unblock bound or was proven dead)")

/* Codes errno cannot name. Returned negated, like errno codes. */
enum orbit_error {
	ORBIT_ERRNO_BASE = 4096,
	ORBIT__ERROR_BEFORE_FIRST = ORBIT_ERRNO_BASE - 1,
#define ORBIT__ERROR_ENUM(name, msg) ORBIT_##name,
	ORBIT_ERROR_MAP(ORBIT__ERROR_ENUM)
#undef ORBIT__ERROR_ENUM
	    ORBIT_ERRNO_MAX
};

/**
 * orbit_strerror - message for an orbit return code.
 * @err: a code as returned (negative) or its absolute value.
 *
 * Context: any thread (thread-safe: every message is a static string, never
 * a shared buffer); no allocation, no syscall.
 * Returns: a static string; never NULL: "success" for 0; for an errno code
 * the kernel's message in the C locale (strerrordesc_np(3): "Device or
 * resource busy" for -EBUSY), whether or not ORBIT_SYS_ERRNO_MAP lists it;
 * orbit's own message for an ORBIT_E* code; "unknown orbit error" for a
 * code with neither.
 */
ORBIT_API const char *orbit_strerror(int err);

/**
 * orbit_err_name - the name of an orbit return code.
 * @err: a code as returned (negative) or its absolute value.
 *
 * Context: any thread; no allocation, no syscall.
 * Returns: a static string such as "EBUSY" or "ORBIT_EMAGIC", "0" for 0,
 * "UNKNOWN" for a code with no name; never NULL.
 */
ORBIT_API const char *orbit_err_name(int err);

/**
 * orbit_segment_last_error - what the last segment refusal on this thread
 * was about, naming the segment: "/dev/shm/orbit.<fleet>.<name>: <reason>" (its
 * path, and the size, mode, owner or file type found). Every failing open
 * or creation of a segment sets it, except for a missing segment (-ENOENT);
 * a bad fleet name (-EINVAL) sets "fleet name "<name>": a fleet name is 1
 * to 40 of A-Z a-z 0-9 _ -";
 * a success does not clear it, so read it right after the failing call.
 *
 * Context: any thread; thread-local; no allocation, no syscall.
 * Returns: a string valid until this thread's next segment refusal; "" when
 * this thread had none.
 */
ORBIT_API const char *orbit_segment_last_error(void);

ORBIT_END_DECLS

#endif /* ORBIT_ERROR_H */
