/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * -o PATTERN of a continuous trace (trace --every): one file per process
 * and period, named by expanding %{pid}, %{time} (ISO 8601, UTC) and
 * %{host} (%% is a %), and with --keep N only the newest N of each
 * process's files kept (the oldest this run wrote are removed).
 */
#ifndef RBM_OUTPATTERN_H
#define RBM_OUTPATTERN_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

enum {
	OUTPATTERN_PID = 1,
	OUTPATTERN_TIME = 2,
	OUTPATTERN_HOST = 4,
};

/*
 * Checks pattern: 0 and the OUTPATTERN_* it uses in *uses, or -EINVAL
 * with a one-line reason in err.
 */
int outpattern_check(const char *pattern, unsigned *uses, char *err, size_t n);

/*
 * The file name for pid at time t (Unix seconds) on host (any '/' in it
 * becomes '_').  0, -EINVAL (a bad pattern) or -ENAMETOOLONG.
 */
int outpattern_expand(const char *pattern, pid_t pid, time_t t, const char *host, char *out,
		      size_t n);

/* The newest files of one process, at most keep (0: all, nothing is kept track of). */
struct keep_ring {
	size_t keep;
	char **paths; /* oldest first */
	size_t n;
};

/*
 * Records path as the newest file; returns the path of the one that must
 * go to keep the newest keep (the caller removes and frees it), or NULL.
 * The same name as the newest (a period in the same second) is one file.
 */
char *keep_ring_push(struct keep_ring *k, const char *path);
void keep_ring_free(struct keep_ring *k);

#endif
