// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The heap decoders on a hostile target's memory: class names
 * (ruby/classnames.c), Strings (ruby_string.c), every object's references
 * (heap/refs_*.c: arrays, hashes and their tables, ivars, classes, envs,
 * procs, data), and the layout proof (ruby/layout_proof.c, with the refs
 * group of heap/refs_proof.c).  They read the target through
 * process/target_mem.h, which this harness defines instead of
 * target_mem.c: the target's memory is the input.
 *
 * The input: a byte choosing the Ruby series (its built-in layout), then
 * the memory mapped at BASE, which starts with eight words: Object's class,
 * a String, four objects to decode, the objspace and the VM.  Memory
 * outside it is unreadable, as an unmapped page is.
 */
#include <errno.h>
#include <stdbool.h>
#include "fuzz.h"
#include "classnames.h"
#include "refs.h"
#include "ruby_string.h"
#include "ruby_target.h"
#include "ruby_versions.h"
#include "target_mem.h"

#define BASE 0x100000ULL
#define MAX_REFS 64

static const uint8_t *mem;
static size_t memlen;

int target_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	(void) pid;
	if (addr < BASE || addr - BASE > memlen || len > memlen - (addr - BASE))
		return -EFAULT;
	memcpy(buf, mem + (addr - BASE), len);
	return 0;
}

void target_read_many(pid_t pid, const uint64_t *addrs, size_t n, size_t each, void *out, bool *ok)
{
	size_t i;

	for (i = 0; i < n; i++)
		ok[i] = target_read(pid, addrs[i], (char *) out + i * each, each) == 0;
}

void target_read_each(pid_t pid, const uint64_t *addrs, const uint32_t *lens, size_t n, void *out,
		      bool *ok)
{
	char *at = out;
	size_t i;

	for (i = 0; i < n; i++) {
		ok[i] = target_read(pid, addrs[i], at, lens[i]) == 0;
		at += lens[i];
	}
}

static const char *const versions[] = {"3.1.7", "3.3.8", "3.4.5"};

static void names(pid_t pid, const struct ruby_layout *l, const uint64_t *hdr)
{
	struct class_namer cn;
	char err[256], buf[4096];
	uint64_t klass, full;
	int i;

	ruby_read_string_full(pid, l, hdr[1], buf, 40, &full);
	ruby_read_string_full(pid, l, hdr[1], buf, sizeof(buf), &full);
	if (class_namer_init(&cn, pid, l, hdr[0], err, sizeof(err)))
		return;
	class_namer_name(&cn, hdr[0]);
	for (i = 1; i < 6; i++) {
		if (target_read_u64(pid, hdr[i] + 8, &klass))
			continue;
		class_namer_name(&cn, klass);
		class_namer_object_class(&cn, klass);
		class_namer_key_name(&cn, klass, (uint32_t) hdr[i] & 0xffff);
		class_namer_forget(&cn, klass);
		class_namer_name(&cn, klass);
	}
	class_namer_free(&cn);
}

static void refs(pid_t pid, const struct ruby_layout *l, const uint64_t *hdr, uint32_t slot)
{
	struct ref_out *out = calloc(MAX_REFS, sizeof(*out));
	struct refs_meta m;
	size_t n;
	int i;

	if (!out)
		return;
	refs_meta_init(&m, pid, l);
	/* Small chunks: a table of a few entries is read in several, as a big one is. */
	m.chunk = 64;
	m.budgeted = true;
	m.budget = 1 << 20;
	m.libruby_lo = BASE;
	m.libruby_hi = BASE + 0x100;
	for (i = 2; i < 6; i++)
		refs_decode_now(&m, hdr[i], i == 5 ? 2 * slot : slot, out, MAX_REFS, &n);
	refs_meta_free(&m);
	free(out);
}

static void prove(pid_t pid, const struct ruby_layout *l, const uint64_t *hdr, const char *version)
{
	struct ruby_target *t = calloc(1, sizeof(*t));

	if (!t)
		return;
	t->pid = pid;
	t->layout = *l;
	snprintf(t->version, sizeof(t->version), "%s", version);
	t->objspace = hdr[6];
	t->vm = hdr[7];
	t->vm_ptr_addr = BASE + 7 * 8;
	t->main_ractor_addr = BASE + 7 * 8;
	ruby_target_prove(t, PROOF_ALL, false);
	free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ruby_layout layouts[3];
	static bool have[3];
	const char *version;
	uint64_t hdr[8];
	pid_t pid = getpid();
	unsigned v;

	if (size < 1 + sizeof(hdr))
		return 0;
	v = data[0] % 3;
	version = versions[v];
	if (!have[v]) {
		if (ruby_versions_layout(version, &layouts[v]))
			abort();
		have[v] = true;
	}
	mem = data + 1;
	memlen = size - 1;
	memcpy(hdr, mem, sizeof(hdr));
	names(pid, &layouts[v], hdr);
	refs(pid, &layouts[v], hdr, layouts[v].slot_size);
	prove(pid, &layouts[v], hdr, version);
	return 0;
}
