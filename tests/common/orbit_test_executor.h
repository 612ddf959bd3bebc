/* SPDX-License-Identifier: MIT */
/*
 * tests/common/orbit_test_executor.h: a small orbit_executor_t for tests
 * and benchmarks that must not depend on the worker pool: N threads and
 * one FIFO guarded by a mutex, sleeping on a condition variable. Tasks run
 * on its threads, never on the submitter's stack. Destroy runs every task
 * already accepted, then joins the threads.
 */
#ifndef ORBIT_TEST_EXECUTOR_H
#define ORBIT_TEST_EXECUTOR_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include <orbit/executor.h>

struct test_task {
	struct test_task *next;
	orbit_task_fn fn;
	void *arg;
};

struct test_executor {
	pthread_mutex_t mu; /* protects everything below */
	pthread_cond_t cv;
	struct test_task *head, *tail;
	bool stopping;
	unsigned sleeping;
	unsigned long submitted;
	unsigned nthreads;
	pthread_t threads[8];
};

static void *test_executor_main(void *p)
{
	struct test_executor *ex = p;

	pthread_mutex_lock(&ex->mu);
	for (;;) {
		struct test_task *t = ex->head;

		if (!t) {
			if (ex->stopping)
				break;
			ex->sleeping++;
			pthread_cond_wait(&ex->cv, &ex->mu);
			ex->sleeping--;
			continue;
		}
		ex->head = t->next;
		if (!ex->head)
			ex->tail = NULL;
		pthread_mutex_unlock(&ex->mu);
		t->fn(t->arg);
		free(t);
		pthread_mutex_lock(&ex->mu);
	}
	pthread_mutex_unlock(&ex->mu);
	return NULL;
}

static int test_executor_submit(void *ctx, orbit_task_fn fn, void *arg, int home_node)
{
	struct test_executor *ex = ctx;
	struct test_task *t = malloc(sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->next = NULL;
	t->fn = fn;
	t->arg = arg;
	pthread_mutex_lock(&ex->mu);
	if (ex->stopping) {
		pthread_mutex_unlock(&ex->mu);
		free(t);
		return -EPIPE;
	}
	if (ex->tail)
		ex->tail->next = t;
	else
		ex->head = t;
	ex->tail = t;
	ex->submitted++;
	if (ex->sleeping)
		pthread_cond_signal(&ex->cv);
	pthread_mutex_unlock(&ex->mu);
	return 0;
}

static inline struct test_executor *test_executor_create(unsigned nthreads)
{
	struct test_executor *ex = calloc(1, sizeof(*ex));

	if (!ex)
		return NULL;
	if (nthreads == 0 || nthreads > 8)
		nthreads = 1;
	pthread_mutex_init(&ex->mu, NULL);
	pthread_cond_init(&ex->cv, NULL);
	ex->nthreads = nthreads;
	for (unsigned i = 0; i < nthreads; i++)
		if (pthread_create(&ex->threads[i], NULL, test_executor_main, ex))
			abort();
	return ex;
}

static inline orbit_executor_t test_executor_iface(struct test_executor *ex)
{
	return (orbit_executor_t){ .submit = test_executor_submit, .ctx = ex };
}

static inline unsigned long test_executor_submitted(struct test_executor *ex)
{
	unsigned long n;

	pthread_mutex_lock(&ex->mu);
	n = ex->submitted;
	pthread_mutex_unlock(&ex->mu);
	return n;
}

static inline void test_executor_destroy(struct test_executor *ex)
{
	if (!ex)
		return;
	pthread_mutex_lock(&ex->mu);
	ex->stopping = true;
	pthread_cond_broadcast(&ex->cv);
	pthread_mutex_unlock(&ex->mu);
	for (unsigned i = 0; i < ex->nthreads; i++)
		pthread_join(ex->threads[i], NULL);
	pthread_cond_destroy(&ex->cv);
	pthread_mutex_destroy(&ex->mu);
	free(ex);
}

#endif /* ORBIT_TEST_EXECUTOR_H */
