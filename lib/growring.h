/* SPDX-License-Identifier: MIT */
/*
 * lib/growring.h: internal. Growing a power-of-two ring buffer of any
 * element type: the worker pool's per-node task FIFO and the serial
 * queue's lanes both keep (array, cap, head, len) and double on full.
 * Callers hold whatever lock protects their ring.
 */
#ifndef ORBIT_LIB_GROWRING_H
#define ORBIT_LIB_GROWRING_H

#include <stdlib.h>
#include <string.h>

/*
 * A copy of the @len elements of size @esz starting at @head of the ring
 * @old (capacity @cap, a power of two, or 0), laid out from index 0 in an
 * array of @ncap elements. Frees @old on success; NULL (old untouched)
 * when out of memory.
 */
static inline void *orbit__growring_regrow(void *old, size_t esz, size_t cap, size_t head,
					   size_t len, size_t ncap)
{
	char *a = malloc(ncap * esz);

	if (!a)
		return NULL;
	for (size_t i = 0; i < len; i++)
		memcpy(a + i * esz, (char *)old + ((head + i) & (cap - 1)) * esz, esz);
	free(old);
	return a;
}

#endif /* ORBIT_LIB_GROWRING_H */
