/* SPDX-License-Identifier: MIT */
/*
 * base/options.h: internal. The one rule by which every
 * constructor reads a caller's size-carrying struct (options, layouts,
 * policies), the kernel's copy_struct_from_user() rule (openat2, clone3,
 * sched_setattr): the struct starts with a size_t size the caller sets to
 * sizeof() as it was compiled;
 * - smaller than ours (an older caller): its bytes are copied and the rest
 *   zero-filled; zero means "the default" in every field, so the older
 *   caller gets the defaults for the fields it does not know;
 * - larger (a newer caller): accepted when every byte we do not know is
 *   zero (the caller left the new fields at their defaults), else -E2BIG
 *   (it asked for something this build cannot do);
 * - 0, or smaller than the first version (the size field alone, every
 *   other field defaulted): -EINVAL.
 * The bytes of an older caller's struct are copied as they are, its
 * padding included, and nobody promises that padding is zero. So a field
 * added in a later version goes at or past the previous version's sizeof,
 * never into its tail padding (where an older caller may have garbage).
 * Like base/cpu.h it holds no SHM, thread or system call; shm/, lib/ and
 * agent/ may all include it.
 */
#ifndef ORBIT_BASE_OPTIONS_H
#define ORBIT_BASE_OPTIONS_H

#include <stddef.h>

/* The smallest size any version of a struct has: its size field alone. */
#define ORBIT__OPTS_MIN_SIZE sizeof(size_t)

/**
 * orbit__opts_copy - copy a caller's struct of @src_size bytes into @dst.
 * @dst: ours, @dst_size bytes (sizeof our version).
 * @src: the caller's; its first member is the size_t it claims.
 * @src_size: that size (the caller's sizeof).
 *
 * On success @dst holds the caller's bytes, zero-filled past @src_size,
 * and its size field is @dst_size (the struct is now ours). On failure
 * @dst is zeroed (never half a caller's struct).
 * Context: any thread; no syscall; reads at most @src_size bytes of @src.
 * Returns: 0; -EINVAL (@src_size 0 or below ORBIT__OPTS_MIN_SIZE); -E2BIG
 * (@src_size > @dst_size and a byte past @dst_size is not zero).
 */
int orbit__opts_copy(void *dst, size_t dst_size, const void *src, size_t src_size);

/*
 * ORBIT__OPTS_COPY - the same for a typed pointer pair: *(dst) is our
 * struct, (user) the caller's pointer (non-NULL) whose ->size is read.
 * Refuses to compile unless size is the first member of *(dst).
 */
#define ORBIT__OPTS_COPY(dst, user)                                                                \
	((void)sizeof(char[offsetof(__typeof__(*(dst)), size) == 0 ? 1 : -1]),                     \
	 orbit__opts_copy((dst), sizeof(*(dst)), (user), (user)->size))

#endif /* ORBIT_BASE_OPTIONS_H */
