// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* top's batch frames: text like `top -b`, and JSON lines for scripts. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "escape.h"
#include "json_writer.h"
#include "top_out.h"

char *top_fmt_count(double v, char *buf, size_t n)
{
	double a = fabs(v);

	if (a < 10000)
		snprintf(buf, n, "%.0f", v);
	else if (a < 1e6)
		snprintf(buf, n, "%.1fk", v / 1e3);
	else if (a < 1e9)
		snprintf(buf, n, "%.2fM", v / 1e6);
	else
		snprintf(buf, n, "%.2fG", v / 1e9);
	return buf;
}

char *top_fmt_change(double v, char *buf, size_t n)
{
	char num[32];

	snprintf(buf, n, "%s%s", v > 0 ? "+" : "", top_fmt_count(v, num, sizeof(num)));
	return buf;
}

char *top_fmt_bytes(double b, char *buf, size_t n)
{
	if (b < 1024)
		snprintf(buf, n, "%.0fB", b);
	else if (b < 1024 * 1024)
		snprintf(buf, n, "%.1fK", b / 1024);
	else if (b < 1024.0 * 1024 * 1024)
		snprintf(buf, n, "%.1fM", b / (1024 * 1024));
	else
		snprintf(buf, n, "%.2fG", b / (1024.0 * 1024 * 1024));
	return buf;
}

char *top_fmt_uptime(double s, char *buf, size_t n)
{
	unsigned long t = s > 0 ? (unsigned long) s : 0;

	if (s < 0)
		snprintf(buf, n, "?");
	else if (t < 3600)
		snprintf(buf, n, "%lu:%02lu", t / 60, t % 60);
	else if (t < 86400)
		snprintf(buf, n, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, n, "%lud%02luh", t / 86400, t / 3600 % 24);
	return buf;
}

void top_proc_line(const struct top_proc *p, char *buf, size_t n)
{
	char cmd[256], up[32], live[32], fr[32], gcs[32], al[32], rss[32], ns[32] = "";
	char sampling[64] = "";

	term_escape(p->command, cmd, sizeof(cmd));
	if (p->ns_pid)
		snprintf(ns, sizeof(ns), " (ns %d)", (int) p->ns_pid);
	if (p->gcs_per_s >= 0)
		snprintf(gcs, sizeof(gcs), " (%.1f/s)", p->gcs_per_s);
	else
		gcs[0] = 0;
	if (p->allocs_per_s >= 0)
		top_fmt_count(p->allocs_per_s, al, sizeof(al));
	else
		snprintf(al, sizeof(al), "-");
	if (p->sampling)
		snprintf(sampling, sizeof(sampling), "  sampling %.1f%%/%.3g%%",
			 p->overhead_percent, p->budget_percent);
	snprintf(
	    buf, n,
	    "PID %d%s (%s)  Ruby %s  up %s  heap %s live %s free  GC %" PRIu64
	    "%s  allocs %s/s  RSS %s  census %.0f ms%s%s%s%s",
	    (int) p->pid, ns, cmd, p->ruby_version, top_fmt_uptime(p->uptime_s, up, sizeof(up)),
	    top_fmt_count(p->live, live, sizeof(live)), top_fmt_count(p->free, fr, sizeof(fr)),
	    p->gc_count, gcs, al, top_fmt_bytes(p->rss_bytes, rss, sizeof(rss)), p->census_s * 1e3,
	    sampling, p->marking ? "  (marking)" : "", p->state[0] ? "  -- " : "", p->state);
}

void top_write_text_frame(FILE *out, const struct top_model *m, const struct top_view *v,
			  const struct top_ui *ui, unsigned long max_rows)
{
	char line[1024], name[512], live[32], bytes[32], change[32], rate[32], allocs[32];
	char trend[TOP_HISTORY * 4 + 1];
	time_t now = time(NULL);
	struct tm tm;
	size_t i;

	localtime_r(&now, &tm);
	fprintf(out, "rbmemtrace top - %02d:%02d:%02d  refresh %lu  every %.3gs  sort %s%s%s%s\n",
		tm.tm_hour, tm.tm_min, tm.tm_sec, m->frames, ui->interval, top_sort_name(ui->sort),
		ui->filter[0] ? "  filter " : "", ui->filter[0] ? ui->filter : "",
		ui->summed && m->nprocs > 1 ? "  summed" : "");
	for (i = 0; i < m->nprocs; i++) {
		top_proc_line(&m->procs[i], line, sizeof(line));
		fprintf(out, "%s\n", line);
	}
	fprintf(out, "\n%-40s %7s %9s %9s %9s %9s %9s %5s  %s\n", "CLASS", ui->summed ? "" : "PID",
		"LIVE", "BYTES", "CHANGE", "/MIN", "ALLOC/S", "OLD%", "TREND");
	for (i = 0; i < v->nrows && (!max_rows || i < max_rows); i++) {
		const struct top_view_row *r = &v->rows[i];
		char pid[16] = "";

		if (r->pid)
			snprintf(pid, sizeof(pid), "%d", (int) r->pid);
		term_escape(r->name, name, sizeof(name));
		top_sparkline(r->hist, r->nhist, 16, ui->ascii, trend, sizeof(trend));
		fprintf(out, "%-40s %7s %9s %9s %9s %9s %9s %5.1f  %s\n", name, pid,
			top_fmt_count(r->live, live, sizeof(live)),
			top_fmt_bytes(r->bytes, bytes, sizeof(bytes)),
			top_fmt_change(r->change, change, sizeof(change)),
			top_fmt_count(r->per_min, rate, sizeof(rate)),
			r->alloc_rate < 0 ? "-"
					  : top_fmt_count(r->alloc_rate, allocs, sizeof(allocs)),
			r->old_share * 100, trend);
	}
	fprintf(out, "\n");
	fflush(out);
}

static void json_proc(struct jw *w, const struct top_proc *p)
{
	jw_object(w, NULL, JW_COMPACT);
	jw_int(w, JK(pid), (int) p->pid);
	jw_int(w, JK(ns_pid), (int) p->ns_pid);
	jw_string(w, JK(command), p->command);
	jw_string(w, JK(ruby_version), p->ruby_version);
	jw_double(w, JK(uptime_s), "%.1f", p->uptime_s);
	jw_object(w, JK(heap), JW_COMPACT);
	jw_u64(w, JK(slots), p->slots);
	jw_u64(w, JK(live), p->live);
	jw_u64(w, JK(free), p->free);
	jw_u64(w, JK(garbage), p->garbage);
	jw_end(w);
	jw_u64(w, JK(gc_count), p->gc_count);
	if (p->gcs_per_s >= 0) {
		jw_double(w, JK(gcs_per_s), "%.3f", p->gcs_per_s);
		jw_double(w, JK(allocs_per_s), "%.1f", p->allocs_per_s);
	} else {
		jw_null(w, JK(gcs_per_s));
		jw_null(w, JK(allocs_per_s));
	}
	jw_u64(w, JK(rss_bytes), p->rss_bytes);
	jw_double(w, JK(census_ms), "%.2f", p->census_s * 1e3);
	jw_bool(w, JK(marking), p->marking);
	jw_bool(w, JK(sampling), p->sampling);
	if (p->sampling) {
		jw_double(w, JK(budget_percent), "%.3g", p->budget_percent);
		jw_double(w, JK(estimated_overhead_percent), "%.3f", p->overhead_percent);
	}
	jw_bool(w, JK(gone), p->gone);
	jw_string(w, JK(state), p->state);
	jw_end(w);
}

void top_write_json_frame(FILE *out, const struct top_model *m, const struct top_view *v,
			  const struct top_ui *ui)
{
	struct timespec ts;
	struct jw w;
	size_t i;
	unsigned j;

	clock_gettime(CLOCK_REALTIME, &ts);
	jw_init(&w, out, 0);
	jw_object(&w, NULL, JW_COMPACT);
	jw_double(&w, JK(time), "%.3f", ts.tv_sec + ts.tv_nsec / 1e9);
	jw_u64(&w, JK(frame), m->frames);
	jw_double(&w, JK(interval_s), "%.3g", ui->interval);
	jw_bool(&w, JK(summed), ui->summed);
	jw_string(&w, JK(sort), top_sort_name(ui->sort));
	jw_array(&w, JK(processes), JW_COMPACT);
	for (i = 0; i < m->nprocs; i++)
		json_proc(&w, &m->procs[i]);
	jw_end(&w);
	jw_array(&w, JK(classes), JW_COMPACT);
	for (i = 0; i < v->nrows; i++) {
		const struct top_view_row *r = &v->rows[i];

		jw_object(&w, NULL, JW_COMPACT);
		jw_string(&w, JK(name), r->name);
		if (r->pid)
			jw_int(&w, JK(pid), (int) r->pid);
		jw_u64(&w, JK(live), r->live);
		jw_u64(&w, JK(bytes), r->bytes);
		jw_u64(&w, JK(old), r->old);
		jw_i64(&w, JK(change), r->change);
		jw_double(&w, JK(per_min), "%.1f", r->per_min);
		if (r->alloc_rate >= 0)
			jw_double(&w, JK(allocs_per_s), "%.1f", r->alloc_rate);
		else
			jw_null(&w, JK(allocs_per_s));
		jw_array(&w, JK(trend), JW_COMPACT);
		for (j = r->nhist > 16 ? r->nhist - 16 : 0; j < r->nhist; j++)
			jw_u64(&w, NULL, r->hist[j]);
		jw_end(&w);
		jw_end(&w);
	}
	jw_end(&w);
	jw_end(&w);
	fputc('\n', out);
	fflush(out);
}
