/* SPDX-License-Identifier: MIT */
/*
 * orbit/common.h: what every public header needs: the export macro, the
 * version, and the fixed-width types. Include <orbit/orbit.h> instead.
 */
#ifndef ORBIT_COMMON_H
#define ORBIT_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#if defined(__GNUC__)
#define ORBIT_API __attribute__((visibility("default")))
#else
#define ORBIT_API
#endif

/* The version these headers are; orbit_version() says what is linked. */
#define ORBIT_VERSION_MAJOR 0
#define ORBIT_VERSION_MINOR 1
#define ORBIT_VERSION_PATCH 0
#define ORBIT__STR2(x) #x
#define ORBIT__STR(x) ORBIT__STR2(x)
#define ORBIT_VERSION_STRING                                                                       \
	ORBIT__STR(ORBIT_VERSION_MAJOR)                                                            \
	"." ORBIT__STR(ORBIT_VERSION_MINOR) "." ORBIT__STR(ORBIT_VERSION_PATCH)
/* One number that orders versions: 0x00MMmmpp. */
#define ORBIT_VERSION_HEX                                                                          \
	((ORBIT_VERSION_MAJOR << 16) | (ORBIT_VERSION_MINOR << 8) | ORBIT_VERSION_PATCH)

/*
 * Size-carrying structs: every options struct, the lock layout and the
 * serial queue's policy begin with `size_t size` and are read by one rule,
 * the kernel's copy_struct_from_user() (openat2, clone3): set size to
 * sizeof() the struct as you compiled it (the _init() functions do). A
 * struct from an older orbit (smaller) is read as far as it goes and the
 * fields it lacks take their defaults; one from a newer orbit (larger) is
 * accepted when every field this build does not know is zero, else the
 * constructor returns -E2BIG; a size of 0 (below sizeof(size_t)) is
 * -EINVAL. Zero means "the default" in every field, so a designated
 * initializer that names only what it changes is always right. (The
 * _init() functions zero the whole struct, padding included, which is what
 * a newer library's tail check wants to see.)
 */

#ifdef __cplusplus
#define ORBIT_BEGIN_DECLS extern "C" {
#define ORBIT_END_DECLS }
#else
#define ORBIT_BEGIN_DECLS
#define ORBIT_END_DECLS
#endif

ORBIT_BEGIN_DECLS

/**
 * orbit_version - the version of the liborbit that is linked, as
 * ORBIT_VERSION_HEX was when it was built (compare with the macro to see
 * whether the headers a program was built with are older or newer).
 * Context: any thread; no syscall.
 * Returns: 0x00MMmmpp.
 */
ORBIT_API unsigned orbit_version(void);

/**
 * orbit_version_string - the same as text, "MAJOR.MINOR.PATCH".
 * Context: any thread; no syscall.
 * Returns: a static string, never NULL.
 */
ORBIT_API const char *orbit_version_string(void);

ORBIT_END_DECLS

#endif /* ORBIT_COMMON_H */
