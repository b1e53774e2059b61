// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include "escape.h"
#include "http_auth.h"

#define MAX_SECRET 1024 /* a token, or a user:password */

/* path's whole text (at most HTTP_AUTH_MAX_FILE bytes); 0 or -errno with err. */
static int read_file(const char *what, const char *path, char **out, char *err, size_t n)
{
	char shown[512];
	struct stat st;
	ssize_t got;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	term_escape(path, shown, sizeof(shown));
	if (fd < 0 || fstat(fd, &st)) {
		ret = -errno;
		snprintf(err, n, "cannot read the %s %s: %s", what, shown, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > HTTP_AUTH_MAX_FILE) {
		ret = -EINVAL;
		snprintf(err, n, "the %s %s is not a file of at most %d bytes", what, shown,
			 HTTP_AUTH_MAX_FILE);
		goto fail;
	}
	*out = malloc(st.st_size + 1);
	got = *out ? read(fd, *out, st.st_size) : -1;
	if (got < 0) {
		ret = *out ? -errno : -ENOMEM;
		snprintf(err, n, "cannot read the %s %s: %s", what, shown, strerror(-ret));
		free(*out);
		*out = NULL;
		goto fail;
	}
	(*out)[got] = '\0';
	close(fd);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	return ret;
}

/* The first line of text, blanks around it dropped, into a new string; NULL if none. */
static char *first_line(const char *text, const char **rest)
{
	size_t len;

	while (*text == ' ' || *text == '\t')
		text++;
	len = strcspn(text, "\r\n");
	*rest = text + len;
	while (len && (text[len - 1] == ' ' || text[len - 1] == '\t'))
		len--;
	return len ? strndup(text, len) : NULL;
}

/* Whether s is all visible ASCII (no blanks, controls or bytes past 0x7e). */
static bool visible(const char *s)
{
	for (; *s; s++)
		if (*s <= ' ' || *s > '~')
			return false;
	return true;
}

/* Whether only blank lines follow. */
static bool only_blanks(const char *rest)
{
	for (; *rest; rest++)
		if (!isspace((unsigned char) *rest))
			return false;
	return true;
}

int http_auth_set_token(struct http_auth *a, const char *text, char *err, size_t n)
{
	const char *rest;
	char *t = first_line(text, &rest);

	if (!t || !visible(t) || strlen(t) > MAX_SECRET || !only_blanks(rest)) {
		snprintf(err, n, "a token must be one line of 1 to %d visible ASCII characters "
			 "(no blanks)", MAX_SECRET);
		free(t);
		return -EINVAL;
	}
	free(a->bearer);
	a->bearer = t;
	return 0;
}

static char *base64(const char *s)
{
	static const char digits[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t len = strlen(s), i;
	char *out = malloc(4 * ((len + 2) / 3) + 1), *o = out;

	if (!out)
		return NULL;
	for (i = 0; i < len; i += 3) {
		unsigned v = (unsigned char) s[i] << 16;

		v |= i + 1 < len ? (unsigned char) s[i + 1] << 8 : 0;
		v |= i + 2 < len ? (unsigned char) s[i + 2] : 0;
		*o++ = digits[v >> 18];
		*o++ = digits[(v >> 12) & 63];
		*o++ = i + 1 < len ? digits[(v >> 6) & 63] : '=';
		*o++ = i + 2 < len ? digits[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

int http_auth_set_basic(struct http_auth *a, const char *text, char *err, size_t n)
{
	const char *rest;
	char *line = first_line(text, &rest), *colon = line ? strchr(line, ':') : NULL;
	bool ok = colon && colon > line && colon[1] && strlen(line) <= MAX_SECRET &&
		  only_blanks(rest);

	for (const char *p = line; ok && *p; p++)
		ok = (unsigned char) *p >= ' ' && *p != 0x7f;
	if (!ok) {
		snprintf(err, n, "basic auth must be one line user:password (a user, a password, "
			 "no control characters)");
		free(line);
		return -EINVAL;
	}
	free(a->basic);
	a->basic = base64(line);
	explicit_bzero(line, strlen(line));
	free(line);
	if (!a->basic) {
		snprintf(err, n, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* A secret file, its content checked by set; the text wiped once used. */
static int load_secret(struct http_auth *a, const char *what, const char *path,
		       int (*set)(struct http_auth *, const char *, char *, size_t), char *err,
		       size_t n)
{
	char *text = NULL, why[256], shown[512];
	int ret = read_file(what, path, &text, err, n);

	if (ret)
		return ret;
	ret = set(a, text, why, sizeof(why));
	if (ret)
		snprintf(err, n, "the %s %s: %s", what, term_escape(path, shown, sizeof(shown)),
			 why);
	explicit_bzero(text, strlen(text));
	free(text);
	return ret;
}

int http_auth_load(struct http_auth *a, const struct http_auth_files *f, char *err, size_t n)
{
	int ret = 0;

	memset(a, 0, sizeof(*a));
	if (f->token)
		ret = load_secret(a, "token file", f->token, http_auth_set_token, err, n);
	if (!ret && f->basic)
		ret = load_secret(a, "basic auth file", f->basic, http_auth_set_basic, err, n);
	if (!ret && f->cert)
		ret = read_file("TLS certificate", f->cert, &a->cert_pem, err, n);
	if (!ret && f->key)
		ret = read_file("TLS key", f->key, &a->key_pem, err, n);
	if (ret)
		http_auth_free(a);
	return ret;
}

void http_auth_free(struct http_auth *a)
{
	char **secrets[] = {&a->bearer, &a->basic, &a->key_pem};

	for (size_t i = 0; i < sizeof(secrets) / sizeof(*secrets); i++)
		if (*secrets[i])
			explicit_bzero(*secrets[i], strlen(*secrets[i]));
	free(a->bearer);
	free(a->basic);
	free(a->cert_pem);
	free(a->key_pem);
	memset(a, 0, sizeof(*a));
}

bool http_auth_required(const struct http_auth *a)
{
	return a->bearer || a->basic;
}

/* given equals secret, in a time that depends on secret's length only. */
static bool same(const char *given, const char *secret)
{
	size_t glen = strlen(given), slen = strlen(secret), i;
	unsigned char d = glen != slen;

	for (i = 0; i < slen; i++)
		d |= (unsigned char) (i < glen ? given[i] : 0) ^ (unsigned char) secret[i];
	return !d;
}

/* The credentials after "SCHEME " (the scheme in any case, blanks after it), or NULL. */
static const char *credentials(const char *header, const char *scheme)
{
	size_t len = strlen(scheme);

	if (strncasecmp(header, scheme, len) || (header[len] != ' ' && header[len] != '\t'))
		return NULL;
	header += len;
	while (*header == ' ' || *header == '\t')
		header++;
	return header;
}

bool http_auth_check(const struct http_auth *a, const char *header)
{
	const char *c;

	if (!http_auth_required(a))
		return true;
	if (!header)
		return false;
	if (a->bearer && (c = credentials(header, "Bearer")))
		return same(c, a->bearer);
	if (a->basic && (c = credentials(header, "Basic")))
		return same(c, a->basic);
	return false;
}
