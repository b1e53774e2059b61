/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The model behind `rbmemtrace top`: per process and class, the live
 * objects each refresh's heap census saw, kept over the last refreshes so
 * that a row can say how it changed since the baseline, how fast it grows
 * and what its trend looks like.  Pure data: the collector (engine/top_collect.c)
 * fills it, the screen and the batch frames (output/top_*.c) only read it,
 * and the unit tests drive it without ncurses or a target.
 */
#ifndef RBM_TOP_MODEL_H
#define RBM_TOP_MODEL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "strpool.h"
#include "u64map.h"

#define TOP_HISTORY 64	 /* refreshes kept per row: the trend and the rate */
#define TOP_RATE_SPAN 10 /* refreshes the change per minute is measured over */
#define TOP_MAX_PROCS 64

/* One process as the last refresh saw it: the header's figures. */
struct top_proc {
	pid_t pid;
	pid_t ns_pid;	  /* its pid in its own namespace; 0: the same */
	char command[64]; /* escaped for a terminal by the writers, not here */
	char ruby_version[32];
	double uptime_s;
	uint64_t slots, live, free, garbage;
	uint64_t gc_count;
	double gcs_per_s;    /* over the last refresh; -1 unknown */
	double allocs_per_s; /* Ruby's total_allocated counter; -1 unknown */
	uint64_t rss_bytes;
	double census_s; /* what the last census took */
	bool marking;	 /* the last census ran during incremental marking */
	bool sampling;	 /* probe windows are on (drill-down) */
	double budget_percent, overhead_percent; /* when sampling */
	bool gone;				 /* exited or unreadable: its last figures stay */
	char state[128];			 /* why it is gone, or "" */
	/* for rates between refreshes (collector's) */
	double last_t;
	uint64_t last_gc_count, last_allocated;
};

/* One class in one process (pid 0: summed over processes in a view). */
struct top_row {
	const char *name; /* interned in the model's pool */
	pid_t pid;
	uint64_t live, bytes, old;
	uint64_t base_live;	    /* at the baseline (the first refresh, or `r`) */
	double alloc_rate;	    /* allocations per second from sampled windows; <0 unknown */
	unsigned long born;	    /* the refresh that first saw it */
	unsigned long seen;	    /* the last refresh that set it */
	uint64_t hist[TOP_HISTORY]; /* live per refresh, ring indexed by refresh number */
};

enum top_sort {
	TOP_SORT_LIVE,
	TOP_SORT_BYTES,
	TOP_SORT_CHANGE,
	TOP_SORT_RATE,	 /* change per minute */
	TOP_SORT_ALLOCS, /* allocations per second */
	TOP_SORT_OLD,	 /* share of old objects */
	TOP_SORT_NAME,
	TOP_NSORTS,
};

struct top_model {
	struct strpool names;
	struct u64map index; /* key of (pid, name) -> row index + 1 */
	struct top_row *rows;
	size_t nrows, cap;
	struct top_proc procs[TOP_MAX_PROCS];
	size_t nprocs;
	unsigned long frames;	   /* refreshes recorded */
	double times[TOP_HISTORY]; /* when each refresh was taken, same ring */
	double base_time;
	bool reset_pending; /* the next refresh becomes the baseline */
};

/* A row as shown: summed or per process, with what is derived from its history. */
struct top_view_row {
	const char *name;
	pid_t pid; /* 0 when summed */
	uint64_t live, bytes, old;
	int64_t change;		    /* since the baseline */
	double per_min;		    /* change per minute over the last TOP_RATE_SPAN refreshes */
	double alloc_rate;	    /* <0 unknown */
	double old_share;	    /* old / live, 0..1 */
	uint64_t hist[TOP_HISTORY]; /* oldest first */
	unsigned nhist;
};

struct top_view {
	struct top_view_row *rows;
	size_t nrows, cap;
	uint64_t live, bytes; /* over the rows shown */
};

void top_model_init(struct top_model *m);
void top_model_free(struct top_model *m);
/* The process with this pid, added if new; NULL when TOP_MAX_PROCS are in. */
struct top_proc *top_model_proc(struct top_model *m, pid_t pid);

/* A refresh: begin at time t, set every class the census saw, end. */
void top_frame_begin(struct top_model *m, double t);
/* 0 or -ENOMEM.  alloc_rate < 0: unknown. */
int top_frame_set(struct top_model *m, pid_t pid, const char *name, uint64_t live, uint64_t bytes,
		  uint64_t old, double alloc_rate);
/* Keeps pid's rows as they were (its census failed this time). */
void top_frame_keep(struct top_model *m, pid_t pid);
void top_frame_end(struct top_model *m);
/* The next refresh becomes the baseline of every change column. */
void top_model_reset(struct top_model *m);

/*
 * Builds the rows to show: summed by class over processes or per process,
 * those whose name contains filter (NULL or "": all), sorted by key with the
 * largest first (names ascending for TOP_SORT_NAME).  0 or -ENOMEM.
 */
int top_view_build(const struct top_model *m, struct top_view *v, bool summed, enum top_sort key,
		   const char *filter);
void top_view_free(struct top_view *v);

/* The change per minute of a history (oldest first) taken at times (same order). */
double top_rate_per_min(const uint64_t *hist, const double *times, unsigned n);

/*
 * The trend of values (oldest first) as width characters of the 8 levels
 * of ' '..'█' scaled between their min and max; ASCII levels "_.-:=+*#" when
 * ascii.  Writes a NUL-terminated string into buf; returns its length.
 */
size_t top_sparkline(const uint64_t *values, unsigned n, unsigned width, bool ascii, char *buf,
		     size_t buflen);

/* The column names of the sort keys, for the help line and --sort. */
const char *top_sort_name(enum top_sort key);
int top_sort_parse(const char *name); /* -1 if unknown */

#endif
