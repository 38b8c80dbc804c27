#!/usr/bin/env bash
# The arm64 cross build from Debian's own Swift (issue #59): runs COMMAND in the compiler's root, where
# `swift build $CROSS_ARM64` builds for aarch64 against a Debian 13 arm64 root (what Raspberry Pi OS trixie is).
#
#   tools/cross-arm64.sh [--rebuild] -- COMMAND [ARGS...]    e.g. -- deploy/build-release $CROSS_ARM64 --scratch-path .build-arm64
#   tools/cross-arm64.sh --target -- COMMAND [ARGS...]       COMMAND in the arm64 root itself, under qemu-user
#
# Three parts, made once and kept beside tools/debian-chroot.sh's roots ($HOUND_CHROOT_DIR, default
# /var/tmp/hound-speaker-chroot); --rebuild makes them anew:
# - the compiler's root: Debian unstable with its swiftlang package (6.2.3; Debian 13's own is 6.0.3, too old).
#   The unstable archive is a frozen snapshot past its Valid-Until date, so apt is told not to check that date.
#   Its compiler needs unstable's C library, hence a root of its own.
# - the target root (trixie-arm64, tools/debian-chroot.sh --arch arm64): Debian 13 for arm64 with the -dev
#   packages the build needs (tools/install-deps.sh), the sysroot the binary is linked against, so it runs on
#   Raspberry Pi OS trixie; the tests and the package are made and run in it under qemu-user.
# - the Swift SDK: the arm64 swiftlang package's target libraries (lib/swift and lib/swift_static, the static
#   stdlib among them; the same version as the compiler) with the compiler's clang headers, and an artifact bundle
#   naming them and the sysroot (swift-sdk.json schema 4.0; the toolset only says -use-ld=lld: naming ld.lld as
#   the linker makes swiftc link for x86-64).
# In COMMAND's environment: CROSS_ARM64 (the swift build options: --swift-sdk and --swift-sdks-path), SWIFT (the
# compiler's swift, which deploy/build-release uses), pkg-config reading the sysroot's .pc files only, and PATH
# with Debian's toolchain first. Needs root (debootstrap, chroot).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
rebuild=0 target=0
while [ $# -gt 0 ]; do
    case "$1" in
        --rebuild) rebuild=1; shift ;;
        --target) target=1; shift ;;
        --) shift; break ;;
        -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "cross-arm64: no command (usage: tools/cross-arm64.sh [--rebuild] [--target] -- COMMAND)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "cross-arm64: needs root (debootstrap, chroot), as tools/debian-chroot.sh" >&2; exit 1; }
cache="${HOUND_CHROOT_DIR:-/var/tmp/hound-speaker-chroot}"
export HOUND_CHROOT_DIR="$cache"
sysroot="$cache/trixie-arm64"
resources="$cache/swift-arm64"
sdks="$cache/swift-sdks"
chroot_sh=(bash "$here/debian-chroot.sh")
log="$cache/cross-arm64.log"
mkdir -p "$cache"
step() { echo "cross-arm64: $*" >&2; }
fail() { tail -25 "$log" >&2; echo "cross-arm64: $* (all of it in $log)" >&2; exit 1; }
rebuild_flag=()
[ "$rebuild" = 0 ] || { rebuild_flag=(--rebuild); rm -rf "$resources" "$sdks"; }

# --- the target root: Debian 13 arm64 with what the build, the tests and the package need -----------------------
# The marker holds the package list's digest: a root kept from before a package was added gets it too.
deps_digest="$(sha256sum tools/install-deps.sh | cut -d' ' -f1)"
if [ "$rebuild" = 1 ] || [ "$(cat "$sysroot/.hound-speaker-deps" 2>/dev/null)" != "$deps_digest" ]; then
    step "the Debian 13 arm64 root in $sysroot (debootstrap, then apt under qemu-user: several minutes the first time)"
    "${chroot_sh[@]}" --suite trixie --arch arm64 "${rebuild_flag[@]}" -- bash tools/install-deps.sh --cross-target > "$log" 2>&1 \
        || fail "the arm64 root's packages could not be installed"
    echo "$deps_digest" > "$sysroot/.hound-speaker-deps"
    rebuild_flag=()
fi
if [ "$target" = 1 ]; then
    # The Swift runtime's shared libraries, for the tests (the speaker itself has the stdlib linked in).
    if [ -d "$resources/usr/libexec/swift/lib/swift/linux" ]; then
        exec "${chroot_sh[@]}" --suite trixie --arch arm64 --bind "$resources" -- \
            env LD_LIBRARY_PATH="$resources/usr/libexec/swift/lib/swift/linux" "$@"
    fi
    exec "${chroot_sh[@]}" --suite trixie --arch arm64 -- "$@"
fi

# --- the compiler's root: Debian unstable's swiftlang ----------------------------------------------------------
apt_old=(-o Acquire::Check-Valid-Until=false)
compiler="$cache/unstable"
if [ "$rebuild" = 1 ] || [ ! -x "$compiler/usr/libexec/swift/bin/swift" ] || [ ! -f "$compiler/.hound-speaker-deps" ]; then
    step "the compiler's root in $compiler (Debian unstable, swiftlang)"
    "${chroot_sh[@]}" --suite unstable "${rebuild_flag[@]}" -- bash -c '
        dpkg --add-architecture arm64 &&
        apt-get "$@" update -qq &&
        apt-get "$@" install -y -qq --no-install-recommends swiftlang libc6-dev gcc g++ pkgconf git ca-certificates >/dev/null' \
        bash "${apt_old[@]}" > "$log" 2>&1 || fail "Debian unstable's swiftlang could not be installed"
    touch "$compiler/.hound-speaker-deps"
fi
version="$(dpkg-query --admindir="$compiler/var/lib/dpkg" -W -f '${Version}' swiftlang)"

# --- the Swift SDK: the arm64 package's target libraries, the same version as the compiler -------------------
if [ "$(cat "$resources/.version" 2>/dev/null)" != "$version-2" ]; then
    step "the arm64 target libraries of swiftlang $version"
    rm -rf "$resources" && mkdir -p "$resources"
    "${chroot_sh[@]}" --suite unstable -- bash -c '
        cd /tmp && rm -f swiftlang_*_arm64.deb libswiftlang_*_arm64.deb &&
        apt-get "${@:2}" update -qq && apt-get "${@:2}" download -q "swiftlang:arm64=$1" "libswiftlang:arm64=$1" >/dev/null' \
        bash "$version" "${apt_old[@]}" > "$log" 2>&1 || fail "swiftlang:arm64 $version could not be downloaded"
    deb="$(ls "$compiler"/tmp/swiftlang_*_arm64.deb)"
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$resources" ./usr/libexec/swift/lib/swift ./usr/libexec/swift/lib/swift_static \
        || { echo "cross-arm64: $deb has no usr/libexec/swift/lib/swift or swift_static" >&2; exit 1; }
    # The runtime's shared libraries (libswiftlang): Swift Testing has no static library, so the tests link these
    # and run with them (tools/cross-arm64.sh --target puts them on LD_LIBRARY_PATH).
    runtime="$(ls "$compiler"/tmp/libswiftlang_*_arm64.deb)"
    dpkg-deb --fsys-tarfile "$runtime" | tar -x -C "$resources" --wildcards './usr/libexec/swift/lib/swift/linux/*.so' \
        || { echo "cross-arm64: $runtime has no usr/libexec/swift/lib/swift/linux/*.so" >&2; exit 1; }
    rm -f "$deb" "$runtime"
    # lib/swift/clang and lib/swift_static/clang point at ../clang/17: the compiler's own headers.
    cp -a "$compiler/usr/libexec/swift/lib/clang" "$resources/usr/libexec/swift/lib/"
    echo "$version-2" > "$resources/.version"  # -2: with the runtime's shared libraries
fi
# The driver takes swiftrt.o from the sysroot's usr/lib/swift{,_static}, whatever the SDK's resource paths say.
for lib in swift swift_static; do ln -sfn "$resources/usr/libexec/swift/lib/$lib" "$sysroot/usr/lib/$lib"; done
bundle="$sdks/debian13-arm64.artifactbundle"
mkdir -p "$bundle/sdk"
cat > "$bundle/info.json" <<EOF
{"schemaVersion": "1.0", "artifacts": {"debian13-arm64": {"type": "swiftSDK", "version": "$version",
 "variants": [{"path": "sdk", "supportedTriples": ["x86_64-pc-linux-gnu", "x86_64-unknown-linux-gnu"]}]}}}
EOF
cat > "$bundle/sdk/swift-sdk.json" <<EOF
{"schemaVersion": "4.0", "targetTriples": {"aarch64-unknown-linux-gnu": {
 "sdkRootPath": "$sysroot",
 "swiftResourcesPath": "$resources/usr/libexec/swift/lib/swift",
 "swiftStaticResourcesPath": "$resources/usr/libexec/swift/lib/swift_static",
 "toolsetPaths": ["toolset.json"]}}}
EOF
echo '{"schemaVersion": "1.0", "swiftCompiler": {"extraCLIOptions": ["-use-ld=lld"]}}' > "$bundle/sdk/toolset.json"

pc="$sysroot/usr/lib/aarch64-linux-gnu/pkgconfig:$sysroot/usr/share/pkgconfig"
exec "${chroot_sh[@]}" --suite unstable --bind "$sysroot" --bind "$resources" --bind "$sdks" -- \
    env PATH="/usr/libexec/swift/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        SWIFT=/usr/libexec/swift/bin/swift \
        CROSS_ARM64="--swift-sdk aarch64-unknown-linux-gnu --swift-sdks-path $sdks" \
        PKG_CONFIG_SYSROOT_DIR="$sysroot" PKG_CONFIG_LIBDIR="$pc" PKG_CONFIG_PATH="$pc" \
        "$@"
