// SPDX-License-Identifier: MIT
/*
 * agent/orbitctl.c: the fleet inspection tool. It links liborbit like any
 * user and uses only the public API (orbit/fleet.h, orbit/lock.h): members
 * and their kernel-proved liveness, the lock table, transitions as they
 * happen, stats as a table, JSON or Prometheus text, a live screen (top),
 * the fleets on this host, and three administrative commands
 * (force-release, reset, unlink). Everything opens read-only except those
 * three. Every listing has --json; tables fit 80 columns; exit codes are
 * documented in doc/orbitctl.1.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <orbit/orbit.h>

enum exit_code {
	EXIT_OK = 0,
	EXIT_USAGE = 1,
	EXIT_NOFLEET = 2, /* no such fleet or segment */
	EXIT_CORRUPT = 3, /* corrupt or mismatched segment */
	EXIT_REFUSED = 4, /* refused / busy / permission */
	EXIT_NOTHELD = 5, /* force-release: the key is not held */
	EXIT_ERROR = 6,	  /* any other failure */
};

static const char *prog = "orbitctl";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--fleet NAME] [--json] COMMAND [OPTIONS]   (any order)\n"
		"commands:\n"
		"  members                    members, pids and liveness\n"
		"  locks [--wide]             lock table: key, owner, token, TTL, holder\n"
		"                             (--wide: whole fields, past 80 columns)\n"
		"  watch [--replay] [--count N] [--timeout-ms MS]\n"
		"                             follow transitions live (--replay: the\n"
		"                             frames the ring retains first)\n"
		"  stats [--prometheus] [--member NAME] [--component C] [--all]\n"
		"                             live members' totals, then per-member\n"
		"                             counters and histograms (counters at 0 and\n"
		"                             dead members' rows only with --all, after\n"
		"                             the live), each member's Spot hosts and\n"
		"                             clients;\n"
		"                             C: lock ring agent queue pool lane exec spot\n"
		"  top [--interval-ms MS] [--iterations N]\n"
		"                             live screen: members, locks, rates,\n"
		"                             latencies (q or Ctrl-C quits)\n"
		"  spots                      cross-process Spots: host, epoch, depth,\n"
		"                             accepted, rejected, aborted, redelivered,\n"
		"                             submit-to-run p50/p99/max of the host\n"
		"  fleets                     the fleets on this host, their segments\n"
		"  force-release NS:LABEL     remove a lock whoever holds it (admin)\n"
		"  reset                      clear table and rings; refused while a\n"
		"                             member is alive (admin)\n"
		"  unlink                     remove the fleet's segments; refused\n"
		"                             while a member is alive (admin)\n"
		"  help                       this text\n"
		"options: --fleet NAME (or ORBIT_FLEET; default \"default\"; a fleet on etcd:\n"
		"etcd://host:port[,host:port...][/NAME], for locks, watch (an etcd watch;\n"
		"--replay: the history etcd keeps) and force-release), --json\n"
		"(JSON for members, locks, stats, spots, fleets; JSON lines for watch),\n"
		"--version, --mode MODE --group GROUP (a fleet shared with a group: 0640\n"
		"or 0660 and the group's name or gid; default 0600 and the effective gid),\n"
		"--owner USER (the fleet's one writing uid: required with 0640)\n"
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
	case -ORBIT_ENOTREG:
		return EXIT_REFUSED;
	case -EPROTO:
	case -ORBIT_EMAGIC:
	case -ORBIT_EVERSION:
	case -ORBIT_EKIND:
	case -ORBIT_EFINGERPRINT:
	case -ORBIT_ESIZE:
	case -ORBIT_ECORRUPT:
	case -ORBIT_EINITTIMEOUT:
	case -ORBIT_ETRUNCATED:
		return EXIT_CORRUPT;
	default:
		return EXIT_ERROR;
	}
}

/* POSIX SHM objects are files here; orbit names them orbit.<fleet>.<segment>. */
#define SHM_DIR "/dev/shm"

/* The command being run and the --owner given (main() sets them): fail()'s hints. */
static const char *cmd_now = "";
static unsigned owner_now;

/*
 * The segment a segment-layer refusal names: orbit_segment_last_error() is
 * "/dev/shm/orbit.<fleet>.<name>: <reason>" (no colon in a segment's path).
 * Its path into @path and its lstat into @st; false when @seg names none.
 */
static bool refused_segment(const char *seg, char *path, size_t len, struct stat *st)
{
	const char *end = strstr(seg, ": ");

	if (strncmp(seg, SHM_DIR "/", sizeof(SHM_DIR)) || !end || (size_t)(end - seg) >= len)
		return false;
	memcpy(path, seg, (size_t)(end - seg));
	path[end - seg] = '\0';
	return lstat(path, st) == 0;
}

static void shown(char *out, size_t width, const uint8_t *b, size_t n, size_t colon_esc);

/*
 * @s as one word for a shell command line the user may paste: as it is
 * when it holds only [A-Za-z0-9./_+=@%,:-], single-quoted when it holds
 * printable ASCII only, else $'...' with \xHH for every other byte (bash,
 * zsh, ksh and POSIX.1-2024 sh read it). @out holds 4 * strlen(@s) + 4.
 */
static void shell_word(char *out, const char *s)
{
	bool plain = *s != '\0', printable = true;
	size_t o = 0;

	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		plain = plain && (isalnum(*c) || strchr("./_+=@%,:-", *c));
		printable = printable && *c >= 0x20 && *c < 0x7f;
	}
	if (plain) {
		strcpy(out, s);
		return;
	}
	if (printable) {
		out[o++] = '\'';
		for (const char *c = s; *c; c++)
			if (*c == '\'') {
				memcpy(out + o, "'\\''", 4);
				o += 4;
			} else {
				out[o++] = *c;
			}
		out[o++] = '\'';
		out[o] = '\0';
		return;
	}
	out[o++] = '$';
	out[o++] = '\'';
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		if (*c >= 0x20 && *c < 0x7f && *c != '\\' && *c != '\'')
			out[o++] = (char)*c;
		else
			o += (size_t)sprintf(out + o, "\\x%02x", *c);
	out[o++] = '\'';
	out[o] = '\0';
}

/*
 * The other names in SHM_DIR of the file @st (hard links to @path), one
 * hint line each: which one to remove. A name under another fleet's orbit
 * prefix may be the file's first name (its fleet's segment linked here);
 * any other name is the extra one. Returns how many it found.
 */
static int hint_other_names(const char *path, const struct stat *st)
{
	const char *base = strrchr(path, '/') + 1, *dot = strchr(base + 6, '.');
	size_t plen = dot ? (size_t)(dot - base) + 1 : strlen(base); /* "orbit.<fleet>." */
	DIR *dir = opendir(SHM_DIR);
	struct dirent *d;
	int n = 0;

	while (dir && (d = readdir(dir))) {
		char name[4 * sizeof(d->d_name) + 1], full[sizeof(SHM_DIR) + sizeof(d->d_name)];
		char word[4 * (sizeof(SHM_DIR) + 512) + 4]; /* the callers' path, or full */
		struct stat o;

		if (!strcmp(d->d_name, base) ||
		    fstatat(dirfd(dir), d->d_name, &o, AT_SYMLINK_NOFOLLOW) ||
		    o.st_ino != st->st_ino || o.st_dev != st->st_dev)
			continue;
		shown(name, sizeof(name) - 1, (const uint8_t *)d->d_name, strlen(d->d_name), 0);
		if (!strncmp(d->d_name, "orbit.", 6) && strncmp(d->d_name, base, plen)) {
			shell_word(word, path);
			fprintf(stderr,
				"%s: the file is also %s/%s, another fleet's segment name: one "
				"of the two names is extra (if the file is that fleet's: rm %s)\n",
				prog, SHM_DIR, name, word);
		} else {
			snprintf(full, sizeof(full), "%s/%s", SHM_DIR, d->d_name);
			shell_word(word, full);
			fprintf(stderr,
				"%s: the file is also %s/%s: remove that extra name (rm %s)\n",
				prog, SHM_DIR, name, word);
		}
		n++;
	}
	if (dir)
		closedir(dir);
	return n;
}

/* The hint after -ORBIT_EOWNER from the segment @st, for root: whose it is, what to pass. */
static void hint_owner(const struct stat *st)
{
	struct passwd *pw = getpwuid(st->st_uid);
	char who[64];

	if (!pw || snprintf(who, sizeof(who), "%s", pw->pw_name) >= (int)sizeof(who))
		snprintf(who, sizeof(who), "%u", (unsigned)st->st_uid);
	if (owner_now && owner_now != (unsigned)st->st_uid)
		fprintf(stderr,
			"%s: the segment's owner is uid %u (%s), not the --owner given (%u)\n",
			prog, (unsigned)st->st_uid, who, owner_now);
	else if (st->st_uid == geteuid())
		return; /* ours: the library's line says what it refused */
	else if (!strcmp(cmd_now, "force-release") || !strcmp(cmd_now, "reset"))
		fprintf(stderr,
			"%s: another user's fleet (uid %u): %s writes its segments, which only "
			"their owner does: run it as that user (runuser -u %s -- %s ...); as "
			"root, --owner %s inspects it read-only or unlinks it\n",
			prog, (unsigned)st->st_uid, cmd_now, who, prog, who);
	else if (!strcmp(cmd_now, "unlink"))
		fprintf(stderr,
			"%s: another user's fleet (uid %u): as root, name its owner to remove "
			"its segments: --owner %s unlink\n",
			prog, (unsigned)st->st_uid, who);
	else
		fprintf(stderr,
			"%s: another user's fleet (uid %u): as root, name its owner to inspect "
			"it read-only: --owner %s\n",
			prog, (unsigned)st->st_uid, who);
}

static int fail(const char *what, const char *fleet, int err)
{
	const char *seg = orbit_segment_last_error(); /* names the segment that refused */
	char path[sizeof(SHM_DIR) + 512];	      /* orbit.<fleet>.spotq.<spot> at most */
	bool have = false, linked;
	struct stat st;

	if (err == -ORBIT_EOWNER)
		have = refused_segment(seg, path, sizeof(path), &st);
	/* The library's -ORBIT_EOWNER covers a second link too: say which it is. */
	linked = have && S_ISREG(st.st_mode) && st.st_nlink > 1;
	fprintf(stderr, "%s: %s (fleet %s): %s%s%s\n", prog, what, fleet,
		linked ? "a second name (hard link) points at this segment" : orbit_strerror(err),
		*seg ? "\n  " : "", seg);
	if (linked) {
		if (!hint_other_names(path, &st))
			fprintf(stderr,
				"%s: remove the extra name of %s (find it: find %s -samefile %s)\n",
				prog, path, SHM_DIR, path);
	} else if (err == -ORBIT_EOWNER && geteuid() == 0 && have) {
		hint_owner(&st);
	} else if (err == -ORBIT_EOWNER && geteuid() == 0) {
		fprintf(stderr,
			"%s: another user's fleet: as root, name its owner to inspect it "
			"read-only: --owner USER (the uid above)\n",
			prog);
	} else if (err == -ORBIT_EMODE || err == -ORBIT_EOWNER) {
		fprintf(stderr,
			"%s: a fleet shared with a group needs its --mode and --group "
			"(and --owner with 0640)\n",
			prog);
	}
	return exit_for(err);
}

/* --mode: 0600, 0640 or 0660 (octal); the library refuses any other. */
static int parse_mode(const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 8);
	if (errno || !*s || *end || v > 0777)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* --owner: a user name, or a numeric uid. */
static int uid_of_name(const char *s, unsigned *out)
{
	struct passwd *p = getpwnam(s);

	if (!p)
		return -1;
	*out = (unsigned)p->pw_uid;
	return 0;
}

static int gid_of_name(const char *s, unsigned *out)
{
	struct group *g = getgrnam(s);

	if (!g)
		return -1;
	*out = (unsigned)g->gr_gid;
	return 0;
}

/* A number (decimal, up to UINT32_MAX), or else a name @by_name knows. 0 or -1. */
static int parse_number_or_name(const char *s, int (*by_name)(const char *, unsigned *),
				unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (!errno && *s && !*end && v <= UINT32_MAX) {
		*out = (unsigned)v;
		return 0;
	}
	return by_name(s, out);
}

static int parse_owner(const char *s, unsigned *out)
{
	return parse_number_or_name(s, uid_of_name, out);
}

/* --group: a group name, or a numeric gid. */
static int parse_group(const char *s, unsigned *out)
{
	return parse_number_or_name(s, gid_of_name, out);
}

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Printable rendering of SHM bytes into @out (width-limited, '~' marks a
 * cut): printable ASCII as it is; every other byte, the backslash, the
 * space and '~' as \xHH, and a colon among the first @colon_esc bytes too (a key's
 * namespace: "ns:label" then splits at its first colon). force-release
 * reads this notation back (parse_key()): keep the two inverses.
 */
static void shown(char *out, size_t width, const uint8_t *b, size_t n, size_t colon_esc)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char tmp[5];
		size_t t;

		/* A space would split a table's column and '~' reads as the
		 * elision mark: both are escaped too. */
		if (b[i] > 0x20 && b[i] < 0x7f && b[i] != '\\' && b[i] != '~' &&
		    (b[i] != ':' || i >= colon_esc)) {
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
 * @colon_esc: as for shown().
 */
static void shown_mid_esc(char *out, size_t width, size_t head_max, const uint8_t *b, size_t n,
			  size_t colon_esc)
{
	static char whole[SHOWN_MAX(2 * ORBIT_TRANSITION_BYTES_MAX + 1)];
	size_t len, head, tail;

	if (n > 2 * ORBIT_TRANSITION_BYTES_MAX + 1)
		n = 2 * ORBIT_TRANSITION_BYTES_MAX + 1;
	shown(whole, sizeof(whole) - 1, b, n, colon_esc);
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

/* shown_mid_esc() with no colon escaped: names, owners, Spot names. */
static void shown_mid(char *out, size_t width, size_t head_max, const uint8_t *b, size_t n)
{
	shown_mid_esc(out, width, head_max, b, n, 0);
}

/* "ns:label" rendering of a key, elided in the middle (see shown_mid); a colon of ns is \x3a. */
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
	shown_mid_esc(out, width, 10, whole, ns_len + 1 + label_len, ns_len);
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
		snprintf(out, len, "%llud",
			 (unsigned long long)(ns / (24ull * 3600 * 1000000000ull)));
}

static const char *state_name(enum orbit_member_state s)
{
	switch (s) {
	case ORBIT_MEMBER_FREE:
		return "free";
	case ORBIT_MEMBER_JOINING:
		return "joining";
	case ORBIT_MEMBER_LIVE:
		return "live";
	case ORBIT_MEMBER_LEFT:
		return "left";
	}
	return "?"; /* a corrupt row */
}

/* JSON string of @n bytes, NULs included (SHM bytes are not C strings). */
static void json_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;

	putchar('"');
	for (size_t i = 0; i < n; i++) {
		if (b[i] == '"' || b[i] == '\\')
			printf("\\%c", b[i]);
		else if (b[i] < 0x20 || b[i] >= 0x7f)
			printf("\\u%04x", b[i]);
		else
			putchar(b[i]);
	}
	putchar('"');
}

/* JSON / Prometheus string escaping of a NUL-terminated field of at most @n bytes. */
static void json_str(const char *s, size_t n)
{
	json_bytes(s, strnlen(s, n));
}

/* ---- members ---- */

static void member_json(const struct orbit_fleet_member *m, uint64_t mono)
{
	printf("{\"row\":%u,\"pid\":%u,\"name\":", m->row, m->pid);
	json_str(m->name, sizeof(m->name));
	printf(",\"state\":\"%s\",\"alive\":%s,\"generation\":%u,\"start_time_ticks\":%llu,"
	       "\"joined_real_ns\":%llu,\"heartbeat_age_ns\":",
	       state_name(m->state), m->alive ? "true" : "false", m->generation,
	       (unsigned long long)m->start_time_ticks, (unsigned long long)m->joined_real_ns);
	if (m->heartbeat_ns && m->heartbeat_ns <= mono)
		printf("%llu}", (unsigned long long)(mono - m->heartbeat_ns));
	else
		printf("null}");
}

static int cmd_members_json(orbit_fleet_t *f)
{
	struct orbit_fleet_member m;
	uint32_t rows = orbit_fleet_rows(f);
	uint64_t mono = now_ns(CLOCK_MONOTONIC);
	int n = 0, bad = 0;

	printf("{\"fleet\":");
	json_str(orbit_fleet_name(f), ORBIT_FLEET_NAME_MAX);
	printf(",\"rows\":%u,\"members\":[", rows);
	for (uint32_t r = 0; r < rows; r++) {
		int rc = orbit_fleet_member(f, r, &m);

		if (rc == -ENOENT)
			continue;
		if (rc < 0) {
			bad++;
			continue;
		}
		printf("%s\n ", n++ ? "," : "");
		member_json(&m, mono);
	}
	printf("\n],\"unreadable_rows\":%d}\n", bad);
	return rows ? EXIT_OK : EXIT_NOFLEET;
}

static int cmd_members(orbit_fleet_t *f, bool json)
{
	struct orbit_fleet_member m;
	uint32_t rows = orbit_fleet_rows(f);
	uint64_t mono = now_ns(CLOCK_MONOTONIC);
	int shown_rows = 0, bad = 0;

	if (rows == 0) {
		fprintf(stderr, "%s: fleet %s has no member directory\n", prog,
			orbit_fleet_name(f));
		return EXIT_NOFLEET;
	}
	if (json)
		return cmd_members_json(f);
	/* 3+1+7+1+31+1+7+1+5+1+6+1 columns, then a heartbeat of at most 14: 80 */
	printf("%-3s %-7s %-31s %-7s %-5s %-6s %s\n", "ROW", "PID", "NAME", "STATE", "ALIVE", "GEN",
	       "HEARTBEAT");
	for (uint32_t r = 0; r < rows; r++) {
		char name[SHOWN_MAX(ORBIT_FLEET_MEMBER_NAME_MAX)], hb[16];
		int rc = orbit_fleet_member(f, r, &m);

		if (rc == -ENOENT)
			continue;
		if (rc < 0) {
			printf("%-3u %s\n", r,
			       rc == -EAGAIN ? "(being rewritten)" : "(corrupt row)");
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
	printf("%d member row(s) in use of %u%s\n", shown_rows, rows,
	       bad ? "; some unreadable" : "");
	return EXIT_OK;
}

/* ---- locks ---- */

struct locks_ctx {
	uint64_t mono;
	int n;
	bool wide;
	bool json;
};

static void lock_json(const struct orbit_lock_entry *e, struct locks_ctx *c)
{
	int alive = orbit_lock_holder_alive(e);
	bool expired = e->expired || e->deadline_ns <= c->mono;

	printf("%s\n {\"namespace\":", c->n ? "," : "");
	json_bytes(e->bytes, e->ns_len);
	printf(",\"label\":");
	json_bytes(e->bytes + e->ns_len, e->label_len);
	printf(",\"owner\":");
	json_bytes(orbit_lock_entry_owner(e), e->owner_len);
	printf(",\"token\":%llu,\"expired\":%s,\"ttl_left_ns\":%llu,\"holder_pid\":%u,"
	       "\"holder_alive\":%s,\"free_on_death\":%s}",
	       (unsigned long long)e->token, expired ? "true" : "false",
	       expired ? 0ull : (unsigned long long)(e->deadline_ns - c->mono), e->holder_pid,
	       alive > 0    ? "true"
	       : alive == 0 ? "false"
			    : "null",
	       e->flags & ORBIT_LOCK_FREE_ON_DEATH ? "true" : "false");
	c->n++;
}

/* Columns of `locks` (80 in all); --wide prints every field whole. */
#define LK_KEY 34
#define LK_OWNER 12
#define LK_TOKEN 10 /* '~' and the last 9 digits: consecutive tokens differ there */

static int print_lock(const struct orbit_lock_entry *e, void *p)
{
	static char key[SHOWN_MAX(ORBIT_LOCK_BYTES_MAX + 1)],
	    owner[SHOWN_MAX(ORBIT_LOCK_BYTES_MAX)];
	struct locks_ctx *c = p;
	char ttl[16], tok[24];
	int alive;

	if (c->json) {
		lock_json(e, c);
		return 0;
	}
	alive = orbit_lock_holder_alive(e);

	key_str(key, c->wide ? 0 : LK_KEY, e->bytes, e->ns_len, e->label_len);
	shown_mid(owner, c->wide ? 0 : LK_OWNER, 5, orbit_lock_entry_owner(e), e->owner_len);
	if (e->expired || e->deadline_ns <= c->mono)
		strcpy(ttl, "expired");
	else
		duration(ttl, sizeof(ttl), e->deadline_ns - c->mono);
	if (c->wide || e->token < 1000000000ull)
		snprintf(tok, sizeof(tok), "%llu", (unsigned long long)e->token);
	else
		snprintf(tok, sizeof(tok), "~%09llu",
			 (unsigned long long)(e->token % 1000000000ull));
	if (c->wide)
		printf("%s %s %s %s %u %s\n", key, owner, tok, ttl, e->holder_pid,
		       alive > 0    ? "yes"
		       : alive == 0 ? "no"
				    : "?");
	else
		printf("%-*s %-*s %*s %-7s %7u %s\n", LK_KEY, key, LK_OWNER, owner, LK_TOKEN, tok,
		       ttl, e->holder_pid % 10000000u,
		       alive > 0    ? "yes"
		       : alive == 0 ? "no"
				    : "?");
	c->n++;
	return 0;
}

/* @lock: the fleet's table (SHM) or its keys (etcd); @name: the fleet as given. */
static int cmd_locks(orbit_lock_t *lock, const char *name, bool wide, bool json)
{
	struct locks_ctx c = { now_ns(CLOCK_MONOTONIC), 0, wide, json };
	int rc;

	if (!lock) {
		fprintf(stderr, "%s: fleet %s has no lock table\n", prog, name);
		return EXIT_NOFLEET;
	}
	if (json) {
		printf("{\"fleet\":");
		json_str(name, strlen(name) + 1);
		printf(",\"locks\":[");
	} else if (wide) {
		printf("KEY OWNER TOKEN TTL PID ALIVE\n");
	} else {
		printf("%-*s %-*s %*s %-7s %7s %s\n", LK_KEY, "KEY", LK_OWNER, "OWNER", LK_TOKEN,
		       "TOKEN", "TTL", "PID", "ALIVE");
	}
	rc = orbit_lock_foreach(lock, print_lock, &c);
	if (rc < 0) {
		if (json)
			printf("\n]}\n"); /* keep stdout parseable; the error goes to stderr */
		return fail("reading the lock table", name, rc);
	}
	if (json)
		printf("\n],\"backend\":\"%s\",\"state_revision\":%llu}\n",
		       orbit_lock_backend_name(lock),
		       (unsigned long long)orbit_lock_state_revision(lock));
	else
		printf("%d lock(s), state revision %llu (%s)\n", c.n,
		       (unsigned long long)orbit_lock_state_revision(lock),
		       orbit_lock_backend_name(lock));
	return EXIT_OK;
}

/* ---- watch ---- */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static const char *type_name(enum orbit_transition_type t)
{
	switch (t) {
	case ORBIT_TRANSITION_ACQUIRE:
		return "acquire";
	case ORBIT_TRANSITION_RENEW:
		return "renew";
	case ORBIT_TRANSITION_RELEASE:
		return "release";
	case ORBIT_TRANSITION_FORCE_RELEASE:
		return "force-release";
	case ORBIT_TRANSITION_RECLAIM:
		return "reclaim";
	case ORBIT_TRANSITION_REPAIR:
		return "repair";
	}
	return "?";
}

/*
 * A frame's own time on the wall clock: its CLOCK_MONOTONIC publish time
 * moved to CLOCK_REALTIME by the offset between the two clocks now, so a
 * replayed frame shows when it was published, not when it is printed.
 */
static uint64_t frame_wall_ns(uint64_t publish_ns, uint64_t mono, uint64_t real)
{
	return publish_ns <= mono && mono - publish_ns <= real ? real - (mono - publish_ns) : real;
}

/* "HH:MM:SS.mmm" of frame_wall_ns(). */
static void frame_time(char *out, size_t len, uint64_t publish_ns, uint64_t mono, uint64_t real)
{
	uint64_t wall = frame_wall_ns(publish_ns, mono, real);
	time_t sec = (time_t)(wall / 1000000000ull);
	struct tm tm;
	char hms[16];

	localtime_r(&sec, &tm);
	strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
	snprintf(out, len, "%s.%03u", hms, (unsigned)(wall / 1000000ull % 1000ull));
}

static void watch_print(const struct orbit_transition_event *ev, bool json)
{
	static char key[SHOWN_MAX(2 * ORBIT_TRANSITION_BYTES_MAX + 1)];
	static char owner[SHOWN_MAX(ORBIT_TRANSITION_BYTES_MAX)];
	uint64_t mono = now_ns(CLOCK_MONOTONIC), real = now_ns(CLOCK_REALTIME);
	char t[24];

	if (json) {
		uint64_t wall = frame_wall_ns(ev->publish_ns, mono, real);

		printf("{\"type\":\"%s\",\"state_revision\":%llu,\"lane\":%u,\"lane_pos\":%llu,"
		       "\"writer_pid\":%u,\"fencing_token\":%llu,\"publish_real_ns\":%llu,"
		       "\"truncated\":%s,\"namespace\":",
		       type_name(ev->type), (unsigned long long)ev->state_revision, ev->lane,
		       (unsigned long long)ev->lane_pos, ev->writer_pid,
		       (unsigned long long)ev->fencing_token, (unsigned long long)wall,
		       ev->flags & ORBIT_TRANSITION_F_TRUNCATED ? "true" : "false");
		json_bytes(ev->bytes, ev->ns_len);
		printf(",\"label\":");
		json_bytes(ev->bytes + ev->ns_len, ev->label_len);
		printf(",\"owner\":");
		json_bytes(ev->bytes + ev->ns_len + ev->label_len, ev->owner_len);
		printf("}\n");
		return;
	}
	frame_time(t, sizeof(t), ev->publish_ns, mono, real);
	key_str(key, 18, ev->bytes, ev->ns_len, ev->label_len);
	shown_mid(owner, 12, 5, ev->bytes + ev->ns_len + ev->label_len, ev->owner_len);
	/* 12+1+13+1+7+1+4+1+7+1+18+1+12 = 79, '*' for a truncated frame: 80 */
	printf("%-12s %-13s r%-6llu L%-3u %-7u %-18s %-12s%s\n", t, type_name(ev->type),
	       (unsigned long long)(ev->state_revision % 1000000ull), ev->lane % 1000u,
	       ev->writer_pid % 10000000u, key, owner,
	       ev->flags & ORBIT_TRANSITION_F_TRUNCATED ? "*" : "");
}

static int by_revision(const void *a, const void *b)
{
	const struct orbit_transition_event *x = a, *y = b;

	if (x->state_revision != y->state_revision)
		return x->state_revision < y->state_revision ? -1 : 1;
	return x->lane < y->lane ? -1 : x->lane > y->lane;
}

/* Frames read in one pass over the lanes, printed in revision order. */
#define WATCH_BATCH 256

/*
 * Follow @r (the fleet's ring, or an etcd fleet's watch; owned: closed
 * here) and print what it reads; @name: the fleet as shown.
 */
static int watch_reader(orbit_transition_reader_t *r, const char *name, long count, long timeout_ms,
			bool replay, bool json)
{
	struct orbit_transition_event *ev = malloc(WATCH_BATCH * sizeof(*ev));
	uint64_t end = timeout_ms > 0 ? now_ns(CLOCK_MONOTONIC) + (uint64_t)timeout_ms * 1000000ull
				      : 0;
	struct sigaction sa;
	long seen = 0;
	int rc;

	if (!ev) {
		orbit_transition_reader_close(r);
		return fail("watch", name, -ENOMEM);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* --replay: the retained frames first, then live, none missed or twice. */
	if (replay)
		orbit_transition_reader_rewind(r);
	if (!json) {
		printf("watching fleet %s%s (Ctrl-C stops)\n", name,
		       replay ? ", retained frames first" : "");
		printf("%-12s %-13s %-7s %-4s %-7s %-18s %s\n", "TIME", "TYPE", "REV", "LANE",
		       "PID", "KEY", "OWNER");
	}
	while (!interrupted && (count <= 0 || seen < count)) {
		int n = 0;

		/* Read what is there now (at most a batch), then print it in order. */
		while (n < WATCH_BATCH && (count <= 0 || seen + n < count)) {
			rc = orbit_transition_reader_next(r, &ev[n]);
			if (rc == -EAGAIN)
				break;
			if (rc == -ORBIT_ELAGGED) {
				if (json)
					printf("{\"lagged\":true,\"lane\":%u}\n", ev[n].lane);
				else
					printf("LAGGED lane %u: frames lost; the lock table is the "
					       "authority\n",
					       ev[n].lane);
				seen++;
				continue;
			}
			if (rc == -ORBIT_EUNAVAILABLE) {
				/* etcd: no member for a while; the watch resumes where it was */
				if (json)
					printf("{\"unavailable\":true}\n");
				else
					printf("UNAVAILABLE: no etcd member answers; still trying, "
					       "nothing will be missed\n");
				break;
			}
			if (rc < 0) {
				if (json)
					printf("{\"corrupt\":true,\"error\":\"%s\"}\n",
					       orbit_err_name(rc));
				else
					printf("CORRUPT frame skipped (%s)\n", orbit_strerror(rc));
				seen++;
				continue;
			}
			n++;
		}
		if (n == 0) {
			if (end && now_ns(CLOCK_MONOTONIC) >= end)
				break;
			usleep(20000); /* read-only: we never sleep on the doorbell */
			continue;
		}
		qsort(ev, (size_t)n, sizeof(*ev), by_revision);
		for (int i = 0; i < n; i++)
			watch_print(&ev[i], json);
		seen += n;
	}
	orbit_transition_reader_close(r);
	free(ev);
	return EXIT_OK;
}

static int cmd_watch(orbit_fleet_t *f, long count, long timeout_ms, bool replay, bool json)
{
	orbit_transition_reader_t *r = NULL;
	int rc = orbit_fleet_reader_open(f, &r);

	if (rc < 0)
		return fail("opening the transition ring", orbit_fleet_name(f), rc);
	return watch_reader(r, orbit_fleet_name(f), count, timeout_ms, replay, json);
}

/* ---- stats ---- */

enum stats_fmt { FMT_TABLE, FMT_JSON, FMT_PROM };

struct spot_slot {
	struct orbit_fleet_spot_stats s;
	bool live; /* its writer is the live member of its row */
};

struct member_stats {
	struct orbit_fleet_stats s;
	struct orbit_fleet_member m;
	bool have_member;
	struct spot_slot *spots; /* its published Spot slots */
	int nspots;
};

/* The Spot slots of @x's row that read back valid (scribbled ones are left out). */
static int collect_spots(orbit_fleet_t *f, struct member_stats *x, uint64_t *wait_left)
{
	x->spots = calloc(ORBIT_FLEET_SPOT_SLOTS, sizeof(*x->spots));
	if (!x->spots)
		return -ENOMEM;
	for (uint32_t k = 0; k < ORBIT_FLEET_SPOT_SLOTS; k++) {
		struct spot_slot *sp = &x->spots[x->nspots];

		int rc = orbit_fleet_spot_stats_read_pass(f, x->s.row, k, &sp->s, wait_left);

		if (rc == -EAGAIN || rc == -ORBIT_ECORRUPT)
			fprintf(stderr, "orbitctl: stats row %u Spot slot %u not shown: %s\n",
				x->s.row, k,
				rc == -EAGAIN ? "its writer kept it changing or left it mid-publish"
					      : orbit_strerror(rc));
		if (rc < 0)
			continue;
		sp->live = x->have_member && x->m.alive && sp->s.pid == x->m.pid &&
			   sp->s.start_time_ticks == x->m.start_time_ticks;
		x->nspots++;
	}
	return 0;
}

static void free_stats(struct member_stats *ms, int n)
{
	for (int i = 0; ms && i < n; i++)
		free(ms[i].spots);
	free(ms);
}

static const char *role_name(enum orbit_fleet_spot_role r)
{
	return r == ORBIT_FLEET_SPOT_HOST ? "host" : "client";
}

/*
 * A live row: its writer is the live member of its member directory row
 * (same pid and start time, and the kernel's proof: the row's OFD lock is
 * held). Every other row keeps what its writer last published, frozen.
 * The table, JSON and Prometheus text use this one test.
 */
static bool row_live(const struct member_stats *x)
{
	return x->have_member && x->m.alive;
}

/* The stats rows that were ever published, with their member when it matches. */
static int collect(orbit_fleet_t *f, struct member_stats **out)
{
	uint32_t rows = orbit_fleet_rows(f), srows = orbit_fleet_stats_rows(f);
	uint64_t wait_left = ORBIT_FLEET_STATS_PASS_BUDGET_NS; /* the pass's, all rows and slots */
	struct member_stats *ms;
	int n = 0;

	if (srows < rows)
		rows = srows; /* a stats row belongs to the member row of its index */
	ms = calloc(rows ? rows : 1, sizeof(*ms));
	if (!ms)
		return -ENOMEM;
	for (uint32_t r = 0; r < rows; r++) {
		struct member_stats *x = &ms[n];

		int rc = orbit_fleet_stats_read_pass(f, r, &x->s, &wait_left);

		if (rc == -EAGAIN)
			fprintf(stderr,
				"orbitctl: stats row %u not shown: its writer kept it changing or "
				"left it mid-publish\n",
				r);
		if (rc < 0)
			continue;
		x->have_member = orbit_fleet_member(f, r, &x->m) == 0 && x->m.pid == x->s.pid &&
				 x->m.start_time_ticks == x->s.start_time_ticks;
		n++;
		if (collect_spots(f, x, &wait_left) < 0) {
			free_stats(ms, n);
			return -ENOMEM;
		}
	}
	*out = ms;
	return n;
}

/* "p50<=X p99<=Y mean Z" of a histogram, "-" when empty. */
static void hist_line(const char *name, const struct orbit_stats_histogram *hh, int indent)
{
	char p50[16] = "-", p99[16] = "-", mean[16] = "-";

	if (hh->count) {
		duration(p50, sizeof(p50), orbit_stats_hist_quantile(hh, 0.50));
		duration(p99, sizeof(p99), orbit_stats_hist_quantile(hh, 0.99));
		duration(mean, sizeof(mean), hh->sum_ns / hh->count);
	}
	printf("%*s%-*s n=%-10llu p50<=%-9s p99<=%-9s mean %s\n", indent, "", 20 - indent, name,
	       (unsigned long long)hh->count, p50, p99, mean);
}

/* One Spot slot of a member: its counters in two columns, then the latency. */
static void spot_table(const struct spot_slot *sp)
{
	unsigned nc = orbit_stats_spot_counter_count(sp->s.role);

	printf("  spot %s (%s%s)\n", sp->s.spot, role_name(sp->s.role), sp->live ? "" : ", gone");
	for (unsigned c = 0; c < nc; c += 2) {
		/* 4+15+1+19+2+15+1+19: 76 columns, any count (an epoch has 19 digits) */
		printf("    %-15s %19llu", orbit_stats_spot_counter_name(sp->s.role, c),
		       (unsigned long long)sp->s.counters[c]);
		if (c + 1 < nc)
			printf("  %-15s %19llu", orbit_stats_spot_counter_name(sp->s.role, c + 1),
			       (unsigned long long)sp->s.counters[c + 1]);
		printf("\n");
	}
	if (sp->s.role == ORBIT_FLEET_SPOT_HOST)
		hist_line(orbit_stats_spot_hist_name(), &sp->s.latency, 4);
}

/*
 * What stats shows: --member NAME, --component C, --all (counters at 0 in
 * the table, and in table and JSON the rows of dead members, after the
 * live ones; Prometheus never shows a dead row).
 */
struct stats_filter {
	const char *member;
	const char *component;
	bool all;
};

/*
 * The component a counter or histogram belongs to, from its name: the
 * lock API, the transition ring, the agent itself, and the watched queues,
 * pools, lanes and coordinators (exec); the Spot slots are "spot".
 */
static const char *component_of(const char *name)
{
	static const struct {
		const char *prefix, *component;
	} map[] = {
		{ "lock_", "lock" },	 { "acquire_", "lock" }, { "frames_", "ring" },
		{ "delivery_", "ring" }, { "queue_", "queue" },	 { "pool_", "pool" },
		{ "lane_", "lane" },	 { "exec_", "exec" },	 { "spot_", "spot" },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strncmp(name, map[i].prefix, strlen(map[i].prefix)))
			return map[i].component;
	return "agent"; /* wakeups, subscriber signals, views, reclaims, watches */
}

static bool component_shown(const struct stats_filter *sf, const char *name)
{
	return !sf->component || !strcmp(sf->component, component_of(name));
}

/*
 * A shallow copy of the rows shown (NULL on no memory): those of --member,
 * the live ones first, then (with --all) the dead ones, each in row order;
 * *@hidden counts the dead rows --all would add. The rows' Spot arrays stay
 * owned by @ms.
 */
static struct member_stats *shown_rows(const struct member_stats *ms, int n,
				       const struct stats_filter *sf, int *k, int *hidden)
{
	struct member_stats *out = calloc(n ? (size_t)n : 1, sizeof(*out));

	*k = 0;
	*hidden = 0;
	for (int pass = 0; out && pass < 2; pass++) {
		for (int i = 0; i < n; i++) {
			if (row_live(&ms[i]) != !pass)
				continue;
			if (sf->member &&
			    !(ms[i].have_member && strlen(sf->member) < sizeof(ms[i].m.name) &&
			      !strncmp(ms[i].m.name, sf->member, sizeof(ms[i].m.name))))
				continue;
			if (pass && !sf->all)
				(*hidden)++;
			else
				out[(*k)++] = ms[i];
		}
	}
	return out;
}

/* @into += @x: counters and histograms (saturating: a corrupt row cannot wrap). */
static void stats_add(struct orbit_fleet_stats *into, const struct orbit_fleet_stats *x)
{
	for (unsigned c = 0; c < ORBIT_STATS_MAX_COUNTERS; c++)
		into->counters[c] = into->counters[c] + x->counters[c] < into->counters[c]
					? UINT64_MAX
					: into->counters[c] + x->counters[c];
	for (unsigned h = 0; h < ORBIT_STATS_MAX_HISTS; h++) {
		struct orbit_stats_histogram *a = &into->hists[h];
		const struct orbit_stats_histogram *b = &x->hists[h];

		a->count = a->count + b->count < a->count ? UINT64_MAX : a->count + b->count;
		a->sum_ns = a->sum_ns + b->sum_ns < a->sum_ns ? UINT64_MAX : a->sum_ns + b->sum_ns;
		for (unsigned i = 0; i < ORBIT_STATS_NBUCKETS; i++)
			a->buckets[i] = a->buckets[i] + b->buckets[i] < a->buckets[i]
					    ? UINT64_MAX
					    : a->buckets[i] + b->buckets[i];
	}
}

/* One block of the table: the counters shown two a line, then the histograms. */
static void print_block(const struct orbit_fleet_stats *s, const struct stats_filter *sf)
{
	unsigned nc = orbit_stats_counter_count(), col = 0, hidden = 0;

	for (unsigned c = 0; c < nc; c++) {
		const char *name = orbit_stats_counter_name(c);

		if (!component_shown(sf, name))
			continue;
		if (!s->counters[c] && !sf->all) {
			hidden++;
			continue;
		}
		/* 2+22+1+14 twice: 78 columns, counts up to 14 digits */
		printf("  %-22s %14llu%s", name, (unsigned long long)s->counters[c],
		       col++ % 2 ? "\n" : "");
	}
	if (col % 2)
		printf("\n");
	if (hidden)
		printf("  (%u counter(s) at 0 not shown; --all shows them)\n", hidden);
	for (unsigned h = 0; h < orbit_stats_hist_count(); h++)
		if (component_shown(sf, orbit_stats_hist_name(h)) && (s->hists[h].count || sf->all))
			hist_line(orbit_stats_hist_name(h), &s->hists[h], 2);
}

/*
 * The table: the rows shown, the live ones first; the total adds the live
 * rows only (a dead row's frozen counters are no part of the fleet now).
 */
static void print_table(const char *fleet, const struct member_stats *ms, int n, int hidden,
			const struct stats_filter *sf)
{
	uint64_t real = now_ns(CLOCK_REALTIME);
	struct orbit_fleet_stats *total = calloc(1, sizeof(*total));
	int live = 0;

	while (live < n && row_live(&ms[live]))
		live++; /* shown_rows() put the live rows first */
	printf("fleet %s: %d stats row(s), %d of live members\n", fleet, n, live);
	if (hidden)
		printf("(%d row(s) of dead members not shown; --all shows them)\n", hidden);
	if (total && live > 1) {
		for (int i = 0; i < live; i++)
			stats_add(total, &ms[i].s);
		printf("\nfleet total of %d live row(s)\n", live);
		print_block(total, sf);
	}
	free(total);
	for (int i = 0; i < n; i++) {
		const struct member_stats *x = &ms[i];
		char name[SHOWN_MAX(ORBIT_FLEET_MEMBER_NAME_MAX)], age[16];

		shown_mid(name, 24, 10, (const uint8_t *)(x->have_member ? x->m.name : "?"),
			  x->have_member ? strnlen(x->m.name, sizeof(x->m.name)) : 1);
		if (x->s.published_real_ns && x->s.published_real_ns <= real)
			duration(age, sizeof(age), real - x->s.published_real_ns);
		else
			strcpy(age, "-");
		printf("\nrow %-3u pid %-7u %-24s %-5s published %s ago\n", x->s.row,
		       x->s.pid % 10000000u, name, row_live(x) ? "alive" : "gone", age);
		print_block(&x->s, sf);
		for (int k = 0; k < x->nspots && component_shown(sf, "spot_"); k++)
			spot_table(&x->spots[k]);
	}
}

static void hist_json(const char *sep, const char *name, const struct orbit_stats_histogram *hh)
{
	printf("%s\"%s\":{\"count\":%llu,\"sum_ns\":%llu,\"p50_le_ns\":%llu,\"p99_le_ns\":%llu,"
	       "\"buckets\":[",
	       sep, name, (unsigned long long)hh->count, (unsigned long long)hh->sum_ns,
	       (unsigned long long)orbit_stats_hist_quantile(hh, 0.50),
	       (unsigned long long)orbit_stats_hist_quantile(hh, 0.99));
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

static void spot_json(const char *sep, const struct spot_slot *sp)
{
	printf("%s\n  {\"slot\":%u,\"spot\":", sep, sp->s.slot);
	json_str(sp->s.spot, sizeof(sp->s.spot));
	printf(",\"role\":\"%s\",\"live\":%s,\"published_real_ns\":%llu,\"counters\":{",
	       role_name(sp->s.role), sp->live ? "true" : "false",
	       (unsigned long long)sp->s.published_real_ns);
	for (unsigned c = 0; c < orbit_stats_spot_counter_count(sp->s.role); c++)
		printf("%s\"%s\":%llu", c ? "," : "", orbit_stats_spot_counter_name(sp->s.role, c),
		       (unsigned long long)sp->s.counters[c]);
	printf("},\"histograms\":{");
	if (sp->s.role == ORBIT_FLEET_SPOT_HOST)
		hist_json("", orbit_stats_spot_hist_name(), &sp->s.latency);
	printf("}}");
}

static void print_json(const char *fleet, const struct member_stats *ms, int n, int hidden,
		       const struct stats_filter *sf)
{
	printf("{\"fleet\":");
	json_str(fleet, strlen(fleet));
	printf(",\"dead_rows_hidden\":%d,\"members\":[", hidden);
	for (int i = 0; i < n; i++) {
		const struct member_stats *x = &ms[i];

		printf("%s\n {\"row\":%u,\"pid\":%u,\"name\":", i ? "," : "", x->s.row, x->s.pid);
		if (x->have_member)
			json_str(x->m.name, sizeof(x->m.name));
		else
			printf("null");
		printf(",\"alive\":%s,\"start_time_ticks\":%llu,\"published_real_ns\":%llu,"
		       "\"counters\":{",
		       row_live(x) ? "true" : "false", (unsigned long long)x->s.start_time_ticks,
		       (unsigned long long)x->s.published_real_ns);
		for (unsigned c = 0, k = 0; c < orbit_stats_counter_count(); c++)
			if (component_shown(sf, orbit_stats_counter_name(c)))
				printf("%s\"%s\":%llu", k++ ? "," : "", orbit_stats_counter_name(c),
				       (unsigned long long)x->s.counters[c]);
		printf("},\"histograms\":{");
		for (unsigned h = 0, k = 0; h < orbit_stats_hist_count(); h++)
			if (component_shown(sf, orbit_stats_hist_name(h)))
				hist_json(k++ ? "," : "", orbit_stats_hist_name(h), &x->s.hists[h]);
		printf("},\"spots\":[");
		for (int k = 0; k < x->nspots && component_shown(sf, "spot_"); k++)
			spot_json(k ? "," : "", &x->spots[k]);
		printf("]}");
	}
	printf("\n]}\n");
}

static void prom_hist(const char *name, const struct orbit_stats_histogram *hh,
		      void (*labels)(const char *, const void *, const char *), const char *fleet,
		      const void *who);
static void member_labels_cb(const char *fleet, const void *who, const char *extra);

/*
 * Prometheus series are named by member and component, not by pid: the
 * rows of one member name (a member restarted under its name, or several
 * processes sharing one) are summed into one series, so a restart does
 * not open a new series. A row without a readable member is "row<N>".
 */
/*
 * One series of the member families: a live member's stats row. A dead
 * member's row (or one whose member row is gone or reused) keeps the
 * counters its writer last published, frozen: it is left out, as its Spot
 * slots are, rather than added to a live row of the same name (whose
 * counters then dropped by the dead row's when the row was reused: a false
 * counter reset, and gauges counted twice). A member restarted under its
 * name keeps its labels, and its counters restart from 0: a counter reset
 * rate() knows. A second live row of the same name gets row="N".
 */
struct prom_member {
	char name[ORBIT_FLEET_MEMBER_NAME_MAX + 1];
	const char *component; /* of the family being printed */
	const struct orbit_fleet_stats *s;
	bool dup; /* same name as an earlier live row: add row="N" */
};

static int prom_group(const struct member_stats *ms, int n, struct prom_member *g)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		if (!row_live(&ms[i]))
			continue;
		memset(&g[k], 0, sizeof(g[k]));
		snprintf(g[k].name, sizeof(g[k].name), "%.*s", (int)sizeof(ms[i].m.name),
			 ms[i].m.name);
		g[k].s = &ms[i].s;
		for (int j = 0; j < k && !g[k].dup; j++)
			g[k].dup = !strcmp(g[j].name, g[k].name);
		k++;
	}
	return k;
}

static void prom_labels(const char *fleet, const struct prom_member *g, const char *extra)
{
	printf("{fleet=");
	json_str(fleet, strlen(fleet)); /* same escapes: \\ \" and no raw newline */
	printf(",member=");
	json_str(g->name, strlen(g->name));
	printf(",component=\"%s\"", g->component);
	if (g->dup)
		printf(",row=\"%u\"", g->s->row);
	printf("%s}", extra ? extra : "");
}

static int print_prom(const char *fleet, const struct member_stats *ms, int n,
		      const struct stats_filter *sf)
{
	struct prom_member *g = calloc(n ? (size_t)n : 1, sizeof(*g));
	int ng;

	if (!g)
		return -ENOMEM;
	ng = prom_group(ms, n, g);
	for (unsigned c = 0; c < orbit_stats_counter_count(); c++) {
		const char *cname = orbit_stats_counter_name(c);
		bool gauge = orbit_stats_counter_is_gauge(c);
		const char *suffix = gauge ? "" : "_total";

		if (!component_shown(sf, cname))
			continue;
		printf("# HELP orbit_%s%s %s\n", cname, suffix, orbit_stats_counter_help(c));
		printf("# TYPE orbit_%s%s %s\n", cname, suffix, gauge ? "gauge" : "counter");
		for (int i = 0; i < ng; i++) {
			g[i].component = component_of(cname);
			printf("orbit_%s%s", cname, suffix);
			prom_labels(fleet, &g[i], NULL);
			printf(" %llu\n", (unsigned long long)g[i].s->counters[c]);
		}
	}
	for (unsigned h = 0; h < orbit_stats_hist_count(); h++) {
		char fam[96];

		if (!component_shown(sf, orbit_stats_hist_name(h)))
			continue;
		snprintf(fam, sizeof(fam), "orbit_%s_seconds", orbit_stats_hist_name(h));
		printf("# HELP %s %s\n", fam, orbit_stats_hist_help(h));
		printf("# TYPE %s histogram\n", fam);
		for (int i = 0; i < ng; i++) {
			g[i].component = component_of(orbit_stats_hist_name(h));
			prom_hist(fam, &g[i].s->hists[h], member_labels_cb, fleet, &g[i]);
		}
	}
	free(g);
	return 0;
}

/* A live Spot slot for Prometheus, and whether its labels repeat an earlier one's. */
struct prom_spot {
	const struct member_stats *x;
	const struct spot_slot *sp;
	bool dup; /* same member name, Spot and role as an earlier one: add row="N" */
};

static int prom_spots_list(const struct member_stats *ms, int n, struct prom_spot **out)
{
	struct prom_spot *ps = calloc((size_t)n * ORBIT_FLEET_SPOT_SLOTS + 1, sizeof(*ps));
	int k = 0;

	if (!ps)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < ms[i].nspots; j++) {
			const struct spot_slot *sp = &ms[i].spots[j];

			/* a dead member's slot keeps old values: not a live series */
			if (!sp->live)
				continue;
			ps[k].x = &ms[i];
			ps[k].sp = sp;
			for (int e = 0; e < k && !ps[k].dup; e++)
				ps[k].dup = ps[e].sp->s.role == sp->s.role &&
					    !strcmp(ps[e].sp->s.spot, sp->s.spot) &&
					    !strncmp(ps[e].x->m.name, ms[i].m.name,
						     sizeof(ms[i].m.name));
			k++;
		}
	}
	*out = ps;
	return k;
}

/* {fleet=..,member=..,spot=..[,row=..]EXTRA}: no pid, it changes at every restart. */
static void prom_spot_labels(const char *fleet, const struct prom_spot *p, const char *extra)
{
	printf("{fleet=");
	json_str(fleet, strlen(fleet));
	printf(",member=");
	json_str(p->x->m.name, sizeof(p->x->m.name));
	printf(",spot=");
	json_str(p->sp->s.spot, sizeof(p->sp->s.spot));
	if (p->dup)
		printf(",row=\"%u\"", p->sp->s.row);
	printf("%s}", extra ? extra : "");
}

static void prom_hist(const char *name, const struct orbit_stats_histogram *hh,
		      void (*labels)(const char *, const void *, const char *), const char *fleet,
		      const void *who)
{
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
		printf("%s_bucket", name);
		labels(fleet, who, extra);
		printf(" %llu\n", (unsigned long long)acc);
	}
	printf("%s_sum", name);
	labels(fleet, who, NULL);
	printf(" %.9f\n", hh->sum_ns / 1e9);
	printf("%s_count", name);
	labels(fleet, who, NULL);
	printf(" %llu\n", (unsigned long long)acc);
}

static void member_labels_cb(const char *fleet, const void *who, const char *extra)
{
	prom_labels(fleet, who, extra); /* who: a struct prom_member */
}

static void spot_labels_cb(const char *fleet, const void *who, const char *extra)
{
	prom_spot_labels(fleet, who, extra);
}

/* The Spot hosts' and clients' families: orbit_spot_host_*, orbit_spot_client_*. */
static int print_prom_spots(const char *fleet, const struct member_stats *ms, int n)
{
	static const enum orbit_fleet_spot_role roles[] = { ORBIT_FLEET_SPOT_HOST,
							    ORBIT_FLEET_SPOT_CLIENT };
	struct prom_spot *ps = NULL;
	int k = prom_spots_list(ms, n, &ps);
	char fam[128];

	if (k < 0)
		return k;
	for (size_t r = 0; r < sizeof(roles) / sizeof(roles[0]); r++) {
		for (unsigned c = 0; c < orbit_stats_spot_counter_count(roles[r]); c++) {
			bool gauge = orbit_stats_spot_counter_is_gauge(roles[r], c);

			snprintf(fam, sizeof(fam), "orbit_spot_%s_%s%s", role_name(roles[r]),
				 orbit_stats_spot_counter_name(roles[r], c), gauge ? "" : "_total");
			printf("# HELP %s Spot %s: %s\n", fam, role_name(roles[r]),
			       orbit_stats_spot_counter_help(roles[r], c));
			printf("# TYPE %s %s\n", fam, gauge ? "gauge" : "counter");
			for (int i = 0; i < k; i++) {
				if (ps[i].sp->s.role != roles[r])
					continue;
				printf("%s", fam);
				prom_spot_labels(fleet, &ps[i], NULL);
				printf(" %llu\n", (unsigned long long)ps[i].sp->s.counters[c]);
			}
		}
	}
	snprintf(fam, sizeof(fam), "orbit_spot_%s_seconds", orbit_stats_spot_hist_name());
	printf("# HELP %s %s\n", fam, orbit_stats_spot_hist_help());
	printf("# TYPE %s histogram\n", fam);
	for (int i = 0; i < k; i++)
		if (ps[i].sp->s.role == ORBIT_FLEET_SPOT_HOST)
			prom_hist(fam, &ps[i].sp->s.latency, spot_labels_cb, fleet, &ps[i]);
	free(ps);
	return 0;
}

static int cmd_stats(orbit_fleet_t *f, enum stats_fmt fmt, const struct stats_filter *sf)
{
	struct member_stats *ms = NULL, *shown;
	int n = collect(f, &ms), rc = 0, k, hidden;

	if (n < 0)
		return fail("reading stats", orbit_fleet_name(f), n);
	shown = shown_rows(ms, n, sf, &k, &hidden);
	if (!shown) {
		rc = -ENOMEM;
	} else if (fmt == FMT_JSON) {
		print_json(orbit_fleet_name(f), shown, k, hidden, sf);
	} else if (fmt == FMT_PROM) {
		rc = print_prom(orbit_fleet_name(f), shown, k, sf);
		if (!rc && component_shown(sf, "spot_"))
			rc = print_prom_spots(orbit_fleet_name(f), shown, k);
	} else {
		print_table(orbit_fleet_name(f), shown, k, hidden, sf);
	}
	free(shown);
	free_stats(ms, n);
	return rc < 0 ? fail("reading stats", orbit_fleet_name(f), rc) : EXIT_OK;
}

/* ---- administration ---- */

/* The value of a hex digit, or -1. */
static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Decode @n characters of @s, the notation shown() prints (\xHH for a byte,
 * a backslash only so), into @out. Returns the byte count, or -1 on a
 * backslash that does not start \xHH.
 */
static long unescape(uint8_t *out, const char *s, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\\') {
			out[o++] = (uint8_t)s[i];
			continue;
		}
		if (i + 3 >= n || s[i + 1] != 'x' || hex_digit(s[i + 2]) < 0 ||
		    hex_digit(s[i + 3]) < 0)
			return -1;
		out[o++] = (uint8_t)(hex_digit(s[i + 2]) << 4 | hex_digit(s[i + 3]));
		i += 3;
	}
	return (long)o;
}

/*
 * NAMESPACE:LABEL as locks prints it: the namespace ends at the first
 * colon (a colon inside it is \x3a), and \xHH is any byte (NUL, \x5c
 * for a backslash). @buf holds the decoded bytes (as long as @arg); @key
 * points into it. Returns EXIT_OK, or EXIT_USAGE with the message printed.
 */
static int parse_key(const char *arg, uint8_t *buf, orbit_lock_key_t *key)
{
	const char *colon = strchr(arg, ':');
	long ns, label;

	if (!colon) {
		fprintf(stderr, "%s: KEY is NAMESPACE:LABEL, not '%s'\n", prog, arg);
		return EXIT_USAGE;
	}
	ns = unescape(buf, arg, (size_t)(colon - arg));
	label = ns < 0 ? -1 : unescape(buf + ns, colon + 1, strlen(colon + 1));
	if (ns < 0 || label < 0) {
		fprintf(stderr,
			"%s: bad escape in key '%s': a backslash starts \\xHH (two hex digits: "
			"\\x5c is a backslash, \\x3a a colon of the namespace, \\x00 a NUL), "
			"as '%s locks' prints it\n",
			prog, arg, prog);
		return EXIT_USAGE;
	}
	if (label == 0) {
		fprintf(stderr, "%s: key '%s' has an empty label: no lock has one\n", prog, arg);
		return EXIT_USAGE;
	}
	if ((size_t)(ns + label) > ORBIT_LOCK_BYTES_MAX) {
		fprintf(stderr, "%s: key '%s' is %ld bytes: no lock's key is over %u\n", prog, arg,
			ns + label, ORBIT_LOCK_BYTES_MAX);
		return EXIT_USAGE;
	}
	key->ns = buf;
	key->ns_len = (size_t)ns;
	key->label = buf + ns;
	key->label_len = (size_t)label;
	return EXIT_OK;
}

static int cmd_force_release(orbit_lock_t *lock, const char *name, const char *arg)
{
	uint8_t *buf = malloc(strlen(arg) + 1);
	orbit_lock_key_t key;
	int rc;

	if (!buf)
		return fail("force-release", name, -ENOMEM);
	rc = parse_key(arg, buf, &key);
	if (rc != EXIT_OK) {
		free(buf);
		return rc;
	}
	if (!lock) {
		free(buf);
		fprintf(stderr, "%s: fleet %s has no lock table\n", prog, name);
		return EXIT_NOFLEET;
	}
	rc = orbit_lock_force_release(lock, &key);
	free(buf);
	if (rc == -ENOENT) {
		fprintf(stderr, "%s: %s is not held\n", prog, arg);
		return EXIT_NOTHELD;
	}
	if (rc < 0)
		return fail("force-release", name, rc);
	printf("released %s\n", arg);
	return EXIT_OK;
}

static int cmd_reset(orbit_fleet_t *f)
{
	int rc = orbit_fleet_reset_transport(f);

	if (rc == -EBUSY) {
		fprintf(stderr,
			"%s: reset refused: a live member or lease holder (see '%s members',"
			" '%s locks')\n",
			prog, prog, prog);
		return EXIT_REFUSED;
	}
	if (rc < 0)
		return fail("reset", orbit_fleet_name(f), rc);
	printf("fleet %s: lock table and transition rings cleared\n", orbit_fleet_name(f));
	return EXIT_OK;
}

/* ---- spots ---- */

struct spots_ctx {
	bool json;
	int n, bad;
	uint32_t slots_unread; /* the walk's host_slots_unread (the same for every Spot) */
};

static void bytes_str(char *out, size_t len, uint64_t b)
{
	if (b < 10000)
		snprintf(out, len, "%llu", (unsigned long long)b);
	else if (b < 10000ull * 1024)
		snprintf(out, len, "%lluK", (unsigned long long)(b / 1024));
	else
		snprintf(out, len, "%lluM", (unsigned long long)(b >> 20));
}

static int print_spot(const struct orbit_fleet_spot *sp, void *p)
{
	struct spots_ctx *c = p;
	const struct orbit_fleet_spot_lane *a = &sp->lanes[0], *l = &sp->lanes[1];
	char name[SHOWN_MAX(48)], epoch[24], bytes[16];

	c->slots_unread = sp->host_slots_unread;
	if (c->json) {
		printf("%s\n {\"spot\":", c->n ? "," : "");
		json_str(sp->name, sizeof(sp->name));
		printf(",\"error\":");
		if (sp->error)
			printf("\"%s\"", orbit_err_name(sp->error));
		else
			printf("null");
		printf(",\"host_pid\":%u,\"host_alive\":%s,\"epoch\":%llu,\"takeovers\":%llu,"
		       "\"shm_bytes\":%llu,\"lanes\":{",
		       sp->host_pid,
		       sp->host_alive > 0    ? "true"
		       : sp->host_alive == 0 ? "false"
					     : "null",
		       (unsigned long long)sp->epoch, (unsigned long long)sp->takeovers,
		       (unsigned long long)sp->shm_bytes);
		for (int i = 0; i < 2; i++) {
			const struct orbit_fleet_spot_lane *x = &sp->lanes[i];

			printf(
			    "%s\"%s\":{\"depth\":%u,\"bytes\":%u,\"item_cap\":%u,\"byte_cap\":%u,"
			    "\"accepted\":%llu,\"rejected_count\":%llu,\"rejected_bytes\":%llu,"
			    "\"aborted\":%llu,\"redelivered\":%llu,\"corrupt\":%llu,\"completed\":%"
			    "llu}",
			    i ? "," : "", i ? "lifecycle" : "application", x->depth, x->bytes,
			    x->item_cap, x->byte_cap, (unsigned long long)x->accepted,
			    (unsigned long long)x->rejected_count,
			    (unsigned long long)x->rejected_bytes, (unsigned long long)x->aborted,
			    (unsigned long long)x->redelivered, (unsigned long long)x->corrupt,
			    (unsigned long long)x->completed);
		}
		printf("},\"host_stats\":");
		if (sp->have_host_stats) {
			printf("{\"member\":");
			json_str(sp->host_member, sizeof(sp->host_member));
			printf(",\"row\":%u,\"epoch\":%llu,\"in_flight\":%llu,\"submit_to_run\":"
			       "{\"count\":%llu,\"p50_le_ns\":%llu,\"p99_le_ns\":%llu,"
			       "\"max_ns\":%llu}}",
			       sp->host_row, (unsigned long long)sp->host_epoch,
			       (unsigned long long)sp->in_flight,
			       (unsigned long long)sp->latency_count,
			       (unsigned long long)sp->latency_p50_ns,
			       (unsigned long long)sp->latency_p99_ns,
			       (unsigned long long)sp->latency_max_ns);
		} else {
			printf("null");
		}
		printf(",\"host_slots_unread\":%u}", sp->host_slots_unread);
		c->n++;
		return 0;
	}
	shown_mid(name, 14, 6, (const uint8_t *)sp->name, strnlen(sp->name, sizeof(sp->name)));
	if (sp->error) {
		printf("%-14s %s\n", name, orbit_strerror(sp->error));
		c->n++;
		c->bad++;
		return 0;
	}
	if (sp->epoch < 10000000ull)
		snprintf(epoch, sizeof(epoch), "%llu", (unsigned long long)sp->epoch);
	else
		snprintf(epoch, sizeof(epoch), "~%06llu",
			 (unsigned long long)(sp->epoch % 1000000ull));
	bytes_str(bytes, sizeof(bytes), (uint64_t)a->bytes + l->bytes);
	/* 14+1+7+1+3+1+8+1+6+1+6+1+9+1+6+1+5+1+6 = 79 */
	printf("%-14s %7u %-3s %8s %6u %6s %9llu %6llu %5llu %6llu\n", name,
	       sp->host_pid % 10000000u,
	       sp->host_alive > 0    ? "yes"
	       : sp->host_alive == 0 ? "no"
				     : "?",
	       epoch, a->depth + l->depth, bytes, (unsigned long long)(a->accepted + l->accepted),
	       (unsigned long long)(a->rejected_count + a->rejected_bytes + l->rejected_count +
				    l->rejected_bytes),
	       (unsigned long long)(a->aborted + l->aborted),
	       (unsigned long long)(a->redelivered + l->redelivered));
	if (sp->have_host_stats && sp->latency_count) {
		char p50[16], p99[16], max[16];

		duration(p50, sizeof(p50), sp->latency_p50_ns);
		duration(p99, sizeof(p99), sp->latency_p99_ns);
		duration(max, sizeof(max), sp->latency_max_ns);
		/* 14+10+7+6+7+5+7+3 = 59 before n with durations of up to 7 characters
		 * ("999.9ms", "3599.9s"): 80 columns while n has up to 21 digits */
		printf("%-14s run p50<=%-7s p99<=%-7s max %-7s n %llu\n", "", p50, p99, max,
		       (unsigned long long)sp->latency_count);
	}
	if (a->corrupt + l->corrupt)
		printf("%-14s corrupt records skipped: %llu\n", "",
		       (unsigned long long)(a->corrupt + l->corrupt));
	c->n++;
	return 0;
}

static int cmd_spots(orbit_fleet_t *f, bool json)
{
	struct spots_ctx c = { json, 0, 0, 0 };
	int rc;

	if (json) {
		printf("{\"fleet\":");
		json_str(orbit_fleet_name(f), ORBIT_FLEET_NAME_MAX);
		printf(",\"spots\":[");
	} else {
		printf("%-14s %7s %-3s %8s %6s %6s %9s %6s %5s %6s\n", "SPOT", "PID", "UP", "EPOCH",
		       "DEPTH", "BYTES", "ACCEPTED", "REJECT", "ABORT", "REDEL");
	}
	rc = orbit_fleet_spots(f, print_spot, &c);
	if (json)
		printf("\n]}\n");
	if (c.slots_unread)
		fprintf(stderr,
			"orbitctl: %u Spot stats slot(s) not read (their writer kept them "
			"changing or left them mid-publish, or they fail validation): a "
			"Spot's run line may be missing; orbitctl stats names them\n",
			c.slots_unread);
	if (rc < 0)
		return fail("listing Spot queues", orbit_fleet_name(f), rc);
	if (!json)
		printf("%d Spot(s)%s\n", c.n, c.bad ? "; some unreadable" : "");
	return c.bad ? EXIT_CORRUPT : EXIT_OK;
}

/* ---- fleets ---- */

struct fleet_row {
	char name[ORBIT_FLEET_NAME_MAX + 1];
	unsigned segments;
	uint64_t bytes;
};

static int by_fleet_name(const void *a, const void *b)
{
	return strcmp(((const struct fleet_row *)a)->name, ((const struct fleet_row *)b)->name);
}

/* Members alive and rows of @name; -errno when the fleet does not open. */
static int fleet_alive(const char *name, const struct orbit_fleet_options *perm, uint32_t *rows_out)
{
	struct orbit_fleet_options fo = { .size = sizeof(fo),
					  .fleet = name,
					  .mode = perm->mode,
					  .gid = perm->gid,
					  .owner_uid = perm->owner_uid };
	struct orbit_fleet_member m;
	orbit_fleet_t *f;
	int rc = orbit_fleet_open(&fo, &f), alive = 0;

	*rows_out = 0;
	if (rc < 0)
		return rc;
	*rows_out = orbit_fleet_rows(f);
	for (uint32_t r = 0; r < *rows_out; r++)
		alive += orbit_fleet_member(f, r, &m) == 0 && m.alive;
	orbit_fleet_close(f);
	return alive;
}

static int cmd_fleets(bool json, const struct orbit_fleet_options *perm)
{
	struct fleet_row *rows = NULL;
	size_t n = 0, cap = 0;
	struct dirent *d;
	DIR *dir = opendir(SHM_DIR);

	if (!dir) {
		fprintf(stderr, "%s: cannot list %s: %s\n", prog, SHM_DIR, strerror(errno));
		return EXIT_ERROR;
	}
	while ((d = readdir(dir))) {
		const char *fleet = d->d_name + 6, *dot;
		struct stat st;
		size_t i, len;

		if (strncmp(d->d_name, "orbit.", 6) || !(dot = strchr(fleet, '.')))
			continue;
		len = (size_t)(dot - fleet);
		if (len == 0 || len > ORBIT_FLEET_NAME_MAX)
			continue;
		for (i = 0; i < n; i++)
			if (strlen(rows[i].name) == len && !memcmp(rows[i].name, fleet, len))
				break;
		if (i == n) {
			if (n == cap) {
				struct fleet_row *g = realloc(rows, (cap = cap ? 2 * cap : 16) *
									sizeof(*g));

				if (!g) {
					closedir(dir);
					free(rows);
					return fail("listing fleets", SHM_DIR, -ENOMEM);
				}
				rows = g;
			}
			memset(&rows[n], 0, sizeof(rows[n]));
			memcpy(rows[n].name, fleet, len);
			n++;
		}
		rows[i].segments++;
		/* lstat: never follow a link someone left under an orbit name */
		if (fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			rows[i].bytes += (uint64_t)st.st_size;
	}
	closedir(dir);
	qsort(rows, n, sizeof(*rows), by_fleet_name);
	if (json)
		printf("{\"fleets\":[");
	else
		/* ROWS: the member directory's rows (its capacity); ALIVE: members alive */
		printf("%-24s %8s %12s %7s %5s %s\n", "FLEET", "SEGMENTS", "BYTES", "ROWS", "ALIVE",
		       "STATUS");
	for (size_t i = 0; i < n; i++) {
		uint32_t nrows;
		int alive = fleet_alive(rows[i].name, perm, &nrows);
		char name[SHOWN_MAX(ORBIT_FLEET_NAME_MAX)];

		if (json) {
			printf("%s\n {\"fleet\":", i ? "," : "");
			json_str(rows[i].name, sizeof(rows[i].name));
			printf(",\"segments\":%u,\"bytes\":%llu,\"member_rows\":%u,\"alive\":",
			       rows[i].segments, (unsigned long long)rows[i].bytes, nrows);
			if (alive < 0)
				printf("null,\"error\":\"%s\"}", orbit_err_name(alive));
			else
				printf("%d,\"error\":null}", alive);
			continue;
		}
		shown_mid(name, 24, 10, (const uint8_t *)rows[i].name, strlen(rows[i].name));
		if (alive < 0) { /* not opened: neither count is known */
			printf("%-24s %8u %12llu %7s %5s %s\n", name, rows[i].segments,
			       (unsigned long long)rows[i].bytes, "-", "-", orbit_err_name(alive));
			continue;
		}
		printf("%-24s %8u %12llu %7u %5d %s\n", name, rows[i].segments,
		       (unsigned long long)rows[i].bytes, nrows, alive,
		       alive ? "in use" : "unused");
	}
	if (json)
		printf("\n]}\n");
	else
		printf("%zu fleet(s) in %s\n", n, SHM_DIR);
	free(rows);
	return EXIT_OK;
}

/* ---- unlink ---- */

static int cmd_unlink(const struct orbit_fleet_options *fo)
{
	const char *fleet = fo->fleet;
	int rc = orbit_fleet_unlink_with(fo);

	if (rc == -EBUSY) {
		fprintf(stderr,
			"%s: unlink refused: fleet %s has a live member (see '%s members')\n", prog,
			fleet, prog);
		return EXIT_REFUSED;
	}
	if (rc == -ENOENT) {
		fprintf(stderr, "%s: no such fleet: %s\n", prog, fleet);
		return EXIT_NOFLEET;
	}
	if (rc == -EACCES) {
		fprintf(stderr,
			"%s: unlink refused: some of fleet %s's segments belong to another"
			" user; nothing removed (only their owner or root removes them)\n",
			prog, fleet);
		return EXIT_REFUSED;
	}
	if (rc < 0)
		return fail("unlink", fleet, rc);
	printf("fleet %s: segments removed\n", fleet);
	return EXIT_OK;
}

/* ---- top ---- */

struct top_lock_ctx {
	int held, alive_holders;
};

static int top_count_lock(const struct orbit_lock_entry *e, void *p)
{
	struct top_lock_ctx *c = p;
	uint64_t mono = now_ns(CLOCK_MONOTONIC);

	if (e->expired || e->deadline_ns <= mono)
		return 0;
	c->held++;
	c->alive_holders += orbit_lock_holder_alive(e) > 0;
	return 0;
}

/* The id of the counter named @name (the public API names counters), or -1. */
static int counter_id(const char *name)
{
	for (unsigned c = 0; c < orbit_stats_counter_count(); c++)
		if (!strcmp(orbit_stats_counter_name(c), name))
			return (int)c;
	return -1;
}

static uint64_t counter_of(const struct member_stats *x, const char *name)
{
	int c = counter_id(name);

	return c < 0 ? 0 : x->s.counters[c];
}

/* The fleet's counters (rates are per fleet): live rows only, as the stats total. */
static void top_sum(const struct member_stats *ms, int n, uint64_t *sum)
{
	memset(sum, 0, orbit_stats_counter_count() * sizeof(*sum));
	for (int i = 0; i < n; i++) {
		if (!row_live(&ms[i]))
			continue; /* a dead member's frozen counters are not the fleet's now */
		for (unsigned c = 0; c < orbit_stats_counter_count(); c++)
			sum[c] += ms[i].s.counters[c];
	}
}

/* The fleet's Spot queues as orbit_fleet_spots() reads them, for one frame. */
struct top_spots {
	struct orbit_fleet_spot *v;
	size_t n, cap;
};

static int top_add_spot(const struct orbit_fleet_spot *sp, void *p)
{
	struct top_spots *t = p;

	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		struct orbit_fleet_spot *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = *sp;
	return 0;
}

static uint64_t spot_depth(const struct orbit_fleet_spot *sp)
{
	return (uint64_t)sp->lanes[0].depth + sp->lanes[1].depth;
}

/* Deepest queue first (what top is for), then by name; unreadable ones last. */
static int by_depth(const void *a, const void *b)
{
	const struct orbit_fleet_spot *x = a, *y = b;

	if (!x->error != !y->error)
		return x->error ? 1 : -1;
	if (spot_depth(x) != spot_depth(y))
		return spot_depth(x) < spot_depth(y) ? 1 : -1;
	return strncmp(x->name, y->name, sizeof(x->name));
}

/* The terminal's height, or 0 when stdout is not a terminal (a pipe shows every line). */
static int top_screen_rows(void)
{
	struct winsize ws;

	if (!isatty(STDOUT_FILENO) || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0)
		return 0;
	return ws.ws_row;
}

/*
 * The Spot queues, deepest first: records and payload bytes reserved now in
 * each lane (application, lifecycle), as orbitctl spots counts them, with
 * the last host's pid and whether a live process holds the hosting lease.
 * As many as the screen has rows for below @line; when they do not all
 * fit, the last of those rows counts the rest. A pipe gets every queue.
 */
static void top_spots_section(orbit_fleet_t *f, int line)
{
	struct top_spots t = { NULL, 0, 0 };
	int rc = orbit_fleet_spots(f, top_add_spot, &t), rows = top_screen_rows();
	size_t room = t.n;

	/* 20+1+7+1+3+4*(1+10) = 76 columns */
	printf("\n%-20s %7s %-3s %10s %10s %10s %10s\n", "SPOT", "HOST", "UP", "APP DEPTH",
	       "APP BYTES", "LIFE DEPTH", "LIFE BYTES");
	line += 2;
	if (rc < 0)
		printf("Spot queues unreadable: %s\n", orbit_strerror(rc));
	else if (t.n == 0)
		printf("no Spot queues\n");
	if (rows > 0) {
		/* keep the last row free: the cursor's line would scroll the screen */
		int fit = rows - 1 - line;

		fit = fit < 1 ? 1 : fit;
		if (room > (size_t)fit)
			room = (size_t)fit - 1; /* and one row says how many more */
	}
	if (t.n)
		qsort(t.v, t.n, sizeof(*t.v), by_depth);
	for (size_t i = 0; i < room; i++) {
		const struct orbit_fleet_spot *sp = &t.v[i];
		char name[SHOWN_MAX(sizeof(sp->name))], ab[16], lb[16];

		shown_mid(name, 20, 8, (const uint8_t *)sp->name,
			  strnlen(sp->name, sizeof(sp->name)));
		if (sp->error) {
			printf("%-20s %.59s\n", name, orbit_strerror(sp->error));
			continue;
		}
		bytes_str(ab, sizeof(ab), sp->lanes[0].bytes);
		bytes_str(lb, sizeof(lb), sp->lanes[1].bytes);
		printf("%-20s %7u %-3s %10u %10s %10u %10s\n", name, sp->host_pid % 10000000u,
		       sp->host_alive > 0    ? "yes"
		       : sp->host_alive == 0 ? "no"
					     : "?",
		       sp->lanes[0].depth, ab, sp->lanes[1].depth, lb);
	}
	if (room < t.n)
		printf("... %zu more Spot queue(s): orbitctl spots lists them all\n", t.n - room);
	free(t.v);
}

static struct termios top_saved;
static bool top_raw;
/* stdout is a terminal: screen controls; else plain frames, a blank line between */
static bool top_tty;

static void top_restore(void)
{
	if (top_raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &top_saved);
	top_raw = false;
	if (top_tty)
		printf("\033[?25h"); /* cursor back */
}

static void top_frame(orbit_fleet_t *f, const uint64_t *prev, uint64_t *cur, double secs,
		      bool have_prev)
{
	struct member_stats *ms = NULL;
	struct orbit_fleet_member m;
	struct top_lock_ctx lc = { 0, 0 };
	orbit_lock_t *lock = orbit_fleet_lock(f);
	uint32_t rows = orbit_fleet_rows(f);
	uint64_t mono = now_ns(CLOCK_MONOTONIC), real = now_ns(CLOCK_REALTIME);
	int n = collect(f, &ms), alive = 0, shown_members = 0, line = 0;
	char t[24], name[SHOWN_MAX(ORBIT_FLEET_NAME_MAX)];

	frame_time(t, sizeof(t), mono, mono, real);
	for (uint32_t r = 0; r < rows; r++)
		alive += orbit_fleet_member(f, r, &m) == 0 && m.alive;
	if (lock)
		orbit_lock_foreach(lock, top_count_lock, &lc);
	shown_mid(name, 24, 10, (const uint8_t *)orbit_fleet_name(f), strlen(orbit_fleet_name(f)));
	if (top_tty)
		printf("\033[H\033[2J"); /* home, clear: the frame replaces the last */
	else if (have_prev)
		printf("\n"); /* a pipe: the frames one after the other */
	printf("orbit top  fleet %-24s %s  (q quits)\n", name, t);
	printf("members %u alive of %u rows   locks held %d (holder alive %d)   revision %llu\n",
	       alive, rows, lc.held, lc.alive_holders,
	       lock ? (unsigned long long)orbit_lock_state_revision(lock) : 0ull);
	line += 2;
	printf("\n%-3s %-7s %-24s %-5s %-14s %-14s\n", "ROW", "PID", "MEMBER", "ALIVE", "LOCK OPS",
	       "FRAMES READ");
	line += 2;
	for (uint32_t r = 0; r < rows && shown_members < 8; r++) {
		char mn[SHOWN_MAX(ORBIT_FLEET_MEMBER_NAME_MAX)];
		unsigned long long ops = 0, frames = 0;

		if (orbit_fleet_member(f, r, &m) < 0)
			continue;
		for (int i = 0; i < (n < 0 ? 0 : n); i++)
			if (ms[i].s.row == r && ms[i].have_member) {
				ops = counter_of(&ms[i], "lock_acquired") +
				      counter_of(&ms[i], "lock_busy") +
				      counter_of(&ms[i], "lock_released");
				frames = counter_of(&ms[i], "frames_read");
			}
		shown_mid(mn, 24, 10, (const uint8_t *)m.name, strnlen(m.name, sizeof(m.name)));
		printf("%-3u %-7u %-24s %-5s %-14llu %-14llu\n", r, m.pid % 10000000u, mn,
		       m.alive ? "yes" : "no", ops, frames);
		shown_members++;
		line++;
	}
	/* Rates: the busiest counters since the previous frame, fleet-wide. */
	if (n >= 0)
		top_sum(ms, n, cur);
	printf("\n%-24s %12s   %-24s %12s\n", "COUNTER", "PER SECOND", "COUNTER", "PER SECOND");
	line += 2;
	{
		unsigned nc = orbit_stats_counter_count(), shown = 0;
		bool used[256] = { false };

		for (; shown < 8 && shown < nc; shown++) {
			unsigned best = nc;
			double best_rate = -1;

			for (unsigned c = 0; c < nc && c < 256; c++) {
				double rate;

				if (used[c] || orbit_stats_counter_is_gauge(c))
					continue;
				rate = have_prev && secs > 0 && cur[c] >= prev[c]
					   ? (double)(cur[c] - prev[c]) / secs
					   : 0;
				if (rate > best_rate) {
					best_rate = rate;
					best = c;
				}
			}
			if (best == nc)
				break;
			used[best] = true;
			printf("%-24s %12.0f%s", orbit_stats_counter_name(best), best_rate,
			       shown % 2 ? "\n" : "   ");
		}
		if (shown % 2)
			printf("\n");
		line += (int)(shown + 1) / 2;
	}
	printf("\n%-24s %10s %10s %10s\n", "LATENCY", "N", "P50 <=", "P99 <=");
	line += 2;
	for (unsigned h = 0; h < orbit_stats_hist_count(); h++) {
		struct orbit_stats_histogram sum;
		char p50[16] = "-", p99[16] = "-";

		memset(&sum, 0, sizeof(sum));
		for (int i = 0; i < (n < 0 ? 0 : n); i++) {
			if (!row_live(&ms[i]))
				continue; /* a dead member's frozen histogram is not the fleet's now */
			sum.count += ms[i].s.hists[h].count;
			for (unsigned b = 0; b < ORBIT_STATS_NBUCKETS; b++)
				sum.buckets[b] += ms[i].s.hists[h].buckets[b];
		}
		if (sum.count) {
			duration(p50, sizeof(p50), orbit_stats_hist_quantile(&sum, 0.50));
			duration(p99, sizeof(p99), orbit_stats_hist_quantile(&sum, 0.99));
		}
		printf("%-24s %10llu %10s %10s\n", orbit_stats_hist_name(h),
		       (unsigned long long)sum.count, p50, p99);
		line++;
	}
	top_spots_section(f, line);
	fflush(stdout);
	free_stats(ms, n < 0 ? 0 : n);
}

static int cmd_top(orbit_fleet_t *f, long interval_ms, long iterations)
{
	unsigned nc = orbit_stats_counter_count();
	uint64_t *prev = calloc(nc, sizeof(*prev)), *cur = calloc(nc, sizeof(*cur));
	uint64_t last = 0;
	struct sigaction sa;
	long frames = 0;

	if (!prev || !cur) {
		free(prev);
		free(cur);
		return fail("top", orbit_fleet_name(f), -ENOMEM);
	}
	if (interval_ms <= 0)
		interval_ms = 1000;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &top_saved) == 0) {
		struct termios raw = top_saved;

		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		top_raw = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
	}
	top_tty = isatty(STDOUT_FILENO);
	if (top_tty)
		printf("\033[?25l"); /* no cursor while the screen refreshes */
	while (!interrupted && (iterations <= 0 || frames < iterations)) {
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		uint64_t *swap;

		top_frame(f, prev, cur, last ? (double)(now - last) / 1e9 : 0, last != 0);
		swap = prev;
		prev = cur;
		cur = swap;
		last = now;
		frames++;
		if (iterations > 0 && frames >= iterations)
			break;
		/* Sleep a frame, or until a key: q (or Q) quits, others redraw. */
		if (poll(&pfd, top_raw ? 1 : 0, (int)interval_ms) > 0 && (pfd.revents & POLLIN)) {
			char c = 0;

			if (read(STDIN_FILENO, &c, 1) == 1 && (c == 'q' || c == 'Q'))
				break;
		}
	}
	top_restore();
	free(prev);
	free(cur);
	return EXIT_OK;
}

static int parse_long(const char *s, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return errno || !*s || *end || *out < 0 ? -1 : 0;
}

/* What each command accepts; an option outside its command is refused by name. */
enum opt_bit {
	OPT_WIDE = 1 << 0,
	OPT_REPLAY = 1 << 1,
	OPT_COUNT = 1 << 2,
	OPT_TIMEOUT = 1 << 3,
	OPT_PROM = 1 << 4,
	OPT_JSON = 1 << 5,
	OPT_INTERVAL = 1 << 6,
	OPT_ITERATIONS = 1 << 7,
	OPT_MEMBER = 1 << 8,
	OPT_COMPONENT = 1 << 9,
	OPT_ALL = 1 << 10,
};

static const struct command {
	const char *name;
	unsigned opts;
	bool key;   /* takes NS:LABEL */
	bool admin; /* opens read-write */
} commands[] = {
	{ "members", OPT_JSON, false, false },
	{ "locks", OPT_WIDE | OPT_JSON, false, false },
	{ "watch", OPT_REPLAY | OPT_COUNT | OPT_TIMEOUT | OPT_JSON, false, false },
	{ "stats", OPT_PROM | OPT_JSON | OPT_MEMBER | OPT_COMPONENT | OPT_ALL, false, false },
	{ "top", OPT_INTERVAL | OPT_ITERATIONS, false, false },
	{ "fleets", OPT_JSON, false, false },
	{ "spots", OPT_JSON, false, false },
	{ "force-release", 0, true, true },
	{ "reset", 0, false, true },
	{ "unlink", 0, false, true },
	{ "help", 0, false, false },
};

static const struct option_spec {
	const char *name;
	unsigned bit;
} option_specs[] = {
	{ "--wide", OPT_WIDE },
	{ "--replay", OPT_REPLAY },
	{ "--count", OPT_COUNT },
	{ "--timeout-ms", OPT_TIMEOUT },
	{ "--prometheus", OPT_PROM },
	{ "--json", OPT_JSON },
	{ "--interval-ms", OPT_INTERVAL },
	{ "--iterations", OPT_ITERATIONS },
	{ "--member", OPT_MEMBER },
	{ "--component", OPT_COMPONENT },
	{ "--all", OPT_ALL },
};

/*
 * A fleet whose locks live on etcd (--fleet etcd://host:port,.../NAME):
 * it has no SHM segments on this host, so only the lock commands apply.
 * locks reads (serializable range: works without quorum too); force-release
 * writes.
 */
static int cmd_etcd(const char *url, const struct command *cmd, const char *key, unsigned given,
		    long count, long timeout_ms)
{
	struct orbit_lock_options o;
	orbit_transition_reader_t *r;
	orbit_lock_t *lock;
	int rc;

	if (strcmp(cmd->name, "locks") && strcmp(cmd->name, "force-release") &&
	    strcmp(cmd->name, "watch")) {
		fprintf(stderr,
			"%s: '%s' reads a fleet's segments on this host; an etcd fleet "
			"(%s) has locks only: use 'locks', 'watch' or 'force-release'\n",
			prog, cmd->name, url);
		return EXIT_USAGE;
	}
	orbit_lock_options_init(&o);
	o.fleet = url;
	o.readonly = !cmd->admin;
	rc = orbit_lock_open(&o, &lock);
	if (rc == -EINVAL) {
		fprintf(stderr,
			"%s: bad etcd fleet URL '%s' (etcd://host:port[,host:port...][/NAME])\n",
			prog, url);
		return EXIT_USAGE;
	}
	if (rc < 0)
		return fail("opening", url, rc);
	if (!strcmp(cmd->name, "locks")) {
		rc = cmd_locks(lock, url, given & OPT_WIDE, given & OPT_JSON);
	} else if (!strcmp(cmd->name, "watch")) {
		rc = orbit_lock_reader_open(lock, &r); /* an etcd watch on the fleet's keys */
		rc = rc < 0 ? fail("watching", url, rc)
			    : watch_reader(r, url, count, timeout_ms, given & OPT_REPLAY,
					   given & OPT_JSON);
	} else {
		rc = cmd_force_release(lock, url, key);
	}
	orbit_lock_close(lock);
	return rc;
}

/* "orbitctl: <what> '<arg>' (see 'orbitctl help')", exit status 1. */
static int usage_error(const char *what, const char *arg)
{
	fprintf(stderr, "%s: %s '%s' (see '%s help')\n", prog, what, arg, prog);
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	struct orbit_fleet_options fo = { .size = sizeof(fo) };
	struct stats_filter sf = { NULL, NULL, false };
	const char *fleet = getenv("ORBIT_FLEET"), *cmd_name = NULL, *key = NULL;
	const struct command *cmd = NULL;
	long count = 0, timeout_ms = 0, interval_ms = 0, iterations = 0;
	unsigned given = 0, value_bit[8] = { 0 };
	const char *value_of[8] = { NULL };
	orbit_fleet_t *f = NULL;
	bool opts_done = false;
	int rc, nvalues = 0;

	if (argc > 0 && argv[0])
		prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	if (!fleet || !*fleet)
		fleet = "default";
	/* Options anywhere, before or after the command; "--" ends them. */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const struct option_spec *o = NULL;
		const char *eq;
		size_t alen;

		if (!opts_done && !strcmp(a, "--")) {
			opts_done = true;
			continue;
		}
		if (opts_done || a[0] != '-' || !a[1]) {
			if (!cmd_name)
				cmd_name = a;
			else if (!key)
				key = a;
			else
				return usage_error("unexpected argument", a);
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return EXIT_OK;
		}
		if (!strcmp(a, "--version")) {
			printf("orbitctl (orbit) %s\n", orbit_version_string());
			return EXIT_OK;
		}
		eq = strchr(a, '=');
		alen = eq ? (size_t)(eq - a) : strlen(a);
		if (alen == 7 && !strncmp(a, "--fleet", 7)) {
			if (eq)
				fleet = eq + 1;
			else if (i + 1 < argc)
				fleet = argv[++i];
			else
				return usage_error("a fleet name must follow", a);
			continue;
		}
		if ((alen == 6 && !strncmp(a, "--mode", 6)) ||
		    (alen == 7 && !strncmp(a, "--group", 7)) ||
		    (alen == 7 && !strncmp(a, "--owner", 7))) {
			const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;

			if (alen == 7 && a[2] == 'o') {
				if (!v || parse_owner(v, &fo.owner_uid) < 0)
					return usage_error("a user name or uid must follow", a);
				continue;
			}

			if (alen == 6 && (!v || parse_mode(v, &fo.mode) < 0))
				return usage_error("a mode (0600, 0640, 0660) must follow", a);
			if (alen == 7 && (!v || parse_group(v, &fo.gid) < 0))
				return usage_error("a group name or gid must follow", a);
			continue;
		}
		for (size_t k = 0; k < sizeof(option_specs) / sizeof(option_specs[0]); k++)
			if (strlen(option_specs[k].name) == alen &&
			    !strncmp(option_specs[k].name, a, alen))
				o = &option_specs[k];
		if (!o)
			return usage_error("unknown option", a);
		if (given & o->bit)
			return usage_error("option given twice:", o->name);
		given |= o->bit;
		if (o->bit & (OPT_MEMBER | OPT_COMPONENT)) {
			const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;

			if (!v)
				return usage_error("a name must follow", o->name);
			if (o->bit == OPT_MEMBER)
				sf.member = v;
			else
				sf.component = v;
		} else if (o->bit & (OPT_COUNT | OPT_TIMEOUT | OPT_INTERVAL | OPT_ITERATIONS)) {
			const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;

			if (!v)
				return usage_error("a number must follow", o->name);
			value_bit[nvalues] = o->bit;
			value_of[nvalues++] = v;
		} else if (eq) {
			return usage_error("this option takes no value:", o->name);
		}
	}
	for (int k = 0; k < nvalues; k++) {
		long v;

		if (parse_long(value_of[k], &v))
			return usage_error("not a non-negative number:", value_of[k]);
		if (value_bit[k] == OPT_COUNT)
			count = v;
		else if (value_bit[k] == OPT_TIMEOUT)
			timeout_ms = v;
		else if (value_bit[k] == OPT_INTERVAL)
			interval_ms = v;
		else
			iterations = v;
	}
	if (!cmd_name) {
		usage(stderr);
		return EXIT_USAGE;
	}
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
		if (!strcmp(commands[k].name, cmd_name))
			cmd = &commands[k];
	if (!cmd) {
		fprintf(stderr, "%s: unknown command '%s'\n", prog, cmd_name);
		usage(stderr);
		return EXIT_USAGE;
	}
	for (size_t k = 0; k < sizeof(option_specs) / sizeof(option_specs[0]); k++)
		if ((given & option_specs[k].bit) && !(cmd->opts & option_specs[k].bit)) {
			fprintf(stderr, "%s: option '%s' does not apply to '%s' (see '%s help')\n",
				prog, option_specs[k].name, cmd->name, prog);
			return EXIT_USAGE;
		}
	if ((given & OPT_JSON) && (given & OPT_PROM))
		return usage_error("choose one of --json and --prometheus for", "stats");
	if (sf.component) {
		static const char *const known[] = { "lock", "ring", "agent", "queue",
						     "pool", "lane", "exec",  "spot" };
		bool ok = false;

		for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			ok |= !strcmp(sf.component, known[k]);
		if (!ok)
			return usage_error(
			    "a component is one of lock ring agent queue pool lane exec spot, not",
			    sf.component);
	}
	sf.all = given & OPT_ALL;
	if (cmd->key && !key)
		return usage_error("a key NAMESPACE:LABEL must follow", cmd->name);
	if (!cmd->key && key)
		return usage_error("unexpected argument", key);
	cmd_now = cmd->name;
	owner_now = fo.owner_uid;
	if (!strcmp(cmd->name, "help")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(cmd->name, "fleets"))
		return cmd_fleets(given & OPT_JSON, &fo);
	if (!strncmp(fleet, "etcd://", 7))
		return cmd_etcd(fleet, cmd, key, given, count, timeout_ms);
	fo.fleet = fleet;
	if (!strcmp(cmd->name, "unlink"))
		return cmd_unlink(&fo);
	fo.admin = cmd->admin;
	rc = orbit_fleet_open(&fo, &f);
	if (rc == -EINVAL) {
		if (fo.mode)
			fprintf(stderr,
				"%s: bad fleet name '%s' (1 to 40 of A-Z a-z 0-9 _ -) or mode %04o "
				"(0600, 0640, 0660)\n",
				prog, fleet, fo.mode);
		else
			fprintf(stderr, "%s: bad fleet name '%s' (1 to 40 of A-Z a-z 0-9 _ -)\n",
				prog, fleet);
		return EXIT_USAGE;
	}
	if (rc == -ENOENT) {
		fprintf(stderr, "%s: no such fleet: %s\n", prog, fleet);
		return EXIT_NOFLEET;
	}
	if (rc < 0)
		return fail("opening", fleet, rc);
	if (!strcmp(cmd->name, "members"))
		rc = cmd_members(f, given & OPT_JSON);
	else if (!strcmp(cmd->name, "locks"))
		rc = cmd_locks(orbit_fleet_lock(f), orbit_fleet_name(f), given & OPT_WIDE,
			       given & OPT_JSON);
	else if (!strcmp(cmd->name, "watch"))
		rc = cmd_watch(f, count, timeout_ms, given & OPT_REPLAY, given & OPT_JSON);
	else if (!strcmp(cmd->name, "stats"))
		rc = cmd_stats(f,
			       given & OPT_JSON	  ? FMT_JSON
			       : given & OPT_PROM ? FMT_PROM
						  : FMT_TABLE,
			       &sf);
	else if (!strcmp(cmd->name, "spots"))
		rc = cmd_spots(f, given & OPT_JSON);
	else if (!strcmp(cmd->name, "top"))
		rc = cmd_top(f, interval_ms, iterations);
	else if (!strcmp(cmd->name, "force-release"))
		rc = cmd_force_release(orbit_fleet_lock(f), orbit_fleet_name(f), key);
	else
		rc = cmd_reset(f);
	orbit_fleet_close(f);
	return rc;
}
