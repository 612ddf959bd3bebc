/* SPDX-License-Identifier: MIT */
/* agent/demo_bank.h: the bank scenario of orbit-demo (agent/demo_bank.c). */
#ifndef ORBIT_AGENT_DEMO_BANK_H
#define ORBIT_AGENT_DEMO_BANK_H

/* Run the bank scenario with orbit-demo's arguments (--scenario removed). Returns the exit status. */
int demo_bank_main(int argc, char **argv);

#endif /* ORBIT_AGENT_DEMO_BANK_H */
