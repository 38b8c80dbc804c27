#!/usr/bin/env bash
# Runs a command inside a Debian chroot of another release (default: trixie, Debian 13, what Raspberry Pi OS is
# today), with this checkout and ../shared at the same paths, the Swift toolchain (/opt/swift) and the machine's
# Swift package copies (/opt/swift-packages, with the same git insteadOf setting) made visible read-only.
#
#   tools/debian-chroot.sh [--suite SUITE] [--arch ARCH] [--bind DIR]... [--rebuild] [--fresh] [--] COMMAND [ARGS...]
#
# The root file system comes from debootstrap (Debian's packages, this machine's own Debian mirror, the minbase
# variant) and is kept between runs under $HOUND_CHROOT_DIR (default /var/tmp/hound-speaker-chroot, outside the
# checkout, so a fresh clone on the same machine finds it): SUITE.base as debootstrap left it, never entered, and
# SUITE, a copy that keeps what commands install in it (the build packages). --fresh runs in a throwaway copy of
# SUITE.base instead, a Debian system that has never seen this project (the package tests install into it);
# --rebuild makes both anew. The command runs as root in the checkout, with PATH reaching the toolchain. Needs
# root (debootstrap, mount, chroot).
#
# --arch arm64 makes and enters a root of that architecture (SUITE-ARCH): debootstrap's first stage here, its
# second stage and every command inside run under qemu-user through binfmt_misc (qemu-user-static, registered
# here if it is not), so the programs are the Pi's own. --bind DIR shows DIR at the same path inside, read-only
# (tools/cross-arm64.sh shows the compiler's root the arm64 root it builds against).
set -euo pipefail
suite=trixie
arch=""
extra_binds=()
rebuild=0
fresh=0
while [ $# -gt 0 ]; do
    case "$1" in
        --suite) suite="$2"; shift 2 ;;
        --arch) arch="$2"; shift 2 ;;
        --bind) extra_binds+=("$2"); shift 2 ;;
        --rebuild) rebuild=1; shift ;;
        --fresh) fresh=1; shift ;;
        --) shift; break ;;
        -*) echo "debian-chroot: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "debian-chroot: no command given (usage: tools/debian-chroot.sh [--suite S] [--rebuild] [--fresh] -- COMMAND)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "debian-chroot: needs root (debootstrap, mount, chroot)" >&2; exit 1; }

repo="$(cd "$(dirname "$0")/.." && pwd)"
parent="$(dirname "$repo")"
cache="${HOUND_CHROOT_DIR:-/var/tmp/hound-speaker-chroot}"
host_arch="$(dpkg --print-architecture)"
[ -n "$arch" ] || arch="$host_arch"
name="$suite"
[ "$arch" = "$host_arch" ] || name="$suite-$arch"
base="$cache/$name.base"
root="$cache/$name"

# One run at a time per root: a second would take the first's mounts for stale ones (below) and unmount them, and
# the first's cleanup would unmount the second's (the Pi box's package build and CI's arm64 leg both enter
# trixie-arm64). The lock is the open descriptor, held until this script and what it started have ended.
mkdir -p "$cache"
exec {lock}> "$cache/$name.lock"
if ! flock -n "$lock"; then
    echo "debian-chroot: another run is using $root; waiting for it to end" >&2
    flock "$lock"
fi

# A run killed before its cleanup (SIGKILL, a session or machine stopped) leaves its mounts in the kept root: /dev,
# /sys, the Swift toolchain and the checkout's parent, bound read-write. Take them down first, deepest first, so that
# nothing is mounted over a stale mount (mount fails: "No such file or directory" once the old checkout is gone) and
# no rm -rf below reaches through one into the host's /dev or a checkout.
unmount_stale() {
    local m
    for m in $(awk -v r="$1/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r); do
        echo "debian-chroot: $m was left mounted by an earlier run; unmounting it" >&2
        umount -l "$m" || { echo "debian-chroot: cannot unmount $m" >&2; exit 1; }
    done
}
unmount_stale "$root"

command -v debootstrap >/dev/null || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
foreign=()
if [ "$arch" != "$host_arch" ]; then
    foreign=(--arch="$arch" --foreign)
    qemu_arch="$(case "$arch" in arm64) echo aarch64 ;; armhf) echo arm ;; *) echo "$arch" ;; esac)"
    if [ ! -e "/proc/sys/fs/binfmt_misc/qemu-$qemu_arch" ]; then
        command -v update-binfmts >/dev/null && [ -e "/usr/libexec/qemu-binfmt/$qemu_arch-binfmt-P" ] || {
            apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static binfmt-support >/dev/null; }
        [ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
        update-binfmts --enable "qemu-$qemu_arch" >/dev/null 2>&1 || true
        [ -e "/proc/sys/fs/binfmt_misc/qemu-$qemu_arch" ] \
            || { echo "debian-chroot: cannot register qemu-$qemu_arch with binfmt_misc, so $arch programs cannot run here" >&2; exit 1; }
    fi
fi

# The Debian mirror this machine's apt already uses (deb822 or one-line sources).
mirror="$(grep -rhoE 'https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
          | head -1 | tr -d ' ' || true)"
[ -n "$mirror" ] || { echo "debian-chroot: no Debian mirror in /etc/apt/sources.list*" >&2; exit 1; }

if [ "$rebuild" = 1 ] || [ ! -f "$base/.hound-speaker-ready" ]; then
    echo "debian-chroot: making a $suite $arch root file system in $base (debootstrap from $mirror)" >&2
    rm -rf "$base.new" "$root"
    mkdir -p "$cache"
    log="$cache/$name.debootstrap.log"
    { debootstrap "${foreign[@]}" --variant=minbase --include=ca-certificates "$suite" "$base.new" "$mirror" &&
      if [ ${#foreign[@]} -gt 0 ]; then chroot "$base.new" /debootstrap/debootstrap --second-stage; fi; } > "$log" 2>&1 \
        || { tail -20 "$log" >&2; echo "debian-chroot: debootstrap failed ($log)" >&2; exit 1; }
    touch "$base.new/.hound-speaker-ready"
    rm -rf "$base"
    mv "$base.new" "$base"
fi
if [ "$fresh" = 1 ]; then
    root="$(mktemp -d "$cache/$suite.fresh.XXXXXX")"
    cp -a "$base/." "$root/"
elif [ ! -f "$root/.hound-speaker-ready" ]; then
    rm -rf "$root.new"
    cp -a "$base" "$root.new"
    mv "$root.new" "$root"
fi

mounts=()
cleanup() {
    local i
    for ((i=${#mounts[@]}-1; i>=0; i--)); do umount -l "${mounts[$i]}" 2>/dev/null || true; done
    # A throwaway root goes once nothing is mounted in it any more.
    if [ "$fresh" = 1 ] && ! grep -q " $root/" /proc/mounts; then rm -rf "$root"; fi
}
trap cleanup EXIT
bind() {  # bind SOURCE [ro]: SOURCE at the same path inside the chroot
    mkdir -p "$root$1"
    mount --bind "$1" "$root$1"
    mounts+=("$root$1")
    if [ "${2:-}" = ro ]; then mount -o remount,bind,ro "$root$1"; fi
}
mkdir -p "$root/proc" "$root/sys" "$root/dev"
mount -t proc proc "$root/proc"; mounts+=("$root/proc")
bind /sys ro
bind /dev
if [ -d /dev/pts ]; then bind /dev/pts; fi
mkdir -p "$root/dev/shm"; mount -t tmpfs shm "$root/dev/shm"; mounts+=("$root/dev/shm")
# The host's toolchain runs only in a root of its own architecture.
[ -d /opt/swift ] && [ "$arch" = "$host_arch" ] && bind /opt/swift ro
[ -d /opt/swift-packages ] && bind /opt/swift-packages ro
bind "$parent"
for dir in ${extra_binds[@]+"${extra_binds[@]}"}; do
    [ -d "$dir" ] || { echo "debian-chroot: --bind $dir: no such directory" >&2; exit 1; }
    bind "$dir" ro
done
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The same package copies for SwiftPM inside as outside: git's insteadOf setting.
[ -f /etc/gitconfig ] && cp /etc/gitconfig "$root/etc/gitconfig"

chroot "$root" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" CI="${CI:-}" LANG=C.UTF-8 \
    PATH="/opt/swift/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" DEBIAN_FRONTEND=noninteractive \
    bash -c 'cd "$1" && shift && exec "$@"' bash "$repo" "$@"
