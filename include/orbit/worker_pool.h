/* SPDX-License-Identifier: MIT */
/*
 * orbit/worker_pool.h: the shared, NUMA-aware execution resource that
 * serial queues and state lanes drain on. A fixed set of worker threads,
 * proportional to the cores, grouped per NUMA node and pinned to their node's
 * CPUs. Work comes in as orbit_executor_t submissions carrying a home node;
 * each node keeps one FIFO of ready tasks that its own workers drain first, and
 * a worker whose node has nothing ready takes the oldest task of another node
 * before it sleeps. Idle workers sleep on a futex; a submission wakes one
 * sleeper only when one sleeps. There is no thread per owner: serial
 * queues (orbit/serial_queue.h) and state lanes post their drain loops here.
 *
 * Order among ready owners: FIFO per node. A queue whose turn was cut by
 * its owner time budget re-submits itself and so goes to the back of its
 * home node's FIFO, behind every owner that became ready meanwhile.
 *
 * Fork: a pool belongs to the process that created it. A forked child
 * has a copy of its memory and none of its worker threads, and a node
 * lock a parent's thread held at the fork stays held there. So in the
 * child, as orbit/agent.h does for an agent, submit returns -ECHILD and
 * orbit_worker_pool_destroy() returns -ECHILD without joining or freeing
 * anything (the copy stays as it is until the child exits), both before
 * they touch a lock or a counter; orbit_worker_pool_stats() still reads
 * the counters as they were at the fork (no lock, nothing written), and
 * orbit_worker_pool_current_node() reads a thread-local. Every serial
 * queue, state lane, coordinator and completion the parent made refuses
 * the same way (see their headers), and one the child makes on the
 * inherited pool's executor is refused at create. The check is one
 * relaxed load and a compare of the creator's pid against a pid cache
 * that a pthread_atfork() child handler refreshes: no system call. The
 * check uses a pid refreshed by a pthread_atfork handler (no getpid
 * syscall per call): a child made by a raw clone(2) that skips the atfork
 * handlers is not detected. A child that needs a pool creates its own. A child forked from inside a
 * task (or a serial queue's turn, which runs in one) must exec or _exit
 * before that task returns: its one thread is a copy of the worker, and
 * returning takes it back into the worker's loop, which runs the
 * parent's queued work copied into the child and then waits on the
 * worker's futex for ever. Nothing checks this on the worker's path.
 *
 * Synchronization:
 *   orbit_worker_pool_create   any thread; spawns threads
 *   orbit_worker_pool_executor any thread; no syscall
 *   executor.submit            any thread, also from inside a task; takes a
 *                              per-node mutex, may futex-wake one worker
 *   orbit_worker_pool_stats    any thread; relaxed atomic loads
 *   orbit_worker_pool_destroy  one thread, never a worker of this pool
 */
#ifndef ORBIT_WORKER_POOL_H
#define ORBIT_WORKER_POOL_H

#include <orbit/common.h>
#include <orbit/executor.h>

ORBIT_BEGIN_DECLS

typedef struct orbit_worker_pool orbit_worker_pool_t;

/* Most nodes a topology may describe. */
#define ORBIT_TOPOLOGY_MAX_NODES 64

/* One NUMA node as the pool sees it: its number and the CPUs it may use. */
struct orbit_topology_node {
	int node_id;	 /* the node's number (libnuma numbering), >= 0 */
	unsigned ncpus;	 /* number of entries in cpus; 0: a CPU-less node */
	const int *cpus; /* CPU numbers of this node */
};

/*
 * A machine topology: what libnuma reports, or a synthetic one a test or
 * an embedder feeds in. Placement of workers is a pure function of it.
 */
struct orbit_topology {
	unsigned nnodes; /* 1..ORBIT_TOPOLOGY_MAX_NODES */
	const struct orbit_topology_node *nodes;
};

/* orbit_worker_pool_options.spin_polls: idle workers sleep at once. */
#define ORBIT_WORKER_POOL_NO_SPIN (-1)

/*
 * Options for orbit_worker_pool_create(); fill with _options_init(). Size-
 * carrying (see orbit/common.h); zero means the default in every field.
 */
struct orbit_worker_pool_options {
	size_t size; /* sizeof(struct orbit_worker_pool_options) */
	/* Worker threads; 0: one per usable CPU of the topology. */
	unsigned nthreads;
	/*
	 * NULL: discover (libnuma, restricted to this process's affinity
	 * mask; one node with every usable CPU when NUMA is unavailable or
	 * the build has --disable-numa). Otherwise used as given: copied,
	 * need not outlive the call.
	 */
	const struct orbit_topology *topology;
	/*
	 * false (default): pin each worker to its node's CPUs (and prefer its
	 * node's memory); true: leave workers unpinned. A pin the kernel
	 * refuses (a synthetic CPU that does not exist) is counted in
	 * stats.pin_failures, not fatal.
	 */
	bool no_pin;
	/*
	 * Polls of the node FIFO an idle worker makes before it sleeps on the
	 * futex; 0: the default, 256 (a few microseconds);
	 * ORBIT_WORKER_POOL_NO_SPIN: sleep at once. At most one thread
	 * fewer than the topology's CPUs (at least one) spins at once,
	 * counting the pool's draining queues that wait for more work: a
	 * worker that finds them all spinning sleeps at once. Destroy ends
	 * a poll at once, whatever its length.
	 */
	int spin_polls;
	/*
	 * false (default): every worker takes any ready task at once. true:
	 * at most one worker fewer than the topology's CPUs (at least one)
	 * does; a worker beyond that is on standby: it looks at the FIFOs
	 * every 50 us to 500 us and runs only a task that waited since its
	 * last look while the FIFO took nothing or grew (one behind a
	 * handler that runs long, or a backlog), so one CPU stays
	 * for a thread outside the pool that submits (see
	 * doc/serial-queue.md for what it gains and costs).
	 */
	bool standby;
};

/* Counters; each a separate relaxed read, so mutually approximate. */
struct orbit_worker_pool_stats {
	unsigned nthreads;
	unsigned nnodes;
	uint64_t submitted;    /* tasks accepted by submit */
	uint64_t rejected;     /* submits refused (-EPIPE, -ENOMEM) */
	uint64_t executed;     /* tasks run */
	uint64_t stolen;       /* tasks run by a worker of another node */
	uint64_t wakes;	       /* futex wakes issued */
	uint64_t sleeps;       /* futex sleeps (a standby's not counted) */
	uint64_t pin_failures; /* workers the kernel refused to pin */
	unsigned idle;	       /* workers asleep right now, standby not counted */
	uint64_t standby_runs; /* tasks run by a worker on standby (standby) */
};

/**
 * orbit_worker_pool_options_init - fill @opts with the defaults.
 * @opts: options to fill: size set, every other field zero (one thread per
 *        CPU, discovered topology, pinned, 256 spin polls).
 *
 * Context: any thread; no syscall.
 */
ORBIT_API void orbit_worker_pool_options_init(struct orbit_worker_pool_options *opts);

/**
 * orbit_worker_pool_create - start a pool of workers placed per NUMA node.
 * @opts: options (NULL: defaults).
 * @out: the pool on success.
 *
 * Threads are spread over the nodes that have CPUs in proportion to their
 * CPU count (every such node gets one while there are threads enough),
 * grouped per node; see doc/serial-queue.md.
 *
 * Context: any thread; allocates, queries libnuma, creates threads.
 * Returns: 0; -EINVAL (NULL @out, opts->size 0, spin_polls negative other
 * than ORBIT_WORKER_POOL_NO_SPIN, a topology with no node, more than
 * ORBIT_TOPOLOGY_MAX_NODES, a negative or duplicated node id, no CPU at
 * all, or a NULL cpus array with ncpus > 0); -E2BIG (@opts is larger than
 * this build's and sets a field it does not know); -ENOMEM; -EAGAIN (the
 * system refused a thread).
 */
ORBIT_API int orbit_worker_pool_create(const struct orbit_worker_pool_options *opts,
				       orbit_worker_pool_t **out);

/**
 * orbit_worker_pool_executor - the pool as an executor for queues and lanes.
 * @pool: the pool.
 *
 * submit(ctx, fn, arg, home_node) appends fn(arg) to the FIFO of
 * @home_node (ORBIT_NODE_ANY or a node the pool has no worker on: the
 * calling worker's node, else round robin) and returns 0, -EPIPE once
 * destroy has begun, -ENOMEM, or -ECHILD in a forked child (see Fork
 * above: fn will not run). The executor is valid until destroy.
 *
 * Context: any thread; no syscall.
 * Returns: the executor (by value).
 */
ORBIT_API orbit_executor_t orbit_worker_pool_executor(orbit_worker_pool_t *pool);

/**
 * orbit_worker_pool_current_node - the node of the calling worker.
 *
 * Context: any thread; a thread-local read.
 * Returns: the node id the calling thread works for, or ORBIT_NODE_ANY when
 * it is not a worker of any pool.
 */
ORBIT_API int orbit_worker_pool_current_node(void);

/**
 * orbit_worker_pool_stats - read the pool's counters.
 * @pool: the pool.
 * @out: filled with the counters.
 *
 * Context: any thread, concurrently with everything; relaxed loads only.
 * Also in a forked child, where it reads the counters as they were at
 * the fork.
 * Returns: 0; -EINVAL for a NULL argument.
 */
ORBIT_API int orbit_worker_pool_stats(orbit_worker_pool_t *pool,
				      struct orbit_worker_pool_stats *out);

/**
 * orbit_worker_pool_destroy - stop the pool and free it.
 * @pool: the pool (NULL: nothing).
 *
 * From the moment destroy begins every submit is refused with -EPIPE,
 * including submits from tasks that are running. Tasks already accepted
 * are all run before the workers exit (destroy finishes, never drops).
 * Destroy the serial queues and lanes that use the pool first: a queue
 * whose drain is refused stalls (see orbit/serial_queue.h).
 *
 * Context: one thread, not a worker of @pool; blocks until the workers have
 * run every accepted task and exited.
 * Returns: 0; -EDEADLK when called from a worker of @pool (nothing done);
 * -ECHILD in a forked child (nothing done: no worker there to join, and
 * the parent's pool is not freed).
 */
ORBIT_API int orbit_worker_pool_destroy(orbit_worker_pool_t *pool);

ORBIT_END_DECLS

#endif /* ORBIT_WORKER_POOL_H */
