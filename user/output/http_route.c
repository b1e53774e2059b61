// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "escape.h"
#include "http_route.h"

static void error(struct http_route *r, int status, const char *why)
{
	r->kind = ROUTE_ERROR;
	r->status = status;
	r->why = why;
}

/* A whole decimal number from 1 to max, nothing else; 0 when it is not one. */
static unsigned long whole(const char *s, unsigned long max)
{
	unsigned long v = 0;

	if (!*s || strlen(s) > 10)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return 0;
		v = v * 10 + (unsigned long) (*s - '0');
	}
	return v <= max ? v : 0;
}

void http_route(const char *method, const char *path, const char *pid, const char *seconds,
		struct http_route *r)
{
	memset(r, 0, sizeof(*r));
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return error(r, 405, "only GET and HEAD are answered");
	if (!strcmp(path, "/healthz")) {
		r->kind = ROUTE_HEALTHZ;
	} else if (!strcmp(path, "/debug/pprof/heap") || !strcmp(path, "/debug/pprof/allocs")) {
		/* allocs: Go serves the same profile there, and Alloy scrapes it by default. */
		r->kind = ROUTE_HEAP;
	} else if (!strcmp(path, "/debug/pprof/") || !strcmp(path, "/debug/pprof") ||
		   !strcmp(path, "/")) {
		r->kind = ROUTE_INDEX;
	} else {
		return error(r, 404,
			     "not found: rbmemtrace serves /debug/pprof/heap (and allocs), "
			     "/debug/pprof/ and /healthz");
	}
	if (pid) {
		r->pid = (pid_t) whole(pid, 0x7fffffff);
		if (!r->pid)
			return error(r, 400, "pid: expected a process id (a whole number)");
	}
	if (seconds) {
		r->seconds = (unsigned) whole(seconds, HTTP_MAX_SECONDS);
		if (!r->seconds || r->kind != ROUTE_HEAP)
			return error(
			    r, 400,
			    r->kind != ROUTE_HEAP
				? "seconds: only /debug/pprof/heap takes it"
				: "seconds: expected a whole number of seconds from 1 to 300");
	}
}

int http_parse_listen(const char *arg, struct sockaddr_storage *ss, socklen_t *len, bool *loopback,
		      char *err, size_t n)
{
	char host[64];
	const char *port_s, *colon;
	unsigned long port;
	size_t hlen;

	memset(ss, 0, sizeof(*ss));
	if (arg[0] == '[') {
		const char *close = strchr(arg, ']');

		if (!close || close[1] != ':')
			goto bad;
		hlen = (size_t) (close - arg - 1);
		port_s = close + 2;
		if (hlen >= sizeof(host))
			goto bad;
		memcpy(host, arg + 1, hlen);
		host[hlen] = '\0';
	} else if ((colon = strrchr(arg, ':'))) {
		hlen = (size_t) (colon - arg);
		port_s = colon + 1;
		/* ":6060" means every interface to Go; here it is not a guess we make. */
		if (!hlen || hlen >= sizeof(host) || memchr(arg, ':', hlen))
			goto bad;
		memcpy(host, arg, hlen);
		host[hlen] = '\0';
	} else {
		snprintf(host, sizeof(host), "127.0.0.1");
		port_s = arg;
	}
	port = strcmp(port_s, "0") ? whole(port_s, 65535) : 0;
	if (!port && strcmp(port_s, "0"))
		goto bad;
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *) ss)->sin_addr) == 1) {
		struct sockaddr_in *in = (struct sockaddr_in *) ss;

		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t) port);
		*len = sizeof(*in);
		*loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
		return 0;
	}
	if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *) ss)->sin6_addr) == 1) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t) port);
		*len = sizeof(*in6);
		*loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
		return 0;
	}
bad:
	snprintf(err, n,
		 "invalid --listen %s: expected ADDR:PORT with a numeric address "
		 "(127.0.0.1:6060, [::1]:6060, 0.0.0.0:6060 for every interface) or a PORT alone "
		 "(on 127.0.0.1)",
		 arg);
	return -EINVAL;
}

char *html_escape(const char *s, char *buf, size_t n)
{
	char *safe = malloc(n);
	size_t o = 0, i;

	if (!n)
		return buf;
	buf[0] = '\0';
	if (!safe)
		return buf;
	term_escape(s, safe, n);
	for (i = 0; safe[i]; i++) {
		const char *ent = NULL;
		size_t len;

		switch (safe[i]) {
		case '&':
			ent = "&amp;";
			break;
		case '<':
			ent = "&lt;";
			break;
		case '>':
			ent = "&gt;";
			break;
		case '"':
			ent = "&quot;";
			break;
		case '\'':
			ent = "&#39;";
			break;
		}
		len = ent ? strlen(ent) : 1;
		if (o + len >= n) {
			/* Cut at a whole character: drop a sequence the cut left short. */
			size_t lead = o;

			while (lead > 0 && o - lead < 4 &&
			       ((unsigned char) buf[lead - 1] & 0xc0) == 0x80)
				lead--;
			if (lead > 0 && ((unsigned char) buf[lead - 1] & 0x80)) {
				buf[o] = '\0';
				if (utf8_sequence_len((const unsigned char *) buf + lead - 1) == 0)
					o = lead - 1;
			}
			break;
		}
		if (ent)
			memcpy(buf + o, ent, len);
		else
			buf[o] = safe[i];
		o += len;
	}
	buf[o] = '\0';
	free(safe);
	return buf;
}
