// SPDX-License-Identifier: MIT
/*
 * agent/agent_subs.c: the agent's subscribers (orbit/agent.h): eventfds
 * the agent thread writes after each drain that brought a frame or a lag,
 * under subs_mu (a leaf), and the skip of our own wake class while nobody
 * subscribes (see wire in agent_internal.h: the skip mask of shm/lock_ring.h).
 */
#include "config.h"

#include <errno.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include <orbit/agent.h>

#include "agent/agent_internal.h"

#define die_on orbit__die_on

/* Under subs_mu: skip our own wake class exactly while nobody subscribes. */
void orbit__agent_subs_update_skip(struct orbit_agent *a)
{
	uint32_t skip = a->nsubs == 0 && a->wake_class != ORBIT_DOORBELL_SHARED ? a->wake_class : 0;

	orbit__lock_ring_set_skip(&a->wire, skip);
}

void orbit__agent_subs_signal(struct orbit_agent *a)
{
	uint64_t one = 1;

	die_on(pthread_mutex_lock(&a->subs_mu), "lock subs");
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
}

int orbit_agent_subscribe(orbit_agent_t *a, int *fd)
{
	int e, rc = orbit__agent_check(a);

	if (rc < 0)
		return rc;
	if (!fd)
		return -EINVAL;
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
