#!/bin/bash
# In-band authentication (DH-HMAC-CHAP) between the Linux kernel's NVMe/TCP host and our target, in the guest. The
# secrets come from nvme-cli ('nvme gen-dhchap-key', an implementation we did not write); the kernel computes its
# side of every exchange. Right secrets connect and pass fio verify, one way and both ways, with and without a DH
# group; a wrong secret, a missing secret and a wrong controller secret are refused, and the target keeps serving.
JOB=kernel-host-auth
. "$(dirname "$0")/lib.sh"
PORT=4420
REPO="${REPO:?REPO must name the checkout}"
NQN=nqn.2026-12.io.nvmeof:auth
JAR="$REPO/nvmeof-cli/target/nvmeof.jar"
[ -f "$JAR" ] || { fail "no $JAR: build the project on the host first"; finish; exit 1; }
modprobe -a nvme-tcp nvme-fabrics

ONE=nqn.2014-08.org.nvmexpress:uuid:0b0b0b0b-1111-4444-8888-000000000001   # null group, SHA-256, one way
TWO=nqn.2014-08.org.nvmexpress:uuid:0b0b0b0b-1111-4444-8888-000000000002   # ffdhe2048, SHA-384, both ways
KEY1=$(nvme gen-dhchap-key --hmac=1 --nqn=$ONE 2>/dev/null)
KEY2=$(nvme gen-dhchap-key --hmac=2 --nqn=$TWO 2>/dev/null)
CKEY2=$(nvme gen-dhchap-key --hmac=0 --key-length=64 --nqn=$NQN 2>/dev/null)
OTHER=$(nvme gen-dhchap-key --hmac=1 --nqn=$ONE 2>/dev/null)
case "$KEY1$KEY2$CKEY2$OTHER" in
  *DHHC-1:01:*DHHC-1:02:*DHHC-1:00:*DHHC-1:01:*) pass "nvme gen-dhchap-key made four secrets" ;;
  *) fail "nvme gen-dhchap-key did not make secrets: '$KEY1' '$KEY2'"; finish; exit 1 ;;
esac

cat > /tmp/target.json <<JSON
{
  "pollGroups": 1,
  "listeners": [ { "transport": "tcp", "address": "$GUEST_IP", "port": $PORT } ],
  "hosts": [ { "nqn": "$ONE", "dhchapKey": "$KEY1" },
             { "nqn": "$TWO", "dhchapKey": "$KEY2", "dhchapCtrlKey": "$CKEY2", "dhchapHash": "hmac(sha384)",
               "dhchapDhGroup": "ffdhe2048" } ],
  "subsystems": [ {
    "nqn": "$NQN", "allowAnyHost": false, "hosts": [ "$ONE", "$TWO" ],
    "namespaces": [ { "nsid": 1, "backend": "ram", "size": "64MiB", "blockSize": 512 } ] } ]
}
JSON
if ! our_target_up /tmp/target.json "$RESULTS/our-target-auth.log" /tmp/nvmeof-state-auth; then
  fail "our target did not start: $(tail -3 "$RESULTS/our-target-auth.log" | tr '\n' ' ')"
  finish; exit 1
fi
pass "our target started with two hosts that must authenticate (${TARGET_UP_S}s)"

connect() { # HOSTNQN, then nvme connect's secret options
  local host=$1; shift
  nvme connect -t tcp -a $GUEST_IP -s $PORT -n $NQN -q $host -i 1 "$@" > /tmp/connect.out 2>&1 && wait_dev $NQN 60 > /dev/null
}
refused() { # the same, which must fail and leave no controller
  if connect "$@"; then nvme disconnect -n $NQN > /dev/null 2>&1; return 1; fi
  ! nvme_dev_for $NQN > /dev/null
}

if connect $ONE --dhchap-secret="$KEY1"; then
  pass "the kernel host authenticates with its secret (null group, SHA-256)"
  check "fio randwrite+verify after DH-HMAC-CHAP" fio_verify auth-one "$(nvme_dev_for $NQN)" 4k 8 4M
  check "nvme disconnect" nvme disconnect -n $NQN
else
  fail "nvme connect --dhchap-secret: $(tail -2 /tmp/connect.out | tr '\n' ' ') $(dmesg | grep -i 'auth\|nvme' | tail -3 | tr '\n' ' ')"
fi

if connect $TWO --dhchap-secret="$KEY2" --dhchap-ctrl-secret="$CKEY2"; then
  pass "the kernel host and our controller authenticate each other (ffdhe2048, SHA-384)"
  check "fio randwrite+verify after bidirectional DH-HMAC-CHAP" fio_verify auth-two "$(nvme_dev_for $NQN)" 4k 8 4M
  check "nvme disconnect (bidirectional)" nvme disconnect -n $NQN
else
  fail "nvme connect --dhchap-ctrl-secret: $(tail -2 /tmp/connect.out | tr '\n' ' ') $(dmesg | grep -i 'auth\|nvme' | tail -3 | tr '\n' ' ')"
fi

check "a wrong secret is refused" refused $ONE --dhchap-secret="$OTHER"
check "no secret is refused" refused $ONE
check "a wrong controller secret is refused by the host" refused $TWO --dhchap-secret="$KEY2" --dhchap-ctrl-secret="$OTHER"
check "the target logged each refusal" sh -c "[ \$(grep -c 'failed to authenticate' '$RESULTS/our-target-auth.log') -ge 1 ]"
check "no secret in the target's log" sh -c "! grep -q 'DHHC-1:0[0-3]:[A-Za-z0-9+/]' '$RESULTS/our-target-auth.log'"
check "the kernel host verified our controller's response (dmesg: controller authenticated)" \
  sh -c "dmesg | grep -q 'qid 0: controller authenticated'"

if connect $ONE --dhchap-secret="$KEY1"; then
  pass "after the refusals the host with the right secret still connects"
  nvme disconnect -n $NQN > /dev/null 2>&1
else
  fail "after the refusals the right secret no longer connects: $(tail -2 /tmp/connect.out | tr '\n' ' ')"
fi
kill $TARGET_PID
dmesg > "$RESULTS/dmesg-auth.txt" 2>&1
finish
