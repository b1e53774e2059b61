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

struct ruby_target;
struct class_namer;
/*
 * census and top: a target opened for its memory made ready for a heap
 * census (its layout, objspace and class names).  0, or -errno with a
 * one-line error in err (namer then holds nothing).
 */
int cli_heap_open(struct ruby_target *t, struct class_namer *namer, char *err, size_t errlen);
/* census and why: pid's Ruby found for reading its memory; dies with the one-line error. */
void cli_memory_target_open(struct ruby_target *t, pid_t pid);
/*
 * Entries of a process's live-object map when --max-objects is not given:
 * preallocated in the kernel at ~104 bytes each, so a run over several
 * processes (or top's drill-down over several) takes a smaller map each.
 */
unsigned long cli_live_map_size(bool several, bool full);
/* Dies with a one-line error if a map of n entries would not fit in the memory there is. */
void cli_check_max_objects(unsigned long n);
/* Dies unless we may use BPF and uprobes (root, or CAP_SYS_ADMIN). */
void cli_check_bpf_privileges(void);
bool cli_have_bpf_privileges(void);

#include <sys/types.h>
struct outfile;
/* -p of a thread means its process: says so with -v and returns the process. */
pid_t cli_process_of(pid_t pid);
/*
 * Opens where the report goes (NULL: standard output) before any work, so a
 * bad path fails at once; the file is replaced only when complete.  An
 * error exit removes the unfinished one.
 */
void cli_output_open(struct outfile *o, const char *path);
/* Commits the report; dies with a one-line error if it could not be written. */
void cli_output_commit(struct outfile *o);
/* Merge and fleet: a model written as text, json, pprof or folded stacks (the summary's). */
enum { MODEL_TEXT, MODEL_JSON, MODEL_PPROF, MODEL_FOLDED };
struct model_view;
struct text_options;
/* Writes v to path (stdout if NULL) in format; 0, or -errno with a warning printed. */
/* The same into an open stream (the caller opened and commits it). */
int cli_write_model_stream(FILE *out, const struct model_view *v, int format,
			   const struct text_options *topts);
int cli_write_model(const struct model_view *v, int format, const char *path,
		    const struct text_options *topts);

#endif
