/* SPDX-License-Identifier: MIT */
/*
 * base/hash.h: internal, header-only. The two hash building blocks orbit
 * uses, written once: FNV-1a 64 (layout fingerprints of SHM segments and
 * of the stats names, the registry's and the Spot coordinator's keys) and
 * MurmurHash3's 64-bit finalizer (the lock table's probe hash up to its
 * layout version 3; version 4 hashes with a multiply-fold in shm/lock.c,
 * the only user, and this finalizer has no caller left). Values that
 * end up in SHM (fingerprints, slot positions) are part of a layout:
 * changing one of these changes that layout's version. Pure functions: no
 * SHM, no thread, no system call.
 */
#ifndef ORBIT_BASE_HASH_H
#define ORBIT_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define ORBIT__FNV64_BASIS 0xcbf29ce484222325ull /* FNV-1a 64 offset basis */
#define ORBIT__FNV64_PRIME 0x100000001b3ull

/* One FNV-1a 64 step: fold byte @b into @h. */
static inline uint64_t orbit__fnv1a64_byte(uint64_t h, uint8_t b)
{
	return (h ^ b) * ORBIT__FNV64_PRIME;
}

/* FNV-1a 64 of @n bytes at @p, continuing from @h (ORBIT__FNV64_BASIS to start). */
static inline uint64_t orbit__fnv1a64(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = orbit__fnv1a64_byte(h, b[i]);
	return h;
}

/* FNV-1a 64 of the NUL-terminated @s (without the NUL), continuing from @h. */
static inline uint64_t orbit__fnv1a64_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = orbit__fnv1a64_byte(h, (uint8_t)*s);
	return h;
}

/* MurmurHash3's fmix64: every output bit depends on every input bit. */
static inline uint64_t orbit__fmix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

#endif /* ORBIT_BASE_HASH_H */
