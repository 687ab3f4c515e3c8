#!/bin/bash
# The Perfetto export of a torch CPU training run: a "steps" track per
# process with one slice per step the script's own log counts (the step
# advances as each optimizer.step() ends), the operators asked for with
# --torch-op as moments on their thread carrying their arguments (shape,
# alpha) and step, each module call carrying its module's class as the
# script's hooks saw it, and the process named in the trace and on its track
# by the command that was traced, not by tcheck-bpf's own command line, from
# its first record on.
source "$(dirname "$0")/lib.sh"
torch_stack
script="$ROOT/tests/workloads/python/train_cpu.py"
"$TCHECK" --quiet record -o "$SCRATCH/t.trace" --python --torch-op add_ -- $TORCH_PYTHON \
	"$script" --steps 5 --eval-every 3 --log "$SCRATCH/train.jsonl" >/dev/null 2>"$SCRATCH/record.err" ||
	fail "record failed: $(cat "$SCRATCH/record.err")"
"$TCHECK" dump "$SCRATCH/t.trace" --format perfetto -o "$SCRATCH/t.json" || fail "dump --format perfetto failed"
"$TCHECK" dump "$SCRATCH/t.trace" >"$SCRATCH/t.jsonl" || fail "dump failed"
python3 - "$SCRATCH/t.json" "$SCRATCH/t.jsonl" "$SCRATCH/train.jsonl" \
	"$(echo $TORCH_PYTHON "$script" --steps 5 --eval-every 3 --log "$SCRATCH/train.jsonl")" <<'PY' ||
import json, sys
document, records, log_path, command = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4]
events = document["traceEvents"]
log = [json.loads(line) for line in open(log_path)]
optimizer_steps = sum(1 for r in log if r.get("kind") == "api" and r.get("call") == "optimizer.step()")
assert optimizer_steps >= 5, optimizer_steps

# The first record of the traced command already names it.
first = next(json.loads(line) for line in open(records) if '"kind":"process"' in line.replace(" ", ""))
assert first["command"] == command, (first["command"], command)

# One step slice per step, in order, back to back, none overlapping.
steps = [e for e in events if e.get("cat") == "step"]
names = [e["name"] for e in steps]
expected = [f"step {n}" for n in range(len(names))]
assert names == expected, names
assert optimizer_steps <= len(steps) <= optimizer_steps + 1, (len(steps), optimizer_steps)
for before, after in zip(steps, steps[1:]):
    assert abs(before["ts"] + before["dur"] - after["ts"]) < 0.002, (before, after)
track = {(e["pid"], e["tid"]) for e in steps}
assert len(track) == 1, track
# That process's track is named by the command it ran: the traced command
# (on a chrooted stack, the Python that in-root.sh starts after its "--").
python_command = command.split(" -- ", 1)[-1]
process_names = [e["args"]["name"] for e in events if e["ph"] == "M"
                 and e["name"] == "process_name" and e["pid"] == next(iter(track))[0]]
assert process_names and process_names[-1].endswith(f": {python_command}"), (process_names, command)
assert any(e["ph"] == "M" and e["name"] == "thread_name" and (e["pid"], e["tid"]) in track
           and e["args"]["name"] == "steps" for e in events)

# The operators: moments with their arguments, each inside the step it names.
ops = [e for e in events if e.get("cat") == "torch_op"]
adds = [e for e in ops if e["name"].startswith("aten::add_")]
assert adds, sorted({e["name"] for e in ops})
for e in adds:
    assert e["ph"] == "i" and e["s"] == "t" and "dur" not in e, e
    assert any(k.startswith("shape:") for k in e["args"]["arguments"]), e
    slice_ = next(s for s in steps if s["args"]["step"] == e["args"]["step"])
    assert slice_["ts"] - 0.002 <= e["ts"] <= slice_["ts"] + slice_["dur"] + 0.002, (e, slice_)
assert any("arg:alpha" in e["args"]["arguments"] for e in adds), adds[:2]

# Module calls keep torch's name and carry their module's class as an
# argument: the classes the script's pre-hooks saw, in their order.
CALL_IMPL = "torch.nn.modules.module.Module._call_impl"
want_classes = [r["class"].rsplit(".", 1)[-1] for r in sorted(log, key=lambda r: r.get("seq", 1 << 62))
                if r.get("kind") == "module" and r["phase"] == "enter"]
got_classes = [e["args"].get("arguments", {}).get("module")
               for e in sorted(events, key=lambda e: e.get("ts", 0))
               if e.get("cat") == "python" and e["name"] == CALL_IMPL]
assert want_classes and want_classes == got_classes, (want_classes[:8], got_classes[:8])
print(f"{len(steps)} step slices for {optimizer_steps} optimizer steps; {len(adds)} add_ operators; "
      f"{len(got_classes)} module calls named by class ({', '.join(sorted(set(got_classes)))})")
PY
	fail "the Perfetto export of the torch run is wrong (above)"
