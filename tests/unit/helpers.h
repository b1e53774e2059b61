/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Fixtures the unit tests share (helpers.c). */
#ifndef RBM_TEST_HELPERS_H
#define RBM_TEST_HELPERS_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "report.h"
#include "ruby_layout.h"

/*
 * Fixtures `make unit` builds; paths are relative to the repository root,
 * where `make unit` runs the tests.  FAKE_LIB is a libruby of an unknown
 * version, FAKE_RUBY an executable that links it, NOUSDT_LIB a copy of the
 * host's libruby without its USDT notes.
 */
#define FAKE_LIB ".output/fixtures/libruby-9.9.so"
#define FAKE_RUBY ".output/fixtures/fake_ruby"
#define NOUSDT_LIB ".output/fixtures/nousdt/libruby-3.1.so.3.1"
/* The DWARF reader's fixture: libfix.so, and copies under debuglink/, buildid/ and root/. */
#define DWARF_FIX ".output/fixtures/dwarf"
/* Its first two CUs, compressed by dwz: their shared types in a partial unit both import. */
#define DWARF_DWZ_FIX ".output/fixtures/dwarf_dwz/libfix.so"
/* Hand-written DWARF of units importing units (fixtures/dwarf_fixture_imports.S). */
#define DWARF_IMPORTS_FIX ".output/fixtures/dwarf_imports/libfiximports.so"
/* Many CUs importing one unit, past the file's index budget (fixtures/dwarf_fixture_budget.S). */
#define DWARF_BUDGET_FIX ".output/fixtures/dwarf_budget"
/* Many CUs sharing one macro unit, past the file's macro budget (dwarf_fixture_macro_budget.S). */
#define DWARF_MACRO_FIX ".output/fixtures/dwarf_macro_budget"
/* The test Rubies `make rubies` builds (scripts/rubies.sh). */
#define RUBIES "/var/cache/rbmemtrace/rubies"

/*
 * The bound a test puts on work its caps must stop: far above what it takes on a loaded machine
 * (0.3-1.7 s seen), far below what it took uncapped (minutes).
 */
#define CAPPED_SECONDS 5.0
struct timespec;
/* Seconds from t0 to t1 (CLOCK_MONOTONIC readings). */
double test_seconds_between(const struct timespec *t0, const struct timespec *t1);

struct dwarf_types;
/* dwarf_types_open of path (root as there); the test fails if path is missing or has no DWARF. */
struct dwarf_types *test_dwarf_open(const char *path, const char *root);

/* The value of symbol name in ELF file path; the test fails if it has none. */
uint64_t test_symbol(const char *path, const char *name);

/* s as json_write_string (escape.c) writes it, quotes included; malloc'd. */
char *test_json_of(const char *s);

/*
 * The table's layout of version (patch fields applied), by value: it owns
 * nothing, so a test keeps it where it likes with nothing to free.  The test
 * fails if there is none.
 */
struct ruby_layout test_layout_of(const char *version);

/* ---- reports to write and read: user/model/report.c's, finished by report_finish ---- */

/* Counts with only these three set. */
struct counts test_counts(uint64_t allocated, uint64_t freed, uint64_t retained);
/* An empty report of PID 4242, Ruby 3.1.7, traced 2.5 s until "duration", no exit status. */
void test_report_init(struct report *r);
/* report_add of a class with these counts; the test fails if it cannot. */
void test_report_add(struct report *r, const char *name, uint64_t allocated, uint64_t freed,
		     uint64_t retained, uint64_t untracked, uint64_t not_followed);
/*
 * A finished report of PID 42, Ruby 3.1.7, ended by a signal: "Foo::Bar"
 * (added twice), "Zed", and a class whose name holds a quote, a newline and
 * a terminal escape.
 */
void test_sample_report(struct report *r);
/*
 * A finished report of one process of host, with call paths and GC counts:
 * n Sessions allocated at store.rb:line, half of them retained, a census
 * row; scale > 0 makes it sampled at that scale.
 */
void test_fill_report(struct report *r, const char *host, int line, uint64_t n, double scale);
/* r as report_write_text prints it with top classes, 10 call paths, no tree; malloc'd. */
char *test_report_text(const struct report *r, size_t top);
/* r as report_write_json writes it; malloc'd. */
char *test_report_json(const struct report *r);

/* A child process that prints one line once it is ready, and dies with its test. */
struct test_child {
	pid_t pid;
	char line[4096]; /* the first line it printed */
};
/* Starts argv with stdout on a pipe and waits (20 s at most) for its first line. */
void test_child_start(struct test_child *c, char *const argv[]);
void test_child_stop(struct test_child *c);

/*
 * A test Ruby's file (make rubies): true when it is there; absent, the check
 * is said skipped on stderr, by the test's name, or fails when
 * RBM_REQUIRE_RUBIES is set (CI builds them first).
 */
bool test_have_ruby(const char *path);
/*
 * After a loop over the test Rubies: none found skips the test, said by
 * name, or fails it when RBM_REQUIRE_RUBIES is set.
 */
void test_require_rubies(int checked, const char *what);

/* This machine's libruby-3.1.so.3.1 (the test fails without one: make deps). */
const char *test_system_libruby(void);
/* The file it names, symbolic links resolved. */
const char *test_system_libruby_real(void);

/*
 * A temporary directory for each test of a suite, removed with all it holds:
 * TestSuite(name, .init = test_tmpdir_make, .fini = test_tmpdir_remove).
 */
extern char test_tmpdir[64];
void test_tmpdir_make(void);
void test_tmpdir_remove(void);

#endif
