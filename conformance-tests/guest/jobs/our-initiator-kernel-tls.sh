#!/bin/bash
# Our initiator (the CLI's write and read) over NVMe/TCP with TLS 1.3 to the Linux kernel's target (nvmet-tcp, Debian
# 13's 6.12 kernel: guest.sh --kernel trixie): the port requires TLS (addr_tsas tls1.3), tlshd does nvmet's
# handshakes, and the PSK is the one nvme-cli 2.13 derived into the kernel's .nvme keyring from a key it generated.
# The right key writes and reads back; a wrong key is refused by nvmet, and plain TCP too.
JOB=our-initiator-kernel-tls
. "$(dirname "$0")/lib.sh"
REPO="${REPO:?REPO must name the checkout}"
JAR="$REPO/nvmeof-cli/target/nvmeof.jar"
[ -f "$JAR" ] || { fail "no nvmeof.jar: build the project on the host first"; finish; exit 1; }
NQN=nqn.2026-12.io.nvmeof:kernel-tls
HOST=nqn.2014-08.org.nvmexpress:uuid:0e0e0e0e-1111-4444-8888-000000000001

modprobe -a nvmet nvmet-tcp
userland_up || { fail "tlshd did not start: $(tail -3 "$RESULTS/$JOB-tlshd.log" | tr '\n' ' ')"; finish; exit 1; }
KEY=$(U nvme gen-tls-key --hmac=1 2>/dev/null | tail -1)
OTHER=$(U nvme gen-tls-key --hmac=1 2>/dev/null | tail -1)
U nvme check-tls-key --keydata="$KEY" --hostnqn=$HOST --subsysnqn=$NQN --identity=0 --insert > "$RESULTS/$JOB-insert.txt" 2>&1
check "nvme-cli put the PSK in the kernel's .nvme keyring" grep -q "NVMe0R01 $HOST $NQN" /proc/keys

truncate -s 64M /dev/shm/kernel-tls.img
mkdir -p "$NVMET/subsystems/$NQN"
echo 0 > "$NVMET/subsystems/$NQN/attr_allow_any_host"
nvmet_namespace $NQN 1 /dev/shm/kernel-tls.img
mkdir -p "$NVMET/hosts/$HOST"
ln -s "$NVMET/hosts/$HOST" "$NVMET/subsystems/$NQN/allowed_hosts/$HOST"
p="$NVMET/ports/1"
mkdir -p "$p"
echo tcp > "$p/addr_trtype"; echo ipv4 > "$p/addr_adrfam"; echo $GUEST_IP > "$p/addr_traddr"; echo 4420 > "$p/addr_trsvcid"
echo tls1.3 > "$p/addr_tsas"
echo required > "$p/addr_treq"
ln -s "$NVMET/subsystems/$NQN" "$p/subsystems/$NQN"
check "nvmet's port requires TLS 1.3 (addr_tsas $(cat $p/addr_tsas), addr_treq $(cat $p/addr_treq))" \
  sh -c "grep -q tls1.3 $p/addr_tsas && grep -q required $p/addr_treq"

J="java -XX:TieredStopAtLevel=1 -Xmx256m --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -jar $JAR"
C="-t tcp -a $GUEST_IP -s 4420 -n $NQN -q $HOST --ctrl-loss-tmo 0"
head -c 65536 /dev/urandom > /tmp/pattern.bin
roundtrip() { # KEY
  $J write $C --tls-key "$1" --tls-key-derivation legacy -l 64 -i /tmp/pattern.bin > "$RESULTS/$JOB-write.out" 2>&1 &&
  $J read $C --tls-key "$1" --tls-key-derivation legacy -l 64 --count 128 -o /tmp/back.bin > "$RESULTS/$JOB-read.out" 2>&1 &&
  cmp -n 65536 /tmp/pattern.bin /tmp/back.bin
}
check "our initiator writes and reads back over TLS with nvmet (tlshd on the target's side)" roundtrip "$KEY"
check "tlshd did nvmet's handshake" grep -q "was successful" "$RESULTS/$JOB-tlshd.log"
$J read $C --tls-key "$OTHER" --tls-key-derivation legacy -l 0 --count 1 -o /dev/null > "$RESULTS/$JOB-wrong.out" 2>&1
rc=$?
check "a wrong key is refused, and the CLI says the TLS handshake failed (exit $rc)" \
  sh -c "[ $rc -ne 0 ] && grep -q 'TLS handshake' '$RESULTS/$JOB-wrong.out'"
$J read $C -l 0 --count 1 -o /dev/null > "$RESULTS/$JOB-plain.out" 2>&1
rc=$?
check "plain TCP to nvmet's TLS port is refused (exit $rc)" [ $rc -ne 0 ]
check "no key in our CLI's messages" sh -c "! grep -q 'NVMeTLSkey-1:0[0-2]:[A-Za-z0-9+/]' '$RESULTS'/$JOB-*.out"
nvmet_clear
rmdir "$NVMET/hosts/$HOST" 2>/dev/null
kill $TLSHD_PID 2>/dev/null
finish
