/* SPDX-License-Identifier: MIT */
/*
 * Where a torch version keeps what the probes read of a tensor: its element
 * count and dtype (TensorImpl::numel_, then the c10::ScalarType 8 bytes
 * on), and the size of the header its TensorImpl and StorageImpl start
 * with (c10::intrusive_ptr_target), after which come the Storage pointer
 * and the DataPtr, then (in the TensorImpl) the AutogradMeta pointer, null
 * for a tensor that never required grad; and where an AutogradMeta keeps
 * requires_grad_ and grad_fn_. Only versions checked on live tensors are
 * known.
 */
#ifndef TCHECK_TORCH_TENSOR_LAYOUT_H
#define TCHECK_TORCH_TENSOR_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

struct torch_version;

struct torch_tensor_layout {
	uint32_t numel_offset;	       /* TensorImpl::numel_; 0 unknown */
	uint32_t object_header;	       /* bytes of intrusive_ptr_target; 0 unknown */
	uint32_t requires_grad_offset; /* AutogradMeta::requires_grad_; 0 unknown */
	uint32_t grad_fn_offset;       /* AutogradMeta::grad_fn_'s pointer; 0 unknown */
};

/* The layout of 'version'; false, and zeros, for a version not checked. */
bool torch_tensor_layout_of(const struct torch_version *version, struct torch_tensor_layout *out);

#endif /* TCHECK_TORCH_TENSOR_LAYOUT_H */
