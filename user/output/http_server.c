// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbmemtrace serve's HTTP server: libmicrohttpd's polling thread answers
 * from the profiles the tracer's loop published (shared, under a lock), so
 * nothing a client does can stall the trace.  A fresh profile (?seconds=N)
 * is made by the loop (http_fresh.c).  Connections are kept within their
 * bounds by http_limits.c: libmicrohttpd keeps a request's line and headers
 * in a pool of lim.memory bytes (a longer one gets 431 or 414), and the
 * rest (a request's whole time, an address's share) is kept there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "clock.h"
#include "diag.h"
#include "http_route.h"
#include "http_server_impl.h"

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

static enum MHD_Result queue(struct MHD_Connection *conn, unsigned status,
			     struct MHD_Response *resp, const char *type)
{
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

static enum MHD_Result send_text(struct MHD_Connection *conn, unsigned status, const char *type,
				 const char *text)
{
	return queue(
	    conn, status,
	    MHD_create_response_from_buffer(strlen(text), (void *) text, MHD_RESPMEM_MUST_COPY),
	    type);
}

enum MHD_Result http_send_line(struct MHD_Connection *conn, unsigned status, const char *why)
{
	char line[512];

	snprintf(line, sizeof(line), "%s\n", why);
	return send_text(conn, status, "text/plain; charset=utf-8", line);
}

/* A gzipped profile, as Go's net/http/pprof sends one. */
static void profile_headers(struct MHD_Response *resp, const struct http_proc_info *gone)
{
	char note[256];

	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION,
				"attachment; filename=\"heap\"");
	if (gone) {
		snprintf(note, sizeof(note), "PID %d %s: its last profile (period %llu)", gone->pid,
			 gone->state, (unsigned long long) gone->period);
		MHD_add_response_header(resp, "X-Rbmemtrace-Gone", note);
	}
}

/* A fresh profile, made for one request: the response frees it. */
enum MHD_Result http_send_gzip(struct MHD_Connection *conn, void *data, size_t len)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);

	if (!resp) {
		free(data);
		return MHD_NO;
	}
	profile_headers(resp, NULL);
	return queue(conn, MHD_HTTP_OK, resp, "application/octet-stream");
}

static void drop_shared(void *cls)
{
	struct shared_bytes *b = cls;

	if (b && !__atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL))
		free(b);
}

struct blob *http_find_blob(struct http_server *s, pid_t pid)
{
	size_t i;

	for (i = 0; i < s->nblobs; i++)
		if (s->blobs[i].pid == pid)
			return &s->blobs[i];
	return NULL;
}

static enum MHD_Result answer_latest(struct http_server *s, struct MHD_Connection *conn, pid_t pid)
{
	struct MHD_Response *resp;
	struct http_proc_info gone;
	struct shared_bytes *data = NULL;
	struct blob *b;
	bool is_gone = false;
	char why[128];

	pthread_mutex_lock(&s->lock);
	b = http_find_blob(s, pid);
	if (b && b->data) {
		data = b->data;
		__atomic_add_fetch(&data->refs, 1, __ATOMIC_RELAXED);
		is_gone = pid && b->info.gone;
		gone = b->info;
	}
	pthread_mutex_unlock(&s->lock);
	if (data) {
		resp = MHD_create_response_from_buffer_with_free_callback_cls(
		    data->len, data->bytes, drop_shared, data);
		if (!resp) {
			drop_shared(data);
			return MHD_NO;
		}
		profile_headers(resp, is_gone ? &gone : NULL);
		return queue(conn, MHD_HTTP_OK, resp, "application/octet-stream");
	}
	if (pid && !b) {
		snprintf(why, sizeof(why), "PID %d is not traced here (see /debug/pprof/)", pid);
		return http_send_line(conn, MHD_HTTP_NOT_FOUND, why);
	}
	return http_send_line(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
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

/* 401 and a line, nothing of what is served. */
static enum MHD_Result send_unauthorized(struct http_server *s, struct MHD_Connection *conn)
{
	static const char line[] = "401 unauthorized\n";
	struct MHD_Response *resp = MHD_create_response_from_buffer(
	    sizeof(line) - 1, (void *) line, MHD_RESPMEM_PERSISTENT);

	if (resp)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					s->auth.basic ? "Basic realm=\"rbmemtrace\"" : "Bearer");
	pthread_mutex_lock(&s->lock);
	s->stats.unauthorized++;
	pthread_mutex_unlock(&s->lock);
	return queue(conn, MHD_HTTP_UNAUTHORIZED, resp, "text/plain; charset=utf-8");
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
		return http_fresh_finish(s, conn, *req_cls);
	/* The whole request came: no longer a connection to close for room. */
	pthread_mutex_lock(&s->lock);
	http_conn_answering(http_conn_of(conn), now_seconds());
	s->stats.requests++;
	pthread_mutex_unlock(&s->lock);
	http_route(method, url, MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "pid"),
		   MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "seconds"), &r);
	if (!http_auth_check(&s->auth, MHD_lookup_connection_value(
					   conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION))) {
		/* A readiness probe has no token: it learns that the server is up, no more. */
		if (r.kind == ROUTE_HEALTHZ)
			return send_text(conn, MHD_HTTP_OK, "text/plain; charset=utf-8", "ok\n");
		return send_unauthorized(s, conn);
	}
	switch (r.kind) {
	case ROUTE_ERROR:
		return http_send_line(conn, (unsigned) r.status, r.why);
	case ROUTE_INDEX:
	case ROUTE_HEALTHZ:
		return answer_page(s, conn, r.kind == ROUTE_INDEX);
	case ROUTE_HEAP:
		break;
	}
	/* With one process, its pid and "every process" are the same profile. */
	if (r.seconds)
		return http_fresh_start(s, conn, r.pid, r.seconds, req_cls);
	return answer_latest(s, conn, r.pid);
}

static void completed(void *cls, struct MHD_Connection *conn, void **req_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct http_server *s = cls;
	struct fresh *f = *req_cls;

	(void) toe;
	pthread_mutex_lock(&s->lock);
	http_conn_waiting(http_conn_of(conn), now_seconds());
	if (f) {
		http_fresh_completed(s, f);
		*req_cls = NULL;
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
	if (!s->lim.max_per_ip || s->lim.max_per_ip > s->lim.max_clients)
		s->lim.max_per_ip = s->lim.max_clients;
	s->every = every;
	pthread_mutex_init(&s->lock, NULL);
	*out = s;
	return 0;
}

/* libmicrohttpd's complaint about a certificate, kept for the one line said. */
static void keep_log(void *cls, const char *fmt, va_list ap)
{
	char *line = cls;
	size_t len;

	if (line[0])
		return; /* the first says why */
	vsnprintf(line, 256, fmt, ap);
	len = strlen(line);
	while (len && (line[len - 1] == '\n' || line[len - 1] == '.'))
		line[--len] = '\0';
}

/* The certificate and key as libmicrohttpd will take them, tried on a daemon with no socket. */
static int try_tls(struct http_server *s, char *err, size_t n)
{
	char why[256] = "";
	struct MHD_Daemon *d;

	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		snprintf(err, n, "this libmicrohttpd was built without TLS: serve without "
			 "--tls-cert, or behind a TLS proxy");
		return -ENOTSUP;
	}
	d = MHD_start_daemon(MHD_USE_TLS | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ERROR_LOG, 0, NULL,
			     NULL, handle, s, MHD_OPTION_EXTERNAL_LOGGER, keep_log, why,
			     MHD_OPTION_HTTPS_MEM_KEY, s->auth.key_pem, MHD_OPTION_HTTPS_MEM_CERT,
			     s->auth.cert_pem, MHD_OPTION_END);
	if (!d) {
		snprintf(err, n, "the TLS certificate and key were refused: %s",
			 why[0] ? why : "not a PEM certificate and its key");
		return -EINVAL;
	}
	MHD_stop_daemon(d);
	return 0;
}

int http_server_secure(struct http_server *s, struct http_auth *auth, char *err, size_t n)
{
	s->auth = *auth;
	memset(auth, 0, sizeof(*auth));
	return s->auth.cert_pem ? try_tls(s, err, n) : 0;
}

int http_server_start(struct http_server *s, char *err, size_t n)
{
	struct MHD_OptionItem tls[] = {
	    {MHD_OPTION_HTTPS_MEM_KEY, 0, s->auth.key_pem},
	    {MHD_OPTION_HTTPS_MEM_CERT, 0, s->auth.cert_pem},
	    {MHD_OPTION_END, 0, NULL},
	};
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME |
			 MHD_USE_ERROR_LOG;
	int ret = http_watchdog_start(s);

	if (ret) {
		snprintf(err, n, "cannot start the HTTP server's watchdog: %s", strerror(-ret));
		return ret;
	}
	if (s->family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (s->auth.cert_pem)
		flags |= MHD_USE_TLS;
	/*
	 * No MHD_OPTION_PER_IP_CONNECTION_LIMIT: it refuses a newcomer where
	 * http_limits.c closes an idle connection of its address instead.
	 * libmicrohttpd's timeout is of inactivity only; the watchdog bounds
	 * the whole request, and cuts first: theirs, a second later, is a
	 * backstop.
	 */
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, s, MHD_OPTION_LISTEN_SOCKET, s->fd,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) s->lim.timeout_s + 1,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned int) s->lim.max_clients,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) s->lim.memory,
				MHD_OPTION_NOTIFY_COMPLETED, completed, s,
				MHD_OPTION_NOTIFY_CONNECTION, http_conn_notify, s,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s, MHD_OPTION_ARRAY,
				s->auth.cert_pem ? tls : tls + 2, MHD_OPTION_END);
	if (!s->d) {
		pthread_mutex_lock(&s->lock);
		s->stopping = true;
		pthread_mutex_unlock(&s->lock);
		http_watchdog_stop(s);
		snprintf(err, n,
			 "cannot start the HTTP server (libmicrohttpd refused its options)");
		return -EINVAL;
	}
	return 0;
}

int http_server_publish(struct http_server *s, pid_t pid, const void *gz, size_t len,
			const struct http_proc_info *info)
{
	struct shared_bytes *data = malloc(sizeof(*data) + len), *old;
	struct blob *b, *blobs;

	if (!data)
		return -ENOMEM;
	data->refs = 1;
	data->len = len;
	memcpy(data->bytes, gz, len);
	pthread_mutex_lock(&s->lock);
	b = http_find_blob(s, pid);
	if (!b) {
		blobs = realloc(s->blobs, (s->nblobs + 1) * sizeof(*blobs));
		if (!blobs) {
			pthread_mutex_unlock(&s->lock);
			free(data);
			return -ENOMEM;
		}
		s->blobs = blobs;
		b = &s->blobs[s->nblobs++];
		memset(b, 0, sizeof(*b));
		b->pid = pid;
	}
	old = b->data;
	b->data = data;
	if (info)
		b->info = *info;
	pthread_mutex_unlock(&s->lock);
	/* Responses still sending the old one hold it until they end. */
	drop_shared(old);
	return 0;
}

void http_server_stats(struct http_server *s, struct http_stats *out)
{
	pthread_mutex_lock(&s->lock);
	*out = s->stats;
	pthread_mutex_unlock(&s->lock);
}

void http_server_stop(struct http_server *s)
{
	struct MHD_Connection *wake[MAX_FRESH];
	size_t i, nwake;
	int tries;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_mutex_unlock(&s->lock);
	/* No resume of the watchdog's may come once the daemon is gone. */
	http_watchdog_stop(s);
	pthread_mutex_lock(&s->lock);
	nwake = http_fresh_sweep(s, now_seconds(), true, wake);
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
		drop_shared(s->blobs[i].data);
	free(s->blobs);
	http_auth_free(&s->auth);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
