// SPDX-License-Identifier: MIT
/*
 * examples/lock_fencing.c: a keyed lock protecting a resource that checks
 * fencing tokens. Two processes want to write "ledger.txt"; each takes the
 * lock "jobs:ledger" for 1 s, writes with its token, and the resource
 * refuses a write whose token is older than the newest it has seen. The
 * second process is paused past its lease on purpose: its late write is
 * refused, which is the whole point of a fencing token.
 *
 *   cc lock_fencing.c $(pkg-config --cflags --libs orbit) && ./a.out
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep, fork, poll under -std=c11 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <orbit/orbit.h>

ORBIT_LOCK_DEFINE_NAMESPACE(jobs, "example.jobs");

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000u, (long)(ms % 1000u) * 1000000L };

	nanosleep(&ts, NULL);
}

/* The protected resource: remembers the newest token it accepted. */
static int resource_write(const char *path, uint64_t token, const char *who)
{
	char tok_path[256];
	unsigned long long newest = 0;
	FILE *f;

	snprintf(tok_path, sizeof(tok_path), "%s.token", path);
	f = fopen(tok_path, "r");
	if (f) {
		if (fscanf(f, "%llu", &newest) != 1)
			newest = 0;
		fclose(f);
	}
	if (token < newest) {
		printf("%s: write with token %llu refused (resource saw %llu)\n", who,
		       (unsigned long long)token, newest);
		return -1;
	}
	f = fopen(tok_path, "w");
	if (!f)
		return -1;
	fprintf(f, "%llu\n", (unsigned long long)token);
	fclose(f);
	printf("%s: wrote with token %llu\n", who, (unsigned long long)token);
	return 0;
}

static int worker(const char *fleet, const char *who, unsigned pause_ms, const char *path)
{
	struct orbit_lock_options o = { .size = sizeof(o), .fleet = fleet };
	orbit_lock_owner_t me = { who, strlen(who) };
	orbit_lock_key_t key = orbit_lock_key(jobs, "ledger", 6);
	struct orbit_lock_lease lease;
	struct orbit_lock_entry holder;
	orbit_lock_t *lk;
	int rc = orbit_lock_open(&o, &lk);

	if (rc < 0) {
		fprintf(stderr, "%s: orbit_lock_open: %s\n", who, orbit_strerror(rc));
		return 1;
	}
	/* One immediate attempt per call: retry until it is ours. */
	while ((rc = orbit_lock_try_acquire(lk, &key, &me, 1000000000ull, &lease, &holder)) ==
	       -EBUSY)
		sleep_ms(10);
	if (rc < 0) {
		fprintf(stderr, "%s: try_acquire: %s\n", who, orbit_strerror(rc));
		orbit_lock_close(lk);
		return 1;
	}
	printf("%s: holds the lock, token %llu\n", who, (unsigned long long)lease.token);
	sleep_ms(pause_ms); /* a GC pause, a SIGSTOP, a slow disk... */
	resource_write(path, lease.token, who);
	/* Releasing a lease that expired meanwhile says so: someone else may hold it now. */
	rc = orbit_lock_release(lk, &key, &me, lease.token);
	if (rc == -ENOENT || rc == -EPERM)
		printf("%s: release refused (%s): the lease had expired, as it should here\n", who,
		       orbit_err_name(rc));
	else if (rc < 0)
		printf("%s: release: %s\n", who, orbit_strerror(rc));
	orbit_lock_close(lk);
	return 0;
}

int main(int argc, char **argv)
{
	char fleet[32], path[64], tok_path[80];
	struct orbit_lock_options o = { .size = sizeof(o) };
	pid_t slow;
	int st;

	if (argc > 1)
		snprintf(fleet, sizeof(fleet), "%s", argv[1]);
	else
		snprintf(fleet, sizeof(fleet), "example-lock-%d", (int)getpid());
	snprintf(path, sizeof(path), "/tmp/orbit-example-ledger-%d", (int)getpid());
	setvbuf(stdout, NULL, _IOLBF, 0); /* the child's lines, too, before it _exits */
	slow = fork();
	if (slow == 0)
		_exit(worker(fleet, "slow-worker", 1500, path)); /* outlives its 1 s lease */
	sleep_ms(200);
	/* The lease of the slow worker runs out while it sleeps: this one gets a newer token. */
	worker(fleet, "quick-worker", 0, path);
	waitpid(slow, &st, 0);
	o.fleet = fleet;
	orbit_lock_unlink(&o); /* the example cleans up its fleet */
	snprintf(tok_path, sizeof(tok_path), "%s.token", path);
	unlink(tok_path);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
