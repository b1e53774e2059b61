/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Who may read what rbmemtrace serve answers, off loopback: a bearer token
 * (Authorization: Bearer TOKEN) or basic auth (one user:password), each read
 * from a file at start, and TLS (libmicrohttpd's, on GnuTLS) from a
 * certificate and key in PEM files.  The check is pure and compares in a
 * time that does not depend on where a guess goes wrong.
 */
#ifndef RBM_HTTP_AUTH_H
#define RBM_HTTP_AUTH_H
#include <stdbool.h>
#include <stddef.h>

#define HTTP_AUTH_MAX_FILE 65536 /* a token, a password line, a PEM certificate or key */

struct http_auth {
	char *bearer;  /* the token; NULL: none */
	char *basic;   /* base64 of user:password, as a client sends it; NULL: none */
	char *cert_pem; /* TLS; NULL: plain HTTP */
	char *key_pem;
};

/* The files named (NULL: not given). */
struct http_auth_files {
	const char *token, *basic, *cert, *key;
};

/*
 * Reads and checks every file given: 0, or -errno (-EINVAL for a bad
 * content) with one line naming the file and what is wrong in err.
 */
int http_auth_load(struct http_auth *a, const struct http_auth_files *f, char *err, size_t n);
/* A token file's text: its first line, blanks around it dropped; 0 or -EINVAL with err. */
int http_auth_set_token(struct http_auth *a, const char *text, char *err, size_t n);
/* A basic-auth file's text: one user:password line; 0 or -EINVAL with err. */
int http_auth_set_basic(struct http_auth *a, const char *text, char *err, size_t n);
void http_auth_free(struct http_auth *a);

/* Whether requests must prove who sends them. */
bool http_auth_required(const struct http_auth *a);
/* Whether an Authorization header (NULL: none) is one a's token or password gives. */
bool http_auth_check(const struct http_auth *a, const char *header);

#endif
