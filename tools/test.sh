#!/usr/bin/env bash
# The test command (README, and what CI's .ci/run calls): installs what it needs, builds with no warnings,
# runs the Swift tests (real libcurl, libspeex, libsndfile, libsoxr against the local Houndify service),
# the official Python Houndify SDK against `hound-speaker serve`, and the deploy tests (Tests/deploy).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d /opt/swift/usr/bin ] && export PATH="/opt/swift/usr/bin:$PATH"

bash tools/install-deps.sh

echo "== build"
# Our own code must build without a warning (dependencies' warnings are theirs).
swift build --build-tests 2>&1 | tee /tmp/hound-speaker-build.log | grep -E "error|warning:" || true
if grep -E "^$PWD/(Sources|Tests)/.*warning:" /tmp/hound-speaker-build.log; then
    echo "test.sh: the build has warnings (above); fix them" >&2
    exit 1
fi
grep -q "error:" /tmp/hound-speaker-build.log && { echo "test.sh: build failed" >&2; exit 1; }

echo "== swift test"
swift test --skip-build

echo "== official Python Houndify SDK against hound-speaker serve"
HOUND_SPEAKER_BIN="$(swift build --show-bin-path)/hound-speaker" bash Tests/sdk/run.sh

echo "== deploy: systemd unit, install.sh, push and logs over SSH"
HOUND_SPEAKER_BIN="$(swift build --show-bin-path)/hound-speaker" bash Tests/deploy/run.sh
