#!/bin/bash
# Bad input gets a clear sentence and a non-zero exit, never a crash.
source "$(dirname "$0")/lib.sh"
expect_error() {
	local want_status=$1 pattern=$2
	shift 2
	set +e
	"$@" >"$SCRATCH/out" 2>"$SCRATCH/err"
	local status=$?
	set -e
	[ "$status" -eq "$want_status" ] || fail "'$*' exited $status, expected $want_status: $(cat "$SCRATCH/err")"
	grep -q -- "$pattern" "$SCRATCH/err" || fail "'$*' said '$(cat "$SCRATCH/err")', expected /$pattern/"
}
expect_error 2 "--pid 999999: no such process" "$TCHECK" record -o "$SCRATCH/x.trace" --pid 999999
expect_error 2 "needs a process id" "$TCHECK" attach --pid abc
expect_error 2 "nothing to trace" "$TCHECK" record -o "$SCRATCH/x.trace"
expect_error 2 "needs an output file" "$TCHECK" record --pid 1
expect_error 2 "unknown command" "$TCHECK" frobnicate
expect_error 1 "cannot read the NCCL library /nonexistent/libnccl.so.2" \
	"$TCHECK" record -o "$SCRATCH/x.trace" --nccl-lib /nonexistent/libnccl.so.2 -- true
expect_error 1 "defines no NCCL function" \
	"$TCHECK" record -o "$SCRATCH/x.trace" --nccl-lib /bin/true -- true
# Not root: loading BPF is refused with what to do.
if id nobody >/dev/null 2>&1; then
	expect_error 1 "needs root" setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$TCHECK" record -o /tmp/never.trace -- true
fi
# Damaged traces.
printf 'not a trace at all' >"$SCRATCH/garbage.trace"
expect_error 2 "not a tcheck-bpf trace" "$TCHECK" dump "$SCRATCH/garbage.trace"
expect_error 2 "" "$TCHECK" dump "$SCRATCH/missing.trace"
"$TCHECK" --quiet record -o "$SCRATCH/good.trace" -- "$WORKLOAD" --ranks 2 --steps 5 \
	--log-dir "$SCRATCH/log"
size=$(stat -c %s "$SCRATCH/good.trace")
cp "$SCRATCH/good.trace" "$SCRATCH/flipped.trace"
# Flip every bit of a byte in the middle of the first chunk's payload (writing a fixed
# value would change nothing where the byte already holds it: -1 fields are all 0xff).
python3 - "$SCRATCH/flipped.trace" $((size / 3)) <<'PYTHON'
import sys
with open(sys.argv[1], "r+b") as trace:
    trace.seek(int(sys.argv[2]))
    byte = trace.read(1)[0]
    trace.seek(int(sys.argv[2]))
    trace.write(bytes([byte ^ 0xff]))
PYTHON
# A damaged chunk costs that chunk only: the rest reads, and the damage is said.
"$TCHECK" dump "$SCRATCH/good.trace" >"$SCRATCH/good.jsonl"
set +e
"$TCHECK" dump "$SCRATCH/flipped.trace" >"$SCRATCH/flipped.jsonl" 2>"$SCRATCH/err"
status=$?
set -e
[ "$status" -eq 0 ] || fail "a damaged trace must read past its damage, got exit $status: $(cat "$SCRATCH/err")"
grep -q "chunk .* at byte offset .*damaged bytes were skipped" "$SCRATCH/err" ||
	fail "the warning should name the damaged chunk and what was skipped: $(cat "$SCRATCH/err")"
read -r good_lines _ < <(wc -l "$SCRATCH/good.jsonl")
read -r flipped_lines _ < <(wc -l "$SCRATCH/flipped.jsonl")
# (A 5-step recording is nearly one chunk: what it loses is most of it.)
[ "$flipped_lines" -lt "$good_lines" ] ||
	fail "the damaged trace read $flipped_lines of $good_lines records"
head -c $((size - 7)) "$SCRATCH/good.trace" >"$SCRATCH/truncated.trace"
"$TCHECK" dump "$SCRATCH/truncated.trace" >/dev/null 2>"$SCRATCH/err" ||
	fail "a truncated trace must read up to its last complete chunk"
grep -qi "truncat\|cut" "$SCRATCH/err" || fail "a truncated trace must be reported: $(cat "$SCRATCH/err")"
# Outputs: nothing the tool did not create is removed or cut, nothing that is
# not a regular file is replaced, a failed write leaves what was there.
mknod "$SCRATCH/full" c 1 7 # /dev/full, private to this test
expect_error 4 "cannot write\|No space left" "$TCHECK" dump "$SCRATCH/good.trace" -o "$SCRATCH/full"
[ -c "$SCRATCH/full" ] || fail "dump -o DEVICE removed or replaced the device node"
# A trace that fails part-way: its second chunk uses a chunk flag no version knows.
python3 - "$SCRATCH/good.trace" "$SCRATCH/future.trace" <<'PYTHON'
import struct, sys, zlib
data = bytearray(open(sys.argv[1], "rb").read())
chunk = 24 + struct.unpack_from("<I", data, 16)[0]
chunk += 40 + struct.unpack_from("<I", data, chunk + 4)[0]
struct.pack_into("<I", data, chunk + 32, 0x80000000)
struct.pack_into("<I", data, chunk + 36, zlib.crc32(bytes(data[chunk:chunk + 36])))
open(sys.argv[2], "wb").write(data)
PYTHON
echo "the user's file" >"$SCRATCH/kept"
ln -s "$SCRATCH/kept" "$SCRATCH/link"
expect_error 2 "newer tcheck-bpf" "$TCHECK" dump "$SCRATCH/future.trace" -o "$SCRATCH/link"
[ -L "$SCRATCH/link" ] && [ "$(cat "$SCRATCH/kept")" = "the user's file" ] ||
	fail "a failed dump -o LINK removed the link or cut its target"
expect_error 2 "newer tcheck-bpf" "$TCHECK" dump "$SCRATCH/future.trace" -o "$SCRATCH/kept"
[ "$(cat "$SCRATCH/kept")" = "the user's file" ] || fail "a failed dump -o FILE cut the file"
"$TCHECK" dump "$SCRATCH/good.trace" -o "$SCRATCH/link" 2>/dev/null || fail "dump -o LINK failed"
[ -L "$SCRATCH/link" ] && cmp -s "$SCRATCH/kept" <("$TCHECK" dump "$SCRATCH/good.trace") ||
	fail "dump -o LINK must write the link's target and keep the link"
[ -z "$(find "$SCRATCH" -maxdepth 1 -name '.*.??????')" ] || fail "a temporary file was left behind"
"$TCHECK" dump "$SCRATCH/good.trace" -o - | cmp -s - <("$TCHECK" dump "$SCRATCH/good.trace") ||
	fail "dump -o - must write standard output"
[ ! -e "$SCRATCH/-" ] || fail "dump -o - wrote a file named -"
# record and attach -o onto a trace that exists refuse without --force with
# the table's usage status (2), before the command is started, and keep it;
# so does --max-size beside a piece of an earlier recording.
cp "$SCRATCH/good.trace" "$SCRATCH/keep.trace"
expect_error 2 "exists (give --force" "$TCHECK" record -o "$SCRATCH/keep.trace" -- \
	touch "$SCRATCH/started"
[ ! -e "$SCRATCH/started" ] || fail "record -o EXISTING started the command"
expect_error 2 "exists (give --force" "$TCHECK" attach -o "$SCRATCH/keep.trace" --pid $$ -d 1
cmp -s "$SCRATCH/good.trace" "$SCRATCH/keep.trace" || fail "record -o EXISTING changed the trace"
cp "$SCRATCH/good.trace" "$SCRATCH/rotated.trace.1"
expect_error 2 "piece of an earlier recording" "$TCHECK" record -o "$SCRATCH/rotated.trace" \
	--max-size 1M -- true
[ ! -e "$SCRATCH/rotated.trace" ] || fail "record --max-size beside an earlier piece wrote a trace"
"$TCHECK" --quiet record --force -o "$SCRATCH/keep.trace" -- true ||
	fail "record --force -o EXISTING failed"
! cmp -s "$SCRATCH/good.trace" "$SCRATCH/keep.trace" || fail "record --force did not replace"
(cd "$SCRATCH" && "$TCHECK" --quiet record --events - -o events.trace -- "$WORKLOAD" \
	--ranks 2 --steps 3 --log-dir "$SCRATCH/events-log" >"$SCRATCH/events.out")
[ ! -e "$SCRATCH/-" ] || fail "record --events - wrote a file named -"
# An output that is one of the command's inputs, or another of its outputs, is
# refused before anything is read or written: the trace, the rules and the
# command are left as they were.
cp "$SCRATCH/good.trace" "$SCRATCH/input.trace"
ln -sf "$SCRATCH/input.trace" "$SCRATCH/input-link.trace"
"$TCHECK" --quiet infer -o "$SCRATCH/input.json" "$SCRATCH/good.trace" ||
	fail "infer of the good trace failed"
cp "$SCRATCH/input.json" "$SCRATCH/input-copy.json"
expect_error 2 "-o .*input.trace is the trace this command reads" \
	"$TCHECK" dump "$SCRATCH/input.trace" -o "$SCRATCH/input.trace"
expect_error 2 "is the trace (.*input-link.trace) this command reads" \
	"$TCHECK" dump "$SCRATCH/input-link.trace" -o "$SCRATCH/input.trace"
expect_error 2 "-o .*input.trace is a trace this command reads" \
	"$TCHECK" infer -o "$SCRATCH/input.trace" "$SCRATCH/good.trace" "$SCRATCH/input.trace"
expect_error 2 "--perfetto .*input.trace is the trace this command reads" \
	"$TCHECK" diff "$SCRATCH/good.trace" "$SCRATCH/input.trace" --perfetto "$SCRATCH/input.trace"
expect_error 2 "--jsonl .*input.json is the --rules file this command reads" \
	"$TCHECK" check --rules "$SCRATCH/input.json" --jsonl "$SCRATCH/input.json" "$SCRATCH/good.trace"
expect_error 2 "--jsonl .*input.trace is a trace this command reads" \
	"$TCHECK" check --rules "$SCRATCH/input.json" --jsonl "$SCRATCH/input.trace" \
	"$SCRATCH/good.trace" "$SCRATCH/input.trace"
expect_error 2 "--events .*both.out is the file -o names" \
	"$TCHECK" record -o "$SCRATCH/both.out" --events "$SCRATCH/both.out" -- touch "$SCRATCH/started"
expect_error 2 "-o .*input.json is the --rules file this command reads" \
	"$TCHECK" record --force --rules "$SCRATCH/input.json" -o "$SCRATCH/input.json" -- \
	touch "$SCRATCH/started"
expect_error 2 "--events .*input.json is the --rules file this command reads" \
	"$TCHECK" agent --rules "$SCRATCH/input.json" --events "$SCRATCH/input.json"
printf 'events = %s\n' "$SCRATCH/agent.conf" >"$SCRATCH/agent.conf"
cp "$SCRATCH/agent.conf" "$SCRATCH/agent-copy.conf"
expect_error 2 "--events .*agent.conf is the --config file this command reads" \
	"$TCHECK" agent --config "$SCRATCH/agent.conf"
cmp -s "$SCRATCH/agent.conf" "$SCRATCH/agent-copy.conf" ||
	fail "agent --events on its own --config file changed the config"
[ ! -e "$SCRATCH/started" ] && [ ! -e "$SCRATCH/both.out" ] ||
	fail "record started its command, or wrote, with its outputs on one file"
cmp -s "$SCRATCH/good.trace" "$SCRATCH/input.trace" && [ -L "$SCRATCH/input-link.trace" ] &&
	cmp -s "$SCRATCH/input.json" "$SCRATCH/input-copy.json" ||
	fail "an output named on an input changed the input"
# One exit-status table, in the --help of every verb that reads traces; a
# report that cannot be written is status 4, not a result.
for verb in check "check --rules=RULES" diff infer dump; do
	# shellcheck disable=SC2086 # the verb is words
	grep -q "Exit status: 0 judged, nothing found; 1 findings; 2" <<<"$("$TCHECK" $verb --help | tr '\n' ' ')" ||
		fail "tcheck-bpf $verb --help lacks the exit-status table"
done
expect_error 4 "cannot write the report" \
	sh -c '"$1" diff --json "$2" "$2" >"$3"' sh "$TCHECK" "$SCRATCH/good.trace" "$SCRATCH/full"
"$TCHECK" --quiet record -o "$SCRATCH/crash.trace" -- "$WORKLOAD" --ranks 2 --steps 4 \
	--crash 1:2 --log-dir "$SCRATCH/crash-log" >/dev/null 2>&1 || true
status=0
"$TCHECK" check --json "$SCRATCH/crash.trace" >/dev/null 2>&1 || status=$?
[ "$status" -eq 1 ] || fail "check of a crash must exit 1 (findings), not $status"
expect_error 4 "cannot write the findings" \
	sh -c '"$1" check --json "$2" >"$3"' sh "$TCHECK" "$SCRATCH/crash.trace" "$SCRATCH/full"
# Every row of docs/bad-input.md's table: each input made, its command run,
# the exit status and the first line of standard error as the table says.
python3 "$ROOT/tests/e2e/bad_input_cases.py" --check "$ROOT/docs/bad-input.md" --tcheck "$TCHECK" ||
	fail "docs/bad-input.md and the tool disagree (see above)"
