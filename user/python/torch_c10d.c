// SPDX-License-Identifier: MIT
/*
 * Where the c10d collectives of a torch are probed: the methods of
 * model/c10d_api.c in each backend's library (ProcessGroupGloo in
 * libtorch_cpu, ProcessGroupNCCL in libtorch_cuda when the build has one).
 * The probe reads the count and dtype of a collective's first tensor where
 * torch_tensor_layout.h knows the version.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_message.h"
#include "model/c10d_api.h"
#include "probe/elf_symbol_lookup.h"
#include "python/torch_probe_sites.h"
#include "python/torch_probes.h"
#include "tcheck/probe_abi.h"

/* The operations 'backend' defines in its library; absent ones stay empty. */
static int resolve_backend(const struct c10d_backend *backend, struct torch_c10d_probes *out)
{
	struct elf_symbol_location location;
	char symbol[512];
	int err = 0;

	for (size_t i = 0; !err && i < c10d_operation_count() && i < TCHECK_C10D_SITES_MAX; i++) {
		const struct c10d_operation *operation = c10d_operation_at(i);
		struct torch_probe_site *site = &out->sites[i];

		if (c10d_operation_symbol(operation, backend, symbol, sizeof(symbol)) ||
		    elf_symbol_find(out->host_path, symbol, &location, NULL, 0))
			continue;
		err = torch_probe_site_set(site, symbol, true, &location);
		if (!err)
			err = torch_probe_site_set_reading(
				site,
				"rsi -> the process group (%s), register %d -> its tensors; "
				"entry: %s is queued",
				backend->name, operation->tensor_register, operation->api.name);
		if (!err)
			err = torch_probe_site_move_to_emulated_instruction(out->host_path, site);
	}
	return err;
}

static int set_library(struct torch_c10d_probes *out, const char *path, const char *host_path)
{
	out->library_path = strdup(path);
	out->host_path = strdup(host_path);
	return out->library_path && out->host_path ? 0 : -ENOMEM;
}

int torch_c10d_resolve(struct torch_probes *probes, const char *cuda_path,
		       const char *cuda_host_path, char *error, size_t error_size)
{
	int err = 0;

	for (size_t b = 0; !err && b < c10d_backend_count() && b < TORCH_C10D_BACKENDS; b++) {
		const struct c10d_backend *backend = c10d_backend_at(b);
		bool in_cuda = strcmp(backend->library_name, TORCH_LIBRARY_NAME) != 0;

		if (in_cuda && !cuda_path)
			continue;
		err = set_library(&probes->c10d[b], in_cuda ? cuda_path : probes->library_path,
				  in_cuda ? cuda_host_path : probes->host_path);
		if (!err)
			err = resolve_backend(backend, &probes->c10d[b]);
	}
	return err ? error_fail(error, error_size, ENOMEM, "out of memory") : 0;
}

size_t torch_c10d_site_count(const struct torch_c10d_probes *backend)
{
	size_t count = 0;

	for (size_t i = 0; i < TORCH_C10D_SITES; i++)
		count += backend->sites[i].symbol != NULL;
	return count;
}

void torch_c10d_free(struct torch_probes *probes)
{
	for (int b = 0; b < TORCH_C10D_BACKENDS; b++) {
		for (int i = 0; i < TORCH_C10D_SITES; i++)
			torch_probe_site_free(&probes->c10d[b].sites[i]);
		free(probes->c10d[b].library_path);
		free(probes->c10d[b].host_path);
	}
}

uint64_t torch_c10d_cookie(const struct torch_probes *probes, size_t index, bool awaited)
{
	const struct c10d_operation *operation = c10d_operation_at(index);

	if (!operation)
		return 0;
	return (uint64_t)index | (awaited ? TCHECK_C10D_AWAITS_WORK : 0) |
	       (uint64_t)operation->tensor_register << TCHECK_C10D_TENSOR_SHIFT |
	       (uint64_t)operation->peer_register << TCHECK_C10D_PEER_SHIFT |
	       (operation->tensor_is_reference ? TCHECK_C10D_TENSOR_IS_REFERENCE : 0) |
	       ((uint64_t)probes->tensor_layout.numel_offset & TCHECK_C10D_NUMEL_OFFSET_MASK)
		       << TCHECK_C10D_NUMEL_OFFSET_SHIFT |
	       (uint64_t)C10D_GROUP_REGISTER << TCHECK_C10D_GROUP_SHIFT;
}
