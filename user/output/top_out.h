/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Writers of the top model: batch frames (plain text like `top -b`, or one
 * JSON object per line) and the full-screen ncurses view.  They only read
 * the model and the view built from it; keys and timing live in cli/cmd_top.c.
 */
#ifndef RBM_TOP_OUT_H
#define RBM_TOP_OUT_H
#include <stdbool.h>
#include <stdio.h>
#include "report.h"
#include "top_model.h"

/* The verdict's lines kept: a header, 5 points of 3 lines and 4 sites, a footer fit. */
#define TOP_VERDICT_LINES 40

/* What the screen shows, as the keys set it. */
struct top_ui {
	enum top_sort sort;
	bool summed;	     /* rows summed by class over processes */
	char filter[128];    /* class names containing it; "" all */
	bool editing_filter; /* '/' typed: keys go to the filter */
	bool paused;
	bool help;	 /* the key help is open */
	size_t selected; /* row under the cursor */
	size_t scroll;	 /* first row shown */
	bool drill;	 /* the drill-down of the selected class is open */
	char drill_name[512];
	pid_t drill_pid;      /* 0: every process */
	bool ascii;	      /* no UTF-8 terminal: ASCII trend */
	char message[256];    /* one line for the status bar; "" none */
	double message_until; /* when it gives the bar back to the keys */
	/* The drill-down's `why` (key w): who holds the class's live objects */
	char why_class[512];	/* the class it was read for; "" none */
	char why_status[256];	/* "45000 live, read in 0.3 s", or why not */
	char why_lines[3][512]; /* the top paths, each in one line */
	uint64_t why_counts[3];
	size_t nwhy;
	/* The drill-down's leak verdict (key v): its text lines, as a trace's report writes them */
	bool have_verdict;
	pid_t verdict_for;	     /* the drill_pid it was read for */
	char verdict_status[256];    /* "PID 123: read in 0.2 s ...", or why not */
	char verdict_lines[TOP_VERDICT_LINES][512];
	size_t nverdict;
	double interval;
};

/* "12", "12.3k", "4.56M": counts that fit a column. */
char *top_fmt_count(double v, char *buf, size_t n);
/* The same with a "+" when positive. */
char *top_fmt_change(double v, char *buf, size_t n);
/* "512B", "12.3K", "4.5M", "1.2G". */
char *top_fmt_bytes(double b, char *buf, size_t n);
/* "5:02" or "3:04:05" or "2d03h". */
char *top_fmt_uptime(double s, char *buf, size_t n);
/* One process's header line (untrusted command escaped). */
void top_proc_line(const struct top_proc *p, char *buf, size_t n);

/* One text frame: headers, column titles, at most max_rows rows (0: all). */
void top_write_text_frame(FILE *out, const struct top_model *m, const struct top_view *v,
			  const struct top_ui *ui, unsigned long max_rows);
/* One JSON object on one line. */
void top_write_json_frame(FILE *out, const struct top_model *m, const struct top_view *v,
			  const struct top_ui *ui);

struct why_report;
/* Key w's answer in ui's why lines: why's top paths, read from pid in seconds. */
void top_ui_set_why(struct top_ui *ui, const struct why_report *why, pid_t pid, double seconds);

struct verdict;
/*
 * Key v's answer in ui's verdict lines: v as the text report writes it
 * (its strings escaped for the terminal), read from pid in seconds, its
 * start's walk having taken start_seconds (0: none) and kept kept_bytes.
 */
void top_ui_set_verdict(struct top_ui *ui, const struct verdict *v, pid_t pid, double seconds,
			double start_seconds, uint64_t kept_bytes);

/* The full screen (ncurses; initscr done by the caller).  drill: the session's report or NULL. */
void top_screen_draw(const struct top_model *m, const struct top_view *v, struct top_ui *ui,
		     const struct report *drill);

#endif
