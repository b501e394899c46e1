#!/bin/bash
# The standard performance matrix in one command, written up as a Markdown report with plots (issue 53, item 6):
#   docs/bench/report.sh [OUT_DIR]          (default: target/bench-report/DATE)
# For each backend (a RAM namespace; a file; a block device when BLOCK is given) a fresh target runs on TARGET_CPUS
# (default core 0), as users start it (the launcher, its warm-up, one poll group), and the load runs on HOST_CPUS
# (default core 1): 4 KiB and 128 KiB random reads and writes at QD 1 and 32, each T seconds after RAMP seconds, on a
# new connection. Every figure stands beside a peer measured by the same run of this script, as docs/performance.md
# gives them:
#   RAM:   ours over NVMe/TCP (the reference), over TLS, and fio with our engine (fio's own thread driving it);
#   file:  fio straight on the file (io_uring, O_DIRECT: the limit the target cannot pass) and ours over NVMe/TCP;
#   block: the same on BLOCK. Its contents are overwritten: give a scratch device (a loop device of a file is fine).
# The table gives IOPS, MiB/s, p50/p99/p99.9, host and target CPU time per I/O and the ratio to the reference;
# `nvmeof bench-report` draws iops.png and latency.png (JFreeChart) and writes report.md with every command run.
# Environment: T (10) RAMP (2) QDS ("1 32") BSS ("4k 128k") RWS ("randread randwrite") BACKENDS ("ram file")
# BLOCK (none) TLS (1: include the TLS series) FIO_ENGINE (1: include fio with our engine, when fio and the engine
# are there) TARGET_CPUS (0) HOST_CPUS (1) FILE_SIZE (1GiB). Needs the project built (./mvnw -DskipTests install),
# fio for the file/block references and the engine series.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
OUT="${1:-$repo/target/bench-report/$(date +%Y%m%d-%H%M%S)}"
T=${T:-10}; RAMP=${RAMP:-2}; QDS=${QDS:-1 32}; BSS=${BSS:-4k 128k}; RWS=${RWS:-randread randwrite}
BACKENDS=${BACKENDS:-ram file}; TLS=${TLS:-1}; FIO_ENGINE=${FIO_ENGINE:-1}
TARGET_CPUS=${TARGET_CPUS:-0}; HOST_CPUS=${HOST_CPUS:-1}; FILE_SIZE=${FILE_SIZE:-1GiB}
JAR="$repo/nvmeof-cli/target/nvmeof.jar"
ENGINE="$repo/native/target/fio/nvmeof-fio.so"
PORT=${PORT:-4470}
NQN=nqn.2026-12.io.nvmeof:report
HOST=nqn.2014-08.org.nvmexpress:uuid:7e570000-0000-4000-8000-000000000002
KEY=NVMeTLSkey-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:   # a test key (nvme gen-tls-key --secret=00..1f)
[ -n "${BLOCK:-}" ] && BACKENDS="$BACKENDS block"
[ -f "$JAR" ] || { echo "report.sh: $JAR is missing; build first: ./mvnw -DskipTests install" >&2; exit 1; }
have_fio=0; command -v fio > /dev/null && have_fio=1
mkdir -p "$OUT" || exit 1
RUNS="$OUT/runs.tsv"
printf 'configuration\tseries\treference\tjson\tcommand\n' > "$RUNS"
runs_total=0; for b in $BACKENDS; do for rw in $RWS; do for bs in $BSS; do for qd in $QDS; do
  runs_total=$((runs_total + 1 + $([ "$b" = ram ] && echo $(( TLS + FIO_ENGINE * have_fio )) || echo $have_fio)))
done; done; done; done
run_no=0
TP=""
stop_target() { [ -n "$TP" ] && kill "$TP" 2>/dev/null && wait "$TP" 2>/dev/null; TP=""; }
trap 'stop_target; rm -f "$OUT/namespace.img"' EXIT
json_string() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; }
bytes_of() { # 1GiB, 1Gi, 1G (binary, as the target reads them) or bytes
  local v=${1%B}; case $v in *i) numfmt --from=iec-i "$v" ;; *) numfmt --from=iec "$v" ;; esac
}

# start_target NAME BACKEND_JSON TLS_MODE: a fresh target (launcher, default warm-up) on TARGET_CPUS; waits for its port.
start_target() {
  local name=$1 ns=$2 mode=$3
  cat > "$OUT/$name.target.json" <<JSON
{ "pollGroups": 1,
  "listeners": [ { "transport": "tcp", "address": "127.0.0.1", "port": $PORT, "tls": "$mode" } ],
  "hosts": [ $([ "$mode" = required ] && echo "{ \"nqn\": \"$HOST\", \"tlsKey\": \"$KEY\" }") ],
  "subsystems": [ { "nqn": "$NQN", "allowAnyHost": false, "hosts": [ "$HOST" ], "namespaces": [ $ns ] } ] }
JSON
  echo "report.sh: starting the target for $name (it warms up first)..." >&2
  taskset -c "$TARGET_CPUS" "$repo/nvmeof" target --no-admin --config "$OUT/$name.target.json" > "$OUT/$name.target.log" 2>&1 &
  TP=$!
  for _ in $(seq 300); do # its own line, not the port: another process on the port must not pass for it
    grep -q "target running" "$OUT/$name.target.log" && return 0
    kill -0 "$TP" 2>/dev/null || break
    sleep 0.2
  done
  echo "report.sh: the target for $name did not start; see $OUT/$name.target.log" >&2
  tail -5 "$OUT/$name.target.log" >&2
  exit 1
}

# record CONFIG SERIES REF FILE COMMAND...: runs the command (stdout to FILE), lists it in runs.tsv with the command
# as it ran, and shows progress.
record() {
  local config=$1 series=$2 ref=$3 file=$4; shift 4
  run_no=$((run_no + 1))
  printf 'report.sh: [%d/%d] %s, %s...' "$run_no" "$runs_total" "$config" "$series" >&2
  if "$@" > "$OUT/$file" 2> "$OUT/${file%.json}.err"; then
    printf '%s\t%s\t%s\t%s\t%s\n' "$config" "$series" "$ref" "$file" "$(printf '%q ' "$@")" >> "$RUNS"
    python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]; r=j["read"] if j["read"]["iops"]>0 else j["write"]; print(" %.0f IOPS" % r["iops"])' "$OUT/$file" >&2 2>/dev/null || echo >&2
  else
    echo " failed (see $OUT/${file%.json}.err); left out of the report" >&2
  fi
}

bench() { # bench RW BS QD [extra...]: our bench against the target
  local rw=$1 bs=$2 qd=$3; shift 3
  CMD=(taskset -c "$HOST_CPUS" "$repo/nvmeof" bench -a 127.0.0.1 -s "$PORT" -n "$NQN" -q "$HOST" --rw "$rw" --bs "$bs"
    --qd "$qd" --time "$T" --ramp "$RAMP" --target-pid "$TP" --json "$@")
}

fio_on() { # fio_on PATH RW BS QD: the device's own limit
  CMD=(taskset -c "$HOST_CPUS" fio --name=device --filename="$1" --rw="$2" --bs="$3" --iodepth="$4" --ioengine=io_uring
    --direct=1 --runtime="$T" --ramp_time="$RAMP" --time_based --output-format=json)
}

fio_engine() { # fio_engine RW BS QD: fio with our engine against the target
  CMD=(env NVMEOF_FIO_CLASSPATH="$JAR" taskset -c "$HOST_CPUS" fio --name=engine --ioengine="external:$ENGINE"
    --thread=1 --trtype=tcp --traddr=127.0.0.1 --trsvcid="$PORT" --subnqn="$NQN" --hostnqn="$HOST" --rw="$1" --bs="$2"
    --iodepth="$3" --runtime="$T" --ramp_time="$RAMP" --time_based --output-format=json)
}

for backend in $BACKENDS; do
  case $backend in
    ram) ns='{ "nsid": 1, "backend": "ram", "size": "1GiB", "blockSize": 4096 }'; dev="" ;;
    file) dev="$OUT/namespace.img"; rm -f "$dev"
          # Written through, not allocated: reads of never-written extents return zeroes without touching the disk.
          echo "report.sh: writing the $FILE_SIZE file $dev..." >&2
          size=$(bytes_of "$FILE_SIZE") || { echo "report.sh: FILE_SIZE $FILE_SIZE is not a size (1GiB)" >&2; exit 1; }
          dd if=/dev/zero of="$dev" bs=1M count=$(( size >> 20 )) oflag=direct status=none \
            || { echo "report.sh: cannot write $dev" >&2; exit 1; }
          ns="{ \"nsid\": 1, \"backend\": \"file\", \"path\": $(json_string "$dev"), \"blockSize\": 4096 }" ;;
    block) dev="$BLOCK"; ns="{ \"nsid\": 1, \"backend\": \"block\", \"path\": $(json_string "$dev") }" ;;
    *) echo "report.sh: unknown backend '$backend' (ram, file, block)" >&2; exit 1 ;;
  esac
  # The device's own figures first, while no target holds it.
  if [ -n "$dev" ] && [ $have_fio = 1 ]; then
    for rw in $RWS; do for bs in $BSS; do for qd in $QDS; do
      fio_on "$dev" "$rw" "$bs" "$qd"
      record "$backend $rw $bs QD$qd" "fio on the $backend" 1 "$backend-$rw-$bs-qd$qd-device.json" "${CMD[@]}"
    done; done; done
  fi
  start_target "$backend-tcp" "$ns" none
  for rw in $RWS; do for bs in $BSS; do for qd in $QDS; do
    ref=$([ "$backend" = ram ] && echo 1 || echo 0)
    bench "$rw" "$bs" "$qd"
    record "$backend $rw $bs QD$qd" "ours, NVMe/TCP" "$ref" "$backend-$rw-$bs-qd$qd-tcp.json" "${CMD[@]}"
    if [ "$backend" = ram ] && [ "$FIO_ENGINE" = 1 ] && [ $have_fio = 1 ] && [ -f "$ENGINE" ]; then
      fio_engine "$rw" "$bs" "$qd"
      record "$backend $rw $bs QD$qd" "fio with our engine" 0 "$backend-$rw-$bs-qd$qd-fio-engine.json" "${CMD[@]}"
    fi
  done; done; done
  stop_target
  if [ "$backend" = ram ] && [ "$TLS" = 1 ]; then
    start_target "$backend-tls" "$ns" required
    for rw in $RWS; do for bs in $BSS; do for qd in $QDS; do
      bench "$rw" "$bs" "$qd" --tls-key "$KEY"
      record "$backend $rw $bs QD$qd" "ours, NVMe/TCP with TLS" 0 "$backend-$rw-$bs-qd$qd-tls.json" "${CMD[@]}"
    done; done; done
    stop_target
  fi
  [ "$backend" = file ] && rm -f "$dev"
done

{
  echo "Run by \`docs/bench/report.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$repo" log -1 --format='commit %h' 2>/dev/null)."
  echo "Machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), Linux $(uname -r), $(java -version 2>&1 | head -1)."
  echo "Target on CPU(s) $TARGET_CPUS (one poll group, after its start-up warm-up), load on CPU(s) $HOST_CPUS; each run"
  echo "$T s after $RAMP s of ramp on a new connection. A single run per row: this machine's absolute figures swing by"
  echo "up to 30 %, so compare rows through their ratios, and rerun before trusting a small difference."
} > "$OUT/preamble.md"
java -jar "$JAR" bench-report --preamble "$OUT/preamble.md" "$OUT" || exit 1
echo "report.sh: $OUT/report.md" >&2
