#!/bin/bash
# What record --python reads of the tensors the optimizer updates, against
# the program's own log: for every step and parameter that requires grad,
# the update operator (SGD's add_ with alpha -lr, in parameter order) names
# the parameter's dtype and sizes as the program logged them ("Float[5, 6]"),
# that it requires grad, and a digest equal to the one computed here from
# the bytes the program logged just before its optimizer's step (FNV-1a over
# the first and last 64 bytes of the storage, or all of a smaller one, then
# its size; the upper 48 bits); the forward's reads of the frozen weight say
# it does not require grad, those of the trained one that it does; the
# evaluation forwards the program runs under torch.no_grad() and under
# torch.inference_mode() after each step read them with autograd off
# (grad_mode:weight False), the training forward with it on (no such field),
# as the program's own torch.is_grad_enabled() said in each; the weight each
# forward computes from the first layer's is read as one autograd computes
# (grad_fn:weight True) where the program saw it have a grad_fn, and without
# the field where not; no contents said unread. All of it while another recorder has its probes in the same torch
# libraries (another job on the node): the kernel writes their breakpoints
# into every mapping of a probed file, the recorder's own read-only view of
# the code included.
source "$(dirname "$0")/lib.sh"
torch_stack
SCRIPT="$ROOT/tests/workloads/python/tensor_contents.py"
# The other job: evaluations under inference_mode() until told to stop.
cat >"$SCRATCH/other_job.py" <<EOF
import os, time, torch
model = torch.nn.Linear(4, 4)
while not os.path.exists("$SCRATCH/stop"):
    with torch.inference_mode():
        model(torch.randn(2, 4))
    time.sleep(0.01)
EOF
"$TCHECK" -v record -o "$SCRATCH/other.trace" --python -- $TORCH_PYTHON "$SCRATCH/other_job.py" \
	>/dev/null 2>"$SCRATCH/other.err" &
OTHER=$!
BACKGROUND_PIDS+=("$OTHER")
wait_for_lines "$SCRATCH/other.err" 1 "calls of AutogradState::set_tls_state" 120
"$TCHECK" record -o "$SCRATCH/t.trace" --python -- $TORCH_PYTHON "$SCRIPT" --steps 4 \
	--log "$SCRATCH/contents.jsonl" >"$SCRATCH/out" 2>"$SCRATCH/record.err" ||
	fail "traced run failed: $(cat "$SCRATCH/out" "$SCRATCH/record.err")"
if grep -q "could not be read\|device memory" "$SCRATCH/record.err"; then
	fail "contents said unread: $(cat "$SCRATCH/record.err")"
fi
touch "$SCRATCH/stop"
wait "$OTHER" || fail "the other recorder failed: $(tail -5 "$SCRATCH/other.err")"
"$TCHECK" dump --calls-only "$SCRATCH/t.trace" >"$SCRATCH/calls.jsonl"
python3 - "$SCRATCH/contents.jsonl" "$SCRATCH/calls.jsonl" <<'PY' || fail "the trace's tensors differ from the program's log"
import collections, json, sys
FNV_BASIS, FNV_PRIME, MASK = 0xcbf29ce484222325, 0x100000001b3, (1 << 64) - 1
def fold(value, words):
    for word in words:
        value = ((value ^ word) * FNV_PRIME) & MASK
    return value
def words(data):
    data = data.ljust(64, b"\0")
    return [int.from_bytes(data[i:i + 8], "little") for i in range(0, 64, 8)]
def digest(entry):
    head, tail = bytes.fromhex(entry["head"]), bytes.fromhex(entry["tail"])
    value = fold(FNV_BASIS, words(head))
    if entry["nbytes"] >= 64:
        value = fold(value, words(tail))
    return fold(value, [entry["nbytes"]]) >> 16
DTYPES = {"torch.float32": "Float", "torch.int64": "Long", "torch.float64": "Double"}
logged = collections.defaultdict(list)
forwards = []
for line in open(sys.argv[1]):
    entry = json.loads(line)
    if "forward" in entry:
        forwards.append(entry)
    else:
        logged[entry["step"]].append(entry)
calls = [json.loads(line) for line in open(sys.argv[2])]
updates = collections.defaultdict(list)
for c in calls:
    if c["kind"] == "torch_op" and c["name"] == "aten::add_.Tensor" and c["args"].get("arg:alpha") == -0.1:
        updates[c["step"]].append(c)
assert sorted(logged) == sorted(updates) == [0, 1, 2, 3], (sorted(logged), sorted(updates))
checked = 0
for step, entries in logged.items():
    entries = sorted((e for e in entries if e["requires_grad"]), key=lambda e: e["position"])
    ops = sorted(updates[step], key=lambda c: c["ts_ns"])
    assert len(ops) == len(entries), (step, len(ops), len(entries))
    for entry, op in zip(entries, ops):
        shape = "{}[{}]".format(DTYPES[entry["dtype"]], ", ".join(map(str, entry["sizes"])))
        assert op["args"].get("shape:self") == shape, (step, entry["position"], op["args"], shape)
        assert op["args"].get("requires_grad:self") is True, op["args"]
        assert op["args"].get("digest:self") == digest(entry), (step, entry["position"], op["args"], digest(entry))
        checked += 1
# The forward reads both Linear weights: the frozen one (5 -> 2) says so.
reads = collections.defaultdict(set)
for c in calls:
    if c["kind"] == "torch_op" and c["name"] == "aten::linear":
        reads[c["args"].get("shape:weight")].add(c["args"].get("requires_grad:weight"))
# The computed one (3 -> 5) has no requires_grad flag of its own, a leaf's.
assert reads == {"Float[5, 6]": {True}, "Float[2, 5]": {False}, "Float[3, 5]": {False}}, dict(reads)
# In time order, three reads of each forward (the first layer, the computed weight, the last
# layer), autograd as the program saw it: on in the training forward (no field), off under
# no_grad() and under inference_mode().
assert [f["forward"] for f in forwards] == ["training", "no_grad", "inference_mode"] * 4, forwards
expected = [None if f["grad_enabled"] else False for f in forwards for _ in range(3)]
assert expected == [None] * 3 + [False] * 6 + ([None] * 3 + [False] * 6) * 3, expected
linear_reads = sorted((c for c in calls if c["kind"] == "torch_op" and c["name"] == "aten::linear"),
                      key=lambda c: c["ts_ns"])
modes = [c["args"].get("grad_mode:weight") for c in linear_reads]
assert modes == expected, (modes, expected)
# A grad_fn where the program saw one: the computed weight's read in the training forwards only.
computed = [c["args"].get("grad_fn:weight") for c in linear_reads
            if c["args"].get("shape:weight") == "Float[3, 5]"]
assert computed == [True if f["computed_grad_fn"] else None for f in forwards], computed
assert computed == [True, None, None] * 4, computed
assert not any("grad_fn:weight" in c["args"] for c in linear_reads
               if c["args"].get("shape:weight") != "Float[3, 5]"), "a leaf read as computed"
# The parameters change from step to step, and so do their digests.
assert len({op["args"]["digest:self"] for ops in updates.values() for op in ops}) == checked
print("{} updates: shapes and digests as the program logged them".format(checked))
PY
