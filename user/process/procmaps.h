/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Finding Ruby in a process: /proc/PID/maps and the mapped files. */
#ifndef RBM_PROCMAPS_H
#define RBM_PROCMAPS_H
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct map_entry {
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	unsigned int dev_major, dev_minor; /* of the mapped file; 0:0 for none */
	uint64_t inode;			   /* of the mapped file; 0 for none */
	char perms[5];
	char path[PATH_MAX];
};

/* Parses one line of /proc/PID/maps; returns 0 or -EINVAL. */
int procmaps_parse_line(const char *line, struct map_entry *e);

/*
 * True for file names of a shared libruby: libruby.so[.X...] or
 * libruby-VERSION.so[.X...] (not librubyx.so).  Only the fast path:
 * procmaps_find_ruby also knows a libruby by its ruby_version symbol.
 */
bool is_libruby_name(const char *path);

struct ruby_image {
	char path[PATH_MAX];      /* as the target sees it */
	char host_path[PATH_MAX + 64]; /* reachable from here: /proc/PID/root/... */
	uint64_t load_bias;       /* runtime address = load_bias + ELF st_value */
	bool shared;              /* libruby.so rather than a static ruby binary */
};

/*
 * Finds the libruby (or statically linked ruby executable) mapped into pid:
 * by file name, else the mapped object that defines ruby_version.  Returns
 * 0, or a negative errno with a one-line reason in err ("PID N exited" and
 * -ESRCH if it died meanwhile; -EINVAL if its path names no regular file).
 */
int procmaps_find_ruby(pid_t pid, struct ruby_image *img, char *err, size_t errlen);

/*
 * True if pid has exited: no such process, or a zombie not yet reaped.
 * Whoever fails to read the target should ask, and then say so.
 */
bool target_gone(pid_t pid);

/*
 * For an error path: if pid is gone, replaces err with "PID N exited" and
 * returns -ESRCH; otherwise returns ret and leaves err as it was.
 */
int target_gone_error(pid_t pid, int ret, char *err, size_t errlen);

/* The thread group (process) of a thread ID, from /proc/TID/status; -errno (-ESRCH). */
pid_t procmaps_thread_group(pid_t tid);

/* Converts a runtime address inside the image's mappings into a file offset. */
int procmaps_file_offset(pid_t pid, const char *path, uint64_t addr, uint64_t *file_offset);

#endif
