/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An ELF file's code, for decoding what its functions read: a function's
 * bytes by name, and what a PLT entry or a GOT slot stands for.  One open
 * file serves many lookups (the layout decoders read about ten functions).
 */
#ifndef RBM_ELF_CODE_H
#define RBM_ELF_CODE_H
#include <stddef.h>
#include <stdint.h>

struct elf_code;

/* 0, or -errno. */
int elf_code_open(const char *path, struct elf_code **out);
void elf_code_close(struct elf_code *ec);

/*
 * Up to *len bytes of the defined function `name` (its symbol's size caps
 * them), and its vaddr.  0, or -ENOENT when there is no such function.
 */
int elf_code_function(struct elf_code *ec, const char *name, uint8_t *buf, size_t *len,
		      uint64_t *vaddr);
/* The name of the symbol a PLT entry at vaddr jumps to.  0, or -ENOENT. */
int elf_code_plt_symbol(struct elf_code *ec, uint64_t vaddr, char *name, size_t n);
/*
 * The symbol a GOT slot at vaddr holds the address of (its GLOB_DAT
 * relocation), and that symbol's vaddr when this file defines it (else 0).
 * 0, or -ENOENT when no relocation fills the slot.
 */
int elf_code_got_symbol(struct elf_code *ec, uint64_t vaddr, char *name, size_t n, uint64_t *value);

#endif
