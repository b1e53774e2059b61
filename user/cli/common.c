// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "cli.h"
#include "diag.h"
#include "outfile.h"

unsigned long cli_number(const char *arg, const char *what, unsigned long min, unsigned long max)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max || arg[0] == '-')
		rbm_die("invalid %s: %s (expected a number from %lu to %lu)", what, arg, min, max);
	return v;
}

int cli_real(const char *arg, double *value)
{
	char *end;

	errno = 0;
	*value = strtod(arg, &end);
	return errno || end == arg || *end ? -EINVAL : 0;
}

static bool have_capability(const struct __user_cap_data_struct *caps, int cap)
{
	return caps[cap / 32].effective & (1U << (cap % 32));
}

/* The effective capabilities; false if they cannot be read. */
static bool read_capabilities(struct __user_cap_data_struct caps[2])
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};

	return syscall(SYS_capget, &hdr, caps) == 0;
}

bool cli_have_bpf_privileges(void)
{
	struct __user_cap_data_struct caps[2] = {};

	if (geteuid() == 0)
		return true;
	/*
	 * Uprobes need CAP_SYS_ADMIN on this kernel whatever perf_event_paranoid
	 * says; CAP_BPF with CAP_PERFMON passes here, and an attach that the
	 * kernel refuses says what is missing (session.c).
	 */
	return read_capabilities(caps) &&
	       ((have_capability(caps, CAP_BPF) && have_capability(caps, CAP_PERFMON)) ||
		have_capability(caps, CAP_SYS_ADMIN));
}

/* The kernel's first pid namespace, the host's (PROC_PID_INIT_INO). */
#define HOST_PIDNS_INO 0xEFFFFFFCU

/*
 * A container run without the host's pid namespace or without the capabilities
 * (root in it has only some): one line naming what is missing, and 1; or 0.
 * bpf: the probes' needs too (host pids, CAP_SYS_ADMIN), else reading only, of pid:
 * a census in the namespace of the app it reads (a pod's shared one) is fine.
 */
int cli_need_host_view(bool bpf, pid_t pid)
{
	struct __user_cap_data_struct caps[2] = {};
	struct stat st;

	if (!stat("/proc/self/ns/pid", &st) && st.st_ino != HOST_PIDNS_INO &&
	    (bpf || (kill(pid, 0) && errno == ESRCH))) {
		rbm_error("not in the host's pid namespace: a container needs --pid=host "
			  "(Kubernetes: hostPID: true), see docs/deploy.md");
		return 1;
	}
	if (geteuid() || !read_capabilities(caps))
		return 0;
	if ((bpf && !have_capability(caps, CAP_SYS_ADMIN)) || !have_capability(caps, CAP_SYS_PTRACE)) {
		rbm_error("not enough privileges in this container: missing%s%s (--cap-add "
			  "BPF,PERFMON,SYS_ADMIN,SYS_PTRACE or --privileged), see docs/deploy.md",
			  bpf && !have_capability(caps, CAP_SYS_ADMIN) ? " CAP_SYS_ADMIN" : "",
			  have_capability(caps, CAP_SYS_PTRACE) ? "" : " CAP_SYS_PTRACE");
		return 1;
	}
	return 0;
}

int cli_need_bpf_privileges(void)
{
	if (cli_need_host_view(true, 0))
		return 1;
	if (cli_have_bpf_privileges())
		return 0;
	rbm_error("not enough privileges: run as root, or with CAP_SYS_ADMIN "
		  "(and CAP_SYS_PTRACE for another user's process)");
	return 1;
}

void cli_check_bpf_privileges(void)
{
	if (cli_need_bpf_privileges())
		exit(1);
}

void cli_output_open(struct outfile *o, const char *path)
{
	char err[PATH_MAX + 128];

	if (outfile_open(o, path, err, sizeof(err)))
		rbm_die("%s", err);
}

static struct outfile *unfinished_output;
static const char *unfinished_line;

/* Async-signal-safe: unlink, write, sigaction and raise only. */
static void drop_output(int sig)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};

	if (unfinished_output && unfinished_output->tmp[0])
		unlink(unfinished_output->tmp);
	if (unfinished_line)
		(void) !write(STDERR_FILENO, unfinished_line, strlen(unfinished_line));
	sigaction(sig, &dfl, NULL);
	raise(sig);
}

void cli_signal_drops_output(struct outfile *o, const char *line)
{
	struct sigaction sa = {.sa_handler = drop_output};

	unfinished_output = o;
	unfinished_line = line;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int cli_output_commit(struct outfile *o)
{
	char err[PATH_MAX + 128];

	if (outfile_commit(o, err, sizeof(err))) {
		rbm_error("%s", err);
		return 1;
	}
	return 0;
}

unsigned long cli_live_map_size(bool several, bool full)
{
	if (!several)
		return 1UL << 20;
	return full ? 1UL << 18 : 1UL << 16;
}

/* Bytes of kernel memory one live-object map entry takes (measured: ~104 MB per million). */
#define LIVE_ENTRY_BYTES 104

/* The live-object map is preallocated in the kernel: it must fit in the memory there is. */
void cli_check_max_objects(unsigned long n)
{
	unsigned long long kb = 0;
	char line[256];
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	if (kb && (unsigned long long)n * LIVE_ENTRY_BYTES / 1024 > kb / 2)
		rbm_die("--max-objects %lu needs about %llu MB of kernel memory; this machine has "
			"%llu MB available (at most half of it may go to the map)",
			n, (unsigned long long)n * LIVE_ENTRY_BYTES >> 20, kb >> 10);
}
