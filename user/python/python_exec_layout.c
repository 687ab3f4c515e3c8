// SPDX-License-Identifier: MIT
/* Interpreter executables by file, for the process probes (see the header). */
#include "python/python_exec_layout.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "probe/process_info.h"
#include "python/python_layout.h"

/* /proc/PID/stat's startcode: where the kernel put the executable's code. */
#define STAT_FIELD_START_CODE 26

/* The kernel's own encoding of a file's device (MKDEV), which the exec probe reads. */
static struct tcheck_file_key file_key_of(const struct stat *file)
{
	return (struct tcheck_file_key){
		.device = (uint32_t)(major(file->st_dev) << 20 | minor(file->st_dev)),
		.inode = file->st_ino,
		.reserved = 0,
	};
}

int python_exec_layout_share_file(struct probe_session *session, const char *host_path,
				  const struct tcheck_python_process *process)
{
	struct tcheck_python_process relative = *process;
	struct tcheck_file_key key;
	struct stat interpreter;
	uint64_t start_code;
	int err;

	if (stat(host_path, &interpreter))
		return -errno;
	err = python_runtime_code_start(host_path, &start_code, NULL, 0);
	if (err)
		return err;
	key = file_key_of(&interpreter);
	tcheck_python_process_move(&relative, -start_code);
	return probe_session_set_python_exec_layout(session, &key, &relative);
}

int python_exec_layout_share(struct probe_session *session, pid_t pid,
			     const char *interpreter_host_path,
			     const struct tcheck_python_process *process)
{
	struct tcheck_python_process relative = *process;
	struct tcheck_file_key key;
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
	key = file_key_of(&executable);
	tcheck_python_process_move(&relative, -(uint64_t)start_code);
	return probe_session_set_python_exec_layout(session, &key, &relative);
}
