// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_members.c: the member directory (shm/members.h), issue 5
 * "Transition ring": writer lanes are reclaimed when their process is dead,
 * liveness proved by the kernel (OFD lock, pidfd), never by a PID alone and
 * never by a heartbeat. Multi-process with real fork and SIGKILL.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "orbit_test.h"
#include <orbit/error.h>
#include "shm/members.h"

struct fx {
	char fleet[64];
	orbit_members_t *m;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	orbit_test_fleet(f->fleet, sizeof(f->fleet), "mem");
	assert_int_equal(orbit__members_open(&f->m, f->fleet, 8, NULL), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	orbit__members_close(f->m);
	orbit__members_unlink(f->fleet);
	free(f);
	return 0;
}

static struct orbit_member_row *raw_row(orbit_members_t *m, uint32_t row)
{
	return orbit__seg_at(orbit__members_seg(m),
			     ORBIT_SEG_HEADER_BYTES + sizeof(struct orbit_members_shm) +
				 (uint64_t)row * sizeof(struct orbit_member_row),
			     sizeof(struct orbit_member_row));
}

/* A child that opens its own handle, joins, reports its row, then waits to be killed. */
static pid_t spawn_member(const char *fleet, const char *name, int *row_out, bool fork_grandchild,
			  pid_t *grandchild)
{
	int p[2];
	pid_t pid;
	int msg[2] = { -1, -1 };

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		orbit_members_t *cm;
		close(p[0]);
		if (orbit__members_open(&cm, fleet, 8, NULL) < 0)
			_exit(2);
		msg[0] = orbit__members_join(cm, name);
		if (fork_grandchild) {
			pid_t g = fork();
			if (g == 0) {
				/* Holds every inherited fd; must not keep the parent
				 * "alive". It reports itself, so the test starts only
				 * after fork() returned here, i.e. after the fork
				 * handlers ran (a report from the parent side could
				 * come first and race them). */
				msg[1] = (int)getpid();
				if (write(p[1], msg, sizeof(msg)) != sizeof(msg))
					_exit(3);
				for (;;)
					pause();
			}
			if (g < 0)
				_exit(4);
		} else if (write(p[1], msg, sizeof(msg)) != sizeof(msg)) {
			_exit(3);
		}
		for (;;)
			pause();
	}
	close(p[1]);
	assert_int_equal(read(p[0], msg, sizeof(msg)), (ssize_t)sizeof(msg));
	close(p[0]);
	*row_out = msg[0];
	if (grandchild)
		*grandchild = msg[1];
	return pid;
}

/* Issue 5: a member joins (row, LIVE, name) and leaves (row free again). */
static void test_join_leave(void **state)
{
	struct fx *f = *state;
	struct orbit_member_info info;
	uint32_t gen = 0;
	int row;

	row = orbit__members_join(f->m, "agent\x01one");
	assert_true(row >= 0);
	assert_int_equal(orbit__members_join(f->m, "again"), -EALREADY);
	assert_int_equal(orbit__members_self(f->m, &gen), row);
	assert_int_equal(orbit__members_snapshot(f->m, (uint32_t)row, &info), 0);
	assert_int_equal(info.state, ORBIT_MEMBER_LIVE);
	assert_int_equal(info.pid, getpid());
	assert_int_equal(info.generation, gen);
	assert_true(info.alive && info.self);
	assert_string_equal(info.name, "agent?one");
	assert_int_equal(orbit__members_is_alive(f->m, (uint32_t)row), 1);
	assert_int_equal(orbit__members_count_live_others(f->m), 0);

	assert_int_equal(orbit__members_leave(f->m), 0);
	assert_int_equal(orbit__members_leave(f->m), -ENOENT);
	assert_int_equal(orbit__members_is_alive(f->m, (uint32_t)row), 0);
	assert_int_equal(orbit__members_snapshot(f->m, (uint32_t)row, &info), 0);
	assert_int_equal(info.state, ORBIT_MEMBER_LEFT);
	assert_false(info.alive);
	/* rejoin takes a free row again, with a new generation */
	assert_true(orbit__members_join(f->m, "back") >= 0);
	assert_int_equal(orbit__members_is_alive(f->m, 99), -EINVAL);
}

/* Issue 5: two descriptions in one process are two members; a full directory says -ENOSPC. */
static void test_directory_full_enospc_and_readonly_erofs(void **state)
{
	struct fx *f = *state;
	orbit_members_t *h[8], *extra, *ro;
	struct orbit_seg_opts ro_opts = { .how = ORBIT_SEG_OPEN, .readonly = true };

	for (int i = 0; i < 8; i++) {
		assert_int_equal(orbit__members_open(&h[i], f->fleet, 8, NULL), 0);
		assert_int_equal(orbit__members_join(h[i], "m"), i);
	}
	assert_int_equal(orbit__members_open(&extra, f->fleet, 8, NULL), 0);
	assert_int_equal(orbit__members_join(extra, "x"), -ENOSPC);
	/* The refusal names the directory and its row count */
	assert_non_null(strstr(orbit_segment_last_error(), ".members: all 8 member rows are held"));
	assert_int_equal(orbit__members_count_live_others(h[0]), 7);
	assert_int_equal(orbit__members_open(&ro, f->fleet, 8, &ro_opts), 0);
	assert_int_equal(orbit__members_join(ro, "ro"), -EROFS);
	assert_int_equal(orbit__members_is_alive(ro, 3),
			 1); /* a readonly opener can test liveness */
	assert_int_equal(orbit__members_reclaim(ro, 3), -EROFS);
	orbit__members_close(h[3]); /* leaves */
	assert_int_equal(orbit__members_is_alive(ro, 3), 0);
	assert_int_equal(orbit__members_join(extra, "x"), 3);
	for (int i = 0; i < 8; i++)
		if (i != 3)
			orbit__members_close(h[i]);
	orbit__members_close(extra);
	orbit__members_close(ro);
	/* a peer with another row count is refused: another layout */
	assert_int_equal(orbit__members_open(&extra, f->fleet, 16, NULL), -ORBIT_EFINGERPRINT);
}

/* Issue 5: liveness after SIGKILL is proven dead at once (pidfd + OFD lock), and the row is reclaimed. */
static void test_liveness_after_sigkill_proven_dead_at_once(void **state)
{
	struct fx *f = *state;
	struct orbit_member_info info;
	struct pollfd pfd;
	uint32_t gen = 0, gen2 = 0;
	int row, pfdn;
	pid_t pid;

	assert_true(orbit__members_join(f->m, "observer") >= 0);
	pid = spawn_member(f->fleet, "victim", &row, false, NULL);
	assert_true(row >= 0);
	assert_int_equal(orbit__members_is_alive(f->m, (uint32_t)row), 1);
	assert_int_equal(orbit__members_count_live_others(f->m), 1);
	assert_int_equal(orbit__members_reclaim(f->m, (uint32_t)row), 0); /* alive: not reclaimed */
	pfdn = orbit__members_pidfd_open(f->m, (uint32_t)row, &gen);
	assert_true(pfdn >= 0);
	assert_int_equal(orbit__members_is_alive_gen(f->m, (uint32_t)row, gen), 1);
	assert_int_equal(orbit__members_is_alive_gen(f->m, (uint32_t)row, gen + 1), 0);

	uint64_t t0 = orbit_test_now_ns();
	kill(pid, SIGKILL);
	pfd = (struct pollfd){ .fd = pfdn, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	/* Not reaped yet (a zombie): the kernel already dropped its locks */
	assert_int_equal(orbit__members_is_alive(f->m, (uint32_t)row), 0);
	uint64_t dt = orbit_test_now_ns() - t0;
	assert_true(dt < 1000000000ull); /* at once, not after a heartbeat timeout */
	assert_int_equal(orbit__members_count_live_others(f->m), 0);
	assert_int_equal(orbit__members_reclaim(f->m, (uint32_t)row), 1);
	assert_int_equal(orbit__members_reclaim(f->m, (uint32_t)row), 0); /* already free */
	assert_int_equal(orbit__members_snapshot(f->m, (uint32_t)row, &info), 0);
	assert_int_equal(info.state, ORBIT_MEMBER_FREE);
	assert_true(info.generation > gen);
	assert_int_equal(orbit__members_is_alive_gen(f->m, (uint32_t)row, gen), 0);
	close(pfdn);
	waitpid(pid, NULL, 0);
	/* the dead member's pid no longer opens a pidfd for that row */
	assert_int_equal(orbit__members_pidfd_open(f->m, (uint32_t)row, &gen2), -ESRCH);
}

/* Issue 5 (fork trap): a forked child shares its parent's description and must not keep it alive. */
static void test_forked_child_does_not_keep_dead_parent_alive(void **state)
{
	struct fx *f = *state;
	pid_t pid, grandchild = -1;
	int row;

	pid = spawn_member(f->fleet, "parent", &row, true, &grandchild);
	assert_true(row >= 0 && grandchild > 0);
	assert_int_equal(orbit__members_is_alive(f->m, (uint32_t)row), 1);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(kill(grandchild, 0), 0); /* the grandchild still runs */
	assert_int_equal(orbit__members_is_alive(f->m, (uint32_t)row), 0);
	kill(grandchild, SIGKILL);
}

/* Issue 5: a handle used in a forked child refuses with -ECHILD, the fork trap code of every shm/ handle (the child is not the member). */
static void test_forked_handle_refused_ebadfd(void **state)
{
	struct fx *f = *state;
	int row = orbit__members_join(f->m, "p");
	pid_t pid;
	int st;

	assert_true(row >= 0);
	pid = fork();
	if (pid == 0) {
		int ok = orbit__members_join(f->m, "c") == -ECHILD &&
			 orbit__members_is_alive(f->m, (uint32_t)row) == -ECHILD &&
			 orbit__members_leave(f->m) == -ECHILD;
		_exit(ok ? 0 : 1);
	}
	st = orbit_test_wait(pid, 5000);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(orbit__members_is_alive(f->m, (uint32_t)row), 1);
}

/* Issue 5: PID reuse does not fool liveness: a row naming a live pid with a wrong start time. */
static void test_pid_reuse_not_fooled(void **state)
{
	struct fx *f = *state;
	struct orbit_member_row *rw = raw_row(f->m, 5);
	struct orbit_member_info info;
	uint64_t st = 0;
	pid_t live;

	live = fork(); /* a live process that is NOT a member */
	if (live == 0) {
		for (;;)
			pause();
	}
	assert_int_equal(orbit__proc_start_time(live, &st), 0);
	/* Forge: LIVE, a live pid, a start time of some earlier process with that pid */
	atomic_store(&rw->state, ORBIT_MEMBER_LIVE);
	atomic_store(&rw->generation, 7);
	rw->pid = (uint32_t)live;
	rw->start_time_ticks = st - 1;
	strcpy(rw->name, "ghost");
	assert_int_equal(orbit__members_is_alive(f->m, 5), 0); /* no lock: dead */
	assert_int_equal(orbit__members_is_alive_gen(f->m, 5, 7), 0);
	assert_int_equal(orbit__members_pidfd_open(f->m, 5, NULL), -ESRCH); /* start time differs */
	assert_int_equal(orbit__members_snapshot(f->m, 5, &info), 0);
	assert_false(info.alive);
	/* even the right start time does not make it alive: only the kernel lock does */
	rw->start_time_ticks = st;
	assert_int_equal(orbit__members_is_alive(f->m, 5), 0);
	assert_int_equal(orbit__members_count_live_others(f->m), 0);
	assert_int_equal(orbit__members_reclaim(f->m, 5), 1);
	assert_int_equal(orbit__members_snapshot(f->m, 5, &info), 0);
	assert_int_equal(info.state, ORBIT_MEMBER_FREE);
	kill(live, SIGKILL);
	waitpid(live, NULL, 0);
	assert_int_equal(orbit__proc_start_time(live, &st), -ESRCH);
}

static int count_cb(void *ctx, const struct orbit_member_info *info)
{
	(void)info;
	(*(int *)ctx)++;
	return 0;
}

/* Issue 5: random bytes in member rows never crash a reader; rows stay claimable. */
static void test_random_bytes_in_member_rows_never_crash(void **state)
{
	struct fx *f = *state;
	orbit_members_t *other;

	assert_int_equal(orbit__members_open(&other, f->fleet, 8, NULL), 0);
	assert_true(orbit__members_join(other, "keeper") >= 0);
	srand(1234);
	for (int round = 0; round < 200; round++) {
		struct orbit_member_info info;
		int n = 0, corrupt = 0;

		for (uint32_t r = 0; r < 8; r++) {
			uint8_t *b = (uint8_t *)raw_row(f->m, r);
			for (size_t i = 0; i < sizeof(struct orbit_member_row); i++)
				b[i] = (uint8_t)rand();
			if (round & 1) /* half the rounds: even seq so the bytes get validated */
				atomic_store(&((struct orbit_member_row *)b)->seq,
					     (uint32_t)rand() & ~1u);
		}
		for (uint32_t r = 0; r < 8; r++) {
			int rc = orbit__members_snapshot(f->m, r, &info);
			assert_true(rc == 0 || rc == -ORBIT_ECORRUPT || rc == -EAGAIN);
			corrupt += rc == -ORBIT_ECORRUPT;
			if (rc == 0)
				assert_non_null(memchr(info.name, 0, sizeof(info.name)));
			rc = orbit__members_pidfd_open(f->m, r, NULL);
			if (rc >= 0)
				close(rc);
		}
		assert_true(orbit__members_foreach(f->m, count_cb, &n) >= 0);
		assert_int_equal(orbit__members_count_live_others(f->m),
				 1); /* only "keeper" holds a lock */
		if (round == 1)
			assert_true(corrupt > 0); /* the validation actually rejects garbage */
	}
	/* every row whose lock is free is claimable whatever its bytes */
	assert_true(orbit__members_join(f->m, "after") >= 0);
	orbit__members_close(other);
}

/* Issue 5: /proc start time parse handles names with spaces and parentheses. */
static void test_proc_start_time(void **state)
{
	char comm[16] = { 0 };
	uint64_t a = 0, b = 0;

	(void)state;
	assert_int_equal(orbit__proc_start_time(getpid(), &a), 0);
	assert_true(a > 0);
	/* the same process under a name with spaces and parentheses: same start time */
	assert_int_equal(prctl(PR_GET_NAME, comm, 0, 0, 0), 0);
	assert_int_equal(prctl(PR_SET_NAME, "a) b (c) d", 0, 0, 0), 0);
	int rc = orbit__proc_start_time(getpid(), &b);
	assert_int_equal(prctl(PR_SET_NAME, comm, 0, 0, 0), 0);
	assert_int_equal(rc, 0);
	assert_int_equal(a, b);
	assert_int_equal(orbit__proc_start_time(0x7ffffff0, &a), -ESRCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_join_leave, setup, teardown),
		cmocka_unit_test_setup_teardown(test_directory_full_enospc_and_readonly_erofs,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_liveness_after_sigkill_proven_dead_at_once,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_forked_child_does_not_keep_dead_parent_alive,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_forked_handle_refused_ebadfd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pid_reuse_not_fooled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_bytes_in_member_rows_never_crash, setup,
						teardown),
		cmocka_unit_test(test_proc_start_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
