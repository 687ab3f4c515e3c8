#!/bin/bash
# A module call carries, beside its class, its attribute path in the model
# ("Encoder.layers.1.attn.proj": named_modules()'s name behind the top
# module's class), read from the traced process's _modules dicts, from the
# first forward pass on. The truth is the workload's own log: its
# named_modules() and, from a forward pre-hook on every module, each module
# call in order, for a nested model (a ModuleList of blocks, each with a
# nested attribute and an nn.Sequential) and a loss module beside it. The
# dump's JSON lines and the Perfetto export both carry it. Attached to the
# same program mid-run (calls open since before the probes), every path given
# is one named_modules() has for that class: an inner module entered after
# the probes is not taken for the top of its tree.
source "$(dirname "$0")/lib.sh"
torch_stack
script="$ROOT/tests/workloads/python/module_paths.py"
"$TCHECK" --quiet record -o "$SCRATCH/t.trace" --python -- $TORCH_PYTHON "$script" --steps 3 \
	--log "$SCRATCH/log.jsonl" >/dev/null 2>"$SCRATCH/record.err" ||
	fail "record failed: $(cat "$SCRATCH/record.err")"
"$TCHECK" dump "$SCRATCH/t.trace" >"$SCRATCH/t.jsonl" || fail "dump failed"
"$TCHECK" dump "$SCRATCH/t.trace" --format perfetto -o "$SCRATCH/t.json" ||
	fail "dump --format perfetto failed"
python3 - "$SCRATCH/log.jsonl" "$SCRATCH/t.jsonl" "$SCRATCH/t.json" <<'PY' ||
import json, sys
CALL_IMPL = "torch.nn.modules.module.Module._call_impl"
log = [json.loads(line) for line in open(sys.argv[1])]
def path(record):
    return record["top"] + ("." + record["name"] if record["name"] else "")
named = {path(r): r["class"] for r in log if r["kind"] == "named_module"}
want = [(r["class"], path(r)) for r in log if r["kind"] == "call"]
assert any(".layers.2.attn.proj" in p for _, p in want), want[:8]

trace = [json.loads(line) for line in open(sys.argv[2])]
calls = sorted((t for t in trace if t.get("kind") == "py" and t["name"] == CALL_IMPL),
               key=lambda t: t["ts_ns"])
got = [(t["args"].get("module"), t["args"].get("module_path")) for t in calls]
assert got == want, [(g, w) for g, w in zip(got, want) if g != w][:6] or (len(got), len(want))
for module_class, module_path in got:
    assert named[module_path] == module_class, (module_path, module_class)

events = json.load(open(sys.argv[3]))["traceEvents"]
slices = sorted((e for e in events if e.get("cat") == "python" and e["name"] == CALL_IMPL),
                key=lambda e: e["ts"])
shown = [(e["args"]["arguments"].get("module"), e["args"]["arguments"].get("module_path"))
         for e in slices]
assert shown == want, (len(shown), len(want), shown[:4])
print(f"{len(got)} module calls placed as named_modules() names them, "
      f"{len({p for _, p in got})} paths, in the dump and the Perfetto export")
PY
	fail "module paths differ from the workload's named_modules() (above)"

# Paced, so that it still runs when the attach comes (torch 2.14 runs the
# unpaced 100000 steps in a few seconds).
$TORCH_PYTHON "$script" --steps 100000 --step-sleep-ms 5 --log "$SCRATCH/long.jsonl" >/dev/null &
trainer=$!
BACKGROUND_PIDS+=("$trainer")
wait_for_lines "$SCRATCH/long.jsonl" 1 '"kind": "step"' 120
"$TCHECK" --quiet record -o "$SCRATCH/attach.trace" --pid "$trainer" --python --duration 2 ||
	fail "record --pid failed"
kill "$trainer" || fail "the workload ended before the attach did: $(tail -c 300 "$SCRATCH/long.jsonl")"
"$TCHECK" dump "$SCRATCH/attach.trace" --calls-only >"$SCRATCH/attach.jsonl" || fail "dump failed"
python3 - "$SCRATCH/long.jsonl" "$SCRATCH/attach.jsonl" <<'PY' ||
import json, sys
CALL_IMPL = "torch.nn.modules.module.Module._call_impl"
named = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["kind"] == "named_module":
        named[r["top"] + ("." + r["name"] if r["name"] else "")] = r["class"]
calls = [t for t in map(json.loads, open(sys.argv[2])) if t.get("name") == CALL_IMPL]
placed = [t["args"] for t in calls if "module_path" in t["args"]]
for args in placed:
    assert named.get(args["module_path"]) == args["module"], args
assert calls and len(placed) >= 0.9 * len(calls), (len(placed), len(calls))
print(f"attached mid-run: {len(placed)} of {len(calls)} module calls placed, each as named_modules() names it")
PY
	fail "a module path of the attached run is not the program's (above)"
