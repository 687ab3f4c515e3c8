// SPDX-License-Identifier: MIT
/*
 * Where the c10d collectives of a libtorch_cpu.so are probed: the
 * ProcessGroupGloo methods of model/c10d_api.c, and where this torch keeps
 * a TensorImpl's element count, so the probe reads the count and dtype of
 * a collective's first tensor.
 */
#include <errno.h>

#include "base/error_message.h"
#include "model/c10d_api.h"
#include "probe/elf_symbols.h"
#include "python/torch_probe_sites.h"
#include "python/torch_probes.h"
#include "tcheck/probe_abi.h"

/*
 * TensorImpl::numel_, found on a live tensor of each version (a 101 x 7
 * tensor's 707 at this offset, its c10::ScalarType 8 bytes on, for Float,
 * Double, Long and BFloat16 alike). Other versions: not read.
 */
static const struct {
	int major;
	int minor;
	uint32_t numel_offset;
} tensor_layouts[] = {
	{ 1, 13, 168 },
	{ 2, 6, 160 },
};

static uint32_t numel_offset_of(const struct torch_version *version)
{
	for (size_t i = 0; i < sizeof(tensor_layouts) / sizeof(tensor_layouts[0]); i++)
		if (tensor_layouts[i].major == version->major &&
		    tensor_layouts[i].minor == version->minor)
			return tensor_layouts[i].numel_offset;
	return 0;
}

int torch_c10d_resolve(struct torch_probes *probes, char *error, size_t error_size)
{
	struct elf_symbol_location location;
	int err = 0;

	probes->tensor_numel_offset = numel_offset_of(&probes->version);
	for (size_t i = 0; !err && i < c10d_operation_count() && i < TCHECK_C10D_SITES_MAX; i++) {
		const struct c10d_operation *operation = c10d_operation_at(i);

		if (elf_symbol_find(probes->host_path, operation->gloo_symbol, &location, NULL, 0))
			continue;
		err = torch_probe_site_set(&probes->c10d[i], operation->gloo_symbol, true,
					   &location);
		if (!err)
			err = torch_probe_site_set_reading(
				&probes->c10d[i],
				"rsi -> the ProcessGroupGloo, register %d -> its tensors; "
				"entry: %s is queued",
				operation->tensor_register, operation->api.name);
		if (!err)
			err = torch_probe_site_move_to_emulated_instruction(probes->host_path,
									    &probes->c10d[i]);
	}
	return err ? error_fail(error, error_size, ENOMEM, "out of memory") : 0;
}

uint64_t torch_c10d_cookie(const struct torch_probes *probes, size_t index)
{
	const struct c10d_operation *operation = c10d_operation_at(index);

	if (!operation)
		return 0;
	return (uint64_t)index | (uint64_t)operation->tensor_register << TCHECK_C10D_TENSOR_SHIFT |
	       (uint64_t)operation->peer_register << TCHECK_C10D_PEER_SHIFT |
	       (operation->tensor_is_reference ? TCHECK_C10D_TENSOR_IS_REFERENCE : 0) |
	       ((uint64_t)probes->tensor_numel_offset & TCHECK_C10D_NUMEL_OFFSET_MASK)
		       << TCHECK_C10D_NUMEL_OFFSET_SHIFT |
	       (uint64_t)C10D_GROUP_REGISTER << TCHECK_C10D_GROUP_SHIFT;
}
