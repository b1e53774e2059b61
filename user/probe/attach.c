// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/bpf.h>
#include "attach.h"
#include "target_file.h"
#include "elfinfo.h"
#include <linux/types.h>
#include "rbmemtrace.h"
#include "rbmemtrace.skel.h"

/* func is looked up by libbpf; with func NULL, offset is the file offset and name is for messages.
 */
static int attach_uprobe(struct probes *p, struct bpf_program *prog, const char *func,
			 const char *name, uint64_t offset, bool ret, bool quiet, uint64_t cookie,
			 struct bpf_link **out)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = func, .retprobe = ret,
		    .bpf_cookie = cookie);
	struct bpf_link *link;

	link = bpf_program__attach_uprobe_opts(prog, p->pid, p->binary, offset, &opts);
	if (!link) {
		int err = -errno;

		/* The caller's one-line error says what failed; details with -v. */
		if (!quiet && p->verbose)
			fprintf(stderr, "rbmemtrace: cannot attach %s to %s %s: %s\n",
				ret ? "uretprobe" : "uprobe", p->binary, name, strerror(-err));
		return err;
	}
	if (p->verbose && !quiet)
		fprintf(stderr, "rbmemtrace: attached %s %s in %s (pid %d)\n",
			ret ? "uretprobe" : "uprobe", name, p->binary, p->pid);
	*out = link;
	return 0;
}

bool uprobe_insn_emulated(const unsigned char *code, size_t n)
{
	/* push %reg, or with a REX.B prefix, push %r8..%r15 */
	if (n >= 1 && code[0] >= 0x50 && code[0] <= 0x57)
		return true;
	if (n >= 2 && code[0] == 0x41 && code[1] >= 0x50 && code[1] <= 0x57)
		return true;
	/* jmp rel32, jmp rel8: a tail call */
	return (n >= 5 && code[0] == 0xe9) || (n >= 2 && code[0] == 0xeb);
}

static bool is_endbr64(const unsigned char *code, size_t n)
{
	return n >= ENDBR64_LEN && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e &&
	       code[3] == 0xfa;
}

/* mov $imm32, %r32 (or %r8d..%r15d): sets an argument, touches neither stack nor memory. */
static unsigned int mov_imm32_len(const unsigned char *code, size_t n)
{
	if (n >= 5 && code[0] >= 0xb8 && code[0] <= 0xbf)
		return 5;
	if (n >= 6 && code[0] == 0x41 && code[1] >= 0xb8 && code[1] <= 0xbf)
		return 6;
	return 0;
}

/* Moves a probe may go past, before the stack or any memory is touched. */
#define MAX_SKIPPED_MOVS 4

/*
 * The kernel single-steps endbr64: arch/x86/kernel/uprobes.c emulates only
 * pushes, jumps, calls and NOPs, and the wider insn_is_nop() that came
 * after 6.18 still leaves endbr64 out.  Stepped, a hit costs ~20 us here,
 * emulated ~6.5.  Past endbr64 the stack is as the call left it, so a
 * uretprobe there takes the same return address; where a push follows, the
 * hit costs what a push-first function's does (measured 6.5 against 6.4
 * us).  A few moves of constants into argument registers leave the stack
 * alike: a wrapper that sets arguments and tail-calls (3.3's hidden
 * rb_class_allocate_instance, every Foo.new: endbr64; mov; mov; jmp) is
 * probed on its jmp, which the kernel emulates too.  Elsewhere the probe
 * stays on the entry: both instructions would be stepped, at the same cost.
 */
struct uprobe_entry uprobe_entry_classify(const unsigned char *code, size_t n)
{
	unsigned int at = is_endbr64(code, n) ? ENDBR64_LEN : 0, len;
	int movs = 0;

	if (uprobe_insn_emulated(code + at, n - at))
		return (struct uprobe_entry){.skip = at, .emulated = true};
	while (movs < MAX_SKIPPED_MOVS && (len = mov_imm32_len(code + at, n - at))) {
		at += len;
		movs++;
	}
	if (movs && uprobe_insn_emulated(code + at, n - at))
		return (struct uprobe_entry){.skip = at, .emulated = true};
	return (struct uprobe_entry){.skip = 0, .emulated = uprobe_insn_emulated(code, n)};
}

/*
 * Reads each probed function's first bytes from the file: what a hit costs
 * depends on them, and past an endbr64 the probe moves onto a cheaper push.
 */
static void classify_entries(struct probes *p)
{
	int fd = target_file_open(p->binary);
	FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
	int i;

	if (fd >= 0 && !f)
		close(fd);
	for (i = 0; f && i < p->sites.alloc_probes; i++) {
		unsigned char code[UPROBE_ENTRY_BYTES];
		struct uprobe_entry e;

		p->sites.alloc_emulated[i] = false;
		if (fseek(f, (long) p->sites.alloc_offsets[i], SEEK_SET) ||
		    fread(code, 1, sizeof(code), f) != sizeof(code))
			continue;
		e = uprobe_entry_classify(code, sizeof(code));
		p->sites.alloc_emulated[i] = e.emulated;
		p->sites.alloc_offsets[i] += e.skip;
		if (e.skip && p->verbose)
			fprintf(stderr,
				"rbmemtrace: %s: probed %u bytes in, past what the "
				"kernel would single-step\n",
				p->sites.alloc_names[i], e.skip);
	}
	if (f)
		fclose(f);
}

/*
 * File offsets, found once: libbpf would otherwise read libruby's symbol
 * table again at every attach, and the sampler attaches many times a second.
 */
/* Returns a buffer; the object it made is in *store, its first argument. */
static const char STORING_ALLOCATOR[] = "rb_alloc_tmp_buffer_with_count";

static int resolve_alloc_offsets(struct probes *p)
{
	const char *const *fn;
	int n = 0;

	for (fn = p->points->functions; *fn && n < MAX_ALLOC_PROBES - 1; fn++, n++) {
		uint64_t vaddr;

		if (strcmp(*fn, STORING_ALLOCATOR) == 0)
			p->sites.store_probe = n + 1;

		if (elf_symbol_value(p->binary, *fn, &vaddr, NULL) ||
		    elf_vaddr_to_offset(p->binary, vaddr, &p->sites.alloc_offsets[n])) {
			fprintf(stderr, "rbmemtrace: cannot find %s in %s\n", *fn, p->binary);
			return -ENOENT;
		}
		p->sites.alloc_names[n] = *fn;
	}
	/* Up to 3.3 every Foo.new goes through this one, and it is not exported. */
	if (p->points->hidden_class_allocator) {
		p->sites.alloc_offsets[n] = p->class_allocate_instance;
		p->sites.alloc_names[n++] = "rb_class_allocate_instance (hidden; found through "
					    "BasicObject's allocator)";
	}
	p->sites.alloc_probes = n;
	p->sites.alloc_offsets_known = true;
	classify_entries(p);
	return 0;
}

int probes_resolve_alloc(struct probes *p)
{
	return p->sites.alloc_offsets_known ? 0 : resolve_alloc_offsets(p);
}

/* What BPF_LINK_CREATE reads for a uprobe_multi link (include/uapi/linux/bpf.h, 6.6+). */
struct uprobe_multi_attr {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 multi_flags;
	__u32 pid;
	__u32 pad;
};

#define UPROBE_MULTI_RETURN 1 /* BPF_F_UPROBE_MULTI_RETURN */

/* The cookie of allocation probe i: its slot, its index, and where its object is. */
static __u64 alloc_cookie(const struct probes *p, int i)
{
	return RBM_COOKIE(p->slot, i) | (i + 1 == p->sites.store_probe ? RBM_COOKIE_FROM_STORE : 0);
}

/* The entry half of the storing allocator's probe, as a uprobe_multi link. */
static int attach_store_entry_multi(struct probes *p, bool quiet)
{
	struct uprobe_multi_attr attr = {
	    .prog_fd = bpf_program__fd(p->skel->progs.on_alloc_store_entry_multi),
	    .attach_type = RBM_BPF_TRACE_UPROBE_MULTI,
	    .path = (uintptr_t) p->binary,
	    .offsets = (uintptr_t) &p->sites.alloc_offsets[p->sites.store_probe - 1],
	    .cnt = 1,
	    .pid = p->pid,
	};
	int fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));

	if (fd < 0) {
		int err = -errno;

		if (!quiet && p->verbose)
			fprintf(stderr, "rbmemtrace: cannot attach the entry uprobe of %s: %s\n",
				STORING_ALLOCATOR, strerror(-err));
		return err;
	}
	p->links.store_multi_fd = fd;
	return 0;
}

static int attach_alloc_multi(struct probes *p, bool quiet)
{
	__u64 cookies[MAX_LINKS];
	struct uprobe_multi_attr attr = {
	    .prog_fd = bpf_program__fd(p->skel->progs.on_alloc_return_multi),
	    .attach_type = RBM_BPF_TRACE_UPROBE_MULTI,
	    .path = (uintptr_t) p->binary,
	    .offsets = (uintptr_t) p->sites.alloc_offsets,
	    .cookies = (uintptr_t) cookies,
	    .cnt = p->sites.alloc_probes,
	    .multi_flags = UPROBE_MULTI_RETURN,
	    .pid = p->pid,
	};
	int i, fd;

	for (i = 0; i < p->sites.alloc_probes; i++)
		cookies[i] = alloc_cookie(p, i);
	/* The entry first: a return is seen only after an entry with both on. */
	if (p->sites.store_probe) {
		int err = attach_store_entry_multi(p, quiet);

		if (err)
			return err;
	}
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	if (fd < 0) {
		int err = -errno;

		if (p->links.store_multi_fd > 0)
			close(p->links.store_multi_fd);
		p->links.store_multi_fd = 0;

		if (!quiet && p->verbose)
			fprintf(stderr,
				"rbmemtrace: cannot attach the allocation uretprobes to %s: %s\n",
				p->binary, strerror(-err));
		return err;
	}
	if (p->verbose && !quiet)
		fprintf(stderr,
			"rbmemtrace: attached %d allocation uretprobes in %s (pid %d) as "
			"one uprobe_multi link\n",
			p->sites.alloc_probes, p->binary, p->pid);
	p->links.multi_fd = fd;
	return 0;
}

int probes_sweep_forked(struct probes *p)
{
	struct uprobe_multi_attr attr = {
	    .prog_fd = bpf_program__fd(p->skel->progs.on_alloc_sweep),
	    .attach_type = RBM_BPF_TRACE_UPROBE_MULTI,
	    .path = (uintptr_t) p->binary,
	    .offsets = (uintptr_t) p->sites.alloc_offsets,
	    .cnt = p->sites.alloc_probes,
	    .pid = p->pid,
	};
	int fd;

	/*
	 * On: the target's breakpoints are there already, so nothing changes.
	 * Off: the kernel takes each breakpoint out of every process that no
	 * consumer left wants, the forked children.  Then one RCU wait.
	 */
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

int probes_attach_alloc(struct probes *p, bool quiet)
{
	struct bpf_program *prog = p->skel->progs.on_alloc_return;
	bool ret = true;
	int i, err;

	if (!p->sites.alloc_offsets_known && (err = resolve_alloc_offsets(p)))
		return err;
	/*
	 * A link still coming off keeps its consumer on the same uprobes: with
	 * a new link on them too, every hit would run the program twice.
	 */
	probes_wait_detached(p);
	if (p->alloc_kind == ALLOC_PROBE_TRACER && p->use_multi)
		return attach_alloc_multi(p, quiet);
	if (p->alloc_kind == ALLOC_PROBE_EMPTY_UPROBE) {
		prog = p->skel->progs.on_alloc_entry_empty;
		ret = false;
	} else if (p->alloc_kind == ALLOC_PROBE_EMPTY_URETPROBE) {
		prog = p->skel->progs.on_alloc_return_empty;
	}
	/* The entry first: a return is seen only after an entry with both on. */
	if (p->alloc_kind == ALLOC_PROBE_TRACER && p->sites.store_probe) {
		i = p->sites.store_probe - 1;
		err = attach_uprobe(p, p->skel->progs.on_alloc_store_entry, NULL,
				    p->sites.alloc_names[i], p->sites.alloc_offsets[i], false,
				    quiet, p->slot, &p->links.alloc[p->links.nalloc]);
		if (err)
			return err;
		p->links.nalloc++;
	}
	for (i = 0; i < p->sites.alloc_probes; i++) {
		err =
		    attach_uprobe(p, prog, NULL, p->sites.alloc_names[i], p->sites.alloc_offsets[i],
				  ret, quiet, alloc_cookie(p, i), &p->links.alloc[p->links.nalloc]);
		if (err) {
			probes_detach_alloc(p);
			return err;
		}
		p->links.nalloc++;
	}
	return 0;
}

/*
 * A USDT link's attach and destroy both edit the BPF object's USDT manager
 * (its free spec ids, a realloc'd array): two sessions' links destroyed at
 * once freed it twice (ASan, --match with short Rubies ending together).
 */
static pthread_mutex_t usdt_lock = PTHREAD_MUTEX_INITIALIZER;

static int attach_usdt(struct probes *p, struct bpf_program *prog, const char *name)
{
	LIBBPF_OPTS(bpf_usdt_opts, opts, .usdt_cookie = p->slot);
	struct bpf_link *link;

	if (p->links.nusdt >= MAX_USDT_LINKS)
		return -E2BIG;
	pthread_mutex_lock(&usdt_lock);
	link = bpf_program__attach_usdt(prog, p->pid, p->binary, "ruby", name, &opts);
	pthread_mutex_unlock(&usdt_lock);
	if (!link) {
		int err = -errno;

		if (p->verbose)
			fprintf(stderr, "rbmemtrace: cannot attach USDT ruby:%s in %s: %s\n", name,
				p->binary, strerror(-err));
		return err;
	}
	if (p->verbose)
		fprintf(stderr, "rbmemtrace: attached USDT ruby:%s in %s (pid %d)\n", name,
			p->binary, p->pid);
	p->links.usdt[p->links.nusdt++] = link;
	return 0;
}

void probes_attach_compaction(struct probes *p)
{
	struct rbmemtrace_bpf *s = p->skel;

	/* Compaction follow-up: a Ruby without this symbol still reports not-followed objects. */
	if (attach_uprobe(p, s->progs.on_gc_update_refs, "rb_gc_update_tbl_refs",
			  "rb_gc_update_tbl_refs", 0, false, false, p->slot,
			  &p->links.other[p->links.nother]) == 0)
		p->links.nother++;
}

int probes_attach_gc(struct probes *p)
{
	struct rbmemtrace_bpf *s = p->skel;

	probes_attach_compaction(p);
	return attach_usdt(p, s->progs.on_gc_mark_begin, "gc__mark__begin") ?:
	       attach_usdt(p, s->progs.on_gc_mark_end, "gc__mark__end") ?:
	       attach_usdt(p, s->progs.on_gc_sweep_begin, "gc__sweep__begin") ?:
	       attach_usdt(p, s->progs.on_gc_sweep_end, "gc__sweep__end");
}

int probes_attach_launch_stops(struct probes *p)
{
	struct rbmemtrace_bpf *s = p->skel;
	int err;

	/*
	 * ruby_options has initialised the VM, booted rubygems, required the
	 * -r libraries and compiled the script when it returns: the program
	 * is traced from its first line.  Tracing from its entry instead
	 * trapped the ~57,000 allocations of rubygems' boot (~1.4 s).
	 */
	err = attach_uprobe(p, s->progs.on_ruby_start, "ruby_options", "ruby_options", 0, true,
			    false, p->slot, &p->links.other[p->links.nother]);
	if (err)
		return err;
	p->links.nother++;
	return probes_attach_exit_stop(p);
}

int probes_attach_exit_stop(struct probes *p)
{
	int err;

	/* ruby_sig_finalize: at_exit handlers have run, finalizers have not. */
	err =
	    attach_uprobe(p, p->skel->progs.on_ruby_exit, "ruby_sig_finalize", "ruby_sig_finalize",
			  0, false, false, p->slot, &p->links.other[p->links.nother]);
	if (err)
		return err;
	p->links.nother++;
	return 0;
}

int probes_attach_exit(struct probes *p)
{
	int err =
	    attach_uprobe(p, p->skel->progs.on_ruby_exit, "ruby_sig_finalize", "ruby_sig_finalize",
			  0, false, false, p->slot, &p->links.other[p->links.nother]);

	if (!err)
		p->links.nother++;
	return err;
}

struct detach_job {
	struct bpf_link *link; /* or */
	int fd;		       /* or */
	struct bpf_link *usdt[MAX_USDT_LINKS];
	int nusdt;
	int *pending;
};

static void destroy_job_links(struct detach_job *job)
{
	int i;

	if (job->link) {
		bpf_link__destroy(job->link);
	} else if (job->nusdt) {
		pthread_mutex_lock(&usdt_lock);
		for (i = 0; i < job->nusdt; i++)
			bpf_link__destroy(job->usdt[i]);
		pthread_mutex_unlock(&usdt_lock);
	} else {
		close(job->fd);
	}
}

/* Detach threads of every session still running: the process must not exit before they end. */
static int detaching_anywhere;

static void *destroy_link(void *arg)
{
	struct detach_job *job = arg;

	destroy_job_links(job);
	__atomic_sub_fetch(job->pending, 1, __ATOMIC_RELEASE);
	__atomic_sub_fetch(&detaching_anywhere, 1, __ATOMIC_RELEASE);
	free(job);
	return NULL;
}

/*
 * An exit while a thread was inside bpf_link__destroy left the probe's
 * breakpoint in the target's text with no probe behind it (serve stopped by
 * SIGTERM: 3 of 5 runs left one or two int3 bytes in libruby; a process
 * running into one dies of SIGTRAP).  So no exit() goes before the threads
 * end.  Bounded: a detach is a grace period (~0.1 s), or nothing at all
 * while shared_bpf_release_after_exit's child still holds the links.
 */
static void wait_detaches_at_exit(void)
{
	int ms;

	for (ms = 0; ms < 5000 && __atomic_load_n(&detaching_anywhere, __ATOMIC_ACQUIRE) > 0; ms++)
		usleep(1000);
}

/*
 * Taking a uprobe off removes its breakpoint at once, then waits for an RCU
 * grace period: about 0.1 s each here, one after another, and the probes
 * left kept firing meanwhile.  Each goes on a thread of its own, so every
 * breakpoint is gone at once and nobody waits for the grace periods.
 */
static void start_detach_job(struct probes *p, pthread_attr_t *attr, struct detach_job *proto)
{
	struct detach_job *job = malloc(sizeof(*job));
	pthread_t thread;

	static bool wait_at_exit;

	proto->pending = &p->links.detaching;
	if (!wait_at_exit)
		wait_at_exit = atexit(wait_detaches_at_exit) == 0;
	if (job) {
		*job = *proto;
		__atomic_add_fetch(&p->links.detaching, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&detaching_anywhere, 1, __ATOMIC_RELAXED);
		if (pthread_create(&thread, attr, destroy_link, job) == 0)
			return;
		__atomic_sub_fetch(&p->links.detaching, 1, __ATOMIC_RELAXED);
		__atomic_sub_fetch(&detaching_anywhere, 1, __ATOMIC_RELAXED);
		free(job);
	}
	destroy_job_links(proto);
}

static void detach_in_background(struct probes *p, pthread_attr_t *attr, struct bpf_link *link,
				 int fd)
{
	struct detach_job job = {.link = link, .fd = fd};

	start_detach_job(p, attr, &job);
}

/* The USDT links go one after another, on one thread, under usdt_lock. */
static void detach_usdt_in_background(struct probes *p, pthread_attr_t *attr)
{
	struct detach_job job = {.nusdt = p->links.nusdt};

	if (!p->links.nusdt)
		return;
	memcpy(job.usdt, p->links.usdt, sizeof(job.usdt));
	p->links.nusdt = 0;
	start_detach_job(p, attr, &job);
}

void probes_detach_alloc(struct probes *p)
{
	pthread_attr_t attr;
	int i;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (p->links.multi_fd > 0)
		detach_in_background(p, &attr, NULL, p->links.multi_fd);
	if (p->links.store_multi_fd > 0)
		detach_in_background(p, &attr, NULL, p->links.store_multi_fd);
	p->links.multi_fd = p->links.store_multi_fd = 0;
	for (i = 0; i < p->links.nalloc; i++)
		detach_in_background(p, &attr, p->links.alloc[i], -1);
	pthread_attr_destroy(&attr);
	p->links.nalloc = 0;
}

void probes_wait_detached(struct probes *p)
{
	while (__atomic_load_n(&p->links.detaching, __ATOMIC_ACQUIRE) > 0)
		usleep(1000);
}

void probes_detach_all_but_alloc(struct probes *p)
{
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	while (p->links.nother > 0)
		detach_in_background(p, &attr, p->links.other[--p->links.nother], -1);
	detach_usdt_in_background(p, &attr);
	pthread_attr_destroy(&attr);
}

/*
 * Returns at once: the links come off in the background (~0.1 s each, an
 * RCU grace period): nothing after the last detach needs to wait for them,
 * and an exiting rbmemtrace leaves what is left to the kernel.
 */
void probes_detach_all(struct probes *p)
{
	probes_detach_alloc(p);
	probes_detach_all_but_alloc(p);
}
