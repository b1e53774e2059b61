/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Offsets a libruby's own code says: small exported accessors read the
 * fields rbmemtrace needs most, and the displacements of their loads are
 * the offsets of the build that compiled them (x86_chain.h).  A stripped
 * patch release that moved a field is then read right without a table
 * entry, and a table or DWARF layout is cross-checked against the code.
 *
 *   rb_gc_get_objspace  vm -> objspace (3.4)
 *   rb_gc_count         vm -> objspace -> profile.count
 *   rb_during_gc        vm -> objspace -> flags.during_gc (its byte and bit)
 *   rb_class_get_superclass  RClass.super
 *   rb_iseq_label, rb_iseq_path  iseq -> body -> location.label, .pathobj
 *   rb_iseq_first_lineno  iseq -> body -> location.first_lineno (and its size)
 *   rb_thread_main      main ractor -> threads.main -> self
 *   rb_thread_current   ruby_current_ec (TLS) -> thread_ptr -> self
 *
 * Each also gives where a hidden global lives (ruby_current_vm_ptr,
 * ruby_single_main_ractor, ruby_current_ec's TLS index), so a stripped
 * build needs no .symtab.  A decoder whose function has another
 * instruction pattern than these refuses, and says why; its fields then
 * rest on the layout's other source and the live checks (layout_proof.c).
 */
#ifndef RBM_LAYOUT_DECODE_H
#define RBM_LAYOUT_DECODE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ruby_layout.h"

#define DECODE_MAX_FIELDS 24
#define DECODE_MAX_FUNCTIONS 12

struct decoded_field {
	const char *field; /* a struct ruby_layout field */
	uint64_t value;
	const char *function; /* the first decoder that gave it */
};

struct decoder_result {
	const char *function;
	int status;    /* 0 decoded, -ENOENT not in this build, -EINVAL refused */
	char why[160]; /* refused: the instruction or shape that did not match */
};

struct layout_decoded {
	struct decoded_field fields[DECODE_MAX_FIELDS];
	size_t nfields;
	struct decoder_result results[DECODE_MAX_FUNCTIONS];
	size_t nresults;
	/* Where hidden globals are (vaddrs of the file; 0: not found) */
	uint64_t vm_ptr_var;	  /* ruby_current_vm_ptr */
	uint64_t main_ractor_var; /* ruby_single_main_ractor */
	uint64_t ec_tls_index;	  /* the tls_index {module, offset} of ruby_current_ec */
	/* Two decoders gave one field different values: that field is not taken */
	char conflict[160];
};

/* Runs every decoder on the ELF file at path.  0, or -errno if the file cannot be read. */
int layout_decode_file(const char *path, struct layout_decoded *out);
/* The same on a file already open (elf_code.h), for the tests. */
struct elf_code;
int layout_decode(struct elf_code *ec, struct layout_decoded *out);

/* The decoded value of field, if a decoder gave one. */
bool layout_decoded_get(const struct layout_decoded *d, const char *field, uint64_t *value);

/*
 * Brings the decoded fields into l.  Where l came from the table
 * (overwrite), a decoded field replaces the table's value; where l came
 * from DWARF, a difference is a contradiction.  Differences are described
 * in diff ("field was -> code (function)", separated by "; ").  Returns
 * how many fields differed, or -1 when the code says something the layout
 * cannot take (the GC flags' bits reordered).
 */
int layout_decode_apply(const struct layout_decoded *d, struct ruby_layout *l, bool overwrite,
			char *diff, size_t difflen);

#endif
