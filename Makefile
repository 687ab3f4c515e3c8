# SPDX-License-Identifier: MIT
# Builds the BPF objects, their skeletons, the tcheck-bpf binary, the test
# programs, and runs tests, lint and benchmarks. `make V=1` shows commands.

OUTPUT := .output
# The torch 2.6 test root (tools/stacks/torch-root.sh trixie), as the end-to-end tests find it.
TORCH2_ROOT ?= $(or $(TCHECK_TORCH2_ROOT),/var/cache/tcheck-bpf/trixie-torch)
# The torch 2.14 test root (tools/stacks/torch-root.sh sid).
TORCH214_ROOT ?= $(or $(TCHECK_TORCH214_ROOT),/var/cache/tcheck-bpf/sid-torch)
CLANG ?= clang
BPFTOOL ?= bpftool
CC ?= cc
ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
VMLINUX := vmlinux/$(ARCH)/vmlinux.h

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

CFLAGS ?= -g -O2
WARNINGS := -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers
ALL_CFLAGS := $(CFLAGS) $(WARNINGS) -std=gnu11 -D_GNU_SOURCE -fno-omit-frame-pointer \
	-Iinclude -Iuser -I. -I$(OUTPUT)
LIBS := -lbpf -lelf -ldw -lcapstone -ljansson -lz -lzstd -lmicrohttpd -lcurl -lpthread
BPF_CFLAGS := -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_$(ARCH) \
	-Iinclude -I$(dir $(VMLINUX))

BPF_SOURCES := $(wildcard bpf/*.bpf.c)
BPF_OBJECTS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/bpf/%.bpf.o,$(BPF_SOURCES))
# Every BPF object is linked into one: one skeleton, one copy of the shared maps.
SKELETONS := $(OUTPUT)/tracer.skel.h
USER_SOURCES := $(wildcard user/*.c user/*/*.c)
USER_HEADERS := $(wildcard user/*/*.h)
INFER_SOURCES := $(wildcard infer/*.c)
USER_OBJECTS := $(patsubst user/%.c,$(OUTPUT)/user/%.o,$(USER_SOURCES)) \
	$(patsubst infer/%.c,$(OUTPUT)/infer/%.o,$(INFER_SOURCES))
LIBRARY_OBJECTS := $(filter-out $(OUTPUT)/user/main.o,$(USER_OBJECTS))

UNIT_SOURCES := $(wildcard tests/unit/*.c)
UNIT_OBJECTS := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/unit/%.o,$(UNIT_SOURCES))
TEST_PROGRAM_DIR := $(OUTPUT)/tests
NCCL_DOUBLE := $(TEST_PROGRAM_DIR)/lib/libnccl.so.2
NCCL_DOUBLE_SOURCES := $(wildcard tests/nccl_double/*.c)
WORKLOAD_SOURCES := $(wildcard tests/workloads/*.c)
WORKLOADS := $(patsubst tests/workloads/%.c,$(TEST_PROGRAM_DIR)/%,$(WORKLOAD_SOURCES))
# A workload split by subject keeps its other parts in a folder named after it.
WORKLOAD_HEADERS := $(wildcard tests/workloads/*.h tests/workloads/*/*.h)
NCCL_WORKLOAD_PARTS := $(wildcard tests/workloads/nccl_workload/*.c)
NCCL_API_TOUR_PARTS := $(wildcard tests/workloads/nccl_api_tour/*.c)
# The verbs test double: a libibverbs.so.1 over a provider library whose
# post/poll functions are reached only through the context's ops table.
VERBS_DOUBLE_DIR := $(TEST_PROGRAM_DIR)/verbs
VERBS_PROVIDER := $(VERBS_DOUBLE_DIR)/libverbs-double-provider.so
VERBS_LIBRARY := $(VERBS_DOUBLE_DIR)/libibverbs.so.1
VERBS_WORKLOAD := $(VERBS_DOUBLE_DIR)/verbs-workload
# Benchmark tools built by their own rules: an LD_PRELOAD library, and a
# tool linked against the daemon's objects.
INTERPOSER := $(TEST_PROGRAM_DIR)/bench/libnccl-interposer.so
PROBE_FLOOR := $(TEST_PROGRAM_DIR)/bench/probe-floor
TOOL_SOURCES := $(filter-out tools/bench/nccl-interposer.c tools/bench/probe-floor.c, \
	$(wildcard tools/bench/*.c))
TOOLS := $(patsubst tools/bench/%.c,$(TEST_PROGRAM_DIR)/bench/%,$(TOOL_SOURCES)) \
	$(INTERPOSER) $(PROBE_FLOOR)

.PHONY: FORCE all clean install uninstall test unit-test e2e-test lint bench deps vmlinux test-programs demo eval-hangs rules \
	eval-silent eval-real bench-inference bench-traincheck fuzz fuzz-build fuzz-targets fuzz-seeds sanitize soak
.DELETE_ON_ERROR:

all: tcheck-bpf test-programs

tcheck-bpf: $(USER_OBJECTS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $^ $(LIBS) -o $@

$(OUTPUT) $(OUTPUT)/bpf $(OUTPUT)/infer $(OUTPUT)/tests/unit $(TEST_PROGRAM_DIR)/lib $(TEST_PROGRAM_DIR)/bench:
	$(Q)mkdir -p $@

$(OUTPUT)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard include/tcheck/*.h) $(wildcard bpf/*.h) $(VMLINUX) | $(OUTPUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/tracer.bpf.o: $(BPF_OBJECTS)
	$(call msg,BPF-LINK,$@)
	$(Q)$(BPFTOOL) gen object $@ $^

$(OUTPUT)/tracer.skel.h: $(OUTPUT)/tracer.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name tracer_bpf > $@

# The commit the binary is built from, for --version and the agent's tcheck_build_info;
# rewritten only when it changes, so a build of the same commit rebuilds nothing.
BUILD_COMMIT := $(or $(shell git rev-parse --short=12 HEAD 2>/dev/null),unknown)
$(OUTPUT)/build_commit.h: FORCE | $(OUTPUT)
	$(Q)printf '#define TCHECK_BUILD_COMMIT "%s"\n' '$(BUILD_COMMIT)' >$@.new
	$(Q)cmp -s $@.new $@ && rm -f $@.new || mv $@.new $@

$(OUTPUT)/user/base/build_version.o: $(OUTPUT)/build_commit.h

FORCE:

$(OUTPUT)/user/%.o: user/%.c $(USER_HEADERS) $(wildcard infer/*.h) $(wildcard include/tcheck/*.h) $(SKELETONS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

# The inference and checking engine: pure C, no BPF.
$(OUTPUT)/infer/%.o: infer/%.c $(wildcard infer/*.h) $(wildcard user/model/*.h user/base/*.h) \
		   $(wildcard include/tcheck/*.h) | $(OUTPUT)/infer
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(OUTPUT)/tests/unit/%.o: tests/unit/%.c $(wildcard tests/unit/*.h) $(USER_HEADERS) $(wildcard infer/*.h) \
			   $(wildcard include/tcheck/*.h) | $(OUTPUT)/tests/unit
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -c $< -o $@

$(TEST_PROGRAM_DIR)/unit-tests: $(UNIT_OBJECTS) $(LIBRARY_OBJECTS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $^ $(LIBS) -lcunit -o $@

# The NCCL test double: the nccl.h ABI over host memory, built like the real
# library (a shared object named libnccl.so.2, full DWARF, weak ncclX aliases).
$(NCCL_DOUBLE): $(NCCL_DOUBLE_SOURCES) $(wildcard tests/nccl_double/*.h) | $(TEST_PROGRAM_DIR)/lib
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -fPIC -shared -Wl,-soname,libnccl.so.2 -Itests/nccl_double \
		$(NCCL_DOUBLE_SOURCES) -lpthread -lrt -o $@
	$(Q)ln -sf libnccl.so.2 $(TEST_PROGRAM_DIR)/lib/libnccl.so

$(VERBS_DOUBLE_DIR):
	$(Q)mkdir -p $@

$(VERBS_PROVIDER): tests/verbs_double/verbs_provider.c tests/verbs_double/verbs_double_driver.h | $(VERBS_DOUBLE_DIR)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -fPIC -shared -fvisibility=hidden -Wl,-soname,libverbs-double-provider.so \
		$< -lpthread -o $@

$(VERBS_LIBRARY): tests/verbs_double/verbs_library.c tests/verbs_double/verbs_double_driver.h $(VERBS_PROVIDER)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -fPIC -shared -Wl,-soname,libibverbs.so.1 $< \
		-L$(VERBS_DOUBLE_DIR) -lverbs-double-provider -Wl,-rpath,'$$ORIGIN' -o $@

$(VERBS_WORKLOAD): tests/verbs_double/verbs-workload.c $(VERBS_LIBRARY) \
	tests/workloads/program_options.h
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< -L$(VERBS_DOUBLE_DIR) -l:libibverbs.so.1 \
		-Wl,-rpath,'$$ORIGIN' -o $@

# The same NCCL linked into a library of another name, as conda's PyTorch
# links NCCL statically into libtorch_cuda.so.
EMBEDDING_LIBRARY := $(TEST_PROGRAM_DIR)/lib/libtorch_cuda_double.so
$(EMBEDDING_LIBRARY): $(NCCL_DOUBLE_SOURCES) $(wildcard tests/nccl_double/*.h) | $(TEST_PROGRAM_DIR)/lib
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -fPIC -shared -Wl,-soname,libtorch_cuda_double.so -Itests/nccl_double \
		$(NCCL_DOUBLE_SOURCES) -lpthread -lrt -o $@

$(TEST_PROGRAM_DIR)/nccl-workload-embedded: tests/workloads/nccl-workload.c $(NCCL_WORKLOAD_PARTS) \
	$(EMBEDDING_LIBRARY) $(WORKLOAD_HEADERS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/nccl_double -Itests/workloads $(filter %.c,$^) \
		-L$(TEST_PROGRAM_DIR)/lib -ltorch_cuda_double -Wl,-rpath,'$$ORIGIN/lib' \
		-lpthread -ldl -lm -o $@

$(TEST_PROGRAM_DIR)/nccl-workload: $(NCCL_WORKLOAD_PARTS)
$(TEST_PROGRAM_DIR)/nccl-api-tour: $(NCCL_API_TOUR_PARTS)
$(TEST_PROGRAM_DIR)/%: tests/workloads/%.c $(NCCL_DOUBLE) $(WORKLOAD_HEADERS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/nccl_double -Itests/workloads $(filter %.c,$^) \
		-L$(TEST_PROGRAM_DIR)/lib -Wl,--as-needed -lnccl -Wl,--no-as-needed \
		-Wl,-rpath,'$$ORIGIN/lib' -lpthread -ldl -lm -o $@

# What patching NCCL in-process costs: wraps ncclAllReduce, finds the real one with RTLD_NEXT.
$(INTERPOSER): tools/bench/nccl-interposer.c | $(TEST_PROGRAM_DIR)/bench
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -fPIC -shared -fvisibility=hidden -Itests/nccl_double $< \
		-ldl -lpthread -o $@

# The benchmark's floor: attaches the empty uprobe pair of bpf/benchmark_floor.bpf.c.
$(PROBE_FLOOR): tools/bench/probe-floor.c $(LIBRARY_OBJECTS) tests/workloads/program_options.h \
	| $(TEST_PROGRAM_DIR)/bench
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(filter-out %.h,$^) $(LIBS) -o $@

$(TEST_PROGRAM_DIR)/bench/%: tools/bench/%.c $(NCCL_DOUBLE) tests/workloads/program_options.h \
	| $(TEST_PROGRAM_DIR)/bench
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/nccl_double $< -L$(TEST_PROGRAM_DIR)/lib -lnccl \
		-Wl,-rpath,'$$ORIGIN/../lib' -lpthread -ldl -lm -o $@

# A library that looks like NCCL but that the kernel refuses to probe (x86-64):
# the agent's probe attach failures, provoked on purpose.
UNPROBEABLE_LIBRARY := $(TEST_PROGRAM_DIR)/lib/libnccl-unprobeable.so
$(UNPROBEABLE_LIBRARY): tests/unprobeable/unprobeable_nccl.c | $(TEST_PROGRAM_DIR)/lib
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -fPIC -shared -Wl,-soname,libnccl-unprobeable.so $< -o $@

test-programs: $(NCCL_DOUBLE) $(WORKLOADS) $(TOOLS) $(TEST_PROGRAM_DIR)/unit-tests \
	$(TEST_PROGRAM_DIR)/nccl-workload-embedded $(VERBS_WORKLOAD) $(UNPROBEABLE_LIBRARY)

unit-test: $(TEST_PROGRAM_DIR)/unit-tests
	$(TEST_PROGRAM_DIR)/unit-tests

e2e-test: all
	tests/e2e/run-all.sh

# Everything: lint, unit tests (also under the sanitizers), then the end-to-end
# tests (they load BPF: root). The builds and lint use every CPU (TEST_JOBS).
TEST_JOBS ?= $(shell nproc)
test:
	$(MAKE) --no-print-directory -j$(TEST_JOBS) all lint
	$(TEST_PROGRAM_DIR)/unit-tests
	$(MAKE) --no-print-directory -j$(TEST_JOBS) sanitize
	tests/e2e/run-all.sh

# The unit tests built with AddressSanitizer (leaks included) and
# UndefinedBehaviorSanitizer into their own output folder, then run: any
# finding fails. tests/sanitize/lsan.supp lists the leaks that are not ours.
SANITIZE_DIR := .output/sanitize
SANITIZE_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer

sanitize:
	$(Q)$(MAKE) --no-print-directory OUTPUT=$(SANITIZE_DIR) CFLAGS="-g -O1 $(SANITIZE_FLAGS)" \
		$(SANITIZE_DIR)/tests/unit-tests
	ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0:strict_string_checks=1 \
		LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitize/lsan.supp:print_suppressions=0 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		$(SANITIZE_DIR)/tests/unit-tests

# Fuzz targets (tests/fuzz/fuzz_NAME.c), one per parser a user feeds files, options
# or HTTP requests to (the metrics server runs on loopback inside its target), built
# with clang's libFuzzer against the daemon's objects compiled again into their
# own output folder. `make fuzz` runs each for FUZZ_SECONDS, starting from the
# checked-in seeds (tests/fuzz/corpus/NAME/); the trace reader's checksums are
# not checked there (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION), so mutations reach
# what they protect. What each run learns stays in
# $(FUZZ_DIR)/corpus/NAME/, and a crashing input is written to $(FUZZ_DIR)/crash-NAME-*.
FUZZ_DIR := .output/fuzz
FUZZ_SECONDS ?= 60
FUZZ_SANITIZERS := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(filter-out tests/fuzz/fuzz_input.c, \
	$(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_BINARIES := $(patsubst %,$(FUZZ_DIR)/fuzz-%,$(FUZZ_NAMES))

fuzz-build:
	$(Q)$(MAKE) --no-print-directory OUTPUT=$(FUZZ_DIR) CC=$(CLANG) \
		CFLAGS="-g -O1 -fsanitize=fuzzer-no-link $(FUZZ_SANITIZERS) \
		-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION" fuzz-targets

# Only with OUTPUT=$(FUZZ_DIR), as fuzz-build calls it.
fuzz-targets: $(FUZZ_BINARIES)

$(FUZZ_DIR)/fuzz-%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_input.c tests/fuzz/fuzz_input.h $(LIBRARY_OBJECTS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -Itests/fuzz tests/fuzz/fuzz_$*.c \
		tests/fuzz/fuzz_input.c $(LIBRARY_OBJECTS) $(LIBS) -o $@

# Rewrites the trace reader's seeds with the trace writer (tests/fuzz/make_seed_traces.c).
fuzz-seeds: $(LIBRARY_OBJECTS)
	$(Q)$(CC) $(ALL_CFLAGS) tests/fuzz/make_seed_traces.c $(LIBRARY_OBJECTS) $(LIBS) \
		-o $(OUTPUT)/make-seed-traces
	$(Q)mkdir -p tests/fuzz/corpus/trace_reader
	$(OUTPUT)/make-seed-traces tests/fuzz/corpus/trace_reader

# One rule per target: `make -j2 -O fuzz` runs two at a time, each one's output in one piece.
FUZZ_RUNS := $(addprefix fuzz-run-,$(FUZZ_NAMES))
.PHONY: $(FUZZ_RUNS)
fuzz: $(FUZZ_RUNS)

$(FUZZ_RUNS): fuzz-run-%: fuzz-build
	@mkdir -p $(FUZZ_DIR)/corpus/$*
	@echo "fuzz-$*: $(FUZZ_SECONDS) s"
	$(Q)$(FUZZ_DIR)/fuzz-$* -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
		-close_fd_mask=3 -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/crash-$*- \
		$(FUZZ_DIR)/corpus/$* tests/fuzz/corpus/$*

LINT_SOURCES = $(filter-out %.skel.h,$(wildcard bpf/*.c bpf/*.h include/tcheck/*.h user/*.c user/*/*.c user/*/*.h \
	infer/*.c infer/*.h \
	tests/unit/*.c tests/unit/*.h tests/nccl_double/*.c tests/nccl_double/*.h \
	tests/workloads/*.c tests/workloads/*.h tests/workloads/*/*.c \
	tests/workloads/*/*.h tests/verbs_double/*.c tests/verbs_double/*.h \
	tools/bench/*.c tests/fuzz/*.c tests/fuzz/*.h))
# The daemon's own code and the fuzz targets; other tests are checked by the compiler,
# cppcheck and by running.
TIDY_SOURCES = $(wildcard user/*.c user/*/*.c infer/*.c tools/bench/*.c tests/fuzz/*.c)
lint: $(SKELETONS) $(OUTPUT)/build_commit.h $(USER_OBJECTS)
	clang-format --dry-run --Werror $(LINT_SOURCES)
	python3 tools/check-layers.py .
	mandoc -T lint man/*.1
	python3 tools/check-circles.py $(USER_OBJECTS)
	cppcheck -j 2 --quiet --error-exitcode=1 --enable=warning,portability \
		--suppress=missingIncludeSystem --inline-suppr -D__x86_64__ \
		-Iinclude -Iuser -I. -Itests/fuzz user infer tests/unit tests/nccl_double tests/workloads \
		tests/verbs_double tests/fuzz
	@# One file per run, two runs at a time: clang-tidy 14 confuses va_lists across files of
	@# one run. bpftool's generated skeleton (included by probe_session.c) trips the leak checker.
	@printf '%s\n' $(TIDY_SOURCES) | xargs -P 2 -I FILE sh -c 'checks=; \
		[ FILE = user/probe/probe_session.c ] && checks=--checks=-clang-analyzer-unix.Malloc; \
		exec clang-tidy --quiet $$checks FILE -- $(ALL_CFLAGS) -Itests/nccl_double -Itests/fuzz'

demo: all
	tools/demo.sh

bench: all
	tools/bench/run-bench.sh
	tools/bench/agent-cost.sh > $(OUTPUT)/agent-cost.md
	python3 tools/bench/replace-section.py BENCHMARKS.md agent-cost $(OUTPUT)/agent-cost.md
	tools/bench/python-overhead.sh > $(OUTPUT)/python-overhead.md
	python3 tools/bench/replace-section.py BENCHMARKS.md python-overhead $(OUTPUT)/python-overhead.md
	tools/bench/python-entry-cost.sh > $(OUTPUT)/python-entry-cost.md
	python3 tools/bench/replace-section.py BENCHMARKS.md python-entry-cost $(OUTPUT)/python-entry-cost.md
	tools/bench/recorder-cpu.sh > $(OUTPUT)/recorder-cpu.md
	python3 tools/bench/replace-section.py BENCHMARKS.md recorder-cpu $(OUTPUT)/recorder-cpu.md

# Inference and checking against trace size up to 10 million calls, offline and live
# (about 10 minutes, 1.6 GB of disk in /tmp; root).
bench-inference: all
	tools/bench/inference-scale.sh > $(OUTPUT)/inference-scale.md
	python3 tools/bench/replace-section.py BENCHMARKS.md invariant-inference $(OUTPUT)/inference-scale.md

# The soak (tools/soak/soak.py; root, 20 to 30 minutes on 2 cores; not part of
# `make test`): SOAK_CYCLES attach/record cycles on one live multi-rank job, the
# agent attached throughout, then SOAK_KILLS recorders killed with SIGKILL. The
# kernel's BPF objects, the job's and the agent's fds and memory must come back
# to their baseline and the job's results must equal an untraced run's. Rewrites
# the soak section of BENCHMARKS.md when every check holds.
SOAK_CYCLES ?= 1000
SOAK_KILLS ?= 50
soak: all
	python3 tools/soak/soak.py --cycles $(SOAK_CYCLES) --kills $(SOAK_KILLS) --result $(OUTPUT)/soak.md
	python3 tools/bench/replace-section.py BENCHMARKS.md soak $(OUTPUT)/soak.md

# Our inference beside TrainCheck's on its own traces (skipped when they are absent).
bench-traincheck: tcheck-bpf
	python3 tools/bench/traincheck-compare.py --write BENCHMARKS.md

# Hang and slowdown detection against injected faults (about 10 minutes; root).
eval-hangs: all
	tools/eval/run-hang-eval.sh > $(OUTPUT)/hang-eval.md
	python3 tools/bench/replace-section.py BENCHMARKS.md hang-detection $(OUTPUT)/hang-eval.md

# The silent-error suites, as BENCHMARKS.md's tables (root): rules from healthy reference runs
# against each case's buggy and fixed variants (about 2 minutes), then rules from three
# references against cases of other shapes, recorded as a user would (3 to 4 minutes, and as much again on torch 2.6 when its root is built; its
# table is written also when a case is missed, exit status 1).
eval-silent: all
	python3 tools/eval/silent_eval.py --markdown $(OUTPUT)/silent-errors.md
	python3 tools/bench/replace-section.py BENCHMARKS.md silent-errors $(OUTPUT)/silent-errors.md
	python3 tools/eval/silent_cross_eval.py --markdown $(OUTPUT)/silent-errors-cross.md \
		--results $(OUTPUT)/silent-errors-cross.json || [ $$? = 1 ]
	@# The same on torch 2.6 when its root is built: a second table in the section.
	if [ -f $(TORCH2_ROOT)/.tcheck-ready ]; then \
		python3 tools/eval/silent_cross_eval.py --markdown $(OUTPUT)/silent-errors-cross-2.6.md \
			--results $(OUTPUT)/silent-errors-cross-2.6.json --python \
			"$(CURDIR)/tools/stacks/in-root.sh $(TORCH2_ROOT) --share $(CURDIR) --share /tmp -- /usr/bin/python3" \
			|| [ $$? = 1 ]; \
		tail -n +2 $(OUTPUT)/silent-errors-cross-2.6.md >>$(OUTPUT)/silent-errors-cross.md; \
	fi
	python3 tools/bench/replace-section.py BENCHMARKS.md silent-errors-cross $(OUTPUT)/silent-errors-cross.md

# The real-bug suite (tools/eval/real_bugs_eval.py): reproductions of public silent-error
# reports and the healthy programs of tests/workloads/python/healthy_shapes/, on each torch
# stack; its tables go to BENCHMARKS.md (section real-bugs). Needs root (BPF).
eval-real: all
	python3 tools/eval/real_bugs_eval.py --markdown $(OUTPUT)/real-bugs.md \
		--results $(OUTPUT)/real-bugs.json || [ $$? = 1 ]
	@# The same on torch 2.6 and 2.14 where their roots are built: a table each.
	for stack in 2.6:$(TORCH2_ROOT) 2.14:$(TORCH214_ROOT); do \
		version=$${stack%%:*} root=$${stack#*:}; \
		[ -f $$root/.tcheck-ready ] || continue; \
		python3 tools/eval/real_bugs_eval.py --markdown $(OUTPUT)/real-bugs-$$version.md \
			--results $(OUTPUT)/real-bugs-$$version.json --python \
			"$(CURDIR)/tools/stacks/in-root.sh $$root --share $(CURDIR) --share /tmp -- /usr/bin/python3" \
			|| [ $$? = 1 ] || exit 1; \
		cat $(OUTPUT)/real-bugs-$$version.md >>$(OUTPUT)/real-bugs.md; \
	done
	{ echo "## Silent errors from real bug reports"; echo; cat $(OUTPUT)/real-bugs.md; } \
		>$(OUTPUT)/real-bugs-section.md
	python3 tools/bench/replace-section.py BENCHMARKS.md real-bugs $(OUTPUT)/real-bugs-section.md

# The shipped invariants, inferred from the reference workloads (records with BPF: root).
rules: all
	tools/make-rules.sh

deps:
	tools/install-deps.sh

# `make install` (PREFIX, DESTDIR as usual): the binary, the man page and the
# bash and zsh completions; `make uninstall` removes exactly those files.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
BASH_COMPLETION_DIR ?= $(PREFIX)/share/bash-completion/completions
ZSH_COMPLETION_DIR ?= $(PREFIX)/share/zsh/site-functions
INSTALLED_FILES = $(DESTDIR)$(BINDIR)/tcheck-bpf $(DESTDIR)$(MANDIR)/man1/tcheck-bpf.1 \
	$(DESTDIR)$(BASH_COMPLETION_DIR)/tcheck-bpf $(DESTDIR)$(ZSH_COMPLETION_DIR)/_tcheck-bpf

install: tcheck-bpf
	install -D -m 0755 tcheck-bpf $(DESTDIR)$(BINDIR)/tcheck-bpf
	install -D -m 0644 man/tcheck-bpf.1 $(DESTDIR)$(MANDIR)/man1/tcheck-bpf.1
	install -D -m 0644 tools/completion/tcheck-bpf.bash $(DESTDIR)$(BASH_COMPLETION_DIR)/tcheck-bpf
	install -D -m 0644 tools/completion/_tcheck-bpf $(DESTDIR)$(ZSH_COMPLETION_DIR)/_tcheck-bpf

uninstall:
	rm -f $(INSTALLED_FILES)

# Regenerates the checked-in vmlinux.h from the running kernel's BTF.
vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/$(ARCH)/vmlinux_$$(uname -r | cut -d. -f1-2).h
	ln -sf vmlinux_$$(uname -r | cut -d. -f1-2).h vmlinux/$(ARCH)/vmlinux.h

clean:
	rm -rf $(OUTPUT) tcheck-bpf
