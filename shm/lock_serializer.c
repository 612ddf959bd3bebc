// SPDX-License-Identifier: MIT
/*
 * shm/lock_serializer.c: the FLOCK and FUTEX serializers of the lock table
 * (see lock_serializer.h). Owns the pthread calls on the robust mutex and
 * the flock pairing; knows nothing of slots.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shm/lock_serializer.h"

static void check_pthread(int rc)
{
	if (rc != 0)
		abort(); /* a broken invariant of this process (STYLE: abort only here) */
}

int orbit__lock_ser_init_shared(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int rc;

	rc = pthread_mutexattr_init(&a);
	if (rc)
		return -rc;
	rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (!rc)
		rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (!rc)
		rc = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return -rc;
}

void orbit__lock_ser_init(struct orbit__lock_ser *s, enum orbit_lock_serializer kind,
			  const orbit_seg_t *seg, struct orbit_lock_table_hdr *hdr)
{
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->seg = seg;
	s->shared = &hdr->mutex;
	s->dirty_pid = &hdr->dirty_pid;
	check_pthread(pthread_mutex_init(&s->local, NULL));
}

void orbit__lock_ser_destroy(struct orbit__lock_ser *s)
{
	check_pthread(pthread_mutex_destroy(&s->local));
}

int orbit__lock_ser_enter(struct orbit__lock_ser *s, bool *prev_died)
{
	int rc;

	*prev_died = false;
	if (s->kind == ORBIT_LOCK_SERIALIZER_FUTEX) {
		rc = pthread_mutex_lock(s->shared);
		if (rc == EOWNERDEAD) {
			*prev_died = true;
			return 0;
		}
		/* EINVAL/EDEADLK/ENOTRECOVERABLE come from SHM bytes, not from us */
		return -rc;
	}
	check_pthread(pthread_mutex_lock(&s->local));
	rc = orbit__seg_lock(s->seg);
	if (rc) {
		check_pthread(pthread_mutex_unlock(&s->local));
		return rc;
	}
	/* relaxed: the flock orders us after the last holder's stores */
	*prev_died = atomic_load_explicit(s->dirty_pid, memory_order_relaxed) != 0;
	return 0;
}

void orbit__lock_ser_repaired(struct orbit__lock_ser *s)
{
	if (s->kind == ORBIT_LOCK_SERIALIZER_FUTEX)
		pthread_mutex_consistent(s->shared); /* only fails if not EOWNERDEAD-held */
}

void orbit__lock_ser_leave(struct orbit__lock_ser *s)
{
	if (s->kind == ORBIT_LOCK_SERIALIZER_FUTEX) {
		pthread_mutex_unlock(s->shared); /* cannot fail: we own it */
		return;
	}
	orbit__seg_unlock(s->seg); /* LOCK_UN on our own description */
	check_pthread(pthread_mutex_unlock(&s->local));
}
