// SPDX-License-Identifier: MIT
/* tests/unit/test_error.c: the one error table: orbit_strerror and orbit_err_name cover every code,
 * never NULL. */
#include "config.h"

#include "orbit_test.h"
#include <errno.h>
#include <pthread.h>
#include <string.h>
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
	assert_string_equal(orbit_strerror(-(ORBIT_ERRNO_MAX + 7)), "unknown orbit error");
	/* an errno value below 4096 that has no name */
	assert_string_equal(orbit_strerror(-3000), "unknown orbit error");
	assert_non_null(orbit_strerror(-12345678));
}

/*
 * errno codes keep the kernel's meaning: orbit_strerror() gives the C library's own message (the
 * C locale's strerror(3) text), for the codes orbit lists and for the others alike, and never
 * orbit's context column, which only says what the code means across orbit.
 */
static void test_errno_codes_keep_the_kernel_message(void **state)
{
	assert_string_equal(orbit_strerror(-EBUSY), "Device or resource busy");
	assert_string_equal(orbit_strerror(EBUSY), "Device or resource busy");
	assert_string_equal(orbit_strerror(-ENOSPC), "No space left on device");
	assert_string_equal(orbit_strerror(-EAGAIN), "Resource temporarily unavailable");
	assert_string_equal(orbit_strerror(-EDEADLK), "Resource deadlock avoided");
	assert_string_equal(orbit_strerror(-EPIPE), "Broken pipe");
	assert_string_equal(orbit_strerror(-ENOENT), "No such file or directory");
	assert_string_equal(orbit_strerror(-ECHILD), "No child processes");
	assert_string_equal(orbit_strerror(-EIO), "Input/output error"); /* not listed by orbit */
#define CHECK_KERNEL(name, meaning)                                                                \
	assert_string_equal(orbit_strerror(-name), strerrordesc_np(name));                         \
	assert_string_not_equal(orbit_strerror(-name), meaning);
	ORBIT_SYS_ERRNO_MAP(CHECK_KERNEL)
#undef CHECK_KERNEL
}

static void *strerror_in_thread(void *arg)
{
	return (void *)orbit_strerror(*(int *)arg);
}

/*
 * Thread-safe: every message is one static string, the same pointer in every thread (strerror(3)
 * formats an unnamed code into a per-thread buffer that the thread's next call overwrites).
 */
static void test_strerror_is_static_in_every_thread(void **state)
{
	int codes[] = { -EBUSY, -EIO, -3000, -ORBIT_EMAGIC, 0 };
	pthread_t t;
	void *theirs;

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		assert_int_equal(pthread_create(&t, NULL, strerror_in_thread, &codes[i]), 0);
		assert_int_equal(pthread_join(t, &theirs), 0);
		assert_ptr_equal(theirs, orbit_strerror(codes[i]));
	}
}

/* Names come from the same table as the enum: each ORBIT_ code is named after itself. */
static void test_err_name_from_the_table(void **state)
{
#define CHECK_NAME(name, msg)                                                                      \
	assert_string_equal(orbit_err_name(-ORBIT_##name), "ORBIT_" #name);                        \
	assert_string_equal(orbit_err_name(ORBIT_##name), "ORBIT_" #name);                         \
	assert_string_equal(orbit_strerror(-ORBIT_##name), msg);
	ORBIT_ERROR_MAP(CHECK_NAME)
#undef CHECK_NAME
#define CHECK_SYS(name, meaning) assert_string_equal(orbit_err_name(-name), #name);
	ORBIT_SYS_ERRNO_MAP(CHECK_SYS)
#undef CHECK_SYS
	assert_string_equal(orbit_err_name(0), "0");
	assert_string_equal(orbit_err_name(-EIO), "EIO"); /* unlisted errno: the C library's name */
	assert_string_equal(orbit_err_name(-(ORBIT_ERRNO_MAX + 7)), "UNKNOWN");
	assert_string_equal(orbit_err_name(-ORBIT_ERRNO_MAX), "UNKNOWN");
	for (int e = ORBIT_ERRNO_BASE; e < ORBIT_ERRNO_MAX; e++)
		assert_int_equal(strncmp(orbit_err_name(-e), "ORBIT_E", 7), 0);
}

/* The headers, the library and configure's AC_INIT agree on the version. */
static void test_version_matches_configure(void **state)
{
	assert_string_equal(orbit_version_string(), PACKAGE_VERSION);
	assert_string_equal(ORBIT_VERSION_STRING, PACKAGE_VERSION);
	assert_int_equal(orbit_version(), ORBIT_VERSION_HEX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_orbit_code_has_a_message),
		cmocka_unit_test(test_errno_codes_and_unknown),
		cmocka_unit_test(test_errno_codes_keep_the_kernel_message),
		cmocka_unit_test(test_strerror_is_static_in_every_thread),
		cmocka_unit_test(test_err_name_from_the_table),
		cmocka_unit_test(test_version_matches_configure),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
