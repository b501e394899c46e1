#!/bin/bash
# Our initiator (the CLI's write and read) authenticating with DH-HMAC-CHAP to the Linux kernel's target (nvmet-tcp,
# Debian 13's 6.12 kernel: guest.sh --kernel trixie), secrets from nvme gen-dhchap-key set in nvmet's configfs.
# One way with the null group, both ways with ffdhe3072 and SHA-512; a wrong secret is refused by nvmet, a wrong
# controller secret by our host (nvmet cannot prove a secret it does not hold).
JOB=our-initiator-kernel-auth
. "$(dirname "$0")/lib.sh"
REPO="${REPO:?REPO must name the checkout}"
JAR="$REPO/nvmeof-cli/target/nvmeof.jar"
[ -f "$JAR" ] || { fail "no nvmeof.jar: build the project on the host first"; finish; exit 1; }
NQN=nqn.2026-12.io.nvmeof:kernel-auth
ONE=nqn.2014-08.org.nvmexpress:uuid:0c0c0c0c-1111-4444-8888-000000000001
TWO=nqn.2014-08.org.nvmexpress:uuid:0c0c0c0c-1111-4444-8888-000000000002

modprobe -a nvmet nvmet-tcp
truncate -s 64M /dev/shm/kernel-auth.img
KEY1=$(nvme gen-dhchap-key --hmac=1 --nqn=$ONE)
KEY2=$(nvme gen-dhchap-key --hmac=3 --nqn=$TWO)
CKEY2=$(nvme gen-dhchap-key --hmac=2 --nqn=$NQN)
OTHER=$(nvme gen-dhchap-key --hmac=1 --nqn=$ONE)

mkdir -p "$NVMET/subsystems/$NQN"
echo 0 > "$NVMET/subsystems/$NQN/attr_allow_any_host"
nvmet_namespace $NQN 1 /dev/shm/kernel-auth.img
for h in $ONE $TWO; do mkdir -p "$NVMET/hosts/$h"; ln -s "$NVMET/hosts/$h" "$NVMET/subsystems/$NQN/allowed_hosts/$h"; done
echo "$KEY1" > "$NVMET/hosts/$ONE/dhchap_key"
echo "$KEY2" > "$NVMET/hosts/$TWO/dhchap_key"
echo "$CKEY2" > "$NVMET/hosts/$TWO/dhchap_ctrl_key"
echo "hmac(sha512)" > "$NVMET/hosts/$TWO/dhchap_hash"
echo ffdhe3072 > "$NVMET/hosts/$TWO/dhchap_dhgroup"
nvmet_port 1 tcp $GUEST_IP 4420 $NQN

J="java -XX:TieredStopAtLevel=1 -Xmx256m --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -jar $JAR"
C="-t tcp -a $GUEST_IP -s 4420 -n $NQN --ctrl-loss-tmo 0"
head -c 65536 /dev/urandom > /tmp/pattern.bin

roundtrip() { # NAME HOST SECRET [CTRL_SECRET]: write the pattern at LBA 64, read it back, compare
  local name=$1 host=$2 secret=$3 ctrl=${4:-}
  $J write $C -q $host -S "$secret" ${ctrl:+-C "$ctrl"} -l 64 -i /tmp/pattern.bin > "$RESULTS/$JOB-$name-write.out" 2>&1 &&
  $J read $C -q $host -S "$secret" ${ctrl:+-C "$ctrl"} -l 64 --count 128 -o /tmp/back.bin > "$RESULTS/$JOB-$name-read.out" 2>&1 &&
  cmp -n 65536 /tmp/pattern.bin /tmp/back.bin
}

check "our initiator authenticates to nvmet (null group, SHA-256) and reads back what it wrote" roundtrip one $ONE "$KEY1"
check "our initiator and nvmet authenticate each other (ffdhe3072, SHA-512)" roundtrip two $TWO "$KEY2" "$CKEY2"
check "nvmet created the controllers with DH-HMAC-CHAP (dmesg)" sh -c "dmesg | grep -q 'with DH-HMAC-CHAP'"
$J read $C -q $ONE -S "$OTHER" -l 0 --count 1 -o /dev/null > "$RESULTS/$JOB-wrong.out" 2>&1
rc=$?
check "a wrong secret is refused, and the CLI says why (exit $rc)" sh -c "[ $rc -ne 0 ] && grep -qi 'authenticat' '$RESULTS/$JOB-wrong.out'"
$J read $C -q $TWO -S "$KEY2" -C "$OTHER" -l 0 --count 1 -o /dev/null > "$RESULTS/$JOB-impostor.out" 2>&1
rc=$?
check "a controller that cannot prove the controller secret is refused by our host (exit $rc)" \
  sh -c "[ $rc -ne 0 ] && grep -q \"controller's response does not match\" '$RESULTS/$JOB-impostor.out'"
check "no secret in our CLI's messages" sh -c "! grep -q 'DHHC-1:0[0-3]:[A-Za-z0-9+/]' '$RESULTS'/$JOB-*.out"
nvmet_clear
for h in $ONE $TWO; do rmdir "$NVMET/hosts/$h" 2>/dev/null; done
finish
