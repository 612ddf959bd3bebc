// SPDX-License-Identifier: MIT
/*
 * base/options.c: orbit__opts_copy(), the copy_struct_from_user() rule of
 * base/options.h. Out of line: it runs once per constructor call, and the
 * compiler cannot prove the tail walk in bounds for a caller's struct whose
 * size it does not know.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "base/options.h"

int orbit__opts_copy(void *dst, size_t dst_size, const void *src, size_t src_size)
{
	memset(dst, 0, dst_size);
	if (src_size < ORBIT__OPTS_MIN_SIZE)
		return -EINVAL;
	if (src_size > dst_size) {
		const unsigned char *tail = (const unsigned char *)src + dst_size;

		for (size_t i = 0; i < src_size - dst_size; i++)
			if (tail[i])
				return -E2BIG;
		src_size = dst_size;
	}
	memcpy(dst, src, src_size);
	memcpy(dst, &dst_size, sizeof(dst_size)); /* the size field comes first */
	return 0;
}
