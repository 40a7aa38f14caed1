# Host-side helpers shared by `run` and `kvm-usable`. Sourced, not executed.
#
# Everything expensive (kernel download, initramfs, KVM probe) is done once and
# kept in $VM_CACHE, so a second run only boots.

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VM_CACHE=${BLEKIT_VM_CACHE:-/var/cache/blekit-vm}
VM_KERNEL=$VM_CACHE/kernel

# Only what stage 1 needs to reach the host root. Bluetooth and crypto modules
# are loaded later, in stage 2: loaded from the initramfs, ecdh_generic's
# self-test cannot auto-load drbg and Bluetooth ends up without ECDH (no LE
# Secure Connections pairing).
INITRAMFS_MODULES="virtio_mmio 9pnet_virtio 9p overlay virtio_rng"

say() { echo "bluez-vm: $*" >&2; }
die() { say "$*"; exit 125; }

require_host() {
  [ "$(id -u)" = 0 ] || die "must run as root (qemu shares the whole host root)"
  local tool
  for tool in qemu-system-x86_64 busybox btvirt bluetoothd dbus-daemon dbus-send \
              apt-get apt-cache dpkg depmod modprobe xz setpriv flock perl; do
    command -v "$tool" >/dev/null 2>&1 && continue
    [ "$tool" = bluetoothd ] && [ -x /usr/libexec/bluetooth/bluetoothd ] && continue
    die "missing host tool $tool (apt-get install qemu-system-x86 busybox-static bluez bluez-test-tools dbus kmod xz-utils)"
  done
  # The initramfs has no libc, so its busybox must be the static one.
  if ldd "$(command -v busybox)" >/dev/null 2>&1; then
    die "$(command -v busybox) is dynamically linked; install busybox-static"
  fi
  case "$VM_CACHE$VM_DIR" in
    *[[:space:]]*) die "paths with spaces are not supported ($VM_CACHE, $VM_DIR)" ;;
  esac
  mkdir -p "$VM_CACHE" || die "cannot create $VM_CACHE"
}

# Serialises first-time preparation between concurrent runs.
with_cache_lock() {
  (
    flock 8 || exit 125
    "$@"
  ) 8>"$VM_CACHE/lock"
}

# --- kernel ---------------------------------------------------------------

# The host kernel has no Bluetooth, so the guest boots Debian's stock kernel.
# It is unpacked into the cache, never installed.
prepare_kernel() {
  [ -s "$VM_KERNEL/version" ] && return 0
  local package work deb version
  package=$(apt-cache depends linux-image-amd64 2>/dev/null |
            awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
  [ -n "$package" ] || die "cannot resolve linux-image-amd64 (run apt-get update?)"
  say "first use: fetching $package into $VM_KERNEL (once)"
  work=$(mktemp -d "$VM_CACHE/kernel.new.XXXXXX") || return 125
  if ! (cd "$work" && apt-get download "$package") >"$work/download.log" 2>&1; then
    say "apt-get download $package failed:"; tail -n 5 "$work/download.log" >&2
    rm -rf "$work"; return 125
  fi
  deb=$(ls "$work"/*.deb)
  dpkg -x "$deb" "$work/root" || { rm -rf "$work"; return 125; }
  rm -f "$deb" "$work/download.log"
  version=$(ls "$work/root/lib/modules")
  depmod -b "$work/root" "$version" || { rm -rf "$work"; return 125; }
  extract_vmlinux "$work/root/boot/vmlinuz-$version" "$work/vmlinux"
  echo "$version" > "$work/version"
  rm -rf "$VM_KERNEL"
  mv "$work" "$VM_KERNEL"
}

# The uncompressed ELF boots through the PVH entry point, which skips real
# mode and the decompressor: noticeably faster under TCG. Optional: without
# it the bzImage is booted.
extract_vmlinux() {
  local bzimage=$1 out=$2 offset
  offset=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$bzimage" | head -n 1 | cut -d: -f1)
  [ -n "$offset" ] || return 0
  tail -c +$((offset + 1)) "$bzimage" | xz -dc >"$out" 2>/dev/null
  if [ "$(head -c 4 "$out" | od -An -tx1 | tr -d ' ')" != 7f454c46 ]; then
    rm -f "$out"
  fi
}

kernel_version() { cat "$VM_KERNEL/version"; }

kernel_image() {
  if [ -s "$VM_KERNEL/vmlinux" ]; then echo "$VM_KERNEL/vmlinux"
  else echo "$VM_KERNEL/root/boot/vmlinuz-$(kernel_version)"; fi
}

# --- initramfs ------------------------------------------------------------

# Named after a hash of its inputs, so editing guest/init rebuilds it and a
# stale image is never booted.
initramfs_path() {
  local hash
  hash=$(cat "$VM_DIR/guest/init" "$(command -v busybox)" <(echo "$INITRAMFS_MODULES") |
         sha256sum | cut -c1-12)
  echo "$VM_KERNEL/initramfs-$hash.cpio.gz"
}

prepare_initramfs() {
  local image version root work module name
  image=$(initramfs_path)
  [ -s "$image" ] && return 0
  version=$(kernel_version)
  root=$VM_KERNEL/root
  work=$(mktemp -d "$VM_CACHE/initramfs.XXXXXX") || return 125
  mkdir -p "$work/bin" "$work/modules" "$work/proc" "$work/sys" "$work/dev"
  cp "$(command -v busybox)" "$work/bin/busybox"
  cp "$VM_DIR/guest/init" "$work/init"
  chmod 755 "$work/init"
  # --show-depends lists dependencies first, which is the insmod order.
  for module in $(for name in $INITRAMFS_MODULES; do
                    modprobe -d "$root" -S "$version" --show-depends "$name"
                  done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }'); do
    name=$(basename "$module")
    case "$name" in
      *.xz) xz -dc "$module" >"$work/modules/${name%.xz}"; name=${name%.xz} ;;
      *) cp "$module" "$work/modules/$name" ;;
    esac
    echo "$name" >>"$work/modules/order"
  done
  [ -s "$work/modules/order" ] || { rm -rf "$work"; die "no initramfs modules found in $root"; }
  (cd "$work" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$image.tmp" &&
    mv "$image.tmp" "$image"
  rm -rf "$work"
  # Older images belong to older versions of guest/init; a running qemu has
  # already read its own.
  find "$VM_KERNEL" -maxdepth 1 -name 'initramfs-*.cpio.gz' ! -path "$image" -delete
}

prepare_guest_files() {
  with_cache_lock prepare_kernel || die "kernel preparation failed"
  with_cache_lock prepare_initramfs || die "initramfs build failed"
}

# --- accelerator ----------------------------------------------------------

# Under TCG the guest's TSC is the host's. Telling the guest its frequency
# skips PIT calibration, which under TCG with 2 vCPUs sometimes fails and
# then hangs the boot ("tsc: Unable to calibrate against PIT").
host_tsc_khz() {
  local file=$VM_CACHE/tsc-khz mhz
  if [ ! -s "$file" ]; then
    mhz=$(dmesg 2>/dev/null | grep -oE 'tsc: (Refined TSC clocksource calibration|Detected) [0-9.]+ MHz' |
          tail -n 1 | grep -oE '[0-9.]+ MHz')
    [ -n "$mhz" ] || mhz=$(awk -F': ' '/^cpu MHz/ { print $2 " MHz"; exit }' /proc/cpuinfo)
    [ -n "$mhz" ] || return 0
    awk -v m="${mhz% MHz}" 'BEGIN { printf "%d\n", m * 1000 }' >"$file"
  fi
  cat "$file"
}

# Prints the common qemu argv (NUL-separated) for accelerator $1.
qemu_base_args() {
  local accel=$1 cpu=max
  [ "$accel" = kvm ] && cpu=host
  printf '%s\0' qemu-system-x86_64 -accel "$accel" -M microvm -cpu "$cpu" -smp 2 -m 2048 \
    -nodefaults -no-user-config -nographic -no-reboot \
    -kernel "$(kernel_image)" -initrd "$(initramfs_path)"
}

# A /dev/kvm that exists is not necessarily usable: on this kind of host it
# comes from kvm_pvm (nested PVM), which hangs or dies with "emulation
# failure" on a stock kernel. So boot the real kernel+initramfs once and
# remember the verdict, keyed by everything that could change it.
KVM_PROBE_SECONDS=15
kvm_probe_key() {
  echo "$(uname -r)|$(qemu-system-x86_64 --version | head -n 1)|$(kernel_version)|$(basename "$(initramfs_path)")"
}

# Sets KVM_REASON; returns 0 if KVM can boot our guest.
kvm_usable() {
  KVM_REASON=
  if [ ! -c /dev/kvm ] || [ ! -w /dev/kvm ]; then
    KVM_REASON="no writable /dev/kvm"
    return 1
  fi
  local file=$VM_CACHE/kvm-probe key
  key=$(kvm_probe_key)
  if [ ! -s "$file" ] || [ "$(sed -n 1p "$file")" != "$key" ]; then
    with_cache_lock run_kvm_probe "$key" "$file"
  fi
  KVM_REASON=$(sed -n 3p "$file")
  [ "$(sed -n 2p "$file")" = ok ]
}

run_kvm_probe() {
  local key=$1 file=$2 log=$VM_CACHE/kvm-probe.log verdict reason errors
  [ -s "$file" ] && [ "$(sed -n 1p "$file")" = "$key" ] && return 0  # another run just probed
  say "probing KVM once (up to ${KVM_PROBE_SECONDS}s; cached in $file)"
  local -a qemu
  mapfile -d '' -t qemu < <(qemu_base_args kvm)
  timeout -k 2 "$KVM_PROBE_SECONDS" "${qemu[@]}" -serial stdio \
    -append "console=ttyS0 panic=-1 blekit.probe=1" </dev/null >"$log" 2>&1
  if grep -q BLEKIT-VM-PROBE-OK "$log"; then
    verdict=ok
    reason="KVM booted the probe guest"
  else
    verdict=fail
    reason="a KVM guest did not reach the initramfs within ${KVM_PROBE_SECONDS}s"
    errors=$(grep -aiE 'emulation failure|error|failed' "$log" | tr -d '\r' | head -n 2 | tr '\n' ' ')
    [ -n "$errors" ] && reason="$reason: ${errors% }"
    [ -d /sys/module/kvm_pvm ] && reason="$reason; /dev/kvm is kvm_pvm (nested PVM), which cannot run a stock kernel"
  fi
  printf '%s\n%s\n%s\n' "$key" "$verdict" "$reason" >"$file"
}
