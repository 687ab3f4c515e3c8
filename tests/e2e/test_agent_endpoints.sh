#!/bin/bash
# The agent as a DaemonSet's probes and an operator see it: /healthz answers
# while the process lives, /readyz once its probes are attached and it reads
# the ring buffer, tcheck_build_info names the version and commit of the
# binary; /metrics still answers within a second while 2000 idle connections
# from 127.0.0.1 are held open; a torch process without NCCL is said (pid and
# reason) when --torch is not given, and the start-up log suggests no option
# the agent rejects. A config file that is a device is refused with status 2,
# also under a memory limit, and the agent does not start.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip "curl is not installed"
port=19477
events="$SCRATCH/events.jsonl"

# Refused before anything else starts: a device, under a memory limit too
# (getline on /dev/zero grew to 1.7 GB; with a limit its failure read as the
# end of the file: a default run, or with --help the help and status 0).
for limit in unlimited 200000; do
	for last in "--duration 5" --help; do
		status=0
		(ulimit -v "$limit"; exec "$TCHECK" agent --config /dev/zero --listen "127.0.0.1:$port" \
			$last) >"$SCRATCH/zero.out" 2>"$SCRATCH/zero.err" || status=$?
		[ "$status" = 2 ] || fail "agent --config /dev/zero $last (ulimit -v $limit) exited $status, not 2"
		grep -q "the config file /dev/zero is not a regular file" "$SCRATCH/zero.err" ||
			fail "agent --config /dev/zero $last said: $(cat "$SCRATCH/zero.err")"
		[ ! -s "$SCRATCH/zero.out" ] || fail "agent --config /dev/zero $last printed: $(head -3 "$SCRATCH/zero.out")"
	done
done

# A CPU job: a process mapping a library named libtorch_cpu and no NCCL.
cp "$(python3 -c 'import ctypes.util; print("/lib/x86_64-linux-gnu/" + ctypes.util.find_library("m"))')" \
	"$SCRATCH/libtorch_cpu.so"
python3 -c 'import ctypes, sys, time; ctypes.CDLL(sys.argv[1]); time.sleep(60)' \
	"$SCRATCH/libtorch_cpu.so" "$SCRATCH/cpu-job" &
cpu_job=$!
BACKGROUND_PIDS+=("$cpu_job")

"$TCHECK" agent --listen "127.0.0.1:$port" --events "$events" --select "$SCRATCH/" \
	--duration 60 >"$SCRATCH/agent.out" 2>"$SCRATCH/agent.log" &
agent=$!
BACKGROUND_PIDS+=("$agent")
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
	sleep 0.1
done
[ "$(curl -s "http://127.0.0.1:$port/healthz")" = ok ] ||
	fail "/healthz does not answer ok: $(cat "$SCRATCH/agent.log")"
for _ in $(seq 150); do
	curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break
	sleep 0.1
done
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 200 ] ||
	fail "/readyz: $(curl -s "http://127.0.0.1:$port/readyz"); $(cat "$SCRATCH/agent.log")"

# The build: the version --version prints, the commit of this checkout.
version=$("$TCHECK" --version | awk '{ print $2 }')
commit=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
grep -qx "tcheck_build_info{version=\"$version\",commit=\"$commit\"} 1" <<<"$(curl -s "http://127.0.0.1:$port/metrics")" ||
	fail "no tcheck_build_info for $version $commit: $(curl -s "http://127.0.0.1:$port/metrics" | grep build_info)"
grep -q '^tcheck_ring_buffer_last_read_timestamp_seconds ' <<<"$(curl -s "http://127.0.0.1:$port/metrics")" ||
	fail "no tcheck_ring_buffer_last_read_timestamp_seconds"

# 2000 idle connections from 127.0.0.1 (opened in a bounded loop), then a scrape.
python3 - "$port" <<'PY' || fail "/metrics did not answer under 2000 idle connections"
import resource, socket, sys, time
port = int(sys.argv[1])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
idle = []
for _ in range(2000):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    idle.append(s)
time.sleep(0.5)
start = time.monotonic()
scrape = socket.create_connection(("127.0.0.1", port), timeout=5)
scrape.sendall(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
response = b""
scrape.settimeout(5)
while True:
    chunk = scrape.recv(65536)
    if not chunk:
        break
    response += chunk
elapsed = time.monotonic() - start
print(f"scrape under {len(idle)} idle connections: {elapsed:.3f} s, {len(response)} bytes")
assert response.startswith(b"HTTP/1.1 200"), response[:100]
assert b"tcheck_attached_processes" in response
assert elapsed < 1.0, elapsed
for s in idle:
    s.close()
PY

# The CPU job is said with its pid and the reason it is not followed.
for _ in $(seq 100); do
	grep -q "process $cpu_job (.*) runs torch without NCCL" "$SCRATCH/agent.log" && break
	sleep 0.1
done
grep -q "process $cpu_job (.*cpu-job) runs torch without NCCL (a CPU job): not followed; start the agent with --torch" \
	"$SCRATCH/agent.log" || fail "the CPU job $cpu_job was not said: $(cat "$SCRATCH/agent.log")"
[ "$(grep -c "process $cpu_job " "$SCRATCH/agent.log")" = 1 ] || fail "the CPU job was said more than once"
! grep -q -- "--nccl-lib" "$SCRATCH/agent.log" || fail "the agent suggests --nccl-lib, which it rejects"

# With --torch the same process is followed.
kill "$agent"
wait "$agent" || true
"$TCHECK" agent --listen "127.0.0.1:$port" --events "$events" --select "$SCRATCH/" --torch \
	--duration 30 >"$SCRATCH/agent2.out" 2>"$SCRATCH/agent2.log" &
agent=$!
BACKGROUND_PIDS+=("$agent")
for _ in $(seq 100); do
	grep -q "\"event\":\"attached\",\"pid\":$cpu_job" "$events" 2>/dev/null && break
	sleep 0.1
done
grep -q "\"event\":\"attached\",\"pid\":$cpu_job" "$events" ||
	fail "with --torch the CPU job was not followed: $(cat "$events" "$SCRATCH/agent2.log")"
! grep -q "runs torch without NCCL" "$SCRATCH/agent2.log" || fail "with --torch the CPU job is still said to be left"
echo "ok"
