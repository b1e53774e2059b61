// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbmemtrace: which Ruby objects does a live process keep, and of which
 * class?  Attaches to a running Ruby (-p PID) or starts one (-- COMMAND),
 * traces allocations and frees, and prints a retention report.
 */
#include <argp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "attach.h"
#include "classnames.h"
#include "elfinfo.h"
#include "launch.h"
#include "procmaps.h"
#include <linux/types.h>
#include "rbmemtrace.h"
#include "rbmemtrace.skel.h"
#include "report.h"
#include "windows.h"
#include "ruby_symbols.h"
#include "stacks.h"
#include "ruby_versions.h"
#include "target_mem.h"
#include "tracker.h"

enum output_format { FORMAT_TEXT, FORMAT_JSON, FORMAT_FOLDED };

#define MAX_CLASS_FILTERS 64

static struct env {
	pid_t pid;
	double duration;
	enum output_format format;
	const char *output;
	int verbose;
	unsigned long max_objects;
	unsigned long top;
	unsigned long depth;
	unsigned long max_stacks;
	unsigned long paths;
	unsigned long prune;
	bool tree;
	bool full;		/* trace every allocation */
	double max_overhead;	/* percent; 0: not given */
	enum alloc_probe_kind empty_probes; /* benchmark baseline instead of the tracer */
	const char *classes[MAX_CLASS_FILTERS];
	int nclasses;
	char **command;
} env = {
	.max_objects = 1 << 20,
	.top = 30,
	.depth = 32,
	.max_stacks = 65536,
	.paths = 10,
	.prune = 5,
};

const char *argp_program_version = "rbmemtrace " RBMEMTRACE_VERSION;
const char *argp_program_bug_address = "the rbmemtrace issue tracker";
static const char doc[] =
	"Trace Ruby object allocations and frees in a live process and report, per class, "
	"how many objects were allocated, freed and are still retained.\n"
	"\n"
	"USAGE: rbmemtrace -p PID [-d SECONDS] [--format text|json] [-o FILE]\n"
	"       rbmemtrace [OPTIONS] -- COMMAND [ARGS...]\n"
	"\n"
	"EXAMPLES:\n"
	"    rbmemtrace -p 1234              # trace until Ctrl-C, then report\n"
	"    rbmemtrace -p 1234 -d 30 --format json -o leak.json\n"
	"    rbmemtrace -- ruby app.rb       # trace a program from its first Ruby instruction";

enum {
	OPT_FORMAT = 0x100,
	OPT_MAX_OBJECTS,
	OPT_TOP,
	OPT_DEPTH,
	OPT_MAX_STACKS,
	OPT_CLASS,
	OPT_TREE,
	OPT_PRUNE,
	OPT_PATHS,
	OPT_EMPTY_PROBES,
	OPT_FULL,
	OPT_MAX_OVERHEAD,
};

static const struct argp_option opts[] = {
	{"pid", 'p', "PID", 0, "Ruby process to trace", 0},
	{"duration", 'd', "SECONDS", 0, "Stop after SECONDS (default: until Ctrl-C or SIGTERM)", 0},
	{"format", OPT_FORMAT, "FORMAT", 0,
	 "Report format: text (default), json, or folded (flame graph input, by retained)", 0},
	{"output", 'o', "FILE", 0, "Write the report to FILE instead of standard output", 0},
	{"max-objects", OPT_MAX_OBJECTS, "N",
	 0, "Track at most N live objects (default 1048576); more are counted as untracked", 0},
	{"top", OPT_TOP, "N", 0, "Show the N classes that retain most in text (default 30, 0: all)", 0},
	{"depth", OPT_DEPTH, "N", 0, "Ruby frames captured per allocation (default 32, max 128, 0: no stacks)", 0},
	{"max-stacks", OPT_MAX_STACKS, "N", 0, "Distinct call paths kept (default 65536); more are counted as dropped", 0},
	{"class", OPT_CLASS, "NAME", 0, "Capture stacks for and report only class NAME (repeatable)", 0},
	{"tree", OPT_TREE, NULL, 0, "Print the retention call tree", 0},
	{"prune", OPT_PRUNE, "N", 0, "Keep the N children that retain most per tree node (default 5, 0: all)", 0},
	{"paths", OPT_PATHS, "N", 0, "Call paths shown in text (default 10, 0: all)", 0},
	{"max-overhead", OPT_MAX_OVERHEAD, "PERCENT", 0,
	 "Slow the target by at most PERCENT: trace allocations in short random windows and "
	 "scale the counts (default 2 with -p; -- COMMAND traces everything)", 0},
	{"full", OPT_FULL, NULL, 0, "Trace every allocation, for exact counts (the default with --)",
	 0},
	{"verbose", 'v', NULL, 0, "Explain what is found and attached", 0},
	{"empty-probes", OPT_EMPTY_PROBES, "uprobe|uretprobe", 0,
	 "Benchmark baseline: attach empty programs at the allocation functions, trace nothing", 0},
	{NULL, 'h', NULL, OPTION_HIDDEN, "Show the full help", 0},
	{},
};

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("rbmemtrace: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static unsigned long parse_number(const char *arg, const char *what, unsigned long min,
				  unsigned long max)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max || arg[0] == '-')
		die("invalid %s: %s (expected a number from %lu to %lu)", what, arg, min, max);
	return v;
}

/* A whole argument as a number; 0 or -EINVAL. */
static int parse_real(const char *arg, double *value)
{
	char *end;

	errno = 0;
	*value = strtod(arg, &end);
	return errno || end == arg || *end ? -EINVAL : 0;
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'p':
		env.pid = parse_number(arg, "PID", 1, INT32_MAX);
		break;
	case 'd':
		if (parse_real(arg, &env.duration) || !(env.duration > 0))
			die("invalid duration: %s (expected seconds > 0)", arg);
		break;
	case OPT_FORMAT:
		if (strcmp(arg, "text") == 0)
			env.format = FORMAT_TEXT;
		else if (strcmp(arg, "json") == 0)
			env.format = FORMAT_JSON;
		else if (strcmp(arg, "folded") == 0)
			env.format = FORMAT_FOLDED;
		else
			die("invalid format: %s (expected text, json or folded)", arg);
		break;
	case 'o':
		env.output = arg;
		break;
	case OPT_MAX_OBJECTS:
		env.max_objects = parse_number(arg, "--max-objects", 1024, 1UL << 28);
		break;
	case OPT_TOP:
		env.top = parse_number(arg, "--top", 0, 1UL << 31);
		break;
	case OPT_DEPTH:
		env.depth = parse_number(arg, "--depth", 0, MAX_STACK_DEPTH);
		break;
	case OPT_MAX_STACKS:
		env.max_stacks = parse_number(arg, "--max-stacks", 16, 1UL << 22);
		break;
	case OPT_CLASS:
		if (env.nclasses == MAX_CLASS_FILTERS)
			die("too many --class options (at most %d)", MAX_CLASS_FILTERS);
		env.classes[env.nclasses++] = arg;
		break;
	case OPT_TREE:
		env.tree = true;
		break;
	case OPT_PRUNE:
		env.prune = parse_number(arg, "--prune", 0, 1UL << 20);
		break;
	case OPT_PATHS:
		env.paths = parse_number(arg, "--paths", 0, 1UL << 31);
		break;
	case 'v':
		env.verbose++;
		break;
	case OPT_FULL:
		env.full = true;
		break;
	case OPT_MAX_OVERHEAD:
		if (parse_real(arg, &env.max_overhead) || !(env.max_overhead >= 0.1) ||
		    env.max_overhead > 50)
			die("invalid --max-overhead: %s (expected a percentage from 0.1 to 50)", arg);
		break;
	case OPT_EMPTY_PROBES:
		if (strcmp(arg, "uprobe") == 0)
			env.empty_probes = ALLOC_PROBE_EMPTY_UPROBE;
		else if (strcmp(arg, "uretprobe") == 0)
			env.empty_probes = ALLOC_PROBE_EMPTY_URETPROBE;
		else
			die("invalid --empty-probes: %s (expected uprobe or uretprobe)", arg);
		break;
	case 'h':
		argp_state_help(state, stderr, ARGP_HELP_STD_HELP);
		break;
	case ARGP_KEY_ARGS:
		env.command = state->argv + state->next;
		break;
	case ARGP_KEY_END:
		if (!env.pid && !env.command)
			die("nothing to trace: give -p PID or -- COMMAND (see --help)");
		if (env.pid && env.command)
			die("give either -p PID or -- COMMAND, not both");
		if (env.full && env.max_overhead)
			die("give either --full or --max-overhead, not both");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG || !env.verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	exiting = sig;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static bool have_capability(const struct __user_cap_data_struct *caps, int cap)
{
	return caps[cap / 32].effective & (1U << (cap % 32));
}

static void check_privileges(void)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct caps[2] = {};

	if (geteuid() == 0)
		return;
	if (syscall(SYS_capget, &hdr, caps) == 0 &&
	    ((have_capability(caps, CAP_BPF) && have_capability(caps, CAP_PERFMON)) ||
	     have_capability(caps, CAP_SYS_ADMIN)))
		return;
	die("not enough privileges: run as root, or with CAP_BPF and CAP_PERFMON "
	    "(and CAP_SYS_PTRACE for another user's process)");
}

/* Reads the VALUE a libruby global (rb_cObject...) holds in the target. */
static uint64_t read_ruby_global(pid_t pid, const struct ruby_image *img, const char *name)
{
	uint64_t sym, value;

	if (elf_symbol_value(img->host_path, name, &sym, NULL))
		die("%s has no symbol %s", img->path, name);
	if (target_read_u64(pid, img->load_bias + sym, &value))
		die("cannot read %s in PID %d: %s", name, pid, strerror(errno));
	return value;
}

/* rb_class_allocate_instance is hidden; BasicObject's allocator points at it. */
static uint64_t find_class_allocate_instance(pid_t pid, const struct ruby_image *img,
					     const struct ruby_offsets *off)
{
	uint64_t basic_object = read_ruby_global(pid, img, "rb_cBasicObject");
	uint64_t ext, fn, file_offset;

	if (target_read_u64(pid, basic_object + off->rclass_ext, &ext) ||
	    target_read_u64(pid, ext + off->classext_allocator, &fn) ||
	    procmaps_file_offset(pid, img->path, fn, &file_offset))
		die("cannot find rb_class_allocate_instance through BasicObject's allocator: "
		    "Ruby internals differ from the table for %s",
		    off->series);
	if (env.verbose)
		fprintf(stderr, "rbmemtrace: rb_class_allocate_instance at 0x%" PRIx64
				" (file offset 0x%" PRIx64 ")\n",
			fn, file_offset);
	return file_offset;
}

static uint64_t find_objspace(pid_t pid, const struct ruby_image *img,
			      const struct ruby_offsets *off)
{
	uint64_t vm_ptr, objspace;

	vm_ptr = read_ruby_global(pid, img, "ruby_current_vm_ptr");
	if (!vm_ptr || target_read_u64(pid, vm_ptr + off->vm_objspace, &objspace))
		return 0;
	return objspace;
}

struct session;
static void configure_stacks(struct session *s);
struct target_counts;
static void read_target_counts(struct session *s, struct target_counts *c);

/* GC.stat's allocation counters, read from the target's objspace. */
struct target_counts {
	uint64_t allocated;
	uint64_t freed;
	bool valid;
};

struct session {
	pid_t pid;
	bool launched;
	struct ruby_image img;
	char version[32];
	const struct ruby_offsets *off;
	struct rbmemtrace_bpf *skel;
	struct probes probes;
	struct class_namer namer;
	struct tracker tracker;
	struct ruby_symbols symbols;
	struct symbolizer symbolizer;
	struct u64map filtered; /* klass -> 1 captured, 2 skipped (--class) */
	bool use_multi;		/* the kernel has uprobe_multi links */
	uint64_t stacks_named;	/* stacks_stored when refresh_stacks last walked the map */
	bool sampling;		/* --max-overhead: probes attached in windows */
	struct windows windows;
	uint64_t objspace;	/* the target's rb_objspace_t, 0 if unknown */
	struct target_counts counts_start, counts_last;
	bool final_done;
	bool target_exited;
	int exit_status;
};

static bool class_wanted(const char *name)
{
	int i;

	if (!env.nclasses)
		return true;
	for (i = 0; i < env.nclasses; i++)
		if (strcmp(env.classes[i], name) == 0)
			return true;
	return false;
}

/* Names the call paths the BPF side stored since the last refresh. */
static void refresh_stacks(struct session *s)
{
	size_t value_size = bpf_map__value_size(s->skel->maps.stacks);
	int fd = bpf_map__fd(s->skel->maps.stacks);
	int selves_fd = bpf_map__fd(s->skel->maps.stack_selves);
	struct stack_frames *st = calloc(1, sizeof(*st) > value_size ? sizeof(*st) : value_size);
	struct stack_selves *selves = calloc(1, sizeof(*selves));
	__u64 key, next, *prev = NULL;
	uint64_t stored = __atomic_load_n(&s->skel->bss->stacks_stored, __ATOMIC_ACQUIRE);

	/* Walking the map costs a syscall a path: only when there are new ones. */
	if (stored == s->stacks_named)
		goto out;
	s->stacks_named = stored;
	if (!st || !selves)
		goto out;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		bool have_selves;

		key = next;
		prev = &key;
		if (symbolizer_stack(&s->symbolizer, key) || bpf_map_lookup_elem(fd, &key, st))
			continue;
		have_selves = bpf_map_lookup_elem(selves_fd, &key, selves) == 0;
		symbolizer_add_stack(&s->symbolizer, key, (const uint64_t *)st->frames,
				     have_selves ? (const uint64_t *)selves->self : NULL,
				     st->depth > env.depth ? env.depth : st->depth, st->truncated);
		/* Named: the receivers were only needed for that. */
		bpf_map_delete_elem(selves_fd, &key);
	}
out:
	free(selves);
	free(st);
}

/*
 * Names and call paths are resolved while the target lives, so a report
 * taken after it exits still has them.  With --class, classes are sorted
 * into captured and skipped as soon as they are named.
 */
static void refresh_names(struct session *s)
{
	int filter_fd = bpf_map__fd(s->skel->maps.class_filter);
	size_t i;

	tracker_collect_counts(&s->tracker);
	u64map_for_each(&s->tracker.tallies, i)
	{
		struct class_tally *t = s->tracker.tallies.values[i];
		const char *name = class_namer_key_name(&s->namer, t->klass, t->kind);

		if (env.nclasses && t->klass && !u64map_get(&s->filtered, t->klass)) {
			__u8 capture = class_wanted(name);
			__u64 klass = t->klass;

			bpf_map_update_elem(filter_fd, &klass, &capture, BPF_ANY);
			u64map_put(&s->filtered, t->klass, (void *)(uintptr_t)(capture ? 1 : 2));
		}
	}
	if (env.depth)
		refresh_stacks(s);
}

/* Stops the allocation probes and takes the census the report is made of. */
static void final_census(struct session *s)
{
	if (s->final_done)
		return;
	s->final_done = true;
	if (s->sampling)
		windows_close(&s->windows);
	probes_detach_alloc(&s->probes);
	if (s->sampling)
		windows_stop(&s->windows, now_s());
	refresh_names(s);
	if (!s->target_exited && tracker_pass(&s->tracker, true) == -ESRCH)
		s->target_exited = true;
	if (!s->target_exited)
		read_target_counts(s, &s->counts_last);
	/* Nothing left to read: objects count as they stood at the last check. */
	if (s->target_exited)
		tracker_count_unverified(&s->tracker);
}

static int name_id(void *ctx, uint64_t id, char *buf, size_t n)
{
	return ruby_id_name(ctx, id, buf, n);
}

/*
 * The walk finds the thread's execution context through libruby's TLS
 * variable ruby_current_ec: right for threads, fibers and Ractors alike.
 */
static void configure_stacks(struct session *s)
{
	const struct ruby_offsets *off = s->off;
	struct stack_config cfg = {};
	uint64_t slot, tls_offset, modid;
	char err[256];

	if (!env.depth)
		return;
	if (!s->img.shared ||
	    elf_tls_module_slot(s->img.host_path, "ruby_current_ec", &slot) ||
	    elf_symbol_value(s->img.host_path, "ruby_current_ec", &tls_offset, NULL) ||
	    target_read_u64(s->pid, s->img.load_bias + slot, &modid) || !modid) {
		fprintf(stderr, "rbmemtrace: warning: cannot find ruby_current_ec's TLS slot in %s; "
				"reporting without call paths\n",
			s->img.path);
		env.depth = 0;
		return;
	}
	if (ruby_symbols_init(&s->symbols, s->pid, &s->img, off, err, sizeof(err)) == 0) {
		symbolizer_init(&s->symbolizer, s->pid, off, &s->namer, name_id, &s->symbols);
	} else {
		fprintf(stderr, "rbmemtrace: warning: %s; C methods print as Owner#?\n", err);
		symbolizer_init(&s->symbolizer, s->pid, off, &s->namer, NULL, NULL);
	}
	cfg.tls_modid = modid;
	cfg.ec_tls_offset = tls_offset;
	cfg.ec_vm_stack = off->ec_vm_stack;
	cfg.ec_vm_stack_size = off->ec_vm_stack_size;
	cfg.ec_cfp = off->ec_cfp;
	cfg.cfp_size = off->cfp_size;
	cfg.cfp_pc = off->cfp_pc;
	cfg.cfp_iseq = off->cfp_iseq;
	cfg.cfp_ep = off->cfp_ep;
	cfg.cfp_self = off->cfp_self;
	cfg.depth = env.depth;
	s->skel->bss->filter_classes = env.nclasses > 0;
	s->skel->bss->stack_cfg = cfg;
	if (env.verbose)
		fprintf(stderr, "rbmemtrace: stacks: depth %lu, TLS module %" PRIu64
				", ruby_current_ec at +%" PRIu64 "\n",
			env.depth, modid, tls_offset);
}

static void build_report(struct session *s, struct report *r, double duration, const char *reason)
{
	size_t i;

	r->pid = s->pid;
	snprintf(r->ruby_version, sizeof(r->ruby_version), "%s", s->version);
	r->duration_s = duration;
	r->end_reason = reason;
	r->target_exited = s->target_exited;
	r->exit_status = s->launched ? s->exit_status : -1;
	r->gc_runs = s->skel->bss->gc_runs;
	r->compactions = s->tracker.compactions;
	r->moved_followed = s->tracker.moved_followed + s->skel->bss->moved_followed;
	r->header_read_errors = s->skel->bss->header_read_errors;
	r->class_overflow = s->skel->bss->class_overflow;
	r->with_stacks = env.depth > 0;
	r->stacks_truncated = s->skel->bss->stacks_truncated;
	r->stacks_dropped = s->skel->bss->stacks_dropped;
	r->stack_errors = s->skel->bss->stack_errors;
	r->have_gc_counts = s->counts_start.valid && s->counts_last.valid;
	if (r->have_gc_counts) {
		r->gc_allocated = s->counts_last.allocated - s->counts_start.allocated;
		r->gc_freed = s->counts_last.freed - s->counts_start.freed;
	}
	if (s->sampling) {
		struct sampling_info *si = &r->sampling;
		uint64_t traced = 0;

		u64map_for_each(&s->tracker.tallies, i)
		{
			struct class_tally *t = s->tracker.tallies.values[i];

			traced += t->allocated;
		}
		si->on = true;
		si->budget_percent = env.max_overhead;
		si->windows = s->windows.sampler.windows;
		si->window_time_s = s->windows.sampler.window_time;
		si->est_overhead = sampler_overhead(&s->windows.sampler, duration);
		si->traced = traced;
		si->probe_hits = s->windows.sampler.hits;
		si->scale = r->have_gc_counts && traced ? (double)r->gc_allocated / traced : 0;
	}
	u64map_for_each(&s->tracker.tallies, i)
	{
		struct class_tally *t = s->tracker.tallies.values[i];
		struct counts c = {
			.allocated = t->allocated,
			.retained = t->retained,
			.untracked = t->untracked,
			.not_followed = t->not_followed,
		};
		uint64_t accounted = t->retained + t->untracked + t->not_followed;

		const char *name = class_namer_key_name(&s->namer, t->klass, t->kind);

		c.freed = t->allocated > accounted ? t->allocated - accounted : 0;
		if (!class_wanted(name))
			continue;
		report_add(r, name, &c);
		if (t->stack_id)
			report_add_stack(r, name, symbolizer_stack(&s->symbolizer, t->stack_id), &c);
	}
	report_finish(r);
}

static void open_target(struct session *s)
{
	char err[PATH_MAX + 128];

	if (procmaps_find_ruby(s->pid, &s->img, err, sizeof(err)))
		die("%s", err);
}

static void check_ruby_file(struct session *s, const char *host_path, const char *shown)
{
	if (elf_symbol_string(host_path, "ruby_version", s->version, sizeof(s->version)))
		die("cannot read the Ruby version (ruby_version) from %s", shown);
	s->off = ruby_offsets_for(s->version);
	if (!s->off)
		die("unsupported Ruby version %s in %s (supported: %s)", s->version, shown,
		    ruby_supported_series());
	if (!elf_has_usdt(host_path, "ruby", "gc__sweep__end"))
		die("%s was built without USDT probes (configure --enable-dtrace); rbmemtrace "
		    "needs ruby:gc__* to see frees",
		    shown);
	if (env.verbose)
		fprintf(stderr, "rbmemtrace: Ruby %s in %s (offsets: %s)\n", s->version, shown,
			s->off->source);
}

static int open_and_load(struct session *s, bool multi)
{
	s->skel = rbmemtrace_bpf__open();
	if (!s->skel)
		die("cannot open the BPF object: %s", strerror(errno));
	bpf_map__set_max_entries(s->skel->maps.live_objects, env.max_objects);
	bpf_map__set_max_entries(s->skel->maps.stacks, env.max_stacks);
	/* Store only the frames asked for: a 128-deep value for a depth of 8 wastes memory. */
	bpf_map__set_value_size(s->skel->maps.stacks,
				offsetof(struct stack_frames, frames) +
					(env.depth ? env.depth : 1) * 2 * sizeof(__u64));
	bpf_map__set_max_entries(s->skel->maps.stack_selves, env.max_stacks);
	bpf_map__set_value_size(s->skel->maps.stack_selves,
				(env.depth ? env.depth : 1) * sizeof(__u64));
	if (multi)
		bpf_program__set_expected_attach_type(s->skel->progs.on_alloc_return_multi,
						      RBM_BPF_TRACE_UPROBE_MULTI);
	else
		bpf_program__set_autoload(s->skel->progs.on_alloc_return_multi, false);
	return rbmemtrace_bpf__load(s->skel);
}

static void load_bpf(struct session *s)
{
	int err;

	libbpf_set_print(NULL); /* a kernel without uprobe_multi is not an error */
	s->use_multi = open_and_load(s, true) == 0;
	libbpf_set_print(libbpf_print);
	if (s->use_multi)
		return;
	rbmemtrace_bpf__destroy(s->skel);
	if (env.verbose)
		fprintf(stderr, "rbmemtrace: no uprobe_multi links here; one link per probe\n");
	err = open_and_load(s, false);
	if (err)
		die("cannot load the BPF programs: %s (needs a kernel with BTF, BPF and uprobes)",
		    strerror(-err));
}

/* Launch mode: start the command held, let it run to ruby_options, where it stops. */
static void start_command(struct session *s)
{
	char ruby_file[PATH_MAX], err[PATH_MAX + 128];
	int release_fd, status;

	if (launch_find_ruby(env.command[0], ruby_file, sizeof(ruby_file), err, sizeof(err)))
		die("%s", err);
	check_ruby_file(s, ruby_file, ruby_file);
	load_bpf(s);

	s->pid = launch_spawn(env.command, &release_fd);
	if (s->pid < 0)
		die("cannot start %s: %s", env.command[0], strerror(-s->pid));
	s->launched = true;
	s->probes = (struct probes){.skel = s->skel, .pid = s->pid, .binary = ruby_file,
				    .verbose = env.verbose};
	s->skel->bss->stop_at_start = 1;
	s->skel->bss->stop_at_exit = 1;
	if (probes_attach_launch_stops(&s->probes)) {
		kill(s->pid, SIGKILL);
		die("cannot attach to %s", ruby_file);
	}
	launch_release(release_fd);
	if (waitpid(s->pid, &status, WUNTRACED) != s->pid || !WIFSTOPPED(status))
		die("%s exited before Ruby started (status %d)", env.command[0],
		    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	open_target(s);
	/* From here on, attach to the file as the running child maps it. */
	s->probes.binary = s->img.host_path;
}

static void read_target_counts(struct session *s, struct target_counts *c)
{
	const struct ruby_offsets *off = s->off;

	c->valid = s->objspace && off->objspace_total_allocated &&
		   !target_read_u64(s->pid, s->objspace + off->objspace_total_allocated,
				    &c->allocated) &&
		   !target_read_u64(s->pid, s->objspace + off->objspace_total_freed, &c->freed);
}

/* Waits for the launched child; its exit status, or -1 while it runs. */
static int reap_child(pid_t pid, bool block)
{
	int status;

	if (waitpid(pid, &status, block ? 0 : WNOHANG) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* --empty-probes: the trap alone at every allocation, for bench/; no report. */
static int run_empty_probes(struct session *s)
{
	double start = now_s();
	int status = 0;

	if (probes_attach_alloc(&s->probes, false)) {
		if (s->launched)
			kill(s->pid, SIGKILL);
		die("cannot attach to PID %d", s->pid);
	}
	if (s->launched) {
		/* Past the stop at ruby_options, the exit stop is not needed. */
		probes_detach_all_but_alloc(&s->probes);
		kill(s->pid, SIGCONT);
	}
	fprintf(stderr, "rbmemtrace: empty %s probes on PID %d (benchmark baseline)\n",
		env.empty_probes == ALLOC_PROBE_EMPTY_UPROBE ? "uprobe" : "uretprobe", s->pid);
	while (!exiting && !(env.duration && now_s() - start >= env.duration)) {
		if (s->launched ? (status = reap_child(s->pid, false)) >= 0
				: kill(s->pid, 0) && errno == ESRCH)
			break;
		usleep(50 * 1000);
	}
	probes_detach_all(&s->probes);
	rbmemtrace_bpf__destroy(s->skel);
	return s->launched && status > 0 ? status : 0;
}

int main(int argc, char **argv)
{
	static const struct argp argp = {opts, parse_arg, "[-- COMMAND [ARGS...]]", doc, 0, 0, 0};
	struct session s = {.exit_status = -1};
	struct report report = {};
	const char *reason = "signal";
	uint64_t seen_sweeps = 0;
	double start, end, last_pass = 0, last_names = 0;
	FILE *out = stdout;
	int err, status;

	err = argp_parse(&argp, argc, argv, 0, NULL, NULL);
	if (err)
		return 1;
	check_privileges();
	libbpf_set_print(libbpf_print);

	if (env.output) {
		out = fopen(env.output, "w");
		if (!out)
			die("cannot write %s: %s", env.output, strerror(errno));
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	if (env.command) {
		start_command(&s);
	} else {
		s.pid = env.pid;
		open_target(&s);
		check_ruby_file(&s, s.img.host_path, s.img.path);
		load_bpf(&s);
		s.probes = (struct probes){.skel = s.skel, .pid = s.pid,
					   .binary = s.img.host_path, .verbose = env.verbose};
	}
	if (env.verbose)
		fprintf(stderr, "rbmemtrace: %s mapped at load bias 0x%" PRIx64 "\n", s.img.path,
			s.img.load_bias);

	{
		char errbuf[256];
		uint64_t object_class = read_ruby_global(s.pid, &s.img, "rb_cObject");
		uint64_t alloc_offset = find_class_allocate_instance(s.pid, &s.img, s.off);

		if (class_namer_init(&s.namer, s.pid, s.off, object_class, errbuf, sizeof(errbuf)))
			die("%s", errbuf);
		s.probes.class_allocate_instance = alloc_offset;
		s.probes.use_multi = s.use_multi;
		s.objspace = find_objspace(s.pid, &s.img, s.off);
		s.probes.alloc_kind = env.empty_probes;
		if (env.empty_probes)
			return run_empty_probes(&s);
		configure_stacks(&s);
		tracker_init(&s.tracker, s.pid, bpf_map__fd(s.skel->maps.live_objects),
			     bpf_map__fd(s.skel->maps.class_counts), &s.skel->bss->reap,
			     s.objspace && s.off->objspace_compact_count
				     ? s.objspace + s.off->objspace_compact_count
				     : 0);
		s.tracker.compaction_pending = &s.skel->bss->compaction_pending;
		s.tracker.fl_singleton = s.off->fl_singleton;
		s.tracker.rclass_super = s.off->rclass_super;
		s.skel->bss->compact_count_addr = s.tracker.compact_count_addr;
		s.skel->bss->compact_count_seen = s.tracker.last_compact_count;
		/* Attaching a running process is safe by default; a launched one is ours. */
		if (!env.full && !env.max_overhead && !s.launched)
			env.max_overhead = 2;
		s.sampling = !env.full && env.max_overhead > 0;
		/* Sampling: this attach is the first window, opened below. */
		if (probes_attach_gc(&s.probes) || probes_attach_alloc(&s.probes, false)) {
			probes_detach_all(&s.probes);
			if (s.launched)
				kill(s.pid, SIGCONT);
			die("cannot attach to PID %d", s.pid);
		}
	}
	read_target_counts(&s, &s.counts_start);
	s.counts_last = s.counts_start;
	if (s.sampling)
		windows_start(&s.windows, &s.probes, s.skel, env.max_overhead, env.verbose,
			      now_s());
	if (s.launched)
		kill(s.pid, SIGCONT);
	if (s.sampling)
		fprintf(stderr, "rbmemtrace: sampling PID %d (ruby %s) within %.3g%% overhead: counts "
				"are estimates (--full traces every allocation)%s\n",
			s.pid, s.version, env.max_overhead,
			env.duration ? "" : s.launched ? "; until it exits or Ctrl-C" : "; Ctrl-C to stop");
	else
		fprintf(stderr, "rbmemtrace: tracing PID %d (ruby %s)%s\n", s.pid, s.version,
			env.duration ? "" : s.launched ? " until it exits or Ctrl-C" : "; Ctrl-C to stop");

	start = now_s();
	for (;;) {
		double t = now_s();
		uint64_t sweeps;

		if (exiting)
			break;
		if (env.duration && t - start >= env.duration) {
			reason = "duration";
			break;
		}
		if (s.launched) {
			pid_t r = waitpid(s.pid, &status, WNOHANG | WUNTRACED);

			if (r == s.pid && WIFSTOPPED(status)) {
				/* Stopped at ruby_sig_finalize: the main program is done. */
				final_census(&s);
				kill(s.pid, SIGCONT);
				while (waitpid(s.pid, &status, 0) < 0 && errno == EINTR)
					;
				s.exit_status = WIFEXITED(status) ? WEXITSTATUS(status)
								  : 128 + WTERMSIG(status);
				reason = "command finished";
				break;
			}
			if (r == s.pid) {
				s.exit_status = WIFEXITED(status) ? WEXITSTATUS(status)
								  : 128 + WTERMSIG(status);
				s.target_exited = true;
				reason = "target exited";
				break;
			}
		} else if (kill(s.pid, 0) && errno == ESRCH) {
			s.target_exited = true;
			reason = "target exited";
			break;
		}

		if (s.sampling) {
			windows_step(&s.windows, t);
			/* A window is short and costly: nothing may hold it open longer. */
			if (s.windows.sampler.in_window) {
				double wait = s.windows.sampler.phase_end - now_s();

				usleep(wait <= 0 ? 0 : wait * 1e6);
				continue;
			}
		}
		sweeps = __atomic_load_n(&s.skel->bss->sweep_steps, __ATOMIC_ACQUIRE);
		if (sweeps != seen_sweeps && t - last_pass >= 0.2) {
			seen_sweeps = sweeps;
			last_pass = t;
			if (tracker_pass(&s.tracker, false) == -ESRCH)
				continue; /* noticed at the top of the loop */
		}
		/* Often: a class first seen just before the target exits still needs its name. */
		if (t - last_names >= 0.2) {
			last_names = t;
			refresh_names(&s);
			read_target_counts(&s, &s.counts_last);
		}
		if (s.sampling) {
			double wait = s.windows.sampler.phase_end - now_s();

			usleep(wait <= 0 ? 0 : wait < 0.05 ? wait * 1e6 : 50 * 1000);
		} else {
			usleep(50 * 1000);
		}
	}
	end = now_s();

	final_census(&s);
	probes_detach_all(&s.probes);
	build_report(&s, &report, end - start, reason);
	if (env.format == FORMAT_JSON) {
		report_write_json(out, &report);
	} else if (env.format == FORMAT_FOLDED) {
		report_write_folded(out, &report);
	} else {
		struct text_options topts = {.top = env.top, .top_stacks = env.paths,
					     .tree = env.tree, .prune = env.prune};

		report_write_text(out, &report, &topts);
	}
	if (out != stdout)
		fclose(out);

	report_free(&report);
	symbolizer_free(&s.symbolizer);
	u64map_free(&s.filtered, NULL);
	tracker_free(&s.tracker);
	class_namer_free(&s.namer);
	rbmemtrace_bpf__destroy(s.skel);
	if (s.launched && s.exit_status >= 0)
		return s.exit_status;
	return 0;
}
