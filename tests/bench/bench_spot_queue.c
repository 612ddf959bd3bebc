// SPDX-License-Identifier: MIT
/*
 * tests/bench/bench_spot_queue.c: the issue 11 benchmark of the
 * cross-process Spot queue, next to the kernel's and ZeroMQ's transports
 * and a bare single-producer SHM ring, every method measured the same way
 * in the same run, each producer and the consumer a real process of its
 * own (fork before any thread: the parent never starts one).
 *
 * Methods (a producer sends one record per call, the consumer copies each
 * record out and checks its producer and index: loss or reordering fails
 * the run):
 *   pipe       write()/read() of a pipe (F_SETPIPE_SZ to the orbit lane's
 *              256 KiB; writes <= PIPE_BUF are atomic, the reader reads up
 *              to 64 records per call)
 *   seqpacket  send()/recv() of an AF_UNIX SOCK_SEQPACKET socketpair
 *   mqueue     mq_send()/mq_receive(), depth = the orbit lane's item cap
 *              (1,024 of 64 B, 64 of 4 KiB) when allowed, else msg_max
 *   zmq_ipc    ZeroMQ PUSH (one socket per producer) -> PULL over ipc://
 *              (libzmq from Debian; SKIPPED with the reason when absent)
 *   shm_ring   a bare SPSC ring in a shared mapping, one per producer, the
 *              consumer busy-polls them round-robin and frees a batch per
 *              load: the floor of a shared-memory hand-off (no admission,
 *              no fencing, no doorbell, no sleeping consumer)
 *   transport  orbit: producers submit through the public client
 *              (orbit_spot_client_open + orbit_spot_submit_spot, their own
 *              agent each); the consumer is the SHM layer's host API used
 *              directly in the consumer process (orbit__spotq_host_takeover,
 *              orbit__spotq_take in batches of 64, orbit__spotq_complete_n
 *              per batch (a fenced ack CAS per record, one head advance),
 *              orbit__spotq_host_wait when both lanes are empty):
 *              "submit until the host side has the record", without the
 *              lease, the host thread and the coordinator
 *   e2e        orbit end to end through the public host API: a process with
 *              an agent, a lock handle and a 1-thread worker pool runs
 *              orbit_spot_host_start (PerActor, execute_spot, lease TTL 10 s),
 *              and the figure is submit until the handler runs on the Spot
 *              executor
 * Figures, per record size (64 B, 4 KiB) and producer count (1, 4):
 * throughput (records of all producers / time from the start signal to the
 * consumer seeing the last one) and the loaded latency p50/p99 (every 16th
 * record carries its producer's CLOCK_MONOTONIC stamp, read by the
 * consumer when it has the record; under load that is mostly queueing).
 * Then the queue's own cost with no other CPU in it (own_cost(): one
 * process submits bursts of 512 records of 64 B and takes and completes
 * them, every line in its own caches), beside what 5x ZeroMQ and 20x a
 * pipe leave per record end to end in the same run.
 * Then the wake-up of a sleeping consumer: one 64-byte record in flight, a
 * 50 us gap before each, acked on a pipe, timed one way from the stamp
 * (bench_agent's ping-pong, the same methods plus a raw futex pair; the
 * shm_ring has no sleeping consumer and is not in it).
 *
 * Placement (2-core machine): every method alike, the producer process(es)
 * pinned to the first CPU this program may use and the consumer process
 * (all its threads: orbit's host thread, worker and agent, ZeroMQ's I/O
 * thread) to the second, as bench_agent's "split" placement, so each hand
 * off crosses CPUs and a busy-polling consumer never starves its producer.
 * 4 producers share their CPU. With one CPU nothing is pinned (noted).
 * Each configuration runs REPS times, methods interleaved; a figure is
 * the median of the runs, [the range] beside it, a ratio the ratio of the
 * medians with the range of the per-run ratios. About 30 s in all.
 * `bench_spot_queue --smoke` (make check) runs tiny counts once and judges
 * no target: it only proves every method still moves every record.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <mqueue.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#ifdef ORBIT_HAVE_ZMQ
#include <zmq.h>
#endif

#include "orbit_test.h"
#include <orbit/orbit.h>
#include "shm/members.h"
#include "shm/ring.h"
#include "shm/segment.h"
#include "shm/spot_queue.h"
#include "bench_target.h"
#include "bench_place.h"

#define MAXP 4
#define REPS_FULL 3
#define BATCH 64		  /* records per consumer call where the method batches */
#define LAT_MAX (1u << 16)	  /* latency samples kept per run */
#define STAMP_EVERY 16		  /* throughput runs: every 16th record is stamped */
#define GAP_NS 50000		  /* wake runs: the consumer falls asleep again */
#define LANE_BYTES (256u * 1024u) /* the orbit lane's default byte cap */

enum method { M_PIPE, M_SEQPACKET, M_MQUEUE, M_ZMQ, M_RING, M_TRANSPORT, M_E2E, M_FUTEX, M_N };
static const char *const mname[M_N] = { "pipe",	    "seqpacket", "mqueue", "zmq_ipc",
					"shm_ring", "transport", "e2e",	   "futex" };

/* What every record starts with; the rest of the record is filler. */
struct rec_hdr {
	uint64_t stamp; /* CLOCK_MONOTONIC at the send, or 0 */
	uint32_t producer;
	uint32_t idx; /* HELLO: zmq_ipc's connection check, not a record */
};
#define HELLO UINT32_MAX

/* One producer's bare SPSC ring (shared mapping). */
struct sring {
	_Atomic uint64_t tail; /* producer: BR-R1 */
	uint8_t pad0[56];
	_Atomic uint64_t head; /* consumer: BR-R2 */
	uint8_t pad1[56];
	unsigned char data[]; /* cap slots of size bytes */
};

/*
 * One producer's progress notes (relaxed: read by the parent after a
 * failed run), on a cache line of its own: stored at every record, they
 * shared a line with the consumer's counters before, and the consumer's
 * per-record load of next[] missed its cache at every record of every
 * method (90% of got()'s samples, 12% of a transport run's).
 */
struct pnote {
	_Alignas(64) _Atomic uint32_t sent; /* records handed to the method */
	_Atomic uint32_t pstate;	    /* enum pstate */
	_Atomic int prc;		    /* the last submit's or wait's return code */
	_Atomic uint32_t resubmitted;	    /* orbit: records aborted mid-write, sent again */
};

/*
 * Shared by the processes of one run (MAP_SHARED | MAP_ANONYMOUS, made
 * before the forks). The start words, the consumer's block and each
 * producer's notes sit on separate cache lines.
 */
struct ctl {
	_Atomic uint32_t ready;	   /* children that are set up */
	_Atomic uint32_t go;	   /* futex: producers start */
	_Atomic uint32_t done;	   /* futex: the e2e handler saw the last record */
	_Atomic uint32_t all_in;   /* futex: the consumer has every record (finish()) */
	_Atomic uint32_t hellos;   /* zmq_ipc: producers whose connection delivered a hello */
	_Atomic uint32_t fword;	   /* raw futex baseline: the round */
	_Atomic uint64_t fsent;	   /* raw futex baseline: the sender's stamp */
	_Atomic uint64_t cpu_prod; /* producers' CPU from the start signal to their last send */
	/* the consumer's (one writer: its loop, or the serial e2e handlers) */
	_Alignas(64) uint64_t received;
	uint64_t bad, t_end;
	uint64_t cpu_first, cpu_cons; /* consumer CPU: at its first record, first to last */
	uint32_t next[MAXP];
	uint32_t nlat;
	struct pnote pn[MAXP]; /* each producer's */
	char why[400];
	_Alignas(64) uint64_t lat[LAT_MAX];
};

/* Where a producer is, for the message of a run that stopped moving. */
enum pstate { PS_START, PS_SEND, PS_ROOM, PS_DONE };
static const char *const psname[] = { "starting", "sending", "waiting for room", "done" };

struct run {
	enum method m;
	unsigned size, P;
	uint32_t per; /* records per producer */
	bool paced;   /* wake run: one in flight, GAP_NS before each */
	uint32_t ring_cap;
	size_t ring_bytes;
	int pfd[2], sv[2], ack[2];
	mqd_t mq;
	char mq_name[64], zmq_ep[108], spot[ORBIT_SPOT_NAME_MAX + 1];
	struct ctl *ctl;
	unsigned char *rings;
	/* the consumer's, in its process */
	orbit_spotq_host_t *qh;
};

static char fleet[64];
static int reps = REPS_FULL, rounds = 2000;
static unsigned run_no;
static int child_timeout_ms = 60000; /* a run that stops moving fails after this */
static long mq_depth_used[2];

static void futex_wait(_Atomic uint32_t *w, uint32_t v, long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	syscall(SYS_futex, w, FUTEX_WAIT, v, ms >= 0 ? &ts : NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Append "; @msg" to the run's message (the first failure stays first). */
static void whyadd(struct ctl *c, const char *msg)
{
	size_t n = strnlen(c->why, sizeof(c->why));

	snprintf(c->why + n, sizeof(c->why) - n, "%s%s", n ? "; " : "", msg);
}

static void whyf(struct run *r, const char *what, int err)
{
	if (!r->ctl->why[0])
		snprintf(r->ctl->why, sizeof(r->ctl->why), "%s %s: %s", mname[r->m], what,
			 err < 0 ? orbit_strerror(err) : strerror(errno));
}

/* CPU time of the whole calling process (every thread: agent, host, workers, I/O) */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The consumer has the last record: the end of the run and its CPU since the first. */
static void finish(struct run *r)
{
	r->ctl->t_end = orbit_test_now_ns();
	r->ctl->cpu_cons = cpu_ns() - r->ctl->cpu_first;
	atomic_store(&r->ctl->all_in, 1);
	futex_wake(&r->ctl->all_in);
}

/* ---- the consumer's per-record step, the same for every method ---- */

static void got(struct run *r, const void *rec, uint32_t len)
{
	struct ctl *c = r->ctl;
	struct rec_hdr h;

	if (!c->received)
		c->cpu_first = cpu_ns();
	memcpy(&h, rec, sizeof(h));
	if (len != r->size || h.producer >= r->P || h.idx != c->next[h.producer])
		c->bad++;
	else
		c->next[h.producer]++;
	if (h.stamp && c->nlat < LAT_MAX) {
		uint64_t now = orbit_test_now_ns();

		c->lat[c->nlat++] = now > h.stamp ? now - h.stamp : 0;
	}
	c->received++;
	if (r->paced) {
		char a = 'a';

		if (write(r->ack[1], &a, 1) != 1)
			c->bad++;
	}
}

static uint64_t total_of(const struct run *r)
{
	return (uint64_t)r->per * r->P;
}

/* ---- orbit helpers ---- */

struct proc {
	orbit_lock_t *lock;
	orbit_agent_t *agent;
};

static int proc_start(struct proc *pr, const char *name, bool with_lock)
{
	struct orbit_lock_options lo = { .size = sizeof(lo), .fleet = fleet };
	struct orbit_agent_options ao = { .size = sizeof(ao), .fleet = fleet, .name = name };
	int e;

	pr->lock = NULL;
	if (with_lock && (e = orbit_lock_open(&lo, &pr->lock)) < 0)
		return e;
	ao.lock = pr->lock;
	e = orbit_agent_start(&ao, &pr->agent);
	if (e < 0 && pr->lock)
		orbit_lock_close(pr->lock);
	return e;
}

static void proc_stop(struct proc *pr)
{
	orbit_agent_stop(pr->agent);
	if (pr->lock)
		orbit_lock_close(pr->lock);
}

static int e2e_handler(orbit_serial_turn_t *turn, const struct orbit_spot_record *rec, void *ctx)
{
	struct run *r = ctx;

	(void)turn;
	got(r, rec->payload, rec->len);
	if (r->ctl->received == total_of(r)) {
		finish(r);
		atomic_store(&r->ctl->done, 1);
		futex_wake(&r->ctl->done);
	}
	return ORBIT_SERIAL_DONE;
}

/* ---- consumers ---- */

static void ready(struct run *r)
{
	atomic_fetch_add(&r->ctl->ready, 1);
}

static int consume_transport(struct run *r)
{
	struct orbit_spotq_options o;
	struct orbit_spotq_rec recs[BATCH];
	uint32_t pos[BATCH];
	orbit_spotq_t *q = NULL;
	void *buf = malloc(LANE_BYTES);
	unsigned idle = 0;
	int e;

	orbit__spotq_options_init(&o);
	o.how = ORBIT_SEG_OPEN_OR_CREATE; /* the caps the clients ask for: the defaults */
	if (!buf || (e = orbit__spotq_open(&q, fleet, r->spot, &o)) < 0 ||
	    (e = orbit__spotq_host_takeover(&r->qh, q, NULL, 1)) < 0) {
		whyf(r, "open/takeover", buf ? e : -ENOMEM);
		return 1;
	}
	ready(r);
	while (r->ctl->received < total_of(r)) {
		int n = orbit__spotq_take(r->qh, ORBIT_SPOTQ_APP, recs, BATCH, buf, LANE_BYTES);

		if (n < 0) {
			whyf(r, "take", n);
			return 2;
		}
		for (int k = 0; k < n; k++) {
			got(r, recs[k].payload, recs[k].payload_len);
			pos[k] = recs[k].pos;
		}
		/* the batch's completes, then one head advance for all of them */
		if (n > 0 && (e = orbit__spotq_complete_n(r->qh, ORBIT_SPOTQ_APP, pos, (unsigned)n,
							  NULL)) < 0) {
			whyf(r, "complete", e);
			return 3;
		}
		if (n == 0 && (e = orbit__spotq_host_wait(r->qh, 100000000, 0)) < 0 &&
		    e != -ETIMEDOUT && e != -EINTR) {
			whyf(r, "host_wait", e);
			return 4;
		}
		idle = n ? 0 : idle + 1;
		if (idle == 50) { /* 5 s without a record: say where the lane stands */
			struct orbit_spotq_counters c;
			char m[200];

			if (orbit__spotq_counters(q, &c) == 0) {
				snprintf(m, sizeof(m),
					 "transport: nothing for 5 s at %" PRIu64
					 " records: accepted %" PRIu64 " completed %" PRIu64
					 " corrupt %" PRIu64 " depth %u bytes %u",
					 r->ctl->received, c.accepted[0], c.completed[0],
					 c.corrupt[0], c.depth[0], c.bytes[0]);
				whyadd(r->ctl, m);
			}
		}
	}
	finish(r);
	orbit__spotq_host_close(r->qh);
	orbit__spotq_close(q);
	free(buf);
	return 0;
}

static int consume_e2e(struct run *r)
{
	struct orbit_worker_pool_options po;
	struct orbit_spot_host_options ho;
	orbit_worker_pool_t *pool;
	orbit_spot_host_t *h;
	struct proc pr;
	int e;

	if ((e = proc_start(&pr, "bench-host", true)) < 0) {
		whyf(r, "agent", e);
		return 1;
	}
	orbit_worker_pool_options_init(&po);
	po.nthreads = 1;
	po.no_pin = true; /* the process is pinned already: its threads inherit it */
	if ((e = orbit_worker_pool_create(&po, &pool)) < 0) {
		whyf(r, "pool", e);
		return 2;
	}
	orbit_spot_host_options_init(&ho);
	ho.spot = r->spot;
	ho.on_spot = e2e_handler;
	ho.ctx = r;
	ho.executor = orbit_worker_pool_executor(pool);
	/*
	 * A lease that outlives this machine's scheduling gaps: at load 15-25 a
	 * thread pinned here went up to 0.96 s without running (30 s of 1 ms
	 * sleeps), past the 1 s default TTL less its 250 ms renewal, and a host
	 * whose lease runs out stops taking: with no second host to adopt the
	 * Spot, the run stalled (4 of 24 runs). Renewals every 2.5 s instead.
	 */
	ho.lease_ttl_ns = 10000000000ull;
	if ((e = orbit_spot_host_start(pr.agent, &ho, &h)) < 0) {
		whyf(r, "host_start", e);
		return 3;
	}
	ready(r);
	/* gives up before the parent's child timeout, so that it can say why */
	for (uint64_t t0 = orbit_test_now_ns(); !atomic_load(&r->ctl->done);) {
		if (orbit_test_now_ns() - t0 > (uint64_t)child_timeout_ms * 750000ull) {
			struct orbit_spot_host_stats hs;
			struct orbit_spot_inbound_stats qs;
			char m[240];

			whyf(r, "no last record within 3/4 of the run's timeout", -ETIMEDOUT);
			if (orbit_spot_host_stats(h, &hs) == 0 &&
			    orbit_spot_host_inbound_stats(h, &qs) == 0) {
				snprintf(m, sizeof(m),
					 "host state %d (lost: %s): delivered %" PRIu64
					 " completed %" PRIu64 " in flight %" PRIu64
					 " retried %" PRIu64 "; lane accepted %" PRIu64
					 " completed %" PRIu64 " depth %u bytes %u",
					 orbit_spot_host_state(h),
					 hs.lost_reason ? orbit_strerror(hs.lost_reason) : "no",
					 hs.delivered, hs.completed, hs.in_flight, hs.retried,
					 qs.accepted[0], qs.completed[0], qs.depth[0], qs.bytes[0]);
				whyadd(r->ctl, m);
			}
			return 4;
		}
		futex_wait(&r->ctl->done, 0, 100);
	}
	e = orbit_spot_host_stop(h);
	orbit_worker_pool_destroy(pool);
	proc_stop(&pr);
	return e < 0 ? 5 : 0;
}

static int consume_ring(struct run *r)
{
	unsigned char *buf = malloc(r->size);
	uint64_t heads[MAXP] = { 0 };

	if (!buf)
		return 1;
	ready(r);
	while (r->ctl->received < total_of(r)) {
		bool any = false;

		for (unsigned p = 0; p < r->P; p++) {
			struct sring *s = (struct sring *)(r->rings + p * r->ring_bytes);
			/* BR-A1: acquire, pairs with BR-R1: the slots' bytes before the tail */
			uint64_t t = atomic_load_explicit(&s->tail, memory_order_acquire);
			uint64_t h = heads[p], n = t - h < BATCH ? t - h : BATCH;

			for (uint64_t k = 0; k < n; k++) {
				memcpy(buf, s->data + ((h + k) % r->ring_cap) * r->size, r->size);
				got(r, buf, r->size);
			}
			if (n) {
				heads[p] = h + n;
				/* BR-R2: release, pairs with BR-A2: our copies before the slots' reuse */
				atomic_store_explicit(&s->head, h + n, memory_order_release);
				any = true;
			}
		}
		if (!any)
			__builtin_ia32_pause();
	}
	finish(r);
	free(buf);
	return 0;
}

#ifdef ORBIT_HAVE_ZMQ
static int consume_zmq(struct run *r, unsigned char *buf)
{
	void *ctx = zmq_ctx_new(), *s = ctx ? zmq_socket(ctx, ZMQ_PULL) : NULL;

	if (!s || zmq_bind(s, r->zmq_ep) != 0) {
		snprintf(r->ctl->why, sizeof(r->ctl->why), "zmq bind %s: %s", r->zmq_ep,
			 zmq_strerror(zmq_errno()));
		return 1;
	}
	ready(r);
	while (r->ctl->received < total_of(r)) {
		int n = zmq_recv(s, buf, r->size, 0);
		struct rec_hdr h;

		if (n < 0) {
			if (zmq_errno() == EINTR)
				continue;
			snprintf(r->ctl->why, sizeof(r->ctl->why), "zmq_recv: %s",
				 zmq_strerror(zmq_errno()));
			return 2;
		}
		memcpy(&h, buf, sizeof(h));
		if (n == (int)r->size && h.idx == HELLO) {
			atomic_fetch_add(&r->ctl->hellos, 1); /* a producer's connection is up */
			continue;
		}
		got(r, buf, (uint32_t)n);
	}
	finish(r);
	zmq_close(s);
	zmq_ctx_term(ctx);
	return 0;
}
#endif

static int consume(struct run *r)
{
	size_t cap = (size_t)BATCH * r->size, have = 0;
	unsigned char *buf;
	ssize_t n;

	switch (r->m) {
	case M_TRANSPORT:
		return consume_transport(r);
	case M_E2E:
		return consume_e2e(r);
	case M_RING:
		return consume_ring(r);
	default:
		break;
	}
	buf = malloc(cap);
	if (!buf)
		return 1;
#ifdef ORBIT_HAVE_ZMQ
	if (r->m == M_ZMQ) {
		int rc = consume_zmq(r, buf);

		free(buf);
		return rc;
	}
#endif
	ready(r);
	for (uint32_t i = 0; r->ctl->received < total_of(r); i++) {
		switch (r->m) {
		case M_PIPE: {
			size_t off = 0;

			n = read(r->pfd[0], buf + have, cap - have);
			if (n <= 0)
				goto err;
			have += (size_t)n;
			for (; have - off >= r->size; off += r->size)
				got(r, buf + off, r->size);
			have -= off; /* a record read in pieces waits for its rest */
			if (have)
				memmove(buf, buf + off, have);
			break;
		}
		case M_SEQPACKET:
			n = recv(r->sv[0], buf, cap, 0);
			if (n <= 0)
				goto err;
			got(r, buf, (uint32_t)n);
			break;
		case M_MQUEUE:
			n = mq_receive(r->mq, (char *)buf, cap, NULL);
			if (n < 0)
				goto err;
			got(r, buf, (uint32_t)n);
			break;
		case M_FUTEX: {
			struct rec_hdr h = { 0, 0, i };

			while (atomic_load(&r->ctl->fword) == i)
				futex_wait(&r->ctl->fword, i, -1);
			h.stamp = atomic_load(&r->ctl->fsent);
			memcpy(buf, &h, sizeof(h));
			got(r, buf, r->size);
			break;
		}
		default:
			goto err;
		}
	}
	finish(r);
	free(buf);
	return 0;
err:
	whyf(r, "receive", 0);
	free(buf);
	return 2;
}

/* ---- producers ---- */

static int ring_push(struct run *r, unsigned p, const void *rec, uint64_t *tail, uint64_t *hc)
{
	struct sring *s = (struct sring *)(r->rings + p * r->ring_bytes);
	uint64_t t = *tail;

	for (unsigned spins = 0; t - *hc >= r->ring_cap; spins++) {
		/* BR-A2: acquire, pairs with BR-R2: the consumer's copies are done */
		*hc = atomic_load_explicit(&s->head, memory_order_acquire);
		if (t - *hc < r->ring_cap)
			break;
		if (spins % 64 == 63)
			sched_yield(); /* 4 producers share a CPU: let the others run */
		else
			__builtin_ia32_pause();
	}
	memcpy(s->data + (t % r->ring_cap) * r->size, rec, r->size);
	/* BR-R1: release, pairs with BR-A1: the slot's bytes before the tail */
	atomic_store_explicit(&s->tail, t + 1, memory_order_release);
	*tail = t + 1;
	return 0;
}

static int produce(struct run *r, unsigned p)
{
	struct timespec gap = { 0, GAP_NS };
	unsigned char *rec = calloc(1, r->size);
	orbit_spot_client_t *cl = NULL;
	uint64_t tail = 0, hc = 0;
	struct proc pr = { 0 };
	void *zctx = NULL, *zs = NULL;
	uint64_t cpu0;
	int e = 0;

	if (!rec)
		return 1;
	memset(rec + sizeof(struct rec_hdr), 0x5a, r->size - sizeof(struct rec_hdr));
	if (r->m == M_TRANSPORT || r->m == M_E2E) {
		if ((e = proc_start(&pr, "bench-producer", false)) < 0 ||
		    (e = orbit_spot_client_open(pr.agent, r->spot, NULL, &cl)) < 0) {
			whyf(r, "client", e);
			return 2;
		}
	}
#ifdef ORBIT_HAVE_ZMQ
	if (r->m == M_ZMQ) {
		zctx = zmq_ctx_new();
		zs = zctx ? zmq_socket(zctx, ZMQ_PUSH) : NULL;
		if (!zs || zmq_connect(zs, r->zmq_ep) != 0) {
			snprintf(r->ctl->why, sizeof(r->ctl->why), "zmq connect %s: %s", r->zmq_ep,
				 zmq_strerror(zmq_errno()));
			return 3;
		}
		/* connecting is asynchronous: the run starts once the consumer got this */
		memcpy(rec, &(struct rec_hdr){ 0, p, HELLO }, sizeof(struct rec_hdr));
		if (zmq_send(zs, rec, r->size, 0) != (int)r->size)
			return 3;
	}
#endif
	ready(r);
	while (!atomic_load(&r->ctl->go))
		futex_wait(&r->ctl->go, 0, 100);
	atomic_store_explicit(&r->ctl->pn[p].pstate, PS_SEND, memory_order_relaxed);
	cpu0 = cpu_ns();
	for (uint32_t i = 0; i < r->per && e == 0; i++) {
		struct rec_hdr h = { 0, p, i };
		char a;

		if (r->paced)
			nanosleep(&gap, NULL);
		if (r->paced || i % STAMP_EVERY == 0)
			h.stamp = orbit_test_now_ns();
		memcpy(rec, &h, sizeof(h));
		switch (r->m) {
		case M_PIPE:
			e = write(r->pfd[1], rec, r->size) == (ssize_t)r->size ? 0 : -1;
			break;
		case M_SEQPACKET:
			e = send(r->sv[1], rec, r->size, MSG_NOSIGNAL) == (ssize_t)r->size ? 0 : -1;
			break;
		case M_MQUEUE:
			e = mq_send(r->mq, (const char *)rec, r->size, 0);
			break;
#ifdef ORBIT_HAVE_ZMQ
		case M_ZMQ:
			e = zmq_send(zs, rec, r->size, 0) == (int)r->size ? 0 : -1;
			break;
#endif
		case M_RING:
			e = ring_push(r, p, rec, &tail, &hc);
			break;
		case M_TRANSPORT:
		case M_E2E:
			/*
			 * The public client: one attempt, the room doorbell when full.
			 * -ECANCELED: this producer stayed past the unblock bound
			 * (100 ms) between its claim and its commit, a scheduling gap
			 * on a loaded machine, and the host aborted the record: it is
			 * never delivered, so the application sends it again (the
			 * order check still holds) and the run counts it.
			 */
			while ((e = orbit_spot_submit_spot(cl, rec, r->size, NULL)) == -EAGAIN ||
			       e == -ECANCELED) {
				if (e == -ECANCELED) {
					atomic_fetch_add(&r->ctl->pn[p].resubmitted, 1);
					continue;
				}
				atomic_store_explicit(&r->ctl->pn[p].pstate, PS_ROOM,
						      memory_order_relaxed);
				e = orbit_spot_client_wait_room(cl, ORBIT_SPOT_LANE_APP, r->size,
								100000000);
				atomic_store_explicit(&r->ctl->pn[p].prc, e, memory_order_relaxed);
				atomic_store_explicit(&r->ctl->pn[p].pstate, PS_SEND,
						      memory_order_relaxed);
				if (e < 0 && e != -ETIMEDOUT && e != -EINTR)
					break;
			}
			break;
		case M_FUTEX:
			atomic_store(&r->ctl->fsent, h.stamp);
			atomic_fetch_add(&r->ctl->fword, 1);
			futex_wake(&r->ctl->fword);
			break;
		default:
			e = -EINVAL;
		}
		if (e == 0 && r->paced && read(r->ack[0], &a, 1) != 1)
			e = -1;
		/* relaxed: a progress note for a failed run's message */
		atomic_store_explicit(&r->ctl->pn[p].prc, e, memory_order_relaxed);
		if (e == 0)
			atomic_store_explicit(&r->ctl->pn[p].sent, i + 1, memory_order_relaxed);
	}
	atomic_store_explicit(&r->ctl->pn[p].pstate, PS_DONE, memory_order_relaxed);
	atomic_fetch_add(&r->ctl->cpu_prod, cpu_ns() - cpu0);
	if (e)
		whyf(r, "send", e);
	if (cl) {
		orbit_spot_client_close(cl);
		proc_stop(&pr);
	}
#ifdef ORBIT_HAVE_ZMQ
	if (zs) {
		/*
		 * The socket stays open until the consumer has every record: one
		 * run lost a few hundred messages of 4 producers that closed with
		 * the default linger and exited, so delivery is not left to it.
		 */
		for (int w = 0; w < 600 && !atomic_load(&r->ctl->all_in); w++)
			futex_wait(&r->ctl->all_in, 0, 100);
		zmq_close(zs);
		zmq_ctx_term(zctx);
	}
#endif
	(void)zctx;
	free(rec);
	return e ? 4 : 0;
}

/* ---- one run ---- */

static struct ctl *ctl;

static long mq_msg_max(void)
{
	FILE *f = fopen("/proc/sys/fs/mqueue/msg_max", "r");
	long v = 10;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = 10;
		fclose(f);
	}
	return v;
}

static int setup(struct run *r)
{
	r->pfd[0] = r->pfd[1] = r->sv[0] = r->sv[1] = r->ack[0] = r->ack[1] = -1;
	r->mq = (mqd_t)-1;
	r->rings = NULL;
	r->ring_cap = r->size == 64 ? ORBIT_SPOT_DEFAULT_APP_ITEMS : LANE_BYTES / r->size;
	snprintf(r->spot, sizeof(r->spot), "bench.%u", run_no);
	if (r->paced && pipe(r->ack))
		return -errno;
	switch (r->m) {
	case M_PIPE:
		if (pipe(r->pfd))
			return -errno;
		(void)fcntl(r->pfd[1], F_SETPIPE_SZ, (int)LANE_BYTES); /* best effort */
		break;
	case M_SEQPACKET:
		if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, r->sv))
			return -errno;
		break;
	case M_MQUEUE: {
		struct mq_attr at = { .mq_maxmsg = r->ring_cap, .mq_msgsize = r->size };

		snprintf(r->mq_name, sizeof(r->mq_name), "/obench.%ld.%u", (long)getpid(), run_no);
		r->mq = mq_open(r->mq_name, O_CREAT | O_EXCL | O_RDWR, 0600, &at);
		if (r->mq == (mqd_t)-1) { /* not allowed above msg_max: the most we may have */
			at.mq_maxmsg = mq_msg_max();
			r->mq = mq_open(r->mq_name, O_CREAT | O_EXCL | O_RDWR, 0600, &at);
		}
		if (r->mq == (mqd_t)-1)
			return -errno;
		mq_depth_used[r->size != 64] = at.mq_maxmsg;
		break;
	}
	case M_ZMQ:
		snprintf(r->zmq_ep, sizeof(r->zmq_ep), "ipc:///tmp/obench.%ld.%u", (long)getpid(),
			 run_no);
		break;
	case M_RING:
		r->ring_bytes = (sizeof(struct sring) + (size_t)r->ring_cap * r->size + 63) & ~63ul;
		r->rings = mmap(NULL, r->ring_bytes * r->P, PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (r->rings == MAP_FAILED) {
			r->rings = NULL;
			return -errno;
		}
		break;
	default:
		break;
	}
	return 0;
}

static void teardown(struct run *r)
{
	int fds[] = { r->pfd[0], r->pfd[1], r->sv[0], r->sv[1], r->ack[0], r->ack[1] };

	for (unsigned i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (r->mq != (mqd_t)-1) {
		mq_close(r->mq);
		mq_unlink(r->mq_name);
	}
	if (r->m == M_ZMQ)
		unlink(r->zmq_ep + strlen("ipc://"));
	if (r->rings)
		munmap(r->rings, r->ring_bytes * r->P);
	if (r->m == M_TRANSPORT || r->m == M_E2E)
		orbit__spotq_unlink(fleet, r->spot);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static pid_t spawn(struct run *r, int cpu, int p)
{
	pid_t pid = fork();

	if (pid == 0) {
		orbit_test_child_default_signals();
		place(cpu); /* before any thread of the child: they inherit it */
		_exit(p < 0 ? consume(r) : produce(r, (unsigned)p));
	}
	return pid;
}

static bool wait_ready(struct run *r, uint32_t n, const pid_t *pids, int npids)
{
	for (int ms = 0; atomic_load(&r->ctl->ready) < n; ms++) {
		for (int i = 0; i < npids; i++)
			if (waitpid(pids[i], NULL, WNOHANG) == pids[i])
				return false; /* died while setting up */
		if (ms > 20000)
			return false;
		usleep(500);
	}
	return true;
}

/* Run @r once: M records/s, p50 and p99 (ns). Returns 0, or -1 with a reason printed. */
static int run_one(struct run *r, double *mrps, double *p50, double *p99, double *cpu)
{
	pid_t pids[1 + MAXP];
	int np = 0, rc = 0, e;
	uint64_t t0 = 0;

	*mrps = *p50 = *p99 = *cpu = 0;
	memset(ctl, 0, offsetof(struct ctl, lat));
	r->ctl = ctl;
	run_no++;
	e = setup(r);
	if (e < 0) {
		fprintf(stderr, "bench_spot_queue: %s setup: %s\n", mname[r->m], strerror(-e));
		teardown(r);
		return -1;
	}
	/* the consumer first: a ZeroMQ PULL has bound, an orbit host has taken over */
	pids[np++] = spawn(r, cpu_b, -1);
	if (pids[0] < 0 || !wait_ready(r, 1, pids, np))
		rc = -1;
	for (unsigned p = 0; p < r->P && rc == 0; p++)
		if ((pids[np++] = spawn(r, cpu_a, (int)p)) < 0)
			rc = -1;
	if (rc == 0 && !wait_ready(r, 1 + r->P, pids, np))
		rc = -1;
	for (int ms = 0; rc == 0 && r->m == M_ZMQ && atomic_load(&ctl->hellos) < r->P; ms++)
		if (ms > 20000)
			rc = -1; /* no connection within 10 s */
		else
			usleep(500);
	if (rc == 0) {
		usleep(20000); /* the agents' joins have woken everyone: all settle */
		t0 = orbit_test_now_ns();
		atomic_store(&ctl->go, 1);
		futex_wake(&ctl->go);
	}
	for (int i = 0; i < np; i++) {
		int st;

		if (pids[i] <= 0)
			continue;
		if (rc < 0)
			kill(pids[i], SIGKILL);
		st = orbit_test_wait(pids[i], child_timeout_ms);
		if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			char m[80];

			snprintf(m, sizeof(m), "%s %d: %s %d", i ? "producer" : "consumer",
				 i ? i - 1 : 0,
				 st < 0 ? "killed at the timeout, status" : "exit status",
				 st < 0		 ? -1
				 : WIFEXITED(st) ? WEXITSTATUS(st)
						 : 128 + WTERMSIG(st));
			whyadd(ctl, m);
			rc = -1;
		}
	}
	if (rc == 0 && (ctl->received != total_of(r) || ctl->bad))
		rc = -1;
	uint32_t resub = 0;
	for (unsigned p = 0; p < r->P; p++)
		resub += atomic_load(&ctl->pn[p].resubmitted);
	if (resub)
		printf("  (%s %u B x %u: %u record(s) aborted by the host's unblock bound, sent "
		       "again)\n",
		       mname[r->m], r->size, r->P, resub);
	if (rc < 0 && !r->paced) {
		for (unsigned p = 0; p < r->P; p++) {
			char m[120];
			unsigned ps = atomic_load_explicit(&ctl->pn[p].pstate,
							   memory_order_relaxed);

			snprintf(m, sizeof(m), "producer %u: %u of %u sent, %s, last rc %d", p,
				 atomic_load_explicit(&ctl->pn[p].sent, memory_order_relaxed),
				 r->per, ps <= PS_DONE ? psname[ps] : "?",
				 atomic_load_explicit(&ctl->pn[p].prc, memory_order_relaxed));
			whyadd(ctl, m);
		}
	}
	if (rc < 0) {
		fprintf(stderr,
			"bench_spot_queue: %s %u B x %u producers run failed: received %" PRIu64
			" of %" PRIu64 ", %" PRIu64 " out of order or malformed; %s\n",
			mname[r->m], r->size, r->P, ctl->received, total_of(r), ctl->bad,
			ctl->why[0] ? ctl->why : "a child failed");
	} else {
		*mrps = ctl->t_end > t0 ? (double)total_of(r) * 1e3 / (double)(ctl->t_end - t0) : 0;
		*cpu = (double)(ctl->cpu_cons + ctl->cpu_prod) / (double)total_of(r);
		if (getenv("ORBIT_BENCH_SPLIT_CPU")) /* doc/spot-queues.md#benchmark's split */
			printf("  (%s %u B x %u: CPU per record: producers %.0f ns, consumer %.0f "
			       "ns)\n",
			       mname[r->m], r->size, r->P,
			       (double)ctl->cpu_prod / (double)total_of(r),
			       (double)ctl->cpu_cons / (double)total_of(r));
		if (ctl->nlat) {
			qsort(ctl->lat, ctl->nlat, sizeof(ctl->lat[0]), cmp_u64);
			*p50 = (double)ctl->lat[ctl->nlat / 2];
			*p99 = (double)ctl->lat[(uint64_t)ctl->nlat * 99 / 100];
		}
	}
	teardown(r);
	return rc;
}

/* ---- figures ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(const double *v)
{
	double t[REPS_FULL];

	memcpy(t, v, sizeof(double) * (size_t)reps);
	qsort(t, (size_t)reps, sizeof(t[0]), cmp_double);
	return t[reps / 2];
}

static void range(const double *v, double *lo, double *hi)
{
	*lo = 1e300;
	*hi = 0;
	for (int i = 0; i < reps; i++) {
		*lo = v[i] < *lo ? v[i] : *lo;
		*hi = v[i] > *hi ? v[i] : *hi;
	}
}

/* median(a) / median(b), with the range of the per-run ratios */
static double ratio(const double *a, const double *b, double *lo, double *hi)
{
	double r[REPS_FULL];

	for (int i = 0; i < reps; i++)
		r[i] = b[i] > 0 ? a[i] / b[i] : 0;
	range(r, lo, hi);
	return median(b) > 0 ? median(a) / median(b) : 0;
}

/* ORBIT_BENCH_METHODS=a,b: run only those (a look at one method, perf); the rest print SKIPPED */
static const char *only;

static bool listed(const char *list, const char *c);

static bool unselected(enum method m)
{
	return only && !listed(only, mname[m]);
}

/* "[lo-hi]" in a static buffer (one use per printf) */
static const char *rng(double lo, double hi)
{
	static char b[40];

	snprintf(b, sizeof(b), "[%.3f-%.3f]", lo, hi);
	return b;
}

static bool skipped(enum method m)
{
#ifdef ORBIT_HAVE_ZMQ
	return unselected(m);
#else
	return m == M_ZMQ || unselected(m);
#endif
}

/* ORBIT_BENCH_CONFIGS=64x1,4096x4: only those throughput configurations (size x producers) */
static const char *configs;
static const unsigned sizes[2] = { 64, 4096 };
static const unsigned nprod[2] = { 1, 4 };

static bool listed(const char *list, const char *c)
{
	size_t l = strlen(c);

	for (const char *p = list; p && *p; p += strcspn(p, ","), p += *p == ',')
		if (!strncmp(p, c, l) && (p[l] == ',' || !p[l]))
			return true;
	return false;
}

static bool config_selected(int si, int pi)
{
	char c[32];

	snprintf(c, sizeof(c), "%ux%u", sizes[si], nprod[pi]);
	return !configs || listed(configs, c);
}

static const char *skip_why(enum method m)
{
	if (unselected(m))
		return "not in ORBIT_BENCH_METHODS";
	return "built without libzmq (configure found no libzmq; apt-get install libzmq3-dev)";
}

enum { F_MRPS, F_P50, F_P99, F_CPU, F_N };
/* [method][size][producers][figure][rep] */
static double tp[M_N][2][2][F_N][REPS_FULL];
/* [method][p50/p99][rep] */
static double wk[M_N][2][REPS_FULL];
static bool tp_ok[M_N][2][2], wk_ok[M_N];

static void ratio_line(const char *name, const double *a, const double *b)
{
	double lo, hi, x = ratio(a, b, &lo, &hi);

	printf("  %-44s %7.2fx [%.2f-%.2f]\n", name, x, lo, hi);
}

/* A target on a ratio of two medians; a missing peer is a reason, not a target. */
static bool target_ratio(const char *name, enum method a, enum method b, int si, int pa, int pb,
			 const char *op, double goal)
{
	if (skipped(a) || skipped(b)) {
		enum method x = skipped(a) ? a : b;

		printf("no target %s: %s SKIPPED: %s\n", name, mname[x], skip_why(x));
		return true;
	}
	if (!config_selected(si, pa) || !config_selected(si, pb)) {
		printf("no target %s: not in ORBIT_BENCH_CONFIGS\n", name);
		return true;
	}
	if (!tp_ok[a][si][pa] || !tp_ok[b][si][pb]) {
		printf("no target %s: a run failed (see above)\n", name);
		return false;
	}
	return bench_target(name,
			    median(tp[b][si][pb][F_MRPS]) > 0
				? median(tp[a][si][pa][F_MRPS]) / median(tp[b][si][pb][F_MRPS])
				: 0,
			    op, goal, "x");
}

/*
 * The queue's own cost, no other CPU in it: one process, pinned to the
 * producers' CPU, submits OWN_BURST records of 64 B, then takes and
 * completes them (batches of BATCH), OWN_ROUNDS times; every line the
 * queue touches stays in this CPU's caches. Prints the medians per record
 * of the submits and of the takes with their completes, and what a
 * transport figure of 5x ZeroMQ and 20x a pipe would leave per record end
 * to end in this run: a queue whose single-CPU submit alone takes longer
 * cannot reach that goal by any placement (README, "Benchmarks").
 */
#define OWN_BURST 512
#define OWN_ROUNDS 400
static void own_cost(void)
{
	static double sub[OWN_ROUNDS], tc[OWN_ROUNDS];
	static struct orbit_spotq_rec recs[BATCH];
	struct orbit_spotq_options o;
	struct orbit_spotq_submit s;
	orbit_spotq_producer_t *p = NULL;
	orbit_spotq_host_t *h = NULL;
	orbit_members_t *mb = NULL;
	orbit_spotq_t *q = NULL;
	unsigned char rec[64] = { 0 };
	cpu_set_t was, one;
	uint32_t pos[BATCH];
	void *buf = malloc(LANE_BYTES);
	int e = 0, rounds_done = 0;

	orbit__spotq_options_init(&o);
	o.how = ORBIT_SEG_OPEN_OR_CREATE;
	s = (struct orbit_spotq_submit){ .kind = ORBIT_SPOTQ_KIND_SPOT, .payload = rec, .len = 64 };
	sched_getaffinity(0, sizeof(was), &was);
	if (cpu_a >= 0) {
		CPU_ZERO(&one);
		CPU_SET(cpu_a, &one);
		sched_setaffinity(0, sizeof(one), &one);
	}
	if (!buf || (e = orbit__members_open(&mb, fleet, 0, NULL)) < 0 ||
	    (e = orbit__members_join(mb, "own-cost")) < 0 ||
	    (e = orbit__spotq_open(&q, fleet, "own-cost", &o)) < 0 ||
	    (e = orbit__spotq_producer_open(&p, q, mb)) < 0 ||
	    (e = orbit__spotq_host_takeover(&h, q, mb, 1)) < 0)
		goto out;
	for (int r = 0; r < OWN_ROUNDS + 10 && e >= 0; r++) {
		uint64_t t0 = orbit_test_now_ns(), t1, t2;
		int k = 0, got = 0;

		for (; k < OWN_BURST && e >= 0; k++)
			e = orbit__spotq_submit(p, &s, NULL);
		t1 = orbit_test_now_ns();
		while (e >= 0 && got < k) {
			int n = orbit__spotq_take(h, ORBIT_SPOTQ_APP, recs, BATCH, buf, LANE_BYTES);
			unsigned done;

			if (n <= 0) {
				e = n < 0 ? n : -EIO; /* all were committed: never empty here */
				break;
			}
			for (int i = 0; i < n; i++)
				pos[i] = recs[i].pos;
			e = orbit__spotq_complete_n(h, ORBIT_SPOTQ_APP, pos, (unsigned)n, &done);
			got += n;
		}
		t2 = orbit_test_now_ns();
		if (r >= 10 && e >= 0) { /* the first rounds fault the segment in */
			sub[rounds_done] = (double)(t1 - t0) / k;
			tc[rounds_done++] = (double)(t2 - t1) / k;
		}
	}
out:
	if (e < 0)
		printf("\n-- the queue's own cost: not measured (%s)\n", orbit_strerror(e));
	orbit__spotq_host_close(h);
	orbit__spotq_producer_close(p);
	orbit__spotq_close(q);
	orbit__spotq_unlink(fleet, "own-cost");
	orbit__members_close(mb);
	sched_setaffinity(0, sizeof(was), &was);
	free(buf);
	if (e < 0 || !rounds_done)
		return;
	qsort(sub, (size_t)rounds_done, sizeof(sub[0]), cmp_double);
	qsort(tc, (size_t)rounds_done, sizeof(tc[0]), cmp_double);
	printf("\n-- the queue's own cost: one process on one CPU, 64 B records in bursts of %d "
	       "(%d rounds)\n",
	       OWN_BURST, rounds_done);
	printf("  submit                                   %7.1f ns/rec [%.1f-%.1f]\n",
	       sub[rounds_done / 2], sub[0], sub[rounds_done - 1]);
	printf("  take + complete                          %7.1f ns/rec [%.1f-%.1f]\n",
	       tc[rounds_done / 2], tc[0], tc[rounds_done - 1]);
	for (int k = 0; k < 2; k++) {
		enum method m = k ? M_PIPE : M_ZMQ;
		double goal = k ? 20.0 : 5.0;

		if (skipped(m) || !config_selected(0, 0) || !tp_ok[m][0][0])
			continue;
		printf("  transport >= %2.0fx %-9s leaves       %7.1f ns/rec end to end (%s %.3f M "
		       "rec/s)\n",
		       goal, mname[m], 1e3 / (goal * median(tp[m][0][0][F_MRPS])), mname[m],
		       median(tp[m][0][0][F_MRPS]));
	}
}

int main(int argc, char **argv)
{
	static const enum method tmeth[] = { M_PIPE, M_SEQPACKET, M_MQUEUE, M_ZMQ,
					     M_RING, M_TRANSPORT, M_E2E };
	static const enum method wmeth[] = { M_FUTEX, M_PIPE,	   M_SEQPACKET, M_MQUEUE,
					     M_ZMQ,   M_TRANSPORT, M_E2E };
	const unsigned nt = sizeof(tmeth) / sizeof(tmeth[0]), nw = sizeof(wmeth) / sizeof(wmeth[0]);
	struct orbit_lock_options lko = { .size = sizeof(lko) };
	bool smoke = argc > 1 && !strcmp(argv[1], "--smoke");
	long n = smoke ? 2000 : argc > 1 ? atol(argv[1]) : 100000;
	int rc = 0;

	if (n < 64) {
		fprintf(stderr, "usage: bench_spot_queue [records per 64-byte run | --smoke]\n");
		return 2;
	}
	if (smoke) {
		reps = 1;
		rounds = 50;
		child_timeout_ms = 15000;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	only = getenv("ORBIT_BENCH_METHODS");
	configs = getenv("ORBIT_BENCH_CONFIGS");
	orbit_test_fleet(fleet, sizeof(fleet), "bspotq");
	lko.fleet = fleet;
	pick_cpus();
	ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ctl == MAP_FAILED)
		return 1;
	printf("bench_spot_queue: cross-process hand-off of one record, each producer and the\n"
	       "consumer a process; %ld records of 64 B and %ld of 4 KiB per run (all producers\n"
	       "together), %d runs per figure, methods interleaved. Figures: median [range].\n",
	       n, n / 8, reps);
	if (cpu_b >= 0)
		printf("placement: producers on CPU %d, the consumer process on CPU %d\n", cpu_a,
		       cpu_b);
	else
		printf("placement: one CPU only: nothing pinned\n");

	for (int rep = 0; rep < reps; rep++)
		for (int si = 0; si < 2; si++)
			for (int pi = 0; pi < 2; pi++)
				for (unsigned k = 0; k < nt; k++) {
					enum method m = tmeth[k];
					struct run r = { .m = m,
							 .size = sizes[si],
							 .P = nprod[pi] };
					double *f = &tp[m][si][pi][0][0];

					if (skipped(m) || !config_selected(si, pi))
						continue;
					r.per = (uint32_t)((si ? n / 8 : n) / r.P);
					if (rep == 0)
						tp_ok[m][si][pi] = true;
					if (run_one(&r, &f[F_MRPS * REPS_FULL + rep],
						    &f[F_P50 * REPS_FULL + rep],
						    &f[F_P99 * REPS_FULL + rep],
						    &f[F_CPU * REPS_FULL + rep]) < 0) {
						tp_ok[m][si][pi] = false;
						rc = 1;
					}
				}
	for (int rep = 0; rep < reps; rep++)
		for (unsigned k = 0; k < nw; k++) {
			enum method m = wmeth[k];
			struct run r = {
				.m = m, .size = 64, .P = 1, .per = (uint32_t)rounds, .paced = true
			};
			double mrps, cpu;

			if (skipped(m) || (configs && !listed(configs, "wake")))
				continue;
			if (rep == 0)
				wk_ok[m] = true;
			if (run_one(&r, &mrps, &wk[m][0][rep], &wk[m][1][rep], &cpu) < 0) {
				wk_ok[m] = false;
				rc = 1;
			}
		}

	for (int si = 0; si < 2; si++)
		for (int pi = 0; pi < 2; pi++) {
			if (!config_selected(si, pi))
				continue;
			printf("\n-- throughput, %u B records, %u producer%s (mqueue depth %ld)\n",
			       sizes[si], nprod[pi], nprod[pi] > 1 ? "s" : "", mq_depth_used[si]);
			printf("  %-10s %8s %-15s %9s %10s %10s  (loaded latency, ns)\n", "method",
			       "M rec/s", "[range]", "cpu ns/rec", "p50", "p99");
			for (unsigned k = 0; k < nt; k++) {
				enum method m = tmeth[k];
				double lo, hi;

				if (skipped(m)) {
					printf("  %-10s SKIPPED: %s\n", mname[m], skip_why(m));
					continue;
				}
				if (!tp_ok[m][si][pi]) {
					printf("  %-10s FAILED (see above)\n", mname[m]);
					continue;
				}
				range(tp[m][si][pi][F_MRPS], &lo, &hi);
				printf("  %-10s %8.3f %-15s %9.0f %10.0f %10.0f\n", mname[m],
				       median(tp[m][si][pi][F_MRPS]), rng(lo, hi),
				       median(tp[m][si][pi][F_CPU]), median(tp[m][si][pi][F_P50]),
				       median(tp[m][si][pi][F_P99]));
			}
			if (tp_ok[M_TRANSPORT][si][pi] && tp_ok[M_E2E][si][pi]) {
				for (unsigned k = 0; k < nt; k++) {
					enum method m = tmeth[k];
					char name[64];

					if (m == M_TRANSPORT || m == M_E2E || skipped(m) ||
					    !tp_ok[m][si][pi])
						continue;
					snprintf(name, sizeof(name), "transport / %s", mname[m]);
					ratio_line(name, tp[M_TRANSPORT][si][pi][F_MRPS],
						   tp[m][si][pi][F_MRPS]);
					snprintf(name, sizeof(name), "e2e / %s", mname[m]);
					ratio_line(name, tp[M_E2E][si][pi][F_MRPS],
						   tp[m][si][pi][F_MRPS]);
				}
			}
		}
	printf("\n-- 4 producers / 1 producer, aggregate throughput\n");
	for (int si = 0; si < 2; si++)
		for (unsigned k = 0; k < nt; k++) {
			enum method m = tmeth[k];
			char name[64];

			if (skipped(m) || !tp_ok[m][si][0] || !tp_ok[m][si][1])
				continue;
			snprintf(name, sizeof(name), "%s %u B", mname[m], sizes[si]);
			ratio_line(name, tp[m][si][1][F_MRPS], tp[m][si][0][F_MRPS]);
		}
	if (!smoke && !unselected(M_TRANSPORT))
		own_cost();
	if (configs && !listed(configs, "wake"))
		goto targets;
	printf("\n-- wake-up of a sleeping consumer: 64 B, one in flight, %d us gap, %d rounds\n",
	       GAP_NS / 1000, rounds);
	printf("  %-10s %8s %-17s %8s %-17s\n", "method", "p50 ns", "[range]", "p99 ns", "[range]");
	for (unsigned k = 0; k < nw; k++) {
		enum method m = wmeth[k];
		double lo, hi, lo9, hi9;

		if (skipped(m)) {
			printf("  %-10s SKIPPED: %s\n", mname[m], skip_why(m));
			continue;
		}
		if (!wk_ok[m]) {
			printf("  %-10s FAILED (see above)\n", mname[m]);
			continue;
		}
		range(wk[m][0], &lo, &hi);
		range(wk[m][1], &lo9, &hi9);
		printf("  %-10s %8.0f [%.0f-%.0f]%*s %8.0f [%.0f-%.0f]\n", mname[m],
		       median(wk[m][0]), lo, hi, 4, "", median(wk[m][1]), lo9, hi9);
	}
	if (wk_ok[M_TRANSPORT] && wk_ok[M_FUTEX])
		ratio_line("transport wake p50 / futex ping-pong p50", wk[M_TRANSPORT][0],
			   wk[M_FUTEX][0]);
	if (wk_ok[M_E2E] && wk_ok[M_FUTEX])
		ratio_line("e2e wake p50 / futex ping-pong p50 (info)", wk[M_E2E][0],
			   wk[M_FUTEX][0]);

targets:
	if (smoke) {
		printf("\nsmoke run (--smoke): figures of tiny runs, no target judged\n");
	} else {
		printf("\n");
		target_ratio("spotq_transport_vs_zmq_ipc_64B_1p", M_TRANSPORT, M_ZMQ, 0, 0, 0,
			     ">=", 5.0);
		target_ratio("spotq_transport_vs_pipe_64B_1p", M_TRANSPORT, M_PIPE, 0, 0, 0,
			     ">=", 20.0);
		target_ratio("spotq_transport_vs_shm_ring_64B_1p", M_TRANSPORT, M_RING, 0, 0, 0,
			     ">=", 0.33);
		target_ratio("spotq_e2e_vs_zmq_ipc_64B_1p", M_E2E, M_ZMQ, 0, 0, 0, ">=", 2.0);
		target_ratio("spotq_transport_4p_vs_1p_64B", M_TRANSPORT, M_TRANSPORT, 0, 1, 0,
			     ">=", 0.5);
		target_ratio("spotq_e2e_4p_vs_1p_64B", M_E2E, M_E2E, 0, 1, 0, ">=", 0.5);
		if (cpu_b < 0)
			printf("no target spotq_wake_p50_vs_futex_pingpong: one CPU, no split "
			       "placement\n");
		else if (wk_ok[M_TRANSPORT] && wk_ok[M_FUTEX])
			bench_target("spotq_wake_p50_vs_futex_pingpong",
				     median(wk[M_FUTEX][0]) > 0
					 ? median(wk[M_TRANSPORT][0]) / median(wk[M_FUTEX][0])
					 : 0,
				     "<=", 1.5, "x");
	}
	orbit__members_unlink(fleet);
	orbit__ring_unlink(fleet, NULL);
	orbit__seg_unlink(fleet, "stats");
	orbit_lock_unlink(&lko);
	munmap(ctl, sizeof(*ctl));
	return rc;
}
