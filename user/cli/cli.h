/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The subcommands, one file each, and what they share (their options: option_groups.h). */
#ifndef RBM_CLI_H
#define RBM_CLI_H
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* Each takes its own argv: argv[0] is "rbmemtrace SUBCOMMAND". Returns the exit status. */
int cmd_trace(int argc, char **argv);
int cmd_census(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_fleet(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_why(int argc, char **argv);

/* A whole argument as a number from min to max; dies with a one-line error otherwise. */
unsigned long cli_number(const char *arg, const char *what, unsigned long min, unsigned long max);
/* A whole argument as a real number; 0 or -EINVAL. */
int cli_real(const char *arg, double *value);

/*
 * Entries of a process's live-object map when --max-objects is not given:
 * preallocated in the kernel at ~104 bytes each, so a run over several
 * processes (or top's drill-down over several) takes a smaller map each.
 */
unsigned long cli_live_map_size(bool several, bool full);
/* Dies with a one-line error if a map of n entries would not fit in the memory there is. */
void cli_check_max_objects(unsigned long n);
/* Dies unless we may use BPF and uprobes (root, or CAP_SYS_ADMIN): before anything is open. */
void cli_check_bpf_privileges(void);
/* The same, said without dying: 0, or 1 (the exit status) with what is missing said. */
int cli_need_bpf_privileges(void);
bool cli_have_bpf_privileges(void);
/*
 * In a container without the host's pid namespace (bpf: the probes need host pids; else only
 * if pid is not there) or, as root, without the capabilities (CAP_SYS_PTRACE; bpf:
 * CAP_SYS_ADMIN too): 1 (the exit status) with the one line that names what is missing; or 0.
 */
int cli_need_host_view(bool bpf, pid_t pid);

#include <sys/types.h>
struct outfile;
/*
 * Opens where the report goes (NULL: standard output) before any work, so a
 * bad path fails at once (it dies then: nothing else is open yet); the file
 * is replaced only when complete.  On an error, outfile_abort removes the
 * unfinished one.
 */
void cli_output_open(struct outfile *o, const char *path);
/* Commits the report: 0, or 1 (the exit status) with its one-line error said. */
int cli_output_commit(struct outfile *o);
/*
 * Until the report is written, SIGINT and SIGTERM end rbmemtrace at once
 * (a census or a walk has no point to stop at): o's unfinished temporary
 * file is removed, line (a string that lives on) is printed, and the
 * signal does what it does by default.  For a command with nothing to let
 * go but its output file.
 */
void cli_signal_drops_output(struct outfile *o, const char *line);
/*
 * Merge and fleet: a model written as text, json, pprof, folded stacks or speedscope (the
 * summary's), or an HTML page (the summary, and the series of a continuous trace's periods).
 */
enum { MODEL_TEXT, MODEL_JSON, MODEL_PPROF, MODEL_FOLDED, MODEL_SPEEDSCOPE, MODEL_HTML };
struct model_view;
struct text_options;
/* Writes v to path (stdout if NULL) in format; 0, or -errno with a warning printed. */
/* The same into an open stream (the caller opened and commits it). */
int cli_write_model_stream(FILE *out, const struct model_view *v, int format,
			   const struct text_options *topts);
int cli_write_model(const struct model_view *v, int format, const char *path,
		    const struct text_options *topts);

#endif
