// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/libbpf.h>
#include <errno.h>
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

static int calibrate_one(struct rbmemtrace_bpf *skel, const char *exe, const char *name,
			 void *(*fn)(void *), double *seconds)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = true);
	uint64_t vaddr, offset;
	struct bpf_link *link;
	double bare, probed;
	int err;

	if (elf_symbol_value(exe, name, &vaddr, NULL) || elf_vaddr_to_offset(exe, vaddr, &offset))
		return -ENOENT;
	offset += uprobe_entry_classify((const unsigned char *)fn, ENDBR64_LEN + 2).skip;
	link = bpf_program__attach_uprobe_opts(skel->progs.on_alloc_return_empty, getpid(), exe,
					       offset, &opts);
	if (!link)
		return -errno;
	time_calls(fn); /* warm: the first hits fault in the probe's pages */
	probed = median3(time_calls(fn), time_calls(fn), time_calls(fn));
	err = bpf_link__destroy(link);
	bare = median3(time_calls(fn), time_calls(fn), time_calls(fn));
	if (err)
		return err;
	*seconds = (probed - bare) / CALIBRATION_CALLS;
	return *seconds > 0 ? 0 : -ERANGE;
}

int calibrate_uretprobe_costs(struct rbmemtrace_bpf *skel, double *emulated, double *stepped)
{
	char exe[64];

	snprintf(exe, sizeof(exe), "/proc/%d/exe", getpid());
	return calibrate_one(skel, exe, "rbm_calibrate_emulated", rbm_calibrate_emulated,
			     emulated) ?:
	       calibrate_one(skel, exe, "rbm_calibrate_stepped", rbm_calibrate_stepped, stepped);
}
