/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Reading what rbmemtrace needs from an ELF file: symbols, strings, notes. */
#ifndef RBM_ELFINFO_H
#define RBM_ELFINFO_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Looks a symbol up in .symtab or .dynsym; size may be NULL.  Returns 0 or -ENOENT. */
int elf_symbol_value(const char *path, const char *name, uint64_t *value, uint64_t *size);

/* Copies the NUL-terminated string that the data symbol `name` holds. */
int elf_symbol_string(const char *path, const char *name, char *buf, size_t n);

/*
 * The GOT slot (a vaddr) that the loader fills with the TLS module id of a
 * thread-local symbol: the target of its R_X86_64_DTPMOD64 relocation.
 */
int elf_tls_module_slot(const char *path, const char *name, uint64_t *slot);

/* The virtual address of the first PT_LOAD segment. */
int elf_first_load_vaddr(const char *path, uint64_t *vaddr);

/* Converts a virtual address in a PT_LOAD segment to its file offset. */
int elf_vaddr_to_offset(const char *path, uint64_t vaddr, uint64_t *offset);

/* True if the file has a SystemTap (USDT) note for provider:name. */
bool elf_has_usdt(const char *path, const char *provider, const char *name);

/*
 * Finds a DT_NEEDED entry starting with prefix and resolves it to a file the
 * way the dynamic loader would (RUNPATH/RPATH with $ORIGIN, LD_LIBRARY_PATH,
 * the system directories).
 */
int elf_resolve_needed(const char *path, const char *prefix, char *out, size_t n);
/* The name of its first DT_NEEDED starting with prefix, unresolved; 0 or -ENOENT. */
int elf_needed_name(const char *path, const char *prefix, char *out, size_t n);

#endif
