// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbmemtrace serve's connections kept within their bounds, whatever a
 * client does.  libmicrohttpd alone does not hold them:
 *
 * - its timeout is of inactivity: every byte received resets it, so a
 *   client that sends a byte a second (slowloris) would hold its
 *   connection for ever.  Here a connection has lim.timeout_s from its
 *   opening (or its last answer) to send a whole request, and as long again
 *   for its answer to be taken; past that it is shut down.
 * - its per-address limit refuses a new connection while an address holds
 *   its share, and its global limit stops accepting while the server is
 *   full.  On loopback every client has the one address 127.0.0.1: sixteen
 *   idle connections of an attacker there, reopened as soon as they are
 *   cut, would refuse the scraper on the same host for good.  So the share
 *   is kept here instead: a connection that finds its address (or the
 *   server) full closes the connection that has waited longest without
 *   sending a whole request.  An attacker's idle and trickling connections
 *   are those; a client that sends its request at once is read within a
 *   turn of the server's thread, and answered.  Only connections being
 *   answered are never closed for room: a newcomer that finds its address
 *   full of them is refused, and a full server accepts again as one ends
 *   (each within its time).
 *
 * The watchdog that cuts connections past their time, and answers fresh
 * profiles past their deadline (or whose client left), runs on a thread
 * of its own: the tracer's loop can be busy for long (naming many new call
 * paths, attaching a process) and must not be what frees a connection.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include "clock.h"
#include "http_server_impl.h"

#define WATCH_EVERY_MS 250

struct conn *http_conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

static void addr_of(struct MHD_Connection *conn, struct conn_addr *a)
{
	static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	memset(a, 0, sizeof(*a));
	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *) sa;

		a->family = AF_INET;
		a->len = 4;
		memcpy(a->bytes, &in->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *) sa;
		const unsigned char *b = in6->sin6_addr.s6_addr;

		if (!memcmp(b, v4mapped, sizeof(v4mapped))) {
			a->family = AF_INET;
			a->len = 4;
			memcpy(a->bytes, b + 12, 4);
		} else {
			a->family = AF_INET6;
			a->len = 8;
			memcpy(a->bytes, b, 8);
		}
	}
}

static bool same_addr(const struct conn_addr *a, const struct conn_addr *b)
{
	return a->family == b->family && a->len == b->len && !memcmp(a->bytes, b->bytes, a->len);
}

/* The server's thread sees the end of the stream at its next look, and closes it. */
static void cut(struct conn *c)
{
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
	c->cut = true;
}

/*
 * The connection to close for room: of c's address (or of any, when
 * any_addr) the one that has waited longest for a whole request, never c.
 */
static struct conn *oldest_waiting(struct http_server *s, const struct conn *c, bool any_addr)
{
	struct conn *o, *best = NULL;

	for (o = s->conns; o; o = o->next)
		if (o != c && !o->cut && !o->answering && !o->suspended &&
		    (any_addr || same_addr(&o->addr, &c->addr)) &&
		    (!best || o->since < best->since))
			best = o;
	return best;
}

/* The lock held: a new connection c makes room for itself, or is refused. */
static void admit(struct http_server *s, struct conn *c)
{
	size_t all = 0, mine = 0;
	struct conn *o, *victim;

	for (o = s->conns; o; o = o->next) {
		if (o->cut)
			continue;
		all++;
		mine += same_addr(&o->addr, &c->addr);
	}
	if (mine > s->lim.max_per_ip) {
		victim = oldest_waiting(s, c, false);
		if (!victim) {
			cut(c);
			s->stats.refused++;
			return;
		}
		cut(victim);
		s->stats.evicted++;
		all--;
	}
	/*
	 * libmicrohttpd stops accepting once max_clients are open: one is
	 * closed as the last slot fills, so that the next client is taken.
	 */
	if (all >= s->lim.max_clients && (victim = oldest_waiting(s, c, true))) {
		cut(victim);
		s->stats.evicted++;
	}
}

void http_conn_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		      enum MHD_ConnectionNotificationCode toe)
{
	struct http_server *s = cls;
	struct conn *c = *socket_context;

	pthread_mutex_lock(&s->lock);
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
		    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

		c = calloc(1, sizeof(*c));
		if (c) {
			c->fd = ci ? ci->connect_fd : -1;
			addr_of(conn, &c->addr);
			c->since = now_seconds();
			c->next = s->conns;
			c->prev = &s->conns;
			if (s->conns)
				s->conns->prev = &c->next;
			s->conns = c;
			s->stats.connections++;
			admit(s, c);
			pthread_cond_signal(&s->wake);
		}
		*socket_context = c;
	} else if (c) {
		size_t i;

		/* Its fresh request completed before: never left pointing here. */
		for (i = 0; i < MAX_FRESH; i++)
			if (s->fresh[i] && s->fresh[i]->c == c)
				s->fresh[i]->c = NULL;
		*c->prev = c->next;
		if (c->next)
			c->next->prev = c->prev;
		free(c);
		*socket_context = NULL;
	}
	pthread_mutex_unlock(&s->lock);
}

void http_conn_answering(struct conn *c, double now)
{
	if (c && !c->answering) {
		c->answering = true;
		c->since = now; /* its answer has its own time */
	}
}

void http_conn_waiting(struct conn *c, double now)
{
	if (c) {
		c->answering = false;
		c->since = now; /* the next request has its own time */
	}
}

/* The lock held: cuts the connections past their time; whether any is left to watch. */
static bool cut_late(struct http_server *s, double now)
{
	struct conn *c;
	bool any = false;

	for (c = s->conns; c; c = c->next) {
		if (c->cut)
			continue;
		any = true;
		if (!c->suspended && now - c->since > s->lim.timeout_s) {
			cut(c);
			s->stats.timed_out++;
		}
	}
	return any;
}

static void *watch(void *arg)
{
	struct http_server *s = arg;
	struct MHD_Connection *wake[MAX_FRESH];
	struct timespec until;
	size_t i, n;
	bool any;

	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		double now = now_seconds();

		any = cut_late(s, now);
		n = http_fresh_sweep(s, now, false, wake);
		if (n) {
			pthread_mutex_unlock(&s->lock);
			for (i = 0; i < n; i++)
				MHD_resume_connection(wake[i]);
			pthread_mutex_lock(&s->lock);
			continue;
		}
		if (!any) { /* nothing to watch: asleep until a connection comes */
			pthread_cond_wait(&s->wake, &s->lock);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += WATCH_EVERY_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&s->wake, &s->lock, &until);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int http_watchdog_start(struct http_server *s)
{
	pthread_condattr_t ca;
	int err;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	err = pthread_cond_init(&s->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (err)
		return -err;
	err = pthread_create(&s->watchdog, NULL, watch, s);
	if (err) {
		pthread_cond_destroy(&s->wake);
		return -err;
	}
	s->watching = true;
	return 0;
}

/* Ends the watchdog: s->stopping is set (under the lock) before. */
void http_watchdog_stop(struct http_server *s)
{
	if (!s->watching)
		return;
	pthread_mutex_lock(&s->lock);
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->watchdog, NULL);
	pthread_cond_destroy(&s->wake);
	s->watching = false;
}
