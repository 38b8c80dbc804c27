#!/usr/bin/env bash
# One command: synthesize the data, train, evaluate (format 1 also exports the model file).
#   tools/hotphrase/run.sh [PHRASE] [--install]                       format 1, recipe v9 (about 45 min on 2 cores)
#   tools/hotphrase/run.sh [PHRASE] --format 2 [make_data options...]  format 2, recipe e1 (README.md: "Recipe e1")
# PHRASE: ok-hound (default), computer, jarvis, snowboy or view-glass (hotphrase/phrases.py). --install copies
# the ok-hound format-1 model to share/hotphrase/ok-hound.hpm and regenerates the Swift tests' fixtures from it.
# Work files go to tools/hotphrase/work/ (git-ignored); format 1's report to work/PHRASE/eval.json, format 2's head,
# report and logs to work/PHRASE/e1/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
phrase=ok-hound
[ $# -gt 0 ] && [ "${1#-}" = "$1" ] && { phrase="$1"; shift; }
install=false format=1 data=()
while [ $# -gt 0 ]; do
    case "$1" in
        --install) install=true ;;
        --format) [ $# -ge 2 ] || { echo "run.sh: --format needs 1 or 2" >&2; exit 2; }; format="$2"; shift ;;
        *) data+=("$1") ;;
    esac
    shift
done
case "$format" in 1|2) ;; *) echo "run.sh: --format $format: must be 1 or 2" >&2; exit 2 ;; esac
if [ "$format" = 2 ] && $install; then echo "run.sh: --install is format 1's (format 2: hotphrase.export_embedding)" >&2; exit 2; fi
if [ "$format" = 1 ] && [ ${#data[@]} -gt 0 ]; then echo "run.sh: unknown option(s) for format 1: ${data[*]}" >&2; exit 2; fi
bash "$here/setup-venv.sh"
py="$root/.venv-hotphrase/bin/python"
work="$here/work"
mkdir -p "$work"
export TF_CPP_MIN_LOG_LEVEL=2
if [ "$format" = 2 ]; then
    mkdir -p "$work/$phrase/e1"
    # piper's training sentences are 20 times slower to make than the Debian voices'; e1 has 300 of them
    "$py" -m hotphrase.make_data "$phrase" "$work" --piper-sentences 300 "${data[@]}"
    "$py" -m hotphrase.train "$phrase" "$work" --format 2 2>&1 | tee "$work/$phrase/e1/train.log"
    synthetic=()
    [ "$phrase" = ok-hound ] || synthetic=(--no-synthetic)  # the four real keywords: the recipe check is what counts
    "$py" -m hotphrase.evaluate "$phrase" "$work" --format 2 --set-threshold "${synthetic[@]}" 2>&1 \
        | tee "$work/$phrase/e1/eval.log"
    exit 0
fi
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
