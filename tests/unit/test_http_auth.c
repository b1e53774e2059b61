// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/output/http_auth.c: token and password files, and the Authorization header's check. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "http_auth.h"

Test(http_auth, token_file)
{
	struct http_auth a = {};
	char err[256];

	cr_assert_eq(http_auth_set_token(&a, "  s3cr3t.T0ken-_~+/= \n\n", err, sizeof(err)), 0,
		     "%s", err);
	cr_expect_str_eq(a.bearer, "s3cr3t.T0ken-_~+/=");
	cr_expect(http_auth_required(&a));
	cr_expect(http_auth_check(&a, "Bearer s3cr3t.T0ken-_~+/="));
	cr_expect(http_auth_check(&a, "bearer  s3cr3t.T0ken-_~+/="), "the scheme in any case");
	cr_expect(!http_auth_check(&a, NULL));
	cr_expect(!http_auth_check(&a, ""));
	cr_expect(!http_auth_check(&a, "Bearer s3cr3t.T0ken-_~+/"), "a prefix of the token");
	cr_expect(!http_auth_check(&a, "Bearer s3cr3t.T0ken-_~+/=x"), "the token and more");
	cr_expect(!http_auth_check(&a, "Bearers3cr3t.T0ken-_~+/="));
	cr_expect(!http_auth_check(&a, "Basic s3cr3t.T0ken-_~+/="), "another scheme");
	cr_expect(!http_auth_check(&a, "Bearer "));
	http_auth_free(&a);
	cr_expect(!http_auth_required(&a));
	cr_expect(http_auth_check(&a, NULL), "no auth: anyone (loopback)");

	cr_expect_eq(http_auth_set_token(&a, "\n", err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "one line") != NULL, "%s", err);
	cr_expect_eq(http_auth_set_token(&a, "two words", err, sizeof(err)), -EINVAL);
	cr_expect_eq(http_auth_set_token(&a, "one\ntwo\n", err, sizeof(err)), -EINVAL);
	cr_expect_eq(http_auth_set_token(&a, "t\x1b[2J", err, sizeof(err)), -EINVAL);
	cr_expect_eq(http_auth_set_token(&a, "caf\xc3\xa9", err, sizeof(err)), -EINVAL);
	cr_expect_null(a.bearer);
}

Test(http_auth, basic_file)
{
	struct http_auth a = {};
	char err[256];

	/* RFC 7617's example. */
	cr_assert_eq(http_auth_set_basic(&a, "Aladdin:open sesame\n", err, sizeof(err)), 0, "%s",
		     err);
	cr_expect_str_eq(a.basic, "QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
	cr_expect(http_auth_check(&a, "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="));
	cr_expect(!http_auth_check(&a, "Basic QWxhZGRpbjpvcGVuIHNlc2FtZR=="));
	cr_expect(!http_auth_check(&a, "Bearer QWxhZGRpbjpvcGVuIHNlc2FtZQ=="),
		  "no token configured: a bearer is no password");
	http_auth_free(&a);
	/* The three paddings, and a colon in the password. */
	cr_assert_eq(http_auth_set_basic(&a, "u:p", err, sizeof(err)), 0);
	cr_expect_str_eq(a.basic, "dTpw");
	cr_assert_eq(http_auth_set_basic(&a, "u:pw", err, sizeof(err)), 0);
	cr_expect_str_eq(a.basic, "dTpwdw==");
	cr_assert_eq(http_auth_set_basic(&a, "u:p:w", err, sizeof(err)), 0);
	cr_expect_str_eq(a.basic, "dTpwOnc=");
	http_auth_free(&a);
	cr_expect_eq(http_auth_set_basic(&a, "nocolon\n", err, sizeof(err)), -EINVAL);
	cr_expect_eq(http_auth_set_basic(&a, ":password\n", err, sizeof(err)), -EINVAL, "no user");
	cr_expect_eq(http_auth_set_basic(&a, "user:\n", err, sizeof(err)), -EINVAL, "no password");
	cr_expect_eq(http_auth_set_basic(&a, "u:p\nv:q\n", err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "one line user:password") != NULL, "%s", err);
	cr_expect_null(a.basic);
}

Test(http_auth, both_either_opens)
{
	struct http_auth a = {};
	char err[256];

	cr_assert_eq(http_auth_set_token(&a, "tok", err, sizeof(err)), 0);
	cr_assert_eq(http_auth_set_basic(&a, "u:p", err, sizeof(err)), 0);
	cr_expect(http_auth_check(&a, "Bearer tok"));
	cr_expect(http_auth_check(&a, "Basic dTpw"));
	cr_expect(!http_auth_check(&a, "Bearer dTpw"));
	http_auth_free(&a);
}

Test(http_auth, files)
{
	struct http_auth a;
	struct http_auth_files f = {.token = "/nonexistent/token"};
	char err[256];

	cr_expect_eq(http_auth_load(&a, &f, err, sizeof(err)), -ENOENT);
	cr_expect_str_eq(err, "cannot read the token file /nonexistent/token: No such file or "
			      "directory");
	f = (struct http_auth_files){.cert = "/"};
	cr_expect_eq(http_auth_load(&a, &f, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "the TLS certificate / is not a file") != NULL, "%s", err);
	cr_expect_null(a.cert_pem);
}
