// SPDX-License-Identifier: MIT
/*
 * Where a torch's autograd switch is probed: c10::GradMode::set_enabled(bool)
 * in libc10.so, which torch.no_grad(), torch.enable_grad(), the optimizers'
 * no_grad and C++'s AutoGradMode guards all call. The operator probes then
 * know whether autograd was on when a forward read a weight.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_message.h"
#include "probe/elf_symbol_lookup.h"
#include "python/torch_probe_sites.h"
#include "python/torch_probes.h"

#define GRAD_MODE_SET_ENABLED "_ZN3c108GradMode11set_enabledEb"

int torch_grad_mode_resolve(struct torch_probes *probes, const char *c10_path,
			    const char *c10_host_path, char *error, size_t error_size)
{
	struct elf_symbol_location location;
	int err;

	if (!c10_path || !c10_host_path ||
	    elf_symbol_find(c10_host_path, GRAD_MODE_SET_ENABLED, &location, NULL, 0))
		return 0;
	probes->c10_library_path = strdup(c10_path);
	probes->c10_host_path = strdup(c10_host_path);
	if (!probes->c10_library_path || !probes->c10_host_path)
		return error_fail(error, error_size, ENOMEM, "out of memory");
	err = torch_probe_site_set(&probes->grad_mode, GRAD_MODE_SET_ENABLED, true, &location);
	if (!err)
		err = torch_probe_site_set_reading(
			&probes->grad_mode,
			"dil -> whether autograd is on for the thread from now");
	if (!err)
		err = torch_probe_site_move_to_emulated_instruction(c10_host_path,
								    &probes->grad_mode);
	return err ? error_fail(error, error_size, -err, "out of memory") : 0;
}
