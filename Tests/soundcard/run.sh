#!/usr/bin/env bash
# The Swift tests that need a kernel sound card (Tests/SpeechTests/SoftvolMixerTests: the volume through a softvol
# mixer control on snd-aloop, and the level heard), run in a virtual machine whose kernel has one: this machine's
# kernel has no sound at all (no /proc/asound, no modules), and there the test skips itself.
#
#   Tests/soundcard/run.sh [--scratch-path DIR]    after `swift build --build-tests` (tools/swift-tests.sh)
#
# The VM is qemu under TCG (KVM does not boot here: tools/pi-box/README.md) with Debian's own kernel, this release's
# linux-image-amd64, downloaded with apt and unpacked into the cache, not installed. It has no disk: its root is this
# machine's / shared read-only over virtio-9p (tmpfs on /mnt for what the tests write), so the test binary, the Swift runtime and libasound are
# the ones just built and installed here. A small initramfs (busybox-static, unpacked the same way) loads the virtio,
# 9p and sound modules (snd-aloop), mounts the share, runs the test binary in it and powers off. About a minute.
# The kernel, busybox and the initramfs are kept in $HOUND_SOUNDCARD_DIR (default /var/tmp/hound-speaker-soundcard).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$PWD"
scratch=.build
while [ $# -gt 0 ]; do
    case "$1" in
        --scratch-path) [ $# -ge 2 ] || { echo "soundcard: --scratch-path needs a folder" >&2; exit 2; }; scratch="$2"; shift 2 ;;
        *) echo "soundcard: unknown argument \"$1\" (--scratch-path DIR)" >&2; exit 2 ;;
    esac
done
die() { echo "soundcard: $*" >&2; exit 1; }
[ "$(dpkg --print-architecture)" = amd64 ] || die "runs on amd64 (this machine is $(dpkg --print-architecture))"
xctest="$(cd "$scratch/debug" 2>/dev/null && pwd)/hound-speakerPackageTests.xctest"
[ -x "$xctest" ] || die "no test binary at $scratch/debug/hound-speakerPackageTests.xctest: swift build --build-tests first"
for tool in qemu-system-x86_64 cpio depmod; do
    command -v "$tool" >/dev/null || die "$tool is missing (tools/install-deps.sh installs qemu-system-x86, cpio and kmod)"
done

cache="${HOUND_SOUNDCARD_DIR:-/var/tmp/hound-speaker-soundcard}"
# The kernel package linux-image-amd64 stands for on this release (linux-image-6.1.0-NN-amd64 on Debian 12).
kpkg="$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')"
[ -n "$kpkg" ] || die "apt knows no linux-image-amd64 (apt-get update first)"
kdir="$cache/$kpkg"
if [ ! -f "$kdir/initrd.gz" ]; then
    echo "== the VM's kernel and initramfs: $kpkg and busybox-static, unpacked into $kdir"
    rm -rf "$kdir" "$kdir.new"
    mkdir -p "$kdir.new/debs"
    # apt-get download as root warns that its sandbox user cannot write here; it downloads all the same.
    (cd "$kdir.new/debs" && apt-get download -q "$kpkg" busybox-static 2>&1 | grep -v "^W: Download is performed unsandboxed" >&2) || true
    for deb in "$kdir.new/debs/"*.deb; do dpkg-deb -x "$deb" "$kdir.new/root"; done
    kver="$(ls "$kdir.new/root/lib/modules")"
    [ -f "$kdir.new/root/boot/vmlinuz-$kver" ] && [ -x "$kdir.new/root/bin/busybox" ] || die "the download of $kpkg or busybox-static failed (in $kdir.new/debs)"
    depmod -b "$kdir.new/root" "$kver"
    initrd="$kdir.new/initrd"
    mkdir -p "$initrd/bin" "$initrd/modules" "$initrd/proc" "$initrd/dev" "$initrd/newroot"
    cp "$kdir.new/root/bin/busybox" "$initrd/bin/"
    # Each module with what it needs, in load order, as modprobe would load them.
    : > "$initrd/modules/order"
    for module in virtio_pci 9pnet_virtio 9p snd-aloop; do
        modprobe -d "$kdir.new/root" -S "$kver" --show-depends "$module" | awk '$1 == "insmod" { print $2 }' |
            while read -r ko; do
                grep -qxF "$(basename "$ko")" "$initrd/modules/order" && continue
                cp "$ko" "$initrd/modules/"
                basename "$ko" >> "$initrd/modules/order"
            done
    done
    cp "$repo/Tests/soundcard/init" "$initrd/init"
    chmod 755 "$initrd/init"
    (cd "$initrd" && find . | cpio -o -H newc --quiet | gzip -1 > "$kdir.new/initrd.gz")
    cp "$kdir.new/root/boot/vmlinuz-$kver" "$kdir.new/vmlinuz"
    rm -rf "$kdir.new/debs" "$kdir.new/root" "$initrd"
    mv "$kdir.new" "$kdir"
fi
# The initramfs carries init: one changed in the checkout is packed again (cheap: no download).
if ! cmp -s "$repo/Tests/soundcard/init" "$kdir/init.used" 2>/dev/null; then
    work="$(mktemp -d)"
    (cd "$work" && gzip -dc "$kdir/initrd.gz" | cpio -id --quiet)
    cp "$repo/Tests/soundcard/init" "$work/init"
    chmod 755 "$work/init"
    (cd "$work" && find . | cpio -o -H newc --quiet | gzip -1 > "$kdir/initrd.gz")
    cp "$repo/Tests/soundcard/init" "$kdir/init.used"
    rm -rf "$work"
fi

# What the VM runs, written where the share shows it (the share is this machine's /, read-only).
inner="$cache/in-vm.sh"
cat > "$inner" <<INNER
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/mnt TMPDIR=/mnt NO_COLOR=1
# In the VM the card must be there: the test fails instead of skipping, and may take the card away and back.
export HOUND_SPEAKER_SOUNDCARD_VM=1
cd "$repo"
echo "soundcard-vm: kernel \$(uname -r), cards:"; cat /proc/asound/cards
"$xctest" --testing-library swift-testing --filter SoftvolMixerTests
echo "soundcard-vm: exit \$?"
INNER

log="$(mktemp --suffix=-soundcard-vm.log)"
echo "== the tests that need a sound card, in a VM with snd-aloop ($(basename "$kdir"); its console: $log)"
started="$(date +%s)"
# Nothing on the network (-nic none); the console is the serial port; init powers off when the tests end. The share
# spans several file systems: multidevs=remap keeps their inode numbers apart.
timeout 900 qemu-system-x86_64 -accel tcg -m 2048 -smp 2 -nographic -nic none -no-reboot \
    -kernel "$kdir/vmlinuz" -initrd "$kdir/initrd.gz" \
    -append "console=ttyS0 quiet loglevel=1 panic=-1 hs_run=$inner" \
    -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" > "$log" 2>&1 < /dev/null || true
# The test's own lines (the console adds carriage returns, and the firmware's screen codes before the first).
console() { tr -d '\r' < "$log" | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/^.*\(soundcard-vm: kernel\)/\1/'; }
console | sed -n '/^soundcard-vm: kernel/,/^soundcard-vm: exit/p'
rc="$(console | sed -n 's/^soundcard-vm: exit \([0-9]*\)$/\1/p' | tail -1)"
echo "soundcard: the VM ran $(( $(date +%s) - started )) s"
[ -n "$rc" ] || { tail -30 "$log" >&2; die "the VM did not finish the tests (its console: $log)"; }
[ "$rc" = 0 ] || die "the tests failed in the VM (exit $rc; above)"
rm -f "$log"
