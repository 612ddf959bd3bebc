/* SPDX-License-Identifier: MIT */
/* agent/demo_bank.h: the bank scenario of orbit-demo (agent/demo_bank.c). */
#ifndef ORBIT_AGENT_DEMO_BANK_H
#define ORBIT_AGENT_DEMO_BANK_H

#include <signal.h>
#include <stddef.h>

/* Run the bank scenario with orbit-demo's arguments (--scenario removed). Returns the exit status. */
int demo_bank_main(int argc, char **argv);

/*
 * Parse --@opt's argument @arg as an integer in @lo..@hi into *@out. On a
 * bad one it says so on stderr, naming the option, the value and the
 * allowed range ("orbit-demo: --workers 100: allowed 1..32"), and
 * returns -1 (*@out unchanged); else 0. Shared by both scenarios.
 */
int demo_opt_int(const char *opt, const char *arg, long lo, long hi, int *out);

/*
 * The supervisor's stop signals, both scenarios: demo_stop_signals()
 * makes SIGINT and SIGTERM set demo_interrupted (the run then winds down
 * as at the end of --seconds: the report, the removal of its segments and
 * files); demo_child_signals(), in each forked child, ignores SIGINT (a
 * Ctrl-C reaches the whole process group: the supervisor stops the
 * children), takes SIGTERM's default back, and asks for SIGKILL when the
 * supervisor (demo_stop_signals()'s caller) dies: no child outlives a
 * killed run. Returns -1 when the supervisor is already gone (the child
 * exits), else 0.
 */
extern volatile sig_atomic_t demo_interrupted;
void demo_stop_signals(void);
int demo_child_signals(void);
/* After the run's loop: "orbit-demo: SIGTERM: winding down" when a signal ended it. */
void demo_say_interrupted(void);

/* One integer option of a scenario: its getopt letter, name, range and destination. */
struct demo_int_opt {
	int letter;
	const char *name;
	long lo, hi;
	int *out;
};

/*
 * If getopt's @letter is one of the @n integer options in @tab, parse @arg
 * into it with demo_opt_int() and return its answer (0 or -1); return 1
 * when @letter is not in the table (the caller's switch handles it).
 */
int demo_opt_ints(const struct demo_int_opt *tab, size_t n, int letter, const char *arg);

/*
 * Check --fleet's argument and copy it into @out (@len bytes): a fleet
 * name is 1 to 40 of A-Z a-z 0-9 _ -. A bad one is said on stderr with
 * the rule; returns -1 then, else 0.
 */
int demo_opt_fleet(const char *arg, char *out, size_t len);

#endif /* ORBIT_AGENT_DEMO_BANK_H */
