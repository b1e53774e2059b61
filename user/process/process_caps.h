/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The process layer's bounds on what a target can make us read: its files
 * (a libruby, its debug file, a #! script) come from its own root, maybe a
 * hostile container image.  docs/caps.md gives each one's cost at the bound.
 */
#ifndef RBM_PROCESS_CAPS_H
#define RBM_PROCESS_CAPS_H

/*
 * A file of the target opened to be read (target_file_open): bigger ones are
 * refused (-EFBIG).  libelf reads a section whole when asked for it, so this
 * bounds what one symbol table or debug section can cost; a libruby with its
 * DWARF is ~10-100 MB.
 */
#define PROC_MAX_FILE_BYTES (2ull << 30)
/* Mapped files whose symbols are searched for ruby_version (a renamed libruby). */
#define PROC_MAX_SCANNED_FILES 512

#endif
