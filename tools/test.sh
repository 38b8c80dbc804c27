#!/usr/bin/env bash
# The test command (README, and what CI's .ci/run calls): installs what it needs, runs the hot-phrase tools' Python
# unit tests (numpy only), builds with no warnings, runs the Swift tests (real libcurl, libspeex, libsndfile,
# libsoxr against the local Houndify service) here (Debian 12, libgpiod 1.6), those that need a kernel sound card
# again in a VM whose kernel has one (Tests/soundcard), and all again in a Debian 13 chroot (libgpiod 2), the
# official Python Houndify SDK against `hound-speaker serve`, the
# kiosk page in headless Chromium, the fault-injection suite, the deploy tests (Tests/deploy), a short fuzzing run
# (Tests/fuzz) and the Pi's release build; for arm64 (Tests/arm64), the package cross-built with Debian's Swift and
# run in a Debian 13 arm64 root under qemu-user, and the Swift tests that cover the most there.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d /opt/swift/usr/bin ] && export PATH="/opt/swift/usr/bin:$PATH"

bash tools/install-deps.sh

echo "== the hot-phrase tools' unit tests: front end, model file export (tools/hotphrase/test.sh)"
bash tools/hotphrase/test.sh

echo "== the modules' layering: the pure core, the device commands (tools/module-graph.py --check)"
python3 tools/module-graph.py --check

bash tools/swift-tests.sh

echo "== the Swift tests that need a kernel sound card (the volume through softvol on snd-aloop), in a VM (Tests/soundcard)"
# This machine's kernel has no sound; there they skip, saying so. Debian's kernel in qemu has snd-aloop.
bash Tests/soundcard/run.sh

echo "== Debian 13 (Raspberry Pi OS trixie, libgpiod 2): the same build and Swift tests in a debootstrap chroot"
# tools/debian-chroot.sh makes the chroot once (kept in /var/tmp) and shows it this checkout and the toolchain.
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO bash tools/debian-chroot.sh --suite trixie -- bash tools/swift-tests.sh --install-deps --scratch-path .build-trixie

echo "== the Debian package: deploy/build-deb on Debian 13, installed with apt into a fresh Debian 13, upgraded, rolled back, purged"
$SUDO bash Tests/deb/run.sh --suite trixie

echo "== arm64: the Pi's packages cross-built with Debian's Swift, installed and run in a fresh Debian 13 arm64 system (qemu-user), and the Swift tests on arm64"
$SUDO bash Tests/arm64/run.sh --amd64 "$(cat out/deb-trixie/new)"

echo "== official Python Houndify SDK against hound-speaker serve"
HOUND_SPEAKER_BIN="$(swift build --show-bin-path)/hound-speaker" bash Tests/sdk/run.sh

echo "== the kiosk page in headless Chromium against run and the local service"
HOUND_SPEAKER_BIN="$(swift build --show-bin-path)/hound-speaker" bash Tests/kiosk/run.sh

echo "== fault injection: text, voice and run against a misbehaving stand-in server, and the soak"
HOUND_SPEAKER_BIN="$(swift build --show-bin-path)/hound-speaker" bash Tests/faults/run.sh

echo "== deploy: systemd unit, install.sh, push and logs over SSH"
HOUND_SPEAKER_BIN="$(swift build --show-bin-path)/hound-speaker" bash Tests/deploy/run.sh

echo "== coverage-guided fuzzing, a short run: the response stream, Houndify's JSON, the config, timer and alarm commands, the timers file (Tests/fuzz)"
# Each fuzzer starts from its corpus (seeded from the repository) for FUZZ_SECONDS; the long runs are benchmarks
# (BENCHMARKS.md, "Fuzzing").
bash Tests/fuzz/run.sh "${FUZZ_SECONDS:-20}"

echo "== the Pi's release build (deploy/build-release): links without full Foundation, and runs the demo"
# The build itself is the check that nothing uses full Foundation (it would not link); the demo checks that the
# static binary works: config, the local service and its time answer, capture, the hot phrase, speech.
# The demo runs the local service, its own program, from beside the binary: it is built the same way.
if ! { bash deploy/build-release --scratch-path .build-release &&
       bash deploy/build-release --scratch-path .build-release --product houndify-local; } > /tmp/hound-speaker-release.log 2>&1; then
    grep -E "error|undefined" /tmp/hound-speaker-release.log | head -20 >&2
    echo "test.sh: the release build failed (above; all of it in /tmp/hound-speaker-release.log)" >&2
    exit 1
fi
release_bin="$(swift build -c release --scratch-path .build-release --show-bin-path)/hound-speaker"
# espeak-ng and libstdc++ are linked in (their shared libraries would bring PulseAudio, D-Bus and X11 along), and
# libsndfile is loaded only while a file is read or written (Sources/Audio/Sndfile.swift).
if needed="$(readelf -d "$release_bin" | grep -oE 'lib(espeak-ng|stdc\+\+|pcaudio|pulse|sndfile)[^]]*')"; then
    echo "test.sh: the release binary loads $needed (deploy/build-release links espeak-ng and libstdc++ in, and Audio dlopens libsndfile; see any note above)" >&2
    grep "build-release:" /tmp/hound-speaker-release.log >&2 || true
    exit 1
fi
demo_wav="$(mktemp --suffix=.wav)"
"$release_bin" demo --output "$demo_wav" | tee /tmp/hound-speaker-release-demo.log | grep -E "^\[state\]|answer" | head -3
grep -q "the answer was spoken into $demo_wav" /tmp/hound-speaker-release-demo.log && [ -s "$demo_wav" ] \
    || { echo "test.sh: the release binary's demo did not answer (/tmp/hound-speaker-release-demo.log)" >&2; exit 1; }
rm -f "$demo_wav"
# The Pi's binary carries neither the local service nor ICU's data (issue #16: at most 20 MB stripped).
if nm "$release_bin" | grep -qE "icudt[0-9]+_dat|LocalHoundify"; then
    echo "test.sh: the release binary carries ICU data or the local service (nm $release_bin | grep -E 'icudt|LocalHoundify')" >&2
    exit 1
fi
stripped="$(mktemp)"; strip -o "$stripped" "$release_bin"
echo "release binary: $release_bin ($(du -h "$release_bin" | cut -f1); $(du -h "$stripped" | cut -f1) stripped) answered the demo"
rm -f "$stripped"
