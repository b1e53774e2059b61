// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "elfinfo.h"
#include "process_caps.h"
#include "procmaps.h"
#include "target_file.h"

int procmaps_parse_line(const char *line, struct map_entry *e)
{
	unsigned long long start, end, offset, inode;
	unsigned int major, minor;
	int path_at = -1;
	char perms[5];

	if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &start, &end, perms, &offset, &major,
		   &minor, &inode, &path_at) < 7 ||
	    path_at < 0)
		return -EINVAL;
	e->start = start;
	e->end = end;
	e->offset = offset;
	e->dev_major = major;
	e->dev_minor = minor;
	e->inode = inode;
	memcpy(e->perms, perms, sizeof(e->perms));
	snprintf(e->path, sizeof(e->path), "%s", line + path_at);
	e->path[strcspn(e->path, "\n")] = '\0';
	return 0;
}

bool is_libruby_name(const char *path)
{
	const char *base = strrchr(path, '/'), *p;

	base = base ? base + 1 : path;
	if (strncmp(base, "libruby", 7))
		return false;
	/* libruby.so[.X...] or libruby-VERSION.so[.X...]: not librubyx.so, libruby-static.a */
	p = base + 7;
	if (*p == '-' && !(p = strstr(p, ".so")))
		return false;
	if (strncmp(p, ".so", 3))
		return false;
	return p[3] == '\0' || p[3] == '.' || strcmp(p + 3, " (deleted)") == 0;
}

static FILE *open_maps(pid_t pid)
{
	char maps[64];

	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	return fopen(maps, "r");
}

bool target_gone(pid_t pid)
{
	char path[64], buf[512], *paren;
	ssize_t n;
	int fd;

	if (kill(pid, 0) && errno == ESRCH)
		return true;
	/* An exited child not yet reaped still answers kill(): it is a zombie (Z, X). */
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	/* "PID (comm) S ...": comm may hold ')' itself, so take the last one. */
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

int target_gone_error(pid_t pid, int ret, char *err, size_t errlen)
{
	if (!target_gone(pid))
		return ret;
	snprintf(err, errlen, "PID %d exited", pid);
	return -ESRCH;
}

pid_t procmaps_thread_group(pid_t tid)
{
	char path[64], line[256];
	pid_t tgid = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		int v;

		if (sscanf(line, "Tgid: %d", &v) == 1) {
			tgid = v > 0 ? v : -EINVAL;
			break;
		}
	}
	fclose(f);
	return tgid;
}

/* Whether the ELF at the target's path defines ruby_version (any file name). */
static bool defines_ruby_version(pid_t pid, const char *path)
{
	char host[PATH_MAX + 64];
	uint64_t value;

	snprintf(host, sizeof(host), "/proc/%d/root%s", pid, path);
	return elf_symbol_value(host, "ruby_version", &value, NULL) == 0;
}

#define MAX_SCANNED PROC_MAX_SCANNED_FILES

/*
 * The slow path: a libruby under another name (copied and LD_PRELOADed, or
 * renamed) is known by its ruby_version symbol.  Scans each mapped file once,
 * the executable last: a ruby linked against libruby may carry a copy of it.
 */
static bool find_by_symbol(pid_t pid, const char *exe, struct ruby_image *img)
{
	char line[PATH_MAX + 128], last[PATH_MAX] = "";
	struct map_entry e;
	int scanned = 0;
	bool found = false;
	FILE *f;

	f = open_maps(pid);
	if (!f)
		return false;
	while (!found && scanned < MAX_SCANNED && fgets(line, sizeof(line), f)) {
		if (procmaps_parse_line(line, &e) || e.path[0] != '/' || e.offset != 0 ||
		    strcmp(e.path, exe) == 0 || strcmp(e.path, last) == 0 ||
		    strstr(e.path, " (deleted)"))
			continue;
		snprintf(last, sizeof(last), "%s", e.path);
		scanned++;
		if (defines_ruby_version(pid, e.path)) {
			snprintf(img->path, sizeof(img->path), "%s", e.path);
			img->shared = true;
			found = true;
		}
	}
	fclose(f);
	if (!found && exe[0] == '/' && defines_ruby_version(pid, exe)) {
		snprintf(img->path, sizeof(img->path), "%s", exe);
		img->shared = false;
		found = true;
	}
	return found;
}

/*
 * The mapped file itself, /proc/PID/map_files/START-END, for when the path
 * maps names does not exist under /proc/PID/root: a process chrooted from a
 * namespace of its own (unshare --root) has its files named by the paths it
 * was started with, outside its root.  Needs CAP_SYS_ADMIN, as root has.
 */
/* The mapping of path's file offset 0 in pid, into *out. */
static int first_mapping(pid_t pid, const char *path, struct map_entry *out)
{
	char line[PATH_MAX + 128];
	int ret = -ENOENT;
	FILE *f = open_maps(pid);

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (procmaps_parse_line(line, out) || strcmp(out->path, path) || out->offset != 0)
			continue;
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

static void map_files_path(pid_t pid, const struct map_entry *e, char *out, size_t n)
{
	snprintf(out, n, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, e->start, e->end);
}

/* The file open at fd is the one e maps: same device and inode. */
static bool is_mapped_file(int fd, const struct map_entry *e)
{
	struct stat st;

	return fstat(fd, &st) == 0 && (uint64_t) st.st_ino == e->inode &&
	       major(st.st_dev) == e->dev_major && minor(st.st_dev) == e->dev_minor;
}

/* The fast path: a shared libruby by its usual name in the maps f lists. */
static bool find_libruby(FILE *f, struct ruby_image *img)
{
	char line[PATH_MAX + 128];
	struct map_entry e;

	while (fgets(line, sizeof(line), f)) {
		if (procmaps_parse_line(line, &e) || e.path[0] != '/' || !is_libruby_name(e.path))
			continue;
		snprintf(img->path, sizeof(img->path), "%s", e.path);
		img->shared = true;
		return true;
	}
	return false;
}

/*
 * img->host_path, the image as rbmemtrace reads it: through the target's
 * root, or its map_files entry when the path no longer names it there.
 */
static int reach_image(pid_t pid, struct ruby_image *img, char *err, size_t errlen)
{
	struct map_entry mapped;
	bool have_mapping = first_mapping(pid, img->path, &mapped) == 0;
	int fd;

	snprintf(img->host_path, sizeof(img->host_path), "/proc/%d/root%s", pid, img->path);
	/*
	 * What the path names now, in the target's mount namespace, is the
	 * target's choice: another file (a crafted one bound over it, a FIFO,
	 * a symlink loop) is never read, nor probed (its inode would get the
	 * breakpoints).  The mapped file itself is read through map_files then.
	 */
	fd = target_file_open(img->host_path);
	if (have_mapping && fd != -EACCES && fd != -EPERM && (fd < 0 || !is_mapped_file(fd, &mapped))) {
		if (fd >= 0)
			close(fd);
		map_files_path(pid, &mapped, img->host_path, sizeof(img->host_path));
		fd = target_file_open(img->host_path);
		if (fd == -EACCES || fd == -EPERM) {
			snprintf(err, errlen,
				 "PID %d maps %s, which is another file or none at that path in its "
				 "mount namespace now, and reading the mapped one takes "
				 "CAP_SYS_ADMIN: not reading it",
				 pid, img->path);
			return target_gone_error(pid, -EACCES, err, errlen);
		}
	}
	if (fd == -EINVAL) {
		snprintf(err, errlen,
			 "PID %d maps %s, which is not a regular file in its mount "
			 "namespace now (a FIFO or device in its place?): not reading it",
			 pid, img->path);
		return -EINVAL;
	}
	if (fd == -EACCES || fd == -EPERM) {
		/* /proc/PID/root takes ptrace rights: another user's process needs CAP_SYS_PTRACE.
		 */
		snprintf(err, errlen,
			 "not enough privileges to read the files of PID %d through "
			 "/proc/%d/root (another user's process needs CAP_SYS_PTRACE)",
			 pid, pid);
		return target_gone_error(pid, -EACCES, err, errlen);
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

/* img->load_bias: the mapping of file offset 0 holds the first PT_LOAD segment. */
static int find_load_bias(pid_t pid, struct ruby_image *img, char *err, size_t errlen)
{
	struct map_entry e;
	uint64_t first_vaddr;
	int ret;

	if (elf_first_load_vaddr(img->host_path, &first_vaddr)) {
		snprintf(err, errlen, "cannot read ELF headers of %s", img->path);
		return target_gone_error(pid, -ENOEXEC, err, errlen);
	}
	ret = first_mapping(pid, img->path, &e);
	if (ret == -ENOENT) {
		snprintf(err, errlen, "cannot find the load address of %s", img->path);
		return target_gone_error(pid, -ENOEXEC, err, errlen);
	}
	if (ret) {
		snprintf(err, errlen, "PID %d exited", pid);
		return -ESRCH;
	}
	img->load_bias = e.start - (first_vaddr & ~0xfffULL);
	return 0;
}

int procmaps_find_ruby(pid_t pid, struct ruby_image *img, char *err, size_t errlen)
{
	char exe_link[64], exe[PATH_MAX];
	bool found;
	ssize_t n;
	FILE *f;
	int ret;

	f = open_maps(pid);
	if (!f) {
		ret = -errno;
		if (errno == ENOENT)
			snprintf(err, errlen, "no process with PID %d", pid);
		else
			snprintf(err, errlen, "cannot read /proc/%d/maps: %s", pid,
				 strerror(errno));
		return ret;
	}

	snprintf(exe_link, sizeof(exe_link), "/proc/%d/exe", pid);
	n = readlink(exe_link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';

	found = find_libruby(f, img);
	fclose(f);
	if (!found)
		found = find_by_symbol(pid, exe, img);
	if (!found) {
		snprintf(err, errlen,
			 "PID %d is not a Ruby process (no libruby or ruby_version in %s)", pid,
			 exe[0] ? exe : "its executable");
		return target_gone_error(pid, -ENOEXEC, err, errlen);
	}
	if (strstr(img->path, " (deleted)")) {
		snprintf(err, errlen,
			 "PID %d runs a Ruby that was deleted or upgraded on disk (%s)", pid,
			 img->path);
		return -ENOENT;
	}
	if ((ret = reach_image(pid, img, err, errlen)))
		return ret;
	return find_load_bias(pid, img, err, errlen);
}

int procmaps_file_offset(pid_t pid, const char *path, uint64_t addr, uint64_t *file_offset)
{
	char line[PATH_MAX + 128];
	struct map_entry e;
	int ret = -ENOENT;
	FILE *f;

	f = open_maps(pid);
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (procmaps_parse_line(line, &e) || strcmp(e.path, path))
			continue;
		if (addr >= e.start && addr < e.end) {
			*file_offset = addr - e.start + e.offset;
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}
