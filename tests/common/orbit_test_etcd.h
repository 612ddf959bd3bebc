/* SPDX-License-Identifier: MIT */
/*
 * tests/common/orbit_test_etcd.h: a 3-member etcd cluster on 127.0.0.1
 * for a test binary, through scripts/etcd-cluster: free ports, data in a
 * temporary directory, stopped by its pids. Issue 15: the tests start it
 * themselves and skip, printing why, only when etcd is not installed.
 * Include after orbit_test.h (cmocka).
 */
#ifndef ORBIT_TEST_ETCD_H
#define ORBIT_TEST_ETCD_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "orbit_test.h"

#define ORBIT_TEST_ETCD_MEMBERS 3

struct orbit_test_etcd {
	char dir[256];
	char endpoints[512]; /* "http://127.0.0.1:P,..." */
	pid_t pids[ORBIT_TEST_ETCD_MEMBERS];
	int up; /* 1: started (stop it) */
};

static inline const char *orbit_test_etcd_script(void)
{
	static char path[512];
	const char *s = getenv("top_srcdir");

	snprintf(path, sizeof(path), "%s/scripts/etcd-cluster", s ? s : "..");
	return path;
}

/* Re-read DIR/pids (after a restart). Returns 0 or -1. */
static inline int orbit_test_etcd_read_pids(struct orbit_test_etcd *c)
{
	char path[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/pids", c->dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	for (int i = 0; i < ORBIT_TEST_ETCD_MEMBERS; i++) {
		long p;

		if (fscanf(f, "%ld", &p) != 1) {
			fclose(f);
			return -1;
		}
		c->pids[i] = (pid_t)p;
	}
	fclose(f);
	return 0;
}

/*
 * Start the cluster. Returns 0 (up), 77 (etcd not installed: the reason
 * is printed), or -1.
 */
static inline int orbit_test_etcd_start(struct orbit_test_etcd *c, const char *tag)
{
	char cmd[1024];
	FILE *f;
	int st;

	memset(c, 0, sizeof(*c));
	snprintf(c->dir, sizeof(c->dir), "/tmp/orbit-etcd-%s-%ld", tag, (long)getpid());
	snprintf(cmd, sizeof(cmd), "%s start %s %d", orbit_test_etcd_script(), c->dir,
		 ORBIT_TEST_ETCD_MEMBERS);
	st = system(cmd);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		printf(
		    "# etcd is not installed (apt-get install etcd-server): etcd tests skipped\n");
		return 77;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	c->up = 1;
	snprintf(cmd, sizeof(cmd), "%s/endpoints", c->dir);
	f = fopen(cmd, "r");
	if (!f)
		return -1;
	if (!fgets(c->endpoints, sizeof(c->endpoints), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	c->endpoints[strcspn(c->endpoints, "\n")] = '\0';
	return orbit_test_etcd_read_pids(c);
}

/* Stop it (kills exactly its pids, removes its directory). Returns 0 or -1. */
static inline int orbit_test_etcd_stop(struct orbit_test_etcd *c)
{
	char cmd[1024];

	if (!c->up)
		return 0;
	c->up = 0;
	snprintf(cmd, sizeof(cmd), "%s stop %s", orbit_test_etcd_script(), c->dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The index of the member that leads now, or -1. */
static inline int orbit_test_etcd_leader(struct orbit_test_etcd *c)
{
	char cmd[1024];
	FILE *p;
	int i = -1;

	snprintf(cmd, sizeof(cmd), "%s leader %s", orbit_test_etcd_script(), c->dir);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (fscanf(p, "%d", &i) != 1)
		i = -1;
	pclose(p);
	return i;
}

/* Start member @i again (after a SIGKILL): it rejoins with its data. Returns 0 or -1. */
static inline int orbit_test_etcd_restart(struct orbit_test_etcd *c, int i)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "%s restart %s %d >/dev/null", orbit_test_etcd_script(), c->dir,
		 i);
	if (system(cmd) != 0)
		return -1;
	return orbit_test_etcd_read_pids(c);
}

/* "etcd://h:p,h:p,.../FLEET" of @c's members (an orbitctl --fleet). */
static inline void orbit_test_etcd_url(const struct orbit_test_etcd *c, const char *fleet,
				       char *url, size_t cap)
{
	char hosts[sizeof(c->endpoints)];

	snprintf(hosts, sizeof(hosts), "%s", c->endpoints);
	url[0] = '\0';
	for (char *h = strtok(hosts, ","); h; h = strtok(NULL, ","))
		snprintf(url + strlen(url), cap - strlen(url), "%s%s", url[0] ? "," : "etcd://",
			 h + strlen("http://"));
	snprintf(url + strlen(url), cap - strlen(url), "/%s", fleet);
}

/*
 * Run "orbitctl --fleet URL ARGS" (2>&1, the built one under
 * $top_builddir); its output into @out, NUL-terminated. Returns its exit
 * status, or -1 when it could not be run or did not exit.
 */
static inline int orbit_test_etcd_orbitctl(const char *url, const char *args, char *out, size_t cap)
{
	const char *b = getenv("top_builddir");
	char cmd[1500];
	size_t n;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s/agent/orbitctl --fleet '%s' %s 2>&1", b ? b : ".", url,
		 args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* orbit_test_etcd_orbitctl() in a test: that it ran is asserted. Returns its exit status. */
static inline int orbit_test_etcd_ctl(const char *url, const char *args, char *out, size_t cap)
{
	int st = orbit_test_etcd_orbitctl(url, args, out, cap);

	assert_true(st >= 0);
	return st;
}

/*
 * The start of a program whose etcd tests skip without etcd: *@have says
 * whether the cluster is up. Returns 0 (up, or etcd is not installed: the
 * reason is printed), -1 (it could not start: the program fails).
 */
static inline int orbit_test_etcd_up(struct orbit_test_etcd *c, const char *tag, bool *have)
{
	int up = orbit_test_etcd_start(c, tag);

	*have = up == 0;
	return up == 0 || up == 77 ? 0 : -1;
}

#endif /* ORBIT_TEST_ETCD_H */
