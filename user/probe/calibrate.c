// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>
#include <time.h>
#include <unistd.h>
#include "attach.h"
#include "calibrate.h"
#include "elfinfo.h"
#include "rbmemtrace.h"
#include "rbmemtrace.skel.h"

#define CALIBRATION_CALLS 2000

/*
 * Two functions to time, probed where the sampler probes libruby's: one
 * starts with endbr64 and a push, as Debian's -fcf-protection builds do,
 * and is probed on the push, which the kernel emulates (attach.c); the
 * other with a mov, which it single-steps out of line at the cost of a
 * second trap, as it does endbr64 (measured alike, ~20 us).
 */
void *rbm_calibrate_emulated(void *arg);
void *rbm_calibrate_stepped(void *arg);
#ifdef __x86_64__
__asm__(".text\n"
	".globl rbm_calibrate_emulated\n"
	".type rbm_calibrate_emulated, @function\n"
	"rbm_calibrate_emulated:\n"
	"	endbr64\n"
	"	push %rbp\n"
	"	mov %rdi, %rax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size rbm_calibrate_emulated, .-rbm_calibrate_emulated\n"
	".globl rbm_calibrate_stepped\n"
	".type rbm_calibrate_stepped, @function\n"
	"rbm_calibrate_stepped:\n"
	"	mov %rdi, %rax\n"
	"	ret\n"
	".size rbm_calibrate_stepped, .-rbm_calibrate_stepped\n");
#else
__attribute__((noinline)) void *rbm_calibrate_emulated(void *arg)
{
	__asm__ volatile("" : : "r"(arg) : "memory");
	return arg;
}

__attribute__((noinline)) void *rbm_calibrate_stepped(void *arg)
{
	__asm__ volatile("" : : "r"(arg) : "memory");
	return arg;
}
#endif

/*
 * The thread's CPU time, not the wall clock: the trap runs in the calling
 * thread's context, so this is what a hit costs, and time spent waiting
 * for a core on a busy machine does not inflate it.
 */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double time_calls(void *(*fn)(void *))
{
	void *volatile sink;
	double start = now_s();
	int i;

	for (i = 0; i < CALIBRATION_CALLS; i++)
		sink = fn((void *)(long)i);
	(void)sink;
	return now_s() - start;
}

static double median3(double a, double b, double c)
{
	if (a > b) {
		double t = a;

		a = b;
		b = t;
	}
	return c < a ? a : c > b ? b : c;
}

/*
 * A uprobe's detach waits for the kernel's grace period, ~0.1 s each here:
 * the calibration's links are let go on a thread of their own, while the
 * trace goes on, instead of before its first window.
 */
static struct {
	pthread_t thread;
	bool started;
	struct bpf_link *links[2];
} release;

static void *destroy_links(void *arg)
{
	size_t i;

	(void)arg;
	for (i = 0; i < 2; i++)
		bpf_link__destroy(release.links[i]);
	return NULL;
}

static void release_links(struct bpf_link *a, struct bpf_link *b)
{
	release.links[0] = a;
	release.links[1] = b;
	release.started = !pthread_create(&release.thread, NULL, destroy_links, NULL);
	if (!release.started)
		destroy_links(NULL);
}

void calibrate_release_wait(void)
{
	if (release.started)
		pthread_join(release.thread, NULL);
	release.started = false;
}

static struct bpf_link *attach_empty(struct rbmemtrace_bpf *skel, const char *exe,
				     const char *name, void *(*fn)(void *))
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = true);
	uint64_t vaddr, offset;

	if (elf_symbol_value(exe, name, &vaddr, NULL) || elf_vaddr_to_offset(exe, vaddr, &offset)) {
		errno = ENOENT;
		return NULL;
	}
	offset += uprobe_entry_classify((const unsigned char *)fn, ENDBR64_LEN + 2).skip;
	return bpf_program__attach_uprobe_opts(skel->progs.on_alloc_return_empty, getpid(), exe,
					       offset, &opts);
}

static double median_time(void *(*fn)(void *))
{
	return median3(time_calls(fn), time_calls(fn), time_calls(fn));
}

int calibrate_uretprobe_costs(struct rbmemtrace_bpf *skel, double *emulated, double *stepped)
{
	double bare_emulated, bare_stepped, probed_emulated, probed_stepped;
	struct bpf_link *link_emulated, *link_stepped;
	char exe[64];
	int err;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", getpid());
	bare_emulated = median_time(rbm_calibrate_emulated);
	bare_stepped = median_time(rbm_calibrate_stepped);
	link_emulated = attach_empty(skel, exe, "rbm_calibrate_emulated", rbm_calibrate_emulated);
	if (!link_emulated)
		return -errno;
	link_stepped = attach_empty(skel, exe, "rbm_calibrate_stepped", rbm_calibrate_stepped);
	if (!link_stepped) {
		err = -errno;
		bpf_link__destroy(link_emulated);
		return err;
	}
	/* warm: the first hits fault in the probes' pages */
	time_calls(rbm_calibrate_emulated);
	time_calls(rbm_calibrate_stepped);
	probed_emulated = median_time(rbm_calibrate_emulated);
	probed_stepped = median_time(rbm_calibrate_stepped);
	release_links(link_emulated, link_stepped);
	*emulated = (probed_emulated - bare_emulated) / CALIBRATION_CALLS;
	*stepped = (probed_stepped - bare_stepped) / CALIBRATION_CALLS;
	return *emulated > 0 && *stepped > 0 ? 0 : -ERANGE;
}
