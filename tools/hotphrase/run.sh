#!/usr/bin/env bash
# One command: synthesize the data, train, evaluate, export.
#   tools/hotphrase/run.sh [PHRASE] [--install]
# PHRASE: ok-hound (default), computer, jarvis, snowboy or view-glass (hotphrase/phrases.py). --install copies
# the ok-hound model to share/hotphrase/ok-hound.hpm and regenerates the Swift tests' fixtures from it.
# About 45 minutes on 2 cores (data 6 min, augmentation 3 min, training 20-25 min, evaluation 10 min).
# Work files go to tools/hotphrase/work/ (git-ignored); the evaluation report to work/PHRASE/eval.json.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
phrase="${1:-ok-hound}"
install=false
[ "${2:-}" = "--install" ] && install=true
bash "$here/setup-venv.sh"
py="$root/.venv-hotphrase/bin/python"
work="$here/work"
mkdir -p "$work"
export TF_CPP_MIN_LOG_LEVEL=2
"$py" -m hotphrase.make_data "$phrase" "$work"
"$py" -m hotphrase.train "$phrase" "$work"
# HOUND_SPEAKER_BIN: a hound-speaker to evaluate with (say, from another --scratch-path), else the release build.
bin="${HOUND_SPEAKER_BIN:-$root/.build/release/hound-speaker}"
[ -x "$bin" ] || [ -n "${HOUND_SPEAKER_BIN:-}" ] || (cd "$root" && swift build -c release --product hound-speaker >/dev/null)
[ -x "$bin" ] || { echo "run.sh: no hound-speaker at $bin" >&2; exit 1; }
"$py" -m hotphrase.evaluate "$phrase" "$work" --swift-bin "$bin" --pocketsphinx --set-threshold
if $install && [ "$phrase" = ok-hound ]; then
    cp "$work/ok-hound/model.hpm" "$root/share/hotphrase/ok-hound.hpm"
    "$py" -m hotphrase.make_fixtures "$root/share/hotphrase/ok-hound.hpm" "$root/Tests/HotPhraseTests/Fixtures"
fi
