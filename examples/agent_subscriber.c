// SPDX-License-Identifier: MIT
/*
 * examples/agent_subscriber.c: follow a fleet's lock transitions with
 * poll(). The process starts its agent (which joins the fleet and turns
 * the fleet's futex doorbell into eventfd readiness), subscribes an
 * eventfd, and reads each transition from a ring cursor when poll() says
 * there is something. A child process takes and releases a few locks so
 * there is something to see.
 *
 *   cc agent_subscriber.c $(pkg-config --cflags --libs orbit) && ./a.out
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep, fork, poll under -std=c11 */

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <orbit/orbit.h>

ORBIT_LOCK_DEFINE_NAMESPACE(jobs, "example.jobs");

/* A separate process that takes and releases three locks (exec'd fresh: no inherited agent). */
static int child_main(const char *fleet)
{
	struct orbit_lock_options lo = { .size = sizeof(lo), .fleet = fleet };
	struct orbit_agent_options ao = { .size = sizeof(ao), .fleet = fleet, .name = "writer" };
	orbit_lock_owner_t me = { "writer", 6 };
	orbit_agent_t *agent;
	orbit_lock_t *lk;

	if (orbit_lock_open(&lo, &lk) < 0)
		return 1;
	ao.lock = lk; /* the agent writes this handle's transitions to the ring */
	if (orbit_agent_start(&ao, &agent) < 0)
		return 1;
	for (int i = 0; i < 3; i++) {
		char label[16];
		struct orbit_lock_lease lease;
		orbit_lock_key_t key;

		snprintf(label, sizeof(label), "job-%d", i);
		key = orbit_lock_key(jobs, label, strlen(label));
		if (orbit_lock_try_acquire(lk, &key, &me, 5000000000ull, &lease, NULL) == 0)
			orbit_lock_release(lk, &key, &me, lease.token);
	}
	orbit_agent_stop(agent);
	orbit_lock_close(lk);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const type[] = { "?",       "acquire",	"renew",
					    "release", "force-release", "reclaim",
					    "repair" };
	char fleet[40];
	struct orbit_agent_options ao = { .size = sizeof(ao), .fleet = fleet, .name = "observer" };
	struct orbit_transition_event ev;
	orbit_transition_reader_t *r;
	orbit_agent_t *agent;
	int fd, rc, seen = 0;
	pid_t pid;

	if (argc == 3 && !strcmp(argv[1], "--writer"))
		return child_main(argv[2]);
	snprintf(fleet, sizeof(fleet), "example-agent-%d", (int)getpid()); /* a fleet of its own */
	rc = orbit_agent_start(&ao, &agent);
	if (rc < 0) {
		fprintf(stderr, "orbit_agent_start: %s\n", orbit_strerror(rc));
		return 1;
	}
	if (orbit_agent_subscribe(agent, &fd) < 0 || orbit_agent_reader_open(agent, &r) < 0)
		return 1;
	pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", argv[0], "--writer", fleet, (char *)NULL);
		_exit(127);
	}
	/* Six transitions are coming (three acquires, three releases). */
	while (seen < 6) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t n;

		if (poll(&p, 1, 5000) <= 0) {
			fprintf(stderr, "no transition within 5 s\n");
			break;
		}
		if (read(fd, &n, sizeof(n)) != sizeof(n)) /* drain the eventfd first */
			continue;
		while ((rc = orbit_transition_reader_next(r, &ev)) != -EAGAIN) {
			if (rc == -ORBIT_ELAGGED) {
				printf("lagged: frames were overwritten; re-read the lock table\n");
				continue;
			}
			if (rc < 0)
				continue; /* a corrupt frame: counted and skipped */
			printf("%-8s %.*s:%.*s owner %.*s token %llu\n",
			       ev.type < 7 ? type[ev.type] : "?", (int)ev.ns_len,
			       (const char *)ev.bytes, (int)ev.label_len,
			       (const char *)ev.bytes + ev.ns_len, (int)ev.owner_len,
			       (const char *)ev.bytes + ev.ns_len + ev.label_len,
			       (unsigned long long)ev.fencing_token);
			seen++;
		}
	}
	waitpid(pid, NULL, 0);
	orbit_transition_reader_close(r);
	orbit_agent_unsubscribe(agent, fd);
	orbit_agent_stop(agent);
	orbit_fleet_unlink(fleet); /* the example cleans up its fleet */
	return seen == 6 ? 0 : 1;
}
