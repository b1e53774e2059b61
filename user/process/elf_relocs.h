/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An ELF file's RELA relocations, each with the symbol it names: the one
 * walk over them, for what a PLT entry or a GOT slot stands for
 * (elf_code.c) and where a TLS variable's module id goes (elfinfo.c).
 */
#ifndef RBM_ELF_RELOCS_H
#define RBM_ELF_RELOCS_H
#include <stdbool.h>
#include <stdint.h>
#include <libelf.h>

struct elf_reloc {
	uint64_t offset;    /* r_offset: the slot it fills */
	unsigned int type;  /* R_X86_64_... */
	const char *name;   /* its symbol's name; NULL when the string table has none */
	uint64_t sym_value; /* its symbol's st_value */
	bool sym_defined;   /* its symbol is this file's (not SHN_UNDEF) */
};

/*
 * Calls visit on each relocation of every SHT_RELA section whose symbol
 * reads, in file order, until visit returns nonzero; returns that, or 0.
 */
int elf_relocs_each(Elf *elf, int (*visit)(const struct elf_reloc *r, void *arg), void *arg);

#endif
