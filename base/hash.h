/* SPDX-License-Identifier: MIT */
/*
 * base/hash.h: internal, header-only. The two hash building blocks orbit
 * uses, written once: FNV-1a 64 (layout fingerprints of SHM segments and
 * of the stats names, the registry's and the Spot coordinator's keys) and
 * MurmurHash3's 64-bit finalizer (the lock table's probe hash up to its
 * layout version 3; no caller left), and wyhash's 64x64->128 multiply-fold
 * with its constants (the lock table's key hash of layout 4 in shm/lock.c
 * and the Spot queue's record checksum of layout 4 in
 * shm/spot_queue_internal.h). Values that end up in SHM (fingerprints, slot
 * positions) are part of a layout: changing one of these changes that
 * layout's version. Pure functions: no SHM, no thread, no system call.
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

/* wyhash's constants (its secret), for the multiply-folds below. */
#define ORBIT__WY0 0xa0761d6478bd642full
#define ORBIT__WY1 0xe7037ed1a0b428dbull
#define ORBIT__WY2 0x8ebc6af09c88c6e3ull
#define ORBIT__WY3 0x589965cc75374cc3ull

/* wyhash's mum: the 128-bit product of @a and @b, its halves XORed. */
static inline uint64_t orbit__mum(uint64_t a, uint64_t b)
{
#ifdef __SIZEOF_INT128__
	__uint128_t r = (__uint128_t)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
#else
	uint64_t ha = a >> 32, hb = b >> 32, la = (uint32_t)a, lb = (uint32_t)b;
	uint64_t rh = ha * hb, rm0 = ha * lb, rm1 = hb * la, rl = la * lb, t = rl + (rm0 << 32);
	uint64_t c = t < rl, lo = t + (rm1 << 32);

	c += lo < t;
	return lo ^ (rh + (rm0 >> 32) + (rm1 >> 32) + c);
#endif
}

#endif /* ORBIT_BASE_HASH_H */
