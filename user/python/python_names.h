/* SPDX-License-Identifier: MIT */
/*
 * Names of Python code as the tracer selects and records them: the module
 * a source file belongs to, and whether a qualified name is among the ones
 * asked for.
 */
#ifndef TCHECK_PYTHON_NAMES_H
#define TCHECK_PYTHON_NAMES_H

#include <stddef.h>

/* The module path a source file belongs to: ".../site-packages/torch/optim/sgd.py" ->
 * torch.optim.sgd. */
void python_module_of_file(const char *file, char *module, size_t size);

/* Whether a qualified name starts with one of the prefixes. */
int python_name_selected(const char *qualified_name, const char *const *prefixes);

#endif /* TCHECK_PYTHON_NAMES_H */
