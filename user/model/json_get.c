// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Typed access to a JSON document (jansson) for the report reader: each
 * getter checks the type and range of one member, and the first problem is
 * kept as a one-line message saying where it is ("classes[3].allocated").
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include "json_get.h"

/* The first problem wins: later ones are usually its consequences. */
void jr_fail(struct json_reader *rd, const char *where, const char *key, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	if (rd->failed)
		return;
	rd->failed = true;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(rd->err, rd->errlen, "%s: %s%s%s%s%s", rd->name, where, *where && key ? "." : "",
		 key ? key : "", *where || key ? ": " : "", what);
}

json_t *jr_member(struct json_reader *rd, const json_t *obj, const char *where, const char *key,
		  bool required)
{
	json_t *v = json_object_get(obj, key);

	if (!v && required)
		jr_fail(rd, where, key, "missing");
	return v;
}

uint64_t jr_get_u64(struct json_reader *rd, const json_t *obj, const char *where, const char *key,
		    bool required)
{
	json_t *v = jr_member(rd, obj, where, key, required);

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		jr_fail(rd, where, key, "expected a whole number >= 0");
		return 0;
	}
	return (uint64_t)json_integer_value(v);
}

int64_t jr_get_int(struct json_reader *rd, const json_t *obj, const char *where, const char *key,
		   int64_t min, int64_t max, int64_t dflt)
{
	json_t *v = jr_member(rd, obj, where, key, false);

	if (!v)
		return dflt;
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
		jr_fail(rd, where, key, "expected a whole number from %lld to %lld", (long long)min,
		     (long long)max);
		return dflt;
	}
	return json_integer_value(v);
}

double jr_get_real(struct json_reader *rd, const json_t *obj, const char *where, const char *key)
{
	json_t *v = jr_member(rd, obj, where, key, false);

	if (!v)
		return 0;
	if (!json_is_number(v)) {
		jr_fail(rd, where, key, "expected a number");
		return 0;
	}
	if (!(fabs(json_number_value(v)) <= JR_MAX_REAL)) {
		jr_fail(rd, where, key, "expected a number from -%.0f to %.0f", JR_MAX_REAL,
			JR_MAX_REAL);
		return 0;
	}
	return json_number_value(v);
}

bool jr_get_bool(struct json_reader *rd, const json_t *obj, const char *where, const char *key)
{
	json_t *v = jr_member(rd, obj, where, key, false);

	if (v && !json_is_boolean(v))
		jr_fail(rd, where, key, "expected true or false");
	return v && json_is_true(v);
}

const char *jr_get_str(struct json_reader *rd, const json_t *obj, const char *where,
		       const char *key, bool required)
{
	json_t *v = jr_member(rd, obj, where, key, required);

	if (!v)
		return required ? "" : NULL;
	if (!json_is_string(v)) {
		jr_fail(rd, where, key, "expected a string");
		return "";
	}
	return json_string_value(v);
}

/* An object member that must be an object (or null, when allowed); NULL if absent. */
json_t *jr_get_obj(struct json_reader *rd, const json_t *obj, const char *where, const char *key,
		   bool required)
{
	json_t *v = jr_member(rd, obj, where, key, required);

	if (v && !json_is_object(v) && !json_is_null(v)) {
		jr_fail(rd, where, key, "expected an object");
		return NULL;
	}
	return json_is_object(v) ? v : NULL;
}

json_t *jr_get_arr(struct json_reader *rd, const json_t *obj, const char *where, const char *key,
		   bool required)
{
	json_t *v = jr_member(rd, obj, where, key, required);

	if (v && !json_is_array(v)) {
		jr_fail(rd, where, key, "expected an array");
		return NULL;
	}
	return v;
}

