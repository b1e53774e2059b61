// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include "census.h"
#include "census_model.h"
#include "diag.h"
#include "layout_report.h"
#include "proc_info.h"
#include "procmaps.h"
#include "targets.h"

pid_t target_process_of(pid_t pid)
{
	pid_t tgid = procmaps_thread_group(pid);

	if (tgid > 0 && tgid != pid) {
		rbm_info("%d is a thread of process %d: reading the process", pid, tgid);
		return tgid;
	}
	return pid;
}

int target_memory_open(struct ruby_target *t, pid_t pid, char *err, size_t errlen)
{
	return ruby_target_open(t, pid, RUBY_NEED_MEMORY, err, errlen);
}

int target_heap_open(struct ruby_target *t, struct class_namer *namer, char *err, size_t errlen)
{
	const unsigned int needs =
	    PROOF_BIT(PROOF_GC) | PROOF_BIT(PROOF_HEAP) | PROOF_BIT(PROOF_CLASSES);
	uint64_t object;
	int ret;

	if (ruby_target_require(t, needs, needs, false, err, errlen))
		return -ENOTSUP;
	if ((ret = ruby_target_global(t, "rb_cObject", &object, err, errlen)))
		return ret;
	if ((ret = class_namer_init(namer, t->pid, &t->layout, object, err, errlen)))
		return ret < 0 ? ret : -EINVAL;
	return 0;
}

int target_census(struct ruby_target *t, struct report *r, char *err, size_t errlen)
{
	const struct ruby_layout *hl = &t->layout;
	struct class_namer namer;
	struct census c = {};
	int ret;

	if ((ret = target_heap_open(t, &namer, err, errlen)))
		return ret;
	ret = census_take(&c, t->pid, hl, t->objspace, false, err, errlen);
	if (ret == -ESRCH)
		snprintf(err, errlen, "PID %d exited", t->pid);
	else if (ret == -EPERM || ret == -EACCES)
		snprintf(err, errlen,
			 "not enough privileges to read PID %d (run as root, or with CAP_SYS_PTRACE)",
			 t->pid);
	else if (ret) {
		char why[RBM_ERR_LEN];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "cannot read the heap of PID %d: %s", t->pid, why);
	}
	if (ret)
		goto out;
	rbm_info("census: %lu pages, %lu slots in %.1f ms (%.1f ms of CPU, %u walkers, %.1f ms "
		 "reading the target)",
		 (unsigned long) c.pages, (unsigned long) c.slots, c.seconds * 1e3,
		 c.cpu_seconds * 1e3, c.walkers, c.read_seconds * 1e3);
	r->pid = t->pid;
	r->census_only = true;
	r->exit_status = -1;
	snprintf(r->ruby_version, sizeof(r->ruby_version), "%s", t->version);
	layout_to_report(t, &r->layout);
	if (census_to_report(&c, &namer, r, CENSUS_AT_END, NULL, NULL)) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	caps_read(t->pid, &r->caps); /* after the naming: a name cut is counted there */
	report_finish(r);
out:
	census_free(&c);
	class_namer_free(&namer);
	return ret;
}

bool target_say_stopped(pid_t pid, bool at_end)
{
	char by[64] = "";
	bool stopped;
	pid_t tracer;

	if (proc_stopped(pid, &stopped, &tracer) || !stopped)
		return false;
	if (tracer)
		snprintf(by, sizeof(by), " (a tracer holds it: PID %d)", (int) tracer);
	if (at_end)
		rbm_warn("PID %d was stopped as the trace ended%s: while stopped it allocated nothing, "
			 "and the figures cover only the time it ran",
			 pid, by);
	else
		rbm_warn("PID %d is stopped%s: it allocates nothing until it runs again, and the "
			 "figures will cover only the time it runs",
			 pid, by);
	return true;
}

int target_match_compile(regex_t *re, const char *match, char *err, size_t errlen)
{
	if (!regcomp(re, match, REG_EXTENDED | REG_NOSUB))
		return 0;
	snprintf(err, errlen, "invalid --match: %s (an extended regular expression)", match);
	return -EINVAL;
}
