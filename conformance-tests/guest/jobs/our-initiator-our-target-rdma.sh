#!/bin/bash
# Our initiator against our target over Soft-RoCE (rxe0) in one JVM: data patterns, zero copy proven by where the
# target's RDMA WRITEs land, every kind of caller buffer, concurrent I/O on many queues, connect cycles, and a peer
# vanishing mid-transfer on either side (OurRdmaInterop); no allocation per I/O (RdmaAllocationCheck); then the
# training-data loader over RDMA (LoaderRdmaInterop).
JOB=our-initiator-our-target-rdma
. "$(dirname "$0")/lib.sh"
REPO="${REPO:?REPO must name the checkout}"
CP="$REPO/nvmeof-cli/target/nvmeof.jar:$REPO/conformance-tests/target/test-classes"
[ -f "$REPO/nvmeof-cli/target/nvmeof.jar" ] || { fail "no nvmeof.jar: build the project on the host first"; finish; exit 1; }
rdma link show | grep -q rxe0 || { fail "no rxe0 in the guest (rdma link: $(rdma link show 2>&1))"; finish; exit 1; }

java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx1g --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
  -cp "$CP" io.nvmeof.conformance.interop.OurRdmaInterop $GUEST_IP > "$RESULTS/$JOB.out" 2>&1
rc=$?
grep -E "^(PASS|FAIL) " "$RESULTS/$JOB.out" >> "$SUMMARY"
grep -vE "^\s+at " "$RESULTS/$JOB.out" | tail -40
[ $rc = 0 ] || [ "$(grep -c '^FAIL' "$SUMMARY")" -gt 0 ] || fail "the interop program exited $rc: $(tail -3 "$RESULTS/$JOB.out" | tr '\n' ' ')"

# No allocation per I/O over RDMA on either side (RdmaAllocationCheck). C1 only, as every JVM in the guest: with the
# full tiers a JVM crashed under TCG during its start (SIGSEGV in C1-compiled JDK code, before any of ours ran). C1
# does no escape analysis, so this is the stricter count: nothing is left for scalar replacement to remove.
java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx512m --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
  -cp "$CP" io.nvmeof.conformance.interop.RdmaAllocationCheck $GUEST_IP > "$RESULTS/$JOB-allocation.out" 2>&1
rc=$?
grep -E "^(PASS|FAIL) " "$RESULTS/$JOB-allocation.out" >> "$SUMMARY"
grep -vE "^\s+at " "$RESULTS/$JOB-allocation.out" | grep -E "^(PASS|FAIL|NOTE)"
[ $rc = 0 ] || grep -q '^FAIL no allocation' "$SUMMARY" || fail "the allocation check exited $rc: $(tail -3 "$RESULTS/$JOB-allocation.out" | tr '\n' ' ')"

java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx1g --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
  -cp "$CP" io.nvmeof.conformance.interop.LoaderRdmaInterop $GUEST_IP > "$RESULTS/$JOB-loader.out" 2>&1
rc=$?
grep -E "^(PASS|FAIL) " "$RESULTS/$JOB-loader.out" | sed 's/^\(PASS\|FAIL\) /\1 loader: /' >> "$SUMMARY"
grep -vE "^\s+at " "$RESULTS/$JOB-loader.out" | tail -20
[ $rc = 0 ] || grep -q '^FAIL loader' "$SUMMARY" || fail "the loader interop program exited $rc: $(tail -3 "$RESULTS/$JOB-loader.out" | tr '\n' ' ')"

# fio through our engine against our target, both over RDMA: the target as its own process, as users run it.
java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx512m --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
  -jar "$REPO/nvmeof-cli/target/nvmeof.jar" target --transport rdma --address $GUEST_IP --port 4421 --size 128MiB \
  --no-admin > "$RESULTS/$JOB-target.log" 2>&1 &
target_pid=$!
for i in $(seq 1 60); do grep -q "listening" "$RESULTS/$JOB-target.log" && break; sleep 1; done
engine_verify our-target-rdma rdma $GUEST_IP 4421 nqn.2026-11.io.nvmeof:default 1
kill $target_pid; wait $target_pid 2>/dev/null
finish
