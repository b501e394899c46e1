#!/bin/bash
# Start-up as a user meets it (docs/performance.md, "Start-up"): each figure is the median of N runs of the command as
# typed, through the ./nvmeof launcher (LAUNCHER=path/to/nvmeof to measure another checkout's).
#   - `nvmeof admin subsystems` against a running target: the wall time of the whole command;
#   - `nvmeof target`: from the command's start until its NVMe/TCP port accepts a connection, and until its admin API
#     answers GET /health.
#   N=7 docs/bench/startup-run.sh [LABEL]
# Prints one line: LABEL admin_ms=… target_tcp_ms=… target_api_ms=… (medians).
set -u
LAUNCHER=${LAUNCHER:-$(cd "$(dirname "$0")/../.." && pwd)/nvmeof}
N=${N:-7}; LABEL=${1:-run}
PORT=${PORT:-4987}; API=${API:-8087}
STATE=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$STATE"' EXIT
now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
accepts() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
api_up() { curl -s -o /dev/null -m 1 "http://127.0.0.1:$API/health"; }

"$LAUNCHER" --version > /dev/null  # builds on first use, outside the measure
tcp=(); api=()
for i in $(seq "$N"); do
  s=$(now)
  "$LAUNCHER" target --size 64MiB --port "$PORT" --admin-listen "127.0.0.1:$API" --state-dir "$STATE" > "$STATE/target.log" 2>&1 &
  tp=$!
  until accepts "$PORT"; do sleep 0.01; done; t=$(now)
  until api_up; do sleep 0.01; done; a=$(now)
  tcp+=($(( (t - s) / 1000000 ))); api+=($(( (a - s) / 1000000 )))
  if [ "$i" -lt "$N" ]; then kill "$tp"; wait "$tp" 2>/dev/null; fi
done
adm=()
for i in $(seq "$N"); do
  s=$(now)
  "$LAUNCHER" admin --url "http://127.0.0.1:$API" --state-dir "$STATE" subsystems > /dev/null || exit 1
  adm+=($(( ($(now) - s) / 1000000 )))
done
echo "$LABEL admin_ms=$(printf '%s\n' "${adm[@]}" | median) target_tcp_ms=$(printf '%s\n' "${tcp[@]}" | median)" \
  "target_api_ms=$(printf '%s\n' "${api[@]}" | median)"
