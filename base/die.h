/* SPDX-License-Identifier: MIT */
/*
 * base/die.h: internal. The one way orbit aborts: on a broken invariant of
 * this process (a pthread call that cannot fail on a valid object failed),
 * never on arguments or SHM bytes (STYLE "Errors"). Like liburcu's
 * urcu_die(), it says where and why before abort(): file, line, function,
 * what failed and the error. shm/, lib/ and agent/ may all use it.
 */
#ifndef ORBIT_BASE_DIE_H
#define ORBIT_BASE_DIE_H

/**
 * orbit__die_at - print "orbit: FILE:LINE (FUNC): WHAT: strerror(RC) (RC)"
 * on stderr and abort(). Use the macros below, which fill in the place.
 * @rc: the error, positive (pthread) or negative (orbit) errno.
 * Context: any thread; one write(2) to stderr, then abort(). Never returns.
 */
_Noreturn void orbit__die_at(const char *file, int line, const char *func, int rc,
			     const char *what);

/* Abort with @rc, naming @what (a string literal: the call that failed). */
#define orbit__die(rc, what) orbit__die_at(__FILE__, __LINE__, __func__, (rc), (what))

/* Evaluate @expr (a pthread call) once; abort naming @what unless it is 0. */
#define orbit__die_on(expr, what)                                                                  \
	do {                                                                                       \
		int orbit__rc_ = (expr);                                                           \
		if (orbit__rc_ != 0)                                                               \
			orbit__die(orbit__rc_, (what));                                            \
	} while (0)

#endif /* ORBIT_BASE_DIE_H */
