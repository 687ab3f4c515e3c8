// SPDX-License-Identifier: MIT
/*
 * An interpreter file followed before any process runs it: a first exec of
 * it is held (record/exec_hold.c) while its frame evaluator is probed and
 * the kernel is given its layout, so that the exec's process is followed
 * from its first instruction, like later runs of the same file.
 */
#include <errno.h>
#include <string.h>

#include "base/error_message.h"
#include "base/log.h"
#include "python/python_exec_layout.h"
#include "python/python_layout.h"
#include "python/python_tracer_state.h"

int python_tracer_follow_file(struct python_tracer *tracer, const char *host_path, char *error,
			      size_t error_size)
{
	struct tcheck_python_process shared = { .frame_code_offset = 0 };
	struct python_runtime runtime;
	struct python_layout layout;
	int result;

	result = python_runtime_describe_file(host_path, host_path, &runtime, error, error_size);
	if (result == -ENOENT)
		return 0;
	if (!result)
		result = python_layout_for(&runtime, &layout, error, error_size);
	if (result)
		return result;
	python_tracer_describe_for_probes(&layout, &shared);
	result = python_exec_layout_share_file(tracer->session, host_path, &shared);
	if (result)
		return error_fail(error, error_size, -result,
				  "cannot give the probes the layout of %s: %s", host_path,
				  strerror(-result));
	result = python_tracer_probe_file(tracer, &runtime, error, error_size);
	return result ? result : 1;
}
