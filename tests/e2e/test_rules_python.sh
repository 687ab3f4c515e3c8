#!/bin/bash
# A Python-level silent error end to end, as the README says to work: rules
# inferred from two healthy reference programs of other shapes (a CNN with
# SGD and evaluation passes, an MLP with Adam, warm-up and clipping) flag a
# loop that stops calling optimizer.zero_grad() at the step it stops, and
# nothing on the loop that keeps calling it (another script than either).
# No rule is learned on the module classes and paths the references' calls carry.
source "$(dirname "$0")/lib.sh"
torch_stack
PY="$ROOT/tests/workloads/python"
references=()
for reference in ref_cnn_sgd ref_mlp_adam; do
	"$TCHECK" --quiet record -o "$SCRATCH/$reference.trace" --python -- $TORCH_PYTHON \
		"$PY/pipelines/$reference.py" --steps 8 >/dev/null || fail "reference run $reference"
	references+=("$SCRATCH/$reference.trace")
done
"$TCHECK" --quiet infer -o "$SCRATCH/rules.json" "${references[@]}" || fail "infer"
# The references' module calls carry their module's class (the CNN's Conv2d)
# and path: both are the model's own, so no rule is learned on them.
"$TCHECK" dump "$SCRATCH/ref_cnn_sgd.trace" --calls-only >"$SCRATCH/ref_cnn_sgd.jsonl" ||
	fail "dump of the CNN reference failed"
grep -q '"args":{"module":"Conv2d","module_path":"' "$SCRATCH/ref_cnn_sgd.jsonl" ||
	fail "the CNN reference's module calls do not name their Conv2d modules and paths"
if grep -q '"arg:module"\|"arg:module_path"' "$SCRATCH/rules.json"; then
	fail "a rule was learned on the references' module classes or paths: $(grep -c '"arg:module' "$SCRATCH/rules.json")"
fi
for variant in fixed buggy; do
	bug=()
	[ $variant = buggy ] && bug=(--missing-zero-grad 5)
	# Checked live too, as a user deploys the rules: its events are compared below.
	"$TCHECK" --quiet record -o "$SCRATCH/$variant.trace" --python --rules "$SCRATCH/rules.json" \
		--events "$SCRATCH/$variant-live.jsonl" -- $TORCH_PYTHON \
		"$PY/silent_zero_grad.py" --steps 10 "${bug[@]}" --log "$SCRATCH/$variant.json" ||
		fail "$variant run"
	status=0
	"$TCHECK" --quiet check --rules "$SCRATCH/rules.json" --jsonl "$SCRATCH/$variant.jsonl" \
		"$SCRATCH/$variant.trace" >"$SCRATCH/$variant.txt" || status=$?
	echo "$status" >"$SCRATCH/$variant.status"
done
[ "$(cat "$SCRATCH/fixed.status")" = 0 ] || fail "violations on the fixed loop: $(cat "$SCRATCH/fixed.txt")"
[ "$(cat "$SCRATCH/buggy.status")" = 1 ] || fail "the missing zero_grad was not flagged"
python3 - "$SCRATCH/buggy.jsonl" "$SCRATCH/buggy.json" <<'PY' || fail "wrong violations: $(cat "$SCRATCH/buggy.txt")"
import json, sys
violations = [json.loads(line) for line in open(sys.argv[1])]
truth = json.load(open(sys.argv[2]))
missing = [s for s in range(truth["steps"]) if s not in truth["zero_grad_steps"]]
zero_grad = [v for v in violations if v["relation"] == "APISequence" and "zero_grad" in v["invariant"]]
assert zero_grad, violations
# The first is reported for the step zero_grad first went missing.
assert min(v["step"] for v in zero_grad) == missing[0], (zero_grad[0], missing)
assert {v["step"] for v in zero_grad} <= set(missing), ({v["step"] for v in zero_grad}, missing)
PY
same_violations "$SCRATCH/buggy-live.jsonl" "$SCRATCH/buggy.jsonl" 1 ||
	fail "live and offline checking of the buggy run differ"
same_violations "$SCRATCH/fixed-live.jsonl" "$SCRATCH/fixed.jsonl" 0 ||
	fail "live and offline checking of the fixed run differ"
echo "a missing zero_grad is flagged at the step it goes missing, none on the healthy loop; live and offline agree"
