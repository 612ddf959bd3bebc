// SPDX-License-Identifier: MIT
/*
 * agent/orbit-demo.c: the fleet demo (scripts/demo). --scenario bank
 * (the default) is the bank of accounts run on cross-process Spot queues
 * (agent/demo_bank.c); --scenario locks, this file, the lock table alone:
 * it forks worker
 * processes that contend for keyed orbit-locks with a TTL and, inside the
 * critical section, write to a protected resource file per key that
 * rejects writes carrying a fencing token older than the highest it has
 * seen. A chaos loop SIGKILLs workers (mostly inside their critical
 * sections) and restarts them, and SIGSTOPs some past their TTL so their
 * late writes really are stale and rejected. Prints a live status line
 * and a final report; exits 1 if mutual exclusion was ever violated.
 * Uses only the public API (links liborbit like any user).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <orbit/orbit.h>

#include "agent/demo_bank.h"

#define MAX_WORKERS 64
#define MAX_KEYS 64
#define RES_MAGIC 0x5345524f42524f4full /* "ORBOROSE" */

ORBIT_LOCK_DEFINE_NAMESPACE(demo_ns, "orbit.demo.resource");

/* The protected resource: one file per key, this header at offset 0. */
struct res_hdr {
	uint64_t magic;
	uint64_t highest_token;	  /* fencing: writes below it are rejected */
	uint64_t marker_token;	  /* the holder that announced itself (0: none) */
	uint64_t marker_deadline; /* its lease deadline (CLOCK_MONOTONIC) */
	uint32_t marker_worker;
	uint32_t pad;
	uint64_t writes;	 /* accepted writes */
	uint64_t stale_rejected; /* writes rejected for an old token */
	uint64_t violations;	 /* a second live holder announced itself */
	uint64_t value;		 /* the "data": bumped by every accepted write */
};

enum res_op { RES_ENTER, RES_WRITE, RES_LEAVE };
enum res_result { RES_OK, RES_STALE, RES_ERROR };

struct worker_stat {
	_Atomic int pid;
	_Atomic int in_cs; /* 1 between acquire and release */
	_Atomic uint32_t incarnation;
	_Atomic uint64_t ops; /* completed critical sections */
	_Atomic uint64_t busy;
	_Atomic uint64_t stale; /* writes of this worker the resource rejected */
};

struct shared {
	_Atomic int stop;
	struct worker_stat w[MAX_WORKERS];
};

static struct config {
	int seconds, workers, keys, ttl_ms;
	int no_lock; /* --no-lock: skip the lock (shows that the checker catches violations) */
	enum orbit_lock_serializer ser;
	char fleet[ORBIT_FLEET_NAME_MAX + 1];
	char dir[128];
} cfg = { 20, 6, 3, 200, 0, ORBIT_LOCK_SERIALIZER_AUTO, "", "" };

static struct shared *sh;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void res_path(char *buf, size_t len, int k)
{
	snprintf(buf, len, "%s/key-%d.res", cfg.dir, k);
}

/*
 * The resource's own write path: under its file lock, check the fencing
 * token, then apply. This is what a fencing-aware store does.
 */
static enum res_result res_write(int fd, enum res_op op, uint64_t token, uint64_t deadline,
				 int worker)
{
	struct res_hdr h;
	enum res_result r = RES_OK;

	if (flock(fd, LOCK_EX))
		return RES_ERROR;
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || h.magic != RES_MAGIC) {
		flock(fd, LOCK_UN);
		return RES_ERROR;
	}
	if (token < h.highest_token) {
		h.stale_rejected++;
		r = RES_STALE;
	} else {
		h.highest_token = token;
		if (op == RES_ENTER) {
			/* another holder announced a lease that has not expired: two live holders */
			if (h.marker_token && h.marker_token != token &&
			    h.marker_deadline > now_ns())
				h.violations++;
			h.marker_token = token;
			h.marker_deadline = deadline;
			h.marker_worker = (uint32_t)worker;
		} else if (op == RES_WRITE) {
			h.writes++;
			h.value++;
			if (h.marker_token == token)
				h.marker_deadline = deadline;
		} else if (h.marker_token == token) {
			h.marker_token = 0;
		}
	}
	if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		r = RES_ERROR;
	flock(fd, LOCK_UN);
	return r;
}

static void rand_sleep_us(unsigned *seed, unsigned lo, unsigned hi)
{
	usleep(lo + (unsigned)rand_r(seed) % (hi - lo + 1));
}

static int worker_main(int id)
{
	struct orbit_lock_options o = { .size = sizeof(o),
					.fleet = cfg.fleet,
					.serializer = cfg.ser };
	struct worker_stat *ws = &sh->w[id];
	uint64_t ttl = (uint64_t)cfg.ttl_ms * 1000000ull;
	int fds[MAX_KEYS];
	char own[32], lab[16], path[160];
	unsigned seed = (unsigned)getpid() ^ (unsigned)now_ns();
	orbit_lock_t *l;
	orbit_agent_t *ag = NULL;
	char name[24];
	int rc;

	rc = orbit_lock_open(&o, &l);
	if (rc) {
		fprintf(stderr, "worker %d: open: %s\n", id, orbit_strerror(rc));
		return 2;
	}
	/* The agent publishes this worker's transitions on its ring lane and its
	 * counters in the stats segment (orbitctl watch / stats). Lanes and rows
	 * of killed workers are reclaimed by the other agents within a tick. */
	snprintf(name, sizeof(name), "worker-%d", id);
	struct orbit_agent_options ao = {
		.size = sizeof(ao), .fleet = cfg.fleet, .name = name, .lock = l
	};
	for (int tries = 0; (rc = orbit_agent_start(&ao, &ag)) == -ENOSPC && tries < 200; tries++)
		usleep(10000);
	if (rc) {
		fprintf(stderr, "worker %d: agent: %s\n", id, orbit_strerror(rc));
		return 2;
	}
	for (int k = 0; k < cfg.keys; k++) {
		res_path(path, sizeof(path), k);
		fds[k] = open(path, O_RDWR | O_CLOEXEC);
		if (fds[k] < 0)
			return 2;
	}
	snprintf(own, sizeof(own), "worker-%d.%u", id, atomic_load(&ws->incarnation));
	orbit_lock_owner_t ow = { own, strlen(own) };
	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		int k = rand_r(&seed) % cfg.keys;
		struct orbit_lock_lease ls;

		snprintf(lab, sizeof(lab), "res-%d", k);
		orbit_lock_key_t key = orbit_lock_key(demo_ns, lab, strlen(lab));
		if (cfg.no_lock) { /* a fake lease: what a fleet without the lock would do */
			ls.token = now_ns();
			ls.deadline_ns = ls.token + ttl;
			rc = 0;
		} else {
			uint64_t t0 = now_ns();
			rc = orbit_lock_try_acquire(l, &key, &ow, ttl, &ls, NULL);
			orbit_agent_record_latency(ag, ORBIT_AGENT_HIST_ACQUIRE, now_ns() - t0);
		}
		if (rc == -EBUSY ||
		    rc == -EAGAIN) { /* -EAGAIN: a mutator paused in the serializer */
			atomic_fetch_add_explicit(&ws->busy, 1, memory_order_relaxed);
			rand_sleep_us(&seed, 200, 1500); /* the policy above the lock: back off */
			continue;
		}
		if (rc) {
			fprintf(stderr, "worker %d: try_acquire: %s\n", id, orbit_strerror(rc));
			return 3;
		}
		atomic_store(&ws->in_cs, 1);
		enum res_result r = res_write(fds[k], RES_ENTER, ls.token, ls.deadline_ns, id);
		for (int j = 0; j < 3 && r == RES_OK; j++) {
			rand_sleep_us(&seed, 1000, 8000);
			if (j == 1 && !cfg.no_lock &&
			    orbit_lock_renew(l, &key, &ow, ls.token, ttl, &ls) != 0)
				break; /* lease lost (we were paused past the TTL): stop writing */
			r = res_write(fds[k], RES_WRITE, ls.token, ls.deadline_ns, id);
		}
		if (r == RES_OK)
			r = res_write(fds[k], RES_LEAVE, ls.token, ls.deadline_ns, id);
		if (r == RES_STALE)
			atomic_fetch_add_explicit(&ws->stale, 1, memory_order_relaxed);
		/* -ENOENT / -EPERM after a pause: the lease is gone, a newer owner holds it */
		orbit_lock_release(l, &key, &ow, ls.token);
		atomic_store(&ws->in_cs, 0);
		atomic_fetch_add_explicit(&ws->ops, 1, memory_order_relaxed);
		rand_sleep_us(&seed, 100, 1000);
	}
	orbit_agent_stop(ag);
	orbit_lock_close(l);
	return 0;
}

static pid_t spawn(int id)
{
	pid_t pid;

	atomic_store(&sh->w[id].in_cs, 0);
	pid = fork();
	if (pid == 0)
		_exit(demo_child_signals() ? 1 : worker_main(id));
	if (pid > 0)
		atomic_store(&sh->w[id].pid, pid);
	return pid;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: orbit-demo [--seconds N] [--workers W] [--keys K] [--ttl-ms T]\n"
		   "                  [--fleet NAME] [--serializer futex|flock] [--no-lock]\n"
		   "  Forks W workers contending for K keyed orbit-locks (TTL T ms); each\n"
		   "  runs the orbit agent and writes to a fencing-checked resource file; a\n"
		   "  chaos loop SIGKILLs and restarts workers and pauses some past their\n"
		   "  TTL. Default: 20 s, 6 workers, 3 keys, 200 ms, fleet \"demo\".\n"
		   "  Watch it from another terminal: orbitctl --fleet demo watch|locks|stats\n"
		   "  Exit status 1 on a mutual-exclusion violation, 2 on a setup error.\n"
		   "  --no-lock skips the lock, to show that the checker does catch violations.\n");
}

static int parse(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "workers", required_argument, NULL, 'w' },
		{ "keys", required_argument, NULL, 'k' },
		{ "ttl-ms", required_argument, NULL, 't' },
		{ "serializer", required_argument, NULL, 'S' },
		{ "fleet", required_argument, NULL, 'f' },
		{ "no-lock", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct demo_int_opt ints[] = {
		{ 's', "seconds", 1, 86400, &cfg.seconds },
		{ 'w', "workers", 2, MAX_WORKERS, &cfg.workers },
		{ 'k', "keys", 1, MAX_KEYS, &cfg.keys },
		{ 't', "ttl-ms", 20, 3600000, &cfg.ttl_ms },
	};
	int c;

	while ((c = getopt_long(argc, argv, "s:w:k:t:S:f:nh", opts, NULL)) != -1) {
		int r = demo_opt_ints(ints, sizeof(ints) / sizeof(ints[0]), c, optarg);

		if (r <= 0) {
			if (r < 0)
				return -1;
			continue;
		}
		switch (c) {
		case 'f':
			if (demo_opt_fleet(optarg, cfg.fleet, sizeof(cfg.fleet)))
				return -1;
			break;
		case 'S':
			if (strcmp(optarg, "futex") == 0)
				cfg.ser = ORBIT_LOCK_SERIALIZER_FUTEX;
			else if (strcmp(optarg, "flock") == 0)
				cfg.ser = ORBIT_LOCK_SERIALIZER_FLOCK;
			else {
				fprintf(stderr, "orbit-demo: --serializer %s: futex or flock\n",
					optarg);
				return -1;
			}
			break;
		case 'n':
			cfg.no_lock = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -1;
		}
	}
	return 0;
}

static int make_resources(void)
{
	struct res_hdr h = { .magic = RES_MAGIC };
	char path[160];

	snprintf(cfg.dir, sizeof(cfg.dir), "%s/orbit-demo.%d",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	if (mkdir(cfg.dir, 0700))
		return -errno;
	for (int k = 0; k < cfg.keys; k++) {
		res_path(path, sizeof(path), k);
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
			return -errno;
		close(fd);
	}
	return 0;
}

/*
 * The resources' totals. During the run (wait false) a file whose lock is
 * held counts with what it held at its last read: the holder may be the
 * worker the chaos loop SIGSTOPped inside res_write, which only this
 * process resumes, so waiting for its lock would wait for ever. At the
 * end (wait true) every worker is dead and the locks are free.
 */
static void read_totals(struct res_hdr *sum, bool wait)
{
	static struct res_hdr last[MAX_KEYS];
	char path[160];

	memset(sum, 0, sizeof(*sum));
	for (int k = 0; k < cfg.keys; k++) {
		struct res_hdr h;
		res_path(path, sizeof(path), k);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (flock(fd, wait ? LOCK_SH : LOCK_SH | LOCK_NB) == 0) {
			if (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h))
				last[k] = h;
			flock(fd, LOCK_UN);
		}
		close(fd);
		sum->writes += last[k].writes;
		sum->stale_rejected += last[k].stale_rejected;
		sum->violations += last[k].violations;
	}
}

static void remove_resources(void)
{
	char path[160];

	for (int k = 0; k < cfg.keys; k++) {
		res_path(path, sizeof(path), k);
		unlink(path);
	}
	rmdir(cfg.dir);
}

static uint64_t total_ops(void)
{
	uint64_t n = 0;
	for (int i = 0; i < cfg.workers; i++)
		n += atomic_load(&sh->w[i].ops);
	return n;
}

static int count_held(const struct orbit_lock_entry *e, void *ctx)
{
	int *n = ctx;
	n[0] += !e->expired;
	n[1] += !e->expired && orbit_lock_holder_alive(e) == 0;
	return 0;
}

static int locks_main(int argc, char **argv)
{
	struct orbit_lock_options o = { .size = sizeof(o) };
	uint64_t kills = 0, restarts = 0, pauses = 0, t_end, next_status, t0;
	int stopped = -1, rc, tty = isatty(STDOUT_FILENO);
	uint64_t resume_at = 0;
	unsigned seed = (unsigned)getpid();
	struct res_hdr tot;
	orbit_lock_t *l;

	if (parse(argc, argv)) {
		usage(stderr);
		return 2;
	}
	if (!cfg.fleet[0])
		strcpy(cfg.fleet, "demo");
	/* Leftovers of an earlier run that was killed are removed; a fleet with
	 * live members is somebody else's demo. */
	rc = orbit_fleet_unlink(cfg.fleet);
	if (rc == -EBUSY) {
		fprintf(stderr, "orbit-demo: fleet \"%s\" has live members; pass --fleet NAME\n",
			cfg.fleet);
		return 2;
	}
	if (rc < 0 && rc != -ENOENT) {
		fprintf(stderr, "orbit-demo: fleet \"%s\": %s\n", cfg.fleet, orbit_strerror(rc));
		return 2;
	}
	o.fleet = cfg.fleet;
	o.serializer = cfg.ser;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 2;
	rc = make_resources();
	if (rc) {
		fprintf(stderr, "orbit-demo: resources in %s: %s\n", cfg.dir, strerror(-rc));
		return 2;
	}
	rc = orbit_lock_open(&o, &l); /* creates the fleet's lock table */
	if (rc) {
		fprintf(stderr, "orbit-demo: orbit_lock_open: %s\n", orbit_strerror(rc));
		remove_resources();
		return 2;
	}
	printf("orbit-demo: fleet %s, %d workers, %d keys, TTL %d ms, %d s; resources in %s\n"
	       "orbit-demo: watch it: orbitctl --fleet %s watch | locks | members | stats\n",
	       cfg.fleet, cfg.workers, cfg.keys, cfg.ttl_ms, cfg.seconds, cfg.dir, cfg.fleet);
	demo_stop_signals();
	for (int i = 0; i < cfg.workers; i++)
		spawn(i);
	/* The chaos loop follows the ring from outside, as orbitctl watch does:
	 * no agent thread here, since this process forks workers all along. */
	struct orbit_fleet_options fo = { .size = sizeof(fo), .fleet = cfg.fleet };
	orbit_fleet_t *fl = NULL;
	orbit_transition_reader_t *rd;
	struct orbit_transition_event ev;
	uint64_t seen = 0, lags = 0;
	for (int tries = 0; tries < 100; tries++) { /* the first worker's agent creates the ring */
		rc = orbit_fleet_open(&fo, &fl);
		if (rc == 0) {
			rc = orbit_fleet_reader_open(fl, &rd);
			if (rc == 0)
				break;
			orbit_fleet_close(fl);
		}
		if (rc != -ENOENT)
			break;
		usleep(10000);
	}
	if (rc) {
		fprintf(stderr, "orbit-demo: following the ring: %s\n", orbit_strerror(rc));
		atomic_store(&sh->stop, 1);
		for (int i = 0; i < cfg.workers; i++) {
			kill(atomic_load(&sh->w[i].pid), SIGKILL);
			waitpid(atomic_load(&sh->w[i].pid), NULL, 0);
		}
		orbit_lock_close(l);
		orbit_fleet_unlink(cfg.fleet);
		remove_resources();
		return 2;
	}
	t0 = now_ns();
	t_end = t0 + (uint64_t)cfg.seconds * 1000000000ull;
	next_status = t0;
	while (now_ns() < t_end && !demo_interrupted) {
		uint64_t now;

		usleep(60000 + (unsigned)rand_r(&seed) % 120000);
		now = now_ns();
		/* follow the transition ring; a lag means the table is the truth */
		for (;;) {
			rc = orbit_transition_reader_next(rd, &ev);
			if (rc == 0)
				seen++;
			else if (rc == -ORBIT_ELAGGED)
				lags++;
			else if (rc != -ORBIT_ECORRUPT)
				break;
		}
		/* reap workers that exited on their own (errors) and restart them */
		for (int i = 0; i < cfg.workers; i++) {
			int st;
			pid_t p = atomic_load(&sh->w[i].pid);
			if (p > 0 && waitpid(p, &st, WNOHANG) == p) {
				fprintf(stderr, "\norbit-demo: worker %d exited (%d); restarting\n",
					i, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
				atomic_fetch_add(&sh->w[i].incarnation, 1);
				spawn(i);
				restarts++;
			}
		}
		if (stopped >= 0 && now >= resume_at) {
			kill(atomic_load(&sh->w[stopped].pid), SIGCONT);
			stopped = -1;
		}
		/* the victim: a worker inside its critical section when there is one */
		int in_cs[MAX_WORKERS], n = 0;
		for (int i = 0; i < cfg.workers; i++)
			if (i != stopped && atomic_load(&sh->w[i].in_cs))
				in_cs[n++] = i;
		int v = n ? in_cs[rand_r(&seed) % n] : rand_r(&seed) % cfg.workers;
		if (v != stopped && rand_r(&seed) % 4 == 0 && stopped < 0 && n) {
			/* pause a holder past its TTL: its late writes must be rejected */
			kill(atomic_load(&sh->w[v].pid), SIGSTOP);
			stopped = v;
			resume_at = now + (uint64_t)cfg.ttl_ms * 2000000ull;
			pauses++;
		} else if (v != stopped) {
			pid_t p = atomic_load(&sh->w[v].pid);
			kill(p, SIGKILL);
			waitpid(p, NULL, 0);
			kills++;
			atomic_fetch_add(&sh->w[v].incarnation, 1);
			spawn(v);
			restarts++;
		}
		if (now >= next_status) {
			read_totals(&tot, false);
			printf("%s[%4.1fs] ops %-6lu kills %-4lu paused %-3lu transitions %-6lu "
			       "stale %-3lu violations %lu%s",
			       tty ? "\r" : "", (double)(now - t0) / 1e9,
			       (unsigned long)total_ops(), (unsigned long)kills,
			       (unsigned long)pauses, (unsigned long)seen,
			       (unsigned long)tot.stale_rejected, (unsigned long)tot.violations,
			       tty ? "   " : "\n");
			fflush(stdout);
			next_status = now + (tty ? 200000000ull : 1000000000ull);
		}
	}
	demo_say_interrupted();
	/* wind down: resume the paused one, let everyone finish its critical section */
	atomic_store(&sh->stop, 1);
	if (stopped >= 0)
		kill(atomic_load(&sh->w[stopped].pid), SIGCONT);
	for (int i = 0; i < cfg.workers; i++) {
		pid_t p = atomic_load(&sh->w[i].pid);
		for (int ms = 0; ms < 3000 && waitpid(p, NULL, WNOHANG) == 0; ms += 10)
			usleep(10000);
		if (kill(p, 0) == 0) {
			kill(p, SIGKILL);
			waitpid(p, NULL, 0);
		}
	}
	read_totals(&tot, true);
	int held[2] = { 0, 0 };
	orbit_lock_foreach(l, count_held, held);
	struct orbit_lock_stats st;
	orbit_lock_stats(l, &st);
	printf("%s\norbit-demo report (%d s, %d workers, %d keys, TTL %d ms)\n", tty ? "" : "",
	       cfg.seconds, cfg.workers, cfg.keys, cfg.ttl_ms);
	printf("  critical sections completed   %lu\n", (unsigned long)total_ops());
	printf("  resource writes accepted      %lu\n", (unsigned long)tot.writes);
	printf("  workers SIGKILLed             %lu (restarted %lu)\n", (unsigned long)kills,
	       (unsigned long)restarts);
	printf("  workers paused past their TTL %lu\n", (unsigned long)pauses);
	printf("  stale writes rejected         %lu (fencing token older than the newest)\n",
	       (unsigned long)tot.stale_rejected);
	printf("  keys still held at the end    %d (by dead holders until their TTL: %d)\n",
	       held[0], held[1]);
	printf("  transitions seen on the ring  %lu (lag events %lu: the table stays the truth)\n",
	       (unsigned long)seen, (unsigned long)lags);
	printf("  mutual-exclusion violations   %lu%s\n", (unsigned long)tot.violations,
	       tot.violations ? "  <-- FAILURE" : " (must be 0)");
	orbit_transition_reader_close(rd);
	orbit_fleet_close(fl);
	orbit_lock_close(l);
	rc = orbit_fleet_unlink(cfg.fleet);
	if (rc < 0)
		fprintf(stderr, "orbit-demo: removing fleet %s: %s\n", cfg.fleet,
			orbit_strerror(rc));
	remove_resources();
	return tot.violations ? 1 : 0;
}

/* orbit-demo [--scenario bank|locks] [the scenario's options] */
int main(int argc, char **argv)
{
	const char *scenario = "bank";
	int n = 0;

	/* Take --scenario out of argv; the scenario parses the rest. */
	for (int i = 0; i < argc; i++) {
		if (i > 0 && !strcmp(argv[i], "--scenario") && i + 1 < argc) {
			scenario = argv[++i];
			continue;
		}
		if (i > 0 && !strncmp(argv[i], "--scenario=", 11)) {
			scenario = argv[i] + 11;
			continue;
		}
		argv[n++] = argv[i];
	}
	argv[n] = NULL;
	if (!strcmp(scenario, "bank"))
		return demo_bank_main(n, argv);
	if (!strcmp(scenario, "locks"))
		return locks_main(n, argv);
	fprintf(stderr, "orbit-demo: unknown scenario '%s' (bank or locks)\n", scenario);
	return 2;
}
