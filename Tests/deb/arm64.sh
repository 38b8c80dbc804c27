#!/usr/bin/env bash
# Runs in the Debian chroot that builds the package (Tests/deb/run.sh): deploy/build-deb given an arm64 binary, as
# a cross build would give it, makes the arm64 package the same way. No arm64 build of the speaker can be made on
# these machines (no aarch64 Swift runtime is reachable), so Debian's own arm64 `hello` stands in for both
# programs: what is checked is the packaging, not the program. OUT holds the amd64 package (OUT/new) to compare
# with. Prints a line per check and "N passed, N failed".
set -uo pipefail
out="$1"
. "$(dirname "$0")/checks.sh"
# The arm64 C library's shlibs for dpkg-shlibdeps, and the cross binutils for dh_strip: what a cross-building
# machine has anyway (deploy/README.md, "The Debian package").
dpkg --add-architecture arm64
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libc6:arm64 binutils-aarch64-linux-gnu >/dev/null
work="$(mktemp -d)"
(cd "$work" && apt-get download -q hello:arm64 >/dev/null 2>&1) && dpkg-deb -x "$work"/hello_*_arm64.deb "$work/hello"
stand_in="$work/hello/usr/bin/hello"
check "an arm64 stand-in binary" bash -c "od -An -tx1 -j18 -N2 $stand_in | tr -d ' \n' | grep -qx b700"
arm="$(deploy/build-deb --binary "$stand_in" --local "$stand_in" --out "$work/out" 2>"$work/build.log")"
check "build-deb makes an arm64 package" bash -c "[ -f '$arm' ] && [ \"\$(dpkg-deb -f '$arm' Architecture)\" = arm64 ] || cat $work/build.log"
check "its Depends come from dpkg-shlibdeps on the arm64 binary" bash -c "dpkg-deb -f '$arm' Depends | grep -q 'libc6 (>= '"
amd="$(cat "$out/new")"
# Everything but the manual page (help2man cannot run an arm64 binary here) is at the same path with the same mode.
listing() { dpkg-deb -c "$1" | awk '{print $1, $6}' | grep -v '/man/' | sort; }
check "the same files at the same paths as the amd64 package" diff <(listing "$amd") <(listing "$arm")
check "the same maintainer scripts" bash -c "diff <(dpkg-deb -I '$amd' postinst) <(dpkg-deb -I '$arm' postinst) && diff <(dpkg-deb -I '$amd' postrm) <(dpkg-deb -I '$arm' postrm)"
check "the same conffiles" diff <(dpkg-deb -I "$amd" conffiles) <(dpkg-deb -I "$arm" conffiles)
rm -rf "$work"
finish
