/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The inside of rbmemtrace serve's HTTP server, shared by its three files
 * and by nothing else: http_server.c answers requests, http_fresh.c carries
 * a ?seconds=N request from its arrival to the loop's answer, and
 * http_limits.c keeps every connection within its bounds (its address's
 * share, its time) on a thread of its own.  One lock, s->lock, guards all
 * of it; libmicrohttpd's own calls (resuming a connection) are made
 * without it, since its thread may be waiting for ours in a callback.
 */
#ifndef RBM_HTTP_SERVER_IMPL_H
#define RBM_HTTP_SERVER_IMPL_H
#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include "http_auth.h"
#include "http_server.h"

#define MAX_FRESH 16

/*
 * A published profile's bytes, shared by every response that sends them:
 * a hundred clients reading one profile hold one copy, not a hundred.
 */
struct shared_bytes {
	unsigned refs; /* the blob's, and one per response still sending them (atomic) */
	size_t len;
	unsigned char bytes[];
};

/* A published profile: pid 0 is every process's. */
struct blob {
	pid_t pid;
	struct shared_bytes *data;
	struct http_proc_info info;
};

/* A ?seconds=N request, from its arrival to its answer. */
struct fresh {
	struct http_fresh want;
	struct MHD_Connection *conn;
	struct conn *c;
	double deadline; /* answered by then, made or not: seconds plus the timeout */
	bool taken, done;
	int status;
	void *body;
	size_t len;
};

/* A client address as limited: an IPv4 address, or an IPv6 /64 (a host often has a whole one). */
struct conn_addr {
	unsigned char family, len;
	unsigned char bytes[8];
};

/* A connection, as http_limits.c follows it. */
struct conn {
	int fd;
	struct conn_addr addr;
	double since;	/* when it began to wait for a request, or to be answered */
	bool answering; /* a whole request came and is being answered */
	bool suspended; /* its fresh profile is being made: the fresh's deadline bounds it */
	bool cut;	/* shut down here: libmicrohttpd closes it at its next look */
	struct conn *next, **prev;
};

struct http_server {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* the watchdog's: a connection came, or the server stops */
	pthread_t watchdog;
	bool watching;
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
	struct http_stats stats;
	struct http_auth auth; /* who may read: none on loopback; TLS if a certificate */
	bool stopping;
};

/* http_server.c: the answer of a request as a line of text. */
enum MHD_Result http_send_line(struct MHD_Connection *conn, unsigned status, const char *why);
enum MHD_Result http_send_gzip(struct MHD_Connection *conn, void *data, size_t len);
struct blob *http_find_blob(struct http_server *s, pid_t pid);

/* http_fresh.c */
enum MHD_Result http_fresh_start(struct http_server *s, struct MHD_Connection *conn, pid_t pid,
				 unsigned seconds, void **req_cls);
enum MHD_Result http_fresh_finish(struct http_server *s, struct MHD_Connection *conn,
				  struct fresh *f);
/* Its request completed (answered, or its connection closed): f freed, its slot emptied. */
void http_fresh_completed(struct http_server *s, struct fresh *f);
/*
 * The lock held: answers the fresh requests past their deadline, and those
 * whose client went away; their connections go into wake (at most
 * MAX_FRESH), for the caller to resume once the lock is released.  all:
 * every one still waiting (the server stops).
 */
size_t http_fresh_sweep(struct http_server *s, double now, bool all, struct MHD_Connection **wake);

/* http_limits.c */
struct conn *http_conn_of(struct MHD_Connection *conn);
void http_conn_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		      enum MHD_ConnectionNotificationCode toe);
/* The lock held: c's whole request came (answering), or its answer was sent (waiting). */
void http_conn_answering(struct conn *c, double now);
void http_conn_waiting(struct conn *c, double now);
int http_watchdog_start(struct http_server *s);
void http_watchdog_stop(struct http_server *s);

#endif
