#!/bin/bash
# The real NCCL library (when installed): its IB transport functions
# (ncclIbIsend, ncclIbIrecv, ncclIbTest, ncclIbMultiSend, internal .symtab
# symbols) are recognised by their signatures and probed; the number probed
# is the number nm lists. They cannot run without a GPU and a network.
source "$(dirname "$0")/lib.sh"
[ -r "$REAL_NCCL" ] || skip "no real NCCL at $REAL_NCCL"
command -v nm >/dev/null || skip "nm (binutils) is not installed"
listed=$(nm "$REAL_NCCL" | grep -cE " [tT] _Z[0-9]+ncclIb(Isend|Irecv|Test|MultiSend)" || true)
[ "$listed" -gt 0 ] || skip "$REAL_NCCL has no ncclIb transport symbols"
"$TCHECK" -v record -o "$SCRATCH/real.trace" --nccl-lib "$REAL_NCCL" -- true \
	2>"$SCRATCH/real.err" || fail "record failed: $(cat "$SCRATCH/real.err")"
grep -q "work requests: $listed NCCL IB transport functions probed in $REAL_NCCL" \
	"$SCRATCH/real.err" || fail "expected $listed transport functions probed: $(cat "$SCRATCH/real.err")"
if grep -qi "warning\|error" <<<"$(grep "work requests" "$SCRATCH/real.err")"; then
	fail "attaching the transport probes warned: $(cat "$SCRATCH/real.err")"
fi
echo "$listed NCCL IB transport functions probed"
