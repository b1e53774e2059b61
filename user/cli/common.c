// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "cli.h"
#include "diag.h"
#include "outfile.h"
#include "procmaps.h"
#include "classnames.h"
#include "ruby_target.h"

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

bool cli_have_bpf_privileges(void)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct caps[2] = {};

	if (geteuid() == 0)
		return true;
	/*
	 * Uprobes need CAP_SYS_ADMIN on this kernel whatever perf_event_paranoid
	 * says; CAP_BPF with CAP_PERFMON passes here, and an attach that the
	 * kernel refuses says what is missing (session.c).
	 */
	return syscall(SYS_capget, &hdr, caps) == 0 &&
	       ((have_capability(caps, CAP_BPF) && have_capability(caps, CAP_PERFMON)) ||
		have_capability(caps, CAP_SYS_ADMIN));
}

void cli_check_bpf_privileges(void)
{
	if (!cli_have_bpf_privileges())
		rbm_die("not enough privileges: run as root, or with CAP_SYS_ADMIN "
			"(and CAP_SYS_PTRACE for another user's process)");
}

pid_t cli_process_of(pid_t pid)
{
	pid_t tgid = procmaps_thread_group(pid);

	if (tgid > 0 && tgid != pid) {
		rbm_info("%d is a thread of process %d: reading the process", pid, tgid);
		return tgid;
	}
	return pid;
}

static void abort_output(void *ctx)
{
	outfile_abort(ctx);
}

void cli_output_open(struct outfile *o, const char *path)
{
	char err[PATH_MAX + 128];

	if (outfile_open(o, path, err, sizeof(err)))
		rbm_die("%s", err);
	rbm_on_die(abort_output, o);
}

void cli_output_commit(struct outfile *o)
{
	char err[PATH_MAX + 128];

	rbm_on_die_remove(abort_output, o);
	if (outfile_commit(o, err, sizeof(err)))
		rbm_die("%s", err);
}

bool cli_json_format(const char *arg)
{
	if (strcmp(arg, "json") == 0)
		return true;
	if (strcmp(arg, "text") != 0)
		rbm_die("invalid format: %s (expected text or json)", arg);
	return false;
}

void cli_heap_open(struct ruby_target *t, struct class_namer *namer)
{
	char err[512];

	if (!t->hl)
		rbm_die("no heap layout for Ruby %s (PID %d)", t->version, t->pid);
	t->objspace = ruby_target_find_objspace(t);
	if (!t->objspace)
		rbm_die("cannot find the object space of PID %d", t->pid);
	if (class_namer_init(namer, t->pid, t->off, ruby_target_global(t, "rb_cObject"), err,
			     sizeof(err)))
		rbm_die("%s", err);
}
