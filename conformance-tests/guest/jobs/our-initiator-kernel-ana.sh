#!/bin/bash
# Issue 35: our initiator's multipath (nvmeof bench/read/write with --path twice) against the Linux kernel's target
# (nvmet-tcp, Debian 12's 6.1) with two ports in different ANA states. One subsystem, one namespace on a file in
# /dev/shm, exported through ports 4420 and 4421 of the guest's address; the states are set per port in configfs
# (ports/N/ana_groups/1/ana_state), and nvmet sends an ANA change notice to the controllers of a port whose state is
# written. The initiator reads the states from the ANA log (0Ch) at connect and on each notice, sends I/O to
# optimized paths first, and fails a request that meets a path status (ANA inaccessible or transition) over to
# another path. Checks (bench's --json gives each path's completed I/Os, failovers and ANA state as it saw them):
#   a) 4420 optimized, 4421 non-optimized: all I/O through 4420 (queue-depth and round-robin)
#   b) the states swapped during a run: the I/O moves to 4421, no I/O error; 4420 made inaccessible during a run
#      (4421 non-optimized): moves to 4421, no error; 4420 in ANA transition ("change") and back to optimized
#   c) 4420 inaccessible, 4421 optimized: no error, I/O only through 4421
#   d) data written through one port (the other inaccessible) reads back through the other; and through both
#      (round-robin) reads back through both
#   e) both optimized, round-robin: the paths' counts within 10 % of each other
#   f) port 4421's link to the subsystem removed during a run (nvmet drops its controllers): bench ends with no
#      error through 4420
#   g) (a defect this job found) commands of more than 4 MiB: nvmet-tcp refuses them though it reports no MDTS
JOB=our-initiator-kernel-ana
. "$(dirname "$0")/lib.sh"
REPO="${REPO:?REPO must name the checkout}"
JAR="$REPO/nvmeof-cli/target/nvmeof.jar"
[ -f "$JAR" ] || { fail "no $JAR: build the project on the host first"; finish; exit 1; }
NQN=nqn.2026-12.io.nvmeof:kernel-ana
P1=$GUEST_IP:4420
P2=$GUEST_IP:4421
IMG=/dev/shm/kernel-ana-ns1.img
BS=4096 # nvmet's file namespaces take the file system's block size: 4 KiB on tmpfs

modprobe -a nvmet nvmet-tcp
truncate -s 256M $IMG
nvmet_subsystem $NQN
nvmet_namespace $NQN 1 $IMG
nvmet_port 1 tcp $GUEST_IP 4420 $NQN
nvmet_port 2 tcp $GUEST_IP 4421 $NQN

ana() { # PORT_ID STATE: sets the port's ANA group 1 (nvmet sends an ANA change notice to its controllers)
  echo "$2" > $NVMET/ports/$1/ana_groups/1/ana_state
  log "port $1 ($((4419 + $1))) group 1: $2"
}
check "ANA group 1 of both ports set through configfs (4420 optimized, 4421 non-optimized)" sh -c "
  echo optimized > $NVMET/ports/1/ana_groups/1/ana_state && echo non-optimized > $NVMET/ports/2/ana_groups/1/ana_state &&
  [ \$(cat $NVMET/ports/2/ana_groups/1/ana_state) = non-optimized ]"

cli() { # the CLI, as the other jobs run it
  java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx512m --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
    -jar "$JAR" "$@"
}
# bench NAME ARGS...: nvmeof bench through both ports (4 KiB, QD 16 unless BENCH_BS, BENCH_QD) into
# bench-NAME.json/.log; BENCH_RC its exit status.
bench() {
  local name=$1; shift
  cli bench --path $P1 --path $P2 -n $NQN --bs "${BENCH_BS:-4k}" --qd "${BENCH_QD:-16}" --size 128M --json "$@" \
    > "$RESULTS/bench-$name.json" 2> "$RESULTS/bench-$name.log"
  BENCH_RC=$?
}
# bench_bg NAME ARGS...: bench in the background (BENCH_PID); returns once both paths are connected (admin and I/O
# queue on each port) and the I/O flows (1 MiB more through the two ports' connections), at most 60 s each: under
# TCG the JVM takes seconds between connecting and its first I/O.
bench_bg() {
  local name=$1; shift
  cli bench --path $P1 --path $P2 -n $NQN --bs "${BENCH_BS:-4k}" --qd "${BENCH_QD:-16}" --size 128M --json "$@" \
    > "$RESULTS/bench-$name.json" 2> "$RESULTS/bench-$name.log" &
  BENCH_PID=$!
  local i
  for i in $(seq 1 300); do
    [ "$(conns 4420)" -ge 2 ] && [ "$(conns 4421)" -ge 2 ] && break
    kill -0 $BENCH_PID 2>/dev/null || return 1
    sleep 0.2
  done
  local base; base=$(io_bytes)
  for i in $(seq 1 300); do
    [ "$(io_bytes)" -gt $((base + (1 << 20))) ] && return 0
    kill -0 $BENCH_PID 2>/dev/null || return 1
    sleep 0.2
  done
  kill $BENCH_PID 2>/dev/null; wait $BENCH_PID 2>/dev/null # no I/O within 2 x 60 s: not left to disturb the next
  return 1
}
conns() { ss -tnH state established "( dport = :$1 )" | wc -l; }
# Bytes the connections to ports 4420 and 4421 carried so far (sent and acknowledged, received).
io_bytes() {
  ss -tinH state established "( dport = :4420 or dport = :4421 )" | grep -oE 'bytes_(acked|received):[0-9]+' \
    | awk -F: '{s += $2} END {print s + 0}'
}
bench_wait() { # waits for the background bench (at most 120 s); BENCH_RC its exit status
  local i
  for i in $(seq 1 120); do kill -0 $BENCH_PID 2>/dev/null || break; sleep 1; done
  kill $BENCH_PID 2>/dev/null
  wait $BENCH_PID; BENCH_RC=$?
}
# paths NAME: one line of the run's figures for the check's name: "4420 N (x %, ANA s), 4421 M (...), errors E"
paths() {
  python3 - "$RESULTS/bench-$1.json" <<'PY' 2>/dev/null || echo "no JSON"
import json, sys
j = json.load(open(sys.argv[1]))['jobs'][0]
ps = j['paths']; total = sum(p['ios'] for p in ps) or 1
print(', '.join('%s %d I/Os (%.1f %%, %d failed over, ANA %s)' % (p['trsvcid'], p['ios'], 100.0 * p['ios'] / total,
      p['failed_over'], p['ana_state']) for p in ps) + ', %d I/O errors' % j['io_errors'])
PY
}
# verdict NAME CONDITION: python condition over ios0, ios1 (each path's I/Os in the measured window), share0, share1,
# fo0, fo1 (failed over), ana0, ana1 (states as the initiator saw them at the end), errors; the run must have exited 0.
verdict() {
  python3 - "$RESULTS/bench-$1.json" "$BENCH_RC" "$RESULTS/bench-$1.log" "$2" <<'PY'
import json, sys
path, rc, logf, cond = sys.argv[1:5]
assert rc == '0', 'bench exited %s: %s' % (rc, open(logf).read()[-400:])
j = json.load(open(path))['jobs'][0]
ps = sorted(j['paths'], key=lambda p: int(p['trsvcid']))
assert [str(p['trsvcid']) for p in ps] == ['4420', '4421'], ps
ios0, ios1 = ps[0]['ios'], ps[1]['ios']
total = ios0 + ios1
assert total > 0, 'no I/O'
share0, share1 = ios0 / total, ios1 / total
fo0, fo1 = ps[0]['failed_over'], ps[1]['failed_over']
ana0, ana1 = ps[0]['ana_state'], ps[1]['ana_state']
errors = j['io_errors']
assert eval(cond), 'not %s: %s' % (cond, json.dumps(j['paths']) + ' io_errors %d %s' % (errors, j.get('first_io_error', '')))
PY
}

# ---------------------------------------------------------------- a) optimized and non-optimized
for policy in queue-depth round-robin; do
  bench a-$policy --rw randread --time 4 --ramp 1 --iopolicy $policy
  check "a) 4420 optimized, 4421 non-optimized, $policy: all I/O through 4420 [$(paths a-$policy)]" \
    verdict a-$policy "errors == 0 and ios1 <= 0.01 * total and ana0 == 'optimized' and ana1 == 'non-optimized'"
done

# ---------------------------------------------------------------- b) states changed during a run
# Swapped about 4 s into a 12 s window: 4421 optimized first, then 4420 non-optimized (never no optimized path).
if bench_bg b-swap --rw randwrite --time 12 --ramp 1; then
  sleep 5
  ana 2 optimized; ana 1 non-optimized
  bench_wait
  check "b) states swapped about 4 s into a 12 s randwrite run: the I/O moved to 4421, no I/O error [$(paths b-swap)]" \
    verdict b-swap "errors == 0 and share0 >= 0.1 and share1 >= 0.3 and ana0 == 'non-optimized' and ana1 == 'optimized'"
else
  fail "b) bench did not connect both paths: $(tail -3 "$RESULTS/bench-b-swap.log" | tr '\n' ' ')"
fi
bench b-after --rw randread --time 3 --ramp 1
check "b) after the swap a new run sends all I/O through 4421 [$(paths b-after)]" \
  verdict b-after "errors == 0 and ios0 <= 0.01 * total and ana0 == 'non-optimized' and ana1 == 'optimized'"

# The optimized path made inaccessible during a run: commands nvmet already refuses with ANA Inaccessible fail over.
ana 1 optimized; ana 2 non-optimized
if bench_bg b-inaccessible --rw randwrite --time 8 --ramp 1; then
  sleep 4
  ana 1 inaccessible
  bench_wait
  check "b) 4420 (optimized) made inaccessible during a run, 4421 non-optimized: the I/O moved to 4421, no I/O error [$(paths b-inaccessible)]" \
    verdict b-inaccessible "errors == 0 and share0 >= 0.15 and share1 >= 0.3 and ana0 == 'inaccessible'"
else
  fail "b) bench did not connect both paths: $(tail -3 "$RESULTS/bench-b-inaccessible.log" | tr '\n' ' ')"
fi

# ANA transition: nvmet answers ANA Transition while 4420 is in "change"; back to optimized, the I/O comes back.
ana 1 optimized
if bench_bg b-change --rw randread --time 9 --ramp 1; then
  sleep 3
  ana 1 change
  sleep 3
  ana 1 optimized
  bench_wait
  check "b) 4420 in ANA transition for 3 s of a 9 s run, then optimized again: I/O through 4421 meanwhile and back to 4420, no I/O error [$(paths b-change)]" \
    verdict b-change "errors == 0 and share1 >= 0.1 and share0 >= 0.3 and ana0 == 'optimized'"
else
  fail "b) bench did not connect both paths: $(tail -3 "$RESULTS/bench-b-change.log" | tr '\n' ' ')"
fi

# ---------------------------------------------------------------- c) inaccessible and optimized
ana 1 inaccessible; ana 2 optimized
bench c --rw randread --time 4 --ramp 1
check "c) 4420 inaccessible, 4421 optimized: no I/O error, I/O only through 4421 [$(paths c)]" \
  verdict c "errors == 0 and ios0 == 0 and fo0 == 0 and ana0 == 'inaccessible' and ana1 == 'optimized'"

# ---------------------------------------------------------------- d) write, then read back through the other path
head -c $((4 << 20)) /dev/urandom > /tmp/ana-d1.bin
head -c $((8 << 20)) /dev/urandom > /tmp/ana-d2.bin
ana 1 optimized; ana 2 inaccessible
cli write --path $P1 --path $P2 -n $NQN -l 1024 -i /tmp/ana-d1.bin > "$RESULTS/$JOB-write1.log" 2>&1
w=$?
ana 1 inaccessible; ana 2 optimized
cli read --path $P1 --path $P2 -n $NQN -l 1024 --count $(( (4 << 20) / BS )) -o /tmp/ana-d1.out > "$RESULTS/$JOB-read1.log" 2>&1
r=$?
check "d) 4 MiB written with 4421 inaccessible (through 4420) read back with 4420 inaccessible (through 4421): equal" \
  sh -c "[ $w = 0 ] && [ $r = 0 ] && cmp /tmp/ana-d1.bin /tmp/ana-d1.out || { tail -n 3 '$RESULTS/$JOB-write1.log' '$RESULTS/$JOB-read1.log'; false; }"
ana 1 optimized; ana 2 optimized
cli write --path $P1 --path $P2 --iopolicy round-robin -n $NQN -l 8192 -i /tmp/ana-d2.bin > "$RESULTS/$JOB-write2.log" 2>&1
w=$?
cli read --path $P1 --path $P2 --iopolicy round-robin -n $NQN -l 8192 --count $(( (8 << 20) / BS )) -o /tmp/ana-d2.out \
  > "$RESULTS/$JOB-read2.log" 2>&1
r=$?
check "d) 8 MiB written and read back with both optimized, round-robin (1 MiB commands, alternating paths): equal" \
  sh -c "[ $w = 0 ] && [ $r = 0 ] && cmp /tmp/ana-d2.bin /tmp/ana-d2.out || { tail -n 3 '$RESULTS/$JOB-write2.log' '$RESULTS/$JOB-read2.log'; false; }"
cli read --path $P1 --path $P2 --iopolicy round-robin -n $NQN -l 1024 --count $(( (4 << 20) / BS )) -o /tmp/ana-d1.again \
  > "$RESULTS/$JOB-read3.log" 2>&1
r=$?
check "d) and the first 4 MiB read back through both paths (round-robin): equal" \
  sh -c "[ $r = 0 ] && cmp /tmp/ana-d1.bin /tmp/ana-d1.again || { tail -n 3 '$RESULTS/$JOB-read3.log'; false; }"

# ---------------------------------------------------------------- e) both optimized, round-robin
bench e --rw randread --time 4 --ramp 1 --iopolicy round-robin
check "e) both optimized, round-robin: the paths' I/Os within 10 % of each other [$(paths e)]" \
  verdict e "errors == 0 and abs(ios0 - ios1) <= 0.1 * max(ios0, ios1) and ana0 == ana1 == 'optimized'"

# ---------------------------------------------------------------- g) commands over nvmet-tcp's 4 MiB
# nvmet reports MDTS 0 (no limit) yet fails any command with more than 4 MiB of data (its MAXH2CDATA; Debian 12's
# 6.1 nvmet_tcp_map_data) with Data SGL Length Invalid, reads too. The initiator allows 32 MiB per command without
# MDTS (maxBlocksPerIo): bench --bs 8m sends 8 MiB commands, which all fail. Passes once the initiator keeps to what
# nvmet takes, or refuses --bs 8m up front (the controller's transfer limit).
BENCH_BS=8m BENCH_QD=2 bench g --rw randread --time 2 --ramp 1
if grep -q "exceeds the controller's transfer limit" "$RESULTS/bench-g.log"; then
  pass "g) 8 MiB commands: refused up front by the initiator ($(grep -o "exceeds the controller's transfer limit.*" "$RESULTS/bench-g.log" | head -1))"
else
  check "g) 8 MiB reads (one command each: MDTS 0, the initiator's limit 32 MiB) complete with no I/O error [$(paths g)]" \
    verdict g "errors == 0"
fi

# ---------------------------------------------------------------- f) a port's subsystem link removed during a run
if bench_bg f --rw randwrite --time 8 --ramp 1 --iopolicy round-robin; then
  sleep 4
  rm $NVMET/ports/2/subsystems/$NQN && log "port 2 (4421): link to $NQN removed"
  bench_wait
  check "f) port 4421's subsystem link removed about 3 s into an 8 s round-robin randwrite run: bench ended with no I/O error through 4420 [$(paths f)]" \
    verdict f "errors == 0 and ios0 > ios1 and ios1 > 0"
else
  fail "f) bench did not connect both paths: $(tail -3 "$RESULTS/bench-f.log" | tr '\n' ' ')"
fi

dmesg | grep -iE 'nvmet' > "$RESULTS/$JOB-dmesg.txt" 2>&1
nvmet_clear
rm -f $IMG /tmp/ana-d*
finish
