#!/usr/bin/env bash
# The interop suite: the Linux kernel's NVMe-oF host and target against ours, inside QEMU guests that boot Debian's
# kernel (see guest.sh). Each job runs in a fresh guest; results (fio JSON, id-ctrl/id-ns JSON, logs, summaries) go to
# conformance-tests/target/interop/. Ends with "N passed, N failed" and a non-zero exit if anything failed or could
# not run. Needs the project built (./mvnw -DskipTests install); ./test builds it first.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
results="$repo/conformance-tests/target/interop"
rm -rf "$results" && mkdir -p "$results"

if [ ! -f "$repo/nvmeof-cli/target/nvmeof.jar" ] || [ ! -d "$repo/conformance-tests/target/test-classes/io/nvmeof/conformance/interop" ]; then
  echo "run-interop.sh: the project is not built; run: ./mvnw -DskipTests install" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
if ! "$here/guest.sh" --prepare; then
  echo "run-interop.sh: the guest cannot be prepared (see above); the interop suite did not run" >&2
  echo "0 passed, 1 failed"
  exit 1
fi

# The harness itself: a command's exit code comes back, and a guest that runs too long is stopped.
t0=$(date +%s)
"$here/guest.sh" --timeout 120 -- sh -c 'exit 3' > "$results/harness-exit.log" 2>&1
rc=$?
t1=$(date +%s)
{
  [ $rc = 3 ] && echo "PASS guest returns the command's exit code (3), cycle $((t1 - t0)) s" || echo "FAIL guest returned $rc for 'exit 3'"
} > "$results/harness.summary"
"$here/guest.sh" --timeout 25 -- sleep 600 > "$results/harness-timeout.log" 2>&1
rc=$?
[ $rc = 124 ] && echo "PASS a guest past its timeout is stopped (exit 124)" >> "$results/harness.summary" \
  || echo "FAIL a guest past its timeout returned $rc, not 124" >> "$results/harness.summary"
cat "$results/harness.summary"

# The native RDMA layer on Soft-RoCE: verbs, CM with private data, batched WRITE/READ/SEND, a >4 GiB registration,
# a remote access error that ends one queue pair only.
echo "=== rdma-smoke (guest)"
t0=$(date +%s)
RESULTS="$results" "$repo/native/src/test/guest/rdma-smoke.sh" 2>&1 | grep -v '^\[ *[0-9]*\.[0-9]*\]' | tee "$results/rdma-smoke.console"
echo "rdma-smoke $(( $(date +%s) - t0 ))" >> "$results/timings"
[ -s "$results/rdma-smoke.summary" ] || echo "FAIL rdma-smoke: the guest did not complete the smoke test" > "$results/rdma-smoke.summary"

# name|script|guest flags|timeout|environment
jobs=(
  "kernel-baseline|kernel-baseline|--rdma|900|"
  "kernel-host-our-target-tcp|kernel-host-our-target||1800|TRANSPORT=tcp"
  "kernel-host-our-target-rdma|kernel-host-our-target|--rdma|1800|TRANSPORT=rdma"
  "our-initiator-kernel-target-tcp|our-initiator-kernel-target||900|TRANSPORT=tcp"
  "our-initiator-kernel-target-rdma|our-initiator-kernel-target|--rdma|900|TRANSPORT=rdma"
  "our-initiator-our-target-rdma|our-initiator-our-target-rdma|--rdma|900|"
  "block-device-target|block-device-target|--nvme 1G|900|"
  "kernel-host-multipath|kernel-host-multipath||900|"
  "kernel-host-ana|kernel-host-ana||900|"
  "our-initiator-kernel-ana|our-initiator-kernel-ana||900|"
  "kernel-host-resv|kernel-host-resv||900|"
  "kernel-host-referral|kernel-host-referral||900|"
  "kernel-host-auth|kernel-host-auth|--kernel trixie|900|"
  "our-initiator-kernel-auth|our-initiator-kernel-auth|--kernel trixie|900|"
  "kernel-host-tls|kernel-host-tls|--kernel trixie|900|"
  "our-initiator-kernel-tls|our-initiator-kernel-tls|--kernel trixie|900|"
)
start_all=$(date +%s)
for spec in "${jobs[@]}"; do
  IFS='|' read -r job script flags limit jobenv <<< "$spec"
  echo "=== $job (guest, timeout ${limit}s)"
  t0=$(date +%s)
  # shellcheck disable=SC2086
  "$here/guest.sh" $flags --timeout "$limit" --share "$repo" -- \
    env RESULTS="$results" REPO="$repo" $jobenv bash "$here/jobs/$script.sh" 2>&1 | grep -v '^\[ *[0-9]*\.[0-9]*\]' | tee "$results/$job.console"
  rc=${PIPESTATUS[0]}
  t1=$(date +%s)
  echo "$job $((t1 - t0))" >> "$results/timings"
  if [ ! -s "$results/$job.summary" ] || [ "$rc" = 124 ] || [ "$rc" = 125 ]; then
    echo "FAIL $job: the guest did not complete the job (exit $rc); see conformance-tests/target/guest-logs" >> "$results/$job.summary"
  fi
done
end_all=$(date +%s)

passed=$(cat "$results"/*.summary | grep -c '^PASS')
failed=$(cat "$results"/*.summary | grep -c '^FAIL')
python3 "$here/report.py" "$results" > "$results/report.md" 2>/dev/null || echo "(report.py failed)" > "$results/report.md"
echo
echo "=== interop suite: $((end_all - start_all)) s in all; per job: $(tr '\n' ' ' < "$results/timings")"
grep -h '^FAIL' "$results"/*.summary || true
echo "report: $results/report.md"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
