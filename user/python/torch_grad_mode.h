/* SPDX-License-Identifier: MIT */
/*
 * How a torch keeps a thread's grad mode, read from its machine code
 * (torch_grad_mode.c), so that the probe on AutogradState::set_tls_state
 * knows where the mode is in the state it is given.
 */
#ifndef TCHECK_TORCH_GRAD_MODE_H
#define TCHECK_TORCH_GRAD_MODE_H

#include <stddef.h>
#include <stdint.h>

/*
 * The byte of c10::AutogradState whose bit 0 is the grad mode, from the code
 * of c10::GradMode::set_enabled (x86-64): after its call to
 * AutogradState::get_tls_state, a load of the byte at an offset from the
 * returned pointer (rax), then that bit cleared (and $0xfffffffe) before
 * the new mode is put in. 0 with *offset set, or -ENOENT when the code is
 * not of that form.
 */
int torch_grad_mode_state_offset(const uint8_t *code, size_t size, uint32_t *offset);

#endif /* TCHECK_TORCH_GRAD_MODE_H */
