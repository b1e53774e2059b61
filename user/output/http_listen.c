// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * serve's listening socket, made before anything is traced so that a busy
 * port or an address not of this host fails at once, in one line; the
 * HTTP server (http_server.c) takes it over once the targets are attached.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "http_server.h"

static void format_bound(const struct sockaddr_storage *ss, char *out, size_t n)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *) ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(out, n, "[%s]:%u", host, ntohs(in6->sin6_port));
	} else {
		const struct sockaddr_in *in = (const void *) ss;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(out, n, "%s:%u", host, ntohs(in->sin_port));
	}
}

int http_listen_socket(const void *addr, unsigned len, char *bound, size_t boundlen, char *err,
		       size_t n)
{
	const struct sockaddr *sa = addr;
	struct sockaddr_storage got;
	socklen_t glen = sizeof(got);
	int fd, one = 1, ret;

	format_bound(addr, bound, boundlen);
	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, sa, len) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *) &got, &glen)) {
		ret = -errno;
		snprintf(err, n, "cannot listen on %s: %s", bound, strerror(errno));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	/* Port 0 took one: say which. */
	format_bound(&got, bound, boundlen);
	return fd;
}
