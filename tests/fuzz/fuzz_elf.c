// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The ELF readers (process/elfinfo.c, elf_code.c, elf_relocs.c,
 * target_file.c) on a libruby a container's image holds: the input is the
 * file, written to a directory of this process's own under /tmp (a
 * .gnu_debuglink is looked for next to it).  Every reader the tool runs on
 * a libruby is asked what it asks: symbols and ruby_version, the TLS
 * module slot, the first PT_LOAD, USDT notes, DT_NEEDED, a function's
 * bytes and what its PLT and GOT entries stand for (the layout decoders,
 * ruby/layout_decode.c and x86_chain.c, read those), and the build-id and
 * debug link the DWARF reader follows (with no debuginfod server).
 */
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include "fuzz.h"
#include "dwarf_types.h"
#include "elf_code.h"
#include "elfinfo.h"
#include "layout_decode.h"
#include "target_file.h"

static char dir[64], file[128];

static const char *const functions[] = {
    "rb_gc_count", "rb_during_gc", "rb_thread_current", "rb_iseq_label", "main", NULL,
};

static void write_file(const uint8_t *data, size_t size)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || write(fd, data, size) != (ssize_t) size)
		abort();
	close(fd);
}

static void code(void)
{
	struct layout_decoded d;
	struct elf_code *ec;
	uint8_t buf[512];
	uint64_t vaddr, value;
	char name[256];
	size_t i, len;

	if (elf_code_open(file, &ec))
		return;
	for (i = 0; functions[i]; i++) {
		len = sizeof(buf);
		if (elf_code_function(ec, functions[i], buf, &len, &vaddr))
			continue;
		if (len > sizeof(buf))
			abort();
		elf_code_plt_symbol(ec, vaddr, name, sizeof(name));
		elf_code_got_symbol(ec, vaddr, name, sizeof(name), &value);
		elf_code_plt_symbol(ec, vaddr + 16, name, 8);
		elf_code_got_symbol(ec, vaddr + 8, name, 8, &value);
	}
	layout_decode(ec, &d);
	elf_code_close(ec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t value, off, slot;
	struct dwarf_types *dt;
	char buf[256], err[512];
	int fd;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/rbm-fuzz-elf-XXXXXX");
		if (!mkdtemp(dir))
			abort();
		snprintf(file, sizeof(file), "%s/libruby.so.3.1", dir);
		unsetenv("DEBUGINFOD_URLS");
	}
	write_file(data, size);
	fd = target_file_open(file);
	if (fd >= 0)
		close(fd);
	if (!elf_symbol_value(file, "ruby_version", &value, &off))
		elf_vaddr_to_offset(file, value, &off);
	elf_symbol_string(file, "ruby_version", buf, sizeof(buf));
	elf_symbol_string(file, "ruby_description", buf, 4);
	elf_tls_module_slot(file, "ruby_current_ec", &slot);
	if (!elf_first_load_vaddr(file, &value))
		elf_vaddr_to_offset(file, value + 0x100, &off);
	elf_has_usdt(file, "ruby", "gc__sweep__end");
	elf_has_usdt(file, "ruby", "gc__mark__begin");
	elf_needed_name(file, "libruby", buf, sizeof(buf));
	elf_resolve_needed(file, "libruby", buf, sizeof(buf));
	code();
	if (!dwarf_types_open(file, dir, &dt, err, sizeof(err)))
		dwarf_types_close(dt);
	return 0;
}
