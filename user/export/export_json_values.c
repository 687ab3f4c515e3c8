// SPDX-License-Identifier: MIT
/* The JSON values both exporters build the same way: numbers, identities, text. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/identity_text.h"
#include "export/export_jsonl.h"

/* Bytes U+FFFD takes in UTF-8: the replacement for each byte that is not valid. */
#define REPLACEMENT_CHARACTER "\xef\xbf\xbd"
#define REPLACEMENT_LENGTH 3

json_t *export_json_unsigned(uint64_t value)
{
	char decimal[24];

	if (value <= INT64_MAX)
		return json_integer((json_int_t)value);
	snprintf(decimal, sizeof(decimal), "%" PRIu64, value);
	return json_string(decimal);
}

json_t *export_json_hexadecimal(uint64_t value)
{
	char text[IDENTITY_TEXT_SIZE];

	return json_string(identity_text(value, text));
}

json_t *export_json_identity(uint64_t identity)
{
	return identity ? export_json_hexadecimal(identity) : json_null();
}

json_t *export_json_known_or_null(int64_t value)
{
	return value < 0 ? json_null() : json_integer(value);
}

/* Length of the valid UTF-8 sequence at 'text', or 0 when its first byte starts none. */
static size_t utf8_sequence_length(const unsigned char *text, size_t left)
{
	uint32_t code_point;
	size_t length;

	if (text[0] < 0x80)
		return 1;
	if (text[0] >= 0xc2 && text[0] <= 0xdf) {
		length = 2;
		code_point = text[0] & 0x1f;
	} else if (text[0] >= 0xe0 && text[0] <= 0xef) {
		length = 3;
		code_point = text[0] & 0x0f;
	} else if (text[0] >= 0xf0 && text[0] <= 0xf4) {
		length = 4;
		code_point = text[0] & 0x07;
	} else {
		return 0;
	}
	if (length > left)
		return 0;
	for (size_t i = 1; i < length; i++) {
		if ((text[i] & 0xc0) != 0x80)
			return 0;
		code_point = code_point << 6 | (text[i] & 0x3f);
	}
	/* Overlong forms, UTF-16 surrogates and values past Unicode are not valid. */
	if ((length == 3 && code_point < 0x800) || (length == 4 && code_point < 0x10000) ||
	    code_point > 0x10ffff || (code_point >= 0xd800 && code_point <= 0xdfff))
		return 0;
	return length;
}

json_t *export_json_text(const char *text)
{
	const unsigned char *bytes = (const unsigned char *)(text ? text : "");
	size_t length = strlen((const char *)bytes), used = 0;
	json_t *value;
	char *clean;

	value = json_stringn((const char *)bytes, length);
	if (value)
		return value;
	/* Command lines and paths are bytes, not text: make them valid UTF-8. */
	clean = malloc(length * REPLACEMENT_LENGTH + 1);
	if (!clean)
		return NULL;
	for (size_t i = 0; i < length;) {
		size_t sequence = utf8_sequence_length(bytes + i, length - i);

		if (sequence) {
			memcpy(clean + used, bytes + i, sequence);
			used += sequence;
			i += sequence;
		} else {
			memcpy(clean + used, REPLACEMENT_CHARACTER, REPLACEMENT_LENGTH);
			used += REPLACEMENT_LENGTH;
			i++;
		}
	}
	value = json_stringn(clean, used);
	free(clean);
	return value;
}
