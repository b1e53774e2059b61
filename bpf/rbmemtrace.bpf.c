// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbmemtrace: count Ruby object allocations per class and keep the set of
 * live objects, keyed by address, for the userspace loader to validate.
 *
 * Hot path: one uretprobe per allocation.  The trap costs microseconds, so
 * the program itself does as little as it can: one 16-byte read of the new
 * object's header, one per-CPU counter update and one map update.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "rbmemtrace.h"

#define SIGSTOP 19

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1 << 20); /* resized by the loader: --max-objects */
	__type(key, __u64);
	__type(value, struct live_object);
} live_objects SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct class_key);
	__type(value, struct class_counts);
} class_counts SEC(".maps");

/* Written by BPF, read by userspace through the mmaped .bss. */
__u64 gc_runs;          /* ruby:gc__mark__end */
__u64 sweep_steps;      /* ruby:gc__sweep__end */
__u64 header_read_errors;
__u64 class_overflow;   /* allocations not counted: class_counts full */
__u64 reaped;
__u32 stop_at_start;    /* --: stop the child once Ruby is initialised */
__u32 stop_at_exit;     /* --: stop the child when its main program ends */

struct reap_queue reap;

struct object_header {
	__u64 flags;
	__u64 klass;
};

SEC("uretprobe")
int BPF_KRETPROBE(on_alloc_return, __u64 obj) /* libbpf 1.1 has no BPF_URETPROBE */
{
	struct object_header hdr;
	struct class_key key = {};
	struct class_counts *counts;
	struct live_object live;
	__u32 type;

	if (!obj || bpf_probe_read_user(&hdr, sizeof(hdr), (void *)obj)) {
		__sync_fetch_and_add(&header_read_errors, 1);
		return 0;
	}

	type = hdr.flags & RB_T_MASK;
	if (type == RB_T_IMEMO) {
		key.kind = RBM_KIND(type, (hdr.flags >> RB_IMEMO_SHIFT) & RB_IMEMO_MASK);
	} else {
		key.kind = type;
		key.klass = hdr.klass;
	}

	counts = bpf_map_lookup_elem(&class_counts, &key);
	if (!counts) {
		struct class_counts zero = {};

		bpf_map_update_elem(&class_counts, &key, &zero, BPF_NOEXIST);
		counts = bpf_map_lookup_elem(&class_counts, &key);
		if (!counts) {
			__sync_fetch_and_add(&class_overflow, 1);
			return 0;
		}
	}
	counts->allocated++;

	live.klass = key.klass;
	live.kind = key.kind;
	live.seq = bpf_ktime_get_ns();
	live.stack_id = 0;
	/* An existing entry at this address is an object GC already freed. */
	if (bpf_map_update_elem(&live_objects, &obj, &live, BPF_ANY))
		counts->untracked++;
	return 0;
}

static long reap_one(__u32 i, void *ctx)
{
	struct live_object *live;
	__u64 addr;

	if (i >= REAP_MAX)
		return 1;
	addr = reap.addr[i];
	live = bpf_map_lookup_elem(&live_objects, &addr);
	if (live && live->seq == reap.seq[i] && !bpf_map_delete_elem(&live_objects, &addr))
		reaped++;
	return 0;
}

static void reap_pending(void)
{
	__u32 len = *(volatile __u32 *)&reap.len;

	if (!len)
		return;
	bpf_loop(len > REAP_MAX ? REAP_MAX : len, reap_one, NULL, 0);
	*(volatile __u32 *)&reap.len = 0;
}

SEC("usdt")
int BPF_USDT(on_gc_mark_begin)
{
	reap_pending();
	return 0;
}

SEC("usdt")
int BPF_USDT(on_gc_mark_end)
{
	__sync_fetch_and_add(&gc_runs, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_gc_sweep_begin)
{
	reap_pending();
	return 0;
}

SEC("usdt")
int BPF_USDT(on_gc_sweep_end)
{
	__sync_fetch_and_add(&sweep_steps, 1);
	return 0;
}

/*
 * Launch mode: the child stops itself at these points so the loader can read
 * what only a running Ruby has (the hidden allocator's address) and take a
 * final census before finalizers run.  Each fires once.
 */
SEC("uprobe")
int on_ruby_start(void *ctx)
{
	if (stop_at_start) {
		stop_at_start = 0;
		bpf_send_signal(SIGSTOP);
	}
	return 0;
}

SEC("uprobe")
int on_ruby_exit(void *ctx)
{
	if (stop_at_exit) {
		stop_at_exit = 0;
		bpf_send_signal(SIGSTOP);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
