#!/bin/bash
# Shared helpers for the guest jobs: checks that count passes and failures, kernel nvmet configuration through
# configfs, fio runs that keep their JSON, and waiting for block devices.
set -u
RESULTS="${RESULTS:?RESULTS must name the results folder}"
JOB="${JOB:?JOB must name this job}"
mkdir -p "$RESULTS"
# A JVM that crashes leaves its hs_err report with the results, not in the shared checkout.
export JAVA_TOOL_OPTIONS="-XX:ErrorFile=$RESULTS/hs_err_pid%p.log"
CRASHES_BEFORE=$(ls "$RESULTS"/hs_err_pid*.log 2>/dev/null | wc -l)
SUMMARY="$RESULTS/$JOB.summary"
: > "$SUMMARY"
GUEST_IP=10.0.2.15
PASSES=0
FAILS=0

log() { echo "[$JOB $(date +%H:%M:%S)] $*"; }

pass() { PASSES=$((PASSES + 1)); echo "PASS $*" >> "$SUMMARY"; log "PASS $*"; }
fail() { FAILS=$((FAILS + 1)); echo "FAIL $*" >> "$SUMMARY"; log "FAIL $*"; }

# check NAME COMMAND...: runs COMMAND, records pass or fail with its output tail.
check() {
  local name="$1"; shift
  local out
  if out="$("$@" 2>&1)"; then
    pass "$name"
  else
    fail "$name: $(echo "$out" | tail -3 | tr '\n' ' ')"
  fi
}

finish() {
  local crashes
  crashes=$(ls "$RESULTS"/hs_err_pid*.log 2>/dev/null | wc -l)
  if [ "$crashes" -gt "$CRASHES_BEFORE" ]; then
    fail "a JVM crashed during this job: $(ls -t "$RESULTS"/hs_err_pid*.log | head -1) ($(grep -m1 'Problematic frame' -A1 "$(ls -t "$RESULTS"/hs_err_pid*.log | head -1)" | tail -1))"
  fi
  # Count from the summary: some checks are recorded there directly (lines a Java checker printed).
  PASSES=$(grep -c '^PASS' "$SUMMARY")
  FAILS=$(grep -c '^FAIL' "$SUMMARY")
  log "$PASSES passed, $FAILS failed"
  echo "$PASSES passed, $FAILS failed"
  [ "$FAILS" -eq 0 ]
}

# ---- kernel target (nvmet) through configfs ----
NVMET=/sys/kernel/config/nvmet

nvmet_subsystem() { # NQN
  mkdir -p "$NVMET/subsystems/$1"
  echo 1 > "$NVMET/subsystems/$1/attr_allow_any_host"
}

nvmet_namespace() { # NQN NSID DEVICE_OR_FILE
  local ns="$NVMET/subsystems/$1/namespaces/$2"
  mkdir -p "$ns"
  echo -n "$3" > "$ns/device_path"
  # Files on tmpfs cannot be opened O_DIRECT; nvmet needs buffered I/O for them.
  [ -f "$3" ] && echo 1 > "$ns/buffered_io"
  echo 1 > "$ns/enable"
}

nvmet_port() { # ID TRTYPE ADDR PORT NQN...
  local id="$1" tr="$2" addr="$3" svc="$4"; shift 4
  local p="$NVMET/ports/$id"
  mkdir -p "$p"
  echo "$tr" > "$p/addr_trtype"
  echo ipv4 > "$p/addr_adrfam"
  echo "$addr" > "$p/addr_traddr"
  echo "$svc" > "$p/addr_trsvcid"
  for nqn in "$@"; do ln -s "$NVMET/subsystems/$nqn" "$p/subsystems/$nqn"; done
}

nvmet_clear() {
  [ -d "$NVMET" ] || return 0
  for p in "$NVMET"/ports/*; do
    [ -d "$p" ] || continue
    rm -f "$p"/subsystems/* 2>/dev/null
    rmdir "$p" 2>/dev/null
  done
  for s in "$NVMET"/subsystems/*; do
    [ -d "$s" ] || continue
    for n in "$s"/namespaces/*; do [ -d "$n" ] && { echo 0 > "$n/enable"; rmdir "$n"; }; done
    rmdir "$s" 2>/dev/null
  done
}

# ---- kernel host ----
# Block device of the first namespace of the controller connected to NQN, or nothing.
nvme_dev_for() {
  local nqn="$1" c
  for c in /sys/class/nvme/nvme*; do
    [ -f "$c/subsysnqn" ] || continue
    if [ "$(cat "$c/subsysnqn")" = "$nqn" ]; then
      for n in /sys/block/"$(basename "$c")"n* /sys/block/nvme*c"${c##*nvme}"n*; do
        [ -e "$n" ] && { echo "/dev/$(basename "$n")"; return 0; }
      done
      # Multipath: the namespace block device is nvmeXnY where X is the subsystem instance.
      local sub; sub="$(basename "$(readlink -f "$c/subsystem")" 2>/dev/null)"
      for n in /sys/class/nvme-subsystem/"$sub"/nvme*n*; do
        [ -e "$n" ] && { echo "/dev/$(basename "$n")"; return 0; }
      done
    fi
  done
  return 1
}

wait_dev() { # NQN SECONDS
  local i
  for i in $(seq 1 $(( $2 * 5 ))); do
    nvme_dev_for "$1" && return 0
    sleep 0.2
  done
  return 1
}

# fio_verify NAME DEVICE BS QD SIZE: random write, then read back and verify every block (crc32c).
fio_verify() {
  fio --name="$1" --filename="$2" --ioengine=libaio --direct=1 --rw=randwrite --bs="$3" --iodepth="$4" \
      --size="$5" --verify=crc32c --verify_fatal=1 --do_verify=1 --randrepeat=0 --verify_state_save=0 \
      --output-format=json --output="$RESULTS/fio-$1.json"
}

# fio_perf NAME DEVICE RW BS QD SECONDS: timed run for the side-by-side table (no verify).
fio_perf() {
  fio --name="$1" --filename="$2" --ioengine=libaio --direct=1 --rw="$3" --bs="$4" --iodepth="$5" \
      --time_based=1 --runtime="$6" --ramp_time=2 --size=64M --lat_percentiles=1 \
      --output-format=json --output="$RESULTS/perf-$1.json"
}

# engine_verify NAME TRANSPORT ADDR PORT NQN NSID: Debian's fio driving our initiator through the external engine
# (native/target/fio/nvmeof-fio.so): random 4 KiB writes with CRC32C, every block read back and verified, then a
# mixed 4-128 KiB workload verified with MD5 (4 KiB: nvmet's file namespaces have 4096-byte blocks; 512 B I/O is
# covered on the host by FioEngineTest). Skipped, saying so, when the engine was not built.
engine_verify() {
  local name=$1 tr=$2 addr=$3 port=$4 nqn=$5 nsid=$6 engine="$REPO/native/target/fio/nvmeof-fio.so" out rc
  out="$RESULTS/fio-engine-$name"
  if [ ! -f "$engine" ]; then
    pass "fio through our engine against $name: skipped, the engine was not built (no fio source at build time)"
    return
  fi
  NVMEOF_FIO_JAVA_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx512m" \
  fio --output-format=json --output="$out.json" --ioengine=external:"$engine" --trtype="$tr" --traddr="$addr" \
      --trsvcid="$port" --subnqn="$nqn" --nsid="$nsid" --verify_fatal=1 --do_verify=1 --verify_state_save=0 \
      --name=crc32c --rw=randwrite --bs=4k --iodepth=16 --size=32M --verify=crc32c \
      --name=md5 --stonewall --rw=randrw --bssplit=4k/30:16k/30:64k/30:128k/10 --iodepth=8 --offset=32M --size=16M \
      --verify=md5 > "$out.log" 2>&1
  rc=$?
  check "fio through our engine over $tr against $name: crc32c random writes and an md5 mixed workload verified" \
    python3 -c "
import json
assert $rc == 0, 'fio exited $rc: ' + open('$out.log').read()[-400:]
jobs = json.load(open('$out.json'))['jobs']
assert len(jobs) == 2, jobs
for j in jobs:
    assert j['error'] == 0, j['jobname'] + ' error ' + str(j['error'])
    assert j['read']['io_bytes'] > 0 and j['write']['io_bytes'] > 0, j['jobname'] + ' moved no data'
assert jobs[0]['read']['io_bytes'] == 32 << 20, 'not every block was read back: ' + str(jobs[0]['read']['io_bytes'])"
}

# engine_perf NAME TRANSPORT ADDR PORT NQN NSID: the side-by-side workloads of fio_perf, run by fio through our engine
# instead of the kernel host (perf-engine-NAME-WORKLOAD.json), for the engine's column of the guest table.
engine_perf() {
  local name=$1 tr=$2 addr=$3 port=$4 nqn=$5 nsid=$6 engine="$REPO/native/target/fio/nvmeof-fio.so" spec wl rw bs qd
  [ -f "$engine" ] || { pass "fio perf through our engine against $name: skipped, the engine was not built"; return; }
  for spec in randread-4k-qd1:randread:4k:1 randread-4k-qd16:randread:4k:16 randwrite-4k-qd16:randwrite:4k:16 \
              read-128k-qd16:read:128k:16; do
    IFS=: read -r wl rw bs qd <<< "$spec"
    check "fio perf through our engine over $tr against $name: $wl" env \
      NVMEOF_FIO_JAVA_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx512m" \
      fio --name="engine-$name-$wl" --ioengine=external:"$engine" --thread=1 --trtype="$tr" --traddr="$addr" \
      --trsvcid="$port" --subnqn="$nqn" --nsid="$nsid" --rw="$rw" --bs="$bs" --iodepth="$qd" --time_based=1 \
      --runtime=10 --ramp_time=2 --size=64M --lat_percentiles=1 --output-format=json \
      --output="$RESULTS/perf-engine-$name-$wl.json"
  done
}

# initiator_bench NAME TRANSPORT ADDR PORT NQN NSID: our initiator's own benchmark (nvmeof.jar bench) over the same
# workloads as fio_perf, fio-compatible JSON in perf-init-NAME-WORKLOAD.json (report.py tabulates them).
initiator_bench() {
  local name=$1 tr=$2 addr=$3 port=$4 nqn=$5 nsid=$6 spec wl rw bs qd out
  for spec in randread-4k-qd1:randread:4k:1 randread-4k-qd16:randread:4k:16 randwrite-4k-qd16:randwrite:4k:16 \
              read-128k-qd16:read:128k:16; do
    IFS=: read -r wl rw bs qd <<< "$spec"
    out="$RESULTS/perf-init-$name-$wl"
    java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx512m --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
      -jar "$REPO/nvmeof-cli/target/nvmeof.jar" bench -t "$tr" -a "$addr" -s "$port" -n "$nqn" -N "$nsid" \
      --rw "$rw" --bs "$bs" --qd "$qd" --time 8 --ramp 2 --size 64M --json > "$out.json" 2> "$out.log"
    local rc=$?
    # Exit status 0 too: a JVM that crashed while closing after printing its JSON must not pass.
    check "our initiator's bench over $tr against $name: $wl" python3 -c "
import json, sys
assert $rc == 0, 'bench exited $rc: ' + open('$out.log').read()[-300:]
j = json.load(open('$out.json'))['jobs'][0]
assert j['read']['iops'] + j['write']['iops'] > 0, 'no I/O'"
  done
}

# ---- TLS (guest.sh --kernel trixie): another release's nvme-cli and tlshd, run with chroot ----
# userland_up: mounts what its tools need, writes tlshd's configuration (keys from the kernel's .nvme keyring) and
# starts tlshd, which does the kernel's TLS handshakes. U runs a command in it.
userland_up() {
  UL="${GUEST_USERLAND:?GUEST_USERLAND: run this job with guest.sh --kernel trixie}"
  mount -t proc proc "$UL/proc" && mount --bind /sys "$UL/sys" && mount --bind /dev "$UL/dev" || return 1
  mkdir -p "$UL/etc/tlshd"
  printf '[debug]\nloglevel=0\n[authenticate]\nkeyrings=.nvme\n[authenticate.client]\n[authenticate.server]\n' \
    > "$UL/etc/tlshd.conf"
  chroot "$UL" /usr/sbin/tlshd -c /etc/tlshd.conf -s > "$RESULTS/$JOB-tlshd.log" 2>&1 &
  TLSHD_PID=$!
  sleep 1
  kill -0 $TLSHD_PID 2>/dev/null
}
U() { chroot "$UL" "$@"; }

# our_target_up CONFIG LOG STATE_DIR [TARGET ARGS...]: starts our target from the checkout's nvmeof.jar ($JAR) in the background
# (TARGET_PID) and waits up to 120 s for it to say it started (TARGET_UP_S: how long it took).
our_target_up() {
  java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx512m --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
    -jar "$JAR" target --config "$1" --state-dir "$3" "${@:4}" > "$2" 2>&1 &
  TARGET_PID=$!
  local i
  for i in $(seq 1 120); do
    if grep -q "target started" "$2"; then TARGET_UP_S=$i; return 0; fi
    kill -0 $TARGET_PID 2>/dev/null || return 1
    sleep 1
  done
  return 1
}
