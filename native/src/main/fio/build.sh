#!/bin/sh
# Builds the fio ioengine, nvmeof-fio.so, against the headers of the fio that is installed: fio's engine ABI (struct
# thread_data, struct io_u, FIO_IOOPS_VERSION) is that release's, so the headers come from its own source. Maven runs
# this in the compile phase (native/pom.xml); by hand:
#   sh native/src/main/fio/build.sh native/target/fio "$JAVA_HOME"
# The fio source is found in $FIO_SRC, else ~/.cache/nvmeof-fio/fio-VERSION (./test puts Debian's source package
# there: apt-get source fio). Without fio, its source, a C compiler or JNI headers, it says so and builds nothing; the
# build goes on (as the RDMA helper's does) and the fio tests are skipped saying why.
set -eu
out_dir="${1:?usage: build.sh <out dir> <java home>}"
java_home="${2:?usage: build.sh <out dir> <java home>}"
src_dir="$(cd "$(dirname "$0")" && pwd)"
cc="${CC:-gcc}"
lib="$out_dir/nvmeof-fio.so"

skip() {
  echo "[WARNING] nvmeof-native: $1; the fio engine (nvmeof-fio.so) is NOT built." >&2
  [ -n "${2:-}" ] && echo "[WARNING] nvmeof-native: $2" >&2
  rm -f "$lib"
  exit 0
}

command -v fio >/dev/null 2>&1 || skip "no fio on PATH" "install it (apt-get install fio); the engine is built for the fio that runs it"
version="$(fio --version | sed -n 's/^fio-//p')"
[ -n "$version" ] || skip "cannot tell fio's version ($(fio --version 2>&1 | head -1))"
fio_src="${FIO_SRC:-$HOME/.cache/nvmeof-fio/fio-$version}"
[ -f "$fio_src/fio.h" ] || skip "fio $version's source is not in $fio_src" \
  "get it with: mkdir -p ~/.cache/nvmeof-fio && cd ~/.cache/nvmeof-fio && apt-get source fio (needs a deb-src entry; ./test adds one)"
grep -q "FIO_IOOPS_VERSION" "$fio_src/ioengines.h" || skip "$fio_src/ioengines.h has no FIO_IOOPS_VERSION"
command -v "${cc%% *}" >/dev/null 2>&1 || skip "no C compiler ($cc)"
jni="$java_home/include"
[ -f "$jni/jni.h" ] || jni="$(dirname "$java_home")/include"
[ -f "$jni/jni.h" ] || skip "no jni.h under $java_home (a JDK is needed to build the engine)"

# fio's configure writes config-host.h, which its headers expect first; Debian builds with --disable-native.
if [ ! -f "$fio_src/config-host.h" ]; then
  echo "[INFO] nvmeof-native: running fio $version's configure for config-host.h"
  (cd "$fio_src" && ./configure --disable-native > configure.out 2>&1) || skip "fio's configure failed (see $fio_src/configure.out)"
fi

up_to_date=1
for input in "$src_dir"/*.c "$src_dir"/*.h "$0" "$fio_src/config-host.h"; do
  [ -f "$lib" ] && [ "$lib" -nt "$input" ] || up_to_date=0
done
[ "$up_to_date" = 1 ] && exit 0
mkdir -p "$out_dir"
libjvm=""
[ -f "$java_home/lib/server/libjvm.so" ] && libjvm="$java_home/lib/server/libjvm.so"
# fio's own symbols (add_file, io_u_queued, log_err, ...) are resolved from the fio executable at dlopen, so no
# --no-undefined here; libjvm is opened at run time (dlopen), not linked.
$cc -std=gnu11 -O2 -g -fPIC -shared -fvisibility=hidden -Wall -Wno-unused-parameter -Wno-pointer-arith -Wno-sign-compare -Wno-format-truncation \
  -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -D_LARGEFILE_SOURCE -include "$fio_src/config-host.h" -I"$fio_src" \
  -I"$jni" -I"$jni/linux" -DNVMEOF_DEFAULT_LIBJVM="\"$libjvm\"" \
  -o "$lib" "$src_dir"/*.c -ldl -lpthread
echo "$version" > "$out_dir/fio-version"
echo "[INFO] nvmeof-native: built $lib for fio $version"
