// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "proc_labels.h"
#include "target_file.h"

#define CGROUP_MAX 16384 /* of /proc/PID/cgroup read: a dozen v1 lines, or v2's one */
#define SERVICE_ACCOUNT "/var/run/secrets/kubernetes.io/serviceaccount"

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char) s[i]) || isupper((unsigned char) s[i]))
			return false;
	return true;
}

/* s (n bytes) with a known prefix dropped and ".scope" off its end: a container's id? */
static bool container_component(const char *s, size_t n, char *id)
{
	static const char *const prefixes[] = {"libpod-", "docker-", "cri-containerd-", "crio-",
					       "containerd-", ""};
	size_t i, plen;

	if (n > 6 && !memcmp(s + n - 6, ".scope", 6))
		n -= 6;
	for (i = 0; i < sizeof(prefixes) / sizeof(*prefixes); i++) {
		plen = strlen(prefixes[i]);
		if (n == plen + 64 && !memcmp(s, prefixes[i], plen) && all_hex(s + plen, 64)) {
			memcpy(id, s + plen, 64);
			id[64] = '\0';
			return true;
		}
	}
	return false;
}

/* kubepods-QOS-podUID.slice (UID with _) or podUID (cgroupfs): the uid, with -. */
static bool pod_component(const char *s, size_t n, char *uid)
{
	const char *p = s;
	size_t i;

	if (n > 6 && !memcmp(s + n - 6, ".slice", 6))
		n -= 6;
	for (i = 0; i + 3 < n; i++) /* the last "pod" of the component */
		if (!memcmp(s + i, "pod", 3))
			p = s + i;
	if (p + 3 + 36 != s + n || memcmp(p, "pod", 3) || (p != s && p[-1] != '-'))
		return false;
	for (i = 0; i < 36; i++) {
		char c = p[3 + i] == '_' ? '-' : p[3 + i];

		if ((i == 8 || i == 13 || i == 18 || i == 23) ? c != '-' : !all_hex(&c, 1))
			return false;
		uid[i] = c;
	}
	uid[36] = '\0';
	return true;
}

/* One line's path (after the second ':'), len bytes: its container id, and pod uid. */
static bool from_path(const char *path, size_t len, struct proc_labels *l)
{
	const char *end = path + len, *c, *slash;
	char id[65] = "", uid[37] = "", tmp[65];

	/* The deepest of each: a container's own cgroup is under its pod's. */
	for (c = path; c < end; c = slash + 1) {
		slash = memchr(c, '/', end - c);
		if (!slash)
			slash = end;
		if (container_component(c, slash - c, tmp))
			memcpy(id, tmp, sizeof(id));
		else if (pod_component(c, slash - c, tmp))
			memcpy(uid, tmp, sizeof(uid));
		if (slash == end)
			break;
	}
	if (!id[0])
		return false;
	memcpy(l->container_id, id, sizeof(id));
	memcpy(l->pod_uid, uid, sizeof(uid));
	return true;
}

void proc_labels_from_cgroup(const char *text, struct proc_labels *l)
{
	const char *line, *nl, *path;

	l->container_id[0] = l->pod_uid[0] = '\0';
	for (line = text; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl)
			nl = line + strlen(line);
		/* hierarchy-ID:controllers:path; the path may hold ':' */
		path = memchr(line, ':', nl - line);
		path = path ? memchr(path + 1, ':', nl - path - 1) : NULL;
		if (path && from_path(path + 1, nl - path - 1, l))
			return;
		if (!*nl)
			break;
	}
}

/* Whether s (n bytes) is a DNS name: labels of [a-z0-9-], dots between, at most max. */
static bool dns_name(const char *s, size_t n, size_t max, bool dots)
{
	if (!n || n > max || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(islower((unsigned char) s[i]) || isdigit((unsigned char) s[i]) ||
		      s[i] == '-' || (dots && s[i] == '.' && s[i + 1] != '.')))
			return false;
	return true;
}

void proc_labels_hostname(const char *environ, size_t len, char *buf, size_t n)
{
	const char *p = environ, *end = environ + len, *nul;

	buf[0] = '\0';
	for (; p < end; p = nul + 1) {
		nul = memchr(p, '\0', end - p);
		if (!nul)
			nul = end; /* cut at the bound: its value may be cut too */
		if (nul - p > 9 && !memcmp(p, "HOSTNAME=", 9)) {
			if (nul != end && dns_name(p + 9, nul - p - 9, n - 1, true))
				snprintf(buf, n, "%.*s", (int) (nul - p - 9), p + 9);
			return;
		}
	}
}

void proc_labels_namespace(const char *text, char *buf, size_t n)
{
	size_t len = strlen(text);

	buf[0] = '\0';
	if (len && text[len - 1] == '\n')
		len--;
	if (dns_name(text, len, n - 1 < 63 ? n - 1 : 63, false))
		snprintf(buf, n, "%.*s", (int) len, text);
}

/* At most max bytes of fd (closed), NUL-terminated; their count, or -1. */
static ssize_t read_bounded(int fd, char *buf, size_t max)
{
	size_t got = 0;
	ssize_t r = 0;

	if (fd < 0)
		return -1;
	while (got < max && (r = read(fd, buf + got, max - got)) > 0)
		got += r;
	close(fd);
	if (r < 0)
		return -1;
	buf[got] = '\0';
	return got;
}

void proc_labels_read(pid_t pid, struct proc_labels *l)
{
	char path[160], *buf = malloc(PROC_ENVIRON_MAX + 1);
	ssize_t n;

	memset(l, 0, sizeof(*l));
	if (!buf)
		return;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) pid);
	if (read_bounded(open(path, O_RDONLY | O_CLOEXEC), buf, CGROUP_MAX) > 0)
		proc_labels_from_cgroup(buf, l);
	if (l->pod_uid[0]) { /* a pod: its name and namespace */
		snprintf(path, sizeof(path), "/proc/%d/environ", (int) pid);
		n = read_bounded(open(path, O_RDONLY | O_CLOEXEC), buf, PROC_ENVIRON_MAX);
		if (n > 0)
			proc_labels_hostname(buf, n, l->pod_name, sizeof(l->pod_name));
		/* Kubernetes' file is a link into ..data/, which target_file_open does not follow. */
		snprintf(path, sizeof(path), "/proc/%d/root" SERVICE_ACCOUNT "/namespace", (int) pid);
		n = read_bounded(target_file_open(path), buf, 256);
		if (n <= 0) {
			snprintf(path, sizeof(path), "/proc/%d/root" SERVICE_ACCOUNT "/..data/namespace",
				 (int) pid);
			n = read_bounded(target_file_open(path), buf, 256);
		}
		if (n > 0)
			proc_labels_namespace(buf, l->pod_namespace, sizeof(l->pod_namespace));
	}
	free(buf);
}
