// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/output/html.c and html_data.c: one self-contained page; the target's strings inert. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "helpers.h"
#include "html.h"

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (; (s = strstr(s, what)); s++)
		n++;
	return n;
}

Test(html, hostile_names_cannot_close_the_data)
{
	struct frame f1[] = {{"x</script><script>alert(1)</script>", "a\xe2\x80\xae" "b.rb", 7}};
	struct stack s1 = {.depth = 1, .frames = f1};
	struct counts c1 = {.allocated = 5, .retained = 3};
	struct report r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	test_report_init(&r);
	r.with_stacks = true;
	report_add(&r, "Evil</script>\x1b[2J", &c1);
	report_add_stack(&r, "Evil</script>\x1b[2J", &s1, &c1);
	report_finish(&r);
	f = open_memstream(&buf, &len);
	cr_assert_not_null(f);
	cr_assert_eq(report_write_html(f, &r), 0);
	fclose(f);
	/* The data's element and the script's: no third closing tag, no raw bidi or escape. */
	cr_expect_eq(count(buf, "</script>"), 2);
	cr_expect_null(strstr(buf, "\xe2\x80\xae"));
	cr_expect_null(strchr(buf, '\x1b'));
	/* Shown as the text report shows them: \x1b, \u{202e}. */
	cr_expect_not_null(strstr(buf, "Evil\\u003c/script\\u003e\\\\x1b[2J"));
	cr_expect_not_null(strstr(buf, "a\\\\u{202e}b.rb"));
	/* Its own script only, by its hash: no 'unsafe-inline' for scripts, no source to load from. */
	cr_expect_not_null(strstr(buf, "default-src 'none'; script-src 'sha256-"));
	cr_expect_null(strstr(buf, "script-src 'unsafe-inline'"));
	free(buf);
	report_free(&r);
}
