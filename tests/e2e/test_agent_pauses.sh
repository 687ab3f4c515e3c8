#!/bin/bash
# The agent through healthy pauses of the NCCL test double in blocking mode
# (as gloo's calls block): rank 1 writes a checkpoint file for 6 s every 20
# steps (--checkpoint 1:20:6000) while rank 0 waits inside its all-reduce.
# Scraped every half second, the agent must export rank 1's pause in
# progress (doing file_io, for no longer than the checkpoint the workload
# logged), none for rank 0, count each logged checkpoint once in
# tcheck_pauses_total, and report no hang.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip "curl is not installed"
port=$(free_port 19600 19700)
events="$SCRATCH/events.jsonl"
mkdir -p "$SCRATCH/job" "$SCRATCH/scrapes"
"$TCHECK" agent --listen "127.0.0.1:$port" --events "$events" --select "$SCRATCH/job" \
	--duration 90 >"$SCRATCH/agent.log" 2>&1 &
BACKGROUND_PIDS+=($!)
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/metrics" >/dev/null && break
	sleep 0.1
done
NCCL_DOUBLE_BLOCKING=1 LD_LIBRARY_PATH="$TEST_BIN/lib" "$WORKLOAD" --ranks 2 --steps 60 \
	--step-sleep-ms 60 --checkpoint 1:20:6000 --log-dir "$SCRATCH/job" \
	--wait-file "$SCRATCH/job/go" >"$SCRATCH/job.out" 2>&1 &
job=$!
BACKGROUND_PIDS+=("$job")
for _ in $(seq 200); do
	[ "$(grep -c '"event":"attached"' "$events" 2>/dev/null)" -ge 3 ] && break
	sleep 0.1
done
[ "$(grep -c '"event":"attached"' "$events")" -ge 3 ] ||
	fail "the agent did not find the job's processes: $(cat "$SCRATCH/agent.log")"
touch "$SCRATCH/job/go"
for i in $(seq 120); do
	curl -sf "http://127.0.0.1:$port/metrics" >"$SCRATCH/scrapes/$i.prom" || true
	kill -0 "$job" 2>/dev/null || break
	sleep 0.5
done
wait "$job" || fail "the job exited $?: $(tail -3 "$SCRATCH/job.out")"
cat >"$SCRATCH/pauses.py" <<'PY'
import glob, json, os, re, sys
scratch = sys.argv[1]

def series(path, name):
    found = []
    for line in open(path):
        match = re.match(name + r'\{(.*)\} (\S+)$', line)
        if match:
            found.append((dict(re.findall(r'(\w+)="([^"]*)"', match.group(1))), float(match.group(2))))
    return found

checkpoints = [json.loads(l) for l in open(os.path.join(scratch, "job", "rank-1.checkpoints"))]
assert len(checkpoints) == 2, ("the workload logged", checkpoints)
longest = max(c["end_ns"] - c["start_ns"] for c in checkpoints) / 1e9
in_progress = []
for path in glob.glob(os.path.join(scratch, "scrapes", "*.prom")):
    for labels, value in series(path, "tcheck_pause_in_progress_seconds"):
        in_progress.append((labels["rank"], labels["doing"], value))
assert in_progress, "no pause in progress was ever exported"
assert {(r, d) for r, d, _ in in_progress} == {("1", "file_io")}, in_progress
peak = max(v for _, _, v in in_progress)
assert 0 < peak <= longest + 1.0, (peak, longest)
final = os.path.join(scratch, "final.prom")
assert not series(final, "tcheck_pause_in_progress_seconds"), "a pause still in progress after the job"
counted = {(l["rank"], l["doing"]): v for l, v in series(final, "tcheck_pauses_total")}
assert counted == {("1", "file_io"): float(len(checkpoints))}, (counted, len(checkpoints))
findings = {l["kind"]: v for l, v in series(final, "tcheck_findings_total")}
assert findings.get("hang", 0) == 0, findings
print("rank 1 in a file_io pause for up to {:.1f} s (checkpoints {:.1f} s), {} pauses counted, "
      "no hang".format(peak, longest, len(checkpoints)))
PY
scrape_and_check() {
	curl -sf "http://127.0.0.1:$port/metrics" >"$SCRATCH/final.prom" || return 1
	python3 "$SCRATCH/pauses.py" "$SCRATCH"
}
# The final state shows after the agent's next refresh (every 2 s), at its pace.
until_passes 30 "the pause series disagree with the workload's log" scrape_and_check
echo "PASS"
