/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The options several subcommands take, each declared once, in argp
 * children (struct argp_child) that fill a struct of their own: which
 * processes (-p, --all, --match), where the report goes (-o, --format),
 * how long (-d, --every), the cost to the target (--full, --max-overhead),
 * the tracer's limits (--max-objects, --depth, --max-stacks), the text
 * report (--top, --paths, --tree, --prune) and the common ones (-v, -h).
 *
 * A subcommand lists the groups it takes among its argp's children, each
 * with the struct it fills as the child's input (set at ARGP_KEY_INIT).
 * A group's options are ordered so that those a subcommand takes are a
 * tail of its table: the OPTS_* of each group name where the tail starts.
 * The help of an option may be worded for the subcommand: the struct's
 * docs (NULL: the group's own).  A value is checked as the option is
 * parsed; what depends on several groups (a default, a conflict) is the
 * subcommand's, at ARGP_KEY_END.
 */
#ifndef RBM_OPTION_GROUPS_H
#define RBM_OPTION_GROUPS_H
#include <argp.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>
#include "writers.h"

/*
 * The keys of the groups' long options (the short ones are their letters),
 * apart from the subcommands' own (0x100 on): an option_doc names them.
 */
enum {
	GROUP_OPT_ALL = 0x200,
	GROUP_OPT_MATCH,
	GROUP_OPT_FORMAT,
	GROUP_OPT_EVERY,
	GROUP_OPT_FULL,
	GROUP_OPT_MAX_OVERHEAD,
	GROUP_OPT_MAX_STACKS,
	GROUP_OPT_MAX_OBJECTS,
	GROUP_OPT_DEPTH,
	GROUP_OPT_TREE,
	GROUP_OPT_PRUNE,
	GROUP_OPT_PATHS,
	GROUP_OPT_TOP,
};

/* An option's help worded for one subcommand; the list ends with key 0. */
struct option_doc {
	int key;
	const char *doc;
};

/* A --format value and what the subcommand calls it; the list ends with a NULL name. */
struct format_name {
	const char *name;
	int value;
};

#define TARGET_MAX_PIDS 256

/* -p PID (repeatable up to max_pids; with 1 the last wins), --all, --match REGEX */
struct target_opts {
	const struct option_doc *docs;
	size_t max_pids;
	const char *too_many; /* the error past max_pids, a format taking max_pids as %d */
	pid_t pids[TARGET_MAX_PIDS];
	size_t npids;
	bool all;
	const char *match;
};

/* -o FILE, --format NAME among formats (expected: the error's list of them) */
struct output_opts {
	const struct option_doc *docs;
	const struct format_name *formats;
	const char *expected;
	int format; /* the value of the name given; 0 (the first's) if none */
	const char *output;
};

/* -d SECONDS, --every SECONDS */
struct time_opts {
	const struct option_doc *docs;
	double duration; /* 0: until stopped */
	double every;
};

/* --full, --max-overhead PERCENT */
struct budget_opts {
	const struct option_doc *docs;
	const char *overhead_range; /* the error's words for the range; NULL: the usual */
	bool full;
	double max_overhead;
};

/* --max-objects N, --depth N, --max-stacks N */
struct limit_opts {
	const struct option_doc *docs;
	unsigned long depth_min;
	unsigned long max_objects; /* 0: not given, by the number of processes */
	unsigned long depth;
	unsigned long max_stacks;
};

/* --top N, --paths N, --tree[=root|callee], --prune N: the text report's options */
struct report_opts {
	const struct option_doc *docs;
	struct text_options text;
};

/* -v (more with each), and -h, hidden, for the full help */
struct common_opts {
	const struct option_doc *docs;
};

/* Where each group's tail starts: the subcommand takes these options and those after. */
enum { OPTS_TARGET_ALL = 0, OPTS_TARGET_MATCH = 1, OPTS_TARGET_PID = 2 };
enum { OPTS_OUTPUT_FILE = 0, OPTS_OUTPUT_FORMAT = 1 };
enum { OPTS_TIME_EVERY = 0, OPTS_TIME_DURATION = 1 };
enum { OPTS_BUDGET_FULL = 0, OPTS_BUDGET_OVERHEAD = 1 };
enum { OPTS_LIMIT_STACKS = 0, OPTS_LIMIT_OBJECTS = 1 };
enum { OPTS_REPORT_TREE = 0, OPTS_REPORT_PATHS = 2, OPTS_REPORT_TOP = 3 };
enum { OPTS_COMMON_VERBOSE = 0, OPTS_COMMON_HELP = 1 };

/* The groups' argps, by their tail: target_argp[OPTS_TARGET_MATCH] is -p and --match. */
extern const struct argp target_argp[3];
extern const struct argp output_argp[2];
extern const struct argp time_argp[2];
extern const struct argp budget_argp[2];
extern const struct argp limit_argp[2];
extern const struct argp report_argp[4];
extern const struct argp common_argp[2];

/* The --format lists the subcommands share (values MODEL_* of cli.h). */
extern const struct format_name formats_text_json[];	/* census, top */
extern const struct format_name formats_model[]; /* merge: text, json, pprof, folded, speedscope, html */
extern const struct format_name formats_model_no_folded[]; /* fleet: no folded */

/*
 * At ARGP_KEY_INIT: each child's input, the struct its group fills, in the
 * order of children[] (a NULL-ended array of struct argp_child); one per
 * child, or it does not compile.
 */
#define SET_CHILD_INPUTS(state, children, ...)                                                    \
	do {                                                                                      \
		void *inputs_[] = {__VA_ARGS__};                                                  \
		_Static_assert(sizeof(inputs_) / sizeof(inputs_[0]) ==                            \
				   sizeof(children) / sizeof(children[0]) - 1,                    \
			       "an input per child");                                             \
		memcpy((state)->child_inputs, inputs_, sizeof(inputs_));                          \
	} while (0)

/*
 * The live-object map's size when --max-objects was not given (by how many
 * processes, and --full), then checked against the memory there is: dies
 * with a one-line error if it would not fit.
 */
void limit_opts_finish(struct limit_opts *l, bool several, bool full);

#endif
