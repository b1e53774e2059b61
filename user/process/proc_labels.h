/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Who a process is, in the words a fleet groups by: the container it runs in
 * (its id, from /proc/PID/cgroup) and on Kubernetes its pod (the pod's uid
 * from the cgroup path, its name from the process's HOSTNAME, its namespace
 * from the service account's file under /proc/PID/root).  Everything here is
 * read from the target, so hostile: bounded, and kept only when it has the
 * shape it must have (hex ids, DNS names), never anything else.
 */
#ifndef RBM_PROC_LABELS_H
#define RBM_PROC_LABELS_H
#include <stddef.h>
#include <sys/types.h>

#define PROC_ENVIRON_MAX (256 * 1024) /* of /proc/PID/environ read, looking for HOSTNAME */

struct proc_labels {
	char container_id[65]; /* 64 hex digits; "" when not in a container (or unknown) */
	char pod_uid[37];      /* 8-4-4-4-12 hex digits; "" when not in a Kubernetes pod */
	char pod_name[254];    /* HOSTNAME, a DNS name; only in a pod */
	char pod_namespace[64]; /* a DNS label; only in a pod */
};

/* What pid's /proc files say; what cannot be read or has not the right shape stays "". */
void proc_labels_read(pid_t pid, struct proc_labels *l);

/*
 * The parsing of proc_labels_read, on text already read.  The cgroup file
 * (v1's lines, v2's 0:: line): the first path with a container's id in a
 * component (libpod-ID.scope, docker-ID.scope, cri-containerd-ID.scope,
 * crio-ID.scope, a bare ID; never conmon's), and the pod uid of that path
 * (kubepods-burstable-podUID.slice with _ for -, or podUID).
 */
void proc_labels_from_cgroup(const char *text, struct proc_labels *l);
/* HOSTNAME's value in environ (len bytes, NUL-separated) into buf when it is a DNS name. */
void proc_labels_hostname(const char *environ, size_t len, char *buf, size_t n);
/* The namespace file's text into buf when it is one DNS label (a trailing newline allowed). */
void proc_labels_namespace(const char *text, char *buf, size_t n);

#endif
