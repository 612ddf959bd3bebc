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

#define ORBIT_VERSION_MAJOR 0
#define ORBIT_VERSION_MINOR 1
#define ORBIT_VERSION_PATCH 0

#ifdef __cplusplus
#define ORBIT_BEGIN_DECLS extern "C" {
#define ORBIT_END_DECLS }
#else
#define ORBIT_BEGIN_DECLS
#define ORBIT_END_DECLS
#endif

#endif /* ORBIT_COMMON_H */
