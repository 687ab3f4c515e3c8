// SPDX-License-Identifier: MIT
/*
 * Where a torch's autograd switch is probed: c10::GradMode::set_enabled(bool)
 * in libc10.so, which torch.no_grad(), torch.enable_grad(), the optimizers'
 * no_grad and C++'s AutoGradMode guards all call, and
 * c10::AutogradState::set_tls_state, which torch.inference_mode()'s guard
 * calls instead (it sets the whole state at once), probed where
 * libtorch_python.so calls it. The operator probes then
 * know whether autograd was on when a forward read a weight.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_message.h"
#include "tcheck/probe_abi.h"
#include "probe/call_sites.h"
#include "probe/elf_symbol_lookup.h"
#include "probe/library_file.h"
#include "python/torch_grad_mode.h"
#include "python/torch_probe_sites.h"
#include "python/torch_probes.h"

#define GRAD_MODE_SET_ENABLED "_ZN3c108GradMode11set_enabledEb"
#define AUTOGRAD_STATE_SET_TLS_STATE "_ZN3c1013AutogradState13set_tls_stateES0_"
/* set_enabled is a few instructions; more than this is not the code known. */
#define SET_ENABLED_CODE_MAX 96

/* An "and $0xfffffffe, r32" (83 /4 ib) at code[at]. */
static bool clears_bit_zero(const uint8_t *code, size_t size, size_t at)
{
	return at + 3 <= size && code[at] == 0x83 && (code[at + 1] & 0xf8) == 0xe0 &&
	       code[at + 2] == 0xfe;
}

int torch_grad_mode_state_offset(const uint8_t *code, size_t size, uint32_t *offset)
{
	bool called = false;

	for (size_t at = 0; at + 3 <= size; at++) {
		uint8_t modrm, mode;
		size_t length;
		uint32_t displacement;

		/* call rel32: the look-up of the thread's state, whose pointer comes back in rax.
		 */
		if (code[at] == 0xe8 && at + 5 <= size) {
			called = true;
			at += 4;
			continue;
		}
		/* movzbl disp(%rax), r32: 0f b6 with ModRM's r/m rax, no SIB. */
		if (!called || code[at] != 0x0f || code[at + 1] != 0xb6)
			continue;
		modrm = code[at + 2];
		mode = modrm >> 6;
		if ((modrm & 7) != 0 || mode == 3)
			continue;
		if (mode == 0) {
			displacement = 0;
			length = 3;
		} else if (mode == 1 && at + 4 <= size) {
			displacement = code[at + 3];
			length = 4;
		} else if (mode == 2 && at + 7 <= size) {
			memcpy(&displacement, code + at + 3, sizeof(displacement));
			length = 7;
		} else {
			return -ENOENT;
		}
		if (!clears_bit_zero(code, size, at + length))
			return -ENOENT;
		*offset = displacement;
		return 0;
	}
	return -ENOENT;
}

/*
 * The cookie that tells the probe on set_tls_state where the mode is: a
 * state that is its flags' byte alone is passed in a register, one that
 * holds more before them (torch 2.14) by reference. -ENOENT when
 * set_enabled's code does not say where the byte is.
 */
static int state_cookie(const char *host_path, const struct elf_symbol_location *set_enabled,
			uint64_t *cookie)
{
	uint8_t code[SET_ENABLED_CODE_MAX];
	size_t size = set_enabled->size && set_enabled->size < sizeof(code) ? set_enabled->size
									    : sizeof(code);
	char error[256];
	uint32_t offset;

	if (library_file_read_at(host_path, set_enabled->file_offset, code, size, error,
				 sizeof(error)) ||
	    torch_grad_mode_state_offset(code, size, &offset))
		return -ENOENT;
	*cookie = offset == 0 ? TCHECK_GRAD_MODE_FROM_STATE_VALUE
			      : TCHECK_GRAD_MODE_FROM_STATE_REFERENCE |
					((uint64_t)offset << TCHECK_GRAD_MODE_STATE_OFFSET_SHIFT);
	return 0;
}

/*
 * libtorch_python's calls of set_tls_state, when set_enabled's code says
 * where the state keeps the mode: probed at each call instruction (the
 * kernel emulates a call rel32), not at the function, which libc10's own
 * thread-local state guards call some thirty times a training step;
 * libtorch_python calls it as torch.inference_mode() enters and leaves.
 */
static int resolve_state_setter(struct torch_probes *probes,
				const struct torch_grad_mode_libraries *libraries,
				const struct elf_symbol_location *set_enabled)
{
	struct call_sites *calls = &probes->grad_state_calls;
	struct elf_symbol_location location = { 0 };
	char place[48];
	uint64_t cookie;
	int err;

	if (!libraries->python_path || !libraries->python_host_path ||
	    state_cookie(libraries->c10_host_path, set_enabled, &cookie))
		return 0;
	err = call_sites_find(libraries->python_host_path, AUTOGRAD_STATE_SET_TLS_STATE, calls,
			      probes->grad_state_missing, sizeof(probes->grad_state_missing));
	if (err)
		return 0;
	probes->python_library_path = strdup(libraries->python_path);
	probes->python_host_path = strdup(libraries->python_host_path);
	if (!probes->python_library_path || !probes->python_host_path)
		return -ENOMEM;
	location.address = calls->addresses[0];
	location.file_offset = calls->file_offsets[0];
	err = torch_probe_site_set(&probes->grad_state, AUTOGRAD_STATE_SET_TLS_STATE, false,
				   &location);
	if (cookie == TCHECK_GRAD_MODE_FROM_STATE_VALUE)
		snprintf(place, sizeof(place), "dil");
	else
		snprintf(place, sizeof(place), "the byte at rdi+0x%x",
			 (unsigned)(cookie >> TCHECK_GRAD_MODE_STATE_OFFSET_SHIFT));
	if (!err)
		err = torch_probe_site_set_reading(
			&probes->grad_state,
			"at each of libtorch_python's %zu calls: the thread's new autograd state, "
			"grad mode bit 0 of %s (torch.inference_mode() sets it)",
			calls->count, place);
	probes->grad_state_cookie = cookie;
	return err;
}

int torch_grad_mode_resolve(struct torch_probes *probes,
			    const struct torch_grad_mode_libraries *libraries, char *error,
			    size_t error_size)
{
	struct elf_symbol_location location;
	int err;

	if (!libraries->c10_path || !libraries->c10_host_path ||
	    elf_symbol_find(libraries->c10_host_path, GRAD_MODE_SET_ENABLED, &location, NULL, 0))
		return 0;
	probes->c10_library_path = strdup(libraries->c10_path);
	probes->c10_host_path = strdup(libraries->c10_host_path);
	if (!probes->c10_library_path || !probes->c10_host_path)
		return error_fail(error, error_size, ENOMEM, "out of memory");
	err = torch_probe_site_set(&probes->grad_mode, GRAD_MODE_SET_ENABLED, true, &location);
	if (!err)
		err = torch_probe_site_set_reading(
			&probes->grad_mode,
			"dil -> whether autograd is on for the thread from now");
	if (!err)
		err = torch_probe_site_move_to_emulated_instruction(libraries->c10_host_path,
								    &probes->grad_mode);
	if (!err)
		err = resolve_state_setter(probes, libraries, &location);
	return err ? error_fail(error, error_size, -err, "out of memory") : 0;
}
