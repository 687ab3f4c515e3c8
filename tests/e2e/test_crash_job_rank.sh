#!/bin/bash
# A rank that dies at once, before the recorder has handled its exec notice
# and while /proc/PID/environ is already gone, keeps its job rank: the exec
# probe reads RANK, LOCAL_RANK and WORLD_SIZE from the new image's
# environment as it starts. The launcher's own log (each child's pid and the
# RANK it was given) is the truth; the crash lines, `check --json` and the
# trace's process records must agree with it.
source "$(dirname "$0")/lib.sh"
LOG="$SCRATCH/launched"
# 20 KB of other variables first: RANK lies past many of the probe's reads.
PADDING=$(head -c 20000 /dev/zero | tr '\0' x)
cat >"$SCRATCH/launcher.sh" <<'SH'
#!/bin/sh
# Six ranks that crash at once, one that exits 3, one with no RANK and one
# whose RANK is not a number: each writes "pid rank" and dies.
log=$1
for rank in 0 1 2 3 4 5; do
	RANK=$rank LOCAL_RANK=$((rank % 2)) WORLD_SIZE=6 sh -c 'echo "$$ $RANK" >>"$0"; kill -SEGV $$' "$log" &
done
RANK=6 WORLD_SIZE=6 sh -c 'echo "$$ 6" >>"$0"; exit 3' "$log" &
env -u RANK sh -c 'echo "$$ none" >>"$0"; kill -SEGV $$' "$log" &
RANK=2x sh -c 'echo "$$ none" >>"$0"; kill -SEGV $$' "$log" &
wait
exit 0
SH
status=0
env -u RANK PADDING="$PADDING" "$TCHECK" record -o "$SCRATCH/trace" -- \
	sh "$SCRATCH/launcher.sh" "$LOG" >"$SCRATCH/out" 2>&1 || status=$?
[ "$status" = 0 ] || fail "record exited $status: $(tail -5 "$SCRATCH/out")"
[ "$(wc -l <"$LOG")" = 9 ] || fail "the launcher started $(wc -l <"$LOG") of 9 children"
"$TCHECK" check --json "$SCRATCH/trace" >"$SCRATCH/check.jsonl" 2>"$SCRATCH/check.err" || true
"$TCHECK" dump "$SCRATCH/trace" >"$SCRATCH/dump.jsonl" || fail "dump"
python3 - "$LOG" "$SCRATCH/out" "$SCRATCH/check.jsonl" "$SCRATCH/dump.jsonl" <<'PY' ||
import json, re, sys
truth = {}
for line in open(sys.argv[1]):
    pid, rank = line.split()
    truth[int(pid)] = None if rank == "none" else int(rank)
said = {}
for line in open(sys.argv[2]):
    m = re.search(r"crash: process (\d+) \((job rank (\d+)|no job rank)\) (died|exited)", line)
    if m:
        said[int(m.group(1))] = int(m.group(3)) if m.group(3) else None
assert said == truth, ("crash lines", said, "launcher", truth)
crashes = {c["pid"]: c["job_rank"] for c in map(json.loads, open(sys.argv[3]))
           if c.get("kind") == "crash"}
assert crashes == truth, ("check --json", crashes, "launcher", truth)
last = {}
for r in map(json.loads, open(sys.argv[4])):
    if r.get("kind") == "process" and r["pid"] in truth:
        last[r["pid"]] = r
for pid, rank in truth.items():
    assert last[pid]["rank"] == rank, (pid, rank, last[pid])
    if rank is not None and rank < 6:
        assert last[pid]["local_rank"] == rank % 2 and last[pid]["world_size"] == 6, last[pid]
print(f"{len(truth)} children: each crash names the job rank its launcher gave it")
PY
	fail "job ranks of ranks that died at once"
echo "ranks that die before their exec is handled keep their job rank"
