// SPDX-License-Identifier: MIT
/* Module paths of source files and the selection of qualified names, for the Python tracer. */
#include "python/python_names.h"

#include <stdio.h>
#include <string.h>

void python_module_of_file(const char *file, char *module, size_t size)
{
	const char *start = NULL, *marker;
	static const char *const roots[] = { "site-packages/", "dist-packages/" };
	size_t length;

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		marker = strstr(file, roots[i]);
		if (marker)
			start = marker + strlen(roots[i]);
	}
	/* Outside an installed package: the script's own name stands for its module. */
	if (!start) {
		marker = strrchr(file, '/');
		start = marker ? marker + 1 : file;
	}
	snprintf(module, size, "%s", start);
	length = strlen(module);
	if (length > 3 && strcmp(module + length - 3, ".py") == 0)
		module[length - 3] = '\0';
	for (char *c = module; *c; c++)
		if (*c == '/')
			*c = '.';
	length = strlen(module);
	if (length > 9 && strcmp(module + length - 9, ".__init__") == 0)
		module[length - 9] = '\0';
}

int python_name_selected(const char *qualified_name, const char *const *prefixes)
{
	for (size_t i = 0; prefixes[i]; i++)
		if (strncmp(qualified_name, prefixes[i], strlen(prefixes[i])) == 0)
			return 1;
	return 0;
}
