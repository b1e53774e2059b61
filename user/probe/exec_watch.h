/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Processes picked up as they start, from the kernel: the exec tracepoint
 * (bpf/rbmemtrace.bpf.c, on_exec) judges each new program by its file's
 * inode.  A file judged Ruby makes its process a candidate, which stops
 * itself at ruby_options' return (a system-wide uretprobe on each libruby
 * the watch knows), where launch mode holds its child; a file judged not
 * Ruby costs its execs one hash lookup.  Files are judged here, once each:
 * the first process of a Ruby never seen may start untraced.
 *
 * Launch mode uses the same tracepoint to follow its command through
 * wrappers (env, a binstub, bundle): each exec of the command stops it
 * before its first instruction.
 *
 * Every stop asked of the BPF side is recorded in its `held` map, and a
 * watchdog process continues every process still there when the tracer
 * dies, however it dies: no stop outlives the tracer.
 */
#ifndef RBM_EXEC_WATCH_H
#define RBM_EXEC_WATCH_H
#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>
#include "rbmemtrace.h"

struct rbmemtrace_bpf;

/*
 * Told to the caller of exec_watch_wait: EXEC_RUBY, EXEC_HELD, EXEC_UNHELD,
 * EXEC_FOLLOWED.  Returns true when it attached (took its turn): the next
 * events wait for the caller's next turn; a process only let go does not.
 */
typedef bool (*exec_watch_fn)(void *ctx, const struct exec_event *ev);

/*
 * Starts watching: the tracepoint, its ring buffer, the watchdog.  all:
 * every exec is judged (--all, --match); else only the followed commands'.
 * 0 or -errno.
 */
int exec_watch_start(struct rbmemtrace_bpf *skel, bool all);
void exec_watch_stop(void);
/* No process is held from now on; one held and not yet told is let go.  The watchdog stays. */
void exec_watch_end_holds(void);
/*
 * A Ruby running in pid, whose libruby (or static ruby) is image (a path
 * reachable from here): its executable is judged Ruby, and its image gets
 * the start probe.  0 or -errno.
 */
int exec_watch_learn(pid_t pid, const char *image);
/* The same for an executable file before any process runs it (the ruby on PATH). */
int exec_watch_learn_file(const char *exe, const char *image);
/* Waits up to seconds for events, then hands each to fn.  0 or -errno. */
int exec_watch_wait(double seconds, exec_watch_fn fn, void *ctx);
/* --match: whether a candidate is wanted; one that is not is never stopped. */
void exec_watch_decide(pid_t pid, bool wanted);
/*
 * Whether the watch has pid in hand: a candidate not yet at ruby_options,
 * or held there and not yet told.  A rescan leaves it to the watch.
 */
bool exec_watch_pending(pid_t pid);
/* Seconds since the BPF side told ev (for EXEC_HELD: how long its process has been stopped). */
double exec_event_age(const struct exec_event *ev);
/* Launch mode: every exec of pid stops it (on), or none does. */
int exec_watch_follow(pid_t pid, bool on);

/* Whether pid's stop is one the BPF side made (and not yet let go). */
bool held_by_us(struct rbmemtrace_bpf *skel, pid_t pid);
/* Lets a process the BPF side stopped go on: SIGCONT, and out of the held map. */
void held_release(struct rbmemtrace_bpf *skel, pid_t pid);

/* The kernel's encoding of a device number (s_dev) from stat's st_dev. */
__u32 exec_watch_kernel_dev(dev_t dev);

#endif
