// SPDX-License-Identifier: MIT
/* tests/unit/test_error.c: orbit_strerror covers every code, never NULL. */
#include "orbit_test.h"
#include <errno.h>
#include <orbit/orbit.h>

static void test_every_orbit_code_has_a_message(void **state)
{
	for (int e = ORBIT_ERRNO_BASE; e < ORBIT_ERRNO_MAX; e++) {
		const char *m = orbit_strerror(-e);
		assert_non_null(m);
		assert_true(strlen(m) > 5);
		assert_string_equal(m, orbit_strerror(e));
		assert_string_not_equal(m, "unknown orbit error");
	}
}

static void test_errno_codes_and_unknown(void **state)
{
	assert_string_equal(orbit_strerror(0), "success");
	assert_non_null(strstr(orbit_strerror(-EDEADLK), "reentran"));
	assert_non_null(strstr(orbit_strerror(-ENOSPC), "full"));
	assert_string_equal(orbit_strerror(-(ORBIT_ERRNO_MAX + 7)), "unknown orbit error");
	assert_non_null(orbit_strerror(-12345678));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_orbit_code_has_a_message),
		cmocka_unit_test(test_errno_codes_and_unknown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
