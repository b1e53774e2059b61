// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/process/elf_relocs.c: the one walk over an ELF file's RELA relocations. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>
#include "elf_relocs.h"
#include "helpers.h"

struct seen {
	size_t all, tls, jump_slots, stop_at;
	uint64_t tls_slot;
};

static int count(const struct elf_reloc *r, void *arg)
{
	struct seen *t = arg;

	t->all++;
	if (r->type == R_X86_64_DTPMOD64 && r->name && !strcmp(r->name, "ruby_current_ec")) {
		t->tls++;
		t->tls_slot = r->offset;
	}
	if (r->type == R_X86_64_JUMP_SLOT && r->name && *r->name)
		t->jump_slots++;
	return t->stop_at && t->all == t->stop_at ? 7 : 0;
}

Test(elf_relocs, system_libruby)
{
	const char *lib = test_system_libruby();
	struct seen t = {0}, stopped = {.stop_at = 3};
	Elf *elf;
	int fd;

	cr_assert_not_null(lib, "ruby is not installed (make deps)");
	cr_assert_neq(elf_version(EV_CURRENT), EV_NONE);
	fd = open(lib, O_RDONLY);
	cr_assert_geq(fd, 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf);
	cr_expect_eq(elf_relocs_each(elf, count, &t), 0, "no visit stopped it");
	cr_expect_gt(t.all, 1000, "libruby has thousands of relocations: %zu", t.all);
	cr_expect_eq(t.tls, 1, "ruby_current_ec's module id: one DTPMOD64");
	cr_expect_gt(t.tls_slot, 0);
	cr_expect_gt(t.jump_slots, 100, "PLT slots name their functions");
	cr_expect_eq(elf_relocs_each(elf, count, &stopped), 7, "the visit's value");
	cr_expect_eq(stopped.all, 3, "no relocation after the one that stopped it");
	elf_end(elf);
	close(fd);
}
