#!/bin/sh
# Builds the RDMA helper library, libnvmeofrdma.so, into <classes dir>/<JNA platform prefix>/ so that JNA finds it on
# the class path (and in the jar). Maven runs this in the compile phase (native/pom.xml); it can be run by hand:
#   sh native/src/main/c/build.sh native/target/classes
# Without a C compiler or rdma-core's headers it prints a warning and builds nothing; the build goes on, and at run
# time RdmaLibrary.unavailableReason() says what is missing. A compile error with the headers present fails the build.
set -eu
out_root="${1:?usage: build.sh <classes dir>}"
src_dir="$(cd "$(dirname "$0")" && pwd)"
cc="${CC:-gcc}"

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) prefix=linux-x86-64 ;;
  Linux-aarch64) prefix=linux-aarch64 ;;
  Linux-ppc64le) prefix=linux-ppc64le ;;
  *) echo "[WARNING] nvmeof-native: $(uname -s)-$(uname -m) is not a platform for the RDMA helper; RDMA will be unavailable" >&2
     exit 0 ;;
esac
out_dir="$out_root/$prefix"
lib="$out_dir/libnvmeofrdma.so"

warn_missing() {
  echo "[WARNING] nvmeof-native: $1; the RDMA helper (libnvmeofrdma.so) is NOT built and the jar will report RDMA" >&2
  echo "[WARNING] nvmeof-native: unavailable. To build it install: apt-get install gcc libibverbs-dev librdmacm-dev" >&2
  rm -f "$lib"
  exit 0
}

command -v "${cc%% *}" >/dev/null 2>&1 || warn_missing "no C compiler ($cc)"
# Probe the headers and the link libraries the way the real compile uses them.
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
printf '#include <infiniband/verbs.h>\n#include <rdma/rdma_cma.h>\nint main(void){return ibv_get_device_list(0)==0 && rdma_create_event_channel()==0;}\n' > "$probe/p.c"
if ! $cc -o "$probe/p" "$probe/p.c" -libverbs -lrdmacm > "$probe/log" 2>&1; then
  warn_missing "rdma-core development files not found (libibverbs-dev librdmacm-dev): $(head -1 "$probe/log")"
fi

# Up to date? (the .so is newer than every source file, the header and this script)
up_to_date=1
for input in "$src_dir"/*.c "$src_dir"/*.h "$0"; do
  [ -f "$lib" ] && [ "$lib" -nt "$input" ] || up_to_date=0
done
[ "$up_to_date" = 1 ] && exit 0
mkdir -p "$out_dir"
# -fvisibility=hidden: only the NVR_EXPORT functions are exported. -Wl,--no-undefined: a missing symbol fails here,
# not at dlopen time in a guest. Linking libibverbs/librdmacm records them as DT_NEEDED (libibverbs.so.1, librdmacm.so.1).
$cc -std=gnu11 -O2 -g -fPIC -shared -fvisibility=hidden -Wall -Wextra -Werror -Wno-unused-parameter \
  -Wl,--no-undefined -Wl,-soname,libnvmeofrdma.so \
  -o "$lib" "$src_dir"/*.c -libverbs -lrdmacm
echo "[INFO] nvmeof-native: built $lib"
