#!/bin/bash
# Issue 35 (part 3): discovery referrals with the Linux kernel host (Debian 12: 6.1, nvme-cli 2.3). Two of our target
# processes: target A's discovery log refers hosts to target B's discovery service (a referral added live through
# the admin CLI). nvme discover against A prints B's referral ("subtype: discovery subsystem referral"), a persistent
# discovery controller on A gets the Discovery Log Change notice (the kernel's uevent NVME_AEN=0x70f002), and
# nvme connect-all against A follows the referral: it connects to A's subsystem and to B's. Removing the referral
# removes the entry.
JOB=kernel-host-referral
. "$(dirname "$0")/lib.sh"
REPO="${REPO:?REPO must name the checkout}"
JAR="$REPO/nvmeof-cli/target/nvmeof.jar"
[ -f "$JAR" ] || { fail "no $JAR: build the project on the host first"; finish; exit 1; }
NQN_A=nqn.2026-12.io.nvmeof:referral-a
NQN_B=nqn.2026-12.io.nvmeof:referral-b
STATE_A=/tmp/nvmeof-state-referral-a
STATE_B=/tmp/nvmeof-state-referral-b
# A state file from an earlier run would win over --config.
rm -rf "$STATE_A" "$STATE_B"
modprobe -a nvme-tcp nvme-fabrics
admin_a() {
  java -XX:TieredStopAtLevel=1 -Xmx128m --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -jar "$JAR" admin \
    --url http://127.0.0.1:8081 --state-dir "$STATE_A" "$@"
}
cat > /tmp/target-referral-b.json <<JSON
{ "pollGroups": 1,
  "listeners": [ { "id": 1, "transport": "tcp", "address": "$GUEST_IP", "port": 4430 } ],
  "subsystems": [ { "nqn": "$NQN_B", "namespaces": [ { "nsid": 1, "backend": "ram", "size": "64MiB", "blockSize": 512 } ] } ] }
JSON
cat > /tmp/target-referral-a.json <<JSON
{ "pollGroups": 1,
  "listeners": [ { "id": 1, "transport": "tcp", "address": "$GUEST_IP", "port": 4420 } ],
  "subsystems": [ { "nqn": "$NQN_A", "namespaces": [ { "nsid": 1, "backend": "ram", "size": "64MiB", "blockSize": 512 } ] } ] }
JSON
if ! our_target_up /tmp/target-referral-b.json "$RESULTS/our-target-referral-b.log" "$STATE_B" \
    --admin-listen 127.0.0.1:8082; then
  fail "target B did not start: $(tail -3 "$RESULTS/our-target-referral-b.log" | tr '\n' ' ')"
  finish; exit 1
fi
PID_B=$TARGET_PID
if ! our_target_up /tmp/target-referral-a.json "$RESULTS/our-target-referral-a.log" "$STATE_A" \
    --admin-listen 127.0.0.1:8081; then
  fail "target A did not start: $(tail -3 "$RESULTS/our-target-referral-a.log" | tr '\n' ' ')"
  kill $PID_B; finish; exit 1
fi
PID_A=$TARGET_PID
pass "targets A ($GUEST_IP:4420) and B ($GUEST_IP:4430) started"

# A persistent discovery controller on A, and the kernel's uevents, to see the notice the referral raises.
udevadm monitor --kernel --property --subsystem-match=nvme > "$RESULTS/$JOB-uevents.txt" 2>&1 &
UDEV=$!
check "nvme discover --persistent against A" nvme discover -p -t tcp -a $GUEST_IP -s 4420
sleep 1
admin_a referral-add --address $GUEST_IP --port 4430 > "$RESULTS/$JOB-add.out" 2>&1
check "referral to B added through A's admin API ($(head -1 "$RESULTS/$JOB-add.out"))" \
  grep -q "^referral 1: tcp $GUEST_IP:4430" "$RESULTS/$JOB-add.out"
for i in $(seq 1 10); do grep -q 'NVME_AEN=0x70f002' "$RESULTS/$JOB-uevents.txt" && break; sleep 1; done
check "the persistent discovery controller got the Discovery Log Change notice (uevent NVME_AEN=0x70f002)" \
  grep -q 'NVME_AEN=0x70f002' "$RESULTS/$JOB-uevents.txt"
kill $UDEV 2>/dev/null

nvme discover -t tcp -a $GUEST_IP -s 4420 > "$RESULTS/$JOB-discover.txt" 2>&1
check "nvme discover against A lists B's referral (subtype: discovery subsystem referral, trsvcid 4430)" \
  sh -c "grep -A6 'subtype: *discovery subsystem referral' '$RESULTS/$JOB-discover.txt' | grep -q 'trsvcid: *4430'"
check "nvme discover against A lists A's own subsystem" grep -q "subnqn: *$NQN_A" "$RESULTS/$JOB-discover.txt"
check "nvme discover against A does not list B's subsystem itself" \
  sh -c "! grep -q 'subnqn: *$NQN_B' '$RESULTS/$JOB-discover.txt'"
nvme discover -t tcp -a $GUEST_IP -s 4420 -o json > "$RESULTS/$JOB-discover.json" 2>&1

# connect-all follows the referral (nvme-cli reads B's log through a discovery controller of its own). udev's
# autoconnect rule may have done it already on the notice: either way both subsystems end up connected.
nvme connect-all -t tcp -a $GUEST_IP -s 4420 > "$RESULTS/$JOB-connect-all.txt" 2>&1
sleep 2
cat /sys/class/nvme-subsystem/*/subsysnqn > "$RESULTS/$JOB-subsystems.txt" 2>&1
check "nvme connect-all against A connected A's subsystem" grep -qx "$NQN_A" "$RESULTS/$JOB-subsystems.txt"
check "nvme connect-all against A followed the referral and connected B's subsystem" \
  grep -qx "$NQN_B" "$RESULTS/$JOB-subsystems.txt"
DEV_B=$(wait_dev $NQN_B 10)
check "B's namespace is a block device here ($DEV_B)" sh -c "[ -n '$DEV_B' ] && [ -b '$DEV_B' ]"
nvme list-subsys > "$RESULTS/$JOB-list-subsys.txt" 2>&1
nvme disconnect -n $NQN_A > /dev/null 2>&1
nvme disconnect -n $NQN_B > /dev/null 2>&1

admin_a referral-remove 1 > "$RESULTS/$JOB-remove.out" 2>&1
check "referral removed through A's admin API" grep -q "removed referral 1" "$RESULTS/$JOB-remove.out"
nvme discover -t tcp -a $GUEST_IP -s 4420 > "$RESULTS/$JOB-discover-after.txt" 2>&1
check "nvme discover against A no longer lists a referral" \
  sh -c "grep -q 'subnqn: *$NQN_A' '$RESULTS/$JOB-discover-after.txt' && ! grep -q 'subsystem referral' '$RESULTS/$JOB-discover-after.txt'"

nvme disconnect-all > /dev/null 2>&1
kill $PID_A $PID_B
dmesg > "$RESULTS/dmesg-referral.txt" 2>&1
finish
