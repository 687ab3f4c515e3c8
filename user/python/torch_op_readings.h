/* SPDX-License-Identifier: MIT */
/*
 * What a torch operator's probe reads besides its times: the tensor it
 * names by identity (the TensorImpl address of an in-place operator's self,
 * of linear's or conv's weight) and the scalar argument it reports (add_'s
 * alpha, addcdiv_'s value, dropout's train). The training operators are the ones an
 * optimizer's step, zero_grad and a model's forward run, watched with
 * --python without any name to type (docs/torch-scopes.md).
 */
#ifndef TCHECK_TORCH_OP_READINGS_H
#define TCHECK_TORCH_OP_READINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The field a tensor read is recorded under: updated in place, or read as a weight. */
#define TORCH_TENSOR_UPDATED "tensor:self"
#define TORCH_TENSOR_READ "tensor:weight"
/*
 * The digest of the updated tensor's contents at the operator's entry (host
 * memory only): what replicas compare. Weights the forward reads, and what
 * zero_ overwrites, are not read.
 */
#define TORCH_TENSOR_UPDATED_DIGEST "digest:self"
/*
 * The tensor's storage (its StorageImpl address), where the probe read it:
 * a parameter and its .data alias share it, though their TensorImpls (the
 * tensor's identity) differ. Compared only as identity, as the tensor's.
 */
#define TORCH_TENSOR_UPDATED_STORAGE "storage:self"
#define TORCH_TENSOR_READ_STORAGE "storage:weight"
/* Its dtype and sizes: "Float[101, 7]" (the element count alone past 4 dimensions). */
#define TORCH_TENSOR_UPDATED_SHAPE "shape:self"
#define TORCH_TENSOR_READ_SHAPE "shape:weight"
/* Whether it requires grad (a frozen parameter does not). */
#define TORCH_TENSOR_UPDATED_REQUIRES_GRAD "requires_grad:self"
#define TORCH_TENSOR_READ_REQUIRES_GRAD "requires_grad:weight"
/*
 * True where the weight read is computed by autograd (it has a grad_fn:
 * MAML's fast weights, spectral_norm's weight), whose requires_grad flag
 * is its own no more than a leaf's; left out otherwise.
 */
#define TORCH_TENSOR_READ_GRAD_FN "grad_fn:weight"
/*
 * False where the forward read its weight with autograd off (under
 * torch.no_grad(): a target network's, an EMA copy's, a teacher's), so that
 * no gradient reaches the weight from it; left out where autograd was on or
 * the tracer has not yet seen the thread's grad mode set.
 */
#define TORCH_TENSOR_READ_GRAD_MODE "grad_mode:weight"
/*
 * False where the weight the forward read has no bytes: a fake tensor that
 * torch.compile runs the model's code on while it traces it (a meta
 * storage). Such a read is no read of a parameter: its tensor identity is
 * left out, and this says why. Left out for a weight with data.
 */
#define TORCH_TENSOR_READ_DATA "data:weight"
/*
 * Whether a dropout (train) or a batch norm (training) runs as in training
 * (True) or as in evaluation (False), under the operator's own argument name.
 */
#define TORCH_OP_TRAIN_FLAG "arg:train"
#define TORCH_OP_TRAINING_FLAG "arg:training"

struct torch_op_reading {
	const char *operator_name; /* the at::_ops struct: "add__Tensor" */
	uint8_t tensor_register;   /* 1 rdi ... 5 r8; 0 none */
	const char *tensor_field;  /* TORCH_TENSOR_UPDATED or TORCH_TENSOR_READ */
	/* the const c10::Scalar &, or with scalar_is_bool the bool (7: first stack argument); 0
	   none */
	uint8_t scalar_register;
	const char *scalar_field; /* "arg:alpha" */
	bool overwrites;	  /* replaces the tensor's contents whole: they are not recorded */
	bool scalar_is_bool;	  /* the scalar register holds a bool by value (dropout's train) */
};

/* The requests (as --torch-op takes them) of the training operators. */
extern const char *const torch_training_ops[];
extern const size_t torch_training_op_count;

/*
 * How to read an operator's arguments: from the table for the training
 * operators, else from its name (an in-place or out= operator's first
 * argument is its tensor; others report no tensor).
 */
struct torch_op_reading torch_op_reading_of(const char *operator_name);

struct torch_tensor_layout;

/* The attach cookie of operator number 'index' read as 'reading', in a torch laid out so. */
uint64_t torch_op_cookie(uint64_t index, const struct torch_op_reading *reading,
			 const struct torch_tensor_layout *layout);

/*
 * Whether the probe reads the Python caller of an operator that overwrites
 * its tensor whole (zero_), where the tensor is a parameter: an
 * initialisation, which InitialisedOnce judges by the function that made it.
 */
bool torch_op_reads_caller(const struct torch_op_reading *reading);

/* Whether the probe reads the contents of the operator's tensor: an update's, not zero_'s. */
bool torch_op_reads_contents(const struct torch_op_reading *reading);
/* Whether the operator's tensor is a weight the forward reads (the probe checks it has data). */
bool torch_op_reads_weight(const struct torch_op_reading *reading);

#endif /* TCHECK_TORCH_OP_READINGS_H */
