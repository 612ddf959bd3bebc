/* SPDX-License-Identifier: MIT */
/*
 * lib/spot_batch.h: internal. The batch hand-over of the Spot coordinator
 * (lib/spot_executor.c) for in-library callers that submit runs of
 * records: the cross-process Spot host (agent/spot_host.c) hands the
 * records it took from its queue to the coordinator a run at a time, with
 * one queue lock and at most one drain wake-up per run instead of one of
 * each per record.
 */
#ifndef ORBIT_LIB_SPOT_BATCH_H
#define ORBIT_LIB_SPOT_BATCH_H

#include <orbit/spot_executor.h>

/* Records orbit__spot_execute_n() takes per call, at most. */
#define ORBIT__SPOT_BATCH_MAX 256u

/*
 * orbit__spot_execute_n - orbit_spot_execute_spot() (@lifecycle false) or
 * orbit_spot_execute_lifecycle() (@lifecycle true) of @fn for each of
 * @args[0..n-1] (@n at most ORBIT__SPOT_BATCH_MAX), in that order, without
 * a completion: the same decisions, order, counts and refusals as @n
 * calls made one after the other that stop at the first refusal. Under
 * PerActor the accepted records are enqueued on the Spot queue with one
 * lock section and at most one drain scheduled (lib/serial_queue.h
 * orbit__serial_queue_enqueue_n()); under SpotWide (whose Spot and
 * lifecycle work is decided in lane turns with the waiting FIFO) it makes
 * the single calls.
 * Context: as orbit_spot_execute_spot().
 * Returns: the number of records accepted (0..@n), the first ones; when
 * it is below @n, *@err holds the refusal of the next record as the single
 * call would return it (-EAGAIN, -EPIPE, -ENOMEM, ...) and the records
 * after that one were not tried (counted nowhere). -EINVAL (NULL @spot,
 * @fn, @err or @args, @n above the maximum) with nothing done.
 */
int orbit__spot_execute_n(orbit_spot_serial_executor_t *spot, bool lifecycle,
			  orbit_serial_work_fn fn, void *const *args, unsigned n, int *err);

/*
 * orbit__spot_fork_check - may this process use @spot? A coordinator
 * another process created (this is a forked child of it) refuses every
 * execute_* with -ECHILD; the Spot host asks first, before it takes its
 * lease, instead of taking records it can never hand over.
 * Context: any thread; one relaxed load and a compare (base/fork_guard.h).
 * Returns: 0, or -ECHILD in a forked child of @spot's creator.
 */
int orbit__spot_fork_check(const orbit_spot_serial_executor_t *spot);

#endif /* ORBIT_LIB_SPOT_BATCH_H */
