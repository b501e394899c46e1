#!/usr/bin/env bash
# guest.sh: run a command as root inside a QEMU guest that boots Debian's own kernel, so the Linux kernel's
# NVMe-oF host (nvme-tcp, nvme-rdma) and target (nvmet-tcp, nvmet-rdma) and Soft-RoCE (rdma_rxe) are available on a
# machine whose own kernel cannot load them. The guest sees the host's root file system read-only (with a tmpfs
# overlay), and the folders given with --share read-write at the same paths. All networking stays inside the guest.
#
#   guest.sh [--timeout SECS] [--share DIR]... [--rdma] [--nvme SIZE] [--mem SIZE] [--smp N] -- COMMAND [ARG...]
#   guest.sh --prepare          fetch and unpack the kernel, build the initramfs (cached), then exit
#   guest.sh --kernel trixie ...  boot Debian 13's kernel (6.12: NVMe in-band authentication and NVMe/TCP TLS, which
#                                 Debian 12's 6.1 is built without) instead of the machine's own release's; its
#                                 package list is fetched into the cache, the machine's apt setup is left alone.
#                                 With it comes that release's userland for NVMe/TCP TLS (nvme-cli, tlshd from
#                                 ktls-utils, keyutils), made once with debootstrap in the cache; the job finds it
#                                 at $GUEST_USERLAND and runs those tools with chroot
#
# --nvme SIZE gives the guest an emulated NVMe PCIe disk of SIZE (QEMU's nvme device, serial NVMEOFDISK0) over a
# sparse image that lives as long as the run: a real block device for the target's block backend.
# The exit code is COMMAND's; 124 when the guest ran past the timeout, 125 when it did not boot or died.
# Cache: $NVMEOF_GUEST_CACHE (default ~/.cache/nvmeof-guest). Logs: $NVMEOF_GUEST_LOGS (default conformance-tests/target/guest-logs).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${NVMEOF_GUEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nvmeof-guest}"
logs="${NVMEOF_GUEST_LOGS:-$(cd "$here/.." && pwd)/target/guest-logs}"
timeout_s=900
mem=4G
smp=2
rdma=0
prepare_only=0
shares=()
nvme_size=""
suite=""

die() { echo "guest.sh: $*" >&2; exit 125; }

while [ $# -gt 0 ]; do
  case "$1" in
    --timeout) timeout_s="$2"; shift 2 ;;
    --share) shares+=("$(cd "$2" && pwd)"); shift 2 ;;
    --rdma) rdma=1; shift ;;
    --nvme) nvme_size="$2"; shift 2 ;;
    --mem) mem="$2"; shift 2 ;;
    --smp) smp="$2"; shift 2 ;;
    --prepare) prepare_only=1; shift ;;
    --kernel) suite="$2"; shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done

need_tools() {
  local missing=()
  for t in qemu-system-x86_64 depmod modprobe cpio gzip dpkg apt-get; do command -v "$t" >/dev/null || missing+=("$t"); done
  [ -x /bin/busybox ] || missing+=(busybox-static)
  if [ ${#missing[@]} -gt 0 ]; then
    die "missing host tools: ${missing[*]}. Install: apt-get install -y qemu-system-x86 busybox-static kmod cpio"
  fi
}

# ---- preparation: kernel package, modules.dep, initramfs (cached by kernel version) ----
prepare() {
  need_tools
  mkdir -p "$cache"
  local pkg apt_opts=()
  if [ -n "$suite" ]; then
    # Another Debian release's kernel: its package list in the cache, from the machine's own Debian mirror.
    case "$suite" in *[!a-z-]*) die "--kernel takes a Debian suite name (trixie), not '$suite'" ;; esac
    local adir="$cache/apt-$suite" mirror
    mirror="$( (grep -rhE '^[^#]*(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null || true) \
      | grep -oE 'https?://[^ ]+/debian/?( |$)' | head -1 | tr -d ' ')" || true
    mirror="${mirror:-http://deb.debian.org/debian}"
    mkdir -p "$adir/lists/partial"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${mirror%/} $suite main" > "$adir/sources.list"
    apt_opts=(-o "Dir::Etc::SourceList=$adir/sources.list" -o Dir::Etc::SourceParts=/dev/null
              -o "Dir::State::Lists=$adir/lists" -o "Dir::Cache=$adir/cache")
    pkg="$(apt-cache "${apt_opts[@]}" depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')" || true
    if [ -z "$pkg" ]; then
      apt-get "${apt_opts[@]}" update -qq >/dev/null 2>&1 || true
      pkg="$(apt-cache "${apt_opts[@]}" depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')" || true
    fi
    [ -n "$pkg" ] || die "cannot find Debian $suite's kernel package in ${mirror%/} $suite (is the mirror reachable?)"
  else
    pkg="$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')" || true
    if [ -z "$pkg" ]; then
      apt-get update -qq >/dev/null 2>&1 || true
      pkg="$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')" || true
    fi
    [ -n "$pkg" ] || die "cannot find Debian's kernel package (apt-cache depends linux-image-amd64 gave nothing; is apt reachable?)"
  fi
  local kdir="$cache/$pkg"
  local stamp1; stamp1="$(cksum < "$here/stage1-init" | cut -d' ' -f1)"
  if [ -f "$kdir/.ready" ] && [ "$(cat "$kdir/.stage1" 2>/dev/null)" != "$stamp1" ]; then
    build_initramfs "$kdir" "$(cat "$kdir/kver")"
    echo "$stamp1" > "$kdir/.stage1"
  fi
  if [ ! -f "$kdir/.ready" ]; then
    echo "guest.sh: preparing $pkg in $kdir (once)" >&2
    rm -rf "$kdir" && mkdir -p "$kdir/deb"
    (cd "$kdir/deb" && apt-get "${apt_opts[@]}" download -qq "$pkg" >/dev/null 2>&1) || die "apt-get download $pkg failed"
    dpkg -x "$kdir"/deb/*.deb "$kdir/root"
    # Releases with a merged /usr ship the modules under usr/lib.
    if [ ! -d "$kdir/root/lib/modules" ] && [ -d "$kdir/root/usr/lib/modules" ]; then
      mkdir -p "$kdir/root/lib" && ln -s ../usr/lib/modules "$kdir/root/lib/modules"
    fi
    local kver
    kver="$(ls "$kdir/root/lib/modules" | head -1)"
    depmod -b "$kdir/root" "$kver"
    build_initramfs "$kdir" "$kver"
    cp "$kdir/root/boot/vmlinuz-$kver" "$kdir/vmlinuz"
    echo "$kver" > "$kdir/kver"
    rm -rf "$kdir/deb"
    echo "$stamp1" > "$kdir/.stage1"
    touch "$kdir/.ready"
  fi
  KDIR="$kdir"
  KVER="$(cat "$kdir/kver")"
  USERLAND=""
  if [ -n "$suite" ]; then
    prepare_userland "$suite" "${mirror%/}"
  fi
}

# Another release's tools for the guest (TLS: nvme-cli with --tls, tlshd), in a minimal root made once.
prepare_userland() {
  local suite="$1" mirror="$2" dir="$cache/userland-$1"
  if [ ! -f "$dir/.ready" ]; then
    local db; db="$(command -v debootstrap || echo /usr/sbin/debootstrap)"
    [ -x "$db" ] || die "missing host tool: debootstrap (apt-get install -y debootstrap)"
    echo "guest.sh: making Debian $suite's userland for the guest in $dir (once)" >&2
    rm -rf "$dir"
    "$db" --variant=minbase --include=nvme-cli,ktls-utils,keyutils,kmod "$suite" "$dir" "$mirror" \
      > "$cache/userland-$suite.log" 2>&1 || die "debootstrap $suite failed: see $cache/userland-$suite.log"
    touch "$dir/.ready"
  fi
  USERLAND="$dir"
}

build_initramfs() {
  local kdir="$1" kver="$2" ir="$1/initramfs"
  rm -rf "$ir" && mkdir -p "$ir"/{bin,dev,proc,sys,mnt/lower,mnt/rw,mnt/root,modules}
  cp /bin/busybox "$ir/bin/busybox"
  for a in sh mount umount mkdir insmod switch_root cat sleep echo ls; do ln -s busybox "$ir/bin/$a"; done
  : > "$ir/modules/order"
  local m f
  for m in virtio_pci virtio_net 9pnet_virtio 9p overlay; do
    modprobe -d "$kdir/root" -S "$kver" --show-depends "$m" | awk '$1=="insmod"{print $2}' | while read -r f; do
      local base; base="$(basename "$f")"
      local src="$kdir/root/${f#/}"
      [ -f "$src" ] || src="$kdir/root/usr/${f#/}"
      [ -f "$src" ] || src="$f"
      case "$base" in
        *.xz) base="${base%.xz}"; grep -qx "$base" "$ir/modules/order" || xz -dc "$src" > "$ir/modules/$base" ;;
        *.zst) base="${base%.zst}"; grep -qx "$base" "$ir/modules/order" || zstd -qdc "$src" > "$ir/modules/$base" ;;
        *) grep -qx "$base" "$ir/modules/order" || cp "$src" "$ir/modules/$base" ;;
      esac
      grep -qx "$base" "$ir/modules/order" || echo "$base" >> "$ir/modules/order"
    done
  done
  cp "$here/stage1-init" "$ir/init"
  chmod +x "$ir/init"
  (cd "$ir" && find . | cpio -o -H newc --quiet | gzip -1) > "$kdir/initramfs.cpio.gz"
}

prepare
if [ "$prepare_only" = 1 ]; then
  echo "guest.sh: ready: kernel $KVER in $KDIR"
  exit 0
fi
[ $# -gt 0 ] || die "no command given (guest.sh -- COMMAND ...)"

# ---- one run ----
mkdir -p "$logs"
stamp="$(date +%Y%m%d-%H%M%S)-$$"
run="$logs/run-$stamp"
mkdir -p "$run"
trap 'rm -rf "$run"' EXIT
console="$logs/console-$stamp.log"
{
  echo "#!/bin/sh"
  echo "cd $(printf %q "$PWD")"
  [ -z "$USERLAND" ] || echo "export GUEST_USERLAND=$(printf %q "$USERLAND")"
  printf 'exec'
  printf ' %q' "$@"
  echo
} > "$run/job.sh"
chmod +x "$run/job.sh"

# 9p shares: the run folder plus --share folders, each mounted at its own path in the guest.
share_args=()
share_spec="r0:$run"
share_args+=(-fsdev "local,id=r0,path=$run,security_model=none,multidevs=remap" -device "virtio-9p-pci,fsdev=r0,mount_tag=r0")
i=1
for s in "${shares[@]}"; do
  share_args+=(-fsdev "local,id=s$i,path=$s,security_model=none,multidevs=remap" -device "virtio-9p-pci,fsdev=s$i,mount_tag=s$i")
  share_spec="$share_spec,s$i:$s"
  i=$((i + 1))
done

disk_args=()
if [ -n "$nvme_size" ]; then
  truncate -s "$nvme_size" "$run/nvme-disk.img"
  disk_args+=(-drive "file=$run/nvme-disk.img,if=none,id=nvm0,format=raw" -device "nvme,serial=NVMEOFDISK0,drive=nvm0")
fi

echo "guest.sh: booting kernel $KVER (TCG, $smp CPUs, $mem, timeout ${timeout_s}s); console log $console" >&2
set +e
timeout -k 10 "$timeout_s" qemu-system-x86_64 \
  -machine q35 -accel tcg,thread=multi -cpu max -smp "$smp" -m "$mem" \
  -no-reboot -nodefaults -display none -uuid "$(cat /proc/sys/kernel/random/uuid)" \
  -kernel "$KDIR/vmlinuz" -initrd "$KDIR/initramfs.cpio.gz" \
  -fsdev "local,id=hostroot,path=/,readonly=on,security_model=none,multidevs=remap" \
  -device "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot" \
  "${share_args[@]}" \
  "${disk_args[@]}" \
  -netdev user,id=n0,restrict=on -device virtio-net-pci,netdev=n0,romfile= \
  -serial stdio \
  -append "console=ttyS0 panic=-1 quiet loglevel=3 hardened_usercopy=off nvmeof.shares=$share_spec nvmeof.stage2=$here/stage2 nvmeof.kdir=$KDIR nvmeof.kver=$KVER nvmeof.rdma=$rdma nvmeof.run=$run" \
  < /dev/null 2>&1 | tee "$console"
qemu_rc=${PIPESTATUS[0]}
set -e
if [ -f "$run/rc" ]; then
  rc="$(cat "$run/rc")"
  exit "$rc"
fi
if [ "$qemu_rc" = 124 ] || [ "$qemu_rc" = 137 ]; then
  echo "guest.sh: the guest ran past ${timeout_s}s and was stopped; see $console" >&2
  exit 124
fi
echo "guest.sh: the guest ended without running the command to completion (QEMU exit $qemu_rc); see $console" >&2
exit 125
