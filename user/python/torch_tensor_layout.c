// SPDX-License-Identifier: MIT
/* Where Debian's torch 1.13, 2.6 and 2.14 keep a tensor's size, dtype and bytes. */
#include "python/torch_tensor_layout.h"

#include <string.h>

#include "python/torch_probes.h"

/*
 * Found on live tensors of each version: a 101 x 7 tensor's 707 at the
 * numel offset, its c10::ScalarType 8 bytes on (Float, Double, Long and
 * BFloat16 alike); the TensorImpl's Storage right after the header, and
 * the StorageImpl's data pointer right after its own, equal to
 * untyped_storage().data_ptr() (1.13: 8-byte reference and weak counts;
 * 2.x: two 4-byte counts in one word); AutogradMeta's requires_grad_ byte
 * 1 for a parameter and 0 once requires_grad_(False) (after its vtable,
 * name, grad, grad_fn, grad accumulator, forward grad, hooks and hook list;
 * 2.x adds the post-accumulate-grad hooks before it). 2.14's TensorImpl and
 * AutogradMeta are 8 and 16 bytes shorter before those members than 2.6's.
 * grad_fn_'s pointer (a std::shared_ptr's first word, after the vtable,
 * the 32-byte name and grad) is at 48 in all three: set on the output of
 * a differentiable operator, null on a parameter.
 */
static const struct {
	int major;
	int minor;
	struct torch_tensor_layout layout;
} tensor_layouts[] = {
	{ 1, 13, { 168, 24, 136, 48 } },
	{ 2, 6, { 160, 16, 144, 48 } },
	{ 2, 14, { 152, 16, 128, 48 } },
};

bool torch_tensor_layout_of(const struct torch_version *version, struct torch_tensor_layout *out)
{
	for (size_t i = 0; i < sizeof(tensor_layouts) / sizeof(tensor_layouts[0]); i++)
		if (tensor_layouts[i].major == version->major &&
		    tensor_layouts[i].minor == version->minor) {
			*out = tensor_layouts[i].layout;
			return true;
		}
	memset(out, 0, sizeof(*out));
	return false;
}
