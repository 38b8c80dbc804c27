#!/usr/bin/env bash
# Installs the Debian 12 packages hound-speaker needs to build, test and run (idempotent).
#   tools/install-deps.sh          build + run + test packages
#   tools/install-deps.sh --build  only what building needs (deploy/install.sh uses it on the Pi)
# The Swift 6 toolchain itself is not a Debian package: it must be on PATH (see README, "Fresh machine").
set -euo pipefail

build=(pkg-config libcurl4-openssl-dev libssl-dev libspeex-dev libspeexdsp-dev libsoxr-dev libsndfile1-dev
       libasound2-dev libgpiod-dev libespeak-ng-dev libsystemd-dev zlib1g-dev)
# Tools the tests and the demo use: real espeak-ng and sox for fixtures, the time zone database, alsa-utils and gpiod for
# `doctor` advice, what the official Python SDK's C extension needs to build, numpy for the hot-phrase tools' unit
# tests (tools/hotphrase/test.sh), and for Tests/deploy: systemd-analyze (systemd), a real sshd and ssh
# (openssh-server, openssh-client), readelf (binutils); Debian's Chromium and a font for the kiosk page's tests
# (Tests/kiosk).
test=(espeak-ng sox alsa-utils gpiod ca-certificates tzdata python3 python3-venv python3-dev python3-numpy gcc
      libc6-dev systemd openssh-server openssh-client binutils chromium fonts-dejavu-core)

wanted=("${build[@]}" "${test[@]}")
if [ "${1:-}" = "--build" ]; then
    wanted=("${build[@]}")
elif [ $# -gt 0 ]; then
    echo "install-deps: unknown argument \"$1\" (only --build)" >&2
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

if ! command -v swift >/dev/null 2>&1; then
    [ -x /opt/swift/usr/bin/swift ] && echo "install-deps: add /opt/swift/usr/bin to PATH" >&2
    echo "install-deps: no Swift toolchain on PATH: install Swift 6.x for Debian 12 from swift.org (see README)" >&2
    exit 1
fi
