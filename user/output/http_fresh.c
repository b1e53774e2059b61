// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A fresh profile (?seconds=N) is made by the tracer's loop, not by the
 * server's thread: the request is suspended, the loop takes it
 * (http_server_take_fresh), and its answer resumes it.  At most
 * lim.max_fresh wait at once (more get 503 at once), so a flood of them
 * costs the loop a bounded number of reports.  Each is answered by its
 * deadline, its seconds plus the request timeout, made or not: the loop
 * can be busy for long, and a waiting client must not wait for ever.  One
 * whose client went away (the connection's end read) is answered at once,
 * and its place freed: an abandoned request must not hold one of the few
 * for its seconds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "clock.h"
#include "http_server_impl.h"

/* A ?seconds=N request: queued for the loop, suspended until it answers. */
enum MHD_Result http_fresh_start(struct http_server *s, struct MHD_Connection *conn, pid_t pid,
				 unsigned seconds, void **req_cls)
{
	struct fresh *f = calloc(1, sizeof(*f));
	size_t i, waiting = 0;
	int slot = -1;

	if (!f)
		return MHD_NO;
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < MAX_FRESH; i++) {
		if (s->fresh[i])
			waiting++;
		else if (slot < 0)
			slot = (int) i;
	}
	if (s->stopping || slot < 0 || waiting >= s->lim.max_fresh) {
		s->stats.fresh_refused++;
		pthread_mutex_unlock(&s->lock);
		free(f);
		return http_send_line(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				      "too many fresh profiles under way: try again, or take the "
				      "latest (no ?seconds)");
	}
	if (pid && !http_find_blob(s, pid)) {
		char why[128];

		pthread_mutex_unlock(&s->lock);
		free(f);
		snprintf(why, sizeof(why), "PID %d is not traced here (see /debug/pprof/)", pid);
		return http_send_line(conn, MHD_HTTP_NOT_FOUND, why);
	}
	f->want = (struct http_fresh){.id = ++s->next_id, .pid = pid, .seconds = seconds};
	f->deadline = now_seconds() + seconds + s->lim.timeout_s;
	f->conn = conn;
	f->c = http_conn_of(conn);
	if (f->c)
		f->c->suspended = true;
	s->fresh[slot] = f;
	*req_cls = f;
	MHD_suspend_connection(conn);
	pthread_mutex_unlock(&s->lock);
	return MHD_YES;
}

/* The same request once it has its answer and its connection is resumed. */
enum MHD_Result http_fresh_finish(struct http_server *s, struct MHD_Connection *conn,
				  struct fresh *f)
{
	enum MHD_Result ret;
	void *body;
	size_t len, i;
	int status;

	pthread_mutex_lock(&s->lock);
	for (i = 0; i < MAX_FRESH; i++)
		if (s->fresh[i] == f)
			s->fresh[i] = NULL;
	body = f->body;
	len = f->len;
	status = f->status;
	f->body = NULL;
	pthread_mutex_unlock(&s->lock);
	if (status == MHD_HTTP_OK)
		return http_send_gzip(conn, body, len);
	ret = http_send_line(conn, (unsigned) status,
			     body ? (const char *) body : "no fresh profile");
	free(body);
	return ret;
}

void http_fresh_completed(struct http_server *s, struct fresh *f)
{
	size_t i;

	for (i = 0; i < MAX_FRESH; i++)
		if (s->fresh[i] == f)
			s->fresh[i] = NULL;
	free(f->body);
	free(f);
}

size_t http_server_take_fresh(struct http_server *s, struct http_fresh *out, size_t max)
{
	size_t i, n = 0;

	pthread_mutex_lock(&s->lock);
	for (i = 0; i < MAX_FRESH && n < max; i++)
		if (s->fresh[i] && !s->fresh[i]->taken) {
			s->fresh[i]->taken = true;
			out[n++] = s->fresh[i]->want;
		}
	pthread_mutex_unlock(&s->lock);
	return n;
}

bool http_server_fresh_wanted(struct http_server *s, uint64_t id)
{
	bool wanted = false;
	size_t i;

	pthread_mutex_lock(&s->lock);
	for (i = 0; i < MAX_FRESH; i++)
		wanted |= s->fresh[i] && s->fresh[i]->want.id == id && !s->fresh[i]->done;
	pthread_mutex_unlock(&s->lock);
	return wanted;
}

/*
 * Hands f its answer, the lock held; the caller resumes the connection it
 * returns once the lock is released.  f stays until its request completes,
 * which cannot happen before the resume.
 */
static struct MHD_Connection *answer_locked(struct fresh *f, int status, void *body, size_t len)
{
	f->done = true;
	f->status = status;
	f->body = body;
	f->len = len;
	if (f->c) {
		f->c->suspended = false;
		f->c->since = now_seconds(); /* sending it has its own time */
	}
	return f->conn;
}

void http_server_answer_fresh(struct http_server *s, uint64_t id, int status, const void *body,
			      size_t len)
{
	struct MHD_Connection *wake = NULL;
	char *copy = malloc(len + 1);
	size_t i;

	/* A profile, or a line saying why there is none: kept terminated either way. */
	if (copy) {
		memcpy(copy, body, len);
		copy[len] = '\0';
	} else {
		status = MHD_HTTP_SERVICE_UNAVAILABLE;
	}
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < MAX_FRESH; i++)
		if (s->fresh[i] && s->fresh[i]->want.id == id && !s->fresh[i]->done) {
			wake = answer_locked(s->fresh[i], status, copy, copy ? len : 0);
			copy = NULL;
		}
	pthread_mutex_unlock(&s->lock);
	if (wake)
		MHD_resume_connection(wake);
	free(copy);
}

/*
 * Whether a suspended connection's client has gone: its end of the stream
 * read (or an error), nothing the server's thread would read while it is
 * suspended.  A request pipelined after this one is data, not an end.
 */
static bool client_gone(const struct fresh *f)
{
	char b;
	ssize_t n;

	if (!f->c || f->c->fd < 0)
		return false;
	n = recv(f->c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

size_t http_fresh_sweep(struct http_server *s, double now, bool all, struct MHD_Connection **wake)
{
	const char *why;
	size_t i, n = 0;

	for (i = 0; i < MAX_FRESH; i++) {
		struct fresh *f = s->fresh[i];

		if (!f || f->done)
			continue;
		if (all) {
			why = "rbmemtrace is stopping";
		} else if (now > f->deadline) {
			why =
			    "the fresh profile was not made in time: take the latest (no ?seconds)";
			s->stats.fresh_late++;
		} else if (client_gone(f)) {
			why = "the client went away";
			s->stats.fresh_abandoned++;
		} else {
			continue;
		}
		wake[n++] = answer_locked(f, MHD_HTTP_SERVICE_UNAVAILABLE, strdup(why), 0);
	}
	return n;
}
