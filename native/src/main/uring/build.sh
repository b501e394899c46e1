#!/bin/sh
# Builds the io_uring helper library, libnvmeofuring.so, into <classes dir>/<JNA platform prefix>/ so that JNA finds it
# on the class path (and in the jar). Maven runs this in the compile phase (native/pom.xml); by hand:
#   sh native/src/main/uring/build.sh native/target/classes
# It needs a C compiler and the kernel's <linux/io_uring.h> (linux-libc-dev), nothing else: no liburing. Without them it
# warns and builds nothing; the build goes on, and at run time UringLibrary.unavailableReason() says what is missing
# (file and block namespaces then use the blocking path). A compile error with the header present fails the build.
set -eu
out_root="${1:?usage: build.sh <classes dir>}"
src_dir="$(cd "$(dirname "$0")" && pwd)"
cc="${CC:-gcc}"

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) prefix=linux-x86-64 ;;
  Linux-aarch64) prefix=linux-aarch64 ;;
  Linux-ppc64le) prefix=linux-ppc64le ;;
  *) echo "[WARNING] nvmeof-native: $(uname -s)-$(uname -m) is not a platform for the io_uring helper" >&2
     exit 0 ;;
esac
out_dir="$out_root/$prefix"
lib="$out_dir/libnvmeofuring.so"

warn_missing() {
  echo "[WARNING] nvmeof-native: $1; the io_uring helper (libnvmeofuring.so) is NOT built, and file and block" >&2
  echo "[WARNING] nvmeof-native: namespaces will use blocking I/O. To build it install: apt-get install gcc linux-libc-dev" >&2
  rm -f "$lib"
  exit 0
}

command -v "${cc%% *}" >/dev/null 2>&1 || warn_missing "no C compiler ($cc)"
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
printf '#include <linux/io_uring.h>\nint main(void){return IORING_OP_FALLOCATE + IORING_REGISTER_IOWQ_MAX_WORKERS;}\n' > "$probe/p.c"
if ! $cc -o "$probe/p" "$probe/p.c" > "$probe/log" 2>&1; then
  warn_missing "the kernel's io_uring header (linux-libc-dev >= 5.15) was not found: $(head -1 "$probe/log")"
fi

up_to_date=1
for input in "$src_dir"/*.c "$0"; do
  [ -f "$lib" ] && [ "$lib" -nt "$input" ] || up_to_date=0
done
[ "$up_to_date" = 1 ] && exit 0
mkdir -p "$out_dir"
$cc -std=gnu11 -O2 -g -fPIC -shared -fvisibility=hidden -Wall -Wextra -Werror -Wno-unused-parameter \
  -Wl,--no-undefined -Wl,-soname,libnvmeofuring.so \
  -o "$lib" "$src_dir"/*.c
echo "[INFO] nvmeof-native: built $lib"
