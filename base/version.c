// SPDX-License-Identifier: MIT
/*
 * base/version.c: orbit_version() and orbit_version_string(), the version
 * of the library as built (the macros in orbit/common.h are the version of
 * the headers a program was compiled with). configure's version and the
 * headers' are checked to agree by tests/unit/test_error.c.
 */
#include "config.h"

#include <orbit/common.h>

ORBIT_API unsigned orbit_version(void)
{
	return ORBIT_VERSION_HEX;
}

ORBIT_API const char *orbit_version_string(void)
{
	return ORBIT_VERSION_STRING;
}
