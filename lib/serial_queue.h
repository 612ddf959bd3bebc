/* SPDX-License-Identifier: MIT */
/*
 * lib/serial_queue.h: internal. What the serial queue (lib/serial_queue.c)
 * offers its in-library owners beyond the public orbit/serial_queue.h: a
 * notice that the application lane has room again after it refused a
 * submission for capacity, and sealing a coordinator's queue. The SpotWide Spot
 * coordinator (lib/spot_executor.c) uses it so that an Actor turn that
 * found the Spot queue full waits for room instead of being lost.
 */
#ifndef ORBIT_LIB_SERIAL_QUEUE_H
#define ORBIT_LIB_SERIAL_QUEUE_H

#include <orbit/serial_queue.h>

/*
 * orbit__lane_policy_copy - read a caller's policy (NULL: the §6.1
 * defaults) by the base/options.h rule, give each zero field its default
 * (ORBIT_POLICY_NO_FIXED_COST: a fixed cost of 0) and check it. The queue
 * and the Spot coordinator keep the copy, never the caller's pointer.
 * Returns 0; -EINVAL (size 0, a fixed cost above a byte capacity); -E2BIG
 * (a newer caller's policy sets a field this build does not know).
 */
int orbit__lane_policy_copy(orbit_execution_lane_policy_t *p,
			    const orbit_execution_lane_policy_t *user);

/* Called with the ctx given to orbit__serial_queue_set_room_hook(). */
typedef void (*orbit__serial_queue_room_fn)(void *ctx);

/*
 * orbit__serial_queue_set_room_hook - after the application lane refused
 * a submission with -EAGAIN (full by count or bytes), the next return of
 * an application-lane reservation (an item or continuation finished:
 * §5, after its handler) calls @fn(@ctx) once; a later refusal arms it
 * again. @fn runs on the drain that returned the reservation, between two
 * turns, without the queue lock and while the drain is still active (so
 * the queue outlives the call); it may enqueue to this queue (the drain
 * runs what it adds) and take locks that are taken around an enqueue.
 * Not called for the lifecycle lane, nor when a submission is withdrawn
 * because the executor refused its drain (that queue stalls until the
 * next submission anyway). @fn NULL removes the hook.
 *
 * Context: before @q is shared (at creation by its owner); takes the
 * queue mutex.
 */
void orbit__serial_queue_set_room_hook(orbit_serial_queue_t *q, orbit__serial_queue_room_fn fn,
				       void *ctx);

/*
 * orbit__serial_queue_seal - mark @q as a coordinator's queue: from now
 * on orbit_serial_turn_queue() answers NULL for its turns, so work run by
 * a Spot, Actor or session coordinator cannot reach the queue it runs on
 * (07 §3: no surface lets a caller pick a queue; enqueueing or closing it
 * directly would bypass the coordinator's counts and close).
 *
 * Context: before @q is shared (at creation by its owner); no lock.
 */
void orbit__serial_queue_seal(orbit_serial_queue_t *q);

/*
 * orbit__serial_turn_may_continue - may the work on @turn go on with more
 * of its owner's work as part of this same turn: it has not suspended,
 * the drain slice's owner time budget is not spent (§6.4), and nothing
 * else waits in the queue (no application item behind this one, no
 * lifecycle, barrier-next or resumed work). Running more then takes the
 * place of queueing it at the back of an empty queue, so the order among
 * the queue's work is the same. The SpotWide chain (lib/serial_executor.c)
 * asks before each further record.
 *
 * Context: the work running on @turn, on its thread; reads the clock and
 * takes the queue lock, except when nothing arrived since the last call
 * of the same item found it alone (then one load of the arrivals count).
 */
bool orbit__serial_turn_may_continue(orbit_serial_turn_t *turn);

/*
 * orbit__serial_queue_pass_held - hand the HOLD claim @h on to the next
 * records of its queue without a drain. @h must be suspended with
 * ORBIT_SERIAL_SUSPEND_HOLD, its turn ended and not resumed. When nothing
 * outranks the application lane, in one section of the queue lock: the
 * records @h held give their reservations back as if its continuation
 * had run and finished (§5), and the queue's next application items of
 * the function @first (from a batch a drain claimed and left, once no
 * drain is active, then from the ring), up to @max of them, oldest
 * first, are taken as if @first had run for each and suspended with HOLD
 * at once: @h now holds them all, their arguments in @args[0..n-1] in
 * queue order and each one's reserved bytes in @bytes[0..n-1], its
 * continuation @cont with the last one's argument. The caller then does
 * what @first would have done for each, one after another, on turns it
 * holds elsewhere; as each but the last ends it marks it ended
 * (orbit__serial_queue_held_end_one() with its @bytes), and after the
 * last it resumes or passes @h again, which returns every one's
 * reservation still held in one section. Order is
 * kept: the items taken are the oldest of the queue, and nothing else
 * could have run before them while @h was held. When the queue holds
 * nothing at all, the claim ends instead: its reservations go back, the
 * queue is no longer held and @h is gone; the caller does what @cont
 * would have done.
 *
 * Context: the owner of @h, once per claim end; takes the queue lock.
 * Returns: n >= 1 (passed: @h holds n items); 0 (ended: @h is freed);
 * -EAGAIN (not passed: other work is at the front; @h is untouched:
 * resume it as usual).
 */
int orbit__serial_queue_pass_held(orbit_serial_resume_t *h, orbit_serial_work_fn first,
				  orbit_serial_work_fn cont, void **args, uint64_t *bytes,
				  unsigned max);

/*
 * orbit__serial_queue_held_end_one - one of the records the HOLD claim @h
 * took with orbit__serial_queue_pass_held(), not the last, ended (its
 * handler finished, §5): its reservation, @bytes as pass_held reported
 * it, is carried with the other ended ones and goes back with @h's next
 * return, in one section of the queue lock for all of them: held_return()
 * below, or the pass (pass_held) or resume that returns everything @h
 * holds. Until then the queue still counts it. Called once per such
 * record, in their order.
 *
 * Context: the owner of @h; no lock. Aborts (a broken caller) when @h
 * would be left holding no record not yet ended, or less than @bytes.
 * Returns: nothing.
 */
void orbit__serial_queue_held_end_one(orbit_serial_resume_t *h, uint64_t bytes);

/*
 * orbit__serial_queue_held_return - give back the reservations of the
 * records of @h that ended (orbit__serial_queue_held_end_one()) in one
 * section of the queue lock, booked as their continuations having run
 * and finished; @h stays parked and holds the records not yet ended, so
 * the queue counts exactly those. The SpotWide coordinator calls it when
 * a record of @h yields (07 §5: what stays reserved while it waits is
 * its own reservation and those of the records after it). Nothing ended:
 * no lock is taken.
 *
 * Context: the owner of @h, while @h is parked; takes the queue lock.
 * Returns: nothing.
 */
void orbit__serial_queue_held_return(orbit_serial_resume_t *h);

/*
 * orbit__serial_queue_enqueue_n - submit @n items (@fn with @args[0..n-1],
 * each reserving @payload_bytes plus the fixed cost) in that order to the
 * application lane, or to the lifecycle lane with @lifecycle, in one
 * section of the queue lock and with at most one drain scheduled for all
 * of them: the §6.3 decision, the sequence number and the insertion of
 * each item are made as orbit_serial_queue_enqueue_with_payload_bytes()
 * (or _enqueue_lifecycle()) makes them, one item after the other, and the
 * first refusal ends the batch. The items accepted are therefore always
 * the first ones, in order, and what is not accepted was either refused
 * (the first one, with the code in *@err, counted in the queue's stats as
 * that refusal) or not tried (the rest, counted nowhere). A refusal of the
 * drain by the executor withdraws the whole batch (0 accepted, *@err the
 * executor's code), as it withdraws a single item.
 * Returns: the number of items accepted (0..@n), with *@err 0 when it is
 * @n, else the refusal: -EAGAIN (full by count or bytes; arms the room
 * hook for the application lane), -E2BIG, -EPIPE (closed), -ENOMEM, or
 * the executor's error; -EINVAL (NULL @q, @fn or @err, or @args with
 * @n > 0) and nothing done.
 *
 * Context: any thread, as orbit_serial_queue_enqueue(); takes the queue
 * lock once; the executor's submit (a syscall for a sleeping worker) at
 * most once, after the lock.
 */
int orbit__serial_queue_enqueue_n(orbit_serial_queue_t *q, bool lifecycle, orbit_serial_work_fn fn,
				  void *const *args, uint64_t payload_bytes, unsigned n, int *err);

#endif /* ORBIT_LIB_SERIAL_QUEUE_H */
