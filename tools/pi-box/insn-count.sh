#!/usr/bin/env bash
# The hot-phrase path's instructions per second of audio, counted by qemu's instruction-count plugin (insn) with
# qemu-user running the benchmark (`hound-speaker-bench hotphrase`), as ratios to a reference work counted in the
# same run (sox making and measuring 30 s of a 440 Hz tone, the box's reference in vm-tests.sh). Emulated time is
# no Pi's time; instruction counts are the same on every run and every machine for the same binary.
#
#   tools/pi-box/insn-count.sh BENCH [ROOT]
#   tools/pi-box/insn-count.sh --speaker BIN [ROOT]
#   tools/pi-box/insn-count.sh --idle BIN [ROOT]
#   tools/pi-box/insn-count.sh --offline BIN [ROOT]
#
#   BENCH   a release hound-speaker-bench (swift build -c release --product hound-speaker-bench)
#   BIN     the speaker's release binary itself (deploy/build-release; for arm64, tools/cross-arm64.sh -- bash -c
#           'deploy/build-release $CROSS_ARM64 --scratch-path .build-arm64'): `hotphrase` over the demo's
#           recording repeated to two lengths, the shipped model only, as the speaker's own -Osize build runs it
#   --idle  an idle `hound-speaker run` of BIN: the shipped model listening to a quiet room (brown noise near
#           -70 dBFS) read from an ALSA file PCM at a microphone's pace (input_pacing = "realtime"), the simulated
#           board, no network; run for 30 s and 90 s, stopped with SIGTERM as systemd stops it, the difference
#           divided by the 60 s between them (start-up and stop left out). Three pairs, each printed.
#   --offline  the on-device recogniser of BIN (`offline`, issue #63: PocketSphinx's grammar search, then its
#           key-phrase check of the words), over the demo's recording repeated to two lengths; ROOT must have
#           libpocketsphinx3 and pocketsphinx-en-us (the arm64 cross root and the Debian 13 chroot have them)
#   x86_64 binaries are counted by qemu-x86_64, aarch64 ones by qemu-aarch64 (the Pi's instruction set)
#   ROOT    the root file system whose libraries BENCH was linked against (qemu-user's -L), e.g. the Debian 13
#           chroot it was built in (/var/tmp/hound-speaker-chroot/trixie, or trixie-arm64); default /
#
# Debian's qemu packages load TCG plugins (-plugin) but ship none, and no package has qemu-plugin.h: the plugin is
# built from the source package of the installed qemu-user (apt-get source with a private deb-src list, nothing
# of the system's apt configuration changed), kept in $HOUND_PIBOX_DIR/insn. Needs root (apt-get install).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
die() { echo "insn-count: $*" >&2; exit 1; }
speaker=0 idle=0 offline=0
case "${1:-}" in
    --speaker) speaker=1; shift ;;
    --offline) offline=1; shift ;;
    --idle) idle=1; shift ;;
esac
[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: tools/pi-box/insn-count.sh [--speaker | --idle | --offline] BIN [ROOT]"
bench="$(realpath "$1" 2>/dev/null)" || die "$1: no such file"
root="${2:-/}"
[ -x "$bench" ] || die "$bench: not an executable"
[ -d "$root/lib" ] || die "$root: not a root file system (no lib/)"
case "$(od -An -tx1 -j18 -N2 "$bench" | tr -d ' \n')" in
    3e00) qemu=qemu-x86_64 ;;
    b700) qemu=qemu-aarch64 ;;
    *) die "$bench: not an x86_64 or aarch64 ELF executable" ;;
esac
cache="${HOUND_PIBOX_DIR:-/var/tmp/hound-speaker-pibox}/insn"
mkdir -p "$cache"

# --- the plugin ---------------------------------------------------------------------------------------------------
need=()
command -v qemu-x86_64 > /dev/null || need+=(qemu-user)
command -v sox > /dev/null || need+=(sox)
command -v gcc > /dev/null || need+=(gcc)
pkg-config --exists glib-2.0 2> /dev/null || need+=(libglib2.0-dev pkg-config)
if [ ${#need[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" > "$cache/apt.log" 2>&1 \
        || { tail -20 "$cache/apt.log" >&2; die "cannot install ${need[*]} (above)"; }
fi
version="$(dpkg-query -W -f '${source:Version}' qemu-user)"  # the source package's (no binNMU +bN)
plugin="$cache/libinsn-$version.so"
if [ ! -f "$plugin" ]; then
    # The source package of exactly this qemu: a deb-src list of the suites apt already uses, in a private
    # directory (apt's own lists and sources stay as they are).
    work="$cache/src"
    rm -rf "$work"
    mkdir -p "$work/lists/partial"
    . /etc/os-release
    printf 'deb-src http://deb.debian.org/debian %s main\ndeb-src http://deb.debian.org/debian-security %s-security main\n' \
        "$VERSION_CODENAME" "$VERSION_CODENAME" > "$work/sources.list"
    apt_private=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/nonexistent -o "Dir::State::Lists=$work/lists")
    apt-get "${apt_private[@]}" update -qq > "$work/apt.log" 2>&1 || { tail -20 "$work/apt.log" >&2; die "apt-get update of the deb-src list failed (above)"; }
    (cd "$work" && apt-get "${apt_private[@]}" source --download-only "qemu=$version" >> "$work/apt.log" 2>&1) \
        || { tail -20 "$work/apt.log" >&2; die "apt-get source qemu=$version failed (above)"; }
    orig="$(ls "$work"/qemu_*.orig.tar.* | head -1)"
    tar -tf "$orig" > "$work/files"
    top="$(sed -n '1s,/.*,,p' "$work/files")"
    # qemu 7.2 keeps insn.c in tests/plugin; later ones in tests/tcg/plugins.
    insn="$(grep -m1 -E '^[^/]+/tests/(plugin|tcg/plugins)/insn\.c$' "$work/files" || true)"
    [ -n "$insn" ] || die "no insn.c in $orig"
    tar -C "$work" -xf "$orig" "$top/include/qemu/qemu-plugin.h" "$insn"
    gcc -O2 -shared -fPIC $(pkg-config --cflags glib-2.0) -I"$work/$top/include/qemu" -o "$plugin.new" "$work/$insn" \
        $(pkg-config --libs glib-2.0) || die "cannot build $insn"
    mv "$plugin.new" "$plugin"
    rm -rf "$work"
fi

# --- the counts ---------------------------------------------------------------------------------------------------
count() {  # count QEMU ROOT COMMAND...: the instructions the guest executed, all threads (insn's inline counter)
    local log emulator="$1" prefix="$2"; shift 2
    log="$(mktemp)"
    "$emulator" -L "$prefix" -plugin "$plugin,inline=on" -d plugin -D "$log" "$@" > /dev/null 2> "$log.err" \
        || { tail -5 "$log.err" >&2; rm -f "$log" "$log.err"; die "failed under qemu-user (above): $*"; }
    awk '/^insns: / { n += $2 } END { printf "%.0f\n", n }' "$log"
    rm -f "$log" "$log.err"
}
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if [ "$idle" = 1 ]; then
    cd "$repo"
    # Ten minutes of a quiet room, more than the longest run reads.
    sox -n -r 16000 -b 16 -c 1 -t raw "$tmp/room.raw" synth 600 brownnoise vol 0.0003
    printf 'pcm.idle_mic { type file slave.pcm "null" file "/dev/null" infile "%s" format "raw" }\npcm.idle_speaker { type file slave.pcm "null" file "/dev/null" format "raw" }\n' \
        "$tmp/room.raw" > "$tmp/asoundrc"
    mkdir -m 0700 "$tmp/household"
    install -m 0600 /dev/null "$tmp/speaker.toml"
    cat > "$tmp/speaker.toml" <<EOF
[houndify]
client_id = "AAECAwQFBgcICQoLDA0ODw=="
client_key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw=="
endpoint = "http://127.0.0.1:9"
[location]
latitude = 40.0
longitude = -74.0
[audio]
input = "idle_mic"
output = "idle_speaker"
input_pacing = "realtime"
[board]
profile = "simulated"
[hotphrase]
model = "$repo/share/hotphrase/ok-hound.hpm"
household = "$tmp/household"
[control]
listen = ""
EOF
    exec {quiet}<> <(:)
    run_for() {  # run_for SECONDS: the instructions of an idle run stopped with SIGTERM after SECONDS
        local log="$tmp/insn.log" rc=0
        rm -f "$log"
        # stdin (the simulated board's) stays open and silent: a pipe whose writer is this shell.
        env ALSA_CONFIG_PATH="$root/usr/share/alsa/alsa.conf:$tmp/asoundrc" HOUND_SPEAKER_BOARD_PATH="$repo/board" \
            timeout -s TERM "$1" "$qemu" -L "$root" -plugin "$plugin,inline=on" -d plugin -D "$log" \
            "$bench" run --config "$tmp/speaker.toml" < "/dev/fd/$quiet" > "$tmp/run.out" 2> "$tmp/run.err" || rc=$?
        # 124: timeout sent the SIGTERM (the speaker then stops as under systemd, and the plugin writes its count).
        [ "$rc" = 124 ] && grep -q '^insns: ' "$log" || { tail -5 "$tmp/run.err" >&2; die "the idle run did not stop cleanly on SIGTERM (exit $rc; above)"; }
        grep -q 'to=ready' "$tmp/run.err" || { tail -5 "$tmp/run.err" >&2; die "the idle run never became ready (above)"; }
        # Frames the detector fell behind on (the emulator slower than the audio) were not counted: said with the pair.
        dropped="$(sed -n 's/.*dropped_total=\([0-9]*\).*/\1/p' "$tmp/run.err" | tail -1)"
        echo "${dropped:-0}" > "$tmp/dropped.$1"
        awk '/^insns: / { n += $2 } END { printf "%.0f\n", n }' "$log"
    }
    echo "| idle \`run\`, $(basename "$bench") under $qemu | instructions per second | 20 ms frames the detector fell behind on (30 s, 90 s) |"
    echo "|---|---|---|"
    for pair in 1 2 3; do
        short=$(run_for 30)
        long=$(run_for 90)
        awk -v p="$pair" -v d="$((long - short))" -v a="$(cat "$tmp/dropped.30")" -v b="$(cat "$tmp/dropped.90")" \
            'BEGIN { printf "| pair %d: 90 s less 30 s | %.1f M | %d, %d |\n", p, d / 60 / 1e6, a, b }'
    done
    exit 0
fi
# The reference is this machine's own sox with its own libraries (-L /): under ROOT's prefix qemu-user would load
# ROOT's libsox and C library wherever ROOT has them.
reference=$(( $(count qemu-x86_64 / "$(command -v sox)" -n -r 16000 -b 16 -c 1 "$tmp/ref.wav" synth 30 sine 440) \
            + $(count qemu-x86_64 / "$(command -v sox)" "$tmp/ref.wav" -n stat) ))
echo "reference (sox: 30 s of a tone made and measured): $reference instructions"
echo "| model | instructions per second of audio | ratio to the reference |"
echo "|---|---|---|"
cd "$repo"  # the bench's default audio is share/demo's recording
if [ "$speaker" = 1 ]; then
    demo=share/demo/ok-hound-what-time-is-it.wav
    sox "$demo" "$tmp/short.wav" repeat 3
    sox "$demo" "$tmp/long.wav" repeat 23
    seconds="$(awk -v a="$(soxi -D "$tmp/short.wav")" -v b="$(soxi -D "$tmp/long.wav")" 'BEGIN { print b - a }')"
    short=$(count "$qemu" "$root" "$bench" hotphrase "$tmp/short.wav")
    long=$(count "$qemu" "$root" "$bench" hotphrase "$tmp/long.wav")
    awk -v m=share/hotphrase/ok-hound.hpm -v d="$((long - short))" -v s="$seconds" -v r="$reference" \
        'BEGIN { printf "| %s (the speaker'"'"'s binary) | %.1f M | %.4f |\n", m, d / s / 1e6, d / s / r }'
    exit 0
fi
if [ "$offline" = 1 ]; then
    # The recogniser reads the whole recording (it does not stop at the first utterance): the difference of two
    # lengths is its cost per second of audio, the model's load left out.
    demo=share/demo/ok-hound-what-time-is-it.wav
    sox "$demo" "$tmp/short.wav" repeat 2
    sox "$demo" "$tmp/long.wav" repeat 8
    seconds="$(awk -v a="$(soxi -D "$tmp/short.wav")" -v b="$(soxi -D "$tmp/long.wav")" 'BEGIN { print b - a }')"
    # PocketSphinx needs libblas.so.3, which Debian reaches through an absolute symlink (/etc/alternatives) that
    # qemu-user's -L prefix does not follow: the guest is shown the real directory.
    triple="$([ "$qemu" = qemu-aarch64 ] && echo aarch64-linux-gnu || echo x86_64-linux-gnu)"
    export LD_LIBRARY_PATH="/usr/lib/$triple/blas:/usr/lib/$triple/lapack"
    short=$(count "$qemu" "$root" "$bench" offline "$tmp/short.wav")
    long=$(count "$qemu" "$root" "$bench" offline "$tmp/long.wav")
    awk -v d="$((long - short))" -v s="$seconds" -v r="$reference" -v a="$short" \
        'BEGIN { printf "| the offline recogniser (`offline`, both passes) | %.1f M | %.4f |\n", d / s / 1e6, d / s / r
                 printf "(the shorter run, the model loaded and %s s of audio: %.0f M instructions)\n", "'"$(soxi -D "$tmp/short.wav")"'", a / 1e6 }'
    exit 0
fi
# The shipped model (format 2) and v9, the format-1 model it replaced (a test fixture now).
for model in share/hotphrase/ok-hound.hpm Tests/HotPhraseTests/Fixtures/ok-hound-v9.hpm; do
    # Two lengths of audio: their difference leaves out the start-up (loading the model and the recording).
    short=$(count "$qemu" "$root" "$bench" hotphrase 0.25 - "$model")
    long=$(count "$qemu" "$root" "$bench" hotphrase 1.25 - "$model")
    per_second=$(( (long - short) / 60 ))
    awk -v m="$model" -v p="$per_second" -v r="$reference" 'BEGIN { printf "| %s | %.1f M | %.4f |\n", m, p / 1e6, p / r }'
done
