#!/bin/bash
# Our initiator library against the Linux kernel's NVMe-oF target (nvmet-tcp, or nvmet-rdma over Soft-RoCE with
# TRANSPORT=rdma), in the guest: one namespace on a file in /dev/shm, one on null_blk (memory backed so data can be
# read back).
TRANSPORT="${TRANSPORT:-tcp}"
JOB=our-initiator-kernel-target-$TRANSPORT
. "$(dirname "$0")/lib.sh"
REPO="${REPO:?REPO must name the checkout}"
NQN=nqn.2026-11.io.nvmeof:kernel-target
CP="$REPO/nvmeof-cli/target/nvmeof.jar:$REPO/conformance-tests/target/test-classes"
[ -f "$REPO/nvmeof-cli/target/nvmeof.jar" ] || { fail "no nvmeof.jar: build the project on the host first"; finish; exit 1; }

modprobe -a nvmet nvmet-$TRANSPORT
modprobe null_blk nr_devices=1 gb=1 memory_backed=1 bs=4096
truncate -s 256M /dev/shm/kernel-target-ns1.img
nvmet_subsystem $NQN
nvmet_namespace $NQN 1 /dev/shm/kernel-target-ns1.img
nvmet_namespace $NQN 2 /dev/nullb0
nvmet_port 1 $TRANSPORT $GUEST_IP 4420 $NQN

java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx512m --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
  -cp "$CP" io.nvmeof.conformance.interop.KernelTargetInterop $TRANSPORT $GUEST_IP 4420 $NQN > "$RESULTS/$JOB.out" 2>&1
rc=$?
grep -E "^(PASS|FAIL) " "$RESULTS/$JOB.out" | while read -r verdict rest; do
  [ "$verdict" = PASS ] && echo "PASS $rest" >> "$SUMMARY" || echo "FAIL $rest" >> "$SUMMARY"
done
cat "$RESULTS/$JOB.out" | grep -vE "^\s+at " | tail -40
PASSES=$(grep -c "^PASS" "$SUMMARY")
FAILS=$(grep -c "^FAIL" "$SUMMARY")
[ $rc = 0 ] || [ "$FAILS" -gt 0 ] || fail "the interop client exited $rc: $(tail -3 "$RESULTS/$JOB.out" | tr '\n' ' ')"
engine_verify "kernel-$TRANSPORT" "$TRANSPORT" $GUEST_IP 4420 $NQN 1
if [ "$TRANSPORT" = rdma ]; then
  # Namespace 1 is a file in /dev/shm, as our target's namespace 2 in the kernel-host job: like against like.
  initiator_bench kernel-rdma rdma $GUEST_IP 4420 $NQN 1
fi
nvmet_clear
finish
