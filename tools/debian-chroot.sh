#!/usr/bin/env bash
# Runs a command inside a Debian chroot of another release (default: trixie, Debian 13, what Raspberry Pi OS is
# today), with this checkout and ../shared at the same paths, the Swift toolchain (/opt/swift) and the machine's
# Swift package copies (/opt/swift-packages, with the same git insteadOf setting) made visible read-only.
#
#   tools/debian-chroot.sh [--suite SUITE] [--rebuild] [--] COMMAND [ARGS...]
#
# The root file system comes from debootstrap (Debian's packages, this machine's own Debian mirror) and is kept
# between runs under $HOUND_CHROOT_DIR (default /var/tmp/hound-speaker-chroot/SUITE, outside the checkout, so a
# fresh clone on the same machine finds it); --rebuild makes it anew. The command runs as root in the checkout,
# with PATH reaching the toolchain. Needs root (debootstrap, mount, chroot).
set -euo pipefail
suite=trixie
rebuild=0
while [ $# -gt 0 ]; do
    case "$1" in
        --suite) suite="$2"; shift 2 ;;
        --rebuild) rebuild=1; shift ;;
        --) shift; break ;;
        -*) echo "debian-chroot: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "debian-chroot: no command given (usage: tools/debian-chroot.sh [--suite S] [--rebuild] -- COMMAND)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "debian-chroot: needs root (debootstrap, mount, chroot)" >&2; exit 1; }

repo="$(cd "$(dirname "$0")/.." && pwd)"
parent="$(dirname "$repo")"
root="${HOUND_CHROOT_DIR:-/var/tmp/hound-speaker-chroot}/$suite"

command -v debootstrap >/dev/null || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }

# The Debian mirror this machine's apt already uses (deb822 or one-line sources).
mirror="$(grep -rhoE 'https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
          | head -1 | tr -d ' ' || true)"
[ -n "$mirror" ] || { echo "debian-chroot: no Debian mirror in /etc/apt/sources.list*" >&2; exit 1; }

if [ "$rebuild" = 1 ] || [ ! -f "$root/.hound-speaker-ready" ]; then
    echo "debian-chroot: making a $suite root file system in $root (debootstrap from $mirror)" >&2
    rm -rf "$root.new"
    mkdir -p "$(dirname "$root")"
    debootstrap --variant=minbase --include=ca-certificates "$suite" "$root.new" "$mirror" > "$root.debootstrap.log" 2>&1 \
        || { tail -20 "$root.debootstrap.log" >&2; echo "debian-chroot: debootstrap failed ($root.debootstrap.log)" >&2; exit 1; }
    # What the Swift toolchain itself needs to run and link, named as both Debian 12 and 13 name them
    # (tools/install-deps.sh adds the project's own packages).
    touch "$root.new/.hound-speaker-ready"
    rm -rf "$root"
    mv "$root.new" "$root"
fi

mounts=()
cleanup() {
    local i
    for ((i=${#mounts[@]}-1; i>=0; i--)); do umount -l "${mounts[$i]}" 2>/dev/null || true; done
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
