#!/bin/bash
# NVMe/RDMA side by side in the Soft-RoCE guest (docs/performance.md, "NVMe/RDMA: the regression issue 33 reported
# is not there"): each target in turn on the guest's vCPUs, one polling host on vCPU 1, 4 KiB random reads at QD 16
# of a 128 MiB RAM namespace, 10 s after 4 s of warm-up. Prints a line per run: IOPS and p99.9 (SPDK's host) or the
# bench's summary.
#   conformance-tests/guest/guest.sh --rdma --share "$PWD" --share "$SPDK" [--share DIR-OF-OTHER-BUILDS] -- \
#       env SPDK="$SPDK" OUT="$PWD/target/rdma-side" "$PWD/docs/bench/rdma-guest-side.sh" HOST TARGET...
# HOST: perf (SPDK's spdk_nvme_perf) or bench (this build's bench, --busy-poll-us 200).
# TARGET: LABEL=JAR (our target from that nvmeof.jar, over both vCPUs), LABEL=JAR@placed (its poll group alone on
#   vCPU 0: --poll-group-cpus 0, for builds that have it), LABEL=JAR@pinned (taskset -c 0), or spdk (SPDK's
#   nvmf_tgt -m 0x1 with a Malloc bdev, on vCPU 0; measured here with HOST perf only).
# SPDK is a build of SPDK with RDMA that the user has made; nothing here builds it. OUT (default /tmp/rdma-side,
# inside the guest and lost with it) should be under a --share folder to keep the logs.
set -u
HOST=$1; shift
IP=10.0.2.15; OUT=${OUT:-/tmp/rdma-side}; mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")/../.." && pwd); MAIN=$HERE/nvmeof-cli/target/nvmeof.jar
JO="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx768m --add-exports java.base/jdk.internal.misc=ALL-UNNAMED"
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:6c2f1b4e-3a1d-4a8e-9a57-0f6f3e2d9b11

drive() { # label nqn port
  if [ "$HOST" = perf ]; then
    LD_LIBRARY_PATH=$SPDK/build/lib taskset -c 1 "$SPDK/build/bin/spdk_nvme_perf" --no-huge -s 1024 -c 0x2 -q 16 \
      -o 4096 -w randread -t 10 -a 4 -LL \
      -r "trtype:RDMA adrfam:IPv4 traddr:$IP trsvcid:$3 subnqn:$2 hostnqn:$HOSTNQN" > "$OUT/$1.host" 2>&1
    echo "$1: $(grep -E '^Total' "$OUT/$1.host" | awk '{ print $3 " IOPS" }') p99.9 $(grep -m1 '99.90000%' \
      "$OUT/$1.host" | awk '{ print $3 }') ($(grep -c ERROR "$OUT/$1.host") errors)"
  else
    taskset -c 1 java $JO -jar "$MAIN" bench -t rdma -a $IP -s "$3" -n "$2" --busy-poll-us 200 --rw randread --bs 4k \
      --qd 16 --time 10 --ramp 4 > "$OUT/$1.host" 2>&1
    echo "$1: $(grep -E 'IOPS|latency' "$OUT/$1.host" | tail -2 | tr -s ' ' | tr '\n' ' ')"
  fi
}

for t in "$@"; do
  if [ "$t" = spdk ]; then
    sock=/tmp/nvmeof-spdk-side.$$.sock; rm -f "$sock"; N=nqn.2016-06.io.spdk:cnode1 # not on a 9p share: no sockets there
    LD_LIBRARY_PATH=$SPDK/build/lib taskset -c 0 "$SPDK/build/bin/nvmf_tgt" -m 0x1 -u --no-huge -s 1024 -r "$sock" \
      > "$OUT/spdk.target.log" 2>&1 &
    tp=$!
    for i in $(seq 100); do [ -S "$sock" ] && break; sleep 0.2; done
    R="/usr/bin/python3 $SPDK/scripts/rpc.py -s $sock"
    { $R nvmf_create_transport -t RDMA && $R bdev_malloc_create -b Malloc0 128 4096 &&
      $R nvmf_create_subsystem $N -a -s SPDK1 && $R nvmf_subsystem_add_ns $N Malloc0 &&
      $R nvmf_subsystem_add_listener $N -t rdma -a $IP -s 4422; } > /dev/null ||
      { echo "spdk: setup failed: $(tail -3 "$OUT/spdk.target.log")"; kill $tp 2> /dev/null; wait $tp 2> /dev/null
        continue; }
    drive spdk $N 4422
  else
    label=${t%%=*}; jar=${t#*=}; mode=; place=
    case $jar in *@placed) mode="--poll-group-cpus 0"; jar=${jar%@placed} ;;
                 *@pinned) place="taskset -c 0"; jar=${jar%@pinned} ;; esac
    $place java $JO -jar "$jar" target --transport rdma --address $IP --port 4421 --size 128MiB --block-size 4096 \
      $mode > "$OUT/$label.target.log" 2>&1 &
    tp=$!
    for i in $(seq 120); do grep -q "istening" "$OUT/$label.target.log" && break; sleep 0.5; done
    kill -0 $tp 2> /dev/null || { echo "$label: the target ended: $(tail -3 "$OUT/$label.target.log")"; continue; }
    drive "$label" nqn.2026-11.io.nvmeof:default 4421
  fi
  kill $tp; wait $tp 2> /dev/null
done
