#!/bin/bash
# Random writes to a fresh RAM namespace against the same namespace once written (docs/performance.md, "RAM namespace
# memory"): target on core 0, bench on core 1, 1 GiB of 4 KiB blocks. Each pass prints IOPS and the target's CPU time
# (user + system from /proc) per I/O. A read pass warms the JIT first (reads commit no memory).
#   JAR=path/to/nvmeof.jar T_S=3 EXTRA=--sparse docs/bench/fresh-writes.sh
JAR=${JAR:-$(dirname "$0")/../../nvmeof-cli/target/nvmeof.jar}
EXTRA=${EXTRA:-}
taskset -c 0 java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -jar $JAR target --no-admin --poll-groups 1 --size 1GiB --block-size 4096 $EXTRA > /tmp/tgt.log 2>&1 &
T=$!
for i in $(seq 300); do grep -q -i "listening" /tmp/tgt.log && break; sleep 0.2; done
sleep 0.5
for pass in ${PASSES:-warm:randread fresh:randwrite written:randwrite written2:randwrite}; do
  rw=${pass#*:}; pass=${pass%%:*}
  read u0 s0 < <(awk '{print $14, $15}' /proc/$T/stat)
  out=$(taskset -c 1 java -jar $JAR bench -n nqn.2026-11.io.nvmeof:default --rw $rw --qd 32 --ramp 0 --time ${T_S:-3} --json 2>/tmp/bench.err)
  read u1 s1 < <(awk '{print $14, $15}' /proc/$T/stat)
  python3 -c "
import json,sys
d=json.loads(sys.argv[1]); j=d['jobs'][0]['read' if '$rw'=='randread' else 'write']
ios=j['total_ios']; tick=int(sys.argv[3])
cpu=(int(sys.argv[2]))/tick
print('$pass', 'iops %.0f'%j['iops'], 'target cpu/io %.2f us'%(cpu/ios*1e6) if ios else '')
" "$out" $((u1+s1-u0-s0)) $(getconf CLK_TCK)
done
echo "rss $(grep VmRSS /proc/$T/status)"
kill $T; wait $T 2>/dev/null
