#!/bin/bash
# Issue 35: ANA with the Linux kernel's native multipath (Debian 12's 6.1, nvme_core.multipath=Y).
# Part 1, one target with two listeners: the kernel reads the ANA states we set per listener (sysfs ana_state,
# nvme list-subsys), hears of a change within a second (ANA change notice), and moves a fio verify run off a path
# made inaccessible, back when it is optimized again, with no error.
# Part 2, two target processes exporting one subsystem over one shared file (disjoint controller ID ranges, same
# NQN and namespace UUID): one multipath device over both; killing the target that carries the I/O (the optimized
# one) during fio verify loses nothing; the I/O pause is measured.
JOB=kernel-host-ana
. "$(dirname "$0")/lib.sh"
REPO="${REPO:?REPO must name the checkout}"
JAR="$REPO/nvmeof-cli/target/nvmeof.jar"
[ -f "$JAR" ] || { fail "no $JAR: build the project on the host first"; finish; exit 1; }
NQN=nqn.2026-12.io.nvmeof:ana
modprobe -a nvme-tcp nvme-fabrics
check "native multipath is on" grep -q Y /sys/module/nvme_core/parameters/multipath

admin() { # STATE_DIR URL ARGS...: the admin CLI against one target
  local dir="$1" url="$2"; shift 2
  java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx128m --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
    -jar "$JAR" admin --state-dir "$dir" --url "$url" "$@"
}
path_dev() { # PORT: the path device (nvmeXcYn1) whose controller connected to PORT
  local p
  for p in $(ls /sys/block | grep -E '^nvme[0-9]+c[0-9]+n1$'); do
    grep -q "trsvcid=$1" /sys/block/$p/device/address 2>/dev/null && { echo $p; return; }
  done
}
ana_of() { cat /sys/block/$1/ana_state 2>/dev/null; }
writes_of() { awk '{print $5}' /sys/block/$1/stat; }
ios_of() { awk '{print $1 + $5}' /sys/block/$1/stat; } # reads and writes completed (fio verifies with reads)
# wait_ana DEV STATE: seconds (0.1 s steps, at most 10 s) until DEV's ana_state reads STATE; prints them, 1 if never.
wait_ana() {
  local i
  for i in $(seq 1 100); do
    [ "$(ana_of $1)" = "$2" ] && { awk "BEGIN{print $i/10}"; return 0; }
    sleep 0.1
  done
  echo never; return 1
}
idle() { ! grows "$1"; }
# grows DEV: whether DEV's completed reads and writes grow within 3 s (the verify run's and the reader's)
grows() {
  local a i
  a=$(ios_of $1)
  for i in $(seq 1 30); do sleep 0.1; [ "$(ios_of $1)" -gt "$a" ] && return 0; done
  return 1
}
start_fio() { # NAME
  fio --name=$1 --filename=/dev/$HEAD --ioengine=libaio --direct=1 --rw=randwrite --bs=4k --iodepth=32 \
      --size=64M --verify=crc32c --verify_fatal=1 --do_verify=1 --randrepeat=0 --verify_state_save=0 --loops=$2 \
      --output-format=json --output="$RESULTS/fio-$1.json" > "$RESULTS/$JOB-fio-$1.out" 2>&1 &
  FIO=$!
  # The path checks need I/O for as long as they take, and the admin CLI's JVM starts slowly in a loaded guest:
  # the verify run above may end before the last state change. A reader that runs until end_fio keeps I/O flowing.
  fio --name=traffic-$1 --filename=/dev/$HEAD --ioengine=libaio --direct=1 --rw=randread --bs=4k --iodepth=4 \
      --time_based --runtime=900 > /dev/null 2>&1 &
  TRAFFIC=$!
}
end_fio() { # NAME: waits (at most 300 s) and checks fio's result
  local i rc
  for i in $(seq 1 300); do kill -0 $FIO 2>/dev/null || break; sleep 1; done
  kill $FIO 2>/dev/null
  wait $FIO; rc=$?
  kill $TRAFFIC 2>/dev/null; wait $TRAFFIC 2>/dev/null
  check "fio randwrite+verify QD 32 ($1) completed with no error (exit $rc)" \
    sh -c "[ $rc -eq 0 ] && grep -q '\"error\" : 0' '$RESULTS/fio-$1.json'"
}

# ---------------------------------------------------------------- part 1: one target, two listeners
cat > /tmp/ana.json <<JSON
{ "pollGroups": 1,
  "listeners": [ { "id": 1, "transport": "tcp", "address": "$GUEST_IP", "port": 4420 },
                 { "id": 2, "transport": "tcp", "address": "$GUEST_IP", "port": 4421, "ana": { "1": "non-optimized" } } ],
  "subsystems": [ { "nqn": "$NQN", "namespaces": [ { "nsid": 1, "backend": "ram", "size": "128MiB", "blockSize": 512 } ] } ] }
JSON
S1=/tmp/nvmeof-state-ana; U1=http://127.0.0.1:8080
if ! our_target_up /tmp/ana.json "$RESULTS/our-target-ana.log" $S1; then
  fail "our target did not start: $(tail -3 "$RESULTS/our-target-ana.log" | tr '\n' ' ')"; finish; exit 1
fi
T1=$TARGET_PID
check "nvme connect through port 4420" nvme connect -t tcp -a $GUEST_IP -s 4420 -n $NQN
check "nvme connect through port 4421" nvme connect -t tcp -a $GUEST_IP -s 4421 -n $NQN
sleep 2
P1=$(path_dev 4420); P2=$(path_dev 4421)
HEAD=$(ls /sys/block | grep -E '^nvme[0-9]+n1$' | head -1)
check "one multipath device /dev/$HEAD over two paths ($P1, $P2)" sh -c "[ -n '$P1' ] && [ -n '$P2' ] && [ -n '$HEAD' ]"
check "the kernel reads the configured states: $P1 (port 4420) optimized, $P2 (port 4421) non-optimized" \
  sh -c "[ '$(ana_of $P1)' = optimized ] && [ '$(ana_of $P2)' = non-optimized ]"
check "ANA group 1 on both paths (ana_grpid)" sh -c "[ \$(cat /sys/block/$P1/ana_grpid) = 1 ] && [ \$(cat /sys/block/$P2/ana_grpid) = 1 ]"
# nvme-cli prints the paths' ANA states when given the namespace.
nvme list-subsys /dev/$HEAD > "$RESULTS/$JOB-list-subsys.txt" 2>&1
check "nvme list-subsys /dev/$HEAD shows both paths with their ANA states" \
  sh -c "grep -q 'live optimized' '$RESULTS/$JOB-list-subsys.txt' && grep -q 'live non-optimized' '$RESULTS/$JOB-list-subsys.txt'"

start_fio ana-states 6
sleep 3
check "fio's I/O goes through the optimized path ($P1)" grows $P1
admin $S1 $U1 ana-set 1 1 inaccessible > "$RESULTS/$JOB-admin.out" 2>&1
T=$(wait_ana $P1 inaccessible)
check "the host saw port 4420's group 1 inaccessible ${T}s after the admin API answered (at most 1 s)" \
  sh -c "[ '$T' != never ] && awk 'BEGIN{exit !($T <= 1.0)}'"
check "the I/O moved to the non-optimized path $P2" grows $P2
check "and none goes to the inaccessible path $P1" idle $P1
admin $S1 $U1 ana-set 2 1 optimized >> "$RESULTS/$JOB-admin.out" 2>&1
admin $S1 $U1 ana-set 1 1 non-optimized >> "$RESULTS/$JOB-admin.out" 2>&1
wait_ana $P2 optimized > /dev/null; wait_ana $P1 non-optimized > /dev/null
check "states swapped: $P2 optimized, $P1 non-optimized" \
  sh -c "[ \"\$(cat /sys/block/$P2/ana_state)\" = optimized ] && [ \"\$(cat /sys/block/$P1/ana_state)\" = non-optimized ]"
check "the I/O follows the optimized path $P2" grows $P2
check "the ANA change notices reached the host (no ANATT timeout, no reset)" sh -c "! dmesg | grep -q 'ANATT timeout'"
admin $S1 $U1 ana 1 > "$RESULTS/$JOB-ana-listener1.txt" 2>&1
check "the admin CLI lists listener 1's groups (group 1 non-optimized)" grep -q 'non-optimized' "$RESULTS/$JOB-ana-listener1.txt"
end_fio ana-states
nvme disconnect -n $NQN > /dev/null 2>&1
kill $T1; wait $T1 2>/dev/null

# ---------------------------------------------------------------- part 2: two targets over one shared file
NQN2=nqn.2026-12.io.nvmeof:shared
truncate -s 128M /tmp/shared.img
UUID=6c1f8a52-3c1e-4b7a-9d55-0a1b2c3d4e5f
for side in a b; do
  if [ $side = a ]; then port=4420; range='"cntlidMin": 1, "cntlidMax": 999'; ana=''; else
    port=4421; range='"cntlidMin": 1000, "cntlidMax": 1999'; ana=', "ana": { "1": "non-optimized" }'; fi
  cat > /tmp/shared-$side.json <<JSON
{ "pollGroups": 1,
  "listeners": [ { "id": 1, "transport": "tcp", "address": "$GUEST_IP", "port": $port $ana } ],
  "subsystems": [ { "nqn": "$NQN2", "serial": "SHARED0001", $range,
                    "namespaces": [ { "nsid": 1, "backend": "file", "path": "/tmp/shared.img", "uuid": "$UUID" } ] } ] }
JSON
done
our_target_up /tmp/shared-a.json "$RESULTS/our-target-shared-a.log" /tmp/nvmeof-state-a --admin-listen 127.0.0.1:8081 \
  || { fail "target a did not start: $(tail -3 "$RESULTS/our-target-shared-a.log" | tr '\n' ' ')"; finish; exit 1; }
TA=$TARGET_PID
our_target_up /tmp/shared-b.json "$RESULTS/our-target-shared-b.log" /tmp/nvmeof-state-b --admin-listen 127.0.0.1:8082 \
  || { fail "target b did not start: $(tail -3 "$RESULTS/our-target-shared-b.log" | tr '\n' ' ')"; finish; exit 1; }
TB=$TARGET_PID
pass "two target processes export $NQN2 over /tmp/shared.img (controller IDs 1-999 and 1000-1999)"
check "nvme connect to target a (port 4420)" nvme connect -t tcp -a $GUEST_IP -s 4420 -n $NQN2
check "nvme connect to target b (port 4421)" nvme connect -t tcp -a $GUEST_IP -s 4421 -n $NQN2
sleep 2
PA=$(path_dev 4420); PB=$(path_dev 4421)
HEAD=$(ls /sys/block | grep -E '^nvme[0-9]+n1$' | head -1)
CA=$(cat /sys/block/$PA/device/cntlid 2>/dev/null); CB=$(cat /sys/block/$PB/device/cntlid 2>/dev/null)
check "one multipath device /dev/$HEAD over both targets' controllers ($PA cntlid $CA, $PB cntlid $CB)" \
  sh -c "[ -n '$PA' ] && [ -n '$PB' ] && [ '$CA' -lt 1000 ] && [ '$CB' -ge 1000 ] && ! dmesg | grep -q 'duplicate IDs'"
check "target a's path optimized, target b's non-optimized" sh -c "[ '$(ana_of $PA)' = optimized ] && [ '$(ana_of $PB)' = non-optimized ]"
start_fio shared-failover 4
sleep 4
check "the I/O goes to target a (optimized)" grows $PA
B0=$(writes_of $PB)
KILLED=$(date +%s.%N)
kill -9 $TA
PAUSE=never
for i in $(seq 1 300); do
  if [ "$(writes_of $PB)" -gt "$B0" ]; then PAUSE=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $KILLED}"); break; fi
  sleep 0.1
done
echo "$PAUSE" > "$RESULTS/$JOB-failover-pause-s.txt"
check "writes resumed through target b ${PAUSE}s after target a was killed (at most ANATT + 1 = 11 s)" \
  sh -c "[ '$PAUSE' != never ] && awk 'BEGIN{exit !($PAUSE <= 11)}'"
end_fio shared-failover
nvme list-subsys /dev/$HEAD > "$RESULTS/$JOB-list-subsys-shared.txt" 2>&1
nvme disconnect -n $NQN2 > /dev/null 2>&1
kill $TB; wait $TB 2>/dev/null
dmesg > "$RESULTS/dmesg-ana.txt" 2>&1
finish
