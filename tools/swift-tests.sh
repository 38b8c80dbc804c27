#!/usr/bin/env bash
# Builds with no warnings in our own code and runs the Swift tests: tools/test.sh runs it on this machine, and inside
# a Debian 13 chroot (tools/debian-chroot.sh) for the Raspberry Pi OS trixie leg.
#   tools/swift-tests.sh [--install-deps] [--scratch-path DIR]
#   --install-deps     first install what building and the Swift tests need (tools/install-deps.sh --swift-tests)
#   --scratch-path     SwiftPM's build folder (default .build); another release's build keeps its own
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d /opt/swift/usr/bin ] && export PATH="/opt/swift/usr/bin:$PATH"
scratch=.build
while [ $# -gt 0 ]; do
    case "$1" in
        --install-deps) bash tools/install-deps.sh --swift-tests; shift ;;
        --scratch-path) scratch="$2"; shift 2 ;;
        *) echo "swift-tests: unknown argument \"$1\"" >&2; exit 2 ;;
    esac
done
release="$(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown}")"
echo "== build on $release, libgpiod $(pkg-config --modversion libgpiod 2>/dev/null || echo missing) ($scratch)"
log="/tmp/hound-speaker-build-$(basename "$scratch").log"
# Our own code must build without a warning (dependencies' warnings are theirs).
swift build --build-tests --scratch-path "$scratch" 2>&1 | tee "$log" | grep -E "error|warning:" || true
if grep -E "^$PWD/(Sources|Tests)/.*warning:" "$log"; then
    echo "swift-tests: the build has warnings (above); fix them" >&2
    exit 1
fi
grep -q "error:" "$log" && { echo "swift-tests: build failed (all of it in $log)" >&2; exit 1; }

echo "== swift test on $release"
swift test --skip-build --scratch-path "$scratch"
