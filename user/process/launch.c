// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include "elfinfo.h"
#include "launch.h"
#include "target_file.h"

static int find_in_path(const char *name, char *out, size_t n)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;
	int ret = -ENOENT;

	if (strchr(name, '/')) {
		snprintf(out, n, "%s", name);
		return access(out, X_OK) ? -errno : 0;
	}
	copy = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	if (!copy)
		return -ENOMEM;
	for (dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, n, "%s/%s", *dir ? dir : ".", name);
		if (access(out, X_OK) == 0) {
			ret = 0;
			break;
		}
	}
	free(copy);
	return ret;
}

/* Reads "#!interp [arg]" and returns the program it names (env's argument for /usr/bin/env). */
static int shebang_program(const char *file, char *out, size_t n)
{
	char line[256], *p, *interp, *arg, *save = NULL;
	ssize_t got;
	int fd;

	/* A FIFO on PATH must not hang us: regular files only, never blocking. */
	fd = target_file_open(file);
	if (fd < 0)
		return fd;
	got = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (got < 2 || line[0] != '#' || line[1] != '!')
		return -ENOEXEC;
	line[got] = '\0';
	line[strcspn(line, "\n")] = '\0';
	p = line + 2;
	interp = strtok_r(p, " \t", &save);
	arg = strtok_r(NULL, " \t", &save);
	if (!interp)
		return -ENOEXEC;
	if (strcmp(strrchr(interp, '/') ? strrchr(interp, '/') + 1 : interp, "env") == 0) {
		while (arg && arg[0] == '-') /* env -S ruby, env -i ruby */
			arg = strtok_r(NULL, " \t", &save);
		return arg ? find_in_path(arg, out, n) : -ENOEXEC;
	}
	snprintf(out, n, "%s", interp);
	return 0;
}

int launch_command_exe(const char *command, char *real, char *err, size_t errlen)
{
	char exe[PATH_MAX];
	int depth;

	if (find_in_path(command, exe, sizeof(exe))) {
		snprintf(err, errlen, "command not found or not executable: %s", command);
		return -ENOENT;
	}
	/* A script: follow its #! line (twice at most: env, then ruby). */
	for (depth = 0; depth < 2 && shebang_program(exe, real, PATH_MAX) == 0; depth++)
		snprintf(exe, sizeof(exe), "%s", real);
	if (!realpath(exe, real)) {
		snprintf(err, errlen, "cannot resolve %s: %s", exe, strerror(errno));
		return -ENOENT;
	}
	return 0;
}

int launch_find_ruby(const char *command, char *ruby_file, size_t n, char *err, size_t errlen)
{
	char real[PATH_MAX], lib[PATH_MAX];
	char version[32];
	int ret;

	ret = launch_command_exe(command, real, err, errlen);
	if (ret)
		return ret;
	/*
	 * libruby first: a program linked against it may still hold a copy of
	 * ruby_version (a copy relocation, zeros in its file).
	 */
	if (elf_resolve_needed(real, "libruby", lib, sizeof(lib)) == 0 && realpath(lib, ruby_file))
		return 0;
	if (elf_symbol_string(real, "ruby_version", version, sizeof(version)) == 0 && version[0]) {
		snprintf(ruby_file, n, "%s", real);
		return 0;
	}
	snprintf(err, errlen, "%s does not run Ruby (no libruby and no ruby_version in %s)", command,
		 real);
	return -ENOEXEC;
}

bool launch_exe_runs_ruby(const char *exe)
{
	char name[256], version[32];

	/* Unresolved: a container's libruby is found in its own root, not in ours. */
	if (elf_needed_name(exe, "libruby", name, sizeof(name)) == 0)
		return true;
	return elf_symbol_string(exe, "ruby_version", version, sizeof(version)) == 0 && version[0];
}

pid_t launch_spawn(char *const argv[], int *release_fd)
{
	int pipefd[2];
	pid_t pid;
	char go;

	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return -errno;
	}
	if (pid == 0) {
		/* If rbmemtrace dies while this child is stopped, let it run on. */
		prctl(PR_SET_PDEATHSIG, SIGCONT);
		close(pipefd[1]);
		if (read(pipefd[0], &go, 1) != 1)
			_exit(127); /* forked child: we never let it go */
		execvp(argv[0], argv);
		fprintf(stderr, "rbmemtrace: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127); /* forked child: its exec failed */
	}
	close(pipefd[0]);
	*release_fd = pipefd[1];
	return pid;
}

void launch_release(int release_fd)
{
	char go = 1;

	if (write(release_fd, &go, 1) != 1)
		perror("rbmemtrace: release child");
	close(release_fd);
}
