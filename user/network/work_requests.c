// SPDX-License-Identifier: MIT
/* Finds, probes and samples the work requests of traced processes. */
#include "network/work_requests.h"

#include <bpf/bpf.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/log.h"
#include "base/remote_memory.h"
#include "base/system_clock.h"
#include "base/u64_map.h"
#include "network/network_window.h"
#include "probe/elf_symbol_lookup.h"
#include "probe/process_maps.h"
#include "probe/uprobe_entry_site.h"
#include "tcheck/work_request_abi.h"

/* How far back the live bandwidth looks. */
#define BANDWIDTH_WINDOW_NS 5000000000ULL
#define MAX_PROBED_FUNCTIONS 256

struct process_network {
	struct trace_network_sample latest;
	struct network_window window;
};

/* A provider function already probed: (file identity, offset). */
struct probed_function {
	uint64_t identity;
	uint64_t offset;
};

struct work_requests {
	struct probe_session *session;
	network_sample_fn observer;
	void *observer_context;
	struct u64_map checked_files; /* file identity -> 1 */
	struct u64_map processes;     /* pid -> process_network */
	struct probed_function probed[MAX_PROBED_FUNCTIONS];
	size_t probed_count;
};

/* NCCL's transport functions, by mangled name: the types in the name say the version. */
struct nccl_ib_function {
	const char *mangled_name;
	uint64_t cookie;
	enum probe_network_program return_program; /* PROBE_NETWORK_NONE: entry only */
};

static const struct nccl_ib_function nccl_ib_functions[] = {
	/* 2.26 and newer: size_t sizes, a phandle argument. */
	{ "_Z11ncclIbIsendPvS_miS_S_PS_", WORK_REQUEST_PROBE_NCCL_ISEND, PROBE_NETWORK_NONE },
	{ "_Z11ncclIbIrecvPviPS_PmPiS0_S0_S0_", WORK_REQUEST_PROBE_NCCL_IRECV, PROBE_NETWORK_NONE },
	/* 2.23 and older: int sizes. */
	{ "_Z11ncclIbIsendPvS_iiS_PS_",
	  WORK_REQUEST_PROBE_NCCL_ISEND | WORK_REQUEST_COOKIE_INT_SIZES, PROBE_NETWORK_NONE },
	{ "_Z11ncclIbIrecvPviPS_PiS1_S0_S0_",
	  WORK_REQUEST_PROBE_NCCL_IRECV | WORK_REQUEST_COOKIE_INT_SIZES, PROBE_NETWORK_NONE },
	/* Unchanged across versions. */
	{ "_Z10ncclIbTestPvPiS0_", WORK_REQUEST_PROBE_NCCL_TEST, PROBE_NCCL_IB_TEST_RETURN },
	{ "_Z15ncclIbMultiSendP14ncclIbSendCommi", WORK_REQUEST_PROBE_NCCL_MULTI_SEND,
	  PROBE_NETWORK_NONE },
};

struct work_requests *work_requests_new(struct probe_session *session)
{
	struct work_requests *tracker = calloc(1, sizeof(*tracker));

	if (!tracker)
		return NULL;
	tracker->session = session;
	u64_map_init(&tracker->checked_files);
	u64_map_init(&tracker->processes);
	return tracker;
}

void work_requests_free(struct work_requests *tracker)
{
	if (!tracker)
		return;
	u64_map_free_with_values(&tracker->processes);
	u64_map_free(&tracker->checked_files);
	free(tracker);
}

void work_requests_set_observer(struct work_requests *tracker, network_sample_fn observer,
				void *context)
{
	tracker->observer = observer;
	tracker->observer_context = context;
}

static int attach_one(struct work_requests *tracker, enum probe_network_program program,
		      const char *path, uint64_t offset, uint64_t cookie)
{
	char error[512];
	int result = probe_session_attach_network(tracker->session, program, path, &offset, &cookie,
						  1, error, sizeof(error));

	if (result)
		log_warning("work requests: %s", error);
	return result;
}

/*
 * Whether the process holds a verbs device open now (/dev/infiniband/uverbs*
 * among its descriptors): only then did it open one the probes cannot see.
 */
static bool holds_verbs_device(uint32_t pid)
{
	char directory_path[64], link_path[320], target[256];
	struct dirent *entry;
	bool found = false;
	DIR *directory;

	snprintf(directory_path, sizeof(directory_path), "/proc/%u/fd", pid);
	directory = opendir(directory_path);
	if (!directory)
		return false;
	while (!found && (entry = readdir(directory))) {
		ssize_t length;

		snprintf(link_path, sizeof(link_path), "%s/%s", directory_path, entry->d_name);
		length = readlink(link_path, target, sizeof(target) - 1);
		if (length <= 0)
			continue;
		target[length] = '\0';
		found = strncmp(target, "/dev/infiniband/uverbs", 22) == 0;
	}
	closedir(directory);
	return found;
}

static int attach_verbs_library(struct work_requests *tracker, const char *path, uint32_t pid)
{
	char error[512];
	uint64_t offset;

	if (elf_symbol_file_offset(path, "ibv_open_device", &offset, error, sizeof(error)))
		return 0;
	if (attach_one(tracker, PROBE_VERBS_OPEN_DEVICE_RETURN, path, offset, 0))
		return 0;
	/* Said by default only when it costs this job counts: a device is open already. */
	if (pid && holds_verbs_device(pid))
		log_notice("work requests: process %u holds a verbs device it opened before "
			   "this moment: its work requests there are not tracked, only those of "
			   "devices opened from now on (NCCL's IB transport functions are counted "
			   "whenever its library has them)",
			   pid);
	else if (pid)
		log_info("work requests: process %u maps %s and holds no verbs device yet: "
			 "devices it opens from now on are tracked",
			 pid, path);
	else
		log_info("work requests: %s probed; verbs devices opened from now on are tracked",
			 path);
	return 1;
}

/*
 * Probes NCCL's transport functions only when the send, the receive and the
 * test are all of a known signature: counting some of them would leave the
 * counters lopsided, and the verbs path would not be used instead.
 */
static int attach_nccl_transport(struct work_requests *tracker, const char *path)
{
	enum { FUNCTION_COUNT = sizeof(nccl_ib_functions) / sizeof(nccl_ib_functions[0]) };
	uint64_t offsets[FUNCTION_COUNT];
	int known[FUNCTION_COUNT] = { 0 }, kinds = 0, any = 0;
	char error[512];
	size_t found = 0;

	for (size_t i = 0; i < FUNCTION_COUNT; i++) {
		uint64_t probe = nccl_ib_functions[i].cookie & 0xff;

		known[i] = elf_symbol_file_offset(path, nccl_ib_functions[i].mangled_name,
						  &offsets[i], error, sizeof(error)) == 0;
		/* Once per message: past an endbr64 the kernel would single-step. */
		if (known[i])
			offsets[i] = uprobe_cheap_entry_file_offset(path, offsets[i]);
		if (known[i] && probe != WORK_REQUEST_PROBE_NCCL_MULTI_SEND)
			kinds |= 1 << probe;
	}
	/* ncclIbTest kept its signature: where it is, the transport functions are. */
	any = kinds != 0;
	if (kinds != ((1 << WORK_REQUEST_PROBE_NCCL_ISEND) | (1 << WORK_REQUEST_PROBE_NCCL_IRECV) |
		      (1 << WORK_REQUEST_PROBE_NCCL_TEST))) {
		if (any)
			log_warning(
				"work requests: %s has NCCL's IB transport functions, but not "
				"all with signatures tcheck-bpf knows (NCCL 2.19 to 2.28): they "
				"are not probed; verbs devices opened after attach are counted "
				"instead",
				path);
		return 0;
	}
	for (size_t i = 0; i < FUNCTION_COUNT; i++) {
		const struct nccl_ib_function *function = &nccl_ib_functions[i];

		if (!known[i])
			continue;
		if (function->return_program != PROBE_NETWORK_NONE &&
		    attach_one(tracker, function->return_program, path, offsets[i],
			       function->cookie))
			continue;
		if (attach_one(tracker, PROBE_NCCL_IB_ENTRY, path, offsets[i], function->cookie))
			continue;
		found++;
	}
	if (found)
		log_info("work requests: %zu NCCL IB transport functions probed in %s", found,
			 path);
	return found > 0;
}

int work_requests_check_file(struct work_requests *tracker, const char *host_path, uint32_t pid)
{
	const char *name = strrchr(host_path, '/');
	uint64_t identity;
	int attached = 0;

	if (file_identity(host_path, &identity) || u64_map_get(&tracker->checked_files, identity))
		return 0;
	if (u64_map_put(&tracker->checked_files, identity, tracker))
		return 0;
	name = name ? name + 1 : host_path;
	if (strncmp(name, "libibverbs.so", 13) == 0)
		attached = attach_verbs_library(tracker, host_path, pid);
	else if (strstr(name, "nccl") || strstr(name, "torch_cuda"))
		attached = attach_nccl_transport(tracker, host_path);
	return attached;
}

static int already_probed(struct work_requests *tracker, uint64_t identity, uint64_t offset)
{
	for (size_t i = 0; i < tracker->probed_count; i++)
		if (tracker->probed[i].identity == identity && tracker->probed[i].offset == offset)
			return 1;
	if (tracker->probed_count < MAX_PROBED_FUNCTIONS) {
		tracker->probed[tracker->probed_count].identity = identity;
		tracker->probed[tracker->probed_count].offset = offset;
		tracker->probed_count++;
	}
	return 0;
}

/* Probes one provider function named by an ops pointer of pid; 1 when newly probed. */
static int probe_provider_function(struct work_requests *tracker,
				   const struct mapped_file_list *maps, uint64_t address,
				   enum probe_network_program entry_program,
				   enum probe_network_program return_program, char *error,
				   size_t error_size)
{
	const struct mapped_file *file;
	uint64_t offset, identity, cookie = 0;
	int result;

	file = mapped_file_list_find_address(maps, address, &offset);
	if (!file) {
		snprintf(error, error_size,
			 "the verbs function at 0x%" PRIx64 " lies in no file the process maps",
			 address);
		return -ENOENT;
	}
	if (file_identity(file->host_path, &identity) == 0 &&
	    already_probed(tracker, identity, offset))
		return 0;
	if (return_program != PROBE_NETWORK_NONE) {
		result = probe_session_attach_network(tracker->session, return_program,
						      file->host_path, &offset, &cookie, 1, error,
						      error_size);
		if (result)
			return result;
	}
	result = probe_session_attach_network(tracker->session, entry_program, file->host_path,
					      &offset, &cookie, 1, error, error_size);
	return result ? result : 1;
}

int work_requests_handle_record(struct work_requests *tracker, const void *data, size_t size,
				char *error, size_t error_size)
{
	const struct tcheck_verbs_context_record *record = data;
	uint64_t post_send, post_recv, poll_cq;
	struct mapped_file_list maps = { 0 };
	pid_t pid;
	int result;

	if (size < sizeof(*record))
		return 0;
	pid = (pid_t)record->header.pid;
	if (remote_memory_read_u64(pid, record->context + VERBS_CONTEXT_POST_SEND_OFFSET,
				   &post_send) ||
	    remote_memory_read_u64(pid, record->context + VERBS_CONTEXT_POST_RECV_OFFSET,
				   &post_recv) ||
	    remote_memory_read_u64(pid, record->context + VERBS_CONTEXT_POLL_CQ_OFFSET, &poll_cq)) {
		snprintf(error, error_size,
			 "process %d opened a verbs device, but its context at 0x%" PRIx64
			 " cannot be read (%s): its work requests are not counted",
			 pid, record->context, strerror(errno));
		return -errno;
	}
	result = process_maps_read(pid, &maps, error, error_size);
	if (result)
		return result;
	result = probe_provider_function(tracker, &maps, post_send, PROBE_VERBS_POST_SEND,
					 PROBE_NETWORK_NONE, error, error_size);
	if (result >= 0)
		result = probe_provider_function(tracker, &maps, post_recv, PROBE_VERBS_POST_RECV,
						 PROBE_NETWORK_NONE, error, error_size);
	if (result >= 0)
		result = probe_provider_function(tracker, &maps, poll_cq, PROBE_VERBS_POLL_CQ_ENTRY,
						 PROBE_VERBS_POLL_CQ_RETURN, error, error_size);
	mapped_file_list_free(&maps);
	if (result < 0)
		return result;
	log_info("work requests: process %d opened a verbs device; its provider's post_send, "
		 "post_recv and poll_cq are probed",
		 pid);
	return 0;
}

static struct process_network *process_of(struct work_requests *tracker, uint32_t pid)
{
	int added;
	struct process_network *process =
		u64_map_get_or_add(&tracker->processes, pid, sizeof(*process), &added);

	if (!process || !added)
		return process;
	network_window_init(&process->window, BANDWIDTH_WINDOW_NS);
	return process;
}

/* Reads the counters of pid into its latest sample and hands that on; 0, or -1 when it has none. */
static int sample_process(struct work_requests *tracker, int fd, uint32_t pid, uint64_t now_ns,
			  network_sample_fn on_sample, void *context)
{
	struct tcheck_network_counters counters;
	struct process_network *process;
	struct trace_network_sample *sample;

	if (bpf_map_lookup_elem(fd, &pid, &counters))
		return -1;
	process = process_of(tracker, pid);
	if (!process)
		return -1;
	sample = &process->latest;
	sample->timestamp_ns = now_ns;
	sample->pid = pid;
	sample->source = counters.source;
	sample->requests_posted = counters.requests_posted;
	sample->requests_signalled = counters.requests_signalled;
	sample->completions = counters.completions;
	sample->completion_errors = counters.completion_errors;
	sample->bytes_posted = counters.bytes_posted;
	sample->bytes_completed = counters.bytes_completed;
	sample->last_post_ns = counters.last_post_ns;
	sample->last_completion_ns = counters.last_completion_ns;
	network_window_add(&process->window, sample);
	if (on_sample)
		on_sample(context, sample);
	if (tracker->observer)
		tracker->observer(tracker->observer_context, sample);
	return 0;
}

void work_requests_forget_process(struct work_requests *tracker, uint32_t pid, uint64_t now_ns,
				  network_sample_fn on_sample, void *context)
{
	int fd = probe_session_network_counters_fd(tracker->session);

	if (fd < 0 || sample_process(tracker, fd, pid, now_ns, on_sample, context))
		return;
	bpf_map_delete_elem(fd, &pid);
	free(u64_map_remove(&tracker->processes, pid));
}

size_t work_requests_sample(struct work_requests *tracker, uint64_t now_ns,
			    network_sample_fn on_sample, void *context)
{
	int fd = probe_session_network_counters_fd(tracker->session);
	uint32_t key, next;
	uint32_t *previous = NULL;
	size_t samples = 0;

	if (fd < 0)
		return 0;
	while (bpf_map_get_next_key(fd, previous, &next) == 0) {
		key = next;
		previous = &key;
		if (sample_process(tracker, fd, key, now_ns, on_sample, context) == 0)
			samples++;
	}
	return samples;
}

const struct trace_network_sample *work_requests_latest(const struct work_requests *tracker,
							uint32_t pid)
{
	const struct process_network *process = u64_map_get(&tracker->processes, pid);

	return process ? &process->latest : NULL;
}

void work_requests_print_live(const struct work_requests *tracker, FILE *out)
{
	uint64_t key;
	void *value;

	for (size_t i = 0; u64_map_next(&tracker->processes, &i, &key, &value);) {
		const struct process_network *process = value;

		fprintf(out,
			"         pid %" PRIu64 " work requests: in flight %" PRIu64 " (%" PRIu64
			" bytes), completed %" PRIu64 ", errors %" PRIu64 ", %.1f MB/s\n",
			key, network_requests_in_flight(&process->latest),
			network_bytes_in_flight(&process->latest), process->latest.completions,
			process->latest.completion_errors,
			network_window_bandwidth(&process->window) / 1e6);
	}
}
