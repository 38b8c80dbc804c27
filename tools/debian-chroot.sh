#!/usr/bin/env bash
# Runs a command inside a Debian chroot of another release (default: trixie, Debian 13, what Raspberry Pi OS is
# today), with this checkout and ../shared at the same paths, the Swift toolchain (/opt/swift) and the machine's
# Swift package copies (/opt/swift-packages, with the same git insteadOf setting) made visible read-only.
#
#   tools/debian-chroot.sh [--suite SUITE] [--rebuild] [--fresh] [--] COMMAND [ARGS...]
#
# The root file system comes from debootstrap (Debian's packages, this machine's own Debian mirror, the minbase
# variant) and is kept between runs under $HOUND_CHROOT_DIR (default /var/tmp/hound-speaker-chroot, outside the
# checkout, so a fresh clone on the same machine finds it): SUITE.base as debootstrap left it, never entered, and
# SUITE, a copy that keeps what commands install in it (the build packages). --fresh runs in a throwaway copy of
# SUITE.base instead, a Debian system that has never seen this project (the package tests install into it);
# --rebuild makes both anew. The command runs as root in the checkout, with PATH reaching the toolchain. Needs
# root (debootstrap, mount, chroot).
set -euo pipefail
suite=trixie
rebuild=0
fresh=0
while [ $# -gt 0 ]; do
    case "$1" in
        --suite) suite="$2"; shift 2 ;;
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
base="$cache/$suite.base"
root="$cache/$suite"

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

# The Debian mirror this machine's apt already uses (deb822 or one-line sources).
mirror="$(grep -rhoE 'https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
          | head -1 | tr -d ' ' || true)"
[ -n "$mirror" ] || { echo "debian-chroot: no Debian mirror in /etc/apt/sources.list*" >&2; exit 1; }

if [ "$rebuild" = 1 ] || [ ! -f "$base/.hound-speaker-ready" ]; then
    echo "debian-chroot: making a $suite root file system in $base (debootstrap from $mirror)" >&2
    rm -rf "$base.new" "$root"
    mkdir -p "$cache"
    debootstrap --variant=minbase --include=ca-certificates "$suite" "$base.new" "$mirror" > "$cache/$suite.debootstrap.log" 2>&1 \
        || { tail -20 "$cache/$suite.debootstrap.log" >&2; echo "debian-chroot: debootstrap failed ($cache/$suite.debootstrap.log)" >&2; exit 1; }
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
[ -d /opt/swift ] && bind /opt/swift ro
[ -d /opt/swift-packages ] && bind /opt/swift-packages ro
bind "$parent"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The same package copies for SwiftPM inside as outside: git's insteadOf setting.
[ -f /etc/gitconfig ] && cp /etc/gitconfig "$root/etc/gitconfig"

chroot "$root" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" CI="${CI:-}" LANG=C.UTF-8 \
    PATH="/opt/swift/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" DEBIAN_FRONTEND=noninteractive \
    bash -c 'cd "$1" && shift && exec "$@"' bash "$repo" "$@"
