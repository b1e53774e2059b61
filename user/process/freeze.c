// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "freeze.h"

/* The process stopped now, for the handlers: they may run on any thread at any time. */
static volatile pid_t frozen_pid;
static struct sigaction saved[32];
static const int fatal_signals[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
				    SIGSEGV, SIGBUS,  SIGABRT, SIGFPE};

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void thaw_now(void)
{
	pid_t pid = frozen_pid;

	if (pid > 0) {
		frozen_pid = 0;
		kill(pid, SIGCONT);
	}
}

static void on_fatal(int sig)
{
	thaw_now();
	/* then what the signal would have done */
	sigaction(sig, &saved[sig], NULL);
	raise(sig);
}

static void at_exit_thaw(void)
{
	thaw_now();
}

/* The state letter of a task's /proc stat line (after the command's closing paren). */
static char task_state(const char *path)
{
	char buf[512], *paren;
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' ? paren[2] : '?';
}

/* Whether every thread of pid is stopped ('T'); -1 if the process is gone. */
static int all_stopped(pid_t pid)
{
	char dir[64], path[384];
	struct dirent *d;
	DIR *tasks;
	int stopped = 1;

	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	tasks = opendir(dir);
	if (!tasks)
		return -1;
	while ((d = readdir(tasks))) {
		char st;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/stat", dir, d->d_name);
		st = task_state(path);
		if (st != 'T' && st != 't' && st != 'X' && st != 'Z' && st != '?') {
			stopped = 0;
			break;
		}
	}
	closedir(tasks);
	return stopped;
}

static void *watchdog(void *arg)
{
	struct freeze *f = arg;
	struct timespec until;
	double deadline = f->sent + f->ms / 1e3;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec = (time_t) deadline;
	until.tv_nsec = (long) ((deadline - (double) until.tv_sec) * 1e9);
	pthread_mutex_lock(&f->lock);
	while (f->active) {
		if (pthread_cond_timedwait(&f->done, &f->lock, &until) == ETIMEDOUT) {
			if (f->active) {
				thaw_now();
				f->paused_ms = (mono() - f->sent) * 1e3;
				f->expired = true;
				f->active = false;
			}
			break;
		}
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

int freeze_start(struct freeze *f, pid_t pid, unsigned long ms, char *err, size_t errlen)
{
	static bool exit_hook;
	char path[64];
	pthread_condattr_t ca;
	size_t i;
	int st;

	memset(f, 0, sizeof(*f));
	f->pid = pid;
	f->ms = ms;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (task_state(path) == 'T') {
		snprintf(err, errlen, "PID %d is already stopped: --freeze would wake it", pid);
		return -EBUSY;
	}
	if (!exit_hook)
		exit_hook = atexit(at_exit_thaw) == 0;
	for (i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++) {
		struct sigaction sa = {.sa_handler = on_fatal};

		sigemptyset(&sa.sa_mask);
		sigaction(fatal_signals[i], &sa, &saved[fatal_signals[i]]);
	}
	pthread_mutex_init(&f->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->done, &ca);
	pthread_condattr_destroy(&ca);
	f->active = true;
	frozen_pid = pid;
	f->sent = mono();
	if (kill(pid, SIGSTOP)) {
		int e = errno;

		frozen_pid = 0;
		f->active = false;
		snprintf(err, errlen, "cannot stop PID %d: %s", pid, strerror(e));
		return -e;
	}
	if (pthread_create(&f->watchdog, NULL, watchdog, f)) {
		thaw_now();
		f->active = false;
		snprintf(err, errlen, "cannot start the --freeze watchdog");
		return -EAGAIN;
	}
	/* every thread takes the stop on its own: wait (within the budget) until all have */
	while ((st = all_stopped(pid)) == 0 && mono() - f->sent < ms / 1e3)
		usleep(50);
	f->stopped = mono();
	return 0;
}

void freeze_hold(struct freeze *f)
{
	pthread_mutex_lock(&f->lock);
	while (f->active) {
		pthread_mutex_unlock(&f->lock);
		usleep(1000);
		pthread_mutex_lock(&f->lock);
	}
	pthread_mutex_unlock(&f->lock);
}

void freeze_end(struct freeze *f)
{
	size_t i;

	pthread_mutex_lock(&f->lock);
	if (f->active) {
		thaw_now();
		f->paused_ms = (mono() - f->sent) * 1e3;
		f->active = false;
	}
	pthread_cond_signal(&f->done);
	pthread_mutex_unlock(&f->lock);
	pthread_join(f->watchdog, NULL);
	pthread_cond_destroy(&f->done);
	pthread_mutex_destroy(&f->lock);
	for (i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
		sigaction(fatal_signals[i], &saved[fatal_signals[i]], NULL);
}
