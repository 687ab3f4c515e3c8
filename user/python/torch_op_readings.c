// SPDX-License-Identifier: MIT
/* The arguments each watched torch operator reports, by its at::_ops name. */
#include "python/torch_op_readings.h"

#include <string.h>

#include "python/torch_tensor_layout.h"
#include "tcheck/probe_abi.h"

/*
 * Registers at at::_ops::NAME::call: an in-place operator returns a
 * reference, so its arguments start at rdi; an operator returning a Tensor
 * by value has a hidden return slot in rdi and its arguments start at rsi.
 */
static const struct torch_op_reading training_readings[] = {
	/* Updates: param.add_(grad, alpha=-lr), buf.mul_(momentum), param.addcdiv_(m, v,
	   value=-lr). */
	{ "add__Tensor", 1, TORCH_TENSOR_UPDATED, 3, "arg:alpha" },
	{ "sub__Tensor", 1, TORCH_TENSOR_UPDATED, 3, "arg:alpha" },
	{ "mul__Scalar", 1, TORCH_TENSOR_UPDATED, 2, "arg:other" },
	{ "mul__Tensor", 1, TORCH_TENSOR_UPDATED, 0, NULL },
	{ "div__Scalar", 1, TORCH_TENSOR_UPDATED, 2, "arg:other" },
	{ "addcdiv_", 1, TORCH_TENSOR_UPDATED, 4, "arg:value" },
	{ "addcmul_", 1, TORCH_TENSOR_UPDATED, 4, "arg:value" },
	{ "lerp__Scalar", 1, TORCH_TENSOR_UPDATED, 3, "arg:weight" },
	/* zeros_like() is empty_like() then zero_(): what zero_ finds is uninitialised memory. */
	{ "zero_", 1, TORCH_TENSOR_UPDATED, 0, NULL, true },
	/* Forward reads: linear(input, weight, bias), conv(input, weight, ...), embedding(weight,
	   ...). */
	{ "linear", 3, TORCH_TENSOR_READ, 0, NULL },
	{ "conv1d", 3, TORCH_TENSOR_READ, 0, NULL },
	{ "conv2d", 3, TORCH_TENSOR_READ, 0, NULL },
	{ "embedding", 2, TORCH_TENSOR_READ, 0, NULL },
	/* The forward's mode: dropout(input, p, train) and feature_dropout (Dropout2d), p in
	   xmm0, train by value in rdx. */
	{ "dropout", 0, NULL, 3, TORCH_OP_TRAIN_FLAG, false, true },
	{ "feature_dropout", 0, NULL, 3, TORCH_OP_TRAIN_FLAG, false, true },
	/* batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
	   cudnn_enabled): the five tensors take rsi to r9, training is on the stack. */
	{ "batch_norm", 0, NULL, TCHECK_TORCH_OP_FIRST_STACK_ARGUMENT, TORCH_OP_TRAINING_FLAG,
	  false, true },
};

const char *const torch_training_ops[] = {
	"add_.Tensor",	      "sub_.Tensor",	 "mul_.Scalar",
	"mul_.Tensor",	      "div_.Scalar",	 "addcdiv_.default",
	"addcmul_.default",   "lerp_.Scalar",	 "zero_.default",
	"linear.default",     "conv1d.default",	 "conv2d.default",
	"embedding.default",  "dropout.default", "feature_dropout.default",
	"batch_norm.default",
};
const size_t torch_training_op_count = sizeof(torch_training_ops) / sizeof(torch_training_ops[0]);

struct torch_op_reading torch_op_reading_of(const char *operator_name)
{
	size_t length = strlen(operator_name);

	for (size_t i = 0; i < sizeof(training_readings) / sizeof(training_readings[0]); i++)
		if (strcmp(training_readings[i].operator_name, operator_name) == 0)
			return training_readings[i];
	/* Python's special names return by value; a _foreach_ operator's first argument is a list.
	 */
	if (strncmp(operator_name, "__", 2) == 0 || strncmp(operator_name, "_foreach_", 9) == 0)
		return (struct torch_op_reading){ operator_name, 0, NULL, 0, NULL, false };
	/* add_, add__Tensor, foo_out: an in-place or out= operator's first argument is a Tensor &.
	 */
	if ((length && operator_name[length - 1] == '_') || strstr(operator_name, "__") ||
	    (length > 4 && strcmp(operator_name + length - 4, "_out") == 0))
		return (struct torch_op_reading){ operator_name, 1,    TORCH_TENSOR_UPDATED, 0,
						  NULL,		 false };
	return (struct torch_op_reading){ operator_name, 0, NULL, 0, NULL, false };
}

uint64_t torch_op_cookie(uint64_t index, const struct torch_op_reading *reading,
			 const struct torch_tensor_layout *layout)
{
	return (index & TCHECK_TORCH_OP_INDEX_MASK) |
	       ((uint64_t)reading->tensor_register & TCHECK_TORCH_OP_REGISTER_MASK)
		       << TCHECK_TORCH_OP_TENSOR_SHIFT |
	       ((uint64_t)reading->scalar_register & TCHECK_TORCH_OP_REGISTER_MASK)
		       << TCHECK_TORCH_OP_SCALAR_SHIFT |
	       ((uint64_t)layout->object_header & TCHECK_TORCH_OP_HEADER_MASK)
		       << TCHECK_TORCH_OP_HEADER_SHIFT |
	       ((uint64_t)layout->numel_offset & TCHECK_TORCH_OP_NUMEL_MASK)
		       << TCHECK_TORCH_OP_NUMEL_SHIFT |
	       ((uint64_t)layout->requires_grad_offset & TCHECK_TORCH_OP_REQUIRES_GRAD_MASK)
		       << TCHECK_TORCH_OP_REQUIRES_GRAD_SHIFT |
	       ((uint64_t)layout->grad_fn_offset & TCHECK_TORCH_OP_GRAD_FN_MASK)
		       << TCHECK_TORCH_OP_GRAD_FN_SHIFT |
	       (torch_op_reads_contents(reading) ? TCHECK_TORCH_OP_READ_CONTENTS : 0) |
	       (torch_op_reads_weight(reading) ? TCHECK_TORCH_OP_CHECK_DATA : 0) |
	       (reading->scalar_is_bool ? TCHECK_TORCH_OP_BOOL_BY_VALUE : 0) |
	       (torch_op_reads_caller(reading) ? TCHECK_TORCH_OP_READ_CALLER : 0);
}

bool torch_op_reads_weight(const struct torch_op_reading *reading)
{
	return reading->tensor_field && strcmp(reading->tensor_field, TORCH_TENSOR_READ) == 0;
}

bool torch_op_reads_caller(const struct torch_op_reading *reading)
{
	return reading->tensor_field && strcmp(reading->tensor_field, TORCH_TENSOR_UPDATED) == 0 &&
	       reading->overwrites;
}

bool torch_op_reads_contents(const struct torch_op_reading *reading)
{
	return reading->tensor_field && strcmp(reading->tensor_field, TORCH_TENSOR_UPDATED) == 0 &&
	       !reading->overwrites;
}
