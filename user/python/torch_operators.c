// SPDX-License-Identifier: MIT
/* The entry points of chosen ATen operators, at::_ops::NAME::call, and how their arguments sit. */
#include "python/torch_probe_sites.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_message.h"
#include "base/growable_array.h"

#define OPERATOR_PREFIX "_ZN2at4_ops"
#define OPERATOR_CALL_SUFFIX "4callE"

/*
 * The at::_ops struct name in OPERATOR_PREFIX <length> <name> "4callE";
 * false for the redispatch entry and every other member.
 */
static bool operator_of_symbol(const char *symbol, const char **name, size_t *length)
{
	const char *cursor;
	char *end;
	unsigned long count;

	if (strncmp(symbol, OPERATOR_PREFIX, strlen(OPERATOR_PREFIX)) != 0)
		return false;
	cursor = symbol + strlen(OPERATOR_PREFIX);
	if (!isdigit((unsigned char)*cursor))
		return false;
	count = strtoul(cursor, &end, 10);
	if (count == 0 || strnlen(end, count) < count)
		return false;
	if (strncmp(end + count, OPERATOR_CALL_SUFFIX, strlen(OPERATOR_CALL_SUFFIX)) != 0)
		return false;
	*name = end;
	*length = count;
	return true;
}

bool torch_op_symbol_matches(const char *symbol, const char *request, char *operator_name,
			     size_t operator_name_size)
{
	const char *name, *dot = strchr(request, '.');
	size_t length, base_length = dot ? (size_t)(dot - request) : strlen(request);
	bool matches;

	if (base_length == 0 || !operator_of_symbol(symbol, &name, &length))
		return false;
	if (dot && strcmp(dot + 1, "default") == 0) {
		matches = length == base_length && strncmp(name, request, base_length) == 0;
	} else if (dot) {
		size_t overload_length = strlen(dot + 1);

		matches = overload_length && length == base_length + 1 + overload_length &&
			  strncmp(name, request, base_length) == 0 && name[base_length] == '_' &&
			  strncmp(name + base_length + 1, dot + 1, overload_length) == 0;
	} else {
		matches = strncmp(name, request, base_length) == 0 &&
			  (length == base_length ||
			   (length > base_length + 1 && name[base_length] == '_' &&
			    name[base_length + 1] != '_'));
	}
	if (matches && operator_name)
		snprintf(operator_name, operator_name_size, "%.*s", (int)length, name);
	return matches;
}

/* How an operator's arguments sit in registers, from the in-place and out= marks in its name. */
static const char *operator_reading(const char *operator_name, const char *symbol)
{
	const char *name = operator_name;
	bool list, in_place, out;
	size_t length;

	/* __and__, __iand__: the marks below do not apply to Python's special names. */
	if (strncmp(name, "__", 2) == 0)
		return "entry: the operator was called; its schema tells whether a Tensor "
		       "returned by value puts a hidden return slot in rdi";
	while (*name == '_')
		name++;
	length = strlen(name);
	list = strstr(symbol, OPERATOR_CALL_SUFFIX "N3c108ArrayRefINS_6TensorE") != NULL;
	in_place = length && (name[length - 1] == '_' || strstr(name, "__"));
	out = length > 4 && strcmp(name + length - 4, "_out") == 0;
	if (list && (in_place || out))
		return "entry: the operator was called; it returns nothing: rdi -> the first "
		       "tensor list's at::Tensor array, rsi -> its length, the other arguments "
		       "in order from rdx";
	if (list)
		return "entry: the operator was called; it returns a tensor list by value: rdi -> "
		       "the hidden return slot, rsi -> the first tensor list's at::Tensor "
		       "array, rdx -> its length";
	if (in_place || out)
		return "entry: the operator was called; it returns a reference: rdi -> the first "
		       "argument (an at::Tensor & or const at::Tensor &: a pointer to the "
		       "TensorImpl * slot), the others in order from rsi";
	return "entry: the operator was called; it returns a Tensor by value: rdi -> the hidden "
	       "return slot, the arguments in order from rsi";
}

static int add_operator(struct torch_probes *probes, const char *request, const char *symbol,
			const char *operator_name, const struct elf_symbol_location *location)
{
	struct torch_op_probe *op;

	if (growable_array_room_for_one((void **)&probes->ops, probes->op_count,
					&probes->op_capacity, sizeof(*probes->ops)))
		return -ENOMEM;
	op = &probes->ops[probes->op_count++];
	memset(op, 0, sizeof(*op));
	op->request = strdup(request);
	op->operator_name = strdup(operator_name);
	op->function_offset = location->file_offset;
	if (!op->request || !op->operator_name ||
	    torch_probe_site_set(&op->site, symbol, true, location) ||
	    torch_probe_site_set_reading(&op->site, "%s", operator_reading(operator_name, symbol)))
		return -ENOMEM;
	/* After the reading: moving the site adds to it. */
	return torch_probe_site_move_to_emulated_instruction(probes->host_path, &op->site);
}

/* Whether an operator entry point is probed already (asked twice, by two names). */
static bool already_probed(const struct torch_probes *probes, uint64_t file_offset)
{
	for (size_t i = 0; i < probes->op_count; i++)
		if (probes->ops[i].function_offset == file_offset)
			return true;
	return false;
}

static int resolve_requests(struct torch_probes *probes, const char *const *requests,
			    size_t request_count, bool skip_missing, char *error,
			    size_t error_size);

int torch_operators_resolve(struct torch_probes *probes, const char *const *requests,
			    size_t request_count, char *error, size_t error_size)
{
	return resolve_requests(probes, requests, request_count, false, error, error_size);
}

int torch_operators_resolve_available(struct torch_probes *probes, const char *const *requests,
				      size_t request_count, char *error, size_t error_size)
{
	return resolve_requests(probes, requests, request_count, true, error, error_size);
}

static int resolve_requests(struct torch_probes *probes, const char *const *requests,
			    size_t request_count, bool skip_missing, char *error, size_t error_size)
{
	struct torch_name_list names = { 0 };
	int err;

	if (request_count == 0)
		return 0;
	err = torch_dynamic_names_with_prefix(probes->host_path, OPERATOR_PREFIX, &names, error,
					      error_size);
	if (err)
		return err;
	for (size_t r = 0; r < request_count && !err; r++) {
		size_t found = 0;

		for (size_t i = 0; i < names.count && !err; i++) {
			struct elf_symbol_location location;
			char operator_name[256];

			if (!torch_op_symbol_matches(names.names[i], requests[r], operator_name,
						     sizeof(operator_name)) ||
			    elf_symbol_find(probes->host_path, names.names[i], &location, NULL,
					    0) != 0)
				continue;
			found++;
			if (already_probed(probes, location.file_offset))
				continue;
			err = add_operator(probes, requests[r], names.names[i], operator_name,
					   &location);
			if (err)
				error_format(error, error_size, "out of memory");
		}
		if (!err && found == 0 && !skip_missing)
			err = error_fail(error, error_size, ENOENT,
					 "%s has no ATen operator %s: no exported "
					 "at::_ops::...::call matches it; name it as PyTorch's "
					 "schema does, e.g. add_ for every overload or add_.Tensor "
					 "for one",
					 probes->host_path, requests[r]);
	}
	torch_name_list_free(&names);
	return err;
}
