#!/bin/bash
# One NVMe/TCP run as in docs/performance.md, "Busy polling and no garbage per I/O": a fresh target on core 0 (one
# poll group, 1 GiB RAM namespace of 4 KiB blocks), the bench on core 1, 4 KiB I/O. Prints one line: IOPS, latency
# mean / p50 / p99 / p99.9 / max, and the initiator's and the target's CPU time per I/O (user + system from /proc).
#   JAR=path/to/nvmeof.jar T=8 RAMP=2 BS=4k docs/bench/tcp-run.sh LABEL TARGET_BUSY_POLL_US HOST_BUSY_POLL_US RW QD
# FILE=path serves that file (1 GiB, created when missing) as the namespace instead of RAM.
# A busy-poll time of 0 passes no --busy-poll-us (so builds without the option run too).
# POLL_CPUS=0 runs the target over cores 0-1 with its poll group alone on core 0 (--poll-group-cpus 0) and its other
# threads on core 1, beside the bench. SCHED=1 also records the scheduler on core 0 for 10 s of the measured window
# (perf sched, root) and adds how often the poll group's thread waited over 0.5 ms for its core, its longest wait,
# and which threads held the core. TARGET_JOPTS and BENCH_JOPTS are added to each JVM's options.
JAR=${JAR:-$(dirname "$0")/../../nvmeof-cli/target/nvmeof.jar}
J="java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED"
LABEL=$1; TBP=$2; HBP=$3; RW=$4; QD=$5
OUT=${OUT:-/tmp/nvmeof-tcp-run}; mkdir -p "$OUT"; rm -f "$OUT/$LABEL".*
if [ -n "$POLL_CPUS" ]; then PLACE="taskset -c 0-1"; GROUPS_OPT="--poll-group-cpus $POLL_CPUS"
else PLACE="taskset -c 0"; GROUPS_OPT="--poll-groups 1"; fi
$PLACE $J ${TARGET_JOPTS:-} -jar "$JAR" target --no-admin $([ "$TBP" != 0 ] && echo --busy-poll-us "$TBP") $GROUPS_OPT \
    --size 1GiB $([ -n "$FILE" ] && echo --file "$FILE") --block-size 4096 > "$OUT/$LABEL.target.log" 2>&1 &
TP=$!
for i in $(seq 100); do grep -q "istening" "$OUT/$LABEL.target.log" && break; sleep 0.2; done
taskset -c 1 $J ${BENCH_JOPTS:-} -jar "$JAR" bench $([ "$HBP" != 0 ] && echo --busy-poll-us "$HBP") -a 127.0.0.1 -s 4420 \
    -n nqn.2026-11.io.nvmeof:default --time "${T:-8}" --ramp "${RAMP:-2}" --rw "$RW" --bs "${BS:-4k}" --qd "$QD" \
    --target-pid $TP --json > "$OUT/$LABEL.json" 2> "$OUT/$LABEL.err" &
BP=$!
if [ -n "$SCHED" ]; then
    sleep $(( ${RAMP:-2} + 2 ))
    perf sched record -q -C 0 -o "$OUT/$LABEL.sched" -- sleep 10 > /dev/null 2>&1
    # A line is a switch away from the named thread: column 4 the time it had been off its CPU, 5 its wait from
    # wake-up, 7 the state it left in (R: preempted, so the next time off its CPU was spent waiting to run again).
    # The thread that ran before a delayed poll-thread slice is named as the one that took the CPU.
    perf sched timehist --state -i "$OUT/$LABEL.sched" 2> /dev/null | awk '
        { split($3, a, "["); who = a[1]; sub(/[-#0-9:]+$/, "", who) }
        $3 ~ /^nvmeof-poll/ { d = $5; if (prev == "R") d += $4
            if (d > 0.5) { n++; if (d > m) m = d; by[last]++ }; prev = $7 }
        { last = who }
        END { printf "poll thread delayed >0.5 ms: %d times, longest %.2f ms, after:", n, m
              for (k in by) printf " %s %d", k, by[k]; printf "\n" }' > "$OUT/$LABEL.waits"
fi
wait $BP
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
if [ -n "$SCHED" ]; then cat "$OUT/$LABEL.waits"; fi
