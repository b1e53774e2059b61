// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "outfile.h"

#define MAX_LINK_HOPS 8

/* dirname() into buf without touching path: "." for a bare name. */
static void dir_of(const char *path, char *buf, size_t n)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(buf, n, ".");
	else if (slash == path)
		snprintf(buf, n, "/");
	else
		snprintf(buf, n, "%.*s", (int)(slash - path), path);
}

static const char *base_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/*
 * A symlink planted by someone else (in /tmp, say) must not make a root
 * run write where it points; as fs.protected_symlinks would refuse it, but
 * checked here because that sysctl may be off (and a rename does not follow
 * links at all, so we resolve them ourselves).  Only links the real user
 * owns are followed.
 */
static int check_link_owner(const char *link, const struct stat *lst, char *err, size_t n)
{
	uid_t me = getuid();

	if (lst->st_uid == me)
		return 0;
	snprintf(err, n, "refusing to write %s: it is a symlink owned by uid %u, not by you (uid %u)",
		 link, (unsigned)lst->st_uid, (unsigned)me);
	return -EPERM;
}

/* The next path along a symlink: its target, relative to the link's directory. */
static int follow_link(const char *link, char *next, size_t n)
{
	char target[PATH_MAX], dir[PATH_MAX];
	ssize_t len = readlink(link, target, sizeof(target) - 1);

	if (len < 0)
		return -errno;
	target[len] = '\0';
	if (target[0] == '/') {
		snprintf(next, n, "%s", target);
		return 0;
	}
	dir_of(link, dir, sizeof(dir));
	if ((size_t)snprintf(next, n, "%s/%s", dir, target) >= n)
		return -ENAMETOOLONG;
	return 0;
}

/* Mode of a normally created file: 0666 less the umask. */
static mode_t new_file_mode(void)
{
	mode_t mask = umask(0);

	umask(mask);
	return 0666 & ~mask;
}

/*
 * A device or a pipe, written in place.  A FIFO that nobody reads would block
 * the open until a reader comes, before anything is traced and deaf to Ctrl-C:
 * it is opened without waiting, and refused when no process reads it yet.
 */
static int open_direct(struct outfile *o, const char *at, mode_t mode, char *err, size_t n)
{
	bool fifo = S_ISFIFO(mode);
	int fd = open(at, O_WRONLY | O_NOCTTY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0));

	if (fd < 0 && fifo && errno == ENXIO) {
		snprintf(err, n, "cannot write %s: it is a FIFO that no process reads (start its reader first)",
			 o->path);
		return -ENXIO;
	}
	if (fd < 0) {
		int ret = -errno;

		snprintf(err, n, "cannot write %s: %s", o->path, strerror(errno));
		return ret;
	}
	/* The report is then written as to any pipe: waiting for a slow reader. */
	if (fifo && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)) {
		int ret = -errno;

		close(fd);
		snprintf(err, n, "cannot write %s: %s", o->path, strerror(-ret));
		return ret;
	}
	o->stream = fdopen(fd, "w");
	if (!o->stream) {
		int ret = -errno;

		close(fd);
		snprintf(err, n, "cannot write %s: %s", o->path, strerror(-ret));
		return ret;
	}
	o->kind = OUTFILE_DIRECT;
	return 0;
}

static int open_temp(struct outfile *o, const struct stat *old, char *err, size_t n)
{
	char dir[PATH_MAX];
	int fd, ret;

	dir_of(o->target, dir, sizeof(dir));
	/* A hidden name beside the target, short enough for NAME_MAX. */
	if ((size_t)snprintf(o->tmp, sizeof(o->tmp), "%s/.%.200s.rbmemtrace-XXXXXX", dir,
			     base_of(o->target)) >= sizeof(o->tmp)) {
		snprintf(err, n, "cannot write %s: %s", o->path, strerror(ENAMETOOLONG));
		o->tmp[0] = '\0';
		return -ENAMETOOLONG;
	}
	fd = mkostemp(o->tmp, O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, n, "cannot write %s: %s", o->path, strerror(errno));
		o->tmp[0] = '\0';
		return ret;
	}
	/* mkstemp makes 0600; keep the old report's mode, or make it as open() would. */
	if (fchmod(fd, old ? old->st_mode & 07777 : new_file_mode()) ||
	    !(o->stream = fdopen(fd, "w"))) {
		ret = -errno;
		snprintf(err, n, "cannot write %s: %s", o->path, strerror(errno));
		close(fd);
		unlink(o->tmp);
		o->tmp[0] = '\0';
		return ret;
	}
	o->kind = OUTFILE_RENAME;
	return 0;
}

int outfile_open(struct outfile *o, const char *path, char *err, size_t n)
{
	char cur[PATH_MAX], next[PATH_MAX];
	struct stat lst, st;
	int hops, ret;

	memset(o, 0, sizeof(*o));
	if (!path || strcmp(path, "-") == 0) {
		o->kind = OUTFILE_STDOUT;
		o->stream = stdout;
		snprintf(o->path, sizeof(o->path), "standard output");
		return 0;
	}
	snprintf(o->path, sizeof(o->path), "%s", path);
	if (!*path || strlen(path) >= sizeof(cur)) {
		snprintf(err, n, "cannot write %s: %s", path, strerror(*path ? ENAMETOOLONG : ENOENT));
		return *path ? -ENAMETOOLONG : -ENOENT;
	}
	snprintf(cur, sizeof(cur), "%s", path);
	for (hops = 0;; hops++) {
		if (lstat(cur, &lst)) {
			if (errno != ENOENT) {
				ret = -errno;
				snprintf(err, n, "cannot write %s: %s", path, strerror(errno));
				return ret;
			}
			snprintf(o->target, sizeof(o->target), "%s", cur);
			return open_temp(o, NULL, err, n);
		}
		if (!S_ISLNK(lst.st_mode))
			break;
		ret = check_link_owner(cur, &lst, err, n);
		if (ret)
			return ret;
		if (hops >= MAX_LINK_HOPS) {
			snprintf(err, n, "cannot write %s: %s", path, strerror(ELOOP));
			return -ELOOP;
		}
		/* /dev/stdout, /dev/fd/N of a pipe: magic links whose text is no path. */
		if (stat(cur, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
			return open_direct(o, cur, st.st_mode, err, n);
		ret = follow_link(cur, next, sizeof(next));
		if (ret) {
			snprintf(err, n, "cannot write %s: %s", path, strerror(-ret));
			return ret;
		}
		snprintf(cur, sizeof(cur), "%s", next);
	}
	if (S_ISDIR(lst.st_mode)) {
		snprintf(err, n, "cannot write %s: %s", path, strerror(EISDIR));
		return -EISDIR;
	}
	/* A device or pipe is written in place: renaming over it would replace it. */
	if (!S_ISREG(lst.st_mode))
		return open_direct(o, cur, lst.st_mode, err, n);
	snprintf(o->target, sizeof(o->target), "%s", cur);
	return open_temp(o, &lst, err, n);
}

FILE *outfile_stream(struct outfile *o)
{
	return o->stream;
}

/* fflush and ferror: a write error anywhere since the open; -errno or 0. */
static int flush_checked(FILE *f)
{
	errno = 0;
	if (fflush(f) || ferror(f))
		return errno ? -errno : -EIO;
	return 0;
}

/* The directory entry of the rename reaches the disk too (best effort). */
static void sync_dir_of(const char *path)
{
	char dir[PATH_MAX];
	int fd;

	dir_of(path, dir, sizeof(dir));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

int outfile_commit(struct outfile *o, char *err, size_t n)
{
	int ret;

	if (!o->stream) {
		snprintf(err, n, "cannot write %s: already closed", o->path);
		return -EBADF;
	}
	if (o->kind == OUTFILE_STDOUT) {
		ret = flush_checked(stdout);
		if (ret)
			snprintf(err, n, "cannot write the report to standard output: %s",
				 strerror(-ret));
		o->stream = NULL;
		return ret;
	}
	ret = flush_checked(o->stream);
	/* fsync fails with EINVAL on pipes and most devices: only files need it. */
	if (!ret && o->kind == OUTFILE_RENAME && fsync(fileno(o->stream)))
		ret = -errno;
	if (fclose(o->stream) && !ret)
		ret = errno ? -errno : -EIO;
	o->stream = NULL;
	if (!ret && o->kind == OUTFILE_RENAME && rename(o->tmp, o->target))
		ret = -errno;
	if (o->kind == OUTFILE_RENAME) {
		if (ret)
			unlink(o->tmp);
		else
			sync_dir_of(o->target);
		o->tmp[0] = '\0';
	}
	if (ret)
		snprintf(err, n, "cannot write %s: %s", o->path, strerror(-ret));
	return ret;
}

void outfile_abort(struct outfile *o)
{
	if (!o->stream)
		return;
	if (o->kind != OUTFILE_STDOUT)
		fclose(o->stream);
	if (o->kind == OUTFILE_RENAME && o->tmp[0])
		unlink(o->tmp);
	o->tmp[0] = '\0';
	o->stream = NULL;
}
