/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The HTTP side of rbmemtrace serve, on libmicrohttpd (Debian's
 * libmicrohttpd-dev): it answers from what the tracer's loop published
 * (http_route.h says which route), on its own thread, so a client can
 * never hold up the tracer.  No request reaches a process, a file or a
 * command: a profile is only ever one the loop made of a process it
 * traces.  Requests are bounded (http_limits.c says how): headers and URL
 * in a small memory pool, a request's whole time (not only its
 * inactivity), a number of connections at once and a share of them per
 * address, kept by closing the one that waited longest without sending a
 * whole request, so that a client that asks at once is answered.
 */
#ifndef RBM_HTTP_SERVER_H
#define RBM_HTTP_SERVER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct http_server;

struct http_limits {
	unsigned timeout_s;   /* to send a whole request; as long again to take its answer */
	unsigned max_clients; /* connections at once */
	unsigned max_per_ip;  /* of them from one address (IPv4, or an IPv6 /64) */
	unsigned max_fresh;   /* ?seconds=N requests waiting at once */
	size_t memory;	      /* per connection: the request line and headers must fit */
};

/* What the index and a profile's headers say of a process. */
struct http_proc_info {
	pid_t pid;
	char command[64]; /* untrusted: escaped where shown */
	char ruby_version[32];
	uint64_t period; /* the latest profile's period number */
	double time;	 /* its end, Unix seconds */
	bool gone;	 /* the process exited: its last profile is kept */
	char state[96];	 /* "running", "exited", ... */
};

/*
 * Binds and listens on addr (a sockaddr of len) now, so a bad or busy
 * address fails before anything is traced; serves nothing until
 * http_server_start.  0, or -errno with a one-line reason in err; *bound
 * gets the address as bound ("127.0.0.1:41234").
 */
int http_server_open(struct http_server **out, const void *addr, unsigned len,
		     const struct http_limits *lim, double every, char *bound, size_t boundlen,
		     char *err, size_t n);
/* The listening socket of addr: its fd, or -errno with a one-line reason (http_listen.c). */
int http_listen_socket(const void *addr, unsigned len, char *bound, size_t boundlen, char *err,
		       size_t n);
struct http_auth;
/*
 * Who may read, and TLS: the server takes auth's strings over (auth is
 * emptied).  A certificate and key are tried at once, so a bad one fails
 * before anything is traced.  0, or -errno with a one-line reason in err.
 */
int http_server_secure(struct http_server *s, struct http_auth *auth, char *err, size_t n);
/* Starts answering, on the server's own thread.  0 or -errno with err. */
int http_server_start(struct http_server *s, char *err, size_t n);

/*
 * Publishes pid's latest profile (pid 0: the one of every process) and
 * what the index says of it; the server copies them.
 */
int http_server_publish(struct http_server *s, pid_t pid, const void *gz, size_t len,
			const struct http_proc_info *info);

/* A request for a fresh profile (?seconds=N) the loop has to make. */
struct http_fresh {
	uint64_t id;
	pid_t pid; /* 0: every process */
	unsigned seconds;
};
/* The fresh requests that arrived since the last call: at most max; how many. */
size_t http_server_take_fresh(struct http_server *s, struct http_fresh *out, size_t max);
/* Answers fresh request id: status 200 with a gzipped profile, or another with a line. */
void http_server_answer_fresh(struct http_server *s, uint64_t id, int status, const void *body,
			      size_t len);

/*
 * Whether fresh request id still waits for its answer: not once its client
 * went away or its deadline passed (the server answered it), so the loop
 * can drop what it keeps for it.
 */
bool http_server_fresh_wanted(struct http_server *s, uint64_t id);

/* What the server did, counted since it started. */
struct http_stats {
	uint64_t connections;	  /* accepted */
	uint64_t requests;	  /* received whole */
	uint64_t timed_out;	  /* cut: no whole request, or its answer not taken, in time */
	uint64_t evicted;	  /* closed for a newcomer: waited longest for a request */
	uint64_t refused;	  /* closed at once: their address's all being answered */
	uint64_t fresh_refused;	  /* fresh requests answered 503: too many under way */
	uint64_t fresh_late;	  /* fresh requests answered 503: not made by the deadline */
	uint64_t fresh_abandoned; /* fresh requests whose client went away first */
	uint64_t unauthorized;	  /* answered 401: no or a wrong token or password */
};
void http_server_stats(struct http_server *s, struct http_stats *out);

/* Answers what waits with 503, stops the thread and closes every connection. */
void http_server_stop(struct http_server *s);

#endif
