// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbmemtrace serve's HTTP server: libmicrohttpd's polling thread answers
 * from the profiles the tracer's loop published (copied in, under a lock),
 * so nothing a client does can stall the trace.  A fresh profile
 * (?seconds=N) is made by the loop: the request is suspended, the loop
 * takes it (http_server_take_fresh), and its answer resumes it.
 *
 * Bounds: libmicrohttpd keeps a request's line and headers in a pool of
 * lim.memory bytes (a longer one gets 431), closes a connection idle for
 * lim.timeout_s, and takes lim.max_clients at once (lim.max_per_ip from one
 * address); past that it closes the new one.  A client that trickles its
 * headers is never idle, so the watchdog also cuts any connection whose
 * request has not been answered lim.timeout_s after it began (a fresh one:
 * after its profile is ready).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "diag.h"
#include "http_route.h"
#include "http_server.h"

#define MAX_FRESH 16

/* A published profile: pid 0 is every process's. */
struct blob {
	pid_t pid;
	void *data;
	size_t len;
	struct http_proc_info info;
};

/* A ?seconds=N request, from its arrival to its answer. */
struct fresh {
	struct http_fresh want;
	struct MHD_Connection *conn;
	struct conn *c;
	bool taken, done;
	int status;
	void *body;
	size_t len;
};

/* A connection, for the watchdog. */
struct conn {
	int fd;
	double since; /* when its current request began (or its profile was ready) */
	bool suspended, cut;
	struct conn *next, **prev;
};

struct http_server {
	pthread_mutex_t lock;
	struct MHD_Daemon *d;
	int fd;
	int family;
	struct http_limits lim;
	double every;
	struct blob *blobs;
	size_t nblobs;
	struct fresh *fresh[MAX_FRESH];
	uint64_t next_id;
	struct conn *conns;
	bool stopping;
};

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[256];
	size_t n;

	(void) cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = '\0';
	rbm_info("http: %s", line);
}

static enum MHD_Result send_text(struct MHD_Connection *conn, unsigned status, const char *type,
				 const char *text)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(strlen(text), (void *) text, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result send_line(struct MHD_Connection *conn, unsigned status, const char *why)
{
	char line[512];

	snprintf(line, sizeof(line), "%s\n", why);
	return send_text(conn, status, "text/plain; charset=utf-8", line);
}

/* A gzipped profile, as Go's net/http/pprof sends one. */
static enum MHD_Result send_profile(struct MHD_Connection *conn, void *data, size_t len,
				    const struct http_proc_info *gone)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;
	char note[256];

	if (!resp) {
		free(data);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION,
				"attachment; filename=\"heap\"");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (gone) {
		snprintf(note, sizeof(note), "PID %d %s: its last profile (period %llu)", gone->pid,
			 gone->state, (unsigned long long) gone->period);
		MHD_add_response_header(resp, "X-Rbmemtrace-Gone", note);
	}
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

static struct blob *find_blob(struct http_server *s, pid_t pid)
{
	size_t i;

	for (i = 0; i < s->nblobs; i++)
		if (s->blobs[i].pid == pid)
			return &s->blobs[i];
	return NULL;
}

static enum MHD_Result answer_latest(struct http_server *s, struct MHD_Connection *conn, pid_t pid)
{
	struct http_proc_info gone;
	struct blob *b;
	void *copy = NULL;
	size_t len = 0;
	bool is_gone = false;
	char why[128];

	pthread_mutex_lock(&s->lock);
	b = find_blob(s, pid);
	if (b && b->data) {
		copy = malloc(b->len ? b->len : 1);
		if (copy)
			memcpy(copy, b->data, b->len);
		len = b->len;
		is_gone = pid && b->info.gone;
		gone = b->info;
	}
	pthread_mutex_unlock(&s->lock);
	if (copy)
		return send_profile(conn, copy, len, is_gone ? &gone : NULL);
	if (pid && !b) {
		snprintf(why, sizeof(why), "PID %d is not traced here (see /debug/pprof/)", pid);
		return send_line(conn, MHD_HTTP_NOT_FOUND, why);
	}
	return send_line(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
			 "no profile yet: the first is made as the process is attached");
}

/* What the index and /healthz show: a copy of every process's, taken under the lock. */
static size_t copy_infos(struct http_server *s, struct http_proc_info **out)
{
	size_t i, n = 0;

	pthread_mutex_lock(&s->lock);
	*out = calloc(s->nblobs + 1, sizeof(**out));
	for (i = 0; *out && i < s->nblobs; i++)
		if (s->blobs[i].pid)
			(*out)[n++] = s->blobs[i].info;
	pthread_mutex_unlock(&s->lock);
	return n;
}

static enum MHD_Result answer_page(struct http_server *s, struct MHD_Connection *conn, bool index)
{
	struct http_proc_info *infos;
	size_t n = copy_infos(s, &infos);
	char *page =
	    infos ? (index ? http_index_page(infos, n, s->every) : http_health_text(infos, n))
		  : NULL;
	enum MHD_Result ret = MHD_NO;

	if (page)
		ret = send_text(conn, MHD_HTTP_OK,
				index ? "text/html; charset=utf-8" : "text/plain; charset=utf-8",
				page);
	free(page);
	free(infos);
	return ret;
}

static struct conn *conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* A ?seconds=N request: queued for the loop, suspended until it answers. */
static enum MHD_Result start_fresh(struct http_server *s, struct MHD_Connection *conn,
				   const struct http_route *r, void **req_cls)
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
		pthread_mutex_unlock(&s->lock);
		free(f);
		return send_line(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				 "too many fresh profiles under way: try again, or take the latest "
				 "(no ?seconds)");
	}
	if (r->pid && !find_blob(s, r->pid)) {
		char why[128];

		pthread_mutex_unlock(&s->lock);
		free(f);
		snprintf(why, sizeof(why), "PID %d is not traced here (see /debug/pprof/)", r->pid);
		return send_line(conn, MHD_HTTP_NOT_FOUND, why);
	}
	f->want = (struct http_fresh){.id = ++s->next_id, .pid = r->pid, .seconds = r->seconds};
	f->conn = conn;
	f->c = conn_of(conn);
	if (f->c)
		f->c->suspended = true;
	s->fresh[slot] = f;
	*req_cls = f;
	MHD_suspend_connection(conn);
	pthread_mutex_unlock(&s->lock);
	return MHD_YES;
}

/* The same request once the loop answered it and resumed the connection. */
static enum MHD_Result finish_fresh(struct http_server *s, struct MHD_Connection *conn,
				    struct fresh *f)
{
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
		return send_profile(conn, body, len, NULL);
	{
		enum MHD_Result ret = send_line(conn, (unsigned) status,
						body ? (const char *) body : "no fresh profile");

		free(body);
		return ret;
	}
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **req_cls)
{
	struct http_server *s = cls;
	struct http_route r;

	(void) version;
	(void) upload_data;
	(void) upload_data_size;
	if (*req_cls)
		return finish_fresh(s, conn, *req_cls);
	http_route(method, url, MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "pid"),
		   MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "seconds"), &r);
	switch (r.kind) {
	case ROUTE_ERROR:
		return send_line(conn, (unsigned) r.status, r.why);
	case ROUTE_INDEX:
	case ROUTE_HEALTHZ:
		return answer_page(s, conn, r.kind == ROUTE_INDEX);
	case ROUTE_HEAP:
		break;
	}
	/* With one process, its pid and "every process" are the same profile. */
	if (r.seconds)
		return start_fresh(s, conn, &r, req_cls);
	return answer_latest(s, conn, r.pid);
}

static void completed(void *cls, struct MHD_Connection *conn, void **req_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct http_server *s = cls;
	struct fresh *f = *req_cls;
	struct conn *c = conn_of(conn);
	size_t i;

	(void) toe;
	pthread_mutex_lock(&s->lock);
	if (c) /* the next request on this connection has its own time */
		c->since = mono();
	if (f) {
		for (i = 0; i < MAX_FRESH; i++)
			if (s->fresh[i] == f)
				s->fresh[i] = NULL;
		free(f->body);
		free(f);
		*req_cls = NULL;
	}
	pthread_mutex_unlock(&s->lock);
}

static void notify(void *cls, struct MHD_Connection *conn, void **socket_context,
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
			c->since = mono();
			c->next = s->conns;
			c->prev = &s->conns;
			if (s->conns)
				s->conns->prev = &c->next;
			s->conns = c;
		}
		*socket_context = c;
	} else if (c) {
		*c->prev = c->next;
		if (c->next)
			c->next->prev = c->prev;
		free(c);
		*socket_context = NULL;
	}
	pthread_mutex_unlock(&s->lock);
}

void http_server_watchdog(struct http_server *s)
{
	double now = mono();
	struct conn *c;

	pthread_mutex_lock(&s->lock);
	for (c = s->conns; c; c = c->next)
		if (!c->suspended && !c->cut && c->fd >= 0 && now - c->since > s->lim.timeout_s) {
			/* The server's thread sees the end of the stream and closes it. */
			shutdown(c->fd, SHUT_RDWR);
			c->cut = true;
		}
	pthread_mutex_unlock(&s->lock);
}

int http_server_open(struct http_server **out, const void *addr, unsigned len,
		     const struct http_limits *lim, double every, char *bound, size_t boundlen,
		     char *err, size_t n)
{
	struct http_server *s = calloc(1, sizeof(*s));

	if (!s) {
		snprintf(err, n, "out of memory");
		return -ENOMEM;
	}
	s->fd = http_listen_socket(addr, len, bound, boundlen, err, n);
	if (s->fd < 0) {
		int ret = s->fd;

		free(s);
		return ret;
	}
	s->family = ((const struct sockaddr *) addr)->sa_family;
	s->lim = *lim;
	if (s->lim.max_fresh > MAX_FRESH)
		s->lim.max_fresh = MAX_FRESH;
	s->every = every;
	pthread_mutex_init(&s->lock, NULL);
	*out = s;
	return 0;
}

int http_server_start(struct http_server *s, char *err, size_t n)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME |
			 MHD_USE_ERROR_LOG;

	if (s->family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->d = MHD_start_daemon(
	    flags, 0, NULL, NULL, handle, s, MHD_OPTION_LISTEN_SOCKET, s->fd,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) s->lim.timeout_s,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int) s->lim.max_clients,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int) s->lim.max_per_ip,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) s->lim.memory, MHD_OPTION_NOTIFY_COMPLETED,
	    completed, s, MHD_OPTION_NOTIFY_CONNECTION, notify, s, MHD_OPTION_EXTERNAL_LOGGER,
	    mhd_log, s, MHD_OPTION_END);
	if (!s->d) {
		snprintf(err, n,
			 "cannot start the HTTP server (libmicrohttpd refused its options)");
		return -EINVAL;
	}
	return 0;
}

int http_server_publish(struct http_server *s, pid_t pid, const void *gz, size_t len,
			const struct http_proc_info *info)
{
	void *copy = malloc(len ? len : 1);
	struct blob *b, *blobs;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, gz, len);
	pthread_mutex_lock(&s->lock);
	b = find_blob(s, pid);
	if (!b) {
		blobs = realloc(s->blobs, (s->nblobs + 1) * sizeof(*blobs));
		if (!blobs) {
			pthread_mutex_unlock(&s->lock);
			free(copy);
			return -ENOMEM;
		}
		s->blobs = blobs;
		b = &s->blobs[s->nblobs++];
		memset(b, 0, sizeof(*b));
		b->pid = pid;
	}
	free(b->data);
	b->data = copy;
	b->len = len;
	if (info)
		b->info = *info;
	pthread_mutex_unlock(&s->lock);
	return 0;
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

/*
 * Hands f its answer, the lock held; the caller resumes the connection it
 * returns once the lock is released (libmicrohttpd takes its own lock to
 * resume, and its thread may be waiting for ours in a callback).  f stays
 * until its request completes, which cannot happen before the resume.
 */
static struct MHD_Connection *answer_locked(struct fresh *f, int status, void *body, size_t len)
{
	f->done = true;
	f->status = status;
	f->body = body;
	f->len = len;
	if (f->c) {
		f->c->suspended = false;
		f->c->since = mono(); /* sending it has its own time */
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

void http_server_stop(struct http_server *s)
{
	size_t i;
	int tries;

	if (!s)
		return;
	struct MHD_Connection *wake[MAX_FRESH];
	size_t nwake = 0;

	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	for (i = 0; i < MAX_FRESH; i++)
		if (s->fresh[i] && !s->fresh[i]->done)
			wake[nwake++] = answer_locked(s->fresh[i], MHD_HTTP_SERVICE_UNAVAILABLE,
						      strdup("rbmemtrace is stopping"), 0);
	pthread_mutex_unlock(&s->lock);
	for (i = 0; i < nwake; i++)
		MHD_resume_connection(wake[i]);
	/* Resumed connections are answered by the thread: a moment for it, bounded. */
	for (tries = 0; tries < 50; tries++) {
		bool waiting = false;

		pthread_mutex_lock(&s->lock);
		for (i = 0; i < MAX_FRESH; i++)
			waiting |= s->fresh[i] != NULL;
		pthread_mutex_unlock(&s->lock);
		if (!waiting || !s->d)
			break;
		usleep(10000);
	}
	if (s->d)
		MHD_stop_daemon(s->d);
	else
		close(s->fd);
	for (i = 0; i < s->nblobs; i++)
		free(s->blobs[i].data);
	free(s->blobs);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
