// SPDX-License-Identifier: MIT
/*
 * agent/agent_subs.c: the agent's subscribers (orbit/agent.h): callbacks
 * the agent thread runs, then eventfds it writes, after each drain that
 * brought a frame or a lag, under subs_mu (see agent_internal.h), and the
 * skip of our own wake class while nobody subscribes (see wire in
 * agent_internal.h: the skip mask of shm/lock_ring.h). A callback is the
 * one-hop path: it runs on the thread the publisher's FUTEX_WAKE woke, so
 * no second thread is woken before the subscriber's code runs.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include <orbit/agent.h>

#include "agent/agent_internal.h"

#define die_on orbit__die_on

/* Under subs_mu: skip our own wake class exactly while nobody subscribes. */
void orbit__agent_subs_update_skip(struct orbit_agent *a)
{
	uint32_t skip = a->nsubs + a->ncbs == 0 && a->wake_class != ORBIT_DOORBELL_SHARED
			    ? a->wake_class
			    : 0;

	orbit__lock_ring_set_skip(&a->wire, skip);
}

/*
 * Set on an agent thread while it runs its callbacks, under its subs_mu.
 * Thread-local, so it is one thread's: no ordering. Any agent's
 * (un)subscribe or stop made while it is set is refused: a call on our own
 * agent would wait for the subs_mu we hold, and a call on another agent of
 * the process could wait for its subs_mu while its callback waits for ours
 * (ABBA between two agent threads).
 */
static _Thread_local bool in_callbacks;

/* Whether a call on @a could wait for a callback this thread is inside of. */
bool orbit__agent_in_callback(const struct orbit_agent *a)
{
	return in_callbacks || (a->thread_started && pthread_equal(pthread_self(), a->thread));
}

void orbit__agent_subs_signal(struct orbit_agent *a)
{
	uint64_t one = 1;

	die_on(pthread_mutex_lock(&a->subs_mu), "lock subs");
	in_callbacks = true;
	for (int i = 0; i < a->ncbs; i++) { /* first: no system call before them */
		a->cbs[i].fn(a->cbs[i].arg);
		a->signals++;
	}
	in_callbacks = false;
	for (int i = 0; i < a->nsubs; i++) {
		/* EAGAIN: the counter is at its max, the subscriber is woken anyway. */
		if (write(a->subs[i], &one, sizeof(one)) == (ssize_t)sizeof(one))
			a->signals++;
	}
	die_on(pthread_mutex_unlock(&a->subs_mu), "unlock subs");
}

void orbit__agent_subs_close(struct orbit_agent *a)
{
	for (int i = 0; i < a->nsubs; i++)
		close(a->subs[i]);
	a->nsubs = 0;
	a->ncbs = 0; /* callbacks still subscribed are dropped: nothing to close */
}

int orbit_agent_subscribe(orbit_agent_t *a, int *fd)
{
	int e, rc = orbit__agent_check(a);

	if (rc < 0)
		return rc;
	if (!fd)
		return -EINVAL;
	if (orbit__agent_in_callback(a))
		return -EDEADLK;
	e = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e < 0)
		return -errno;
	die_on(pthread_mutex_lock(&a->subs_mu), "lock subs");
	if (a->nsubs >= AGENT_MAX_SUBS)
		rc = -ENOSPC;
	else
		a->subs[a->nsubs++] = e;
	orbit__agent_subs_update_skip(a);
	die_on(pthread_mutex_unlock(&a->subs_mu), "unlock subs");
	if (rc < 0) {
		close(e);
		return rc;
	}
	*fd = e;
	return 0;
}

int orbit_agent_unsubscribe(orbit_agent_t *a, int fd)
{
	int rc = orbit__agent_check(a);

	if (rc < 0)
		return rc;
	if (fd < 0)
		return -EINVAL;
	if (orbit__agent_in_callback(a))
		return -EDEADLK;
	rc = -ENOENT;
	die_on(pthread_mutex_lock(&a->subs_mu), "lock subs");
	for (int i = 0; i < a->nsubs; i++) {
		if (a->subs[i] == fd) {
			a->subs[i] = a->subs[--a->nsubs];
			orbit__agent_subs_update_skip(a);
			rc = 0;
			break;
		}
	}
	die_on(pthread_mutex_unlock(&a->subs_mu), "unlock subs");
	if (rc == 0)
		close(fd);
	return rc;
}

/* The checks both callback calls make, in their order of codes. */
static int callback_call_check(const struct orbit_agent *a, orbit_agent_wake_fn fn)
{
	int rc = orbit__agent_check(a);

	if (rc < 0)
		return rc;
	if (!fn)
		return -EINVAL;
	return orbit__agent_in_callback(a) ? -EDEADLK : 0;
}

/* Under subs_mu: the index of (@fn, @arg) in cbs[], or -1. */
static int callback_find(const struct orbit_agent *a, orbit_agent_wake_fn fn, void *arg)
{
	for (int i = 0; i < a->ncbs; i++)
		if (a->cbs[i].fn == fn && a->cbs[i].arg == arg)
			return i;
	return -1;
}

int orbit_agent_subscribe_callback(orbit_agent_t *a, orbit_agent_wake_fn fn, void *arg)
{
	int rc = callback_call_check(a, fn);

	if (rc < 0)
		return rc;
	die_on(pthread_mutex_lock(&a->subs_mu), "lock subs");
	if (callback_find(a, fn, arg) >= 0)
		rc = -EEXIST;
	else if (a->ncbs >= AGENT_MAX_SUBS)
		rc = -ENOSPC;
	else {
		a->cbs[a->ncbs].fn = fn;
		a->cbs[a->ncbs++].arg = arg;
		orbit__agent_subs_update_skip(a);
	}
	die_on(pthread_mutex_unlock(&a->subs_mu), "unlock subs");
	return rc;
}

int orbit_agent_unsubscribe_callback(orbit_agent_t *a, orbit_agent_wake_fn fn, void *arg)
{
	int i, rc = callback_call_check(a, fn);

	if (rc < 0)
		return rc;
	/* The agent thread holds subs_mu while callbacks run: once we have it, none runs. */
	die_on(pthread_mutex_lock(&a->subs_mu), "lock subs");
	i = callback_find(a, fn, arg);
	if (i < 0) {
		rc = -ENOENT;
	} else {
		/* Keep the order of the others: they run in subscription order */
		memmove(&a->cbs[i], &a->cbs[i + 1], (size_t)(a->ncbs - i - 1) * sizeof(a->cbs[0]));
		a->ncbs--;
		orbit__agent_subs_update_skip(a);
	}
	die_on(pthread_mutex_unlock(&a->subs_mu), "unlock subs");
	return rc;
}
