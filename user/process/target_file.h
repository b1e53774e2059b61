/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Opening files that the target names (its libruby, its executable). */
#ifndef RBM_TARGET_FILE_H
#define RBM_TARGET_FILE_H

/*
 * Opens path for reading without ever blocking: a hostile target can put a
 * FIFO or a device where its libruby was.  The file is looked up with
 * O_PATH (no open side effects, no wait for a FIFO writer), checked to be a
 * regular file, then reopened O_RDONLY|O_NONBLOCK|O_CLOEXEC.  Under
 * /proc/PID/root/ the rest of the path is resolved inside that root
 * (openat2 RESOLVE_IN_ROOT: the container's absolute symlinks stay in the
 * container) and its last component must not be a symlink.
 * Returns an fd, or -errno: -EINVAL if it is not a regular file.
 */
int target_file_open(const char *path);

#endif
