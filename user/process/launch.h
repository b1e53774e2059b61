/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Launch mode (rbmemtrace -- COMMAND): find its Ruby, start it held. */
#ifndef RBM_LAUNCH_H
#define RBM_LAUNCH_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Finds the file that holds Ruby for a command: follows PATH and #! lines
 * (including /usr/bin/env ruby) to an ELF, then its libruby, or the ELF
 * itself for a static ruby.  0, or -errno with a one-line reason in err.
 */
int launch_find_ruby(const char *command, char *ruby_file, size_t n, char *err, size_t errlen);
/* The executable a command runs, through PATH and #! lines, resolved (real: PATH_MAX). */
int launch_command_exe(const char *command, char *real, char *err, size_t errlen);

/*
 * Whether an executable (an ELF, "/proc/PID/exe" too) runs Ruby: it needs
 * a libruby, or it is a static ruby.  A script or a file that is not an
 * ELF does not: its interpreter is what an exec runs.
 */
bool launch_exe_runs_ruby(const char *exe);

/* Forks a child that waits, then execs argv.  *release_fd lets it go. */
pid_t launch_spawn(char *const argv[], int *release_fd);
void launch_release(int release_fd);

#endif
