/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What /proc says about a process that a live view shows next to its heap:
 * command, namespace pid, uptime and resident memory; the CPU time it and
 * the machine used (what a sampled trace's own CPU takes from it); and
 * finding the Ruby processes whose command line matches a pattern.  Reads
 * only.
 */
#ifndef RBM_PROC_INFO_H
#define RBM_PROC_INFO_H
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The command name (/proc/PID/comm, untrusted); "" if unreadable. */
void proc_command(pid_t pid, char *buf, size_t n);
/* The command line with NULs shown as spaces (untrusted); "" if unreadable. */
void proc_cmdline(pid_t pid, char *buf, size_t n);
/* Its pid in the innermost pid namespace (NSpid); 0 when it is the same or unknown. */
pid_t proc_ns_pid(pid_t pid);
/*
 * Whether it is stopped (state T, or t: stopped by a tracer such as gdb), and
 * the pid of the tracer attached to it (TracerPid; 0: none), from
 * /proc/PID/status.  0, or -1 when it cannot be read.
 */
int proc_stopped(pid_t pid, bool *stopped, pid_t *tracer);
/* Seconds since it started; -1 if unknown. */
double proc_uptime(pid_t pid);
/* Resident set size in bytes; 0 if unknown. */
uint64_t proc_rss(pid_t pid);
/* CPU seconds it has used, every thread's, user and system; -1 if unknown. */
double proc_cpu_seconds(pid_t pid);
/*
 * The machine's CPU seconds since boot, every CPU's, from /proc/stat: idle
 * (idle and iowait) and busy (the rest but steal, which no process here
 * had).  0, or -errno.
 */
int proc_machine_cpu(double *idle, double *busy);

/*
 * The processes other than self whose command line matches re (NULL: any)
 * and that accept (NULL: any) takes, lowest pid first.  Returns how many
 * were written into pids (at most max).
 */
size_t proc_scan(const regex_t *re, pid_t self, bool (*accept)(pid_t pid, void *ctx), void *ctx,
		 pid_t *pids, size_t max);

#endif
