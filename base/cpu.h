/* SPDX-License-Identifier: MIT */
/*
 * base/cpu.h: internal, header-only. CPU hints that both worlds use in
 * their spin loops (shm/ lock lookups, lib/ queue and lane polls). base/
 * holds only what neither knows: no SHM, no threads, no allocation, no
 * system call; shm/, lib/ and agent/ may all include it.
 */
#ifndef ORBIT_BASE_CPU_H
#define ORBIT_BASE_CPU_H

/* One pause in a spin-wait: lets the sibling hyperthread run, saves power. */
static inline void orbit__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

#endif /* ORBIT_BASE_CPU_H */
