// SPDX-License-Identifier: MIT
/*
 * examples/pool_queue.c: a worker pool and a serial execution queue. Work
 * submitted to one queue runs one item at a time, in order, on whichever
 * worker is free: the queue's state needs no lock of its own. The
 * producer threads get -EAGAIN when the queue is full (backpressure) and
 * retry; nothing blocks inside orbit.
 *
 *   cc pool_queue.c $(pkg-config --cflags --libs orbit) && ./a.out
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep, fork, poll under -std=c11 */

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>

#include <orbit/orbit.h>

#define PRODUCERS 4
#define ITEMS 10000

/* Owned by the queue: only its turns touch it, one at a time. */
static struct {
	uint64_t count;
	uint64_t last_seen[PRODUCERS];
	uint64_t out_of_order;
} state;

static int add(orbit_serial_turn_t *turn, void *arg)
{
	uintptr_t v = (uintptr_t)arg;
	unsigned producer = (unsigned)(v % PRODUCERS);
	uint64_t seq = v / PRODUCERS;

	(void)turn;
	if (seq < state.last_seen[producer])
		state.out_of_order++; /* never: one producer's items run in its order */
	state.last_seen[producer] = seq;
	state.count++;
	return ORBIT_SERIAL_DONE;
}

static orbit_serial_queue_t *queue;

static void *producer(void *arg)
{
	uintptr_t id = (uintptr_t)arg;

	for (uintptr_t i = 1; i <= ITEMS; i++) {
		void *item = (void *)(i * PRODUCERS + id);

		while (orbit_serial_queue_enqueue(queue, add, item) == -EAGAIN)
			sched_yield(); /* full: try again later */
	}
	return NULL;
}

int main(void)
{
	struct orbit_serial_queue_options qo;
	pthread_t t[PRODUCERS];
	orbit_worker_pool_t *pool;
	int rc;

	rc = orbit_worker_pool_create(NULL, &pool); /* one worker per usable CPU */
	if (rc < 0) {
		fprintf(stderr, "orbit_worker_pool_create: %s\n", orbit_strerror(rc));
		return 1;
	}
	orbit_serial_queue_options_init(&qo);
	qo.executor = orbit_worker_pool_executor(pool);
	rc = orbit_serial_queue_create(&qo, &queue); /* default policy */
	if (rc < 0) {
		fprintf(stderr, "orbit_serial_queue_create: %s\n", orbit_strerror(rc));
		return 1;
	}
	for (uintptr_t i = 0; i < PRODUCERS; i++)
		pthread_create(&t[i], NULL, producer, (void *)i);
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(t[i], NULL);
	orbit_serial_queue_close(queue);		/* no more submissions */
	orbit_serial_queue_await_quiescence(queue, -1); /* everything accepted has run */
	printf("%llu items ran, %llu out of order\n", (unsigned long long)state.count,
	       (unsigned long long)state.out_of_order);
	orbit_serial_queue_destroy(queue);
	orbit_worker_pool_destroy(pool);
	return state.count == (uint64_t)PRODUCERS * ITEMS && state.out_of_order == 0 ? 0 : 1;
}
