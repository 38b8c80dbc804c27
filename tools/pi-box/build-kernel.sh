#!/usr/bin/env bash
# Issue #36's other option for the box's GPIO chip, kept for measuring it (BENCHMARKS.md, "The Pi in a box", "The
# small kernel, measured"); run.sh does not use it. Runs in a throwaway Debian 13 chroot, as build-module.sh does:
# builds a kernel for the box from Debian's own kernel source (linux-source-6.12) with gpio-sim and the IRQ
# simulator built in, and everything the box boots on built in too, meant for qemu's -kernel with no initramfs
# (not booted yet: the one build so far was stopped unfinished, BENCHMARKS.md says how far it got): virtio PCI,
# block, network, console and RNG, ext4, the serial console, what systemd needs, configfs, GPIO_CDEV, snd-aloop.
#   nice -n 19 tools/debian-chroot.sh --suite trixie --fresh -- bash tools/pi-box/build-kernel.sh OUT_DIR
# OUT_DIR (inside the checkout or ../shared: the chroot sees only those) gets bzImage, config (the kernel's
# .config), config.base (the starting point's), config.delta (the symbols set differently,
# diff's form), modules/ (make modules_install: modules.builtin, which modprobe reads to know a built-in driver),
# time.txt (/usr/bin/time -v of the build) and build.log.
#
# The starting point: `make x86_64_defconfig kvm_guest.config`, the kernel's own configuration for an x86-64 guest
# of a paravirtual machine; it has virtio and ext4 built in already, but neither sound nor gpio-sim. tinyconfig
# would be smaller but needs every piece systemd and udev rely on named by hand, a longer list to keep true.
# The build runs at nice 19 on two jobs (this machine's two cores are shared).
set -euo pipefail
[ $# = 1 ] || { echo "usage: build-kernel.sh OUT_DIR" >&2; exit 2; }
out="$1"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# The kernel's build needs: a compiler (Debian 13's gcc-14, the one Debian's kernel is built with), make, bc,
# bison, flex, libelf (objtool), libssl (the certificate tools), perl, cpio, kmod (depmod for modules_install);
# time for /usr/bin/time -v.
apt-get install -y -qq --no-install-recommends make gcc libc6-dev bc bison flex libelf-dev libssl-dev perl cpio kmod \
    xz-utils time linux-source-6.12 > /tmp/apt.log 2>&1 \
    || { tail -20 /tmp/apt.log >&2; echo "build-kernel: cannot install linux-source-6.12 and the build's tools (above)" >&2; exit 1; }
source_version="$(dpkg-query -W -f='${Version}' linux-source-6.12)"
echo "build-kernel: linux-source-6.12 $source_version" >&2

src=/usr/src/box-kernel
mkdir -p "$src"
tar -C "$src" -xJf /usr/src/linux-source-6.12.tar.xz --strip-components=1
cd "$src"
make -s x86_64_defconfig kvm_guest.config
cp .config /tmp/config.base
# What the box needs beyond the starting point, every one built in (=y).
wanted=(
    GPIOLIB GPIO_CDEV CONFIGFS_FS GPIO_SIM IRQ_SIM                  # the GPIO chip (gpio-sim selects IRQ_SIM)
    SOUND SND SND_PCM SND_TIMER SND_DRIVERS SND_ALOOP               # the sound card
    PCI VIRTIO_PCI VIRTIO_BLK VIRTIO_NET VIRTIO_CONSOLE HW_RANDOM_VIRTIO   # the VM's devices (run.sh's qemu line)
    EXT4_FS                                                         # the root file system, no initramfs
    SERIAL_8250 SERIAL_8250_CONSOLE                                 # the console, ttyS0
    DEVTMPFS DEVTMPFS_MOUNT CGROUPS MEMCG INOTIFY_USER SIGNALFD TIMERFD EPOLL UNIX SYSFS PROC_FS FHANDLE
    AUTOFS_FS TMPFS TMPFS_POSIX_ACL TMPFS_XATTR SECCOMP SECCOMP_FILTER BPF_SYSCALL CGROUP_BPF DMIID
    NAMESPACES NET_NS                                               # systemd's README's list, and its sandboxing
)
for symbol in "${wanted[@]}"; do scripts/config --enable "$symbol"; done
scripts/config --set-str LOCALVERSION -pibox --disable LOCALVERSION_AUTO
make -s olddefconfig
# A symbol whose dependencies are missing is dropped silently by olddefconfig: say which.
missing=()
for symbol in "${wanted[@]}"; do grep -qx "CONFIG_$symbol=y" .config || missing+=("$symbol"); done
[ ${#missing[@]} = 0 ] || { echo "build-kernel: not built in after olddefconfig (a dependency is off): ${missing[*]}" >&2; exit 1; }

mkdir -p "$out"
cp /tmp/config.base "$out/config.base"
cp .config "$out/config"
# The symbols set in one and not the other ("<" the starting point's, ">" the box's); diff exits 1 when they differ.
diff <(grep '^CONFIG_' "$out/config.base" | sort) <(grep '^CONFIG_' "$out/config" | sort) > "$out/config.delta" || [ $? = 1 ]
echo "build-kernel: building bzImage and modules (nice 19, -j2; the log: $out/build.log)" >&2
/usr/bin/time -v -o "$out/time.txt" nice -n 19 make -j2 bzImage modules > "$out/build.log" 2>&1 \
    || { tail -30 "$out/build.log" >&2; echo "build-kernel: the build failed (above; $out/build.log)" >&2; exit 1; }
cp arch/x86/boot/bzImage "$out/bzImage"
rm -rf "$out/modules"
make -s modules_install INSTALL_MOD_PATH="$out/modules" INSTALL_MOD_STRIP=1 > /dev/null
echo "build-kernel: $(make -s kernelrelease), bzImage $(stat -c %s "$out/bzImage") bytes, in $out" >&2
