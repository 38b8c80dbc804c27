#!/usr/bin/env bash
# The hot-phrase paths' CPU side by side, one after another in one run on the same audio (BENCHMARKS.md, issue
# #15): the Swift detector with a speech_embedding head (format 2), the shipped model, openWakeWord's own
# pipeline (pyopen-wakeword's TFLite mel + embedding, the same head in numpy) and PocketSphinx's keyphrase spotting.
# The audio is share/demo's "OK Hound" recording repeated to MINUTES.
#
#   bash tools/hotphrase/lab/bench-cpu.sh [MINUTES] HEAD_DIR      (HEAD_DIR: head.json + head.npz, EMBEDDING.md)
#
# Needs the training venv (tools/hotphrase/setup-venv.sh). Run it on an otherwise idle machine: the numbers are
# process CPU seconds, which other load inflates.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
minutes="${1:-60}"
head="${2:?usage: bench-cpu.sh [MINUTES] HEAD_DIR}"
py="$root/.venv-hotphrase/bin/python"
[ -x "$py" ] || { echo "bench-cpu.sh: no $py (run tools/hotphrase/setup-venv.sh)" >&2; exit 1; }
export PYTHONPATH="$root/tools/hotphrase:$root/tools/hotphrase/lab"  # this checkout's tools, whichever checkout the venv was made in
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
cd "$root"
swift build -c release --scratch-path .build --product hound-speaker-bench >/dev/null
"$py" -m hotphrase.export_embedding "$head" "$tmp/head.hpm" >/dev/null
echo "Swift, speech_embedding + head (format 2):"
.build/release/hound-speaker-bench hotphrase "$minutes" - "$tmp/head.hpm"
echo "Swift, share/hotphrase/ok-hound.hpm (the shipped model):"
.build/release/hound-speaker-bench hotphrase "$minutes" - share/hotphrase/ok-hound.hpm
"$py" -m hotphraselab.bench_openwakeword "$minutes" --head "$head" --pocketsphinx
