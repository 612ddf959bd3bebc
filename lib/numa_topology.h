/* SPDX-License-Identifier: MIT */
/*
 * lib/numa_topology.h: internal. Discovering the machine's NUMA topology,
 * planning which worker goes on which node (a pure function, so tests can
 * feed synthetic topologies), and pinning a worker to its node. The only
 * place in orbit that talks to libnuma is numa_topology.c.
 */
#ifndef ORBIT_LIB_NUMA_TOPOLOGY_H
#define ORBIT_LIB_NUMA_TOPOLOGY_H

#include <orbit/worker_pool.h>

/* A topology that owns its storage (a validated copy or a discovery). */
struct orbit__topology_buf {
	struct orbit_topology topo;
	struct orbit_topology_node nodes[ORBIT_TOPOLOGY_MAX_NODES];
	int *cpus; /* every node's CPU list, one allocation */
};

/*
 * orbit__topology_validate - check a caller's topology.
 * Returns 0 or -EINVAL (no node, too many, negative or duplicate node id,
 * ncpus > 0 with NULL cpus, a negative CPU number, no CPU on any node).
 */
int orbit__topology_validate(const struct orbit_topology *t);

/* Validate @in and copy it into @out. 0, -EINVAL or -ENOMEM. */
int orbit__topology_copy(struct orbit__topology_buf *out, const struct orbit_topology *in);

/*
 * orbit__topology_discover - the topology this process may run on: libnuma
 * nodes restricted to the CPUs of our affinity mask, CPU-less nodes kept
 * with ncpus 0; one node (id 0) with every allowed CPU when libnuma is
 * unavailable at run time or the build has --disable-numa.
 * Returns 0 or -ENOMEM.
 */
int orbit__topology_discover(struct orbit__topology_buf *out);

void orbit__topology_free(struct orbit__topology_buf *b);

/* Total CPUs of a topology. */
unsigned orbit__topology_ncpus(const struct orbit_topology *t);

/*
 * orbit__placement_plan - which node each of @nthreads workers serves.
 * @topo: a valid topology.
 * @nthreads: workers to place, > 0.
 * @thread_node_idx: out, @nthreads entries: index into topo->nodes.
 *
 * Pure: the same input gives the same plan. Nodes without CPUs get no
 * worker. With at least as many threads as CPU nodes every such node gets
 * one and the rest follow the CPU share (largest remainder, ties to the
 * lower index); with fewer, the nodes with the most CPUs get one each.
 * Workers of one node get consecutive indexes, nodes in topology order.
 * Returns 0 or -EINVAL (invalid topology, nthreads 0).
 */
int orbit__placement_plan(const struct orbit_topology *topo, unsigned nthreads,
			  unsigned *thread_node_idx);

/*
 * orbit__numa_pin_self - pin the calling thread to @node's CPUs and, with
 * libnuma, prefer @node's memory. Returns 0 or a negative errno from the
 * kernel (-EINVAL for CPUs that do not exist).
 */
int orbit__numa_pin_self(const struct orbit_topology_node *node);

#endif /* ORBIT_LIB_NUMA_TOPOLOGY_H */
