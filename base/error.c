// SPDX-License-Identifier: MIT
/*
 * base/error.c: orbit_strerror() and orbit_err_name(), generated from the
 * one table of codes in include/orbit/error.h. Knows nothing of SHM or
 * threads: the codes are plain numbers. errno values keep the kernel's
 * message: glibc's strerrordesc_np() and strerrorname_np() (2.32) return
 * static, untranslated strings and are MT-Safe, where strerror() may
 * format into a shared buffer and follows the locale.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <orbit/error.h>

static const char *const orbit_messages[ORBIT_ERRNO_MAX - ORBIT_ERRNO_BASE] = {
#define ORBIT__MSG(name, msg) [ORBIT_##name - ORBIT_ERRNO_BASE] = msg,
	ORBIT_ERROR_MAP(ORBIT__MSG)
#undef ORBIT__MSG
};

static const char *const orbit_names[ORBIT_ERRNO_MAX - ORBIT_ERRNO_BASE] = {
#define ORBIT__NAME(name, msg) [ORBIT_##name - ORBIT_ERRNO_BASE] = "ORBIT_" #name,
	ORBIT_ERROR_MAP(ORBIT__NAME)
#undef ORBIT__NAME
};

ORBIT_API const char *orbit_strerror(int err)
{
	int e = err < 0 ? -err : err;
	const char *m;

	if (e == 0)
		return "success";
	if (e >= ORBIT_ERRNO_BASE && e < ORBIT_ERRNO_MAX)
		return orbit_messages[e - ORBIT_ERRNO_BASE];
	if (e < ORBIT_ERRNO_BASE) {
		m = strerrordesc_np(e); /* "Device or resource busy"; NULL when unnamed */
		if (m)
			return m;
	}
	return "unknown orbit error";
}

ORBIT_API const char *orbit_err_name(int err)
{
	int e = err < 0 ? -err : err;
	const char *n;

	if (e == 0)
		return "0";
	if (e >= ORBIT_ERRNO_BASE && e < ORBIT_ERRNO_MAX)
		return orbit_names[e - ORBIT_ERRNO_BASE];
	if (e < ORBIT_ERRNO_BASE) {
		n = strerrorname_np(e); /* glibc >= 2.32: "EBUSY"; NULL when unnamed */
		if (n)
			return n;
	}
	return "UNKNOWN";
}
