#!/bin/bash
# Issue 35 (first step): the Linux kernel's native multipath (Debian 12's 6.1, nvme_core.multipath=Y) over two
# listeners of one subsystem of our target. Both controllers' namespace joins one multipath device (two live paths,
# no "duplicate IDs"), and removing the listener that carries the I/O during a fio verify run fails the I/O over to
# the other path: fio ends with no error and every block verifies.
JOB=kernel-host-multipath
. "$(dirname "$0")/lib.sh"
REPO="${REPO:?REPO must name the checkout}"
JAR="$REPO/nvmeof-cli/target/nvmeof.jar"
[ -f "$JAR" ] || { fail "no $JAR: build the project on the host first"; finish; exit 1; }
NQN=nqn.2026-12.io.nvmeof:multipath
modprobe -a nvme-tcp nvme-fabrics
check "native multipath is on (nvme_core.multipath=$(cat /sys/module/nvme_core/parameters/multipath))" \
  grep -q Y /sys/module/nvme_core/parameters/multipath
cat > /tmp/target.json <<JSON
{ "pollGroups": 1,
  "listeners": [ { "id": 1, "transport": "tcp", "address": "$GUEST_IP", "port": 4420 },
                 { "id": 2, "transport": "tcp", "address": "$GUEST_IP", "port": 4421 } ],
  "subsystems": [ { "nqn": "$NQN", "namespaces": [ { "nsid": 1, "backend": "ram", "size": "256MiB", "blockSize": 512 } ] } ] }
JSON
if ! our_target_up /tmp/target.json "$RESULTS/our-target-multipath.log" /tmp/nvmeof-state-multipath; then
  fail "our target did not start: $(tail -3 "$RESULTS/our-target-multipath.log" | tr '\n' ' ')"
  finish; exit 1
fi
pass "our target started with two listeners of one subsystem (${TARGET_UP_S}s)"
check "nvme connect through port 4420" nvme connect -t tcp -a $GUEST_IP -s 4420 -n $NQN
check "nvme connect through port 4421" nvme connect -t tcp -a $GUEST_IP -s 4421 -n $NQN
sleep 2
nvme list-subsys > "$RESULTS/$JOB-list-subsys.txt" 2>&1
check "nvme list-subsys: both paths live" sh -c "[ \$(grep -c ' live' '$RESULTS/$JOB-list-subsys.txt') -eq 2 ]"
check "the kernel took the namespace as shared (no 'duplicate IDs' in dmesg)" sh -c "! dmesg | grep -q 'duplicate IDs'"
HEAD=$(ls /sys/block | grep -E '^nvme[0-9]+n1$' | head -1)
PATHS=$(ls /sys/block | grep -cE '^nvme[0-9]+c[0-9]+n1$')
check "one multipath device /dev/$HEAD over $PATHS paths (nvmeXcYn1)" [ "$PATHS" -eq 2 ]
fio --name=failover --filename=/dev/$HEAD --ioengine=libaio --direct=1 --rw=randwrite --bs=4k --iodepth=32 \
    --size=128M --verify=crc32c --verify_fatal=1 --do_verify=1 --randrepeat=0 --verify_state_save=0 --loops=4 \
    --output-format=json --output="$RESULTS/fio-failover.json" > "$RESULTS/$JOB-fio.out" 2>&1 &
FIO=$!
sleep 4
# The path carrying the I/O: the one whose completed writes grow (the numa policy sends everything one way).
declare -A before
for p in $(ls /sys/block | grep -E '^nvme[0-9]+c[0-9]+n1$'); do before[$p]=$(awk '{print $5}' /sys/block/$p/stat); done
sleep 1
CARRIER=""
for p in "${!before[@]}"; do
  [ "$(awk '{print $5}' /sys/block/$p/stat)" -gt "${before[$p]}" ] && CARRIER=$p
done
PORT=$(grep -o 'trsvcid=[0-9]*' /sys/block/$CARRIER/device/address 2>/dev/null | cut -d= -f2)
ID=$([ "$PORT" = 4421 ] && echo 2 || echo 1)
java -XX:TieredStopAtLevel=1 -Xmx128m --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -jar "$JAR" admin \
  --state-dir /tmp/nvmeof-state-multipath listener-remove $ID > "$RESULTS/$JOB-remove.out" 2>&1
check "listener $ID (port $PORT, the path carrying the I/O: $CARRIER) removed during fio" \
  sh -c "[ -n '$PORT' ] && grep -q 'removed listener' '$RESULTS/$JOB-remove.out'"
# Bounded: with one path only (the namespace not shared), the head queues I/O while the path reconnects, for as long
# as ctrl_loss_tmo (600 s).
for i in $(seq 1 300); do kill -0 $FIO 2>/dev/null || break; sleep 1; done
kill $FIO 2>/dev/null
wait $FIO
rc=$?
check "fio randwrite+verify went on through the other path (exit $rc, err 0)" \
  sh -c "[ $rc -eq 0 ] && grep -q '\"error\" : 0' '$RESULTS/fio-failover.json'"
nvme list-subsys > "$RESULTS/$JOB-list-subsys-after.txt" 2>&1
nvme disconnect -n $NQN > /dev/null 2>&1
kill $TARGET_PID
dmesg > "$RESULTS/dmesg-multipath.txt" 2>&1
finish
