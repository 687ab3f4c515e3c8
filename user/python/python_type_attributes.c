// SPDX-License-Identifier: MIT
/* Which class of a type's method resolution order defines an attribute (python_type_attributes.h).
 */
#include "python/python_type_attributes.h"

#include <string.h>

#include "base/remote_memory.h"
#include "python/python_dicts.h"
#include "python/python_module_classes.h"

/* A bound that keeps a stale pointer from reading much: a class has far fewer bases. */
#define MRO_CLASSES_MAX 64
/* Enough of a module's name to compare its first part. */
#define MODULE_NAME_BYTES 128

/* Whether the class whose dictionary is at 'dict' was defined in a module under 'prefix'. */
static enum python_type_answer defined_under(pid_t pid, const struct python_layout *layout,
					     uint64_t dict, const char *prefix)
{
	char module[MODULE_NAME_BYTES], error[160];
	uint64_t value = 0;
	int found = python_dict_lookup(pid, layout, dict, "__module__", NULL, &value);

	if (found <= 0)
		return found < 0 ? PYTHON_TYPE_UNKNOWN : PYTHON_TYPE_NO;
	/* A name too long to read whole still shows its first part. */
	if (python_string_read(pid, layout, value, module, sizeof(module), error, sizeof(error)) &&
	    !module[0])
		return PYTHON_TYPE_UNKNOWN;
	return strncmp(module, prefix, strlen(prefix)) == 0 ? PYTHON_TYPE_YES : PYTHON_TYPE_NO;
}

enum python_type_answer python_type_overrides(struct u64_map *class_names, pid_t pid,
					      const struct python_layout *layout, uint64_t type,
					      const char *attribute, const char *base_name,
					      const char *exempt_module_prefix)
{
	uint64_t mro = 0, classes[MRO_CLASSES_MAX];
	int64_t count = 0;
	char error[160];

	if (!type || !python_dict_layout_known(layout) ||
	    remote_memory_read_u64(pid, type + PYTHON_TYPE_MRO_OFFSET, &mro) || !mro ||
	    remote_memory_read(pid, mro + (uint64_t)layout->tuple_size, &count, sizeof(count),
			       error, sizeof(error)) ||
	    count <= 0 || count > MRO_CLASSES_MAX ||
	    remote_memory_read(pid, mro + (uint64_t)layout->tuple_items, classes,
			       (size_t)count * sizeof(classes[0]), error, sizeof(error)))
		return PYTHON_TYPE_UNKNOWN;
	for (int64_t i = 0; i < count; i++) {
		const char *name = python_module_class_name(class_names, pid, classes[i]);
		uint64_t dict = 0, value = 0;
		enum python_type_answer has;
		int found;

		if (!name)
			return PYTHON_TYPE_UNKNOWN;
		if (strcmp(name, base_name) == 0)
			return PYTHON_TYPE_NO;
		/* object and the other built-in types keep their dict elsewhere from 3.12 on. */
		if (remote_memory_read_u64(pid, classes[i] + PYTHON_TYPE_DICT_OFFSET, &dict))
			return PYTHON_TYPE_UNKNOWN;
		if (!dict)
			continue;
		found = python_dict_lookup(pid, layout, dict, attribute, NULL, &value);
		if (found < 0)
			return PYTHON_TYPE_UNKNOWN;
		if (found) {
			/* The first class that defines it decides: torch's own one is exempt. */
			has = defined_under(pid, layout, dict, exempt_module_prefix);
			return has == PYTHON_TYPE_UNKNOWN ? has
			       : has == PYTHON_TYPE_YES	  ? PYTHON_TYPE_NO
							  : PYTHON_TYPE_YES;
		}
	}
	return PYTHON_TYPE_NO;
}

/* The answers as the map keeps them: never NULL. */
#define ANSWER_VALUE(answer) ((void *)(uintptr_t)((answer) + 2))
#define VALUE_ANSWER(value) ((enum python_type_answer)((int)(uintptr_t)(value)-2))

enum python_type_answer python_type_overrides_cached(struct u64_map *answers,
						     struct u64_map *class_names, pid_t pid,
						     const struct python_layout *layout,
						     uint64_t type, const char *attribute,
						     const char *base_name,
						     const char *exempt_module_prefix)
{
	void *kept = u64_map_get(answers, type);
	enum python_type_answer answer;

	if (kept)
		return VALUE_ANSWER(kept);
	answer = python_type_overrides(class_names, pid, layout, type, attribute, base_name,
				       exempt_module_prefix);
	(void)u64_map_put(answers, type, ANSWER_VALUE(answer)); /* out of memory: asked again */
	return answer;
}
