/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The report file (-o).  A regular file is written as a temporary file in
 * the same directory and renamed over the target only once the report is
 * complete, so a failed or interrupted run never leaves a truncated report.
 */
#ifndef RBM_OUTFILE_H
#define RBM_OUTFILE_H
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

enum outfile_kind {
	OUTFILE_STDOUT,	 /* "-" or no path */
	OUTFILE_RENAME,	 /* a regular file (or none yet): temp file + rename */
	OUTFILE_DIRECT,	 /* an existing special file (/dev/null, a pipe): written in place */
};

struct outfile {
	enum outfile_kind kind;
	FILE *stream;
	char path[PATH_MAX];	  /* as given, for messages */
	char target[PATH_MAX];	  /* the file renamed over (symlinks resolved) */
	char tmp[PATH_MAX + 32];  /* the temporary file, while open */
};

/*
 * Opens the output: path NULL or "-" is standard output.  Creates the
 * temporary file now, so an unwritable directory fails before tracing.
 * Refuses a symlink that the real user does not own.  0, or -errno with a
 * one-line reason in err.
 */
int outfile_open(struct outfile *o, const char *path, char *err, size_t n);

/* Where the report is written. */
FILE *outfile_stream(struct outfile *o);

/*
 * Flushes and checks every write (also on standard output), syncs, and
 * renames the temporary file over the target.  0, or -errno with a
 * one-line reason in err; on error the old file is left as it was.
 */
int outfile_commit(struct outfile *o, char *err, size_t n);

/* Drops an unfinished report: the temporary file is removed. */
void outfile_abort(struct outfile *o);

#endif
