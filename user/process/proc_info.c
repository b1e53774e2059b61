// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "sort.h"
#include "proc_info.h"

/* Reads a small /proc file into buf; its length, or -1. */
static ssize_t read_proc(pid_t pid, const char *name, char *buf, size_t n)
{
	char path[64];
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int) pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, n - 1);
	close(fd);
	if (len < 0)
		return -1;
	buf[len] = 0;
	return len;
}

void proc_command(pid_t pid, char *buf, size_t n)
{
	ssize_t len = read_proc(pid, "comm", buf, n);

	if (len < 0)
		buf[0] = 0;
	else if (len > 0 && buf[len - 1] == '\n')
		buf[len - 1] = 0;
}

void proc_cmdline(pid_t pid, char *buf, size_t n)
{
	ssize_t len = read_proc(pid, "cmdline", buf, n), i;

	if (len < 0) {
		buf[0] = 0;
		return;
	}
	while (len > 0 && buf[len - 1] == 0)
		len--;
	for (i = 0; i < len; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[len] = 0;
}

pid_t proc_status_ns_pid(char *status, pid_t pid)
{
	char *line, *last, *save = NULL;
	pid_t inner = 0;

	line = strstr(status, "\nNSpid:");
	if (!line)
		return 0;
	line += strlen("\nNSpid:");
	/* NSpid lists the pid in each namespace from the host's down: the last is its own. */
	for (last = strtok_r(line, " \t\n", &save); last; last = strtok_r(NULL, " \t\n", &save)) {
		if (!isdigit((unsigned char) *last))
			break;
		inner = atoi(last);
	}
	return inner == pid ? 0 : inner;
}

pid_t proc_ns_pid(pid_t pid)
{
	char buf[4096];

	if (read_proc(pid, "status", buf, sizeof(buf)) < 0)
		return 0;
	return proc_status_ns_pid(buf, pid);
}

void proc_status_state(const char *status, bool *stopped, pid_t *tracer)
{
	const char *line;

	*stopped = false;
	*tracer = 0;
	line = strstr(status, "\nState:");
	if (line) {
		line += strlen("\nState:");
		line += strspn(line, " \t");
		*stopped = *line == 'T' || *line == 't';
	}
	line = strstr(status, "\nTracerPid:");
	if (line)
		*tracer = atoi(line + strlen("\nTracerPid:"));
}

int proc_stopped(pid_t pid, bool *stopped, pid_t *tracer)
{
	char buf[4096];

	*stopped = false;
	*tracer = 0;
	if (read_proc(pid, "status", buf, sizeof(buf)) < 0)
		return -1;
	proc_status_state(buf, stopped, tracer);
	return 0;
}

const char *proc_stat_field(const char *stat, int n)
{
	const char *p = strrchr(stat, ')');
	int field;

	for (field = 2; field < n && p; field++)
		p = strchr(p + 1, ' ');
	return p ? p + 1 : NULL;
}

/* Field n of /proc/PID/stat read into buf, or NULL. */
static const char *stat_field(pid_t pid, char *buf, size_t size, int n)
{
	if (read_proc(pid, "stat", buf, size) < 0)
		return NULL;
	return proc_stat_field(buf, n);
}

double proc_uptime(pid_t pid)
{
	char buf[1024];
	const char *p = stat_field(pid, buf, sizeof(buf), 22);
	unsigned long long start;
	struct timespec boot;

	if (!p || sscanf(p, "%llu", &start) != 1)
		return -1;
	clock_gettime(CLOCK_BOOTTIME, &boot);
	return boot.tv_sec + boot.tv_nsec / 1e9 - (double) start / sysconf(_SC_CLK_TCK);
}

double proc_cpu_seconds(pid_t pid)
{
	char buf[1024];
	const char *p = stat_field(pid, buf, sizeof(buf), 14); /* utime, then stime */
	unsigned long long utime, stime;

	if (!p || sscanf(p, "%llu %llu", &utime, &stime) != 2)
		return -1;
	return (double) (utime + stime) / sysconf(_SC_CLK_TCK);
}

int proc_nice(pid_t pid)
{
	char buf[1024];
	const char *p = stat_field(pid, buf, sizeof(buf), 19);
	int nice;

	return p && sscanf(p, "%d", &nice) == 1 ? nice : 0;
}

int proc_machine_cpu(double *idle, double *busy, double *niced)
{
	unsigned long long v[8] = {0};
	char line[512];
	FILE *f = fopen("/proc/stat", "re");
	int n;

	if (!f)
		return -errno;
	n = fgets(line, sizeof(line), f)
		? sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
			 &v[3], &v[4], &v[5], &v[6], &v[7])
		: 0;
	fclose(f);
	if (n < 5)
		return -EINVAL;
	/* user nice system idle iowait irq softirq steal; guest time is in user already. */
	*idle = (double) (v[3] + v[4]) / sysconf(_SC_CLK_TCK);
	*busy = (double) (v[0] + v[1] + v[2] + v[5] + v[6]) / sysconf(_SC_CLK_TCK);
	*niced = (double) v[1] / sysconf(_SC_CLK_TCK);
	return 0;
}

uint64_t proc_rss(pid_t pid)
{
	char buf[256];
	unsigned long long size, resident;

	if (read_proc(pid, "statm", buf, sizeof(buf)) < 0 ||
	    sscanf(buf, "%llu %llu", &size, &resident) != 2)
		return 0;
	return resident * (uint64_t) sysconf(_SC_PAGESIZE);
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

	return x < y ? -1 : x > y;
}

size_t proc_scan(const regex_t *re, pid_t self, bool (*accept)(pid_t pid, void *ctx), void *ctx,
		 pid_t *pids, size_t max)
{
	DIR *dir = opendir("/proc");
	struct dirent *de;
	size_t n = 0;

	if (!dir)
		return 0;
	while (n < max && (de = readdir(dir))) {
		char cmdline[4096];
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid == self)
			continue;
		proc_cmdline(pid, cmdline, sizeof(cmdline));
		if (!cmdline[0])
			continue; /* a kernel thread or gone */
		if (re && regexec(re, cmdline, 0, NULL, 0) != 0)
			continue;
		if (accept && !accept(pid, ctx))
			continue;
		pids[n++] = pid;
	}
	closedir(dir);
	sort_array(pids, n, sizeof(*pids), cmp_pid);
	return n;
}
