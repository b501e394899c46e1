#!/bin/bash
# A real block device in the guest (QEMU's emulated NVMe disk, guest.sh --nvme) exported by our target's block
# backend (direct I/O through the poll groups' io_uring, the disk opened exclusively) and, in turn, by the kernel's
# nvmet bdev backend; the kernel host runs the same fio jobs against both over NVMe/TCP: a verified random-write job
# and a random-read job whose figures go to the report (under TCG they compare the two paths, not the device).
JOB=block-device-target
. "$(dirname "$0")/lib.sh"
REPO="${REPO:?REPO must name the checkout}"
JAR="$REPO/nvmeof-cli/target/nvmeof.jar"
OURS=nqn.2026-12.io.nvmeof:disk
KERNELS=nqn.2026-12.io.nvmeof:kernel-disk
[ -f "$JAR" ] || { fail "no $JAR: build the project on the host first (./mvnw -DskipTests install)"; finish; exit 1; }

modprobe -a nvme nvme-tcp nvme-fabrics nvmet nvmet-tcp
DISK=""
for i in $(seq 1 30); do
  for d in /sys/class/nvme/nvme*; do
    [ -e "$d/serial" ] && grep -q NVMEOFDISK0 "$d/serial" && DISK=/dev/$(ls "$d" | grep -m1 -E '^nvme[0-9]+n1$')
  done
  [ -n "$DISK" ] && [ -b "$DISK" ] && break
  sleep 1
done
if [ -z "$DISK" ] || [ ! -b "$DISK" ]; then
  fail "the guest sees no emulated NVMe disk (serial NVMEOFDISK0): $(ls /sys/class/nvme 2>&1 | tr '\n' ' ')"
  finish; exit 1
fi
pass "the guest sees the emulated NVMe disk as $DISK ($(blockdev --getsize64 "$DISK") bytes, logical block $(blockdev --getss "$DISK"))"

# run_fio LABEL DEVICE: a verified random-write job, then random reads with their figures kept (lib.sh's jobs).
run_fio() {
  check "$1: fio random writes, every block read back and verified (crc32c)" fio_verify "block-$1" "$2" 4k 16 32M
  check "$1: fio random reads" fio_perf "block-$1-randread" "$2" randread 4k 16 10
}

# ---- our target: the disk as a block namespace, direct I/O ----
cat > /tmp/block-target.json <<JSON
{ "pollGroups": 1,
  "listeners": [ { "transport": "tcp", "address": "$GUEST_IP", "port": 4420 } ],
  "subsystems": [ { "nqn": "$OURS", "serial": "BLOCK0001", "allowAnyHost": true,
    "namespaces": [ { "nsid": 1, "backend": "block", "path": "$DISK", "blockSize": 512 } ] } ] }
JSON
java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx512m -XX:MaxDirectMemorySize=512m \
  --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -jar "$JAR" target --config /tmp/block-target.json \
  > "$RESULTS/$JOB-our-target.log" 2>&1 &
TARGET_PID=$!
up=0
for i in $(seq 1 120); do
  if grep -q "target started" "$RESULTS/$JOB-our-target.log"; then up=1; break; fi
  kill -0 $TARGET_PID 2>/dev/null || break
  sleep 1
done
if [ $up = 0 ]; then
  fail "our target did not start on $DISK: $(tail -3 "$RESULTS/$JOB-our-target.log" | tr '\n' ' ')"
  finish; exit 1
fi
pass "our target exports $DISK (${i}s)"
check "served direct: no fallback to buffered I/O in the target's log" \
  sh -c "! grep -E 'io_uring is unavailable|served buffered|no io_uring' '$RESULTS/$JOB-our-target.log'"
check "the target holds $DISK exclusively (another exclusive open is refused)" \
  python3 -c "import os, errno, sys
try:
    os.close(os.open('$DISK', os.O_RDWR | os.O_EXCL))
except OSError as e:
    sys.exit(0 if e.errno == errno.EBUSY else 1)
sys.exit(1)"
nvme connect -t tcp -a $GUEST_IP -s 4420 -n $OURS > "$RESULTS/$JOB-connect-ours.out" 2>&1
if DEV="$(wait_dev $OURS 60)"; then
  pass "the kernel host connected to our target: $DEV"
  run_fio ours "$DEV"
  nvme disconnect -n $OURS > /dev/null 2>&1
else
  fail "the kernel host found no device for $OURS: $(tail -2 "$RESULTS/$JOB-connect-ours.out" | tr '\n' ' ')"
fi
kill $TARGET_PID; wait $TARGET_PID 2>/dev/null
check "our target logged no device error" sh -c "! grep -q 'the device failed' '$RESULTS/$JOB-our-target.log'"

# ---- the kernel's nvmet, bdev backend, on the same disk ----
nvmet_subsystem $KERNELS
nvmet_namespace $KERNELS 1 "$DISK"
nvmet_port 1 tcp $GUEST_IP 4420 $KERNELS
nvme connect -t tcp -a $GUEST_IP -s 4420 -n $KERNELS > "$RESULTS/$JOB-connect-kernel.out" 2>&1
if DEV="$(wait_dev $KERNELS 60)"; then
  pass "the kernel host connected to nvmet's bdev namespace: $DEV"
  run_fio kernel "$DEV"
  nvme disconnect -n $KERNELS > /dev/null 2>&1
else
  fail "the kernel host found no device for $KERNELS: $(tail -2 "$RESULTS/$JOB-connect-kernel.out" | tr '\n' ' ')"
fi
nvmet_clear
iops() { python3 -c "import json; print(round(json.load(open('$1'))['jobs'][0]['read']['iops']))" 2>/dev/null || echo "?"; }
log "4 KiB random reads at QD 16 over NVMe/TCP in the guest (TCG): ours $(iops "$RESULTS/perf-block-ours-randread.json") IOPS, nvmet bdev $(iops "$RESULTS/perf-block-kernel-randread.json") IOPS"
finish
