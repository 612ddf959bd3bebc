// SPDX-License-Identifier: MIT
/*
 * examples/spot_queue.c: a Spot shared by two processes. The host process
 * hosts the Spot "example.bank" (an orbit-lock lease on its name, taken
 * through its agent's lock handle) and runs every record it receives on a
 * Spot coordinator over a worker pool: each account is an Actor, so one
 * account's deposits run one at a time and in order while different
 * accounts run at once. A second process, the submitter, started from the
 * same program with --submit, sends the deposits through the Spot's
 * shared-memory queue; when a lane is full the submit answers -EAGAIN at
 * once and the submitter waits for room. The last record of each account
 * is an audit that makes an "external call": its handler yields the turn
 * with orbit_spot_yield(), and the record completes only when the
 * continuation has run.
 *
 *   cc spot_queue.c $(pkg-config --cflags --libs orbit) && ./a.out
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep, fork, poll under -std=c11 */

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <orbit/orbit.h>

#define SPOT "example.bank"
#define ACCOUNTS 4
#define DEPOSITS 500

/* What a record carries: the Spot queue copies these bytes. */
struct deposit {
	int64_t amount; /* 0: the account's audit */
};

/* Each balance is owned by its Actor: only that account's turns touch it. */
static int64_t balance[ACCOUNTS];
static int audits;

/* The submitter: a separate process with its own agent (exec'd fresh). */
static int submit_main(const char *fleet)
{
	struct orbit_agent_options ao = { .size = sizeof(ao), .fleet = fleet, .name = "teller" };
	orbit_spot_client_t *c;
	orbit_agent_t *agent;
	int rc, waits = 0;

	rc = orbit_agent_start(&ao, &agent);
	if (rc < 0) {
		fprintf(stderr, "submitter: orbit_agent_start: %s\n", orbit_strerror(rc));
		return 1;
	}
	rc = orbit_spot_client_open(agent, SPOT, NULL, &c); /* no host needed: records wait */
	if (rc < 0) {
		fprintf(stderr, "submitter: orbit_spot_client_open: %s\n", orbit_strerror(rc));
		return 1;
	}
	for (int i = 0; i <= DEPOSITS; i++)
		for (uint64_t a = 0; a < ACCOUNTS; a++) {
			struct deposit d = { i < DEPOSITS ? (int64_t)a + 1 : 0 };

			while ((rc = orbit_spot_submit_actor(c, a, &d, sizeof(d), NULL)) ==
			       -EAGAIN) {
				/* The lane is full: sleep until the host frees room, then submit again. */
				orbit_spot_client_wait_room(c, ORBIT_SPOT_LANE_APP, sizeof(d),
							    1000000000);
				waits++;
			}
			if (rc < 0) {
				fprintf(stderr, "submitter: submit: %s\n", orbit_strerror(rc));
				return 1;
			}
		}
	printf("submitter: %d records sent (%d waits for room)\n", ACCOUNTS * (DEPOSITS + 1),
	       waits);
	orbit_spot_client_close(c);
	orbit_agent_stop(agent);
	return 0;
}

/* The "external service" of an audit: answers on its own thread a little later. */
static void *reply_later(void *h)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	orbit_serial_queue_resume(h); /* the continuation runs on a new turn of the Actor */
	return NULL;
}

static int audit_reply(orbit_serial_turn_t *turn, void *arg)
{
	uint64_t account = (uint64_t)(uintptr_t)arg;

	(void)turn;
	printf("host: audit of account %llu: balance %lld\n", (unsigned long long)account,
	       (long long)balance[account]);
	audits++; /* counted when the host has stopped: after every handler finished */
	return ORBIT_SERIAL_DONE; /* now the audit record completes in the queue */
}

static int on_actor(orbit_serial_turn_t *turn, const struct orbit_spot_record *rec, void *ctx)
{
	struct deposit d;
	orbit_serial_resume_t *h;
	pthread_t t;

	(void)ctx;
	if (rec->len != sizeof(d) || rec->actor_id >= ACCOUNTS)
		return ORBIT_SERIAL_DONE; /* not ours: complete it unapplied */
	memcpy(&d, rec->payload, sizeof(d));
	if (rec->redelivered)
		fprintf(stderr, "host: record %llu of producer %u delivered again\n",
			(unsigned long long)rec->producer_seq, rec->producer_row);
	if (d.amount != 0) {
		balance[rec->actor_id] += d.amount;
		return ORBIT_SERIAL_DONE;
	}
	/* The audit: hand the turn back while the reply is away. */
	if (orbit_spot_yield(turn, audit_reply, (void *)(uintptr_t)rec->actor_id, &h) < 0)
		return audit_reply(turn, (void *)(uintptr_t)rec->actor_id);
	if (pthread_create(&t, NULL, reply_later, h) != 0) {
		orbit_serial_queue_resume(h); /* no thread: resume at once */
		return ORBIT_SERIAL_SUSPENDED;
	}
	pthread_detach(t);
	return ORBIT_SERIAL_SUSPENDED;
}

int main(int argc, char **argv)
{
	char fleet[40];
	struct orbit_lock_options lo = { .size = sizeof(lo), .fleet = fleet };
	struct orbit_agent_options ao = { .size = sizeof(ao), .fleet = fleet, .name = "bank-host" };
	struct orbit_spot_host_options ho;
	struct orbit_spot_host_stats st;
	orbit_worker_pool_t *pool;
	orbit_spot_host_t *host;
	orbit_agent_t *agent;
	orbit_lock_t *lk;
	int rc, status = 1, ok = 1;
	pid_t pid;

	if (argc == 3 && !strcmp(argv[1], "--submit"))
		return submit_main(argv[2]);
	snprintf(fleet, sizeof(fleet), "example-spot-%d", (int)getpid()); /* a fleet of its own */
	rc = orbit_lock_open(&lo, &lk);
	if (rc < 0) {
		fprintf(stderr, "orbit_lock_open: %s (%s)\n", orbit_strerror(rc),
			orbit_segment_last_error());
		return 1;
	}
	ao.lock = lk; /* hosting is a lease in this lock table */
	if ((rc = orbit_agent_start(&ao, &agent)) < 0 ||
	    (rc = orbit_worker_pool_create(NULL, &pool)) < 0) {
		fprintf(stderr, "start: %s\n", orbit_strerror(rc));
		return 1;
	}
	orbit_spot_host_options_init(&ho);
	ho.spot = SPOT;
	ho.on_actor = on_actor;
	ho.mode = ORBIT_SPOT_PER_ACTOR; /* accounts run at once, each in order */
	ho.executor = orbit_worker_pool_executor(pool);
	rc = orbit_spot_host_start(agent, &ho, &host);
	if (rc < 0) {
		fprintf(stderr, "orbit_spot_host_start: %s\n", orbit_strerror(rc));
		return 1;
	}
	pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", argv[0], "--submit", fleet, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		fprintf(stderr, "the submitter failed\n");
		ok = 0;
	}
	/* Every record the submitter sent completes (up to 10 s). */
	for (int ms = 0; ok && ms < 10000; ms++) {
		orbit_spot_host_stats(host, &st);
		if (st.completed == ACCOUNTS * (DEPOSITS + 1))
			break;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	orbit_spot_host_stop(host); /* waits for handlers in flight, releases the lease */
	orbit_worker_pool_destroy(pool);
	orbit_agent_stop(agent);
	orbit_lock_close(lk);
	orbit_fleet_unlink(fleet); /* the example cleans up its fleet */
	if (audits != ACCOUNTS)
		ok = 0;
	for (int a = 0; a < ACCOUNTS; a++)
		if (balance[a] != (int64_t)(a + 1) * DEPOSITS)
			ok = 0;
	printf("host: %s\n", ok ? "every deposit applied once" : "MISMATCH");
	return ok ? 0 : 1;
}
