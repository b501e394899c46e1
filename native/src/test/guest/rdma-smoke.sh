#!/usr/bin/env bash
# RDMA smoke test of nvmeof-native over Soft-RoCE (rxe0), inside the conformance guest.
#
#   native/src/test/guest/rdma-smoke.sh            on the host: boots a guest (--rdma, 6 GiB for the >4 GiB
#                                                  registration) and runs itself there with --in-guest
#   native/src/test/guest/rdma-smoke.sh --in-guest inside a guest (or on any machine with an RDMA device)
#
# Needs the module built on the host first (./mvnw -o install -pl native, or the whole build): the guest only runs
# java on target/classes and target/test-classes. Prints PASS/FAIL lines and "N passed, N failed"; the exit code is
# non-zero on any failure. RESULTS=<dir> (as the interop jobs use) also gets rdma-smoke.summary there.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module="$(cd "$here/../../.." && pwd)"
repo="$(cd "$module/.." && pwd)"

if [ "${1:-}" != "--in-guest" ]; then
  [ -f "$module/target/test-classes/io/nvmeof/rdma/RdmaSmokeCheck.class" ] \
    || { echo "rdma-smoke.sh: build first: (cd $repo && ./mvnw -o -q install -pl native)" >&2; exit 2; }
  # The class path is resolved here, on the host (Maven is too slow under emulation); the guest sees ~/.m2 read-only.
  (cd "$module" && "$repo/mvnw" -q -B -ntp dependency:build-classpath -Dmdep.outputFile=target/smoke.classpath >/dev/null) \
    || { echo "rdma-smoke.sh: cannot resolve the class path (mvn dependency:build-classpath)" >&2; exit 2; }
  cd "$repo"
  exec conformance-tests/guest/guest.sh --rdma --mem "${SMOKE_GUEST_MEM:-6G}" --timeout "${SMOKE_TIMEOUT:-600}" \
    --share "$repo" -- env ${RESULTS:+RESULTS="$RESULTS"} ${SMOKE_ARGS+SMOKE_ARGS="$SMOKE_ARGS"} bash "$here/rdma-smoke.sh" --in-guest
fi

cp="$module/target/classes:$module/target/test-classes:$(cat "$module/target/smoke.classpath" 2>/dev/null)"
echo "rdma-smoke: $(ibv_devices 2>/dev/null | awk 'NR>2{print $1}' | tr '\n' ' ')on $(uname -r)"
out="$(mktemp)"
# C1 only: the JIT's higher tiers cost more than they give under emulation. --big-mr registers 4 GiB + 2 MiB when
# the guest has the memory (the check skips it otherwise).
java -XX:TieredStopAtLevel=1 -Xmx256m --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
  -cp "$cp" io.nvmeof.rdma.RdmaSmokeCheck ${SMOKE_ARGS:---big-mr} 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
if [ -n "${RESULTS:-}" ]; then
  mkdir -p "$RESULTS"
  grep -E '^(PASS|FAIL)' "$out" | sed 's/^\(PASS\|FAIL\) /\1 rdma-smoke: /' > "$RESULTS/rdma-smoke.summary"
  [ $rc -eq 0 ] || grep -q '^FAIL' "$RESULTS/rdma-smoke.summary" || echo "FAIL rdma-smoke: exit $rc" >> "$RESULTS/rdma-smoke.summary"
fi
rm -f "$out"
exit $rc
