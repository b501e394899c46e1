#!/bin/bash
# The issue-35 goals for the initiator's multipath, measured with ./nvmeof bench (docs/performance.md, "Several
# paths"). Two target processes export one file in /dev/shm as one namespace (same subsystem NQN, UUID and serial;
# controller ID ranges 1-999 and 1000-1999, as docs/architecture.md says to run them).
#   failover:  target A optimized, B non-optimized, both on 127.0.0.1; bench --rw randwrite at QD 32 over both paths;
#              A is killed (-9) KILL_AT seconds into the measured window. Prints the I/O errors, each path's I/Os and the longest time
#              without a completion (goal: no error, a pause of at most ANATT + 1 s = 11 s).
#   pause:     as failover, but A is paused (SIGSTOP) PAUSE seconds (default 15) KILL_AT seconds in, then resumed
#              (SIGCONT): the bench keeps going on B; the writes in flight on A wait until A can no longer run them
#              (twice KATO (-k, default 5 s here 2 s) plus its quiesce time), then go to B (issue 50).
#   aggregate: both optimized, round-robin; each target behind its own link, a veth pair from a network namespace
#              the bench runs in, shaped to RATE (tbf) from target to host: one path's bandwidth against two's (goal:
#              two targets carry more than one; the links, not the CPUs, are the limit, as two NICs would be).
# Needs root (network namespaces, tc). Run from the checkout after a build:
#   T=10 KILL_AT=4 docs/bench/multipath-run.sh failover
#   T=20 KILL_AT=4 PAUSE=8 docs/bench/multipath-run.sh pause
#   T=10 RATE=400mbit BS=128k docs/bench/multipath-run.sh aggregate
set -u
JAR=${JAR:-$(dirname "$0")/../../nvmeof-cli/target/nvmeof.jar}
J="java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED"
MODE=$1
OUT=${OUT:-/tmp/nvmeof-multipath-run}; mkdir -p "$OUT"
NQN=nqn.2026-12.io.nvmeof:multipath-bench
UUID=3f9a3e5c-6a1e-4f6b-8a0e-5b1c2d3e4f60
IMG=/dev/shm/nvmeof-multipath-bench.img
truncate -s 512M "$IMG"
NS=nvmeof-mp-host
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  ip link del nvmeof-mp1a 2>/dev/null; ip link del nvmeof-mp2a 2>/dev/null; ip netns del $NS 2>/dev/null
  rm -f "$IMG"
}
trap cleanup EXIT

# target SIDE ADDRESS PORT ANA_STATE: starts one target process, prints its PID
target() {
  local side=$1 addr=$2 port=$3 ana=$4 range
  [ "$side" = a ] && range='"cntlidMin": 1, "cntlidMax": 999' || range='"cntlidMin": 1000, "cntlidMax": 1999'
  cat > "$OUT/$side.json" <<JSON
{ "pollGroups": 1,
  "listeners": [ { "id": 1, "transport": "tcp", "address": "$addr", "port": $port, "ana": { "1": "$ana" } } ],
  "subsystems": [ { "nqn": "$NQN", "serial": "MPBENCH0001", $range,
                    "namespaces": [ { "nsid": 1, "backend": "file", "path": "$IMG", "uuid": "$UUID" } ] } ] }
JSON
  $J -jar "$JAR" target --no-admin --config "$OUT/$side.json" --state-dir "$OUT/state-$side" > "$OUT/$side.log" 2>&1 &
  local pid=$!
  for i in $(seq 150); do grep -q "target started" "$OUT/$side.log" && break; sleep 0.2; done
  grep -q "target started" "$OUT/$side.log" || { echo "target $side did not start: $(tail -3 "$OUT/$side.log")" >&2; exit 1; }
  echo $pid
}

summary() { # JSON_FILE LABEL
  python3 - "$1" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))['jobs'][0]
r = j['read'] if j['read']['iops'] > 0 else j['write']
paths = ', '.join('path %d %s:%s %d I/Os (%s, %s)' % (p['path'], p['traddr'], p['trsvcid'], p['ios'], p['state'],
                  p.get('ana_state', '-')) for p in j['paths'])
print(sys.argv[2], 'iops=%.0f' % r['iops'], 'MiB/s=%.1f' % (r['bw_bytes'] / 1048576), 'errors=%d' % j['io_errors'],
      'longest_pause=%.1fms' % j.get('longest_pause_ms', -1), 'max_lat=%.1fms' % (r['clat_ns']['max'] / 1e6), '|', paths)
PY
}

case "$MODE" in
failover)
  A=$(target a 127.0.0.1 4420 optimized); PIDS+=($A)
  B=$(target b 127.0.0.1 4421 non-optimized); PIDS+=($B)
  # KILL_AT seconds into the measured window: from the bench's first connection to A, after its 1 s warm-up.
  (for i in $(seq 300); do [ -n "$(ss -Htn state established '( sport = :4420 )')" ] && break; sleep 0.1; done
   sleep $((1 + ${KILL_AT:-4})); kill -9 $A; echo "killed target a (PID $A) ${KILL_AT:-4} s into the measured window" >&2) &
  $J -jar "$JAR" bench --path 127.0.0.1:4420 --path 127.0.0.1:4421 -n $NQN --rw randwrite --qd 32 \
      --time "${T:-10}" --ramp 1 --reconnect-delay 1 --json > "$OUT/failover.json" 2> "$OUT/failover.err"
  summary "$OUT/failover.json" failover
  ;;
pause)
  A=$(target a 127.0.0.1 4420 optimized); PIDS+=($A)
  B=$(target b 127.0.0.1 4421 non-optimized); PIDS+=($B)
  (for i in $(seq 300); do [ -n "$(ss -Htn state established '( sport = :4420 )')" ] && break; sleep 0.1; done
   sleep $((1 + ${KILL_AT:-4})); kill -STOP $A; echo "paused target a (PID $A) ${KILL_AT:-4} s into the measured window" >&2
   sleep "${PAUSE:-15}"; kill -CONT $A; echo "resumed target a after ${PAUSE:-15} s" >&2) &
  $J -jar "$JAR" bench --path 127.0.0.1:4420 --path 127.0.0.1:4421 -n $NQN --rw randwrite --qd 32 \
      --time "${T:-20}" --ramp 1 --reconnect-delay 1 -k 2 --json > "$OUT/pause.json" 2> "$OUT/pause.err"
  summary "$OUT/pause.json" pause
  python3 -c "import json,sys; print('writes held for a fence:', json.load(open(sys.argv[1]))['jobs'][0].get('writes_held_for_fence'))" "$OUT/pause.json"
  ;;
aggregate)
  ip netns add $NS
  for i in 1 2; do
    ip link add nvmeof-mp${i}a type veth peer name nvmeof-mp${i}b
    ip link set nvmeof-mp${i}b netns $NS
    ip addr add 10.77.$i.1/24 dev nvmeof-mp${i}a; ip link set nvmeof-mp${i}a up
    ip netns exec $NS ip addr add 10.77.$i.2/24 dev nvmeof-mp${i}b; ip netns exec $NS ip link set nvmeof-mp${i}b up
    # Target to host: what reads carry. Shaped like a link of RATE.
    tc qdisc add dev nvmeof-mp${i}a root tbf rate "${RATE:-400mbit}" burst 256kb latency 50ms
  done
  ip netns exec $NS ip link set lo up
  PIDS+=($(target a 10.77.1.1 4420 optimized))
  PIDS+=($(target b 10.77.2.1 4421 optimized))
  for run in one two one two; do
    if [ $run = one ]; then P="--path 10.77.1.1:4420"
    else P="--path 10.77.1.1:4420 --path 10.77.2.1:4421 --iopolicy round-robin"; fi
    ip netns exec $NS $J -jar "$JAR" bench $P -n $NQN --rw randread --bs "${BS:-128k}" \
        --qd 16 --time "${T:-10}" --ramp 2 --json > "$OUT/aggregate-$run.json" 2> "$OUT/aggregate-$run.err" \
      || { echo "bench failed: $(tail -3 "$OUT/aggregate-$run.err")" >&2; continue; }
    if [ $run = one ]; then
      # A single --path is a plain namespace: no per-path section; the summary still has the totals.
      python3 -c "import json,sys; j=json.load(open(sys.argv[1]))['jobs'][0]; r=j['read']; print('one path  iops=%.0f MiB/s=%.1f errors=%d' % (r['iops'], r['bw_bytes']/1048576, j['io_errors']))" "$OUT/aggregate-$run.json"
    else
      summary "$OUT/aggregate-$run.json" "two paths"
    fi
  done
  ;;
*) echo "usage: $0 failover|pause|aggregate" >&2; exit 2 ;;
esac
