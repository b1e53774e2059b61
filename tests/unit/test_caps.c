// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/model/caps.c: the caps reached, counted per process and said in one line. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include "caps.h"

#define HITS 100000

static void *hammer(void *arg)
{
	int i;

	(void) arg;
	for (i = 0; i < HITS; i++)
		caps_count(4242, CAP_TABLE_READ);
	return NULL;
}

Test(caps, counted_per_process_from_any_thread)
{
	struct caps_hit h;
	pthread_t t[2];
	int i;

	caps_reset();
	for (i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, hammer, NULL), 0);
	caps_count(4343, CAP_CLASS_NAME);
	caps_count_n(4343, CAP_WALK_BYTES, 7);
	caps_count(0, CAP_ROOTS);	   /* no process: not counted anywhere */
	caps_count(4343, (enum cap_id) 99); /* no such cap */
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);

	caps_read(4242, &h);
	cr_expect_eq(h.n[CAP_TABLE_READ], 2 * HITS, "no hit lost between threads");
	cr_expect_eq(h.n[CAP_CLASS_NAME], 0, "another process's hits are its own");
	caps_read(4343, &h);
	cr_expect_eq(h.n[CAP_CLASS_NAME], 1);
	cr_expect_eq(h.n[CAP_WALK_BYTES], 7);
	cr_expect_eq(h.n[CAP_ROOTS], 0);
	caps_read(4444, &h);
	cr_expect(!caps_any(&h), "a process that hit nothing reads zeros");
	caps_reset();
	caps_read(4242, &h);
	cr_expect(!caps_any(&h));
}

Test(caps, one_line_of_the_caps_hit)
{
	struct caps_hit a = {0}, b = {0};
	char buf[256];

	caps_text(&a, buf, sizeof(buf));
	cr_expect_str_eq(buf, "", "nothing hit, nothing said");
	a.n[CAP_CLASS_NAME] = 3;
	b.n[CAP_CLASS_NAME] = 1;
	b.n[CAP_ROOTS] = 2;
	caps_add(&a, &b);
	cr_expect(caps_any(&a));
	caps_text(&a, buf, sizeof(buf));
	cr_expect_str_eq(buf, "class_name_cut 4, roots_cut 2");
	caps_text(&a, buf, 12); /* cut, never overrun */
	cr_expect_eq(strlen(buf), 11);
	cr_expect_str_eq(caps_name(CAP_PATH_LENGTH), "path_too_long");
	cr_expect_str_eq(caps_name((enum cap_id) CAP_KINDS), "?");
}
