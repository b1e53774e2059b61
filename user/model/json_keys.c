// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "json_keys.h"

const char *const json_key_names[JSON_KEY_COUNT] = {
#define JSON_KEY_NAME(k) [JK_##k] = #k,
    JSON_KEYS(JSON_KEY_NAME)
#undef JSON_KEY_NAME
};
