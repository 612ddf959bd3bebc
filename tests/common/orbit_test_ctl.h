/* SPDX-License-Identifier: MIT */
/*
 * tests/common/orbit_test_ctl.h: running the built orbitctl from a test
 * (through sh, so a test can pipe it into python3) and the 80-column
 * check of its tables and the checks that its output holds given strings.
 * The path is $top_builddir/agent/orbitctl, as the
 * test driver sets it (tests/common/run-test).
 */
#ifndef ORBIT_TEST_CTL_H
#define ORBIT_TEST_CTL_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orbit_test.h"

/* The built orbitctl. */
static inline const char *orbit_test_orbitctl(void)
{
	static char path[1024];
	const char *b = getenv("top_builddir");

	snprintf(path, sizeof(path), "%s/agent/orbitctl", b ? b : ".");
	return path;
}

/*
 * Run "orbitctl [--fleet F] ARGS" through sh (@fleet NULL: no --fleet);
 * its stdout (and stderr with @with_stderr) into @out, NUL-terminated.
 * Returns its exit status, -1 (popen failed) or -2 (it crashed).
 */
static inline int orbit_test_ctl_run(char *out, size_t len, const char *fleet, const char *args,
				     bool with_stderr)
{
	char cmd[4096];
	size_t n = 0;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s%s %s %s", orbit_test_orbitctl(), fleet ? "--fleet " : "",
		 fleet ? fleet : "", args, with_stderr ? "2>&1" : "2>/dev/null");
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (n < len - 1) {
		size_t k = fread(out + n, 1, len - 1 - n, p);

		if (k == 0)
			break;
		n += k;
	}
	out[n] = '\0';
	st = pclose(p);
	if (st == -1 || WIFSIGNALED(st) || !WIFEXITED(st))
		return -2; /* crashed */
	return WEXITSTATUS(st);
}

/* Every line of @text fits 80 columns (the line that does not is printed). */
static inline void orbit_test_assert_80_columns(const char *text)
{
	const char *l = text;

	while (*l) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);

		if (len > 80)
			print_error("line over 80 columns (%zu): %.*s\n", len, (int)len, l);
		assert_true(len <= 80);
		if (!e)
			break;
		l = e + 1;
	}
}

/* @needle is in @text; else the failure names it and shows @text's start. */
static inline void orbit_test_expect_in(const char *text, const char *needle)
{
	if (!strstr(text, needle))
		print_error("no \"%s\" in:\n%.3000s\n", needle, text);
	assert_non_null(strstr(text, needle));
}

/* Every string of the NULL-terminated @needles is in @text (orbit_test_expect_in()). */
static inline void orbit_test_expect_all_in(const char *text, const char *const *needles)
{
	for (; *needles; needles++)
		orbit_test_expect_in(text, *needles);
}

/* orbit_test_expect_each(text, "a", "b", ...): each is in @text. */
#define orbit_test_expect_each(text, ...)                                                          \
	orbit_test_expect_all_in((text), (const char *const[]){ __VA_ARGS__, NULL })

#endif /* ORBIT_TEST_CTL_H */
