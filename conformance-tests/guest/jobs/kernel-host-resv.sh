#!/bin/bash
# Issue 35: NVMe reservations from two Linux kernel hosts (Debian 12's 6.1; two host NQNs and host IDs in one guest,
# native multipath off so each host has its own block device) against our target, with nvme-cli's resv-* commands:
# register, Write Exclusive and Exclusive Access with the I/O each host may and may not do, preempt, release, clear,
# the extended report, the Reservation Notification log of the preempted host, and persistence through a target
# restart (PTPL kept in the state directory).
JOB=kernel-host-resv
. "$(dirname "$0")/lib.sh"
REPO="${REPO:?REPO must name the checkout}"
JAR="$REPO/nvmeof-cli/target/nvmeof.jar"
[ -f "$JAR" ] || { fail "no $JAR: build the project on the host first"; finish; exit 1; }
NQN=nqn.2026-12.io.nvmeof:resv
HA=nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-1111-4111-8111-000000000001; IA=aaaaaaaa-1111-4111-8111-000000000001
HB=nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-2222-4222-8222-000000000002; IB=bbbbbbbb-2222-4222-8222-000000000002
# The guest's stage 2 loaded nvme_core with multipath on: load it again with multipath off (a module parameter).
modprobe -r nvme-rdma nvme-tcp nvme-fabrics nvme nvme-core 2>/dev/null
modprobe nvme-core multipath=N
modprobe -a nvme-tcp nvme-fabrics
check "native multipath is off, so each host has its own device" grep -q N /sys/module/nvme_core/parameters/multipath
cat > /tmp/resv.json <<JSON
{ "pollGroups": 1,
  "listeners": [ { "id": 1, "transport": "tcp", "address": "$GUEST_IP", "port": 4420 } ],
  "subsystems": [ { "nqn": "$NQN", "namespaces": [ { "nsid": 1, "backend": "file", "path": "/tmp/resv.img",
                                                     "size": "64MiB", "uuid": "0b6c3a1e-7d2f-4c5b-9a8e-1f2e3d4c5b6a" } ] } ] }
JSON
STATE=/tmp/nvmeof-state-resv
start_target() {
  our_target_up /tmp/resv.json "$RESULTS/our-target-resv-$1.log" $STATE \
    || { fail "our target did not start: $(tail -3 "$RESULTS/our-target-resv-$1.log" | tr '\n' ' ')"; finish; exit 1; }
}
dev_of() { # HOSTNQN: the block device of that host's controller
  local c
  for c in /sys/class/nvme/nvme*; do
    [ "$(cat $c/hostnqn 2>/dev/null)" = "$1" ] && [ "$(cat $c/subsysnqn)" = "$NQN" ] && { echo /dev/$(basename $c)n1; return; }
  done
}
connect_both() {
  nvme connect -t tcp -a $GUEST_IP -s 4420 -n $NQN --hostnqn=$HA --hostid=$IA >> "$RESULTS/$JOB-connect.out" 2>&1
  nvme connect -t tcp -a $GUEST_IP -s 4420 -n $NQN --hostnqn=$HB --hostid=$IB --duplicate-connect \
    >> "$RESULTS/$JOB-connect.out" 2>&1
  sleep 2
  DA=$(dev_of $HA); DB=$(dev_of $HB)
  if [ -z "$DB" ]; then
    # Debian 12's nvme-cli (2.3) declines a second host's connection to a port it is connected to (its output is in
    # $JOB-connect.out); the kernel's own interface takes it, as nvme-cli would pass it on.
    echo "transport=tcp,traddr=$GUEST_IP,trsvcid=4420,nqn=$NQN,hostnqn=$HB,hostid=$IB" > /dev/nvme-fabrics \
      2>> "$RESULTS/$JOB-connect.out"
    sleep 2
    DB=$(dev_of $HB)
  fi
}
report() { nvme resv-report $1 -n 1 --eds -o json 2>&1 | tr -d ' \n\t'; }
writes() { dd if=/dev/urandom of=$1 bs=4k count=1 seek=$2 oflag=direct conv=notrunc > /dev/null 2>&1; }
reads() { dd if=$1 of=/dev/null bs=4k count=1 iflag=direct > /dev/null 2>&1; }
refused() { ! "$@"; }

start_target first
connect_both
check "two hosts connected, each with its own device ($DA for host A, $DB for host B)" \
  sh -c "[ -b '$DA' ] && [ -b '$DB' ] && [ '$DA' != '$DB' ]"
nvme id-ctrl $DA -o json 2>&1 | tr -d ' \n\t' > "$RESULTS/$JOB-id-ctrl.json"
check "Identify Controller says reservations are supported (ONCS bit 5)" \
  sh -c "oncs=\$(grep -o '\"oncs\":[0-9]*' '$RESULTS/$JOB-id-ctrl.json' | cut -d: -f2); [ \$((oncs & 32)) -ne 0 ]"
check "host A registers key 0xa1 (with PTPL on: cptpl 3)" nvme resv-register $DA -n 1 --nrkey=0xa1 --rrega=0 --cptpl=3
check "host B registers key 0xb1" nvme resv-register $DB -n 1 --nrkey=0xb1 --rrega=0
check "host B cannot register again with a wrong current key" refused nvme resv-register $DB -n 1 --crkey=0x99 --nrkey=0xb2 --rrega=2
check "host A acquires Write Exclusive" nvme resv-acquire $DA -n 1 --crkey=0xa1 --rtype=1 --racqa=0
report $DA > "$RESULTS/$JOB-report-we.json"
check "the extended report: type 1, two registrants, host A holds it, PTPL on" \
  sh -c "grep -q '\"rtype\":1' '$RESULTS/$JOB-report-we.json' && grep -q '\"regctl\":2' '$RESULTS/$JOB-report-we.json' && grep -q '\"ptpls\":1' '$RESULTS/$JOB-report-we.json' && grep -q '\"rcsts\":1' '$RESULTS/$JOB-report-we.json'"
check "the short report (no extended data) is refused, as nvmet and SPDK refuse it for 128-bit host IDs" \
  refused nvme resv-report $DA -n 1
check "Write Exclusive: the holder writes" writes $DA 1
check "Write Exclusive: another registrant may not write" refused writes $DB 2
check "Write Exclusive: another registrant may read" reads $DB
check "host B cannot release a reservation it does not hold (its release is a no-op, the holder still holds)" \
  sh -c "nvme resv-release $DB -n 1 --crkey=0xb1 --rtype=1 --rrela=0 >/dev/null 2>&1; ! dd if=/dev/zero of=$DB bs=4k count=1 seek=3 oflag=direct conv=notrunc >/dev/null 2>&1"
check "host B preempts host A (key 0xa1)" nvme resv-acquire $DB -n 1 --crkey=0xb1 --prkey=0xa1 --rtype=1 --racqa=1
report $DB > "$RESULTS/$JOB-report-preempted.json"
check "after the preempt: one registrant (host B), holder B" \
  sh -c "grep -q '\"regctl\":1' '$RESULTS/$JOB-report-preempted.json' && grep -q '\"rkey\":177' '$RESULTS/$JOB-report-preempted.json'"
check "host B writes now" writes $DB 4
check "host A (unregistered) may not write" refused writes $DA 5
nvme get-log $DA -n 0xffffffff --log-id=0x80 --log-len=64 -b > "$RESULTS/$JOB-notice-a.bin" 2>/dev/null
check "host A's Reservation Notification log says its registration was preempted (type 1)" \
  sh -c "[ \$(od -An -tu1 -j8 -N1 '$RESULTS/$JOB-notice-a.bin' | tr -d ' ') = 1 ]"
check "host B releases" nvme resv-release $DB -n 1 --crkey=0xb1 --rtype=1 --rrela=0
check "no reservation: host A writes again" writes $DA 6
check "host A registers again and acquires Exclusive Access" \
  sh -c "nvme resv-register $DA -n 1 --nrkey=0xa2 --rrega=0 && nvme resv-acquire $DA -n 1 --crkey=0xa2 --rtype=2 --racqa=0"
check "Exclusive Access: a registrant that does not hold it may not read" refused reads $DB
check "Exclusive Access: the holder reads" reads $DA
# PTPL: the target restarts; the registrations and the reservation come back from the state directory.
nvme disconnect -n $NQN > /dev/null 2>&1
kill $TARGET_PID; wait $TARGET_PID 2>/dev/null
start_target second
connect_both
report $DA > "$RESULTS/$JOB-report-restarted.json"
check "after a target restart (PTPL): Exclusive Access still held, two registrants" \
  sh -c "grep -q '\"rtype\":2' '$RESULTS/$JOB-report-restarted.json' && grep -q '\"regctl\":2' '$RESULTS/$JOB-report-restarted.json'"
check "and still enforced: host B may not read" refused reads $DB
check "host A clears every registration and the reservation" nvme resv-release $DA -n 1 --crkey=0xa2 --rtype=2 --rrela=1
report $DA > "$RESULTS/$JOB-report-cleared.json"
check "cleared: no reservation, no registrant" \
  sh -c "grep -q '\"rtype\":0' '$RESULTS/$JOB-report-cleared.json' && grep -q '\"regctl\":0' '$RESULTS/$JOB-report-cleared.json'"
check "host B reads and writes again" sh -c "dd if=$DB of=/dev/null bs=4k count=1 iflag=direct >/dev/null 2>&1 && dd if=/dev/zero of=$DB bs=4k count=1 seek=7 oflag=direct conv=notrunc >/dev/null 2>&1"
nvme disconnect -n $NQN > /dev/null 2>&1
kill $TARGET_PID; wait $TARGET_PID 2>/dev/null
dmesg > "$RESULTS/dmesg-resv.txt" 2>&1
finish
