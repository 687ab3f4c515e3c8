// SPDX-License-Identifier: MIT
/* Tests of finding CPython's layout, against live interpreters that print their own truth. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/remote_memory.h"
#include "probe/elf_symbol_lookup.h"
#include "python/python_layout.h"
#include "python/python_module_classes.h"
#include "python/python_type_attributes.h"
#include "tcheck/probe_abi.h"
#include "unit.h"

#define PYENV_VERSIONS "/root/.pyenv/versions/"
#define LIBPYTHON_3_13 PYENV_VERSIONS "3.13.0/lib/libpython3.13.so.1.0"

/*
 * The script's method starts on line 6. It prints what CPython itself says
 * about the method and its arguments, then blocks in readline() (the GIL
 * released) and, once a line arrives, spins holding the GIL; the method's
 * frame stays on the stack throughout.
 */
#define METHOD_FIRST_LINE 6
static const char script_text[] =
	"import sys\n"
	"\n"
	"\n"
	"class Outer:\n"
	"    class Inner:\n"
	"        def method_name(self, ratio, count, label, *rest, flag, nothing, **options):\n"
	"            code = sys._getframe().f_code\n"
	"            names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount + 2]\n"
	"            report = [\n"
	"                ('code', id(code)), ('filename', code.co_filename),\n"
	"                ('first_line', code.co_firstlineno),\n"
	"                ('qualname', getattr(code, 'co_qualname', code.co_name)),\n"
	"                ('name_object', id(getattr(code, 'co_qualname', code.co_name))),\n"
	"                ('argcount', code.co_argcount), ('kwonly', code.co_kwonlyargcount),\n"
	"                ('flags', code.co_flags), ('names', ','.join(names)),\n"
	"                ('ratio', repr(ratio)), ('count', count),\n"
	"                ('label', label.encode('utf-8').hex()),\n"
	"                ('none', id(None)), ('true', id(True)), ('int', id(int)),\n"
	"                ('float', id(float)), ('bool', id(bool)), ('str', id(str)),\n"
	"                ('code_type', id(type(code))), ('hexversion', sys.hexversion),\n"
	"                ('version', '%d.%d.%d' % tuple(sys.version_info[:3])),\n"
	"                ('plain', id(Plain)), ('overriding', id(Overriding)),\n"
	"                ('inheriting', id(Inheriting)), ('torch_own', id(TorchOwn)),\n"
	"            ]\n"
	"            for key, value in report:\n"
	"                print('%s=%s' % (key, value))\n"
	"            print('ready', flush=True)\n"
	"            sys.stdin.readline()\n"
	"            print('spinning', flush=True)\n"
	"            while True:\n"
	"                pass\n"
	"\n"
	"\n"
	"class Module:\n"
	"    def train(self, mode=True):\n"
	"        return self\n"
	"\n"
	"\n"
	"class Plain(Module):\n"
	"    def forward(self):\n"
	"        pass\n"
	"\n"
	"\n"
	"class Overriding(Plain):\n"
	"    def train(self, mode=True):\n"
	"        return super().train(mode)\n"
	"\n"
	"\n"
	"class Inheriting(Overriding):\n"
	"    pass\n"
	"\n"
	"\n"
	"class TorchOwn(Module):\n"
	"    __module__ = 'torch.nn.parallel.distributed'\n"
	"\n"
	"    def train(self, mode=True):\n"
	"        return super().train(mode)\n"
	"\n"
	"\n"
	"def caller():\n"
	"    Outer.Inner().method_name(2.5, -1234567890123, 'Gr\\u00fc\\u00dfe \\u2713', 'extra',\n"
	"                              flag=True, nothing=None, option=1)\n"
	"\n"
	"\n"
	"caller()\n";

/* "Grüße ✓" in UTF-8: two-byte and three-byte characters, a str of kind 2. */
static const char label_utf8[] = "Gr\xc3\xbc\xc3\x9f"
				 "e \xe2\x9c\x93";

/* Records a failed check and leaves the test through its cleanup. */
#define REQUIRE(condition)                                                                    \
	do {                                                                                  \
		bool held_ = (condition);                                                     \
		CU_assertImplementation(held_, __LINE__, #condition, __FILE__, "", CU_FALSE); \
		if (!held_)                                                                   \
			goto stop;                                                            \
	} while (0)

struct interpreter_child {
	pid_t pid;
	int to_child;
	int from_child;
	char script[64];
	char root_script[PATH_MAX]; /* the script's copy inside a root, when chrooted */
	char output[16384];
	size_t output_length;
};

/* Writes the script to path; false on failure. */
static bool script_write(const char *path, int fd)
{
	bool written;

	if (fd < 0)
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return false;
	written =
		write(fd, script_text, sizeof(script_text) - 1) == (ssize_t)sizeof(script_text) - 1;
	close(fd);
	return written;
}

/* Starts interpreter on the script; chrooted into root (an absolute path) unless NULL. */
static bool child_start(const char *root, const char *interpreter, struct interpreter_child *child)
{
	int input[2], output[2];

	memset(child, 0, sizeof(*child));
	child->pid = -1;
	child->to_child = child->from_child = -1;
	snprintf(child->script, sizeof(child->script), "/tmp/tcheck-python-layout-XXXXXX.py");
	if (!script_write(child->script, mkstemps(child->script, 3)))
		return false;
	/*
	 * The same path inside the root, so that the code object names it as
	 * here (the very file when tools/stacks/in-root.sh has bound /tmp there).
	 */
	if (root) {
		snprintf(child->root_script, sizeof(child->root_script), "%s%s", root,
			 child->script);
		if (!script_write(child->root_script, -1))
			return false;
	}
	if (pipe2(input, O_CLOEXEC) != 0)
		return false;
	if (pipe2(output, O_CLOEXEC) != 0) {
		close(input[0]);
		close(input[1]);
		return false;
	}
	child->pid = fork();
	if (child->pid == 0) {
		dup2(input[0], STDIN_FILENO);
		dup2(output[1], STDOUT_FILENO);
		/* -E -S: no environment variables, no site packages; the script alone. */
		if (root)
			execl("/usr/sbin/chroot", "chroot", root, interpreter, "-E", "-S",
			      child->script, (char *)NULL);
		else
			execl(interpreter, interpreter, "-E", "-S", child->script, (char *)NULL);
		_exit(127);
	}
	close(input[0]);
	close(output[1]);
	child->to_child = input[1];
	child->from_child = output[0];
	return child->pid > 0;
}

static void child_stop(struct interpreter_child *child)
{
	if (child->pid > 0) {
		kill(child->pid, SIGKILL);
		waitpid(child->pid, NULL, 0);
	}
	if (child->to_child >= 0)
		close(child->to_child);
	if (child->from_child >= 0)
		close(child->from_child);
	if (child->script[0])
		unlink(child->script);
	if (child->root_script[0])
		unlink(child->root_script);
	child->pid = -1;
	child->to_child = child->from_child = -1;
	child->script[0] = '\0';
	child->root_script[0] = '\0';
}

/* Reads the child's output until a line equals marker; false on exit or after 30 s. */
static bool child_wait_for(struct interpreter_child *child, const char *marker)
{
	char line[64];

	snprintf(line, sizeof(line), "%s\n", marker);
	for (;;) {
		struct pollfd readable = { .fd = child->from_child, .events = POLLIN };
		const char *found = strstr(child->output, line);
		ssize_t got;

		if (found && (found == child->output || found[-1] == '\n'))
			return true;
		if (child->output_length + 1 >= sizeof(child->output) ||
		    poll(&readable, 1, 30000) <= 0)
			return false;
		got = read(child->from_child, child->output + child->output_length,
			   sizeof(child->output) - 1 - child->output_length);
		if (got <= 0)
			return false;
		child->output_length += (size_t)got;
		child->output[child->output_length] = '\0';
	}
}

/* The value the script printed as "key=value", or "" when it printed none. */
static const char *child_value(const struct interpreter_child *child, const char *key, char *value,
			       size_t size)
{
	char prefix[64];
	const char *line = child->output;
	size_t prefix_length = (size_t)snprintf(prefix, sizeof(prefix), "%s=", key);

	value[0] = '\0';
	while (line && *line) {
		if (strncmp(line, prefix, prefix_length) == 0) {
			const char *end = strchr(line, '\n');
			size_t length = end ? (size_t)(end - line) : strlen(line);

			length -= prefix_length;
			if (length >= size)
				length = size - 1;
			memcpy(value, line + prefix_length, length);
			value[length] = '\0';
			break;
		}
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	return value;
}

static unsigned long long child_number(const struct interpreter_child *child, const char *key)
{
	char value[64];

	return strtoull(child_value(child, key, value, sizeof(value)), NULL, 0);
}

static uint64_t pointer_at(pid_t pid, uint64_t address)
{
	uint64_t value = 0;

	if (remote_memory_read(pid, address, &value, sizeof(value), NULL, 0) != 0)
		return 0;
	return value;
}

/*
 * The main thread's state, reached the way that works whether or not it
 * holds the GIL: _PyRuntime.interpreters.head, then the interpreter's
 * thread list, the thread whose kernel tid is the pid (or the oldest, the
 * list's last, on 3.10, which keeps no tid).
 */
static uint64_t main_thread_state(pid_t pid, const struct python_layout *layout)
{
	uint64_t interpreter = pointer_at(pid, layout->addresses.runtime_state +
						       (uint64_t)layout->runtime_interpreters_head);
	uint64_t thread =
		interpreter
			? pointer_at(pid, interpreter + (uint64_t)layout->interpreter_threads_head)
			: 0;
	uint64_t oldest = 0;

	for (int i = 0; thread && i < 64; i++) {
		if (layout->thread_native_id != PYTHON_FIELD_ABSENT &&
		    pointer_at(pid, thread + (uint64_t)layout->thread_native_id) == (uint64_t)pid)
			return thread;
		oldest = thread;
		thread = pointer_at(pid, thread + (uint64_t)layout->thread_next);
	}
	return layout->thread_native_id == PYTHON_FIELD_ABSENT ? oldest : 0;
}

static uint64_t innermost_frame(pid_t pid, const struct python_layout *layout, uint64_t thread)
{
	uint64_t cframe;

	if (layout->thread_frame != PYTHON_FIELD_ABSENT)
		return pointer_at(pid, thread + (uint64_t)layout->thread_frame);
	cframe = pointer_at(pid, thread + (uint64_t)layout->thread_cframe);
	return cframe ? pointer_at(pid, cframe + (uint64_t)layout->cframe_current_frame) : 0;
}

/*
 * The frames of a thread with Python code, innermost first, as the BPF side
 * will walk them: follow previous, skip the shim frames 3.12+ push for each
 * C entry, keep frames whose code pointer holds a code object.
 */
static size_t python_frames(pid_t pid, const struct python_layout *layout, uint64_t frame,
			    uint64_t *frames, uint64_t *codes, size_t capacity)
{
	size_t count = 0;

	for (int i = 0; frame && i < 256 && count < capacity; i++) {
		uint64_t code = pointer_at(pid, frame + (uint64_t)layout->frame_code) &
				~TCHECK_PYTHON_REFERENCE_TAG_BITS;
		uint8_t owner = 0;

		if (layout->frame_owner != PYTHON_FIELD_ABSENT)
			remote_memory_read(pid, frame + (uint64_t)layout->frame_owner, &owner, 1,
					   NULL, 0);
		if ((layout->frame_owner_c_stack == PYTHON_FIELD_ABSENT ||
		     owner < layout->frame_owner_c_stack) &&
		    code &&
		    pointer_at(pid, code + (uint64_t)layout->object_type) ==
			    layout->addresses.code_type) {
			frames[count] = frame;
			codes[count] = code;
			count++;
		}
		frame = pointer_at(pid, frame + (uint64_t)layout->frame_previous);
	}
	return count;
}

/* An int object's value, up to 63 bits, decoded from its 30-bit digits. */
static bool int_value(pid_t pid, const struct python_layout *layout, uint64_t object,
		      long long *value)
{
	uint32_t digits[2];
	uint64_t size_word, digit_count, magnitude = 0;
	bool negative;

	if (remote_memory_read(pid, object + (uint64_t)layout->long_size, &size_word,
			       sizeof(size_word), NULL, 0) != 0)
		return false;
	if (layout->long_tagged) {
		digit_count = size_word >> 3;
		negative = (size_word & 3) == 2;
	} else {
		negative = (int64_t)size_word < 0;
		digit_count = negative ? (uint64_t)(-(int64_t)size_word) : size_word;
	}
	/* Two 30-bit digits hold the script's number; more would not fit in 63 bits. */
	if (digit_count > 2)
		return false;
	if (digit_count && remote_memory_read(pid, object + (uint64_t)layout->long_digits, digits,
					      sizeof(digits[0]) * digit_count, NULL, 0) != 0)
		return false;
	for (uint64_t i = 0; i < digit_count; i++)
		magnitude |= (uint64_t)digits[i] << (layout->long_digit_bits * i);
	*value = negative ? -(long long)magnitude : (long long)magnitude;
	return true;
}

/*
 * _Py_tss_tstate of a thread as a BPF program reads it from the thread
 * pointer: dtv = *(fs_base + 8), block = dtv[module id], value at
 * block + offset. The test takes fs_base with ptrace; BPF has it in
 * task->thread.fsbase.
 */
static int thread_local_state(pid_t pid, const struct python_layout *layout, uint64_t *state)
{
	struct user_regs_struct registers;
	uint64_t vector, block;
	int status;

	if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) != 0)
		return -errno;
	if (ptrace(PTRACE_INTERRUPT, pid, NULL, NULL) != 0 || waitpid(pid, &status, 0) != pid ||
	    ptrace(PTRACE_GETREGS, pid, NULL, &registers) != 0) {
		int err = errno;

		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		return -err;
	}
	ptrace(PTRACE_DETACH, pid, NULL, NULL);
	vector = pointer_at(pid, registers.fs_base + 8);
	block = vector ? pointer_at(pid, vector + 16 * layout->thread_local.module_id) : 0;
	*state = block ? pointer_at(pid, block + layout->thread_local.variable_offset) : 0;
	return 0;
}

/*
 * The thread state the interpreter calls current. The script announces
 * its spinning with a write, around which it drops the GIL: the state is
 * NULL until it takes the GIL back, so the first reads may be early.
 */
static uint64_t current_thread_state(pid_t pid, const struct python_layout *layout)
{
	uint64_t state = 0;

	for (int attempt = 0; attempt < 200 && !state; attempt++) {
		if (attempt)
			usleep(10000);
		if (layout->thread_state_source == PYTHON_THREAD_STATE_RUNTIME_FIELD)
			state = pointer_at(pid, layout->thread_state_current_address);
		else if (thread_local_state(pid, layout, &state) != 0)
			return 0;
	}
	return state;
}

static bool hex_decode(const char *hex, char *text, size_t size)
{
	size_t length = strlen(hex) / 2;

	if (length >= size)
		return false;
	for (size_t i = 0; i < length; i++) {
		unsigned int byte;

		if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
			return false;
		text[i] = (char)byte;
	}
	text[length] = '\0';
	return true;
}

/*
 * Which of the script's classes override Module.train(), as their class
 * dictionaries say: the one defining it, its subclass, not the one
 * inheriting Module's, nor one torch defines. Unknown on 3.10.
 */
static void check_train_overrides(const struct interpreter_child *child,
				  const struct python_layout *layout)
{
	static const struct {
		const char *key;
		enum python_type_answer answer;
	} classes[] = {
		{ "plain", PYTHON_TYPE_NO },
		{ "overriding", PYTHON_TYPE_YES },
		{ "inheriting", PYTHON_TYPE_YES },
		{ "torch_own", PYTHON_TYPE_NO },
	};
	struct u64_map names, answers;

	u64_map_init(&names);
	u64_map_init(&answers);
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		uint64_t type = child_number(child, classes[i].key);
		enum python_type_answer want =
			layout->minor >= 11 ? classes[i].answer : PYTHON_TYPE_UNKNOWN;

		CU_ASSERT_EQUAL(python_type_overrides(&names, child->pid, layout, type, "train",
						      "Module", "torch."),
				want);
		CU_ASSERT_EQUAL(python_type_overrides_cached(&answers, &names, child->pid, layout,
							     type, "train", "Module", "torch."),
				want);
	}
	/* An address that is no type object: not known, and nothing read past it. */
	CU_ASSERT_EQUAL(
		python_type_overrides(&names, child->pid, layout, 8, "train", "Module", "torch."),
		PYTHON_TYPE_UNKNOWN);
	/* Answered from what was kept: a class asked again gives its first answer. */
	CU_ASSERT_EQUAL(python_type_overrides_cached(&answers, &names, child->pid, layout,
						     child_number(child, "overriding"), "train",
						     "Module", "torch."),
			layout->minor >= 11 ? PYTHON_TYPE_YES : PYTHON_TYPE_UNKNOWN);
	CU_ASSERT_EQUAL(answers.count, sizeof(classes) / sizeof(classes[0]));
	u64_map_free(&answers);
	python_module_classes_free(&names);
}

static void check_live_interpreter_in(const char *root, const char *interpreter)
{
	static const char *const callers[] = { "caller", "<module>" };
	struct interpreter_child child = { .pid = -1, .to_child = -1, .from_child = -1 };
	struct python_runtime runtime;
	struct python_layout layout;
	struct python_code code;
	char error[512] = "", value[512], text[512];
	uint64_t thread, frames[8], codes[8], arguments[8], type;
	size_t frame_count;
	long long integer;
	double ratio;
	int err;

	REQUIRE(child_start(root, interpreter, &child));
	REQUIRE(child_wait_for(&child, "ready"));

	err = python_runtime_find(child.pid, &runtime, error, sizeof(error));
	if (err)
		printf("\n    %s: %s ", interpreter, error);
	REQUIRE(err == 0);
	snprintf(text, sizeof(text), "%d.%d.", runtime.major, runtime.minor);
	REQUIRE(strncmp(child_value(&child, "version", value, sizeof(value)), text, strlen(text)) ==
		0);
	if (runtime.micro >= 0)
		CU_ASSERT_STRING_EQUAL(runtime.version, value);
	if (runtime.version_source == PYTHON_VERSION_FROM_SYMBOL)
		CU_ASSERT_EQUAL(runtime.hex_version, child_number(&child, "hexversion"));
	CU_ASSERT_EQUAL(runtime.addresses.none, child_number(&child, "none"));
	CU_ASSERT_EQUAL(runtime.addresses.true_object, child_number(&child, "true"));
	CU_ASSERT_EQUAL(runtime.addresses.long_type, child_number(&child, "int"));
	CU_ASSERT_EQUAL(runtime.addresses.float_type, child_number(&child, "float"));
	CU_ASSERT_EQUAL(runtime.addresses.bool_type, child_number(&child, "bool"));
	CU_ASSERT_EQUAL(runtime.addresses.unicode_type, child_number(&child, "str"));
	CU_ASSERT_EQUAL(runtime.addresses.code_type, child_number(&child, "code_type"));

	err = python_layout_for(&runtime, &layout, error, sizeof(error));
	if (err)
		printf("\n    %s: %s ", interpreter, error);
	REQUIRE(err == 0);
	if (runtime.minor >= 13)
		CU_ASSERT_EQUAL(layout.source, PYTHON_LAYOUT_FROM_DEBUG_OFFSETS_FILE);
	check_train_overrides(&child, &layout);

	/* The stack, from the thread list down through previous frames. */
	thread = main_thread_state(child.pid, &layout);
	REQUIRE(thread != 0);
	CU_ASSERT_EQUAL(pointer_at(child.pid, thread + (uint64_t)layout.thread_interpreter),
			pointer_at(child.pid, layout.addresses.runtime_state +
						      (uint64_t)layout.runtime_interpreters_head));
	frame_count = python_frames(child.pid, &layout, innermost_frame(child.pid, &layout, thread),
				    frames, codes, 8);
	REQUIRE(frame_count == 3);
	CU_ASSERT_EQUAL(codes[0], child_number(&child, "code"));
	for (size_t i = 1; i < frame_count; i++) {
		err = python_code_read(child.pid, &layout, codes[i], &code, error, sizeof(error));
		if (err)
			printf("\n    %s: %s ", interpreter, error);
		CU_ASSERT_EQUAL(err, 0);
		CU_ASSERT_STRING_EQUAL(code.qualified_name, callers[i - 1]);
	}

	/* The method's code object against what CPython printed. */
	err = python_code_read(child.pid, &layout, codes[0], &code, error, sizeof(error));
	if (err)
		printf("\n    %s: %s ", interpreter, error);
	REQUIRE(err == 0);
	CU_ASSERT_STRING_EQUAL(code.qualified_name,
			       child_value(&child, "qualname", value, sizeof(value)));
	CU_ASSERT_STRING_EQUAL(code.qualified_name,
			       runtime.minor == 10 ? "method_name" : "Outer.Inner.method_name");
	CU_ASSERT_STRING_EQUAL(code.name, "method_name");
	/* The name object the probes key the code object by, as CPython gives its address. */
	CU_ASSERT_EQUAL(code.name_object, child_number(&child, "name_object"));
	CU_ASSERT_STRING_EQUAL(code.filename, child.script);
	CU_ASSERT_STRING_EQUAL(code.filename,
			       child_value(&child, "filename", value, sizeof(value)));
	CU_ASSERT_EQUAL(code.first_line, METHOD_FIRST_LINE);
	CU_ASSERT_EQUAL(code.first_line, (int)child_number(&child, "first_line"));
	CU_ASSERT_EQUAL(code.argument_count, (int)child_number(&child, "argcount"));
	CU_ASSERT_EQUAL(code.argument_count, 4);
	CU_ASSERT_EQUAL(code.keyword_only_count, (int)child_number(&child, "kwonly"));
	CU_ASSERT_EQUAL(code.flags, (int)child_number(&child, "flags"));
	CU_ASSERT_EQUAL(code.parameter_count, 8);
	REQUIRE(code.argument_name_count == 8);
	text[0] = '\0';
	for (int i = 0; i < code.argument_name_count; i++) {
		strcat(text, i ? "," : "");
		strcat(text, code.argument_names[i]);
	}
	CU_ASSERT_STRING_EQUAL(text, child_value(&child, "names", value, sizeof(value)));
	CU_ASSERT_STRING_EQUAL(text, "self,ratio,count,label,flag,nothing,rest,options");

	/* The arguments, from the frame's localsplus, by their types. */
	REQUIRE(remote_memory_read(child.pid, frames[0] + (uint64_t)layout.frame_localsplus,
				   arguments, sizeof(arguments), NULL, 0) == 0);
	for (size_t i = 0; i < sizeof(arguments) / sizeof(arguments[0]); i++)
		arguments[i] &= ~TCHECK_PYTHON_REFERENCE_TAG_BITS;
	type = pointer_at(child.pid, arguments[1] + (uint64_t)layout.object_type);
	CU_ASSERT_EQUAL(type, layout.addresses.float_type);
	REQUIRE(remote_memory_read(child.pid, arguments[1] + (uint64_t)layout.float_value, &ratio,
				   sizeof(ratio), NULL, 0) == 0);
	CU_ASSERT_EQUAL(ratio, strtod(child_value(&child, "ratio", value, sizeof(value)), NULL));
	CU_ASSERT_EQUAL(ratio, 2.5);
	type = pointer_at(child.pid, arguments[2] + (uint64_t)layout.object_type);
	CU_ASSERT_EQUAL(type, layout.addresses.long_type);
	REQUIRE(int_value(child.pid, &layout, arguments[2], &integer));
	CU_ASSERT_EQUAL(integer,
			strtoll(child_value(&child, "count", value, sizeof(value)), NULL, 10));
	CU_ASSERT_EQUAL(integer, -1234567890123LL);
	type = pointer_at(child.pid, arguments[3] + (uint64_t)layout.object_type);
	CU_ASSERT_EQUAL(type, layout.addresses.unicode_type);
	err = python_string_read(child.pid, &layout, arguments[3], text, sizeof(text), error,
				 sizeof(error));
	CU_ASSERT_EQUAL(err, 0);
	CU_ASSERT_STRING_EQUAL(text, label_utf8);
	REQUIRE(hex_decode(child_value(&child, "label", value, sizeof(value)), value,
			   sizeof(value)));
	CU_ASSERT_STRING_EQUAL(text, value);
	CU_ASSERT_EQUAL(arguments[4], layout.addresses.true_object);
	type = pointer_at(child.pid, arguments[4] + (uint64_t)layout.object_type);
	CU_ASSERT_EQUAL(type, layout.addresses.bool_type);
	CU_ASSERT_EQUAL(arguments[5], layout.addresses.none);

	/* Holding the GIL, the thread is also the current one where the BPF side looks. */
	REQUIRE(write(child.to_child, "\n", 1) == 1);
	REQUIRE(child_wait_for(&child, "spinning"));
	CU_ASSERT_EQUAL(innermost_frame(child.pid, &layout, thread), frames[0]);
	/* A stripped interpreter (Debian's 3.13 and 3.14) does not name its thread-local state. */
	if (layout.thread_state_source == PYTHON_THREAD_STATE_THREAD_LOCAL &&
	    (runtime.minor < 13 || layout.thread_local.known)) {
		CU_ASSERT(layout.thread_local.known);
		CU_ASSERT(layout.thread_local.module_id > 0);
	}
	if (layout.thread_state_source == PYTHON_THREAD_STATE_RUNTIME_FIELD ||
	    layout.thread_local.known)
		CU_ASSERT_EQUAL(current_thread_state(child.pid, &layout), thread);
stop:
	child_stop(&child);
}

static void check_live_interpreter(const char *interpreter)
{
	if (access(interpreter, X_OK) != 0) {
		printf("\n    note: %s is not installed here: skipped ", interpreter);
		return;
	}
	check_live_interpreter_in(NULL, interpreter);
}

UNIT_TEST(python_layout, live_3_10)
{
	check_live_interpreter(PYENV_VERSIONS "3.10.13/bin/python3");
}

UNIT_TEST(python_layout, live_3_11)
{
	check_live_interpreter(PYENV_VERSIONS "3.11.7/bin/python3");
}

UNIT_TEST(python_layout, live_3_12)
{
	check_live_interpreter(PYENV_VERSIONS "3.12.1/bin/python3");
}

UNIT_TEST(python_layout, live_3_13)
{
	check_live_interpreter(PYENV_VERSIONS "3.13.0/bin/python3");
}

/*
 * Debian sid's python3.14, chrooted into the root `tools/stacks/torch-root.sh
 * sid` builds (as root: chroot): one stripped executable, _PyRuntime in its
 * own .PyRuntime section, frames holding tagged references.
 */
UNIT_TEST(python_layout, live_debian_sid_3_14)
{
	const char *root = getenv("TCHECK_TORCH214_ROOT");
	char ready[PATH_MAX];

	root = root && root[0] ? root : "/var/cache/tcheck-bpf/sid-torch";
	snprintf(ready, sizeof(ready), "%s/.tcheck-ready", root);
	if (geteuid() != 0 || access(ready, R_OK) != 0) {
		printf("\n    note: no sid root at %s, or not root: skipped ", root);
		return;
	}
	check_live_interpreter_in(root, "/usr/bin/python3.14");
}

/* Debian's python3.11 is one executable, without .symtab, built with other options. */
UNIT_TEST(python_layout, live_debian_3_11)
{
	check_live_interpreter("/usr/bin/python3.11");
}

static void check_refused(const char *interpreter, int minor)
{
	struct interpreter_child child = { .pid = -1, .to_child = -1, .from_child = -1 };
	struct python_runtime runtime;
	struct python_layout layout;
	char error[512] = "", expected[32];
	int err;

	if (access(interpreter, X_OK) != 0) {
		printf("\n    note: %s is not installed here: skipped ", interpreter);
		return;
	}
	REQUIRE(child_start(NULL, interpreter, &child));
	REQUIRE(child_wait_for(&child, "ready"));
	err = python_runtime_find(child.pid, &runtime, error, sizeof(error));
	if (err)
		printf("\n    %s: %s ", interpreter, error);
	REQUIRE(err == 0);
	CU_ASSERT_EQUAL(runtime.minor, minor);
	CU_ASSERT_EQUAL(runtime.version_source, PYTHON_VERSION_FROM_FILE_NAME);
	err = python_layout_for(&runtime, &layout, error, sizeof(error));
	CU_ASSERT_EQUAL(err, -ENOTSUP);
	snprintf(expected, sizeof(expected), "Python 3.%d", minor);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, expected));
	CU_ASSERT_PTR_NOT_NULL(strstr(error, PYTHON_SUPPORTED_VERSIONS));
stop:
	child_stop(&child);
}

UNIT_TEST(python_layout, refuses_3_9)
{
	check_refused(PYENV_VERSIONS "3.9.18/bin/python3", 9);
}

UNIT_TEST(python_layout, refuses_3_8)
{
	check_refused(PYENV_VERSIONS "3.8.18/bin/python3", 8);
}

UNIT_TEST(python_layout, refuses_unknown_tables)
{
	struct python_layout layout;
	char error[512] = "";

	CU_ASSERT_EQUAL(python_layout_from_table(3, 9, &layout, error, sizeof(error)), -ENOTSUP);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "Python 3.9 is not supported"));
	CU_ASSERT_EQUAL(python_layout_from_table(3, 15, &layout, error, sizeof(error)), -ENOTSUP);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "Python 3.15 is not supported"));
	CU_ASSERT_EQUAL(python_layout_from_table(3, 12, &layout, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(layout.frame_previous, 8);
}

UNIT_TEST(python_layout, no_interpreter_in_this_process)
{
	struct python_runtime runtime;
	char error[512] = "";

	CU_ASSERT_EQUAL(python_runtime_find(getpid(), &runtime, error, sizeof(error)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "runs no CPython interpreter"));
}

static bool debug_offsets_of(const char *path, unsigned char *bytes)
{
	struct elf_symbol_location location;
	bool read;
	int fd;

	if (elf_symbol_find(path, "_PyRuntime", &location, NULL, 0) != 0)
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	read = pread(fd, bytes, PYTHON_DEBUG_OFFSETS_SIZE, (off_t)location.file_offset) ==
	       PYTHON_DEBUG_OFFSETS_SIZE;
	close(fd);
	return read;
}

/* A version's table and the interpreter's own _Py_DebugOffsets must say the same. */
static void check_debug_offsets_agree(const char *path, int minor)
{
	unsigned char bytes[PYTHON_DEBUG_OFFSETS_SIZE];
	struct python_layout table, parsed;
	char error[512] = "";

	if (access(path, R_OK) != 0) {
		printf("\n    note: %s is not installed here: skipped ", path);
		return;
	}
	CU_ASSERT_FATAL(debug_offsets_of(path, bytes));
	CU_ASSERT_EQUAL_FATAL(python_layout_from_table(3, minor, &table, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL_FATAL(python_layout_from_debug_offsets(bytes, sizeof(bytes), &parsed, error,
							       sizeof(error)),
			      0);
	CU_ASSERT_EQUAL(parsed.source, PYTHON_LAYOUT_FROM_DEBUG_OFFSETS_FILE);
	CU_ASSERT_EQUAL(parsed.runtime_interpreters_head, table.runtime_interpreters_head);
	CU_ASSERT_EQUAL(parsed.interpreter_next, table.interpreter_next);
	CU_ASSERT_EQUAL(parsed.interpreter_threads_head, table.interpreter_threads_head);
	CU_ASSERT_EQUAL(parsed.thread_next, table.thread_next);
	CU_ASSERT_EQUAL(parsed.thread_interpreter, table.thread_interpreter);
	CU_ASSERT_EQUAL(parsed.thread_frame, table.thread_frame);
	CU_ASSERT_EQUAL(parsed.thread_id, table.thread_id);
	CU_ASSERT_EQUAL(parsed.thread_native_id, table.thread_native_id);
	CU_ASSERT_EQUAL(parsed.frame_code, table.frame_code);
	CU_ASSERT_EQUAL(parsed.frame_previous, table.frame_previous);
	CU_ASSERT_EQUAL(parsed.frame_localsplus, table.frame_localsplus);
	CU_ASSERT_EQUAL(parsed.frame_owner, table.frame_owner);
	CU_ASSERT_EQUAL(parsed.code_filename, table.code_filename);
	CU_ASSERT_EQUAL(parsed.code_name, table.code_name);
	CU_ASSERT_EQUAL(parsed.code_qualified_name, table.code_qualified_name);
	CU_ASSERT_EQUAL(parsed.code_first_line, table.code_first_line);
	CU_ASSERT_EQUAL(parsed.code_argument_count, table.code_argument_count);
	CU_ASSERT_EQUAL(parsed.code_argument_names, table.code_argument_names);
	CU_ASSERT_EQUAL(parsed.object_type, table.object_type);
	CU_ASSERT_EQUAL(parsed.tuple_items, table.tuple_items);
	CU_ASSERT_EQUAL(parsed.tuple_size, table.tuple_size);
	CU_ASSERT_EQUAL(parsed.float_value, table.float_value);
	CU_ASSERT_EQUAL(parsed.long_size, table.long_size);
	CU_ASSERT_EQUAL(parsed.long_digits, table.long_digits);
	CU_ASSERT_EQUAL(parsed.unicode_state, table.unicode_state);
	CU_ASSERT_EQUAL(parsed.unicode_length, table.unicode_length);
	CU_ASSERT_EQUAL(parsed.unicode_ascii_data, table.unicode_ascii_data);
}

UNIT_TEST(python_layout, debug_offsets_agree_with_the_3_13_table)
{
	check_debug_offsets_agree(LIBPYTHON_3_13, 13);
}

/* Debian sid's python3.14 in the root tools/stacks/torch-root.sh sid builds. */
UNIT_TEST(python_layout, debug_offsets_agree_with_the_3_14_table)
{
	const char *root = getenv("TCHECK_TORCH214_ROOT");
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/usr/bin/python3.14",
		 root && root[0] ? root : "/var/cache/tcheck-bpf/sid-torch");
	check_debug_offsets_agree(path, 14);
}

static void set_value(unsigned char *bytes, size_t position, uint64_t value)
{
	memcpy(bytes + position, &value, sizeof(value));
}

UNIT_TEST(python_layout, debug_offsets_refuse_what_they_cannot_describe)
{
	unsigned char bytes[PYTHON_DEBUG_OFFSETS_SIZE], changed[PYTHON_DEBUG_OFFSETS_SIZE];
	struct python_layout layout;
	char error[512] = "";

	if (access(LIBPYTHON_3_13, R_OK) != 0) {
		printf("\n    note: %s is not installed here: skipped ", LIBPYTHON_3_13);
		return;
	}
	CU_ASSERT_FATAL(debug_offsets_of(LIBPYTHON_3_13, bytes));

	memcpy(changed, bytes, sizeof(bytes));
	set_value(changed, 16, 1); /* free_threaded */
	CU_ASSERT_EQUAL(python_layout_from_debug_offsets(changed, sizeof(changed), &layout, error,
							 sizeof(error)),
			-ENOTSUP);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "free-threaded"));

	memcpy(changed, bytes, sizeof(bytes));
	set_value(changed, 8, 0x030F00F0); /* version: 3.15.0 */
	CU_ASSERT_EQUAL(python_layout_from_debug_offsets(changed, sizeof(changed), &layout, error,
							 sizeof(error)),
			-ENOTSUP);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "Python 3.15 is not supported"));

	memcpy(changed, bytes, sizeof(bytes));
	changed[0] = 'y'; /* cookie */
	CU_ASSERT_EQUAL(python_layout_from_debug_offsets(changed, sizeof(changed), &layout, error,
							 sizeof(error)),
			-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "xdebugpy"));

	memcpy(changed, bytes, sizeof(bytes));
	set_value(changed, 184, 1u << 20); /* thread_state.current_frame, past the struct */
	CU_ASSERT_EQUAL(python_layout_from_debug_offsets(changed, sizeof(changed), &layout, error,
							 sizeof(error)),
			-EINVAL);

	CU_ASSERT_EQUAL(python_layout_from_debug_offsets(bytes, 100, &layout, error, sizeof(error)),
			-EINVAL);
}
