// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The HTML report: one self-contained page that opens from disk with no
 * network.  Its script and style are ours (user/output/html/page.js and
 * page.css, made C strings at build time in .output/html_assets.h by the
 * Makefile's sed rule): a small SVG icicle, table and chart need no
 * library, and a page with no third-party code has nothing to pin, audit
 * or update.  The data is JSON in a <script type="application/json">
 * (html_data.c), which the script reads with JSON.parse and puts into the
 * page only through textContent and attribute setters; the page's Content
 * Security Policy allows no network request and no script but its own (by
 * its SHA-256, computed at build time: html_assets.h).
 */
#include <errno.h>
#include <string.h>
#include "html.h"
#include "html_assets.h"
#include "diff_out.h"
#include "html_data.h"

static void page_begin(FILE *out, struct jw *w, const char *kind)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "script-src 'sha256-" HTML_PAGE_JS_SHA256 "'; style-src 'unsafe-inline'\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width\">\n"
	      "<title>rbmemtrace</title>\n<style>\n",
	      out);
	fwrite(html_page_css, 1, sizeof(html_page_css) - 1, out);
	fputs("</style>\n</head>\n<body>\n<noscript>This report is drawn by its script: "
	      "open it in a browser with JavaScript on.</noscript>\n"
	      "<script type=\"application/json\" id=\"rbm-data\">\n",
	      out);
	jw_init(w, out, 0);
	w->html = true;
	jw_object(w, NULL, JW_LINES);
	jw_string(w, "kind", kind);
	jw_string(w, "version", RBMEMTRACE_VERSION);
}

static int page_end(FILE *out, struct jw *w, int err)
{
	jw_end(w);
	fputs("\n</script>\n<script>\n", out);
	fwrite(html_page_js, 1, sizeof(html_page_js) - 1, out);
	fputs("</script>\n</body>\n</html>\n", out);
	return err;
}

int report_write_html(FILE *out, const struct report *r)
{
	struct jw w;

	page_begin(out, &w, r->period.on ? "period" : "report");
	return page_end(out, &w, html_report_members(&w, r));
}

/*
 * The report a model's page draws above its series: the one process's own
 * (with its verdict and retainers, which a summary has not), or the last
 * period when every report is a period of one process (each is cumulative:
 * their sum would count the early objects once per period), or the summary.
 */
static const struct report *page_report(const struct model_view *v)
{
	const struct model *m = v->model;
	const struct report *last = m->procs[0];
	size_t i;

	for (i = 0; i < m->nprocs; i++) {
		const struct report *r = m->procs[i];

		if (!(r->period.on || r->period.read_back) || r->pid != last->pid ||
		    strcmp(r->host, last->host))
			return m->nprocs == 1 ? m->procs[0] : v->summary;
		if (r->period.number > last->period.number)
			last = r;
	}
	return last;
}

int model_write_html(FILE *out, const struct model_view *v)
{
	const struct report *r = page_report(v);
	struct jw w;
	int err;

	page_begin(out, &w, v->model->nprocs > 1 ? "merge" : "report");
	jw_u64(&w, "processes", v->model->nprocs);
	jw_bool(&w, "last_period", r != v->summary && v->model->nprocs > 1);
	err = html_report_members(&w, r);
	if (!err)
		err = html_series_members(&w, v->model);
	return page_end(out, &w, err);
}

int why_write_html(FILE *out, const struct why_report *wr)
{
	struct jw w;

	page_begin(out, &w, "why");
	return page_end(out, &w, html_why_members(&w, wr));
}

int diff_write_html(FILE *out, const struct report_diff *d)
{
	struct jw w;

	page_begin(out, &w, "diff");
	return page_end(out, &w, html_diff_members(&w, d));
}
