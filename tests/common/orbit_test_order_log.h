/* SPDX-License-Identifier: MIT */
/*
 * tests/common/orbit_test_order_log.h: an order log for tests that check
 * in which order work ran: a mutex-guarded array of ids with the time each
 * was added, searchable and waitable. Header-only, static functions.
 */
#ifndef ORBIT_TEST_ORDER_LOG_H
#define ORBIT_TEST_ORDER_LOG_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "orbit_test.h"

#define OLOG_MAX 1024

struct olog {
	pthread_mutex_t m; /* protects everything below */
	int v[OLOG_MAX];
	uint64_t at_ns[OLOG_MAX];
	int n;
};

static inline void olog_init(struct olog *l)
{
	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->m, NULL);
}

/* Appends @v (dropped past OLOG_MAX entries) with the time it was added. */
static inline void olog_add(struct olog *l, int v)
{
	pthread_mutex_lock(&l->m);
	if (l->n < OLOG_MAX) {
		l->at_ns[l->n] = orbit_test_now_ns();
		l->v[l->n++] = v;
	}
	pthread_mutex_unlock(&l->m);
}

/* The position of the first @v, or -1. */
static inline int olog_index(struct olog *l, int v)
{
	int at = -1;

	pthread_mutex_lock(&l->m);
	for (int i = 0; i < l->n && at < 0; i++)
		if (l->v[i] == v)
			at = i;
	pthread_mutex_unlock(&l->m);
	return at;
}

/* Waits up to @ms for @v to be logged. */
static inline bool olog_wait(struct olog *l, int v, int ms)
{
	uint64_t end = orbit_test_now_ns() + (uint64_t)ms * 1000000ull;

	while (olog_index(l, v) < 0) {
		if (orbit_test_now_ns() > end)
			return false;
		usleep(100);
	}
	return true;
}

#endif /* ORBIT_TEST_ORDER_LOG_H */
