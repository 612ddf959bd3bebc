/* SPDX-License-Identifier: MIT */
/*
 * shm/lock_serializer.h: the two cross-process serializers of the lock
 * table behind one internal interface (shm/lock.c is the only user).
 *   FLOCK: a process-local pthread mutex (threads of this process) plus
 *          flock(LOCK_EX) on this handle's segment fd (processes); the
 *          kernel drops the flock when the holder dies. A holder that died
 *          inside is detected by the table's dirty_pid word.
 *   FUTEX: a PTHREAD_PROCESS_SHARED + PTHREAD_MUTEX_ROBUST mutex in the
 *          table header; the kernel marks it when the holder dies and the
 *          next locker gets EOWNERDEAD. No syscall when uncontended.
 * Either way the caller learns "the previous holder died inside" and runs
 * the table repair before it mutates anything.
 * Lock order: the process-local mutex, then the cross-process lock; no
 * other lock may be held while entering.
 */
#ifndef ORBIT_SHM_LOCK_SERIALIZER_H
#define ORBIT_SHM_LOCK_SERIALIZER_H

#include <pthread.h>
#include <stdbool.h>

#include "shm/lock_table.h"
#include "shm/segment.h"

struct orbit__lock_ser {
	enum orbit_lock_serializer kind; /* FUTEX or FLOCK */
	const orbit_seg_t *seg;          /* FLOCK: whose fd is flocked */
	pthread_mutex_t *shared;         /* FUTEX: the mutex in the table header */
	pthread_mutex_t local;           /* FLOCK: protects this handle's flock */
	_Atomic uint32_t *dirty_pid;     /* FLOCK: the table's dirty word */
};

/* Creator only (segment init callback): initialise the robust mutex in SHM. */
int orbit__lock_ser_init_shared(pthread_mutex_t *m);

/* Set up a handle's serializer (local mutex). Aborts only on a pthread failure. */
void orbit__lock_ser_init(struct orbit__lock_ser *s, enum orbit_lock_serializer kind,
			  const orbit_seg_t *seg, struct orbit_lock_table_hdr *hdr);
void orbit__lock_ser_destroy(struct orbit__lock_ser *s);

/*
 * orbit__lock_ser_enter - take the serializer (blocking).
 * @prev_died: set when the previous holder died inside the critical
 *             section: the caller must repair the table, then call
 *             orbit__lock_ser_repaired().
 * Returns 0, -ENOTRECOVERABLE (a robust mutex left unrepaired), or a
 * negative errno from flock / a mutex in corrupt SHM (-EINVAL).
 */
int orbit__lock_ser_enter(struct orbit__lock_ser *s, bool *prev_died);
/* After repair under a FUTEX EOWNERDEAD: pthread_mutex_consistent. */
void orbit__lock_ser_repaired(struct orbit__lock_ser *s);
void orbit__lock_ser_leave(struct orbit__lock_ser *s);

#endif /* ORBIT_SHM_LOCK_SERIALIZER_H */
