#!/bin/bash
# One NVMe/TCP run as in docs/performance.md, "Busy polling and no garbage per I/O": a fresh target on core 0 (one
# poll group, 1 GiB RAM namespace of 4 KiB blocks), the bench on core 1, 4 KiB I/O. Prints one line: IOPS, latency
# mean / p50 / p99 / p99.9 / max, and the initiator's and the target's CPU time per I/O (user + system from /proc).
#   JAR=path/to/nvmeof.jar T=8 RAMP=2 BS=4k docs/bench/tcp-run.sh LABEL TARGET_BUSY_POLL_US HOST_BUSY_POLL_US RW QD
# FILE=path serves that file (1 GiB, created when missing) as the namespace instead of RAM.
# A busy-poll time of 0 passes no --busy-poll-us (so builds without the option run too).
JAR=${JAR:-$(dirname "$0")/../../nvmeof-cli/target/nvmeof.jar}
J="java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED"
LABEL=$1; TBP=$2; HBP=$3; RW=$4; QD=$5
OUT=${OUT:-/tmp/nvmeof-tcp-run}; mkdir -p "$OUT"
taskset -c 0 $J -jar "$JAR" target --no-admin $([ "$TBP" != 0 ] && echo --busy-poll-us "$TBP") --poll-groups 1 \
    --size 1GiB $([ -n "$FILE" ] && echo --file "$FILE") --block-size 4096 > "$OUT/target.log" 2>&1 &
TP=$!
for i in $(seq 100); do grep -q "istening" "$OUT/target.log" && break; sleep 0.2; done
taskset -c 1 $J -jar "$JAR" bench $([ "$HBP" != 0 ] && echo --busy-poll-us "$HBP") -a 127.0.0.1 -s 4420 \
    -n nqn.2026-11.io.nvmeof:default --time "${T:-8}" --ramp "${RAMP:-2}" --rw "$RW" --bs "${BS:-4k}" --qd "$QD" \
    --target-pid $TP --json > "$OUT/$LABEL.json" 2> "$OUT/$LABEL.err"
kill $TP; wait $TP 2>/dev/null
python3 - "$OUT/$LABEL.json" "$LABEL" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))['jobs'][0]
r = j['read'] if j['read']['iops'] > 0 else j['write']
c = r['clat_ns']; p = c['percentile']
print(sys.argv[2], 'iops=%.0f' % r['iops'], 'mean=%.1fus' % (c['mean'] / 1e3),
      'p50=%.0f p99=%.0f p99.9=%.0f max=%.0f us' % (p['50.000000'] / 1e3, p['99.000000'] / 1e3,
                                                  p['99.900000'] / 1e3, c['max'] / 1e3),
      'init_cpu/io=%.2fus' % j['cpu_seconds_per_million_ios'], 'tgt_cpu/io=%.2fus' % j['target_cpu_seconds_per_million_ios'])
PY
