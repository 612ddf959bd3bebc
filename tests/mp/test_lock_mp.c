// SPDX-License-Identifier: MIT
/*
 * tests/mp/test_lock_mp.c: orbit-lock across processes (spec
 * orbit-lock-architecture.md "Invariants": one active entry per key;
 * "TTL and fencing": strictly increasing tokens). Four worker processes
 * do thousands of try_acquire/release on three keys and record, per
 * acquisition, key, owner, token and the interval they believed they
 * held the lock; a fifth process runs lookups and checks that every copy
 * it gets is whole. A checker then proves that no two intervals of one
 * key overlap and that tokens increase in acquisition order. Runs once
 * per serializer.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include <orbit/orbit.h>

#include "orbit_test.h"

#define NPROC 4
#define NKEYS 3
#define MAXREC 40000

struct rec {
	uint32_t key, proc;
	uint64_t token, t_start, t_end;
};

struct shared {
	_Atomic uint32_t ready; /* processes that opened their handle */
	_Atomic uint32_t go;
	_Atomic uint32_t done;
	_Atomic uint32_t nrec[NPROC];
	_Atomic uint64_t lookups_ok, lookups_bad;
	_Atomic uint64_t eagain; /* serializer waits past the bound (counted, then retried) */
	struct rec recs[NPROC][MAXREC];
};

static struct shared *sh;
static char fleet[64];
static enum orbit_lock_serializer ser;
static const char *labels[NKEYS] = { "alpha", "beta", "gamma" };

ORBIT_LOCK_DEFINE_NAMESPACE(mp_ns, "tests.mp");

static int ops_per_proc(void)
{
	return orbit_test_long() ? 20000 : 3000;
}

static struct orbit_lock_options opts(void)
{
	struct orbit_lock_options o = { .size = sizeof(o), .fleet = fleet, .serializer = ser };
	return o;
}

static int worker(void *arg)
{
	uint32_t me = (uint32_t)(uintptr_t)arg;
	struct orbit_lock_options o = opts();
	char own[16];
	orbit_lock_t *l;
	unsigned seed = me * 7919u + 1;
	uint32_t n = 0;

	if (orbit_lock_open(&o, &l))
		return 10;
	snprintf(own, sizeof(own), "proc-%u", me);
	orbit_lock_owner_t ow = { own, strlen(own) };
	atomic_fetch_add(&sh->ready, 1);
	while (!atomic_load(&sh->go))
		;
	uint64_t until = orbit_test_now_ns() + 5000000000ull;

	for (int i = 0; n < MAXREC; i++) {
		/*
		 * Past ops_per_proc(), go on slowly until the looker has seen some
		 * holders: on 2 busy cores it may not have run at all yet.
		 */
		if (i >= ops_per_proc()) {
			if (atomic_load(&sh->lookups_ok) >= 100 || orbit_test_now_ns() > until)
				break;
			usleep(100);
		}
		uint32_t k = (uint32_t)rand_r(&seed) % NKEYS;
		orbit_lock_key_t key = orbit_lock_key(mp_ns, labels[k], strlen(labels[k]));
		struct orbit_lock_lease lease;
		int rc = orbit_lock_try_acquire(l, &key, &ow, 30000000000ull, &lease, NULL);

		if (rc == -EAGAIN) /* a holder preempted past the serializer bound: nothing taken */
			atomic_fetch_add(&sh->eagain, 1);
		if (rc == -EBUSY || rc == -EAGAIN)
			continue;
		if (rc)
			return 11;
		struct rec *r = &sh->recs[me][n++];
		r->t_start = orbit_test_now_ns();
		r->key = k;
		r->proc = me;
		r->token = lease.token;
		for (volatile int spin = rand_r(&seed) % 200; spin > 0; spin--)
			;
		r->t_end = orbit_test_now_ns();
		while ((rc = orbit_lock_release(l, &key, &ow, lease.token)) == -EAGAIN)
			atomic_fetch_add(&sh->eagain, 1);
		if (rc)
			return 12;
	}
	atomic_store(&sh->nrec[me], n);
	orbit_lock_close(l);
	return 0;
}

/* Every lookup copy is whole: the key it asked for, an owner "proc-<0..3>". */
static int looker(void *arg)
{
	struct orbit_lock_options o = opts();
	orbit_lock_t *l;
	unsigned seed = 17;

	if (orbit_lock_open(&o, &l))
		return 10;
	atomic_fetch_add(&sh->ready, 1);
	while (!atomic_load(&sh->go))
		;
	while (atomic_load(&sh->done) < NPROC) {
		uint32_t k = (uint32_t)rand_r(&seed) % NKEYS;
		orbit_lock_key_t key = orbit_lock_key(mp_ns, labels[k], strlen(labels[k]));
		struct orbit_lock_entry e;
		int rc = orbit_lock_lookup(l, &key, &e);

		if (rc == -ENOENT || rc == -EAGAIN)
			continue;
		const char *ow = orbit_lock_entry_owner(&e);
		bool whole = rc == 0 && e.ns_len == mp_ns.len && e.label_len == strlen(labels[k]) &&
			     memcmp(e.bytes + e.ns_len, labels[k], e.label_len) == 0 &&
			     e.owner_len == 6 && memcmp(ow, "proc-", 5) == 0 && ow[5] >= '0' &&
			     ow[5] < '0' + NPROC && e.token > 0;
		atomic_fetch_add(whole ? &sh->lookups_ok : &sh->lookups_bad, 1);
	}
	orbit_lock_close(l);
	return 0;
}

static int cmp_start(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	return x->t_start < y->t_start ? -1 : x->t_start > y->t_start;
}

/* The checker: per key, sorted by start: no overlap, tokens strictly up. */
static void check_intervals(void)
{
	static struct rec all[NPROC * MAXREC];
	size_t total = 0, per_key[NKEYS] = { 0 };

	for (uint32_t k = 0; k < NKEYS; k++) {
		size_t n = 0;
		for (int p = 0; p < NPROC; p++)
			for (uint32_t i = 0; i < (uint32_t)atomic_load(&sh->nrec[p]); i++)
				if (sh->recs[p][i].key == k)
					all[n++] = sh->recs[p][i];
		qsort(all, n, sizeof(all[0]), cmp_start);
		for (size_t i = 1; i < n; i++) {
			if (all[i - 1].t_end >= all[i].t_start)
				fail_msg("key %u: intervals overlap: proc %u [%lu,%lu] token %lu "
					 "and proc %u [%lu,%lu] token %lu",
					 k, all[i - 1].proc, (unsigned long)all[i - 1].t_start,
					 (unsigned long)all[i - 1].t_end,
					 (unsigned long)all[i - 1].token, all[i].proc,
					 (unsigned long)all[i].t_start, (unsigned long)all[i].t_end,
					 (unsigned long)all[i].token);
			if (all[i - 1].token >= all[i].token)
				fail_msg("key %u: token %lu acquired before token %lu", k,
					 (unsigned long)all[i - 1].token,
					 (unsigned long)all[i].token);
		}
		per_key[k] = n;
		total += n;
	}
	print_message("%zu acquisitions (%zu/%zu/%zu per key) checked\n", total, per_key[0],
		      per_key[1], per_key[2]);
	assert_true(total >= (size_t)ops_per_proc()); /* enough acquisitions to check */
	for (uint32_t k = 0; k < NKEYS; k++)
		assert_true(per_key[k] > 0);
}

static void run_fleet(void)
{
	struct orbit_lock_options o;
	pid_t pids[NPROC + 1];
	orbit_lock_t *l;

	orbit_test_fleet(fleet, sizeof(fleet), "mp");
	o = opts();
	memset(sh, 0, sizeof(*sh));
	assert_int_equal(orbit_lock_open(&o, &l), 0); /* create before the workers race */
	for (int p = 0; p <= NPROC; p++) {
		pids[p] = fork();
		assert_true(pids[p] >= 0);
		if (pids[p] == 0) {
			int rc = p < NPROC ? worker((void *)(uintptr_t)p) : looker(NULL);
			if (p < NPROC)
				atomic_fetch_add(&sh->done, 1);
			_exit(rc);
		}
	}
	/* everyone (the looker too) has its handle before the first acquire */
	for (int ms = 0; atomic_load(&sh->ready) < NPROC + 1 && ms < 10000; ms++)
		usleep(1000);
	atomic_store(&sh->go, 1);
	int bad = 0;
	for (int p = 0; p < NPROC; p++) {
		int st = orbit_test_wait(pids[p], orbit_test_long() ? 600000 : 60000);
		bad |= st < 0 || !WIFEXITED(st) || WEXITSTATUS(st);
	}
	atomic_store(&sh->done, NPROC); /* also releases the looker if a worker failed */
	int st = orbit_test_wait(pids[NPROC], 10000);
	bad |= st < 0 || !WIFEXITED(st) || WEXITSTATUS(st);
	orbit_lock_close(l);
	orbit_lock_unlink(&o);
	assert_int_equal(bad, 0);
	check_intervals();
	print_message("%lu whole lookups, %lu torn; %lu serializer waits past the bound\n",
		      (unsigned long)atomic_load(&sh->lookups_ok),
		      (unsigned long)atomic_load(&sh->lookups_bad),
		      (unsigned long)atomic_load(&sh->eagain));
	assert_int_equal(atomic_load(&sh->lookups_bad), 0);
	assert_true(atomic_load(&sh->lookups_ok) > 0);
}

/* Spec "Invariants" + "TTL and fencing", FUTEX serializer. */
static void test_mp_no_overlap_tokens_increase_futex(void **state)
{
	ser = ORBIT_LOCK_SERIALIZER_FUTEX;
	run_fleet();
}

/* Spec "Invariants" + "TTL and fencing", FLOCK serializer. */
static void test_mp_no_overlap_tokens_increase_flock(void **state)
{
	ser = ORBIT_LOCK_SERIALIZER_FLOCK;
	run_fleet();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mp_no_overlap_tokens_increase_futex),
		cmocka_unit_test(test_mp_no_overlap_tokens_increase_flock),
	};

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	return cmocka_run_group_tests_name("lock_mp", tests, NULL, NULL);
}
