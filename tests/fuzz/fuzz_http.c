// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * serve's handling of what a client sends (output/http_*.c).  The first
 * byte chooses: even, the pure parts on pieces cut at NULs (method, path,
 * ?pid=, ?seconds=, a --listen argument, a process's command as the index
 * page and /healthz show it); odd, the rest of the input is sent as it is
 * to a live server on 127.0.0.1 (libmicrohttpd parses it; ours routes it,
 * reads its query, answers from the profiles published here, or as the
 * loop would answer a fresh ?seconds=N request), and its answer is read
 * to the end; with bit 2 set the client half-closes at once.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <time.h>
#include "fuzz.h"
#include "http_route.h"
#include "http_server.h"
#include "http_server_impl.h"

static struct http_server *server;
static struct sockaddr_in addr;

static void pure(const uint8_t *data, size_t size)
{
	char *method = fuzz_next(&data, &size, '\0'), *path = fuzz_next(&data, &size, '\0');
	char *pid = fuzz_next(&data, &size, '\0'), *seconds = fuzz_next(&data, &size, '\0');
	char *listen = fuzz_next(&data, &size, '\0'), *command = fuzz_next(&data, &size, '\0');
	struct http_proc_info info = {.pid = 7, .state = "running"};
	struct sockaddr_storage ss;
	struct http_route r;
	char err[512], html[128];
	socklen_t len;
	bool loopback;

	http_route(method, path ? path : "/", pid, seconds, &r);
	if (r.kind == ROUTE_ERROR && (!r.why || r.status < 400))
		abort();
	if (listen)
		http_parse_listen(listen, &ss, &len, &loopback, err, sizeof(err));
	if (command) {
		snprintf(info.command, sizeof(info.command), "%s", command);
		snprintf(info.ruby_version, sizeof(info.ruby_version), "%s", command);
		html_escape(command, html, sizeof(html));
		html_escape(command, html, 7);
		free(http_index_page(&info, 1, 10));
		free(http_health_text(&info, 1));
	}
	free(method);
	free(path);
	free(pid);
	free(seconds);
	free(listen);
	free(command);
}

static void start(void)
{
	struct http_limits lim = {.timeout_s = 2, .max_clients = 8, .max_per_ip = 8,
				  .max_fresh = 4, .memory = 16384};
	struct http_proc_info info = {.pid = 7, .command = "ruby <b>", .state = "running"};
	struct sockaddr_in any = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	char bound[64], err[256];
	socklen_t len = sizeof(addr);

	if (http_server_open(&server, &any, sizeof(any), &lim, 10, bound, sizeof(bound), err,
			     sizeof(err)) ||
	    http_server_start(server, err, sizeof(err))) {
		fprintf(stderr, "fuzz_http: %s\n", err);
		abort();
	}
	http_server_publish(server, 0, "\x1f\x8b", 2, &info);
	http_server_publish(server, 7, "\x1f\x8b", 2, &info);
	if (getsockname(server->fd, (struct sockaddr *) &addr, &len))
		abort();
}

/* What the loop does for a fresh request: answers it, made or not. */
static void answer_fresh(void)
{
	struct http_fresh f[8];
	size_t i, n = http_server_take_fresh(server, f, 8);

	for (i = 0; i < n; i++)
		http_server_answer_fresh(server, f[i].id, i % 2 ? 503 : 200, "\x1f\x8b", 2);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * early: the client half-closes at once (a whole request is answered, or
 * a partial one dropped, at once); else only after 20 ms with no answer,
 * so that a fresh request is answered to a client still there.
 */
static void live(const uint8_t *data, size_t size, bool early)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), tries;
	double deadline = now() + 3;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	bool answered = false;
	char buf[4096];
	ssize_t n;

	if (fd < 0 || connect(fd, (struct sockaddr *) &addr, sizeof(addr)))
		abort();
	if (size && send(fd, data, size, MSG_NOSIGNAL) < 0)
		goto out;
	/*
	 * The server's own timeout (2 s) ends what never completes; 3 s of the
	 * clock is its backstop, however long a niced run waits for a CPU.
	 */
	for (tries = 0; now() < deadline; tries++) {
		if (tries == (early ? 0 : 2) && !answered)
			shutdown(fd, SHUT_WR);
		answer_fresh();
		if (poll(&p, 1, 10) != 1)
			continue;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			break;
		answered = true;
	}
out:
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	if (!(data[0] & 1))
		return pure(data + 1, size - 1), 0;
	if (!server)
		start();
	live(data + 1, size - 1, data[0] & 2);
	return 0;
}
