#!/bin/bash
# The probes a training step hits sit on instructions the kernel emulates,
# not ones it single-steps out of line (a second trap per hit): the frame
# evaluator of the interpreter, the record_function scope sites, the backward
# pass's entry and the operators, as the recorder lists them with -vv,
# decoded here with objdump from the files' own bytes. No probe at all sits on
# an endbr64 that an emulated instruction follows: Debian trixie's and sid's
# python3 and torch are built with CET and open every function with one;
# Debian 12's builds open with push.
source "$(dirname "$0")/lib.sh"
torch_stack
command -v objdump >/dev/null || skip "objdump (binutils) is not installed"
host_root=$TORCH_STACK_ROOT
# shellcheck disable=SC2086 # the interpreter's command is words
"$TCHECK" -vv record -o "$SCRATCH/run.trace" --python --torch-op add_ --torch-op mul_ -- \
	$TORCH_PYTHON "$ROOT/tests/workloads/python/train_cpu.py" --steps 3 \
	--log "$SCRATCH/run.jsonl" >/dev/null 2>"$SCRATCH/record.err" ||
	fail "recording failed: $(grep -v '^libbpf' "$SCRATCH/record.err" | tail -5)"

python3 - "$SCRATCH/record.err" "$host_root" <<'PY' || fail "a probe sits where the kernel single-steps (above)"
import os, re, subprocess, sys
log, host_root = open(sys.argv[1]).read(), sys.argv[2]

def instruction(path, offset):
    """objdump's mnemonic and text for the instruction at a file offset."""
    # The maps of a chrooted process name host paths; a listing may name its own.
    file = path if os.path.exists(path) else host_root + path
    out = subprocess.run(["objdump", "-D", "-b", "binary", "-m", "i386:x86-64",
                          "--start-address", hex(offset), "--stop-address", hex(offset + 16),
                          file], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        fields = line.split("\t")
        if len(fields) >= 3 and fields[0].strip().rstrip(":") == format(offset, "x"):
            return fields[2].split()[0], fields[2].strip()
    raise AssertionError(f"objdump decoded nothing at {path}+{offset:#x}")

# What the kernel's uprobes emulate on x86-64: a push, a jump, a call, a one-byte nop.
EMULATED = re.compile(r"^(push|jmp|call|j[a-z]{1,3}|nop)$")
sites = []
evaluator = re.search(r"probed Python \S+ frame evaluator in (\S+) at file offset (0x[0-9a-f]+)", log)
assert evaluator, "the recorder did not say where it probed the frame evaluator"
sites.append(("frame evaluator", evaluator.group(1), int(evaluator.group(2), 16)))
library = re.search(r"^library +(\S+)$", log, re.M)
assert library, "the recorder listed no torch probe sites (-vv)"
for role, offset in re.findall(r"^(\S[^\n]*?) +offset (0x[0-9a-f]+) \(address", log, re.M):
    sites.append((role.strip(), library.group(1), int(offset, 16)))
assert any(role.startswith("add_") for role, _, _ in sites), "no operator site listed"
# Hit in every step: the evaluator, the scopes, the backward pass, the operators (the
# rest: process groups and collectives, once per call of their own).
per_step = re.compile(r"^(frame evaluator|enter|key|exit|backward|[a-z_0-9]+)$")
on_pad, stepped = [], []
for role, path, offset in sites:
    mnemonic, text = instruction(path, offset)
    print(f"{role:28s} {path}+{offset:#x}: {text}")
    if mnemonic == "endbr64":
        if EMULATED.match(instruction(path, offset + 4)[0]):
            on_pad.append(role)
    elif per_step.match(role) and not EMULATED.match(mnemonic):
        stepped.append(role)
assert not on_pad, f"on an endbr64 before an emulated instruction: {on_pad}"
assert not stepped, f"hit every step, single-stepped: {stepped}"
print(f"{len(sites)} probe sites: every one a step hits emulated, none left on an endbr64 it could pass")
PY
