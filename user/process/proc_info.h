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
/*
 * The parsing of the readers above, on a file's text already read (what the
 * target controls: its command may hold any bytes but NUL): NSpid's last
 * number unless it is pid (status is cut by strtok_r); State and TracerPid;
 * field n (1-based, as proc(5) numbers them) of a stat line, counted from
 * the last ')', which ends field 2 (the command may hold spaces and
 * parentheses), or NULL.
 */
pid_t proc_status_ns_pid(char *status, pid_t pid);
void proc_status_state(const char *status, bool *stopped, pid_t *tracer);
const char *proc_stat_field(const char *stat, int n);
/* Seconds since it started; -1 if unknown. */
double proc_uptime(pid_t pid);
/* Resident set size in bytes; 0 if unknown. */
uint64_t proc_rss(pid_t pid);
/* CPU seconds it has used, every thread's, user and system; -1 if unknown. */
double proc_cpu_seconds(pid_t pid);
/*
 * The machine's CPU seconds since boot, every CPU's, from /proc/stat: idle
 * (idle and iowait) and busy (the rest but steal, which no process here
 * had), and of busy what niced processes ran (niced).  0, or -errno.
 */
int proc_machine_cpu(double *idle, double *busy, double *niced);
/* Its nice value (0 if unknown). */
int proc_nice(pid_t pid);

/*
 * The processes other than self whose command line matches re (NULL: any)
 * and that accept (NULL: any) takes, lowest pid first.  Returns how many
 * were written into pids (at most max).
 */
size_t proc_scan(const regex_t *re, pid_t self, bool (*accept)(pid_t pid, void *ctx), void *ctx,
		 pid_t *pids, size_t max);

#endif
