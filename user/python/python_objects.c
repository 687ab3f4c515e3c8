// SPDX-License-Identifier: MIT
/* Reads str and code objects out of a running CPython with the offsets of its layout. */
#include "python/python_layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_message.h"
#include "base/remote_memory.h"

/* Appends one code point as UTF-8; false when it does not fit with the final NUL. */
static bool utf8_append(char *text, size_t size, size_t *used, uint32_t code_point)
{
	unsigned char encoded[4];
	size_t length;

	if (code_point < 0x80) {
		encoded[0] = (unsigned char)code_point;
		length = 1;
	} else if (code_point < 0x800) {
		encoded[0] = (unsigned char)(0xC0 | (code_point >> 6));
		encoded[1] = (unsigned char)(0x80 | (code_point & 0x3F));
		length = 2;
	} else if (code_point < 0x10000) {
		encoded[0] = (unsigned char)(0xE0 | (code_point >> 12));
		encoded[1] = (unsigned char)(0x80 | ((code_point >> 6) & 0x3F));
		encoded[2] = (unsigned char)(0x80 | (code_point & 0x3F));
		length = 3;
	} else {
		encoded[0] = (unsigned char)(0xF0 | (code_point >> 18));
		encoded[1] = (unsigned char)(0x80 | ((code_point >> 12) & 0x3F));
		encoded[2] = (unsigned char)(0x80 | ((code_point >> 6) & 0x3F));
		encoded[3] = (unsigned char)(0x80 | (code_point & 0x3F));
		length = 4;
	}
	if (*used + length >= size)
		return false;
	memcpy(text + *used, encoded, length);
	*used += length;
	return true;
}

/* Longer names are not names: a bound that keeps a wrong pointer from reading megabytes. */
#define STRING_LENGTH_MAX 65536

int python_string_read(pid_t pid, const struct python_layout *layout, uint64_t address, char *text,
		       size_t size, char *error, size_t error_size)
{
	unsigned char header[128];
	uint64_t type, data_address = 0, state_word;
	uint32_t state, kind;
	int64_t length;
	unsigned char *characters;
	size_t used = 0;
	int err;

	if (size == 0)
		return error_fail(error, error_size, EINVAL, "no room to read a string into");
	text[0] = '\0';
	/* Every str is at least a PyASCIIObject: read no further, it may end a mapping. */
	err = remote_memory_read(pid, address, header, (size_t)layout->unicode_ascii_data, error,
				 error_size);
	if (err)
		return err;
	memcpy(&type, header + layout->object_type, sizeof(type));
	if (layout->addresses.unicode_type && type != layout->addresses.unicode_type)
		return error_fail(error, error_size, EINVAL,
				  "the object at 0x%llx in pid %d is not a str (its type is at "
				  "0x%llx): the pointer is stale or the layout is wrong",
				  (unsigned long long)address, (int)pid, (unsigned long long)type);
	memcpy(&length, header + layout->unicode_length, sizeof(length));
	memcpy(&state_word, header + layout->unicode_state, sizeof(state_word));
	state = (uint32_t)state_word;
	kind = (state >> 2) & 7;
	if (length < 0 || length > STRING_LENGTH_MAX || (kind != 1 && kind != 2 && kind != 4))
		return error_fail(error, error_size, EINVAL,
				  "the str at 0x%llx in pid %d has length %lld and kind %u, which "
				  "no str has: the pointer is stale or the layout is wrong",
				  (unsigned long long)address, (int)pid, (long long)length, kind);
	if (!(state & (1u << 5))) {
		/* Not compact: the characters are in a separate block it points to. */
		err = remote_memory_read(pid, address + (uint64_t)layout->unicode_compact_data,
					 &data_address, sizeof(data_address), error, error_size);
		if (err)
			return err;
	} else if (state & (1u << 6)) {
		data_address = address + (uint64_t)layout->unicode_ascii_data;
	} else {
		data_address = address + (uint64_t)layout->unicode_compact_data;
	}
	if (length == 0)
		return 0;
	characters = calloc((size_t)length, kind);
	if (!characters)
		return error_fail(error, error_size, ENOMEM, "out of memory reading a str");
	err = remote_memory_read(pid, data_address, characters, (size_t)length * kind, error,
				 error_size);
	for (int64_t i = 0; !err && i < length; i++) {
		uint32_t code_point;

		if (kind == 1) {
			code_point = characters[i];
		} else if (kind == 2) {
			uint16_t unit;

			memcpy(&unit, characters + i * 2, sizeof(unit));
			code_point = unit;
		} else {
			memcpy(&code_point, characters + i * 4, sizeof(code_point));
		}
		if (!utf8_append(text, size, &used, code_point))
			err = error_fail(error, error_size, ENAMETOOLONG,
					 "the str at 0x%llx in pid %d has %lld characters, more "
					 "than fit in %zu bytes",
					 (unsigned long long)address, (int)pid, (long long)length,
					 size);
	}
	free(characters);
	text[used] = '\0';
	return err;
}

static int int_member(const unsigned char *object, int offset)
{
	int32_t value;

	memcpy(&value, object + offset, sizeof(value));
	return value;
}

static uint64_t pointer_member(const unsigned char *object, int offset)
{
	uint64_t value;

	memcpy(&value, object + offset, sizeof(value));
	return value;
}

/* The argument names: the first entries of the names tuple. */
static int argument_names_read(pid_t pid, const struct python_layout *layout, uint64_t tuple,
			       struct python_code *code, char *error, size_t error_size)
{
	uint64_t items[PYTHON_ARGUMENTS_MAX] = { 0 };
	int64_t tuple_size = 0;
	int count = code->parameter_count < PYTHON_ARGUMENTS_MAX ? code->parameter_count
								 : PYTHON_ARGUMENTS_MAX;
	int err;

	if (count <= 0)
		return 0;
	err = remote_memory_read(pid, tuple + (uint64_t)layout->tuple_size, &tuple_size,
				 sizeof(tuple_size), error, error_size);
	if (err)
		return err;
	if (tuple_size < count)
		return error_fail(error, error_size, EINVAL,
				  "the code object of %s in pid %d names %lld locals but has %d "
				  "parameters: the layout is wrong",
				  code->qualified_name, (int)pid, (long long)tuple_size, count);
	err = remote_memory_read(pid, tuple + (uint64_t)layout->tuple_items, items,
				 sizeof(items[0]) * (size_t)count, error, error_size);
	for (int i = 0; !err && i < count; i++)
		err = python_string_read(pid, layout, items[i], code->argument_names[i],
					 sizeof(code->argument_names[i]), error, error_size);
	if (!err)
		code->argument_name_count = count;
	return err;
}

int python_code_read(pid_t pid, const struct python_layout *layout, uint64_t address,
		     struct python_code *code, char *error, size_t error_size)
{
	const int members[] = {
		layout->object_type,
		layout->code_first_line,
		layout->code_argument_count,
		layout->code_positional_only_count,
		layout->code_keyword_only_count,
		layout->code_flags,
		layout->code_name,
		layout->code_qualified_name,
		layout->code_filename,
		layout->code_argument_names,
	};
	/* Every member the layouts name lies in the first 256 bytes of a code object. */
	unsigned char object[256];
	size_t wanted = 0;
	uint64_t type;
	int err;

	memset(code, 0, sizeof(*code));
	/* No further than the last member: the object may end where its mapping does. */
	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
		if (members[i] != PYTHON_FIELD_ABSENT && (size_t)members[i] + 8 > wanted)
			wanted = (size_t)members[i] + 8;
	}
	if (wanted > sizeof(object))
		return error_fail(error, error_size, EINVAL,
				  "the layout puts code object members past byte %zu: it is wrong",
				  sizeof(object));
	err = remote_memory_read(pid, address, object, wanted, error, error_size);
	if (err)
		return err;
	type = pointer_member(object, layout->object_type);
	if (layout->addresses.code_type && type != layout->addresses.code_type)
		return error_fail(error, error_size, EINVAL,
				  "the object at 0x%llx in pid %d is not a code object (its type "
				  "is at 0x%llx): the pointer is stale or the layout is wrong",
				  (unsigned long long)address, (int)pid, (unsigned long long)type);
	code->name_object =
		pointer_member(object, layout->code_qualified_name != PYTHON_FIELD_ABSENT
					       ? layout->code_qualified_name
					       : layout->code_name);
	code->first_line = int_member(object, layout->code_first_line);
	code->argument_count = int_member(object, layout->code_argument_count);
	code->positional_only_count = int_member(object, layout->code_positional_only_count);
	code->keyword_only_count = int_member(object, layout->code_keyword_only_count);
	code->flags = int_member(object, layout->code_flags);
	code->parameter_count = code->argument_count + code->keyword_only_count +
				!!(code->flags & PYTHON_CODE_VARARGS) +
				!!(code->flags & PYTHON_CODE_VARKEYWORDS);
	err = python_string_read(pid, layout, pointer_member(object, layout->code_name), code->name,
				 sizeof(code->name), error, error_size);
	if (!err && layout->code_qualified_name != PYTHON_FIELD_ABSENT)
		err = python_string_read(
			pid, layout, pointer_member(object, layout->code_qualified_name),
			code->qualified_name, sizeof(code->qualified_name), error, error_size);
	else if (!err)
		snprintf(code->qualified_name, sizeof(code->qualified_name), "%s", code->name);
	if (!err)
		err = python_string_read(pid, layout, pointer_member(object, layout->code_filename),
					 code->filename, sizeof(code->filename), error, error_size);
	if (!err)
		err = argument_names_read(pid, layout,
					  pointer_member(object, layout->code_argument_names), code,
					  error, error_size);
	return err;
}
