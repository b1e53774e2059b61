// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What rbmemtrace serve answers (output/http_route.c, http_pages.c): every
 * route and bad request, --listen's forms, and names from the target made
 * safe in its pages.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include "http_route.h"
#include "http_server.h"

Test(http_route, the_routes)
{
	struct http_route r;

	http_route("GET", "/debug/pprof/heap", NULL, NULL, &r);
	cr_expect_eq(r.kind, ROUTE_HEAP);
	cr_expect_eq(r.pid, 0, "no pid: every process");
	cr_expect_eq(r.seconds, 0, "no seconds: the latest period");
	http_route("HEAD", "/debug/pprof/heap", "4242", "30", &r);
	cr_expect_eq(r.kind, ROUTE_HEAP);
	cr_expect_eq(r.pid, 4242);
	cr_expect_eq(r.seconds, 30);
	http_route("GET", "/debug/pprof/allocs", NULL, NULL, &r);
	cr_expect_eq(r.kind, ROUTE_HEAP, "allocs: the same profile, as Go serves it");
	http_route("GET", "/debug/pprof/", NULL, NULL, &r);
	cr_expect_eq(r.kind, ROUTE_INDEX);
	http_route("GET", "/debug/pprof", NULL, NULL, &r);
	cr_expect_eq(r.kind, ROUTE_INDEX);
	http_route("GET", "/healthz", NULL, NULL, &r);
	cr_expect_eq(r.kind, ROUTE_HEALTHZ);
}

Test(http_route, what_is_refused)
{
	static const struct {
		const char *method, *path, *pid, *seconds;
		int status;
	} bad[] = {
	    {"POST", "/debug/pprof/heap", NULL, NULL, 405},
	    {"DELETE", "/healthz", NULL, NULL, 405},
	    {"GET", "/debug/pprof/profile", NULL, NULL, 404},
	    {"GET", "/debug/pprof/heap/../../etc/passwd", NULL, NULL, 404},
	    {"GET", "/debug/pprof/cmdline", NULL, NULL, 404},
	    {"GET", "/nope", NULL, NULL, 404},
	    {"GET", "/debug/pprof/heap", "-1", NULL, 400},
	    {"GET", "/debug/pprof/heap", "12ab", NULL, 400},
	    {"GET", "/debug/pprof/heap", "", NULL, 400},
	    {"GET", "/debug/pprof/heap", "99999999999", NULL, 400},
	    {"GET", "/debug/pprof/heap", NULL, "0", 400},
	    {"GET", "/debug/pprof/heap", NULL, "301", 400},
	    {"GET", "/debug/pprof/heap", NULL, "1e3", 400},
	    {"GET", "/healthz", NULL, "5", 400},
	};
	struct http_route r;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		http_route(bad[i].method, bad[i].path, bad[i].pid, bad[i].seconds, &r);
		cr_expect_eq(r.kind, ROUTE_ERROR, "%s %s", bad[i].method, bad[i].path);
		cr_expect_eq(r.status, bad[i].status, "%s %s pid=%s seconds=%s: %d", bad[i].method,
			     bad[i].path, bad[i].pid, bad[i].seconds, r.status);
		cr_expect(r.why && *r.why);
	}
}

static void listen_ok(const char *arg, int family, const char *addr, unsigned port, bool loopback)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char err[256], text[64];
	bool lo;

	cr_assert_eq(http_parse_listen(arg, &ss, &len, &lo, err, sizeof(err)), 0, "%s: %s", arg,
		     err);
	cr_expect_eq(ss.ss_family, family, "%s", arg);
	if (family == AF_INET) {
		struct sockaddr_in *in = (void *) &ss;

		inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
		cr_expect_eq(ntohs(in->sin_port), port, "%s", arg);
	} else {
		struct sockaddr_in6 *in6 = (void *) &ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
		cr_expect_eq(ntohs(in6->sin6_port), port, "%s", arg);
	}
	cr_expect_str_eq(text, addr, "%s", arg);
	cr_expect_eq(lo, loopback, "%s: loopback", arg);
}

Test(http_route, listen_addresses)
{
	const char *bad[] = {
	    ":6060",	 "localhost:6060", "127.0.0.1",	    "127.0.0.1:", "1.2.3.4:65536",
	    "[::1]6060", "::1:6060",	   "127.0.0.1:60x", "",		  "[::1]:"};
	struct sockaddr_storage ss;
	socklen_t len;
	char err[256];
	bool lo;
	size_t i;

	listen_ok("127.0.0.1:6060", AF_INET, "127.0.0.1", 6060, true);
	listen_ok("6061", AF_INET, "127.0.0.1", 6061, true);
	listen_ok("127.0.0.1:0", AF_INET, "127.0.0.1", 0, true);
	listen_ok("127.0.0.2:80", AF_INET, "127.0.0.2", 80, true);
	listen_ok("0.0.0.0:6060", AF_INET, "0.0.0.0", 6060, false);
	listen_ok("10.1.2.3:6060", AF_INET, "10.1.2.3", 6060, false);
	listen_ok("[::1]:6060", AF_INET6, "::1", 6060, true);
	listen_ok("[::]:6060", AF_INET6, "::", 6060, false);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(http_parse_listen(bad[i], &ss, &len, &lo, err, sizeof(err)), -EINVAL,
			     "%s", bad[i]);
		cr_expect(strstr(err, "--listen"), "%s", err);
	}
}

Test(http_route, html_escape_of_hostile_names)
{
	char buf[64], small[8];

	cr_expect_str_eq(html_escape("<script>alert('x')</script>", buf, sizeof(buf)),
			 "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
	cr_expect_str_eq(html_escape("a&b \"c\"", buf, sizeof(buf)), "a&amp;b &quot;c&quot;");
	cr_expect_str_eq(html_escape("ctl\x1b[31m", buf, sizeof(buf)), "ctl\\x1b[31m");
	html_escape("<<<<<<", small, sizeof(small));
	cr_expect_str_eq(small, "&lt;", "an entity is never cut");
	html_escape("ab\xc3\xa9\xc3\xa9", small, 5);
	cr_expect_str_eq(small, "ab\xc3\xa9", "nor a character");
}

Test(http_route, pages_escape_what_the_target_names)
{
	struct http_proc_info p = {.pid = 42, .period = 3};
	char *page, *health;

	strcpy(p.command, "<img src=x onerror=alert(1)>");
	strcpy(p.ruby_version, "3.1.2");
	strcpy(p.state, "running");
	page = http_index_page(&p, 1, 15);
	cr_assert_not_null(page);
	cr_expect(strstr(page, "heap?pid=42"));
	cr_expect_null(strstr(page, "<img"), "the name is escaped: %s", page);
	cr_expect(strstr(page, "&lt;img src=x onerror=alert(1)&gt;"));
	cr_expect(strstr(page, "period 3"));
	health = http_health_text(&p, 1);
	cr_expect_str_eq(health, "ok\nPID 42: running\n");
	free(page);
	free(health);
}
