#!/usr/bin/env bash
# The Swift tests on arm64 (issue #59): cross-built with Debian's Swift (tools/cross-arm64.sh; the debug build,
# linked to the arm64 Swift runtime's shared libraries, since Swift Testing has no static library) and run in the
# Debian 13 arm64 root under qemu-user, with real espeak-ng, sox and ALSA file devices there as on amd64.
#   Tests/arm64/swift-tests.sh [SUITE...]
# Without SUITE, the suites that cover the most of what differs on the Pi's processor, in CI's time: the core (its
# machine and decisions, SpeakerCoreTests) and the timers, the detector (its arithmetic, vectorised), Houndify's
# protocol and parsing, the board's logic and the config. SUITE: a --filter pattern (a module like HotPhraseTests,
# or a suite's name); "all" runs every test (BENCHMARKS.md, "arm64", says how long that takes). Needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."
scratch=.build-arm64-debug
filters=("$@")
if [ ${#filters[@]} -eq 0 ]; then
    filters=(SpeakerCoreTests TimersTests HotPhraseTests.FrontEndTests HotPhraseTests.EmbeddingReferenceTests
             HotPhraseTests.ReferenceTests HotPhraseTests.SubsequenceDTWTests HoundifyTests.SigningTests
             HoundifyTests.RequestInfoTests HoundifyTests.JSONStreamScannerTests HoundifyTests.ModelTests
             BoardTests.ButtonGestureTests BoardTests.LEDTests BoardTests.TalkModeTests SpeakerConfigTests)
fi

echo "== the arm64 debug build with the tests (tools/cross-arm64.sh)"
log="/tmp/hound-speaker-build-arm64-tests.log"
# Debian's swiftlang ships the _Testing_Foundation overlay's module but not its library; the tests use none of it.
bash tools/cross-arm64.sh -- bash -c '$SWIFT build --build-tests $CROSS_ARM64 --scratch-path "$1" \
    -Xswiftc -Xfrontend -Xswiftc -disable-autolink-library -Xswiftc -Xfrontend -Xswiftc _Testing_Foundation' \
    bash "$scratch" > "$log" 2>&1 || { grep -E "error" "$log" | head -20 >&2; echo "arm64 swift-tests: the build failed ($log)" >&2; exit 1; }
# Our own code builds without a warning here too (Swift 6.2 has warnings of its own).
if grep -E "^$PWD/(Sources|Tests)/.*warning:" "$log"; then
    echo "arm64 swift-tests: the build has warnings (above)" >&2
    exit 1
fi
tests="$scratch/aarch64-unknown-linux-gnu/debug/hound-speakerPackageTests.xctest"
[ -x "$tests" ] || { echo "arm64 swift-tests: no $tests" >&2; exit 1; }

args=()
[ "${filters[0]}" = all ] || for f in "${filters[@]}"; do args+=(--filter "$f"); done
echo "== the Swift tests in the Debian 13 arm64 root (qemu-user): ${filters[*]}"
start=$SECONDS
bash tools/cross-arm64.sh --target -- "$tests" --testing-library swift-testing "${args[@]}"
echo "arm64 swift-tests: $((SECONDS - start)) s under qemu-user"
