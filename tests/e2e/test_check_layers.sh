#!/bin/bash
# tools/check-layers.py (run by make lint) passes on the tree as it is, and
# fails, naming the file and the folder, when a source includes a folder its
# row of docs/architecture.md does not allow, or when a row allows a folder
# none of its sources includes.
source "$(dirname "$0")/lib.sh"
checker="$ROOT/tools/check-layers.py"
out=$(python3 "$checker" "$ROOT" 2>&1) || fail "the tree itself fails: $out"

copy="$SCRATCH/tree"
mkdir -p "$copy"
cp -r "$ROOT/docs" "$ROOT/user" "$ROOT/infer" "$ROOT/bpf" "$ROOT/include" "$copy/"
# export/ reaching up into diagnose/: a dependency the table does not allow.
echo '#include "diagnose/hang_detector.h"' >>"$copy/user/export/export_jsonl.c"
if out=$(python3 "$checker" "$copy" 2>&1); then
	fail "an include the table does not allow passed"
fi
grep -q 'user/export/export_jsonl.c includes diagnose/' <<<"$out" ||
	fail "the disallowed include is not named: $out"

# A row allowing a folder nothing includes is drift too.
cp "$ROOT/user/export/export_jsonl.c" "$copy/user/export/export_jsonl.c"
sed -i 's/TrainCheck reader | `base\/`, `model\/` |/TrainCheck reader | `base\/`, `model\/`, `probe\/` |/' \
	"$copy/docs/architecture.md"
if out=$(python3 "$checker" "$copy" 2>&1); then
	fail "a row allowing a folder nothing includes passed"
fi
grep -q 'the row of user/trace/ in docs/architecture.md allows probe/' <<<"$out" ||
	fail "the unused allowance is not named: $out"
echo ok
