#!/bin/bash
# The deployment files in tools/deploy, checked offline: yamllint, kubectl
# kustomize where kubectl is present, promtool on the alert rules (checked,
# and unit-tested with tests/deploy/collective-alerts.test.yaml), and the
# structural checks of tests/deploy/check_manifests.py (least privileges,
# ports and selectors that agree). A broken copy must be caught too.
source "$(dirname "$0")/lib.sh"
deploy="$ROOT/tools/deploy"
command -v yamllint >/dev/null || skip "yamllint is not installed (make deps)"
python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml is not installed (make deps)"

yamllint -d '{extends: default, rules: {line-length: {max: 120}, document-start: disable}}' \
	"$deploy" || fail "yamllint found problems in tools/deploy"

render() { # DIR OUT
	if command -v kubectl >/dev/null; then
		kubectl kustomize "$1" >"$2" || fail "kubectl kustomize cannot render $1"
	else
		for file in namespace daemonset service; do
			cat "$1/$file.yaml"
			echo "---"
		done >"$2"
		printf 'kind: ConfigMap\napiVersion: v1\nmetadata: {name: c}\n' >>"$2"
	fi
}
render "$deploy" "$SCRATCH/rendered.yaml"
python3 "$ROOT/tests/deploy/check_manifests.py" "$SCRATCH/rendered.yaml" ||
	fail "the deployment files do not pass the structural checks"

# The shipped agent configuration is one the agent accepts.
"$TCHECK" agent --config "$deploy/agent.conf" --help >/dev/null ||
	fail "tcheck-bpf agent refuses tools/deploy/agent.conf"
printf 'listen = 127.0.0.1:1\nhang-factr = 2\n' >"$SCRATCH/bad.conf"
if "$TCHECK" agent --config "$SCRATCH/bad.conf" --help >"$SCRATCH/bad.out" 2>&1; then
	fail "a config file with an unknown key was accepted"
fi
grep -q "bad.conf:2: 'hang-factr'" "$SCRATCH/bad.out" || fail "the error does not name the line: $(cat "$SCRATCH/bad.out")"

if command -v promtool >/dev/null; then
	promtool check rules "$deploy/prometheus/rules.yaml" || fail "promtool rejects the rules"
	# The collective alerts through a gloo hang, an NCCL hang, a stalled
	# collective and a checkpoint pause: which fires, for which rank, and the annotations' words.
	promtool test rules "$ROOT/tests/deploy/collective-alerts.test.yaml" ||
		fail "the collective alerts do not name the stuck rank as tests/deploy expects"
	# Rules blind to the call a rank is inside miss the gloo hang: the test must say so.
	mkdir -p "$SCRATCH/rules-test/tests/deploy" "$SCRATCH/rules-test/tools/deploy/prometheus"
	cp "$ROOT/tests/deploy/collective-alerts.test.yaml" "$SCRATCH/rules-test/tests/deploy/"
	sed 's/tcheck_collective_in_flight_sequence or //' "$deploy/prometheus/rules.yaml" \
		>"$SCRATCH/rules-test/tools/deploy/prometheus/rules.yaml"
	if promtool test rules "$SCRATCH/rules-test/tests/deploy/collective-alerts.test.yaml" \
		>"$SCRATCH/rules-test.out" 2>&1; then
		fail "rules that ignore the in-flight sequence passed the collective alert test"
	fi
	grep -q "TcheckCollectiveHang" "$SCRATCH/rules-test.out" ||
		fail "the failed rule test does not name TcheckCollectiveHang: $(cat "$SCRATCH/rules-test.out")"
	# Rules blind to a pause in progress take a checkpoint for a hang: the test must say so.
	sed '/unless on (pid, rank, pod, node) tcheck_pause_in_progress_seconds/d' \
		"$deploy/prometheus/rules.yaml" >"$SCRATCH/rules-test/tools/deploy/prometheus/rules.yaml"
	cmp -s "$deploy/prometheus/rules.yaml" "$SCRATCH/rules-test/tools/deploy/prometheus/rules.yaml" &&
		fail "the hang alert no longer reads tcheck_pause_in_progress_seconds as this test expects"
	if promtool test rules "$SCRATCH/rules-test/tests/deploy/collective-alerts.test.yaml" \
		>"$SCRATCH/rules-pause.out" 2>&1; then
		fail "rules that ignore pauses in progress passed the collective alert test"
	fi
	grep -q 'pid="401"' "$SCRATCH/rules-pause.out" ||
		fail "the failed rule test does not name the pausing rank: $(cat "$SCRATCH/rules-pause.out")"
fi

# The checks must fail on a DaemonSet that asks for more than it needs.
cp -r "$deploy" "$SCRATCH/broken"
sed -i 's/^\(\s*\)- SYS_PTRACE$/\1- SYS_PTRACE\n\1- SYS_ADMIN/' "$SCRATCH/broken/daemonset.yaml"
render "$SCRATCH/broken" "$SCRATCH/broken.yaml"
if python3 "$ROOT/tests/deploy/check_manifests.py" "$SCRATCH/broken.yaml" >"$SCRATCH/out" 2>&1; then
	fail "a DaemonSet adding SYS_ADMIN passed the checks"
fi
grep -q "SYS_ADMIN" "$SCRATCH/out" || fail "the problem report does not name SYS_ADMIN"
echo "deployment files: checked"
