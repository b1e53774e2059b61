// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * trace --every: each period, each process's report written to its own
 * file, named by -o PATTERN, as a whole (a temporary file renamed over the
 * name), the oldest removed past --keep N.  A file that cannot be written
 * is said at once and makes the exit status 1; the trace goes on.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "diag.h"
#include "outfile.h"
#include "outpattern.h"
#include "periodic.h"
#include "trace_every.h"
#include "html.h"
#include "speedscope.h"
#include "writers.h"

struct files {
	const struct every_options *eo;
	int format; /* MODEL_* */
	const struct text_options *text;
	char host[256];
	struct keep_ring rings[MANY_MAX];
	unsigned long written, failed;
};

/* Whether a file of the pattern can be made for pid: the temporary file is made and removed. */
static void check_writable(const char *pattern, pid_t pid)
{
	char path[PATH_MAX], err[PATH_MAX + 128], host[256] = "";
	struct outfile o;
	int ret;

	gethostname(host, sizeof(host) - 1);
	ret = outpattern_expand(pattern, pid, time(NULL), host, path, sizeof(path));
	if (ret)
		rbm_die("invalid -o PATTERN %s: %s", pattern, strerror(-ret));
	if (outfile_open(&o, path, err, sizeof(err)))
		rbm_die("%s", err);
	if (o.kind != OUTFILE_RENAME) {
		outfile_abort(&o);
		rbm_die("cannot write %s: --every writes regular files (a file per period)", path);
	}
	outfile_abort(&o);
}

void trace_every_check(const struct many_options *mo, const struct every_options *eo)
{
	char err[PATH_MAX + 128];
	unsigned uses;
	size_t i;

	if (outpattern_check(eo->pattern, &uses, err, sizeof(err)))
		rbm_die("%s", err);
	if ((mo->npids > 1 || mo->all || mo->match) && !(uses & OUTPATTERN_PID))
		rbm_die("-o %s: several processes write a file each: put %%{pid} in PATTERN",
			eo->pattern);
	if (eo->keep && !(uses & OUTPATTERN_TIME))
		rbm_die("--keep %lu: without %%{time} in PATTERN every period replaces the same "
			"file, so there is nothing to keep",
			eo->keep);
	for (i = 0; i < mo->npids; i++)
		check_writable(eo->pattern, mo->pids[i]);
	if (!mo->npids)
		check_writable(eo->pattern, getpid());
	/* A fixed name a sidecar reads is fine; a pattern that forgot %{time} must not lose files unsaid. */
	if (!(uses & OUTPATTERN_TIME))
		rbm_warn("-o %s has no %%{time}: each period's report replaces the last one's file",
			 eo->pattern);
}

static void write_report(FILE *out, const struct report *r, int format,
			 const struct text_options *text, int *err)
{
	struct report *one = (struct report *) r;
	struct model m = {.procs = &one, .nprocs = 1, .cap = 1};
	struct model_view v = {.model = &m, .summary = r};

	*err = 0;
	if (format == MODEL_PPROF)
		*err = model_write_pprof(out, &v);
	else if (format == MODEL_JSON)
		model_write_json(out, &v);
	else if (format == MODEL_FOLDED)
		report_write_folded(out, r);
	else if (format == MODEL_SPEEDSCOPE)
		*err = report_write_speedscope(out, r);
	else if (format == MODEL_HTML)
		*err = report_write_html(out, r);
	else
		report_write_text(out, r, text);
}

static void publish(void *ctx, struct periodic *p, size_t i, const struct report *r)
{
	struct files *f = ctx;
	char path[PATH_MAX], err[PATH_MAX + 128];
	struct outfile o;
	char *gone;
	int ret;

	(void) p;
	ret = outpattern_expand(f->eo->pattern, r->pid, (time_t) r->period.time, f->host, path,
				sizeof(path));
	if (!ret && outfile_open(&o, path, err, sizeof(err)) == 0) {
		write_report(outfile_stream(&o), r, f->format, f->text, &ret);
		if (ret) {
			outfile_abort(&o);
			snprintf(err, sizeof(err), "cannot write %s: %s", path, strerror(-ret));
		} else {
			ret = outfile_commit(&o, err, sizeof(err));
		}
	} else if (ret) {
		snprintf(err, sizeof(err), "cannot name PID %d's file: %s", r->pid, strerror(-ret));
	} else {
		ret = -EIO;
	}
	if (ret) {
		f->failed++;
		rbm_warn("%s (period %llu of PID %d)", err, (unsigned long long) r->period.number,
			 r->pid);
		return;
	}
	f->written++;
	rbm_info("PID %d: period %llu in %s", r->pid, (unsigned long long) r->period.number, path);
	gone = keep_ring_push(&f->rings[i], path);
	if (gone && unlink(gone) && errno != ENOENT)
		rbm_warn("cannot remove %s (--keep %lu): %s", gone, f->eo->keep, strerror(errno));
	free(gone);
}

static void gone(void *ctx, struct periodic *p, size_t i, const struct report *last)
{
	(void) ctx;
	fprintf(stderr, "rbmemtrace: PID %d %s%s\n", p->m.sessions[i]->target.pid,
		p->m.sessions[i]->end_reason ? p->m.sessions[i]->end_reason : "ended",
		last ? ": its last period's file stays" : " before its first period ended");
}

int trace_every(const struct many_options *mo, const struct many_output *out,
		const struct every_options *eo, volatile sig_atomic_t *stop)
{
	static struct periodic p;
	static struct files f;
	struct periodic_sink sink = {.ctx = &f, .publish = publish, .gone = gone};
	char err[RBM_ERR_LEN];
	size_t i;
	int ret;

	f.eo = eo;
	f.format = out->format;
	f.text = &out->text;
	gethostname(f.host, sizeof(f.host) - 1);
	for (i = 0; i < MANY_MAX; i++)
		f.rings[i].keep = eo->keep;
	ret = periodic_attach(&p, mo, eo->every, false, false, &sink, err, sizeof(err));
	if (!ret) {
		ret = periodic_loop(&p, stop, err, sizeof(err));
		if (ret)
			rbm_error("%s", err);
		periodic_close(&p);
	} else {
		rbm_error("%s", err);
	}
	for (i = 0; i < MANY_MAX; i++)
		keep_ring_free(&f.rings[i]);
	if (ret)
		return 1;
	if (f.failed) {
		rbm_error("%lu of %lu period files could not be written (said above)", f.failed,
			  f.failed + f.written);
		return 1;
	}
	if (*stop && f.written)
		fprintf(stderr,
			"rbmemtrace: stopped by signal %d: the period under way is not written; "
			"%lu period file(s) were\n",
			(int) *stop, f.written);
	if (!f.written) {
		rbm_error("no period ended while the processes were traced: no file was written "
			  "(--every %g)",
			  eo->every);
		return 1;
	}
	return 0;
}
