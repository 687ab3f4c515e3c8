/* SPDX-License-Identifier: MIT */
/*
 * What the files that find torch's probe sites share, and nothing else
 * includes: the names libtorch_cpu.so exports with a prefix, probe sites
 * being filled in, and the steps torch_probes.c runs in turn (scopes in
 * torch_scopes.c, operators in torch_operators.c). Functions return 0 or a
 * negative errno; those given an error buffer fill it with a sentence.
 */
#ifndef TCHECK_TORCH_PROBE_SITES_H
#define TCHECK_TORCH_PROBE_SITES_H

#include <stdbool.h>
#include <stddef.h>

#include "probe/elf_symbol_lookup.h"
#include "python/torch_probes.h"

#define TORCH_LIBRARY_NAME "libtorch_cpu.so"
/* Where a CUDA build keeps its CUDA code, ProcessGroupNCCL among it. */
#define TORCH_CUDA_LIBRARY_NAME "libtorch_cuda.so"
/* torch's core library: c10::GradMode among it. */
#define TORCH_C10_LIBRARY_NAME "libc10.so"
/* torch's Python bindings: torch.inference_mode()'s guard among them. */
#define TORCH_PYTHON_LIBRARY_NAME "libtorch_python.so"

/* Names found in a string table, sorted and without repeats once finished. */
struct torch_name_list {
	char **names;
	size_t count;
	size_t capacity;
};

void torch_name_list_free(struct torch_name_list *list);

/*
 * Every string of the dynamic string table that starts with prefix,
 * wherever it starts (names ending alike may share bytes); the list is
 * left empty on failure. Only names come from here: whether a name is a
 * defined symbol, and where, is asked of elf_symbols, which drops imports.
 */
int torch_dynamic_names_with_prefix(const char *path, const char *prefix,
				    struct torch_name_list *list, char *error, size_t error_size);

/* The one defined symbol among names; -ENOENT when none is, -EMLINK when several are. */
int torch_single_defined_symbol(const char *path, const struct torch_name_list *names,
				const char **name, struct elf_symbol_location *location);

/* Fills a site's symbol and place; -ENOMEM when the name cannot be copied. */
int torch_probe_site_set(struct torch_probe_site *site, const char *symbol, bool exported,
			 const struct elf_symbol_location *location);

/* Sets what a site's registers carry, as a sentence; -ENOMEM. */
__attribute__((format(printf, 2, 3))) int
torch_probe_site_set_reading(struct torch_probe_site *site, const char *format, ...);

void torch_probe_site_free(struct torch_probe_site *site);

/*
 * Moves a site past a leading compare onto the conditional jump after it
 * when its first instruction would be single-stepped (uprobe_entry_site.h);
 * says so in its reading. Left where it is when the code cannot be read.
 */
int torch_probe_site_move_to_emulated_instruction(const char *path, struct torch_probe_site *site);

/*
 * The record_function scope sites of probes->version: the method for the
 * version, then the enter, key and exit sites (torch_scopes.c).
 */
int torch_scopes_resolve(struct torch_probes *probes, char *error, size_t error_size);

/*
 * The exit operators' jumps to RecordFunction::end, into
 * probes->scopes.exit_operator and exit_handle_operator (each left empty
 * when absent); -EMLINK when a form is found more than once, another
 * negative errno when the code cannot be read (torch_scope_exit.c).
 */
int torch_scope_exit_operators_resolve(struct torch_probes *probes);

/*
 * Every overload of every requested ATen operator (torch_operators.c); an
 * entry point already in probes->ops is not added twice. -ENOENT naming the
 * first request the library lacks.
 */
int torch_operators_resolve(struct torch_probes *probes, const char *const *requests,
			    size_t request_count, char *error, size_t error_size);

#endif /* TCHECK_TORCH_PROBE_SITES_H */
