// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "cpu_meter.h"

int cpu_meter_read(struct cpu_sample *s)
{
	unsigned long long user, nice, sys, idle, iowait;
	struct timespec ts;
	long hz = sysconf(_SC_CLK_TCK);
	char buf[256];
	ssize_t n;
	int fd;

	s->valid = false;
	fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* The first line sums every CPU: "cpu  user nice system idle iowait ..." */
	if (sscanf(buf, "cpu %llu %llu %llu %llu %llu", &user, &nice, &sys, &idle, &iowait) != 5 ||
	    hz <= 0)
		return -EINVAL;
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		return -errno;
	s->idle = (double)(idle + iowait) / hz;
	s->self = ts.tv_sec + ts.tv_nsec / 1e9;
	s->valid = true;
	return 0;
}

double cpu_meter_displaced(const struct cpu_sample *before, const struct cpu_sample *after)
{
	double self, idle;

	if (!before->valid || !after->valid)
		return 0;
	self = after->self - before->self;
	idle = after->idle - before->idle;
	if (self <= 0)
		return 0;
	return idle <= 0 ? self : self > idle ? self - idle : 0;
}
