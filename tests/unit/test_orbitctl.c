// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_orbitctl.c: runs the built orbitctl against a test fleet
 * (issue 5 "orbitctl", "Tests"): members and locks tables on 80 columns,
 * stats as a table, as JSON (parsed by python3) and as Prometheus text
 * (validated line by line), watch following transitions, the documented
 * exit codes, and random bytes in member rows, stats rows and ring frames
 * never crashing it.
 */
#include "orbit_test.h"
#include <errno.h>
#include <regex.h>
#include <orbit/orbit.h>
#include "shm/lock_internal.h"
#include "shm/members.h"
#include "shm/ring.h"
#include "shm/stats.h"

static char fleet[64];
static orbit_lock_t *lock;
static orbit_agent_t *agent;
static orbit_members_t *extra; /* a second member row with realistic, wide fields */
static char out[1 << 22]; /* stats --prometheus of 64 random rows is over 1 MiB */

/*
 * Realistic widths for the 80-column checks: a 60-byte namespace, 20-byte
 * labels that differ only at the end, a 20-byte owner, 19-digit tokens
 * (tokens start at the creation time in ns), 7-digit pids (pid_max can be
 * 4194304) and a 31-character member name (the longest there is).
 */
#define WIDE_NS "com.example.payments.settlement.ledger.partition.eu-west-1.a"
#define WIDE_OWNER "host-0042:1234567:w3"
#define WIDE_MEMBER "settlement-ledger-worker-eu-w01"
#define WIDE_PID 4194303u
_Static_assert(sizeof(WIDE_NS) - 1 == 60, "60-byte namespace");
_Static_assert(sizeof(WIDE_MEMBER) - 1 == 31, "31-character member name");

ORBIT_LOCK_DEFINE_NAMESPACE(ctl_ns, "test.ctl");

static const char *orbitctl(void)
{
	static char path[1024];
	const char *b = getenv("top_builddir");

	snprintf(path, sizeof(path), "%s/agent/orbitctl", b ? b : ".");
	return path;
}

/* Run "orbitctl [--fleet F] ARGS" through sh; capture its output into out[]. */
static int run(const char *fleet_arg, const char *args, bool with_stderr)
{
	char cmd[4096];
	size_t n = 0;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s%s %s %s", orbitctl(), fleet_arg ? "--fleet " : "",
		 fleet_arg ? fleet_arg : "", args, with_stderr ? "2>&1" : "2>/dev/null");
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (n < sizeof(out) - 1) {
		size_t k = fread(out + n, 1, sizeof(out) - 1 - n, p);

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

#define CTL(args) run(fleet, (args), true)
#define CTL_STDOUT(args) run(fleet, (args), false)

static void assert_80_columns(const char *text)
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

static int acquire(const char *label, size_t label_len, const char *owner, uint64_t *token)
{
	orbit_lock_owner_t o = { owner, strlen(owner) };
	orbit_lock_key_t k = orbit_lock_key(ctl_ns, label, label_len);
	struct orbit_lock_lease lease;
	uint64_t t0 = orbit_test_now_ns();
	int rc = orbit_lock_try_acquire(lock, &k, &o, 600ull * 1000000000ull, &lease, NULL);

	orbit_agent_record_latency(agent, ORBIT_AGENT_HIST_ACQUIRE, orbit_test_now_ns() - t0);
	if (rc == 0 && token)
		*token = lease.token;
	return rc;
}

/* Hold NS:label (20 bytes) as WIDE_OWNER; returns the token (0 on failure). */
static uint64_t acquire_wide(const char *label)
{
	orbit_lock_owner_t o = { WIDE_OWNER, sizeof(WIDE_OWNER) - 1 };
	orbit_lock_key_t k = { WIDE_NS, sizeof(WIDE_NS) - 1, label, strlen(label) };
	struct orbit_lock_lease lease;

	if (strlen(label) != 20 ||
	    orbit_lock_try_acquire(lock, &k, &o, 600ull * 1000000000ull, &lease, NULL) != 0)
		return 0;
	return lease.token;
}

/* Make the table entry of NS:@label show a 7-digit holder pid. */
static int wide_holder_pid(const char *label)
{
	struct orbit_lock_table_hdr *h = orbit__lock_hdr(lock);
	struct orbit_lock_slot *slots = (struct orbit_lock_slot *)((char *)h + h->slots_off);

	for (uint32_t i = 0; i < h->slot_count; i++) {
		struct orbit_lock_slot *s = &slots[i];

		if (atomic_load(&s->state) == ORBIT_LOCK_SLOT_OCCUPIED &&
		    s->ns_len == sizeof(WIDE_NS) - 1 && s->label_len == strlen(label) &&
		    !memcmp(s->bytes + s->ns_len, label, s->label_len)) {
			/* Not a hashed field: the table stays valid. Written the way a
			 * mutator writes a slot (seq odd around the change, atomics), as
			 * the agent thread reads the table meanwhile. */
			atomic_fetch_add(&s->seq, 1);
			__atomic_store_n(&s->holder_pid, WIDE_PID, __ATOMIC_RELAXED);
			atomic_fetch_add(&s->seq, 1);
			return 0;
		}
	}
	return -1;
}

/* Join a second member row named WIDE_MEMBER, shown with a 7-digit pid and an old heartbeat. */
static int join_wide_member(void)
{
	struct orbit_seg_opts so = { .how = ORBIT_SEG_OPEN };
	struct orbit_members_shm *mh;
	struct orbit_member_row *row;
	struct timespec ts;
	uint64_t mono;
	int r;

	if (orbit__members_open(&extra, fleet, 0, &so) != 0)
		return -1;
	r = orbit__members_join(extra, WIDE_MEMBER);
	if (r < 0)
		return -1;
	mh = orbit__seg_body(orbit__members_seg(extra));
	row = orbit__seg_at(orbit__members_seg(extra), mh->rows_off + (uint64_t)r * sizeof(*row),
			    sizeof(*row));
	if (!row)
		return -1;
	row->pid = WIDE_PID; /* display only: liveness is the row's kernel lock */
	clock_gettime(CLOCK_MONOTONIC, &ts); /* the heartbeat's clock */
	/* Up to an hour old ("3599.0s ago"), less on a machine up for less. */
	mono = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	atomic_store(&row->heartbeat_ns, mono - (mono > 3600000000000ull ? 3599000000000ull : mono / 2));
	return 0;
}

static int group_setup(void **state)
{
	struct orbit_lock_options lo = { .size = sizeof(lo) };
	struct orbit_agent_options ao = { .size = sizeof(ao), .name = "ctl-fixture",
					  .tick_ms = 5, .stats_ms = 10 };
	static const char weird[] = "bin\x01\xff-and-a-rather-long-label-that-will-not-fit";

	(void)state;
	orbit_test_fleet(fleet, sizeof(fleet), "ctl");
	lo.fleet = fleet;
	if (orbit_lock_open(&lo, &lock) != 0)
		return -1;
	ao.fleet = fleet;
	ao.lock = lock;
	if (orbit_agent_start(&ao, &agent) != 0)
		return -1;
	if (acquire("alpha", 5, "owner-a", NULL) || acquire(weird, sizeof(weird) - 1, "owner-b", NULL))
		return -1;
	if (!acquire_wide("resource-00000000001") || !acquire_wide("resource-00000000002") ||
	    wide_holder_pid("resource-00000000002") || join_wide_member())
		return -1;
	usleep(100000); /* a stats publish */
	return 0;
}

static int group_teardown(void **state)
{
	struct orbit_lock_options lo = { .size = sizeof(lo), .fleet = fleet };

	(void)state;
	orbit_agent_stop(agent);
	orbit__members_close(extra);
	orbit_lock_close(lock);
	orbit__members_unlink(fleet);
	orbit__ring_unlink(fleet, NULL);
	orbit__seg_unlink(fleet, ORBIT_STATS_SEG_NAME);
	orbit_lock_unlink(&lo);
	return 0;
}

/* Issue 5 "orbitctl": members and liveness, readable on 80 columns. */
static void test_orbitctl_members_table(void **state)
{
	char mine[64];
	const char *wide;

	(void)state;
	assert_int_equal(CTL("members"), 0);
	assert_80_columns(out);
	assert_non_null(strstr(out, "PID"));
	assert_non_null(strstr(out, "ctl-fixture"));
	snprintf(mine, sizeof(mine), " %-7ld ctl-fixture", (long)getpid());
	assert_non_null(strstr(out, mine));
	assert_non_null(strstr(out, " live    yes "));
	/* The widest row: 7-digit pid, whole 31-character name, heartbeat an hour old. */
	wide = strstr(out, " 4194303 " WIDE_MEMBER " live    yes ");
	assert_non_null(wide);
	assert_non_null(strstr(wide, "s ago\n"));
	assert_non_null(strstr(out, "2 member row(s) in use"));
}

/* Issue 5 "orbitctl": locks shows key, owner, token, TTL left and whether the holder lives. */
static void test_orbitctl_locks_table(void **state)
{
	char tok[32];
	uint64_t token = 0;

	(void)state;
	assert_int_equal(acquire("gamma", 5, "owner-g", &token), 0);
	assert_true(token >= 1000000000000000000ull); /* 19 digits */
	assert_int_equal(CTL("locks"), 0);
	assert_80_columns(out);
	assert_non_null(strstr(out, "KEY"));
	assert_non_null(strstr(out, "test.ctl:alpha"));
	assert_non_null(strstr(out, "owner-a"));
	/* Cut in the middle: the start of the key and the end of its label stay. */
	assert_non_null(strstr(out, "test.ctl:b~label-that-will-not-fit "));
	/* Keys differing only at the end of a long key stay apart. */
	assert_non_null(strstr(out, "com.exampl~.a:resource-00000000001 "));
	assert_non_null(strstr(out, "com.exampl~.a:resource-00000000002 "));
	assert_non_null(strstr(out, "host-~567:w3 ")); /* owner: head and tail */
	assert_non_null(strstr(out, " 4194303 no\n"));     /* 7-digit pid, not alive */
	snprintf(tok, sizeof(tok), " ~%09llu ", (unsigned long long)(token % 1000000000ull));
	assert_non_null(strstr(out, tok));
	assert_non_null(strstr(out, "yes"));
	assert_non_null(strstr(out, "5 lock(s)"));
	assert_true(strstr(out, "600.0s") || strstr(out, "599.")); /* TTL left */
	/* --wide: every field whole (escaped), the whole token. */
	assert_int_equal(CTL("locks --wide"), 0);
	snprintf(tok, sizeof(tok), " %llu ", (unsigned long long)token);
	assert_non_null(strstr(out, tok));
	assert_non_null(strstr(out, "test.ctl:bin\\x01\\xff-and-a-rather-long-label-that-will-not-fit "));
	assert_non_null(strstr(out, WIDE_NS ":resource-00000000002 " WIDE_OWNER " "));
	assert_int_equal(CTL("locks --wide --wide"), 1);
}

/* Issue 5 "orbitctl": stats as a table on 80 columns. */
static void test_orbitctl_stats_table(void **state)
{
	(void)state;
	assert_int_equal(CTL("stats"), 0);
	assert_80_columns(out);
	/* every counter of the table, the coordinators' exec_* included */
	for (unsigned c = 0; c < orbit_stats_counter_count(); c++) {
		if (!strstr(out, orbit_stats_counter_name(c)))
			print_error("no counter %s in the table\n", orbit_stats_counter_name(c));
		assert_non_null(strstr(out, orbit_stats_counter_name(c)));
	}
	assert_non_null(strstr(out, "exec_outstanding"));
	assert_non_null(strstr(out, "lock_acquired"));
	assert_non_null(strstr(out, "acquire_latency"));
	assert_non_null(strstr(out, "ctl-fixture"));
	assert_non_null(strstr(out, "alive"));
}

/*
 * Issue 5 "orbitctl" (stats of every member): the stats segment's row count
 * is public, so orbitctl and other readers need no hard-coded 64. A fleet
 * with a lock table but no stats segment has 0 stats rows.
 */
static void test_fleet_stats_rows_counts_the_stats_segment(void **state)
{
	struct orbit_fleet_options fo = { .size = sizeof(fo), .fleet = fleet };
	struct orbit_lock_options lo = { .size = sizeof(lo) };
	struct orbit_fleet_stats *fs = malloc(sizeof(*fs));
	orbit_fleet_t *f = NULL;
	orbit_lock_t *bare = NULL;
	char bare_fleet[64];
	uint32_t rows;

	(void)state;
	assert_non_null(fs);
	assert_int_equal(orbit_fleet_stats_rows(NULL), 0);
	assert_int_equal(orbit_fleet_open(&fo, &f), 0);
	rows = orbit_fleet_stats_rows(f);
	assert_int_equal(rows, ORBIT_STATS_ROWS);
	assert_int_equal(rows, orbit_fleet_rows(f));
	/* Our agent's row is inside the range, the first row past it is not. */
	assert_true((uint32_t)orbit_agent_member_row(agent) < rows);
	assert_int_equal(orbit_fleet_stats_read(f, (uint32_t)orbit_agent_member_row(agent), fs), 0);
	assert_int_equal(orbit_fleet_stats_read(f, rows, fs), -EINVAL);
	orbit_fleet_close(f);

	/* Only a lock table: the fleet opens, with no stats rows. */
	lo.fleet = orbit_test_fleet(bare_fleet, sizeof(bare_fleet), "ctlbare");
	assert_int_equal(orbit_lock_open(&lo, &bare), 0);
	fo.fleet = bare_fleet;
	assert_int_equal(orbit_fleet_open(&fo, &f), 0);
	assert_int_equal(orbit_fleet_stats_rows(f), 0);
	assert_int_equal(orbit_fleet_stats_read(f, 0, fs), -ENOENT);
	assert_int_equal(run(bare_fleet, "stats", true), 0);
	assert_non_null(strstr(out, "0 stats row(s)"));
	orbit_fleet_close(f);
	orbit_lock_close(bare);
	orbit_lock_unlink(&lo);
	free(fs);
}

/* Issue 5 "Tests": orbitctl stats --json is valid JSON with the counters. */
static void test_orbitctl_stats_json_parses(void **state)
{
	char script[768];

	(void)state;
	assert_int_equal(CTL_STDOUT("stats --json"), 0);
	assert_int_equal(out[0], '{');
	snprintf(script, sizeof(script),
		 "stats --json | python3 -c 'import json,sys; d=json.load(sys.stdin); "
		 "m=[x for x in d[\"members\"] if x[\"pid\"]==%ld][0]; "
		 "assert d[\"fleet\"]==\"%s\"; assert m[\"alive\"] is True; "
		 "assert m[\"counters\"][\"lock_acquired\"]>=2; "
		 "assert all(k in m[\"counters\"] for k in (\"exec_accepted\",\"exec_outstanding\")); "
		 "h=m[\"histograms\"][\"acquire_latency\"]; "
		 "assert sum(b[\"count\"] for b in h[\"buckets\"])==h[\"count\"]>=2; print(\"json-ok\")'",
		 (long)getpid(), fleet);
	assert_int_equal(CTL(script), 0);
	assert_non_null(strstr(out, "json-ok"));
}

/* A small Prometheus text-format validator: one regex per line kind. */
static void check_prometheus(const char *text)
{
	regex_t help, type, sample;
	char fam_typed[256] = "";
	const char *l = text;
	int samples = 0, hist_lines = 0;
	double last_bucket = -1;

	assert_int_equal(regcomp(&help, "^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* [^\n]+$", REG_EXTENDED), 0);
	assert_int_equal(regcomp(&type, "^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$",
				 REG_EXTENDED), 0);
	assert_int_equal(regcomp(&sample,
				 "^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\\n]|\\\\.)*\""
				 "(,[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\\n]|\\\\.)*\")*\\})? "
				 "(-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?|\\+Inf|-Inf|NaN)$",
				 REG_EXTENDED), 0);
	while (*l) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		char line[4096];
		regmatch_t m[8];

		assert_true(len < sizeof(line));
		memcpy(line, l, len);
		line[len] = '\0';
		if (len == 0) {
			/* blank lines are allowed */
		} else if (!strncmp(line, "# HELP", 6)) {
			assert_int_equal(regexec(&help, line, 0, NULL, 0), 0);
		} else if (!strncmp(line, "# TYPE", 6)) {
			assert_int_equal(regexec(&type, line, 8, m, 0), 0);
			snprintf(fam_typed, sizeof(fam_typed), "%.*s", (int)(m[1].rm_eo - m[1].rm_so),
				 line + m[1].rm_so);
			last_bucket = -1;
		} else {
			if (regexec(&sample, line, 8, m, 0) != 0)
				print_error("bad sample line: %s\n", line);
			assert_int_equal(regexec(&sample, line, 8, m, 0), 0);
			/* every sample belongs to the family typed just above */
			assert_true(fam_typed[0] && !strncmp(line, fam_typed, strlen(fam_typed)));
			if (strstr(line, "_bucket{")) {
				double v = strtod(strrchr(line, ' ') + 1, NULL);

				assert_true(v >= last_bucket); /* cumulative */
				last_bucket = strstr(line, "le=\"+Inf\"") ? -1 : v;
				hist_lines++;
			}
			samples++;
		}
		if (!e)
			break;
		l = e + 1;
	}
	assert_true(samples > 10);
	assert_true(hist_lines >= (int)ORBIT_STATS_BUCKETS);
	regfree(&help);
	regfree(&type);
	regfree(&sample);
}

/* Issue 5 "Tests": orbitctl stats --prometheus is valid text exposition format. */
static void test_orbitctl_stats_prometheus_format(void **state)
{
	(void)state;
	assert_int_equal(CTL_STDOUT("stats --prometheus"), 0);
	check_prometheus(out);
	assert_non_null(strstr(out, "# TYPE orbit_lock_acquired_total counter"));
	assert_non_null(strstr(out, "# TYPE orbit_exec_accepted_total counter"));
	assert_non_null(strstr(out, "# TYPE orbit_exec_outstanding gauge"));
	assert_non_null(strstr(out, "# HELP orbit_exec_turn_waited_total "));
	assert_non_null(strstr(out, "# TYPE orbit_acquire_latency_seconds histogram"));
	assert_non_null(strstr(out, "orbit_acquire_latency_seconds_bucket{"));
	assert_non_null(strstr(out, "le=\"+Inf\"}"));
	assert_non_null(strstr(out, "orbit_acquire_latency_seconds_count{"));
	assert_non_null(strstr(out, "member=\"ctl-fixture\""));
}

/* Issue 5 "orbitctl": watch follows transitions live. */
static void test_orbitctl_watch_follows_transitions(void **state)
{
	char cmd[2048], line[512], all[8192] = "";
	orbit_lock_owner_t o = { "owner-w", 7 };
	orbit_lock_key_t k = orbit_lock_key(ctl_ns, "watched", 7);
	FILE *p;
	int st;

	(void)state;
	snprintf(cmd, sizeof(cmd), "%s --fleet %s watch --count 4 --timeout-ms 5000", orbitctl(), fleet);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(line, sizeof(line), p)); /* the banner: its cursor is open */
	assert_non_null(strstr(line, "watching fleet"));
	assert_int_equal(orbit_lock_try_acquire(lock, &k, &o, 1000000000ull, NULL, NULL), 0);
	assert_int_equal(orbit_lock_release(lock, &k, &o, 0), 0);
	{
		orbit_lock_owner_t wo = { WIDE_OWNER, sizeof(WIDE_OWNER) - 1 };
		orbit_lock_key_t wk = { WIDE_NS, sizeof(WIDE_NS) - 1, "resource-00000000003", 20 };

		assert_true(acquire_wide("resource-00000000003") != 0);
		assert_int_equal(orbit_lock_release(lock, &wk, &wo, 0), 0);
	}
	while (fgets(line, sizeof(line), p))
		strncat(all, line, sizeof(all) - strlen(all) - 1);
	st = pclose(p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_80_columns(all);
	assert_non_null(strstr(all, "acquire"));
	assert_non_null(strstr(all, "release"));
	assert_non_null(strstr(all, "test.ctl:watched"));
	assert_non_null(strstr(all, "com.exampl~00000000003 host-~567:w3"));
}

struct replay_seen {
	int frames, alpha_acquires, stop_after;
};

static int on_replayed(const struct orbit_transition_event *ev, void *p)
{
	struct replay_seen *s = p;

	s->frames++;
	if (ev->type == 1 && ev->ns_len == 8 && ev->label_len == 5 &&
	    !memcmp(ev->bytes, "test.ctlalpha", 13))
		s->alpha_acquires++;
	return s->stop_after && s->frames >= s->stop_after;
}

/*
 * Issue 5 "Transition ring": replay_retained returns what is still
 * retained, through the public API (orbit_fleet_replay_retained) and
 * orbitctl watch --replay; a plain watch starts after the current heads.
 */
static void test_fleet_replay_retained_and_watch_replay(void **state)
{
	struct orbit_fleet_options fo = { .size = sizeof(fo), .fleet = fleet };
	struct replay_seen all = { 0 }, one = { .stop_after = 1 };
	orbit_fleet_t *f = NULL;

	(void)state;
	assert_int_equal(orbit_fleet_open(&fo, &f), 0);
	assert_int_equal(orbit_fleet_replay_retained(f, NULL, NULL), -EINVAL);
	assert_true(orbit_fleet_replay_retained(f, on_replayed, &all) >= 5);
	assert_int_equal(all.alpha_acquires, 1); /* published in the group setup */
	assert_int_equal(orbit_fleet_replay_retained(f, on_replayed, &one), 1);
	orbit_fleet_close(f);

	assert_int_equal(CTL("watch --timeout-ms 100"), 0);
	assert_null(strstr(out, "test.ctl:alpha"));
	assert_int_equal(CTL("watch --replay --timeout-ms 100"), 0);
	assert_80_columns(out);
	assert_non_null(strstr(out, "retained frames first"));
	assert_non_null(strstr(out, " acquire "));
	assert_non_null(strstr(out, "test.ctl:alpha "));
	assert_non_null(strstr(out, "com.exampl~00000000001 "));
	assert_int_equal(CTL("watch --replay --replay"), 1);
}

/* Issue 5 "orbitctl": documented exit codes; force-release and reset. */
static void test_orbitctl_exit_codes(void **state)
{
	orbit_lock_key_t k = orbit_lock_key(ctl_ns, "alpha", 5);
	struct orbit_lock_entry e;
	int rc;

	(void)state;
	assert_int_equal(run(NULL, "", true), 1); /* no command */
	assert_int_equal(CTL("frobnicate"), 1);
	assert_int_equal(CTL("stats --yaml"), 1);
	assert_int_equal(run("'bad name!'", "members", true), 1);
	assert_int_equal(run("nosuchfleet_x9", "members", true), 2);
	assert_non_null(strstr(out, "no such fleet"));
	assert_int_equal(CTL("force-release nocolon"), 1);
	assert_int_equal(CTL("force-release test.ctl:nothere"), 5);
	assert_int_equal(orbit_lock_lookup(lock, &k, &e), 0);
	rc = CTL("force-release test.ctl:alpha");
	if (rc != 0)
		print_error("orbitctl force-release: %d\n%s\n", rc, out);
	assert_int_equal(rc, 0);
	assert_int_equal(orbit_lock_lookup(lock, &k, &e), -ENOENT);
	assert_int_equal(CTL("reset"), 4); /* our agent is a live member */
	assert_non_null(strstr(out, "refused"));
	assert_int_equal(CTL("--help"), 0);
}

/* Issue 5 "Tests": random bytes in member rows, stats rows and frames never crash orbitctl. */
static void test_orbitctl_random_bytes_never_crash(void **state)
{
	struct orbit_seg_opts so = { .how = ORBIT_SEG_OPEN };
	orbit_members_t *m = NULL;
	orbit_ring_t *ring = NULL;
	orbit_stats_t st;
	unsigned seed = (unsigned)getpid();
	const char *cmds[] = { "members", "locks", "stats", "stats --json", "stats --prometheus",
			       "watch --timeout-ms 200", "watch --replay --timeout-ms 200" };
	int self = orbit_agent_member_row(agent);

	(void)state;
	assert_int_equal(orbit__members_open(&m, fleet, 0, &so), 0);
	assert_int_equal(orbit__ring_open(&ring, fleet, NULL, &so), 0);
	assert_int_equal(orbit__stats_open(&st, fleet, false, false), 0);
	for (int round = 0; round < 3; round++) {
		orbit_seg_t *ms = orbit__members_seg(m), *rs = orbit__ring_seg(ring);
		struct orbit_members_shm *mh = orbit__seg_body(ms);
		struct orbit_ring_shm *rh = orbit__seg_body(rs);
		uint64_t mrows_off = mh->rows_off, frames_off = rh->frames_off;

		/* Member rows other than our agent's own. */
		for (uint32_t r = 0; r < mh->rows; r++) {
			uint8_t *p = orbit__seg_at(ms, mrows_off + (uint64_t)r * 128, 128);

			if ((int)r == self || !p)
				continue;
			for (int i = 0; i < 128; i++)
				p[i] = (uint8_t)rand_r(&seed);
		}
		/* Stats rows other than ours (ours has a single writer). */
		for (uint32_t r = 0; r < ORBIT_STATS_ROWS; r++) {
			uint8_t *p = (uint8_t *)&st.body->row[r];

			if ((int)r == self)
				continue;
			for (size_t i = 0; i < sizeof(st.body->row[r]); i++)
				p[i] = (uint8_t)rand_r(&seed);
			if (round == 1)
				atomic_store(&st.body->row[r].seq, 2 * (uint64_t)r);
		}
		/* Frames of every lane: whatever a reader meets past its cursor. */
		for (uint64_t off = frames_off; off + 4096 <= rs->size; off += 4096) {
			uint8_t *p = orbit__seg_at(rs, off, 4096);

			for (int i = 0; i < 4096; i += 4)
				*(uint32_t *)(p + i) = (uint32_t)rand_r(&seed);
		}
		/* Lane heads too, so `watch --replay` walks scribbled frames from
		 * wherever a head now claims the ring to be (round 0: small values,
		 * inside one lap; later rounds: anything). */
		for (uint32_t l = 0; l < rh->lanes; l++) {
			struct orbit_ring_lane *ln =
				orbit__seg_at(rs, rh->lanes_off + (uint64_t)l * sizeof(*ln), sizeof(*ln));

			if (ln)
				atomic_store(&ln->head, round == 0 ? (uint64_t)(rand_r(&seed) % 4096)
								   : ((uint64_t)rand_r(&seed) << 32) |
									     (uint64_t)rand_r(&seed));
		}
		for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
			int rc = CTL(cmds[c]);

			if (rc < 0 || rc > 6)
				print_error("orbitctl %s: status %d\n%s\n", cmds[c], rc, out);
			assert_true(rc >= 0 && rc <= 6);
			assert_true(rc == 0 || rc == 3);
		}
		assert_int_equal(CTL("stats --json | python3 -c 'import json,sys; json.load(sys.stdin)'"), 0);
		assert_int_equal(CTL_STDOUT("stats --prometheus"), 0);
		check_prometheus(out);
	}
	orbit__stats_close(&st);
	orbit__ring_close(ring);
	orbit__members_close(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_orbitctl_members_table),
		cmocka_unit_test(test_orbitctl_locks_table),
		cmocka_unit_test(test_orbitctl_stats_table),
		cmocka_unit_test(test_fleet_stats_rows_counts_the_stats_segment),
		cmocka_unit_test(test_orbitctl_stats_json_parses),
		cmocka_unit_test(test_orbitctl_stats_prometheus_format),
		cmocka_unit_test(test_orbitctl_watch_follows_transitions),
		cmocka_unit_test(test_fleet_replay_retained_and_watch_replay),
		cmocka_unit_test(test_orbitctl_exit_codes),
		cmocka_unit_test(test_orbitctl_random_bytes_never_crash),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
