// SPDX-License-Identifier: MIT
/* Loads the tracer's BPF skeleton and manages its attachments. */
#include "probe/probe_session.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/error_message.h"
#include "base/log.h"
#include "probe/function_returns.h"
#include "probe/ring_reader.h"
#include "probe/uprobe_links.h"
#include "tracer.skel.h"

struct probe_session {
	struct tracer_bpf *skeleton;
	struct ring_reader *ring_reader;
	struct uprobe_link_list links;
	int possible_cpus;
	bool python_session; /* the frame evaluator probed as one uprobe session */
};

static int print_libbpf(enum libbpf_print_level level, const char *format, va_list args)
{
	/* libbpf's own chatter is for -vv; its warnings reach the user as our errors. */
	if (level == LIBBPF_DEBUG && log_verbosity() < 2)
		return 0;
	if (level == LIBBPF_INFO && log_verbosity() < 1)
		return 0;
	return vfprintf(stderr, format, args);
}

static int check_kernel(char *error, size_t error_size)
{
	if (geteuid() != 0) {
		snprintf(error, error_size,
			 "loading BPF programs needs root (or CAP_BPF, CAP_PERFMON and "
			 "CAP_SYS_PTRACE): run tcheck-bpf with sudo");
		return -EPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		snprintf(error, error_size,
			 "this kernel has no BTF (/sys/kernel/btf/vmlinux is missing): tcheck-bpf "
			 "needs a kernel built with CONFIG_DEBUG_INFO_BTF=y (5.15 or newer)");
		return -ENOENT;
	}
	return 0;
}

static int prepare_work_request_programs(struct tracer_bpf *skeleton)
{
	return uprobe_link_prepare(skeleton->progs.verbs_post_send) ||
	       uprobe_link_prepare(skeleton->progs.verbs_post_recv) ||
	       uprobe_link_prepare(skeleton->progs.verbs_poll_cq_entry) ||
	       uprobe_link_prepare(skeleton->progs.verbs_poll_cq_return) ||
	       uprobe_link_prepare(skeleton->progs.nccl_ib_entry) ||
	       uprobe_link_prepare(skeleton->progs.nccl_ib_test_return) ||
	       uprobe_link_prepare(skeleton->progs.verbs_open_device_return);
}

struct probe_session *probe_session_new(const struct probe_session_config *config,
					probe_record_fn on_record, void *context, char *error,
					size_t error_size)
{
	struct probe_session *session;
	int result;

	if (check_kernel(error, error_size))
		return NULL;
	if (config->ring_buffer_bytes &&
	    (config->ring_buffer_bytes < PROBE_RING_BUFFER_MIN_BYTES ||
	     config->ring_buffer_bytes > PROBE_RING_BUFFER_MAX_BYTES ||
	     (config->ring_buffer_bytes & (config->ring_buffer_bytes - 1)))) {
		snprintf(error, error_size,
			 "a ring buffer of %zu bytes cannot be made: the kernel takes a power of "
			 "two from 4 KiB to 2 GiB (--ring-buffer-mb 2048 at most)",
			 config->ring_buffer_bytes);
		return NULL;
	}
	libbpf_set_print(print_libbpf);
	session = calloc(1, sizeof(*session));
	if (!session) {
		snprintf(error, error_size, "out of memory");
		return NULL;
	}
	session->possible_cpus = libbpf_num_possible_cpus();
	session->skeleton = tracer_bpf__open();
	if (!session->skeleton) {
		snprintf(error, error_size, "cannot open the BPF programs: %s", strerror(errno));
		goto fail;
	}
	session->skeleton->rodata->filter_by_pid = true;
	session->skeleton->rodata->freeze_on_crash = config->freeze_on_crash;
	/* Programs not asked for are not loaded: nothing runs that was not wanted. */
	/* The frame evaluator as one uprobe session where the kernel has them, else a pair. */
	session->python_session = config->python && uprobe_session_supported();
	bpf_program__set_autoload(session->skeleton->progs.python_frame_session,
				  session->python_session);
	bpf_program__set_autoload(session->skeleton->progs.python_frame_entry,
				  config->python && !session->python_session);
	bpf_program__set_autoload(session->skeleton->progs.python_frame_return,
				  config->python && !session->python_session);
	bpf_program__set_autoload(session->skeleton->progs.torch_scope_enter, config->python);
	bpf_program__set_autoload(session->skeleton->progs.torch_scope_exit, config->python);
	bpf_program__set_autoload(session->skeleton->progs.torch_scope_named, config->python);
	bpf_program__set_autoload(session->skeleton->progs.torch_scope_keyed, config->python);
	bpf_program__set_autoload(session->skeleton->progs.backward_enter, config->python);
	bpf_program__set_autoload(session->skeleton->progs.backward_return, config->python);
	bpf_program__set_autoload(session->skeleton->progs.process_group_init, config->python);
	bpf_program__set_autoload(session->skeleton->progs.store_prefix_built, config->python);
	bpf_program__set_autoload(session->skeleton->progs.c10d_collective, config->python);
	bpf_program__set_autoload(session->skeleton->progs.c10d_work_event, config->python);
	bpf_program__set_autoload(session->skeleton->progs.python_exception_display,
				  config->python);
	bpf_program__set_autoload(session->skeleton->progs.python_exception_at_exit,
				  config->python);
	bpf_program__set_autoload(session->skeleton->progs.torch_op_entry, config->torch_ops);
	bpf_program__set_autoload(session->skeleton->progs.grad_mode_set, config->torch_ops);
	if (uprobe_link_prepare(session->skeleton->progs.library_call_entry) ||
	    uprobe_link_prepare(session->skeleton->progs.library_call_return) ||
	    uprobe_link_prepare(session->skeleton->progs.python_frame_entry) ||
	    uprobe_link_prepare(session->skeleton->progs.python_frame_return) ||
	    (session->python_session &&
	     uprobe_session_prepare(session->skeleton->progs.python_frame_session)) ||
	    uprobe_link_prepare(session->skeleton->progs.torch_scope_enter) ||
	    uprobe_link_prepare(session->skeleton->progs.torch_scope_exit) ||
	    uprobe_link_prepare(session->skeleton->progs.torch_scope_named) ||
	    uprobe_link_prepare(session->skeleton->progs.torch_scope_keyed) ||
	    uprobe_link_prepare(session->skeleton->progs.backward_enter) ||
	    uprobe_link_prepare(session->skeleton->progs.backward_return) ||
	    uprobe_link_prepare(session->skeleton->progs.process_group_init) ||
	    uprobe_link_prepare(session->skeleton->progs.store_prefix_built) ||
	    uprobe_link_prepare(session->skeleton->progs.c10d_collective) ||
	    uprobe_link_prepare(session->skeleton->progs.c10d_work_event) ||
	    uprobe_link_prepare(session->skeleton->progs.python_exception_display) ||
	    uprobe_link_prepare(session->skeleton->progs.python_exception_at_exit) ||
	    uprobe_link_prepare(session->skeleton->progs.torch_op_entry) ||
	    uprobe_link_prepare(session->skeleton->progs.grad_mode_set) ||
	    uprobe_link_prepare(session->skeleton->progs.floor_entry) ||
	    uprobe_link_prepare(session->skeleton->progs.floor_return) ||
	    prepare_work_request_programs(session->skeleton)) {
		snprintf(error, error_size, "cannot prepare the probe programs");
		goto fail;
	}
	if (config->ring_buffer_bytes) {
		bpf_map__set_max_entries(session->skeleton->maps.events,
					 (uint32_t)config->ring_buffer_bytes);
		/* A power of two: wake the reader at each quarter of it. */
		session->skeleton->rodata->wakeup_shift =
			(uint32_t)__builtin_ctzll(config->ring_buffer_bytes) - 2;
	}
	result = tracer_bpf__load(session->skeleton);
	if (result) {
		snprintf(error, error_size,
			 "the kernel refused the BPF programs (%s); run with -vv to see the "
			 "verifier's log",
			 strerror(-result));
		goto fail;
	}
	result = tracer_bpf__attach(session->skeleton);
	if (result) {
		snprintf(error, error_size,
			 "cannot attach the process tracepoints (sched_process_fork/exec/exit): %s",
			 strerror(-result));
		goto fail;
	}
	session->ring_reader = ring_reader_new(bpf_map__fd(session->skeleton->maps.events),
					       bpf_map__max_entries(session->skeleton->maps.events),
					       on_record, context);
	if (!session->ring_reader) {
		snprintf(error, error_size, "cannot open the ring buffer: %s", strerror(errno));
		goto fail;
	}
	return session;
fail:
	probe_session_free(session);
	return NULL;
}

void probe_session_free(struct probe_session *session)
{
	if (!session)
		return;
	uprobe_link_list_free(&session->links);
	ring_reader_free(session->ring_reader);
	tracer_bpf__destroy(session->skeleton);
	free(session);
}

void probe_session_on_attach_failure(struct probe_session *session,
				     void (*on_failure)(void *context, const char *path),
				     void *context)
{
	session->links.on_failure = on_failure;
	session->links.failure_context = context;
}

int probe_session_trace_process(struct probe_session *session, uint32_t pid)
{
	uint8_t traced = 1;

	if (bpf_map_update_elem(bpf_map__fd(session->skeleton->maps.traced_pids), &pid, &traced,
				BPF_ANY))
		return -errno;
	return 0;
}

bool probe_session_is_traced(struct probe_session *session, uint32_t pid)
{
	uint8_t traced;

	return bpf_map_lookup_elem(bpf_map__fd(session->skeleton->maps.traced_pids), &pid,
				   &traced) == 0;
}

int probe_session_attach_calls(struct probe_session *session, const char *path,
			       const uint64_t *offsets, const uint64_t *cookies, size_t count,
			       char *error, size_t error_size)
{
	/* pid -1: every process mapping the file; the traced set filters in BPF. */
	int result =
		uprobe_link_attach(&session->links, session->skeleton->progs.library_call_return,
				   true, path, offsets, cookies, count, -1, error, error_size);

	if (result)
		return result;
	return uprobe_link_attach(&session->links, session->skeleton->progs.library_call_entry,
				  false, path, offsets, cookies, count, -1, error, error_size);
}

int probe_session_attach_notice(struct probe_session *session, const char *path, uint64_t offset,
				uint64_t cookie, int pid, char *error, size_t error_size)
{
	return uprobe_link_attach(&session->links, session->skeleton->progs.library_call_entry,
				  false, path, &offset, &cookie, 1, pid, error, error_size);
}

size_t probe_session_detach_process(struct probe_session *session, int pid)
{
	return uprobe_link_detach_process(&session->links, pid);
}

int probe_session_attach_floor(struct probe_session *session, const char *path, uint64_t offset,
			       int pid, char *error, size_t error_size)
{
	uint64_t cookie = 0;
	int result = uprobe_link_attach(&session->links, session->skeleton->progs.floor_return,
					true, path, &offset, &cookie, 1, pid, error, error_size);

	if (result)
		return result;
	return uprobe_link_attach(&session->links, session->skeleton->progs.floor_entry, false,
				  path, &offset, &cookie, 1, pid, error, error_size);
}

int probe_session_attach_python_exceptions(struct probe_session *session, const char *path,
					   uint64_t display_offset, uint64_t set_object_offset,
					   char *error, size_t error_size)
{
	uint64_t cookie = 0;
	int result = 0;

	if (display_offset)
		result = uprobe_link_attach(
			&session->links, session->skeleton->progs.python_exception_display, false,
			path, &display_offset, &cookie, 1, -1, error, error_size);
	if (!result && set_object_offset)
		result = uprobe_link_attach(
			&session->links, session->skeleton->progs.python_exception_at_exit, false,
			path, &set_object_offset, &cookie, 1, -1, error, error_size);
	return result;
}

int probe_session_attach_python(struct probe_session *session, const char *path, uint64_t offset,
				char *error, size_t error_size)
{
	uint64_t cookie = 0;
	int result;

	if (session->python_session)
		return uprobe_session_attach(&session->links,
					     session->skeleton->progs.python_frame_session, path,
					     &offset, &cookie, 1, -1, error, error_size);
	result = uprobe_link_attach(&session->links, session->skeleton->progs.python_frame_return,
				    true, path, &offset, &cookie, 1, -1, error, error_size);
	if (result)
		return result;
	return uprobe_link_attach(&session->links, session->skeleton->progs.python_frame_entry,
				  false, path, &offset, &cookie, 1, -1, error, error_size);
}

int probe_session_attach_torch_scopes(struct probe_session *session, const char *path,
				      uint64_t enter_offset, uint64_t enter_cookie,
				      uint64_t key_offset, const uint64_t *exit_offsets,
				      size_t exit_count, char *error, size_t error_size)
{
	uint64_t no_cookie = 0, no_cookies[2] = { 0 };
	int result;

	if (exit_count > sizeof(no_cookies) / sizeof(no_cookies[0]))
		return error_fail(error, error_size, EINVAL,
				  "%zu torch scope exit sites, at most 2", exit_count);
	result = uprobe_link_attach(&session->links, session->skeleton->progs.torch_scope_exit,
				    false, path, exit_offsets, no_cookies, exit_count, -1, error,
				    error_size);

	if (result)
		return result;
	if (!key_offset)
		return uprobe_link_attach(&session->links,
					  session->skeleton->progs.torch_scope_enter, false, path,
					  &enter_offset, &enter_cookie, 1, -1, error, error_size);
	/* The key first: a name is never left waiting for a constructor not yet probed. */
	result = uprobe_link_attach(&session->links, session->skeleton->progs.torch_scope_keyed,
				    false, path, &key_offset, &no_cookie, 1, -1, error, error_size);
	if (result)
		return result;
	return uprobe_link_attach(&session->links, session->skeleton->progs.torch_scope_named,
				  false, path, &enter_offset, &enter_cookie, 1, -1, error,
				  error_size);
}

int probe_session_attach_backward(struct probe_session *session, const char *path, uint64_t offset,
				  const uint64_t *return_offsets, size_t return_count,
				  bool *ends_probed, char *error, size_t error_size)
{
	uint64_t cookies[FUNCTION_RETURNS_MAX] = { 0 }, cookie = 0;
	char return_error[256] = "";
	int err;

	*ends_probed = false;
	if (return_count > FUNCTION_RETURNS_MAX)
		return_count = 0;
	if (return_count &&
	    !uprobe_link_attach(&session->links, session->skeleton->progs.backward_return, false,
				path, return_offsets, cookies, return_count, -1, return_error,
				sizeof(return_error))) {
		*ends_probed = true;
		cookie = TCHECK_BACKWARD_ENDS_PROBED;
	}
	err = uprobe_link_attach(&session->links, session->skeleton->progs.backward_enter, false,
				 path, &offset, &cookie, 1, -1, error, error_size);
	if (err)
		return err;
	if (return_count && !*ends_probed)
		error_format(error, error_size, "%s", return_error);
	return 0;
}

int probe_session_attach_process_groups(struct probe_session *session, const char *path,
					const uint64_t *offsets, size_t count, char *error,
					size_t error_size)
{
	uint64_t cookies[TCHECK_PROCESS_GROUP_SITES_MAX] = { 0 };

	if (count > TCHECK_PROCESS_GROUP_SITES_MAX)
		return -E2BIG;
	return uprobe_link_attach(&session->links, session->skeleton->progs.process_group_init,
				  false, path, offsets, cookies, count, -1, error, error_size);
}

int probe_session_attach_store_prefix(struct probe_session *session, const char *path,
				      uint64_t offset, char *error, size_t error_size)
{
	uint64_t cookie = 0;

	return uprobe_link_attach(&session->links, session->skeleton->progs.store_prefix_built,
				  false, path, &offset, &cookie, 1, -1, error, error_size);
}

int probe_session_attach_c10d_collectives(struct probe_session *session, const char *path,
					  const uint64_t *offsets, const uint64_t *cookies,
					  size_t count, char *error, size_t error_size)
{
	if (count > TCHECK_C10D_SITES_MAX)
		return -E2BIG;
	return uprobe_link_attach(&session->links, session->skeleton->progs.c10d_collective, false,
				  path, offsets, cookies, count, -1, error, error_size);
}

int probe_session_attach_c10d_work(struct probe_session *session, const char *path,
				   const uint64_t *offsets, const uint64_t *cookies, size_t count,
				   char *error, size_t error_size)
{
	return uprobe_link_attach(&session->links, session->skeleton->progs.c10d_work_event, false,
				  path, offsets, cookies, count, -1, error, error_size);
}

int probe_session_attach_torch_ops(struct probe_session *session, const char *path,
				   const uint64_t *offsets, const uint64_t *cookies, size_t count,
				   char *error, size_t error_size)
{
	return uprobe_link_attach(&session->links, session->skeleton->progs.torch_op_entry, false,
				  path, offsets, cookies, count, -1, error, error_size);
}

int probe_session_attach_grad_mode(struct probe_session *session, const char *path,
				   const uint64_t *offsets, size_t count, uint64_t cookie,
				   char *error, size_t error_size)
{
	uint64_t *cookies = calloc(count ? count : 1, sizeof(*cookies));
	int err;

	if (!cookies)
		return error_fail(error, error_size, ENOMEM, "out of memory");
	for (size_t i = 0; i < count; i++)
		cookies[i] = cookie;
	err = uprobe_link_attach(&session->links, session->skeleton->progs.grad_mode_set, false,
				 path, offsets, cookies, count, -1, error, error_size);
	free(cookies);
	return err;
}

int probe_session_set_python_process(struct probe_session *session, uint32_t pid,
				     const struct tcheck_python_process *process)
{
	int map = bpf_map__fd(session->skeleton->maps.python_processes);

	if (!process)
		return bpf_map_delete_elem(map, &pid) && errno != ENOENT ? -errno : 0;
	if (bpf_map_update_elem(map, &pid, process, BPF_ANY))
		return -errno;
	return 0;
}

int probe_session_set_python_exec_layout(struct probe_session *session,
					 const struct tcheck_file_key *file,
					 const struct tcheck_python_process *process)
{
	int map = bpf_map__fd(session->skeleton->maps.python_exec_layouts);

	return bpf_map_update_elem(map, file, process, BPF_ANY) ? -errno : 0;
}

int probe_session_set_python_stack_layout(struct probe_session *session, uint32_t pid,
					  const struct tcheck_python_stack_layout *layout)
{
	int map = bpf_map__fd(session->skeleton->maps.python_stack_layouts);

	if (!layout)
		return bpf_map_delete_elem(map, &pid) && errno != ENOENT ? -errno : 0;
	if (bpf_map_update_elem(map, &pid, layout, BPF_ANY))
		return -errno;
	/* From now on the NCCL entry probe looks its process up. */
	session->skeleton->bss->python_stacks_followed = true;
	return 0;
}

int probe_session_set_code_verdict(struct probe_session *session, uint32_t pid, uint64_t code,
				   uint64_t code_name, uint8_t verdict)
{
	struct tcheck_code_key key = { .pid = pid, .reserved = 0, .code = code, .name = code_name };

	if (bpf_map_update_elem(bpf_map__fd(session->skeleton->maps.code_verdicts), &key, &verdict,
				BPF_ANY))
		return -errno;
	return 0;
}

int probe_session_set_comm_layout(struct probe_session *session, uint32_t slot,
				  const struct tcheck_comm_layout *layout)
{
	if (bpf_map_update_elem(bpf_map__fd(session->skeleton->maps.comm_layouts), &slot, layout,
				BPF_ANY))
		return -errno;
	return 0;
}

static struct bpf_program *network_program(struct tracer_bpf *skeleton,
					   enum probe_network_program program, bool *retprobe)
{
	*retprobe = false;
	switch (program) {
	case PROBE_VERBS_OPEN_DEVICE_RETURN:
		*retprobe = true;
		return skeleton->progs.verbs_open_device_return;
	case PROBE_VERBS_POST_SEND:
		return skeleton->progs.verbs_post_send;
	case PROBE_VERBS_POST_RECV:
		return skeleton->progs.verbs_post_recv;
	case PROBE_VERBS_POLL_CQ_ENTRY:
		return skeleton->progs.verbs_poll_cq_entry;
	case PROBE_VERBS_POLL_CQ_RETURN:
		*retprobe = true;
		return skeleton->progs.verbs_poll_cq_return;
	case PROBE_NCCL_IB_ENTRY:
		return skeleton->progs.nccl_ib_entry;
	case PROBE_NCCL_IB_TEST_RETURN:
		*retprobe = true;
		return skeleton->progs.nccl_ib_test_return;
	case PROBE_NETWORK_NONE:
		break;
	}
	return NULL;
}

int probe_session_attach_network(struct probe_session *session, enum probe_network_program program,
				 const char *path, const uint64_t *offsets, const uint64_t *cookies,
				 size_t count, char *error, size_t error_size)
{
	bool retprobe;
	struct bpf_program *bpf_program = network_program(session->skeleton, program, &retprobe);

	if (!bpf_program) {
		snprintf(error, error_size,
			 "no work-request program %d: this is a bug in tcheck-bpf", (int)program);
		return -EINVAL;
	}
	return uprobe_link_attach(&session->links, bpf_program, retprobe, path, offsets, cookies,
				  count, -1, error, error_size);
}

int probe_session_network_counters_fd(struct probe_session *session)
{
	return bpf_map__fd(session->skeleton->maps.network_counters);
}

int probe_session_open_calls_fd(struct probe_session *session)
{
	return bpf_link__fd(session->skeleton->links.open_calls_of_threads);
}

int probe_session_poll(struct probe_session *session, int timeout_ms)
{
	int result = ring_reader_poll(session->ring_reader, timeout_ms);

	/* A signal (Ctrl-C) interrupting the wait is not an error. */
	if (result == -EINTR)
		result = 0;
	/* Calls are submitted without waking the reader (call_wakeup_flags): read them now. */
	if (result == 0)
		result = ring_reader_consume(session->ring_reader);
	return result;
}

int probe_session_drain(struct probe_session *session)
{
	return ring_reader_consume(session->ring_reader);
}

void probe_session_counters(struct probe_session *session, uint64_t *counters)
{
	int fd = bpf_map__fd(session->skeleton->maps.counters);
	uint64_t *per_cpu = calloc((size_t)session->possible_cpus, sizeof(uint64_t));

	for (uint32_t key = 0; key < TCHECK_COUNTER_COUNT; key++) {
		counters[key] = 0;
		if (!per_cpu || bpf_map_lookup_elem(fd, &key, per_cpu))
			continue;
		for (int cpu = 0; cpu < session->possible_cpus; cpu++)
			counters[key] += per_cpu[cpu];
	}
	free(per_cpu);
}

size_t probe_session_probe_count(const struct probe_session *session)
{
	return session->links.probes;
}
