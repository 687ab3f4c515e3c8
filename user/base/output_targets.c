// SPDX-License-Identifier: MIT
/* Outputs kept apart from inputs and from each other; see output_targets.h. */
#include "base/output_targets.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error_message.h"
#include "base/log.h"
#include "base/output_file.h"

/* Who a path is: a file that exists, or a name not yet made in a directory that exists. */
struct file_identity {
	bool exists;
	dev_t device;
	ino_t inode;
	char name[PATH_MAX + NAME_MAX + 2]; /* the directory resolved, then the name */
};

/* False for what is nobody's file: standard output, a device, a FIFO, a path not reachable. */
static bool identify(const char *path, struct file_identity *identity)
{
	char directory_copy[PATH_MAX], base_copy[PATH_MAX], resolved[PATH_MAX];
	struct stat status;

	memset(identity, 0, sizeof(*identity));
	if (output_file_is_standard(path))
		return false;
	if (!stat(path, &status)) {
		identity->exists = true;
		identity->device = status.st_dev;
		identity->inode = status.st_ino;
		return S_ISREG(status.st_mode);
	}
	if (strlen(path) >= sizeof(directory_copy))
		return false;
	strcpy(directory_copy, path);
	strcpy(base_copy, path);
	if (!realpath(dirname(directory_copy), resolved))
		return false;
	snprintf(identity->name, sizeof(identity->name), "%s/%s", resolved, basename(base_copy));
	return true;
}

static bool same_identity(const struct file_identity *left, const struct file_identity *right)
{
	if (left->exists != right->exists)
		return false;
	if (left->exists)
		return left->device == right->device && left->inode == right->inode;
	return strcmp(left->name, right->name) == 0;
}

bool output_targets_same(const char *left, const char *right)
{
	struct file_identity first, second;

	return left && right && identify(left, &first) && identify(right, &second) &&
	       same_identity(&first, &second);
}

/* other_is_input: one of the inputs of its kind, the only one when only_one. */
static int refuse(const struct output_target *output, const char *other_what,
		  const char *other_path, bool other_is_input, bool only_one, char *error,
		  size_t error_size)
{
	char alias[PATH_MAX + 16] = "";

	if (strcmp(output->path, other_path) != 0)
		snprintf(alias, sizeof(alias), " (%s)", other_path);
	if (other_is_input)
		error_format(error, error_size,
			     "%s %s is %s %s%s this command reads: writing to it would destroy "
			     "it; give %s another file (nothing was written)",
			     output->option, output->path, only_one ? "the" : "a", other_what,
			     alias, output->option);
	else
		error_format(error, error_size,
			     "%s %s is the file %s names%s: give each output a file of its own "
			     "(nothing was written)",
			     output->option, output->path, other_what, alias);
	return -EINVAL;
}

int output_targets_check(const struct output_target *outputs, size_t output_count,
			 const struct input_files *inputs, size_t input_kinds, char *error,
			 size_t error_size)
{
	for (size_t i = 0; i < output_count; i++) {
		const struct output_target *output = &outputs[i];

		if (!output->path)
			continue;
		for (size_t kind = 0; kind < input_kinds; kind++)
			for (size_t j = 0; j < inputs[kind].count; j++)
				if (output_targets_same(output->path, inputs[kind].paths[j]))
					return refuse(output, inputs[kind].what,
						      inputs[kind].paths[j], true,
						      inputs[kind].count == 1, error, error_size);
		for (size_t j = 0; j < i; j++)
			if (output_targets_same(output->path, outputs[j].path))
				return refuse(output, outputs[j].option, outputs[j].path, false,
					      false, error, error_size);
	}
	return 0;
}

int output_targets_refuse_overlap(const struct output_target *outputs, size_t output_count,
				  const struct input_files *inputs, size_t input_kinds)
{
	char error[PATH_MAX * 2 + 256];
	int err = output_targets_check(outputs, output_count, inputs, input_kinds, error,
				       sizeof(error));

	if (err)
		log_error("%s", error);
	return err;
}
