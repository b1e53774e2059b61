// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A session's share of the run's BPF object: the object loaded by the
 * first session (uprobe_multi links where the kernel has them), a slot of
 * it and its maps for this process.  Below the attach files, which both
 * need it (session_attach.c for -p, session_launch.c for a command).
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "diag.h"
#include "session.h"
#include "shared_bpf.h"

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG || !rbm_verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

/*
 * The run's BPF object is loaded by its first session, and every session
 * takes a slot of it: the 16th process of a run costs its maps, not a load.
 */
int session_shared_bpf(unsigned long depth, struct shared_bpf **shp, char *msg, size_t msglen)
{
	struct shared_bpf *sh = shared_bpf();
	int err;

	if (!sh) {
		libbpf_set_print(NULL); /* a kernel without uprobe_multi is not an error */
		err = shared_bpf_load(depth, true);
		libbpf_set_print(libbpf_print);
		if (err) {
			rbm_info("no uprobe_multi links here; one link per probe");
			err = shared_bpf_load(depth, false);
		}
		if (err) {
			snprintf(
			    msg, msglen,
			    "cannot load the BPF programs: %s (needs a kernel with BTF, BPF and "
			    "uprobes)",
			    strerror(-err));
			return err < 0 ? err : -EINVAL;
		}
		sh = shared_bpf();
	}
	*shp = sh;
	return 0;
}

int session_load_bpf(struct session *s, char *msg, size_t msglen)
{
	struct shared_bpf *sh;
	int err;

	if ((err = session_shared_bpf(s->opt.depth, &sh, msg, msglen)))
		return err;
	s->at.skel = sh->skel;
	s->at.use_multi = sh->use_multi;
	/* The run's sessions share their options: this is for a caller that would not. */
	if (s->opt.depth > sh->depth) {
		rbm_warn("call paths of PID %d cut to %lu frames, the run's depth", s->opt.pid,
			 sh->depth);
		s->opt.depth = sh->depth;
	}
	err = proc_slot_open(&s->at.slot, s->opt.max_objects, s->opt.max_stacks, s->opt.depth > 0);
	if (err == -ENOSPC)
		snprintf(msg, msglen, "cannot trace more than %d processes in one run",
			 RBM_MAX_SLOTS);
	else if (err)
		snprintf(msg, msglen, "cannot create the BPF maps for a process: %s",
			 strerror(-err));
	if (err)
		return err;
	s->at.st = s->at.slot.st;
	return 0;
}

void session_quiet_libbpf(bool quiet)
{
	libbpf_set_print(quiet ? NULL : libbpf_print);
}
