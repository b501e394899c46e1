#!/bin/bash
# NVMe/TCP over TLS 1.3 between the Linux kernel's host (Debian 13's 6.12, its nvme-cli 2.13 and tlshd: guest.sh
# --kernel trixie) and our target. The key comes from nvme-cli ('nvme gen-tls-key'), which also derives the TLS PSK
# the kernel uses (the legacy way, as nvme-cli up to 2.15 do); tlshd (GnuTLS) does the host's handshake. The right key
# connects and passes fio verify; the discovery log says TLS is required; a wrong key, plain TCP to the TLS port, and
# plain TCP for a host that has a key are refused; a host without a key still uses the port that allows both.
JOB=kernel-host-tls
. "$(dirname "$0")/lib.sh"
REPO="${REPO:?REPO must name the checkout}"
JAR="$REPO/nvmeof-cli/target/nvmeof.jar"
[ -f "$JAR" ] || { fail "no $JAR: build the project on the host first"; finish; exit 1; }
NQN=nqn.2026-12.io.nvmeof:tls
TLSHOST=nqn.2014-08.org.nvmexpress:uuid:0d0d0d0d-1111-4444-8888-000000000001
PLAIN=nqn.2014-08.org.nvmexpress:uuid:0d0d0d0d-1111-4444-8888-000000000002
modprobe -a nvme-tcp nvme-fabrics
userland_up || { fail "tlshd did not start: $(tail -3 "$RESULTS/$JOB-tlshd.log" | tr '\n' ' ')"; finish; exit 1; }
pass "tlshd runs ($(U tlshd --version 2>&1 | head -1); $(U nvme version | head -1))"
KEY=$(U nvme gen-tls-key --hmac=1 2>/dev/null | tail -1)
OTHER=$(U nvme gen-tls-key --hmac=1 2>/dev/null | tail -1)
case "$KEY$OTHER" in
  NVMeTLSkey-1:01:*NVMeTLSkey-1:01:*) pass "nvme gen-tls-key made two keys" ;;
  *) fail "nvme gen-tls-key did not make keys: '$KEY'"; finish; exit 1 ;;
esac

cat > /tmp/target.json <<JSON
{
  "pollGroups": 1,
  "listeners": [ { "id": 1, "transport": "tcp", "address": "$GUEST_IP", "port": 4420, "tls": "required" },
                 { "id": 2, "transport": "tcp", "address": "$GUEST_IP", "port": 4421, "tls": "allowed" } ],
  "hosts": [ { "nqn": "$TLSHOST", "tlsKey": "$KEY", "tlsKeyDerivation": "legacy" } ],
  "subsystems": [ {
    "nqn": "$NQN", "allowAnyHost": false, "hosts": [ "$TLSHOST", "$PLAIN" ],
    "namespaces": [ { "nsid": 1, "backend": "ram", "size": "64MiB", "blockSize": 512 } ] } ]
}
JSON
if ! our_target_up /tmp/target.json "$RESULTS/our-target-tls.log" /tmp/nvmeof-state-tls; then
  fail "our target did not start: $(tail -3 "$RESULTS/our-target-tls.log" | tr '\n' ' ')"
  finish; exit 1
fi
pass "our target started with a TLS-only listener and one that allows both (${TARGET_UP_S}s)"

connect() { # PORT HOSTNQN, then nvme connect's TLS options
  local port=$1 host=$2; shift 2
  U nvme connect -t tcp -a $GUEST_IP -s $port -n $NQN -q $host -i 1 "$@" > /tmp/connect.out 2>&1 && wait_dev $NQN 60 > /dev/null
}
refused() {
  if connect "$@"; then U nvme disconnect -n $NQN > /dev/null 2>&1; return 1; fi
  ! nvme_dev_for $NQN > /dev/null
}

# The discovery controller's PSK: the kernel looks it up in the .nvme keyring by host and discovery NQN.
U nvme check-tls-key --keydata="$KEY" --hostnqn=$TLSHOST --subsysnqn=nqn.2014-08.org.nvmexpress.discovery --insert \
  > "$RESULTS/$JOB-insert.txt" 2>&1
U nvme discover -t tcp -a $GUEST_IP -s 4420 -q $TLSHOST --tls > "$RESULTS/$JOB-discover.txt" 2>&1
# One entry per block: each block of port 4420 says required and TLS 1.3, each of 4421 not required and TLS 1.3.
entries() { awk -v RS='=====Discovery Log Entry' -v port="$1" '$0 ~ "trsvcid: *" port {
  t = ($0 ~ /treq: *required/) ? "required" : ($0 ~ /treq: *not required/) ? "not-required" : "other"
  s = ($0 ~ /sectype: *tls13/) ? "tls13" : "none"; print t "/" s }' "$RESULTS/$JOB-discover.txt" | sort -u; }
E4420=$(entries 4420); E4421=$(entries 4421)
check "nvme discover over TLS: port 4420 requires TLS 1.3 ($E4420), port 4421 allows it ($E4421)" \
  test "$E4420" = "required/tls13" -a "$E4421" = "not-required/tls13"

if connect 4420 $TLSHOST --tls --tls-key="$KEY"; then
  pass "the kernel host connects over TLS with its nvme-cli key (tlshd did the handshake)"
  check "our target made the controller over TLS" grep -q "created for host \"$TLSHOST\" .*TLS)" "$RESULTS/our-target-tls.log"
  check "fio randwrite+verify over TLS" fio_verify tls "$(nvme_dev_for $NQN)" 4k 8 8M
  check "fio randwrite+verify over TLS, 128 KiB blocks (records split and joined)" \
    fio_verify tls-128k "$(nvme_dev_for $NQN)" 128k 4 16M
  check "nvme disconnect" U nvme disconnect -n $NQN
else
  fail "nvme connect --tls: $(tail -2 /tmp/connect.out | tr '\n' ' ') $(dmesg | grep -i 'tls\|nvme' | tail -3 | tr '\n' ' ') $(tail -2 "$RESULTS/our-target-tls.log" | tr '\n' ' ')"
fi
check "a wrong key is refused" refused 4420 $TLSHOST --tls --tls-key="$OTHER"
check "plain TCP to the TLS-only port is refused" refused 4420 $PLAIN
check "plain TCP for a host that has a key is refused on the port that allows both" refused 4421 $TLSHOST
# nvme-cli gives every host NQN the machine's Host ID (/etc/nvme/hostid): the TLS host proved it its own above, so
# the keyless host may not borrow it (issue 51); with a Host ID of its own it connects.
check "a host without a key naming the Host ID the TLS host proved is refused" refused 4421 $PLAIN
check "the target says whose Host ID it is" grep -q "belongs to host .*$TLSHOST" "$RESULTS/our-target-tls.log"
PLAIN_ID=5a1e0000-0000-4000-8000-00000000000a
if connect 4421 $PLAIN --hostid=$PLAIN_ID; then
  pass "a host without a key uses the port that allows both in plain TCP"
  check "fio randwrite+verify in plain TCP beside TLS" fio_verify tls-plain "$(nvme_dev_for $NQN)" 4k 8 4M
  U nvme disconnect -n $NQN > /dev/null 2>&1
else
  fail "plain connect to the port that allows both: $(tail -2 /tmp/connect.out | tr '\n' ' ')"
fi
if connect 4421 $TLSHOST --tls --tls-key="$KEY"; then
  pass "the port that allows both takes TLS too"
  U nvme disconnect -n $NQN > /dev/null 2>&1
else
  fail "TLS connect to the port that allows both: $(tail -2 /tmp/connect.out | tr '\n' ' ')"
fi
check "the target logged each refusal" sh -c "grep -q 'TLS handshake with .* failed' '$RESULTS/our-target-tls.log' && grep -q 'must connect over TLS' '$RESULTS/our-target-tls.log'"
check "no key in the target's log" sh -c "! grep -q 'NVMeTLSkey-1:0[0-2]:[A-Za-z0-9+/]' '$RESULTS/our-target-tls.log'"
kill $TARGET_PID
kill $TLSHD_PID 2>/dev/null
dmesg > "$RESULTS/dmesg-tls.txt" 2>&1
finish
