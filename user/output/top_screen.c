// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * top's full screen: a header per process, the class rows under a sortable
 * column bar, a drill-down of one class's sampled sites and call paths, and
 * a help line of the keys.  Draws only; cmd_top.c reads the keys.
 */
#include <curses.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sort.h"
#include "escape.h"
#include "top_out.h"
#include "writers.h"
#include "why_select.h"

#define MAX_PROC_LINES 4

/* Prints s at (y, x) clipped to the screen, never cutting a UTF-8 character. */
static void put_clipped(int y, int x, const char *s)
{
	int cols = COLS - x, used = 0;
	size_t i = 0, len = strlen(s);

	if (cols <= 0 || y >= LINES)
		return;
	while (i < len && used < cols) {
		size_t l = utf8_sequence_len((const unsigned char *) s + i);

		i += l ? l : 1;
		used++;
	}
	mvaddnstr(y, x, s, (int) i);
}

/* A line in reverse video across the whole width. */
static void put_bar(int y, const char *s)
{
	attron(A_REVERSE);
	move(y, 0);
	clrtoeol();
	mvhline(y, 0, ' ', COLS);
	put_clipped(y, 0, s);
	attroff(A_REVERSE);
}

static int draw_header(const struct top_model *m, const struct top_ui *ui)
{
	char line[1024];
	time_t now = time(NULL);
	struct tm tm;
	size_t i;
	int y = 0;

	localtime_r(&now, &tm);
	snprintf(line, sizeof(line),
		 "rbmemtrace top  %02d:%02d:%02d  refresh %lu every %.3gs  sort: %s%s%s%s%s",
		 tm.tm_hour, tm.tm_min, tm.tm_sec, m->frames, ui->interval, top_sort_name(ui->sort),
		 ui->filter[0] || ui->editing_filter ? "  filter: " : "", ui->filter,
		 ui->summed && m->nprocs > 1 ? "  [summed by class]" : "",
		 ui->paused ? "  [PAUSED]" : "");
	attron(A_BOLD);
	put_clipped(y++, 0, line);
	attroff(A_BOLD);
	for (i = 0; i < m->nprocs && i < MAX_PROC_LINES; i++) {
		top_proc_line(&m->procs[i], line, sizeof(line));
		if (m->procs[i].gone)
			attron(A_BOLD);
		put_clipped(y++, 0, line);
		attroff(A_BOLD);
	}
	if (m->nprocs > MAX_PROC_LINES) {
		snprintf(line, sizeof(line), "... and %zu more processes",
			 m->nprocs - MAX_PROC_LINES);
		put_clipped(y++, 0, line);
	}
	return y + 1;
}

/* The columns' widths for this terminal: the class name's and the trend's (0: none). */
struct row_widths {
	int name, trend;
};

/* The title bar: each column's name, the sort key's marked with a star. */
static void draw_rows_title(const struct top_ui *ui, struct row_widths *w, int y)
{
	static const char *const titles[TOP_NSORTS] = {
	    [TOP_SORT_LIVE] = "LIVE",  [TOP_SORT_BYTES] = "BYTES",    [TOP_SORT_CHANGE] = "CHANGE",
	    [TOP_SORT_RATE] = "/MIN",  [TOP_SORT_ALLOCS] = "ALLOC/S", [TOP_SORT_OLD] = "OLD%",
	    [TOP_SORT_NAME] = "CLASS",
	};
	char line[1024], mark[TOP_NSORTS][16];
	int i;

	for (i = 0; i < TOP_NSORTS; i++)
		snprintf(mark[i], sizeof(mark[i]), "%s%s", titles[i],
			 (int) ui->sort == i ? "*" : "");
	w->trend = COLS >= 120 ? 16 : COLS >= 100 ? 8 : 0;
	w->name = COLS - (ui->summed ? 0 : 8) - 6 * 10 - 6 - (w->trend ? w->trend + 2 : 0);
	if (w->name < 16)
		w->name = 16;
	snprintf(line, sizeof(line), "%-*s%s %9s %9s %9s %9s %9s %5s  %s", w->name,
		 mark[TOP_SORT_NAME], ui->summed ? "" : "     PID", mark[TOP_SORT_LIVE],
		 mark[TOP_SORT_BYTES], mark[TOP_SORT_CHANGE], mark[TOP_SORT_RATE],
		 mark[TOP_SORT_ALLOCS], mark[TOP_SORT_OLD], w->trend ? "TREND" : "");
	put_bar(y, line);
}

/* The selection kept on a row, and the scroll keeping it within the rows shown. */
static void clamp_selection(const struct top_view *v, struct top_ui *ui, int rows)
{
	if (ui->selected >= v->nrows)
		ui->selected = v->nrows ? v->nrows - 1 : 0;
	if (ui->selected < ui->scroll)
		ui->scroll = ui->selected;
	if (ui->selected >= ui->scroll + rows)
		ui->scroll = ui->selected - rows + 1;
}

static void draw_row(const struct top_view_row *row, const struct top_ui *ui,
		     const struct row_widths *w, bool selected, int y)
{
	char line[1024], name[512], live[32], bytes[32], change[32], rate[32], allocs[32];
	char trend[TOP_HISTORY * 4 + 1], pid[16] = "";

	if (!ui->summed)
		snprintf(pid, sizeof(pid), " %7d", (int) row->pid);
	term_escape(row->name, name, sizeof(name));
	if ((int) strlen(name) > w->name - 1)
		strcpy(name + (w->name > 4 ? w->name - 4 : 0), "...");
	if (w->trend)
		top_sparkline(row->hist, row->nhist, w->trend, ui->ascii, trend, sizeof(trend));
	else
		trend[0] = 0;
	snprintf(line, sizeof(line), "%-*s%s %9s %9s %9s %9s %9s %5.1f  %s", w->name, name, pid,
		 top_fmt_count(row->live, live, sizeof(live)),
		 top_fmt_bytes(row->bytes, bytes, sizeof(bytes)),
		 top_fmt_change(row->change, change, sizeof(change)),
		 top_fmt_count(row->per_min, rate, sizeof(rate)),
		 row->alloc_rate < 0 ? "-" : top_fmt_count(row->alloc_rate, allocs, sizeof(allocs)),
		 row->old_share * 100, trend);
	if (selected)
		attron(A_REVERSE);
	move(y, 0);
	clrtoeol();
	put_clipped(y, 0, line);
	attroff(A_REVERSE);
}

static void draw_rows(const struct top_view *v, struct top_ui *ui, int y, int bottom)
{
	int rows = bottom - y - 1;
	struct row_widths w;
	size_t r;

	draw_rows_title(ui, &w, y++);
	if (rows < 1)
		return;
	clamp_selection(v, ui, rows);
	if (!v->nrows) {
		put_clipped(y, 0,
			    ui->filter[0] ? "  no class matches the filter" : "  no objects yet");
		return;
	}
	for (r = ui->scroll; r < v->nrows && (int) (r - ui->scroll) < rows; r++)
		draw_row(&v->rows[r], ui, &w, r == ui->selected, y++);
}

static double est_or_count(const struct estimates *e, const struct counts *c, bool have_est)
{
	return have_est ? (double) e->allocated : (double) c->allocated;
}

/*
 * Traced objects that survived 3 GCs or more: a leak's are many, a churn
 * site's next to none.  (Alive alone would count garbage not yet swept:
 * the passes between refreshes have no census to tell it apart.)
 */
static uint64_t old_of(const struct ages *a)
{
	uint64_t n = 0;
	unsigned b;

	for (b = 0; b < AGE_BUCKETS; b++)
		if (age_bucket_low(b) >= 3)
			n += a->n[b];
	return n;
}

static const struct report *sort_report;

/* What a leak hunter wants first: the traced objects that lived long, then the allocations. */
static int cmp_counts(const struct counts *cx, const struct estimates *ex, const struct ages *ax,
		      const struct counts *cy, const struct estimates *ey, const struct ages *ay)
{
	double dx = est_or_count(ex, cx, sort_report->have_estimates);
	double dy = est_or_count(ey, cy, sort_report->have_estimates);

	if (old_of(ax) != old_of(ay))
		return old_of(ax) > old_of(ay) ? -1 : 1;
	return dx > dy ? -1 : dx < dy;
}

static int cmp_sites(const void *a, const void *b)
{
	const struct site_row *x = *(const struct site_row *const *) a;
	const struct site_row *y = *(const struct site_row *const *) b;

	return cmp_counts(&x->counts, &x->est, &x->ages, &y->counts, &y->est, &y->ages);
}

static int cmp_stacks(const void *a, const void *b)
{
	const struct stack_row *x = *(const struct stack_row *const *) a;
	const struct stack_row *y = *(const struct stack_row *const *) b;

	return cmp_counts(&x->counts, &x->est, &x->ages, &y->counts, &y->est, &y->ages);
}

/* Key w: the class's top retainer paths, as `why` read them (the paths' names escaped). */
static int draw_why(const struct top_ui *ui, int y, int bottom)
{
	char line[1200], esc[1100], n1[32];
	size_t i;

	if (!ui->why_class[0] || strcmp(ui->why_class, ui->drill_name))
		return y;
	attron(A_BOLD);
	snprintf(line, sizeof(line), "  WHO HOLDS IT (w: read again)  %s", ui->why_status);
	put_clipped(y++, 0, line);
	attroff(A_BOLD);
	for (i = 0; i < ui->nwhy && y < bottom - 1; i++) {
		term_escape(ui->why_lines[i], esc, sizeof(esc));
		snprintf(line, sizeof(line), "  %10s  %s",
			 top_fmt_count((double) ui->why_counts[i], n1, sizeof(n1)), esc);
		put_clipped(y++, 0, line);
	}
	return y + 1;
}

/* Key v: the process's leak verdict since the drill-down began (lines escaped when made). */
static int draw_verdict(const struct top_ui *ui, int y, int bottom)
{
	char line[1200];
	size_t i;

	if (!ui->have_verdict || ui->verdict_for != ui->drill_pid)
		return y;
	attron(A_BOLD);
	snprintf(line, sizeof(line), "  LEAK VERDICT (v: read again)  %s", ui->verdict_status);
	put_clipped(y++, 0, line);
	attroff(A_BOLD);
	for (i = 0; i < ui->nverdict && y < bottom - 1; i++) {
		snprintf(line, sizeof(line), "  %s", ui->verdict_lines[i]);
		put_clipped(y++, 0, line);
	}
	return y + 1;
}

/* The drill-down's title: the class, its live count and change, and the keys. */
static void draw_drill_title(const struct top_view *v, const struct top_ui *ui, int y)
{
	const struct top_view_row *row = NULL;
	char line[2048], name[512], n1[32];
	size_t i;

	for (i = 0; i < v->nrows; i++)
		if (strcmp(v->rows[i].name, ui->drill_name) == 0 &&
		    (!ui->drill_pid || v->rows[i].pid == ui->drill_pid))
			row = &v->rows[i];
	term_escape(ui->drill_name, name, sizeof(name));
	snprintf(line, sizeof(line), "%s%s  live %s  change %+" PRId64 "%s", name,
		 ui->drill_pid ? "" : " (all processes)",
		 row ? top_fmt_count(row->live, n1, sizeof(n1)) : "0", row ? row->change : 0,
		 "   (Esc or Left: back; w: who holds it; v: leak verdict)");
	put_bar(y, line);
}

/* The drilled class's sites and call paths of d, most first (NULL-ended; free both). */
static int drill_rows(const struct report *d, const char *class_name,
		      const struct site_row ***sites, size_t *nsites,
		      const struct stack_row ***stacks, size_t *nstacks)
{
	size_t i;

	*nsites = *nstacks = 0;
	for (i = 0; i < d->nsites; i++)
		if (strcmp(d->sites[i].class_name, class_name) == 0)
			(*nsites)++;
	for (i = 0; i < d->nstacks; i++)
		if (strcmp(d->stacks[i].class_name, class_name) == 0)
			(*nstacks)++;
	*sites = calloc(*nsites + 1, sizeof(**sites));
	*stacks = calloc(*nstacks + 1, sizeof(**stacks));
	if (!*sites || !*stacks)
		return -ENOMEM;
	*nsites = *nstacks = 0;
	for (i = 0; i < d->nsites; i++)
		if (strcmp(d->sites[i].class_name, class_name) == 0)
			(*sites)[(*nsites)++] = &d->sites[i];
	for (i = 0; i < d->nstacks; i++)
		if (strcmp(d->stacks[i].class_name, class_name) == 0)
			(*stacks)[(*nstacks)++] = &d->stacks[i];
	sort_report = d;
	sort_array(*sites, *nsites, sizeof(**sites), cmp_sites);
	sort_array(*stacks, *nstacks, sizeof(**stacks), cmp_stacks);
	return 0;
}

/* The top allocation sites, from line y; the next free line. */
static int draw_drill_sites(const struct report *d, const struct site_row **sites, size_t nsites,
			    int y, int bottom)
{
	char line[2048], frame[1200], esc[1200], n1[32], n2[32], n3[32];
	size_t i;

	attron(A_BOLD);
	put_clipped(y++, 0,
		    "  EST.ALLOCS    TRACED  OLD(3+GC)  TOP ALLOCATION SITES (traced objects that "
		    "survived 3+ GCs first)");
	attroff(A_BOLD);
	if (!nsites)
		put_clipped(y++, 2, "(no allocation of this class sampled yet)");
	for (i = 0; i < nsites && i < 8 && y < bottom - 4; i++) {
		snprintf(frame, sizeof(frame), "%s:%d", sites[i]->path, sites[i]->line);
		term_escape(frame, esc, sizeof(esc));
		snprintf(line, sizeof(line), "  %10s %9s %10s  %s",
			 top_fmt_count(
			     est_or_count(&sites[i]->est, &sites[i]->counts, d->have_estimates), n1,
			     sizeof(n1)),
			 top_fmt_count(sites[i]->counts.allocated, n2, sizeof(n2)),
			 top_fmt_count(old_of(&sites[i]->ages), n3, sizeof(n3)), esc);
		put_clipped(y++, 0, line);
	}
	return y;
}

/* The top call paths, each with its first frames, from line y. */
static void draw_drill_stacks(const struct report *d, const struct stack_row **stacks,
			      size_t nstacks, int y, int bottom)
{
	char line[2048], frame[1200], esc[1200], n1[32], n2[32], n3[32];
	size_t i;
	unsigned f;

	attron(A_BOLD);
	put_clipped(y++, 0, "  TOP CALL PATHS (innermost frame first)");
	attroff(A_BOLD);
	for (i = 0; i < nstacks && i < 3 && y < bottom - 1; i++) {
		const struct stack *st = stacks[i]->stack;

		snprintf(line, sizeof(line),
			 "  %10s allocations (est.), %s traced, %s survived 3+ GCs",
			 top_fmt_count(
			     est_or_count(&stacks[i]->est, &stacks[i]->counts, d->have_estimates),
			     n1, sizeof(n1)),
			 top_fmt_count(stacks[i]->counts.allocated, n2, sizeof(n2)),
			 top_fmt_count(old_of(&stacks[i]->ages), n3, sizeof(n3)));
		put_clipped(y++, 0, line);
		for (f = 0; st && f < st->depth && f < 6 && y < bottom - 1; f++) {
			frame_display_name(&st->frames[f], frame, sizeof(frame));
			term_escape(frame, esc, sizeof(esc));
			snprintf(line, sizeof(line), "      %s", esc);
			put_clipped(y++, 0, line);
		}
		if (st && st->depth > 6 && y < bottom - 1) {
			snprintf(line, sizeof(line), "      ... %zu more frames", st->depth - 6);
			put_clipped(y++, 0, line);
		}
	}
}

static void draw_drill(const struct top_view *v, struct top_ui *ui, const struct report *d, int y,
		       int bottom)
{
	const struct site_row **sites = NULL;
	const struct stack_row **stacks = NULL;
	size_t nsites, nstacks;
	char line[2048];

	draw_drill_title(v, ui, y++);
	y = draw_why(ui, y, bottom);
	y = draw_verdict(ui, y, bottom);
	if (!d || !d->sampling.on || d->sampling.windows == 0) {
		put_clipped(y + 1, 2,
			    "Sampling allocation windows within the budget; the first "
			    "sites show after the first windows...");
		return;
	}
	snprintf(line, sizeof(line),
		 "Sampled over %.0f s: %" PRIu64 " windows, %" PRIu64
		 " allocations traced, est. overhead %.2f%% (budget %.3g%%)%s%s",
		 d->duration_s, d->sampling.windows, d->sampling.traced, d->sampling.est_overhead,
		 d->sampling.budget_percent, d->sampling.doubt[0] ? "; " : "", d->sampling.doubt);
	put_clipped(y++, 2, line);
	if (!drill_rows(d, ui->drill_name, &sites, &nsites, &stacks, &nstacks)) {
		y = draw_drill_sites(d, sites, nsites, y + 1, bottom);
		draw_drill_stacks(d, stacks, nstacks, y + 1, bottom);
	}
	free(sites);
	free(stacks);
}

static void draw_help(int y)
{
	static const char *const lines[] = {
	    "Keys",
	    "  l b c m a o n   sort by live, bytes, change, change per minute, allocations/s,",
	    "                  old share, name (< and > move the sort column)",
	    "  /               filter by class name (Enter keeps it, Esc clears it)",
	    "  r               reset the baseline of the change columns",
	    "  p               pause (no census taken) / resume",
	    "  Enter           the selected class's allocation sites and call paths",
	    "                  (starts sampled windows within --max-overhead)",
	    "  Esc, Left       back from the sites",
	    "  w               in the sites: who holds the class's live objects (rbmemtrace why)",
	    "  v               in the sites: the process's leak verdict, from its first",
	    "                  drill-down to now (a heap walk at each end)",
	    "  s               rows summed by class over processes / per process",
	    "  Up Down PgUp PgDn Home End   move",
	    "  q               quit",
	};
	size_t i;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		put_clipped(y + i, 2, lines[i]);
}

void top_screen_draw(const struct top_model *m, const struct top_view *v, struct top_ui *ui,
		     const struct report *drill)
{
	int y, bottom = LINES - 1;

	erase();
	y = draw_header(m, ui);
	if (ui->help)
		draw_help(y);
	else if (ui->drill)
		draw_drill(v, ui, drill, y, bottom);
	else
		draw_rows(v, ui, y, bottom);
	if (ui->editing_filter) {
		char line[256];

		snprintf(line, sizeof(line), "Filter: %s_   (Enter: keep, Esc: clear)", ui->filter);
		put_bar(bottom, line);
	} else if (ui->message[0]) {
		put_bar(bottom, ui->message);
	} else if (ui->drill && !ui->help) {
		put_bar(bottom, "q quit  Esc back  w who holds it  v leak verdict  p pause  ? help");
	} else {
		put_bar(bottom, "q quit  l b c m a o n sort  / filter  r reset  p pause  "
				"Enter sites  s summed/per process  ? help");
	}
	refresh();
}

void top_ui_set_why(struct top_ui *ui, const struct why_report *why, pid_t pid, double seconds)
{
	size_t i;

	ui->nwhy = 0;
	for (i = 0; why->ntargets && i < why->targets[0].npaths && i < 3; i++) {
		const struct why_path *p = &why->targets[0].paths[i];
		char kind_line[600];

		why_path_line(p, kind_line, sizeof(kind_line));
		snprintf(ui->why_lines[i], sizeof(ui->why_lines[i]), "%s %.480s", p->root_kind,
			 kind_line);
		ui->why_counts[i] = p->count;
		ui->nwhy++;
	}
	snprintf(ui->why_status, sizeof(ui->why_status),
		 "PID %d: %" PRIu64 " live, %" PRIu64 " on no walked path; read in %.1f s", (int) pid,
		 why->ntargets ? why->targets[0].count : 0,
		 why->ntargets ? why->targets[0].unexplained : 0, seconds);
}

void top_ui_set_verdict(struct top_ui *ui, const struct verdict *v, pid_t pid, double seconds,
			double start_seconds, uint64_t kept_bytes)
{
	char *text = NULL, *line, *next, kept[32];
	size_t len = 0;
	FILE *f;

	ui->nverdict = 0;
	if (start_seconds > 0)
		snprintf(ui->verdict_status, sizeof(ui->verdict_status),
			 "PID %d: read in %.2f s (its start's walk %.2f s, %s kept)", (int) pid,
			 seconds, start_seconds, top_fmt_bytes((double) kept_bytes, kept, sizeof(kept)));
	else
		snprintf(ui->verdict_status, sizeof(ui->verdict_status), "PID %d: read in %.2f s",
			 (int) pid, seconds);
	f = open_memstream(&text, &len);
	if (!f)
		return;
	verdict_write_text(f, v, 0);
	if (fclose(f) || !text) {
		free(text);
		return;
	}
	/* its lines without the blank ones that set it apart in a report */
	for (line = text; *line && ui->nverdict < TOP_VERDICT_LINES; line = next) {
		next = strchr(line, '\n');
		next = next ? next + 1 : line + strlen(line);
		if (*line == '\n')
			continue;
		snprintf(ui->verdict_lines[ui->nverdict++], sizeof(ui->verdict_lines[0]), "%.*s",
			 (int) (next - line - (next[-1] == '\n')), line);
	}
	free(text);
}
