// SPDX-License-Identifier: MIT
/*
 * base/die.c: orbit__die_at(), the abort path of a broken invariant (see
 * base/die.h). Formats into a stack buffer and writes it with one write(2)
 * so that the message is whole even if other threads print, and allocates
 * nothing: the process may be out of memory when it gets here.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/die.h"

_Noreturn void orbit__die_at(const char *file, int line, const char *func, int rc, const char *what)
{
	char msg[512], err[128];
	int e = rc < 0 ? -rc : rc;
	const char *s;
	int n;

	s = strerror_r(e, err, sizeof(err)); /* GNU: returns the message */
	n = snprintf(msg, sizeof(msg), "orbit: %s:%d (%s): %s: %s (%d); aborting\n", file, line,
		     func, what ? what : "?", s ? s : "unknown error", e);
	if (n > 0) {
		ssize_t w = write(STDERR_FILENO, msg,
				  (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);

		(void)w; /* nothing left to do if stderr is gone */
	}
	abort();
}
