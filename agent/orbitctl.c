// SPDX-License-Identifier: MIT
/*
 * agent/orbitctl.c: the fleet inspection tool. It links liborbit like any
 * user and uses only the public API (orbit/fleet.h, orbit/lock.h): members
 * and their kernel-proved liveness, the lock table, transitions as they
 * happen, stats as a table, JSON or Prometheus text, and two administrative
 * commands (force-release, reset). Everything opens read-only except those
 * two. Output fits 80 columns; exit codes are documented in doc/orbitctl.1.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <orbit/orbit.h>

enum exit_code {
	EXIT_OK = 0,
	EXIT_USAGE = 1,
	EXIT_NOFLEET = 2,  /* no such fleet or segment */
	EXIT_CORRUPT = 3,  /* corrupt or mismatched segment */
	EXIT_REFUSED = 4,  /* refused / busy / permission */
	EXIT_NOTHELD = 5,  /* force-release: the key is not held */
	EXIT_ERROR = 6,    /* any other failure */
};

static const char *prog = "orbitctl";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--fleet NAME] COMMAND\n"
		"commands:\n"
		"  members                    members, pids and liveness\n"
		"  locks [--wide]             lock table: key, owner, token, TTL, holder\n"
		"                             (--wide: whole fields, past 80 columns)\n"
		"  watch [--replay] [--count N] [--timeout-ms MS]\n"
		"                             follow transitions live (--replay: the\n"
		"                             frames the ring retains first)\n"
		"  stats [--json|--prometheus] per-member counters and histograms\n"
		"  force-release NS:LABEL     remove a lock whoever holds it (admin)\n"
		"  reset                      clear table and rings; refused while a\n"
		"                             member is alive (admin)\n"
		"exit codes: 0 ok, 1 usage, 2 no such fleet, 3 corrupt or mismatched\n"
		"segment, 4 refused or busy, 5 key not held, 6 other error\n",
		prog);
}

static int exit_for(int err)
{
	switch (err) {
	case 0:
		return EXIT_OK;
	case -ENOENT:
		return EXIT_NOFLEET;
	case -EBUSY:
	case -EPERM:
	case -EACCES:
	case -EROFS:
	case -ORBIT_EOWNER:
	case -ORBIT_EMODE:
		return EXIT_REFUSED;
	case -EPROTO:
	case -ORBIT_EMAGIC:
	case -ORBIT_EVERSION:
	case -ORBIT_EKIND:
	case -ORBIT_EFINGERPRINT:
	case -ORBIT_ESIZE:
	case -ORBIT_ECORRUPT:
	case -ORBIT_EINITTIMEOUT:
		return EXIT_CORRUPT;
	default:
		return EXIT_ERROR;
	}
}

static int fail(const char *what, const char *fleet, int err)
{
	fprintf(stderr, "%s: %s (fleet %s): %s\n", prog, what, fleet, orbit_strerror(err));
	return exit_for(err);
}

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Printable rendering of SHM bytes into @out (width-limited, '~' marks a cut). */
static void shown(char *out, size_t width, const uint8_t *b, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char tmp[5];
		size_t t;

		if (b[i] >= 0x20 && b[i] < 0x7f && b[i] != '\\') {
			tmp[0] = (char)b[i];
			tmp[1] = '\0';
		} else {
			snprintf(tmp, sizeof(tmp), "\\x%02x", b[i]);
		}
		t = strlen(tmp);
		if (o + t > width || (o + t == width && i + 1 < n)) {
			if (o >= width)
				o = width - 1;
			out[o++] = '~';
			break;
		}
		memcpy(out + o, tmp, t);
		o += t;
	}
	out[o] = '\0';
}

/* Longest rendering of SHM bytes: every byte as \xHH, plus the NUL. */
#define SHOWN_MAX(n) (4 * (size_t)(n) + 1)

/*
 * Printable rendering of @n bytes elided in the MIDDLE to fit @width
 * (@width >= 12): the head and the tail stay, a '~' replaces what is
 * between, and the tail gets every column the head (at most @head_max)
 * does not need: the end of a key's label or of an owner is what tells two
 * of them apart. Escapes (\xHH) are never split. @width 0: no limit.
 */
static void shown_mid(char *out, size_t width, size_t head_max, const uint8_t *b, size_t n)
{
	static char whole[SHOWN_MAX(2 * ORBIT_TRANSITION_BYTES_MAX + 1)];
	size_t len, head, tail;

	if (n > 2 * ORBIT_TRANSITION_BYTES_MAX + 1)
		n = 2 * ORBIT_TRANSITION_BYTES_MAX + 1;
	shown(whole, sizeof(whole) - 1, b, n);
	len = strlen(whole);
	if (width == 0 || len <= width) {
		memcpy(out, whole, len + 1);
		return;
	}
	head = head_max < width / 2 ? head_max : width / 2;
	tail = width - 1 - head;
	/* An escape is 4 characters from its '\\' (a literal '\\' is escaped too). */
	for (size_t i = head >= 3 ? head - 3 : 0; i < head; i++)
		if (whole[i] == '\\') {
			head = i;
			break;
		}
	for (size_t s = len - tail, i = s >= 3 ? s - 3 : 0; i < s; i++)
		if (whole[i] == '\\') {
			tail = len - (i + 4 > s ? i + 4 : s);
			break;
		}
	memcpy(out, whole, head);
	out[head] = '~';
	memcpy(out + head + 1, whole + len - tail, tail + 1);
}

/* "ns:label" rendering of a key, elided in the middle (see shown_mid). */
static void key_str(char *out, size_t width, const uint8_t *b, size_t ns_len, size_t label_len)
{
	static uint8_t whole[2 * ORBIT_TRANSITION_BYTES_MAX + 1];

	if (ns_len > ORBIT_TRANSITION_BYTES_MAX)
		ns_len = ORBIT_TRANSITION_BYTES_MAX;
	if (label_len > ORBIT_TRANSITION_BYTES_MAX)
		label_len = ORBIT_TRANSITION_BYTES_MAX;
	memcpy(whole, b, ns_len);
	whole[ns_len] = ':';
	memcpy(whole + ns_len + 1, b + ns_len, label_len);
	/* The head keeps the start of the namespace; the rest goes to the label. */
	shown_mid(out, width, 10, whole, ns_len + 1 + label_len);
}

static void duration(char *out, size_t len, uint64_t ns)
{
	if (ns < 1000ull)
		snprintf(out, len, "%lluns", (unsigned long long)ns);
	else if (ns < 1000000ull)
		snprintf(out, len, "%.1fus", ns / 1e3);
	else if (ns < 1000000000ull)
		snprintf(out, len, "%.1fms", ns / 1e6);
	else if (ns < 3600ull * 1000000000ull)
		snprintf(out, len, "%.1fs", ns / 1e9);
	else if (ns < 1000ull * 3600 * 1000000000ull)
		snprintf(out, len, "%.1fh", ns / 3.6e12);
	else /* at most 10 characters: 2^64 ns is 213503 days */
		snprintf(out, len, "%llud", (unsigned long long)(ns / (24ull * 3600 * 1000000000ull)));
}

static const char *state_name(uint32_t s)
{
	static const char *n[] = { "free", "joining", "live", "left" };

	return s < 4 ? n[s] : "?";
}

/* ---- members ---- */

static int cmd_members(orbit_fleet_t *f)
{
	struct orbit_fleet_member m;
	uint32_t rows = orbit_fleet_rows(f);
	uint64_t mono = now_ns(CLOCK_MONOTONIC);
	int shown_rows = 0, bad = 0;

	if (rows == 0) {
		fprintf(stderr, "%s: fleet %s has no member directory\n", prog, orbit_fleet_name(f));
		return EXIT_NOFLEET;
	}
	/* 3+1+7+1+31+1+7+1+5+1+6+1 columns, then a heartbeat of at most 14: 80 */
	printf("%-3s %-7s %-31s %-7s %-5s %-6s %s\n", "ROW", "PID", "NAME", "STATE", "ALIVE", "GEN",
	       "HEARTBEAT");
	for (uint32_t r = 0; r < rows; r++) {
		char name[SHOWN_MAX(ORBIT_FLEET_MEMBER_NAME_MAX)], hb[16];
		int rc = orbit_fleet_member(f, r, &m);

		if (rc == -ENOENT)
			continue;
		if (rc < 0) {
			printf("%-3u %s\n", r, rc == -EAGAIN ? "(being rewritten)" : "(corrupt row)");
			bad++;
			continue;
		}
		shown_mid(name, 31, 14, (const uint8_t *)m.name, strnlen(m.name, sizeof(m.name)));
		if (m.heartbeat_ns && m.heartbeat_ns <= mono) {
			duration(hb, sizeof(hb) - 4, mono - m.heartbeat_ns);
			strcat(hb, " ago");
		} else {
			strcpy(hb, "-");
		}
		printf("%-3u %-7u %-31s %-7s %-5s %-6u %s\n", r, m.pid % 10000000u, name,
		       state_name(m.state), m.alive ? "yes" : "no", m.generation % 1000000u, hb);
		shown_rows++;
	}
	printf("%d member row(s) in use of %u%s\n", shown_rows, rows, bad ? "; some unreadable" : "");
	return EXIT_OK;
}

/* ---- locks ---- */

struct locks_ctx {
	uint64_t mono;
	int n;
	bool wide;
};

/* Columns of `locks` (80 in all); --wide prints every field whole. */
#define LK_KEY 34
#define LK_OWNER 12
#define LK_TOKEN 10 /* '~' and the last 9 digits: consecutive tokens differ there */

static int print_lock(const struct orbit_lock_entry *e, void *p)
{
	static char key[SHOWN_MAX(ORBIT_LOCK_BYTES_MAX + 1)], owner[SHOWN_MAX(ORBIT_LOCK_BYTES_MAX)];
	struct locks_ctx *c = p;
	char ttl[16], tok[24];
	int alive = orbit_lock_holder_alive(e);

	key_str(key, c->wide ? 0 : LK_KEY, e->bytes, e->ns_len, e->label_len);
	shown_mid(owner, c->wide ? 0 : LK_OWNER, 5, orbit_lock_entry_owner(e), e->owner_len);
	if (e->expired || e->deadline_ns <= c->mono)
		strcpy(ttl, "expired");
	else
		duration(ttl, sizeof(ttl), e->deadline_ns - c->mono);
	if (c->wide || e->token < 1000000000ull)
		snprintf(tok, sizeof(tok), "%llu", (unsigned long long)e->token);
	else
		snprintf(tok, sizeof(tok), "~%09llu", (unsigned long long)(e->token % 1000000000ull));
	if (c->wide)
		printf("%s %s %s %s %u %s\n", key, owner, tok, ttl, e->holder_pid,
		       alive > 0 ? "yes" : "no");
	else
		printf("%-*s %-*s %*s %-7s %7u %s\n", LK_KEY, key, LK_OWNER, owner, LK_TOKEN, tok,
		       ttl, e->holder_pid % 10000000u, alive > 0 ? "yes" : "no");
	c->n++;
	return 0;
}

static int cmd_locks(orbit_fleet_t *f, bool wide)
{
	orbit_lock_t *lock = orbit_fleet_lock(f);
	struct locks_ctx c = { now_ns(CLOCK_MONOTONIC), 0, wide };
	int rc;

	if (!lock) {
		fprintf(stderr, "%s: fleet %s has no lock table\n", prog, orbit_fleet_name(f));
		return EXIT_NOFLEET;
	}
	if (wide)
		printf("KEY OWNER TOKEN TTL PID ALIVE\n");
	else
		printf("%-*s %-*s %*s %-7s %7s %s\n", LK_KEY, "KEY", LK_OWNER, "OWNER", LK_TOKEN,
		       "TOKEN", "TTL", "PID", "ALIVE");
	rc = orbit_lock_foreach(lock, print_lock, &c);
	if (rc < 0)
		return fail("reading the lock table", orbit_fleet_name(f), rc);
	printf("%d lock(s), state revision %llu\n", c.n,
	       (unsigned long long)orbit_lock_state_revision(lock));
	return EXIT_OK;
}

/* ---- watch ---- */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static const char *type_name(uint32_t t)
{
	static const char *n[] = { "?", "acquire", "renew", "release", "force-release", "reclaim",
				   "repair" };

	return t < 7 ? n[t] : "?";
}

static int cmd_watch(orbit_fleet_t *f, long count, long timeout_ms, bool replay)
{
	struct orbit_transition_event *ev = malloc(sizeof(*ev));
	orbit_transition_reader_t *r = NULL;
	uint64_t end = timeout_ms > 0 ? now_ns(CLOCK_MONOTONIC) + (uint64_t)timeout_ms * 1000000ull : 0;
	struct sigaction sa;
	long seen = 0;
	int rc;

	if (!ev)
		return fail("watch", orbit_fleet_name(f), -ENOMEM);
	rc = orbit_fleet_reader_open(f, &r);
	if (rc < 0) {
		free(ev);
		return fail("opening the transition ring", orbit_fleet_name(f), rc);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* --replay: the retained frames first, then live, none missed or twice. */
	if (replay)
		orbit_transition_reader_rewind(r);
	printf("watching fleet %s%s (Ctrl-C stops)\n", orbit_fleet_name(f),
	       replay ? ", retained frames first" : "");
	while (!interrupted && (count <= 0 || seen < count)) {
		rc = orbit_transition_reader_next(r, ev);
		if (rc == -EAGAIN) {
			if (end && now_ns(CLOCK_MONOTONIC) >= end)
				break;
			usleep(20000); /* read-only: we never sleep on the doorbell */
			continue;
		}
		if (rc == -ORBIT_ELAGGED) {
			printf("LAGGED lane %u: frames lost; the lock table is the authority\n", ev->lane);
			seen++;
			continue;
		}
		if (rc < 0) {
			printf("CORRUPT frame skipped (%s)\n", orbit_strerror(rc));
			seen++;
			continue;
		}
		{
			static char key[SHOWN_MAX(2 * ORBIT_TRANSITION_BYTES_MAX + 1)];
			static char owner[SHOWN_MAX(ORBIT_TRANSITION_BYTES_MAX)];
			char t[16];
			time_t wall = time(NULL);
			struct tm tm;

			localtime_r(&wall, &tm);
			strftime(t, sizeof(t), "%H:%M:%S", &tm);
			key_str(key, 22, ev->bytes, ev->ns_len, ev->label_len);
			shown_mid(owner, 12, 5, ev->bytes + ev->ns_len + ev->label_len,
				  ev->owner_len);
			/* 8+1+13+1+7+1+4+1+7+1+22+1+12 = 79, '*' for a truncated frame: 80 */
			printf("%s %-13s r%-6llu L%-3u %-7u %-22s %-12s%s\n", t, type_name(ev->type),
			       (unsigned long long)(ev->state_revision % 1000000ull), ev->lane % 1000u,
			       ev->writer_pid % 10000000u, key, owner, ev->flags & 1 ? "*" : "");
		}
		seen++;
	}
	orbit_transition_reader_close(r);
	free(ev);
	return EXIT_OK;
}

/* ---- stats ---- */

enum stats_fmt { FMT_TABLE, FMT_JSON, FMT_PROM };

struct member_stats {
	struct orbit_fleet_stats s;
	struct orbit_fleet_member m;
	bool have_member;
};

/* The stats rows that were ever published, with their member when it matches. */
static int collect(orbit_fleet_t *f, struct member_stats **out)
{
	uint32_t rows = orbit_fleet_rows(f), srows = orbit_fleet_stats_rows(f);
	struct member_stats *ms;
	int n = 0;

	if (srows < rows)
		rows = srows; /* a stats row belongs to the member row of its index */
	ms = calloc(rows ? rows : 1, sizeof(*ms));
	if (!ms)
		return -ENOMEM;
	for (uint32_t r = 0; r < rows; r++) {
		struct member_stats *x = &ms[n];

		if (orbit_fleet_stats_read(f, r, &x->s) < 0)
			continue;
		x->have_member = orbit_fleet_member(f, r, &x->m) == 0 && x->m.pid == x->s.pid &&
				 x->m.start_time_ticks == x->s.start_time_ticks;
		n++;
	}
	*out = ms;
	return n;
}

/* Percentile upper bound from log2 buckets. */
static uint64_t hist_quantile(const struct orbit_stats_histogram *h, double q)
{
	uint64_t want = (uint64_t)(q * (double)h->count + 0.5), acc = 0;

	if (want == 0)
		want = 1;
	for (unsigned b = 0; b < ORBIT_STATS_NBUCKETS; b++) {
		acc += h->buckets[b];
		if (acc >= want)
			return orbit_stats_bucket_le(b);
	}
	return UINT64_MAX;
}

static void print_table(const char *fleet, const struct member_stats *ms, int n)
{
	uint64_t real = now_ns(CLOCK_REALTIME);

	printf("fleet %s: %d stats row(s)\n", fleet, n);
	for (int i = 0; i < n; i++) {
		const struct member_stats *x = &ms[i];
		char name[SHOWN_MAX(ORBIT_FLEET_MEMBER_NAME_MAX)], age[16];
		unsigned nc = orbit_stats_counter_count();

		shown_mid(name, 24, 10, (const uint8_t *)(x->have_member ? x->m.name : "?"),
			  x->have_member ? strnlen(x->m.name, sizeof(x->m.name)) : 1);
		if (x->s.published_real_ns && x->s.published_real_ns <= real)
			duration(age, sizeof(age), real - x->s.published_real_ns);
		else
			strcpy(age, "-");
		printf("\nrow %-3u pid %-7u %-24s %-5s published %s ago\n", x->s.row,
		       x->s.pid % 10000000u, name, x->have_member && x->m.alive ? "alive" : "gone", age);
		for (unsigned c = 0; c < nc; c += 2) {
			/* 2+22+1+14 twice: 78 columns, counts up to 14 digits */
			printf("  %-22s %14llu", orbit_stats_counter_name(c),
			       (unsigned long long)x->s.counters[c]);
			if (c + 1 < nc)
				printf("  %-22s %14llu", orbit_stats_counter_name(c + 1),
				       (unsigned long long)x->s.counters[c + 1]);
			printf("\n");
		}
		for (unsigned h = 0; h < orbit_stats_hist_count(); h++) {
			const struct orbit_stats_histogram *hh = &x->s.hists[h];
			char p50[16] = "-", p99[16] = "-", mean[16] = "-";

			if (hh->count) {
				duration(p50, sizeof(p50), hist_quantile(hh, 0.50));
				duration(p99, sizeof(p99), hist_quantile(hh, 0.99));
				duration(mean, sizeof(mean), hh->sum_ns / hh->count);
			}
			printf("  %-18s n=%-10llu p50<=%-9s p99<=%-9s mean %s\n",
			       orbit_stats_hist_name(h), (unsigned long long)hh->count, p50, p99, mean);
		}
	}
}

/* JSON / Prometheus string escaping of printable-or-not bytes. */
static void json_str(const char *s, size_t n)
{
	putchar('"');
	for (size_t i = 0; i < n && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void print_json(const char *fleet, const struct member_stats *ms, int n)
{
	printf("{\"fleet\":");
	json_str(fleet, strlen(fleet));
	printf(",\"members\":[");
	for (int i = 0; i < n; i++) {
		const struct member_stats *x = &ms[i];

		printf("%s\n {\"row\":%u,\"pid\":%u,\"name\":", i ? "," : "", x->s.row, x->s.pid);
		if (x->have_member)
			json_str(x->m.name, sizeof(x->m.name));
		else
			printf("null");
		printf(",\"alive\":%s,\"start_time_ticks\":%llu,\"published_real_ns\":%llu,\"counters\":{",
		       x->have_member && x->m.alive ? "true" : "false",
		       (unsigned long long)x->s.start_time_ticks,
		       (unsigned long long)x->s.published_real_ns);
		for (unsigned c = 0; c < orbit_stats_counter_count(); c++)
			printf("%s\"%s\":%llu", c ? "," : "", orbit_stats_counter_name(c),
			       (unsigned long long)x->s.counters[c]);
		printf("},\"histograms\":{");
		for (unsigned h = 0; h < orbit_stats_hist_count(); h++) {
			const struct orbit_stats_histogram *hh = &x->s.hists[h];

			printf("%s\"%s\":{\"count\":%llu,\"sum_ns\":%llu,\"buckets\":[", h ? "," : "",
			       orbit_stats_hist_name(h), (unsigned long long)hh->count,
			       (unsigned long long)hh->sum_ns);
			for (unsigned b = 0; b < ORBIT_STATS_NBUCKETS; b++) {
				uint64_t le = orbit_stats_bucket_le(b);

				if (le == UINT64_MAX)
					printf("%s{\"le_ns\":null,\"count\":%llu}", b ? "," : "",
					       (unsigned long long)hh->buckets[b]);
				else
					printf("%s{\"le_ns\":%llu,\"count\":%llu}", b ? "," : "",
					       (unsigned long long)le, (unsigned long long)hh->buckets[b]);
			}
			printf("]}");
		}
		printf("}}");
	}
	printf("\n]}\n");
}

static void prom_labels(const char *fleet, const struct member_stats *x, const char *extra)
{
	printf("{fleet=");
	json_str(fleet, strlen(fleet)); /* same escapes: \\ \" and no raw newline */
	printf(",row=\"%u\",pid=\"%u\",member=", x->s.row, x->s.pid);
	if (x->have_member)
		json_str(x->m.name, sizeof(x->m.name));
	else
		printf("\"\"");
	printf("%s}", extra ? extra : "");
}

static void print_prom(const char *fleet, const struct member_stats *ms, int n)
{
	for (unsigned c = 0; c < orbit_stats_counter_count(); c++) {
		bool gauge = orbit_stats_counter_is_gauge(c);
		const char *suffix = gauge ? "" : "_total";

		printf("# HELP orbit_%s%s %s\n", orbit_stats_counter_name(c), suffix,
		       orbit_stats_counter_help(c));
		printf("# TYPE orbit_%s%s %s\n", orbit_stats_counter_name(c), suffix,
		       gauge ? "gauge" : "counter");
		for (int i = 0; i < n; i++) {
			printf("orbit_%s%s", orbit_stats_counter_name(c), suffix);
			prom_labels(fleet, &ms[i], NULL);
			printf(" %llu\n", (unsigned long long)ms[i].s.counters[c]);
		}
	}
	for (unsigned h = 0; h < orbit_stats_hist_count(); h++) {
		const char *name = orbit_stats_hist_name(h);

		printf("# HELP orbit_%s_seconds %s\n", name, orbit_stats_hist_help(h));
		printf("# TYPE orbit_%s_seconds histogram\n", name);
		for (int i = 0; i < n; i++) {
			const struct orbit_stats_histogram *hh = &ms[i].s.hists[h];
			uint64_t acc = 0;

			for (unsigned b = 0; b < ORBIT_STATS_NBUCKETS; b++) {
				uint64_t le = orbit_stats_bucket_le(b);
				char extra[48];

				/* Saturate: a corrupt row must not make the buckets decrease. */
				acc = acc + hh->buckets[b] < acc ? UINT64_MAX : acc + hh->buckets[b];
				if (le == UINT64_MAX)
					snprintf(extra, sizeof(extra), ",le=\"+Inf\"");
				else
					snprintf(extra, sizeof(extra), ",le=\"%.9g\"", le / 1e9);
				printf("orbit_%s_seconds_bucket", name);
				prom_labels(fleet, &ms[i], extra);
				printf(" %llu\n", (unsigned long long)acc);
			}
			printf("orbit_%s_seconds_sum", name);
			prom_labels(fleet, &ms[i], NULL);
			printf(" %.9f\n", hh->sum_ns / 1e9);
			printf("orbit_%s_seconds_count", name);
			prom_labels(fleet, &ms[i], NULL);
			printf(" %llu\n", (unsigned long long)acc);
		}
	}
}

static int cmd_stats(orbit_fleet_t *f, enum stats_fmt fmt)
{
	struct member_stats *ms = NULL;
	int n = collect(f, &ms);

	if (n < 0)
		return fail("reading stats", orbit_fleet_name(f), n);
	if (fmt == FMT_JSON)
		print_json(orbit_fleet_name(f), ms, n);
	else if (fmt == FMT_PROM)
		print_prom(orbit_fleet_name(f), ms, n);
	else
		print_table(orbit_fleet_name(f), ms, n);
	free(ms);
	return EXIT_OK;
}

/* ---- administration ---- */

static int cmd_force_release(orbit_fleet_t *f, const char *arg)
{
	const char *colon = strchr(arg, ':');
	orbit_lock_t *lock = orbit_fleet_lock(f);
	orbit_lock_key_t key;
	int rc;

	if (!colon) {
		fprintf(stderr, "%s: KEY is NAMESPACE:LABEL\n", prog);
		return EXIT_USAGE;
	}
	if (!lock) {
		fprintf(stderr, "%s: fleet %s has no lock table\n", prog, orbit_fleet_name(f));
		return EXIT_NOFLEET;
	}
	key.ns = arg;
	key.ns_len = (size_t)(colon - arg);
	key.label = colon + 1;
	key.label_len = strlen(colon + 1);
	rc = orbit_lock_force_release(lock, &key);
	if (rc == -ENOENT) {
		fprintf(stderr, "%s: %s is not held\n", prog, arg);
		return EXIT_NOTHELD;
	}
	if (rc < 0)
		return fail("force-release", orbit_fleet_name(f), rc);
	printf("released %s\n", arg);
	return EXIT_OK;
}

static int cmd_reset(orbit_fleet_t *f)
{
	int rc = orbit_fleet_reset_transport(f);

	if (rc == -EBUSY) {
		fprintf(stderr, "%s: reset refused: a live member or lease holder (see '%s members',"
			" '%s locks')\n", prog, prog, prog);
		return EXIT_REFUSED;
	}
	if (rc < 0)
		return fail("reset", orbit_fleet_name(f), rc);
	printf("fleet %s: lock table and transition rings cleared\n", orbit_fleet_name(f));
	return EXIT_OK;
}

static int parse_long(const char *s, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return errno || !*s || *end || *out < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct orbit_fleet_options fo = { .size = sizeof(fo) };
	const char *fleet = getenv("ORBIT_FLEET"), *cmd;
	enum stats_fmt fmt = FMT_TABLE;
	long count = 0, timeout_ms = 0;
	bool wide = false, replay = false;
	orbit_fleet_t *f = NULL;
	const char *key = NULL;
	int i = 1, rc;

	if (argc > 0 && argv[0])
		prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	if (!fleet || !*fleet)
		fleet = "default";
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--fleet") && i + 1 < argc) {
			fleet = argv[++i];
		} else if (!strncmp(argv[i], "--fleet=", 8)) {
			fleet = argv[i] + 8;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return EXIT_OK;
		} else {
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[i++];
	for (; i < argc; i++) {
		if (!strcmp(cmd, "stats") && !strcmp(argv[i], "--json") && fmt == FMT_TABLE)
			fmt = FMT_JSON;
		else if (!strcmp(cmd, "stats") && !strcmp(argv[i], "--prometheus") && fmt == FMT_TABLE)
			fmt = FMT_PROM;
		else if (!strcmp(cmd, "watch") && !strcmp(argv[i], "--count") && i + 1 < argc &&
			 !parse_long(argv[i + 1], &count))
			i++;
		else if (!strcmp(cmd, "watch") && !strcmp(argv[i], "--timeout-ms") && i + 1 < argc &&
			 !parse_long(argv[i + 1], &timeout_ms))
			i++;
		else if (!strcmp(cmd, "watch") && !strcmp(argv[i], "--replay") && !replay)
			replay = true;
		else if (!strcmp(cmd, "locks") && !strcmp(argv[i], "--wide") && !wide)
			wide = true;
		else if (!strcmp(cmd, "force-release") && !key)
			key = argv[i];
		else {
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (strcmp(cmd, "members") && strcmp(cmd, "locks") && strcmp(cmd, "watch") &&
	    strcmp(cmd, "stats") && strcmp(cmd, "force-release") && strcmp(cmd, "reset")) {
		fprintf(stderr, "%s: unknown command '%s'\n", prog, cmd);
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(cmd, "force-release") && !key) {
		usage(stderr);
		return EXIT_USAGE;
	}
	fo.fleet = fleet;
	fo.admin = !strcmp(cmd, "force-release") || !strcmp(cmd, "reset");
	rc = orbit_fleet_open(&fo, &f);
	if (rc == -EINVAL) {
		fprintf(stderr, "%s: bad fleet name '%s'\n", prog, fleet);
		return EXIT_USAGE;
	}
	if (rc == -ENOENT) {
		fprintf(stderr, "%s: no such fleet: %s\n", prog, fleet);
		return EXIT_NOFLEET;
	}
	if (rc < 0)
		return fail("opening", fleet, rc);
	if (!strcmp(cmd, "members"))
		rc = cmd_members(f);
	else if (!strcmp(cmd, "locks"))
		rc = cmd_locks(f, wide);
	else if (!strcmp(cmd, "watch"))
		rc = cmd_watch(f, count, timeout_ms, replay);
	else if (!strcmp(cmd, "stats"))
		rc = cmd_stats(f, fmt);
	else if (!strcmp(cmd, "force-release"))
		rc = cmd_force_release(f, key);
	else
		rc = cmd_reset(f);
	orbit_fleet_close(f);
	return rc;
}
