#!/bin/bash
# Side by side with SPDK, as issue 33 measured: one NVMe/TCP target on core 0 (ours or SPDK's nvmf_tgt with a 1 GiB
# Malloc bdev of 4 KiB blocks), one host on core 1 (SPDK's spdk_nvme_perf or our bench), 4 KiB random I/O on loopback.
# Prints one line per run: IOPS, latency p50 / p99 / p99.9 / max in us, and the host's and the target's CPU time per
# I/O (user + system of each process from /proc over the same window inside the measured one).
#   SPDK=/path/to/spdk JAR=path/to/nvmeof.jar T=10 WARM=3 docs/bench/spdk-side.sh LABEL TARGET HOST RW QD
# TARGET: ours (taskset -c 0, one poll group, as in the issue), ours-placed (the JVM over cores 0-1, its poll group
#   alone on core 0: --poll-group-cpus 0), spdk (nvmf_tgt -m 0x1, no hugepages, no PCI).
# HOST: perf (spdk_nvme_perf -c 0x2 -LL) or bench (our bench, taskset -c 1).
# TARGET_OPTS is added to our target's options (the issue's window used --busy-poll-us 200), BENCH_OPTS to the bench's.
# SPDK is a build of SPDK the user has made (build/bin, build/lib, scripts/rpc.py); nothing here builds it.
# spdk_nvme_perf logs one "CQ transport error -6" as it disconnects, against either target: that line is benign.
set -u
[ $# -eq 5 ] || { sed -n 2,13p "$0" >&2; exit 2; }
JAR=${JAR:-$(dirname "$0")/../../nvmeof-cli/target/nvmeof.jar}
SPDK=${SPDK:?set SPDK to an SPDK build directory}
J="java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED"
LABEL=$1; TARGET=$2; HOST=$3; RW=$4; QD=$5; T=${T:-10}; WARM=${WARM:-3}
[ "$T" -ge 4 ] || { echo "T must be 4 seconds or more (the CPU window is T - 3 s)" >&2; exit 2; }
OUT=${OUT:-/tmp/nvmeof-spdk-side}; mkdir -p "$OUT"; rm -f "$OUT/$LABEL".*
SPDK_ENV="env LD_LIBRARY_PATH=$SPDK/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" # SPDK's programs only

case $TARGET in
ours|ours-placed)
    if [ "$TARGET" = ours ]; then PLACE="taskset -c 0"; GROUPS_OPT="--poll-groups 1"
    else PLACE="taskset -c 0-1"; GROUPS_OPT="--poll-group-cpus 0"; fi
    $PLACE $J -jar "$JAR" target --no-admin $GROUPS_OPT ${TARGET_OPTS:-} --size 1GiB --block-size 4096 \
        > "$OUT/$LABEL.target.log" 2>&1 &
    TP=$!; PORT=4420; NQN=nqn.2026-11.io.nvmeof:default
    for i in $(seq 100); do grep -q "istening" "$OUT/$LABEL.target.log" && break; sleep 0.2; done
    kill -0 $TP 2> /dev/null || { echo "our target ended: see $OUT/$LABEL.target.log" >&2; exit 1; } ;;
spdk)
    SOCK=$OUT/spdk.sock; rm -f "$SOCK"
    $SPDK_ENV "$SPDK/build/bin/nvmf_tgt" -m 0x1 -u --no-huge -s 2048 -r "$SOCK" > "$OUT/$LABEL.target.log" 2>&1 &
    TP=$!; PORT=4420; NQN=nqn.2016-06.io.spdk:cnode1
    for i in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.2; done
    R="/usr/bin/python3 $SPDK/scripts/rpc.py -s $SOCK"
    { $R nvmf_create_transport -t TCP && $R bdev_malloc_create -b Malloc0 1024 4096 &&
      $R nvmf_create_subsystem $NQN -a -s SPDK1 && $R nvmf_subsystem_add_ns $NQN Malloc0 &&
      $R nvmf_subsystem_add_listener $NQN -t tcp -a 127.0.0.1 -s $PORT; } > /dev/null ||
        { kill $TP; echo "SPDK's target did not start: see $OUT/$LABEL.target.log" >&2; exit 1; } ;;
*) echo "TARGET: ours, ours-placed or spdk" >&2; exit 2 ;;
esac

# A process's CPU time (user + system, clock ticks of all its threads): fields 14 and 15 of its stat, counted after
# the command name, which may hold spaces.
ticks() { sed 's/^.*) //' /proc/$1/stat | awk '{ print $12 + $13 }'; }
HZ=$(getconf CLK_TCK)
case $HOST in
perf)
    taskset -c 1 $SPDK_ENV "$SPDK/build/bin/spdk_nvme_perf" --no-huge -s 1024 -c 0x2 -q "$QD" -o 4096 -w "$RW" -t "$T" -a "$WARM" -LL \
        -r "trtype:TCP adrfam:IPv4 traddr:127.0.0.1 trsvcid:$PORT subnqn:$NQN" > "$OUT/$LABEL.host" 2>&1 &
    HP=$! ;;
bench)
    taskset -c 1 $J -jar "$JAR" bench ${BENCH_OPTS:-} -a 127.0.0.1 -s $PORT -n $NQN --time "$T" --ramp "$WARM" \
        --rw "$RW" --bs 4k --qd "$QD" --json > "$OUT/$LABEL.host" 2> "$OUT/$LABEL.err" &
    HP=$! ;;
*) echo "HOST: perf or bench" >&2; kill $TP; exit 2 ;;
esac
# The CPU window lies inside the hosts' measured one (which starts WARM s after they connect and lasts T s) as long
# as a host connects within 2 s: it starts 2 s after the warm-up and ends 1 s before the run does.
sleep $(( WARM + 2 ))
C0=$(ticks $TP); H0=$(ticks $HP); W0=$(date +%s.%N)
sleep $(( T - 3 ))
C1=$(ticks $TP); H1=$(ticks $HP); W1=$(date +%s.%N)
MEASURED=$(python3 -c "print($W1 - $W0)")
wait $HP; kill $TP; wait $TP 2> /dev/null

python3 - "$OUT/$LABEL.host" "$LABEL" "$HOST" "$C0" "$C1" "$H0" "$H1" "$HZ" "$MEASURED" <<'PY'
import json, re, sys
path, label, host, c0, c1, h0, h1, hz, measured = sys.argv[1:10]
text = open(path).read()
if not c0 or not c1 or not h0 or not h1:
    sys.exit('%s: a process ended before the window did; see %s' % (label, path))
if host == 'perf':
    total = re.search(r'^Total\s*:\s*([\d.]+)\s+[\d.]+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)', text, re.M)
    if not total:
        sys.exit('%s: no "Total" line from spdk_nvme_perf; see %s' % (label, path))
    iops, mx = float(total.group(1)), float(total.group(4))
    pct = {k: float(v) for k, v in re.findall(r'^\s*([\d.]+)%\s*:\s*([\d.]+)us', text, re.M)}
    p50, p99, p999 = pct['50.00000'], pct['99.00000'], pct['99.90000']
else:
    r = json.loads(text)['jobs'][0]
    r = r['read'] if r['read']['iops'] > 0 else r['write']
    c = r['clat_ns']; p = c['percentile']; iops = r['iops']
    p50, p99, p999, mx = (p['50.000000'] / 1e3, p['99.000000'] / 1e3, p['99.900000'] / 1e3, c['max'] / 1e3)
per_io = lambda a, b: (float(b) - float(a)) / int(hz) / (iops * float(measured)) * 1e6
print(label, 'iops=%.0f' % iops, 'p50=%.0f p99=%.0f p99.9=%.0f max=%.0f us' % (p50, p99, p999, mx),
      'host_cpu/io=%.2fus' % per_io(h0, h1), 'tgt_cpu/io=%.2fus' % per_io(c0, c1))
PY
