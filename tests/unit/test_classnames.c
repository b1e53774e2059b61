// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/ruby/classnames.c: type and imemo names, class_name_fit, naming a live Ruby's classes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "classnames.h"
#include "escape.h"
#include "helpers.h"
#include "mjit_offsets.h"
#include "procmaps.h"
#include "rbmemtrace.h"
#include "ruby_string.h"
#include "target_mem.h"

Test(classnames, type_names)
{
	cr_expect_str_eq(ruby_type_name(0x05), "T_STRING");
	cr_expect_str_eq(ruby_type_name(0x99), "T_UNKNOWN");
	cr_expect_str_eq(ruby_imemo_name(7), "iseq");
	cr_expect_str_eq(ruby_imemo_name(99), "unknown");
}

Test(classnames, every_type_name)
{
	/* Ruby's enum ruby_value_type (include/ruby/internal/value_type.h). */
	static const char *const want[0x20] = {
	    [0x00] = "T_NONE",	 [0x01] = "T_OBJECT", [0x02] = "T_CLASS",   [0x03] = "T_MODULE",
	    [0x04] = "T_FLOAT",	 [0x05] = "T_STRING", [0x06] = "T_REGEXP",  [0x07] = "T_ARRAY",
	    [0x08] = "T_HASH",	 [0x09] = "T_STRUCT", [0x0a] = "T_BIGNUM",  [0x0b] = "T_FILE",
	    [0x0c] = "T_DATA",	 [0x0d] = "T_MATCH",  [0x0e] = "T_COMPLEX", [0x0f] = "T_RATIONAL",
	    [0x11] = "T_NIL",	 [0x12] = "T_TRUE",   [0x13] = "T_FALSE",   [0x14] = "T_SYMBOL",
	    [0x15] = "T_FIXNUM", [0x16] = "T_UNDEF",  [0x1a] = "T_IMEMO",   [0x1b] = "T_NODE",
	    [0x1c] = "T_ICLASS", [0x1d] = "T_ZOMBIE", [0x1e] = "T_MOVED",
	};
	uint32_t t;

	for (t = 0; t < 0x20; t++)
		cr_expect_str_eq(ruby_type_name(t), want[t] ? want[t] : "T_UNKNOWN", "type 0x%02x",
				 t);
	cr_expect_str_eq(ruby_type_name(0x20), "T_UNKNOWN");
	cr_expect_str_eq(ruby_type_name(0x105), "T_UNKNOWN", "not masked: 0x105 is no type");
	cr_expect_str_eq(ruby_type_name(UINT32_MAX), "T_UNKNOWN");
	/* The constants of include/rbmemtrace.h name the same types. */
	cr_expect_str_eq(ruby_type_name(RB_T_NONE), "T_NONE");
	cr_expect_str_eq(ruby_type_name(RB_T_OBJECT), "T_OBJECT");
	cr_expect_str_eq(ruby_type_name(RB_T_CLASS), "T_CLASS");
	cr_expect_str_eq(ruby_type_name(RB_T_MODULE), "T_MODULE");
	cr_expect_str_eq(ruby_type_name(RB_T_STRING), "T_STRING");
	cr_expect_str_eq(ruby_type_name(RB_T_ICLASS), "T_ICLASS");
	cr_expect_str_eq(ruby_type_name(RB_T_ZOMBIE), "T_ZOMBIE");
	cr_expect_str_eq(ruby_type_name(RB_T_MOVED), "T_MOVED");
	cr_expect_str_eq(ruby_type_name(RB_T_IMEMO), "T_IMEMO");
	cr_expect_eq(RB_T_MASK, 0x1f);
}

Test(classnames, every_imemo_name)
{
	/* Ruby 3.1's enum imemo_type (internal/imemo.h). */
	static const char *const want[] = {
	    "env",  "cref",   "svar", "throw_data",	"ifunc",    "memo",	 "ment",
	    "iseq", "tmpbuf", "ast",  "parser_strterm", "callinfo", "callcache", "constcache",
	};
	uint32_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_expect_str_eq(ruby_imemo_name(i), want[i], "imemo %u", i);
	cr_expect_str_eq(ruby_imemo_name(14), "unknown");
	cr_expect_str_eq(ruby_imemo_name(15), "unknown", "the largest value the 4-bit field holds");
	cr_expect_str_eq(ruby_imemo_name(UINT32_MAX), "unknown");
	/* The kind packing round-trips every imemo type. */
	for (i = 0; i < 16; i++) {
		cr_expect_eq(RBM_KIND_TYPE(RBM_KIND(RB_T_IMEMO, i)), RB_T_IMEMO);
		cr_expect_eq(RBM_KIND_IMEMO(RBM_KIND(RB_T_IMEMO, i)), i);
	}
}

/* class_name_fit: long class names are cut, yet stay distinct and valid UTF-8. */
static char *repeat(const char *unit, size_t times, const char *tail)
{
	size_t ulen = strlen(unit), i;
	char *s = malloc(ulen * times + strlen(tail) + 1);

	cr_assert_not_null(s);
	for (i = 0; i < times; i++)
		memcpy(s + i * ulen, unit, ulen);
	strcpy(s + ulen * times, tail);
	return s;
}

Test(classnames, fit_short_names_unchanged)
{
	char *exact = repeat("A", CLASS_NAME_MAX, ""), *got;

	got = class_name_fit("Shop::Item");
	cr_expect_str_eq(got, "Shop::Item");
	free(got);
	got = class_name_fit(exact);
	cr_expect_str_eq(got, exact, "511 bytes fit as they are");
	free(got);
	free(exact);
}

Test(classnames, fit_shared_600_byte_prefix_stays_distinct)
{
	char *a = repeat("x", 600, "Alpha"), *b = repeat("x", 600, "Beta");
	char *fa = class_name_fit(a), *fb = class_name_fit(b), *again = class_name_fit(a);

	cr_assert_not_null(fa);
	cr_assert_not_null(fb);
	cr_expect_leq(strlen(fa), CLASS_NAME_MAX);
	cr_expect_leq(strlen(fb), CLASS_NAME_MAX);
	cr_expect_str_neq(fa, fb);
	cr_expect_str_eq(fa, again, "the same name always gives the same text");
	cr_expect(strncmp(fa, a, 400) == 0, "the start of the name is kept");
	cr_expect(strstr(fa, "...#") != NULL, "no marker: %s", fa);
	free(a);
	free(b);
	free(fa);
	free(fb);
	free(again);
}

Test(classnames, fit_cut_on_a_character_boundary)
{
	/* 150 times a 4-byte and a 2-byte character: 900 bytes, past CLASS_NAME_MAX. */
	char *chars = repeat("\xf0\x9f\x98\x80\xc3\x9c", 150, "");
	size_t shift;

	/* Multi-byte characters at every alignment against the cut. */
	for (shift = 0; shift < 4; shift++) {
		char *pad = repeat("a", shift, ""), *name, *got;
		const unsigned char *p;

		name = malloc(1200);
		cr_assert_not_null(name);
		snprintf(name, 1200, "%s%s", pad, chars);
		got = class_name_fit(name);
		for (p = (const unsigned char *) got; *p; p += utf8_sequence_len(p))
			cr_assert_neq(utf8_sequence_len(p), 0, "shift %zu: split character", shift);
		cr_expect_leq(strlen(got), CLASS_NAME_MAX);
		free(got);
		free(name);
		free(pad);
	}
	free(chars);
}

/* ---- the class namer on a live Ruby ---- */

static const char class_script[] =
    "require 'objspace'; require 'json'\n"
    "module Foo; class Bar; end; class AClassNameLongerThanAnEmbeddedString; end; end\n"
    "$anon = Class.new\n"
    "$anon_mod = Module.new\n"
    "$obj = Foo::Bar.new\n"
    "$strs = ['short', 'x' * 100]\n"
    "addr = ->(o) { JSON.parse(ObjectSpace.dump(o))['address'] }\n"
    "STDOUT.sync = true\n"
    "puts [Object, String, Foo::Bar, Foo, Foo::AClassNameLongerThanAnEmbeddedString,\n"
    "      $anon, $anon_mod, Foo::Bar.singleton_class, $obj.singleton_class, $obj,\n"
    "      Comparable, *$strs].map { |o| addr.(o) }.join(' ')\n"
    "sleep 30\n";

enum {
	A_OBJECT,
	A_STRING,
	A_BAR,
	A_FOO,
	A_LONG,
	A_ANON,
	A_ANON_MOD,
	A_BAR_SINGLETON,
	A_OBJ_SINGLETON,
	A_OBJ,
	A_COMPARABLE,
	A_SHORT_STR,
	A_LONG_STR,
	A_COUNT
};

/*
 * Starts class_script and sets up a class namer on it with the layout it
 * fills in off, which the namer points at: off must outlive cn.
 */
static void start_class_script(struct test_child *c, uint64_t *a, struct class_namer *cn,
			       struct ruby_layout *off)
{
	char *argv[] = {"ruby", "-e", (char *) class_script, NULL};
	uint64_t object_class;
	struct ruby_image img;
	char err[512] = "";
	char *p, *end;
	int i;

	*off = test_layout_of(MJIT_RUBY_VERSION);
	test_child_start(c, argv);
	for (i = 0, p = c->line; i < A_COUNT; i++, p = end) {
		a[i] = strtoull(p, &end, 16);
		cr_assert(end != p && a[i], "bad address list: %s", c->line);
	}
	cr_assert_eq(procmaps_find_ruby(c->pid, &img, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(target_read_u64(c->pid,
				     img.load_bias + test_symbol(img.host_path, "rb_cObject"),
				     &object_class),
		     0);
	cr_expect_eq(object_class, a[A_OBJECT], "rb_cObject disagrees with ObjectSpace.dump");
	cr_assert_eq(class_namer_init(cn, c->pid, off, object_class, err, sizeof(err)), 0, "%s",
		     err);
	cr_expect_neq(cn->classpath_id, 0);
	cr_expect_neq(cn->attached_id, 0);
}

/* Also reads two Strings with ruby_read_string (user/ruby/ruby_string.c), as the namer does. */
Test(classnames, class_names_and_strings)
{
	struct ruby_layout off;
	struct class_namer cn;
	uint64_t a[A_COUNT];
	char want[128], buf[256];
	struct test_child c;

	start_class_script(&c, a, &cn, &off);
	cr_expect_str_eq(class_namer_name(&cn, a[A_OBJECT]), "Object");
	cr_expect_str_eq(class_namer_name(&cn, a[A_STRING]), "String");
	cr_expect_str_eq(class_namer_name(&cn, a[A_BAR]), "Foo::Bar");
	cr_expect_str_eq(class_namer_name(&cn, a[A_FOO]), "Foo");
	cr_expect_str_eq(class_namer_name(&cn, a[A_COMPARABLE]), "Comparable");
	cr_expect_str_eq(class_namer_name(&cn, a[A_LONG]),
			 "Foo::AClassNameLongerThanAnEmbeddedString");
	snprintf(want, sizeof(want), "#<Class:0x%016lx>", (unsigned long) a[A_ANON]);
	cr_expect_str_eq(class_namer_name(&cn, a[A_ANON]), want);
	snprintf(want, sizeof(want), "#<Module:0x%016lx>", (unsigned long) a[A_ANON_MOD]);
	cr_expect_str_eq(class_namer_name(&cn, a[A_ANON_MOD]), want);
	cr_expect_str_eq(class_namer_name(&cn, a[A_BAR_SINGLETON]), "#<Class:Foo::Bar>");
	/* Cached: the same pointer the second time. */
	cr_expect_eq(class_namer_name(&cn, a[A_BAR]), class_namer_name(&cn, a[A_BAR]));
	/* Not a class: an object's address. */
	snprintf(want, sizeof(want), "#<freed class 0x%016lx>", (unsigned long) a[A_OBJ]);
	cr_expect_str_eq(class_namer_name(&cn, a[A_OBJ]), want);

	/* Key names: imemo, iclass and hidden objects never read the target. */
	cr_expect_str_eq(class_namer_key_name(&cn, 0, RBM_KIND(RB_T_IMEMO, 12)),
			 "<imemo:callcache>");
	cr_expect_str_eq(class_namer_key_name(&cn, a[A_BAR], RBM_KIND(RB_T_IMEMO, 7)),
			 "<imemo:iseq>");
	cr_expect_str_eq(class_namer_key_name(&cn, a[A_BAR], RB_T_ICLASS), "<iclass>");
	cr_expect_str_eq(class_namer_key_name(&cn, 0, RB_T_STRING), "<hidden:T_STRING>");
	cr_expect_str_eq(class_namer_key_name(&cn, a[A_BAR], RB_T_OBJECT), "Foo::Bar");

	/* Strings, embedded and on the heap. */
	cr_assert_eq(ruby_read_string(c.pid, &off, a[A_SHORT_STR], buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, "short");
	cr_assert_eq(ruby_read_string(c.pid, &off, a[A_LONG_STR], buf, sizeof(buf)), 0);
	cr_expect_eq(strlen(buf), 100);
	cr_expect_eq(strspn(buf, "x"), 100);
	class_namer_free(&cn);
	test_child_stop(&c);
}

/*
 * A class named freed once (it had moved away) and living at that address
 * again, with no move told for it, is named again, not kept as freed.
 */
Test(classnames, a_freed_name_is_read_again_when_a_class_lives_there)
{
	struct ruby_layout off;
	struct class_namer cn;
	uint64_t a[A_COUNT];
	char stale[64];
	struct test_child c;

	start_class_script(&c, a, &cn, &off);
	snprintf(stale, sizeof(stale), "#<freed class 0x%016lx>", (unsigned long) a[A_BAR]);
	cr_assert_eq(u64map_put(&cn.cache, a[A_BAR], strdup(stale)), 0);
	cr_expect_str_eq(class_namer_name(&cn, a[A_BAR]), "Foo::Bar");
	/* still not a class: the freed name stands, from the cache */
	snprintf(stale, sizeof(stale), "#<freed class 0x%016lx>", (unsigned long) a[A_OBJ]);
	cr_expect_str_eq(class_namer_name(&cn, a[A_OBJ]), stale);
	cr_expect_eq(class_namer_name(&cn, a[A_OBJ]), class_namer_name(&cn, a[A_OBJ]));
	class_namer_free(&cn);
	test_child_stop(&c);
}

/*
 * The singleton class of a plain object reads "#<Class:#<Foo::Bar:0x...>>",
 * as in Ruby: the object's class is the singleton class's first
 * non-singleton superclass, not its klass field, which points at the
 * singleton class itself.
 */
Test(classnames, singleton_class_of_an_object)
{
	struct ruby_layout off;
	struct class_namer cn;
	uint64_t a[A_COUNT];
	char want[128];
	struct test_child c;

	start_class_script(&c, a, &cn, &off);
	snprintf(want, sizeof(want), "#<Class:#<Foo::Bar:0x%016lx>>", (unsigned long) a[A_OBJ]);
	cr_expect_str_eq(class_namer_name(&cn, a[A_OBJ_SINGLETON]), want);
	class_namer_free(&cn);
	test_child_stop(&c);
}

/* class_namer_init refuses an address that is not a class. */
Test(classnames, class_namer_init_checks_object)
{
	char *argv[] = {"ruby", "-e",
			"require 'objspace'; require 'json'; STDOUT.sync = true; $s = 'str' * 9; "
			"puts JSON.parse(ObjectSpace.dump($s))['address']; sleep 30",
			NULL};
	const struct ruby_layout layout = test_layout_of(MJIT_RUBY_VERSION), *off = &layout;
	struct class_namer cn;
	char err[512] = "";
	struct test_child c;
	uint64_t str;

	test_child_start(&c, argv);
	str = strtoull(c.line, NULL, 16);
	cr_assert_neq(str, 0, "%s", c.line);
	cr_expect_eq(class_namer_init(&cn, c.pid, off, str, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "does not point at a class") != NULL, "%s", err);
	test_child_stop(&c);
}
