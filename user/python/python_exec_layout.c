// SPDX-License-Identifier: MIT
/* Interpreter executables by file, for the process probes (see the header). */
#include "python/python_exec_layout.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "probe/process_info.h"

/* /proc/PID/stat's startcode: where the kernel put the executable's code. */
#define STAT_FIELD_START_CODE 26

int python_exec_layout_share(struct probe_session *session, pid_t pid,
			     const char *interpreter_host_path,
			     const struct tcheck_python_process *process)
{
	struct tcheck_python_process relative = *process;
	struct tcheck_file_key key = { .reserved = 0 };
	struct stat executable, interpreter;
	unsigned long long start_code;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &executable) || stat(interpreter_host_path, &interpreter))
		return -errno;
	if (executable.st_dev != interpreter.st_dev || executable.st_ino != interpreter.st_ino)
		return 0;
	if (!process_stat_number(pid, STAT_FIELD_START_CODE, &start_code) || !start_code)
		return -ENOENT;
	/* The kernel's own encoding of the device (MKDEV), which the exec probe reads. */
	key.device = (uint32_t)(major(executable.st_dev) << 20 | minor(executable.st_dev));
	key.inode = executable.st_ino;
	tcheck_python_process_move(&relative, -(uint64_t)start_code);
	return probe_session_set_python_exec_layout(session, &key, &relative);
}
