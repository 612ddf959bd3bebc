/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz.h: what the SHM reader harnesses share. Each harness
 * (tests/fuzz/fuzz_<x>.c) is a libFuzzer target: it builds real segments
 * once (private fleet, unique name, unlinked at exit), then for every
 * input overwrites segment bytes with the input (repeated or truncated to
 * the region) and runs the readers, checking invariants that hold
 * whatever the bytes say. The same harness links with tests/fuzz/replay.c
 * (`make check`: seeds, pseudo-random inputs, mutations) or with
 * -fsanitize=fuzzer (`make fuzz`, scripts/fuzz).
 */
#ifndef ORBIT_TESTS_FUZZ_H
#define ORBIT_TESTS_FUZZ_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <orbit/error.h>
#include <orbit/lock.h>

/* The libFuzzer entry point every harness defines. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Defined by each harness: its corpus folder name and a useful input length. */
extern const char orbit_fuzz_name[];
extern const size_t orbit_fuzz_max_len;

/* An invariant broke: say which, then abort (libFuzzer and replay.c catch it). */
#define FUZZ_CHECK(cond, ...)                                                                      \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz: %s:%d: invariant failed: %s: ", __FILE__, __LINE__, \
				#cond);                                                            \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* A setup step that must work (not a finding: the harness cannot run). */
#define FUZZ_SETUP(expr)                                                                           \
	do {                                                                                       \
		int fuzz_rc_ = (expr);                                                             \
		if (fuzz_rc_ != 0) {                                                               \
			fprintf(stderr, "fuzz: setup %s returned %d\n", #expr, fuzz_rc_);          \
			exit(2);                                                                   \
		}                                                                                  \
	} while (0)

/* dst[i] = data[(start + i) % size]: the input repeated (or cut) to @len; zeros when empty. */
static inline void fuzz_fill(void *dst, size_t len, const uint8_t *data, size_t size, size_t start)
{
	uint8_t *d = dst;
	size_t done = 0;

	if (!size) {
		memset(dst, 0, len);
		return;
	}
	start %= size;
	while (done < len) {
		size_t n = size - start < len - done ? size - start : len - done;

		memcpy(d + done, data + start, n);
		done += n;
		start = 0;
	}
}

/* Run @setup before the first input (libFuzzer and replay.c both start there). */
static inline void fuzz_once(void (*setup)(void))
{
	static bool done;

	if (!done) {
		done = true;
		setup();
	}
}

/* Is @rc one of the @n codes that follow? */
static inline bool fuzz_rc_in(int rc, int n, ...)
{
	va_list ap;
	bool hit = false;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		hit |= va_arg(ap, int) == rc;
	va_end(ap);
	return hit;
}

/* A fleet name of this process alone ("tfz<tag><pid>"). */
static inline const char *fuzz_fleet(char *buf, size_t len, const char *tag)
{
	snprintf(buf, len, "tfz%s%ld", tag, (long)getpid());
	return buf;
}

/*
 * With ORBIT_FUZZ_DUMP=DIR in the environment, write @len bytes as seed
 * DIR/@file (how the committed corpus was made from real writers' bytes).
 */
static inline void fuzz_dump_seed(const char *file, const void *bytes, size_t len)
{
	const char *dir = getenv("ORBIT_FUZZ_DUMP");
	char path[512];
	FILE *f;

	if (!dir || !*dir)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "wb");
	if (!f || fwrite(bytes, 1, len, f) != len) {
		fprintf(stderr, "fuzz: cannot write seed %s\n", path);
		exit(2);
	}
	fclose(f);
}

/* The harnesses' lock layout: 8 slots, a ring of 2 frames of 128 bytes. */
static inline struct orbit_lock_layout fuzz_lock_layout(void)
{
	struct orbit_lock_layout y = ORBIT_LOCK_LAYOUT_DEFAULT_INIT;

	y.slots = 8;
	y.ring_frames = 2;
	y.ring_frame_bytes = 128;
	return y;
}

/* Lock options for @fleet with the FLOCK serializer (no lock state in the bytes). */
static inline struct orbit_lock_options
fuzz_lock_opts(const char *fleet, const struct orbit_lock_layout *y, bool readonly)
{
	struct orbit_lock_options o = {
		.size = sizeof(o),
		.fleet = fleet,
		.layout = y,
		.serializer = ORBIT_LOCK_SERIALIZER_FLOCK,
		.readonly = readonly,
		.init_timeout_ms = 20,
	};
	return o;
}

/* NUL within @n bytes? */
static inline bool fuzz_nul_terminated(const char *s, size_t n)
{
	return memchr(s, '\0', n) != NULL;
}

#endif /* ORBIT_TESTS_FUZZ_H */
