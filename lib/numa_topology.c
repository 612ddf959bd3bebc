// SPDX-License-Identifier: MIT
/*
 * lib/numa_topology.c: the machine's NUMA topology and worker placement.
 * Owns every libnuma call in orbit (behind ORBIT_HAVE_NUMA, with a one-node
 * fallback for --disable-numa builds and machines where libnuma reports
 * NUMA unavailable), the pure placement plan the worker pool follows, and
 * pinning a worker thread to its node. No state of its own: everything is
 * computed from its arguments or from the kernel on each call.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#ifdef ORBIT_HAVE_NUMA
#include <numa.h>
#endif

#include "lib/numa_topology.h"

int orbit__topology_validate(const struct orbit_topology *t)
{
	unsigned total = 0;

	if (!t || t->nnodes == 0 || t->nnodes > ORBIT_TOPOLOGY_MAX_NODES || !t->nodes)
		return -EINVAL;
	for (unsigned i = 0; i < t->nnodes; i++) {
		const struct orbit_topology_node *n = &t->nodes[i];

		if (n->node_id < 0 || (n->ncpus > 0 && !n->cpus))
			return -EINVAL;
		for (unsigned j = 0; j < i; j++)
			if (t->nodes[j].node_id == n->node_id)
				return -EINVAL;
		for (unsigned c = 0; c < n->ncpus; c++)
			if (n->cpus[c] < 0)
				return -EINVAL;
		total += n->ncpus;
	}
	return total > 0 ? 0 : -EINVAL;
}

unsigned orbit__topology_ncpus(const struct orbit_topology *t)
{
	unsigned total = 0;

	for (unsigned i = 0; i < t->nnodes; i++)
		total += t->nodes[i].ncpus;
	return total;
}

int orbit__topology_copy(struct orbit__topology_buf *out, const struct orbit_topology *in)
{
	unsigned total, at = 0;
	int ret = orbit__topology_validate(in);

	if (ret)
		return ret;
	total = orbit__topology_ncpus(in);
	out->cpus = calloc(total, sizeof(int));
	if (!out->cpus)
		return -ENOMEM;
	out->topo.nnodes = in->nnodes;
	out->topo.nodes = out->nodes;
	for (unsigned i = 0; i < in->nnodes; i++) {
		out->nodes[i] = in->nodes[i];
		if (in->nodes[i].ncpus)
			memcpy(out->cpus + at, in->nodes[i].cpus, in->nodes[i].ncpus * sizeof(int));
		out->nodes[i].cpus = out->cpus + at;
		at += in->nodes[i].ncpus;
	}
	return 0;
}

void orbit__topology_free(struct orbit__topology_buf *b)
{
	free(b->cpus);
	b->cpus = NULL;
	b->topo.nnodes = 0;
}

/* One node, id 0, holding every CPU of @allowed. */
static int discover_one_node(struct orbit__topology_buf *out, const cpu_set_t *allowed)
{
	unsigned n = (unsigned)CPU_COUNT(allowed), at = 0;

	if (n == 0)
		return -EINVAL;
	out->cpus = calloc(n, sizeof(int));
	if (!out->cpus)
		return -ENOMEM;
	for (int c = 0; c < CPU_SETSIZE && at < n; c++)
		if (CPU_ISSET(c, allowed))
			out->cpus[at++] = c;
	out->nodes[0] = (struct orbit_topology_node){ .node_id = 0,
						      .ncpus = at,
						      .cpus = out->cpus };
	out->topo.nnodes = 1;
	out->topo.nodes = out->nodes;
	return 0;
}

#ifdef ORBIT_HAVE_NUMA
static int discover_numa(struct orbit__topology_buf *out, const cpu_set_t *allowed)
{
	struct bitmask *mask;
	int maxnode = numa_max_node();
	unsigned at = 0, nn = 0, ncpu_allowed = (unsigned)CPU_COUNT(allowed);
	int ret = 0;

	mask = numa_allocate_cpumask();
	if (!mask)
		return -ENOMEM;
	out->cpus = calloc(ncpu_allowed ? ncpu_allowed : 1, sizeof(int));
	if (!out->cpus) {
		ret = -ENOMEM;
		goto err_mask;
	}
	for (int node = 0; node <= maxnode && nn < ORBIT_TOPOLOGY_MAX_NODES; node++) {
		unsigned first = at;

		if (!numa_bitmask_isbitset(numa_nodes_ptr, (unsigned)node))
			continue;
		if (numa_node_to_cpus(node, mask) < 0)
			continue;
		for (unsigned c = 0; c < mask->size && c < CPU_SETSIZE && at < ncpu_allowed; c++)
			if (numa_bitmask_isbitset(mask, c) && CPU_ISSET(c, allowed))
				out->cpus[at++] = (int)c;
		out->nodes[nn++] = (struct orbit_topology_node){ .node_id = node,
								 .ncpus = at - first,
								 .cpus = out->cpus + first };
	}
	numa_bitmask_free(mask);
	if (at == 0) {
		/* libnuma saw no allowed CPU: degrade to the one-node view. */
		free(out->cpus);
		out->cpus = NULL;
		return discover_one_node(out, allowed);
	}
	out->topo.nnodes = nn;
	out->topo.nodes = out->nodes;
	return 0;

err_mask:
	numa_bitmask_free(mask);
	return ret;
}
#endif

int orbit__topology_discover(struct orbit__topology_buf *out)
{
	cpu_set_t allowed;

	memset(out, 0, sizeof(*out));
	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || CPU_COUNT(&allowed) == 0)
		CPU_SET(0, &allowed); /* cannot read the mask: assume CPU 0 */
#ifdef ORBIT_HAVE_NUMA
	if (numa_available() >= 0)
		return discover_numa(out, &allowed);
#endif
	return discover_one_node(out, &allowed);
}

int orbit__placement_plan(const struct orbit_topology *topo, unsigned nthreads,
			  unsigned *thread_node_idx)
{
	unsigned count[ORBIT_TOPOLOGY_MAX_NODES] = { 0 };
	uint64_t rem[ORBIT_TOPOLOGY_MAX_NODES] = { 0 };
	unsigned eligible = 0, total, given = 0, t = 0;

	if (nthreads == 0 || !thread_node_idx || orbit__topology_validate(topo))
		return -EINVAL;
	total = orbit__topology_ncpus(topo);
	for (unsigned i = 0; i < topo->nnodes; i++)
		eligible += topo->nodes[i].ncpus > 0;

	if (nthreads < eligible) {
		/* One each for the nthreads nodes with the most CPUs. */
		for (unsigned k = 0; k < nthreads; k++) {
			unsigned best = ORBIT_TOPOLOGY_MAX_NODES;

			for (unsigned i = 0; i < topo->nnodes; i++)
				if (!count[i] && topo->nodes[i].ncpus &&
				    (best == ORBIT_TOPOLOGY_MAX_NODES ||
				     topo->nodes[i].ncpus > topo->nodes[best].ncpus))
					best = i;
			count[best] = 1;
		}
		given = nthreads;
	} else {
		/* One per CPU node, the rest by CPU share, largest remainder. */
		unsigned extra = nthreads - eligible;

		for (unsigned i = 0; i < topo->nnodes; i++) {
			uint64_t share;

			if (!topo->nodes[i].ncpus)
				continue;
			share = (uint64_t)extra * topo->nodes[i].ncpus;
			count[i] = 1 + (unsigned)(share / total);
			rem[i] = share % total;
			given += count[i];
		}
		while (given < nthreads) {
			unsigned best = ORBIT_TOPOLOGY_MAX_NODES;

			for (unsigned i = 0; i < topo->nnodes; i++)
				if (topo->nodes[i].ncpus &&
				    (best == ORBIT_TOPOLOGY_MAX_NODES || rem[i] > rem[best]))
					best = i;
			count[best]++;
			rem[best] = 0;
			given++;
		}
	}
	for (unsigned i = 0; i < topo->nnodes; i++)
		for (unsigned k = 0; k < count[i]; k++)
			thread_node_idx[t++] = i;
	return 0;
}

int orbit__numa_pin_self(const struct orbit_topology_node *node)
{
	cpu_set_t set;
	int ret, any = 0;

	CPU_ZERO(&set);
	for (unsigned c = 0; c < node->ncpus; c++) {
		if (node->cpus[c] >= CPU_SETSIZE)
			continue;
		CPU_SET(node->cpus[c], &set);
		any = 1;
	}
	if (!any)
		return -EINVAL;
	ret = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (ret)
		return -ret;
#ifdef ORBIT_HAVE_NUMA
	if (numa_available() >= 0 && node->node_id <= numa_max_node())
		numa_set_preferred(node->node_id);
#endif
	return 0;
}
