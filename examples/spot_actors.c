// SPDX-License-Identifier: MIT
/*
 * examples/spot_actors.c: a Spot coordinator with Actors. Each Actor (an
 * account here) handles its messages one at a time, in order, while
 * different Actors run at once on the worker pool (PerActor mode). One
 * handler makes an "external call" (a reply that arrives on another
 * thread): it yields the turn around it with orbit_work_yield() and its
 * continuation runs when the reply resumes it. A completion tells the
 * submitter when the last message has been handled.
 *
 *   cc spot_actors.c $(pkg-config --cflags --libs orbit) && ./a.out
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep, fork, poll under -std=c11 */

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <orbit/orbit.h>

#define ACCOUNTS 4
#define DEPOSITS 1000

/* Each balance is owned by its Actor: only that Actor's turns touch it. */
static int64_t balance[ACCOUNTS];
static int audits_done;

struct deposit {
	uint64_t account;
	int64_t amount;
};

static struct deposit deposits[ACCOUNTS][DEPOSITS];

static int on_deposit(orbit_serial_turn_t *turn, void *arg)
{
	struct deposit *d = arg;

	(void)turn;
	balance[d->account] += d->amount;
	return ORBIT_SERIAL_DONE;
}

/* The "external service": answers on its own thread a little later. */
static void *reply_later(void *h)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	orbit_serial_queue_resume(h); /* the continuation runs on a new turn of the Actor */
	return NULL;
}

static int audit_reply(orbit_serial_turn_t *turn, void *arg)
{
	uint64_t account = (uint64_t)(uintptr_t)arg;

	(void)turn;
	printf("audit of account %llu: balance %lld\n", (unsigned long long)account,
	       (long long)balance[account]);
	audits_done++;
	return ORBIT_SERIAL_DONE; /* now the Actor's next message may run */
}

static int on_audit(orbit_serial_turn_t *turn, void *arg)
{
	orbit_serial_resume_t *h;
	pthread_t t;

	/* Hand the turn back while the reply is away; audit_reply runs when it comes. */
	if (orbit_work_yield(turn, audit_reply, arg, &h) < 0)
		return audit_reply(turn, arg); /* could not yield: do it synchronously */
	pthread_create(&t, NULL, reply_later, h);
	pthread_detach(t);
	return ORBIT_SERIAL_SUSPENDED;
}

int main(void)
{
	struct orbit_spot_serial_executor_options so;
	orbit_spot_serial_executor_t *spot;
	orbit_work_completion_t *done;
	orbit_worker_pool_t *pool;
	int rc;

	if (orbit_worker_pool_create(NULL, &pool) < 0 || orbit_work_completion_create(&done) < 0)
		return 1;
	orbit_spot_serial_executor_options_init(&so);
	so.mode = ORBIT_SPOT_PER_ACTOR;
	so.executor = orbit_worker_pool_executor(pool);
	so.name = "bank";
	rc = orbit_spot_serial_executor_create(&so, &spot);
	if (rc < 0) {
		fprintf(stderr, "orbit_spot_serial_executor_create: %s\n", orbit_strerror(rc));
		return 1;
	}
	for (int i = 0; i < DEPOSITS; i++)
		for (uint64_t a = 0; a < ACCOUNTS; a++) {
			struct deposit *d = &deposits[a][i];

			d->account = a;
			d->amount = (int64_t)a + 1;
			/* -EAGAIN: that Actor's mailbox is full (the others are not): retry */
			while ((rc = orbit_spot_execute_actor(spot, a, on_deposit, d, sizeof(*d),
							      NULL)) == -EAGAIN)
				sched_yield();
			if (rc < 0)
				return 1;
		}
	/* An audit per account, after its deposits (an Actor's messages run in order). */
	for (uint64_t a = 0; a < ACCOUNTS; a++)
		while ((rc = orbit_spot_execute_actor(spot, a, on_audit, (void *)(uintptr_t)a, 0,
						      a + 1 == ACCOUNTS ? done : NULL)) == -EAGAIN)
			sched_yield();
	orbit_work_completion_wait(done, -1); /* the last audit has finished */
	orbit_spot_serial_executor_close(spot);
	orbit_spot_serial_executor_await_quiescence(spot, -1);
	rc = audits_done == ACCOUNTS ? 0 : 1;
	for (int a = 0; a < ACCOUNTS; a++)
		if (balance[a] != (int64_t)(a + 1) * DEPOSITS)
			rc = 1;
	orbit_spot_serial_executor_destroy(spot);
	orbit_work_completion_destroy(done);
	orbit_worker_pool_destroy(pool);
	return rc;
}
