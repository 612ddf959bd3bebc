// SPDX-License-Identifier: MIT
/*
 * tests/fuzz/replay.c: the `make check` driver of a libFuzzer harness
 * (linked with one tests/fuzz/fuzz_<x>.c, no clang needed). It feeds the
 * harness every file of the committed seed corpus tests/fuzz/corpus/<x>/,
 * then N deterministic pseudo-random inputs (xorshift, fixed seed; N =
 * 2,000, or 200,000 in the long tier), then N simple mutations of the
 * seeds (bit flips, interesting bytes and words, cuts, splices), and
 * prints one cmocka-style result line per phase for scripts/count-tests.
 * The harness aborts on a broken invariant; the driver then saves the
 * input as fuzz-<x>-crash.bin in the current folder and says which it
 * was. Each input runs under an alarm (a hang fails too). In the long
 * tier each of the two phases also ends after ORBIT_FUZZ_SECONDS (default
 * 30; 0 = no bound), never before 2,000 inputs: an input costs a
 * segment's create, map and unlink, and 200,000 of them took up to 400 s
 * a harness on a loaded 2-vCPU guest. Each phase starts the generator
 * from its own fixed state, so the inputs that ran are a prefix of the
 * same sequence either way, and the count printed says where it stopped.
 * Usage: fuzz_<x> [CORPUS_DIR] (default $top_srcdir/tests/fuzz/corpus/<x>).
 */
#include "config.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>

#include "base/time.h"
#include "fuzz.h"

/* The input being run, for the crash handlers (set before each call). */
static const uint8_t *volatile cur_data;
static volatile size_t cur_size;
static char cur_label[256];
static char crash_file[128];

static void save_input(void)
{
	const uint8_t *d = cur_data;
	size_t n = cur_size;
	int fd;

	if (!d)
		return;
	cur_data = NULL; /* once */
	/* async-signal-safe only: open, write, close */
	fd = open(crash_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		while (n > 0) {
			ssize_t w = write(fd, d, n);
			if (w <= 0)
				break;
			d += w;
			n -= (size_t)w;
		}
		close(fd);
	}
	(void)!write(2, "fuzz: failing input: ", 21);
	(void)!write(2, cur_label, strlen(cur_label));
	(void)!write(2, ", saved as ", 11);
	(void)!write(2, crash_file, strlen(crash_file));
	(void)!write(2, "\n", 1);
}

static void on_fatal(int sig)
{
	if (sig == SIGALRM)
		(void)!write(2, "fuzz: input ran past its alarm (hang)\n", 38);
	save_input();
	signal(sig == SIGALRM ? SIGABRT : sig, SIG_DFL);
	raise(sig == SIGALRM ? SIGABRT : sig);
}

/* ASan/UBSan exit through their own path: they call this when present. */
extern void __sanitizer_set_death_callback(void (*cb)(void)) __attribute__((weak));

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static unsigned alarm_s(void)
{
	const char *t = getenv("ORBIT_FUZZ_INPUT_TIMEOUT");

	return t && atoi(t) > 0 ? (unsigned)atoi(t) : 30;
}

static void run_one(const uint8_t *data, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void run_one(const uint8_t *data, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cur_label, sizeof(cur_label), fmt, ap);
	va_end(ap);
	cur_size = size;
	cur_data = data;
	alarm(alarm_s());
	LLVMFuzzerTestOneInput(data, size);
	alarm(0);
	cur_data = NULL;
}

struct seed {
	uint8_t *bytes;
	size_t len;
};

static int load_seeds(const char *dir, struct seed **out)
{
	struct dirent **names;
	struct seed *s;
	int n, kept = 0;

	n = scandir(dir, &names, NULL, alphasort); /* sorted: a deterministic order */
	if (n < 0)
		return -errno;
	s = calloc((size_t)n + 1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		char path[1400];
		struct stat st;
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (names[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
		    (f = fopen(path, "rb"))) {
			s[kept].len = (size_t)st.st_size;
			s[kept].bytes = malloc(s[kept].len + 1);
			if (s[kept].bytes && fread(s[kept].bytes, 1, s[kept].len, f) == s[kept].len)
				kept++;
			fclose(f);
		}
		free(names[i]);
	}
	free(names);
	*out = s;
	return kept;
}

/* Random bytes of three shapes: uniform, sparse (mostly zero), small values. */
static size_t random_input(uint8_t *buf, size_t cap)
{
	static const uint8_t small[] = { 0, 0, 1, 2, 3, 0xff };
	size_t len;
	unsigned shape = (unsigned)(xorshift() % 3);

	switch (xorshift() % 4) {
	case 0:
		len = (size_t)(xorshift() % 65);
		break;
	case 1:
		len = cap;
		break;
	default:
		len = (size_t)(xorshift() % (cap + 1));
		break;
	}
	for (size_t i = 0; i < len; i++) {
		if (shape == 0)
			buf[i] = (uint8_t)xorshift();
		else if (shape == 1)
			buf[i] = xorshift() % 16 ? 0 : (uint8_t)xorshift();
		else
			buf[i] = small[xorshift() % sizeof(small)];
	}
	return len;
}

/* A few simple mutations of a seed copy in @buf (@len bytes, room for @cap). */
static size_t mutate(uint8_t *buf, size_t len, size_t cap)
{
	static const uint64_t interesting[] = {
		0,	    1,	    2,		3,	     7,		  8,
		63,	    64,	    127,	128,	     255,	  256,
		959,	    960,    961,	1023,	     1024,	  4096,
		0x7fff,	    0xffff, 0x7fffffff, 0x80000000u, 0xffffffffu, 0x8000000000000000ull,
		UINT64_MAX,
	};
	int rounds = 1 + (int)(xorshift() % 8);

	for (int r = 0; r < rounds && len; r++) {
		size_t at = (size_t)(xorshift() % len);
		uint64_t v =
		    interesting[xorshift() % (sizeof(interesting) / sizeof(interesting[0]))];
		unsigned w = 1u << (xorshift() % 4); /* 1, 2, 4 or 8 bytes */

		switch (xorshift() % 6) {
		case 0: /* bit flip */
			buf[at] ^= (uint8_t)(1u << (xorshift() % 8));
			break;
		case 1: /* random byte */
			buf[at] = (uint8_t)xorshift();
			break;
		case 2: /* interesting word, aligned to its width */
			at &= ~(size_t)(w - 1);
			if (at + w <= len)
				memcpy(buf + at, &v, w);
			break;
		case 3: { /* copy a chunk within */
			size_t from = (size_t)(xorshift() % len), n = (size_t)(xorshift() % 256);
			if (n > len - at)
				n = len - at;
			if (n > len - from)
				n = len - from;
			memmove(buf + at, buf + from, n);
			break;
		}
		case 4: /* cut */
			len = at;
			break;
		default: /* grow by repeating the tail */
			while (len < cap && xorshift() % 64) {
				buf[len] = buf[len - 1 - (size_t)(xorshift() % len)];
				len++;
			}
			break;
		}
	}
	return len;
}

/* The end of a phase that begins now, 0 for none (see the top). */
static uint64_t phase_end_ns(long seconds)
{
	if (seconds <= 0)
		return 0;
	return orbit__clock_ns(CLOCK_MONOTONIC) + (uint64_t)seconds * ORBIT__NS_PER_SEC;
}

/*
 * Whether the phase's time bound passed; read every 256 inputs, and never
 * before the check tier's 2,000 ran: a loaded host's long tier still runs
 * at least what `make check` does.
 */
static bool phase_over(long i, uint64_t end_ns)
{
	if (!end_ns || i < 2000 || (i & 255) != 0)
		return false;
	return orbit__clock_ns(CLOCK_MONOTONIC) >= end_ns;
}

static void phase(const char *what, bool start)
{
	printf(start ? "[ RUN      ] test_fuzz_%s_%s\n" : "[       OK ] test_fuzz_%s_%s\n",
	       orbit_fuzz_name, what);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *tier = getenv("ORBIT_TEST_TIER");
	const char *top = getenv("top_srcdir");
	const bool long_tier = tier && strcmp(tier, "long") == 0;
	long n = long_tier ? 200000 : 2000;
	long seconds = long_tier ? 30 : 0;
	uint64_t end_ns, rng0;
	long ran;
	size_t cap = orbit_fuzz_max_len;
	char dir[1024];
	struct seed *seeds = NULL;
	uint8_t *buf;
	int nseeds;

	if (getenv("ORBIT_FUZZ_N"))
		n = atol(getenv("ORBIT_FUZZ_N"));
	if (getenv("ORBIT_FUZZ_SECONDS"))
		seconds = atol(getenv("ORBIT_FUZZ_SECONDS"));
	if (argc > 1)
		snprintf(dir, sizeof(dir), "%s", argv[1]);
	else
		snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", top ? top : ".",
			 orbit_fuzz_name);
	snprintf(crash_file, sizeof(crash_file), "fuzz-%s-crash.bin", orbit_fuzz_name);
	signal(SIGABRT, on_fatal);
	signal(SIGSEGV, on_fatal);
	signal(SIGBUS, on_fatal);
	signal(SIGFPE, on_fatal);
	signal(SIGILL, on_fatal);
	signal(SIGALRM, on_fatal);
	if (__sanitizer_set_death_callback)
		__sanitizer_set_death_callback(save_input);

	phase("seeds", true);
	nseeds = load_seeds(dir, &seeds);
	if (nseeds <= 0) {
		printf("no seeds in %s (%d)\n[  FAILED  ] test_fuzz_%s_seeds\n", dir, nseeds,
		       orbit_fuzz_name);
		return 1;
	}
	for (int i = 0; i < nseeds; i++) {
		if (seeds[i].len > cap)
			cap = seeds[i].len;
		run_one(seeds[i].bytes, seeds[i].len, "seed %d of %s", i, dir);
	}
	printf("%d seeds\n", nseeds);
	phase("seeds", false);

	buf = malloc(cap + 1);
	if (!buf)
		return 1;
	phase("random", true);
	rng ^= (uint64_t)strlen(orbit_fuzz_name) << 32 | (uint8_t)orbit_fuzz_name[0];
	rng0 = rng; /* each phase from its own fixed state (see the top) */
	end_ns = phase_end_ns(seconds);
	for (ran = 0; ran < n && !phase_over(ran, end_ns); ran++) {
		size_t len = random_input(buf, cap);
		run_one(buf, len, "random input %ld (xorshift)", ran);
	}
	printf("%ld pseudo-random inputs%s\n", ran,
	       ran < n ? " (the time bound ended the phase)" : "");
	phase("random", false);

	phase("mutations", true);
	rng = rng0 ^ 0x6d75746174696f6eull; /* "mutation" */
	end_ns = phase_end_ns(seconds);
	for (ran = 0; ran < n && !phase_over(ran, end_ns); ran++) {
		const struct seed *s = &seeds[ran % nseeds];
		size_t len;

		memcpy(buf, s->bytes, s->len);
		len = mutate(buf, s->len, cap);
		run_one(buf, len, "mutation %ld of seed %ld", ran, ran % nseeds);
	}
	printf("%ld mutations of %d seeds%s\n", ran, nseeds,
	       ran < n ? " (the time bound ended the phase)" : "");
	phase("mutations", false);
	free(buf);
	for (int i = 0; i < nseeds; i++)
		free(seeds[i].bytes);
	free(seeds);
	return 0;
}
