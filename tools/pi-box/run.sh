#!/usr/bin/env bash
# The Pi in a box: the speaker's Debian package, installed with apt as an owner installs it, running under
# systemd (PID 1) in a Debian 13 virtual machine, on a kernel GPIO chip (gpio-sim) and a kernel sound card
# (snd-aloop), tested end to end from this machine over SSH (tools/pi-box/README.md says what is in the box).
#
#   tools/pi-box/run.sh [--arch arm64] [--deb PATH] [--rebuild] [--rebuild-module] [--keep] [--port N]
#
#   --arch arm64       the Pi's own processor: qemu-system-aarch64 -M virt -cpu cortex-a72 (the Pi 4's core), Debian
#                      13's arm64 kernel, an arm64 root and module made under qemu-user, the arm64 package
#                      (deploy/build-deb --arch arm64); default amd64, qemu-system-x86_64
#   --deb PATH         test this package (hound-speaker-local_* beside it; of --arch's architecture) instead of
#                      building this checkout's with deploy/build-deb in the Debian 13 chroot (tools/debian-chroot.sh)
#   --rebuild          make the VM image and the gpio-sim module anew (from Debian's mirror) instead of the cached
#   --rebuild-module   only the module anew
#   --keep             leave the VM running after the tests (prints how to reach it; stop it with kill PID)
#   --port N           the host port (on 127.0.0.1) forwarded to the VM's sshd (default: a free one)
#
# qemu under TCG (KVM does not work on this machine), Debian's kernel and initramfs, a debootstrap root file
# system. The network is qemu's user-mode network with restrict=on: nothing goes in or out but the one
# forwarded SSH port. The image and the module are kept in $HOUND_PIBOX_DIR (default /var/tmp/hound-speaker-pibox,
# outside the checkout like tools/debian-chroot.sh's roots; image-arm64 and module-arm64 for arm64); each run boots
# a throwaway copy-on-write layer over the image (qemu -snapshot), so every run starts from the same never-booted
# system. Prints one line per check, the time of each step, and "N passed, N failed" last. Needs root
# (debootstrap, chroot).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"
deb="" rebuild=0 rebuild_module=0 keep=0 port="" arch=amd64
while [ $# -gt 0 ]; do
    case "$1" in
        --arch) [ $# -ge 2 ] || { echo "pi-box: --arch needs amd64 or arm64" >&2; exit 2; }; arch="$2"; shift 2 ;;
        --deb) [ $# -ge 2 ] || { echo "pi-box: --deb needs a path" >&2; exit 2; }; deb="$2"; shift 2 ;;
        --rebuild) rebuild=1; rebuild_module=1; shift ;;
        --rebuild-module) rebuild_module=1; shift ;;
        --keep) keep=1; shift ;;
        --port) [ $# -ge 2 ] || { echo "pi-box: --port needs a number" >&2; exit 2; }; port="$2"; shift 2 ;;
        -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "pi-box: unknown argument \"$1\" (see --help)" >&2; exit 2 ;;
    esac
done
die() { echo "pi-box: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap and chroot for the image, as tools/debian-chroot.sh)"
[ "$(dpkg --print-architecture)" = amd64 ] || die "runs on an amd64 machine (this one is $(dpkg --print-architecture))"
case "$arch" in
    amd64) suffix="" qemu=qemu-system-x86_64 qemu_package=qemu-system-x86 console=ttyS0 ;;
    # The Pi's serial console is a PL011 too (ttyAMA0).
    arm64) suffix="-arm64" qemu=qemu-system-aarch64 qemu_package=qemu-system-arm console=ttyAMA0 ;;
    *) die "--arch $arch: amd64 or arm64" ;;
esac
if [ -n "$deb" ]; then
    [ -f "$deb" ] && dpkg-deb -f "$deb" Package >/dev/null 2>&1 || die "--deb $deb: not a Debian package"
    [ "$(dpkg-deb -f "$deb" Architecture)" = "$arch" ] || die "--deb $deb: an $(dpkg-deb -f "$deb" Architecture) package, not $arch (--arch)"
    [ -f "${deb/hound-speaker_/hound-speaker-local_}" ] || die "--deb $deb: no ${deb/hound-speaker_/hound-speaker-local_} beside it (deploy/build-deb makes both)"
    deb="$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")"
fi
case "$port" in *[!0-9]*) die "--port $port: not a port number" ;; esac

cache="${HOUND_PIBOX_DIR:-/var/tmp/hound-speaker-pibox}"
image="$cache/image$suffix"
module="$cache/module$suffix"
out="$repo/out/pi-box$suffix"
mkdir -p "$cache" "$out"
for tool in "$qemu" mkfs.ext4 ssh scp curl; do
    command -v "$tool" >/dev/null && continue
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$qemu_package" e2fsprogs openssh-client curl > "$out/host-apt.log" 2>&1 \
        || { tail -20 "$out/host-apt.log" >&2; die "cannot install $qemu_package (above)"; }
    break
done

# Each step's time, for the summary and BENCHMARKS.md.
timings=()
step_start=0
start() { step_start="$(date +%s.%N)"; echo "== $*"; }
took() { timings+=("$(awk -v a="$step_start" -v b="$(date +%s.%N)" -v what="$1" -v how="${2:-}" 'BEGIN { printf "%-8s %6.1f s  %s", what, b - a, how }')"); }

# --- the package -----------------------------------------------------------------------------------------------
if [ -z "$deb" ] && [ "$arch" = arm64 ]; then
    start "the package: deploy/build-deb --arch arm64 (cross-built, tools/cross-arm64.sh)"
    rm -rf "$out/deb"
    deploy/build-deb --arch arm64 --out "$out/deb" --no-lintian > "$out/build-deb.log" 2>&1 \
        || { tail -30 "$out/build-deb.log" >&2; die "deploy/build-deb --arch arm64 failed (above; all of it in $out/build-deb.log)"; }
    deb="$(tail -1 "$out/build-deb.log")"
    [ -f "$deb" ] || die "deploy/build-deb printed no package path (its log: $out/build-deb.log)"
    took package "deploy/build-deb --arch arm64 (the cross release build, incremental, and the package)"
elif [ -z "$deb" ]; then
    start "the package: deploy/build-deb in the Debian 13 chroot (tools/debian-chroot.sh)"
    rm -rf "$out/deb"
    bash tools/debian-chroot.sh --suite trixie -- bash -c '
        set -euo pipefail
        bash tools/install-deps.sh --package >&2
        deploy/build-deb --out "$1" --scratch-path .build-release-trixie --no-lintian' bash "$out/deb" > "$out/build-deb.log" 2>&1 \
        || { tail -30 "$out/build-deb.log" >&2; die "deploy/build-deb failed (above; all of it in $out/build-deb.log)"; }
    deb="$(tail -1 "$out/build-deb.log")"
    [ -f "$deb" ] || die "deploy/build-deb printed no package path (its log: $out/build-deb.log)"
    took package "deploy/build-deb (the release build, incremental, and the package)"
fi
deb_local="${deb/hound-speaker_/hound-speaker-local_}"
echo "pi-box: $(basename "$deb") and $(basename "$deb_local")"

# --- the image -------------------------------------------------------------------------------------------------
# A chroot into the image's root while it is being made: the kernel's file systems for the packages' scripts.
mounts=()
unmount_all() { local i; for ((i=${#mounts[@]}-1; i>=0; i--)); do umount -l "${mounts[$i]}" 2>/dev/null || true; done; mounts=(); }
qemu_pid=""
cleanup() {
    unmount_all
    if [ -n "$qemu_pid" ] && [ "$keep" = 0 ]; then kill "$qemu_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
in_root() {  # in_root ROOT COMMAND...: runs COMMAND in the image's root (chroot)
    local root="$1"; shift
    chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

kver_file="$image/kernel-version"
# The root file system is made once ($image/root, kernel-version last); the disk from it once the module is in it.
if [ "$rebuild" = 1 ] || [ ! -f "$kver_file" ]; then
    start "the image: Debian 13 $arch from debootstrap (tools/debian-chroot.sh's base), systemd, Debian's kernel, sshd, the package's dependencies"
    # The base root file system debootstrap made for tools/debian-chroot.sh (made there first if missing). An arm64
    # root's programs run here under qemu-user (binfmt_misc), so apt and the initramfs are made as a Pi makes them.
    bash tools/debian-chroot.sh --suite trixie --arch "$arch" -- true
    base="${HOUND_CHROOT_DIR:-/var/tmp/hound-speaker-chroot}/trixie$suffix.base"
    [ -f "$base/.hound-speaker-ready" ] || die "no Debian 13 base root at $base (tools/debian-chroot.sh)"
    rm -rf "$image.new"
    mkdir -p "$image.new"
    root="$image.new/root"
    cp -a "$base" "$root"
    rm -f "$root/.hound-speaker-ready"
    mount -t proc proc "$root/proc"; mounts+=("$root/proc")
    mount --bind /dev "$root/dev"; mounts+=("$root/dev")
    mount -t sysfs sysfs "$root/sys"; mounts+=("$root/sys")
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    # No service starts in the chroot (Debian's policy-rc.d convention).
    printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"; chmod 755 "$root/usr/sbin/policy-rc.d"
    # What a Raspberry Pi OS Lite system has that the box uses: systemd, udev, sshd, the ALSA and libgpiod tools
    # (aplay, arecord, gpioget, gpioinfo); sox measures the recordings.
    in_root "$root" apt-get update -qq > "$image.new/apt.log" 2>&1
    in_root "$root" apt-get install -y -q --no-install-recommends systemd-sysv udev dbus kmod "linux-image-$arch" \
        initramfs-tools zstd openssh-server iproute2 procps alsa-utils gpiod sox less >> "$image.new/apt.log" 2>&1 \
        || { tail -20 "$image.new/apt.log" >&2; die "apt-get in the image failed (above; $image.new/apt.log)"; }
    # The speaker's dependencies, fetched now into apt's cache, so that `apt install ./hound-speaker_*.deb` in the
    # VM resolves them as on a Pi, with the VM's network closed (apt keeps what it uses: 90pi-box).
    cp "$deb" "$deb_local" "$root/tmp/"
    in_root "$root" apt-get install -y -q --download-only "/tmp/$(basename "$deb")" "/tmp/$(basename "$deb_local")" >> "$image.new/apt.log" 2>&1 \
        || { tail -20 "$image.new/apt.log" >&2; die "apt-get could not fetch the package's dependencies (above)"; }
    rm -f "$root/tmp/"*.deb
    kver="$(ls "$root/lib/modules")"
    [ "$(echo "$kver" | wc -l)" = 1 ] || die "the image has more than one kernel: $kver"
    cp -r "$here/root/." "$root/"
    # As on Raspberry Pi OS: a gpio group owns the GPIO chips (60-pi-box-gpio.rules).
    in_root "$root" groupadd --system gpio
    in_root "$root" systemctl enable ssh.service pi-box-network.service pi-box-board.service pi-box-houndify.service > /dev/null 2>&1
    # No one logs in on the serial line (it is the console log).
    in_root "$root" systemctl mask "serial-getty@$console.service" > /dev/null 2>&1
    echo pi-box > "$root/etc/hostname"
    printf '127.0.1.1\tpi-box\n' >> "$root/etc/hosts"
    printf '/dev/vda\t/\text4\tdefaults\t0\t1\n' > "$root/etc/fstab"
    # The host reaches root over SSH with a key of the box's own (kept beside the image).
    rm -f "$image.new/id_ed25519"*
    ssh-keygen -q -t ed25519 -N "" -C pi-box -f "$image.new/id_ed25519"
    install -d -m 0700 "$root/root/.ssh"
    install -m 0600 "$image.new/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
    rm -f "$root/etc/resolv.conf" "$root/usr/sbin/policy-rc.d"
    unmount_all
    cp "$root/boot/vmlinuz-$kver" "$image.new/vmlinuz"
    cp "$root/boot/initrd.img-$kver" "$image.new/initrd.img"
    echo "$kver" > "$image.new/kernel-version"
    rm -rf "$image"
    mv "$image.new" "$image"
    rm -f "$module/.ready"
    took image "debootstrap base copied, $(du -sh "$image/root" | cut -f1) root, kernel $kver"
fi
kver="$(cat "$kver_file")"

# --- the package's dependencies: fetched again into the image when the package depends on something new ---------
# The VM installs the package with its network closed, from what apt fetched into the image; a kept image that
# predates a new Depends would fail there, so the Depends it was fetched for are kept beside it and compared.
depends="$(dpkg-deb -f "$deb" Depends; dpkg-deb -f "$deb_local" Depends)"
if [ "$(cat "$image/depends" 2>/dev/null)" != "$depends" ]; then
    start "the package's dependencies, fetched into the kept image (its Depends changed)"
    root="$image/root"
    mount -t proc proc "$root/proc"; mounts+=("$root/proc")
    mount --bind /dev "$root/dev"; mounts+=("$root/dev")
    mount -t sysfs sysfs "$root/sys"; mounts+=("$root/sys")
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"; chmod 755 "$root/usr/sbin/policy-rc.d"
    cp "$deb" "$deb_local" "$root/tmp/"
    { in_root "$root" apt-get update -qq &&
      in_root "$root" apt-get install -y -q --download-only "/tmp/$(basename "$deb")" "/tmp/$(basename "$deb_local")"; } \
        > "$out/depends-apt.log" 2>&1 || { unmount_all; tail -20 "$out/depends-apt.log" >&2; die "apt-get could not fetch the package's new dependencies (above)"; }
    rm -f "$root/tmp/"*.deb "$root/etc/resolv.conf" "$root/usr/sbin/policy-rc.d"
    unmount_all
    echo "$depends" > "$image/depends"
    rm -f "$image/.ready"
    took depends "$(echo "$depends" | tr -d '\n' | cut -c1-100)"
fi

# --- the gpio-sim module -----------------------------------------------------------------------------------------
if [ "$rebuild_module" = 1 ] || [ ! -f "$module/.ready" ] || [ "$(cat "$module/kernel-version" 2>/dev/null)" != "$kver" ]; then
    # arm64: the kernel's build tools (linux-kbuild) are arm64 programs, so the build runs under qemu-user.
    start "gpio-sim and irq_sim, out of tree from linux-source-6.12, for $kver (a fresh Debian 13 $arch chroot)"
    rm -rf "$out/module" "$module"
    bash tools/debian-chroot.sh --suite trixie --arch "$arch" --fresh -- bash tools/pi-box/build-module.sh "$kver" "$out/module" \
        || die "the module build failed (above)"
    mkdir -p "$module"
    cp "$out/module/"*.ko "$module/"
    echo "$kver" > "$module/kernel-version"
    touch "$module/.ready"
    rm -f "$image/.ready"
    took module "$(modinfo -F vermagic "$module/gpio-sim.ko" | cut -d' ' -f1)"
fi

# --- the disk: the root file system with the module in it, as ext4 ---------------------------------------------
if [ ! -f "$image/.ready" ]; then
    start "the disk: the root file system with gpio-sim in it (mkfs.ext4 -d)"
    root="$image/root"
    mkdir -p "$root/lib/modules/$kver/updates"
    cp "$module/"*.ko "$root/lib/modules/$kver/updates/"
    in_root "$root" depmod -a "$kver"
    rm -f "$image/disk.img"
    truncate -s 4G "$image/disk.img"
    mkfs.ext4 -q -F -L pi-box -d "$root" "$image/disk.img"
    touch "$image/.ready"
    took disk "4 GiB sparse, $(du -sh "$image/disk.img" | cut -f1) used"
fi

# --- boot --------------------------------------------------------------------------------------------------------
if [ -z "$port" ]; then
    for _ in $(seq 50); do
        port=$((20000 + RANDOM % 20000))
        ss -Hltn "sport = :$port" | grep -q . || break
    done
fi
# The setup page's port 80, forwarded as a phone on the speaker's network would reach it.
for _ in $(seq 50); do
    web=$((20000 + RANDOM % 20000))
    [ "$web" != "$port" ] && ! ss -Hltn "sport = :$web" | grep -q . && break
done
run="$out/run"
rm -rf "$run"
mkdir -p "$run"
start "boot: $qemu (TCG), Debian's kernel $kver, systemd; SSH on 127.0.0.1:$port"
# The console log ($run/console.log) has the kernel's messages and the journal's warnings.
# -snapshot: the run's writes go to a temporary layer, the image stays as made. Two virtual CPUs (the speaker runs
# its audio and its loop on threads of their own, as on a Pi's four cores) on one host thread: with a thread per
# CPU (multi-threaded TCG), qemu 7.2 let the kernel's code patching race (a panic at boot, "Oops: int3" in
# sched_clock_cpu, one boot in three here). arm64: the virt board with the Pi 4's core, a Cortex-A72, a thread per
# CPU (qemu's default for an Arm guest; the kernel there patches its code with stop_machine, no race).
case "$arch" in
    amd64) machine=(-machine q35 -accel tcg,thread=single -cpu max) ;;
    arm64) machine=(-machine virt -accel tcg,thread=multi -cpu cortex-a72) ;;
esac
"$qemu" "${machine[@]}" -smp 2 -m 2048 -snapshot \
    -kernel "$image/vmlinuz" -initrd "$image/initrd.img" \
    -append "root=/dev/vda rw console=$console net.ifnames=0 quiet systemd.journald.forward_to_console=1 systemd.journald.max_level_console=warning" \
    -drive "file=$image/disk.img,format=raw,if=virtio" \
    -netdev "user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:$port-:22,hostfwd=tcp:127.0.0.1:$web-:80" -device virtio-net-pci,netdev=net0 \
    -device virtio-rng-pci \
    -display none -monitor none -serial "file:$run/console.log" -pidfile "$run/qemu.pid" -daemonize \
    || die "qemu did not start"
qemu_pid="$(cat "$run/qemu.pid")"
# The VM's host key is new with every image: not remembered.
ssh_opts=(-i "$image/id_ed25519" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR
          -o BatchMode=yes -o ConnectTimeout=5)
vm() { ssh -p "$port" "${ssh_opts[@]}" root@127.0.0.1 "$@"; }
up=0
boot_limit="${HOUND_PIBOX_BOOT_TIMEOUT:-900}"
for _ in $(seq $((boot_limit / 2))); do
    if vm true 2>/dev/null; then up=1; break; fi
    kill -0 "$qemu_pid" 2>/dev/null || { tail -30 "$run/console.log" >&2; die "qemu exited during boot (console above; $run/console.log)"; }
    sleep 2
done
[ "$up" = 1 ] || { tail -30 "$run/console.log" >&2; die "no SSH from the VM within $boot_limit s (HOUND_PIBOX_BOOT_TIMEOUT; console above, $run/console.log)"; }
vm systemctl is-system-running --wait > "$run/system-state" 2>&1 || true
took boot "to SSH and systemd's startup done ($(cat "$run/system-state"))"

# --- the tests, inside the VM --------------------------------------------------------------------------------------
start "the tests in the VM (tools/pi-box/vm-tests.sh)"
vm mkdir -p /root/pi-box
scp -q -P "$port" "${ssh_opts[@]}" "$deb" "$deb_local" tools/pi-box/vm-tests.sh Tests/deb/checks.sh \
    Tests/HotPhraseTests/Fixtures/ok-hound-v9.hpm root@127.0.0.1:/root/pi-box/
. Tests/deb/checks.sh
# Setup from a phone (issue #64): the VM's tests restart the speaker without credentials and hand over the code it
# said (/tmp/setup-phone); this machine is the phone, through the forwarded port, and then tells the VM it is done.
setup_page() {  # and when it is not the page, what curl got instead (once it failed here beside heavy jobs)
    local got rc
    got="$(curl -sS -m 30 -w '\nHTTP %{http_code}' "http://127.0.0.1:$web/" 2>&1)"
    rc=$?
    grep -q 'Set up your speaker' <<< "$got" && return 0
    echo "curl exit $rc, the end of what it got: $(tail -c 300 <<< "$got" | tr '\n' ' ')"
    return 1
}
setup_post() {  # setup_post STATUS JSON [TEXT]: the page's answer has HTTP status STATUS (and TEXT)
    local reply
    reply="$(curl -s -m 60 -w '\n%{http_code}' -H 'Content-Type: application/json' --data-binary "$2" "http://127.0.0.1:$web/api/setup")"
    echo "$reply"
    [ "$(tail -1 <<< "$reply")" = "$1" ] && grep -q "${3:-}" <<< "$reply"
}
page_gone() {
    for _ in $(seq 50); do curl -s -m 5 -o /dev/null "http://127.0.0.1:$web/" || return 0; sleep 0.2; done
    return 1
}
phone() {
    local code="" id="" key="" wrong
    # One connection that waits in the VM (a poll over SSH every few seconds would load the VM's CPU under TCG).
    vm "until [ -s /tmp/setup-phone ]; do sleep 1; done; cat /tmp/setup-phone" > "$run/phone.handed" 2>/dev/null &
    local waiter=$!
    while kill -0 "$waiter" 2>/dev/null; do
        kill -0 "$vm_tests" 2>/dev/null || { kill "$waiter" 2>/dev/null; echo "FAILED: the tests in the VM ended before setup mode"; failed=$((failed + 1)); return 0; }
        sleep 1
    done
    read -r code id key < "$run/phone.handed" || true
    if [ -z "$code" ]; then echo "FAILED: the VM handed over no code"; failed=$((failed + 1)); vm touch /tmp/setup-phone.done; return 0; fi
    wrong="$([ "$code" = 000000 ] && echo 111111 || echo 000000)"
    check "(the phone) the setup page through the forwarded port 127.0.0.1:$web" setup_page
    check "(the phone) a wrong code is turned away (403)" \
        setup_post 403 "{\"code\":\"$wrong\",\"client_id\":\"$id\",\"client_key\":\"$key\"}" "not the code the speaker said"
    check "(the phone) the right code and credentials: checked with Houndify and saved (200)" \
        setup_post 200 "{\"code\":\"$code\",\"client_id\":\"$id\",\"client_key\":\"$key\",\"latitude\":\"51.5\",\"longitude\":\"-0.12\"}" "The speaker is set up"
    check "(the phone) the page is gone from the network" page_gone
    vm touch /tmp/setup-phone.done
}
set +e
: > "$run/vm-tests.log"  # there for tail before the background job opens it
vm bash /root/pi-box/vm-tests.sh "/root/pi-box/$(basename "$deb")" "/root/pi-box/$(basename "$deb_local")" > "$run/vm-tests.log" 2>&1 &
vm_tests=$!
tail -n +1 -f --pid "$vm_tests" "$run/vm-tests.log" &
shown_log=$!
{ phone; } > "$run/phone.log" 2>&1
wait "$vm_tests"
wait "$shown_log"
echo "== set up from a phone: this machine, through the forwarded port"
cat "$run/phone.log"
set -e
vm journalctl -b --no-pager > "$run/journal.txt" 2>&1 || true
# What the tests recorded and sampled, for a look afterwards.
# One source each: scp's SFTP mode (OpenSSH 9) expands no braces on the remote side.
recorded=()
for file in answer.wav stopped.wav leds.log answer-last.wav expected-last.wav other-last.wav wrong-last.wav; do
    recorded+=("root@127.0.0.1:/tmp/$file")
done
scp -q -P "$port" "${ssh_opts[@]}" "${recorded[@]}" "$run/" 2>/dev/null || true
took tests "in the VM"

# --- from this machine: the answer's words ------------------------------------------------------------------------
start "the answer's words: what the loopback heard against the answer said alone and another sentence (hotphrase.match_words)"
python3 -c 'import numpy, scipy' 2>/dev/null || {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-numpy python3-scipy > "$out/host-apt.log" 2>&1 \
        || { tail -20 "$out/host-apt.log" >&2; die "cannot install python3-numpy and python3-scipy (above)"; }; }
shown() { [ "$passed" -gt "$1" ] && sed 's/^/    /' /tmp/check.out; true; }  # a passed check's output (a failed one shows it)
before=$passed
check "the answer heard is the answer's words: closer to them than to another sentence" \
    env -C tools/hotphrase python3 -m hotphrase.match_words "$run/answer-last.wav" "$run/expected-last.wav" "$run/other-last.wav"
shown "$before"
before=$passed
# A wrong time (every digit changed) shares "It is ... AM" with the answer, so against another sentence it can pass
# the check above too (at 5:42 it did, ratio 0.39): the answer must also be clearly closer to its own words than to
# the wrong time's, and the wrong time, taken as the expected words, must be refused the same way (exit 1, "no
# match"; 2 would be a file it could not read). At 5:42: 0.43 and 2.35.
check "the answer heard is its own time, not another said alike: closer to it than to a wrong time" \
    env -C tools/hotphrase python3 -m hotphrase.match_words "$run/answer-last.wav" "$run/expected-last.wav" "$run/wrong-last.wav" --margin 0.7
shown "$before"
before=$passed
check "the match refuses a wrong answer (another time, said alike)" \
    bash -c "env -C tools/hotphrase python3 -m hotphrase.match_words '$run/answer-last.wav' '$run/wrong-last.wav' '$run/expected-last.wav' --margin 0.7; [ \$? = 1 ]"
shown "$before"
took words "hotphrase.match_words on the host"

# --- from this machine: deploy/push and deploy/logs through the forwarded port ------------------------------------
start "deploy/push and deploy/logs from this machine to the VM (127.0.0.1:$port)"
# A new build as the next commit's package would be: the same files under a higher version.
version="$(dpkg-deb -f "$deb" Version)+pibox1"
rm -rf "$run/push"
mkdir -p "$run/push"
dpkg-deb -R "$deb" "$run/push/tree"
sed -i "s/^Version: .*/Version: $version/" "$run/push/tree/DEBIAN/control"
dpkg-deb -b "$run/push/tree" "$run/push/hound-speaker_${version}_$arch.deb" > /dev/null
export HOUND_SPEAKER_SSH_OPTS="${ssh_opts[*]}"
check "deploy/push --deb: the new build goes over, is installed with apt and restarted" \
    bash -c "bash deploy/push root@127.0.0.1 -p $port --deb '$run/push/hound-speaker_${version}_$arch.deb' > '$run/push.log' 2>&1 || { tail -20 '$run/push.log'; false; }"
check "the VM runs the new version ($version)" test "$(vm "dpkg-query -W -f '\${Version}' hound-speaker")" = "$version"
check "the pushed speaker is active" vm systemctl is-active hound-speaker
check "deploy/logs shows the speaker's lines" \
    bash -c "bash deploy/logs root@127.0.0.1 -p $port --no-follow --lines 200 > '$run/logs.txt' 2>&1 && grep -q 'state ' '$run/logs.txt' || { tail -20 '$run/logs.txt'; false; }"
check "deploy/logs --timings shows the interactions' timings" \
    bash -c "bash deploy/logs root@127.0.0.1 -p $port --no-follow --timings --lines 20 > '$run/timings.txt' 2>&1 && grep -q 'timings' '$run/timings.txt' || { cat '$run/timings.txt'; false; }"
took push "deploy/push and deploy/logs"

# The VM's checks and these, counted together.
read -r vm_passed vm_failed < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$run/vm-tests.log" | tail -1)
[ -n "${vm_passed:-}" ] || { vm_passed=0; vm_failed=1; echo "FAILED: the tests in the VM did not finish (their log: $run/vm-tests.log)"; }
passed=$((passed + vm_passed)) failed=$((failed + vm_failed))

echo "== times"
printf '%s\n' "${timings[@]}"
if [ "$keep" = 1 ]; then
    echo "pi-box: the VM runs on (qemu pid $qemu_pid): ssh -p $port ${ssh_opts[*]} root@127.0.0.1"
fi
echo "pi-box: the VM's console, journal and the tests' logs are in $run"
finish
