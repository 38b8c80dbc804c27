#!/usr/bin/env bash
# Installs the Debian packages hound-speaker needs to build, test and run (idempotent), on Debian 12 (bookworm) and
# Debian 13 (trixie), the two Raspberry Pi OS generations in use. Every name here is the same on both: -dev
# packages keep their names across 13's 64-bit time_t transition (libasound2-dev brings libasound2 on 12 and
# libasound2t64 on 13; libgpiod-dev brings libgpiod 1.6 on 12 and 2.2 on 13, and Package.swift builds the matching
# board backend).
#   tools/install-deps.sh          build + run + test packages
#   tools/install-deps.sh --build  only what building needs (deploy/install.sh uses it on the Pi)
#   tools/install-deps.sh --swift-tests  what building and the Swift tests need (the Debian 13 leg of tools/test.sh)
#   tools/install-deps.sh --package      what building the Debian package needs (deploy/build-deb)
#   tools/install-deps.sh --cross-target the arm64 root of a cross build (tools/cross-arm64.sh): the -dev packages
#                                        the binary links against, the package's tools and what the tests run;
#                                        no Swift there (the compiler runs in a root of its own)
# The Swift 6 toolchain itself is not a Debian package here (Debian 13's swiftlang is 6.0.3, older than this
# project's dependencies need): it must be on PATH (see README, "Fresh machine"); `toolchain` is what it needs to run
# and link.
set -euo pipefail

toolchain=(binutils git gcc g++ libc6-dev libcurl4-openssl-dev libedit2 libncurses6 libsqlite3-0 libxml2 tzdata)
build=(pkg-config libcurl4-openssl-dev libssl-dev libspeex-dev libspeexdsp-dev libsoxr-dev libsndfile1-dev
       libasound2-dev libgpiod-dev libespeak-ng-dev libsystemd-dev liblbfgs-dev libmosquitto-dev zlib1g-dev)
# deploy/build-deb: debhelper (dpkg-buildpackage, dh, dpkg-shlibdeps), help2man (the manual page) and lintian.
package=(debhelper dpkg-dev help2man lintian)
# What the Swift tests run: real espeak-ng and sox for fixtures, the time zone database, and the offline recogniser
# (libpocketsphinx3, opened with dlopen, and its US English model) with flite to speak its commands (its voices are
# near enough a person's for the recogniser's check; espeak-ng's are not: BENCHMARKS.md, "Offline commands"), and
# Debian's MQTT broker and its command-line clients, in Home Assistant's place (Tests/HomeAssistantTests), and python3
# for the stand-in of Home Assistant's conversation API (Tests/support/ha_standin.py).
swift_tests=(espeak-ng flite sox curl ca-certificates tzdata libpocketsphinx3 pocketsphinx-en-us mosquitto mosquitto-clients python3)
# Tools the other tests and the demo use: alsa-utils and gpiod for `doctor` advice, what the official Python SDK's C
# extension needs to build (gcc and libc6-dev, in toolchain), numpy for the hot-phrase tools' unit tests (tools/hotphrase/test.sh), and for
# Tests/deploy: systemd-analyze (systemd), a real sshd and ssh (openssh-server, openssh-client), readelf (binutils, in toolchain);
# Debian's Chromium and a font for the kiosk page's tests (Tests/kiosk); debootstrap for the Debian 13 leg
# (tools/debian-chroot.sh); aptly and gnupg for the apt repository's test (deploy/apt-repo, Tests/deb); qemu, cpio and
# kmod for the sound-card VM (Tests/soundcard: Debian's kernel and busybox-static it downloads itself, unpacked).
test=("${swift_tests[@]}" "${package[@]}" alsa-utils gpiod python3 python3-venv python3-dev python3-numpy
      systemd openssh-server openssh-client chromium fonts-dejavu-core debootstrap aptly gnupg
      qemu-system-x86 cpio kmod)

wanted=("${toolchain[@]}" "${build[@]}" "${test[@]}")
if [ "${1:-}" = "--build" ]; then
    wanted=("${toolchain[@]}" "${build[@]}")
elif [ "${1:-}" = "--package" ]; then
    wanted=("${toolchain[@]}" "${build[@]}" "${package[@]}")
elif [ "${1:-}" = "--swift-tests" ]; then
    wanted=("${toolchain[@]}" "${build[@]}" "${swift_tests[@]}")
elif [ "${1:-}" = "--cross-target" ]; then
    wanted=("${toolchain[@]}" "${build[@]}" "${package[@]}" "${swift_tests[@]}")
elif [ $# -gt 0 ]; then
    echo "install-deps: unknown argument \"$1\" (--build, --swift-tests, --package or --cross-target)" >&2
    exit 2
fi
missing=()
for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all Debian packages present"
else
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "install-deps: installing ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ "${1:-}" != "--cross-target" ] || exit 0
if ! command -v swift >/dev/null 2>&1; then
    [ -x /opt/swift/usr/bin/swift ] && echo "install-deps: add /opt/swift/usr/bin to PATH" >&2
    echo "install-deps: no Swift toolchain on PATH: install Swift 6.x for Debian 12 from swift.org (it runs on Debian 13 too; see README)" >&2
    exit 1
fi
