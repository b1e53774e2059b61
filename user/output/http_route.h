/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What rbmemtrace serve answers, decided from a request's method, path and
 * query arguments alone (no state): the routes of http_server.c, the
 * --listen address, and text made safe for an HTML page.  Pure, so every
 * request a client can send is unit-tested here.
 */
#ifndef RBM_HTTP_ROUTE_H
#define RBM_HTTP_ROUTE_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#define HTTP_MAX_SECONDS 300 /* ?seconds=N of a fresh profile, at most */

enum http_route_kind {
	ROUTE_INDEX,   /* GET /debug/pprof/ (and /): the profiles served, as HTML */
	ROUTE_HEAP,    /* GET /debug/pprof/heap[?pid=N][&seconds=N] */
	ROUTE_HEALTHZ, /* GET /healthz */
	ROUTE_ERROR,   /* status and why say what is wrong */
};

struct http_route {
	enum http_route_kind kind;
	pid_t pid;	  /* ?pid=N; 0: every process traced */
	unsigned seconds; /* ?seconds=N: a fresh profile of the next N seconds; 0: the latest */
	int status;	  /* ROUTE_ERROR: 400, 404, 405 */
	const char *why;  /* ROUTE_ERROR: a line for the body */
};

/*
 * The route of a request: method and path as received, pid and seconds the
 * query's values (NULL when absent).  Only GET and HEAD are answered.
 */
void http_route(const char *method, const char *path, const char *pid, const char *seconds,
		struct http_route *r);

/*
 * --listen ADDR:PORT (IPv4, or [IPv6]:PORT; numeric only; port 0 picks
 * one) or PORT alone (127.0.0.1).  0, or -EINVAL with a one-line reason.
 * *loopback says whether the address is one of this host's loopback ones.
 */
int http_parse_listen(const char *arg, struct sockaddr_storage *ss, socklen_t *len, bool *loopback,
		      char *err, size_t n);

/*
 * Copies s into buf (size n, always terminated) safe inside HTML text or a
 * quoted attribute: control and invisible characters as term_escape shows
 * them, then & < > " ' as entities.  Returns buf.
 */
char *html_escape(const char *s, char *buf, size_t n);

struct http_proc_info;
/*
 * The index of /debug/pprof/ (HTML) and the text of /healthz for the
 * processes served, every `every` seconds; their strings escaped.  NULL
 * when out of memory; free the result.
 */
char *http_index_page(const struct http_proc_info *procs, size_t n, double every);
char *http_health_text(const struct http_proc_info *procs, size_t n);

#endif
