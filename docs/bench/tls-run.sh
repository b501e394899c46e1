#!/bin/bash
# One NVMe/TCP run with or without TLS, as in docs/performance.md, "What TLS costs": a fresh target on core 0 (one
# poll group, 1 GiB RAM namespace of 4 KiB blocks; one listener, TLS required or none), the bench on core 1, with
# the same host NQN and (for TLS) its PSK. Prints one line: IOPS, latency mean / p50 / p99 / p99.9, and the
# initiator's and the target's CPU time per I/O (user + system from /proc).
#   JAR=path/to/nvmeof.jar T=8 RAMP=2 BS=4k docs/bench/tls-run.sh LABEL tls|none RW QD
JAR=${JAR:-$(dirname "$0")/../../nvmeof-cli/target/nvmeof.jar}
J="java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED"
LABEL=$1; TLS=$2; RW=$3; QD=$4
OUT=${OUT:-/tmp/nvmeof-tls-run}; mkdir -p "$OUT"; rm -f "$OUT/$LABEL".*
HOST=nqn.2014-08.org.nvmexpress:uuid:7e570000-0000-4000-8000-000000000001
NQN=nqn.2026-12.io.nvmeof:tls-bench
KEY=NVMeTLSkey-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:   # a test key (nvme gen-tls-key --secret=00..1f)
MODE=$([ "$TLS" = tls ] && echo required || echo none)
cat > "$OUT/$LABEL.config.json" <<JSON
{ "pollGroups": 1,
  "listeners": [ { "transport": "tcp", "address": "127.0.0.1", "port": 4420, "tls": "$MODE" } ],
  "hosts": [ $([ "$TLS" = tls ] && echo "{ \"nqn\": \"$HOST\", \"tlsKey\": \"$KEY\" }") ],
  "subsystems": [ { "nqn": "$NQN", "allowAnyHost": false, "hosts": [ "$HOST" ],
                    "namespaces": [ { "nsid": 1, "backend": "ram", "size": "1GiB", "blockSize": 4096 } ] } ] }
JSON
taskset -c 0 $J ${TARGET_JOPTS:-} -jar "$JAR" target --no-admin --config "$OUT/$LABEL.config.json" > "$OUT/$LABEL.target.log" 2>&1 &
TP=$!
for i in $(seq 100); do grep -q "target started" "$OUT/$LABEL.target.log" && break; sleep 0.2; done
taskset -c 1 $J -jar "$JAR" bench -a 127.0.0.1 -s 4420 -n $NQN -q $HOST $([ "$TLS" = tls ] && echo --tls-key "$KEY") \
    --time "${T:-8}" --ramp "${RAMP:-2}" --rw "$RW" --bs "${BS:-4k}" --qd "$QD" --target-pid $TP --json \
    > "$OUT/$LABEL.json" 2> "$OUT/$LABEL.err"
kill $TP; wait $TP 2>/dev/null
python3 - "$OUT/$LABEL.json" "$LABEL" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))['jobs'][0]
r = j['read'] if j['read']['iops'] > 0 else j['write']
c = r['clat_ns']; p = c['percentile']
print(sys.argv[2], 'iops=%.0f' % r['iops'], 'mean=%.1fus' % (c['mean'] / 1e3),
      'p50=%.0f p99=%.0f p99.9=%.0f us' % (p['50.000000'] / 1e3, p['99.000000'] / 1e3, p['99.900000'] / 1e3),
      'init_cpu/io=%.2fus' % j['cpu_seconds_per_million_ios'], 'tgt_cpu/io=%.2fus' % j['target_cpu_seconds_per_million_ios'])
PY
