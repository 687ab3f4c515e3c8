// SPDX-License-Identifier: MIT
/* uprobe_multi links where the kernel has them, one perf link per offset where not. */
#include "probe/uprobe_links.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "base/growable_array.h"

/* From the kernel's uapi (6.6+, sessions 6.13+); the system headers may predate them. */
#define UPROBE_MULTI_ATTACH_TYPE 48   /* BPF_TRACE_UPROBE_MULTI */
#define UPROBE_SESSION_ATTACH_TYPE 57 /* BPF_TRACE_UPROBE_SESSION */
#define UPROBE_MULTI_RETURN 1U	      /* BPF_F_UPROBE_MULTI_RETURN */
#define LINK_CREATE_COMMAND 28	      /* BPF_LINK_CREATE */

/* The link_create member of union bpf_attr, uprobe_multi variant. */
struct uprobe_multi_link_request {
	uint32_t program_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t reference_counter_offsets;
	uint64_t cookies;
	uint32_t count;
	uint32_t multi_flags;
	uint32_t pid;
	uint32_t padding;
};

/* Whether the kernel's own types have this one: it tells whether the kernel has the feature. */
static bool kernel_has_type(const char *name, int kind)
{
	struct btf *kernel_types = btf__load_vmlinux_btf();
	bool found;

	if (libbpf_get_error(kernel_types))
		return false;
	found = btf__find_by_name_kind(kernel_types, name, kind) >= 0;
	btf__free(kernel_types);
	return found;
}

bool uprobe_multi_supported(void)
{
	static int supported = -1;

	if (supported < 0)
		supported = kernel_has_type("bpf_uprobe_multi_link", BTF_KIND_STRUCT);
	return supported;
}

bool uprobe_session_supported(void)
{
	static int supported = -1;

	/* The session's kfunc, which only kernels with uprobe sessions register. */
	if (supported < 0)
		supported = uprobe_multi_supported() &&
			    kernel_has_type("bpf_session_is_return", BTF_KIND_FUNC);
	return supported;
}

int uprobe_session_prepare(struct bpf_program *program)
{
	if (!uprobe_session_supported())
		return -EOPNOTSUPP;
	return bpf_program__set_expected_attach_type(
		program, (enum bpf_attach_type)UPROBE_SESSION_ATTACH_TYPE);
}

int uprobe_link_prepare(struct bpf_program *program)
{
	if (!uprobe_multi_supported())
		return 0;
	return bpf_program__set_expected_attach_type(
		program, (enum bpf_attach_type)UPROBE_MULTI_ATTACH_TYPE);
}

static int keep(struct uprobe_link_list *list, struct bpf_link *link, int fd, int pid,
		size_t probes)
{
	if (growable_array_room_for_one((void **)&list->links, list->count, &list->capacity,
					sizeof(*list->links)))
		return -ENOMEM;
	list->links[list->count].link = link;
	list->links[list->count].fd = fd;
	list->links[list->count].pid = pid > 0 ? pid : -1;
	list->links[list->count].probes = probes;
	list->count++;
	return 0;
}

/* ENOTSUPP, the kernel's own errno for an instruction a uprobe cannot replace. */
#define KERNEL_ENOTSUPP 524

static const char *attach_error_text(int error)
{
	if (error == KERNEL_ENOTSUPP)
		return "the kernel cannot place a probe on an instruction there (the library's "
		       "code is not what its symbols say)";
	return strerror(error);
}

/* How a link runs its program: at entry, at return, or both as one session. */
enum probe_point { AT_ENTRY, AT_RETURN, AS_SESSION };

static const char *probe_point_name(enum probe_point point)
{
	return point == AT_RETURN ? "return" : point == AS_SESSION ? "session" : "entry";
}

static int attach_multi(struct uprobe_link_list *list, struct bpf_program *program,
			enum probe_point point, const char *path, const uint64_t *offsets,
			const uint64_t *cookies, size_t count, int pid, char *error,
			size_t error_size)
{
	struct uprobe_multi_link_request request;
	int fd, result;

	memset(&request, 0, sizeof(request));
	request.program_fd = (uint32_t)bpf_program__fd(program);
	request.attach_type =
		point == AS_SESSION ? UPROBE_SESSION_ATTACH_TYPE : UPROBE_MULTI_ATTACH_TYPE;
	request.path = (uint64_t)(uintptr_t)path;
	request.offsets = (uint64_t)(uintptr_t)offsets;
	request.cookies = (uint64_t)(uintptr_t)cookies;
	request.count = (uint32_t)count;
	request.multi_flags = point == AT_RETURN ? UPROBE_MULTI_RETURN : 0;
	request.pid = pid > 0 ? (uint32_t)pid : 0;
	fd = (int)syscall(__NR_bpf, LINK_CREATE_COMMAND, &request, sizeof(request));
	if (fd < 0) {
		result = -errno;
		snprintf(error, error_size, "cannot attach %zu %s probes to %s: %s", count,
			 probe_point_name(point), path, attach_error_text(-result));
		return result;
	}
	result = keep(list, NULL, fd, pid, count);
	if (result) {
		close(fd);
		snprintf(error, error_size, "out of memory");
		return result;
	}
	list->probes += count;
	return 0;
}

static int attach_each(struct uprobe_link_list *list, struct bpf_program *program, bool retprobe,
		       const char *path, const uint64_t *offsets, const uint64_t *cookies,
		       size_t count, int pid, char *error, size_t error_size)
{
	for (size_t i = 0; i < count; i++) {
		struct bpf_uprobe_opts options = {
			.sz = sizeof(options),
			.bpf_cookie = cookies ? cookies[i] : 0,
			.retprobe = retprobe,
		};
		struct bpf_link *link;
		int result;

		link = bpf_program__attach_uprobe_opts(program, pid, path, offsets[i], &options);
		if (!link) {
			result = -errno;
			snprintf(error, error_size,
				 "cannot attach a %s probe to %s at offset 0x%llx: %s",
				 retprobe ? "return" : "entry", path,
				 (unsigned long long)offsets[i], attach_error_text(-result));
			return result;
		}
		result = keep(list, link, -1, pid, 1);
		if (result) {
			bpf_link__destroy(link);
			snprintf(error, error_size, "out of memory");
			return result;
		}
		list->probes++;
	}
	return 0;
}

int uprobe_link_attach(struct uprobe_link_list *list, struct bpf_program *program, bool retprobe,
		       const char *path, const uint64_t *offsets, const uint64_t *cookies,
		       size_t count, int pid, char *error, size_t error_size)
{
	int result;

	if (count == 0)
		return 0;
	if (uprobe_multi_supported())
		result = attach_multi(list, program, retprobe ? AT_RETURN : AT_ENTRY, path, offsets,
				      cookies, count, pid, error, error_size);
	else
		result = attach_each(list, program, retprobe, path, offsets, cookies, count, pid,
				     error, error_size);
	if (result && list->on_failure)
		list->on_failure(list->failure_context, path);
	return result;
}

int uprobe_session_attach(struct uprobe_link_list *list, struct bpf_program *program,
			  const char *path, const uint64_t *offsets, const uint64_t *cookies,
			  size_t count, int pid, char *error, size_t error_size)
{
	int result;

	if (count == 0)
		return 0;
	result = attach_multi(list, program, AS_SESSION, path, offsets, cookies, count, pid, error,
			      error_size);
	if (result && list->on_failure)
		list->on_failure(list->failure_context, path);
	return result;
}

static void detach(struct uprobe_link *link)
{
	if (link->link)
		bpf_link__destroy(link->link);
	else
		close(link->fd);
}

size_t uprobe_link_detach_process(struct uprobe_link_list *list, int pid)
{
	size_t kept = 0, detached = 0;

	if (pid <= 0)
		return 0;
	for (size_t i = 0; i < list->count; i++) {
		if (list->links[i].pid == pid) {
			detach(&list->links[i]);
			list->probes -= list->links[i].probes;
			detached++;
		} else {
			list->links[kept++] = list->links[i];
		}
	}
	list->count = kept;
	return detached;
}

void uprobe_link_list_free(struct uprobe_link_list *list)
{
	for (size_t i = 0; i < list->count; i++)
		detach(&list->links[i]);
	free(list->links);
	memset(list, 0, sizeof(*list));
}
